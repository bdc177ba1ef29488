/*
 * check_torch.c - PyTorch checkpoints (torch.save's zip format) read
 * without executing the pickle: every tensor of the testdata/torch .bin files equals
 * the expected safetensors file that gen_torch.py built from numpy, and
 * hostile or unsupported files are refused with a clear message.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "internal.h"

#define DIR ST_TESTDATA "/torch/"

/* Every tensor of bin equals the one of the same name in expected. */
static void same_tensors(const char *bin, const char *expected, size_t n)
{
	st_file *a, *b;
	st_error err;
	ck_assert_msg(st_file_open(&a, bin, ST_OPEN_TORCH, &err) == ST_OK, "%s", err.message);
	ck_assert_int_eq(st_file_format(a), ST_FORMAT_TORCH);
	ck_assert_int_eq(st_file_open(&b, expected, 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_tensors(a), n);
	ck_assert_uint_eq(st_file_n_tensors(b), n);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *x = st_file_tensor(b, i);
		long j = st_file_find(a, x->name, x->name_len);
		ck_assert_msg(j >= 0, "%s: tensor '%s' missing", bin, x->name);
		const st_tensor *y = st_file_tensor(a, (size_t)j);
		ck_assert_msg(y->dtype == x->dtype, "'%s': dtype %s vs %s", x->name,
		              st_dtype_name(y->dtype), st_dtype_name(x->dtype));
		ck_assert_uint_eq(y->ndim, x->ndim);
		for (unsigned d = 0; d < x->ndim; d++)
			ck_assert_uint_eq(y->shape[d], x->shape[d]);
		ck_assert_uint_eq(y->n_bytes, x->n_bytes);
		const void *p, *q;
		ck_assert_int_eq(st_file_data(a, (size_t)j, &p, &err), ST_OK);
		ck_assert_int_eq(st_file_data(b, i, &q, &err), ST_OK);
		ck_assert_msg(memcmp(p, q, x->n_bytes) == 0, "'%s': data differs", x->name);
		/* pread gives the same bytes as the mapping. */
		unsigned char *buf = malloc(x->n_bytes + 1);
		ck_assert_int_eq(st_file_read(a, (size_t)j, 0, buf, x->n_bytes, &err), ST_OK);
		ck_assert(memcmp(buf, q, x->n_bytes) == 0);
		free(buf);
	}
	st_file_close(a);
	st_file_close(b);
}

START_TEST(test_state_dict)
{
	same_tensors(DIR "state.bin", DIR "state.expected.safetensors", 16);
}
END_TEST

/*
 * One state dict of views (transposed, sliced, stepped, offset, expanded
 * with stride 0, permuted; several on one storage; an alias), every dtype,
 * scalars and empty tensors, in every format: the bytes torch.load gives
 * once made contiguous (gen_formats.py).
 */
START_TEST(test_formats)
{
	static const char *const fmt[] = {"zip", "zip4", "legacy", "legacy4",
	                                  "legacybig", "zipbig", "tar"};
	for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
		char path[256];
		snprintf(path, sizeof path, DIR "views.%s.bin", fmt[i]);
		same_tensors(path, DIR "views.expected.safetensors", 36);
	}
}
END_TEST

/* zip64 records (end of archive, sizes and offsets in extra fields), as
 * torch.save writes them past 4 GiB; made by Python's zipfile. */
START_TEST(test_zip64)
{
	same_tensors(DIR "state_zip64.bin", DIR "state.expected.safetensors", 16);
}
END_TEST

/*
 * ST_OPEN_TORCH must not take a safetensors file for a pickle: a header of
 * 640 bytes makes the file begin 0x80 0x02, as a protocol-2 pickle does.
 */
START_TEST(test_safetensors_like_pickle)
{
	static const char json[] = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],"
	                           "\"data_offsets\":[0,1]}}";
	unsigned char buf[8 + 640 + 1];
	memset(buf, ' ', sizeof buf);
	buf[0] = 0x80;
	buf[1] = 0x02;
	memset(buf + 2, 0, 6);
	memcpy(buf + 8, json, sizeof json - 1);
	buf[8 + 640] = 7;
	st_file *f;
	st_error err;
	ck_assert_msg(st_file_open_memory(&f, buf, sizeof buf, "m", ST_OPEN_TORCH, &err) == ST_OK,
	              "%s", err.message);
	ck_assert_int_eq(st_file_format(f), ST_FORMAT_SAFETENSORS);
	ck_assert_uint_eq(st_file_header_size(f), 640);
	st_file_close(f);
}
END_TEST

START_TEST(test_nested)
{
	same_tensors(DIR "nested.bin", DIR "nested.expected.safetensors", 2);
}
END_TEST

static void on_problem(void *ctx, int severity, const char *msg)
{
	struct { int n; char msg[512]; } *got = ctx;
	if (severity == ST_PROBLEM_ERROR && got->n++ == 0)
		snprintf(got->msg, sizeof got->msg, "%s", msg);
}

/* Same tensors as expected, through a checkpoint opened with keys. */
static void same_keyed(const char *path, const char *const *keys, size_t n_keys,
                       const char *expected, size_t n)
{
	st_checkpoint *c;
	st_file *b;
	st_error err;
	ck_assert_msg(st_checkpoint_open_key(&c, path, ST_OPEN_TORCH, keys, n_keys,
	                                     &err) == ST_OK, "%s", err.message);
	ck_assert_int_eq(st_file_open(&b, expected, 0, &err), ST_OK);
	ck_assert_uint_eq(st_checkpoint_n_tensors(c), n);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *x = st_file_tensor(b, i);
		long j = st_checkpoint_find(c, x->name, x->name_len);
		ck_assert_msg(j >= 0, "%s: '%s' missing", path, x->name);
		const st_tensor *y = st_checkpoint_tensor(c, (size_t)j, NULL);
		ck_assert_uint_eq(y->n_bytes, x->n_bytes);
		unsigned char *p = malloc(x->n_bytes + 1);
		const void *q;
		ck_assert_int_eq(st_checkpoint_read(c, (size_t)j, 0, p, x->n_bytes, &err), ST_OK);
		ck_assert_int_eq(st_file_data(b, i, &q, &err), ST_OK);
		ck_assert_msg(!memcmp(p, q, x->n_bytes), "'%s' differs", x->name);
		free(p);
	}
	st_file_close(b);
	st_checkpoint_close(c);
}

/*
 * A training checkpoint {"state_dict": ..., "epoch", "lr", "name",
 * "optimizer"}: every tensor is under state_dict, which is read, and said
 * so; --key state_dict gives the same; other keys are refused clearly.
 */
