/*
 * diff_json.c - stdiff --json: the document of what st_diff_match and
 * st_diff_values found (see diff_json.h).
 */
#include "common/diff_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/order.h"
#include "fe/cli.h"

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

/* A fitted rotary base, or null when the frequencies fit none. */
static void json_base(double base)
{
	if (base > 0)
		cli_json_double(stdout, base);
	else
		fputs("null", stdout);
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
		[ST_DIAGNOSE_ROTARY_ROWS] = "rotary_rows", [ST_DIAGNOSE_ROW_SCALED] = "row_scaled",
		[ST_DIAGNOSE_ROTARY] = "rotary", [ST_DIAGNOSE_GQA] = "gqa",
	};
	static const char *const layouts[] = {
		[ST_DIAGNOSE_ROTARY_UNKNOWN] = "unknown", [ST_DIAGNOSE_ROTARY_HALF] = "rotate_half",
		[ST_DIAGNOSE_ROTARY_INTERLEAVED] = "interleaved",
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
	} else if (d->kind == ST_DIAGNOSE_ROTARY_ROWS) {
		printf(", \"head_dim\": %llu, \"to_interleaved\": %s",
		       (unsigned long long)d->head_dim, d->to_interleaved ? "true" : "false");
	} else if (d->kind == ST_DIAGNOSE_ROW_SCALED) {
		fputs(", \"scale_min\": ", stdout);
		cli_json_double(stdout, d->scale_min);
		fputs(", \"scale_max\": ", stdout);
		cli_json_double(stdout, d->scale_max);
		printf(", \"norm\": %s, \"eps_delta\": ", d->norm ? "true" : "false");
		if (isfinite(d->eps_delta))
			cli_json_double(stdout, d->eps_delta);
		else
			fputs("null", stdout);
	} else if (d->kind == ST_DIAGNOSE_ROTARY) {
		printf(", \"head_dim\": %llu, \"layout_a\": \"%s\", \"layout_b\": \"%s\", "
		       "\"base_a\": ", (unsigned long long)d->head_dim, layouts[d->layout_a],
		       layouts[d->layout_b]);
		json_base(d->base_a);
		fputs(", \"base_b\": ", stdout);
		json_base(d->base_b);
	} else if (d->kind == ST_DIAGNOSE_GQA) {
		printf(", \"n_head\": %u, \"n_kv_head\": %u, \"a_tiled\": %s", d->n_head,
		       d->n_kv_head, d->a_tiled ? "true" : "false");
	}
	putchar('}');
}

/* A list of names, comma-separated. */
static void json_names(const st_diff_tensor *const *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ", " : "", stdout);
		json_name(l[i]->t->name, l[i]->t->name_len);
	}
}

/* One word of a verdict, as --map gpt2 says it too. */
static const char *verdict_word(const st_diff_pair *p)
{
	return p->verdict == ST_DIFF_IDENTICAL ? "identical"
	       : p->differs                    ? "differs"
	                                       : "within tolerance";
}

/*
 * Whether the other side is exactly one side encoded (rounded to a
 * narrower float, dequantized, quantized), or null when no such relation
 * was checked (the same dtype; not floats).
 */
static const char *encoded_word(const st_diff_pair *p)
{
	if (p->dq)
		return p->dq_exact || p->q_exact ? "true" : "false";
	if (!p->spec.check_rounded)
		return "null";
	return p->st.rounded ? "true" : "false";
}

/* A changed pair's dtypes and shapes: , "dtype_a", "dtype_b", "shape_a", "shape_b". */
static void json_dtypes_shapes(const st_diff_pair *p)
{
	printf(", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\", \"shape_a\": ",
	       st_dtype_name(p->a->t->dtype), st_dtype_name(p->b->t->dtype));
	json_shape(p->a->t);
	fputs(", \"shape_b\": ", stdout);
	json_shape(p->b->t);
}

/* A compared pair's entry of "tensors": the keys --map gpt2's entries
 * have, then this mode's own. */
