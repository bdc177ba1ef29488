/*
 * dtype.c - the dtype table (names, sizes) and conversion between the four
 * float types libst converts: F64, F32, F16 and BF16.
 *
 * It holds a scalar reference path written with integer bit operations
 * only, so its result never depends on the floating-point environment
 * (rounding mode, flush-to-zero, denormals-are-zero, trapping), and x86
 * kernels (AVX2 + F16C, AVX-512) chosen at run time that give exactly the
 * same bits. It does not convert integer, complex or 8/6/4-bit float types:
 * those are copied or refused by the callers.
 *
 * Rounding is to nearest, ties to even, as PyTorch's .to(). F64 to F16 or
 * BF16 rounds twice, F64 -> F32 -> narrow type, because PyTorch does
 * (c10::Half and c10::BFloat16 are built from a float); a direct rounding
 * would differ from PyTorch for values within 2^-29 relative of a tie.
 *
 * NaN rule (both paths, every pair): a NaN stays a NaN of the same sign.
 * Widening keeps every payload bit, so a signalling NaN stays signalling;
 * narrowing keeps the leading payload bits that fit and sets the quiet bit
 * only where those bits are all zero (the pattern would otherwise read as
 * an infinity). So every NaN of a narrow type survives a round trip through
 * a wider one bit for bit. Concretely, for an input NaN:
 *   F32 x -> F16   (x >> 16 & 0x8000) | 0x7C00 | m, m = x >> 13 & 0x03FF,
 *                  or 0x0200 for m == 0
 *   F32 x -> BF16  t = x >> 16, or t | 0x0040 when t & 0x7F == 0
 *   F64 x -> F32   (x >> 32 & 0x80000000) | 0x7F800000 | m,
 *                  m = x >> 29 & 0x7FFFFF, or 0x400000 for m == 0
 *   F16 h -> F32   (h & 0x8000) << 16 | 0x7F800000 | (h & 0x3FF) << 13
 *   BF16 b -> F32  b << 16
 *   F32 x -> F64   (x & 0x80000000) << 32 | 0x7FF0000000000000
 *                  | (x & 0x7FFFFF) << 29
 * and the other pairs compose these through F32. The x86 conversion
 * instructions (VCVTPS2PH, VCVTPH2PS, CVTPD2PS, CVTPS2PD) quiet signalling
 * NaNs, so a vector step of a pair that uses them and meets a NaN is done
 * by the scalar code. PyTorch differs only in NaN payloads and signs (its
 * F32 -> BF16 gives 0xFFFF or 0x7FC0, its F32 -> F16 gives sign | 0x7E00),
 * which doc/format.md allows.
 */
#include "internal.h"

#include <pthread.h>

#include <assert.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define ST_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define ST_X86 0
#endif

/* ---- dtype table --------------------------------------------------------- */

static const struct {
	const char *name;
	unsigned char len;
	unsigned char bits;
} dtypes[ST_DTYPE_COUNT] = {
	[ST_DTYPE_BOOL] = {"BOOL", 4, 8},
	[ST_DTYPE_F4] = {"F4", 2, 4},
	[ST_DTYPE_F6_E2M3] = {"F6_E2M3", 7, 6},
	[ST_DTYPE_F6_E3M2] = {"F6_E3M2", 7, 6},
	[ST_DTYPE_U8] = {"U8", 2, 8},
	[ST_DTYPE_I8] = {"I8", 2, 8},
	[ST_DTYPE_F8_E5M2] = {"F8_E5M2", 7, 8},
	[ST_DTYPE_F8_E4M3] = {"F8_E4M3", 7, 8},
	[ST_DTYPE_F8_E8M0] = {"F8_E8M0", 7, 8},
	[ST_DTYPE_F8_E4M3FNUZ] = {"F8_E4M3FNUZ", 11, 8},
	[ST_DTYPE_F8_E5M2FNUZ] = {"F8_E5M2FNUZ", 11, 8},
	[ST_DTYPE_I16] = {"I16", 3, 16},
	[ST_DTYPE_U16] = {"U16", 3, 16},
	[ST_DTYPE_F16] = {"F16", 3, 16},
	[ST_DTYPE_BF16] = {"BF16", 4, 16},
	[ST_DTYPE_I32] = {"I32", 3, 32},
	[ST_DTYPE_U32] = {"U32", 3, 32},
	[ST_DTYPE_F32] = {"F32", 3, 32},
	[ST_DTYPE_C64] = {"C64", 3, 64},
	[ST_DTYPE_F64] = {"F64", 3, 64},
	[ST_DTYPE_I64] = {"I64", 3, 64},
	[ST_DTYPE_U64] = {"U64", 3, 64},
};

/*
 * A value outside the enum is a caller's bug; the name is NULL and the
 * size 0 rather than a read past the table.
 */
const char *st_dtype_name(st_dtype dtype)
{
	if ((unsigned)dtype >= ST_DTYPE_COUNT)
		return NULL;
	return dtypes[dtype].name;
}

int st_dtype_from_name(const char *s, size_t len, st_dtype *out)
{
	assert(s != NULL || len == 0);
	for (unsigned i = 0; i < ST_DTYPE_COUNT; i++) {
		if (dtypes[i].len == len && memcmp(dtypes[i].name, s, len) == 0) {
			if (out)
				*out = (st_dtype)i;
			return ST_OK;
		}
	}
	return ST_ENOTFOUND;
}

unsigned st_dtype_bits(st_dtype dtype)
{
	if ((unsigned)dtype >= ST_DTYPE_COUNT)
		return 0;
	return dtypes[dtype].bits;
}

int st_dtype_is_wide_float(st_dtype dtype)
{
	return dtype == ST_DTYPE_F64 || dtype == ST_DTYPE_F32 ||
	       dtype == ST_DTYPE_F16 || dtype == ST_DTYPE_BF16;
}

/* The 8-bit float types st_convert reads and writes. */
static int is_f8(st_dtype t)
{
	return t == ST_DTYPE_F8_E4M3 || t == ST_DTYPE_F8_E5M2 || t == ST_DTYPE_F8_E4M3FNUZ ||
	       t == ST_DTYPE_F8_E5M2FNUZ || t == ST_DTYPE_F8_E8M0;
}

int st_dtype_is_float(st_dtype dtype)
{
	return st_dtype_is_wide_float(dtype) || is_f8(dtype) || dtype == ST_DTYPE_F4 ||
	       dtype == ST_DTYPE_F6_E2M3 || dtype == ST_DTYPE_F6_E3M2;
}

