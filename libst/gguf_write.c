/*
 * gguf_write.c - write one GGUF file (version 3, little-endian): metadata
 * and tensor infos declared first, then the tensor data streamed in the
 * declared order. The writer lays the tensors out packed, each at the next
 * multiple of the alignment (general.alignment when set, else 32), and
 * writes the zero padding itself, after the header and after every tensor
 * (as gguf-py's GGUFWriter does).
 *
 * Output is atomic through st_atomic (st/atomic.h): the file appears
 * complete at the end of st_gguf_writer_finish or not at all.
 * It does not read GGUF (gguf.c) and knows nothing of any architecture.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wtensor {
	char *name;
	uint64_t n_bytes;
	uint64_t offset;
};

enum { GW_BUILD, GW_OPEN, GW_DONE, GW_FAILED };

struct st_gguf_writer {
	int state;
	struct st__buf kvs;   /* encoded key/value pairs */
	size_t n_kv;
	char **keys;          /* to refuse duplicates */
	size_t keys_cap;
	struct st__buf infos; /* encoded tensor infos */
	struct wtensor *t;
	size_t n_t, t_cap;
	uint64_t alignment;
	uint64_t data_size;   /* with the padding */
	/* Streaming. */
	st_atomic *a;
	size_t cur;           /* the tensor being written */
	uint64_t cur_written; /* of its bytes */
};

