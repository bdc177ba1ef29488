/*
 * check.c - stinfo --check (stinfo.h): libst's full check of a path
 * (st_check_path, st_gguf_check_set), then what config.json implies and
 * the quantized weights' scales (common/inventory.h, quant_info.h), each
 * problem printed on stderr with a verdict line, or (--json) gathered
 * into the path's JSON entry.
 */
#include "stinfo/stinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ckpt.h"
#include "common/gguf_info.h"
#include "common/inventory.h"
#include "common/quant_info.h"
#include "fe/cli.h"

/* ---- --check ----------------------------------------------------------- */

struct check_problem {
	int severity;
	char *message;
};

struct check_ctx {
	int errors, warnings;
	int json; /* keep the problems for the document instead of printing */
	struct check_problem *list;
	size_t n, cap;
};

static void on_problem(void *ctx, int severity, const char *message)
{
	struct check_ctx *cc = ctx;
	if (severity == ST_PROBLEM_WARNING)
		cc->warnings++;
	else
		cc->errors++;
	if (cc->json) {
		if (cc->n == cc->cap) {
			cc->cap = cc->cap ? 2 * cc->cap : 16;
			cc->list = cli_xrealloc(cc->list, cc->cap * sizeof *cc->list);
		}
		cc->list[cc->n].severity = severity;
		cc->list[cc->n++].message = cli_xstrdup(message);
		return;
	}
	/* Messages come from file contents: keep them on one line. */
	char *m = cli_printable(message, strlen(message));
	if (severity == ST_PROBLEM_WARNING)
		cli_warn("warning: %s", m);
	else
		cli_warn("%s", m);
	free(m);
}

static void check_ctx_free(struct check_ctx *cc)
{
	for (size_t i = 0; i < cc->n; i++)
		free(cc->list[i].message);
	free(cc->list);
}

static void plural(char *buf, size_t size, int n, const char *what)
{
	snprintf(buf, size, "%d %s%s", n, what, n == 1 ? "" : "s");
}

/*
 * What config.json implies (every missing or misshapen parameter) and
 * every scaled weight with its scale, as stconvert --to pairs them, of
 * the checkpoint at PATH, opened once for both. A checkpoint that does
 * not open for a reason of its format has had its errors reported by the
 * check; one that cannot be read, or a config.json that cannot, is an
 * error (CLI_ERROR, err saying why), never a pass. From standard input
 * (in), the file the check opened is used (NULL: it broke a rule).
 */
static int check_checkpoint(const char *path, int in, st_file *f, struct check_ctx *cc,
                            st_error *err)
{
	st_checkpoint *ck;
	if (in && !f)
		return CLI_OK;
	int rc = in ? st_checkpoint_from_file(&ck, f, err)
	            : st_checkpoint_open(&ck, path, ST_OPEN_TORCH, err);
	if (rc == ST_EIO || rc == ST_ENOMEM)
		return CLI_ERROR;
	if (rc != ST_OK)
		return CLI_OK;
	int n = inventory_check(ck, path, on_problem, cc, err);
	if (n >= 0)
		n = quant_info_check(ck, on_problem, cc, err);
	st_checkpoint_close(ck);
	return n < 0 ? CLI_ERROR : CLI_OK;
}

/*
 * The file and the tensor a problem names, for --check --json. libst
 * writes each message as "<file>: <what>", a tensor's naming it as
 * "tensor '<name>'" (SPEC.md, STYLE.md 4): the file is the text up to the
 * first ": " after path (the shards and the index of a snapshot PATH lie
 * under it; anything else gives no file), the tensor the first quoted
 * name after "tensor '", up to a quote followed by ':', ' ' or the end
 * (a name holding such a quote is cut there; "message" is whole).
 */
