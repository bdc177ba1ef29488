/*
 * gguf.c - read one GGUF file (llama.cpp's format, versions 2 and 3): its
 * metadata, its tensor infos with their ggml types, and the tensor data as
 * borrowed views into a read-only mapping.
 *
 * It does not write GGUF files (gguf_write.c) and knows nothing of any
 * architecture; the ggml type table and the row codecs are in
 * ggml_types.c.
 *
 * The whole file is mapped at open and the header is parsed in place, so
 * opening touches only the header's pages: a 300 GB file opens as fast as
 * a small one. Every count, length and offset is checked against the bytes
 * left in the file before it is used for an allocation, a pointer or a
 * loop bound: a count of n elements is accepted only if n times the
 * smallest encoding of one element fits in what is left. Allocation is
 * therefore bounded by a small multiple of the file's size.
 *
 * The rules are the spec's (ggml's docs/gguf.md). Where ggml's loader
 * (gguf_init_from_file, ggml/src/gguf.cpp) is stricter than the spec, the
 * file opens and checking warns "llama.cpp will refuse this: ..."; where
 * the spec is stricter than ggml and gguf-py (bool bytes, ASCII keys),
 * likewise a warning. Strings are checked for UTF-8 only when checking,
 * so that opening reads no more than the header's structure.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the handle ------------------------------------------------------------ */

/* Allocations made while parsing, freed together. */
struct chunk {
	struct chunk *next;
	max_align_t data[];
};

struct st_gguf {
	char *path;
	int fd;                   /* -1 for memory files */
	const unsigned char *base;
	void *map;
	size_t map_len;
	uint64_t size;
	unsigned version;
	uint64_t alignment, data_offset;
	st_gguf_kv *kv;
	size_t n_kv;
	st_gguf_tensor *t;
	size_t n_t;
	const st_gguf_kv **kv_by_key;       /* sorted by key */
	const st_gguf_tensor **t_by_name;   /* sorted by name */
	struct chunk *chunks;
	/*
	 * A split set (gguf_split.c, st__gguf_join): the parts, which own
	 * their files; kv is parts[0]'s, t[i] lies in parts[t_part[i]].
	 */
	st_gguf **parts;
	size_t n_parts;
	size_t *t_part;
};

static void *g_alloc(st_gguf *g, size_t n)
{
	if (n > SIZE_MAX - sizeof(struct chunk))
		return NULL;
	struct chunk *c = calloc(1, sizeof *c + (n ? n : 1));
	if (!c)
		return NULL;
	c->next = g->chunks;
	g->chunks = c;
	return c->data;
}

const char *st_gguf_type_name(int type)
{
	static const char *const names[ST_GGUF_TYPE_COUNT] = {
		"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
		"bool", "string", "array", "uint64", "int64", "float64"};
	return type >= 0 && type < ST_GGUF_TYPE_COUNT ? names[type] : NULL;
}

/* Bytes of one scalar of this type; 0 for STRING and ARRAY. */
static unsigned scalar_size(int type)
{
	static const unsigned char sz[ST_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4,
	                                                     4, 1, 0, 0, 8, 8, 8};
	return sz[type];
}

/* The least number of bytes one value of this type takes in a file. */
static unsigned min_size(int type)
{
	if (type == ST_GGUF_STRING)
		return 8;
	if (type == ST_GGUF_ARRAY)
		return 12;
	return scalar_size(type);
}

static uint64_t le(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* Decode one scalar at p into out (type already set). */
static void scalar_decode(st_gguf_value *out, const unsigned char *p)
{
	unsigned n = scalar_size(out->type);
	uint64_t u = le(p, n);
	switch (out->type) {
	case ST_GGUF_INT8: out->v.i = (int8_t)u; break;
	case ST_GGUF_INT16: out->v.i = (int16_t)u; break;
	case ST_GGUF_INT32: out->v.i = (int32_t)u; break;
	case ST_GGUF_INT64: out->v.i = (int64_t)u; break;
	case ST_GGUF_FLOAT32: {
		uint32_t b = (uint32_t)u;
		float f;
		memcpy(&f, &b, 4);
		out->v.f = f;
		break;
	}
	case ST_GGUF_FLOAT64: memcpy(&out->v.f, &u, 8); break;
	default: out->v.u = u; break;
	}
}

void st_gguf_array_get(const st_gguf_value *arr, uint64_t i, st_gguf_value *out)
{
	memset(out, 0, sizeof *out);
	out->type = arr->elem_type;
	if (arr->elem_type == ST_GGUF_STRING || arr->elem_type == ST_GGUF_ARRAY) {
		*out = arr->v.vals[i];
		return;
	}
	scalar_decode(out, (const unsigned char *)arr->v.raw +
	                       i * scalar_size(arr->elem_type));
}

/* ---- parsing --------------------------------------------------------------- */

struct parser {
	st_gguf *g;
	struct st__report *r;
	const unsigned char *p; /* the file */
	uint64_t pos, size;
	int nomem;
};

/* 1 when n more bytes are in the file, else 0. */
static int have(const struct parser *ps, uint64_t n)
{
	return n <= ps->size - ps->pos;
}

static uint64_t left(const struct parser *ps) { return ps->size - ps->pos; }

static uint64_t take(struct parser *ps, unsigned n)
{
	uint64_t v = le(ps->p + ps->pos, n);
	ps->pos += n;
	return v;
}

static int nomem(struct parser *ps)
{
	ps->nomem = 1;
	return st__error(ps->r->err, ST_ENOMEM, "%s: out of memory", ps->r->path);
}

/* ggml's loader refuses strings and arrays longer than this (gguf.cpp). */
#define GGML_MAX_LENGTH ((uint64_t)1 << 30)

/* What a message names: "<kind> '<name>'", or "<kind> <index>" when name
 * is NULL ("key 3", "key 'a.b'", "tensor 0"). */
static void describe(char *what, size_t cap, const char *kind,
                     const char *name, uint64_t index)
{
	if (name)
		snprintf(what, cap, "%s '%s'", kind, name);
	else
		snprintf(what, cap, "%s %llu", kind, (unsigned long long)index);
}

/*
 * Read a string header at the cursor: its length must fit in the file
 * (messages name the string as describe does).
 */
static int read_string(struct parser *ps, const char **s, uint64_t *len,
                       const char *kind, const char *name, uint64_t index)
{
	char what[1100];
	if (!have(ps, 8)) {
		describe(what, sizeof what, kind, name, index);
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "%s: string length at byte %llu runs past the end of the "
		           "file (%llu bytes)", what, (unsigned long long)ps->pos,
		           (unsigned long long)ps->size);
		return ST_EFORMAT;
	}
	uint64_t n = take(ps, 8);
	if (n > left(ps)) {
		describe(what, sizeof what, kind, name, index);
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "%s: string of %llu bytes at byte %llu runs past the end "
		           "of the file (%llu bytes left)", what,
		           (unsigned long long)n, (unsigned long long)ps->pos,
		           (unsigned long long)left(ps));
		return ST_EFORMAT;
	}
	if (n > GGML_MAX_LENGTH) {
		describe(what, sizeof what, kind, name, index);
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "llama.cpp will refuse this: %s: string of %llu bytes "
		           "(ggml reads at most 2^30)", what, (unsigned long long)n);
	}
	*s = (const char *)ps->p + ps->pos;
	*len = n;
	ps->pos += n;
	return ST_OK;
}

