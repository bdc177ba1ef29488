/*
 * compare.c - the comparison kernels (see st/compare.h). Byte-identical runs
 * take a memcmp fast path that only counts NaNs; other runs are decoded
 * SUB elements at a time, so the decode buffers stay in L2. Floats are
 * widened with st_convert and "rounded to B's dtype" is st_convert's own
 * rounding, so the answer matches stconvert bit for bit.
 */
#include "internal.h"

#include <endian.h>
#include <math.h>
#include <string.h>

/* Elements decoded to double at a time: keeps the decode buffers in L2. */
#define SUB ST_COMPARE_BLOCK

__extension__ typedef __int128 wide_int;

/* ---- dtypes --------------------------------------------------------------- */

enum st_compare_kind st_compare_kind(st_dtype d)
{
	return st_dtype_is_wide_float(d) ? ST_COMPARE_FLOAT
	       : st_dtype_is_numeric(d) ? ST_COMPARE_INT : ST_COMPARE_RAW;
}

void st_compare_default_tol(st_dtype d, double *rtol, double *atol)
{
	switch (d) {
	case ST_DTYPE_F64: *rtol = 1e-7; *atol = 1e-7; break;
	case ST_DTYPE_F32: *rtol = 1.3e-6; *atol = 1e-5; break;
	case ST_DTYPE_F16: *rtol = 1e-3; *atol = 1e-5; break;
	case ST_DTYPE_BF16: *rtol = 1.6e-2; *atol = 1e-5; break;
	default: *rtol = 0; *atol = 0; break;
	}
}

/* Precision rank for check_rounded: the wider side is rounded. */
static int float_rank(st_dtype d)
{
	return d == ST_DTYPE_F64 ? 3 : d == ST_DTYPE_F32 ? 2 : 1;
}

void st_compare_spec_init(st_compare_spec *s, st_dtype a, st_dtype b, bool exact,
                          const double *rtol, const double *atol)
{
	double ra, aa, rb, ab;
	s->a = a;
	s->b = b;
	s->exact = exact;
	s->check_rounded = a != b && st_compare_kind(a) == ST_COMPARE_FLOAT &&
	                   st_compare_kind(b) == ST_COMPARE_FLOAT;
	s->a_is_wide = float_rank(a) >= float_rank(b);
	st_compare_default_tol(a, &ra, &aa);
	st_compare_default_tol(b, &rb, &ab);
	s->rtol = rtol ? *rtol : exact ? 0 : ra > rb ? ra : rb;
	s->atol = atol ? *atol : exact ? 0 : aa > ab ? aa : ab;
}

/* ---- element kernels ------------------------------------------------------ */

/* NaNs among n elements: without the sign bit (mask), above +Inf (inf). */
#define COUNT_NAN(T, le, mask, inf)                                  \
	for (size_t i = 0; i < n; i++) {                             \
		T v;                                                 \
		memcpy(&v, p + sizeof v * i, sizeof v);              \
		c += (le(v) & (mask)) > (inf);                       \
	}

static uint64_t count_nan(st_dtype d, const unsigned char *p, size_t n)
{
	uint64_t c = 0;
	switch (d) {
	case ST_DTYPE_F64:
		COUNT_NAN(uint64_t, le64toh, 0x7fffffffffffffffULL, 0x7ff0000000000000ULL);
		break;
	case ST_DTYPE_F32: COUNT_NAN(uint32_t, le32toh, 0x7fffffffu, 0x7f800000u); break;
	case ST_DTYPE_F16: COUNT_NAN(uint16_t, le16toh, 0x7fffu, 0x7c00u); break;
	case ST_DTYPE_BF16: COUNT_NAN(uint16_t, le16toh, 0x7fffu, 0x7f80u); break;
	default: break;
	}
	return c;
}

/* The bytes as the unsigned U, in host order, then as the T of the same
 * width (a copy of the bits: no conversion of an out-of-range value). */
#define DECODE_INT(T, U, le)                                         \
	for (size_t i = 0; i < n; i++) {                             \
		U u;                                                 \
		T v;                                                 \
		memcpy(&u, p + sizeof u * i, sizeof u);              \
		u = le(u);                                           \
		memcpy(&v, &u, sizeof v);                            \
		out[i] = (wide_int)v;                                \
	}

/*
 * Integers (and BOOL, byte for byte, so that --exact sees every bit) to
 * 128-bit integers, exactly.
 */
