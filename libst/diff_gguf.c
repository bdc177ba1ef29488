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
 * bytes. A quantized type without an encoder is judged by its expected
 * error per block (Q4_0, Q4_1, Q5_0, Q5_1: doc/ggml.md). Two GGUF files
 * (st_diff_gguf_files) are compared the same way, both sides decoded a
 * chunk of whole blocks at a time.
 */
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
};

static const struct qbound qbounds[] = {
	{ST_GGML_Q4_0, 18, -1, -1, 2, 15, 0x1p-7, 0x1p-21},
	{ST_GGML_Q4_1, 20, 2, -1, 4, 0, 0x1p-6, 0x1p-20},
	{ST_GGML_Q5_0, 22, -1, 2, 6, 31, 0x1p-6, 0x1p-20},
	{ST_GGML_Q5_1, 24, 2, 4, 8, 0, 0x1p-5, 0x1p-19},
};

static const struct qbound *qbound_of(unsigned type)
{
	for (size_t i = 0; i < sizeof qbounds / sizeof qbounds[0]; i++)
		if (qbounds[i].type == type)
			return &qbounds[i];
	return NULL;
}

/* Whether a type is judged by its expected error per block (type_bound). */
static bool type_has_bound(unsigned type)
{
	return qbound_of(type) != NULL;
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
 * The elements of y (the decoded bytes gd, n of them) outside their
 * block's bound (struct qbound) against the reference x added to *mism,
 * *bound raised to the largest bound (both set by the caller, so that a
 * tensor can be judged a chunk of whole blocks at a time). Returns false
 * for a type without such a bound.
 */
static bool type_bound(unsigned type, const unsigned char *gd, const float *x,
                       const float *y, uint64_t n, uint64_t *mism, double *bound)
{
	const struct qbound *q = qbound_of(type);
	if (!q)
		return false;
	for (uint64_t b = 0; b < n / 32; b++) {
		const unsigned char *blk = gd + b * q->bytes;
		double d = fabs((double)f16_at(blk));
		double m = q->m_off >= 0 ? fabs((double)f16_at(blk + q->m_off)) : 0;
		double rest = d * q->slack + m * 0x1p-10 + q->tiny;
		double half = d / 2 + rest, whole = d + rest;
		double most = q->top ? whole : half;
		if (most > *bound)
			*bound = most;
		for (unsigned j = 0; j < 32; j++) {
			double e = fabs((double)x[b * 32 + j] - (double)y[b * 32 + j]);
			bool clamped = q->top && qcode(q, blk, j) == q->top;
			if (!(e <= (clamped ? whole : half)))
				(*mism)++;
		}
	}
	return true;
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
	if (bounded) {
		it->type_bound = true;
		it->mismatched = out_of_bound;
		it->rtol = 0;
		it->atol = bound;
	}
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
	/* As with --map: with no tolerance given, a Q4_0 B is equal when
	 * within its blocks' bounds (and a Q8_0 B, in gguf_pair, exactly when
	 * it is A quantized). */
	if (rc == ST_OK && bounded) {
		it->type_bound = true;
		it->mismatched = out_of_bound;
		it->rtol = 0;
		it->atol = bound;
	}
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
