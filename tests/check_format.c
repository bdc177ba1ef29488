/*
 * check_format.c - the reader against every rule of FORMAT.md: each fixture
 * of testdata/format/MANIFEST.tsv (made byte by byte by gen_fixtures.py)
 * through the path reader, the memory reader and the full check, plus the
 * tensor table, metadata, lookups and data access of valid files.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#define DIR ST_TESTDATA "/format/"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	ck_assert(buf != NULL);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

struct counts {
	int errors, warnings;
	char first[1024];
	char all[8192];
};

static void collect(void *ctx, int severity, const char *msg)
{
	struct counts *c = ctx;
	if (severity == ST_PROBLEM_ERROR) {
		if (!c->errors++)
			snprintf(c->first, sizeof c->first, "%s", msg);
	} else
		c->warnings++;
	size_t n = strlen(c->all);
	snprintf(c->all + n, sizeof c->all - n, "%s\n", msg);
}

/* Every manifest row, three ways. */
START_TEST(test_manifest)
{
	FILE *m = fopen(DIR "MANIFEST.tsv", "r");
	ck_assert(m != NULL);
	char line[2048];
	int rows = 0;
	while (fgets(line, sizeof line, m)) {
		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = 0;
		char *name = strtok(line, "\t");
		char *expect = strtok(NULL, "\t");
		char *needle = strtok(NULL, "\t");
		char *comment = strtok(NULL, "\t");
		if (!strcmp(expect, "ok") || !strcmp(expect, "warning")) {
			comment = needle;
			needle = NULL;
			if (!strcmp(expect, "warning")) {
				needle = comment;
				comment = strtok(NULL, "\t");
			}
		}
		char path[1024];
		snprintf(path, sizeof path, DIR "%s", name);
		int want_ok = strcmp(expect, "error") != 0;

		/* The path reader. */
		st_error err = {0};
		st_file *f = NULL;
		int rc = st_file_open(&f, path, 0, &err);
		if (want_ok)
			ck_assert_msg(rc == ST_OK, "%s (%s): %s", name, comment, err.message);
		else {
			ck_assert_msg(rc == ST_EFORMAT, "%s (%s): rc %d", name, comment, rc);
			ck_assert_msg(f == NULL, "%s: handle on failure", name);
			ck_assert_msg(strstr(err.message, needle) != NULL,
			              "%s: message '%s' lacks '%s'", name, err.message, needle);
			ck_assert_msg(strstr(err.message, path) == err.message,
			              "%s: message '%s' does not start with the path", name,
			              err.message);
			ck_assert_msg(err.code == ST_EFORMAT, "%s: err.code", name);
		}

		/* The memory reader gives the same verdict and message body. */
		size_t len;
		char *buf = slurp(path, &len);
		st_file *g = NULL;
		st_error err2 = {0};
		rc = st_file_open_memory(&g, buf, len, name, 0, &err2);
		ck_assert_msg((rc == ST_OK) == want_ok, "%s: memory reader rc %d", name, rc);
		if (!want_ok)
			ck_assert_msg(strcmp(strchr(err.message, ':'), strchr(err2.message, ':')) == 0,
			              "%s: path and memory messages differ: '%s' vs '%s'",
			              name, err.message, err2.message);
		if (want_ok) {
			ck_assert_uint_eq(st_file_n_tensors(f), st_file_n_tensors(g));
			for (size_t i = 0; i < st_file_n_tensors(f); i++) {
				const void *a, *b;
				const st_tensor *t = st_file_tensor(f, i);
				ck_assert_int_eq(st_file_data(f, i, &a, NULL), ST_OK);
				ck_assert_int_eq(st_file_data(g, i, &b, NULL), ST_OK);
				ck_assert(memcmp(a, b, t->n_bytes) == 0);
			}
		}
		st_file_close(g);

		/* The full check: errors counted, warnings apart. */
		struct counts c = {0};
		int n = st_check_file(path, collect, &c, NULL);
		ck_assert_int_eq(n, c.errors);
		if (want_ok)
			ck_assert_msg(c.errors == 0, "%s: check found %s", name, c.first);
		else
			ck_assert_msg(c.errors >= 1 && strstr(c.all, needle),
			              "%s: check said '%s'", name, c.all);
		if (!strcmp(expect, "warning")) {
			ck_assert_int_eq(c.warnings, 1);
			ck_assert(strstr(c.all, needle) != NULL);
			ck_assert_uint_eq(st_file_n_warnings(f), 1);
			ck_assert(strstr(st_file_warning(f, 0), needle) != NULL);
		}
		struct counts c2 = {0};
		ck_assert_int_eq(st_check_memory(buf, len, name, collect, &c2), c.errors);
		free(buf);
		st_file_close(f);
		rows++;
	}
	fclose(m);
	ck_assert_int_ge(rows, 60);
}
END_TEST