static int parse_value(struct parser *ps, st_gguf_value *out, int type,
                       int depth, const char *key);

/* An array's body (element type and count at the cursor). */
static int parse_array(struct parser *ps, st_gguf_value *out, int depth,
                       const char *key)
{
	if (depth > ST_GGUF_MAX_DEPTH) {
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "key '%s': arrays nested deeper than %d", key,
		           ST_GGUF_MAX_DEPTH);
		return ST_EFORMAT;
	}
	if (!have(ps, 12)) {
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "key '%s': array header at byte %llu runs past the end of "
		           "the file (%llu bytes)", key, (unsigned long long)ps->pos,
		           (unsigned long long)ps->size);
		return ST_EFORMAT;
	}
	uint64_t et = take(ps, 4);
	uint64_t n = take(ps, 8);
	if (et >= ST_GGUF_TYPE_COUNT) {
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "key '%s': unknown array element type %llu", key,
		           (unsigned long long)et);
		return ST_EFORMAT;
	}
	out->elem_type = (int)et;
	out->n = n;
	unsigned m = min_size((int)et);
	if (n > left(ps) / m) {
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "key '%s': array of %llu %s elements needs at least %llu "
		           "bytes, the file has %llu left", key,
		           (unsigned long long)n, st_gguf_type_name((int)et),
		           n > UINT64_MAX / m ? (unsigned long long)UINT64_MAX
		                              : (unsigned long long)(n * m),
		           (unsigned long long)left(ps));
		return ST_EFORMAT;
	}
	if (n > GGML_MAX_LENGTH)
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "llama.cpp will refuse this: key '%s': array of %llu "
		           "elements (ggml reads at most 2^30)", key,
		           (unsigned long long)n);
	if (m == scalar_size((int)et)) {
		out->v.raw = ps->p + ps->pos;
		if (et == ST_GGUF_BOOL)
			for (uint64_t i = 0; i < n; i++)
				if (ps->p[ps->pos + i] > 1) {
					st__report(ps->r, ST_PROBLEM_WARNING,
					           "key '%s': element %llu: bool value %u (the "
					           "spec says 0 or 1; ggml and gguf-py read any "
					           "other byte as true)", key,
					           (unsigned long long)i, ps->p[ps->pos + i]);
					break;
				}
		ps->pos += n * m;
		return ST_OK;
	}
	/* n * m <= the file's size, so this allocation is bounded by it. */
	st_gguf_value *vals = n ? g_alloc(ps->g, (size_t)n * sizeof *vals) : NULL;
	if (n && !vals)
		return nomem(ps);
	out->v.vals = vals;
	for (uint64_t i = 0; i < n; i++) {
		int rc = parse_value(ps, &vals[i], (int)et, depth + 1, key);
		if (rc)
			return rc;
	}
	return ST_OK;
}

static int parse_value(struct parser *ps, st_gguf_value *out, int type,
                       int depth, const char *key)
{
	out->type = type;
	if (type == ST_GGUF_STRING) {
		const char *s;
		uint64_t n;
		int rc = read_string(ps, &s, &n, "key", key, 0);
		out->v.s = s;
		out->n = n;
		return rc;
	}
	if (type == ST_GGUF_ARRAY)
		return parse_array(ps, out, depth, key);
	unsigned sz = scalar_size(type);
	if (!have(ps, sz)) {
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "key '%s': %s value at byte %llu runs past the end of the "
		           "file (%llu bytes)", key, st_gguf_type_name(type),
		           (unsigned long long)ps->pos, (unsigned long long)ps->size);
		return ST_EFORMAT;
	}
	scalar_decode(out, ps->p + ps->pos);
	if (type == ST_GGUF_BOOL && out->v.u > 1)
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "key '%s': bool value %llu (the spec says 0 or 1; ggml "
		           "and gguf-py read any other byte as true)", key,
		           (unsigned long long)out->v.u);
	ps->pos += sz;
	return ST_OK;
}

