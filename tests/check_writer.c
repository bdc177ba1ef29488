/*
 * check_writer.c - unit tests of the writer (libst/writer.c) and of the
 * shard index writer (libst/index_write.c).
 *
 * The expected files in testdata/writer/ were made by gen_writer.py, which
 * re-implements the reference serializer (huggingface/safetensors) and
 * Python's json.dumps without libst; every case here mirrors one there.
 * Tensor data follow the same rule in both: byte j of the k-th declared
 * tensor is (k * 31 + j * 7 + 1) & 0xff.
 *
 * It does not test reading (check_format.c, check_file.c).
 */
#include <st.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define S(lit) lit, sizeof(lit) - 1

/* ---- helpers ---------------------------------------------------------------- */

#define TMPDIR_NAME "check_writer"
#include "tmpdir.h"

static void assert_file_is(const char *path, const char *content)
{
	size_t len;
	char *got = read_file(path, &len);
	ck_assert_msg(len == strlen(content) && memcmp(got, content, len) == 0,
	              "%s was changed", path);
	free(got);
}

/* The number of entries in the test directory; a leftover temp file shows. */
static int dir_entries(void)
{
	DIR *d = opendir(tmp);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static const char *tpath(const char *name)
{
	static char p[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s/%s", tmp, name);
	return p[k];
}

static void fill(unsigned char *p, size_t n, size_t k)
{
	for (size_t j = 0; j < n; j++)
		p[j] = (unsigned char)((k * 31 + j * 7 + 1) & 0xff);
}

/* ---- the cases (mirrors gen_writer.py) ------------------------------------ */

struct ct {
	const char *name;
	size_t len;
	st_dtype dtype;
	unsigned ndim;
	uint64_t shape[10];
};
struct cm {
	const char *key, *value;
};
struct wcase {
	const char *file;
	const struct ct *t;
	size_t n;
	const struct cm *m;
	size_t n_meta;
};

#define F16 ST_DTYPE_F16
#define BF16 ST_DTYPE_BF16

static const struct ct t_single[] = {{S("attn.0"), ST_DTYPE_F32, 3, {1, 2, 3}}};

static const struct ct t_w_u8[] = {{S("w"), ST_DTYPE_U8, 1, {3}}};
static const struct cm m_sorted[] = {
	{"zeta", "1"}, {"alpha", "2"}, {"format", "tf"}, {"Beta", "3"},
	{"\xc3\xa9", "4"}, {"", "empty"}, {"alphabet", "5"}, {"format", "flax"},
};

static const struct ct t_w_i8[] = {{S("w"), ST_DTYPE_I8, 1, {2}}};
static const struct cm m_default[] = {{"a", "b"}, {"zz", "y"}};

/* Filled by init_all_dtypes(), as gen_writer.py builds its list. */
static struct ct t_all[24];
static char all_names[22][3];

static const struct ct t_names[] = {
	{S("b"), F16, 1, {1}}, {S("a"), F16, 1, {1}}, {S("ab"), F16, 1, {1}},
	{S("a\0"), F16, 1, {1}}, {S("a\0b"), F16, 1, {1}}, {S(""), F16, 1, {1}},
	{S("B"), F16, 1, {1}}, {S("\xc3\xa9"), F16, 1, {1}}, {S("\x7f"), F16, 1, {1}},
	{S("a b"), F16, 1, {1}}, {S("~"), F16, 1, {1}},
	{S("\xf0\x9d\x84\x9e"), F16, 1, {1}}, {S("aa"), F16, 1, {1}},
	{S("A"), F16, 1, {1}},
};

static const struct ct t_escapes[] = {
	{S("quote\"s"), BF16, 1, {1}}, {S("back\\slash"), BF16, 1, {1}},
	{S("nl\n"), BF16, 1, {1}}, {S("tab\t"), BF16, 1, {1}},
	{S("cr\r"), BF16, 1, {1}}, {S("bs\b"), BF16, 1, {1}},
	{S("ff\f"), BF16, 1, {1}}, {S("c1\x01"), BF16, 1, {1}},
	{S("c1f\x1f"), BF16, 1, {1}}, {S("nul\0end"), BF16, 1, {1}},
	{S("del\x7f"), BF16, 1, {1}}, {S("slash/"), BF16, 1, {1}},
	{S("\xc3\xbc"), BF16, 1, {1}}, {S("emoji\xf0\x9f\x98\x80"), BF16, 1, {1}},
	{S("lt<gt>&amp"), BF16, 1, {1}}, {S("ls\xe2\x80\xa8"), BF16, 1, {1}},
};
static const struct cm m_escapes[] = {
	{"key\"q", "va\\l\n"}, {"ctl", "\x01\x1f"}, {"\xc3\xbc", "\xf0\x9f\x98\x80"},
};

static const struct ct t_empty[] = {
	{S("scalar_f64"), ST_DTYPE_F64, 0, {0}},
	{S("empty_0x5"), ST_DTYPE_F32, 2, {0, 5}},
	{S("empty_3x0"), ST_DTYPE_F32, 2, {3, 0}},
	{S("scalar_bool"), ST_DTYPE_BOOL, 0, {0}},
	{S("empty1d"), ST_DTYPE_I32, 1, {0}},
	{S("f4_empty"), ST_DTYPE_F4, 1, {0}},
	{S("ones"), ST_DTYPE_U8, 10, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
};

static const struct ct t_large[] = {
	{S("huge_empty"), ST_DTYPE_U64, 2, {0, UINT64_MAX}},
	{S("wide_empty"), ST_DTYPE_F32, 2, {4294967296u, 0}},
};

#define NELEM(a) (sizeof(a) / sizeof(a)[0])
static const struct wcase cases[] = {
	{"single_f32", t_single, 1, NULL, 0},
	{"metadata_sorted", t_w_u8, 1, m_sorted, NELEM(m_sorted)},
	{"format_default", t_w_i8, 1, m_default, NELEM(m_default)},
	{"all_dtypes", t_all, 24, NULL, 0},
	{"names_sorted", t_names, NELEM(t_names), NULL, 0},
	{"escapes", t_escapes, NELEM(t_escapes), m_escapes, NELEM(m_escapes)},
	{"empty_scalar", t_empty, NELEM(t_empty), NULL, 0},
	{"no_tensors", NULL, 0, NULL, 0},
	{"shape_large", t_large, NELEM(t_large), NULL, 0},
};
enum { CASE_ALL = 3, CASE_ESCAPES = 5 };

static void init_all_dtypes(void)
{
	static const char *ref_names[22] = {
		"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2",
		"F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16",
		"F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64",
	};
	struct ct all[24];
	ck_assert_int_eq(ST_DTYPE_COUNT, 22);
	for (int i = 0; i < 22; i++) {
		/* The enum must be the reference's order, or the sort differs. */
		ck_assert_str_eq(st_dtype_name((st_dtype)i), ref_names[i]);
		all_names[i][0] = 't';
		all_names[i][1] = (char)('a' + i);
		all_names[i][2] = 0;
		all[i] = (struct ct){all_names[i], 2, (st_dtype)i, 1, {2}};
		if (i == ST_DTYPE_F4)
			all[i].ndim = 2, all[i].shape[0] = 2, all[i].shape[1] = 3;
		if (i == ST_DTYPE_F6_E2M3)
			all[i].shape[0] = 4;
		if (i == ST_DTYPE_F6_E3M2)
			all[i].ndim = 2, all[i].shape[0] = 2, all[i].shape[1] = 4;
	}
	all[22] = (struct ct){S("a_f32"), ST_DTYPE_F32, 2, {3, 1}};
	all[23] = (struct ct){S("z_u8"), ST_DTYPE_U8, 1, {5}};
	/* Declared as _all[5:] + _all[:5][::-1]. */
	int k = 0;
	for (int i = 5; i < 24; i++)
		t_all[k++] = all[i];
	for (int i = 4; i >= 0; i--)
		t_all[k++] = all[i];
}

static void setup(void)
{
	init_all_dtypes();
	tmpdir_setup();
}

static void teardown(void)
{
	tmpdir_teardown();
}

static st_writer *build(const struct wcase *c)
{
	st_writer *w;
	st_error err;
	ck_assert_int_eq(st_writer_new(&w, &err), ST_OK);
	for (size_t i = 0; i < c->n_meta; i++)
		ck_assert_int_eq(st_writer_set_meta(w, c->m[i].key, c->m[i].value, &err), ST_OK);
	for (size_t i = 0; i < c->n; i++) {
		const struct ct *t = &c->t[i];
		int rc = st_writer_add(w, t->name, t->len, t->dtype, t->ndim, t->shape, &err);
		ck_assert_msg(rc == ST_OK, "%s: add %zu: %s", c->file, i, err.message);
	}
	return w;
}

/* The whole data buffer in canonical order, as the writer wants it. */
static unsigned char *case_data(const struct wcase *c, st_writer *w, size_t *len)
{
	size_t n = st_writer_n_tensors(w), total = 0;
	ck_assert_uint_eq(n, c->n);
	for (size_t i = 0; i < n; i++)
		total += (size_t)st_writer_tensor(w, i)->n_bytes;
	unsigned char *data = malloc(total ? total : 1);
	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_writer_tensor(w, i);
		size_t k = 0;
		while (k < c->n && !(c->t[k].len == t->name_len &&
		                     memcmp(c->t[k].name, t->name, t->name_len) == 0))
			k++;
		ck_assert_uint_lt(k, c->n);
		fill(data + t->begin, (size_t)t->n_bytes, k);
	}
	*len = total;
	return data;
}

/* Build case c, write it to path in chunks of `chunk` bytes, finish. */
static void write_case(const struct wcase *c, const char *path, size_t chunk)
{
	st_error err;
	st_writer *w = build(c);
	size_t len;
	unsigned char *data = case_data(c, w, &len);
	ck_assert_int_eq(st_writer_open(w, path, &err), ST_OK);
	for (size_t off = 0; off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		int rc = st_writer_write(w, data + off, n, &err);
		ck_assert_msg(rc == ST_OK, "%s", err.message);
	}
	int rc = st_writer_finish(w, &err);
	ck_assert_msg(rc == ST_OK, "%s", err.message);
	ck_assert_ptr_null(st_writer_temp_path(w));
	st_writer_free(w);
	free(data);
}

static void assert_same_as_expected(const char *got_path, const char *expected)
{
	char ep[512];
	snprintf(ep, sizeof ep, "%s/writer/%s", ST_TESTDATA, expected);
	size_t el, gl;
	char *e = read_file(ep, &el), *g = read_file(got_path, &gl);
	size_t i = 0;
	while (i < el && i < gl && e[i] == g[i])
		i++;
	ck_assert_msg(el == gl && i == el,
	              "%s differs from %s at byte %zu (sizes %zu, %zu)",
	              got_path, ep, i, gl, el);
	free(e);
	free(g);
}

/* ---- canonical -------------------------------------------------------------- */

START_TEST(test_case_bytes)
{
	const struct wcase *c = &cases[_i];
	char name[128];
	snprintf(name, sizeof name, "%s.safetensors", c->file);
	write_case(c, tpath(name), SIZE_MAX);
	assert_same_as_expected(tpath(name), name);
	ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

/* Header padding: "x" * k, k = 1..8, covers all 8 lengths mod 8. */
START_TEST(test_pad_bytes)
{
	char name[16], file[64];
	int k = _i;
	memset(name, 'x', (size_t)k);
	struct ct t = {name, (size_t)k, ST_DTYPE_U8, 1, {1}};
	struct wcase c = {"pad", &t, 1, NULL, 0};
	snprintf(file, sizeof file, "pad_%d.safetensors", k);
	write_case(&c, tpath(file), SIZE_MAX);
	assert_same_as_expected(tpath(file), file);
}
END_TEST

START_TEST(test_header_is_file_prefix)
{
	const struct wcase *c = &cases[_i];
	char ep[512];
	snprintf(ep, sizeof ep, "%s/writer/%s.safetensors", ST_TESTDATA, c->file);
	size_t el;
	char *e = read_file(ep, &el);
	st_writer *w = build(c);
	const void *h;
	size_t hl;
	st_error err;
	ck_assert_int_eq(st_writer_header(w, &h, &hl, &err), ST_OK);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | ((const unsigned char *)h)[i];
	ck_assert_uint_eq(hl, 8 + n);
	ck_assert_uint_eq(n % 8, 0);
	ck_assert_uint_le(hl, el);
	ck_assert(memcmp(h, e, hl) == 0);
	/* The data buffer is exactly the rest of the file. */
	size_t nt = st_writer_n_tensors(w);
	uint64_t end = nt ? st_writer_tensor(w, nt - 1)->end : 0;
	ck_assert_uint_eq(hl + end, el);
	st_writer_free(w);
	free(e);
}
END_TEST

START_TEST(test_tensor_order_and_offsets)
{
	st_writer *w = build(&cases[CASE_ALL]);
	size_t n = st_writer_n_tensors(w);
	ck_assert_uint_eq(n, 24);
	uint64_t off = 0;
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_writer_tensor(w, i);
		ck_assert_uint_eq(t->begin, off);
		ck_assert_uint_eq(t->end, t->begin + t->n_bytes);
		off = t->end;
		if (i) {
			const st_tensor *p = st_writer_tensor(w, i - 1);
			ck_assert_int_ge(p->dtype, t->dtype);
			if (p->dtype == t->dtype)
				ck_assert_int_lt(strcmp(p->name, t->name), 0);
		}
	}
	const st_tensor *f4 = NULL;
	for (size_t i = 0; i < n; i++)
		if (st_writer_tensor(w, i)->dtype == ST_DTYPE_F4)
			f4 = st_writer_tensor(w, i);
	ck_assert_ptr_nonnull(f4);
	ck_assert_uint_eq(f4->n_elements, 6);
	ck_assert_uint_eq(f4->n_bytes, 3);
	ck_assert_uint_eq(f4->ndim, 2);
	/* The last one is BOOL "ta" (rank 0), whatever the names say. */
	ck_assert_str_eq(st_writer_tensor(w, n - 1)->name, "ta");
	ck_assert_str_eq(st_writer_tensor(w, 0)->name, "tv");
	st_writer_free(w);
}
END_TEST

START_TEST(test_meta_replace_and_header_refresh)
{
	st_writer *w;
	st_error err;
	const void *h;
	size_t hl;
	ck_assert_int_eq(st_writer_new(&w, &err), ST_OK);
	ck_assert_int_eq(st_writer_header(w, &h, &hl, &err), ST_OK);
	ck_assert_uint_eq(hl, 40);
	ck_assert(memcmp((const char *)h + 8, "{\"__metadata__\":{\"format\":\"pt\"}} ", 32) == 0);
	ck_assert_int_eq(st_writer_set_meta(w, "format", "mlx", &err), ST_OK);
	ck_assert_int_eq(st_writer_header(w, &h, &hl, &err), ST_OK);
	ck_assert(memcmp((const char *)h + 8, "{\"__metadata__\":{\"format\":\"mlx\"}}", 33) == 0);
	st_writer_free(w);
}
END_TEST

/* Keys set again after the header sorted them replace the right entry; a
 * key set again among many is found at once (guarded by the test timeout:
 * this was quadratic, 36 s for 100,000 keys). */
START_TEST(test_meta_many_keys_set_again_replace_their_own_entry)
{
	enum { N = 100000 };
	st_writer *w;
	const void *h;
	size_t hl;
	char k[32], v[32];
	ck_assert_int_eq(st_writer_new(&w, NULL), ST_OK);
	for (int i = N - 1; i >= 0; i--) {
		snprintf(k, sizeof k, "k%06d", i);
		snprintf(v, sizeof v, "old%d", i);
		ck_assert_int_eq(st_writer_set_meta(w, k, v, NULL), ST_OK);
	}
	/* The header sorts the entries; every odd key is then set again. */
	ck_assert_int_eq(st_writer_header(w, &h, &hl, NULL), ST_OK);
	for (int i = 1; i < N; i += 2) {
		snprintf(k, sizeof k, "k%06d", i);
		snprintf(v, sizeof v, "new%d", i);
		ck_assert_int_eq(st_writer_set_meta(w, k, v, NULL), ST_OK);
	}
	ck_assert_int_eq(st_writer_header(w, &h, &hl, NULL), ST_OK);
	st_file *f;
	ck_assert_int_eq(st_file_open_memory(&f, h, hl, "<memory>", 0, NULL), ST_OK);
	ck_assert_uint_eq(st_file_n_meta(f), N + 1); /* and "format" */
	for (int i = 0; i < N; i += 997) {
		snprintf(k, sizeof k, "k%06d", i);
		snprintf(v, sizeof v, "%s%d", i % 2 ? "new" : "old", i);
		ck_assert_str_eq(st_file_meta_get(f, k), v);
	}
	st_file_close(f);
	st_writer_free(w);
}
END_TEST

/* The JSON of w's header, from after the length to the padding. */
static const char *header_json(st_writer *w, char *out, size_t size)
{
	const void *h;
	size_t hl;
	ck_assert_int_eq(st_writer_header(w, &h, &hl, NULL), ST_OK);
	ck_assert_uint_ge(hl, 8);
	ck_assert_uint_lt(hl - 8, size);
	memcpy(out, (const char *)h + 8, hl - 8);
	size_t n = hl - 8;
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = 0;
	return out;
}

/*
 * Keys set in increasing order are placed without the key set; the
 * default "format" goes to its place among them, and a key set again
 * while they are in order (the last one, or "format") replaces its value.
 */
START_TEST(test_meta_in_order_keys_and_format_in_their_place)
{
	st_writer *w;
	char j[256];
	ck_assert_int_eq(st_writer_new(&w, NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "a", "1", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "b", "2", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "b", "3", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "z", "4", NULL), ST_OK);
	ck_assert_str_eq(header_json(w, j, sizeof j),
	                 "{\"__metadata__\":{\"a\":\"1\",\"b\":\"3\",\"format\":\"pt\",\"z\":\"4\"}}");
	ck_assert_int_eq(st_writer_set_meta(w, "format", "mlx", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "zz", "5", NULL), ST_OK);
	ck_assert_str_eq(header_json(w, j, sizeof j),
	                 "{\"__metadata__\":{\"a\":\"1\",\"b\":\"3\",\"format\":\"mlx\",\"z\":\"4\",\"zz\":\"5\"}}");
	st_writer_free(w);
}
END_TEST

/*
 * The first key out of order moves every key to the set: keys set before
 * and after it are then found and replaced, and the header sorts them,
 * including keys that differ only past their first 16 bytes.
 */
START_TEST(test_meta_out_of_order_keys_found_and_sorted)
{
	st_writer *w;
	char j[512];
	ck_assert_int_eq(st_writer_new(&w, NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "g1", "1", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "g2", "2", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "a1", "3", NULL), ST_OK); /* out of order */
	ck_assert_int_eq(st_writer_set_meta(w, "g1", "4", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "format", "mlx", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "a1", "5", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "0123456789abcdefB", "6", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "0123456789abcdef", "7", NULL), ST_OK);
	ck_assert_int_eq(st_writer_set_meta(w, "0123456789abcdefA", "8", NULL), ST_OK);
	ck_assert_str_eq(header_json(w, j, sizeof j),
	                 "{\"__metadata__\":{\"0123456789abcdef\":\"7\",\"0123456789abcdefA\":\"8\","
	                 "\"0123456789abcdefB\":\"6\",\"a1\":\"5\",\"format\":\"mlx\","
	                 "\"g1\":\"4\",\"g2\":\"2\"}}");
	st_writer_free(w);
}
END_TEST

/* Tensors added after the header sorted them: duplicates of the earlier
 * names and of the later ones are still found. */
START_TEST(test_duplicate_after_header)
{
	st_writer *w;
	uint64_t s[1] = {1};
	char name[32];
	const void *h;
	size_t hl;
	ck_assert_int_eq(st_writer_new(&w, NULL), ST_OK);
	for (int i = 0; i < 100; i++) {
		int n = snprintf(name, sizeof name, "t%d", 99 - i);
		ck_assert_int_eq(st_writer_add(w, name, (size_t)n, ST_DTYPE_U8, 1, s, NULL), ST_OK);
	}
	ck_assert_int_eq(st_writer_header(w, &h, &hl, NULL), ST_OK);
	for (int i = 0; i < 100; i++) {
		int n = snprintf(name, sizeof name, "t%d", i);
		ck_assert_int_eq(st_writer_add(w, name, (size_t)n, ST_DTYPE_U8, 1, s, NULL), ST_EINVAL);
	}
	ck_assert_int_eq(st_writer_add(w, S("u"), ST_DTYPE_U8, 1, s, NULL), ST_OK);
	ck_assert_int_eq(st_writer_add(w, S("u"), ST_DTYPE_U8, 1, s, NULL), ST_EINVAL);
	ck_assert_int_eq(st_writer_add(w, S("t7"), ST_DTYPE_U8, 1, s, NULL), ST_EINVAL);
	ck_assert_uint_eq(st_writer_n_tensors(w), 101);
	st_writer_free(w);
}
END_TEST

static void count_problem(void *ctx, int severity, const char *message)
{
	(void)message;
	if (severity == ST_PROBLEM_ERROR)
		++*(int *)ctx;
}

/*
 * Round trip through the reader (file.c): every tensor back with its dtype,
 * shape, offsets and bytes, the metadata as set, no warnings, a clean
 * full check. The byte-exact tests above do not depend on the reader.
 */
START_TEST(test_roundtrip_reader)
{
	const struct wcase *c = &cases[_i];
	const char *path = tpath("rt.safetensors");
	write_case(c, path, 5);
	st_file *f;
	st_error err;
	int rc = st_file_open(&f, path, 0, &err);
	ck_assert_msg(rc == ST_OK, "%s", err.message);
	ck_assert_uint_eq(st_file_n_tensors(f), c->n);
	ck_assert_uint_eq(st_file_n_warnings(f), 0);
	ck_assert_uint_eq(st_file_header_size(f) % 8, 0);
	for (size_t k = 0; k < c->n; k++) {
		const struct ct *want = &c->t[k];
		long i = st_file_find(f, want->name, want->len);
		ck_assert_int_ge(i, 0);
		const st_tensor *t = st_file_tensor(f, (size_t)i);
		ck_assert_uint_eq(t->name_len, want->len);
		ck_assert(memcmp(t->name, want->name, want->len) == 0);
		ck_assert_int_eq(t->dtype, want->dtype);
		ck_assert_uint_eq(t->ndim, want->ndim);
		for (unsigned d = 0; d < t->ndim; d++)
			ck_assert_uint_eq(t->shape[d], want->shape[d]);
		const void *data;
		ck_assert_int_eq(st_file_data(f, (size_t)i, &data, &err), ST_OK);
		unsigned char *exp = malloc(t->n_bytes + 1);
		fill(exp, (size_t)t->n_bytes, k);
		ck_assert(memcmp(data, exp, (size_t)t->n_bytes) == 0);
		free(exp);
	}
	/* The metadata: the last value set for each key, "format" defaulted. */
	const char *format = "pt";
	size_t n_keys = 1;
	for (size_t m = 0; m < c->n_meta; m++) {
		size_t j = 0;
		while (j < m && strcmp(c->m[j].key, c->m[m].key))
			j++;
		if (strcmp(c->m[m].key, "format") == 0)
			format = c->m[m].value;
		else if (j == m)
			n_keys++;
		size_t last = m;
		for (size_t l = m + 1; l < c->n_meta; l++)
			if (strcmp(c->m[l].key, c->m[m].key) == 0)
				last = l;
		ck_assert_str_eq(st_file_meta_get(f, c->m[m].key), c->m[last].value);
	}
	ck_assert_str_eq(st_file_meta_get(f, "format"), format);
	ck_assert_uint_eq(st_file_n_meta(f), n_keys);
	st_file_close(f);
	int errors = 0;
	ck_assert_int_eq(st_check_file(path, count_problem, &errors, &err), 0);
	ck_assert_int_eq(errors, 0);
}
END_TEST

/* ---- streaming -------------------------------------------------------------- */

START_TEST(test_stream_chunks)
{
	static const size_t chunks[] = {1, 2, 3, 7, 13, 64, 1000};
	for (int c = 0; c < 2; c++) {
		const struct wcase *wc = &cases[c ? CASE_ESCAPES : CASE_ALL];
		char name[128];
		snprintf(name, sizeof name, "%s.safetensors", wc->file);
		for (size_t i = 0; i < NELEM(chunks); i++) {
			write_case(wc, tpath(name), chunks[i]);
			assert_same_as_expected(tpath(name), name);
		}
	}
	ck_assert_int_eq(dir_entries(), 2);
}
END_TEST

/*
 * Chunks around the 2 MiB folio the writer cuts its output at: small ones
 * gathered up to the next multiple of it, whole folios written directly
 * once the file is at one, chunks that span tensors and several folios;
 * the file is the header followed by the data, byte for byte.
 */
START_TEST(test_stream_large)
{
	static const struct ct t[] = {
		{S("big"), ST_DTYPE_F32, 2, {2048, 1025}}, /* 8,396,800 bytes */
		{S("mid"), ST_DTYPE_BF16, 1, {300001}},    /* 600,002 bytes */
		{S("tiny"), ST_DTYPE_U8, 1, {3}},
	};
	struct wcase c = {"large", t, NELEM(t), NULL, 0};
	static const size_t chunks[] = {17,
	                                (1u << 20) + 1,
	                                (2u << 20) - 1,
	                                2u << 20,
	                                (2u << 20) + 1,
	                                (4u << 20) + 77,
	                                9u << 20};
	const char *path = tpath("large.safetensors");
	for (size_t k = 0; k < NELEM(chunks); k++) {
		write_case(&c, path, chunks[k]);
		st_writer *w = build(&c);
		const void *h;
		size_t hl, dl, fl;
		st_error err;
		ck_assert_int_eq(st_writer_header(w, &h, &hl, &err), ST_OK);
		unsigned char *data = case_data(&c, w, &dl);
		char *f = read_file(path, &fl);
		ck_assert_uint_eq(fl, hl + dl);
		ck_assert(memcmp(f, h, hl) == 0);
		ck_assert(memcmp(f + hl, data, dl) == 0);
		free(f);
		free(data);
		st_writer_free(w);
	}
}
END_TEST

START_TEST(test_stream_zero_length_writes)
{
	st_writer *w = build(&cases[0]);
	st_error err;
	size_t len;
	unsigned char *data = case_data(&cases[0], w, &len);
	const char *path = tpath("single_f32.safetensors");
	ck_assert_int_eq(st_writer_open(w, path, &err), ST_OK);
	ck_assert_int_eq(st_writer_write(w, NULL, 0, &err), ST_OK);
	ck_assert_int_eq(st_writer_write(w, data, 5, &err), ST_OK);
	ck_assert_int_eq(st_writer_write(w, data + 5, 0, &err), ST_OK);
	ck_assert_int_eq(st_writer_write(w, data + 5, len - 5, &err), ST_OK);
	ck_assert_int_eq(st_writer_write(w, NULL, 0, &err), ST_OK);
	ck_assert_int_eq(st_writer_finish(w, &err), ST_OK);
	st_writer_free(w);
	free(data);
	assert_same_as_expected(path, "single_f32.safetensors");
}
END_TEST

/* ---- atomic ----------------------------------------------------------------- */

START_TEST(test_free_before_finish_keeps_target)
{
	const char *path = tpath("model.safetensors");
	write_text(path, "old contents");
	st_writer *w = build(&cases[CASE_ALL]);
	st_error err;
	size_t len;
	unsigned char *data = case_data(&cases[CASE_ALL], w, &len);
	ck_assert_int_eq(st_writer_open(w, path, &err), ST_OK);
	ck_assert_int_eq(st_writer_write(w, data, len / 2, &err), ST_OK);

	/* The temporary file is hidden, beside the target. */
	const char *temp = st_writer_temp_path(w);
	ck_assert_ptr_nonnull(temp);
	char prefix[512];
	snprintf(prefix, sizeof prefix, "%s/.model.safetensors.tmp-", tmp);
	ck_assert_msg(strncmp(temp, prefix, strlen(prefix)) == 0, "temp path %s", temp);
	ck_assert_int_eq(access(temp, F_OK), 0);
	ck_assert_int_eq(dir_entries(), 2);
	assert_file_is(path, "old contents");

	st_writer_free(w);
	free(data);
	assert_file_is(path, "old contents");
	ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

START_TEST(test_free_right_after_open)
{
	st_writer *w = build(&cases[0]);
	st_error err;
	ck_assert_int_eq(st_writer_open(w, tpath("new.safetensors"), &err), ST_OK);
	ck_assert_int_eq(dir_entries(), 1);
	st_writer_free(w);
	ck_assert_int_eq(dir_entries(), 0);
}
END_TEST

START_TEST(test_missing_bytes)
{
	const char *path = tpath("model.safetensors");
	write_text(path, "old");
	st_writer *w = build(&cases[CASE_ALL]);
	st_error err;
	size_t len;
	unsigned char *data = case_data(&cases[CASE_ALL], w, &len);
	ck_assert_int_eq(st_writer_open(w, path, &err), ST_OK);
	/* Stop 20 bytes into the F64 tensor "tt" (offsets [32, 48)). */
	ck_assert_int_eq(st_writer_write(w, data, 36, &err), ST_OK);
	ck_assert_int_eq(st_writer_finish(w, &err), ST_ESTATE);
	ck_assert_int_eq(err.code, ST_ESTATE);
	ck_assert_msg(strstr(err.message, path) && strstr(err.message, "tensor 'tt'") &&
	              strstr(err.message, "4 of its 16") && strstr(err.message, "36 of 149"),
	              "%s", err.message);
	ck_assert_ptr_null(st_writer_temp_path(w));
	ck_assert_int_eq(dir_entries(), 1);
	assert_file_is(path, "old");
	/* The writer is spent. */
	ck_assert_int_eq(st_writer_finish(w, &err), ST_ESTATE);
	ck_assert_int_eq(st_writer_write(w, data, 1, &err), ST_ESTATE);
	st_writer_free(w);
	free(data);
	assert_file_is(path, "old");
}
END_TEST

/*
 * A write that fails (disk full, simulated with RLIMIT_FSIZE: with SIGXFSZ
 * ignored, write() fails with EFBIG) leaves the target untouched and no
 * temporary file. Run in a child so that the limit stays there.
 */
START_TEST(test_write_failure_efbig)
{
	const char *path = tpath("model.safetensors");
	write_text(path, "old");
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl = {65536, 65536};
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			_exit(10);
		st_writer *w;
		st_error err;
		uint64_t shape[1] = {3u << 20};
		if (st_writer_new(&w, &err) || st_writer_add(w, S("big"), ST_DTYPE_U8, 1, shape, &err) ||
		    st_writer_open(w, path, &err))
			_exit(11);
		unsigned char *buf = calloc(1, 4096);
		int rc = ST_OK;
		for (int i = 0; i < 768 && rc == ST_OK; i++)
			rc = st_writer_write(w, buf, 4096, &err);
		int code = 0;
		if (rc != ST_EIO)
			code = 12;
		else if (err.sys_errno != EFBIG)
			code = 13;
		else if (!strstr(err.message, path) || !strstr(err.message, strerror(EFBIG)))
			code = 14;
		else if (st_writer_temp_path(w) != NULL)
			code = 15;
		else if (st_writer_write(w, buf, 1, &err) != ST_ESTATE ||
		         st_writer_finish(w, &err) != ST_ESTATE)
			code = 16;
		if (code)
			fprintf(stderr, "child: rc %d: %s\n", rc, err.message);
		st_writer_free(w);
		free(buf);
		_exit(code);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	assert_file_is(path, "old");
	ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

/* Failure in finish's flush (the data all sat in the buffer). */
START_TEST(test_finish_failure_efbig)
{
	const char *path = tpath("model.safetensors");
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl = {4096, 4096};
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			_exit(10);
		st_writer *w;
		st_error err;
		uint64_t shape[1] = {100000};
		static unsigned char buf[100000];
		if (st_writer_new(&w, &err) || st_writer_add(w, S("w"), ST_DTYPE_U8, 1, shape, &err) ||
		    st_writer_open(w, path, &err) || st_writer_write(w, buf, sizeof buf, &err))
			_exit(11);
		int rc = st_writer_finish(w, &err);
		int code = rc != ST_EIO ? 12 : err.sys_errno != EFBIG ? 13 : 0;
		st_writer_free(w);
		_exit(code);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(dir_entries(), 0);
}
END_TEST

START_TEST(test_new_file_mode_follows_umask)
{
	static const mode_t masks[] = {022, 077, 002};
	for (size_t i = 0; i < NELEM(masks); i++) {
		const char *path = tpath("m.safetensors");
		unlink(path);
		mode_t old = umask(masks[i]);
		write_case(&cases[0], path, SIZE_MAX);
		umask(old);
		struct stat st;
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 0666 & ~masks[i]);
	}
}
END_TEST

START_TEST(test_existing_mode_kept)
{
	const char *path = tpath("private.safetensors");
	write_text(path, "old");
	ck_assert_int_eq(chmod(path, 0640), 0);
	write_case(&cases[0], path, SIZE_MAX);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	assert_same_as_expected(path, "single_f32.safetensors");
}
END_TEST

START_TEST(test_set_mode_and_writeback)
{
	/* Mode given before open wins over the existing file's; writeback
	 * every byte changes no byte of the output. */
	const char *path = tpath("moded.safetensors");
	write_text(path, "old");
	ck_assert_int_eq(chmod(path, 0644), 0);
	st_writer *w = build(&cases[0]);
	st_error err;
	ck_assert_int_eq(st_writer_set_mode(w, 0600, &err), ST_OK);
	st_writer_set_writeback(w, 1);
	ck_assert_int_eq(st_writer_open(w, path, &err), ST_OK);
	ck_assert_int_eq(st_writer_set_mode(w, 0644, &err), ST_ESTATE);
	const char *temp = st_writer_temp_path(w);
	struct stat st;
	ck_assert_int_eq(stat(temp, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	size_t len;
	unsigned char *data = case_data(&cases[0], w, &len);
	for (size_t i = 0; i < len; i++)
		ck_assert_int_eq(st_writer_write(w, data + i, 1, &err), ST_OK);
	ck_assert_int_eq(st_writer_finish(w, &err), ST_OK);
	st_writer_free(w);
	free(data);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	assert_same_as_expected(path, "single_f32.safetensors");
}
END_TEST

START_TEST(test_open_missing_directory)
{
	st_writer *w = build(&cases[0]);
	st_error err;
	const char *bad = tpath("no/such/dir/x.safetensors");
	ck_assert_int_eq(st_writer_open(w, bad, &err), ST_EIO);
	ck_assert_int_eq(err.sys_errno, ENOENT);
	ck_assert_msg(strstr(err.message, bad) && strstr(err.message, strerror(ENOENT)),
	              "%s", err.message);
	/* Nothing was created: the writer can still go elsewhere. */
	const char *good = tpath("single_f32.safetensors");
	ck_assert_int_eq(st_writer_open(w, good, &err), ST_OK);
	size_t len;
	unsigned char *data = case_data(&cases[0], w, &len);
	ck_assert_int_eq(st_writer_write(w, data, len, &err), ST_OK);
	ck_assert_int_eq(st_writer_finish(w, &err), ST_OK);
	st_writer_free(w);
	free(data);
	assert_same_as_expected(good, "single_f32.safetensors");
}
END_TEST

START_TEST(test_open_directory_target)
{
	st_writer *w = build(&cases[0]);
	st_error err;
	ck_assert_int_eq(st_writer_open(w, tmp, &err), ST_EIO);
	ck_assert_int_eq(err.sys_errno, EISDIR);
	char slash[600];
	snprintf(slash, sizeof slash, "%s/", tmp);
	ck_assert_int_eq(st_writer_open(w, slash, &err), ST_EINVAL);
	ck_assert_int_eq(st_writer_open(w, "", &err), ST_EINVAL);
	ck_assert_int_eq(dir_entries(), 0);
	st_writer_free(w);
}
END_TEST

/* A bare file name puts the temporary file in the current directory. */
START_TEST(test_relative_path)
{
	char cwd[4096];
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	ck_assert_int_eq(chdir(tmp), 0);
	st_writer *w = build(&cases[0]);
	st_error err;
	ck_assert_int_eq(st_writer_open(w, "rel.safetensors", &err), ST_OK);
	ck_assert_int_eq(strncmp(st_writer_temp_path(w), ".rel.safetensors.tmp-", 21), 0);
	size_t len;
	unsigned char *data = case_data(&cases[0], w, &len);
	ck_assert_int_eq(st_writer_write(w, data, len, &err), ST_OK);
	ck_assert_int_eq(st_writer_finish(w, &err), ST_OK);
	st_writer_free(w);
	free(data);
	ck_assert_int_eq(chdir(cwd), 0);
	assert_same_as_expected(tpath("rel.safetensors"), "single_f32.safetensors");
	ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

/* ---- errors ----------------------------------------------------------------- */

static st_writer *new_writer(void)
{
	st_writer *w;
	st_error err;
	ck_assert_int_eq(st_writer_new(&w, &err), ST_OK);
	return w;
}

#define ASSERT_ERR(call, want_rc, ...) do {                                    \
	st_error err_;                                                          \
	memset(&err_, 0, sizeof err_);                                          \
	int rc_ = (call);                                                       \
	ck_assert_msg(rc_ == (want_rc), "%s: rc %d (%s)", #call, rc_, err_.message); \
	ck_assert_int_eq(err_.code, (want_rc));                                 \
	const char *want_[] = {__VA_ARGS__};                                    \
	for (size_t k_ = 0; k_ < NELEM(want_); k_++)                            \
		ck_assert_msg(strstr(err_.message, want_[k_]) != NULL,             \
		              "message '%s' lacks '%s'", err_.message, want_[k_]); \
} while (0)
#define E (&err_)

START_TEST(test_duplicate_name)
{
	st_writer *w = new_writer();
	uint64_t s[1] = {2};
	ck_assert_int_eq(st_writer_add(w, S("w"), ST_DTYPE_F32, 1, s, NULL), ST_OK);
	ASSERT_ERR(st_writer_add(w, S("w"), ST_DTYPE_F16, 1, s, E), ST_EINVAL,
	           "tensor 'w'", "duplicate");
	/* Names are byte strings: "a\0b" and "a\0c" differ, "a" is a prefix. */
	ck_assert_int_eq(st_writer_add(w, S("a\0b"), ST_DTYPE_U8, 1, s, NULL), ST_OK);
	ck_assert_int_eq(st_writer_add(w, S("a\0c"), ST_DTYPE_U8, 1, s, NULL), ST_OK);
	ck_assert_int_eq(st_writer_add(w, S("a"), ST_DTYPE_U8, 1, s, NULL), ST_OK);
	ASSERT_ERR(st_writer_add(w, S("a\0b"), ST_DTYPE_U8, 1, s, E), ST_EINVAL,
	           "tensor 'a\\x00b'", "duplicate");
	ck_assert_uint_eq(st_writer_n_tensors(w), 4);
	st_writer_free(w);
}
END_TEST

/* Many names: the set grows and still finds every duplicate. */
START_TEST(test_duplicate_among_many)
{
	st_writer *w = new_writer();
	uint64_t s[1] = {1};
	char name[32];
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(name, sizeof name, "layer.%d.weight", i);
		ck_assert_int_eq(st_writer_add(w, name, (size_t)n, ST_DTYPE_U8, 1, s, NULL), ST_OK);
	}
	for (int i = 0; i < 5000; i += 499) {
		int n = snprintf(name, sizeof name, "layer.%d.weight", i);
		ck_assert_int_eq(st_writer_add(w, name, (size_t)n, ST_DTYPE_I8, 1, s, NULL), ST_EINVAL);
	}
	ck_assert_uint_eq(st_writer_n_tensors(w), 5000);
	st_writer_free(w);
}
END_TEST

START_TEST(test_reserved_and_bad_names)
{
	st_writer *w = new_writer();
	uint64_t s[1] = {2};
	ASSERT_ERR(st_writer_add(w, S("__metadata__"), ST_DTYPE_F32, 1, s, E), ST_EINVAL,
	           "'__metadata__'", "reserved");
	ASSERT_ERR(st_writer_add(w, S("bad\xff"), ST_DTYPE_F32, 1, s, E), ST_EINVAL,
	           "tensor 'bad\\xff'", "UTF-8", "offset 3");
	ASSERT_ERR(st_writer_add(w, S("\xc0\x80"), ST_DTYPE_F32, 1, s, E), ST_EINVAL, "UTF-8");
	ASSERT_ERR(st_writer_add(w, S("\xed\xa0\x80"), ST_DTYPE_F32, 1, s, E), ST_EINVAL, "UTF-8");
	ASSERT_ERR(st_writer_add(w, S("\xf4\x90\x80\x80"), ST_DTYPE_F32, 1, s, E), ST_EINVAL, "UTF-8");
	ASSERT_ERR(st_writer_add(w, S("cut\xe2\x82"), ST_DTYPE_F32, 1, s, E), ST_EINVAL, "UTF-8");
	ASSERT_ERR(st_writer_add(w, NULL, 3, ST_DTYPE_F32, 1, s, E), ST_EINVAL, "NULL");
	/* "__metadata__" with anything more is an ordinary name. */
	ck_assert_int_eq(st_writer_add(w, S("__metadata__x"), ST_DTYPE_F32, 1, s, NULL), ST_OK);
	ck_assert_int_eq(st_writer_add(w, NULL, 0, ST_DTYPE_F32, 1, s, NULL), ST_OK);
	ck_assert_uint_eq(st_writer_n_tensors(w), 2);
	st_writer_free(w);
}
END_TEST

START_TEST(test_bad_dtype_and_dims)
{
	st_writer *w = new_writer();
	uint64_t s[ST_MAX_DIMS + 1];
	for (int i = 0; i <= ST_MAX_DIMS; i++)
		s[i] = 1;
	ASSERT_ERR(st_writer_add(w, S("t"), ST_DTYPE_COUNT, 1, s, E), ST_EINVAL,
	           "tensor 't'", "dtype");
	ASSERT_ERR(st_writer_add(w, S("t"), (st_dtype)-1, 1, s, E), ST_EINVAL, "dtype");
	ASSERT_ERR(st_writer_add(w, S("t"), ST_DTYPE_F32, ST_MAX_DIMS + 1, s, E), ST_EINVAL,
	           "tensor 't'", "dimensions", "65");
	ASSERT_ERR(st_writer_add(w, S("t"), ST_DTYPE_F32, 2, NULL, E), ST_EINVAL, "tensor 't'");
	ck_assert_int_eq(st_writer_add(w, S("t"), ST_DTYPE_F32, ST_MAX_DIMS, s, NULL), ST_OK);
	ck_assert_int_eq(st_writer_add(w, S("scalar"), ST_DTYPE_F32, 0, NULL, NULL), ST_OK);
	st_writer_free(w);
}
END_TEST

START_TEST(test_size_overflow)
{
	st_writer *w = new_writer();
	uint64_t two32[2] = {1ull << 32, 1ull << 32};
	ASSERT_ERR(st_writer_add(w, S("count"), ST_DTYPE_U8, 2, two32, E), ST_EINVAL,
	           "tensor 'count'", "overflow");
	uint64_t s61[1] = {1ull << 61};
	ASSERT_ERR(st_writer_add(w, S("bits"), ST_DTYPE_U64, 1, s61, E), ST_EINVAL,
	           "tensor 'bits'", "overflow");
	ASSERT_ERR(st_writer_add(w, S("bits8"), ST_DTYPE_U8, 1, s61, E), ST_EINVAL, "overflow");
	/* Each 2^61 - 1 bytes is fine; the ninth makes the sum overflow. */
	uint64_t big[1] = {(1ull << 61) - 1};
	char name[8];
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof name, "b%d", i);
		ck_assert_int_eq(st_writer_add(w, name, 2, ST_DTYPE_U8, 1, big, NULL), ST_OK);
	}
	ASSERT_ERR(st_writer_add(w, S("b8"), ST_DTYPE_U8, 1, big, E), ST_EINVAL,
	           "tensor 'b8'", "total");
	/*
	 * The product is taken left to right, as the reference reader does: a
	 * zero before the overflow makes an empty tensor, a zero after it comes
	 * too late (a reader would reject the file).
	 */
	uint64_t z[3] = {UINT64_MAX, 0, UINT64_MAX};
	ck_assert_int_eq(st_writer_add(w, S("zero"), ST_DTYPE_U64, 3, z, NULL), ST_OK);
	uint64_t z2[3] = {1ull << 32, 1ull << 32, 0};
	ASSERT_ERR(st_writer_add(w, S("late_zero"), ST_DTYPE_U8, 3, z2, E), ST_EINVAL,
	           "tensor 'late_zero'", "overflow", "dimension 1");
	st_writer_free(w);
}
END_TEST

START_TEST(test_sub_byte_sizes)
{
	st_writer *w = new_writer();
	uint64_t s1[1] = {1}, s2[1] = {2}, s3[1] = {3}, s4[1] = {4};
	ASSERT_ERR(st_writer_add(w, S("f4x3"), ST_DTYPE_F4, 1, s3, E), ST_EINVAL,
	           "tensor 'f4x3'", "12 bits");
	ASSERT_ERR(st_writer_add(w, S("f4x1"), ST_DTYPE_F4, 1, s1, E), ST_EINVAL, "4 bits");
	ASSERT_ERR(st_writer_add(w, S("f4s"), ST_DTYPE_F4, 0, NULL, E), ST_EINVAL, "4 bits");
	ASSERT_ERR(st_writer_add(w, S("f6x2"), ST_DTYPE_F6_E2M3, 1, s2, E), ST_EINVAL, "12 bits");
	ASSERT_ERR(st_writer_add(w, S("f6y2"), ST_DTYPE_F6_E3M2, 1, s2, E), ST_EINVAL, "12 bits");
	ck_assert_int_eq(st_writer_add(w, S("f4x2"), ST_DTYPE_F4, 1, s2, NULL), ST_OK);
	ck_assert_int_eq(st_writer_add(w, S("f6x4"), ST_DTYPE_F6_E2M3, 1, s4, NULL), ST_OK);
	ck_assert_uint_eq(st_writer_tensor(w, 0)->n_bytes + st_writer_tensor(w, 1)->n_bytes, 4);
	st_writer_free(w);
}
END_TEST

START_TEST(test_bad_metadata)
{
	st_writer *w = new_writer();
	ASSERT_ERR(st_writer_set_meta(w, "k\xff", "v", E), ST_EINVAL, "UTF-8");
	ASSERT_ERR(st_writer_set_meta(w, "k", "v\xc3", E), ST_EINVAL, "metadata 'k'", "UTF-8");
	ASSERT_ERR(st_writer_set_meta(w, NULL, "v", E), ST_EINVAL, "NULL");
	ASSERT_ERR(st_writer_set_meta(w, "k", NULL, E), ST_EINVAL, "NULL");
	st_writer_free(w);
}
END_TEST

START_TEST(test_call_order)
{
	st_writer *w = build(&cases[0]);
	unsigned char b[24] = {0};
	uint64_t s[1] = {1};
	ASSERT_ERR(st_writer_write(w, b, 1, E), ST_ESTATE, "st_writer_open");
	ASSERT_ERR(st_writer_finish(w, E), ST_ESTATE, "st_writer_open");
	const char *path = tpath("o.safetensors");
	ck_assert_int_eq(st_writer_open(w, path, NULL), ST_OK);
	ASSERT_ERR(st_writer_open(w, path, E), ST_ESTATE, "already");
	ASSERT_ERR(st_writer_add(w, S("late"), ST_DTYPE_U8, 1, s, E), ST_ESTATE, "tensor 'late'");
	ASSERT_ERR(st_writer_set_meta(w, "late", "x", E), ST_ESTATE, "metadata 'late'");
	ck_assert_int_eq(st_writer_write(w, b, 24, NULL), ST_OK);
	ck_assert_int_eq(st_writer_finish(w, NULL), ST_OK);
	ASSERT_ERR(st_writer_finish(w, E), ST_ESTATE, path, "finished");
	ASSERT_ERR(st_writer_write(w, b, 1, E), ST_ESTATE, path, "finished");
	st_writer_free(w);
	ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

/* Too many bytes: refused whole, nothing of the chunk written, not fatal. */
START_TEST(test_too_many_bytes)
{
	st_writer *w = build(&cases[0]);
	size_t len;
	unsigned char *data = case_data(&cases[0], w, &len);
	unsigned char more[64];
	memcpy(more, data, len);
	const char *path = tpath("single_f32.safetensors");
	ck_assert_int_eq(st_writer_open(w, path, NULL), ST_OK);
	ASSERT_ERR(st_writer_write(w, more, len + 1, E), ST_EINVAL,
	           path, "1 bytes more than declared", "0 of 24", "tensor 'attn.0'");
	ck_assert_int_eq(st_writer_write(w, data, 10, NULL), ST_OK);
	ASSERT_ERR(st_writer_write(w, data + 10, len, E), ST_EINVAL, "10 bytes");
	ck_assert_int_eq(st_writer_write(w, data + 10, len - 10, NULL), ST_OK);
	ASSERT_ERR(st_writer_write(w, data, 1, E), ST_EINVAL, "more than declared");
	ck_assert_int_eq(st_writer_finish(w, NULL), ST_OK);
	st_writer_free(w);
	free(data);
	assert_same_as_expected(path, "single_f32.safetensors");
}
END_TEST

START_TEST(test_header_too_large)
{
	st_writer *w = new_writer();
	size_t n = 100000000;
	char *v = malloc(n + 1);
	ck_assert_ptr_nonnull(v);
	memset(v, 'a', n);
	v[n] = 0;
	ck_assert_int_eq(st_writer_set_meta(w, "big", v, NULL), ST_OK);
	free(v);
	const void *h;
	size_t hl;
	ASSERT_ERR(st_writer_header(w, &h, &hl, E), ST_EINVAL, "100000000");
	ASSERT_ERR(st_writer_open(w, tpath("big.safetensors"), E), ST_EINVAL, "header");
	ck_assert_int_eq(dir_entries(), 0);
	st_writer_free(w);
}
END_TEST

START_TEST(test_long_name_message)
{
	st_writer *w = new_writer();
	char name[2000];
	memset(name, 'n', sizeof name);
	uint64_t s[1] = {1};
	ck_assert_int_eq(st_writer_add(w, name, sizeof name, ST_DTYPE_U8, 1, s, NULL), ST_OK);
	ASSERT_ERR(st_writer_add(w, name, sizeof name, ST_DTYPE_U8, 1, s, E), ST_EINVAL,
	           "...'", "duplicate");
	st_writer_free(w);
	st_writer_free(NULL);
}
END_TEST

/* ---- index ------------------------------------------------------------------ */

#define SH1 "model-00001-of-00002.safetensors"
#define SH2 "model-00002-of-00002.safetensors"

START_TEST(test_index_bytes)
{
	static const st_index_entry basic[] = {
		{S("h.0.w"), SH1}, {S("h.1.w"), SH2}, {S("lm_head.weight"), SH2}, {S("a"), SH1},
	};
	static const st_index_entry esc[] = {
		{S("\xc3\xa9"), SH1}, {S("\xf0\x9f\x98\x80"), SH2}, {S("q\"b\\"), SH1},
		{S("ctl\x01\n\t\x7f"), SH2}, {S("nul\0x"), SH1}, {S(""), SH2}, {S("Z"), SH1},
		{S("ls\xe2\x80\xa8"), "mod\xc3\xa8le-00001-of-00001.safetensors"},
	};
	static const st_meta meta[] = {
		{S("format"), S("pt")}, {S("zz"), S("last")}, {S("aa"), S("first")},
		{S("total_sizf"), S("x")}, {S("total_siz"), S("y\xc3\xa9\xf0\x9f\x98\x80")},
	};
	st_error err;
	const char *p = tpath("index_basic.json");
	ck_assert_int_eq(st_index_write(p, 1234, basic, NELEM(basic), NULL, 0, &err), ST_OK);
	assert_same_as_expected(p, "index_basic.json");
	p = tpath("index_escapes.json");
	ck_assert_int_eq(st_index_write(p, UINT64_MAX, esc, NELEM(esc), meta, NELEM(meta), &err),
	                 ST_OK);
	assert_same_as_expected(p, "index_escapes.json");
	p = tpath("index_empty.json");
	ck_assert_int_eq(st_index_write(p, 0, NULL, 0, NULL, 0, &err), ST_OK);
	assert_same_as_expected(p, "index_empty.json");
	ck_assert_int_eq(dir_entries(), 3);
}
END_TEST

/*
 * An index is replaced as every file libst writes: a temporary left by a
 * writer that died is removed, a failure leaves no temporary, and an
 * existing index is untouched by a failed write.
 */
START_TEST(test_index_atomic)
{
	static const st_index_entry one[] = {{S("w"), SH1}};
	/* A pid that no longer exists: a child that has exited. */
	pid_t dead = fork();
	ck_assert_int_ge(dead, 0);
	if (dead == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
	char stale[512];
	snprintf(stale, sizeof stale, "%s/.model.safetensors.index.json.tmp-%ld-Ab12Cd",
	         tmp, (long)dead);
	write_text(stale, "half an index");
	st_error err;
	const char *p = tpath("model.safetensors.index.json");
	ck_assert_int_eq(st_index_write(p, 1, one, 1, NULL, 0, &err), ST_OK);
	ck_assert_int_eq(access(stale, F_OK), -1);
	ck_assert_int_eq(dir_entries(), 1);

	/* A directory in the way: refused, nothing left behind. */
	const char *d = tpath("dir.index.json");
	ck_assert_int_eq(mkdir(d, 0755), 0);
	ck_assert_int_eq(st_index_write(d, 1, one, 1, NULL, 0, &err), ST_EIO);
	ck_assert_msg(strstr(err.message, "dir.index.json"), "%s", err.message);
	ck_assert_int_eq(dir_entries(), 2);
	ck_assert_int_eq(rmdir(d), 0);

	/* A bad entry: the index in place keeps its bytes. */
	static const st_index_entry bad[] = {{S("w"), "../x.safetensors"}};
	struct stat before, after;
	ck_assert_int_eq(stat(p, &before), 0);
	ck_assert_int_eq(st_index_write(p, 1, bad, 1, NULL, 0, &err), ST_EINVAL);
	ck_assert_int_eq(stat(p, &after), 0);
	ck_assert_int_eq(before.st_size, after.st_size);
	ck_assert_int_eq(before.st_ino, after.st_ino);
	ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

START_TEST(test_index_bad_shard_names)
{
	static const char *bad[] = {
		"a/b.safetensors", "../x.safetensors", "..", ".", "/abs.safetensors",
		"x.bin", "", ".safetensors", "x.safetensors.tmp", "x.safetensors/",
		"bad\xff.safetensors",
	};
	const char *p = tpath("model.safetensors.index.json");
	write_text(p, "old");
	for (size_t i = 0; i < NELEM(bad); i++) {
		st_index_entry e[2] = {{S("ok"), SH1}, {S("w.0"), bad[i]}};
		ASSERT_ERR(st_index_write(p, 1, e, 2, NULL, 0, E), ST_EINVAL,
		           p, "tensor 'w.0'", "not a plain file name");
	}
	st_index_entry nul = {S("w"), NULL};
	ASSERT_ERR(st_index_write(p, 1, &nul, 1, NULL, 0, E), ST_EINVAL, "tensor 'w'");
	assert_file_is(p, "old");
	ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

START_TEST(test_index_bad_entries)
{
	const char *p = tpath("i.json");
	st_index_entry dup[3] = {{S("a\0b"), SH1}, {S("a"), SH1}, {S("a\0b"), SH2}};
	ASSERT_ERR(st_index_write(p, 1, dup, 3, NULL, 0, E), ST_EINVAL,
	           "tensor 'a\\x00b'", "twice");
	st_index_entry utf[1] = {{S("x\xfe"), SH1}};
	ASSERT_ERR(st_index_write(p, 1, utf, 1, NULL, 0, E), ST_EINVAL, "UTF-8");
	st_meta total[1] = {{S("total_size"), S("5")}};
	ASSERT_ERR(st_index_write(p, 1, NULL, 0, total, 1, E), ST_EINVAL, "total_size");
	st_meta twice[2] = {{S("k"), S("1")}, {S("k"), S("2")}};
	ASSERT_ERR(st_index_write(p, 1, NULL, 0, twice, 2, E), ST_EINVAL, "metadata 'k'");
	st_meta badv[1] = {{S("k"), S("\x80")}};
	ASSERT_ERR(st_index_write(p, 1, NULL, 0, badv, 1, E), ST_EINVAL, "metadata 'k'");
	ASSERT_ERR(st_index_write(NULL, 1, NULL, 0, NULL, 0, E), ST_EINVAL, "empty");
	ck_assert_int_eq(dir_entries(), 0);
}
END_TEST

START_TEST(test_index_io_errors)
{
	const char *p = tpath("no/dir/model.safetensors.index.json");
	ASSERT_ERR(st_index_write(p, 1, NULL, 0, NULL, 0, E), ST_EIO, p, strerror(ENOENT));
	ASSERT_ERR(st_index_write(tmp, 1, NULL, 0, NULL, 0, E), ST_EIO, strerror(EISDIR));
	/* An existing index is replaced, keeping its mode. */
	p = tpath("index_empty.json");
	write_text(p, "old");
	ck_assert_int_eq(chmod(p, 0600), 0);
	ck_assert_int_eq(st_index_write(p, 0, NULL, 0, NULL, 0, NULL), ST_OK);
	assert_same_as_expected(p, "index_empty.json");
	struct stat st;
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(dir_entries(), 1);
}
END_TEST

/* Shards from the writer and an index from st_index_write open as one checkpoint. */
START_TEST(test_index_checkpoint)
{
	static const struct ct s1[] = {{S("h.0.w"), ST_DTYPE_F32, 2, {3, 4}},
	                               {S("wte"), ST_DTYPE_BF16, 1, {7}}};
	static const struct ct s2[] = {{S("h.1.w"), ST_DTYPE_F16, 1, {5}},
	                               {S("ln.b\xc3\xa9"), ST_DTYPE_U8, 0, {0}}};
	const struct wcase shard[2] = {{"s1", s1, 2, NULL, 0}, {"s2", s2, 2, NULL, 0}};
	char names[2][64];
	st_index_entry e[4];
	size_t ne = 0;
	uint64_t total = 0;
	for (unsigned i = 0; i < 2; i++) {
		st_shard_name(names[i], sizeof names[i], i + 1, 2);
		write_case(&shard[i], tpath(names[i]), 3);
		for (size_t k = 0; k < 2; k++)
			e[ne++] = (st_index_entry){shard[i].t[k].name, shard[i].t[k].len, names[i]};
	}
	total = 3 * 4 * 4 + 7 * 2 + 5 * 2 + 1;
	const char *ip = tpath("model.safetensors.index.json");
	st_error err;
	ck_assert_int_eq(st_index_write(ip, total, e, ne, NULL, 0, &err), ST_OK);
	st_checkpoint *c;
	int rc = st_checkpoint_open(&c, tmp, 0, &err);
	ck_assert_msg(rc == ST_OK, "%s", err.message);
	ck_assert_uint_eq(st_checkpoint_n_files(c), 2);
	ck_assert_uint_eq(st_checkpoint_n_tensors(c), 4);
	ck_assert_uint_eq(st_checkpoint_data_bytes(c), total);
	ck_assert_int_ge(st_checkpoint_find(c, S("ln.b\xc3\xa9")), 0);
	st_checkpoint_close(c);
	int errors = 0;
	ck_assert_int_eq(st_check_path(ip, count_problem, &errors, &err), 0);
	ck_assert_int_eq(errors, 0);
}
END_TEST

START_TEST(test_shard_name)
{
	char b[64];
	st_shard_name(b, sizeof b, 1, 2);
	ck_assert_str_eq(b, "model-00001-of-00002.safetensors");
	st_shard_name(b, sizeof b, 42, 99999);
	ck_assert_str_eq(b, "model-00042-of-99999.safetensors");
	st_shard_name(b, sizeof b, 123456, 123456);
	ck_assert_str_eq(b, "model-123456-of-123456.safetensors");
	/* Truncated as snprintf truncates, always terminated. */
	st_shard_name(b, 12, 1, 2);
	ck_assert_str_eq(b, "model-00001");
}
END_TEST
/*
 * Names made to collide in the low 20 bits of plain FNV-1a (each block
 * pair leads to the same low state, so any choice of 17 blocks does):
 * 131072 of them took about a minute to add, probing one long chain. The
 * hash is now seeded and mixed; they take a fraction of a second.
 */
START_TEST(test_colliding_names)
{
	static const char *const pair[17][2] = {
		{"fspu", "xyrg"}, {"oixf", "qmrr"}, {"uzyj", "fbcu"}, {"cabo", "brdy"},
		{"olws", "drav"}, {"lupv", "vsrd"}, {"qrcz", "yozp"}, {"xigz", "yfmd"},
		{"mqpt", "qjbi"}, {"swih", "jbib"}, {"qgyh", "ytjn"}, {"jvty", "wiun"},
		{"nwgk", "ckyv"}, {"yttf", "brli"}, {"zdhg", "vuvp"}, {"tzwm", "woyc"},
		{"vrkl", "hjax"},
	};
	st_writer *w = new_writer();
	uint64_t s[1] = {1};
	char name[17 * 4];
	for (unsigned i = 0; i < (1u << 17); i++) {
		for (int b = 0; b < 17; b++)
			memcpy(name + 4 * b, pair[b][(i >> b) & 1], 4);
		ck_assert_int_eq(st_writer_add(w, name, sizeof name, ST_DTYPE_U8, 1, s, NULL),
		                 ST_OK);
	}
	/* Duplicates are still found. */
	ck_assert_int_eq(st_writer_add(w, name, sizeof name, ST_DTYPE_U8, 1, s, NULL),
	                 ST_EINVAL);
	ck_assert_uint_eq(st_writer_n_tensors(w), 1u << 17);
	st_writer_free(w);
}
END_TEST

/* ---- suite ------------------------------------------------------------------ */

/* ---- metadata copied by a conversion ---------------------------------------- */

#define COPY_KEYS 700

/* Key i of the copy tests: short keys and keys past 16 shared bytes. */
static void copy_key(char *out, size_t size, size_t i)
{
	if (i % 3 == 0)
		snprintf(out, size, "k%zu", i);
	else
		snprintf(out, size, "model.layers.shared.prefix.%zu", i);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Write a safetensors file by hand: the keys (NUL-terminated, value "v"
 * plus the key's length) in the order given, then one F32 tensor "w" of
 * shape [1]; the header padded with spaces as the writer pads it.
 */
static void write_meta_file(const char *path, char *const *keys, size_t n)
{
	size_t cap = 64 + n * 80, len = 0;
	char *h = malloc(cap);
	ck_assert_ptr_nonnull(h);
	len += (size_t)snprintf(h, cap, "{\"__metadata__\":{");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":\"v%zu\"", i ? "," : "",
		                        keys[i], strlen(keys[i]));
	len += (size_t)snprintf(h + len, cap - len,
	                        "},\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}");
	while (len % 8)
		h[len++] = ' ';
	ck_assert_uint_lt(len, cap);
	unsigned char prefix[8];
	for (int i = 0; i < 8; i++)
		prefix[i] = (unsigned char)((uint64_t)len >> (8 * i));
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(prefix, 1, 8, f), 8);
	ck_assert_uint_eq(fwrite(h, 1, len, f), len);
	ck_assert_uint_eq(fwrite("\1\2\3\4", 1, 4, f), 4);
	ck_assert_int_eq(fclose(f), 0);
	free(h);
}

/* Convert src to out with the default options: the rc of the write. */
static int convert_file(const char *src, const char *out, st_error *e)
{
	st_checkpoint *c;
	int rc = st_checkpoint_open(&c, src, 0, e);
	if (rc != ST_OK)
		return rc;
	st_convert_options o = {0};
	st_convert_plan *p;
	ck_assert_int_eq(st_convert_plan_new(&p, c, &o, e), ST_OK);
	ck_assert_int_eq(st_convert_plan_shards(p, 0, 0, e), ST_OK);
	st_convert_run r = {.threads = 1};
	rc = st_convert_write_file(p, out, &r, e);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
	return rc;
}

/* The keys of the copy tests with "format", sorted (strcmp: byte order). */
static char **copy_keys(char *buf)
{
	char **k = malloc((COPY_KEYS + 1) * sizeof *k);
	ck_assert_ptr_nonnull(k);
	for (size_t i = 0; i < COPY_KEYS; i++) {
		k[i] = buf + i * 64;
		copy_key(k[i], 64, i);
	}
	k[COPY_KEYS] = buf + COPY_KEYS * 64;
	strcpy(k[COPY_KEYS], "format");
	qsort(k, COPY_KEYS + 1, sizeof *k, cmp_str);
	return k;
}

/* A fixed shuffle (an LCG's Fisher-Yates). */
static void shuffle(char **k, size_t n)
{
	uint64_t x = 12345;
	for (size_t i = n - 1; i > 0; i--) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		size_t j = (size_t)(x >> 33) % (i + 1);
		char *t = k[i];
		k[i] = k[j];
		k[j] = t;
	}
}

/*
 * A conversion copies the input's metadata in key order (the reader's
 * sort): a header whose keys are shuffled converts to the same bytes as
 * the one whose keys are sorted, and that file, being canonical already,
 * converts to itself.
 */
START_TEST(test_convert_shuffled_meta_same_as_sorted)
{
	char *buf = malloc((COPY_KEYS + 1) * 64);
	ck_assert_ptr_nonnull(buf);
	char **k = copy_keys(buf);
	const char *sorted = tpath("sorted.safetensors"), *shuffled = tpath("shuffled.safetensors");
	write_meta_file(sorted, k, COPY_KEYS + 1);
	shuffle(k, COPY_KEYS + 1);
	write_meta_file(shuffled, k, COPY_KEYS + 1);
	st_error e;
	const char *out1 = tpath("out1.safetensors"), *out2 = tpath("out2.safetensors");
	ck_assert_msg(convert_file(sorted, out1, &e) == ST_OK, "%s", e.message);
	ck_assert_msg(convert_file(shuffled, out2, &e) == ST_OK, "%s", e.message);
	size_t la, lb, lc;
	char *a = read_file(sorted, &la), *b = read_file(out1, &lb), *c = read_file(out2, &lc);
	ck_assert_msg(la == lb && memcmp(a, b, la) == 0, "sorted keys: output differs from input");
	ck_assert_msg(la == lc && memcmp(a, c, la) == 0, "shuffled keys: output differs from sorted");
	free(a);
	free(b);
	free(c);
	free(k);
	free(buf);
}
END_TEST

/* A repeated key among shuffled ones still refuses the input, naming it. */
START_TEST(test_convert_shuffled_meta_duplicate_refused)
{
	char *buf = malloc((COPY_KEYS + 1) * 64);
	ck_assert_ptr_nonnull(buf);
	char **k = copy_keys(buf);
	k[COPY_KEYS / 2] = k[COPY_KEYS / 3]; /* "format" stays: it sorts early */
	shuffle(k, COPY_KEYS + 1);
	const char *src = tpath("dup.safetensors"), *out = tpath("out.safetensors");
	write_meta_file(src, k, COPY_KEYS + 1);
	st_error e;
	ck_assert_int_eq(convert_file(src, out, &e), ST_EFORMAT);
	ck_assert_ptr_nonnull(strstr(e.message, "duplicate key"));
	ck_assert_int_eq(access(out, F_OK), -1);
	free(k);
	free(buf);
}
END_TEST

static Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("canonical");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_case_bytes, 0, (int)NELEM(cases));
	tcase_add_loop_test(tc, test_pad_bytes, 1, 9);
	tcase_add_loop_test(tc, test_header_is_file_prefix, 0, (int)NELEM(cases));
	tcase_add_test(tc, test_tensor_order_and_offsets);
	tcase_add_test(tc, test_meta_replace_and_header_refresh);
	tcase_add_test(tc, test_meta_many_keys_set_again_replace_their_own_entry);
	tcase_add_test(tc, test_meta_in_order_keys_and_format_in_their_place);
	tcase_add_test(tc, test_meta_out_of_order_keys_found_and_sorted);
	tcase_add_loop_test(tc, test_roundtrip_reader, 0, (int)NELEM(cases));
	tcase_add_test(tc, test_convert_shuffled_meta_same_as_sorted);
	suite_add_tcase(s, tc);

	tc = tcase_create("streaming");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_stream_chunks);
	tcase_add_test(tc, test_stream_large);
	tcase_add_test(tc, test_stream_zero_length_writes);
	suite_add_tcase(s, tc);

	tc = tcase_create("atomic");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_free_before_finish_keeps_target);
	tcase_add_test(tc, test_free_right_after_open);
	tcase_add_test(tc, test_missing_bytes);
	tcase_add_test(tc, test_write_failure_efbig);
	tcase_add_test(tc, test_finish_failure_efbig);
	tcase_add_test(tc, test_new_file_mode_follows_umask);
	tcase_add_test(tc, test_existing_mode_kept);
	tcase_add_test(tc, test_set_mode_and_writeback);
	tcase_add_test(tc, test_open_missing_directory);
	tcase_add_test(tc, test_open_directory_target);
	tcase_add_test(tc, test_relative_path);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_duplicate_name);
	tcase_add_test(tc, test_duplicate_among_many);
	tcase_add_test(tc, test_duplicate_after_header);
	tcase_add_test(tc, test_colliding_names);
	tcase_add_test(tc, test_convert_shuffled_meta_duplicate_refused);
	tcase_add_test(tc, test_reserved_and_bad_names);
	tcase_add_test(tc, test_bad_dtype_and_dims);
	tcase_add_test(tc, test_size_overflow);
	tcase_add_test(tc, test_sub_byte_sizes);
	tcase_add_test(tc, test_bad_metadata);
	tcase_add_test(tc, test_call_order);
	tcase_add_test(tc, test_too_many_bytes);
	tcase_add_test(tc, test_header_too_large);
	tcase_add_test(tc, test_long_name_message);
	suite_add_tcase(s, tc);

	tc = tcase_create("index");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_index_bytes);
	tcase_add_test(tc, test_index_bad_shard_names);
	tcase_add_test(tc, test_index_atomic);
	tcase_add_test(tc, test_index_bad_entries);
	tcase_add_test(tc, test_index_io_errors);
	tcase_add_test(tc, test_shard_name);
	tcase_add_test(tc, test_index_checkpoint);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(writer_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
