/*
 * check_compare.c - the comparison kernels (st/compare.h, libst/compare.c):
 * torch.testing's default tolerances, the NaN, Inf and signed-zero rules,
 * the rounded-equal check on hand-picked BF16 ties, bit-level comparison
 * of sub-byte dtypes, and every tensor pair of the stdiff fixtures
 * against the figures numpy and torch computed for them
 * (testdata/stdiff/gen_fixtures.py, the files in expected/), whole and in chunks
 * of seven groups merged in order.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#define DIR ST_TESTDATA "/stdiff/"

static void *scratch;

/*
 * st_compare_chunk over n groups of a and b, its block sums added in order
 * into *sum; returns the stats.
 */
static st_compare_stats chunk(const st_compare_spec *spec, const void *a,
                              const void *b, uint64_t n_groups, uint64_t first,
                              uint64_t n_elems, double *sum)
{
	st_compare_stats s;
	size_t nb = (size_t)((n_elems + ST_COMPARE_BLOCK - 1) / ST_COMPARE_BLOCK);
	double *sums = calloc(nb ? nb : 1, sizeof *sums);
	st_compare_stats_init(&s);
	st_compare_chunk(spec, a, b, n_groups, first, scratch, &s, sums);
	for (size_t j = 0; j < nb; j++)
		*sum += sums[j];
	free(sums);
	return s;
}

/* Compare two byte arrays of n groups whole; returns the stats, *mean. */
static st_compare_stats run(const st_compare_spec *spec, const void *a, const void *b,
                            uint64_t n_groups, double *mean)
{
	double sum = 0;
	unsigned gb, ge;
	st_dtype_group(spec->a, &gb, &ge);
	st_compare_stats s = chunk(spec, a, b, n_groups, 0, n_groups * ge, &sum);
	if (mean)
		*mean = s.n_num ? sum / (double)s.n_num : 0;
	return s;
}

/* Which dtypes are compared as floats, exactly as integers, or by bits. */
START_TEST(kind_groups_dtypes_by_how_they_compare)
{
	/* Every dtype, by the list in st/compare.h. */
	static const struct {
		st_dtype d;
		enum st_compare_kind k;
	} want[] = {
		{ST_DTYPE_F64, ST_COMPARE_FLOAT}, {ST_DTYPE_F32, ST_COMPARE_FLOAT},
		{ST_DTYPE_F16, ST_COMPARE_FLOAT}, {ST_DTYPE_BF16, ST_COMPARE_FLOAT},
		{ST_DTYPE_BOOL, ST_COMPARE_INT}, {ST_DTYPE_U8, ST_COMPARE_INT},
		{ST_DTYPE_I8, ST_COMPARE_INT}, {ST_DTYPE_U16, ST_COMPARE_INT},
		{ST_DTYPE_I16, ST_COMPARE_INT}, {ST_DTYPE_U32, ST_COMPARE_INT},
		{ST_DTYPE_I32, ST_COMPARE_INT}, {ST_DTYPE_U64, ST_COMPARE_INT},
		{ST_DTYPE_I64, ST_COMPARE_INT},
		{ST_DTYPE_F8_E5M2, ST_COMPARE_RAW}, {ST_DTYPE_F8_E4M3, ST_COMPARE_RAW},
		{ST_DTYPE_F8_E8M0, ST_COMPARE_RAW},
		{ST_DTYPE_F8_E4M3FNUZ, ST_COMPARE_RAW},
		{ST_DTYPE_F8_E5M2FNUZ, ST_COMPARE_RAW},
		{ST_DTYPE_F6_E2M3, ST_COMPARE_RAW}, {ST_DTYPE_F6_E3M2, ST_COMPARE_RAW},
		{ST_DTYPE_F4, ST_COMPARE_RAW}, {ST_DTYPE_C64, ST_COMPARE_RAW},
	};
	ck_assert_int_eq(sizeof want / sizeof want[0], ST_DTYPE_COUNT);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		ck_assert_msg(st_compare_kind(want[i].d) == want[i].k, "%s",
		              st_dtype_name(want[i].d));
}
END_TEST

