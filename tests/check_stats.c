/*
 * check_stats.c - value statistics (st/stats.h, libst/stats.c): small cases
 * worked out by hand, values far from zero where a naive sum of squares
 * loses every digit, chunk splits that must not change the answer, and
 * every tensor of testdata/stinfo/stats.safetensors against numpy's
 * figures in stats.expected (gen_fixtures.py, float64, population std).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#define DIR ST_TESTDATA "/stinfo/"

static void close_to(double got, double want, double rel)
{
	double tol = rel * fabs(want);
	ck_assert_msg(fabs(got - want) <= tol, "got %.17g, want %.17g", got, want);
}

START_TEST(empty_is_zero)
{
	st_stats a = {0};
	st_stats_add(&a, NULL, 0);
	ck_assert_uint_eq(a.n, 0);
	ck_assert(st_stats_mean(&a) == 0 && st_stats_std(&a) == 0);
}
END_TEST

START_TEST(one_to_four)
{
	const double x[] = {1, 2, 3, 4};
	st_stats a = {0};
	st_stats_add(&a, x, 4);
	ck_assert_uint_eq(a.n, 4);
	ck_assert(a.min == 1 && a.max == 4);
	ck_assert(st_stats_mean(&a) == 2.5);
	/* Deviations -1.5 -0.5 0.5 1.5: squares sum to 5, 5 / 4 = 1.25. */
	close_to(st_stats_std(&a), sqrt(1.25), 1e-15);
	ck_assert_uint_eq(a.zeros, 0);
}
END_TEST

START_TEST(nan_inf_and_zeros_counted_apart)
{
	const double x[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 5};
	st_stats a = {0};
	st_stats_add(&a, x, 6);
	ck_assert_uint_eq(a.n, 3);
	ck_assert_uint_eq(a.nan, 1);
	ck_assert_uint_eq(a.inf, 2);
	ck_assert_uint_eq(a.zeros, 2);
	ck_assert(a.min == 0 && a.max == 5);
	/* 0, 0, 5: mean 5/3, variance (2 * 25/9 + 100/9) / 3 = 50/9. */
	close_to(st_stats_mean(&a), 5.0 / 3, 1e-15);
	close_to(st_stats_std(&a), sqrt(50.0) / 3, 1e-15);
}
END_TEST

START_TEST(no_finite_value)
{
	const double x[] = {NAN, INFINITY, NAN};
	st_stats a = {0};
	st_stats_add(&a, x, 3);
	ck_assert_uint_eq(a.n, 0);
	ck_assert_uint_eq(a.nan, 2);
	ck_assert_uint_eq(a.inf, 1);
	ck_assert(st_stats_mean(&a) == 0 && st_stats_std(&a) == 0);
}
END_TEST

START_TEST(far_from_zero_keeps_the_spread)
{
	/* 1e12 + {1, 2, 3, 4}: exact doubles; mean 1e12 + 2.5, std
	 * sqrt(1.25). sum(x^2)/n - mean^2 would be about 1e24 minus 1e24. */
	double x[4];
	for (int i = 0; i < 4; i++)
		x[i] = 1e12 + (i + 1);
	st_stats a = {0};
	st_stats_add(&a, x, 4);
	ck_assert(st_stats_mean(&a) == 1e12 + 2.5);
	close_to(st_stats_std(&a), sqrt(1.25), 1e-9);
	/* The same, one value per chunk, merged in order. */
	st_stats b = {0};
	for (int i = 0; i < 4; i++) {
		st_stats c = {0};
		st_stats_add(&c, &x[i], 1);
		st_stats_merge(&b, &c);
	}
	ck_assert(st_stats_mean(&b) == 1e12 + 2.5);
	close_to(st_stats_std(&b), sqrt(1.25), 1e-9);
}
END_TEST

START_TEST(splits_do_not_change_the_answer)
{
	/* 1..10: mean 5.5, variance (10^2 - 1) / 12 = 8.25. */
	double x[10];
	for (int i = 0; i < 10; i++)
		x[i] = i + 1;
	static const size_t splits[][4] = {{10}, {3, 3, 4}, {1, 9}, {9, 1}, {5, 5}};
	static const size_t nsplit[] = {1, 3, 2, 2, 2};
	for (size_t s = 0; s < 5; s++) {
		st_stats merged = {0}, running = {0};
		size_t off = 0;
		for (size_t k = 0; k < nsplit[s]; k++) {
			st_stats c = {0};
			st_stats_add(&c, x + off, splits[s][k]);
			st_stats_merge(&merged, &c);
			st_stats_add(&running, x + off, splits[s][k]);
			off += splits[s][k];
		}
		const st_stats *both[] = {&merged, &running};
		for (int w = 0; w < 2; w++) {
			ck_assert_uint_eq(both[w]->n, 10);
			ck_assert(both[w]->min == 1 && both[w]->max == 10);
			close_to(st_stats_mean(both[w]), 5.5, 1e-15);
			close_to(st_stats_std(both[w]), sqrt(8.25), 1e-15);
		}
	}
}
END_TEST

