/*
 * to_gguf.c - stconvert SNAPSHOT OUT.gguf: a Llama-family Hugging Face
 * snapshot as one GGUF file for llama.cpp (libst's st_hf_write_gguf does
 * the work: keys, names, q/k permutation, types, vocabulary). This file
 * checks the options that apply, chooses --to's ggml type, and words the
 * report. A GPT-2 snapshot is written by the same call, as
 * `gpt2export SNAP OUT.gguf --type TYPE` writes it.
 */
#include "stconvert/stconvert.h"

#include "fe/cli.h"
#include "fe/signals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Options that have no meaning for a GGUF OUT are refused, not ignored. */
static void check_options(const struct stconvert_options *o)
{
	const char *bad = o->c.has_to && o->c.to == ST_DTYPE_F64 ? "--to f64"
	                                                         : stconvert_safetensors_option(o);
	if (bad)
		cli_usage_error("%s: not available for a GGUF OUT (it writes every parameter "
		                "under llama.cpp's names)",
		                bad);
	struct stat st;
	if (lstat(o->out, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		cli_die(CLI_ERROR, "%s: exists and is not a regular file", o->out);
	cli_check_out(o->out, o->force);
}

/* --to as a ggml type; -1: none given (the source's). */
static int chosen_type(const struct stconvert_options *o)
{
	if (o->gguf_type >= 0)
		return o->gguf_type;
	if (!o->c.has_to)
		return -1;
	return o->c.to == ST_DTYPE_F16    ? ST_GGML_F16
	       : o->c.to == ST_DTYPE_BF16 ? ST_GGML_BF16
	                                  : ST_GGML_F32;
}

struct ui {
	cli_progress progress; /* first: cli_progress_cb */
	const struct stconvert_options *o;
};

/* libst's warnings always, its notes (a tensor left out, F16 rows) with -v. */
static void note(void *ctx, int severity, const char *message)
{
	struct ui *ui = ctx;
	if (ui->o->quiet || (severity != ST_PROBLEM_WARNING && !ui->o->verbose))
		return;
	cli_progress_done(&ui->progress);
	char *m = cli_printable(message, strlen(message));
	cli_warn("%s%s", severity == ST_PROBLEM_WARNING ? "warning: " : "", m);
	free(m);
}

static void report(const struct stconvert_options *o, const st_hf_gguf_result *res)
{
	if (o->quiet)
		return;
	char hin[32], hout[32];
	cli_fmt_bytes(hin, sizeof hin, res->in_bytes);
	cli_fmt_bytes(hout, sizeof hout, res->out_bytes);
	cli_warn("in:  %zu tensor%s, %llu bytes (%s)", res->n_in, res->n_in == 1 ? "" : "s",
	         (unsigned long long)res->in_bytes, hin);
	cli_warn("out: %zu tensor%s, %llu bytes (%s), 1 GGUF file: %s, matrices %s "
	         "(general.file_type %u)",
	         res->n_tensors, res->n_tensors == 1 ? "" : "s", (unsigned long long)res->out_bytes,
	         hout, res->arch, st_ggml_type_name(res->type), res->file_type);
	if (res->n_fallback)
		cli_warn("%zu matri%s written F16: rows not whole blocks of %s", res->n_fallback,
		         res->n_fallback == 1 ? "x" : "ces", st_ggml_type_name(res->type));
	if (res->n_skipped)
		cli_warn("left out: %zu tensor%s (legacy buffers, a tied lm_head; -v names them)",
		         res->n_skipped, res->n_skipped == 1 ? "" : "s");
	if (res->stand_in)
		cli_warn("vocabulary: a stand-in, %llu tokens \"<tN>\" (no tokenizer.json): feed "
		         "ids, not text",
		         (unsigned long long)res->n_tokens);
	else
		cli_warn("vocabulary: %llu tokens, tokenizer.ggml.model %s, pre %s",
		         (unsigned long long)res->n_tokens, res->model, res->pre);
}

/* Whether the config.json beside IN names GPT-2 (st_arch_config_parse). */
static int is_gpt2(const char *in)
{
	st_checkpoint *ck;
	st_error err;
	char *text = NULL;
	size_t len = 0;
	st_arch_config cfg;
	int gpt2 = 0;
	if (st_checkpoint_open(&ck, in, ST_OPEN_TORCH, &err) != ST_OK)
		return 0; /* st_hf_write_gguf says why */
	if (st_config_read(st_checkpoint_dir(ck), &text, &len, NULL, &err) == ST_OK)
		gpt2 = st_arch_config_parse(&cfg, text, len, "config.json", &err) == ST_OK &&
		       cfg.family == ST_ARCH_GPT2;
	free(text);
	st_checkpoint_close(ck);
	return gpt2;
}

int stconvert_to_gguf(const struct stconvert_options *o)
{
	check_options(o);
	int type = chosen_type(o);
	if (o->stand_in_vocab && is_gpt2(o->in))
		cli_usage_error("--stand-in-vocab: a GPT-2 GGUF takes its vocabulary from the "
		                "snapshot's tokenizer files");
	st_hf_gguf_options go = {type >= 0, type >= 0 ? (unsigned)type : 0, o->stand_in_vocab,
	                         NULL};
	struct ui ui = {.o = o};
	st_convert_run run = {.progress = cli_progress_cb,
	                      .cancel = signals_cancel_cb,
	                      .note = note,
	                      .ctx = &ui};
	st_hf_gguf_result res;
	st_error err;
	cli_progress_start(&ui.progress, "stconvert", 0);
	int rc = st_hf_write_gguf(o->in, o->out, &go, &run, &res, &err);
	cli_progress_done(&ui.progress);
	if (rc != ST_OK) {
		signals_reraise();
		cli_error(&err);
		return CLI_ERROR;
	}
	report(o, &res);
	return CLI_OK;
}
