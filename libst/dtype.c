/*
 * dtype.c - the dtype table (names, sizes) and st_convert between the
 * float types: the four wide ones (F64, F32, F16, BF16) and, through F32,
 * the 8- and 4-bit ones (the F8 variants, E8M0 and F4; dtype_f8.c).
 *
 * This file holds the scalar reference path of the wide types, written
 * with integer bit operations only (dtype_internal.h), so its result never
 * depends on the floating-point environment (rounding mode, flush-to-zero,
 * denormals-are-zero, trapping), and the choice, at run time, of the x86
 * kernels (AVX2 + F16C in dtype_avx2.c, AVX-512 in dtype_avx512.c) that
 * give exactly the same bits. It does not convert integer, complex or
 * 6-bit float types (F6_E2M3, F6_E3M2), nor to F4: those are copied or
 * refused by the callers (st_convert_supported says which pairs it does).
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
#include "dtype_internal.h"

#include <pthread.h>

#include <assert.h>
#include <string.h>

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

/* ---- scalar st_convert ----------------------------------------------------- */

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
		unsigned sinf, szero, dinf = 0, dzero = 0; /* 0 or 1: counted below */

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

#define SCALAR_FN(D, S) \
	void st__scalar_##S##_##D(void *dst, const void *src, size_t n, \
	                          st_convert_stats *stats) \
	{ \
		scalar_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats); \
	}
FOR_EACH_PAIR(SCALAR_FN)

#define SCALAR_ENTRY(D, S) TABLE_ENTRY(st__scalar, D, S)

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

int st__convert_scalar(st_dtype dst_type, void *dst, st_dtype src_type,
                       const void *src, size_t n, st_convert_stats *stats)
{
	int status;

	if (convert_trivial(dst_type, dst, src_type, src, n, &status))
		return status;
	if (st_dtype_is_wide_float(dst_type) && st_dtype_is_wide_float(src_type))
		scalar_table[fidx(dst_type)][fidx(src_type)](dst, src, n, stats);
	else
		st__convert_narrow(0, dst_type, dst, src_type, src, n, stats);
	return ST_OK;
}

/* ---- choosing a kernel -------------------------------------------------------- */

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
 * F16C straight from CPUID: clang's __builtin_cpu_supports does not know
 * it. The OS support for YMM state is part of the "avx2" test.
 */
static int has_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}


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

convert_fn *st__convert_pick(int isa, st_dtype dst, st_dtype src)
{
	int di = fidx(dst), si = fidx(src);

	if (isa != ST__ISA_SCALAR && pair_uses_fpu(dst, src) && !mxcsr_default())
		isa = ST__ISA_SCALAR;
	if (isa == ST__ISA_AVX512)
		return st__k512_table[di][si];
	if (isa == ST__ISA_AVX2)
		return st__k256_table[di][si];
	return scalar_table[di][si];
}

static int best_isa(void)
{
	if (st__isa_available(ST__ISA_AVX512))
		return ST__ISA_AVX512;
	if (st__isa_available(ST__ISA_AVX2))
		return ST__ISA_AVX2;
	return ST__ISA_SCALAR;
}

#else /* !ST_X86 */

static int isa_detect(int isa)
{
	return isa == ST__ISA_SCALAR;
}

convert_fn *st__convert_pick(int isa, st_dtype dst, st_dtype src)
{
	(void)isa;
	return scalar_table[fidx(dst)][fidx(src)];
}

static int best_isa(void)
{
	return ST__ISA_SCALAR;
}

#endif /* ST_X86 */

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

int st__isa_available(int isa)
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

	if (!st__isa_available(isa))
		return ST_EUNSUPPORTED;
	if (convert_trivial(dst_type, dst, src_type, src, n, &status))
		return status;
	if (st_dtype_is_wide_float(dst_type) && st_dtype_is_wide_float(src_type))
		st__convert_pick(isa, dst_type, src_type)(dst, src, n, stats);
	else
		st__convert_narrow(isa, dst_type, dst, src_type, src, n, stats);
	return ST_OK;
}

int st_convert(st_dtype dst_type, void *dst, st_dtype src_type, const void *src,
               size_t n, st_convert_stats *stats)
{
	return st__convert_isa(best_isa(), dst_type, dst, src_type, src, n, stats);
}
