/*
 * stream.c - the streaming reader (see st/stream.h): cuts the
 * chunks, runs the workers, keeps sinks in chunk order. It does no
 * arithmetic on tensor data; the callbacks do.
 *
 * A chunk k owns one buffer (a "slot") from its claim to the end of its
 * sink. Chunks are claimed in order, so the chunks in flight are exactly
 * [next_sink, next_claim), never more than there are slots, and slot of
 * chunk k can be found at parked[k % n_slots] once its work is done. The
 * worker that finishes chunk next_sink drains: it sinks every parked
 * chunk in turn while the others keep working.
 */
#include "internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CHUNK ((uint64_t)4 << 20)

/* Where the cut into chunks has got to: the next group to hand out. */
struct cursor {
	size_t item;
	uint64_t group;
};

/* What a first pass over the cut finds: the sizes to allocate. */
struct plan {
	uint64_t n_chunks;
	size_t max_pieces;                 /* per chunk */
	size_t max_bytes[ST_STREAM_SIDES];  /* per chunk and side */
};

struct slot {
	unsigned char *buf[ST_STREAM_SIDES];
	st_stream_piece *pieces;
	st_stream_chunk chunk;
	uint64_t read_bytes;
	struct slot *next_free;
};

struct run {
	const st_stream_config *cfg;
	struct plan plan;
	struct cursor cursor; /* under mu: the cut of the next chunk claimed */
	struct slot *slots, *free;
	struct slot **parked;
	unsigned n_slots;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t next_claim, next_sink;
	int sinking;
	int failed;
	st_error err;
};

struct worker {
	struct run *r;
	unsigned id;
	void *scratch;
	pthread_t thread;
};

static int oom(st_error *err)
{
	return st__error(err, ST_ENOMEM, "out of memory for the read buffers");
}

static unsigned item_cost(const st_stream_item *it)
{
	if (it->cost)
		return it->cost;
	unsigned c = it->group_bytes[0] > it->group_bytes[1] ? it->group_bytes[0]
	                                                     : it->group_bytes[1];
	return c ? c : 1;
}

/*
 * Cut the next chunk from *cur: its pieces into out (when not NULL) and
 * its bytes per side into bytes; returns the number of pieces, 0 at the
 * end. A chunk closes when its budget is spent or, without pack, at the
 * end of an item. Every chunk takes at least one group, so a group
 * costlier than the budget still makes progress. The cut is made twice,
 * once to size the buffers and once while claiming, so no list of chunks
 * is kept whatever the checkpoint's size.
 */
static size_t next_chunk(const st_stream_config *cfg, struct cursor *cur,
                         st_stream_piece *out, uint64_t bytes[ST_STREAM_SIDES])
{
	uint64_t budget = cfg->chunk_size ? cfg->chunk_size : DEFAULT_CHUNK;
	uint64_t used = 0;
	size_t np = 0;
	bytes[0] = bytes[1] = 0;
	while (cur->item < cfg->n_items) {
		const st_stream_item *it = &cfg->items[cur->item];
		if (cur->group >= it->n_groups) {
			cur->item++;
			cur->group = 0;
			if (np && !cfg->pack)
				break;
			continue;
		}
		uint64_t cost = item_cost(it);
		if (used && used + cost > budget)
			break;
		uint64_t room = (budget - used) / cost;
		if (room == 0)
			room = 1;
		uint64_t left = it->n_groups - cur->group;
		uint64_t n = left < room ? left : room;
		if (out)
			out[np] = (st_stream_piece){cur->item, cur->group, n, {NULL, NULL}};
		np++;
		used += n * cost;
		for (int s = 0; s < ST_STREAM_SIDES; s++)
			bytes[s] += n * it->group_bytes[s];
		cur->group += n;
	}
	return np;
}

static void plan_make(const st_stream_config *cfg, struct plan *p)
{
	struct cursor cur = {0, 0};
	uint64_t bytes[ST_STREAM_SIDES];
	size_t np;
	memset(p, 0, sizeof *p);
	while ((np = next_chunk(cfg, &cur, NULL, bytes)) != 0) {
		p->n_chunks++;
		if (np > p->max_pieces)
			p->max_pieces = np;
		for (int s = 0; s < ST_STREAM_SIDES; s++)
			if (bytes[s] > p->max_bytes[s])
				p->max_bytes[s] = (size_t)bytes[s];
	}
}

static void fail(struct run *r, const st_error *err)
{
	if (!r->failed) {
		r->failed = 1;
		r->err = *err;
		if (r->err.code == 0)
			r->err.code = ST_EIO;
	}
	pthread_cond_broadcast(&r->cv);
}

/* Read the pieces cut into slot s (n of them) for chunk k. */
static int read_chunk(struct run *r, struct slot *s, uint64_t k, size_t n,
                      st_error *err)
{
	const st_stream_config *cfg = r->cfg;
	size_t off[ST_STREAM_SIDES] = {0, 0};
	s->read_bytes = 0;
	for (size_t j = 0; j < n; j++) {
		st_stream_piece *pc = &s->pieces[j];
		const st_stream_item *it = &cfg->items[pc->item];
		for (int side = 0; side < ST_STREAM_SIDES; side++) {
			size_t len = (size_t)(pc->n_groups * it->group_bytes[side]);
			if (!it->group_bytes[side] || !cfg->src[side]) {
				pc->data[side] = NULL;
				continue;
			}
			pc->data[side] = s->buf[side] + off[side];
			if (st_checkpoint_read(cfg->src[side], it->tensor[side],
			                       pc->group * it->group_bytes[side],
			                       s->buf[side] + off[side], len, err) != ST_OK)
				return -1;
			off[side] += len;
			s->read_bytes += len;
		}
	}
	s->chunk.index = k;
	s->chunk.pieces = s->pieces;
	s->chunk.n_pieces = n;
	return 0;
}

