/*
 * gpt2.h - the GPT-2 model shared by gpt2run and gpt2export: the config,
 * the one table that maps Hugging Face tensor names onto parameter slots,
 * the loader, the forward pass with a KV cache, and the sampler.
 *
 * Not part of libst: libst reads and writes files; the tensor math lives
 * here, in the programs that use it (as llm.c keeps every layer in
 * train_gpt2.c). Everything runs on the CPU in F32 arithmetic; weights may
 * be held in memory as F32, F16 or BF16 and are widened as they are read.
 *
 * Dimension letters used in comments:
 *   V vocabulary size, P context length (n_positions), L layers, NH heads,
 *   C channels (n_embd), hs = C / NH head size, T tokens in one call.
 *
 * Errors: every function that can fail returns 0 or -1 and then leaves
 * one line in err (errlen bytes, err may be NULL); see internal.h.
 *
 * Recipe (model.c drives it so for gpt2run and strun):
 *   1. gpt2_model_load(&m, "snapshot/", -1, err, sizeof err)
 *   2. gpt2_model_set_threads(m, n, err, sizeof err)
 *   3. gpt2_cache_new(&c, m, 0, err, sizeof err)
 *   4. gpt2_forward(m, c, prompt, T, logits, 0, ...)   the prompt, one pass
 *      then gpt2_forward(m, c, &next, 1, logits, 0, ...) per new token
 *   5. gpt2_cache_free(c), gpt2_model_free(m)
 */
#ifndef ST_GPT2_H
#define ST_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include <st.h>

#include "gpt2/pool.h"

#define GPT2_MAX_EOS 8

/*
 * The hyperparameters of config.json (example values: GPT-2 small).
 * Only the standard GPT-2 block is implemented; gpt2_config_parse refuses
 * a config asking for anything else, with the reason.
 */
typedef struct gpt2_config {
	int max_seq_len;      /* n_positions, e.g. 1024 */
	int vocab_size;       /* vocab_size, e.g. 50257 */
	int num_layers;       /* n_layer, e.g. 12 */
	int num_heads;        /* n_head, e.g. 12 */
	int channels;         /* n_embd, e.g. 768 */
	float layer_norm_eps; /* layer_norm_epsilon, e.g. 1e-5 */
	int n_eos;            /* how many end-of-text ids, e.g. 1 (0: none) */
	int eos[GPT2_MAX_EOS]; /* eos_token_id(s), e.g. {50256} */
	int has_bos;          /* whether bos is known (a GGUF's bos_token_id) */
	int bos;              /* bos_token_id when has_bos */
} gpt2_config;

/*
 * Parse config.json text (len bytes; name is used in messages). Fills
 * *cfg, including the eos_token_id of config.json (n_eos = 0 if absent).
 * Returns 0, or -1 with a message in err: a missing or malformed field, or
 * a feature this forward pass does not implement (model_type other than
 * gpt2, activation_function other than gelu_new, n_inner other than null
 * or 4 * n_embd, scale_attn_weights false, scale_attn_by_inverse_layer_idx,
 * reorder_and_upcast_attn, add_cross_attention, tie_word_embeddings false).
 */
int gpt2_config_parse(gpt2_config *cfg, const char *json, size_t len,
                      const char *name, char *err, size_t errlen);
/*
 * Read DIR/config.json, then DIR/generation_config.json when present
 * (its eos_token_id, an integer or a list, replaces config.json's).
 */
int gpt2_config_load(gpt2_config *cfg, const char *dir, char *err,
                     size_t errlen);
/*
 * The folder holding config.json for a checkpoint PATH: PATH itself when
 * it is a folder, else the folder of the file. 0, or -1 with a message when
 * PATH cannot be reached.
 */
int gpt2_config_dir(const char *path, char *dir, size_t size, char *err,
                    size_t errlen);
/* Check the numbers of a config (positive, heads divide channels, sizes
 * that fit in memory arithmetic). 0 or -1 with a message. */
