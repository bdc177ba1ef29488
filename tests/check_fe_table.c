/*
 * check_fe_table.c - the tools' numbers, names and aligned tables
 * (tools/fe/table.h): what stinfo's summaries and tables print.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fe/table.h"

/*
 * What fn(arg) writes on stdout, malloc'd: stdout goes to a temporary
 * file for the call.
 */
static char *capture_stdout(void (*fn)(const void *), const void *arg)
{
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	FILE *tmp = tmpfile();
	ck_assert(saved >= 0 && tmp);
	ck_assert_int_ge(dup2(fileno(tmp), STDOUT_FILENO), 0);
	fn(arg);
	fflush(stdout);
	ck_assert_int_ge(dup2(saved, STDOUT_FILENO), 0);
	close(saved);
	long n = ftell(tmp);
	ck_assert_int_ge(n, 0);
	char *out = calloc((size_t)n + 1, 1);
	ck_assert_ptr_nonnull(out);
	rewind(tmp);
	ck_assert_uint_eq(fread(out, 1, (size_t)n, tmp), (size_t)n);
	fclose(tmp);
	return out;
}

/* A table printed to memory, as a string (malloc'd). */
static char *print_table(struct table *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	table_print(t, f);
	fclose(f);
	return buf;
}

START_TEST(fmt_group_separates_thousands)
{
	char buf[32];
	table_fmt_group(buf, sizeof buf, 0);
	ck_assert_str_eq(buf, "0");
	table_fmt_group(buf, sizeof buf, 999);
	ck_assert_str_eq(buf, "999");
	table_fmt_group(buf, sizeof buf, 1000);
	ck_assert_str_eq(buf, "1,000");
	table_fmt_group(buf, sizeof buf, 124439808);
	ck_assert_str_eq(buf, "124,439,808");
	table_fmt_group(buf, sizeof buf, UINT64_MAX);
	ck_assert_str_eq(buf, "18,446,744,073,709,551,615");
}
END_TEST

START_TEST(fmt_group_cuts_to_the_buffer)
{
	char buf[4] = "xxx";
	table_fmt_group(buf, sizeof buf, 1234);
	ck_assert_str_eq(buf, "1,2");
}
END_TEST

START_TEST(fmt_full_puts_the_exact_value_beside_the_short_one)
{
	char buf[64];
	table_fmt_full(buf, sizeof buf, 124439808, 0);
	ck_assert_str_eq(buf, "124.4M (124,439,808)");
	table_fmt_full(buf, sizeof buf, 497759232, 1);
	ck_assert_str_eq(buf, "497.8 MB (497,759,232 B)");
	/* Below 1000 the short form is exact: nothing beside it. */
	table_fmt_full(buf, sizeof buf, 300, 0);
	ck_assert_str_eq(buf, "300");
	table_fmt_full(buf, sizeof buf, 232, 1);
	ck_assert_str_eq(buf, "232 B");
}
END_TEST

START_TEST(display_name_quotes_the_empty_name_and_escapes_controls)
{
	char *s = table_display_name("", 0);
	ck_assert_str_eq(s, "\"\"");
	free(s);
	s = table_display_name("a\nb\x1b", 4);
	ck_assert_str_eq(s, "a\\x0ab\\x1b");
	free(s);
	s = table_display_name("h.0.w", 5);
	ck_assert_str_eq(s, "h.0.w");
	free(s);
}
END_TEST

START_TEST(display_width_counts_wide_characters_twice)
{
	ck_assert_uint_eq(table_display_width(""), 0);
	ck_assert_uint_eq(table_display_width("abc"), 3);
	ck_assert_uint_eq(table_display_width("caf\xc3\xa9"), 4);           /* café */
	ck_assert_uint_eq(table_display_width("\xe6\x97\xa5\xe6\x9c\xac"), 4); /* 日本 */
	ck_assert_uint_eq(table_display_width("\xea\xb0\x80"), 2);          /* 가 */
	ck_assert_uint_eq(table_display_width("\xf0\x9f\x98\x80"), 2);      /* U+1F600 */
}
END_TEST

