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
			stinfo_json_error(path, &err, printed);
		}
		return rc;
	}
	int rc = describe_checkpoint(path, o, printed, &err);
	if (rc != CLI_OK) {
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
		int rc = o.mode == MODE_CHECK ? stinfo_check(argv[i], json, array, &printed)
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
