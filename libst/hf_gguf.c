/*
 * hf_gguf.c - a Hugging Face snapshot of the Llama family (llama,
 * mistral, qwen2, qwen3) as one GGUF file for llama.cpp (st/gguf.h,
 * st_hf_write_gguf), as convert_hf_to_gguf.py writes it (llama.cpp's
 * conversion/base.py, llama.py, qwen.py): the keys of set_gguf_parameters
 * from config.json (the inverse of gguf_hf.c's st_gguf_hf_config), the
 * tensors renamed by st/arch.h's one table (st_arch_to_gguf), llama's q/k
 * rows permuted (st_arch_permuted_row), llama3's rope_freqs.weight, and
 * the vocabulary of tokenizer.json (hf_gguf_vocab.c). GPT-2 (GPT2Model)
 * as gpt2export wrote it: its keys, the model's tensor order, Conv1D
 * weights transposed (write_transposed), a tied head checked value for
 * value, the vocabulary also of vocab.json + merges.txt, gpt2export's
 * special ids and fillers (gpt2_vocab).
 *
 * Types: vectors (norms, biases) F32; every matrix in the type asked for,
 * or in F16 when its rows are not whole blocks of it (gguf-py's QuantError
 * makes convert_hf_to_gguf fall back to F16 for Q8_0, and llama-quantize's
 * tensor_type_fallback does for a 32-block type). Encoding is
 * st_ggml_from_f32's (ggml's quantize_row_*_ref, byte for byte).
 *
 * Memory: a chunk of CHUNK floats and its encoding (a transposed band:
 * CHUNK floats, or one row when a row is longer), whatever the tensors'
 * sizes; the file is st_gguf_writer's (a temporary, renamed at the end).
 */
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 65536 /* floats per encode and write: a multiple of every block */

/* llama.cpp's llama_ftype of a file whose matrices are `type`. */
static int file_type(unsigned type)
{
	switch (type) {
	case ST_GGML_F32: return 0;
	case ST_GGML_F16: return 1;
	case ST_GGML_Q4_0: return 2;
	case ST_GGML_Q4_1: return 3;
	case ST_GGML_Q8_0: return 7;
	case ST_GGML_Q5_0: return 8;
	case ST_GGML_Q5_1: return 9;
	case ST_GGML_BF16: return 32;
	default: return -1;
	}
}

/* ---- config.json ------------------------------------------------------------ */

struct cfg {
	st_arch_config a;
	const char *arch; /* the GGUF architecture (static) */
	struct st__json *root;
	const char *file; /* for messages */
	uint64_t context;
	double eps, theta; /* theta < 0: absent */
	int rope;          /* 0 none, 1 linear, 2 llama3 */
	double factor, low, high, old;
	long long bos, eos;
	int window; /* a sliding_window that is not written */
	long long window_size;
};

static const char *gguf_arch(const char *name)
{
	static const struct {
		const char *hf, *gguf;
	} arches[] = {{"llama", "llama"},   {"LlamaForCausalLM", "llama"},
	              {"mistral", "llama"}, {"MistralForCausalLM", "llama"},
	              {"qwen2", "qwen2"},   {"Qwen2ForCausalLM", "qwen2"},
	              {"qwen3", "qwen3"},   {"Qwen3ForCausalLM", "qwen3"}};
	for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
		if (!strcmp(name, arches[i].hf))
			return arches[i].gguf;
	return NULL;
}

static int number(const struct cfg *c, const struct st__json *obj, const char *key, int required,
                  double *out, st_error *err)
{
	const struct st__json *v = st__json_get(obj, key);
	if (!v && !required)
		return ST_OK;
	if (st__json_type(v) != ST__JSON_NUMBER || !isfinite(st__json_number(v)))
		return st__error(err, ST_EFORMAT, "%s: \"%s\" is %s, expected a number", c->file,
		                 key, v ? "not a number" : "missing");
	*out = st__json_number(v);
	return ST_OK;
}

/* A token id: an integer, or the first of a list (eos_token_id [..]). */
static long long token_id(const struct st__json *v)
{
	if (st__json_type(v) == ST__JSON_ARRAY)
		v = st__json_at(v, 0);
	double d = st__json_number(v);
	return st__json_type(v) == ST__JSON_NUMBER && d >= 0 && d < 2147483648.0 && d == floor(d)
	               ? (long long)d
	               : -1;
}

/* rope_scaling: none, linear (two keys), llama3 (rope_freqs.weight). */
static int read_rope(struct cfg *c, st_error *err)
{
	const struct st__json *rs = st__json_get(c->root, "rope_scaling");
	if (!rs || st__json_type(rs) == ST__JSON_NULL)
		return ST_OK;
	const char *kind = st__json_string(st__json_get(rs, "rope_type"));
	if (!kind)
		kind = st__json_string(st__json_get(rs, "type"));
	if (kind && !strcmp(kind, "default"))
		return ST_OK;
	if (kind && !strcmp(kind, "linear") && strcmp(c->arch, "llama") == 0) {
		c->rope = 1;
		return number(c, rs, "factor", 1, &c->factor, err);
	}
	if (kind && !strcmp(kind, "llama3") && strcmp(c->arch, "llama") == 0) {
		c->rope = 2;
		c->factor = 8, c->low = 1, c->high = 4, c->old = 8192;
		int rc = number(c, rs, "factor", 0, &c->factor, err);
		if (rc == ST_OK)
			rc = number(c, rs, "low_freq_factor", 0, &c->low, err);
		if (rc == ST_OK)
			rc = number(c, rs, "high_freq_factor", 0, &c->high, err);
		if (rc == ST_OK)
			rc = number(c, rs, "original_max_position_embeddings", 0, &c->old, err);
		if (rc == ST_OK && !(c->low < c->high && c->factor > 0 && c->old > 0))
			rc = st__error(err, ST_EFORMAT,
			               "%s: rope_scaling llama3: factors out of range", c->file);
		return rc;
	}
	char q[80];
	return st__error(err, ST_EUNSUPPORTED,
	                 "%s: rope_scaling '%s' of %s is not written (linear and llama3 of "
	                 "llama are)",
	                 c->file, kind ? st__qname(q, sizeof q, kind, strlen(kind)) : "(no type)",
	                 c->arch);
}

