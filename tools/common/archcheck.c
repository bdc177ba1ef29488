/*
 * archcheck.c - the parameter inventory a config.json implies, and its
 * comparison with a checkpoint's tensor names and shapes (archcheck.h).
 *
 * The tables below are written from transformers' modeling_gpt2.py
 * (Conv1D weights stored [in, out]; the causal-mask buffers attn.bias and
 * attn.masked_bias that old versions saved) and modeling_llama.py /
 * modeling_qwen2.py / modeling_mistral.py (nn.Linear weights [out, in];
 * q_proj out = heads * head_dim, k_proj and v_proj out = kv_heads *
 * head_dim; RMSNorm weights without bias; Qwen2's q/k/v biases;
 * rotary_emb.inv_freq, a buffer older Llama saves kept).
 *
 * It is not a loader and reads no tensor data: names and shapes only.
 * JSON is read through common/json.h.
 */
#include "common/archcheck.h"
#include "common/json.h"

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

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * A size: 0 with *out set, 1 when absent or null (*out = dflt), -1 with
 * a message when it is not an integer in [1, max].
 */
static int get_size(const tj *root, const char *key, uint64_t dflt,
                    uint64_t max, uint64_t *out, const char *name, char *err,
                    size_t errlen)
{
	const tj *v = tj_get(root, key);
	*out = dflt;
	if (!v || tj_is_null(v))
		return 1;
	if (!tj_is_number(v) || tj_number(v) != floor(tj_number(v)))
		return fail(err, errlen, "%s: \"%s\" must be an integer", name, key);
	if (!(tj_number(v) >= 1) || tj_number(v) > (double)max)
		return fail(err, errlen, "%s: \"%s\" is %.17g, expected 1 to %llu",
		            name, key, tj_number(v), (unsigned long long)max);
	*out = (uint64_t)tj_number(v);
	return 0;
}

static int need_size(const tj *root, const char *key, uint64_t max,
                     uint64_t *out, const char *name, char *err,
                     size_t errlen)
{
	int rc = get_size(root, key, 0, max, out, name, err, errlen);
	if (rc == 1)
		return fail(err, errlen, "%s: \"%s\" is missing", name, key);
	return rc;
}

static int get_bool(const tj *root, const char *key, int dflt, int *out,
                    const char *name, char *err, size_t errlen)
{
	const tj *v = tj_get(root, key);
	*out = dflt;
	if (!v || tj_is_null(v))
		return 0;
	if (!tj_is_bool(v))
		return fail(err, errlen, "%s: \"%s\" must be true or false", name,
		            key);
	*out = tj_is_true(v);
	return 0;
}

static const char *const GPT2_ARCHS[] = {"GPT2LMHeadModel", "GPT2Model",
                                         NULL};
static const char *const LLAMA_ARCHS[] = {"LlamaForCausalLM",
                                          "Qwen2ForCausalLM",
                                          "MistralForCausalLM", NULL};
static const char *const LLAMA_TYPES[] = {"llama", "qwen2", "mistral", NULL};

static int in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

static int parse_gpt2(archcheck_config *c, const tj *root,
                      const char *name, char *err, size_t errlen)
{
	if (need_size(root, "vocab_size", MAX_SIZE, &c->vocab, name, err, errlen) ||
	    need_size(root, "n_embd", MAX_SIZE, &c->hidden, name, err, errlen) ||
	    need_size(root, "n_layer", MAX_LAYERS, &c->layers, name, err,
	              errlen) ||
	    need_size(root, "n_head", MAX_SIZE, &c->heads, name, err, errlen))
		return -1;
	int rc = get_size(root, "n_positions", 0, MAX_SIZE, &c->positions, name,
	                  err, errlen);
	if (rc == 1) /* the oldest configs call it n_ctx */
		rc = need_size(root, "n_ctx", MAX_SIZE, &c->positions, name, err,
		               errlen);
	if (rc < 0)
		return -1;
	if (get_size(root, "n_inner", 4 * c->hidden, MAX_SIZE, &c->intermediate,
	             name, err, errlen) < 0 ||
	    get_bool(root, "tie_word_embeddings", 1, &c->tied, name, err, errlen))
		return -1;
	if (c->hidden % c->heads)
		return fail(err, errlen, "%s: n_embd %llu is not a multiple of "
		            "n_head %llu", name, (unsigned long long)c->hidden,
		            (unsigned long long)c->heads);
	c->kv_heads = c->heads;
	c->head_dim = c->hidden / c->heads;
	c->qkv_bias = c->o_bias = c->mlp_bias = 1;
	return 0;
}

