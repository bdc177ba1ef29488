/*
 * diff.c - two checkpoints compared (see st/diff.h): names paired, pairs
 * planned, metadata diffed, and the value pass on st_stream_run with
 * st_compare_chunk. The GGUF side is diff_gguf.c.
 */
#include "internal.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The mean's sum: block sums (compare.h) are added within groups of
 * SUM_GROUP_BYTES of the wider side, and the group sums in order. The
 * order of additions is fixed by this grouping, not by the chunks read,
 * which is why the figures did not move when the chunks shrank from
 * this size to ST_DIFF_CHUNK_BYTES. It must be a multiple of it.
 */
#define SUM_GROUP_BYTES ((size_t)4 << 20)
/* Block sums a chunk can hold: two elements a byte at most (F4). */
#define MAX_BLOCKS (2 * ST_DIFF_CHUNK_BYTES / ST_COMPARE_BLOCK + 1)
_Static_assert(SUM_GROUP_BYTES % ST_DIFF_CHUNK_BYTES == 0,
               "a sum group must be whole chunks");
/*
 * A dequantized chunk: a pair with a quantized side costs the wider of
 * the other side's element and the dequantized one, so a chunk's
 * dequantized elements fit in ST_DIFF_CHUNK_BYTES.
 */
#define DQ_BUF_BYTES ST_DIFF_CHUNK_BYTES

/* ---- names ---------------------------------------------------------------- */

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
	int r = memcmp(a, b, la < lb ? la : lb);
	if (r)
		return r;
	return la < lb ? -1 : la > lb;
}

static int cmp_entry(const void *x, const void *y)
{
	const st_diff_tensor *a = x, *b = y;
	return cmp_bytes(a->key, a->key_len, b->key, b->key_len);
}

int st_diff_name_selected(const char *const *globs, size_t n_globs,
                          const char *name, size_t len)
{
	if (!n_globs)
		return 1;
	/* fnmatch sees a C string: the name is copied with its NUL. */
	char buf[1024];
	char *s = len < sizeof buf ? buf : malloc(len + 1);
	if (!s)
		return -1;
	memcpy(s, name, len);
	s[len] = 0;
	int hit = 0;
	for (size_t i = 0; !hit && i < n_globs; i++)
		hit = fnmatch(globs[i], s, 0) == 0;
	if (s != buf)
		free(s);
	return hit;
}

/*
 * The tensors of side s of d, keyed, filtered and sorted. q: the side's
 * quantization plan when it is compared dequantized (else NULL): its
 * scales are left out and an MXFP4 NAME_blocks stands as NAME, described
 * by d->virt_[i].
 */
static int side_entries(st_diff *d, int s, const st_diff_opts *o,
                        const st_quant_plan *q, st_error *err)
{
	st_checkpoint *c = s ? d->cb : d->ca;
	size_t n = st_checkpoint_n_tensors(c), m = 0;
	st_diff_tensor *e = malloc((n ? n : 1) * sizeof *e);
	if (!e)
		return st__error(err, ST_ENOMEM, "out of memory");
	*(s ? &d->tb : &d->ta) = e;
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		const st_quant_tensor *dq =
			q && q->t[i].role != ST_QUANT_ROLE_PLAIN ? &q->t[i] : NULL;
		if (dq && dq->role == ST_QUANT_ROLE_SCALE)
			continue; /* folded into its weight */
		if (dq && dq->role == ST_QUANT_ROLE_MXFP4) {
			d->virt_[i] = (st_tensor){.name = dq->out_name,
			                          .name_len = dq->out_name_len,
			                          .dtype = ST_DTYPE_F4, .ndim = 3,
			                          .shape = dq->out_shape,
			                          .n_elements = dq->n_out};
			t = &d->virt_[i];
		}
		const char *key = t->name;
		size_t len = t->name_len;
		for (size_t j = 0; j < o->n_prefixes; j++) {
			size_t pl = strlen(o->prefixes[j]);
			if (len >= pl && memcmp(key, o->prefixes[j], pl) == 0) {
				key += pl;
				len -= pl;
				break;
			}
		}
		int sel = st_diff_name_selected(o->globs, o->n_globs, key, len);
		if (sel < 0)
			return st__error(err, ST_ENOMEM, "out of memory");
		if (!sel)
			continue;
		e[m++] = (st_diff_tensor){key, len, i, t, dq};
	}
	qsort(e, m, sizeof *e, cmp_entry);
	*(s ? &d->n_tb : &d->n_ta) = m;
	for (size_t i = 1; i < m; i++) {
		if (cmp_entry(&e[i - 1], &e[i]) == 0) {
			d->clash_side = s;
			d->clash[0] = e[i - 1];
			d->clash[1] = e[i];
			return st__error(err, ST_EINVAL,
			                 "tensors '%.*s' and '%.*s' have the same name "
			                 "once a prefix is stripped",
			                 (int)e[i - 1].t->name_len, e[i - 1].t->name,
			                 (int)e[i].t->name_len, e[i].t->name);
		}
	}
	return ST_OK;
}

static bool same_shape(const st_tensor *a, const st_tensor *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (unsigned k = 0; k < a->ndim; k++)
		if (a->shape[k] != b->shape[k])
			return false;
	return true;
}

