/*
 * gguf_info.c - stinfo on a GGUF file: the summary, --json and --stats,
 * laid out as for safetensors (see gguf_info.h). The file, or the split
 * set it is a part of (one file block per part, as for shards), is read by
 * libst's st_gguf_open_set (headers only); --stats decodes every tensor of a
 * type libst knows (st_ggml_to_f32 and the integer types) chunk by chunk,
 * a tensor per thread.
 * A tensor of a type libst does not know is listed as "type N (unknown)",
 * its size and values unknown: --stats says so instead of figures.
 */
#include "common/gguf_info.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ckpt.h"
#include "fe/cli.h"
#include "fe/markdown.h"
#include "fe/shortest.h"
#include "common/layers.h"
#include "fe/table.h"

/* Arrays longer than this are shown as their type and length. */
#define ARRAY_SHOW 8
/* Strings longer than this are cut (with their length said). */
#define STRING_SHOW 200

int gguf_info_is_gguf(const char *path)
{
	size_t n = strlen(path);
	if (n > 5 && !strcmp(path + n - 5, ".gguf"))
		return 1;
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	char head[4];
	size_t k = fread(head, 1, 4, f);
	fclose(f);
	return st_gguf_is_gguf(head, k);
}

const char *gguf_type_label(unsigned type, char *buf, size_t n)
{
	const char *name = st_ggml_type_name(type);
	if (name)
		return name;
	snprintf(buf, n, "type %u (unknown)", type);
	return buf;
}

/* ---- values as text ---------------------------------------------------- */

/* The shortest decimal that reads back as v (as a float when f32). */
static void print_float(FILE *f, double v, int f32)
{
	char buf[SHORTEST_MAX];
	fwrite(buf, 1, f32 ? shortest_f32(buf, (float)v) : shortest_f64(buf, v), f);
}

static void print_string(FILE *f, const char *s, uint64_t n, int all)
{
	size_t show = !all && n > STRING_SHOW ? STRING_SHOW : (size_t)n;
	/* Do not cut a UTF-8 sequence in half. */
	while (show < n && show > 0 && ((unsigned char)s[show] & 0xc0) == 0x80)
		show--;
	char *p = cli_printable(s, show);
	fputs(p, f);
	free(p);
	if (show < n)
		fprintf(f, "... (%llu bytes)", (unsigned long long)n);
}

static void print_value(FILE *f, const st_gguf_value *v, int all, int depth)
{
	switch (v->type) {
	case ST_GGUF_UINT8: case ST_GGUF_UINT16: case ST_GGUF_UINT32:
	case ST_GGUF_UINT64:
		fprintf(f, "%llu", (unsigned long long)v->v.u);
		return;
	case ST_GGUF_INT8: case ST_GGUF_INT16: case ST_GGUF_INT32:
	case ST_GGUF_INT64:
		fprintf(f, "%lld", (long long)v->v.i);
		return;
	case ST_GGUF_FLOAT32:
	case ST_GGUF_FLOAT64:
		print_float(f, v->v.f, v->type == ST_GGUF_FLOAT32);
		return;
	case ST_GGUF_BOOL:
		fputs(v->v.u ? "true" : "false", f);
		return;
	case ST_GGUF_STRING:
		if (depth)
			fputc('"', f);
		print_string(f, v->v.s, v->n, all);
		if (depth)
			fputc('"', f);
		return;
	default:
		break;
	}
	if (!all && v->n > ARRAY_SHOW) {
		fprintf(f, "[%s x %llu]", st_gguf_type_name(v->elem_type),
		        (unsigned long long)v->n);
		return;
	}
	fputc('[', f);
	for (uint64_t i = 0; i < v->n; i++) {
		st_gguf_value e;
		st_gguf_array_get(v, i, &e);
		if (i)
			fputs(", ", f);
		print_value(f, &e, all, depth + 1);
	}
	fputc(']', f);
}

