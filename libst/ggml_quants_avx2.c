/*
 * ggml_quants_avx2.c - AVX2 block decoders of the K-quants a Q4_K_M file
 * is made of (Q4_K, Q6_K): eight values a step, the same float operations
 * on the same operands as ggml_quants.c's scalar decoders (an integer
 * converted to float, times the float scale, minus the offset; no FMA),
 * so the same bits. Each decoder carries target(T256); st_ggml_to_f32
 * calls them only on a CPU that has AVX2 (st__ggml_dec_avx2). Empty but
 * for the table lookup on other architectures.
 */
#include "ggml_internal.h"

#include "dtype_internal.h"

#if ST_X86

#define T256 "avx2"

/* y[0..8) = d * (float)q - m for the 8 int32 lanes of q. */
static inline __attribute__((always_inline, target(T256))) void scale8(float *y, __m256i q, float d,
                                                                       float m)
{
	__m256 v = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(q));
	_mm256_storeu_ps(y, _mm256_sub_ps(v, _mm256_set1_ps(m)));
}

/* 32 bytes b (0..255) as 32 floats d * b - m at y. */
static inline __attribute__((always_inline, target(T256))) void bytes32(float *y, __m256i b,
                                                                        float d, float m)
{
	__m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
	scale8(y, _mm256_cvtepu8_epi32(lo), d, m);
	scale8(y + 8, _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), d, m);
	scale8(y + 16, _mm256_cvtepu8_epi32(hi), d, m);
	scale8(y + 24, _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)), d, m);
}

/* Q4_K (ggml_quants.c): sub-blocks 2p and 2p + 1 the nibbles of 32 bytes. */
__attribute__((target(T256))) static void dec_q4_k(const unsigned char *restrict s,
                                                   float *restrict y, uint64_t nb)
{
	const __m256i low4 = _mm256_set1_epi8(0x0F);
	for (uint64_t b = 0; b < nb; b++, s += 144, y += 256) {
		float dl[8], ml[8];
		st__ggml_k4_scales(s, dl, ml);
		for (int p = 0; p < 4; p++) {
			__m256i q = _mm256_loadu_si256((const void *)(s + 16 + 32 * p));
			bytes32(y + 64 * p, _mm256_and_si256(q, low4), dl[2 * p], ml[2 * p]);
			bytes32(y + 64 * p + 32, _mm256_and_si256(_mm256_srli_epi16(q, 4), low4),
			        dl[2 * p + 1], ml[2 * p + 1]);
		}
	}
}

/*
 * Q6_K (ggml_quants.c): quarter k of half h is 4 bits of ql (low or high
 * nibble) and 2 bits of qh; each 16 values have an int8 scale.
 */
__attribute__((target(T256))) static void dec_q6_k(const unsigned char *restrict s,
                                                   float *restrict y, uint64_t nb)
{
	const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3);
	const __m256i k32 = _mm256_set1_epi32(32);
	for (uint64_t b = 0; b < nb; b++, s += 210, y += 256) {
		const float d = st__ggml_f16(s + 208);
		for (int h = 0; h < 2; h++)
			for (int k = 0; k < 4; k++) {
				__m256i ql = _mm256_loadu_si256(
					(const void *)(s + h * 64 + (k & 1) * 32));
				__m256i qh = _mm256_loadu_si256((const void *)(s + 128 + h * 32));
				__m256i lo =
					_mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(
										      k / 2 * 4)),
				                         low4);
				__m256i hi =
					_mm256_and_si256(_mm256_srl_epi16(qh,
				                                          _mm_cvtsi32_si128(2 * k)),
				                         low2);
				__m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
				__m128i q0 = _mm256_castsi256_si128(q),
					q1 = _mm256_extracti128_si256(q, 1);
				float *o = y + h * 128 + k * 32;
				const float ds0 = d * (float)(int8_t)s[192 + h * 8 + 2 * k];
				const float ds1 = d * (float)(int8_t)s[192 + h * 8 + 1 + 2 * k];
				__m256i v[4] = {_mm256_cvtepu8_epi32(q0),
				                _mm256_cvtepu8_epi32(_mm_srli_si128(q0, 8)),
				                _mm256_cvtepu8_epi32(q1),
				                _mm256_cvtepu8_epi32(_mm_srli_si128(q1, 8))};
				for (int g = 0; g < 4; g++) {
					__m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(v[g], k32));
					_mm256_storeu_ps(o + 8 * g,
					                 _mm256_mul_ps(_mm256_set1_ps(g < 2 ? ds0
					                                                    : ds1),
					                               f));
				}
			}
	}
}

st__ggml_dec_fn *st__ggml_dec_avx2(unsigned type)
{
	switch (type) {
	case ST_GGML_Q4_K: return dec_q4_k;
	case ST_GGML_Q6_K: return dec_q6_k;
	default: return NULL;
	}
}

#else /* !ST_X86 */

st__ggml_dec_fn *st__ggml_dec_avx2(unsigned type)
{
	(void)type;
	return NULL;
}

#endif /* ST_X86 */
