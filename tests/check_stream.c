/*
 * check_stream.c - the streaming reader (st/stream.h, libst/stream.c):
 * every byte read is the file's byte at that place (the files are built
 * here byte by byte, so the expected values do not come from libst), each
 * group reaches work exactly once, sinks run in chunk order whatever the
 * workers' timing, no more chunks are in flight than there are buffers,
 * and the first error stops the run and is the one returned.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <st.h>

/* A tensor of the test files: name, dtype, element count; data byte j of
 * tensor t is (t * 37 + j * 11 + j / 251) & 0xff. */
struct spec {
	const char *name;
	const char *dtype;
	uint64_t n;
	unsigned esize;
};

static unsigned char byte_at(size_t t, uint64_t j)
{
	return (unsigned char)((t * 37 + j * 11 + j / 251) & 0xff);
}

static char *tmp_path(const char *stem)
{
	char *p = malloc(256);
	const char *dir = getenv("TMPDIR");
	snprintf(p, 256, "%s/check_stream_%ld_%s.safetensors", dir ? dir : "/tmp",
	         (long)getpid(), stem);
	return p;
}

/*
 * Write a safetensors file by hand: u64 LE header length, JSON, data.
 * Tensor i of the file is specs[order[i]] with that spec's bytes.
 */
static char *write_file(const char *stem, const struct spec *specs_,
                        const size_t *order, size_t n)
{
	struct spec s[16];
	for (size_t i = 0; i < n; i++)
		s[i] = specs_[order[i]];
	char hdr[4096];
	size_t o = 0;
	uint64_t off = 0;
	o += (size_t)snprintf(hdr + o, sizeof hdr - o, "{");
	for (size_t i = 0; i < n; i++) {
		uint64_t bytes = s[i].n * s[i].esize;
		o += (size_t)snprintf(hdr + o, sizeof hdr - o,
		                      "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu],"
		                      "\"data_offsets\":[%llu,%llu]}",
		                      i ? "," : "", s[i].name, s[i].dtype,
		                      (unsigned long long)s[i].n,
		                      (unsigned long long)off,
		                      (unsigned long long)(off + bytes));
		off += bytes;
	}
	o += (size_t)snprintf(hdr + o, sizeof hdr - o, "}");
	while (o % 8)
		hdr[o++] = ' ';
	char *path = tmp_path(stem);
	FILE *f = fopen(path, "wb");
	ck_assert(f != NULL);
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)o >> (8 * i));
	fwrite(len, 1, 8, f);
	fwrite(hdr, 1, o, f);
	for (size_t i = 0; i < n; i++)
		for (uint64_t j = 0; j < s[i].n * s[i].esize; j++)
			fputc(byte_at(order[i], j), f);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

static st_checkpoint *open_ck(const char *path)
{
	st_checkpoint *c;
	st_error err;
	ck_assert_int_eq(st_checkpoint_open(&c, path, 0, &err), ST_OK);
	return c;
}

static const struct spec specs[] = {
	{"a", "U8", 1000, 1}, {"b", "F32", 3001, 4}, {"empty", "F32", 0, 4},
	{"c", "I16", 17, 2},  {"d", "F64", 5000, 8}, {"e", "U8", 1, 1},
};
#define N_SPECS (sizeof specs / sizeof specs[0])
static const size_t ident[N_SPECS] = {0, 1, 2, 3, 4, 5};

/* What the callbacks record. */
struct rec {
	pthread_mutex_t mu;
	const st_stream_item *items;
	size_t n_items;
	size_t ids[16][ST_STREAM_SIDES]; /* spec of each item's tensors */
	uint64_t *seen;            /* per item: groups seen, in order */
	unsigned char *bad;        /* any byte that was not the file's */
	uint64_t n_worked, n_sunk, next_sink;
	uint64_t out_of_order;
	uint64_t over_budget;      /* chunks over chunk_size cost */
	uint64_t mixed;            /* chunks with several items */
	uint64_t chunk_size;
	unsigned buffers;
	uint64_t beyond_buffers;   /* chunks claimed past the buffers */
	const void *outs[64];
	size_t n_outs;
	uint64_t fail_work_at, fail_sink_at; /* UINT64_MAX: never */
	uint64_t sink_after_fail;
	uint64_t progress_bytes;
	int jitter;
	int scratch_bad;
	pthread_t caller;
	unsigned threads;
	int worker_bad;       /* an id out of range, or 0 off the caller */
	int unblocked;        /* a helper thread that would take SIGINT */
};