START_TEST(default_tolerances_are_torch_testing)
{
	/* torch/testing/_comparison.py, _DTYPE_PRECISIONS. */
	static const struct {
		st_dtype d;
		double rtol, atol;
	} want[] = {
		{ST_DTYPE_F64, 1e-7, 1e-7},    {ST_DTYPE_F32, 1.3e-6, 1e-5},
		{ST_DTYPE_F16, 1e-3, 1e-5},    {ST_DTYPE_BF16, 1.6e-2, 1e-5},
		{ST_DTYPE_I64, 0, 0},          {ST_DTYPE_BOOL, 0, 0},
		{ST_DTYPE_F8_E4M3, 0, 0},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		double r, a;
		st_compare_default_tol(want[i].d, &r, &a);
		ck_assert(r == want[i].rtol && a == want[i].atol);
	}
	/* A pair takes the looser of its dtypes; exact or given ones win. */
	st_compare_spec s;
	st_compare_spec_init(&s, ST_DTYPE_F32, ST_DTYPE_BF16, false, NULL, NULL);
	ck_assert(s.rtol == 1.6e-2 && s.atol == 1e-5);
	ck_assert(s.check_rounded && s.a_is_wide);
	st_compare_spec_init(&s, ST_DTYPE_F32, ST_DTYPE_BF16, true, NULL, NULL);
	ck_assert(s.rtol == 0 && s.atol == 0);
	double r = 0.5;
	st_compare_spec_init(&s, ST_DTYPE_F32, ST_DTYPE_F32, false, &r, NULL);
	ck_assert(s.rtol == 0.5 && s.atol == 1e-5 && !s.check_rounded);
	/* F16 against BF16: same width, B is checked as A rounded. */
	st_compare_spec_init(&s, ST_DTYPE_F16, ST_DTYPE_BF16, false, NULL, NULL);
	ck_assert(s.check_rounded && s.a_is_wide);
	st_compare_spec_init(&s, ST_DTYPE_BF16, ST_DTYPE_F32, false, NULL, NULL);
	ck_assert(s.check_rounded && !s.a_is_wide);
}
END_TEST

START_TEST(tolerance_is_atol_plus_rtol_b)
{
	/* |a - b| <= atol + rtol * |b| with rtol 0.1, atol 0.01 and b = 1:
	 * 1.1 is inside (0.1 <= 0.11), 1.2 outside, and it is |b| that
	 * scales: a = 1, b = 1.1 differs by 0.1 <= 0.01 + 0.11. */
	const double a[] = {1.1, 1.2, 1.0, 0.0};
	const double b[] = {1.0, 1.0, 1.1, 0.005};
	double r = 0.1, at = 0.01, mean;
	st_compare_spec s;
	st_compare_spec_init(&s, ST_DTYPE_F64, ST_DTYPE_F64, false, &r, &at);
	st_compare_stats st = run(&s, a, b, 4, &mean);
	ck_assert_uint_eq(st.mismatched, 1);
	ck_assert_uint_eq(st.worst_index, 1);
	ck_assert(!st.identical);
	ck_assert(fabs(st.max_abs - 0.2) < 1e-15);
	/* b = 0.005: rel 1; b = 1.0, a = 1.2: rel 0.2. */
	ck_assert(fabs(st.max_rel - 1.0) < 1e-15);
	ck_assert(fabs(mean - (0.1 + 0.2 + 0.1 + 0.005) / 4) < 1e-15);
	/* Not symmetric: with rtol 1 and atol 0, a = 0 is within b = 1, but
	 * a = 1 is not within b = 0. */
	const double zero[] = {0}, one[] = {1};
	r = 1;
	at = 0;
	st_compare_spec_init(&s, ST_DTYPE_F64, ST_DTYPE_F64, false, &r, &at);
	ck_assert_uint_eq(run(&s, zero, one, 1, NULL).mismatched, 0);
	ck_assert_uint_eq(run(&s, one, zero, 1, NULL).mismatched, 1);
}
END_TEST

START_TEST(nan_inf_and_signed_zero)
{
	const float a[] = {NAN, NAN, 1, INFINITY, INFINITY, 0.0f, 2};
	const float b[] = {NAN, 1, NAN, INFINITY, 1e30f, -0.0f, 2};
	st_compare_spec s;
	st_compare_spec_init(&s, ST_DTYPE_F32, ST_DTYPE_F32, false, NULL, NULL);
	st_compare_stats st = run(&s, a, b, 7, NULL);
	/* NaN in both is equal; NaN on one side and Inf vs a number are not;
	 * Inf == Inf and -0 == +0 are equal values. */
	ck_assert_uint_eq(st.nan_equal, 1);
	ck_assert_uint_eq(st.nan_mismatch, 2);
	ck_assert_uint_eq(st.mismatched, 3);
	ck_assert_int_eq(st.worst_rank, 2);
	ck_assert_uint_eq(st.worst_index, 1); /* the first NaN mismatch */
	ck_assert(isinf(st.max_abs));
	/* --exact: -0 against +0 differs in its bits. */
	st_compare_spec_init(&s, ST_DTYPE_F32, ST_DTYPE_F32, true, NULL, NULL);
	st = run(&s, a, b, 7, NULL);
	ck_assert_uint_eq(st.mismatched, 4);
}
END_TEST

