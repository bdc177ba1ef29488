/*
 * regex.h - the one door to Oniguruma, the regex engine Hugging Face
 * `tokenizers` runs its Split pre-tokenizer patterns with (\p{L}, \p{N},
 * (?i:...), \s+(?!\S)): compile a pattern, find its matches in UTF-8 text
 * the way tokenizers' SysRegex::find_iter walks them. Internal to the
 * tokenizer (tokenizer*.c); not part of libst.
 *
 * It is not a general regex API: UTF-8 only, Oniguruma's default (Ruby)
 * syntax, no captures. A compiled pattern holds its match region, so one
 * gpt2_regex is used by one thread at a time (as its tokenizer is); the
 * first gpt2_regex_new sets up Oniguruma's global tables, so the first
 * tokenizer is best loaded before threads start loading others.
 */
#ifndef ST_GPT2_REGEX_H
#define ST_GPT2_REGEX_H

#include <stddef.h>

typedef struct gpt2_regex gpt2_regex;

/*
 * Compile pattern (len bytes of UTF-8). 0 and *out (free with
 * gpt2_regex_free), or -1 with Oniguruma's message in err.
 */
int gpt2_regex_new(gpt2_regex **out, const char *pattern, size_t len, char *err, size_t errlen);

/* Free; NULL does nothing. */
void gpt2_regex_free(gpt2_regex *r);

/*
 * The first match in s[from, len) (s is valid UTF-8 of len bytes):
 * 1 with its bounds in *start, *end; 0 when there is none; -1 when the
 * engine fails (out of memory, a match limit). An empty match is
 * reported as such: a caller walking the matches resumes one character
 * further, as find_iter does.
 */
int gpt2_regex_find(gpt2_regex *r, const char *s, size_t len, size_t from, size_t *start,
                    size_t *end);

#endif
