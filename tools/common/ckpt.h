/*
 * ckpt.h - what the tools share about checkpoints and their tensor data:
 * opening with the tools' error report, widening elements to double.
 * Not part of libst.
 */
#ifndef ST_CKPT_H
#define ST_CKPT_H

#include <stddef.h>

#include <st.h>

/*
 * Open a checkpoint PATH (file, shard index, snapshot directory or PyTorch
 * .bin: ST_OPEN_TORCH). Returns CLI_OK, or CLI_ERROR after printing why
 * (cli_error_path).
 */
int ckpt_open(st_checkpoint **ck, const char *path);
/* The same reading a PyTorch checkpoint's sub-dictionary (--key). */
int ckpt_open_key(st_checkpoint **ck, const char *path,
                  const char *const *keys, size_t n_keys);

/*
 * The dtypes whose elements are whole bytes and are compared as numbers
 * (stdiff): the floats of 16 bits or more, the integers and BOOL.
 */
int ckpt_is_numeric(st_dtype d);

/*
 * Whether ckpt_widen takes a dtype: ckpt_is_numeric's, and the 8- and
 * 4-bit floats (the five F8 types and F4), decoded (stinfo --stats).
 */
int ckpt_has_values(st_dtype d);

/*
 * Widen n little-endian elements of a ckpt_has_values dtype to double.
 * Floats go through st_convert (exact: an F8 or F4 code decodes to the
 * value the OCP specification gives it; F4 packs two elements a byte,
 * element 2i in the low nibble, and n must be even); integers are read
 * byte by byte, so the host's endianness does not matter, and I64/U64
 * beyond 2^53 round to nearest; a BOOL byte is 1 when it is not zero, as
 * numpy casts it.
 */
void ckpt_widen(st_dtype d, const void *src, double *dst, size_t n);

#endif