int st_convert_supported(st_dtype dst_type, st_dtype src_type)
{
	int src_ok = st_dtype_is_wide_float(src_type) || is_f8(src_type) || src_type == ST_DTYPE_F4;
	int dst_ok = st_dtype_is_wide_float(dst_type) || is_f8(dst_type);
	return src_ok && dst_ok;
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

float st_f16_to_f32(st_f16 h)
{
	return bits_float(f16b_to_f32b(h.bits));
}

st_f16 st_f32_to_f16(float f)
{
	st_f16 h = {f32b_to_f16b(float_bits(f))};
	return h;
}

float st_bf16_to_f32(st_bf16 b)
{
	return bits_float(bf16b_to_f32b(b.bits));
}

st_bf16 st_f32_to_bf16(float f)
{
	st_bf16 b = {f32b_to_bf16b(float_bits(f))};
	return b;
}

float st_f64_to_f32(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return bits_float(f64b_to_f32b(u));
}

/* ---- 8- and 4-bit floats ------------------------------------------------------ */

/*
 * The OCP 8-bit formats (OCP 8-bit Floating Point Specification, OFP8,
 * rev. 1.0) and their FNUZ variants:
 *   E4M3 (e4m3fn)  bias 7, no infinity, S.1111.111 the NaN, max 448
 *   E5M2           bias 15, IEEE-style: S.11111.00 +-Inf, .01-.11 NaN, max 57344
 *   E4M3FNUZ       bias 8, no infinity, no -0: 0x80 the only NaN, max 240
 *   E5M2FNUZ       bias 16, likewise, max 57344
 * E8M0 is an unsigned exponent, 2^(b - 127), 0xFF NaN (no zero), and F4
 * is E2M1, bias 1, values +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, no Inf or NaN.
 */
enum { F8_FN, F8_IEEE, F8_FNUZ };

struct f8fmt {
	unsigned char mbits, bias, maxcode, kind;
};

static const struct f8fmt *f8fmt_of(st_dtype t)
{
	static const struct f8fmt e4m3 = {3, 7, 0x7E, F8_FN}, e5m2 = {2, 15, 0x7B, F8_IEEE},
	                          e4m3fnuz = {3, 8, 0x7F, F8_FNUZ}, e5m2fnuz = {2, 16, 0x7F, F8_FNUZ};

	switch (t) {
	case ST_DTYPE_F8_E4M3: return &e4m3;
	case ST_DTYPE_F8_E5M2: return &e5m2;
	case ST_DTYPE_F8_E4M3FNUZ: return &e4m3fnuz;
	default: return &e5m2fnuz;
	}
}

/* F4 code (low nibble) -> F32 bits. */
static inline uint32_t f4b_to_f32b(unsigned n)
{
	uint32_t sign = (uint32_t)(n & 8) << 28;
	unsigned e = n >> 1 & 3, m = n & 1;

	if (e == 0)
		return sign | (m ? 0x3F000000u : 0);
	return sign | (uint32_t)(e + 126) << 23 | (uint32_t)m << 22;
}

/*
 * F8 code -> F32 bits, exact. A NaN keeps its sign and payload (widening);
 * the FNUZ NaN, which has no sign, becomes 0x7FC00000, as does E8M0's.
 */
static inline uint32_t f8b_to_f32b(st_dtype t, unsigned c)
{
	if (t == ST_DTYPE_F8_E8M0)
		return c == 0xFF ? 0x7FC00000u : c ? (uint32_t)c << 23 : 0x00400000u;

	const struct f8fmt *f = f8fmt_of(t);
	const unsigned M = f->mbits;
	uint32_t sign = (uint32_t)(c & 0x80) << 24;
	unsigned a = c & 0x7F, e = a >> M, m = a & ((1u << M) - 1);

	if (f->kind == F8_FNUZ && c == 0x80)
		return 0x7FC00000u;
	if ((f->kind == F8_FN && a == 0x7F) || (f->kind == F8_IEEE && e == (1u << (7 - M)) - 1))
		return sign | F32_INF | (uint32_t)m << (23 - M);
	if (e == 0) {
		if (m == 0)
			return sign;
		/* Subnormal: m * 2^(1 - bias - M), top bit k; normal in F32. */
		unsigned k = 31 - (unsigned)__builtin_clz(m);
		return sign | (uint32_t)(k + 128 - f->bias - M) << 23 | ((uint32_t)m << (23 - k) & 0x7FFFFF);
	}
	return sign | (uint32_t)(e + 127 - f->bias) << 23 | (uint32_t)m << (23 - M);
}

/*
 * F32 bits -> F8 code: round to nearest, ties to even; finite values
 * beyond the range saturate to +-max (*ovf set); a non-zero value that
 * becomes 0 sets *unf; subnormals are kept. NaN stays NaN (E5M2 keeps the
 * sign and the leading payload bits, quiet bit set only if they are zero);
 * +-Inf stays +-Inf in E5M2 and becomes NaN in the types without one.
 * E8M0 has no sign and no zero: it encodes |x|, rounding the significand
 * to 1 or 2 (ties to 2), from 2^-127 (also for 0 and anything smaller) to
 * 2^127; NaN and +-Inf give 0xFF.
 */
static inline unsigned f32b_to_f8b(st_dtype t, uint32_t x, int *ovf, int *unf)
{
	uint32_t a = x & F32_ABS;
	unsigned q;

	if (t == ST_DTYPE_F8_E8M0) {
		uint32_t e = a >> 23, m = a & 0x7FFFFF;
		if (a >= F32_INF)
			return 0xFF;
		q = e ? e + (m >= 0x400000u) : (m >= 0x600000u);
		if (q > 254) {
			*ovf = 1;
			q = 254;
		}
		return q;
	}

	const struct f8fmt *f = f8fmt_of(t);
	const unsigned M = f->mbits, bias = f->bias;
	unsigned sign = x >> 24 & 0x80, e = a >> 23;

	if (a > F32_INF) {
		if (f->kind == F8_FNUZ)
			return 0x80;
		if (f->kind == F8_FN)
			return sign | 0x7F;
		q = a >> 21 & 3;
		return sign | 0x7C | (q ? q : 2);
	}
	if (a == F32_INF)
		return f->kind == F8_FNUZ ? 0x80 : f->kind == F8_FN ? sign | 0x7F : sign | 0x7C;
	if (e >= 128 - bias) {
		/* Normal range: rebias, round away 23 - M bits; a carry bumps e. */
		const unsigned S = 23 - M;
		uint32_t r = a - ((127 - bias) << 23);
		r = (r + (1u << (S - 1)) - 1 + (r >> S & 1)) >> S;
		q = r > 0xFF ? 0xFF : (unsigned)r;
	} else if (e == 0) {
		q = 0; /* F32 subnormals are far below every F8 subnormal */
	} else {
		/* Subnormal F8: value = sig * 2^(e - 150), unit 2^(1 - bias - M). */
		unsigned sh = 151 - bias - M - e;
		q = sh > 40 ? 0 : (unsigned)shift_rne((a & 0x7FFFFF) | 0x800000, sh);
	}
	if (q > f->maxcode) {
		*ovf = 1;
		q = f->maxcode;
	}
	if (q == 0) {
		*unf |= a != 0;
		return f->kind == F8_FNUZ ? 0 : sign;
	}
	return sign | q;
}

float st_f8_to_f32(st_dtype type, uint8_t code)
{
	if (type == ST_DTYPE_F4)
		return bits_float(f4b_to_f32b(code & 15));
	if (!is_f8(type))
		return bits_float(0x7FC00000u);
	return bits_float(f8b_to_f32b(type, code));
}

uint8_t st_f32_to_f8(st_dtype type, float f)
{
	int o = 0, u = 0;

	if (!is_f8(type))
		return 0;
	return (uint8_t)f32b_to_f8b(type, float_bits(f), &o, &u);
}

/* ---- scalar st_convert ----------------------------------------------------- */

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

/*
 * Every conversion passes through F32 bits: the source is widened exactly
 * (or, from F64, rounded once), then narrowed or widened to the target.
 * Overflow and underflow are judged from the source's own bits, so an F64
 * that becomes Inf only on its way through F32 still counts.
 */
static inline __attribute__((always_inline)) void
scalar_loop(st_dtype dt, unsigned char *d, st_dtype srct, const unsigned char *s,
            size_t n, st_convert_stats *stats)
{
	const size_t ss = fsize(srct), ds = fsize(dt);
	uint64_t ovf = 0, unf = 0;

	for (size_t i = 0; i < n; i++, s += ss, d += ds) {
		uint32_t f;
		int sinf, szero, dinf = 0, dzero = 0;

		if (srct == ST_DTYPE_F64) {
			uint64_t x = ld64(s);
			sinf = (x & F64_ABS) == F64_INF;
			szero = (x & F64_ABS) == 0;
			f = f64b_to_f32b(x);
		} else {
			if (srct == ST_DTYPE_F32)
				f = ld32(s);
			else if (srct == ST_DTYPE_F16)
				f = f16b_to_f32b(ld16(s));
			else
				f = bf16b_to_f32b(ld16(s));
			sinf = (f & F32_ABS) == F32_INF;
			szero = (f & F32_ABS) == 0;
		}
		if (dt == ST_DTYPE_F64) {
			st64(d, f32b_to_f64b(f));
		} else if (dt == ST_DTYPE_F32) {
			st32(d, f);
			dinf = (f & F32_ABS) == F32_INF;
			dzero = (f & F32_ABS) == 0;
		} else if (dt == ST_DTYPE_F16) {
			uint16_t h = f32b_to_f16b(f);
			st16(d, h);
			dinf = (h & 0x7FFF) == 0x7C00;
			dzero = (h & 0x7FFF) == 0;
		} else {
			uint16_t h = f32b_to_bf16b(f);
			st16(d, h);
			dinf = (h & 0x7FFF) == 0x7F80;
			dzero = (h & 0x7FFF) == 0;
		}
		ovf += dinf & !sinf;
		unf += dzero & !szero;
	}
	if (stats && can_lose(dt, srct)) {
		stats->overflow += ovf;
		stats->underflow += unf;
	}
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

#define SCALAR_FN(D, S) \
	static void scalar_##S##_##D(void *dst, const void *src, size_t n, \
	                             st_convert_stats *stats) \
	{ \
		scalar_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats); \
	}
