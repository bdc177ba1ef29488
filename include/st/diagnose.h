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
	ST_DIAGNOSE_REINTERPRETED, /* B's bytes, read as read_as, are A (rounded) */
	ST_DIAGNOSE_ROTARY_ROWS, /* B's rows are A's, each head of head_dim
	                            rows permuted to or from GGUF's interleaved
	                            rotary order */
	ST_DIAGNOSE_ROW_SCALED,  /* each row (last axis) of B is A's row times
	                            its own factor, in [scale_min, scale_max] */
	ST_DIAGNOSE_ROTARY,      /* a trace's rotary stage: the same input,
	                            rotated differently (st_diagnose_rotary) */
	ST_DIAGNOSE_GQA          /* a trace's attention output: query heads
	                            read other KV heads (st_diagnose_gqa) */
};

/* How a rotary embedding pairs a head's dimensions (ST_DIAGNOSE_ROTARY). */
enum st_diagnose_rotary_layout {
	ST_DIAGNOSE_ROTARY_UNKNOWN,     /* no rotation of either pairing fits */
	ST_DIAGNOSE_ROTARY_HALF,        /* pairs (i, i + D/2): rotate-half, HF */
	ST_DIAGNOSE_ROTARY_INTERLEAVED  /* pairs (2i, 2i + 1): GGUF, Meta */
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
	/* ST_DIAGNOSE_ROTARY_ROWS: heads of head_dim rows; to_interleaved 1
	 * when B is A converted to GGUF's order, 0 when B is A converted
	 * back. ST_DIAGNOSE_ROTARY: the last axis (D). */
	uint64_t head_dim;
	int to_interleaved;
	/* ST_DIAGNOSE_ROW_SCALED: the factors' range; norm 1 when the tensor
	 * is a trace's RMSNorm output (doc/trace.md names), and then
	 * eps_delta is about eps(B) - eps(A) when the norm's input was found
	 * (NaN otherwise). */
	double scale_min, scale_max;
	int norm;
	double eps_delta;
	/* ST_DIAGNOSE_ROTARY: each side's pairing and frequency base (0: the
	 * frequencies fit no single base, as rope_scaling gives). */
	enum st_diagnose_rotary_layout layout_a, layout_b;
	double base_a, base_b;
	/* ST_DIAGNOSE_GQA: query and KV head counts; a_tiled 1 when A's query
	 * head h reads KV head h % n_kv_head and B's h / (n_head / n_kv_head)
	 * (repeat_kv), 0 the other way round. */
	unsigned n_head, n_kv_head;
	int a_tiled;
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
 * A trace's rotary stage (doc/trace.md: attn.q_rope, attn.k_rope [T, H, D]
 * at positions 0 .. T-1) against the tensor it rotates (attn.q_norm or
 * attn.q, ...): pre_a and pre_b must be equal within tolerance (else the
 * difference is upstream: ST_DIAGNOSE_NONE). For each side, which pairing
 * and which frequencies t * base^(-2i/D) rotate pre into the stage, found
 * from position 1 and checked at every position; ST_DIAGNOSE_ROTARY when
 * both sides are such rotations that differ in pairing or base. All four
 * tensors have the shape of a (ndim 3, D even; else a caller's misuse).
 */
ST_API enum st_diagnose_kind st_diagnose_rotary(const st_diagnose_tensor *pre_a,
                                                const st_diagnose_tensor *a,
                                                const st_diagnose_tensor *pre_b,
                                                const st_diagnose_tensor *b,
                                                double rtol, double atol,
                                                st_diagnose_result *r);

/*
 * A trace's attention output (attn.out [T, n_head * D]) against the values
 * it averages (attn.v [T, n_kv_head, D], equal on both sides within
 * tolerance): ST_DIAGNOSE_GQA when at position 0 (where a query sees one
 * key) one side's query head h is KV head h / (n_head / n_kv_head)'s value
 * (repeat_kv) and the other's KV head h % n_kv_head's (tiled), for every h.
 * The shapes must fit those counts (a caller's misuse otherwise).
 */
ST_API enum st_diagnose_kind st_diagnose_gqa(const st_diagnose_tensor *a,
                                             const st_diagnose_tensor *b,
                                             const st_diagnose_tensor *v,
                                             unsigned n_head, unsigned n_kv_head,
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
 * check), their data borrowed through st_checkpoint_data. When the names
 * are a trace's stages (doc/trace.md, the Llama family), the stage's
 * neighbours are looked up by name in the same checkpoints: a rotary stage
 * gets st_diagnose_rotary with the tensor before it, attn.out st_diagnose_gqa
 * (head counts from attn.q and attn.k), a norm stage's per-row scale is
 * named an RMSNorm epsilon (and eps_delta estimated from the norm's input).
 * Returns ST_OK with *r filled, or the error of reading the data (err says
 * which file and tensor).
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
