/*
 * dtype_avx2.c - the AVX2 + F16C conversion kernels of st_convert (8
 * elements a step, the tail in scalar code) and the AVX2 E4M3 encoder.
 * Compiled with the project's flags: each function carries
 * target(T256), and dtype.c calls them only on a CPU that has it. Empty
 * on other architectures. The scalar reference is in dtype.c.
 */
#include "dtype_internal.h"

#if ST_X86

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
			k256_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats, 1, st__scalar_##S##_##D); \
		else \
			k256_loop(ST_DTYPE_##D, dst, ST_DTYPE_##S, src, n, stats, 0, st__scalar_##S##_##D); \
	}
FOR_EACH_PAIR(K256_FN)
#define K256_ENTRY(D, S) TABLE_ENTRY(k256, D, S)
convert_fn *const st__k256_table[4][4] = {FOR_EACH_PAIR(K256_ENTRY)};

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

__attribute__((target(T256))) size_t st__e4m3_avx2(unsigned char *d, const uint32_t *x,
                                                    size_t k, uint64_t *ovf, uint64_t *unf)
{
	return e4m3_256(d, x, k, ovf, unf);
}

#endif /* ST_X86 */