FOR_EACH_PAIR(SCALAR_FN)

#define TABLE_ENTRY(P, D, S) [I_##D][I_##S] = P##_##S##_##D,
#define SCALAR_ENTRY(D, S) TABLE_ENTRY(scalar, D, S)

/* scalar_table[dst][src]; the diagonal (same type) is a plain copy. */
static convert_fn *const scalar_table[4][4] = {FOR_EACH_PAIR(SCALAR_ENTRY)};

/*
 * Checks shared by both entry points: the pair must be one st_convert
 * handles; nothing to do for n == 0 (dst and src may then be NULL); F4
 * needs an even count (two to a byte); the same type is a copy. Returns 1
 * when the call is complete (its result in *status), 0 when a conversion
 * is still needed.
 */
static int convert_trivial(st_dtype dst_type, void *dst, st_dtype src_type,
                           const void *src, size_t n, int *status)
{
	*status = ST_OK;
	if (!st_convert_supported(dst_type, src_type)) {
		*status = ST_EUNSUPPORTED;
		return 1;
	}
	if (n == 0)
		return 1;
	if (src_type == ST_DTYPE_F4 && n % 2) {
		*status = ST_EINVAL;
		return 1;
	}
	if (dst_type == src_type) {
		if (dst != src)
			memcpy(dst, src, n * (st_dtype_bits(src_type) / 8));
		return 1;
	}
	return 0;
}

static void convert_narrow(int isa, st_dtype dt, void *dst, st_dtype srct, const void *src,
                           size_t n, st_convert_stats *stats);

int st__convert_scalar(st_dtype dst_type, void *dst, st_dtype src_type,
                       const void *src, size_t n, st_convert_stats *stats)
{
	int status;

	if (convert_trivial(dst_type, dst, src_type, src, n, &status))
		return status;
	if (st_dtype_is_wide_float(dst_type) && st_dtype_is_wide_float(src_type))
		scalar_table[fidx(dst_type)][fidx(src_type)](dst, src, n, stats);
	else
		convert_narrow(0, dst_type, dst, src_type, src, n, stats);
	return ST_OK;
}

/* ---- x86 kernels ------------------------------------------------------------ */

/*
 * The ISA levels st__convert_isa accepts. It is declared here, not in
 * internal.h, because only tests and benchmarks reach it (they repeat the
 * prototype): it forces one kernel family so each can be compared with the
 * scalar path on a CPU that has a better one.
 */