/* numpy's figures for one tensor, as stats.expected writes them. */
struct want {
	char name[64];
	int skip, empty;
	double min, max, mean, std;
	unsigned long long nan, inf, zeros;
};

static int parse_line(const char *line, struct want *w)
{
	char f[4][32];
	memset(w, 0, sizeof *w);
	int n = sscanf(line, "%63s %31s %31s %31s %31s %llu %llu %llu", w->name,
	               f[0], f[1], f[2], f[3], &w->nan, &w->inf, &w->zeros);
	if (n == 2 && strcmp(f[0], "skip") == 0) {
		w->skip = 1;
		return 1;
	}
	if (n != 8)
		return 0;
	if (strcmp(f[0], "-") == 0) {
		w->empty = 1;
		return 1;
	}
	w->min = strtod(f[0], NULL);
	w->max = strtod(f[1], NULL);
	w->mean = strtod(f[2], NULL);
	w->std = strtod(f[3], NULL);
	return 1;
}

/* Stats of tensor i of c, chunk elements at a time, merged in order. */
static st_stats tensor_stats(st_checkpoint *c, size_t i, size_t chunk)
{
	const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
	unsigned char *raw = malloc(t->n_bytes ? t->n_bytes : 1);
	double *x = malloc((t->n_elements ? t->n_elements : 1) * sizeof *x);
	st_error err;
	ck_assert_int_eq(st_checkpoint_read(c, i, 0, raw, t->n_bytes, &err), ST_OK);
	st_dtype_widen(t->dtype, raw, x, t->n_elements);
	st_stats a = {0};
	for (uint64_t e = 0; e < t->n_elements; e += chunk) {
		size_t n = t->n_elements - e < chunk ? t->n_elements - e : chunk;
		st_stats part = {0};
		st_stats_add(&part, x + e, n);
		st_stats_merge(&a, &part);
	}
	free(raw);
	free(x);
	return a;
}

START_TEST(numpy_figures)
{
	st_checkpoint *c;
	st_error err;
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "stats.safetensors", 0, &err),
	                 ST_OK);
	FILE *f = fopen(DIR "stats.expected", "r");
	ck_assert(f != NULL);
	char line[512];
	int checked = 0;
	static const size_t chunks[] = {1, 7, 100, (size_t)1 << 20};
	while (fgets(line, sizeof line, f)) {
		struct want w;
		ck_assert_msg(parse_line(line, &w), "bad line: %s", line);
		long i = st_checkpoint_find(c, w.name, strlen(w.name));
		ck_assert_int_ge(i, 0);
		if (w.skip) {
			const st_tensor *t = st_checkpoint_tensor(c, (size_t)i, NULL);
			ck_assert(!st_dtype_has_values(t->dtype));
			continue;
		}
		for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
			st_stats a = tensor_stats(c, (size_t)i, chunks[k]);
			ck_assert_uint_eq(a.nan, w.nan);
			ck_assert_uint_eq(a.inf, w.inf);
			ck_assert_uint_eq(a.zeros, w.zeros);
			if (w.empty) {
				ck_assert_uint_eq(a.n, 0);
				continue;
			}
			ck_assert_msg(a.min == w.min && a.max == w.max, "%s: min/max",
			              w.name);
			/* Relative to the spread, as the CLI test has it. */
			double scale = fabs(w.mean) + w.std + 1e-300;
			ck_assert_msg(fabs(st_stats_mean(&a) - w.mean) <= 1e-10 * scale,
			              "%s: mean %.17g vs numpy %.17g", w.name,
			              st_stats_mean(&a), w.mean);
			ck_assert_msg(fabs(st_stats_std(&a) - w.std) <= 1e-10 * scale,
			              "%s: std %.17g vs numpy %.17g", w.name,
			              st_stats_std(&a), w.std);
		}
		checked++;
	}
	fclose(f);
	ck_assert_int_ge(checked, 10);
	st_checkpoint_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, empty_is_zero);
	tcase_add_test(tc, one_to_four);
	tcase_add_test(tc, nan_inf_and_zeros_counted_apart);
	tcase_add_test(tc, no_finite_value);
	tcase_add_test(tc, splits_do_not_change_the_answer);
	tcase_add_test(tc, numpy_figures);
	suite_add_tcase(s, tc);
	tc = tcase_create("limits");
	tcase_add_test(tc, far_from_zero_keeps_the_spread);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
