/*
 * gpt2.c - the GPT-2 model: the one table that maps Hugging Face tensor
 * names onto parameter slots, and the model those slots are carved from
 * (one allocation, filled tensor by tensor).
 *
 * It holds no file logic (load.c reads checkpoints into a model, config.c
 * reads config.json) and no arithmetic beyond dtype conversion (the
 * forward pass is in gpt2_forward.c, the sampler in gpt2_sample.c).
 */
#include "gpt2/gpt2.h"
#include "gpt2/internal.h"
#include "gpt2/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (gpt2_kernels_default(&m->kernels, err, errlen)) {
		free(m);
		return -1;
	}
	m->round_vectors = 1;
	int L = cfg->num_layers;

	/* One allocation carved into the slots, each 64-byte aligned. */
	size_t offsets[GPT2_NUM_SLOTS], total = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		const gpt2_param_info *p = &param_table[s];
		uint64_t numel = gpt2_param_numel(cfg, s) *
		                 (uint64_t)gpt2_param_layers(cfg, s);
		size_t es = p->matrix ? gpt2_dtype_size(wdtype) : sizeof(float);
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
	m->params_bytes = total;
	m->params_memory = gpt2_big_alloc(total);
	m->filled = calloc((size_t)GPT2_NUM_SLOTS * (size_t)L, 1);
	if (!m->params_memory || !m->filled) {
		gpt2_model_free(m);
		return gpt2_err(err, errlen,
		                "out of memory (the parameters need %zu bytes)", total);
	}
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
	return (char *)m->slot[slot] + off * gpt2_dtype_size(t);
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
	if (!st_dtype_is_wide_float(src_type))
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
	gpt2_big_free(m->params_memory, m->params_bytes);
	free(m->filled);
	free(m);
}

int gpt2_model_set_threads(gpt2_model *m, int n, char *err, size_t errlen)
{
	if (n < 1)
		n = 1;
	if (m->pool && gpt2_pool_size(m->pool) == n)
		return 0;
	gpt2_pool_free(m->pool);
	m->pool = NULL;
	return n > 1 ? gpt2_pool_new(&m->pool, n, err, errlen) : 0;
}