START_TEST(base_name_is_what_follows_the_last_slash)
{
	ck_assert_str_eq(table_base_name("a/b/c.safetensors"), "c.safetensors");
	ck_assert_str_eq(table_base_name("c.gguf"), "c.gguf");
	ck_assert_str_eq(table_base_name("dir/"), "");
	ck_assert_str_eq(table_base_name("/x"), "x");
}
END_TEST

START_TEST(table_aligns_columns_by_display_width)
{
	struct table t;
	table_init(&t, 2, "lr");
	table_add(&t, (const char *const[]){"name", "n"});
	table_add(&t, (const char *const[]){"\xe6\x97\xa5\xe6\x9c\xac", "5"});
	table_add(&t, (const char *const[]){"x", "123"});
	ck_assert_uint_eq(t.nrows, 3);
	char *out = print_table(&t);
	ck_assert_str_eq(out, "name    n\n"
	                      "\xe6\x97\xa5\xe6\x9c\xac    5\n"
	                      "x     123\n");
	free(out);
	table_free(&t);
	ck_assert_uint_eq(t.nrows, 0);
	ck_assert_ptr_null(t.cells);
}
END_TEST

START_TEST(table_pads_no_trailing_blanks_after_a_left_column)
{
	struct table t;
	table_init(&t, 2, "rl");
	table_add(&t, (const char *const[]){"n", "name"});
	table_add(&t, (const char *const[]){"123", "x"});
	char *out = print_table(&t);
	ck_assert_str_eq(out, "  n  name\n"
	                      "123  x\n");
	free(out);
	table_free(&t);
}
END_TEST

START_TEST(table_copies_its_cells_and_grows)
{
	struct table t;
	table_init(&t, 1, "l");
	char cell[8];
	for (int i = 0; i < 40; i++) {
		snprintf(cell, sizeof cell, "%d", i);
		table_add(&t, (const char *const[]){cell});
	}
	strcpy(cell, "gone");
	ck_assert_uint_eq(t.nrows, 40);
	ck_assert_str_eq(t.cells[0], "0");
	ck_assert_str_eq(t.cells[39], "39");
	table_free(&t);
}
END_TEST

START_TEST(stats_cells_show_dashes_when_no_value_is_finite)
{
	st_stats a;
	memset(&a, 0, sizeof a);
	double x[] = {NAN, INFINITY, NAN};
	st_stats_add(&a, x, 3);
	char c[7][48];
	table_stats_cells(&a, c);
	for (int k = 0; k < 4; k++)
		ck_assert_str_eq(c[k], "-");
	ck_assert_str_eq(c[4], "2");
	ck_assert_str_eq(c[5], "1");
	ck_assert_str_eq(c[6], "0");
}
END_TEST

START_TEST(stats_cells_print_six_significant_digits)
{
	st_stats a;
	memset(&a, 0, sizeof a);
	double x[] = {-1.0, 0.0, 3.0, 1.0 / 3.0};
	st_stats_add(&a, x, 4);
	char c[7][48];
	table_stats_cells(&a, c);
	ck_assert_str_eq(c[0], "-1");
	ck_assert_str_eq(c[1], "3");
	ck_assert_str_eq(c[2], "0.583333");
	ck_assert_str_eq(c[4], "0");
	ck_assert_str_eq(c[5], "0");
	ck_assert_str_eq(c[6], "1");
	char buf[48];
	table_fmt_stat(buf, sizeof buf, 1234567.0);
	ck_assert_str_eq(buf, "1.23457e+06");
}
END_TEST

static void call_json_stats(const void *a) { table_json_stats(a, 0); }
static void call_json_stats_integer(const void *a) { table_json_stats(a, 1); }

