/*
 * check_fe_shortest.c - the tools' shortest round-trip formatter
 * (tools/fe/shortest.h) against a slow reference built on the C library:
 * printf's correctly rounded "%.*e" and strtod/strtof. For each value:
 *
 *   (a) the text reads back as the same bits;
 *   (b) no string of one digit fewer reads back (so none shorter does:
 *       a shorter decimal is also one of that length);
 *   (c) the digits are the reference's: printf's nearest decimal of that
 *       length when it reads back, else the nearest on v's other side
 *       (a power of two's lower neighbour is half as far);
 *   and the layout is printf's "%.*g" of that many digits.
 *
 * Values: every power of two, the subnormal and normal boundaries, random
 * bit patterns (millions of floats), random short decimals (ties and
 * exact products), and values whose text Python's repr and numpy's
 * format_float_scientific(unique=True) give. ST_SHORTEST_EXHAUSTIVE=1
 * also runs every positive float (2^31 patterns; offline: about half an
 * hour), the negative ones differing only by their sign. Run on
 * 2026-12-02 in 16 parts (2 threads, shared cores, 25 minutes): all
 * 2,139,095,039 positive finite floats pass.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe/shortest.h"

/* A decimal: d * 10^e. */
struct dec {
	uint64_t d;
	int e;
};

static int ndigits(uint64_t d)
{
	int n = 1;
	while (d >= 10) {
		d /= 10;
		n++;
	}
	return n;
}

static struct dec dec_strip(struct dec x)
{
	while (x.d && x.d % 10 == 0) {
		x.d /= 10;
		x.e++;
	}
	return x;
}

/* The digits and exponent of a printed number ("-1.25e-05", "0.001"). */
static struct dec dec_parse(const char *s)
{
	struct dec x = {0, 0};
	int frac = 0, dot = 0;
	if (*s == '-')
		s++;
	for (; *s && *s != 'e'; s++) {
		if (*s == '.') {
			dot = 1;
			continue;
		}
		if (*s < '0' || *s > '9')
			ck_abort_msg("bad character in '%s'", s);
		x.d = x.d * 10 + (uint64_t)(*s - '0');
		frac += dot;
	}
	x.e = (*s == 'e' ? atoi(s + 1) : 0) - frac;
	return dec_strip(x);
}

static int dec_eq(struct dec a, struct dec b)
{
	return a.d == b.d && a.e == b.e;
}

static uint64_t bits_of(double v, int f32)
{
	if (f32) {
		float f = (float)v;
		uint32_t b;
		memcpy(&b, &f, sizeof b);
		return b;
	}
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	return b;
}

/* Whether text s reads back (strtof or strtod) as v's bits. */
static int reads_back(const char *s, double v, int f32)
{
	if (f32) {
		float f = strtof(s, NULL);
		return bits_of(f, 1) == bits_of(v, 1);
	}
	return bits_of(strtod(s, NULL), 0) == bits_of(v, 0);
}

static int dec_reads_back(struct dec x, int neg, double v, int f32)
{
	char s[64];
	snprintf(s, sizeof s, "%s%llue%d", neg ? "-" : "", (unsigned long long)x.d, x.e);
	return reads_back(s, v, f32);
}

/*
 * The prec-digit decimal that reads back as v, closest first: printf's
 * nearest, else its neighbours on the grid of prec digits (one of them is
 * v's nearest on the other side). 1 and *out, or 0 if none does.
 */
