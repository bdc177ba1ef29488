/*
 * arch.c - the parameter inventory a config.json implies, and its
 * comparison with a checkpoint's tensor names and shapes (st/arch.h;
 * the GPT-2 GGUF name table is arch_gguf.c).
 *
 * It is not a loader and reads no tensor data: names and shapes only.
 * JSON is read through json.c's tree (internal.h, st__json_*).
 */
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep every count far from overflow and the tables small. */
#define MAX_SIZE ((uint64_t)1 << 31)
#define MAX_LAYERS 4096
/* 2^50 parameters: a thousand times the largest models published. */
#define MAX_PARAMS ((uint64_t)1 << 50)

/* ---- config.json ---------------------------------------------------------- */

typedef struct st__json json;

/*
 * A size: ST_OK with *out set, 1 when absent or null (*out = dflt),
 * ST_EFORMAT with a message when it is not an integer in [1, max].
 */
static int get_size(const json *root, const char *key, uint64_t dflt,
                    uint64_t max, uint64_t *out, const char *name,
                    st_error *err)
{
	const json *v = st__json_get(root, key);
	enum st__json_type t = st__json_type(v);
	*out = dflt;
	if (t == ST__JSON_ABSENT || t == ST__JSON_NULL)
		return 1;
	double d = st__json_number(v);
	if (t != ST__JSON_NUMBER || d != floor(d))
		return st__error(err, ST_EFORMAT, "%s: \"%s\" must be an integer",
		                 name, key);
	if (!(d >= 1) || d > (double)max)
		return st__error(err, ST_EFORMAT, "%s: \"%s\" is %.17g, expected 1 "
		                 "to %llu", name, key, d, (unsigned long long)max);
	*out = (uint64_t)d;
	return ST_OK;
}

static int need_size(const json *root, const char *key, uint64_t max,
                     uint64_t *out, const char *name, st_error *err)
{
	int rc = get_size(root, key, 0, max, out, name, err);
	if (rc == 1)
		return st__error(err, ST_EFORMAT, "%s: \"%s\" is missing", name, key);
	return rc;
}

static int get_bool(const json *root, const char *key, int dflt, int *out,
                    const char *name, st_error *err)
{
	enum st__json_type t = st__json_type(st__json_get(root, key));
	*out = dflt;
	if (t == ST__JSON_ABSENT || t == ST__JSON_NULL)
		return ST_OK;
	if (t != ST__JSON_TRUE && t != ST__JSON_FALSE)
		return st__error(err, ST_EFORMAT, "%s: \"%s\" must be true or false",
		                 name, key);
	*out = t == ST__JSON_TRUE;
	return ST_OK;
}

static const char *const GPT2_ARCHS[] = {"GPT2LMHeadModel", "GPT2Model",
                                         NULL};
static const char *const LLAMA_ARCHS[] = {"LlamaForCausalLM",
                                          "Qwen2ForCausalLM",
                                          "MistralForCausalLM",
                                          "Qwen3ForCausalLM", NULL};
static const char *const LLAMA_TYPES[] = {"llama", "qwen2", "mistral",
                                          "qwen3", NULL};

static int in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

static int parse_gpt2(st_arch_config *c, const json *root, const char *name,
                      st_error *err)
{
	if (need_size(root, "vocab_size", MAX_SIZE, &c->vocab, name, err) ||
	    need_size(root, "n_embd", MAX_SIZE, &c->hidden, name, err) ||
	    need_size(root, "n_layer", MAX_LAYERS, &c->layers, name, err) ||
	    need_size(root, "n_head", MAX_SIZE, &c->heads, name, err))
		return ST_EFORMAT;
	int rc = get_size(root, "n_positions", 0, MAX_SIZE, &c->positions, name,
	                  err);
	if (rc == 1) /* the oldest configs call it n_ctx */
		rc = need_size(root, "n_ctx", MAX_SIZE, &c->positions, name, err);
	if (rc < 0)
		return rc;
	if (get_size(root, "n_inner", 4 * c->hidden, MAX_SIZE, &c->intermediate,
	             name, err) < 0 ||
	    get_bool(root, "tie_word_embeddings", 1, &c->tied, name, err))
		return ST_EFORMAT;
	if (c->hidden % c->heads)
		return st__error(err, ST_EFORMAT, "%s: n_embd %llu is not a "
		                 "multiple of n_head %llu", name,
		                 (unsigned long long)c->hidden,
		                 (unsigned long long)c->heads);
	c->kv_heads = c->heads;
	c->head_dim = c->hidden / c->heads;
	c->qkv_bias = c->o_bias = c->mlp_bias = 1;
	return ST_OK;
}

