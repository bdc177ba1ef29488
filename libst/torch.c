/*
 * torch.c - read a PyTorch checkpoint into the same tensor table a
 * safetensors header gives, without executing anything: torch.save's zip
 * format (1.6 and later), the legacy pickle stream (0.4 to 1.5) and the
 * tar format (before 0.4).
 *
 * Containers. A zip or tar is listed and read by archive.c (libarchive):
 * pickles and small records are read through it, CRC checked; a storage
 * lying uncompressed in the file (torch writes them so) is read in place
 * at the offset archive.c found and checked, and its CRC-32 checked as
 * reads cover it, in one pass whatever their order (crc_note, in
 * torch_views.c); a compressed storage (rare) is inflated once at open to
 * check it, and again, whole, when read. The legacy stream is mapped: its five pickles
 * are run in place and each storage's bytes follow them, found by
 * walking the element counts.
 *
 * The pickle interpreter and the state dict are in torch_pickle.c, the
 * views and CRC checks of tensor reads in torch_views.c, what they share
 * in torch_internal.h.
 */
#include "torch_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int st__src_read(const struct st__src *s, void *buf, size_t n, uint64_t off)
{
	if (off > s->size || n > s->size - off) {
		errno = 0;
		return -1;
	}
	if (s->mem) {
		memcpy(buf, s->mem + off, n);
		return 0;
	}
	unsigned char *p = buf;
	while (n > 0) {
		ssize_t k = pread(s->fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = 0;
			return -1;
		}
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* ---- the container ------------------------------------------------------ */

/* A member by the part of its name after the top folder, for zip_find. */
struct zsuffix {
	const char *s;
	size_t idx;
};

struct zip {
	struct st__arc arc;
	struct zsuffix *by_suffix; /* sorted by s, then idx */
	size_t n_suffix;
};

static int zsuffix_cmp(const void *x, const void *y)
{
	const struct zsuffix *a = x, *b = y;
	int c = strcmp(a->s, b->s);
	if (c)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/*
 * List the archive (archive.c) and sort its members by suffix once: a
 * checkpoint looks one storage up per tensor, and a linear scan each time
 * made 100k storages quadratic.
 */
static int zip_open(struct zip *z, const struct st__src *s, struct st__report *r)
{
	memset(z, 0, sizeof *z);
	int rc = st__arc_open(&z->arc, s, ST__ARC_ZIP, r);
	if (rc)
		return rc;
	z->by_suffix = malloc((z->arc.n ? z->arc.n : 1) * sizeof *z->by_suffix);
	if (!z->by_suffix)
		return ST_ENOMEM;
	for (size_t i = 0; i < z->arc.n; i++) {
		const char *slash = strchr(z->arc.e[i].name, '/');
		if (slash)
			z->by_suffix[z->n_suffix++] = (struct zsuffix){slash + 1, i};
	}
	qsort(z->by_suffix, z->n_suffix, sizeof *z->by_suffix, zsuffix_cmp);
	/*
	 * Two members for one name have two readings: torch.load takes the
	 * last, zip_find the first. Refused, as duplicate safetensors keys are.
	 */
	for (size_t i = 1; i < z->n_suffix; i++) {
		const char *a = z->arc.e[z->by_suffix[i - 1].idx].name;
		const char *b = z->arc.e[z->by_suffix[i].idx].name;
		if (strcmp(z->by_suffix[i - 1].s, z->by_suffix[i].s))
			continue;
		if (!strcmp(a, b))
			return BAD("zip: member '%s' appears twice (torch.load would "
			           "read the last, not the first)", a);
		return BAD("zip: members '%s' and '%s' both hold '%s'", a, b,
		           z->by_suffix[i].s);
	}
	return ST_OK;
}

/* The member whose name is "<any top folder>/suffix", or -1. */
static long zip_find(const struct zip *z, const char *suffix)
{
	/* The first in zip order among equal suffixes, as a scan would. */
	size_t lo = 0, hi = z->n_suffix;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(z->by_suffix[mid].s, suffix) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < z->n_suffix && !strcmp(z->by_suffix[lo].s, suffix))
		return (long)z->by_suffix[lo].idx;
	return -1;
}

/* ---- reading the container ---------------------------------------------- */

/* A storage's bytes: where, how many, of which dtype. */
struct sloc {
	const char *key;
	size_t len;
	uint64_t data_off;   /* or ST__ARC_NOT_IN_PLACE */
	size_t entry;
	uint64_t bytes;
	st_dtype dtype;
	int found;           /* its bytes were found */
};

struct parse {
	struct st__report *r;
	const struct st__src *src;
	int kind;
	struct zip z;
	const unsigned char *map;   /* legacy, tar: the file's bytes */
	void *mapped;               /* to unmap */
	struct sloc *sl;            /* legacy, tar: sorted by key */
	size_t n_sl;
	int swap;
	struct vm vm;
	unsigned char *pkl, *pkl2;
	struct obj *root;
};

static int sloc_cmp(const void *x, const void *y)
{
	const struct sloc *a = x, *b = y;
	int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);
	if (c)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

static struct sloc *sloc_find(struct parse *p, const char *key, size_t len)
{
	struct sloc k = {.key = key, .len = len};
	return p->n_sl ? bsearch(&k, p->sl, p->n_sl, sizeof *p->sl, sloc_cmp)
	               : NULL;
}

/* Map the whole file (legacy and tar read pickles in place). */
static int map_src(struct parse *p)
{
	if (p->src->mem) {
		p->map = p->src->mem;
		return ST_OK;
	}
	struct st__report *r = p->r;
	if (p->src->size == 0 || p->src->size > SIZE_MAX)
		return BAD("cannot map a file of %llu bytes",
		           (unsigned long long)p->src->size);
	void *m = st__map(p->src->fd, (size_t)p->src->size);
	if (m == MAP_FAILED)
		return st__error_sys(r->err, ST_EIO, errno, "%s: mmap", r->path);
	p->mapped = m;
	p->map = m;
	return ST_OK;
}

/* Run one pickle from the VM's position: a fresh memo and stack each. */
static int run_next(struct parse *p, struct obj **out)
{
	p->vm.sp = 0;
	if (p->vm.memo)
		memset(p->vm.memo, 0, p->vm.memo_cap * sizeof *p->vm.memo);
	p->vm.memo_len = 0;
	return st__pickle_run(&p->vm, out);
}

static void vm_at(struct parse *p, const unsigned char *start,
                  const unsigned char *end, const char *what)
{
	p->vm.start = p->vm.p = start;
	p->vm.end = end;
	p->vm.what = what;
}

static int parse_zip(struct parse *p)
{
	struct st__report *r = p->r;
	int rc = zip_open(&p->z, p->src, r);
	if (rc)
		return rc;
	long bo = zip_find(&p->z, "byteorder");
	if (bo >= 0) {
		unsigned char *b = NULL;
		size_t blen = 0;
		if ((rc = st__arc_read(&p->z.arc, (size_t)bo, 16, &b, &blen, r)))
			return rc;
		int little = blen == 6 && !memcmp(b, "little", 6);
		int big = blen == 3 && !memcmp(b, "big", 3);
		free(b);
		if (!little && !big)
			return BAD("the byteorder record says neither 'little' nor "
			           "'big'");
		p->swap = big;
	}
	long pe = zip_find(&p->z, "data.pkl");
	if (pe < 0)
		return BAD("zip archive without data.pkl: not a PyTorch checkpoint");
	/* A state dict's pickle is small next to its data; 1 GiB is ample. */
	size_t len = 0;
	if ((rc = st__arc_read(&p->z.arc, (size_t)pe, 1ULL << 30, &p->pkl, &len,
	                       r)))
		return rc;
	vm_at(p, p->pkl, p->pkl + len, "data.pkl");
	return st__pickle_run(&p->vm, &p->root);
}

/* The legacy format's magic number, 0x1950a86a20f9469cfc6c, as LONG1. */
static const unsigned char legacy_magic[10] = {
	0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

/* One sloc per distinct storage key the pickle built, sorted. */
static int storages_of_pickle(struct parse *p)
{
	struct st__report *r = p->r;
	size_t n = 0;
	for (size_t i = 0; i < p->vm.n_all; i++)
		n += p->vm.all[i]->kind == K_STORAGE;
	p->sl = calloc(n ? n : 1, sizeof *p->sl);
	if (!p->sl)
		return ST_ENOMEM;
	for (size_t i = 0; i < p->vm.n_all; i++) {
		const struct obj *o = p->vm.all[i];
		if (o->kind == K_STORAGE)
			p->sl[p->n_sl++] = (struct sloc){.key = o->s, .len = o->len,
			                                 .dtype = o->dtype,
			                                 .data_off = ST__ARC_NOT_IN_PLACE};
	}
	qsort(p->sl, p->n_sl, sizeof *p->sl, sloc_cmp);
	size_t m = 0;
	for (size_t i = 0; i < p->n_sl; i++) {
		if (m && !sloc_cmp(&p->sl[m - 1], &p->sl[i])) {
			if (p->sl[m - 1].dtype != p->sl[i].dtype)
				return BAD("storage '%.*s' is named with two dtypes",
				           (int)(p->sl[i].len > 100 ? 100 : p->sl[i].len),
				           p->sl[i].key);
			continue;
		}
		p->sl[m++] = p->sl[i];
	}
	p->n_sl = m;
	return ST_OK;
}

/*
 * The legacy (pre-1.6) format: five pickles back to back (magic number,
 * protocol version 1001, system info, the object, the sorted storage
 * keys), then each storage in key order as an 8-byte little-endian
 * element count and its little-endian bytes.
 */
static int parse_legacy(struct parse *p)
{
	struct st__report *r = p->r;
	int rc = map_src(p);
	if (rc)
		return rc;
	const unsigned char *m = p->map, *end = p->map + p->src->size;
	struct obj *o;
	vm_at(p, m, end, "legacy pickle");
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_BIGINT || o->len != sizeof legacy_magic ||
	    memcmp(o->s, legacy_magic, sizeof legacy_magic))
		return BAD("a pickle, but not a PyTorch checkpoint (no legacy "
		           "magic number)");
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_INT || o->i != 1001)
		return BAD("legacy checkpoint of protocol version %lld, not 1001",
		           o->kind == K_INT ? (long long)o->i : -1LL);
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_DICT)
		return BAD("legacy checkpoint without its system information");
	if ((rc = run_next(p, &p->root)))
		return rc;
	struct obj *keys;
	if ((rc = run_next(p, &keys)))
		return rc;
	if (keys->kind != K_LIST)
		return BAD("legacy checkpoint without its list of storage keys");
	if ((rc = storages_of_pickle(p)))
		return rc;
	uint64_t at = (uint64_t)(p->vm.p - m);
	for (size_t i = 0; i < keys->n; i++) {
		const char *ks;
		size_t kl;
		if (st__pickle_key(keys->items[i], &ks, &kl))
			return BAD("legacy checkpoint: storage key %zu is not a string",
			           i);
		struct sloc *sl = sloc_find(p, ks, kl);
		if (!sl)
			return BAD("legacy checkpoint: storage '%.*s' is listed but no "
			           "tensor uses it", (int)(kl > 100 ? 100 : kl), ks);
		if (sl->found)
			return BAD("legacy checkpoint: storage '%.*s' is listed twice",
			           (int)(kl > 100 ? 100 : kl), ks);
		uint64_t count, bytes, es = st_dtype_bits(sl->dtype) / 8;
		if (p->src->size - at < 8)
			return BAD("legacy checkpoint: truncated before the bytes of "
			           "storage '%.*s'", (int)(kl > 100 ? 100 : kl), ks);
		count = le64(m + at);
		if (st__mul_u64(count, es, &bytes) || bytes > p->src->size - at - 8)
			return BAD("legacy checkpoint: storage '%.*s' of %llu elements "
			           "runs past the end of the %llu-byte file (truncated?)",
			           (int)(kl > 100 ? 100 : kl), ks,
			           (unsigned long long)count,
			           (unsigned long long)p->src->size);
		sl->found = 1;
		sl->data_off = at + 8;
		sl->bytes = bytes;
		at += 8 + bytes;
	}
	return ST_OK;
}

