/*
 * gpt2export.c - the gpt2export tool: llm.c GPT-2 checkpoints <-> Hugging
 * Face GPT-2 snapshots, and random snapshots.
 *
 * A thin main: it parses options, picks the direction from IN and calls
 * tools/gpt2/export*.c, which do the work; --check loads both sides with
 * tools/gpt2 and compares their logits. It never holds the model except
 * for --check.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/ckpt.h"
#include "fe/cli.h"
#include "fe/paths.h"
#include "fe/signals.h"
#include "gpt2/export.h"
#include "gpt2/gguf_export.h" /* GGUF IN */

static void usage(void)
{
	printf(
"Usage: gpt2export [OPTION]... IN OUT\n"
"       gpt2export SNAPSHOT OUT.gguf [--type T]\n"
"       gpt2export IN.gguf OUT [--dtype D]\n"
"       gpt2export --random OUT [--layers L] [--heads H] [--width C]\n"
"                  [--vocab V] [--context P] [--seed S] [--dtype D]\n"
"Convert between an llm.c GPT-2 checkpoint (gpt2_124M.bin style: version 3\n"
"fp32 or version 5 bf16) and a Hugging Face GPT-2 snapshot folder, in the\n"
"direction IN implies: an llm.c .bin IN makes the snapshot folder OUT; a\n"
"snapshot IN (a folder, a .safetensors file or a shard index, with\n"
"config.json beside it) makes the llm.c checkpoint OUT.\n"
"\n"
"A snapshot holds model.safetensors (HF names, Conv1D weights [in, out],\n"
"the vocabulary padding rows dropped), config.json, generation_config.json\n"
"and the GPT-2 tokenizer files. A .bin holds llm.c's header and its\n"
"parameters in llm.c's order and layouts ([out, in] matrices, the\n"
"vocabulary padded to a multiple of 128 with zero rows). Values are copied\n"
"exactly unless --dtype asks for a narrower type. Memory: about one tensor.\n"
"\n"
"Options:\n"
"      --dtype D         output dtype: f32, bf16, or f16 (snapshots only);\n"
"                        default: as the source (a .bin is bf16, version 5,\n"
"                        only when every parameter is bf16)\n"
"      --check           after exporting, run the source and the result on\n"
"                        fixed prompts and print the max abs logit\n"
"                        difference; exit 1 if an exact export differs\n"
"      --tokenizer DIR   copy the tokenizer files from DIR (default:\n"
"                        $ST_TOKENIZER_DIR, else the copy installed with\n"
"                        libst)\n"
"      --no-tokenizer    write no tokenizer files\n"
"  -f, --force           replace an existing OUT (a file, or a folder that\n"
"                        holds anything; an empty folder is written into)\n"
"  -q, --quiet           no warnings\n"
"  -h, --help            show this help and exit\n"
"  -V, --version         show the version and exit\n"
"\n"
"GGUF (llama.cpp): an OUT ending in .gguf gets the snapshot as llama.cpp's\n"
"converter writes it (architecture gpt2, its tokenizer, llama.cpp's tensor\n"
"names, Conv1D weights transposed; LayerNorm, biases and position_embd F32):\n"
"      --type T          the matrices' type: f32, f16, bf16, q8_0, q4_0, q4_1,\n"
"                        q5_0 or q5_1 (ggml's reference quantizers; rows\n"
"                        that are not whole blocks F16); default: as the source\n"
"An IN ending in .gguf (a GPT-2 GGUF) makes the snapshot folder OUT back:\n"
"HF names and layouts, quantized types dequantized, --dtype as asked\n"
"(default: the matrices' type, F32 for a quantized type), the tokenizer\n"
"files rebuilt from the file.\n"
"\n"
"Random snapshots (GPT-2's initialisation: normal(0, 0.02), residual\n"
"projections 0.02/sqrt(2*layers), biases 0, LayerNorm weights 1; the same\n"
"seed gives the same bytes):\n"
"      --random OUT      write a random snapshot to the folder OUT\n"
"      --layers L        layers (default 12)\n"
"      --heads H         attention heads; must divide the width (default 12)\n"
"      --width C         channels, n_embd (default 768)\n"
"      --vocab V         vocabulary size (default 50257)\n"
"      --context P       context length, n_positions (default 1024)\n"
"      --seed S          random seed (default 0)\n"
"\n"
"Exit status: 0 success, 1 --check found a difference in an exact export,\n"
"2 usage error, unreadable or invalid input, I/O failure (OUT is then left\n"
"as it was), 128+N killed by signal N (likewise).\n");
}

