/*
 * ggml_quants.c - the block decoders of ggml's non-IQ quantized types
 * (ggml_internal.h): one function per type, decoding whole blocks. Field
 * order and the arithmetic of each type are in doc/ggml.md; every product
 * and sum is evaluated as ggml's reference dequantizer does (a float
 * scale times an integer converted to float, then the offset), so the
 * results are bit-identical to ggml's to_float.
 */
#include "ggml_internal.h"

#include "dtype_internal.h"

float st__ggml_f16(const unsigned char *p)
{
	return bits_float(f16b_to_f32b((uint16_t)(p[0] | p[1] << 8)));
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- legacy 32-element blocks ------------------------------------------------ */

/* Q4_0: F16 d, 16 bytes of nibbles; x = d * (q - 8). */
void st__ggml_dec_q4_0(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 18, y += 32) {
		const float d = st__ggml_f16(s);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)((s[2 + j] & 0xF) - 8) * d;
			y[j + 16] = (float)((s[2 + j] >> 4) - 8) * d;
		}
	}
}

/* Q4_1: F16 d, F16 m, 16 bytes of nibbles; x = d * q + m. */
void st__ggml_dec_q4_1(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 20, y += 32) {
		const float d = st__ggml_f16(s), m = st__ggml_f16(s + 2);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)(s[4 + j] & 0xF) * d + m;
			y[j + 16] = (float)(s[4 + j] >> 4) * d + m;
		}
	}
}

/* The fifth bit of element j (0..31) of a Q5 block, as 0 or 16. */
static int q5_high(uint32_t qh, int j)
{
	return (int)(qh >> j & 1) << 4;
}

/* Q5_0: F16 d, u32 qh (bit j: element j's fifth bit), nibbles; d * (q - 16). */
void st__ggml_dec_q5_0(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 22, y += 32) {
		const float d = st__ggml_f16(s);
		const uint32_t qh = le32(s + 2);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)(((s[6 + j] & 0xF) | q5_high(qh, j)) - 16) * d;
			y[j + 16] = (float)(((s[6 + j] >> 4) | q5_high(qh, j + 16)) - 16) * d;
		}
	}
}

/* Q5_1: F16 d, F16 m, u32 qh, nibbles; x = d * q + m. */
void st__ggml_dec_q5_1(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 24, y += 32) {
		const float d = st__ggml_f16(s), m = st__ggml_f16(s + 2);
		const uint32_t qh = le32(s + 4);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)((s[8 + j] & 0xF) | q5_high(qh, j)) * d + m;
			y[j + 16] = (float)((s[8 + j] >> 4) | q5_high(qh, j + 16)) * d + m;
		}
	}
}

/* n int8 values times d (Q8_0, Q8_1, Q8_K). */
static void int8_times(const unsigned char *q, float d, float *y, int n)
{
	for (int j = 0; j < n; j++)
		y[j] = (float)(int8_t)q[j] * d;
}

/* Q8_0: F16 d, 32 int8; x = d * q. */
void st__ggml_dec_q8_0(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 34, y += 32)
		int8_times(s + 2, st__ggml_f16(s), y, 32);
}

/* Q8_1: F16 d, F16 s (d * the sum of q, unused), 32 int8; x = d * q. */
void st__ggml_dec_q8_1(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 36, y += 32)
		int8_times(s + 4, st__ggml_f16(s), y, 32);
}
