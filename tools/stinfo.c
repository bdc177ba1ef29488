/*
 * stinfo.c - look inside a safetensors checkpoint: a human summary, a JSON
 * document, a full validity check (--check), per-tensor statistics
 * (--stats), or offline integrity of downloads (--verify, --hash: libst's
 * st_verify_path, printed by common/verify.c).
 *
 * This file is the tool only: parsing, validation, shard indexes and dtype
 * conversion are libst's (st_checkpoint_open, st_check_path, st_convert).
 * What lives here is presentation (tables, compaction of repeated layers,
 * JSON) and the statistics pass, which streams tensor data through bounded
 * per-thread buffers. The summary and --json read only the headers, so a
 * 300 GB checkpoint answers in milliseconds.
 */
#include "common/cli.h"
#include "common/ckpt.h"

#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#include "common/verify.h"

enum mode { MODE_SUMMARY, MODE_JSON, MODE_CHECK };

struct options {
	enum mode mode;
	int all;     /* list every tensor instead of compacting layers */
	int stats;   /* read the data and compute statistics */
	int threads; /* statistics worker threads */
};

static void usage(void)
{
	printf(
"Usage: stinfo [OPTION]... PATH...\n"
"Describe safetensors checkpoints: files, metadata, tensors, parameters.\n"
"\n"
"PATH is a .safetensors file, a shard index (*.safetensors.index.json) or a\n"
"snapshot directory. Without options, print a summary read from the headers\n"
"only, with repeated layers shown once (h.{0..11}.attn.c_attn.weight).\n"
"\n"
"Options:\n"
"  -a, --all          list every tensor instead of compacting repeated layers\n"
"  -j, --json         print one JSON document (an array of them for\n"
"                     several PATHs)\n"
"  -c, --check        validate every rule of the format and of the shard\n"
"                     index; print each problem; exit 1 if any\n"
"  -s, --stats        read the data too: min, max, mean, std and NaN, Inf and\n"
"                     zero counts per tensor\n"
"      --verify       hash every file against the name it is stored under\n"
"                     (Hugging Face cache) or its SHA256SUMS entry, then\n"
"                     --check each weight file; PATH may also be a cache\n"
"                     root, a models--ORG--NAME folder or a plain folder;\n"
"                     exit 1 if any problem\n"
"      --hash         print each file's SHA-256 as sha256sum does (with\n"
"                     --json, also each tensor's)\n"
"  -t, --threads N    worker threads for --stats, --verify and --hash\n"
"                     (default: CPUs online)\n"
"  -h, --help         print this help and exit\n"
"  -V, --version      print the version and exit\n"
"\n"
"Exit status: 0 success (a valid file for --check), 1 an invalid file for\n"
"--check or a problem for --verify and --hash, 2 usage error, unreadable or\n"
"invalid input, I/O error.\n");
}

/* ---- small formatting helpers ------------------------------------------ */

/* Decimal with thousands separators: 124439808 -> "124,439,808". */
static void fmt_group(char *buf, size_t size, uint64_t n)
{
	char tmp[32];
	int len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)n);
	size_t o = 0;
	for (int i = 0; i < len && o + 1 < size; i++) {
		if (i > 0 && (len - i) % 3 == 0 && o + 2 < size)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
}

/*
 * A count or a size with its exact value beside the short one:
 * "124.4M (124,439,808)", "497.8 MB (497,759,232 B)"; just "300" or
 * "232 B" when the short form is exact.
 */
static void fmt_full(char *buf, size_t size, uint64_t n, int bytes)
{
	char a[32], b[32];
	if (bytes)
		cli_fmt_bytes(a, sizeof a, n);
	else
		cli_fmt_count(a, sizeof a, n);
	if (n < 1000) {
		snprintf(buf, size, "%s", a);
		return;
	}
	fmt_group(b, sizeof b, n);
	snprintf(buf, size, "%s (%s%s)", a, b, bytes ? " B" : "");
}

/*
 * A tensor name for a table: printable, and the empty name (legal) shown
 * as "" so that its row does not start with a blank cell.
 */
static char *display_name(const char *s, size_t len)
{
	return len ? cli_printable(s, len) : cli_xstrdup("\"\"");
}

/*
 * Columns a code point takes on a terminal: 2 for the East Asian wide and
 * fullwidth blocks (CJK, Hangul, fullwidth forms, emoji), else 1. A table
 * of ranges, not wcwidth(), so the output does not depend on the locale.
 */