static void rec_init(struct rec *r, const st_stream_item *items, size_t n)
{
	memset(r, 0, sizeof *r);
	pthread_mutex_init(&r->mu, NULL);
	r->items = items;
	r->n_items = n;
	r->seen = calloc(n, sizeof *r->seen);
	r->fail_work_at = r->fail_sink_at = UINT64_MAX;
}

static void rec_free(struct rec *r)
{
	free(r->seen);
	pthread_mutex_destroy(&r->mu);
}

static void jitter(uint64_t k)
{
	/* Uneven work times so that chunks finish out of order. */
	struct timespec ts = {0, (long)((k * 7919) % 5) * 200000};
	nanosleep(&ts, NULL);
}

static int rec_work(void *ctx, const st_stream_chunk *c, st_error *err)
{
	struct rec *r = ctx;
	if (r->jitter)
		jitter(c->index);
	/* The worker's scratch is its own: it keeps what the worker wrote. */
	unsigned *sc = c->scratch;
	int scratch_bad = *sc != 0 && *sc != c->worker + 1;
	*sc = c->worker + 1;
	int worker_bad = 0, unblocked = 0;
	if (r->threads) {
		int caller = pthread_equal(pthread_self(), r->caller);
		worker_bad = c->worker >= r->threads || (c->worker == 0) != caller;
		sigset_t cur;
		pthread_sigmask(SIG_BLOCK, NULL, &cur);
		unblocked = !caller && !sigismember(&cur, SIGINT);
	}
	uint64_t cost = 0;
	int bad = 0;
	for (size_t p = 0; p < c->n_pieces; p++) {
		const st_stream_piece *pc = &c->pieces[p];
		const st_stream_item *it = &r->items[pc->item];
		unsigned cst = it->cost ? it->cost : it->group_bytes[0];
		cost += pc->n_groups * cst;
		for (int s = 0; s < ST_STREAM_SIDES; s++) {
			uint64_t gb = it->group_bytes[s];
			if (!gb)
				continue;
			for (uint64_t j = 0; j < pc->n_groups * gb; j++)
				if (pc->data[s][j] !=
				    byte_at(r->ids[pc->item][s], pc->group * gb + j))
					bad = 1;
		}
	}
	memcpy(c->out, &c->index, sizeof c->index);
	pthread_mutex_lock(&r->mu);
	for (size_t p = 0; p < c->n_pieces; p++) {
		const st_stream_piece *pc = &c->pieces[p];
		/* Pieces of an item arrive in group order only with a sink; here
		 * check coverage by counting, order in rec_sink. */
		r->seen[pc->item] += pc->n_groups;
		if (p && pc->item != c->pieces[0].item)
			r->mixed++;
	}
	if (bad)
		r->bad = (unsigned char *)1;
	r->scratch_bad |= scratch_bad;
	r->worker_bad |= worker_bad;
	r->unblocked |= unblocked;
	if (r->chunk_size && cost > r->chunk_size && c->n_pieces > 1)
		r->over_budget++;
	if (c->index >= r->n_sunk + r->buffers)
		r->beyond_buffers++;
	size_t i;
	for (i = 0; i < r->n_outs && r->outs[i] != c->out; i++)
		;
	if (i == r->n_outs && r->n_outs < 64)
		r->outs[r->n_outs++] = c->out;
	r->n_worked++;
	pthread_mutex_unlock(&r->mu);
	if (c->index == r->fail_work_at) {
		err->code = ST_EFORMAT;
		snprintf(err->message, sizeof err->message, "work failed at %llu",
		         (unsigned long long)c->index);
		return -1;
	}
	return 0;
}

