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
 * rename); a directory is built complete in a temporary sibling and then
 * swapped in, so OUT is the old one or the new one at every instant.
 *
 * What it is not: the format, the canonical writer, shard indexes and the
 * conversion arithmetic are libst's (st_checkpoint_*, st_writer_*,
 * st_index_write, st_convert, and PyTorch .bin reading); F8, F6, F4 and
 * C64 tensors are copied, not converted; sharded .bin checkpoints are not
 * read yet.
 */
#include "common/cli.h"
#include "common/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <unistd.h>

#include <st.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* Output bytes per chunk: large enough for full-speed I/O, small enough
 * that NWORKERS x (chunk + input + scratch) stays a few tens of MiB. */
#define CHUNK (4u << 20)
#define MAX_WORKERS 4
/* Start writeback of the output every this many bytes, so the final fsync
 * has little left to wait for. */
#define WRITEBACK_EVERY (64u << 20)
/* Ask the kernel to read this far ahead of the chunk being converted. */
#define READ_AHEAD (8u << 20)

static void usage(void)
{
	printf(
"Usage: stconvert [OPTION]... IN OUT\n"
"Convert a safetensors checkpoint's dtype and/or layout, streaming, in\n"
"bounded memory; OUT appears complete or not at all.\n"
"\n"
"IN is a .safetensors file, a shard index (*.safetensors.index.json), a\n"
"snapshot directory, or a PyTorch checkpoint (pytorch_model.bin, or shards\n"
"with pytorch_model.bin.index.json; the pickle is read without executing\n"
"anything). OUT is a file when it ends in\n"
".safetensors (or is an existing file), else a snapshot directory:\n"
"model.safetensors, or with --shard-size model-0000i-of-0000N.safetensors\n"
"plus model.safetensors.index.json. A directory IN's other files (config,\n"
"tokenizer...) are copied to a directory OUT, with torch_dtype in\n"
"config.json set to the new dtype.\n"
"\n"
"Options:\n"
"  -t, --to TYPE           convert floating tensors (F64, F32, F16, BF16) to\n"
"                          f32, f16 or bf16; integer, bool and 8-bit float\n"
"                          tensors are copied. Without --to, tensors are\n"
"                          copied unchanged and only the layout changes\n"
"  -k, --keep GLOB         leave tensors whose name matches GLOB in their\n"
"                          dtype (fnmatch; repeatable), e.g. --keep '*ln_*'\n"
"  -d, --drop GLOB         leave matching tensors out (repeatable; wins\n"
"                          over --keep)\n"
"  -m, --metadata KEY=VALUE  add or replace a __metadata__ entry\n"
"                          (repeatable); the input's metadata is kept\n"
"  -s, --shard-size SIZE   split the output into shards of at most SIZE\n"
"                          bytes of tensor data (5GB decimal, 4GiB binary),\n"
"                          greedily in canonical order as huggingface_hub\n"
"                          does; needs a directory OUT\n"
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
	int has_to;
	st_dtype to;
	const char **keep, **drop;
	size_t n_keep, n_drop;
	size_t *keep_hits, *drop_hits;
	struct meta_opt *meta;
	size_t n_meta;
	uint64_t shard_size; /* 0: no sharding */
	int force, verbose, quiet;
};

static char *path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = cli_xmalloc(la + lb + 2);
	memcpy(p, a, la);
	size_t o = la;
	if (la && a[la - 1] != '/')
		p[o++] = '/';
	memcpy(p + o, b, lb + 1);
	return p;
}

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
		{"metadata", required_argument, NULL, 'm'},
		{"shard-size", required_argument, NULL, 's'},
		{"force", no_argument, NULL, 'f'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof *o);
	/* Each repeatable option occurs fewer than argc times. */
	o->keep = cli_xcalloc((size_t)argc, sizeof *o->keep);
	o->drop = cli_xcalloc((size_t)argc, sizeof *o->drop);
	o->meta = cli_xcalloc((size_t)argc, sizeof *o->meta);
	int c;
	while ((c = cli_getopt(argc, argv, "t:k:d:m:s:fvqhV", longs)) != -1) {
		switch (c) {
		case 't':
			if (cli_parse_float_dtype(optarg, &o->to) != 0)
				cli_usage_error("--to: '%s' is not f32, f16 or bf16", optarg);
			o->has_to = 1;
			break;
		case 'k':
			o->keep[o->n_keep++] = optarg;
			break;
		case 'd':
			o->drop[o->n_drop++] = optarg;
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
 * What must go if the run does not complete: the temporary output
 * directory and the writer's temporary file. Signal handlers only record
 * the signal (signals.h); the workers poll it between chunks and the main
 * thread then removes these paths and re-raises the signal (removing a
 * directory tree is not async-signal-safe).
 */
static struct {
	char *tmpdir;      /* temporary output directory, or NULL */
	st_writer *writer; /* writer not yet finished, or NULL */
} g_clean;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) != 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* Remove a directory tree (not following symlinks). */
static int rm_tree(const char *path)
{
	return nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	if (g_clean.writer) {
		st_writer_free(g_clean.writer);
		g_clean.writer = NULL;
	}
	if (g_clean.tmpdir) {
		if (rm_tree(g_clean.tmpdir) != 0)
			cli_warn("%s: cannot remove temporary directory: %s", g_clean.tmpdir,
			         strerror(errno));
		free(g_clean.tmpdir);
		g_clean.tmpdir = NULL;
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

enum action { ACT_COPY, ACT_CONVERT, ACT_KEEP, ACT_DROP, ACT_ASIS };

typedef struct item {
	size_t src;         /* tensor index in the checkpoint */
	size_t file;        /* input file holding it */
	const st_tensor *t; /* the input tensor */
	enum action action;
	st_dtype out;       /* output dtype */
	uint64_t out_bytes;
	unsigned shard;     /* output file */
	st_convert_stats stats;
} item;

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
		if (dropped)
			it->action = ACT_DROP;
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
			cli_warn("alias: '%s' is the same data as '%s'; written once, "
			         "as '%s'", a, b, b);
			free(a);
			free(b);
		}
		/* The input was validated, so n_elements x bits fits in 64 bits for
		 * the input dtype; the output dtype is at most twice as wide. */
		it->out_bytes = it->t->n_elements / 8 * st_dtype_bits(it->out) +
		                it->t->n_elements % 8 * st_dtype_bits(it->out) / 8;
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
		if (st_writer_add(w, it->t->name, it->t->name_len, it->out, it->t->ndim,
		                  it->t->shape, &err) != ST_OK)
			fail_st(&err);
	}
}

