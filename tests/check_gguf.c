/*
 * check_gguf.c - the GGUF reader against ggml's docs/gguf.md: each fixture
 * of testdata/gguf/MANIFEST.tsv (made byte by byte by gen_fixtures.py)
 * through the path reader, the memory reader and the full check; the values
 * of the file holding every metadata type; the ggml type table; and the row
 * codecs, Q8_0 bit for bit against the numpy reference quantizer.
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define DIR ST_TESTDATA "/gguf/"

#include "tmpdir.h"

struct counts {
	int errors, warnings;
	char all[8192];
};

static void collect(void *ctx, int severity, const char *msg)
{
	struct counts *c = ctx;
	if (severity == ST_PROBLEM_ERROR)
		c->errors++;
	else
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
	int rows = 0, bad = 0;
	while (fgets(line, sizeof line, m)) {
		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = 0;
		char *name = strtok(line, "\t");
		char *expect = strtok(NULL, "\t");
		char *needle = strcmp(expect, "ok") ? strtok(NULL, "\t") : NULL;
		char *what = strtok(NULL, "\t");
		int want_ok = strcmp(expect, "error") != 0;
		char path[1024];
		snprintf(path, sizeof path, DIR "%s", name);

		/* The path reader: one error, naming the file. */
		st_error err = {0};
		st_gguf *g = NULL;
		int rc = st_gguf_open(&g, path, &err);
		if (want_ok) {
			ck_assert_msg(rc == ST_OK, "%s (%s): %s", name, what, err.message);
		} else {
			bad++;
			ck_assert_msg(rc == ST_EFORMAT, "%s (%s): rc %d", name, what, rc);
			ck_assert_msg(g == NULL, "%s: a handle on failure", name);
			ck_assert_msg(strstr(err.message, needle) != NULL,
			              "%s: message '%s' lacks '%s'", name, err.message,
			              needle);
			ck_assert_msg(strstr(err.message, path) == err.message,
			              "%s: '%s' does not start with the path", name,
			              err.message);
			ck_assert_msg(!strchr(err.message, '\n'), "%s: two lines", name);
		}

		/* The memory reader: the same verdict and message. */
		size_t len;
		void *buf = read_file(path, &len);
		st_gguf *h = NULL;
		st_error err2 = {0};
		rc = st_gguf_open_memory(&h, buf, len, name, &err2);
		ck_assert_msg((rc == ST_OK) == want_ok, "%s: memory rc %d", name, rc);
		if (!want_ok)
			ck_assert_str_eq(strchr(err.message, ':'),
			                 strchr(err2.message, ':'));
		else {
			ck_assert_uint_eq(st_gguf_n_tensors(g), st_gguf_n_tensors(h));
			ck_assert_uint_eq(st_gguf_n_kv(g), st_gguf_n_kv(h));
			for (size_t i = 0; i < st_gguf_n_tensors(g); i++)
				ck_assert(!memcmp(st_gguf_tensor_data(g, i),
				                  st_gguf_tensor_data(h, i),
				                  st_gguf_tensor_at(g, i)->n_bytes));
		}
		st_gguf_close(h);

		/* The full check: the same problem, and warnings apart. */
		struct counts c = {0};
		int n = st_gguf_check_file(path, collect, &c, NULL);
		ck_assert_int_eq(n, c.errors);
		if (want_ok)
			ck_assert_msg(c.errors == 0, "%s: check found %s", name, c.all);
		else
			ck_assert_msg(c.errors >= 1 && strstr(c.all, needle),
			              "%s: check said '%s'", name, c.all);
		if (!strcmp(expect, "warning"))
			ck_assert_msg(c.warnings == 1 && strstr(c.all, needle),
			              "%s: check said '%s'", name, c.all);
		else if (want_ok)
			ck_assert_msg(c.warnings == 0, "%s: %s", name, c.all);
		struct counts c2 = {0};
		ck_assert_int_eq(st_gguf_check_memory(buf, len, name, collect, &c2),
		                 c.errors);
		free(buf);
		st_gguf_close(g);
		rows++;
	}
	fclose(m);
	ck_assert_int_ge(rows, 40);
	ck_assert_int_ge(bad, 30);
}
END_TEST

/*
 * Files ggml accepts that libst refuses on purpose, each with why:
 * dims [2^32, 2^32] make ggml's int64 element count wrap to 0, which
 * passes its own overflow check (a tensor of "0" bytes).
 */
static const char *const GGML_MISREADS[] = {"bad_dims_overflow.gguf"};

static int ggml_misreads(const char *name)
{
	for (size_t i = 0; i < sizeof GGML_MISREADS / sizeof *GGML_MISREADS; i++)
		if (!strcmp(name, GGML_MISREADS[i]))
			return 1;
	return 0;
}

#define REFUSE "llama.cpp will refuse this"