/* Copy n bytes to a NUL-terminated string owned by g. */
static char *g_strndup(st_gguf *g, const char *s, size_t n)
{
	if (n >= SIZE_MAX - sizeof(struct chunk))
		return NULL;
	char *d = g_alloc(g, n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

/* A key or name for a message: printable ASCII, cut at 200 bytes. */
static void printable(char *dst, size_t cap, const char *s, uint64_t n)
{
	size_t j = 0;
	for (uint64_t i = 0; i < n && j + 5 < cap && i < 200; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f) {
			dst[j++] = (char)c;
		} else {
			static const char hex[] = "0123456789abcdef";
			dst[j++] = '\\';
			dst[j++] = 'x';
			dst[j++] = hex[c >> 4];
			dst[j++] = hex[c & 15];
		}
	}
	if (n > 200 && j + 4 < cap) {
		memcpy(dst + j, "...", 3);
		j += 3;
	}
	dst[j] = 0;
}

/*
 * A table of n records of elem bytes each, for n entries of the file that
 * take at least min_bytes each: refused before any allocation when they
 * cannot fit in what is left of the file ("<what> N cannot fit in the M
 * bytes after <after> (each <each> takes at least K)").
 */
static int alloc_table(struct parser *ps, void **out, uint64_t n, size_t elem,
                       uint64_t min_bytes, const char *what, const char *after,
                       const char *each)
{
	if (n > left(ps) / min_bytes) {
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "%s %llu cannot fit in the %llu bytes after %s (each %s "
		           "takes at least %llu)", what, (unsigned long long)n,
		           (unsigned long long)left(ps), after, each,
		           (unsigned long long)min_bytes);
		return ST_EFORMAT;
	}
	*out = g_alloc(ps->g, (size_t)n * elem);
	if (n && !*out)
		return nomem(ps);
	return ST_OK;
}

/* 0 for a UTF-8 string, else 1 and *at its first bad byte. */
static int not_utf8(const char *s, uint64_t n, uint64_t *at)
{
	size_t bad = 0;
	if (st__utf8_valid(s, (size_t)n, &bad))
		return 0;
	*at = bad;
	return 1;
}

/*
 * The spec's strings are UTF-8: warn once per key whose string value, or
 * a string anywhere in whose array, is not. Returns 1 once warned.
 */
static int check_value_utf8(struct parser *ps, const st_gguf_value *v,
                            const char *key)
{
	uint64_t at;
	if (v->type == ST_GGUF_STRING) {
		if (!not_utf8(v->v.s, v->n, &at))
			return 0;
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "key '%s': string value not valid UTF-8 (byte %llu is "
		           "0x%02x)", key, (unsigned long long)at,
		           (unsigned char)v->v.s[at]);
		return 1;
	}
	if (v->type != ST_GGUF_ARRAY ||
	    (v->elem_type != ST_GGUF_STRING && v->elem_type != ST_GGUF_ARRAY))
		return 0;
	for (uint64_t i = 0; i < v->n; i++) {
		const st_gguf_value *e = &v->v.vals[i];
		if (e->type == ST_GGUF_ARRAY) {
			if (check_value_utf8(ps, e, key))
				return 1;
		} else if (not_utf8(e->v.s, e->n, &at)) {
			st__report(ps->r, ST_PROBLEM_WARNING,
			           "key '%s': element %llu not valid UTF-8 (byte %llu "
			           "is 0x%02x)", key, (unsigned long long)i,
			           (unsigned long long)at, (unsigned char)e->v.s[at]);
			return 1;
		}
	}
	return 0;
}

/*
 * A key the spec frowns on but ggml and gguf-py read: longer than 65535
 * bytes, not valid UTF-8, not ASCII, or holding a NUL. One warning each.
 */
static void check_key(struct parser *ps, const char *s, uint64_t klen,
                      const char *key, uint64_t i)
{
	uint64_t at;
	if (klen > 65535)
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "key %llu: %llu bytes long (the spec allows at most "
		           "65535; ggml and gguf-py read it)",
		           (unsigned long long)i, (unsigned long long)klen);
	if (not_utf8(s, klen, &at)) {
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "key '%s': not valid UTF-8 (byte %llu is 0x%02x)", key,
		           (unsigned long long)at, (unsigned char)s[at]);
		return;
	}
	for (uint64_t j = 0; j < klen; j++)
		if ((unsigned char)s[j] >= 0x80 || s[j] == 0) {
			st__report(ps->r, ST_PROBLEM_WARNING,
			           "key '%s': %s (byte %llu is 0x%02x): the spec asks "
			           "for ASCII keys; ggml and gguf-py read it", key,
			           s[j] ? "not ASCII" : "holds a NUL",
			           (unsigned long long)j, (unsigned char)s[j]);
			return;
		}
}

static int parse_kvs(struct parser *ps, uint64_t n_kv)
{
	st_gguf *g = ps->g;
	/* Each pair takes at least 8 (key length) + 4 (type) + 1 bytes. */
	int rc = alloc_table(ps, (void **)&g->kv, n_kv, sizeof *g->kv, 13, "metadata count",
	                     "the header", "pair");
	if (rc)
		return rc;
	for (uint64_t i = 0; i < n_kv; i++) {
		char key[1024];
		const char *s;
		uint64_t klen;
		rc = read_string(ps, &s, &klen, "key", NULL, i);
		if (rc)
			return rc;
		printable(key, sizeof key, s, klen);
		/*
		 * Key rules. An empty key is refused (ggml refuses it too). The
		 * spec's ASCII and 65535-byte limits are warnings: ggml and
		 * gguf-py read such keys.
		 */
		if (klen == 0) {
			st__report(ps->r, ST_PROBLEM_ERROR, "key %llu is empty",
			           (unsigned long long)i);
			if (st__report_stop(ps->r))
				return ST_EFORMAT;
		} else {
			check_key(ps, s, klen, key, i);
		}
		st_gguf_kv *kv = &g->kv[i];
		if (!(kv->key = g_strndup(g, s, (size_t)klen)))
			return nomem(ps);
		kv->key_len = (size_t)klen;
		if (!have(ps, 4)) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "key '%s': value type at byte %llu runs past the end "
			           "of the file (%llu bytes)", key,
			           (unsigned long long)ps->pos,
			           (unsigned long long)ps->size);
			return ST_EFORMAT;
		}
		uint64_t type = take(ps, 4);
		if (type >= ST_GGUF_TYPE_COUNT) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "key '%s': unknown value type %llu", key,
			           (unsigned long long)type);
			return ST_EFORMAT;
		}
		rc = parse_value(ps, &kv->value, (int)type, 1, key);
		if (rc)
			return rc;
		g->n_kv = (size_t)i + 1;
		if (kv->value.type == ST_GGUF_ARRAY &&
		    kv->value.elem_type == ST_GGUF_ARRAY)
			st__report(ps->r, ST_PROBLEM_WARNING,
			           "llama.cpp will refuse this: key '%s' is an array of "
			           "arrays (ggml reads no nested arrays)", key);
		/* Only a check reads every string (opening stays header-only). */
		if (ps->r->fn)
			check_value_utf8(ps, &kv->value, key);
	}
	return ST_OK;
}

