/*
 * st/quant.h - scaled low-precision weights: dequantizing FP8 and MXFP4
 * checkpoints to a wide float type, and quantizing to block-scaled FP8.
 *
 * Layouts (doc/format.md, "Scaled weights"):
 *
 * Scaled FP8. A weight X.weight of an F8 type, [out, in] or [experts, out,
 * in], with a scale tensor (X.weight_scale_inv in DeepSeek's releases,
 * X.weight_scale in others) in F32, BF16, F16 or F8_E8M0 (2^(b - 127)):
 *   block-scaled   [ceil(out/B0), ceil(in/B1)], B from config.json's
 *                  quantization_config.weight_block_size (DeepSeek);
 *   per-channel    [out, 1] or [out];
 *   per-tensor     [] or [1] or [1, 1];
 * with the experts dimension in front of each when the weight has one.
 * All three are blocks: per-channel is 1 x in, per-tensor out x in.
 * W[i][j] = f32(x[i][j]) * f32(s[i / B0][j / B1]), the product rounded
 * once to F32 (round to nearest even, subnormals kept), then rounded once
 * to the target. The scale multiplies despite its name.
 *
 * MXFP4 (gpt-oss). NAME_blocks U8 [experts, rows, groups, 16], two E2M1
 * values a byte (element 2k in the low nibble), and NAME_scales U8
 * [experts, rows, groups], an E8M0 exponent per 32 values, become NAME
 * [experts, groups * 32, rows]: the layout transformers' dequantization
 * produces (src/transformers/integrations/mxfp4.py,
 * convert_moe_packed_tensors: the nibbles interleaved low first, times
 * 2^(scale - 127), reshaped to [experts, rows, groups * 32], then
 * transpose(1, 2)). A scale byte of 255 (E8M0's NaN) gives NaN, where
 * transformers computes 2^128.
 *
 * Every function works on a range of output rows, so a tool can bound its
 * memory by one tensor and its scales and spread rows over threads; the
 * functions share no state. The product is computed in the default
 * floating-point environment whatever the caller's (on x86 MXCSR is set
 * for the call and restored), so results are the same bits everywhere.
 */
#ifndef ST_QUANT_H
#define ST_QUANT_H

#include "config.h"
#include "file.h"
#include "index.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest block side weight_block_size may give. */
#define ST_QUANT_MAX_BLOCK ((uint64_t)1 << 20)

/* The FP8 block size when config.json names none (DeepSeek-V3). */
#define ST_QUANT_DEFAULT_BLOCK 128

/* A scaled FP8 weight's geometry, filled by st_quant_fp8_layout. */
typedef struct st_quant_fp8 {
	uint64_t experts;                /* 1 for a 2-D weight */
	uint64_t rows, cols;             /* one expert's [out, in] */
	uint64_t block_rows, block_cols; /* B0, B1 (per-channel 1 x in...) */
	uint64_t scale_rows, scale_cols; /* one expert's scale grid */
	st_dtype weight_type, scale_type;
	enum { ST_QUANT_BLOCK, ST_QUANT_CHANNEL, ST_QUANT_TENSOR } kind;
} st_quant_fp8;

/*
 * Parse weight_block_size's JSON value text, e.g. "[128, 128]": exactly
 * two integers from 1 to ST_QUANT_MAX_BLOCK (no sign, fraction or
 * exponent), JSON whitespace allowed around the tokens. Returns ST_OK, or
 * ST_EINVAL with a message quoting the value (0, negative, huge, not an
 * integer, not a pair).
 */
ST_API int st_quant_parse_block_size(const char *json, size_t len, uint64_t *block_rows,
                                     uint64_t *block_cols, st_error *err);

/*
 * Check a weight and its scale tensor and fill *l. b0 x b1 is the block
 * size used when the scale is a block grid. file names both in messages.
 * The weight must be a 2-D or 3-D F8 type (not E8M0); the scale F32, BF16,
 * F16 or F8_E8M0 of one of the shapes above. Returns ST_OK, or ST_EFORMAT
 * with a message naming both tensors, their shapes and the expected scale
 * shape.
 */
