/*
 * npy.c - NumPy .npy files, format 1.0 (st/npy.h): the header's dict
 * literal as numpy/lib/format.py writes it, the data through st_atomic.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAX_DIMS 64

const char *st_npy_descr(st_dtype d)
{
	switch (d) {
	case ST_DTYPE_F64: return "<f8";
	case ST_DTYPE_F32: return "<f4";
	case ST_DTYPE_F16: return "<f2";
	case ST_DTYPE_C64: return "<c8";
	case ST_DTYPE_I64: return "<i8";
	case ST_DTYPE_I32: return "<i4";
	case ST_DTYPE_I16: return "<i2";
	case ST_DTYPE_I8: return "|i1";
	case ST_DTYPE_U64: return "<u8";
	case ST_DTYPE_U32: return "<u4";
	case ST_DTYPE_U16: return "<u2";
	case ST_DTYPE_U8: return "|u1";
	case ST_DTYPE_BOOL: return "|b1";
	default: return NULL;
	}
}

/* The bytes of an array of d and shape into *bytes; -1 past 2^64. */
static int array_bytes(st_dtype d, const uint64_t *shape, unsigned ndim, uint64_t *bytes)
{
	uint64_t n = st_dtype_bits(d) / 8;
	for (unsigned i = 0; i < ndim; i++)
		if (__builtin_mul_overflow(n, shape[i], &n))
			return -1;
	*bytes = n;
	return 0;
}

int st_npy_header(st_dtype d, const uint64_t *shape, unsigned ndim, char *buf, size_t size,
                  size_t *len, st_error *err)
{
	const char *descr = (unsigned)d < ST_DTYPE_COUNT ? st_npy_descr(d) : NULL;
	uint64_t bytes;
	if (!descr)
		return st__error(err, ST_EINVAL, "no numpy dtype for %s",
		                 (unsigned)d < ST_DTYPE_COUNT ? st_dtype_name(d) : "this dtype");
	if (ndim > NPY_MAX_DIMS || array_bytes(d, shape, ndim, &bytes) != 0)
		return st__error(err, ST_EINVAL,
		                 "an array of %u dimensions too large for a .npy file", ndim);
	/* 10 bytes of preamble, the dict, spaces, '\n': 64 * k bytes. */
	char dict[64 + NPY_MAX_DIMS * 22];
	int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
	                 descr);
	for (unsigned i = 0; i < ndim; i++)
		n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%llu", i ? ", " : "",
		              (unsigned long long)shape[i]);
	n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", ndim == 1 ? "," : "");
	size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
	if (total > size)
		return st__error(err, ST_EINVAL, "a .npy header of %zu bytes does not fit in %zu",
		                 total, size);
	size_t hlen = total - 10;
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (char)(hlen & 0xff);
	buf[9] = (char)(hlen >> 8);
	memcpy(buf + 10, dict, (size_t)n);
	memset(buf + 10 + n, ' ', total - 10 - (size_t)n - 1);
	buf[total - 1] = '\n';
	*len = total;
	return ST_OK;
}

struct st_npy_writer {
	st_atomic *a;
	uint64_t want, done; /* data bytes: the array's, and written */
};

int st_npy_writer_open(st_npy_writer **out, const char *path, st_dtype d, const uint64_t *shape,
                       unsigned ndim, st_error *err)
{
	*out = NULL;
	char head[64 + 64 + NPY_MAX_DIMS * 22];
	size_t hlen;
	int rc = st_npy_header(d, shape, ndim, head, sizeof head, &hlen, err);
	if (rc != ST_OK)
		return rc;
	st_npy_writer *w = calloc(1, sizeof *w);
	if (!w)
		return st__error(err, ST_ENOMEM, "out of memory");
	array_bytes(d, shape, ndim, &w->want); /* checked by st_npy_header */
	rc = st_atomic_open(&w->a, path, err);
	if (rc == ST_OK)
		rc = st_atomic_write(w->a, head, hlen, err);
	if (rc != ST_OK) {
		st_npy_writer_free(w);
		return rc;
	}
	*out = w;
	return ST_OK;
}

int st_npy_writer_write(st_npy_writer *w, const void *data, size_t n, st_error *err)
{
	if (n > w->want - w->done)
		return st__error(err, ST_EINVAL, "%s: more data than the array's %llu bytes",
		                 st_atomic_path(w->a), (unsigned long long)w->want);
	int rc = st_atomic_write(w->a, data, n, err);
	if (rc == ST_OK)
		w->done += n;
	return rc;
}

int st_npy_writer_finish(st_npy_writer *w, st_error *err)
{
	if (w->done != w->want)
		return st__error(err, ST_EINVAL, "%s: %llu of the array's %llu bytes written",
		                 st_atomic_path(w->a), (unsigned long long)w->done,
		                 (unsigned long long)w->want);
	return st_atomic_commit(w->a, err);
}

void st_npy_writer_free(st_npy_writer *w)
{
	if (!w)
		return;
	st_atomic_close(w->a);
	free(w);
}
