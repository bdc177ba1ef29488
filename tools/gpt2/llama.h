/*
 * llama.h - the Llama family for strun: Llama 2 and 3.x, Mistral, Qwen2
 * and Qwen3 from Hugging Face snapshots. The config (llama_config.c), the
 * loader (llama_load.c: the weights stay in the checkpoint's mmap, in
 * their own dtype) and the forward pass with a KV cache
 * (llama_forward.c). Beside gpt2.h, sharing its thread pool, kernel table
 * and error convention (internal.h); model.h puts both behind one layer.
 *
 * Not part of libst: which tensors a config implies is libst's table
 * (st/arch.h: st_arch_config_parse, st_arch_expected, st_arch_compare),
 * read here; the model math lives here.
 *
 * The block (transformers' modeling_llama.py, modeling_mistral.py,
 * modeling_qwen2.py, modeling_qwen3.py), for a stream x (T, C):
 *   h = RMSNorm(x) * input_layernorm
 *   q = h Wq^T (+bq), k = h Wk^T (+bk), v = h Wv^T (+bv)
 *   Qwen3: q, k = RMSNorm per head (over head_dim) * q_norm / k_norm
 *   q, k = rotary (rotate-half: pairs i and i + hd/2 of each head)
 *   a = softmax(q k^T / sqrt(hd), causal [, sliding window]) v, query
 *       head h reading key/value head h / (NH / NKV)
 *   x = x + a Wo^T (+bo)
 *   h = RMSNorm(x) * post_attention_layernorm
 *   x = x + (silu(h Wg^T) * (h Wu^T)) Wd^T (MLP biases when mlp_bias)
 * then RMSNorm(x) * norm and the head (lm_head, or embed_tokens tied).
 *
 * Dimension letters: V vocabulary, C hidden_size, L layers, NH heads, NKV
 * key/value heads, hd head_dim, I intermediate_size, T tokens of a call.
 */
#ifndef ST_GPT2_LLAMA_H
#define ST_GPT2_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include <st.h>

#include "gpt2/gpt2.h"
#include "gpt2/pool.h"

/* rope_scaling's rope_type (or type): none, "linear", "llama3". */
enum llama_rope { LLAMA_ROPE_DEFAULT, LLAMA_ROPE_LINEAR, LLAMA_ROPE_LLAMA3 };

typedef struct llama_config {
	st_arch_config arch; /* sizes and tensors: libst's table */
	char model_type[32]; /* "llama", "mistral", "qwen2", "qwen3" */
	int vocab_size, hidden, layers, heads, kv_heads, head_dim;
	int intermediate;
	int max_seq_len;   /* max_position_embeddings */
	float rms_eps;     /* rms_norm_eps, e.g. 1e-5 */
	double rope_theta; /* e.g. 10000, 500000 (Llama 3) */
	enum llama_rope rope;
	double rope_factor;                       /* linear and llama3 */
	double low_freq_factor, high_freq_factor; /* llama3 */
	double rope_orig_ctx;                     /* llama3: original_max_position_embeddings */
	int sliding_window;                       /* Mistral: keys at q - k < window; 0: none */
	int n_eos;
	int eos[GPT2_MAX_EOS];
	int has_bos, bos;
} llama_config;

/*
 * Parse config.json text (len bytes; name in messages): libst's
 * st_arch_config_parse for the sizes, then the hyperparameters. Refuses,
 * naming the key, what this forward pass does not implement: a
 * model_type outside the family, hidden_act other than silu, rope_scaling
 * of another type, partial_rotary_factor, MoE keys (num_experts,
 * num_local_experts), Qwen's use_sliding_window, and out-of-range values.
 * 0, or -1 with one line in err.
 */
int llama_config_parse(llama_config *cfg, const char *json, size_t len, const char *name, char *err,
                       size_t errlen);
/* Whether config.json text names a model of this family (by
 * architectures[0], else model_type). */
int llama_config_is_llama(const char *json, size_t len);

/*
 * A weight matrix [out, in] where it lies, in its own dtype. A scaled FP8
 * one (E4M3 or E5M2 with X.weight_scale_inv, as stconvert --to f8_e4m3
 * and DeepSeek-style releases write it) is decoded and scaled inside the
 * matrix products: W[o][i] = lut[w[o][i]] * scale[o / br][i / bc].
 */
typedef struct llama_mat {
	const void *w;
	st_dtype dt;        /* ST_DTYPE_F32, _F16, _BF16, or an F8 type */
	const float *lut;   /* F8: the 256 codes' values (the model's) */
	const float *scale; /* F8: (ceil(out / br), scols) F32 scales */
	int br, bc, scols;  /* F8: block rows and columns, scale columns */
	/* F8: codes 0..127 as BF16 bits, 128 high bytes then 128 low bytes
	 * (llama_fp8_bf16_table), or NULL when a value is not a BF16. */
	const unsigned char *bf16;
	/* F8: a code is NaN, where the loop llama_fp8_mark_nan names would
	 * give it a value: the portable loop runs it. */
	int nan_codes;
} llama_mat;

/* One block's parameters; vectors are F32 (NULL when absent). */
typedef struct llama_layer {
	const float *in_norm, *post_norm; /* (C) */
	const float *q_norm, *k_norm;     /* (hd), Qwen3 */
	llama_mat q, k, v, o;             /* (NH hd, C) (NKV hd, C) x2 (C, NH hd) */
	llama_mat gate, up, down;         /* (I, C) (I, C) (C, I) */
	const float *bq, *bk, *bv, *bo;
	const float *bgate, *bup, *bdown;
} llama_layer;