static int cmp_kv(const void *a, const void *b)
{
	const st_gguf_kv *x = *(const st_gguf_kv *const *)a;
	const st_gguf_kv *y = *(const st_gguf_kv *const *)b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);
	if (c)
		return c;
	return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

static int cmp_tensor_name(const void *a, const void *b)
{
	const st_gguf_tensor *x = *(const st_gguf_tensor *const *)a;
	const st_gguf_tensor *y = *(const st_gguf_tensor *const *)b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	if (c)
		return c;
	return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int cmp_tensor_offset(const void *a, const void *b)
{
	const st_gguf_tensor *x = *(const st_gguf_tensor *const *)a;
	const st_gguf_tensor *y = *(const st_gguf_tensor *const *)b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Duplicate keys, and general.alignment. */
static int check_kvs(struct parser *ps)
{
	st_gguf *g = ps->g;
	g->kv_by_key = g_alloc(g, g->n_kv * sizeof *g->kv_by_key);
	if (!g->kv_by_key)
		return nomem(ps);
	for (size_t i = 0; i < g->n_kv; i++)
		g->kv_by_key[i] = &g->kv[i];
	qsort(g->kv_by_key, g->n_kv, sizeof *g->kv_by_key, cmp_kv);
	for (size_t i = 1; i < g->n_kv; i++)
		if (!cmp_kv(&g->kv_by_key[i - 1], &g->kv_by_key[i])) {
			char key[1024];
			printable(key, sizeof key, g->kv_by_key[i]->key,
			          g->kv_by_key[i]->key_len);
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "key '%s' appears more than once", key);
			if (st__report_stop(ps->r))
				return ST_EFORMAT;
		}
	g->alignment = ST_GGUF_DEFAULT_ALIGNMENT;
	long a = st_gguf_find_kv(g, "general.alignment");
	if (a >= 0) {
		const st_gguf_value *v = &g->kv[a].value;
		if (v->type != ST_GGUF_UINT32) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "key 'general.alignment': type %s, expected uint32",
			           st_gguf_type_name(v->type));
		} else if (v->v.u == 0 || (v->v.u & (v->v.u - 1))) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "key 'general.alignment': %llu is not a power of two",
			           (unsigned long long)v->v.u);
		} else {
			/* 1, 2 and 4 break the spec's rule, not ggml's. */
			if (v->v.u < 8)
				st__report(ps->r, ST_PROBLEM_WARNING,
				           "key 'general.alignment': %llu is not a multiple "
				           "of 8 (the spec requires one; ggml and gguf-py "
				           "read it)", (unsigned long long)v->v.u);
			g->alignment = v->v.u;
		}
		if (st__report_stop(ps->r))
			return ST_EFORMAT;
	}
	return ST_OK;
}

/*
 * A tensor name: at most 64 bytes (the spec), which ggml, keeping names in
 * char[GGML_MAX_NAME = 64] with their NUL, reads only up to 63; UTF-8.
 * Returns 1 when parsing must stop.
 */
static int check_name(struct parser *ps, const char *s, uint64_t nlen,
                      const char *name)
{
	if (nlen > 64) {
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "tensor '%s': name of %llu bytes (at most 64)", name,
		           (unsigned long long)nlen);
		if (st__report_stop(ps->r))
			return 1;
	} else if (nlen == 64) {
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "llama.cpp will refuse this: tensor '%s': name of 64 "
		           "bytes (the spec allows 64, ggml at most 63)", name);
	}
	uint64_t at;
	if (ps->r->fn && not_utf8(s, nlen, &at))
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "tensor '%s': name not valid UTF-8 (byte %llu is 0x%02x)",
		           name, (unsigned long long)at, (unsigned char)s[at]);
	return 0;
}

