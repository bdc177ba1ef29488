/*
 * config.c - GPT-2's config.json and generation_config.json: parsing,
 * the checks every size must pass, and the --dtype names.
 *
 * It decides which GPT-2 variants this code implements and refuses the
 * others with the reason; it knows nothing of tensors (gpt2.c) or files
 * of weights (load.c).
 */
#include "gpt2/gpt2.h"
#include "fe/json.h"
#include "gpt2/internal.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>


/* Generous bounds that keep every size computation far from overflow. */
#define MAX_VOCAB (1 << 24)
#define MAX_POSITIONS (1 << 20)
#define MAX_CHANNELS (1 << 16)
#define MAX_LAYERS 4096
#define MAX_HEADS 1024 /* keeps tokens x heads attention tasks in an int */

static int json_int(const json_node *root, const char *key, int required,
                    int lo, int hi, int *out, const char *name, char *err,
                    size_t errlen)
{
	const json_node *v = json_get(root, key);
	if (!v || json_is_null(v)) {
		if (required)
			return gpt2_err(err, errlen, "%s: \"%s\" is missing",
			                name, key);
		return 1;
	}
	if (!json_is_number(v) || json_number(v) != floor(json_number(v)))
		return gpt2_err(err, errlen, "%s: \"%s\" must be an integer",
		                name, key);
	if (json_number(v) < lo || json_number(v) > hi)
		return gpt2_err(err, errlen,
		                "%s: \"%s\" is %.17g, expected %d to %d", name,
		                key, json_number(v), lo, hi);
	*out = (int)json_number(v);
	return 0;
}

/* A boolean option: absent or null keeps dflt; else it must be a bool. */
static int json_bool(const json_node *root, const char *key, int dflt, int *out,
                     const char *name, char *err, size_t errlen)
{
	const json_node *v = json_get(root, key);
	*out = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_bool(v))
		return gpt2_err(err, errlen, "%s: \"%s\" must be true or false",
		                name, key);
	*out = json_is_true(v);
	return 0;
}

/* eos_token_id: an integer, a list of integers, or null (none). */
static int json_eos(const json_node *v, gpt2_config *cfg, const char *name,
                    char *err, size_t errlen)
{
	cfg->n_eos = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_number(v)) {
		if (json_number(v) != floor(json_number(v)) ||
		    json_number(v) < 0 || json_number(v) > INT_MAX)
			return gpt2_err(err, errlen,
			                "%s: \"eos_token_id\" must be a token id",
			                name);
		cfg->eos[cfg->n_eos++] = (int)json_number(v);
		return 0;
	}
	if (!json_is_array(v))
		return gpt2_err(err, errlen,
		                "%s: \"eos_token_id\" must be an integer or a list",
		                name);
	const json_node *e;
	for (e = json_first(v); e; e = json_next(e)) {
		if (!json_is_number(e) || json_number(e) != floor(json_number(e)) ||
		    json_number(e) < 0 || json_number(e) > INT_MAX)
			return gpt2_err(err, errlen,
			                "%s: \"eos_token_id\" must hold token ids",
			                name);
		if (cfg->n_eos == GPT2_MAX_EOS)
			return gpt2_err(err, errlen,
			                "%s: \"eos_token_id\" lists more than %d ids",
			                name, GPT2_MAX_EOS);
		cfg->eos[cfg->n_eos++] = (int)json_number(e);
	}
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * cJSON ends a key or value at a NUL, so "n_layer<NUL>x" would be read as
 * n_layer where Python's json refuses the raw byte or keeps the whole
 * name: a raw 0 byte anywhere, and a \u0000 escape (a backslash run of odd
 * length before u0000: backslashes only occur in strings), are refused.
 * Returns the offset of the first, or -1.
 */
static long nul_at(const char *json, size_t len)
{
	const char *raw = memchr(json, '\0', len);
	size_t i = 0;
	while (i < len && (!raw || i < (size_t)(raw - json))) {
		size_t run = 0;
		while (i + run < len && json[i + run] == '\\')
			run++;
		if (run % 2 && i + run + 5 <= len && !memcmp(json + i + run, "u0000", 5))
			return (long)(i + run - 1);
		i += run ? run : 1;
	}
	return raw ? (long)(raw - json) : -1;
}