/* ---- __metadata__ --------------------------------------------------------- */

/* An entry and its position, so qsort can keep the first of equal keys. */
struct meta_pos {
	const st_meta *m;
	size_t pos;
};

static int cmp_meta(const st_meta *a, const st_meta *b)
{
	return cmp_bytes(a->key, a->key_len, b->key, b->key_len);
}

static int cmp_meta_pos(const void *x, const void *y)
{
	const struct meta_pos *a = x, *b = y;
	int r = cmp_meta(a->m, b->m);
	return r ? r : (a->pos > b->pos) - (a->pos < b->pos);
}

/* Every file's entries of c, sorted by key, the first of a key kept. */
static const st_meta **collect_meta(st_checkpoint *c, size_t *n_out)
{
	size_t total = 0, n = 0, m = 0;
	for (size_t f = 0; f < st_checkpoint_n_files(c); f++)
		total += st_file_n_meta(st_checkpoint_file(c, f));
	struct meta_pos *all = malloc((total ? total : 1) * sizeof *all);
	const st_meta **l = malloc((total ? total : 1) * sizeof *l);
	if (!all || !l) {
		free(all);
		free(l);
		return NULL;
	}
	for (size_t f = 0; f < st_checkpoint_n_files(c); f++) {
		st_file *file = st_checkpoint_file(c, f);
		for (size_t i = 0; i < st_file_n_meta(file); i++, n++)
			all[n] = (struct meta_pos){st_file_meta(file, i), n};
	}
	qsort(all, n, sizeof *all, cmp_meta_pos);
	for (size_t i = 0; i < n; i++)
		if (m == 0 || cmp_meta(l[m - 1], all[i].m) != 0)
			l[m++] = all[i].m;
	free(all);
	*n_out = m;
	return l;
}

/* Metadata keys on one side only, or with different values, into d. */
static int diff_meta(st_diff *d, st_error *err)
{
	size_t na = 0, nb = 0, i = 0, j = 0;
	const st_meta **ma = collect_meta(d->ca, &na), **mb = collect_meta(d->cb, &nb);
	d->meta = malloc((na + nb ? na + nb : 1) * sizeof *d->meta);
	if (!ma || !mb || !d->meta) {
		free(ma);
		free(mb);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : cmp_meta(ma[i], mb[j]);
		if (c < 0) {
			d->meta[d->n_meta++] = (st_diff_meta){ma[i++], NULL};
		} else if (c > 0) {
			d->meta[d->n_meta++] = (st_diff_meta){NULL, mb[j++]};
		} else {
			if (cmp_bytes(ma[i]->value, ma[i]->value_len, mb[j]->value,
			              mb[j]->value_len) != 0)
				d->meta[d->n_meta++] = (st_diff_meta){ma[i], mb[j]};
			i++;
			j++;
		}
	}
	free(ma);
	free(mb);
	return ST_OK;
}

/* ---- a quantized side ----------------------------------------------------- */

/* Whether c has scale tensors (st_quant_is_scale): it is quantized. */
static bool has_scales(st_checkpoint *c)
{
	for (size_t i = 0; i < st_checkpoint_n_tensors(c); i++)
		if (st_quant_is_scale(st_checkpoint_tensor(c, i, NULL)))
			return true;
	return false;
}

/*
 * The rounding error of a quantized weight's element format, in units of
 * its scale: a value y = x / s within the format's range rounds to q with
 * |y - q| <= r |y| + h, r half the spacing relative to a normal value
 * (2^-(mantissa bits + 1)) and h half the subnormal spacing. MXFP4's E2M1
 * also covers its saturation: a block's largest y is below 8 (its scale
 * is the power of two under amax / 4), and 6 is within y / 4 of it.
 */
static void format_step(const st_quant_tensor *q, double *r, double *h)
{
	*r = 0x1p-4; /* F8_E4M3: 3 mantissa bits, subnormals 2^-9 apart */
	*h = 0x1p-10;
	if (q->role == ST_QUANT_ROLE_MXFP4) {
		*r = 0x1p-2; /* 1 mantissa bit, subnormal 0.5 */
		*h = 0x1p-2;
	} else if (q->fp8.weight_type == ST_DTYPE_F8_E5M2) {
		*r = 0x1p-3;
		*h = 0x1p-17;
	} else if (q->fp8.weight_type == ST_DTYPE_F8_E4M3FNUZ) {
		*h = 0x1p-11;
	} else if (q->fp8.weight_type == ST_DTYPE_F8_E5M2FNUZ) {
		*r = 0x1p-3;
		*h = 0x1p-18;
	}
}

/* The largest finite |scale| of a quantized weight (0 for none); its
 * scale tensor is sc, mapped at q->scale_data. */
