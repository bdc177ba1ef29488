/*
 * llama_config.c - the Llama family's config.json: the sizes through
 * libst's architecture table (st_arch_config_parse), then the
 * hyperparameters the forward pass needs (RMSNorm epsilon, rotary base
 * and scaling, sliding window, end-of-text ids), and the refusal of every
 * feature it does not implement, naming the key.
 */
#include "fe/json.h"
#include "gpt2/internal.h"
#include "gpt2/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep the forward pass's int arithmetic far from overflow. */
#define MAX_VOCAB (1 << 24)
#define MAX_WIDTH (1 << 17)
/* With MAX_HEADS: positions x heads attention tasks stay in an int. */
#define MAX_POSITIONS (1 << 20)
#define MAX_HEADS 1024

static const char *const TYPES[] = {"llama", "mistral", "qwen2", "qwen3"};

/* A number member: 1 when absent or null (*out = dflt), 0, or -1. */
static int get_number(const json_node *root, const char *key, double dflt, double *out,
                      const char *name, char *err, size_t errlen)
{
	const json_node *v = json_get(root, key);
	*out = dflt;
	if (!v || json_is_null(v))
		return 1;
	if (!json_is_number(v))
		return gpt2_err(err, errlen, "%s: \"%s\" must be a number", name, key);
	*out = json_number(v);
	return 0;
}

/* A number that must be > 0 and finite; absent, dflt (NAN: required). */
static int get_positive(const json_node *root, const char *key, double dflt, double *out,
                        const char *name, char *err, size_t errlen)
{
	int rc = get_number(root, key, dflt, out, name, err, errlen);
	if (rc < 0)
		return -1;
	if (rc == 1 && !isnan(dflt))
		return 0;
	if (!(*out > 0) || isinf(*out))
		return gpt2_err(err, errlen,
		                "%s: \"%s\" is %.17g, expected a "
		                "positive number",
		                name, key, *out);
	return 0;
}

/* rope_scaling: null, {"rope_type"|"type": "linear"|"llama3", ...}. */
static int parse_rope_scaling(llama_config *cfg, const json_node *root, const char *name, char *err,
                              size_t errlen)
{
	const json_node *rs = json_get(root, "rope_scaling");
	cfg->rope = LLAMA_ROPE_DEFAULT;
	cfg->rope_factor = 1.0;
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs))
		return gpt2_err(err, errlen,
		                "%s: \"rope_scaling\" must be an "
		                "object or null",
		                name);
	const char *type = json_string(json_get(rs, "rope_type"));
	if (!type)
		type = json_string(json_get(rs, "type"));
	if (!type)
		return gpt2_err(err, errlen,
		                "%s: \"rope_scaling\" has no "
		                "\"rope_type\"",
		                name);
	if (strcmp(type, "default") == 0)
		return 0;
	if (strcmp(type, "linear") != 0 && strcmp(type, "llama3") != 0) {
		char t[64];
		gpt2_printable(t, sizeof t, type, strlen(type));
		return gpt2_err(err, errlen,
		                "%s: \"rope_scaling\": rope_type "
		                "\"%s\" is not implemented (linear and llama3 are)",
		                name, t);
	}
	if (get_positive(rs, "factor", NAN, &cfg->rope_factor, name, err, errlen))
		return gpt2_err(err, errlen,
		                "%s: \"rope_scaling\" needs a "
		                "positive \"factor\"",
		                name);
	cfg->rope = LLAMA_ROPE_LINEAR;
	if (strcmp(type, "llama3") != 0)
		return 0;
	cfg->rope = LLAMA_ROPE_LLAMA3;
	if (get_positive(rs, "low_freq_factor", NAN, &cfg->low_freq_factor, name, err, errlen) ||
	    get_positive(rs, "high_freq_factor", NAN, &cfg->high_freq_factor, name, err, errlen) ||
	    get_positive(rs, "original_max_position_embeddings", NAN, &cfg->rope_orig_ctx, name,
	                 err, errlen))
		return gpt2_err(err, errlen,
		                "%s: \"rope_scaling\" of type llama3 "
		                "needs positive low_freq_factor, high_freq_factor "
		                "and original_max_position_embeddings",
		                name);
	if (!(cfg->high_freq_factor > cfg->low_freq_factor))
		return gpt2_err(err, errlen,
		                "%s: \"rope_scaling\": "
		                "high_freq_factor must exceed low_freq_factor",
		                name);
	return 0;
}