/*
 * libst's check agrees with ggml's loader on every fixture of GGML.tsv
 * (recorded by ggml_verdicts.py from gguf_init_from_file): what ggml
 * refuses is an error or a warning saying llama.cpp will refuse it;
 * what ggml accepts is neither.
 */
START_TEST(test_ggml_agrees)
{
	FILE *m = fopen(DIR "GGML.tsv", "r");
	ck_assert(m != NULL);
	char line[2048];
	int rows = 0, refused = 0, warned = 0, accepted = 0;
	while (fgets(line, sizeof line, m)) {
		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = 0;
		char *name = strtok(line, "\t");
		char *ggml = strtok(NULL, "\t");
		char *why = strtok(NULL, "\t");
		char path[1024];
		snprintf(path, sizeof path, DIR "%s", name);
		struct counts c = {0};
		int n = st_gguf_check_file(path, collect, &c, NULL);
		ck_assert_int_ge(n, 0);
		if (!strcmp(ggml, "refuse")) {
			ck_assert_msg(c.errors > 0 || strstr(c.all, REFUSE),
			              "%s: ggml refuses it (%s), libst says '%s'", name,
			              why, c.all);
			if (!c.errors)
				warned++;
			refused++;
		} else if (ggml_misreads(name)) {
			ck_assert_msg(c.errors > 0, "%s: %s", name, c.all);
		} else {
			ck_assert_str_eq(ggml, "accept");
			ck_assert_msg(c.errors == 0 && !strstr(c.all, REFUSE),
			              "%s: ggml accepts it, libst says '%s'", name,
			              c.all);
			accepted++;
		}
		rows++;
	}
	fclose(m);
	ck_assert_int_ge(rows, 58);
	ck_assert_int_ge(warned, 8);
	ck_assert_int_ge(accepted, 15);
	ck_assert_int_ge(refused, 40);
}
END_TEST

static const st_gguf_value *get(const st_gguf *g, const char *key, int type)
{
	long i = st_gguf_find_kv(g, key);
	ck_assert_msg(i >= 0, "no key %s", key);
	const st_gguf_kv *kv = st_gguf_kv_at(g, (size_t)i);
	ck_assert_str_eq(kv->key, key);
	ck_assert_int_eq(kv->value.type, type);
	return &kv->value;
}

START_TEST(test_every_value_type)
{
	st_gguf *g;
	st_error err;
	ck_assert_int_eq(st_gguf_open(&g, DIR "ok_all_types.gguf", &err), ST_OK);
	ck_assert_uint_eq(st_gguf_version(g), 3);
	ck_assert_uint_eq(st_gguf_alignment(g), 64);
	ck_assert_uint_eq(st_gguf_n_kv(g), 21);
	ck_assert_str_eq(st_gguf_kv_at(g, 0)->key, "general.architecture");
	ck_assert_uint_eq(get(g, "t.u8", ST_GGUF_UINT8)->v.u, 200);
	ck_assert_int_eq(get(g, "t.i8", ST_GGUF_INT8)->v.i, -100);
	ck_assert_uint_eq(get(g, "t.u16", ST_GGUF_UINT16)->v.u, 60000);
	ck_assert_int_eq(get(g, "t.i16", ST_GGUF_INT16)->v.i, -30000);
	ck_assert_uint_eq(get(g, "t.u32", ST_GGUF_UINT32)->v.u, 4000000000u);
	ck_assert_int_eq(get(g, "t.i32", ST_GGUF_INT32)->v.i, -2000000000);
	ck_assert(get(g, "t.f32", ST_GGUF_FLOAT32)->v.f == 1.5);
	ck_assert_uint_eq(get(g, "t.bool", ST_GGUF_BOOL)->v.u, 1);
	const st_gguf_value *s = get(g, "t.string", ST_GGUF_STRING);
	ck_assert_uint_eq(s->n, 6);
	ck_assert(!memcmp(s->v.s, "h\xc3\xa9llo", 6));
	ck_assert_uint_eq(get(g, "t.u64", ST_GGUF_UINT64)->v.u,
	                  (1ull << 63) + 5);
	ck_assert(get(g, "t.i64", ST_GGUF_INT64)->v.i == -(1ll << 62));
	ck_assert(get(g, "t.f64", ST_GGUF_FLOAT64)->v.f == -0.1);

	st_gguf_value e;
	const st_gguf_value *a = get(g, "t.arr_u32", ST_GGUF_ARRAY);
	ck_assert_int_eq(a->elem_type, ST_GGUF_UINT32);
	ck_assert_uint_eq(a->n, 3);
	for (uint64_t i = 0; i < 3; i++) {
		st_gguf_array_get(a, i, &e);
		ck_assert_int_eq(e.type, ST_GGUF_UINT32);
		ck_assert_uint_eq(e.v.u, i + 1);
	}
	a = get(g, "t.arr_str", ST_GGUF_ARRAY);
	ck_assert_uint_eq(a->n, 3);
	st_gguf_array_get(a, 1, &e);
	ck_assert_int_eq(e.type, ST_GGUF_STRING);
	ck_assert_uint_eq(e.n, 0);
	st_gguf_array_get(a, 2, &e);
	ck_assert(e.n == 3 && !memcmp(e.v.s, "ccc", 3));
	a = get(g, "t.arr_nested", ST_GGUF_ARRAY);
	ck_assert_int_eq(a->elem_type, ST_GGUF_ARRAY);
	ck_assert_uint_eq(a->n, 2);
	st_gguf_array_get(a, 0, &e);
	ck_assert(e.type == ST_GGUF_ARRAY && e.elem_type == ST_GGUF_INT16 &&
	          e.n == 2);
	st_gguf_value x;
	st_gguf_array_get(&e, 1, &x);
	ck_assert_int_eq(x.v.i, -2);
	st_gguf_array_get(a, 1, &e);
	ck_assert_uint_eq(e.n, 1);
	st_gguf_array_get(&e, 0, &x);
	ck_assert_int_eq(x.v.i, 3);
	a = get(g, "t.arr_empty", ST_GGUF_ARRAY);
	ck_assert(a->elem_type == ST_GGUF_FLOAT32 && a->n == 0);
	a = get(g, "t.arr_bool", ST_GGUF_ARRAY);
	st_gguf_array_get(a, 1, &e);
	ck_assert(e.type == ST_GGUF_BOOL && e.v.u == 0);
	a = get(g, "t.arr_f64", ST_GGUF_ARRAY);
	st_gguf_array_get(a, 1, &e);
	ck_assert(e.v.f == -8.0);
	ck_assert_int_eq(st_gguf_find_kv(g, "t.none"), -1);
	st_gguf_close(g);
}
END_TEST

