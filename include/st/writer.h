/*
 * st/writer.h - writing one safetensors file: streaming, canonical, atomic.
 *
 * Recipe:
 *   1. st_writer_new(&w, &err)
 *   2. st_writer_set_meta(w, "format", "pt", &err)          optional
 *      st_writer_add(w, name, len, ST_DTYPE_F32, ndim, shape, &err)  per tensor
 *   3. st_writer_open(w, "out.safetensors", &err)
 *      creates a temporary file beside the target and writes the header
 *   4. for (i = 0; i < st_writer_n_tensors(w); i++)          canonical order
 *          st_writer_write(w, bytes, n, &err)                 any chunking
 *   5. st_writer_finish(w, &err)     checks every byte came, fsync, rename
 *   6. st_writer_free(w)             before finish: removes the temporary
 *
 * The output is canonical (doc/format.md): compact JSON, __metadata__ first
 * with sorted keys and "format":"pt" unless the caller sets "format",
 * tensors by descending dtype rank then name bytes, offsets contiguous from
 * 0, header padded with spaces to a multiple of 8. The same tensors give
 * the same bytes as the reference writer.
 */
#ifndef ST_WRITER_H
#define ST_WRITER_H

#include "file.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_writer st_writer;

ST_API int st_writer_new(st_writer **out, st_error *err);
/*
 * Free the writer. If st_writer_finish did not succeed, the temporary file
 * is removed and an existing target is left untouched. NULL does nothing.
 */
ST_API void st_writer_free(st_writer *w);

/* Add or replace a metadata entry (NUL-terminated UTF-8). Before open. */
ST_API int st_writer_set_meta(st_writer *w, const char *key,
                              const char *value, st_error *err);
/*
 * Declare a tensor; name is name_len bytes of UTF-8 (may hold NUL).
 * Returns ST_EINVAL for a duplicate name, bad UTF-8, too many dims or a
 * size that overflows; ST_ESTATE after open.
 */
ST_API int st_writer_add(st_writer *w, const char *name, size_t name_len,
                         st_dtype dtype, unsigned ndim,
                         const uint64_t *shape, st_error *err);

/*
 * The canonical header: 8-byte length + padded JSON, as it will be written.
 * *buf is owned by the writer, valid until the next add/set_meta/free.
 */
ST_API int st_writer_header(st_writer *w, const void **buf, size_t *len,
                            st_error *err);

/*
 * The canonical order of n tensors, the order a writer writes them in:
 * descending dtype rank, then name bytes (only name, name_len and dtype of
 * each are read). order[k] receives the index into t of the k-th; equal
 * keys keep their order. For planning without building a writer.
 * Returns ST_OK, ST_ENOMEM.
 */
ST_API int st_canonical_order(const st_tensor *t, size_t n, size_t *order,
                              st_error *err);

/* Tensors in write (canonical) order, offsets filled in; i at or past
 * st_writer_n_tensors aborts (libst.3, "Misuse"). */
ST_API size_t st_writer_n_tensors(st_writer *w);
ST_API const st_tensor *st_writer_tensor(st_writer *w, size_t i);

/*
 * Start writing to path: a temporary file is created in path's directory
 * (so the final rename is atomic; named and cleaned up as st/atomic.h
 * says) and the header written to it.
 * Returns ST_OK, ST_EINVAL (empty path, or a directory), ST_ESTATE (opened
 * twice), ST_EIO, ST_ENOMEM.
 */
ST_API int st_writer_open(st_writer *w, const char *path, st_error *err);
/*
 * Start writing to the open descriptor fd instead (standard output, a
 * pipe): the header, then the data in order, with no temporary file, no
 * rename and no fsync; fd stays the caller's (not closed). name is used in
 * messages ("<stdout>"). A reader of a pipe sees a partial file if the
 * writer stops early: the caller must say so (exit status). Returns as
 * st_writer_open.
 */
ST_API int st_writer_open_fd(st_writer *w, int fd, const char *name, st_error *err);
/* The temporary file's path while open (for a signal handler to unlink);
 * NULL after st_writer_open_fd. */
ST_API const char *st_writer_temp_path(const st_writer *w);

/*
 * Give the file these permission bits (before open; applied to the
 * temporary with fchmod, so the file never has others). Without it a new
 * file gets 0666 minus the umask and a replaced one keeps its bits.
 * Returns ST_OK, ST_ESTATE (after open).
 */
ST_API int st_writer_set_mode(st_writer *w, unsigned mode, st_error *err);

/*
 * Start writeback of the file (sync_file_range, not waiting for it) each
 * time `every` more bytes have been written, so that the disk works while
 * the data is still coming and st_writer_finish's fsync has little left to
 * wait for. 0 (the default) never does. Any time before finish.
 */
ST_API void st_writer_set_writeback(st_writer *w, uint64_t every);

/*
 * Append the next n bytes of tensor data, in canonical order; chunks may
 * span tensors. Returns ST_EINVAL when more bytes come than declared,
 * ST_EIO when the write fails (e.g. disk full).
 */
ST_API int st_writer_write(st_writer *w, const void *data, size_t n,
                           st_error *err);

/*
 * Complete the file: every declared byte must have been written; fsync,
 * rename over path, fsync the directory. Returns ST_OK, ST_ESTATE (bytes
 * missing), ST_EIO.
 */
ST_API int st_writer_finish(st_writer *w, st_error *err);

#ifdef __cplusplus
}
#endif

#endif
