/*
 * check_gpt2_llama.c - the Llama family's config (tools/gpt2/llama_config.c):
 * the rotary frequencies of rope_scaling llama3 and linear against
 * transformers' rope init functions (the values below are
 * scripts/llama_trace_torch.py's inv_freq, which transcribes
 * modeling_rope_utils.py, computed with torch 1.13 in F32), the defaults
 * transformers' configs take, the refusals, and libst's table behind it.
 * The forward pass itself is checked against PyTorch by
 * tests/cli/strun.sh.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpt2/llama.h"

static int parse(llama_config *c, const char *json, char *err)
{
	return llama_config_parse(c, json, strlen(json), "config.json", err, 256);
}

#define LLAMA31                                                     \
	"{\"model_type\": \"llama\", \"hidden_size\": 4096, "       \
	"\"intermediate_size\": 14336, \"num_hidden_layers\": 32, " \
	"\"num_attention_heads\": 32, \"num_key_value_heads\": 8, " \
	"\"vocab_size\": 128256, \"rope_theta\": 500000.0, "

START_TEST(llama3_rope_matches_transformers)
{
	/* meta-llama/Llama-3.1-8B's rope_scaling. */
	llama_config c;
	char err[256];
	ck_assert_int_eq(parse(&c,
	                       LLAMA31 "\"rope_scaling\": {\"factor\": 8.0, "
	                               "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
	                               "\"original_max_position_embeddings\": 8192, "
	                               "\"rope_type\": \"llama3\"}}",
	                       err),
	                 0);
	ck_assert_int_eq(c.rope, LLAMA_ROPE_LLAMA3);
	ck_assert_int_eq(c.head_dim, 128);
	float f[64];
	llama_rope_inv_freq(&c, f);
	static const struct {
		int i;
		double want;
	} ref[] = {
		{0, 1.0},
		{1, 0.8146172165870667},
		{20, 0.016560440883040428},
		{30, 0.0013718936825171113}, /* the smoothed band */
		{40, 3.428102354519069e-05},
		{45, 1.2297638932068367e-05},
		{50, 4.411534519022098e-06},
		{63, 3.068925877869333e-07},
	};
	for (size_t k = 0; k < sizeof ref / sizeof ref[0]; k++)
		ck_assert_msg(fabs(f[ref[k].i] - ref[k].want) <= 2e-7 * ref[k].want,
		              "inv_freq[%d] = %.9g, transformers %.9g", ref[k].i,
		              (double)f[ref[k].i], ref[k].want);
}
END_TEST

START_TEST(linear_rope_divides_by_factor)
{
	llama_config c;
	char err[256];
	ck_assert_int_eq(parse(&c,
	                       "{\"model_type\": \"llama\", \"hidden_size\": 4096, "
	                       "\"intermediate_size\": 11008, \"num_hidden_layers\": 1, "
	                       "\"num_attention_heads\": 32, \"vocab_size\": 32000, "
	                       "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 4.0}}",
	                       err),
	                 0);
	float f[64];
	llama_rope_inv_freq(&c, f);
	ck_assert(fabs(f[0] - 0.25) < 1e-9);
	ck_assert(fabs(f[1] - 0.21649108827114105) <= 2e-7 * 0.2165);
	ck_assert(fabs(f[63] - 2.8869548259535804e-05) <= 2e-7 * 2.887e-5);
}
END_TEST

