/*
 * gguf_hf.c - what a Llama-family GGUF says back in Hugging Face's terms
 * (st/gguf.h): each tensor's HF name (st_arch_from_gguf's table), and
 * config.json and generation_config.json from the metadata, the inverse of
 * convert_hf_to_gguf.py's LlamaModel / Qwen2Model / Qwen3Model
 * set_gguf_parameters (which GGUF key each HF field became).
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* general.architecture as a NUL-terminated string in buf, or NULL. */
static const char *gguf_arch(const st_gguf *g, char *buf, size_t size)
{
	long k = st_gguf_find_kv(g, "general.architecture");
	if (k < 0)
		return NULL;
	const st_gguf_value *v = &st_gguf_kv_at(g, (size_t)k)->value;
	if (v->type != ST_GGUF_STRING || v->n == 0 || v->n >= size ||
	    memchr(v->v.s, 0, (size_t)v->n))
		return NULL;
	memcpy(buf, v->v.s, (size_t)v->n);
	buf[v->n] = 0;
	return buf;
}

int st_gguf_hf_arch(const st_gguf *g, const char **arch, st_error *err)
{
	static const char *const known[] = {"gpt2", "llama", "qwen2", "qwen3"};
	char buf[64];
	const char *a = gguf_arch(g, buf, sizeof buf);
	*arch = NULL;
	if (!a)
		return st__error(err, ST_EUNSUPPORTED, "%s: no general.architecture string",
		                 st_gguf_path(g));
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (!strcmp(a, known[i]))
			*arch = known[i];
	if (!*arch) {
		char q[160];
		return st__error(err, ST_EUNSUPPORTED,
		                 "%s: architecture '%s' has no Hugging Face map (gpt2, llama, "
		                 "qwen2, qwen3)",
		                 st_gguf_path(g), st__qname(q, sizeof q, a, strlen(a)));
	}
	return ST_OK;
}

int st_gguf_hf_name(const st_gguf *g, size_t i, char *out, size_t size, int *permute, st_error *err)
{
	const char *arch;
	int rc = st_gguf_hf_arch(g, &arch, err);
	if (rc != ST_OK)
		return rc;
	const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
	char q[160];
	st__qname(q, sizeof q, t->name, t->name_len);
	if (st_arch_gguf_derived(arch, t->name))
		return st__error(err, ST_ENOTFOUND, "%s: tensor '%s': %s; no Hugging Face tensor",
		                 st_gguf_path(g), q, st_arch_gguf_derived(arch, t->name));
	st_arch_gguf_info info;
	if (strlen(t->name) != t->name_len ||
	    st_arch_from_gguf(arch, t->name, out, size, &info) != ST_OK)
		return st__error(err, ST_EFORMAT,
		                 "%s: tensor '%s' is not a %s parameter: no Hugging Face name",
		                 st_gguf_path(g), q, arch);
	if (permute)
		*permute = info.permute;
	return ST_OK;
}

/* ---- config.json ---------------------------------------------------------- */

static const st_gguf_value *kv(const st_gguf *g, const char *arch, const char *key)
{
	char full[128];
	if (arch)
		snprintf(full, sizeof full, "%s.%s", arch, key);
	long k = st_gguf_find_kv(g, arch ? full : key);
	return k < 0 ? NULL : &st_gguf_kv_at(g, (size_t)k)->value;
}

static int is_uint(const st_gguf_value *v)
{
	return v && (v->type == ST_GGUF_UINT8 || v->type == ST_GGUF_UINT16 ||
	             v->type == ST_GGUF_UINT32 || v->type == ST_GGUF_UINT64 ||
	             ((v->type == ST_GGUF_INT8 || v->type == ST_GGUF_INT16 ||
	               v->type == ST_GGUF_INT32 || v->type == ST_GGUF_INT64) &&
	              v->v.i >= 0));
}

