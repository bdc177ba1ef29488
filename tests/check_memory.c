/*
 * check_memory.c - libst's memory arithmetic (st/memory.h). The KV cache
 * of published configs, worked out by hand from their config.json
 * (layers x 2 x kv_heads x head_dim x bytes per token), against the
 * figures their model cards and llama.cpp's load log give (Llama-2-7B:
 * 0.5 MiB a token in F16; GPT-2 small: 36 KiB); the weights of fixtures
 * whose shapes their gen_*.py write, summed by hand; the same for GGUF
 * files testdata/memory/gen_gguf.py writes with gguf-py.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

static st_arch_config config(const char *json)
{
	st_arch_config c;
	st_error e;
	int rc = st_arch_config_parse(&c, json, strlen(json), "config.json", &e);
	ck_assert_msg(rc == ST_OK, "%s", e.message);
	return c;
}

static uint64_t kv(const st_arch_config *c, uint64_t context, st_dtype as)
{
	uint64_t b = 1;
	st_error e;
	ck_assert_int_eq(st_memory_kv_cache(c, context, as, &b, &e), ST_OK);
	return b;
}

START_TEST(kv_llama3_8b)
{
	/* meta-llama/Meta-Llama-3-8B: 32 layers, 8 KV heads of 128:
	 * 32 x 2 x 8 x 128 x 2 B = 128 KiB a token in BF16, 1 GiB for 8192. */
	st_arch_config c = config("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": "
	                          "4096, \"intermediate_size\": 14336, \"num_attention_heads\": "
	                          "32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
	                          "\"vocab_size\": 128256, \"max_position_embeddings\": 8192, "
	                          "\"rope_theta\": 500000.0, \"tie_word_embeddings\": false}");
	ck_assert_uint_eq(kv(&c, 1, ST_DTYPE_BF16), 131072u);
	ck_assert_uint_eq(kv(&c, 8192, ST_DTYPE_BF16), 1073741824u);
	ck_assert_uint_eq(kv(&c, 8192, ST_DTYPE_F32), 2147483648u);
	ck_assert_uint_eq(kv(&c, 8192, ST_DTYPE_F8_E4M3), 536870912u);
	ck_assert_uint_eq(kv(&c, 0, ST_DTYPE_F16), 0u);
}
END_TEST

START_TEST(kv_qwen25_05b)
{
	/* Qwen/Qwen2.5-0.5B: 24 layers, 2 KV heads, head_dim 896 / 14 = 64:
	 * 24 x 2 x 2 x 64 x 2 B = 12 KiB a token, 384 MiB for 32768. */
	st_arch_config c = config(
		"{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 896, "
		"\"intermediate_size\": 4864, \"num_attention_heads\": 14, \"num_hidden_layers\": "
		"24, \"num_key_value_heads\": 2, \"vocab_size\": 151936, "
		"\"max_position_embeddings\": 32768, \"tie_word_embeddings\": true}");
	ck_assert_uint_eq(kv(&c, 1, ST_DTYPE_BF16), 12288u);
	ck_assert_uint_eq(kv(&c, 32768, ST_DTYPE_BF16), 402653184u);
}
END_TEST

START_TEST(kv_mistral_7b_and_llama2_7b)
{
	/* mistralai/Mistral-7B-v0.1: 32 layers, 8 KV heads of 128: as
	 * Llama-3-8B, 128 KiB a token in F16, 4 GiB for 32768. */
	st_arch_config m = config(
		"{\"architectures\": [\"MistralForCausalLM\"], \"hidden_size\": 4096, "
		"\"intermediate_size\": 14336, \"num_attention_heads\": 32, \"num_hidden_layers\": "
		"32, \"num_key_value_heads\": 8, \"vocab_size\": 32000, \"sliding_window\": 4096}");
	ck_assert_uint_eq(kv(&m, 1, ST_DTYPE_F16), 131072u);
	ck_assert_uint_eq(kv(&m, 32768, ST_DTYPE_F16), 4294967296u);
	/* meta-llama/Llama-2-7b-hf: no GQA, 32 KV heads: 512 KiB a token,
	 * llama.cpp's "KV self size = 2048.00 MiB" for n_ctx 4096 in F16. */
	st_arch_config l = config("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": "
	                          "4096, \"intermediate_size\": 11008, \"num_attention_heads\": "
	                          "32, \"num_hidden_layers\": 32, \"vocab_size\": 32000}");
	ck_assert_uint_eq(kv(&l, 4096, ST_DTYPE_F16), 2048u << 20);
}
END_TEST