ST_API int st_quant_fp8_layout(st_quant_fp8 *l, const st_tensor *weight, const st_tensor *scale,
                               uint64_t b0, uint64_t b1, const char *file, st_error *err);

/*
 * Dequantize output rows [row0, row1) of the weight (rows counted over
 * all experts: experts * rows in all) into dst, dst_type a wide float
 * (st_dtype_is_wide_float). w holds those rows only (row0's first byte
 * first); scale the whole scale tensor. Returns ST_OK, or ST_EINVAL for a
 * bad range or type.
 */
ST_API int st_quant_fp8_dequant(const st_quant_fp8 *l, st_dtype dst_type, void *dst, const void *w,
                                const void *scale, uint64_t row0, uint64_t row1);

/*
 * Quantize rows [row0, row1) of a wide float weight laid out as *l (F8_E4M3
 * with F32 block scales; fill l with st_quant_fp8_block first) into
 * w_out (those rows, one byte each) and scale_out (the F32 scale rows of
 * those block rows, experts counted). row0 must start a block row (within
 * its expert) and row1 end one or the expert. Per block: amax is the
 * largest finite |x| (widened to F32 exactly, an F64 rounded), scale =
 * amax / 448 rounded to F32 (1 for a block of zeros), each value x / scale
 * rounded to F32 and encoded by st_f32_to_f8 (nearest even, saturating;
 * NaN and +-Inf become NaN). Returns ST_OK or ST_EINVAL.
 */
ST_API int st_quant_fp8_quantize(const st_quant_fp8 *l, unsigned char *w_out, float *scale_out,
                                 st_dtype src_type, const void *src, uint64_t row0, uint64_t row1);

/*
 * The scales alone of st_quant_fp8_quantize: the same arguments and
 * checks, scale_out filled with the same bits, no codes computed (a pass
 * over the rows less). Returns ST_OK or ST_EINVAL.
 */
ST_API int st_quant_fp8_scales(const st_quant_fp8 *l, float *scale_out, st_dtype src_type,
                               const void *src, uint64_t row0, uint64_t row1);

/*
 * The layout st_quant_fp8_quantize writes for a weight of experts x rows x
 * cols with b0 x b1 blocks. Returns ST_OK, or ST_EINVAL (zero or oversized
 * block, sizes whose product overflows).
 */
ST_API int st_quant_fp8_block(st_quant_fp8 *l, uint64_t experts, uint64_t rows, uint64_t cols,
                              uint64_t b0, uint64_t b1);

/* An MXFP4 pair's geometry, filled by st_quant_mxfp4_layout. */
typedef struct st_quant_mxfp4 {
	uint64_t experts, rows, groups; /* blocks [experts, rows, groups, 16] */
} st_quant_mxfp4;

/*
 * Check NAME_blocks and NAME_scales (shapes and dtypes as above) and fill
 * *l; the output is [experts, groups * 32, rows]. Returns ST_OK, or
 * ST_EFORMAT with a message naming both tensors.
 */
ST_API int st_quant_mxfp4_layout(st_quant_mxfp4 *l, const st_tensor *blocks,
                                 const st_tensor *scales, const char *file, st_error *err);

/*
 * Dequantize output rows [row0, row1) (of experts * groups * 32, each of
 * rows elements) into dst, a wide float type. blocks and scales are the
 * whole tensors: an output row reads a column of them. Returns ST_OK or
 * ST_EINVAL.
 */
ST_API int st_quant_mxfp4_dequant(const st_quant_mxfp4 *l, st_dtype dst_type, void *dst,
                                  const void *blocks, const void *scales, uint64_t row0,
                                  uint64_t row1);

/* ---- plans: which tensors pair, and what a conversion writes ---------------- */

