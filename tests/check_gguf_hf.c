/*
 * check_gguf_hf.c - config.json and generation_config.json from a GGUF's
 * metadata (st_gguf_hf_config, st_gguf_hf_generation_config) and the HF
 * names of its tensors (st_gguf_hf_name), the tokenizer files
 * (st_gguf_hf_tokenizer, st_gguf_hf_tokenizer_config), on GGUF files built here byte by
 * byte (docs/gguf.md's layout); the expected fields are the keys
 * convert_hf_to_gguf.py writes for each (LlamaModel, Qwen3Model), read
 * backwards.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

/* A GGUF in memory: a header, key/values, tensor infos, F32 data. */
struct gg {
	unsigned char buf[8192];
	size_t n;
	size_t n_kv, n_tensors, kv_at;
	uint64_t data; /* bytes of data the tensors take so far */
};

static void put(struct gg *g, const void *p, size_t n)
{
	ck_assert(g->n + n <= sizeof g->buf);
	memcpy(g->buf + g->n, p, n);
	g->n += n;
}

static void put_u32(struct gg *g, uint32_t v)
{
	unsigned char b[4];
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> 8 * i);
	put(g, b, 4);
}

static void put_u64(struct gg *g, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> 8 * i);
	put(g, b, 8);
}

static void put_str(struct gg *g, const char *s)
{
	put_u64(g, strlen(s));
	put(g, s, strlen(s));
}

/* The counts are patched in at the end (gg_open). */
static void gg_start(struct gg *g, const char *arch)
{
	memset(g, 0, sizeof *g);
	put(g, "GGUF", 4);
	put_u32(g, 3);
	put_u64(g, 0); /* tensors */
	put_u64(g, 0); /* key/values */
	put_str(g, "general.architecture");
	put_u32(g, ST_GGUF_STRING);
	put_str(g, arch);
	g->n_kv = 1;
}

static void kv_u32(struct gg *g, const char *key, uint32_t v)
{
	put_str(g, key);
	put_u32(g, ST_GGUF_UINT32);
	put_u32(g, v);
	g->n_kv++;
}

static void kv_f32(struct gg *g, const char *key, float v)
{
	uint32_t bits;
	memcpy(&bits, &v, 4);
	put_str(g, key);
	put_u32(g, ST_GGUF_FLOAT32);
	put_u32(g, bits);
	g->n_kv++;
}

static void kv_str(struct gg *g, const char *key, const char *v)
{
	put_str(g, key);
	put_u32(g, ST_GGUF_STRING);
	put_str(g, v);
	g->n_kv++;
}

/* An array key: n strings, INT32s or FLOAT32s. */
static void kv_strs(struct gg *g, const char *key, const char *const *v, size_t n)
{
	put_str(g, key);
	put_u32(g, ST_GGUF_ARRAY);
	put_u32(g, ST_GGUF_STRING);
	put_u64(g, n);
	for (size_t i = 0; i < n; i++)
		put_str(g, v[i]);
	g->n_kv++;
}

static void kv_nums(struct gg *g, const char *key, int type, const float *v, size_t n)
{
	put_str(g, key);
	put_u32(g, ST_GGUF_ARRAY);
	put_u32(g, (uint32_t)type);
	put_u64(g, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t bits = (uint32_t)(int32_t)v[i];
		if (type == ST_GGUF_FLOAT32)
			memcpy(&bits, &v[i], 4);
		put_u32(g, bits);
	}
	g->n_kv++;
}

/* An F32 tensor of ggml dims {d0, d1} (d1 0: a vector). */
static void tensor(struct gg *g, const char *name, uint64_t d0, uint64_t d1)
{
	put_str(g, name);
	put_u32(g, d1 ? 2 : 1);
	put_u64(g, d0);
	if (d1)
		put_u64(g, d1);
	put_u32(g, ST_GGML_F32);
	put_u64(g, g->data);
	uint64_t bytes = d0 * (d1 ? d1 : 1) * 4;
	g->data += (bytes + 31) / 32 * 32;
	g->n_tensors++;
}

static st_gguf *gg_open(struct gg *g)
{
	size_t n = g->n;
	g->n = 8;
	put_u64(g, g->n_tensors);
	put_u64(g, g->n_kv);
	g->n = (n + 31) / 32 * 32 + g->data; /* zero data, aligned */
	ck_assert(g->n <= sizeof g->buf);
	st_gguf *h;
	st_error err;
	ck_assert_msg(st_gguf_open_memory(&h, g->buf, g->n, "t.gguf", &err) == ST_OK, "%s",
	              err.message);
	return h;
}

