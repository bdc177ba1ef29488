/*
 * stdiff.c - compare two checkpoints, structure and values.
 *
 * A and B are any checkpoint PATHs (file, shard index, snapshot directory;
 * single or sharded; any dtypes, one side quantized). stdiff reports
 * tensors only in A or B, shape and dtype changes, __metadata__ and
 * config.json differences and, for each tensor in both, whether it is
 * bit-identical, exactly the other rounded or dequantized, how far apart
 * (max abs / max rel / mean abs, elements outside |a - b| <= atol +
 * rtol * |b|, the worst element) and the trap behind a difference.
 *
 * It is not a validator (stinfo --check is). This file is options,
 * defaults and exit codes (the human output is stdiff/show.c, the --json
 * document common/diff_json.c, --map common/gguf_diff.c): matching names,
 * planning, the value pass and the verdicts are libst's (st/diff.h).
 */
#include "fe/cli.h"
#include "stdiff/stdiff.h"
#include "common/ckpt.h"
#include "common/diff_json.h"
#include "common/order.h"
#include "common/gguf_diff.h"
#include <st.h>

#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 8

struct opts {
	st_diff_opts d; /* what libst is asked */
	double rtol, atol; /* d.rtol and d.atol point here when given */
	bool quiet, json, markdown, first;
	int verbose; /* -v: every pair, folded by layer; -vv: one line each */
	const char *map; /* --map ARCH: a GGUF against a checkpoint */
	int threads;
	const char **globs, **prefixes; /* d.globs and d.prefixes */
};

/* ---- main ----------------------------------------------------------------- */

static void usage(void)
{
	printf(
"Usage: %s [OPTION]... A B\n"
"Compare two checkpoints: structure and values, across layouts and dtypes.\n"
"A and B are each a .safetensors file, a shard index (*.safetensors.index.json)\n"
"or a snapshot directory. One of them may be -: a safetensors file read from\n"
"standard input (named <stdin>; a pipe is copied to a temporary file first).\n"
"\n"
"Reports tensors only in A or only in B, shape and dtype changes, metadata\n"
"differences and, for each tensor in both with the same shape: whether it is\n"
"bit-identical, max abs diff, max rel diff (over b != 0), mean abs diff, the\n"
"number of elements outside |a - b| <= atol + rtol * |b|, and the worst element.\n"
"NaN in the same place on both sides is equal; NaN against a number differs.\n"
"When one side is quantized (FP8 weights with *.weight_scale_inv or\n"
"*.weight_scale, MXFP4 NAME_blocks with NAME_scales) and the other is not,\n"
"its weights are compared dequantized (FP8 blocks from config.json) with\n"
"the tolerance of the quantized format (E4M3: rtol 1/15, atol about 2^-10\n"
"times the largest scale; see stdiff(1)), its scales are consumed, and\n"
"stdiff says\n"
"\"B is exactly A dequantized to BF16\" when every tensor of B is A's values\n"
"rounded to B's dtype, bit for bit, or \"B is exactly A quantized to F8_E4M3\n"
"(128x128 blocks)\" when B is what stconvert --to f8_e4m3 writes from A (A\n"
"quantized again, codes and scales compared); by default an FP8 weight of B\n"
"with F32 scales that is not A quantized differs.\n"
"A tensor only in one side that is a PyTorch alias of one in both (a tied\n"
"lm_head.weight, which stconvert writes once) is no difference.\n"
"\n"
"Options:\n"
"      --rtol X          relative tolerance (default: torch.testing's for the\n"
"                        less precise dtype: F64 1e-7, F32 1.3e-6, F16 1e-3,\n"
"                        BF16 1.6e-2; integers and others 0; plus the\n"
"                        quantized format's for a dequantized weight)\n"
"      --atol X          absolute tolerance (default: F64 1e-7, F16/BF16/F32\n"
"                        1e-5; integers and others 0)\n"
"      --exact           bit equality: same dtype and the same bytes (a\n"
"                        dequantized weight: rounded to the other's dtype)\n"
"      --names-only      compare names, shapes and dtypes only (headers)\n"
"  -T, --tensors GLOB    only tensors whose name matches GLOB (repeatable)\n"
"      --strip-prefix P  remove prefix P from names before matching\n"
"                        (repeatable; e.g. 'transformer.')\n"
"  -j, --threads N       threads for the value pass (default: CPUs, max %d)\n"
"      --first           walk A's tensors in the order its __metadata__\n"
"                        'order' records (a gpt2run --trace), else in file\n"
"                        order; report the first one missing from B, changed\n"
"                        in shape or outside tolerance, and stop (with\n"
"                        --json: as one JSON document)\n"
"  -v, --verbose         list every pair compared (default: only what\n"
"                        differs, and dtype changes in one line per pair of\n"
"                        dtypes); either way pairs whose names differ only\n"
"                        in layer numbers and that compare alike are one\n"
"                        line, h.{0..47}.attn.c_attn.weight, with the worst\n"
"                        figures; -vv: one line per tensor\n"
"  -q, --quiet           print nothing; the exit status says it all\n"
"      --json            one JSON document on stdout (one entry per tensor)\n"
"  -m, --markdown        the report as GitHub Markdown, for a model card or\n"
"                        a pull request: the lines as a table (tensors,\n"
"                        dtypes, verdict, max abs, max rel), then the summary\n"
"      --map ARCH        A or B is a GGUF file (llama.cpp's names and\n"
"                        layouts) of ARCH gpt2, llama (also Mistral), qwen2\n"
"                        or qwen3: compare it with the other, a checkpoint,\n"
"                        through that name map, GPT-2's transposes and\n"
"                        llama's q/k row permutation included; says whether\n"
"                        B is exactly A rounded or quantized (by default\n"
"                        Q8_0 is equal only when it is, every other\n"
"                        quantized type within its error bound). The\n"
"                        default for a GGUF file of one of those\n"
"                        general.architecture values. Two GGUF files (or\n"
"                        split sets) are compared by tensor name, decoded\n"
"                        where their types differ\n"
"  -h, --help            show this help and exit\n"
"  -V, --version         show the version and exit\n"
"\n"
"Exit status: 0 equal within tolerance, 1 different, 2 trouble.\n",
	       cli_progname(), MAX_THREADS);
}