static void json_pair(const st_diff *r, const st_diff_pair *p)
{
	fputs("{\"name\": ", stdout);
	json_name(p->a->key, p->a->key_len);
	printf(", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\", \"elements\": %llu"
	       ", \"values_compared\": true, \"verdict\": \"%s\", \"identical\": %s"
	       ", \"exactly_encoded\": %s",
	       st_dtype_name(p->a->t->dtype), st_dtype_name(p->b->t->dtype),
	       (unsigned long long)p->a->t->n_elements, verdict_word(p),
	       p->verdict == ST_DIFF_IDENTICAL ? "true" : "false", encoded_word(p));
	printf(", \"mismatched\": %llu", (unsigned long long)p->st.mismatched);
	json_stat("max_abs_diff", p->has_stats, p->st.max_abs);
	json_stat("max_rel_diff", p->has_stats, p->st.max_rel);
	fputs(", \"rtol\": ", stdout);
	cli_json_double(stdout, p->spec.rtol);
	fputs(", \"atol\": ", stdout);
	cli_json_double(stdout, p->spec.atol);
	json_stat("mean_abs_diff", p->has_stats, p->mean_abs);
	fputs(", \"worst_index\": ", stdout);
	if (p->st.worst_rank >= 0)
		printf("%llu", (unsigned long long)p->st.worst_index);
	else
		fputs("null", stdout);
	printf(", \"nan_equal\": %llu", (unsigned long long)p->st.nan_equal);
	fputs(", \"diagnosis\": ", stdout);
	json_diagnosis(&p->diag);
	/* With a quantized side (only): what was dequantized, and whether B
	 * was checked as A quantized again. */
	if (p->dq) {
		const st_tensor *sc = st_checkpoint_tensor(p->dq_b ? r->cb : r->ca,
		                                           p->dq->scale, NULL);
		printf(", \"dequantized\": \"%s\", \"scale\": ", p->dq_b ? "b" : "a");
		json_name(sc->name, sc->name_len);
		printf(", \"quantization_checked\": %s", p->q_checked ? "true" : "false");
	} else if (r->quant_side >= 0) {
		fputs(", \"dequantized\": null, \"scale\": null, "
		      "\"quantization_checked\": false", stdout);
	}
	putchar('}');
}

/* The tied aliases: {"name", "alias_of", "stored_in"}. */
static void json_tied(const st_diff *r)
{
	fputs(",\n \"tied_aliases\": [", stdout);
	for (size_t i = 0; i < r->n_tied; i++) {
		const struct st_diff_tied *t = &r->tied[i];
		fputs(i ? ", {\"name\": " : "{\"name\": ", stdout);
		json_name(t->t->t->name, t->t->t->name_len);
		fputs(", \"alias_of\": ", stdout);
		json_name(t->of->t->name, t->of->t->name_len);
		printf(", \"only_in\": \"%s\"}", t->side ? "b" : "a");
	}
	putchar(']');
}

/* The config.json keys that differ, collected before anything is printed. */
struct config_json {
	FILE *f;
	int n;
};

/* A differing config.json key: {"key", "a", "b"}, each value its JSON
 * text as a string, null where absent. */
static void config_entry(void *ctx, const char *key, const char *a, const char *b)
{
	struct config_json *c = ctx;
	fputs(c->n++ ? ",\n  {\"key\": " : "\n  {\"key\": ", c->f);
	cli_json_string(c->f, key, strlen(key));
	fputs(", \"a\": ", c->f);
	if (a)
		cli_json_string(c->f, a, strlen(a));
	else
		fputs("null", c->f);
	fputs(", \"b\": ", c->f);
	if (b)
		cli_json_string(c->f, b, strlen(b));
	else
		fputs("null", c->f);
	fputc('}', c->f);
}

/*
 * The "config" list's text (malloc'd): as the text output, a config.json
 * that is not a JSON object is a warning and compared as none, one that
 * cannot be read ends the run.
 */
static char *config_list(const st_diff *r)
{
	char *text = NULL;
	size_t len = 0;
	struct config_json c = {open_memstream(&text, &len), 0};
	if (!c.f)
		cli_die(CLI_ERROR, "out of memory comparing config.json");
	st_error err;
	int rc = st_arch_checkpoint_config_diff(r->ca, r->cb, config_entry, &c, &err);
	if (fclose(c.f) != 0)
		cli_die(CLI_ERROR, "out of memory comparing config.json");
	if (rc == ST_EIO || rc == ST_ENOMEM)
		cli_die(CLI_ERROR, "%s", err.message);
	if (rc < 0) {
		cli_warn("%s", err.message);
		text[0] = 0;
	}
	return text;
}

