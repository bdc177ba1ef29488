/*
 * stconvert.c - convert a whole safetensors checkpoint: dtype, FP8
 * quantization either way, names, layout (one file <-> shards); streaming,
 * atomic.
 *
 * What it is: the front end of libst's conversion (st/convert.h): options
 * and defaults (threads: one per core, at most four; OUT a file or a
 * directory; --force, the check shared with gpt2export: cli_check_out;
 * --rename and --strip-prefix as libst's rename rules), messages and the
 * report from what the plan decided (the report is stconvert/report.c),
 * the progress bar, exit codes and signals. What it is not: the plan and
 * the data path (st_convert_plan_*, st_convert_write_*).
 */
#include "fe/cli.h"
#include "stconvert/stconvert.h"
#include "common/ckpt.h"
#include "common/quantize.h"
#include "fe/signals.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <st.h>

#define MAX_WORKERS 4

static void usage(void)
{
	printf(
"Usage: stconvert [OPTION]... IN OUT\n"
"Convert a safetensors checkpoint's dtype and/or layout, streaming, in\n"
"bounded memory; OUT appears complete or not at all.\n"
"\n"
"IN is a .safetensors file, a shard index (*.safetensors.index.json), a\n"
"snapshot directory, or a PyTorch checkpoint (pytorch_model.bin, or shards\n"
"with pytorch_model.bin.index.json; zip, legacy or tar; the pickle is read\n"
"without executing anything). OUT is a file when it ends in\n"
".safetensors (or is an existing file), else a snapshot directory:\n"
"model.safetensors, or with --shard-size model-0000i-of-0000N.safetensors\n"
"plus model.safetensors.index.json. A directory IN's other files (config,\n"
"tokenizer...) are copied to a directory OUT, with torch_dtype in\n"
"config.json set to the new dtype. OUT '-' writes the one file to\n"
"standard output (a pipe). IN '-' reads a safetensors file from standard\n"
"input (named <stdin>; a pipe is copied to a temporary file first).\n"
"\n"
"IN may also be a GGUF file (known by its magic): every tensor goes to\n"
"one OUT.safetensors under its GGUF name, its shape row-major (ggml's\n"
"{ne0, ne1} is [ne1, ne0]). Nothing is lost: F32, F16, BF16 and integer\n"
"tensors keep their dtype and bytes, every quantized type (Q8_0, the\n"
"K-quants, IQ...) is decoded to F32 exactly as ggml decodes it; --to\n"
"f32|f16|bf16 converts every float tensor instead. An OUT directory gets a\n"
"Hugging Face snapshot of a llama/qwen2/qwen3 GGUF: HF names, q/k rows\n"
"un-permuted, config.json and generation_config.json from the metadata\n"
"(no tokenizer files).\n"
"\n"
"OUT ending in .gguf writes a llama/mistral/qwen2/qwen3 snapshot as one\n"
"GGUF file for llama.cpp (convert_hf_to_gguf.py's keys, names and q/k\n"
"permutation; the vocabulary from tokenizer.json; doc/gguf_export.md):\n"
"--to f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1 the matrices' type (default\n"
"the source's), norms and biases F32, rows that are not whole blocks F16.\n"
"A GPT-2 snapshot is written as gpt2export writes it.\n"
"\n"
"Options:\n"
"  -t, --to TYPE           convert floating tensors (F64, F32, F16, BF16,\n"
"                          and the F8 types and F4, decoded exactly) to\n"
"                          f64, f32, f16 or bf16, narrowing to nearest even\n"
"                          as PyTorch does; integer, bool and F6 tensors\n"
"                          are copied; quantized weights are dequantized:\n"
"                          FP8 with *.weight_scale_inv (block\n"
"                          size from config.json's weight_block_size) and\n"
"                          MXFP4 *_blocks with *_scales; their scales and\n"
"                          config.json's quantization_config are dropped.\n"
"                          Without --to, tensors are copied unchanged and\n"
"                          only the layout changes. f8_e4m3 quantizes: 2-D\n"
"                          floating *weight tensors become F8_E4M3 with an\n"
"                          F32 *weight_scale_inv per block (scale =\n"
"                          amax/448), others are copied; a directory OUT's\n"
"                          config.json gets quantization_config (fp8, e4m3);\n"
"                          FP8 weights already in IN are copied with their\n"
"                          scales when they have --block's blocks, else an\n"
"                          error (and MXFP4, per-channel scales too)\n"
"      --block R,C         f8_e4m3's block size, rows by columns (default\n"
"                          128,128, or IN's weight_block_size when IN has\n"
"                          FP8 weights)\n"
"  -k, --keep GLOB         leave tensors whose name matches GLOB in their\n"
"                          dtype (fnmatch; repeatable), e.g. --keep '*ln_*'\n"
"  -d, --drop GLOB         leave matching tensors out (repeatable; wins\n"
"                          over --keep)\n"
"      --key K             read a PyTorch checkpoint's sub-dictionary K\n"
"                          (repeatable for deeper levels, or K1.K2); without\n"
"                          it a checkpoint whose tensors are all under\n"
"                          state_dict, model, module or model_state_dict is\n"
"                          read from there, and values that are not tensors\n"
"                          are left out (one line says which)\n"
"      --rename FROM=TO    write tensors whose name starts with FROM with TO\n"
"                          in its place (repeatable; the rules and\n"
"                          --strip-prefix are tried in the order given, the\n"
"                          first that matches a name renames it); applies\n"
"                          to the names written (after --keep and --drop,\n"
"                          which match IN's names) and the shard index; two\n"
"                          tensors written under one name are an error\n"
"      --strip-prefix P    --rename P= : drop the prefix P (e.g. model.)\n"
"      --metadata KEY=VALUE  add or replace a __metadata__ entry\n"
"                          (repeatable); the input's metadata is kept\n"
"      --shard-size SIZE   split the output into shards of at most SIZE\n"
"                          bytes of tensor data (5GB decimal, 4GiB binary),\n"
"                          greedily in canonical order as huggingface_hub\n"
"                          does; needs a directory OUT. Without it a\n"
"                          sharded input (safetensors or PyTorch) written\n"
"                          to a directory keeps its shards: one\n"
"                          model-0000k-of-0000N.safetensors per input\n"
"                          shard; an OUT.safetensors file is one file\n"
"      --stand-in-vocab    OUT.gguf from a snapshot without tokenizer.json:\n"
"                          one token <tN> per id (ids fed as ids)\n"
"  -f, --force             replace an existing OUT (OUT may be IN)\n"
"  -v, --verbose           report every tensor, and the files copied\n"
"  -q, --quiet             no report\n"
"  -j, --threads N         worker threads (default: CPUs online, at most 4;\n"
"                          a GGUF IN is decoded on them too)\n"
"  -h, --help              print this help and exit\n"
"  -V, --version           print the version and exit\n"
"\n"
"The report (tensors and bytes in and out, values that overflowed to Inf\n"
"or underflowed to zero) goes to stderr, as does a progress bar when stderr\n"
"is a terminal; stdout stays empty.\n"
"\n"
"Exit status: 0 success, 2 usage error, unreadable or invalid input, I/O\n"
"error (OUT is then left as it was), 128+N killed by signal N (likewise).\n");
}

