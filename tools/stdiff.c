/*
 * stdiff.c - compare two checkpoints, structure and values.
 *
 * A and B are any checkpoint PATHs (file, shard index, snapshot directory;
 * single or sharded; any dtypes). stdiff reports tensors only in A, only in
 * B, shape and dtype changes, __metadata__ differences and, for every
 * tensor present in both with the same shape, whether it is bit-identical,
 * its max abs / max rel / mean abs difference, how many elements lie
 * outside the tolerance |a - b| <= atol + rtol * |b|, and the worst element.
 * Across float dtypes it also says whether the narrower side is exactly the
 * wider one rounded (what stconvert --to writes).
 *
 * It is not a validator (stinfo --check is) and it converts nothing itself:
 * floats are widened with st_convert and "rounded to B's dtype" is
 * st_convert's own rounding, so the answer matches stconvert bit for bit.
 *
 * Data is streamed with st_checkpoint_read in chunks of a few MiB by a small
 * pool of threads, each with its own checkpoint handles (libst promises
 * thread safety per handle only), so memory stays bounded whatever the size
 * of the checkpoints. Byte-identical chunks take a memcmp fast path.
 * Statistics are computed in double precision; the per-chunk sums behind
 * the mean are added in chunk order so results do not depend on threading.
 */
#include "common/cli.h"
#include "common/ckpt.h"

#include <endian.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of the wider side read per chunk: large preads, few syscalls. */
#define CHUNK_BYTES ((size_t)4 << 20)
/* Elements decoded to double at a time: keeps the decode buffers in L2. */
#define SUB 16384
#define MAX_THREADS 8

__extension__ typedef __int128 wide_int;

/* How a dtype's values are compared. */
enum kind {
	KIND_FLOAT, /* F64, F32, F16, BF16: widened to double */
	KIND_INT,   /* BOOL and the integer types: exact, as 128-bit integers */
	KIND_RAW    /* F8, F6, F4, C64: bytes only, per element */
};

struct opts {
	double rtol, atol;
	bool have_rtol, have_atol;
	bool exact, names_only, quiet, json, verbose;
	int threads;
	const char **globs;
	size_t n_globs;
	const char **prefixes;
	size_t n_prefixes;
};

/* A tensor of one side, under the name it is matched by. */
struct entry {
	const char *key; /* name with the stripped prefix removed */
	size_t key_len;
	size_t idx;      /* index in the checkpoint */
	const st_tensor *t;
};

/* Statistics of a chunk, then of a whole tensor (see merge_stats). */
struct stats {
	uint64_t mismatched;   /* elements outside tolerance */
	uint64_t nan_equal;    /* NaN on both sides */
	uint64_t nan_mismatch; /* NaN on one side only */
	uint64_t n_num;        /* pairs without NaN: the mean's denominator */
	double max_abs, max_rel;
	int worst_rank;        /* -1 none; 0 bits only; 1 value; 2 NaN vs number */
	double worst_diff;
	uint64_t worst_index;
	bool identical;        /* same bytes so far */
	bool rounded;          /* narrow side == wide side rounded, so far */
};

/* A tensor present on both sides. */
struct pair {
	const struct entry *a, *b;
	bool same_shape, same_dtype;
	bool comparable; /* same dtype, or neither is KIND_RAW */
	bool compared;   /* values compared (comparable, same shape, not --names-only) */
	bool has_stats;  /* abs/rel/mean are meaningful (not KIND_RAW) */
	bool check_rounded;
	bool a_is_wide;  /* for rounded: which side gets rounded */
	double rtol, atol;
	/* Chunking: groups of g_elems elements, ga/gb bytes on each side. */
	uint64_t n_groups, chunk_groups, n_chunks, first_chunk;
	unsigned ga, gb, g_elems;
	struct stats st;
	double sum_abs;
};

struct ctx {
	const struct opts *o;
	st_checkpoint *ca, *cb;
	struct pair **jobs; /* pairs whose values are compared */
	size_t n_jobs;
	uint64_t total_chunks;
	atomic_uint_fast64_t next;
	double *chunk_sums;
	pthread_mutex_t lock;
	atomic_int failed;
	char errmsg[1100];
	cli_progress progress;
};

struct worker {
	struct ctx *c;
	st_checkpoint *a, *b; /* own handles (the first worker borrows ca/cb) */
	unsigned char *ba, *bb, *rb;
	double *da, *db;
	wide_int *ia, *ib;
	pthread_t thread;
};

/* ---- dtypes --------------------------------------------------------------- */

static enum kind dtype_kind(st_dtype d)
{
	return st_dtype_is_wide_float(d) ? KIND_FLOAT
	       : ckpt_is_numeric(d) ? KIND_INT : KIND_RAW;
}

/*
 * torch.testing.assert_close's defaults (torch/testing/_comparison.py,
 * _DTYPE_PRECISIONS); every other dtype is compared exactly there too.
 */
static void default_tol(st_dtype d, double *rtol, double *atol)
{
	switch (d) {
	case ST_DTYPE_F64: *rtol = 1e-7; *atol = 1e-7; break;
	case ST_DTYPE_F32: *rtol = 1.3e-6; *atol = 1e-5; break;
	case ST_DTYPE_F16: *rtol = 1e-3; *atol = 1e-5; break;
	case ST_DTYPE_BF16: *rtol = 1.6e-2; *atol = 1e-5; break;
	default: *rtol = 0; *atol = 0; break;
	}
}

/* Precision rank for rounded_equal: the wider side is rounded. */
static int float_rank(st_dtype d)
{
	return d == ST_DTYPE_F64 ? 3 : d == ST_DTYPE_F32 ? 2 : 1;
}

/* Bytes and elements of the smallest whole group of elements. */
static void dtype_group(st_dtype d, unsigned *bytes, unsigned *elems)
{
	unsigned bits = st_dtype_bits(d);
	if (bits % 8 == 0) {
		*bytes = bits / 8;
		*elems = 1;
	} else if (bits == 4) {
		*bytes = 1;
		*elems = 2;
	} else { /* 6 bits: four elements in three bytes */
		*bytes = 3;
		*elems = 4;
	}
}

/* ---- element kernels ------------------------------------------------------ */

