/*
 * check_dtype_values.c - what dtype bytes hold as values (libst/
 * dtype_values.c): widening every numeric dtype to double from
 * hand-written little-endian bytes, which dtypes are numbers, and how
 * elements pack into whole-byte groups.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <st.h>

/* Little-endian bytes written out by hand, and the doubles they hold. */
START_TEST(widen_reads_every_numeric_dtype_from_le_bytes)
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
		ck_assert(st_dtype_has_values(cases[i].d));
		ck_assert(st_dtype_is_numeric(cases[i].d) == !narrow);
		st_dtype_widen(cases[i].d, cases[i].bytes, got, 2);
		for (int k = 0; k < 2; k++)
			ck_assert_msg(got[k] == cases[i].want[k], "%s[%d]: %.17g, expected %.17g",
			              st_dtype_name(cases[i].d), k, got[k], cases[i].want[k]);
	}
	ck_assert(!st_dtype_is_numeric(ST_DTYPE_F8_E4M3));
	ck_assert(!st_dtype_is_numeric(ST_DTYPE_F4));
	ck_assert(!st_dtype_is_numeric(ST_DTYPE_C64));
	ck_assert(!st_dtype_has_values(ST_DTYPE_C64));
	ck_assert(!st_dtype_has_values(ST_DTYPE_F6_E2M3));
	ck_assert(!st_dtype_has_values(ST_DTYPE_F6_E3M2));
}
END_TEST

/* A dtype listed neither numeric nor with values leaves dst alone. */
START_TEST(widen_leaves_dst_for_a_dtype_without_values)
{
	unsigned char bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	double got[1] = {42};
	st_dtype_widen(ST_DTYPE_C64, bytes, got, 1);
	ck_assert(got[0] == 42);
	st_dtype_widen(ST_DTYPE_F6_E2M3, bytes, got, 1);
	ck_assert(got[0] == 42);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dtype_values");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, widen_reads_every_numeric_dtype_from_le_bytes);
	tcase_add_test(tc, widen_leaves_dst_for_a_dtype_without_values);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
