/*
 * show.c - stdiff's human output: the lines for tensors only in A or B,
 * shape and dtype changes, metadata and config.json keys, each pair's
 * verdict and figures, the dequantized tally, and --first. Every name
 * from a file is shown escaped (cli_print_name). What the lines say is
 * libst's result (st/diff.h); this file only words it.
 */
#include "stdiff/stdiff.h"

#include "fe/cli.h"
#include "common/layers.h"
#include "fe/markdown.h"
#include "common/order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lines ---------------------------------------------------------------- */

/* "WHAT: NAME", the name escaped. */
static void print_head(const char *what, const char *s, size_t len)
{
	fputs(what, stdout);
	cli_print_name(stdout, s, len);
}

static void print_line(const char *what, const char *s, size_t len)
{
	print_head(what, s, len);
	putchar('\n');
}

/* A metadata value after what: quoted, or (absent). */
static void print_meta_value(const char *what, const st_meta *m)
{
	fputs(what, stdout);
	if (!m) {
		fputs("(absent)", stdout);
		return;
	}
	print_head("\"", m->value, m->value_len);
	putchar('"');
}

/* %.4g, with "inf" spelled out. */
static void print_num(FILE *f, const char *what, double v)
{
	fputs(what, f);
	if (isinf(v))
		fputs("inf", f);
	else
		fprintf(f, "%.4g", v);
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

static void print_shape_changed(const st_diff_pair *p)
{
	char sa[512], sb[512];
	cli_fmt_shape(sa, sizeof sa, p->a->t);
	cli_fmt_shape(sb, sizeof sb, p->b->t);
	print_head("shape changed: ", p->a->key, p->a->key_len);
	printf(": %s %s -> %s %s\n", st_diff_label(p->a), sa, st_diff_label(p->b), sb);
}

static void print_dtype_changed(const st_diff_pair *p)
{
	print_head("dtype changed: ", p->a->key, p->a->key_len);
	printf(": %s -> %s%s\n", st_diff_label(p->a), st_diff_label(p->b),
	       p->comparable ? "" : " (values not comparable)");
}

/* The verdict's word, as the line starts. */
static const char *verdict_word(const st_diff_pair *p)
{
	return p->verdict == ST_DIFF_IDENTICAL ? "identical"
	       : p->differs                    ? "differs"
	                                       : "within tolerance";
}

/* The dtypes compared: "F32", "F32 vs BF16", "F8_E4M3 dequantized vs BF16". */
static void print_dtypes(FILE *f, const st_diff_pair *p)
{
	const char *la = st_diff_label(p->a), *lb = st_diff_label(p->b);
	if (p->same_dtype)
		fputs(la, f);
	else
		fprintf(f, "%s%s vs %s%s", la, p->dq && !p->dq_b ? " dequantized" : "", lb,
		        p->dq && p->dq_b ? " dequantized" : "");
}

/* ", B is exactly A rounded to BF16" and the like, or nothing. */
static void print_exactly(FILE *f, const st_diff_pair *p)
{
	if (p->dq && p->q_checked) {
		char what[64];
		cli_ascii_fallback(st_diff_quant_format(p->dq, what, sizeof what));
		fprintf(f, ", %s is %sexactly %s quantized to %s", p->dq_b ? "B" : "A",
		        p->q_exact ? "" : "not ", p->dq_b ? "A" : "B", what);
	} else if (p->dq) {
		fprintf(f, ", %s is %sexactly %s dequantized to %s", p->dq_b ? "A" : "B",
		        p->dq_exact ? "" : "not ", p->dq_b ? "B" : "A",
		        st_dtype_name(p->dq_b ? p->a->t->dtype : p->b->t->dtype));
	} else if (p->spec.check_rounded) {
		st_dtype tn = p->spec.a_is_wide ? p->b->t->dtype : p->a->t->dtype;
		fprintf(f, ", %s is %sexactly %s rounded to %s", p->spec.a_is_wide ? "B" : "A",
		        p->st.rounded ? "" : "not ", p->spec.a_is_wide ? "A" : "B",
		        st_dtype_name(tn));
	}
}

static void print_pair_line(const st_diff_pair *p)
{
	const st_compare_stats *s = &p->st;
	bool ident = p->verdict == ST_DIFF_IDENTICAL;
	fputs(verdict_word(p), stdout);
	print_head(": ", p->a->key, p->a->key_len);
	fputs(" (", stdout);
	print_dtypes(stdout, p);
	uint64_t n = p->a->t->n_elements;
	printf(", %llu element%s)", (unsigned long long)n, n == 1 ? "" : "s");
	if (ident) {
		if (s->nan_equal)
			printf(": NaN in both: %llu", (unsigned long long)s->nan_equal);
		putchar('\n');
		return;
	}
	printf(": %llu mismatched (%.3g%%)", (unsigned long long)s->mismatched,
	       n ? 100.0 * (double)s->mismatched / (double)n : 0.0);
	if (p->has_stats) {
		print_num(stdout, ", max abs ", s->max_abs);
		print_num(stdout, ", max rel ", s->max_rel);
		print_num(stdout, ", mean abs ", p->mean_abs);
	}
	if (s->worst_rank >= 0) {
		fputs(p->has_stats ? ", worst at " : ", first at ", stdout);
		print_coords(p->a->t, s->worst_index);
	}
	if (s->nan_mismatch)
		printf(", NaN on one side: %llu", (unsigned long long)s->nan_mismatch);
	if (s->nan_equal)
		printf(", NaN in both: %llu", (unsigned long long)s->nan_equal);
	print_exactly(stdout, p);
	putchar('\n');
	if (p->diag.kind != ST_DIAGNOSE_NONE) {
		char buf[512];
		printf("  %s\n", st_diagnose_describe(&p->diag, buf, sizeof buf));
	}
}

/* ---- groups of layers ----------------------------------------------------- */

/*
 * The pairs a report lists, folded by layer pattern (common/layers.h):
 * pairs whose names differ only in layer numbers and whose lines read
 * alike (pair_class) are one group, h.{0..47}.attn.c_attn.weight, with
 * the worst figures over it. A group of one is its pair's own line.
 */
struct group {
	const st_diff_pair *first; /* the words of the line are its */
	char *name;                /* a group of several: the pattern, raw */
	size_t name_len;
	size_t n;                  /* pairs */
	uint64_t elements, mismatched, nan_mismatch, nan_equal;
	double max_abs, max_rel;
	const st_diff_pair *worst; /* the largest max abs (else the first
	                              with a mismatch), or NULL */
};

/*
 * What the line of pair p says besides its name and figures: verdict,
 * dtypes and which "exactly" words follow. Pairs of one class (and the
 * same shape, which layers.c compares) may fold. A named trap or a
 * quantized layout has words of its own: its class is its own (index i).
 */
static uint64_t pair_class(const st_diff_pair *p, size_t i)
{
	if (p->diag.kind != ST_DIAGNOSE_NONE || p->q_checked)
		return (uint64_t)1 << 63 | i;
	uint64_t k = (uint64_t)p->verdict;
	k = k << 1 | p->differs;
	k = k << 1 | p->same_dtype;
	k = k << 1 | p->has_stats;
	k = k << 1 | (p->dq != NULL);
	k = k << 1 | p->dq_b;
	k = k << 1 | p->dq_exact;
	k = k << 1 | p->spec.check_rounded;
	k = k << 1 | p->spec.a_is_wide;
	k = k << 1 | p->st.rounded;
	k = k << 16 | (uint64_t)p->b->t->dtype; /* A's: layers.c compares it */
	return k;
}

static void group_add(struct group *g, const st_diff_pair *p)
{
	const st_compare_stats *s = &p->st;
	g->n++;
	g->elements += p->a->t->n_elements;
	g->mismatched += s->mismatched;
	g->nan_mismatch += s->nan_mismatch;
	g->nan_equal += s->nan_equal;
	if (!p->has_stats) {
		if (!g->worst && s->mismatched)
			g->worst = p;
		return;
	}
	/* NaN never wins a max; inf does. */
	if (!g->worst || s->max_abs > g->max_abs)
		g->worst = p;
	if (s->max_abs > g->max_abs)
		g->max_abs = s->max_abs;
	if (s->max_rel > g->max_rel)
		g->max_rel = s->max_rel;
}

/*
 * The groups of the pairs listed: every compared pair with verbose, else
 * those that differ; verbose 2 or more: one group per pair. In key order
 * of their first pairs.
 */
static struct group *make_groups(const st_diff *r, int verbose, size_t *n_groups)
{
	size_t m = 0, cap = r->n_pairs ? r->n_pairs : 1;
	const st_diff_pair **ps = cli_xmalloc(cap * sizeof *ps);
	for (size_t i = 0; i < r->n_pairs; i++)
		if (r->pairs[i].compared && (verbose || r->pairs[i].differs))
			ps[m++] = &r->pairs[i];
	/* A's tensors under their keys (a prefix stripped), for layers.c. */
	st_tensor *ts = cli_xmalloc(cap * sizeof *ts);
	const st_tensor **tp = cli_xmalloc(cap * sizeof *tp);
	uint64_t *klass = cli_xmalloc(cap * sizeof *klass);
	for (size_t k = 0; k < m; k++) {
		ts[k] = *ps[k]->a->t;
		ts[k].name = ps[k]->a->key;
		ts[k].name_len = ps[k]->a->key_len;
		tp[k] = &ts[k];
		klass[k] = pair_class(ps[k], k);
	}
	size_t nrows;
	layers_row *rows = layers_compact_classes(tp, klass, m, verbose >= 2, &nrows);
	struct group *g = cli_xcalloc(nrows ? nrows : 1, sizeof *g);
	for (size_t i = 0; i < nrows; i++) {
		g[i].first = ps[rows[i].members[0]];
		if (rows[i].nmembers > 1)
			g[i].name = layers_row_name(&rows[i], &g[i].name_len);
		for (size_t k = 0; k < rows[i].nmembers; k++)
			group_add(&g[i], ps[rows[i].members[k]]);
	}
	layers_free(rows, nrows);
	free(klass);
	free(tp);
	free(ts);
	free(ps);
	*n_groups = nrows;
	return g;
}

static void free_groups(struct group *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(g[i].name);
	free(g);
}

/*
 * A group of several pairs: "differs: h.{0..3}.mlp.c_fc.weight (F32 vs
 * BF16, 4 tensors, 4096 elements): 4090 mismatched (99.9%), max abs
 * 0.1125, max rel 2513, worst in h.0.mlp.c_fc.weight, B is not exactly A
 * rounded to BF16". One pair: its own line.
 */
static void print_group_line(const struct group *g)
{
	const st_diff_pair *p = g->first;
	if (!g->name) {
		print_pair_line(p);
		return;
	}
	fputs(verdict_word(p), stdout);
	print_head(": ", g->name, g->name_len);
	fputs(" (", stdout);
	print_dtypes(stdout, p);
	printf(", %zu tensors, %llu elements)", g->n, (unsigned long long)g->elements);
	if (p->verdict != ST_DIFF_IDENTICAL) {
		printf(": %llu mismatched (%.3g%%)", (unsigned long long)g->mismatched,
		       g->elements ? 100.0 * (double)g->mismatched / (double)g->elements
		                   : 0.0);
		if (p->has_stats) {
			print_num(stdout, ", max abs ", g->max_abs);
			print_num(stdout, ", max rel ", g->max_rel);
		}
		if (g->worst && (g->max_abs > 0 || !p->has_stats))
			print_head(p->has_stats ? ", worst in " : ", first in ",
			           g->worst->a->key, g->worst->a->key_len);
		if (g->nan_mismatch)
			printf(", NaN on one side: %llu", (unsigned long long)g->nan_mismatch);
	}
	if (g->nan_equal)
		printf("%sNaN in both: %llu", p->verdict == ST_DIFF_IDENTICAL ? ": " : ", ",
		       (unsigned long long)g->nan_equal);
	if (p->verdict != ST_DIFF_IDENTICAL)
		print_exactly(stdout, p);
	putchar('\n');
}

/*
 * A tally line of dequantized pairs of one dtype pair (like diagnose's):
 * how many are exactly the other side dequantized or quantized, and for
 * the rest (lossy) the largest errors against the tolerance.
 */
static void print_dq_tally(FILE *f, const struct st_diff_dq_tally *t)
{
	uint64_t within = t->tensors - t->exact - t->quantized;
	fprintf(f, "%llu tensor%s %s %s %s", (unsigned long long)t->tensors,
	        t->tensors == 1 ? "" : "s", t->a, cli_arrow(), t->b);
	const char *dq = t->dq_b ? "A exactly B dequantized" : "exactly A dequantized";
	const char *q = t->dq_b ? "exactly A quantized" : "A exactly B quantized";
	const char *all = t->tensors == 1 ? "" : "all ";
	if (t->exact == t->tensors)
		fprintf(f, ", %s%s", all, dq);
	else if (t->quantized == t->tensors)
		fprintf(f, ", %s%s", all, q);
	else if (within == t->tensors)
		fprintf(f, ", %swithin tolerance", all);
	else {
		const char *sep = ": ";
		if (t->exact) {
			fprintf(f, "%s%llu %s", sep, (unsigned long long)t->exact, dq);
			sep = ", ";
		}
		if (t->quantized) {
			fprintf(f, "%s%llu %s", sep, (unsigned long long)t->quantized, q);
			sep = ", ";
		}
		if (within)
			fprintf(f, "%s%llu within tolerance", sep, (unsigned long long)within);
	}
	if (t->exact < t->tensors) {
		print_num(f, "; max abs ", t->max_abs);
		print_num(f, ", max rel ", t->max_rel);
		print_num(f, ", mean abs ", t->mean_abs);
		print_num(f, " (rtol ", t->rtol);
		print_num(f, ", atol ", t->atol);
		fputs(t->tensors == 1 ? ")" : " at most)", f);
	}
	fputc('\n', f);
}

/* The config.json keys that differ, as lines, read before anything is
 * printed: one that cannot be read ends the run (exit 2). */
struct config_lines {
	char *text;
	size_t len;
	int n;
};

/* A config.json key that differs: one line, like a metadata entry. */
static void print_config_key(void *ctx, const char *key, const char *a,
                             const char *b)
{
	FILE *f = ctx;
	fputs("config.json ", f);
	cli_print_name(f, key, strlen(key));
	fputs(": ", f);
	cli_print_name(f, a ? a : "(absent)", strlen(a ? a : "(absent)"));
	fputs(" -> ", f);
	cli_print_name(f, b ? b : "(absent)", strlen(b ? b : "(absent)"));
	fputc('\n', f);
}

/*
 * Snapshots: a changed epsilon or activation changes no tensor. A
 * config.json that is not a JSON object is a warning, and compared as
 * none; one that is there but cannot be read is an I/O error.
 */
static void read_config_lines(const st_diff *r, struct config_lines *c)
{
	memset(c, 0, sizeof *c);
	FILE *f = open_memstream(&c->text, &c->len);
	if (!f)
		cli_die(CLI_ERROR, "out of memory comparing config.json");
	st_error err;
	c->n = st_arch_checkpoint_config_diff(r->ca, r->cb, print_config_key, f, &err);
	if (fclose(f) != 0)
		cli_die(CLI_ERROR, "out of memory comparing config.json");
	if (c->n == ST_EIO || c->n == ST_ENOMEM)
		cli_die(CLI_ERROR, "%s", err.message);
	if (c->n < 0) {
		cli_warn("%s", err.message);
		c->len = 0;
	}
}

/* The dtype tallies (without -v) and the exactly-dequantized or
 * -quantized verdict, each line after lead. */
static void print_tallies(FILE *f, const st_diff *r, int verbose, const char *lead)
{
	for (size_t i = 0; !verbose && i < r->n_dq_tally; i++) {
		fputs(lead, f);
		print_dq_tally(f, &r->dq_tally[i]);
	}
	for (size_t i = 0; !verbose && i < r->dtypes.n; i++) {
		char buf[160];
		fprintf(f, "%s%s\n", lead,
		        cli_ascii_fallback(st_diagnose_dtype_line(&r->dtypes, i, buf,
		                                                  sizeof buf)));
	}
	if (r->dq_exact)
		fprintf(f, "%s%s is exactly %s dequantized to %s\n", lead,
		        r->quant_side ? "A" : "B", r->quant_side ? "B" : "A", r->dq_to);
	else if (r->q_exact)
		fprintf(f, "%s%s is exactly %s quantized to %s\n", lead,
		        r->quant_side ? "B" : "A", r->quant_side ? "A" : "B", r->q_to);
}

/* The last line, without its newline: the counts and the verdict. */
static void print_summary(FILE *f, const st_diff *r, int n_config)
{
	size_t n = r->n_identical + r->n_within + r->n_differ;
	if (r->names_only)
		fprintf(f, "%zu tensor%s in both", r->n_pairs, r->n_pairs == 1 ? "" : "s");
	else
		fprintf(f, "%zu tensor%s compared: %zu identical, %zu within tolerance, "
		        "%zu differ",
		        n, n == 1 ? "" : "s", r->n_identical, r->n_within, r->n_differ);
	fprintf(f, "; %zu only in A, %zu only in B, %zu shape changed, %zu dtype "
	        "changed",
	        r->n_only_a, r->n_only_b, r->n_shape, r->n_dtype);
	if (r->n_tied)
		fprintf(f, ", %zu tied alias%s", r->n_tied, r->n_tied == 1 ? "" : "es");
	if (r->n_meta)
		fprintf(f, ", %zu metadata differ", r->n_meta);
	if (n_config > 0)
		fprintf(f, ", %d config.json key%s differ%s", n_config,
		        n_config == 1 ? "" : "s", n_config == 1 ? "s" : "");
	fprintf(f, ": %s", r->equal ? (r->names_only ? "same tensors" : "equal")
	                            : "different");
}

void stdiff_print_human(const st_diff *r, int verbose)
{
	struct config_lines cfg;
	read_config_lines(r, &cfg);
	if (r->quant_side >= 0) {
		char what[256];
		st_quant_plan_describe(&r->quant, what, sizeof what);
		printf("%s: %s\n", r->quant_side ? "B" : "A", what);
	}
	for (size_t i = 0; i < r->n_only_a; i++)
		print_line("only in A: ", r->only_a[i]->t->name, r->only_a[i]->t->name_len);
	for (size_t i = 0; i < r->n_only_b; i++)
		print_line("only in B: ", r->only_b[i]->t->name, r->only_b[i]->t->name_len);
	for (size_t i = 0; i < r->n_tied; i++) {
		const struct st_diff_tied *t = &r->tied[i];
		print_head("", t->t->t->name, t->t->t->name_len);
		print_head(": tied alias of ", t->of->t->name, t->of->t->name_len);
		printf(", not stored in %s\n", t->side ? "A" : "B");
	}
	for (size_t i = 0; i < r->n_pairs; i++) {
		const st_diff_pair *p = &r->pairs[i];
		if (!p->same_shape) {
			print_shape_changed(p);
		} else if (!p->same_dtype && (verbose >= 2 || !p->compared)) {
			/* One compared has its own line below (with -v, its group's). */
			print_dtype_changed(p);
		} else if (p->dq && !p->comparable && !r->names_only) {
			/* A quantized weight against one of its own dtype, unscaled. */
			print_head("not compared: ", p->a->key, p->a->key_len);
			printf(": %s%s vs %s%s (values not comparable)\n", st_diff_label(p->a),
			       p->dq_b ? "" : " dequantized", st_diff_label(p->b),
			       p->dq_b ? " dequantized" : "");
		}
	}
	fwrite(cfg.text, 1, cfg.len, stdout);
	int n_config = cfg.n;
	free(cfg.text);
	for (size_t i = 0; i < r->n_meta; i++) {
		const st_diff_meta *m = &r->meta[i];
		const st_meta *k = m->a ? m->a : m->b;
		print_head("metadata ", k->key, k->key_len);
		print_meta_value(": ", m->a);
		print_meta_value(" -> ", m->b);
		putchar('\n');
	}
	/*
	 * Without -v only what needs a look: what differs, folded by layer.
	 * Dtype changes that hold A's values (rounded, or within tolerance)
	 * are one line per pair of dtypes.
	 */
	size_t n_groups;
	struct group *g = make_groups(r, verbose, &n_groups);
	for (size_t i = 0; i < n_groups; i++)
		print_group_line(&g[i]);
	free_groups(g, n_groups);
	print_tallies(stdout, r, verbose, "");
	print_summary(stdout, r, n_config);
	putchar('\n');
}

/* ---- --markdown ------------------------------------------------------------ */

/* A cell's text, written to a memory stream, then escaped onto stdout. */
struct md_cell {
	FILE *f;
	char *text;
	size_t len;
};

static FILE *md_begin(struct md_cell *c)
{
	c->text = NULL;
	c->f = open_memstream(&c->text, &c->len);
	if (!c->f)
		cli_die(CLI_ERROR, "out of memory");
	return c->f;
}

static void md_end(struct md_cell *c, const char *after)
{
	if (fclose(c->f) != 0)
		cli_die(CLI_ERROR, "out of memory");
	markdown_cell(stdout, c->text);
	fputs(after, stdout);
	free(c->text);
}

/* "| NAME | DTYPES | VERDICT | | |": a tensor only on one side or
 * changed in shape. */
static void md_structure_row(const char *name, size_t len, const char *dtypes,
                             const char *verdict)
{
	struct md_cell c;
	fputs("| ", stdout);
	cli_print_name(md_begin(&c), name, len);
	md_end(&c, " | ");
	fputs(dtypes ? dtypes : "", md_begin(&c));
	md_end(&c, " | ");
	fputs(verdict, md_begin(&c));
	md_end(&c, " |  |  |\n");
}

static void md_group_row(const struct group *g)
{
	const st_diff_pair *p = g->first;
	const st_compare_stats *s = &p->st;
	bool ident = p->verdict == ST_DIFF_IDENTICAL;
	struct md_cell c;
	FILE *f = md_begin(&c);
	fputs("| ", stdout);
	if (g->name) {
		cli_print_name(f, g->name, g->name_len);
		fprintf(f, " (%zu tensors)", g->n);
	} else {
		cli_print_name(f, p->a->key, p->a->key_len);
	}
	md_end(&c, " | ");
	print_dtypes(md_begin(&c), p);
	md_end(&c, " | ");
	f = md_begin(&c);
	fputs(verdict_word(p), f);
	if (!ident) {
		fprintf(f, ": %llu of %llu mismatched", (unsigned long long)g->mismatched,
		        (unsigned long long)g->elements);
		if (g->nan_mismatch)
			fprintf(f, ", NaN on one side: %llu", (unsigned long long)g->nan_mismatch);
		print_exactly(f, p);
		if (p->diag.kind != ST_DIAGNOSE_NONE) {
			char buf[512];
			fprintf(f, "; %s", st_diagnose_describe(&p->diag, buf, sizeof buf));
		}
	}
	md_end(&c, " | ");
	if (!ident && p->has_stats) {
		print_num(md_begin(&c), "", g->name ? g->max_abs : s->max_abs);
		md_end(&c, " | ");
		print_num(md_begin(&c), "", g->name ? g->max_rel : s->max_rel);
		md_end(&c, " |\n");
	} else {
		fputs(" |  |\n", stdout);
	}
}

/* The lines after the table (tallies, summary) as escaped text. */
static void md_text(const st_diff *r, int verbose, int n_config)
{
	struct md_cell c;
	FILE *f = md_begin(&c);
	print_tallies(f, r, verbose, "- ");
	if (ftell(f) > 0)
		fputc('\n', f);
	print_summary(f, r, n_config);
	fputc('\n', f);
	if (fclose(f) != 0)
		cli_die(CLI_ERROR, "out of memory");
	/* Line by line: the newlines are the text's own, not markup. */
	markdown_cell(stdout, c.text);
	free(c.text);
}

void stdiff_print_markdown(const st_diff *r, int verbose, const char *path_a,
                           const char *path_b)
{
	struct config_lines cfg;
	read_config_lines(r, &cfg); /* counted in the summary, not listed */
	free(cfg.text);
	struct md_cell c;
	fputs("### ", stdout);
	cli_print_name(md_begin(&c), path_a, strlen(path_a));
	md_end(&c, " vs ");
	cli_print_name(md_begin(&c), path_b, strlen(path_b));
	md_end(&c, "\n\n");
	size_t n_groups;
	struct group *g = make_groups(r, verbose, &n_groups);
	size_t n_shape = 0;
	for (size_t i = 0; i < r->n_pairs; i++)
		n_shape += !r->pairs[i].same_shape;
	if (n_groups + r->n_only_a + r->n_only_b + n_shape) {
		fputs("| tensors | dtypes | verdict | max abs | max rel |\n"
		      "|:--|:--|:--|--:|--:|\n", stdout);
		for (size_t i = 0; i < r->n_only_a; i++)
			md_structure_row(r->only_a[i]->t->name, r->only_a[i]->t->name_len,
			                 st_diff_label(r->only_a[i]), "only in A");
		for (size_t i = 0; i < r->n_only_b; i++)
			md_structure_row(r->only_b[i]->t->name, r->only_b[i]->t->name_len,
			                 st_diff_label(r->only_b[i]), "only in B");
		for (size_t i = 0; i < r->n_pairs; i++) {
			const st_diff_pair *p = &r->pairs[i];
			if (p->same_shape)
				continue;
			char sa[512], sb[512], d[1100];
			cli_fmt_shape(sa, sizeof sa, p->a->t);
			cli_fmt_shape(sb, sizeof sb, p->b->t);
			snprintf(d, sizeof d, "%s %s %s %s %s", st_diff_label(p->a), sa,
			         cli_arrow(), st_diff_label(p->b), sb);
			md_structure_row(p->a->key, p->a->key_len, d, "shape changed");
		}
		for (size_t i = 0; i < n_groups; i++)
			md_group_row(&g[i]);
		putchar('\n');
	}
	free_groups(g, n_groups);
	md_text(r, verbose, cfg.n);
}

/*
 * --first: walk A's tensors in recorded order (order.h) and report the
 * first that is missing from B, changed in shape or outside tolerance.
 * Returns the exit code: 1 when there is one, 0 when A's walk ends clean
 * and B has nothing more either.
 */
int stdiff_print_first(st_diff *r, bool quiet)
{
	size_t n = st_checkpoint_n_tensors(r->ca), *idx, walked;
	int recorded = order_tensors(r->ca, &idx);
	if (recorded < 0)
		cli_die(CLI_ERROR, "out of memory");
	const char *how = recorded ? "A's recorded order" : "A's file order";
	size_t k = st_diff_first(r, idx, n, &walked);
	int rc = k < n || r->n_only_b ? CLI_NO : CLI_OK;
	bool only = false;
	const st_diff_pair *p = k < n ? st_diff_of_a(r, idx[k], &only) : NULL;
	if (!quiet && k < n) {
		printf("first difference: tensor %zu of %zu in %s\n", walked,
		       r->n_only_a + r->n_pairs, how);
		const st_tensor *t = st_checkpoint_tensor(r->ca, idx[k], NULL);
		st_error err;
		if (only)
			print_line("only in A: ", t->name, t->name_len);
		else if (!p->same_shape)
			print_shape_changed(p);
		else if (!p->compared)
			print_dtype_changed(p);
		else if (st_diff_diagnose(r, &r->pairs[p - r->pairs], &err) != ST_OK)
			cli_die(CLI_ERROR, "%s", err.message);
		else
			print_pair_line(p);
	} else if (!quiet && r->n_only_b) {
		printf("first difference: none in A's %zu tensors; only in B: ", walked);
		print_head("", r->only_b[0]->t->name, r->only_b[0]->t->name_len);
		printf("%s\n", r->n_only_b > 1 ? " (and others)" : "");
	} else if (!quiet) {
		printf("no difference: %zu tensors in %s, all within tolerance\n",
		       walked, how);
	}
	free(idx);
	return rc;
}