START_TEST(test_keys)
{
	static const char *const fmt[] = {"zip", "legacy", "tar"};
	static const char *const sd[] = {"state_dict"};
	for (size_t i = 0; i < 3; i++) {
		char path[256];
		snprintf(path, sizeof path, DIR "ckpt.%s.bin", fmt[i]);
		same_keyed(path, NULL, 0, DIR "ckpt.expected.safetensors", 3);
		same_keyed(path, sd, 1, DIR "ckpt.expected.safetensors", 3);
		st_file *f;
		st_error err;
		ck_assert_int_eq(st_file_open(&f, path, ST_OPEN_TORCH, &err), ST_OK);
		const st_torch_info *ti = st_file_torch_info(f);
		ck_assert_ptr_nonnull(ti);
		ck_assert_str_eq(ti->key, "state_dict");
		ck_assert_int_eq(ti->key_auto, 1);
		ck_assert_str_eq(ti->keys, "state_dict, epoch, lr, name, optimizer");
		ck_assert_uint_eq(ti->n_skipped, 4);
		ck_assert_str_eq(ti->skipped, "epoch, lr, name, optimizer");
		st_file_close(f);
		st_checkpoint *c;
		static const char *const bad[] = {"nope"}, *const leaf[] = {"epoch"},
		                         *const deep[] = {"state_dict.enc"};
		ck_assert_int_eq(st_checkpoint_open_key(&c, path, ST_OPEN_TORCH, bad, 1,
		                                        &err), ST_EFORMAT);
		ck_assert_msg(strstr(err.message, "--key 'nope': no key 'nope' in the "
		                     "checkpoint (its keys: state_dict, epoch, lr, name, "
		                     "optimizer)"), "%s", err.message);
		ck_assert_int_eq(st_checkpoint_open_key(&c, path, ST_OPEN_TORCH, leaf, 1,
		                                        &err), ST_EFORMAT);
		ck_assert_msg(strstr(err.message, "'epoch' is not a dictionary"), "%s",
		              err.message);
		ck_assert_int_eq(st_checkpoint_open_key(&c, path, ST_OPEN_TORCH, deep, 1,
		                                        &err), ST_EFORMAT);
		ck_assert_msg(strstr(err.message, "no key 'enc' in 'state_dict'"), "%s",
		              err.message);
	}
	/* Several levels, as K1.K2 or one key each; a key holding a dot. */
	static const char *const two[] = {"model", "b"}, *const dotted[] = {"model.b"};
	st_checkpoint *c;
	st_error err;
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(st_checkpoint_open_key(&c, DIR "nested.bin", ST_OPEN_TORCH,
		                                        k ? dotted : two, k ? 1 : 2, &err),
		                 ST_OK);
		ck_assert_uint_eq(st_checkpoint_n_tensors(c), 1);
		ck_assert_int_ge(st_checkpoint_find(c, "c", 1), 0);
		st_checkpoint_close(c);
	}
	/* A flat state dict: nothing chosen, nothing left out. */
	st_file *f;
	ck_assert_int_eq(st_file_open(&f, DIR "views.zip.bin", ST_OPEN_TORCH, &err), ST_OK);
	ck_assert_ptr_null(st_file_torch_info(f)->key);
	ck_assert_uint_eq(st_file_torch_info(f)->n_skipped, 0);
	ck_assert_uint_eq(st_file_torch_info(f)->n_skipped_list, 0);
	st_file_close(f);
}
END_TEST

/*
 * The names one by one (gen_keys.py): a key holding ", " stays one name;
 * every top-level key is listed, the first 8 of 16 skipped values.
 */
START_TEST(test_key_list)
{
	static const char *const fmt[] = {"zip", "legacy", "tar"};
	static const char *const skipped[] = {"epoch, step", "\xc3\xa9poque", "ema", "n0",
	                                      "n1", "n2", "n3", "n4"};
	for (size_t i = 0; i < 3; i++) {
		char path[256];
		snprintf(path, sizeof path, DIR "keys.%s.bin", fmt[i]);
		st_file *f;
		st_error err;
		ck_assert_int_eq(st_file_open(&f, path, ST_OPEN_TORCH, &err), ST_OK);
		const st_torch_info *ti = st_file_torch_info(f);
		ck_assert_str_eq(ti->key, "model");
		ck_assert_uint_eq(ti->n_key_list, 14);
		ck_assert_uint_eq(ti->key_list[0].len, 5);
		ck_assert(!memcmp(ti->key_list[0].s, "model", 5));
		ck_assert_uint_eq(ti->key_list[13].len, 2);
		ck_assert(!memcmp(ti->key_list[13].s, "n9", 2));
		ck_assert_uint_eq(ti->n_skipped, 16);
		ck_assert_uint_eq(ti->n_skipped_list, 8);
		for (size_t k = 0; k < 8; k++) {
			ck_assert_uint_eq(ti->skipped_list[k].len, strlen(skipped[k]));
			ck_assert(!memcmp(ti->skipped_list[k].s, skipped[k], strlen(skipped[k])));
		}
		st_file_close(f);
	}
}
END_TEST

/*
 * A full check reads every member through its CRC: a flipped byte in a
 * storage (read in place, so an open does not see it) is an error.
 */
START_TEST(test_check_crc)
{
	struct { int n; char msg[512]; } got = {0, ""};
	st_error err;
	ck_assert_int_eq(st_check_path(DIR "views.zip.bin", NULL, NULL, &err), 0);
	st_file *f;
	ck_assert_int_eq(st_file_open(&f, DIR "storage_crc.bin", ST_OPEN_TORCH, &err), ST_OK);
	st_file_close(f);
	ck_assert_int_eq(st_check_path(DIR "storage_crc.bin", on_problem, &got, &err), 1);
	ck_assert_msg(strstr(got.msg, "storage_crc.bin: zip: member 'views.zip/data/0': "
	                     "ZIP bad CRC"), "%s", got.msg);
}
END_TEST

/*
 * Reads check a zip storage's CRC-32 too, once its last byte is read: in
 * storage_crc.bin (gen_formats.py flips one byte of member data/0) the
 * plain tensor f64 is the whole storage, f64.t a transposed view of it.
 */
START_TEST(test_read_crc)
{
	st_error err;
	st_file *f;
	unsigned char b[120];
	const void *p;
	/* The whole storage in two chunks: the second, last, one fails. */
	ck_assert_int_eq(st_file_open(&f, DIR "storage_crc.bin", ST_OPEN_TORCH, &err), ST_OK);
	long k = st_file_find(f, "f64", 3);
	ck_assert_int_ge(k, 0);
	ck_assert_uint_eq(st_file_tensor(f, (size_t)k)->n_bytes, 120);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 0, b, 64, &err), ST_OK);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 64, b + 64, 56, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "storage_crc.bin: tensor 'f64': zip member "
	                     "'views.zip/data/0' fails its CRC-32"), "%s", err.message);
	/* Out of order: the last byte's read checks the whole storage. */
	ck_assert_int_eq(st_file_read(f, (size_t)k, 64, b + 64, 56, &err), ST_EFORMAT);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 0, b, 64, &err), ST_OK);
	/* A part that stops short of the last byte is no full read. */
	ck_assert_int_eq(st_file_read(f, (size_t)k, 0, b, 8, &err), ST_OK);
	/* st_file_data hands out every byte: checked first. */
	ck_assert_int_eq(st_file_data(f, (size_t)k, &p, &err), ST_EFORMAT);
	st_file_close(f);
	/* The view reads part of the storage at a time: checked whole at its end. */
	ck_assert_int_eq(st_file_open(&f, DIR "storage_crc.bin", ST_OPEN_TORCH, &err), ST_OK);
	k = st_file_find(f, "f64.t", 5);
	ck_assert_int_ge(k, 0);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 0, b, 120, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "tensor 'f64.t': zip member 'views.zip/data/0' "
	                     "fails its CRC-32"), "%s", err.message);
	st_file_close(f);
	/* The intact file: every tensor read whole, and handed out. */
	ck_assert_int_eq(st_file_open(&f, DIR "views.zip.bin", ST_OPEN_TORCH, &err), ST_OK);
	for (size_t i = 0; i < st_file_n_tensors(f); i++) {
		const st_tensor *t = st_file_tensor(f, i);
		unsigned char *buf = malloc(t->n_bytes ? t->n_bytes : 1);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(st_file_read(f, i, 0, buf, t->n_bytes, &err), ST_OK);
		ck_assert_int_eq(st_file_data(f, i, &p, &err), ST_OK);
		ck_assert(memcmp(p, buf, t->n_bytes) == 0);
		free(buf);
	}
	st_file_close(f);
}
END_TEST