START_TEST(kv_gpt2)
{
	/* GPT-2 small: 12 layers, 12 heads of 768 / 12 = 64, no GQA:
	 * 12 x 2 x 12 x 64 x 2 B = 36 KiB a token in F16, 36 MiB for 1024. */
	st_arch_config c = config("{\"model_type\": \"gpt2\", \"vocab_size\": 50257, \"n_ctx\": "
	                          "1024, \"n_embd\": 768, \"n_layer\": 12, \"n_head\": 12}");
	ck_assert_uint_eq(kv(&c, 1, ST_DTYPE_F16), 36864u);
	ck_assert_uint_eq(kv(&c, 1024, ST_DTYPE_F16), 37748736u);
	ck_assert_uint_eq(kv(&c, 1024, ST_DTYPE_F32), 75497472u);
}
END_TEST

START_TEST(kv_refusals)
{
	st_arch_config c = config("{\"model_type\": \"gpt2\", \"vocab_size\": 50257, \"n_ctx\": "
	                          "1024, \"n_embd\": 768, \"n_layer\": 12, \"n_head\": 12}");
	uint64_t b = 7;
	st_error e;
	/* 36 KiB x 2^64 tokens: an error, never a wrapped number. */
	ck_assert_int_eq(st_memory_kv_cache(&c, UINT64_MAX, ST_DTYPE_F16, &b, &e), ST_EINVAL);
	ck_assert_uint_eq(b, 0);
	ck_assert_ptr_nonnull(strstr(e.message, "more than 2^64 bytes"));
	/* F4 has no whole byte an element; I32 is no float. */
	ck_assert_int_eq(st_memory_kv_cache(&c, 1, ST_DTYPE_F4, &b, &e), ST_EINVAL);
	ck_assert_int_eq(st_memory_kv_cache(&c, 1, ST_DTYPE_I32, &b, &e), ST_EINVAL);
	ck_assert_int_eq(st_memory_kv_cache(&c, 1, (st_dtype)ST_DTYPE_COUNT, &b, &e), ST_EINVAL);
	st_arch_config none;
	memset(&none, 0, sizeof none);
	ck_assert_int_eq(st_memory_kv_cache(&none, 1, ST_DTYPE_F16, &b, &e), ST_EINVAL);
}
END_TEST

static void load(const char *path, const st_dtype *as, size_t n, uint64_t *bytes)
{
	st_checkpoint *ck;
	st_error e;
	ck_assert_int_eq(st_checkpoint_open(&ck, path, 0, &e), ST_OK);
	int rc = st_memory_load_bytes(ck, as, n, bytes, &e);
	ck_assert_msg(rc == ST_OK, "%s", e.message);
	st_checkpoint_close(ck);
}

static const st_dtype AS[] = {ST_DTYPE_F32, ST_DTYPE_BF16, ST_DTYPE_F16, ST_DTYPE_F8_E4M3,
                              ST_DTYPE_F4};

START_TEST(load_plain)
{
	/* testdata/stinfo/tiny.safetensors (gen_fixtures.py): one I64 scalar,
	 * kept (8 B), and 924 F32 + 192 BF16 elements, 1116 floats:
	 * F32 8 + 4464, BF16 and F16 8 + 2232, F8 8 + 1116, F4 8 + 558. */
	uint64_t b[5];
	load(ST_TESTDATA "/stinfo/tiny.safetensors", AS, 5, b);
	ck_assert_uint_eq(b[0], 4472u);
	ck_assert_uint_eq(b[1], 2240u);
	ck_assert_uint_eq(b[2], 2240u);
	ck_assert_uint_eq(b[3], 1124u);
	ck_assert_uint_eq(b[4], 566u);
}
END_TEST

START_TEST(load_fp8_as_stored)
{
	/* testdata/quant/snap-fp8 (gen_quant.py): F8 weights [5, 7] and
	 * [4, 6] with F32 [3, 3] and BF16 [2, 2] scales, kept as stored
	 * (35 + 36 + 24 + 8 = 103 B), and a BF16 norm of 7: F32 103 + 28,
	 * BF16 103 + 14, F8 103 + 7, F4 103 + 4 (28 bits). */
	uint64_t b[5];
	load(ST_TESTDATA "/quant/snap-fp8", AS, 5, b);
	ck_assert_uint_eq(b[0], 131u);
	ck_assert_uint_eq(b[1], 117u);
	ck_assert_uint_eq(b[2], 117u);
	ck_assert_uint_eq(b[3], 110u);
	ck_assert_uint_eq(b[4], 107u);
}
END_TEST

