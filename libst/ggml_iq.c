/*
 * ggml_iq.c - the block decoders of ggml's IQ types (ggml_internal.h):
 * IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (8 or 4 values at a time from a
 * lattice, ggml_iq_grids.c, with sign bits), IQ1_S, IQ1_M (a ternary
 * lattice plus a shift) and IQ4_NL, IQ4_XS (a 16-value non-linear table).
 * doc/ggml.md describes each layout; the arithmetic follows ggml's
 * reference dequantizers in order, so every float has ggml's bits.
 */
#include "ggml_internal.h"

#include "dtype_internal.h"

/* Byte j of a packed grid entry. */
static unsigned gbyte(uint64_t g, int j)
{
	return (unsigned)(g >> (8 * j)) & 0xFF;
}

/* ggml's ksigns_iq2xs: 7 stored sign bits, the eighth their parity. */
static unsigned signs7(unsigned v)
{
	v &= 127;
	return v | (unsigned)__builtin_parity(v) << 7;
}

/* y[j] = dl * grid byte j, negated where sign bit j is set. */
static void signed8(uint64_t g, unsigned signs, float dl, float *restrict y)
{
	for (int j = 0; j < 8; j++)
		y[j] = dl * (float)gbyte(g, j) * (signs >> j & 1 ? -1.f : 1.f);
}

/* IQ2_XXS: F16 d; per 32: 4 grid bytes, u32 of 4 x 7 sign bits | 4-bit scale. */
void st__ggml_dec_iq2_xxs(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 66) {
		const float d = st__ggml_f16(s);
		for (int ib = 0; ib < 8; ib++) {
			const unsigned char *p = s + 2 + 8 * ib;
			const uint32_t aux = ld32(p + 4);
			const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
			for (int l = 0; l < 4; l++, y += 8)
				signed8(st__ggml_iq2xxs_grid[p[l]], signs7(aux >> 7 * l), db, y);
		}
	}
}

/* Two 4-bit sub-block scales of a byte, as IQ2_XS and IQ2_S use them. */
static void iq2_scales(float d, unsigned char sc, float db[2])
{
	db[0] = d * (0.5f + (float)(sc & 0xF)) * 0.25f;
	db[1] = d * (0.5f + (float)(sc >> 4)) * 0.25f;
}

/* IQ2_XS: F16 d, 32 u16 (9-bit grid index | 7 sign bits), 8 bytes of scales. */
void st__ggml_dec_iq2_xs(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 74) {
		const float d = st__ggml_f16(s);
		for (int ib = 0; ib < 8; ib++) {
			float db[2];
			iq2_scales(d, s[66 + ib], db);
			for (int l = 0; l < 4; l++, y += 8) {
				const unsigned q = ld16(s + 2 + 2 * (4 * ib + l));
				signed8(st__ggml_iq2xs_grid[q & 511], signs7(q >> 9), db[l / 2], y);
			}
		}
	}
}

/* IQ2_S: F16 d, 32 grid low bytes, 32 sign bytes, 8 qh (2 bits each), 8 scales. */
void st__ggml_dec_iq2_s(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 82) {
		const float d = st__ggml_f16(s);
		for (int ib = 0; ib < 8; ib++) {
			const unsigned char *qs = s + 2 + 4 * ib, *sg = s + 34 + 4 * ib;
			const unsigned qh = s[66 + ib];
			float db[2];
			iq2_scales(d, s[74 + ib], db);
			for (int l = 0; l < 4; l++, y += 8) {
				const unsigned idx = qs[l] | (qh << (8 - 2 * l) & 0x300);
				signed8(st__ggml_iq2s_grid[idx], sg[l], db[l / 2], y);
			}
		}
	}
}

/* Two 4-value IQ3 grid entries as one 8-value entry (first one low). */
static uint64_t pair4(uint32_t lo, uint32_t hi)
{
	return (uint64_t)lo | (uint64_t)hi << 32;
}

/* IQ3_XXS: F16 d, 64 grid bytes, per 32 a u32 of 4 x 7 sign bits | 4-bit scale. */
void st__ggml_dec_iq3_xxs(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 98) {
		const float d = st__ggml_f16(s);
		for (int ib = 0; ib < 8; ib++) {
			const unsigned char *q = s + 2 + 8 * ib;
			const uint32_t aux = ld32(s + 66 + 4 * ib);
			const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
			for (int l = 0; l < 4; l++, y += 8)
				signed8(pair4(st__ggml_iq3xxs_grid[q[2 * l]],
				              st__ggml_iq3xxs_grid[q[2 * l + 1]]),
				        signs7(aux >> 7 * l), db, y);
		}
	}
}