/* The GPT-2 variants llama.cpp's gpt2 does not run (as gpt2export
 * refused them): a flag off its default, another activation. */
static int gpt2_variant(const struct cfg *c, st_error *err)
{
	static const struct {
		const char *key;
		int dflt, supported;
		const char *what;
	} flags[] = {
		{"scale_attn_weights", 1, 1, "unscaled attention"},
		{"scale_attn_by_inverse_layer_idx", 0, 0,
	         "attention scaled by the inverse layer index"},
		{"reorder_and_upcast_attn", 0, 0, "reordered, upcast attention"},
		{"add_cross_attention", 0, 0, "cross-attention"},
		{"tie_word_embeddings", 1, 1, "untied output head"},
	};
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		enum st__json_type t = st__json_type(st__json_get(c->root, flags[i].key));
		int v = t == ST__JSON_TRUE ? 1 : t == ST__JSON_FALSE ? 0 : flags[i].dflt;
		if (v != flags[i].supported)
			return st__error(err, ST_EUNSUPPORTED,
			                 "%s: %s %s is not written (llama.cpp's gpt2 has no %s)",
			                 c->file, flags[i].key, v ? "true" : "false",
			                 flags[i].what);
	}
	const char *act = st__json_string(st__json_get(c->root, "activation_function"));
	if (act && strcmp(act, "gelu_new") && strcmp(act, "gelu_pytorch_tanh")) {
		char q[80];
		return st__error(err, ST_EUNSUPPORTED,
		                 "%s: activation_function '%s' is not written (llama.cpp's gpt2 "
		                 "runs gelu_new)",
		                 c->file, st__qname(q, sizeof q, act, strlen(act)));
	}
	return ST_OK;
}

/* GPT-2's keys (GPT2Model.set_gguf_parameters): n_positions, and
 * layer_norm_epsilon (transformers' default 1e-5). */
static int read_gpt2(struct cfg *c, st_error *err)
{
	int rc = gpt2_variant(c, err);
	if (rc != ST_OK)
		return rc;
	c->arch = "gpt2";
	c->context = c->a.positions;
	c->eps = 1e-5;
	const struct st__json *e = st__json_get(c->root, "layer_norm_epsilon");
	if (st__json_type(e) != ST__JSON_NULL) {
		rc = number(c, c->root, "layer_norm_epsilon", 0, &c->eps, err);
		if (rc != ST_OK)
			return rc;
		if (!(c->eps > 0) || c->eps > 3.4e38 || (float)c->eps == 0)
			return st__error(err, ST_EFORMAT,
			                 "%s: \"layer_norm_epsilon\" is %g, not a positive float",
			                 c->file, c->eps);
	}
	c->bos = -1; /* gpt2export's: <|endoftext|>, whatever bos_token_id says */
	c->eos = token_id(st__json_get(c->root, "eos_token_id"));
	return ST_OK;
}

static int read_config(struct cfg *c, const char *text, size_t len, st_error *err)
{
	int rc = st_arch_config_parse(&c->a, text, len, c->file, err);
	if (rc == ST_EUNSUPPORTED) {
		char q[80];
		return st__error(err, ST_EUNSUPPORTED,
		                 "%s: architecture '%s': a GGUF is written for gpt2, llama, "
		                 "mistral, qwen2 and qwen3",
		                 c->file, st__qname(q, sizeof q, c->a.arch, strlen(c->a.arch)));
	}
	if (rc != ST_OK)
		return rc;
	c->root = st__json_parse(text, len);
	if (c->root && c->a.family == ST_ARCH_GPT2)
		return read_gpt2(c, err);
	const char *mt = st__json_string(st__json_get(c->root, "model_type"));
	c->arch = gguf_arch(c->a.arch);
	if (!c->arch && mt)
		c->arch = gguf_arch(mt);
	char q[80];
	if (!c->root || !c->arch)
		return st__error(err, ST_EUNSUPPORTED, "%s: architecture '%s' has no GGUF map",
		                 c->file, st__qname(q, sizeof q, c->a.arch, strlen(c->a.arch)));
	double ctx = 0;
	c->theta = -1;
	rc = number(c, c->root, "max_position_embeddings", 1, &ctx, err);
	if (rc == ST_OK && !(ctx >= 1 && ctx <= 4294967295.0 && ctx == floor(ctx)))
		rc = st__error(err, ST_EFORMAT,
		               "%s: \"max_position_embeddings\" is not a count from 1 to 2^32-1",
		               c->file);
	c->context = (uint64_t)ctx;
	if (rc == ST_OK)
		rc = number(c, c->root, "rms_norm_eps", 1, &c->eps, err);
	if (rc == ST_OK)
		rc = number(c, c->root, "rope_theta", 0, &c->theta, err);
	if (rc == ST_OK)
		rc = read_rope(c, err);
	if (rc != ST_OK)
		return rc;
	c->bos = token_id(st__json_get(c->root, "bos_token_id"));
	c->eos = token_id(st__json_get(c->root, "eos_token_id"));
	/* convert_hf_to_gguf writes no window for the llama arch; Qwen2 says
	 * use_sliding_window false (llama.cpp's qwen2 has none either). */
	const struct st__json *w = st__json_get(c->root, "sliding_window");
	int used = st__json_type(st__json_get(c->root, "use_sliding_window")) != ST__JSON_FALSE;
	if (st__json_type(w) == ST__JSON_NUMBER && used) {
		c->window = 1;
		c->window_size = (long long)st__json_number(w);
	}
	return ST_OK;
}

/* ---- the tensors -------------------------------------------------------------- */