START_TEST(test_tensor_infos_and_data)
{
	st_gguf *g;
	st_error err;
	ck_assert_int_eq(st_gguf_open(&g, DIR "ok_all_types.gguf", &err), ST_OK);
	ck_assert_uint_eq(st_gguf_n_tensors(g), 6);
	ck_assert_uint_eq(st_gguf_data_offset(g) % 64, 0);
	static const char *names[] = {"f32", "f16", "bf16", "q8", "q4k", "i32"};
	static const unsigned types[] = {ST_GGML_F32, ST_GGML_F16, ST_GGML_BF16,
	                                 ST_GGML_Q8_0, ST_GGML_Q4_K, ST_GGML_I32};
	/* Packed with 64-byte padding, in info order. */
	static const uint64_t offs[] = {0, 64, 128, 192, 320, 512};
	static const uint64_t bytes[] = {24, 8, 4, 68, 144, 8};
	for (size_t i = 0; i < 6; i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		ck_assert_str_eq(t->name, names[i]);
		ck_assert_uint_eq(t->type, types[i]);
		ck_assert_uint_eq(t->offset, offs[i]);
		ck_assert_uint_eq(t->n_bytes, bytes[i]);
		ck_assert_int_eq(st_gguf_find(g, names[i]), (long)i);
	}
	ck_assert_int_eq(st_gguf_find(g, "nope"), -1);
	const st_gguf_tensor *t = st_gguf_tensor_at(g, 0);
	ck_assert(t->ndim == 2 && t->dims[0] == 3 && t->dims[1] == 2 &&
	          t->dims[2] == 1 && t->n_elements == 6);
	/* The writer pads after the last tensor too. */
	ck_assert_uint_eq(st_gguf_size(g), st_gguf_data_offset(g) + 576);
	ck_assert_uint_eq(st_gguf_data_size(g), 576);

	float out[256];
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_F32, st_gguf_tensor_data(g, 0),
	                                out, 6), ST_OK);
	for (int i = 0; i < 6; i++)
		ck_assert(out[i] == 0.5f * (float)i);
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_F16, st_gguf_tensor_data(g, 1),
	                                out, 4), ST_OK);
	ck_assert(out[0] == 1 && out[1] == -2 && out[2] == 0.5f &&
	          out[3] == 65504);
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_BF16, st_gguf_tensor_data(g, 2),
	                                out, 2), ST_OK);
	ck_assert(out[0] == 1 && out[1] == -3);
	/* Q8_0: d = 0.5 (F16 0x3800), q = -16..15 in both blocks. */
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_Q8_0, st_gguf_tensor_data(g, 3),
	                                out, 64), ST_OK);
	for (int i = 0; i < 64; i++)
		ck_assert(out[i] == 0.5f * (float)(i % 32 - 16));
	/* Q4_K decodes too (check_ggml_decode.c tests its values). */
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_Q4_K, st_gguf_tensor_data(g, 4),
	                                out, 256), ST_OK);
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_I32, st_gguf_tensor_data(g, 4),
	                                out, 4), ST_EUNSUPPORTED);
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_Q8_0, st_gguf_tensor_data(g, 3),
	                                out, 31), ST_EINVAL);
	st_gguf_close(g);
}
END_TEST