static void put_le(struct st__buf *b, uint64_t v, unsigned n)
{
	unsigned char x[8];
	for (unsigned i = 0; i < n; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	st__buf_put(b, x, n);
}

static void put_str(struct st__buf *b, const char *s, uint64_t n)
{
	put_le(b, n, 8);
	st__buf_put(b, s, (size_t)n);
}

int st_gguf_writer_new(st_gguf_writer **out, st_error *err)
{
	st_gguf_writer *w = calloc(1, sizeof *w);
	*out = w;
	if (!w)
		return st__error(err, ST_ENOMEM, "out of memory");
	w->alignment = ST_GGUF_DEFAULT_ALIGNMENT;
	return ST_OK;
}

static unsigned scalar_bytes(int type)
{
	static const unsigned char sz[ST_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4,
	                                                     4, 1, 0, 0, 8, 8, 8};
	return sz[type];
}

/* Append one value's bytes (without its type); depth bounds nesting. */
static int put_value(struct st__buf *b, const st_gguf_value *v, int depth,
                     const char *key, st_error *err)
{
	if (v->type < 0 || v->type >= ST_GGUF_TYPE_COUNT)
		return st__error(err, ST_EINVAL, "key '%s': unknown value type %d",
		                 key, v->type);
	if (v->type == ST_GGUF_STRING) {
		put_str(b, v->v.s, v->n);
		return ST_OK;
	}
	if (v->type != ST_GGUF_ARRAY) {
		uint64_t u = v->v.u;
		if (v->type == ST_GGUF_FLOAT32) {
			float f = (float)v->v.f;
			uint32_t bits;
			memcpy(&bits, &f, 4);
			u = bits;
		} else if (v->type == ST_GGUF_FLOAT64) {
			memcpy(&u, &v->v.f, 8);
		} else if (v->type == ST_GGUF_BOOL && u > 1) {
			return st__error(err, ST_EINVAL, "key '%s': bool value %llu",
			                 key, (unsigned long long)u);
		}
		put_le(b, u, scalar_bytes(v->type));
		return ST_OK;
	}
	if (depth > ST_GGUF_MAX_DEPTH)
		return st__error(err, ST_EINVAL, "key '%s': arrays nested deeper "
		                 "than %d", key, ST_GGUF_MAX_DEPTH);
	int et = v->elem_type;
	if (et < 0 || et >= ST_GGUF_TYPE_COUNT)
		return st__error(err, ST_EINVAL, "key '%s': unknown array element "
		                 "type %d", key, et);
	put_le(b, (uint64_t)et, 4);
	put_le(b, v->n, 8);
	if (et != ST_GGUF_STRING && et != ST_GGUF_ARRAY) {
		/* Numbers are given as the file holds them (little-endian). */
		st__buf_put(b, v->v.raw, (size_t)(v->n * scalar_bytes(et)));
		return ST_OK;
	}
	for (uint64_t i = 0; i < v->n; i++) {
		if (v->v.vals[i].type != et)
			return st__error(err, ST_EINVAL, "key '%s': element %llu is "
			                 "not a %s", key, (unsigned long long)i,
			                 st_gguf_type_name(et));
		int rc = put_value(b, &v->v.vals[i], depth + 1, key, err);
		if (rc)
			return rc;
	}
	return ST_OK;
}

int st_gguf_writer_set(st_gguf_writer *w, const char *key,
                       const st_gguf_value *v, st_error *err)
{
	if (w->state != GW_BUILD)
		return st__error(err, ST_ESTATE, "st_gguf_writer_set after open");
	size_t klen = strlen(key);
	if (klen == 0 || klen > 65535)
		return st__error(err, ST_EINVAL, "key of %zu bytes (1 to 65535)",
		                 klen);
	for (size_t i = 0; i < klen; i++)
		if ((unsigned char)key[i] >= 0x80)
			return st__error(err, ST_EINVAL, "key '%s': not ASCII", key);
	for (size_t i = 0; i < w->n_kv; i++)
		if (!strcmp(w->keys[i], key))
			return st__error(err, ST_EINVAL, "key '%s' set twice", key);
	if (!strcmp(key, "general.alignment")) {
		if (v->type != ST_GGUF_UINT32 || v->v.u < 8 ||
		    (v->v.u & (v->v.u - 1)))
			return st__error(err, ST_EINVAL, "key 'general.alignment': "
			                 "must be a uint32 power of two of at least 8");
		if (w->n_t)
			return st__error(err, ST_ESTATE, "key 'general.alignment': "
			                 "set after the first tensor");
		w->alignment = v->v.u;
	}
	if (w->n_kv == w->keys_cap) {
		size_t cap = w->keys_cap ? w->keys_cap * 2 : 32;
		char **k = realloc(w->keys, cap * sizeof *k);
		if (!k)
			return st__error(err, ST_ENOMEM, "out of memory");
		w->keys = k;
		w->keys_cap = cap;
	}
	size_t mark = w->kvs.len;
	put_str(&w->kvs, key, klen);
	put_le(&w->kvs, (uint64_t)v->type, 4);
	int rc = put_value(&w->kvs, v, 1, key, err);
	if (rc) {
		w->kvs.len = mark;
		return rc;
	}
	if (w->kvs.failed || !(w->keys[w->n_kv] = strdup(key)))
		return st__error(err, ST_ENOMEM, "out of memory");
	w->n_kv++;
	return ST_OK;
}

int st_gguf_writer_add_tensor(st_gguf_writer *w, const char *name,
                              unsigned type, unsigned ndim,
                              const uint64_t *dims, st_error *err)
{
	if (w->state != GW_BUILD)
		return st__error(err, ST_ESTATE, "st_gguf_writer_add_tensor after "
		                 "open");
	size_t nlen = strlen(name);
	if (nlen == 0 || nlen > 64)
		return st__error(err, ST_EINVAL, "tensor '%s': name of %zu bytes "
		                 "(1 to 64)", name, nlen);
	unsigned blk, bytes;
	if (st_ggml_type_block(type, &blk, &bytes))
		return st__error(err, ST_EINVAL, "tensor '%s': unknown ggml type %u",
		                 name, type);
	if (ndim < 1 || ndim > ST_GGUF_MAX_DIMS)
		return st__error(err, ST_EINVAL, "tensor '%s': %u dimensions (1 to "
		                 "%d)", name, ndim, ST_GGUF_MAX_DIMS);
	uint64_t ne = 1;
	for (unsigned d = 0; d < ndim; d++)
		if (st__mul_u64(ne, dims[d], &ne) || ne > INT64_MAX)
			return st__error(err, ST_EINVAL, "tensor '%s': too many "
			                 "elements", name);
	if (dims[0] % blk)
		return st__error(err, ST_EINVAL, "tensor '%s': rows of %llu are not "
		                 "whole %s blocks of %u", name,
		                 (unsigned long long)dims[0],
		                 st_ggml_type_name(type), blk);
	for (size_t i = 0; i < w->n_t; i++)
		if (!strcmp(w->t[i].name, name))
			return st__error(err, ST_EINVAL, "tensor '%s' added twice",
			                 name);
	if (w->n_t == w->t_cap) {
		size_t cap = w->t_cap ? w->t_cap * 2 : 64;
		struct wtensor *t = realloc(w->t, cap * sizeof *t);
		if (!t)
			return st__error(err, ST_ENOMEM, "out of memory");
		w->t = t;
		w->t_cap = cap;
	}
	struct wtensor *t = &w->t[w->n_t];
	t->n_bytes = ne / blk * bytes;
	t->offset = w->data_size;
	uint64_t padded = (t->n_bytes + w->alignment - 1) / w->alignment *
	                  w->alignment;
	if (st__add_u64(w->data_size, padded, &w->data_size))
		return st__error(err, ST_EINVAL, "tensor '%s': the data exceeds "
		                 "2^64 bytes", name);
	if (!(t->name = strdup(name)))
		return st__error(err, ST_ENOMEM, "out of memory");
	put_str(&w->infos, name, nlen);
	put_le(&w->infos, ndim, 4);
	for (unsigned d = 0; d < ndim; d++)
		put_le(&w->infos, dims[d], 8);
	put_le(&w->infos, type, 4);
	put_le(&w->infos, t->offset, 8);
	if (w->infos.failed)
		return st__error(err, ST_ENOMEM, "out of memory");
	w->n_t++;
	return ST_OK;
}

/* After a failure: the temporary is removed, the target left as it was. */
static int failed(st_gguf_writer *w, int rc)
{
	st_atomic_close(w->a);
	w->a = NULL;
	w->state = GW_FAILED;
	return rc;
}

static const unsigned char zeros[256];

static int write_zeros(st_gguf_writer *w, uint64_t n, st_error *err)
{
	while (n) {
		size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
		int rc = st_atomic_write(w->a, zeros, k, err);
		if (rc)
			return failed(w, rc);
		n -= k;
	}
	return ST_OK;
}

int st_gguf_writer_open(st_gguf_writer *w, const char *path, st_error *err)
{
	if (w->state != GW_BUILD)
		return st__error(err, ST_ESTATE, "%s: the writer was already "
		                 "opened", path);
	if (!path || !*path)
		return st__error(err, ST_EINVAL, "output path is empty");
	struct st__buf h = {0};
	st__buf_put(&h, "GGUF", 4);
	put_le(&h, 3, 4);
	put_le(&h, w->n_t, 8);
	put_le(&h, w->n_kv, 8);
	st__buf_put(&h, w->kvs.data, w->kvs.len);
	st__buf_put(&h, w->infos.data, w->infos.len);
	uint64_t pad = (w->alignment - h.len % w->alignment) % w->alignment;
	if (h.failed) {
		st__buf_free(&h);
		return st__error(err, ST_ENOMEM, "%s: out of memory", path);
	}
	int rc = st_atomic_open(&w->a, path, err);
	if (rc) {
		/* Nothing was created: the writer may be opened again. */
		st__buf_free(&h);
		return rc;
	}
	w->state = GW_OPEN;
	rc = st_atomic_write(w->a, h.data, h.len, err);
	st__buf_free(&h);
	if (rc)
		return failed(w, rc);
	/* Only a file with tensors needs the data section's padding. */
	return w->n_t ? write_zeros(w, pad, err) : ST_OK;
}

int st_gguf_writer_write(st_gguf_writer *w, const void *data, size_t n,
                         st_error *err)
{
	if (w->state != GW_OPEN)
		return st__error(err, ST_ESTATE, "st_gguf_writer_write: the writer "
		                 "is not open");
	const unsigned char *p = data;
	while (n) {
		if (w->cur >= w->n_t)
			return st__error(err, ST_EINVAL, "%s: %zu bytes more than the "
			                 "tensors declared", st_atomic_path(w->a), n);
		struct wtensor *t = &w->t[w->cur];
		uint64_t room = t->n_bytes - w->cur_written;
		size_t k = n < room ? n : (size_t)room;
		int rc = st_atomic_write(w->a, p, k, err);
		if (rc)
			return failed(w, rc);
		p += k;
		n -= k;
		w->cur_written += k;
		if (w->cur_written == t->n_bytes) {
			uint64_t pad = (w->alignment - t->n_bytes % w->alignment) %
			               w->alignment;
			rc = write_zeros(w, pad, err);
			if (rc)
				return rc;
			w->cur++;
			w->cur_written = 0;
			/* Empty tensors take no bytes: skip them. */
			while (w->cur < w->n_t && w->t[w->cur].n_bytes == 0)
				w->cur++;
		}
	}
	return ST_OK;
}

int st_gguf_writer_finish(st_gguf_writer *w, st_error *err)
{
	if (w->state != GW_OPEN)
		return st__error(err, ST_ESTATE, "st_gguf_writer_finish: the writer "
		                 "is not open");
	while (w->cur < w->n_t && w->t[w->cur].n_bytes == 0)
		w->cur++;
	if (w->cur < w->n_t) {
		int rc = st__error(err, ST_ESTATE, "%s: tensor '%s': data "
		                   "incomplete (%llu of its %llu bytes written)",
		                   st_atomic_path(w->a), w->t[w->cur].name,
		                   (unsigned long long)w->cur_written,
		                   (unsigned long long)w->t[w->cur].n_bytes);
		return failed(w, rc);
	}
	/* A failed directory fsync leaves the new file in place; a failed
	 * rename, the target as it was. Either way the writer is spent. */
	int rc = st_atomic_commit(w->a, err);
	if (rc)
		return failed(w, rc);
	w->state = GW_DONE;
	return ST_OK;
}

void st_gguf_writer_free(st_gguf_writer *w)
{
	if (!w)
		return;
	st_atomic_close(w->a);
	st__buf_free(&w->kvs);
	st__buf_free(&w->infos);
	for (size_t i = 0; i < w->n_kv; i++)
		free(w->keys[i]);
	free(w->keys);
	for (size_t i = 0; i < w->n_t; i++)
		free(w->t[i].name);
	free(w->t);
	free(w);
}