int gpt2_config_check(const gpt2_config *cfg, char *err, size_t errlen);

/*
 * A --dtype option's value: ST_DTYPE_F32, _BF16 or _F16 for f32, bf16 and
 * f16 or PyTorch's float32, bfloat16 and float16, in any case; else -1.
 */
int gpt2_dtype_parse(const char *name);

/*
 * The parameter slots, in llm.c's order (train_gpt2.c ParameterTensors).
 * Per-layer slots hold all L layers back to back.
 */
enum gpt2_slot {
	GPT2_WTE,      /* (V, C)      wte.weight, also the tied output head */
	GPT2_WPE,      /* (P, C)      wpe.weight */
	GPT2_LN1W,     /* (L, C)      h.N.ln_1.weight */
	GPT2_LN1B,     /* (L, C)      h.N.ln_1.bias */
	GPT2_QKVW,     /* (L, C, 3C)  h.N.attn.c_attn.weight, Conv1D [in, out] */
	GPT2_QKVB,     /* (L, 3C)     h.N.attn.c_attn.bias */
	GPT2_ATTPROJW, /* (L, C, C)   h.N.attn.c_proj.weight, Conv1D [in, out] */
	GPT2_ATTPROJB, /* (L, C)      h.N.attn.c_proj.bias */
	GPT2_LN2W,     /* (L, C)      h.N.ln_2.weight */
	GPT2_LN2B,     /* (L, C)      h.N.ln_2.bias */
	GPT2_FCW,      /* (L, C, 4C)  h.N.mlp.c_fc.weight, Conv1D [in, out] */
	GPT2_FCB,      /* (L, 4C)     h.N.mlp.c_fc.bias */
	GPT2_FCPROJW,  /* (L, 4C, C)  h.N.mlp.c_proj.weight, Conv1D [in, out] */
	GPT2_FCPROJB,  /* (L, C)      h.N.mlp.c_proj.bias */
	GPT2_LNFW,     /* (C)         ln_f.weight */
	GPT2_LNFB,     /* (C)         ln_f.bias */
	GPT2_NUM_SLOTS
};

/* Symbolic dimensions of the table below. */
enum gpt2_dim { GPT2_DIM_V, GPT2_DIM_P, GPT2_DIM_C, GPT2_DIM_3C, GPT2_DIM_4C };

/*
 * One row of the name table. The HF name is hf_name for a global slot and
 * "h.<layer>." hf_name for a per-layer one. Conv1D weights are stored by
 * HF as [in, out], the transpose of llm.c's (and nn.Linear's) [out, in];
 * this code keeps them as stored and its matmul reads [in, out] directly.
 */
typedef struct gpt2_param_info {
	const char *hf_name;  /* "wte.weight", "attn.c_attn.weight", ... */
	int per_layer;        /* 1: one tensor per layer */
	int conv1d;           /* 1: HF layout [in, out] = llm.c's transposed */
	int matrix;           /* 1: held in the model's weight dtype; 0: F32 */
	int ndim;             /* 1 or 2 (per layer) */
	enum gpt2_dim dims[2];
} gpt2_param_info;

const gpt2_param_info *gpt2_param(int slot);
/* The HF shape of one tensor of slot (per layer); returns ndim. */
int gpt2_param_shape(const gpt2_config *cfg, int slot, uint64_t shape[2]);
/* Elements of one tensor of slot (one layer's worth). */
uint64_t gpt2_param_numel(const gpt2_config *cfg, int slot);
/* How many tensors slot has: num_layers for a per-layer slot, else 1. */
int gpt2_param_layers(const gpt2_config *cfg, int slot);
/* The HF name ("h.3.mlp.c_fc.weight") into buf; returns its length. */
size_t gpt2_param_name(int slot, int layer, char *buf, size_t size);