/* One raw little-endian field of a tar member's records. */
static int take(struct parse *p, size_t n, const unsigned char **at)
{
	if ((size_t)(p->vm.end - p->vm.p) < n)
		return -1;
	*at = p->vm.p;
	p->vm.p += n;
	return 0;
}

/*
 * The tar format (before 0.4): members "storages" (a count, then per
 * storage a pickled (key, location, storage class), an 8-byte element
 * count and the bytes; then the pickled list of storage views), "tensors"
 * (a count, then per tensor a pickled (key, storage key, tensor class) and
 * its ndim, sizes, strides and storage offset as raw integers) and
 * "pickle" (the object, naming tensors by key as persistent ids).
 */
static int parse_tar(struct parse *p)
{
	struct st__report *r = p->r;
	int rc = st__arc_open(&p->z.arc, p->src, ST__ARC_TAR, r);
	if (rc)
		return rc;
	long ms = -1, mt = -1, mp = -1;
	for (size_t i = 0; i < p->z.arc.n; i++) {
		const char *nm = p->z.arc.e[i].name;
		if (!strcmp(nm, "storages"))
			ms = (long)i;
		else if (!strcmp(nm, "tensors"))
			mt = (long)i;
		else if (!strcmp(nm, "pickle"))
			mp = (long)i;
	}
	if (ms < 0 || mt < 0 || mp < 0)
		return BAD("a tar archive without the storages, tensors and pickle "
		           "members of a PyTorch checkpoint");
	const struct st__arc_entry *es = &p->z.arc.e[ms];
	if (es->data_off == ST__ARC_NOT_IN_PLACE)
		return BAD("tar: member 'storages' cannot be read in place");
	if ((rc = map_src(p)))
		return rc;
	/* storages */
	const unsigned char *sb = p->map + es->data_off;
	vm_at(p, sb, sb + es->size, "tar member 'storages'");
	struct obj *o;
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_INT || o->i < 0 || (uint64_t)o->i > es->size / 9)
		return BAD("tar: member 'storages' does not begin with a count");
	size_t n = (size_t)o->i;
	struct sloc *sl = calloc(n ? n : 1, sizeof *sl);
	if (!sl)
		return ST_ENOMEM;
	p->sl = sl;
	for (size_t i = 0; i < n; i++) {
		const char *ks;
		size_t kl;
		const unsigned char *c;
		if ((rc = run_next(p, &o)))
			return rc;
		if (o->kind != K_TUPLE || o->n != 3 || st__pickle_key(o->items[0], &ks, &kl) ||
		    o->items[2]->kind != K_GLOBAL || o->items[2]->i != G_STORAGE)
			return BAD("tar: storage %zu is not (key, location, class)", i);
		st_dtype dt = o->items[2]->dtype;
		uint64_t count, bytes;
		if (take(p, 8, &c) < 0)
			return BAD("tar: member 'storages' is truncated");
		count = le64(c);
		if (st__mul_u64(count, st_dtype_bits(dt) / 8, &bytes) ||
		    bytes > (uint64_t)(p->vm.end - p->vm.p))
			return BAD("tar: storage '%.*s' of %llu elements runs past the "
			           "end of its member (truncated?)",
			           (int)(kl > 100 ? 100 : kl), ks,
			           (unsigned long long)count);
		sl[p->n_sl++] = (struct sloc){
			.key = ks, .len = kl, .dtype = dt, .bytes = bytes, .found = 1,
			.data_off = es->data_off + (uint64_t)(p->vm.p - sb)};
		p->vm.p += bytes;
	}
	struct obj *views;
	if ((rc = run_next(p, &views)))
		return rc;
	if (views->kind != K_LIST)
		return BAD("tar: member 'storages' does not end with its views");
	size_t n_roots = p->n_sl;
	qsort(sl, n_roots, sizeof *sl, sloc_cmp);
	for (size_t i = 1; i < n_roots; i++)
		if (!sloc_cmp(&sl[i - 1], &sl[i]))
			return BAD("tar: storage '%.*s' appears twice",
			           (int)(sl[i].len > 100 ? 100 : sl[i].len), sl[i].key);
	if (views->n) {
		struct sloc *g = realloc(sl, (n_roots + views->n) * sizeof *g);
		if (!g)
			return ST_ENOMEM;
		p->sl = sl = g;
	}
	for (size_t i = 0; i < views->n; i++) {
		/* (view key, root key, offset, numel) in elements of the root. */
		const struct obj *v = views->items[i];
		const char *vk, *rk;
		size_t vl, rl;
		if (v->kind != K_TUPLE || v->n != 4 || st__pickle_key(v->items[0], &vk, &vl) ||
		    st__pickle_key(v->items[1], &rk, &rl) || !st__pickle_ints(v, 2))
			return BAD("tar: storage view %zu is malformed", i);
		struct sloc k = {.key = rk, .len = rl}, *root;
		root = bsearch(&k, sl, n_roots, sizeof *sl, sloc_cmp);
		uint64_t es_ = root ? st_dtype_bits(root->dtype) / 8 : 1;
		uint64_t off = (uint64_t)v->items[2]->i, num = (uint64_t)v->items[3]->i;
		uint64_t ob, nb;
		if (!root || st__mul_u64(off, es_, &ob) || st__mul_u64(num, es_, &nb) ||
		    ob > root->bytes || nb > root->bytes - ob)
			return BAD("tar: storage view %zu lies outside its storage", i);
		sl[p->n_sl++] = (struct sloc){
			.key = vk, .len = vl, .dtype = root->dtype, .bytes = nb,
			.found = 1, .data_off = root->data_off + ob};
	}
	qsort(sl, p->n_sl, sizeof *sl, sloc_cmp);
	for (size_t i = 1; i < p->n_sl; i++)
		if (!sloc_cmp(&sl[i - 1], &sl[i]))
			return BAD("tar: storage '%.*s' appears twice",
			           (int)(sl[i].len > 100 ? 100 : sl[i].len), sl[i].key);

	/* tensors */
	size_t len;
	if ((rc = st__arc_read(&p->z.arc, (size_t)mt, 1ULL << 30, &p->pkl2, &len,
	                       r)))
		return rc;
	vm_at(p, p->pkl2, p->pkl2 + len, "tar member 'tensors'");
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_INT || o->i < 0 || (uint64_t)o->i > len / 16)
		return BAD("tar: member 'tensors' does not begin with a count");
	n = (size_t)o->i;
	p->vm.pid_obj = calloc(n ? n : 1, sizeof *p->vm.pid_obj);
	if (!p->vm.pid_obj)
		return ST_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *tk, *sk;
		size_t tl, skl;
		const unsigned char *c;
		if ((rc = run_next(p, &o)))
			return rc;
		if (o->kind != K_TUPLE || o->n != 3 || st__pickle_key(o->items[0], &tk, &tl) ||
		    st__pickle_key(o->items[1], &sk, &skl))
			return BAD("tar: tensor %zu is not (key, storage, class)", i);
		if (take(p, 8, &c) < 0)
			return BAD("tar: member 'tensors' is truncated");
		uint32_t nd = le32(c);
		if (nd > ST_MAX_DIMS)
			return BAD("tar: tensor '%.*s' has %u dimensions, more than %d",
			           (int)(tl > 100 ? 100 : tl), tk, nd, ST_MAX_DIMS);
		if (take(p, 16 * (size_t)nd + 8, &c) < 0)
			return BAD("tar: member 'tensors' is truncated");
		struct sloc *s = sloc_find(p, sk, skl);
		if (!s)
			return BAD("tar: tensor '%.*s': storage '%.*s' is missing",
			           (int)(tl > 100 ? 100 : tl), tk,
			           (int)(skl > 100 ? 100 : skl), sk);
		struct obj *t = st__pickle_new(&p->vm, K_TENSOR), *st = st__pickle_new(&p->vm, K_STORAGE),
		           *sz = st__pickle_new(&p->vm, K_TUPLE), *sd = st__pickle_new(&p->vm, K_TUPLE);
		if (!t || !st || !sz || !sd)
			return ST_ENOMEM;
		for (uint32_t d = 0; d < nd; d++) {
			struct obj *a = st__pickle_new(&p->vm, K_INT), *b = st__pickle_new(&p->vm, K_INT);
			if (!a || !b || st__pickle_add(&p->vm, sz, a) || st__pickle_add(&p->vm, sd, b))
				return ST_ENOMEM;
			a->i = (int64_t)le64(c + 8 * d);
			b->i = (int64_t)le64(c + 8 * (nd + d));
			if (a->i < 0 || b->i < 0)
				return BAD("tar: tensor '%.*s' has a negative size or stride",
				           (int)(tl > 100 ? 100 : tl), tk);
		}
		int64_t off = (int64_t)le64(c + 16 * nd);
		if (off < 0)
			return BAD("tar: tensor '%.*s' has a negative storage offset",
			           (int)(tl > 100 ? 100 : tl), tk);
		unsigned esz = st_dtype_bits(s->dtype) / 8;
		st->s = sk;
		st->len = skl;
		st->dtype = s->dtype;
		st->i = (int64_t)(s->bytes / esz);
		st->view_n = s->bytes / esz;
		t->storage = st;
		t->dtype = s->dtype;
		t->offset = (uint64_t)off;
		t->size = sz;
		t->stride = sd;
		t->s = tk;
		t->len = tl;
		p->vm.pid_obj[p->vm.n_pid++] = t;
	}
	for (size_t i = 1; i < p->vm.n_pid; i++) {
		/* Insertion into sorted order by key (few tensors per file). */
		struct obj *x = p->vm.pid_obj[i];
		size_t j = i;
		while (j > 0) {
			const struct obj *y = p->vm.pid_obj[j - 1];
			int c = memcmp(y->s, x->s, y->len < x->len ? y->len : x->len);
			if (!c)
				c = y->len < x->len ? -1 : y->len > x->len;
			if (c == 0)
				return BAD("tar: tensor '%.*s' appears twice",
				           (int)(x->len > 100 ? 100 : x->len), x->s);
			if (c < 0)
				break;
			p->vm.pid_obj[j] = p->vm.pid_obj[j - 1];
			j--;
		}
		p->vm.pid_obj[j] = x;
	}
	/* pickle */
	if ((rc = st__arc_read(&p->z.arc, (size_t)mp, 1ULL << 30, &p->pkl, &len,
	                       r)))
		return rc;
	vm_at(p, p->pkl, p->pkl + len, "tar member 'pickle'");
	return run_next(p, &p->root);
}