/* ---- the selection (--tensors) ----------------------------------------- */

/* Whether tensor i is shown: sel[i], or every tensor when sel is NULL. */
static int shown(const unsigned char *sel, size_t i)
{
	return !sel || sel[i];
}

/*
 * The tensors of g whose name one of globs matches (stdiff's --tensor
 * rule) into *sel (malloc'd, one byte a tensor; NULL without globs).
 * Returns how many are shown.
 */
static size_t select_tensors(const st_gguf *g, const char *const *globs, size_t n_globs,
                             unsigned char **sel)
{
	size_t n = st_gguf_n_tensors(g), hits = 0;
	*sel = NULL;
	if (!n_globs)
		return n;
	*sel = cli_xcalloc(n ? n : 1, 1);
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *x = st_gguf_tensor_at(g, i);
		int hit = st_diff_name_selected(globs, n_globs, x->name, x->name_len);
		if (hit < 0)
			cli_die(CLI_ERROR, "out of memory");
		(*sel)[i] = (unsigned char)hit;
		hits += (size_t)hit;
	}
	return hits;
}

/* ---- the tensor table -------------------------------------------------- */

/*
 * The shown tensors as st_tensor records for layers_compact and the
 * tables: shape in C order (GGUF dims reversed, as PyTorch would show the
 * tensor), the ggml type in dtype (compared, never named through
 * st_dtype_name); p[k] is tensor idx[k] of the file.
 */
struct view {
	st_tensor *t;
	const st_tensor **p;
	size_t *idx;
	uint64_t *dims;
	size_t n;
};

static void view_make(struct view *v, const st_gguf *g, const unsigned char *sel)
{
	size_t all = st_gguf_n_tensors(g);
	v->n = 0;
	v->t = cli_xcalloc(all ? all : 1, sizeof *v->t);
	v->p = cli_xcalloc(all ? all : 1, sizeof *v->p);
	v->idx = cli_xcalloc(all ? all : 1, sizeof *v->idx);
	v->dims = cli_xcalloc(all ? all * ST_GGUF_MAX_DIMS : 1, sizeof *v->dims);
	for (size_t j = 0; j < all; j++) {
		if (!shown(sel, j))
			continue;
		size_t i = v->n++;
		const st_gguf_tensor *x = st_gguf_tensor_at(g, j);
		v->idx[i] = j;
		uint64_t *d = v->dims + i * ST_GGUF_MAX_DIMS;
		for (unsigned k = 0; k < x->ndim; k++)
			d[k] = x->dims[x->ndim - 1 - k];
		v->t[i] = (st_tensor){.name = x->name, .name_len = x->name_len,
		                      .dtype = (st_dtype)(int)x->type,
		                      .ndim = x->ndim, .shape = d,
		                      .n_elements = x->n_elements,
		                      .begin = x->offset,
		                      .end = x->offset + x->n_bytes,
		                      .n_bytes = x->n_bytes};
		v->p[i] = &v->t[i];
	}
}

static void view_free(struct view *v)
{
	free(v->t);
	free(v->p);
	free(v->idx);
	free(v->dims);
}

struct totals {
	uint64_t tensors, params, bytes;
	uint64_t known_params; /* of the tensors of a type libst knows */
	/* by type; the last row sums the tensors of unknown types */
	struct { uint64_t tensors, params, bytes; } by[ST_GGML_TYPE_COUNT + 1];
};

/* A type's row in totals.by. */
static unsigned type_row(unsigned type)
{
	return st_ggml_type_name(type) ? type : ST_GGML_TYPE_COUNT;
}

/* The totals of the tensors sel shows (every tensor when NULL). */
static void totals(const st_gguf *g, const unsigned char *sel, struct totals *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		if (!shown(sel, i))
			continue;
		const st_gguf_tensor *x = st_gguf_tensor_at(g, i);
		t->tensors++;
		t->params += x->n_elements;
		t->bytes += x->n_bytes;
		if (st_ggml_type_name(x->type))
			t->known_params += x->n_elements;
		unsigned r = type_row(x->type);
		t->by[r].tensors++;
		t->by[r].params += x->n_elements;
		t->by[r].bytes += x->n_bytes;
	}
}