/*
 * st_compare_values, the one rule for a pair (a against its reference b),
 * on the cases where the inequality |a - b| <= atol + rtol * |b| alone is
 * not the answer. numpy.isclose(a, b, rtol, atol, equal_nan=True) and
 * torch.isclose(..., equal_nan=True) give the same close/not close for
 * every row.
 */
START_TEST(values_follow_isclose_on_nan_and_inf)
{
	static const struct {
		double a, b, rtol, atol;
		st_compare_verdict want;
		double abs_diff, rel_diff;
	} cases[] = {
		/* NaN equals NaN only. */
		{NAN, NAN, 0.5, 0.5, ST_COMPARE_NAN_EQUAL, 0, 0},
		{NAN, 1, 0.5, 0.5, ST_COMPARE_NAN_MISMATCH, 0, 0},
		{1, NAN, 0.5, 0.5, ST_COMPARE_NAN_MISMATCH, 0, 0},
		{NAN, INFINITY, 0.5, 0.5, ST_COMPARE_NAN_MISMATCH, 0, 0},
		/* An infinity equals the same infinity, and nothing else. */
		{INFINITY, INFINITY, 0, 0, ST_COMPARE_EQUAL, 0, 0},
		{-INFINITY, -INFINITY, 0, 0, ST_COMPARE_EQUAL, 0, 0},
		{INFINITY, -INFINITY, 1, 1, ST_COMPARE_FAR, INFINITY, INFINITY},
		/* A finite value against an infinite reference: atol + rtol*|b|
		 * is Inf, yet it is not close; the relative difference is +Inf
		 * (libst's pick over Inf / Inf = NaN). */
		{1, INFINITY, 0.5, 0, ST_COMPARE_FAR, INFINITY, INFINITY},
		{-1e300, -INFINITY, 1e6, 1e6, ST_COMPARE_FAR, INFINITY, INFINITY},
		/* An infinite value against a finite reference: rel is Inf / |b|. */
		{INFINITY, 1, 1e6, 1e6, ST_COMPARE_FAR, INFINITY, INFINITY},
		{-INFINITY, 0, 1e6, 1e6, ST_COMPARE_FAR, INFINITY, 0},
		/* Signed zeros are equal values; b == 0 has no relative
		 * difference and only atol decides. */
		{0.0, -0.0, 0, 0, ST_COMPARE_EQUAL, 0, 0},
		{1, 0, 1, 0, ST_COMPARE_FAR, 1, 0},
		{0.5, 0, 0, 1, ST_COMPARE_CLOSE, 0.5, 0},
		/* Finite values: the inequality, scaled by |b|. */
		{0, 1, 1, 0, ST_COMPARE_CLOSE, 1, 1},
		{3, 2, 0.25, 0.5, ST_COMPARE_CLOSE, 1, 0.5},
		{3, 2, 0.25, 0.25, ST_COMPARE_FAR, 1, 0.5},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		double d = 42, r = 42;
		st_compare_verdict v = st_compare_values(cases[i].a, cases[i].b,
		                                         cases[i].rtol,
		                                         cases[i].atol, &d, &r);
		ck_assert_msg(v == cases[i].want, "case %zu: verdict %d, expected %d",
		              i, (int)v, (int)cases[i].want);
		ck_assert_msg(d == cases[i].abs_diff && r == cases[i].rel_diff,
		              "case %zu: abs %g rel %g, expected %g %g", i, d, r,
		              cases[i].abs_diff, cases[i].rel_diff);
	}
	/* Either output may be NULL. */
	ck_assert_int_eq(st_compare_values(1, INFINITY, 1, 1, NULL, NULL),
	                 ST_COMPARE_FAR);
}
END_TEST

/*
 * The same rule inside a chunk: with tolerances loose enough that the
 * inequality alone would accept everything, finite values against an
 * infinite reference and opposite infinities are all mismatches, and
 * max rel is +Inf, not NaN.
 */
