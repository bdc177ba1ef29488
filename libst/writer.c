/*
 * writer.c - build and write one safetensors file: the canonical header,
 * streamed tensor data, and atomic replacement of the target.
 *
 * What it is: st_writer_* (include/st/writer.h). The header it builds is
 * byte-identical to the reference serializer (huggingface/safetensors,
 * safetensors/src/tensor.rs, prepare()): compact JSON with serde_json's
 * string escaping, "__metadata__" first, tensors by descending dtype rank
 * then by name bytes, offsets contiguous from 0, spaces up to a multiple
 * of 8. Two choices go beyond the reference: metadata keys are sorted by
 * bytes (the reference keeps them in a HashMap, so its order is random),
 * and "format": "pt" is present unless the caller sets "format" (the
 * reference adds nothing; transformers passes {"format": "pt"}).
 *
 * What it is not: a reader (file.c, format.c) or a shard writer; shard
 * indexes are written by index_write.c.
 *
 * Atomicity: the data goes to a temporary file created beside the target
 * (same directory, so rename() is atomic); finish fsyncs it, renames it
 * over the target and fsyncs the directory. Until then the target is never
 * touched, and any failure or an early st_writer_free() removes the
 * temporary file.
 */
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define bytes_cmp st__bytes_cmp

/* A reader rejects a header longer than this (doc/format.md, rule 2). */
#define HEADER_MAX 100000000u
/*
 * Data reaches the file in pieces that end on multiples of ST__FOLIO
 * (internal.h): a piece short of the next multiple is gathered in the
 * buffer, whole ones from there on go straight out. Only the folio
 * holding the header's end is written in two.
 */
#define WBUF_SIZE ST__FOLIO

struct meta_entry {
	char *key, *value;
	size_t key_len, value_len;
};

/*
 * One slot of an open-addressing set of names (duplicate detection): 8
 * bytes, so that a set of 100k names is 2 MB and a probe compares hashes
 * without leaving the slot array; the name itself is read only when the
 * 32 hash bits match.
 */
struct name_slot {
	uint32_t hash; /* the low 32 bits of name_hash */
	uint32_t at;   /* 0: empty slot; else the entry's index + 1 */
};

/* An open-addressing set of the tensors' names, or of the metadata keys:
 * a slot's index is into the writer's t or meta array. */
struct name_set {
	struct name_slot *slot;
	size_t cap; /* a power of two, or 0 */
};

enum wstate { W_BUILD, W_OPEN, W_DONE, W_FAILED };

struct st_writer {
	/* Declared tensors; in canonical order with offsets once sorted. */
	st_tensor *t;
	size_t n, cap;
	int sorted;
	uint64_t data_size; /* sum of every tensor's n_bytes */

	struct name_set names; /* of t; stale (t was sorted) while names_stale */
	int names_stale;
	uint64_t seed;  /* of name_hash, random per writer */

	struct meta_entry *meta;
	size_t n_meta, meta_cap;
	struct name_set keys; /* of meta, unless keys_in_order */
	int keys_in_order;    /* see meta_find */

	struct st__buf header; /* 8-byte N + padded JSON, when header_ok */
	int header_ok;

	enum wstate state;
	char *path;
	st_atomic *file;  /* the temporary file, while open */
	int to_fd;        /* st_writer_open_fd: fd is the caller's, no file */
	int fd;           /* its descriptor */
	int mode;         /* st_writer_set_mode's, or -1 */
	uint64_t writeback_every; /* st_writer_set_writeback's */
	uint64_t out_pos, wb_from; /* file bytes written; writeback asked up to */
	uint64_t written; /* data bytes accepted so far */
	char *buf;        /* write buffer, WBUF_SIZE bytes */
	size_t blen;
};

/* ---- names in messages -------------------------------------------------- */

/*
 * Render a tensor name for an error message: valid UTF-8 is kept, control
 * bytes and invalid bytes become \xNN, and long names are cut with "...",
 * so a message stays one readable line whatever the name holds.
 */
static const char *show_name(char *out, size_t size, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i = 0;
	assert(size >= 8);
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t seq = 1;
		if (c >= 0x80) {
			size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
			if (len - i >= k && st__utf8_valid(s + i, k, NULL))
				seq = k;
		}
		int plain = (c >= 0x20 && c < 0x7f) || seq > 1;
		size_t need = plain ? seq : 4;
		if (o + need + 4 > size) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (plain) {
			memcpy(out + o, s + i, seq);
			o += seq;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
		i += seq;
	}
	out[o] = 0;
	return out;
}

