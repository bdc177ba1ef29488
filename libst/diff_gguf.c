/*
 * diff_gguf.c - a GGUF against a checkpoint through a name map (see
 * st/diff.h). A pair is read a chunk at a time (about 64 Ki elements:
 * whole GGUF blocks and rows), so memory stays bounded whatever the
 * tensor: the checkpoint's values widened to F32 and laid out as the GGUF
 * holds them (Conv1D weights transposed to [out, in], llama's q/k rows
 * taken in st_arch_permuted_row's order, a row at a time), the GGUF's
 * decoded by st_ggml_to_f32; the values go through st_compare_chunk as
 * F32 against F32, and "exactly rounded / quantized" is answered by
 * encoding the checkpoint's values with st_ggml_from_f32 and comparing
 * bytes. With no tolerance given, every other quantized type is judged
 * by its expected error (doc/ggml.md, "Expected error"): per element from
 * the block's stored scales, or per block's RMS for the IQ lattice types.
 * Two GGUF files (st_diff_gguf_files) are compared the same way, both
 * sides decoded a chunk of whole blocks at a time.
 */
#include "ggml_internal.h"
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x against the reference y, F32 both, chunk by chunk, into one set of figures. */
struct cmp {
	st_compare_spec spec;
	st_compare_stats s;
	void *scratch;
};

static int cmp_start(struct cmp *c, double rtol, double atol, st_error *err)
{
	st_compare_spec_init(&c->spec, ST_DTYPE_F32, ST_DTYPE_F32, false, &rtol, &atol);
	st_compare_stats_init(&c->s);
	c->scratch = malloc(ST_COMPARE_SCRATCH_BYTES);
	return c->scratch ? ST_OK : st__error(err, ST_ENOMEM, "out of memory");
}

/* Elements [at, at + n) of the tensor. */
static void cmp_add(struct cmp *c, const float *x, const float *y, uint64_t n, uint64_t at)
{
	for (uint64_t i = 0; i < n; i += ST_COMPARE_BLOCK) {
		uint64_t k = n - i < ST_COMPARE_BLOCK ? n - i : ST_COMPARE_BLOCK;
		double sum = 0;
		st_compare_chunk(&c->spec, (const unsigned char *)(x + i),
		                 (const unsigned char *)(y + i), k, at + i, c->scratch, &c->s, &sum);
	}
}

static void cmp_end(struct cmp *c, st_diff_gguf_item *it)
{
	free(c->scratch);
	c->scratch = NULL;
	it->mismatched = c->s.mismatched;
	it->max_abs = c->s.max_abs;
	it->max_rel = c->s.max_rel;
}

/* A stored F16 (little-endian bytes) as a float. */
static float f16_at(const unsigned char *p)
{
	float f;
	st_convert(ST_DTYPE_F32, &f, ST_DTYPE_F16, p, 1, NULL);
	return f;
}

/*
 * The legacy 32-element types judged by their expected error per block,
 * from the stored scale d (and min m) of each block (doc/ggml.md,
 * "Expected error", which derives the figures from ggml's
 * quantize_row_*_ref): an element is within |d| / 2 + |d| slack +
 * |m| 2^-10 + tiny of the reference, or within |d| + ... when its code is
 * top, where the quantizer clamps (a code of 0 .. 2^bits - 1, offset by
 * zero for the symmetric types; a _1 type never clamps).
 */
struct qbound {
	unsigned type, bytes;
	int m_off, qh_off; /* F16 m, u32 fifth bits; -1: none */
	unsigned qs_off;   /* 16 bytes of nibbles, element j low, j + 16 high */
	unsigned top;      /* the clamped code, or 0 */
	double slack, tiny;
	double imatrix_rms; /* the RMS figure of a block made with an imatrix */
};

static const struct qbound qbounds[] = {
	{ST_GGML_Q4_0, 18, -1, -1, 2, 15, 0x1p-7, 0x1p-21, 0.68},
	{ST_GGML_Q4_1, 20, 2, -1, 4, 0, 0x1p-6, 0x1p-20, 1.14},
	{ST_GGML_Q5_0, 22, -1, 2, 6, 31, 0x1p-6, 0x1p-20, 0.61},
	{ST_GGML_Q5_1, 24, 2, 4, 8, 0, 0x1p-5, 0x1p-19, 0.84},
};

static const struct qbound *qbound_of(unsigned type)
{
	for (size_t i = 0; i < sizeof qbounds / sizeof qbounds[0]; i++)
		if (qbounds[i].type == type)
			return &qbounds[i];
	return NULL;
}

/* Element j's code in block blk of type q. */
static unsigned qcode(const struct qbound *q, const unsigned char *blk, unsigned j)
{
	unsigned c = j < 16 ? blk[q->qs_off + j] & 0xF : blk[q->qs_off + j - 16] >> 4;
	if (q->qh_off >= 0) {
		const unsigned char *h = blk + q->qh_off;
		c |= (unsigned)((h[j / 8] >> (j % 8)) & 1) << 4;
	}
	return c;
}

/*
 * Whether y (n of them) grows with x: no pair with x_i <= x_j but
 * y_i > y_j. Every quantizer that takes each code as the nearest point of
 * one grid (any scale, any clamp) gives such a block.
 */
static bool monotone(const float *x, const float *y, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++)
			if (x[i] <= x[j] && y[i] > y[j])
				return false;
	return true;
}

