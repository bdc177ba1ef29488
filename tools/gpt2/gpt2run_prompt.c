/*
 * gpt2run_prompt.c - gpt2run's prompt: --ids, and the text of --prompt
 * or --prompt-file encoded (gpt2run.h).
 */
#include "gpt2/gpt2run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fe/cli.h"
#include "fe/paths.h"

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

int32_t *gpt2run_encode_prompt(gpt2_tokenizer *tok, const struct gpt2run_options *o, size_t *n)
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
	if (gpt2_tokenizer_encode(tok, text, len, GPT2_ENCODE_ADD_SPECIAL, &ids, n, &replaced, err,
	                          sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	if (replaced)
		cli_warn("the prompt holds %zu invalid UTF-8 sequence%s, replaced "
		         "by U+FFFD",
		         replaced, replaced == 1 ? "" : "s");
	free(owned);
	return ids;
}

static int has_file(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

void gpt2run_check_model_path(const char *dir)
{
	int kind;
	st_error e;
	if (st_sniff_path(dir, &kind, &e) != ST_OK)
		cli_die(CLI_ERROR, "%s", e.message);
	switch (kind) {
	case ST_KIND_DIRECTORY:
	case ST_KIND_SAFETENSORS:
	case ST_KIND_JSON: /* a shard index */
	case ST_KIND_ZIP:  /* PyTorch checkpoints */
	case ST_KIND_PICKLE:
	case ST_KIND_TAR: return;
	case ST_KIND_GGUF:
		cli_die(CLI_ERROR,
		        "%s: this is a GGUF file, not a snapshot: %s runs a Hugging "
		        "Face snapshot folder (config.json and safetensors); "
		        "'gpt2export %s DIR' turns a GPT-2 GGUF into one",
		        dir, cli_progname(), dir);
	default:
		cli_die(CLI_ERROR,
		        "%s: this is %s, not a snapshot folder, a safetensors file "
		        "or a shard index",
		        dir, st_kind_name(kind));
	}
}

gpt2_tokenizer *gpt2run_load_tokenizer(const struct gpt2run_options *o, int for_output,
                                       int gpt2_fallback)
{
	const char *dir = o->tokenizer_dir ? o->tokenizer_dir : o->model_dir;
	gpt2_tokenizer *tok;
	char err[1024], err2[1024];
	if (o->tokenizer_dir) {
		/* A tokenizer.json, a snapshot folder or a .gguf file. */
		if (gpt2_tokenizer_open(&tok, dir, err, sizeof err) != 0)
			cli_die(CLI_ERROR, "%s", err);
		return tok;
	}
	if (gpt2_tokenizer_load(&tok, dir, err, sizeof err) == 0)
		return tok;
	const char *fallback = paths_gpt2_tokenizer_dir(NULL);
	if (fallback && gpt2_fallback && !has_file(dir, "tokenizer.json") &&
	    !has_file(dir, "vocab.json") && !has_file(dir, "merges.txt")) {
		if (gpt2_tokenizer_load(&tok, fallback, err2, sizeof err2) != 0)
			cli_die(CLI_ERROR, "%s", err2);
		cli_warn("%s: no tokenizer files; using the GPT-2 tokenizer in %s", dir, fallback);
		return tok;
	}
	cli_die(CLI_ERROR, "%s (give --tokenizer PATH%s)", err,
	        for_output ? ", or --print-ids" : "");
}