/* ---- options --------------------------------------------------------------- */

/* --to's ggml quantized types (OUT.gguf only): ST_GGML_*, or -1. */
static int gguf_quant_type(const char *s)
{
	static const char *const names[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1"};
	static const int types[] = {ST_GGML_Q8_0, ST_GGML_Q4_0, ST_GGML_Q4_1, ST_GGML_Q5_0,
	                            ST_GGML_Q5_1};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcasecmp(s, names[i]))
			return types[i];
	return -1;
}


static void parse_options(int argc, char **argv, struct stconvert_options *o)
{
	static const struct option longs[] = {
		{"to", required_argument, NULL, 't'},      {"keep", required_argument, NULL, 'k'},
		{"drop", required_argument, NULL, 'd'},    {"key", required_argument, NULL, 'K'},
		{"metadata", required_argument, NULL, 'M'}, {"shard-size", required_argument, NULL, 'S'},
		{"block", required_argument, NULL, 'B'},   {"force", no_argument, NULL, 'f'},
		{"rename", required_argument, NULL, 'R'},  {"strip-prefix", required_argument, NULL, 'P'},
		{"verbose", no_argument, NULL, 'v'},       {"quiet", no_argument, NULL, 'q'},
		{"threads", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"stand-in-vocab", no_argument, NULL, 'W'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof *o);
	o->gguf_type = -1;
	/* Each repeatable option occurs fewer than argc times. */
	o->keep = cli_xcalloc((size_t)argc, sizeof *o->keep);
	o->drop = cli_xcalloc((size_t)argc, sizeof *o->drop);
	o->keys = cli_xcalloc((size_t)argc, sizeof *o->keys);
	o->meta = cli_xcalloc((size_t)argc, sizeof *o->meta);
	o->renames = cli_xcalloc((size_t)argc, sizeof *o->renames);
	o->rename_arg = cli_xcalloc((size_t)argc, sizeof *o->rename_arg);
	o->rename_strip = cli_xcalloc((size_t)argc, sizeof *o->rename_strip);
	int c;
	while ((c = cli_getopt(argc, argv, "t:k:d:fvqj:hV", longs)) != -1) {
		switch (c) {
		case 't':
			o->to_arg = optarg;
			if ((o->gguf_type = gguf_quant_type(optarg)) >= 0)
				break;
			if (strcasecmp(optarg, "f8_e4m3") == 0) {
				o->c.quantize = 1;
				break;
			}
			if (cli_parse_float_dtype(optarg, &o->c.to) != 0)
				cli_usage_error("--to: '%s' is not f64, f32, f16, bf16, f8_e4m3, or "
				                "for OUT.gguf q8_0, q4_0, q4_1, q5_0, q5_1",
				                optarg);
			o->c.has_to = 1;
			break;
		case 'B': {
			st_error e;
			if (quantize_parse_block(optarg, &o->c.block_rows, &o->c.block_cols, &e) != ST_OK)
				cli_die(CLI_ERROR, "%s", e.message);
			break;
		}
		case 'k':
			o->keep[o->c.n_keep++] = optarg;
			break;
		case 'd':
			o->drop[o->c.n_drop++] = optarg;
			break;
		case 'K':
			o->keys[o->n_keys++] = optarg;
			break;
		case 'M': {
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg)
				cli_usage_error("--metadata: '%s' is not KEY=VALUE", optarg);
			char *key = cli_xstrdup(optarg);
			key[eq - optarg] = 0;
			o->meta[o->c.n_meta++] = (st_convert_meta){key, eq + 1};
			st_writer *w; /* an entry the writer refuses, in the option's words */
			st_error e;
			if (st_writer_new(&w, &e) != ST_OK || st_writer_set_meta(w, key, eq + 1, &e) != ST_OK)
				cli_die(CLI_ERROR, "--metadata %s=%s: %s", key, eq + 1, e.message);
			st_writer_free(w);
			break;
		}
		case 'R': {
			const char *eq = strchr(optarg, '=');
			if (!eq)
				cli_usage_error("--rename: '%s' is not FROM=TO", optarg);
			char *from = cli_xstrdup(optarg);
			from[eq - optarg] = 0;
			o->rename_arg[o->c.n_rename] = optarg;
			o->renames[o->c.n_rename++] = (st_convert_rename){from, eq + 1};
			break;
		}
		case 'P':
			if (!*optarg)
				cli_usage_error("--strip-prefix: the prefix is empty");
			o->rename_arg[o->c.n_rename] = optarg;
			o->rename_strip[o->c.n_rename] = 1;
			o->renames[o->c.n_rename++] = (st_convert_rename){cli_xstrdup(optarg), ""};
			break;
		case 'S':
			if (cli_parse_size(optarg, &o->shard_size) != 0)
				cli_usage_error("--shard-size: '%s' is not a size (e.g. 5GB, 4GiB, 1000000)",
				                optarg);
			break;
		case 'W': o->stand_in_vocab = 1; break;
		case 'f': o->force = 1; break;
		case 'v': o->verbose = 1; break;
		case 'q': o->quiet = 1; break;
		case 'j': o->threads = cli_opt_threads(optarg, 256); break;
		case 'h':
			usage();
			exit(cli_exit(CLI_OK));
		case 'V':
			cli_version();
		}
	}
	if (o->c.quantize && o->c.has_to)
		cli_usage_error("--to given twice");
	if (o->c.block_rows && !o->c.quantize)
		cli_usage_error("--block needs --to f8_e4m3");
	cli_operands(argc, argv, optind, 2, 2, (const char *const[]){"IN", "OUT"});
	o->in = argv[optind];
	o->out = argv[optind + 1];
	if (!*o->in || !*o->out)
		cli_usage_error("IN and OUT must not be empty");
	o->c.keep = o->keep;
	o->c.drop = o->drop;
	o->c.meta = o->meta;
	o->c.rename = o->renames;
}

