/*
 * stats.c - the figures stinfo computes (stinfo.h): its totals by dtype,
 * and --stats, every tensor's st_stats (st/stats.h) streamed through
 * bounded buffers by st_stream_run (st/stream.h).
 */
#include "stinfo/stinfo.h"

#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"

/* ---- totals ------------------------------------------------------------ */

/*
 * Sums use checked arithmetic: each file's tensors fit in its size, but a
 * sharded checkpoint's parameter count could in principle exceed 2^64.
 * Saturating keeps the output well defined in that absurd case.
 */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;
	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

size_t stinfo_select(const st_checkpoint *ck, const char *const *globs, size_t n_globs,
                     unsigned char **sel)
{
	size_t n = st_checkpoint_n_tensors(ck), hits = 0;
	*sel = NULL;
	if (!n_globs)
		return n;
	*sel = cli_xcalloc(n ? n : 1, 1);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		int hit = st_diff_name_selected(globs, n_globs, t->name, t->name_len);
		if (hit < 0)
			cli_die(CLI_ERROR, "out of memory");
		(*sel)[i] = (unsigned char)hit;
		hits += (size_t)hit;
	}
	return hits;
}

void stinfo_totals(const st_checkpoint *ck, const unsigned char *sel, struct stinfo_totals *t)
{
	memset(t, 0, sizeof *t);
	size_t n = st_checkpoint_n_tensors(ck);
	for (size_t i = 0; i < n; i++) {
		if (!stinfo_shown(sel, i))
			continue;
		const st_tensor *x = st_checkpoint_tensor(ck, i, NULL);
		t->tensors++;
		t->params = sat_add(t->params, x->n_elements);
		t->bytes = sat_add(t->bytes, x->n_bytes);
		t->by[x->dtype].tensors++;
		t->by[x->dtype].params = sat_add(t->by[x->dtype].params, x->n_elements);
		t->by[x->dtype].bytes = sat_add(t->by[x->dtype].bytes, x->n_bytes);
	}
}

/* ---- statistics -------------------------------------------------------- */

/* Default elements per chunk: 8 MiB of F64 read at a time. */
#define STATS_CHUNK_ELEMS ((size_t)1 << 20)
/* Elements widened to double at a time, so the buffer stays in L2. */
#define STATS_SUB 16384

struct stats_run {
	const st_checkpoint *ck;
	const st_stream_item *items;
	st_stats *accs; /* per tensor */
	cli_progress progress;
};

/* A chunk (one piece: the stream does not pack) into its own result. */
static int stats_work(void *ctx, const st_stream_chunk *c, st_error *err)
{
	struct stats_run *r = ctx;
	const st_stream_piece *p = &c->pieces[0];
	const st_tensor *t = st_checkpoint_tensor(r->ck, r->items[p->item].tensor[0],
	                                          NULL);
	unsigned gb, ge; /* a group's bytes and elements (F4: 1 and 2) */
	st_dtype_group(t->dtype, &gb, &ge);
	double *wide = c->scratch;
	st_stats *a = c->out;
	memset(a, 0, sizeof *a);
	const uint64_t ne = p->n_groups * ge; /* STATS_SUB is a multiple of ge */
	for (uint64_t e = 0; e < ne; e += STATS_SUB) {
		size_t n = (size_t)(ne - e < STATS_SUB ? ne - e : STATS_SUB);
		st_dtype_widen(t->dtype, p->data[0] + e / ge * gb, wide, n);
		st_stats_add(a, wide, n);
	}
	return 0;
}

/* Chunks arrive in order: merges in element order, whatever the threads. */
static int stats_sink(void *ctx, const st_stream_chunk *c, st_error *err)
{
	struct stats_run *r = ctx;
	st_stats_merge(&r->accs[r->items[c->pieces[0].item].tensor[0]], c->out);
	return 0;
}

static void stats_progress(void *ctx, const st_stream_chunk *c, uint64_t bytes)
{
	(void)c;
	cli_progress_add(&((struct stats_run *)ctx)->progress, bytes);
}

int stinfo_stats(st_checkpoint *ck, const unsigned char *sel, int threads, st_stats *accs,
                 st_error *err)
{
	size_t n = st_checkpoint_n_tensors(ck), m = 0;
	size_t chunk = STATS_CHUNK_ELEMS;
	const char *env = getenv("STINFO_CHUNK_ELEMENTS");
	uint64_t v;
	if (env && cli_parse_u64(env, &v) == 0 && v > 0 && v <= chunk)
		chunk = (size_t)v;

	struct stats_run r = {ck, NULL, accs, {0}};
	st_stream_item *items = cli_xcalloc(n, sizeof *items);
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		unsigned gb, ge;
		if (!st_dtype_has_values(t->dtype) || !stinfo_shown(sel, i))
			continue;
		st_dtype_group(t->dtype, &gb, &ge);
		items[m].tensor[0] = i;
		items[m].n_groups = t->n_elements / ge; /* the format: whole bytes */
		items[m].group_bytes[0] = gb;
		items[m].cost = ge; /* chunk_size counts elements */
		total += t->n_bytes;
		m++;
	}
	r.items = items;
	unsigned nt = (unsigned)(threads > 0 ? threads : 1);
	/* The sink only merges, so a finished chunk seldom waits for its
	 * turn: one buffer per thread is enough. */
	st_stream_config cfg = {
		.src = {ck, NULL}, .items = items, .n_items = m,
		.chunk_size = chunk, .threads = nt, .buffers = nt,
		.out_size = sizeof(st_stats), .scratch_size = STATS_SUB * sizeof(double),
		.work = stats_work, .sink = stats_sink, .progress = stats_progress,
		.ctx = &r,
	};
	cli_progress_start(&r.progress, "stats", total);
	int rc = st_stream_run(&cfg, err);
	cli_progress_done(&r.progress);
	free(items);
	return rc == ST_OK ? 0 : -1;
}