/* IQ3_S: F16 d, 64 grid low bytes, 8 qh (1 bit each), 32 sign bytes, 4 scales. */
void st__ggml_dec_iq3_s(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 110) {
		const float d = st__ggml_f16(s);
		for (int ib = 0; ib < 8; ib++) {
			const unsigned char *qs = s + 2 + 8 * ib, *sg = s + 74 + 4 * ib;
			const unsigned qh = s[66 + ib];
			const unsigned sc = s[106 + ib / 2] >> (4 * (ib % 2)) & 0xF;
			const float db = d * (float)(1 + 2 * (int)sc);
			for (int l = 0; l < 4; l++, y += 8) {
				const unsigned i1 = qs[2 * l] | (qh << (8 - 2 * l) & 256);
				const unsigned i2 = qs[2 * l + 1] | (qh << (7 - 2 * l) & 256);
				signed8(pair4(st__ggml_iq3s_grid[i1], st__ggml_iq3s_grid[i2]),
				        sg[l], db, y);
			}
		}
	}
}

/* 8 values dl * (grid value + delta) of a ternary IQ1 grid entry. */
static void iq1_8(unsigned idx, float dl, float delta, float *y)
{
	const uint64_t g = st__ggml_iq1s_grid[idx];
	for (int j = 0; j < 8; j++)
		y[j] = dl * ((float)(int8_t)gbyte(g, j) + delta);
}

#define IQ1_DELTA 0.125f

/* IQ1_S: F16 d, 32 grid low bytes, 8 u16 (4 x 3 high bits, 3-bit scale, sign). */
void st__ggml_dec_iq1_s(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 50) {
		const float d = st__ggml_f16(s);
		for (int ib = 0; ib < 8; ib++) {
			const unsigned qh = ld16(s + 34 + 2 * ib);
			const float dl = d * (float)(2 * (int)(qh >> 12 & 7) + 1);
			const float delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
			for (int l = 0; l < 4; l++, y += 8)
				iq1_8(s[2 + 4 * ib + l] | (qh >> (3 * l) & 7) << 8, dl, delta, y);
		}
	}
}

/*
 * IQ1_M: 32 grid low bytes, 16 qh bytes (per 8 values 3 high bits and a
 * shift sign), 4 u16 of 3-bit scales whose top nibbles form the F16 d.
 */
void st__ggml_dec_iq1_m(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 56) {
		unsigned sc[4];
		for (int k = 0; k < 4; k++)
			sc[k] = ld16(s + 48 + 2 * k);
		const unsigned dbits =
			sc[0] >> 12 | (sc[1] >> 8 & 0xF0) | (sc[2] >> 4 & 0xF00) | (sc[3] & 0xF000);
		const unsigned char dle[2] = {(unsigned char)(dbits & 0xFF),
		                              (unsigned char)(dbits >> 8)};
		const float d = st__ggml_f16(dle);
		for (int ib = 0; ib < 8; ib++) {
			const unsigned w = sc[ib / 2] >> (6 * (ib % 2));
			const float dl[2] = {d * (float)(2 * (int)(w & 7) + 1),
			                     d * (float)(2 * (int)(w >> 3 & 7) + 1)};
			const unsigned char *qs = s + 4 * ib, *qh = s + 32 + 2 * ib;
			for (int l = 0; l < 4; l++, y += 8) {
				const unsigned h = qh[l / 2];
				const unsigned idx = qs[l] | (h << (l % 2 ? 4 : 8) & 0x700);
				const unsigned neg = h & (l % 2 ? 0x80u : 0x08u);
				iq1_8(idx, dl[l / 2], neg ? -IQ1_DELTA : IQ1_DELTA, y);
			}
		}
	}
}

/* 32 values of 16 IQ4 bytes (low nibbles first) times dl. */
static void iq4_32(const unsigned char *restrict q, float dl, float *restrict y)
{
	for (int j = 0; j < 16; j++) {
		y[j] = dl * (float)st__ggml_iq4nl_values[q[j] & 0xF];
		y[j + 16] = dl * (float)st__ggml_iq4nl_values[q[j] >> 4];
	}
}

/* IQ4_NL: F16 d, 16 bytes of 4-bit indices into the non-linear table. */
void st__ggml_dec_iq4_nl(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 18, y += 32)
		iq4_32(s + 2, st__ggml_f16(s), y);
}

/* IQ4_XS: F16 d, u16 of 8 x 2 high scale bits, 4 bytes of low nibbles, 128 q. */
void st__ggml_dec_iq4_xs(const unsigned char *restrict s, float *restrict y, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, s += 136) {
		const float d = st__ggml_f16(s);
		const unsigned sh = ld16(s + 2);
		for (int ib = 0; ib < 8; ib++, y += 32) {
			const unsigned ls =
				(s[4 + ib / 2] >> (4 * (ib % 2)) & 0xF) | (sh >> (2 * ib) & 3) << 4;
			iq4_32(s + 8 + 16 * ib, d * (float)((int)ls - 32), y);
		}
	}
}