static double largest_scale(const st_quant_tensor *q, const st_tensor *sc)
{
	const unsigned char *s = q->scale_data;
	double m = 0;
	if (!s)
		return 0;
	if (q->role == ST_QUANT_ROLE_MXFP4) {
		for (uint64_t i = 0; i < sc->n_elements; i++)
			if (s[i] != 255 && ldexp(1, (int)s[i] - 127) > m)
				m = ldexp(1, (int)s[i] - 127);
		return m;
	}
	float buf[256];
	size_t es = st_dtype_bits(sc->dtype) / 8;
	for (uint64_t i = 0; i < sc->n_elements; i += 256) {
		size_t k = sc->n_elements - i < 256 ? (size_t)(sc->n_elements - i) : 256;
		if (st_convert(ST_DTYPE_F32, buf, sc->dtype, s + i * es, k, NULL) != ST_OK)
			return 0;
		for (size_t j = 0; j < k; j++)
			if (isfinite(buf[j]) && fabs((double)buf[j]) > m)
				m = fabs((double)buf[j]);
	}
	return m;
}

/*
 * The tolerances not given of a pair with a quantized side, from its
 * format (doc/format.md, "Comparing a quantized side"): with
 * |x - q| <= r |x| + h s for the plain value x, its quantization q and the
 * tensor's largest scale s, the reference b of |a - b| <= atol + rtol |b|
 * is x when A is quantized (rtol r, atol h s) and q when B is, which
 * gives rtol r / (1 - r) and atol h s / (1 - r). The dtypes' defaults are
 * added for the rounding of the products and of the plain side.
 */
static void quant_tolerance(const st_diff_opts *o, st_diff_pair *p, const st_tensor *sc)
{
	double r, h;
	format_step(p->dq, &r, &h);
	double s = largest_scale(p->dq, sc), k = p->dq_b ? 1 / (1 - r) : 1;
	if (!o->rtol)
		p->spec.rtol += r * k;
	if (!o->atol)
		p->spec.atol += h * s * k;
	p->q_tol = !o->rtol && !o->atol;
}

/* ---- planning ------------------------------------------------------------- */

/* Set what the value pass does with a common tensor (qc: the quantized
 * side's checkpoint, or NULL). */
static void plan_pair(const st_diff_opts *o, st_checkpoint *qc, st_diff_pair *p)
{
	st_dtype ta = p->a->t->dtype, tb = p->b->t->dtype;
	enum st_compare_kind ka = st_compare_kind(ta), kb = st_compare_kind(tb);
	p->same_shape = same_shape(p->a->t, p->b->t);
	p->same_dtype = ta == tb;
	p->comparable = p->same_dtype || (ka != ST_COMPARE_RAW && kb != ST_COMPARE_RAW);
	p->compared = !o->names_only && p->same_shape && p->comparable;
	p->has_stats = ka != ST_COMPARE_RAW;
	const st_diff_tensor *qe = p->a->dq ? p->a : p->b->dq ? p->b : NULL;
	if (qe) {
		/* A quantized weight against a plain tensor: its values are
		 * dequantized in F32 (the product dequantization rounds once),
		 * to F64 against F64, to the other side's dtype with exact
		 * (bits against bits); the other side must hold floats. */
		st_dtype other = qe == p->a ? tb : ta;
		p->dq = qe->dq;
		p->dq_b = qe == p->b;
		p->dq_to = other == ST_DTYPE_F64 ? ST_DTYPE_F64
		           : o->exact && st_compare_kind(other) == ST_COMPARE_FLOAT ? other
		                                                              : ST_DTYPE_F32;
		p->comparable = st_compare_kind(other) == ST_COMPARE_FLOAT;
		p->compared = !o->names_only && p->same_shape && p->comparable;
		p->has_stats = true;
		if (p->dq_b)
			tb = p->dq_to;
		else
			ta = p->dq_to;
	}
	st_compare_spec_init(&p->spec, ta, tb, o->exact, o->rtol, o->atol);
	if (p->dq && qc && !o->exact && (!o->rtol || !o->atol))
		quant_tolerance(o, p, st_checkpoint_tensor(qc, p->dq->scale, NULL));
	st_compare_stats_init(&p->st);
}

/* d's counts and equal, from its pairs as they stand (names_only: from
 * shapes and dtypes alone). */
static void tally(st_diff *d)
{
	d->equal = d->n_only_a == 0 && d->n_only_b == 0;
	d->n_identical = d->n_within = d->n_differ = d->n_shape = d->n_dtype = 0;
	for (size_t i = 0; i < d->n_pairs; i++) {
		const st_diff_pair *p = &d->pairs[i];
		if (!p->same_shape)
			d->n_shape++;
		else if (!p->same_dtype)
			d->n_dtype++;
		if (d->names_only) {
			if (!p->same_shape || !p->comparable || (d->exact && !p->same_dtype))
				d->equal = false;
			continue;
		}
		if (p->differs)
			d->equal = false;
		if (!p->compared)
			continue;
		if (p->verdict == ST_DIFF_IDENTICAL)
			d->n_identical++;
		else if (p->differs)
			d->n_differ++;
		else
			d->n_within++;
	}
}

/* ---- the value pass ------------------------------------------------------- */

/* How a compared pair is streamed. */
struct plan {
	st_stream_item item;
	unsigned g_elems;     /* elements per group (both sides) */
	uint64_t group_elems; /* elements per sum group */
};

