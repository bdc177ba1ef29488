/*
 * check_common_quantize.c - unit tests for tools/common/quantize.c:
 * stconvert --block's "R,C", read as config.json's weight_block_size is,
 * with messages that quote the argument.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantize.h"

START_TEST(block_arg_gives_both_sides)
{
	uint64_t b0 = 0, b1 = 0;
	st_error e;
	ck_assert_int_eq(quantize_parse_block("128,64", &b0, &b1, &e), ST_OK);
	ck_assert_uint_eq(b0, 128);
	ck_assert_uint_eq(b1, 64);
	ck_assert_int_eq(quantize_parse_block(" 1 , 1048576", &b0, &b1, &e), ST_OK);
	ck_assert_uint_eq(b0, 1);
	ck_assert_uint_eq(b1, ST_QUANT_MAX_BLOCK);
}
END_TEST

START_TEST(block_arg_refused_quoting_it)
{
	static const struct {
		const char *arg, *why;
	} bad[] = {
		{"128", "--block '128': not R,C (two block sides)"},
		{"1,2,3", "--block '1,2,3': not R,C (two block sides)"},
		{"0,128", "--block '0,128': "},
		{"128,-1", "--block '128,-1': "},
		{"1048577,1", "--block '1048577,1': "},
		{"1.5,2", "--block '1.5,2': "},
	};
	uint64_t b0, b1;
	st_error e;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(quantize_parse_block(bad[i].arg, &b0, &b1, &e), ST_EINVAL);
		ck_assert_int_eq(e.code, ST_EINVAL);
		ck_assert_msg(strncmp(e.message, bad[i].why, strlen(bad[i].why)) == 0, "%s: %s",
		              bad[i].arg, e.message);
		ck_assert_ptr_null(strchr(e.message, '\n'));
	}
	/* A long argument is cut at 64 bytes in the message. */
	char arg[200];
	memset(arg, '1', sizeof arg - 1);
	arg[sizeof arg - 1] = 0;
	ck_assert_int_eq(quantize_parse_block(arg, &b0, &b1, &e), ST_EINVAL);
	ck_assert_ptr_nonnull(strstr(e.message, "...': not R,C"));
	ck_assert_uint_lt(strlen(e.message), 100);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quantize");
	TCase *tc = tcase_create("block");
	tcase_add_test(tc, block_arg_gives_both_sides);
	tcase_add_test(tc, block_arg_refused_quoting_it);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
