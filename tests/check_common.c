/*
 * check_common.c - the helpers the tools share (tools/common): size and
 * count formatting at its unit boundaries, printable names, option
 * parsing, widening every numeric dtype to double from hand-written
 * little-endian bytes. The tools' own
 * behaviour is tested through them in tests/cli/.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ckpt.h"
#include "common/cli.h"

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

/* Little-endian bytes written out by hand, and the doubles they hold. */
START_TEST(test_widen)
{
	static const struct {
		st_dtype d;
		unsigned char bytes[16];
		double want[2];
	} cases[] = {
		{ST_DTYPE_BOOL, {0, 2}, {0, 1}}, /* any non-zero byte is true */
		{ST_DTYPE_U8, {0xff, 7}, {255, 7}},
		{ST_DTYPE_I8, {0xff, 0x80}, {-1, -128}},
		{ST_DTYPE_U16, {0xff, 0xff, 0x34, 0x12}, {65535, 0x1234}},
		{ST_DTYPE_I16, {0x00, 0x80, 0xfe, 0xff}, {-32768, -2}},
		{ST_DTYPE_U32, {0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0}, {4294967295.0, 1}},
		{ST_DTYPE_I32, {0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0x7f},
		 {-2147483648.0, 2147483647.0}},
		{ST_DTYPE_U64, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		                0, 0, 0, 0, 0, 0, 0x20, 0},
		 {18446744073709551615.0, 9007199254740992.0}},
		{ST_DTYPE_I64, {0, 0, 0, 0, 0, 0, 0, 0x80,
		                0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		 {-9223372036854775808.0, -2}},
		{ST_DTYPE_F16, {0x00, 0x3c, 0x01, 0x00}, {1.0, 5.9604644775390625e-08}},
		{ST_DTYPE_BF16, {0x80, 0x3f, 0x80, 0xff}, {1.0, -INFINITY}},
		{ST_DTYPE_F32, {0, 0, 0xc0, 0x3f, 0x01, 0, 0, 0}, {1.5, 1.401298464324817e-45}},
		{ST_DTYPE_F64, {0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0xc0},
		 {1.0, -2.0}},
		/* 8- and 4-bit floats, by hand from the OCP formulas. */
		{ST_DTYPE_F8_E4M3, {0x38, 0xc0}, {1.0, -2.0}},
		{ST_DTYPE_F8_E5M2, {0x7c, 0x01}, {INFINITY, 1.52587890625e-05}}, /* 2^-16 */
		{ST_DTYPE_F8_E4M3FNUZ, {0x40, 0x01}, {1.0, 0.0009765625}},      /* 2^-10 */
		{ST_DTYPE_F8_E5M2FNUZ, {0x40, 0x01}, {1.0, 7.62939453125e-06}}, /* 2^-17 */
		{ST_DTYPE_F8_E8M0, {0x7f, 0x00}, {1.0, 5.877471754111438e-39}}, /* 2^-127 */
		{ST_DTYPE_F4, {0x9f}, {-6.0, -0.5}}, /* element 0 in the low nibble */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		double got[2] = {42, 42};
		int narrow = st_dtype_bits(cases[i].d) < 16 && st_dtype_is_float(cases[i].d);
		ck_assert(ckpt_has_values(cases[i].d));
		ck_assert(ckpt_is_numeric(cases[i].d) == !narrow);
		ckpt_widen(cases[i].d, cases[i].bytes, got, 2);
		for (int k = 0; k < 2; k++)
			ck_assert_msg(got[k] == cases[i].want[k], "%s[%d]: %.17g, expected %.17g",
			              st_dtype_name(cases[i].d), k, got[k], cases[i].want[k]);
	}
	ck_assert(!ckpt_is_numeric(ST_DTYPE_F8_E4M3));
	ck_assert(!ckpt_is_numeric(ST_DTYPE_F4));
	ck_assert(!ckpt_is_numeric(ST_DTYPE_C64));
	ck_assert(!ckpt_has_values(ST_DTYPE_C64));
	ck_assert(!ckpt_has_values(ST_DTYPE_F6_E2M3));
	ck_assert(!ckpt_has_values(ST_DTYPE_F6_E3M2));
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
	tcase_add_test(tc, test_widen);
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