START_TEST(chunk_infinite_reference_is_mismatch_with_infinite_rel)
{
	const double a[] = {1, -1e300, INFINITY, INFINITY, 2};
	const double b[] = {INFINITY, -INFINITY, -INFINITY, INFINITY, 2};
	double r = 1e6, at = 1e6, mean;
	st_compare_spec s;
	st_compare_spec_init(&s, ST_DTYPE_F64, ST_DTYPE_F64, false, &r, &at);
	st_compare_stats st = run(&s, a, b, 5, &mean);
	ck_assert_uint_eq(st.mismatched, 3);
	ck_assert_uint_eq(st.nan_mismatch, 0);
	ck_assert_uint_eq(st.n_num, 5);
	ck_assert(isinf(st.max_abs) && st.max_abs > 0);
	ck_assert(isinf(st.max_rel) && st.max_rel > 0);
	ck_assert_uint_eq(st.worst_index, 0); /* Inf ties: the lowest index */
	ck_assert(isinf(mean));
}
END_TEST

START_TEST(identical_bytes_count_nans_only)
{
	const float a[] = {1, NAN, 3, NAN};
	st_compare_spec s;
	st_compare_spec_init(&s, ST_DTYPE_F32, ST_DTYPE_F32, true, NULL, NULL);
	st_compare_stats st = run(&s, a, a, 4, NULL);
	ck_assert(st.identical);
	ck_assert_uint_eq(st.nan_equal, 2);
	ck_assert_uint_eq(st.n_num, 2);
	ck_assert_uint_eq(st.mismatched, 0);
	ck_assert_int_eq(st.worst_rank, -1);
}
END_TEST

START_TEST(rounded_equal_ties_to_even)
{
	/* F32 1 + 2^-8 lies halfway between BF16 1.0 (0x3f80) and the next
	 * value 1 + 2^-7 (0x3f81): round to nearest even gives 0x3f80, so
	 * B = 0x3f80 is A rounded and 0x3f81 (what truncating up, or rounding
	 * half away from zero, would give) is not. */
	const float a[] = {1.0f + 0x1p-8f, 3.0f};
	const uint16_t even[] = {0x3f80, 0x4040}, away[] = {0x3f81, 0x4040};
	st_compare_spec s;
	st_compare_spec_init(&s, ST_DTYPE_F32, ST_DTYPE_BF16, false, NULL, NULL);
	st_compare_stats st = run(&s, a, even, 2, NULL);
	ck_assert(st.rounded);
	ck_assert(!st.identical);
	ck_assert_uint_eq(st.mismatched, 0); /* 2^-8 <= 1e-5 + 1.6e-2 */
	st = run(&s, a, away, 2, NULL);
	ck_assert(!st.rounded);
	/* A NaN on both sides counts as rounded whatever its payload. */
	const float na[] = {NAN};
	const uint16_t nb[] = {0x7fc1};
	st = run(&s, na, nb, 1, NULL);
	ck_assert(st.rounded);
	ck_assert_uint_eq(st.nan_equal, 1);
}
END_TEST

START_TEST(sub_byte_dtypes_by_element_bits)
{
	/* F4: two elements a byte, element 0 in the low nibble. */
	const uint8_t a[] = {0x12, 0x34}, b[] = {0x13, 0x34}, c[] = {0x32, 0x35};
	st_compare_spec s;
	st_compare_spec_init(&s, ST_DTYPE_F4, ST_DTYPE_F4, false, NULL, NULL);
	st_compare_stats st = run(&s, a, b, 2, NULL);
	ck_assert_uint_eq(st.mismatched, 1);
	ck_assert_uint_eq(st.worst_index, 0);
	st = run(&s, a, c, 2, NULL);
	ck_assert_uint_eq(st.mismatched, 2);
	ck_assert_uint_eq(st.worst_index, 1); /* ties: the lowest index */
	/* F6: four elements in three bytes; bits 18..23 are element 3. */
	const uint8_t d[] = {0, 0, 0}, e[] = {0, 0, 0x80};
	st_compare_spec_init(&s, ST_DTYPE_F6_E2M3, ST_DTYPE_F6_E2M3, false, NULL, NULL);
	st = run(&s, d, e, 1, NULL);
	ck_assert_uint_eq(st.mismatched, 1);
	ck_assert_uint_eq(st.worst_index, 3);
}
END_TEST