/* What a checkpoint tensor name is, for gpt2_name_lookup. */
enum gpt2_name_kind {
	GPT2_NAME_PARAM,   /* a parameter: *slot and *layer are set */
	GPT2_NAME_BUFFER,  /* h.N.attn.bias / h.N.attn.masked_bias: skipped */
	GPT2_NAME_LM_HEAD, /* lm_head.weight: must equal wte.weight */
	GPT2_NAME_UNKNOWN  /* anything else: an error */
};
/*
 * Classify a checkpoint name: a leading "transformer." is stripped, the
 * layer number must be canonical decimal and < num_layers.
 */
enum gpt2_name_kind gpt2_name_lookup(const gpt2_config *cfg, const char *name,
                                     size_t len, int *slot, int *layer);

/* The parameters, carved out of one allocation (llm.c style). */
typedef struct gpt2_params {
	void *wte;       /* (V, C)      wdtype */
	void *wpe;       /* (P, C)      wdtype */
	float *ln1w;     /* (L, C) */
	float *ln1b;     /* (L, C) */
	void *qkvw;      /* (L, C, 3C)  wdtype, [in, out] */
	float *qkvb;     /* (L, 3C) */
	void *attprojw;  /* (L, C, C)   wdtype, [in, out] */
	float *attprojb; /* (L, C) */
	float *ln2w;     /* (L, C) */
	float *ln2b;     /* (L, C) */
	void *fcw;       /* (L, C, 4C)  wdtype, [in, out] */
	float *fcb;      /* (L, 4C) */
	void *fcprojw;   /* (L, 4C, C)  wdtype, [in, out] */
	float *fcprojb;  /* (L, C) */
	float *lnfw;     /* (C) */
	float *lnfb;     /* (C) */
} gpt2_params;

typedef struct gpt2_model {
	gpt2_config config;
	/*
	 * How the matrices (wte, wpe and the four Conv1D weights) are held:
	 * ST_DTYPE_F32, _F16 or _BF16. Vectors (biases, LayerNorm) are held as
	 * F32. With round_vectors (gpt2_model_new's default, and the loader's
	 * when a wdtype is asked for) they hold the values wdtype rounds them
	 * to, so "--dtype bf16" means every parameter is a BF16 value; without
	 * it (loading "as stored") they keep their stored values exactly.
	 */
	st_dtype wdtype;
	int round_vectors;
	gpt2_params params;
	void *slot[GPT2_NUM_SLOTS]; /* the same pointers, by slot */
	void *params_memory;
	size_t params_bytes;
	uint64_t num_parameters;
	unsigned char *filled; /* slot * L + layer: set by gpt2_model_fill */
	gpt2_pool *pool; /* NULL: one thread */
	/* The inner loops (kernels.h): gpt2_kernels_default's at
	 * gpt2_model_new; a caller may set another gpt2_kernels_find gave. */
	const struct gpt2_kernels *kernels;
} gpt2_model;

/*
 * Load a snapshot directory (or a checkpoint path whose directory holds
 * config.json): config, then every tensor, single file or sharded, F32,
 * F16, BF16 or F64, checked against the table: every tensor used, every
 * parameter filled, shapes checked; "transformer." stripped; legacy
 * attn.bias / attn.masked_bias skipped; lm_head.weight accepted only as an
 * exact copy of wte.weight. wdtype: ST_DTYPE_F32/F16/BF16, or -1 for "as
 * stored" (the matrices' dtype when they all share it, else F32).
 * Returns 0, or -1 with one line in err naming the file, the tensor and the
 * numbers. Threads: 1 until gpt2_model_set_threads.
 */
int gpt2_model_load(gpt2_model **out, const char *dir, int wdtype, char *err,
                    size_t errlen);
/* The same, on a checkpoint already open, with a config given. */
int gpt2_model_load_checkpoint(gpt2_model **out, const gpt2_config *cfg,
                               st_checkpoint *ck, int wdtype, char *err,
                               size_t errlen);
