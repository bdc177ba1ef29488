/*
 * gpt2.c - GPT-2's config, the Hugging Face name table, and the loader
 * that fills a model from a snapshot through libst.
 *
 * This file decides what a snapshot must hold and refuses everything else;
 * it does no arithmetic beyond dtype conversion. The forward pass is in
 * gpt2_forward.c, the sampler in gpt2_sample.c, the tokenizer in
 * tokenizer.c.
 */
#include "gpt2/gpt2.h"
#include "gpt2/internal.h"

#include <cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- helpers shared by tools/gpt2 (internal.h) --------------------------- */

int gpt2_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int gpt2_join(char *out, size_t size, const char *dir, const char *file,
              char *err, size_t errlen)
{
	size_t n = strlen(dir);
	int k = snprintf(out, size, "%s%s%s", dir,
	                 n && dir[n - 1] == '/' ? "" : "/", file);
	if (k < 0 || (size_t)k >= size)
		return gpt2_err(err, errlen, "%s/%s: path too long", dir, file);
	return 0;
}

/* ---- config ------------------------------------------------------------ */

/* Text from a file made printable and short for a message (below). */
static void printable(char *out, size_t size, const char *s, size_t len);

/* Generous bounds that keep every size computation far from overflow. */
#define MAX_VOCAB (1 << 24)
#define MAX_POSITIONS (1 << 20)
#define MAX_CHANNELS (1 << 16)
#define MAX_LAYERS 4096
#define MAX_HEADS 1024 /* keeps tokens x heads attention tasks in an int */

static int json_int(const cJSON *root, const char *key, int required,
                    int lo, int hi, int *out, const char *name, char *err,
                    size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return gpt2_err(err, errlen, "%s: \"%s\" is missing",
			                name, key);
		return 1;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return gpt2_err(err, errlen, "%s: \"%s\" must be an integer",
		                name, key);
	if (v->valuedouble < lo || v->valuedouble > hi)
		return gpt2_err(err, errlen,
		                "%s: \"%s\" is %.17g, expected %d to %d", name,
		                key, v->valuedouble, lo, hi);
	*out = (int)v->valuedouble;
	return 0;
}

/* A boolean option: absent or null keeps dflt; else it must be a bool. */
static int json_bool(const cJSON *root, const char *key, int dflt, int *out,
                     const char *name, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	*out = dflt;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return gpt2_err(err, errlen, "%s: \"%s\" must be true or false",
		                name, key);
	*out = cJSON_IsTrue(v);
	return 0;
}