/*
 * Bits per weight: a type's from libst's type table (exact, a multiple
 * of 1/32: printed whole); "-" for a type libst does not know.
 */
static void fmt_type_bits(char *buf, size_t n, unsigned type)
{
	double bits;
	if (st_ggml_type_bits(type, &bits))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%g", bits);
}

/* The file's: its tensors' bytes * 8 over their elements (known types). */
static int file_bits(const struct totals *t, double *bits)
{
	if (!t->known_params)
		return 0;
	*bits = (double)t->bytes * 8 / (double)t->known_params;
	return 1;
}

static void print_type_table(const struct totals *t, int markdown)
{
	struct table tab;
	char c1[32], c2[96], c3[96], c4[32];
	table_init(&tab, 5, "lrrrr");
	table_add(&tab, (const char *const[]){"type", "tensors", "parameters",
	                                      "bytes", "bits/weight"});
	for (unsigned d = 0; d <= ST_GGML_TYPE_COUNT; d++) {
		if (!t->by[d].tensors)
			continue;
		snprintf(c1, sizeof c1, "%llu", (unsigned long long)t->by[d].tensors);
		table_fmt_full(c2, sizeof c2, t->by[d].params, 0);
		if (d == ST_GGML_TYPE_COUNT)
			snprintf(c3, sizeof c3, "unknown");
		else
			table_fmt_full(c3, sizeof c3, t->by[d].bytes, 1);
		const char *name = d < ST_GGML_TYPE_COUNT ? st_ggml_type_name(d)
		                                          : "unknown types";
		fmt_type_bits(c4, sizeof c4, d);
		table_add(&tab, (const char *const[]){name, c1, c2, c3, c4});
	}
	md_table_show(&tab, markdown);
	table_free(&tab);
}

/* A split set's "file" cell: the part's name, or "N files" for a row. */
static void part_cell(char *buf, size_t n, const st_gguf *g, const struct view *v,
                      const layers_row *row)
{
	size_t first = st_gguf_tensor_part(g, v->idx[row->members[0]]), parts = 1;
	for (size_t m = 1; m < row->nmembers; m++)
		if (st_gguf_tensor_part(g, v->idx[row->members[m]]) != first)
			parts++;
	if (parts > 1) {
		/* Count each part once. */
		parts = 0;
		for (size_t k = 0; k < st_gguf_n_parts(g); k++)
			for (size_t m = 0; m < row->nmembers; m++)
				if (st_gguf_tensor_part(g, v->idx[row->members[m]]) == k) {
					parts++;
					break;
				}
		snprintf(buf, n, "%zu files", parts);
		return;
	}
	const char *path = st_gguf_path(st_gguf_part(g, first));
	const char *base = strrchr(path, '/');
	char *p = cli_printable(base ? base + 1 : path, strlen(base ? base + 1 : path));
	snprintf(buf, n, "%s", p);
	free(p);
}