static void plan_item(const st_diff_pair *p, struct plan *pl)
{
	unsigned ga, gb, ea, eb, cost = 0;
	st_dtype_group(p->a->t->dtype, &ga, &ea);
	st_dtype_group(p->b->t->dtype, &gb, &eb);
	if (p->dq) {
		/* The other side is a wide float: one element a group. FP8
		 * codes are read (a byte each); MXFP4 is read by st_quant_range
		 * through its mapping. */
		unsigned q = p->dq->role == ST_QUANT_ROLE_FP8 ? 1 : 0;
		unsigned w = st_dtype_bits(p->dq_to) / 8, other = p->dq_b ? ga : gb;
		ga = p->dq_b ? ga : q;
		gb = p->dq_b ? q : gb;
		ea = 1;
		cost = w > other ? w : other;
	}
	pl->g_elems = ea; /* equal: same dtype, or both byte-aligned */
	pl->group_elems = SUM_GROUP_BYTES / (cost ? cost : ga > gb ? ga : gb) * ea;
	pl->item = (st_stream_item){{p->a->index, p->b->index},
	                            p->a->t->n_elements / ea, {ga, gb}, cost};
}

/* A pair's state during the pass. */
struct run_pair {
	st_diff_pair *p;
	struct plan pl;
	double sum_abs, group_sum; /* block sums, by sum group */
	uint64_t done;             /* elements merged so far */
};

struct run {
	struct run_pair *rp; /* per stream item */
	const st_diff_opts *o;
};

/* A chunk's result, from work to sink. */
struct chunk_result {
	st_compare_stats st;
	uint64_t elems;
	double sums[MAX_BLOCKS];
};

static int diff_work(void *ctx, const st_stream_chunk *c, st_error *err)
{
	(void)err;
	struct run *r = ctx;
	const st_stream_piece *pc = &c->pieces[0]; /* not packed: one piece */
	const struct run_pair *rp = &r->rp[pc->item];
	const st_diff_pair *p = rp->p;
	struct chunk_result *res = c->out;
	st_compare_stats_init(&res->st);
	res->elems = pc->n_groups * rp->pl.g_elems;
	memset(res->sums, 0, sizeof res->sums);
	const unsigned char *a = pc->data[0], *b = pc->data[1];
	if (p->dq) {
		/* The quantized side's elements, dequantized, in the scratch
		 * after st_compare_chunk's (DQ_BUF_BYTES, then st_quant_range's). */
		unsigned char *deq = (unsigned char *)c->scratch + ST_COMPARE_SCRATCH_BYTES;
		st_quant_range(p->dq, p->dq_to, deq, p->dq_b ? b : a, pc->group,
		               pc->n_groups, deq + DQ_BUF_BYTES);
		if (p->dq_b)
			b = deq;
		else
			a = deq;
	}
	st_compare_chunk(&p->spec, a, b, pc->n_groups, pc->group * rp->pl.g_elems,
	                 c->scratch, &res->st, res->sums);
	return 0;
}

/* In chunk order: the sums behind the mean are added in a fixed order. */
static int diff_sink(void *ctx, const st_stream_chunk *c, st_error *err)
{
	(void)err;
	struct run *r = ctx;
	struct run_pair *rp = &r->rp[c->pieces[0].item];
	const struct chunk_result *res = c->out;
	st_compare_stats_merge(&rp->p->st, &res->st);
	uint64_t nb = (res->elems + ST_COMPARE_BLOCK - 1) / ST_COMPARE_BLOCK;
	for (uint64_t j = 0; j < nb; j++)
		rp->group_sum += res->sums[j];
	rp->done += res->elems;
	if (rp->done % rp->pl.group_elems == 0 || rp->done == rp->p->a->t->n_elements) {
		rp->sum_abs += rp->group_sum;
		rp->group_sum = 0;
	}
	return 0;
}

static void diff_progress(void *ctx, const st_stream_chunk *c, uint64_t bytes)
{
	(void)c;
	const struct run *r = ctx;
	r->o->progress(r->o->ctx, bytes);
}

/* ---- tied aliases --------------------------------------------------------- */

/* The pair of entry e of side s, or NULL. */
static const st_diff_pair *pair_of(const st_diff *d, int s, const st_diff_tensor *e)
{
	if (!s)
		return d->a_pair_[e->index];
	for (size_t i = 0; i < d->n_pairs; i++)
		if (d->pairs[i].b == e)
			return &d->pairs[i];
	return NULL;
}

/*
 * The entry of side s that tensor t (only on that side) is a PyTorch
 * alias of (st_file_alias_of: the same storage, offset, shape and
 * strides), when that one is paired with the other side; else NULL.
 */
static const st_diff_tensor *alias_target(const st_diff *d, int s, const st_diff_tensor *t)
{
	st_checkpoint *c = s ? d->cb : d->ca;
	size_t f, n = s ? d->n_tb : d->n_ta;
	const st_tensor *tt = st_checkpoint_tensor(c, t->index, &f);
	st_file *file = st_checkpoint_file(c, f);
	long self = st_file_find(file, tt->name, tt->name_len);
	long of = self < 0 ? -1 : st_file_alias_of(file, (size_t)self);
	if (of < 0)
		return NULL;
	const st_tensor *ot = st_file_tensor(file, (size_t)of);
	long ci = st_checkpoint_find(c, ot->name, ot->name_len);
	const st_diff_tensor *e = s ? d->tb : d->ta;
	for (size_t i = 0; ci >= 0 && i < n; i++)
		if (e[i].index == (size_t)ci)
			return pair_of(d, s, &e[i]) ? &e[i] : NULL;
	return NULL;
}