static int parse_llama(archcheck_config *c, const tj *root, int qwen2,
                       const char *name, char *err, size_t errlen)
{
	if (need_size(root, "vocab_size", MAX_SIZE, &c->vocab, name, err,
	              errlen) ||
	    need_size(root, "hidden_size", MAX_SIZE, &c->hidden, name, err,
	              errlen) ||
	    need_size(root, "num_hidden_layers", MAX_LAYERS, &c->layers, name,
	              err, errlen) ||
	    need_size(root, "num_attention_heads", MAX_SIZE, &c->heads, name,
	              err, errlen) ||
	    need_size(root, "intermediate_size", MAX_SIZE, &c->intermediate,
	              name, err, errlen))
		return -1;
	if (get_size(root, "num_key_value_heads", c->heads, MAX_SIZE,
	             &c->kv_heads, name, err, errlen) < 0)
		return -1;
	int rc = get_size(root, "head_dim", 0, MAX_SIZE, &c->head_dim, name, err,
	                  errlen);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		if (c->hidden % c->heads)
			return fail(err, errlen, "%s: hidden_size %llu is not a "
			            "multiple of num_attention_heads %llu", name,
			            (unsigned long long)c->hidden,
			            (unsigned long long)c->heads);
		c->head_dim = c->hidden / c->heads;
	}
	if (c->heads % c->kv_heads)
		return fail(err, errlen, "%s: num_attention_heads %llu is not a "
		            "multiple of num_key_value_heads %llu", name,
		            (unsigned long long)c->heads,
		            (unsigned long long)c->kv_heads);
	if (c->heads * c->head_dim > MAX_SIZE)
		return fail(err, errlen, "%s: num_attention_heads x head_dim is "
		            "too large", name);
	int attn_bias, mlp_bias;
	if (get_bool(root, "tie_word_embeddings", 0, &c->tied, name, err,
	             errlen) ||
	    get_bool(root, "attention_bias", 0, &attn_bias, name, err, errlen) ||
	    get_bool(root, "mlp_bias", 0, &mlp_bias, name, err, errlen))
		return -1;
	c->qkv_bias = qwen2 || attn_bias;
	c->o_bias = !qwen2 && attn_bias;
	c->mlp_bias = !qwen2 && mlp_bias;
	return 0;
}

int archcheck_config_parse(archcheck_config *cfg, const char *json,
                           size_t len, const char *name, char *err,
                           size_t errlen)
{
	memset(cfg, 0, sizeof *cfg);
	tj *root = tj_parse(json, len, NULL);
	if (!root)
		return fail(err, errlen, "%s: not valid JSON", name);
	int rc = -1;
	if (!tj_is_object(root)) {
		fail(err, errlen, "%s: not a JSON object", name);
		goto done;
	}
	const tj *archs = tj_get(root,
	                                                      "architectures");
	const tj *a0 = tj_is_array(archs) ? tj_at(archs, 0)
	                                       : NULL;
	const tj *mt = tj_get(root, "model_type");
	const char *arch = tj_is_string(a0) ? tj_string(a0) : NULL;
	const char *type = tj_is_string(mt) ? tj_string(mt) : NULL;
	snprintf(cfg->arch, sizeof cfg->arch, "%s",
	         arch ? arch : type ? type : "(no architectures, no model_type)");
	if ((arch && in_list(arch, GPT2_ARCHS)) ||
	    (!arch && type && strcmp(type, "gpt2") == 0)) {
		cfg->family = ARCHCHECK_GPT2;
		rc = parse_gpt2(cfg, root, name, err, errlen);
	} else if ((arch && in_list(arch, LLAMA_ARCHS)) ||
	           (!arch && type && in_list(type, LLAMA_TYPES))) {
		int qwen2 = arch ? strcmp(arch, "Qwen2ForCausalLM") == 0
		                 : strcmp(type, "qwen2") == 0;
		cfg->family = ARCHCHECK_LLAMA;
		rc = parse_llama(cfg, root, qwen2, name, err, errlen);
	} else {
		rc = 1;
	}
	if (rc == 0 && archcheck_count(cfg) > MAX_PARAMS) {
		rc = fail(err, errlen, "%s: its sizes imply more than 2^50 "
		          "parameters", name);
	}
done:
	tj_free(root);
	return rc;
}

