/*
 * tokenizer_vocab.h - a loaded GPT-2 tokenizer's vocabulary and merges as
 * its files spell them (byte-level "Ġthe", not the bytes " the"), for
 * writing them elsewhere: a GGUF file's tokenizer.ggml.* arrays. Internal
 * to the GPT-2 tools; see tokenizer.h.
 */
#ifndef ST_GPT2_TOKENIZER_VOCAB_H
#define ST_GPT2_TOKENIZER_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2/tokenizer.h"

enum {
	GPT2_TOKEN_NORMAL = 0,  /* in the model's vocabulary */
	GPT2_TOKEN_SPECIAL = 1, /* an added special token ("<|endoftext|>") */
	GPT2_TOKEN_ADDED = 2    /* an added token that is not special */
};

/*
 * The text of id as the vocabulary files hold it (not NUL-terminated;
 * valid until gpt2_tokenizer_free), and its kind; NULL for an id the
 * tokenizer lacks (a hole, or out of range).
 */
const char *gpt2_tokenizer_token_text(const gpt2_tokenizer *t, int32_t id,
                                      size_t *len, int *kind);

/*
 * The merges in rank order as pairs of ids (left, right): *pairs gets 2 *
 * *n ids, malloc'd (the caller frees it). 0, or -1 with a message.
 */
int gpt2_tokenizer_merge_pairs(const gpt2_tokenizer *t, int32_t **pairs,
                               size_t *n, char *err, size_t errlen);

#endif
