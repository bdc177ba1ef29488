/*
 * stdiff.c - compare two checkpoints, structure and values.
 *
 * A and B are any checkpoint PATHs (file, shard index, snapshot directory;
 * single or sharded; any dtypes). stdiff reports tensors only in A, only in
 * B, shape and dtype changes, __metadata__ differences and, for every
 * tensor present in both with the same shape, whether it is bit-identical,
 * its max abs / max rel / mean abs difference, how many elements lie
 * outside the tolerance |a - b| <= atol + rtol * |b|, and the worst element.
 * Across float dtypes it also says whether the narrower side is exactly the
 * wider one rounded (what stconvert --to writes).
 *
 * When one side is quantized (FP8 weights with their scales, MXFP4 blocks
 * with theirs: st_quant_plan_build) and the other is not, the quantized
 * side's weights are compared dequantized, its scales are consumed, and
 * stdiff says whether the other side is exactly it dequantized to its
 * dtype (what stconvert --to bf16 writes).
 *
 * It is not a validator (stinfo --check is). This file is options,
 * matching names, policy and output: the kernels (tolerance, rounding
 * check, NaN rules) are libst's (st/compare.h), and the data is streamed
 * by st_stream_run (st/stream.h), both checkpoints read in lockstep
 * through one handle each, in chunks of 256 KiB, so memory stays bounded
 * whatever their size. Chunk results are merged in chunk order, so the output does not
 * depend on threading.
 */
#include "fe/cli.h"
#include "common/ckpt.h"
#include "common/dequant.h"
#include "common/inventory.h"
#include "common/order.h"
#include "common/gguf_diff.h"
#include <st.h>

#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 8

struct opts {
	double rtol, atol;
	bool have_rtol, have_atol;
	bool exact, names_only, quiet, json, verbose, first;
	bool map_gpt2; /* --map gpt2: a GGUF against a checkpoint */
	int threads;
	const char **globs;
	size_t n_globs;
	const char **prefixes;
	size_t n_prefixes;
};

/* A tensor of one side, under the name it is matched by. */
struct entry {
	const char *key; /* name with the stripped prefix removed */
	size_t key_len;
	size_t idx;      /* index in the checkpoint */
	const st_tensor *t;
	const st_quant_tensor *dq; /* a quantized weight, compared dequantized */
};

/* A tensor present on both sides. */
struct pair {
	const struct entry *a, *b;
	bool same_shape, same_dtype;
	bool comparable; /* same dtype, or neither is ST_COMPARE_RAW */
	bool compared;   /* values compared (comparable, same shape, not --names-only) */
	bool has_stats;  /* abs/rel/mean are meaningful (not ST_COMPARE_RAW) */
	st_compare_spec spec;
	unsigned g_elems; /* elements per group of bytes (st_dtype_group) */
	st_compare_stats st;
	double sum_abs;
	double group_sum;        /* block sums of the current sum group */
	uint64_t group_elems;    /* elements per sum group */
	uint64_t done;           /* elements merged so far */
	st_diagnose_result diag; /* for a pair that differs: the trap, if any */
	/* One side a quantized weight: it is dequantized to dq_to (F32, or
	 * the other side's dtype with --exact, F64 against F64) first. */
	const st_quant_tensor *dq;
	bool dq_b;            /* B is the quantized side */
	st_dtype dq_to;
};

/* ---- the value pass ------------------------------------------------------- */

/*
 * Bytes of the wider side read per chunk: both sides' buffers and the
 * decode buffers stay in L2 while a chunk is compared.
 */
#define CHUNK_BYTES ((size_t)256 << 10)
/*
 * The mean's sum: block sums (compare.h) are added within groups of
 * SUM_GROUP_BYTES of the wider side, and the group sums in order. The
 * order of additions is fixed by this grouping, not by the chunks read,
 * which is why the figures did not move when the chunks shrank from
 * this size to CHUNK_BYTES. It must be a multiple of CHUNK_BYTES.
 */
#define SUM_GROUP_BYTES ((size_t)4 << 20)
/* Block sums a chunk can hold: two elements a byte at most (F4). */
#define MAX_BLOCKS (2 * CHUNK_BYTES / ST_COMPARE_BLOCK + 1)
_Static_assert(SUM_GROUP_BYTES % CHUNK_BYTES == 0,
               "a sum group must be whole chunks");
/*
 * A dequantized chunk: a pair with a quantized side costs the wider of
 * the other side's element and the dequantized one, so a chunk's
 * dequantized elements fit in CHUNK_BYTES.
 */
#define DQ_BUF_BYTES CHUNK_BYTES

struct diff_run {
	struct pair **pairs; /* per stream item */
	cli_progress progress;
};

/* A chunk's result, from work to sink. */
struct chunk_result {
	st_compare_stats st;
	uint64_t elems;
	double sums[MAX_BLOCKS];
};

static int diff_work(void *ctx, const st_stream_chunk *c, st_error *err)
{
	struct diff_run *r = ctx;
	const st_stream_piece *pc = &c->pieces[0]; /* not packed: one piece */
	struct pair *p = r->pairs[pc->item];
	struct chunk_result *res = c->out;
	st_compare_stats_init(&res->st);
	res->elems = pc->n_groups * p->g_elems;
	memset(res->sums, 0, sizeof res->sums);
	const unsigned char *a = pc->data[0], *b = pc->data[1];
	if (p->dq) {
		/* The quantized side's elements, dequantized, in the scratch
		 * after st_compare_chunk's (DQ_BUF_BYTES, then st_quant_range's own). */
		unsigned char *deq = (unsigned char *)c->scratch + ST_COMPARE_SCRATCH_BYTES;
		st_quant_range(p->dq, p->dq_to, deq, p->dq_b ? b : a, pc->group, pc->n_groups,
		         deq + DQ_BUF_BYTES);
		if (p->dq_b)
			b = deq;
		else
			a = deq;
	}
	st_compare_chunk(&p->spec, a, b, pc->n_groups, pc->group * p->g_elems,
	                 c->scratch, &res->st, res->sums);
	return 0;
}

/* In chunk order: the sums behind the mean are added in a fixed order. */
static int diff_sink(void *ctx, const st_stream_chunk *c, st_error *err)
{
	struct diff_run *r = ctx;
	struct pair *p = r->pairs[c->pieces[0].item];
	const struct chunk_result *res = c->out;
	st_compare_stats_merge(&p->st, &res->st);
	uint64_t nb = (res->elems + ST_COMPARE_BLOCK - 1) / ST_COMPARE_BLOCK;
	for (uint64_t j = 0; j < nb; j++)
		p->group_sum += res->sums[j];
	p->done += res->elems;
	if (p->done % p->group_elems == 0 || p->done == p->a->t->n_elements) {
		p->sum_abs += p->group_sum;
		p->group_sum = 0;
	}
	return 0;
}

