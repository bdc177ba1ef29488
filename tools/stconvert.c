/*
 * stconvert.c - convert a whole safetensors checkpoint: dtype (F32 <-> BF16,
 * F16...) and layout (one file <-> HF-style shards), streaming and atomic.
 *
 * What it is: a copy of every tensor of IN (a file, a shard index or a
 * snapshot directory) into OUT (a file or a snapshot directory), converting
 * floating tensors on the way. Tensor data moves in chunks of a few MiB;
 * worker threads (one per core, at most four) each read and convert their
 * own chunks in parallel and append them to the output in turn, so memory
 * stays bounded whatever the checkpoint's size and the CPUs share the work.
 * Output is atomic: a file goes through libst's writer (temporary file +
 * rename); a directory through libst's snapshot writer, built complete in
 * a temporary sibling and then swapped in, so OUT is the old one or the
 * new one at every instant.
 *
 * What it is not: the format, the canonical writer, the shard planner, the
 * snapshot directory (its other files, config.json's torch_dtype, the
 * swap) and the conversion arithmetic are libst's (st_checkpoint_*,
 * st_writer_*, st_shard_plan, st_snapshot_*, st_convert, and PyTorch .bin
 * reading); F8, F6, F4 and C64 tensors are copied, not converted, except
 * the quantized weights --to dequantizes (st/quant.h: st_quant_plan_build).
 * --to f8_e4m3 quantizes weights to block-scaled FP8 (st/quant.h:
 * st_quant_target_*), each with a new scale tensor.
 */
#include "fe/cli.h"
#include "common/dequant.h"
#include "common/quantize.h"
#include "fe/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <st.h>

/* Output bytes per chunk: large enough for full-speed I/O, small enough
 * that NWORKERS x (chunk + input + scratch) stays a few tens of MiB. */
#define CHUNK (4u << 20)
#define MAX_WORKERS 4
/* Start writeback of the output every this many bytes, so the final fsync
 * has little left to wait for. */
#define WRITEBACK_EVERY (64u << 20)

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
"config.json set to the new dtype.\n"
"\n"
"Options:\n"
"  -t, --to TYPE           convert floating tensors (F64, F32, F16, BF16) to\n"
"                          f32, f16 or bf16; integer, bool and 8-bit float\n"
"                          tensors are copied, but quantized weights are\n"
"                          dequantized: FP8 with *.weight_scale_inv (block\n"
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
"  -m, --metadata KEY=VALUE  add or replace a __metadata__ entry\n"
"                          (repeatable); the input's metadata is kept\n"
"  -s, --shard-size SIZE   split the output into shards of at most SIZE\n"
"                          bytes of tensor data (5GB decimal, 4GiB binary),\n"
"                          greedily in canonical order as huggingface_hub\n"
"                          does; needs a directory OUT. Without it a\n"
"                          sharded input becomes one file, but a sharded\n"
"                          PyTorch snapshot (pytorch_model.bin.index.json),\n"
"                          or one being dequantized or quantized, written\n"
"                          to a directory keeps its shards: one\n"
"                          model-0000k-of-0000N.safetensors per input shard\n"
"  -f, --force             replace an existing OUT (OUT may be IN)\n"
"  -v, --verbose           report every tensor, and the files copied\n"
"  -q, --quiet             no report\n"
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

struct meta_opt {
	char *key;
	const char *value;
};

struct options {
	const char *in, *out;
	int has_to, quant; /* quant: --to f8_e4m3 (has_to stays 0) */
	st_dtype to;
	uint64_t block[2];
	int has_block;
	const char **keep, **drop, **keys;
	size_t n_keep, n_drop, n_keys;
	size_t *keep_hits, *drop_hits;
	struct meta_opt *meta;
	size_t n_meta;
	uint64_t shard_size; /* 0: no sharding */
	int force, verbose, quiet;
};

static int ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);
	return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{"to", required_argument, NULL, 't'},
		{"keep", required_argument, NULL, 'k'},
		{"drop", required_argument, NULL, 'd'},
		{"key", required_argument, NULL, 'K'},
		{"metadata", required_argument, NULL, 'm'},
		{"shard-size", required_argument, NULL, 's'},
		{"block", required_argument, NULL, 'B'},
		{"force", no_argument, NULL, 'f'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof *o);
	o->block[0] = o->block[1] = ST_QUANT_DEFAULT_BLOCK;
	/* Each repeatable option occurs fewer than argc times. */
	o->keep = cli_xcalloc((size_t)argc, sizeof *o->keep);
	o->drop = cli_xcalloc((size_t)argc, sizeof *o->drop);
	o->keys = cli_xcalloc((size_t)argc, sizeof *o->keys);
	o->meta = cli_xcalloc((size_t)argc, sizeof *o->meta);
	int c;
	while ((c = cli_getopt(argc, argv, "t:k:d:m:s:fvqhV", longs)) != -1) {
		switch (c) {
		case 't':
			if (strcasecmp(optarg, "f8_e4m3") == 0) {
				o->quant = 1;
				break;
			}
			if (cli_parse_float_dtype(optarg, &o->to) != 0)
				cli_usage_error("--to: '%s' is not f32, f16, bf16 or f8_e4m3", optarg);
			o->has_to = 1;
			break;
		case 'B': {
			st_error e;
			if (quantize_parse_block(optarg, &o->block[0], &o->block[1], &e) != ST_OK)
				cli_die(CLI_ERROR, "%s", e.message);
			o->has_block = 1;
			break;
		}
		case 'k':
			o->keep[o->n_keep++] = optarg;
			break;
		case 'd':
			o->drop[o->n_drop++] = optarg;
			break;
		case 'K':
			o->keys[o->n_keys++] = optarg;
			break;
		case 'm': {
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg)
				cli_usage_error("--metadata: '%s' is not KEY=VALUE", optarg);
			struct meta_opt *m = &o->meta[o->n_meta++];
			m->key = cli_xstrdup(optarg);
			m->key[eq - optarg] = 0;
			m->value = eq + 1;
			break;
		}
		case 's':
			if (cli_parse_size(optarg, &o->shard_size) != 0)
				cli_usage_error("--shard-size: '%s' is not a size (e.g. 5GB, 4GiB, 1000000)",
				                optarg);
			break;
		case 'f':
			o->force = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			usage();
			exit(cli_exit(CLI_OK));
		case 'V':
			cli_version();
		}
	}
	if (o->quant && o->has_to)
		cli_usage_error("--to given twice");
	if (o->has_block && !o->quant)
		cli_usage_error("--block needs --to f8_e4m3");
	if (argc - optind != 2)
		cli_usage_error(argc - optind < 2 ? "expected IN and OUT" :
		                "too many arguments: expected IN and OUT");
	o->in = argv[optind];
	o->out = argv[optind + 1];
	if (!*o->in || !*o->out)
		cli_usage_error("IN and OUT must not be empty");
	o->keep_hits = cli_xcalloc(o->n_keep, sizeof *o->keep_hits);
	o->drop_hits = cli_xcalloc(o->n_drop, sizeof *o->drop_hits);
}