static int parse_llama(st_arch_config *c, const json *root, int qwen2,
                       int qwen3, const char *name, st_error *err)
{
	if (need_size(root, "vocab_size", MAX_SIZE, &c->vocab, name, err) ||
	    need_size(root, "hidden_size", MAX_SIZE, &c->hidden, name, err) ||
	    need_size(root, "num_hidden_layers", MAX_LAYERS, &c->layers, name,
	              err) ||
	    need_size(root, "num_attention_heads", MAX_SIZE, &c->heads, name,
	              err) ||
	    need_size(root, "intermediate_size", MAX_SIZE, &c->intermediate,
	              name, err))
		return ST_EFORMAT;
	if (get_size(root, "num_key_value_heads", c->heads, MAX_SIZE,
	             &c->kv_heads, name, err) < 0)
		return ST_EFORMAT;
	/* Qwen3Config's head_dim defaults to 128, the others' to
	 * hidden_size / num_attention_heads. */
	int rc = get_size(root, "head_dim", 128, MAX_SIZE, &c->head_dim, name,
	                  err);
	if (rc < 0)
		return rc;
	if (rc == 1 && !qwen3) {
		if (c->hidden % c->heads)
			return st__error(err, ST_EFORMAT, "%s: hidden_size %llu is not "
			                 "a multiple of num_attention_heads %llu", name,
			                 (unsigned long long)c->hidden,
			                 (unsigned long long)c->heads);
		c->head_dim = c->hidden / c->heads;
	}
	if (c->heads % c->kv_heads)
		return st__error(err, ST_EFORMAT, "%s: num_attention_heads %llu is "
		                 "not a multiple of num_key_value_heads %llu", name,
		                 (unsigned long long)c->heads,
		                 (unsigned long long)c->kv_heads);
	if (c->heads * c->head_dim > MAX_SIZE)
		return st__error(err, ST_EFORMAT, "%s: num_attention_heads x "
		                 "head_dim is too large", name);
	int attn_bias, mlp_bias;
	if (get_bool(root, "tie_word_embeddings", 0, &c->tied, name, err) ||
	    get_bool(root, "attention_bias", 0, &attn_bias, name, err) ||
	    get_bool(root, "mlp_bias", 0, &mlp_bias, name, err))
		return ST_EFORMAT;
	/* Qwen2: q/k/v biases always, none elsewhere; Qwen3: attention_bias
	 * on all four projections, per-head q/k RMSNorms, no MLP bias. */
	c->qkv_bias = qwen2 || attn_bias;
	c->o_bias = !qwen2 && attn_bias;
	c->mlp_bias = !qwen2 && !qwen3 && mlp_bias;
	c->qk_norm = qwen3;
	return ST_OK;
}