START_TEST(test_check_lists_every_problem)
{
	struct counts c = {0};
	int n = st_check_file(DIR "bad_many.safetensors", collect, &c, NULL);
	ck_assert_msg(n >= 3, "only %d problems: %s", n, c.all);
	ck_assert(strstr(c.all, "unknown dtype 'X'") != NULL);
	ck_assert(strstr(c.all, "tensor 'b': data_offsets [0, 1) hold 1 bytes; U8 [2] needs 2") != NULL);
	ck_assert(strstr(c.all, "trailing") != NULL || strstr(c.all, "gap") != NULL);
}
END_TEST

START_TEST(test_table)
{
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open(&f, DIR "ok_unordered.safetensors", 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_tensors(f), 2);
	/* Data order, not header order. */
	ck_assert_str_eq(st_file_tensor(f, 0)->name, "a");
	ck_assert_str_eq(st_file_tensor(f, 1)->name, "b");
	ck_assert_int_eq(st_file_find(f, "b", 1), 1);
	ck_assert_int_eq(st_file_find(f, "c", 1), -1);
	ck_assert_uint_eq(st_file_header_size(f) % 8, 0);
	ck_assert_uint_eq(st_file_data_size(f), 4);
	ck_assert_uint_eq(st_file_data_offset(f) + 4, st_file_size(f));
	char buf[2];
	ck_assert_int_eq(st_file_read(f, 1, 0, buf, 2, &err), ST_OK);
	ck_assert(memcmp(buf, "cd", 2) == 0);
	ck_assert_int_eq(st_file_read(f, 1, 1, buf, 2, &err), ST_EINVAL);
	st_file_close(f);
	st_file_close(NULL);

	ck_assert_int_eq(st_file_open(&f, DIR "ok_simple.safetensors", 0, &err), ST_OK);
	const void *p;
	ck_assert_int_eq(st_file_data(f, 0, &p, &err), ST_OK);
	float v[2];
	memcpy(v, p, 8);
	ck_assert(v[0] == 1.5f && v[1] == -2.0f);
	const st_tensor *t = st_file_tensor(f, 0);
	ck_assert_int_eq(t->dtype, ST_DTYPE_F32);
	ck_assert_uint_eq(t->ndim, 1);
	ck_assert_uint_eq(t->shape[0], 2);
	ck_assert_uint_eq(t->n_elements, 2);
	ck_assert_uint_eq(t->n_bytes, 8);
	ck_assert_uint_eq(st_file_n_meta(f), 0);
	st_file_close(f);
}
END_TEST