static int parse_tensors(struct parser *ps, uint64_t n_t)
{
	st_gguf *g = ps->g;
	/* name length 8, n_dims 4, type 4, offset 8. */
	int rc = alloc_table(ps, (void **)&g->t, n_t, sizeof *g->t, 24, "tensor count",
	                     "the metadata", "tensor info");
	if (rc)
		return rc;
	for (uint64_t i = 0; i < n_t; i++) {
		char name[1024];
		const char *s;
		uint64_t nlen;
		rc = read_string(ps, &s, &nlen, "tensor", NULL, i);
		if (rc)
			return rc;
		printable(name, sizeof name, s, nlen);
		st_gguf_tensor *t = &g->t[i];
		if (!(t->name = g_strndup(g, s, (size_t)nlen)))
			return nomem(ps);
		t->name_len = (size_t)nlen;
		if (check_name(ps, s, nlen, name))
			return ST_EFORMAT;
		if (!have(ps, 4)) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': n_dims at byte %llu runs past the end of "
			           "the file (%llu bytes)", name,
			           (unsigned long long)ps->pos,
			           (unsigned long long)ps->size);
			return ST_EFORMAT;
		}
		uint64_t nd = take(ps, 4);
		if (nd > ST_GGUF_MAX_DIMS) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': %llu dimensions (at most %d)", name,
			           (unsigned long long)nd, ST_GGUF_MAX_DIMS);
			return ST_EFORMAT;
		}
		if (!have(ps, nd * 8 + 12)) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': info at byte %llu runs past the end of "
			           "the file (%llu bytes)", name,
			           (unsigned long long)ps->pos,
			           (unsigned long long)ps->size);
			return ST_EFORMAT;
		}
		t->ndim = (unsigned)nd;
		uint64_t ne = 1;
		int bad = 0;
		for (unsigned d = 0; d < ST_GGUF_MAX_DIMS; d++) {
			t->dims[d] = d < nd ? take(ps, 8) : 1;
			if (t->dims[d] > INT64_MAX || st__mul_u64(ne, t->dims[d], &ne) ||
			    ne > INT64_MAX)
				bad = 1;
		}
		t->type = (unsigned)take(ps, 4);
		t->offset = take(ps, 8);
		g->n_t = (size_t)i + 1;
		/* Shape and type. */
		if (bad) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': dimensions [%llu, %llu, %llu, %llu] "
			           "overflow a 64-bit element count", name,
			           (unsigned long long)t->dims[0],
			           (unsigned long long)t->dims[1],
			           (unsigned long long)t->dims[2],
			           (unsigned long long)t->dims[3]);
			if (st__report_stop(ps->r))
				return ST_EFORMAT;
			t->type = UINT32_MAX;  /* no size: skip the data checks */
			continue;
		}
		t->n_elements = ne;
		unsigned blk, bytes;
		if (st_ggml_type_block(t->type, &blk, &bytes)) {
			/*
			 * A type from a newer ggml (or a removed one) is not fatal:
			 * the tensor is listed with n_bytes 0, its extent unknown.
			 */
			st__report(ps->r, ST_PROBLEM_WARNING,
			           "llama.cpp will refuse this: tensor '%s': unknown "
			           "ggml type %u (its size is not known, so its data is "
			           "neither checked nor read)", name, t->type);
			continue;
		}
		if (t->dims[0] % blk) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': rows of %llu elements are not whole %s "
			           "blocks of %u", name, (unsigned long long)t->dims[0],
			           st_ggml_type_name(t->type), blk);
			if (st__report_stop(ps->r))
				return ST_EFORMAT;
			t->type = UINT32_MAX;
			continue;
		}
		/* ne / blk * bytes: ne < 2^63 and bytes / blk <= 8, no overflow. */
		uint64_t nb;
		if (st__mul_u64(ne / blk, bytes, &nb)) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': %llu %s elements overflow a 64-bit size",
			           name, (unsigned long long)ne,
			           st_ggml_type_name(t->type));
			if (st__report_stop(ps->r))
				return ST_EFORMAT;
			t->type = UINT32_MAX;
			continue;
		}
		t->n_bytes = nb;
	}
	return ST_OK;
}

/* Offsets: aligned, inside the data section, no overlaps; names unique. */
static int check_tensors(struct parser *ps)
{
	st_gguf *g = ps->g;
	size_t n = g->n_t;
	g->t_by_name = g_alloc(g, n * sizeof *g->t_by_name);
	const st_gguf_tensor **by_off = malloc((n ? n : 1) * sizeof *by_off);
	if (!g->t_by_name || !by_off) {
		free(by_off);
		return nomem(ps);
	}
	for (size_t i = 0; i < n; i++)
		g->t_by_name[i] = by_off[i] = &g->t[i];
	qsort(g->t_by_name, n, sizeof *g->t_by_name, cmp_tensor_name);
	for (size_t i = 1; i < n; i++)
		if (!cmp_tensor_name(&g->t_by_name[i - 1], &g->t_by_name[i])) {
			char name[1024];
			printable(name, sizeof name, g->t_by_name[i]->name,
			          g->t_by_name[i]->name_len);
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s' appears more than once", name);
			if (st__report_stop(ps->r))
				goto stop;
		}
	uint64_t data_size = g->size > g->data_offset ? g->size - g->data_offset
	                                              : 0;
	if (n && g->data_offset > g->size) {
		st__report(ps->r, ST_PROBLEM_ERROR,
		           "the header ends at byte %llu and its padding to %llu runs "
		           "past the end of the file (%llu bytes)",
		           (unsigned long long)ps->pos,
		           (unsigned long long)g->data_offset,
		           (unsigned long long)g->size);
		if (st__report_stop(ps->r))
			goto stop;
	}
	qsort(by_off, n, sizeof *by_off, cmp_tensor_offset);
	const st_gguf_tensor *prev = NULL;
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *t = by_off[i];
		char name[1024];
		printable(name, sizeof name, t->name, t->name_len);
		if (t->offset % g->alignment) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': data offset %llu is not a multiple of "
			           "the alignment %llu", name,
			           (unsigned long long)t->offset,
			           (unsigned long long)g->alignment);
			if (st__report_stop(ps->r))
				goto stop;
		}
		/* Marked after an error (a type number 2^32 - 1 in an otherwise
		 * valid file is an unknown type like any other). */
		if (t->type == UINT32_MAX && ps->r->n_errors)
			continue; /* reported: no size known */
		if (!st_ggml_type_name(t->type)) {
			/*
			 * An unknown type: only its start is known. It must lie in
			 * the data section and not inside the tensor before it; the
			 * tensors after it are checked against the ones before.
			 */
			if (t->offset > data_size ||
			    (prev && t->offset < prev->offset + prev->n_bytes)) {
				st__report(ps->r, ST_PROBLEM_ERROR,
				           "tensor '%s' (unknown type %u): data offset %llu "
				           "is %s", name, t->type,
				           (unsigned long long)t->offset,
				           t->offset > data_size
				               ? "past the end of the data section"
				               : "inside the tensor before it");
				if (st__report_stop(ps->r))
					goto stop;
			}
			continue;
		}
		if (t->offset > data_size || t->n_bytes > data_size - t->offset) {
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': data [%llu, %llu) runs past the end of "
			           "the data section (%llu bytes)", name,
			           (unsigned long long)t->offset,
			           (unsigned long long)(t->offset + t->n_bytes),
			           (unsigned long long)data_size);
			if (st__report_stop(ps->r))
				goto stop;
			continue;
		}
		if (prev && t->n_bytes && t->offset < prev->offset + prev->n_bytes) {
			char pname[1024];
			printable(pname, sizeof pname, prev->name, prev->name_len);
			st__report(ps->r, ST_PROBLEM_ERROR,
			           "tensor '%s': data [%llu, %llu) overlaps tensor '%s' "
			           "[%llu, %llu)", name, (unsigned long long)t->offset,
			           (unsigned long long)(t->offset + t->n_bytes), pname,
			           (unsigned long long)prev->offset,
			           (unsigned long long)(prev->offset + prev->n_bytes));
			if (st__report_stop(ps->r))
				goto stop;
		}
		if (t->n_bytes && (!prev || t->offset + t->n_bytes >
		                                prev->offset + prev->n_bytes))
			prev = t;
	}
