/*
 * stinfo.c - look inside a safetensors checkpoint: a human summary, a JSON
 * document, a full validity check (--check), per-tensor statistics
 * (--stats), or offline integrity of downloads (--verify, --hash: libst's
 * st_verify_path, printed by common/verify.c).
 *
 * This file is the tool's front: options and the loop over PATHs. Parsing, validation, shard indexes, dtype conversion, the
 * config-aware inventory and the quantized layouts are libst's
 * (st_checkpoint_open, st_check_path, st_convert, st_arch_inventory,
 * st_quant_summary_load); the summary, the JSON document and the
 * statistics run are in tools/stinfo/ (stinfo.h). The summary and --json
 * read only the headers, so a 300 GB checkpoint answers in milliseconds.
 */
#include "fe/cli.h"
#include "common/ckpt.h"
#include "common/gguf_info.h"
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
	int verbose; /* every shard's lines */
	int markdown; /* GitHub tables */
	const char **globs; /* --tensors */
	size_t n_globs;
	const char *dump;   /* --dump NAME */
	const char *output; /* --output FILE: --dump's .npy */
	int memory;        /* --memory */
	uint64_t context;  /* --context N: tokens of KV cache (0: none) */
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
"or tar; its pickle is read, never executed) or a GGUF file (*.gguf; any\n"
"part of a split set NAME-0000k-of-0000N.gguf stands for the whole set).\n"
"PATH - reads a safetensors file from standard input (a pipe or a redirect;\n"
"named <stdin>); --stats and --dump copy a pipe to a temporary file first.\n"
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
"  -v, --verbose      list every shard's header, data and metadata (without\n"
"                     it, the shards of a sharded checkpoint are one line)\n"
"  -T, --tensors GLOB only tensors whose name matches GLOB (repeatable; as\n"
"                     stdiff --tensors: fnmatch, '*' crosses dots) in the\n"
"                     tables, --stats and --json\n"
"  -m, --markdown     print the summary's tables as GitHub Markdown tables\n"
"      --memory       the bytes to load the weights with the floats in F32,\n"
"                     BF16, F16 or FP8 (integers and quantized layouts as\n"
"                     stored) and, from a GPT-2 or Llama-family config.json,\n"
"                     the KV cache a token\n"
"      --context N    with --memory: the KV cache for N tokens too\n"
"      --dump NAME    print tensor NAME's values, a row of its last dimension\n"
"                     a line (8- and 4-bit floats and GGUF block types\n"
"                     decoded to F32); one PATH\n"
"      --output FILE  with --dump: write the values to FILE as a NumPy .npy\n"
"                     file instead (the dtype kept where numpy has it, else\n"
"                     F32)\n"
"      --json         print one JSON document (an array of them for\n"
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
"  -j, --threads N    worker threads for --stats, --verify and --hash\n"
"                     (default: CPUs online)\n"
"  -q, --quiet        print nothing on standard output: the exit status is\n"
"                     the answer (with --check and --verify); errors still\n"
"                     go to standard error\n"
"  -h, --help         print this help and exit\n"
"  -V, --version      print the version and exit\n"
"\n"
"Exit status: 0 success (a valid file for --check), 1 an invalid file for\n"
"--check or a problem for --verify and --hash, 2 usage error, unreadable or\n"
"invalid input, I/O error.\n");
}

/* ---- main -------------------------------------------------------------- */

/* A --tensors that selects nothing is more likely a typo than an answer. */
static void warn_no_match(const char *path, const struct options *o)
{
	char *p = cli_printable(path, strlen(path));
	char *g = cli_printable(o->globs[0], strlen(o->globs[0]));
	cli_warn("%s: no tensor matches --tensors '%s'%s", p, g,
	         o->n_globs > 1 ? " (or the others)" : "");
	free(g);
	free(p);
}

/*
 * Summary or JSON of the checkpoint at path (not GGUF); CLI_OK, or
 * CLI_ERROR with err saying why (err untouched when it printed why).
 */