/* One GGUF tensor: where its data comes from and how it is stored. */
struct plan {
	long src; /* checkpoint tensor, or -1: rope_freqs.weight */
	char name[96];
	unsigned type, ndim;
	uint64_t dims[2];
	uint64_t rows, cols; /* as read: cols floats a row */
	uint64_t heads;      /* > 0: rows permuted with these heads */
	int transpose;       /* GPT-2's Conv1D: rows x cols stored cols x rows */
	int fallback;
};

static int check_dtype(const st_checkpoint *ck, const st_tensor *t, int gpt2, st_error *err)
{
	if (t->dtype == ST_DTYPE_F32 || t->dtype == ST_DTYPE_F16 || t->dtype == ST_DTYPE_BF16 ||
	    (gpt2 && t->dtype == ST_DTYPE_F64))
		return ST_OK;
	char q[160];
	return st__error(err, ST_EUNSUPPORTED,
	                 "%s: tensor '%s' is %s: a GGUF is written from F32, F16 or BF16 "
	                 "tensors%s",
	                 st_checkpoint_path(ck), st__qname(q, sizeof q, t->name, t->name_len),
	                 st_dtype_name(t->dtype),
	                 st_dtype_bits(t->dtype) == 8 ? " (dequantize it first, to BF16)" : "");
}

/* The first problem of the comparison with config.json, as one line. */
static int check_report(const st_checkpoint *ck, const struct cfg *c, const st_arch_report *r,
                        st_error *err)
{
	for (size_t i = 0; i < r->n_items; i++) {
		const st_arch_item *it = &r->items[i];
		char q[160], s[64];
		st__qname(q, sizeof q, it->name, strlen(it->name));
		switch (it->what) {
		case ST_ARCH_MISSING:
			return st__error(err, ST_EFORMAT,
			                 "%s: tensor '%s' is missing (config.json: %s)",
			                 st_checkpoint_path(ck), q, c->arch);
		case ST_ARCH_MISSHAPEN:
			st__fmt_shape(s, sizeof s, it->shape, it->ndim);
			return st__error(err, ST_EFORMAT, "%s: tensor '%s': config.json implies %s",
			                 st_checkpoint_path(ck), q, s);
		case ST_ARCH_UNKNOWN:
			return st__error(err, ST_EFORMAT,
			                 "%s: tensor '%s' is not a parameter of %s: no GGUF name",
			                 st_checkpoint_path(ck), q, c->arch);
		default: break;
		}
	}
	return ST_OK;
}

/* Whether a tensor is left out (a legacy buffer, a tied lm_head). */
static const char *left_out(const st_arch_report *r, const st_tensor *t)
{
	for (size_t i = 0; i < r->n_items; i++)
		if (r->items[i].found == t)
			return st_arch_what_name(r->items[i].what);
	return NULL;
}

static int make_plan(struct plan *p, const st_checkpoint *ck, size_t i, const struct cfg *c,
                     unsigned type, st_error *err)
{
	const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
	st_arch_gguf_info info;
	char q[160];
	memset(p, 0, sizeof *p);
	p->src = (long)i;
	if (strlen(t->name) != t->name_len ||
	    st_arch_to_gguf(c->arch, t->name, p->name, sizeof p->name, &info) != ST_OK)
		return st__error(err, ST_EFORMAT, "%s: tensor '%s' has no %s GGUF name",
		                 st_checkpoint_path(ck),
		                 st__qname(q, sizeof q, t->name, t->name_len), c->arch);
	p->ndim = t->ndim;
	p->transpose = info.transpose && t->ndim == 2;
	if (p->transpose) { /* [in, out] -> [out, in], whose dims are {in, out} */
		p->dims[0] = p->rows = t->shape[0];
		p->dims[1] = p->cols = t->shape[1];
	} else if (t->ndim == 1) {
		p->dims[0] = p->cols = t->shape[0];
		p->rows = 1;
	} else {
		p->dims[0] = p->cols = t->shape[1];
		p->dims[1] = p->rows = t->shape[0];
	}
	if (info.permute) {
		p->heads = info.permute == ST_ARCH_PERMUTE_Q ? c->a.heads : c->a.kv_heads;
		if (t->ndim == 1) /* a bias: a column of rows */
			p->rows = t->shape[0], p->cols = 1;
		uint64_t r0;
		if (st_arch_permuted_row(0, p->rows, p->heads, &r0) != ST_OK)
			return st__error(err, ST_EFORMAT,
			                 "%s: tensor '%s': %llu rows are not %llu heads of an even "
			                 "size",
			                 st_checkpoint_path(ck),
			                 st__qname(q, sizeof q, t->name, t->name_len),
			                 (unsigned long long)p->rows, (unsigned long long)p->heads);
	}
	p->type = t->ndim == 1 || info.keep_f32 ? ST_GGML_F32 : type;
	unsigned blk = 1;
	st_ggml_type_block(p->type, &blk, NULL);
	if (p->dims[0] % blk) {
		p->type = ST_GGML_F16;
		p->fallback = 1;
	}
	return ST_OK;
}

/* rope_freqs.weight (st__llama3_rope_freqs; as testdata/llama/gguf_llama.py
 * computes it). */
static void rope_freqs(const struct cfg *c, float *out, uint64_t n)
{
	st__llama3_rope_freqs(c->theta, c->factor, c->low, c->high, c->old, out, n);
}

/* ---- writing ------------------------------------------------------------------ */

struct job {
	st_gguf_writer *w;
	const char *out;
	st_error *err;
	int rc;
};

static void put(struct job *j, const char *key, const st_gguf_value *v)
{
	if (j->rc == ST_OK)
		j->rc = st_gguf_writer_set(j->w, key, v, j->err);
}

static void put_str(struct job *j, const char *key, const char *s)
{
	st_gguf_value v = {.type = ST_GGUF_STRING, .n = strlen(s)};
	v.v.s = s;
	put(j, key, &v);
}