/* Take the tied aliases out of only_a and only_b into d->tied. */
static int find_tied(st_diff *d, st_error *err)
{
	size_t n = d->n_only_a + d->n_only_b;
	d->tied = malloc((n ? n : 1) * sizeof *d->tied);
	if (!d->tied)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (int s = 0; s < 2; s++) {
		const st_diff_tensor **l = s ? d->only_b : d->only_a;
		size_t *nl = s ? &d->n_only_b : &d->n_only_a, m = 0;
		for (size_t i = 0; i < *nl; i++) {
			const st_diff_tensor *of = alias_target(d, s, l[i]);
			if (!of) {
				l[m++] = l[i];
				continue;
			}
			d->tied[d->n_tied++] = (struct st_diff_tied){l[i], of, s};
			if (!s)
				d->a_only_[l[i]->index] = 0; /* --first walks past it */
		}
		*nl = m;
	}
	return ST_OK;
}

int st_diff_match(st_diff *d, st_checkpoint *ca, st_checkpoint *cb,
                  const st_diff_opts *o, st_error *err)
{
	memset(d, 0, sizeof *d);
	d->ca = ca;
	d->cb = cb;
	d->exact = o->exact;
	d->names_only = o->names_only;
	d->quant_side = d->clash_side = -1;
	bool qa = has_scales(ca), qb = has_scales(cb);
	int rc;
	if (qa != qb) {
		st_checkpoint *c = qa ? ca : cb;
		uint64_t b0, b1;
		if ((rc = st_config_read_block_size(st_checkpoint_dir(c), &b0, &b1, NULL, err)) != ST_OK ||
		    (rc = st_quant_plan_build(&d->quant, c, b0, b1, err)) != ST_OK)
			return rc;
		d->quant_side = qa ? 0 : 1;
		d->virt_ = calloc(d->quant.n ? d->quant.n : 1, sizeof *d->virt_);
		if (!d->virt_)
			return st__error(err, ST_ENOMEM, "out of memory");
	}
	const st_quant_plan *q = d->quant_side >= 0 ? &d->quant : NULL;
	if ((rc = side_entries(d, 0, o, d->quant_side == 0 ? q : NULL, err)) != ST_OK ||
	    (rc = side_entries(d, 1, o, d->quant_side == 1 ? q : NULL, err)) != ST_OK)
		return rc;
	size_t na = d->n_ta, nb = d->n_tb, nca = st_checkpoint_n_tensors(ca);
	d->only_a = malloc((na ? na : 1) * sizeof *d->only_a);
	d->only_b = malloc((nb ? nb : 1) * sizeof *d->only_b);
	d->pairs = calloc(na < nb ? (na ? na : 1) : (nb ? nb : 1), sizeof *d->pairs);
	d->a_pair_ = calloc(nca ? nca : 1, sizeof *d->a_pair_);
	d->a_only_ = calloc(nca ? nca : 1, 1);
	if (!d->only_a || !d->only_b || !d->pairs || !d->a_pair_ || !d->a_only_)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0, j = 0; i < na || j < nb;) {
		int c = i == na ? 1 : j == nb ? -1 : cmp_entry(&d->ta[i], &d->tb[j]);
		if (c < 0) {
			d->a_only_[d->ta[i].index] = 1;
			d->only_a[d->n_only_a++] = &d->ta[i++];
		} else if (c > 0) {
			d->only_b[d->n_only_b++] = &d->tb[j++];
		} else {
			st_diff_pair *p = &d->pairs[d->n_pairs++];
			p->a = &d->ta[i++];
			p->b = &d->tb[j++];
			plan_pair(o, d->quant_side == 1 ? cb : d->quant_side == 0 ? ca : NULL, p);
			p->differs = !p->compared; /* until the values say */
			d->a_pair_[p->a->index] = p;
			if (p->compared) {
				struct plan pl;
				plan_item(p, &pl);
				d->value_bytes += pl.item.n_groups *
				                  (pl.item.group_bytes[0] + pl.item.group_bytes[1]);
			}
		}
	}
	if ((rc = find_tied(d, err)) != ST_OK || (rc = diff_meta(d, err)) != ST_OK)
		return rc;
	tally(d);
	return ST_OK;
}

/* ---- verdicts ------------------------------------------------------------- */

static bool pair_differs(const st_diff_pair *p, bool exact)
{
	if (!p->same_shape || !p->compared)
		return true;
	if (exact && !p->same_dtype && !p->dq)
		return true;
	return p->st.mismatched != 0;
}

/*
 * Whether pair p, of a comparison with a quantized side (B when dq_b),
 * has the other side hold the quantized side's values in its own dtype,
 * bit for bit: a dequantized weight rounded once, a plain tensor the same
 * bytes or (not exact) rounded or widened from the quantized side's.
 */
