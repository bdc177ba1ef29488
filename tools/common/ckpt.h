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
/*
 * The same, '-' opened header_only when the data is not needed (see
 * ckpt_open_stdin); ckpt_open keeps a stream's data.
 */
int ckpt_open_for(st_checkpoint **ck, const char *path, int header_only);
/* The same reading a PyTorch checkpoint's sub-dictionary (--key). */
int ckpt_open_key(st_checkpoint **ck, const char *path,
                  const char *const *keys, size_t n_keys);

/*
 * '-' as a checkpoint PATH: a safetensors file read from standard input
 * (a pipe, or a file redirected), named CKPT_STDIN_NAME in every message
 * and output. A stream's data is copied into an unlinked temporary file
 * under $TMPDIR (else /tmp) when it is needed; header-only answers count
 * it without keeping it (st_file_open_fd).
 */
#define CKPT_STDIN_NAME "<stdin>"
int ckpt_is_stdin(const char *path);
/*
 * Open standard input as a one-file checkpoint; header_only: the data is
 * not needed. Exits 2 when standard input is a terminal, or with n_keys
 * (--key) given: a stream is read whole. Returns ST_OK or an error with
 * err saying why (naming CKPT_STDIN_NAME).
 */
int ckpt_open_stdin(st_checkpoint **ck, int header_only, size_t n_keys, st_error *err);
/* Exit 2 when standard input is a terminal (no checkpoint comes from one). */
void ckpt_check_stdin(void);
/*
 * Exit 2 saying that what (e.g. "stconvert IN") reads a path and cannot
 * read '-', when path is "-".
 */
void ckpt_refuse_stdin(const char *path, const char *what);

#endif
