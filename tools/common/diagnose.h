/*
 * diagnose.h - name the trap when two same-shape tensors differ.
 *
 * A conversion or a loader that goes wrong usually goes wrong in one of a
 * few ways, and none of them changes a shape: a square matrix copied
 * without its transpose (GPT-2's attn.c_proj), the Q, K and V thirds of a
 * packed projection in another order (or its heads permuted), a constant
 * factor, a flipped sign, or bytes labelled with the wrong dtype of the
 * same width (BF16 bytes read as F16). diagnose_pair tests B against each
 * of these transformations of A and says which one B is.
 *
 * Cost: each hypothesis is first tried on a fixed set of sampled elements
 * and only a survivor is verified on every element, with an early exit at
 * the first element that disagrees. At most a fixed number of full passes
 * (see diagnose.c) is made, so the time is O(n) whatever the data.
 *
 * Not part of libst: no I/O, no printing, no global state.
 */
#ifndef ST_DIAGNOSE_H
#define ST_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include <st.h>

/* One tensor's values as stored: n little-endian elements of dtype. */
typedef struct diagnose_tensor {
	st_dtype dtype;       /* a ckpt_is_numeric dtype */
	unsigned ndim;
	const uint64_t *shape; /* ndim entries; their product is n */
	uint64_t n;
	const void *data;     /* n * st_dtype_bits(dtype) / 8 bytes */
} diagnose_tensor;

enum diagnose_kind {
	DIAGNOSE_NONE,       /* none of the transformations below */
	DIAGNOSE_NEGATED,    /* B = -A */
	DIAGNOSE_SCALED,     /* B = scale * A */
	DIAGNOSE_TRANSPOSED, /* B = A^T, A square [n, n] */
	DIAGNOSE_PERMUTED,   /* B's last-axis blocks are A's, reordered */
	DIAGNOSE_REINTERPRETED /* B's bytes, read as read_as, are A (rounded) */
};

/* Blocks considered by DIAGNOSE_PERMUTED (3 * heads of a large model). */
#define DIAGNOSE_MAX_BLOCKS 128

typedef struct diagnose_result {
	enum diagnose_kind kind;
	int exact;        /* 1: exactly; 0: within the tolerance given */
	double scale;     /* DIAGNOSE_SCALED */
	int n_blocks;     /* DIAGNOSE_PERMUTED: blocks of block_width columns */
	uint64_t block_width;
	int perm[DIAGNOSE_MAX_BLOCKS]; /* B's block j holds A's block perm[j] */
	st_dtype read_as; /* DIAGNOSE_REINTERPRETED: B's bytes are this dtype */
	st_dtype b_dtype; /* DIAGNOSE_REINTERPRETED: what B is labelled */
} diagnose_result;

/*
 * Which transformation of A B is, tried in this order: negated, scaled,
 * transposed, last-axis blocks permuted (the fewest blocks that explain
 * B), bytes of another dtype of B's width. "Within tolerance" is
 * |a' - b| <= atol + rtol * |b| for the transformed A value a'; NaN
 * matches NaN only. A and B must have the same shape (caller's check).
 * Returns r->kind (DIAGNOSE_NONE when nothing fits, or for a dtype that is
 * not numeric).
 */
enum diagnose_kind diagnose_pair(const diagnose_tensor *a,
                                 const diagnose_tensor *b, double rtol,
                                 double atol, diagnose_result *r);

/*
 * The result in words, e.g. "B is A transposed (exactly)" or "B is A
 * with its 3 column blocks of 768 in the order 2,1,3 (exactly): Q, K, V
 * thirds packed as K, Q, V?". Writes at most size bytes (NUL included);
 * returns buf.
 */
char *diagnose_describe(const diagnose_result *r, char *buf, size_t size);

/*
 * diagnose_pair on tensor ia of ca and ib of cb (same shape: the caller's
 * check), their data borrowed through st_checkpoint_data. Returns ST_OK
 * with *r filled, or the error of reading the data (err says which file
 * and tensor).
 */
int diagnose_checkpoints(st_checkpoint *ca, size_t ia, st_checkpoint *cb,
                         size_t ib, double rtol, double atol,
                         diagnose_result *r, st_error *err);

/* A tally of dtype changes, for one summary line per pair of dtypes. */
#define DIAGNOSE_MAX_DTYPE_PAIRS 32
typedef struct diagnose_dtype_tally {
	size_t n;
	struct diagnose_dtype_pair {
		st_dtype a, b;
		uint64_t tensors;  /* tensors whose dtype went from a to b */
		uint64_t rounded;  /* ... whose B is exactly A rounded */
		uint64_t within;   /* ... within tolerance but not that */
		uint64_t differ;   /* ... outside tolerance */
	} pair[DIAGNOSE_MAX_DTYPE_PAIRS];
} diagnose_dtype_tally;

/* Count one tensor (a -> b): exactly rounded, else within tolerance, else
 * differs. Past DIAGNOSE_MAX_DTYPE_PAIRS distinct pairs (impossible with
 * 22 dtypes but for hostile use) the rest are not counted. */
void diagnose_dtype_add(diagnose_dtype_tally *t, st_dtype a, st_dtype b,
                        int rounded, int within);
/*
 * Line i of the summary, e.g. "52 tensors F32 → BF16, all exactly A
 * rounded" or "3 tensors F32 → F16: 2 exactly A rounded, 1 within
 * tolerance"; when B is the wider, "A exactly B rounded". Returns buf.
 */
char *diagnose_dtype_line(const diagnose_dtype_tally *t, size_t i, char *buf,
                          size_t size);

#endif
