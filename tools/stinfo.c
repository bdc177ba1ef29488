/*
 * stinfo.c - look inside a safetensors checkpoint: a human summary, a JSON
 * document, a full validity check (--check), per-tensor statistics
 * (--stats), or offline integrity of downloads (--verify, --hash: libst's
 * st_verify_path, printed by common/verify.c).
 *
 * This file is the tool's front: options, --check and the loop over
 * PATHs. Parsing, validation, shard indexes, dtype conversion, the
 * config-aware inventory and the quantized layouts are libst's
 * (st_checkpoint_open, st_check_path, st_convert, st_arch_inventory,
 * st_quant_summary_load); the summary, the JSON document and the
 * statistics run are in tools/stinfo/ (stinfo.h). The summary and --json
 * read only the headers, so a 300 GB checkpoint answers in milliseconds.
 */
#include "fe/cli.h"
#include "common/ckpt.h"
#include "common/gguf_info.h"
#include "common/inventory.h"
#include "common/quant_info.h"
#include "common/verify.h"
#include "stinfo/stinfo.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

enum mode { MODE_SUMMARY, MODE_JSON, MODE_CHECK };

struct options {
	enum mode mode;
	int all;     /* list every tensor instead of compacting layers */
	int stats;   /* read the data and compute statistics */
	int threads; /* statistics worker threads */
	const char **keys; /* --key: a PyTorch checkpoint's sub-dictionary */
	size_t n_keys;
};

static void usage(void)
{
	printf(
"Usage: stinfo [OPTION]... PATH...\n"
"Describe safetensors checkpoints: files, metadata, tensors, parameters.\n"
"\n"
"PATH is a .safetensors file, a shard index (*.safetensors.index.json), a\n"
"snapshot directory, a PyTorch checkpoint (pytorch_model.bin: zip, legacy\n"
"or tar; its pickle is read, never executed) or a GGUF file (*.gguf).\n"
"Without options, print a summary read from the headers only, with\n"
"repeated layers shown once (h.{0..11}.attn.c_attn.weight), and, with a\n"
"GPT-2 or Llama-family config.json beside it, the parameters it implies:\n"
"counted, missing, misshapen and extra; for a GGUF file its metadata too,\n"
"long arrays shown as their type and length (--all: whole). Quantized\n"
"weights (FP8 with block, per-channel or per-tensor scales; MXFP4) are\n"
"named by layout, with the parameters counted without the scales.\n"
"\n"
"Options:\n"
"  -a, --all          list every tensor instead of compacting repeated layers\n"
"  -j, --json         print one JSON document (an array of them for\n"
"                     several PATHs)\n"
"  -c, --check        validate every rule of the format and of the shard\n"
"                     index, every parameter config.json implies (missing\n"
"                     or misshapen) and every quantized weight's scale\n"
"                     (missing, unused, of the wrong dtype or shape);\n"
"                     print each problem (with --json, as one JSON\n"
"                     document); exit 1 if any\n"
"  -s, --stats        read the data too: min, max, mean, std and NaN, Inf and\n"
"                     zero counts per tensor (8- and 4-bit floats decoded)\n"
"      --verify       hash every file against the name it is stored under\n"
"                     (Hugging Face cache) or its SHA256SUMS entry, then\n"
"                     --check each weight file; PATH may also be a cache\n"
"                     root, a models--ORG--NAME folder or a plain folder;\n"
"                     exit 1 if any problem\n"
"      --hash         print each file's SHA-256 as sha256sum does (with\n"
"                     --json, also each tensor's)\n"
"      --key K        read a PyTorch checkpoint's sub-dictionary K\n"
"                     (repeatable for deeper levels, or K1.K2); without it a\n"
"                     checkpoint whose tensors are all under state_dict,\n"
"                     model, module or model_state_dict is read from there\n"
"  -t, --threads N    worker threads for --stats, --verify and --hash\n"
"                     (default: CPUs online)\n"
"  -h, --help         print this help and exit\n"
"  -V, --version      print the version and exit\n"
"\n"
"Exit status: 0 success (a valid file for --check), 1 an invalid file for\n"
"--check or a problem for --verify and --hash, 2 usage error, unreadable or\n"
"invalid input, I/O error.\n");
}

/* ---- --json entries ---------------------------------------------------- */

/*
 * A PATH that could not be read, in a --json run of several: an entry of
 * the array, {"path": ..., "error": ...}, the error the line on stderr
 * says, so that every PATH has its entry.
 */
static void json_error_entry(const char *path, const st_error *err, int *printed)
{
	if (*printed)
		fputs(",\n", stdout);
	*printed = 1;
	cli_json_error(stdout, path, err);
	putchar('\n');
}

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
 * error (CLI_ERROR, err saying why), never a pass.
 */
