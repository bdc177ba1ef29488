/*
 * stats_internal.h - what stats.c and stats_avx2.c share (not installed):
 * the two passes of st_stats_add over one chunk, as a scalar reference
 * and an AVX2 kernel that gives the same bits. Sums are kept in
 * ST__STATS_LANES partial sums, value i of a pass in lane i % LANES, so
 * that the adds overlap and a vector of LANES doubles holds them; the
 * lanes are added in a fixed order at the end.
 */
#ifndef ST_STATS_INTERNAL_H
#define ST_STATS_INTERNAL_H

#include "internal.h"

#include <math.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define ST_STATS_X86 1
#else
#define ST_STATS_X86 0
#endif

enum { ST__STATS_LANES = 4 };

/* Pass 1 of a chunk: counts, extremes and the sums of x - shift. */
typedef struct st__stats_acc {
	double sum[ST__STATS_LANES]; /* lane k: x[i] - shift, finite x[i], i % 4 == k */
	double min, max;             /* of the finite values (+Inf, -Inf: none);
	                                which zero is the caller's (neg_zeros) */
	uint64_t n, nan, inf, zeros, neg_zeros;
} st__stats_acc;

/* Pass 2: the deviations d = (x - shift) - mean of the finite values. */
typedef struct st__stats_dev {
	double dsum[ST__STATS_LANES], m2[ST__STATS_LANES]; /* d and d * d by lane */
} st__stats_dev;

/* One value of pass 1, in lane k: the reference both kernels run. */
static inline void st__stats_one1(st__stats_acc *a, double v, double shift, int k)
{
	if (isnan(v)) {
		a->nan++;
		return;
	}
	if (isinf(v)) {
		a->inf++;
		return;
	}
	if (v == 0) {
		a->zeros++;
		a->neg_zeros += signbit(v) != 0;
	}
	if (v < a->min)
		a->min = v;
	if (v > a->max)
		a->max = v;
	a->n++;
	a->sum[k] += v - shift;
}

/* One value of pass 2, in lane k. */
static inline void st__stats_one2(st__stats_dev *d, double v, double shift, double mean, int k)
{
	if (isfinite(v)) {
		double e = (v - shift) - mean;
		d->dsum[k] += e;
		d->m2[k] += e * e;
	}
}

/*
 * The passes over x[0..n): lanes restart at x[0]; a and d accumulate (a
 * starts with min +Inf, max -Inf, the rest 0). The AVX2 ones exist on
 * x86 only and run only where st__isa_available(ST__ISA_AVX2).
 */
#if ST_STATS_X86
void st__stats_pass1_avx2(const double *x, size_t n, double shift, st__stats_acc *a);
void st__stats_pass2_avx2(const double *x, size_t n, double shift, double mean, st__stats_dev *d);
#endif
/*
 * Either pass with one kernel family forced (tests): ST__ISA_SCALAR or
 * ST__ISA_AVX2; ST_EUNSUPPORTED when this CPU lacks it.
 */
int st__stats_pass1_isa(int isa, const double *x, size_t n, double shift, st__stats_acc *a);
int st__stats_pass2_isa(int isa, const double *x, size_t n, double shift, double mean,
                        st__stats_dev *d);

#endif