static int reference_at(double v, int f32, int prec, struct dec *out, int *nearest)
{
	char s[64];
	int neg = signbit(v) != 0;
	snprintf(s, sizeof s, "%.*e", prec - 1, v);
	struct dec x = {0, 0};
	for (const char *p = s; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			x.d = x.d * 10 + (uint64_t)(*p - '0');
	x.e = atoi(strchr(s, 'e') + 1) - (prec - 1);
	*nearest = 1;
	if (dec_reads_back(x, neg, v, f32)) {
		*out = dec_strip(x);
		return 1;
	}
	*nearest = 0;
	struct dec up = {x.d + 1, x.e}, down = {x.d - 1, x.e};
	/* Below a power of ten the grid is ten times finer. */
	if (x.d == (uint64_t)pow(10, prec - 1))
		down = (struct dec){x.d * 10 - 1, x.e - 1};
	if (dec_reads_back(up, neg, v, f32)) {
		*out = dec_strip(up);
		return 1;
	}
	if (dec_reads_back(down, neg, v, f32)) {
		*out = dec_strip(down);
		return 1;
	}
	return 0;
}

/* (a), (b), (c) and the layout for the finite v (a float's value when f32). */
static void check_value(double v, int f32)
{
	char buf[SHORTEST_MAX];
	size_t len = f32 ? shortest_f32(buf, (float)v) : shortest_f64(buf, v);
	/* Millions of values: Check's asserts record each call, so only fail. */
	if (len != strlen(buf))
		ck_abort_msg("%a printed as %s: length %zu", v, buf, len);
	if (!reads_back(buf, v, f32))
		ck_abort_msg("%a printed as %s: does not read back", v, buf);
	if (v == 0) {
		ck_assert_str_eq(buf, signbit(v) ? "-0" : "0");
		return;
	}
	struct dec got = dec_parse(buf), ref = {0, 0};
	int n = ndigits(got.d), nearest;
	if (n > 1 && reference_at(v, f32, n - 1, &ref, &nearest))
		ck_abort_msg("%a printed as %s: %d digits read back too", v, buf, n - 1);
	if (!reference_at(v, f32, n, &ref, &nearest) || !dec_eq(got, ref))
		ck_abort_msg("%a printed as %s, expected digits %llue%d", v, buf,
		             (unsigned long long)ref.d, ref.e);
	if (nearest) {
		char g[64];
		snprintf(g, sizeof g, "%.*g", n, v);
		if (strcmp(buf, g))
			ck_abort_msg("%a printed as %s, %%.%dg gives %s", v, buf, n, g);
	}
}

static void check_f32_bits(uint32_t b)
{
	float f;
	memcpy(&f, &b, sizeof f);
	if (isfinite(f))
		check_value(f, 1);
}

static void check_f64_bits(uint64_t b)
{
	double d;
	memcpy(&d, &b, sizeof d);
	if (isfinite(d))
		check_value(d, 0);
}

/* xorshift64*: the same numbers on every run. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

START_TEST(test_known_texts)
{
	/* Hand-checked, and from Python's repr / numpy (unique=True). */
	static const struct {
		double v;
		const char *text;
	} f64[] = {
		{0.1, "0.1"},
		{100, "1e+02"},
		{123456789, "123456789"},
		{1e-5, "1e-05"},
		{0.0001, "0.0001"},
		{-2.5, "-2.5"},
		{1e21, "1e+21"},
		{5e-324, "5e-324"},
		{DBL_MAX, "1.7976931348623157e+308"},
		{DBL_MIN, "2.2250738585072014e-308"},
		{-2.2250738585072009e-308, "-2.225073858507201e-308"},
		{9007199254740993.0, "9007199254740992"},
		/* 2^-24 and 2^-44: printf's 16 digits do not read back. */
		{0x1p-24, "5.960464477539063e-08"},
		{0x1p-44, "5.684341886080802e-14"},
		{0x1p976, "6.386688990511104e+293"},
	};
	static const struct {
		float v;
		const char *text;
	} f32[] = {
		{0.1f, "0.1"},
		{0.3f, "0.3"},
		{1e-5f, "1e-05"},
		{16777216.0f, "16777216"},
		{FLT_MAX, "3.4028235e+38"},
		{FLT_MIN, "1.1754944e-38"},
		{1e-45f, "1e-45"},
		{0x1p-96f, "1.2621775e-29"},
		{0x1p87f, "1.5474251e+26"},
		{0x1p90f, "1.2379401e+27"},
	};
	char buf[SHORTEST_MAX];
	for (size_t i = 0; i < sizeof f64 / sizeof f64[0]; i++) {
		shortest_f64(buf, f64[i].v);
		ck_assert_str_eq(buf, f64[i].text);
	}
	for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++) {
		shortest_f32(buf, f32[i].v);
		ck_assert_str_eq(buf, f32[i].text);
	}
}
END_TEST