/* A count of 1 to 2^31 (st_arch_config_parse's range), or 0 when absent. */
static int get_count(const st_gguf *g, const char *arch, const char *key, int required,
                     uint64_t *out, st_error *err)
{
	const st_gguf_value *v = kv(g, arch, key);
	*out = 0;
	if (!v && !required)
		return ST_OK;
	if (!v)
		return st__error(err, ST_EFORMAT, "%s: %s.%s is missing", st_gguf_path(g), arch,
		                 key);
	if (!is_uint(v) || v->v.u < 1 || v->v.u > (1ull << 31))
		return st__error(err, ST_EFORMAT, "%s: %s%s%s is not a count from 1 to 2^31",
		                 st_gguf_path(g), arch ? arch : "", arch ? "." : "", key);
	*out = v->v.u;
	return ST_OK;
}

/* A finite float key as JSON text: the shortest that reads back. */
static int put_float(struct st__buf *b, const char *indent, const char *field,
                     const st_gguf_value *v)
{
	if (!v || (v->type != ST_GGUF_FLOAT32 && v->type != ST_GGUF_FLOAT64) || !isfinite(v->v.f))
		return 0;
	char s[40];
	if (v->v.f == floor(v->v.f) && fabs(v->v.f) < 1e15) {
		/* 500000.0 as transformers writes it, not 5e+05 */
		st__buf_printf(b, ",\n%s\"%s\": %.1f", indent, field, v->v.f);
		return 1;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(s, sizeof s, "%.*g", p, v->v.f);
		double back = strtod(s, NULL);
		if (v->type == ST_GGUF_FLOAT32 ? (float)back == (float)v->v.f : back == v->v.f)
			break;
	}
	/* "1e-05" and "500000" are JSON numbers; give integers a ".0" as
	 * transformers writes floats. */
	int integral = !strpbrk(s, ".eEn");
	st__buf_printf(b, ",\n%s\"%s\": %s%s", indent, field, s, integral ? ".0" : "");
	return 1;
}

struct hf_names {
	const char *arch, *model_type, *architecture;
};

static const struct hf_names names[] = {
	{"llama", "llama", "LlamaForCausalLM"},
	{"qwen2", "qwen2", "Qwen2ForCausalLM"},
	{"qwen3", "qwen3", "Qwen3ForCausalLM"},
};

static const char *torch_dtype(st_dtype d)
{
	return d == ST_DTYPE_F16 ? "float16" : d == ST_DTYPE_BF16 ? "bfloat16" : "float32";
}

/* The token_embd rows: vocab_size (the vocabulary may be longer than the
 * tokens the tokenizer lists, never shorter). */
static int vocab_rows(const st_gguf *g, uint64_t *out, st_error *err)
{
	long e = st_gguf_find(g, "token_embd.weight");
	if (e < 0)
		return st__error(err, ST_EFORMAT, "%s: no token_embd.weight", st_gguf_path(g));
	const st_gguf_tensor *t = st_gguf_tensor_at(g, (size_t)e);
	if (t->ndim != 2 || t->dims[1] < 1 || t->dims[1] > (1ull << 31))
		return st__error(err, ST_EFORMAT,
		                 "%s: tensor 'token_embd.weight' is not [vocab, hidden]",
		                 st_gguf_path(g));
	*out = t->dims[1];
	return ST_OK;
}

static int has_tensor(const st_gguf *g, const char *name)
{
	return st_gguf_find(g, name) >= 0;
}

/* A token id key, when it is one of the vocabulary's. */
static void put_token(struct st__buf *b, const char *field, const st_gguf_value *v, uint64_t vocab,
                      int *first)
{
	if (!is_uint(v) || v->v.u >= vocab)
		return;
	st__buf_printf(b, "%s\n  \"%s\": %llu", *first ? "" : ",", field,
	               (unsigned long long)v->v.u);
	*first = 0;
}

/* A float key's value; dflt when absent or of another type. */
static double float_kv(const st_gguf_value *v, double dflt)
{
	if (v && v->type == ST_GGUF_FLOAT32)
		return v->v.f;
	if (v && v->type == ST_GGUF_FLOAT64)
		return v->v.f;
	return dflt;
}

