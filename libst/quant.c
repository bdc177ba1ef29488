/*
 * quant.c - scaled FP8 and MXFP4 weights (st/quant.h): checking a weight
 * against its scales, dequantizing rows to a wide float, quantizing rows
 * to block-scaled F8_E4M3.
 *
 * Values go through F32: a code is decoded exactly (dtype.c's tables), the
 * scale widened exactly (st_convert), their product rounded once in F32,
 * and the row handed to st_convert for the one rounding to the target.
 * The F32 arithmetic runs in the default environment (round to nearest
 * even, no flush to zero), set for the call where the CPU lets us.
 */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define QX86 1
#else
#include <fenv.h>
#define QX86 0
#endif

/* ---- the floating-point environment -------------------------------------- */

/* What the caller had, to put back. */
struct fpenv {
#if QX86
	unsigned mxcsr;
#else
	int round;
#endif
};

static void fpenv_enter(struct fpenv *e)
{
#if QX86
	e->mxcsr = _mm_getcsr();
	/* All exceptions masked, round to nearest, no FTZ/DAZ; flags kept. */
	_mm_setcsr(0x1F80u | (e->mxcsr & 0x3Fu));
#else
	e->round = fegetround();
	fesetround(FE_TONEAREST);
#endif
}

static void fpenv_leave(const struct fpenv *e)
{
#if QX86
	_mm_setcsr(e->mxcsr);
#else
	fesetround(e->round);
#endif
}

/* ---- weight_block_size ---------------------------------------------------- */

static int json_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * One JSON number token at *p, which must be a plain integer in
 * [1, ST_QUANT_MAX_BLOCK]; *why says what else it is.
 */
static int block_side(const char **p, const char *end, uint64_t *v, const char **why)
{
	const char *s = *p;
	uint64_t x = 0;
	int big = 0;

	if (s < end && *s == '-') {
		*why = "is negative";
		return -1;
	}
	if (s == end || *s < '0' || *s > '9') {
		*why = "is not a pair of integers";
		return -1;
	}
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (x > ST_QUANT_MAX_BLOCK)
			big = 1;
		else
			x = x * 10 + (uint64_t)(*s - '0');
	}
	if (s < end && (*s == '.' || *s == 'e' || *s == 'E')) {
		*why = "is not an integer";
		return -1;
	}
	if (big || x > ST_QUANT_MAX_BLOCK) {
		*why = "is too large (at most 1048576)";
		return -1;
	}
	if (x == 0) {
		*why = "is 0";
		return -1;
	}
	*p = s;
	*v = x;
	return 0;
}

int st_quant_parse_block_size(const char *json, size_t len, uint64_t *block_rows,
                              uint64_t *block_cols, st_error *err)
{
	const char *p = json, *end = json + len, *why = "is not a pair of integers";
	uint64_t v[2];
	char q[160];

	if (!json)
		len = 0, p = end = "";
	while (p < end && json_ws(*p))
		p++;
	if (p == end || *p++ != '[')
		goto bad;
	for (int i = 0; i < 2; i++) {
		while (p < end && json_ws(*p))
			p++;
		if (block_side(&p, end, &v[i], &why))
			goto bad;
		while (p < end && json_ws(*p))
			p++;
		if (p == end || *p++ != (i ? ']' : ',')) {
			why = "is not a pair of integers";
			goto bad;
		}
	}
	while (p < end && json_ws(*p))
		p++;
	if (p != end)
		goto bad;
	*block_rows = v[0];
	*block_cols = v[1];
	return ST_OK;
bad:
	return st__error(err, ST_EINVAL, "quantization_config.weight_block_size %s: a block side %s",
	                 st__qname(q, sizeof q, json, len), why);
}

/* ---- layouts --------------------------------------------------------------- */

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

static int is_weight_f8(st_dtype t)
{
	return t == ST_DTYPE_F8_E4M3 || t == ST_DTYPE_F8_E5M2 || t == ST_DTYPE_F8_E4M3FNUZ ||
	       t == ST_DTYPE_F8_E5M2FNUZ;
}

static int is_scale_type(st_dtype t)
{
	return t == ST_DTYPE_F32 || t == ST_DTYPE_BF16 || t == ST_DTYPE_F16 || t == ST_DTYPE_F8_E8M0;
}