/* The llama keys convert_hf_to_gguf.py writes for a Llama 3 config. */
static void llama_keys(struct gg *g)
{
	kv_u32(g, "llama.context_length", 8192);
	kv_u32(g, "llama.embedding_length", 4096);
	kv_u32(g, "llama.block_count", 32);
	kv_u32(g, "llama.feed_forward_length", 14336);
	kv_u32(g, "llama.attention.head_count", 32);
	kv_u32(g, "llama.attention.head_count_kv", 8);
	kv_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
	kv_f32(g, "llama.rope.freq_base", 500000.0f);
	kv_u32(g, "tokenizer.ggml.bos_token_id", 1);
	kv_u32(g, "tokenizer.ggml.eos_token_id", 2);
}

static char *config(st_gguf *h, st_dtype d, unsigned *lost)
{
	char *json;
	size_t len;
	st_error err;
	ck_assert_msg(st_gguf_hf_config(h, d, &json, &len, lost, &err) == ST_OK, "%s", err.message);
	ck_assert_uint_eq(strlen(json), len);
	return json;
}

#define HAS(json, s) ck_assert_msg(strstr(json, s), "no %s in\n%s", s, json)
#define LACKS(json, s) ck_assert_msg(!strstr(json, s), "%s in\n%s", s, json)

START_TEST(test_llama)
{
	struct gg g;
	gg_start(&g, "llama");
	llama_keys(&g);
	tensor(&g, "token_embd.weight", 2, 7);
	tensor(&g, "output.weight", 2, 7);
	tensor(&g, "rope_freqs.weight", 4, 0);
	st_gguf *h = gg_open(&g);
	unsigned lost = 0;
	char *j = config(h, ST_DTYPE_BF16, &lost);
	HAS(j, "\"architectures\": [\n    \"LlamaForCausalLM\"\n  ]");
	HAS(j, "\"model_type\": \"llama\"");
	HAS(j, "\"hidden_size\": 4096,");
	HAS(j, "\"intermediate_size\": 14336,");
	HAS(j, "\"num_hidden_layers\": 32,");
	HAS(j, "\"num_attention_heads\": 32,");
	HAS(j, "\"num_key_value_heads\": 8,");
	HAS(j, "\"max_position_embeddings\": 8192,");
	HAS(j, "\"rms_norm_eps\": 1e-05,");
	HAS(j, "\"rope_theta\": 500000.0,");
	HAS(j, "\"bos_token_id\": 1,");
	HAS(j, "\"eos_token_id\": 2,");
	HAS(j, "\"vocab_size\": 7\n}");
	HAS(j, "\"tie_word_embeddings\": false");
	HAS(j, "\"attention_bias\": false");
	HAS(j, "\"torch_dtype\": \"bfloat16\"");
	LACKS(j, "head_dim");
	/* rope_freqs of zeros: no rope_scaling gives such divisors. */
	LACKS(j, "rope_scaling");
	LACKS(j, "mlp_bias");
	ck_assert_uint_eq(lost, ST_GGUF_HF_LOST_ROPE_SCALING);
	free(j);
	/* The HF names: rope_freqs has none; q/k permuted. */
	char name[128];
	int perm = -1;
	st_error err;
	ck_assert_int_eq(st_gguf_hf_name(h, 0, name, sizeof name, &perm, &err), ST_OK);
	ck_assert_str_eq(name, "model.embed_tokens.weight");
	ck_assert_int_eq(perm, 0);
	ck_assert_int_eq(st_gguf_hf_name(h, 1, name, sizeof name, NULL, &err), ST_OK);
	ck_assert_str_eq(name, "lm_head.weight");
	ck_assert_int_eq(st_gguf_hf_name(h, 2, name, sizeof name, NULL, &err), ST_ENOTFOUND);
	ck_assert_msg(strstr(err.message, "t.gguf: tensor 'rope_freqs.weight': llama3 rope"), "%s",
	              err.message);
	/* generation_config.json: the tokenizer's ids. */
	size_t len;
	ck_assert_int_eq(st_gguf_hf_generation_config(h, &j, &len, &err), ST_OK);
	ck_assert_str_eq(j, "{\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2\n}\n");
	free(j);
	st_gguf_close(h);
}
END_TEST

