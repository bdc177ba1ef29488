/*
 * quant_plan.c - the scaled weights of a checkpoint paired with their
 * scale tensors (st_quant_plan_*), their dequantization in element ranges
 * (st_quant_range), and what quantizing to block-scaled FP8 selects and
 * computes in ranges (st_quant_target_*): the conventions st/quant.h
 * documents, over quant.c's arithmetic.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ends_with(const st_tensor *t, const char *suffix)
{
	size_t n = strlen(suffix);
	return t->name_len >= n && !memcmp(t->name + t->name_len - n, suffix, n);
}

/* The index of tensor (prefix of t's name, cut chars) + suffix, or -1. */
static long sibling(const st_checkpoint *c, const st_tensor *t, size_t cut, const char *suffix)
{
	size_t n = t->name_len - cut, m = strlen(suffix);
	char *name = malloc(n + m + 1);
	long i;

	if (!name)
		return -1;
	memcpy(name, t->name, n);
	memcpy(name + n, suffix, m + 1);
	i = st_checkpoint_find(c, name, n + m);
	free(name);
	return i;
}

/* The scale tensors' names: FP8's X.weight_scale_inv and X.weight_scale,
 * MXFP4's NAME_scales (U8 only). */
static const struct {
	const char *suffix;
	int u8_only;
} scale_names[] = {{".weight_scale_inv", 0}, {".weight_scale", 0}, {"_scales", 1}};

int st_quant_is_scale(const st_tensor *t)
{
	for (size_t k = 0; k < sizeof scale_names / sizeof scale_names[0]; k++)
		if (ends_with(t, scale_names[k].suffix) &&
		    (!scale_names[k].u8_only || t->dtype == ST_DTYPE_U8))
			return 1;
	return 0;
}

int st_quant_is_f8_weight(st_dtype d)
{
	return d == ST_DTYPE_F8_E4M3 || d == ST_DTYPE_F8_E5M2 || d == ST_DTYPE_F8_E4M3FNUZ ||
	       d == ST_DTYPE_F8_E5M2FNUZ;
}

static const char *file_of(const st_checkpoint *c, size_t i)
{
	size_t f = 0;
	st_checkpoint_tensor(c, i, &f);
	return st_file_path(st_checkpoint_file(c, f));
}

/* Map tensor i's bytes. */
static int map(const st_checkpoint *c, size_t i, const unsigned char **data, st_error *err)
{
	size_t f = 0;
	const st_tensor *t = st_checkpoint_tensor(c, i, &f);
	st_file *file = st_checkpoint_file(c, f);
	long k = st_file_find(file, t->name, t->name_len);
	const void *p = NULL;

	if (k < 0)
		return st__error(err, ST_ENOTFOUND, "%s: tensor '%.*s' not found", st_file_path(file),
		                 (int)(t->name_len > 200 ? 200 : t->name_len), t->name);
	if (st_file_data(file, (size_t)k, &p, err) != ST_OK)
		return -1;
	*data = p;
	return 0;
}

static int mismatch(st_error *err, const st_checkpoint *c, size_t i, const char *what,
                    const char *name2)
{
	const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
	return st__error(err, ST_EFORMAT, "%s: %s '%.*s' has no %s '%s'", file_of(c, i), what,
	                 (int)(t->name_len > 200 ? 200 : t->name_len), t->name,
	                 strstr(what, "scale") ? "weight" : "scale", name2);
}

/*
 * A scale whose weight w is there but takes no scale of this name: w is
 * no F8 tensor, or an F8 weight with a _scale_inv beside this _scale.
 */
static void not_f8(st_error *err, const st_checkpoint *c, size_t i, size_t w)
{
	const st_tensor *t = st_checkpoint_tensor(c, i, NULL), *x = st_checkpoint_tensor(c, w, NULL);
	char shape[256];
	int tn = (int)(t->name_len > 200 ? 200 : t->name_len);
	int xn = (int)(x->name_len > 200 ? 200 : x->name_len);

	st__fmt_shape(shape, sizeof shape, x->shape, x->ndim);
	if (st_quant_is_f8_weight(x->dtype))
		st__error(err, ST_EFORMAT,
		          "%s: scale '%.*s' is a second scale of weight '%.*s', which has "
		          "'%.*s_scale_inv'", file_of(c, i), tn, t->name, xn, x->name, xn, x->name);
	else
		st__error(err, ST_EFORMAT, "%s: scale '%.*s' has no F8 weight: '%.*s' is %s %s",
		          file_of(c, i), tn, t->name, xn, x->name, st_dtype_name(x->dtype), shape);
}

