/*
 * gguf.c - stconvert with a GGUF input: every tensor into one
 * .safetensors file under its GGUF name, row-major, quantized types
 * decoded (st_gguf_write_safetensors); or, for an OUT directory, a
 * Hugging Face snapshot of a GPT-2 or Llama-family GGUF (st_gguf_write_snapshot:
 * HF names, llama's q/k rows and GPT-2's Conv1D weights back in HF's layout, config.json,
 * generation_config.json and the tokenizer files), or for a GGUF without
 * tensors only its tokenizer files (st_gguf_write_tokenizer). libst does
 * the work; this file checks the
 * options that apply, and words the report.
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

/* OUT is a snapshot directory: an existing one, a trailing '/', or a
 * name that does not end in .safetensors. */
static int out_is_dir(const char *out)
{
	struct stat st;
	size_t n = strlen(out);
	if (!strcmp(out, "-"))
		return 0;
	if (stat(out, &st) == 0)
		return S_ISDIR(st.st_mode);
	return (n && out[n - 1] == '/') || !cli_ends_with(out, ".safetensors");
}

/* Options that a GGUF input has no meaning for are refused, not ignored. */
static void check_options(const struct stconvert_options *o, int dir)
{
	const char *bad = stconvert_safetensors_option(o);
	if (bad)
		cli_usage_error("%s: not available for a GGUF input (it converts every "
		                "tensor to one .safetensors file)",
		                bad);
	if (dir) {
		cli_check_out(o->out, o->force);
		return;
	}
	if (!strcmp(o->out, "-")) { /* one file, to standard output */
		cli_check_stdout_binary();
		return;
	}
	struct stat st;
	int exists = lstat(o->out, &st) == 0;
	if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		cli_die(CLI_ERROR, "%s: exists and is not a regular file or directory", o->out);
	if (exists && !o->force)
		cli_die(CLI_ERROR, "%s: already exists (use --force to replace it)", o->out);
}

/* The one file's out: line, or the snapshot's (tokenizer: 0 none, 1 the
 * tokenizer files, 2 GPT-2's, vocab.json and merges.txt too). */
static void report_out(const struct stconvert_options *o, int hf, size_t n, uint64_t bytes,
                       int tokenizer)
{
	char h[32];
	cli_fmt_bytes(h, sizeof h, bytes);
	if (!hf) {
		cli_warn("out: %zu tensor%s, %llu bytes (%s), 1 file", n, n == 1 ? "" : "s",
		         (unsigned long long)bytes, h);
		return;
	}
	char *out = cli_printable(o->out, strlen(o->out));
	cli_warn("out: %zu tensor%s, %llu bytes (%s), a snapshot: %s/model.safetensors, "
	         "config.json, generation_config.json%s",
	         n, n == 1 ? "" : "s", (unsigned long long)bytes, h, out,
	         tokenizer == 2 ? ", vocab.json, merges.txt, tokenizer.json, tokenizer_config.json"
	         : tokenizer == 1 ? ", tokenizer.json, tokenizer_config.json"
	                          : "");
	free(out);
}

/* One tensor's -v line: its dtype, and with hf its HF name. */
static void report_tensor(const st_gguf_tensor *t, const char *hf, st_dtype d, const char *how)
{
	char *name = cli_printable(t->name, t->name_len);
	char *to = hf ? cli_printable(hf, strlen(hf)) : NULL;
	if (to)
		cli_warn("tensor '%s' -> '%s': %s -> %s, %s", name, to, st_ggml_type_name(t->type),
		         st_dtype_name(d), how);
	else if (!strcmp(how, "copied"))
		cli_warn("tensor '%s': %s copied", name, st_dtype_name(d));
	else
		cli_warn("tensor '%s': %s -> %s, %s", name, st_ggml_type_name(t->type),
		         st_dtype_name(d), how);
	free(name);
	free(to);
}

/* Why the tokenizer was not rebuilt: the model or pre-tokenizer it has. */
static void report_unsupported(const st_gguf *g)
{
	st_error e;
	char *json = NULL;
	size_t len;
	if (st_gguf_hf_tokenizer(g, &json, &len, &e) == ST_OK) {
		free(json);
		return;
	}
	char *m = cli_printable(e.message, strlen(e.message));
	cli_warn("no tokenizer files: %s", m);
	free(m);
}

/*
 * in:/out: lines and what happened to the tensors, per ggml type with -v;
 * for a snapshot (hf) the tensors left out, what config.json could not
 * say (lost), the files not written.
 */