int st_arch_config_parse(st_arch_config *cfg, const char *text, size_t len,
                         const char *name, st_error *err)
{
	memset(cfg, 0, sizeof *cfg);
	json *root = st__json_parse(text, len);
	if (!root)
		return st__error(err, ST_EFORMAT, "%s: not valid JSON", name);
	int rc;
	if (st__json_type(root) != ST__JSON_OBJECT) {
		rc = st__error(err, ST_EFORMAT, "%s: not a JSON object", name);
		goto done;
	}
	const char *arch = st__json_string(
		st__json_at(st__json_get(root, "architectures"), 0));
	const char *type = st__json_string(st__json_get(root, "model_type"));
	snprintf(cfg->arch, sizeof cfg->arch, "%s",
	         arch ? arch : type ? type : "(no architectures, no model_type)");
	if ((arch && in_list(arch, GPT2_ARCHS)) ||
	    (!arch && type && strcmp(type, "gpt2") == 0)) {
		cfg->family = ST_ARCH_GPT2;
		rc = parse_gpt2(cfg, root, name, err);
	} else if ((arch && in_list(arch, LLAMA_ARCHS)) ||
	           (!arch && type && in_list(type, LLAMA_TYPES))) {
		int qwen2 = arch ? strcmp(arch, "Qwen2ForCausalLM") == 0
		                 : strcmp(type, "qwen2") == 0;
		int qwen3 = arch ? strcmp(arch, "Qwen3ForCausalLM") == 0
		                 : strcmp(type, "qwen3") == 0;
		cfg->family = ST_ARCH_LLAMA;
		rc = parse_llama(cfg, root, qwen2, qwen3, name, err);
	} else {
		rc = st__error(err, ST_EUNSUPPORTED, "%s: architecture %s is not "
		               "one libst knows", name, cfg->arch);
	}
	if (rc == ST_OK && st_arch_count(cfg) > MAX_PARAMS)
		rc = st__error(err, ST_EFORMAT, "%s: its sizes imply more than "
		               "2^50 parameters", name);
done:
	st__json_free(root);
	return rc;
}

/* ---- the parameters a config implies -------------------------------------- */

/* The parameters being listed (p set) or only counted (count_only). */
struct plist {
	st_arch_param *p;
	size_t n, cap;
	int oom, count_only;
	uint64_t total; /* saturating */
};

static void add(struct plist *l, unsigned ndim, uint64_t d0, uint64_t d1,
                const char *fmt, ...) ST_PRINTF(5, 6);
static void add(struct plist *l, unsigned ndim, uint64_t d0, uint64_t d1,
                const char *fmt, ...)
{
	/*
	 * Each shape is at most 2^31 x 2^31, so a product cannot overflow;
	 * the sum can (a hostile config), so it saturates, and
	 * st_arch_config_parse refuses a config above MAX_PARAMS: after that
	 * every sum is exact.
	 */
	uint64_t numel = ndim > 1 ? d0 * d1 : d0;
	if (__builtin_add_overflow(l->total, numel, &l->total))
		l->total = UINT64_MAX;
	if (l->count_only || l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		st_arch_param *p = realloc(l->p, cap * sizeof *p);
		if (!p) {
			l->oom = 1;
			return;
		}
		l->p = p;
		l->cap = cap;
	}
	st_arch_param *e = &l->p[l->n++];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->name, sizeof e->name, fmt, ap);
	va_end(ap);
	e->ndim = ndim;
	e->shape[0] = d0;
	e->shape[1] = ndim > 1 ? d1 : 0;
}

static void gpt2_params(const st_arch_config *c, struct plist *l)
{
	uint64_t C = c->hidden, I = c->intermediate;
	add(l, 2, c->vocab, C, "wte.weight");
	add(l, 2, c->positions, C, "wpe.weight");
	for (uint64_t i = 0; i < c->layers; i++) {
		unsigned long long n = (unsigned long long)i;
		add(l, 1, C, 0, "h.%llu.ln_1.weight", n);
		add(l, 1, C, 0, "h.%llu.ln_1.bias", n);
		add(l, 2, C, 3 * C, "h.%llu.attn.c_attn.weight", n);
		add(l, 1, 3 * C, 0, "h.%llu.attn.c_attn.bias", n);
		add(l, 2, C, C, "h.%llu.attn.c_proj.weight", n);
		add(l, 1, C, 0, "h.%llu.attn.c_proj.bias", n);
		add(l, 1, C, 0, "h.%llu.ln_2.weight", n);
		add(l, 1, C, 0, "h.%llu.ln_2.bias", n);
		add(l, 2, C, I, "h.%llu.mlp.c_fc.weight", n);
		add(l, 1, I, 0, "h.%llu.mlp.c_fc.bias", n);
		add(l, 2, I, C, "h.%llu.mlp.c_proj.weight", n);
		add(l, 1, C, 0, "h.%llu.mlp.c_proj.bias", n);
	}
	add(l, 1, C, 0, "ln_f.weight");
	add(l, 1, C, 0, "ln_f.bias");
	if (!c->tied)
		add(l, 2, c->vocab, C, "lm_head.weight");
}

