/*
 * st/arch.h - what model architectures imply: the parameters a
 * config.json implies, compared with the tensors a checkpoint holds, and
 * the tensor names of Hugging Face and of llama.cpp's GGUF files (GPT-2
 * and the Llama family), with llama's q/k row permutation.
 *
 * What it is. The knowledge of model architectures that a file format
 * does not carry, kept apart from the format code as llama.cpp keeps its
 * architecture tables outside ggml. Known architectures: GPT-2
 * (model_type "gpt2", or GPT2LMHeadModel / GPT2Model) and the Llama
 * family (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM,
 * Qwen3ForCausalLM, or their model_type): embeddings, per layer q/k/v/o
 * projections with grouped-query head counts, gate/up/down, the RMSNorms,
 * a tied or untied head, Qwen2's q/k/v biases and Qwen3's per-head
 * q_norm/k_norm. The tables are written from
 * transformers' modeling_gpt2.py (Conv1D weights stored [in, out]; the
 * causal-mask buffers attn.bias and attn.masked_bias that old versions
 * saved) and modeling_llama.py / modeling_qwen2.py / modeling_mistral.py
 * (nn.Linear weights [out, in]; q_proj out = heads * head_dim, k_proj and
 * v_proj out = kv_heads * head_dim; RMSNorm weights without bias;
 * rotary_emb.inv_freq, a buffer older Llama saves kept).
 *
 * What it is not. A loader or a model: it reads names and shapes only,
 * never tensor data, and does no model math. It does not find or read
 * config.json itself: the caller passes its text, or st_arch_inventory
 * and st_arch_checkpoint_config_diff have st/config.h's st_config_read
 * read the one beside a checkpoint.
 *
 * Contract. Level 1 of proving a load right: every parameter the
 * architecture needs is there with its shape, and every tensor is
 * accounted for. Every size a config gives is checked (an integer from 1
 * to 2^31, at most 4096 layers, head counts that divide, at most 2^50
 * parameters in all) before it is used, so no count can overflow. No
 * function keeps state: all may be called from many threads at once.
 *
 * Recipe:
 *   1. st_arch_config_parse(&cfg, text, len, "config.json", &err)
 *   2. st_arch_compare(&cfg, ck, &report, &err)
 *   3. read report.items (missing, misshapen, extra), report.n_* and the
 *      parameter counts
 *   4. st_arch_report_free(&report)
 * or, for the config.json beside a checkpoint, st_arch_inventory(ck,
 * &cfg, &report, &err) for steps 1 and 2.
 */
#ifndef ST_ARCH_H
#define ST_ARCH_H

#include "index.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- what a config.json implies ------------------------------------------- */

enum st_arch_family { ST_ARCH_GPT2 = 1, ST_ARCH_LLAMA };

/* What config.json says (example values: GPT-2 small, Llama-2-7B). */
typedef struct st_arch_config {
	enum st_arch_family family;
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
	int qk_norm;            /* per-head q_norm/k_norm RMSNorm weights
	                         * [head_dim], listed after o_proj (Qwen3) */
} st_arch_config;

/*
 * Parse config.json text (len bytes; name prefixes messages). Returns
 * ST_OK with *cfg filled; ST_EUNSUPPORTED when the architecture is not one
 * of the known ones (cfg->arch says which it is, or that the config names
 * none: nothing to compare); ST_EFORMAT when the JSON is malformed or a
 * size is missing, not an integer, or out of range, e.g.
 *   "config.json: \"n_layer\" is 5000, expected 1 to 4096"
 * The text need not end in a NUL.
 */
ST_API int st_arch_config_parse(st_arch_config *cfg, const char *json,
                                size_t len, const char *name, st_error *err);

/* The longest parameter name st_arch_expected gives, with its NUL. */
#define ST_ARCH_NAME_MAX 96

/* One parameter the config implies: its checkpoint name and shape. */
typedef struct st_arch_param {
	char name[ST_ARCH_NAME_MAX];
	unsigned ndim;          /* 1 or 2 */
	uint64_t shape[2];      /* shape[1] is 0 for a vector */
} st_arch_param;