/* "'name' DTYPE [shape]" of a tensor, for messages. */
static const char *describe(char *buf, size_t size, const st_tensor *t)
{
	char nb[512], sb[256];

	st__fmt_shape(sb, sizeof sb, t->shape, t->ndim);
	snprintf(buf, size, "'%s' %s %s", st__qname(nb, sizeof nb, t->name, t->name_len),
	         st_dtype_name(t->dtype), sb);
	return buf;
}

int st_quant_fp8_layout(st_quant_fp8 *l, const st_tensor *weight, const st_tensor *scale,
                        uint64_t b0, uint64_t b1, const char *file, st_error *err)
{
	char wd[1024], sd[1024];
	const uint64_t *ss;
	uint64_t sr, sc;
	unsigned snd;

	memset(l, 0, sizeof *l);
	if (!file)
		file = "<checkpoint>";
	/* The messages' descriptions are made only on the way to one: pairing
	 * a checkpoint of 100,000 weights would otherwise spend most of its
	 * time formatting them. */
	if (b0 == 0 || b1 == 0 || b0 > ST_QUANT_MAX_BLOCK || b1 > ST_QUANT_MAX_BLOCK) {
		describe(wd, sizeof wd, weight);
		return st__error(err, ST_EINVAL, "%s: weight %s: block size %llu x %llu is out of range",
		                 file, wd, (unsigned long long)b0, (unsigned long long)b1);
	}
	if (!is_weight_f8(weight->dtype) || (weight->ndim != 2 && weight->ndim != 3) ||
	    !is_scale_type(scale->dtype)) {
		describe(wd, sizeof wd, weight);
		describe(sd, sizeof sd, scale);
		if (!is_scale_type(scale->dtype) && is_weight_f8(weight->dtype) &&
		    (weight->ndim == 2 || weight->ndim == 3))
			return st__error(err, ST_EFORMAT,
			                 "%s: scale %s of weight %s: a scale is F32, BF16, F16 or F8_E8M0",
			                 file, sd, wd);
		return st__error(err, ST_EFORMAT,
		                 "%s: weight %s with scale %s: a scaled weight is a 2-D or 3-D "
		                 "F8_E4M3, F8_E5M2, F8_E4M3FNUZ or F8_E5M2FNUZ tensor",
		                 file, wd, sd);
	}
	l->experts = weight->ndim == 3 ? weight->shape[0] : 1;
	l->rows = weight->shape[weight->ndim - 2];
	l->cols = weight->shape[weight->ndim - 1];
	l->weight_type = weight->dtype;
	l->scale_type = scale->dtype;

	/* The scale's own grid, experts dimension taken off. */
	ss = scale->shape;
	snd = scale->ndim;
	if (weight->ndim == 3) {
		if (snd != 3 || ss[0] != l->experts)
			goto mismatch;
		ss++;
		snd--;
	}
	if (snd == 0) {
		sr = sc = 1;
	} else if (snd == 1) {
		sr = ss[0];
		sc = 1;
		if (sr != 1 && sr != l->rows)
			goto mismatch;
	} else if (snd == 2) {
		sr = ss[0];
		sc = ss[1];
	} else {
		goto mismatch;
	}
	l->scale_rows = sr;
	l->scale_cols = sc;
	if (snd == 2 && sr == ceil_div(l->rows, b0) && sc == ceil_div(l->cols, b1)) {
		l->kind = ST_QUANT_BLOCK;
		l->block_rows = b0;
		l->block_cols = b1;
	} else if (sr == 1 && sc == 1) {
		l->kind = ST_QUANT_TENSOR;
		l->block_rows = l->rows ? l->rows : 1;
		l->block_cols = l->cols ? l->cols : 1;
	} else if (sr == l->rows && sc == 1) {
		l->kind = ST_QUANT_CHANNEL;
		l->block_rows = 1;
		l->block_cols = l->cols ? l->cols : 1;
	} else {
		goto mismatch;
	}
	return ST_OK;
mismatch:
	memset(l, 0, sizeof *l);
	describe(wd, sizeof wd, weight);
	describe(sd, sizeof sd, scale);
	if (weight->ndim == 3)
		return st__error(err, ST_EFORMAT,
		                 "%s: scale %s does not fit weight %s: block %llu x %llu needs "
		                 "[%llu, %llu, %llu] ([%llu, 1, 1] per tensor, [%llu, %llu, 1] per "
		                 "channel)",
		                 file, sd, wd, (unsigned long long)b0, (unsigned long long)b1,
		                 (unsigned long long)weight->shape[0],
		                 (unsigned long long)ceil_div(weight->shape[1], b0),
		                 (unsigned long long)ceil_div(weight->shape[2], b1),
		                 (unsigned long long)weight->shape[0], (unsigned long long)weight->shape[0],
		                 (unsigned long long)weight->shape[1]);
	return st__error(err, ST_EFORMAT,
	                 "%s: scale %s does not fit weight %s: block %llu x %llu needs [%llu, %llu] "
	                 "([] or [1, 1] per tensor, [%llu, 1] per channel)",
	                 file, sd, wd, (unsigned long long)b0, (unsigned long long)b1,
	                 (unsigned long long)ceil_div(weight->shape[0], b0),
	                 (unsigned long long)ceil_div(weight->shape[1], b1),
	                 (unsigned long long)weight->shape[0]);
}