/* ---- the parameters a config implies -------------------------------------- */

struct plist {
	archcheck_param *p;
	size_t n, cap;
	int oom;
};

static void add(struct plist *l, unsigned ndim, uint64_t d0, uint64_t d1,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void add(struct plist *l, unsigned ndim, uint64_t d0, uint64_t d1,
                const char *fmt, ...)
{
	if (l->oom)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		archcheck_param *p = realloc(l->p, cap * sizeof *p);
		if (!p) {
			l->oom = 1;
			return;
		}
		l->p = p;
		l->cap = cap;
	}
	archcheck_param *e = &l->p[l->n++];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->name, sizeof e->name, fmt, ap);
	va_end(ap);
	e->ndim = ndim;
	e->shape[0] = d0;
	e->shape[1] = ndim > 1 ? d1 : 0;
}

static void gpt2_params(const archcheck_config *c, struct plist *l)
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

static void llama_params(const archcheck_config *c, struct plist *l)
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

size_t archcheck_expected(const archcheck_config *cfg, archcheck_param **out)
{
	struct plist l = {0};
	if (cfg->family == ARCHCHECK_GPT2)
		gpt2_params(cfg, &l);
	else if (cfg->family == ARCHCHECK_LLAMA)
		llama_params(cfg, &l);
	if (l.oom || l.n == 0) {
		free(l.p);
		*out = NULL;
		return 0;
	}
	*out = l.p;
	return l.n;
}

static uint64_t numel(const archcheck_param *p)
{
	return p->ndim == 1 ? p->shape[0] : p->shape[0] * p->shape[1];
}

/*
 * Each shape is at most 2^31 x 2^31, so numel cannot overflow; the sum can
 * (a hostile config), so it saturates, and archcheck_config_parse refuses
 * a config above MAX_PARAMS: after that every sum is exact.
 */
uint64_t archcheck_count(const archcheck_config *cfg)
{
	archcheck_param *p;
	size_t n = archcheck_expected(cfg, &p);
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		if (__builtin_add_overflow(total, numel(&p[i]), &total))
			total = UINT64_MAX;
	free(p);
	return total;
}

/* ---- the comparison ------------------------------------------------------- */

const char *archcheck_what_name(enum archcheck_what what)
{
	switch (what) {
	case ARCHCHECK_MISSING: return "missing";
	case ARCHCHECK_MISSHAPEN: return "misshapen";
	case ARCHCHECK_BUFFER: return "legacy buffer";
	case ARCHCHECK_ALIAS: return "alias of the embedding";
	case ARCHCHECK_UNKNOWN: return "not a parameter of this config";
	}
	return "?";
}

struct slot {
	const archcheck_param *p;
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

static enum archcheck_what classify_extra(const archcheck_config *c,
                                          const char *s, size_t len)
{
	if (len == 14 && memcmp(s, "lm_head.weight", 14) == 0 && c->tied)
		return ARCHCHECK_ALIAS;
	if (c->family == ARCHCHECK_GPT2 &&
	    (layer_name(s, len, "h.", ".attn.bias", c->layers) ||
	     layer_name(s, len, "h.", ".attn.masked_bias", c->layers)))
		return ARCHCHECK_BUFFER;
	if (c->family == ARCHCHECK_LLAMA &&
	    layer_name(s, len, "model.layers.", ".self_attn.rotary_emb.inv_freq",
	               c->layers))
		return ARCHCHECK_BUFFER;
	return ARCHCHECK_UNKNOWN;
}

static int push_item(archcheck_report *r, size_t *cap, enum archcheck_what w,
                     const char *name, size_t len, const archcheck_param *p,
                     const st_tensor *t)
{
	if (r->n_items == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		archcheck_item *it = realloc(r->items, nc * sizeof *it);
		if (!it)
			return -1;
		r->items = it;
		*cap = nc;
	}
	archcheck_item *it = &r->items[r->n_items];
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
	case ARCHCHECK_MISSING: r->n_missing++; break;
	case ARCHCHECK_MISSHAPEN: r->n_misshapen++; break;
	case ARCHCHECK_BUFFER: r->n_buffers++; break;
	case ARCHCHECK_ALIAS: r->n_alias++; break;
	case ARCHCHECK_UNKNOWN: r->n_unknown++; break;
	}
	return 0;
}