stop:
	free(by_off);
	return st__report_stop(ps->r) ? ST_EFORMAT : ST_OK;
}

/*
 * ggml's loader (gguf_init_from_file) wants more than the spec: the
 * tensors packed in file order, each at the end of the one before padded
 * to the alignment, the first at 0. The first tensor elsewhere is
 * reported (a gap, or out of offset order); after a tensor of unknown
 * size nothing more can be said.
 */
static void check_packed(struct parser *ps)
{
	const st_gguf *g = ps->g;
	if (ps->r->n_errors)
		return; /* the file is refused already */
	char name[1024], pname[1024];
	for (size_t i = 1; i < g->n_t; i++) {
		const st_gguf_tensor *t = &g->t[i], *p = &g->t[i - 1];
		if (t->offset < p->offset) {
			printable(name, sizeof name, t->name, t->name_len);
			printable(pname, sizeof pname, p->name, p->name_len);
			st__report(ps->r, ST_PROBLEM_WARNING,
			           "llama.cpp will refuse this: tensors out of offset "
			           "order: '%s' (data at %llu) is listed after '%s' "
			           "(data at %llu); ggml wants them packed in file order",
			           name, (unsigned long long)t->offset, pname,
			           (unsigned long long)p->offset);
			return;
		}
	}
	uint64_t want = 0;
	for (size_t i = 0; i < g->n_t; i++) {
		const st_gguf_tensor *t = &g->t[i];
		if (!st_ggml_type_name(t->type))
			return;
		if (t->offset != want) {
			printable(name, sizeof name, t->name, t->name_len);
			st__report(ps->r, ST_PROBLEM_WARNING,
			           "llama.cpp will refuse this: a gap of %llu bytes "
			           "before tensor '%s' (data at %llu; ggml wants the "
			           "tensors packed in file order, this one at %llu)",
			           (unsigned long long)(t->offset - want), name,
			           (unsigned long long)t->offset,
			           (unsigned long long)want);
			return;
		}
		/* Inside the data section (no errors), so no overflow. */
		want = t->offset + t->n_bytes;
		want += (g->alignment - want % g->alignment) % g->alignment;
	}
}

/* Legal but incomplete: keys the spec requires. */
static void check_required(struct parser *ps)
{
	st_gguf *g = ps->g;
	/* Parts after the first of a split set hold only the split.* keys. */
	if (st__gguf_split_no(g) > 0)
		return;
	long a = st_gguf_find_kv(g, "general.architecture");
	if (a < 0)
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "key 'general.architecture' is missing (the spec requires "
		           "it)");
	else if (g->kv[a].value.type != ST_GGUF_STRING)
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "key 'general.architecture': type %s, expected string",
		           st_gguf_type_name(g->kv[a].value.type));
	int quantized = 0;
	for (size_t i = 0; i < g->n_t; i++) {
		unsigned blk;
		if (!st_ggml_type_block(g->t[i].type, &blk, NULL) && blk > 1)
			quantized = 1;
	}
	if (quantized && st_gguf_find_kv(g, "general.quantization_version") < 0)
		st__report(ps->r, ST_PROBLEM_WARNING,
		           "key 'general.quantization_version' is missing (the spec "
		           "requires it when tensors are quantized)");
}

