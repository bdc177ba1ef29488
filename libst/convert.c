/*
 * convert.c - the plan of a checkpoint conversion (st/convert.h): what
 * happens to each tensor, the checks quantizing makes before anything is
 * written, the new scale tensors, the names written (renamed, one tensor
 * each, indexed for the writes), and the output's shard layout. The data
 * path is convert_write.c.
 */
#include "convert_internal.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st__convert_config(st_convert_plan *p, const char **text, size_t *len, st_error *err)
{
	if (!p->config_read) {
		int rc = st_config_read(st_checkpoint_dir(p->c), &p->config, &p->config_len,
		                        &p->config_file, err);
		if (rc != ST_OK && rc != ST_ENOTFOUND)
			return rc;
		p->config_read = 1;
	}
	*text = p->config;
	*len = p->config_len;
	return ST_OK;
}

/*
 * The FP8 block size IN's config.json names (the default without one), as
 * stinfo and stdiff read it (st__config_block_size, on the text the plan
 * writes from): a file inside a snapshot counts too. Sets *found to
 * whether it names one. Returns ST_OK, ST_EINVAL naming the file (a
 * hostile block size), or st_config_read's error.
 */
static int in_block_size(st_convert_plan *p, uint64_t *b0, uint64_t *b1, int *found,
                         st_error *err)
{
	const char *text;
	size_t len;
	int rc = st__convert_config(p, &text, &len, err);

	*b0 = *b1 = ST_QUANT_DEFAULT_BLOCK;
	*found = 0;
	if (rc != ST_OK)
		return rc;
	return st__config_block_size(text, len, p->config_file, b0, b1, found, err);
}

static int glob_match(const char *glob, const st_tensor *t)
{
	/* fnmatch sees names up to a NUL byte; names holding NUL are rare
	 * enough that matching their first part is an acceptable limit. */
	return fnmatch(glob, t->name, 0) == 0;
}

/*
 * Whether a float of dtype from converts to the target: the wide floats,
 * and the plain 8- and 4-bit floats (no scale pairs with them), which
 * st_convert decodes exactly. F6 is not decoded: copied as it is.
 */
static int decodes(st_dtype from, st_dtype to)
{
	return st_dtype_is_wide_float(from) ||
	       (st_dtype_is_float(from) && st_convert_supported(to, from));
}

/*
 * Whether converting from to to can lose a value (what it lost is then
 * counted): a narrower wide float, F16 <-> BF16 (other ranges), and of the
 * 8- and 4-bit floats only F8_E8M0 to F16 (2^-127..2^127 is past F16's
 * range); every other F8 and F4 value is exact in F16, BF16 and F32.
 */
static int narrows(st_dtype from, st_dtype to)
{
	if (!st_dtype_is_wide_float(from))
		return from == ST_DTYPE_F8_E8M0 && to == ST_DTYPE_F16;
	return st_dtype_bits(to) < st_dtype_bits(from) ||
	       (from == ST_DTYPE_F16 && to == ST_DTYPE_BF16) ||
	       (from == ST_DTYPE_BF16 && to == ST_DTYPE_F16);
}