static unsigned cp_width(uint32_t cp)
{
	static const uint32_t wide[][2] = {
		{0x1100, 0x115f}, {0x2e80, 0x303e}, {0x3041, 0x33ff},
		{0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
		{0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe30, 0xfe4f},
		{0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x1f300, 0x1f64f},
		{0x1f900, 0x1f9ff}, {0x20000, 0x3fffd},
	};
	for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
		if (cp >= wide[i][0] && cp <= wide[i][1])
			return 2;
	return 1;
}

/* Columns a (valid UTF-8, printable) string takes on a terminal. */
static size_t display_width(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t w = 0;
	while (*s) {
		uint32_t cp = *s;
		int more = cp >= 0xf0 ? 3 : cp >= 0xe0 ? 2 : cp >= 0xc0 ? 1 : 0;
		if (more)
			cp &= 0x3fu >> more;
		s++;
		for (; more > 0 && (*s & 0xc0) == 0x80; more--, s++)
			cp = (cp << 6) | (*s & 0x3fu);
		w += cp_width(cp);
	}
	return w;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* ---- aligned tables ---------------------------------------------------- */

/*
 * A table collects its cells (owned strings) first and prints them once the
 * column widths are known. align holds 'l' or 'r' per column.
 */
struct table {
	size_t ncols;
	const char *align;
	char **cells; /* row-major, ncols per row; row 0 is the heading */
	size_t nrows, cap;
};

static void table_init(struct table *t, size_t ncols, const char *align)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->align = align;
}

/* Append a row; the cells are copied. */
static void table_add(struct table *t, const char *const *cells)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = cli_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
	}
	for (size_t c = 0; c < t->ncols; c++)
		t->cells[t->nrows * t->ncols + c] = cli_xstrdup(cells[c]);
	t->nrows++;
}

static void table_print(struct table *t, FILE *f)
{
	size_t *w = cli_xcalloc(t->ncols, sizeof *w);
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t cw = display_width(t->cells[r * t->ncols + c]);
			if (cw > w[c])
				w[c] = cw;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			size_t pad = w[c] - display_width(s);
			int last = c + 1 == t->ncols;
			if (c)
				fputs("  ", f);
			if (t->align[c] == 'r')
				fprintf(f, "%*s", (int)pad, "");
			fputs(s, f);
			if (t->align[c] != 'r' && !last)
				fprintf(f, "%*s", (int)pad, "");
		}
		fputc('\n', f);
	}
	free(w);
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof *t);
}

/* ---- compaction of repeated layers ------------------------------------- */

/*
 * Names that differ in one dot-separated integer component, with the same
 * dtype and shape, collapse into one row: h.0.x ... h.11.x becomes
 * h.{0..11}.x. Passes run from the last integer component to the first, and
 * a component already collapsed is part of the key of the next pass, so
 * model.layers.{0..31}.experts.{0..7}.w1 appears only when every layer has
 * the same experts: a row always stands for the full cartesian product of
 * its sets.
 */
struct comp {
	const char *s; /* raw bytes: a slice of the name, or an owned set */
	size_t len;
	int owned;
};

struct row {
	struct comp *comps;
	size_t ncomps;
	int cand;          /* next component to try collapsing, or -1 */
	size_t *members;   /* tensor indices, ascending */
	size_t nmembers;
	uint64_t value;    /* the integer at cand (while sorting a pass) */
	int dead;          /* merged into another row */
};

/* A dot component is an integer when it is digits without a leading zero. */
static int comp_integer(const struct comp *c, uint64_t *value)
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
static int prev_integer(const struct row *r, int before)
{
	for (int i = before - 1; i >= 0; i--)
		if (comp_integer(&r->comps[i], NULL))
			return i;
	return -1;
}

struct compact_ctx {
	const st_checkpoint *ck;
	struct row *rows;
};

static const struct compact_ctx *sort_ctx; /* qsort has no context argument */

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

/* Compare rows by their key for this pass: everything but component cand. */
static int row_key_cmp(const struct row *a, const struct row *b)
{
	int c;
	if ((c = cmp_u64((uint64_t)a->cand, (uint64_t)b->cand)))
		return c;
	if ((c = cmp_u64(a->ncomps, b->ncomps)))
		return c;
	const st_tensor *ta = st_checkpoint_tensor(sort_ctx->ck, a->members[0], NULL);
	const st_tensor *tb = st_checkpoint_tensor(sort_ctx->ck, b->members[0], NULL);
	if ((c = cmp_u64(ta->dtype, tb->dtype)) || (c = cmp_u64(ta->ndim, tb->ndim)))
		return c;
	for (unsigned d = 0; d < ta->ndim; d++)
		if ((c = cmp_u64(ta->shape[d], tb->shape[d])))
			return c;
	for (size_t i = 0; i < a->ncomps; i++) {
		if ((int)i == a->cand)
			continue;
		const struct comp *x = &a->comps[i], *y = &b->comps[i];
		if ((c = cmp_u64((uint64_t)x->owned, (uint64_t)y->owned)) ||
		    (c = cmp_u64(x->len, y->len)))
			return c;
		if (x->len && (c = memcmp(x->s, y->s, x->len)))
			return c;
	}
	return 0;
}

