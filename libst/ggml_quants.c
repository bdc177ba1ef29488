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

/* ---- K-quants: 256-element super-blocks ------------------------------------- */

/* Q2_K: 16 bytes of 4-bit scale | 4-bit min, 64 bytes of 2-bit q, F16 d, dmin. */
void st__ggml_dec_q2_k(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 84, y += 256) {
		const float d = st__ggml_f16(s + 80), min = st__ggml_f16(s + 82);
		for (int e = 0; e < 256; e += 16) {
			/* 16 elements: half h of 128, shift pair, first/second 16. */
			const int h = e / 128, pair = e % 128 / 32, part = e % 32 / 16;
			const unsigned sc = s[h * 8 + pair * 2 + part];
			const float dl = d * (float)(sc & 0xF);
			const float ml = min * (float)(sc >> 4);
			const unsigned char *q = s + 16 + h * 32 + part * 16;
			for (int l = 0; l < 16; l++)
				y[e + l] = dl * (float)(q[l] >> (2 * pair) & 3) - ml;
		}
	}
}

/* Q3_K's 16 6-bit scales from its 12 scale bytes. */
static int q3k_scale(const unsigned char *sc, int j)
{
	const int low = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4;
	const int high = sc[8 + j % 4] >> (2 * (j / 4)) & 3;
	return low | high << 4;
}

/* Q3_K: 32 bytes hmask, 64 bytes of 2-bit q, 12 bytes scales, F16 d. */
void st__ggml_dec_q3_k(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 110, y += 256) {
		const float d = st__ggml_f16(s + 108);
		const unsigned char *hm = s, *sc = s + 96;
		for (int e = 0; e < 256; e += 16) {
			const int h = e / 128, pair = e % 128 / 32, part = e % 32 / 16;
			const float dl = d * (float)(q3k_scale(sc, e / 16) - 32);
			const unsigned char *q = s + 32 + h * 32 + part * 16;
			const unsigned bit = 1u << (h * 4 + pair);
			for (int l = 0; l < 16; l++) {
				const int lo = q[l] >> (2 * pair) & 3;
				const int sub = hm[part * 16 + l] & bit ? 0 : 4;
				y[e + l] = dl * (float)(lo - sub);
			}
		}
	}
}

/* Scale and min j (0..7) of Q4_K and Q5_K: 6 bits each in 12 bytes. */
static void k4_scale_min(const unsigned char *q, int j, unsigned *sc, unsigned *m)
{
	if (j < 4) {
		*sc = q[j] & 63u;
		*m = q[j + 4] & 63u;
	} else {
		*sc = (q[j + 4] & 0xFu) | (unsigned)(q[j - 4] >> 6) << 4;
		*m = (unsigned)(q[j + 4] >> 4) | (unsigned)(q[j] >> 6) << 4;
	}
}

/*
 * Q4_K and Q5_K: F16 d, F16 dmin, 12 bytes of scales and mins, (Q5_K: 32
 * bytes qh), 128 bytes of nibbles; x = d * sc * q - dmin * m per 32.
 */
static void dec_k45(const unsigned char *s, float *y, uint64_t nb, int five)
{
	const unsigned bytes = five ? 176 : 144;
	for (uint64_t b = 0; b < nb; b++, s += bytes, y += 256) {
		const float d = st__ggml_f16(s), min = st__ggml_f16(s + 2);
		const unsigned char *qh = s + 16, *ql = s + (five ? 48 : 16);
		for (int j = 0; j < 8; j++) {
			unsigned sc, m;
			k4_scale_min(s + 4, j, &sc, &m);
			const float dl = d * (float)sc, ml = min * (float)m;
			const unsigned char *q = ql + j / 2 * 32;
			const int shift = j % 2 * 4;
			for (int l = 0; l < 32; l++) {
				int v = q[l] >> shift & 0xF;
				if (five && qh[l] >> j & 1)
					v += 16;
				y[j * 32 + l] = dl * (float)v - ml;
			}
		}
	}
}

void st__ggml_dec_q4_k(const unsigned char *s, float *y, uint64_t nb)
{
	dec_k45(s, y, nb, 0);
}

void st__ggml_dec_q5_k(const unsigned char *s, float *y, uint64_t nb)
{
	dec_k45(s, y, nb, 1);
}

/* Q6_K: 128 bytes low nibbles, 64 bytes high 2 bits, 16 int8 scales, F16 d. */
void st__ggml_dec_q6_k(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 210, y += 256) {
		const float d = st__ggml_f16(s + 208);
		for (int e = 0; e < 256; e++) {
			/* half h of 128, quarter k of 32 in it, l in the quarter */
			const int h = e / 128, k = e % 128 / 32, l = e % 32;
			const unsigned char *ql = s + h * 64, *qh = s + 128 + h * 32;
			const int lo = ql[l + (k & 1) * 32] >> (k / 2 * 4) & 0xF;
			const int hi = qh[l] >> (2 * k) & 3;
			const int8_t sc = (int8_t)s[192 + h * 8 + l / 16 + 2 * k];
			y[e] = d * (float)sc * (float)((lo | hi << 4) - 32);
		}
	}
}

/* Q8_K: F32 d, 256 int8, 16 int16 sums of 16 (unused); x = d * q. */
void st__ggml_dec_q8_k(const unsigned char *s, float *y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 292, y += 256)
		int8_times(s + 4, bits_float(le32(s)), y, 256);
}