START_TEST(test_checkpoint)
{
	st_checkpoint *c;
	st_error err;
	/* A directory holding only pytorch_model.bin opens with the flag. */
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "snapshot", ST_OPEN_TORCH, &err), ST_OK);
	ck_assert_uint_eq(st_checkpoint_n_tensors(c), 1);
	float v[3];
	ck_assert_int_eq(st_checkpoint_read(c, 0, 0, v, 12, &err), ST_OK);
	ck_assert(v[0] == 1 && v[2] == 1);
	st_checkpoint_close(c);
	/* Shards with pytorch_model.bin.index.json: one checkpoint. */
	ck_assert_msg(st_checkpoint_open(&c, DIR "sharded", ST_OPEN_TORCH, &err) == ST_OK,
	              "%s", err.message);
	ck_assert_uint_eq(st_checkpoint_n_files(c), 2);
	ck_assert_uint_eq(st_checkpoint_n_tensors(c), 16);
	ck_assert_str_eq(st_checkpoint_index_path(c), DIR "sharded/pytorch_model.bin.index.json");
	ck_assert_int_ge(st_checkpoint_find(c, "lm_head.weight", 14), 0);
	st_checkpoint_close(c);
	/* And not without it. */
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "sharded", 0, &err), ST_ENOTFOUND);
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "snapshot", 0, &err), ST_ENOTFOUND);
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "state.bin", 0, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "zip archive") != NULL, "%s", err.message);
}
END_TEST

static void refused(const char *name, const char *needle)
{
	st_file *f = NULL;
	st_error err = {0};
	char path[512];
	snprintf(path, sizeof path, DIR "%s", name);
	ck_assert_int_eq(st_file_open(&f, path, ST_OPEN_TORCH, &err), ST_EFORMAT);
	ck_assert_ptr_eq(f, NULL);
	ck_assert_msg(strstr(err.message, needle) != NULL, "%s: '%s' lacks '%s'",
	              name, err.message, needle);
	ck_assert(strstr(err.message, name) != NULL);
}

START_TEST(test_refused)
{
	refused("evil.bin", "refusing to load 'posix.system'");
	refused("truncated.bin", "truncated or damaged file");
}
END_TEST

/* Every truncation and many corruptions of a real file: refused or read
 * (a storage's bytes then fail its CRC), never a crash (ASan in CI). */
START_TEST(test_corruption)
{
	FILE *fp = fopen(DIR "state.bin", "rb");
	ck_assert(fp != NULL);
	unsigned char buf[8192];
	size_t n = fread(buf, 1, sizeof buf, fp);
	fclose(fp);
	for (size_t cut = 0; cut < n; cut += 7) {
		st_file *f = NULL;
		st_error err;
		if (st_file_open_memory(&f, buf, cut, "t", ST_OPEN_TORCH, &err) == ST_OK)
			st_file_close(f);
	}
	unsigned char *copy = malloc(n);
	for (size_t i = 0; i < n; i++) {
		memcpy(copy, buf, n);
		copy[i] ^= 0x5a;
		st_file *f = NULL;
		st_error err;
		if (st_file_open_memory(&f, copy, n, "c", ST_OPEN_TORCH, &err) == ST_OK) {
			for (size_t k = 0; k < st_file_n_tensors(f); k++) {
				const void *p;
				/* A flipped storage byte is found by its CRC-32. */
				int rc = st_file_data(f, k, &p, &err);
				ck_assert_msg(rc == ST_OK || (rc == ST_EFORMAT &&
				              strstr(err.message, "CRC-32")), "%s", err.message);
			}
			st_file_close(f);
		}
	}
	free(copy);
}
END_TEST

/* ---- found by fuzzing and by hand (tests/fuzz/README.md) -------------- */

/* A growable byte string, for pickles and zips built here. */
struct bytes {
	unsigned char *b;
	size_t n, cap;
};

static void put(struct bytes *o, const void *p, size_t n)
{
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2;
		o->b = realloc(o->b, o->cap);
		ck_assert(o->b != NULL);
	}
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void put_le(struct bytes *o, uint64_t v, int width)
{
	unsigned char b[8];
	for (int i = 0; i < width; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put(o, b, (size_t)width);
}

static void put_s(struct bytes *o, const char *s)
{
	put(o, s, strlen(s));
}

/* BINUNICODE. */
static void pk_str(struct bytes *o, const void *s, size_t len)
{
	put(o, "X", 1);
	put_le(o, len, 4);
	put(o, s, len);
}

/* BININT (non-negative here). */
static void pk_int(struct bytes *o, uint32_t v)
{
	put(o, "J", 1);
	put_le(o, v, 4);
}

/*
 * _rebuild_tensor_v2(('storage', FloatStorage, key, 'cpu', numel),
 * offset, size, stride, False, OrderedDict()), as torch.save writes it.
 */
static void pk_view(struct bytes *o, const char *key, uint32_t numel,
                    uint32_t offset, unsigned nd, const uint32_t *size,
                    const uint32_t *stride)
{
	put_s(o, "ctorch._utils\n_rebuild_tensor_v2\n(");
	put_s(o, "(");
	pk_str(o, "storage", 7);
	put_s(o, "ctorch\nFloatStorage\n");
	pk_str(o, key, strlen(key));
	pk_str(o, "cpu", 3);
	pk_int(o, numel);
	put_s(o, "tQ");
	pk_int(o, offset);
	put_s(o, "(");
	for (unsigned d = 0; d < nd; d++)
		pk_int(o, size[d]);
	put_s(o, "t(");
	for (unsigned d = 0; d < nd; d++)
		pk_int(o, stride[d]);
	put_s(o, "t\x89" "ccollections\nOrderedDict\n)R" "tR");
}

/* A contiguous tensor that is its whole storage: (numel,), (1,). */
static void pk_tensor(struct bytes *o, const char *key, uint32_t numel)
{
	static const uint32_t one = 1;
	pk_view(o, key, numel, 0, 1, &numel, &one);
}

struct zent {
	const char *name;
	const void *data;
	size_t len;
	unsigned method;    /* 0 stored, 8 deflate (data taken as is) */
	uint64_t usize;     /* uncompressed size claimed; 0: len */
};

/* A zip of the entries, with a central directory (no zip64). */
static unsigned char *zip(const struct zent *e, size_t n, size_t *len)
{
	struct bytes z = {0}, cd = {0};
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(e[i].name);
		uint64_t us = e[i].usize ? e[i].usize : e[i].len;
		uint64_t at = z.n;
		put_le(&z, 0x04034b50, 4);
		put_le(&z, 20, 2);
		put_le(&z, 0, 2);
		put_le(&z, e[i].method, 2);
		put_le(&z, 0, 4);  /* time, date */
		uint32_t crc = (uint32_t)crc32(0, e[i].data, (uInt)e[i].len);
		if (e[i].method == 8)
			crc = 0; /* deflate entries here are built to be refused */
		put_le(&z, crc, 4);
		put_le(&z, e[i].len, 4);
		put_le(&z, us, 4);
		put_le(&z, nl, 2);
		put_le(&z, 0, 2);
		put(&z, e[i].name, nl);
		if (e[i].len)
			put(&z, e[i].data, e[i].len);
		put_le(&cd, 0x02014b50, 4);
		put_le(&cd, 20, 2);
		put_le(&cd, 20, 2);
		put_le(&cd, 0, 2);
		put_le(&cd, e[i].method, 2);
		put_le(&cd, 0, 4);
		put_le(&cd, crc, 4);
		put_le(&cd, e[i].len, 4);
		put_le(&cd, us, 4);
		put_le(&cd, nl, 2);
		put_le(&cd, 0, 2);  /* extra */
		put_le(&cd, 0, 2);  /* comment */
		put_le(&cd, 0, 2);  /* disk */
		put_le(&cd, 0, 2);  /* internal attributes */
		put_le(&cd, 0, 4);  /* external attributes */
		put_le(&cd, at, 4);
		put(&cd, e[i].name, nl);
	}
	uint64_t cd_at = z.n;
	put(&z, cd.b, cd.n);
	put_le(&z, 0x06054b50, 4);
	put_le(&z, 0, 4);
	put_le(&z, n, 2);
	put_le(&z, n, 2);
	put_le(&z, cd.n, 4);
	put_le(&z, cd_at, 4);
	put_le(&z, 0, 2);
	free(cd.b);
	*len = z.n;
	return z.b;
}