/*
 * Every parameter cfg (as st_arch_config_parse filled it) implies, in the
 * order a model is defined (embeddings, layer by layer, final norm,
 * head), into *out (the caller's, freed with free()) and *n. Returns
 * ST_OK, ST_EINVAL when cfg has no known family, or ST_ENOMEM.
 */
ST_API int st_arch_expected(const st_arch_config *cfg, st_arch_param **out,
                            size_t *n, st_error *err);
/* The parameter count cfg implies (the sum of the shapes above); 0 when
 * cfg has no known family. Allocates nothing. */
ST_API uint64_t st_arch_count(const st_arch_config *cfg);

/* ---- a checkpoint compared with its config -------------------------------- */

enum st_arch_what {
	ST_ARCH_MISSING = 1, /* a parameter with no tensor */
	ST_ARCH_MISSHAPEN,   /* the tensor's shape is not the parameter's */
	ST_ARCH_BUFFER,      /* extra: a legacy non-parameter buffer
	                      * (attn.bias / attn.masked_bias causal masks,
	                      * rotary_emb.inv_freq) */
	ST_ARCH_ALIAS,       /* extra: lm_head.weight of a tied model */
	ST_ARCH_UNKNOWN      /* extra: a tensor the config does not explain */
};

typedef struct st_arch_item {
	enum st_arch_what what;
	char *name;             /* the checkpoint's (or expected) name, owned
	                         * by the report (malloc'd) */
	unsigned ndim;          /* MISSING, MISSHAPEN: the expected shape */
	uint64_t shape[2];
	const st_tensor *found; /* MISSHAPEN and extras: the tensor (borrowed
	                         * from the checkpoint) */
} st_arch_item;

typedef struct st_arch_report {
	uint64_t implied;        /* parameters the config implies */
	uint64_t found;          /* elements of the tensors matched to them */
	size_t n_expected, n_matched;
	size_t n_missing, n_misshapen, n_buffers, n_alias, n_unknown;
	const char *prefix;      /* a prefix stripped from every name
	                          * ("transformer.") or "" (static) */
	size_t n_items;          /* missing and misshapen in expected order,
	                          * then extras in checkpoint order */
	st_arch_item *items;
} st_arch_report;

/*
 * Compare ck's tensor names and shapes with what cfg implies. GPT-2 names
 * may carry transformer.'s prefix (GPT2LMHeadModel's save). Reads headers
 * only; the report borrows tensors from ck, which must outlive it.
 * Returns ST_OK (the report filled; free it with st_arch_report_free even
 * when it is empty), ST_EINVAL when cfg has no known family, or ST_ENOMEM
 * (the report then empty).
 */
ST_API int st_arch_compare(const st_arch_config *cfg, const st_checkpoint *ck,
                           st_arch_report *r, st_error *err);
/* Free the report's items (and leave it empty); a second call is a no-op. */
ST_API void st_arch_report_free(st_arch_report *r);

/* "missing", "misshapen", "legacy buffer", "alias of the embedding",
 * "not a parameter of this config"; "?" for another value. */
ST_API const char *st_arch_what_name(enum st_arch_what what);

/* ---- a checkpoint and the config.json beside it --------------------------- */

/*
 * The config-aware inventory of ck: the config.json of the folder of its
 * files (st_config_read of st_checkpoint_dir) parsed
 * (st_arch_config_parse) and compared with ck (st_arch_compare). The
 * scale tensors of quantized weights (those st_quant_plan_inspect makes
 * ST_QUANT_ROLE_SCALE) are not extras: the config implies their weights,
 * and st_quant_summary_load counts the scales apart. Reads headers only.
 * Returns ST_OK with *cfg and *r filled (free r with
 * st_arch_report_free); ST_ENOTFOUND when there is no config.json;
 * ST_EUNSUPPORTED when it names no architecture st_arch_config_parse
 * knows (cfg->arch says which: nothing to compare); or, with err's one
 * line naming config.json, ST_EIO or ST_EFORMAT (unreadable, larger than
 * ST_CONFIG_MAX_BYTES, malformed, a size missing or out of range) or
 * ST_ENOMEM. *r is empty whenever the result is not ST_OK.
 */