/* What happens to input tensor i. */
static void plan_item(st_convert_plan *p, size_t i)
{
	const st_convert_options *o = &p->o;
	st_convert_item *it = &p->items[i];
	size_t file = 0;
	int dropped = 0, kept = 0;

	it->src = i;
	it->tensor = st_checkpoint_tensor(p->c, i, &file);
	it->file = file;
	it->out = it->tensor->dtype;
	for (size_t g = 0; g < o->n_drop; g++) {
		if (glob_match(o->drop[g], it->tensor)) {
			p->hits[1][g]++;
			dropped = 1;
		}
	}
	for (size_t g = 0; g < o->n_keep && !dropped; g++) {
		if (glob_match(o->keep[g], it->tensor)) {
			p->hits[0][g]++;
			kept = 1;
		}
	}
	const st_quant_tensor *dq = o->has_to && p->dq.t ? &p->dq.t[i] : NULL;
	if (dq && dq->role == ST_QUANT_ROLE_SCALE && !dropped)
		it->action = ST_CONVERT_DROP; /* folded into its weight */
	else if (dq && dq->role != ST_QUANT_ROLE_PLAIN && !dropped) {
		it->action = ST_CONVERT_DEQUANT;
		it->out = o->to;
	} else if (dropped)
		it->action = ST_CONVERT_DROP;
	else if (o->quantize && !kept && st_quant_target_wanted(it->tensor)) {
		it->action = ST_CONVERT_QUANT;
		it->out = ST_DTYPE_F8_E4M3;
	} else if (o->quantize)
		it->action = kept && st_dtype_is_wide_float(it->tensor->dtype) ? ST_CONVERT_KEEP
		                                                               : ST_CONVERT_COPY;
	else if (!o->has_to)
		it->action = ST_CONVERT_COPY;
	else if (!decodes(it->tensor->dtype, o->to))
		it->action = ST_CONVERT_ASIS;
	else if (kept)
		it->action = ST_CONVERT_KEEP;
	else if (it->tensor->dtype == o->to)
		it->action = ST_CONVERT_COPY;
	else {
		it->action = ST_CONVERT_CONVERT;
		it->out = o->to;
		it->narrows = narrows(it->tensor->dtype, o->to);
	}
	/* A PyTorch alias (tied weights) is written once: safetensors
	 * cannot hold two names for one piece of data. */
	st_file *in = st_checkpoint_file(p->c, file);
	long self = st_file_find(in, it->tensor->name, it->tensor->name_len);
	long of = self < 0 ? -1 : st_file_alias_of(in, (size_t)self);
	if (of >= 0 && it->action != ST_CONVERT_DROP) {
		it->action = ST_CONVERT_DROP;
		it->alias = st_file_tensor(in, (size_t)of);
		it->narrows = 0;
	}
	it->out_name = it->tensor->name;
	it->out_name_len = it->tensor->name_len;
	it->out_ndim = it->tensor->ndim;
	it->out_dims = it->tensor->shape;
	/* The input was validated, so n_elements x bits fits in 64 bits for
	 * the input dtype; the output dtype is at most twice as wide. */
	it->out_bytes = it->tensor->n_elements / 8 * st_dtype_bits(it->out) +
	                it->tensor->n_elements % 8 * st_dtype_bits(it->out) / 8;
	if (it->action == ST_CONVERT_DEQUANT) {
		it->out_bytes = dq->n_out * (st_dtype_bits(it->out) / 8);
		if (dq->out_name) { /* MXFP4 NAME_blocks -> NAME */
			it->out_name = dq->out_name;
			it->out_name_len = dq->out_name_len;
			it->out_ndim = 3;
			it->out_dims = dq->out_shape;
		}
	}
}

/* "FILE: tensor 'NAME'" of tensor i of c, for messages. */
static void tensor_where(st_checkpoint *c, size_t i, char *buf, size_t size)
{
	size_t f = 0;
	const st_tensor *t = st_checkpoint_tensor(c, i, &f);
	snprintf(buf, size, "%s: tensor '%.*s'", st_file_path(st_checkpoint_file(c, f)),
	         (int)(t->name_len > 200 ? 200 : t->name_len), t->name);
}

/*
 * Quantizing a checkpoint with quantized weights already: each FP8 weight
 * and its scale are copied as they are, never quantized again, when the
 * config.json written will describe them: an F8_E4M3 X.weight with an
 * X.weight_scale_inv grid of R x C blocks, the options' (which then
 * default to IN's config.json weight_block_size; without one the pairs
 * are read with the options' blocks). Anything else (another F8 type,
 * per-channel or per-tensor scales, other blocks, MXFP4, an F8 weight
 * without a scale) would leave config.json wrong: an error naming the
 * tensor, before anything is written. The pairs go to p->dq.
 */