static void decode_int(st_dtype d, const unsigned char *p, wide_int *out,
                       size_t n)
{
	switch (d) {
	case ST_DTYPE_BOOL: case ST_DTYPE_U8: DECODE_INT(uint8_t, uint8_t, ); break;
	case ST_DTYPE_I8: DECODE_INT(int8_t, uint8_t, ); break;
	case ST_DTYPE_U16: DECODE_INT(uint16_t, uint16_t, le16toh); break;
	case ST_DTYPE_I16: DECODE_INT(int16_t, uint16_t, le16toh); break;
	case ST_DTYPE_U32: DECODE_INT(uint32_t, uint32_t, le32toh); break;
	case ST_DTYPE_I32: DECODE_INT(int32_t, uint32_t, le32toh); break;
	case ST_DTYPE_U64: DECODE_INT(uint64_t, uint64_t, le64toh); break;
	case ST_DTYPE_I64: DECODE_INT(int64_t, uint64_t, le64toh); break;
	default: break;
	}
}

void st_compare_stats_init(st_compare_stats *s)
{
	memset(s, 0, sizeof *s);
	s->worst_rank = -1;
	s->identical = true;
	s->rounded = true;
}

/* Is (rank, diff, index) worse than s's worst? Ties go to the lower index. */
static bool worse(const st_compare_stats *s, int rank, double diff, uint64_t idx)
{
	if (rank != s->worst_rank)
		return rank > s->worst_rank;
	if (diff != s->worst_diff)
		return diff > s->worst_diff;
	return idx < s->worst_index;
}

static void note_worst(st_compare_stats *s, int rank, double diff, uint64_t idx)
{
	if (worse(s, rank, diff, idx)) {
		s->worst_rank = rank;
		s->worst_diff = diff;
		s->worst_index = idx;
	}
}

/* Order-independent part of merging chunk statistics into a tensor's. */
void st_compare_stats_merge(st_compare_stats *t, const st_compare_stats *s)
{
	t->mismatched += s->mismatched;
	t->nan_equal += s->nan_equal;
	t->nan_mismatch += s->nan_mismatch;
	t->n_num += s->n_num;
	if (s->max_abs > t->max_abs)
		t->max_abs = s->max_abs;
	if (s->max_rel > t->max_rel)
		t->max_rel = s->max_rel;
	if (s->worst_rank >= 0)
		note_worst(t, s->worst_rank, s->worst_diff, s->worst_index);
	t->identical = t->identical && s->identical;
	t->rounded = t->rounded && s->rounded;
}

/*
 * One pair (see st/compare.h for the rule). Inline, so compare_float's
 * loop pays no call; st_compare_values is the same kernel for callers
 * outside this file.
 */
static inline st_compare_verdict value_verdict(double x, double y,
                                               double rtol, double atol,
                                               double *dp, double *rp)
{
	*dp = *rp = 0;
	if (isnan(x) || isnan(y))
		return isnan(x) && isnan(y) ? ST_COMPARE_NAN_EQUAL
		                            : ST_COMPARE_NAN_MISMATCH;
	if (x == y)
		return ST_COMPARE_EQUAL;
	double d = fabs(x - y);
	*dp = d;
	if (y != 0)
		*rp = isinf(y) ? INFINITY : d / fabs(y);
	if (isinf(x) || isinf(y) || !(d <= atol + rtol * fabs(y)))
		return ST_COMPARE_FAR;
	return ST_COMPARE_CLOSE;
}

st_compare_verdict st_compare_values(double a, double b, double rtol,
                                     double atol, double *abs_diff,
                                     double *rel_diff)
{
	double d, r;
	st_compare_verdict v = value_verdict(a, b, rtol, atol, &d, &r);
	if (abs_diff)
		*abs_diff = d;
	if (rel_diff)
		*rel_diff = r;
	return v;
}

/* Whether element i's raw bytes differ (NULL ra: no raw bytes). Only
 * --exact asks, so the other paths never pay for the memcmp. */
static inline bool bits_differ(const unsigned char *ra, const unsigned char *rb, unsigned es,
                               size_t i)
{
	return ra && memcmp(ra + (size_t)es * i, rb + (size_t)es * i, es) != 0;
}

/*
 * Compare n widened pairs. A NaN on both sides is equal (counted); a NaN on
 * one side is a mismatch that ranks worst. Equal values (Inf included)
 * differ by 0; an Inf against anything else differs by Inf and is outside
 * every tolerance, as torch.isclose has it. With exact (and the same
 * dtype) an element whose bits differ is a mismatch even when the values
 * are equal (-0 vs +0, NaN payloads); ra/rb/es give the raw bytes for that.
 */