/*
 * The loader's checks that need only the headers, for a caller that reads
 * the data itself: every tensor of ck a parameter of cfg (a legacy buffer
 * or lm_head.weight aside), with a float dtype and the shape cfg implies,
 * none twice, none missing. where (GPT2_NUM_SLOTS * num_layers entries,
 * the caller's) receives at slot * num_layers + layer the checkpoint index
 * of that tensor, *head the index of lm_head.weight or SIZE_MAX.
 * Returns 0, or -1 with one line in err naming the file and the tensor.
 */
int gpt2_checkpoint_index(st_checkpoint *ck, const gpt2_config *cfg,
                          size_t *where, size_t *head, char *err,
                          size_t errlen);
/*
 * lm_head.weight (head, from gpt2_checkpoint_index; SIZE_MAX: nothing to
 * check) must hold wte.weight's values exactly, compared as F32. Reads
 * both in chunks, so memory stays bounded. 0, or -1 with the first
 * difference in err.
 */
int gpt2_checkpoint_check_head(st_checkpoint *ck, const gpt2_config *cfg,
                               const size_t *where, size_t head, char *err,
                               size_t errlen);
/* A model with zeroed parameters, to be filled by gpt2_model_fill. */
int gpt2_model_new(gpt2_model **out, const gpt2_config *cfg, st_dtype wdtype,
                   char *err, size_t errlen);
/*
 * Fill one tensor of slot (layer ignored for global slots) from n =
 * gpt2_param_numel elements of src_type (a float type). transposed: src
 * is [out, in] (llm.c / nn.Linear order) for a conv1d slot.
 */
int gpt2_model_fill(gpt2_model *m, int slot, int layer, st_dtype src_type,
                    const void *src, int transposed, char *err,
                    size_t errlen);
/* Where one tensor of slot lives, and in which dtype (F32 for vectors). */
void *gpt2_model_param(gpt2_model *m, int slot, int layer, st_dtype *dtype);
/* The first slot/layer gpt2_model_fill has not filled; 0 if none, else -1. */
int gpt2_model_missing(const gpt2_model *m, int *slot, int *layer);
/* Use n threads (>= 1) for the forward pass. 0, or -1 with a message. */
int gpt2_model_set_threads(gpt2_model *m, int n, char *err, size_t errlen);
void gpt2_model_free(gpt2_model *m);

/*
 * The KV cache and the activation scratch of one sequence. capacity: the
 * most tokens it holds (<= max_seq_len; 0 means max_seq_len). Keys and
 * values are kept in F32 as (L, NH, capacity, hs): by head.
 */
typedef struct gpt2_cache gpt2_cache;
/* 0, or -1 with a message (out of memory). */
int gpt2_cache_new(gpt2_cache **out, const gpt2_model *m, int capacity,
                   char *err, size_t errlen);
void gpt2_cache_free(gpt2_cache *c);
/* Tokens held so far (the position the next token takes). */
int gpt2_cache_len(const gpt2_cache *c);
int gpt2_cache_capacity(const gpt2_cache *c);
/* Forget the sequence (start again at position 0). */
void gpt2_cache_reset(gpt2_cache *c);

/*
 * The stages of the forward pass, in the order they happen, for a trace
 * (doc/trace.md defines each). A stage's values are rows x width floats,
 * row-major, one row per token of the call: WTE, WPE, EMBED, each block's
 * LN1 (C), QKV (3C: q, k, v in c_attn's order, bias included),
 * ATTN_WEIGHTS (NH x keys: the softmax probabilities of each head over
 * the keys at positions 0..len+T-1, 0 past the token's own position),
 * ATTN_OUT (C, before c_proj), ATTN_PROJ, RESID_MID, LN2, FC (4C, before
 * GELU), GELU, MLP_PROJ, RESID, then LNF and LOGITS for the rows whose
 * logits are computed.
 */
