/*
 * dtype_f8.c - the 8- and 4-bit float types (the F8 variants, E8M0 and
 * F4): their scalar reference conversions (st_f8_to_f32, st_f32_to_f8),
 * their decoding tables, and st_convert for every pair with an F8 or F4
 * side, which goes through F32 and the wide kernels. The vector E4M3
 * encoders are in the ISA files (dtype_avx2.c, dtype_avx512.c), the
 * choice of kernel in dtype.c.
 */
#include "dtype_internal.h"

#include <pthread.h>
#include <string.h>

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
		i = st__e4m3_avx512(d, x, k, &o, &u);
	else if (t == ST_DTYPE_F8_E4M3 && isa == ST__ISA_AVX2)
		i = st__e4m3_avx2(d, x, k, &o, &u);
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

void st__convert_narrow(int isa, st_dtype dt, void *dst, st_dtype srct, const void *src,
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
			st__convert_pick(isa, ST_DTYPE_F32, srct)(buf, s, k, NULL);
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
			st__convert_pick(isa, dt, ST_DTYPE_F32)(d, f, k, stats);
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