/* Tied (no output.weight), linear rope scaling, q and MLP biases. */
START_TEST(test_llama2_linear)
{
	struct gg g;
	gg_start(&g, "llama");
	llama_keys(&g);
	kv_str(&g, "llama.rope.scaling.type", "linear");
	kv_f32(&g, "llama.rope.scaling.factor", 2.0f);
	tensor(&g, "token_embd.weight", 2, 5);
	tensor(&g, "blk.0.attn_q.bias", 8, 0);
	tensor(&g, "blk.0.ffn_up.bias", 8, 0);
	st_gguf *h = gg_open(&g);
	unsigned lost = 9;
	char *j = config(h, ST_DTYPE_F32, &lost);
	HAS(j, "\"rope_scaling\": {\n    \"rope_type\": \"linear\",\n    \"factor\": 2.0\n  }");
	HAS(j, "\"tie_word_embeddings\": true");
	HAS(j, "\"attention_bias\": true");
	HAS(j, "\"mlp_bias\": true");
	HAS(j, "\"torch_dtype\": \"float32\"");
	HAS(j, "\"vocab_size\": 5\n}");
	ck_assert_uint_eq(lost, 0);
	free(j);
	char name[128];
	int perm = 0;
	st_error err;
	ck_assert_int_eq(st_gguf_hf_name(h, 1, name, sizeof name, &perm, &err), ST_OK);
	ck_assert_str_eq(name, "model.layers.0.self_attn.q_proj.bias");
	ck_assert_int_eq(perm, ST_ARCH_PERMUTE_Q);
	st_gguf_close(h);
}
END_TEST