int st__convert_isa(int isa, st_dtype dst_type, void *dst, st_dtype src_type,
                    const void *src, size_t n, st_convert_stats *stats);

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

/* ---- AVX2 + F16C: 8 elements a step, the tail in scalar code ---- */

#define T256 "avx2,f16c,popcnt"

/*
 * Load 8 source elements as F32 bits; sinf/szero get one bit per element
 * when want (an Inf / a zero in the source's own type).
 */
static inline __attribute__((always_inline, target(T256))) __m256i
ld256(st_dtype srct, const unsigned char *s, int want, unsigned *sinf, unsigned *szero)
{
	const __m256i abs = _mm256_set1_epi32((int)F32_ABS);
	const __m256i inf = _mm256_set1_epi32((int)F32_INF);
	__m256i x;

	if (srct == ST_DTYPE_F64) {
		__m256i lo = _mm256_loadu_si256((const void *)s);
		__m256i hi = _mm256_loadu_si256((const void *)(s + 32));
		__m128 flo = _mm256_cvtpd_ps(_mm256_castsi256_pd(lo));
		__m128 fhi = _mm256_cvtpd_ps(_mm256_castsi256_pd(hi));
		x = _mm256_castps_si256(_mm256_insertf128_ps(_mm256_castps128_ps256(flo), fhi, 1));
		if (want) {
			const __m256i abs64 = _mm256_set1_epi64x((long long)F64_ABS);
			const __m256i inf64 = _mm256_set1_epi64x((long long)F64_INF);
			const __m256i z = _mm256_setzero_si256();
			lo = _mm256_and_si256(lo, abs64);
			hi = _mm256_and_si256(hi, abs64);
			*sinf = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(lo, inf64))) |
			        (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(hi, inf64))) << 4;
			*szero = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(lo, z))) |
			         (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(hi, z))) << 4;
		}
		return x;
	}
	if (srct == ST_DTYPE_F32) {
		x = _mm256_loadu_si256((const void *)s);
	} else if (srct == ST_DTYPE_F16) {
		x = _mm256_castps_si256(_mm256_cvtph_ps(_mm_loadu_si128((const void *)s)));
	} else {
		x = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)s)), 16);
	}
	if (want) {
		__m256i a = _mm256_and_si256(x, abs);
		*sinf = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, inf)));
		*szero = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
			_mm256_cmpeq_epi32(a, _mm256_setzero_si256())));
	}
	return x;
}

/* t = x >> 16 for NaN lanes x: the BF16 NaN (quiet bit set only if needed). */
static inline __attribute__((always_inline, target(T256))) __m256i
bf16_nan256(__m256i t)
{
	__m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(t, _mm256_set1_epi32(0x7F)), _mm256_setzero_si256());
	return _mm256_or_si256(t, _mm256_and_si256(z, _mm256_set1_epi32(0x40)));
}

/* One bit per lane of F32 bits x that is a NaN. */
static inline __attribute__((always_inline, target(T256))) unsigned
nan256(__m256i x)
{
	__m256i a = _mm256_and_si256(x, _mm256_set1_epi32((int)F32_ABS));
	return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
		_mm256_cmpgt_epi32(a, _mm256_set1_epi32((int)F32_INF))));
}

/* One bit per 16-bit lane of h that is +-Inf (inf16) / +-0. */
static inline __attribute__((always_inline, target(T256))) void
class16_128(__m128i h, uint16_t inf16, unsigned *dinf, unsigned *dzero)
{
	__m128i a = _mm_and_si128(h, _mm_set1_epi16(0x7FFF));
	__m128i z = _mm_setzero_si128();
	*dinf = (unsigned)_mm_movemask_epi8(_mm_packs_epi16(_mm_cmpeq_epi16(a, _mm_set1_epi16((short)inf16)), z));
	*dzero = (unsigned)_mm_movemask_epi8(_mm_packs_epi16(_mm_cmpeq_epi16(a, z), z));
}

static inline __attribute__((always_inline, target(T256))) void
st256(st_dtype dt, unsigned char *d, __m256i x, int want, unsigned *dinf, unsigned *dzero)
{
	if (dt == ST_DTYPE_F64) {
		__m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(_mm256_castsi256_ps(x)));
		__m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(_mm256_castsi256_ps(x), 1));
		_mm256_storeu_pd((void *)d, lo);
		_mm256_storeu_pd((void *)(d + 32), hi);
	} else if (dt == ST_DTYPE_F32) {
		_mm256_storeu_si256((void *)d, x);
		if (want) {
			__m256i a = _mm256_and_si256(x, _mm256_set1_epi32((int)F32_ABS));
			*dinf = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
				_mm256_cmpeq_epi32(a, _mm256_set1_epi32((int)F32_INF))));
			*dzero = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(
				_mm256_cmpeq_epi32(a, _mm256_setzero_si256())));
		}
	} else if (dt == ST_DTYPE_F16) {
		__m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(x), _MM_FROUND_TO_NEAREST_INT);
		_mm_storeu_si128((void *)d, h);
		if (want)
			class16_128(h, 0x7C00, dinf, dzero);
	} else {
		const __m256i abs = _mm256_set1_epi32((int)F32_ABS);
		__m256i t = _mm256_srli_epi32(x, 16);
		__m256i r = _mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF));
		r = _mm256_srli_epi32(_mm256_add_epi32(r, _mm256_and_si256(t, _mm256_set1_epi32(1))), 16);
		__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs), _mm256_set1_epi32((int)F32_INF));
		r = _mm256_blendv_epi8(r, bf16_nan256(t), nan);
		/* Every lane is below 2^16, so unsigned saturation packs exactly. */
		__m128i h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
		_mm_storeu_si128((void *)d, h);
		if (want)
			class16_128(h, 0x7F80, dinf, dzero);
	}
}

static inline __attribute__((always_inline, target(T256))) void
k256_loop(st_dtype dt, void *dst, st_dtype srct, const void *src, size_t n,
          st_convert_stats *stats, int want, convert_fn *tail)
{
	const size_t ss = fsize(srct), ds = fsize(dt);
	unsigned char *d = dst;
	const unsigned char *s = src;
	uint64_t ovf = 0, unf = 0;
	size_t i = 0;

	for (; i + 8 <= n; i += 8, s += 8 * ss, d += 8 * ds) {
		unsigned sinf = 0, szero = 0, dinf = 0, dzero = 0;
		__m256i x = ld256(srct, s, want, &sinf, &szero);
		if (pair_uses_fpu(dt, srct) && nan256(x)) {
			/* The instructions quiet signalling NaNs: scalar code. */
			st_convert_stats st = {0, 0};
			tail(d, s, 8, want ? &st : NULL);
			ovf += st.overflow;
			unf += st.underflow;
			continue;
		}
		st256(dt, d, x, want, &dinf, &dzero);
		if (want) {
			ovf += lanes8(dinf & ~sinf);
			unf += lanes8(dzero & ~szero);
		}
	}
	if (want) {
		stats->overflow += ovf;
		stats->underflow += unf;
	}
	if (i < n)
		tail(d, s, n - i, stats);
}