START_TEST(test_metadata)
{
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open(&f, DIR "ok_metadata.safetensors", 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_meta(f), 2);
	ck_assert_str_eq(st_file_meta_get(f, "format"), "pt");
	ck_assert_str_eq(st_file_meta_get(f, "k"), "v");
	ck_assert_ptr_eq(st_file_meta_get(f, "nope"), NULL);
	ck_assert_str_eq(st_file_meta(f, 1)->key, "k");
	st_file_close(f);
	ck_assert_int_eq(st_file_open(&f, DIR "ok_metadata_null.safetensors", 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_meta(f), 0);
	st_file_close(f);
}
END_TEST

START_TEST(test_names)
{
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open(&f, DIR "ok_nul_name.safetensors", 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_tensors(f), 2);
	const st_tensor *t = st_file_tensor(f, 0);
	ck_assert_uint_eq(t->name_len, 3);
	ck_assert(memcmp(t->name, "a\0b", 3) == 0);
	ck_assert_int_eq(st_file_find(f, "a\0b", 3), 0);
	ck_assert_int_eq(st_file_find(f, "a", 1), 1);
	st_file_close(f);
	ck_assert_int_eq(st_file_open(&f, DIR "ok_unicode_name.safetensors", 0, &err), ST_OK);
	ck_assert_str_eq(st_file_tensor(f, 0)->name, "h\xc3\xa9\xc3\xa9\xf0\x9f\x98\x80");
	st_file_close(f);
	ck_assert_int_eq(st_file_open(&f, DIR "ok_empty_name.safetensors", 0, &err), ST_OK);
	ck_assert_int_eq(st_file_find(f, "", 0), 0);
	st_file_close(f);
}
END_TEST

START_TEST(test_shapes)
{
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open(&f, DIR "ok_scalar.safetensors", 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_tensor(f, 0)->ndim, 0);
	ck_assert_uint_eq(st_file_tensor(f, 0)->n_elements, 1);
	st_file_close(f);
	ck_assert_int_eq(st_file_open(&f, DIR "ok_empty_tensor.safetensors", 0, &err), ST_OK);
	long i = st_file_find(f, "e", 1);
	ck_assert_int_ge(i, 0);
	ck_assert_uint_eq(st_file_tensor(f, (size_t)i)->n_elements, 0);
	const void *p = NULL;
	ck_assert_int_eq(st_file_data(f, (size_t)i, &p, &err), ST_OK);
	ck_assert_ptr_ne(p, NULL);
	st_file_close(f);
	ck_assert_int_eq(st_file_open(&f, DIR "ok_all_dtypes.safetensors", 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_tensors(f), 19);
	st_file_close(f);
}
END_TEST

START_TEST(test_io_errors)
{
	st_file *f = (st_file *)1;
	st_error err;
	ck_assert_int_eq(st_file_open(&f, DIR "does-not-exist.safetensors", 0, &err), ST_EIO);
	ck_assert_ptr_eq(f, NULL);
	ck_assert(strstr(err.message, "does-not-exist.safetensors") != NULL);
	ck_assert(strstr(err.message, "No such file") != NULL);
	ck_assert_int_eq(st_file_open(&f, DIR, 0, &err), ST_EIO);
	ck_assert(strstr(err.message, "directory") != NULL);
	/* Unreadable is not a rule violation for a check. */
	struct counts c = {0};
	ck_assert_int_eq(st_check_file(DIR "nope", collect, &c, &err), ST_EIO);
	ck_assert_int_eq(c.errors, 0);
	ck_assert_str_eq(st_strerror(ST_EFORMAT), "not a valid safetensors file");
}
END_TEST

/* Every truncation of a valid file is rejected, never crashes. */
START_TEST(test_every_truncation)
{
	size_t len;
	char *buf = slurp(DIR "ok_metadata.safetensors", &len);
	for (size_t n = 0; n < len; n++) {
		st_file *f = NULL;
		st_error err;
		ck_assert_int_eq(st_file_open_memory(&f, buf, n, "t", 0, &err), ST_EFORMAT);
	}
	/* And every single-byte corruption is either accepted or rejected cleanly. */
	for (size_t i = 0; i < len; i++) {
		char *copy = malloc(len);
		memcpy(copy, buf, len);
		for (int v = 0; v < 256; v += 51) {
			copy[i] = (char)v;
			st_file *f = NULL;
			st_error err;
			if (st_file_open_memory(&f, copy, len, "c", 0, &err) == ST_OK)
				st_file_close(f);
		}
		free(copy);
	}
	free(buf);
}
END_TEST

/* ---- found by fuzzing and by hand (tests/fuzz/README.md) -------------- */

/* A file of `header` (its bytes) and `data` zero bytes, malloc'd. */
static unsigned char *make_file(const char *header, size_t hlen, size_t data,
                                size_t *len)
{
	unsigned char *buf = calloc(1, 8 + hlen + data);
	ck_assert(buf != NULL);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	memcpy(buf + 8, header, hlen);
	*len = 8 + hlen + data;
	return buf;
}

struct tally {
	int errors, warnings;
	char last[1024];
};

static void tally(void *ctx, int severity, const char *msg)
{
	struct tally *t = ctx;
	if (severity == ST_PROBLEM_ERROR)
		t->errors++;
	else
		t->warnings++;
	snprintf(t->last, sizeof t->last, "%s", msg);
}

/* Every repeat of a metadata key is an error; the first value is kept. */
START_TEST(test_meta_duplicates)
{
	struct counts c = {0};
	int n = st_check_file(DIR "bad_meta_dup_three.safetensors", collect, &c,
	                      NULL);
	ck_assert_msg(n == 3, "%d problems: %s", n, c.all);
	const char *json = "{\"__metadata__\":{\"b\":\"1\",\"a\":\"2\","
	                   "\"b\":\"3\",\"a\":\"4\",\"c\":\"5\"}}";
	struct st__header h;
	struct tally t = {0};
	struct st__report r = {.path = "m", .fn = tally, .ctx = &t};
	ck_assert_int_eq(st__header_parse(&h, json, strlen(json), 0, &r), ST_OK);
	ck_assert_int_eq(t.errors, 2);
	ck_assert_uint_eq(h.n_meta, 3);
	ck_assert_str_eq(h.meta[0].key, "b");
	ck_assert_str_eq(h.meta[0].value, "1");
	ck_assert_str_eq(h.meta[1].key, "a");
	ck_assert_str_eq(h.meta[1].value, "2");
	ck_assert_str_eq(h.meta[2].key, "c");
	st__header_free(&h);
}
END_TEST

/*
 * 200k metadata keys: comparing each with all before it took 43 s; a
 * sort takes milliseconds. The bound leaves room for a slow sanitizer run.
 */
START_TEST(test_many_meta_keys)
{
	size_t n = 200000, cap = 32 + n * 24, k = 0;
	char *json = malloc(cap);
	ck_assert(json != NULL);
	k += (size_t)snprintf(json + k, cap - k, "{\"__metadata__\":{");
	for (size_t i = 0; i < n; i++)
		k += (size_t)snprintf(json + k, cap - k, "%s\"key%zu\":\"v\"",
		                      i ? "," : "", i);
	k += (size_t)snprintf(json + k, cap - k, "}}");
	size_t len;
	unsigned char *buf = make_file(json, k, 0, &len);
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open_memory(&f, buf, len, "m", 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_meta(f), n);
	ck_assert_str_eq(st_file_meta_get(f, "key199999"), "v");
	st_file_close(f);
	struct tally t = {0};
	ck_assert_int_eq(st_check_memory(buf, len, "m", tally, &t), 0);
	free(buf);
	free(json);
}
END_TEST

/*
 * Unknown fields: each is reported to a full check, but the table keeps
 * the first 1000 and a count, so that a header of millions of them does
 * not cost gigabytes.
 */
START_TEST(test_warning_cap)
{
	size_t n = 1500, cap = 128 + n * 16, k = 0;
	char *json = malloc(cap);
	ck_assert(json != NULL);
	k += (size_t)snprintf(json + k, cap - k, "{\"t\":{\"dtype\":\"U8\","
	                      "\"shape\":[1],\"data_offsets\":[0,1]");
	for (size_t i = 0; i < n; i++)
		k += (size_t)snprintf(json + k, cap - k, ",\"u\":%zu", i);
	k += (size_t)snprintf(json + k, cap - k, "}}");
	size_t len;
	unsigned char *buf = make_file(json, k, 1, &len);
	struct tally t = {0};
	ck_assert_int_eq(st_check_memory(buf, len, "w", tally, &t), 0);
	ck_assert_int_eq(t.warnings, (int)n);
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open_memory(&f, buf, len, "w", 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_warnings(f), 1001);
	ck_assert_str_eq(st_file_warning(f, 0), "tensor 't': unknown field 'u' (ignored)");
	ck_assert_str_eq(st_file_warning(f, 1000),
	                 "500 more unknown fields (ignored, not listed)");
	st_file_close(f);
	free(buf);
	free(json);
}
END_TEST

/* Run fn(f) in a child; it must die by SIGABRT (the misuse policy). */
static void expect_abort(void (*fn)(st_file *), st_file *f)
{
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* The message goes to stderr; keep the test's output clean. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(3);
		fn(f);
		_exit(0);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	              "status %d: no abort", status);
}

static void tensor_past_end(st_file *f) { (void)st_file_tensor(f, st_file_n_tensors(f)); }
static void meta_past_end(st_file *f) { (void)st_file_meta(f, st_file_n_meta(f)); }
static void data_past_end(st_file *f)
{
	const void *p;
	(void)st_file_data(f, st_file_n_tensors(f), &p, NULL);
}
static void read_past_end(st_file *f)
{
	char b[1];
	(void)st_file_read(f, st_file_n_tensors(f) + 7, 0, b, 1, NULL);
}

START_TEST(test_index_out_of_range_aborts)
{
	st_file *f;
	st_error err;
	ck_assert_int_eq(st_file_open(&f, DIR "ok_unordered.safetensors", 0, &err), ST_OK);
	expect_abort(tensor_past_end, f);
	expect_abort(meta_past_end, f);
	expect_abort(data_past_end, f);
	expect_abort(read_past_end, f);
	/* A range outside a tensor is checked, not a misuse of the table. */
	char buf[2];
	ck_assert_int_eq(st_file_read(f, 1, 1, buf, 2, &err), ST_EINVAL);
	st_file_close(f);
}
END_TEST

/* st_sniff on real files of each kind and on hand-built heads. */
START_TEST(test_sniff)
{
	static const struct {
		const char *path;
		int kind;
	} files[] = {
		{"/format/ok_all_dtypes.safetensors", ST_KIND_SAFETENSORS},
		{"/format/ok_empty_header.safetensors", ST_KIND_SAFETENSORS},
		{"/format/ok_leading_ws.safetensors", ST_KIND_SAFETENSORS},
		{"/gguf/ok_all_types.gguf", ST_KIND_GGUF},
		{"/gguf/ok_v2.gguf", ST_KIND_GGUF},
		{"/torch/ckpt.zip.bin", ST_KIND_ZIP},
		{"/torch/ckpt.legacy.bin", ST_KIND_PICKLE},
		{"/torch/ckpt.tar.bin", ST_KIND_TAR},
		{"/index/bad_shard/model.safetensors.index.json", ST_KIND_JSON},
		{"/torch/README.md", ST_KIND_TEXT},
		{"/format", ST_KIND_DIRECTORY},
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char path[1024];
		snprintf(path, sizeof path, "%s%s", ST_TESTDATA, files[i].path);
		int kind = -1;
		st_error err;
		ck_assert_int_eq(st_sniff_path(path, &kind, &err), ST_OK);
		ck_assert_msg(kind == files[i].kind, "%s: kind %d (%s), want %d",
		              files[i].path, kind, st_kind_name(kind), files[i].kind);
	}
	static const struct {
		const char *head;
		size_t len;
		uint64_t size;
		int kind;
	} heads[] = {
		{"", 0, 0, ST_KIND_EMPTY},
		{"version https://git-lfs.github.com/spec/v1\noid sha256:", 53, 53,
		 ST_KIND_LFS_POINTER},
		{"\n  <!DOCTYPE html><html>", 24, 24, ST_KIND_HTML},
		{"<?xml version=\"1.0\"?>", 21, 21, ST_KIND_HTML},
		{"\xef\xbb\xbf{\"weight_map\": {}}", 21, 21, ST_KIND_JSON},
		{"hello world\n", 12, 12, ST_KIND_TEXT},
		{"h\xc3\xa9llo \xe2\x96\x81", 10, 10, ST_KIND_TEXT},
		/* A UTF-8 sequence cut by the end of the sample. */
		{"abc\xe2\x96", 5, 9, ST_KIND_TEXT},
		{"abc\xff", 4, 4, ST_KIND_UNKNOWN},
		{"abc\x01", 4, 4, ST_KIND_UNKNOWN},
		{"\x1f\x8b\x08\x00", 4, 4, ST_KIND_GZIP},
		{"\x80\x02}q\x00.", 6, 6, ST_KIND_PICKLE},
		{"GGUF\x03\x00\x00\x00", 8, 8, ST_KIND_GGUF},
		{"PK\x03\x04", 4, 4, ST_KIND_ZIP},
		/* A length that fits, whitespace, '{'. */
		{"\x04\x00\x00\x00\x00\x00\x00\x00 {}", 11, 12, ST_KIND_SAFETENSORS},
		/* The same length in a file too short for it. */
		{"\x04\x00\x00\x00\x00\x00\x00\x00 {}", 11, 11, ST_KIND_UNKNOWN},
		/* A length that fits wins over a pickle's PROTO 2 in it. */
		{"\x80\x02\x00\x00\x00\x00\x00\x00{}", 10, 1000, ST_KIND_SAFETENSORS},
		/* A stream (size unknown). */
		{"\x02\x00\x00\x00\x00\x00\x00\x00{}", 10, UINT64_MAX,
		 ST_KIND_SAFETENSORS},
	};
	for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
		int kind = st_sniff(heads[i].head, heads[i].len, heads[i].size);
		ck_assert_msg(kind == heads[i].kind, "head %zu: kind %d (%s), want %d",
		              i, kind, st_kind_name(kind), heads[i].kind);
	}
	/* A tar header: "ustar" at offset 257. */
	char tar[512];
	memset(tar, 0, sizeof tar);
	memcpy(tar, "archive/data.pkl", 16);
	memcpy(tar + 257, "ustar", 5);
	ck_assert_int_eq(st_sniff(tar, sizeof tar, 10240), ST_KIND_TAR);
	ck_assert_int_eq(st_sniff(tar, 261, 10240), ST_KIND_UNKNOWN);
	for (int k = 0; k < ST_KIND_COUNT; k++)
		ck_assert(st_kind_name(k)[0] == 'a');
	ck_assert_str_eq(st_kind_name(-1), "a file of an unknown kind");
	ck_assert_str_eq(st_kind_name(ST_KIND_COUNT), "a file of an unknown kind");
	int kind = 7;
	st_error err;
	ck_assert_int_eq(st_sniff_path(ST_TESTDATA "/no/such/file", &kind, &err),
	                 ST_EIO);
	ck_assert(strstr(err.message, "/no/such/file") != NULL);
	ck_assert_int_eq(kind, 7);
}
END_TEST