static void print_tensor_table(const st_gguf *g, const struct view *v, int all,
                               int markdown)
{
	int split = st_gguf_n_parts(g) > 1;
	size_t nrows;
	layers_row *rows = layers_compact(v->p, v->n, all, &nrows);
	struct table tab;
	char shape[1024], params[64], where[1024], type[32], bits[32];
	table_init(&tab, 6, "llrlrl");
	table_add(&tab, (const char *const[]){"name", "type", "bits/weight", "shape",
	                                      "parameters", split ? "file" : "offset"});
	for (size_t r = 0; r < nrows; r++) {
		const layers_row *row = &rows[r];
		const st_tensor *t = v->p[row->members[0]];
		size_t len;
		char *raw = layers_row_name(row, &len);
		char *name = table_display_name(raw, len);
		free(raw);
		cli_fmt_shape(shape, sizeof shape, t);
		if (row->nmembers > 1) {
			snprintf(params, sizeof params, "%zu x %llu", row->nmembers,
			         (unsigned long long)t->n_elements);
			snprintf(where, sizeof where, "-");
		} else {
			snprintf(params, sizeof params, "%llu",
			         (unsigned long long)t->n_elements);
			snprintf(where, sizeof where, "%llu",
			         (unsigned long long)t->begin);
		}
		if (split) /* offsets count from each part's data: name the part */
			part_cell(where, sizeof where, g, v, row);
		const char *tl = gguf_type_label((unsigned)t->dtype, type, sizeof type);
		fmt_type_bits(bits, sizeof bits, (unsigned)t->dtype);
		table_add(&tab, (const char *const[]){name, tl, bits, shape, params,
		                                      where});
		free(name);
	}
	md_table_show(&tab, markdown);
	table_free(&tab);
	layers_free(rows, nrows);
	if (markdown) /* a paragraph, not one more row of the table */
		putchar('\n');
	printf("shapes are row-major (the file's dims reversed; --json also "
	       "gives gguf_dims)\n");
}

/* ---- statistics -------------------------------------------------------- */

/*
 * Elements per partial result, and decoded at a time: both multiples of
 * every block size. A partial result is what the safetensors path's
 * stream chunk is (tools/stinfo/stats.c), so the two give the same
 * figures for the same values; the F32 and F64 buffers of a sub-chunk
 * (192 KiB) stay in L2 for the two passes of the statistics.
 */
#define STATS_CHUNK ((uint64_t)1 << 20)
#define STATS_SUB ((uint64_t)1 << 14)

/* Whether --stats can decode a ggml type (every type libst knows). */
static int decodable(unsigned type)
{
	st_dtype d;
	return st_ggml_to_f32(type, NULL, NULL, 0) == ST_OK ||
	       (!st_ggml_type_dtype(type, &d) && st_dtype_is_numeric(d));
}

/* Whether a ggml type holds integers (I8, I16, I32, I64). */
static int integer_type(unsigned type)
{
	st_dtype d;
	return !st_ggml_type_dtype(type, &d) && !st_dtype_is_float(d);
}

/* n elements from src (whole blocks) into part, STATS_SUB at a time. */
static void chunk_stats(unsigned type, const unsigned char *src, uint64_t n,
                        st_stats *part, float *f, double *x)
{
	unsigned blk, bytes;
	st_ggml_type_block(type, &blk, &bytes);
	st_dtype d;
	int plain = !st_ggml_type_dtype(type, &d);
	for (uint64_t at = 0; at < n; at += STATS_SUB) {
		uint64_t m = n - at < STATS_SUB ? n - at : STATS_SUB;
		const unsigned char *p = src + at / blk * bytes;
		if (plain) {
			st_dtype_widen(d, p, x, (size_t)m);
		} else {
			st_ggml_to_f32(type, p, f, m);
			st_convert(ST_DTYPE_F64, x, ST_DTYPE_F32, f, (size_t)m, NULL);
		}
		st_stats_add(part, x, (size_t)m);
	}
}

static void tensor_stats(const st_gguf *g, size_t i, st_stats *acc,
                         float *f, double *x)
{
	const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
	const unsigned char *p = st_gguf_tensor_data(g, i);
	unsigned blk, bytes;
	st_ggml_type_block(t->type, &blk, &bytes);
	for (uint64_t at = 0; at < t->n_elements; at += STATS_CHUNK) {
		uint64_t n = t->n_elements - at < STATS_CHUNK ? t->n_elements - at
		                                               : STATS_CHUNK;
		st_stats part;
		memset(&part, 0, sizeof part);
		chunk_stats(t->type, p + at / blk * bytes, n, &part, f, x);
		st_stats_merge(acc, &part);
	}
}

