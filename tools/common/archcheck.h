/*
 * archcheck.h - the parameters a config.json implies, compared with the
 * tensors a checkpoint holds.
 *
 * Level 1 of proving a load right: every parameter the architecture needs
 * is there with its shape, and every tensor is accounted for. Known
 * architectures: GPT-2 (model_type "gpt2", or GPT2LMHeadModel /
 * GPT2Model) and the Llama family (LlamaForCausalLM, Qwen2ForCausalLM,
 * MistralForCausalLM, or their model_type): embeddings, per layer
 * q/k/v/o projections with grouped-query head counts, gate/up/down, the
 * RMSNorms, a tied or untied head, and Qwen2's q/k/v biases.
 *
 * Recipe:
 *   1. archcheck_config_parse(&cfg, text, len, "config.json", err, n)
 *   2. archcheck_compare(&cfg, ck, &report, err, n)
 *   3. read report.items (missing, misshapen, extra), report.n_* and the
 *      parameter counts
 *   4. archcheck_report_free(&report)
 *
 * Not part of libst. No printing, no global state.
 */
#ifndef ST_ARCHCHECK_H
#define ST_ARCHCHECK_H

#include <stddef.h>
#include <stdint.h>

#include <st.h>

enum archcheck_family { ARCHCHECK_GPT2 = 1, ARCHCHECK_LLAMA };

/* What config.json says (example values: GPT-2 small, Llama-2-7B). */
typedef struct archcheck_config {
	enum archcheck_family family;
	char arch[64];          /* architectures[0] or model_type */
	uint64_t vocab;         /* vocab_size, e.g. 50257 */
	uint64_t hidden;        /* n_embd / hidden_size, e.g. 768 */
	uint64_t layers;        /* n_layer / num_hidden_layers, e.g. 12 */
	uint64_t heads;         /* n_head / num_attention_heads, e.g. 12 */
	uint64_t kv_heads;      /* num_key_value_heads (GQA), e.g. 8; = heads */
	uint64_t head_dim;      /* head_dim, else hidden / heads, e.g. 128 */
	uint64_t intermediate;  /* n_inner (null: 4 * n_embd) / intermediate_size */
	uint64_t positions;     /* GPT-2's n_positions (wpe rows), e.g. 1024 */
	int tied;               /* tie_word_embeddings (GPT-2: default true) */
	int qkv_bias;           /* q/k/v carry biases (Qwen2; Llama's attention_bias) */
	int o_bias;             /* o_proj carries a bias (Llama's attention_bias) */
	int mlp_bias;           /* gate/up/down carry biases (Llama's mlp_bias) */
} archcheck_config;

/*
 * Parse config.json text (len bytes; name for messages). Returns 0 with
 * *cfg filled; 1 when the architecture is not one of the known ones
 * (cfg->arch says which it is; nothing to compare); -1 with one line in
 * err when the JSON is malformed or a size is missing, not an integer, or
 * out of range (every size must be positive and at most 2^31, and head
 * counts must divide as the architecture needs).
 */
int archcheck_config_parse(archcheck_config *cfg, const char *json,
                           size_t len, const char *name, char *err,
                           size_t errlen);

/* One parameter the config implies: its checkpoint name and shape. */
typedef struct archcheck_param {
	char name[96];
	unsigned ndim;
	uint64_t shape[2];
} archcheck_param;

/*
 * Every parameter cfg implies, in the order a model is defined
 * (embeddings, layer by layer, final norm, head). *out is the caller's,
 * freed with free(). Returns the count, or 0 when out of memory.
 */
size_t archcheck_expected(const archcheck_config *cfg, archcheck_param **out);
/* The parameter count cfg implies (the sum of the shapes above). */
uint64_t archcheck_count(const archcheck_config *cfg);

enum archcheck_what {
	ARCHCHECK_MISSING = 1, /* a parameter with no tensor */
	ARCHCHECK_MISSHAPEN,   /* the tensor's shape is not the parameter's */
	ARCHCHECK_BUFFER,      /* extra: a legacy non-parameter buffer
	                        * (attn.bias / attn.masked_bias causal masks,
	                        * rotary_emb.inv_freq) */
	ARCHCHECK_ALIAS,       /* extra: lm_head.weight of a tied model */
	ARCHCHECK_UNKNOWN      /* extra: a tensor the config does not explain */
};

typedef struct archcheck_item {
	enum archcheck_what what;
	char *name;             /* the checkpoint's (or expected) name, owned */
	unsigned ndim;          /* MISSING, MISSHAPEN: the expected shape */
	uint64_t shape[2];
	const st_tensor *found; /* MISSHAPEN and extras: the tensor (borrowed
	                         * from the checkpoint) */
} archcheck_item;

typedef struct archcheck_report {
	uint64_t implied;        /* parameters the config implies */
	uint64_t found;          /* elements of the tensors matched to them */
	size_t n_expected, n_matched;
	size_t n_missing, n_misshapen, n_buffers, n_alias, n_unknown;
	const char *prefix;      /* a prefix stripped from every name
	                          * ("transformer.") or "" */
	size_t n_items;          /* missing and misshapen in expected order,
	                          * then extras in checkpoint order */
	archcheck_item *items;
} archcheck_report;

/*
 * Compare ck's tensor names and shapes with what cfg implies. GPT-2 names
 * may carry transformer.'s prefix (GPT2LMHeadModel's save). Reads headers
 * only. Returns 0 (the report filled; free it with archcheck_report_free
 * even when it is empty), or -1 when out of memory.
 */
int archcheck_compare(const archcheck_config *cfg, const st_checkpoint *ck,
                      archcheck_report *r);
void archcheck_report_free(archcheck_report *r);

/* "missing", "misshapen", "legacy buffer", "alias of the embedding",
 * "not a parameter of this config". */
const char *archcheck_what_name(enum archcheck_what what);

/*
 * One top-level key of two config.json texts that differs: its values as
 * compact JSON text, NULL on the side that lacks the key.
 */
typedef void (*archcheck_diff_fn)(void *ctx, const char *key,
                                  const char *a, const char *b);
/*
 * Compare the top-level keys of two config.json texts (a layer_norm_epsilon
 * or an activation_function changed between snapshots changes the model
 * without touching a tensor): fn once per key whose values differ or that
 * one side lacks, A's keys in A's order, then B's own. Returns how many,
 * or -1 when either text is not a JSON object (or out of memory).
 */
int archcheck_config_diff(const char *a, size_t alen, const char *b,
                          size_t blen, archcheck_diff_fn fn, void *ctx);

#endif