/* NaNs among n elements: without the sign bit (mask), above +Inf (inf). */
#define COUNT_NAN(T, le, mask, inf)                                  \
	for (size_t i = 0; i < n; i++) {                             \
		T v;                                                 \
		memcpy(&v, p + sizeof v * i, sizeof v);              \
		c += (le(v) & (mask)) > (inf);                       \
	}

static uint64_t count_nan(st_dtype d, const unsigned char *p, size_t n)
{
	uint64_t c = 0;
	switch (d) {
	case ST_DTYPE_F64:
		COUNT_NAN(uint64_t, le64toh, 0x7fffffffffffffffULL, 0x7ff0000000000000ULL);
		break;
	case ST_DTYPE_F32: COUNT_NAN(uint32_t, le32toh, 0x7fffffffu, 0x7f800000u); break;
	case ST_DTYPE_F16: COUNT_NAN(uint16_t, le16toh, 0x7fffu, 0x7c00u); break;
	case ST_DTYPE_BF16: COUNT_NAN(uint16_t, le16toh, 0x7fffu, 0x7f80u); break;
	default: break;
	}
	return c;
}

#define DECODE_INT(T, le)                                            \
	for (size_t i = 0; i < n; i++) {                             \
		T v;                                                 \
		memcpy(&v, p + sizeof v * i, sizeof v);              \
		out[i] = (wide_int)(T)le(v);                         \
	}

/*
 * Integers (and BOOL, byte for byte, so that --exact sees every bit) to
 * 128-bit integers, exactly.
 */
static void decode_int(st_dtype d, const unsigned char *p, wide_int *out,
                       size_t n)
{
	switch (d) {
	case ST_DTYPE_BOOL: case ST_DTYPE_U8: DECODE_INT(uint8_t, ); break;
	case ST_DTYPE_I8: DECODE_INT(int8_t, ); break;
	case ST_DTYPE_U16: DECODE_INT(uint16_t, le16toh); break;
	case ST_DTYPE_I16: DECODE_INT(int16_t, le16toh); break;
	case ST_DTYPE_U32: DECODE_INT(uint32_t, le32toh); break;
	case ST_DTYPE_I32: DECODE_INT(int32_t, le32toh); break;
	case ST_DTYPE_U64: DECODE_INT(uint64_t, le64toh); break;
	case ST_DTYPE_I64: DECODE_INT(int64_t, le64toh); break;
	default: break;
	}
}

static void stats_init(struct stats *s)
{
	memset(s, 0, sizeof *s);
	s->worst_rank = -1;
	s->identical = true;
	s->rounded = true;
}

/* Is (rank, diff, index) worse than s's worst? Ties go to the lower index. */
static bool worse(const struct stats *s, int rank, double diff, uint64_t idx)
{
	if (rank != s->worst_rank)
		return rank > s->worst_rank;
	if (diff != s->worst_diff)
		return diff > s->worst_diff;
	return idx < s->worst_index;
}

static void note_worst(struct stats *s, int rank, double diff, uint64_t idx)
{
	if (worse(s, rank, diff, idx)) {
		s->worst_rank = rank;
		s->worst_diff = diff;
		s->worst_index = idx;
	}
}

/* Order-independent part of merging chunk statistics into a tensor's. */
static void merge_stats(struct stats *t, const struct stats *s)
{
	t->mismatched += s->mismatched;
	t->nan_equal += s->nan_equal;
	t->nan_mismatch += s->nan_mismatch;
	t->n_num += s->n_num;
	if (s->max_abs > t->max_abs)
		t->max_abs = s->max_abs;
	if (s->max_rel > t->max_rel)
		t->max_rel = s->max_rel;
	if (s->worst_rank >= 0)
		note_worst(t, s->worst_rank, s->worst_diff, s->worst_index);
	t->identical = t->identical && s->identical;
	t->rounded = t->rounded && s->rounded;
}

/*
 * Compare n widened pairs. A NaN on both sides is equal (counted); a NaN on
 * one side is a mismatch that ranks worst. Equal values (Inf included)
 * differ by 0; an Inf against anything else differs by Inf and is outside
 * every tolerance, as torch.isclose has it. The relative difference skips
 * b == 0, where only atol can decide. With --exact (and the same dtype) an
 * element whose bits differ is a mismatch even when the values are equal
 * (-0 vs +0, NaN payloads); ra/rb/es give the raw bytes for that.
 */
static void compare_float(struct stats *s, double *sum, const double *da,
                          const double *db, size_t n, uint64_t base,
                          double rtol, double atol, bool exact,
                          const unsigned char *ra, const unsigned char *rb,
                          unsigned es)
{
	double acc = 0;
	for (size_t i = 0; i < n; i++) {
		double x = da[i], y = db[i];
		bool bits = ra && memcmp(ra + (size_t)es * i,
		                         rb + (size_t)es * i, es) != 0;
		if (isnan(x) || isnan(y)) {
			if (isnan(x) && isnan(y)) {
				s->nan_equal++;
				if (exact && bits) {
					s->mismatched++;
					note_worst(s, 0, 0, base + i);
				}
			} else {
				s->nan_mismatch++;
				s->mismatched++;
				note_worst(s, 2, 0, base + i);
			}
			continue;
		}
		s->n_num++;
		if (x == y) {
			if (exact && bits) {
				s->mismatched++;
				note_worst(s, 0, 0, base + i);
			}
			continue;
		}
		double d = fabs(x - y);
		acc += d;
		if (d > s->max_abs)
			s->max_abs = d;
		if (y != 0) {
			double r = isinf(y) ? INFINITY : d / fabs(y);
			if (r > s->max_rel)
				s->max_rel = r;
		}
		if (exact || isinf(x) || isinf(y) || !(d <= atol + rtol * fabs(y)))
			s->mismatched++;
		note_worst(s, 1, d, base + i);
	}
	*sum += acc;
}

/* The same for integer pairs, exactly (differences up to 2^65 fit). */
static void compare_int(struct stats *s, double *sum, const wide_int *ia,
                        const wide_int *ib, size_t n, uint64_t base,
                        double rtol, double atol, bool exact)
{
	double acc = 0;
	for (size_t i = 0; i < n; i++) {
		wide_int x = ia[i], y = ib[i];
		s->n_num++;
		if (x == y)
			continue;
		wide_int w = x > y ? x - y : y - x;
		double d = (double)w, fy = fabs((double)y);
		acc += d;
		if (d > s->max_abs)
			s->max_abs = d;
		if (y != 0 && d / fy > s->max_rel)
			s->max_rel = d / fy;
		if (exact || !(d <= atol + rtol * fy))
			s->mismatched++;
		note_worst(s, 1, d, base + i);
	}
	*sum += acc;
}