static bool pair_faithful(const st_diff_pair *p, bool exact, bool dq_b)
{
	if (!p->compared || p->differs)
		return false;
	if (p->dq)
		return p->dq_exact;
	if (p->same_dtype)
		return p->st.identical;
	if (exact || !p->spec.check_rounded)
		return false;
	/* Narrowed from the quantized side: rounded; widened: every value
	 * equal (no element noted as a different value). */
	if (p->spec.a_is_wide == !dq_b)
		return p->st.rounded;
	return p->st.worst_rank < 1 && !p->st.nan_mismatch;
}

/* The pair's figures and verdict from its merged stats. */
static void pair_verdict(st_diff_pair *p, bool exact)
{
	p->differs = pair_differs(p, exact);
	p->dq_exact = p->dq && (p->spec.check_rounded ? p->st.rounded : p->st.identical);
	p->verdict = !p->compared ? ST_DIFF_NOT_COMPARED
	             : p->st.identical && p->same_dtype ? ST_DIFF_IDENTICAL
	             : p->differs ? ST_DIFF_DIFFERENT
	             : p->dq ? (p->dq_exact ? ST_DIFF_DEQUANTIZED : ST_DIFF_WITHIN)
	             : p->spec.check_rounded && p->st.rounded ? ST_DIFF_ROUNDED
	                                                      : ST_DIFF_WITHIN;
}

/*
 * "B is exactly A dequantized to BF16": nothing only on one side, every
 * tensor compared and faithful, one of them dequantized. The dtypes the
 * dequantized weights were rounded to go to d->dq_to.
 */
static void dq_verdict(st_diff *d)
{
	bool ok = !d->names_only && !d->n_only_a && !d->n_only_b;
	bool to[ST_DTYPE_COUNT] = {false};
	for (size_t i = 0; ok && i < d->n_pairs; i++) {
		const st_diff_pair *p = &d->pairs[i];
		ok = pair_faithful(p, d->exact, d->quant_side == 1);
		if (ok && p->dq)
			to[p->dq_b ? p->a->t->dtype : p->b->t->dtype] = true;
	}
	size_t len = 0;
	d->dq_to[0] = 0;
	for (int k = 0; ok && k < ST_DTYPE_COUNT; k++)
		if (to[k])
			len += (size_t)snprintf(d->dq_to + len, sizeof d->dq_to - len, "%s%s",
			                        len ? " and " : "", st_dtype_name((st_dtype)k));
	d->dq_exact = ok && len;
}

/*
 * The input of one block row of the plain side above which the
 * requantization check is not made: the quantizer needs a block row whole
 * (a per-tensor scale: the tensor), and this bounds the memory it takes.
 */
#define REQUANT_MAX_BYTES ((uint64_t)256 << 20)

/* The buffers of requant_check. */
struct requant_buf {
	unsigned char *in, *codes, *stored;
	float *scales;
};

/*
 * Block row [r0, r0 + n) of pair p (rows of all experts counted) quantized
 * again from the plain side: 1 when it gives the quantized side's codes
 * and scales, 0 when not, or the read error.
 */
static int requant_rows(st_diff *d, const st_diff_pair *p, const st_quant_fp8 *l,
                        struct requant_buf *b, uint64_t r0, uint64_t n, st_error *err)
{
	const st_diff_tensor *plain = p->dq_b ? p->a : p->b, *qt = p->dq_b ? p->b : p->a;
	st_dtype src = plain->t->dtype;
	uint64_t es = st_dtype_bits(src) / 8, cols = l->cols;
	int rc = st_checkpoint_read(p->dq_b ? d->ca : d->cb, plain->index, r0 * cols * es, b->in,
	                            (size_t)(n * cols * es), err);
	if (rc == ST_OK)
		rc = st_checkpoint_read(p->dq_b ? d->cb : d->ca, qt->index, r0 * cols, b->stored,
		                        (size_t)(n * cols), err);
	if (rc != ST_OK)
		return rc;
	if (st_quant_fp8_quantize(l, b->codes, b->scales, src, b->in, r0, r0 + n) != ST_OK)
		return 0;
	uint64_t si = r0 / l->rows * l->scale_rows + r0 % l->rows / l->block_rows;
	return memcmp(b->codes, b->stored, (size_t)(n * cols)) == 0 &&
	       memcmp(b->scales, p->dq->scale_data + si * l->scale_cols * 4,
	              (size_t)l->scale_cols * 4) == 0;
}

/*
 * Whether B's weight of pair p is A's quantized by st_quant_fp8_quantize
 * with B's blocks (per channel and per tensor are blocks too): the same
 * codes and the same F32 scales, bit for bit. Made for an FP8 weight with
 * F32 scales in B against a wide float in A, not A dequantized already
 * and not exact; sets q_checked and q_exact. With the format's tolerance
 * (q_tol) a weight that is not A's quantization differs, and one outside
 * it is none (no read).
 * Returns ST_OK or the read error.
 */
