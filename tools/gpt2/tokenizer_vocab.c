/*
 * tokenizer_vocab.c - read a loaded tokenizer's tables back as the files
 * spelled them (see tokenizer_vocab.h). It only reads struct
 * gpt2_tokenizer; loading and encoding stay in tokenizer_load.c and
 * tokenizer.c.
 */
#include "gpt2/tokenizer_vocab.h"
#include "gpt2/tokenizer_impl.h"
#include "gpt2/internal.h"

#include <stdlib.h>

const char *gpt2_tokenizer_token_text(const gpt2_tokenizer *t, int32_t id,
                                      size_t *len, int *kind)
{
	if (id < 0 || id >= t->n_ids)
		return NULL;
	for (size_t i = 0; i < t->n_added; i++)
		if (t->added[i].id == id) {
			*len = t->added[i].len;
			*kind = t->added[i].special ? GPT2_TOKEN_SPECIAL
			                            : GPT2_TOKEN_ADDED;
			return t->added[i].text;
		}
	if (!t->key_len || t->key_len[id] == UINT32_MAX)
		return NULL;
	*len = t->key_len[id];
	*kind = GPT2_TOKEN_NORMAL;
	return t->key_data + t->key_off[id];
}

static int cmp_rank(const void *a, const void *b)
{
	const merge_slot *x = *(const merge_slot *const *)a;
	const merge_slot *y = *(const merge_slot *const *)b;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int gpt2_tokenizer_merge_pairs(const gpt2_tokenizer *t, int32_t **pairs,
                               size_t *n, char *err, size_t errlen)
{
	*pairs = NULL;
	*n = 0;
	if (!t->merges)
		return 0;
	size_t count = 0;
	for (uint64_t i = 0; i <= t->merge_mask; i++)
		count += t->merges[i].key != UINT64_MAX;
	const merge_slot **s = malloc((count ? count : 1) * sizeof *s);
	int32_t *p = malloc((count ? count : 1) * 2 * sizeof *p);
	if (!s || !p) {
		free(s);
		free(p);
		return gpt2_err(err, errlen, "out of memory");
	}
	size_t k = 0;
	for (uint64_t i = 0; i <= t->merge_mask; i++)
		if (t->merges[i].key != UINT64_MAX)
			s[k++] = &t->merges[i];
	qsort(s, count, sizeof *s, cmp_rank);
	for (size_t i = 0; i < count; i++) {
		p[2 * i] = (int32_t)(s[i]->key >> 32);
		p[2 * i + 1] = (int32_t)(s[i]->key & 0xffffffffu);
	}
	free(s);
	*pairs = p;
	*n = count;
	return 0;
}
