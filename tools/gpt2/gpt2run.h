/*
 * gpt2run.h - the front end of the runners gpt2run and strun (one main,
 * gpt2run_main.c; tools/gpt2run.c and tools/strun.c call it): its
 * options, its prompt, --check and --logits-out, and the generation loop
 * that streams text. Not the models (model.h) and not shared with
 * gpt2export: these are one tool's front end split in files,
 * so, like a main(), they print, and die through cli_die and
 * cli_usage_error (doc/errors.md) with gpt2run's messages and exit codes.
 */
#ifndef ST_GPT2RUN_H
#define ST_GPT2RUN_H

#include <stddef.h>
#include <stdint.h>

#include <st.h>

#include "gpt2/gpt2.h"
#include "gpt2/model.h"
#include "gpt2/tokenizer.h"

/* gpt2run's command line. */
struct gpt2run_options {
	const char *model_dir, *tokenizer_dir;
	const char *prompt, *prompt_file, *ids;
	const char *logits_out, *check, *trace;
	int tokenize, greedy, ignore_eos, print_ids, quiet;
	int sampling_set; /* --temperature, --top-k or --top-p given */
	uint64_t new_tokens;
	double temperature, top_p, atol;
	uint64_t top_k, seed;
	int dtype; /* -1: as stored */
	int threads;
};

/*
 * The whole run, after cli_init: its options, the model from --model-dir,
 * then the logits or the generated text; the exit code. any_family: any
 * model the model layer loads (strun), else GPT-2's loader alone, which
 * refuses every other model_type (gpt2run). intro: as
 * gpt2run_parse_options's.
 */
int gpt2run_main(int argc, char **argv, const char *intro, int any_family);

/*
 * Parse the command line into *o (defaults first); --help and --version
 * print and exit 0, a usage error exits 2 (gpt2run_options.c). intro, the
 * lines of --help after "Usage: PROG --model-dir DIR [OPTION]...", says
 * what the runner runs.
 */
void gpt2run_parse_options(int argc, char **argv, struct gpt2run_options *o, const char *intro);

/* ---- the prompt (gpt2run_prompt.c) --------------------------------------- */

/* --ids "1,2, 3" -> ids (*n_out of them); a usage error for anything else. */
int32_t *gpt2run_parse_ids(const char *s, size_t *n_out);
/*
 * --prompt or the whole of --prompt-file ('-': stdin) encoded by tok; a
 * warning when invalid UTF-8 was replaced, exit 2 when it cannot be read.
 */
int32_t *gpt2run_encode_prompt(gpt2_tokenizer *tok, const struct gpt2run_options *o, size_t *n);
/*
 * Exit 2, saying what the file is, when the model path is not a folder
 * or a file the model loader reads (safetensors, shard index, PyTorch):
 * a GGUF file, a text file, an HTML page...
 */
void gpt2run_check_model_path(const char *dir);

/*
 * The tokenizer of --tokenizer PATH (a tokenizer.json, a snapshot folder or
 * a .gguf file), else of the model directory. With gpt2_fallback, a model
 * directory with no tokenizer files at all falls back, with a warning, on
 * the GPT-2 tokenizer installed with libst ($ST_TOKENIZER_DIR first): every
 * GPT-2 snapshot uses that one. for_output: the tokenizer is only needed to
 * print text (the message then suggests --print-ids). Exits 2 on failure.
 */
gpt2_tokenizer *gpt2run_load_tokenizer(const struct gpt2run_options *o, int for_output,
                                       int gpt2_fallback);

/* ---- --check and --logits-out (gpt2run_check.c) -------------------------- */

/*
 * Open REF and find its float tensor 'logits' [tokens, vocab_size]
 * (*logits_i). Exits 2 when REF cannot be read or has no such tensor.
 */
st_checkpoint *gpt2run_open_ref(const char *path, long *logits_i);
/* REF's 'ids' (I64 or I32, 1-D) as the prompt; NULL when it has none. */
int32_t *gpt2run_ref_ids(st_checkpoint *ref, const char *path, size_t *n);
/* REF's 'greedy' (I64 or I32, 1-D) ids; NULL (*n 0) when it has none. */
int32_t *gpt2run_ref_greedy(st_checkpoint *ref, const char *path, size_t *n);
/*
 * Compare this run's logits (T x V) with REF's: print the max abs diff
 * and where; CLI_OK within atol, else CLI_NO.
 */
int gpt2run_check_logits(st_checkpoint *ref, long li, const char *path, const float *logits, int T,
                         int V, double atol);
/*
 * Level 3: generate n ids greedily after the prompt (last: its last
 * logits) and compare with REF's want; print the first step that differs.
 * CLI_OK or CLI_NO.
 */
int gpt2run_check_greedy(model *m, const float *last, const int32_t *want, size_t n,
                         const char *path);
/* --logits-out: the logits (T x V) as one F32 tensor 'logits'; exit 2. */
void gpt2run_write_logits(const char *path, const float *logits, int T, int V);

/* ---- generation (gpt2run_generate.c) ------------------------------------- */

/*
 * Generate up to o->new_tokens after the prompt (T ids, in the cache's
 * capacity) and stream them to stdout as text through tok, or as ids
 * (--print-ids); stop at end-of-text unless --ignore-eos, or at the
 * context limit with a warning; the timings on stderr unless --quiet.
 */
void gpt2run_generate(model *m, gpt2_tokenizer *tok, const int32_t *prompt, size_t T,
                      const struct gpt2run_options *o);

#endif
