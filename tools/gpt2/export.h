/*
 * export.h - gpt2export's work: llm.c checkpoint -> Hugging Face snapshot,
 * snapshot -> llm.c checkpoint, random snapshots, and the logits check
 * that proves an export. Not part of libst.
 *
 * Every conversion streams: it holds about one tensor (one layer's matrix,
 * which it may have to transpose) in memory, never the model. Outputs are
 * atomic as a whole: a snapshot folder is built in libst's temporary
 * folder beside OUT (st/snapshot.h) and swapped in at the end, so an
 * existing OUT is the old snapshot or the new one at every instant; a .bin
 * is written to libst's temporary file beside it and renamed over it
 * (st/atomic.h). What a killed run leaves, the next run into OUT removes.
 *
 * The snapshots hold model.safetensors (HF names without the
 * "transformer." prefix, as openai-community/gpt2 ships them; no
 * lm_head.weight, which is tied to wte.weight; Conv1D weights [in, out]),
 * config.json and generation_config.json as transformers' save_pretrained
 * writes them, and the GPT-2 tokenizer files.
 */
#ifndef ST_GPT2_EXPORT_H
#define ST_GPT2_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2/gpt2.h"

/* The transformers release whose config.json format is followed. */
#define GPT2_EXPORT_TRANSFORMERS_VERSION "4.46.3"
/*
 * GPT-2's <|endoftext|>: bos and eos in config.json when the source names
 * neither and the vocabulary holds it.
 */
#define GPT2_EXPORT_EOT 50256


typedef struct gpt2_export_opts {
	/* Output dtype: -1 as the source, else ST_DTYPE_F32, _BF16 (both
	 * directions) or _F16 (snapshots only). */
	int dtype;
	/* Copy the tokenizer files from this folder; NULL: write none. */
	const char *tokenizer_dir;
	/* Show a progress bar on stderr (only when it is a terminal). */
	int progress;
	/* Called for what is worth saying but not an error; may be NULL. */
	st_problem_fn warn; /* told ST_PROBLEM_WARNING */
	void *warn_ctx;
	/* Polled between chunks (may be NULL): once it returns non-zero
	 * (signals_caught, say), the export stops, removes its temporaries
	 * and fails with "interrupted". */
	int (*cancel)(void);
} gpt2_export_opts;

/* What an export did. */
typedef struct gpt2_export_result {
	int src_dtype; /* the source's dtype, or -1 when its tensors mix dtypes */
	st_dtype dst_dtype;
	int exact;     /* 1: every value was carried over unchanged (same
	                  dtype, or widened) */
	uint64_t parameters; /* values written, padding excluded */
} gpt2_export_result;

/*
 * llm.c checkpoint in -> snapshot folder out_dir. The vocabulary padding
 * rows are dropped (a warning says so when they are not all zero: they
 * cannot come back). Returns 0, or -1 with one line in err naming the
 * file (and tensor) at fault.
 */
int gpt2_export_llmc_to_hf(const char *in, const char *out_dir,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen);

/*
 * Snapshot (folder, .safetensors file or shard index, with config.json in
 * its folder) in -> llm.c checkpoint out. Everything gpt2run's loader
 * accepts is accepted and checked the same way: every tensor a parameter
 * (the "transformer." prefix stripped, the legacy attn.bias buffers
 * skipped, lm_head.weight only as an exact copy of wte.weight), every
 * parameter present, shapes and float dtypes. dtype -1 writes version 5
 * (BF16) when every parameter is BF16, else version 3 (F32).
 */
int gpt2_export_hf_to_llmc(const char *in, const char *out,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen);

/*
 * A randomly initialised snapshot, as GPT-2 / transformers initialise one
 * (GPT2PreTrainedModel._init_weights): wte, wpe and the Conv1D weights
 * normal(0, 0.02), the two c_proj weights normal(0, 0.02 / sqrt(2 L)),
 * biases 0, LayerNorm weights 1 and biases 0. dtype -1 means F32. The
 * values depend only on seed and each tensor's name (see
 * gpt2_export_rng_init), so the same seed gives the same bytes.
 */
int gpt2_export_random(const char *out_dir, const gpt2_config *cfg,
                       uint64_t seed, const gpt2_export_opts *o,
                       char *err, size_t errlen);

/*
 * config.json for cfg with every key transformers' GPT2Config writes
 * (sorted, indent 2, a final newline), torch_dtype from dtype; and
 * generation_config.json. eos_token_id is cfg's (a list when it has
 * several), bos_token_id cfg's bos, else the first eos; without either,
 * GPT2_EXPORT_EOT when the vocabulary holds it, else null. Return the
 * length, or -1 if size is too small.
 */
int gpt2_export_config_json(char *buf, size_t size, const gpt2_config *cfg,
                            st_dtype dtype);
int gpt2_export_generation_config_json(char *buf, size_t size,
                                       const gpt2_config *cfg);

/*
 * A model from an llm.c checkpoint, for gpt2_forward: the padding rows
 * dropped, the matrices transposed back by gpt2_model_fill. wdtype as for
 * gpt2_model_load (-1: the file's dtype). Holds the whole model.
 */
int gpt2_export_load_llmc(gpt2_model **out, const char *path, int wdtype,
                          char *err, size_t errlen);

/* What gpt2_export_compare found. */
typedef struct gpt2_export_diff {
	int prompts;   /* id sequences run */
	int positions; /* logit rows compared */
	double max_abs_diff;
	int nonfinite; /* logits NaN or Inf on one side only, or unequal Infs */
} gpt2_export_diff;

/*
 * Run the same fixed id sequences (lengths 1, 8 and min(32, context), ids
 * spread over the vocabulary) through a and b and compare the logits at
 * every position. The models must have the same config. 0 or -1.
 */
int gpt2_export_compare(gpt2_model *a, gpt2_model *b, gpt2_export_diff *d,
                        char *err, size_t errlen);

/*
 * The random numbers of gpt2_export_random: xoshiro256** seeded through
 * splitmix64 from seed ^ (FNV-1a 64 of the tensor's name *
 * 0x9e3779b97f4a7c15), normal deviates by Box-Muller in double (both of
 * each pair used, in order), scaled by std and rounded to F32 once.
 */
typedef struct gpt2_export_rng {
	uint64_t s[4];
	int has_spare;
	double spare;
} gpt2_export_rng;

void gpt2_export_rng_init(gpt2_export_rng *r, uint64_t seed,
                          const char *name, size_t len);
uint64_t gpt2_export_rng_next(gpt2_export_rng *r);
double gpt2_export_rng_normal(gpt2_export_rng *r);

/*
 * How gpt2_export_random fills slot: returns 1 for normal(0, *value), 0 for
 * the constant *value (1 for LayerNorm weights, 0 for biases).
 */
int gpt2_export_init(const gpt2_config *cfg, int slot, double *value);

#endif
