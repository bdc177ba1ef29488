/*
 * gpt2run.c - run GPT-2 from a Hugging Face snapshot: generate text, dump
 * the logits of a prompt (--logits-out), or compare them with a reference
 * (--check). This is how a user proves a checkpoint loaded or converted
 * correctly: run the model.
 *
 * This file is the tool's main and the steps of one run: the tokenizer,
 * the model, the prompt, the cache, the logits. Its options, prompt
 * parsing, --check and the generation loop are tools/gpt2/gpt2run_*.c
 * (gpt2run.h); the model (config, name table, loader, forward pass,
 * sampler) is tools/gpt2/gpt2*.c, the tokenizer tools/gpt2/tokenizer*.c,
 * and the file reading and writing libst's.
 */
#include "fe/cli.h"
#include "gpt2/gpt2.h"
#include "gpt2/gpt2run.h"
#include "gpt2/tokenizer.h"
#include "gpt2/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <st.h>

/* What one run holds, step by step. */
struct run {
	int32_t *prompt;
	size_t T;
	gpt2_tokenizer *tok;
	int need_text;   /* --prompt or --prompt-file: text to encode */
	int logits_mode; /* --logits-out, --check or --trace: no generation */
	gpt2_model *m;
	gpt2_cache *cache;
	st_checkpoint *ref; /* --check REF */
	long ref_logits;
	int32_t *greedy; /* REF's greedy ids */
	size_t n_greedy;
};

/* The prompt's ids, and the tokenizer when the run needs one. */
static void read_prompt(const struct gpt2run_options *o, struct run *r)
{
	if (o->ids)
		r->prompt = gpt2run_parse_ids(o->ids, &r->T);
	if (!o->tokenize)
		gpt2run_check_model_path(o->model_dir);
	r->need_text = o->prompt || o->prompt_file;
	r->logits_mode = o->logits_out || o->check || o->trace;
	if (o->tokenize || r->need_text || (!r->logits_mode && !o->print_ids))
		r->tok = gpt2run_load_tokenizer(o, !o->tokenize && !r->need_text, 1);
	if (r->need_text)
		r->prompt = gpt2run_encode_prompt(r->tok, o, &r->T);
}

/* --tokenize: the prompt's ids on one line. */
static int print_tokens(struct run *r)
{
	for (size_t i = 0; i < r->T; i++)
		printf("%s%ld", i ? "," : "", (long)r->prompt[i]);
	printf("\n");
	free(r->prompt);
	gpt2_tokenizer_free(r->tok);
	return cli_exit(CLI_OK);
}

