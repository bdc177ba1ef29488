/*
 * check_stats_isa.c - the AVX2 passes of st_stats_add (libst/stats_avx2.c)
 * against the scalar reference (libst/stats.c) bit for bit, over random
 * chunks of every length up to 70 and a few long ones, at every alignment,
 * with NaN, +-Inf, +-0, subnormals and values near DBL_MAX mixed in; and
 * st_stats_add's zero rule (of equal zeros, min -0 and max +0), which
 * makes its figures independent of the order within a chunk. The scalar
 * path itself is checked against numpy in check_stats.c.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "st/stats.h"
#include "stats_internal.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double uniform(void) /* [-1, 1) */
{
	return (double)(next_u64() >> 11) * 0x1p-52 - 1.0;
}

/* A value: mostly ordinary, one in four from the edge cases. */
static double value(int spread)
{
	static const double edges[] = {NAN,   -NAN,        INFINITY,     -INFINITY, 0.0,
	                               -0.0,  DBL_MIN / 4, -DBL_MIN / 3, DBL_MAX,   -DBL_MAX,
	                               1e300, -1e154,      1.0,          -1.0};
	if (next_u64() % 4 == 0)
		return edges[next_u64() % (sizeof edges / sizeof edges[0])];
	return uniform() * (spread ? 1e6 : 1.0) + (spread ? 1e12 : 0.0);
}

static int same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

static void check_one(const double *x, size_t n, double shift)
{
	st__stats_acc s = {.min = INFINITY, .max = -INFINITY};
	st__stats_acc v = s;
	ck_assert_int_eq(st__stats_pass1_isa(ST__ISA_SCALAR, x, n, shift, &s), ST_OK);
	ck_assert_int_eq(st__stats_pass1_isa(ST__ISA_AVX2, x, n, shift, &v), ST_OK);
	for (int k = 0; k < ST__STATS_LANES; k++)
		ck_assert_msg(same_bits(s.sum[k], v.sum[k]), "n %zu lane %d: sum %.17g vs %.17g", n,
		              k, s.sum[k], v.sum[k]);
	/* Equal values; which zero is st_stats_add's (neg_zeros). */
	ck_assert_msg(s.min == v.min && s.max == v.max, "n %zu: min/max", n);
	ck_assert_uint_eq(s.n, v.n);
	ck_assert_uint_eq(s.nan, v.nan);
	ck_assert_uint_eq(s.inf, v.inf);
	ck_assert_uint_eq(s.zeros, v.zeros);
	ck_assert_uint_eq(s.neg_zeros, v.neg_zeros);
	double mean = s.n ? (s.sum[0] + s.sum[1] + s.sum[2] + s.sum[3]) / (double)s.n : 0;
	st__stats_dev ds = {{0}, {0}}, dv = {{0}, {0}};
	ck_assert_int_eq(st__stats_pass2_isa(ST__ISA_SCALAR, x, n, shift, mean, &ds), ST_OK);
	ck_assert_int_eq(st__stats_pass2_isa(ST__ISA_AVX2, x, n, shift, mean, &dv), ST_OK);
	for (int k = 0; k < ST__STATS_LANES; k++)
		ck_assert_msg(same_bits(ds.dsum[k], dv.dsum[k]) && same_bits(ds.m2[k], dv.m2[k]),
		              "n %zu lane %d: deviations", n, k);
}

START_TEST(avx2_passes_match_scalar)
{
	if (st__stats_pass1_isa(ST__ISA_AVX2, NULL, 0, 0, &(st__stats_acc){0}) != ST_OK)
		return; /* no AVX2 here: nothing to compare */
	enum { MAX = 16384 + 8 };
	double *buf = malloc(MAX * sizeof *buf);
	ck_assert_ptr_nonnull(buf);
	static const size_t long_n[] = {255, 256, 1000, 4099, 16384};
	for (int spread = 0; spread < 2; spread++)
		for (size_t off = 0; off < 4; off++) {
			for (size_t n = 0; n <= 70 + 5; n++) {
				size_t len = n <= 70 ? n : long_n[n - 71];
				for (size_t i = 0; i < len + off; i++)
					buf[i] = value(spread);
				check_one(buf + off, len, spread ? 1e12 : buf[off]);
			}
		}
	/* All ordinary values: no lane masked. */
	for (size_t i = 0; i < MAX; i++)
		buf[i] = uniform();
	check_one(buf + 1, MAX - 1, 0.5);
	free(buf);
}
END_TEST

START_TEST(zero_signs_do_not_depend_on_order)
{
	const double both[2][6] = {{0.0, -0.0, 0.0, -0.0, 0.0, -0.0},
	                           {-0.0, 0.0, -0.0, 0.0, -0.0, 0.0}};
	for (int o = 0; o < 2; o++)
		for (size_t n = 2; n <= 6; n++) {
			st_stats a = {0};
			st_stats_add(&a, both[o], n);
			ck_assert(a.min == 0 && signbit(a.min));
			ck_assert(a.max == 0 && !signbit(a.max));
			ck_assert_uint_eq(a.zeros, n);
		}
	const double pos[5] = {0.0, 0.0, 0.0, 0.0, 0.0}, neg[5] = {-0.0, -0.0, -0.0, -0.0, -0.0};
	st_stats a = {0}, b = {0};
	st_stats_add(&a, pos, 5);
	st_stats_add(&b, neg, 5);
	ck_assert(!signbit(a.min) && !signbit(a.max));
	ck_assert(signbit(b.min) && signbit(b.max));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stats_isa");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, avx2_passes_match_scalar);
	tcase_add_test(tc, zero_signs_do_not_depend_on_order);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
