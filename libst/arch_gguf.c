/*
 * arch_gguf.c - Hugging Face tensor names <-> llama.cpp's GGUF names, the
 * one table of st/arch.h for GPT-2 and the Llama family, and the q/k row
 * permutation of llama GGUFs. Names are matched whole: "<layer
 * prefix><N>." with N canonical decimal, then the rest from the table.
 *
 * The GGUF names are gguf-py's (gguf/constants.py TENSOR_NAMES: token_embd,
 * blk.{bid}.attn_q, ...); which HF name each one comes from is
 * gguf/tensor_mapping.py's (model.embed_tokens, model.layers.{bid}.
 * self_attn.q_proj, ...), as convert_hf_to_gguf.py applies it.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The maps, one bit each; a row holds for the maps of its mask. */
enum { M_GPT2 = 1, M_LLAMA = 2, M_QWEN2 = 4, M_QWEN3 = 8 };
#define M_LF (M_LLAMA | M_QWEN2 | M_QWEN3)
#define M_NEOX (M_QWEN2 | M_QWEN3)

struct map {
	const char *arch; /* general.architecture */
	unsigned bit;
	const char *layers; /* the HF layer prefix ("h.", "model.layers.") */
	const char *strip;  /* an HF prefix ignored on the way to GGUF, or NULL */
};

static const struct map maps[] = {
	{"gpt2", M_GPT2, "h.", "transformer."},
	{"llama", M_LLAMA, "model.layers.", NULL},
	{"qwen2", M_QWEN2, "model.layers.", NULL},
	{"qwen3", M_QWEN3, "model.layers.", NULL},
};

struct row {
	unsigned maps;
	const char *hf, *gguf;
	int per_layer, transpose, keep_f32, permute;
};

enum { Q = ST_ARCH_PERMUTE_Q, K = ST_ARCH_PERMUTE_K };

static const struct row table[] = {
	/* GPT-2: Conv1D weights are [in, out] (transposed). */
	{M_GPT2, "wte.weight", "token_embd.weight", 0, 0, 0, 0},
	{M_GPT2, "wpe.weight", "position_embd.weight", 0, 0, 1, 0},
	{M_GPT2, "ln_1.weight", "attn_norm.weight", 1, 0, 1, 0},
	{M_GPT2, "ln_1.bias", "attn_norm.bias", 1, 0, 1, 0},
	{M_GPT2, "attn.c_attn.weight", "attn_qkv.weight", 1, 1, 0, 0},
	{M_GPT2, "attn.c_attn.bias", "attn_qkv.bias", 1, 0, 1, 0},
	{M_GPT2, "attn.c_proj.weight", "attn_output.weight", 1, 1, 0, 0},
	{M_GPT2, "attn.c_proj.bias", "attn_output.bias", 1, 0, 1, 0},
	{M_GPT2, "ln_2.weight", "ffn_norm.weight", 1, 0, 1, 0},
	{M_GPT2, "ln_2.bias", "ffn_norm.bias", 1, 0, 1, 0},
	{M_GPT2, "mlp.c_fc.weight", "ffn_up.weight", 1, 1, 0, 0},
	{M_GPT2, "mlp.c_fc.bias", "ffn_up.bias", 1, 0, 1, 0},
	{M_GPT2, "mlp.c_proj.weight", "ffn_down.weight", 1, 1, 0, 0},
	{M_GPT2, "mlp.c_proj.bias", "ffn_down.bias", 1, 0, 1, 0},
	{M_GPT2, "ln_f.weight", "output_norm.weight", 0, 0, 1, 0},
	{M_GPT2, "ln_f.bias", "output_norm.bias", 0, 0, 1, 0},
	/* The Llama family: nn.Linear weights [out, in], never transposed;
	 * llama's q/k rows (and biases) permuted (LlamaModel.permute), not
	 * qwen2's or qwen3's (Qwen2Model has no permutation: NEOX rotary). */
	{M_LF, "model.embed_tokens.weight", "token_embd.weight", 0, 0, 0, 0},
	{M_LF, "input_layernorm.weight", "attn_norm.weight", 1, 0, 1, 0},
	{M_LLAMA, "self_attn.q_proj.weight", "attn_q.weight", 1, 0, 0, Q},
	{M_LLAMA, "self_attn.q_proj.bias", "attn_q.bias", 1, 0, 1, Q},
	{M_LLAMA, "self_attn.k_proj.weight", "attn_k.weight", 1, 0, 0, K},
	{M_LLAMA, "self_attn.k_proj.bias", "attn_k.bias", 1, 0, 1, K},
	{M_NEOX, "self_attn.q_proj.weight", "attn_q.weight", 1, 0, 0, 0},
	{M_NEOX, "self_attn.q_proj.bias", "attn_q.bias", 1, 0, 1, 0},
	{M_NEOX, "self_attn.k_proj.weight", "attn_k.weight", 1, 0, 0, 0},
	{M_NEOX, "self_attn.k_proj.bias", "attn_k.bias", 1, 0, 1, 0},
	{M_LF, "self_attn.v_proj.weight", "attn_v.weight", 1, 0, 0, 0},
	{M_LF, "self_attn.v_proj.bias", "attn_v.bias", 1, 0, 1, 0},
	{M_LF, "self_attn.o_proj.weight", "attn_output.weight", 1, 0, 0, 0},
	{M_LF, "self_attn.o_proj.bias", "attn_output.bias", 1, 0, 1, 0},
	{M_QWEN3, "self_attn.q_norm.weight", "attn_q_norm.weight", 1, 0, 1, 0},
	{M_QWEN3, "self_attn.k_norm.weight", "attn_k_norm.weight", 1, 0, 1, 0},
	{M_LF, "post_attention_layernorm.weight", "ffn_norm.weight", 1, 0, 1, 0},
	{M_LF, "mlp.gate_proj.weight", "ffn_gate.weight", 1, 0, 0, 0},
	{M_LF, "mlp.gate_proj.bias", "ffn_gate.bias", 1, 0, 1, 0},
	{M_LF, "mlp.up_proj.weight", "ffn_up.weight", 1, 0, 0, 0},
	{M_LF, "mlp.up_proj.bias", "ffn_up.bias", 1, 0, 1, 0},
	{M_LF, "mlp.down_proj.weight", "ffn_down.weight", 1, 0, 0, 0},
	{M_LF, "mlp.down_proj.bias", "ffn_down.bias", 1, 0, 1, 0},
	{M_LF, "model.norm.weight", "output_norm.weight", 0, 0, 1, 0},
	{M_LF, "lm_head.weight", "output.weight", 0, 0, 0, 0},
};