static void put_u32(struct job *j, const char *key, uint64_t u)
{
	st_gguf_value v = {.type = ST_GGUF_UINT32};
	v.v.u = u;
	put(j, key, &v);
}

static void put_f32(struct job *j, const char *key, double f)
{
	st_gguf_value v = {.type = ST_GGUF_FLOAT32};
	v.v.f = (double)(float)f;
	put(j, key, &v);
}

static void put_bool(struct job *j, const char *key, int b)
{
	st_gguf_value v = {.type = ST_GGUF_BOOL};
	v.v.u = b ? 1 : 0;
	put(j, key, &v);
}

static void put_array(struct job *j, const char *key, int elem, uint64_t n, const void *data)
{
	st_gguf_value v = {.type = ST_GGUF_ARRAY, .elem_type = elem, .n = n};
	if (elem == ST_GGUF_STRING)
		v.v.vals = data;
	else
		v.v.raw = data;
	put(j, key, &v);
}

static void put_key(struct job *j, const char *arch, const char *key, uint64_t u)
{
	char full[128];
	snprintf(full, sizeof full, "%s.%s", arch, key);
	put_u32(j, full, u);
}

/* GPT2Model.set_gguf_parameters' keys, in its order. */
static void put_arch_gpt2(struct job *j, const struct cfg *c, const char *name, unsigned type)
{
	put_str(j, "general.architecture", "gpt2");
	put_str(j, "general.name", name);
	put_u32(j, "gpt2.block_count", c->a.layers);
	put_u32(j, "gpt2.context_length", c->context);
	put_u32(j, "gpt2.embedding_length", c->a.hidden);
	put_u32(j, "gpt2.feed_forward_length", c->a.intermediate);
	put_u32(j, "gpt2.attention.head_count", c->a.heads);
	put_f32(j, "gpt2.attention.layer_norm_epsilon", c->eps);
	put_u32(j, "general.file_type", (uint64_t)file_type(type));
	put_u32(j, "general.quantization_version", 2);
}

/* The architecture's keys, in set_gguf_parameters' order. */
static void put_arch(struct job *j, const struct cfg *c, const char *name, unsigned type)
{
	const char *a = c->arch;
	char k[128];
	if (c->a.family == ST_ARCH_GPT2) {
		put_arch_gpt2(j, c, name, type);
		return;
	}
	put_str(j, "general.architecture", a);
	put_str(j, "general.name", name);
	put_key(j, a, "context_length", c->context);
	put_key(j, a, "embedding_length", c->a.hidden);
	put_key(j, a, "feed_forward_length", c->a.intermediate);
	put_key(j, a, "block_count", c->a.layers);
	put_key(j, a, "attention.head_count", c->a.heads);
	put_key(j, a, "attention.head_count_kv", c->a.kv_heads);
	if (c->theta >= 0) {
		snprintf(k, sizeof k, "%s.rope.freq_base", a);
		put_f32(j, k, c->theta);
	}
	snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", a);
	put_f32(j, k, c->eps);
	put_key(j, a, "attention.key_length", c->a.head_dim);
	put_key(j, a, "attention.value_length", c->a.head_dim);
	put_u32(j, "general.file_type", (uint64_t)file_type(type));
	if (!strcmp(a, "llama")) {
		put_key(j, a, "vocab_size", c->a.vocab);
		put_key(j, a, "rope.dimension_count", c->a.head_dim);
		if (c->rope == 1) {
			put_str(j, "llama.rope.scaling.type", "linear");
			put_f32(j, "llama.rope.scaling.factor", c->factor);
		}
	}
	put_u32(j, "general.quantization_version", 2);
}

static void put_id(struct job *j, const char *key, long long id, uint64_t n)
{
	if (id >= 0 && (uint64_t)id < n)
		put_u32(j, key, (uint64_t)id);
}

/* tokenizer.ggml.*: tokenizer.json's, or the stand-in (one per id). */
static void put_vocab(struct job *j, const struct st__hf_vocab *v, const struct cfg *c)
{
	if (v->add_space_prefix >= 0)
		put_bool(j, "tokenizer.ggml.add_space_prefix", v->add_space_prefix);
	put_str(j, "tokenizer.ggml.model", v->model);
	put_str(j, "tokenizer.ggml.pre", v->pre);
	put_array(j, "tokenizer.ggml.tokens", ST_GGUF_STRING, v->n, v->tokens);
	if (v->scores)
		put_array(j, "tokenizer.ggml.scores", ST_GGUF_FLOAT32, v->n, v->scores);
	put_array(j, "tokenizer.ggml.token_type", ST_GGUF_INT32, v->n, v->types);
	if (!v->scores) /* LlamaHfVocab writes no merges */
		put_array(j, "tokenizer.ggml.merges", ST_GGUF_STRING, v->n_merges, v->merges);
	put_id(j, "tokenizer.ggml.bos_token_id", v->bos >= 0 ? v->bos : c->bos, v->n);
	put_id(j, "tokenizer.ggml.eos_token_id", v->eos >= 0 ? v->eos : c->eos, v->n);
	put_id(j, "tokenizer.ggml.unknown_token_id", v->unk, v->n);
	put_id(j, "tokenizer.ggml.padding_token_id", v->pad, v->n);
	if (v->add_bos >= 0)
		put_bool(j, "tokenizer.ggml.add_bos_token", v->add_bos);
	if (v->add_eos >= 0)
		put_bool(j, "tokenizer.ggml.add_eos_token", v->add_eos);
}