static json_node *parse_json(const char *json, size_t len, const char *name,
                      char *err, size_t errlen)
{
	size_t at;
	json_node *root = json_parse(json, len, &at);
	if (!root) {
		gpt2_err(err, errlen, "%s: not valid JSON (near byte %zu)", name, at);
		return NULL;
	}
	/* One value, as Python's json.load reads it: nothing after it. */
	while (at < len && (json[at] == ' ' || json[at] == '\t' ||
	                    json[at] == '\n' || json[at] == '\r'))
		at++;
	if (at < len) {
		json_free(root);
		gpt2_err(err, errlen, "%s: not valid JSON (extra data at byte %zu)",
		         name, at);
		return NULL;
	}
	long nul = nul_at(json, len);
	if (nul >= 0) {
		json_free(root);
		gpt2_err(err, errlen, "%s: a NUL at byte %ld (%s): a key or value "
		         "would be cut there", name, nul,
		         json[nul] ? "\\u0000" : "a raw 0 byte");
		return NULL;
	}
	if (!json_is_object(root)) {
		json_free(root);
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
	for (const json_node *a = json_first(root); a; a = json_next(a))
		n++;
	const char **keys = malloc((n ? n : 1) * sizeof *keys);
	if (!keys) {
		json_free(root);
		gpt2_err(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	n = 0;
	for (const json_node *a = json_first(root); a; a = json_next(a))
		if (json_key(a))
			keys[n++] = json_key(a);
	qsort(keys, n, sizeof *keys, key_cmp);
	for (size_t i = 1; i < n; i++)
		if (strcmp(keys[i - 1], keys[i]) == 0) {
			char key[80];
			gpt2_printable(key, sizeof key, keys[i], strlen(keys[i]));
			gpt2_err(err, errlen, "%s: key \"%s\" appears twice", name, key);
			free(keys);
			json_free(root);
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
	json_node *root = parse_json(json, len, name, err, errlen);
	if (!root)
		return -1;
	int rc = -1;

	/* What kind of model this is; only GPT-2's own block is implemented. */
	const json_node *mt = json_get(root, "model_type");
	if (!json_is_string(mt)) {
		gpt2_err(err, errlen, "%s: \"model_type\" is %s, expected \"gpt2\"",
		         name, mt ? "not a string" : "missing");
		goto out;
	}
	char text[80];
	if (strcmp(json_string(mt), "gpt2") != 0) {
		gpt2_printable(text, sizeof text, json_string(mt), strlen(json_string(mt)));
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
	const json_node *eps = json_get(root,
	                                                    "layer_norm_epsilon");
	if (eps && !json_is_null(eps)) {
		if (!json_is_number(eps) || !(json_number(eps) > 0) ||
		    !isfinite(json_number(eps))) {
			gpt2_err(err, errlen,
			         "%s: \"layer_norm_epsilon\" must be a positive number",
			         name);
			goto out;
		}
		/* It is held as a float: 1e210 would become infinite, 1e-300
		 * zero, and gpt2_config_check refuse what parsed. */
		if (json_number(eps) > FLT_MAX || (float)json_number(eps) == 0) {
			gpt2_err(err, errlen,
			         "%s: \"layer_norm_epsilon\" is %g, outside the range "
			         "of a float", name, json_number(eps));
			goto out;
		}
		cfg->layer_norm_eps = (float)json_number(eps);
	}

	/*
	 * The variants of the block. gelu_pytorch_tanh is the same function
	 * as gelu_new (both the tanh approximation), so both are accepted.
	 */
	const json_node *act = json_get(root,
	                                                    "activation_function");
	if (act && !json_is_null(act)) {
		if (!json_is_string(act)) {
			gpt2_err(err, errlen,
			         "%s: \"activation_function\" must be a string", name);
			goto out;
		}
		if (strcmp(json_string(act), "gelu_new") != 0 &&
		    strcmp(json_string(act), "gelu_pytorch_tanh") != 0) {
			gpt2_printable(text, sizeof text, json_string(act),
			               strlen(json_string(act)));
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
	if (json_eos(json_get(root, "eos_token_id"),
	             cfg, name, err, errlen))
		goto out;
	rc = 0;
out:
	json_free(root);
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

/* Read a config file (st_config_read_file); *buf is malloc'd. 0, 1
 * (absent, when optional) or -1. */
static int read_small_file(const char *path, char **buf, size_t *len,
                           int optional, char *err, size_t errlen)
{
	st_error e;
	int rc = st_config_read_file(path, buf, len, &e);
	if (rc == ST_ENOTFOUND && optional)
		return 1;
	if (rc != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
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
	json_node *root = parse_json(buf, len, path, err, errlen);
	free(buf);
	if (!root)
		return -1;
	const json_node *eos = json_get(root, "eos_token_id");
	rc = 0;
	if (eos)
		rc = json_eos(eos, cfg, path, err, errlen);
	json_free(root);
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

/* ---- for the Llama family's config (llama_config.c) ---------------------- */

json_node *gpt2_json_object(const char *json, size_t len, const char *name,
                            char *err, size_t errlen)
{
	return parse_json(json, len, name, err, errlen);
}

int gpt2_json_eos(const json_node *v, gpt2_config *cfg, const char *name,
                  char *err, size_t errlen)
{
	return json_eos(v, cfg, name, err, errlen);
}

int gpt2_read_config_file(const char *path, char **buf, size_t *len,
                          int optional, char *err, size_t errlen)
{
	return read_small_file(path, buf, len, optional, err, errlen);
}