/* d printed as transformers' config.json holds a float ("8.0", "0.5"). */
static void put_number(struct st__buf *b, const char *field, double d)
{
	if (d == floor(d) && fabs(d) < 1e15)
		st__buf_printf(b, ",\n    \"%s\": %.1f", field, d);
	else
		st__buf_printf(b, ",\n    \"%s\": %.9g", field, d);
}

/*
 * rope_scaling llama3 from rope_freqs.weight: the four numbers are not in
 * the file, but the model only uses the divisors they give, so any four
 * that give the same divisors (each within 2^-20 of it: the converter's
 * float32 powers are torch's, not this libm's) make the same model. Tried
 * in order: factor the largest divisor, then 2, 4, ... 64; low_freq_factor
 * 1, 2; high_freq_factor 4, 2, 8; original_max_position_embeddings 8192,
 * then 2^0 ... 2^20 (Meta's Llama 3.1 and 3.2 values come first). Writes
 * the first that matches and returns 1; 0 when none does (or the tensor is
 * not F32 divisors of at least 1).
 */
static int llama3_scaling(const st_gguf *g, const char *arch, struct st__buf *b)
{
	long k = st_gguf_find(g, "rope_freqs.weight");
	if (k < 0)
		return 0;
	const st_gguf_tensor *t = st_gguf_tensor_at(g, (size_t)k);
	if (t->type != ST_GGML_F32 || t->ndim != 1 || t->dims[0] < 1 || t->dims[0] > 4096)
		return 0;
	size_t n = (size_t)t->dims[0];
	float have[4096], want[4096];
	const void *data = st_gguf_tensor_data(g, (size_t)k);
	if (!data)
		return 0;
	memcpy(have, data, n * sizeof *have);
	double most = 1;
	for (size_t i = 0; i < n; i++) {
		if (!(have[i] >= 1.0f && have[i] <= 1e6f))
			return 0;
		most = have[i] > most ? have[i] : most;
	}
	double theta = float_kv(kv(g, arch, "rope.freq_base"), 10000.0);
	const double factors[] = {most, 2, 4, 8, 16, 32, 64}, lows[] = {1, 2}, highs[] = {4, 2, 8};
	double olds[22] = {8192};
	for (int e = 0; e <= 20; e++)
		olds[1 + e] = ldexp(1.0, e);
	for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++)
		for (size_t l = 0; l < 2; l++)
			for (size_t h = 0; h < 3; h++)
				for (size_t o = 0; o < 22; o++) {
					if (factors[f] <= 1 || highs[h] <= lows[l])
						continue;
					st__llama3_rope_freqs(theta, factors[f], lows[l], highs[h],
					                      olds[o], want, n);
					size_t i = 0;
					while (i < n && fabs((double)want[i] - have[i]) <=
					                        ldexp((double)have[i], -20))
						i++;
					if (i < n)
						continue;
					st__buf_printf(b, ",\n  \"rope_scaling\": {\n    "
					                  "\"rope_type\": "
					                  "\"llama3\"");
					put_number(b, "factor", factors[f]);
					put_number(b, "low_freq_factor", lows[l]);
					put_number(b, "high_freq_factor", highs[h]);
					st__buf_printf(b,
					               ",\n    "
					               "\"original_max_position_embeddings\": %.0f",
					               olds[o]);
					st__buf_puts(b, "\n  }");
					return 1;
				}
	return 0;
}

/* ---- GPT-2: GPT2LMHeadModel's config.json ------------------------------- */

/* transformers' release whose save_pretrained these files follow. */
#define GPT2_TRANSFORMERS_VERSION "4.46.3"
/* <|endoftext|>, GPT-2's bos and eos when the file names none. */
#define GPT2_EOT 50256u

/* bos_token_id and eos_token_id as GPT-2's config holds them: the file's
 * ids (eos for a missing bos), else <|endoftext|>, else null. */