/* Whether the RMS of y - x over n elements is at most rel times that of x,
 * plus 2^-20 (blocks ggml rounds to zero); *most: that bound. */
static bool rms_within(const float *x, const float *y, unsigned n, double rel, double *most)
{
	double ex = 0, ee = 0;
	for (unsigned j = 0; j < n; j++) {
		double e = (double)x[j] - (double)y[j];
		ex += (double)x[j] * x[j];
		ee += e * e;
	}
	*most = rel * sqrt(ex / n) + 0x1p-20;
	return sqrt(ee / n) <= *most;
}

/*
 * Whether a symmetric type's stored scale d can be the weighted least-
 * squares fit of its codes to x (quantize_row_q4_0_impl: sum w x l /
 * sum w l^2, a weighted mean of the x / l, so between the least and the
 * largest), give or take its F16 rounding. The _1 types: true.
 */
static bool scale_fits(const struct qbound *q, const unsigned char *blk, const float *x)
{
	if (q->m_off >= 0)
		return true;
	double d = f16_at(blk), lo = INFINITY, hi = -INFINITY;
	for (unsigned j = 0; j < 32; j++) {
		int l = (int)qcode(q, blk, j) - (int)(q->top + 1) / 2;
		if (!l)
			continue;
		double r = (double)x[j] / l;
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	double slack = fabs(d) * 0x1p-10 + 0x1p-24;
	return lo > hi || (d >= lo - slack && d <= hi + slack);
}

/*
 * The legacy types' rule (struct qbound) over n elements, as type_bound.
 * A block outside it may still be ggml's quantization with an importance
 * matrix (quantize_row_q4_0_impl ...: codes nearest for one of 19 trial
 * scales, the stored scale then a weighted least-squares fit, so no
 * per-element bound): it passes when its values grow with the reference's,
 * its scale can be that fit and its RMS error is within q->imatrix_rms
 * (doc/ggml.md).
 */
static void legacy_bound(const struct qbound *q, const unsigned char *gd, const float *x,
                         const float *y, uint64_t n, uint64_t *mism, double *bound)
{
	for (uint64_t b = 0; b < n / 32; b++) {
		const unsigned char *blk = gd + b * q->bytes;
		const float *xb = x + b * 32, *yb = y + b * 32;
		double d = fabs((double)f16_at(blk));
		double m = q->m_off >= 0 ? fabs((double)f16_at(blk + q->m_off)) : 0;
		double rest = d * q->slack + m * 0x1p-10 + q->tiny;
		double half = d / 2 + rest, whole = d + rest;
		double most = q->top ? whole : half, rms_most;
		if (most > *bound)
			*bound = most;
		uint64_t out = 0;
		for (unsigned j = 0; j < 32; j++) {
			double e = fabs((double)xb[j] - (double)yb[j]);
			bool clamped = q->top && qcode(q, blk, j) == q->top;
			if (!(e <= (clamped ? whole : half)))
				out++;
		}
		if (out && monotone(xb, yb, 32) && scale_fits(q, blk, xb) &&
		    rms_within(xb, yb, 32, q->imatrix_rms, &rms_most))
			out = 0;
		*mism += out;
	}
}

/*
 * The types whose quantizer (ggml_quantize_chunk, imatrix or not) ends by
 * choosing each code as the point of its sub-block's grid nearest to the
 * value, with the block's final scales (doc/ggml.md, "Expected error"):
 * the K-quants, Q8_K, Q8_1 (quantize_row_q8_1_ref), IQ4_NL, IQ4_XS, TQ1_0,
 * TQ2_0, MXFP4, NVFP4, Q1_0 and Q2_0. An element is within the distance from the reference x to the
 * nearest point of its grid, plus slack (a scale chosen in F32 and stored
 * as F16) plus 2^-20 of the magnitudes (F32 rounding on both sides).
 */
struct grid {
	double a, b;       /* the points b + a * level */
	int lo, hi;        /* levels lo..hi, or indices into tab */
	const int8_t *tab; /* the levels (16 of them), or NULL: the integers */
	double slack;
};

/* F16 scale s chosen in F32, levels up to top in magnitude: twice the
 * farthest a level moves when s is rounded to F16 (2^-11 relative,
 * 2^-25 below F16's normal range), from the stored |s| a little more. */
static double f16_slack(double s, double top)
{
	return 2 * top * (fabs(s) * 0x1.004p-11 + 0x1p-25);
}

static struct grid affine(double a, double b, int lo, int hi, double slack)
{
	return (struct grid){a, b, lo, hi, NULL, slack};
}

static struct grid table(double a, const int8_t *tab, double slack)
{
	return (struct grid){a, 0, 0, 15, tab, slack};
}

/* A block's grids, one per sub of its elements, into g. */
typedef void grids_fn(const unsigned char *blk, struct grid *g);

static void grids_q2_k(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s + 80), dmin = f16_at(s + 82);
	for (int j = 0; j < 16; j++)
		g[j] = affine(d * (s[j] & 0xF), -dmin * (s[j] >> 4), 0, 3, 0);
}

static void grids_q3_k(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s + 108);
	for (int j = 0; j < 16; j++)
		g[j] = affine(d * (st__ggml_q3k_scale(s + 96, j) - 32), 0, -4, 3, 0);
}

static void grids_k45(const unsigned char *s, struct grid *g, int hi)
{
	float dl[8], ml[8];
	st__ggml_k4_scales(s, dl, ml);
	for (int j = 0; j < 8; j++)
		g[j] = affine(dl[j], -(double)ml[j], 0, hi, 0);
}

