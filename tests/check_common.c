/*
 * check_common.c - the helpers the tools share (tools/common): size and
 * count formatting at its unit boundaries, printable names, option
 * parsing. The tools' own
 * behaviour is tested through them in tests/cli/.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ckpt.h"
#include "fe/cli.h"

#define DIR ST_TESTDATA "/stdiff/"

START_TEST(test_fmt)
{
	static const struct {
		void (*fmt)(char *, size_t, uint64_t);
		uint64_t n;
		const char *want;
	} cases[] = {
		{cli_fmt_bytes, 0, "0 B"}, {cli_fmt_bytes, 999, "999 B"},
		{cli_fmt_bytes, 1000, "1.0 kB"}, {cli_fmt_bytes, 999949, "999.9 kB"},
		{cli_fmt_bytes, 999950, "1.0 MB"}, {cli_fmt_bytes, 548100000, "548.1 MB"},
		{cli_fmt_bytes, UINT64_MAX, "18.4 EB"},
		{cli_fmt_count, 0, "0"}, {cli_fmt_count, 999, "999"},
		{cli_fmt_count, 1000, "1.0K"}, {cli_fmt_count, 124439808, "124.4M"},
		{cli_fmt_count, 999950000, "1.0B"}, {cli_fmt_count, 2000000000000ULL, "2.0T"},
		{cli_fmt_count, 1000000000000000ULL, "1000.0T"},
	};
	char buf[32];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cases[i].fmt(buf, sizeof buf, cases[i].n);
		ck_assert_str_eq(buf, cases[i].want);
	}
}
END_TEST

START_TEST(test_printable)
{
	char *p = cli_printable("a\nb\0c\x7f\xc3\xa9", 8);
	ck_assert_str_eq(p, "a\\x0ab\\x00c\\x7f\xc3\xa9");
	free(p);
	p = cli_printable("", 0);
	ck_assert_str_eq(p, "");
	free(p);
}
END_TEST

/* What a terminal would act on never passes: C1 controls (CSI U+009B, OSC
 * U+009D, as xterm.js executes them), bytes that are not UTF-8 (a raw 0x9b
 * is CSI on 8-bit terminals), overlong forms, surrogates, bidirectional
 * overrides; printable UTF-8 (2, 3 and 4 bytes) passes whole. */
START_TEST(test_printable_escapes_c1_bidi_and_invalid_utf8)
{
	static const struct {
		const char *in;
		const char *want;
	} cases[] = {
		{"a\xc2\x9b" "2Jb", "a\\u009b2Jb"},
		{"\xc2\x9d" "0;title\x07", "\\u009d0;title\\x07"},
		{"x\x9b" "y", "x\\x9by"},
		{"\xc0\xaf", "\\xc0\\xaf"},           /* overlong "/" */
		{"\xed\xa0\x80", "\\xed\\xa0\\x80"},   /* a surrogate */
		{"\xe2\x80\xae" "txt.exe", "\\u202etxt.exe"}, /* RIGHT-TO-LEFT OVERRIDE */
		{"\xe2\x81\xa6" "x", "\\u2066x"},
		{"\xc2\xa0\xe2\x82\xac\xf0\x9f\x98\x80", "\xc2\xa0\xe2\x82\xac\xf0\x9f\x98\x80"},
		{"cut\xe2\x82", "cut\\xe2\\x82"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *p = cli_printable(cases[i].in, strlen(cases[i].in));
		ck_assert_str_eq(p, cases[i].want);
		free(p);
	}
}
END_TEST

/* JSON output is Unicode text whatever the file held, and shows on a
 * terminal as inert: controls, DEL, C1 and bidi controls as \uNNNN, bytes
 * that are not UTF-8 as \ufffd. */
START_TEST(test_json_string_escapes_c1_and_replaces_invalid_utf8)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert(f != NULL);
	const char in[] = "q\"\\\x01\x7f\xc2\x9b\x9b\xe2\x80\xae\xc3\xa9\0z";
	cli_json_string(f, in, sizeof in - 1);
	fclose(f);
	ck_assert_str_eq(buf, "\"q\\\"\\\\\\u0001\\u007f\\u009b\\ufffd\\u202e\xc3\xa9\\u0000z\"");
	free(buf);
}
END_TEST