static void llama_params(const st_arch_config *c, struct plist *l)
{
	uint64_t H = c->hidden, I = c->intermediate;
	uint64_t Q = c->heads * c->head_dim, KV = c->kv_heads * c->head_dim;
	add(l, 2, c->vocab, H, "model.embed_tokens.weight");
	for (uint64_t i = 0; i < c->layers; i++) {
		unsigned long long n = (unsigned long long)i;
		const char *p = "model.layers";
		add(l, 1, H, 0, "%s.%llu.input_layernorm.weight", p, n);
		add(l, 2, Q, H, "%s.%llu.self_attn.q_proj.weight", p, n);
		if (c->qkv_bias)
			add(l, 1, Q, 0, "%s.%llu.self_attn.q_proj.bias", p, n);
		add(l, 2, KV, H, "%s.%llu.self_attn.k_proj.weight", p, n);
		if (c->qkv_bias)
			add(l, 1, KV, 0, "%s.%llu.self_attn.k_proj.bias", p, n);
		add(l, 2, KV, H, "%s.%llu.self_attn.v_proj.weight", p, n);
		if (c->qkv_bias)
			add(l, 1, KV, 0, "%s.%llu.self_attn.v_proj.bias", p, n);
		add(l, 2, H, Q, "%s.%llu.self_attn.o_proj.weight", p, n);
		if (c->o_bias)
			add(l, 1, H, 0, "%s.%llu.self_attn.o_proj.bias", p, n);
		if (c->qk_norm) {
			add(l, 1, c->head_dim, 0, "%s.%llu.self_attn.q_norm.weight",
			    p, n);
			add(l, 1, c->head_dim, 0, "%s.%llu.self_attn.k_norm.weight",
			    p, n);
		}
		add(l, 1, H, 0, "%s.%llu.post_attention_layernorm.weight", p, n);
		add(l, 2, I, H, "%s.%llu.mlp.gate_proj.weight", p, n);
		if (c->mlp_bias)
			add(l, 1, I, 0, "%s.%llu.mlp.gate_proj.bias", p, n);
		add(l, 2, I, H, "%s.%llu.mlp.up_proj.weight", p, n);
		if (c->mlp_bias)
			add(l, 1, I, 0, "%s.%llu.mlp.up_proj.bias", p, n);
		add(l, 2, H, I, "%s.%llu.mlp.down_proj.weight", p, n);
		if (c->mlp_bias)
			add(l, 1, H, 0, "%s.%llu.mlp.down_proj.bias", p, n);
	}
	add(l, 1, H, 0, "model.norm.weight");
	if (!c->tied)
		add(l, 2, c->vocab, H, "lm_head.weight");
}

/* List (or count) cfg's parameters; 0 when cfg has no known family. */
static int list_params(const st_arch_config *cfg, struct plist *l)
{
	if (cfg->family == ST_ARCH_GPT2)
		gpt2_params(cfg, l);
	else if (cfg->family == ST_ARCH_LLAMA)
		llama_params(cfg, l);
	else
		return 0;
	return 1;
}

int st_arch_expected(const st_arch_config *cfg, st_arch_param **out,
                     size_t *n, st_error *err)
{
	struct plist l = {0};
	*out = NULL;
	*n = 0;
	if (!list_params(cfg, &l))
		return st__error(err, ST_EINVAL, "config of no known architecture "
		                 "(family %d)", (int)cfg->family);
	if (l.oom) {
		free(l.p);
		return st__error(err, ST_ENOMEM, "%s: out of memory listing %zu "
		                 "parameters", cfg->arch, l.n);
	}
	*out = l.p;
	*n = l.n;
	return ST_OK;
}

uint64_t st_arch_count(const st_arch_config *cfg)
{
	struct plist l = {0};
	l.count_only = 1;
	return list_params(cfg, &l) ? l.total : 0;
}

/* ---- the comparison ------------------------------------------------------- */

const char *st_arch_what_name(enum st_arch_what what)
{
	switch (what) {
	case ST_ARCH_MISSING: return "missing";
	case ST_ARCH_MISSHAPEN: return "misshapen";
	case ST_ARCH_BUFFER: return "legacy buffer";
	case ST_ARCH_ALIAS: return "alias of the embedding";
	case ST_ARCH_UNKNOWN: return "not a parameter of this config";
	}
	return "?";
}

