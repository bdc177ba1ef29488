/*
 * gpt2run_main.c - the one main of gpt2run and strun (gpt2run.h): the
 * steps of one run on the model layer (model.h): the tokenizer, the
 * model, the prompt, the cache, then the logits (--logits-out, --check,
 * --trace) or generation. Its options, prompt, --check and generation
 * loop are gpt2run_*.c; the models gpt2*.c and llama*.c.
 */
#include "fe/cli.h"
#include "gpt2/gpt2run.h"
#include "gpt2/llama.h"
#include "gpt2/model.h"
#include "gpt2/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

/* What one run holds, step by step. */
struct run {
	int32_t *prompt;
	size_t T;
	gpt2_tokenizer *tok;
	int need_text;   /* --prompt or --prompt-file: text to encode */
	int logits_mode; /* --logits-out, --check or --trace: no generation */
	model m;
	st_checkpoint *ref; /* --check REF */
	long ref_logits;
	int32_t *greedy; /* REF's greedy ids */
	size_t n_greedy;
};

/* Whether DIR's config.json names the Llama family (whose tokenizers are
 * not GPT-2's: no fallback for them). */
static int is_llama(const char *dir)
{
	char *text;
	size_t len;
	if (st_config_read(dir, &text, &len, NULL, NULL) != ST_OK)
		return 0;
	int yes = llama_config_is_llama(text, len);
	free(text);
	return yes;
}