static void compare_float(st_compare_stats *s, double *sum, const double *da,
                          const double *db, size_t n, uint64_t base,
                          double rtol, double atol, bool exact,
                          const unsigned char *ra, const unsigned char *rb,
                          unsigned es)
{
	double acc = 0;
	for (size_t i = 0; i < n; i++) {
		double d, r;
		st_compare_verdict v = value_verdict(da[i], db[i], rtol, atol, &d, &r);
		if (v == ST_COMPARE_NAN_MISMATCH) {
			s->nan_mismatch++;
			s->mismatched++;
			note_worst(s, 2, 0, base + i);
			continue;
		}
		if (v == ST_COMPARE_NAN_EQUAL || v == ST_COMPARE_EQUAL) {
			if (v == ST_COMPARE_NAN_EQUAL)
				s->nan_equal++;
			else
				s->n_num++;
			if (exact && bits_differ(ra, rb, es, i)) {
				s->mismatched++;
				note_worst(s, 0, 0, base + i);
			}
			continue;
		}
		if (exact || v == ST_COMPARE_FAR)
			s->mismatched++;
		s->n_num++;
		acc += d;
		if (d > s->max_abs)
			s->max_abs = d;
		if (r > s->max_rel)
			s->max_rel = r;
		note_worst(s, 1, d, base + i);
	}
	*sum += acc;
}

/* The same for integer pairs, exactly (differences up to 2^65 fit). */
static void compare_int(st_compare_stats *s, double *sum, const wide_int *ia,
                        const wide_int *ib, size_t n, uint64_t base,
                        double rtol, double atol, bool exact)
{
	double acc = 0;
	for (size_t i = 0; i < n; i++) {
		wide_int x = ia[i], y = ib[i];
		s->n_num++;
		if (x == y)
			continue;
		wide_int w = x > y ? x - y : y - x;
		double d = (double)w, fy = fabs((double)y);
		acc += d;
		if (d > s->max_abs)
			s->max_abs = d;
		if (y != 0 && d / fy > s->max_rel)
			s->max_rel = d / fy;
		if (exact || !(d <= atol + rtol * fy))
			s->mismatched++;
		note_worst(s, 1, d, base + i);
	}
	*sum += acc;
}

/* Bytes-only comparison (F8, F6, F4, C64): elements whose bits differ. */
static void compare_raw(st_compare_stats *s, st_dtype d, const unsigned char *a,
                        const unsigned char *b, uint64_t n_groups,
                        uint64_t base)
{
	unsigned gbytes, gelems;
	st_dtype_group(d, &gbytes, &gelems);
	unsigned bits = st_dtype_bits(d);
	for (uint64_t g = 0; g < n_groups; g++) {
		const unsigned char *pa = a + g * gbytes, *pb = b + g * gbytes;
		if (memcmp(pa, pb, gbytes) == 0)
			continue;
		if (gelems == 1) {
			s->mismatched++;
			note_worst(s, 1, 0, base + g);
			continue;
		}
		/* Element e holds bits [e*bits, (e+1)*bits) of the group, LSB first. */
		uint32_t x = 0;
		for (unsigned k = 0; k < gbytes; k++)
			x |= (uint32_t)(pa[k] ^ pb[k]) << (8 * k);
		for (unsigned e = 0; e < gelems; e++) {
			if ((x >> (e * bits)) & ((1u << bits) - 1)) {
				s->mismatched++;
				note_worst(s, 1, 0, base + g * gelems + e);
			}
		}
	}
}

/* ---- a chunk -------------------------------------------------------------- */

/* The scratch carved: decode buffers of SUB elements and one for rounding. */
struct scratch {
	wide_int ia[SUB], ib[SUB];
	double da[SUB], db[SUB];
	unsigned char rb[SUB * 8];
};

_Static_assert(sizeof(struct scratch) <= ST_COMPARE_SCRATCH_BYTES,
               "ST_COMPARE_SCRATCH_BYTES too small");