/* ---- cleanup and signals ------------------------------------------------- */

/*
 * What must go if the run does not complete: the writer not yet finished
 * and the snapshot not yet committed (libst removes their temporaries).
 * Signal handlers only record the signal (signals.h); the workers poll it
 * between chunks and the main thread then frees these and re-raises the
 * signal (removing a directory tree is not async-signal-safe).
 */
static struct {
	st_snapshot *snap; /* snapshot not yet committed, or NULL */
	st_writer *writer; /* writer not yet finished, or NULL */
} g_clean;

static void cleanup(void)
{
	if (g_clean.writer) {
		st_writer_free(g_clean.writer);
		g_clean.writer = NULL;
	}
	if (g_clean.snap) {
		st_snapshot_free(g_clean.snap);
		g_clean.snap = NULL;
	}
}

/* Give up: remove every temporary, leave OUT as it was, exit. */
static _Noreturn void abandon(void)
{
	cleanup();
	signals_reraise();
	exit(CLI_ERROR);
}

static _Noreturn void fail(const char *fmt, ...) CLI_PRINTF(1, 2);
static _Noreturn void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_vwarn(fmt, ap);
	va_end(ap);
	abandon();
}

static _Noreturn void fail_st(const st_error *err)
{
	cli_error(err);
	abandon();
}

static void check_signal(void)
{
	if (signals_caught())
		abandon();
}

/* ---- the plan: what happens to each tensor --------------------------------- */

enum action {
	ACT_COPY, ACT_CONVERT, ACT_KEEP, ACT_DROP, ACT_ASIS, ACT_DEQUANT,
	ACT_QUANT,  /* to F8_E4M3 (st_quant_target) */
	ACT_QSCALE, /* the F32 scales of an ACT_QUANT item (no input tensor) */
	ACT_COUNT
};

typedef struct item {
	size_t src;         /* tensor index in the checkpoint */
	size_t file;        /* input file holding it */
	const st_tensor *t; /* the input tensor */
	enum action action;
	st_dtype out;       /* output dtype */
	uint64_t out_bytes;
	unsigned shard;     /* output file */
	st_convert_stats stats;
	const st_quant_tensor *dq; /* ACT_DEQUANT: the pair (st_quant_plan) */
	const st_quant_target *qz; /* ACT_QUANT, ACT_QSCALE: the weight */
} item;

/* The scaled weights and their scales, when --to dequantizes. */
static st_quant_plan g_dq;

/* --to f8_e4m3: one per input tensor, and the scale tensors' headers. */
static st_quant_target *g_qz;
static st_tensor *g_qz_scales;
static size_t g_qz_scratch;

static int glob_match(const char *glob, const st_tensor *t)
{
	/* fnmatch sees names up to a NUL byte; names holding NUL are rare
	 * enough that matching their first part is an acceptable limit. */
	return fnmatch(glob, t->name, 0) == 0;
}

static void plan_items(st_checkpoint *c, struct options *o, item *items)
{
	size_t n = st_checkpoint_n_tensors(c);
	for (size_t i = 0; i < n; i++) {
		item *it = &items[i];
		size_t file = 0;
		it->src = i;
		it->t = st_checkpoint_tensor(c, i, &file);
		it->file = file;
		it->out = it->t->dtype;
		int dropped = 0, kept = 0;
		for (size_t g = 0; g < o->n_drop; g++) {
			if (glob_match(o->drop[g], it->t)) {
				o->drop_hits[g]++;
				dropped = 1;
			}
		}
		for (size_t g = 0; g < o->n_keep && !dropped; g++) {
			if (glob_match(o->keep[g], it->t)) {
				o->keep_hits[g]++;
				kept = 1;
			}
		}
		const st_quant_tensor *dq = o->has_to && g_dq.t ? &g_dq.t[i] : NULL;
		if (dq && dq->role == ST_QUANT_ROLE_SCALE && !dropped)
			it->action = ACT_DROP; /* folded into its weight */
		else if (dq && dq->role != ST_QUANT_ROLE_PLAIN && !dropped) {
			it->action = ACT_DEQUANT;
			it->out = o->to;
			it->dq = dq;
		} else if (dropped)
			it->action = ACT_DROP;
		else if (o->quant && !kept && st_quant_target_wanted(it->t)) {
			it->action = ACT_QUANT;
			it->out = ST_DTYPE_F8_E4M3;
		} else if (o->quant)
			it->action = kept && st_dtype_is_wide_float(it->t->dtype) ? ACT_KEEP : ACT_COPY;
		else if (!o->has_to)
			it->action = ACT_COPY;
		else if (!st_dtype_is_wide_float(it->t->dtype))
			it->action = ACT_ASIS;
		else if (kept)
			it->action = ACT_KEEP;
		else if (it->t->dtype == o->to)
			it->action = ACT_COPY;
		else {
			it->action = ACT_CONVERT;
			it->out = o->to;
		}
		/* A PyTorch alias (tied weights) is written once: safetensors
		 * cannot hold two names for one piece of data. */
		st_file *in = st_checkpoint_file(c, file);
		long self = st_file_find(in, it->t->name, it->t->name_len);
		long of = self < 0 ? -1 : st_file_alias_of(in, (size_t)self);
		if (of >= 0 && it->action != ACT_DROP) {
			it->action = ACT_DROP;
			char *a = cli_printable(it->t->name, it->t->name_len);
			const st_tensor *k = st_file_tensor(in, (size_t)of);
			char *b = cli_printable(k->name, k->name_len);
			if (!o->quiet)
				cli_warn("alias: '%s' is the same data as '%s'; written "
				         "once, as '%s'", a, b, b);
			free(a);
			free(b);
		}
		/* The input was validated, so n_elements x bits fits in 64 bits for
		 * the input dtype; the output dtype is at most twice as wide. */
		it->out_bytes = it->t->n_elements / 8 * st_dtype_bits(it->out) +
		                it->t->n_elements % 8 * st_dtype_bits(it->out) / 8;
		if (it->action == ACT_DEQUANT)
			it->out_bytes = it->dq->n_out * (st_dtype_bits(it->out) / 8);
	}
	for (size_t g = 0; g < o->n_drop; g++)
		if (!o->drop_hits[g])
			cli_warn("warning: --drop '%s' matches no tensor", o->drop[g]);
	for (size_t g = 0; g < o->n_keep; g++)
		if (!o->keep_hits[g])
			cli_warn("warning: --keep '%s' matches no tensor", o->keep[g]);
}