/* eos_token_id: an integer, a list of integers, or null (none). */
static int json_eos(const cJSON *v, gpt2_config *cfg, const char *name,
                    char *err, size_t errlen)
{
	cfg->n_eos = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble != floor(v->valuedouble) ||
		    v->valuedouble < 0 || v->valuedouble > INT_MAX)
			return gpt2_err(err, errlen,
			                "%s: \"eos_token_id\" must be a token id",
			                name);
		cfg->eos[cfg->n_eos++] = (int)v->valuedouble;
		return 0;
	}
	if (!cJSON_IsArray(v))
		return gpt2_err(err, errlen,
		                "%s: \"eos_token_id\" must be an integer or a list",
		                name);
	const cJSON *e;
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) ||
		    e->valuedouble < 0 || e->valuedouble > INT_MAX)
			return gpt2_err(err, errlen,
			                "%s: \"eos_token_id\" must hold token ids",
			                name);
		if (cfg->n_eos == GPT2_MAX_EOS)
			return gpt2_err(err, errlen,
			                "%s: \"eos_token_id\" lists more than %d ids",
			                name, GPT2_MAX_EOS);
		cfg->eos[cfg->n_eos++] = (int)e->valuedouble;
	}
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static cJSON *parse_json(const char *json, size_t len, const char *name,
                         char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
	if (!root) {
		size_t at = end && end >= json ? (size_t)(end - json) : 0;
		gpt2_err(err, errlen, "%s: not valid JSON (near byte %zu)", name, at);
		return NULL;
	}
	/* One value, as Python's json.load reads it: nothing after it. */
	size_t at = (size_t)(end - json);
	while (at < len && (json[at] == ' ' || json[at] == '\t' ||
	                    json[at] == '\n' || json[at] == '\r'))
		at++;
	if (at < len) {
		cJSON_Delete(root);
		gpt2_err(err, errlen, "%s: not valid JSON (extra data at byte %zu)",
		         name, at);
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		gpt2_err(err, errlen, "%s: not a JSON object", name);
		return NULL;
	}
	/*
	 * Python's json keeps the last of duplicate keys and cJSON finds the
	 * first: refuse them, so that transformers and this code never read
	 * two different configs from one file. The keys are sorted to find
	 * them: comparing every pair took minutes for a file of a million.
	 */
	size_t n = 0;
	for (const cJSON *a = root->child; a; a = a->next)
		n++;
	const char **keys = malloc((n ? n : 1) * sizeof *keys);
	if (!keys) {
		cJSON_Delete(root);
		gpt2_err(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	n = 0;
	for (const cJSON *a = root->child; a; a = a->next)
		if (a->string)
			keys[n++] = a->string;
	qsort(keys, n, sizeof *keys, key_cmp);
	for (size_t i = 1; i < n; i++)
		if (strcmp(keys[i - 1], keys[i]) == 0) {
			char key[80];
			printable(key, sizeof key, keys[i], strlen(keys[i]));
			gpt2_err(err, errlen, "%s: key \"%s\" appears twice", name, key);
			free(keys);
			cJSON_Delete(root);
			return NULL;
		}
	free(keys);
	return root;
}

int gpt2_config_check(const gpt2_config *c, char *err, size_t errlen)
{
	if (c->vocab_size < 1 || c->vocab_size > MAX_VOCAB)
		return gpt2_err(err, errlen, "vocab_size %d is outside 1..%d",
		                c->vocab_size, MAX_VOCAB);
	if (c->max_seq_len < 1 || c->max_seq_len > MAX_POSITIONS)
		return gpt2_err(err, errlen, "n_positions %d is outside 1..%d",
		                c->max_seq_len, MAX_POSITIONS);
	if (c->channels < 1 || c->channels > MAX_CHANNELS)
		return gpt2_err(err, errlen, "n_embd %d is outside 1..%d",
		                c->channels, MAX_CHANNELS);
	if (c->num_layers < 1 || c->num_layers > MAX_LAYERS)
		return gpt2_err(err, errlen, "n_layer %d is outside 1..%d",
		                c->num_layers, MAX_LAYERS);
	if (c->num_heads < 1 || c->num_heads > MAX_HEADS)
		return gpt2_err(err, errlen, "n_head %d is outside 1..%d",
		                c->num_heads, MAX_HEADS);
	if (c->channels % c->num_heads != 0)
		return gpt2_err(err, errlen,
		                "n_head %d does not divide n_embd %d",
		                c->num_heads, c->channels);
	if (!(c->layer_norm_eps > 0) || !isfinite(c->layer_norm_eps))
		return gpt2_err(err, errlen,
		                "layer_norm_epsilon %g must be positive",
		                (double)c->layer_norm_eps);
	return 0;
}

int gpt2_config_parse(gpt2_config *cfg, const char *json, size_t len,
                      const char *name, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof *cfg);
	cJSON *root = parse_json(json, len, name, err, errlen);
	if (!root)
		return -1;
	int rc = -1;

	/* What kind of model this is; only GPT-2's own block is implemented. */
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
	if (!cJSON_IsString(mt)) {
		gpt2_err(err, errlen, "%s: \"model_type\" is %s, expected \"gpt2\"",
		         name, mt ? "not a string" : "missing");
		goto out;
	}
	char text[80];
	if (strcmp(mt->valuestring, "gpt2") != 0) {
		printable(text, sizeof text, mt->valuestring, strlen(mt->valuestring));
		gpt2_err(err, errlen,
		         "%s: model_type \"%s\" is not supported (expected \"gpt2\")",
		         name, text);
		goto out;
	}

	/* The sizes. */
	if (json_int(root, "vocab_size", 1, 1, MAX_VOCAB, &cfg->vocab_size,
	             name, err, errlen) ||
	    json_int(root, "n_positions", 1, 1, MAX_POSITIONS,
	             &cfg->max_seq_len, name, err, errlen) ||
	    json_int(root, "n_embd", 1, 1, MAX_CHANNELS, &cfg->channels, name,
	             err, errlen) ||
	    json_int(root, "n_layer", 1, 1, MAX_LAYERS, &cfg->num_layers, name,
	             err, errlen) ||
	    json_int(root, "n_head", 1, 1, MAX_HEADS, &cfg->num_heads, name,
	             err, errlen))
		goto out;
	if (cfg->channels % cfg->num_heads != 0) {
		gpt2_err(err, errlen, "%s: n_head %d does not divide n_embd %d",
		         name, cfg->num_heads, cfg->channels);
		goto out;
	}
	cfg->layer_norm_eps = 1e-5f;
	const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root,
	                                                    "layer_norm_epsilon");
	if (eps && !cJSON_IsNull(eps)) {
		if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) ||
		    !isfinite(eps->valuedouble)) {
			gpt2_err(err, errlen,
			         "%s: \"layer_norm_epsilon\" must be a positive number",
			         name);
			goto out;
		}
		/* It is held as a float: 1e210 would become infinite, 1e-300
		 * zero, and gpt2_config_check refuse what parsed. */
		if (eps->valuedouble > FLT_MAX || (float)eps->valuedouble == 0) {
			gpt2_err(err, errlen,
			         "%s: \"layer_norm_epsilon\" is %g, outside the range "
			         "of a float", name, eps->valuedouble);
			goto out;
		}
		cfg->layer_norm_eps = (float)eps->valuedouble;
	}

	/*
	 * The variants of the block. gelu_pytorch_tanh is the same function
	 * as gelu_new (both the tanh approximation), so both are accepted.
	 */
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(root,
	                                                    "activation_function");
	if (act && !cJSON_IsNull(act)) {
		if (!cJSON_IsString(act)) {
			gpt2_err(err, errlen,
			         "%s: \"activation_function\" must be a string", name);
			goto out;
		}
		if (strcmp(act->valuestring, "gelu_new") != 0 &&
		    strcmp(act->valuestring, "gelu_pytorch_tanh") != 0) {
			printable(text, sizeof text, act->valuestring,
			          strlen(act->valuestring));
			gpt2_err(err, errlen,
			         "%s: activation_function \"%s\" is not implemented "
			         "(only gelu_new)", name, text);
			goto out;
		}
	}
	int n_inner = 0;
	int r = json_int(root, "n_inner", 0, 1, INT_MAX, &n_inner, name, err,
	                 errlen);
	if (r < 0)
		goto out;
	if (r == 0 && (long)n_inner != 4L * cfg->channels) {
		gpt2_err(err, errlen,
		         "%s: n_inner %d is not implemented (only null or 4 * n_embd = %ld)",
		         name, n_inner, 4L * cfg->channels);
		goto out;
	}
	static const struct {
		const char *key;
		int dflt, supported;
		const char *why;
	} flags[] = {
		{"scale_attn_weights", 1, 1, "unscaled attention"},
		{"scale_attn_by_inverse_layer_idx", 0, 0,
		 "attention scaled by the inverse layer index"},
		{"reorder_and_upcast_attn", 0, 0, "reordered, upcast attention"},
		{"add_cross_attention", 0, 0, "cross-attention"},
		{"tie_word_embeddings", 1, 1,
		 "an output head untied from wte"},
	};
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		int v;
		if (json_bool(root, flags[i].key, flags[i].dflt, &v, name, err,
		              errlen))
			goto out;
		if (v != flags[i].supported) {
			gpt2_err(err, errlen, "%s: %s %s is not implemented (%s)",
			         name, flags[i].key, v ? "true" : "false",
			         flags[i].why);
			goto out;
		}
	}
	if (json_eos(cJSON_GetObjectItemCaseSensitive(root, "eos_token_id"),
	             cfg, name, err, errlen))
		goto out;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int gpt2_dtype_parse(const char *name)
{
	static const struct { const char *short_name, *torch_name; st_dtype t; }
	names[] = {
		{"f32", "float32", ST_DTYPE_F32},
		{"bf16", "bfloat16", ST_DTYPE_BF16},
		{"f16", "float16", ST_DTYPE_F16},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcasecmp(name, names[i].short_name) == 0 ||
		    strcasecmp(name, names[i].torch_name) == 0)
			return (int)names[i].t;
	return -1;
}

