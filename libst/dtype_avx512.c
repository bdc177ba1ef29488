/*
 * dtype_avx512.c - the AVX-512 conversion kernels of st_convert (16
 * elements a step, the tail with masked loads and stores) and the
 * AVX-512 E4M3 encoder. Compiled with the project's flags: each function
 * carries target(T512), and dtype.c calls them only on a CPU that has
 * it. Empty on other architectures. The scalar reference is in dtype.c.
 */
#include "dtype_internal.h"

#if ST_X86

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
		/* Unoptimized, gcc's avx512fintrin.h makes this a macro that passes
		 * the mask -1 as an __mmask16: its conversion, not ours. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
		h = _mm512_cvt_roundps_ph(_mm512_castsi512_ps(x),
		                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#pragma GCC diagnostic pop
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
			k512_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats, 1, st__scalar_##S##_##D); \
		else \
			k512_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats, 0, st__scalar_##S##_##D); \
	}
FOR_EACH_PAIR(K512_FN)
#define K512_ENTRY(D, S) TABLE_ENTRY(k512, D, S)
convert_fn *const st__k512_table[4][4] = {FOR_EACH_PAIR(K512_ENTRY)};

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

__attribute__((target(T512))) size_t st__e4m3_avx512(unsigned char *d, const uint32_t *x,
                                                      size_t k, uint64_t *ovf, uint64_t *unf)
{
	return e4m3_512(d, x, k, ovf, unf);
}

#endif /* ST_X86 */
