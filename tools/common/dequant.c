/*
 * dequant.c - pairing scaled weights with their scales and cutting their
 * dequantization into element ranges (dequant.h).
 */
#include "common/dequant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ends_with(const st_tensor *t, const char *suffix)
{
	size_t n = strlen(suffix);
	return t->name_len >= n && !memcmp(t->name + t->name_len - n, suffix, n);
}

/* The index of tensor (prefix of t's name, cut chars) + suffix, or -1. */
static long sibling(st_checkpoint *c, const st_tensor *t, size_t cut, const char *suffix)
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

static int is_f8_weight(st_dtype d)
{
	return d == ST_DTYPE_F8_E4M3 || d == ST_DTYPE_F8_E5M2 || d == ST_DTYPE_F8_E4M3FNUZ ||
	       d == ST_DTYPE_F8_E5M2FNUZ;
}

static const char *file_of(st_checkpoint *c, size_t i)
{
	size_t f = 0;
	st_checkpoint_tensor(c, i, &f);
	return st_file_path(st_checkpoint_file(c, f));
}

/* Map tensor i's bytes. */
static int map(st_checkpoint *c, size_t i, const unsigned char **data, st_error *err)
{
	size_t f = 0;
	const st_tensor *t = st_checkpoint_tensor(c, i, &f);
	st_file *file = st_checkpoint_file(c, f);
	long k = st_file_find(file, t->name, t->name_len);
	const void *p = NULL;

	if (k < 0 || st_file_data(file, (size_t)k, &p, err) != ST_OK)
		return -1;
	*data = p;
	return 0;
}

static int mismatch(st_error *err, st_checkpoint *c, size_t i, const char *what, const char *name2)
{
	const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
	err->code = ST_EFORMAT;
	err->sys_errno = 0;
	snprintf(err->message, sizeof err->message, "%s: %s '%.*s' has no %s '%s'", file_of(c, i),
	         what, (int)(t->name_len > 200 ? 200 : t->name_len), t->name,
	         strstr(what, "scale") ? "weight" : "scale", name2);
	return -1;
}