START_TEST(json_stats_writes_null_when_no_value_is_finite)
{
	st_stats a;
	memset(&a, 0, sizeof a);
	double x[] = {NAN, INFINITY};
	st_stats_add(&a, x, 2);
	char *out = capture_stdout(call_json_stats, &a);
	ck_assert_str_eq(out, ", \"stats\": {\"min\": null, \"max\": null, \"mean\": "
	                      "null, \"std\": null, \"nan\": 1, \"inf\": 1, \"zeros\": 0}");
	free(out);
	double y[] = {2.0, 0.0};
	memset(&a, 0, sizeof a);
	st_stats_add(&a, y, 2);
	out = capture_stdout(call_json_stats, &a);
	ck_assert_str_eq(out, ", \"stats\": {\"min\": 0, \"max\": 2, \"mean\": 1, "
	                      "\"std\": 1, \"nan\": 0, \"inf\": 0, \"zeros\": 1}");
	free(out);
}
END_TEST

START_TEST(json_stats_of_integers_print_whole_values_as_integers)
{
	/* -100 and 1000 have one significant digit: %g writes -1e+02, 1e+03. */
	st_stats a;
	memset(&a, 0, sizeof a);
	double x[] = {-100.0, 98.0, 1000.0, 0.0};
	st_stats_add(&a, x, 4);
	char *out = capture_stdout(call_json_stats_integer, &a);
	/* numpy: mean 249.5, std (population) 438.9199813177796. */
	ck_assert_str_eq(out, ", \"stats\": {\"min\": -100, \"max\": 1000, \"mean\": 249.5, "
	                      "\"std\": 438.9199813177796, \"nan\": 0, \"inf\": 0, \"zeros\": 1}");
	free(out);
	/* A float tensor keeps the float form. */
	out = capture_stdout(call_json_stats, &a);
	ck_assert_ptr_nonnull(strstr(out, "\"min\": -1e+02, \"max\": 1e+03, "));
	free(out);
	/* Whole mean and std, and an I64 value past 2^53 (widened exactly). */
	double y[] = {-9007199254740994.0, 100.0, 100.0, 9007199254740994.0};
	memset(&a, 0, sizeof a);
	st_stats_add(&a, y, 4);
	out = capture_stdout(call_json_stats_integer, &a);
	ck_assert_ptr_nonnull(strstr(out, "\"min\": -9007199254740994, \"max\": 9007199254740994, "
	                                  "\"mean\": 50, "));
	free(out);
}
END_TEST

static void call_print_totals(const void *unused)
{
	(void)unused;
	table_print_totals(148, 124439808, 497759232);
	table_print_kv("dtype:", "F32");
}

START_TEST(print_totals_pads_keys_to_one_column)
{
	char *out = capture_stdout(call_print_totals, NULL);
	ck_assert_str_eq(out, "tensors:     148\n"
	                      "parameters:  124.4M (124,439,808)\n"
	                      "bytes:       497.8 MB (497,759,232 B)\n"
	                      "dtype:       F32\n");
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fe_table");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, fmt_group_separates_thousands);
	tcase_add_test(tc, fmt_group_cuts_to_the_buffer);
	tcase_add_test(tc, fmt_full_puts_the_exact_value_beside_the_short_one);
	tcase_add_test(tc, display_name_quotes_the_empty_name_and_escapes_controls);
	tcase_add_test(tc, display_width_counts_wide_characters_twice);
	tcase_add_test(tc, base_name_is_what_follows_the_last_slash);
	tcase_add_test(tc, table_aligns_columns_by_display_width);
	tcase_add_test(tc, table_pads_no_trailing_blanks_after_a_left_column);
	tcase_add_test(tc, table_copies_its_cells_and_grows);
	tcase_add_test(tc, stats_cells_show_dashes_when_no_value_is_finite);
	tcase_add_test(tc, stats_cells_print_six_significant_digits);
	tcase_add_test(tc, json_stats_writes_null_when_no_value_is_finite);
	tcase_add_test(tc, json_stats_of_integers_print_whole_values_as_integers);
	tcase_add_test(tc, print_totals_pads_keys_to_one_column);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
