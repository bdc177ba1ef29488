/*
 * quantize.h - stconvert --block R,C: the block size of --to f8_e4m3, in
 * the tools' words. What quantizing selects and computes is libst's
 * (st/quant.h, st_quant_target_*).
 */
#ifndef ST_TOOLS_QUANTIZE_H
#define ST_TOOLS_QUANTIZE_H

#include <st.h>

/*
 * Parse --block's "R,C" (two integers from 1 to ST_QUANT_MAX_BLOCK).
 * Returns ST_OK or ST_EINVAL with a one-line message quoting arg.
 */
int quantize_parse_block(const char *arg, uint64_t *b0, uint64_t *b1, st_error *err);

#endif
