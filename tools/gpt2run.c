/*
 * gpt2run.c - run GPT-2 from a Hugging Face snapshot: generate text, dump
 * the logits of a prompt (--logits-out), or compare them with a reference
 * (--check). This is how a user proves a checkpoint loaded or converted
 * correctly: run the model.
 *
 * This file is the tool only: options, prompt handling, streaming output,
 * timings. The model (config, name table, loader, forward pass, sampler)
 * is tools/gpt2/gpt2*.c, the tokenizer tools/gpt2/tokenizer.c, and the
 * file reading and writing libst's.
 */
#include "fe/cli.h"
#include "fe/paths.h"
#include "gpt2/gpt2.h"
#include "gpt2/tokenizer.h"
#include "gpt2/trace.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <st.h>

static void usage(void)
{
	printf(
"Usage: gpt2run --model-dir DIR [OPTION]...\n"
"Run GPT-2 from a Hugging Face snapshot on the CPU: generate text, or dump\n"
"or check the logits of a prompt.\n"
"\n"
"DIR holds config.json and the weights (model.safetensors, a shard index,\n"
"one *.safetensors file, or pytorch_model.bin read without running its\n"
"pickle), F32, F16 or BF16, and normally the tokenizer files.\n"
"\n"
"Prompt (default: the end-of-text token alone):\n"
"  -p, --prompt TEXT       the prompt as text\n"
"  -f, --prompt-file FILE  read the prompt from FILE ('-' for stdin), byte for\n"
"                          byte\n"
"  -i, --ids LIST          the prompt as token ids, e.g. 464,3290,318\n"
"      --tokenize          print the prompt's token ids and exit (needs only\n"
"                          the tokenizer files)\n"
"      --tokenizer DIR     read the tokenizer from DIR instead of --model-dir\n"
"\n"
"Generation:\n"
"  -n, --new-tokens N      generate up to N tokens (default 64)\n"
"      --greedy            always take the most likely token\n"
"  -t, --temperature T     sample from softmax(logits / T) (default 1.0;\n"
"                          0 means greedy)\n"
"  -k, --top-k K           sample among the K most likely tokens (0: all)\n"
"      --top-p P           sample within the smallest set of tokens whose\n"
"                          probability reaches P (default 1.0: all)\n"
"  -s, --seed S            random seed (default 1337); the same seed gives the\n"
"                          same tokens on any thread count\n"
"      --ignore-eos        go on past the end-of-text token\n"
"      --print-ids         print the generated ids (comma-separated) instead\n"
"                          of text\n"
"\n"
"Logits (no generation):\n"
"      --logits-out FILE   write a safetensors file with one tensor 'logits',\n"
"                          F32 [T, vocab_size]: the logits at every prompt\n"
"                          position\n"
"      --check REF         compare those logits with tensor 'logits' in REF;\n"
"                          print the max abs diff and where it is; exit 1 when\n"
"                          it exceeds the tolerance. Without a prompt, REF's\n"
"                          integer tensor 'ids', if any, is the prompt. When\n"
"                          REF holds 'greedy' (ids of a greedy continuation),\n"
"                          also generate as many ids greedily and report the\n"
"                          first step that differs\n"
"      --atol A            tolerance of --check (default 1e-4)\n"
"      --trace FILE        write every intermediate of the prompt's forward\n"
"                          pass (F32 [T, ...], in forward order, names in\n"
"                          doc/trace.md) and the ids to a safetensors file\n"
"\n"
"Running:\n"
"      --dtype TYPE        hold the weights in memory as f32, bf16 or f16\n"
"                          (default: as stored); arithmetic is F32\n"
"  -j, --threads N         threads (default: CPUs online)\n"
"  -q, --quiet             no timings on stderr\n"
"  -h, --help              print this help and exit\n"
"  -V, --version           print the version and exit\n"
"\n"
"Text streams to stdout as it is made; timings (load, prompt tokens/s,\n"
"generated tokens/s) go to stderr, on lines of their own when both are one\n"
"file or a terminal.\n"
"\n"
"GPT2RUN_KERNEL=portable|avx2|avx512 picks the inner loops (default: the\n"
"best this CPU runs).\n"
"\n"
"Exit status: 0 success, 1 logits differ from --check's reference, 2 usage\n"
"error, unreadable or invalid snapshot, I/O error.\n");
}

