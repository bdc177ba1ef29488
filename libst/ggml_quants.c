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

/* ---- legacy 32-element blocks ------------------------------------------------ */

/* Q4_0: F16 d, 16 bytes of nibbles; x = d * (q - 8). */
void st__ggml_dec_q4_0(const unsigned char *restrict s, float *restrict y, uint64_t nb)
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
void st__ggml_dec_q4_1(const unsigned char *restrict s, float *restrict y, uint64_t nb)
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
void st__ggml_dec_q5_0(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 22, y += 32) {
		const float d = st__ggml_f16(s);
		const uint32_t qh = ld32(s + 2);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)(((s[6 + j] & 0xF) | q5_high(qh, j)) - 16) * d;
			y[j + 16] = (float)(((s[6 + j] >> 4) | q5_high(qh, j + 16)) - 16) * d;
		}
	}
}

/* Q5_1: F16 d, F16 m, u32 qh, nibbles; x = d * q + m. */
void st__ggml_dec_q5_1(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 24, y += 32) {
		const float d = st__ggml_f16(s), m = st__ggml_f16(s + 2);
		const uint32_t qh = ld32(s + 4);
		for (int j = 0; j < 16; j++) {
			y[j] = (float)((s[8 + j] & 0xF) | q5_high(qh, j)) * d + m;
			y[j + 16] = (float)((s[8 + j] >> 4) | q5_high(qh, j + 16)) * d + m;
		}
	}
}

/* n int8 values times d (Q8_0, Q8_1, Q8_K). */
static void int8_times(const unsigned char *restrict q, float d, float *restrict y, int n)
{
	for (int j = 0; j < n; j++)
		y[j] = (float)(int8_t)q[j] * d;
}

/* Q8_0: F16 d, 32 int8; x = d * q. */
void st__ggml_dec_q8_0(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 34, y += 32)
		int8_times(s + 2, st__ggml_f16(s), y, 32);
}

/* Q8_1: F16 d, F16 s (d * the sum of q, unused), 32 int8; x = d * q. */
void st__ggml_dec_q8_1(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 36, y += 32)
		int8_times(s + 4, st__ggml_f16(s), y, 32);
}

/* ---- K-quants: 256-element super-blocks ------------------------------------- */

/* Q2_K: 16 bytes of 4-bit scale | 4-bit min, 64 bytes of 2-bit q, F16 d, dmin. */
void st__ggml_dec_q2_k(const unsigned char *restrict s, float *restrict y, uint64_t nb)
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
int st__ggml_q3k_scale(const unsigned char *sc, int j)
{
	const int low = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4;
	const int high = sc[8 + j % 4] >> (2 * (j / 4)) & 3;
	return low | high << 4;
}

/* Q3_K: 32 bytes hmask, 64 bytes of 2-bit q, 12 bytes scales, F16 d. */
void st__ggml_dec_q3_k(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 110, y += 256) {
		const float d = st__ggml_f16(s + 108);
		const unsigned char *hm = s, *sc = s + 96;
		for (int e = 0; e < 256; e += 16) {
			const int h = e / 128, pair = e % 128 / 32, part = e % 32 / 16;
			const float dl = d * (float)(st__ggml_q3k_scale(sc, e / 16) - 32);
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
 * bytes qh), 128 bytes of nibbles; x = d * sc * q - dmin * m per 32. Sub-
 * blocks 2p and 2p + 1 are the low and high nibbles of bytes 32 p..+31.
 */
static void k45_scales(const unsigned char *s, int p, float dl[2], float ml[2])
{
	const float d = st__ggml_f16(s), min = st__ggml_f16(s + 2);
	for (int k = 0; k < 2; k++) {
		unsigned sc, m;
		k4_scale_min(s + 4, 2 * p + k, &sc, &m);
		dl[k] = d * (float)sc;
		ml[k] = min * (float)m;
	}
}

void st__ggml_k4_scales(const unsigned char *block, float dl[8], float ml[8])
{
	for (int p = 0; p < 4; p++)
		k45_scales(block, p, dl + 2 * p, ml + 2 * p);
}

void st__ggml_dec_q4_k(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 144, y += 256)
		for (int p = 0; p < 4; p++) {
			float dl[2], ml[2];
			k45_scales(s, p, dl, ml);
			const unsigned char *q = s + 16 + 32 * p;
			float *o = y + 64 * p;
			for (int l = 0; l < 32; l++) {
				o[l] = dl[0] * (float)(q[l] & 0xF) - ml[0];
				o[l + 32] = dl[1] * (float)(q[l] >> 4) - ml[1];
			}
		}
}

/* Q5_K: as Q4_K, bit j of qh[l] the fifth bit of element l of sub-block j. */
void st__ggml_dec_q5_k(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 176, y += 256)
		for (int p = 0; p < 4; p++) {
			float dl[2], ml[2];
			k45_scales(s, p, dl, ml);
			const unsigned char *q = s + 48 + 32 * p, *qh = s + 16;
			float *o = y + 64 * p;
			for (int l = 0; l < 32; l++) {
				const int h0 = (qh[l] >> (2 * p) & 1) << 4;
				const int h1 = (qh[l] >> (2 * p + 1) & 1) << 4;
				o[l] = dl[0] * (float)((q[l] & 0xF) | h0) - ml[0];
				o[l + 32] = dl[1] * (float)((q[l] >> 4) | h1) - ml[1];
			}
		}
}