int dq_plan_build(dq_plan *p, st_checkpoint *c, uint64_t b0, uint64_t b1, st_error *err)
{
	size_t n = st_checkpoint_n_tensors(c);
	int any_scale = 0;

	memset(p, 0, sizeof *p);
	p->block_rows = b0;
	p->block_cols = b1;
	p->t = calloc(n ? n : 1, sizeof *p->t);
	if (!p->t) {
		err->code = ST_ENOMEM;
		snprintf(err->message, sizeof err->message, "out of memory");
		return -1;
	}
	p->n = n;
	/* Scales first: which names are scales, and whether there are any. */
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		if (ends_with(t, ".weight_scale_inv") || ends_with(t, ".weight_scale") ||
		    (ends_with(t, "_scales") && t->dtype == ST_DTYPE_U8)) {
			p->t[i].role = DQ_SCALE;
			any_scale = 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		dq_tensor *d = &p->t[i];
		char want[512];
		if (ends_with(t, ".weight") && is_f8_weight(t->dtype) && any_scale) {
			long s = sibling(c, t, 0, "_scale_inv");
			if (s < 0)
				s = sibling(c, t, 0, "_scale");
			if (s < 0) {
				snprintf(want, sizeof want, "%.*s_scale_inv", (int)(t->name_len > 200 ? 200 : t->name_len),
				         t->name);
				return mismatch(err, c, i, "weight", want);
			}
			const st_tensor *st = st_checkpoint_tensor(c, (size_t)s, NULL);
			if (st_quant_fp8_layout(&d->fp8, t, st, b0, b1, file_of(c, i), err) != ST_OK)
				return -1;
			d->role = DQ_FP8;
			d->scale = (size_t)s;
			d->n_out = t->n_elements;
			d->row_len = d->fp8.cols;
			p->n_fp8++;
		} else if (ends_with(t, "_blocks") && t->dtype == ST_DTYPE_U8) {
			long s = sibling(c, t, 7, "_scales");
			if (s < 0) {
				snprintf(want, sizeof want, "%.*s_scales", (int)(t->name_len - 7 > 200 ? 200 : t->name_len - 7),
				         t->name);
				return mismatch(err, c, i, "MXFP4 blocks", want);
			}
			const st_tensor *st = st_checkpoint_tensor(c, (size_t)s, NULL);
			if (st_quant_mxfp4_layout(&d->mx, t, st, file_of(c, i), err) != ST_OK)
				return -1;
			d->role = DQ_MXFP4;
			d->scale = (size_t)s;
			d->out_name_len = t->name_len - 7;
			d->out_name = malloc(d->out_name_len + 1);
			if (!d->out_name) {
				err->code = ST_ENOMEM;
				snprintf(err->message, sizeof err->message, "out of memory");
				return -1;
			}
			memcpy(d->out_name, t->name, d->out_name_len);
			d->out_name[d->out_name_len] = 0;
			d->out_shape[0] = d->mx.experts;
			d->out_shape[1] = d->mx.groups * 32;
			d->out_shape[2] = d->mx.rows;
			d->n_out = d->mx.experts * d->mx.groups * 32 * d->mx.rows;
			d->row_len = d->mx.rows;
			p->n_mxfp4++;
		} else {
			continue;
		}
		/* FP8 weights stream through the pipeline's reads (dq_range's
		 * in); MXFP4's transposed layout reads whole columns: mapped. */
		if ((d->role == DQ_MXFP4 && map(c, i, &d->data, err)) ||
		    map(c, d->scale, &d->scale_data, err))
			return -1;
		if (p->t[d->scale].role != DQ_SCALE)
			p->t[d->scale].role = DQ_SCALE;
		p->t[d->scale].scale = i; /* a scale points back at its weight */
		p->t[d->scale].n_out = 1;
		if (d->row_len > p->max_row)
			p->max_row = (size_t)d->row_len;
	}
	/* Every scale must belong to a weight. */
	for (size_t i = 0; i < n; i++) {
		if (p->t[i].role != DQ_SCALE || p->t[i].n_out)
			continue;
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		char want[512];
		size_t cut = ends_with(t, "_scale_inv") ? 10 : ends_with(t, "_scales") ? 7 : 6;
		int mx = ends_with(t, "_scales");
		snprintf(want, sizeof want, "%.*s%s", (int)(t->name_len - cut > 200 ? 200 : t->name_len - cut),
		         t->name, mx ? "_blocks" : "");
		return mismatch(err, c, i, mx ? "MXFP4 scale" : "scale", want);
	}
	for (size_t i = 0; i < n; i++)
		if (p->t[i].role == DQ_SCALE) {
			p->n_scales++;
			p->scale_bytes += st_checkpoint_tensor(c, i, NULL)->n_bytes;
		}
	return 0;
}

void dq_plan_free(dq_plan *p)
{
	for (size_t i = 0; p->t && i < p->n; i++)
		free(p->t[i].out_name);
	free(p->t);
	memset(p, 0, sizeof *p);
}

void dq_plan_describe(const dq_plan *p, char *buf, size_t size)
{
	int k = snprintf(buf, size, "dequantized");
	if (p->n_fp8 && k >= 0 && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, " %zu FP8 weight%s (blocks %llux%llu)",
		              p->n_fp8, p->n_fp8 == 1 ? "" : "s", (unsigned long long)p->block_rows,
		              (unsigned long long)p->block_cols);
	if (p->n_mxfp4 && k >= 0 && (size_t)k < size)
		k += snprintf(buf + k, size - (size_t)k, "%s %zu MXFP4 weight%s", p->n_fp8 ? "," : "",
		              p->n_mxfp4, p->n_mxfp4 == 1 ? "" : "s");
	if (k >= 0 && (size_t)k < size)
		snprintf(buf + k, size - (size_t)k, "; %zu scale tensor%s (%llu bytes) folded in",
		         p->n_scales, p->n_scales == 1 ? "" : "s", (unsigned long long)p->scale_bytes);
}