/* Read a whole small file; *buf is malloc'd. 0, 1 (absent) or -1. */
static int read_small_file(const char *path, char **buf, size_t *len,
                           int optional, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		if (optional && errno == ENOENT)
			return 1;
		return gpt2_err(err, errlen, "%s: %s", path, strerror(errno));
	}
	size_t cap = 4096, n = 0;
	char *p = malloc(cap);
	while (p) {
		size_t got = fread(p + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
		if (n == cap) {
			if (cap >= (16u << 20)) {
				free(p);
				fclose(f);
				return gpt2_err(err, errlen,
				                "%s: larger than 16 MiB, not a config file",
				                path);
			}
			char *q = realloc(p, cap * 2);
			if (!q) {
				free(p);
				p = NULL;
				break;
			}
			p = q;
			cap *= 2;
		}
	}
	int failed = ferror(f);
	fclose(f);
	if (!p)
		return gpt2_err(err, errlen, "%s: out of memory", path);
	if (failed) {
		free(p);
		return gpt2_err(err, errlen, "%s: read error", path);
	}
	*buf = p;
	*len = n;
	return 0;
}

int gpt2_config_load(gpt2_config *cfg, const char *dir, char *err,
                     size_t errlen)
{
	char path[4096];
	char *buf;
	size_t len;
	if (gpt2_join(path, sizeof path, dir, "config.json", err, errlen) ||
	    read_small_file(path, &buf, &len, 0, err, errlen))
		return -1;
	int rc = gpt2_config_parse(cfg, buf, len, path, err, errlen);
	free(buf);
	if (rc)
		return -1;

	/* generation_config.json, when present, says where text ends. */
	if (gpt2_join(path, sizeof path, dir, "generation_config.json", err,
	              errlen))
		return -1;
	rc = read_small_file(path, &buf, &len, 1, err, errlen);
	if (rc < 0)
		return -1;
	if (rc == 1)
		return 0;
	cJSON *root = parse_json(buf, len, path, err, errlen);
	free(buf);
	if (!root)
		return -1;
	const cJSON *eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
	rc = 0;
	if (eos)
		rc = json_eos(eos, cfg, path, err, errlen);
	cJSON_Delete(root);
	return rc;
}

/* ---- the name table ---------------------------------------------------- */

/*
 * The one table mapping Hugging Face names onto slots, in llm.c's
 * parameter order (train_gpt2.py's from_pretrained lists the same names
 * and transposes the same four Conv1D weights).
 */