static int parse(st_gguf *g, struct st__report *r)
{
	struct parser ps = {.g = g, .r = r, .p = g->base, .size = g->size};
	/* Magic, version, counts. */
	if (g->size < 4 || memcmp(g->base, "GGUF", 4)) {
		unsigned char m[4] = {0};
		memcpy(m, g->base, g->size < 4 ? (size_t)g->size : 4);
		st__report(r, ST_PROBLEM_ERROR,
		           "not a GGUF file (magic %02x %02x %02x %02x, expected "
		           "\"GGUF\")", m[0], m[1], m[2], m[3]);
		return ST_EFORMAT;
	}
	if (g->size < 24) {
		st__report(r, ST_PROBLEM_ERROR,
		           "%llu bytes: too short for a GGUF header (24)",
		           (unsigned long long)g->size);
		return ST_EFORMAT;
	}
	ps.pos = 4;
	uint32_t version = (uint32_t)take(&ps, 4);
	if (version != 2 && version != 3) {
		if (version == 1)
			st__report(r, ST_PROBLEM_ERROR,
			           "version 1 (the draft format with 32-bit counts): not "
			           "supported (versions 2 and 3 are)");
		else if (version == 0x02000000u || version == 0x03000000u)
			st__report(r, ST_PROBLEM_ERROR,
			           "a big-endian GGUF (version reads as 0x%08x): not "
			           "supported", version);
		else
			st__report(r, ST_PROBLEM_ERROR,
			           "unknown version %u (versions 2 and 3 are supported)",
			           version);
		return ST_EFORMAT;
	}
	g->version = version;
	uint64_t n_t = take(&ps, 8);
	uint64_t n_kv = take(&ps, 8);
	/* Metadata. */
	int rc = parse_kvs(&ps, n_kv);
	if (rc)
		return ps.nomem ? ST_ENOMEM : rc;
	rc = check_kvs(&ps);
	if (rc)
		return ps.nomem ? ST_ENOMEM : rc;
	/* Tensor infos. */
	rc = parse_tensors(&ps, n_t);
	if (rc)
		return ps.nomem ? ST_ENOMEM : rc;
	/* Padding: the data section starts at the next multiple of alignment. */
	uint64_t pad = (g->alignment - ps.pos % g->alignment) % g->alignment;
	g->data_offset = ps.pos + pad;
	rc = check_tensors(&ps);
	if (rc)
		return ps.nomem ? ST_ENOMEM : rc;
	check_packed(&ps);
	check_required(&ps);
	return ST_OK;
}

/* ---- open / close ---------------------------------------------------------- */

static st_gguf *new_gguf(const char *path)
{
	st_gguf *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->fd = -1;
	if (!(g->path = strdup(path))) {
		free(g);
		return NULL;
	}
	return g;
}

static int open_path(st_gguf **out, const char *path, struct st__report *r,
                     int *unreadable)
{
	*out = NULL;
	st_gguf *g = new_gguf(path);
	if (!g)
		return st__error(r->err, ST_ENOMEM, "%s: out of memory", path);
	int rc;
	*unreadable = 1;
	g->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (g->fd < 0) {
		rc = st__error_sys(r->err, ST_EIO, errno, "%s", path);
		goto fail;
	}
	struct stat sb;
	if (fstat(g->fd, &sb) < 0) {
		rc = st__error_sys(r->err, ST_EIO, errno, "%s: stat", path);
		goto fail;
	}
	if (S_ISDIR(sb.st_mode)) {
		rc = st__error(r->err, ST_EIO, "%s: is a directory", path);
		goto fail;
	}
	if (!S_ISREG(sb.st_mode)) {
		rc = st__error(r->err, ST_EIO, "%s: not a regular file", path);
		goto fail;
	}
	*unreadable = 0;
	g->size = (uint64_t)sb.st_size;
	static const unsigned char empty[1];
	g->base = empty;
	if (g->size > SIZE_MAX) {
		rc = st__error(r->err, ST_EIO, "%s: too large to map", path);
		goto fail;
	}
	if (g->size) {
		void *m = st__map(g->fd, (size_t)g->size);
		if (m == MAP_FAILED) {
			rc = st__error_sys(r->err, ST_EIO, errno, "%s: mmap", path);
			goto fail;
		}
		g->map = m;
		g->map_len = (size_t)g->size;
		g->base = m;
	}
	rc = parse(g, r);
	if (rc && !(rc == ST_EFORMAT && r->fn))
		goto fail;
	*out = g;
	return rc;
fail:
	st_gguf_close(g);
	return rc;
}

int st_gguf_open(st_gguf **out, const char *path, st_error *err)
{
	struct st__report r = {.path = path, .err = err};
	int unreadable = 0;
	return open_path(out, path, &r, &unreadable);
}

static int open_mem(st_gguf **out, const void *buf, size_t len,
                    const char *name, struct st__report *r)
{
	*out = NULL;
	st_gguf *g = new_gguf(name);
	if (!g)
		return st__error(r->err, ST_ENOMEM, "%s: out of memory", name);
	static const unsigned char empty[1];
	g->base = len ? buf : empty;
	g->size = len;
	int rc = parse(g, r);
	if (rc && !(rc == ST_EFORMAT && r->fn)) {
		st_gguf_close(g);
		return rc;
	}
	*out = g;
	return rc;
}

int st_gguf_open_memory(st_gguf **out, const void *buf, size_t len,
                        const char *name, st_error *err)
{
	const char *nm = name ? name : "<memory>";
	struct st__report r = {.path = nm, .err = err};
	return open_mem(out, buf, len, nm, &r);
}

void st_gguf_close(st_gguf *g)
{
	if (!g)
		return;
	for (size_t k = 0; k < g->n_parts; k++)
		st_gguf_close(g->parts[k]);
	free(g->parts);
	free(g->t_part);
	if (g->map)
		munmap(g->map, g->map_len);
	if (g->fd >= 0)
		close(g->fd);
	while (g->chunks) {
		struct chunk *c = g->chunks;
		g->chunks = c->next;
		free(c);
	}
	free(g->path);
	free(g);
}

int st_gguf_is_gguf(const void *head, size_t len)
{
	return len >= 4 && !memcmp(head, "GGUF", 4);
}

const char *st_gguf_path(const st_gguf *g) { return g->path; }
unsigned st_gguf_version(const st_gguf *g) { return g->version; }
uint64_t st_gguf_size(const st_gguf *g) { return g->size; }
uint64_t st_gguf_alignment(const st_gguf *g) { return g->alignment; }
uint64_t st_gguf_data_offset(const st_gguf *g) { return g->data_offset; }
uint64_t st_gguf_data_size(const st_gguf *g)
{
	if (g->parts) {
		uint64_t n = 0;
		for (size_t k = 0; k < g->n_parts; k++)
			n += st_gguf_data_size(g->parts[k]);
		return n;
	}
	return g->size > g->data_offset ? g->size - g->data_offset : 0;
}
size_t st_gguf_n_parts(const st_gguf *g) { return g->parts ? g->n_parts : 1; }

