/*
 * check_common_quant_info.c - tools/common/quant_info: stinfo's lines,
 * JSON member and --check problems for the quantized fixtures of
 * testdata/quant/stinfo (made by testdata/quant/gen_stinfo.py; the
 * figures below are those its expected.tsv works out from the shapes).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/quant_info.h"
#include "problems.h"

#define DIR ST_TESTDATA "/quant/stinfo/"

static st_checkpoint *open_fixture(const char *name)
{
	st_checkpoint *ck;
	st_error e;
	char path[512];
	snprintf(path, sizeof path, DIR "%s", name);
	ck_assert_msg(st_checkpoint_open(&ck, path, 0, &e) == ST_OK, "%s", e.message);
	return ck;
}

/* What print (json 0) or json (1) writes for a fixture. */
static char *output(const char *name, int json, int *rc)
{
	st_checkpoint *ck = open_fixture(name);
	st_quant_summary q;
	char *buf = NULL;
	size_t len = 0;
	*rc = st_quant_summary_load(&q, ck, NULL, NULL, NULL);
	FILE *f = open_memstream(&buf, &len);
	if (*rc == ST_OK) {
		if (json)
			quant_info_json(f, &q);
		else
			quant_info_print(f, &q);
		st_quant_summary_free(&q);
	}
	fclose(f);
	st_checkpoint_close(ck);
	return buf;
}

START_TEST(summary_of_block_scaled_snapshot)
{
	int rc;
	char *s = output("block", 0, &rc);
	ck_assert_int_eq(rc, ST_OK);
	ck_assert_str_eq(s, "quantized:   FP8 E4M3, block-scaled 2x3, 1 expert weight (3-D) with F32 scales\n"
	                    "             FP8 E4M3, block-scaled 2x3, 2 weights with F32 scales\n"
	                    "  weights:   126 parameters, not counting the scales\n"
	                    "  scales:    3 tensors, 25 parameters, 100 B\n");
	free(s);
}
END_TEST

START_TEST(summary_counts_mxfp4_dequantized)
{
	int rc;
	char *s = output("mx", 0, &rc);
	ck_assert_int_eq(rc, ST_OK);
	ck_assert_str_eq(s, "quantized:   MXFP4 (E2M1 blocks of 32 with E8M0 scales), 2 expert weights\n"
	                    "  weights:   712 parameters, not counting the scales (MXFP4: two a byte)\n"
	                    "  scales:    2 tensors, 22 parameters, 22 B\n");
	free(s);
}
END_TEST

START_TEST(summary_counts_mismatches)
{
	int rc;
	char *s = output("broken", 0, &rc);
	ck_assert_int_eq(rc, ST_OK);
	ck_assert_msg(strstr(s, "\n  problems:  7 weight/scale mismatches (stinfo --check names them)\n"), "%s", s);
	free(s);
}
END_TEST

START_TEST(json_of_per_channel_file)
{
	int rc;
	char *s = output("channel.safetensors", 1, &rc);
	ck_assert_int_eq(rc, ST_OK);
	ck_assert_str_eq(s, "{\"weights\": 2, \"parameters_without_scales\": 43, \"scale_tensors\": 2, "
	                    "\"scale_parameters\": 7, \"scale_bytes\": 22, \"block_size\": [128, 128], "
	                    "\"block_size_from\": \"default\", \"problems\": 0, \"layouts\": [\n"
	                    "    {\"method\": \"fp8\", \"format\": \"F8_E4M3\", \"scaling\": \"channel\", "
	                    "\"block_size\": null, \"scale_dtype\": \"F32\", \"experts\": false, \"weights\": 1, "
	                    "\"parameters\": 24, \"scale_bytes\": 16, \"description\": \"FP8 E4M3, scaled per "
	                    "channel, 1 weight with F32 scales\"},\n"
	                    "    {\"method\": \"fp8\", \"format\": \"F8_E4M3\", \"scaling\": \"channel\", "
	                    "\"block_size\": null, \"scale_dtype\": \"BF16\", \"experts\": false, \"weights\": 1, "
	                    "\"parameters\": 15, \"scale_bytes\": 6, \"description\": \"FP8 E4M3, scaled per "
	                    "channel, 1 weight with BF16 scales\"}\n"
	                    "  ]}");
	free(s);
}
END_TEST

START_TEST(nothing_for_unquantized)
{
	int rc;
	st_checkpoint *ck;
	st_error e;
	st_quant_summary q;
	ck_assert(st_checkpoint_open(&ck, ST_TESTDATA "/stinfo/dtypes.safetensors", 0, &e) == ST_OK);
	ck_assert_int_eq(st_quant_summary_load(&q, ck, NULL, NULL, NULL), ST_ENOTFOUND);
	st_checkpoint_close(ck);
	free(output("../snap-q", 0, &rc));
	ck_assert_int_eq(rc, ST_ENOTFOUND);
}
END_TEST

/* --check's scale pairs of the checkpoint at PATH, opened once: 0 when it
 * does not open (the check reports that). */
static int qcheck(const char *path, st_problem_fn fn, void *ctx)
{
	st_checkpoint *ck;
	st_error e;
	if (st_checkpoint_open(&ck, path, ST_OPEN_TORCH, &e) != ST_OK)
		return 0;
	int n = quant_info_check(ck, fn, ctx, &e);
	ck_assert_int_ge(n, 0);
	st_checkpoint_close(ck);
	return n;
}

START_TEST(check_reports_each_mismatch)
{
	struct problems p = {0, 0, ""};
	ck_assert_int_eq(qcheck(DIR "broken", collect, &p), 7);
	ck_assert_int_eq(p.errors, 7);
	ck_assert_int_eq(p.warnings, 0);
	ck_assert_msg(strstr(p.text, "broken/model.safetensors: MXFP4 scale 'f_scales' has no weight 'f_blocks'\n"),
	              "%s", p.text);
	memset(&p, 0, sizeof p);
	ck_assert_int_eq(qcheck(DIR "e8m0", collect, &p), 0);
	ck_assert_int_eq(p.errors + p.warnings, 0);
	/* A path that does not open: its errors are reported elsewhere. */
	ck_assert_int_eq(qcheck(DIR "no-such", collect, &p), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quant_info");
	TCase *tc = tcase_create("quant_info");
	tcase_add_test(tc, summary_of_block_scaled_snapshot);
	tcase_add_test(tc, summary_counts_mxfp4_dequantized);
	tcase_add_test(tc, summary_counts_mismatches);
	tcase_add_test(tc, json_of_per_channel_file);
	tcase_add_test(tc, nothing_for_unquantized);
	tcase_add_test(tc, check_reports_each_mismatch);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