enum { OPT_RTOL = 256, OPT_ATOL, OPT_EXACT, OPT_NAMES, OPT_JSON, OPT_FIRST,
       OPT_MAP, OPT_STRIP };

static void parse_args(int argc, char **argv, struct opts *o,
                       const char **pa, const char **pb)
{
	static const struct option longopts[] = {
		{"rtol", required_argument, NULL, OPT_RTOL},
		{"atol", required_argument, NULL, OPT_ATOL},
		{"exact", no_argument, NULL, OPT_EXACT},
		{"names-only", no_argument, NULL, OPT_NAMES},
		{"tensors", required_argument, NULL, 'T'},
		{"strip-prefix", required_argument, NULL, OPT_STRIP},
		{"threads", required_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"json", no_argument, NULL, OPT_JSON},
		{"markdown", no_argument, NULL, 'm'},
		{"first", no_argument, NULL, OPT_FIRST},
		{"map", required_argument, NULL, OPT_MAP},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof *o);
	o->globs = cli_xmalloc((size_t)argc * sizeof *o->globs);
	o->prefixes = cli_xmalloc((size_t)argc * sizeof *o->prefixes);
	o->d.globs = o->globs;
	o->d.prefixes = o->prefixes;
	int ch;
	while ((ch = cli_getopt(argc, argv, "T:j:vqmhV", longopts)) != -1) {
		switch (ch) {
		case OPT_RTOL:
			o->rtol = cli_opt_nonneg("--rtol", optarg);
			o->d.rtol = &o->rtol;
			break;
		case OPT_ATOL:
			o->atol = cli_opt_nonneg("--atol", optarg);
			o->d.atol = &o->atol;
			break;
		case OPT_EXACT: o->d.exact = true; break;
		case OPT_NAMES: o->d.names_only = true; break;
		case 'T': o->globs[o->d.n_globs++] = optarg; break;
		case OPT_STRIP: o->prefixes[o->d.n_prefixes++] = optarg; break;
		case 'j': o->threads = cli_opt_threads(optarg, MAX_THREADS); break;
		case 'v': o->verbose++; break;
		case 'q': o->quiet = true; break;
		case OPT_JSON: o->json = true; break;
		case 'm': o->markdown = true; break;
		case OPT_FIRST: o->first = true; break;
		case OPT_MAP:
			if (!st_arch_gguf_known(optarg))
				cli_usage_error("--map: unknown map '%s' (there are gpt2, llama, "
				                "qwen2 and qwen3)", optarg);
			o->map = optarg;
			break;
		case 'h': usage(); exit(cli_exit(CLI_OK));
		case 'V': cli_version();
		}
	}
	if (o->d.exact && (o->d.rtol || o->d.atol))
		cli_usage_error("--exact cannot be combined with --rtol or --atol");
	if (o->first && (o->d.names_only || o->markdown))
		cli_usage_error("--first cannot be combined with --markdown or --names-only");
	if (o->json && o->markdown)
		cli_usage_error("--json cannot be combined with --markdown");
	cli_operands(argc, argv, optind, 2, 2, (const char *const[]){"A", "B"});
	*pa = argv[optind];
	*pb = argv[optind + 1];
	if (ckpt_is_stdin(*pa) && ckpt_is_stdin(*pb))
		cli_usage_error("'-' (standard input) can be one side only");
}