/* Where storage s's bytes are. */
static int locate(struct parse *p, const struct obj *s, const char *nb,
                  struct sloc *out)
{
	struct st__report *r = p->r;
	int kl = (int)(s->len > 200 ? 200 : s->len);
	if (p->kind == ST__TORCH_ZIP) {
		char key[300];
		snprintf(key, sizeof key, "data/%.*s", kl, s->s);
		long si = zip_find(&p->z, key);
		if (si < 0)
			return BAD("tensor '%s': storage '%s' is missing from the "
			           "archive", nb, key);
		const struct st__arc_entry *e = &p->z.arc.e[si];
		*out = (struct sloc){.key = s->s, .len = s->len,
		                     .data_off = e->data_off, .entry = (size_t)si,
		                     .bytes = e->size, .dtype = s->dtype, .found = 1};
		return ST_OK;
	}
	struct sloc *sl = sloc_find(p, s->s, s->len);
	if (!sl || !sl->found)
		return BAD("tensor '%s': storage '%.*s' is missing from the file",
		           nb, kl, s->s);
	if (sl->dtype != s->dtype)
		return BAD("tensor '%s': storage '%.*s' holds %s, not %s", nb, kl,
		           s->s, st_dtype_name(sl->dtype), st_dtype_name(s->dtype));
	*out = *sl;
	return ST_OK;
}

