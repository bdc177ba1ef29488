/*
 * st/config.h - a model's config.json: reading it from a checkpoint's
 * directory (and the FP8 block size it gives), and editing its text where
 * a conversion changes what it describes (torch_dtype,
 * quantization_config).
 *
 * What it is: the one reader of config.json in libst and the tools, with
 * one size cap (ST_CONFIG_MAX_BYTES), and editors that splice the values
 * they change into the text, so that every other byte (key order,
 * indentation, number spelling) stays as the file had it. What it is not:
 * a JSON parser for the config's meaning (the tools and model code parse
 * what they need), nor a validator beyond what the edits need.
 *
 * Contract: the text is read whole into a malloc'd buffer the caller
 * frees; no function keeps state or prints. A missing config.json is
 * ST_ENOTFOUND, which a caller may take for "no config"; every other
 * failure is an error whose message names the file and says what is
 * wrong.
 */
#ifndef ST_CONFIG_H
#define ST_CONFIG_H

#include "dtype.h"
#include "error.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest config.json read: a config is a few KiB, this is not one. */
#define ST_CONFIG_MAX_BYTES ((size_t)64 << 20)

/*
 * The path of the config.json of path: path/config.json when path is a
 * directory (or ends in '/'), else the config.json beside the file path
 * names (in its directory; "config.json" for a bare file name). Whether it
 * exists is not checked. *out is malloc'd. Returns ST_OK, ST_ENOMEM.
 */
ST_API int st_config_path(const char *path, char **out, st_error *err);

/*
 * Read a config file by its own path (config.json, generation_config.json):
 * at most ST_CONFIG_MAX_BYTES. *text (malloc'd, NUL-terminated; free it)
 * and *len receive it. Returns ST_OK; ST_ENOTFOUND ("FILE: No such file or
 * directory", sys_errno ENOENT)
 * when it does not exist; ST_EFORMAT ("FILE: larger than 64 MiB, not a
 * config file") past the cap; ST_EIO ("FILE: cannot read: <strerror>")
 * when it cannot be opened or read or is not a regular file; ST_ENOMEM.
 */
ST_API int st_config_read_file(const char *file, char **text, size_t *len,
                               st_error *err);

/*
 * Read the config.json of path (st_config_path) as st_config_read_file
 * does. *file (may be NULL; malloc'd, free it) receives the config's path
 * whatever the result, for the caller's messages (NULL out of memory).
 * path NULL (st_checkpoint_dir of a checkpoint read from a stream) has no
 * config.json: ST_ENOTFOUND, *file NULL.
 */
ST_API int st_config_read(const char *path, char **text, size_t *len,
                          char **file, st_error *err);

/*
 * Set torch_dtype in the text of a config.json: every "torch_dtype" key
 * holding a string or null, at any depth (multimodal configs nest them),
 * and a top-level "dtype" string (newer transformers' name), become
 * "<dtype>"; every other byte (order, indentation, numbers) is kept. With
 * neither key at the top level, "torch_dtype" is added as the last member,
 * formatted like the first ones. *out (malloc'd; free it) and *out_len
 * receive the text. Returns ST_OK, ST_EFORMAT (not one JSON object),
 * ST_ENOMEM.
 */
ST_API int st_config_set_dtype(const char *text, size_t len,
                               const char *dtype, char **out,
                               size_t *out_len, st_error *err);
/* torch's name for a float dtype ("float32", "float16", "bfloat16"), or NULL. */
ST_API const char *st_torch_dtype_name(st_dtype dtype);

/*
 * The block size a config.json gives: quantization_config's
 * weight_block_size (as st_quant_parse_block_size reads it), *found 1; or
 * ST_QUANT_DEFAULT_BLOCK on both sides, *found 0, when it has none.
 * Returns ST_OK, ST_EFORMAT (not a JSON object), ST_EINVAL (a hostile
 * weight_block_size, in one line).
 */
ST_API int st_quant_config_block_size(const char *config, size_t len, uint64_t *block_rows,
                                      uint64_t *block_cols, int *found, st_error *err);

/*
 * The FP8 block size of the config.json of path (st_config_read), the one
 * reading of it every libst operation makes: st_quant_config_block_size's
 * answer, *found (may be NULL) 1 when the config names one; or
 * ST_QUANT_DEFAULT_BLOCK on both sides, *found 0, when there is no
 * config.json, it is not a JSON object or it names none. Returns ST_OK;
 * ST_EINVAL ("CONFIG: quantization_config.weight_block_size ...", CONFIG
 * the config's path: a hostile block size); st_config_read's ST_EFORMAT,
 * ST_EIO (an unreadable config.json), ST_ENOMEM. On an error both sides
 * are the default and *found 0.
 */
ST_API int st_config_read_block_size(const char *path, uint64_t *block_rows, uint64_t *block_cols,
                                     int *found, st_error *err);

/*
 * A config.json for the dequantized checkpoint: torch_dtype set as
 * st_config_set_dtype does, and the top-level quantization_config member
 * removed (the loaders would otherwise take the weights for quantized
 * ones); every other byte kept. torch_dtype NULL keeps torch_dtype as
 * it is. *out is malloc'd. Returns ST_OK, ST_EFORMAT, ST_ENOMEM.
 */
ST_API int st_quant_config_dequantized(const char *config, size_t len, const char *torch_dtype,
                                       char **out, size_t *out_len, st_error *err);

/*
 * A config.json for a checkpoint quantized by st_quant_fp8_quantize with
 * b0 x b1 blocks: any top-level quantization_config removed, and
 * DeepSeek's {"activation_scheme": "dynamic", "fmt": "e4m3",
 * "quant_method": "fp8", "weight_block_size": [b0, b1]} added as the last
 * member; every other byte kept. *out is malloc'd. Returns ST_OK,
 * ST_EFORMAT (not a JSON object), ST_EINVAL (a block side 0 or above
 * ST_QUANT_MAX_BLOCK), ST_ENOMEM.
 */
ST_API int st_quant_config_fp8(const char *config, size_t len, uint64_t b0, uint64_t b1,
                               char **out, size_t *out_len, st_error *err);

#ifdef __cplusplus
}
#endif

#endif
