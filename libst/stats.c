/*
 * stats.c - value statistics (see st/stats.h). Each chunk is summed in two
 * passes, and chunks are merged pairwise, so neither a long tensor nor
 * values far from zero lose the digits of the spread to cancellation.
 */
#include "stats_internal.h"

#include <math.h>

void st_stats_merge(st_stats *a, const st_stats *b)
{
	if (b->n && a->n == 0) {
		a->shift = b->shift;
		a->mean = b->mean;
		a->m2 = b->m2;
		a->min = b->min;
		a->max = b->max;
	} else if (b->n) {
		double na = (double)a->n, nb = (double)b->n, n = na + nb;
		double delta = (b->shift - a->shift) + (b->mean - a->mean);
		a->mean += delta * (nb / n);
		a->m2 += b->m2 + delta * delta * (na * nb / n);
		if (b->min < a->min)
			a->min = b->min;
		if (b->max > a->max)
			a->max = b->max;
	}
	a->n += b->n;
	a->nan += b->nan;
	a->inf += b->inf;
	a->zeros += b->zeros;
}

/* ---- the passes (stats_internal.h) ---------------------------------------- */

static void pass1_scalar(const double *x, size_t n, double shift, st__stats_acc *a)
{
	size_t i = 0, body = n / ST__STATS_LANES * ST__STATS_LANES;
	for (; i < body; i += ST__STATS_LANES)
		for (int k = 0; k < ST__STATS_LANES; k++)
			st__stats_one1(a, x[i + (size_t)k], shift, k);
	for (int k = 0; i < n; i++, k++)
		st__stats_one1(a, x[i], shift, k);
}

static void pass2_scalar(const double *x, size_t n, double shift, double mean, st__stats_dev *d)
{
	size_t i = 0, body = n / ST__STATS_LANES * ST__STATS_LANES;
	for (; i < body; i += ST__STATS_LANES)
		for (int k = 0; k < ST__STATS_LANES; k++)
			st__stats_one2(d, x[i + (size_t)k], shift, mean, k);
	for (int k = 0; i < n; i++, k++)
		st__stats_one2(d, x[i], shift, mean, k);
}

int st__stats_pass1_isa(int isa, const double *x, size_t n, double shift, st__stats_acc *a)
{
	if (isa == ST__ISA_SCALAR) {
		pass1_scalar(x, n, shift, a);
		return ST_OK;
	}
#if ST_STATS_X86
	if (isa == ST__ISA_AVX2 && st__isa_available(isa)) {
		st__stats_pass1_avx2(x, n, shift, a);
		return ST_OK;
	}
#endif
	return ST_EUNSUPPORTED;
}

int st__stats_pass2_isa(int isa, const double *x, size_t n, double shift, double mean,
                        st__stats_dev *d)
{
	if (isa == ST__ISA_SCALAR) {
		pass2_scalar(x, n, shift, mean, d);
		return ST_OK;
	}
#if ST_STATS_X86
	if (isa == ST__ISA_AVX2 && st__isa_available(isa)) {
		st__stats_pass2_avx2(x, n, shift, mean, d);
		return ST_OK;
	}
#endif
	return ST_EUNSUPPORTED;
}

static double lanes_sum(const double s[ST__STATS_LANES])
{
	return (s[0] + s[1]) + (s[2] + s[3]);
}

/*
 * One chunk, in two passes: counts, extremes and a first mean, then the
 * deviations, with the corrected two-pass algorithm (Bjorck) fixing the
 * first mean's rounding error. Squared deviations overflow to Inf only for
 * spreads beyond about 1e154, which only F64 tensors can hold. Of equal
 * zeros, min is -0 and max +0 when the chunk has one: whatever the order.
 */
void st_stats_add(st_stats *a, const double *x, size_t n)
{
	int isa = st__isa_available(ST__ISA_AVX2) ? ST__ISA_AVX2 : ST__ISA_SCALAR;
	st__stats_acc acc = {.min = INFINITY, .max = -INFINITY};
	double shift = a->shift;
	size_t i = 0;
	if (a->n == 0) { /* the shift is the chunk's first finite value */
		while (i < n && !isfinite(x[i]))
			st__stats_one1(&acc, x[i++], shift, 0); /* counts only */
		if (i < n)
			shift = x[i];
	}
	st__stats_pass1_isa(isa, x + i, n - i, shift, &acc);
	st_stats c = {0};
	c.shift = shift;
	c.n = acc.n;
	c.nan = acc.nan;
	c.inf = acc.inf;
	c.zeros = acc.zeros;
	if (c.n) {
		c.min = acc.min == 0 ? (acc.neg_zeros ? -0.0 : 0.0) : acc.min;
		c.max = acc.max == 0 ? (acc.zeros > acc.neg_zeros ? 0.0 : -0.0) : acc.max;
		double mean = lanes_sum(acc.sum) / (double)c.n;
		st__stats_dev dev = {{0}, {0}};
		st__stats_pass2_isa(isa, x, n, shift, mean, &dev);
		double dsum = lanes_sum(dev.dsum);
		c.mean = mean + dsum / (double)c.n;
		c.m2 = lanes_sum(dev.m2) - dsum * dsum / (double)c.n;
		if (c.m2 < 0)
			c.m2 = 0;
	}
	st_stats_merge(a, &c);
}

double st_stats_mean(const st_stats *a)
{
	return a->n ? a->shift + a->mean : 0;
}

double st_stats_std(const st_stats *a)
{
	return a->n ? sqrt(a->m2 / (double)a->n) : 0;
}