static uint64_t numel(const st_arch_param *p)
{
	return p->ndim == 1 ? p->shape[0] : p->shape[0] * p->shape[1];
}

struct slot {
	const st_arch_param *p;
	size_t order;  /* index in the expected list */
	long tensor;   /* the checkpoint tensor matched, or -1 */
	int misshapen;
};

static int slot_cmp(const void *x, const void *y)
{
	return strcmp(((const struct slot *)x)->p->name,
	              ((const struct slot *)y)->p->name);
}

/* Is s "<prefix><N><suffix>" with N a canonical layer number < layers? */
static int layer_name(const char *s, size_t len, const char *prefix,
                      const char *suffix, uint64_t layers)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);
	if (len <= pl + sl || memcmp(s, prefix, pl) != 0 ||
	    memcmp(s + len - sl, suffix, sl) != 0)
		return 0;
	const char *d = s + pl, *e = s + len - sl;
	if (e - d > 5 || (*d == '0' && e - d > 1))
		return 0;
	uint64_t v = 0;
	for (; d < e; d++) {
		if (*d < '0' || *d > '9')
			return 0;
		v = v * 10 + (uint64_t)(*d - '0');
	}
	return v < layers;
}

static enum st_arch_what classify_extra(const st_arch_config *c,
                                        const char *s, size_t len)
{
	if (len == 14 && memcmp(s, "lm_head.weight", 14) == 0 && c->tied)
		return ST_ARCH_ALIAS;
	if (c->family == ST_ARCH_GPT2 &&
	    (layer_name(s, len, "h.", ".attn.bias", c->layers) ||
	     layer_name(s, len, "h.", ".attn.masked_bias", c->layers)))
		return ST_ARCH_BUFFER;
	if (c->family == ST_ARCH_LLAMA &&
	    layer_name(s, len, "model.layers.", ".self_attn.rotary_emb.inv_freq",
	               c->layers))
		return ST_ARCH_BUFFER;
	return ST_ARCH_UNKNOWN;
}

static int push_item(st_arch_report *r, size_t *cap, enum st_arch_what w,
                     const char *name, size_t len, const st_arch_param *p,
                     const st_tensor *t)
{
	if (r->n_items == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		st_arch_item *it = realloc(r->items, nc * sizeof *it);
		if (!it)
			return -1;
		r->items = it;
		*cap = nc;
	}
	st_arch_item *it = &r->items[r->n_items];
	memset(it, 0, sizeof *it);
	it->name = malloc(len + 1);
	if (!it->name)
		return -1;
	memcpy(it->name, name, len);
	it->name[len] = '\0';
	it->what = w;
	it->found = t;
	if (p) {
		it->ndim = p->ndim;
		it->shape[0] = p->shape[0];
		it->shape[1] = p->shape[1];
	}
	r->n_items++;
	switch (w) {
	case ST_ARCH_MISSING: r->n_missing++; break;
	case ST_ARCH_MISSHAPEN: r->n_misshapen++; break;
	case ST_ARCH_BUFFER: r->n_buffers++; break;
	case ST_ARCH_ALIAS: r->n_alias++; break;
	case ST_ARCH_UNKNOWN: r->n_unknown++; break;
	}
	return 0;
}

static int same_shape(const st_arch_param *p, const st_tensor *t)
{
	if (t->ndim != p->ndim)
		return 0;
	for (unsigned d = 0; d < p->ndim; d++)
		if (t->shape[d] != p->shape[d])
			return 0;
	return 1;
}

