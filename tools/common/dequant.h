/*
 * dequant.h - the scaled weights of a checkpoint, paired with their scale
 * tensors, and their dequantization in element ranges, for stconvert --to.
 * The arithmetic and the layout checks are libst's (st/quant.h); this
 * module names the pairs and cuts the work to the tools' pipeline.
 *
 * Pairs (by name, in one checkpoint):
 *   X.weight (F8) with X.weight_scale_inv or X.weight_scale   FP8
 *   NAME_blocks (U8) with NAME_scales (U8)                    MXFP4 -> NAME
 * A pair's weight dequantizes to the target; its scale is dropped. When a
 * checkpoint has any scale, every F8 X.weight must have one, and every
 * scale its weight; a mismatch is an error naming both tensors.
 *
 * Activation scales (compressed-tensors' and ModelOpt's static FP8:
 * X.input_scale, and the attention's X.k_scale and X.v_scale, a float
 * scalar or [1] each) mean nothing to a dequantized model: in a
 * checkpoint with weight scales they are scales too (DQ_SCALE, counted in
 * n_scales and n_act_scales, their scale index their own), dropped with
 * the others.
 *
 * stconvert builds a plan (dq_plan_build: the first mismatch is an
 * error); stinfo inspects one (dq_plan_inspect: every mismatch reported,
 * headers only) and groups its pairs by layout (dq_plan_layouts) to
 * describe them.
 */
#ifndef ST_TOOLS_DEQUANT_H
#define ST_TOOLS_DEQUANT_H

#include <st.h>

enum dq_role { DQ_PLAIN = 0, DQ_FP8, DQ_MXFP4, DQ_SCALE };

typedef struct dq_tensor {
	enum dq_role role;
	size_t scale;                    /* the scale's checkpoint index */
	st_quant_fp8 fp8;
	st_quant_mxfp4 mx;
	char *out_name;                  /* MXFP4: NAME (malloc'd), else NULL */
	size_t out_name_len;
	uint64_t out_shape[3];           /* MXFP4: [experts, groups * 32, rows] */
	uint64_t n_out;                  /* output elements */
	uint64_t row_len;                /* elements of an output row */
	const unsigned char *data;       /* MXFP4: the mapped blocks */
	const unsigned char *scale_data; /* the mapped scale */
} dq_tensor;

typedef struct dq_plan {
	dq_tensor *t;                    /* one per checkpoint tensor */
	size_t n;
	size_t n_fp8, n_mxfp4, n_scales;
	size_t n_act_scales;             /* of n_scales: activation scales */
	uint64_t act_scale_bytes;        /* of scale_bytes: theirs */
	uint64_t block_rows, block_cols; /* FP8 blocks (config or default) */
	uint64_t scale_bytes;
	size_t max_row;                  /* longest output row, elements */
	uint64_t parameters;             /* every tensor's elements but the
	                                    scales', an MXFP4 weight's
	                                    dequantized (n_out); saturating */
	size_t n_problems;               /* dq_plan_inspect: mismatches */
} dq_plan;

/*
 * Pair the tensors of c; b0 x b1 is weight_block_size. Maps the pairs'
 * data (st_file_data). Returns 0, or -1 with err naming the tensors.
 */
int dq_plan_build(dq_plan *p, st_checkpoint *c, uint64_t b0, uint64_t b1, st_error *err);

/* Whether d is an F8 type a scaled weight may have (E8M0 is a scale's). */
int dq_is_f8_weight(st_dtype d);
void dq_plan_free(dq_plan *p);

/* A mismatch dq_plan_inspect found: one line naming both tensors. */
typedef void (*dq_problem_fn)(void *ctx, const char *message);

/*
 * dq_plan_build's pairing for a description (stinfo): maps nothing (no
 * data, no scale_data), and reports every mismatch to fn instead of
 * stopping at the first: a weight without its scale, a scale without its
 * weight (or whose weight is no F8 tensor), a pair st_quant_fp8_layout or
 * st_quant_mxfp4_layout rejects (a scale of the wrong dtype, or whose
 * shape does not fit the block size). A weight whose pair does not fit
 * stays DQ_PLAIN; its scale is a DQ_SCALE. p->n_problems counts the
 * mismatches (fn may be NULL to count them only). Returns 0 (p to free
 * with dq_plan_free), or -1 with err when out of memory.
 */
int dq_plan_inspect(dq_plan *p, const st_checkpoint *c, uint64_t b0, uint64_t b1, dq_problem_fn fn,
                    void *ctx, st_error *err);

/* The pairs of a plan that share a layout, for descriptions. */
typedef struct dq_layout {
	enum dq_role role;               /* DQ_FP8 or DQ_MXFP4 */
	st_dtype weight_type;            /* the F8 type; MXFP4: F4 */
	st_dtype scale_type;             /* F32, BF16, F16 or F8_E8M0 */
	int kind;                        /* ST_QUANT_BLOCK, _CHANNEL, _TENSOR */
	uint64_t block_rows, block_cols; /* ST_QUANT_BLOCK: FP8's B0 x B1;
	                                    MXFP4's 1 x 32 */
	int experts;                     /* 3-D weights, experts first */
	size_t weights;
	uint64_t parameters;             /* the weights' output elements */
	uint64_t scale_bytes;            /* their scales' bytes */
} dq_layout;

/*
 * Group the paired weights of p (tensors of c) by layout, in the order
 * of each layout's first weight: *out (malloc'd, free it) holds *n of
 * them (0 and NULL when nothing is paired). Returns 0, or -1 when out of
 * memory.
 */
int dq_plan_layouts(const dq_plan *p, const st_checkpoint *c, dq_layout **out, size_t *n);

/*
 * A layout in words: "FP8 E4M3, block-scaled 128x128, 61 weights with F32
 * scales", "FP8 E4M3, scaled per channel, ...", "... per tensor, ...",
 * "... 2 expert weights (3-D) with E8M0 scales", "MXFP4 (E2M1 blocks of
 * 32 with E8M0 scales), 1 expert weight".
 */
void dq_layout_describe(const dq_layout *l, char *buf, size_t size);

/* A one-line description ("FP8 F8_E4M3, block-scaled 128x128, ..."). */
void dq_plan_describe(const dq_plan *p, char *buf, size_t size);

/*
 * Output elements [first, first + n) of a paired weight, as dtype to, into
 * out. An FP8 weight's bytes for those elements are in (read by the
 * caller, one byte each); MXFP4 reads its mapping (in unused). scratch
 * holds DQ_SCRATCH(max_row) bytes (a partial row and its input).
 */
#define DQ_SCRATCH(max_row) ((size_t)(max_row) * 9)
void dq_range(const dq_tensor *t, st_dtype to, void *out, const unsigned char *in, uint64_t first,
              uint64_t n, void *scratch);

/*
 * The FP8 block size a config.json's text gives (file names it in
 * messages): quantization_config.weight_block_size
 * (st_quant_config_block_size), or ST_QUANT_DEFAULT_BLOCK on both sides
 * when the text is not a JSON object or names none. Returns 1 when it
 * names one, 0 when not, or -1 with err naming file (a hostile block
 * size).
 */
int dq_config_text_block_size(const char *text, size_t len, const char *file, uint64_t *b0,
                              uint64_t *b1, st_error *err);

/*
 * The same for the config.json of the checkpoint whose folder is dir
 * (st_config_read), the default when there is none. Returns 1, 0, or -1
 * with err naming config.json (unreadable, larger than
 * ST_CONFIG_MAX_BYTES, a hostile block size).
 */
int dq_config_block_size(const char *dir, uint64_t *b0, uint64_t *b1, st_error *err);

#endif
