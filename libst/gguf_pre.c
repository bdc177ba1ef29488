/*
 * gguf_pre.c - the pre-tokenizer names of GGUF vocabularies (st/gguf.h):
 * which tokenizer.json pattern each tokenizer.ggml.pre name stands for.
 * The patterns are the tokenizer.json files' own (Meta-Llama-3-8B's,
 * Qwen2's), byte for byte, so that a tokenizer.json can be matched to its
 * name and a name turned back into the tokenizer.json step.
 */
#include "internal.h"

#include <st/gguf.h>
#include <string.h>

#define LLAMA3_PATTERN                                                             \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| " \
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define QWEN2_PATTERN                                                         \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| " \
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

static const st_gguf_pre PRES[] = {
	{"gpt-2", NULL, 0, 0},
	{"llama-bpe", LLAMA3_PATTERN, 0, 1},
	{"qwen2", QWEN2_PATTERN, 1, 0},
};

/* Other names llama.cpp reads as one of the above. */
static const struct {
	const char *alias;
	size_t to;
} ALIASES[] = {{"default", 0}, {"llama3", 1}, {"llama-v3", 1}};

static int is(const char *s, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(s, want, len) == 0;
}

const st_gguf_pre *st_gguf_pre_find(const char *name, size_t len)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof PRES / sizeof PRES[0]; i++)
		if (is(name, len, PRES[i].name))
			return &PRES[i];
	for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
		if (is(name, len, ALIASES[i].alias))
			return &PRES[ALIASES[i].to];
	return NULL;
}

const st_gguf_pre *st_gguf_pre_from_pattern(const char *pattern, size_t len)
{
	if (!pattern)
		return NULL;
	for (size_t i = 0; i < sizeof PRES / sizeof PRES[0]; i++)
		if (PRES[i].pattern && is(pattern, len, PRES[i].pattern))
			return &PRES[i];
	return NULL;
}