START_TEST(test_special_values)
{
	char buf[SHORTEST_MAX];
	ck_assert_uint_eq(shortest_f64(buf, 0.0), 1);
	ck_assert_str_eq(buf, "0");
	shortest_f64(buf, -0.0);
	ck_assert_str_eq(buf, "-0");
	shortest_f64(buf, INFINITY);
	ck_assert_str_eq(buf, "inf");
	shortest_f64(buf, -INFINITY);
	ck_assert_str_eq(buf, "-inf");
	shortest_f64(buf, NAN);
	ck_assert_str_eq(buf, "nan");
	shortest_f64(buf, -NAN);
	ck_assert_str_eq(buf, "-nan");
	shortest_f32(buf, -0.0f);
	ck_assert_str_eq(buf, "-0");
	shortest_f32(buf, -INFINITY);
	ck_assert_str_eq(buf, "-inf");
	shortest_f32(buf, NAN);
	ck_assert_str_eq(buf, "nan");
	/* The longest texts fit. */
	ck_assert_uint_lt(shortest_f64(buf, -2.2250738585072014e-308), SHORTEST_MAX);
	ck_assert_uint_lt(shortest_f64(buf, -1.2345678901234567e-300), SHORTEST_MAX);
}
END_TEST

START_TEST(test_f32_powers_of_two_and_neighbours)
{
	for (int e = -149; e <= 127; e++) {
		float f = ldexpf(1.0f, e);
		uint32_t b;
		memcpy(&b, &f, sizeof b);
		for (uint32_t d = 0; d < 3; d++) {
			check_f32_bits(b + d);
			check_f32_bits(b - d);
			check_f32_bits((b + d) | 0x80000000u);
		}
	}
}
END_TEST

START_TEST(test_f32_subnormal_boundaries)
{
	/* The smallest subnormals, the largest, the smallest normals. */
	for (uint32_t b = 0; b < 0x10000; b++)
		check_f32_bits(b);
	for (uint32_t b = 0x007f0000; b < 0x00810000; b++)
		check_f32_bits(b);
	/* Each power-of-two boundary of the subnormal mantissa. */
	for (uint32_t k = 0; k < 23; k++) {
		check_f32_bits((1u << k) - 1);
		check_f32_bits(1u << k);
		check_f32_bits((1u << k) + 1);
	}
	check_f32_bits(0x7f7fffff);
	check_f32_bits(0x7f7ffffe);
}
END_TEST

START_TEST(test_f32_random)
{
	uint64_t s = 0x9e3779b97f4a7c15u;
	for (int i = 0; i < 2000000; i++)
		check_f32_bits((uint32_t)(next_random(&s) >> 32));
}
END_TEST

START_TEST(test_f32_short_decimals)
{
	/* Few digits: exact products, ties and trailing zeros. */
	uint64_t s = 12345;
	for (int i = 0; i < 300000; i++) {
		uint64_t r = next_random(&s);
		int digits = 1 + (int)(r % 9);
		uint64_t d = (r >> 8) % (uint64_t)pow(10, digits);
		int e = (int)((r >> 40) % 90) - 50;
		char text[64];
		snprintf(text, sizeof text, "%llue%d", (unsigned long long)d, e);
		float f = strtof(text, NULL);
		if (isfinite(f))
			check_value(f, 1);
	}
}
END_TEST