ST_API int st_arch_inventory(const st_checkpoint *ck, st_arch_config *cfg, st_arch_report *r,
                             st_error *err);

/* ---- two configs ---------------------------------------------------------- */

/*
 * One top-level key of two config.json texts that differs: its values as
 * compact JSON text, NULL on the side that lacks the key. The strings
 * live until fn returns.
 */
typedef void (*st_arch_diff_fn)(void *ctx, const char *key, const char *a,
                                const char *b);
/*
 * Compare the top-level keys of two config.json texts (a layer_norm_epsilon
 * or an activation_function changed between snapshots changes the model
 * without touching a tensor): fn once per key whose values differ or that
 * one side lacks, A's keys in A's order, then B's own (a key given twice
 * counts by its first value). Returns how many (0 or more), or ST_EFORMAT
 * when either text is not a JSON object (or memory ran out).
 */
ST_API int st_arch_config_diff(const char *a, size_t alen, const char *b,
                               size_t blen, st_arch_diff_fn fn, void *ctx,
                               st_error *err);

/*
 * st_arch_config_diff of the config.json files of the folders of a's and
 * b's files (st_config_read of st_checkpoint_dir), as a comparison of two
 * snapshots reports them. Returns how many keys differ: 0 when either
 * side has no config.json or both sides are the same file; or, with err
 * naming the file, st_config_read's error, or ST_EFORMAT when one is not
 * a JSON object.
 */
ST_API int st_arch_checkpoint_config_diff(const st_checkpoint *a, const st_checkpoint *b,
                                          st_arch_diff_fn fn, void *ctx, st_error *err);

/* ---- tensor names: Hugging Face <-> GGUF ---------------------------------- */

/*
 * The one table between Hugging Face tensor names and the names llama.cpp
 * gives them in a GGUF file, per GGUF general.architecture (the "map"):
 * "gpt2", and the Llama family "llama" (also Mistral's: llama.cpp
 * converts MistralForCausalLM as llama), "qwen2", "qwen3". The GGUF names
 * are gguf-py's (gguf/constants.py), which HF name each comes from
 * gguf/tensor_mapping.py's, as convert_hf_to_gguf.py applies them; with
 * what each conversion does to the data. GPT-2:
 *
 *   wte.weight              token_embd.weight       [V, C]
 *   wpe.weight              position_embd.weight    [P, C], kept F32
 *   h.N.ln_1.weight/bias    blk.N.attn_norm.*       F32
 *   h.N.attn.c_attn.*       blk.N.attn_qkv.*        weight transposed
 *   h.N.attn.c_proj.*       blk.N.attn_output.*     weight transposed
 *   h.N.ln_2.weight/bias    blk.N.ffn_norm.*        F32
 *   h.N.mlp.c_fc.*          blk.N.ffn_up.*          weight transposed
 *   h.N.mlp.c_proj.*        blk.N.ffn_down.*        weight transposed
 *   ln_f.weight/bias        output_norm.*           F32
 *
 * HF's Conv1D weights are [in, out]; llama.cpp wants nn.Linear's
 * [out, in], which a GGUF stores with dims {in, out} (dims[0] fastest).
 * lm_head.weight has no GGUF tensor: llama.cpp ties output to token_embd.
 * A leading "transformer." of an HF name is ignored.
 *
 * The Llama family (M. = model.layers.N.):
 *
 *   model.embed_tokens.weight     token_embd.weight
 *   M.input_layernorm.weight      blk.N.attn_norm.weight     F32
 *   M.self_attn.q_proj.*          blk.N.attn_q.*             llama: permuted
 *   M.self_attn.k_proj.*          blk.N.attn_k.*             llama: permuted
 *   M.self_attn.v_proj.*          blk.N.attn_v.*
 *   M.self_attn.o_proj.*          blk.N.attn_output.*
 *   M.self_attn.q_norm.weight     blk.N.attn_q_norm.weight   qwen3, F32
 *   M.self_attn.k_norm.weight     blk.N.attn_k_norm.weight   qwen3, F32
 *   M.post_attention_layernorm.weight  blk.N.ffn_norm.weight F32
 *   M.mlp.gate_proj.*             blk.N.ffn_gate.*
 *   M.mlp.up_proj.*               blk.N.ffn_up.*
 *   M.mlp.down_proj.*             blk.N.ffn_down.*
 *   model.norm.weight             output_norm.weight         F32
 *   lm_head.weight                output.weight              (absent: tied)
 *
 * (.* is .weight and .bias; biases are F32.) For llama, q_proj's and
 * k_proj's rows are permuted from Hugging Face's rotate-half layout to
 * the interleaved one llama.cpp's LLAMA rotary wants
 * (convert_hf_to_gguf.py's LlamaModel.permute), q with the GGUF's
 * <arch>.attention.head_count heads, k with head_count_kv:
 * st_arch_permuted_row. qwen2 and qwen3 GGUFs keep HF's order (llama.cpp
 * runs them with NEOX rotary). A llama GGUF's rope_freqs.weight has no HF
 * tensor (st_arch_gguf_derived). Names are matched whole; N is canonical
 * decimal (no sign, no leading zero) below 10^6.
 */