static int requant_check(st_diff *d, st_diff_pair *p, st_error *err)
{
	const st_quant_tensor *q = p->dq;
	const st_tensor *plain = p->dq_b ? p->a->t : p->b->t;
	if (!q || !p->dq_b || q->role != ST_QUANT_ROLE_FP8 || q->fp8.scale_type != ST_DTYPE_F32 ||
	    !p->compared || p->dq_exact || p->spec.exact || !st_dtype_is_wide_float(plain->dtype))
		return ST_OK;
	if (p->differs && p->q_tol) {
		/* Outside the format's tolerance: no quantization of A, which
		 * is within it (doc/format.md). */
		p->q_checked = true;
		return ST_OK;
	}
	const st_quant_fp8 *g = &q->fp8;
	st_quant_fp8 l;
	if (st_quant_fp8_block(&l, g->experts, g->rows, g->cols, g->block_rows, g->block_cols) != ST_OK)
		return ST_OK;
	l.weight_type = g->weight_type;
	uint64_t rows = l.block_rows < l.rows ? l.block_rows : l.rows;
	uint64_t es = st_dtype_bits(plain->dtype) / 8;
	if (l.scale_rows != g->scale_rows || l.scale_cols != g->scale_cols || !q->scale_data ||
	    rows * l.cols > REQUANT_MAX_BYTES / es)
		return ST_OK;
	struct requant_buf b = {malloc(rows * l.cols * es + 1), malloc(rows * l.cols + 1),
	                        malloc(rows * l.cols + 1), malloc(l.scale_cols * 4 + 4)};
	int rc = ST_OK, same = 1;
	if (!b.in || !b.codes || !b.stored || !b.scales)
		rc = st__error(err, ST_ENOMEM, "out of memory");
	for (uint64_t e = 0; rc == ST_OK && same == 1 && e < l.experts; e++)
		for (uint64_t r = 0; same == 1 && r < l.rows; r += l.block_rows) {
			uint64_t n = l.rows - r < l.block_rows ? l.rows - r : l.block_rows;
			same = requant_rows(d, p, &l, &b, e * l.rows + r, n, err);
			if (same < 0 || same > 1)
				rc = same;
		}
	free(b.in);
	free(b.codes);
	free(b.stored);
	free(b.scales);
	if (rc != ST_OK)
		return rc;
	p->q_checked = true;
	p->q_exact = same == 1;
	if (p->q_exact && !p->differs) {
		p->verdict = ST_DIFF_QUANTIZED;
	} else if (!p->q_exact && p->q_tol) {
		/* The format's tolerance admits another quantizer's rounding
		 * and a damaged code or scale alike: by default a weight that
		 * can be checked must be A's quantization. */
		p->differs = true;
		p->verdict = ST_DIFF_DIFFERENT;
	}
	return ST_OK;
}

/*
 * "B is exactly A quantized to F8_E4M3 (128x128 blocks)": nothing only on
 * one side, every quantized weight q_exact, every other tensor the same
 * bytes (or rounded to the quantized side's dtype). The formats go to
 * d->q_to.
 */
static void q_verdict(st_diff *d)
{
	bool ok = !d->names_only && !d->n_only_a && !d->n_only_b;
	size_t len = 0;
	d->q_to[0] = 0;
	for (size_t i = 0; ok && i < d->n_pairs; i++) {
		const st_diff_pair *p = &d->pairs[i];
		if (!p->dq) {
			ok = p->compared && !p->differs &&
			     (p->same_dtype ? p->st.identical : p->spec.check_rounded && p->st.rounded);
			continue;
		}
		ok = p->q_exact && !p->differs;
		char what[64];
		st_diff_quant_format(p->dq, what, sizeof what);
		if (ok && !strstr(d->q_to, what) && len < sizeof d->q_to)
			len += (size_t)snprintf(d->q_to + len, sizeof d->q_to - len, "%s%s",
			                        len ? " and " : "", what);
	}
	d->q_exact = ok && len;
}

char *st_diff_quant_format(const st_quant_tensor *q, char *buf, size_t size)
{
	const st_quant_fp8 *l = &q->fp8;
	if (q->role == ST_QUANT_ROLE_MXFP4)
		snprintf(buf, size, "MXFP4 (blocks of 32)");
	else if (l->kind == ST_QUANT_CHANNEL)
		snprintf(buf, size, "%s (per channel)", st_dtype_name(l->weight_type));
	else if (l->kind == ST_QUANT_TENSOR)
		snprintf(buf, size, "%s (per tensor)", st_dtype_name(l->weight_type));
	else
		snprintf(buf, size, "%s (%llu\xc3\x97%llu blocks)", st_dtype_name(l->weight_type),
		         (unsigned long long)l->block_rows, (unsigned long long)l->block_cols);
	return buf;
}

/* The dtype changes within tolerance, per pair of dtypes (st_diff.dtypes). */
static void dtype_tallies(st_diff *d)
{
	for (size_t i = 0; i < d->n_pairs; i++) {
		const st_diff_pair *p = &d->pairs[i];
		if (!p->compared || p->same_dtype || p->differs)
			continue;
		if (!p->dq) {
			st_diagnose_dtype_add(&d->dtypes, p->a->t->dtype, p->b->t->dtype,
			                      p->spec.check_rounded && p->st.rounded, 1);
			continue;
		}
		const char *la = st_diff_label(p->a), *lb = st_diff_label(p->b);
		size_t k = 0, max = sizeof d->dq_tally / sizeof d->dq_tally[0];
		while (k < d->n_dq_tally &&
		       (strcmp(d->dq_tally[k].a, la) || strcmp(d->dq_tally[k].b, lb)))
			k++;
		if (k == d->n_dq_tally && k < max)
			d->dq_tally[d->n_dq_tally++] = (struct st_diff_dq_tally){.a = la, .b = lb,
			                                                         .dq_b = p->dq_b};
		if (k < d->n_dq_tally) {
			struct st_diff_dq_tally *t = &d->dq_tally[k];
			t->tensors++;
			t->exact += p->dq_exact;
			t->quantized += p->q_exact;
			t->max_abs = fmax(t->max_abs, p->st.max_abs);
			t->max_rel = fmax(t->max_rel, p->st.max_rel);
			t->mean_abs = fmax(t->mean_abs, p->mean_abs);
			t->rtol = fmax(t->rtol, p->spec.rtol);
			t->atol = fmax(t->atol, p->spec.atol);
		}
	}
}