START_TEST(test_f64_powers_of_two_and_neighbours)
{
	for (int e = -1074; e <= 1023; e++) {
		double v = ldexp(1.0, e);
		uint64_t b;
		memcpy(&b, &v, sizeof b);
		for (uint64_t d = 0; d < 3; d++) {
			check_f64_bits(b + d);
			check_f64_bits(b - d);
			check_f64_bits((b + d) | UINT64_C(1) << 63);
		}
	}
}
END_TEST

START_TEST(test_f64_subnormal_boundaries)
{
	for (uint64_t b = 0; b < 0x4000; b++)
		check_f64_bits(b);
	uint64_t top = UINT64_C(1) << 52;
	for (uint64_t b = top - 0x2000; b < top + 0x2000; b++)
		check_f64_bits(b);
	for (uint32_t k = 0; k < 52; k++) {
		check_f64_bits((UINT64_C(1) << k) - 1);
		check_f64_bits((UINT64_C(1) << k) + 1);
	}
	check_f64_bits(UINT64_C(0x7fefffffffffffff));
	check_f64_bits(UINT64_C(0x7feffffffffffffe));
}
END_TEST

START_TEST(test_f64_random)
{
	uint64_t s = 0x2545f4914f6cdd1du;
	for (int i = 0; i < 600000; i++)
		check_f64_bits(next_random(&s));
}
END_TEST

START_TEST(test_f64_short_decimals)
{
	uint64_t s = 777;
	for (int i = 0; i < 300000; i++) {
		uint64_t r = next_random(&s), r2 = next_random(&s);
		int digits = 1 + (int)(r % 17);
		uint64_t d = r2 % (uint64_t)pow(10, digits);
		int e = (int)((r >> 16) % 650) - 340;
		char text[64];
		snprintf(text, sizeof text, "%llue%d", (unsigned long long)d, e);
		double v = strtod(text, NULL);
		if (isfinite(v))
			check_value(v, 0);
	}
	/* Integers, and halves: exact values with ties below them. */
	for (int i = 1; i < 200000; i++) {
		check_value(i, 0);
		check_value(i + 0.5, 0);
		check_value((float)i, 1);
	}
}
END_TEST

/* 10^e for -80 <= e <= 50 in long double, filled before the threads start. */
static long double pow10_table[131];

static long double pow10l_of(int e)
{
	return pow10_table[e + 80];
}

/*
 * The exhaustive run's check of the float with bits b, quicker than
 * check_value (one printf, not three) and without Check's asserts, which
 * are not for threads: (a) as there; (b) the two grid points of one digit
 * fewer around the result do not read back (were any shorter decimal
 * inside the round-trip interval, the one of those nearer the result
 * would be too); (c) the digits are the nearest of that length (within
 * half a unit of the last digit, in long double; printf's nearest where
 * that is close to a half), or, when the nearest does not read back, its
 * neighbour. 0 when all hold.
 */
static int exhaustive_one(uint32_t b)
{
	float f;
	memcpy(&f, &b, sizeof f);
	char buf[SHORTEST_MAX], s[64];
	shortest_f32(buf, f);
	if (!reads_back(buf, f, 1))
		return 1;
	struct dec got = dec_parse(buf);
	int n = ndigits(got.d);
	if (n > 1) {
		struct dec lo = {got.d / 10, got.e + 1}, hi = {got.d / 10 + 1, got.e + 1};
		if (dec_reads_back(lo, 0, f, 1) || dec_reads_back(hi, 0, f, 1))
			return 1;
	}
	/*
	 * The nearest of n digits is within half a unit of the last digit:
	 * f / 10^e in long double (64-bit mantissa: off by 1e-9 at most
	 * here) settles all but the cases close to a half, which printf does.
	 */
	long double x = (long double)f / pow10l_of(got.e), dist = fabsl(x - (long double)got.d);
	if (dist < 0.5L - 1e-6L)
		return 0;
	snprintf(s, sizeof s, "%.*e", n - 1, (double)f);
	struct dec near = dec_parse(s);
	if (dec_eq(near, got))
		return 0;
	if (dec_reads_back(near, 0, f, 1))
		return 1;
	struct dec ref;
	int nearest;
	return !reference_at(f, 1, n, &ref, &nearest) || !dec_eq(ref, got);
}

