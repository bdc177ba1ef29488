/*
 * st/stats.h - value statistics of a tensor (stinfo --stats is a front
 * end): min, max, mean and population std of the finite values, and NaN,
 * Inf and zero counts, accumulated chunk by chunk in double precision.
 *
 * What it is not: no I/O, no threads, no printing; the values come
 * widened to double (st_dtype_widen), chunks from st/stream.h (recipe 2).
 * Comparing two tensors is st/compare.h.
 *
 * Use: st_stats_add each chunk's values to a zeroed st_stats of its own,
 * then st_stats_merge the chunk results into the tensor's in element
 * order. The result is then the same whatever threads computed the
 * chunks. NaN and +-Inf are counted, never part of min, max, mean or std.
 * Of equal zeros, min is -0 and max +0 when the values hold one.
 */
#ifndef ST_STATS_H
#define ST_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * mean is kept relative to shift (the first finite value seen), so a
 * tensor whose values sit far from zero (1e6 +- 1e-3) keeps the digits of
 * its spread; m2 is the sum of squared deviations from the mean. An
 * all-zero st_stats is empty and valid.
 */
typedef struct st_stats {
	uint64_t n; /* finite values */
	double shift, mean, m2, min, max;
	uint64_t nan, inf, zeros;
} st_stats;

/* Add n values to a. */
ST_API void st_stats_add(st_stats *a, const double *x, size_t n);
/* Add what b holds to a (Chan et al.'s pairwise update). */
ST_API void st_stats_merge(st_stats *a, const st_stats *b);
/* The mean of the finite values; 0 when a->n is 0. */
ST_API double st_stats_mean(const st_stats *a);
/* Their population standard deviation; 0 when a->n is 0. */
ST_API double st_stats_std(const st_stats *a);

#ifdef __cplusplus
}
#endif

#endif
