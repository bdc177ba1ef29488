/*
 * check_arch.c - libst's architecture module (st/arch.h): parameter counts of
 * published configs (the totals their model cards and safetensors
 * metadata state), and the inventory of the snapshots in
 * testdata/archcheck/ (made by its gen_fixtures.py; the counts below are
 * worked out by hand from the shapes written there).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#define DIR ST_TESTDATA "/archcheck/"

/* Parse json; on failure err (256 bytes) receives the message. */
static int parse(st_arch_config *c, const char *json, char *err)
{
	st_error e;
	int rc = st_arch_config_parse(c, json, strlen(json), "config.json", &e);
	if (rc != ST_OK)
		snprintf(err, 256, "%.255s", e.message);
	return rc;
}

START_TEST(gpt2_small_count)
{
	/* GPT-2 small: 124,439,808 parameters (tied head). */
	st_arch_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, "{\"model_type\": \"gpt2\", \"vocab_size\": "
	                           "50257, \"n_ctx\": 1024, \"n_embd\": 768, "
	                           "\"n_layer\": 12, \"n_head\": 12}", err), 0);
	ck_assert_int_eq(c.family, ST_ARCH_GPT2);
	ck_assert_int_eq(c.positions, 1024);
	ck_assert_int_eq(c.intermediate, 3072);
	ck_assert_int_eq(c.tied, 1);
	ck_assert_uint_eq(st_arch_count(&c), 124439808u);
}
END_TEST

START_TEST(llama2_7b_count)
{
	/* meta-llama/Llama-2-7b-hf: 6,738,415,616 parameters. */
	st_arch_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, "{\"architectures\": [\"LlamaForCausalLM\"], "
	                           "\"hidden_size\": 4096, \"intermediate_size\": "
	                           "11008, \"num_attention_heads\": 32, "
	                           "\"num_hidden_layers\": 32, "
	                           "\"num_key_value_heads\": 32, \"vocab_size\": "
	                           "32000, \"tie_word_embeddings\": false}", err), 0);
	ck_assert_int_eq(c.family, ST_ARCH_LLAMA);
	ck_assert_str_eq(c.arch, "LlamaForCausalLM");
	ck_assert_uint_eq(st_arch_count(&c), 6738415616u);
}
END_TEST

START_TEST(mistral_7b_gqa_count)
{
	/* mistralai/Mistral-7B-v0.1: 8 KV heads, 7,241,732,096 parameters. */
	st_arch_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, "{\"architectures\": [\"MistralForCausalLM\"], "
	                           "\"hidden_size\": 4096, \"intermediate_size\": "
	                           "14336, \"num_attention_heads\": 32, "
	                           "\"num_hidden_layers\": 32, "
	                           "\"num_key_value_heads\": 8, \"vocab_size\": "
	                           "32000}", err), 0);
	ck_assert_int_eq(c.kv_heads, 8);
	ck_assert_int_eq(c.head_dim, 128);
	ck_assert_int_eq(c.tied, 0);
	ck_assert_uint_eq(st_arch_count(&c), 7241732096u);
}
END_TEST

START_TEST(qwen2_tied_bias_count)
{
	/* Qwen/Qwen2-0.5B: q/k/v biases, tied head, 494,032,768 parameters. */
	st_arch_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, "{\"architectures\": [\"Qwen2ForCausalLM\"], "
	                           "\"hidden_size\": 896, \"intermediate_size\": "
	                           "4864, \"num_attention_heads\": 14, "
	                           "\"num_hidden_layers\": 24, "
	                           "\"num_key_value_heads\": 2, \"vocab_size\": "
	                           "151936, \"tie_word_embeddings\": true}", err), 0);
	ck_assert_int_eq(c.qkv_bias, 1);
	ck_assert_int_eq(c.o_bias, 0);
	ck_assert_uint_eq(st_arch_count(&c), 494032768u);
}
END_TEST

START_TEST(qwen3_qk_norm_count)
{
	/*
	 * Qwen/Qwen3-0.6B: explicit head_dim 128 (16 x 128 = 2048 != 1024),
	 * per-head q_norm/k_norm, tied head: 596,049,920 parameters (the
	 * model card's "0.44B non-embedding" is 440,467,456).
	 */
	st_arch_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, "{\"architectures\": [\"Qwen3ForCausalLM\"], "
	                           "\"hidden_size\": 1024, \"intermediate_size\": "
	                           "3072, \"num_attention_heads\": 16, "
	                           "\"num_hidden_layers\": 28, \"head_dim\": 128, "
	                           "\"num_key_value_heads\": 8, \"vocab_size\": "
	                           "151936, \"tie_word_embeddings\": true}", err), 0);
	ck_assert_int_eq(c.qk_norm, 1);
	ck_assert_int_eq(c.qkv_bias, 0);
	ck_assert_int_eq(c.mlp_bias, 0);
	ck_assert_uint_eq(st_arch_count(&c), 596049920u);
	ck_assert_uint_eq(st_arch_count(&c) - 151936u * 1024u, 440467456u);
	/* Without head_dim, Qwen3Config's default 128 applies. */
	ck_assert_int_eq(parse(&c, "{\"model_type\": \"qwen3\", "
	                           "\"hidden_size\": 64, \"intermediate_size\": "
	                           "128, \"num_attention_heads\": 4, "
	                           "\"num_hidden_layers\": 1, \"vocab_size\": 10}",
	                           err), 0);
	ck_assert_int_eq(c.head_dim, 128);
}
END_TEST