static const struct map *find_map(const char *arch)
{
	for (size_t i = 0; arch && i < sizeof maps / sizeof maps[0]; i++)
		if (!strcmp(arch, maps[i].arch))
			return &maps[i];
	return NULL;
}

int st_arch_gguf_known(const char *arch)
{
	return find_map(arch) != NULL;
}

/*
 * Split "<prefix><N>.<rest>" into N and rest; N canonical decimal below
 * 10^6. Returns rest, or NULL.
 */
static const char *split_layer(const char *s, const char *prefix, int *layer)
{
	size_t n = strlen(prefix);
	if (strncmp(s, prefix, n))
		return NULL;
	s += n;
	int v = 0, digits = 0;
	while (*s >= '0' && *s <= '9' && digits < 7) {
		v = v * 10 + (*s++ - '0');
		digits++;
	}
	if (!digits || digits > 6 || *s != '.' || (digits > 1 && s[-digits] == '0'))
		return NULL;
	*layer = v;
	return s + 1;
}

static int lookup(const struct map *m, const char *name, int from_hf, char *out, size_t size,
                  st_arch_gguf_info *info)
{
	int layer = -1;
	const char *rest = split_layer(name, from_hf ? m->layers : "blk.", &layer);
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		const struct row *r = &table[i];
		const char *key = from_hf ? r->hf : r->gguf;
		const char *val = from_hf ? r->gguf : r->hf;
		if (!(r->maps & m->bit))
			continue;
		if (r->per_layer ? !(rest && !strcmp(rest, key)) : strcmp(name, key))
			continue;
		int k = r->per_layer ? snprintf(out, size, "%s%d.%s", from_hf ? "blk." : m->layers,
		                                layer, val)
		                     : snprintf(out, size, "%s", val);
		if (k < 0 || (size_t)k >= size)
			return ST_EINVAL;
		if (info) {
			info->transpose = r->transpose;
			info->keep_f32 = r->keep_f32;
			info->layer = r->per_layer ? layer : -1;
			info->permute = r->permute;
		}
		return ST_OK;
	}
	return ST_ENOTFOUND;
}

int st_arch_to_gguf(const char *arch, const char *hf, char *out, size_t size,
                    st_arch_gguf_info *info)
{
	const struct map *m = find_map(arch);
	if (!m)
		return ST_EUNSUPPORTED;
	size_t sl = m->strip ? strlen(m->strip) : 0;
	if (sl && !strncmp(hf, m->strip, sl))
		hf += sl;
	return lookup(m, hf, 1, out, size, info);
}

int st_arch_from_gguf(const char *arch, const char *gguf, char *out, size_t size,
                      st_arch_gguf_info *info)
{
	const struct map *m = find_map(arch);
	return m ? lookup(m, gguf, 0, out, size, info) : ST_EUNSUPPORTED;
}

const char *st_arch_gguf_derived(const char *arch, const char *gguf)
{
	/* LlamaModel.generate_extra_tensors: rope_type "llama3" only. */
	const struct map *m = find_map(arch);
	if (m && m->bit == M_LLAMA && !strcmp(gguf, "rope_freqs.weight"))
		return "llama3 rope scaling factors, computed from config.json's rope_scaling";
	return NULL;
}

int st_arch_gpt2_to_gguf(const char *hf, char *out, size_t size, st_arch_gguf_info *info)
{
	return st_arch_to_gguf("gpt2", hf, out, size, info);
}

int st_arch_gpt2_from_gguf(const char *gguf, char *out, size_t size, st_arch_gguf_info *info)
{
	return st_arch_from_gguf("gpt2", gguf, out, size, info);
}

/*
 * LlamaModel.permute: the rows [heads, 2, D/2] swapped to [heads, D/2, 2],
 * so GGUF row h*D + 2i + j holds HF row h*D + j*D/2 + i.
 */
int st_arch_permuted_row(uint64_t row, uint64_t rows, uint64_t heads, uint64_t *hf_row)
{
	if (!heads || rows % heads || (rows / heads) % 2 || row >= rows)
		return ST_EINVAL;
	uint64_t d = rows / heads, h = row / d, in = row % d;
	*hf_row = h * d + (in % 2) * (d / 2) + in / 2;
	return ST_OK;
}

void st__llama3_rope_freqs(double theta, double factor, double low, double high, double old,
                           float *out, uint64_t n)
{
	uint64_t hd = 2 * n;
	for (uint64_t i = 0; i < n; i++) {
		float freq = 1.0f / powf((float)theta, (float)(2 * i) / (float)hd);
		double wavelen = 2 * 3.14159265358979323846 / (double)freq, v;
		if (wavelen < old / high)
			v = 1.0;
		else if (wavelen > old / low)
			v = factor;
		else {
			double smooth = (old / wavelen - low) / (high - low);
			v = 1 / ((1 - smooth) / factor + smooth);
		}
		out[i] = (float)v;
	}
}
