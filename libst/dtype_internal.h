/*
 * dtype_internal.h - what dtype.c, dtype_f8.c, dtype_avx2.c and
 * dtype_avx512.c share (not installed): the integer-only bit conversions
 * of the wide float types, little-endian loads and stores, the (dst, src)
 * pair tables of the kernels, and the x86 helpers. The bit conversions are
 * static inline, so each kernel inlines the reference code it falls back
 * on. The SIMD code is compiled with target attributes (T256, T512 in the
 * kernel files), not with per-file flags: every file builds with the
 * project's flags, and the kernels run only where the CPU has them.
 */
#ifndef ST_DTYPE_INTERNAL_H
#define ST_DTYPE_INTERNAL_H

#include "internal.h"

#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define ST_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define ST_X86 0
#endif

/* The 8-bit float types st_convert reads and writes. */
static inline int is_f8(st_dtype t)
{
	return t == ST_DTYPE_F8_E4M3 || t == ST_DTYPE_F8_E5M2 || t == ST_DTYPE_F8_E4M3FNUZ ||
	       t == ST_DTYPE_F8_E5M2FNUZ || t == ST_DTYPE_F8_E8M0;
}

/* ---- scalar bit conversions ---------------------------------------------- */

#define F32_ABS 0x7FFFFFFFu
#define F32_INF 0x7F800000u
#define F64_ABS 0x7FFFFFFFFFFFFFFFull
#define F64_INF 0x7FF0000000000000ull

/*
 * Shift m right by s (1 <= s < 64) rounding to nearest, ties to even. Used
 * for results that land in the subnormal range, where the number of bits
 * to drop depends on the exponent.
 */
static inline uint64_t shift_rne(uint64_t m, unsigned s)
{
	uint64_t half = (uint64_t)1 << (s - 1);
	uint64_t rem = m & ((half << 1) - 1);
	uint64_t q = m >> s;

	if (rem > half || (rem == half && (q & 1)))
		q++;
	return q;
}

static inline uint16_t f32b_to_f16b(uint32_t x)
{
	uint16_t sign = (uint16_t)(x >> 16 & 0x8000);
	uint32_t a = x & F32_ABS;

	if (a > F32_INF) {
		uint16_t m = (uint16_t)(a >> 13 & 0x3FF);
		return sign | 0x7C00 | (m ? m : 0x200);
	}
	/* 65520 = 0x477FF000 is the tie between 65504 (odd) and 2^16: Inf. */
	if (a >= 0x477FF000u)
		return sign | 0x7C00;
	if (a >= 0x38800000u) {
		/* Normal F16: rebias the exponent by 127 - 15, round 13 bits. */
		uint32_t r = a - 0x38000000u;
		r += 0xFFFu + (r >> 13 & 1);
		return sign | (uint16_t)(r >> 13);
	}
	/* 2^-25 is the tie between 0 and the least subnormal: even, so 0. */
	if (a <= 0x33000000u)
		return sign;
	/* Subnormal F16: value = m * 2^(e - 150), unit 2^-24. */
	return sign | (uint16_t)shift_rne((a & 0x7FFFFF) | 0x800000, 126 - (a >> 23));
}

static inline uint16_t f32b_to_bf16b(uint32_t x)
{
	if ((x & F32_ABS) > F32_INF) {
		uint16_t t = (uint16_t)(x >> 16);
		return (t & 0x7F) ? t : t | 0x40;
	}
	/*
	 * Adding 0x7FFF plus the kept lsb rounds ties to even; a carry out of
	 * the mantissa correctly bumps the exponent, up to Inf. The sum cannot
	 * wrap: the largest non-NaN input, 0xFF800000, stays below 2^32.
	 */
	return (uint16_t)((x + 0x7FFFu + (x >> 16 & 1)) >> 16);
}

static inline uint32_t f16b_to_f32b(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = h >> 10 & 0x1F;
	uint32_t m = h & 0x3FF;

	if (e == 31)
		return sign | F32_INF | m << 13;
	if (e == 0) {
		if (m == 0)
			return sign;
		/* Subnormal: value = m * 2^-24 with top bit k, normal in F32. */
		unsigned k = 31 - (unsigned)__builtin_clz(m);
		return sign | (103 + k) << 23 | (m << (23 - k) & 0x7FFFFF);
	}
	return sign | (e + 112) << 23 | m << 13;
}

static inline uint32_t bf16b_to_f32b(uint16_t b)
{
	return (uint32_t)b << 16;
}