static const gpt2_param_info param_table[GPT2_NUM_SLOTS] = {
	[GPT2_WTE] = {"wte.weight", 0, 0, 1, 2, {GPT2_DIM_V, GPT2_DIM_C}},
	[GPT2_WPE] = {"wpe.weight", 0, 0, 1, 2, {GPT2_DIM_P, GPT2_DIM_C}},
	[GPT2_LN1W] = {"ln_1.weight", 1, 0, 0, 1, {GPT2_DIM_C, 0}},
	[GPT2_LN1B] = {"ln_1.bias", 1, 0, 0, 1, {GPT2_DIM_C, 0}},
	[GPT2_QKVW] = {"attn.c_attn.weight", 1, 1, 1, 2, {GPT2_DIM_C, GPT2_DIM_3C}},
	[GPT2_QKVB] = {"attn.c_attn.bias", 1, 0, 0, 1, {GPT2_DIM_3C, 0}},
	[GPT2_ATTPROJW] = {"attn.c_proj.weight", 1, 1, 1, 2, {GPT2_DIM_C, GPT2_DIM_C}},
	[GPT2_ATTPROJB] = {"attn.c_proj.bias", 1, 0, 0, 1, {GPT2_DIM_C, 0}},
	[GPT2_LN2W] = {"ln_2.weight", 1, 0, 0, 1, {GPT2_DIM_C, 0}},
	[GPT2_LN2B] = {"ln_2.bias", 1, 0, 0, 1, {GPT2_DIM_C, 0}},
	[GPT2_FCW] = {"mlp.c_fc.weight", 1, 1, 1, 2, {GPT2_DIM_C, GPT2_DIM_4C}},
	[GPT2_FCB] = {"mlp.c_fc.bias", 1, 0, 0, 1, {GPT2_DIM_4C, 0}},
	[GPT2_FCPROJW] = {"mlp.c_proj.weight", 1, 1, 1, 2, {GPT2_DIM_4C, GPT2_DIM_C}},
	[GPT2_FCPROJB] = {"mlp.c_proj.bias", 1, 0, 0, 1, {GPT2_DIM_C, 0}},
	[GPT2_LNFW] = {"ln_f.weight", 0, 0, 0, 1, {GPT2_DIM_C, 0}},
	[GPT2_LNFB] = {"ln_f.bias", 0, 0, 0, 1, {GPT2_DIM_C, 0}},
};

const gpt2_param_info *gpt2_param(int slot)
{
	return slot >= 0 && slot < GPT2_NUM_SLOTS ? &param_table[slot] : NULL;
}

static uint64_t dim_value(const gpt2_config *cfg, enum gpt2_dim d)
{
	switch (d) {
	case GPT2_DIM_V: return (uint64_t)cfg->vocab_size;
	case GPT2_DIM_P: return (uint64_t)cfg->max_seq_len;
	case GPT2_DIM_C: return (uint64_t)cfg->channels;
	case GPT2_DIM_3C: return 3 * (uint64_t)cfg->channels;
	case GPT2_DIM_4C: return 4 * (uint64_t)cfg->channels;
	}
	return 0;
}

int gpt2_param_shape(const gpt2_config *cfg, int slot, uint64_t shape[2])
{
	const gpt2_param_info *p = &param_table[slot];
	for (int d = 0; d < p->ndim; d++)
		shape[d] = dim_value(cfg, p->dims[d]);
	return p->ndim;
}

uint64_t gpt2_param_numel(const gpt2_config *cfg, int slot)
{
	uint64_t shape[2];
	int nd = gpt2_param_shape(cfg, slot, shape);
	return nd == 1 ? shape[0] : shape[0] * shape[1];
}

int gpt2_param_layers(const gpt2_config *cfg, int slot)
{
	return param_table[slot].per_layer ? cfg->num_layers : 1;
}

size_t gpt2_param_name(int slot, int layer, char *buf, size_t size)
{
	const gpt2_param_info *p = &param_table[slot];
	int n = p->per_layer ? snprintf(buf, size, "h.%d.%s", layer, p->hf_name)
	                     : snprintf(buf, size, "%s", p->hf_name);
	return n < 0 ? 0 : (size_t)n;
}

static int has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && memcmp(s, prefix, n) == 0;
}

static int equals(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(s, word, len) == 0;
}

enum gpt2_name_kind gpt2_name_lookup(const gpt2_config *cfg, const char *name,
                                     size_t len, int *slot, int *layer)
{
	if (equals(name, len, "lm_head.weight"))
		return GPT2_NAME_LM_HEAD;
	/* GPT2LMHeadModel saves the body under "transformer."; GPT2Model not. */
	if (has_prefix(name, len, "transformer.")) {
		name += 12;
		len -= 12;
	}
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		if (!param_table[s].per_layer && equals(name, len,
		                                        param_table[s].hf_name)) {
			*slot = s;
			*layer = 0;
			return GPT2_NAME_PARAM;
		}
	}
	if (!has_prefix(name, len, "h."))
		return GPT2_NAME_UNKNOWN;
	size_t i = 2;
	long n = 0;
	/* Canonical decimal only: "h.01.x" would be a second name for h.1. */
	if (i >= len || name[i] < '0' || name[i] > '9')
		return GPT2_NAME_UNKNOWN;
	if (name[i] == '0' && i + 1 < len && name[i + 1] != '.')
		return GPT2_NAME_UNKNOWN;
	while (i < len && name[i] >= '0' && name[i] <= '9') {
		n = n * 10 + (name[i] - '0');
		if (n >= cfg->num_layers)
			return GPT2_NAME_UNKNOWN;
		i++;
	}
	if (i >= len || name[i] != '.')
		return GPT2_NAME_UNKNOWN;
	const char *rest = name + i + 1;
	size_t rlen = len - i - 1;
	*layer = (int)n;
	/* The causal-mask buffers old transformers versions saved. */
	if (equals(rest, rlen, "attn.bias") ||
	    equals(rest, rlen, "attn.masked_bias"))
		return GPT2_NAME_BUFFER;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		if (param_table[s].per_layer &&
		    equals(rest, rlen, param_table[s].hf_name)) {
			*slot = s;
			return GPT2_NAME_PARAM;
		}
	}
	return GPT2_NAME_UNKNOWN;
}