static int check_checkpoint(const char *path, struct check_ctx *cc, st_error *err)
{
	st_checkpoint *ck;
	int rc = st_checkpoint_open(&ck, path, ST_OPEN_TORCH, err);
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
	fputs("{\"path\": ", stdout);
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

/*
 * The check of one path; returns the exit code for it. json: its entry
 * of the document (array says several PATHs, where a path that cannot be
 * read has an entry too); *printed as for describe_path.
 */
static int check_path(const char *path, int json, int array, int *printed)
{
	struct check_ctx cc = {0, 0, json, NULL, 0, 0};
	st_error err;
	memset(&err, 0, sizeof err);
	int n = gguf_info_is_gguf(path)
	            ? st_gguf_check_file(path, on_problem, &cc, &err)
	            : st_check_path(path, on_problem, &cc, &err);
	if (n < 0)
		err.code = n;
	/* Trust the count libst returns even if a callback was lost. */
	if (n > cc.errors)
		cc.errors = n;
	if (n < 0 || check_checkpoint(path, &cc, &err) != CLI_OK) {
		cli_error_path(path, &err);
		if (array)
			json_error_entry(path, &err, printed);
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

/* ---- main -------------------------------------------------------------- */

/*
 * Summary or JSON of the checkpoint at path (not GGUF); CLI_OK, or
 * CLI_ERROR with err saying why.
 */
static int describe_checkpoint(const char *path, const struct options *o, int *printed,
                               st_error *err)
{
	st_checkpoint *ck;
	if (st_checkpoint_open_key(&ck, path, ST_OPEN_TORCH, o->keys, o->n_keys, err) != ST_OK)
		return CLI_ERROR;
	st_stats *accs = NULL;
	if (o->stats) {
		accs = cli_xcalloc(st_checkpoint_n_tensors(ck), sizeof *accs);
		if (stinfo_stats(ck, o->threads, accs, err) != 0) {
			free(accs);
			st_checkpoint_close(ck);
			return CLI_ERROR;
		}
	}
	if (o->mode == MODE_SUMMARY && *printed)
		putchar('\n');
	if (o->mode == MODE_JSON && *printed)
		fputs(",\n", stdout); /* several PATHs: one array */
	*printed = 1;
	if (o->mode == MODE_JSON)
		stinfo_json(ck, accs);
	else
		stinfo_summary(path, ck, o->all, accs);
	free(accs);
	st_checkpoint_close(ck);
	return CLI_OK;
}

/*
 * Summary or JSON for one path; returns the exit code for it. *printed
 * says whether an earlier path printed a summary or an entry, which a
 * blank line or a comma then separates from this one. A path that fails
 * prints its error on stderr, and in a JSON array its entry.
 */
static int describe_path(const char *path, const struct options *o, int array, int *printed)
{
	st_error err;
	if (gguf_info_is_gguf(path)) {
		int rc = gguf_info_describe(path, o->all, o->mode == MODE_JSON, o->stats, printed);
		/*
		 * Only the open fails there, and it has printed why: the entry
		 * takes the same error from a second open of the header.
		 */
		if (rc != CLI_OK && array) {
			st_gguf *g;
			if (st_gguf_open(&g, path, &err) == ST_OK) {
				st_gguf_close(g);
				snprintf(err.message, sizeof err.message, "%s: cannot be read", path);
			}
			json_error_entry(path, &err, printed);
		}
		return rc;
	}
	int rc = describe_checkpoint(path, o, printed, &err);
	if (rc != CLI_OK) {
		cli_error_path(path, &err);
		if (array)
			json_error_entry(path, &err, printed);
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"all", no_argument, NULL, 'a'},
		{"json", no_argument, NULL, 'j'},
		{"check", no_argument, NULL, 'c'},
		{"stats", no_argument, NULL, 's'},
		{"threads", required_argument, NULL, 't'},
		{"key", required_argument, NULL, 'K'},
		{"verify", no_argument, NULL, 'Y'},
		{"hash", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const char *keys[64];
	struct options o = {MODE_SUMMARY, 0, 0, 0, keys, 0};
	int json = 0, check = 0, verify = 0, hash = 0, ch;

	cli_init("stinfo");
	while ((ch = cli_getopt(argc, argv, "ajcst:hV", longopts)) != -1) {
		switch (ch) {
		case 'a': o.all = 1; break;
		case 'j': json = 1; break;
		case 'c': check = 1; break;
		case 's': o.stats = 1; break;
		case 'K':
			if (o.n_keys == sizeof keys / sizeof keys[0])
				cli_usage_error("--key: at most 64 levels");
			keys[o.n_keys++] = optarg;
			break;
		case 'Y': verify = 1; break;
		case 'H': hash = 1; break;
		case 't': o.threads = cli_opt_threads(optarg, 256); break;
		case 'h':
			usage();
			return cli_exit(CLI_OK);
		case 'V':
			cli_version();
		}
	}
	if (optind >= argc)
		cli_usage_error("missing PATH");
	if (check && (o.stats || o.all))
		cli_usage_error("--check cannot be combined with --stats or --all");
	if ((verify || hash) && (check || o.stats || o.all || (verify && hash)))
		cli_usage_error("--verify and --hash go alone (or with --json, --threads)");
	if (verify || hash) {
		int threads = o.threads ? o.threads : cli_default_threads(64);
		int n = argc - optind;
		return cli_exit(verify ? verify_paths(argv + optind, n, json, threads)
		                       : verify_hash_paths(argv + optind, n, json, threads));
	}
	o.mode = check ? MODE_CHECK : json ? MODE_JSON : MODE_SUMMARY;
	if (o.threads == 0)
		o.threads = cli_default_threads(64);

	int status = CLI_OK, printed = 0;
	/* One JSON document whatever the count: several PATHs make an array. */
	int array = json && argc - optind > 1;
	if (array)
		fputs("[\n", stdout);
	for (int i = optind; i < argc; i++) {
		int rc = o.mode == MODE_CHECK ? check_path(argv[i], json, array, &printed)
		                              : describe_path(argv[i], &o, array, &printed);
		/* Several paths: an unreadable one (2) outweighs an invalid one (1). */
		if (rc > status)
			status = rc;
		fflush(stdout);
	}
	if (array)
		fputs("]\n", stdout);
	return cli_exit(status);
}