static inline uint32_t f64b_to_f32b(uint64_t x)
{
	uint32_t sign = (uint32_t)(x >> 32) & 0x80000000u;
	uint64_t a = x & F64_ABS;

	if (a > F64_INF) {
		uint32_t m = (uint32_t)(a >> 29 & 0x7FFFFF);
		return sign | F32_INF | (m ? m : 0x400000u);
	}
	/* The tie between FLT_MAX (odd mantissa) and 2^128 goes to Inf. */
	if (a >= 0x47EFFFFFF0000000ull)
		return sign | F32_INF;
	if (a >= 0x3810000000000000ull) {
		/* Normal F32: rebias by 1023 - 127, round 29 bits. */
		uint64_t r = a - 0x3800000000000000ull;
		r += 0x0FFFFFFFull + (r >> 29 & 1);
		return sign | (uint32_t)(r >> 29);
	}
	/* 2^-150 is the tie between 0 and the least subnormal: 0. */
	if (a <= 0x3690000000000000ull)
		return sign;
	/* Subnormal F32: value = m * 2^(e - 1075), unit 2^-149. */
	return sign | (uint32_t)shift_rne((a & 0xFFFFFFFFFFFFFull) | 1ull << 52,
	                                  926 - (unsigned)(a >> 52));
}

static inline uint64_t f32b_to_f64b(uint32_t x)
{
	uint64_t sign = (uint64_t)(x & 0x80000000u) << 32;
	uint32_t e = x >> 23 & 0xFF;
	uint64_t m = x & 0x7FFFFF;

	if (e == 255)
		return sign | F64_INF | m << 29;
	if (e == 0) {
		if (m == 0)
			return sign;
		/* Subnormal: value = m * 2^-149 with top bit k, normal in F64. */
		unsigned k = 63 - (unsigned)__builtin_clzll(m);
		return sign | (uint64_t)(874 + k) << 52 | (m << (52 - k) & 0xFFFFFFFFFFFFFull);
	}
	return sign | (uint64_t)(e + 896) << 52 | m << 29;
}

static inline uint32_t float_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float bits_float(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* ---- loads, stores and sizes ---------------------------------------------- */

/* Buffers are little-endian; on a big-endian host every load swaps. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LE16(x) __builtin_bswap16(x)
#define LE32(x) __builtin_bswap32(x)
#define LE64(x) __builtin_bswap64(x)
#else
#define LE16(x) (x)
#define LE32(x) (x)
#define LE64(x) (x)
#endif

static inline uint16_t ld16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return LE16(v);
}
static inline uint32_t ld32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return LE32(v);
}
static inline uint64_t ld64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return LE64(v);
}
static inline void st16(unsigned char *p, uint16_t v)
{
	v = LE16(v);
	memcpy(p, &v, sizeof v);
}
static inline void st32(unsigned char *p, uint32_t v)
{
	v = LE32(v);
	memcpy(p, &v, sizeof v);
}
static inline void st64(unsigned char *p, uint64_t v)
{
	v = LE64(v);
	memcpy(p, &v, sizeof v);
}

/* Element size in bytes of a float type. */
static inline size_t fsize(st_dtype t)
{
	return t == ST_DTYPE_F64 ? 8 : t == ST_DTYPE_F32 ? 4 : 2;
}

/*
 * Whether a pair can lose range (overflow to Inf or underflow to 0). The
 * others are widening, or F16 -> BF16, whose range holds every F16 value.
 */
static inline int can_lose(st_dtype dst, st_dtype src)
{
	return fsize(dst) < fsize(src) ||
	       (dst == ST_DTYPE_F16 && src == ST_DTYPE_BF16);
}

typedef void convert_fn(void *dst, const void *src, size_t n, st_convert_stats *stats);

/* The four float types as a dense index (0..3), for the kernel tables. */
enum { I_F64, I_F32, I_F16, I_BF16 };

static inline int fidx(st_dtype t)
{
	return t == ST_DTYPE_F64 ? I_F64 : t == ST_DTYPE_F32 ? I_F32 : t == ST_DTYPE_F16 ? I_F16 : I_BF16;
}

/*
 * One function per (dst, src) pair, so that scalar_loop's type tests fold
 * away. FOR_EACH_PAIR lists the twelve pairs of distinct types as
 * X(dst, src).
 */
#define FOR_EACH_PAIR(X) \
	X(F32, F64) X(F16, F64) X(BF16, F64) \
	X(F64, F32) X(F16, F32) X(BF16, F32) \
	X(F64, F16) X(F32, F16) X(BF16, F16) \
	X(F64, BF16) X(F32, BF16) X(F16, BF16)

#define TABLE_ENTRY(P, D, S) [I_##D][I_##S] = P##_##S##_##D,

/* The scalar kernels (dtype.c): st__scalar_<src>_<dst>, one per pair. */
#define ST__SCALAR_DECL(D, S) \
	void st__scalar_##S##_##D(void *dst, const void *src, size_t n, \
	                          st_convert_stats *stats);
