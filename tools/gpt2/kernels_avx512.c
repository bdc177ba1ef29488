/*
 * kernels_avx512.c - the AVX-512 kernel table (kernels.h): 16 F32 lanes,
 * weights widened in registers (BF16: zero-extend and shift left by 16,
 * or for decode a shift and an AND per 32 weights;
 * F16: vcvtph2ps), fused multiply-add, masked loads and stores for the
 * ragged ends. Compiled for AVX-512F/BW/VL/DQ (GPT2_TARGET_AVX512_BEGIN)
 * and run only where kernels.c found those on the CPU. The loops shared
 * with the AVX2 table are in kernels_simd.inc; the prompt's 6 x 64
 * register tile is here.
 *
 * AVX512_BF16's dot-product instruction is not used: it would round the
 * activations to BF16, which changes results far beyond float rounding.
 */
#if defined(__x86_64__) && defined(__GNUC__)

#include "gpt2/kernels.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

GPT2_TARGET_AVX512_BEGIN

#define INLINE static inline __attribute__((always_inline))

#define VEC __m512
#define VW 16
#define V_ZERO() _mm512_setzero_ps()
#define V_SET1(x) _mm512_set1_ps(x)
#define V_LOADU(p) _mm512_loadu_ps(p)
#define V_STOREU(p, v) _mm512_storeu_ps(p, v)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_MIN(a, b) _mm512_min_ps(a, b)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_ROUND(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_POW2(n, p) _mm512_scalef_ps(p, n)
#define V_HSUM(v) _mm512_reduce_add_ps(v)
/* vscalefps gives 0 and infinity where they belong: a wide clamp. */
#define EXP_LO -104.0f
#define EXP_HI 89.0f

INLINE __mmask16 tail_mask(int n)
{
	return (__mmask16)((1u << n) - 1u);
}

INLINE __m512 widen16(__m256i h, st_dtype wt)
{
	if (wt == ST_DTYPE_BF16)
		return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
	return _mm512_cvtph_ps(h);
}

/* 16 weights from element i of w (type wt, a constant once inlined). */
INLINE __m512 load_w(const void *w, st_dtype wt, size_t i)
{
	if (wt == ST_DTYPE_F32)
		return _mm512_loadu_ps((const float *)w + i);
	return widen16(_mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i)), wt);
}

/* The first n of them (nothing read past them), the other lanes 0. */
INLINE __m512 load_w_part(const void *w, st_dtype wt, size_t i, int n)
{
	__mmask16 m = tail_mask(n);
	if (wt == ST_DTYPE_F32)
		return _mm512_maskz_loadu_ps(m, (const float *)w + i);
	return widen16(_mm256_maskz_loadu_epi16(m, (const uint16_t *)w + i), wt);
}

INLINE __m512 load_part(const float *p, int n)
{
	return _mm512_maskz_loadu_ps(tail_mask(n), p);
}

INLINE void store_part(float *p, __m512 v, int n)
{
	_mm512_mask_storeu_ps(p, tail_mask(n), v);
}

enum { PANEL = 64, MR = 6 };

#include "gpt2/kernels_simd.inc"

/*
 * Decode with BF16 weights, 32 columns per 512-bit load: the shift gives
 * the even columns (low halves), the AND the odd ones (high halves), with
 * no widening shuffle. The partial row is kept in that order, 32 columns
 * as 16 even then 16 odd, and put back in column order once at the end.
 * Each column still sums its rows in order from +0, one FMA per row, so
 * the bits equal mv_body's. Columns past the last 32 take the 16-wide
 * loads.
 */
INLINE void bf16_pair(const uint16_t *p, __m512 *even, __m512 *odd)
{
	__m512i v = _mm512_loadu_si512((const void *)p);
	*even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
	*odd = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u)));
}