/* Sink every parked chunk in order; called and returns with mu held. */
static void drain(struct run *r, struct worker *w)
{
	r->sinking = 1;
	for (;;) {
		struct slot *s = r->parked[r->next_sink % r->n_slots];
		if (!s || s->chunk.index != r->next_sink)
			break;
		r->parked[r->next_sink % r->n_slots] = NULL;
		if (!r->failed) {
			st_error err;
			memset(&err, 0, sizeof err);
			s->chunk.worker = w->id;
			s->chunk.scratch = w->scratch;
			pthread_mutex_unlock(&r->mu);
			int rc = r->cfg->sink(r->cfg->ctx, &s->chunk, &err);
			pthread_mutex_lock(&r->mu);
			if (rc)
				fail(r, &err);
		}
		s->next_free = r->free;
		r->free = s;
		r->next_sink++;
		pthread_cond_broadcast(&r->cv);
	}
	r->sinking = 0;
}

static void *work_loop(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	const st_stream_config *cfg = r->cfg;
	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->failed && r->next_claim < r->plan.n_chunks && !r->free)
			pthread_cond_wait(&r->cv, &r->mu);
		if (r->failed || r->next_claim >= r->plan.n_chunks)
			break;
		struct slot *s = r->free;
		r->free = s->next_free;
		uint64_t k = r->next_claim++;
		uint64_t bytes[ST_STREAM_SIDES];
		size_t np = next_chunk(cfg, &r->cursor, s->pieces, bytes);
		pthread_mutex_unlock(&r->mu);

		st_error err;
		memset(&err, 0, sizeof err);
		int rc = read_chunk(r, s, k, np, &err);
		if (rc == 0) {
			s->chunk.worker = w->id;
			s->chunk.scratch = w->scratch;
			rc = cfg->work(cfg->ctx, &s->chunk, &err);
		}

		pthread_mutex_lock(&r->mu);
		if (rc == 0 && cfg->progress)
			cfg->progress(cfg->ctx, &s->chunk, s->read_bytes);
		if (rc != 0 || !cfg->sink) {
			if (rc != 0)
				fail(r, &err);
			s->next_free = r->free;
			r->free = s;
			pthread_cond_broadcast(&r->cv);
			continue;
		}
		r->parked[k % r->n_slots] = s;
		if (!r->sinking)
			drain(r, w);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static void run_free(struct run *r, struct worker *ws, unsigned nw)
{
	for (unsigned i = 0; i < r->n_slots && r->slots; i++) {
		for (int s = 0; s < ST_STREAM_SIDES; s++)
			free(r->slots[i].buf[s]);
		free(r->slots[i].pieces);
		free(r->slots[i].chunk.out);
	}
	for (unsigned i = 0; i < nw && ws; i++)
		free(ws[i].scratch);
	free(ws);
	free(r->slots);
	free(r->parked);
}

int st_stream_run(const st_stream_config *cfg, st_error *err)
{
	struct run r;
	memset(&r, 0, sizeof r);
	r.cfg = cfg;
	plan_make(cfg, &r.plan);
	if (r.plan.n_chunks == 0)
		return ST_OK;

	unsigned nt = cfg->threads ? cfg->threads : 1;
	if (nt > r.plan.n_chunks)
		nt = (unsigned)r.plan.n_chunks;
	unsigned ns = cfg->buffers ? cfg->buffers : cfg->sink ? 2 * nt : nt;
	if (ns < nt)
		ns = nt;
	if (ns > r.plan.n_chunks)
		ns = (unsigned)r.plan.n_chunks;
	r.n_slots = ns;
	r.slots = calloc(ns, sizeof *r.slots);
	r.parked = calloc(ns, sizeof *r.parked);
	struct worker *ws = calloc(nt, sizeof *ws);
	int nomem = !r.slots || !r.parked || !ws;
	for (unsigned i = 0; !nomem && i < ns; i++) {
		struct slot *s = &r.slots[i];
		for (int side = 0; side < ST_STREAM_SIDES; side++)
			if (r.plan.max_bytes[side] &&
			    !(s->buf[side] = malloc(r.plan.max_bytes[side])))
				nomem = 1;
		s->pieces = malloc(r.plan.max_pieces * sizeof *s->pieces);
		s->chunk.out = malloc(cfg->out_size ? cfg->out_size : 1);
		nomem |= !s->pieces || !s->chunk.out;
		s->next_free = r.free;
		r.free = s;
	}
	for (unsigned i = 0; !nomem && i < nt; i++) {
		ws[i].r = &r;
		ws[i].id = i;
		ws[i].scratch = calloc(1, cfg->scratch_size ? cfg->scratch_size : 1);
		nomem |= !ws[i].scratch;
	}
	if (nomem) {
		run_free(&r, ws, ws ? nt : 0);
		return oom(err);
	}

	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	unsigned started = 1;
	for (unsigned i = 1; i < nt; i++) {
		if (pthread_create(&ws[i].thread, NULL, work_loop, &ws[i]) != 0)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	work_loop(&ws[0]);
	for (unsigned i = 1; i < started; i++)
		pthread_join(ws[i].thread, NULL);
	pthread_mutex_destroy(&r.mu);
	pthread_cond_destroy(&r.cv);

	int rc = ST_OK;
	if (r.failed) {
		rc = r.err.code;
		if (err)
			*err = r.err;
	}
	run_free(&r, ws, nt);
	return rc;
}