/* Bytes-only comparison (F8, F6, F4, C64): elements whose bits differ. */
static void compare_raw(struct stats *s, st_dtype d, const unsigned char *a,
                        const unsigned char *b, uint64_t n_groups,
                        uint64_t base)
{
	unsigned gbytes, gelems;
	dtype_group(d, &gbytes, &gelems);
	unsigned bits = st_dtype_bits(d);
	for (uint64_t g = 0; g < n_groups; g++) {
		const unsigned char *pa = a + g * gbytes, *pb = b + g * gbytes;
		if (memcmp(pa, pb, gbytes) == 0)
			continue;
		if (gelems == 1) {
			s->mismatched++;
			note_worst(s, 1, 0, base + g);
			continue;
		}
		/* Element e holds bits [e*bits, (e+1)*bits) of the group, LSB first. */
		uint32_t x = 0;
		for (unsigned k = 0; k < gbytes; k++)
			x |= (uint32_t)(pa[k] ^ pb[k]) << (8 * k);
		for (unsigned e = 0; e < gelems; e++) {
			if ((x >> (e * bits)) & ((1u << bits) - 1)) {
				s->mismatched++;
				note_worst(s, 1, 0, base + g * gelems + e);
			}
		}
	}
}

/* ---- the value pass ------------------------------------------------------- */

static void fail(struct ctx *c, const char *fmt, ...) CLI_PRINTF(2, 3);
static void fail(struct ctx *c, const char *fmt, ...)
{
	pthread_mutex_lock(&c->lock);
	if (!atomic_load(&c->failed)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
		va_end(ap);
		atomic_store(&c->failed, 1);
	}
	pthread_mutex_unlock(&c->lock);
}

static int read_side(struct ctx *c, st_checkpoint *ck, const struct entry *e,
                     uint64_t off, void *buf, size_t n)
{
	st_error err = {0};
	if (st_checkpoint_read(ck, e->idx, off, buf, n, &err) == ST_OK)
		return 0;
	/* libst's messages name the file and the tensor already. */
	fail(c, "%s", err.message[0] ? err.message : st_strerror(err.code));
	return -1;
}

/* Compare chunk k of pair p into s (and the chunk's abs-diff sum). */
static int do_chunk(struct worker *w, struct pair *p, uint64_t k,
                    struct stats *s, double *sum)
{
	struct ctx *c = w->c;
	const struct opts *o = c->o;
	st_dtype ta = p->a->t->dtype, tb = p->b->t->dtype;
	uint64_t g0 = k * p->chunk_groups;
	uint64_t ng = p->n_groups - g0 < p->chunk_groups ? p->n_groups - g0
	                                                 : p->chunk_groups;
	uint64_t e0 = g0 * p->g_elems;
	size_t ne = (size_t)(ng * p->g_elems);
	size_t la = (size_t)(ng * p->ga), lb = (size_t)(ng * p->gb);

	stats_init(s);
	*sum = 0;
	if (read_side(c, w->a, p->a, g0 * p->ga, w->ba, la) != 0 ||
	    read_side(c, w->b, p->b, g0 * p->gb, w->bb, lb) != 0)
		return -1;

	enum kind ka = dtype_kind(ta), kb = dtype_kind(tb);
	if (p->same_dtype) {
		/* Fast path: identical bytes need no arithmetic, only NaNs counted. */
		if (memcmp(w->ba, w->bb, la) == 0) {
			uint64_t nan = ka == KIND_FLOAT ? count_nan(ta, w->ba, ne) : 0;
			s->nan_equal += nan;
			s->n_num += ne - nan;
			return 0;
		}
		s->identical = false;
		if (ka == KIND_RAW) {
			compare_raw(s, ta, w->ba, w->bb, ng, e0);
			return 0;
		}
		unsigned es = p->ga;
		for (size_t off = 0; off < ne; off += SUB) {
			size_t m = ne - off < SUB ? ne - off : SUB;
			const unsigned char *ra = w->ba + off * es, *rb = w->bb + off * es;
			if (memcmp(ra, rb, m * es) == 0) {
				uint64_t nan = ka == KIND_FLOAT ? count_nan(ta, ra, m) : 0;
				s->nan_equal += nan;
				s->n_num += m - nan;
				continue;
			}
			if (ka == KIND_FLOAT) {
				ckpt_widen(ta, ra, w->da, m);
				ckpt_widen(tb, rb, w->db, m);
				compare_float(s, sum, w->da, w->db, m, e0 + off, p->rtol,
				              p->atol, o->exact, ra, rb, es);
			} else {
				decode_int(ta, ra, w->ia, m);
				decode_int(tb, rb, w->ib, m);
				compare_int(s, sum, w->ia, w->ib, m, e0 + off, p->rtol,
				            p->atol, o->exact);
			}
		}
		return 0;
	}

	/* Different dtypes: never identical; values compared after widening. */
	s->identical = false;
	for (size_t off = 0; off < ne; off += SUB) {
		size_t m = ne - off < SUB ? ne - off : SUB;
		const unsigned char *ra = w->ba + off * p->ga, *rb = w->bb + off * p->gb;
		if (ka == KIND_INT && kb == KIND_INT) {
			decode_int(ta, ra, w->ia, m);
			decode_int(tb, rb, w->ib, m);
			compare_int(s, sum, w->ia, w->ib, m, e0 + off, p->rtol, p->atol,
			            o->exact);
			continue;
		}
		ckpt_widen(ta, ra, w->da, m);
		ckpt_widen(tb, rb, w->db, m);
		compare_float(s, sum, w->da, w->db, m, e0 + off, p->rtol, p->atol,
		              o->exact, NULL, NULL, 0);
		if (!p->check_rounded || !s->rounded)
			continue;
		/* Round the wide side to the narrow dtype; compare bits, NaN by NaN-ness. */
		st_dtype tw = p->a_is_wide ? ta : tb, tn = p->a_is_wide ? tb : ta;
		const unsigned char *pw = p->a_is_wide ? ra : rb;
		const unsigned char *pn = p->a_is_wide ? rb : ra;
		const double *dw = p->a_is_wide ? w->da : w->db;
		const double *dn = p->a_is_wide ? w->db : w->da;
		unsigned en = p->a_is_wide ? p->gb : p->ga;
		st_convert(tn, w->rb, tw, pw, m, NULL);
		if (memcmp(w->rb, pn, m * en) == 0)
			continue;
		for (size_t i = 0; i < m; i++) {
			if (memcmp(w->rb + i * en, pn + i * en, en) != 0 &&
			    !(isnan(dw[i]) && isnan(dn[i]))) {
				s->rounded = false;
				break;
			}
		}
	}
	return 0;
}