/* qsort order of row indices: by key, then by the integer at cand. */
static int row_sort_cmp(const void *pa, const void *pb)
{
	const struct row *a = &sort_ctx->rows[*(const size_t *)pa];
	const struct row *b = &sort_ctx->rows[*(const size_t *)pb];
	int c = row_key_cmp(a, b);
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
	struct row *dst = &cc->rows[idx[0]];
	uint64_t *vals = cli_xmalloc(n * sizeof *vals);
	size_t total = 0;
	for (size_t k = 0; k < n; k++) {
		vals[k] = cc->rows[idx[k]].value;
		total += cc->rows[idx[k]].nmembers;
	}
	qsort(vals, n, sizeof *vals, cmp_value);
	size_t *members = cli_xmalloc(total * sizeof *members), m = 0;
	for (size_t k = 0; k < n; k++) {
		struct row *r = &cc->rows[idx[k]];
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
	struct comp *c = &dst->comps[dst->cand];
	c->s = format_set(vals, n);
	c->len = strlen(c->s);
	c->owned = 1;
	free(vals);
}

/* Split name into dot components (slices of the name, never copied). */
static void row_from_name(struct row *r, const st_tensor *t, size_t index)
{
	size_t n = 1;
	for (size_t i = 0; i < t->name_len; i++)
		n += t->name[i] == '.';
	r->comps = cli_xmalloc(n * sizeof *r->comps);
	r->ncomps = 0;
	size_t start = 0;
	for (size_t i = 0; i <= t->name_len; i++) {
		if (i == t->name_len || t->name[i] == '.') {
			r->comps[r->ncomps++] = (struct comp){t->name + start,
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
	const struct row *a = pa, *b = pb;
	return cmp_size(&a->members[0], &b->members[0]);
}

/* Compact (or, with all, only wrap) the tensors into rows in data order. */
static struct row *compact(const st_checkpoint *ck, int all, size_t *nrows)
{
	size_t n = st_checkpoint_n_tensors(ck);
	struct row *rows = cli_xcalloc(n, sizeof *rows);
	for (size_t i = 0; i < n; i++) {
		row_from_name(&rows[i], st_checkpoint_tensor(ck, i, NULL), i);
		if (all)
			rows[i].cand = -1;
	}
	struct compact_ctx cc = {ck, rows};
	size_t *idx = cli_xmalloc((n ? n : 1) * sizeof *idx);
	for (;;) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			struct row *r = &rows[i];
			if (r->dead || r->cand < 0)
				continue;
			comp_integer(&r->comps[r->cand], &r->value);
			idx[m++] = i;
		}
		if (m == 0)
			break;
		sort_ctx = &cc;
		qsort(idx, m, sizeof *idx, row_sort_cmp);
		for (size_t i = 0; i < m;) {
			size_t j = i + 1, dup = 0;
			while (j < m && row_key_cmp(&rows[idx[i]], &rows[idx[j]]) == 0) {
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

static void rows_free(struct row *rows, size_t n)
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

/* The row's display name: components joined by dots, then made printable. */
static char *row_name(const struct row *r)
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
	char *s = display_name(raw, (size_t)(o - raw));
	free(raw);
	return s;
}

/* ---- totals ------------------------------------------------------------ */

struct totals {
	uint64_t tensors, params, bytes;
	struct { uint64_t tensors, params, bytes; } by[ST_DTYPE_COUNT];
};

/*
 * Sums use checked arithmetic: each file's tensors fit in its size, but a
 * sharded checkpoint's parameter count could in principle exceed 2^64.
 * Saturating keeps the output well defined in that absurd case.
 */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;
	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

static void compute_totals(const st_checkpoint *ck, struct totals *t)
{
	memset(t, 0, sizeof *t);
	size_t n = st_checkpoint_n_tensors(ck);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *x = st_checkpoint_tensor(ck, i, NULL);
		t->tensors++;
		t->params = sat_add(t->params, x->n_elements);
		t->bytes = sat_add(t->bytes, x->n_bytes);
		t->by[x->dtype].tensors++;
		t->by[x->dtype].params = sat_add(t->by[x->dtype].params, x->n_elements);
		t->by[x->dtype].bytes = sat_add(t->by[x->dtype].bytes, x->n_bytes);
	}
}

/* ---- statistics -------------------------------------------------------- */

/*
 * Statistics of the finite values, plus counts of NaN, Inf and zeros.
 * mean is kept relative to shift (the first finite value seen), so a
 * tensor whose values sit far from zero (1e6 +- 1e-3) keeps the digits of
 * its spread; mean and m2 (sum of squared deviations) of chunks and slices
 * are merged with Chan et al.'s pairwise update, which avoids the
 * cancellation of a running sum of squares.
 */
struct acc {
	uint64_t n; /* finite values */
	double shift, mean, m2, min, max;
	uint64_t nan, inf, zeros;
};

static void acc_merge(struct acc *a, const struct acc *b)
{
	if (b->n && a->n == 0) {
		a->shift = b->shift;
		a->mean = b->mean;
		a->m2 = b->m2;
		a->min = b->min;
		a->max = b->max;
	} else if (b->n) {
		double na = (double)a->n, nb = (double)b->n, n = na + nb;
		double delta = (b->shift - a->shift) + (b->mean - a->mean);
		a->mean += delta * (nb / n);
		a->m2 += b->m2 + delta * delta * (na * nb / n);
		if (b->min < a->min)
			a->min = b->min;
		if (b->max > a->max)
			a->max = b->max;
	}
	a->n += b->n;
	a->nan += b->nan;
	a->inf += b->inf;
	a->zeros += b->zeros;
}

/*
 * One chunk, in two passes: counts, extremes and a first mean, then the
 * deviations, with the corrected two-pass algorithm (Bjorck) fixing the
 * first mean's rounding error. Squared deviations overflow to Inf only for
 * spreads beyond about 1e154, which only F64 tensors can hold.
 */
static void acc_chunk(struct acc *a, const double *x, size_t n)
{
	struct acc c = {0};
	double sum = 0;
	int have_shift = a->n > 0;
	c.shift = a->shift;
	for (size_t i = 0; i < n; i++) {
		double v = x[i];
		if (isnan(v)) {
			c.nan++;
			continue;
		}
		if (isinf(v)) {
			c.inf++;
			continue;
		}
		if (!have_shift) {
			c.shift = v;
			have_shift = 1;
		}
		if (v == 0)
			c.zeros++;
		if (c.n == 0 || v < c.min)
			c.min = v;
		if (c.n == 0 || v > c.max)
			c.max = v;
		c.n++;
		sum += v - c.shift;
	}
	if (c.n) {
		double mean = sum / (double)c.n, dsum = 0, m2 = 0;
		for (size_t i = 0; i < n; i++)
			if (isfinite(x[i])) {
				double d = (x[i] - c.shift) - mean;
				dsum += d;
				m2 += d * d;
			}
		c.mean = mean + dsum / (double)c.n;
		c.m2 = m2 - dsum * dsum / (double)c.n;
		if (c.m2 < 0)
			c.m2 = 0;
	}
	acc_merge(a, &c);
}

static double acc_mean(const struct acc *a) { return a->shift + a->mean; }

static double acc_std(const struct acc *a)
{
	return a->n ? sqrt(a->m2 / (double)a->n) : 0;
}

/* A work item: elements [begin, end) of one tensor. */
struct item {
	size_t tensor;
	uint64_t begin, end;
	struct acc acc;
};

struct stats_job {
	st_checkpoint **handles; /* one per thread: handles are not shared */
	struct item *items;
	size_t nitems, next;
	size_t chunk_elems;
	pthread_mutex_t lock;
	int failed;
	st_error err;
	cli_progress progress;
};

struct worker {
	struct stats_job *job;
	st_checkpoint *ck;
};

static void *stats_worker(void *arg)
{
	struct worker *w = arg;
	struct stats_job *job = w->job;
	unsigned char *raw = cli_xmalloc(job->chunk_elems * 8);
	double *wide = cli_xmalloc(job->chunk_elems * sizeof *wide);
	st_error err;
	for (;;) {
		pthread_mutex_lock(&job->lock);
		size_t k = job->failed ? job->nitems : job->next++;
		pthread_mutex_unlock(&job->lock);
		if (k >= job->nitems)
			break;
		struct item *it = &job->items[k];
		const st_tensor *t = st_checkpoint_tensor(w->ck, it->tensor, NULL);
		unsigned esize = st_dtype_bits(t->dtype) / 8;
		for (uint64_t e = it->begin; e < it->end;) {
			size_t n = (size_t)(it->end - e < job->chunk_elems
			                    ? it->end - e : job->chunk_elems);
			if (st_checkpoint_read(w->ck, it->tensor, e * esize, raw,
			                       n * esize, &err) != ST_OK) {
				pthread_mutex_lock(&job->lock);
				if (!job->failed) {
					job->failed = 1;
					job->err = err;
				}
				pthread_mutex_unlock(&job->lock);
				goto out;
			}
			ckpt_widen(t->dtype, raw, wide, n);
			acc_chunk(&it->acc, wide, n);
			e += n;
			pthread_mutex_lock(&job->lock);
			cli_progress_add(&job->progress, (uint64_t)n * esize);
			pthread_mutex_unlock(&job->lock);
		}
	}
out:
	free(raw);
	free(wide);
	return NULL;
}

/* Default elements per chunk: 8 MiB of F64 in the widening buffer. */
#define STATS_CHUNK_ELEMS ((size_t)1 << 20)

/*
 * Compute statistics for every supported tensor of ck into accs (one per
 * tensor). Large tensors are split into one slice per thread; slices and
 * chunks are merged in a fixed order, so the result does not depend on
 * scheduling. Each thread opens its own handle of path, because libst only
 * promises that distinct handles may be used from distinct threads.
 * Returns 0, or -1 after printing an error.
 */
static int compute_stats(const char *path, st_checkpoint *ck, int threads,
                         struct acc *accs)
{
	size_t n = st_checkpoint_n_tensors(ck);
	size_t chunk = STATS_CHUNK_ELEMS;
	const char *env = getenv("STINFO_CHUNK_ELEMENTS");
	uint64_t v;
	if (env && cli_parse_u64(env, &v) == 0 && v > 0 && v <= chunk)
		chunk = (size_t)v;
	if (threads < 1)
		threads = 1;

	struct stats_job job;
	memset(&job, 0, sizeof job);
	job.chunk_elems = chunk;
	pthread_mutex_init(&job.lock, NULL);
	size_t cap = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		if (!ckpt_is_numeric(t->dtype))
			continue;
		total += t->n_bytes;
		uint64_t slices = 1;
		if (t->n_elements > chunk)
			slices = (uint64_t)threads;
		if (job.nitems + slices > cap) {
			cap = (cap + (size_t)slices) * 2;
			job.items = cli_xrealloc(job.items, cap * sizeof *job.items);
		}
		for (uint64_t s = 0; s < slices; s++) {
			struct item *it = &job.items[job.nitems++];
			memset(it, 0, sizeof *it);
			it->tensor = i;
			it->begin = t->n_elements / slices * s;
			it->end = s + 1 == slices ? t->n_elements
			                          : t->n_elements / slices * (s + 1);
		}
	}

	/* Threads beyond the work items would only open handles and wait. */
	if ((size_t)threads > job.nitems)
		threads = job.nitems ? (int)job.nitems : 1;
	job.handles = cli_xcalloc((size_t)threads, sizeof *job.handles);
	struct worker *ws = cli_xcalloc((size_t)threads, sizeof *ws);
	pthread_t *tids = cli_xcalloc((size_t)threads, sizeof *tids);
	int started = 0, rc = 0;
	cli_progress_start(&job.progress, "stats", total);
	for (int k = 0; k < threads; k++) {
		if (k == 0) {
			job.handles[k] = ck;
		} else if (ckpt_open(&job.handles[k], path) != CLI_OK) {
			rc = -1;
			break;
		} else if (!ckpt_same_tensors(ck, job.handles[k])) {
			cli_warn("%s: changed while being read", path);
			st_checkpoint_close(job.handles[k]);
			rc = -1;
			break;
		}
		ws[k] = (struct worker){&job, job.handles[k]};
		int e = pthread_create(&tids[k], NULL, stats_worker, &ws[k]);
		if (e != 0) {
			cli_warn("cannot start a thread: %s", strerror(e));
			rc = -1;
			if (k)
				st_checkpoint_close(job.handles[k]);
			break;
		}
		started++;
	}
	if (rc) {
		/* Stop the workers already running and let them drain. */
		pthread_mutex_lock(&job.lock);
		job.failed = job.failed ? job.failed : 2;
		pthread_mutex_unlock(&job.lock);
	}
	for (int k = 0; k < started; k++)
		pthread_join(tids[k], NULL);
	cli_progress_done(&job.progress);
	for (int k = 1; k < started; k++)
		st_checkpoint_close(job.handles[k]);
	if (rc == 0 && job.failed == 1) {
		cli_error(&job.err);
		rc = -1;
	}
	if (rc == 0) {
		memset(accs, 0, n * sizeof *accs);
		for (size_t k = 0; k < job.nitems; k++)
			acc_merge(&accs[job.items[k].tensor], &job.items[k].acc);
	}
	pthread_mutex_destroy(&job.lock);
	free(job.items);
	free(job.handles);
	free(ws);
	free(tids);
	return rc;
}

/* ---- human summary ----------------------------------------------------- */

/* Metadata values longer than this are cut in the summary (not in --json). */
#define META_SHOW 200

static void print_kv(const char *key, const char *value)
{
	printf("%-13s%s\n", key, value);
}

static void print_files(const st_checkpoint *ck)
{
	char buf[96];
	const char *index = st_checkpoint_index_path(ck);
	if (index) {
		char *p = cli_printable(index, strlen(index));
		print_kv("index:", p);
		free(p);
	}
	size_t nf = st_checkpoint_n_files(ck);
	for (size_t i = 0; i < nf; i++) {
		const st_file *f = st_checkpoint_file(ck, i);
		char *p = cli_printable(st_file_path(f), strlen(st_file_path(f)));
		print_kv("file:", p);
		free(p);
		if (st_file_format(f) == ST_FORMAT_TORCH) {
			/* Offsets below count from the start of the file. */
			print_kv("  format:", "PyTorch zip checkpoint (its pickle was "
			         "read, not executed)");
			fmt_full(buf, sizeof buf, st_file_size(f), 1);
			print_kv("  size:", buf);
		} else {
			fmt_full(buf, sizeof buf, st_file_header_size(f), 1);
			print_kv("  header:", buf);
			fmt_full(buf, sizeof buf, st_file_data_size(f), 1);
			print_kv("  data:", buf);
		}
		size_t nm = st_file_n_meta(f);
		if (nm == 0)
			print_kv("  metadata:", "(none)");
		for (size_t m = 0; m < nm; m++) {
			const st_meta *e = st_file_meta(f, m);
			size_t show = e->value_len > META_SHOW ? META_SHOW : e->value_len;
			/* Do not cut a UTF-8 sequence in half. */
			while (show < e->value_len &&
			       ((unsigned char)e->value[show] & 0xc0) == 0x80)
				show--;
			char *k = cli_printable(e->key, e->key_len);
			char *v = cli_printable(e->value, show);
			printf("%-13s%s: %s", m ? "" : "  metadata:", k, v);
			if (show < e->value_len)
				printf("... (%zu bytes)", e->value_len);
			putchar('\n');
			free(k);
			free(v);
		}
	}
}

static void print_dtype_table(const struct totals *t)
{
	struct table tab;
	char c1[32], c2[96], c3[96];
	table_init(&tab, 4, "lrrr");
	table_add(&tab, (const char *const[]){"dtype", "tensors", "parameters", "bytes"});
	for (int d = ST_DTYPE_COUNT - 1; d >= 0; d--) {
		if (!t->by[d].tensors)
			continue;
		snprintf(c1, sizeof c1, "%llu", (unsigned long long)t->by[d].tensors);
		fmt_full(c2, sizeof c2, t->by[d].params, 0);
		fmt_full(c3, sizeof c3, t->by[d].bytes, 1);
		table_add(&tab, (const char *const[]){st_dtype_name((st_dtype)d), c1, c2, c3});
	}
	table_print(&tab, stdout);
	table_free(&tab);
}

static void print_tensor_table(const st_checkpoint *ck, int all)
{
	size_t nrows;
	struct row *rows = compact(ck, all, &nrows);
	int sharded = st_checkpoint_n_files(ck) > 1;
	struct table tab;
	char shape[1024], params[64], where[64];
	table_init(&tab, 5, "lllrl");
	table_add(&tab, (const char *const[]){"name", "dtype", "shape", "parameters",
	                                      sharded ? "file" : "offset"});
	for (size_t r = 0; r < nrows; r++) {
		const struct row *row = &rows[r];
		size_t file;
		const st_tensor *t = st_checkpoint_tensor(ck, row->members[0], &file);
		char *name = row_name(row);
		cli_fmt_shape(shape, sizeof shape, t);
		if (row->nmembers > 1)
			snprintf(params, sizeof params, "%zu x %llu", row->nmembers,
			         (unsigned long long)t->n_elements);
		else
			snprintf(params, sizeof params, "%llu",
			         (unsigned long long)t->n_elements);
		char *wherep = NULL;
		if (sharded) {
			/* A group spread over shards names how many it spans. */
			size_t nfiles = 1, prev = file;
			for (size_t m = 1; m < row->nmembers; m++) {
				size_t f;
				st_checkpoint_tensor(ck, row->members[m], &f);
				if (f != prev)
					nfiles++;
				prev = f;
			}
			if (nfiles > 1) {
				snprintf(where, sizeof where, "%zu files", nfiles);
			} else {
				const char *p = st_file_path(st_checkpoint_file(ck, file));
				wherep = cli_printable(base_name(p), strlen(base_name(p)));
			}
		} else if (row->nmembers > 1) {
			snprintf(where, sizeof where, "-");
		} else {
			snprintf(where, sizeof where, "%llu", (unsigned long long)t->begin);
		}
		table_add(&tab, (const char *const[]){name, st_dtype_name(t->dtype),
		                                      shape, params,
		                                      wherep ? wherep : where});
		free(wherep);
		free(name);
	}
	table_print(&tab, stdout);
	table_free(&tab);
	rows_free(rows, nrows);
}

static void fmt_stat(char *buf, size_t size, double v)
{
	snprintf(buf, size, "%.6g", v);
}

static void print_stats_table(const st_checkpoint *ck, const struct acc *accs)
{
	size_t n = st_checkpoint_n_tensors(ck);
	struct table tab;
	char c[7][48];
	table_init(&tab, 9, "llrrrrrrr");
	table_add(&tab, (const char *const[]){"name", "dtype", "min", "max", "mean",
	                                      "std", "nan", "inf", "zeros"});
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		const struct acc *a = &accs[i];
		char *name = display_name(t->name, t->name_len);
		if (!ckpt_is_numeric(t->dtype)) {
			table_add(&tab, (const char *const[]){name, st_dtype_name(t->dtype),
			                                      "-", "-", "-", "-", "-", "-", "-"});
			free(name);
			continue;
		}
		if (a->n) {
			fmt_stat(c[0], sizeof c[0], a->min);
			fmt_stat(c[1], sizeof c[1], a->max);
			fmt_stat(c[2], sizeof c[2], acc_mean(a));
			fmt_stat(c[3], sizeof c[3], acc_std(a));
		} else {
			for (int k = 0; k < 4; k++)
				snprintf(c[k], sizeof c[k], "-");
		}
		snprintf(c[4], sizeof c[4], "%llu", (unsigned long long)a->nan);
		snprintf(c[5], sizeof c[5], "%llu", (unsigned long long)a->inf);
		snprintf(c[6], sizeof c[6], "%llu", (unsigned long long)a->zeros);
		table_add(&tab, (const char *const[]){name, st_dtype_name(t->dtype), c[0],
		                                      c[1], c[2], c[3], c[4], c[5], c[6]});
		free(name);
	}
	table_print(&tab, stdout);
	table_free(&tab);
	/* Say once which dtypes had no statistics, rather than leave a bare "-". */
	int skipped[ST_DTYPE_COUNT] = {0};
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		if (!ckpt_is_numeric(t->dtype))
			skipped[t->dtype] = 1;
	}
	int any = 0;
	for (int d = ST_DTYPE_COUNT - 1; d >= 0; d--)
		if (skipped[d])
			printf("%s%s", any++ ? ", " : "note: no statistics for ",
			       st_dtype_name((st_dtype)d));
	if (any)
		printf(" tensors (skipped)\n");
}

static void print_summary(const char *path, const st_checkpoint *ck,
                          const struct options *o, const struct acc *accs)
{
	struct totals t;
	char buf[96];
	compute_totals(ck, &t);
	char *p = cli_printable(path, strlen(path));
	print_kv("path:", p);
	free(p);
	print_files(ck);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)t.tensors);
	print_kv("tensors:", buf);
	fmt_full(buf, sizeof buf, t.params, 0);
	print_kv("parameters:", buf);
	fmt_full(buf, sizeof buf, t.bytes, 1);
	print_kv("bytes:", buf);
	if (t.tensors == 0)
		return;
	putchar('\n');
	print_dtype_table(&t);
	putchar('\n');
	if (accs)
		print_stats_table(ck, accs);
	else
		print_tensor_table(ck, o->all);
}