/* A future type between two F32 tensors: listed, sizeless; the others read. */
START_TEST(test_unknown_type_is_listed_and_the_rest_reads)
{
	st_gguf *g;
	st_error err;
	ck_assert_int_eq(st_gguf_open(&g, DIR "warn_type57_between.gguf", &err),
	                 ST_OK);
	ck_assert_uint_eq(st_gguf_n_tensors(g), 3);
	const st_gguf_tensor *t = st_gguf_tensor_at(g, 1);
	ck_assert_str_eq(t->name, "new");
	ck_assert_uint_eq(t->type, 57);
	ck_assert_uint_eq(t->n_elements, 64);
	ck_assert_uint_eq(t->n_bytes, 0);
	ck_assert_ptr_null(st_ggml_type_name(t->type));
	ck_assert_int_eq(st_ggml_type_block(t->type, NULL, NULL), ST_ENOTFOUND);
	ck_assert_int_eq(st_ggml_to_f32(t->type, NULL, NULL, 0), ST_EUNSUPPORTED);
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_IQ2_XXS, NULL, NULL, 0), ST_OK);
	float out[8];
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_F32, st_gguf_tensor_data(g, 0),
	                                out, 8), ST_OK);
	ck_assert(out[7] == 7.0f);
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_F32, st_gguf_tensor_data(g, 2),
	                                out, 4), ST_OK);
	ck_assert(out[0] == 1.0f && out[3] == 4.0f);
	st_gguf_close(g);
}
END_TEST

START_TEST(test_v2_default_alignment)
{
	st_gguf *g;
	st_error err;
	ck_assert_int_eq(st_gguf_open(&g, DIR "ok_v2.gguf", &err), ST_OK);
	ck_assert_uint_eq(st_gguf_version(g), 2);
	ck_assert_uint_eq(st_gguf_alignment(g), 32);
	ck_assert_uint_eq(st_gguf_data_offset(g) % 32, 0);
	ck_assert_uint_eq(st_gguf_n_tensors(g), 1);
	const float *w = st_gguf_tensor_data(g, 0);
	ck_assert(w[7] == 7.0f);
	st_gguf_close(g);
	st_gguf_close(NULL);
}
END_TEST

/* Names and block sizes from ggml's type traits (block_q4_K and so on). */
START_TEST(test_type_table)
{
	/* Bits per weight worked out by hand: bytes * 8 / block. */
	static const struct {
		unsigned t;
		const char *name;
		unsigned blk, bytes;
		double bits;
	} want[] = {
		{0, "F32", 1, 4, 32}, {1, "F16", 1, 2, 16}, {2, "Q4_0", 32, 18, 4.5},
		{3, "Q4_1", 32, 20, 5}, {6, "Q5_0", 32, 22, 5.5},
		{7, "Q5_1", 32, 24, 6}, {8, "Q8_0", 32, 34, 8.5},
		{9, "Q8_1", 32, 36, 9}, {10, "Q2_K", 256, 84, 2.625},
		{11, "Q3_K", 256, 110, 3.4375}, {12, "Q4_K", 256, 144, 4.5},
		{13, "Q5_K", 256, 176, 5.5}, {14, "Q6_K", 256, 210, 6.5625},
		{15, "Q8_K", 256, 292, 9.125}, {16, "IQ2_XXS", 256, 66, 2.0625},
		{17, "IQ2_XS", 256, 74, 2.3125}, {18, "IQ3_XXS", 256, 98, 3.0625},
		{19, "IQ1_S", 256, 50, 1.5625}, {20, "IQ4_NL", 32, 18, 4.5},
		{21, "IQ3_S", 256, 110, 3.4375}, {22, "IQ2_S", 256, 82, 2.5625},
		{23, "IQ4_XS", 256, 136, 4.25}, {24, "I8", 1, 1, 8},
		{25, "I16", 1, 2, 16}, {26, "I32", 1, 4, 32}, {27, "I64", 1, 8, 64},
		{28, "F64", 1, 8, 64}, {29, "IQ1_M", 256, 56, 1.75},
		{30, "BF16", 1, 2, 16}, {34, "TQ1_0", 256, 54, 1.6875},
		{35, "TQ2_0", 256, 66, 2.0625}, {39, "MXFP4", 32, 17, 4.25},
		{40, "NVFP4", 64, 36, 4.5}, {41, "Q1_0", 128, 18, 1.125},
		{42, "Q2_0", 64, 18, 2.25},
	};
	int known = 0;
	for (unsigned t = 0; t < 64; t++) {
		unsigned blk, bytes;
		if (st_ggml_type_block(t, &blk, &bytes) == ST_OK)
			known++;
		else
			ck_assert_ptr_null(st_ggml_type_name(t));
	}
	ck_assert_int_eq(known, (int)(sizeof want / sizeof want[0]));
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		unsigned blk, bytes, back;
		ck_assert_int_eq(st_ggml_type_block(want[i].t, &blk, &bytes), ST_OK);
		ck_assert_str_eq(st_ggml_type_name(want[i].t), want[i].name);
		ck_assert_uint_eq(blk, want[i].blk);
		ck_assert_uint_eq(bytes, want[i].bytes);
		ck_assert_int_eq(st_ggml_type_from_name(want[i].name, &back), ST_OK);
		ck_assert_uint_eq(back, want[i].t);
		double bits = -1;
		ck_assert_int_eq(st_ggml_type_bits(want[i].t, &bits), ST_OK);
		ck_assert_msg(bits == want[i].bits, "%s: %.17g bits, want %g",
		              want[i].name, bits, want[i].bits);
	}
	double none = -1;
	ck_assert_int_eq(st_ggml_type_bits(4, &none), ST_ENOTFOUND);
	ck_assert_int_eq(st_ggml_type_bits(57, &none), ST_ENOTFOUND);
	ck_assert(none == -1);
	st_dtype d;
	ck_assert_int_eq(st_ggml_type_dtype(ST_GGML_BF16, &d), ST_OK);
	ck_assert_int_eq(d, ST_DTYPE_BF16);
	ck_assert_int_eq(st_ggml_type_dtype(ST_GGML_Q8_0, &d), ST_ENOTFOUND);
	ck_assert_str_eq(st_gguf_type_name(ST_GGUF_FLOAT64), "float64");
	ck_assert_ptr_null(st_gguf_type_name(13));
}
END_TEST