/* The item of a tensor the writer lists (by name, through the checkpoint). */
static item *writer_item(st_writer *w, size_t i, st_checkpoint *c, item *items)
{
	const st_tensor *t = st_writer_tensor(w, i);
	long src = st_checkpoint_find(c, t->name, t->name_len);
	if (src < 0)
		cli_die(CLI_ERROR, "internal error: tensor missing from the checkpoint");
	return &items[src];
}

/*
 * Split the output into shards as huggingface_hub's
 * split_state_dict_into_shards_factory does: walk the tensors in canonical
 * order; a tensor larger than the limit gets a shard of its own, appended
 * at once (before the shard being filled); any other tensor starts a new
 * shard when it would push the current one past the limit. Returns the
 * number of shards (at least 1).
 */
static unsigned split_shards(st_writer *plan, st_checkpoint *c, item *items,
                             uint64_t limit)
{
	const unsigned pending = UINT_MAX;
	size_t n = st_writer_n_tensors(plan), start = 0;
	unsigned n_shards = 0;
	uint64_t cur_size = 0;
	int filling = 0;
	for (size_t i = 0; i <= n; i++) {
		item *it = i < n ? writer_item(plan, i, c, items) : NULL;
		if (it && !limit) {
			it->shard = 0;
			continue;
		}
		if (it && it->out_bytes > limit) {
			it->shard = n_shards++;
			continue;
		}
		/* Shards are numbered in the order they are completed, as
		 * huggingface_hub appends them to its list. */
		if (filling && (!it || cur_size + it->out_bytes > limit)) {
			for (size_t k = start; k < i; k++) {
				item *p = writer_item(plan, k, c, items);
				if (p->shard == pending)
					p->shard = n_shards;
			}
			n_shards++;
			filling = 0;
		}
		if (!it)
			break;
		if (!filling) {
			filling = 1;
			start = i;
			cur_size = 0;
		}
		it->shard = pending;
		cur_size += it->out_bytes;
	}
	return n_shards ? n_shards : 1;
}

/* ---- the data path --------------------------------------------------------- */

/*
 * The tensors of one output file are cut into chunks of at most CHUNK output
 * bytes (a chunk may hold the ends of several small tensors). Chunk k
 * belongs to worker k % n_workers, which reads and converts it into its own
 * buffer, then waits for its turn (next == k) to append it to the writer.
 * Every worker walks the same deterministic chunk sequence, skipping the
 * chunks of the others, so no queue is needed.
 */
typedef struct job {
	st_checkpoint *c;
	st_writer *w;
	item **items;          /* in write order */
	size_t n_items;
	int *fds;              /* per input file, for read-ahead advice; -1 if none */
	int out_fd;            /* the writer's temporary, for writeback; -1 if none */
	unsigned n_workers;
	cli_progress *progress;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t next;         /* the chunk whose turn it is to be written */
	uint64_t unsynced;     /* bytes written since writeback was last asked for */
	pthread_cond_t flush_cv;
	int flush_pending, flush_stop; /* for the flusher, under mu */
	int failed;
	int write_failed;      /* the failure was the writer's */
	st_error err;          /* why, when failed */
} job;

typedef struct worker {
	job *j;
	unsigned id;
	unsigned char *out;    /* CHUNK bytes */
	unsigned char *in;     /* CHUNK bytes */
	st_convert_stats *stats; /* per item */
	pthread_t thread;
} worker;

/* Position in the chunk sequence: item, and byte offset (copies) or
 * element offset (conversions) within it. */
typedef struct cursor {
	size_t item;
	uint64_t pos;
} cursor;

static void advise(job *j, const item *it, uint64_t off)
{
	int fd = j->fds[it->file];
	if (fd < 0 || off >= it->t->n_bytes)
		return;
	st_file *f = st_checkpoint_file(j->c, it->file);
	uint64_t len = it->t->n_bytes - off;
	if (len > READ_AHEAD)
		len = READ_AHEAD;
	posix_fadvise(fd, (off_t)(st_file_data_offset(f) + it->t->begin + off), (off_t)len,
	              POSIX_FADV_WILLNEED);
}

/*
 * Walk one chunk from cur. With buf, also read and convert it into buf.
 * *out_len and *in_len receive the chunk's output and input byte counts.
 * Returns 0, or -1 when reading failed (err says why).
 */
static int chunk(worker *wk, cursor *cur, int execute, size_t *out_len, uint64_t *in_len,
                 st_error *err)
{
	job *j = wk->j;
	size_t pos = 0;
	uint64_t in_total = 0;
	while (cur->item < j->n_items) {
		item *it = j->items[cur->item];
		const st_tensor *t = it->t;
		if (it->out == t->dtype) {
			if (cur->pos == t->n_bytes) {
				cur->item++;
				cur->pos = 0;
				continue;
			}
			if (pos == CHUNK)
				break;
			uint64_t left = t->n_bytes - cur->pos;
			size_t n = left < CHUNK - pos ? (size_t)left : CHUNK - pos;
			if (execute) {
				advise(j, it, cur->pos + n);
				if (st_checkpoint_read(j->c, it->src, cur->pos, wk->out + pos, n, err) != ST_OK)
					return -1;
			}
			pos += n;
			in_total += n;
			cur->pos += n;
		} else {
			if (cur->pos == t->n_elements) {
				cur->item++;
				cur->pos = 0;
				continue;
			}
			size_t ies = st_dtype_bits(t->dtype) / 8, oes = st_dtype_bits(it->out) / 8;
			size_t room = (CHUNK - pos) / oes, fit = CHUNK / ies;
			if (room == 0)
				break;
			uint64_t left = t->n_elements - cur->pos;
			size_t k = left < room ? (size_t)left : room;
			if (k > fit)
				k = fit;
			if (execute) {
				advise(j, it, (cur->pos + k) * ies);
				if (st_checkpoint_read(j->c, it->src, cur->pos * ies, wk->in, k * ies, err) != ST_OK)
					return -1;
				if (st_convert(it->out, wk->out + pos, t->dtype, wk->in, k,
				               &wk->stats[cur->item]) != ST_OK)
					cli_die(CLI_ERROR, "internal error: cannot convert %s to %s",
					        st_dtype_name(t->dtype), st_dtype_name(it->out));
			}
			pos += k * oes;
			in_total += (uint64_t)k * ies;
			cur->pos += k;
		}
	}
	*out_len = pos;
	*in_len = in_total;
	return 0;
}

