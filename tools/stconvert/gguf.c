/*
 * gguf.c - stconvert with a GGUF input: every tensor into one
 * .safetensors file under its GGUF name, row-major, quantized types
 * decoded (st_gguf_write_safetensors does the work; this file checks the
 * options that apply, and words the report).
 */
#include "stconvert/stconvert.h"

#include "fe/cli.h"
#include "fe/signals.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Options that a GGUF input has no meaning for are refused, not ignored. */
static void check_options(const struct stconvert_options *o)
{
	const char *bad = o->c.quantize     ? "--to f8_e4m3"
	                  : o->c.n_keep     ? "--keep"
	                  : o->c.n_drop     ? "--drop"
	                  : o->n_keys       ? "--key"
	                  : o->c.n_meta     ? "--meta"
	                  : o->shard_size   ? "--shard-size"
	                  : o->c.block_rows ? "--block"
	                  : o->c.n_rename   ? "--rename/--strip-prefix"
	                                    : NULL;
	if (bad)
		cli_usage_error("%s: not available for a GGUF input (it converts every "
		                "tensor to one .safetensors file)",
		                bad);
	if (!strcmp(o->out, "-")) { /* one file, to standard output */
		cli_check_stdout_binary();
		return;
	}
	struct stat st;
	int exists = lstat(o->out, &st) == 0;
	if (exists && S_ISDIR(st.st_mode))
		cli_usage_error("%s: a GGUF input converts to one .safetensors file, not a "
		                "directory",
		                o->out);
	if (!cli_ends_with(o->out, ".safetensors"))
		cli_usage_error("%s: a GGUF input converts to one .safetensors file: OUT must "
		                "end in .safetensors",
		                o->out);
	if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		cli_die(CLI_ERROR, "%s: exists and is not a regular file or directory", o->out);
	if (exists && !o->force)
		cli_die(CLI_ERROR, "%s: already exists (use --force to replace it)", o->out);
}

struct ui {
	cli_progress progress;
};

static void progress(void *ctx, uint64_t bytes)
{
	cli_progress_add(&((struct ui *)ctx)->progress, bytes);
}

static int cancel(void *ctx)
{
	(void)ctx;
	return signals_caught();
}

/* in:/out: lines and what happened to the tensors, per ggml type with -v. */
static void report(const struct stconvert_options *o, const st_gguf *g,
                   const st_convert_stats *stats)
{
	if (o->quiet)
		return;
	st_gguf_convert_options go = {o->c.has_to, o->c.to};
	size_t kept = 0, converted = 0, decoded = 0;
	uint64_t out_bytes = 0;
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		st_dtype d, same;
		st_gguf_out_dtype(t->type, &go, &d);
		out_bytes += t->n_elements * (st_dtype_bits(d) / 8);
		const char *how;
		if (st_ggml_type_dtype(t->type, &same) != ST_OK)
			how = "decoded", decoded++;
		else if (same != d)
			how = "converted", converted++;
		else
			how = "copied", kept++;
		if (o->verbose) {
			char *name = cli_printable(t->name, t->name_len);
			if (!strcmp(how, "copied"))
				cli_warn("tensor '%s': %s copied", name, st_dtype_name(d));
			else
				cli_warn("tensor '%s': %s -> %s, %s", name,
				         st_ggml_type_name(t->type), st_dtype_name(d), how);
			free(name);
		}
	}
	char h[32];
	size_t n = st_gguf_n_tensors(g);
	cli_fmt_bytes(h, sizeof h, st_gguf_data_size(g));
	cli_warn("in:  %zu tensor%s, %llu bytes (%s), 1 GGUF file", n, n == 1 ? "" : "s",
	         (unsigned long long)st_gguf_data_size(g), h);
	cli_fmt_bytes(h, sizeof h, out_bytes);
	cli_warn("out: %zu tensor%s, %llu bytes (%s), 1 file", n, n == 1 ? "" : "s",
	         (unsigned long long)out_bytes, h);
	if (o->c.has_to)
		cli_warn("to %s: %zu decoded, %zu converted, %zu copied", st_dtype_name(o->c.to),
		         decoded, converted, kept);
	else
		cli_warn("nothing lost: %zu decoded to F32, %zu copied in their dtype", decoded,
		         kept);
	if (stats->overflow || stats->underflow)
		cli_warn("overflow: %llu finite values became +-Inf; "
		         "underflow: %llu non-zero values became 0",
		         (unsigned long long)stats->overflow, (unsigned long long)stats->underflow);
}

int stconvert_gguf(const struct stconvert_options *o)
{
	check_options(o);
	st_gguf *g;
	st_error err;
	if (st_gguf_open(&g, o->in, &err) != ST_OK) {
		cli_error(&err);
		return CLI_ERROR;
	}
	struct ui ui;
	st_convert_run run = {.progress = progress, .cancel = cancel, .ctx = &ui};
	st_gguf_convert_options go = {o->c.has_to, o->c.to};
	st_convert_stats stats = {0, 0};
	cli_progress_start(&ui.progress, "stconvert", st_gguf_data_size(g));
	int rc = strcmp(o->out, "-") ? st_gguf_write_safetensors(g, o->out, &go, &run, &stats, &err)
	                             : st_gguf_write_safetensors_fd(g, STDOUT_FILENO, "<stdout>",
	                                                            &go, &run, &stats, &err);
	cli_progress_done(&ui.progress);
	if (rc != ST_OK) {
		st_gguf_close(g);
		signals_reraise();
		cli_error(&err);
		return CLI_ERROR;
	}
	report(o, g, &stats);
	st_gguf_close(g);
	return CLI_OK;
}