/* Declare the metadata and the tensors of one output file to a writer. */
static void writer_setup(st_writer *w, st_checkpoint *c, const struct options *o,
                         item *items, size_t n_items, int shard)
{
	st_error err;
	/* Metadata of every input file, the first file winning a conflict
	 * (set in reverse so earlier files overwrite later ones), then the
	 * --metadata options in order. */
	for (size_t f = st_checkpoint_n_files(c); f-- > 0;) {
		st_file *file = st_checkpoint_file(c, f);
		for (size_t m = 0; m < st_file_n_meta(file); m++) {
			const st_meta *meta = st_file_meta(file, m);
			if (st_writer_set_meta(w, meta->key, meta->value, &err) != ST_OK)
				fail_st(&err);
		}
	}
	for (size_t m = 0; m < o->n_meta; m++) {
		if (st_writer_set_meta(w, o->meta[m].key, o->meta[m].value, &err) != ST_OK)
			fail("--metadata %s=%s: %s", o->meta[m].key, o->meta[m].value, err.message);
	}
	for (size_t i = 0; i < n_items; i++) {
		const item *it = &items[i];
		if (it->action == ACT_DROP || (shard >= 0 && it->shard != (unsigned)shard))
			continue;
		int renamed = it->action == ACT_DEQUANT && it->dq->out_name;
		if (st_writer_add(w, renamed ? it->dq->out_name : it->t->name,
		                  renamed ? it->dq->out_name_len : it->t->name_len, it->out,
		                  renamed ? 3 : it->t->ndim, renamed ? it->dq->out_shape : it->t->shape,
		                  &err) != ST_OK)
			fail_st(&err);
	}
}

/* The item of a tensor the writer lists (by name, through the checkpoint). */
static item *writer_item(st_writer *w, size_t i, st_checkpoint *c, item *items, size_t n)
{
	const st_tensor *t = st_writer_tensor(w, i);
	long src = st_checkpoint_find(c, t->name, t->name_len);
	if (src >= 0 && items[src].action != ACT_DROP)
		return &items[src];
	/* A quantized weight's scale tensor is new. */
	for (size_t k = st_checkpoint_n_tensors(c); k < n; k++)
		if (items[k].t->name_len == t->name_len &&
		    !memcmp(items[k].t->name, t->name, t->name_len))
			return &items[k];
	/* A dequantized MXFP4 weight has its new name (NAME_blocks -> NAME). */
	for (size_t k = 0; k < g_dq.n; k++)
		if (g_dq.t[k].out_name && g_dq.t[k].out_name_len == t->name_len &&
		    !memcmp(g_dq.t[k].out_name, t->name, t->name_len))
			return &items[k];
	cli_die(CLI_ERROR, "internal error: tensor missing from the checkpoint");
}

/*
 * Split the output into shards of at most limit bytes (st_shard_plan:
 * huggingface_hub's rule, over the tensors as they will be written).
 * Returns the number of shards (at least 1).
 */
static unsigned split_shards(item *items, size_t n, uint64_t limit)
{
	st_tensor *t = cli_xcalloc(n ? n : 1, sizeof *t);
	unsigned *shard = cli_xcalloc(n ? n : 1, sizeof *shard);
	size_t *of = cli_xcalloc(n ? n : 1, sizeof *of);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (items[i].action == ACT_DROP)
			continue;
		t[m] = *items[i].t;
		t[m].dtype = items[i].out;
		t[m].n_bytes = items[i].out_bytes;
		of[m++] = i;
	}
	unsigned n_shards;
	st_error err;
	if (st_shard_plan(t, m, limit, shard, &n_shards, &err) != ST_OK)
		fail_st(&err);
	for (size_t k = 0; k < m; k++)
		items[of[k]].shard = shard[k];
	free(t);
	free(shard);
	free(of);
	return n_shards;
}

/*
 * A sharded PyTorch checkpoint (pytorch_model-0000k-of-0000N.bin and its
 * index), or a sharded checkpoint being dequantized or quantized, written
 * to a directory without --shard-size keeps its shards:
 * output shard k holds what input shard k held, the shards numbered as
 * the input's file names sort (an index lists them in the order its
 * sorted tensor names first name them). A shard left with no tensor
 * (--drop) is not written; the rest are numbered without it. Returns the
 * number of output shards (at least 1).
 */
static unsigned keep_shards(st_checkpoint *c, item *items, size_t n, int verbose)
{
	size_t nf = st_checkpoint_n_files(c);
	size_t *order = cli_xcalloc(nf, sizeof *order);
	unsigned *rank = cli_xcalloc(nf, sizeof *rank);
	int *used = cli_xcalloc(nf, sizeof *used);
	for (size_t i = 0; i < n; i++)
		if (items[i].action != ACT_DROP)
			used[items[i].file] = 1;
	for (size_t f = 0; f < nf; f++) { /* insertion sort by path: few files */
		size_t k = f;
		const char *p = st_file_path(st_checkpoint_file(c, f));
		while (k > 0 && strcmp(st_file_path(st_checkpoint_file(c, order[k - 1])), p) > 0) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = f;
	}
	unsigned n_shards = 0;
	for (size_t k = 0; k < nf; k++)
		if (used[order[k]])
			rank[order[k]] = n_shards++;
	for (size_t i = 0; i < n; i++)
		items[i].shard = rank[items[i].file];
	for (size_t k = 0; verbose && k < nf; k++) {
		const char *p = st_file_path(st_checkpoint_file(c, order[k]));
		const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
		char *shown = cli_printable(base, strlen(base));
		char name[64];
		if (used[order[k]]) {
			st_snapshot_file_name(name, sizeof name, rank[order[k]], n_shards);
			cli_warn("shard %s -> %s", shown, name);
		} else {
			cli_warn("shard %s: every tensor dropped; not written", shown);
		}
		free(shown);
	}
	free(order);
	free(rank);
	free(used);
	return n_shards ? n_shards : 1;
}

/* ---- the data path --------------------------------------------------------- */