static int rec_sink(void *ctx, const st_stream_chunk *c, st_error *err)
{
	struct rec *r = ctx;
	uint64_t k;
	memcpy(&k, c->out, sizeof k);
	pthread_mutex_lock(&r->mu);
	if (k != c->index || c->index != r->next_sink)
		r->out_of_order++;
	if (r->fail_work_at != UINT64_MAX && c->index >= r->fail_work_at)
		r->sink_after_fail++;
	if (r->fail_sink_at != UINT64_MAX && c->index > r->fail_sink_at)
		r->sink_after_fail++;
	r->next_sink = c->index + 1;
	r->n_sunk++;
	pthread_mutex_unlock(&r->mu);
	if (c->index == r->fail_sink_at) {
		err->code = ST_EIO;
		snprintf(err->message, sizeof err->message, "sink failed at %llu",
		         (unsigned long long)c->index);
		return -1;
	}
	return 0;
}

static void rec_progress(void *ctx, const st_stream_chunk *c, uint64_t bytes)
{
	(void)c;
	((struct rec *)ctx)->progress_bytes += bytes;
}

static size_t find(st_checkpoint *c, const char *name)
{
	long i = st_checkpoint_find(c, name, strlen(name));
	ck_assert_int_ge(i, 0);
	return (size_t)i;
}

/*
 * Item i reads specs[i] (found by name: the file's tensor order is its
 * data order), side 0 only; cost per group as given (0: bytes).
 */
static void items_for(st_stream_item *items, struct rec *r, st_checkpoint *c,
                      size_t n, unsigned cost)
{
	for (size_t i = 0; i < n; i++) {
		memset(&items[i], 0, sizeof items[i]);
		items[i].tensor[0] = find(c, specs[i].name);
		items[i].n_groups = specs[i].n;
		items[i].group_bytes[0] = specs[i].esize;
		items[i].cost = cost;
		r->ids[i][0] = i;
	}
}

static st_stream_config config(st_checkpoint *c, const st_stream_item *items,
                               size_t n, struct rec *r)
{
	st_stream_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.src[0] = c;
	cfg.items = items;
	cfg.n_items = n;
	cfg.work = rec_work;
	cfg.sink = rec_sink;
	cfg.progress = rec_progress;
	cfg.ctx = r;
	cfg.out_size = sizeof(uint64_t);
	cfg.scratch_size = sizeof(unsigned);
	return cfg;
}

static uint64_t total_bytes(void)
{
	uint64_t t = 0;
	for (size_t i = 0; i < N_SPECS; i++)
		t += specs[i].n * specs[i].esize;
	return t;
}

/* Every group of every item reaches work once, with the file's bytes. */
static void check_covered(const struct rec *r)
{
	for (size_t i = 0; i < N_SPECS; i++)
		ck_assert_uint_eq(r->seen[i], specs[i].n);
	ck_assert_ptr_null(r->bad);
	ck_assert_int_eq(r->scratch_bad, 0);
	ck_assert_uint_eq(r->progress_bytes, total_bytes());
}