/*
 * The threads of --stats take whole tensors, the next one not yet taken,
 * and each tensor is summed in element order by one thread: the figures
 * do not depend on the number of threads. Memory: two sub-chunk buffers
 * per thread.
 */
struct stats_job {
	const st_gguf *g;
	const unsigned char *sel;
	st_stats *accs;
	atomic_size_t next;
};

struct stats_worker {
	struct stats_job *job;
	float *f;
	double *x;
	pthread_t id;
	int started;
};

static void *stats_worker_main(void *arg)
{
	struct stats_worker *w = arg;
	struct stats_job *j = w->job;
	size_t n = st_gguf_n_tensors(j->g);
	for (;;) {
		size_t i = atomic_fetch_add(&j->next, 1);
		if (i >= n)
			break;
		if (shown(j->sel, i) && decodable(st_gguf_tensor_at(j->g, i)->type))
			tensor_stats(j->g, i, &j->accs[i], w->f, w->x);
	}
	return NULL;
}

static st_stats *compute_stats(const st_gguf *g, const unsigned char *sel, int threads)
{
	size_t n = st_gguf_n_tensors(g);
	size_t nt = threads > 1 ? (size_t)threads : 1;
	if (nt > n)
		nt = n ? n : 1;
	struct stats_job job = {g, sel, cli_xcalloc(n ? n : 1, sizeof(st_stats)), 0};
	struct stats_worker *w = cli_xcalloc(nt, sizeof *w);
	for (size_t k = 0; k < nt; k++) {
		w[k].job = &job;
		w[k].f = cli_xmalloc(STATS_SUB * sizeof *w[k].f);
		w[k].x = cli_xmalloc(STATS_SUB * sizeof *w[k].x);
	}
	/* A thread that cannot start only means fewer workers. */
	for (size_t k = 1; k < nt; k++)
		w[k].started = !pthread_create(&w[k].id, NULL, stats_worker_main, &w[k]);
	stats_worker_main(&w[0]);
	for (size_t k = 0; k < nt; k++) {
		if (w[k].started)
			pthread_join(w[k].id, NULL);
		free(w[k].f);
		free(w[k].x);
	}
	free(w);
	return job.accs;
}

static void print_stats_table(const st_gguf *g, const unsigned char *sel,
                              const st_stats *accs, int markdown)
{
	struct table tab;
	char c[7][48];
	table_init(&tab, 9, "llrrrrrrr");
	table_add(&tab, (const char *const[]){"name", "type", "min", "max",
	                                      "mean", "std", "nan", "inf",
	                                      "zeros"});
	size_t skipped = 0;
	char buf[32];
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		if (!shown(sel, i))
			continue;
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		const st_stats *a = &accs[i];
		char *name = table_display_name(t->name, t->name_len);
		const char *type = gguf_type_label(t->type, buf, sizeof buf);
		if (!decodable(t->type)) {
			skipped++;
			table_add(&tab, (const char *const[]){name, type, "-", "-", "-",
			                                      "-", "-", "-", "-"});
			free(name);
			continue;
		}
		table_stats_cells(a, c);
		table_add(&tab, (const char *const[]){name, type, c[0], c[1], c[2],
		                                      c[3], c[4], c[5], c[6]});
		free(name);
	}
	md_table_show(&tab, markdown);
	table_free(&tab);
	if (skipped && markdown)
		putchar('\n');
	if (skipped)
		printf("note: no statistics for %zu tensor%s of a type libst does "
		       "not know: %s values were not read\n", skipped,
		       skipped == 1 ? "" : "s", skipped == 1 ? "its" : "their");
}

/* ---- the summary ------------------------------------------------------- */