/* ---- JSON -------------------------------------------------------------- */

static void json_str(const char *s, size_t len) { cli_json_string(stdout, s, len); }

static void json_stats(const struct acc *a)
{
	printf(", \"stats\": {\"min\": ");
	if (a->n) {
		cli_json_double(stdout, a->min);
		printf(", \"max\": ");
		cli_json_double(stdout, a->max);
		printf(", \"mean\": ");
		cli_json_double(stdout, acc_mean(a));
		printf(", \"std\": ");
		cli_json_double(stdout, acc_std(a));
	} else {
		printf("null, \"max\": null, \"mean\": null, \"std\": null");
	}
	printf(", \"nan\": %llu, \"inf\": %llu, \"zeros\": %llu}",
	       (unsigned long long)a->nan, (unsigned long long)a->inf,
	       (unsigned long long)a->zeros);
}

/*
 * SPEC.md's document, keys in its order, one file or tensor per line so the
 * output stays greppable; with --stats each tensor gains a "stats" object
 * (null for a dtype without statistics).
 */
static void print_json(const st_checkpoint *ck, const struct acc *accs)
{
	struct totals t;
	compute_totals(ck, &t);
	size_t nf = st_checkpoint_n_files(ck);
	printf("{\n  \"files\": [\n");
	for (size_t i = 0; i < nf; i++) {
		const st_file *f = st_checkpoint_file(ck, i);
		printf("    {\"path\": ");
		json_str(st_file_path(f), strlen(st_file_path(f)));
		printf(", \"header_bytes\": %llu, \"data_bytes\": %llu, \"metadata\": {",
		       (unsigned long long)st_file_header_size(f),
		       (unsigned long long)st_file_data_size(f));
		for (size_t m = 0; m < st_file_n_meta(f); m++) {
			const st_meta *e = st_file_meta(f, m);
			if (m)
				printf(", ");
			json_str(e->key, e->key_len);
			printf(": ");
			json_str(e->value, e->value_len);
		}
		printf("}}%s\n", i + 1 < nf ? "," : "");
	}
	printf("  ],\n  \"tensors\": [\n");
	size_t n = st_checkpoint_n_tensors(ck);
	for (size_t i = 0; i < n; i++) {
		size_t file;
		const st_tensor *x = st_checkpoint_tensor(ck, i, &file);
		const char *fp = st_file_path(st_checkpoint_file(ck, file));
		printf("    {\"name\": ");
		json_str(x->name, x->name_len);
		printf(", \"dtype\": \"%s\", \"shape\": ", st_dtype_name(x->dtype));
		cli_print_dims(stdout, x->shape, x->ndim);
		printf(", \"parameters\": %llu, \"bytes\": %llu, \"file\": ",
		       (unsigned long long)x->n_elements, (unsigned long long)x->n_bytes);
		json_str(fp, strlen(fp));
		printf(", \"data_offsets\": [%llu, %llu]", (unsigned long long)x->begin,
		       (unsigned long long)x->end);
		if (accs) {
			if (ckpt_is_numeric(x->dtype))
				json_stats(&accs[i]);
			else
				printf(", \"stats\": null");
		}
		printf("}%s\n", i + 1 < n ? "," : "");
	}
	printf("  ],\n  \"total\": {\"tensors\": %llu, \"parameters\": %llu, "
	       "\"bytes\": %llu, \"by_dtype\": {",
	       (unsigned long long)t.tensors, (unsigned long long)t.params,
	       (unsigned long long)t.bytes);
	int first = 1;
	for (int d = ST_DTYPE_COUNT - 1; d >= 0; d--) {
		if (!t.by[d].tensors)
			continue;
		printf("%s\"%s\": {\"tensors\": %llu, \"parameters\": %llu, \"bytes\": %llu}",
		       first ? "" : ", ", st_dtype_name((st_dtype)d),
		       (unsigned long long)t.by[d].tensors,
		       (unsigned long long)t.by[d].params,
		       (unsigned long long)t.by[d].bytes);
		first = 0;
	}
	printf("}}\n}\n");
}

