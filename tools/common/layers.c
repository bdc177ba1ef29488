/*
 * layers.c - compaction of repeated layers (see layers.h). Each pass
 * sorts the live rows by their key (everything but the candidate integer
 * component, plus dtype and shape) and merges runs of equal keys; it
 * works on names as byte slices and copies nothing but the sets it makes.
 */
#include "common/layers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"
/* A dot component is an integer when it is digits without a leading zero. */
static int comp_integer(const layers_comp *c, uint64_t *value)
{
	if (c->owned || c->len == 0 || c->len > 9)
		return 0;
	if (c->s[0] == '0' && c->len > 1)
		return 0;
	uint64_t v = 0;
	for (size_t i = 0; i < c->len; i++) {
		if (c->s[i] < '0' || c->s[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(c->s[i] - '0');
	}
	if (value)
		*value = v;
	return 1;
}

/* The last integer component before index before, or -1. */
static int prev_integer(const layers_row *r, int before)
{
	for (int i = before - 1; i >= 0; i--)
		if (comp_integer(&r->comps[i], NULL))
			return i;
	return -1;
}

struct compact_ctx {
	const st_tensor *const *tensors;
	const uint64_t *klass; /* a caller's class per tensor, or NULL */
	layers_row *rows;
};

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

/* Compare rows by their key for this pass: everything but component cand. */
static int row_key_cmp(const struct compact_ctx *cc, const layers_row *a,
                       const layers_row *b)
{
	int c;
	if ((c = cmp_u64((uint64_t)a->cand, (uint64_t)b->cand)))
		return c;
	if ((c = cmp_u64(a->ncomps, b->ncomps)))
		return c;
	if (cc->klass &&
	    (c = cmp_u64(cc->klass[a->members[0]], cc->klass[b->members[0]])))
		return c;
	const st_tensor *ta = cc->tensors[a->members[0]];
	const st_tensor *tb = cc->tensors[b->members[0]];
	if ((c = cmp_u64(ta->dtype, tb->dtype)) || (c = cmp_u64(ta->ndim, tb->ndim)))
		return c;
	for (unsigned d = 0; d < ta->ndim; d++)
		if ((c = cmp_u64(ta->shape[d], tb->shape[d])))
			return c;
	for (size_t i = 0; i < a->ncomps; i++) {
		if ((int)i == a->cand)
			continue;
		const layers_comp *x = &a->comps[i], *y = &b->comps[i];
		if ((c = cmp_u64((uint64_t)x->owned, (uint64_t)y->owned)) ||
		    (c = cmp_u64(x->len, y->len)))
			return c;
		if (x->len && (c = memcmp(x->s, y->s, x->len)))
			return c;
	}
	return 0;
}

/* qsort order of row indices: by key, then by the integer at cand. */
static int row_sort_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct compact_ctx *cc = ctx;
	const layers_row *a = &cc->rows[*(const size_t *)pa];
	const layers_row *b = &cc->rows[*(const size_t *)pb];
	int c = row_key_cmp(cc, a, b);
	return c ? c : cmp_u64(a->value, b->value);
}

/* "{0..3,7}": runs of three or more as a..b, others listed. */
static char *format_set(const uint64_t *v, size_t n)
{
	size_t cap = n * 24 + 3, o = 0;
	char *s = cli_xmalloc(cap);
	s[o++] = '{';
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		if (i)
			s[o++] = ',';
		if (j - i >= 2) {
			o += (size_t)sprintf(s + o, "%llu..%llu",
			                     (unsigned long long)v[i],
			                     (unsigned long long)v[j]);
			i = j + 1;
		} else {
			o += (size_t)sprintf(s + o, "%llu", (unsigned long long)v[i]);
			i++;
		}
	}
	s[o++] = '}';
	s[o] = 0;
	return s;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_value(const void *a, const void *b)
{
	return cmp_u64(*(const uint64_t *)a, *(const uint64_t *)b);
}

/* Merge the rows idx[0..n) (same key, distinct values at cand) into idx[0]. */
static void merge_rows(struct compact_ctx *cc, const size_t *idx, size_t n)
{
	layers_row *dst = &cc->rows[idx[0]];
	uint64_t *vals = cli_xmalloc(n * sizeof *vals);
	size_t total = 0;
	for (size_t k = 0; k < n; k++) {
		vals[k] = cc->rows[idx[k]].value;
		total += cc->rows[idx[k]].nmembers;
	}
	qsort(vals, n, sizeof *vals, cmp_value);
	size_t *members = cli_xmalloc(total * sizeof *members), m = 0;
	for (size_t k = 0; k < n; k++) {
		layers_row *r = &cc->rows[idx[k]];
		memcpy(members + m, r->members, r->nmembers * sizeof *members);
		m += r->nmembers;
		if (k) {
			for (size_t i = 0; i < r->ncomps; i++)
				if (r->comps[i].owned)
					free((char *)r->comps[i].s);
			free(r->comps);
			free(r->members);
			r->comps = NULL;
			r->members = NULL;
			r->dead = 1;
		}
	}
	qsort(members, total, sizeof *members, cmp_size);
	free(dst->members);
	dst->members = members;
	dst->nmembers = total;
	layers_comp *c = &dst->comps[dst->cand];
	c->s = format_set(vals, n);
	c->len = strlen(c->s);
	c->owned = 1;
	free(vals);
}

/* Split name into dot components (slices of the name, never copied). */
static void row_from_name(layers_row *r, const st_tensor *t, size_t index)
{
	size_t n = 1;
	for (size_t i = 0; i < t->name_len; i++)
		n += t->name[i] == '.';
	r->comps = cli_xmalloc(n * sizeof *r->comps);
	r->ncomps = 0;
	size_t start = 0;
	for (size_t i = 0; i <= t->name_len; i++) {
		if (i == t->name_len || t->name[i] == '.') {
			r->comps[r->ncomps++] = (layers_comp){t->name + start,
			                                      i - start, 0};
			start = i + 1;
		}
	}
	r->members = cli_xmalloc(sizeof *r->members);
	r->members[0] = index;
	r->nmembers = 1;
	r->dead = 0;
	r->cand = prev_integer(r, (int)r->ncomps);
}

static int cmp_first_member(const void *pa, const void *pb)
{
	const layers_row *a = pa, *b = pb;
	return cmp_size(&a->members[0], &b->members[0]);
}

layers_row *layers_compact(const st_tensor *const *tensors, size_t n, int all,
                           size_t *nrows)
{
	return layers_compact_classes(tensors, NULL, n, all, nrows);
}

layers_row *layers_compact_classes(const st_tensor *const *tensors,
                                   const uint64_t *klass, size_t n, int all,
                                   size_t *nrows)
{
	layers_row *rows = cli_xcalloc(n, sizeof *rows);
	for (size_t i = 0; i < n; i++) {
		row_from_name(&rows[i], tensors[i], i);
		if (all)
			rows[i].cand = -1;
	}
	struct compact_ctx cc = {tensors, klass, rows};
	size_t *idx = cli_xmalloc((n ? n : 1) * sizeof *idx);
	for (;;) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			layers_row *r = &rows[i];
			if (r->dead || r->cand < 0)
				continue;
			comp_integer(&r->comps[r->cand], &r->value);
			idx[m++] = i;
		}
		if (m == 0)
			break;
		qsort_r(idx, m, sizeof *idx, row_sort_cmp, &cc);
		for (size_t i = 0; i < m;) {
			size_t j = i + 1, dup = 0;
			while (j < m && row_key_cmp(&cc, &rows[idx[i]], &rows[idx[j]]) == 0) {
				dup |= rows[idx[j]].value == rows[idx[j - 1]].value;
				j++;
			}
			/*
			 * The next pass of every row tries the integer before this
			 * one. Equal integers would mean a duplicate name, which
			 * libst rejects; never merge them into a set like {1,1}.
			 */
			int cand = rows[idx[i]].cand;
			if (j - i >= 2 && !dup)
				merge_rows(&cc, idx + i, j - i);
			for (size_t k = i; k < j; k++)
				if (!rows[idx[k]].dead)
					rows[idx[k]].cand = prev_integer(&rows[idx[k]], cand);
			i = j;
		}
	}
	free(idx);
	size_t live = 0;
	for (size_t i = 0; i < n; i++)
		if (!rows[i].dead)
			rows[live++] = rows[i];
	qsort(rows, live, sizeof *rows, cmp_first_member);
	*nrows = live;
	return rows;
}

void layers_free(layers_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t c = 0; c < rows[i].ncomps; c++)
			if (rows[i].comps[c].owned)
				free((char *)rows[i].comps[c].s);
		free(rows[i].comps);
		free(rows[i].members);
	}
	free(rows);
}

char *layers_row_name(const layers_row *r, size_t *len_out)
{
	size_t len = r->ncomps;
	for (size_t i = 0; i < r->ncomps; i++)
		len += r->comps[i].len;
	char *raw = cli_xmalloc(len + 1), *o = raw;
	for (size_t i = 0; i < r->ncomps; i++) {
		if (i)
			*o++ = '.';
		memcpy(o, r->comps[i].s, r->comps[i].len);
		o += r->comps[i].len;
	}
	*o = 0;
	*len_out = (size_t)(o - raw);
	return raw;
}
