/*
 * compare.h - element-wise comparison of two tensors' data (stdiff's
 * value pass): bit identity, max abs / max rel / mean abs difference,
 * elements outside |a - b| <= atol + rtol * |b| with the defaults of
 * torch.testing.assert_close, the worst element, and whether the
 * narrower of two float dtypes is exactly the wider one rounded by
 * st_convert. Not part of libst.
 *
 * Use: compare_spec_init once per tensor pair; compare_stats_init a
 * result per chunk and compare_chunk the chunk's bytes of both sides into
 * it (with the sums of |a - b| per block of COMPARE_BLOCK elements);
 * compare_stats_merge the chunk results into the pair's in chunk order
 * and add the block sums in the same order, so the mean does not depend
 * on threading.
 */
#ifndef ST_COMPARE_H
#define ST_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <st.h>

/* How a dtype's values are compared. */
enum compare_kind {
	COMPARE_FLOAT, /* F64, F32, F16, BF16: widened to double */
	COMPARE_INT,   /* BOOL and the integer types: exact, as 128-bit integers */
	COMPARE_RAW    /* F8, F6, F4, C64: bytes only, per element */
};

enum compare_kind compare_kind(st_dtype d);

/*
 * torch.testing.assert_close's default rtol and atol for d
 * (torch/testing/_comparison.py, _DTYPE_PRECISIONS); 0 and 0 for every
 * other dtype, which torch compares exactly too.
 */
void compare_default_tol(st_dtype d, double *rtol, double *atol);

/* How one pair of tensors (dtypes a and b, equal element counts) is compared. */
typedef struct compare_spec {
	st_dtype a, b;
	double rtol, atol;
	bool exact;         /* bits must match: every difference is a mismatch */
	bool check_rounded; /* two different float dtypes */
	bool a_is_wide;     /* for check_rounded: A is rounded to B's dtype */
} compare_spec;

/*
 * Fill s for dtypes a and b. rtol and atol (NULL: default) are the given
 * tolerances; by default each is the looser of the two dtypes' defaults,
 * or 0 with exact. Of F16 and BF16 (same width) B is checked as A rounded.
 */
void compare_spec_init(compare_spec *s, st_dtype a, st_dtype b, bool exact,
                       const double *rtol, const double *atol);

/* What a comparison found, for a chunk and then for a whole tensor. */
typedef struct compare_stats {
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
} compare_stats;

void compare_stats_init(compare_stats *s);
/* Add chunk result c to t (order-independent but for sums, see above). */
void compare_stats_merge(compare_stats *t, const compare_stats *c);

/* Elements per block of compare_chunk's sums, and per decode. */
#define COMPARE_BLOCK 16384

/* Bytes of scratch compare_chunk needs. */
#define COMPARE_SCRATCH_BYTES ((size_t)COMPARE_BLOCK * (2 * 8 + 2 * 16 + 8))

/*
 * Compare n_groups whole groups (st_dtype_group) of A's bytes a
 * with B's bytes b, whose first element is element first of the tensor,
 * into s. sums has one entry per COMPARE_BLOCK elements of the chunk
 * (the last block may be shorter), zeroed by the caller: entry j gains
 * the sum of |a - b| over the pairs without NaN of block j, the block's
 * elements added in order. scratch holds COMPARE_SCRATCH_BYTES bytes,
 * 16-byte aligned (malloc's). Both sides must hold n_groups groups.
 */
void compare_chunk(const compare_spec *spec, const unsigned char *a,
                   const unsigned char *b, uint64_t n_groups, uint64_t first,
                   void *scratch, compare_stats *s, double *sums);

#endif