START_TEST(unknown_architecture)
{
	st_arch_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, "{\"architectures\": [\"BertModel\"]}", err),
	                 ST_EUNSUPPORTED);
	ck_assert_str_eq(c.arch, "BertModel");
	ck_assert_int_eq(parse(&c, "{}", err), ST_EUNSUPPORTED);
}
END_TEST

START_TEST(bad_configs)
{
	static const struct { const char *json, *msg; } cases[] = {
		{"{\"model_type\": \"gpt2\"", "config.json: not valid JSON"},
		{"[1]", "config.json: not a JSON object"},
		{"{\"model_type\": \"gpt2\", \"vocab_size\": 5}",
		 "config.json: \"n_embd\" is missing"},
		{"{\"model_type\": \"gpt2\", \"vocab_size\": 5.5}",
		 "config.json: \"vocab_size\" must be an integer"},
		{"{\"model_type\": \"gpt2\", \"vocab_size\": 0}",
		 "config.json: \"vocab_size\" is 0, expected 1 to 2147483648"},
		{"{\"model_type\": \"gpt2\", \"vocab_size\": 5, \"n_embd\": 10, "
		 "\"n_layer\": 1, \"n_head\": 3, \"n_positions\": 4}",
		 "config.json: n_embd 10 is not a multiple of n_head 3"},
		{"{\"model_type\": \"gpt2\", \"vocab_size\": 5, \"n_embd\": 10, "
		 "\"n_layer\": 5000, \"n_head\": 2}",
		 "config.json: \"n_layer\" is 5000, expected 1 to 4096"},
		{"{\"model_type\": \"llama\", \"vocab_size\": 5, \"hidden_size\": 8, "
		 "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
		 "\"num_key_value_heads\": 3, \"intermediate_size\": 4}",
		 "config.json: num_attention_heads 4 is not a multiple of "
		 "num_key_value_heads 3"},
		{"{\"model_type\": \"llama\", \"vocab_size\": 5, \"hidden_size\": 8, "
		 "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
		 "\"intermediate_size\": 4, \"tie_word_embeddings\": 1}",
		 "config.json: \"tie_word_embeddings\" must be true or false"},
		{"{\"model_type\": \"mistral\", \"vocab_size\": 2147483648, "
		 "\"hidden_size\": 2147483648, \"num_hidden_layers\": 4096, "
		 "\"num_attention_heads\": 1, \"intermediate_size\": 2147483648}",
		 "config.json: its sizes imply more than 2^50 parameters"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		st_arch_config c;
		char err[256] = "";
		ck_assert_int_eq(parse(&c, cases[i].json, err), ST_EFORMAT);
		ck_assert_str_eq(err, cases[i].msg);
	}
}
END_TEST

/* Parse DIR/<name>/config.json and compare with its model.safetensors. */
static st_checkpoint *inventory(const char *name, st_arch_config *c,
                                st_arch_report *r)
{
	char path[512], text[4096];
	snprintf(path, sizeof path, DIR "%s/config.json", name);
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(text, 1, sizeof text, f);
	fclose(f);
	st_error e;
	ck_assert_int_eq(st_arch_config_parse(c, text, n, path, &e), ST_OK);
	snprintf(path, sizeof path, DIR "%s", name);
	st_checkpoint *ck;
	ck_assert_int_eq(st_checkpoint_open(&ck, path, 0, &e), ST_OK);
	ck_assert_int_eq(st_arch_compare(c, ck, r, &e), ST_OK);
	return ck;
}

START_TEST(gpt2_complete)
{
	/* wte 128 + wpe 64 + 2 x 872 per block + ln_f 16 = 1952. */
	st_arch_config c;
	st_arch_report r;
	st_checkpoint *ck = inventory("gpt2-good", &c, &r);
	ck_assert_uint_eq(r.implied, 1952);
	ck_assert_uint_eq(r.found, 1952);
	ck_assert_uint_eq(r.n_expected, 28);
	ck_assert_uint_eq(r.n_matched, 28);
	ck_assert_uint_eq(r.n_items, 0);
	ck_assert_str_eq(r.prefix, "");
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(gpt2_missing_named_in_model_order)
{
	st_arch_config c;
	st_arch_report r;
	st_checkpoint *ck = inventory("gpt2-missing", &c, &r);
	ck_assert_uint_eq(r.n_missing, 2);
	ck_assert_uint_eq(r.n_items, 2);
	ck_assert_int_eq(r.items[0].what, ST_ARCH_MISSING);
	ck_assert_str_eq(r.items[0].name, "h.1.mlp.c_fc.bias");
	ck_assert_uint_eq(r.items[0].ndim, 1);
	ck_assert_uint_eq(r.items[0].shape[0], 32);
	ck_assert_str_eq(r.items[1].name, "ln_f.weight");
	ck_assert_uint_eq(r.found, 1952 - 32 - 8);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(gpt2_misshapen_with_both_shapes)
{
	st_arch_config c;
	st_arch_report r;
	st_checkpoint *ck = inventory("gpt2-misshapen", &c, &r);
	ck_assert_uint_eq(r.n_misshapen, 2);
	ck_assert_uint_eq(r.n_missing, 0);
	ck_assert_str_eq(r.items[0].name, "h.0.attn.c_proj.weight");
	ck_assert_uint_eq(r.items[0].shape[0], 8);
	ck_assert_uint_eq(r.items[0].found->shape[0], 7);
	ck_assert_str_eq(r.items[1].name, "h.1.attn.c_attn.weight");
	ck_assert_uint_eq(r.items[1].shape[0], 8);
	ck_assert_uint_eq(r.items[1].shape[1], 24);
	ck_assert_uint_eq(r.items[1].found->shape[0], 24);
	ck_assert_uint_eq(r.items[1].found->shape[1], 8);
	ck_assert_uint_eq(r.found, 1952 - 64 - 192);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(gpt2_legacy_extras_classified)
{
	st_arch_config c;
	st_arch_report r;
	st_checkpoint *ck = inventory("gpt2-legacy", &c, &r);
	ck_assert_str_eq(r.prefix, "transformer.");
	ck_assert_uint_eq(r.n_matched, 28);
	ck_assert_uint_eq(r.found, 1952);
	ck_assert_uint_eq(r.n_buffers, 4);
	ck_assert_uint_eq(r.n_alias, 1);
	ck_assert_uint_eq(r.n_unknown, 2);
	ck_assert_uint_eq(r.n_missing + r.n_misshapen, 0);
	int seen_h2 = 0;
	for (size_t i = 0; i < r.n_items; i++) {
		const st_arch_item *it = &r.items[i];
		if (strcmp(it->name, "lm_head.weight") == 0)
			ck_assert_int_eq(it->what, ST_ARCH_ALIAS);
		if (strcmp(it->name, "transformer.h.0.attn.masked_bias") == 0)
			ck_assert_int_eq(it->what, ST_ARCH_BUFFER);
		/* Only 2 layers: a third layer's mask explains nothing. */
		if (strcmp(it->name, "transformer.h.2.attn.bias") == 0) {
			ck_assert_int_eq(it->what, ST_ARCH_UNKNOWN);
			seen_h2 = 1;
		}
	}
	ck_assert(seen_h2);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(llama_gqa_complete)
{
	/*
	 * embed 512 + 2 x (norms 32, q 256, k 128, v 128, o 256, gate/up/down
	 * 3 x 384) + norm 16 + lm_head 512 = 4944.
	 */
	st_arch_config c;
	st_arch_report r;
	st_checkpoint *ck = inventory("llama-gqa", &c, &r);
	ck_assert_uint_eq(r.implied, 4944);
	ck_assert_uint_eq(r.found, 4944);
	ck_assert_uint_eq(r.n_buffers, 1);
	ck_assert_uint_eq(r.n_items, 1);
	ck_assert_str_eq(r.items[0].name,
	                 "model.layers.0.self_attn.rotary_emb.inv_freq");
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(llama_broken_kv)
{
	st_arch_config c;
	st_arch_report r;
	st_checkpoint *ck = inventory("llama-broken", &c, &r);
	ck_assert_uint_eq(r.n_items, 2);
	ck_assert_int_eq(r.items[0].what, ST_ARCH_MISSHAPEN);
	ck_assert_str_eq(r.items[0].name, "model.layers.0.self_attn.v_proj.weight");
	ck_assert_uint_eq(r.items[0].shape[0], 8); /* 2 KV heads x 4 */
	ck_assert_int_eq(r.items[1].what, ST_ARCH_MISSING);
	ck_assert_str_eq(r.items[1].name, "model.layers.1.self_attn.k_proj.weight");
	ck_assert_uint_eq(r.found, 4944 - 128 - 128);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(qwen2_biases)
{
	/* Tied: 4944 - 512 head, + 2 x (16 + 8 + 8) biases = 4496. */
	st_arch_config c;
	st_arch_report r;
	st_checkpoint *ck = inventory("qwen2-tied", &c, &r);
	ck_assert_uint_eq(r.implied, 4496);
	ck_assert_uint_eq(r.found, 4496);
	ck_assert_uint_eq(r.n_items, 0);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
	ck = inventory("qwen2-nobias", &c, &r);
	ck_assert_uint_eq(r.n_missing, 6);
	ck_assert_str_eq(r.items[0].name, "model.layers.0.self_attn.q_proj.bias");
	ck_assert_str_eq(r.items[5].name, "model.layers.1.self_attn.v_proj.bias");
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

static char diffs[512];

static void on_diff(void *ctx, const char *key, const char *a, const char *b)
{
	(void)ctx;
	size_t n = strlen(diffs);
	snprintf(diffs + n, sizeof diffs - n, "%s: %s -> %s\n", key,
	         a ? a : "(absent)", b ? b : "(absent)");
}

START_TEST(config_keys_that_differ)
{
	const char *a = "{\"n_layer\": 2, \"layer_norm_epsilon\": 1e-05, "
	                "\"activation_function\": \"gelu_new\", \"x\": [1, 2]}";
	const char *b = "{\"x\": [1, 2], \"activation_function\": \"gelu\", "
	                "\"n_layer\": 2, \"layer_norm_epsilon\": 0.001, "
	                "\"tie_word_embeddings\": false}";
	diffs[0] = 0;
	ck_assert_int_eq(st_arch_config_diff(a, strlen(a), b, strlen(b), on_diff,
	                                     NULL, NULL), 3);
	ck_assert_str_eq(diffs, "layer_norm_epsilon: 1e-05 -> 0.001\n"
	                 "activation_function: \"gelu_new\" -> \"gelu\"\n"
	                 "tie_word_embeddings: (absent) -> false\n");
	diffs[0] = 0;
	ck_assert_int_eq(st_arch_config_diff(a, strlen(a), a, strlen(a), on_diff,
	                                     NULL, NULL), 0);
	ck_assert_int_eq(st_arch_config_diff(a, strlen(a), "[]", 2, on_diff, NULL,
	                                     NULL), ST_EFORMAT);
	ck_assert_str_eq(diffs, "");
}
END_TEST

START_TEST(what_names)
{
	ck_assert_str_eq(st_arch_what_name(ST_ARCH_MISSING), "missing");
	ck_assert_str_eq(st_arch_what_name(ST_ARCH_ALIAS),
	                 "alias of the embedding");
}
END_TEST


START_TEST(expected_lists_gpt2_in_model_order)
{
	/* 2 embeddings, 12 tensors a block, ln_f: 2 + 2 x 12 + 2, tied. */
	st_arch_config c;
	char err[256];
	ck_assert_int_eq(parse(&c, "{\"model_type\": \"gpt2\", \"vocab_size\": 8, "
	                           "\"n_positions\": 4, \"n_embd\": 8, "
	                           "\"n_layer\": 2, \"n_head\": 2}", err), ST_OK);
	st_arch_param *p;
	size_t n;
	ck_assert_int_eq(st_arch_expected(&c, &p, &n, NULL), ST_OK);
	ck_assert_uint_eq(n, 28);
	ck_assert_str_eq(p[0].name, "wte.weight");
	ck_assert_str_eq(p[1].name, "wpe.weight");
	ck_assert_uint_eq(p[1].shape[0], 4);
	ck_assert_str_eq(p[2].name, "h.0.ln_1.weight");
	ck_assert_str_eq(p[4].name, "h.0.attn.c_attn.weight");
	ck_assert_uint_eq(p[4].shape[0], 8); /* Conv1D: [in, out] */
	ck_assert_uint_eq(p[4].shape[1], 24);
	ck_assert_str_eq(p[14].name, "h.1.ln_1.weight");
	ck_assert_str_eq(p[27].name, "ln_f.bias");
	ck_assert_uint_eq(p[27].ndim, 1);
	ck_assert_uint_eq(p[27].shape[1], 0);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += p[i].ndim == 1 ? p[i].shape[0] : p[i].shape[0] * p[i].shape[1];
	ck_assert_uint_eq(sum, st_arch_count(&c));
	free(p);
}
END_TEST

START_TEST(config_of_no_family_refused)
{
	st_arch_config c;
	memset(&c, 0, sizeof c);
	st_arch_param *p = (st_arch_param *)&c;
	size_t n = 7;
	st_error e;
	ck_assert_int_eq(st_arch_expected(&c, &p, &n, &e), ST_EINVAL);
	ck_assert_int_eq(e.code, ST_EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(st_arch_count(&c), 0);
}
END_TEST

START_TEST(errors_carry_their_code)
{
	st_arch_config c;
	st_error e;
	const char *bad = "{\"model_type\": \"llama\"}";
	ck_assert_int_eq(st_arch_config_parse(&c, bad, strlen(bad), "x/config.json",
	                                      &e), ST_EFORMAT);
	ck_assert_int_eq(e.code, ST_EFORMAT);
	ck_assert_str_eq(e.message, "x/config.json: \"vocab_size\" is missing");
	const char *bert = "{\"model_type\": \"bert\"}";
	ck_assert_int_eq(st_arch_config_parse(&c, bert, strlen(bert), "config.json",
	                                      &e), ST_EUNSUPPORTED);
	ck_assert_int_eq(e.code, ST_EUNSUPPORTED);
	ck_assert_str_eq(c.arch, "bert");
	/* The text need not end in a NUL: only len bytes are read. */
	const char *cut = "{\"model_type\": \"gpt2\"}garbage";
	ck_assert_int_eq(st_arch_config_parse(&c, cut, 5, "config.json", NULL),
	                 ST_EFORMAT);
}
END_TEST

START_TEST(report_free_twice_is_harmless)
{
	st_arch_config c;
	st_arch_report r;
	st_checkpoint *ck = inventory("gpt2-legacy", &c, &r);
	ck_assert_uint_gt(r.n_items, 0);
	st_arch_report_free(&r);
	ck_assert_uint_eq(r.n_items, 0);
	ck_assert_ptr_null(r.items);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

/* ---- GPT-2 names: Hugging Face <-> GGUF ----------------------------------- */

/*
 * llama.cpp's GPT-2 names (gguf-py's MODEL_ARCH.GPT2 tensors, as
 * convert_hf_to_gguf.py maps transformers' names), written out here apart
 * from libst's table.
 */
static const struct {
	const char *hf, *gguf;
	int transpose, keep_f32;
} block_names[] = {
	{"ln_1.weight", "attn_norm.weight", 0, 1},
	{"ln_1.bias", "attn_norm.bias", 0, 1},
	{"attn.c_attn.weight", "attn_qkv.weight", 1, 0},
	{"attn.c_attn.bias", "attn_qkv.bias", 0, 1},
	{"attn.c_proj.weight", "attn_output.weight", 1, 0},
	{"attn.c_proj.bias", "attn_output.bias", 0, 1},
	{"ln_2.weight", "ffn_norm.weight", 0, 1},
	{"ln_2.bias", "ffn_norm.bias", 0, 1},
	{"mlp.c_fc.weight", "ffn_up.weight", 1, 0},
	{"mlp.c_fc.bias", "ffn_up.bias", 0, 1},
	{"mlp.c_proj.weight", "ffn_down.weight", 1, 0},
	{"mlp.c_proj.bias", "ffn_down.bias", 0, 1},
};

START_TEST(gpt2_map_global_names)
{
	static const struct {
		const char *hf, *gguf;
		int keep_f32;
	} cases[] = {
		{"wte.weight", "token_embd.weight", 0},
		{"wpe.weight", "position_embd.weight", 1},
		{"ln_f.weight", "output_norm.weight", 1},
		{"ln_f.bias", "output_norm.bias", 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[64];
		st_arch_gguf_info info = {9, 9, 9, 9};
		ck_assert_int_eq(st_arch_gpt2_to_gguf(cases[i].hf, out, sizeof out,
		                                      &info), ST_OK);
		ck_assert_str_eq(out, cases[i].gguf);
		ck_assert_int_eq(info.transpose, 0);
		ck_assert_int_eq(info.keep_f32, cases[i].keep_f32);
		ck_assert_int_eq(info.layer, -1);
		memset(&info, 9, sizeof info);
		ck_assert_int_eq(st_arch_gpt2_from_gguf(cases[i].gguf, out,
		                                        sizeof out, &info), ST_OK);
		ck_assert_str_eq(out, cases[i].hf);
		ck_assert_int_eq(info.keep_f32, cases[i].keep_f32);
		ck_assert_int_eq(info.layer, -1);
	}
}
END_TEST

START_TEST(gpt2_map_round_trips_every_block_name)
{
	static const int layers[] = {0, 1, 9, 11, 47, 999999};
	for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
		for (size_t i = 0; i < sizeof block_names / sizeof block_names[0];
		     i++) {
			char hf[64], gguf[64], want[64], back[64];
			snprintf(hf, sizeof hf, "h.%d.%s", layers[l], block_names[i].hf);
			snprintf(want, sizeof want, "blk.%d.%s", layers[l],
			         block_names[i].gguf);
			st_arch_gguf_info a, b;
			ck_assert_int_eq(st_arch_gpt2_to_gguf(hf, gguf, sizeof gguf, &a),
			                 ST_OK);
			ck_assert_str_eq(gguf, want);
			ck_assert_int_eq(a.transpose, block_names[i].transpose);
			ck_assert_int_eq(a.keep_f32, block_names[i].keep_f32);
			ck_assert_int_eq(a.layer, layers[l]);
			ck_assert_int_eq(st_arch_gpt2_from_gguf(gguf, back, sizeof back,
			                                        &b), ST_OK);
			ck_assert_str_eq(back, hf);
			ck_assert_int_eq(b.transpose, a.transpose);
			ck_assert_int_eq(b.keep_f32, a.keep_f32);
			ck_assert_int_eq(b.layer, a.layer);
		}
}
END_TEST

START_TEST(gpt2_map_ignores_transformer_prefix)
{
	char out[64];
	ck_assert_int_eq(st_arch_gpt2_to_gguf("transformer.h.3.ln_2.bias", out,
	                                      sizeof out, NULL), ST_OK);
	ck_assert_str_eq(out, "blk.3.ffn_norm.bias");
	ck_assert_int_eq(st_arch_gpt2_to_gguf("transformer.wte.weight", out,
	                                      sizeof out, NULL), ST_OK);
	ck_assert_str_eq(out, "token_embd.weight");
	/* Only HF names carry it. */
	ck_assert_int_eq(st_arch_gpt2_from_gguf("transformer.token_embd.weight",
	                                        out, sizeof out, NULL),
	                 ST_ENOTFOUND);
}
END_TEST

/* ---- Llama-family names and llama's q/k permutation ----------------------- */

/*
 * llama.cpp's names for the Llama family, written out here from gguf-py
 * (gguf/constants.py's TENSOR_NAMES, gguf/tensor_mapping.py's
 * "llama-hf" sources) and convert_hf_to_gguf.py (conversion/llama.py:
 * LlamaModel.permute of q_proj/k_proj weight and bias; conversion/qwen.py:
 * Qwen2Model and Qwen3Model permute nothing), apart from libst's table.
 * permute: 'q' or 'k' for llama; qwen3: the row is Qwen3's only.
 */
static const struct {
	const char *hf, *gguf;
	int keep_f32;
	char permute;
	int qwen3;
} llama_block[] = {
	{"input_layernorm.weight", "attn_norm.weight", 1, 0, 0},
	{"self_attn.q_proj.weight", "attn_q.weight", 0, 'q', 0},
	{"self_attn.q_proj.bias", "attn_q.bias", 1, 'q', 0},
	{"self_attn.k_proj.weight", "attn_k.weight", 0, 'k', 0},
	{"self_attn.k_proj.bias", "attn_k.bias", 1, 'k', 0},
	{"self_attn.v_proj.weight", "attn_v.weight", 0, 0, 0},
	{"self_attn.v_proj.bias", "attn_v.bias", 1, 0, 0},
	{"self_attn.o_proj.weight", "attn_output.weight", 0, 0, 0},
	{"self_attn.q_norm.weight", "attn_q_norm.weight", 1, 0, 1},
	{"self_attn.k_norm.weight", "attn_k_norm.weight", 1, 0, 1},
	{"post_attention_layernorm.weight", "ffn_norm.weight", 1, 0, 0},
	{"mlp.gate_proj.weight", "ffn_gate.weight", 0, 0, 0},
	{"mlp.up_proj.weight", "ffn_up.weight", 0, 0, 0},
	{"mlp.down_proj.weight", "ffn_down.weight", 0, 0, 0},
};

START_TEST(llama_family_block_names)
{
	static const char *const archs[] = {"llama", "qwen2", "qwen3"};
	for (size_t a = 0; a < 3; a++)
		for (size_t i = 0; i < sizeof llama_block / sizeof llama_block[0]; i++) {
			const char *arch = archs[a];
			char hf[96], want[96], out[96], back[96];
			snprintf(hf, sizeof hf, "model.layers.17.%s", llama_block[i].hf);
			snprintf(want, sizeof want, "blk.17.%s", llama_block[i].gguf);
			st_arch_gguf_info x, y;
			int rc = st_arch_to_gguf(arch, hf, out, sizeof out, &x);
			if (llama_block[i].qwen3 && a != 2) {
				ck_assert_msg(rc == ST_ENOTFOUND, "%s: %s mapped", arch, hf);
				continue;
			}
			ck_assert_msg(rc == ST_OK, "%s: %s", arch, hf);
			ck_assert_str_eq(out, want);
			ck_assert_int_eq(x.transpose, 0);
			ck_assert_int_eq(x.keep_f32, llama_block[i].keep_f32);
			ck_assert_int_eq(x.layer, 17);
			int perm = a != 0 ? 0
			           : llama_block[i].permute == 'q' ? ST_ARCH_PERMUTE_Q
			           : llama_block[i].permute == 'k' ? ST_ARCH_PERMUTE_K
			                                           : 0;
			ck_assert_msg(x.permute == perm, "%s: %s permute %d", arch, hf, x.permute);
			ck_assert_int_eq(st_arch_from_gguf(arch, out, back, sizeof back, &y), ST_OK);
			ck_assert_str_eq(back, hf);
			ck_assert_int_eq(y.permute, x.permute);
			ck_assert_int_eq(y.layer, 17);
		}
}
END_TEST

START_TEST(llama_family_global_names)
{
	static const struct {
		const char *hf, *gguf;
	} cases[] = {
		{"model.embed_tokens.weight", "token_embd.weight"},
		{"model.norm.weight", "output_norm.weight"},
		{"lm_head.weight", "output.weight"},
	};
	static const char *const archs[] = {"llama", "qwen2", "qwen3"};
	for (size_t a = 0; a < 3; a++)
		for (size_t i = 0; i < 3; i++) {
			char out[64];
			st_arch_gguf_info x;
			ck_assert_int_eq(st_arch_to_gguf(archs[a], cases[i].hf, out, sizeof out, &x),
			                 ST_OK);
			ck_assert_str_eq(out, cases[i].gguf);
			ck_assert_int_eq(x.layer, -1);
			ck_assert_int_eq(st_arch_from_gguf(archs[a], cases[i].gguf, out, sizeof out,
			                                   NULL), ST_OK);
			ck_assert_str_eq(out, cases[i].hf);
		}
	/* GPT-2's names are not the Llama family's, nor the other way round. */
	char out[64];
	ck_assert_int_eq(st_arch_to_gguf("llama", "h.0.ln_1.weight", out, sizeof out, NULL),
	                 ST_ENOTFOUND);
	ck_assert_int_eq(st_arch_to_gguf("llama", "model.layers.0.rotary_emb.inv_freq", out,
	                                 sizeof out, NULL), ST_ENOTFOUND);
	ck_assert_int_eq(st_arch_to_gguf("gpt2", "model.norm.weight", out, sizeof out, NULL),
	                 ST_ENOTFOUND);
	ck_assert_int_eq(st_arch_from_gguf("gpt2", "blk.0.attn_q.weight", out, sizeof out,
	                                   NULL), ST_ENOTFOUND);
	ck_assert_int_eq(st_arch_to_gguf("llama", "model.layers.01.mlp.up_proj.weight", out,
	                                 sizeof out, NULL), ST_ENOTFOUND);
	/* The old GPT-2 entry points are the gpt2 map. */
	ck_assert_int_eq(st_arch_to_gguf("gpt2", "transformer.h.2.mlp.c_fc.weight", out,
	                                 sizeof out, NULL), ST_OK);
	ck_assert_str_eq(out, "blk.2.ffn_up.weight");
}
END_TEST

START_TEST(gguf_maps_known_and_unknown)
{
	char out[64];
	ck_assert_int_eq(st_arch_gguf_known("gpt2"), 1);
	ck_assert_int_eq(st_arch_gguf_known("llama"), 1);
	ck_assert_int_eq(st_arch_gguf_known("qwen2"), 1);
	ck_assert_int_eq(st_arch_gguf_known("qwen3"), 1);
	ck_assert_int_eq(st_arch_gguf_known("mistral"), 0); /* GGUFs say llama */
	ck_assert_int_eq(st_arch_gguf_known("falcon"), 0);
	ck_assert_int_eq(st_arch_gguf_known(""), 0);
	ck_assert_int_eq(st_arch_to_gguf("falcon", "model.norm.weight", out, sizeof out, NULL),
	                 ST_EUNSUPPORTED);
	ck_assert_int_eq(st_arch_from_gguf("falcon", "output_norm.weight", out, sizeof out,
	                                   NULL), ST_EUNSUPPORTED);
	/* llama3's rope_freqs: computed by the converter, no HF tensor. */
	ck_assert_ptr_nonnull(st_arch_gguf_derived("llama", "rope_freqs.weight"));
	ck_assert_ptr_null(st_arch_gguf_derived("qwen2", "rope_freqs.weight"));
	ck_assert_ptr_null(st_arch_gguf_derived("llama", "output.weight"));
	ck_assert_ptr_null(st_arch_gguf_derived("falcon", "rope_freqs.weight"));
	ck_assert_int_eq(st_arch_from_gguf("llama", "rope_freqs.weight", out, sizeof out, NULL),
	                 ST_ENOTFOUND);
}
END_TEST

START_TEST(permuted_rows_by_hand)
{
	/*
	 * LlamaModel.permute of 8 rows, by hand: heads 2, D 4: rows of head h
	 * [h0 h1 h2 h3] viewed [2, 2] = [[h0 h1], [h2 h3]], swapped to
	 * [[h0 h2], [h1 h3]]: GGUF rows 0..7 = HF 0 2 1 3 4 6 5 7. Heads 1,
	 * D 8: [[0 1 2 3], [4 5 6 7]] swapped: 0 4 1 5 2 6 3 7. Heads 4, D 2:
	 * [[a], [b]] swapped is itself.
	 */
	static const uint64_t h2[8] = {0, 2, 1, 3, 4, 6, 5, 7};
	static const uint64_t h1[8] = {0, 4, 1, 5, 2, 6, 3, 7};
	for (uint64_t r = 0; r < 8; r++) {
		uint64_t f = 99;
		ck_assert_int_eq(st_arch_permuted_row(r, 8, 2, &f), ST_OK);
		ck_assert_uint_eq(f, h2[r]);
		ck_assert_int_eq(st_arch_permuted_row(r, 8, 1, &f), ST_OK);
		ck_assert_uint_eq(f, h1[r]);
		ck_assert_int_eq(st_arch_permuted_row(r, 8, 4, &f), ST_OK);
		ck_assert_uint_eq(f, r);
	}
	/* A permutation: every HF row once (heads 4, D 16). */
	unsigned char hit[64] = {0};
	for (uint64_t r = 0; r < 64; r++) {
		uint64_t f;
		ck_assert_int_eq(st_arch_permuted_row(r, 64, 4, &f), ST_OK);
		ck_assert_uint_lt(f, 64);
		hit[f]++;
	}
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(hit[i], 1);
	uint64_t f = 7;
	ck_assert_int_eq(st_arch_permuted_row(8, 8, 2, &f), ST_EINVAL); /* past the end */
	ck_assert_int_eq(st_arch_permuted_row(0, 8, 0, &f), ST_EINVAL); /* no heads */
	ck_assert_int_eq(st_arch_permuted_row(0, 6, 2, &f), ST_EINVAL); /* D odd */
	ck_assert_int_eq(st_arch_permuted_row(0, 8, 3, &f), ST_EINVAL); /* heads do not divide */
	ck_assert_uint_eq(f, 7);
}
END_TEST

/* Every name of names[n] is refused by map as no name of the table. */
static void refused(const char *const *names, size_t n,
                    int (*map)(const char *, char *, size_t,
                               st_arch_gguf_info *))
{
	char out[64];
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(map(names[i], out, sizeof out, NULL) == ST_ENOTFOUND,
		              "'%s' mapped", names[i]);
}

START_TEST(unknown_name_refused)
{
	static const char *const hf[] = {
		"lm_head.weight",           /* llama.cpp ties output to token_embd */
		"h.0.attn.bias",            /* legacy causal-mask buffers */
		"h.0.attn.masked_bias",
		"", "wte", "wte.weight.x", "h.0.ln_1", "h.0.ln_1.weight.x",
		"token_embd.weight",        /* a GGUF name */
		"blk.0.attn_qkv.weight",
		"transformer.", "transformer.lm_head.weight",
		"model.embed_tokens.weight", /* Llama's */
	};
	static const char *const gguf[] = {
		"output.weight", "wte.weight", "h.0.ln_1.weight", "",
		"blk.0.attn_q.weight", "blk.0.attn_norm", "blk.attn_norm.weight",
		"token_embd.weight.x",
	};
	refused(hf, sizeof hf / sizeof hf[0], st_arch_gpt2_to_gguf);
	refused(gguf, sizeof gguf / sizeof gguf[0], st_arch_gpt2_from_gguf);
}
END_TEST

START_TEST(noncanonical_layer_refused)
{
	/* Canonical decimal below 10^6: no leading zero, sign or space. */
	static const char *const hf[] = {
		"h.01.ln_1.weight", "h.00.ln_1.weight", "h.-1.ln_1.weight",
		"h.+1.ln_1.weight", "h. 1.ln_1.weight", "h.1000000.ln_1.weight",
		"h.0x1.ln_1.weight", "h..ln_1.weight", "h.1e3.ln_1.weight",
	};
	static const char *const gguf[] = {
		"blk.007.attn_norm.weight", "blk.1000000.attn_norm.weight",
		"blk.-0.attn_norm.weight", "blk..attn_norm.weight",
	};
	refused(hf, sizeof hf / sizeof hf[0], st_arch_gpt2_to_gguf);
	refused(gguf, sizeof gguf / sizeof gguf[0], st_arch_gpt2_from_gguf);
}
END_TEST

START_TEST(short_output_refused)
{
	/* "blk.12.attn_qkv.weight" is 22 bytes and its NUL. */
	char out[23];
	ck_assert_int_eq(st_arch_gpt2_to_gguf("h.12.attn.c_attn.weight", out, 23,
	                                      NULL), ST_OK);
	ck_assert_str_eq(out, "blk.12.attn_qkv.weight");
	ck_assert_int_eq(st_arch_gpt2_to_gguf("h.12.attn.c_attn.weight", out, 22,
	                                      NULL), ST_EINVAL);
	ck_assert_int_eq(st_arch_gpt2_to_gguf("wte.weight", out, 0, NULL),
	                 ST_EINVAL);
	ck_assert_int_eq(st_arch_gpt2_from_gguf("output_norm.bias", out, 9, NULL),
	                 ST_EINVAL);
	ck_assert_int_eq(st_arch_gpt2_from_gguf("output_norm.bias", out, 10, NULL),
	                 ST_OK);
	ck_assert_str_eq(out, "ln_f.bias");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("arch");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, gpt2_small_count);
	tcase_add_test(tc, llama2_7b_count);
	tcase_add_test(tc, mistral_7b_gqa_count);
	tcase_add_test(tc, qwen2_tied_bias_count);
	tcase_add_test(tc, qwen3_qk_norm_count);
	tcase_add_test(tc, unknown_architecture);
	tcase_add_test(tc, bad_configs);
	tcase_add_test(tc, expected_lists_gpt2_in_model_order);
	tcase_add_test(tc, config_of_no_family_refused);
	tcase_add_test(tc, errors_carry_their_code);
	suite_add_tcase(s, tc);
	TCase *ti = tcase_create("inventory");
	tcase_add_test(ti, gpt2_complete);
	tcase_add_test(ti, gpt2_missing_named_in_model_order);
	tcase_add_test(ti, gpt2_misshapen_with_both_shapes);
	tcase_add_test(ti, gpt2_legacy_extras_classified);
	tcase_add_test(ti, llama_gqa_complete);
	tcase_add_test(ti, llama_broken_kv);
	tcase_add_test(ti, qwen2_biases);
	tcase_add_test(ti, what_names);
	tcase_add_test(ti, config_keys_that_differ);
	tcase_add_test(ti, report_free_twice_is_harmless);
	suite_add_tcase(s, ti);
	TCase *tg = tcase_create("gguf names");
	tcase_add_test(tg, gpt2_map_global_names);
	tcase_add_test(tg, gpt2_map_round_trips_every_block_name);
	tcase_add_test(tg, gpt2_map_ignores_transformer_prefix);
	tcase_add_test(tg, unknown_name_refused);
	tcase_add_test(tg, noncanonical_layer_refused);
	tcase_add_test(tg, short_output_refused);
	tcase_add_test(tg, llama_family_block_names);
	tcase_add_test(tg, llama_family_global_names);
	tcase_add_test(tg, gguf_maps_known_and_unknown);
	tcase_add_test(tg, permuted_rows_by_hand);
	suite_add_tcase(s, tg);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
