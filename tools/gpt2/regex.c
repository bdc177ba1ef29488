/*
 * regex.c - Oniguruma behind regex.h. Hugging Face `tokenizers` compiles
 * its patterns with the onig crate's Regex::new: ONIG_OPTION_NONE and
 * ONIG_SYNTAX_DEFAULT over UTF-8, the same as here, so a pattern means
 * what it means there.
 */
#include "gpt2/regex.h"
#include "gpt2/internal.h"

#include <oniguruma.h>
#include <stdlib.h>

struct gpt2_regex {
	regex_t *re;
	OnigRegion *region;
};

int gpt2_regex_new(gpt2_regex **out, const char *pattern, size_t len, char *err, size_t errlen)
{
	*out = NULL;
	gpt2_regex *r = calloc(1, sizeof *r);
	if (!r)
		return gpt2_err(err, errlen, "out of memory");
	const OnigUChar *p = (const OnigUChar *)pattern;
	OnigErrorInfo info;
	int rc = onig_new(&r->re, p, p + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
	                  ONIG_SYNTAX_DEFAULT, &info);
	if (rc != ONIG_NORMAL) {
		OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
		onig_error_code_to_str(msg, rc, &info);
		free(r);
		return gpt2_err(err, errlen, "%s", (const char *)msg);
	}
	r->region = onig_region_new();
	if (!r->region) {
		onig_free(r->re);
		free(r);
		return gpt2_err(err, errlen, "out of memory");
	}
	*out = r;
	return 0;
}

void gpt2_regex_free(gpt2_regex *r)
{
	if (!r)
		return;
	onig_region_free(r->region, 1);
	onig_free(r->re);
	free(r);
}

int gpt2_regex_find(gpt2_regex *r, const char *s, size_t len, size_t from, size_t *start,
                    size_t *end)
{
	const OnigUChar *b = (const OnigUChar *)s, *e = b + len;
	int rc = onig_search(r->re, b, e, b + from, e, r->region, ONIG_OPTION_NONE);
	if (rc == ONIG_MISMATCH)
		return 0;
	if (rc < 0)
		return -1;
	*start = (size_t)r->region->beg[0];
	*end = (size_t)r->region->end[0];
	return 1;
}