#define K256_FN(D, S) \
	static __attribute__((target(T256))) void \
	k256_##S##_##D(void *dst, const void *src, size_t n, st_convert_stats *stats) \
	{ \
		if (stats && can_lose(ST_DTYPE_##D, ST_DTYPE_##S)) \
			k256_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats, 1, scalar_##S##_##D); \
		else \
			k256_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats, 0, scalar_##S##_##D); \
	}
FOR_EACH_PAIR(K256_FN)
#define K256_ENTRY(D, S) TABLE_ENTRY(k256, D, S)
static convert_fn *const k256_table[4][4] = {FOR_EACH_PAIR(K256_ENTRY)};

/* ---- AVX-512: 16 elements a step, the tail with masked loads/stores ---- */

#define T512 "avx512f,avx512bw,avx512vl,avx2,f16c,popcnt"

/*
 * Load the elements of m (all 16 when full) as F32 bits; sinf/szero as in
 * ld256. Masked-off lanes read as 0 and never fault.
 */
static inline __attribute__((always_inline, target(T512))) __m512i
ld512(st_dtype srct, const unsigned char *s, int full, __mmask16 m, int want,
      __mmask16 *sinf, __mmask16 *szero)
{
	const __m512i abs = _mm512_set1_epi32((int)F32_ABS);
	const __m512i inf = _mm512_set1_epi32((int)F32_INF);
	__m512i x;

	if (srct == ST_DTYPE_F64) {
		__m512i lo = full ? _mm512_loadu_si512(s) : _mm512_maskz_loadu_epi64((__mmask8)m, s);
		__m512i hi = full ? _mm512_loadu_si512(s + 64)
		                  : _mm512_maskz_loadu_epi64((__mmask8)(m >> 8), s + 64);
		__m256 flo = _mm512_cvt_roundpd_ps(_mm512_castsi512_pd(lo),
		                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m256 fhi = _mm512_cvt_roundpd_ps(_mm512_castsi512_pd(hi),
		                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		x = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castps_si256(flo)),
		                       _mm256_castps_si256(fhi), 1);
		if (want) {
			const __m512i abs64 = _mm512_set1_epi64((long long)F64_ABS);
			const __m512i inf64 = _mm512_set1_epi64((long long)F64_INF);
			*sinf = (__mmask16)(_mm512_cmpeq_epi64_mask(_mm512_and_si512(lo, abs64), inf64) |
			                    (unsigned)_mm512_cmpeq_epi64_mask(_mm512_and_si512(hi, abs64), inf64) << 8);
			*szero = (__mmask16)(_mm512_testn_epi64_mask(lo, abs64) |
			                     (unsigned)_mm512_testn_epi64_mask(hi, abs64) << 8);
		}
		return x;
	}
	if (srct == ST_DTYPE_F32) {
		x = full ? _mm512_loadu_si512(s) : _mm512_maskz_loadu_epi32(m, s);
		/*
		 * Keep x in a register: GCC otherwise folds the load into each
		 * instruction that uses x, reading every line three times,
		 * which made F32 -> BF16 half as fast from DRAM.
		 */
		__asm__("" : "+v"(x));
	} else {
		__m256i h = full ? _mm256_loadu_si256((const void *)s) : _mm256_maskz_loadu_epi16(m, s);
		if (srct == ST_DTYPE_F16) {
			x = _mm512_castps_si512(_mm512_cvt_roundph_ps(h, _MM_FROUND_NO_EXC));
		} else {
			x = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
		}
	}
	if (want) {
		*sinf = _mm512_cmpeq_epi32_mask(_mm512_and_si512(x, abs), inf);
		*szero = _mm512_testn_epi32_mask(x, abs);
	}
	return x;
}

static inline __attribute__((always_inline, target(T512))) void
st512(st_dtype dt, unsigned char *d, __m512i x, int full, int nt, __mmask16 m, int want,
      __mmask16 *dinf, __mmask16 *dzero)
{
	const __m256i abs16 = _mm256_set1_epi16(0x7FFF);
	__m256i h;

	if (dt == ST_DTYPE_F64) {
		__m512d lo = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_castsi512_si256(x)));
		__m512d hi = _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_extracti64x4_epi64(x, 1)));
		if (full && nt) {
			_mm512_stream_pd((void *)d, lo);
			_mm512_stream_pd((void *)(d + 64), hi);
		} else if (full) {
			_mm512_storeu_pd(d, lo);
			_mm512_storeu_pd(d + 64, hi);
		} else {
			_mm512_mask_storeu_pd(d, (__mmask8)m, lo);
			_mm512_mask_storeu_pd(d + 64, (__mmask8)(m >> 8), hi);
		}
		return;
	}
	if (dt == ST_DTYPE_F32) {
		if (full && nt)
			_mm512_stream_si512((void *)d, x);
		else if (full)
			_mm512_storeu_si512(d, x);
		else
			_mm512_mask_storeu_epi32(d, m, x);
		if (want) {
			const __m512i abs = _mm512_set1_epi32((int)F32_ABS);
			*dinf = _mm512_cmpeq_epi32_mask(_mm512_and_si512(x, abs),
			                                _mm512_set1_epi32((int)F32_INF));
			*dzero = _mm512_testn_epi32_mask(x, abs);
		}
		return;
	}
	if (dt == ST_DTYPE_F16) {
		h = _mm512_cvt_roundps_ph(_mm512_castsi512_ps(x),
		                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	} else {
		__m512i t = _mm512_srli_epi32(x, 16);
		__m512i r = _mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF));
		r = _mm512_srli_epi32(_mm512_add_epi32(r, _mm512_and_si512(t, _mm512_set1_epi32(1))), 16);
		__mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32((int)F32_ABS)),
		                                        _mm512_set1_epi32((int)F32_INF));
		__mmask16 quiet = _mm512_mask_testn_epi32_mask(nan, t, _mm512_set1_epi32(0x7F));
		r = _mm512_mask_mov_epi32(r, nan, t);
		r = _mm512_mask_or_epi32(r, quiet, r, _mm512_set1_epi32(0x40));
		h = _mm512_cvtepi32_epi16(r);
	}
	if (full && nt)
		_mm256_stream_si256((void *)d, h);
	else if (full)
		_mm256_storeu_si256((void *)d, h);
	else
		_mm256_mask_storeu_epi16(d, m, h);
	if (want) {
		uint16_t inf16 = dt == ST_DTYPE_F16 ? 0x7C00 : 0x7F80;
		*dinf = _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, abs16), _mm256_set1_epi16((short)inf16));
		*dzero = _mm256_testn_epi16_mask(h, abs16);
	}
}

