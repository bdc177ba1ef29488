/*
 * dequant.h - the FP8 block size of a checkpoint's config.json for the
 * tools (stconvert, stdiff): the default when there is no config or it
 * is not a JSON object, an error naming the file when it is unreadable or
 * its block size hostile. The pairing of scaled weights with their
 * scales and their dequantization are libst's (st/quant.h,
 * st_quant_plan_*).
 */
#ifndef ST_TOOLS_DEQUANT_H
#define ST_TOOLS_DEQUANT_H

#include <st.h>

/*
 * The FP8 block size a config.json's text gives (file names it in
 * messages): quantization_config.weight_block_size
 * (st_quant_config_block_size), or ST_QUANT_DEFAULT_BLOCK on both sides
 * when the text is not a JSON object or names none. Returns 1 when it
 * names one, 0 when not, or -1 with err naming file (a hostile block
 * size).
 */
int dequant_config_text_block_size(const char *text, size_t len, const char *file, uint64_t *b0,
                                   uint64_t *b1, st_error *err);

/*
 * The same for the config.json of the checkpoint whose folder is dir
 * (st_config_read), the default when there is none. Returns 1, 0, or -1
 * with err naming config.json (unreadable, larger than
 * ST_CONFIG_MAX_BYTES, a hostile block size).
 */
int dequant_config_block_size(const char *dir, uint64_t *b0, uint64_t *b1, st_error *err);

#endif