struct options {
	const char *model_dir, *tokenizer_dir;
	const char *prompt, *prompt_file, *ids;
	const char *logits_out, *check, *trace;
	int tokenize, greedy, ignore_eos, print_ids, quiet;
	int sampling_set; /* --temperature, --top-k or --top-p given */
	uint64_t new_tokens;
	double temperature, top_p, atol;
	uint64_t top_k, seed;
	int dtype; /* -1: as stored */
	int threads;
};

/* ---- the prompt ---------------------------------------------------------- */

/* "1,2, 3" -> ids; a usage error for anything else. */
static int32_t *parse_ids(const char *s, size_t *n_out)
{
	size_t cap = 16, n = 0;
	int32_t *ids = cli_xmalloc(cap * sizeof *ids);
	const char *p = s;
	for (;;) {
		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			cli_usage_error("--ids: expected comma-separated token ids, "
			                "got '%s'", s);
		long v = 0;
		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p++ - '0');
			if (v > INT32_MAX)
				cli_usage_error("--ids: token id too large in '%s'", s);
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
			cli_usage_error("--ids: expected comma-separated token ids, "
			                "got '%s'", s);
	}
	*n_out = n;
	return ids;
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

static int32_t *encode_prompt(gpt2_tokenizer *tok, const struct options *o,
                              size_t *n)
{
	const char *text = o->prompt;
	char *owned = NULL;
	size_t len = text ? strlen(text) : 0;
	if (o->prompt_file)
		text = owned = read_all(o->prompt_file, &len);
	int32_t *ids = NULL;
	size_t replaced = 0;
	char err[512];
	if (gpt2_tokenizer_encode(tok, text, len, 0, &ids, n, &replaced, err,
	                          sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	if (replaced)
		cli_warn("the prompt holds %zu invalid UTF-8 sequence%s, replaced "
		         "by U+FFFD", replaced, replaced == 1 ? "" : "s");
	free(owned);
	return ids;
}

static int has_file(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/*
 * The tokenizer of --tokenizer DIR, else of the model directory. A model
 * directory with no tokenizer files at all falls back, with a warning, on
 * the GPT-2 tokenizer installed with libst ($ST_TOKENIZER_DIR first): every
 * GPT-2 snapshot uses that one. for_output: the tokenizer is only needed
 * to print text (--print-ids would do without).
 */
static gpt2_tokenizer *load_tokenizer(const struct options *o, int for_output)
{
	const char *dir = o->tokenizer_dir ? o->tokenizer_dir : o->model_dir;
	gpt2_tokenizer *tok;
	char err[1024], err2[1024];
	if (gpt2_tokenizer_load(&tok, dir, err, sizeof err) == 0)
		return tok;
	if (o->tokenizer_dir)
		cli_die(CLI_ERROR, "%s", err);
	const char *fallback = paths_gpt2_tokenizer_dir(NULL);
	if (fallback && !has_file(dir, "tokenizer.json") &&
	    !has_file(dir, "vocab.json") && !has_file(dir, "merges.txt")) {
		if (gpt2_tokenizer_load(&tok, fallback, err2, sizeof err2) != 0)
			cli_die(CLI_ERROR, "%s", err2);
		cli_warn("%s: no tokenizer files; using the GPT-2 tokenizer in %s",
		         dir, fallback);
		return tok;
	}
	cli_die(CLI_ERROR, "%s (give --tokenizer DIR%s)", err,
	        for_output ? ", or --print-ids" : "");
}

/* ---- --check -------------------------------------------------------------- */

/*
 * Open REF and find its F32-convertible tensor 'logits' (and 'ids', for a
 * prompt). Exits 2 when REF cannot be read or has no such tensor.
 */
static st_checkpoint *open_ref(const char *path, long *logits_i)
{
	st_checkpoint *ref;
	st_error e;
	memset(&e, 0, sizeof e);
	if (st_checkpoint_open(&ref, path, 0, &e) != ST_OK) {
		cli_error_path(path, &e);
		exit(CLI_ERROR);
	}
	*logits_i = st_checkpoint_find(ref, "logits", 6);
	if (*logits_i < 0)
		cli_die(CLI_ERROR, "%s: no tensor 'logits'", path);
	const st_tensor *t = st_checkpoint_tensor(ref, (size_t)*logits_i, NULL);
	if (!st_dtype_is_wide_float(t->dtype))
		cli_die(CLI_ERROR, "%s: tensor 'logits': dtype %s is not a float type",
		        path, st_dtype_name(t->dtype));
	if (t->ndim != 2)
		cli_die(CLI_ERROR, "%s: tensor 'logits': %u dimensions, expected 2 "
		        "[tokens, vocab_size]", path, t->ndim);
	return ref;
}

/* REF's integer tensor i (name) as token ids. */
static int32_t *ref_int_ids(st_checkpoint *ref, size_t i, const char *name,
                            const char *path, size_t *n)
{
	const st_tensor *t = st_checkpoint_tensor(ref, i, NULL);
	const void *data;
	st_error e;
	if (st_checkpoint_data(ref, i, &data, &e) != ST_OK)
		cli_die(CLI_ERROR, "%s", e.message);
	size_t count = (size_t)t->n_elements;
	int32_t *ids = cli_xmalloc((count ? count : 1) * sizeof *ids);
	for (size_t k = 0; k < count; k++) {
		int64_t v;
		if (t->dtype == ST_DTYPE_I64) {
			memcpy(&v, (const char *)data + 8 * k, 8);
		} else {
			int32_t w;
			memcpy(&w, (const char *)data + 4 * k, 4);
			v = w;
		}
		if (v < 0 || v > INT32_MAX)
			cli_die(CLI_ERROR, "%s: tensor '%s': %lld is not a token id",
			        path, name, (long long)v);
		ids[k] = (int32_t)v;
	}
	*n = count;
	return ids;
}

/* REF's 'ids' (I64 or I32, 1-D) as the prompt; NULL when it has none. */
static int32_t *ref_ids(st_checkpoint *ref, const char *path, size_t *n)
{
	long i = st_checkpoint_find(ref, "ids", 3);
	if (i < 0)
		return NULL;
	const st_tensor *t = st_checkpoint_tensor(ref, (size_t)i, NULL);
	if (t->ndim != 1 || (t->dtype != ST_DTYPE_I64 && t->dtype != ST_DTYPE_I32))
		return NULL;
	return ref_int_ids(ref, (size_t)i, "ids", path, n);
}

/* Compare; print the max abs diff and where; return the exit code. */
static int check_logits(st_checkpoint *ref, long li, const char *path,
                        const float *logits, int T, int V, double atol)
{
	const st_tensor *t = st_checkpoint_tensor(ref, (size_t)li, NULL);
	if (t->shape[0] != (uint64_t)T || t->shape[1] != (uint64_t)V) {
		cli_warn("%s: tensor 'logits': shape [%llu, %llu] does not match "
		         "this run ([%d, %d]: prompt tokens, vocab_size)", path,
		         (unsigned long long)t->shape[0],
		         (unsigned long long)t->shape[1], T, V);
		return CLI_NO;
	}
	const void *data;
	st_error e;
	if (st_checkpoint_data(ref, (size_t)li, &data, &e) != ST_OK)
		cli_die(CLI_ERROR, "%s", e.message);
	size_t n = (size_t)T * (size_t)V, es = st_dtype_bits(t->dtype) / 8;
	enum { CHUNK = 4096 };
	float buf[CHUNK];
	double worst = -1.0;
	size_t at = 0;
	float got_at = 0, want_at = 0;
	for (size_t i = 0; i < n; i += CHUNK) {
		size_t k = n - i < CHUNK ? n - i : CHUNK;
		st_convert(ST_DTYPE_F32, buf, t->dtype, (const char *)data + i * es,
		           k, NULL);
		for (size_t j = 0; j < k; j++) {
			float a = logits[i + j], b = buf[j];
			double d;
			if (a == b)
				d = 0.0; /* also equal infinities */
			else if (isnan(a) && isnan(b))
				d = 0.0;
			else if (isnan(a) || isnan(b))
				d = INFINITY;
			else
				d = fabs((double)a - (double)b);
			if (d > worst) {
				worst = d;
				at = i + j;
				got_at = a;
				want_at = b;
			}
		}
	}
	int ok = worst <= atol;
	printf("max abs diff %.3g at position %zu, token %zu (%.9g, reference "
	       "%.9g): %s (atol %g, %d positions x %d logits)\n", worst,
	       at / (size_t)V, at % (size_t)V, (double)got_at, (double)want_at,
	       ok ? "OK" : "MISMATCH", atol, T, V);
	return ok ? CLI_OK : CLI_NO;
}

/* REF's 'greedy' (I64 or I32, 1-D) ids; NULL when it has none. */
static int32_t *ref_greedy(st_checkpoint *ref, const char *path, size_t *n)
{
	*n = 0;
	long i = st_checkpoint_find(ref, "greedy", 6);
	if (i < 0)
		return NULL;
	const st_tensor *t = st_checkpoint_tensor(ref, (size_t)i, NULL);
	if (t->ndim != 1 || (t->dtype != ST_DTYPE_I64 && t->dtype != ST_DTYPE_I32))
		cli_die(CLI_ERROR, "%s: tensor 'greedy': expected 1-D I64 or I32 "
		        "token ids, got %s with %u dimensions", path,
		        st_dtype_name(t->dtype), t->ndim);
	return ref_int_ids(ref, (size_t)i, "greedy", path, n);
}

/*
 * Level 3: generate n ids greedily after the prompt (last: its last
 * logits) and compare with REF's; print the first step that differs.
 */
static int check_greedy(gpt2_model *m, gpt2_cache *cache, const float *last,
                        const int32_t *want, size_t n, const char *path)
{
	int V = m->config.vocab_size;
	float *logits = cli_xmalloc((size_t)V * sizeof(float));
	memcpy(logits, last, (size_t)V * sizeof(float));
	char err[1024];
	for (size_t k = 0; k < n; k++) {
		int32_t next = gpt2_argmax(logits, V);
		if (next != want[k]) {
			printf("greedy: step %zu of %zu: id %ld, reference %ld: "
			       "MISMATCH\n", k + 1, n, (long)next, (long)want[k]);
			free(logits);
			return CLI_NO;
		}
		if (k + 1 < n &&
		    gpt2_forward(m, cache, &next, 1, logits, 0, err, sizeof err))
			cli_die(CLI_ERROR, "%s", err);
	}
	printf("greedy: %zu ids match %s: OK\n", n, path);
	free(logits);
	return CLI_OK;
}

static void write_logits(const char *path, const float *logits, int T, int V)
{
	st_writer *w;
	st_error e;
	uint64_t shape[2] = {(uint64_t)T, (uint64_t)V};
	memset(&e, 0, sizeof e);
	if (st_writer_new(&w, &e) != ST_OK ||
	    st_writer_add(w, "logits", 6, ST_DTYPE_F32, 2, shape, &e) != ST_OK ||
	    st_writer_open(w, path, &e) != ST_OK ||
	    st_writer_write(w, logits, (size_t)T * (size_t)V * sizeof(float),
	                    &e) != ST_OK ||
	    st_writer_finish(w, &e) != ST_OK) {
		st_writer_free(w);
		cli_error_path(path, &e);
		exit(CLI_ERROR);
	}
	st_writer_free(w);
}

/* ---- generation ----------------------------------------------------------- */

struct output {
	int print_ids, n_printed, warned;
	int last; /* the last byte written, 0 before any */
	gpt2_tokenizer *tok;
	gpt2_decoder dec;
};

static void emit(struct output *out, int32_t id)
{
	if (out->print_ids) {
		printf("%s%ld", out->n_printed++ ? "," : "", (long)id);
		fflush(stdout);
		return;
	}
	size_t len;
	const char *bytes = gpt2_tokenizer_token_bytes(out->tok, id, &len);
	if (!bytes) {
		if (!out->warned++)
			cli_warn("token id %ld has no text in the tokenizer; "
			         "nothing printed for it", (long)id);
		return;
	}
	char *buf = cli_xmalloc(len + 4);
	size_t n = gpt2_decoder_push(&out->dec, bytes, len, buf);
	fwrite(buf, 1, n, stdout);
	if (n)
		out->last = (unsigned char)buf[n - 1];
	fflush(stdout);
	free(buf);
}

static int is_eos(const gpt2_config *cfg, int32_t id)
{
	for (int i = 0; i < cfg->n_eos; i++)
		if (cfg->eos[i] == id)
			return 1;
	return 0;
}

/*
 * Whether stdout and stderr are one file (2>&1): then the timings on
 * stderr must start on a line of their own after the text.
 */
static int same_stream(void)
{
	struct stat a, b;
	return fstat(STDOUT_FILENO, &a) == 0 && fstat(STDERR_FILENO, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* ---- main ----------------------------------------------------------------- */

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_TOKENIZE = 256, OPT_TOKENIZER, OPT_GREEDY, OPT_TOP_P,
	       OPT_IGNORE_EOS, OPT_PRINT_IDS, OPT_LOGITS_OUT, OPT_CHECK,
	       OPT_ATOL, OPT_DTYPE, OPT_MODEL_DIR, OPT_TRACE };
	static const struct option longopts[] = {
		{"model-dir", required_argument, NULL, OPT_MODEL_DIR},
		{"prompt", required_argument, NULL, 'p'},
		{"prompt-file", required_argument, NULL, 'f'},
		{"ids", required_argument, NULL, 'i'},
		{"tokenize", no_argument, NULL, OPT_TOKENIZE},
		{"tokenizer", required_argument, NULL, OPT_TOKENIZER},
		{"new-tokens", required_argument, NULL, 'n'},
		{"greedy", no_argument, NULL, OPT_GREEDY},
		{"temperature", required_argument, NULL, 't'},
		{"top-k", required_argument, NULL, 'k'},
		{"top-p", required_argument, NULL, OPT_TOP_P},
		{"seed", required_argument, NULL, 's'},
		{"ignore-eos", no_argument, NULL, OPT_IGNORE_EOS},
		{"print-ids", no_argument, NULL, OPT_PRINT_IDS},
		{"logits-out", required_argument, NULL, OPT_LOGITS_OUT},
		{"check", required_argument, NULL, OPT_CHECK},
		{"trace", required_argument, NULL, OPT_TRACE},
		{"atol", required_argument, NULL, OPT_ATOL},
		{"dtype", required_argument, NULL, OPT_DTYPE},
		{"threads", required_argument, NULL, 'j'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof *o);
	o->new_tokens = 64;
	o->temperature = 1.0;
	o->top_p = 1.0;
	o->atol = 1e-4;
	o->seed = 1337;
	o->dtype = -1;
	o->threads = cli_default_threads(1024);
	int c;
	while ((c = cli_getopt(argc, argv, "p:f:i:n:t:k:s:j:qhV", longopts)) !=
	       -1) {
		switch (c) {
		case OPT_MODEL_DIR: o->model_dir = optarg; break;
		case 'p': o->prompt = optarg; break;
		case 'f': o->prompt_file = optarg; break;
		case 'i': o->ids = optarg; break;
		case OPT_TOKENIZE: o->tokenize = 1; break;
		case OPT_TOKENIZER: o->tokenizer_dir = optarg; break;
		case 'n':
			if (cli_parse_u64(optarg, &o->new_tokens) ||
			    o->new_tokens > 100000000)
				cli_usage_error("--new-tokens: '%s' is not a count", optarg);
			break;
		case OPT_GREEDY: o->greedy = 1; break;
		case 't':
			if (cli_parse_double(optarg, &o->temperature) ||
			    !(o->temperature >= 0) || isinf(o->temperature))
				cli_usage_error("--temperature: '%s' is not a number >= 0",
				                optarg);
			o->sampling_set = 1;
			break;
		case 'k':
			if (cli_parse_u64(optarg, &o->top_k) || o->top_k > INT32_MAX)
				cli_usage_error("--top-k: '%s' is not a count", optarg);
			o->sampling_set = 1;
			break;
		case OPT_TOP_P:
			if (cli_parse_double(optarg, &o->top_p) || !(o->top_p > 0) ||
			    o->top_p > 1)
				cli_usage_error("--top-p: '%s' is not a number in (0, 1]",
				                optarg);
			o->sampling_set = 1;
			break;
		case 's':
			if (cli_parse_u64(optarg, &o->seed))
				cli_usage_error("--seed: '%s' is not a non-negative integer",
				                optarg);
			break;
		case OPT_IGNORE_EOS: o->ignore_eos = 1; break;
		case OPT_PRINT_IDS: o->print_ids = 1; break;
		case OPT_LOGITS_OUT: o->logits_out = optarg; break;
		case OPT_CHECK: o->check = optarg; break;
		case OPT_TRACE: o->trace = optarg; break;
		case OPT_ATOL: o->atol = cli_opt_nonneg("--atol", optarg); break;
		case OPT_DTYPE:
			o->dtype = gpt2_dtype_parse(optarg);
			if (o->dtype < 0)
				cli_usage_error("--dtype: unknown dtype '%s' (expected "
				                "f32, bf16 or f16)", optarg);
			break;
		case 'j': o->threads = cli_opt_threads(optarg, 1024); break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(); exit(cli_exit(CLI_OK));
		case 'V': cli_version();
		}
	}
	if (optind < argc)
		cli_usage_error("unexpected argument '%s'", argv[optind]);
	int sources = !!o->prompt + !!o->prompt_file + !!o->ids;
	if (sources > 1)
		cli_usage_error("give one of --prompt, --prompt-file and --ids");
	if (o->tokenize) {
		if (!o->prompt && !o->prompt_file)
			cli_usage_error("--tokenize needs --prompt or --prompt-file");
		if (!o->model_dir && !o->tokenizer_dir)
			cli_usage_error("--tokenize needs --model-dir or --tokenizer");
		return;
	}
	if (!o->model_dir)
		cli_usage_error("--model-dir is required");
	if (o->greedy && o->sampling_set)
		cli_usage_error("--greedy does not go with --temperature, --top-k "
		                "or --top-p");
}

int main(int argc, char **argv)
{
	struct options o;
	char err[1024];
	cli_init("gpt2run");
	parse_options(argc, argv, &o);

	/* --tokenize needs only the tokenizer. */
	int32_t *prompt = NULL;
	size_t T = 0;
	if (o.ids)
		prompt = parse_ids(o.ids, &T);
	struct stat sb;
	if (!o.tokenize && stat(o.model_dir, &sb) != 0)
		cli_die(CLI_ERROR, "%s: %s", o.model_dir, strerror(errno));
	gpt2_tokenizer *tok = NULL;
	int need_text = o.prompt || o.prompt_file;
	int logits_mode = o.logits_out || o.check || o.trace;
	if (o.tokenize || need_text || (!logits_mode && !o.print_ids))
		tok = load_tokenizer(&o, !o.tokenize && !need_text);
	if (need_text)
		prompt = encode_prompt(tok, &o, &T);
	if (o.tokenize) {
		for (size_t i = 0; i < T; i++)
			printf("%s%ld", i ? "," : "", (long)prompt[i]);
		printf("\n");
		free(prompt);
		gpt2_tokenizer_free(tok);
		return cli_exit(CLI_OK);
	}

	/* The model. */
	double t0 = cli_now();
	gpt2_model *m;
	if (gpt2_model_load(&m, o.model_dir, o.dtype, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	if (gpt2_model_set_threads(m, o.threads, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);
	double t_load = cli_now() - t0;
	const gpt2_config *cfg = &m->config;
	int V = cfg->vocab_size;
	if (!o.quiet) {
		char params[32];
		cli_fmt_count(params, sizeof params, m->num_parameters);
		fprintf(stderr, "%s: loaded %s: n_layer %d, n_head %d, n_embd %d, "
		        "vocab %d, %s parameters held as %s, in %.0f ms (%d thread%s)\n",
		        cli_progname(), o.model_dir, cfg->num_layers, cfg->num_heads,
		        cfg->channels, V, params, st_dtype_name(m->wdtype),
		        t_load * 1e3, o.threads, o.threads == 1 ? "" : "s");
	}

	/* --check without a prompt takes REF's ids. */
	st_checkpoint *ref = NULL;
	long ref_logits = -1;
	if (o.check) {
		ref = open_ref(o.check, &ref_logits);
		if (!prompt) {
			prompt = ref_ids(ref, o.check, &T);
		} else {
			size_t rn;
			int32_t *r = ref_ids(ref, o.check, &rn);
			if (r && (rn != T || memcmp(r, prompt, T * sizeof *r) != 0))
				cli_warn("%s: its tensor 'ids' is not this prompt",
				         o.check);
			free(r);
		}
	}
	/* No prompt: start from end-of-text, as GPT-2 does unconditionally. */
	if (!prompt || T == 0) {
		int eot = cfg->n_eos ? cfg->eos[0] : tok ? gpt2_tokenizer_eot(tok) : -1;
		if (eot < 0 || eot >= V)
			cli_usage_error("no prompt, and no end-of-text token to start "
			                "from: give --prompt, --prompt-file or --ids");
		free(prompt);
		prompt = cli_xmalloc(sizeof *prompt);
		prompt[0] = eot;
		T = 1;
	}
	for (size_t i = 0; i < T; i++)
		if (prompt[i] < 0 || prompt[i] >= V)
			cli_die(CLI_ERROR, "prompt token %zu: id %ld is outside the "
			        "model's vocabulary (0..%d)%s", i, (long)prompt[i], V - 1,
			        need_text ? "; is the tokenizer the model's?" : "");
	if (T > (size_t)cfg->max_seq_len)
		cli_die(CLI_ERROR, "the prompt has %zu tokens, more than the model's "
		        "context (n_positions %d)", T, cfg->max_seq_len);

	/* The cache holds the prompt and what is fed back after it. */
	size_t n_greedy = 0;
	int32_t *greedy = ref ? ref_greedy(ref, o.check, &n_greedy) : NULL;
	if (n_greedy > (size_t)cfg->max_seq_len - T) {
		cli_warn("%s: tensor 'greedy': %zu ids do not fit in the context "
		         "after the prompt; checking the first %zu", o.check,
		         n_greedy, (size_t)cfg->max_seq_len - T);
		n_greedy = (size_t)cfg->max_seq_len - T;
	}
	int capacity = (int)(T + (n_greedy ? n_greedy - 1 : 0));
	if (!logits_mode)
		capacity = T + o.new_tokens > (uint64_t)cfg->max_seq_len
		                   ? cfg->max_seq_len
		                   : (int)(T + o.new_tokens);
	gpt2_cache *cache;
	if (gpt2_cache_new(&cache, m, capacity, err, sizeof err))
		cli_die(CLI_ERROR, "%s", err);

	int rc = CLI_OK;
	if (logits_mode) {
		float *logits = cli_xmalloc(T * (size_t)V * sizeof(float));
		gpt2_trace *tr = NULL;
		if (o.trace) {
			if (gpt2_trace_new(&tr, cfg, (int)T, err, sizeof err))
				cli_die(CLI_ERROR, "%s", err);
			gpt2_cache_set_trace(cache, gpt2_trace_record, tr);
		}
		t0 = cli_now();
		if (gpt2_forward(m, cache, prompt, (int)T, logits, 1, err, sizeof err))
			cli_die(CLI_ERROR, "%s", err);
		double dt = cli_now() - t0;
		gpt2_cache_set_trace(cache, NULL, NULL);
		if (tr) {
			if (gpt2_trace_write(tr, o.trace, prompt, err, sizeof err))
				cli_die(CLI_ERROR, "%s", err);
			gpt2_trace_free(tr);
		}
		if (!o.quiet)
			fprintf(stderr, "%s: prompt: %zu tokens in %.1f ms (%.1f tokens/s)\n",
			        cli_progname(), T, dt * 1e3, (double)T / dt);
		if (o.logits_out)
			write_logits(o.logits_out, logits, (int)T, V);
		if (o.check)
			rc = check_logits(ref, ref_logits, o.check, logits, (int)T, V,
			                  o.atol);
		if (greedy && n_greedy) {
			int g = check_greedy(m, cache, logits + (T - 1) * (size_t)V,
			                     greedy, n_greedy, o.check);
			if (g != CLI_OK)
				rc = g;
		}
		free(greedy);
		free(logits);
	} else {
		gpt2_sampler s;
		float temp = o.greedy ? 0.0f : (float)o.temperature;
		if (gpt2_sampler_init(&s, V, temp, (int)o.top_k, (float)o.top_p,
		                      o.seed, err, sizeof err))
			cli_die(CLI_ERROR, "%s", err);
		s.pool = m->pool;
		struct output out = {.print_ids = o.print_ids, .tok = tok};
		float *logits = cli_xmalloc((size_t)V * sizeof(float));
		t0 = cli_now();
		if (gpt2_forward(m, cache, prompt, (int)T, logits, 0, err, sizeof err))
			cli_die(CLI_ERROR, "%s", err);
		double t_prompt = cli_now() - t0;
		t0 = cli_now();
		uint64_t n_gen = 0;
		const char *stop = NULL;
		while (n_gen < o.new_tokens) {
			int32_t next = gpt2_sample(&s, logits);
			n_gen++;
			if (!o.ignore_eos && is_eos(cfg, next)) {
				if (o.print_ids)
					emit(&out, next);
				stop = "end-of-text";
				break;
			}
			emit(&out, next);
			if (n_gen == o.new_tokens)
				break;
			if (gpt2_cache_len(cache) == cfg->max_seq_len) {
				fflush(stdout);
				cli_warn("stopped at the context limit: %d tokens "
				         "(n_positions) after %llu new tokens",
				         cfg->max_seq_len, (unsigned long long)n_gen);
				break;
			}
			if (gpt2_forward(m, cache, &next, 1, logits, 0, err, sizeof err))
				cli_die(CLI_ERROR, "%s", err);
		}
		double t_gen = cli_now() - t0;
		if (!o.print_ids) {
			char tail[4];
			size_t n = gpt2_decoder_flush(&out.dec, tail);
			fwrite(tail, 1, n, stdout);
			if (n)
				out.last = (unsigned char)tail[n - 1];
		}
		if (o.print_ids || (out.last != '\n' && out.last != 0 &&
		                    (isatty(STDOUT_FILENO) ||
		                     (!o.quiet && same_stream())))) {
			putchar('\n');
		}
		fflush(stdout);
		if (!o.quiet) {
			fprintf(stderr, "%s: prompt: %zu tokens in %.1f ms (%.1f tokens/s)\n",
			        cli_progname(), T, t_prompt * 1e3, (double)T / t_prompt);
			fprintf(stderr, "%s: generated: %llu tokens in %.1f ms (%.1f "
			        "tokens/s)%s%s\n", cli_progname(),
			        (unsigned long long)n_gen, t_gen * 1e3,
			        t_gen > 0 ? (double)n_gen / t_gen : 0.0,
			        stop ? ", stopped at " : "", stop ? stop : "");
		}
		free(logits);
		gpt2_sampler_free(&s);
	}
	st_checkpoint_close(ref);
	gpt2_cache_free(cache);
	gpt2_model_free(m);
	gpt2_tokenizer_free(tok);
	free(prompt);
	return cli_exit(rc);
}