/* One file's block: its path, format, header and data, metadata. */
static void print_file(const st_gguf *g, int all)
{
	char buf[128];
	const char *path = st_gguf_path(g);
	char *p = cli_printable(path, strlen(path));
	table_print_kv("file:", p);
	free(p);
	snprintf(buf, sizeof buf, "GGUF version %u (llama.cpp), alignment %llu",
	         st_gguf_version(g), (unsigned long long)st_gguf_alignment(g));
	table_print_kv("  format:", buf);
	table_fmt_full(buf, sizeof buf, st_gguf_data_offset(g), 1);
	table_print_kv("  header:", buf);
	table_fmt_full(buf, sizeof buf, st_gguf_data_size(g), 1);
	table_print_kv("  data:", buf);
	size_t nkv = st_gguf_n_kv(g);
	if (nkv == 0)
		table_print_kv("  metadata:", "(none)");
	for (size_t i = 0; i < nkv; i++) {
		const st_gguf_kv *kv = st_gguf_kv_at(g, i);
		printf("%-13s", i ? "" : "  metadata:");
		cli_print_name(stdout, kv->key, kv->key_len);
		fputs(": ", stdout);
		print_value(stdout, &kv->value, all, 0);
		putchar('\n');
	}
}

/* The bits/weight of t as the summary shows it, "-" without a known type. */
static void fmt_bits(char *buf, size_t n, const struct totals *t)
{
	double bits;
	if (file_bits(t, &bits))
		snprintf(buf, n, "%.4g", bits);
	else
		snprintf(buf, n, "-");
}

/* The text summary's head: the files, then the whole's totals. */
static void print_head(const char *path, const st_gguf *g, const struct gguf_info_view *v,
                       const struct totals *all, const struct totals *t)
{
	char *p = cli_printable(path, strlen(path));
	table_print_kv("path:", p);
	free(p);
	for (size_t k = 0; k < st_gguf_n_parts(g); k++)
		print_file(st_gguf_part(g, k), v->all);
	table_print_totals(all->tensors, all->params, all->bytes);
	if (all->tensors == 0)
		return;
	char buf[32];
	fmt_bits(buf, sizeof buf, all);
	table_print_kv("bits/weight:", buf);
	if (v->n_globs)
		table_print_selected(t->tensors, all->tensors, t->params, t->bytes);
}

/* --markdown's head: the title and a totals table (the selection's too). */
static void print_markdown_head(const char *path, const struct gguf_info_view *v,
                                const struct totals *all, const struct totals *t)
{
	char b1[32], b2[32];
	fmt_bits(b1, sizeof b1, all);
	fmt_bits(b2, sizeof b2, t);
	struct md_counts a = {all->tensors, all->params, all->bytes, b1};
	struct md_counts s = {t->tensors, t->params, t->bytes, b2};
	md_head(path, &a, v->n_globs ? &s : NULL);
}

static void print_summary(const char *path, const st_gguf *g, const struct gguf_info_view *v,
                          const unsigned char *sel, const st_stats *accs)
{
	struct totals all, t;
	totals(g, NULL, &all);
	totals(g, sel, &t);
	if (v->markdown)
		print_markdown_head(path, v, &all, &t);
	else
		print_head(path, g, v, &all, &t);
	if (t.tensors == 0)
		return;
	putchar('\n');
	print_type_table(&t, v->markdown);
	putchar('\n');
	if (accs) {
		print_stats_table(g, sel, accs, v->markdown);
	} else {
		struct view tv;
		view_make(&tv, g, sel);
		print_tensor_table(g, &tv, v->all, v->markdown);
		view_free(&tv);
	}
}

/* ---- JSON -------------------------------------------------------------- */

