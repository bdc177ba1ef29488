/*
 * model.h - one model layer for the runners (strun; gpt2run's shared
 * generation and checks): a loaded model and its KV cache behind a small
 * table of operations (load, cache, forward, trace, free), with GPT-2
 * (gpt2.h) and the Llama family (llama.h) behind it. The front end
 * (gpt2run.h: options, prompt, generation, --check) works on this and
 * never on one architecture's structs.
 *
 * Not a model itself: each family keeps its config, loader and forward
 * pass; both share the thread pool (pool.h), the kernel table (kernels.h)
 * and the sampler (gpt2.h). Errors follow internal.h (0 or -1 and one
 * line in err).
 *
 * Recipe (strun.c):
 *   1. model_load(&rm, "snapshot/", -1, err, n)   config.json decides
 *   2. model_set_threads(&rm, n, ...); model_cache_new(&rm, capacity, ...)
 *   3. model_forward(&rm, ids, T, logits, all, ...) for the prompt, then
 *      one token at a time
 *   4. model_free(&rm)
 */
#ifndef ST_GPT2_MODEL_H
#define ST_GPT2_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <st.h>

#include "gpt2/gpt2.h"

typedef struct model model;

/* The operations of one family. */
typedef struct model_ops {
	const char *family; /* "gpt2", "llama" */
	int (*set_threads)(model *rm, int n, char *err, size_t errlen);
	int (*cache_new)(model *rm, int capacity, char *err, size_t errlen);
	int (*forward)(model *rm, const int32_t *ids, int T, float *logits, int all_logits,
	               char *err, size_t errlen);
	int (*cache_len)(const model *rm);
	/* --trace: record the next forward pass of T tokens; write it. */
	int (*trace_begin)(model *rm, int T, char *err, size_t errlen);
	int (*trace_write)(model *rm, const char *path, const int32_t *ids, char *err,
	                   size_t errlen);
	/* "n_layer 12, n_head 12, n_embd 768, vocab 50257" for the load line. */
	void (*describe)(const model *rm, char *buf, size_t size);
	void (*free)(model *rm);
} model_ops;

struct model {
	const model_ops *ops;
	void *impl;  /* gpt2_model * or llama_model * */
	void *cache; /* gpt2_cache * or llama_cache *, after cache_new */
	void *trace; /* the recorder of a --trace */
	/* What the front end needs, whatever the family. */
	int vocab_size;
	int max_seq_len;
	const char *ctx_key; /* the config key of max_seq_len */
	int n_eos;
	int eos[GPT2_MAX_EOS];
	int bos; /* bos_token_id to start a text, or -1 (GPT-2) */
	uint64_t num_parameters;
	st_dtype wdtype; /* the weights' dtype as held */
	gpt2_pool *pool; /* after set_threads: the sampler's threads */
};

/*
 * Load the snapshot (or checkpoint path) dir: its config.json's
 * architectures / model_type picks GPT-2 or the Llama family. wdtype: -1
 * as stored, else gpt2's --dtype (the Llama family runs its weights as
 * stored and refuses another). 0, or -1 with one line in err.
 */
int model_load(model *rm, const char *dir, int wdtype, char *err, size_t errlen);
/* The same with GPT-2's loader alone, whatever config.json names (gpt2run:
 * another model_type is refused with GPT-2's loader's reason). */
int model_load_gpt2(model *rm, const char *dir, int wdtype, char *err, size_t errlen);
int model_set_threads(model *rm, int n, char *err, size_t errlen);
int model_cache_new(model *rm, int capacity, char *err, size_t errlen);
int model_forward(model *rm, const int32_t *ids, int T, float *logits, int all_logits, char *err,
                  size_t errlen);
int model_cache_len(const model *rm);
/* Whether id ends a text (one of the config's eos ids). */
int model_is_eos(const model *rm, int32_t id);
void model_free(model *rm);

#endif