/* Open a zip of data.pkl (pkl) and the storages data/0..: rc and message. */
static int open_pickle(const struct bytes *pkl, size_t n_storages,
                       size_t storage_len, st_file **out, st_error *err)
{
	struct zent *e = calloc(n_storages + 1, sizeof *e);
	char (*names)[40] = calloc(n_storages + 1, sizeof *names);
	static const unsigned char zero[64];
	ck_assert(e && names && storage_len <= sizeof zero);
	e[0] = (struct zent){"archive/data.pkl", pkl->b, pkl->n, 0, 0};
	for (size_t i = 0; i < n_storages; i++) {
		snprintf(names[i + 1], sizeof names[i + 1], "archive/data/%zu", i);
		e[i + 1] = (struct zent){names[i + 1], zero, storage_len, 0, 0};
	}
	size_t len;
	unsigned char *z = zip(e, n_storages + 1, &len);
	free(e);
	free(names);
	*out = NULL;
	int rc = st_file_open_memory(out, z, len, "p.bin", ST_OPEN_TORCH, err);
	if (rc == ST_OK) {
		/* The buffer must outlive the file: keep it with the caller. */
		static unsigned char *keep;
		free(keep);
		keep = z;
	} else
		free(z);
	return rc;
}

/* A stored entry's two sizes must agree: else a tensor ran past the file. */
START_TEST(test_stored_sizes)
{
	struct bytes pkl = {0};
	put_s(&pkl, "\x80\x02}(");
	pk_str(&pkl, "w", 1);
	pk_tensor(&pkl, "0", 250);
	put_s(&pkl, "u.");
	static const unsigned char four[4] = {1, 2, 3, 4};
	struct zent e[2] = {{"archive/data.pkl", pkl.b, pkl.n, 0, 0},
	                    {"archive/data/0", four, 4, 0, 1000}};
	size_t len;
	unsigned char *z = zip(e, 2, &len);
	st_file *f = NULL;
	st_error err;
	ck_assert_int_eq(st_file_open_memory(&f, z, len, "s.bin", ST_OPEN_TORCH, &err),
	                 ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "s.bin: zip: member 'archive/data/0': ZIP "
	                     "uncompressed data is wrong size"), "%s", err.message);
	free(z);
	free(pkl.b);
}
END_TEST

/* A deflated data.pkl claiming 1 GiB from 2 bytes is refused unread. */
START_TEST(test_deflate_claim)
{
	static const unsigned char empty_deflate[2] = {0x03, 0x00};
	struct zent e[1] = {{"archive/data.pkl", empty_deflate, 2, 8, 1u << 30}};
	size_t len;
	unsigned char *z = zip(e, 1, &len);
	st_file *f = NULL;
	st_error err;
	ck_assert_int_eq(st_file_open_memory(&f, z, len, "d.bin", ST_OPEN_TORCH, &err),
	                 ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "member 'archive/data.pkl': ZIP uncompressed "
	                     "data is wrong size"), "%s", err.message);
	free(z);
}
END_TEST

/* A data.pkl whose bytes do not match its CRC-32 is refused. */
START_TEST(test_bad_crc)
{
	struct bytes pkl = {0};
	put_s(&pkl, "\x80\x02}(");
	pk_str(&pkl, "w", 1);
	pk_tensor(&pkl, "0", 1);
	put_s(&pkl, "u.");
	static const unsigned char four[4] = {1, 2, 3, 4};
	struct zent e[2] = {{"archive/data.pkl", pkl.b, pkl.n, 0, 0},
	                    {"archive/data/0", four, 4, 0, 0}};
	size_t len;
	unsigned char *z = zip(e, 2, &len);
	st_file *f = NULL;
	st_error err;
	ck_assert_int_eq(st_file_open_memory(&f, z, len, "c.bin", ST_OPEN_TORCH, &err),
	                 ST_OK);
	st_file_close(f);
	/* The key "w" becomes "v": a valid pickle, a wrong CRC. */
	size_t at = 30 + strlen("archive/data.pkl") + 9;
	ck_assert_int_eq(z[at], 'w');
	z[at] = 'v';
	ck_assert_int_eq(st_file_open_memory(&f, z, len, "c.bin", ST_OPEN_TORCH, &err),
	                 ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "c.bin: zip: member 'archive/data.pkl': "
	                     "ZIP bad CRC"), "%s", err.message);
	free(z);
	free(pkl.b);
}
END_TEST

/*
 * A real zip bomb: 64 MiB of zeros deflated to a few KiB, declared as 100
 * bytes, is stopped at the first chunk that passes the declared size.
 */
START_TEST(test_zip_bomb)
{
	size_t big = (size_t)64 << 20;
	unsigned char *zeros = calloc(1, big);
	uLong cap = compressBound((uLong)big);
	unsigned char *def = malloc(cap);
	ck_assert(zeros && def);
	z_stream zs = {0};
	ck_assert_int_eq(deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = zeros;
	zs.avail_in = (uInt)big;
	zs.next_out = def;
	zs.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	size_t dlen = zs.total_out;
	deflateEnd(&zs);
	free(zeros);
	ck_assert_uint_lt(dlen, 1 << 20);
	struct zent e[1] = {{"archive/data.pkl", def, dlen, 8, 100}};
	size_t len;
	unsigned char *z = zip(e, 1, &len);
	st_file *f = NULL;
	st_error err;
	ck_assert_int_eq(st_file_open_memory(&f, z, len, "b.bin", ST_OPEN_TORCH, &err),
	                 ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "b.bin: zip: member 'archive/data.pkl' "
	                     "inflates past its declared 100 bytes"),
	              "%s", err.message);
	free(z);
	free(def);
}
END_TEST

/*
 * Stride 0 makes one element stand for any number: a view expanded past
 * its storage and the file by more than 64 MiB is refused (found by
 * fuzz_tar: 4 bytes stood for 2^58 and st_file_data allocated them), as
 * are many smaller ones adding up past 16 times the file.
 */