/* ---- output location ------------------------------------------------------- */

struct outloc {
	int is_dir, exists;
};

static void locate_out(const struct stconvert_options *o, struct outloc *loc)
{
	struct stat st;
	memset(loc, 0, sizeof *loc);
	if (!strcmp(o->out, "-")) { /* one file, to standard output */
		if (o->shard_size)
			cli_usage_error("--shard-size writes shards and an index: OUT '-' (standard "
			                "output) holds one file");
		cli_check_stdout_binary();
		return;
	}
	size_t len = strlen(o->out);
	int trailing_slash = len > 1 && o->out[len - 1] == '/';
	if (stat(o->out, &st) == 0) {
		loc->exists = 1;
		if (S_ISDIR(st.st_mode))
			loc->is_dir = 1;
		else if (!S_ISREG(st.st_mode))
			cli_die(CLI_ERROR, "%s: exists and is not a regular file or directory", o->out);
	} else if (errno != ENOENT) {
		cli_die(CLI_ERROR, "%s: %s", o->out, strerror(errno));
	} else { /* not there, or a link to nothing */
		loc->is_dir = trailing_slash || !cli_ends_with(o->out, ".safetensors");
	}
	cli_check_out(o->out, o->force);
	if (!loc->exists && cli_ends_with(o->out, ".index.json"))
		cli_usage_error("%s: OUT is a directory or a .safetensors file, not an index path",
		                o->out);
	if (!loc->is_dir && o->shard_size)
		cli_usage_error("--shard-size writes shards and an index: OUT must be a directory");
}