/*
 * The tensors of one output file stream through st_stream_run
 * (st/stream.h, recipe 1): one item per output tensor in write
 * order, cut into chunks of at most CHUNK bytes (a chunk may hold the ends
 * of several small tensors), read and converted on the worker threads, and
 * appended to the writer in chunk order by the sink.
 */
typedef struct job {
	st_writer *w;
	item **items;             /* in write order, one per stream item */
	unsigned n_workers;
	st_convert_stats *stats;  /* n_workers x n_items, per worker and item */
	size_t n_items;
	cli_progress *progress;
	int write_failed;         /* the failure was the writer's */
} job;

/* Output bytes of a piece of item it: a copy is read byte by byte, a
 * conversion element by element. */
static uint64_t piece_out_bytes(const item *it, uint64_t n_groups)
{
	if (it->action == ACT_QSCALE)
		return n_groups * 4;
	return it->out == it->t->dtype ? n_groups : n_groups * (st_dtype_bits(it->out) / 8);
}

/* Read pieces -> chunk->out: copy, or convert (any worker, concurrently). */
static int convert_work(void *ctx, const st_stream_chunk *c, st_error *err)
{
	job *j = ctx;
	if (signals_caught()) {
		err->code = ST_EIO;
		err->sys_errno = 0;
		snprintf(err->message, sizeof err->message, "interrupted by signal %d",
		         signals_caught());
		return -1;
	}
	unsigned char *out = c->out;
	for (size_t k = 0; k < c->n_pieces; k++) {
		const st_stream_piece *p = &c->pieces[k];
		const item *it = j->items[p->item];
		if (it->action == ACT_QUANT || it->action == ACT_QSCALE) {
			if (st_quant_target_range(it->qz, it->action == ACT_QSCALE, out, p->group, p->n_groups,
			             c->scratch, err) != ST_OK)
				return -1;
		} else if (it->action == ACT_DEQUANT) {
			st_quant_range(it->dq, it->out, out, p->data[0], p->group, p->n_groups, c->scratch);
		} else if (it->out == it->t->dtype) {
			memcpy(out, p->data[0], (size_t)p->n_groups);
		} else if (st_convert(it->out, out, it->t->dtype, p->data[0], (size_t)p->n_groups,
		                      &j->stats[(size_t)c->worker * j->n_items + p->item]) != ST_OK) {
			cli_die(CLI_ERROR, "internal error: cannot convert %s to %s",
			        st_dtype_name(it->t->dtype), st_dtype_name(it->out));
		}
		out += piece_out_bytes(it, p->n_groups);
	}
	return 0;
}

/* chunk->out -> the writer, in chunk order. */
static int convert_sink(void *ctx, const st_stream_chunk *c, st_error *err)
{
	job *j = ctx;
	uint64_t n = 0;
	for (size_t k = 0; k < c->n_pieces; k++)
		n += piece_out_bytes(j->items[c->pieces[k].item], c->pieces[k].n_groups);
	if (st_writer_write(j->w, c->out, (size_t)n, err) != ST_OK) {
		j->write_failed = 1;
		return -1;
	}
	return 0;
}

/*
 * Progress in input bytes: what the stream read, and what the work read
 * itself (a quantized weight's block rows; MXFP4 blocks, two values a
 * byte, through their mapping).
 */
static void convert_progress(void *ctx, const st_stream_chunk *c, uint64_t bytes)
{
	job *j = ctx;
	for (size_t k = 0; k < c->n_pieces; k++) {
		const st_stream_piece *p = &c->pieces[k];
		const item *it = j->items[p->item];
		if (it->action == ACT_QUANT)
			bytes += p->n_groups * (st_dtype_bits(it->t->dtype) / 8);
		else if (it->action == ACT_DEQUANT && it->dq->role == ST_QUANT_ROLE_MXFP4)
			bytes += p->n_groups / 2;
	}
	cli_progress_add(j->progress, bytes);
}

/* Write the data of every tensor of an open writer; the workers' stats are
 * added to the items. Returns 0, or -1 with err set. */
static int run_job(job *j, st_checkpoint *c, st_error *err)
{
	size_t n = j->n_items;
	st_stream_item *pi = cli_xcalloc(n ? n : 1, sizeof *pi);
	for (size_t i = 0; i < n; i++) {
		const item *it = j->items[i];
		pi[i].tensor[0] = it->src;
		if (it->action == ACT_QUANT || it->action == ACT_QSCALE) {
			/* Read a block row at a time by quantize.c. */
			pi[i].n_groups = it->action == ACT_QUANT ? it->t->n_elements
			                                         : it->out_bytes / 4;
			pi[i].group_bytes[0] = 0;
			pi[i].cost = it->action == ACT_QUANT ? 1 : 4;
		} else if (it->action == ACT_DEQUANT) {
			/* FP8: a code a byte, read by the stream; MXFP4: read
			 * through its mapping by dequant.c. */
			pi[i].n_groups = it->dq->n_out;
			pi[i].group_bytes[0] = it->dq->role == ST_QUANT_ROLE_FP8 ? 1 : 0;
			pi[i].cost = st_dtype_bits(it->out) / 8;
		} else if (it->out == it->t->dtype) {
			pi[i].n_groups = it->t->n_bytes;
			pi[i].group_bytes[0] = 1;
			pi[i].cost = 1;
		} else {
			unsigned in = st_dtype_bits(it->t->dtype) / 8, outb = st_dtype_bits(it->out) / 8;
			pi[i].n_groups = it->t->n_elements;
			pi[i].group_bytes[0] = in;
			/* A chunk bounds both its input and its output bytes. */
			pi[i].cost = in > outb ? in : outb;
		}
	}
	j->stats = cli_xcalloc((size_t)j->n_workers * (n ? n : 1), sizeof *j->stats);
	st_stream_config cfg = {
		.src = {c, NULL},
		.items = pi,
		.n_items = n,
		.chunk_size = CHUNK,
		.pack = 1,
		.threads = j->n_workers,
		.out_size = CHUNK,
		.scratch_size = ST_QUANT_SCRATCH(g_dq.max_row) > g_qz_scratch ? ST_QUANT_SCRATCH(g_dq.max_row)
		                                                        : g_qz_scratch,
		.work = convert_work,
		.sink = convert_sink,
		.progress = convert_progress,
		.ctx = j,
	};
	int rc = st_stream_run(&cfg, err);
	if (rc == ST_OK) {
		for (unsigned w = 0; w < j->n_workers; w++) {
			for (size_t k = 0; k < n; k++) {
				j->items[k]->stats.overflow += j->stats[(size_t)w * n + k].overflow;
				j->items[k]->stats.underflow += j->stats[(size_t)w * n + k].underflow;
			}
		}
	}
	free(j->stats);
	free(pi);
	return rc == ST_OK ? 0 : -1;
}

