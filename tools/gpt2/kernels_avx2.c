/*
 * kernels_avx2.c - the AVX2 kernel table (kernels.h): 8 F32 lanes with
 * FMA, weights widened in registers (BF16: zero-extend and shift; F16:
 * F16C's vcvtph2ps). Ragged ends go through a small zero-padded copy, as
 * AVX2 has no masked 16-bit loads. Compiled for AVX2+FMA+F16C
 * (GPT2_TARGET_AVX2_BEGIN) and run only where kernels.c found those on
 * the CPU. The loops shared with the AVX-512 table are in
 * kernels_simd.inc; the prompt's 6 x 16 register tile is here.
 */
#if defined(__x86_64__) && defined(__GNUC__)

#include "gpt2/kernels.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

GPT2_TARGET_AVX2_BEGIN

#define INLINE static inline __attribute__((always_inline))

INLINE float hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* 2^n in the exponent field: n within [-126, 127] after the clamp. */
INLINE __m256 pow2_mul(__m256 n, __m256 p)
{
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
	                                               _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#define VEC __m256
#define VW 8
#define V_ZERO() _mm256_setzero_ps()
#define V_SET1(x) _mm256_set1_ps(x)
#define V_LOADU(p) _mm256_loadu_ps(p)
#define V_STOREU(p, v) _mm256_storeu_ps(p, v)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_ROUND(v) _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_POW2(n, p) pow2_mul(n, p)
#define V_HSUM(v) hsum(v)
#define EXP_LO -87.0f
#define EXP_HI 88.0f

/* 8 weights from element i of w (type wt, a constant once inlined). */
INLINE __m256 load_w(const void *w, st_dtype wt, size_t i)
{
	if (wt == ST_DTYPE_F32)
		return _mm256_loadu_ps((const float *)w + i);
	__m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
	if (wt == ST_DTYPE_BF16)
		return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
	return _mm256_cvtph_ps(h);
}

/* The first n (< 8) weights from element i, the other lanes 0. */
INLINE __m256 load_w_part(const void *w, st_dtype wt, size_t i, int n)
{
	if (wt == ST_DTYPE_F32) {
		float b[8] = {0};
		memcpy(b, (const float *)w + i, (size_t)n * 4);
		return _mm256_loadu_ps(b);
	}
	uint16_t b[8] = {0};
	memcpy(b, (const uint16_t *)w + i, (size_t)n * 2);
	return load_w(b, wt, 0);
}

INLINE __m256 load_part(const float *p, int n)
{
	float b[8] = {0};
	memcpy(b, p, (size_t)n * 4);
	return _mm256_loadu_ps(b);
}

INLINE void store_part(float *p, __m256 v, int n)
{
	float b[8];
	_mm256_storeu_ps(b, v);
	memcpy(p, b, (size_t)n * 4);
}

enum { PANEL = 16, MR = 6 };

#include "gpt2/kernels_simd.inc"

/*
 * The prompt's register tile: 6 rows by 16 columns (12 accumulators of the
 * 16 registers), per k two panel loads and six broadcasts for 12 FMAs.
 */
static void gemm_avx2(float *out, size_t ldo, const float *a, size_t lda,
                      const float *panel, const float *bias, int T, int IN, int nc)
{
	float bb[PANEL] = {0};
	if (bias)
		memcpy(bb, bias, (size_t)nc * 4);
	__m256 bz0 = _mm256_loadu_ps(bb), bz1 = _mm256_loadu_ps(bb + 8);
	for (int t0 = 0; t0 < T; t0 += MR) {
		int mr = T - t0 < MR ? T - t0 : MR;
		const float *ar[MR];
		for (int r = 0; r < MR; r++)
			ar[r] = a + (size_t)(t0 + (r < mr ? r : mr - 1)) * lda;
		__m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
		__m256 c20 = c00, c21 = c00, c30 = c00, c31 = c00;
		__m256 c40 = c00, c41 = c00, c50 = c00, c51 = c00;
		const float *b = panel;
		for (int k = 0; k < IN; k++, b += PANEL) {
			__m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
			__m256 x;
#define ROW(r)                                          \
			x = _mm256_broadcast_ss(ar[r] + k);         \
			c##r##0 = _mm256_fmadd_ps(x, b0, c##r##0);  \
			c##r##1 = _mm256_fmadd_ps(x, b1, c##r##1);
			ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
		}
		__m256 c[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21},
		                   {c30, c31}, {c40, c41}, {c50, c51}};
		for (int r = 0; r < mr; r++) {
			float *o = out + (size_t)(t0 + r) * ldo;
			__m256 v0 = bias ? _mm256_add_ps(c[r][0], bz0) : c[r][0];
			__m256 v1 = bias ? _mm256_add_ps(c[r][1], bz1) : c[r][1];
			if (nc == PANEL) {
				_mm256_storeu_ps(o, v0);
				_mm256_storeu_ps(o + 8, v1);
			} else {
				float tmp[PANEL];
				_mm256_storeu_ps(tmp, v0);
				_mm256_storeu_ps(tmp + 8, v1);
				memcpy(o, tmp, (size_t)nc * 4);
			}
		}
	}
}

const gpt2_kernels gpt2_kernels_avx2 = {
	"avx2", PANEL, simd_mv, simd_dots, simd_pack, gemm_avx2,
	simd_attend, simd_gelu,
};

GPT2_TARGET_END

#endif
