/*
 * llama_fp8.c - scaled FP8 weights inside the Llama family's matrix
 * products (llama.h, llama_mat): a row decoded and scaled for the prompt's
 * packed panels, and the decode dot products, which read the FP8 bytes
 * where they lie and apply each block's scale to its partial sum. No
 * dequantized copy of a weight is ever made.
 *
 * The value of a code is libst's (the model's table, filled by st_convert
 * at load); the AVX2 loop widens E4M3 without the table: its bits moved
 * into an F16's (sign to bit 15, exponent and mantissa shifted left 7)
 * make an F16 of value x * 2^-8 exactly, subnormals included, which
 * vcvtph2ps widens; the 2^8 goes into the block's scale. Only NaN codes
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
GPT2_TARGET_AVX2_BEGIN
static float row_dot_e4m3_avx2(const float *x, const unsigned char *row, const float *lut,
                               const float *s, int IN, int bc)
{
	const __m128i sign = _mm_set1_epi16(0x80), rest = _mm_set1_epi16(0x7f);
	float sum = 0.0f;
	for (int b0 = 0, k = 0; b0 < IN; b0 += bc, k++) {
		int n = IN - b0 < bc ? IN - b0 : bc;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		int i = 0;
		for (; i + 16 <= n; i += 16) {
			__m128i raw = _mm_loadu_si128((const __m128i *)(row + b0 + i));
			__m128i lo = _mm_cvtepu8_epi16(raw);
			__m128i hi = _mm_cvtepu8_epi16(_mm_srli_si128(raw, 8));
			lo = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(lo, sign), 8),
			                  _mm_slli_epi16(_mm_and_si128(lo, rest), 7));
			hi = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(hi, sign), 8),
			                  _mm_slli_epi16(_mm_and_si128(hi, rest), 7));
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + b0 + i), _mm256_cvtph_ps(lo), a0);
			a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + b0 + i + 8), _mm256_cvtph_ps(hi),
			                     a1);
		}
		__m256 a = _mm256_add_ps(a0, a1);
		__m128 q = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
		q = _mm_add_ps(q, _mm_movehl_ps(q, q));
		q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
		float part = _mm_cvtss_f32(q) * 256.0f;
		for (; i < n; i++)
			part += x[b0 + i] * lut[row[b0 + i]];
		sum += part * s[k];
	}
	return sum;
}
GPT2_TARGET_END
#endif

void llama_fp8_dots(const gpt2_kernels *k, float *out, const float *x, const llama_mat *w, int IN,
                    int o0, int n)
{
	int simd = 0;
#ifdef HAVE_X86
	simd = w->dt == ST_DTYPE_F8_E4M3 && strcmp(k->name, "portable") != 0;
#else
	(void)k;
#endif
	for (int j = 0; j < n; j++) {
		int r = o0 + j;
		const unsigned char *row = (const unsigned char *)w->w + (size_t)r * (size_t)IN;
		const float *s = w->scale + (size_t)(r / w->br) * (size_t)w->scols;
#ifdef HAVE_X86
		if (simd) {
			out[j] = row_dot_e4m3_avx2(x, row, w->lut, s, IN, w->bc);
			continue;
		}
#endif
		out[j] = row_dot_portable(x, row, w->lut, s, IN, w->bc);
	}
}
