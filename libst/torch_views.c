/*
 * torch_views.c - how a PyTorch tensor's contiguous bytes are made from
 * its storage: gathering views (in tiles for a transpose), a compressed
 * storage's inflated copy, and the CRC-32 of storages read in place,
 * checked as reads cover them. It does not parse anything (torch.c and
 * torch_pickle.c build the views it reads).
 *
 * Tensors. Each tensor's size, stride and offset must stay inside its
 * storage. A contiguous tensor in place and in the machine's byte order
 * is "plain": file.c reads its bytes as [begin, end) of the file. Any
 * other (a view: transposed, sliced, expanded with stride 0; a storage
 * that is compressed, or big-endian as a byteorder record says) is
 * gathered into contiguous form by st__torch_read: in cache-sized tiles
 * when its last dimension is strided and the one before it closer (a
 * transpose, gather_tiles), else element by element or in runs along its
 * last dimension, so memory stays bounded by what the caller reads (a
 * compressed storage: by that storage). Tensors that repeat another
 * exactly (same storage, offset, shape, strides) are kept, and
 * st__torch_alias_of names the first of them, for converters.
 */
#include "torch_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void st__torch_free(struct st__torch *t)
{
	if (!t)
		return;
	st__arc_free(&t->arc);
	for (size_t i = 0; t->v && i < t->n_views; i++) {
		free(t->v[i].copy);
		free(t->v[i].crc.p);
	}
	free(t->v);
	free(t->strides);
	free(t->cache);
	free(t->crc_state);
	st__buf_free(&t->key);
	st__buf_free(&t->top);
	st__buf_free(&t->skipped);
	free(t->key_list);
	free(t->skipped_list);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int st__torch_kind(const struct st__torch *t) { return t->kind; }

int st__torch_plain(const struct st__torch *t, size_t i)
{
	return t->v[i].plain;
}

long st__torch_alias_of(const struct st__torch *t, size_t i)
{
	return t->v[i].alias_of;
}

const st_torch_info *st__torch_info(const struct st__torch *t)
{
	return &t->info;
}

/*
 * Copy bytes [off, off + n) of the tensor's contiguous form from its
 * storage's bytes sb: the element index walks the shape in row-major
 * order while pos follows the strides.
 */
static void gather_walk(const struct tview *v, const unsigned char *sb,
                        uint64_t off, unsigned char *out, size_t n)
{
	static const uint64_t one = 1;
	unsigned nd = v->ndim ? v->ndim : 1;
	const uint64_t *size = v->ndim ? v->size : &one;
	const uint64_t *stride = v->ndim ? v->stride : &one;
	uint64_t idx[ST_MAX_DIMS];
	unsigned es = v->esize;
	uint64_t e = off / es;
	size_t skip = (size_t)(off % es);
	uint64_t pos = v->first;
	for (unsigned d = nd; d-- > 0;) {
		idx[d] = e % size[d];
		e /= size[d];
		pos += idx[d] * stride[d];
	}
	unsigned last = nd - 1;
	while (n > 0) {
		uint64_t run = 1;
		size_t k;
		if (!v->swap && stride[last] == 1 && skip == 0) {
			/* A run along the last dimension is contiguous. */
			run = size[last] - idx[last];
			uint64_t bytes = run * es;
			k = bytes < n ? (size_t)bytes : n;
			memcpy(out, sb + pos * es, k);
		} else if (!v->swap && skip == 0 && n >= es) {
			/* Whole elements along the last dimension, strided. */
			uint64_t left = size[last] - idx[last];
			run = left < n / es ? left : n / es;
			const unsigned char *src = sb + pos * es;
			size_t step = (size_t)(stride[last] * es);
			switch (es) {
#define STRIDED(W)                                                       \
			case W:                                                      \
				for (uint64_t j = 0; j < run; j++, src += step)          \
					memcpy(out + j * W, src, W);                         \
				break;
			STRIDED(1)
			STRIDED(2)
			STRIDED(4)
			STRIDED(8)
#undef STRIDED
			default:
				for (uint64_t j = 0; j < run; j++, src += step)
					memcpy(out + j * es, src, es);
			}
			k = (size_t)(run * es);
		} else {
			unsigned char el[16];
			const unsigned char *src = sb + pos * es;
			if (v->swap) {
				for (unsigned b = 0; b < es; b++)
					el[b] = src[es - 1 - b];
				src = el;
			}
			k = es - skip < n ? es - skip : n;
			memcpy(out, src + skip, k);
			skip = 0;
		}
		out += k;
		n -= k;
		if (n == 0)
			break;
		/* Step the index by run elements, carrying into outer dims. */
		idx[last] += run;
		pos += run * stride[last];
		for (unsigned d = last; d > 0 && idx[d] == size[d]; d--) {
			pos -= size[d] * stride[d];
			idx[d] = 0;
			idx[d - 1]++;
			pos += stride[d - 1];
		}
	}
}

/*
 * A view whose last dimension is strided and whose next-to-last one is
 * closer (a transpose: strides (1, R) where the rows were (R, 1); the
 * last two dimensions of a permute) reads one element per cache line,
 * and mostly per page, along each output row. It is gathered in tiles
 * instead: TILE_BYTES / element size output rows at a time (four cache
 * lines of storage along the next-to-last dimension) by TILE_COLS
 * columns, so that every line of storage a tile touches is used for all
 * its rows while it is in the cache, and each page for as many rows as a
 * read asks for, up to that: a page visited again is a TLB miss, dear
 * under virtualisation (64 rows of F32 ran 1.4 times as fast as 16).
 * Bytes are copied as they are, so the output is the same as
 * gather_walk's, and as tensor.contiguous().
 */
#define TILE_BYTES 256
#define TILE_COLS 64

static int tiled(const struct tview *v)
{
	if (v->swap || v->ndim < 2)
		return 0;
	unsigned es = v->esize, last = v->ndim - 1;
	return (es == 1 || es == 2 || es == 4 || es == 8) &&
	       v->stride[last] > 1 && v->stride[last - 1] < v->stride[last] &&
	       v->size[last] > 1 && v->size[last - 1] > 1;
}

/* Element pos in storage of the first element of output row row (rows
 * count over all dimensions but the last). */
static uint64_t row_pos(const struct tview *v, uint64_t row)
{
	uint64_t pos = v->first;
	for (unsigned d = v->ndim - 1; d-- > 0;) {
		pos += row % v->size[d] * v->stride[d];
		row /= v->size[d];
	}
	return pos;
}

/* Elements [e0, e1) of the contiguous form, in tiles. */
static void gather_tiles(const struct tview *v, const unsigned char *sb,
                         uint64_t e0, uint64_t e1, unsigned char *out)
{
	unsigned es = v->esize, last = v->ndim - 1;
	uint64_t cols = v->size[last], rows_a = v->size[last - 1];
	uint64_t s_col = v->stride[last], s_row = v->stride[last - 1];
	uint64_t r0 = e0 / cols, c0 = e0 % cols;
	uint64_t r_end = (e1 - 1) / cols, c_end = e1 - r_end * cols;
	unsigned tile_rows = TILE_BYTES / es;
	for (uint64_t r = r0; r <= r_end;) {
		/* Rows of one tile share their outer index: pos steps by s_row. */
		uint64_t a = r % rows_a, nr = rows_a - a;
		if (nr > tile_rows)
			nr = tile_rows;
		if (nr > r_end - r + 1)
			nr = r_end - r + 1;
		uint64_t pos = row_pos(v, r);
		for (uint64_t b0 = 0; b0 < cols; b0 += TILE_COLS) {
			uint64_t b1 = cols - b0 < TILE_COLS ? cols : b0 + TILE_COLS;
			for (uint64_t i = 0; i < nr; i++) {
				uint64_t row = r + i;
				uint64_t lo = row == r0 && c0 > b0 ? c0 : b0;
				uint64_t hi = row == r_end && c_end < b1 ? c_end : b1;
				if (lo >= hi)
					continue;
				const unsigned char *src = sb + (pos + i * s_row + lo * s_col) * es;
				unsigned char *dst = out + (row * cols + lo - e0) * es;
				size_t step = (size_t)(s_col * es), k = (size_t)(hi - lo);
				switch (es) {
#define TILE_ROW(W, T)                                                   \
				case W:                                                  \
					for (size_t j = 0; j < k; j++, src += step) {        \
						T x;                                             \
						memcpy(&x, src, W);                              \
						memcpy(dst + j * W, &x, W);                      \
					}                                                    \
					break;
				TILE_ROW(1, uint8_t)
				TILE_ROW(2, uint16_t)
				TILE_ROW(4, uint32_t)
				TILE_ROW(8, uint64_t)
#undef TILE_ROW
				}
			}
		}
		r += nr;
	}
}

static void gather(const struct tview *v, const unsigned char *sb,
                   uint64_t off, unsigned char *out, size_t n)
{
	unsigned es = v->esize;
	uint64_t e0 = (off + es - 1) / es, e1 = (off + n) / es;
	if (!tiled(v) || e1 <= e0) {
		gather_walk(v, sb, off, out, n);
		return;
	}
	/* Parts of elements at either end, then whole ones in tiles. */
	size_t head = (size_t)(e0 * es - off), body = (size_t)((e1 - e0) * es);
	if (head)
		gather_walk(v, sb, off, out, head);
	gather_tiles(v, sb, e0, e1, out + head);
	if (n > head + body)
		gather_walk(v, sb, e1 * es, out + head + body, n - head - body);
}

/*
 * A view reads its storage through the file's mapping, whose pages then
 * count as the process's memory: once the reads of a view add up to all
 * its bytes (whatever their order and threads, so that no reader of an
 * earlier chunk faults pages back in afterwards), its storage's pages are
 * let go (they stay in the page cache, and a later reader of the mapping
 * faults them back in), so memory stays bounded by the storages being
 * read rather than the file.
 */
static void let_go(const unsigned char *base, uint64_t off, uint64_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)(base + off) + page - 1) & ~(page - 1);
	uintptr_t b = (uintptr_t)(base + off + len) & ~(page - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

/*
 * CRCs of storages read in place (zip members; tar and legacy files have
 * none). Every read checks its bytes as they go by, so that a storage
 * needs no second pass whatever the order its chunks come in and
 * however many threads read them: a read of bytes [off, off + n) of a
 * tensor's contiguous form answers for a piece of its storage, takes the
 * piece's CRC-32 outside any lock (st__crc32, libdeflate), and joins it
 * to the pieces already seen (st__arc_crc32_combine, zlib), in storage
 * order whatever the order of the reads; the read that completes the
 * storage compares the CRC with the zip record and fails when it
 * differs. A tensor that is its whole storage answers for the bytes it
 * read; any other (a view, a part of a storage, an expanded tensor) for
 * the same share of its storage as of its own bytes, [off * S / N,
 * (off + n) * S / N), read from the mapping (a view's gather has just
 * read those pages) or with pread, so that reading all of a tensor
 * covers all of its storage once. Parts read twice are joined once.
 * Reads that leave more than CRC_PIECES_MAX gaps, or race over the same
 * bytes, spoil the run: the read of the tensor's last byte then reads the
 * whole storage once more through its CRC. Once a storage is found good,
 * no read of it checks again; once found bad, every read that reaches a
 * tensor's last byte fails. A read that leaves part of the storage
 * unread checks nothing. st_file_data, which hands out all of a tensor's
 * bytes, covers the whole storage first.
 */
#define CRC_PIECES_MAX 64
enum { CRC_UNKNOWN, CRC_GOOD, CRC_BAD };

static int crc_bad(struct st__torch *t, const struct tview *v,
                   const char *name, struct st__report *r)
{
	__atomic_store_n(&t->crc_state[v->entry], CRC_BAD, __ATOMIC_RELEASE);
	return BAD("tensor '%s': zip member '%s' fails its CRC-32 (a damaged "
	           "file?)", name, t->arc.e[v->entry].name);
}

static int has_crc(const struct st__torch *t, const struct tview *v)
{
	return t->kind == ST__TORCH_ZIP && v->data_off != ST__ARC_NOT_IN_PLACE &&
	       v->entry < t->arc.n && t->arc.e[v->entry].has_crc;
}

/* The CRC-32 of storage bytes [lo, hi) after *c: from own (the bytes
 * themselves, already read), else the mapping base, else the file. */
static int crc_bytes(struct st__torch *t, const struct tview *v,
                     const unsigned char *base, const unsigned char *own,
                     uint64_t lo, uint64_t hi, uint32_t *c,
                     const char *name, struct st__report *r)
{
	if (own || base) {
		*c = st__crc32(*c, own ? own : base + v->data_off + lo,
		               (size_t)(hi - lo));
		return ST_OK;
	}
	unsigned char b[1 << 16];
	for (uint64_t at = lo; at < hi;) {
		size_t k = hi - at < sizeof b ? (size_t)(hi - at) : sizeof b;
		if (st__src_read(&t->src, b, k, v->data_off + at) < 0)
			return st__error_sys(r->err, ST_EIO, errno,
			                     "%s: tensor '%s': read", r->path, name);
		*c = st__crc32(*c, b, k);
		at += k;
	}
	return ST_OK;
}

/* Compare a storage's CRC with its record; remember the verdict. */
static int crc_verdict(struct st__torch *t, const struct tview *v,
                       uint32_t c, const char *name, struct st__report *r)
{
	if (c != t->arc.e[v->entry].crc)
		return crc_bad(t, v, name, r);
	__atomic_store_n(&t->crc_state[v->entry], CRC_GOOD, __ATOMIC_RELEASE);
	return ST_OK;
}

/* The whole storage of v through its CRC (a spoilt run's last resort). */
static int crc_whole(struct st__torch *t, const struct tview *v,
                     const unsigned char *base, const char *name,
                     struct st__report *r)
{
	uint32_t c = 0;
	int rc = crc_bytes(t, v, base, NULL, 0, v->st_bytes, &c, name, r);
	return rc ? rc : crc_verdict(t, v, c, name, r);
}

/* The parts of [lo, hi) that run cr does not cover yet, into gap. */
static unsigned crc_gaps(const struct crc_run *cr, uint64_t lo, uint64_t hi,
                         struct crc_piece *gap)
{
	uint64_t a = lo > cr->done ? lo : cr->done;
	unsigned ng = 0;
	for (unsigned k = 0; k < cr->n && a < hi; k++) {
		if (cr->p[k].hi <= a)
			continue;
		if (cr->p[k].lo >= hi)
			break;
		if (cr->p[k].lo > a)
			gap[ng++] = (struct crc_piece){a, cr->p[k].lo, 0};
		a = cr->p[k].hi;
	}
	if (a < hi)
		gap[ng++] = (struct crc_piece){a, hi, 0};
	return ng;
}

/* Join piece g to run cr; -1 when it overlaps what is there (a race) or
 * would leave too many gaps. */
static int crc_join(struct crc_run *cr, struct crc_piece g)
{
	if (g.lo < cr->done)
		return -1;
	unsigned k = 0;
	while (k < cr->n && cr->p[k].lo < g.lo)
		k++;
	if ((k > 0 && cr->p[k - 1].hi > g.lo) || (k < cr->n && cr->p[k].lo < g.hi))
		return -1;
	if (cr->n == cr->cap) {
		unsigned c = cr->cap ? cr->cap * 2 : 4;
		struct crc_piece *np;
		if (cr->n >= CRC_PIECES_MAX ||
		    !(np = realloc(cr->p, c * sizeof *np)))
			return -1;
		cr->p = np;
		cr->cap = c;
	}
	memmove(cr->p + k + 1, cr->p + k, (cr->n - k) * sizeof *cr->p);
	cr->p[k] = g;
	cr->n++;
	/* Fold runs that now touch: into [0, done), or into each other. */
	unsigned w = 0;
	for (unsigned i = 0; i < cr->n; i++) {
		struct crc_piece q = cr->p[i];
		if (w == 0 && q.lo == cr->done) {
			cr->crc = st__arc_crc32_combine(cr->crc, q.crc, q.hi - q.lo);
			cr->done = q.hi;
		} else if (w > 0 && cr->p[w - 1].hi == q.lo) {
			cr->p[w - 1].crc = st__arc_crc32_combine(cr->p[w - 1].crc, q.crc,
			                                         q.hi - q.lo);
			cr->p[w - 1].hi = q.hi;
		} else {
			cr->p[w++] = q;
		}
	}
	cr->n = w;
	return 0;
}

static void crc_reset(struct crc_run *cr, int spoilt)
{
	free(cr->p);
	*cr = (struct crc_run){.spoilt = spoilt};
}

/* floor(x * s / n), without overflow (x <= n). */
static uint64_t share(uint64_t x, uint64_t s, uint64_t n)
{
	return (uint64_t)((unsigned __int128)x * s / n);
}

/*
 * Bytes [off, off + n) of tensor i's contiguous form were read: buf
 * holds them when it is not NULL and the tensor is plain; base is the
 * file's mapping, or NULL.
 */
static int crc_note(struct st__torch *t, size_t i, const unsigned char *base,
                    const void *buf, uint64_t off, size_t n, const char *name,
                    struct st__report *r)
{
	struct tview *v = &t->v[i];
	if (!has_crc(t, v) || n == 0)
		return ST_OK;
	int last = off + n == v->n_bytes;
	int state = __atomic_load_n(&t->crc_state[v->entry], __ATOMIC_ACQUIRE);
	if (state == CRC_GOOD)
		return ST_OK;
	if (state == CRC_BAD)
		return last ? crc_bad(t, v, name, r) : ST_OK;
	uint64_t lo = off, hi = off + n, s = v->st_bytes;
	const unsigned char *own = NULL;
	if (v->plain && v->first == 0 && v->n_bytes == s) {
		own = buf;
	} else {
		lo = share(off, s, v->n_bytes);
		hi = last ? s : share(off + n, s, v->n_bytes);
	}
	struct crc_piece gap[CRC_PIECES_MAX + 1];
	pthread_mutex_lock(&t->lock);
	int spoilt = v->crc.spoilt;
	unsigned ng = spoilt ? 0 : crc_gaps(&v->crc, lo, hi, gap);
	pthread_mutex_unlock(&t->lock);
	if (spoilt)
		return last ? crc_whole(t, v, base, name, r) : ST_OK;
	for (unsigned k = 0; k < ng; k++) {
		int rc = crc_bytes(t, v, base, own ? own + (gap[k].lo - lo) : NULL,
		                   gap[k].lo, gap[k].hi, &gap[k].crc, name, r);
		if (rc)
			return rc;
	}
	int complete = 0;
	uint32_t c = 0;
	pthread_mutex_lock(&t->lock);
	for (unsigned k = 0; k < ng && !v->crc.spoilt; k++)
		if (crc_join(&v->crc, gap[k]) < 0)
			crc_reset(&v->crc, 1);
	spoilt = v->crc.spoilt;
	if (!spoilt && ng && v->crc.done == s) {
		complete = 1;
		c = v->crc.crc;
		crc_reset(&v->crc, 0);
	}
	pthread_mutex_unlock(&t->lock);
	if (complete)
		return crc_verdict(t, v, c, name, r);
	return spoilt && last ? crc_whole(t, v, base, name, r) : ST_OK;
}

int st__torch_seen(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t off, const void *buf, size_t n,
                   const char *name, struct st__report *r)
{
	return crc_note(t, i, base, buf, off, n, name, r);
}

int st__torch_read(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t off, void *buf, size_t n, const char *name,
                   struct st__report *r)
{
	struct tview *v = &t->v[i];
	if (n == 0)
		return ST_OK;
	if (v->data_off != ST__ARC_NOT_IN_PLACE) {
		gather(v, base + v->data_off, off, buf, n);
		int rc = crc_note(t, i, base, NULL, off, n, name, r);
		/* Let go once the reads add up to the whole tensor (again),
		 * when no other thread is still reading it for this pass. */
		uint64_t was = __atomic_fetch_add(&v->gathered, n, __ATOMIC_ACQ_REL);
		if (!t->src.mem && (was + n) / v->n_bytes > was / v->n_bytes)
			let_go(base, v->data_off, v->st_bytes);
		return rc;
	}
	/* A compressed storage: inflated once, kept until another is read. */
	pthread_mutex_lock(&t->lock);
	int rc = ST_OK;
	if (!t->cache || t->cache_entry != v->entry) {
		free(t->cache);
		t->cache = NULL;
		/* The member holds exactly its declared st_bytes, or fails. */
		rc = st__arc_read(&t->arc, v->entry, v->st_bytes, &t->cache,
		                  &t->cache_len, r);
		t->cache_entry = v->entry;
	}
	if (rc == ST_OK)
		gather(v, t->cache, off, buf, n);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int st__torch_data(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t n_bytes, const void **data, const char *name,
                   struct st__report *r)
{
	struct tview *v = &t->v[i];
	void *c = __atomic_load_n(&v->copy, __ATOMIC_ACQUIRE);
	if (!c) {
		if (n_bytes > SIZE_MAX)
			return ST_ENOMEM;
		c = malloc((size_t)n_bytes);
		if (!c)
			return st__error(r->err, ST_ENOMEM, "%s: out of memory",
			                 r->path);
		int rc = st__torch_read(t, i, base, 0, c, (size_t)n_bytes, name, r);
		if (rc) {
			free(c);
			return rc;
		}
		void *expected = NULL;
		if (!__atomic_compare_exchange_n(&v->copy, &expected, c, 0,
		                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			free(c); /* another thread's copy won */
			c = expected;
		}
	}
	*data = c;
	return ST_OK;
}
