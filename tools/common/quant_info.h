/*
 * quant_info.h - stinfo's words for a quantized checkpoint: its scaled
 * weights paired with their scales (st_quant_plan_inspect), grouped by
 * layout, as summary lines, a JSON member and --check problems.
 *
 * The FP8 block size is config.json's quantization_config
 * .weight_block_size, config.json read from the folder of the
 * checkpoint's files as the inventory reads it (st_checkpoint_dir), else
 * 128 x 128. Reads headers only.
 *
 * Not part of libst; tool code, so it prints (to the FILE or callback it
 * is given).
 */
#ifndef ST_QUANT_INFO_H
#define ST_QUANT_INFO_H

#include <stdio.h>

#include <st.h>

typedef struct quant_info {
	st_quant_plan plan;
	st_quant_layout *layouts;
	size_t n_layouts;
	uint64_t block_rows, block_cols; /* the FP8 block size paired with */
	int block_from_config;           /* config.json gave it */
	char config_error[1000];         /* a weight_block_size config.json
	                                    gives that cannot be used, or "" */
	uint64_t scale_parameters;       /* elements of the scale tensors */
} quant_info;

/*
 * Pair ck's weights and scales. Every mismatch goes to fn (may be NULL).
 * Returns 1 when ck has any scaled weight, scale tensor or mismatch (q to
 * free with quant_info_free), 0 when it has none (q freed already), or
 * -1 when out of memory.
 */
int quant_info_load(quant_info *q, const st_checkpoint *ck, st_quant_problem_fn fn, void *ctx);
void quant_info_free(quant_info *q);

/*
 * The summary lines:
 *   quantized:   FP8 E4M3, block-scaled 128x128, 61 weights with F32 scales
 *                (one line a layout)
 *     weights:   N parameters, not counting the scales
 *     scales:    N tensors, N parameters, N B
 *     problems:  N (stinfo --check names them)       when there are any
 *     config:    the config.json error                when there is one
 */
void quant_info_print(FILE *f, const quant_info *q);

/* The JSON member's value (an object; see man/stinfo.1). */
void quant_info_json(FILE *f, const quant_info *q);

/*
 * For --check: every weight/scale mismatch of PATH, and a config.json
 * weight_block_size that cannot be used, as one error each to fn.
 * Returns the number of errors (0 when PATH does not open: its errors
 * are reported elsewhere).
 */
int quant_info_check(const char *path, st_problem_fn fn, void *ctx);

#endif