void diff_json_print(const st_diff *r)
{
	char *config = config_list(r);
	printf("{\"schema\": %d, \"equal\": %s,\n \"only_in_a\": [", CLI_JSON_SCHEMA,
	       r->equal ? "true" : "false");
	json_names(r->only_a, r->n_only_a);
	fputs("],\n \"only_in_b\": [", stdout);
	json_names(r->only_b, r->n_only_b);
	putchar(']');
	json_tied(r);
	fputs(",\n \"changed\": [", stdout);
	bool first = true;
	for (size_t i = 0; i < r->n_pairs; i++) {
		const st_diff_pair *p = &r->pairs[i];
		if (p->same_shape && p->same_dtype)
			continue;
		fputs(first ? "\n  {\"name\": " : ",\n  {\"name\": ", stdout);
		first = false;
		json_name(p->a->key, p->a->key_len);
		json_dtypes_shapes(p);
		printf(", \"values_compared\": %s}", p->compared ? "true" : "false");
	}
	fputs(first ? "],\n \"metadata\": [" : "\n ],\n \"metadata\": [", stdout);
	for (size_t i = 0; i < r->n_meta; i++) {
		const st_diff_meta *m = &r->meta[i];
		const st_meta *k = m->a ? m->a : m->b;
		fputs(i ? ",\n  {\"key\": " : "\n  {\"key\": ", stdout);
		json_name(k->key, k->key_len);
		fputs(", \"a\": ", stdout);
		json_meta_value(m->a);
		fputs(", \"b\": ", stdout);
		json_meta_value(m->b);
		putchar('}');
	}
	fputs(r->n_meta ? "\n ],\n \"config\": [" : "],\n \"config\": [", stdout);
	fputs(config, stdout);
	fputs(config[0] ? "\n ],\n \"tensors\": [" : "],\n \"tensors\": [", stdout);
	free(config);
	first = true;
	for (size_t i = 0; i < r->n_pairs; i++) {
		if (!r->pairs[i].compared)
			continue;
		fputs(first ? "\n  " : ",\n  ", stdout);
		first = false;
		json_pair(r, &r->pairs[i]);
	}
	fputs(first ? "]" : "\n ]", stdout);
	if (r->quant_side < 0) {
		puts("}");
		return;
	}
	const st_quant_plan *q = &r->quant;
	printf(",\n \"dequantized\": {\"side\": \"%s\", \"fp8_weights\": %zu, \"mxfp4_weights\": %zu, "
	       "\"scale_tensors\": %zu, \"scale_bytes\": %llu, \"block_size\": "
	       "[%llu, %llu], \"exactly_quantized_to\": ",
	       r->quant_side ? "b" : "a", q->n_fp8, q->n_mxfp4, q->n_scales,
	       (unsigned long long)q->scale_bytes, (unsigned long long)q->block_rows,
	       (unsigned long long)q->block_cols);
	if (r->q_exact)
		json_name(r->q_to, strlen(r->q_to));
	else
		fputs("null", stdout);
	fputs(", \"exactly_dequantized_to\": ", stdout);
	if (r->dq_exact)
		json_name(r->dq_to, strlen(r->dq_to));
	else
		fputs("null", stdout);
	puts("}}");
}


int diff_json_first(st_diff *r)
{
	size_t n = st_checkpoint_n_tensors(r->ca), *idx, walked;
	int recorded = order_tensors(r->ca, &idx);
	if (recorded < 0)
		cli_die(CLI_ERROR, "out of memory");
	size_t k = st_diff_first(r, idx, n, &walked);
	int rc = k < n || r->n_only_b ? CLI_NO : CLI_OK;
	bool only = false;
	const st_diff_pair *p = k < n ? st_diff_of_a(r, idx[k], &only) : NULL;
	printf("{\"schema\": %d, \"equal\": %s, \"order\": \"%s\", \"walked\": %zu, "
	       "\"tensors\": %zu,\n \"first\": ",
	       CLI_JSON_SCHEMA, rc == CLI_OK ? "true" : "false", recorded ? "recorded" : "file",
	       walked, r->n_only_a + r->n_pairs);
	if (k >= n) {
		fputs("null", stdout);
	} else if (only) {
		const st_tensor *t = st_checkpoint_tensor(r->ca, idx[k], NULL);
		printf("{\"position\": %zu, \"kind\": \"only_in_a\", \"name\": ", walked);
		json_name(t->name, t->name_len);
		putchar('}');
	} else if (!p->same_shape || !p->compared) {
		printf("{\"position\": %zu, \"kind\": \"%s\", \"name\": ", walked,
		       !p->same_shape ? "shape_changed" : "not_compared");
		json_name(p->a->key, p->a->key_len);
		json_dtypes_shapes(p);
		putchar('}');
	} else {
		st_error err;
		if (st_diff_diagnose(r, &r->pairs[p - r->pairs], &err) != ST_OK)
			cli_die(CLI_ERROR, "%s", err.message);
		printf("{\"position\": %zu, \"kind\": \"differs\", \"tensor\": ", walked);
		json_pair(r, p);
		putchar('}');
	}
	fputs(",\n \"only_in_b\": [", stdout);
	json_names(r->only_b, r->n_only_b);
	puts("]}");
	free(idx);
	return rc;
}