static void progress(void *ctx, uint64_t bytes)
{
	cli_progress_add(ctx, bytes);
}

/* Whether PATH is a GGUF file; exit 2 when it cannot be read. */
static int is_gguf(const char *path)
{
	int kind;
	st_error e;
	if (ckpt_is_stdin(path)) /* a stream is read as safetensors only */
		return 0;
	if (st_sniff_path(path, &kind, &e) != ST_OK)
		cli_die(CLI_ERROR, "%s", e.message);
	return kind == ST_KIND_GGUF;
}

/*
 * The name map for a GGUF file compared with a checkpoint, from its
 * general.architecture (gpt2, llama, qwen2, qwen3); otherwise exit 2
 * saying there is none.
 */
static const char *gguf_arch_map(const char *path, char *buf, size_t size)
{
	st_gguf *g;
	st_error e;
	if (st_gguf_open_set(&g, path, &e) != ST_OK)
		cli_die(CLI_ERROR, "%s", e.message);
	long k = st_gguf_find_kv(g, "general.architecture");
	const st_gguf_kv *kv = k >= 0 ? st_gguf_kv_at(g, (size_t)k) : NULL;
	const char *map = NULL;
	if (kv && kv->value.type == ST_GGUF_STRING && kv->value.n < size &&
	    !memchr(kv->value.v.s, 0, (size_t)kv->value.n)) {
		memcpy(buf, kv->value.v.s, (size_t)kv->value.n);
		buf[kv->value.n] = 0;
		map = st_arch_gguf_known(buf) ? buf : NULL;
	}
	char *arch = kv && kv->value.type == ST_GGUF_STRING
	                     ? cli_printable(kv->value.v.s, (size_t)kv->value.n)
	                     : NULL;
	st_gguf_close(g);
	if (map) {
		free(arch);
		return map;
	}
	cli_warn("%s is a GGUF file of architecture '%s': stdiff compares it with "
	         "another GGUF by name, or with a safetensors checkpoint through a name "
	         "map (--map gpt2, llama, qwen2 or qwen3) only", path, arch ? arch : "(none)");
	free(arch);
	exit(CLI_ERROR);
}