/*
 * Only config.json records FP8 blocks, and readers take a file without one
 * for 128 x 128: weights newly quantized with other blocks need a
 * directory OUT.
 */
static void check_block_out(const struct outloc *loc, const st_convert_plan *p)
{
	uint64_t b0, b1;
	st_convert_plan_block(p, &b0, &b1);
	if (loc->is_dir || (b0 == ST_QUANT_DEFAULT_BLOCK && b1 == ST_QUANT_DEFAULT_BLOCK) ||
	    !st_convert_plan_count(p, ST_CONVERT_QUANT))
		return;
	cli_usage_error("%llux%llu blocks are recorded in config.json's quantization_config: "
	                "OUT must be a directory (a single file is read as %dx%d)",
	                (unsigned long long)b0, (unsigned long long)b1, ST_QUANT_DEFAULT_BLOCK,
	                ST_QUANT_DEFAULT_BLOCK);
}

/* ---- notes, progress and cancelling ------------------------------------------ */

/* What the write's callbacks share with main (cli_progress_cb: the
 * progress first). The signal handlers only record the signal
 * (signals.h); signals_cancel_cb passes it on to libst. */
struct ui {
	cli_progress progress;
	const struct stconvert_options *o;
};

/* The lines the plan gives, before anything is written. */
static void plan_notes(const struct stconvert_options *o, const st_convert_plan *p)
{
	for (size_t i = 0; i < st_convert_plan_n_items(p) && !o->quiet; i++) {
		const st_convert_item *it = st_convert_plan_item(p, i);
		if (!it->alias)
			continue;
		char *a = cli_printable(it->tensor->name, it->tensor->name_len);
		char *b = cli_printable(it->alias->name, it->alias->name_len);
		cli_warn("alias: '%s' is the same data as '%s'; written once, as '%s'", a, b, b);
		free(a);
		free(b);
	}
	for (size_t g = 0; g < o->c.n_drop; g++)
		if (!st_convert_plan_glob_hits(p, 1, g))
			cli_warn("warning: --drop '%s' matches no tensor", o->drop[g]);
	for (size_t g = 0; g < o->c.n_keep; g++)
		if (!st_convert_plan_glob_hits(p, 0, g))
			cli_warn("warning: --keep '%s' matches no tensor", o->keep[g]);
	for (size_t r = 0; r < o->c.n_rename; r++)
		if (!st_convert_plan_rename_hits(p, r))
			cli_warn("warning: %s '%s' matches no tensor%s",
			         o->rename_strip[r] ? "--strip-prefix" : "--rename", o->rename_arg[r],
			         r ? " (or an earlier rule took its names)" : "");
}