/*
 * The conversion instructions quiet signalling NaNs, which libst keeps: a
 * step of a pair that uses them and meets a NaN (in the F32 form x) is done
 * by the scalar code instead, before anything is stored. Returns 1 then.
 */
static inline __attribute__((always_inline, target(T512))) int
nan512_fix(st_dtype dt, st_dtype srct, __m512i x, __mmask16 m, unsigned char *d,
           const unsigned char *s, int want, uint64_t *ovf, uint64_t *unf, convert_fn *scalar)
{
	st_convert_stats st = {0, 0};

	if (!pair_uses_fpu(dt, srct) ||
	    !_mm512_mask_cmpgt_epu32_mask(m, _mm512_and_si512(x, _mm512_set1_epi32((int)F32_ABS)),
	                                  _mm512_set1_epi32((int)F32_INF)))
		return 0;
	/* m is always the low lanes 0..k-1. */
	scalar(d, s, (size_t)__builtin_popcount(m), want ? &st : NULL);
	*ovf += st.overflow;
	*unf += st.underflow;
	return 1;
}

/*
 * One step: the 16 elements at s (the lanes of m when !full) to d, with
 * non-temporal stores when nt (d then aligned to the store size).
 */
static inline __attribute__((always_inline, target(T512))) void
k512_step(st_dtype dt, unsigned char *d, st_dtype srct, const unsigned char *s,
          int full, int nt, __mmask16 m, int want, uint64_t *ovf, uint64_t *unf,
          convert_fn *scalar)
{
	__mmask16 sinf = 0, szero = 0, dinf = 0, dzero = 0;

	if (want && srct == ST_DTYPE_F32 && dt != ST_DTYPE_F64) {
		/*
		 * The hot narrowing pairs count from the input alone: with
		 * round-to-nearest-even, F32 |x| overflows exactly from the
		 * first tie past the largest finite value up to Inf, and
		 * underflows exactly from the least subnormal up to half the
		 * target's least subnormal. Two range tests instead of six
		 * compares.
		 */
		const uint32_t ovf_lo = dt == ST_DTYPE_F16 ? 0x477FF000u : 0x7F7F8000u;
		const uint32_t unf_hi = dt == ST_DTYPE_F16 ? 0x33000000u : 0x00008000u;
		__m512i x = ld512(srct, s, full, m, 0, &sinf, &szero);
		__m512i a = _mm512_and_si512(x, _mm512_set1_epi32((int)F32_ABS));

		if (nan512_fix(dt, srct, x, m, d, s, want, ovf, unf, scalar))
			return;
		st512(dt, d, x, full, nt, m, 0, &dinf, &dzero);
		*ovf += lanes8(_mm512_mask_cmplt_epu32_mask(m, _mm512_sub_epi32(a, _mm512_set1_epi32((int)ovf_lo)),
		                                            _mm512_set1_epi32((int)(F32_INF - ovf_lo))));
		*unf += lanes8(_mm512_mask_cmplt_epu32_mask(m, _mm512_sub_epi32(a, _mm512_set1_epi32(1)),
		                                            _mm512_set1_epi32((int)unf_hi)));
		return;
	}
	__m512i x = ld512(srct, s, full, m, want, &sinf, &szero);

	if (nan512_fix(dt, srct, x, m, d, s, want, ovf, unf, scalar))
		return;
	st512(dt, d, x, full, nt, m, want, &dinf, &dzero);
	if (want) {
		/* Masked-off lanes read 0: no Inf, not a new zero; mask anyway. */
		*ovf += lanes8((unsigned)(dinf & ~sinf & m));
		*unf += lanes8((unsigned)(dzero & ~szero & m));
	}
}

/*
 * Outputs larger than this go around the caches (non-temporal stores):
 * a conversion that large is streamed to a file or a mapping, not read
 * back soon, and skipping the read-for-ownership of the output lines
 * saves a third of the memory traffic of F32 -> BF16. Smaller outputs
 * stay in cache for whoever reads them next.
 */
#define NT_BYTES ((size_t)8 << 20)

static inline __attribute__((always_inline, target(T512))) void
k512_loop(st_dtype dt, void *dst, st_dtype srct, const void *src, size_t n,
          st_convert_stats *stats, int want, convert_fn *scalar)
{
	const size_t ss = fsize(srct), ds = fsize(dt);
	/* The size of one full step's store (two for F64), its alignment. */
	const size_t align = ds == 8 ? 64 : 16 * ds;
	unsigned char *d = dst;
	const unsigned char *s = src;
	uint64_t ovf = 0, unf = 0;
	size_t i = 0;

	if (n >= NT_BYTES / ds && (uintptr_t)d % ds == 0) {
		size_t head = (align - (uintptr_t)d % align) % align / ds;
		if (head) {
			k512_step(dt, d, srct, s, 0, 0, (__mmask16)((1u << head) - 1), want, &ovf, &unf, scalar);
			i += head, s += head * ss, d += head * ds;
		}
		for (; i + 16 <= n; i += 16, s += 16 * ss, d += 16 * ds)
			k512_step(dt, d, srct, s, 1, 1, 0xFFFF, want, &ovf, &unf, scalar);
		_mm_sfence();
	}
	for (; i + 16 <= n; i += 16, s += 16 * ss, d += 16 * ds)
		k512_step(dt, d, srct, s, 1, 0, 0xFFFF, want, &ovf, &unf, scalar);
	if (i < n)
		k512_step(dt, d, srct, s, 0, 0, (__mmask16)((1u << (n - i)) - 1), want, &ovf, &unf, scalar);
	if (want) {
		stats->overflow += ovf;
		stats->underflow += unf;
	}
}

