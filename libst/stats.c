/*
 * stats.c - value statistics (see st/stats.h). Each chunk is summed in two
 * passes, and chunks are merged pairwise, so neither a long tensor nor
 * values far from zero lose the digits of the spread to cancellation.
 */
#include "internal.h"

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

/*
 * One chunk, in two passes: counts, extremes and a first mean, then the
 * deviations, with the corrected two-pass algorithm (Bjorck) fixing the
 * first mean's rounding error. Squared deviations overflow to Inf only for
 * spreads beyond about 1e154, which only F64 tensors can hold.
 */
void st_stats_add(st_stats *a, const double *x, size_t n)
{
	st_stats c = {0};
	double sum = 0;
	int have_shift = a->n > 0;
	c.shift = a->shift;
	for (size_t i = 0; i < n; i++) {
		double v = x[i];
		if (isnan(v)) {
			c.nan++;
			continue;
		}
		if (isinf(v)) {
			c.inf++;
			continue;
		}
		if (!have_shift) {
			c.shift = v;
			have_shift = 1;
		}
		if (v == 0)
			c.zeros++;
		if (c.n == 0 || v < c.min)
			c.min = v;
		if (c.n == 0 || v > c.max)
			c.max = v;
		c.n++;
		sum += v - c.shift;
	}
	if (c.n) {
		double mean = sum / (double)c.n, dsum = 0, m2 = 0;
		for (size_t i = 0; i < n; i++)
			if (isfinite(x[i])) {
				double d = (x[i] - c.shift) - mean;
				dsum += d;
				m2 += d * d;
			}
		c.mean = mean + dsum / (double)c.n;
		c.m2 = m2 - dsum * dsum / (double)c.n;
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
