/*
 * ggml_encode.c - the block encoders behind st_ggml_from_f32 (ggml_internal.h):
 * Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0, exactly as ggml's reference quantizers
 * (quantize_row_<type>_ref in ggml-quants.c, which llama.cpp's converters
 * and ggml_quantize_chunk without an importance matrix use). Each block of
 * 32 gets a scale from its own values only, so the bytes do not depend on
 * how a row is split into calls. doc/ggml.md describes the rules.
 *
 * Every step is ggml's float32 arithmetic in ggml's order: d = max / -8
 * is a division, id = 1 / d, then x * id (never x / d, which rounds
 * differently in a few blocks) and + 8.5 as two roundings, not one fused
 * multiply-add. ggml turns the float into an integer by C's truncating
 * cast to int8_t or uint8_t; for NaN (from a NaN input or Inf * 0) and
 * infinities C leaves that cast undefined, and x86-64's cvttss2si gives
 * 0x80000000, whose low byte 0 is what ggml's x86 build stores. libst
 * gives that 0 on every machine (trunc_byte), so every input has one
 * encoding.
 */
#include "ggml_internal.h"

#include "dtype_internal.h"

#include <float.h>
#include <math.h>

/* The low byte of v truncated to an int32, as x86-64's cvttss2si: 0 for NaN and out of range. */
static unsigned trunc_byte(float v)
{
	if (!(v > -2147483648.0f && v < 2147483648.0f))
		return 0; /* 0x80000000 */
	return (unsigned)(uint32_t)(int32_t)v & 0xffu;
}

/* ggml's MIN(top, (int8_t)v) stored in a uint8_t: the byte, or top when the int8_t exceeds it. */
static unsigned trunc_min(float v, unsigned top)
{
	const unsigned b = trunc_byte(v);
	return b < 128 && b > top ? top : b;
}

static void put_f16(unsigned char *p, float f)
{
	st16(p, f32b_to_f16b(float_bits(f)));
}

/*
 * The value of largest magnitude, with its sign: the first one when two
 * tie (+a and -a), 0 for a block of zeros. NaN never compares greater,
 * so it is skipped.
 */
static float signed_absmax(const float *x)
{
	float amax = 0.0f, max = 0.0f;
	for (int j = 0; j < 32; j++)
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	return max;
}

/*
 * The block's minimum and maximum, starting from FLT_MAX and -FLT_MAX as
 * ggml does: NaN is skipped, and a block of +Inf only keeps min = FLT_MAX
 * (-Inf only: max = -FLT_MAX).
 */
static void min_max(const float *x, float *min, float *max)
{
	float lo = FLT_MAX, hi = -FLT_MAX;
	for (int j = 0; j < 32; j++) {
		if (x[j] < lo)
			lo = x[j];
		if (x[j] > hi)
			hi = x[j];
	}
	*min = lo;
	*max = hi;
}

static float inverse(float d)
{
	return d != 0.0f ? 1.0f / d : 0.0f; /* ggml's d ? 1.0f/d : 0.0f */
}

/* Q4_0: d = max / -8, q = MIN(15, (int8_t)(x * id + 8.5)), x = (q - 8) * d. */
void st__ggml_enc_q4_0(const float *restrict x, unsigned char *restrict o, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, x += 32, o += 18) {
		const float d = signed_absmax(x) / -8.0f, id = inverse(d);
		put_f16(o, d);
		for (int j = 0; j < 16; j++) {
			const float x0 = x[j] * id, x1 = x[j + 16] * id;
			const unsigned q0 = trunc_min(x0 + 8.5f, 15), q1 = trunc_min(x1 + 8.5f, 15);
			o[2 + j] = (unsigned char)((q0 | q1 << 4) & 0xffu);
		}
	}
}

/* Q4_1: d = (max - min) / 15, m = min, q = MIN(15, (int8_t)((x - min) * id + 0.5)). */
void st__ggml_enc_q4_1(const float *restrict x, unsigned char *restrict o, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, x += 32, o += 20) {
		float min, max;
		min_max(x, &min, &max);
		const float d = (max - min) / 15.0f, id = inverse(d);
		put_f16(o, d);
		put_f16(o + 2, min);
		for (int j = 0; j < 16; j++) {
			const float x0 = (x[j] - min) * id, x1 = (x[j + 16] - min) * id;
			const unsigned q0 = trunc_min(x0 + 0.5f, 15), q1 = trunc_min(x1 + 0.5f, 15);
			o[4 + j] = (unsigned char)((q0 | q1 << 4) & 0xffu);
		}
	}
}

/* The nibbles and the u32 of fifth bits of a Q5 block from its 32 q. */
static void put_q5(unsigned char *qh_at, unsigned char *qs, const unsigned *q)
{
	uint32_t qh = 0;
	for (int j = 0; j < 16; j++) {
		qs[j] = (unsigned char)((q[j] & 0xfu) | (q[j + 16] & 0xfu) << 4);
		qh |= (uint32_t)(q[j] >> 4 & 1u) << j;
		qh |= (uint32_t)(q[j + 16] >> 4 & 1u) << (j + 16);
	}
	st32(qh_at, qh);
}

/* Q5_0: d = max / -16, q = MIN(31, (int8_t)(x * id + 16.5)), x = (q - 16) * d. */
void st__ggml_enc_q5_0(const float *restrict x, unsigned char *restrict o, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, x += 32, o += 22) {
		const float d = signed_absmax(x) / -16.0f, id = inverse(d);
		unsigned q[32];
		put_f16(o, d);
		for (int j = 0; j < 32; j++) {
			const float s = x[j] * id;
			q[j] = trunc_min(s + 16.5f, 31);
		}
		put_q5(o + 2, o + 6, q);
	}
}

/*
 * Q5_1: d = (max - min) / 31, m = min, q = (uint8_t)((x - min) * id + 0.5):
 * no clamp in ggml, as a finite block never reaches 32.
 */
void st__ggml_enc_q5_1(const float *restrict x, unsigned char *restrict o, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, x += 32, o += 24) {
		float min, max;
		min_max(x, &min, &max);
		const float d = (max - min) / 31.0f, id = inverse(d);
		unsigned q[32];
		put_f16(o, d);
		put_f16(o + 2, min);
		for (int j = 0; j < 32; j++) {
			const float s = (x[j] - min) * id;
			q[j] = trunc_byte(s + 0.5f);
		}
		put_q5(o + 4, o + 8, q);
	}
}

/* Q8_0: d = amax / 127, q = roundf(x * id), x = q * d. */
void st__ggml_enc_q8_0(const float *restrict x, unsigned char *restrict o, uint64_t nb)
{
	for (uint64_t b = 0; b < nb; b++, x += 32, o += 34) {
		float amax = 0.0f;
		for (int j = 0; j < 32; j++) {
			const float v = fabsf(x[j]);
			amax = amax > v ? amax : v;
		}
		const float d = amax / 127.0f, id = inverse(d);
		put_f16(o, d);
		/* |x * id| <= 127 unless the block holds Inf or NaN (then 0). */
		for (int j = 0; j < 32; j++)
			o[2 + j] = (unsigned char)trunc_byte(roundf(x[j] * id));
	}
}
