/*
 * llama_fp8.c - scaled FP8 weights inside the Llama family's matrix
 * products (llama.h, llama_mat): a row decoded and scaled for the prompt's
 * packed panels, and the decode dot products, which read the FP8 bytes
 * where they lie. No dequantized copy of a weight is ever made.
 *
 * The value of a code is libst's (the model's table, filled by st_convert
 * at load). The decode's vector loops first multiply x by each column's
 * block scale, once per call and row of blocks (xs, in the caller's
 * scratch), so that a row's dot product is a plain one, xs . codes, with
 * no per-block sum to reduce and scale: the weights stream at the pace
 * of the memory. x comes from llama_fp8_prepare, once per product and
 * token rather than once per task: in the column order the AVX-512 loop
 * reads (below), so that a task only scales it. The codes become F32 in
 * registers:
 *   AVX-512 with VBMI: two 128-entry byte tables (vpermi2b) give the
 *     high and low bytes of the code's value as a BF16 (every E4M3 and
 *     E5M2 value is one exactly; the sign is ORed in), interleaved and
 *     widened as BF16 is; the model's table, so NaN codes give NaN.
 *   AVX2 (and AVX-512 without VBMI): E4M3 only, without a table: the
 *     code's bits moved into an F16's (sign to bit 15, exponent and
 *     mantissa shifted left 7) make an F16 of value x * 2^-8 exactly,
 *     subnormals included, which vcvtph2ps widens; the 2^8 goes into xs.
 *     Only NaN codes (0x7f, 0xff) differ: 480 instead of NaN; the loader
 *     scans the matrices this loop would run (llama_fp8_mark_nan) and
 *     sends one holding a NaN code to the portable loop instead.
 * Sums are F32, each output row reduced in a fixed order by one call.
 * The portable loop sums each block of columns and scales the block's
 * sum, as the format reads; the vector loops round x * scale instead, so
 * their last bits differ from it (tests/cli/strun.sh checks each kernel
 * against libst's dequantized weights).
 */
#include "gpt2/internal.h"
#include "gpt2/kernels.h"
#include "gpt2/llama.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

void llama_fp8_row(float *dst, const llama_mat *w, int IN, int r)
{
	const unsigned char *row = (const unsigned char *)w->w + (size_t)r * (size_t)IN;
	const float *s = w->scale + (size_t)(r / w->br) * (size_t)w->scols;
	/* Block by block: no division per value. */
	for (int b0 = 0, k = 0; b0 < IN; b0 += w->bc, k++) {
		int n = IN - b0 < w->bc ? IN - b0 : w->bc;
		for (int i = 0; i < n; i++)
			dst[b0 + i] = w->lut[row[b0 + i]] * s[k];
	}
}

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

int llama_fp8_bf16_table(unsigned char tab[256], const float lut[256])
{
	for (int c = 0; c < 128; c++) {
		uint32_t p = f32_bits(lut[c]), n = f32_bits(lut[c | 0x80]);
		if ((p & 0xFFFFu) != 0 || (p >> 31) != 0 ||
		    (isnan(lut[c]) ? !isnan(lut[c | 0x80]) : n != (p | 0x80000000u)))
			return 0;
		tab[c] = (unsigned char)(p >> 24);
		tab[128 + c] = (unsigned char)(p >> 16);
	}
	return 1;
}

/* Which loop a product of w with kernel table k runs (fp8_path). */
enum fp8_path { PORTABLE, AVX2, AVX512 };

/* Portable: lanes summed in a fixed order, per block of columns. */
static float row_dot_portable(const float *x, const unsigned char *row, const float *lut,
                              const float *s, int IN, int bc)
{
	float sum = 0.0f;
	for (int b0 = 0, k = 0; b0 < IN; b0 += bc, k++) {
		int n = IN - b0 < bc ? IN - b0 : bc;
		float lane[8] = {0};
		int i = 0;
		for (; i + 8 <= n; i += 8)
			for (int j = 0; j < 8; j++)
				lane[j] += x[b0 + i + j] * lut[row[b0 + i + j]];
		for (; i < n; i++)
			lane[0] += x[b0 + i] * lut[row[b0 + i]];
		float part = 0.0f;
		for (int j = 0; j < 8; j++)
			part += lane[j];
		sum += part * s[k];
	}
	return sum;
}