START_TEST(defaults_are_transformers)
{
	llama_config c;
	char err[256];
	ck_assert_int_eq(parse(&c,
	                       "{\"architectures\": [\"MistralForCausalLM\"], "
	                       "\"hidden_size\": 64, \"intermediate_size\": 128, "
	                       "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	                       "\"vocab_size\": 100, \"sliding_window\": null}",
	                       err),
	                 0);
	ck_assert_str_eq(c.model_type, "mistral");
	ck_assert(c.rms_eps == 1e-6f);      /* LlamaConfig's rms_norm_eps */
	ck_assert(c.rope_theta == 10000.0); /* rope_theta */
	ck_assert_int_eq(c.max_seq_len, 2048);
	ck_assert_int_eq(c.sliding_window, 0); /* null: none */
	ck_assert_int_eq(c.kv_heads, 4);
	ck_assert_int_eq(c.n_eos, 0);
	/* A window as long as the context is no window. */
	ck_assert_int_eq(parse(&c,
	                       "{\"model_type\": \"mistral\", \"hidden_size\": 64, "
	                       "\"intermediate_size\": 128, \"num_hidden_layers\": 2, "
	                       "\"num_attention_heads\": 4, \"vocab_size\": 100, "
	                       "\"max_position_embeddings\": 512, \"sliding_window\": 4096, "
	                       "\"eos_token_id\": [2, 7]}",
	                       err),
	                 0);
	ck_assert_int_eq(c.sliding_window, 0);
	ck_assert_int_eq(c.n_eos, 2);
	ck_assert_int_eq(c.eos[1], 7);
}
END_TEST

START_TEST(unsupported_features_named)
{
	static const struct {
		const char *extra, *msg;
	} cases[] = {
		{"\"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2}",
	         "rope_type \"dynamic\" is not implemented"},
		{"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}",
	         "of type llama3 needs"},
		{"\"hidden_act\": \"gelu\"", "\"hidden_act\" must be \"silu\""},
		{"\"num_local_experts\": 8", "\"num_local_experts\": mixture-of-experts"},
		{"\"partial_rotary_factor\": 0.5", "\"partial_rotary_factor\" 0.5"},
		{"\"rms_norm_eps\": 0", "\"rms_norm_eps\" is 0, expected a positive"},
		{"\"max_position_embeddings\": \"big\"",
	         "\"max_position_embeddings\" must be a number"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char json[512], err[256] = "";
		llama_config c;
		snprintf(json, sizeof json, LLAMA31 "%s}", cases[i].extra);
		ck_assert_int_eq(parse(&c, json, err), -1);
		ck_assert_msg(strstr(err, cases[i].msg) != NULL, "case %zu: %s", i, err);
		ck_assert_ptr_eq(strchr(err, '\n'), NULL);
	}
	char err[256];
	llama_config c;
	ck_assert_int_eq(parse(&c,
	                       "{\"model_type\": \"gpt2\", \"vocab_size\": 10, "
	                       "\"n_embd\": 8, \"n_layer\": 1, \"n_head\": 2, "
	                       "\"n_positions\": 4}",
	                       err),
	                 -1);
	ck_assert_msg(strstr(err, "is not of the Llama family") != NULL, "%s", err);
}
END_TEST

START_TEST(qwen3_from_libst_table)
{
	llama_config c;
	char err[256];
	ck_assert_int_eq(parse(&c,
	                       "{\"architectures\": [\"Qwen3ForCausalLM\"], "
	                       "\"hidden_size\": 32, \"intermediate_size\": 48, "
	                       "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	                       "\"num_key_value_heads\": 2, \"head_dim\": 16, "
	                       "\"vocab_size\": 256}",
	                       err),
	                 0);
	ck_assert_str_eq(c.model_type, "qwen3");
	ck_assert_int_eq(c.head_dim, 16);
	ck_assert_int_eq(c.arch.qk_norm, 1);
	const char *q3 = "{\"model_type\": \"qwen3\", \"hidden_size\": 8, "
			 "\"intermediate_size\": 8, \"num_hidden_layers\": 1, "
			 "\"num_attention_heads\": 1, \"vocab_size\": 8}";
	ck_assert_int_eq(llama_config_is_llama(q3, strlen(q3)), 1);
	ck_assert_int_eq(llama_config_is_llama("{\"model_type\": \"gpt2\"}", 22), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpt2_llama");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, llama3_rope_matches_transformers);
	tcase_add_test(tc, linear_rope_divides_by_factor);
	tcase_add_test(tc, defaults_are_transformers);
	tcase_add_test(tc, unsupported_features_named);
	tcase_add_test(tc, qwen3_from_libst_table);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
