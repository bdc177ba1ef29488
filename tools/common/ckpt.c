/*
 * ckpt.c - checkpoint helpers the tools share (see ckpt.h): the open that
 * reports its error, widening to double. It reads no file itself; libst
 * does.
 */
#include "common/ckpt.h"

#include <endian.h>
#include <string.h>

#include "common/cli.h"

int ckpt_open(st_checkpoint **ck, const char *path)
{
	return ckpt_open_key(ck, path, NULL, 0);
}

int ckpt_open_key(st_checkpoint **ck, const char *path,
                  const char *const *keys, size_t n_keys)
{
	st_error err;
	memset(&err, 0, sizeof err);
	int rc = st_checkpoint_open_key(ck, path, ST_OPEN_TORCH, keys, n_keys,
	                                &err);
	if (rc == ST_OK)
		return CLI_OK;
	err.code = rc;
	cli_error_path(path, &err);
	return CLI_ERROR;
}

int ckpt_is_numeric(st_dtype d)
{
	switch (d) {
	case ST_DTYPE_F64: case ST_DTYPE_F32: case ST_DTYPE_F16:
	case ST_DTYPE_BF16: case ST_DTYPE_BOOL: case ST_DTYPE_U8:
	case ST_DTYPE_I8: case ST_DTYPE_U16: case ST_DTYPE_I16:
	case ST_DTYPE_U32: case ST_DTYPE_I32: case ST_DTYPE_U64:
	case ST_DTYPE_I64:
		return 1;
	default:
		return 0;
	}
}

int ckpt_has_values(st_dtype d)
{
	switch (d) {
	case ST_DTYPE_F8_E4M3: case ST_DTYPE_F8_E5M2:
	case ST_DTYPE_F8_E4M3FNUZ: case ST_DTYPE_F8_E5M2FNUZ:
	case ST_DTYPE_F8_E8M0: case ST_DTYPE_F4:
		return 1;
	default:
		return ckpt_is_numeric(d);
	}
}

/* One loop per type, so each is a plain load the compiler can vectorize. */
#define WIDEN(T, le)                                          \
	for (size_t i = 0; i < n; i++) {                      \
		T v;                                          \
		memcpy(&v, p + sizeof v * i, sizeof v);       \
		dst[i] = (double)(T)le(v);                    \
	}

void ckpt_widen(st_dtype d, const void *src, double *dst, size_t n)
{
	const unsigned char *p = src;
	switch (d) {
	case ST_DTYPE_F64: case ST_DTYPE_F32: case ST_DTYPE_F16:
	case ST_DTYPE_BF16: case ST_DTYPE_F8_E4M3: case ST_DTYPE_F8_E5M2:
	case ST_DTYPE_F8_E4M3FNUZ: case ST_DTYPE_F8_E5M2FNUZ:
	case ST_DTYPE_F8_E8M0: case ST_DTYPE_F4:
		st_convert(ST_DTYPE_F64, dst, d, src, n, NULL);
		break;
	case ST_DTYPE_BOOL:
		for (size_t i = 0; i < n; i++)
			dst[i] = p[i] != 0;
		break;
	case ST_DTYPE_U8: WIDEN(uint8_t, ); break;
	case ST_DTYPE_I8: WIDEN(int8_t, ); break;
	case ST_DTYPE_U16: WIDEN(uint16_t, le16toh); break;
	case ST_DTYPE_I16: WIDEN(int16_t, le16toh); break;
	case ST_DTYPE_U32: WIDEN(uint32_t, le32toh); break;
	case ST_DTYPE_I32: WIDEN(int32_t, le32toh); break;
	case ST_DTYPE_U64: WIDEN(uint64_t, le64toh); break;
	case ST_DTYPE_I64: WIDEN(int64_t, le64toh); break;
	default: break;
	}
}