/* Which job holds global chunk k (jobs are in first_chunk order). */
static size_t job_of_chunk(const struct ctx *c, uint64_t k)
{
	size_t lo = 0, hi = c->n_jobs;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->jobs[mid]->first_chunk <= k)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ctx *c = w->c;
	for (;;) {
		if (atomic_load(&c->failed))
			break;
		uint64_t k = atomic_fetch_add(&c->next, 1);
		if (k >= c->total_chunks)
			break;
		struct pair *p = c->jobs[job_of_chunk(c, k)];
		struct stats s;
		double sum;
		if (do_chunk(w, p, k - p->first_chunk, &s, &sum) != 0)
			break;
		c->chunk_sums[k] = sum;
		uint64_t g0 = (k - p->first_chunk) * p->chunk_groups;
		uint64_t ng = p->n_groups - g0 < p->chunk_groups
		                  ? p->n_groups - g0 : p->chunk_groups;
		pthread_mutex_lock(&c->lock);
		merge_stats(&p->st, &s);
		cli_progress_add(&c->progress, ng * (p->ga + p->gb));
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

/*
 * Give a worker its handles and buffers. The first borrows the main
 * handles; the others open their own and return false when they cannot
 * (too many open files with many shards, say): fewer threads then do the
 * work.
 */
static bool worker_setup(struct worker *w, struct ctx *c, bool borrow,
                         const char *pa, const char *pb)
{
	memset(w, 0, sizeof *w);
	w->c = c;
	if (borrow) {
		w->a = c->ca;
		w->b = c->cb;
	} else {
		if (st_checkpoint_open(&w->a, pa, ST_OPEN_TORCH, NULL) != ST_OK)
			return false;
		if (st_checkpoint_open(&w->b, pb, ST_OPEN_TORCH, NULL) != ST_OK) {
			st_checkpoint_close(w->a);
			return false;
		}
		/* The tensors compared must be the ones the report names. */
		if (!ckpt_same_tensors(c->ca, w->a))
			cli_die(CLI_ERROR, "%s: changed while being read", pa);
		if (!ckpt_same_tensors(c->cb, w->b))
			cli_die(CLI_ERROR, "%s: changed while being read", pb);
	}
	w->ba = cli_xmalloc(CHUNK_BYTES);
	w->bb = cli_xmalloc(CHUNK_BYTES);
	w->rb = cli_xmalloc(SUB * 8);
	w->da = cli_xmalloc(SUB * sizeof(double));
	w->db = cli_xmalloc(SUB * sizeof(double));
	w->ia = cli_xmalloc(SUB * sizeof(wide_int));
	w->ib = cli_xmalloc(SUB * sizeof(wide_int));
	return true;
}

static void worker_free(struct worker *w, bool borrowed)
{
	if (!borrowed) {
		st_checkpoint_close(w->a);
		st_checkpoint_close(w->b);
	}
	free(w->ba);
	free(w->bb);
	free(w->rb);
	free(w->da);
	free(w->db);
	free(w->ia);
	free(w->ib);
}

/* Compare the values of every pair marked compared. Exits 2 on error. */
static void compare_values(const struct opts *o, st_checkpoint *ca,
                           st_checkpoint *cb, const char *path_a,
                           const char *path_b, struct pair *pairs,
                           size_t n_pairs)
{
	struct ctx c;
	memset(&c, 0, sizeof c);
	c.o = o;
	c.ca = ca;
	c.cb = cb;
	c.jobs = cli_xmalloc(n_pairs * sizeof *c.jobs);
	uint64_t total_bytes = 0;
	for (size_t i = 0; i < n_pairs; i++) {
		struct pair *p = &pairs[i];
		if (!p->compared)
			continue;
		unsigned ea, eb;
		dtype_group(p->a->t->dtype, &p->ga, &ea);
		dtype_group(p->b->t->dtype, &p->gb, &eb);
		p->g_elems = ea; /* equal: same dtype, or both byte-aligned */
		p->n_groups = p->a->t->n_elements / ea;
		unsigned wide = p->ga > p->gb ? p->ga : p->gb;
		p->chunk_groups = CHUNK_BYTES / wide;
		p->n_chunks = (p->n_groups + p->chunk_groups - 1) / p->chunk_groups;
		p->first_chunk = c.total_chunks;
		c.total_chunks += p->n_chunks;
		total_bytes += p->a->t->n_bytes + p->b->t->n_bytes;
		stats_init(&p->st);
		if (p->n_chunks)
			c.jobs[c.n_jobs++] = p;
	}
	c.chunk_sums = cli_xmalloc(c.total_chunks * sizeof(double));
	pthread_mutex_init(&c.lock, NULL);
	atomic_init(&c.next, 0);
	atomic_init(&c.failed, 0);
	if (!o->quiet)
		cli_progress_start(&c.progress, "comparing", total_bytes);

	int nt = o->threads > 0 ? o->threads : cli_default_threads(MAX_THREADS);
	if ((uint64_t)nt > c.total_chunks)
		nt = c.total_chunks ? (int)c.total_chunks : 1;
	struct worker workers[MAX_THREADS];
	int started = 0;
	for (int i = 0; i < nt; i++) {
		if (!worker_setup(&workers[i], &c, i == 0, path_a, path_b)) {
			nt = i;
			break;
		}
	}
	for (int i = 1; i < nt; i++) {
		if (pthread_create(&workers[i].thread, NULL, worker_main,
		                   &workers[i]) != 0)
			break;
		started++;
	}
	worker_main(&workers[0]);
	for (int i = 1; i <= started; i++)
		pthread_join(workers[i].thread, NULL);
	for (int i = 0; i < nt; i++)
		worker_free(&workers[i], i == 0);
	cli_progress_done(&c.progress);
	if (atomic_load(&c.failed))
		cli_die(CLI_ERROR, "%s", c.errmsg);

	/* Sum each tensor's chunk sums in chunk order: deterministic means. */
	for (size_t j = 0; j < c.n_jobs; j++) {
		struct pair *p = c.jobs[j];
		double s = 0;
		for (uint64_t k = 0; k < p->n_chunks; k++)
			s += c.chunk_sums[p->first_chunk + k];
		p->sum_abs = s;
	}
	pthread_mutex_destroy(&c.lock);
	free(c.chunk_sums);
	free(c.jobs);
}

/* ---- structure ------------------------------------------------------------ */

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
	int r = memcmp(a, b, la < lb ? la : lb);
	if (r)
		return r;
	return la < lb ? -1 : la > lb;
}