static void job_fail(job *j, const st_error *err)
{
	pthread_mutex_lock(&j->mu);
	if (!j->failed) {
		j->failed = 1;
		j->err = *err;
	}
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

static void *work(void *arg)
{
	worker *wk = arg;
	job *j = wk->j;
	cursor cur = {0, 0};
	st_error err;
	for (uint64_t k = 0;; k++) {
		int mine = k % j->n_workers == wk->id;
		size_t out_len;
		uint64_t in_len;
		if (mine && signals_caught()) {
			memset(&err, 0, sizeof err);
			snprintf(err.message, sizeof err.message, "interrupted by signal %d",
			         signals_caught());
			job_fail(j, &err);
			break;
		}
		if (chunk(wk, &cur, mine, &out_len, &in_len, &err) != 0) {
			job_fail(j, &err);
			break;
		}
		if (out_len == 0 && in_len == 0 && cur.item >= j->n_items)
			break;
		if (!mine)
			continue;
		pthread_mutex_lock(&j->mu);
		while (j->next != k && !j->failed)
			pthread_cond_wait(&j->cv, &j->mu);
		int failed = j->failed;
		pthread_mutex_unlock(&j->mu);
		if (failed)
			break;
		/* Our turn: only this worker touches the writer and the progress. */
		if (st_writer_write(j->w, wk->out, out_len, &err) != ST_OK) {
			j->write_failed = 1;
			job_fail(j, &err);
			break;
		}
		cli_progress_add(j->progress, in_len);
		j->unsynced += out_len;
		pthread_mutex_lock(&j->mu);
		if (j->unsynced >= WRITEBACK_EVERY) {
			j->unsynced = 0;
			j->flush_pending = 1;
			pthread_cond_signal(&j->flush_cv);
		}
		j->next = k + 1;
		pthread_cond_broadcast(&j->cv);
		pthread_mutex_unlock(&j->mu);
	}
	return NULL;
}

/*
 * The flusher starts writeback of what has been written so far each time
 * the workers ask (every WRITEBACK_EVERY bytes), so the disk works while
 * they convert and the writer's final fsync has little left to wait for.
 * It is a thread of its own because sync_file_range blocks while the
 * device queue is full, which would stall the worker holding the turn.
 */
static void *flusher(void *arg)
{
	job *j = arg;
	pthread_mutex_lock(&j->mu);
	for (;;) {
		while (!j->flush_pending && !j->flush_stop)
			pthread_cond_wait(&j->flush_cv, &j->mu);
		if (j->flush_stop)
			break;
		j->flush_pending = 0;
		pthread_mutex_unlock(&j->mu);
		sync_file_range(j->out_fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&j->mu);
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* Write the data of every tensor of an open writer; the workers' stats are
 * added to the items. Returns 0, or -1 with err set. */
static int run_job(job *j, worker *workers, st_error *err)
{
	sigset_t old;
	pthread_t flush_thread;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	pthread_cond_init(&j->flush_cv, NULL);
	j->next = 0;
	j->failed = 0;
	j->unsynced = 0;
	j->flush_pending = j->flush_stop = 0;
	for (unsigned i = 0; i < j->n_workers; i++) {
		workers[i].j = j;
		workers[i].id = i;
		memset(workers[i].stats, 0, j->n_items * sizeof *workers[i].stats);
	}
	/* The helper threads block the signals so that they reach the main
	 * thread (any thread would do: the handler only sets a flag). */
	signals_block(&old);
	int flushing = j->out_fd >= 0 && pthread_create(&flush_thread, NULL, flusher, j) == 0;
	unsigned started = 1;
	for (unsigned i = 1; i < j->n_workers; i++) {
		if (pthread_create(&workers[i].thread, NULL, work, &workers[i]) != 0)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (started < j->n_workers) {
		/* Could not start every thread: the chunks of the missing ones
		 * would never come, so stop the others. */
		st_error e = {.code = ST_EIO};
		snprintf(e.message, sizeof e.message, "cannot start a worker thread");
		job_fail(j, &e);
	} else {
		work(&workers[0]);
	}
	for (unsigned i = 1; i < started; i++)
		pthread_join(workers[i].thread, NULL);
	if (flushing) {
		pthread_mutex_lock(&j->mu);
		j->flush_stop = 1;
		pthread_cond_signal(&j->flush_cv);
		pthread_mutex_unlock(&j->mu);
		pthread_join(flush_thread, NULL);
	}
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	pthread_cond_destroy(&j->flush_cv);
	if (j->failed) {
		*err = j->err;
		return -1;
	}
	for (unsigned i = 0; i < j->n_workers; i++) {
		for (size_t k = 0; k < j->n_items; k++) {
			j->items[k]->stats.overflow += workers[i].stats[k].overflow;
			j->items[k]->stats.underflow += workers[i].stats[k].underflow;
		}
	}
	return 0;
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

/* What every output file of a run shares: the input, the plan, the workers. */
typedef struct run {
	st_checkpoint *c;
	const struct options *o;
	item *items;           /* one per input tensor */
	size_t n_items;
	int *fds;              /* per input file, for read-ahead advice; -1 if none */
	worker workers[MAX_WORKERS];
	unsigned n_workers;
	cli_progress progress;
} run;

/* Write one output file (all tensors, or those of one shard) to path;
 * shown is its name in messages (where it will be, not the temporary);
 * keep_mode, unless -1, the permissions it gets. */
static void write_file(run *r, const char *path, const char *shown, int keep_mode,
                       int shard)
{
	st_error err;
	st_writer *w;
	if (st_writer_new(&w, &err) != ST_OK)
		fail_st(&err);
	g_clean.writer = w;
	writer_setup(w, r->c, r->o, r->items, r->n_items, shard);
	size_t n = st_writer_n_tensors(w);
	job j;
	memset(&j, 0, sizeof j);
	j.c = r->c;
	j.w = w;
	j.items = cli_xmalloc(n * sizeof *j.items);
	j.n_items = n;
	for (size_t i = 0; i < n; i++)
		j.items[i] = writer_item(w, i, r->c, r->items);
	j.fds = r->fds;
	j.n_workers = r->n_workers;
	j.progress = &r->progress;
	check_signal();
	if (st_writer_open(w, path, &err) != ST_OK)
		fail_write(shown, &err);
	j.out_fd = open(st_writer_temp_path(w), O_RDONLY | O_CLOEXEC);
	/* A file that is replaced keeps its permissions, as with cp. */
	if (keep_mode >= 0 && j.out_fd >= 0 && fchmod(j.out_fd, (mode_t)keep_mode) != 0)
		fail("%s: cannot set its mode: %s", shown, strerror(errno));
	int rc = run_job(&j, r->workers, &err);
	if (j.out_fd >= 0)
		close(j.out_fd);
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

/* Write output file name of a directory OUT into its temporary, tmp. */
static void write_member(run *r, const char *tmp, const char *name, int shard)
{
	char *p = path_join(tmp, name), *shown = path_join(r->o->out, name);
	write_file(r, p, shown, -1, shard);
	free(p);
	free(shown);
}

/* ---- snapshot files ---------------------------------------------------- */

/*
 * config.json: set torch_dtype (every "torch_dtype" key holding a string or
 * null, at any depth, as multimodal configs nest them; and a top-level
 * "dtype", the name newer transformers write) to the new dtype, editing the
 * text in place so that every other byte (key order, indentation, number
 * spelling) is kept. With neither key at the top level, "torch_dtype" is
 * added as the last member, formatted like the first ones.
 */
typedef struct jscan {
	const char *s;
	size_t n, i;
	size_t *rep; /* value spans to replace: begin, end pairs */
	size_t n_rep, cap_rep;
	int top_dtype;
	size_t n_top, first_key_end, first_val_begin, first_val_end, second_key, last_val_end;
	size_t top_open;
} jscan;

static void js_ws(jscan *j)
{
	while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' ||
	                       j->s[j->i] == '\r'))
		j->i++;
}

static int js_string(jscan *j)
{
	if (j->i >= j->n || j->s[j->i] != '"')
		return -1;
	for (j->i++; j->i < j->n; j->i++) {
		unsigned char ch = (unsigned char)j->s[j->i];
		if (ch == '\\')
			j->i++;
		else if (ch == '"') {
			j->i++;
			return 0;
		} else if (ch < 0x20)
			return -1;
	}
	return -1;
}

static int js_value(jscan *j, int depth);

static void js_rep(jscan *j, size_t b, size_t e)
{
	if (j->n_rep + 2 > j->cap_rep) {
		j->cap_rep = j->cap_rep ? j->cap_rep * 2 : 16;
		j->rep = cli_xrealloc(j->rep, j->cap_rep * sizeof *j->rep);
	}
	j->rep[j->n_rep++] = b;
	j->rep[j->n_rep++] = e;
}

static int js_key_is(const jscan *j, size_t kb, size_t ke, const char *name)
{
	size_t len = strlen(name);
	return ke - kb == len + 2 && memcmp(j->s + kb + 1, name, len) == 0;
}

static int js_object(jscan *j, int depth)
{
	j->i++; /* '{' */
	js_ws(j);
	if (j->i < j->n && j->s[j->i] == '}') {
		j->i++;
		return 0;
	}
	for (size_t member = 0;; member++) {
		js_ws(j);
		size_t kb = j->i;
		if (js_string(j) != 0)
			return -1;
		size_t ke = j->i;
		js_ws(j);
		if (j->i >= j->n || j->s[j->i] != ':')
			return -1;
		j->i++;
		js_ws(j);
		size_t vb = j->i;
		if (js_value(j, depth + 1) != 0)
			return -1;
		size_t ve = j->i;
		int is_string = j->s[vb] == '"', is_null = j->s[vb] == 'n';
		if (js_key_is(j, kb, ke, "torch_dtype") && (is_string || is_null)) {
			js_rep(j, vb, ve);
			if (depth == 0)
				j->top_dtype = 1;
		} else if (depth == 0 && js_key_is(j, kb, ke, "dtype") && is_string) {
			js_rep(j, vb, ve);
			j->top_dtype = 1;
		}
		if (depth == 0) {
			j->n_top++;
			if (member == 0) {
				j->first_key_end = ke;
				j->first_val_begin = vb;
				j->first_val_end = ve;
			} else if (member == 1) {
				j->second_key = kb;
			}
			j->last_val_end = ve;
		}
		js_ws(j);
		if (j->i >= j->n)
			return -1;
		if (j->s[j->i] == '}') {
			j->i++;
			return 0;
		}
		if (j->s[j->i] != ',')
			return -1;
		j->i++;
	}
}

static int js_value(jscan *j, int depth)
{
	if (depth > 256 || j->i >= j->n)
		return -1;
	char ch = j->s[j->i];
	if (ch == '{')
		return js_object(j, depth);
	if (ch == '[') {
		j->i++;
		js_ws(j);
		if (j->i < j->n && j->s[j->i] == ']') {
			j->i++;
			return 0;
		}
		for (;;) {
			js_ws(j);
			if (js_value(j, depth + 1) != 0)
				return -1;
			js_ws(j);
			if (j->i >= j->n)
				return -1;
			if (j->s[j->i++] == ']')
				return 0;
			if (j->s[j->i - 1] != ',')
				return -1;
		}
	}
	if (ch == '"')
		return js_string(j);
	static const char *const words[] = {"true", "false", "null"};
	for (size_t w = 0; w < 3; w++) {
		size_t len = strlen(words[w]);
		if (j->n - j->i >= len && memcmp(j->s + j->i, words[w], len) == 0) {
			j->i += len;
			return 0;
		}
	}
	size_t b = j->i;
	while (j->i < j->n && strchr("+-0123456789.eE", j->s[j->i]) && j->s[j->i])
		j->i++;
	return j->i > b ? 0 : -1;
}

/* Returns the edited text (malloc'd, length in *out_len) or NULL when the
 * text is not a JSON object. */
static char *config_set_dtype(const char *s, size_t n, const char *dtype, size_t *out_len)
{
	jscan j;
	memset(&j, 0, sizeof j);
	j.s = s;
	j.n = n;
	js_ws(&j);
	j.top_open = j.i;
	if (j.i >= n || s[j.i] != '{' || js_object(&j, 0) != 0) {
		free(j.rep);
		return NULL;
	}
	js_ws(&j);
	if (j.i != n) {
		free(j.rep);
		return NULL;
	}
	char value[32];
	snprintf(value, sizeof value, "\"%s\"", dtype);
	size_t vlen = strlen(value);
	/* The member to insert, when there is no top-level dtype key. */
	char *ins = NULL;
	size_t ins_at = 0, ins_len = 0;
	if (!j.top_dtype) {
		const char *sep, *kv;
		size_t sep_len, kv_len;
		if (j.n_top >= 2) {
			sep = s + j.first_val_end;
			sep_len = j.second_key - j.first_val_end;
		} else if (j.n_top == 1) {
			/* ",", then the whitespace that precedes the first key. */
			sep = NULL;
			sep_len = 0;
		} else {
			sep = "";
			sep_len = 0;
		}
		if (j.n_top >= 1) {
			kv = s + j.first_key_end;
			kv_len = j.first_val_begin - j.first_key_end;
			ins_at = j.last_val_end;
		} else {
			kv = ": ";
			kv_len = 2;
			ins_at = j.top_open + 1;
		}
		size_t lead_b = j.top_open + 1, lead_e = lead_b;
		while (lead_e < n && s[lead_e] != '"' && s[lead_e] != '}')
			lead_e++;
		size_t cap = sep_len + (lead_e - lead_b) + 16 + kv_len + vlen + 1;
		ins = cli_xmalloc(cap);
		if (j.n_top == 1) {
			ins[0] = ',';
			memcpy(ins + 1, s + lead_b, lead_e - lead_b);
			ins_len = 1 + (lead_e - lead_b);
		} else {
			memcpy(ins, sep, sep_len);
			ins_len = sep_len;
		}
		memcpy(ins + ins_len, "\"torch_dtype\"", 13);
		ins_len += 13;
		memcpy(ins + ins_len, kv, kv_len);
		ins_len += kv_len;
		memcpy(ins + ins_len, value, vlen);
		ins_len += vlen;
	}
	size_t cap = n + ins_len + (j.n_rep / 2) * vlen + 1;
	char *out = cli_xmalloc(cap);
	size_t o = 0, at = 0;
	for (size_t r = 0; r <= j.n_rep; r += 2) {
		/* Spans are in text order; the insertion point follows the last
		 * value, so it is placed when the copy reaches it. */
		size_t end = r < j.n_rep ? j.rep[r] : n;
		if (ins && ins_at >= at && ins_at <= end) {
			memcpy(out + o, s + at, ins_at - at);
			o += ins_at - at;
			memcpy(out + o, ins, ins_len);
			o += ins_len;
			at = ins_at;
			free(ins);
			ins = NULL;
		}
		memcpy(out + o, s + at, end - at);
		o += end - at;
		if (r < j.n_rep) {
			memcpy(out + o, value, vlen);
			o += vlen;
			at = j.rep[r + 1];
		}
	}
	free(ins);
	free(j.rep);
	*out_len = o;
	return out;
}

static const char *torch_dtype_name(st_dtype d)
{
	return d == ST_DTYPE_F32 ? "float32" : d == ST_DTYPE_F16 ? "float16" : "bfloat16";
}

/* Names of files holding weights in some format: they would not match the
 * converted checkpoint, so they are not copied. */
static int is_weight_file(const char *name)
{
	static const char *const suffixes[] = {
		".safetensors", ".safetensors.index.json", ".bin", ".bin.index.json",
		".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".msgpack.index.json", ".ot",
		".gguf", ".onnx", ".onnx_data",
	};
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
		if (ends_with(name, suffixes[i]))
			return 1;
	return 0;
}

/* Directory entries sorted by name, so that reports and errors come out in
 * the same order on every file system; "." and ".." left out. */
static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_dots(const struct dirent *e)
{
	return strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
}

static int list_dir(const char *path, struct dirent ***list)
{
	int n = scandir(path, list, not_dots, by_name);
	if (n < 0)
		fail("%s: cannot read directory: %s", path, strerror(errno));
	return n;
}

static void free_list(struct dirent **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

struct file_id {
	dev_t dev;
	ino_t ino;
};

static int same_file(const struct stat *st, const struct file_id *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i].dev == st->st_dev && ids[i].ino == st->st_ino)
			return 1;
	return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Create dst (which must not exist) holding len bytes of buf. */
static void write_new_file(const char *dst, const void *buf, size_t len, mode_t mode)
{
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
	if (fd < 0)
		fail("%s: cannot create: %s", dst, strerror(errno));
	if (write_all(fd, buf, len) != 0 || fsync(fd) != 0) {
		int e = errno;
		close(fd);
		fail("%s: cannot write: %s", dst, strerror(e));
	}
	if (close(fd) != 0)
		fail("%s: cannot write: %s", dst, strerror(errno));
}

/* Copy src (following symlinks) to dst, which must not exist. */
static void copy_file(const char *src, const char *dst, mode_t mode)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		fail("%s: cannot open: %s", src, strerror(errno));
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
	if (out < 0) {
		int e = errno;
		close(in);
		fail("%s: cannot create: %s", dst, strerror(e));
	}
	static char buf[1 << 16];
	for (;;) {
		check_signal();
		ssize_t r = read(in, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(in);
			close(out);
			fail("%s: cannot read: %s", src, strerror(e));
		}
		if (r == 0)
			break;
		if (write_all(out, buf, (size_t)r) != 0) {
			int e = errno;
			close(in);
			close(out);
			fail("%s: cannot write: %s", dst, strerror(e));
		}
	}
	close(in);
	if (fsync(out) != 0 || close(out) != 0)
		fail("%s: cannot write: %s", dst, strerror(errno));
}

static void copy_config(const char *src, const char *dst, mode_t mode, st_dtype to)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		fail("%s: cannot open: %s", src, strerror(errno));
	/* A config is a few KiB; anything past 64 MiB is not one, and is
	 * copied as it is rather than read into memory. */
	if (st.st_size > (64 << 20)) {
		close(fd);
		cli_warn("warning: %s: too large to be a config; copied without updating torch_dtype",
		         src);
		copy_file(src, dst, mode);
		return;
	}
	size_t n = (size_t)st.st_size, got = 0;
	char *text = cli_xmalloc(n + 1);
	while (got < n) {
		ssize_t r = read(fd, text + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fail("%s: cannot read: %s", src, strerror(errno));
		if (r == 0)
			fail("%s: cannot read: the file shrank while reading", src);
		got += (size_t)r;
	}
	close(fd);
	size_t out_len;
	char *out = config_set_dtype(text, got, torch_dtype_name(to), &out_len);
	if (!out) {
		cli_warn("warning: %s: not a JSON object; copied without updating torch_dtype", src);
		write_new_file(dst, text, got, mode);
	} else {
		write_new_file(dst, out, out_len, mode);
		free(out);
	}
	free(text);
}

struct copy_ctx {
	const struct options *o;
	const struct file_id *skip; /* the checkpoint's own files, OUT, the temp dir */
	size_t n_skip;
	int update_config;
};

/* Copy the snapshot files of directory src into dst (existing), skipping
 * weight files, the checkpoint's files and VCS/cache directories. */
static void copy_tree(const struct copy_ctx *cx, const char *src, const char *dst, int depth)
{
	/* Directories are followed through symlinks, as HF cache snapshots are
	 * made of them; a symlink loop ends here rather than in a crash. */
	if (depth > 32)
		fail("%s: directories nested too deep (a symlink loop?)", src);
	struct dirent **list;
	int n = list_dir(src, &list);
	for (int i = 0; i < n; i++) {
		check_signal();
		const char *name = list[i]->d_name;
		char *s = path_join(src, name), *t = path_join(dst, name);
		struct stat st;
		if (stat(s, &st) != 0)
			fail("%s: cannot copy: %s", s, strerror(errno));
		if (same_file(&st, cx->skip, cx->n_skip)) {
			/* The checkpoint itself, or the output inside the input. */
		} else if (S_ISDIR(st.st_mode)) {
			if (strcmp(name, ".git") == 0 || strcmp(name, ".cache") == 0) {
				if (cx->o->verbose)
					cli_warn("not copied: %s (not part of a snapshot)", s);
			} else {
				if (mkdir(t, st.st_mode & 07777) != 0)
					fail("%s: cannot create directory: %s", t, strerror(errno));
				copy_tree(cx, s, t, depth + 1);
			}
		} else if (S_ISREG(st.st_mode)) {
			if (is_weight_file(name)) {
				if (cx->o->verbose)
					cli_warn("not copied: %s (weights in another file)", s);
			} else {
				int config = depth == 0 && cx->update_config &&
				             strcmp(name, "config.json") == 0;
				if (config)
					copy_config(s, t, st.st_mode, cx->o->to);
				else
					copy_file(s, t, st.st_mode);
				if (cx->o->verbose)
					cli_warn("copied %s%s%s", s, config ? " with torch_dtype " : "",
					         config ? torch_dtype_name(cx->o->to) : "");
			}
		} else {
			fail("%s: cannot copy: not a regular file or directory", s);
		}
		free(s);
		free(t);
	}
	free_list(list, n);
}

/* ---- carrying the rest of an existing OUT directory over ------------------- */

/* Is name a file of a checkpoint layout (which the new output replaces)? */
static int is_layout_name(const char *name, char **old_files, size_t n_old)
{
	if (strcmp(name, "model.safetensors") == 0 ||
	    strcmp(name, "model.safetensors.index.json") == 0)
		return 1;
	/* model-00001-of-00002.safetensors */
	static const char pattern[] = "model-#####-of-#####.safetensors";
	if (strlen(name) == sizeof pattern - 1) {
		size_t i = 0;
		while (pattern[i] && (pattern[i] == '#' ? name[i] >= '0' && name[i] <= '9' :
		                      pattern[i] == name[i]))
			i++;
		if (!pattern[i])
			return 1;
	}
	for (size_t i = 0; i < n_old; i++)
		if (strcmp(name, old_files[i]) == 0)
			return 1;
	return 0;
}

/*
 * Put old entry s at t in the new directory: files are hard-linked (copied
 * across file systems), symlinks re-created, directories rebuilt entry by
 * entry. Links cost no data copy and leave the old directory intact until
 * the swap.
 */
static void keep_entry(const char *s, const char *t)
{
	struct stat st;
	if (lstat(s, &st) != 0)
		fail("%s: cannot keep: %s", s, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(t, st.st_mode & 07777) != 0)
			fail("%s: cannot create directory: %s", t, strerror(errno));
		struct dirent **list;
		int n = list_dir(s, &list);
		for (int i = 0; i < n; i++) {
			char *s2 = path_join(s, list[i]->d_name), *t2 = path_join(t, list[i]->d_name);
			keep_entry(s2, t2);
			free(s2);
			free(t2);
		}
		free_list(list, n);
	} else if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t len = readlink(s, target, sizeof target - 1);
		if (len < 0)
			fail("%s: cannot read link: %s", s, strerror(errno));
		target[len] = 0;
		if (symlink(target, t) != 0)
			fail("%s: cannot create link: %s", t, strerror(errno));
	} else if (S_ISREG(st.st_mode)) {
		if (link(s, t) != 0)
			copy_file(s, t, st.st_mode);
	} else {
		fail("%s: a special file; cannot keep it in the new directory", s);
	}
}

/*
 * Carry every entry of the old OUT that is neither a file of its checkpoint
 * layout nor replaced by the new output. In place (OUT is IN), the files
 * the input checkpoint was read from (ids) are the earlier layout too,
 * whatever their names.
 */
static void carry_over(const char *old_dir, const char *new_dir, const struct options *o,
                       const struct file_id *ids, size_t n_ids)
{
	/* The old layout's files: the standard names, and whatever the old
	 * index names when it can be opened. */
	char **old_files = NULL;
	size_t n_old = 0;
	char *index = path_join(old_dir, "model.safetensors.index.json");
	st_checkpoint *c;
	st_error err;
	if (access(index, F_OK) == 0 && st_checkpoint_open(&c, index, 0, &err) == ST_OK) {
		n_old = st_checkpoint_n_files(c);
		old_files = cli_xcalloc(n_old, sizeof *old_files);
		for (size_t i = 0; i < n_old; i++) {
			const char *p = st_file_path(st_checkpoint_file(c, i));
			const char *slash = strrchr(p, '/');
			old_files[i] = cli_xstrdup(slash ? slash + 1 : p);
		}
		st_checkpoint_close(c);
	}
	free(index);
	struct dirent **list;
	int n_list = list_dir(old_dir, &list);
	for (int i = 0; i < n_list; i++) {
		check_signal();
		const char *name = list[i]->d_name;
		char *s = path_join(old_dir, name), *t = path_join(new_dir, name);
		struct stat st;
		if (lstat(t, &st) == 0) {
			/* Replaced by the new output. */
		} else if (is_layout_name(name, old_files, n_old) ||
		           (stat(s, &st) == 0 && S_ISREG(st.st_mode) && same_file(&st, ids, n_ids))) {
			if (o->verbose)
				cli_warn("removed %s (earlier layout)", s);
		} else {
			keep_entry(s, t);
			if (o->verbose)
				cli_warn("kept %s", s);
		}
		free(s);
		free(t);
	}
	free_list(list, n_list);
	for (size_t i = 0; i < n_old; i++)
		free(old_files[i]);
	free(old_files);
}

static void fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/*
 * Put the complete temporary directory in OUT's place: exchange the two
 * atomically when OUT exists (then remove the old one, now at the
 * temporary name), else rename without replacing. Where the file system
 * cannot exchange, the old OUT is renamed aside first, so that at every
 * instant OUT is the old directory, absent, or the new one.
 */
static void commit_dir(const char *tmp, const char *out, const char *parent, int exists)
{
	if (!exists) {
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_NOREPLACE) != 0) {
			if (errno != EINVAL && errno != ENOSYS)
				fail("%s: cannot rename the new directory into place: %s", out,
				     strerror(errno));
			if (rename(tmp, out) != 0)
				fail("%s: cannot rename the new directory into place: %s", out,
				     strerror(errno));
		}
		free(g_clean.tmpdir);
		g_clean.tmpdir = NULL;
		fsync_path(parent);
		return;
	}
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_EXCHANGE) == 0) {
		/* tmp now holds the old OUT; cleanup() removes it. */
		fsync_path(parent);
		cleanup();
		return;
	}
	if (errno != EINVAL && errno != ENOSYS)
		fail("%s: cannot swap the new directory into place: %s", out, strerror(errno));
	size_t len = strlen(tmp) + 5;
	char *aside = cli_xmalloc(len);
	snprintf(aside, len, "%s.old", tmp);
	if (rename(out, aside) != 0)
		fail("%s: cannot move the old directory aside: %s", out, strerror(errno));
	if (rename(tmp, out) != 0) {
		int e = errno;
		if (rename(aside, out) != 0)
			cli_warn("%s: left at %s: %s", out, aside, strerror(errno));
		fail("%s: cannot rename the new directory into place: %s", out, strerror(e));
	}
	fsync_path(parent);
	free(g_clean.tmpdir);
	g_clean.tmpdir = aside;
	cleanup();
}