static void report(const struct stconvert_options *o, const st_gguf *g,
                   const st_convert_stats *stats, int hf, unsigned lost)
{
	if (o->quiet)
		return;
	st_gguf_convert_options go = {o->c.has_to, o->c.to, hf};
	size_t kept = 0, converted = 0, decoded = 0, written = 0;
	uint64_t out_bytes = 0;
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		char name[128];
		st_error e;
		if (hf && st_gguf_hf_name(g, i, name, sizeof name, NULL, &e) != ST_OK) {
			char *m = cli_printable(e.message, strlen(e.message));
			cli_warn("left out: %s", m);
			free(m);
			continue;
		}
		st_dtype d, same;
		st_gguf_out_dtype(t->type, &go, &d);
		out_bytes += t->n_elements * (st_dtype_bits(d) / 8);
		written++;
		const char *how;
		if (st_ggml_type_dtype(t->type, &same) != ST_OK)
			how = "decoded", decoded++;
		else if (same != d)
			how = "converted", converted++;
		else
			how = "copied", kept++;
		if (o->verbose)
			report_tensor(t, hf ? name : NULL, d, how);
	}
	char h[32];
	size_t n = st_gguf_n_tensors(g);
	cli_fmt_bytes(h, sizeof h, st_gguf_data_size(g));
	cli_warn("in:  %zu tensor%s, %llu bytes (%s), 1 GGUF file", n, n == 1 ? "" : "s",
	         (unsigned long long)st_gguf_data_size(g), h);
	const char *arch = NULL;
	int gpt2 = hf && st_gguf_hf_arch(g, &arch, NULL) == ST_OK && !strcmp(arch, "gpt2");
	int tok = !(lost & (ST_GGUF_HF_LOST_TOKENIZER | ST_GGUF_HF_LOST_TOKENIZER_UNSUPPORTED));
	report_out(o, hf, written, out_bytes, tok ? 1 + gpt2 : 0);
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
	if (lost & ST_GGUF_HF_LOST_ROPE_SCALING)
		cli_warn("config.json: no rope_scaling: no llama3 rope_scaling tried gives "
		         "rope_freqs.weight's divisors");
	if (lost & ST_GGUF_HF_LOST_TOKENIZER)
		cli_warn("no tokenizer files: the GGUF has no tokenizer.ggml.model");
	if (lost & ST_GGUF_HF_LOST_TOKENIZER_UNSUPPORTED)
		report_unsupported(g);
}

/* stconvert GGUF OUT/: the snapshot, or why this GGUF has none. */
static int to_snapshot(const struct stconvert_options *o, st_gguf *g)
{
	st_error err;
	const char *arch;
	if (st_gguf_hf_arch(g, &arch, &err) != ST_OK) {
		char *in = cli_printable(o->in, strlen(o->in));
		char *m = cli_printable(err.message, strlen(err.message));
		cli_die(CLI_ERROR,
		        "%s; stconvert %s OUT.safetensors writes its tensors under "
		        "their GGUF names",
		        m, in);
	}
	struct stat st;
	unsigned flags = stat(o->out, &st) == 0 ? ST_SNAPSHOT_REPLACE : 0;
	cli_progress prog;
	st_convert_run run = {.threads = stconvert_threads(o),
	                      .progress = cli_progress_cb,
	                      .cancel = signals_cancel_cb,
	                      .ctx = &prog};
	st_gguf_convert_options go = {o->c.has_to, o->c.to, 1};
	st_convert_stats stats = {0, 0};
	unsigned lost = 0;
	cli_progress_start(&prog, "stconvert", st_gguf_data_size(g));
	int rc = st_gguf_write_snapshot(g, o->out, flags, &go, &run, &stats, &lost, &err);
	cli_progress_done(&prog);
	if (rc != ST_OK) {
		signals_reraise();
		cli_error(&err);
		return CLI_ERROR;
	}
	report(o, g, &stats, 1, lost);
	return CLI_OK;
}

/* stconvert VOCAB.gguf OUT/ for a GGUF without tensors (llama.cpp's
 * ggml-vocab-*.gguf): its tokenizer files only. */
static int to_tokenizer(const struct stconvert_options *o, st_gguf *g)
{
	st_error err;
	struct stat st;
	unsigned flags = stat(o->out, &st) == 0 ? ST_SNAPSHOT_REPLACE : 0;
	int rc = st_gguf_write_tokenizer(g, o->out, flags, &err);
	if (rc == ST_ENOTFOUND) {
		char *in = cli_printable(o->in, strlen(o->in));
		cli_die(CLI_ERROR, "%s: no tensors and no tokenizer.ggml.model: nothing to write",
		        in);
	}
	if (rc != ST_OK) {
		signals_reraise();
		cli_error(&err);
		return CLI_ERROR;
	}
	if (!o->quiet) {
		char *out = cli_printable(o->out, strlen(o->out));
		cli_warn("out: no tensors in the GGUF: a tokenizer folder: %s/tokenizer.json, "
		         "tokenizer_config.json",
		         out);
		free(out);
	}
	return CLI_OK;
}

int stconvert_gguf(const struct stconvert_options *o)
{
	int dir = out_is_dir(o->out);
	check_options(o, dir);
	st_gguf *g;
	st_error err;
	if (st_gguf_open(&g, o->in, &err) != ST_OK) {
		cli_error(&err);
		return CLI_ERROR;
	}
	if (dir) {
		int rc = st_gguf_n_tensors(g) ? to_snapshot(o, g) : to_tokenizer(o, g);
		st_gguf_close(g);
		return rc;
	}
	cli_progress prog;
	st_convert_run run = {.threads = stconvert_threads(o),
	                      .progress = cli_progress_cb,
	                      .cancel = signals_cancel_cb,
	                      .ctx = &prog};
	st_gguf_convert_options go = {o->c.has_to, o->c.to, 0};
	st_convert_stats stats = {0, 0};
	cli_progress_start(&prog, "stconvert", st_gguf_data_size(g));
	int rc = strcmp(o->out, "-") ? st_gguf_write_safetensors(g, o->out, &go, &run, &stats, &err)
	                             : st_gguf_write_safetensors_fd(g, STDOUT_FILENO, "<stdout>",
	                                                            &go, &run, &stats, &err);
	cli_progress_done(&prog);
	if (rc != ST_OK) {
		st_gguf_close(g);
		signals_reraise();
		cli_error(&err);
		return CLI_ERROR;
	}
	report(o, g, &stats, 0, 0);
	st_gguf_close(g);
	return CLI_OK;
}