static int requant_check(st_convert_plan *p, st_error *err)
{
	uint64_t b0, b1;
	int found, rc = in_block_size(p, &b0, &b1, &found, err);
	int has_block = p->o.block_rows != 0;

	if (rc != ST_OK)
		return rc;
	if (!found) { /* no config.json to say: the weights' blocks are the options' */
		b0 = p->block[0];
		b1 = p->block[1];
	}
	if ((rc = st_quant_plan_build(&p->dq, p->c, b0, b1, err)) != ST_OK)
		return rc;
	if (p->dq.n_fp8 && found && !has_block) {
		p->block[0] = b0;
		p->block[1] = b1;
	}
	for (size_t i = 0; i < p->dq.n; i++) {
		const st_quant_tensor *d = &p->dq.t[i];
		const st_tensor *t = st_checkpoint_tensor(p->c, i, NULL);
		char where[512], sa[256], sb[256], want[256];
		int f8_alone = d->role == ST_QUANT_ROLE_PLAIN && t->ndim >= 2 &&
		               st_quant_is_f8_weight(t->dtype);
		if (p->items[i].action == ST_CONVERT_DROP) /* dropped: not in OUT */
			continue;
		if (d->role == ST_QUANT_ROLE_MXFP4 || d->role == ST_QUANT_ROLE_FP8 || f8_alone)
			tensor_where(p->c, i, where, sizeof where);
		if (d->role == ST_QUANT_ROLE_MXFP4)
			return st__error(err, ST_EFORMAT, "%s: MXFP4 blocks cannot be kept beside the "
			                 "FP8 quantization_config quantizing writes; dequantize it first",
			                 where);
		if (f8_alone)
			return st__error(err, ST_EFORMAT, "%s: %s without a scale: config.json's FP8 "
			                 "quantization_config would call it scaled", where,
			                 st_dtype_name(t->dtype));
		if (d->role != ST_QUANT_ROLE_FP8)
			continue;
		const st_tensor *s = st_checkpoint_tensor(p->c, d->scale, NULL);
		/* X.weight's scale is X.weight_scale_inv or X.weight_scale. */
		int inv = s->name_len == t->name_len + 10;
		st_quant_fp8 l;
		int fits = st_quant_fp8_block(&l, d->fp8.experts, d->fp8.rows, d->fp8.cols,
		                              p->block[0], p->block[1]) == ST_OK &&
		           t->dtype == ST_DTYPE_F8_E4M3 && s->ndim == t->ndim &&
		           s->shape[s->ndim - 2] == l.scale_rows &&
		           s->shape[s->ndim - 1] == l.scale_cols && inv;
		if (fits)
			continue;
		st__fmt_shape(sa, sizeof sa, t->shape, t->ndim);
		st__fmt_shape(sb, sizeof sb, s->shape, s->ndim);
		snprintf(want, sizeof want, "F8_E4M3 with %llux%llu block scales %.*s_scale_inv "
		         "[%llu, %llu]", (unsigned long long)p->block[0],
		         (unsigned long long)p->block[1], (int)(t->name_len > 100 ? 100 : t->name_len),
		         t->name, (unsigned long long)l.scale_rows, (unsigned long long)l.scale_cols);
		/* The weights IN's config.json names, when they would fit. */
		int other = d->fp8.kind == ST_QUANT_BLOCK && t->dtype == ST_DTYPE_F8_E4M3 &&
		            (b0 != p->block[0] || b1 != p->block[1]) && inv;
		char hint[64] = "";
		if (other)
			snprintf(hint, sizeof hint, " or quantize with %llux%llu blocks",
			         (unsigned long long)b0, (unsigned long long)b1);
		return st__error(err, ST_EFORMAT, "%s: already quantized as %s %s with scale '%.*s' "
		                 "%s %s; the config.json written describes %s: dequantize it first%s",
		                 where, st_dtype_name(t->dtype), sa,
		                 (int)(s->name_len > 200 ? 200 : s->name_len), s->name,
		                 st_dtype_name(s->dtype), sb, want, hint);
	}
	return ST_OK;
}

/* Prepare every QUANT item and append its scale tensor as a QSCALE item
 * (items has room for twice the tensors). */