/* quantize_row_q8_0_ref bit for bit, as the numpy script computes it. */
START_TEST(test_q8_0_matches_numpy)
{
	size_t ns, nq, nd;
	float *src = read_file(DIR "q8_0/src.f32", &ns);
	unsigned char *ref = read_file(DIR "q8_0/ref.q8_0", &nq);
	float *deq = read_file(DIR "q8_0/deq.f32", &nd);
	size_t n = ns / 4;
	ck_assert_uint_eq(n % 32, 0);
	ck_assert_uint_eq(nq, n / 32 * 34);
	ck_assert_uint_eq(nd, ns);
	unsigned char *q = malloc(nq);
	float *back = malloc(ns);
	ck_assert_int_eq(st_ggml_from_f32(ST_GGML_Q8_0, src, q, n), ST_OK);
	for (size_t b = 0; b < n / 32; b++)
		ck_assert_msg(!memcmp(q + b * 34, ref + b * 34, 34),
		              "block %zu differs from the numpy reference", b);
	ck_assert_int_eq(st_ggml_to_f32(ST_GGML_Q8_0, ref, back, n), ST_OK);
	ck_assert(!memcmp(back, deq, ns));
	/* The all-zero first block: d = 0 and every q = 0. */
	for (int j = 0; j < 34; j++)
		ck_assert_uint_eq(q[j], 0);
	ck_assert_int_eq(st_ggml_from_f32(ST_GGML_Q8_0, src, q, 33), ST_EINVAL);
	ck_assert_int_eq(st_ggml_from_f32(ST_GGML_Q4_K, src, q, 256),
	                 ST_EUNSUPPORTED);
	free(q);
	free(back);
	free(src);
	free(ref);
	free(deq);
}
END_TEST

START_TEST(test_f16_bf16_encode)
{
	float x[3] = {1.0f, -2.5f, 1.0f / 3.0f};
	uint16_t h[3];
	ck_assert_int_eq(st_ggml_from_f32(ST_GGML_F16, x, h, 3), ST_OK);
	ck_assert_uint_eq(h[0], 0x3c00);
	ck_assert_uint_eq(h[1], 0xc100);
	ck_assert_uint_eq(h[2], 0x3555);
	ck_assert_int_eq(st_ggml_from_f32(ST_GGML_BF16, x, h, 3), ST_OK);
	ck_assert_uint_eq(h[0], 0x3f80);
	ck_assert_uint_eq(h[1], 0xc020);
	ck_assert_uint_eq(h[2], 0x3eab);
}
END_TEST

START_TEST(test_unreadable_is_eio)
{
	st_gguf *g = (st_gguf *)1;
	st_error err;
	ck_assert_int_eq(st_gguf_open(&g, DIR "no-such.gguf", &err), ST_EIO);
	ck_assert_ptr_null(g);
	ck_assert(strstr(err.message, "no-such.gguf") != NULL);
	ck_assert_int_eq(st_gguf_open(&g, DIR, &err), ST_EIO);
	struct counts c = {0};
	ck_assert_int_eq(st_gguf_check_file(DIR "no-such.gguf", collect, &c,
	                                    &err), ST_EIO);
	ck_assert_int_eq(c.errors + c.warnings, 0);
}
END_TEST