START_TEST(integers_exactly)
{
	/* 2^62 against -2^62 differs by 2^63, beyond every 64-bit type. */
	const int64_t a[] = {(int64_t)1 << 62, 5, 7};
	const int64_t b[] = {-((int64_t)1 << 62), 5, 8};
	st_compare_spec s;
	st_compare_spec_init(&s, ST_DTYPE_I64, ST_DTYPE_I64, false, NULL, NULL);
	st_compare_stats st = run(&s, a, b, 3, NULL);
	ck_assert(st.max_abs == 0x1p63);
	ck_assert_uint_eq(st.mismatched, 2);
	ck_assert_uint_eq(st.worst_index, 0);
}
END_TEST

/* ---- the stdiff fixtures against numpy --------------------------------- */

struct fixture {
	const char *expected, *a, *b;
	bool exact;
	double rtol, atol; /* < 0: default */
};

static const struct fixture fixtures[] = {
	{"a_b", "a", "b", false, -1, -1},
	{"a_b_tol", "a", "b", false, 1e-4, 1e-4},
	{"a_b_exact", "a", "b", true, -1, -1},
	{"nan", "nan_a", "nan_b", false, -1, -1},
	{"nan_exact", "nan_a", "nan_b", true, -1, -1},
	{"ref_f32_bf16", "ref_f32", "ref_bf16", false, -1, -1},
	{"ref_f32_bf16_trunc", "ref_f32", "ref_bf16_trunc", false, -1, -1},
	{"ref_f32_f16", "ref_f32", "ref_f16", false, -1, -1},
	{"ref_f64_f32", "ref_f64", "ref_f32", false, -1, -1},
	{"ref_bf16_f32", "ref_bf16", "ref_f32", false, -1, -1},
	{"ref_f16_bf16", "ref_f16", "ref_bf16", false, -1, -1},
};

static st_checkpoint *open_fixture(const char *stem)
{
	char path[512];
	snprintf(path, sizeof path, DIR "%s.safetensors", stem);
	st_checkpoint *c;
	st_error err;
	ck_assert_msg(st_checkpoint_open(&c, path, 0, &err) == ST_OK, "%s", path);
	return c;
}

static unsigned char *read_all(st_checkpoint *c, size_t i)
{
	const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
	unsigned char *buf = malloc(t->n_bytes ? t->n_bytes : 1);
	st_error err;
	ck_assert_int_eq(st_checkpoint_read(c, i, 0, buf, t->n_bytes, &err), ST_OK);
	return buf;
}

/* A difference figure: null without statistics or, as numpy's are
 * printed, when not finite. */
static void figure(char *out, size_t size, bool raw, double v)
{
	if (raw || !isfinite(v))
		snprintf(out, size, "null");
	else
		snprintf(out, size, "%.17g", v);
}

/* The figure the kernel gives for field f, as gen_fixtures.py prints it. */
static void got_field(const char *f, const st_compare_spec *spec,
                      const st_compare_stats *s, double mean, uint64_t n,
                      char *out, size_t size)
{
	bool raw = st_compare_kind(spec->a) == ST_COMPARE_RAW;
	if (strcmp(f, "elements") == 0)
		snprintf(out, size, "%llu", (unsigned long long)n);
	else if (strcmp(f, "identical") == 0)
		snprintf(out, size, "%s",
		         s->identical && spec->a == spec->b ? "true" : "false");
	else if (strcmp(f, "max_abs_diff") == 0)
		figure(out, size, raw, s->max_abs);
	else if (strcmp(f, "max_rel_diff") == 0)
		figure(out, size, raw, s->max_rel);
	else if (strcmp(f, "mean_abs_diff") == 0)
		figure(out, size, raw, mean);
	else if (strcmp(f, "mismatched") == 0)
		snprintf(out, size, "%llu", (unsigned long long)s->mismatched);
	else if (strcmp(f, "worst_index") == 0 && s->worst_rank < 0)
		snprintf(out, size, "null");
	else if (strcmp(f, "worst_index") == 0)
		snprintf(out, size, "%llu", (unsigned long long)s->worst_index);
	else if (strcmp(f, "exactly_encoded") == 0)
		snprintf(out, size, "%s", !spec->check_rounded ? "null"
		                          : s->rounded ? "true" : "false");
	else if (strcmp(f, "nan_equal") == 0)
		snprintf(out, size, "%llu", (unsigned long long)s->nan_equal);
	else
		ck_abort_msg("unknown field %s", f);
}

