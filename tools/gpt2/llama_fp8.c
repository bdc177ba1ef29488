/*
 * llama_fp8.c - scaled FP8 weights inside the Llama family's matrix
 * products (llama.h, llama_mat): a row decoded and scaled for the prompt's
 * packed panels, and the decode dot products, which read the FP8 bytes
 * where they lie and apply each block's scale to its partial sum. No
 * dequantized copy of a weight is ever made.
 *
 * The value of a code is libst's (the model's table, filled by st_convert
 * at load); the AVX2 and AVX-512 loops widen E4M3 without the table: its
 * bits moved into an F16's (sign to bit 15, exponent and mantissa shifted
 * left 7) make an F16 of value x * 2^-8 exactly, subnormals included,
 * which vcvtph2ps widens; the 2^8 goes into the block's partial sum. Only NaN codes
 * (0x7f, 0xff) differ: 480 instead of NaN. Sums are F32, each output row
 * reduced in a fixed order by one call.
 */
#include "gpt2/internal.h"
#include "gpt2/kernels.h"
#include "gpt2/llama.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

void llama_fp8_row(float *dst, const llama_mat *w, int IN, int r)
{
	const unsigned char *row = (const unsigned char *)w->w + (size_t)r * (size_t)IN;
	const float *s = w->scale + (size_t)(r / w->br) * (size_t)w->scols;
	for (int i = 0; i < IN; i++)
		dst[i] = w->lut[row[i]] * s[i / w->bc];
}

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

#ifdef HAVE_X86
/*
 * E4M3 to F16 bits, 16 lanes at once: the byte sign-extended to 16 bits
 * and shifted left 7 puts exponent and mantissa at bits 7..13 and the
 * sign at 14 and 15; the AND clears 14. The F16 is the code's value
 * times 2^-8.
 */
GPT2_TARGET_AVX2_BEGIN
static float block_sum(__m256 a, float part)
{
	__m128 q = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
	q = _mm_add_ps(q, _mm_movehl_ps(q, q));
	q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
	return _mm_cvtss_f32(q) * 256.0f + part;
}

static float row_dot_e4m3_avx2(const float *x, const unsigned char *row, const float *lut,
                               const float *s, int IN, int bc)
{
	const __m256i keep = _mm256_set1_epi16((short)0xBF80);
	float sum = 0.0f;
	for (int b0 = 0, k = 0; b0 < IN; b0 += bc, k++) {
		int n = IN - b0 < bc ? IN - b0 : bc;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		int i = 0;
		for (; i + 16 <= n; i += 16) {
			__m128i raw = _mm_loadu_si128((const __m128i *)(row + b0 + i));
			__m256i h =
				_mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(raw), 7),
			                         keep);
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + b0 + i),
			                     _mm256_cvtph_ps(_mm256_castsi256_si128(h)), a0);
			a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + b0 + i + 8),
			                     _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), a1);
		}
		float part = 0.0f;
		for (int j = i; j < n; j++)
			part += x[b0 + j] * lut[row[b0 + j]];
		sum += block_sum(_mm256_add_ps(a0, a1), part) * s[k];
	}
	return sum;
}
GPT2_TARGET_END

GPT2_TARGET_AVX512_BEGIN
static float row_dot_e4m3_avx512(const float *x, const unsigned char *row, const float *lut,
                                 const float *s, int IN, int bc)
{
	const __m512i keep = _mm512_set1_epi16((short)0xBF80);
	float sum = 0.0f;
	for (int b0 = 0, k = 0; b0 < IN; b0 += bc, k++) {
		int n = IN - b0 < bc ? IN - b0 : bc;
		__m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
		int i = 0;
		for (; i + 32 <= n; i += 32) {
			__m256i raw = _mm256_loadu_si256((const __m256i *)(row + b0 + i));
			__m512i h =
				_mm512_and_si512(_mm512_slli_epi16(_mm512_cvtepi8_epi16(raw), 7),
			                         keep);
			a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + b0 + i),
			                     _mm512_cvtph_ps(_mm512_castsi512_si256(h)), a0);
			a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + b0 + i + 16),
			                     _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)), a1);
		}
		float part = 0.0f;
		for (int j = i; j < n; j++)
			part += x[b0 + j] * lut[row[b0 + j]];
		sum += (_mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) * 256.0f + part) * s[k];
	}
	return sum;
}
GPT2_TARGET_END
#endif

void llama_fp8_dots(const gpt2_kernels *k, float *out, const float *x, const llama_mat *w, int IN,
                    int o0, int n)
{
	float (*dot)(const float *, const unsigned char *, const float *, const float *, int, int) =
		row_dot_portable;
#ifdef HAVE_X86
	if (w->dt == ST_DTYPE_F8_E4M3 && strcmp(k->name, "avx2") == 0)
		dot = row_dot_e4m3_avx2;
	else if (w->dt == ST_DTYPE_F8_E4M3 && strcmp(k->name, "avx512") == 0)
		dot = row_dot_e4m3_avx512;
#else
	(void)k;
#endif
	for (int j = 0; j < n; j++) {
		int r = o0 + j;
		const unsigned char *row = (const unsigned char *)w->w + (size_t)r * (size_t)IN;
		const float *s = w->scale + (size_t)(r / w->br) * (size_t)w->scols;
		out[j] = dot(x, row, w->lut, s, IN, w->bc);
	}
}