static int same_shape(const archcheck_param *p, const st_tensor *t)
{
	if (t->ndim != p->ndim)
		return 0;
	for (unsigned d = 0; d < p->ndim; d++)
		if (t->shape[d] != p->shape[d])
			return 0;
	return 1;
}

int archcheck_compare(const archcheck_config *cfg, const st_checkpoint *ck,
                      archcheck_report *r)
{
	memset(r, 0, sizeof *r);
	r->prefix = "";
	archcheck_param *params;
	size_t n = archcheck_expected(cfg, &params);
	if (n == 0)
		return -1;
	struct slot *slots = malloc(n * sizeof *slots);
	if (!slots) {
		free(params);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		slots[i] = (struct slot){&params[i], i, -1, 0};
		r->implied += numel(&params[i]);
	}
	r->n_expected = n;
	qsort(slots, n, sizeof *slots, slot_cmp);

	static const char gpt2_prefix[] = "transformer.";
	size_t nt = st_checkpoint_n_tensors(ck), cap = 0;
	int rc = 0;
	/* Extras are found in checkpoint order but listed after the missing. */
	long *extra = malloc((nt ? nt : 1) * sizeof *extra);
	size_t n_extra = 0;
	if (!extra)
		rc = -1;
	for (size_t i = 0; i < nt && rc == 0; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		const char *s = t->name;
		size_t len = t->name_len;
		if (cfg->family == ARCHCHECK_GPT2 && len > sizeof gpt2_prefix - 1 &&
		    memcmp(s, gpt2_prefix, sizeof gpt2_prefix - 1) == 0) {
			s += sizeof gpt2_prefix - 1;
			len -= sizeof gpt2_prefix - 1;
			r->prefix = gpt2_prefix;
		}
		struct slot *hit = NULL;
		if (len < sizeof params[0].name && !memchr(s, '\0', len)) {
			archcheck_param key;
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
			rc = push_item(r, &cap, ARCHCHECK_MISSING, s->p->name,
			               strlen(s->p->name), s->p, NULL);
		else if (s->misshapen)
			rc = push_item(r, &cap, ARCHCHECK_MISSHAPEN, s->p->name,
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
	if (rc)
		archcheck_report_free(r);
	return rc;
}

void archcheck_report_free(archcheck_report *r)
{
	for (size_t i = 0; i < r->n_items; i++)
		free(r->items[i].name);
	free(r->items);
	r->items = NULL;
	r->n_items = 0;
}

/* ---- two configs ---------------------------------------------------------- */

/*
 * Report key when its values differ: cJSON_Compare says so and their
 * printed forms differ too (an overflowing number is never equal to
 * itself in cJSON_Compare, and both print as null). Returns 1 if reported.
 */
static int diff_one(const tj *va, const tj *vb, const char *key,
                    archcheck_diff_fn fn, void *ctx)
{
	if (va && vb && tj_equal(va, vb))
		return 0;
	char *ta = va ? tj_print(va) : NULL;
	char *tb = vb ? tj_print(vb) : NULL;
	int differ = !(ta && tb && strcmp(ta, tb) == 0);
	if (differ)
		fn(ctx, key, va ? (ta ? ta : "?") : NULL,
		   vb ? (tb ? tb : "?") : NULL);
	free(ta);
	free(tb);
	return differ;
}

int archcheck_config_diff(const char *a, size_t alen, const char *b,
                          size_t blen, archcheck_diff_fn fn, void *ctx)
{
	tj *ra = tj_parse(a, alen, NULL);
	tj *rb = tj_parse(b, blen, NULL);
	int n = -1;
	if (tj_is_object(ra) && tj_is_object(rb)) {
		n = 0;
		const tj *v;
		/* A key given twice counts once, by its first value (cJSON's). */
		for (v = tj_first(ra); v; v = tj_next(v)) {
			if (!tj_key(v) ||
			    tj_get(ra, tj_key(v)) != v)
				continue;
			const tj *w = tj_get(rb, tj_key(v));
			n += diff_one(v, w, tj_key(v), fn, ctx);
		}
		for (v = tj_first(rb); v; v = tj_next(v)) {
			if (tj_key(v) &&
			    tj_get(rb, tj_key(v)) == v &&
			    !tj_get(ra, tj_key(v)))
				n += diff_one(NULL, v, tj_key(v), fn, ctx);
		}
	}
	tj_free(ra);
	tj_free(rb);
	return n;
}