static void mv_bf16(float *part, const float *x, const uint16_t *w, int rows,
                    int OUT)
{
	size_t ld = (size_t)OUT;
	int full = OUT - OUT % 32;
	int r = 0;
	for (; r + 4 <= rows; r += 4) {
		__m512 x0 = _mm512_set1_ps(x[r]), x1 = _mm512_set1_ps(x[r + 1]);
		__m512 x2 = _mm512_set1_ps(x[r + 2]), x3 = _mm512_set1_ps(x[r + 3]);
		const uint16_t *w0 = w + (size_t)r * ld;
		/* The next four rows, fetched while these are summed. */
		const char *pf = (const char *)(w0 + 4 * ld);
		int npf = rows - r - 4 < 4 ? rows - r - 4 : 4;
		for (int o = 0; o < full; o += 32) {
			__m512 e = r ? _mm512_loadu_ps(part + o) : _mm512_setzero_ps();
			__m512 d = r ? _mm512_loadu_ps(part + o + 16) : _mm512_setzero_ps();
			for (int k = 0; k < npf; k++)
				_mm_prefetch(pf + ((size_t)k * ld + (size_t)o) * 2, _MM_HINT_T0);
			__m512 we, wd;
			bf16_pair(w0 + o, &we, &wd);
			e = _mm512_fmadd_ps(x0, we, e);
			d = _mm512_fmadd_ps(x0, wd, d);
			bf16_pair(w0 + ld + o, &we, &wd);
			e = _mm512_fmadd_ps(x1, we, e);
			d = _mm512_fmadd_ps(x1, wd, d);
			bf16_pair(w0 + 2 * ld + o, &we, &wd);
			e = _mm512_fmadd_ps(x2, we, e);
			d = _mm512_fmadd_ps(x2, wd, d);
			bf16_pair(w0 + 3 * ld + o, &we, &wd);
			e = _mm512_fmadd_ps(x3, we, e);
			d = _mm512_fmadd_ps(x3, wd, d);
			_mm512_storeu_ps(part + o, e);
			_mm512_storeu_ps(part + o + 16, d);
		}
	}
	for (; r < rows; r++) {
		__m512 x0 = _mm512_set1_ps(x[r]);
		const uint16_t *w0 = w + (size_t)r * ld;
		for (int o = 0; o < full; o += 32) {
			__m512 e = r ? _mm512_loadu_ps(part + o) : _mm512_setzero_ps();
			__m512 d = r ? _mm512_loadu_ps(part + o + 16) : _mm512_setzero_ps();
			__m512 we, wd;
			bf16_pair(w0 + o, &we, &wd);
			_mm512_storeu_ps(part + o, _mm512_fmadd_ps(x0, we, e));
			_mm512_storeu_ps(part + o + 16, _mm512_fmadd_ps(x0, wd, d));
		}
	}
	/* Back to column order: lane j of the even half is column 2j. */
	const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2,
	                                    17, 1, 16, 0);
	const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11,
	                                    26, 10, 25, 9, 24, 8);
	for (int o = 0; o < full && rows > 0; o += 32) {
		__m512 e = _mm512_loadu_ps(part + o), d = _mm512_loadu_ps(part + o + 16);
		_mm512_storeu_ps(part + o, _mm512_permutex2var_ps(e, lo, d));
		_mm512_storeu_ps(part + o + 16, _mm512_permutex2var_ps(e, hi, d));
	}
	for (int o = full; o < OUT; o += 16) {
		int n = OUT - o < 16 ? OUT - o : 16;
		__m512 acc = _mm512_setzero_ps();
		for (int k = 0; k < rows; k++)
			acc = _mm512_fmadd_ps(_mm512_set1_ps(x[k]),
			                      load_w_part(w, ST_DTYPE_BF16, (size_t)k * ld + (size_t)o, n),
			                      acc);
		store_part(part + o, acc, n);
	}
	if (rows == 0)
		for (int o = 0; o < full; o++)
			part[o] = 0.0f;
}

static void mv_avx512(float *part, const float *x, const void *w, st_dtype wt,
                      int rows, int OUT)
{
	if (wt == ST_DTYPE_BF16)
		mv_bf16(part, x, (const uint16_t *)w, rows, OUT);
	else
		simd_mv(part, x, w, wt, rows, OUT);
}

/*
 * The prompt's register tile: 6 rows by 64 columns (24 accumulators), per
 * k four panel loads and six broadcasts for 24 FMAs.
 */
static void gemm_avx512(float *out, size_t ldo, const float *a, size_t lda,
                        const float *panel, const float *bias, int T, int IN,
                        int nc)
{
	__m512 bz[4];
	__mmask16 mk[4];
	for (int j = 0; j < 4; j++) {
		int n = nc - 16 * j;
		mk[j] = n >= 16 ? 0xFFFF : n > 0 ? tail_mask(n) : 0;
		bz[j] = bias ? _mm512_maskz_loadu_ps(mk[j], bias + 16 * j) : _mm512_setzero_ps();
	}
	for (int t0 = 0; t0 < T; t0 += MR) {
		int mr = T - t0 < MR ? T - t0 : MR;
		/* Rows past the end repeat the last one; their sums are dropped. */
		const float *ar[MR];
		for (int r = 0; r < MR; r++)
			ar[r] = a + (size_t)(t0 + (r < mr ? r : mr - 1)) * lda;
		__m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
		__m512 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
		__m512 c20 = c00, c21 = c00, c22 = c00, c23 = c00;
		__m512 c30 = c00, c31 = c00, c32 = c00, c33 = c00;
		__m512 c40 = c00, c41 = c00, c42 = c00, c43 = c00;
		__m512 c50 = c00, c51 = c00, c52 = c00, c53 = c00;
		const float *b = panel;
		for (int k = 0; k < IN; k++, b += PANEL) {
			__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
			__m512 b2 = _mm512_loadu_ps(b + 32), b3 = _mm512_loadu_ps(b + 48);
			__m512 x;
#define ROW(r)                                          \
			x = _mm512_set1_ps(ar[r][k]);               \
			c##r##0 = _mm512_fmadd_ps(x, b0, c##r##0);  \
			c##r##1 = _mm512_fmadd_ps(x, b1, c##r##1);  \
			c##r##2 = _mm512_fmadd_ps(x, b2, c##r##2);  \
			c##r##3 = _mm512_fmadd_ps(x, b3, c##r##3);
			ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
		}
		__m512 c[MR][4] = {
			{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23},
			{c30, c31, c32, c33}, {c40, c41, c42, c43}, {c50, c51, c52, c53},
		};
		for (int r = 0; r < mr; r++) {
			float *o = out + (size_t)(t0 + r) * ldo;
			for (int j = 0; j < 4 && mk[j]; j++) {
				__m512 v = bias ? _mm512_add_ps(c[r][j], bz[j]) : c[r][j];
				_mm512_mask_storeu_ps(o + 16 * j, mk[j], v);
			}
		}
	}
}

const gpt2_kernels gpt2_kernels_avx512 = {
	"avx512", PANEL, mv_avx512, simd_dots, simd_pack, gemm_avx512,
	simd_attend, simd_gelu,
};

GPT2_TARGET_END

#endif
