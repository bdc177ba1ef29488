/*
 * quant_info.h - stinfo's words for a quantized checkpoint: what libst's
 * st_quant_summary_load counts (its scaled weights paired with their
 * scales, grouped by layout, with the FP8 block size config.json gives)
 * as summary lines, a JSON member and --check problems.
 *
 * Not part of libst; tool code, so it prints (to the FILE or callback it
 * is given).
 */
#ifndef ST_QUANT_INFO_H
#define ST_QUANT_INFO_H

#include <stdio.h>

#include <st.h>

/*
 * The summary lines:
 *   quantized:   FP8 E4M3, block-scaled 128x128, 61 weights with F32 scales
 *                (one line a layout)
 *     weights:   N parameters, not counting the scales
 *     scales:    N tensors, N parameters, N B
 *     problems:  N (stinfo --check names them)       when there are any
 *     config:    the config.json error                when there is one
 */
void quant_info_print(FILE *f, const st_quant_summary *q);

/* The JSON member's value (an object; see man/stinfo.1). */
void quant_info_json(FILE *f, const st_quant_summary *q);

/*
 * For --check: every weight/scale mismatch of ck, and a config.json
 * weight_block_size that cannot be used, as one error each to fn.
 * Returns the number of errors, or -1 with err's one line when
 * config.json is there but cannot be read (an I/O error: no answer).
 */
int quant_info_check(const st_checkpoint *ck, st_problem_fn fn, void *ctx, st_error *err);

#endif