/*
 * A write to the output failed. libst names the temporary file, which is
 * gone by the time the user reads the message; name the file as the user
 * knows it (shown) and the system error instead.
 */
static _Noreturn void fail_write(const char *shown, const st_error *err)
{
	if (err->sys_errno)
		fail("%s: cannot write: %s", shown, strerror(err->sys_errno));
	fail_st(err);
}

/* What every output file of a run shares: the input, the plan, the threads. */
typedef struct run {
	st_checkpoint *c;
	const struct options *o;
	item *items;           /* one per input tensor */
	size_t n_items;
	unsigned n_workers;
	cli_progress progress;
} run;

/*
 * Write one output file (all tensors, or those of one shard): to path, or
 * when snap is set to file path of the snapshot. shown is its name in
 * messages (where it will be, not the temporary).
 */
static void write_file(run *r, st_snapshot *snap, const char *path, const char *shown,
                       int shard)
{
	st_error err;
	st_writer *w;
	if (st_writer_new(&w, &err) != ST_OK)
		fail_st(&err);
	g_clean.writer = w;
	writer_setup(w, r->c, r->o, r->items, r->n_items, shard);
	/* The disk works while the data is still coming, so the final fsync
	 * has little left to wait for. */
	st_writer_set_writeback(w, WRITEBACK_EVERY);
	size_t n = st_writer_n_tensors(w);
	job j;
	memset(&j, 0, sizeof j);
	j.w = w;
	j.items = cli_xmalloc((n ? n : 1) * sizeof *j.items);
	j.n_items = n;
	for (size_t i = 0; i < n; i++)
		j.items[i] = writer_item(w, i, r->c, r->items, r->n_items);
	j.n_workers = r->n_workers;
	j.progress = &r->progress;
	check_signal();
	if ((snap ? st_snapshot_open_writer(snap, w, path, &err)
	          : st_writer_open(w, path, &err)) != ST_OK)
		fail_write(shown, &err);
	int rc = run_job(&j, r->c, &err);
	free(j.items);
	if (rc != 0) {
		if (signals_caught())
			abandon();
		if (j.write_failed)
			fail_write(shown, &err);
		fail_st(&err);
	}
	check_signal();
	if (st_writer_finish(w, &err) != ST_OK)
		fail_write(shown, &err);
	st_writer_free(w);
	g_clean.writer = NULL;
}

/* Write file name of a directory OUT into the snapshot. */
static void write_member(run *r, st_snapshot *snap, const char *name, int shard)
{
	const char *out = r->o->out;
	size_t len = strlen(out) + strlen(name) + 2;
	char *shown = cli_xmalloc(len);
	snprintf(shown, len, "%s%s%s", out, out[strlen(out) - 1] == '/' ? "" : "/", name);
	write_file(r, snap, name, shown, shard);
	free(shown);
}

/* What libst did with the snapshot's other files, for the report. */
static void snapshot_note(void *ctx, int severity, const char *message)
{
	const struct options *o = ctx;
	if (severity == ST_PROBLEM_WARNING)
		cli_warn("warning: %s", message);
	else if (o->verbose)
		cli_warn("%s", message);
}

/* ---- dequantization ----------------------------------------------------------- */

/*
 * The config.json in the folder of IN's files (st_config_read), read once
 * for the run: the FP8 block size comes from it, and the one a directory
 * OUT gets is made from it. NULL when there is none; exits 2 on an
 * unreadable one.
 */
static char *g_config, *g_config_file;
static size_t g_config_len;
static int g_config_read;

static const char *in_config(const st_checkpoint *c, size_t *len)
{
	if (!g_config_read) {
		st_error err;
		int rc = st_config_read(st_checkpoint_dir(c), &g_config, &g_config_len, &g_config_file,
		                        &err);
		if (rc != ST_OK && rc != ST_ENOTFOUND)
			cli_die(CLI_ERROR, "%s", err.message);
		g_config_read = 1;
	}
	*len = g_config_len;
	return g_config;
}

/*
 * The FP8 block size IN's config.json names (the default without one), as
 * stinfo and stdiff read it: a file inside a snapshot counts too. Returns
 * whether it names one; exits 2 on a hostile or unreadable one.
 */
static int in_block_size(const st_checkpoint *c, uint64_t *b0, uint64_t *b1)
{
	st_error err;
	size_t len;
	const char *text = in_config(c, &len);
	*b0 = *b1 = ST_QUANT_DEFAULT_BLOCK;
	if (!text)
		return 0;
	int found = dequant_config_text_block_size(text, len, g_config_file, b0, b1, &err);
	if (found < 0)
		cli_die(CLI_ERROR, "%s", err.message);
	return found;
}

/* Pair the scaled weights with their scales (FP8 blocks from config.json). */
static void dequant_plan(st_checkpoint *c, const struct options *o)
{
	uint64_t b0, b1;
	st_error err;
	in_block_size(c, &b0, &b1);
	if (st_quant_plan_build(&g_dq, c, b0, b1, &err) != 0) {
		cli_error(&err);
		exit(CLI_ERROR);
	}
}

/*
 * The config.json a directory OUT gets, made from IN's text (in_config)
 * and added before st_snapshot_copy_dir, which then leaves IN's alone:
 * --to f8_e4m3's quantization_config, or, when weights are dequantized,
 * none and the target's torch_dtype. Nothing is added when there is
 * nothing to change or IN's is not a JSON object (copy_dir then copies it
 * and says so).
 */
static void given_config(st_snapshot *snap, const st_checkpoint *c, const struct options *o)
{
	size_t len = 0, out_len = 0;
	const char *config = in_config(c, &len);
	char *out = NULL;
	st_error err;
	int rc = ST_EINVAL;
	if (!config)
		return;
	if (o->quant)
		rc = st_quant_config_fp8(config, len, o->block[0], o->block[1], &out, &out_len, &err);
	else if (o->has_to && g_dq.n_fp8 + g_dq.n_mxfp4) /* not the pairs quantizing kept */
		rc = st_quant_config_dequantized(config, len, st_torch_dtype_name(o->to), &out, &out_len,
		                                 &err);
	if (rc == ST_OK && st_snapshot_add_file(snap, "config.json", out, out_len, 0644, &err) != ST_OK)
		fail_st(&err);
	free(out);
}

