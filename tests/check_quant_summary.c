/*
 * check_quant_summary.c - st_quant_summary_load (st/quant.h): what a
 * description counts of the quantized fixtures of testdata/quant/stinfo
 * (made by testdata/quant/gen_stinfo.py; the figures below are those its
 * expected.tsv works out from the shapes), and the block size
 * config.json gives, from a copy of one in a temporary directory.
 */
#include <sys/stat.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#define TMPDIR_NAME "check_quant_summary"
#include "tmpdir.h"

#define DIR ST_TESTDATA "/quant/stinfo/"

static st_checkpoint *open_path(const char *path)
{
	st_checkpoint *ck;
	st_error e;
	ck_assert_msg(st_checkpoint_open(&ck, path, 0, &e) == ST_OK, "%s", e.message);
	return ck;
}

struct mismatches {
	int n;
	char last[600];
};

static void on_mismatch(void *ctx, const char *message)
{
	struct mismatches *m = ctx;
	m->n++;
	snprintf(m->last, sizeof m->last, "%s", message);
}

/* The summary of fixture name (ST_OK asserted), mismatches into m. */
static st_checkpoint *summary(const char *name, st_quant_summary *q, struct mismatches *m)
{
	st_error e;
	char path[512];
	snprintf(path, sizeof path, DIR "%s", name);
	st_checkpoint *ck = open_path(path);
	ck_assert_msg(st_quant_summary_load(q, ck, on_mismatch, m, &e) == ST_OK, "%s", e.message);
	return ck;
}