static int describe_checkpoint(const char *path, const struct options *o, int *printed,
                               st_error *err)
{
	st_checkpoint *ck;
	if (ckpt_is_stdin(path)) {
		/* Only --stats and --dump read the data: the rest is the header's. */
		if (ckpt_open_stdin(&ck, !o->stats && !o->dump, o->n_keys, err) != ST_OK)
			return CLI_ERROR;
		path = CKPT_STDIN_NAME;
	} else if (st_checkpoint_open_key(&ck, path, ST_OPEN_TORCH, o->keys, o->n_keys, err) !=
	           ST_OK)
		return CLI_ERROR;
	if (o->dump) {
		int rc = stinfo_dump(ck, path, o->dump, o->output);
		st_checkpoint_close(ck);
		return rc;
	}
	if (o->memory) {
		if (o->mode == MODE_SUMMARY && *printed)
			putchar('\n');
		if (o->mode == MODE_JSON && *printed)
			fputs(",\n", stdout);
		int rc = stinfo_memory(path, ck, o->context, o->mode == MODE_JSON, o->markdown);
		*printed |= rc == 0;
		st_checkpoint_close(ck);
		return rc ? CLI_ERROR : CLI_OK;
	}
	unsigned char *sel;
	size_t n_sel = stinfo_select(ck, o->globs, o->n_globs, &sel);
	if (o->n_globs && n_sel == 0) {
		warn_no_match(path, o);
		free(sel);
		st_checkpoint_close(ck);
		return CLI_ERROR;
	}
	st_stats *accs = NULL;
	if (o->stats) {
		accs = cli_xcalloc(st_checkpoint_n_tensors(ck), sizeof *accs);
		if (stinfo_stats(ck, sel, o->threads, accs, err) != 0) {
			free(accs);
			free(sel);
			st_checkpoint_close(ck);
			return CLI_ERROR;
		}
	}
	if (o->mode == MODE_SUMMARY && *printed)
		putchar('\n');
	if (o->mode == MODE_JSON && *printed)
		fputs(",\n", stdout); /* several PATHs: one array */
	*printed = 1;
	struct stinfo_view v = {o->all, o->verbose, o->markdown, sel, n_sel};
	if (o->mode == MODE_JSON)
		stinfo_json(ck, sel, accs);
	else
		stinfo_summary(path, ck, &v, accs);
	free(accs);
	free(sel);
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
	if (!ckpt_is_stdin(path) && gguf_info_is_gguf(path)) {
		if (o->dump)
			return stinfo_dump_gguf(path, o->dump, o->output);
		if (o->memory) {
			if (o->mode == MODE_SUMMARY && *printed)
				putchar('\n');
			if (o->mode == MODE_JSON && *printed)
				fputs(",\n", stdout);
			int rc = stinfo_memory_gguf(path, o->context, o->mode == MODE_JSON, o->markdown);
			*printed |= rc == 0;
			return rc ? CLI_ERROR : CLI_OK;
		}
		struct gguf_info_view v = {o->all, o->mode == MODE_JSON, o->stats, o->markdown,
		                           o->globs, o->n_globs, o->threads};
		int rc = gguf_info_describe(path, &v, printed);
		if (rc == GGUF_INFO_NO_MATCH) {
			warn_no_match(path, o);
			return CLI_ERROR;
		}
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
			stinfo_json_error(path, &err, printed);
		}
		return rc;
	}
	/* err stays ST_OK when the failure has been said already (--dump,
	 * --memory, a --tensors that selects nothing). */
	memset(&err, 0, sizeof err);
	int rc = describe_checkpoint(path, o, printed, &err);
	if (ckpt_is_stdin(path))
		path = CKPT_STDIN_NAME;
	if (rc != CLI_OK && err.code != ST_OK) {
		cli_error_path(path, &err);
		if (array)
			stinfo_json_error(path, &err, printed);
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"all", no_argument, NULL, 'a'},
		{"verbose", no_argument, NULL, 'v'},
		{"tensors", required_argument, NULL, 'T'},
		{"markdown", no_argument, NULL, 'm'},
		{"memory", no_argument, NULL, 'M'},
		{"context", required_argument, NULL, 'C'},
		{"dump", required_argument, NULL, 'D'},
		{"output", required_argument, NULL, 'o'},
		{"json", no_argument, NULL, 'J'},
		{"check", no_argument, NULL, 'c'},
		{"stats", no_argument, NULL, 's'},
		{"threads", required_argument, NULL, 'j'},
		{"quiet", no_argument, NULL, 'q'},
		{"key", required_argument, NULL, 'K'},
		{"verify", no_argument, NULL, 'Y'},
		{"hash", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const char *keys[64];
	struct options o = {.mode = MODE_SUMMARY, .keys = keys};
	o.globs = cli_xmalloc((size_t)argc * sizeof *o.globs);
	int json = 0, check = 0, verify = 0, hash = 0, quiet = 0, ch;

	cli_init("stinfo");
	while ((ch = cli_getopt(argc, argv, "avT:mcsj:qhV", longopts)) != -1) {
		switch (ch) {
		case 'a': o.all = 1; break;
		case 'v': o.verbose = 1; break;
		case 'T': o.globs[o.n_globs++] = optarg; break;
		case 'm': o.markdown = 1; break;
		case 'M': o.memory = 1; break;
		case 'D': o.dump = optarg; break;
		case 'o': o.output = optarg; break;
		case 'C':
			if (cli_parse_u64(optarg, &o.context) != 0 || o.context == 0)
				cli_usage_error("--context: '%s' is not a token count (1 or more)",
				                optarg);
			break;
		case 'J': json = 1; break;
		case 'c': check = 1; break;
		case 's': o.stats = 1; break;
		case 'K':
			if (o.n_keys == sizeof keys / sizeof keys[0])
				cli_usage_error("--key: at most 64 levels");
			keys[o.n_keys++] = optarg;
			break;
		case 'Y': verify = 1; break;
		case 'H': hash = 1; break;
		case 'j': o.threads = cli_opt_threads(optarg, 256); break;
		case 'q': quiet = 1; break;
		case 'h':
			usage();
			free(o.globs);
			return cli_exit(CLI_OK);
		case 'V':
			cli_version();
		}
	}
	cli_operands(argc, argv, optind, 1, -1, (const char *const[]){"PATH"});
	for (int i = optind, seen = 0; i < argc; i++)
		if (ckpt_is_stdin(argv[i]) && seen++)
			cli_usage_error("'-' (standard input) can be read once: give it once");
	if (check && (o.stats || o.all))
		cli_usage_error("--check cannot be combined with --stats or --all");
	if ((verify || hash) && (check || o.stats || o.all || (verify && hash)))
		cli_usage_error("--verify and --hash go alone (or with --json, --threads)");
	if ((check || verify || hash) && (o.n_globs || o.markdown || o.verbose))
		cli_usage_error("--tensors, --markdown and --verbose describe; they do not go "
		                "with --check, --verify or --hash");
	if (o.markdown && json)
		cli_usage_error("--markdown and --json are two outputs: choose one");
	if (o.output && !o.dump)
		cli_usage_error("--output goes with --dump");
	if (o.dump && (argc - optind != 1 || check || verify || hash || json || o.stats ||
	               o.all || o.n_globs || o.verbose || o.markdown || o.memory))
		cli_usage_error("--dump NAME takes one PATH (and --output, --key)");
	if (o.context && !o.memory)
		cli_usage_error("--context goes with --memory");
	if (o.memory && (check || verify || hash || o.stats || o.all || o.n_globs || o.verbose))
		cli_usage_error("--memory goes alone (or with --context, --json, --markdown)");
	if (quiet)
		cli_quiet_stdout();
	if (verify || hash) {
		for (int i = optind; i < argc; i++)
			ckpt_refuse_stdin(argv[i], verify ? "--verify" : "--hash");
		int threads = o.threads ? o.threads : cli_default_threads(64);
		int n = argc - optind;
		free(o.globs);
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
		int rc = o.mode == MODE_CHECK ? stinfo_check(argv[i], json, array, &printed)
		                              : describe_path(argv[i], &o, array, &printed);
		/* Several paths: an unreadable one (2) outweighs an invalid one (1). */
		if (rc > status)
			status = rc;
		fflush(stdout);
	}
	if (array)
		fputs("]\n", stdout);
	free(o.globs);
	return cli_exit(status);
}