typedef struct llama_model {
	llama_config config;
	llama_mat embed, head; /* (V, C); head is embed when tied */
	const float *norm;     /* (C) */
	llama_layer *layers;   /* (L) */
	float *vectors;        /* the F32 norms and biases, one allocation */
	size_t vectors_n;
	void **copies; /* matrices copied for alignment (rare), F8 scales */
	size_t n_copies;
	st_checkpoint *ck; /* open: the matrices point into its files */
	uint64_t num_parameters;
	st_dtype wdtype;            /* the matrices' dtype if one, else F32 */
	st_dtype f8type;            /* the F8 weights' type (one a model), else F32 */
	float f8_lut[256];          /* its 256 codes' values (libst's st_convert) */
	unsigned char f8_bf16[256]; /* f8_lut as BF16 bytes, when f8_bf16_ok */
	int f8_bf16_ok;
	uint64_t block_rows, block_cols; /* weight_block_size (default 128) */
	size_t scales_used;              /* F8 weights placed, each with its scale */
	float *inv_freq;                 /* (hd / 2) rotary frequencies, scaled */
	gpt2_pool *pool;                 /* NULL: one thread */
	const struct gpt2_kernels *kernels;
} llama_model;

/*
 * Load a snapshot directory (or a checkpoint path beside config.json):
 * the config, then every tensor st_arch_expected lists, single file or
 * shards, matrices F32, F16, BF16 or scaled FP8 used where they lie (no
 * copy; FP8 scales per config.json's quantization_config.weight_block_size,
 * checked by libst's st_quant_fp8_layout), norms and biases widened to
 * F32. Every tensor used, every parameter filled: a missing, misshapen or unexplained tensor is refused by name;
 * rotary_emb.inv_freq buffers are skipped; lm_head.weight of a tied
 * model must hold embed_tokens' bytes. 0, or -1 with one line in err.
 */
int llama_model_load(llama_model **out, const char *dir, char *err, size_t errlen);
/* Use n threads (>= 1). 0, or -1 with a message. */
int llama_model_set_threads(llama_model *m, int n, char *err, size_t errlen);
void llama_model_free(llama_model *m);

/*
 * The rotary frequencies of cfg into inv_freq (hd / 2 floats), as
 * transformers' rope init functions compute them in F32: default
 * 1 / theta^(2i / hd), linear divided by factor, llama3 by its
 * wavelength bands.
 */
void llama_rope_inv_freq(const llama_config *cfg, float *inv_freq);

/*
 * Scaled FP8 in the products (llama_fp8.c): row r of w (IN values)
 * decoded and scaled into dst; out[j] = x . row o0 + j of w for j < n,
 * with kernel table k's instruction set (AVX-512 VBMI where w->bf16 is
 * set, AVX2 for E4M3, else portable), x as llama_fp8_prepare left it in
 * the layout llama_fp8_layout(k, w) names, and xs scratch; both x and
 * xs of IN rounded up to a multiple of LLAMA_FP8_PAD floats. One
 * prepared x serves every product of the same layout and every task.
 */
enum { LLAMA_FP8_PAD = 64 };
enum { LLAMA_FP8_X_PLAIN, LLAMA_FP8_X_PERMUTED };
void llama_fp8_row(float *dst, const llama_mat *w, int IN, int r);
struct gpt2_kernels;
int llama_fp8_layout(const struct gpt2_kernels *k, const llama_mat *w);
void llama_fp8_prepare(float *px, const float *x, int IN, int layout);
void llama_fp8_dots(const struct gpt2_kernels *k, float *out, const float *x, const llama_mat *w,
                    int IN, int o0, int n, float *xs);
/*
 * tab = the BF16 bytes of lut's codes 0..127 (high, then low), when each
 * is a BF16 and code c | 0x80 is -lut[c] (NaN for NaN): 1, else 0.
 */
int llama_fp8_bf16_table(unsigned char tab[256], const float lut[256]);
/*
 * Before w's first product with table k (w's n codes in place): when k
 * would run w on the table-free AVX2 loop, which reads a NaN code (0x7f,
 * 0xff) as 480, scan the codes and set w->nan_codes if one is NaN, so
 * that NaN comes out as the model's table says, on every table. A scan
 * of the codes at the read bandwidth, on AVX2 machines only. Returns
 * w->nan_codes.
 */
int llama_fp8_mark_nan(const struct gpt2_kernels *k, llama_mat *w, size_t n);

/*
 * The KV cache (F32, (L, NKV, capacity, hd): by head) and the scratch of
 * one sequence; capacity <= max_seq_len, 0 for max_seq_len.
 */
typedef struct llama_cache llama_cache;
int llama_cache_new(llama_cache **out, const llama_model *m, int capacity, char *err,
                    size_t errlen);
void llama_cache_free(llama_cache *c);
int llama_cache_len(const llama_cache *c);

/*
 * A stage of the forward pass for a trace (doc/trace.md, "The Llama
 * family"): name ("attn.q", "mlp.gate", ...), layer (-1 outside the
 * blocks), rows x width F32 values (one row per token), and the inner
 * shape of a row: heads x hd for the per-head stages (heads 0: [width]).
 */
typedef void (*llama_trace_fn)(void *ctx, const char *name, int layer, const float *values,
                               int rows, size_t width, int heads);
void llama_cache_set_trace(llama_cache *c, llama_trace_fn fn, void *ctx);

/*
 * Run T tokens at positions len..len+T-1, appending their keys and
 * values; logits (T, V) when all_logits, else (V) for the last token.
 * Results do not depend on the thread count. 0, or -1 with a message (an
 * id outside the vocabulary, the cache full, out of memory).
 */
int llama_forward(llama_model *m, llama_cache *c, const int32_t *ids, int T, float *logits,
                  int all_logits, char *err, size_t errlen);

#endif