#define K512_FN(D, S) \
	static __attribute__((target(T512))) void \
	k512_##S##_##D(void *dst, const void *src, size_t n, st_convert_stats *stats) \
	{ \
		if (stats && can_lose(ST_DTYPE_##D, ST_DTYPE_##S)) \
			k512_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats, 1, scalar_##S##_##D); \
		else \
			k512_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats, 0, scalar_##S##_##D); \
	}
FOR_EACH_PAIR(K512_FN)
#define K512_ENTRY(D, S) TABLE_ENTRY(k512, D, S)
static convert_fn *const k512_table[4][4] = {FOR_EACH_PAIR(K512_ENTRY)};

/*
 * F16C straight from CPUID: clang's __builtin_cpu_supports does not know
 * it. The OS support for YMM state is part of the "avx2" test.
 */
static int has_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

static int isa_available(int isa);

static int isa_detect(int isa)
{
	switch (isa) {
	case ST__ISA_SCALAR:
		return 1;
	case ST__ISA_AVX2:
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") &&
		       has_f16c();
	case ST__ISA_AVX512:
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") && isa_detect(ST__ISA_AVX2);
	default:
		return 0;
	}
}

static convert_fn *pick(int isa, st_dtype dst, st_dtype src)
{
	int di = fidx(dst), si = fidx(src);

	if (isa != ST__ISA_SCALAR && pair_uses_fpu(dst, src) && !mxcsr_default())
		isa = ST__ISA_SCALAR;
	if (isa == ST__ISA_AVX512)
		return k512_table[di][si];
	if (isa == ST__ISA_AVX2)
		return k256_table[di][si];
	return scalar_table[di][si];
}

static int best_isa(void)
{
	if (isa_available(ST__ISA_AVX512))
		return ST__ISA_AVX512;
	if (isa_available(ST__ISA_AVX2))
		return ST__ISA_AVX2;
	return ST__ISA_SCALAR;
}

#else /* !ST_X86 */

static int isa_detect(int isa)
{
	return isa == ST__ISA_SCALAR;
}

static convert_fn *pick(int isa, st_dtype dst, st_dtype src)
{
	(void)isa;
	return scalar_table[fidx(dst)][fidx(src)];
}

static int best_isa(void)
{
	return ST__ISA_SCALAR;
}

#endif /* ST_X86 */

/* ---- st_convert for the 8- and 4-bit types ------------------------------ */

/*
 * Decoding tables, F32 bits for every code, built once from the reference
 * functions above (f8b_to_f32b, f4b_to_f32b) and never written after.
 * Index: 0..4 the F8 types in enum order from F8_E5M2, 5 F4 (16 entries).
 */
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;
static uint32_t f8_luts[6][256];

static void lut_init(void)
{
	for (int t = 0; t < 5; t++)
		for (unsigned c = 0; c < 256; c++)
			f8_luts[t][c] = f8b_to_f32b((st_dtype)(ST_DTYPE_F8_E5M2 + t), c);
	for (unsigned c = 0; c < 16; c++)
		f8_luts[5][c] = f4b_to_f32b(c);
}

const uint32_t *st__f8_table(st_dtype t)
{
	if (!is_f8(t) && t != ST_DTYPE_F4)
		return NULL;
	pthread_once(&lut_once, lut_init);
	return f8_luts[t == ST_DTYPE_F4 ? 5 : t - ST_DTYPE_F8_E5M2];
}

/*
 * k elements of an F8 or F4 buffer to F32 bits: the reference functions
 * (isa 0) or the tables (the same bits). F4 holds element 2i in bits 3..0
 * of byte i and element 2i + 1 in bits 7..4, PyTorch's float4_e2m1fn_x2
 * order (torch/headeronly/util/Float4_e2m1fn_x2.h: "val1 : val0", bits
 * "7654 : 3210").
 */
static void decode_narrow(int isa, st_dtype t, uint32_t *out, const unsigned char *s, size_t k)
{
	if (t == ST_DTYPE_F4) {
		const uint32_t *lut = isa ? st__f8_table(t) : NULL;
		for (size_t i = 0; i < k / 2; i++) {
			out[2 * i] = lut ? lut[s[i] & 15] : f4b_to_f32b(s[i] & 15u);
			out[2 * i + 1] = lut ? lut[s[i] >> 4] : f4b_to_f32b(s[i] >> 4);
		}
		return;
	}
	if (!isa) {
		for (size_t i = 0; i < k; i++)
			out[i] = f8b_to_f32b(t, s[i]);
		return;
	}
	const uint32_t *lut = st__f8_table(t);
	for (size_t i = 0; i < k; i++)
		out[i] = lut[s[i]];
}

#if ST_X86
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

static inline __attribute__((always_inline, target(T256))) size_t
e4m3_256(unsigned char *d, const uint32_t *src, size_t k, uint64_t *ovf, uint64_t *unf)
{
	const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	                                      -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1,
	                                      -1, -1, -1, -1);
	size_t i = 0;

	for (; i + 8 <= k; i += 8) {
		__m256i x = _mm256_loadu_si256((const void *)(src + i));
		E4M3_LANES(256, _mm256);
		__m256i norm = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x3C7FFFFF));
		__m256i special = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F7FFFFF));
		__m256i q = _mm256_blendv_epi8(qs, qn, norm);
		__m256i over = _mm256_andnot_si256(special, _mm256_and_si256(
			norm, _mm256_cmpgt_epi32(qn, _mm256_set1_epi32(0x7E))));
		q = _mm256_min_epu32(q, _mm256_set1_epi32(0x7E));
		q = _mm256_blendv_epi8(q, _mm256_set1_epi32(0x7F), special);
		__m256i zero = _mm256_setzero_si256();
		__m256i under = _mm256_andnot_si256(_mm256_cmpeq_epi32(a, zero),
		                                    _mm256_cmpeq_epi32(q, zero));
		*ovf += lanes8((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(over)));
		*unf += lanes8((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(under)));
		__m256i c = _mm256_shuffle_epi8(_mm256_or_si256(q, sign), pick);
		__m128i b = _mm_unpacklo_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
		_mm_storel_epi64((void *)(d + i), b);
	}
	return i;
}

