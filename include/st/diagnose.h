/*
 * st/diagnose.h - name the trap when two same-shape tensors differ.
 *
 * A conversion or a loader that goes wrong usually goes wrong in one of a
 * few ways, and none of them changes a shape: a square matrix copied
 * without its transpose (GPT-2's attn.c_proj), the Q, K and V thirds of a
 * packed projection in another order (or its heads permuted), a constant
 * factor, a flipped sign, or bytes labelled with the wrong dtype of the
 * same width (BF16 bytes read as F16). st_diagnose_pair tests B against each
 * of these transformations of A and says which one B is.
 *
 * Cost: each hypothesis is first tried on a fixed set of sampled elements
 * and only a survivor is verified on every element, with an early exit at
 * the first element that disagrees. At most a fixed number of full passes
 * (see diagnose.c) is made, so the time is O(n) whatever the data.
 *
 * What it is not: a distance (st/compare.h says how far apart two
 * tensors are; this only answers "is B this function of A"). No
 * printing; st_diagnose_describe and st_diagnose_dtype_line give the
 * finding as a sentence, which a tool prints or not. Element matches use
 * st_compare_values' rule (an infinity matches only itself, NaN only
 * NaN).
 */
#ifndef ST_DIAGNOSE_H
#define ST_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"
#include "index.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor's values as stored: n little-endian elements of dtype. */
typedef struct st_diagnose_tensor {
	st_dtype dtype;       /* an st_dtype_is_numeric dtype */
	unsigned ndim;
	const uint64_t *shape; /* ndim entries; their product is n */
	uint64_t n;
	const void *data;     /* n * st_dtype_bits(dtype) / 8 bytes */
} st_diagnose_tensor;

enum st_diagnose_kind {
	ST_DIAGNOSE_NONE,       /* none of the transformations below */
	ST_DIAGNOSE_NEGATED,    /* B = -A */
	ST_DIAGNOSE_SCALED,     /* B = scale * A */
	ST_DIAGNOSE_TRANSPOSED, /* B = A^T, A square [n, n] */
	ST_DIAGNOSE_PERMUTED,   /* B's last-axis blocks are A's, reordered */
	ST_DIAGNOSE_REINTERPRETED /* B's bytes, read as read_as, are A (rounded) */
};

/* Blocks considered by ST_DIAGNOSE_PERMUTED (3 * heads of a large model). */
#define ST_DIAGNOSE_MAX_BLOCKS 128

typedef struct st_diagnose_result {
	enum st_diagnose_kind kind;
	int exact;        /* 1: exactly; 0: within the tolerance given */
	double scale;     /* ST_DIAGNOSE_SCALED */
	int n_blocks;     /* ST_DIAGNOSE_PERMUTED: blocks of block_width columns */
	uint64_t block_width;
	int perm[ST_DIAGNOSE_MAX_BLOCKS]; /* B's block j holds A's block perm[j] */
	st_dtype read_as; /* ST_DIAGNOSE_REINTERPRETED: B's bytes are this dtype */
	st_dtype b_dtype; /* ST_DIAGNOSE_REINTERPRETED: what B is labelled */
} st_diagnose_result;

/*
 * Which transformation of A B is, tried in this order: negated, scaled,
 * transposed, last-axis blocks permuted (the fewest blocks that explain
 * B), bytes of another dtype of B's width. "Within tolerance" is
 * |a' - b| <= atol + rtol * |b| for the transformed A value a'; NaN
 * matches NaN only, an infinity only itself. A and B must have the same
 * element count and ndim (a caller's misuse otherwise: assert). Returns
 * r->kind (ST_DIAGNOSE_NONE when nothing fits, or for a dtype that is not
 * numeric).
 */
ST_API enum st_diagnose_kind st_diagnose_pair(const st_diagnose_tensor *a,
                                              const st_diagnose_tensor *b,
                                              double rtol, double atol,
                                              st_diagnose_result *r);

/*
 * The result in words, e.g. "B is A transposed (exactly)" or "B is A
 * with its 3 column blocks of 768 in the order 2,1,3 (exactly): Q, K, V
 * thirds packed as K, Q, V?". Writes at most size bytes (NUL included);
 * returns buf.
 */
ST_API char *st_diagnose_describe(const st_diagnose_result *r, char *buf,
                                  size_t size);

/*
 * st_diagnose_pair on tensor ia of ca and ib of cb (same shape: the caller's
 * check), their data borrowed through st_checkpoint_data. Returns ST_OK
 * with *r filled, or the error of reading the data (err says which file
 * and tensor).
 */
ST_API int st_diagnose_checkpoints(st_checkpoint *ca, size_t ia,
                                   st_checkpoint *cb, size_t ib, double rtol,
                                   double atol, st_diagnose_result *r,
                                   st_error *err);

/* A tally of dtype changes, for one summary line per pair of dtypes. */
#define ST_DIAGNOSE_MAX_DTYPE_PAIRS 32
typedef struct st_diagnose_dtype_tally {
	size_t n;
	struct st_diagnose_dtype_pair {
		st_dtype a, b;
		uint64_t tensors;  /* tensors whose dtype went from a to b */
		uint64_t rounded;  /* ... whose B is exactly A rounded */
		uint64_t within;   /* ... within tolerance but not that */
		uint64_t differ;   /* ... outside tolerance */
	} pair[ST_DIAGNOSE_MAX_DTYPE_PAIRS];
} st_diagnose_dtype_tally;

/* Count one tensor (a -> b): exactly rounded, else within tolerance, else
 * differs. Past ST_DIAGNOSE_MAX_DTYPE_PAIRS distinct pairs (impossible with
 * 22 dtypes but for hostile use) the rest are not counted. */
ST_API void st_diagnose_dtype_add(st_diagnose_dtype_tally *t, st_dtype a,
                                  st_dtype b, int rounded, int within);
/*
 * Line i of the summary, e.g. "52 tensors F32 → BF16, all exactly A
 * rounded" or "3 tensors F32 → F16: 2 exactly A rounded, 1 within
 * tolerance"; when B is the wider, "A exactly B rounded". Returns buf.
 */
ST_API char *st_diagnose_dtype_line(const st_diagnose_dtype_tally *t,
                                    size_t i, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