static int quant_plan(st_convert_plan *p, st_error *err)
{
	size_t n = p->n_tensors, m = n;

	p->qz = calloc(n ? n : 1, sizeof *p->qz);
	p->qz_scales = calloc(n ? n : 1, sizeof *p->qz_scales);
	if (!p->qz || !p->qz_scales)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		st_convert_item *it = &p->items[i];
		if (it->action != ST_CONVERT_QUANT)
			continue;
		st_quant_target *q = &p->qz[i];
		int rc = st_quant_target_prepare(q, p->c, it->src, p->block[0], p->block[1], err);
		if (rc != ST_OK)
			return rc;
		if (st_quant_target_scratch(q) > p->qz_scratch)
			p->qz_scratch = st_quant_target_scratch(q);
		st_tensor *s = &p->qz_scales[m - n];
		s->name = q->scale_name;
		s->name_len = q->scale_name_len;
		s->dtype = ST_DTYPE_F32;
		s->ndim = 2;
		s->shape = q->scale_shape;
		s->n_elements = q->scale_shape[0] * q->scale_shape[1];
		s->n_bytes = s->n_elements * 4;
		p->items[m++] = (st_convert_item){
			.tensor = s, .src = it->src, .file = it->file, .action = ST_CONVERT_QSCALE,
			.out = ST_DTYPE_F32, .out_name = s->name, .out_name_len = s->name_len,
			.out_ndim = 2, .out_dims = s->shape, .out_bytes = s->n_bytes,
		};
	}
	p->n_items = m;
	return ST_OK;
}

/*
 * Rename the names written by the rules (st_convert_options.rename): the
 * first rule whose from starts a name replaces that prefix, and no other
 * is tried. Returns ST_OK, ST_EINVAL (a name renamed to nothing),
 * ST_ENOMEM.
 */
static int rename_items(st_convert_plan *p, st_error *err)
{
	const st_convert_options *o = &p->o;

	if (!o->n_rename)
		return ST_OK;
	p->renamed = calloc(p->n_items ? p->n_items : 1, sizeof *p->renamed);
	if (!p->renamed)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < p->n_items; i++) {
		st_convert_item *it = &p->items[i];
		if (it->action == ST_CONVERT_DROP)
			continue;
		for (size_t r = 0; r < o->n_rename; r++) {
			size_t from = strlen(o->rename[r].from), to = strlen(o->rename[r].to);
			if (it->out_name_len < from || memcmp(it->out_name, o->rename[r].from, from))
				continue;
			size_t len = to + (it->out_name_len - from);
			if (!len) {
				char where[512];
				tensor_where(p->c, it->src, where, sizeof where);
				return st__error(err, ST_EINVAL, "%s: renamed to an empty name by '%s=%s'",
				                 where, o->rename[r].from, o->rename[r].to);
			}
			char *name = malloc(len + 1);
			if (!name)
				return st__error(err, ST_ENOMEM, "out of memory");
			memcpy(name, o->rename[r].to, to);
			memcpy(name + to, it->out_name + from, it->out_name_len - from);
			name[len] = 0;
			p->renamed[i] = name;
			it->out_name = name;
			it->out_name_len = len;
			p->hits[2][r]++;
			break;
		}
	}
	return ST_OK;
}

/* A name's length as printed in a message: at most 200 bytes of it. */
#define CUT(len) (int)((len) > 200 ? 200 : (len))

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

static int by_out_name(const void *a, const void *b)
{
	const st_convert_item *x = *(st_convert_item *const *)a, *y = *(st_convert_item *const *)b;
	return cmp_bytes(x->out_name, x->out_name_len, y->out_name, y->out_name_len);
}

/*
 * Index the items written by name, refusing two of them under one name
 * (renamed onto each other, or onto a name kept). Returns ST_OK,
 * ST_EINVAL naming both tensors and the name, ST_ENOMEM.
 */
static int index_names(st_convert_plan *p, st_error *err)
{
	p->by_name = calloc(p->n_items ? p->n_items : 1, sizeof *p->by_name);
	if (!p->by_name)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < p->n_items; i++)
		if (p->items[i].action != ST_CONVERT_DROP)
			p->by_name[p->n_by_name++] = &p->items[i];
	qsort(p->by_name, p->n_by_name, sizeof *p->by_name, by_out_name);
	for (size_t k = 1; k < p->n_by_name; k++) {
		const st_convert_item *a = p->by_name[k - 1], *b = p->by_name[k];
		if (by_out_name(&a, &b))
			continue;
		if (a->src > b->src || (a->src == b->src && a > b)) { /* input order */
			const st_convert_item *t = a;
			a = b;
			b = t;
		}
		const char *fa = st_file_path(st_checkpoint_file(p->c, a->file));
		const char *fb = st_file_path(st_checkpoint_file(p->c, b->file));
		int same = a->file == b->file;
		return st__error(err, ST_EINVAL, "%.300s: tensor '%.*s' and %.300s%stensor '%.*s' "
		                 "would both be written as '%.*s'", fa, CUT(a->tensor->name_len),
		                 a->tensor->name, same ? "" : fb, same ? "" : ": ",
		                 CUT(b->tensor->name_len), b->tensor->name, CUT(a->out_name_len),
		                 a->out_name);
	}
	return ST_OK;
}