/* One pairing: st_quant_plan_build's (map, stop at the first problem) or
 * st_quant_plan_inspect's (map nothing, report every problem and go on). */
struct pairing {
	st_quant_plan *p;
	const st_checkpoint *c;
	uint64_t b0, b1;
	int inspect;
	st_quant_problem_fn fn; /* may be NULL: counted only */
	void *ctx;
	st_error *err;
};

/* A problem found (its message in e). Returns -1 to stop, 0 to go on. */
static int problem(struct pairing *g, const st_error *e)
{
	if (!g->inspect) {
		*g->err = *e;
		return -1;
	}
	g->p->n_problems++;
	if (g->fn)
		g->fn(g->ctx, e->message);
	return 0;
}

static int oom(st_error *err)
{
	return st__error(err, ST_ENOMEM, "out of memory");
}

/* Scale s is weight i's, whether the pair fits or not: not reported again. */
static void claim(st_quant_plan *p, size_t s, size_t i)
{
	p->t[s].role = ST_QUANT_ROLE_SCALE;
	p->t[s].scale = i; /* a scale points back at its weight */
	p->t[s].n_out = 1;
}

/* Pair weight i, an FP8 X.weight (fp8) or an MXFP4 NAME_blocks. */
static int pair_one(struct pairing *g, size_t i, int fp8)
{
	const st_checkpoint *c = g->c;
	const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
	st_quant_tensor *d = &g->p->t[i];
	st_error e;
	char want[512];
	long s;

	memset(&e, 0, sizeof e);
	if (fp8) {
		s = sibling(c, t, 0, "_scale_inv");
		if (s < 0)
			s = sibling(c, t, 0, "_scale");
		if (s < 0) {
			snprintf(want, sizeof want, "%.*s_scale_inv", (int)(t->name_len > 200 ? 200 : t->name_len),
			         t->name);
			mismatch(&e, c, i, "weight", want);
			return problem(g, &e);
		}
	} else {
		s = sibling(c, t, 7, "_scales");
		if (s < 0) {
			snprintf(want, sizeof want, "%.*s_scales", (int)(t->name_len - 7 > 200 ? 200 : t->name_len - 7),
			         t->name);
			mismatch(&e, c, i, "MXFP4 blocks", want);
			return problem(g, &e);
		}
	}
	const st_tensor *st = st_checkpoint_tensor(c, (size_t)s, NULL);
	int rc = fp8 ? st_quant_fp8_layout(&d->fp8, t, st, g->b0, g->b1, file_of(c, i), &e)
	             : st_quant_mxfp4_layout(&d->mx, t, st, file_of(c, i), &e);
	if (rc != ST_OK) {
		claim(g->p, (size_t)s, i);
		return problem(g, &e);
	}
	d->scale = (size_t)s;
	if (fp8) {
		d->role = ST_QUANT_ROLE_FP8;
		d->n_out = t->n_elements;
		d->row_len = d->fp8.cols;
		g->p->n_fp8++;
	} else {
		d->role = ST_QUANT_ROLE_MXFP4;
		d->out_name_len = t->name_len - 7;
		d->out_name = malloc(d->out_name_len + 1);
		if (!d->out_name)
			return oom(g->err);
		memcpy(d->out_name, t->name, d->out_name_len);
		d->out_name[d->out_name_len] = 0;
		d->out_shape[0] = d->mx.experts;
		d->out_shape[1] = d->mx.groups * 32;
		d->out_shape[2] = d->mx.rows;
		d->n_out = d->mx.experts * d->mx.groups * 32 * d->mx.rows;
		d->row_len = d->mx.rows;
		g->p->n_mxfp4++;
	}
	/* FP8 weights stream through st_stream's reads (st_quant_range's in);
	 * MXFP4's transposed layout reads whole columns: mapped. Inspection
	 * reads headers only. */
	if (!g->inspect && ((d->role == ST_QUANT_ROLE_MXFP4 && map(c, i, &d->data, g->err)) ||
	                    map(c, d->scale, &d->scale_data, g->err)))
		return -1;
	claim(g->p, d->scale, i);
	if (d->row_len > g->p->max_row)
		g->p->max_row = (size_t)d->row_len;
	return 0;
}