static void grids_q4_k(const unsigned char *s, struct grid *g)
{
	grids_k45(s, g, 15);
}

static void grids_q5_k(const unsigned char *s, struct grid *g)
{
	grids_k45(s, g, 31);
}

static void grids_q6_k(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s + 208);
	for (int j = 0; j < 16; j++)
		g[j] = affine(d * (signed char)s[192 + j], 0, -32, 31, 0);
}

static void grids_q8_k(const unsigned char *s, struct grid *g)
{
	uint32_t u = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 |
	             (uint32_t)s[3] << 24; /* an F32, little-endian */
	float d;
	memcpy(&d, &u, sizeof d);
	g[0] = affine(d, 0, -128, 127, 0);
}

/* Q8_1 (quantize_row_q8_1_ref): d = amax / 127 in F32, stored as F16. */
static void grids_q8_1(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s);
	g[0] = affine(d, 0, -127, 127, f16_slack(d, 127));
}

static void grids_iq4_nl(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s);
	g[0] = table(d, st__ggml_iq4nl_values, f16_slack(d, 127));
}

static void grids_iq4_xs(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s);
	unsigned hs = (unsigned)s[2] | (unsigned)s[3] << 8;
	for (int j = 0; j < 8; j++) {
		int ls = (int)((s[4 + j / 2] >> (4 * (j % 2)) & 0xF) | ((hs >> (2 * j)) & 3) << 4);
		g[j] = table(d * (ls - 32), st__ggml_iq4nl_values,
		             f16_slack(d, 127.0 * abs(ls - 32)));
	}
}

static void grids_tq1_0(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s + 52);
	g[0] = affine(d, -d, 0, 2, f16_slack(d, 1));
}

static void grids_tq2_0(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s + 64);
	g[0] = affine(d, -d, 0, 3, f16_slack(d, 1));
}

static void grids_mxfp4(const unsigned char *s, struct grid *g)
{
	g[0] = table(st__ggml_e8m0_half(s[0]), st__ggml_e2m1x2, 0);
}

static void grids_nvfp4(const unsigned char *s, struct grid *g)
{
	for (int k = 0; k < 4; k++)
		g[k] = table(st__ggml_ue4m3_half(s[k]), st__ggml_e2m1x2, 0);
}

/* Q1_0's code is the sign alone (x >= 0: +d): d need not be near anything. */
static void grids_q1_0(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s);
	g[0] = affine(2 * d, -d, 0, 1, 0);
}

static void grids_q2_0(const unsigned char *s, struct grid *g)
{
	double d = f16_at(s);
	g[0] = affine(d, -d, 0, 3, f16_slack(d, 2));
}

struct nearest {
	unsigned type, block, bytes, sub; /* elements per block, its bytes, per grid */
	grids_fn *grids;
};

static const struct nearest nearests[] = {
	{ST_GGML_Q2_K, 256, 84, 16, grids_q2_k},      {ST_GGML_Q3_K, 256, 110, 16, grids_q3_k},
	{ST_GGML_Q4_K, 256, 144, 32, grids_q4_k},     {ST_GGML_Q5_K, 256, 176, 32, grids_q5_k},
	{ST_GGML_Q6_K, 256, 210, 16, grids_q6_k},     {ST_GGML_Q8_K, 256, 292, 256, grids_q8_k},
	{ST_GGML_Q8_1, 32, 36, 32, grids_q8_1},
	{ST_GGML_IQ4_NL, 32, 18, 32, grids_iq4_nl},   {ST_GGML_IQ4_XS, 256, 136, 32, grids_iq4_xs},
	{ST_GGML_TQ1_0, 256, 54, 256, grids_tq1_0},   {ST_GGML_TQ2_0, 256, 66, 256, grids_tq2_0},
	{ST_GGML_MXFP4, 32, 17, 32, grids_mxfp4},     {ST_GGML_NVFP4, 64, 36, 16, grids_nvfp4},
	{ST_GGML_Q1_0, 128, 18, 128, grids_q1_0},     {ST_GGML_Q2_0, 64, 18, 64, grids_q2_0},
};

static const struct nearest *nearest_of(unsigned type)
{
	for (size_t i = 0; i < sizeof nearests / sizeof nearests[0]; i++)
		if (nearests[i].type == type)
			return &nearests[i];
	return NULL;
}

static double level(const struct grid *g, int l)
{
	return g->tab ? g->tab[l] : l;
}

/* The distance from x to the nearest point of grid g. */
static double nearest_distance(const struct grid *g, double x)
{
	double best = INFINITY;
	if (g->tab || g->a == 0) {
		for (int l = g->lo; l <= (g->a == 0 ? g->lo : g->hi); l++) {
			double e = fabs(x - (g->b + g->a * level(g, l)));
			if (e < best)
				best = e;
		}
		return best;
	}
	double t = nearbyint((x - g->b) / g->a);
	double l0 = t < g->lo ? g->lo : t > g->hi ? g->hi : t;
	for (int k = -1; k <= 1; k++) {
		double l = l0 + k;
		if (l < g->lo || l > g->hi)
			continue;
		double e = fabs(x - (g->b + g->a * l));
		if (e < best)
			best = e;
	}
	return best;
}