static void diff_progress(void *ctx, const st_stream_chunk *c, uint64_t bytes)
{
	(void)c;
	cli_progress_add(&((struct diff_run *)ctx)->progress, bytes);
}

/*
 * Compare the values of every pair marked compared, both checkpoints read
 * in lockstep, chunks of CHUNK_BYTES of the wider side. Exits 2 on error.
 */
static void compare_values(const struct opts *o, st_checkpoint *ca,
                           st_checkpoint *cb, struct pair *pairs,
                           size_t n_pairs)
{
	struct diff_run r;
	memset(&r, 0, sizeof r);
	r.pairs = cli_xmalloc(n_pairs * sizeof *r.pairs);
	st_stream_item *items = cli_xcalloc(n_pairs, sizeof *items);
	size_t m = 0;
	uint64_t total_bytes = 0;
	size_t dq_row = 0;
	bool any_dq = false;
	for (size_t i = 0; i < n_pairs; i++) {
		struct pair *p = &pairs[i];
		if (!p->compared)
			continue;
		unsigned ga, gb, ea, eb, cost = 0;
		st_dtype_group(p->a->t->dtype, &ga, &ea);
		st_dtype_group(p->b->t->dtype, &gb, &eb);
		if (p->dq) {
			/* The other side is a wide float: one element a group.
			 * FP8 codes are read (a byte each); MXFP4 is read by
			 * dequant.c through its mapping. */
			unsigned q = p->dq->role == ST_QUANT_ROLE_FP8 ? 1 : 0;
			unsigned w = st_dtype_bits(p->dq_to) / 8, other = p->dq_b ? ga : gb;
			ga = p->dq_b ? ga : q;
			gb = p->dq_b ? q : gb;
			ea = 1;
			cost = w > other ? w : other;
			any_dq = true;
			if (p->dq->row_len > dq_row)
				dq_row = (size_t)p->dq->row_len;
		}
		p->g_elems = ea; /* equal: same dtype, or both byte-aligned */
		st_compare_stats_init(&p->st);
		p->sum_abs = p->group_sum = 0;
		p->done = 0;
		p->group_elems = SUM_GROUP_BYTES / (cost ? cost : ga > gb ? ga : gb) * ea;
		items[m] = (st_stream_item){{p->a->idx, p->b->idx},
		                           p->a->t->n_elements / ea, {ga, gb}, cost};
		r.pairs[m++] = p;
		total_bytes += (uint64_t)items[m - 1].n_groups * (ga + gb);
	}
	if (!o->quiet)
		cli_progress_start(&r.progress, "comparing", total_bytes);
	unsigned nt = (unsigned)(o->threads > 0 ? o->threads
	                                        : cli_default_threads(MAX_THREADS));
	/* The sink only merges, so a finished chunk seldom waits for its
	 * turn: one buffer per thread is enough. */
	st_stream_config cfg = {
		.src = {ca, cb}, .items = items, .n_items = m,
		.chunk_size = CHUNK_BYTES, .threads = nt, .buffers = nt,
		.out_size = sizeof(struct chunk_result),
		.scratch_size = ST_COMPARE_SCRATCH_BYTES +
		                (any_dq ? DQ_BUF_BYTES + ST_QUANT_SCRATCH(dq_row) : 0),
		.work = diff_work, .sink = diff_sink, .progress = diff_progress,
		.ctx = &r,
	};
	st_error err;
	memset(&err, 0, sizeof err);
	int rc = st_stream_run(&cfg, &err);
	cli_progress_done(&r.progress);
	free(items);
	free(r.pairs);
	/* libst's messages name the file and the tensor already. */
	if (rc != ST_OK)
		cli_die(CLI_ERROR, "%s", err.message[0] ? err.message : st_strerror(rc));
}

/* ---- structure ------------------------------------------------------------ */

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
	int r = memcmp(a, b, la < lb ? la : lb);
	if (r)
		return r;
	return la < lb ? -1 : la > lb;
}

static int cmp_entry(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;
	return cmp_bytes(a->key, a->key_len, b->key, b->key_len);
}

static bool selected(const struct opts *o, const char *key)
{
	if (!o->n_globs)
		return true;
	for (size_t i = 0; i < o->n_globs; i++)
		if (fnmatch(o->globs[i], key, 0) == 0)
			return true;
	return false;
}

/*
 * The tensors of one side, keyed, filtered and sorted. Exits 2 on clashes.
 * q: the side's pairs when it is compared dequantized (else NULL): its
 * scales are left out and an MXFP4 NAME_blocks stands as NAME, described
 * by virt[i] (one slot per checkpoint tensor).
 */
static struct entry *side_entries(const struct opts *o, st_checkpoint *c,
                                  const char *path, size_t *n_out,
                                  const st_quant_plan *q, st_tensor *virt)
{
	size_t n = st_checkpoint_n_tensors(c), m = 0;
	struct entry *e = cli_xmalloc((n ? n : 1) * sizeof *e);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		const st_quant_tensor *d = q && q->t[i].role != ST_QUANT_ROLE_PLAIN ? &q->t[i] : NULL;
		if (d && d->role == ST_QUANT_ROLE_SCALE)
			continue; /* folded into its weight */
		if (d && d->role == ST_QUANT_ROLE_MXFP4) {
			virt[i] = (st_tensor){.name = d->out_name, .name_len = d->out_name_len,
			                      .dtype = ST_DTYPE_F4, .ndim = 3,
			                      .shape = d->out_shape, .n_elements = d->n_out};
			t = &virt[i];
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
		if (!selected(o, key))
			continue;
		e[m].key = key;
		e[m].key_len = len;
		e[m].idx = i;
		e[m].t = t;
		e[m].dq = d;
		m++;
	}
	qsort(e, m, sizeof *e, cmp_entry);
	for (size_t i = 1; i < m; i++) {
		if (cmp_entry(&e[i - 1], &e[i]) == 0)
			cli_die(CLI_ERROR,
			        "%s: tensors '%.*s' and '%.*s' have the same name "
			        "after --strip-prefix ('%.*s')",
			        path, (int)e[i - 1].t->name_len, e[i - 1].t->name,
			        (int)e[i].t->name_len, e[i].t->name,
			        (int)e[i].key_len, e[i].key);
	}
	*n_out = m;
	return e;
}

static bool same_shape(const st_tensor *a, const st_tensor *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (unsigned d = 0; d < a->ndim; d++)
		if (a->shape[d] != b->shape[d])
			return false;
	return true;
}

/* __metadata__ of a checkpoint: every file's entries, the first one wins. */
struct meta_list {
	const st_meta **m;
	size_t n;
};

static int cmp_meta(const void *x, const void *y)
{
	const st_meta *a = *(const st_meta *const *)x;
	const st_meta *b = *(const st_meta *const *)y;
	return cmp_bytes(a->key, a->key_len, b->key, b->key_len);
}