int main(int argc, char **argv)
{
	struct opts o;
	const char *path_a, *path_b;
	cli_init("stdiff");
	parse_args(argc, argv, &o, &path_a, &path_b);
	/* A GGUF side: compared by name with another GGUF, else through the
	 * name map of its general.architecture (or --map). */
	int ga = is_gguf(path_a), gb = is_gguf(path_b);
	char arch[32];
	if (!o.map && ga != gb)
		o.map = gguf_arch_map(ga ? path_a : path_b, arch, sizeof arch);
	if (o.map || (ga && gb)) {
		if (o.d.names_only || o.first || o.d.n_globs || o.d.n_prefixes || o.markdown)
			cli_usage_error("%s%s takes --rtol, --atol, --exact, --json, -v and -q only",
			                o.map ? "--map " : "comparing two GGUF files",
			                o.map ? o.map : "");
		gguf_diff_opts g = {o.rtol, o.atol, o.d.rtol != NULL, o.d.atol != NULL,
		                    o.d.exact, o.quiet, o.verbose > 0, o.json};
		free(o.globs);
		free(o.prefixes);
		return cli_exit(o.map ? gguf_diff_map(path_a, path_b, o.map, &g)
		                           : gguf_diff_files(path_a, path_b, &g));
	}

	st_checkpoint *ca, *cb;
	if (ckpt_open_for(&ca, path_a, o.d.names_only) != CLI_OK ||
	    ckpt_open_for(&cb, path_b, o.d.names_only) != CLI_OK)
		exit(CLI_ERROR);
	path_a = ckpt_is_stdin(path_a) ? CKPT_STDIN_NAME : path_a;
	path_b = ckpt_is_stdin(path_b) ? CKPT_STDIN_NAME : path_b;
	cli_progress prog;
	memset(&prog, 0, sizeof prog);
	o.d.diagnose = !o.quiet && !o.first; /* the traps, in words */
	o.d.threads = (unsigned)(o.threads > 0 ? o.threads : cli_default_threads(MAX_THREADS));
	o.d.progress = progress;
	o.d.ctx = &prog;
	st_diff r;
	st_error err;
	if (st_diff_match(&r, ca, cb, &o.d, &err) != ST_OK) {
		const st_diff_tensor *x = r.clash;
		if (r.clash_side >= 0)
			cli_die(CLI_ERROR, "%s: tensors '%.*s' and '%.*s' have the same name "
			        "after --strip-prefix ('%.*s')", r.clash_side ? path_b : path_a,
			        (int)x[0].t->name_len, x[0].t->name, (int)x[1].t->name_len,
			        x[1].t->name, (int)x[0].key_len, x[0].key);
		cli_die(CLI_ERROR, "%s", err.message);
	}
	/* A --tensors that selects nothing is more likely a typo than a pass. */
	if (o.d.n_globs && r.n_ta == 0 && r.n_tb == 0)
		cli_die(CLI_ERROR, "no tensor in %s or %s matches --tensors '%s'%s",
		        path_a, path_b, o.globs[0], o.d.n_globs > 1 ? " (or the others)" : "");
	if (!o.d.names_only && !o.quiet)
		cli_progress_start(&prog, "comparing", r.value_bytes);
	int rc = st_diff_values(&r, &o.d, &err);
	if (!o.d.names_only)
		cli_progress_done(&prog);
	/* libst's messages name the file and the tensor already. */
	if (rc != ST_OK)
		cli_die(CLI_ERROR, "%s", err.message[0] ? err.message : st_strerror(rc));

	rc = r.equal ? CLI_OK : CLI_NO;
	if (o.first && o.json && !o.quiet)
		rc = diff_json_first(&r);
	else if (o.first)
		rc = stdiff_print_first(&r, o.quiet);
	else if (o.json && !o.quiet)
		diff_json_print(&r);
	else if (o.markdown && !o.quiet)
		stdiff_print_markdown(&r, o.verbose, path_a, path_b);
	else if (!o.quiet)
		stdiff_print_human(&r, o.verbose);

	st_diff_free(&r);
	free(o.globs);
	free(o.prefixes);
	st_checkpoint_close(ca);
	st_checkpoint_close(cb);
	return cli_exit(rc);
}