static int padded(int IN)
{
	return (IN + LLAMA_FP8_PAD - 1) / LLAMA_FP8_PAD * LLAMA_FP8_PAD;
}

#ifdef HAVE_X86
/* xs = x times its column's scale in scale row sr, then zeros up to
 * padded(IN). */
static void scale_x(float *xs, const float *x, const llama_mat *w, int IN, int sr)
{
	const float *s = w->scale + (size_t)sr * (size_t)w->scols;
	for (int b0 = 0, k = 0; b0 < IN; b0 += w->bc, k++) {
		int n = IN - b0 < w->bc ? IN - b0 : w->bc;
		for (int i = 0; i < n; i++)
			xs[b0 + i] = x[b0 + i] * s[k];
	}
	for (int i = IN; i < padded(IN); i++)
		xs[i] = 0.0f;
}

/* ---- AVX2: E4M3 through F16 bits ------------------------------------------ */

GPT2_TARGET_AVX2_BEGIN
/*
 * 16 codes to F16 bits: the byte sign-extended to 16 bits and shifted left
 * 7 puts exponent and mantissa at bits 7..13 and the sign at 14 and 15;
 * the AND clears 14. The F16 is the code's value times 2^-8.
 */
static inline __attribute__((always_inline)) void e4m3_acc(const unsigned char *p, const float *xs,
                                                           __m256 *a0, __m256 *a1)
{
	const __m256i keep = _mm256_set1_epi16((short)0xBF80);
	__m256i h = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(
							       _mm_loadu_si128((const __m128i *)p)),
	                                               7),
	                             keep);
	*a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xs), _mm256_cvtph_ps(_mm256_castsi256_si128(h)), *a0);
	*a1 = _mm256_fmadd_ps(_mm256_loadu_ps(xs + 8),
	                      _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), *a1);
}

/* scale_x times 2^8, 8 columns at a time. */
static void scaled_xs(float *xs, const float *x, const llama_mat *w, int IN, int sr)
{
	const float *s = w->scale + (size_t)sr * (size_t)w->scols;
	for (int b0 = 0, k = 0; b0 < IN; b0 += w->bc, k++) {
		int n = IN - b0 < w->bc ? IN - b0 : w->bc, i = 0;
		float sk = s[k] * 256.0f;
		for (; i + 8 <= n; i += 8)
			_mm256_storeu_ps(xs + b0 + i, _mm256_mul_ps(_mm256_loadu_ps(x + b0 + i),
			                                            _mm256_set1_ps(sk)));
		for (; i < n; i++)
			xs[b0 + i] = x[b0 + i] * sk;
	}
	for (int i = IN; i < padded(IN); i++)
		xs[i] = 0.0f;
}

static float hsum8(__m256 a)
{
	__m128 q = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
	q = _mm_add_ps(q, _mm_movehl_ps(q, q));
	q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
	return _mm_cvtss_f32(q);
}

/* out[j] = xs . row j for rows of IN codes at w (xs: padded(IN) floats, x
 * scaled times 2^8); two rows at a time, the rows KERNEL_FETCH_ROWS on fetched as they
 * go (kernels.h). */
static void dots_e4m3_avx2(float *out, const float *xs, const unsigned char *w, int IN, int n)
{
	size_t ld = (size_t)IN;
	int full = IN - IN % 16;
	for (int j = 0; j < n; j += 2) {
		int two = j + 1 < n;
		const unsigned char *p = w + (size_t)j * ld, *q = two ? p + ld : p;
		size_t ahead = KERNEL_FETCH_ROWS * ld;
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
		for (int i = 0; i < full; i += 16) {
			if (i % 64 == 0) {
				kernel_fetch(p + i, ahead);
				kernel_fetch(q + i, ahead);
			}
			e4m3_acc(p + i, xs + i, &a0, &a1);
			e4m3_acc(q + i, xs + i, &b0, &b1);
		}
		if (full < IN) {
			/* The last codes, zero-padded (code 0 is +0; so is xs there). */
			unsigned char tp[16] = {0}, tq[16] = {0};
			memcpy(tp, p + full, (size_t)(IN - full));
			memcpy(tq, q + full, (size_t)(IN - full));
			e4m3_acc(tp, xs + full, &a0, &a1);
			e4m3_acc(tq, xs + full, &b0, &b1);
		}
		out[j] = hsum8(_mm256_add_ps(a0, a1));
		if (two)
			out[j + 1] = hsum8(_mm256_add_ps(b0, b1));
	}
}

