/*
 * verify.c - printing for stinfo --verify and --hash (see verify.h). The
 * verification itself is libst's st_verify_path: it is about files and
 * reusable by any program, and it never prints; this file turns its
 * result into lines, a summary and JSON, and drives the progress bar.
 */
#include "common/verify.h"

#include "fe/cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *layout_name(int layout)
{
	switch (layout) {
	case ST_VERIFY_LAYOUT_CACHE: return "cache";
	case ST_VERIFY_LAYOUT_REPO: return "repository";
	case ST_VERIFY_LAYOUT_SNAPSHOT: return "snapshot";
	case ST_VERIFY_LAYOUT_FOLDER: return "folder";
	case ST_VERIFY_LAYOUT_FILE: return "file";
	}
	return "?";
}

/* The library calls this one call at a time, from its threads. */
static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	cli_progress *p = ctx;
	p->total = total;
	cli_progress_add(p, done - p->done);
}

/* Run the verifier on one PATH; NULL (after a message) when unreadable. */
static st_verify *run(const char *path, unsigned flags, int threads,
                      const char *label, st_error *err)
{
	cli_progress prog;
	cli_progress_start(&prog, label, 0);
	st_verify_options opt = {flags, threads, on_progress, &prog};
	st_verify *v = NULL;
	int rc = st_verify_path(&v, path, &opt, err);
	cli_progress_done(&prog);
	if (rc != ST_OK) {
		cli_error_path(path, err);
		return NULL;
	}
	return v;
}

/*
 * The problems that fail a verification: all but the leftovers of a
 * writer that is gone, which are warnings, as --check calls them.
 */
static size_t n_failing(const st_verify *v)
{
	size_t n = 0;
	for (size_t i = 0; i < st_verify_n_problems(v); i++)
		n += st_verify_problem_at(v, i)->kind != ST_VERIFY_LEFTOVER;
	return n;
}

static void print_problems(const st_verify *v)
{
	for (size_t i = 0; i < st_verify_n_problems(v); i++) {
		const st_verify_problem *pr = st_verify_problem_at(v, i);
		/* Names come from the disk: keep each problem on one line. */
		char *p = cli_printable(pr->message, strlen(pr->message));
		cli_warn("%s%s", pr->kind == ST_VERIFY_LEFTOVER ? "warning: " : "", p);
		free(p);
	}
}

static void print_summary(const char *path, const st_verify *v)
{
	size_t np = n_failing(v), nw = st_verify_n_problems(v) - np;
	char *p = cli_printable(path, strlen(path));
	unsigned long long files = (unsigned long long)st_verify_n_files(v);
	printf("%s: ", p);
	if (np)
		printf("%zu problem%s", np, np == 1 ? "" : "s");
	else
		printf("OK");
	printf(" (%s; %llu file%s read, %llu bytes hashed",
	       layout_name(st_verify_layout(v)), files, files == 1 ? "" : "s",
	       (unsigned long long)st_verify_bytes_hashed(v));
	uint64_t unv = st_verify_n_unverified(v);
	if (unv)
		printf(", %llu with no hash to compare against",
		       (unsigned long long)unv);
	size_t repos = st_verify_n_repos(v);
	if (st_verify_layout(v) == ST_VERIFY_LAYOUT_CACHE)
		printf(", %zu repositor%s", repos, repos == 1 ? "y" : "ies");
	if (st_verify_no_symlinks(v))
		printf(", a cache made without symlinks");
	int folder = st_verify_layout(v) == ST_VERIFY_LAYOUT_FOLDER ||
	             st_verify_layout(v) == ST_VERIFY_LAYOUT_FILE;
	if (folder && !st_verify_has_sidecar(v))
		printf(", no SHA256SUMS");
	if (nw)
		printf(", %zu warning%s", nw, nw == 1 ? "" : "s");
	printf(")\n");
	free(p);
}

static void json_str(const char *s)
{
	cli_json_string(stdout, s, strlen(s));
}

static void print_json(const char *path, const st_verify *v)
{
	size_t np = st_verify_n_problems(v), nf = n_failing(v);
	printf("{\"schema\": %d, \"path\": ", CLI_JSON_SCHEMA);
	json_str(path);
	printf(", \"layout\": \"%s\", \"ok\": %s, \"files\": %llu, "
	       "\"bytes_hashed\": %llu, \"unverified\": %llu, \"leftovers\": %zu, "
	       "\"repositories\": %zu, \"no_symlinks\": %s, \"sidecar\": %s, "
	       "\"problems\": [",
	       layout_name(st_verify_layout(v)), nf ? "false" : "true",
	       (unsigned long long)st_verify_n_files(v),
	       (unsigned long long)st_verify_bytes_hashed(v),
	       (unsigned long long)st_verify_n_unverified(v), np - nf,
	       st_verify_n_repos(v), st_verify_no_symlinks(v) ? "true" : "false",
	       st_verify_has_sidecar(v) ? "true" : "false");
	for (size_t i = 0; i < np; i++) {
		const st_verify_problem *pr = st_verify_problem_at(v, i);
		printf("%s\n  {\"kind\": \"%s\", \"path\": ", i ? "," : "",
		       st_verify_kind_name(pr->kind));
		json_str(pr->path);
		fputs(", \"message\": ", stdout);
		json_str(pr->message);
		fputc('}', stdout);
	}
	fputs(np ? "\n]}\n" : "]}\n", stdout);
}