START_TEST(test_qwen3)
{
	struct gg g;
	gg_start(&g, "qwen3");
	kv_u32(&g, "qwen3.context_length", 40960);
	kv_u32(&g, "qwen3.embedding_length", 1024);
	kv_u32(&g, "qwen3.block_count", 28);
	kv_u32(&g, "qwen3.feed_forward_length", 3072);
	kv_u32(&g, "qwen3.attention.head_count", 16);
	kv_u32(&g, "qwen3.attention.head_count_kv", 8);
	kv_u32(&g, "qwen3.attention.key_length", 128);
	kv_f32(&g, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
	kv_f32(&g, "qwen3.rope.freq_base", 1000000.0f);
	tensor(&g, "token_embd.weight", 2, 3);
	tensor(&g, "blk.0.attn_q.weight", 2, 4);
	st_gguf *h = gg_open(&g);
	char *j = config(h, ST_DTYPE_F16, NULL);
	HAS(j, "\"Qwen3ForCausalLM\"");
	HAS(j, "\"model_type\": \"qwen3\"");
	HAS(j, "\"head_dim\": 128,");
	HAS(j, "\"rms_norm_eps\": 1e-06,");
	HAS(j, "\"rope_theta\": 1000000.0,");
	HAS(j, "\"max_position_embeddings\": 40960,");
	HAS(j, "\"torch_dtype\": \"float16\"");
	LACKS(j, "attention_bias");
	LACKS(j, "bos_token_id");
	free(j);
	char name[128];
	int perm = -1;
	st_error err;
	ck_assert_int_eq(st_gguf_hf_name(h, 1, name, sizeof name, &perm, &err), ST_OK);
	ck_assert_int_eq(perm, 0); /* NEOX rotary: HF's order kept */
	size_t len;
	ck_assert_int_eq(st_gguf_hf_generation_config(h, &j, &len, &err), ST_OK);
	ck_assert_str_eq(j, "{}\n");
	free(j);
	st_gguf_close(h);
}
END_TEST

/* Refused: no map, a count missing or out of range, no token_embd. */
START_TEST(test_refused)
{
	struct gg g;
	char *j = NULL;
	size_t len;
	st_error err;
	const char *arch;
	gg_start(&g, "falcon");
	tensor(&g, "token_embd.weight", 2, 3);
	st_gguf *h = gg_open(&g);
	ck_assert_int_eq(st_gguf_hf_arch(h, &arch, &err), ST_EUNSUPPORTED);
	ck_assert_msg(strstr(err.message, "architecture 'falcon' has no Hugging Face map (gpt2, "
	                                  "llama, qwen2, qwen3)"),
	              "%s", err.message);
	st_gguf_close(h);

	gg_start(&g, "llama");
	kv_u32(&g, "llama.embedding_length", 0);
	tensor(&g, "token_embd.weight", 2, 3);
	h = gg_open(&g);
	ck_assert_int_eq(st_gguf_hf_config(h, ST_DTYPE_F32, &j, &len, NULL, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "llama.embedding_length is not a count"), "%s",
	              err.message);
	ck_assert_ptr_null(j);
	st_gguf_close(h);

	gg_start(&g, "llama");
	llama_keys(&g);
	tensor(&g, "blk.0.attn_q.weight", 2, 4);
	tensor(&g, "blk.0.mystery.weight", 2, 4);
	h = gg_open(&g);
	ck_assert_int_eq(st_gguf_hf_config(h, ST_DTYPE_F32, &j, &len, NULL, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "no token_embd.weight"), "%s", err.message);
	char name[128];
	ck_assert_int_eq(st_gguf_hf_name(h, 1, name, sizeof name, NULL, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "tensor 'blk.0.mystery.weight' is not a llama "
	                                  "parameter"),
	              "%s", err.message);
	st_gguf_close(h);
}
END_TEST

/* tokenizer.ggml.pre names (st_gguf_pre_find) and the way back from a
 * tokenizer.json pattern; the patterns themselves are held to llama.cpp's
 * recorded ids by check_tokenizer_vocab (ggml-vocab-*.gguf cases). */
START_TEST(test_pre_names)
{
	const st_gguf_pre *g = st_gguf_pre_find("gpt-2", 5);
	ck_assert_ptr_nonnull(g);
	ck_assert_ptr_null(g->pattern);
	ck_assert_ptr_eq(st_gguf_pre_find("default", 7), g);
	const st_gguf_pre *l = st_gguf_pre_find("llama-bpe", 9);
	ck_assert_ptr_nonnull(l);
	ck_assert_ptr_eq(st_gguf_pre_find("llama3", 6), l);
	ck_assert_ptr_eq(st_gguf_pre_find("llama-v3xyz", 8), l); /* len bytes only */
	ck_assert(l->ignore_merges && !l->nfc);
	ck_assert_ptr_nonnull(strstr(l->pattern, "\\p{N}{1,3}"));
	const st_gguf_pre *q = st_gguf_pre_find("qwen2", 5);
	ck_assert_ptr_nonnull(q);
	ck_assert(q->nfc && !q->ignore_merges);
	ck_assert_ptr_null(st_gguf_pre_find("falcon", 6));
	ck_assert_ptr_null(st_gguf_pre_find("qwen", 4));
	ck_assert_ptr_null(st_gguf_pre_find(NULL, 0));
	ck_assert_ptr_eq(st_gguf_pre_from_pattern(l->pattern, strlen(l->pattern)), l);
	ck_assert_ptr_eq(st_gguf_pre_from_pattern(q->pattern, strlen(q->pattern)), q);
	ck_assert_ptr_null(st_gguf_pre_from_pattern(q->pattern, strlen(q->pattern) - 1));
	ck_assert_ptr_null(st_gguf_pre_from_pattern(NULL, 0));
}
END_TEST

/*
 * A SentencePiece vocabulary's merges, as transformers' converter
 * (SentencePieceExtractor.extract) orders them: for each piece, its splits
 * into two pieces of the vocabulary, by the left then the right piece's
 * id; then all of them by the piece's score, higher first, ties in
 * vocabulary order. Worked by hand: bc (-4) gives b+c; abc (-4.5) gives
 * a+bc (a is id 3) before ab+c (ab is 6); ab (-5) gives a+b; the byte and
 * control tokens are never merged into.
 */
START_TEST(test_tokenizer_spm)
{
	static const char *const tokens[] = {"<unk>", "<s>", "</s>", "a",   "b",
	                                     "c",     "ab",  "bc",   "abc", "<0x41>"};
	static const float types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 6};
	static const float scores[] = {0, 0, 0, -1, -2, -3, -5, -4, -4.5f, 0};
	struct gg g;
	gg_start(&g, "llama");
	kv_u32(&g, "llama.context_length", 4096);
	kv_str(&g, "tokenizer.ggml.model", "llama");
	kv_strs(&g, "tokenizer.ggml.tokens", tokens, 10);
	kv_nums(&g, "tokenizer.ggml.token_type", ST_GGUF_INT32, types, 10);
	kv_nums(&g, "tokenizer.ggml.scores", ST_GGUF_FLOAT32, scores, 10);
	kv_u32(&g, "tokenizer.ggml.bos_token_id", 1);
	kv_u32(&g, "tokenizer.ggml.eos_token_id", 2);
	kv_u32(&g, "tokenizer.ggml.unknown_token_id", 0);
	st_gguf *h = gg_open(&g);
	char *j = NULL;
	size_t len;
	st_error err;
	ck_assert_int_eq(st_gguf_hf_tokenizer(h, &j, &len, &err), ST_OK);
	ck_assert_uint_eq(strlen(j), len);
	ck_assert_msg(strstr(j, "\"merges\": [\n      [\"b\", \"c\"],\n      [\"a\", \"bc\"],\n"
	                        "      [\"ab\", \"c\"],\n      [\"a\", \"b\"]\n    ]"),
	              "%s", j);
	ck_assert_ptr_nonnull(strstr(j, "\"unk_token\": \"<unk>\""));
	ck_assert_ptr_nonnull(strstr(j, "\"byte_fallback\": true"));
	ck_assert_ptr_nonnull(strstr(j, "\"<0x41>\": 9\n"));
	/* added_tokens: the unknown and the two control tokens */
	ck_assert_ptr_nonnull(strstr(j, "\"id\": 2,\n      \"content\": \"</s>\""));
	ck_assert_ptr_null(strstr(j, "\"id\": 3,"));
	/* llama.cpp's default: a BOS for SentencePiece, in the template */
	ck_assert_ptr_nonnull(strstr(j, "\"single\": [{\"SpecialToken\": {\"id\": \"<s>\""));
	free(j);
	ck_assert_int_eq(st_gguf_hf_tokenizer_config(h, &j, &len, &err), ST_OK);
	ck_assert_str_eq(j,
	                 "{\n  \"add_bos_token\": true,\n  \"add_eos_token\": false,\n"
	                 "  \"bos_token\": \"<s>\",\n  \"clean_up_tokenization_spaces\": false,\n"
	                 "  \"eos_token\": \"</s>\",\n  \"model_max_length\": 4096,\n"
	                 "  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n"
	                 "  \"unk_token\": \"<unk>\"\n}\n");
	free(j);
	st_gguf_close(h);
}
END_TEST

