/*
 * st/dtype.h - the safetensors dtypes and conversion between float types.
 *
 * The enum is ordered by the canonical writer's rank: the writer emits
 * tensors by descending st_dtype value, then by name.
 */
#ifndef ST_DTYPE_H
#define ST_DTYPE_H

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum st_dtype {
	ST_DTYPE_BOOL = 0,
	ST_DTYPE_F4,
	ST_DTYPE_F6_E2M3,
	ST_DTYPE_F6_E3M2,
	ST_DTYPE_U8,
	ST_DTYPE_I8,
	ST_DTYPE_F8_E5M2,
	ST_DTYPE_F8_E4M3,
	ST_DTYPE_F8_E8M0,
	ST_DTYPE_F8_E4M3FNUZ,
	ST_DTYPE_F8_E5M2FNUZ,
	ST_DTYPE_I16,
	ST_DTYPE_U16,
	ST_DTYPE_F16,
	ST_DTYPE_BF16,
	ST_DTYPE_I32,
	ST_DTYPE_U32,
	ST_DTYPE_F32,
	ST_DTYPE_C64,
	ST_DTYPE_F64,
	ST_DTYPE_I64,
	ST_DTYPE_U64,
	ST_DTYPE_COUNT
} st_dtype;

/* 16-bit floats are wrapped so they cannot be mixed up with integers. */
typedef struct st_f16 { uint16_t bits; } st_f16;
typedef struct st_bf16 { uint16_t bits; } st_bf16;

/* The exact, case-sensitive name ("F32", "BF16", "F8_E4M3"...). */
ST_API const char *st_dtype_name(st_dtype dtype);
/*
 * Look a name up (exact, case-sensitive; s need not be NUL-terminated).
 * Returns ST_OK and sets *out, or ST_ENOTFOUND.
 */
ST_API int st_dtype_from_name(const char *s, size_t len, st_dtype *out);
/* Bits per element: 64, 32, 16, 8, 6 or 4 (BOOL is 8). */
ST_API unsigned st_dtype_bits(st_dtype dtype);
/*
 * 1 for every floating-point dtype: F64, F32, F16, BF16, the five F8
 * types, F6_E2M3, F6_E3M2 and F4; else 0 (integers, BOOL, C64).
 */
ST_API int st_dtype_is_float(st_dtype dtype);
/*
 * 1 for F64, F32, F16 and BF16, the floats of 16 bits or more: st_convert
 * converts between any two of them, and every element is whole bytes.
 */
ST_API int st_dtype_is_wide_float(st_dtype dtype);
/*
 * 1 when st_convert converts src_type to dst_type: both wide floats, or
 * an F8 type or F4 (read only) on one side and a wide float or F8 type on
 * the other. F6 is not converted.
 */
ST_API int st_convert_supported(st_dtype dst_type, st_dtype src_type);

/*
 * Scalar conversions. Narrowing rounds to nearest, ties to even, as
 * PyTorch's .to(): NaN stays NaN (sign and leading payload bits kept,
 * quiet bit set only where truncation would otherwise give an infinity, so
 * narrow -> F32 -> narrow is exact for every pattern, signalling NaNs
 * included), +-Inf stays +-Inf, finite values
 * that round past the largest finite value become +-Inf, subnormals are
 * kept (never flushed to zero). Widening is exact.
 */
ST_API float st_f16_to_f32(st_f16 h);
ST_API st_f16 st_f32_to_f16(float f);
ST_API float st_bf16_to_f32(st_bf16 b);
ST_API st_bf16 st_f32_to_bf16(float f);
ST_API float st_f64_to_f32(double d);