START_TEST(load_refuses_non_float)
{
	st_checkpoint *ck;
	st_error e;
	ck_assert_int_eq(st_checkpoint_open(&ck, ST_TESTDATA "/stinfo/tiny.safetensors", 0, &e),
	                 ST_OK);
	const st_dtype as[] = {ST_DTYPE_I32};
	uint64_t b;
	ck_assert_int_eq(st_memory_load_bytes(ck, as, 1, &b, &e), ST_EINVAL);
	st_checkpoint_close(ck);
}
END_TEST

static st_gguf *gguf(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/memory/%s", ST_TESTDATA, name);
	st_gguf *g;
	st_error e;
	ck_assert_msg(st_gguf_open(&g, path, &e) == ST_OK, "%s", e.message);
	return g;
}

START_TEST(gguf_llama3_attention)
{
	/* Llama-3-8B's numbers in llama.gguf: the same 128 KiB a token in
	 * BF16 as its config.json gives (kv_llama3_8b). */
	st_gguf *g = gguf("llama.gguf");
	st_arch_config c;
	st_error e;
	ck_assert_int_eq(st_memory_gguf_config(g, &c, &e), ST_OK);
	ck_assert_str_eq(c.arch, "llama");
	ck_assert_uint_eq(c.layers, 32);
	ck_assert_uint_eq(c.kv_heads, 8);
	ck_assert_uint_eq(c.head_dim, 128);
	ck_assert_uint_eq(kv(&c, 1, ST_DTYPE_BF16), 131072u);
	ck_assert_uint_eq(kv(&c, 8192, ST_DTYPE_BF16), 1073741824u);
	/* 32 F32 + 8 F16 values at each dtype; Q8_0 (68 B) and I32 (8 B) as
	 * stored: F32 160 + 76, BF16 and F16 80 + 76, F8 40 + 76. */
	uint64_t b[4];
	ck_assert_int_eq(st_memory_gguf_load_bytes(g, AS, 4, b, &e), ST_OK);
	ck_assert_uint_eq(b[0], 236u);
	ck_assert_uint_eq(b[1], 156u);
	ck_assert_uint_eq(b[2], 156u);
	ck_assert_uint_eq(b[3], 116u);
	st_gguf_close(g);
}
END_TEST

START_TEST(gguf_qwen2_key_length)
{
	/* Qwen2.5-0.5B's: 24 x 2 x 2 x 64 x 2 B = 12 KiB a token. */
	st_gguf *g = gguf("qwen2.gguf");
	st_arch_config c;
	st_error e;
	ck_assert_int_eq(st_memory_gguf_config(g, &c, &e), ST_OK);
	ck_assert_int_eq(c.family, ST_ARCH_LLAMA);
	ck_assert_uint_eq(kv(&c, 1, ST_DTYPE_F16), 12288u);
	st_gguf_close(g);
}
END_TEST

START_TEST(gguf_refusals)
{
	st_arch_config c;
	st_error e;
	st_gguf *g = gguf("phi.gguf");
	ck_assert_int_eq(st_memory_gguf_config(g, &c, &e), ST_EUNSUPPORTED);
	ck_assert_str_eq(c.arch, "phi3");
	st_gguf_close(g);
	/* A per-layer head_count_kv is no one number. */
	g = gguf("kvarray.gguf");
	ck_assert_int_eq(st_memory_gguf_config(g, &c, &e), ST_EFORMAT);
	ck_assert_ptr_nonnull(
		strstr(e.message, "'llama.attention.head_count_kv' is of type array"));
	ck_assert_int_eq(c.family, 0);
	st_gguf_close(g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("memory");
	TCase *tk = tcase_create("kv cache");
	tcase_add_test(tk, kv_llama3_8b);
	tcase_add_test(tk, kv_qwen25_05b);
	tcase_add_test(tk, kv_mistral_7b_and_llama2_7b);
	tcase_add_test(tk, kv_gpt2);
	tcase_add_test(tk, kv_refusals);
	suite_add_tcase(s, tk);
	TCase *tl = tcase_create("load");
	tcase_add_test(tl, load_plain);
	tcase_add_test(tl, load_fp8_as_stored);
	tcase_add_test(tl, load_refuses_non_float);
	tcase_add_test(tl, gguf_llama3_attention);
	tcase_add_test(tl, gguf_qwen2_key_length);
	tcase_add_test(tl, gguf_refusals);
	suite_add_tcase(s, tl);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