/* Header only: a file of 300 GB, sparse, opens without reading its data. */
START_TEST(test_sparse_header_only)
{
	char path[] = "/tmp/check_gguf_sparse_XXXXXX";
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	size_t len;
	void *hdr = read_file(DIR "ok_v2.gguf", &len);
	/* ok_v2 with its one tensor grown to 75e9 F32 elements (300 GB). */
	ck_assert_int_eq(write(fd, hdr, len), (ssize_t)len);
	st_gguf *g;
	st_error err;
	/* Its one dimension follows the name "w" (u64 1, 'w') and n_dims 1. */
	const char *p = hdr;
	const char *w = NULL;
	for (size_t i = 0; i + 13 < len; i++)
		if (!memcmp(p + i, "\x01\0\0\0\0\0\0\0w\x01\0\0\0", 13)) {
			w = p + i;
			break;
		}
	ck_assert_ptr_nonnull(w);
	uint64_t big = 75000000000ull;
	ck_assert(pwrite(fd, &big, 8, (off_t)(w - p) + 13) == 8);
	uint64_t data_off = 0;
	ck_assert_int_eq(st_gguf_open_memory(&g, hdr, len, "x", &err), ST_OK);
	data_off = st_gguf_data_offset(g);
	st_gguf_close(g);
	ck_assert_int_eq(ftruncate(fd, (off_t)(data_off + big * 4)), 0);
	close(fd);
	ck_assert_int_eq(st_gguf_open(&g, path, &err), ST_OK);
	ck_assert_uint_eq(st_gguf_tensor_at(g, 0)->n_bytes, big * 4);
	ck_assert_uint_eq(st_gguf_size(g), data_off + big * 4);
	st_gguf_close(g);
	unlink(path);
	free(hdr);
}
END_TEST

/* Append to buf at *n: a u32, a u64, a GGUF string. */
static void put_u32(unsigned char *buf, size_t *n, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		buf[(*n)++] = (unsigned char)(v >> 8 * i);
}

static void put_u64(unsigned char *buf, size_t *n, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		buf[(*n)++] = (unsigned char)(v >> 8 * i);
}

static void put_str(unsigned char *buf, size_t *n, const char *s)
{
	put_u64(buf, n, strlen(s));
	memcpy(buf + *n, s, strlen(s));
	*n += strlen(s);
}

/*
 * ggml's loader refuses a string or an array longer than 2^30 (its
 * GGUF_MAX_STRING_LENGTH, GGUF_MAX_ARRAY_ELEMENTS): a file in memory
 * (anonymous pages, zero until written) holding an array of 2^30 + 1
 * uint8 and a string of 2^30 + 1 NUL bytes (valid UTF-8) is read, and
 * checking warns of each. (A sparse file would do, but reading a gigabyte
 * of holes through the page cache takes seconds.)
 */
START_TEST(test_ggml_length_limits)
{
	const uint64_t big = (1ull << 30) + 1;
	size_t size = 2 * (size_t)big + 4096;
	unsigned char *buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
	                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(buf != MAP_FAILED);
	size_t n = 0;
	memcpy(buf, "GGUF", 4);
	n = 4;
	put_u32(buf, &n, 3);
	put_u64(buf, &n, 0);
	put_u64(buf, &n, 3);
	put_str(buf, &n, "general.architecture");
	put_u32(buf, &n, ST_GGUF_STRING);
	put_str(buf, &n, "test");
	put_str(buf, &n, "t.arr");
	put_u32(buf, &n, ST_GGUF_ARRAY);
	put_u32(buf, &n, ST_GGUF_UINT8);
	put_u64(buf, &n, big);
	n += big; /* the array's bytes, zero */
	put_str(buf, &n, "t.str");
	put_u32(buf, &n, ST_GGUF_STRING);
	put_u64(buf, &n, big);
	n += big;
	st_gguf *g;
	st_error err;
	ck_assert_int_eq(st_gguf_open_memory(&g, buf, n, "long", &err), ST_OK);
	ck_assert_uint_eq(st_gguf_kv_at(g, 1)->value.n, big);
	ck_assert_uint_eq(st_gguf_kv_at(g, 2)->value.n, big);
	st_gguf_close(g);
	struct counts c = {0};
	ck_assert_int_eq(st_gguf_check_memory(buf, n, "long", collect, &c), 0);
	ck_assert_msg(c.warnings == 2, "%s", c.all);
	ck_assert_msg(strstr(c.all, "llama.cpp will refuse this: key 't.arr': "
	                            "array of 1073741825 elements"), "%s", c.all);
	ck_assert_msg(strstr(c.all, "llama.cpp will refuse this: key 't.str': "
	                            "string of 1073741825 bytes"), "%s", c.all);
	munmap(buf, size);
}
END_TEST