static int cmp_entry(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;
	return cmp_bytes(a->key, a->key_len, b->key, b->key_len);
}

static bool selected(const struct opts *o, const char *key)
{
	if (!o->n_globs)
		return true;
	for (size_t i = 0; i < o->n_globs; i++)
		if (fnmatch(o->globs[i], key, 0) == 0)
			return true;
	return false;
}

/* The tensors of one side, keyed, filtered and sorted. Exits 2 on clashes. */
static struct entry *side_entries(const struct opts *o, st_checkpoint *c,
                                  const char *path, size_t *n_out)
{
	size_t n = st_checkpoint_n_tensors(c), m = 0;
	struct entry *e = cli_xmalloc(n * sizeof *e);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		const char *key = t->name;
		size_t len = t->name_len;
		for (size_t j = 0; j < o->n_prefixes; j++) {
			size_t pl = strlen(o->prefixes[j]);
			if (len >= pl && memcmp(key, o->prefixes[j], pl) == 0) {
				key += pl;
				len -= pl;
				break;
			}
		}
		if (!selected(o, key))
			continue;
		e[m].key = key;
		e[m].key_len = len;
		e[m].idx = i;
		e[m].t = t;
		m++;
	}
	qsort(e, m, sizeof *e, cmp_entry);
	for (size_t i = 1; i < m; i++) {
		if (cmp_entry(&e[i - 1], &e[i]) == 0)
			cli_die(CLI_ERROR,
			        "%s: tensors '%.*s' and '%.*s' have the same name "
			        "after --strip-prefix ('%.*s')",
			        path, (int)e[i - 1].t->name_len, e[i - 1].t->name,
			        (int)e[i].t->name_len, e[i].t->name,
			        (int)e[i].key_len, e[i].key);
	}
	*n_out = m;
	return e;
}

static bool same_shape(const st_tensor *a, const st_tensor *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (unsigned d = 0; d < a->ndim; d++)
		if (a->shape[d] != b->shape[d])
			return false;
	return true;
}

/* __metadata__ of a checkpoint: every file's entries, the first one wins. */
struct meta_list {
	const st_meta **m;
	size_t n;
};

static int cmp_meta(const void *x, const void *y)
{
	const st_meta *a = *(const st_meta *const *)x;
	const st_meta *b = *(const st_meta *const *)y;
	return cmp_bytes(a->key, a->key_len, b->key, b->key_len);
}

/* An entry and its position, so qsort can keep the first of equal keys. */
struct meta_pos {
	const st_meta *m;
	size_t pos;
};

static int cmp_meta_pos(const void *x, const void *y)
{
	const struct meta_pos *a = x, *b = y;
	int r = cmp_meta(&a->m, &b->m);
	return r ? r : (a->pos > b->pos) - (a->pos < b->pos);
}

static void collect_meta(st_checkpoint *c, struct meta_list *l)
{
	size_t total = 0, n = 0;
	for (size_t f = 0; f < st_checkpoint_n_files(c); f++)
		total += st_file_n_meta(st_checkpoint_file(c, f));
	struct meta_pos *all = cli_xmalloc(total * sizeof *all);
	for (size_t f = 0; f < st_checkpoint_n_files(c); f++) {
		st_file *file = st_checkpoint_file(c, f);
		for (size_t i = 0; i < st_file_n_meta(file); i++) {
			all[n].m = st_file_meta(file, i);
			all[n].pos = n;
			n++;
		}
	}
	qsort(all, n, sizeof *all, cmp_meta_pos);
	l->m = cli_xmalloc(n * sizeof *l->m);
	l->n = 0;
	for (size_t i = 0; i < n; i++)
		if (l->n == 0 || cmp_meta(&l->m[l->n - 1], &all[i].m) != 0)
			l->m[l->n++] = all[i].m;
	free(all);
}

/* One differing metadata key; a or b is NULL when absent on that side. */
struct meta_diff {
	const st_meta *a, *b;
};

/* ---- output --------------------------------------------------------------- */

struct result {
	const struct entry **only_a, **only_b;
	size_t n_only_a, n_only_b;
	struct pair *pairs;
	size_t n_pairs;
	struct meta_diff *meta;
	size_t n_meta;
	bool names_only, verbose;
	bool equal;
	size_t n_identical, n_within, n_differ, n_shape, n_dtype;
};

/* Metadata keys on one side only, or with different values, into r. */
static void diff_meta(st_checkpoint *ca, st_checkpoint *cb, struct result *r)
{
	struct meta_list ma, mb;
	collect_meta(ca, &ma);
	collect_meta(cb, &mb);
	r->meta = cli_xmalloc((ma.n + mb.n) * sizeof *r->meta);
	size_t i = 0, j = 0;
	while (i < ma.n || j < mb.n) {
		int c = i == ma.n ? 1 : j == mb.n ? -1 : cmp_meta(&ma.m[i], &mb.m[j]);
		if (c < 0) {
			r->meta[r->n_meta++] = (struct meta_diff){ma.m[i++], NULL};
		} else if (c > 0) {
			r->meta[r->n_meta++] = (struct meta_diff){NULL, mb.m[j++]};
		} else {
			if (cmp_bytes(ma.m[i]->value, ma.m[i]->value_len, mb.m[j]->value,
			              mb.m[j]->value_len) != 0)
				r->meta[r->n_meta++] = (struct meta_diff){ma.m[i], mb.m[j]};
			i++;
			j++;
		}
	}
	free(ma.m);
	free(mb.m);
}

static void json_name(const char *s, size_t len)
{
	cli_json_string(stdout, s, len);
}

static void json_shape(const st_tensor *t)
{
	cli_print_dims(stdout, t->shape, t->ndim);
}