/* The nearest-point rule (struct nearest) over n elements, as type_bound. */
static void nearest_bound(const struct nearest *q, const unsigned char *gd, const float *x,
                          const float *y, uint64_t n, uint64_t *mism, double *bound)
{
	struct grid g[16];
	for (uint64_t b = 0; b < n / q->block; b++) {
		q->grids(gd + b * q->bytes, g);
		for (unsigned j = 0; j < q->block; j++) {
			const struct grid *gj = &g[j / q->sub];
			double xv = x[b * q->block + j], yv = y[b * q->block + j];
			double top = fmax(fabs(level(gj, gj->lo)), fabs(level(gj, gj->hi)));
			double most = nearest_distance(gj, xv) + gj->slack +
			              0x1p-20 * (fabs(xv) + fabs(gj->b) + fabs(gj->a) * top) +
			              0x1p-126;
			if (most > *bound)
				*bound = most;
			if (!(fabs(xv - yv) <= most))
				(*mism)++;
		}
	}
}

/*
 * The lattice types, whose quantizers choose 8 values at a time by a
 * search: a block of 256 is within when the RMS of its error is at most
 * rel times the RMS of its reference values, plus 2^-20 (blocks ggml
 * rounds to zero; doc/ggml.md gives the figures, measured on ggml's own
 * quantizer, and what they miss). A block outside counts all its elements.
 */
struct rms {
	unsigned type;
	double rel;
};

static const struct rms rmss[] = {
	{ST_GGML_IQ1_S, 1.20},     {ST_GGML_IQ1_M, 1.08},
	{ST_GGML_IQ2_XXS, 1.90}, {ST_GGML_IQ2_XS, 1.16},
	{ST_GGML_IQ2_S, 1.18},     {ST_GGML_IQ3_XXS, 1.01},
	{ST_GGML_IQ3_S, 2.13},
};

static const struct rms *rms_of(unsigned type)
{
	for (size_t i = 0; i < sizeof rmss / sizeof rmss[0]; i++)
		if (rmss[i].type == type)
			return &rmss[i];
	return NULL;
}

static void rms_bound(const struct rms *q, const float *x, const float *y, uint64_t n,
                      uint64_t *mism, double *bound)
{
	for (uint64_t b = 0; b < n / 256; b++) {
		double most;
		if (!rms_within(x + b * 256, y + b * 256, 256, q->rel, &most))
			*mism += 256;
		if (most > *bound)
			*bound = most;
	}
}

/* Whether a type is judged by its expected error (type_bound). */
static bool type_has_bound(unsigned type)
{
	return qbound_of(type) || nearest_of(type) || rms_of(type);
}

/* A pair judged by its quantized type's rule: out elements outside, the
 * largest bound (an element's or a lattice block's RMS) as atol. */
static void judged_by_type(st_diff_gguf_item *it, unsigned type, uint64_t out, double bound)
{
	it->type_bound = true;
	it->type_rms = rms_of(type) != NULL;
	it->mismatched = out;
	it->rtol = 0;
	it->atol = bound;
}

/*
 * The elements of y (the decoded bytes gd, n of them, whole blocks) outside
 * their type's rule against the reference x added to *mism, *bound raised
 * to the largest bound (an element's, or a block's RMS for the lattice
 * types; both set by the caller, so that a tensor can be judged a chunk of
 * whole blocks at a time). Returns false for a type without a rule.
 */
static bool type_bound(unsigned type, const unsigned char *gd, const float *x,
                       const float *y, uint64_t n, uint64_t *mism, double *bound)
{
	const struct qbound *q = qbound_of(type);
	const struct nearest *ne = nearest_of(type);
	const struct rms *r = rms_of(type);
	if (q)
		legacy_bound(q, gd, x, y, n, mism, bound);
	else if (ne)
		nearest_bound(ne, gd, x, y, n, mism, bound);
	else if (r)
		rms_bound(r, x, y, n, mism, bound);
	return q || ne || r;
}

/* No tolerance given: the quantized type's own rule, if it has one. */
static bool type_default(const st_diff_opts *o)
{
	return !o->rtol && !o->atol && !o->exact;
}

/* The elements of a tensor read per chunk: about 256 KiB of F32. */
#define CHUNK_ELEMENTS 65536

/* How A's values are laid out as the GGUF holds them. */
struct lay {
	const unsigned char *src; /* A's bytes (or its F32 copy) */
	st_dtype dt;              /* their dtype */
	size_t es;                /* bytes per element (whole bytes) */
	uint64_t rows, cols;      /* A's shape, a vector as [n, 1] */
	bool transpose;           /* GGUF row c is A's column c */
	uint64_t heads;           /* GGUF row r is A's row st_arch_permuted_row(r) */
};

/*
 * GGUF elements [e0, e0 + m) of A's values into x, as the GGUF lays them
 * out: transposed (e0 and m whole GGUF rows of rows elements; tmp holds
 * m / rows floats), rows permuted (whole rows of cols), or as they are.
 */
