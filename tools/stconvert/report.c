/*
 * report.c - stconvert's report: what the plan did to each tensor, the
 * bytes in and out, the conversions that narrowed a value to Inf or zero.
 * The figures are libst's (st/convert.h); this file words them.
 */
#include "stconvert/stconvert.h"

#include "fe/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- report ------------------------------------------------------------------ */

/* "NAME" or, renamed by --rename or --strip-prefix, "NAME' as 'NEW" (the
 * quotes around it are the caller's); malloc'd. */
static char *shown_name(const struct stconvert_options *o, const st_convert_item *it)
{
	char *name = cli_printable(it->tensor->name, it->tensor->name_len);
	if (!o->c.n_rename || it->action == ST_CONVERT_DROP ||
	    (it->out_name_len == it->tensor->name_len &&
	     !memcmp(it->out_name, it->tensor->name, it->out_name_len)))
		return name;
	char *to = cli_printable(it->out_name, it->out_name_len);
	size_t n = strlen(name) + strlen(to) + 7;
	char *both = cli_xmalloc(n);
	snprintf(both, n, "%s' as '%s", name, to);
	free(name);
	free(to);
	return both;
}

static void print_tensor(const struct stconvert_options *o, const st_convert_item *it)
{
	static const char *const done[] = {[ST_CONVERT_COPY] = "copied", [ST_CONVERT_ASIS] = "copied",
	                                   [ST_CONVERT_KEEP] = "kept", [ST_CONVERT_DROP] = "dropped"};
	char *name = shown_name(o, it);
	const char *from = st_dtype_name(it->tensor->dtype);
	if (it->action == ST_CONVERT_QUANT)
		cli_warn("tensor '%s': %s -> %s, quantized", name, from, st_dtype_name(it->out));
	else if (it->action == ST_CONVERT_QSCALE)
		cli_warn("tensor '%s': F32, new (scales)", name);
	else if (it->action == ST_CONVERT_DEQUANT)
		cli_warn("tensor '%s': %s -> %s, dequantized", name, from, st_dtype_name(it->out));
	else if (it->action != ST_CONVERT_CONVERT)
		cli_warn("tensor '%s': %s %s", name, from, done[it->action]);
	else if (!it->narrows)
		cli_warn("tensor '%s': %s -> %s", name, from, st_dtype_name(it->out));
	else
		cli_warn("tensor '%s': %s -> %s, %llu overflow, %llu underflow", name, from,
		         st_dtype_name(it->out), (unsigned long long)it->overflow,
		         (unsigned long long)it->underflow);
	free(name);
}

static void print_bytes_line(const char *label, size_t tensors, uint64_t bytes,
                             size_t files, int index)
{
	char h[32];
	cli_fmt_bytes(h, sizeof h, bytes);
	cli_warn("%s %zu tensor%s, %llu bytes (%s), %zu file%s%s",
	        label, tensors, tensors == 1 ? "" : "s", (unsigned long long)bytes, h, files,
	        files == 1 ? "" : "s", index ? " + index" : "");
}

void stconvert_report(const struct stconvert_options *o, st_checkpoint *c, const st_convert_plan *p)
{
	const st_quant_plan *dq = st_convert_plan_pairs(p);
	unsigned n_shards = st_convert_plan_n_shards(p);
	uint64_t b0, b1;
	st_convert_plan_block(p, &b0, &b1);
	if (o->quiet)
		return;
	size_t out_tensors = 0, counts[ST_CONVERT_N_ACTIONS] = {0};
	uint64_t out_bytes = 0, overflow = 0, underflow = 0;
	int any_narrowing = 0;
	for (size_t i = 0; i < st_convert_plan_n_items(p); i++) {
		const st_convert_item *it = st_convert_plan_item(p, i);
		counts[it->action]++;
		if (it->action != ST_CONVERT_DROP) {
			out_tensors++;
			out_bytes += it->out_bytes;
		}
		if (it->narrows) {
			any_narrowing = 1;
			overflow += it->overflow;
			underflow += it->underflow;
		}
		if (o->verbose)
			print_tensor(o, it);
	}
	size_t n_files = st_checkpoint_n_files(c);
	print_bytes_line("in: ", st_checkpoint_n_tensors(c), st_checkpoint_data_bytes(c), n_files,
	                 st_checkpoint_index_path(c) != NULL);
	print_bytes_line("out:", out_tensors, out_bytes, n_shards, n_shards > 1);
	size_t copied = counts[ST_CONVERT_COPY] + counts[ST_CONVERT_ASIS];
	size_t kept = counts[ST_CONVERT_KEEP], dropped = counts[ST_CONVERT_DROP];
	size_t converted = counts[ST_CONVERT_CONVERT], dequantized = counts[ST_CONVERT_DEQUANT];
	if (o->c.quantize)
		cli_warn("to F8_E4M3: %zu quantized (blocks %llux%llu, %zu F32 scale tensors), "
		         "%zu copied, %zu kept, %zu dropped", counts[ST_CONVERT_QUANT],
		         (unsigned long long)b0, (unsigned long long)b1, counts[ST_CONVERT_QSCALE],
		         copied, kept, dropped);
	else if (o->c.has_to && dequantized) /* the scales folded into their weights */
		cli_warn("to %s: %zu converted, %zu dequantized, %zu copied, %zu kept, %zu dropped",
		         st_dtype_name(o->c.to), converted, dequantized, copied, kept,
		         dropped - dq->n_scales);
	else if (o->c.has_to)
		cli_warn("to %s: %zu converted, %zu copied, %zu kept, %zu dropped",
		         st_dtype_name(o->c.to), converted, copied, kept, dropped);
	else
		cli_warn("layout only: %zu copied unchanged, %zu dropped", counts[ST_CONVERT_COPY],
		         dropped);
	if (o->c.quantize && dq->n_fp8)
		cli_warn("already quantized: %zu FP8 weight%s and %zu scale tensor%s copied as they are",
		         dq->n_fp8, dq->n_fp8 == 1 ? "" : "s", dq->n_scales,
		         dq->n_scales == 1 ? "" : "s");
	else if (dq->n_fp8 + dq->n_mxfp4) {
		char line[256];
		st_quant_plan_describe(dq, line, sizeof line);
		cli_warn("%s", line);
	}
	if (any_narrowing)
		cli_warn("overflow: %llu finite values became +-Inf; "
		         "underflow: %llu non-zero values became 0",
		         (unsigned long long)overflow, (unsigned long long)underflow);
}