static void pk_expanded(struct bytes *o, const char *key, uint32_t rows,
                        uint32_t cols)
{
	put_s(o, "ctorch._utils\n_rebuild_tensor_v2\n((");
	pk_str(o, "storage", 7);
	put_s(o, "ctorch\nFloatStorage\n");
	pk_str(o, key, strlen(key));
	pk_str(o, "cpu", 3);
	pk_int(o, 1);
	put_s(o, "tQ");
	pk_int(o, 0);
	put_s(o, "(");
	pk_int(o, rows);
	pk_int(o, cols);
	put_s(o, "t(");
	pk_int(o, 0);
	pk_int(o, 0);
	put_s(o, "t\x89" "ccollections\nOrderedDict\n)R" "tR");
}

START_TEST(test_expanded_bound)
{
	struct bytes pkl = {0};
	st_file *f;
	st_error err;
	/* 16 MiB from one element: an expanded view, read. */
	put_s(&pkl, "\x80\x02}(");
	pk_str(&pkl, "w", 1);
	pk_expanded(&pkl, "0", 2048, 2048);
	put_s(&pkl, "u.");
	ck_assert_msg(open_pickle(&pkl, 1, 4, &f, &err) == ST_OK, "%s", err.message);
	ck_assert_uint_eq(st_file_tensor(f, 0)->n_bytes, 16u << 20);
	float v[4];
	ck_assert_int_eq(st_file_read(f, 0, (16u << 20) - 16, v, 16, &err), ST_OK);
	st_file_close(f);
	/* 1 TiB: refused. */
	pkl.n = 0;
	put_s(&pkl, "\x80\x02}(");
	pk_str(&pkl, "w", 1);
	pk_expanded(&pkl, "0", 1u << 19, 1u << 19);
	put_s(&pkl, "u.");
	ck_assert_int_eq(open_pickle(&pkl, 1, 4, &f, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "tensor 'w': its contiguous form would be "
	                     "1099511627776 bytes, from a storage of 4"), "%s", err.message);
	/* Twenty of 16 MiB: 320 MiB from a file of a few hundred bytes. */
	pkl.n = 0;
	put_s(&pkl, "\x80\x02}(");
	for (int i = 0; i < 20; i++) {
		char name[8];
		snprintf(name, sizeof name, "w%d", i);
		pk_str(&pkl, name, strlen(name));
		pk_expanded(&pkl, "0", 2048 + (uint32_t)i, 2048);
	}
	put_s(&pkl, "u.");
	ck_assert_int_eq(open_pickle(&pkl, 1, 4, &f, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "the views' contiguous forms add up to"),
	              "%s", err.message);
	free(pkl.b);
}
END_TEST

/*
 * MEMOIZE stores at len(memo), the number of entries (Python's pickle:
 * pickle.loads(b'\x80\x04]q\x05}\x94h\x01.') == {}), and 300k of them run
 * in linear time (a scan of the memo for each took minutes).
 */
START_TEST(test_memoize)
{
	struct bytes pkl = {0};
	put_s(&pkl, "\x80\x04]q\x05}\x94h\x01.");
	st_file *f;
	st_error err;
	ck_assert_msg(open_pickle(&pkl, 0, 0, &f, &err) == ST_OK, "%s", err.message);
	ck_assert_uint_eq(st_file_n_tensors(f), 0);
	st_file_close(f);
	pkl.n = 0;
	put_s(&pkl, "\x80\x04}");
	for (int i = 0; i < 300000; i++)
		put_s(&pkl, "\x94");
	put_s(&pkl, ".");
	ck_assert_msg(open_pickle(&pkl, 0, 0, &f, &err) == ST_OK, "%s", err.message);
	st_file_close(f);
	free(pkl.b);
}
END_TEST

/* One dict under many keys: flattening every path took exponential time. */
START_TEST(test_shared_dict)
{
	struct bytes pkl = {0};
	char key[8];
	/* d0 = {"a": tensor}; d(j+1) = {"k0": dj, ..., "k19": dj}. */
	put_s(&pkl, "\x80\x02}(");
	pk_str(&pkl, "a", 1);
	pk_tensor(&pkl, "0", 1);
	put(&pkl, "uq\0", 3);
	for (int j = 1; j < 16; j++) {
		put_s(&pkl, "}(");
		for (int i = 0; i < 20; i++) {
			snprintf(key, sizeof key, "k%d", i);
			pk_str(&pkl, key, strlen(key));
			put(&pkl, "h", 1);
			unsigned char m = (unsigned char)(j - 1);
			put(&pkl, &m, 1);
		}
		put_s(&pkl, "uq");
		unsigned char m = (unsigned char)j;
		put(&pkl, &m, 1);
	}
	put_s(&pkl, ".");
	st_file *f;
	st_error err;
	ck_assert_int_eq(open_pickle(&pkl, 1, 4, &f, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "a dictionary appears twice"), "%s", err.message);
	/* A dict inside itself. */
	pkl.n = 0;
	put(&pkl, "\x80\x02}q\0(", 6);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof key, "k%d", i);
		pk_str(&pkl, key, strlen(key));
		put_s(&pkl, "h");
		put(&pkl, "\0", 1);
	}
	put_s(&pkl, "u.");
	ck_assert_int_eq(open_pickle(&pkl, 0, 0, &f, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "a dictionary appears twice"), "%s", err.message);
	free(pkl.b);
}
END_TEST

/*
 * A 1 MB key reused through the memo at 11 levels: ten names of 11 MB,
 * 110 MB in all, from a 1 MB pickle. Refused past 100 MB (rule 2's limit).
 */
START_TEST(test_name_bytes)
{
	struct bytes pkl = {0};
	size_t klen = 1000000;
	char *k = malloc(klen);
	ck_assert(k != NULL);
	memset(k, 'k', klen);
	/* root, then K, {} eleven times; the last {} is the leaf. */
	put_s(&pkl, "\x80\x02}");
	for (int j = 0; j < 11; j++) {
		if (j == 0) {
			pk_str(&pkl, k, klen);
			put_s(&pkl, "q\x01");
		} else
			put_s(&pkl, "h\x01");
		put_s(&pkl, "}");
	}
	put_s(&pkl, "(");
	for (char c = 'a'; c <= 'j'; c++) {
		pk_str(&pkl, &c, 1);
		pk_tensor(&pkl, "0", 1);
	}
	put_s(&pkl, "u");
	/* Each SETITEM puts a dict under K in its parent. */
	for (int j = 0; j < 11; j++)
		put_s(&pkl, "s");
	put_s(&pkl, ".");
	free(k);
	st_file *f;
	st_error err;
	ck_assert_int_eq(open_pickle(&pkl, 1, 4, &f, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "names add up to more than 100000000 bytes"),
	              "%s", err.message);
	/* Three levels (33 MB of names) still open. */
	pkl.n = 0;
	k = malloc(klen);
	memset(k, 'k', klen);
	put_s(&pkl, "\x80\x02}");
	pk_str(&pkl, k, klen);
	put_s(&pkl, "q\x01}h\x01}h\x01}(");
	for (char c = 'a'; c <= 'j'; c++) {
		pk_str(&pkl, &c, 1);
		pk_tensor(&pkl, "0", 1);
	}
	put_s(&pkl, "usss.");
	free(k);
	ck_assert_msg(open_pickle(&pkl, 1, 4, &f, &err) == ST_OK, "%s", err.message);
	ck_assert_uint_eq(st_file_n_tensors(f), 10);
	ck_assert_uint_eq(st_file_tensor(f, 0)->name_len, 3 * klen + 3 + 1);
	st_file_close(f);
	free(pkl.b);
}
END_TEST

