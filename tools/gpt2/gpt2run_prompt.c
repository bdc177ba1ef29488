/*
 * gpt2run_prompt.c - gpt2run's prompt: --ids, and the text of --prompt
 * or --prompt-file encoded (gpt2run.h).
 */
#include "gpt2/gpt2run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"

/* "1,2, 3" -> ids; a usage error for anything else. */
int32_t *gpt2run_parse_ids(const char *s, size_t *n_out)
{
	size_t cap = 16, n = 0;
	int32_t *ids = cli_xmalloc(cap * sizeof *ids);
	const char *p = s;
	for (;;) {
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			goto bad;
		long v = 0;
		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p++ - '0');
			if (v > INT32_MAX) {
				free(ids); /* no leak at exit for valgrind to report */
				cli_usage_error("--ids: token id too large in '%s'", s);
			}
		}
		if (n == cap) {
			cap *= 2;
			ids = cli_xrealloc(ids, cap * sizeof *ids);
		}
		ids[n++] = (int32_t)v;
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		if (*p++ != ',')
			goto bad;
	}
	*n_out = n;
	return ids;
bad:
	free(ids);
	cli_usage_error("--ids: expected comma-separated token ids, got '%s'", s);
}

/* The whole of FILE ('-': stdin), byte for byte. */
static char *read_all(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f)
		cli_die(CLI_ERROR, "%s: %s", path, strerror(errno));
	size_t cap = 4096, n = 0;
	char *buf = cli_xmalloc(cap);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = cli_xrealloc(buf, cap);
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
		cli_die(CLI_ERROR, "%s: read error: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	*len = n;
	return buf;
}

int32_t *gpt2run_encode_prompt(gpt2_tokenizer *tok,
                               const struct gpt2run_options *o, size_t *n)
{
	const char *text = o->prompt;
	char *owned = NULL;
	size_t len = text ? strlen(text) : 0;
	if (o->prompt_file)
		text = owned = read_all(o->prompt_file, &len);
	int32_t *ids = NULL;
	size_t replaced = 0;
	char err[512];
	/* With the special tokens the tokenizer's files ask for (a BOS for
	 * Llama), as Hugging Face's encode by default; GPT-2 asks for none. */
	if (gpt2_tokenizer_encode(tok, text, len, GPT2_ENCODE_ADD_SPECIAL, &ids, n, &replaced,
	                          err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	if (replaced)
		cli_warn("the prompt holds %zu invalid UTF-8 sequence%s, replaced "
		         "by U+FFFD", replaced, replaced == 1 ? "" : "s");
	free(owned);
	return ids;
}
