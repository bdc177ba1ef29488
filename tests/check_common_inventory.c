/*
 * check_common_inventory.c - tools/common/inventory: stinfo's summary
 * lines and --check problems, of what st_arch_inventory found, for the snapshots of testdata/archcheck
 * (made by its gen_fixtures.py; the expected lines are written out by
 * hand from the shapes there).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/inventory.h"
#include "problems.h"

#define DIR ST_TESTDATA "/archcheck/"

static char *summary(const char *name)
{
	st_checkpoint *ck;
	st_error e;
	char path[512];
	snprintf(path, sizeof path, DIR "%s", name);
	ck_assert(st_checkpoint_open(&ck, path, 0, &e) == ST_OK);
	st_arch_config cfg;
	st_arch_report r;
	ck_assert_int_eq(st_arch_inventory(ck, &cfg, &r, &e), ST_OK);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	inventory_print(f, &cfg, &r);
	fclose(f);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
	return buf;
}

/* --check's inventory of the checkpoint at PATH, opened once: 0 when it
 * does not open (the check reports that). */
static int check(const char *path, st_problem_fn fn, void *ctx)
{
	st_checkpoint *ck;
	st_error e;
	if (st_checkpoint_open(&ck, path, ST_OPEN_TORCH, &e) != ST_OK)
		return 0;
	int n = inventory_check(ck, path, fn, ctx, &e);
	ck_assert_int_ge(n, 0);
	st_checkpoint_close(ck);
	return n;
}

START_TEST(summary_of_complete_snapshot)
{
	char *s = summary("gpt2-good");
	ck_assert_str_eq(s, "config:      GPT2LMHeadModel (config.json), 2 layers: "
	                 "1,952 parameters implied, 1,952 found in 28 of 28 "
	                 "tensors\n");
	free(s);
}
END_TEST

START_TEST(summary_names_missing_and_misshapen)
{
	/* 21 tensors: embed, 2 x 9 per layer, norm, lm_head; 2 of them wrong. */
	char *s = summary("llama-broken");
	ck_assert_str_eq(s, "config:      LlamaForCausalLM (config.json), 2 layers: "
	                 "4,944 parameters implied, 4,688 found in 19 of 21 "
	                 "tensors\n"
	                 "missing:     1 parameter: "
	                 "model.layers.1.self_attn.k_proj.weight [8, 16]\n"
	                 "misshapen:   1 parameter: "
	                 "model.layers.0.self_attn.v_proj.weight [16, 16] "
	                 "(expected [8, 16])\n");
	free(s);
}
END_TEST

START_TEST(summary_classifies_extras)
{
	char *s = summary("gpt2-legacy");
	ck_assert_ptr_nonnull(strstr(s, "extra:       4 legacy buffers: "
	                             "transformer.h.0.attn.bias [1, 1, 8, 8], "
	                             "transformer.h.0.attn.masked_bias [], "));
	ck_assert_ptr_nonnull(strstr(s, "extra:       1 alias of the embedding: "
	                             "lm_head.weight [16, 8]\n"));
	ck_assert_ptr_nonnull(strstr(s, "extra:       2 tensors not in the config: "
	                             "transformer.h.2.attn.bias [1, 1, 8, 8], "
	                             "optimizer.step [1]\n"));
	free(s);
}
END_TEST


START_TEST(check_lists_every_problem)
{
	struct problems p = {0};
	ck_assert_int_eq(check(DIR "gpt2-missing", collect, &p), 2);
	ck_assert_str_eq(p.text,
	                 DIR "gpt2-missing: tensor 'h.1.mlp.c_fc.bias': missing "
	                 "(GPT2LMHeadModel implies [32])\n"
	                 DIR "gpt2-missing: tensor 'ln_f.weight': missing "
	                 "(GPT2LMHeadModel implies [8])\n");
	memset(&p, 0, sizeof p);
	ck_assert_int_eq(check(DIR "gpt2-misshapen", collect, &p), 2);
	ck_assert_str_eq(p.text,
	                 DIR "gpt2-misshapen: tensor 'h.0.attn.c_proj.weight': "
	                 "shape [7, 8], expected [8, 8] (GPT2LMHeadModel)\n"
	                 DIR "gpt2-misshapen: tensor 'h.1.attn.c_attn.weight': "
	                 "shape [24, 8], expected [8, 24] (GPT2LMHeadModel)\n");
}
END_TEST

START_TEST(check_warns_of_unexplained_only)
{
	struct problems p = {0};
	ck_assert_int_eq(check(DIR "gpt2-legacy", collect, &p), 0);
	ck_assert_int_eq(p.warnings, 2);
	ck_assert_ptr_nonnull(strstr(p.text, "tensor 'optimizer.step' [1]: not a "
	                             "parameter of GPT2LMHeadModel\n"));
	memset(&p, 0, sizeof p);
	ck_assert_int_eq(check(DIR "qwen2-tied", collect, &p), 0);
	ck_assert_int_eq(p.warnings, 0);
}
END_TEST

START_TEST(no_config_says_nothing)
{
	/* testdata/stdiff/a.safetensors has no config.json beside it. */
	st_checkpoint *ck;
	st_error e;
	ck_assert(st_checkpoint_open(&ck, ST_TESTDATA "/stdiff/a.safetensors", 0,
	                             &e) == ST_OK);
	st_arch_config cfg;
	st_arch_report r;
	ck_assert_int_eq(st_arch_inventory(ck, &cfg, &r, &e), ST_ENOTFOUND);
	st_checkpoint_close(ck);
	struct problems p = {0};
	ck_assert_int_eq(check(ST_TESTDATA "/stdiff/a.safetensors",
	                                 collect, &p), 0);
	ck_assert_str_eq(p.text, "");
}
END_TEST

/* A config.json that is there but cannot be read (a folder in its place)
 * is an I/O error, not a config that implies nothing. */
START_TEST(check_fails_on_unreadable_config)
{
	char dir[] = "/tmp/check_inventory_XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char file[512], cfg[512];
	snprintf(file, sizeof file, "%s/model.safetensors", dir);
	snprintf(cfg, sizeof cfg, "%s/config.json", dir);
	ck_assert_int_eq(symlink(DIR "gpt2-good/model.safetensors", file), 0);
	ck_assert_int_eq(mkdir(cfg, 0700), 0);
	st_checkpoint *ck;
	st_error e;
	ck_assert(st_checkpoint_open(&ck, dir, 0, &e) == ST_OK);
	struct problems p = {0};
	memset(&e, 0, sizeof e);
	ck_assert_int_eq(inventory_check(ck, dir, collect, &p, &e), -1);
	ck_assert_int_eq(e.code, ST_EIO);
	ck_assert_msg(strstr(e.message, "config.json: cannot read") != NULL, "%s",
	              e.message);
	ck_assert_str_eq(p.text, "");
	st_checkpoint_close(ck);
	ck_assert_int_eq(rmdir(cfg), 0);
	ck_assert_int_eq(unlink(file), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("inventory");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, summary_of_complete_snapshot);
	tcase_add_test(tc, summary_names_missing_and_misshapen);
	tcase_add_test(tc, summary_classifies_extras);
	tcase_add_test(tc, check_lists_every_problem);
	tcase_add_test(tc, check_warns_of_unexplained_only);
	tcase_add_test(tc, no_config_says_nothing);
	tcase_add_test(tc, check_fails_on_unreadable_config);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