st_convert_item *st__convert_item_named(const st_convert_plan *p, const char *name, size_t len)
{
	size_t lo = 0, hi = p->n_by_name;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const st_convert_item *it = p->by_name[mid];
		int c = cmp_bytes(it->out_name, it->out_name_len, name, len);
		if (c == 0)
			return p->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int copy_options(st_convert_plan *p, const st_convert_options *o, st_error *err)
{
	p->o = *o;
	p->o.meta = NULL;
	p->hits[0] = calloc(o->n_keep ? o->n_keep : 1, sizeof *p->hits[0]);
	p->hits[1] = calloc(o->n_drop ? o->n_drop : 1, sizeof *p->hits[1]);
	p->hits[2] = calloc(o->n_rename ? o->n_rename : 1, sizeof *p->hits[2]);
	p->meta = calloc(o->n_meta ? o->n_meta : 1, sizeof *p->meta);
	p->meta_text = calloc(o->n_meta ? 2 * o->n_meta : 1, sizeof *p->meta_text);
	if (!p->hits[0] || !p->hits[1] || !p->hits[2] || !p->meta || !p->meta_text)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t m = 0; m < o->n_meta; m++) {
		p->meta_text[2 * m] = strdup(o->meta[m].key);
		p->meta_text[2 * m + 1] = strdup(o->meta[m].value);
		if (!p->meta_text[2 * m] || !p->meta_text[2 * m + 1])
			return st__error(err, ST_ENOMEM, "out of memory");
		p->meta[m] = (st_convert_meta){p->meta_text[2 * m], p->meta_text[2 * m + 1]};
	}
	p->o.meta = p->meta;
	return ST_OK;
}

static int check_options(const st_convert_options *o, st_error *err)
{
	if (o->has_to && o->quantize)
		return st__error(err, ST_EINVAL, "convert options: both a dtype and quantizing");
	if (o->has_to && !st_dtype_is_wide_float(o->to))
		return st__error(err, ST_EINVAL, "convert options: %s is not F64, F32, F16 or BF16",
		                 st_dtype_name(o->to));
	if ((o->block_rows == 0) != (o->block_cols == 0) || o->block_rows > ST_QUANT_MAX_BLOCK ||
	    o->block_cols > ST_QUANT_MAX_BLOCK)
		return st__error(err, ST_EINVAL, "convert options: block %llux%llu",
		                 (unsigned long long)o->block_rows, (unsigned long long)o->block_cols);
	if ((o->n_keep && !o->keep) || (o->n_drop && !o->drop) || (o->n_meta && !o->meta) ||
	    (o->n_rename && !o->rename))
		return st__error(err, ST_EINVAL, "convert options: a list without its array");
	for (size_t r = 0; r < o->n_rename; r++)
		if (!o->rename[r].from || !o->rename[r].to)
			return st__error(err, ST_EINVAL, "convert options: rename %zu without a name",
			                 r);
	return ST_OK;
}