/*
 * Prepare every ACT_QUANT item of the n input items and append its scale
 * tensor as an ACT_QSCALE item (items has room for 2n). Returns the items
 * in all.
 */
static size_t quant_plan(st_checkpoint *c, const struct options *o, item *items, size_t n)
{
	size_t m = n;
	st_error err;
	g_qz = cli_xcalloc(n ? n : 1, sizeof *g_qz);
	g_qz_scales = cli_xcalloc(n ? n : 1, sizeof *g_qz_scales);
	for (size_t i = 0; i < n; i++) {
		if (items[i].action != ACT_QUANT)
			continue;
		st_quant_target *q = &g_qz[i];
		if (st_quant_target_prepare(q, c, items[i].src, o->block[0], o->block[1], &err) != 0)
			fail_st(&err);
		if (st_quant_target_scratch(q) > g_qz_scratch)
			g_qz_scratch = st_quant_target_scratch(q);
		st_tensor *s = &g_qz_scales[m - n];
		s->name = q->scale_name;
		s->name_len = q->scale_name_len;
		s->dtype = ST_DTYPE_F32;
		s->ndim = 2;
		s->shape = q->scale_shape;
		s->n_elements = q->scale_shape[0] * q->scale_shape[1];
		s->n_bytes = s->n_elements * 4;
		items[i].qz = q;
		items[m] = (item){.src = items[i].src, .file = items[i].file, .t = s,
		                  .action = ACT_QSCALE, .out = ST_DTYPE_F32, .out_bytes = s->n_bytes,
		                  .qz = q};
		m++;
	}
	return m;
}

/* "FILE: tensor 'NAME'" of tensor i of c, for messages. */
static void tensor_where(st_checkpoint *c, size_t i, char *buf, size_t size)
{
	size_t f = 0;
	const st_tensor *t = st_checkpoint_tensor(c, i, &f);
	snprintf(buf, size, "%s: tensor '%.*s'", st_file_path(st_checkpoint_file(c, f)),
	         (int)(t->name_len > 200 ? 200 : t->name_len), t->name);
}

/*
 * --to f8_e4m3 on a checkpoint with quantized weights already: each FP8
 * weight and its scale are copied as they are, never quantized again,
 * when the config.json written will describe them: an F8_E4M3 X.weight
 * with an X.weight_scale_inv grid of R x C blocks, --block's (which then
 * defaults to IN's config.json weight_block_size; without one the pairs
 * are read with --block's blocks). Anything else (another
 * F8 type, per-channel or per-tensor scales, other blocks, MXFP4, an F8
 * weight without a scale) would leave config.json wrong: an error naming
 * the tensor, before anything is written. The pairs go to g_dq.
 */
static void requant_check(st_checkpoint *c, struct options *o, const item *items)
{
	uint64_t b0, b1;
	st_error err;
	int found = in_block_size(c, &b0, &b1);
	if (!found) { /* no config.json to say: the weights' blocks are --block's */
		b0 = o->block[0];
		b1 = o->block[1];
	}
	if (st_quant_plan_build(&g_dq, c, b0, b1, &err) != 0) {
		cli_error(&err);
		exit(CLI_ERROR);
	}
	if (g_dq.n_fp8 && found && !o->has_block) {
		o->block[0] = b0;
		o->block[1] = b1;
	}
	for (size_t i = 0; i < g_dq.n; i++) {
		const st_quant_tensor *d = &g_dq.t[i];
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		char where[512], sa[256], sb[256], want[256];
		if (items[i].action == ACT_DROP) /* --drop: not in OUT */
			continue;
		if (d->role == ST_QUANT_ROLE_MXFP4 || d->role == ST_QUANT_ROLE_FP8 ||
		    (d->role == ST_QUANT_ROLE_PLAIN && t->ndim >= 2 && st_quant_is_f8_weight(t->dtype)))
			tensor_where(c, i, where, sizeof where);
		if (d->role == ST_QUANT_ROLE_MXFP4)
			cli_die(CLI_ERROR, "%s: MXFP4 blocks cannot be kept beside the FP8 "
			        "quantization_config --to f8_e4m3 writes; dequantize first (--to bf16)",
			        where);
		if (d->role == ST_QUANT_ROLE_PLAIN && t->ndim >= 2 && st_quant_is_f8_weight(t->dtype))
			cli_die(CLI_ERROR, "%s: %s without a scale: config.json's FP8 "
			        "quantization_config would call it scaled", where, st_dtype_name(t->dtype));
		if (d->role != ST_QUANT_ROLE_FP8)
			continue;
		const st_tensor *s = st_checkpoint_tensor(c, d->scale, NULL);
		/* X.weight's scale is X.weight_scale_inv or X.weight_scale. */
		int inv = s->name_len == t->name_len + 10;
		st_quant_fp8 l;
		int fits = st_quant_fp8_block(&l, d->fp8.experts, d->fp8.rows, d->fp8.cols,
		                              o->block[0], o->block[1]) == ST_OK &&
		           t->dtype == ST_DTYPE_F8_E4M3 && s->ndim == t->ndim &&
		           s->shape[s->ndim - 2] == l.scale_rows && s->shape[s->ndim - 1] == l.scale_cols &&
		           inv;
		if (fits)
			continue;
		cli_fmt_shape(sa, sizeof sa, t);
		cli_fmt_shape(sb, sizeof sb, s);
		snprintf(want, sizeof want, "F8_E4M3 with %llux%llu block scales %.*s_scale_inv "
		         "[%llu, %llu]", (unsigned long long)o->block[0],
		         (unsigned long long)o->block[1], (int)(t->name_len > 100 ? 100 : t->name_len),
		         t->name, (unsigned long long)l.scale_rows, (unsigned long long)l.scale_cols);
		/* The weights IN's config.json names, when they would fit. */
		int other = d->fp8.kind == ST_QUANT_BLOCK && t->dtype == ST_DTYPE_F8_E4M3 &&
		            (b0 != o->block[0] || b1 != o->block[1]) && inv;
		char hint[64] = "";
		if (other)
			snprintf(hint, sizeof hint, " or give --block %llu,%llu", (unsigned long long)b0,
			         (unsigned long long)b1);
		cli_die(CLI_ERROR, "%s: already quantized as %s %s with scale '%.*s' %s %s; the "
		        "config.json written describes %s: dequantize first (--to bf16)%s",
		        where, st_dtype_name(t->dtype), sa, (int)(s->name_len > 200 ? 200 : s->name_len),
		        s->name, st_dtype_name(s->dtype), sb, want, hint);
	}
}

/* ---- output location ------------------------------------------------------- */