/* ---- the model ----------------------------------------------------------- */

static size_t dtype_size(st_dtype t)
{
	return st_dtype_bits(t) / 8;
}

int gpt2_model_new(gpt2_model **out, const gpt2_config *cfg, st_dtype wdtype,
                   char *err, size_t errlen)
{
	*out = NULL;
	if (gpt2_config_check(cfg, err, errlen))
		return -1;
	if (wdtype != ST_DTYPE_F32 && wdtype != ST_DTYPE_F16 &&
	    wdtype != ST_DTYPE_BF16)
		return gpt2_err(err, errlen,
		                "weights can be held as F32, F16 or BF16, not %s",
		                st_dtype_name(wdtype));
	gpt2_model *m = calloc(1, sizeof *m);
	if (!m)
		return gpt2_err(err, errlen, "out of memory");
	m->config = *cfg;
	m->wdtype = wdtype;
	m->round_vectors = 1;
	int L = cfg->num_layers;

	/* One allocation carved into the slots, each 64-byte aligned. */
	size_t offsets[GPT2_NUM_SLOTS], total = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		const gpt2_param_info *p = &param_table[s];
		uint64_t numel = gpt2_param_numel(cfg, s) *
		                 (uint64_t)gpt2_param_layers(cfg, s);
		size_t es = p->matrix ? dtype_size(wdtype) : sizeof(float);
		uint64_t bytes;
		if (__builtin_mul_overflow(numel, (uint64_t)es, &bytes) ||
		    bytes > SIZE_MAX / 2 || total > SIZE_MAX / 2) {
			free(m);
			return gpt2_err(err, errlen, "the model is too large");
		}
		offsets[s] = total;
		total += ((size_t)bytes + 63) & ~(size_t)63;
		m->num_parameters += numel;
	}
	m->params_memory = aligned_alloc(64, total ? total : 64);
	m->filled = calloc((size_t)GPT2_NUM_SLOTS * (size_t)L, 1);
	if (!m->params_memory || !m->filled) {
		gpt2_model_free(m);
		return gpt2_err(err, errlen,
		                "out of memory (the parameters need %zu bytes)", total);
	}
	memset(m->params_memory, 0, total);
	m->params_bytes = total;
	char *base = m->params_memory;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++)
		m->slot[s] = base + offsets[s];
	gpt2_params *P = &m->params;
	P->wte = m->slot[GPT2_WTE];
	P->wpe = m->slot[GPT2_WPE];
	P->ln1w = m->slot[GPT2_LN1W];
	P->ln1b = m->slot[GPT2_LN1B];
	P->qkvw = m->slot[GPT2_QKVW];
	P->qkvb = m->slot[GPT2_QKVB];
	P->attprojw = m->slot[GPT2_ATTPROJW];
	P->attprojb = m->slot[GPT2_ATTPROJB];
	P->ln2w = m->slot[GPT2_LN2W];
	P->ln2b = m->slot[GPT2_LN2B];
	P->fcw = m->slot[GPT2_FCW];
	P->fcb = m->slot[GPT2_FCB];
	P->fcprojw = m->slot[GPT2_FCPROJW];
	P->fcprojb = m->slot[GPT2_FCPROJB];
	P->lnfw = m->slot[GPT2_LNFW];
	P->lnfb = m->slot[GPT2_LNFB];
	*out = m;
	return 0;
}

void *gpt2_model_param(gpt2_model *m, int slot, int layer, st_dtype *dtype)
{
	const gpt2_param_info *p = &param_table[slot];
	st_dtype t = p->matrix ? m->wdtype : ST_DTYPE_F32;
	if (dtype)
		*dtype = t;
	size_t off = p->per_layer
	                     ? (size_t)layer * (size_t)gpt2_param_numel(&m->config, slot)
	                     : 0;
	return (char *)m->slot[slot] + off * dtype_size(t);
}

/* Round F32 values to what dtype t holds, in place (t = F32: unchanged). */
static void round_to(st_dtype t, float *x, size_t n)
{
	if (t == ST_DTYPE_BF16) {
		for (size_t i = 0; i < n; i++)
			x[i] = st_bf16_to_f32(st_f32_to_bf16(x[i]));
	} else if (t == ST_DTYPE_F16) {
		for (size_t i = 0; i < n; i++)
			x[i] = st_f16_to_f32(st_f32_to_f16(x[i]));
	}
}