/* X.input_scale, X.k_scale, X.v_scale: a float scalar or [1]. */
static int is_act_scale(const st_tensor *t)
{
	return (ends_with(t, ".input_scale") || ends_with(t, ".k_scale") ||
	        ends_with(t, ".v_scale")) &&
	       st_dtype_is_wide_float(t->dtype) && t->n_elements == 1 && t->ndim <= 1;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;
	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

static int pair_all(struct pairing *g)
{
	st_quant_plan *p = g->p;
	const st_checkpoint *c = g->c;
	size_t n = st_checkpoint_n_tensors(c);
	int any_scale = 0;

	memset(p, 0, sizeof *p);
	p->block_rows = g->b0;
	p->block_cols = g->b1;
	p->t = calloc(n ? n : 1, sizeof *p->t);
	if (!p->t)
		return oom(g->err);
	p->n = n;
	/* Scales first: which names are scales, and whether there are any. */
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		if (st_quant_is_scale(t)) {
			p->t[i].role = ST_QUANT_ROLE_SCALE;
			any_scale = 1;
		}
	}
	/* Activation scales, where there are weight scales (see st/quant.h). */
	for (size_t i = 0; any_scale && i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		if (is_act_scale(t)) {
			claim(p, i, i);
			p->n_act_scales++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		int rc = 0;
		if (ends_with(t, ".weight") && st_quant_is_f8_weight(t->dtype) && any_scale)
			rc = pair_one(g, i, 1);
		else if (ends_with(t, "_blocks") && t->dtype == ST_DTYPE_U8 && any_scale)
			rc = pair_one(g, i, 0);
		if (rc)
			return -1;
	}
	/* Every scale must belong to a weight. */
	for (size_t i = 0; i < n; i++) {
		if (p->t[i].role != ST_QUANT_ROLE_SCALE || p->t[i].n_out)
			continue;
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		char want[512];
		size_t cut = ends_with(t, "_scale_inv") ? 10 : ends_with(t, "_scales") ? 7 : 6;
		int mx = ends_with(t, "_scales");
		st_error e;
		memset(&e, 0, sizeof e);
		snprintf(want, sizeof want, "%.*s%s", (int)(t->name_len - cut > 200 ? 200 : t->name_len - cut),
		         t->name, mx ? "_blocks" : "");
		long w = mx ? -1 : st_checkpoint_find(c, t->name, t->name_len - cut);
		if (w >= 0)
			not_f8(&e, c, i, (size_t)w);
		else
			mismatch(&e, c, i, mx ? "MXFP4 scale" : "scale", want);
		if (problem(g, &e))
			return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		if (p->t[i].role == ST_QUANT_ROLE_SCALE) {
			p->n_scales++;
			p->scale_bytes = sat_add(p->scale_bytes, t->n_bytes);
			if (p->t[i].scale == i) /* an activation scale */
				p->act_scale_bytes = sat_add(p->act_scale_bytes, t->n_bytes);
		} else {
			p->parameters = sat_add(p->parameters,
			                        p->t[i].role == ST_QUANT_ROLE_MXFP4 ? p->t[i].n_out : t->n_elements);
		}
	}
	return 0;
}

/* pair_all into the caller's err, which may be NULL: its -1 as the code. */
static int pair_into(struct pairing *g, st_error *err)
{
	st_error local;
	g->err = err ? err : &local;
	memset(g->err, 0, sizeof *g->err);
	if (pair_all(g) == 0)
		return ST_OK;
	return g->err->code ? g->err->code : ST_EFORMAT;
}

int st_quant_plan_build(st_quant_plan *p, st_checkpoint *c, uint64_t b0, uint64_t b1,
                        st_error *err)
{
	struct pairing g = {p, c, b0, b1, 0, NULL, NULL, NULL};
	return pair_into(&g, err);
}

int st_quant_plan_inspect(st_quant_plan *p, const st_checkpoint *c, uint64_t b0, uint64_t b1,
                          st_quant_problem_fn fn, void *ctx, st_error *err)
{
	struct pairing g = {p, c, b0, b1, 1, fn, ctx, NULL};
	return pair_into(&g, err);
}

void st_quant_plan_free(st_quant_plan *p)
{
	for (size_t i = 0; p->t && i < p->n; i++)
		free(p->t[i].out_name);
	free(p->t);
	memset(p, 0, sizeof *p);
}

void st_quant_plan_describe(const st_quant_plan *p, char *buf, size_t size)
{
	int k = snprintf(buf, size, "dequantized");
	size_t blocked = 0;
	for (size_t i = 0; i < p->n; i++)
		blocked += p->t[i].role == ST_QUANT_ROLE_FP8 && p->t[i].fp8.kind == ST_QUANT_BLOCK;
	if (p->n_fp8 && blocked && k >= 0 && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, " %zu FP8 weight%s (blocks %llux%llu)",
		              p->n_fp8, p->n_fp8 == 1 ? "" : "s", (unsigned long long)p->block_rows,
		              (unsigned long long)p->block_cols);
	else if (p->n_fp8 && k >= 0 && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, " %zu FP8 weight%s (per-channel or per-tensor "
		              "scales)", p->n_fp8, p->n_fp8 == 1 ? "" : "s");
	if (p->n_mxfp4 && k >= 0 && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, "%s %zu MXFP4 weight%s", p->n_fp8 ? "," : "",
		              p->n_mxfp4, p->n_mxfp4 == 1 ? "" : "s");
	if (k >= 0 && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, "; %zu scale tensor%s (%llu bytes) folded in",
		              p->n_scales - p->n_act_scales,
		              p->n_scales - p->n_act_scales == 1 ? "" : "s",
		              (unsigned long long)(p->scale_bytes - p->act_scale_bytes));
	if (p->n_act_scales && k >= 0 && (size_t)k < size)
		snprintf(buf + k, size - (size_t)k, ", %zu activation scale%s (%llu bytes) dropped",
		         p->n_act_scales, p->n_act_scales == 1 ? "" : "s",
		         (unsigned long long)p->act_scale_bytes);
}

/* A paired weight's layout, for grouping (counts and sizes left 0). */
static st_quant_layout layout_of(const st_quant_tensor *d, const st_tensor *t)
{
	st_quant_layout l;
	memset(&l, 0, sizeof l);
	l.role = d->role;
	if (d->role == ST_QUANT_ROLE_FP8) {
		l.weight_type = d->fp8.weight_type;
		l.scale_type = d->fp8.scale_type;
		l.kind = (int)d->fp8.kind;
		if (d->fp8.kind == ST_QUANT_BLOCK) {
			l.block_rows = d->fp8.block_rows;
			l.block_cols = d->fp8.block_cols;
		}
		l.experts = t->ndim == 3;
	} else {
		l.weight_type = ST_DTYPE_F4;
		l.scale_type = ST_DTYPE_F8_E8M0;
		l.kind = ST_QUANT_BLOCK;
		l.block_rows = 1;
		l.block_cols = 32;
		l.experts = 1;
	}
	return l;
}

static int same_layout(const st_quant_layout *a, const st_quant_layout *b)
{
	return a->role == b->role && a->weight_type == b->weight_type &&
	       a->scale_type == b->scale_type && a->kind == b->kind &&
	       a->block_rows == b->block_rows && a->block_cols == b->block_cols &&
	       a->experts == b->experts;
}

int st_quant_plan_layouts(const st_quant_plan *p, const st_checkpoint *c, st_quant_layout **out,
                          size_t *n)
{
	size_t cap = p->n_fp8 + p->n_mxfp4, k = 0;
	st_quant_layout *g = NULL;

	*out = NULL;
	*n = 0;
	if (!cap)
		return ST_OK;
	g = calloc(cap, sizeof *g);
	if (!g)
		return ST_ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		const st_quant_tensor *d = &p->t[i];
		if (d->role != ST_QUANT_ROLE_FP8 && d->role != ST_QUANT_ROLE_MXFP4)
			continue;
		st_quant_layout l = layout_of(d, st_checkpoint_tensor(c, i, NULL));
		size_t j = 0;
		while (j < k && !same_layout(&g[j], &l))
			j++;
		if (j == k && k < cap)
			g[k++] = l;
		if (j < k) {
			g[j].weights++;
			g[j].parameters = sat_add(g[j].parameters, d->n_out);
			g[j].scale_bytes =
			    sat_add(g[j].scale_bytes, st_checkpoint_tensor(c, d->scale, NULL)->n_bytes);
		}
	}
	*out = g;
	*n = k;
	return ST_OK;
}

