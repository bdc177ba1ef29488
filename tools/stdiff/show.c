/*
 * show.c - stdiff's human output: the lines for tensors only in A or B,
 * shape and dtype changes, metadata and config.json keys, each pair's
 * verdict and figures, the dequantized tally, and --first. Every name
 * from a file is shown escaped (cli_print_name). What the lines say is
 * libst's result (st/diff.h); this file only words it.
 */
#include "stdiff/stdiff.h"

#include "fe/cli.h"
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
static void print_num(const char *what, double v)
{
	fputs(what, stdout);
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

static void print_pair_line(const st_diff_pair *p)
{
	const st_compare_stats *s = &p->st;
	bool ident = p->verdict == ST_DIFF_IDENTICAL;
	const char *la = st_diff_label(p->a), *lb = st_diff_label(p->b);
	print_head(ident ? "identical: " : p->differs ? "differs: " : "within tolerance: ",
	           p->a->key, p->a->key_len);
	if (p->same_dtype)
		printf(" (%s", la);
	else
		printf(" (%s%s vs %s%s", la, p->dq && !p->dq_b ? " dequantized" : "",
		       lb, p->dq && p->dq_b ? " dequantized" : "");
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
		print_num(", max abs ", s->max_abs);
		print_num(", max rel ", s->max_rel);
		print_num(", mean abs ", p->mean_abs);
	}
	if (s->worst_rank >= 0) {
		fputs(p->has_stats ? ", worst at " : ", first at ", stdout);
		print_coords(p->a->t, s->worst_index);
	}
	if (s->nan_mismatch)
		printf(", NaN on one side: %llu", (unsigned long long)s->nan_mismatch);
	if (s->nan_equal)
		printf(", NaN in both: %llu", (unsigned long long)s->nan_equal);
	if (p->dq && p->q_checked) {
		char what[64];
		cli_ascii_fallback(st_diff_quant_format(p->dq, what, sizeof what));
		printf(", %s is %sexactly %s quantized to %s", p->dq_b ? "B" : "A",
		       p->q_exact ? "" : "not ", p->dq_b ? "A" : "B", what);
	} else if (p->dq) {
		printf(", %s is %sexactly %s dequantized to %s", p->dq_b ? "A" : "B",
		       p->dq_exact ? "" : "not ", p->dq_b ? "B" : "A",
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

/*
 * A tally line of dequantized pairs of one dtype pair (like diagnose's):
 * how many are exactly the other side dequantized or quantized, and for
 * the rest (lossy) the largest errors against the tolerance.
 */
static void print_dq_tally(const struct st_diff_dq_tally *t)
{
	uint64_t within = t->tensors - t->exact - t->quantized;
	printf("%llu tensor%s %s %s %s", (unsigned long long)t->tensors,
	       t->tensors == 1 ? "" : "s", t->a, cli_arrow(), t->b);
	const char *dq = t->dq_b ? "A exactly B dequantized" : "exactly A dequantized";
	const char *q = t->dq_b ? "exactly A quantized" : "A exactly B quantized";
	const char *all = t->tensors == 1 ? "" : "all ";
	if (t->exact == t->tensors)
		printf(", %s%s", all, dq);
	else if (t->quantized == t->tensors)
		printf(", %s%s", all, q);
	else if (within == t->tensors)
		printf(", %swithin tolerance", all);
	else {
		const char *sep = ": ";
		if (t->exact) {
			printf("%s%llu %s", sep, (unsigned long long)t->exact, dq);
			sep = ", ";
		}
		if (t->quantized) {
			printf("%s%llu %s", sep, (unsigned long long)t->quantized, q);
			sep = ", ";
		}
		if (within)
			printf("%s%llu within tolerance", sep, (unsigned long long)within);
	}
	if (t->exact < t->tensors) {
		print_num("; max abs ", t->max_abs);
		print_num(", max rel ", t->max_rel);
		print_num(", mean abs ", t->mean_abs);
		print_num(" (rtol ", t->rtol);
		print_num(", atol ", t->atol);
		fputs(t->tensors == 1 ? ")" : " at most)", stdout);
	}
	putchar('\n');
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

void stdiff_print_human(const st_diff *r, bool verbose)
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
		} else if (!p->same_dtype && (verbose || !p->compared)) {
			/* One that differs has its own line below. */
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
	 * Without -v only what needs a look: what differs. Dtype changes that
	 * hold A's values (rounded, or within tolerance) are one line per pair
	 * of dtypes.
	 */
	for (size_t i = 0; i < r->n_pairs; i++)
		if (r->pairs[i].compared && (verbose || r->pairs[i].differs))
			print_pair_line(&r->pairs[i]);
	for (size_t i = 0; !verbose && i < r->n_dq_tally; i++)
		print_dq_tally(&r->dq_tally[i]);
	for (size_t i = 0; !verbose && i < r->dtypes.n; i++) {
		char buf[160];
		printf("%s\n", cli_ascii_fallback(st_diagnose_dtype_line(&r->dtypes, i, buf,
		                                                         sizeof buf)));
	}
	if (r->dq_exact)
		printf("%s is exactly %s dequantized to %s\n", r->quant_side ? "A" : "B",
		       r->quant_side ? "B" : "A", r->dq_to);
	else if (r->q_exact)
		printf("%s is exactly %s quantized to %s\n", r->quant_side ? "B" : "A",
		       r->quant_side ? "A" : "B", r->q_to);
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
	if (r->n_tied)
		printf(", %zu tied alias%s", r->n_tied, r->n_tied == 1 ? "" : "es");
	if (r->n_meta)
		printf(", %zu metadata differ", r->n_meta);
	if (n_config > 0)
		printf(", %d config.json key%s differ%s", n_config,
		       n_config == 1 ? "" : "s", n_config == 1 ? "s" : "");
	printf(": %s\n", r->equal ? (r->names_only ? "same tensors" : "equal")
	                          : "different");
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

