/*
 * st/npy.h - writing a NumPy .npy file (format version 1.0): one array,
 * C order, little-endian, atomic.
 *
 * The format (numpy/lib/format.py, NEP 1): the magic "\x93NUMPY", the
 * version bytes 1 and 0, a little-endian uint16 HEADER_LEN, then
 * HEADER_LEN bytes of an ASCII Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ended by '\n' so that the data starts at a
 * multiple of 64 bytes, then the elements in C order. A 0-d array's shape
 * is (), a 1-d one's (n,).
 *
 * Recipe:
 *   1. st_npy_writer_open(&w, "x.npy", ST_DTYPE_F32, shape, ndim, &err)
 *   2. st_npy_writer_write(w, bytes, n, &err)   any chunking, little-endian
 *   3. st_npy_writer_finish(w, &err)            checks every byte came,
 *                                               fsync, rename
 *   4. st_npy_writer_free(w)                    before finish: removes the
 *                                               temporary, the target is
 *                                               as it was
 *
 * Only dtypes numpy has: st_npy_descr names them. BF16, the F8, F6 and F4
 * types have no numpy dtype; a caller decodes them (st_dtype_widen) and
 * writes F32.
 */
#ifndef ST_NPY_H
#define ST_NPY_H

#include "dtype.h"
#include "error.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest header st_npy_header writes (format 1.0's u16 length). */
#define ST_NPY_HEADER_MAX ((size_t)65535 + 10)

/*
 * numpy's dtype string of d: "<f8", "<f4", "<f2", "<c8", "<i8".."|i1",
 * "<u8".."|u1", "|b1"; NULL for a dtype numpy has none of (BF16, the F8,
 * F6 and F4 types).
 */
ST_API const char *st_npy_descr(st_dtype d);

/*
 * The whole .npy header (magic to the '\n' before the data) of an array
 * of dtype d and shape (ndim dimensions, at most 64) into buf (size
 * bytes), its length into *len: a multiple of 64. Returns ST_OK; ST_EINVAL
 * (d without a numpy dtype, ndim above 64, buf too small, or the array's
 * bytes past 2^64).
 */
ST_API int st_npy_header(st_dtype d, const uint64_t *shape, unsigned ndim, char *buf, size_t size,
                         size_t *len, st_error *err);

typedef struct st_npy_writer st_npy_writer;

/*
 * Start writing path (atomically, st/atomic.h): the header for dtype d
 * and shape is written to a temporary beside it. Returns ST_OK (*out to
 * free with st_npy_writer_free), st_npy_header's ST_EINVAL, st_atomic_open's
 * ST_EIO, ST_ENOMEM.
 */
ST_API int st_npy_writer_open(st_npy_writer **out, const char *path, st_dtype d,
                              const uint64_t *shape, unsigned ndim, st_error *err);
/* Append n bytes of elements. ST_OK, ST_EINVAL (more than the array
 * holds), ST_EIO. */
ST_API int st_npy_writer_write(st_npy_writer *w, const void *data, size_t n, st_error *err);
/* Complete: ST_EINVAL when fewer bytes came than the array holds (the
 * target untouched), else st_atomic_commit's result. */
ST_API int st_npy_writer_finish(st_npy_writer *w, st_error *err);
/* Free; before a successful finish, remove the temporary. NULL: nothing. */
ST_API void st_npy_writer_free(st_npy_writer *w);

#ifdef __cplusplus
}
#endif

#endif