/* Which input shard became which output shard (--verbose). */
static void shard_notes(st_checkpoint *c, const st_convert_plan *p)
{
	for (size_t k = 0; k < st_checkpoint_n_files(c); k++) {
		size_t f = st_convert_plan_file_order(p, k);
		long s = st_convert_plan_file_shard(p, f);
		const char *path = st_file_path(st_checkpoint_file(c, f));
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		char *shown = cli_printable(base, strlen(base));
		char name[64] = "";
		if (s >= 0)
			st_snapshot_file_name(name, sizeof name, (unsigned)s, st_convert_plan_n_shards(p));
		cli_warn("shard %s%s%s", shown, s >= 0 ? " -> " : ": every tensor dropped; not written",
		         name);
		free(shown);
	}
}

/* What libst did with the snapshot's other files, for the report. */
static void snapshot_note(void *ctx, int severity, const char *message)
{
	struct ui *ui = ctx;
	cli_progress_done(&ui->progress);
	if (severity == ST_PROBLEM_WARNING)
		cli_warn("warning: %s", message);
	else if (ui->o->verbose)
		cli_warn("%s", message);
}

/* Give up (libst removed its temporaries): die of a signal caught, or say why. */
static _Noreturn void fail(const st_error *err)
{
	signals_reraise();
	cli_error(err);
	exit(CLI_ERROR);
}

/*
 * A plan's refusal in stconvert's words: libst ends the refusal of weights
 * already quantized with "dequantize it first[ or quantize with RxC
 * blocks]" (st_convert_plan_new) and says "quantizing" for what --to
 * f8_e4m3 does; the remedy is named by the options that give it.
 */
static void word_plan_error(st_error *err)
{
	static const char quantizing[] = "quantization_config quantizing writes";
	static const char first[] = "dequantize it first";
	char *m = err->message, out[sizeof err->message + 64];
	char *q = strstr(m, quantizing), *f = strstr(m, first);
	unsigned long long r = 0, c = 0;
	int n = -1;

	if (!f)
		return; /* not the refusal */
	const char *tail = f + sizeof first - 1;
	if (*tail && (sscanf(tail, " or quantize with %llux%llu blocks%n", &r, &c, &n) != 2 ||
	              n < 0 || tail[n]))
		return;
	*f = 0;
	if (q && q < f) {
		*q = 0;
		snprintf(out, sizeof out, "%squantization_config --to f8_e4m3 writes%s", m,
		         q + sizeof quantizing - 1);
	} else {
		snprintf(out, sizeof out, "%s", m);
	}
	size_t k = strlen(out);
	if (n < 0)
		snprintf(out + k, sizeof out - k, "dequantize first (--to bf16)");
	else
		snprintf(out + k, sizeof out - k, "dequantize first (--to bf16) or give --block %llu,%llu",
		         r, c);
	k = strlen(out) < sizeof err->message ? strlen(out) : sizeof err->message - 1;
	memcpy(m, out, k); /* cut as libst cuts its messages */
	m[k] = 0;
}

/* ---- main -------------------------------------------------------------------- */

static void free_options(struct stconvert_options *o)
{
	for (size_t m = 0; m < o->c.n_meta; m++)
		free((char *)o->meta[m].key);
	for (size_t r = 0; r < o->c.n_rename; r++)
		free((char *)o->renames[r].from);
	free(o->meta);
	free(o->renames);
	free(o->rename_arg);
	free(o->rename_strip);
	free(o->keep);
	free(o->drop);
	free(o->keys);
}

const char *stconvert_safetensors_option(const struct stconvert_options *o)
{
	return o->c.quantize     ? "--to f8_e4m3"
	       : o->c.n_keep     ? "--keep"
	       : o->c.n_drop     ? "--drop"
	       : o->n_keys       ? "--key"
	       : o->c.n_meta     ? "--metadata"
	       : o->shard_size   ? "--shard-size"
	       : o->c.block_rows ? "--block"
	       : o->c.n_rename   ? "--rename/--strip-prefix"
	                         : NULL;
}