/*
 * 8- and 4-bit floats (doc/format.md, "8- and 4-bit floats"; the OCP 8-bit
 * floating point specification). st_f8_to_f32 decodes exactly one code of
 * F8_E4M3, F8_E5M2, F8_E4M3FNUZ, F8_E5M2FNUZ, F8_E8M0, or F4 (the low
 * nibble of code); another type gives NaN. A NaN keeps its sign and
 * payload; the FNUZ and E8M0 NaNs become 0x7FC00000.
 *
 * st_f32_to_f8 encodes into one of the five F8 types (0 for another):
 * round to nearest, ties to even; finite values past the largest finite
 * value saturate to +-max; subnormals are kept; NaN stays NaN; +-Inf stays
 * +-Inf in F8_E5M2 and becomes NaN in the types without infinities. The
 * FNUZ types have no -0 (a negative value that rounds to zero gives +0).
 * F8_E8M0 has no sign and no zero: it encodes |f| as the nearest power of
 * two (significand 1.5 rounds up), from 2^-127 (also for 0) to 2^127.
 */
ST_API float st_f8_to_f32(st_dtype type, uint8_t code);
ST_API uint8_t st_f32_to_f8(st_dtype type, float f);

/* What a narrowing conversion lost, counted by st_convert. */
typedef struct st_convert_stats {
	uint64_t overflow;  /* finite values that became +-Inf, or saturated
	                       to +-max in an F8 type */
	uint64_t underflow; /* non-zero values that became +-0 */
} st_convert_stats;

/*
 * Convert n elements from src (type src_type) to dst (type dst_type), a
 * pair st_convert_supported accepts; the same type copies. F16 <-> BF16
 * and every pair with an F8 or F4 side go through F32 (exact, then rounded
 * once; an F64 is rounded to F32 first, as for F16). F4 packs two elements
 * a byte, element 2i in the low nibble (PyTorch's float4_e2m1fn_x2), so n
 * must be even. Buffers hold little-endian values and need no alignment;
 * they must not overlap unless dst == src and the element sizes are equal.
 *
 * Uses F16C / AVX-512 when the CPU has them (chosen at run time), AVX2 or
 * AVX-512 for F32 -> F8_E4M3 too; the result is the same bits (and
 * counts) as the scalar path.
 *
 * stats, if not NULL, is incremented (not reset) with the overflow and
 * underflow counts of this call.
 *
 * Returns ST_OK, ST_EUNSUPPORTED for a pair it does not convert, or
 * ST_EINVAL for an odd count of F4 elements.
 */
ST_API int st_convert(st_dtype dst_type, void *dst, st_dtype src_type,
                      const void *src, size_t n, st_convert_stats *stats);

/* ---- values of a dtype's bytes (libst/dtype_values.c) ---------------- */

/*
 * The smallest run of elements of dtype d that fills whole bytes: *bytes
 * bytes holding *elems elements. One element of a whole-byte dtype; two
 * elements in one byte for F4; four in three bytes for the F6 types
 * (element e holds bits [e*bits, (e+1)*bits) of the group, LSB first).
 * st/stream.h reads tensors in whole groups.
 */
ST_API void st_dtype_group(st_dtype d, unsigned *bytes, unsigned *elems);

/*
 * 1 for the dtypes whose elements are whole bytes and compare as numbers
 * (st/compare.h): the floats of 16 bits or more, the integers and BOOL;
 * else 0 (the F8, F6 and F4 types, C64).
 */
ST_API int st_dtype_is_numeric(st_dtype d);

/*
 * 1 for the dtypes st_dtype_widen takes: st_dtype_is_numeric's, and the
 * 8- and 4-bit floats (the five F8 types and F4), decoded; else 0 (F6,
 * C64).
 */
ST_API int st_dtype_has_values(st_dtype d);

/*
 * Widen n little-endian elements of an st_dtype_has_values dtype to
 * double (another dtype leaves dst as it is). Floats go through
 * st_convert (exact: an F8 or F4 code decodes to the value the OCP
 * specification gives it; F4 packs two elements a byte, element 2i in
 * the low nibble, and n must be even); integers are read byte by byte, so
 * the host's endianness does not matter, and I64/U64 beyond 2^53 round to
 * nearest; a BOOL byte is 1 when it is not zero, as numpy casts it.
 */
ST_API void st_dtype_widen(st_dtype d, const void *src, double *dst,
                           size_t n);

#ifdef __cplusplus
}
#endif

#endif