static inline __attribute__((always_inline, target(T512))) size_t
e4m3_512(unsigned char *d, const uint32_t *src, size_t k, uint64_t *ovf, uint64_t *unf)
{
	size_t i = 0;

	for (; i + 16 <= k; i += 16) {
		__m512i x = _mm512_loadu_si512((const void *)(src + i));
		E4M3_LANES(512, _mm512);
		__mmask16 norm = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x3C7FFFFF));
		__mmask16 special = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7F7FFFFF));
		__m512i q = _mm512_mask_blend_epi32(norm, qs, qn);
		__mmask16 over = norm & ~special & _mm512_cmpgt_epi32_mask(qn, _mm512_set1_epi32(0x7E));
		q = _mm512_min_epu32(q, _mm512_set1_epi32(0x7E));
		q = _mm512_mask_blend_epi32(special, q, _mm512_set1_epi32(0x7F));
		__mmask16 under = _mm512_cmpeq_epi32_mask(q, _mm512_setzero_si512()) &
		                  _mm512_cmpneq_epi32_mask(a, _mm512_setzero_si512());
		*ovf += (uint64_t)__builtin_popcount(over);
		*unf += (uint64_t)__builtin_popcount(under);
		_mm_storeu_si128((void *)(d + i), _mm512_cvtepi32_epi8(_mm512_or_si512(q, sign)));
	}
	return i;
}

static __attribute__((target(T256))) size_t e4m3_avx2(unsigned char *d, const uint32_t *x,
                                                      size_t k, uint64_t *ovf, uint64_t *unf)
{
	return e4m3_256(d, x, k, ovf, unf);
}

static __attribute__((target(T512))) size_t e4m3_avx512(unsigned char *d, const uint32_t *x,
                                                        size_t k, uint64_t *ovf, uint64_t *unf)
{
	return e4m3_512(d, x, k, ovf, unf);
}
#endif

/*
 * k F32 values (bits) to an F8 type, counting what saturated or vanished:
 * E4M3 by the kernels above where isa has them (the tail and every other
 * type by f32b_to_f8b).
 */
static void encode_f8(int isa, st_dtype t, unsigned char *d, const uint32_t *x, size_t k,
                      uint64_t *ovf, uint64_t *unf)
{
	uint64_t o = 0, u = 0;
	size_t i = 0;

#if ST_X86 && (!defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
	if (t == ST_DTYPE_F8_E4M3 && isa == ST__ISA_AVX512)
		i = e4m3_avx512(d, x, k, &o, &u);
	else if (t == ST_DTYPE_F8_E4M3 && isa == ST__ISA_AVX2)
		i = e4m3_avx2(d, x, k, &o, &u);
#else
	(void)isa;
#endif
	for (; i < k; i++) {
		int io = 0, iu = 0;
		uint32_t v;
		memcpy(&v, x + i, 4);
		d[i] = (unsigned char)f32b_to_f8b(t, LE32(v), &io, &iu);
		o += (unsigned)io;
		u += (unsigned)iu;
	}
	*ovf += o;
	*unf += u;
}

/*
 * Every pair with an F8 or F4 side goes through F32 in chunks: the source
 * is decoded exactly (an F64 rounded once, a finite one past the F32 range
 * held at +-FLT_MAX so that it saturates rather than turning into an Inf
 * the F8 type may lack), then encoded or handed to the wide kernels. The
 * chunk is read whole before it is written, so dst == src works for
 * same-size types.
 */
enum { NARROW_CHUNK = 512 };

static void convert_narrow(int isa, st_dtype dt, void *dst, st_dtype srct, const void *src,
                           size_t n, st_convert_stats *stats)
{
	uint32_t buf[NARROW_CHUNK];
	const unsigned char *s = src;
	unsigned char *d = dst;
	const unsigned sbits = st_dtype_bits(srct), dbits = st_dtype_bits(dt);
	uint64_t ovf = 0, unf = 0;

	for (size_t i = 0; i < n;) {
		size_t k = n - i < NARROW_CHUNK ? n - i : NARROW_CHUNK;
		const uint32_t *f = buf;

		if (srct == ST_DTYPE_F64) {
			for (size_t j = 0; j < k; j++) {
				uint64_t x = ld64(s + 8 * j);
				uint32_t v = f64b_to_f32b(x);
				if ((v & F32_ABS) == F32_INF && (x & F64_ABS) != F64_INF)
					v = (v & 0x80000000u) | 0x7F7FFFFFu;
				buf[j] = LE32(v);
			}
		} else if (srct == ST_DTYPE_F32) {
			memcpy(buf, s, k * 4); /* dst may be src */
		} else if (st_dtype_is_wide_float(srct)) {
			pick(isa, ST_DTYPE_F32, srct)(buf, s, k, NULL);
		} else {
			decode_narrow(isa, srct, buf, s, k);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
			for (size_t j = 0; j < k; j++)
				buf[j] = LE32(buf[j]);
#endif
		}
		if (dt == ST_DTYPE_F32)
			memcpy(d, f, k * 4);
		else if (st_dtype_is_wide_float(dt))
			pick(isa, dt, ST_DTYPE_F32)(d, f, k, stats);
		else
			encode_f8(isa, dt, d, f, k, &ovf, &unf);
		i += k;
		s += k * sbits / 8;
		d += k * dbits / 8;
	}
	if (stats) {
		stats->overflow += ovf;
		stats->underflow += unf;
	}
}

/*
 * What the CPU offers is read once: CPUID traps to the hypervisor in a VM
 * and costs microseconds, which adds up over many small conversions. The
 * cache is written once, under pthread_once, and never changes after.
 */
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static int isa_cache[3];

static void isa_init(void)
{
	for (int i = 0; i < 3; i++)
		isa_cache[i] = isa_detect(i);
}

static int isa_available(int isa)
{
	if (isa < 0 || isa > 2)
		return 0;
	pthread_once(&isa_once, isa_init);
	return isa_cache[isa];
}

int st__convert_isa(int isa, st_dtype dst_type, void *dst, st_dtype src_type,
                    const void *src, size_t n, st_convert_stats *stats)
{
	int status;

	if (!isa_available(isa))
		return ST_EUNSUPPORTED;
	if (convert_trivial(dst_type, dst, src_type, src, n, &status))
		return status;
	if (st_dtype_is_wide_float(dst_type) && st_dtype_is_wide_float(src_type))
		pick(isa, dst_type, src_type)(dst, src, n, stats);
	else
		convert_narrow(isa, dst_type, dst, src_type, src, n, stats);
	return ST_OK;
}

int st_convert(st_dtype dst_type, void *dst, st_dtype src_type, const void *src,
               size_t n, st_convert_stats *stats)
{
	return st__convert_isa(best_isa(), dst_type, dst, src_type, src, n, stats);
}
