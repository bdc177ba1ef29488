/*
 * st/compare.h - how two checkpoints' tensor values compare, element by
 * element: bit identity, max abs / max rel / mean abs difference,
 * elements outside |a - b| <= atol + rtol * |b| with the defaults of
 * torch.testing.assert_close, the worst element, and whether the
 * narrower of two float dtypes is exactly the wider one rounded by
 * st_convert. stdiff's value pass and its GGUF comparison are front ends
 * over it.
 *
 * What it is not: no I/O and no threads (st/stream.h reads the chunks;
 * recipe 3 there), no printing. Value statistics of one tensor are
 * st/stats.h; naming the transformation between two tensors that differ
 * is st/diagnose.h.
 *
 * One rule for a pair of values (st_compare_values), the one every
 * comparison here uses: numpy.isclose and torch.isclose semantics with
 * equal_nan. A NaN equals a NaN and nothing else; equal values (+-0 too,
 * and an infinity against the same infinity) differ by 0; otherwise a
 * is close to its reference b when |a - b| <= atol + rtol * |b|, and an
 * infinity against anything but itself is never close (neither is a
 * finite value against an infinite reference, which the inequality
 * alone would let through when rtol > 0). The relative difference
 * |a - b| / |b| is 0 for b == 0, where only atol decides, and +Inf for
 * an infinite b that a does not equal: libst picks +Inf rather than the
 * NaN of Inf / Inf, so that a maximum of relative differences stays
 * ordered and says "infinitely far" for that element.
 *
 * Use over chunks: st_compare_spec_init once per tensor pair;
 * st_compare_stats_init a result per chunk and st_compare_chunk the
 * chunk's bytes of both sides into it (with the sums of |a - b| per block
 * of ST_COMPARE_BLOCK elements); st_compare_stats_merge the chunk results
 * into the pair's in chunk order and add the block sums in the same
 * order, so the mean does not depend on threading.
 */
#ifndef ST_COMPARE_H
#define ST_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a dtype's values are compared. */
enum st_compare_kind {
	ST_COMPARE_FLOAT, /* F64, F32, F16, BF16: widened to double */
	ST_COMPARE_INT,   /* BOOL and the integer types: exact, as 128-bit integers */
	ST_COMPARE_RAW    /* F8, F6, F4, C64: bytes only, per element */
};

/* The kind of dtype d. */
ST_API enum st_compare_kind st_compare_kind(st_dtype d);

/*
 * torch.testing.assert_close's default rtol and atol for d
 * (torch/testing/_comparison.py, _DTYPE_PRECISIONS); 0 and 0 for every
 * other dtype, which torch compares exactly too.
 */
ST_API void st_compare_default_tol(st_dtype d, double *rtol, double *atol);

/* What st_compare_values finds for one element a against its reference b. */
typedef enum st_compare_verdict {
	ST_COMPARE_EQUAL,        /* a == b (+0 == -0, Inf == Inf) */
	ST_COMPARE_NAN_EQUAL,    /* NaN on both sides */
	ST_COMPARE_CLOSE,        /* a != b, within atol + rtol * |b| */
	ST_COMPARE_FAR,          /* a != b, outside it (or an infinity involved) */
	ST_COMPARE_NAN_MISMATCH  /* NaN on one side only */
} st_compare_verdict;

/*
 * Compare a with its reference b under rtol and atol (the rule above).
 * For ST_COMPARE_CLOSE and ST_COMPARE_FAR, *abs_diff is |a - b| (+Inf when
 * an infinity is involved) and *rel_diff is |a - b| / |b|, 0 for b == 0
 * and +Inf for an infinite b; for the other verdicts both are 0. Either
 * pointer may be NULL.
 */
ST_API st_compare_verdict st_compare_values(double a, double b, double rtol,
                                            double atol, double *abs_diff,
                                            double *rel_diff);

/* How one pair of tensors (dtypes a and b, equal element counts) is compared. */
typedef struct st_compare_spec {
	st_dtype a, b;
	double rtol, atol;
	bool exact;         /* bits must match: every difference is a mismatch */
	bool check_rounded; /* two different float dtypes */
	bool a_is_wide;     /* for check_rounded: A is rounded to B's dtype */
} st_compare_spec;

/*
 * Fill s for dtypes a and b. rtol and atol (NULL: default) are the given
 * tolerances; by default each is the looser of the two dtypes' defaults,
 * or 0 with exact. Of F16 and BF16 (same width) B is checked as A rounded.
 */
ST_API void st_compare_spec_init(st_compare_spec *s, st_dtype a, st_dtype b,
                                 bool exact, const double *rtol,
                                 const double *atol);

/* What a comparison found, for a chunk and then for a whole tensor. */
typedef struct st_compare_stats {
	uint64_t mismatched;   /* elements outside tolerance */
	uint64_t nan_equal;    /* NaN on both sides */
	uint64_t nan_mismatch; /* NaN on one side only */
	uint64_t n_num;        /* pairs without NaN: the mean's denominator */
	double max_abs, max_rel;
	int worst_rank;        /* -1 none; 0 bits only; 1 value; 2 NaN vs number */
	double worst_diff;
	uint64_t worst_index;  /* flat element index of the worst element */
	bool identical;        /* same bytes so far */
	bool rounded;          /* narrow side == wide side rounded, so far */
} st_compare_stats;

/* An empty result: nothing mismatched, identical and rounded so far. */
ST_API void st_compare_stats_init(st_compare_stats *s);
/* Add chunk result c to t (order-independent but for sums, see above). */
ST_API void st_compare_stats_merge(st_compare_stats *t,
                                   const st_compare_stats *c);

/* Elements per block of st_compare_chunk's sums, and per decode. */
#define ST_COMPARE_BLOCK 16384

/* Bytes of scratch st_compare_chunk needs. */
#define ST_COMPARE_SCRATCH_BYTES ((size_t)ST_COMPARE_BLOCK * (2 * 8 + 2 * 16 + 8))

/*
 * Compare n_groups whole groups (st_dtype_group) of A's bytes a with B's
 * bytes b, whose first element is element first of the tensor, into s.
 * sums has one entry per ST_COMPARE_BLOCK elements of the chunk (the last
 * block may be shorter), zeroed by the caller: entry j gains the sum of
 * |a - b| over the pairs without NaN of block j, the block's elements
 * added in order. scratch holds ST_COMPARE_SCRATCH_BYTES bytes, 16-byte
 * aligned (malloc's). Both sides must hold n_groups groups.
 */
ST_API void st_compare_chunk(const st_compare_spec *spec,
                             const unsigned char *a, const unsigned char *b,
                             uint64_t n_groups, uint64_t first, void *scratch,
                             st_compare_stats *s, double *sums);

#ifdef __cplusplus
}
#endif

#endif