#define NAME_SHOW 160

/* ---- the set of names ---------------------------------------------------- */

/*
 * FNV-1a from a random seed, then MurmurHash3's finalizer. Names come from
 * untrusted files (stconvert): the low bits of plain FNV-1a depend only on
 * the low bits of the input, so colliding names were easy to make, and 40k
 * of them took 6 s to add (quadratic probing). Seeded and mixed, the slot
 * depends on every bit and cannot be predicted.
 */
static uint64_t name_hash(uint64_t seed, const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325u ^ seed;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3u;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdu;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53u;
	h ^= h >> 33;
	return h;
}

/* The name of entry i of set ns: a tensor's name or a metadata key. */
static const char *entry_name(const st_writer *w, const struct name_set *ns,
                              size_t i, size_t *len)
{
	if (ns == &w->keys) {
		*len = w->meta[i].key_len;
		return w->meta[i].key;
	}
	*len = w->t[i].name_len;
	return w->t[i].name;
}

/*
 * The slot holding s in ns, or the empty slot where it goes (h: its
 * name_hash, truncated). The set must have a free slot (set_reserve).
 */
static struct name_slot *set_find(const st_writer *w, const struct name_set *ns,
                                  uint32_t h, const char *s, size_t len)
{
	size_t mask = ns->cap - 1, i = h & mask;
	for (;; i = (i + 1) & mask) {
		struct name_slot *slot = &ns->slot[i];
		if (!slot->at)
			return slot;
		if (slot->hash != h)
			continue;
		size_t el;
		const char *e = entry_name(w, ns, slot->at - 1, &el);
		if (el == len && memcmp(e, s, len) == 0)
			return slot;
	}
}

/* Names are unique: each goes to the first free slot from its hash. */
static void set_place(struct name_slot *set, size_t cap, struct name_slot s)
{
	size_t j = s.hash & (cap - 1);
	while (set[j].at)
		j = (j + 1) & (cap - 1);
	set[j] = s;
}

/*
 * Make room for a set holding n names and one more; keeps the load at
 * most one half. A slot's index and hash are 32 bits, so a set holds fewer
 * than 2^31 names (a header of that many could not be read back anyway:
 * a reader stops at 100 MB); past that it fails as out of memory.
 */
static int set_reserve(struct name_set *ns, size_t n)
{
	if (ns->cap && (n + 1) * 2 <= ns->cap)
		return 0;
	if (n >= (size_t)1 << 31 || n > SIZE_MAX / 4 / sizeof *ns->slot)
		return -1;
	size_t cap = ns->cap ? ns->cap * 2 : 64;
	while ((n + 1) * 2 > cap)
		cap *= 2; /* at most 4 (n + 1): no overflow, by the check above */
	struct name_slot *set = calloc(cap, sizeof *set);
	if (!set)
		return -1;
	for (size_t i = 0; i < ns->cap; i++)
		if (ns->slot[i].at)
			set_place(set, cap, ns->slot[i]);
	free(ns->slot);
	ns->slot = set;
	ns->cap = cap;
	return 0;
}

/* Put the names of t back in the set after prepare() sorted t. */
static void names_rebuild(st_writer *w)
{
	memset(w->names.slot, 0, w->names.cap * sizeof *w->names.slot);
	for (size_t i = 0; i < w->n; i++) {
		uint32_t h = (uint32_t)name_hash(w->seed, w->t[i].name, w->t[i].name_len);
		set_place(w->names.slot, w->names.cap,
		          (struct name_slot){ h, (uint32_t)(i + 1) });
	}
	w->names_stale = 0;
}

/* ---- building ------------------------------------------------------------- */

int st_writer_new(st_writer **out, st_error *err)
{
	st_writer *w = calloc(1, sizeof *w);
	if (!w) {
		*out = NULL;
		return st__error(err, ST_ENOMEM, "cannot allocate a writer");
	}
	w->fd = -1;
	w->mode = -1;
	w->keys_in_order = 1;
	if (getrandom(&w->seed, sizeof w->seed, GRND_NONBLOCK) !=
	    (ssize_t)sizeof w->seed)
		w->seed = (uint64_t)(uintptr_t)w ^ (uint64_t)getpid() << 32;
	/* "format": "pt" unless the caller says otherwise: transformers refuses
	 * a file whose format is not pt/tf/flax/mlx. */
	int rc = st_writer_set_meta(w, "format", "pt", err);
	if (rc != ST_OK) {
		st_writer_free(w);
		*out = NULL;
		return rc;
	}
	*out = w;
	return ST_OK;
}