int gpt2_model_fill(gpt2_model *m, int slot, int layer, st_dtype src_type,
                    const void *src, int transposed, char *err,
                    size_t errlen)
{
	const gpt2_param_info *p = &param_table[slot];
	if (!st_dtype_is_float(src_type))
		return gpt2_err(err, errlen, "%s is not a float type",
		                st_dtype_name(src_type));
	if (!p->per_layer)
		layer = 0;
	st_dtype dt;
	void *dst = gpt2_model_param(m, slot, layer, &dt);
	size_t n = (size_t)gpt2_param_numel(&m->config, slot);
	if (transposed && p->conv1d) {
		/* src is [out, in]: widen, transpose, then narrow once. */
		uint64_t shape[2];
		gpt2_param_shape(&m->config, slot, shape);
		size_t in = (size_t)shape[0], outd = (size_t)shape[1];
		float *a = malloc(n * sizeof(float));
		float *b = malloc(n * sizeof(float));
		if (!a || !b) {
			free(a);
			free(b);
			return gpt2_err(err, errlen, "out of memory");
		}
		st_convert(ST_DTYPE_F32, a, src_type, src, n, NULL);
		for (size_t o = 0; o < outd; o++)
			for (size_t i = 0; i < in; i++)
				b[i * outd + o] = a[o * in + i];
		st_convert(dt, dst, ST_DTYPE_F32, b, n, NULL);
		free(a);
		free(b);
	} else {
		if (st_convert(dt, dst, src_type, src, n, NULL) != ST_OK)
			return gpt2_err(err, errlen, "cannot convert %s to %s",
			                st_dtype_name(src_type), st_dtype_name(dt));
		if (!p->matrix && m->round_vectors)
			round_to(m->wdtype, dst, n);
	}
	m->filled[(size_t)slot * (size_t)m->config.num_layers + (size_t)layer] = 1;
	return 0;
}

int gpt2_model_missing(const gpt2_model *m, int *slot, int *layer)
{
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		for (int l = 0; l < gpt2_param_layers(&m->config, s); l++) {
			if (!m->filled[(size_t)s * (size_t)m->config.num_layers +
			               (size_t)l]) {
				*slot = s;
				*layer = l;
				return -1;
			}
		}
	}
	return 0;
}

void gpt2_model_free(gpt2_model *m)
{
	if (!m)
		return;
	gpt2_pool_free(m->pool);
	free(m->params_memory);
	free(m->filled);
	free(m);
}

int gpt2_model_set_threads(gpt2_model *m, int n)
{
	if (n < 1)
		n = 1;
	if (m->pool && gpt2_pool_size(m->pool) == n)
		return 0;
	gpt2_pool_free(m->pool);
	m->pool = n > 1 ? gpt2_pool_new(n) : NULL;
	return n > 1 && !m->pool ? -1 : 0;
}

/* ---- loading a checkpoint ---------------------------------------------- */

/* A tensor name made printable and short enough for a message. */
static void printable(char *out, size_t size, const char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '\'')
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
		if (i + 1 < len && o + 8 >= size) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
	}
	out[o] = '\0';
}

static void fmt_shape(char *out, size_t size, unsigned ndim,
                      const uint64_t *shape)
{
	size_t o = 0;
	o += (size_t)snprintf(out, size, "[");
	for (unsigned d = 0; d < ndim && o < size; d++)
		o += (size_t)snprintf(out + o, size - o, "%s%llu", d ? ", " : "",
		                      (unsigned long long)shape[d]);
	if (o < size)
		snprintf(out + o, size - o, "]");
}

static const char *tensor_file(st_checkpoint *ck, size_t fi)
{
	return st_file_path(st_checkpoint_file(ck, fi));
}

/* Where a parameter's bytes are: a file of the checkpoint, a range in it. */
struct span {
	size_t file, index;
	uint64_t begin, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/*
 * No two parameters may share bytes. A PyTorch checkpoint can hold many
 * views of one storage (safetensors cannot: libst refuses overlaps), so a
 * file of a few megabytes could give every layer the same bytes and have
 * the loader allocate, or gpt2export write, a model thousands of times its
 * size. No GPT-2 checkpoint shares a parameter's storage but for the tied
 * lm_head.weight, which is not among these.
 */
static int check_no_shared_data(st_checkpoint *ck, const size_t *where,
                                size_t n, char *err, size_t errlen)
{
	struct span *sp = malloc((n ? n : 1) * sizeof *sp);
	if (!sp)
		return gpt2_err(err, errlen, "out of memory");
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		/* A global slot fills only its layer 0 entry. */
		if (where[k] == SIZE_MAX)
			continue;
		const st_tensor *t = st_checkpoint_tensor(ck, where[k], &sp[m].file);
		sp[m].index = where[k];
		sp[m].begin = t->begin;
		sp[m].end = t->end;
		m++;
	}
	n = m;
	qsort(sp, n, sizeof *sp, span_cmp);
	/* After sorting, a range overlaps an earlier one exactly when it
	 * begins before the furthest end seen so far in its file. */
	size_t reach = 0;
	int rc = 0;
	for (size_t k = 1; k < n && !rc; k++) {
		if (sp[k].file != sp[reach].file) {
			reach = k;
			continue;
		}
		if (sp[k].begin < sp[reach].end) {
			const st_tensor *t = st_checkpoint_tensor(ck, sp[k].index, NULL);
			const st_tensor *o = st_checkpoint_tensor(ck, sp[reach].index,
			                                          NULL);
			char name[256], other[256];
			printable(name, sizeof name, t->name, t->name_len);
			printable(other, sizeof other, o->name, o->name_len);
			rc = gpt2_err(err, errlen,
			              "%s: tensor '%s': its data overlaps that of '%s' "
			              "(shared storage, expected data of its own)",
			              tensor_file(ck, sp[k].file), name, other);
		}
		if (sp[k].end > sp[reach].end)
			reach = k;
	}
	free(sp);
	return rc;
}