/* The model, on o->threads threads; one line about it unless --quiet. */
static void load_model(const struct gpt2run_options *o, struct run *r)
{
	char err[1024];
	double t0 = cli_now();
	if (gpt2_model_load(&r->m, o->model_dir, o->dtype, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	if (gpt2_model_set_threads(r->m, o->threads, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	double t_load = cli_now() - t0;
	const gpt2_config *cfg = &r->m->config;
	if (!o->quiet) {
		char params[32];
		cli_fmt_count(params, sizeof params, r->m->num_parameters);
		/* A folder's name may hold any byte: shown escaped (doc/safety.md). */
		char *dir = cli_printable(o->model_dir, strlen(o->model_dir));
		fprintf(stderr, "%s: loaded %s: n_layer %d, n_head %d, n_embd %d, "
		        "vocab %d, %s parameters held as %s, in %.0f ms (%d thread%s)\n",
		        cli_progname(), dir, cfg->num_layers, cfg->num_heads,
		        cfg->channels, cfg->vocab_size, params,
		        st_dtype_name(r->m->wdtype), t_load * 1e3, o->threads,
		        o->threads == 1 ? "" : "s");
		free(dir);
	}
}

/*
 * The prompt the model runs: REF's ids for --check without one, else
 * end-of-text, as GPT-2 starts unconditionally; every id in the
 * vocabulary, and all of them in the context.
 */
static void settle_prompt(const struct gpt2run_options *o, struct run *r)
{
	const gpt2_config *cfg = &r->m->config;
	int V = cfg->vocab_size;
	if (o->check) {
		r->ref = gpt2run_open_ref(o->check, &r->ref_logits);
		if (!r->prompt) {
			r->prompt = gpt2run_ref_ids(r->ref, o->check, &r->T);
		} else {
			size_t rn;
			int32_t *ids = gpt2run_ref_ids(r->ref, o->check, &rn);
			if (ids && (rn != r->T ||
			            memcmp(ids, r->prompt, r->T * sizeof *ids) != 0))
				cli_warn("%s: its tensor 'ids' is not this prompt",
				         o->check);
			free(ids);
		}
	}
	if (!r->prompt || r->T == 0) {
		int eot = cfg->n_eos ? cfg->eos[0]
		          : r->tok ? gpt2_tokenizer_eot(r->tok) : -1;
		if (eot < 0 || eot >= V)
			cli_usage_error("no prompt, and no end-of-text token to start "
			                "from: give --prompt, --prompt-file or --ids");
		free(r->prompt);
		r->prompt = cli_xmalloc(sizeof *r->prompt);
		r->prompt[0] = eot;
		r->T = 1;
	}
	for (size_t i = 0; i < r->T; i++)
		if (r->prompt[i] < 0 || r->prompt[i] >= V)
			cli_die(CLI_ERROR, "prompt token %zu: id %ld is outside the "
			        "model's vocabulary (0..%d)%s", i, (long)r->prompt[i],
			        V - 1, r->need_text ? "; is the tokenizer the model's?" : "");
	if (r->T > (size_t)cfg->max_seq_len)
		cli_die(CLI_ERROR, "the prompt has %zu tokens, more than the model's "
		        "context (n_positions %d)", r->T, cfg->max_seq_len);
}

/* The cache holds the prompt and what is fed back after it. */
static void new_cache(const struct gpt2run_options *o, struct run *r)
{
	const gpt2_config *cfg = &r->m->config;
	size_t T = r->T;
	char err[1024];
	if (r->ref)
		r->greedy = gpt2run_ref_greedy(r->ref, o->check, &r->n_greedy);
	if (r->n_greedy > (size_t)cfg->max_seq_len - T) {
		cli_warn("%s: tensor 'greedy': %zu ids do not fit in the context "
		         "after the prompt; checking the first %zu", o->check,
		         r->n_greedy, (size_t)cfg->max_seq_len - T);
		r->n_greedy = (size_t)cfg->max_seq_len - T;
	}
	int capacity = (int)(T + (r->n_greedy ? r->n_greedy - 1 : 0));
	if (!r->logits_mode)
		capacity = T + o->new_tokens > (uint64_t)cfg->max_seq_len
		                   ? cfg->max_seq_len
		                   : (int)(T + o->new_tokens);
	if (gpt2_cache_new(&r->cache, r->m, capacity, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
}

/*
 * --logits-out, --check and --trace: one pass over the prompt, its logits
 * written or compared. Returns the exit code.
 */
static int run_logits(const struct gpt2run_options *o, struct run *r)
{
	const gpt2_config *cfg = &r->m->config;
	size_t T = r->T;
	int V = cfg->vocab_size, rc = CLI_OK;
	char err[1024];
	float *logits = cli_xmalloc(T * (size_t)V * sizeof(float));
	gpt2_trace *tr = NULL;
	if (o->trace) {
		if (gpt2_trace_new(&tr, cfg, (int)T, err, sizeof err))
			cli_die(CLI_ERROR, "%s", err);
		gpt2_cache_set_trace(r->cache, gpt2_trace_record, tr);
	}
	double t0 = cli_now();
	if (gpt2_forward(r->m, r->cache, r->prompt, (int)T, logits, 1, err,
	                 sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	double dt = cli_now() - t0;
	gpt2_cache_set_trace(r->cache, NULL, NULL);
	if (tr) {
		if (gpt2_trace_write(tr, o->trace, r->prompt, err, sizeof err))
			cli_die(CLI_ERROR, "%s", err);
		gpt2_trace_free(tr);
	}
	if (!o->quiet)
		fprintf(stderr, "%s: prompt: %zu tokens in %.1f ms (%.1f tokens/s)\n",
		        cli_progname(), T, dt * 1e3, (double)T / dt);
	if (o->logits_out)
		gpt2run_write_logits(o->logits_out, logits, (int)T, V);
	if (o->check)
		rc = gpt2run_check_logits(r->ref, r->ref_logits, o->check, logits,
		                          (int)T, V, o->atol);
	if (r->greedy && r->n_greedy) {
		int g = gpt2run_check_greedy(r->m, r->cache,
		                             logits + (T - 1) * (size_t)V, r->greedy,
		                             r->n_greedy, o->check);
		if (g != CLI_OK)
			rc = g;
	}
	free(logits);
	return rc;
}

int main(int argc, char **argv)
{
	struct gpt2run_options o;
	struct run r = {.ref_logits = -1};
	cli_init("gpt2run");
	gpt2run_parse_options(argc, argv, &o);
	read_prompt(&o, &r); /* --tokenize needs only the tokenizer */
	if (o.tokenize)
		return print_tokens(&r);
	load_model(&o, &r);
	settle_prompt(&o, &r);
	new_cache(&o, &r);
	int rc = CLI_OK;
	if (r.logits_mode)
		rc = run_logits(&o, &r);
	else
		gpt2run_generate(r.m, r.cache, r.tok, r.prompt, r.T, &o);
	free(r.greedy);
	st_checkpoint_close(r.ref);
	gpt2_cache_free(r.cache);
	gpt2_model_free(r.m);
	gpt2_tokenizer_free(r.tok);
	free(r.prompt);
	return cli_exit(rc);
}