/*
 * One size tuple of 70000 dims under 100k names: the dims were summed
 * (7e9, 56 GB) and allocated before any tensor's rank was checked.
 */
START_TEST(test_dims_before_sum)
{
	struct bytes pkl = {0};
	put_s(&pkl, "\x80\x02}(");
	pk_str(&pkl, "t0", 2);
	/* The tensor: storage of 1 element, size (1,)*70000, stride same. */
	put_s(&pkl, "ctorch._utils\n_rebuild_tensor_v2\n((");
	pk_str(&pkl, "storage", 7);
	put_s(&pkl, "ctorch\nFloatStorage\n");
	pk_str(&pkl, "0", 1);
	pk_str(&pkl, "cpu", 3);
	pk_int(&pkl, 1);
	put_s(&pkl, "tQ");
	pk_int(&pkl, 0);
	put_s(&pkl, "(");
	for (int i = 0; i < 70000; i++)
		put_s(&pkl, "K\x01");
	put_s(&pkl, "tq\x02h\x02\x89" "ccollections\nOrderedDict\n)R" "tRq\x03");
	char key[16];
	for (int i = 1; i < 100000; i++) {
		snprintf(key, sizeof key, "t%d", i);
		pk_str(&pkl, key, strlen(key));
		put_s(&pkl, "h\x03");
	}
	put_s(&pkl, "u.");
	st_file *f;
	st_error err;
	ck_assert_int_eq(open_pickle(&pkl, 1, 4, &f, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "70000 dimensions, more than 64"), "%s",
	              err.message);
	free(pkl.b);
}
END_TEST

/*
 * 60k tensors, each in its own storage (a zip without zip64 holds 65535
 * entries): a scan of the zip per lookup took 12 s.
 */
START_TEST(test_many_storages)
{
	struct bytes pkl = {0};
	size_t n = 60000;
	char key[16];
	put_s(&pkl, "\x80\x02}(");
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof key, "w%zu", i);
		pk_str(&pkl, key, strlen(key));
		snprintf(key, sizeof key, "%zu", i);
		pk_tensor(&pkl, key, 1);
	}
	put_s(&pkl, "u.");
	st_file *f;
	st_error err;
	ck_assert_msg(open_pickle(&pkl, n, 4, &f, &err) == ST_OK, "%s", err.message);
	ck_assert_uint_eq(st_file_n_tensors(f), n);
	ck_assert_int_ge(st_file_find(f, "w59999", 6), 0);
	st_file_close(f);
	free(pkl.b);
}
END_TEST

/* ---- CRC-32 of storages read in chunks, in any order ------------------ */

/* The CRC of libdeflate and the joining of pieces agree with zlib's. */
START_TEST(test_crc32)
{
	/* The check value of CRC-32 (ISO-HDLC, as zip uses it). */
	ck_assert_uint_eq(st__crc32(0, "123456789", 9), 0xcbf43926u);
	ck_assert_uint_eq(st__crc32(0, "", 0), 0);
	enum { N = 100003 };
	unsigned char *b = malloc(N);
	ck_assert_ptr_nonnull(b);
	uint32_t x = 7;
	for (size_t i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (unsigned char)(x >> 16);
	}
	uint32_t whole = (uint32_t)crc32(0, b, N);
	ck_assert_uint_eq(st__crc32(0, b, N), whole);
	static const size_t cuts[] = {0, 1, 63, 4096, 50000, 99999, N};
	for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
		size_t k = cuts[c];
		uint32_t a = st__crc32(0, b, k), z = st__crc32(0, b + k, N - k);
		ck_assert_uint_eq(st__arc_crc32_combine(a, z, N - k), whole);
	}
	free(b);
}
END_TEST

/*
 * A zip of three storages of R x C floats, each filled from a seed: w
 * reads data/0 whole, t is data/1 transposed (C x R, strides (1, C)),
 * h the second half of data/2 (a plain tensor at an offset). With bad,
 * one byte of each storage is flipped, in the first 16 KiB. Written to
 * a file, so that reads go through pread and views through the mapping.
 */
enum { CR_R = 300, CR_C = 1001, CR_N = CR_R * CR_C };

static float cr_value(unsigned storage, size_t i)
{
	uint32_t v = (uint32_t)(i * 2654435761u) ^ (storage * 0x9e3779b9u);
	return (float)(v % 100000) / 7.0f;
}

static void crc_file(const char *path, int bad)
{
	struct bytes pkl = {0};
	put_s(&pkl, "\x80\x02}(");
	pk_str(&pkl, "w", 1);
	pk_tensor(&pkl, "0", CR_N);
	uint32_t size_t2[2] = {CR_C, CR_R}, stride_t2[2] = {1, CR_C};
	pk_str(&pkl, "t", 1);
	pk_view(&pkl, "1", CR_N, 0, 2, size_t2, stride_t2);
	uint32_t half = CR_N / 2, one = 1;
	pk_str(&pkl, "h", 1);
	pk_view(&pkl, "2", CR_N, CR_N - half, 1, &half, &one);
	put_s(&pkl, "u.");
	float *st[3];
	for (unsigned k = 0; k < 3; k++) {
		st[k] = malloc(CR_N * sizeof(float));
		ck_assert_ptr_nonnull(st[k]);
		for (size_t i = 0; i < CR_N; i++)
			st[k][i] = cr_value(k, i);
	}
	struct zent e[4] = {{"archive/data.pkl", pkl.b, pkl.n, 0, 0},
	                    {"archive/data/0", st[0], CR_N * 4, 0, 0},
	                    {"archive/data/1", st[1], CR_N * 4, 0, 0},
	                    {"archive/data/2", st[2], CR_N * 4, 0, 0}};
	size_t len;
	unsigned char *z = zip(e, 4, &len);
	if (bad) {
		/* The CRCs are of the intact bytes: flip one of each storage. */
		for (unsigned k = 0; k < 3; k++) {
			unsigned char *at = memmem(z, len, st[k], 64);
			ck_assert_ptr_nonnull(at);
			/* data/2: in the half that h reads, early in it. */
			at[k == 2 ? (CR_N - half) * 4 + 5000 : 5000 + 3000 * k] ^= 0x10;
		}
	}
	FILE *fp = fopen(path, "wb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(z, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);
	for (unsigned k = 0; k < 3; k++)
		free(st[k]);
	free(z);
	free(pkl.b);
}

/* Tensor name's expected bytes (of the intact file). */
static unsigned char *cr_expected(const char *name)
{
	float *o = malloc(CR_N * sizeof(float));
	ck_assert_ptr_nonnull(o);
	if (!strcmp(name, "w")) {
		for (size_t i = 0; i < CR_N; i++)
			o[i] = cr_value(0, i);
	} else if (!strcmp(name, "t")) {
		for (size_t i = 0; i < CR_C; i++)
			for (size_t j = 0; j < CR_R; j++)
				o[i * CR_R + j] = cr_value(1, j * CR_C + i);
	} else {
		for (size_t i = 0; i < CR_N / 2; i++)
			o[i] = cr_value(2, CR_N - CR_N / 2 + i);
	}
	return (unsigned char *)o;
}

/* A permutation of 0..n-1 (pattern 0: in order, 1: reversed, 2: a
 * shuffle, 3: even chunks first, then odd ones). */
static size_t *cr_order(size_t n, int pattern)
{
	size_t *o = malloc(n * sizeof *o), m = 0;
	ck_assert_ptr_nonnull(o);
	for (size_t i = 0; i < n; i++)
		o[i] = pattern == 1 ? n - 1 - i : i;
	if (pattern == 2) {
		uint32_t x = 99;
		for (size_t i = n; i-- > 1;) {
			x = x * 1664525u + 1013904223u;
			size_t j = x % (i + 1), tmp = o[i];
			o[i] = o[j];
			o[j] = tmp;
		}
	} else if (pattern == 3) {
		for (size_t i = 0; i < n; i += 2)
			o[m++] = i;
		for (size_t i = 1; i < n; i += 2)
			o[m++] = i;
	}
	return o;
}

/*
 * Read tensor name of path in chunks of cs bytes in the given pattern:
 * the position in that order of the read that failed (-1: none), and
 * only one may fail. Reads give the expected bytes (those of a bad file
 * may not: only the storage's CRC tells).
 */
static long cr_read(const char *path, const char *name, size_t cs, int pattern,
                    size_t *n_chunks)
{
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open(&f, path, ST_OPEN_TORCH, &err), ST_OK);
	long k = st_file_find(f, name, strlen(name));
	ck_assert_int_ge(k, 0);
	const st_tensor *t = st_file_tensor(f, (size_t)k);
	size_t nb = (size_t)t->n_bytes, n = (nb + cs - 1) / cs;
	unsigned char *want = cr_expected(name), *buf = malloc(cs);
	size_t *order = cr_order(n, pattern);
	long failed = -1;
	for (size_t i = 0; i < n; i++) {
		size_t off = order[i] * cs, len = nb - off < cs ? nb - off : cs;
		int rc = st_file_read(f, (size_t)k, off, buf, len, &err);
		if (rc != ST_OK) {
			ck_assert_int_eq(rc, ST_EFORMAT);
			ck_assert_msg(failed < 0, "%s: reads %ld and %zu failed", name,
			              failed, i);
			char msg[100];
			snprintf(msg, sizeof msg, "tensor '%s': zip member 'archive/data/", name);
			ck_assert_msg(strstr(err.message, msg) &&
			              strstr(err.message, "fails its CRC-32"), "%s", err.message);
			failed = (long)i;
		} else if (strstr(path, "good")) {
			ck_assert_msg(memcmp(buf, want + off, len) == 0,
			              "%s: chunk %zu differs", name, order[i]);
		}
	}
	const void *p;
	int rc = st_file_data(f, (size_t)k, &p, &err);
	ck_assert_int_eq(rc, failed >= 0 ? ST_EFORMAT : ST_OK);
	if (rc == ST_OK)
		ck_assert(memcmp(p, want, nb) == 0);
	st_file_close(f);
	free(order);
	free(buf);
	free(want);
	*n_chunks = n;
	return failed;
}