struct outloc {
	int is_dir;
	int exists;
};

static void locate_out(const struct options *o, struct outloc *loc)
{
	struct stat st;
	memset(loc, 0, sizeof *loc);
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
	} else if (lstat(o->out, &st) == 0) {
		/* A dangling link: replacing it replaces the user's link. */
		if (!o->force)
			cli_die(CLI_ERROR, "%s: already exists, a link to nothing (use --force "
			        "to replace it)", o->out);
		loc->is_dir = trailing_slash || !ends_with(o->out, ".safetensors");
	} else {
		loc->is_dir = trailing_slash || !ends_with(o->out, ".safetensors");
	}
	if (loc->exists && !o->force)
		cli_die(CLI_ERROR, "%s: already exists (use --force to replace it)", o->out);
	if (!loc->exists && ends_with(o->out, ".index.json"))
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
static void check_block_out(const struct options *o, const struct outloc *loc,
                            const item *items, size_t n)
{
	if (loc->is_dir || !o->quant ||
	    (o->block[0] == ST_QUANT_DEFAULT_BLOCK && o->block[1] == ST_QUANT_DEFAULT_BLOCK))
		return;
	for (size_t i = 0; i < n; i++)
		if (items[i].action == ACT_QUANT)
			cli_usage_error("%llux%llu blocks are recorded in config.json's "
			                "quantization_config: OUT must be a directory (a single "
			                "file is read as %dx%d)", (unsigned long long)o->block[0],
			                (unsigned long long)o->block[1], ST_QUANT_DEFAULT_BLOCK,
			                ST_QUANT_DEFAULT_BLOCK);
}

/*
 * Write a directory OUT: the shard files (or one), the index, a directory
 * IN's other files, what an existing OUT held besides its checkpoint; then
 * swap it in. libst's snapshot writer does each step atomically.
 */
static void write_dir(run *r, unsigned n_shards)
{
	const struct options *o = r->o;
	st_error err;
	check_signal();
	if (st_snapshot_open(&g_clean.snap, o->out, ST_SNAPSHOT_REPLACE, &err) != ST_OK)
		fail_st(&err);
	st_snapshot *snap = g_clean.snap;
	char (*names)[64] = cli_xcalloc(n_shards, sizeof *names);
	for (unsigned k = 0; k < n_shards; k++) {
		st_snapshot_file_name(names[k], sizeof names[k], k, n_shards);
		write_member(r, snap, names[k], n_shards == 1 ? -1 : (int)k);
	}
	if (n_shards > 1) {
		st_index_entry *entries = cli_xcalloc(r->n_items ? r->n_items : 1, sizeof *entries);
		size_t n_entries = 0;
		uint64_t total = 0;
		for (size_t i = 0; i < r->n_items; i++) {
			const item *it = &r->items[i];
			if (it->action == ACT_DROP)
				continue;
			entries[n_entries++] = (st_index_entry){it->t->name, it->t->name_len,
			                                        names[it->shard]};
			total += it->out_bytes;
		}
		if (st_snapshot_write_index(snap, total, entries, n_entries, &err) != ST_OK)
			fail_st(&err);
		free(entries);
	}
	free(names);
	cli_progress_done(&r->progress);
	struct stat st;
	int in_dir = stat(o->in, &st) == 0 && S_ISDIR(st.st_mode);
	if (in_dir)
		given_config(snap, r->c, o);
	if (in_dir &&
	    st_snapshot_copy_dir(snap, o->in, r->c, o->has_to ? st_torch_dtype_name(o->to) : NULL,
	                         snapshot_note, (void *)o, &err) != ST_OK)
		fail_st(&err);
	check_signal();
	if (st_snapshot_keep_old(snap, r->c, snapshot_note, (void *)o, &err) != ST_OK)
		fail_st(&err);
	/* From here the new output is complete: a signal no longer undoes
	 * it, and the swap and the removal of the old directory must both
	 * happen. */
	check_signal();
	sigset_t old;
	signals_block(&old);
	if (st_snapshot_commit(snap, &err) != ST_OK)
		fail_st(&err);
	st_snapshot_free(snap);
	g_clean.snap = NULL;
}

/* ---- report ------------------------------------------------------------------ */

static int narrowing(st_dtype from, st_dtype to)
{
	return st_dtype_bits(to) < st_dtype_bits(from) ||
	       (from == ST_DTYPE_F16 && to == ST_DTYPE_BF16) ||
	       (from == ST_DTYPE_BF16 && to == ST_DTYPE_F16);
}

static void print_tensor(const item *it)
{
	static const char *const done[] = {
		[ACT_COPY] = "copied", [ACT_ASIS] = "copied", [ACT_KEEP] = "kept",
		[ACT_DROP] = "dropped",
	};
	char *name = cli_printable(it->t->name, it->t->name_len);
	const char *from = st_dtype_name(it->t->dtype);
	if (it->action == ACT_QUANT)
		cli_warn("tensor '%s': %s -> %s, quantized", name, from, st_dtype_name(it->out));
	else if (it->action == ACT_QSCALE)
		cli_warn("tensor '%s': F32, new (scales)", name);
	else if (it->action == ACT_DEQUANT)
		cli_warn("tensor '%s': %s -> %s, dequantized", name, from, st_dtype_name(it->out));
	else if (it->action != ACT_CONVERT)
		cli_warn("tensor '%s': %s %s", name, from, done[it->action]);
	else if (!narrowing(it->t->dtype, it->out))
		cli_warn("tensor '%s': %s -> %s", name, from, st_dtype_name(it->out));
	else
		cli_warn("tensor '%s': %s -> %s, %llu overflow, %llu underflow", name, from,
		         st_dtype_name(it->out), (unsigned long long)it->stats.overflow,
		         (unsigned long long)it->stats.underflow);
	free(name);
}

static void print_bytes_line(const char *label, size_t tensors, uint64_t bytes,
                             size_t files, int index)
{
	char h[32];
	cli_fmt_bytes(h, sizeof h, bytes);
	cli_warn("%s %zu tensor%s, %llu bytes (%s), %zu file%s%s",
	        label, tensors, tensors == 1 ? "" : "s", (unsigned long long)bytes, h, files,
	        files == 1 ? "" : "s", index ? " + index" : "");
}