int st_diff_diagnose(st_diff *d, st_diff_pair *p, st_error *err)
{
	if (!p->compared || !p->differs || p->st.mismatched == 0 || p->dq)
		return ST_OK;
	return st_diagnose_checkpoints(d->ca, p->a->index, d->cb, p->b->index,
	                               p->spec.rtol, p->spec.atol, &p->diag, err);
}

int st_diff_values(st_diff *d, const st_diff_opts *o, st_error *err)
{
	if (d->names_only) {
		tally(d);
		return ST_OK;
	}
	struct run r = {calloc(d->n_pairs ? d->n_pairs : 1, sizeof *r.rp), o};
	st_stream_item *items = calloc(d->n_pairs ? d->n_pairs : 1, sizeof *items);
	if (!r.rp || !items) {
		free(r.rp);
		free(items);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	size_t m = 0, dq_row = 0;
	bool any_dq = false;
	for (size_t i = 0; i < d->n_pairs; i++) {
		st_diff_pair *p = &d->pairs[i];
		if (!p->compared)
			continue;
		if (p->dq) {
			any_dq = true;
			if (p->dq->row_len > dq_row)
				dq_row = (size_t)p->dq->row_len;
		}
		st_compare_stats_init(&p->st);
		r.rp[m].p = p;
		plan_item(p, &r.rp[m].pl);
		items[m] = r.rp[m].pl.item;
		m++;
	}
	unsigned nt = o->threads ? o->threads : 1;
	/* The sink only merges, so a finished chunk seldom waits for its
	 * turn: one buffer per thread is enough. */
	st_stream_config cfg = {
		.src = {d->ca, d->cb}, .items = items, .n_items = m,
		.chunk_size = ST_DIFF_CHUNK_BYTES, .threads = nt, .buffers = nt,
		.out_size = sizeof(struct chunk_result),
		.scratch_size = ST_COMPARE_SCRATCH_BYTES +
		                (any_dq ? DQ_BUF_BYTES + ST_QUANT_SCRATCH(dq_row) : 0),
		.work = diff_work, .sink = diff_sink,
		.progress = o->progress ? diff_progress : NULL, .ctx = &r,
	};
	int rc = st_stream_run(&cfg, err);
	for (size_t k = 0; rc == ST_OK && k < m; k++)
		r.rp[k].p->mean_abs = r.rp[k].p->st.n_num ? r.rp[k].sum_abs /
		                      (double)r.rp[k].p->st.n_num : 0;
	free(items);
	free(r.rp);
	if (rc != ST_OK)
		return rc;
	for (size_t i = 0; i < d->n_pairs; i++) {
		pair_verdict(&d->pairs[i], d->exact);
		if ((rc = requant_check(d, &d->pairs[i], err)) != ST_OK)
			return rc;
	}
	tally(d);
	if (d->quant_side >= 0) {
		dq_verdict(d);
		q_verdict(d);
	}
	dtype_tallies(d);
	for (size_t i = 0; o->diagnose && i < d->n_pairs; i++)
		if ((rc = st_diff_diagnose(d, &d->pairs[i], err)) != ST_OK)
			return rc;
	return ST_OK;
}

const char *st_diff_label(const st_diff_tensor *t)
{
	return t->dq && t->dq->role == ST_QUANT_ROLE_MXFP4 ? "MXFP4"
	                                                   : st_dtype_name(t->t->dtype);
}

size_t st_diff_first(const st_diff *d, const size_t *order, size_t n,
                     size_t *walked)
{
	*walked = 0;
	for (size_t k = 0; k < n; k++) {
		bool only;
		const st_diff_pair *p = st_diff_of_a(d, order[k], &only);
		if (!p && !only)
			continue; /* not selected */
		++*walked;
		if (only || !p->same_shape || p->differs)
			return k;
	}
	return n;
}

const st_diff_pair *st_diff_of_a(const st_diff *d, size_t i, bool *only_a)
{
	*only_a = d->a_only_ && d->a_only_[i];
	return d->a_pair_ ? d->a_pair_[i] : NULL;
}

void st_diff_free(st_diff *d)
{
	free(d->ta);
	free(d->tb);
	free(d->only_a);
	free(d->only_b);
	free(d->pairs);
	free(d->meta);
	free(d->a_pair_);
	free(d->a_only_);
	free(d->virt_);
	free(d->tied);
	st_quant_plan_free(&d->quant);
	memset(d, 0, sizeof *d);
}