/* Whether one of the n codes at p is an E4M3 NaN (0x7f or 0xff). */
static int any_nan_e4m3_avx2(const unsigned char *p, size_t n)
{
	const __m256i sign = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi8((char)0xFF);
	size_t i = 0;
	while (i + 32 <= n) {
		/* 4 KiB between tests: the compare stays off the loop's path. */
		size_t end = n - i > 4096 ? i + 4096 : n - n % 32;
		__m256i any = _mm256_setzero_si256();
		for (; i < end; i += 32) {
			__m256i c = _mm256_loadu_si256((const __m256i *)(p + i));
			any = _mm256_or_si256(any,
			                      _mm256_cmpeq_epi8(_mm256_or_si256(c, sign), ones));
		}
		if (!_mm256_testz_si256(any, any))
			return 1;
	}
	for (; i < n; i++)
		if ((p[i] & 0x7f) == 0x7f)
			return 1;
	return 0;
}
GPT2_TARGET_END

/* ---- AVX-512 VBMI: codes through a BF16 byte table ------------------------ */

GPT2_TARGET_AVX512VBMI_BEGIN
typedef struct {
	__m512i h0, h1, l0, l1; /* high, low bytes of codes 0..63, 64..127 */
} bf16_tab;

/*
 * 64 codes at p (the first n when n < 64, the rest code 0) times xs, into
 * a and b: the BF16 words, lo | hi << 8, interleaved within each 128-bit
 * lane by unpack, then widened even and odd words apart (a shift, an
 * AND), so the four vectors hold the columns in the order permuted_xs
 * gives xs.
 */
static inline __attribute__((always_inline)) void
bf16_acc(const bf16_tab *t, const unsigned char *p, int n, const float *xs, __m512 *a, __m512 *b)
{
	__m512i c = n >= 64 ? _mm512_loadu_si512((const void *)p)
	                    : _mm512_maskz_loadu_epi8((__mmask64)((1ull << n) - 1ull), p);
	/* hi | (c & 0x80): the sign. */
	__m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(t->h0, c, t->h1), c,
	                                       _mm512_set1_epi8((char)0x80), 0xF8);
	__m512i lo = _mm512_permutex2var_epi8(t->l0, c, t->l1);
	__m512i w0 = _mm512_unpacklo_epi8(lo, hi), w1 = _mm512_unpackhi_epi8(lo, hi);
	const __m512i top = _mm512_set1_epi32((int)0xFFFF0000u);
	*a = _mm512_fmadd_ps(_mm512_loadu_ps(xs), _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16)),
	                     *a);
	*b = _mm512_fmadd_ps(_mm512_loadu_ps(xs + 16),
	                     _mm512_castsi512_ps(_mm512_and_si512(w0, top)), *b);
	*a = _mm512_fmadd_ps(_mm512_loadu_ps(xs + 32),
	                     _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16)), *a);
	*b = _mm512_fmadd_ps(_mm512_loadu_ps(xs + 48),
	                     _mm512_castsi512_ps(_mm512_and_si512(w1, top)), *b);
}

/*
 * Natural columns v[0..3] (64 from b) into bf16_acc's order at dst:
 * vector q (16 lanes, 4L + d) takes column 16L + 8(q / 2) + 2d + q % 2,
 * that is lane 8(q / 2) + q % 2 + 2d of v[L].
 */
static inline __attribute__((always_inline)) void store_permuted(float *dst, const __m512 v[4])
{
	for (int q = 0; q < 4; q++) {
		int base = 8 * (q / 2) + q % 2;
		/* Lanes 4L + d: from v0 (L 0), v1 (16 +: L 1), and for L 2, 3 the
		 * same from v2, v3. */
		__m512i idx =
			_mm512_setr_epi32(base, base + 2, base + 4, base + 6, 16 + base, 18 + base,
		                          20 + base, 22 + base, base, base + 2, base + 4, base + 6,
		                          16 + base, 18 + base, 20 + base, 22 + base);
		_mm512_storeu_ps(dst + 16 * q,
		                 _mm512_mask_blend_ps((__mmask16)0xFF00,
		                                      _mm512_permutex2var_ps(v[0], idx, v[1]),
		                                      _mm512_permutex2var_ps(v[2], idx, v[3])));
	}
}