int st_quant_fp8_block(st_quant_fp8 *l, uint64_t experts, uint64_t rows, uint64_t cols,
                       uint64_t b0, uint64_t b1)
{
	uint64_t n;

	memset(l, 0, sizeof *l);
	if (b0 == 0 || b1 == 0 || b0 > ST_QUANT_MAX_BLOCK || b1 > ST_QUANT_MAX_BLOCK || experts == 0)
		return ST_EINVAL;
	if (__builtin_mul_overflow(experts, rows, &n) || __builtin_mul_overflow(n, cols, &n))
		return ST_EINVAL;
	l->experts = experts;
	l->rows = rows;
	l->cols = cols;
	l->block_rows = b0;
	l->block_cols = b1;
	l->scale_rows = ceil_div(rows, b0);
	l->scale_cols = ceil_div(cols, b1);
	l->weight_type = ST_DTYPE_F8_E4M3;
	l->scale_type = ST_DTYPE_F32;
	l->kind = ST_QUANT_BLOCK;
	return ST_OK;
}

/* A layout the functions below can trust (a caller may have built it). */
static int layout_ok(const st_quant_fp8 *l)
{
	uint64_t n;

	/* experts may be 0: a weight [0, out, in] has no row to write. */
	return l && l->block_rows && l->block_cols &&
	       ((l->scale_rows == ceil_div(l->rows, l->block_rows) &&
	         l->scale_cols == ceil_div(l->cols, l->block_cols)) ||
	        l->rows == 0 || l->cols == 0) &&
	       !__builtin_mul_overflow(l->experts, l->rows, &n) &&
	       !__builtin_mul_overflow(n, l->cols, &n) && is_weight_f8(l->weight_type) &&
	       is_scale_type(l->scale_type);
}

/* ---- FP8 dequantization ---------------------------------------------------- */

enum { CHUNK = 2048 };

/* Bytes of n elements of a wide float type. */
static size_t wsize(st_dtype t)
{
	return st_dtype_bits(t) / 8;
}