/* "F32", "BF16", "F16", "E8M0": a scale dtype in words. */
static const char *scale_word(st_dtype t)
{
	return t == ST_DTYPE_F8_E8M0 ? "E8M0" : st_dtype_name(t);
}

void st_quant_layout_describe(const st_quant_layout *l, char *buf, size_t size)
{
	const char *w = l->weights == 1 ? "weight" : "weights";
	const char *ex = l->experts ? "expert " : "";

	if (l->role == ST_QUANT_ROLE_MXFP4) {
		snprintf(buf, size, "MXFP4 (E2M1 blocks of 32 with E8M0 scales), %zu %s%s", l->weights,
		         ex, w);
		return;
	}
	/* "F8_E4M3" -> "FP8 E4M3" */
	const char *name = st_dtype_name(l->weight_type);
	const char *fmt = !strncmp(name, "F8_", 3) ? name + 3 : name;
	char how[96];
	if (l->kind == ST_QUANT_BLOCK)
		snprintf(how, sizeof how, "block-scaled %llux%llu", (unsigned long long)l->block_rows,
		         (unsigned long long)l->block_cols);
	else
		snprintf(how, sizeof how, "scaled per %s", l->kind == ST_QUANT_CHANNEL ? "channel" : "tensor");
	snprintf(buf, size, "FP8 %s, %s, %zu %s%s%s with %s scales", fmt, how, l->weights, ex, w,
	         l->experts ? " (3-D)" : "", scale_word(l->scale_type));
}