/* A metadata value, or null when the key is absent on that side. */
static void json_meta_value(const st_meta *m)
{
	if (m)
		json_name(m->value, m->value_len);
	else
		fputs("null", stdout);
}

/* A statistic, or null for a dtype without them. */
static void json_stat(const char *key, bool have, double v)
{
	printf(", \"%s\": ", key);
	if (have)
		cli_json_double(stdout, v);
	else
		fputs("null", stdout);
}

static double mean_abs(const struct pair *p)
{
	return p->st.n_num ? p->sum_abs / (double)p->st.n_num : 0;
}

static bool pair_differs(const struct pair *p, bool exact)
{
	if (!p->same_shape || !p->compared)
		return true;
	if (exact && !p->same_dtype)
		return true;
	return p->st.mismatched != 0;
}

static void print_json(const struct result *r)
{
	printf("{\"equal\": %s,\n \"only_in_a\": [", r->equal ? "true" : "false");
	for (size_t i = 0; i < r->n_only_a; i++) {
		fputs(i ? ", " : "", stdout);
		json_name(r->only_a[i]->t->name, r->only_a[i]->t->name_len);
	}
	fputs("],\n \"only_in_b\": [", stdout);
	for (size_t i = 0; i < r->n_only_b; i++) {
		fputs(i ? ", " : "", stdout);
		json_name(r->only_b[i]->t->name, r->only_b[i]->t->name_len);
	}
	fputs("],\n \"changed\": [", stdout);
	bool first = true;
	for (size_t i = 0; i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		if (p->same_shape && p->same_dtype)
			continue;
		fputs(first ? "\n  " : ",\n  ", stdout);
		first = false;
		fputs("{\"name\": ", stdout);
		json_name(p->a->key, p->a->key_len);
		printf(", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\", \"shape_a\": ",
		       st_dtype_name(p->a->t->dtype), st_dtype_name(p->b->t->dtype));
		json_shape(p->a->t);
		fputs(", \"shape_b\": ", stdout);
		json_shape(p->b->t);
		printf(", \"values_compared\": %s}", p->compared ? "true" : "false");
	}
	fputs(first ? "],\n \"metadata\": [" : "\n ],\n \"metadata\": [", stdout);
	for (size_t i = 0; i < r->n_meta; i++) {
		const struct meta_diff *m = &r->meta[i];
		const st_meta *k = m->a ? m->a : m->b;
		fputs(i ? ",\n  " : "\n  ", stdout);
		fputs("{\"key\": ", stdout);
		json_name(k->key, k->key_len);
		fputs(", \"a\": ", stdout);
		json_meta_value(m->a);
		fputs(", \"b\": ", stdout);
		json_meta_value(m->b);
		putchar('}');
	}
	fputs(r->n_meta ? "\n ],\n \"tensors\": [" : "],\n \"tensors\": [", stdout);
	first = true;
	for (size_t i = 0; i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		if (!p->compared)
			continue;
		fputs(first ? "\n  " : ",\n  ", stdout);
		first = false;
		fputs("{\"name\": ", stdout);
		json_name(p->a->key, p->a->key_len);
		printf(", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\", \"elements\": %llu"
		       ", \"identical\": %s",
		       st_dtype_name(p->a->t->dtype), st_dtype_name(p->b->t->dtype),
		       (unsigned long long)p->a->t->n_elements,
		       p->st.identical && p->same_dtype ? "true" : "false");
		json_stat("max_abs_diff", p->has_stats, p->st.max_abs);
		json_stat("max_rel_diff", p->has_stats, p->st.max_rel);
		json_stat("mean_abs_diff", p->has_stats, mean_abs(p));
		printf(", \"mismatched\": %llu, \"worst_index\": ",
		       (unsigned long long)p->st.mismatched);
		if (p->st.worst_rank >= 0)
			printf("%llu", (unsigned long long)p->st.worst_index);
		else
			fputs("null", stdout);
		fputs(", \"rounded_equal\": ", stdout);
		fputs(!p->check_rounded ? "null" : p->st.rounded ? "true" : "false",
		      stdout);
		printf(", \"nan_equal\": %llu, \"rtol\": ",
		       (unsigned long long)p->st.nan_equal);
		cli_json_double(stdout, p->rtol);
		fputs(", \"atol\": ", stdout);
		cli_json_double(stdout, p->atol);
		putchar('}');
	}
	puts(first ? "]}" : "\n ]}");
}

static void print_name(const char *s, size_t len)
{
	cli_print_name(stdout, s, len);
}

/* A metadata value for a human: quoted, or (absent). */
static void print_meta_value(const st_meta *m)
{
	if (!m) {
		fputs("(absent)", stdout);
		return;
	}
	putchar('"');
	print_name(m->value, m->value_len);
	putchar('"');
}

/* %.4g, with "inf" spelled out. */
static void print_num(double v)
{
	if (isinf(v))
		fputs("inf", stdout);
	else
		printf("%.4g", v);
}

/* The flat C-order index as coordinates: "[3, 17]". */
static void print_coords(const st_tensor *t, uint64_t flat)
{
	uint64_t c[ST_MAX_DIMS];
	for (unsigned d = t->ndim; d-- > 0;) {
		c[d] = t->shape[d] ? flat % t->shape[d] : 0;
		flat = t->shape[d] ? flat / t->shape[d] : 0;
	}
	cli_print_dims(stdout, c, t->ndim);
}