/* Q6_K: 128 bytes low nibbles, 64 bytes high 2 bits, 16 int8 scales, F16 d. */
void st__ggml_dec_q6_k(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 210, y += 256) {
		const float d = st__ggml_f16(s + 208);
		/* half h of 128, quarter k of 32 in it, l in the quarter */
		for (int h = 0; h < 2; h++)
			for (int k = 0; k < 4; k++) {
				const unsigned char *ql = s + h * 64 + (k & 1) * 32;
				const unsigned char *qh = s + 128 + h * 32;
				const int lo_shift = k / 2 * 4, hi_shift = 2 * k;
				float *o = y + h * 128 + k * 32;
				/* Two sub-blocks of 16, each with its int8 scale. */
				for (int half = 0; half < 2; half++) {
					const float ds =
						d * (float)(int8_t)s[192 + h * 8 + half + 2 * k];
					for (int l = 16 * half; l < 16 * half + 16; l++) {
						const int lo = ql[l] >> lo_shift & 0xF;
						const int hi = qh[l] >> hi_shift & 3;
						o[l] = ds * (float)((lo | hi << 4) - 32);
					}
				}
			}
	}
}

/* Q8_K: F32 d, 256 int8, 16 int16 sums of 16 (unused); x = d * q. */
void st__ggml_dec_q8_k(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 292, y += 256)
		int8_times(s + 4, bits_float(ld32(s)), y, 256);
}

/* ---- ternary, FP4 and the low-bit 1- and 2-bit types ------------------------ */

/* Trit n (0..4) of a byte holding base-3 digits scaled to 0..255 (TQ1_0). */
static int trit(unsigned char byte, int n)
{
	static const unsigned char pow3[5] = {1, 3, 9, 27, 81};
	const unsigned char q = (unsigned char)(byte * pow3[n]);
	return (q * 3) >> 8;
}

/*
 * TQ1_0: 48 bytes of five trits (32 then 16 bytes, trit n of byte m at
 * n * width + m), 4 bytes of four trits, F16 d; x = (t - 1) * d.
 */
void st__ggml_dec_tq1_0(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 54) {
		const float d = st__ggml_f16(s + 52);
		static const struct {
			int from, width, trits;
		} part[3] = {{0, 32, 5}, {32, 16, 5}, {48, 4, 4}};
		for (int p = 0; p < 3; p++)
			for (int n = 0; n < part[p].trits; n++)
				for (int m = 0; m < part[p].width; m++)
					*y++ = (float)(trit(s[part[p].from + m], n) - 1) * d;
	}
}

/* TQ2_0: 64 bytes of 2-bit q (element 128 h + 32 k + m: byte 32 h + m, bits 2k), F16 d. */
void st__ggml_dec_tq2_0(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 66, y += 256) {
		const float d = st__ggml_f16(s + 64);
		for (int h = 0; h < 2; h++)
			for (int k = 0; k < 4; k++)
				for (int m = 0; m < 32; m++) {
					const int q = s[h * 32 + m] >> (2 * k) & 3;
					y[h * 128 + k * 32 + m] = (float)(q - 1) * d;
				}
	}
}

/* The E2M1 values doubled (ggml's kvalues_mxfp4), by 4-bit code. */
const int8_t st__ggml_e2m1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* Half the E8M0 scale 2^(e - 127): 2^(e - 128), subnormal for e < 2. */
float st__ggml_e8m0_half(unsigned char e)
{
	return bits_float(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* 16 E2M1 codes in 8 bytes (low nibbles first) times d, to y[0..15]. */
static void fp4_times(const unsigned char *restrict q, float d, float *restrict y, int half)
{
	for (int j = 0; j < half; j++) {
		y[j] = (float)st__ggml_e2m1x2[q[j] & 0xF] * d;
		y[j + half] = (float)st__ggml_e2m1x2[q[j] >> 4] * d;
	}
}

/* MXFP4: an E8M0 exponent, 16 bytes of E2M1 codes; x = e2m1 * 2^(e-127). */
void st__ggml_dec_mxfp4(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 17, y += 32)
		fp4_times(s + 1, st__ggml_e8m0_half(s[0]), y, 16);
}

/*
 * Half a UE4M3 scale as ggml reads it: the top bit ignored, 0x00 and 0x7F
 * zero, exponent 0 subnormal (m * 2^-9), else (1 + m/8) * 2^(e - 7).
 */
float st__ggml_ue4m3_half(unsigned char x)
{
	if (x == 0 || x == 0x7F)
		return 0.0f;
	const int e = x >> 3 & 0xF, m = x & 7;
	/* Both forms are exact in float: m / 8 and the power of two. */
	return e == 0 ? (float)m * 0x1p-10f
	              : (float)(8 + m) * bits_float((uint32_t)(e + 116) << 23);
}

/* NVFP4: 4 UE4M3 scales, 32 bytes of E2M1 codes in 4 sub-blocks of 16. */
void st__ggml_dec_nvfp4(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 36)
		for (int k = 0; k < 4; k++, y += 16)
			fp4_times(s + 4 + 8 * k, st__ggml_ue4m3_half(s[k]), y, 8);
}

/* Q1_0: F16 d, 16 bytes of sign bits (element j: byte j/8, bit j%8); +-d. */
void st__ggml_dec_q1_0(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 18, y += 128) {
		const float d = st__ggml_f16(s), neg = -d;
		for (int byte = 0; byte < 16; byte++)
			for (int bit = 0; bit < 8; bit++)
				y[8 * byte + bit] = s[2 + byte] >> bit & 1 ? d : neg;
	}
}

/* Q2_0: F16 d, 16 bytes of 2-bit q (element j: byte j/4, bits 2 (j%4)); (q-1) d. */
void st__ggml_dec_q2_0(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 18, y += 64) {
		const float d = st__ggml_f16(s);
		for (int byte = 0; byte < 16; byte++)
			for (int k = 0; k < 4; k++)
				y[4 * byte + k] = (float)((s[2 + byte] >> (2 * k) & 3) - 1) * d;
	}
}