static int stand_in(struct st__hf_vocab *v, uint64_t n, st_error *err)
{
	memset(v, 0, sizeof *v);
	st__hf_vocab_free(v);
	v->n = n;
	v->model = "gpt2";
	v->pre = "default";
	v->tokens = calloc((size_t)n, sizeof *v->tokens);
	v->types = malloc((size_t)n * 4);
	v->pads = malloc((size_t)n * 26);
	v->merges = calloc(1, sizeof *v->merges);
	if (!v->tokens || !v->types || !v->pads || !v->merges)
		return st__error(err, ST_ENOMEM, "out of memory for %llu tokens",
		                 (unsigned long long)n);
	for (uint64_t id = 0; id < n; id++) {
		char *p = v->pads + id * 26;
		snprintf(p, 26, "<t%llu>", (unsigned long long)id);
		v->tokens[id] = (st_gguf_value){.type = ST_GGUF_STRING, .n = strlen(p)};
		v->tokens[id].v.s = p;
		memcpy(v->types + id * 4, "\1\0\0\0", 4);
	}
	return ST_OK;
}

/* GPT-2 without tokenizer.json: vocab.json and merges.txt (as gpt2export
 * read them). */
static int load_pair(struct st__hf_vocab *v, const char *dir, const struct cfg *c, st_error *err)
{
	char *vj = st__path_join(dir, "vocab.json"), *mt = st__path_join(dir, "merges.txt");
	char *vtext = NULL, *mtext = NULL;
	size_t vlen = 0, mlen = 0;
	int rc = vj && mt ? st_config_read_file(vj, &vtext, &vlen, err) : ST_ENOMEM;
	if (rc == ST_OK)
		rc = st_config_read_file(mt, &mtext, &mlen, err);
	if (rc == ST_ENOTFOUND)
		rc = st__error(err, ST_ENOTFOUND,
		               "%s: no tokenizer.json, or vocab.json and merges.txt", dir);
	else if (rc == ST_ENOMEM && !(vj && mt))
		rc = st__error(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = st__hf_vocab_parse_pair(v, vtext, vlen, mtext, mlen, c->a.vocab, vj, mt, err);
	free(vtext);
	free(mtext);
	free(vj);
	free(mt);
	return rc;
}

/* The vocabulary: tokenizer.json beside the snapshot, or the stand-in. */
static int load_vocab(struct st__hf_vocab *v, const char *dir, const struct cfg *c, int stand,
                      int *stood, st_error *err)
{
	char *tj = st__path_join(dir, "tokenizer.json");
	char *tc = st__path_join(dir, "tokenizer_config.json");
	char *text = NULL, *ctext = NULL;
	size_t len = 0, clen = 0;
	st_error e;
	int rc = tj && tc ? st_config_read_file(tj, &text, &len, &e) : ST_ENOMEM;
	*stood = 0;
	if (rc == ST_ENOTFOUND && c->a.family == ST_ARCH_GPT2) {
		rc = load_pair(v, dir, c, err);
	} else if (rc == ST_ENOTFOUND && stand) {
		*stood = 1;
		rc = stand_in(v, c->a.vocab, err);
	} else if (rc == ST_ENOTFOUND) {
		rc = st__error(err, ST_ENOTFOUND,
		               "%s: no tokenizer.json: a GGUF needs a vocabulary (or ask for the "
		               "stand-in one, a token per id)",
		               dir);
	} else if (rc == ST_OK) {
		rc = st_config_read_file(tc, &ctext, &clen, &e);
		if (rc == ST_ENOTFOUND)
			rc = ST_OK;
		if (rc == ST_OK)
			rc = st__hf_vocab_parse(v, text, len, ctext, clen, c->a.vocab, tj, err);
		else if (err)
			*err = e;
	} else if (rc == ST_ENOMEM) {
		rc = st__error(err, ST_ENOMEM, "out of memory");
	} else if (err) {
		*err = e;
	}
	free(text);
	free(ctext);
	free(tj);
	free(tc);
	return rc;
}

static void note(const st_convert_run *r, int severity, const char *fmt, ...) ST_PRINTF(3, 4);
static void note(const st_convert_run *r, int severity, const char *fmt, ...)
{
	if (!r || !r->note)
		return;
	char m[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	st__one_line(m, sizeof m);
	r->note(r->ctx, severity, m);
}

static int cancelled(const st_convert_run *r)
{
	return r && r->cancel && r->cancel(r->ctx);
}

/* Encode n floats of buf as p's type and write them. */
static int flush(struct job *j, const struct plan *p, const float *buf, size_t n, void *enc)
{
	unsigned blk, bytes;
	st_ggml_type_block(p->type, &blk, &bytes);
	size_t out = n / blk * bytes;
	int rc = st_ggml_from_f32(p->type, buf, enc, n);
	if (rc != ST_OK)
		return st__error(j->err, rc, "%s: tensor '%s': cannot encode as %s", j->out,
		                 p->name, st_ggml_type_name(p->type));
	return st_gguf_writer_write(j->w, enc, out, j->err);
}

/*
 * A Conv1D weight, HF's [in, out] as GGUF rows of `in` (row q: column q of
 * HF's): a band of GGUF rows at a time, each gathered from the HF rows'
 * segments, so memory stays a band whatever the shape.
 */
static int write_transposed(struct job *j, st_checkpoint *ck, const struct plan *p,
                            const st_convert_run *r)
{
	const st_tensor *t = st_checkpoint_tensor(ck, (size_t)p->src, NULL);
	const void *data;
	int rc = st_checkpoint_data(ck, (size_t)p->src, &data, j->err);
	if (rc != ST_OK)
		return rc;
	size_t esize = st_dtype_bits(t->dtype) / 8, in = (size_t)p->rows, out = (size_t)p->cols;
	size_t band = in < CHUNK ? CHUNK / in : 1;
	band = band < out ? band : out;
	float *buf = malloc(band * in * sizeof *buf), *seg = malloc(band * sizeof *seg);
	void *enc = malloc(band * in * sizeof *buf);
	if (!buf || !seg || !enc)
		rc = st__error(j->err, ST_ENOMEM, "%s: out of memory", j->out);
	for (size_t q0 = 0; rc == ST_OK && q0 < out; q0 += band) {
		size_t k = out - q0 < band ? out - q0 : band;
		for (size_t row = 0; row < in; row++) {
			st_convert(ST_DTYPE_F32, seg, t->dtype,
			           (const char *)data + (row * out + q0) * esize, k, NULL);
			for (size_t q = 0; q < k; q++)
				buf[q * in + row] = seg[q];
		}
		rc = flush(j, p, buf, k * in, enc);
		if (rc == ST_OK && r && r->progress)
			r->progress(r->ctx, k * in * esize);
		if (rc == ST_OK && cancelled(r))
			rc = st__error(j->err, ST_EIO, "%s: cancelled", j->out);
	}
	free(buf);
	free(seg);
	free(enc);
	return rc;
}

/* One tensor's data: GGUF row by GGUF row (from its HF row), in chunks. */
static int write_tensor(struct job *j, st_checkpoint *ck, const struct plan *p, const struct cfg *c,
                        float *buf, void *enc, const st_convert_run *r)
{
	if (p->src < 0) {
		rope_freqs(c, buf, p->dims[0]);
		return flush(j, p, buf, (size_t)p->dims[0], enc);
	}
	if (p->transpose)
		return write_transposed(j, ck, p, r);
	const st_tensor *t = st_checkpoint_tensor(ck, (size_t)p->src, NULL);
	const void *data;
	int rc = st_checkpoint_data(ck, (size_t)p->src, &data, j->err);
	if (rc != ST_OK)
		return rc;
	size_t esize = st_dtype_bits(t->dtype) / 8, fill = 0;
	for (uint64_t row = 0; row < p->rows; row++) {
		uint64_t from = row;
		if (p->heads)
			st_arch_permuted_row(row, p->rows, p->heads, &from);
		for (uint64_t off = 0; off < p->cols;) {
			size_t seg = p->cols - off < CHUNK - fill ? (size_t)(p->cols - off)
			                                          : CHUNK - fill;
			const char *src = (const char *)data + (from * p->cols + off) * esize;
			st_convert(ST_DTYPE_F32, buf + fill, t->dtype, src, seg, NULL);
			fill += seg;
			off += seg;
			if (fill == CHUNK) {
				if ((rc = flush(j, p, buf, fill, enc)) != ST_OK)
					return rc;
				if (r && r->progress)
					r->progress(r->ctx, fill * esize);
				if (cancelled(r))
					return st__error(j->err, ST_EIO, "%s: cancelled", j->out);
				fill = 0;
			}
		}
	}
	if (fill && (rc = flush(j, p, buf, fill, enc)) == ST_OK && r && r->progress)
		r->progress(r->ctx, fill * esize);
	return rc;
}

/* The snapshot folder's name, for general.name. */
static void folder_name(char *buf, size_t size, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	size_t b = n;
	while (b > 0 && dir[b - 1] != '/')
		b--;
	snprintf(buf, size, "%.*s", (int)(n - b), dir + b);
}

/* The matrices' type without --to: the source's one float type, else
 * F32. GPT-2 (gpt2export's rule): the one type of every parameter, vectors
 * too (rep: what is left out). */
static unsigned default_type(const st_checkpoint *ck, const st_arch_report *rep)
{
	int one = -1;
	for (size_t i = 0; i < st_checkpoint_n_tensors(ck); i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		if (rep ? !left_out(rep, t) : t->ndim == 2)
			one = one == -1 || one == (int)t->dtype ? (int)t->dtype : -2;
	}
	return one == ST_DTYPE_F16    ? ST_GGML_F16
	       : one == ST_DTYPE_BF16 ? ST_GGML_BF16
	                              : ST_GGML_F32;
}

struct state {
	st_checkpoint *ck;
	struct cfg c;
	st_arch_report rep;
	struct st__hf_vocab v;
	struct plan *plans;
	size_t n;
	float *buf;
	void *enc;
	st_gguf_writer *w;
	char *text;
};

static void state_free(struct state *s)
{
	st_gguf_writer_free(s->w);
	st_checkpoint_close(s->ck);
	st_arch_report_free(&s->rep);
	st__json_free(s->c.root);
	st__hf_vocab_free(&s->v);
	free(s->plans);
	free(s->buf);
	free(s->enc);
	free(s->text);
}

/* GPT-2's lm_head.weight, when there is one, must be wte.weight's values
 * (llama.cpp ties output to token_embd): compared a chunk at a time. */
static int check_tied(st_checkpoint *ck, const st_arch_report *rep, const char *prefix, uint64_t C,
                      st_error *err)
{
	const st_tensor *head = NULL;
	for (size_t i = 0; i < rep->n_items; i++)
		if (rep->items[i].what == ST_ARCH_ALIAS)
			head = rep->items[i].found;
	char wname[ST_ARCH_NAME_MAX + 16];
	snprintf(wname, sizeof wname, "%swte.weight", prefix);
	long wi = st_checkpoint_find(ck, wname, strlen(wname));
	if (!head || wi < 0)
		return ST_OK;
	long hi = st_checkpoint_find(ck, head->name, head->name_len);
	const st_tensor *wte = st_checkpoint_tensor(ck, (size_t)wi, NULL);
	const void *hd, *wd;
	int rc = st_checkpoint_data(ck, (size_t)hi, &hd, err);
	if (rc == ST_OK)
		rc = st_checkpoint_data(ck, (size_t)wi, &wd, err);
	if (rc != ST_OK)
		return rc;
	size_t eh = st_dtype_bits(head->dtype) / 8, ew = st_dtype_bits(wte->dtype) / 8;
	enum { N = 4096 };
	float a[N], b[N];
	for (uint64_t off = 0; off < head->n_elements; off += N) {
		size_t k = head->n_elements - off < N ? (size_t)(head->n_elements - off) : N;
		st_convert(ST_DTYPE_F32, a, head->dtype, (const char *)hd + off * eh, k, NULL);
		st_convert(ST_DTYPE_F32, b, wte->dtype, (const char *)wd + off * ew, k, NULL);
		for (size_t j = 0; j < k; j++) {
			uint32_t x, y; /* bit for bit: a NaN equals itself, -0 is not 0 */
			memcpy(&x, &a[j], 4);
			memcpy(&y, &b[j], 4);
			if (x == y)
				continue;
			char q[160], qw[160];
			return st__error(err, ST_EUNSUPPORTED,
			                 "%s: tensor '%s': differs from '%s' at [%llu, %llu] "
			                 "(%.9g, "
			                 "expected %.9g): an untied output head is not supported",
			                 st_checkpoint_path(ck),
			                 st__qname(q, sizeof q, head->name, head->name_len),
			                 st__qname(qw, sizeof qw, wte->name, wte->name_len),
			                 (unsigned long long)((off + j) / C),
			                 (unsigned long long)((off + j) % C), (double)a[j],
			                 (double)b[j]);
		}
	}
	return ST_OK;
}

/* GPT-2: the tied head, and generation_config.json's eos_token_id (which
 * says where text ends, over config.json's). */
static int check_gpt2(struct state *s, const char *dir, st_error *err)
{
	int rc = check_tied(s->ck, &s->rep, s->rep.prefix ? s->rep.prefix : "", s->c.a.hidden, err);
	char *path = st__path_join(dir, "generation_config.json"), *text = NULL;
	size_t len = 0;
	if (rc == ST_OK && !path)
		rc = st__error(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK) {
		rc = st_config_read_file(path, &text, &len, err);
		if (rc == ST_ENOTFOUND)
			rc = ST_OK;
		else if (rc == ST_OK) {
			struct st__json *g = st__json_parse(text, len);
			const struct st__json *e = st__json_get(g, "eos_token_id");
			if (!g)
				rc = st__error(err, ST_EFORMAT, "%s: not JSON", path);
			else if (e)
				s->c.eos = token_id(e);
			st__json_free(g);
		}
	}
	free(text);
	free(path);
	return rc;
}

/* GPT-2's tokenizer.ggml.* as gpt2export wrote them: fillers
 * USER_DEFINED, eos the config's (generation_config.json's over
 * config.json's; else <|endoftext|>), bos <|endoftext|> (else eos),
 * add_bos_token false, no unk or pad ids. */
static void gpt2_vocab(struct st__hf_vocab *v, const struct cfg *c)
{
	long long eot = -1;
	for (uint64_t id = 0; id < v->n; id++) {
		const char *t = v->tokens[id].v.s;
		if (t >= v->pads && t < v->pads + v->n * 26)
			memcpy(v->types + id * 4, "\4\0\0\0", 4);
		else if (eot < 0 && v->tokens[id].n == 13 && !memcmp(t, "<|endoftext|>", 13))
			eot = (long long)id;
	}
	v->eos = c->eos >= 0 ? c->eos : eot;
	v->bos = eot >= 0 ? eot : v->eos;
	v->unk = v->pad = -1;
	v->add_bos = 0;
	v->add_eos = v->add_space_prefix = -1;
}

/* Open, read config.json, compare, choose: everything before writing. */
static int prepare(struct state *s, const char *snapshot, const st_hf_gguf_options *o,
                   const st_convert_run *r, st_hf_gguf_result *res, st_error *err)
{
	char *file = NULL;
	size_t len = 0;
	int rc = st_checkpoint_open(&s->ck, snapshot, ST_OPEN_TORCH, err);
	if (rc != ST_OK)
		return rc;
	const char *dir = st_checkpoint_dir(s->ck);
	rc = st_config_read(dir, &s->text, &len, &file, err);
	s->c.file = file ? file : "config.json";
	if (rc == ST_OK)
		rc = read_config(&s->c, s->text, len, err);
	int gpt2 = rc == ST_OK && s->c.a.family == ST_ARCH_GPT2;
	if (rc == ST_OK && st_arch_compare(&s->c.a, s->ck, &s->rep, NULL) != ST_OK)
		rc = st__error(err, ST_ENOMEM, "%s: out of memory", s->c.file);
	for (size_t i = 0; rc == ST_OK && i < st_checkpoint_n_tensors(s->ck); i++) {
		const st_tensor *t = st_checkpoint_tensor(s->ck, i, NULL);
		if (!gpt2 || !left_out(&s->rep, t)) /* gpt2export never read GPT-2's buffers */
			rc = check_dtype(s->ck, t, gpt2, err);
	}
	if (rc == ST_OK)
		rc = check_report(s->ck, &s->c, &s->rep, err);
	if (rc == ST_OK && gpt2)
		rc = check_gpt2(s, dir, err);
	if (rc == ST_OK && s->c.window)
		note(r, ST_PROBLEM_WARNING,
		     "%s: sliding_window %lld is not written: llama.cpp's llama arch attends to "
		     "the whole context (as convert_hf_to_gguf.py writes it)",
		     s->c.file, s->c.window_size);
	free(file);
	s->c.file = NULL;
	if (rc != ST_OK)
		return rc;
	unsigned type = o && o->has_type ? o->type : default_type(s->ck, gpt2 ? &s->rep : NULL);
	if (file_type(type) < 0)
		return st__error(err, ST_EINVAL,
		                 "type %s: a GGUF is written in F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
		                 "Q5_0 or Q5_1",
		                 st_ggml_type_name(type) ? st_ggml_type_name(type) : "?");
	res->arch = s->c.arch;
	res->type = type;
	res->file_type = (unsigned)file_type(type);
	if (gpt2 && o && o->stand_in_vocab)
		return st__error(err, ST_EINVAL,
		                 "%s: a GPT-2 GGUF takes its vocabulary from the snapshot's "
		                 "tokenizer files (no stand-in)",
		                 dir);
	rc = load_vocab(&s->v, dir, &s->c, o && o->stand_in_vocab, &res->stand_in, err);
	if (rc == ST_OK && gpt2)
		gpt2_vocab(&s->v, &s->c);
	return rc;
}

/* The order tensors are written in: the checkpoint's; GPT-2's the model's
 * (st_arch_expected: wte, wpe, the blocks, ln_f, as GPT2Model's
 * state_dict), what is left out after it. */
static int checkpoint_order(const struct state *s, size_t *order, st_error *err)
{
	size_t n = st_checkpoint_n_tensors(s->ck), m = 0;
	if (s->c.a.family != ST_ARCH_GPT2) {
		for (size_t i = 0; i < n; i++)
			order[i] = i;
		return ST_OK;
	}
	st_arch_param *ps = NULL;
	size_t np = 0;
	if (st_arch_expected(&s->c.a, &ps, &np, NULL) != ST_OK)
		return st__error(err, ST_ENOMEM, "out of memory");
	const char *prefix = s->rep.prefix ? s->rep.prefix : "";
	for (size_t k = 0; k < np && m < n; k++) {
		char name[ST_ARCH_NAME_MAX + 16];
		snprintf(name, sizeof name, "%s%s", prefix, ps[k].name);
		long i = st_checkpoint_find(s->ck, name, strlen(name));
		if (i >= 0)
			order[m++] = (size_t)i;
	}
	free(ps);
	for (size_t i = 0; i < n && m < n; i++)
		if (left_out(&s->rep, st_checkpoint_tensor(s->ck, i, NULL)))
			order[m++] = i;
	if (m != n) /* check_report let nothing else through */
		return st__error(err, ST_EFORMAT, "%s: %zu tensors are not GPT-2's parameters",
		                 st_checkpoint_path(s->ck), n - m);
	return ST_OK;
}

/* The plans, in file order: rope_freqs first (generate_extra_tensors). */
static int plan_all(struct state *s, unsigned type, const st_convert_run *r, st_hf_gguf_result *res,
                    st_error *err)
{
	size_t n = st_checkpoint_n_tensors(s->ck);
	res->n_in = n;
	s->plans = calloc(n + 1, sizeof *s->plans);
	if (!s->plans)
		return st__error(err, ST_ENOMEM, "out of memory");
	if (s->c.rope == 2) {
		struct plan *p = &s->plans[s->n++];
		p->src = -1;
		snprintf(p->name, sizeof p->name, "rope_freqs.weight");
		p->type = ST_GGML_F32;
		p->ndim = 1;
		p->dims[0] = s->c.a.head_dim / 2;
	}
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	if (!order)
		return st__error(err, ST_ENOMEM, "out of memory");
	int rc = checkpoint_order(s, order, err);
	for (size_t k = 0; rc == ST_OK && k < n; k++) {
		size_t i = order[k];
		const st_tensor *t = st_checkpoint_tensor(s->ck, i, NULL);
		const char *why = left_out(&s->rep, t);
		if (why) {
			char q[160];
			note(r, ST_PROBLEM_NOTE, "tensor '%s' left out: %s",
			     st__qname(q, sizeof q, t->name, t->name_len), why);
			res->n_skipped++;
			continue;
		}
		struct plan *p = &s->plans[s->n];
		rc = make_plan(p, s->ck, i, &s->c, type, err);
		if (rc != ST_OK)
			break;
		s->n++;
		res->in_bytes += t->n_bytes;
		if (p->fallback) {
			res->n_fallback++;
			note(r, ST_PROBLEM_NOTE,
			     "tensor '%s': rows of %llu are not whole blocks of %s: written F16",
			     p->name, (unsigned long long)p->dims[0], st_ggml_type_name(type));
		}
	}
	free(order);
	return rc;
}

int st_hf_write_gguf(const char *snapshot, const char *path, const st_hf_gguf_options *o,
                     const st_convert_run *r, st_hf_gguf_result *res, st_error *err)
{
	struct state s;
	st_hf_gguf_result local;
	memset(&s, 0, sizeof s);
	st__hf_vocab_free(&s.v);
	if (!res)
		res = &local;
	memset(res, 0, sizeof *res);
	int rc = prepare(&s, snapshot, o, r, res, err);
	if (rc == ST_OK)
		rc = plan_all(&s, res->type, r, res, err);
	if (rc == ST_OK)
		rc = st_gguf_writer_new(&s.w, err);
	struct job j = {.w = s.w, .out = path, .err = err, .rc = rc};
	if (rc == ST_OK) {
		char name[256];
		folder_name(name, sizeof name, st_checkpoint_dir(s.ck));
		put_arch(&j, &s.c, o && o->name ? o->name : name, res->type);
		put_vocab(&j, &s.v, &s.c);
	}
	for (size_t i = 0; j.rc == ST_OK && i < s.n; i++) {
		const struct plan *p = &s.plans[i];
		j.rc = st_gguf_writer_add_tensor(s.w, p->name, p->type, p->ndim, p->dims, err);
		unsigned blk, bytes;
		st_ggml_type_block(p->type, &blk, &bytes);
		res->out_bytes += p->dims[0] * (p->ndim == 2 ? p->dims[1] : 1) / blk * bytes;
	}
	s.buf = malloc(CHUNK * sizeof *s.buf);
	s.enc = malloc(CHUNK * sizeof *s.buf);
	if (j.rc == ST_OK && (!s.buf || !s.enc))
		j.rc = st__error(err, ST_ENOMEM, "out of memory");
	if (j.rc == ST_OK)
		j.rc = st_gguf_writer_open(s.w, path, err);
	for (size_t i = 0; j.rc == ST_OK && i < s.n; i++) {
		j.rc = write_tensor(&j, s.ck, &s.plans[i], &s.c, s.buf, s.enc, r);
		if (j.rc == ST_OK && cancelled(r))
			j.rc = st__error(err, ST_EIO, "%s: cancelled", path);
	}
	if (j.rc == ST_OK)
		j.rc = st_gguf_writer_finish(s.w, err);
	if (j.rc == ST_OK) {
		res->n_tensors = s.n;
		res->n_tokens = s.v.n;
		res->model = s.v.model;
		res->pre = s.v.pre;
	}
	state_free(&s);
	return j.rc;
}