int st_quant_fp8_dequant(const st_quant_fp8 *l, st_dtype dst_type, void *dst, const void *w,
                         const void *scale, uint64_t row0, uint64_t row1)
{
	float lut[256], tmp[CHUNK], *srow;
	const uint32_t *bits;
	const unsigned char *x = w, *sb = scale;
	unsigned char *d = dst;
	const size_t ds = wsize(dst_type), ss = st_dtype_bits(l ? l->scale_type : ST_DTYPE_F32) / 8;
	uint64_t cached = UINT64_MAX;
	struct fpenv env;

	if (!layout_ok(l) || !st_dtype_is_wide_float(dst_type) || row0 > row1 ||
	    row1 > l->experts * l->rows)
		return ST_EINVAL;
	if (row0 == row1 || l->cols == 0)
		return ST_OK;
	bits = st__f8_table(l->weight_type);
	memcpy(lut, bits, sizeof lut);
	srow = malloc(l->scale_cols * sizeof *srow);
	if (!srow)
		return ST_ENOMEM;
	fpenv_enter(&env);
	for (uint64_t r = row0; r < row1; r++) {
		uint64_t e = r / l->rows, i = r % l->rows;
		uint64_t si = e * l->scale_rows + i / l->block_rows;
		if (si != cached) {
			st_convert(ST_DTYPE_F32, srow, l->scale_type, sb + si * l->scale_cols * ss,
			           l->scale_cols, NULL);
			cached = si;
		}
		for (uint64_t c0 = 0; c0 < l->cols; c0 += CHUNK) {
			size_t k = l->cols - c0 < CHUNK ? (size_t)(l->cols - c0) : CHUNK;
			/* Segments of one scale each. */
			for (size_t j = 0; j < k;) {
				uint64_t c = c0 + j, b = c / l->block_cols;
				size_t end = (size_t)((b + 1) * l->block_cols - c0);
				const float s = srow[b];
				if (end > k)
					end = k;
				for (; j < end; j++)
					tmp[j] = lut[x[j + c0]] * s;
			}
			st_convert(dst_type, d + c0 * ds, ST_DTYPE_F32, tmp, k, NULL);
		}
		x += l->cols;
		d += l->cols * ds;
	}
	fpenv_leave(&env);
	free(srow);
	return ST_OK;
}

/* ---- FP8 quantization --------------------------------------------------------- */

/* The scale row (experts counted) of weight row r. */
static uint64_t scale_row(const st_quant_fp8 *l, uint64_t r)
{
	return r / l->rows * l->scale_rows + r % l->rows / l->block_rows;
}

/*
 * Pass 1 over a block row, n rows of cols elements at s: the F32 scale of
 * each of its blocks into scale. |x| is compared as the bits of a
 * non-negative F32 (the same order as the values), infinities and NaNs as
 * 0, so the loops have no branch and vectorize. row and bits are scratch
 * (cols and scale_cols entries).
 */
static void block_scales(const st_quant_fp8 *l, float *scale, uint32_t *row, uint32_t *bits,
                         st_dtype src_type, const unsigned char *s, size_t ss, uint64_t n,
                         float fmax)
{
	for (uint64_t b = 0; b < l->scale_cols; b++)
		bits[b] = 0;
	for (uint64_t k = 0; k < n; k++) {
		st_convert(ST_DTYPE_F32, row, src_type, s + k * l->cols * ss, l->cols, NULL);
		for (uint64_t b = 0, c0 = 0; b < l->scale_cols; b++, c0 += l->block_cols) {
			uint64_t c1 = c0 + l->block_cols < l->cols ? c0 + l->block_cols : l->cols;
			uint32_t m = bits[b];
			for (uint64_t c = c0; c < c1; c++) {
				uint32_t v = row[c] & 0x7fffffffu;
				v = v < 0x7f800000u ? v : 0;
				m = v > m ? v : m;
			}
			bits[b] = m;
		}
	}
	for (uint64_t b = 0; b < l->scale_cols; b++) {
		float amax;
		memcpy(&amax, &bits[b], sizeof amax);
		float sc = amax > 0 ? amax / fmax : 1.0f;
		/* A scale that rounds to 0 would divide by zero: least subnormal. */
		scale[b] = sc > 0 ? sc : 0x1p-149f;
	}
}

/*
 * st_quant_fp8_quantize (w_out set) and st_quant_fp8_scales (w_out NULL:
 * pass 1 only).
 */
