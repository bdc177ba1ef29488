/*
 * arch_gguf.c - GPT-2's Hugging Face names <-> llama.cpp's GGUF names (the
 * table in st/arch.h). Names are matched whole: "h.<N>." or "blk.<N>."
 * with N canonical decimal, then the rest from the table.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

struct row {
	const char *hf, *gguf;
	int per_layer, transpose, keep_f32;
};

static const struct row rows[] = {
	{"wte.weight", "token_embd.weight", 0, 0, 0},
	{"wpe.weight", "position_embd.weight", 0, 0, 1},
	{"ln_1.weight", "attn_norm.weight", 1, 0, 1},
	{"ln_1.bias", "attn_norm.bias", 1, 0, 1},
	{"attn.c_attn.weight", "attn_qkv.weight", 1, 1, 0},
	{"attn.c_attn.bias", "attn_qkv.bias", 1, 0, 1},
	{"attn.c_proj.weight", "attn_output.weight", 1, 1, 0},
	{"attn.c_proj.bias", "attn_output.bias", 1, 0, 1},
	{"ln_2.weight", "ffn_norm.weight", 1, 0, 1},
	{"ln_2.bias", "ffn_norm.bias", 1, 0, 1},
	{"mlp.c_fc.weight", "ffn_up.weight", 1, 1, 0},
	{"mlp.c_fc.bias", "ffn_up.bias", 1, 0, 1},
	{"mlp.c_proj.weight", "ffn_down.weight", 1, 1, 0},
	{"mlp.c_proj.bias", "ffn_down.bias", 1, 0, 1},
	{"ln_f.weight", "output_norm.weight", 0, 0, 1},
	{"ln_f.bias", "output_norm.bias", 0, 0, 1},
};

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

static int lookup(const char *name, int from_hf, char *out, size_t size,
                  st_arch_gguf_info *info)
{
	int layer = -1;
	const char *rest = split_layer(name, from_hf ? "h." : "blk.", &layer);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		const char *key = from_hf ? r->hf : r->gguf;
		const char *val = from_hf ? r->gguf : r->hf;
		if (r->per_layer ? !(rest && !strcmp(rest, key)) : strcmp(name, key))
			continue;
		int k = r->per_layer
		            ? snprintf(out, size, "%s%d.%s", from_hf ? "blk." : "h.",
		                       layer, val)
		            : snprintf(out, size, "%s", val);
		if (k < 0 || (size_t)k >= size)
			return ST_EINVAL;
		if (info) {
			info->transpose = r->transpose;
			info->keep_f32 = r->keep_f32;
			info->layer = r->per_layer ? layer : -1;
		}
		return ST_OK;
	}
	return ST_ENOTFOUND;
}

int st_arch_gpt2_to_gguf(const char *hf, char *out, size_t size,
                         st_arch_gguf_info *info)
{
	if (!strncmp(hf, "transformer.", 12))
		hf += 12;
	return lookup(hf, 1, out, size, info);
}

int st_arch_gpt2_from_gguf(const char *gguf, char *out, size_t size,
                           st_arch_gguf_info *info)
{
	return lookup(gguf, 0, out, size, info);
}