/* The keys of features this forward pass does not implement. */
static int refuse_features(const llama_config *cfg, const json_node *root, const char *name,
                           char *err, size_t errlen)
{
	static const char *const moe[] = {"num_experts", "num_local_experts", "n_routed_experts"};
	for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++) {
		const json_node *v = json_get(root, moe[i]);
		if (v && !json_is_null(v) && !(json_is_number(v) && json_number(v) <= 1))
			return gpt2_err(err, errlen,
			                "%s: \"%s\": mixture-of-experts "
			                "models are not implemented",
			                name, moe[i]);
	}
	const char *act = json_string(json_get(root, "hidden_act"));
	if (json_get(root, "hidden_act") && (!act || strcmp(act, "silu") != 0))
		return gpt2_err(err, errlen,
		                "%s: \"hidden_act\" must be \"silu\" "
		                "(the SwiGLU MLP)",
		                name);
	double prf;
	if (get_number(root, "partial_rotary_factor", 1.0, &prf, name, err, errlen) < 0)
		return -1;
	if (prf != 1.0)
		return gpt2_err(err, errlen,
		                "%s: \"partial_rotary_factor\" %g is "
		                "not implemented (only 1)",
		                name, prf);
	const json_node *usw = json_get(root, "use_sliding_window");
	if (strcmp(cfg->model_type, "mistral") != 0 && usw && json_is_true(usw))
		return gpt2_err(err, errlen,
		                "%s: \"use_sliding_window\" true is "
		                "not implemented for %s",
		                name, cfg->model_type);
	return 0;
}

/* The sizes from libst's table, as ints the forward pass can use. */
static int take_sizes(llama_config *cfg, const char *name, char *err, size_t errlen)
{
	const st_arch_config *a = &cfg->arch;
	if (a->vocab > MAX_VOCAB || a->hidden > MAX_WIDTH || a->intermediate > MAX_WIDTH ||
	    a->heads > MAX_HEADS || a->head_dim > MAX_WIDTH || a->heads * a->head_dim > MAX_WIDTH)
		return gpt2_err(err, errlen,
		                "%s: sizes beyond this runner's "
		                "bounds (vocab %d, widths %d, heads %d)",
		                name, MAX_VOCAB, MAX_WIDTH, MAX_HEADS);
	if (a->head_dim % 2)
		return gpt2_err(err, errlen,
		                "%s: head_dim %llu is odd: rotary "
		                "embeddings rotate pairs",
		                name, (unsigned long long)a->head_dim);
	cfg->vocab_size = (int)a->vocab;
	cfg->hidden = (int)a->hidden;
	cfg->layers = (int)a->layers;
	cfg->heads = (int)a->heads;
	cfg->kv_heads = (int)a->kv_heads;
	cfg->head_dim = (int)a->head_dim;
	cfg->intermediate = (int)a->intermediate;
	return 0;
}

/* model_type, which must be one of TYPES; 0 or -1. */
static int take_type(llama_config *cfg, const json_node *root, const char *name, char *err,
                     size_t errlen)
{
	const char *type = json_string(json_get(root, "model_type"));
	if (!type) {
		/* architectures[0] said it: LlamaForCausalLM -> llama, ... */
		static const char *const archs[] = {"LlamaForCausalLM", "MistralForCausalLM",
		                                    "Qwen2ForCausalLM", "Qwen3ForCausalLM"};
		for (size_t i = 0; i < 4; i++)
			if (strcmp(cfg->arch.arch, archs[i]) == 0)
				type = TYPES[i];
	}
	for (size_t i = 0; type && i < 4; i++)
		if (strcmp(type, TYPES[i]) == 0) {
			snprintf(cfg->model_type, sizeof cfg->model_type, "%s", type);
			return 0;
		}
	char t[64];
	gpt2_printable(t, sizeof t, type ? type : "(none)", strlen(type ? type : "(none)"));
	return gpt2_err(err, errlen,
	                "%s: model_type \"%s\" is not one of the "
	                "Llama family (llama, mistral, qwen2, qwen3)",
	                name, t);
}