static int quantize(const st_quant_fp8 *l, unsigned char *w_out, float *scale_out,
                    st_dtype src_type, const void *src, uint64_t row0, uint64_t row1)
{
	const unsigned char *s = src;
	const size_t ss = st_dtype_is_wide_float(src_type) ? wsize(src_type) : 0;
	float *row, *scale, fmax;
	uint32_t *bits;
	struct fpenv env;

	if (!layout_ok(l) || l->kind != ST_QUANT_BLOCK || l->scale_type != ST_DTYPE_F32 || !ss ||
	    row0 > row1 || row1 > l->experts * l->rows)
		return ST_EINVAL;
	if (l->rows == 0) /* no row at all: [0, 0) */
		return ST_OK;
	if ((row0 % l->rows) % l->block_rows || (row1 % l->rows && (row1 % l->rows) % l->block_rows))
		return ST_EINVAL;
	if (row0 == row1 || l->cols == 0)
		return ST_OK;
	fmax = st_f8_to_f32(l->weight_type, l->weight_type == ST_DTYPE_F8_E4M3 ? 0x7E
	                                    : l->weight_type == ST_DTYPE_F8_E5M2 ? 0x7B : 0x7F);
	row = malloc(l->cols * sizeof *row);
	bits = malloc(l->scale_cols * sizeof *bits);
	if (!row || !bits) {
		free(row);
		free(bits);
		return ST_ENOMEM;
	}
	fpenv_enter(&env);
	for (uint64_t r = row0; r < row1;) {
		uint64_t i = r % l->rows, n = l->rows - i < l->block_rows ? l->rows - i : l->block_rows;
		const unsigned char *x = s + (r - row0) * l->cols * ss;
		if (r + n > row1)
			n = row1 - r; /* cannot happen for a valid range; kept safe */
		scale = scale_out + (scale_row(l, r) - scale_row(l, row0)) * l->scale_cols;
		block_scales(l, scale, (uint32_t *)row, bits, src_type, x, ss, n, fmax);
		/* Pass 2: each value over its block's scale (IEEE division, so
		 * a vectorized loop gives the scalar bits), encoded. */
		for (uint64_t k = 0; w_out && k < n; k++) {
			st_convert(ST_DTYPE_F32, row, src_type, x + k * l->cols * ss, l->cols, NULL);
			for (uint64_t b = 0, c0 = 0; b < l->scale_cols; b++, c0 += l->block_cols) {
				uint64_t c1 = c0 + l->block_cols < l->cols ? c0 + l->block_cols : l->cols;
				const float sc = scale[b];
				for (uint64_t c = c0; c < c1; c++)
					row[c] = row[c] / sc;
			}
			st_convert(l->weight_type, w_out + (r - row0 + k) * l->cols, ST_DTYPE_F32, row,
			           l->cols, NULL);
		}
		r += n;
	}
	fpenv_leave(&env);
	free(row);
	free(bits);
	return ST_OK;
}

int st_quant_fp8_quantize(const st_quant_fp8 *l, unsigned char *w_out, float *scale_out,
                          st_dtype src_type, const void *src, uint64_t row0, uint64_t row1)
{
	if (!w_out)
		return ST_EINVAL;
	return quantize(l, w_out, scale_out, src_type, src, row0, row1);
}

int st_quant_fp8_scales(const st_quant_fp8 *l, float *scale_out, st_dtype src_type,
                        const void *src, uint64_t row0, uint64_t row1)
{
	return quantize(l, NULL, scale_out, src_type, src, row0, row1);
}

/* ---- MXFP4 ------------------------------------------------------------------- */

int st_quant_mxfp4_layout(st_quant_mxfp4 *l, const st_tensor *blocks, const st_tensor *scales,
                          const char *file, st_error *err)
{
	char bd[1024], sd[1024];
	uint64_t n;

	memset(l, 0, sizeof *l);
	describe(bd, sizeof bd, blocks);
	describe(sd, sizeof sd, scales);
	if (!file)
		file = "<checkpoint>";
	if (blocks->dtype != ST_DTYPE_U8 || scales->dtype != ST_DTYPE_U8 || blocks->ndim != 4 ||
	    blocks->shape[3] != 16 || scales->ndim != 3)
		return st__error(err, ST_EFORMAT,
		                 "%s: MXFP4 blocks %s with scales %s: blocks are U8 [experts, rows, "
		                 "groups, 16], scales U8 [experts, rows, groups]",
		                 file, bd, sd);
	for (int i = 0; i < 3; i++)
		if (blocks->shape[i] != scales->shape[i])
			return st__error(err, ST_EFORMAT,
			                 "%s: MXFP4 scales %s do not fit blocks %s: expected [%llu, %llu, %llu]",
			                 file, sd, bd, (unsigned long long)blocks->shape[0],
			                 (unsigned long long)blocks->shape[1],
			                 (unsigned long long)blocks->shape[2]);
	if (__builtin_mul_overflow(blocks->n_elements, 2, &n))
		return st__error(err, ST_EFORMAT, "%s: MXFP4 blocks %s: too many elements", file, bd);
	l->experts = blocks->shape[0];
	l->rows = blocks->shape[1];
	l->groups = blocks->shape[2];
	return ST_OK;
}