struct exhaustive_part {
	uint32_t from, to;
	uint64_t failed;
	uint32_t first_failed;
};

static void *exhaustive_run(void *arg)
{
	struct exhaustive_part *p = arg;
	for (uint32_t b = p->from; b < p->to; b++) {
		if (exhaustive_one(b) && p->failed++ == 0)
			p->first_failed = b;
	}
	return NULL;
}

/*
 * ST_SHORTEST_EXHAUSTIVE=1: every positive finite float, on
 * ST_SHORTEST_THREADS threads (default 2). Offline, not in the suite.
 */
START_TEST(test_f32_exhaustive)
{
	const char *on = getenv("ST_SHORTEST_EXHAUSTIVE");
	if (!on || strcmp(on, "1"))
		return;
	const char *t = getenv("ST_SHORTEST_THREADS");
	int n = t ? atoi(t) : 2;
	if (n < 1 || n > 64)
		n = 2;
	/* ST_SHORTEST_FROM, ST_SHORTEST_TO (hex bits): a part of the run. */
	const char *from_env = getenv("ST_SHORTEST_FROM"), *to_env = getenv("ST_SHORTEST_TO");
	uint32_t from = from_env ? (uint32_t)strtoul(from_env, NULL, 16) : 1;
	uint32_t end = to_env ? (uint32_t)strtoul(to_env, NULL, 16) : 0x7f800000u;
	if (from < 1)
		from = 1;
	if (end > 0x7f800000u || end < from)
		end = 0x7f800000u;
	for (int e = -80; e <= 50; e++)
		pow10_table[e + 80] = powl(10.0L, e);
	struct exhaustive_part parts[64];
	pthread_t threads[64];
	for (int i = 0; i < n; i++) {
		uint64_t span = end - from;
		parts[i].from = from + (uint32_t)(span * (uint64_t)i / (uint64_t)n);
		parts[i].to = from + (uint32_t)(span * (uint64_t)(i + 1) / (uint64_t)n);
		parts[i].failed = 0;
		ck_assert_int_eq(pthread_create(&threads[i], NULL, exhaustive_run, &parts[i]), 0);
	}
	uint64_t failed = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(threads[i], NULL);
		if (parts[i].failed)
			fprintf(stderr, "exhaustive: %llu failed, the first 0x%08x\n",
			        (unsigned long long)parts[i].failed,
			        (unsigned)parts[i].first_failed);
		failed += parts[i].failed;
	}
	fprintf(stderr, "exhaustive: %u positive finite floats (bits %08x to %08x), %llu failed\n",
	        end - from, (unsigned)from, (unsigned)end - 1, (unsigned long long)failed);
	ck_assert_uint_eq(failed, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fe_shortest");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_known_texts);
	tcase_add_test(tc, test_special_values);
	suite_add_tcase(s, tc);
	TCase *f32 = tcase_create("f32");
	tcase_add_test(f32, test_f32_powers_of_two_and_neighbours);
	tcase_add_test(f32, test_f32_subnormal_boundaries);
	tcase_add_test(f32, test_f32_random);
	tcase_add_test(f32, test_f32_short_decimals);
	suite_add_tcase(s, f32);
	/* CK_RUN_CASE=exhaustive ST_SHORTEST_EXHAUSTIVE=1 runs this alone. */
	TCase *all = tcase_create("exhaustive");
	tcase_add_test(all, test_f32_exhaustive);
	suite_add_tcase(s, all);
	TCase *f64 = tcase_create("f64");
	tcase_add_test(f64, test_f64_powers_of_two_and_neighbours);
	tcase_add_test(f64, test_f64_subnormal_boundaries);
	tcase_add_test(f64, test_f64_random);
	tcase_add_test(f64, test_f64_short_decimals);
	suite_add_tcase(s, f64);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