unsigned stconvert_threads(const struct stconvert_options *o)
{
	return (unsigned)(o->threads ? o->threads : cli_default_threads(MAX_WORKERS));
}

int main(int argc, char **argv)
{
	struct stconvert_options o;
	cli_init("stconvert");
	parse_options(argc, argv, &o);
	signals_catch();

	int kind;
	st_error err;
	/* IN '-': a safetensors stream, copied to a temporary file (ckpt.h). */
	int in_stdin = ckpt_is_stdin(o.in);
	if (in_stdin)
		kind = ST_KIND_SAFETENSORS;
	else if (st_sniff_path(o.in, &kind, &err) != ST_OK)
		fail(&err);
	if (kind != ST_KIND_GGUF && cli_ends_with(o.out, ".gguf")) {
		int rc = stconvert_to_gguf(&o);
		free_options(&o);
		return cli_exit(rc);
	}
	if (o.gguf_type >= 0 || o.stand_in_vocab)
		cli_usage_error("%s%s: writes a GGUF file: OUT must end in .gguf",
		                o.gguf_type >= 0 ? "--to " : "--stand-in-vocab",
		                o.gguf_type >= 0 ? o.to_arg : "");
	if (kind == ST_KIND_GGUF) {
		int rc = stconvert_gguf(&o);
		free_options(&o);
		return cli_exit(rc);
	}
	st_checkpoint *c;
	if ((in_stdin ? ckpt_open_stdin(&c, 0, o.n_keys, &err)
	              : st_checkpoint_open_key(&c, o.in, ST_OPEN_TORCH, o.keys, o.n_keys, &err)) !=
	    ST_OK)
		fail(&err);
	/* What a PyTorch checkpoint's dictionary gave (the first shard's). */
	const st_torch_info *ti = st_file_torch_info(st_checkpoint_file(c, 0));
	if (ti && ti->key && ti->key_auto && !o.quiet)
		cli_warn("key '%s': every tensor is under it; reading it", ti->key);
	if (ti && ti->n_skipped && !o.quiet)
		cli_warn("left out %zu %s: %s%s", ti->n_skipped,
		         ti->n_skipped == 1 ? "entry that is not a tensor"
		                            : "entries that are not tensors",
		         ti->skipped, ti->n_skipped > 8 ? ", ..." : "");
	st_convert_plan *p;
	if (st_convert_plan_new(&p, c, &o.c, &err) != ST_OK) {
		word_plan_error(&err);
		fail(&err);
	}
	plan_notes(&o, p);
	struct outloc loc;
	locate_out(&o, &loc);
	check_block_out(&loc, p);
	if (st_convert_plan_shards(p, loc.is_dir, o.shard_size, &err) != ST_OK)
		fail(&err);
	if (o.verbose && st_convert_plan_keeps_shards(p))
		shard_notes(c, p);

	struct ui ui = {.o = &o};
	st_convert_run run = {
		.threads = stconvert_threads(&o),
		.progress = cli_progress_cb,
		.cancel = signals_cancel_cb,
		.note = snapshot_note,
		.ctx = &ui,
	};
	struct stat st;
	int in_dir = !in_stdin && stat(o.in, &st) == 0 && S_ISDIR(st.st_mode);
	cli_progress_start(&ui.progress, "stconvert", st_convert_plan_in_bytes(p));
	int rc = loc.is_dir ? st_convert_write_snapshot(p, o.out, in_dir ? o.in : NULL,
	                                                ST_SNAPSHOT_REPLACE, &run, &err)
	         : !strcmp(o.out, "-") ? st_convert_write_fd(p, STDOUT_FILENO, "<stdout>", &run, &err)
	                               : st_convert_write_file(p, o.out, &run, &err);
	cli_progress_done(&ui.progress);
	if (rc != ST_OK)
		fail(&err);
	stconvert_report(&o, c, p);

	st_convert_plan_free(p);
	st_checkpoint_close(c);
	free_options(&o);
	return cli_exit(CLI_OK);
}