static int parse_numbers(llama_config *cfg, const json_node *root, const char *name, char *err,
                         size_t errlen)
{
	double eps, pos, window;
	if (get_positive(root, "rms_norm_eps", 1e-6, &eps, name, err, errlen) ||
	    get_positive(root, "rope_theta", 10000.0, &cfg->rope_theta, name, err, errlen) ||
	    get_positive(root, "max_position_embeddings", 2048, &pos, name, err, errlen))
		return -1;
	if (eps > 1 || pos != floor(pos))
		return gpt2_err(err, errlen,
		                "%s: rms_norm_eps %g or "
		                "max_position_embeddings %.17g out of range",
		                name, eps, pos);
	cfg->rms_eps = (float)eps;
	/* A longer context than this runner holds: it runs the first 2^20. */
	cfg->max_seq_len = pos > MAX_POSITIONS ? MAX_POSITIONS : (int)pos;
	cfg->sliding_window = 0;
	if (strcmp(cfg->model_type, "mistral") == 0) {
		int rc = get_number(root, "sliding_window", 0, &window, name, err, errlen);
		if (rc < 0)
			return -1;
		if (rc == 0 && (window != floor(window) || window < 1))
			return gpt2_err(err, errlen,
			                "%s: \"sliding_window\" is %.17g, "
			                "expected a positive integer or null",
			                name, window);
		if (rc == 0 && window < cfg->max_seq_len)
			cfg->sliding_window = (int)window;
	}
	const json_node *bos = json_get(root, "bos_token_id");
	cfg->has_bos = bos && json_is_number(bos) && json_number(bos) >= 0 &&
	               json_number(bos) < cfg->vocab_size &&
	               json_number(bos) == floor(json_number(bos));
	cfg->bos = cfg->has_bos ? (int)json_number(bos) : -1;
	return 0;
}

int llama_config_parse(llama_config *cfg, const char *json, size_t len, const char *name, char *err,
                       size_t errlen)
{
	memset(cfg, 0, sizeof *cfg);
	st_error e;
	int src = st_arch_config_parse(&cfg->arch, json, len, name, &e);
	if (src != ST_OK) {
		/* The message may quote the file's bytes: one printable line. */
		for (char *p = e.message; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		return gpt2_err(err, errlen, "%s", e.message);
	}
	if (cfg->arch.family != ST_ARCH_LLAMA)
		return gpt2_err(err, errlen, "%s: %s is not of the Llama family", name,
		                cfg->arch.arch);
	json_node *root = gpt2_json_object(json, len, name, err, errlen);
	if (!root)
		return -1;
	gpt2_config eos = {0};
	int rc = -1;
	if (take_type(cfg, root, name, err, errlen) || take_sizes(cfg, name, err, errlen) ||
	    refuse_features(cfg, root, name, err, errlen) ||
	    parse_rope_scaling(cfg, root, name, err, errlen) ||
	    parse_numbers(cfg, root, name, err, errlen) ||
	    gpt2_json_eos(json_get(root, "eos_token_id"), &eos, name, err, errlen))
		goto out;
	cfg->n_eos = eos.n_eos;
	memcpy(cfg->eos, eos.eos, sizeof cfg->eos);
	rc = 0;
out:
	json_free(root);
	return rc;
}

int llama_config_is_llama(const char *json, size_t len)
{
	st_arch_config a;
	return st_arch_config_parse(&a, json, len, "config.json", NULL) == ST_OK &&
	       a.family == ST_ARCH_LLAMA;
}

void llama_rope_inv_freq(const llama_config *cfg, float *inv_freq)
{
	int half = cfg->head_dim / 2;
	const double pi = 3.14159265358979323846;
	for (int i = 0; i < half; i++) {
		/* 1 / base ** (arange(0, dim, 2).float() / dim), in F32 */
		float expo = (float)(2 * i) / (float)cfg->head_dim;
		float f = 1.0f / powf((float)cfg->rope_theta, expo);
		if (cfg->rope == LLAMA_ROPE_LINEAR) {
			f = f / (float)cfg->rope_factor;
		} else if (cfg->rope == LLAMA_ROPE_LLAMA3) {
			float factor = (float)cfg->rope_factor;
			float lo = (float)cfg->low_freq_factor;
			float hi = (float)cfg->high_freq_factor;
			float old = (float)cfg->rope_orig_ctx;
			float lo_wavelen = old / lo, hi_wavelen = old / hi;
			float wavelen = 2.0f * (float)pi / f;
			if (wavelen > lo_wavelen) {
				f = f / factor;
			} else if (!(wavelen < hi_wavelen)) {
				float smooth = (old / wavelen - lo) / (hi - lo);
				f = (1.0f - smooth) * f / factor + smooth * f;
			}
		}
		inv_freq[i] = f;
	}
}