/*
 * Pairs (by name, in one checkpoint):
 *   X.weight (F8) with X.weight_scale_inv or X.weight_scale   FP8
 *   NAME_blocks (U8) with NAME_scales (U8)                    MXFP4 -> NAME
 * A pair's weight dequantizes to a wide float; its scale is dropped, and
 * an MXFP4 NAME_blocks is renamed NAME (shape [experts, groups * 32,
 * rows]). When a checkpoint has any scale, every F8 X.weight must have
 * one, and every scale its weight; a mismatch is an error naming both
 * tensors.
 *
 * Activation scales (compressed-tensors' and ModelOpt's static FP8:
 * X.input_scale, and the attention's X.k_scale and X.v_scale, a float
 * scalar or [1] each) mean nothing to a dequantized model: in a
 * checkpoint with weight scales they are scales too (ST_QUANT_ROLE_SCALE,
 * counted in n_scales and n_act_scales, their scale index their own),
 * dropped with the others.
 *
 * A converter builds a plan (st_quant_plan_build: the first mismatch is
 * an error); a describer inspects one (st_quant_plan_inspect: every
 * mismatch reported, headers only) and groups its pairs by layout
 * (st_quant_plan_layouts) to describe them.
 */
typedef enum st_quant_role {
	ST_QUANT_ROLE_PLAIN = 0, /* no part of a pair */
	ST_QUANT_ROLE_FP8,       /* a scaled FP8 weight */
	ST_QUANT_ROLE_MXFP4,     /* MXFP4 NAME_blocks */
	ST_QUANT_ROLE_SCALE      /* a weight's scale, or an activation scale */
} st_quant_role;

/* A tensor of a plan, one per checkpoint tensor. */
typedef struct st_quant_tensor {
	st_quant_role role;
	size_t scale;                    /* the scale's checkpoint index; a
	                                    scale's: its weight's */
	st_quant_fp8 fp8;
	st_quant_mxfp4 mx;
	char *out_name;                  /* MXFP4: NAME (malloc'd), else NULL */
	size_t out_name_len;
	uint64_t out_shape[3];           /* MXFP4: [experts, groups * 32, rows] */
	uint64_t n_out;                  /* output elements */
	uint64_t row_len;                /* elements of an output row */
	const unsigned char *data;       /* MXFP4: the mapped blocks */
	const unsigned char *scale_data; /* the mapped scale */
} st_quant_tensor;

typedef struct st_quant_plan {
	st_quant_tensor *t;              /* one per checkpoint tensor */
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
	size_t n_problems;               /* st_quant_plan_inspect: mismatches */
} st_quant_plan;

/*
 * Whether t is named as a weight's scale tensor: X.weight_scale_inv,
 * X.weight_scale, or a U8 NAME_scales (the one list of these names).
 */
ST_API int st_quant_is_scale(const st_tensor *t);

/* Whether d is an F8 type a scaled weight may have (E8M0 is a scale's). */
ST_API int st_quant_is_f8_weight(st_dtype d);

/*
 * Pair the tensors of c; b0 x b1 is weight_block_size. Maps the pairs'
 * data (st_file_data). Returns ST_OK (p to free with st_quant_plan_free
 * whatever the result), or ST_EFORMAT with err naming the tensors of the
 * first mismatch, ST_ENOMEM, or st_file_data's error.
 */
ST_API int st_quant_plan_build(st_quant_plan *p, st_checkpoint *c, uint64_t b0, uint64_t b1,
                               st_error *err);

/* Free what a plan holds (p itself is the caller's); p is zeroed. */
ST_API void st_quant_plan_free(st_quant_plan *p);

/* A mismatch st_quant_plan_inspect found: one line naming both tensors. */
typedef void (*st_quant_problem_fn)(void *ctx, const char *message);

/*
 * st_quant_plan_build's pairing for a description: maps nothing (no
 * data, no scale_data), and reports every mismatch to fn instead of
 * stopping at the first: a weight without its scale, a scale without its
 * weight (or whose weight is no F8 tensor), a pair st_quant_fp8_layout or
 * st_quant_mxfp4_layout rejects (a scale of the wrong dtype, or whose
 * shape does not fit the block size). A weight whose pair does not fit
 * stays ST_QUANT_ROLE_PLAIN; its scale is a ST_QUANT_ROLE_SCALE.
 * p->n_problems counts the mismatches (fn may be NULL to count them
 * only). Returns ST_OK (p to free with st_quant_plan_free), or ST_ENOMEM.
 */