int gpt2_checkpoint_index(st_checkpoint *ck, const gpt2_config *cfg,
                          size_t *where, size_t *head, char *err,
                          size_t errlen)
{
	if (gpt2_config_check(cfg, err, errlen))
		return -1;
	int L = cfg->num_layers;
	char name[256], other[256], got[128], want[128];
	*head = SIZE_MAX;
	for (size_t k = 0; k < (size_t)GPT2_NUM_SLOTS * (size_t)L; k++)
		where[k] = SIZE_MAX;

	/*
	 * Every tensor must be a parameter (or a legacy buffer, or the tied
	 * head) with a float dtype and the shape the config implies, and no
	 * parameter may come twice.
	 */
	size_t nt = st_checkpoint_n_tensors(ck);
	for (size_t i = 0; i < nt; i++) {
		size_t fi;
		const st_tensor *t = st_checkpoint_tensor(ck, i, &fi);
		printable(name, sizeof name, t->name, t->name_len);
		int slot = 0, layer = 0;
		enum gpt2_name_kind kind = gpt2_name_lookup(cfg, t->name,
		                                            t->name_len, &slot,
		                                            &layer);
		if (kind == GPT2_NAME_BUFFER)
			continue;
		if (kind == GPT2_NAME_UNKNOWN)
			return gpt2_err(err, errlen,
			                "%s: tensor '%s': unexpected tensor (not a "
			                "parameter of GPT-2 with n_layer %d)",
			                tensor_file(ck, fi), name, L);
		if (!st_dtype_is_float(t->dtype))
			return gpt2_err(err, errlen,
			                "%s: tensor '%s': dtype %s is not a float type "
			                "(expected F32, F16, BF16 or F64)",
			                tensor_file(ck, fi), name,
			                st_dtype_name(t->dtype));
		if (kind == GPT2_NAME_LM_HEAD)
			slot = GPT2_WTE;
		uint64_t shape[2];
		int nd = gpt2_param_shape(cfg, slot, shape);
		int same = t->ndim == (unsigned)nd;
		for (int d = 0; same && d < nd; d++)
			same = t->shape[d] == shape[d];
		if (!same) {
			fmt_shape(got, sizeof got, t->ndim, t->shape);
			fmt_shape(want, sizeof want, (unsigned)nd, shape);
			int transposed = param_table[slot].conv1d && t->ndim == 2 &&
			                 t->shape[0] == shape[1] &&
			                 t->shape[1] == shape[0];
			return gpt2_err(err, errlen,
			                "%s: tensor '%s': wrong shape (%s, expected %s)%s",
			                tensor_file(ck, fi), name, got, want,
			                transposed ? ": transposed? GPT-2 stores Conv1D "
			                             "weights as [in, out]" : "");
		}
		if (kind == GPT2_NAME_LM_HEAD) {
			*head = i;
			continue;
		}
		size_t k = (size_t)slot * (size_t)L + (size_t)layer;
		if (where[k] != SIZE_MAX) {
			const st_tensor *o = st_checkpoint_tensor(ck, where[k], NULL);
			printable(other, sizeof other, o->name, o->name_len);
			return gpt2_err(err, errlen,
			                "%s: tensor '%s': a second copy of '%s'",
			                tensor_file(ck, fi), name, other);
		}
		where[k] = i;
	}

	/* Every parameter present. */
	size_t missing = 0;
	int first_slot = 0, first_layer = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++)
		for (int l = 0; l < gpt2_param_layers(cfg, s); l++)
			if (where[(size_t)s * (size_t)L + (size_t)l] == SIZE_MAX &&
			    !missing++) {
				first_slot = s;
				first_layer = l;
			}
	if (missing) {
		gpt2_param_name(first_slot, first_layer, name, sizeof name);
		if (missing > 1)
			snprintf(other, sizeof other, " (and %zu more)", missing - 1);
		else
			other[0] = '\0';
		return gpt2_err(err, errlen, "%s: missing tensor '%s'%s",
		                st_checkpoint_path(ck), name, other);
	}
	return check_no_shared_data(ck, where, (size_t)GPT2_NUM_SLOTS * (size_t)L,
	                            err, errlen);
}