static void json_value(const st_gguf_value *v, int all)
{
	switch (v->type) {
	case ST_GGUF_UINT8: case ST_GGUF_UINT16: case ST_GGUF_UINT32:
	case ST_GGUF_UINT64:
		printf("%llu", (unsigned long long)v->v.u);
		return;
	case ST_GGUF_INT8: case ST_GGUF_INT16: case ST_GGUF_INT32:
	case ST_GGUF_INT64:
		printf("%lld", (long long)v->v.i);
		return;
	case ST_GGUF_FLOAT32:
		cli_json_float(stdout, (float)v->v.f);
		return;
	case ST_GGUF_FLOAT64:
		cli_json_double(stdout, v->v.f);
		return;
	case ST_GGUF_BOOL:
		fputs(v->v.u ? "true" : "false", stdout);
		return;
	case ST_GGUF_STRING:
		cli_json_string(stdout, v->v.s, (size_t)v->n);
		return;
	default:
		break;
	}
	(void)all;
	putchar('[');
	for (uint64_t i = 0; i < v->n; i++) {
		st_gguf_value e;
		st_gguf_array_get(v, i, &e);
		if (i)
			fputs(", ", stdout);
		json_value(&e, all);
	}
	putchar(']');
}

/*
 * gguf_metadata: each key's {"type": ...} and its "value"; an array gives
 * "element_type" and "length", and its "value" only with --all or when
 * it has at most ARRAY_SHOW elements.
 */
static void json_metadata(const st_gguf *g, int all)
{
	printf("  \"gguf_metadata\": {");
	for (size_t i = 0; i < st_gguf_n_kv(g); i++) {
		const st_gguf_kv *kv = st_gguf_kv_at(g, i);
		const st_gguf_value *v = &kv->value;
		printf("%s\n    ", i ? "," : "");
		cli_json_string(stdout, kv->key, kv->key_len);
		printf(": {\"type\": \"%s\"", st_gguf_type_name(v->type));
		if (v->type == ST_GGUF_ARRAY) {
			printf(", \"element_type\": \"%s\", \"length\": %llu",
			       st_gguf_type_name(v->elem_type),
			       (unsigned long long)v->n);
			if (!all && v->n > ARRAY_SHOW) {
				putchar('}');
				continue;
			}
		}
		printf(", \"value\": ");
		json_value(v, all);
		putchar('}');
	}
	printf("%s},\n", st_gguf_n_kv(g) ? "\n  " : "");
}

/* A type's bits per weight, or null for a type libst does not know. */
static void json_type_bits(unsigned type)
{
	double bits;
	if (st_ggml_type_bits(type, &bits))
		fputs("null", stdout);
	else
		cli_json_double(stdout, bits);
}

