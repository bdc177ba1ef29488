/*
 * stats_avx2.c - the two passes of st_stats_add on AVX2, four doubles a
 * step in the four lanes of stats_internal.h, the tail in the scalar
 * reference: the same operations on the same values as stats.c's scalar
 * passes, so the same bits (no FMA: the products are rounded as there).
 * Non-finite values add +0 to a lane, which leaves it as it was: a lane
 * starts at +0 and a sum of IEEE doubles never becomes -0 from +0.
 * Each function carries target(T256); stats.c calls them only on a CPU
 * that has AVX2. Empty on other architectures.
 */
#include "stats_internal.h"

#include "dtype_internal.h"

#if ST_X86

#define T256 "avx2,popcnt"

static inline __attribute__((always_inline, target(T256))) uint64_t lanes(__m256d mask)
{
	return (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_pd(mask));
}

__attribute__((target(T256))) void st__stats_pass1_avx2(const double *x, size_t n, double shift,
                                                        st__stats_acc *a)
{
	const __m256d abs = _mm256_castsi256_pd(_mm256_set1_epi64x((long long)F64_ABS));
	const __m256d inf = _mm256_set1_pd(INFINITY), ninf = _mm256_set1_pd(-INFINITY);
	const __m256d zero = _mm256_setzero_pd(), vshift = _mm256_set1_pd(shift);
	const __m256i negz = _mm256_set1_epi64x((long long)0x8000000000000000ull);
	__m256d sum = _mm256_loadu_pd(a->sum);
	__m256d mn = _mm256_set1_pd(a->min), mx = _mm256_set1_pd(a->max);
	uint64_t fin = 0, nan = 0, infs = 0, zeros = 0, nz = 0;
	size_t i = 0;
	for (; i + ST__STATS_LANES <= n; i += ST__STATS_LANES) {
		__m256d v = _mm256_loadu_pd(x + i);
		__m256d av = _mm256_and_pd(v, abs);
		__m256d f = _mm256_cmp_pd(av, inf, _CMP_LT_OQ);
		nan += lanes(_mm256_cmp_pd(v, v, _CMP_UNORD_Q));
		infs += lanes(_mm256_cmp_pd(av, inf, _CMP_EQ_OQ));
		zeros += lanes(_mm256_cmp_pd(v, zero, _CMP_EQ_OQ));
		nz += lanes(_mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_castpd_si256(v), negz)));
		fin += lanes(f);
		mn = _mm256_min_pd(_mm256_blendv_pd(inf, v, f), mn);
		mx = _mm256_max_pd(_mm256_blendv_pd(ninf, v, f), mx);
		sum = _mm256_add_pd(sum, _mm256_and_pd(_mm256_sub_pd(v, vshift), f));
	}
	_mm256_storeu_pd(a->sum, sum);
	double m[ST__STATS_LANES], M[ST__STATS_LANES];
	_mm256_storeu_pd(m, mn);
	_mm256_storeu_pd(M, mx);
	for (int k = 0; k < ST__STATS_LANES; k++) {
		if (m[k] < a->min)
			a->min = m[k];
		if (M[k] > a->max)
			a->max = M[k];
	}
	a->n += fin;
	a->nan += nan;
	a->inf += infs;
	a->zeros += zeros;
	a->neg_zeros += nz;
	for (int k = 0; i < n; i++, k++)
		st__stats_one1(a, x[i], shift, k);
}

__attribute__((target(T256))) void st__stats_pass2_avx2(const double *x, size_t n, double shift,
                                                        double mean, st__stats_dev *d)
{
	const __m256d abs = _mm256_castsi256_pd(_mm256_set1_epi64x((long long)F64_ABS));
	const __m256d inf = _mm256_set1_pd(INFINITY);
	const __m256d vshift = _mm256_set1_pd(shift), vmean = _mm256_set1_pd(mean);
	__m256d dsum = _mm256_loadu_pd(d->dsum), m2 = _mm256_loadu_pd(d->m2);
	size_t i = 0;
	for (; i + ST__STATS_LANES <= n; i += ST__STATS_LANES) {
		__m256d v = _mm256_loadu_pd(x + i);
		__m256d f = _mm256_cmp_pd(_mm256_and_pd(v, abs), inf, _CMP_LT_OQ);
		__m256d e = _mm256_and_pd(_mm256_sub_pd(_mm256_sub_pd(v, vshift), vmean), f);
		dsum = _mm256_add_pd(dsum, e);
		m2 = _mm256_add_pd(m2, _mm256_mul_pd(e, e));
	}
	_mm256_storeu_pd(d->dsum, dsum);
	_mm256_storeu_pd(d->m2, m2);
	for (int k = 0; i < n; i++, k++)
		st__stats_one2(d, x[i], shift, mean, k);
}

#endif /* ST_X86 */