/* A tensor with its view, sorted together into data order. */
struct rec {
	st_tensor t;
	struct tview v;
	size_t order;        /* position in the pickle */
	size_t storage;      /* identity of its storage */
};

static int by_begin(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;
	if (a->t.begin != b->t.begin)
		return a->t.begin < b->t.begin ? -1 : 1;
	if (a->t.end != b->t.end)
		return a->t.end < b->t.end ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Same storage, first element, dtype, shape and strides: an alias. */
static int by_view(const void *x, const void *y)
{
	const struct rec *a = *(const struct rec *const *)x;
	const struct rec *b = *(const struct rec *const *)y;
#define CMP(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
	CMP(storage);
	CMP(v.first);
	CMP(t.dtype);
	CMP(t.ndim);
	for (unsigned d = 0; d < a->t.ndim; d++) {
		CMP(t.shape[d]);
		CMP(v.stride[d]);
	}
	CMP(order);
#undef CMP
	return 0;
}

static int same_view(const struct rec *a, const struct rec *b)
{
	if (a->storage != b->storage || a->v.first != b->v.first ||
	    a->t.dtype != b->t.dtype || a->t.ndim != b->t.ndim)
		return 0;
	for (unsigned d = 0; d < a->t.ndim; d++)
		if (a->t.shape[d] != b->t.shape[d] || a->v.stride[d] != b->v.stride[d])
			return 0;
	return 1;
}

static int name_order(const st_tensor *a, const st_tensor *b)
{
	size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, m);
	if (c)
		return c;
	return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* A sort record for the name index: it carries the name it sorts by. */
struct by_name_rec {
	const st_tensor *t;
	size_t idx;
};

static int by_name(const void *x, const void *y)
{
	return name_order(((const struct by_name_rec *)x)->t,
	                  ((const struct by_name_rec *)y)->t);
}

/*
 * Resolve tensor f against its storage into rec: shape, view, and where
 * its bytes lie. dims and strides receive its shape and strides.
 */
static int resolve(struct parse *p, const struct found *f, struct rec *o,
                   uint64_t *dims, uint64_t *strides, size_t order)
{
	struct st__report *r = p->r;
	const struct obj *t = f->t, *s = t->storage;
	char nb[256];
	snprintf(nb, sizeof nb, "%s", f->name);
	struct sloc loc;
	int rc = locate(p, s, nb, &loc);
	if (rc)
		return rc;
	o->order = order;
	o->storage = p->kind == ST__TORCH_ZIP ? loc.entry
	             : (size_t)(sloc_find(p, s->s, s->len) - p->sl);
	o->t.dtype = t->dtype;
	o->t.ndim = (unsigned)t->size->n;
	o->t.shape = dims;
	unsigned es = st_dtype_bits(t->dtype) / 8;
	uint64_t count = 1, expect = 1, reach = 0;
	int contiguous = 1;
	for (size_t d = o->t.ndim; d-- > 0;) {
		uint64_t dim = (uint64_t)t->size->items[d]->i;
		uint64_t st = (uint64_t)t->stride->items[d]->i, span;
		dims[d] = dim;
		strides[d] = st;
		if (dim != 1 && st != expect)
			contiguous = 0;
		if (st__mul_u64(expect, dim, &expect) ||
		    st__mul_u64(count, dim, &count))
			return BAD("tensor '%s': shape overflows 64 bits", nb);
		if (dim && (st__mul_u64(dim - 1, st, &span) ||
		            st__add_u64(reach, span, &reach)))
			return BAD("tensor '%s': strides overflow 64 bits", nb);
	}
	/* The storage (a legacy view: a part of it) the tensor may address. */
	uint64_t view_end, view_bytes, first, last, bytes;
	if (st__add_u64(s->offset, s->view_n, &view_end) ||
	    st__mul_u64(view_end, es, &view_bytes) || view_bytes > loc.bytes)
		return BAD("tensor '%s': its storage of %llu elements needs more "
		           "than the %llu bytes the file holds for it", nb,
		           (unsigned long long)view_end,
		           (unsigned long long)loc.bytes);
	/* An empty tensor reads nothing: torch takes any offset for it
	 * (checkInBoundsForStorage), so it is placed at the storage's start. */
	uint64_t toff = count ? (uint64_t)t->offset : 0;
	last = 0;
	if (count && (st__add_u64(toff, reach, &last) || last >= s->view_n))
		return BAD("tensor '%s': offset %llu and strides reach element %llu "
		           "of a storage of %llu elements", nb, (unsigned long long)toff,
		           (unsigned long long)last, (unsigned long long)s->view_n);
	first = s->offset + toff;
	if (st__mul_u64(count, es, &bytes))
		return BAD("tensor '%s': %llu elements overflow 64 bits", nb,
		           (unsigned long long)count);
	/*
	 * Streamed storages are held whole while read: a compressed one
	 * cannot inflate to more than 1032 times the file.
	 */
	if (loc.data_off == ST__ARC_NOT_IN_PLACE &&
	    loc.bytes / 1032 > p->src->size)
		return BAD("tensor '%s': storage '%.*s' claims %llu bytes, more than "
		           "a %llu-byte archive can inflate to", nb,
		           (int)(s->len > 100 ? 100 : s->len), s->s,
		           (unsigned long long)loc.bytes,
		           (unsigned long long)p->src->size);
	/*
	 * Stride 0 lets a few bytes of storage stand for any number: the
	 * contiguous form of a view may outgrow its storage, but not by more
	 * than 64 MiB past the storage or the file (an expanded bias or
	 * position ids), or a tiny file would make a converter write, and
	 * st_file_data allocate, without bound.
	 */
	uint64_t room = loc.bytes > p->src->size ? loc.bytes : p->src->size;
	if (bytes > room && bytes - room > (64u << 20))
		return BAD("tensor '%s': its contiguous form would be %llu bytes, "
		           "from a storage of %llu in a %llu-byte file (an "
		           "expanded view?)", nb, (unsigned long long)bytes,
		           (unsigned long long)loc.bytes,
		           (unsigned long long)p->src->size);
	int in_place = loc.data_off != ST__ARC_NOT_IN_PLACE;
	uint64_t base = in_place ? loc.data_off : 0;
	o->t.n_elements = count;
	o->t.n_bytes = bytes;
	o->t.begin = in_place ? base + first * es : 0;
	o->v = (struct tview){
		.data_off = loc.data_off, .entry = loc.entry, .st_bytes = loc.bytes,
		.first = first, .size = dims, .stride = strides, .ndim = o->t.ndim,
		.esize = es, .n_bytes = bytes, .swap = p->swap && es > 1,
		.alias_of = -1};
	o->v.plain = count == 0 || (contiguous && !o->v.swap &&
	                            loc.data_off != ST__ARC_NOT_IN_PLACE);
	/*
	 * A view's [begin, end): the bytes of the file it reads (none when
	 * its storage is compressed).
	 */
	o->t.end = o->v.plain ? o->t.begin + bytes
	           : in_place && count ? base + (s->offset + last + 1) * es
	                               : o->t.begin;
	return ST_OK;
}

/*
 * Storages read through libarchive (compressed ones, rare) are inflated
 * once at open, into nothing, in one pass, so that a bad CRC, a wrong
 * size or a truncation is found before any tensor is handed out.
 */
static int check_streamed(struct parse *p, const struct rec *recs, size_t n)
{
	unsigned char *want = calloc(p->z.arc.n ? p->z.arc.n : 1, 1);
	if (!want)
		return ST_ENOMEM;
	int any = 0;
	for (size_t i = 0; i < n; i++)
		if (recs[i].v.data_off == ST__ARC_NOT_IN_PLACE &&
		    recs[i].t.n_elements)
			any = want[recs[i].v.entry] = 1;
	int rc = any ? st__arc_verify(&p->z.arc, want, p->r) : ST_OK;
	free(want);
	return rc;
}

static void parse_free(struct parse *p)
{
	for (size_t i = 0; i < p->vm.n_all; i++) {
		free(p->vm.all[i]->items);
		free(p->vm.all[i]);
	}
	free(p->vm.all);
	free(p->vm.stack);
	free(p->vm.memo);
	free(p->vm.pid_obj);
	free(p->sl);
	free(p->pkl);
	free(p->pkl2);
	if (p->mapped)
		munmap(p->mapped, (size_t)p->src->size);
	free(p->z.by_suffix);
}

int st__torch_parse(struct st__header *h, struct st__torch **out,
                    const struct st__src *src, int kind, struct st__report *r)
{
	struct parse p = {.r = r, .src = src, .kind = kind};
	struct collect col = {0};
	struct rec *recs = NULL;
	uint64_t *strides = NULL;
	struct st__torch *tt = NULL;
	memset(h, 0, sizeof *h);
	*out = NULL;
	p.vm.r = r;

	int rc = kind == ST__TORCH_ZIP      ? parse_zip(&p)
	         : kind == ST__TORCH_LEGACY ? parse_legacy(&p)
	                                    : parse_tar(&p);
	if (rc) {
		if (p.vm.toobig)
			rc = BAD("%s: the pickle builds more than %zu MiB of objects; "
			         "refusing it", p.vm.what, MAX_CELLS * 8 >> 20);
		goto out;
	}
	if (p.root->kind != K_DICT) {
		rc = BAD("%s: the checkpoint is not a dictionary of tensors",
		         p.vm.what);
		goto out;
	}
	struct st__buf key = {0}, top = {0}, top_at = {0};
	int key_auto = 0;
	struct obj *d = p.root;
	rc = st__torch_select(r, &d, &key, &key_auto, &top, &top_at);
	if (rc == ST_OK && d != p.root)
		/* The checkpoint's other entries are left out too. */
		for (size_t i = 0; i + 1 < p.root->n; i += 2)
			if (p.root->items[i]->kind == K_STR &&
			    (key.len < p.root->items[i]->len ||
			     memcmp(key.data, p.root->items[i]->s,
			            p.root->items[i]->len) ||
			     (key.len > p.root->items[i]->len &&
			      key.data[p.root->items[i]->len] != '.')))
				st__torch_skip(&col, p.root->items[i]->s, p.root->items[i]->len);
	if (rc == ST_OK)
		rc = st__torch_walk(&col, d, "", 0, 0, r);
	if (rc == ST_OK && (key.failed || top.failed || col.skipped.failed ||
	                    top_at.failed || col.skipped_at.failed))
		rc = ST_ENOMEM;
	if (rc == ST_OK && !(tt = calloc(1, sizeof *tt)))
		rc = ST_ENOMEM;
	if (tt)
		pthread_mutex_init(&tt->lock, NULL);
	if (rc) {
		st__buf_free(&key);
		st__buf_free(&top);
		st__buf_free(&top_at);
		goto out;
	}
	tt->key = key;
	tt->top = top;
	tt->skipped = col.skipped;
	memset(&col.skipped, 0, sizeof col.skipped);
	int nomem = 0;
	size_t n_key_list, n_skipped_list;
	tt->key_list = st__torch_names(&tt->top, &top_at, &n_key_list, &nomem);
	tt->skipped_list = st__torch_names(&tt->skipped, &col.skipped_at, &n_skipped_list, &nomem);
	st__buf_free(&top_at);
	if (nomem) {
		rc = ST_ENOMEM;
		goto out;
	}
	tt->info = (st_torch_info){
		.key = key.len ? key.data : NULL, .key_auto = key_auto,
		.keys = top.data ? top.data : "",
		.n_skipped = col.n_skipped,
		.skipped = tt->skipped.data ? tt->skipped.data : "",
		.key_list = tt->key_list, .n_key_list = n_key_list,
		.skipped_list = tt->skipped_list, .n_skipped_list = n_skipped_list};

	size_t n = col.n, n_dims = 0, names = 0;
	for (size_t i = 0; i < n; i++) {
		/* Checked before the sum: one size tuple may serve many tensors. */
		if (col.f[i].t->size->n > ST_MAX_DIMS) {
			char nb[256];
			snprintf(nb, sizeof nb, "%s", col.f[i].name);
			rc = BAD("tensor '%s': %zu dimensions, more than %d", nb,
			         col.f[i].t->size->n, ST_MAX_DIMS);
			goto out;
		}
		n_dims += col.f[i].t->size->n;
		names += col.f[i].name_len + 1;
	}
	recs = calloc(n ? n : 1, sizeof *recs);
	h->tensors = calloc(n ? n : 1, sizeof *h->tensors);
	h->by_name = malloc((n ? n : 1) * sizeof *h->by_name);
	h->dims = malloc((n_dims ? n_dims : 1) * sizeof *h->dims);
	h->arena = malloc(names ? names : 1);
	strides = malloc((n_dims ? n_dims : 1) * sizeof *strides);
	tt->strides = strides;
	strides = NULL;
	if (!recs || !h->tensors || !h->by_name || !h->dims || !h->arena ||
	    !tt || !tt->strides) {
		rc = ST_ENOMEM;
		goto out;
	}
	size_t di = 0, ai = 0;
	for (size_t i = 0; i < n; i++) {
		struct rec *o = &recs[i];
		if ((rc = resolve(&p, &col.f[i], o, h->dims + di, tt->strides + di,
		                  i)))
			goto out;
		memcpy(h->arena + ai, col.f[i].name, col.f[i].name_len + 1);
		o->t.name = h->arena + ai;
		o->t.name_len = col.f[i].name_len;
		ai += col.f[i].name_len + 1;
		di += o->t.ndim;
	}
	/*
	 * And all views together: views of one storage each make their own
	 * copy, so a small file could still stand for a huge output.
	 */
	uint64_t gathered = 0, cap = p.src->size;
	if (st__mul_u64(cap, 16, &cap) || st__add_u64(cap, 256u << 20, &cap))
		cap = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (!recs[i].v.plain &&
		    st__add_u64(gathered, recs[i].t.n_bytes, &gathered))
			gathered = UINT64_MAX;
	if (gathered > cap) {
		rc = BAD("the views' contiguous forms add up to %llu bytes, more "
		         "than 16 times the %llu-byte file and 256 MiB",
		         (unsigned long long)gathered,
		         (unsigned long long)p.src->size);
		goto out;
	}
	qsort(recs, n, sizeof *recs, by_begin);
	/*
	 * A full check (r->fn set) reads every member through libarchive:
	 * the CRC of each storage read in place, too. An open checks only
	 * those it must inflate.
	 */
	if (r->fn && kind != ST__TORCH_LEGACY)
		rc = st__arc_verify(&p.z.arc, NULL, r);
	else
		rc = check_streamed(&p, recs, n);
	if (rc)
		goto out;

	/*
	 * Identical aliases: each points at the first of its group in the
	 * pickle's order (by_view sorts a group by it).
	 */
	struct rec **av = malloc((n ? n : 1) * sizeof *av);
	if (!av) {
		rc = ST_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		av[i] = &recs[i];
	qsort(av, n, sizeof *av, by_view);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		for (; j < n && same_view(av[i], av[j]); j++)
			if (av[j]->t.n_elements)
				av[j]->v.alias_of = (long)(av[i] - recs);
		i = j;
	}
	free(av);

	tt->v = malloc((n ? n : 1) * sizeof *tt->v);
	if (!tt->v) {
		rc = ST_ENOMEM;
		goto out;
	}
	tt->n_views = n;
	for (size_t i = 0; i < n; i++) {
		h->tensors[i] = recs[i].t;
		tt->v[i] = recs[i].v;
	}
	h->n_tensors = n;
	struct by_name_rec *nr = malloc((n ? n : 1) * sizeof *nr);
	if (!nr) {
		rc = ST_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		nr[i] = (struct by_name_rec){&h->tensors[i], i};
	qsort(nr, n, sizeof *nr, by_name);
	for (size_t i = 0; i < n; i++)
		h->by_name[i] = nr[i].idx;
	free(nr);
	for (size_t i = 1; i < n; i++)
		if (name_order(&h->tensors[h->by_name[i - 1]],
		               &h->tensors[h->by_name[i]]) == 0) {
			rc = BAD("tensor '%s' appears twice after flattening nested "
			         "dictionaries", h->tensors[h->by_name[i]].name);
			goto out;
		}
	tt->kind = kind;
	tt->src = *src;
	if (!(tt->crc_state = calloc(p.z.arc.n ? p.z.arc.n : 1, 1))) {
		rc = ST_ENOMEM;
		goto out;
	}
	tt->arc = p.z.arc;
	tt->arc.src = &tt->src;
	memset(&p.z.arc, 0, sizeof p.z.arc);
	*out = tt;
	tt = NULL;
out:
	if (rc == ST_ENOMEM || p.vm.nomem) {
		rc = ST_ENOMEM;
		st__error(r->err, ST_ENOMEM, "%s: out of memory", r->path);
	}
	for (size_t i = 0; i < col.n; i++)
		free(col.f[i].name);
	free(col.f);
	st__buf_free(&col.skipped);
	st__buf_free(&col.skipped_at);
	free(recs);
	free(strides);
	st__torch_free(tt);
	st__arc_free(&p.z.arc);
	parse_free(&p);
	if (rc)
		st__header_free(h);
	return rc;
}