/* Lanes of 16 columns from b + 16q that lie before IN. */
static inline __attribute__((always_inline)) __mmask16 lanes(int IN, int b, int q)
{
	int n = IN - b - 16 * q;
	return n >= 16 ? (__mmask16)0xFFFF : n > 0 ? (__mmask16)((1u << n) - 1u) : (__mmask16)0;
}

/* x (IN floats) into dst in bf16_acc's order, padded(IN) floats (the
 * padding exactly 0). */
static void permute_x(float *dst, const float *x, int IN)
{
	for (int b = 0; b < IN; b += 64) {
		__m512 v[4];
		for (int q = 0; q < 4; q++)
			v[q] = _mm512_maskz_loadu_ps(lanes(IN, b, q), x + b + 16 * q);
		store_permuted(dst + b, v);
	}
}

/*
 * xs for scale row sr in bf16_acc's order, padded(IN) floats (the
 * padding exactly 0), from px as llama_fp8_prepare left it: with blocks
 * of 64 columns or a multiple of it, already in that order, one scale
 * per 64 columns; with others in column order, scaled one by one first
 * and then permuted.
 */
static void permuted_xs(float *xs, const float *px, const llama_mat *w, int IN, int sr)
{
	const float *s = w->scale + (size_t)sr * (size_t)w->scols;
	if (w->bc % 64 != 0) {
		scale_x(xs, px, w, IN, sr);
		permute_x(xs, xs, IN);
		return;
	}
	for (int b = 0; b < IN; b += 64) {
		__m512 sb = _mm512_set1_ps(s[b / w->bc]);
		for (int q = 0; q < 4; q++) {
			/* The padding stays 0 whatever the scale: only the lanes
			 * of columns before IN (lane 4L + d holds column 16L +
			 * 8(q / 2) + 2d + q % 2, as store_permuted puts them). */
			__mmask16 m = 0xFFFF;
			if (IN - b < 64) {
				m = 0;
				for (int l = 0; l < 16; l++)
					if (16 * (l / 4) + 8 * (q / 2) + 2 * (l % 4) + q % 2 <
					    IN - b)
						m = (__mmask16)(m | 1u << l);
			}
			_mm512_storeu_ps(xs + b + 16 * q,
			                 _mm512_maskz_mul_ps(m, _mm512_loadu_ps(px + b + 16 * q),
			                                     sb));
		}
	}
}

/*
 * out[0..R) = xs . rows p, p + ld, ... (R of them, a constant once
 * inlined), fetching the rows KERNEL_FETCH_ROWS on when fetch is set.
 */
static inline __attribute__((always_inline)) void rows_bf16tab(float *out, const float *xs,
                                                               const unsigned char *p, size_t ld,
                                                               const bf16_tab *t, int IN, int R,
                                                               int fetch)
{
	__m512 a[4], b[4];
	for (int r = 0; r < R; r++)
		a[r] = b[r] = _mm512_setzero_ps();
	size_t ahead = KERNEL_FETCH_ROWS * ld;
	/* Whole blocks of 64 codes (no test of the length inside), then the
	 * last part. */
	int full = IN - IN % 64, i = 0;
	for (; i < full; i += 64) {
		if (fetch)
			for (int r = 0; r < R; r++)
				kernel_fetch(p + (size_t)r * ld + i, ahead);
		for (int r = 0; r < R; r++)
			bf16_acc(t, p + (size_t)r * ld + i, 64, xs + i, &a[r], &b[r]);
	}
	if (i < IN)
		for (int r = 0; r < R; r++)
			bf16_acc(t, p + (size_t)r * ld + i, IN - i, xs + i, &a[r], &b[r]);
	for (int r = 0; r < R; r++)
		out[r] = _mm512_reduce_add_ps(_mm512_add_ps(a[r], b[r]));
}

/*
 * As dots_e4m3_avx2, xs permuted and unscaled, any F8 type tab covers;
 * four rows at a time, whose loads are independent, so that more misses
 * are in flight; and no fetching past the last of the n rows, which are
 * often another thread's task (the next task of DOT_ROWS rows). On the
 * Qwen2-0.5B-shaped model at 2 threads (bench/bench_strun.sh), FP8 decode
 * took about 15% less time than with two rows and fetches past the end.
 */