/* Whole output rows [r0, r1) into out; w: an FP8 weight's rows. */
static void dq_rows(const dq_tensor *t, st_dtype to, void *out, const unsigned char *w, uint64_t r0,
                    uint64_t r1)
{
	if (t->role == DQ_FP8)
		st_quant_fp8_dequant(&t->fp8, to, out, w, t->scale_data, r0, r1);
	else
		st_quant_mxfp4_dequant(&t->mx, to, out, t->data, t->scale_data, r0, r1);
}

/*
 * A partial row: elements [off, off + k) of row r. An FP8 row is rebuilt
 * in the scratch from the bytes at hand (the rest zero), dequantized
 * whole, and the part wanted copied out.
 */
static void dq_part(const dq_tensor *t, st_dtype to, unsigned char *o, const unsigned char *in,
                    uint64_t r, uint64_t off, uint64_t k, unsigned char *scratch)
{
	const size_t es = st_dtype_bits(to) / 8;
	unsigned char *row = scratch + t->row_len * 8;
	if (t->role == DQ_FP8) {
		memset(row, 0, (size_t)t->row_len);
		memcpy(row + off, in, (size_t)k);
	}
	dq_rows(t, to, scratch, row, r, r + 1);
	memcpy(o, scratch + off * es, (size_t)(k * es));
}

void dq_range(const dq_tensor *t, st_dtype to, void *out, const unsigned char *in, uint64_t first,
              uint64_t n, void *scratch)
{
	const size_t es = st_dtype_bits(to) / 8;
	const uint64_t len = t->row_len;
	unsigned char *o = out;

	if (len == 0 || n == 0)
		return;
	uint64_t r = first / len, off = first % len;
	if (off) {
		uint64_t k = len - off < n ? len - off : n;
		dq_part(t, to, o, in, r, off, k, scratch);
		o += k * es;
		in += t->role == DQ_FP8 ? k : 0;
		n -= k;
		r++;
	}
	if (n >= len) {
		uint64_t k = n / len;
		dq_rows(t, to, o, in, r, r + k);
		o += k * len * es;
		in += t->role == DQ_FP8 ? k * len : 0;
		n -= k * len;
		r += k;
	}
	if (n)
		dq_part(t, to, o, in, r, 0, n, scratch);
}

/* config.json is small; anything past this is not a config. */
#define DQ_MAX_CONFIG ((size_t)16 << 20)

int dq_config_block_size(const char *dir, uint64_t *b0, uint64_t *b1, st_error *err)
{
	size_t plen = strlen(dir) + sizeof "/config.json";
	char *path = malloc(plen), *text = NULL;
	FILE *f = NULL;
	size_t n = 0;
	int found = 0, rc = -1;

	*b0 = *b1 = ST_QUANT_DEFAULT_BLOCK;
	err->code = ST_ENOMEM;
	err->sys_errno = 0;
	snprintf(err->message, sizeof err->message, "out of memory");
	if (!path)
		return -1;
	snprintf(path, plen, "%s/config.json", dir);
	f = fopen(path, "rb");
	if (!f) {
		rc = 0; /* no config.json: the default */
		goto out;
	}
	text = malloc(DQ_MAX_CONFIG + 1);
	if (!text)
		goto out;
	n = fread(text, 1, DQ_MAX_CONFIG + 1, f);
	if (ferror(f) || n > DQ_MAX_CONFIG) {
		err->code = ST_EIO;
		snprintf(err->message, sizeof err->message, "%.400s: %s", path,
		         n > DQ_MAX_CONFIG ? "larger than 16 MiB" : "read error");
		goto out;
	}
	st_error e;
	int r = st_quant_config_block_size(text, n, b0, b1, &found, &e);
	if (r == ST_EINVAL) {
		err->code = ST_EINVAL;
		snprintf(err->message, sizeof err->message, "%.300s: %.200s", path, e.message);
		goto out;
	}
	if (r != ST_OK) /* not a JSON object: no block size in it */
		*b0 = *b1 = ST_QUANT_DEFAULT_BLOCK;
	rc = 0;
out:
	if (f)
		fclose(f);
	free(text);
	free(path);
	return rc;
}