int st_arch_compare(const st_arch_config *cfg, const st_checkpoint *ck,
                    st_arch_report *r, st_error *err)
{
	memset(r, 0, sizeof *r);
	r->prefix = "";
	st_arch_param *params;
	size_t n;
	int rc = st_arch_expected(cfg, &params, &n, err);
	if (rc)
		return rc;
	struct slot *slots = malloc(n * sizeof *slots);
	if (!slots) {
		free(params);
		return st__error(err, ST_ENOMEM, "%s: out of memory", cfg->arch);
	}
	for (size_t i = 0; i < n; i++) {
		slots[i] = (struct slot){&params[i], i, -1, 0};
		r->implied += numel(&params[i]);
	}
	r->n_expected = n;
	qsort(slots, n, sizeof *slots, slot_cmp);

	static const char gpt2_prefix[] = "transformer.";
	size_t nt = st_checkpoint_n_tensors(ck), cap = 0;
	/* Extras are found in checkpoint order but listed after the missing. */
	long *extra = malloc((nt ? nt : 1) * sizeof *extra);
	size_t n_extra = 0;
	if (!extra)
		rc = -1;
	for (size_t i = 0; i < nt && rc == 0; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		const char *s = t->name;
		size_t len = t->name_len;
		if (cfg->family == ST_ARCH_GPT2 && len > sizeof gpt2_prefix - 1 &&
		    memcmp(s, gpt2_prefix, sizeof gpt2_prefix - 1) == 0) {
			s += sizeof gpt2_prefix - 1;
			len -= sizeof gpt2_prefix - 1;
			r->prefix = gpt2_prefix;
		}
		struct slot *hit = NULL;
		if (len < sizeof params[0].name && !memchr(s, '\0', len)) {
			st_arch_param key;
			memcpy(key.name, s, len);
			key.name[len] = '\0';
			struct slot k = {&key, 0, -1, 0};
			hit = bsearch(&k, slots, n, sizeof *slots, slot_cmp);
		}
		if (hit && hit->tensor < 0) {
			hit->tensor = (long)i;
			if (same_shape(hit->p, t)) {
				r->n_matched++;
				r->found += t->n_elements;
			} else {
				hit->misshapen = 1;
			}
		} else {
			extra[n_extra++] = (long)i; /* unknown, or a second copy */
		}
	}
	/* Missing and misshapen, in the order the model defines them. */
	struct slot **by_order = rc ? NULL : malloc(n * sizeof *by_order);
	if (!rc && !by_order)
		rc = -1;
	for (size_t i = 0; i < n && rc == 0; i++)
		by_order[slots[i].order] = &slots[i];
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct slot *s = by_order[i];
		if (s->tensor < 0)
			rc = push_item(r, &cap, ST_ARCH_MISSING, s->p->name,
			               strlen(s->p->name), s->p, NULL);
		else if (s->misshapen)
			rc = push_item(r, &cap, ST_ARCH_MISSHAPEN, s->p->name,
			               strlen(s->p->name), s->p,
			               st_checkpoint_tensor(ck, (size_t)s->tensor,
			                                    NULL));
	}
	for (size_t k = 0; k < n_extra && rc == 0; k++) {
		const st_tensor *t = st_checkpoint_tensor(ck, (size_t)extra[k], NULL);
		const char *s = t->name;
		size_t len = t->name_len;
		size_t pl = strlen(r->prefix);
		if (pl && len > pl && memcmp(s, r->prefix, pl) == 0) {
			s += pl;
			len -= pl;
		}
		rc = push_item(r, &cap, classify_extra(cfg, s, len), t->name,
		               t->name_len, NULL, t);
	}
	free(by_order);
	free(extra);
	free(slots);
	free(params);
	if (rc) {
		st_arch_report_free(r);
		memset(r, 0, sizeof *r);
		r->prefix = "";
		return st__error(err, ST_ENOMEM, "%s: out of memory comparing %zu "
		                 "tensors", cfg->arch, nt);
	}
	return ST_OK;
}

void st_arch_report_free(st_arch_report *r)
{
	for (size_t i = 0; i < r->n_items; i++)
		free(r->items[i].name);
	free(r->items);
	r->items = NULL;
	r->n_items = 0;
}

/* ---- two configs ---------------------------------------------------------- */

int st_arch_config_diff(const char *a, size_t alen, const char *b,
                        size_t blen, st_arch_diff_fn fn, void *ctx,
                        st_error *err)
{
	int n = st__json_object_diff(a, alen, b, blen, fn, ctx);
	if (n < 0)
		return st__error(err, n, "config texts: not two JSON objects");
	return n;
}
