/*
 * diff_json.c - stdiff --json: the document of what st_diff_match and
 * st_diff_values found (see diff_json.h).
 */
#include "common/diff_json.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

/* A list of names, comma-separated. */
static void json_names(const st_diff_tensor *const *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ", " : "", stdout);
		json_name(l[i]->t->name, l[i]->t->name_len);
	}
}

/* A compared pair's entry of "tensors". */
static void json_pair(const st_diff *r, const st_diff_pair *p)
{
	fputs("{\"name\": ", stdout);
	json_name(p->a->key, p->a->key_len);
	printf(", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\", \"elements\": %llu"
	       ", \"identical\": %s",
	       st_dtype_name(p->a->t->dtype), st_dtype_name(p->b->t->dtype),
	       (unsigned long long)p->a->t->n_elements,
	       p->verdict == ST_DIFF_IDENTICAL ? "true" : "false");
	json_stat("max_abs_diff", p->has_stats, p->st.max_abs);
	json_stat("max_rel_diff", p->has_stats, p->st.max_rel);
	json_stat("mean_abs_diff", p->has_stats, p->mean_abs);
	printf(", \"mismatched\": %llu, \"worst_index\": ",
	       (unsigned long long)p->st.mismatched);
	if (p->st.worst_rank >= 0)
		printf("%llu", (unsigned long long)p->st.worst_index);
	else
		fputs("null", stdout);
	fputs(", \"rounded_equal\": ", stdout);
	fputs(!p->spec.check_rounded ? "null" : p->st.rounded ? "true" : "false", stdout);
	printf(", \"nan_equal\": %llu, \"rtol\": ", (unsigned long long)p->st.nan_equal);
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
		printf(", \"exactly_dequantized\": %s", p->dq_exact ? "true" : "false");
	} else if (r->quant_side >= 0) {
		fputs(", \"dequantized\": null, \"scale\": null, "
		      "\"exactly_dequantized\": null", stdout);
	}
	putchar('}');
}

void diff_json_print(const st_diff *r)
{
	printf("{\"schema\": %d, \"equal\": %s,\n \"only_in_a\": [", CLI_JSON_SCHEMA,
	       r->equal ? "true" : "false");
	json_names(r->only_a, r->n_only_a);
	fputs("],\n \"only_in_b\": [", stdout);
	json_names(r->only_b, r->n_only_b);
	fputs("],\n \"changed\": [", stdout);
	bool first = true;
	for (size_t i = 0; i < r->n_pairs; i++) {
		const st_diff_pair *p = &r->pairs[i];
		if (p->same_shape && p->same_dtype)
			continue;
		fputs(first ? "\n  {\"name\": " : ",\n  {\"name\": ", stdout);
		first = false;
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
	fputs(r->n_meta ? "\n ],\n \"tensors\": [" : "],\n \"tensors\": [", stdout);
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
	       "[%llu, %llu], \"exactly_dequantized_to\": ",
	       r->quant_side ? "b" : "a", q->n_fp8, q->n_mxfp4, q->n_scales,
	       (unsigned long long)q->scale_bytes, (unsigned long long)q->block_rows,
	       (unsigned long long)q->block_cols);
	if (r->dq_exact)
		json_name(r->dq_to, strlen(r->dq_to));
	else
		fputs("null", stdout);
	puts("}}");
}