enum st_arch_permute {
	ST_ARCH_PERMUTE_Q = 1, /* rows permuted with head_count heads */
	ST_ARCH_PERMUTE_K      /* ... with head_count_kv heads */
};

typedef struct st_arch_gguf_info {
	int transpose; /* 1: a Conv1D weight, [in, out] <-> [out, in] */
	int keep_f32;  /* 1: vectors and position_embd, never quantized */
	int layer;     /* the block number, or -1 for a global tensor */
	int permute;   /* 0, or enum st_arch_permute: llama's q/k rows */
} st_arch_gguf_info;

/* Whether arch (a GGUF general.architecture) has a name map: 1 or 0. */
ST_API int st_arch_gguf_known(const char *arch);

/*
 * The GGUF name of an HF name under map arch into out (size bytes,
 * NUL-terminated), and *info when not NULL. Returns ST_OK, ST_ENOTFOUND
 * when hf is no parameter of the map (a legacy buffer such as attn.bias
 * or rotary_emb.inv_freq, GPT-2's lm_head.weight, anything else),
 * ST_EUNSUPPORTED when arch has no map, or ST_EINVAL when out is too
 * small.
 */
ST_API int st_arch_to_gguf(const char *arch, const char *hf, char *out, size_t size,
                           st_arch_gguf_info *info);
/* The HF name of a GGUF name: the same table, the same results. */
ST_API int st_arch_from_gguf(const char *arch, const char *gguf, char *out, size_t size,
                             st_arch_gguf_info *info);
/*
 * Whether a GGUF tensor of map arch is one convert_hf_to_gguf.py computes
 * rather than converts, so that no HF tensor is expected for it: what it
 * is (static text: llama's rope_freqs.weight, "llama3 rope scaling
 * factors, computed from config.json's rope_scaling"), or NULL.
 */
ST_API const char *st_arch_gguf_derived(const char *arch, const char *gguf);

/* st_arch_to_gguf and st_arch_from_gguf with map "gpt2". */
ST_API int st_arch_gpt2_to_gguf(const char *hf, char *out, size_t size,
                                st_arch_gguf_info *info);
ST_API int st_arch_gpt2_from_gguf(const char *gguf, char *out, size_t size,
                                  st_arch_gguf_info *info);

/*
 * The row permutation of llama's q/k (LlamaModel.permute): row `row` of
 * the GGUF tensor of `rows` rows (heads heads of D = rows / heads rows
 * each) is row *hf_row of the HF tensor: GGUF row h*D + 2i + j is HF row
 * h*D + j*D/2 + i (i < D/2, j < 2). E.g. heads 2, D 4: GGUF rows 0..7 are
 * HF rows 0 2 1 3 4 6 5 7. The same map writes a GGUF from HF rows (row r
 * from HF row f(r)) and reads HF rows back. Computed per row: no table,
 * no allocation. Returns ST_OK, or ST_EINVAL when heads is 0, rows is not
 * a multiple of 2 * heads, or row >= rows.
 */
ST_API int st_arch_permuted_row(uint64_t row, uint64_t rows, uint64_t heads,
                                uint64_t *hf_row);

#ifdef __cplusplus
}
#endif

#endif