/*
 * Chunks in any order: the read that completes a storage checks it, with
 * no second pass; so for a whole-storage tensor, a view (its share of the
 * storage read from the mapping) and part of a storage (read with pread).
 */
START_TEST(test_crc_chunks)
{
	char good[] = "/tmp/st_crc_good.XXXXXX", bad[] = "/tmp/st_crc_bad.XXXXXX";
	int fd = mkstemp(good);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_ge(fd = mkstemp(bad), 0);
	close(fd);
	crc_file(good, 0);
	crc_file(bad, 1);
	static const char *names[] = {"w", "t", "h"};
	for (size_t k = 0; k < 3; k++) {
		for (int pattern = 0; pattern < 3; pattern++) {
			/* 65521 (prime): chunks cut elements, as st_stream's chunks can. */
			size_t n;
			ck_assert_int_eq(cr_read(good, names[k], 65521, pattern, &n), -1);
			ck_assert_uint_gt(n, 8);
			/* The last read in any order is the one that completes it. */
			ck_assert_int_eq(cr_read(bad, names[k], 65521, pattern, &n),
			                 (long)n - 1);
		}
		/*
		 * Evens, then odds, of many small chunks: more gaps than are
		 * kept, so the read of the last byte reads the storage whole.
		 */
		size_t n;
		ck_assert_int_eq(cr_read(good, names[k], 4099, 3, &n), -1);
		ck_assert_uint_gt(n, 2 * 64 + 2);
		size_t *order = cr_order(n, 3), at = 0;
		while (order[at] != n - 1)
			at++;
		free(order);
		ck_assert_int_eq(cr_read(bad, names[k], 4099, 3, &n), (long)at);
	}
	unlink(good);
	unlink(bad);
}
END_TEST

/* Reads that overlap, and a storage read twice: joined once, checked. */
START_TEST(test_crc_overlap)
{
	char bad[] = "/tmp/st_crc_bad.XXXXXX";
	int fd = mkstemp(bad);
	ck_assert_int_ge(fd, 0);
	close(fd);
	crc_file(bad, 1);
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open(&f, bad, ST_OPEN_TORCH, &err), ST_OK);
	long k = st_file_find(f, "w", 1);
	ck_assert_int_ge(k, 0);
	size_t nb = CR_N * 4;
	unsigned char *b = malloc(nb);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 100000, b, 300000, &err), ST_OK);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 0, b, 200000, &err), ST_OK);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 150000, b, 400000, &err), ST_OK);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 500000, b, nb - 500000, &err),
	                 ST_EFORMAT);
	/* Found bad: a read of the last byte fails at once, others do not. */
	ck_assert_int_eq(st_file_read(f, (size_t)k, nb - 4, b, 4, &err), ST_EFORMAT);
	ck_assert_int_eq(st_file_read(f, (size_t)k, 0, b, nb - 4, &err), ST_OK);
	st_file_close(f);
	free(b);
	unlink(bad);
}
END_TEST

struct cr_thread {
	st_file *f;
	size_t k, nb, cs;
	size_t *next;      /* the next chunk to claim, shared */
	int failures;
	int differ;
	const unsigned char *want;
};

static void *cr_reader(void *arg)
{
	struct cr_thread *c = arg;
	unsigned char *b = malloc(c->cs);
	for (;;) {
		size_t i = __atomic_fetch_add(c->next, 1, __ATOMIC_RELAXED);
		size_t off = i * c->cs;
		if (off >= c->nb)
			break;
		size_t len = c->nb - off < c->cs ? c->nb - off : c->cs;
		st_error err;
		if (st_file_read(c->f, c->k, off, b, len, &err) != ST_OK)
			c->failures++;
		else if (c->want && memcmp(b, c->want + off, len))
			c->differ++;
	}
	free(b);
	return NULL;
}

/* Four threads reading one tensor's chunks as they claim them: the bad
 * storage fails exactly one read, the good one none. */
START_TEST(test_crc_threads)
{
	char path[] = "/tmp/st_crc.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	static const char *names[] = {"w", "t", "h"};
	for (int bad = 0; bad < 2; bad++) {
		crc_file(path, bad);
		for (size_t n = 0; n < 3; n++) {
			st_file *f;
			st_error err;
			ck_assert_int_eq(st_file_open(&f, path, ST_OPEN_TORCH, &err), ST_OK);
			long k = st_file_find(f, names[n], 1);
			ck_assert_int_ge(k, 0);
			unsigned char *want = cr_expected(names[n]);
			size_t next = 0;
			struct cr_thread c[4];
			pthread_t tid[4];
			for (int i = 0; i < 4; i++) {
				c[i] = (struct cr_thread){f, (size_t)k,
				                          (size_t)st_file_tensor(f, (size_t)k)->n_bytes,
				                          32771, &next, 0, 0, bad ? NULL : want};
				ck_assert_int_eq(pthread_create(&tid[i], NULL, cr_reader, &c[i]), 0);
			}
			int failures = 0;
			for (int i = 0; i < 4; i++) {
				pthread_join(tid[i], NULL);
				failures += c[i].failures;
				ck_assert_int_eq(c[i].differ, 0);
			}
			ck_assert_int_eq(failures, bad);
			st_file_close(f);
			free(want);
		}
	}
	unlink(path);
}
END_TEST