/* Whether got matches numpy's want: numbers equal, the mean to 1e-12. */
static bool same_figure(const char *f, const char *got, const char *want)
{
	bool word = !strcmp(want, "null") || !strcmp(want, "true") ||
	            !strcmp(want, "false");
	if (word || !strcmp(got, "null"))
		return strcmp(got, want) == 0;
	double g = strtod(got, NULL), w = strtod(want, NULL);
	if (strcmp(f, "mean_abs_diff") == 0)
		return fabs(g - w) <= 1e-12 * fabs(w);
	return g == w;
}

static void check_fixture(const struct fixture *fx, uint64_t chunk_groups)
{
	st_checkpoint *ca = open_fixture(fx->a), *cb = open_fixture(fx->b);
	char path[512];
	snprintf(path, sizeof path, DIR "expected/%s.txt", fx->expected);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s", path);
	char line[512], name[256] = "", field[64], want[128], got[128];
	int lines = 0;
	st_compare_spec spec;
	st_compare_stats st;
	double mean = 0;
	uint64_t n = 0;
	while (fgets(line, sizeof line, f)) {
		ck_assert_int_eq(sscanf(line, "%255s %63s %127s", name, field, want), 3);
		if (strcmp(field, "elements") == 0) {
			/* A new tensor: compare it now, then check its fields. */
			long ia = st_checkpoint_find(ca, name, strlen(name));
			long ib = st_checkpoint_find(cb, name, strlen(name));
			ck_assert(ia >= 0 && ib >= 0);
			const st_tensor *ta = st_checkpoint_tensor(ca, (size_t)ia, NULL);
			const st_tensor *tb = st_checkpoint_tensor(cb, (size_t)ib, NULL);
			st_compare_spec_init(&spec, ta->dtype, tb->dtype, fx->exact,
			                     fx->rtol >= 0 ? &fx->rtol : NULL,
			                     fx->atol >= 0 ? &fx->atol : NULL);
			unsigned ga, gb, ea;
			st_dtype_group(ta->dtype, &ga, &ea);
			st_dtype_group(tb->dtype, &gb, &ea);
			unsigned char *a = read_all(ca, (size_t)ia);
			unsigned char *b = read_all(cb, (size_t)ib);
			uint64_t groups = ta->n_elements / ea;
			double sum = 0;
			st_compare_stats_init(&st);
			for (uint64_t g = 0; g < groups; g += chunk_groups) {
				uint64_t k = groups - g < chunk_groups ? groups - g : chunk_groups;
				st_compare_stats part = chunk(&spec, a + g * ga, b + g * gb, k,
				                              g * ea, k * ea, &sum);
				st_compare_stats_merge(&st, &part);
			}
			mean = st.n_num ? sum / (double)st.n_num : 0;
			n = ta->n_elements;
			free(a);
			free(b);
		}
		got_field(field, &spec, &st, mean, n, got, sizeof got);
		ck_assert_msg(same_figure(field, got, want), "%s: %s %s: got %s, numpy %s",
		              fx->expected, name, field, got, want);
		lines++;
	}
	fclose(f);
	ck_assert_int_gt(lines, 0);
	st_checkpoint_close(ca);
	st_checkpoint_close(cb);
}

START_TEST(fixtures_match_numpy)
{
	check_fixture(&fixtures[_i], UINT64_MAX);
}
END_TEST

START_TEST(fixtures_in_chunks_match_numpy)
{
	check_fixture(&fixtures[_i], 7);
}
END_TEST

static void setup(void)
{
	scratch = malloc(ST_COMPARE_SCRATCH_BYTES);
}

static void teardown(void)
{
	free(scratch);
}

int main(void)
{
	Suite *s = suite_create("compare");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, kind_groups_dtypes_by_how_they_compare);
	tcase_add_test(tc, default_tolerances_are_torch_testing);
	tcase_add_test(tc, tolerance_is_atol_plus_rtol_b);
	tcase_add_test(tc, nan_inf_and_signed_zero);
	tcase_add_test(tc, values_follow_isclose_on_nan_and_inf);
	tcase_add_test(tc, chunk_infinite_reference_is_mismatch_with_infinite_rel);
	tcase_add_test(tc, identical_bytes_count_nans_only);
	tcase_add_test(tc, rounded_equal_ties_to_even);
	tcase_add_test(tc, sub_byte_dtypes_by_element_bits);
	tcase_add_test(tc, integers_exactly);
	suite_add_tcase(s, tc);
	int nf = (int)(sizeof fixtures / sizeof fixtures[0]);
	tc = tcase_create("numpy");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, fixtures_match_numpy, 0, nf);
	tcase_add_loop_test(tc, fixtures_in_chunks_match_numpy, 0, nf);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
