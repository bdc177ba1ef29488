/*
 * check_layers.c - compaction of repeated layers (tools/common/layers):
 * the rows stinfo's table shows for hand-made tensor lists, each case's
 * expected rows written out by hand from the rules in layers.h.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/layers.h"

static const uint64_t shape4[] = {4}, shape5[] = {5};

/* A tensor list from names, all F32 [4] unless the name is in wide5. */
struct list {
	st_tensor t[64];
	const st_tensor *p[64];
	size_t n;
};

static void add(struct list *l, const char *name, const uint64_t *shape)
{
	st_tensor *t = &l->t[l->n];
	memset(t, 0, sizeof *t);
	t->name = name;
	t->name_len = strlen(name);
	t->dtype = ST_DTYPE_F32;
	t->ndim = 1;
	t->shape = shape;
	t->n_elements = shape[0];
	l->p[l->n] = t;
	l->n++;
}

/* Compact l and compare the row names (and member counts) with want. */
static void expect_rows(struct list *l, int all, const char *const *want,
                        const size_t *members, size_t n_want)
{
	size_t nrows;
	layers_row *rows = layers_compact(l->p, l->n, all, &nrows);
	ck_assert_uint_eq(nrows, n_want);
	for (size_t r = 0; r < nrows; r++) {
		size_t len;
		char *name = layers_row_name(&rows[r], &len);
		ck_assert_str_eq(name, want[r]);
		ck_assert_uint_eq(len, strlen(want[r]));
		ck_assert_uint_eq(rows[r].nmembers, members[r]);
		for (size_t m = 1; m < rows[r].nmembers; m++)
			ck_assert_uint_lt(rows[r].members[m - 1], rows[r].members[m]);
		free(name);
	}
	layers_free(rows, nrows);
}

START_TEST(repeated_layers_become_one_row)
{
	static const char *names[] = {"h.0.w", "h.1.w", "h.2.w", "h.3.w"};
	struct list l = {.n = 0};
	add(&l, "wte", shape5);
	for (int i = 0; i < 4; i++)
		add(&l, names[i], shape4);
	add(&l, "ln_f", shape4);
	const char *want[] = {"wte", "h.{0..3}.w", "ln_f"};
	const size_t members[] = {1, 4, 1};
	expect_rows(&l, 0, want, members, 3);
}
END_TEST

START_TEST(all_keeps_every_tensor)
{
	struct list l = {.n = 0};
	add(&l, "h.0.w", shape4);
	add(&l, "h.1.w", shape4);
	const char *want[] = {"h.0.w", "h.1.w"};
	const size_t members[] = {1, 1};
	expect_rows(&l, 1, want, members, 2);
}
END_TEST

START_TEST(other_shape_stays_apart)
{
	struct list l = {.n = 0};
	add(&l, "h.0.w", shape4);
	add(&l, "h.1.w", shape5);
	add(&l, "h.2.w", shape4);
	/* Two of a run are listed, not written as a range. */
	const char *want[] = {"h.{0,2}.w", "h.1.w"};
	const size_t members[] = {2, 1};
	expect_rows(&l, 0, want, members, 2);
}
END_TEST

START_TEST(other_dtype_stays_apart)
{
	struct list l = {.n = 0};
	add(&l, "h.0.w", shape4);
	add(&l, "h.1.w", shape4);
	l.t[1].dtype = ST_DTYPE_BF16;
	const char *want[] = {"h.0.w", "h.1.w"};
	const size_t members[] = {1, 1};
	expect_rows(&l, 0, want, members, 2);
}
END_TEST

START_TEST(sets_list_runs_and_singles)
{
	static const char *names[] = {"h.0.w", "h.1.w", "h.2.w", "h.3.w", "h.7.w",
	                              "h.9.w", "h.10.w"};
	struct list l = {.n = 0};
	for (int i = 0; i < 7; i++)
		add(&l, names[i], shape4);
	const char *want[] = {"h.{0..3,7,9,10}.w"};
	const size_t members[] = {7};
	expect_rows(&l, 0, want, members, 1);
}
END_TEST

