/*
 * ckpt.h - what the tools share about checkpoints: opening with the
 * tools' error report. Not part of libst (widening elements to double is
 * st_dtype_widen, st/dtype.h).
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

#endif