/*
 * End to end: stconvert of a zip whose one 24 MiB storage (six of its
 * 4 MiB chunks, read by all its workers) has a byte flipped in its first
 * chunk exits 2 naming the tensor, and leaves nothing in the output's
 * directory; the intact file converts to the storage's bytes.
 */
START_TEST(test_crc_stconvert)
{
	const char *sc = ST_BINDIR "/stconvert";
	if (access(sc, X_OK) != 0)
		return; /* a library-only build */
	enum { NF = 6 << 20 };
	float *w = malloc(NF * sizeof *w);
	ck_assert_ptr_nonnull(w);
	for (size_t i = 0; i < NF; i++)
		w[i] = cr_value(5, i);
	struct bytes pkl = {0};
	put_s(&pkl, "\x80\x02}(");
	pk_str(&pkl, "w", 1);
	pk_tensor(&pkl, "0", NF);
	put_s(&pkl, "u.");
	struct zent e[2] = {{"archive/data.pkl", pkl.b, pkl.n, 0, 0},
	                    {"archive/data/0", w, (size_t)NF * 4, 0, 0}};
	size_t len;
	unsigned char *z = zip(e, 2, &len);
	char dir[] = "/tmp/st_crc_cli.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char in[64], out[64], cmd[400];
	snprintf(in, sizeof in, "%s/in.bin", dir);
	snprintf(out, sizeof out, "%s/out.safetensors", dir);
	for (int bad = 1; bad >= 0; bad--) {
		unsigned char *at = memmem(z, len, w, 64);
		ck_assert_ptr_nonnull(at);
		at[100000] ^= bad ? 0x04 : 0; /* and back for the intact one */
		FILE *fp = fopen(in, "wb");
		ck_assert_ptr_nonnull(fp);
		ck_assert_uint_eq(fwrite(z, 1, len, fp), len);
		ck_assert_int_eq(fclose(fp), 0);
		at[100000] ^= bad ? 0x04 : 0;
		snprintf(cmd, sizeof cmd, "'%s' -q '%s' '%s' 2>'%s/err'", sc, in, out, dir);
		int st = system(cmd);
		ck_assert(WIFEXITED(st));
		ck_assert_int_eq(WEXITSTATUS(st), bad ? 2 : 0);
		snprintf(cmd, sizeof cmd, "%s/err", dir);
		fp = fopen(cmd, "rb");
		ck_assert_ptr_nonnull(fp);
		char msg[600] = "";
		size_t k = fread(msg, 1, sizeof msg - 1, fp);
		msg[k] = 0;
		fclose(fp);
		unlink(cmd);
		if (bad) {
			ck_assert_msg(strstr(msg, "tensor 'w': zip member 'archive/data/0' "
			                     "fails its CRC-32"), "%s", msg);
			/* Nothing written: no output, no temporary file. */
			snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s')\" = in.bin", dir);
			ck_assert_int_eq(system(cmd), 0);
		} else {
			st_file *f;
			st_error err;
			const void *p;
			ck_assert_msg(msg[0] == 0, "%s", msg);
			ck_assert_int_eq(st_file_open(&f, out, 0, &err), ST_OK);
			ck_assert_int_eq(st_file_data(f, 0, &p, &err), ST_OK);
			ck_assert(memcmp(p, w, (size_t)NF * 4) == 0);
			st_file_close(f);
			unlink(out);
		}
	}
	unlink(in);
	rmdir(dir);
	free(z);
	free(w);
	free(pkl.b);
}
END_TEST

/*
 * Views large enough for many tiles, with edge sizes (tiled/gen_tiled.py):
 * whole, and in reads of sizes that cut elements, in and out of order,
 * bit-identical to torch's .contiguous().
 */
START_TEST(test_tiled_views)
{
	const char *bin = DIR "tiled/tiled.bin", *exp = DIR "tiled/tiled.expected.safetensors";
	same_tensors(bin, exp, 6);
	st_file *a, *b;
	st_error err;
	ck_assert_int_eq(st_file_open(&a, bin, ST_OPEN_TORCH, &err), ST_OK);
	ck_assert_int_eq(st_file_open(&b, exp, 0, &err), ST_OK);
	static const size_t sizes[] = {1, 7, 1000, 4093, 65539};
	for (size_t i = 0; i < st_file_n_tensors(b); i++) {
		const st_tensor *x = st_file_tensor(b, i);
		long j = st_file_find(a, x->name, x->name_len);
		ck_assert_int_ge(j, 0);
		const void *q;
		ck_assert_int_eq(st_file_data(b, i, &q, &err), ST_OK);
		size_t nb = (size_t)x->n_bytes;
		unsigned char *buf = malloc(nb), *piece = malloc(65539 + 16);
		for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
			size_t cs = sizes[s], n = (nb + cs - 1) / cs;
			if (n > 20000)
				continue;
			for (int pattern = 0; pattern < 4; pattern++) {
				size_t *order = cr_order(n, pattern);
				memset(buf, 0xa5, nb);
				for (size_t c = 0; c < n; c++) {
					size_t off = order[c] * cs, len = nb - off < cs ? nb - off : cs;
					/* Nothing is written past the bytes asked for. */
					memset(piece, 0x5a, cs + 16);
					ck_assert_int_eq(st_file_read(a, (size_t)j, off, piece, len,
					                              &err), ST_OK);
					for (size_t g = len; g < cs + 16; g++)
						ck_assert_uint_eq(piece[g], 0x5a);
					memcpy(buf + off, piece, len);
				}
				ck_assert_msg(memcmp(buf, q, nb) == 0, "'%s': reads of %zu differ",
				              x->name, cs);
				free(order);
			}
		}
		free(piece);
		free(buf);
	}
	st_file_close(a);
	st_file_close(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("torch");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_state_dict);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_zip64);
	tcase_add_test(tc, test_formats);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_check_crc);
	tcase_add_test(tc, test_read_crc);
	tcase_add_test(tc, test_safetensors_like_pickle);
	tcase_add_test(tc, test_checkpoint);
	tcase_add_test(tc, test_tiled_views);
	suite_add_tcase(s, tc);
	tc = tcase_create("crc");
	tcase_add_test(tc, test_crc32);
	tcase_add_test(tc, test_crc_chunks);
	tcase_add_test(tc, test_crc_overlap);
	tcase_add_test(tc, test_crc_threads);
	tcase_add_test(tc, test_crc_stconvert);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_corruption);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("hardening");
	tcase_add_test(tc, test_stored_sizes);
	tcase_add_test(tc, test_deflate_claim);
	tcase_add_test(tc, test_bad_crc);
	tcase_add_test(tc, test_zip_bomb);
	tcase_add_test(tc, test_key_list);
	tcase_add_test(tc, test_expanded_bound);
	tcase_add_test(tc, test_memoize);
	tcase_add_test(tc, test_shared_dict);
	tcase_add_test(tc, test_name_bytes);
	tcase_add_test(tc, test_dims_before_sum);
	tcase_add_test(tc, test_many_storages);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