static void gpt2_special(const st_gguf *g, uint64_t vocab, char bos[24], char eos[24])
{
	const st_gguf_value *b = kv(g, NULL, "tokenizer.ggml.bos_token_id");
	const st_gguf_value *e = kv(g, NULL, "tokenizer.ggml.eos_token_id");
	long long first = is_uint(e) && e->v.u < vocab ? (long long)e->v.u
	                  : vocab > GPT2_EOT           ? (long long)GPT2_EOT
	                                               : -1;
	long long bid = is_uint(b) && b->v.u < vocab ? (long long)b->v.u : first;
	if (bid >= 0)
		snprintf(bos, 24, "%lld", bid);
	else
		snprintf(bos, 24, "null");
	if (first >= 0)
		snprintf(eos, 24, "%lld", first);
	else
		snprintf(eos, 24, "null");
}

static struct st__buf *buf_done(struct st__buf *b, char **json, size_t *len)
{
	if (b->failed) {
		st__buf_free(b);
		return NULL;
	}
	*json = b->data;
	*len = b->len;
	return b;
}

/*
 * Every key transformers' GPT2Config.save_pretrained writes for a
 * GPT2LMHeadModel (sorted, indent 2), plus n_ctx, as gpt2export has
 * always written it; n_inner is null unless feed_forward_length is not
 * GPT-2's 4 * n_embd.
 */