ST_API int st_quant_plan_inspect(st_quant_plan *p, const st_checkpoint *c, uint64_t b0,
                                 uint64_t b1, st_quant_problem_fn fn, void *ctx, st_error *err);

/* The pairs of a plan that share a layout, for descriptions. */
typedef struct st_quant_layout {
	st_quant_role role;              /* ST_QUANT_ROLE_FP8 or _MXFP4 */
	st_dtype weight_type;            /* the F8 type; MXFP4: F4 */
	st_dtype scale_type;             /* F32, BF16, F16 or F8_E8M0 */
	int kind;                        /* ST_QUANT_BLOCK, _CHANNEL, _TENSOR */
	uint64_t block_rows, block_cols; /* ST_QUANT_BLOCK: FP8's B0 x B1;
	                                    MXFP4's 1 x 32 */
	int experts;                     /* 3-D weights, experts first */
	size_t weights;
	uint64_t parameters;             /* the weights' output elements */
	uint64_t scale_bytes;            /* their scales' bytes */
} st_quant_layout;

/*
 * Group the paired weights of p (tensors of c) by layout, in the order
 * of each layout's first weight: *out (malloc'd, free it) holds *n of
 * them (0 and NULL when nothing is paired). Returns ST_OK, ST_ENOMEM.
 */
ST_API int st_quant_plan_layouts(const st_quant_plan *p, const st_checkpoint *c,
                                 st_quant_layout **out, size_t *n);

/*
 * A layout in words, as the conventions name it: "FP8 E4M3, block-scaled
 * 128x128, 61 weights with F32 scales", "FP8 E4M3, scaled per channel,
 * ...", "... per tensor, ...", "... 2 expert weights (3-D) with E8M0
 * scales", "MXFP4 (E2M1 blocks of 32 with E8M0 scales), 1 expert weight".
 * Truncated and NUL-terminated as snprintf.
 */
ST_API void st_quant_layout_describe(const st_quant_layout *l, char *buf, size_t size);

/*
 * What a plan dequantizes, in one line: "dequantized 2 FP8 weights
 * (blocks 128x128); 2 scale tensors (44 bytes) folded in", with MXFP4
 * weights and dropped activation scales when there are any.
 */
ST_API void st_quant_plan_describe(const st_quant_plan *p, char *buf, size_t size);

/* ---- describing: what a checkpoint's scaled weights are ---------------------- */

/*
 * The quantized side of a checkpoint, counted as a description states it:
 * its pairs (st_quant_plan_inspect, with the FP8 block size config.json
 * gives), grouped by layout (st_quant_plan_layouts), and the tensors and
 * bytes of the scales. Headers only.
 */
typedef struct st_quant_summary {
	st_quant_plan plan;              /* the pairing: n_fp8, n_mxfp4,
	                                    n_scales, n_act_scales,
	                                    scale_bytes, parameters (without
	                                    the scales), n_problems */
	st_quant_layout *layouts;        /* one entry a layout */
	size_t n_layouts;
	uint64_t block_rows, block_cols; /* the FP8 block size paired with */
	int block_from_config;           /* config.json gave it */
	uint64_t scale_parameters;       /* elements of the scale tensors
	                                    (saturating) */
	st_error config_error;           /* code ST_EINVAL: config.json's
	                                    weight_block_size cannot be used
	                                    (the message names the file and
	                                    quotes it); ST_EIO: config.json
	                                    is there but cannot be read;
	                                    blocks are then the default;
	                                    else code ST_OK */
} st_quant_summary;