/* ---- the writer ------------------------------------------------------------ */

static void set_u(st_gguf_writer *w, const char *key, int type, uint64_t u)
{
	st_gguf_value v = {.type = type};
	v.v.u = u;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_set(w, key, &v, &err), ST_OK);
}

static void set_i(st_gguf_writer *w, const char *key, int type, int64_t i)
{
	st_gguf_value v = {.type = type};
	v.v.i = i;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_set(w, key, &v, &err), ST_OK);
}

static void set_f(st_gguf_writer *w, const char *key, int type, double f)
{
	st_gguf_value v = {.type = type};
	v.v.f = f;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_set(w, key, &v, &err), ST_OK);
}

static st_gguf_value str_value(const char *s)
{
	st_gguf_value v = {.type = ST_GGUF_STRING, .n = strlen(s)};
	v.v.s = s;
	return v;
}

static void set_arr(st_gguf_writer *w, const char *key, int et, uint64_t n,
                    const void *raw, const st_gguf_value *vals)
{
	st_gguf_value v = {.type = ST_GGUF_ARRAY, .elem_type = et, .n = n};
	if (vals)
		v.v.vals = vals;
	else
		v.v.raw = raw;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_set(w, key, &v, &err), ST_OK);
}

/* The writer, given what gen_fixtures.py wrote, writes the same bytes. */
START_TEST(test_writer_reproduces_fixture)
{
	char path[] = "/tmp/check_gguf_writer_XXXXXX";
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	close(fd);
	st_gguf_writer *w;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_new(&w, &err), ST_OK);
	st_gguf_value v = str_value("test");
	ck_assert_int_eq(st_gguf_writer_set(w, "general.architecture", &v, &err),
	                 ST_OK);
	set_u(w, "general.alignment", ST_GGUF_UINT32, 64);
	set_u(w, "general.quantization_version", ST_GGUF_UINT32, 2);
	set_u(w, "t.u8", ST_GGUF_UINT8, 200);
	set_i(w, "t.i8", ST_GGUF_INT8, -100);
	set_u(w, "t.u16", ST_GGUF_UINT16, 60000);
	set_i(w, "t.i16", ST_GGUF_INT16, -30000);
	set_u(w, "t.u32", ST_GGUF_UINT32, 4000000000u);
	set_i(w, "t.i32", ST_GGUF_INT32, -2000000000);
	set_f(w, "t.f32", ST_GGUF_FLOAT32, 1.5);
	set_u(w, "t.bool", ST_GGUF_BOOL, 1);
	v = str_value("h\xc3\xa9llo");
	ck_assert_int_eq(st_gguf_writer_set(w, "t.string", &v, &err), ST_OK);
	set_u(w, "t.u64", ST_GGUF_UINT64, (1ull << 63) + 5);
	set_i(w, "t.i64", ST_GGUF_INT64, -(1ll << 62));
	set_f(w, "t.f64", ST_GGUF_FLOAT64, -0.1);
	static const unsigned char u32s[] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};
	set_arr(w, "t.arr_u32", ST_GGUF_UINT32, 3, u32s, NULL);
	st_gguf_value strs[3] = {str_value("a"), str_value(""), str_value("ccc")};
	set_arr(w, "t.arr_str", ST_GGUF_STRING, 3, NULL, strs);
	static const unsigned char a0[] = {1, 0, 0xfe, 0xff}, a1[] = {3, 0};
	st_gguf_value inner[2] = {
		{.type = ST_GGUF_ARRAY, .elem_type = ST_GGUF_INT16, .n = 2,
		 .v.raw = a0},
		{.type = ST_GGUF_ARRAY, .elem_type = ST_GGUF_INT16, .n = 1,
		 .v.raw = a1}};
	set_arr(w, "t.arr_nested", ST_GGUF_ARRAY, 2, NULL, inner);
	set_arr(w, "t.arr_empty", ST_GGUF_FLOAT32, 0, "", NULL);
	static const unsigned char bools[] = {1, 0, 1};
	set_arr(w, "t.arr_bool", ST_GGUF_BOOL, 3, bools, NULL);
	double f64s[2] = {0.25, -8.0};
	set_arr(w, "t.arr_f64", ST_GGUF_FLOAT64, 2, f64s, NULL);
	/* The tensors and their data, as the fixture's reader sees them. */
	st_gguf *ref;
	ck_assert_int_eq(st_gguf_open(&ref, DIR "ok_all_types.gguf", &err), ST_OK);
	for (size_t i = 0; i < st_gguf_n_tensors(ref); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(ref, i);
		ck_assert_int_eq(st_gguf_writer_add_tensor(w, t->name, t->type,
		                                           t->ndim, t->dims, &err),
		                 ST_OK);
	}
	ck_assert_int_eq(st_gguf_writer_open(w, path, &err), ST_OK);
	for (size_t i = 0; i < st_gguf_n_tensors(ref); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(ref, i);
		const unsigned char *d = st_gguf_tensor_data(ref, i);
		/* In uneven chunks, to cross tensor boundaries inside calls. */
		ck_assert_int_eq(st_gguf_writer_write(w, d, 1, &err), ST_OK);
		ck_assert_int_eq(st_gguf_writer_write(w, d + 1, t->n_bytes - 1,
		                                      &err), ST_OK);
	}
	ck_assert_int_eq(st_gguf_writer_write(w, "x", 1, &err), ST_EINVAL);
	ck_assert_int_eq(st_gguf_writer_finish(w, &err), ST_OK);
	st_gguf_writer_free(w);
	st_gguf_close(ref);
	size_t n1, n2;
	char *a = read_file(path, &n1);
	char *b = read_file(DIR "ok_all_types.gguf", &n2);
	ck_assert_uint_eq(n1, n2);
	ck_assert(!memcmp(a, b, n1));
	free(a);
	free(b);
	unlink(path);
}
END_TEST