/* The prompt's ids, and the tokenizer when the run needs one. */
static void read_prompt(const struct gpt2run_options *o, struct run *r, int any_family)
{
	if (o->ids)
		r->prompt = gpt2run_parse_ids(o->ids, &r->T);
	if (!o->tokenize)
		gpt2run_check_model_path(o->model_dir);
	r->need_text = o->prompt || o->prompt_file;
	r->logits_mode = o->logits_out || o->check || o->trace;
	if (o->tokenize || r->need_text || (!r->logits_mode && !o->print_ids))
		r->tok = gpt2run_load_tokenizer(o, !o->tokenize && !r->need_text,
		                                o->tokenizer_dir || !any_family ||
		                                        !is_llama(o->model_dir));
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
static void load_model(const struct gpt2run_options *o, struct run *r, int any_family)
{
	char err[1024];
	double t0 = cli_now();
	if ((any_family ? model_load : model_load_gpt2)(&r->m, o->model_dir, o->dtype, err,
	                                                sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	if (model_set_threads(&r->m, o->threads, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	double t_load = cli_now() - t0;
	if (!o->quiet) {
		char params[32], what[256];
		cli_fmt_count(params, sizeof params, r->m.num_parameters);
		r->m.ops->describe(&r->m, what, sizeof what);
		/* A folder's name may hold any byte: shown escaped (doc/safety.md). */
		char *dir = cli_printable(o->model_dir, strlen(o->model_dir));
		fprintf(stderr,
		        "%s: loaded %s: %s, %s parameters held as %s, in "
		        "%.0f ms (%d thread%s)\n",
		        cli_progname(), dir, what, params, st_dtype_name(r->m.wdtype), t_load * 1e3,
		        o->threads, o->threads == 1 ? "" : "s");
		free(dir);
	}
}

/*
 * The prompt the model runs: REF's ids for --check without one, else the
 * config's bos_token_id (the Llama family), or end-of-text, as GPT-2
 * starts unconditionally; every id in the
 * vocabulary, and all of them in the context.
 */
static void settle_prompt(const struct gpt2run_options *o, struct run *r)
{
	int V = r->m.vocab_size;
	if (o->check) {
		r->ref = gpt2run_open_ref(o->check, &r->ref_logits);
		if (!r->prompt) {
			r->prompt = gpt2run_ref_ids(r->ref, o->check, &r->T);
		} else {
			size_t rn;
			int32_t *ids = gpt2run_ref_ids(r->ref, o->check, &rn);
			if (ids && (rn != r->T || memcmp(ids, r->prompt, r->T * sizeof *ids) != 0))
				cli_warn("%s: its tensor 'ids' is not this prompt", o->check);
			free(ids);
		}
	}
	if (!r->prompt || r->T == 0) {
		int eot = r->m.bos >= 0 ? r->m.bos
		          : r->m.n_eos  ? r->m.eos[0]
		          : r->tok      ? gpt2_tokenizer_eot(r->tok)
		                        : -1;
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
			cli_die(CLI_ERROR,
			        "prompt token %zu: id %ld is outside the "
			        "model's vocabulary (0..%d)%s",
			        i, (long)r->prompt[i], V - 1,
			        r->need_text ? "; is the tokenizer the model's?" : "");
	if (r->T > (size_t)r->m.max_seq_len)
		cli_die(CLI_ERROR,
		        "the prompt has %zu tokens, more than the model's "
		        "context (%s %d)",
		        r->T, r->m.ctx_key, r->m.max_seq_len);
}

/* The cache holds the prompt and what is fed back after it. */
static void new_cache(const struct gpt2run_options *o, struct run *r)
{
	size_t T = r->T, P = (size_t)r->m.max_seq_len;
	char err[1024];
	if (r->ref)
		r->greedy = gpt2run_ref_greedy(r->ref, o->check, &r->n_greedy);
	if (r->n_greedy > P - T) {
		cli_warn("%s: tensor 'greedy': %zu ids do not fit in the context "
		         "after the prompt; checking the first %zu",
		         o->check, r->n_greedy, P - T);
		r->n_greedy = P - T;
	}
	int capacity = (int)(T + (r->n_greedy ? r->n_greedy - 1 : 0));
	if (!r->logits_mode)
		capacity = T + o->new_tokens > (uint64_t)P ? (int)P : (int)(T + o->new_tokens);
	if (model_cache_new(&r->m, capacity, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
}

/*
 * --logits-out, --check and --trace: one pass over the prompt, its logits
 * written or compared. Returns the exit code.
 */
static int run_logits(const struct gpt2run_options *o, struct run *r)
{
	size_t T = r->T;
	int V = r->m.vocab_size, rc = CLI_OK;
	char err[1024];
	float *logits = cli_xmalloc(T * (size_t)V * sizeof(float));
	if (o->trace && r->m.ops->trace_begin(&r->m, (int)T, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	double t0 = cli_now();
	if (model_forward(&r->m, r->prompt, (int)T, logits, 1, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	double dt = cli_now() - t0;
	if (o->trace && r->m.ops->trace_write(&r->m, o->trace, r->prompt, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	if (!o->quiet)
		fprintf(stderr, "%s: prompt: %zu tokens in %.1f ms (%.1f tokens/s)\n",
		        cli_progname(), T, dt * 1e3, (double)T / dt);
	if (o->logits_out)
		gpt2run_write_logits(o->logits_out, logits, (int)T, V);
	if (o->check)
		rc = gpt2run_check_logits(r->ref, r->ref_logits, o->check, logits, (int)T, V,
		                          o->atol);
	if (r->greedy && r->n_greedy) {
		int g = gpt2run_check_greedy(&r->m, logits + (T - 1) * (size_t)V, r->greedy,
		                             r->n_greedy, o->check);
		if (g != CLI_OK)
			rc = g;
	}
	free(logits);
	return rc;
}

int gpt2run_main(int argc, char **argv, const char *intro, int any_family)
{
	struct gpt2run_options o;
	struct run r = {.ref_logits = -1};
	gpt2run_parse_options(argc, argv, &o, intro);
	read_prompt(&o, &r, any_family); /* --tokenize needs only the tokenizer */
	if (o.tokenize)
		return print_tokens(&r);
	load_model(&o, &r, any_family);
	settle_prompt(&o, &r);
	new_cache(&o, &r);
	int rc = CLI_OK;
	if (r.logits_mode)
		rc = run_logits(&o, &r);
	else
		gpt2run_generate(&r.m, r.tok, r.prompt, r.T, &o);
	free(r.greedy);
	st_checkpoint_close(r.ref);
	model_free(&r.m);
	gpt2_tokenizer_free(r.tok);
	free(r.prompt);
	return cli_exit(rc);
}