/* Whole output rows [r0, r1) into out; w: an FP8 weight's rows. */
static void rows_of(const st_quant_tensor *t, st_dtype to, void *out, const unsigned char *w,
                    uint64_t r0, uint64_t r1)
{
	if (t->role == ST_QUANT_ROLE_FP8)
		st_quant_fp8_dequant(&t->fp8, to, out, w, t->scale_data, r0, r1);
	else
		st_quant_mxfp4_dequant(&t->mx, to, out, t->data, t->scale_data, r0, r1);
}

/*
 * A partial row: elements [off, off + k) of row r. An FP8 row is rebuilt
 * in the scratch from the bytes at hand (the rest zero), dequantized
 * whole, and the part wanted copied out.
 */
static void part_row(const st_quant_tensor *t, st_dtype to, unsigned char *o,
                     const unsigned char *in, uint64_t r, uint64_t off, uint64_t k,
                     unsigned char *scratch)
{
	const size_t es = st_dtype_bits(to) / 8;
	unsigned char *row = scratch + t->row_len * 8;
	if (t->role == ST_QUANT_ROLE_FP8) {
		memset(row, 0, (size_t)t->row_len);
		memcpy(row + off, in, (size_t)k);
	}
	rows_of(t, to, scratch, row, r, r + 1);
	memcpy(o, scratch + off * es, (size_t)(k * es));
}

void st_quant_range(const st_quant_tensor *t, st_dtype to, void *out, const unsigned char *in,
                    uint64_t first, uint64_t n, void *scratch)
{
	const size_t es = st_dtype_bits(to) / 8;
	const uint64_t len = t->row_len;
	unsigned char *o = out;

	if (len == 0 || n == 0)
		return;
	uint64_t r = first / len, off = first % len;
	if (off) {
		uint64_t k = len - off < n ? len - off : n;
		part_row(t, to, o, in, r, off, k, scratch);
		o += k * es;
		in += t->role == ST_QUANT_ROLE_FP8 ? k : 0;
		n -= k;
		r++;
	}
	if (n >= len) {
		uint64_t k = n / len;
		rows_of(t, to, o, in, r, r + k);
		o += k * len * es;
		in += t->role == ST_QUANT_ROLE_FP8 ? k * len : 0;
		n -= k * len;
		r += k;
	}
	if (n)
		part_row(t, to, o, in, r, 0, n, scratch);
}

/* ---- quantizing ---------------------------------------------------------------- */

int st_quant_target_wanted(const st_tensor *t)
{
	return t->ndim == 2 && st_dtype_is_wide_float(t->dtype) && t->name_len >= 6 &&
	       memcmp(t->name + t->name_len - 6, "weight", 6) == 0;
}