/* Text output of --verify: problems on stderr, then the summary. */
static void print_verify_text(const char *path, const st_verify *v)
{
	print_problems(v);
	fflush(stderr);
	print_summary(path, v);
}

/*
 * Run the verifier over every PATH and print each result with text or
 * json; several JSON documents make one array. Returns the exit code.
 */
static int each_path(char *const *paths, int n, int json, int threads,
                     unsigned flags, const char *label,
                     void (*text)(const char *, const st_verify *),
                     void (*doc)(const char *, const st_verify *))
{
	int status = CLI_OK, printed = 0;
	if (json && n > 1)
		fputs("[\n", stdout);
	for (int i = 0; i < n; i++) {
		st_error err;
		st_verify *v = run(paths[i], flags, threads, label, &err);
		if (!v)
			status = CLI_ERROR;
		/* In an array, an unreadable PATH has its entry too. */
		if (!v && !(json && n > 1))
			continue;
		if (json && printed++)
			fputs(",\n", stdout);
		if (!v) {
			cli_json_error(stdout, paths[i], &err);
			putchar('\n');
			continue;
		}
		(json ? doc : text)(paths[i], v);
		if (n_failing(v) && status < CLI_NO)
			status = CLI_NO;
		/* A read that failed is no answer: an I/O error, as for --check. */
		for (size_t k = 0; k < st_verify_n_problems(v); k++)
			if (st_verify_problem_at(v, k)->kind == ST_VERIFY_READ_ERROR)
				status = CLI_ERROR;
		st_verify_free(v);
		fflush(stdout);
	}
	if (json && n > 1)
		fputs("]\n", stdout);
	return status;
}

int verify_paths(char *const *paths, int n, int json, int threads)
{
	return each_path(paths, n, json, threads, 0, "verifying",
	                 print_verify_text, print_json);
}

/*
 * A name as sha256sum writes it: a backslash or newline in it is escaped
 * and the line then starts with a backslash. On a terminal the name is
 * shown as cli_printable makes it instead (a name may hold an escape
 * sequence); to a file or a pipe the bytes are sha256sum's, so that
 * --verify and sha256sum -c read them back.
 */
static void print_sum(const char *hex, const char *name)
{
	if (isatty(STDOUT_FILENO)) {
		char *shown = cli_printable(name, strlen(name));
		printf("%s  %s\n", hex, shown);
		free(shown);
		return;
	}
	int esc = strchr(name, '\\') || strchr(name, '\n');
	printf("%s%s  ", esc ? "\\" : "", hex);
	for (const char *c = name; *c; c++) {
		if (esc && *c == '\\')
			fputs("\\\\", stdout);
		else if (esc && *c == '\n')
			fputs("\\n", stdout);
		else
			putchar(*c);
	}
	putchar('\n');
}

static void print_hash_json(const char *path, const st_verify *v)
{
	printf("{\"schema\": %d, \"path\": ", CLI_JSON_SCHEMA);
	json_str(path);
	fputs(", \"files\": [", stdout);
	for (size_t i = 0; i < st_verify_n_file_hashes(v); i++) {
		const st_verify_file *f = st_verify_file_at(v, i);
		fputs(i ? ",\n  {\"path\": " : "\n  {\"path\": ", stdout);
		json_str(f->path);
		printf(", \"size\": %llu, \"sha256\": \"%s\"",
		       (unsigned long long)f->size, f->sha256);
		if (f->n_tensors) {
			fputs(", \"tensors\": [", stdout);
			for (size_t t = 0; t < f->n_tensors; t++) {
				fputs(t ? ",\n    {\"name\": " : "\n    {\"name\": ", stdout);
				cli_json_string(stdout, f->tensors[t].name,
				                f->tensors[t].name_len);
				printf(", \"sha256\": \"%s\"}", f->tensors[t].sha256);
			}
			fputs("\n  ]", stdout);
		}
		fputc('}', stdout);
	}
	fputs(st_verify_n_file_hashes(v) ? "\n]}\n" : "]}\n", stdout);
}

/* Text output of --hash: sha256sum's lines; problems on stderr. */
static void print_hash_text(const char *path, const st_verify *v)
{
	(void)path;
	print_problems(v);
	for (size_t k = 0; k < st_verify_n_file_hashes(v); k++) {
		const st_verify_file *f = st_verify_file_at(v, k);
		print_sum(f->sha256, f->path);
	}
}

/* JSON output of --hash: problems on stderr, the document on stdout. */
static void print_hash_doc(const char *path, const st_verify *v)
{
	print_problems(v);
	print_hash_json(path, v);
}

int verify_hash_paths(char *const *paths, int n, int json, int threads)
{
	unsigned flags = ST_VERIFY_HASH | (json ? ST_VERIFY_TENSORS : 0);
	return each_path(paths, n, json, threads, flags, "hashing",
	                 print_hash_text, print_hash_doc);
}