const st_gguf *st_gguf_part(const st_gguf *g, size_t k)
{
	if (!g->parts)
		return k == 0 ? g : NULL;
	return k < g->n_parts ? g->parts[k] : NULL;
}

size_t st_gguf_tensor_part(const st_gguf *g, size_t i)
{
	return g->parts ? g->t_part[i] : 0;
}
size_t st_gguf_n_kv(const st_gguf *g) { return g->n_kv; }
size_t st_gguf_n_tensors(const st_gguf *g) { return g->n_t; }

const st_gguf_kv *st_gguf_kv_at(const st_gguf *g, size_t i)
{
	return i < g->n_kv ? &g->kv[i] : NULL;
}

const st_gguf_tensor *st_gguf_tensor_at(const st_gguf *g, size_t i)
{
	return i < g->n_t ? &g->t[i] : NULL;
}

long st_gguf_find_kv(const st_gguf *g, const char *key)
{
	if (!g->kv_by_key)
		return -1;
	st_gguf_kv probe = {.key = key, .key_len = strlen(key)};
	const st_gguf_kv *pp = &probe;
	const st_gguf_kv **hit = bsearch(&pp, g->kv_by_key, g->n_kv,
	                                 sizeof *g->kv_by_key, cmp_kv);
	return hit ? (long)(*hit - g->kv) : -1;
}

long st_gguf_find(const st_gguf *g, const char *name)
{
	if (!g->t_by_name)
		return -1;
	st_gguf_tensor probe = {.name = name, .name_len = strlen(name)};
	const st_gguf_tensor *pp = &probe;
	const st_gguf_tensor **hit = bsearch(&pp, g->t_by_name, g->n_t,
	                                     sizeof *g->t_by_name,
	                                     cmp_tensor_name);
	return hit ? (long)(*hit - g->t) : -1;
}

const void *st_gguf_tensor_data(const st_gguf *g, size_t i)
{
	const st_gguf *p = g->parts ? g->parts[g->t_part[i]] : g;
	return p->base + p->data_offset + g->t[i].offset;
}

/* ---- split sets (the set's rules are gguf_split.c's) ------------------------ */

int st__gguf_join(st_gguf **out, const char *path, st_gguf **parts,
                  size_t n_parts, st_error *err)
{
	*out = NULL;
	st_gguf *g = new_gguf(path);
	size_t n = 0;
	for (size_t k = 0; k < n_parts; k++)
		n += parts[k]->n_t;
	if (g) {
		g->t = g_alloc(g, (n ? n : 1) * sizeof *g->t);
		g->t_by_name = g_alloc(g, (n ? n : 1) * sizeof *g->t_by_name);
		g->t_part = malloc((n ? n : 1) * sizeof *g->t_part);
		g->parts = malloc(n_parts * sizeof *g->parts);
	}
	if (!g || !g->t || !g->t_by_name || !g->t_part || !g->parts) {
		st_gguf_close(g);
		for (size_t k = 0; k < n_parts; k++)
			st_gguf_close(parts[k]);
		return st__error(err, ST_ENOMEM, "%s: out of memory", path);
	}
	/* From here on g owns the parts. */
	memcpy(g->parts, parts, n_parts * sizeof *parts);
	g->n_parts = n_parts;
	const st_gguf *first = parts[0];
	g->version = first->version;
	g->alignment = first->alignment;
	g->data_offset = first->data_offset;
	g->kv = first->kv;
	g->n_kv = first->n_kv;
	g->kv_by_key = first->kv_by_key;
	for (size_t k = 0; k < n_parts; k++) {
		g->size += parts[k]->size;
		for (size_t j = 0; j < parts[k]->n_t; j++) {
			g->t_part[g->n_t] = k;
			g->t[g->n_t++] = parts[k]->t[j];
		}
	}
	for (size_t i = 0; i < n; i++)
		g->t_by_name[i] = &g->t[i];
	qsort(g->t_by_name, n, sizeof *g->t_by_name, cmp_tensor_name);
	for (size_t i = 1; i < n; i++)
		if (!cmp_tensor_name(&g->t_by_name[i - 1], &g->t_by_name[i])) {
			const st_gguf_tensor *a = g->t_by_name[i - 1], *b = g->t_by_name[i];
			if (g->t_part[a - g->t] > g->t_part[b - g->t]) {
				const st_gguf_tensor *c = a;
				a = b;
				b = c;
			}
			char name[1024];
			printable(name, sizeof name, b->name, b->name_len);
			st__error(err, ST_EFORMAT,
			          "%s: tensor '%s' is in this part and in %s",
			          parts[g->t_part[b - g->t]]->path, name,
			          parts[g->t_part[a - g->t]]->path);
			st_gguf_close(g);
			return ST_EFORMAT;
		}
	*out = g;
	return ST_OK;
}

/* ---- full checks ----------------------------------------------------------- */

int st_gguf_check_file(const char *path, st_problem_fn fn, void *ctx,
                       st_error *err)
{
	struct st__report r = {.path = path, .fn = fn, .ctx = ctx, .err = err};
	st_gguf *g = NULL;
	int unreadable = 0;
	int rc = open_path(&g, path, &r, &unreadable);
	st_gguf_close(g);
	if (unreadable || rc == ST_EIO || rc == ST_ENOMEM)
		return rc;
	return r.n_errors;
}

int st_gguf_check_memory(const void *buf, size_t len, const char *name,
                         st_problem_fn fn, void *ctx)
{
	const char *nm = name ? name : "<memory>";
	struct st__report r = {.path = nm, .fn = fn, .ctx = ctx};
	st_gguf *g = NULL;
	int rc = open_mem(&g, buf, len, nm, &r);
	st_gguf_close(g);
	if (rc == ST_ENOMEM)
		return rc;
	return r.n_errors;
}