FOR_EACH_PAIR(ST__SCALAR_DECL)

/*
 * The kernel for (dst, src), both wide float types, of ISA level isa
 * (dtype.c): the scalar one when the CPU lacks it, or when the pair uses
 * the FPU and MXCSR is not at its default.
 */
convert_fn *st__convert_pick(int isa, st_dtype dst, st_dtype src);
/* n elements where one side is an F8 or F4 type, through F32 (dtype_f8.c). */
void st__convert_narrow(int isa, st_dtype dt, void *dst, st_dtype srct, const void *src,
                        size_t n, st_convert_stats *stats);

#if ST_X86

/*
 * The kernels that use floating-point instructions (every pair with F16 or
 * F64) depend on MXCSR: CVTPD2PS rounds by MXCSR.RC, DAZ flushes F32
 * subnormal inputs of CVTPS2PD, and an unmasked exception would trap. They
 * run only when MXCSR holds its default (all exceptions masked, round to
 * nearest, no FTZ/DAZ); otherwise the call takes the scalar path, which is
 * integer-only. F32 <-> BF16 is integer-only in both paths.
 */
static inline int mxcsr_default(void)
{
	return (_mm_getcsr() & 0xFFC0u) == 0x1F80u;
}

static inline int pair_uses_fpu(st_dtype dst, st_dtype src)
{
	return dst == ST_DTYPE_F16 || dst == ST_DTYPE_F64 ||
	       src == ST_DTYPE_F16 || src == ST_DTYPE_F64;
}

static inline uint64_t lanes8(unsigned m)
{
	return (uint64_t)__builtin_popcount(m);
}

/* The kernel tables [dst][src] (dtype_avx2.c, dtype_avx512.c). */
extern convert_fn *const st__k256_table[4][4];
extern convert_fn *const st__k512_table[4][4];

/*
 * F32 bits -> E4M3 (e4m3fn), 8 or 16 lanes a step, in integer operations
 * only (the MXCSR does not matter): the bits and counts of f32b_to_f8b,
 * which stays the reference (tests/check_dtype.c compares the two over
 * every rounding point and a large random sample). |x| >= 2^-6 (exponent
 * 121 and up): rebias by 120, round 20 bits away to nearest even,
 * saturate at 0x7E (counted unless NaN or Inf). Below: the significand
 * with its implicit bit, shifted right by 141 - e to nearest even (a
 * shift of 25 or more gives 0, so 31 stands for them all). NaN and
 * +-Inf: S.1111.111. A 0 from a non-zero input is an underflow.
 */
#define E4M3_LANES(W, P)                                                                    \
	const __m##W##i one = P##_set1_epi32(1), abs = P##_set1_epi32((int)F32_ABS);        \
	__m##W##i a = P##_and_si##W(x, abs);                                                \
	__m##W##i sign = P##_and_si##W(P##_srli_epi32(x, 24), P##_set1_epi32(0x80));        \
	__m##W##i r = P##_sub_epi32(a, P##_set1_epi32(120 << 23));                          \
	__m##W##i qn = P##_srli_epi32(P##_add_epi32(P##_add_epi32(r, P##_set1_epi32(0x7FFFF)), \
	                                            P##_and_si##W(P##_srli_epi32(r, 20), one)), \
	                              20);                                                  \
	__m##W##i sh = P##_min_epu32(P##_sub_epi32(P##_set1_epi32(141), P##_srli_epi32(a, 23)), \
	                             P##_set1_epi32(31));                                   \
	__m##W##i sig = P##_or_si##W(P##_and_si##W(a, P##_set1_epi32(0x7FFFFF)),             \
	                             P##_set1_epi32(0x800000));                             \
	__m##W##i half1 = P##_sub_epi32(P##_srli_epi32(P##_sllv_epi32(one, sh), 1), one);   \
	__m##W##i qs = P##_srlv_epi32(P##_add_epi32(P##_add_epi32(sig, half1),               \
	                                            P##_and_si##W(P##_srlv_epi32(sig, sh), one)), \
	                              sh)

/*
 * F32 bits -> E4M3 for the whole steps of k elements (dtype_avx2.c,
 * dtype_avx512.c); returns how many it did, the rest is the caller's.
 */
size_t st__e4m3_avx2(unsigned char *d, const uint32_t *x, size_t k, uint64_t *ovf,
                     uint64_t *unf);
size_t st__e4m3_avx512(unsigned char *d, const uint32_t *x, size_t k, uint64_t *ovf,
                       uint64_t *unf);

#endif /* ST_X86 */

#endif