START_TEST(nested_sets_only_for_full_products)
{
	static const char *full[] = {
		"l.0.e.0.w", "l.0.e.1.w", "l.0.e.2.w",
		"l.1.e.0.w", "l.1.e.1.w", "l.1.e.2.w",
	};
	struct list l = {.n = 0};
	for (int i = 0; i < 6; i++)
		add(&l, full[i], shape4);
	const char *want[] = {"l.{0,1}.e.{0..2}.w"};
	const size_t members[] = {6};
	expect_rows(&l, 0, want, members, 1);

	/* Layer 1 lacks expert 2: its set differs, so the layers stay apart. */
	struct list m = {.n = 0};
	for (int i = 0; i < 5; i++)
		add(&m, full[i], shape4);
	const char *want2[] = {"l.0.e.{0..2}.w", "l.1.e.{0,1}.w"};
	const size_t members2[] = {3, 2};
	expect_rows(&m, 0, want2, members2, 2);
}
END_TEST

START_TEST(leading_zero_is_not_an_integer)
{
	struct list l = {.n = 0};
	add(&l, "h.01.w", shape4);
	add(&l, "h.1.w", shape4);
	add(&l, "h.1234567890.w", shape4); /* ten digits: not an integer */
	add(&l, "h.2.w", shape4);
	const char *want[] = {"h.01.w", "h.{1,2}.w", "h.1234567890.w"};
	const size_t members[] = {1, 2, 1};
	expect_rows(&l, 0, want, members, 3);
}
END_TEST

START_TEST(rows_follow_first_member)
{
	/* Interleaved weights and biases: rows in the order of first use. */
	struct list l = {.n = 0};
	add(&l, "h.0.b", shape4);
	add(&l, "h.0.w", shape5);
	add(&l, "h.1.b", shape4);
	add(&l, "h.1.w", shape5);
	add(&l, "h.2.b", shape4);
	add(&l, "h.2.w", shape5);
	const char *want[] = {"h.{0..2}.b", "h.{0..2}.w"};
	const size_t members[] = {3, 3};
	expect_rows(&l, 0, want, members, 2);
}
END_TEST

START_TEST(names_with_nul_bytes_kept_whole)
{
	struct list l = {.n = 0};
	add(&l, "x", shape4);
	l.t[0].name = "a\0b.0";
	l.t[0].name_len = 5;
	size_t nrows, len;
	layers_row *rows = layers_compact(l.p, l.n, 0, &nrows);
	ck_assert_uint_eq(nrows, 1);
	char *name = layers_row_name(&rows[0], &len);
	ck_assert_uint_eq(len, 5);
	ck_assert(memcmp(name, "a\0b.0", 5) == 0);
	free(name);
	layers_free(rows, nrows);
}
END_TEST

START_TEST(no_tensors_no_rows)
{
	size_t nrows = 99;
	layers_row *rows = layers_compact(NULL, 0, 0, &nrows);
	ck_assert_uint_eq(nrows, 0);
	layers_free(rows, nrows);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("layers");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, repeated_layers_become_one_row);
	tcase_add_test(tc, all_keeps_every_tensor);
	tcase_add_test(tc, other_shape_stays_apart);
	tcase_add_test(tc, other_dtype_stays_apart);
	tcase_add_test(tc, sets_list_runs_and_singles);
	tcase_add_test(tc, nested_sets_only_for_full_products);
	tcase_add_test(tc, leading_zero_is_not_an_integer);
	tcase_add_test(tc, rows_follow_first_member);
	suite_add_tcase(s, tc);
	tc = tcase_create("limits");
	tcase_add_test(tc, names_with_nul_bytes_kept_whole);
	tcase_add_test(tc, no_tensors_no_rows);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