/* ---- output location ------------------------------------------------------- */

struct outloc {
	int is_dir;
	int exists;
	char *path;   /* the final path (resolved for an existing directory) */
	char *parent; /* its directory */
	char *base;   /* its last component */
	mode_t mode;  /* an existing directory's mode, or the default for a new one */
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
		loc->mode = st.st_mode & 07777;
	} else if (errno != ENOENT) {
		cli_die(CLI_ERROR, "%s: %s", o->out, strerror(errno));
	} else {
		loc->is_dir = trailing_slash || !ends_with(o->out, ".safetensors");
		mode_t mask = umask(0);
		umask(mask);
		loc->mode = 0777 & ~mask;
	}
	if (loc->exists && !o->force)
		cli_die(CLI_ERROR, "%s: already exists (use --force to replace it)", o->out);
	if (!loc->exists && ends_with(o->out, ".index.json"))
		cli_usage_error("%s: OUT is a directory or a .safetensors file, not an index path",
		                o->out);
	if (!loc->is_dir && o->shard_size)
		cli_usage_error("--shard-size writes shards and an index: OUT must be a directory");
	if (!loc->is_dir) {
		loc->path = cli_xstrdup(o->out);
		return;
	}
	/* A directory: resolve it (".", "dir/..", a symlink) to the real
	 * parent and name, where the temporary sibling is made. */
	char *path;
	if (loc->exists) {
		path = realpath(o->out, NULL);
		if (!path)
			cli_die(CLI_ERROR, "%s: %s", o->out, strerror(errno));
	} else {
		path = cli_xstrdup(o->out);
		while (strlen(path) > 1 && path[strlen(path) - 1] == '/')
			path[strlen(path) - 1] = 0;
	}
	char *slash = strrchr(path, '/');
	if (!slash) {
		loc->parent = cli_xstrdup(".");
		loc->base = cli_xstrdup(path);
	} else {
		loc->base = cli_xstrdup(slash + 1);
		loc->parent = cli_xstrdup(slash == path ? "/" : path);
		if (slash != path)
			loc->parent[slash - path] = 0;
	}
	if (!*loc->base || strcmp(loc->base, ".") == 0 || strcmp(loc->base, "..") == 0)
		cli_die(CLI_ERROR, "%s: cannot replace this directory", o->out);
	loc->path = path;
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
	if (it->action != ACT_CONVERT)
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
	size_t out_tensors = 0, counts[5] = {0};
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
	print_bytes_line("in: ", n, st_checkpoint_data_bytes(c), n_files,
	                 st_checkpoint_index_path(c) != NULL);
	print_bytes_line("out:", out_tensors, out_bytes, n_shards, n_shards > 1);
	if (o->has_to)
		cli_warn("to %s: %zu converted, %zu copied, %zu kept, %zu dropped",
		        st_dtype_name(o->to), counts[ACT_CONVERT],
		        counts[ACT_COPY] + counts[ACT_ASIS], counts[ACT_KEEP], counts[ACT_DROP]);
	else
		cli_warn("layout only: %zu copied unchanged, %zu dropped",
		        counts[ACT_COPY], counts[ACT_DROP]);
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
	if (st_checkpoint_open(&c, o.in, ST_OPEN_TORCH, &err) != ST_OK) {
		cli_error(&err);
		exit(CLI_ERROR);
	}
	size_t n = st_checkpoint_n_tensors(c);
	item *items = cli_xcalloc(n, sizeof *items);
	plan_items(c, &o, items);

	struct outloc loc;
	locate_out(&o, &loc);

	/* Plan the output with a writer that is never opened: it checks the
	 * metadata and names now, before anything is written, and gives the
	 * canonical order the shards are cut in. */
	st_writer *plan;
	if (st_writer_new(&plan, &err) != ST_OK)
		fail_st(&err);
	writer_setup(plan, c, &o, items, n, -1);
	unsigned n_shards = split_shards(plan, c, items, o.shard_size);
	st_writer_free(plan);

	/* Read-ahead advice goes through descriptors of our own: libst's are
	 * not exposed, and the page cache is shared. */
	size_t n_files = st_checkpoint_n_files(c);
	int *fds = cli_xmalloc(n_files * sizeof *fds);
	struct file_id *skip = cli_xcalloc(n_files + 3, sizeof *skip);
	size_t n_skip = 0;
	for (size_t f = 0; f < n_files; f++) {
		const char *p = st_file_path(st_checkpoint_file(c, f));
		fds[f] = open(p, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (stat(p, &st) == 0)
			skip[n_skip++] = (struct file_id){st.st_dev, st.st_ino};
	}
	/* In place, the safetensors files read are the earlier layout and go;
	 * a PyTorch file is another format, and stays where the user put it. */
	int torch_in = st_file_format(st_checkpoint_file(c, 0)) == ST_FORMAT_TORCH;
	size_t n_in_layout = torch_in ? 0 : n_skip;
	run r = {.c = c, .o = &o, .items = items, .n_items = n, .fds = fds};
	r.n_workers = (unsigned)cli_default_threads(MAX_WORKERS);
	for (unsigned i = 0; i < r.n_workers; i++) {
		r.workers[i].out = cli_xmalloc(CHUNK);
		r.workers[i].in = cli_xmalloc(CHUNK);
		r.workers[i].stats = cli_xcalloc(n, sizeof *r.workers[i].stats);
	}
	uint64_t total_in = 0;
	for (size_t i = 0; i < n; i++)
		if (items[i].action != ACT_DROP)
			total_in += items[i].t->n_bytes;
	cli_progress_start(&r.progress, "stconvert", total_in);

	if (!loc.is_dir) {
		write_file(&r, loc.path, loc.path, loc.exists ? (int)loc.mode : -1, -1);
	} else {
		check_signal();
		size_t len = strlen(loc.parent) + strlen(loc.base) + 32;
		char *tmp = cli_xmalloc(len);
		snprintf(tmp, len, "%s/.%s.stconvert-XXXXXX", loc.parent, loc.base);
		if (!mkdtemp(tmp)) {
			int e = errno;
			free(tmp);
			cli_die(CLI_ERROR, "%s: cannot create a temporary directory beside it: %s",
			        loc.path, strerror(e));
		}
		g_clean.tmpdir = tmp;
		if (n_shards == 1) {
			write_member(&r, tmp, "model.safetensors", -1);
		} else {
			st_index_entry *entries = cli_xcalloc(n, sizeof *entries);
			char (*names)[64] = cli_xcalloc(n_shards, sizeof *names);
			size_t n_entries = 0;
			uint64_t total = 0;
			for (unsigned s = 0; s < n_shards; s++) {
				st_shard_name(names[s], sizeof names[s], s + 1, n_shards);
				write_member(&r, tmp, names[s], (int)s);
			}
			for (size_t i = 0; i < n; i++) {
				if (items[i].action == ACT_DROP)
					continue;
				entries[n_entries++] = (st_index_entry){
					items[i].t->name, items[i].t->name_len, names[items[i].shard]};
				total += items[i].out_bytes;
			}
			char *p = path_join(tmp, "model.safetensors.index.json");
			if (st_index_write(p, total, entries, n_entries, NULL, 0, &err) != ST_OK)
				fail_st(&err);
			free(p);
			free(entries);
			free(names);
		}
		cli_progress_done(&r.progress);
		/* The other snapshot files, when IN is a directory. */
		struct stat st;
		const char *idx = st_checkpoint_index_path(c);
		if (idx && stat(idx, &st) == 0)
			skip[n_skip++] = (struct file_id){st.st_dev, st.st_ino};
		if (n_in_layout)
			n_in_layout = n_skip;
		if (stat(o.in, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (stat(tmp, &st) == 0)
				skip[n_skip++] = (struct file_id){st.st_dev, st.st_ino};
			if (loc.exists && stat(loc.path, &st) == 0)
				skip[n_skip++] = (struct file_id){st.st_dev, st.st_ino};
			struct copy_ctx cx = {&o, skip, n_skip, o.has_to};
			copy_tree(&cx, o.in, tmp, 0);
		}
		if (loc.exists) {
			struct stat a, b;
			int in_place = stat(o.in, &a) == 0 && stat(loc.path, &b) == 0 &&
			               a.st_dev == b.st_dev && a.st_ino == b.st_ino;
			carry_over(loc.path, tmp, &o, skip, in_place ? n_in_layout : 0);
		}
		if (chmod(tmp, loc.mode) != 0)
			fail("%s: cannot set the mode of the new directory: %s", tmp, strerror(errno));
		fsync_path(tmp);
		/* From here the new output is complete: a signal no longer undoes
		 * it, and the swap and the removal of the old directory must both
		 * happen. */
		check_signal();
		sigset_t old;
		signals_block(&old);
		commit_dir(tmp, loc.path, loc.parent, loc.exists);
	}
	cli_progress_done(&r.progress);
	report(&o, c, items, n, n_shards);

	for (size_t f = 0; f < n_files; f++)
		if (fds[f] >= 0)
			close(fds[f]);
	for (unsigned i = 0; i < r.n_workers; i++) {
		free(r.workers[i].out);
		free(r.workers[i].in);
		free(r.workers[i].stats);
	}
	st_checkpoint_close(c);
	free(fds);
	free(skip);
	free(items);
	for (size_t m = 0; m < o.n_meta; m++)
		free(o.meta[m].key);
	free(o.meta);
	free(o.keep);
	free(o.drop);
	free(o.keep_hits);
	free(o.drop_hits);
	free(loc.path);
	free(loc.parent);
	free(loc.base);
	return cli_exit(CLI_OK);
}