int gpt2_checkpoint_check_head(st_checkpoint *ck, const gpt2_config *cfg,
                               const size_t *where, size_t head, char *err,
                               size_t errlen)
{
	if (head == SIZE_MAX)
		return 0;
	size_t wte = where[(size_t)GPT2_WTE * (size_t)cfg->num_layers], fh;
	const st_tensor *th = st_checkpoint_tensor(ck, head, &fh);
	const st_tensor *tw = st_checkpoint_tensor(ck, wte, NULL);
	size_t eh = dtype_size(th->dtype), ew = dtype_size(tw->dtype);
	/* A chunk of each side's F32 values, then of its stored bytes. */
	enum { CHUNK = 4096 };
	float *a = malloc(CHUNK * (2 * sizeof(float) + eh + ew));
	if (!a)
		return gpt2_err(err, errlen, "out of memory");
	float *b = a + CHUNK;
	char *rh = (char *)(b + CHUNK), *rw = rh + CHUNK * eh;
	size_t n = (size_t)th->n_elements, C = (size_t)cfg->channels;
	st_error e;
	int rc = 0;
	for (size_t off = 0; off < n && !rc; off += CHUNK) {
		size_t k = n - off < CHUNK ? n - off : CHUNK;
		if (st_checkpoint_read(ck, head, off * eh, rh, k * eh, &e) != ST_OK ||
		    st_checkpoint_read(ck, wte, off * ew, rw, k * ew, &e) != ST_OK) {
			rc = gpt2_err(err, errlen, "%s", e.message);
			break;
		}
		st_convert(ST_DTYPE_F32, a, th->dtype, rh, k, NULL);
		st_convert(ST_DTYPE_F32, b, tw->dtype, rw, k, NULL);
		for (size_t j = 0; j < k; j++) {
			if (memcmp(&a[j], &b[j], sizeof(float)) == 0)
				continue;
			char wname[256];
			printable(wname, sizeof wname, tw->name, tw->name_len);
			rc = gpt2_err(err, errlen,
			              "%s: tensor 'lm_head.weight': differs from '%s' at "
			              "[%zu, %zu] (%.9g, expected %.9g): an untied output "
			              "head is not supported", tensor_file(ck, fh), wname,
			              (off + j) / C, (off + j) % C, (double)a[j],
			              (double)b[j]);
			break;
		}
	}
	free(a);
	return rc;
}

int gpt2_model_load_checkpoint(gpt2_model **out, const gpt2_config *cfg,
                               st_checkpoint *ck, int wdtype, char *err,
                               size_t errlen)
{
	*out = NULL;
	if (gpt2_config_check(cfg, err, errlen))
		return -1;
	int L = cfg->num_layers;
	size_t *where = malloc((size_t)GPT2_NUM_SLOTS * (size_t)L * sizeof *where);
	if (!where)
		return gpt2_err(err, errlen, "out of memory");
	size_t head;
	gpt2_model *m = NULL;
	int rc = -1;
	if (gpt2_checkpoint_index(ck, cfg, where, &head, err, errlen))
		goto out;

	/* As stored: the matrices' one dtype, else F32 (F64 is held as F32). */
	unsigned seen = 0; /* a bit per dtype among the matrices */
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		if (!param_table[s].matrix)
			continue;
		for (int l = 0; l < gpt2_param_layers(cfg, s); l++) {
			size_t i = where[(size_t)s * (size_t)L + (size_t)l];
			seen |= 1u << st_checkpoint_tensor(ck, i, NULL)->dtype;
		}
	}
	st_dtype wt = ST_DTYPE_F32;
	if (wdtype >= 0)
		wt = (st_dtype)wdtype;
	else if (seen == 1u << ST_DTYPE_F16)
		wt = ST_DTYPE_F16;
	else if (seen == 1u << ST_DTYPE_BF16)
		wt = ST_DTYPE_BF16;
	if (gpt2_model_new(&m, cfg, wt, err, errlen))
		goto out;
	/* "As stored": a vector stored as F32 beside BF16 matrices stays F32. */
	m->round_vectors = wdtype >= 0;

	/* The data. */
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		for (int l = 0; l < gpt2_param_layers(cfg, s); l++) {
			size_t i = where[(size_t)s * (size_t)L + (size_t)l];
			const void *data;
			st_error e;
			if (st_checkpoint_data(ck, i, &data, &e) != ST_OK) {
				gpt2_err(err, errlen, "%s", e.message);
				goto out;
			}
			if (gpt2_model_fill(m, s, l,
			                    st_checkpoint_tensor(ck, i, NULL)->dtype,
			                    data, 0, err, errlen))
				goto out;
		}
	}
	if (gpt2_checkpoint_check_head(ck, cfg, where, head, err, errlen))
		goto out;
	*out = m;
	m = NULL;
	rc = 0;
out:
	gpt2_model_free(m);
	free(where);
	return rc;
}

int gpt2_config_dir(const char *path, char *dir, size_t size, char *err,
                    size_t errlen)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		return gpt2_err(err, errlen, "%s: %s", path, strerror(errno));
	const char *slash = strrchr(path, '/');
	if (S_ISDIR(sb.st_mode))
		snprintf(dir, size, "%s", path);
	else if (slash)
		snprintf(dir, size, "%.*s", (int)(slash - path + 1), path);
	else
		snprintf(dir, size, ".");
	return 0;
}

int gpt2_model_load(gpt2_model **out, const char *path, int wdtype, char *err,
                    size_t errlen)
{
	*out = NULL;
	char dir[4096];
	gpt2_config cfg;
	if (gpt2_config_dir(path, dir, sizeof dir, err, errlen) ||
	    gpt2_config_load(&cfg, dir, err, errlen))
		return -1;
	st_checkpoint *ck;
	st_error e;
	memset(&e, 0, sizeof e);
	if (st_checkpoint_open(&ck, path, ST_OPEN_TORCH, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message[0] ? e.message
		                                                : st_strerror(e.code));
	int rc = gpt2_model_load_checkpoint(out, &cfg, ck, wdtype, err, errlen);
	st_checkpoint_close(ck);
	return rc;
}