static void report(const struct options *o, st_checkpoint *c, const item *items, size_t n,
                   unsigned n_shards)
{
	if (o->quiet)
		return;
	size_t out_tensors = 0, counts[ACT_COUNT] = {0};
	uint64_t out_bytes = 0, overflow = 0, underflow = 0;
	int any_narrowing = 0;
	for (size_t i = 0; i < n; i++) {
		const item *it = &items[i];
		counts[it->action]++;
		if (it->action != ACT_DROP) {
			out_tensors++;
			out_bytes += it->out_bytes;
		}
		if (it->action == ACT_CONVERT && narrowing(it->t->dtype, it->out)) {
			any_narrowing = 1;
			overflow += it->stats.overflow;
			underflow += it->stats.underflow;
		}
		if (o->verbose)
			print_tensor(it);
	}
	size_t n_files = st_checkpoint_n_files(c);
	print_bytes_line("in: ", st_checkpoint_n_tensors(c), st_checkpoint_data_bytes(c), n_files,
	                 st_checkpoint_index_path(c) != NULL);
	print_bytes_line("out:", out_tensors, out_bytes, n_shards, n_shards > 1);
	size_t folded = g_dq.n_scales; /* scales dropped into their weights */
	if (o->quant)
		cli_warn("to F8_E4M3: %zu quantized (blocks %llux%llu, %zu F32 scale tensors), "
		         "%zu copied, %zu kept, %zu dropped",
		         counts[ACT_QUANT], (unsigned long long)o->block[0],
		         (unsigned long long)o->block[1], counts[ACT_QSCALE],
		         counts[ACT_COPY] + counts[ACT_ASIS], counts[ACT_KEEP], counts[ACT_DROP]);
	else if (o->has_to && counts[ACT_DEQUANT])
		cli_warn("to %s: %zu converted, %zu dequantized, %zu copied, %zu kept, %zu dropped",
		         st_dtype_name(o->to), counts[ACT_CONVERT], counts[ACT_DEQUANT],
		         counts[ACT_COPY] + counts[ACT_ASIS], counts[ACT_KEEP],
		         counts[ACT_DROP] - folded);
	else if (o->has_to)
		cli_warn("to %s: %zu converted, %zu copied, %zu kept, %zu dropped",
		        st_dtype_name(o->to), counts[ACT_CONVERT],
		        counts[ACT_COPY] + counts[ACT_ASIS], counts[ACT_KEEP], counts[ACT_DROP]);
	else
		cli_warn("layout only: %zu copied unchanged, %zu dropped",
		        counts[ACT_COPY], counts[ACT_DROP]);
	if (o->quant && g_dq.n_fp8)
		cli_warn("already quantized: %zu FP8 weight%s and %zu scale tensor%s copied as they are",
		         g_dq.n_fp8, g_dq.n_fp8 == 1 ? "" : "s", g_dq.n_scales,
		         g_dq.n_scales == 1 ? "" : "s");
	else if (g_dq.n_fp8 + g_dq.n_mxfp4) {
		char line[256];
		st_quant_plan_describe(&g_dq, line, sizeof line);
		cli_warn("%s", line);
	}
	if (any_narrowing)
		cli_warn("overflow: %llu finite values became +-Inf; "
		         "underflow: %llu non-zero values became 0",
		         (unsigned long long)overflow, (unsigned long long)underflow);
}

/* ---- main -------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct options o;
	cli_init("stconvert");
	parse_options(argc, argv, &o);
	signals_catch();
	atexit(cleanup);

	st_checkpoint *c;
	st_error err;
	if (st_checkpoint_open_key(&c, o.in, ST_OPEN_TORCH, o.keys, o.n_keys,
	                           &err) != ST_OK) {
		cli_error(&err);
		exit(CLI_ERROR);
	}
	/* What a PyTorch checkpoint's dictionary gave (the first shard's). */
	const st_torch_info *ti = st_file_torch_info(st_checkpoint_file(c, 0));
	if (ti && ti->key && ti->key_auto && !o.quiet)
		cli_warn("key '%s': every tensor is under it; reading it", ti->key);
	if (ti && ti->n_skipped && !o.quiet)
		cli_warn("left out %zu %s: %s%s", ti->n_skipped,
		         ti->n_skipped == 1 ? "entry that is not a tensor"
		                            : "entries that are not tensors",
		         ti->skipped, ti->n_skipped > 8 ? ", ..." : "");
	size_t n = st_checkpoint_n_tensors(c);
	item *items = cli_xcalloc(n ? 2 * n : 1, sizeof *items);
	if (o.has_to)
		dequant_plan(c, &o);
	plan_items(c, &o, items);
	if (o.quant)
		requant_check(c, &o, items);
	size_t n_all = o.quant ? quant_plan(c, &o, items, n) : n;

	struct outloc loc;
	locate_out(&o, &loc);
	check_block_out(&o, &loc, items, n_all);
	/*
	 * Shards stay shards (one out per one in) for a PyTorch snapshot and
	 * when weights are dequantized or quantized: their sizes change by a
	 * factor, and a one-file output of a model that ships in 163 shards
	 * helps nobody.
	 */
	int scaled = o.quant || (o.has_to && (g_dq.n_fp8 || g_dq.n_mxfp4));
	int keep = loc.is_dir && !o.shard_size && st_checkpoint_n_files(c) > 1 &&
	           (scaled || st_file_format(st_checkpoint_file(c, 0)) == ST_FORMAT_TORCH);
	unsigned n_shards = keep ? keep_shards(c, items, n_all, o.verbose)
	                         : split_shards(items, n_all, o.shard_size);

	run r = {.c = c, .o = &o, .items = items, .n_items = n_all};
	r.n_workers = (unsigned)cli_default_threads(MAX_WORKERS);
	uint64_t total_in = 0;
	for (size_t i = 0; i < n; i++)
		if (items[i].action != ACT_DROP)
			total_in += items[i].t->n_bytes;
	cli_progress_start(&r.progress, "stconvert", total_in);

	if (!loc.is_dir)
		write_file(&r, NULL, o.out, o.out, -1);
	else
		write_dir(&r, n_shards);
	cli_progress_done(&r.progress);
	report(&o, c, items, n_all, n_shards);

	st_checkpoint_close(c);
	free(g_config);
	free(g_config_file);
	st_quant_plan_free(&g_dq);
	for (size_t i = 0; g_qz && i < n; i++)
		st_quant_target_free(&g_qz[i]);
	free(g_qz);
	free(g_qz_scales);
	free(items);
	for (size_t m = 0; m < o.n_meta; m++)
		free(o.meta[m].key);
	free(o.meta);
	free(o.keep);
	free(o.drop);
	free(o.keys);
	free(o.keep_hits);
	free(o.drop_hits);
	return cli_exit(CLI_OK);
}