/* Every message is one line (doc/errors.md): a file's bytes below 0x20
 * and DEL in it come out as \xNN, cut whole when they do not fit. */
START_TEST(test_messages_one_line)
{
	st_error e;
	st__error(&e, ST_EFORMAT, "f: '%s'", "a\nb\x1b[2J\x7f\t");
	ck_assert_str_eq(e.message, "f: 'a\\x0ab\\x1b[2J\\x7f\\x09'");
	st__error(&e, ST_EFORMAT, "plain \\ text");
	ck_assert_str_eq(e.message, "plain \\ text");
	char big[600];
	memset(big, 'n', sizeof big);
	big[sizeof big - 1] = 0;
	big[509] = '\n'; /* its escape would end past the 511 bytes: cut there */
	st__error(&e, ST_EFORMAT, "%s", big);
	ck_assert_uint_eq(strlen(e.message), 509);
	ck_assert(strchr(e.message, '\n') == NULL && strchr(e.message, '\\') == NULL);
	big[509] = 'n';
	big[300] = '\r';
	st__error(&e, ST_EFORMAT, "%s", big);
	ck_assert_uint_eq(strlen(e.message), 511);
	ck_assert(strstr(e.message, "n\\x0dn") != NULL);
	char line[64];
	snprintf(line, sizeof line, "x\033y");
	st__one_line(line, sizeof line);
	ck_assert_str_eq(line, "x\\x1by");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, test_manifest);
	tcase_add_test(tc, test_check_lists_every_problem);
	suite_add_tcase(s, tc);
	tc = tcase_create("core");
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_index_out_of_range_aborts);
	tcase_add_test(tc, test_messages_one_line);
	tcase_add_test(tc, test_metadata);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_shapes);
	tcase_add_test(tc, test_sniff);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_io_errors);
	tcase_add_test(tc, test_every_truncation);
	suite_add_tcase(s, tc);
	tc = tcase_create("hardening");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_meta_duplicates);
	tcase_add_test(tc, test_many_meta_keys);
	tcase_add_test(tc, test_warning_cap);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