/* What the tokenizer files refuse: each a one-line message naming the key. */
START_TEST(test_tokenizer_refused)
{
	static const char *const bad[] = {"a", "b\xff", "ab"};
	static const char *const merges[] = {"a b"};
	static const float types[] = {1, 1, 1};
	struct gg g;
	char *j = NULL;
	size_t len;
	st_error err;
	gg_start(&g, "llama");
	st_gguf *h = gg_open(&g);
	ck_assert_int_eq(st_gguf_hf_tokenizer(h, &j, &len, &err), ST_ENOTFOUND);
	ck_assert_int_eq(st_gguf_write_tokenizer(h, "/nonexistent/x", 0, &err), ST_ENOTFOUND);
	st_gguf_close(h);

	gg_start(&g, "llama");
	kv_str(&g, "tokenizer.ggml.model", "gpt2");
	kv_strs(&g, "tokenizer.ggml.tokens", bad, 3);
	kv_strs(&g, "tokenizer.ggml.merges", merges, 1);
	h = gg_open(&g);
	ck_assert_int_eq(st_gguf_hf_tokenizer(h, &j, &len, &err), ST_EFORMAT);
	ck_assert_str_eq(err.message,
	                 "t.gguf: tokenizer.ggml.tokens[1] is not valid UTF-8 (byte 1)");
	ck_assert_ptr_null(j);
	st_gguf_close(h);

	gg_start(&g, "llama");
	kv_str(&g, "tokenizer.ggml.model", "gpt2");
	kv_str(&g, "tokenizer.ggml.pre", "falcon");
	kv_strs(&g, "tokenizer.ggml.tokens", merges, 1);
	kv_strs(&g, "tokenizer.ggml.merges", merges, 0);
	h = gg_open(&g);
	ck_assert_int_eq(st_gguf_hf_tokenizer(h, &j, &len, &err), ST_EUNSUPPORTED);
	ck_assert_msg(strstr(err.message, "tokenizer.ggml.pre 'falcon' is not rebuilt"), "%s",
	              err.message);
	st_gguf_close(h);

	gg_start(&g, "llama");
	kv_str(&g, "tokenizer.ggml.model", "llama");
	kv_strs(&g, "tokenizer.ggml.tokens", bad, 1);
	kv_nums(&g, "tokenizer.ggml.token_type", ST_GGUF_INT32, types, 3); /* 3 for 1 */
	h = gg_open(&g);
	ck_assert_int_eq(st_gguf_hf_tokenizer(h, &j, &len, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "tokenizer.ggml.token_type is not an array of 1 int32"),
	              "%s", err.message);
	st_gguf_close(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gguf_hf");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, test_llama);
	tcase_add_test(tc, test_llama2_linear);
	tcase_add_test(tc, test_qwen3);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_pre_names);
	tcase_add_test(tc, test_tokenizer_spm);
	tcase_add_test(tc, test_tokenizer_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
