/*
 * dtype_values.c - what a dtype's bytes hold as values (st/dtype.h, the
 * block at its end): how elements pack into whole bytes, which dtypes
 * hold numbers, and widening their elements to double.
 */
#include "internal.h"

#include <endian.h>
#include <string.h>

void st_dtype_group(st_dtype d, unsigned *bytes, unsigned *elems)
{
	unsigned bits = st_dtype_bits(d);
	if (bits % 8 == 0) {
		*bytes = bits / 8;
		*elems = 1;
	} else if (bits == 4) {
		*bytes = 1;
		*elems = 2;
	} else { /* 6 bits: four elements in three bytes */
		*bytes = 3;
		*elems = 4;
	}
}

int st_dtype_is_numeric(st_dtype d)
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

int st_dtype_has_values(st_dtype d)
{
	switch (d) {
	case ST_DTYPE_F8_E4M3: case ST_DTYPE_F8_E5M2:
	case ST_DTYPE_F8_E4M3FNUZ: case ST_DTYPE_F8_E5M2FNUZ:
	case ST_DTYPE_F8_E8M0: case ST_DTYPE_F4:
		return 1;
	default:
		return st_dtype_is_numeric(d);
	}
}

/*
 * One loop per type, so each is a plain load the compiler can vectorize.
 * The bytes are read as the unsigned U and put in host order, then copied
 * into the T of the same width (the bits, not a conversion of the value).
 */
#define WIDEN(T, U, le)                                       \
	for (size_t i = 0; i < n; i++) {                      \
		U u;                                          \
		T v;                                          \
		memcpy(&u, p + sizeof u * i, sizeof u);       \
		u = le(u);                                    \
		memcpy(&v, &u, sizeof v);                     \
		dst[i] = (double)v;                           \
	}

void st_dtype_widen(st_dtype d, const void *src, double *dst, size_t n)
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
	case ST_DTYPE_U8: WIDEN(uint8_t, uint8_t, ); break;
	case ST_DTYPE_I8: WIDEN(int8_t, uint8_t, ); break;
	case ST_DTYPE_U16: WIDEN(uint16_t, uint16_t, le16toh); break;
	case ST_DTYPE_I16: WIDEN(int16_t, uint16_t, le16toh); break;
	case ST_DTYPE_U32: WIDEN(uint32_t, uint32_t, le32toh); break;
	case ST_DTYPE_I32: WIDEN(int32_t, uint32_t, le32toh); break;
	case ST_DTYPE_U64: WIDEN(uint64_t, uint64_t, le64toh); break;
	case ST_DTYPE_I64: WIDEN(int64_t, uint64_t, le64toh); break;
	default: break;
	}
}