START_TEST(test_print_dims)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert(f != NULL);
	const uint64_t dims[] = {768, 2304};
	cli_print_dims(f, dims, 2);
	cli_print_dims(f, dims, 0);
	fclose(f);
	ck_assert_str_eq(buf, "[768, 2304][]");
	free(buf);
}
END_TEST

START_TEST(test_parse)
{
	uint64_t v;
	ck_assert_int_eq(cli_parse_size("5GB", &v), 0);
	ck_assert_uint_eq(v, 5000000000ULL);
	ck_assert_int_eq(cli_parse_size("4GiB", &v), 0);
	ck_assert_uint_eq(v, 4ULL << 30);
	ck_assert_int_eq(cli_parse_size("1.5kB", &v), 0);
	ck_assert_uint_eq(v, 1500);
	ck_assert_int_eq(cli_parse_size("0", &v), -1);
	ck_assert_int_eq(cli_parse_size("5 GB", &v), -1);
	ck_assert_int_eq(cli_parse_u64("-1", &v), -1);
	st_dtype d;
	ck_assert_int_eq(cli_parse_float_dtype("BF16", &d), 0);
	ck_assert_int_eq(d, ST_DTYPE_BF16);
	ck_assert_int_eq(cli_parse_float_dtype("half", &d), 0);
	ck_assert_int_eq(d, ST_DTYPE_F16);
	ck_assert_int_eq(cli_parse_float_dtype("float32", &d), 0);
	ck_assert_int_eq(d, ST_DTYPE_F32);
	ck_assert_int_eq(cli_parse_float_dtype("f8", &d), -1);
	ck_assert_int_eq(cli_opt_threads("8", 8), 8);
	ck_assert(cli_opt_nonneg("--atol", "1e-5") == 1e-5);
	ck_assert_int_ge(cli_default_threads(1), 1);
	ck_assert_int_le(cli_default_threads(1), 1);
}
END_TEST

/* cli_getopt's normal path; its usage errors exit, tested in tests/cli/. */
START_TEST(test_getopt)
{
	static const struct option longs[] = {
		{"json", no_argument, NULL, 'j'},
		{"threads", required_argument, NULL, 't'},
		{NULL, 0, NULL, 0},
	};
	char a0[] = "prog", a1[] = "--json", a2[] = "-t3", a3[] = "--threads=4",
	     a4[] = "file";
	char *argv[] = {a0, a1, a2, a3, a4, NULL};
	optind = 0;
	ck_assert_int_eq(cli_getopt(5, argv, "jt:", longs), 'j');
	ck_assert_int_eq(cli_getopt(5, argv, "jt:", longs), 't');
	ck_assert_str_eq(optarg, "3");
	ck_assert_int_eq(cli_getopt(5, argv, "jt:", longs), 't');
	ck_assert_str_eq(optarg, "4");
	ck_assert_int_eq(cli_getopt(5, argv, "jt:", longs), -1);
	ck_assert_str_eq(argv[optind], "file");
}
END_TEST

START_TEST(test_open_missing)
{
	st_checkpoint *ck = NULL;
	ck_assert_int_eq(ckpt_open(&ck, DIR "no-such-file.safetensors"), CLI_ERROR);
}
END_TEST

int main(void)
{
	cli_init("check_common");
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_fmt);
	tcase_add_test(tc, test_printable);
	tcase_add_test(tc, test_printable_escapes_c1_bidi_and_invalid_utf8);
	tcase_add_test(tc, test_json_string_escapes_c1_and_replaces_invalid_utf8);
	tcase_add_test(tc, test_print_dims);
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_getopt);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_open_missing);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