static void remove_temp(st_writer *w)
{
	st_atomic_close(w->file);
	w->file = NULL;
	w->fd = -1;
}

void st_writer_free(st_writer *w)
{
	if (!w)
		return;
	remove_temp(w);
	for (size_t i = 0; i < w->n; i++) {
		free((void *)w->t[i].name);
		free((void *)w->t[i].shape);
	}
	free(w->t);
	free(w->names.slot);
	free(w->keys.slot);
	for (size_t i = 0; i < w->n_meta; i++) {
		free(w->meta[i].key);
		free(w->meta[i].value);
	}
	free(w->meta);
	st__buf_free(&w->header);
	free(w->path);
	free(w->buf);
	free(w);
}

static char *dup_bytes(const char *s, size_t len)
{
	char *d = malloc(len + 1);
	if (d) {
		if (len)
			memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

/*
 * Put every metadata key in the set (the first key out of order came):
 * -1 when out of memory.
 */
static int keys_to_set(st_writer *w)
{
	if (set_reserve(&w->keys, w->n_meta))
		return -1;
	for (size_t i = 0; i < w->n_meta; i++) {
		uint32_t h = (uint32_t)name_hash(w->seed, w->meta[i].key, w->meta[i].key_len);
		/* n_meta < 2^31: set_reserve */
		set_place(w->keys.slot, w->keys.cap, (struct name_slot){ h, (uint32_t)(i + 1) });
	}
	w->keys_in_order = 0;
	return 0;
}

/*
 * Find a metadata key: *at is its entry, or n_meta when it is new; then
 * *slot, unless NULL, is where it goes in the set (hash *h). -1: out of
 * memory.
 *
 * Keys in increasing byte order (as a file this writer wrote lists them)
 * need no set: while keys_in_order, the entries after the first (the
 * default "format" that st_writer_new sets) are in strictly increasing
 * order, so a key is the first, the last, or new when it sorts after the
 * last, and the header lists them without sorting. The first key out of
 * order puts them all in the set, which finds keys from then on.
 */
static int meta_find(st_writer *w, const char *key, size_t kl, size_t *at,
                     struct name_slot **slot, uint32_t *h)
{
	size_t n = w->n_meta;
	*slot = NULL;
	if (w->keys_in_order) {
		if (n == 0 || bytes_cmp(key, kl, w->meta[0].key, w->meta[0].key_len) == 0) {
			*at = 0;
			return 0;
		}
		int c = n > 1 ? bytes_cmp(key, kl, w->meta[n - 1].key, w->meta[n - 1].key_len) : 1;
		if (c >= 0) {
			*at = c > 0 ? n : n - 1;
			return 0;
		}
		if (keys_to_set(w))
			return -1;
	}
	if (set_reserve(&w->keys, n))
		return -1;
	*h = (uint32_t)name_hash(w->seed, key, kl);
	*slot = set_find(w, &w->keys, *h, key, kl);
	*at = (*slot)->at ? (*slot)->at - 1 : n;
	return 0;
}

int st_writer_set_meta(st_writer *w, const char *key, const char *value,
                       st_error *err)
{
	if (!key || !value)
		return st__error(err, ST_EINVAL, "metadata: key and value must not be NULL");
	if (w->state != W_BUILD)
		return st__error(err, ST_ESTATE,
		                 "metadata '%s': set after the writer was opened", key);
	size_t kl = strlen(key), vl = strlen(value), bad;
	if (!st__utf8_valid(key, kl, &bad))
		return st__error(err, ST_EINVAL,
		                 "metadata: key is not valid UTF-8 (bad byte at offset %zu)", bad);
	if (!st__utf8_valid(value, vl, &bad))
		return st__error(err, ST_EINVAL,
		                 "metadata '%s': value is not valid UTF-8 (bad byte at offset %zu)",
		                 key, bad);
	char *v = dup_bytes(value, vl);
	if (!v)
		return st__error(err, ST_ENOMEM, "metadata '%s': out of memory", key);
	size_t at;
	struct name_slot *slot;
	uint32_t h = 0;
	if (meta_find(w, key, kl, &at, &slot, &h)) {
		free(v);
		return st__error(err, ST_ENOMEM, "metadata '%s': out of memory", key);
	}
	if (at < w->n_meta) {
		struct meta_entry *m = &w->meta[at];
		free(m->value);
		m->value = v;
		m->value_len = vl;
		w->header_ok = 0;
		return ST_OK;
	}
	if (w->n_meta == w->meta_cap) {
		size_t cap = w->meta_cap ? w->meta_cap * 2 : 8;
		struct meta_entry *m =
			cap <= SIZE_MAX / sizeof *m ? realloc(w->meta, cap * sizeof *m) : NULL;
		if (!m) {
			free(v);
			return st__error(err, ST_ENOMEM, "metadata '%s': out of memory", key);
		}
		w->meta = m;
		w->meta_cap = cap;
	}
	char *k = dup_bytes(key, kl);
	if (!k) {
		free(v);
		return st__error(err, ST_ENOMEM, "metadata '%s': out of memory", key);
	}
	if (slot) /* n_meta < 2^31: set_reserve */
		*slot = (struct name_slot){ h, (uint32_t)w->n_meta + 1 };
	w->meta[w->n_meta++] = (struct meta_entry){ k, v, kl, vl };
	w->header_ok = 0;
	return ST_OK;
}

int st_writer_add(st_writer *w, const char *name, size_t name_len,
                  st_dtype dtype, unsigned ndim, const uint64_t *shape,
                  st_error *err)
{
	char shown[NAME_SHOW];
	size_t bad;

	if (!name && name_len)
		return st__error(err, ST_EINVAL, "tensor name is NULL");
	if (!name)
		name = "";
	show_name(shown, sizeof shown, name, name_len);
	if (w->state != W_BUILD)
		return st__error(err, ST_ESTATE,
		                 "tensor '%s': added after the writer was opened", shown);

	/* Name: UTF-8 (the header is JSON), unique, not the metadata key. */
	if (!st__utf8_valid(name, name_len, &bad))
		return st__error(err, ST_EINVAL,
		                 "tensor '%s': name is not valid UTF-8 (bad byte at offset %zu)",
		                 shown, bad);
	if (name_len == 12 && memcmp(name, "__metadata__", 12) == 0)
		return st__error(err, ST_EINVAL,
		                 "tensor '__metadata__': name is reserved for the metadata");
	/* One probe: it finds the duplicate or the slot the name goes to. */
	if (set_reserve(&w->names, w->n))
		return st__error(err, ST_ENOMEM, "tensor '%s': out of memory", shown);
	if (w->names_stale)
		names_rebuild(w);
	uint32_t h = (uint32_t)name_hash(w->seed, name, name_len);
	struct name_slot *slot = set_find(w, &w->names, h, name, name_len);
	if (slot->at)
		return st__error(err, ST_EINVAL, "tensor '%s': duplicate name", shown);

	/* Dtype and shape. */
	if ((unsigned)dtype >= (unsigned)ST_DTYPE_COUNT)
		return st__error(err, ST_EINVAL, "tensor '%s': unknown dtype %d",
		                 shown, (int)dtype);
	if (ndim > ST_MAX_DIMS)
		return st__error(err, ST_EINVAL, "tensor '%s': too many dimensions (%u, expected at most %d)",
		                 shown, ndim, ST_MAX_DIMS);
	if (ndim && !shape)
		return st__error(err, ST_EINVAL, "tensor '%s': shape is NULL", shown);

	/* Sizes, with every product and sum checked for overflow. */
	uint64_t count = 1, bits;
	for (unsigned i = 0; i < ndim; i++)
		if (st__mul_u64(count, shape[i], &count))
			return st__error(err, ST_EINVAL,
			                 "tensor '%s': element count overflows 64 bits (at dimension %u)",
			                 shown, i);
	unsigned dbits = st_dtype_bits(dtype);
	if (st__mul_u64(count, dbits, &bits))
		return st__error(err, ST_EINVAL,
		                 "tensor '%s': size in bits overflows 64 bits (%" PRIu64 " x %s)",
		                 shown, count, st_dtype_name(dtype));
	if (bits % 8)
		return st__error(err, ST_EINVAL,
		                 "tensor '%s': %" PRIu64 " x %s is %" PRIu64 " bits, not a whole number of bytes",
		                 shown, count, st_dtype_name(dtype), bits);
	uint64_t total;
	if (st__add_u64(w->data_size, bits / 8, &total))
		return st__error(err, ST_EINVAL,
		                 "tensor '%s': total data size overflows 64 bits", shown);

	/* Store it. */
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		st_tensor *t = cap <= SIZE_MAX / sizeof *t ? realloc(w->t, cap * sizeof *t) : NULL;
		if (!t)
			return st__error(err, ST_ENOMEM, "tensor '%s': out of memory", shown);
		w->t = t;
		w->cap = cap;
	}
	char *nm = dup_bytes(name, name_len);
	uint64_t *dims = malloc((ndim ? ndim : 1) * sizeof *dims);
	if (!nm || !dims) {
		free(nm);
		free(dims);
		return st__error(err, ST_ENOMEM, "tensor '%s': out of memory", shown);
	}
	if (ndim)
		memcpy(dims, shape, ndim * sizeof *dims);
	w->t[w->n++] = (st_tensor){
		.name = nm, .name_len = name_len, .dtype = dtype, .ndim = ndim,
		.shape = dims, .n_elements = count, .n_bytes = bits / 8,
	};
	/* n < 2^31: set_reserve */
	*slot = (struct name_slot){ h, (uint32_t)w->n };
	w->data_size = total;
	w->sorted = 0;
	w->header_ok = 0;
	return ST_OK;
}

/* ---- canonical order and header ------------------------------------------- */

/* Descending dtype rank (the enum order), then name bytes: as the reference. */
int st__tensor_cmp(const st_tensor *a, const st_tensor *b)
{
	if (a->dtype != b->dtype)
		return a->dtype > b->dtype ? -1 : 1;
	return bytes_cmp(a->name, a->name_len, b->name, b->name_len);
}

static int tensor_cmp(const void *pa, const void *pb)
{
	return st__tensor_cmp(pa, pb);
}

/* A sort record carries what the comparator needs: no shared state. */
struct order_rec {
	const st_tensor *t;
	size_t i;
};

static int order_cmp(const void *pa, const void *pb)
{
	const struct order_rec *a = pa, *b = pb;
	int c = st__tensor_cmp(a->t, b->t);
	if (c)
		return c;
	return a->i < b->i ? -1 : a->i > b->i;
}

int st_canonical_order(const st_tensor *t, size_t n, size_t *order,
                       st_error *err)
{
	struct order_rec *rec = malloc((n ? n : 1) * sizeof *rec);
	if (!rec)
		return st__error(err, ST_ENOMEM, "cannot sort %zu tensors", n);
	for (size_t i = 0; i < n; i++)
		rec[i] = (struct order_rec){&t[i], i};
	qsort(rec, n, sizeof *rec, order_cmp);
	for (size_t i = 0; i < n; i++)
		order[i] = rec[i].i;
	free(rec);
	return ST_OK;
}

/*
 * A metadata entry to sort, with its key's first 16 bytes as two
 * big-endian numbers (zero-padded), so that comparisons of keys that
 * differ there (most keys are shorter) read neither the entry nor the
 * key. Keys hold no NUL byte (set_meta takes C strings), so the padding
 * sorts a shorter key first, as byte order does.
 */
struct meta_rec {
	uint64_t prefix[2];
	const struct meta_entry *m;
};

static struct meta_rec meta_rec_of(const struct meta_entry *m)
{
	struct meta_rec r = { { 0, 0 }, m };
	for (size_t i = 0; i < 16; i++) {
		unsigned c = i < m->key_len ? (unsigned char)m->key[i] : 0u;
		r.prefix[i / 8] = r.prefix[i / 8] << 8 | c;
	}
	return r;
}

static int meta_rec_cmp(const void *pa, const void *pb)
{
	const struct meta_rec *a = pa, *b = pb;
	for (int i = 0; i < 2; i++)
		if (a->prefix[i] != b->prefix[i])
			return a->prefix[i] < b->prefix[i] ? -1 : 1;
	return bytes_cmp(a->m->key, a->m->key_len, b->m->key, b->m->key_len);
}

/*
 * The metadata entries in key order, as an array of pointers (the entries
 * stay where they are: the key set holds their indexes), or NULL when out
 * of memory. While keys_in_order only the first entry needs its place.
 */
static const struct meta_entry **meta_sorted(const st_writer *w)
{
	size_t n = w->n_meta;
	const struct meta_entry **sorted = malloc((n ? n : 1) * sizeof *sorted);
	if (!sorted)
		return NULL;
	if (!w->keys_in_order) {
		struct meta_rec *rec = malloc((n ? n : 1) * sizeof *rec);
		if (!rec) {
			free(sorted);
			return NULL;
		}
		for (size_t i = 0; i < n; i++)
			rec[i] = meta_rec_of(&w->meta[i]);
		qsort(rec, n, sizeof *rec, meta_rec_cmp);
		for (size_t i = 0; i < n; i++)
			sorted[i] = rec[i].m;
		free(rec);
		return sorted;
	}
	/* meta[1..n) are in order: meta[0] goes after those before it. */
	const struct meta_entry *first = &w->meta[0];
	size_t lo = 1, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct meta_entry *m = &w->meta[mid];
		if (bytes_cmp(m->key, m->key_len, first->key, first->key_len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = 1; i < lo; i++)
		sorted[i - 1] = &w->meta[i];
	sorted[lo - 1] = first;
	for (size_t i = lo; i < n; i++)
		sorted[i] = &w->meta[i];
	return sorted;
}

static void prepare(st_writer *w)
{
	if (w->sorted)
		return;
	if (w->n > 1) {
		qsort(w->t, w->n, sizeof *w->t, tensor_cmp);
		w->names_stale = 1; /* the set's indexes are of the old order */
	}
	uint64_t off = 0;
	for (size_t i = 0; i < w->n; i++) {
		w->t[i].begin = off;
		off += w->t[i].n_bytes; /* cannot overflow: checked by add */
		w->t[i].end = off;
	}
	w->sorted = 1;
}

static int build_header(st_writer *w, st_error *err)
{
	if (w->header_ok)
		return ST_OK;
	prepare(w);
	const struct meta_entry **sorted = meta_sorted(w);
	if (!sorted)
		return st__error(err, ST_ENOMEM, "cannot sort %zu metadata entries", w->n_meta);

	struct st__buf *b = &w->header;
	st__buf_free(b);
	st__buf_put(b, "\0\0\0\0\0\0\0\0", 8);
	/* __metadata__ always has an entry ("format"), so it is always written. */
	st__buf_puts(b, "{\"__metadata__\":{");
	for (size_t i = 0; i < w->n_meta; i++) {
		if (i)
			st__buf_put(b, ",", 1);
		st__buf_json_string(b, sorted[i]->key, sorted[i]->key_len);
		st__buf_put(b, ":", 1);
		st__buf_json_string(b, sorted[i]->value, sorted[i]->value_len);
	}
	free(sorted);
	st__buf_put(b, "}", 1);
	for (size_t i = 0; i < w->n && !b->failed; i++) {
		const st_tensor *t = &w->t[i];
		st__buf_put(b, ",", 1);
		st__buf_json_string(b, t->name, t->name_len);
		st__buf_puts(b, ":{\"dtype\":\"");
		st__buf_puts(b, st_dtype_name(t->dtype));
		st__buf_puts(b, "\",\"shape\":[");
		for (unsigned d = 0; d < t->ndim; d++)
			st__buf_printf(b, d ? ",%" PRIu64 : "%" PRIu64, t->shape[d]);
		st__buf_printf(b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
		               t->begin, t->end);
	}
	st__buf_put(b, "}", 1);
	/* Spaces up to a multiple of 8, so the data buffer starts aligned. */
	while ((b->len - 8) % 8 && !b->failed)
		st__buf_put(b, " ", 1);
	if (b->failed) {
		st__buf_free(b);
		return st__error(err, ST_ENOMEM, "cannot allocate the header (%zu tensors)", w->n);
	}
	uint64_t n = b->len - 8;
	if (n > HEADER_MAX) {
		st__buf_free(b);
		return st__error(err, ST_EINVAL,
		                 "header would be %" PRIu64 " bytes, more than the %u a reader accepts",
		                 n, HEADER_MAX);
	}
	for (int i = 0; i < 8; i++)
		b->data[i] = (char)(unsigned char)(n >> (8 * i));
	w->header_ok = 1;
	return ST_OK;
}

int st_writer_header(st_writer *w, const void **buf, size_t *len,
                     st_error *err)
{
	int rc = build_header(w, err);
	if (rc != ST_OK)
		return rc;
	*buf = w->header.data;
	*len = w->header.len;
	return ST_OK;
}

size_t st_writer_n_tensors(st_writer *w)
{
	prepare(w);
	return w->n;
}

const st_tensor *st_writer_tensor(st_writer *w, size_t i)
{
	ST__REQUIRE(i < w->n);
	prepare(w);
	return &w->t[i];
}

/* ---- file output ---------------------------------------------------------- */

/* A system call failed: drop the temporary file and report errnum. */
static int fail(st_writer *w, st_error *err, int errnum, const char *what)
{
	const char *tmp = w->file ? st_atomic_temp_path(w->file) : NULL;
	int rc = w->to_fd ? st__error_sys(err, ST_EIO, errnum, "%s: cannot %s", w->path, what)
	                  : st__error_sys(err, ST_EIO, errnum, "%s: cannot %s temporary file '%s'",
	                                  w->path, what, tmp ? tmp : "");
	remove_temp(w);
	w->state = W_FAILED;
	return rc;
}

/* The header built, the name kept for messages, the write buffer. */
static int start_output(st_writer *w, const char *name, st_error *err)
{
	int rc = build_header(w, err);
	if (rc != ST_OK)
		return rc;
	w->path = dup_bytes(name, strlen(name));
	w->buf = malloc(WBUF_SIZE);
	if (!w->path || !w->buf) {
		free(w->path);
		free(w->buf);
		w->path = w->buf = NULL;
		return st__error(err, ST_ENOMEM, "%s: out of memory", name);
	}
	return ST_OK;
}

/* The header, first bytes of the output. */
static int write_header(st_writer *w, st_error *err)
{
	int e;
	if ((e = st__write_all(w->fd, w->header.data, w->header.len)) != 0)
		return fail(w, err, e, "write");
	w->written = 0;
	w->out_pos = w->wb_from = w->header.len;
	w->blen = 0;
	return ST_OK;
}

int st_writer_open(st_writer *w, const char *path, st_error *err)
{
	if (!path || !*path)
		return st__error(err, ST_EINVAL, "output path is empty");
	if (w->state != W_BUILD)
		return st__error(err, ST_ESTATE, "%s: the writer was already opened", path);
	const char *slash = strrchr(path, '/');
	if (slash && !slash[1])
		return st__error(err, ST_EINVAL, "%s: output path names a directory", path);
	int rc = start_output(w, path, err);
	if (rc != ST_OK)
		return rc;
	rc = st_atomic_open(&w->file, path, err);
	if (rc != ST_OK) {
		/* Nothing was created: the writer may be opened again elsewhere. */
		free(w->path);
		free(w->buf);
		w->path = w->buf = NULL;
		return rc;
	}
	w->fd = st_atomic_fd(w->file);
	w->state = W_OPEN;
	if (w->mode >= 0 && fchmod(w->fd, (mode_t)w->mode) != 0)
		return fail(w, err, errno, "set the mode of");
	return write_header(w, err);
}

int st_writer_open_fd(st_writer *w, int fd, const char *name, st_error *err)
{
	ST__REQUIRE(fd >= 0 && name);
	if (w->state != W_BUILD)
		return st__error(err, ST_ESTATE, "%s: the writer was already opened", name);
	int rc = start_output(w, name, err);
	if (rc != ST_OK)
		return rc;
	w->fd = fd;
	w->to_fd = 1;
	w->writeback_every = 0; /* a pipe has no pages to write back */
	w->state = W_OPEN;
	return write_header(w, err);
}

const char *st_writer_temp_path(const st_writer *w)
{
	return w->state == W_OPEN && w->file ? st_atomic_temp_path(w->file) : NULL;
}

int st_writer_set_mode(st_writer *w, unsigned mode, st_error *err)
{
	if (w->state != W_BUILD)
		return st__error(err, ST_ESTATE, "st_writer_set_mode after st_writer_open");
	w->mode = (int)(mode & 07777);
	return ST_OK;
}

void st_writer_set_writeback(st_writer *w, uint64_t every)
{
	w->writeback_every = every;
}

/*
 * Start writeback every writeback_every bytes (see writer.h), of the range
 * written since the last time only: asking for the whole file each time
 * would walk every dirty page again.
 */
static void account(st_writer *w, size_t n)
{
	w->out_pos += n;
	if (w->writeback_every && w->out_pos - w->wb_from >= w->writeback_every) {
		st__writeback(w->fd, w->wb_from, w->out_pos - w->wb_from);
		w->wb_from = w->out_pos;
	}
}

/* The tensor that holds data byte off (the first non-empty one ending past it). */
static const st_tensor *tensor_at(const st_writer *w, uint64_t off)
{
	size_t lo = 0, hi = w->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->t[mid].end <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n ? &w->t[lo] : NULL;
}

static int state_error(const st_writer *w, st_error *err, const char *call)
{
	switch (w->state) {
	case W_BUILD:
		return st__error(err, ST_ESTATE, "%s before st_writer_open", call);
	case W_DONE:
		return st__error(err, ST_ESTATE, "%s: %s after the file was finished", w->path, call);
	default:
		return st__error(err, ST_ESTATE, "%s: %s after an earlier failure", w->path, call);
	}
}

static int flush(st_writer *w, st_error *err)
{
	int e = st__write_all(w->fd, w->buf, w->blen);
	account(w, w->blen);
	w->blen = 0;
	return e ? fail(w, err, e, "write") : ST_OK;
}

int st_writer_write(st_writer *w, const void *data, size_t n, st_error *err)
{
	if (w->state != W_OPEN)
		return state_error(w, err, "st_writer_write");
	if (n > w->data_size - w->written) {
		const st_tensor *last = w->n ? &w->t[w->n - 1] : NULL;
		char shown[NAME_SHOW];
		return st__error(err, ST_EINVAL,
		                 "%s: %zu bytes more than declared (%" PRIu64 " of %" PRIu64
		                 " data bytes written; last tensor '%s')",
		                 w->path, n - (size_t)(w->data_size - w->written), w->written,
		                 w->data_size,
		                 last ? show_name(shown, sizeof shown, last->name, last->name_len) : "");
	}
	if (n == 0)
		return ST_OK;
	ST__REQUIRE(data != NULL);
	const unsigned char *p = data;
	w->written += n;
	while (n) {
		if (w->blen == 0 && w->out_pos % WBUF_SIZE == 0 && n >= WBUF_SIZE) {
			/* Whole folios straight from the caller's memory: no copy. */
			size_t k = n / WBUF_SIZE * WBUF_SIZE;
			int e = st__write_all(w->fd, p, k);
			if (e)
				return fail(w, err, e, "write");
			account(w, k);
			p += k;
			n -= k;
			continue;
		}
		size_t room = WBUF_SIZE - (size_t)((w->out_pos + w->blen) % WBUF_SIZE);
		size_t k = n < room ? n : room;
		memcpy(w->buf + w->blen, p, k);
		w->blen += k;
		p += k;
		n -= k;
		if (k == room) {
			int rc = flush(w, err);
			if (rc != ST_OK)
				return rc;
		}
	}
	return ST_OK;
}

int st_writer_finish(st_writer *w, st_error *err)
{
	if (w->state != W_OPEN)
		return state_error(w, err, "st_writer_finish");
	if (w->written != w->data_size) {
		const st_tensor *t = tensor_at(w, w->written);
		char shown[NAME_SHOW];
		int rc = st__error(err, ST_ESTATE,
		                   "%s: tensor '%s': data incomplete (%" PRIu64 " of its %" PRIu64
		                   " bytes written; %" PRIu64 " of %" PRIu64 " in the file)",
		                   w->path, show_name(shown, sizeof shown, t->name, t->name_len),
		                   w->written - t->begin, t->n_bytes, w->written, w->data_size);
		remove_temp(w);
		w->state = W_FAILED;
		return rc;
	}
	int rc = flush(w, err);
	if (rc != ST_OK)
		return rc;
	/* A descriptor: every byte has been written to it; nothing to rename. */
	rc = w->to_fd ? ST_OK : st_atomic_commit(w->file, err);
	free(w->buf);
	w->buf = NULL;
	/* After a failed rename the temporary is gone and the target as it
	 * was; after a failed directory sync the file is in place. */
	w->state = rc == ST_OK ? W_DONE : W_FAILED;
	remove_temp(w);
	return rc;
}