static void print_pair_line(const struct pair *p)
{
	const struct stats *s = &p->st;
	bool ident = s->identical && p->same_dtype;
	const char *status = ident ? "identical"
	                     : s->mismatched ? "differs" : "within tolerance";
	printf("%s: ", status);
	print_name(p->a->key, p->a->key_len);
	if (p->same_dtype)
		printf(" (%s", st_dtype_name(p->a->t->dtype));
	else
		printf(" (%s vs %s", st_dtype_name(p->a->t->dtype),
		       st_dtype_name(p->b->t->dtype));
	printf(", %llu element%s)", (unsigned long long)p->a->t->n_elements,
	       p->a->t->n_elements == 1 ? "" : "s");
	if (ident) {
		if (s->nan_equal)
			printf(": NaN in both: %llu", (unsigned long long)s->nan_equal);
		putchar('\n');
		return;
	}
	uint64_t n = p->a->t->n_elements;
	printf(": %llu mismatched (%.3g%%)", (unsigned long long)s->mismatched,
	       n ? 100.0 * (double)s->mismatched / (double)n : 0.0);
	if (p->has_stats) {
		fputs(", max abs ", stdout);
		print_num(s->max_abs);
		fputs(", max rel ", stdout);
		print_num(s->max_rel);
		fputs(", mean abs ", stdout);
		print_num(mean_abs(p));
	}
	if (s->worst_rank >= 0) {
		fputs(p->has_stats ? ", worst at " : ", first at ", stdout);
		print_coords(p->a->t, s->worst_index);
	}
	if (s->nan_mismatch)
		printf(", NaN on one side: %llu", (unsigned long long)s->nan_mismatch);
	if (s->nan_equal)
		printf(", NaN in both: %llu", (unsigned long long)s->nan_equal);
	if (p->check_rounded) {
		st_dtype tn = p->a_is_wide ? p->b->t->dtype : p->a->t->dtype;
		printf(", %s is %sexactly %s rounded to %s", p->a_is_wide ? "B" : "A",
		       s->rounded ? "" : "not ", p->a_is_wide ? "A" : "B",
		       st_dtype_name(tn));
	}
	putchar('\n');
}

static void print_human(const struct result *r)
{
	for (size_t i = 0; i < r->n_only_a; i++) {
		fputs("only in A: ", stdout);
		print_name(r->only_a[i]->t->name, r->only_a[i]->t->name_len);
		putchar('\n');
	}
	for (size_t i = 0; i < r->n_only_b; i++) {
		fputs("only in B: ", stdout);
		print_name(r->only_b[i]->t->name, r->only_b[i]->t->name_len);
		putchar('\n');
	}
	char sa[512], sb[512];
	for (size_t i = 0; i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		if (!p->same_shape) {
			cli_fmt_shape(sa, sizeof sa, p->a->t);
			cli_fmt_shape(sb, sizeof sb, p->b->t);
			fputs("shape changed: ", stdout);
			print_name(p->a->key, p->a->key_len);
			printf(": %s %s -> %s %s\n", st_dtype_name(p->a->t->dtype), sa,
			       st_dtype_name(p->b->t->dtype), sb);
		} else if (!p->same_dtype) {
			fputs("dtype changed: ", stdout);
			print_name(p->a->key, p->a->key_len);
			printf(": %s -> %s%s\n", st_dtype_name(p->a->t->dtype),
			       st_dtype_name(p->b->t->dtype),
			       p->comparable ? "" : " (values not comparable)");
		}
	}
	for (size_t i = 0; i < r->n_meta; i++) {
		const struct meta_diff *m = &r->meta[i];
		const st_meta *k = m->a ? m->a : m->b;
		fputs("metadata ", stdout);
		print_name(k->key, k->key_len);
		fputs(": ", stdout);
		print_meta_value(m->a);
		fputs(" -> ", stdout);
		print_meta_value(m->b);
		putchar('\n');
	}
	for (size_t i = 0; i < r->n_pairs; i++) {
		const struct pair *p = &r->pairs[i];
		if (!p->compared)
			continue;
		if (r->verbose || !(p->st.identical && p->same_dtype))
			print_pair_line(p);
	}
	size_t n = r->n_identical + r->n_within + r->n_differ;
	if (r->names_only)
		printf("%zu tensor%s in both", r->n_pairs, r->n_pairs == 1 ? "" : "s");
	else
		printf("%zu tensor%s compared: %zu identical, %zu within tolerance, "
		       "%zu differ",
		       n, n == 1 ? "" : "s", r->n_identical, r->n_within, r->n_differ);
	printf("; %zu only in A, %zu only in B, %zu shape changed, %zu dtype "
	       "changed",
	       r->n_only_a, r->n_only_b, r->n_shape, r->n_dtype);
	if (r->n_meta)
		printf(", %zu metadata differ", r->n_meta);
	printf(": %s\n", r->equal ? (r->names_only ? "same tensors" : "equal")
	                          : "different");
}

/* ---- main ----------------------------------------------------------------- */

static void usage(void)
{
	printf(
"Usage: %s [OPTION]... A B\n"
"Compare two checkpoints: structure and values, across layouts and dtypes.\n"
"A and B are each a .safetensors file, a shard index (*.safetensors.index.json)\n"
"or a snapshot directory.\n"
"\n"
"Reports tensors only in A or only in B, shape and dtype changes, metadata\n"
"differences and, for each tensor in both with the same shape: whether it is\n"
"bit-identical, max abs diff, max rel diff (over b != 0), mean abs diff, the\n"
"number of elements outside |a - b| <= atol + rtol * |b|, and the worst element.\n"
"NaN in the same place on both sides is equal; NaN against a number differs.\n"
"\n"
"Options:\n"
"      --rtol X          relative tolerance (default: torch.testing's for the\n"
"                        less precise dtype: F64 1e-7, F32 1.3e-6, F16 1e-3,\n"
"                        BF16 1.6e-2; integers and others 0)\n"
"      --atol X          absolute tolerance (default: F64 1e-7, F16/BF16/F32\n"
"                        1e-5; integers and others 0)\n"
"      --exact           bit equality: same dtype and the same bytes\n"
"      --names-only      compare names, shapes and dtypes only (headers)\n"
"  -t, --tensor GLOB     only tensors whose name matches GLOB (repeatable)\n"
"  -p, --strip-prefix P  remove prefix P from names before matching\n"
"                        (repeatable; e.g. 'transformer.')\n"
"  -j, --threads N       threads for the value pass (default: CPUs, max %d)\n"
"  -v, --verbose         list identical tensors too\n"
"  -q, -s, --quiet       print nothing; the exit status says it all\n"
"      --json            one JSON document on stdout\n"
"  -h, --help            show this help and exit\n"
"  -V, --version         show the version and exit\n"
"\n"
"Exit status: 0 equal within tolerance, 1 different, 2 trouble.\n",
	       cli_progname(), MAX_THREADS);
}

enum { OPT_RTOL = 256, OPT_ATOL, OPT_EXACT, OPT_NAMES, OPT_JSON };

