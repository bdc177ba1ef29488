/*
 * quant_info.c - a quantized checkpoint's layouts (libst's
 * st_quant_summary) in words and in JSON, and its --check (quant_info.h).
 */
#include "common/quant_info.h"

#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"
#include "fe/table.h"

void quant_info_print(FILE *f, const st_quant_summary *q)
{
	char line[256], n1[96], n2[96], n3[96];

	for (size_t i = 0; i < q->n_layouts; i++) {
		st_quant_layout_describe(&q->layouts[i], line, sizeof line);
		fprintf(f, "%-13s%s\n", i ? "" : "quantized:", line);
	}
	if (q->n_layouts == 0)
		fprintf(f, "%-13s%s\n", "quantized:", "no weight/scale pair fits");
	table_fmt_full(n1, sizeof n1, q->plan.parameters, 0);
	fprintf(f, "%-13s%s parameters, not counting the scales%s\n", "  weights:", n1,
	        q->plan.n_mxfp4 ? " (MXFP4: two a byte)" : "");
	table_fmt_full(n2, sizeof n2, q->scale_parameters, 0);
	table_fmt_full(n3, sizeof n3, q->plan.scale_bytes, 1);
	fprintf(f, "%-13s%zu tensor%s, %s parameters, %s", "  scales:", q->plan.n_scales,
	        q->plan.n_scales == 1 ? "" : "s", n2, n3);
	if (q->plan.n_act_scales)
		fprintf(f, " (%zu of them activation scales)", q->plan.n_act_scales);
	putc('\n', f);
	if (q->plan.n_problems)
		fprintf(f, "%-13s%zu weight/scale mismatch%s (stinfo --check names them)\n",
		        "  problems:", q->plan.n_problems, q->plan.n_problems == 1 ? "" : "es");
	if (q->config_error.code) {
		char *m = cli_printable(q->config_error.message, strlen(q->config_error.message));
		fprintf(f, "%-13s%s (blocks taken as %dx%d)\n", "  config:", m, ST_QUANT_DEFAULT_BLOCK,
		        ST_QUANT_DEFAULT_BLOCK);
		free(m);
	}
}

static const char *scaling_name(const st_quant_layout *l)
{
	return l->kind == ST_QUANT_CHANNEL ? "channel" : l->kind == ST_QUANT_TENSOR ? "tensor" : "block";
}

void quant_info_json(FILE *f, const st_quant_summary *q)
{
	const st_quant_plan *p = &q->plan;
	char line[256];

	fprintf(f, "{\"weights\": %zu, \"parameters_without_scales\": %llu, \"scale_tensors\": %zu, "
	           "\"scale_parameters\": %llu, \"scale_bytes\": %llu, \"block_size\": [%llu, %llu], "
	           "\"block_size_from\": \"%s\", \"problems\": %zu",
	        p->n_fp8 + p->n_mxfp4, (unsigned long long)p->parameters, p->n_scales,
	        (unsigned long long)q->scale_parameters, (unsigned long long)p->scale_bytes,
	        (unsigned long long)q->block_rows, (unsigned long long)q->block_cols,
	        q->block_from_config ? "config.json" : "default", p->n_problems);
	if (p->n_act_scales) /* static FP8 releases only */
		fprintf(f, ", \"activation_scales\": %zu", p->n_act_scales);
	if (q->config_error.code) {
		fputs(", \"config_error\": ", f);
		cli_json_string(f, q->config_error.message, strlen(q->config_error.message));
	}
	fputs(", \"layouts\": [", f);
	for (size_t i = 0; i < q->n_layouts; i++) {
		const st_quant_layout *l = &q->layouts[i];
		int mx = l->role == ST_QUANT_ROLE_MXFP4;
		fprintf(f, "%s\n    {\"method\": \"%s\", \"format\": \"%s\", \"scaling\": \"%s\", "
		           "\"block_size\": ",
		        i ? "," : "", mx ? "mxfp4" : "fp8", st_dtype_name(l->weight_type), scaling_name(l));
		if (mx)
			fprintf(f, "[%llu]", (unsigned long long)l->block_cols);
		else if (l->kind == ST_QUANT_BLOCK)
			fprintf(f, "[%llu, %llu]", (unsigned long long)l->block_rows,
			        (unsigned long long)l->block_cols);
		else
			fputs("null", f);
		fprintf(f, ", \"scale_dtype\": \"%s\", \"experts\": %s, \"weights\": %zu, "
		           "\"parameters\": %llu, \"scale_bytes\": %llu, \"description\": ",
		        st_dtype_name(l->scale_type), l->experts ? "true" : "false", l->weights,
		        (unsigned long long)l->parameters, (unsigned long long)l->scale_bytes);
		st_quant_layout_describe(l, line, sizeof line);
		cli_json_string(f, line, strlen(line));
		fputc('}', f);
	}
	fputs(q->n_layouts ? "\n  ]}" : "]}", f);
}

struct check_ctx {
	st_problem_fn fn;
	void *ctx;
	int errors;
};

static void on_mismatch(void *ctx, const char *message)
{
	struct check_ctx *cc = ctx;
	cc->errors++;
	cc->fn(cc->ctx, ST_PROBLEM_ERROR, message);
}

int quant_info_check(const st_checkpoint *ck, st_problem_fn fn, void *ctx,
                     st_error *err)
{
	st_error e;
	st_quant_summary q;
	struct check_ctx cc = {fn, ctx, 0};

	int rc = st_quant_summary_load(&q, ck, on_mismatch, &cc, &e);
	if (q.config_error.code == ST_EIO) {
		/* No answer: the pairs were not judged against its block size. */
		if (rc == ST_OK)
			st_quant_summary_free(&q);
		if (err)
			*err = q.config_error;
		return -1;
	}
	if (rc == ST_ENOMEM) {
		cc.errors++;
		fn(ctx, ST_PROBLEM_ERROR, "out of memory pairing weights with their scales");
	} else if (q.config_error.code) {
		/* Its pairs were not judged against a guess (not reported). */
		cc.errors++;
		fn(ctx, ST_PROBLEM_ERROR, q.config_error.message);
	}
	if (rc == ST_OK)
		st_quant_summary_free(&q);
	return cc.errors;
}