enum { TILE = 256 };

int st_quant_mxfp4_dequant(const st_quant_mxfp4 *l, st_dtype dst_type, void *dst,
                           const void *blocks, const void *scales, uint64_t row0, uint64_t row1)
{
	const unsigned char *bk = blocks, *sc = scales;
	unsigned char *d = dst;
	const size_t ds = wsize(dst_type);
	float fp4[16], e8m0[256];
	float (*tile)[TILE];
	uint64_t total, n;
	struct fpenv env;

	if (!l || !st_dtype_is_wide_float(dst_type) || __builtin_mul_overflow(l->experts, l->groups, &total) ||
	    __builtin_mul_overflow(total, 32, &total) || __builtin_mul_overflow(total, l->rows, &n) ||
	    row0 > row1 || row1 > total)
		return ST_EINVAL;
	if (row0 == row1 || l->rows == 0)
		return ST_OK;
	memcpy(fp4, st__f8_table(ST_DTYPE_F4), sizeof fp4);
	memcpy(e8m0, st__f8_table(ST_DTYPE_F8_E8M0), sizeof e8m0);
	tile = malloc(32 * sizeof *tile);
	if (!tile)
		return ST_ENOMEM;
	fpenv_enter(&env);
	/*
	 * Output rows (e, c) with c = 32 g + k read byte k / 2 of blocks
	 * [e, r, g] for every r: a tile of one group's 32 rows by TILE
	 * columns reads each 16-byte block once.
	 */
	for (uint64_t r0 = row0; r0 < row1;) {
		uint64_t eg = r0 / 32, e = eg / l->groups, g = eg % l->groups;
		unsigned k0 = (unsigned)(r0 % 32), k1 = row1 - eg * 32 < 32 ? (unsigned)(row1 - eg * 32) : 32;
		for (uint64_t c0 = 0; c0 < l->rows; c0 += TILE) {
			size_t m = l->rows - c0 < TILE ? (size_t)(l->rows - c0) : TILE;
			for (size_t j = 0; j < m; j++) {
				uint64_t at = (e * l->rows + c0 + j) * l->groups + g;
				const unsigned char *b = bk + at * 16;
				float s = e8m0[sc[at]];
				for (unsigned k = 0; k < 16; k++) {
					tile[2 * k][j] = fp4[b[k] & 15] * s;
					tile[2 * k + 1][j] = fp4[b[k] >> 4] * s;
				}
			}
			for (unsigned k = k0; k < k1; k++)
				st_convert(dst_type, d + ((eg * 32 + k - row0) * l->rows + c0) * ds, ST_DTYPE_F32,
				           tile[k], m, NULL);
		}
		r0 = eg * 32 + k1;
	}
	fpenv_leave(&env);
	free(tile);
	return ST_OK;
}

/* ---- config.json's quantization_config ---------------------------------- */

/*
 * A small JSON scanner: enough to find the top-level members of an object
 * and the span of a value, for a config that may be anything. It checks
 * structure, not every detail of strings and numbers (config.c's editor
 * and the loaders do that); depth is bounded so hostile nesting cannot
 * exhaust the stack.
 */
struct jcur {
	const char *s;
	size_t n, i;
};

enum { JSON_MAX_DEPTH = 256 };

static void jc_ws(struct jcur *c)
{
	while (c->i < c->n && json_ws(c->s[c->i]))
		c->i++;
}

static int jc_string(struct jcur *c)
{
	if (c->i >= c->n || c->s[c->i] != '"')
		return -1;
	for (c->i++; c->i < c->n; c->i++) {
		if (c->s[c->i] == '\\')
			c->i++;
		else if (c->s[c->i] == '"') {
			c->i++;
			return 0;
		}
	}
	return -1;
}