static void print_json(const char *path, const st_gguf *g, int all,
                       const unsigned char *sel, const st_stats *accs)
{
	printf("{\n  \"schema\": %d,\n  \"format\": \"gguf\",\n  \"files\": [\n",
	       CLI_JSON_SCHEMA);
	size_t np = st_gguf_n_parts(g);
	for (size_t k = 0; k < np; k++) {
		const st_gguf *part = st_gguf_part(g, k);
		const char *pp = np > 1 ? st_gguf_path(part) : path;
		printf("    {\"path\": ");
		cli_json_string(stdout, pp, strlen(pp));
		printf(", \"header_bytes\": %llu, \"data_bytes\": %llu, "
		       "\"version\": %u, \"alignment\": %llu, \"metadata\": {}}%s\n",
		       (unsigned long long)st_gguf_data_offset(part),
		       (unsigned long long)st_gguf_data_size(part),
		       st_gguf_version(part),
		       (unsigned long long)st_gguf_alignment(part),
		       k + 1 < np ? "," : "");
	}
	printf("  ],\n");
	json_metadata(g, all);
	printf("  \"tensors\": [\n");
	size_t n = st_gguf_n_tensors(g), left = 0;
	for (size_t i = 0; i < n; i++)
		left += shown(sel, i) ? 1 : 0;
	for (size_t i = 0; i < n; i++) {
		if (!shown(sel, i))
			continue;
		left--;
		const st_gguf_tensor *x = st_gguf_tensor_at(g, i);
		printf("    {\"name\": ");
		cli_json_string(stdout, x->name, x->name_len);
		const char *tn = st_ggml_type_name(x->type);
		if (tn)
			printf(", \"dtype\": \"%s\", \"shape\": [", tn);
		else
			printf(", \"dtype\": \"unknown\", \"ggml_type\": %u, "
			       "\"shape\": [", x->type);
		for (unsigned k = 0; k < x->ndim; k++)
			printf("%s%llu", k ? ", " : "",
			       (unsigned long long)x->dims[x->ndim - 1 - k]);
		printf("], \"gguf_dims\": ");
		cli_print_dims(stdout, x->dims, x->ndim);
		char bytes[32], end[32];
		snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)x->n_bytes);
		snprintf(end, sizeof end, "%llu",
		         (unsigned long long)(x->offset + x->n_bytes));
		printf(", \"parameters\": %llu, \"bytes\": %s, \"bits_per_weight\": ",
		       (unsigned long long)x->n_elements, tn ? bytes : "null");
		json_type_bits(x->type);
		printf(", \"file\": ");
		const char *fp = np > 1 ? st_gguf_path(st_gguf_part(
		                              g, st_gguf_tensor_part(g, i)))
		                        : path;
		cli_json_string(stdout, fp, strlen(fp));
		printf(", \"data_offsets\": [%llu, %s]",
		       (unsigned long long)x->offset, tn ? end : "null");
		if (accs) {
			if (decodable(x->type))
				table_json_stats(&accs[i], integer_type(x->type));
			else
				printf(", \"stats\": null");
		}
		printf("}%s\n", left ? "," : "");
	}
	struct totals t;
	totals(g, sel, &t);
	printf("  ],\n  \"total\": {\"tensors\": %llu, \"parameters\": %llu, "
	       "\"bytes\": %llu, \"bits_per_weight\": ",
	       (unsigned long long)t.tensors, (unsigned long long)t.params,
	       (unsigned long long)t.bytes);
	double bits;
	if (file_bits(&t, &bits))
		cli_json_double(stdout, bits);
	else
		fputs("null", stdout);
	printf(", \"by_dtype\": {");
	int first = 1;
	for (unsigned d = 0; d <= ST_GGML_TYPE_COUNT; d++) {
		if (!t.by[d].tensors)
			continue;
		printf("%s\"%s\": {\"tensors\": %llu, \"parameters\": %llu, "
		       "\"bytes\": %llu, \"bits_per_weight\": ", first ? "" : ", ",
		       d < ST_GGML_TYPE_COUNT ? st_ggml_type_name(d) : "unknown",
		       (unsigned long long)t.by[d].tensors,
		       (unsigned long long)t.by[d].params,
		       (unsigned long long)t.by[d].bytes);
		json_type_bits(d);
		putchar('}');
		first = 0;
	}
	printf("}}\n}\n");
}

int gguf_info_describe(const char *path, const struct gguf_info_view *v, int *printed)
{
	st_gguf *g;
	st_error err;
	if (st_gguf_open_set(&g, path, &err) != ST_OK) {
		cli_error_path(path, &err);
		return CLI_ERROR;
	}
	unsigned char *sel;
	size_t n_sel = select_tensors(g, v->globs, v->n_globs, &sel);
	if (v->n_globs && n_sel == 0) {
		free(sel);
		st_gguf_close(g);
		return GGUF_INFO_NO_MATCH;
	}
	st_stats *accs = v->stats ? compute_stats(g, sel, v->threads) : NULL;
	if (!v->json && *printed)
		putchar('\n');
	if (v->json && *printed)
		fputs(",\n", stdout);
	*printed = 1;
	if (v->json)
		print_json(path, g, v->all, sel, accs);
	else
		print_summary(path, g, v, sel, accs);
	free(accs);
	free(sel);
	st_gguf_close(g);
	return CLI_OK;
}