static void gather(const struct lay *l, uint64_t e0, uint64_t m, float *x, float *tmp)
{
	if (l->transpose) {
		uint64_t c0 = e0 / l->rows, k = m / l->rows;
		for (uint64_t r = 0; r < l->rows; r++) {
			st_convert(ST_DTYPE_F32, tmp, l->dt, l->src + (r * l->cols + c0) * l->es,
			           (size_t)k, NULL);
			for (uint64_t c = 0; c < k; c++)
				x[c * l->rows + r] = tmp[c];
		}
		return;
	}
	if (!l->heads) {
		st_convert(ST_DTYPE_F32, x, l->dt, l->src + e0 * l->es, (size_t)m, NULL);
		return;
	}
	for (uint64_t j = 0; j < m; j += l->cols) {
		uint64_t from = 0;
		st_arch_permuted_row((e0 + j) / l->cols, l->rows, l->heads, &from); /* checked */
		st_convert(ST_DTYPE_F32, x + j, l->dt, l->src + from * l->cols * l->es,
		           (size_t)l->cols, NULL);
	}
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/*
 * The elements per chunk: whole GGUF blocks (blk), whole GGUF rows of A's
 * columns when transposed (rows each) or A's rows when permuted (cols
 * each), about CHUNK_ELEMENTS.
 */
static uint64_t chunk_elements(const struct lay *l, unsigned blk)
{
	uint64_t unit = l->transpose ? l->rows : l->heads ? l->cols : 1;
	if (!unit)
		unit = 1;
	uint64_t step = unit / gcd(unit, blk) * blk;
	return step >= CHUNK_ELEMENTS ? step : CHUNK_ELEMENTS / step * step;
}

/* The tolerances of a pair: given, else the looser of the two types'
 * defaults (a ggml type without a dtype: the checkpoint's), 0 with exact. */
static void pair_tol(st_dtype dt, unsigned type, const st_diff_opts *o,
                     st_diff_gguf_item *it)
{
	double r1 = 0, a1 = 0, r2 = 0, a2 = 0;
	st_dtype gd;
	st_compare_default_tol(dt, &r1, &a1);
	if (st_ggml_type_dtype(type, &gd) == ST_OK)
		st_compare_default_tol(gd, &r2, &a2);
	it->rtol = o->rtol ? *o->rtol : o->exact ? 0 : r1 > r2 ? r1 : r2;
	it->atol = o->atol ? *o->atol : o->exact ? 0 : a1 > a2 ? a1 : a2;
}

/* Tensor i of ck against tensor gi of g, laid out as gather() says. */
static int pair(st_checkpoint *ck, size_t i, const st_gguf *g, size_t gi, bool transpose,
                uint64_t heads, const st_diff_opts *o, st_diff_gguf_item *it, st_error *err)
{
	const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
	const st_gguf_tensor *gt = st_gguf_tensor_at(g, gi);
	memset(it, 0, sizeof *it);
	it->ck = i;
	it->gg = gi;
	it->transposed = transpose;
	it->permuted_heads = heads;
	it->n = t->n_elements;
	/* Shapes: the GGUF dims are the HF shape reversed, or as is when the
	 * tensor is transposed. */
	bool same = gt->ndim == t->ndim && t->ndim <= 2;
	for (unsigned k = 0; same && k < t->ndim; k++)
		same = gt->dims[k] == (transpose ? t->shape[k] : t->shape[t->ndim - 1 - k]);
	it->kind = !same ? ST_DIFF_GGUF_SHAPE
	           : !st_dtype_is_numeric(t->dtype) || !st_dtype_is_float(t->dtype)
	                   ? ST_DIFF_GGUF_NOT_FLOAT
	                   : ST_DIFF_GGUF_COMPARED;
	it->verdict = ST_DIFF_NOT_COMPARED;
	if (it->kind != ST_DIFF_GGUF_COMPARED)
		return ST_OK;
	if (transpose && t->ndim != 2)
		return st__error(err, ST_EINVAL, "only a 2-D tensor is transposed");
	uint64_t rows = t->ndim ? t->shape[0] : 1;
	uint64_t cols = rows ? t->n_elements / rows : 0, dummy;
	if (heads && st_arch_permuted_row(0, rows, heads, &dummy) != ST_OK)
		return st__error(err, ST_EFORMAT,
		                 "%s: tensor '%s': %llu rows are not %llu heads of an even "
		                 "number of rows each: its q/k permutation cannot be undone",
		                 st_gguf_path(g), gt->name, (unsigned long long)rows,
		                 (unsigned long long)heads);
	const void *src;
	int rc = st_checkpoint_data(ck, i, &src, err);
	if (rc != ST_OK)
		return rc;
	unsigned blk, bytes;
	if (st_ggml_to_f32(gt->type, NULL, NULL, 0) != ST_OK ||
	    st_ggml_type_block(gt->type, &blk, &bytes) != ST_OK || t->n_elements % blk) {
		it->kind = ST_DIFF_GGUF_UNDECODABLE;
		return ST_OK;
	}
	struct lay l = {src, t->dtype, st_dtype_bits(t->dtype) / 8, rows, cols ? cols : 1,
	                transpose, heads};
	uint64_t n = t->n_elements, step = chunk_elements(&l, blk);
	uint64_t m = n < step ? n : step;
	float *whole = NULL;
	/* A sub-byte dtype (F4, F6) is widened whole: its chunks need not
	 * start on a byte. */
	if (st_dtype_bits(t->dtype) % 8) {
		whole = malloc((size_t)(n ? n : 1) * sizeof *whole);
		if (whole)
			st_convert(ST_DTYPE_F32, whole, t->dtype, src, (size_t)n, NULL);
		l.src = (const unsigned char *)whole;
		l.dt = ST_DTYPE_F32;
		l.es = sizeof *whole;
	}
	float *x = malloc((size_t)(m ? m : 1) * sizeof *x);
	float *y = malloc((size_t)(m ? m : 1) * sizeof *y);
	float *tmp = malloc((size_t)(m ? m : 1) * sizeof *tmp);
	unsigned char *enc = malloc((size_t)(m / blk * bytes + 1));
	struct cmp c = {.scratch = NULL};
	pair_tol(t->dtype, gt->type, o, it);
	if (!x || !y || !tmp || !enc || (st_dtype_bits(t->dtype) % 8 && !whole))
		rc = st__error(err, ST_ENOMEM, "out of memory");
	else
		rc = cmp_start(&c, it->rtol, it->atol, err);
	if (rc != ST_OK)
		goto out;
	const unsigned char *gd = st_gguf_tensor_data(g, gi);
	bool can_encode = st_ggml_from_f32(gt->type, NULL, NULL, 0) == ST_OK;
	bool bounded = type_default(o) && type_has_bound(gt->type);
	uint64_t out_of_bound = 0;
	double bound = 0;
	it->encoded = can_encode;
	for (uint64_t e0 = 0; e0 < n; e0 += m) {
		uint64_t k = n - e0 < m ? n - e0 : m;
		const unsigned char *gk = gd + e0 / blk * bytes;
		gather(&l, e0, k, x, tmp);
		st_ggml_to_f32(gt->type, gk, y, k); /* whole blocks: checked by the parser */
		it->encoded = it->encoded && st_ggml_from_f32(gt->type, x, enc, k) == ST_OK &&
		              !memcmp(enc, gk, (size_t)(k / blk * bytes));
		cmp_add(&c, x, y, k, e0);
		if (bounded)
			type_bound(gt->type, gk, x, y, k, &out_of_bound, &bound);
	}
	cmp_end(&c, it);
	st_dtype gdt;
	it->identical = it->encoded && !st_ggml_type_dtype(gt->type, &gdt) && gdt == t->dtype;
	/*
	 * Q8_0 has no element-wise default: by default it is equal when it is
	 * exactly A quantized, and every element counts as in tolerance then.
	 */
	bool q8_default = gt->type == ST_GGML_Q8_0 && type_default(o);
	if (q8_default && it->encoded)
		it->mismatched = 0;
	if (q8_default && !it->encoded && !it->mismatched)
		it->mismatched = 1;
	if (bounded)
		judged_by_type(it, gt->type, out_of_bound, bound);
	if (it->identical) {
		it->verdict = ST_DIFF_IDENTICAL;
	} else if (o->exact || it->mismatched) {
		it->verdict = ST_DIFF_DIFFERENT;
		if (o->exact && !it->mismatched)
			it->mismatched = n;
	} else {
		it->verdict = ST_DIFF_WITHIN;
	}
out:
	free(c.scratch);
	free(whole);
	free(x);
	free(y);
	free(tmp);
	free(enc);
	return rc;
}

int st_diff_gguf_pair(st_checkpoint *ck, size_t i, const st_gguf *g, size_t gi,
                      bool transpose, const st_diff_opts *o, st_diff_gguf_item *it,
                      st_error *err)
{
	return pair(ck, i, g, gi, transpose, 0, o, it, err);
}

/* Whether a checkpoint name is never in a GGUF: GPT-2's tied head and the
 * buffers (causal masks, rotary inverse frequencies). */
static bool never_in_gguf(const char *arch, const char *hf)
{
	const char *base = strncmp(hf, "transformer.", 12) ? hf : hf + 12;
	size_t bl = strlen(base);
	return (!strcmp(arch, "gpt2") && !strcmp(base, "lm_head.weight")) ||
	       (bl > 10 && !strcmp(base + bl - 10, ".attn.bias")) ||
	       (bl > 17 && !strcmp(base + bl - 17, ".attn.masked_bias")) ||
	       (bl > 20 && !strcmp(base + bl - 20, ".rotary_emb.inv_freq"));
}

/* The head count a permuted tensor needs: 0 when it is not permuted. */
static int permute_heads(const st_gguf *g, const char *arch, int permute,
                         uint64_t *heads, st_error *err)
{
	*heads = 0;
	if (!permute)
		return ST_OK;
	uint64_t h;
	int rc = st__gguf_size(g, arch, "attention.head_count", 0, UINT32_MAX, &h, err);
	if (rc == ST_OK && permute == ST_ARCH_PERMUTE_K)
		rc = st__gguf_size(g, arch, "attention.head_count_kv", h, UINT32_MAX, &h, err);
	if (rc == ST_OK)
		*heads = h;
	return rc;
}

int st_diff_gguf_map(st_checkpoint *ck, const st_gguf *g, const char *arch,
                     const st_diff_opts *o, st_diff_gguf_item **items, size_t *n_out,
                     st_error *err)
{
	ST__REQUIRE(ck && g && arch && o && items && n_out);
	*items = NULL;
	*n_out = 0;
	if (!st_arch_gguf_known(arch))
		return st__error(err, ST_EUNSUPPORTED, "no GGUF name map for architecture '%s'",
		                 arch);
	size_t ng = st_gguf_n_tensors(g), nc = st_checkpoint_n_tensors(ck), m = 0;
	unsigned char *seen = calloc(ng ? ng : 1, 1);
	st_diff_gguf_item *it = malloc((nc + ng ? nc + ng : 1) * sizeof *it);
	int rc = ST_OK;
	if (!seen || !it) {
		free(seen);
		free(it);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nc && rc == ST_OK; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		char hf[256], gname[128];
		snprintf(hf, sizeof hf, "%.*s", (int)t->name_len, t->name);
		if (never_in_gguf(arch, hf))
			continue;
		st_arch_gguf_info info;
		long gi = -1;
		if (!st_arch_to_gguf(arch, hf, gname, sizeof gname, &info))
			gi = st_gguf_find(g, gname);
		if (gi < 0) {
			it[m++] = (st_diff_gguf_item){.kind = ST_DIFF_GGUF_ONLY_CKPT, .ck = i};
			continue;
		}
		seen[gi] = 1;
		uint64_t heads;
		rc = permute_heads(g, arch, info.permute, &heads, err);
		if (rc == ST_OK)
			rc = pair(ck, i, g, (size_t)gi, info.transpose && t->ndim == 2, heads, o,
			          &it[m++], err);
		/* Progress in the bytes of both sides this pair has read. */
		if (rc == ST_OK && o->progress)
			o->progress(o->ctx, t->n_bytes + st_gguf_tensor_at(g, (size_t)gi)->n_bytes);
	}
	for (size_t gi = 0; gi < ng && rc == ST_OK; gi++)
		if (!seen[gi])
			it[m++] = (st_diff_gguf_item){
			        .kind = st_arch_gguf_derived(arch, st_gguf_tensor_at(g, gi)->name)
			                        ? ST_DIFF_GGUF_DERIVED
			                        : ST_DIFF_GGUF_ONLY_GGUF,
			        .gg = gi};
	free(seen);
	if (rc != ST_OK) {
		free(it);
		return rc;
	}
	*items = it;
	*n_out = m;
	return ST_OK;
}

int st_diff_gguf_gpt2(st_checkpoint *ck, const st_gguf *g, const st_diff_opts *o,
                      st_diff_gguf_item **items, size_t *n_out, st_error *err)
{
	return st_diff_gguf_map(ck, g, "gpt2", o, items, n_out, err);
}

/* ---- two GGUF files, by name ---------------------------------------------- */

/* The defaults of a pair of ggml types: the looser of those of the types
 * with a dtype (a quantized type has none). */
static void gguf_pair_tol(unsigned ta, unsigned tb, const st_diff_opts *o,
                          st_diff_gguf_item *it)
{
	double r1 = 0, a1 = 0, r2 = 0, a2 = 0;
	st_dtype d;
	if (st_ggml_type_dtype(ta, &d) == ST_OK)
		st_compare_default_tol(d, &r1, &a1);
	if (st_ggml_type_dtype(tb, &d) == ST_OK)
		st_compare_default_tol(d, &r2, &a2);
	it->rtol = o->rtol ? *o->rtol : o->exact ? 0 : r1 > r2 ? r1 : r2;
	it->atol = o->atol ? *o->atol : o->exact ? 0 : a1 > a2 ? a1 : a2;
}

/* The elements per chunk of a GGUF pair: whole blocks of both types,
 * about CHUNK_ELEMENTS (a multiple of every ggml block, which are powers
 * of two up to 256, and of ST_COMPARE_BLOCK). */
static uint64_t pair_chunk(unsigned ba, unsigned bb)
{
	uint64_t step = ba / gcd(ba, bb) * bb;
	return step >= CHUNK_ELEMENTS ? step : CHUNK_ELEMENTS / step * step;
}

/*
 * A's and B's values decoded a chunk at a time (x and y, whole blocks of
 * both types) into it's figures: compared with the tolerances set, B
 * checked as A encoded in B's type (when libst can encode it) and, with no
 * tolerance given, B's type's bound per block (type_bound).
 */
static int gguf_values(const st_gguf *a, size_t ia, const st_gguf *b, size_t ib,
                       const st_diff_opts *o, st_diff_gguf_item *it, st_error *err)
{
	const st_gguf_tensor *ta = st_gguf_tensor_at(a, ia), *tb = st_gguf_tensor_at(b, ib);
	unsigned ba, sa, bb, sb;
	if (st_ggml_type_block(ta->type, &ba, &sa) != ST_OK ||
	    st_ggml_type_block(tb->type, &bb, &sb) != ST_OK)
		return st__error(err, ST_EUNSUPPORTED, "%s: tensor '%s': ggml type %u",
		                 st_gguf_path(b), tb->name, tb->type);
	uint64_t n = it->n, step = pair_chunk(ba, bb), m = n < step ? n : step;
	bool can_encode = st_ggml_from_f32(tb->type, NULL, NULL, 0) == ST_OK;
	bool bounded = type_default(o) && type_has_bound(tb->type);
	float *x = malloc((size_t)(m ? m : 1) * sizeof *x);
	float *y = malloc((size_t)(m ? m : 1) * sizeof *y);
	unsigned char *enc = can_encode ? malloc((size_t)(m / bb * sb + 1)) : NULL;
	struct cmp c = {.scratch = NULL};
	int rc = ST_OK;
	if (!x || !y || (can_encode && !enc))
		rc = st__error(err, ST_ENOMEM, "out of memory");
	else
		rc = cmp_start(&c, it->rtol, it->atol, err);
	const unsigned char *da = st_gguf_tensor_data(a, ia), *db = st_gguf_tensor_data(b, ib);
	uint64_t out_of_bound = 0;
	double bound = 0;
	it->encoded = can_encode;
	/* Whole blocks of both: the parser checked that a row is. */
	for (uint64_t e0 = 0; rc == ST_OK && e0 < n; e0 += m) {
		uint64_t k = n - e0 < m ? n - e0 : m;
		const unsigned char *bk = db + e0 / bb * sb;
		st_ggml_to_f32(ta->type, da + e0 / ba * sa, x, k);
		st_ggml_to_f32(tb->type, bk, y, k);
		it->encoded = it->encoded && st_ggml_from_f32(tb->type, x, enc, k) == ST_OK &&
		              !memcmp(enc, bk, (size_t)(k / bb * sb));
		cmp_add(&c, x, y, k, e0);
		if (bounded)
			type_bound(tb->type, bk, x, y, k, &out_of_bound, &bound);
	}
	if (rc == ST_OK)
		cmp_end(&c, it);
	/* As with --map: with no tolerance given, B is judged by its type's
	 * rule (and a Q8_0 B, in gguf_pair, is equal exactly when it is A
	 * quantized). */
	if (rc == ST_OK && bounded)
		judged_by_type(it, tb->type, out_of_bound, bound);
	free(c.scratch);
	free(x);
	free(y);
	free(enc);
	return rc;
}

/* Tensor ia of a against tensor ib of b (the same name) into *it. */
static int gguf_pair(const st_gguf *a, size_t ia, const st_gguf *b, size_t ib,
                     const st_diff_opts *o, st_diff_gguf_item *it, st_error *err)
{
	const st_gguf_tensor *ta = st_gguf_tensor_at(a, ia), *tb = st_gguf_tensor_at(b, ib);
	memset(it, 0, sizeof *it);
	it->ck = ia;
	it->gg = ib;
	it->n = ta->n_elements;
	it->verdict = ST_DIFF_NOT_COMPARED;
	bool same = ta->ndim == tb->ndim;
	for (unsigned k = 0; same && k < ta->ndim; k++)
		same = ta->dims[k] == tb->dims[k];
	if (!same) {
		it->kind = ST_DIFF_GGUF_SHAPE;
		return ST_OK;
	}
	it->kind = ST_DIFF_GGUF_COMPARED;
	gguf_pair_tol(ta->type, tb->type, o, it);
	/* A type libst knows has a size: the same type and bytes are identical. */
	if (ta->type == tb->type && st_ggml_type_name(ta->type) &&
	    !memcmp(st_gguf_tensor_data(a, ia), st_gguf_tensor_data(b, ib),
	            (size_t)ta->n_bytes)) {
		it->identical = it->encoded = true;
		it->verdict = ST_DIFF_IDENTICAL;
		return ST_OK;
	}
	bool da = st_ggml_to_f32(ta->type, NULL, NULL, 0) == ST_OK;
	bool db = st_ggml_to_f32(tb->type, NULL, NULL, 0) == ST_OK;
	if (!da || !db) {
		/* An integer type (a name, no decoder) or an unknown one. */
		bool known = st_ggml_type_name(da ? tb->type : ta->type) != NULL;
		it->kind = known ? ST_DIFF_GGUF_NOT_FLOAT : ST_DIFF_GGUF_UNDECODABLE;
		return ST_OK;
	}
	int rc = gguf_values(a, ia, b, ib, o, it, err);
	if (rc != ST_OK)
		return rc;
	uint64_t n = it->n;
	bool q8_default = tb->type == ST_GGML_Q8_0 && type_default(o);
	if (q8_default)
		it->mismatched = it->encoded ? 0 : it->mismatched ? it->mismatched : 1;
	if (o->exact || it->mismatched) {
		it->verdict = ST_DIFF_DIFFERENT;
		if (o->exact && !it->mismatched)
			it->mismatched = n;
	} else {
		it->verdict = ST_DIFF_WITHIN;
	}
	return ST_OK;
}

int st_diff_gguf_files(const st_gguf *a, const st_gguf *b, const st_diff_opts *o,
                       st_diff_gguf_item **items, size_t *n_out, st_error *err)
{
	ST__REQUIRE(a && b && o && items && n_out);
	size_t na = st_gguf_n_tensors(a), nb = st_gguf_n_tensors(b), m = 0;
	*items = NULL;
	*n_out = 0;
	st_diff_gguf_item *it = malloc((na + nb + 1) * sizeof *it);
	unsigned char *seen = calloc(nb + 1, 1);
	if (!it || !seen) {
		free(it);
		free(seen);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	int rc = ST_OK;
	for (size_t i = 0; i < na && rc == ST_OK; i++) {
		const st_gguf_tensor *ta = st_gguf_tensor_at(a, i);
		long j = st_gguf_find(b, ta->name);
		if (j < 0) {
			it[m++] = (st_diff_gguf_item){.kind = ST_DIFF_GGUF_ONLY_CKPT, .ck = i};
			continue;
		}
		seen[j] = 1;
		rc = gguf_pair(a, i, b, (size_t)j, o, &it[m++], err);
		if (rc == ST_OK && o->progress)
			o->progress(o->ctx, ta->n_bytes + st_gguf_tensor_at(b, (size_t)j)->n_bytes);
	}
	for (size_t j = 0; j < nb && rc == ST_OK; j++)
		if (!seen[j])
			it[m++] = (st_diff_gguf_item){.kind = ST_DIFF_GGUF_ONLY_GGUF, .gg = j};
	free(seen);
	if (rc != ST_OK) {
		free(it);
		return rc;
	}
	*items = it;
	*n_out = m;
	return ST_OK;
}
