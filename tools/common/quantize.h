/*
 * quantize.h - stconvert --to f8_e4m3: which tensors become block-scaled
 * FP8 and the quantization of their elements in ranges, cut to the tools'
 * pipeline. The arithmetic is libst's (st_quant_fp8_quantize).
 *
 * A 2-D floating (F64, F32, F16, BF16) tensor whose name ends in "weight"
 * becomes F8_E4M3, and beside it an F32 tensor named after it with
 * "_scale_inv" appended (DeepSeek's X.weight -> X.weight_scale_inv), one
 * scale per R x C block: [ceil(rows / R), ceil(cols / C)]. Every other
 * tensor is the caller's to copy.
 */
#ifndef ST_TOOLS_QUANTIZE_H
#define ST_TOOLS_QUANTIZE_H

#include <st.h>

typedef struct qz_tensor {
	st_quant_fp8 l;            /* the output layout */
	st_dtype src_type;
	st_checkpoint *c;          /* the input weight: tensor index of c, */
	size_t index;              /* read a block row at a time */
	char *scale_name;          /* NAME_scale_inv (malloc'd) */
	size_t scale_name_len;
	uint64_t scale_shape[2];
} qz_tensor;

/*
 * Parse --block's "R,C" (two integers from 1 to ST_QUANT_MAX_BLOCK).
 * Returns ST_OK or ST_EINVAL with a one-line message quoting arg.
 */
int qz_parse_block(const char *arg, uint64_t *b0, uint64_t *b1, st_error *err);

/* Whether tensor t is one that quantization turns into F8 (see above). */
int qz_wanted(const st_tensor *t);

/*
 * Prepare tensor i of c (qz_wanted) with b0 x b1 blocks: name its scale.
 * Returns 0, or -1 with err set.
 */
int qz_prepare(qz_tensor *q, st_checkpoint *c, size_t i, uint64_t b0, uint64_t b1,
               st_error *err);
void qz_free(qz_tensor *q);

/* Scratch bytes qz_range needs for q: one block row's input, codes and scales. */
size_t qz_scratch(const qz_tensor *q);

/*
 * Output elements [first, first + n) of the F8 weight (scale 0: one byte
 * each) or of its F32 scale grid (scale 1: four bytes each) into out.
 * Each block row the range touches is read (st_checkpoint_read, so memory
 * stays the scratch whatever the tensor's size) and quantized whole into
 * scratch, so a range may start and end anywhere. Returns ST_OK, or an
 * error code with err filled (a failed read names file and tensor).
 */
int qz_range(const qz_tensor *q, int scale, unsigned char *out, uint64_t first, uint64_t n,
             void *scratch, st_error *err);

#endif