START_TEST(summary_counts_block_scaled_layouts_with_config_blocks)
{
	st_quant_summary q;
	struct mismatches m = {0, ""};
	st_checkpoint *ck = summary("block", &q, &m);
	ck_assert_uint_eq(q.block_rows, 2);
	ck_assert_uint_eq(q.block_cols, 3);
	ck_assert_int_eq(q.block_from_config, 1);
	ck_assert_int_eq(q.config_error.code, ST_OK);
	ck_assert_uint_eq(q.plan.n_fp8, 3);
	ck_assert_uint_eq(q.plan.parameters, 126);
	ck_assert_uint_eq(q.plan.n_scales, 3);
	ck_assert_uint_eq(q.scale_parameters, 25);
	ck_assert_uint_eq(q.plan.scale_bytes, 100);
	/* One layout for the 3-D expert weight, one for the 2-D weights. */
	ck_assert_uint_eq(q.n_layouts, 2);
	ck_assert_int_eq(q.layouts[0].experts, 1);
	ck_assert_uint_eq(q.layouts[0].weights + q.layouts[1].weights, 3);
	ck_assert_int_eq(m.n, 0);
	st_quant_summary_free(&q);
	st_quant_summary_free(&q); /* a second call is a no-op */
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(summary_uses_default_blocks_without_config)
{
	st_quant_summary q;
	struct mismatches m = {0, ""};
	st_checkpoint *ck = summary("channel.safetensors", &q, &m);
	ck_assert_uint_eq(q.block_rows, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_uint_eq(q.block_cols, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_int_eq(q.block_from_config, 0);
	ck_assert_uint_eq(q.plan.parameters, 43);
	ck_assert_uint_eq(q.plan.n_scales, 2);
	ck_assert_uint_eq(q.scale_parameters, 7);
	ck_assert_uint_eq(q.plan.scale_bytes, 22);
	ck_assert_uint_eq(q.n_layouts, 2); /* F32 and BF16 scales */
	ck_assert_int_eq(q.layouts[0].kind, ST_QUANT_CHANNEL);
	st_quant_summary_free(&q);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(summary_counts_mxfp4_weights_dequantized)
{
	st_quant_summary q;
	struct mismatches m = {0, ""};
	st_checkpoint *ck = summary("mx", &q, &m);
	ck_assert_uint_eq(q.plan.n_mxfp4, 2);
	ck_assert_uint_eq(q.plan.parameters, 712);
	ck_assert_uint_eq(q.plan.n_scales, 2);
	ck_assert_uint_eq(q.scale_parameters, 22);
	ck_assert_uint_eq(q.plan.scale_bytes, 22);
	ck_assert_uint_eq(q.n_layouts, 1);
	ck_assert_int_eq(q.layouts[0].role, ST_QUANT_ROLE_MXFP4);
	st_quant_summary_free(&q);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(summary_reports_every_mismatch)
{
	st_quant_summary q;
	struct mismatches m = {0, ""};
	st_checkpoint *ck = summary("broken", &q, &m);
	ck_assert_uint_eq(q.plan.n_problems, 7);
	ck_assert_int_eq(m.n, 7);
	st_quant_summary_free(&q);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(summary_of_unquantized_is_not_found)
{
	st_checkpoint *ck = open_path(ST_TESTDATA "/stinfo/dtypes.safetensors");
	st_quant_summary q;
	st_error e;
	ck_assert_int_eq(st_quant_summary_load(&q, ck, NULL, NULL, &e), ST_ENOTFOUND);
	ck_assert_ptr_null(q.layouts);
	ck_assert_int_eq(q.config_error.code, ST_OK);
	st_checkpoint_close(ck);
}
END_TEST

/* Copy testdata file src to dst. */
static void copy_file(const char *src, const char *dst)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	ck_assert_int_eq(fclose(out), 0);
}

START_TEST(hostile_block_size_counts_mismatches_without_reporting_them)
{
	/* block/ with weight_block_size [0, 128]: the pairs are judged with
	 * the default blocks, a guess, so counted and not reported. */
	copy_file(DIR "block/model.safetensors", path_in("model.safetensors"));
	write_text(path_in("config.json"), "{\"quantization_config\": {\"quant_method\": \"fp8\", "
	                                   "\"weight_block_size\": [0, 128]}}");
	st_checkpoint *ck = open_path(path_in("model.safetensors"));
	st_quant_summary q;
	struct mismatches m = {0, ""};
	st_error e;
	ck_assert_int_eq(st_quant_summary_load(&q, ck, on_mismatch, &m, &e), ST_OK);
	ck_assert_int_eq(q.config_error.code, ST_EINVAL);
	ck_assert_msg(strstr(q.config_error.message, path_in("config.json")) == q.config_error.message,
	              "%s", q.config_error.message);
	ck_assert_msg(strstr(q.config_error.message, ": quantization_config.weight_block_size "
	                                             "[0, 128]: a block side is 0"),
	              "%s", q.config_error.message);
	ck_assert_uint_eq(q.block_rows, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_int_eq(q.block_from_config, 0);
	ck_assert_uint_eq(q.plan.n_problems, 3);
	ck_assert_int_eq(m.n, 0);
	st_quant_summary_free(&q);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(unreadable_config_is_an_io_error)
{
	/* A config.json that is a folder: there, but it cannot be read. The
	 * pairs are judged against the default blocks, a guess, so counted
	 * and not reported (this summary once took it for no config and
	 * reported them, which let stinfo --check pass on a read that had
	 * failed). */
	copy_file(DIR "block/model.safetensors", path_in("model.safetensors"));
	ck_assert_int_eq(mkdir(path_in("config.json"), 0700), 0);
	st_checkpoint *ck = open_path(path_in("model.safetensors"));
	st_quant_summary q;
	struct mismatches m = {0, ""};
	st_error e;
	ck_assert_int_eq(st_quant_summary_load(&q, ck, on_mismatch, &m, &e), ST_OK);
	ck_assert_int_eq(q.config_error.code, ST_EIO);
	ck_assert_msg(strstr(q.config_error.message, path_in("config.json")) == q.config_error.message,
	              "%s", q.config_error.message);
	ck_assert_msg(strstr(q.config_error.message, ": cannot read"), "%s", q.config_error.message);
	ck_assert_uint_eq(q.block_rows, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_int_eq(q.block_from_config, 0);
	ck_assert_uint_eq(q.plan.n_problems, 3); /* 2 x 3 scales do not fit 128 x 128 blocks */
	ck_assert_int_eq(m.n, 0);
	st_quant_summary_free(&q);
	st_checkpoint_close(ck);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quant_summary");
	TCase *tc = tcase_create("testdata");
	tcase_add_test(tc, summary_counts_block_scaled_layouts_with_config_blocks);
	tcase_add_test(tc, summary_uses_default_blocks_without_config);
	tcase_add_test(tc, summary_counts_mxfp4_weights_dequantized);
	tcase_add_test(tc, summary_reports_every_mismatch);
	tcase_add_test(tc, summary_of_unquantized_is_not_found);
	suite_add_tcase(s, tc);
	TCase *tt = tcase_create("tmpdir");
	tcase_add_checked_fixture(tt, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tt, hostile_block_size_counts_mismatches_without_reporting_them);
	tcase_add_test(tt, unreadable_config_is_an_io_error);
	suite_add_tcase(s, tt);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