/* An entry and its position, so qsort can keep the first of equal keys. */
struct meta_pos {
	const st_meta *m;
	size_t pos;
};

static int cmp_meta_pos(const void *x, const void *y)
{
	const struct meta_pos *a = x, *b = y;
	int r = cmp_meta(&a->m, &b->m);
	return r ? r : (a->pos > b->pos) - (a->pos < b->pos);
}

static void collect_meta(st_checkpoint *c, struct meta_list *l)
{
	size_t total = 0, n = 0;
	for (size_t f = 0; f < st_checkpoint_n_files(c); f++)
		total += st_file_n_meta(st_checkpoint_file(c, f));
	struct meta_pos *all = cli_xmalloc(total * sizeof *all);
	for (size_t f = 0; f < st_checkpoint_n_files(c); f++) {
		st_file *file = st_checkpoint_file(c, f);
		for (size_t i = 0; i < st_file_n_meta(file); i++) {
			all[n].m = st_file_meta(file, i);
			all[n].pos = n;
			n++;
		}
	}
	qsort(all, n, sizeof *all, cmp_meta_pos);
	l->m = cli_xmalloc(n * sizeof *l->m);
	l->n = 0;
	for (size_t i = 0; i < n; i++)
		if (l->n == 0 || cmp_meta(&l->m[l->n - 1], &all[i].m) != 0)
			l->m[l->n++] = all[i].m;
	free(all);
}

/* One differing metadata key; a or b is NULL when absent on that side. */
struct meta_diff {
	const st_meta *a, *b;
};

/* ---- output --------------------------------------------------------------- */

struct result {
	const struct entry **only_a, **only_b;
	size_t n_only_a, n_only_b;
	struct pair *pairs;
	size_t n_pairs;
	struct meta_diff *meta;
	size_t n_meta;
	bool names_only, verbose, exact;
	const st_checkpoint *ca, *cb; /* for their folders' config.json */
	bool equal;
	size_t n_identical, n_within, n_differ, n_shape, n_dtype;
	/* A quantized side (-1: none), its pairs, and whether the other side
	 * is exactly it dequantized (to the dtypes named in dq_to). */
	int dq_side;
	const st_quant_plan *dq;
	bool dq_exact;
	char dq_to[64];
};

/* Dequantized pairs that hold within tolerance, per pair of dtypes. */
struct dq_tally {
	const char *a, *b; /* labels */
	bool dq_b;
	uint64_t tensors, exact;
};
#define DQ_TALLY_MAX 16

/* Metadata keys on one side only, or with different values, into r. */
static void diff_meta(st_checkpoint *ca, st_checkpoint *cb, struct result *r)
{
	struct meta_list ma, mb;
	collect_meta(ca, &ma);
	collect_meta(cb, &mb);
	r->meta = cli_xmalloc((ma.n + mb.n) * sizeof *r->meta);
	size_t i = 0, j = 0;
	while (i < ma.n || j < mb.n) {
		int c = i == ma.n ? 1 : j == mb.n ? -1 : cmp_meta(&ma.m[i], &mb.m[j]);
		if (c < 0) {
			r->meta[r->n_meta++] = (struct meta_diff){ma.m[i++], NULL};
		} else if (c > 0) {
			r->meta[r->n_meta++] = (struct meta_diff){NULL, mb.m[j++]};
		} else {
			if (cmp_bytes(ma.m[i]->value, ma.m[i]->value_len, mb.m[j]->value,
			              mb.m[j]->value_len) != 0)
				r->meta[r->n_meta++] = (struct meta_diff){ma.m[i], mb.m[j]};
			i++;
			j++;
		}
	}
	free(ma.m);
	free(mb.m);
}

static void json_name(const char *s, size_t len)
{
	cli_json_string(stdout, s, len);
}

static void json_shape(const st_tensor *t)
{
	cli_print_dims(stdout, t->shape, t->ndim);
}

/* A metadata value, or null when the key is absent on that side. */
static void json_meta_value(const st_meta *m)
{
	if (m)
		json_name(m->value, m->value_len);
	else
		fputs("null", stdout);
}

/* A statistic, or null for a dtype without them. */
static void json_stat(const char *key, bool have, double v)
{
	printf(", \"%s\": ", key);
	if (have)
		cli_json_double(stdout, v);
	else
		fputs("null", stdout);
}

static double mean_abs(const struct pair *p)
{
	return p->st.n_num ? p->sum_abs / (double)p->st.n_num : 0;
}

static bool pair_differs(const struct pair *p, bool exact)
{
	if (!p->same_shape || !p->compared)
		return true;
	if (exact && !p->same_dtype && !p->dq)
		return true;
	return p->st.mismatched != 0;
}

/*
 * Whether a compared pair with a quantized side holds the dequantized
 * values bit for bit: the other side is them rounded to its dtype (or the
 * same bytes, compared in its dtype).
 */
static bool dq_exactly(const struct pair *p)
{
	return p->spec.check_rounded ? p->st.rounded : p->st.identical;
}

/*
 * Whether pair p, of a comparison with a quantized side (A when !dq_b),
 * has the other side hold the quantized side's values in its own dtype,
 * bit for bit: a dequantized weight rounded once, a plain tensor the same
 * bytes or (not --exact) rounded or widened from the quantized side's.
 */
