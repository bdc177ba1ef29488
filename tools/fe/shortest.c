/*
 * shortest.c - shortest round-trip decimals for doubles and floats
 * (shortest.h), the Ryu algorithm of Ulf Adams ("Ryu: fast float-to-string
 * conversion", PLDI 2018), written afresh for the tools. It is not a
 * general printf: one layout (%g's), no precision argument.
 *
 * How it works. A finite v is m2 * 2^e2 exactly. Its neighbours halfway
 * down and up bound the interval of reals that read back as v (bounds
 * included for an even m2, as round-to-nearest-even reads them). Scaled
 * by 4 so the bounds are integers too (mm < mv < mp), the three are
 * multiplied by one power of ten, 10^-e10, chosen so that a few more
 * digits than needed remain, through a 125-bit approximation of a power
 * of five (shortest_table.h) and a shift: vm, vr, vp. Digits are then
 * dropped from all three while vp and vm still differ in what remains;
 * the last dropped digit of vr rounds the result. Where the products are
 * exact (vr_tz, vm_tz: the value or the lower bound has only zeros below
 * what remains) the general loop tracks that, so a tie rounds to even and
 * an included bound can be the answer; elsewhere the quick loop suffices.
 * Ryu's paper proves the 125-bit products exact enough for every double;
 * a float is narrower in mantissa and exponent, so the same tables and
 * code serve it (tests/check_fe_shortest.c checks both against strtod and
 * strtof, and the float code was run over all 2^32 patterns).
 */
#include "fe/shortest.h"

#include <stdint.h>
#include <string.h>

#include "fe/shortest_table.h"

__extension__ typedef unsigned __int128 u128;

/* A decimal: digits * 10^exp. */
struct decimal {
	uint64_t digits;
	int32_t exp;
};

/* ceil(log2(5^e)) for 0 < e <= 3528 (1 for e = 0): 5^e's bit length. */
static int32_t pow5_bits(int32_t e)
{
	return (int32_t)(((uint32_t)e * 1217359u) >> 19) + 1;
}

/* floor(log10(2^e)) for 0 <= e <= 1650. */
static uint32_t log10_pow2(int32_t e)
{
	return ((uint32_t)e * 78913u) >> 18;
}

/* floor(log10(5^e)) for 0 <= e <= 2620. */
static uint32_t log10_pow5(int32_t e)
{
	return ((uint32_t)e * 732923u) >> 20;
}

/* Whether 5^p divides v (v > 0). */
static int multiple_of_pow5(uint64_t v, uint32_t p)
{
	uint32_t n = 0;
	while (v % 5 == 0 && n < p) {
		v /= 5;
		n++;
	}
	return n >= p;
}

/* Whether 2^p divides v (p < 64). */
static int multiple_of_pow2(uint64_t v, uint32_t p)
{
	return (v & ((UINT64_C(1) << p) - 1)) == 0;
}

/* (m * mul) >> j, mul a 128-bit number (low, high), 64 <= j. */
static uint64_t mul_shift(uint64_t m, const uint64_t mul[2], int32_t j)
{
	u128 lo = (u128)m * mul[0];
	u128 hi = (u128)m * mul[1];
	return (uint64_t)(((lo >> 64) + hi) >> (j - 64));
}

/*
 * The shortest decimal of the positive finite number with IEEE fields
 * ieee_m (mbits wide) and ieee_e (biased by bias), not both zero.
 */
static struct decimal to_decimal(uint64_t ieee_m, uint32_t ieee_e, int32_t mbits, int32_t bias)
{
	int32_t e2;
	uint64_t m2;
	if (ieee_e == 0) {
		e2 = 1 - bias - mbits - 2;
		m2 = ieee_m;
	} else {
		e2 = (int32_t)ieee_e - bias - mbits - 2;
		m2 = UINT64_C(1) << mbits | ieee_m;
	}
	int even = (m2 & 1) == 0;
	/* The lower neighbour is half as far at a power of two (but 1). */
	uint64_t mm_shift = ieee_m != 0 || ieee_e <= 1;
	uint64_t mv = 4 * m2, mp = mv + 2, mm = mv - 1 - mm_shift;

	uint64_t vr, vp, vm;
	int32_t e10;
	int vr_tz = 0, vm_tz = 0;
	if (e2 >= 0) {
		/* One digit more than 10^q leaves, for the rounding (e2 > 3). */
		uint32_t q = log10_pow2(e2) - (e2 > 3);
		int32_t k = POW5_INV_BITS + pow5_bits((int32_t)q) - 1;
		int32_t j = -e2 + (int32_t)q + k;
		e10 = (int32_t)q;
		vr = mul_shift(mv, POW5_INV[q], j);
		vp = mul_shift(mp, POW5_INV[q], j);
		vm = mul_shift(mm, POW5_INV[q], j);
		/* Exact when 5^q divides: at most one of the three can. */
		if (q <= 21) {
			if (mv % 5 == 0)
				vr_tz = multiple_of_pow5(mv, q);
			else if (even)
				vm_tz = multiple_of_pow5(mm, q);
			else
				vp -= (uint64_t)multiple_of_pow5(mp, q);
		}
	} else {
		uint32_t q = log10_pow5(-e2) - (-e2 > 1);
		int32_t i = -e2 - (int32_t)q;
		int32_t k = pow5_bits(i) - POW5_BITS;
		int32_t j = (int32_t)q - k;
		e10 = (int32_t)q + e2;
		vr = mul_shift(mv, POW5[i], j);
		vp = mul_shift(mp, POW5[i], j);
		vm = mul_shift(mm, POW5[i], j);
		/* Exact when 2^q divides (mv has two factors of two at least). */
		if (q <= 1) {
			vr_tz = 1;
			if (even)
				vm_tz = mm_shift == 1;
			else
				vp--; /* mp is even too: an excluded bound, step inside */
		} else if (q < 63) {
			vr_tz = multiple_of_pow2(mv, q);
		}
	}