int st_convert_plan_new(st_convert_plan **out, st_checkpoint *c, const st_convert_options *o,
                        st_error *err)
{
	ST__REQUIRE(out && c && o);
	*out = NULL;
	int rc = check_options(o, err);
	if (rc != ST_OK)
		return rc;
	st_convert_plan *p = calloc(1, sizeof *p);
	if (!p)
		return st__error(err, ST_ENOMEM, "out of memory");
	p->c = c;
	p->n_shards = 1;
	p->n_tensors = p->n_items = st_checkpoint_n_tensors(c);
	p->block[0] = o->block_rows ? o->block_rows : ST_QUANT_DEFAULT_BLOCK;
	p->block[1] = o->block_cols ? o->block_cols : ST_QUANT_DEFAULT_BLOCK;
	rc = copy_options(p, o, err);
	if (rc == ST_OK && !(p->items = calloc(p->n_tensors ? 2 * p->n_tensors : 1,
	                                       sizeof *p->items)))
		rc = st__error(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK && o->has_to) { /* pair the scaled weights with their scales */
		uint64_t b0, b1;
		int found;
		rc = in_block_size(p, &b0, &b1, &found, err);
		if (rc == ST_OK)
			rc = st_quant_plan_build(&p->dq, c, b0, b1, err);
	}
	for (size_t i = 0; rc == ST_OK && i < p->n_tensors; i++)
		plan_item(p, i);
	if (rc == ST_OK && o->quantize)
		rc = requant_check(p, err);
	if (rc == ST_OK && o->quantize)
		rc = quant_plan(p, err);
	if (rc == ST_OK)
		rc = rename_items(p, err);
	if (rc == ST_OK)
		rc = index_names(p, err);
	p->o.keep = p->o.drop = NULL; /* the caller's, not needed any more */
	p->o.rename = NULL;
	if (rc != ST_OK) {
		st_convert_plan_free(p);
		return rc;
	}
	*out = p;
	return ST_OK;
}

void st_convert_plan_free(st_convert_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; p->qz && i < p->n_tensors; i++)
		st_quant_target_free(&p->qz[i]);
	free(p->qz);
	free(p->qz_scales);
	st_quant_plan_free(&p->dq);
	for (size_t m = 0; p->meta_text && m < 2 * p->o.n_meta; m++)
		free(p->meta_text[m]);
	free(p->meta_text);
	free(p->meta);
	free(p->hits[0]);
	free(p->hits[1]);
	free(p->hits[2]);
	for (size_t i = 0; p->renamed && i < p->n_items; i++)
		free(p->renamed[i]);
	free(p->renamed);
	free(p->by_name);
	free(p->config);
	free(p->config_file);
	free(p->items);
	free(p->order);
	free(p->file_shard);
	free(p);
}

size_t st_convert_plan_n_items(const st_convert_plan *p)
{
	return p->n_items;
}

const st_convert_item *st_convert_plan_item(const st_convert_plan *p, size_t i)
{
	ST__REQUIRE(i < p->n_items);
	return &p->items[i];
}

size_t st_convert_plan_count(const st_convert_plan *p, st_convert_action a)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_items; i++)
		n += p->items[i].action == a;
	return n;
}

size_t st_convert_plan_glob_hits(const st_convert_plan *p, int which, size_t g)
{
	ST__REQUIRE(which == 0 || which == 1);
	ST__REQUIRE(g < (which ? p->o.n_drop : p->o.n_keep));
	return p->hits[which][g];
}

size_t st_convert_plan_rename_hits(const st_convert_plan *p, size_t r)
{
	ST__REQUIRE(r < p->o.n_rename);
	return p->hits[2][r];
}

const st_quant_plan *st_convert_plan_pairs(const st_convert_plan *p)
{
	return &p->dq;
}

void st_convert_plan_block(const st_convert_plan *p, uint64_t *rows, uint64_t *cols)
{
	*rows = p->block[0];
	*cols = p->block[1];
}

int st_convert_plan_scaled(const st_convert_plan *p)
{
	return p->o.quantize || (p->o.has_to && (p->dq.n_fp8 || p->dq.n_mxfp4));
}

uint64_t st_convert_plan_in_bytes(const st_convert_plan *p)
{
	uint64_t total = 0;
	for (size_t i = 0; i < p->n_tensors; i++)
		if (p->items[i].action != ST_CONVERT_DROP)
			total += p->items[i].tensor->n_bytes;
	return total;
}

/* Split the output into shards of at most limit bytes (st_shard_plan:
 * huggingface_hub's rule, over the tensors as they will be written). */