static bool pair_faithful(const struct pair *p, bool exact, bool dq_b)
{
	if (!p->compared || pair_differs(p, exact))
		return false;
	if (p->dq)
		return dq_exactly(p);
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

/*
 * The trap a differing pair was found to be (diagnose.h), or null:
 * {"kind", "exact", "description"} and the kind's own figures.
 */
static void json_diagnosis(const st_diagnose_result *d)
{
	static const char *const kinds[] = {
		[ST_DIAGNOSE_NEGATED] = "negated", [ST_DIAGNOSE_SCALED] = "scaled",
		[ST_DIAGNOSE_TRANSPOSED] = "transposed", [ST_DIAGNOSE_PERMUTED] = "permuted",
		[ST_DIAGNOSE_REINTERPRETED] = "reinterpreted",
	};
	if (d->kind == ST_DIAGNOSE_NONE) {
		fputs("null", stdout);
		return;
	}
	char buf[512];
	printf("{\"kind\": \"%s\", \"exact\": %s, \"description\": ", kinds[d->kind],
	       d->exact ? "true" : "false");
	st_diagnose_describe(d, buf, sizeof buf);
	json_name(buf, strlen(buf));
	if (d->kind == ST_DIAGNOSE_SCALED) {
		fputs(", \"scale\": ", stdout);
		cli_json_double(stdout, d->scale);
	} else if (d->kind == ST_DIAGNOSE_PERMUTED) {
		printf(", \"block_width\": %llu, \"order\": [", (unsigned long long)d->block_width);
		for (int j = 0; j < d->n_blocks; j++)
			printf("%s%d", j ? ", " : "", d->perm[j] + 1);
		putchar(']');
	} else if (d->kind == ST_DIAGNOSE_REINTERPRETED) {
		printf(", \"read_as\": \"%s\"", st_dtype_name(d->read_as));
	}
	putchar('}');
}

static void print_json(const struct result *r)
{
	printf("{\"equal\": %s,\n \"only_in_a\": [", r->equal ? "true" : "false");
	for (size_t i = 0; i < r->n_only_a; i++) {
		fputs(i ? ", " : "", stdout);
		json_name(r->only_a[i]->t->name, r->only_a[i]->t->name_len);
	}
	fputs("],\n \"only_in_b\": [", stdout);
	for (size_t i = 0; i < r->n_only_b; i++) {
		fputs(i ? ", " : "", stdout);
		json_name(r->only_b[i]->t->name, r->only_b[i]->t->name_len);
	}
	fputs("],\n \"changed\": [", stdout);
	bool first = true;
	for (size_t i = 0; i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		if (p->same_shape && p->same_dtype)
			continue;
		fputs(first ? "\n  " : ",\n  ", stdout);
		first = false;
		fputs("{\"name\": ", stdout);
		json_name(p->a->key, p->a->key_len);
		printf(", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\", \"shape_a\": ",
		       st_dtype_name(p->a->t->dtype), st_dtype_name(p->b->t->dtype));
		json_shape(p->a->t);
		fputs(", \"shape_b\": ", stdout);
		json_shape(p->b->t);
		printf(", \"values_compared\": %s}", p->compared ? "true" : "false");
	}
	fputs(first ? "],\n \"metadata\": [" : "\n ],\n \"metadata\": [", stdout);
	for (size_t i = 0; i < r->n_meta; i++) {
		const struct meta_diff *m = &r->meta[i];
		const st_meta *k = m->a ? m->a : m->b;
		fputs(i ? ",\n  " : "\n  ", stdout);
		fputs("{\"key\": ", stdout);
		json_name(k->key, k->key_len);
		fputs(", \"a\": ", stdout);
		json_meta_value(m->a);
		fputs(", \"b\": ", stdout);
		json_meta_value(m->b);
		putchar('}');
	}
	fputs(r->n_meta ? "\n ],\n \"tensors\": [" : "],\n \"tensors\": [", stdout);
	first = true;
	for (size_t i = 0; i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		if (!p->compared)
			continue;
		fputs(first ? "\n  " : ",\n  ", stdout);
		first = false;
		fputs("{\"name\": ", stdout);
		json_name(p->a->key, p->a->key_len);
		printf(", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\", \"elements\": %llu"
		       ", \"identical\": %s",
		       st_dtype_name(p->a->t->dtype), st_dtype_name(p->b->t->dtype),
		       (unsigned long long)p->a->t->n_elements,
		       p->st.identical && p->same_dtype ? "true" : "false");
		json_stat("max_abs_diff", p->has_stats, p->st.max_abs);
		json_stat("max_rel_diff", p->has_stats, p->st.max_rel);
		json_stat("mean_abs_diff", p->has_stats, mean_abs(p));
		printf(", \"mismatched\": %llu, \"worst_index\": ",
		       (unsigned long long)p->st.mismatched);
		if (p->st.worst_rank >= 0)
			printf("%llu", (unsigned long long)p->st.worst_index);
		else
			fputs("null", stdout);
		fputs(", \"rounded_equal\": ", stdout);
		fputs(!p->spec.check_rounded ? "null" : p->st.rounded ? "true" : "false",
		      stdout);
		printf(", \"nan_equal\": %llu, \"rtol\": ",
		       (unsigned long long)p->st.nan_equal);
		cli_json_double(stdout, p->spec.rtol);
		fputs(", \"atol\": ", stdout);
		cli_json_double(stdout, p->spec.atol);
		fputs(", \"diagnosis\": ", stdout);
		json_diagnosis(&p->diag);
		/* With a quantized side (only): what was dequantized. */
		if (p->dq) {
			const st_tensor *sc = st_checkpoint_tensor(p->dq_b ? r->cb : r->ca,
			                                           p->dq->scale, NULL);
			printf(", \"dequantized\": \"%s\", \"scale\": ", p->dq_b ? "b" : "a");
			json_name(sc->name, sc->name_len);
			printf(", \"exactly_dequantized\": %s", dq_exactly(p) ? "true" : "false");
		} else if (r->dq_side >= 0) {
			fputs(", \"dequantized\": null, \"scale\": null, "
			      "\"exactly_dequantized\": null", stdout);
		}
		putchar('}');
	}
	fputs(first ? "]" : "\n ]", stdout);
	if (r->dq_side < 0) {
		puts("}");
		return;
	}
	printf(",\n \"dequantized\": {\"side\": \"%s\", \"fp8_weights\": %zu, \"mxfp4_weights\": %zu, "
	       "\"scale_tensors\": %zu, \"scale_bytes\": %llu, \"block_size\": "
	       "[%llu, %llu], \"exactly_dequantized_to\": ",
	       r->dq_side ? "b" : "a", r->dq->n_fp8, r->dq->n_mxfp4, r->dq->n_scales,
	       (unsigned long long)r->dq->scale_bytes, (unsigned long long)r->dq->block_rows,
	       (unsigned long long)r->dq->block_cols);
	if (r->dq_exact)
		json_name(r->dq_to, strlen(r->dq_to));
	else
		fputs("null", stdout);
	puts("}}");
}

static void print_name(const char *s, size_t len)
{
	cli_print_name(stdout, s, len);
}

/* A side's dtype in words: MXFP4 for MXFP4 blocks, else the dtype. */
static const char *label(const struct entry *e)
{
	return e->dq && e->dq->role == ST_QUANT_ROLE_MXFP4 ? "MXFP4" : st_dtype_name(e->t->dtype);
}

/* A tally line of dequantized pairs of one dtype pair (like diagnose's). */
static void print_dq_tally(const struct dq_tally *t)
{
	uint64_t within = t->tensors - t->exact;
	printf("%llu tensor%s %s \xe2\x86\x92 %s", (unsigned long long)t->tensors,
	       t->tensors == 1 ? "" : "s", t->a, t->b);
	const char *what = t->dq_b ? "A exactly B dequantized" : "exactly A dequantized";
	if (!within || !t->exact)
		printf(", %s%s\n", t->tensors == 1 ? "" : "all ",
		       within ? "within tolerance" : what);
	else
		printf(": %llu %s, %llu within tolerance\n", (unsigned long long)t->exact,
		       what, (unsigned long long)within);
}

/* A metadata value for a human: quoted, or (absent). */
static void print_meta_value(const st_meta *m)
{
	if (!m) {
		fputs("(absent)", stdout);
		return;
	}
	putchar('"');
	print_name(m->value, m->value_len);
	putchar('"');
}

/* %.4g, with "inf" spelled out. */
static void print_num(double v)
{
	if (isinf(v))
		fputs("inf", stdout);
	else
		printf("%.4g", v);
}

/* The flat C-order index as coordinates: "[3, 17]". */
static void print_coords(const st_tensor *t, uint64_t flat)
{
	uint64_t c[ST_MAX_DIMS];
	for (unsigned d = t->ndim; d-- > 0;) {
		c[d] = t->shape[d] ? flat % t->shape[d] : 0;
		flat = t->shape[d] ? flat / t->shape[d] : 0;
	}
	cli_print_dims(stdout, c, t->ndim);
}

static void print_pair_line(const struct pair *p)
{
	const st_compare_stats *s = &p->st;
	bool ident = s->identical && p->same_dtype;
	const char *status = ident ? "identical"
	                     : s->mismatched ? "differs" : "within tolerance";
	printf("%s: ", status);
	print_name(p->a->key, p->a->key_len);
	if (p->same_dtype)
		printf(" (%s", label(p->a));
	else
		printf(" (%s%s vs %s%s", label(p->a), p->dq && !p->dq_b ? " dequantized" : "",
		       label(p->b), p->dq && p->dq_b ? " dequantized" : "");
	printf(", %llu element%s)", (unsigned long long)p->a->t->n_elements,
	       p->a->t->n_elements == 1 ? "" : "s");
	if (ident) {
		if (s->nan_equal)
			printf(": NaN in both: %llu", (unsigned long long)s->nan_equal);
		putchar('\n');
		return;
	}
	uint64_t n = p->a->t->n_elements;
	printf(": %llu mismatched (%.3g%%)", (unsigned long long)s->mismatched,
	       n ? 100.0 * (double)s->mismatched / (double)n : 0.0);
	if (p->has_stats) {
		fputs(", max abs ", stdout);
		print_num(s->max_abs);
		fputs(", max rel ", stdout);
		print_num(s->max_rel);
		fputs(", mean abs ", stdout);
		print_num(mean_abs(p));
	}
	if (s->worst_rank >= 0) {
		fputs(p->has_stats ? ", worst at " : ", first at ", stdout);
		print_coords(p->a->t, s->worst_index);
	}
	if (s->nan_mismatch)
		printf(", NaN on one side: %llu", (unsigned long long)s->nan_mismatch);
	if (s->nan_equal)
		printf(", NaN in both: %llu", (unsigned long long)s->nan_equal);
	if (p->dq) {
		printf(", %s is %sexactly %s dequantized to %s", p->dq_b ? "A" : "B",
		       dq_exactly(p) ? "" : "not ", p->dq_b ? "B" : "A",
		       st_dtype_name(p->dq_b ? p->a->t->dtype : p->b->t->dtype));
	} else if (p->spec.check_rounded) {
		st_dtype tn = p->spec.a_is_wide ? p->b->t->dtype : p->a->t->dtype;
		printf(", %s is %sexactly %s rounded to %s", p->spec.a_is_wide ? "B" : "A",
		       s->rounded ? "" : "not ", p->spec.a_is_wide ? "A" : "B",
		       st_dtype_name(tn));
	}
	putchar('\n');
	if (p->diag.kind != ST_DIAGNOSE_NONE) {
		char buf[512];
		printf("  %s\n", st_diagnose_describe(&p->diag, buf, sizeof buf));
	}
}

/* A config.json key that differs: one line, like a metadata entry. */
static void print_config_key(void *ctx, const char *key, const char *a,
                             const char *b)
{
	(void)ctx;
	fputs("config.json ", stdout);
	print_name(key, strlen(key));
	fputs(": ", stdout);
	print_name(a ? a : "(absent)", strlen(a ? a : "(absent)"));
	fputs(" -> ", stdout);
	print_name(b ? b : "(absent)", strlen(b ? b : "(absent)"));
	putchar('\n');
}

static void print_human(const struct result *r)
{
	if (r->dq_side >= 0) {
		char what[256];
		st_quant_plan_describe(r->dq, what, sizeof what);
		printf("%s: %s\n", r->dq_side ? "B" : "A", what);
	}
	for (size_t i = 0; i < r->n_only_a; i++) {
		fputs("only in A: ", stdout);
		print_name(r->only_a[i]->t->name, r->only_a[i]->t->name_len);
		putchar('\n');
	}
	for (size_t i = 0; i < r->n_only_b; i++) {
		fputs("only in B: ", stdout);
		print_name(r->only_b[i]->t->name, r->only_b[i]->t->name_len);
		putchar('\n');
	}
	char sa[512], sb[512];
	for (size_t i = 0; i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		if (!p->same_shape) {
			cli_fmt_shape(sa, sizeof sa, p->a->t);
			cli_fmt_shape(sb, sizeof sb, p->b->t);
			fputs("shape changed: ", stdout);
			print_name(p->a->key, p->a->key_len);
			printf(": %s %s -> %s %s\n", label(p->a), sa,
			       label(p->b), sb);
		} else if (!p->same_dtype &&
		           (r->verbose || !p->compared || pair_differs(p, r->exact))) {
			fputs("dtype changed: ", stdout);
			print_name(p->a->key, p->a->key_len);
			printf(": %s -> %s%s\n", label(p->a),
			       label(p->b),
			       p->comparable ? "" : " (values not comparable)");
		} else if (p->dq && !p->comparable && !r->names_only) {
			/* A quantized weight against one of its own dtype, unscaled. */
			fputs("not compared: ", stdout);
			print_name(p->a->key, p->a->key_len);
			printf(": %s%s vs %s%s (values not comparable)\n", label(p->a),
			       p->dq_b ? "" : " dequantized", label(p->b), p->dq_b ? " dequantized" : "");
		}
	}
	/* Snapshots: a changed epsilon or activation changes no tensor. */
	char err[1200];
	int n_config = inventory_config_diff(r->ca, r->cb, print_config_key,
	                                     NULL, err, sizeof err);
	if (n_config < 0)
		cli_warn("%s", err);
	for (size_t i = 0; i < r->n_meta; i++) {
		const struct meta_diff *m = &r->meta[i];
		const st_meta *k = m->a ? m->a : m->b;
		fputs("metadata ", stdout);
		print_name(k->key, k->key_len);
		fputs(": ", stdout);
		print_meta_value(m->a);
		fputs(" -> ", stdout);
		print_meta_value(m->b);
		putchar('\n');
	}
	/*
	 * Without -v only what needs a look: what differs. Dtype changes that
	 * hold A's values (rounded, or within tolerance) are one line per pair
	 * of dtypes.
	 */
	st_diagnose_dtype_tally tally;
	memset(&tally, 0, sizeof tally);
	struct dq_tally dqt[DQ_TALLY_MAX];
	size_t n_dqt = 0;
	for (size_t i = 0; i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		if (!p->compared)
			continue;
		bool differs = pair_differs(p, r->exact);
		if (!r->verbose && !p->same_dtype && !differs && p->dq) {
			size_t k = 0;
			while (k < n_dqt && (strcmp(dqt[k].a, label(p->a)) ||
			                     strcmp(dqt[k].b, label(p->b))))
				k++;
			if (k == n_dqt && n_dqt < DQ_TALLY_MAX)
				dqt[n_dqt++] = (struct dq_tally){label(p->a), label(p->b),
				                                 p->dq_b, 0, 0};
			if (k < n_dqt) {
				dqt[k].tensors++;
				dqt[k].exact += dq_exactly(p);
			}
		} else if (!r->verbose && !p->same_dtype && !differs)
			st_diagnose_dtype_add(&tally, p->a->t->dtype, p->b->t->dtype,
			                      p->spec.check_rounded && p->st.rounded, 1);
		if (r->verbose || differs)
			print_pair_line(p);
	}
	for (size_t i = 0; i < n_dqt; i++)
		print_dq_tally(&dqt[i]);
	for (size_t i = 0; i < tally.n; i++) {
		char buf[160];
		printf("%s\n", st_diagnose_dtype_line(&tally, i, buf, sizeof buf));
	}
	if (r->dq_exact)
		printf("%s is exactly %s dequantized to %s\n", r->dq_side ? "A" : "B",
		       r->dq_side ? "B" : "A", r->dq_to);
	size_t n = r->n_identical + r->n_within + r->n_differ;
	if (r->names_only)
		printf("%zu tensor%s in both", r->n_pairs, r->n_pairs == 1 ? "" : "s");
	else
		printf("%zu tensor%s compared: %zu identical, %zu within tolerance, "
		       "%zu differ",
		       n, n == 1 ? "" : "s", r->n_identical, r->n_within, r->n_differ);
	printf("; %zu only in A, %zu only in B, %zu shape changed, %zu dtype "
	       "changed",
	       r->n_only_a, r->n_only_b, r->n_shape, r->n_dtype);
	if (r->n_meta)
		printf(", %zu metadata differ", r->n_meta);
	if (n_config > 0)
		printf(", %d config.json key%s differ%s", n_config,
		       n_config == 1 ? "" : "s", n_config == 1 ? "s" : "");
	printf(": %s\n", r->equal ? (r->names_only ? "same tensors" : "equal")
	                          : "different");
}

/* ---- traps and the first difference -------------------------------------- */

/* Name the trap (diagnose.h) of every same-shape pair that differs. */
static void diagnose_pairs(st_checkpoint *ca, st_checkpoint *cb,
                           struct result *r, bool exact)
{
	for (size_t i = 0; i < r->n_pairs; i++) {
		struct pair *p = &r->pairs[i];
		if (!p->compared || !pair_differs(p, exact) || p->st.mismatched == 0 ||
		    p->dq)
			continue;
		st_error err;
		memset(&err, 0, sizeof err);
		if (st_diagnose_checkpoints(ca, p->a->idx, cb, p->b->idx, p->spec.rtol,
		                            p->spec.atol, &p->diag, &err) != ST_OK)
			cli_die(CLI_ERROR, "%s", err.message);
	}
}

/*
 * --first: walk A's tensors in recorded order (order.h) and report the
 * first that is missing from B, changed in shape or outside tolerance.
 * Returns the exit code: 1 when there is one, 0 when A's walk ends clean
 * and B has nothing more either.
 */
static int print_first(st_checkpoint *ca, st_checkpoint *cb,
                       const struct result *r, bool quiet)
{
	size_t n = st_checkpoint_n_tensors(ca);
	size_t *idx;
	int recorded = order_tensors(ca, &idx);
	if (recorded < 0)
		cli_die(CLI_ERROR, "out of memory");
	/* A's checkpoint index -> what the diff found for that tensor. */
	const struct pair **pair_of = cli_xcalloc(n ? n : 1, sizeof *pair_of);
	unsigned char *only = cli_xcalloc(n ? n : 1, 1);
	for (size_t i = 0; i < r->n_pairs; i++)
		pair_of[r->pairs[i].a->idx] = &r->pairs[i];
	for (size_t i = 0; i < r->n_only_a; i++)
		only[r->only_a[i]->idx] = 1;
	const char *how = recorded ? "A's recorded order" : "A's file order";
	size_t walked = 0;
	int rc = CLI_OK;
	for (size_t k = 0; k < n && rc == CLI_OK; k++) {
		size_t i = idx[k];
		const struct pair *p = pair_of[i];
		if (!p && !only[i])
			continue; /* not selected by --tensor */
		walked++;
		const st_tensor *t = st_checkpoint_tensor(ca, i, NULL);
		if (only[i] || !p->same_shape || pair_differs(p, r->exact)) {
			rc = CLI_NO;
			if (quiet)
				break;
			printf("first difference: tensor %zu of %zu in %s\n", walked,
			       r->n_only_a + r->n_pairs, how);
			if (only[i]) {
				fputs("only in A: ", stdout);
				print_name(t->name, t->name_len);
				putchar('\n');
			} else if (!p->same_shape) {
				char sa[512], sb[512];
				cli_fmt_shape(sa, sizeof sa, p->a->t);
				cli_fmt_shape(sb, sizeof sb, p->b->t);
				fputs("shape changed: ", stdout);
				print_name(p->a->key, p->a->key_len);
				printf(": %s %s -> %s %s\n", label(p->a),
				       sa, label(p->b), sb);
			} else if (!p->compared) {
				fputs("dtype changed: ", stdout);
				print_name(p->a->key, p->a->key_len);
				printf(": %s -> %s (values not comparable)\n",
				       label(p->a),
				       label(p->b));
			} else {
				struct pair q = *p;
				st_error err;
				memset(&err, 0, sizeof err);
				if (q.st.mismatched && !q.dq &&
				    st_diagnose_checkpoints(ca, q.a->idx, cb, q.b->idx,
				                            q.spec.rtol, q.spec.atol, &q.diag,
				                            &err) != ST_OK)
					cli_die(CLI_ERROR, "%s", err.message);
				print_pair_line(&q);
			}
		}
	}
	if (rc == CLI_OK && r->n_only_b) {
		rc = CLI_NO;
		if (!quiet) {
			printf("first difference: none in A's %zu tensors; only in B: ",
			       walked);
			print_name(r->only_b[0]->t->name, r->only_b[0]->t->name_len);
			printf("%s\n", r->n_only_b > 1 ? " (and others)" : "");
		}
	} else if (rc == CLI_OK && !quiet) {
		printf("no difference: %zu tensors in %s, all within tolerance\n",
		       walked, how);
	}
	free(pair_of);
	free(only);
	free(idx);
	return rc;
}

/* ---- main ----------------------------------------------------------------- */

static void usage(void)
{
	printf(
"Usage: %s [OPTION]... A B\n"
"Compare two checkpoints: structure and values, across layouts and dtypes.\n"
"A and B are each a .safetensors file, a shard index (*.safetensors.index.json)\n"
"or a snapshot directory.\n"
"\n"
"Reports tensors only in A or only in B, shape and dtype changes, metadata\n"
"differences and, for each tensor in both with the same shape: whether it is\n"
"bit-identical, max abs diff, max rel diff (over b != 0), mean abs diff, the\n"
"number of elements outside |a - b| <= atol + rtol * |b|, and the worst element.\n"
"NaN in the same place on both sides is equal; NaN against a number differs.\n"
"When one side is quantized (FP8 weights with *.weight_scale_inv or\n"
"*.weight_scale, MXFP4 NAME_blocks with NAME_scales) and the other is not,\n"
"its weights are compared dequantized (FP8 blocks from config.json), its\n"
"scales are consumed, and stdiff says \"B is exactly A dequantized to BF16\"\n"
"when every tensor of B is A's values rounded to B's dtype, bit for bit.\n"
"\n"
"Options:\n"
"      --rtol X          relative tolerance (default: torch.testing's for the\n"
"                        less precise dtype: F64 1e-7, F32 1.3e-6, F16 1e-3,\n"
"                        BF16 1.6e-2; integers and others 0)\n"
"      --atol X          absolute tolerance (default: F64 1e-7, F16/BF16/F32\n"
"                        1e-5; integers and others 0)\n"
"      --exact           bit equality: same dtype and the same bytes (a\n"
"                        dequantized weight: rounded to the other's dtype)\n"
"      --names-only      compare names, shapes and dtypes only (headers)\n"
"  -t, --tensor GLOB     only tensors whose name matches GLOB (repeatable)\n"
"  -p, --strip-prefix P  remove prefix P from names before matching\n"
"                        (repeatable; e.g. 'transformer.')\n"
"  -j, --threads N       threads for the value pass (default: CPUs, max %d)\n"
"      --first           walk A's tensors in the order its __metadata__\n"
"                        'order' records (a gpt2run --trace), else in file\n"
"                        order; report the first one missing from B, changed\n"
"                        in shape or outside tolerance, and stop\n"
"  -v, --verbose         list every tensor (default: only what differs, and\n"
"                        dtype changes in one line per pair of dtypes)\n"
"  -q, -s, --quiet       print nothing; the exit status says it all\n"
"      --json            one JSON document on stdout\n"
"      --map gpt2        A or B is a GPT-2 GGUF file (llama.cpp's names and\n"
"                        layouts): compare it with the other, a checkpoint,\n"
"                        through the GPT-2 name map, transposes included;\n"
"                        says whether B is exactly A rounded or quantized\n"
"                        (Q8_0: equal by default only when it is)\n"
"  -h, --help            show this help and exit\n"
"  -V, --version         show the version and exit\n"
"\n"
"Exit status: 0 equal within tolerance, 1 different, 2 trouble.\n",
	       cli_progname(), MAX_THREADS);
}

enum { OPT_RTOL = 256, OPT_ATOL, OPT_EXACT, OPT_NAMES, OPT_JSON, OPT_FIRST,
       OPT_MAP };

static void parse_args(int argc, char **argv, struct opts *o,
                       const char **pa, const char **pb)
{
	static const struct option longopts[] = {
		{"rtol", required_argument, NULL, OPT_RTOL},
		{"atol", required_argument, NULL, OPT_ATOL},
		{"exact", no_argument, NULL, OPT_EXACT},
		{"names-only", no_argument, NULL, OPT_NAMES},
		{"tensor", required_argument, NULL, 't'},
		{"strip-prefix", required_argument, NULL, 'p'},
		{"threads", required_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"silent", no_argument, NULL, 's'},
		{"json", no_argument, NULL, OPT_JSON},
		{"first", no_argument, NULL, OPT_FIRST},
		{"map", required_argument, NULL, OPT_MAP},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof *o);
	o->globs = cli_xmalloc((size_t)argc * sizeof *o->globs);
	o->prefixes = cli_xmalloc((size_t)argc * sizeof *o->prefixes);
	int ch;
	while ((ch = cli_getopt(argc, argv, "t:p:j:vqshV", longopts)) != -1) {
		switch (ch) {
		case OPT_RTOL:
			o->rtol = cli_opt_nonneg("--rtol", optarg);
			o->have_rtol = true;
			break;
		case OPT_ATOL:
			o->atol = cli_opt_nonneg("--atol", optarg);
			o->have_atol = true;
			break;
		case OPT_EXACT: o->exact = true; break;
		case OPT_NAMES: o->names_only = true; break;
		case 't': o->globs[o->n_globs++] = optarg; break;
		case 'p': o->prefixes[o->n_prefixes++] = optarg; break;
		case 'j': o->threads = cli_opt_threads(optarg, MAX_THREADS); break;
		case 'v': o->verbose = true; break;
		case 'q': case 's': o->quiet = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_FIRST: o->first = true; break;
		case OPT_MAP:
			if (strcmp(optarg, "gpt2"))
				cli_usage_error("--map: unknown map '%s' (gpt2 is the one "
				                "there is)", optarg);
			o->map_gpt2 = true;
			break;
		case 'h': usage(); exit(cli_exit(CLI_OK));
		case 'V': cli_version();
		}
	}
	if (o->exact && (o->have_rtol || o->have_atol))
		cli_usage_error("--exact cannot be combined with --rtol or --atol");
	if (o->first && (o->json || o->names_only))
		cli_usage_error("--first cannot be combined with --json or "
		                "--names-only");
	if (argc - optind != 2)
		cli_usage_error(argc - optind < 2 ? "missing operand (need A and B)"
		                                  : "extra operand '%s'",
		                argv[optind + 2 < argc ? optind + 2 : optind]);
	*pa = argv[optind];
	*pb = argv[optind + 1];
}

/*
 * "B is exactly A dequantized to BF16": nothing only on one side, every
 * tensor compared and faithful (pair_faithful), one of them dequantized.
 * The dtypes the dequantized weights were rounded to go to r->dq_to.
 */
static void dq_verdict(struct result *r)
{
	bool ok = !r->names_only && !r->n_only_a && !r->n_only_b;
	bool to[ST_DTYPE_COUNT] = {false};
	for (size_t i = 0; ok && i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		ok = pair_faithful(p, r->exact, r->dq_side == 1);
		if (ok && p->dq)
			to[p->dq_b ? p->a->t->dtype : p->b->t->dtype] = true;
	}
	size_t len = 0;
	r->dq_to[0] = 0;
	for (int d = 0; ok && d < ST_DTYPE_COUNT; d++)
		if (to[d])
			len += (size_t)snprintf(r->dq_to + len, sizeof r->dq_to - len, "%s%s",
			                        len ? " and " : "", st_dtype_name((st_dtype)d));
	r->dq_exact = ok && len;
}

/* Set what the value pass does with a common tensor. */
static void plan_pair(const struct opts *o, struct pair *p)
{
	st_dtype ta = p->a->t->dtype, tb = p->b->t->dtype;
	enum st_compare_kind ka = st_compare_kind(ta), kb = st_compare_kind(tb);
	p->same_shape = same_shape(p->a->t, p->b->t);
	p->same_dtype = ta == tb;
	p->comparable = p->same_dtype || (ka != ST_COMPARE_RAW && kb != ST_COMPARE_RAW);
	p->compared = !o->names_only && p->same_shape && p->comparable;
	p->has_stats = ka != ST_COMPARE_RAW;
	const struct entry *qe = p->a->dq ? p->a : p->b->dq ? p->b : NULL;
	if (qe) {
		/* A quantized weight against a plain tensor: its values are
		 * dequantized in F32 (the product dequantization rounds once),
		 * to F64 against F64, to the other side's dtype with --exact
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
	st_compare_spec_init(&p->spec, ta, tb, o->exact,
	                     o->have_rtol ? &o->rtol : NULL,
	                     o->have_atol ? &o->atol : NULL);
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
 * When exactly one of ca and cb is quantized, pair its weights with their
 * scales (the FP8 block size from config.json in its folder, as stconvert
 * reads it) into *q and return its side (0 A, 1 B); -1 when neither or
 * both are (both: compared as they are stored). Exits 2 when the
 * quantized side's pairs do not fit.
 */
static int quant_side(st_checkpoint *ca, st_checkpoint *cb, st_quant_plan *q)
{
	bool qa = has_scales(ca), qb = has_scales(cb);
	if (qa == qb)
		return -1;
	st_checkpoint *c = qa ? ca : cb;
	uint64_t b0, b1;
	st_error err;
	memset(&err, 0, sizeof err);
	if (dequant_config_block_size(st_checkpoint_dir(c), &b0, &b1, &err) < 0 ||
	    st_quant_plan_build(q, c, b0, b1, &err) != 0)
		cli_die(CLI_ERROR, "%s", err.message);
	return qa ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct opts o;
	const char *path_a, *path_b;
	cli_init("stdiff");
	parse_args(argc, argv, &o, &path_a, &path_b);
	if (o.map_gpt2) {
		if (o.names_only || o.first || o.n_globs || o.n_prefixes)
			cli_usage_error("--map gpt2 takes --rtol, --atol, --exact, --json, "
			                "-v and -q only");
		gguf_diff_opts g = {o.rtol, o.atol, o.have_rtol, o.have_atol,
		                    o.exact, o.quiet, o.verbose, o.json};
		free(o.globs);
		free(o.prefixes);
		return cli_exit(gguf_diff_gpt2(path_a, path_b, &g));
	}

	st_checkpoint *ca, *cb;
	if (ckpt_open(&ca, path_a) != CLI_OK || ckpt_open(&cb, path_b) != CLI_OK)
		exit(CLI_ERROR);

	/* One side quantized: its weights are compared dequantized. */
	st_quant_plan qp;
	memset(&qp, 0, sizeof qp);
	int qside = quant_side(ca, cb, &qp);
	st_tensor *virt = qside < 0 ? NULL
	                  : cli_xcalloc(qp.n ? qp.n : 1, sizeof *virt);
	size_t na, nb;
	struct entry *ea = side_entries(&o, ca, path_a, &na, qside == 0 ? &qp : NULL, virt);
	struct entry *eb = side_entries(&o, cb, path_b, &nb, qside == 1 ? &qp : NULL, virt);
	/* A --tensor that selects nothing is more likely a typo than a pass. */
	if (o.n_globs && na == 0 && nb == 0)
		cli_die(CLI_ERROR, "no tensor in %s or %s matches --tensor '%s'%s",
		        path_a, path_b, o.globs[0], o.n_globs > 1 ? " (or the others)" : "");

	struct result r;
	memset(&r, 0, sizeof r);
	r.names_only = o.names_only;
	r.verbose = o.verbose;
	r.exact = o.exact;
	r.ca = ca;
	r.cb = cb;
	r.dq_side = qside;
	r.dq = &qp;
	r.only_a = cli_xmalloc(na * sizeof *r.only_a);
	r.only_b = cli_xmalloc(nb * sizeof *r.only_b);
	r.pairs = cli_xmalloc((na < nb ? na : nb) * sizeof *r.pairs);
	size_t i = 0, j = 0;
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : cmp_entry(&ea[i], &eb[j]);
		if (c < 0) {
			r.only_a[r.n_only_a++] = &ea[i++];
		} else if (c > 0) {
			r.only_b[r.n_only_b++] = &eb[j++];
		} else {
			struct pair *p = &r.pairs[r.n_pairs++];
			memset(p, 0, sizeof *p);
			p->a = &ea[i++];
			p->b = &eb[j++];
			plan_pair(&o, p);
		}
	}

	diff_meta(ca, cb, &r);

	if (!o.names_only)
		compare_values(&o, ca, cb, r.pairs, r.n_pairs);

	r.equal = r.n_only_a == 0 && r.n_only_b == 0;
	for (i = 0; i < r.n_pairs; i++) {
		const struct pair *p = &r.pairs[i];
		if (!p->same_shape)
			r.n_shape++;
		else if (!p->same_dtype)
			r.n_dtype++;
		if (o.names_only) {
			if (!p->same_shape || !p->comparable ||
			    (o.exact && !p->same_dtype))
				r.equal = false;
			continue;
		}
		if (pair_differs(p, o.exact))
			r.equal = false;
		if (!p->compared)
			continue;
		if (p->st.identical && p->same_dtype)
			r.n_identical++;
		else if (pair_differs(p, o.exact))
			r.n_differ++;
		else
			r.n_within++;
	}
	if (qside >= 0)
		dq_verdict(&r);

	/* The traps, in words, for every pair that differs. */
	if (!o.quiet && !o.first)
		diagnose_pairs(ca, cb, &r, o.exact);

	int rc = r.equal ? CLI_OK : CLI_NO;
	if (o.first)
		rc = print_first(ca, cb, &r, o.quiet);
	else if (o.json && !o.quiet)
		print_json(&r);
	else if (!o.quiet)
		print_human(&r);

	free(r.meta);
	free(r.pairs);
	free(virt);
	st_quant_plan_free(&qp);
	free(r.only_a);
	free(r.only_b);
	free(ea);
	free(eb);
	free(o.globs);
	free(o.prefixes);
	st_checkpoint_close(ca);
	st_checkpoint_close(cb);
	return cli_exit(rc);
}