static int jc_value(struct jcur *c, int depth)
{
	if (depth > JSON_MAX_DEPTH || c->i >= c->n)
		return -1;
	char open = c->s[c->i];
	if (open == '"')
		return jc_string(c);
	if (open == '{' || open == '[') {
		char close = open == '{' ? '}' : ']';
		c->i++;
		jc_ws(c);
		if (c->i < c->n && c->s[c->i] == close) {
			c->i++;
			return 0;
		}
		for (;;) {
			if (open == '{') {
				if (jc_string(c))
					return -1;
				jc_ws(c);
				if (c->i >= c->n || c->s[c->i++] != ':')
					return -1;
				jc_ws(c);
			}
			if (jc_value(c, depth + 1))
				return -1;
			jc_ws(c);
			if (c->i >= c->n)
				return -1;
			if (c->s[c->i] == close) {
				c->i++;
				return 0;
			}
			if (c->s[c->i++] != ',')
				return -1;
			jc_ws(c);
		}
	}
	size_t b = c->i;
	while (c->i < c->n && (strchr("+-.eE", c->s[c->i]) || (c->s[c->i] >= '0' && c->s[c->i] <= '9') ||
	                       (c->s[c->i] >= 'a' && c->s[c->i] <= 'z')))
		c->i++;
	return c->i > b ? 0 : -1;
}

/* A member of an object: where its key starts and its value ends. */
struct jmember {
	size_t key, val, end; /* key's '"', value's first byte, past the value */
	int found;
};

/*
 * Scan the object at c->i (which must be '{') to its end, noting the
 * member named key (raw bytes between the quotes). Returns 0, -1 when
 * it is not a well-formed object.
 */
static int jc_object_find(struct jcur *c, const char *key, struct jmember *m)
{
	size_t klen = strlen(key);

	memset(m, 0, sizeof *m);
	if (c->i >= c->n || c->s[c->i] != '{')
		return -1;
	c->i++;
	jc_ws(c);
	if (c->i < c->n && c->s[c->i] == '}') {
		c->i++;
		return 0;
	}
	for (;;) {
		size_t k = c->i;
		if (jc_string(c))
			return -1;
		int match = c->i - k == klen + 2 && !memcmp(c->s + k + 1, key, klen);
		jc_ws(c);
		if (c->i >= c->n || c->s[c->i++] != ':')
			return -1;
		jc_ws(c);
		size_t v = c->i;
		if (jc_value(c, 1))
			return -1;
		if (match && !m->found) {
			m->found = 1;
			m->key = k;
			m->val = v;
			m->end = c->i;
		}
		jc_ws(c);
		if (c->i >= c->n)
			return -1;
		if (c->s[c->i] == '}') {
			c->i++;
			return 0;
		}
		if (c->s[c->i++] != ',')
			return -1;
		jc_ws(c);
	}
}

/* The top-level object of a whole text: member key of it, if any. */
static int json_top_member(const char *s, size_t n, const char *key, struct jmember *m)
{
	struct jcur c = {s, n, 0};

	jc_ws(&c);
	if (jc_object_find(&c, key, m))
		return -1;
	jc_ws(&c);
	return c.i == c.n ? 0 : -1;
}

int st_quant_config_block_size(const char *config, size_t len, uint64_t *block_rows,
                               uint64_t *block_cols, int *found, st_error *err)
{
	struct jmember qc, ws;

	*found = 0;
	if (json_top_member(config, len, "quantization_config", &qc))
		return st__error(err, ST_EFORMAT, "config.json: not a JSON object");
	if (qc.found && config[qc.val] == '{') {
		struct jcur c = {config, qc.end, qc.val};
		if (jc_object_find(&c, "weight_block_size", &ws))
			return st__error(err, ST_EFORMAT, "config.json: quantization_config is not an object");
		if (ws.found) {
			*found = 1;
			return st_quant_parse_block_size(config + ws.val, ws.end - ws.val, block_rows,
			                                 block_cols, err);
		}
	}
	*block_rows = *block_cols = ST_QUANT_DEFAULT_BLOCK;
	return ST_OK;
}

int st__config_block_size(const char *text, size_t len, const char *file, uint64_t *block_rows,
                          uint64_t *block_cols, int *found, st_error *err)
{
	st_error e;
	int rc = text ? st_quant_config_block_size(text, len, block_rows, block_cols, found, &e)
	              : ST_EFORMAT;

	if (rc != ST_OK) { /* a hostile block size, or no JSON object to give one */
		*block_rows = *block_cols = ST_QUANT_DEFAULT_BLOCK;
		*found = 0;
	}
	if (rc == ST_EINVAL)
		return st__error(err, ST_EINVAL, "%.300s: %.200s", file ? file : "config.json",
		                 e.message);
	return ST_OK;
}