int st_quant_target_prepare(st_quant_target *q, st_checkpoint *c, size_t i, uint64_t b0,
                            uint64_t b1, st_error *err)
{
	size_t f = 0;
	const st_tensor *t = st_checkpoint_tensor(c, i, &f);
	st_file *file = st_checkpoint_file(c, f);

	memset(q, 0, sizeof *q);
	if (st_quant_fp8_block(&q->l, 1, t->shape[0], t->shape[1], b0, b1) != ST_OK) {
		return st__error(err, ST_EINVAL, "%s: tensor '%.*s': cannot quantize", st_file_path(file),
		                 (int)(t->name_len > 200 ? 200 : t->name_len), t->name);
	}
	q->c = c;
	q->index = i;
	q->src_type = t->dtype;
	q->scale_name_len = t->name_len + 10;
	q->scale_name = malloc(q->scale_name_len + 1);
	if (!q->scale_name)
		return st__error(err, ST_ENOMEM, "out of memory");
	memcpy(q->scale_name, t->name, t->name_len);
	memcpy(q->scale_name + t->name_len, "_scale_inv", 11);
	q->scale_shape[0] = q->l.scale_rows;
	q->scale_shape[1] = q->l.scale_cols;
	return ST_OK;
}

void st_quant_target_free(st_quant_target *q)
{
	free(q->scale_name);
	q->scale_name = NULL;
}

/* Rows of one block row (at most the tensor's). */
static uint64_t block_height(const st_quant_target *q)
{
	return q->l.block_rows < q->l.rows ? q->l.block_rows : q->l.rows;
}

/* Bytes of the scales at the start of scratch, 8-aligned. */
static size_t scales_bytes(const st_quant_target *q)
{
	return ((size_t)q->l.scale_cols * 4 + 7) & ~(size_t)7;
}

/* Bytes of a block row's codes after the scales, 8-aligned: the input follows. */
static size_t codes_bytes(const st_quant_target *q)
{
	return ((size_t)(block_height(q) * q->l.cols) + 7) & ~(size_t)7;
}

size_t st_quant_target_scratch(const st_quant_target *q)
{
	return scales_bytes(q) + codes_bytes(q) +
	       (size_t)(block_height(q) * q->l.cols) * (st_dtype_bits(q->src_type) / 8);
}

/*
 * Quantize block row br into scratch: scales first, then the codes (only
 * the scales when that is all the caller wants).
 */
static int block_row(const st_quant_target *q, uint64_t br, int scale_only, void *scratch,
                     st_error *err)
{
	uint64_t r0 = br * q->l.block_rows, r1 = r0 + q->l.block_rows;
	size_t ss = st_dtype_bits(q->src_type) / 8;
	unsigned char *src = (unsigned char *)scratch + scales_bytes(q) + codes_bytes(q);
	if (r1 > q->l.rows)
		r1 = q->l.rows;
	int rc = st_checkpoint_read(q->c, q->index, r0 * q->l.cols * ss, src,
	                            (size_t)((r1 - r0) * q->l.cols * ss), err);
	if (rc != ST_OK)
		return rc;
	if (scale_only)
		rc = st_quant_fp8_scales(&q->l, scratch, q->src_type, src, r0, r1);
	else
		rc = st_quant_fp8_quantize(&q->l, (unsigned char *)scratch + scales_bytes(q), scratch,
		                           q->src_type, src, r0, r1);
	if (rc != ST_OK)
		st__error(err, rc, "%s",
		          rc == ST_ENOMEM ? "out of memory" : "internal error: cannot quantize");
	return rc;
}

int st_quant_target_range(const st_quant_target *q, int scale, unsigned char *out,
                          uint64_t first, uint64_t n, void *scratch, st_error *err)
{
	/* Elements per block row of the output, and the first's offset. */
	uint64_t per = scale ? q->l.scale_cols : q->l.block_rows * q->l.cols;
	unsigned es = scale ? 4 : 1;
	if (n == 0 || per == 0)
		return ST_OK;
	for (uint64_t br = first / per, end = first + n; br * per < end; br++) {
		int rc = block_row(q, br, scale, scratch, err);
		if (rc != ST_OK)
			return rc;
		uint64_t a = br * per > first ? br * per : first;
		uint64_t b = (br + 1) * per < end ? (br + 1) * per : end;
		const unsigned char *src = (const unsigned char *)scratch +
		                           (scale ? 0 : scales_bytes(q)) + (a - br * per) * es;
		memcpy(out + (a - first) * es, src, (size_t)((b - a) * es));
	}
	return ST_OK;
}