static int gpt2_config(const st_gguf *g, st_dtype dtype, char **json, size_t *len, st_error *err)
{
	uint64_t ctx, embd, layers, heads, ff, vocab;
	int rc = get_count(g, "gpt2", "context_length", 1, &ctx, err);
	if (rc == ST_OK)
		rc = get_count(g, "gpt2", "embedding_length", 1, &embd, err);
	if (rc == ST_OK)
		rc = get_count(g, "gpt2", "block_count", 1, &layers, err);
	if (rc == ST_OK)
		rc = get_count(g, "gpt2", "attention.head_count", 1, &heads, err);
	if (rc == ST_OK)
		rc = get_count(g, "gpt2", "feed_forward_length", 0, &ff, err);
	if (rc == ST_OK)
		rc = vocab_rows(g, &vocab, err);
	if (rc != ST_OK)
		return rc;
	const st_gguf_value *eps = kv(g, "gpt2", "attention.layer_norm_epsilon");
	if (!eps || (eps->type != ST_GGUF_FLOAT32 && eps->type != ST_GGUF_FLOAT64) ||
	    !isfinite(eps->v.f) || eps->v.f <= 0)
		return st__error(err, ST_EFORMAT,
		                 "%s: gpt2.attention.layer_norm_epsilon is missing or not a "
		                 "positive float",
		                 st_gguf_path(g));
	char bos[24], eos[24];
	gpt2_special(g, vocab, bos, eos);
	struct st__buf b = {0};
	/* (st__buf_printf formats at most 127 bytes a call) */
	st__buf_puts(&b, "{\n  \"activation_function\": \"gelu_new\",\n  \"architectures\": [\n"
	                 "    \"GPT2LMHeadModel\"\n  ],\n  \"attn_pdrop\": 0.1,\n");
	st__buf_printf(&b, "  \"bos_token_id\": %s,\n  \"embd_pdrop\": 0.1,\n", bos);
	st__buf_printf(&b, "  \"eos_token_id\": %s,\n  \"initializer_range\": 0.02", eos);
	put_float(&b, "  ", "layer_norm_epsilon", eps);
	st__buf_printf(&b, ",\n  \"model_type\": \"gpt2\",\n  \"n_ctx\": %llu,\n  \"n_embd\": %llu",
	               (unsigned long long)ctx, (unsigned long long)embd);
	st__buf_printf(&b, ",\n  \"n_head\": %llu", (unsigned long long)heads);
	if (ff && ff != 4 * embd)
		st__buf_printf(&b, ",\n  \"n_inner\": %llu", (unsigned long long)ff);
	else
		st__buf_puts(&b, ",\n  \"n_inner\": null");
	st__buf_printf(&b, ",\n  \"n_layer\": %llu,\n  \"n_positions\": %llu",
	               (unsigned long long)layers, (unsigned long long)ctx);
	st__buf_puts(&b, ",\n  \"reorder_and_upcast_attn\": false,\n  \"resid_pdrop\": 0.1,\n"
	                 "  \"scale_attn_by_inverse_layer_idx\": false,\n"
	                 "  \"scale_attn_weights\": true,\n  \"summary_activation\": null,\n"
	                 "  \"summary_first_dropout\": 0.1,\n"
	                 "  \"summary_proj_to_labels\": true,\n"
	                 "  \"summary_type\": \"cls_index\",\n  \"summary_use_proj\": true");
	st__buf_printf(&b, ",\n  \"torch_dtype\": \"%s\",\n  \"transformers_version\": \"%s\"",
	               torch_dtype(dtype), GPT2_TRANSFORMERS_VERSION);
	st__buf_printf(&b, ",\n  \"use_cache\": true,\n  \"vocab_size\": %llu\n}\n",
	               (unsigned long long)vocab);
	if (!buf_done(&b, json, len))
		return st__error(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

/* GenerationConfig.from_model_config's file, as save_pretrained writes it. */
static int gpt2_generation_config(const st_gguf *g, char **json, size_t *len, st_error *err)
{
	uint64_t vocab;
	int rc = vocab_rows(g, &vocab, err);
	if (rc != ST_OK)
		return rc;
	char bos[24], eos[24];
	gpt2_special(g, vocab, bos, eos);
	struct st__buf b = {0};
	st__buf_printf(&b, "{\n  \"_from_model_config\": true,\n  \"bos_token_id\": %s,\n", bos);
	st__buf_printf(&b, "  \"eos_token_id\": %s,\n  \"transformers_version\": \"%s\"\n}\n", eos,
	               GPT2_TRANSFORMERS_VERSION);
	if (!buf_done(&b, json, len))
		return st__error(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

int st_gguf_hf_config(const st_gguf *g, st_dtype dtype, char **json, size_t *len, unsigned *lost,
                      st_error *err)
{
	ST__REQUIRE(g && json && len);
	*json = NULL;
	*len = 0;
	if (lost)
		*lost = 0;
	const char *arch;
	int rc = st_gguf_hf_arch(g, &arch, err);
	if (rc != ST_OK)
		return rc;
	if (!strcmp(arch, "gpt2"))
		return gpt2_config(g, dtype, json, len, err);
	const struct hf_names *nm = &names[0];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(names[i].arch, arch))
			nm = &names[i];
	uint64_t hidden, inter, layers, heads, kv_heads, ctx, head_dim, vocab;
	const struct {
		const char *key;
		int required;
		uint64_t *out;
	} counts[] = {
		{"embedding_length", 1, &hidden},
		{"feed_forward_length", 1, &inter},
		{"block_count", 1, &layers},
		{"attention.head_count", 1, &heads},
		{"attention.head_count_kv", 0, &kv_heads},
		{"context_length", 0, &ctx},
		{"attention.key_length", 0, &head_dim},
	};
	for (size_t i = 0; rc == ST_OK && i < sizeof counts / sizeof counts[0]; i++)
		rc = get_count(g, arch, counts[i].key, counts[i].required, counts[i].out, err);
	if (rc == ST_OK)
		rc = vocab_rows(g, &vocab, err);
	if (rc != ST_OK)
		return rc;
	struct st__buf b = {0};
	st__buf_printf(&b, "{\n  \"architectures\": [\n    \"%s\"\n  ],\n  \"model_type\": \"%s\"",
	               nm->architecture, nm->model_type);
	/* Qwen2 always has q/k/v biases (its config has no such field);
	 * llama's attention_bias is whether the file carries them. */
	if (!strcmp(arch, "llama"))
		st__buf_printf(&b, ",\n  \"attention_bias\": %s",
		               has_tensor(g, "blk.0.attn_q.bias") ? "true" : "false");
	if (!strcmp(arch, "llama") && has_tensor(g, "blk.0.ffn_up.bias"))
		st__buf_printf(&b, ",\n  \"mlp_bias\": true");
	st__buf_printf(&b, ",\n  \"hidden_act\": \"silu\"");
	st__buf_printf(&b, ",\n  \"hidden_size\": %llu", (unsigned long long)hidden);
	st__buf_printf(&b, ",\n  \"intermediate_size\": %llu", (unsigned long long)inter);
	if (head_dim && !strcmp(arch, "qwen3"))
		st__buf_printf(&b, ",\n  \"head_dim\": %llu", (unsigned long long)head_dim);
	if (ctx)
		st__buf_printf(&b, ",\n  \"max_position_embeddings\": %llu",
		               (unsigned long long)ctx);
	st__buf_printf(&b, ",\n  \"num_attention_heads\": %llu", (unsigned long long)heads);
	st__buf_printf(&b, ",\n  \"num_hidden_layers\": %llu", (unsigned long long)layers);
	st__buf_printf(&b, ",\n  \"num_key_value_heads\": %llu",
	               (unsigned long long)(kv_heads ? kv_heads : heads));
	put_float(&b, "  ", "rms_norm_eps", kv(g, arch, "attention.layer_norm_rms_epsilon"));
	put_float(&b, "  ", "rope_theta", kv(g, arch, "rope.freq_base"));
	/* Linear scaling comes back whole; llama3's as four numbers that give
	 * the rope_freqs tensor's divisors (llama3_scaling). */
	const st_gguf_value *type = kv(g, arch, "rope.scaling.type");
	const st_gguf_value *factor = kv(g, arch, "rope.scaling.factor");
	if (type && type->type == ST_GGUF_STRING && type->n == 6 &&
	    !memcmp(type->v.s, "linear", 6) && factor &&
	    (factor->type == ST_GGUF_FLOAT32 || factor->type == ST_GGUF_FLOAT64)) {
		st__buf_printf(&b, ",\n  \"rope_scaling\": {\n    \"rope_type\": \"linear\"");
		put_float(&b, "    ", "factor", factor);
		st__buf_puts(&b, "\n  }");
	} else if (!llama3_scaling(g, arch, &b) && has_tensor(g, "rope_freqs.weight") && lost)
		*lost |= ST_GGUF_HF_LOST_ROPE_SCALING;
	int none = 0; /* the ids from the tokenizer's keys, as transformers keeps them */
	put_token(&b, "bos_token_id", kv(g, NULL, "tokenizer.ggml.bos_token_id"), vocab, &none);
	put_token(&b, "eos_token_id", kv(g, NULL, "tokenizer.ggml.eos_token_id"), vocab, &none);
	st__buf_printf(&b, ",\n  \"tie_word_embeddings\": %s",
	               has_tensor(g, "output.weight") ? "false" : "true");
	st__buf_printf(&b, ",\n  \"torch_dtype\": \"%s\"", torch_dtype(dtype));
	st__buf_printf(&b, ",\n  \"vocab_size\": %llu\n}\n", (unsigned long long)vocab);
	if (b.failed) {
		st__buf_free(&b);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	*json = b.data;
	*len = b.len;
	return ST_OK;
}

int st_gguf_hf_generation_config(const st_gguf *g, char **json, size_t *len, st_error *err)
{
	ST__REQUIRE(g && json && len);
	*json = NULL;
	*len = 0;
	char buf[8];
	const char *a = gguf_arch(g, buf, sizeof buf);
	if (a && !strcmp(a, "gpt2"))
		return gpt2_generation_config(g, json, len, err);
	uint64_t vocab;
	int rc = vocab_rows(g, &vocab, err);
	if (rc != ST_OK)
		return rc;
	struct st__buf b = {0};
	int first = 1;
	st__buf_puts(&b, "{");
	put_token(&b, "bos_token_id", kv(g, NULL, "tokenizer.ggml.bos_token_id"), vocab, &first);
	put_token(&b, "eos_token_id", kv(g, NULL, "tokenizer.ggml.eos_token_id"), vocab, &first);
	put_token(&b, "pad_token_id", kv(g, NULL, "tokenizer.ggml.padding_token_id"), vocab,
	          &first);
	st__buf_puts(&b, first ? "}\n" : "\n}\n");
	if (b.failed) {
		st__buf_free(&b);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	*json = b.data;
	*len = b.len;
	return ST_OK;
}