static void problem_where(const char *path, const char *msg, size_t *file_len,
                          const char **tensor, size_t *tensor_len)
{
	size_t n = strlen(path);
	*file_len = 0;
	*tensor = NULL;
	*tensor_len = 0;
	const char *colon = strncmp(msg, path, n) ? NULL : strstr(msg + n, ": ");
	if (!colon)
		return;
	*file_len = (size_t)(colon - msg);
	const char *t = strstr(colon, "tensor '");
	if (!t)
		return;
	t += strlen("tensor '");
	for (const char *q = strchr(t, '\''); q; q = strchr(q + 1, '\'')) {
		if (q[1] == ':' || q[1] == ' ' || q[1] == 0) {
			*tensor = t;
			*tensor_len = (size_t)(q - t);
			return;
		}
	}
}

/*
 * --check --json's entry of PATH: its verdict, counts and problems, each
 * {"kind": "error"|"warning", "file", "tensor" (or null), "message"},
 * the problems' shape of --verify --json.
 */
static void check_json(const char *path, const struct check_ctx *cc)
{
	printf("{\"schema\": %d, \"path\": ", CLI_JSON_SCHEMA);
	cli_json_string(stdout, path, strlen(path));
	printf(", \"ok\": %s, \"errors\": %d, \"warnings\": %d, \"problems\": [",
	       cc->errors ? "false" : "true", cc->errors, cc->warnings);
	for (size_t i = 0; i < cc->n; i++) {
		const char *m = cc->list[i].message, *tensor;
		size_t file_len, tensor_len;
		problem_where(path, m, &file_len, &tensor, &tensor_len);
		printf("%s\n  {\"kind\": \"%s\", \"file\": ", i ? "," : "",
		       cc->list[i].severity == ST_PROBLEM_WARNING ? "warning" : "error");
		if (file_len)
			cli_json_string(stdout, m, file_len);
		else
			fputs("null", stdout);
		fputs(", \"tensor\": ", stdout);
		if (tensor)
			cli_json_string(stdout, tensor, tensor_len);
		else
			fputs("null", stdout);
		fputs(", \"message\": ", stdout);
		cli_json_string(stdout, m, strlen(m));
		fputc('}', stdout);
	}
	fputs(cc->n ? "\n]}\n" : "]}\n", stdout);
}

static void check_text(const char *path, const struct check_ctx *cc)
{
	char *p = cli_printable(path, strlen(path));
	char e[32], w[32];
	plural(e, sizeof e, cc->errors, "error");
	plural(w, sizeof w, cc->warnings, "warning");
	if (cc->errors == 0 && cc->warnings == 0)
		printf("%s: OK\n", p);
	else if (cc->errors == 0)
		printf("%s: OK (%s)\n", p, w);
	else if (cc->warnings == 0)
		printf("%s: INVALID (%s)\n", p, e);
	else
		printf("%s: INVALID (%s, %s)\n", p, e, w);
	free(p);
}

int stinfo_check(const char *path, int json, int array, int *printed)
{
	struct check_ctx cc = {0, 0, json, NULL, 0, 0};
	st_error err;
	memset(&err, 0, sizeof err);
	/* '-': the header of standard input (no data is needed to check it). */
	int in = ckpt_is_stdin(path);
	st_file *f = NULL;
	if (in) {
		ckpt_check_stdin();
		path = CKPT_STDIN_NAME;
	}
	int n = in                       ? st_check_fd(STDIN_FILENO, path, on_problem, &cc, &f, &err)
	        : gguf_info_is_gguf(path) ? st_gguf_check_set(path, on_problem, &cc, &err)
	                                  : st_check_path(path, on_problem, &cc, &err);
	if (n < 0)
		err.code = n;
	/* Trust the count libst returns even if a callback was lost. */
	if (n > cc.errors)
		cc.errors = n;
	if (n < 0 || check_checkpoint(path, in, f, &cc, &err) != CLI_OK) {
		cli_error_path(path, &err);
		if (array)
			stinfo_json_error(path, &err, printed);
		check_ctx_free(&cc);
		return CLI_ERROR;
	}
	if (json) {
		if (*printed)
			fputs(",\n", stdout);
		*printed = 1;
		check_json(path, &cc);
	} else {
		check_text(path, &cc);
	}
	check_ctx_free(&cc);
	return cc.errors ? CLI_NO : CLI_OK;
}
