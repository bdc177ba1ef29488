/*
 * stats.h - value statistics of a tensor (stinfo --stats): min, max,
 * mean and population std of the finite values, and NaN, Inf and zero
 * counts, accumulated chunk by chunk in double precision. Not part of
 * libst.
 *
 * Use: stats_add each chunk's values (widened to double, ckpt_widen) to
 * a zeroed stats_acc of its own, then stats_merge the chunk results into
 * the tensor's in element order. The result is then the same whatever
 * threads computed the chunks.
 */
#ifndef ST_STATS_H
#define ST_STATS_H

#include <stddef.h>
#include <stdint.h>

/*
 * mean is kept relative to shift (the first finite value seen), so a
 * tensor whose values sit far from zero (1e6 +- 1e-3) keeps the digits of
 * its spread; m2 is the sum of squared deviations from the mean. An
 * all-zero stats_acc is empty and valid.
 */
typedef struct stats_acc {
	uint64_t n; /* finite values */
	double shift, mean, m2, min, max;
	uint64_t nan, inf, zeros;
} stats_acc;

/* Add n values to a. */
void stats_add(stats_acc *a, const double *x, size_t n);
/* Add what b holds to a (Chan et al.'s pairwise update). */
void stats_merge(stats_acc *a, const stats_acc *b);
/* The mean and the population standard deviation; 0 when a->n is 0. */
double stats_mean(const stats_acc *a);
double stats_std(const stats_acc *a);

#endif
