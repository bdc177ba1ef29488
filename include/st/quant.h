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

#ifdef __cplusplus
}
#endif

#endif