enum gpt2_stage {
	GPT2_STAGE_WTE, GPT2_STAGE_WPE, GPT2_STAGE_EMBED,
	GPT2_STAGE_LN1, GPT2_STAGE_QKV, GPT2_STAGE_ATTN_WEIGHTS,
	GPT2_STAGE_ATTN_OUT, GPT2_STAGE_ATTN_PROJ, GPT2_STAGE_RESID_MID,
	GPT2_STAGE_LN2, GPT2_STAGE_FC, GPT2_STAGE_GELU, GPT2_STAGE_MLP_PROJ,
	GPT2_STAGE_RESID, GPT2_STAGE_LNF, GPT2_STAGE_LOGITS
};
/* layer: the block, or -1 for WTE, WPE, EMBED, LNF and LOGITS. */
typedef void (*gpt2_trace_fn)(void *ctx, enum gpt2_stage stage, int layer,
                              const float *values, int rows, size_t width);
/*
 * Call fn(ctx, ...) after every stage of the following gpt2_forward calls
 * on c (fn NULL: stop). values are borrowed for the call only. The pass
 * computes exactly what it computes without a trace; what it adds is the
 * copy of the attention probabilities into a buffer of T x NH x keys.
 */
void gpt2_cache_set_trace(gpt2_cache *c, gpt2_trace_fn fn, void *ctx);

/*
 * Run T tokens through the model at positions len..len+T-1 of the cache,
 * appending their keys and values. logits: all_logits ? (T, V) : (V) for
 * the last token only. Results do not depend on the thread count (each
 * output element is reduced in a fixed order by one thread).
 * Returns 0, or -1 with a message (an id outside the vocabulary, the cache
 * full: no silent wrap, an allocation failure). One call at a time per
 * model: the model's thread pool is not reentrant.
 */
int gpt2_forward(gpt2_model *m, gpt2_cache *c, const int32_t *ids, int T,
                 float *logits, int all_logits, char *err, size_t errlen);

/*
 * The matmul of a Conv1D layer: out (T, OUT) = inp (T, IN) @ w (IN, OUT)
 * + bias (OUT, may be NULL), w of type wt (F32, F16, BF16). gpt2_matmul
 * is the forward pass's (kernel table k, threaded on pool, which may be
 * NULL; it allocates its scratch, which gpt2_forward keeps in the cache
 * instead): T = 1 streams w by blocks of rows, T > 1 runs packed panels.
 * 0, or -1 with a message. gpt2_matmul_naive is the reference it is
 * tested against: the definition, summed in double.
 */
struct gpt2_kernels;
int gpt2_matmul(const struct gpt2_kernels *k, gpt2_pool *pool, float *out,
                const float *inp, const void *w, st_dtype wt,
                const float *bias, int T, int IN, int OUT, char *err,
                size_t errlen);
void gpt2_matmul_naive(float *out, const float *inp, const void *w,
                       st_dtype wt, const float *bias, int T, int IN,
                       int OUT);

/*
 * The sampler. temperature <= 0 or top_k == 1 means greedy (argmax, the
 * lowest id on a tie). top_k 0 and top_p >= 1 disable those filters. The
 * random stream depends only on the seed, so the same seed gives the same
 * tokens whatever the thread count.
 */
typedef struct gpt2_sampler {
	int vocab_size;
	float temperature;
	int top_k;
	float top_p;
	uint64_t rng;
	struct gpt2_prob { float p; int32_t id; } *scratch; /* (V) */
	/* Threads for the softmax (NULL after init: one); e.g. the model's.
	 * The tokens do not depend on it. */
	gpt2_pool *pool;
} gpt2_sampler;

/* 0, or -1 with a message (out of memory). */
int gpt2_sampler_init(gpt2_sampler *s, int vocab_size, float temperature,
                      int top_k, float top_p, uint64_t seed, char *err,
                      size_t errlen);
void gpt2_sampler_free(gpt2_sampler *s);
/* Choose the next id from logits (V); logits are overwritten. */
int32_t gpt2_sample(gpt2_sampler *s, float *logits);
/* The index of the largest value (the first one on a tie; NaN never wins). */
int32_t gpt2_argmax(const float *x, int n);
/* The sampler's random numbers: xorshift*, uniform in [0, 1). */
float gpt2_random_f32(uint64_t *state);

#endif