START_TEST(ordered_sinks_in_chunk_order)
{
	char *path = write_file("order", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	r.jitter = 1;
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.chunk_size = 256;
	cfg.threads = 4;
	st_error err;
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_OK);
	check_covered(&r);
	ck_assert_uint_eq(r.out_of_order, 0);
	ck_assert_uint_eq(r.n_sunk, r.n_worked);
	/* a 1000/256 -> 4 chunks, b 12004/256 -> 47, empty none, c 1,
	 * d 40000/256 -> 157, e 1. */
	ck_assert_uint_eq(r.n_worked, 4 + 47 + 1 + 157 + 1);
	ck_assert_uint_eq(r.mixed, 0);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(unordered_covers_every_group)
{
	char *path = write_file("unordered", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 1);
	r.jitter = 1;
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.sink = NULL;
	cfg.chunk_size = 100;
	cfg.threads = 3;
	st_error err;
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_OK);
	check_covered(&r);
	ck_assert_uint_eq(r.n_sunk, 0);
	/* 10 + 31 + 1 + 50 + 1 chunks of at most 100 elements. */
	ck_assert_uint_eq(r.n_worked, 10 + 31 + 1 + 50 + 1);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(pack_fills_chunks_across_items)
{
	char *path = write_file("pack", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.pack = 1;
	cfg.chunk_size = 4096;
	r.chunk_size = cfg.chunk_size;
	cfg.threads = 2;
	st_error err;
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_OK);
	check_covered(&r);
	ck_assert_uint_eq(r.over_budget, 0);
	ck_assert_uint_gt(r.mixed, 0);
	ck_assert_uint_eq(r.out_of_order, 0);
	/* Packed, 53039 bytes take ceil(53039 / 4096) = 13 chunks, or one
	 * more where a group does not fit in what is left of a chunk. */
	ck_assert_uint_eq(total_bytes(), 53039);
	ck_assert_uint_ge(r.n_worked, 13);
	ck_assert_uint_le(r.n_worked, 14);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(group_larger_than_chunk_still_progresses)
{
	char *path = write_file("big", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.chunk_size = 1; /* below every group but U8's */
	cfg.threads = 2;
	st_error err;
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_OK);
	check_covered(&r);
	/* One group per chunk: every element is a chunk. */
	ck_assert_uint_eq(r.n_worked, 1000 + 3001 + 17 + 5000 + 1);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(buffers_bound_chunks_in_flight)
{
	char *path = write_file("bounded", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	r.jitter = 1;
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.chunk_size = 128;
	cfg.threads = 3;
	cfg.buffers = 4;
	r.buffers = 4;
	st_error err;
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_OK);
	check_covered(&r);
	ck_assert_uint_gt(r.n_worked, 400);
	/* Never a chunk claimed beyond the 4 buffers, and 4 buffers reused. */
	ck_assert_uint_eq(r.beyond_buffers, 0);
	ck_assert_uint_le(r.n_outs, 4);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(lockstep_reads_both_sides)
{
	/* Side 1 holds the same tensors in the reverse data order. */
	const size_t rev[N_SPECS] = {5, 4, 3, 2, 1, 0};
	char *pa = write_file("side0", specs, ident, N_SPECS);
	char *pb = write_file("side1", specs, rev, N_SPECS);
	st_checkpoint *a = open_ck(pa), *b = open_ck(pb);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, a, N_SPECS, 0);
	for (size_t i = 0; i < N_SPECS; i++) {
		items[i].tensor[1] = find(b, specs[i].name);
		items[i].group_bytes[1] = specs[i].esize;
		r.ids[i][1] = i;
	}
	st_stream_config cfg = config(a, items, N_SPECS, &r);
	cfg.src[1] = b;
	cfg.chunk_size = 1000;
	cfg.threads = 2;
	st_error err;
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_OK);
	for (size_t i = 0; i < N_SPECS; i++)
		ck_assert_uint_eq(r.seen[i], specs[i].n);
	ck_assert_ptr_null(r.bad);
	ck_assert_uint_eq(r.progress_bytes, 2 * total_bytes());
	ck_assert_uint_eq(r.out_of_order, 0);
	rec_free(&r);
	st_checkpoint_close(a);
	st_checkpoint_close(b);
	unlink(pa);
	unlink(pb);
	free(pa);
	free(pb);
}
END_TEST

START_TEST(helpers_block_signals_caller_is_worker_0)
{
	char *path = write_file("threads", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	r.jitter = 1;
	r.caller = pthread_self();
	r.threads = 3;
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.chunk_size = 1024;
	cfg.threads = 3;
	/* Signals reach the caller, whose mask is as it was. */
	sigset_t before, after;
	pthread_sigmask(SIG_BLOCK, NULL, &before);
	ck_assert_int_eq(st_stream_run(&cfg, NULL), ST_OK);
	pthread_sigmask(SIG_BLOCK, NULL, &after);
	ck_assert_int_eq(sigismember(&before, SIGINT), sigismember(&after, SIGINT));
	check_covered(&r);
	ck_assert_int_eq(r.worker_bad, 0);
	ck_assert_int_eq(r.unblocked, 0);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(nothing_to_read_calls_nothing)
{
	char *path = write_file("none", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	items[0] = items[2]; /* "empty": 0 elements */
	st_stream_config cfg = config(c, items, 1, &r);
	cfg.threads = 4;
	ck_assert_int_eq(st_stream_run(&cfg, NULL), ST_OK);
	cfg.n_items = 0;
	ck_assert_int_eq(st_stream_run(&cfg, NULL), ST_OK);
	ck_assert_uint_eq(r.n_worked, 0);
	ck_assert_uint_eq(r.n_sunk, 0);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(dtype_groups)
{
	unsigned b, e;
	st_dtype_group(ST_DTYPE_F32, &b, &e);
	ck_assert(b == 4 && e == 1);
	st_dtype_group(ST_DTYPE_BOOL, &b, &e);
	ck_assert(b == 1 && e == 1);
	st_dtype_group(ST_DTYPE_F4, &b, &e);
	ck_assert(b == 1 && e == 2);
	st_dtype_group(ST_DTYPE_F6_E2M3, &b, &e);
	ck_assert(b == 3 && e == 4);
	st_dtype_group(ST_DTYPE_C64, &b, &e);
	ck_assert(b == 8 && e == 1);
}
END_TEST

START_TEST(work_error_stops_and_wins)
{
	char *path = write_file("workerr", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	r.jitter = 1;
	r.fail_work_at = 20;
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.chunk_size = 256;
	cfg.threads = 4;
	st_error err;
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_EFORMAT);
	ck_assert_int_eq(err.code, ST_EFORMAT);
	ck_assert_str_eq(err.message, "work failed at 20");
	/* No chunk at or after the failed one is sunk; few more are worked. */
	ck_assert_uint_eq(r.sink_after_fail, 0);
	ck_assert_uint_le(r.n_sunk, 20);
	ck_assert_uint_lt(r.n_worked, 20 + 2 * 4 + 1);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(sink_error_stops_later_sinks)
{
	char *path = write_file("sinkerr", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	r.fail_sink_at = 7;
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.chunk_size = 256;
	cfg.threads = 3;
	st_error err;
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_EIO);
	ck_assert_str_eq(err.message, "sink failed at 7");
	ck_assert_uint_eq(r.n_sunk, 8);
	ck_assert_uint_eq(r.sink_after_fail, 0);
	ck_assert_uint_eq(r.out_of_order, 0);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(read_error_names_file_and_tensor)
{
	char *path = write_file("shrunk", specs, ident, N_SPECS);
	st_checkpoint *c = open_ck(path);
	/* The file loses its data after the open checked it. */
	FILE *f = fopen(path, "rb");
	ck_assert(f != NULL);
	unsigned char len[8];
	ck_assert_uint_eq(fread(len, 1, 8, f), 8);
	fclose(f);
	ck_assert_int_eq(truncate(path, 8 + len[0] + 256 * len[1] + 1000), 0);
	st_stream_item items[N_SPECS];
	struct rec r;
	rec_init(&r, items, N_SPECS);
	items_for(items, &r, c, N_SPECS, 0);
	st_stream_config cfg = config(c, items, N_SPECS, &r);
	cfg.chunk_size = 512;
	cfg.threads = 2;
	st_error err;
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(st_stream_run(&cfg, &err), ST_EIO);
	ck_assert_ptr_nonnull(strstr(err.message, path));
	ck_assert_ptr_nonnull(strstr(err.message, "tensor 'b'"));
	/* Tensor a (the first 1000 bytes) was whole: its chunks were sunk. */
	ck_assert_uint_eq(r.seen[0], 1000);
	ck_assert_uint_eq(r.sink_after_fail, 0);
	ck_assert_ptr_null(r.bad);
	rec_free(&r);
	st_checkpoint_close(c);
	unlink(path);
	free(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stream");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, ordered_sinks_in_chunk_order);
	tcase_add_test(tc, unordered_covers_every_group);
	tcase_add_test(tc, pack_fills_chunks_across_items);
	tcase_add_test(tc, group_larger_than_chunk_still_progresses);
	tcase_add_test(tc, lockstep_reads_both_sides);
	tcase_add_test(tc, helpers_block_signals_caller_is_worker_0);
	tcase_add_test(tc, nothing_to_read_calls_nothing);
	tcase_add_test(tc, dtype_groups);
	suite_add_tcase(s, tc);
	tc = tcase_create("limits");
	tcase_add_test(tc, buffers_bound_chunks_in_flight);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, work_error_stops_and_wins);
	tcase_add_test(tc, sink_error_stops_later_sinks);
	tcase_add_test(tc, read_error_names_file_and_tensor);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