/*
 * Describe ck's scaled weights. The FP8 block size is config.json's
 * quantization_config.weight_block_size (st_quant_config_block_size of
 * the config.json of the folder of ck's files, st_config_read of
 * st_checkpoint_dir), else ST_QUANT_DEFAULT_BLOCK on both sides; a
 * config.json that is there but cannot be read sets config_error (code
 * ST_EIO, the message naming the file and the errno text), as one whose
 * block size cannot be used does. Every weight/scale mismatch goes to fn
 * (may be NULL), except when the block size is config_error's default:
 * mismatches found against a guess are counted (plan.n_problems), not
 * reported. Returns ST_OK when ck has any scaled weight, scale tensor or
 * mismatch (q to free with st_quant_summary_free); ST_ENOTFOUND when it
 * has none, and ST_ENOMEM (q freed already, both). Whatever the result,
 * the block size and config_error stay set (a checkpoint without scaled
 * weights may still have a config.json whose block size is wrong).
 */
ST_API int st_quant_summary_load(st_quant_summary *q, const st_checkpoint *ck,
                                 st_quant_problem_fn fn, void *ctx, st_error *err);

/* Free what q holds (q itself is the caller's); a second call is a no-op. */
ST_API void st_quant_summary_free(st_quant_summary *q);

/* Scratch bytes st_quant_range needs: a partial row and its input. */
#define ST_QUANT_SCRATCH(max_row) ((size_t)(max_row) * 9)

/*
 * Output elements [first, first + n) of a paired weight (of a plan made by
 * st_quant_plan_build), as dtype to (a wide float), into out. An FP8
 * weight's bytes for those elements are in (read by the caller, one byte
 * each); MXFP4 reads its mapping (in unused). scratch holds
 * ST_QUANT_SCRATCH(max_row) bytes. A range may start and end anywhere.
 */
ST_API void st_quant_range(const st_quant_tensor *t, st_dtype to, void *out,
                           const unsigned char *in, uint64_t first, uint64_t n, void *scratch);

/* ---- quantizing: what becomes block-scaled FP8 ------------------------------- */

/*
 * A 2-D floating (F64, F32, F16, BF16) tensor whose name ends in "weight"
 * becomes F8_E4M3, and beside it an F32 tensor named after it with
 * "_scale_inv" appended (DeepSeek's X.weight -> X.weight_scale_inv), one
 * scale per R x C block: [ceil(rows / R), ceil(cols / C)]. Every other
 * tensor is the caller's to copy.
 */
typedef struct st_quant_target {
	st_quant_fp8 l;            /* the output layout */
	st_dtype src_type;
	st_checkpoint *c;          /* the input weight: tensor index of c, */
	size_t index;              /* read a block row at a time */
	char *scale_name;          /* NAME_scale_inv (malloc'd) */
	size_t scale_name_len;
	uint64_t scale_shape[2];
} st_quant_target;

/* Whether tensor t is one that quantization turns into F8 (see above). */
ST_API int st_quant_target_wanted(const st_tensor *t);

/*
 * Prepare tensor i of c (st_quant_target_wanted) with b0 x b1 blocks:
 * its layout and its scale's name and shape. Returns ST_OK, ST_EINVAL
 * (blocks or sizes out of range, naming file and tensor), ST_ENOMEM.
 */
ST_API int st_quant_target_prepare(st_quant_target *q, st_checkpoint *c, size_t i, uint64_t b0,
                                   uint64_t b1, st_error *err);

/* Free what q holds (q itself is the caller's). */
ST_API void st_quant_target_free(st_quant_target *q);

/* Scratch bytes st_quant_target_range needs for q: one block row's input,
 * codes and scales. */
ST_API size_t st_quant_target_scratch(const st_quant_target *q);

/*
 * Output elements [first, first + n) of the F8 weight (scale 0: one byte
 * each) or of its F32 scale grid (scale 1: four bytes each) into out.
 * Each block row the range touches is read (st_checkpoint_read, so memory
 * stays the scratch whatever the tensor's size) and quantized whole into
 * scratch, so a range may start and end anywhere. Returns ST_OK, or an
 * error code with err filled (a failed read names file and tensor).
 */
ST_API int st_quant_target_range(const st_quant_target *q, int scale, unsigned char *out,
                                 uint64_t first, uint64_t n, void *scratch, st_error *err);

#ifdef __cplusplus
}
#endif

#endif