static int split_shards(st_convert_plan *p, uint64_t limit, st_error *err)
{
	size_t n = p->n_items, m = 0;
	st_tensor *t = calloc(n ? n : 1, sizeof *t);
	unsigned *shard = calloc(n ? n : 1, sizeof *shard);
	size_t *of = calloc(n ? n : 1, sizeof *of);
	int rc = t && shard && of ? ST_OK : st__error(err, ST_ENOMEM, "out of memory");

	for (size_t i = 0; rc == ST_OK && i < n; i++) {
		const st_convert_item *it = &p->items[i];
		if (it->action == ST_CONVERT_DROP)
			continue;
		t[m] = *it->tensor;
		t[m].name = it->out_name; /* the order written */
		t[m].name_len = it->out_name_len;
		t[m].dtype = it->out;
		t[m].n_bytes = it->out_bytes;
		of[m++] = i;
	}
	if (rc == ST_OK)
		rc = st_shard_plan(t, m, limit, shard, &p->n_shards, err);
	for (size_t k = 0; rc == ST_OK && k < m; k++)
		p->items[of[k]].shard = shard[k];
	free(t);
	free(shard);
	free(of);
	return rc;
}

/*
 * Keep the input's shards: output shard k holds what input shard k held,
 * the shards numbered as the input's file names sort (an index lists them
 * in the order its sorted tensor names first name them). A shard left
 * with no tensor is not written; the rest are numbered without it.
 */
static int keep_shards(st_convert_plan *p, st_error *err)
{
	size_t nf = st_checkpoint_n_files(p->c);
	int *used = calloc(nf ? nf : 1, sizeof *used);

	if (!used)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < p->n_items; i++)
		if (p->items[i].action != ST_CONVERT_DROP)
			used[p->items[i].file] = 1;
	unsigned n = 0;
	for (size_t k = 0; k < nf; k++) {
		size_t f = p->order[k];
		p->file_shard[f] = used[f] ? (long)n++ : -1;
	}
	for (size_t i = 0; i < p->n_items; i++) {
		long s = p->file_shard[p->items[i].file];
		p->items[i].shard = s < 0 ? 0 : (unsigned)s;
	}
	free(used);
	p->n_shards = n ? n : 1;
	p->keeps_shards = 1;
	return ST_OK;
}

int st_convert_plan_shards(st_convert_plan *p, int to_dir, uint64_t shard_size, st_error *err)
{
	size_t nf = st_checkpoint_n_files(p->c);

	if (!to_dir && shard_size)
		return st__error(err, ST_EINVAL, "a shard size needs a directory output");
	free(p->order);
	free(p->file_shard);
	p->order = calloc(nf ? nf : 1, sizeof *p->order);
	p->file_shard = calloc(nf ? nf : 1, sizeof *p->file_shard);
	if (!p->order || !p->file_shard)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t f = 0; f < nf; f++) { /* insertion sort by path: few files */
		size_t k = f;
		const char *path = st_file_path(st_checkpoint_file(p->c, f));
		while (k > 0 &&
		       strcmp(st_file_path(st_checkpoint_file(p->c, p->order[k - 1])), path) > 0) {
			p->order[k] = p->order[k - 1];
			k--;
		}
		p->order[k] = f;
		p->file_shard[f] = -1;
	}
	p->keeps_shards = 0;
	/*
	 * One rule (SPEC): shards stay shards, one out per one in, whenever a
	 * sharded input goes to a directory without a shard size: safetensors
	 * or PyTorch, converted, quantized or dequantized alike. A one-file
	 * output of a model that ships in 163 shards helps nobody; a file OUT
	 * asks for one file.
	 */
	if (to_dir && !shard_size && nf > 1)
		return keep_shards(p, err);
	return split_shards(p, shard_size, err);
}

unsigned st_convert_plan_n_shards(const st_convert_plan *p)
{
	return p->n_shards;
}

int st_convert_plan_keeps_shards(const st_convert_plan *p)
{
	return p->keeps_shards;
}

size_t st_convert_plan_file_order(const st_convert_plan *p, size_t k)
{
	ST__REQUIRE(k < st_checkpoint_n_files(p->c));
	return p->order ? p->order[k] : k;
}

long st_convert_plan_file_shard(const st_convert_plan *p, size_t f)
{
	ST__REQUIRE(f < st_checkpoint_n_files(p->c));
	return p->keeps_shards ? p->file_shard[f] : -1;
}