	int32_t removed = 0;
	unsigned last = 0;
	uint64_t out;
	if (vr_tz || vm_tz) {
		while (vp / 10 > vm / 10) {
			vm_tz &= vm % 10 == 0;
			vr_tz &= last == 0;
			last = (unsigned)(vr % 10);
			vr /= 10, vp /= 10, vm /= 10;
			removed++;
		}
		/* An included lower bound with zeros to drop: drop them. */
		if (vm_tz) {
			while (vm != 0 && vm % 10 == 0) {
				vr_tz &= last == 0;
				last = (unsigned)(vr % 10);
				vr /= 10, vp /= 10, vm /= 10;
				removed++;
			}
		}
		/* Exactly halfway: round to even. */
		if (vr_tz && last == 5 && vr % 2 == 0)
			last = 4;
		out = vr + ((vr == vm && (!even || !vm_tz)) || last >= 5);
	} else {
		int round_up = 0;
		/* Two digits at a time first: most of the digits go. */
		while (vp / 100 > vm / 100) {
			round_up = vr % 100 >= 50;
			vr /= 100, vp /= 100, vm /= 100;
			removed += 2;
		}
		while (vp / 10 > vm / 10) {
			round_up = vr % 10 >= 5;
			vr /= 10, vp /= 10, vm /= 10;
			removed++;
		}
		out = vr + (vr == vm || round_up);
	}
	struct decimal d = {out, e10 + removed};
	/* A round-up can leave zeros (19 -> 20): they are not digits. */
	while (d.digits % 10 == 0) {
		d.digits /= 10;
		d.exp++;
	}
	return d;
}

/*
 * d laid out as printf's %.*g with as many significant digits as d has:
 * positional when the exponent X of the first digit is -4 <= X < digits,
 * else d.ddde+XX (two exponent digits at least).
 */
static size_t format_g(char *buf, int neg, struct decimal d)
{
	char digits[20];
	int n = 0;
	for (uint64_t v = d.digits; v; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	for (int i = 0; i < n / 2; i++) {
		char c = digits[i];
		digits[i] = digits[n - 1 - i];
		digits[n - 1 - i] = c;
	}
	int x = d.exp + n - 1;
	char *o = buf;
	if (neg)
		*o++ = '-';
	if (x >= -4 && x < n) {
		if (x < 0) {
			*o++ = '0';
			*o++ = '.';
			for (int i = 0; i < -x - 1; i++)
				*o++ = '0';
			memcpy(o, digits, (size_t)n);
			o += n;
		} else {
			memcpy(o, digits, (size_t)x + 1);
			o += x + 1;
			if (n > x + 1) {
				*o++ = '.';
				memcpy(o, digits + x + 1, (size_t)(n - x - 1));
				o += n - x - 1;
			}
		}
	} else {
		*o++ = digits[0];
		if (n > 1) {
			*o++ = '.';
			memcpy(o, digits + 1, (size_t)n - 1);
			o += n - 1;
		}
		*o++ = 'e';
		*o++ = x < 0 ? '-' : '+';
		int ax = x < 0 ? -x : x;
		if (ax >= 100)
			*o++ = (char)('0' + ax / 100);
		*o++ = (char)('0' + ax / 10 % 10);
		*o++ = (char)('0' + ax % 10);
	}
	*o = 0;
	return (size_t)(o - buf);
}

/* Zero, the infinities and NaN, as printf writes them. */
static size_t format_special(char *buf, int neg, const char *what)
{
	char *o = buf;
	if (neg)
		*o++ = '-';
	strcpy(o, what);
	return (size_t)(o - buf) + strlen(what);
}

size_t shortest_f64(char *buf, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	int neg = (int)(bits >> 63);
	uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
	uint32_t e = (uint32_t)(bits >> 52) & 0x7ff;
	if (e == 0x7ff)
		return format_special(buf, neg, m ? "nan" : "inf");
	if (e == 0 && m == 0)
		return format_special(buf, neg, "0");
	return format_g(buf, neg, to_decimal(m, e, 52, 1023));
}

size_t shortest_f32(char *buf, float v)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof bits);
	int neg = (int)(bits >> 31);
	uint32_t m = bits & ((UINT32_C(1) << 23) - 1);
	uint32_t e = (bits >> 23) & 0xff;
	if (e == 0xff)
		return format_special(buf, neg, m ? "nan" : "inf");
	if (e == 0 && m == 0)
		return format_special(buf, neg, "0");
	return format_g(buf, neg, to_decimal(m, e, 23, 127));
}