int st_config_read_block_size(const char *path, uint64_t *block_rows, uint64_t *block_cols,
                              int *found, st_error *err)
{
	char *text = NULL, *file = NULL;
	size_t len = 0;
	int found_here, rc = st_config_read(path, &text, &len, &file, err);

	if (!found)
		found = &found_here;
	*block_rows = *block_cols = ST_QUANT_DEFAULT_BLOCK;
	*found = 0;
	if (rc == ST_OK || rc == ST_ENOTFOUND) /* no config.json: the default */
		rc = st__config_block_size(text, len, file, block_rows, block_cols, found, err);
	free(text);
	free(file);
	return rc;
}

int st_quant_config_dequantized(const char *config, size_t len, const char *torch_dtype,
                                char **out, size_t *out_len, st_error *err)
{
	char *text = NULL;
	size_t n = 0;
	struct jmember qc;
	int rc;

	*out = NULL;
	*out_len = 0;
	if (torch_dtype) {
		rc = st_config_set_dtype(config, len, torch_dtype, &text, &n, err);
		if (rc != ST_OK)
			return rc;
	} else {
		text = malloc(len ? len : 1);
		if (!text)
			return st__error(err, ST_ENOMEM, "config.json: out of memory");
		memcpy(text, config, len);
		n = len;
	}
	for (;;) { /* again: a duplicate key is the next one found */
		if (json_top_member(text, n, "quantization_config", &qc)) {
			free(text);
			return st__error(err, ST_EFORMAT, "config.json: not a JSON object");
		}
		if (!qc.found)
			break;
		/* Cut the member with the comma before it, or after it if first. */
		size_t b = qc.key, e = qc.end, p = b;
		while (p > 0 && json_ws(text[p - 1]))
			p--;
		if (p > 0 && text[p - 1] == ',') {
			b = p - 1;
		} else {
			size_t q = e;
			while (q < n && json_ws(text[q]))
				q++;
			if (q < n && text[q] == ',') {
				q++;
				while (q < n && json_ws(text[q]))
					q++;
				e = q;
			}
		}
		memmove(text + b, text + e, n - e);
		n -= e - b;
	}
	*out = text;
	*out_len = n;
	return ST_OK;
}

int st_quant_config_fp8(const char *config, size_t len, uint64_t b0, uint64_t b1, char **out,
                        size_t *out_len, st_error *err)
{
	char *text = NULL, member[256], *res;
	size_t n = 0, end, p, m;
	int rc;

	*out = NULL;
	*out_len = 0;
	if (b0 == 0 || b1 == 0 || b0 > ST_QUANT_MAX_BLOCK || b1 > ST_QUANT_MAX_BLOCK)
		return st__error(err, ST_EINVAL, "config.json: block %llu x %llu out of range",
		                 (unsigned long long)b0, (unsigned long long)b1);
	rc = st_quant_config_dequantized(config, len, NULL, &text, &n, err);
	if (rc != ST_OK)
		return rc;
	/* The top-level object's closing brace (the text was checked to be
	 * one object), and whether it has members before it. */
	end = n;
	while (end > 0 && json_ws(text[end - 1]))
		end--;
	if (end == 0 || text[end - 1] != '}') {
		free(text);
		return st__error(err, ST_EFORMAT, "config.json: not a JSON object");
	}
	end--;
	p = end;
	while (p > 0 && json_ws(text[p - 1]))
		p--;
	m = (size_t)snprintf(member, sizeof member,
	                     "%s\n  \"quantization_config\": {\"activation_scheme\": \"dynamic\", "
	                     "\"fmt\": \"e4m3\", \"quant_method\": \"fp8\", "
	                     "\"weight_block_size\": [%llu, %llu]}\n",
	                     p > 0 && text[p - 1] == '{' ? "" : ",", (unsigned long long)b0,
	                     (unsigned long long)b1);
	res = malloc(n + m + 1);
	if (!res) {
		free(text);
		return st__error(err, ST_ENOMEM, "config.json: out of memory");
	}
	/* The member goes after the last one, before the brace's whitespace. */
	memcpy(res, text, p);
	memcpy(res + p, member, m);
	memcpy(res + p + m, text + end, n - end);
	*out = res;
	*out_len = p + m + n - end;
	free(text);
	return ST_OK;
}