START_TEST(test_writer_refuses)
{
	st_gguf_writer *w;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_new(&w, &err), ST_OK);
	set_u(w, "a.b", ST_GGUF_UINT32, 1);
	st_gguf_value v = {.type = ST_GGUF_UINT32};
	ck_assert_int_eq(st_gguf_writer_set(w, "a.b", &v, &err), ST_EINVAL);
	ck_assert(strstr(err.message, "twice") != NULL);
	ck_assert_int_eq(st_gguf_writer_set(w, "", &v, &err), ST_EINVAL);
	v.v.u = 48;
	ck_assert_int_eq(st_gguf_writer_set(w, "general.alignment", &v, &err),
	                 ST_EINVAL);
	uint64_t dims[2] = {31, 2};
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "q", ST_GGML_Q8_0, 2, dims,
	                                           &err), ST_EINVAL);
	ck_assert(strstr(err.message, "blocks") != NULL);
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "q", 4, 2, dims, &err),
	                 ST_EINVAL);
	dims[0] = 32;
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "q", ST_GGML_Q8_0, 2, dims,
	                                           &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "q", ST_GGML_F32, 2, dims,
	                                           &err), ST_EINVAL);
	/* Unfinished: no file appears. */
	char dir[] = "/tmp/check_gguf_wdir_XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/out.gguf", dir);
	ck_assert_int_eq(st_gguf_writer_open(w, path, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_write(w, "abc", 3, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_finish(w, &err), ST_ESTATE);
	ck_assert(strstr(err.message, "tensor 'q': data incomplete") != NULL);
	st_gguf_writer_free(w);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A GGUF with no metadata key at all: the header holds a count of 0 and
 * nothing else before the tensor infos (memcpy of an empty key block was
 * called with NULL, which UBSan stops on in the sanitizer build). */
START_TEST(test_writer_no_metadata)
{
	st_gguf_writer *w;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_new(&w, &err), ST_OK);
	uint64_t dims[1] = {2};
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "t", ST_GGML_F32, 1, dims,
	                                           &err), ST_OK);
	char dir[] = "/tmp/check_gguf_nokv_XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/out.gguf", dir);
	ck_assert_int_eq(st_gguf_writer_open(w, path, &err), ST_OK);
	float d[2] = {1.5f, -2.0f};
	ck_assert_int_eq(st_gguf_writer_write(w, d, sizeof d, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_finish(w, &err), ST_OK);
	st_gguf_writer_free(w);
	st_gguf *g;
	ck_assert_int_eq(st_gguf_open(&g, path, &err), ST_OK);
	ck_assert_uint_eq(st_gguf_n_kv(g), 0);
	ck_assert_uint_eq(st_gguf_n_tensors(g), 1);
	ck_assert_str_eq(st_gguf_tensor_at(g, 0)->name, "t");
	st_gguf_close(g);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gguf");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_every_value_type);
	tcase_add_test(tc, test_tensor_infos_and_data);
	tcase_add_test(tc, test_v2_default_alignment);
	tcase_add_test(tc, test_unknown_type_is_listed_and_the_rest_reads);
	tcase_add_test(tc, test_type_table);
	tcase_add_test(tc, test_q8_0_matches_numpy);
	tcase_add_test(tc, test_f16_bf16_encode);
	tcase_add_test(tc, test_sparse_header_only);
	tcase_add_test(tc, test_ggml_length_limits);
	tcase_add_test(tc, test_writer_reproduces_fixture);
	tcase_add_test(tc, test_writer_refuses);
	tcase_add_test(tc, test_writer_no_metadata);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_manifest);
	tcase_add_test(tc, test_ggml_agrees);
	tcase_add_test(tc, test_unreadable_is_eio);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