/* ---- --check ----------------------------------------------------------- */

struct check_ctx {
	int errors, warnings;
};

static void on_problem(void *ctx, int severity, const char *message)
{
	struct check_ctx *cc = ctx;
	/* Messages come from file contents: keep them on one line. */
	char *m = cli_printable(message, strlen(message));
	if (severity == ST_PROBLEM_WARNING) {
		cc->warnings++;
		cli_warn("warning: %s", m);
	} else {
		cc->errors++;
		cli_warn("%s", m);
	}
	free(m);
}

static void plural(char *buf, size_t size, int n, const char *what)
{
	snprintf(buf, size, "%d %s%s", n, what, n == 1 ? "" : "s");
}

/* Returns the exit code for this path. */
static int check_path(const char *path)
{
	struct check_ctx cc = {0, 0};
	st_error err;
	memset(&err, 0, sizeof err);
	int n = st_check_path(path, on_problem, &cc, &err);
	if (n < 0) {
		err.code = n;
		cli_error_path(path, &err);
		return CLI_ERROR;
	}
	/* Trust the count libst returns even if a callback was lost. */
	if (n > cc.errors)
		cc.errors = n;
	char *p = cli_printable(path, strlen(path));
	char e[32], w[32];
	plural(e, sizeof e, cc.errors, "error");
	plural(w, sizeof w, cc.warnings, "warning");
	if (cc.errors == 0 && cc.warnings == 0)
		printf("%s: OK\n", p);
	else if (cc.errors == 0)
		printf("%s: OK (%s)\n", p, w);
	else if (cc.warnings == 0)
		printf("%s: INVALID (%s)\n", p, e);
	else
		printf("%s: INVALID (%s, %s)\n", p, e, w);
	free(p);
	return cc.errors ? CLI_NO : CLI_OK;
}