enum {
	OPT_CHECK = 256, OPT_TOKENIZER, OPT_NO_TOKENIZER, OPT_RANDOM, OPT_LAYERS,
	OPT_HEADS, OPT_WIDTH, OPT_VOCAB, OPT_CONTEXT, OPT_SEED, OPT_TYPE
};

static const struct option options[] = {
	{"dtype", required_argument, NULL, 'D'},
	{"type", required_argument, NULL, OPT_TYPE},
	{"check", no_argument, NULL, OPT_CHECK},
	{"tokenizer", required_argument, NULL, OPT_TOKENIZER},
	{"no-tokenizer", no_argument, NULL, OPT_NO_TOKENIZER},
	{"force", no_argument, NULL, 'f'},
	{"quiet", no_argument, NULL, 'q'},
	{"random", required_argument, NULL, OPT_RANDOM},
	{"layers", required_argument, NULL, OPT_LAYERS},
	{"heads", required_argument, NULL, OPT_HEADS},
	{"width", required_argument, NULL, OPT_WIDTH},
	{"vocab", required_argument, NULL, OPT_VOCAB},
	{"context", required_argument, NULL, OPT_CONTEXT},
	{"seed", required_argument, NULL, OPT_SEED},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* An export failed: die of the signal that stopped it, or say why. */
static noreturn void export_failed(const char *err)
{
	signals_reraise();
	cli_die(CLI_ERROR, "%s", err);
}

static void print_warning(void *ctx, int severity, const char *message)
{
	(void)ctx;
	(void)severity;
	cli_warn("warning: %s", message);
}

static int parse_int(const char *opt, const char *s)
{
	uint64_t v;
	if (cli_parse_u64(s, &v) != 0 || v < 1 || v > INT_MAX)
		cli_usage_error("%s: '%s' is not a positive integer", opt, s);
	return (int)v;
}

/* A snapshot IN (else an llm.c checkpoint): a folder or safetensors names. */
static int is_snapshot(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		cli_die(CLI_ERROR, "%s: %s", path, strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return 1;
	size_t n = strlen(path);
	static const char *const suffixes[] = {".safetensors", ".json"};
	for (size_t i = 0; i < 2; i++) {
		size_t k = strlen(suffixes[i]);
		if (n >= k && strcmp(path + n - k, suffixes[i]) == 0)
			return 1;
	}
	return 0;
}

/* The folder of the tokenizer files a snapshot gets; NULL: none. */
static const char *tokenizer_source(const char *given, int none)
{
	if (none)
		return NULL;
	const char *dir = paths_gpt2_tokenizer_dir(given);
	if (!dir)
		cli_die(CLI_ERROR, "no GPT-2 tokenizer files found (give "
		        "--tokenizer DIR or --no-tokenizer)");
	return dir;
}

static gpt2_model *load_side(const char *path, int llmc, int wdtype)
{
	gpt2_model *m;
	char err[1024];
	int rc = llmc ? gpt2_export_load_llmc(&m, path, wdtype, err, sizeof err)
	              : gpt2_model_load(&m, path, wdtype, err, sizeof err);
	if (rc)
		cli_die(CLI_ERROR, "check: %s", err);
	gpt2_model_set_threads(m, cli_default_threads(8), NULL, 0);
	return m;
}

/* --check: the source and the result on the same prompts. */
static int check(const char *in, int in_llmc, const char *out,
                 const gpt2_export_result *res)
{
	gpt2_model *a = load_side(in, in_llmc, -1);
	/*
	 * An exact export holds the very same values: load the result into
	 * the source's precision so that the two forward passes must agree
	 * to the bit. A rounded one is loaded as stored, to show the cost.
	 */
	gpt2_model *b = load_side(out, !in_llmc, res->exact ? (int)a->wdtype
	                                                   : -1);
	gpt2_export_diff d;
	char err[1024];
	if (gpt2_export_compare(a, b, &d, err, sizeof err))
		cli_die(CLI_ERROR, "check: %s", err);
	gpt2_model_free(a);
	gpt2_model_free(b);
	const char *src = res->src_dtype >= 0
	                          ? st_dtype_name((st_dtype)res->src_dtype)
	                          : "mixed";
	printf("check: %d prompts, %d positions: max abs logit difference %.9g",
	       d.prompts, d.positions, d.max_abs_diff);
	if (d.nonfinite)
		printf(", %d non-finite mismatches", d.nonfinite);
	printf(" (%s -> %s, %s)\n", src, st_dtype_name(res->dst_dtype),
	       res->exact ? "exact: must be 0" : "rounded");
	if (res->exact && (d.max_abs_diff != 0 || d.nonfinite)) {
		cli_warn("check: the export changed the model's logits");
		return CLI_NO;
	}
	return CLI_OK;
}

struct gguf_ui {
	cli_progress progress; /* first: cli_progress_cb */
	int quiet;
};

/* libst's warnings (its notes, a buffer left out, are not gpt2export's). */
static void gguf_note(void *ctx, int severity, const char *message)
{
	struct gguf_ui *ui = ctx;
	if (ui->quiet || severity != ST_PROBLEM_WARNING)
		return;
	cli_progress_done(&ui->progress);
	char *m = cli_printable(message, strlen(message));
	cli_warn("warning: %s", m);
	free(m);
}

/* SNAPSHOT -> OUT.gguf: libst's st_hf_write_gguf (type -1: the source's). */
static int hf_to_gguf(const char *in, const char *out, int type, int quiet)
{
	st_hf_gguf_options go = {type >= 0, type >= 0 ? (unsigned)type : 0, 0, NULL};
	struct gguf_ui ui = {.quiet = quiet};
	st_convert_run run = {.progress = cli_progress_cb,
	                      .cancel = signals_cancel_cb,
	                      .note = gguf_note,
	                      .ctx = &ui};
	st_error err;
	cli_progress_start(&ui.progress, "exporting", 0);
	int rc = st_hf_write_gguf(in, out, &go, &run, NULL, &err);
	cli_progress_done(&ui.progress);
	if (rc != ST_OK) {
		signals_reraise();
		cli_error(&err);
		return CLI_ERROR;
	}
	return CLI_OK;
}

/* A --type value: the ggml type, or a usage error. */
static int parse_gguf_type(const char *s)
{
	static const char *const names[] = {"f32",  "f16",  "bf16", "q8_0",
	                                    "q4_0", "q4_1", "q5_0", "q5_1"};
	static const int types[] = {ST_GGML_F32,  ST_GGML_F16,  ST_GGML_BF16, ST_GGML_Q8_0,
	                            ST_GGML_Q4_0, ST_GGML_Q4_1, ST_GGML_Q5_0, ST_GGML_Q5_1};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcasecmp(s, names[i]) == 0)
			return types[i];
	cli_usage_error("--type: unknown type '%s' (expected f32, f16, bf16, q8_0, "
	                "q4_0, q4_1, q5_0 or q5_1)", s);
}

int main(int argc, char **argv)
{
	cli_init("gpt2export");
	int dtype = -1, do_check = 0, no_tokenizer = 0, quiet = 0, force = 0;
	const char *tokenizer = NULL, *random_out = NULL;
	int layers = 12, heads = 12, width = 768, vocab = 50257, context = 1024;
	int random_opts = 0, gguf_type = -1;
	uint64_t seed = 0;
	int c;
	while ((c = cli_getopt(argc, argv, "fqhV", options)) != -1) {
		switch (c) {
		case 'D':
			dtype = gpt2_dtype_parse(optarg);
			if (dtype < 0)
				cli_usage_error("--dtype: unknown dtype '%s' (expected "
				                "f32, bf16 or f16)", optarg);
			break;
		case 'f': force = 1; break;
		case 'q': quiet = 1; break;
		case OPT_CHECK: do_check = 1; break;
		case OPT_TYPE: gguf_type = parse_gguf_type(optarg); break;
		case OPT_TOKENIZER: tokenizer = optarg; break;
		case OPT_NO_TOKENIZER: no_tokenizer = 1; break;
		case OPT_RANDOM: random_out = optarg; break;
		case OPT_LAYERS: layers = parse_int("--layers", optarg); random_opts++; break;
		case OPT_HEADS: heads = parse_int("--heads", optarg); random_opts++; break;
		case OPT_WIDTH: width = parse_int("--width", optarg); random_opts++; break;
		case OPT_VOCAB: vocab = parse_int("--vocab", optarg); random_opts++; break;
		case OPT_CONTEXT: context = parse_int("--context", optarg); random_opts++; break;
		case OPT_SEED:
			if (cli_parse_u64(optarg, &seed) != 0)
				cli_usage_error("--seed: '%s' is not a non-negative "
				                "integer", optarg);
			random_opts++;
			break;
		case 'h': usage(); return cli_exit(CLI_OK);
		case 'V': cli_version();
		}
	}
	if (tokenizer && no_tokenizer)
		cli_usage_error("--tokenizer and --no-tokenizer exclude each other");

	gpt2_export_opts o;
	memset(&o, 0, sizeof o);
	o.dtype = dtype;
	o.progress = 1;
	o.warn = quiet ? NULL : print_warning;
	o.cancel = signals_caught;
	signals_catch();
	char err[1024];

	if (random_out) {
		if (optind != argc)
			cli_usage_error("--random takes no IN (one OUT folder)");
		if (do_check)
			cli_usage_error("--check compares an export with its source; "
			                "--random has none");
		gpt2_config cfg;
		memset(&cfg, 0, sizeof cfg);
		cfg.num_layers = layers;
		cfg.num_heads = heads;
		cfg.channels = width;
		cfg.vocab_size = vocab;
		cfg.max_seq_len = context;
		cfg.layer_norm_eps = 1e-5f;
		if (gpt2_config_check(&cfg, err, sizeof err))
			cli_usage_error("--random: %s", err);
		o.tokenizer_dir = tokenizer_source(tokenizer, no_tokenizer);
		cli_check_out(random_out, force);
		if (gpt2_export_random(random_out, &cfg, seed, &o, err, sizeof err))
			export_failed(err);
		return cli_exit(CLI_OK);
	}

	if (random_opts)
		cli_usage_error("--layers, --heads, --width, --vocab, --context and "
		                "--seed need --random");
	cli_operands(argc, argv, optind, 2, 2, (const char *const[]){"IN", "OUT"});
	const char *in = argv[optind], *out = argv[optind + 1];
	ckpt_refuse_stdin(in, "IN");
	gpt2_export_result res;
	if (cli_ends_with(out, ".gguf")) {
		if (do_check || dtype >= 0 || tokenizer || no_tokenizer)
			cli_usage_error("--check, --dtype and --tokenizer do not apply "
			                "to a GGUF OUT (see --type)");
		cli_check_out(out, force);
		return cli_exit(hf_to_gguf(in, out, gguf_type, quiet));
	}
	if (gguf_type >= 0)
		cli_usage_error("--type applies to a GGUF OUT (OUT.gguf)");
	if (cli_ends_with(in, ".gguf")) {
		if (do_check || tokenizer || no_tokenizer)
			cli_usage_error("--check and --tokenizer do not apply to a GGUF "
			                "IN (its tokenizer is rebuilt from the file)");
		cli_check_out(out, force);
		if (gpt2_export_gguf_to_hf(in, out, dtype, &o, &res, err,
		                           sizeof err))
			export_failed(err);
		return cli_exit(CLI_OK);
	}
	int in_llmc = !is_snapshot(in);
	if (in_llmc) {
		o.tokenizer_dir = tokenizer_source(tokenizer, no_tokenizer);
		cli_check_out(out, force);
		if (gpt2_export_llmc_to_hf(in, out, &o, &res, err, sizeof err))
			export_failed(err);
	} else {
		if (dtype == ST_DTYPE_F16)
			cli_usage_error("--dtype f16: an llm.c checkpoint holds f32 "
			                "(version 3) or bf16 (version 5)");
		if (tokenizer || no_tokenizer)
			cli_usage_error("--tokenizer and --no-tokenizer apply to "
			                "snapshots written, not to a .bin");
		cli_check_out(out, force);
		if (gpt2_export_hf_to_llmc(in, out, &o, &res, err, sizeof err))
			export_failed(err);
	}
	int rc = do_check ? check(in, in_llmc, out, &res) : CLI_OK;
	return cli_exit(rc);
}