static void parse_args(int argc, char **argv, struct opts *o,
                       const char **pa, const char **pb)
{
	static const struct option longopts[] = {
		{"rtol", required_argument, NULL, OPT_RTOL},
		{"atol", required_argument, NULL, OPT_ATOL},
		{"exact", no_argument, NULL, OPT_EXACT},
		{"names-only", no_argument, NULL, OPT_NAMES},
		{"tensor", required_argument, NULL, 't'},
		{"strip-prefix", required_argument, NULL, 'p'},
		{"threads", required_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"silent", no_argument, NULL, 's'},
		{"json", no_argument, NULL, OPT_JSON},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof *o);
	o->globs = cli_xmalloc((size_t)argc * sizeof *o->globs);
	o->prefixes = cli_xmalloc((size_t)argc * sizeof *o->prefixes);
	int ch;
	while ((ch = cli_getopt(argc, argv, "t:p:j:vqshV", longopts)) != -1) {
		switch (ch) {
		case OPT_RTOL:
			o->rtol = cli_opt_nonneg("--rtol", optarg);
			o->have_rtol = true;
			break;
		case OPT_ATOL:
			o->atol = cli_opt_nonneg("--atol", optarg);
			o->have_atol = true;
			break;
		case OPT_EXACT: o->exact = true; break;
		case OPT_NAMES: o->names_only = true; break;
		case 't': o->globs[o->n_globs++] = optarg; break;
		case 'p': o->prefixes[o->n_prefixes++] = optarg; break;
		case 'j': o->threads = cli_opt_threads(optarg, MAX_THREADS); break;
		case 'v': o->verbose = true; break;
		case 'q': case 's': o->quiet = true; break;
		case OPT_JSON: o->json = true; break;
		case 'h': usage(); exit(cli_exit(CLI_OK));
		case 'V': cli_version();
		}
	}
	if (o->exact && (o->have_rtol || o->have_atol))
		cli_usage_error("--exact cannot be combined with --rtol or --atol");
	if (argc - optind != 2)
		cli_usage_error(argc - optind < 2 ? "missing operand (need A and B)"
		                                  : "extra operand '%s'",
		                argv[optind + 2 < argc ? optind + 2 : optind]);
	*pa = argv[optind];
	*pb = argv[optind + 1];
}

/* Set what the value pass does with a common tensor. */
static void plan_pair(const struct opts *o, struct pair *p)
{
	st_dtype ta = p->a->t->dtype, tb = p->b->t->dtype;
	enum kind ka = dtype_kind(ta), kb = dtype_kind(tb);
	p->same_shape = same_shape(p->a->t, p->b->t);
	p->same_dtype = ta == tb;
	p->comparable = p->same_dtype || (ka != KIND_RAW && kb != KIND_RAW);
	p->compared = !o->names_only && p->same_shape && p->comparable;
	p->has_stats = ka != KIND_RAW;
	p->check_rounded = !p->same_dtype && ka == KIND_FLOAT && kb == KIND_FLOAT;
	/* F16 vs BF16 ranks equal: then B is checked as A rounded to B's dtype. */
	p->a_is_wide = float_rank(ta) >= float_rank(tb);
	double ra, aa, rb, ab;
	default_tol(ta, &ra, &aa);
	default_tol(tb, &rb, &ab);
	p->rtol = o->have_rtol ? o->rtol : o->exact ? 0 : ra > rb ? ra : rb;
	p->atol = o->have_atol ? o->atol : o->exact ? 0 : aa > ab ? aa : ab;
}

int main(int argc, char **argv)
{
	struct opts o;
	const char *path_a, *path_b;
	cli_init("stdiff");
	parse_args(argc, argv, &o, &path_a, &path_b);

	st_checkpoint *ca, *cb;
	if (ckpt_open(&ca, path_a) != CLI_OK || ckpt_open(&cb, path_b) != CLI_OK)
		exit(CLI_ERROR);

	size_t na, nb;
	struct entry *ea = side_entries(&o, ca, path_a, &na);
	struct entry *eb = side_entries(&o, cb, path_b, &nb);
	/* A --tensor that selects nothing is more likely a typo than a pass. */
	if (o.n_globs && na == 0 && nb == 0)
		cli_die(CLI_ERROR, "no tensor in %s or %s matches --tensor '%s'%s",
		        path_a, path_b, o.globs[0], o.n_globs > 1 ? " (or the others)" : "");

	struct result r;
	memset(&r, 0, sizeof r);
	r.names_only = o.names_only;
	r.verbose = o.verbose;
	r.only_a = cli_xmalloc(na * sizeof *r.only_a);
	r.only_b = cli_xmalloc(nb * sizeof *r.only_b);
	r.pairs = cli_xmalloc((na < nb ? na : nb) * sizeof *r.pairs);
	size_t i = 0, j = 0;
	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : cmp_entry(&ea[i], &eb[j]);
		if (c < 0) {
			r.only_a[r.n_only_a++] = &ea[i++];
		} else if (c > 0) {
			r.only_b[r.n_only_b++] = &eb[j++];
		} else {
			struct pair *p = &r.pairs[r.n_pairs++];
			memset(p, 0, sizeof *p);
			p->a = &ea[i++];
			p->b = &eb[j++];
			plan_pair(&o, p);
		}
	}

	diff_meta(ca, cb, &r);

	if (!o.names_only)
		compare_values(&o, ca, cb, path_a, path_b, r.pairs, r.n_pairs);

	r.equal = r.n_only_a == 0 && r.n_only_b == 0;
	for (i = 0; i < r.n_pairs; i++) {
		const struct pair *p = &r.pairs[i];
		if (!p->same_shape)
			r.n_shape++;
		else if (!p->same_dtype)
			r.n_dtype++;
		if (o.names_only) {
			if (!p->same_shape || !p->comparable ||
			    (o.exact && !p->same_dtype))
				r.equal = false;
			continue;
		}
		if (pair_differs(p, o.exact))
			r.equal = false;
		if (!p->compared)
			continue;
		if (p->st.identical && p->same_dtype)
			r.n_identical++;
		else if (pair_differs(p, o.exact))
			r.n_differ++;
		else
			r.n_within++;
	}

	if (o.json && !o.quiet)
		print_json(&r);
	else if (!o.quiet)
		print_human(&r);

	free(r.meta);
	free(r.pairs);
	free(r.only_a);
	free(r.only_b);
	free(ea);
	free(eb);
	free(o.globs);
	free(o.prefixes);
	st_checkpoint_close(ca);
	st_checkpoint_close(cb);
	return cli_exit(r.equal ? CLI_OK : CLI_NO);
}