static void dots_bf16tab_avx512(float *out, const float *xs, const unsigned char *w,
                                const unsigned char *tab, int IN, int n)
{
	bf16_tab t = {_mm512_loadu_si512((const void *)tab),
	              _mm512_loadu_si512((const void *)(tab + 64)),
	              _mm512_loadu_si512((const void *)(tab + 128)),
	              _mm512_loadu_si512((const void *)(tab + 192))};
	size_t ld = (size_t)IN;
	int j = 0;
	for (; j + 4 <= n; j += 4) {
		if (j + 4 + KERNEL_FETCH_ROWS <= n) /* the rows fetched are ours */
			rows_bf16tab(out + j, xs, w + (size_t)j * ld, ld, &t, IN, 4, 1);
		else
			rows_bf16tab(out + j, xs, w + (size_t)j * ld, ld, &t, IN, 4, 0);
	}
	if (n - j == 3)
		rows_bf16tab(out + j, xs, w + (size_t)j * ld, ld, &t, IN, 3, 0);
	else if (n - j == 2)
		rows_bf16tab(out + j, xs, w + (size_t)j * ld, ld, &t, IN, 2, 0);
	else if (n - j == 1)
		rows_bf16tab(out + j, xs, w + (size_t)j * ld, ld, &t, IN, 1, 0);
}
GPT2_TARGET_END

static int has_vbmi(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512vbmi");
}
#endif

static enum fp8_path fp8_path(const gpt2_kernels *k, const llama_mat *w)
{
#ifdef HAVE_X86
	if (strcmp(k->name, "avx512") == 0 && w->bf16 && has_vbmi())
		return AVX512;
	if (strcmp(k->name, "portable") != 0 && w->dt == ST_DTYPE_F8_E4M3 && !w->nan_codes)
		return AVX2;
#else
	(void)k;
	(void)w;
#endif
	return PORTABLE;
}

int llama_fp8_mark_nan(const gpt2_kernels *k, llama_mat *w, size_t n)
{
#ifdef HAVE_X86
	if (fp8_path(k, w) == AVX2)
		w->nan_codes = any_nan_e4m3_avx2(w->w, n);
#else
	(void)k;
	(void)n;
#endif
	return w->nan_codes;
}

int llama_fp8_layout(const gpt2_kernels *k, const llama_mat *w)
{
	return fp8_path(k, w) == AVX512 && w->bc % 64 == 0 ? LLAMA_FP8_X_PERMUTED
	                                                   : LLAMA_FP8_X_PLAIN;
}

void llama_fp8_prepare(float *px, const float *x, int IN, int layout)
{
#ifdef HAVE_X86
	if (layout == LLAMA_FP8_X_PERMUTED) {
		permute_x(px, x, IN);
		return;
	}
#else
	(void)layout;
#endif
	memcpy(px, x, (size_t)IN * sizeof(float));
	for (int i = IN; i < padded(IN); i++)
		px[i] = 0.0f;
}

void llama_fp8_dots(const gpt2_kernels *k, float *out, const float *x, const llama_mat *w, int IN,
                    int o0, int n, float *xs)
{
	enum fp8_path path = fp8_path(k, w);
#ifndef HAVE_X86
	(void)xs;
#endif
	for (int j = 0; j < n;) {
		int r = o0 + j, sr = r / w->br;
		/* The rows sharing this row of scales. */
		int m = (sr + 1) * w->br - r < n - j ? (sr + 1) * w->br - r : n - j;
		const unsigned char *rows = (const unsigned char *)w->w + (size_t)r * (size_t)IN;
		const float *s = w->scale + (size_t)sr * (size_t)w->scols;
#ifdef HAVE_X86
		if (path == AVX512) {
			permuted_xs(xs, x, w, IN, sr);
			dots_bf16tab_avx512(out + j, xs, rows, w->bf16, IN, m);
		} else if (path == AVX2) {
			scaled_xs(xs, x, w, IN, sr);
			dots_e4m3_avx2(out + j, xs, rows, IN, m);
		} else
#endif
			for (int i = 0; i < m; i++)
				out[j + i] = row_dot_portable(x, rows + (size_t)i * (size_t)IN,
				                              w->lut, s, IN, w->bc);
		j += m;
	}
}