/* ---- main -------------------------------------------------------------- */

/*
 * Summary or JSON for one path; returns the exit code for it. *printed
 * says whether an earlier path printed a summary, which a blank line then
 * separates from this one.
 */
static int describe_path(const char *path, const struct options *o,
                         int *printed)
{
	st_checkpoint *ck;
	if (ckpt_open(&ck, path) != CLI_OK)
		return CLI_ERROR;
	struct acc *accs = NULL;
	if (o->stats) {
		accs = cli_xcalloc(st_checkpoint_n_tensors(ck), sizeof *accs);
		if (compute_stats(path, ck, o->threads, accs) != 0) {
			free(accs);
			st_checkpoint_close(ck);
			return CLI_ERROR;
		}
	}
	if (o->mode == MODE_SUMMARY && *printed)
		putchar('\n');
	if (o->mode == MODE_JSON && *printed)
		fputs(",\n", stdout); /* several PATHs: one array */
	*printed = 1;
	if (o->mode == MODE_JSON)
		print_json(ck, accs);
	else
		print_summary(path, ck, o, accs);
	free(accs);
	st_checkpoint_close(ck);
	return CLI_OK;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"all", no_argument, NULL, 'a'},
		{"json", no_argument, NULL, 'j'},
		{"check", no_argument, NULL, 'c'},
		{"stats", no_argument, NULL, 's'},
		{"threads", required_argument, NULL, 't'},
		{"verify", no_argument, NULL, 'Y'},
		{"hash", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct options o = {MODE_SUMMARY, 0, 0, 0};
	int json = 0, check = 0, verify = 0, hash = 0, ch;

	cli_init("stinfo");
	while ((ch = cli_getopt(argc, argv, "ajcst:hV", longopts)) != -1) {
		switch (ch) {
		case 'a': o.all = 1; break;
		case 'j': json = 1; break;
		case 'c': check = 1; break;
		case 's': o.stats = 1; break;
		case 'Y': verify = 1; break;
		case 'H': hash = 1; break;
		case 't': o.threads = cli_opt_threads(optarg, 256); break;
		case 'h':
			usage();
			return cli_exit(CLI_OK);
		case 'V':
			cli_version();
		}
	}
	if (optind >= argc)
		cli_usage_error("missing PATH");
	if (check && (json || o.stats || o.all))
		cli_usage_error("--check cannot be combined with --json, --stats or --all");
	if ((verify || hash) && (check || o.stats || o.all || (verify && hash)))
		cli_usage_error("--verify and --hash go alone (or with --json, --threads)");
	if (verify || hash) {
		int threads = o.threads ? o.threads : cli_default_threads(64);
		int n = argc - optind;
		return cli_exit(verify ? verify_paths(argv + optind, n, json, threads)
		                       : hash_paths(argv + optind, n, json, threads));
	}
	o.mode = check ? MODE_CHECK : json ? MODE_JSON : MODE_SUMMARY;
	if (o.threads == 0)
		o.threads = cli_default_threads(64);

	int status = CLI_OK, printed = 0;
	/* One JSON document whatever the count: several PATHs make an array. */
	int array = o.mode == MODE_JSON && argc - optind > 1;
	if (array)
		fputs("[\n", stdout);
	for (int i = optind; i < argc; i++) {
		int rc = o.mode == MODE_CHECK ? check_path(argv[i])
		                              : describe_path(argv[i], &o, &printed);
		/* Several paths: an unreadable one (2) outweighs an invalid one (1). */
		if (rc > status)
			status = rc;
		fflush(stdout);
	}
	if (array)
		fputs("]\n", stdout);
	return cli_exit(status);
}