/* Same dtype on both sides, not byte-identical as a whole. */
static void chunk_same_dtype(const st_compare_spec *spec, const unsigned char *a,
                             const unsigned char *b, uint64_t n_groups,
                             size_t ne, uint64_t e0, struct scratch *w,
                             st_compare_stats *s, double *sums)
{
	st_dtype ta = spec->a;
	enum st_compare_kind ka = st_compare_kind(ta);
	s->identical = false;
	if (ka == ST_COMPARE_RAW) {
		compare_raw(s, ta, a, b, n_groups, e0);
		return;
	}
	unsigned es = st_dtype_bits(ta) / 8;
	for (size_t off = 0; off < ne; off += SUB) {
		size_t m = ne - off < SUB ? ne - off : SUB;
		const unsigned char *ra = a + off * es, *rb = b + off * es;
		if (memcmp(ra, rb, m * es) == 0) {
			uint64_t nan = ka == ST_COMPARE_FLOAT ? count_nan(ta, ra, m) : 0;
			s->nan_equal += nan;
			s->n_num += m - nan;
			continue;
		}
		if (ka == ST_COMPARE_FLOAT) {
			st_dtype_widen(ta, ra, w->da, m);
			st_dtype_widen(ta, rb, w->db, m);
			compare_float(s, &sums[off / SUB], w->da, w->db, m, e0 + off,
			              spec->rtol, spec->atol, spec->exact, ra, rb, es);
		} else {
			decode_int(ta, ra, w->ia, m);
			decode_int(ta, rb, w->ib, m);
			compare_int(s, &sums[off / SUB], w->ia, w->ib, m, e0 + off,
			            spec->rtol, spec->atol, spec->exact);
		}
	}
}

/* Different dtypes: never identical; values compared after widening. */
static void chunk_two_dtypes(const st_compare_spec *spec, const unsigned char *a,
                             const unsigned char *b, size_t ne, uint64_t e0,
                             struct scratch *w, st_compare_stats *s, double *sums)
{
	st_dtype ta = spec->a, tb = spec->b;
	enum st_compare_kind ka = st_compare_kind(ta), kb = st_compare_kind(tb);
	unsigned ga = st_dtype_bits(ta) / 8, gb = st_dtype_bits(tb) / 8;
	s->identical = false;
	for (size_t off = 0; off < ne; off += SUB) {
		size_t m = ne - off < SUB ? ne - off : SUB;
		const unsigned char *ra = a + off * ga, *rb = b + off * gb;
		if (ka == ST_COMPARE_INT && kb == ST_COMPARE_INT) {
			decode_int(ta, ra, w->ia, m);
			decode_int(tb, rb, w->ib, m);
			compare_int(s, &sums[off / SUB], w->ia, w->ib, m, e0 + off,
			            spec->rtol, spec->atol, spec->exact);
			continue;
		}
		st_dtype_widen(ta, ra, w->da, m);
		st_dtype_widen(tb, rb, w->db, m);
		compare_float(s, &sums[off / SUB], w->da, w->db, m, e0 + off,
		              spec->rtol, spec->atol, spec->exact, NULL, NULL, 0);
		if (!spec->check_rounded || !s->rounded)
			continue;
		/* Round the wide side to the narrow dtype; compare bits, NaN by NaN-ness. */
		st_dtype tw = spec->a_is_wide ? ta : tb, tn = spec->a_is_wide ? tb : ta;
		const unsigned char *pw = spec->a_is_wide ? ra : rb;
		const unsigned char *pn = spec->a_is_wide ? rb : ra;
		const double *dw = spec->a_is_wide ? w->da : w->db;
		const double *dn = spec->a_is_wide ? w->db : w->da;
		unsigned en = spec->a_is_wide ? gb : ga;
		st_convert(tn, w->rb, tw, pw, m, NULL);
		if (memcmp(w->rb, pn, m * en) == 0)
			continue;
		for (size_t i = 0; i < m; i++) {
			if (memcmp(w->rb + i * en, pn + i * en, en) != 0 &&
			    !(isnan(dw[i]) && isnan(dn[i]))) {
				s->rounded = false;
				break;
			}
		}
	}
}

void st_compare_chunk(const st_compare_spec *spec, const unsigned char *a,
                      const unsigned char *b, uint64_t n_groups, uint64_t first,
                      void *scratch, st_compare_stats *s, double *sums)
{
	unsigned ga, gb, elems;
	st_dtype_group(spec->a, &ga, &elems);
	st_dtype_group(spec->b, &gb, &elems);
	size_t ne = (size_t)(n_groups * elems);
	if (spec->a == spec->b) {
		/* Fast path: identical bytes need no arithmetic, only NaNs counted. */
		size_t la = (size_t)(n_groups * ga);
		if (memcmp(a, b, la) == 0) {
			uint64_t nan = st_compare_kind(spec->a) == ST_COMPARE_FLOAT
			                   ? count_nan(spec->a, a, ne) : 0;
			s->nan_equal += nan;
			s->n_num += ne - nan;
			return;
		}
		chunk_same_dtype(spec, a, b, n_groups, ne, first, scratch, s, sums);
		return;
	}
	chunk_two_dtypes(spec, a, b, ne, first, scratch, s, sums);
}
