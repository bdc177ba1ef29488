/*
 * check_quant.c - unit tests for scaled FP8 and MXFP4 (libst/quant.c).
 *
 * The references are the files in testdata/quant, made by
 * testdata/quant/gen_quant.py: a numpy implementation of the layouts
 * (codes decoded from the OCP formulas by testdata/dtype/gen_f8.py, numpy
 * float32 products, PyTorch's BF16 rounding, numpy's F16), and of
 * transformers' MXFP4 dequantization. Outputs are compared bit for bit
 * (NaNs by NaN-ness), whole and in row ranges.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "internal.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

static st_file *open_fixture(const char *name)
{
	char path[4096];
	st_file *f = NULL;
	st_error e;

	snprintf(path, sizeof path, "%s/quant/%s", ST_TESTDATA, name);
	ck_assert_msg(st_file_open(&f, path, 0, &e) == ST_OK, "%s: %s", path, e.message);
	return f;
}

static const st_tensor *tensor(st_file *f, const char *name, const void **data)
{
	long i = st_file_find(f, name, strlen(name));
	st_error e;

	ck_assert_msg(i >= 0, "fixture has no tensor '%s'", name);
	ck_assert_int_eq(st_file_data(f, (size_t)i, data, &e), ST_OK);
	return st_file_tensor(f, (size_t)i);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	ck_assert(p != NULL);
	return p;
}

static int is_nan(st_dtype t, const unsigned char *p)
{
	uint32_t x;
	uint16_t h;

	if (t == ST_DTYPE_F32) {
		memcpy(&x, p, 4);
		return (x & 0x7FFFFFFF) > 0x7F800000;
	}
	memcpy(&h, p, 2);
	return t == ST_DTYPE_F16 ? (h & 0x7FFF) > 0x7C00 : (h & 0x7FFF) > 0x7F80;
}

/* Equal bit for bit, NaNs by NaN-ness; the first difference in *at. */
static int same(st_dtype t, const void *a, const void *b, uint64_t n, uint64_t *at)
{
	const size_t es = st_dtype_bits(t) / 8;
	const unsigned char *x = a, *y = b;

	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *p = x + i * es, *q = y + i * es;
		if (memcmp(p, q, es) && !(is_nan(t, p) && is_nan(t, q))) {
			*at = i;
			return 0;
		}
	}
	return 1;
}

/* Cut [0, n) at a few deterministic points, including 1-row pieces. */
static uint64_t next_cut(uint64_t at, uint64_t n, unsigned *k)
{
	static const uint64_t steps[] = {1, 3, 1, 7, 2, 64, 1, 129, 5};
	uint64_t s = steps[(*k)++ % COUNT(steps)];
	return at + s > n ? n : at + s;
}

/* ---- weight_block_size ------------------------------------------------------ */

START_TEST(test_block_size)
{
	static const struct {
		const char *json;
		uint64_t r, c;
	} good[] = {
		{"[128, 128]", 128, 128}, {"[1,1]", 1, 1}, {" \t\n[ 64 ,\r 32 ] ", 64, 32},
		{"[1048576, 7]", 1048576, 7},
	};
	static const struct {
		const char *json, *why;
	} bad[] = {
		{"[0, 128]", "is 0"},
		{"[128, 0]", "is 0"},
		{"[-128, 128]", "is negative"},
		{"[128, -1]", "is negative"},
		{"[128.0, 128]", "is not an integer"},
		{"[128, 1e2]", "is not an integer"},
		{"[128, 128.5]", "is not an integer"},
		{"[1048577, 128]", "too large"},
		{"[99999999999999999999999, 128]", "too large"},
		{"[18446744073709551616, 1]", "too large"},
		{"[128]", "not a pair"},
		{"[128, 128, 1]", "not a pair"},
		{"128", "not a pair"},
		{"\"128\"", "not a pair"},
		{"[\"128\", 128]", "not a pair"},
		{"[true, 128]", "not a pair"},
		{"null", "not a pair"},
		{"[128, 128] x", "not a pair"},
		{"", "not a pair"},
		{"[128 128]", "not a pair"},
	};
	uint64_t r = 0, c = 0;
	st_error e;

	for (size_t i = 0; i < COUNT(good); i++) {
		ck_assert_int_eq(st_quant_parse_block_size(good[i].json, strlen(good[i].json), &r, &c, &e),
		                 ST_OK);
		ck_assert_uint_eq(r, good[i].r);
		ck_assert_uint_eq(c, good[i].c);
	}
	for (size_t i = 0; i < COUNT(bad); i++) {
		r = c = 77;
		memset(&e, 0, sizeof e);
		ck_assert_int_eq(st_quant_parse_block_size(bad[i].json, strlen(bad[i].json), &r, &c, &e),
		                 ST_EINVAL);
		ck_assert_msg(strstr(e.message, "weight_block_size") && strstr(e.message, bad[i].why),
		              "'%s': message '%s'", bad[i].json, e.message);
		ck_assert_ptr_null(strchr(e.message, '\n'));
		ck_assert_uint_eq(r, 77); /* untouched */
	}
	/* The length is honoured: what follows is not read. */
	ck_assert_int_eq(st_quant_parse_block_size("[2,3]]]", 5, &r, &c, &e), ST_OK);
	ck_assert_uint_eq(c, 3);
}
END_TEST

START_TEST(test_config_block_size)
{
	static const struct {
		const char *json;
		int rc, found;
		uint64_t r, c;
	} v[] = {
		{"{\"quantization_config\": {\"weight_block_size\": [64, 32]}}", ST_OK, 1, 64, 32},
		{"{\"a\": {\"weight_block_size\": [1, 1]}, \"quantization_config\": {\"fmt\": \"e4m3\"}}", ST_OK, 0,
		 128, 128},
		{"{\"torch_dtype\": \"bfloat16\"}", ST_OK, 0, 128, 128},
		{"{\"quantization_config\": null}", ST_OK, 0, 128, 128},
		{"{\"quantization_config\": {\"weight_block_size\": [0, 32]}}", ST_EINVAL, 1, 0, 0},
		{"{\"quantization_config\": {\"weight_block_size\": \"128\"}}", ST_EINVAL, 1, 0, 0},
		{"[1, 2]", ST_EFORMAT, 0, 0, 0},
		{"{\"quantization_config\": {\"weight_block_size\": [1, 2]}", ST_EFORMAT, 0, 0, 0},
		{"{\"a\": 1} x", ST_EFORMAT, 0, 0, 0},
	};
	for (size_t i = 0; i < COUNT(v); i++) {
		uint64_t r = 0, c = 0;
		int found = -1;
		st_error e;
		memset(&e, 0, sizeof e);
		int rc = st_quant_config_block_size(v[i].json, strlen(v[i].json), &r, &c, &found, &e);
		ck_assert_msg(rc == v[i].rc, "%s: %d (%s)", v[i].json, rc, e.message);
		if (rc == ST_OK) {
			ck_assert_int_eq(found, v[i].found);
			ck_assert_uint_eq(r, v[i].r);
			ck_assert_uint_eq(c, v[i].c);
		} else {
			ck_assert(e.message[0] != 0);
		}
	}
	/* Hostile nesting is refused, not recursed into without end. */
	{
		enum { D = 100000 };
		char *deep = xmalloc(2 * D + 32);
		size_t k = (size_t)sprintf(deep, "{\"x\": ");
		for (int i = 0; i < D; i++)
			deep[k++] = '[';
		for (int i = 0; i < D; i++)
			deep[k++] = ']';
		deep[k++] = '}';
		uint64_t r, c;
		int found;
		st_error e;
		ck_assert_int_eq(st_quant_config_block_size(deep, k, &r, &c, &found, &e), ST_EFORMAT);
		free(deep);
	}
}
END_TEST

START_TEST(test_config_dequantized)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{"{\n  \"a\": 1,\n  \"quantization_config\": {\"fmt\": [1, {\"b\": \"}\"}]},\n  \"torch_dtype\": \"float16\"\n}\n",
		 "{\n  \"a\": 1,\n  \"torch_dtype\": \"bfloat16\"\n}\n"},
		{"{\"quantization_config\": {}, \"a\": 1, \"torch_dtype\": null}",
		 "{\"a\": 1, \"torch_dtype\": \"bfloat16\"}"},
		{"{\"torch_dtype\": \"float32\", \"quantization_config\": {\"q\": 1}}",
		 "{\"torch_dtype\": \"bfloat16\"}"},
		{"{\"quantization_config\": {\"q\": 1}}", "{\"torch_dtype\": \"bfloat16\"}"},
		/* Only the top-level member goes. */
		{"{\"text_config\": {\"quantization_config\": 1}, \"torch_dtype\": \"bfloat16\"}",
		 "{\"text_config\": {\"quantization_config\": 1}, \"torch_dtype\": \"bfloat16\"}"},
	};
	for (size_t i = 0; i < COUNT(v); i++) {
		char *out = NULL;
		size_t n = 0;
		st_error e;
		ck_assert_int_eq(st_quant_config_dequantized(v[i].in, strlen(v[i].in), "bfloat16", &out, &n, &e),
		                 ST_OK);
		ck_assert_msg(n == strlen(v[i].out) && !memcmp(out, v[i].out, n), "case %zu: '%.*s'", i, (int)n,
		              out);
		free(out);
	}
	char *out = NULL;
	size_t n = 0;
	st_error e;
	ck_assert_int_eq(st_quant_config_dequantized("[1]", 3, "bfloat16", &out, &n, &e), ST_EFORMAT);
	ck_assert_ptr_null(out);
}
END_TEST

/* The config of a quantized checkpoint: the member replaced or added last. */
START_TEST(test_config_fp8)
{
	static const char qc[] = "\"quantization_config\": {\"activation_scheme\": \"dynamic\", "
	                         "\"fmt\": \"e4m3\", \"quant_method\": \"fp8\", "
	                         "\"weight_block_size\": [128, 64]}";
	static const struct {
		const char *in, *before, *after;
	} v[] = {
		{"{\n  \"a\": 1,\n  \"torch_dtype\": \"float32\"\n}\n",
		 "{\n  \"a\": 1,\n  \"torch_dtype\": \"float32\",\n  ", "\n}\n"},
		{"{\"quantization_config\": {\"quant_method\": \"mxfp4\"}, \"a\": [1]}",
		 "{\"a\": [1],\n  ", "\n}"},
		{"{}", "{\n  ", "\n}"},
		{" { \"q\": {\"quantization_config\": 1} } ", " { \"q\": {\"quantization_config\": 1},\n  ",
		 "\n} "},
	};
	for (size_t i = 0; i < COUNT(v); i++) {
		char *out = NULL, want[512];
		size_t n = 0;
		st_error e;
		snprintf(want, sizeof want, "%s%s%s", v[i].before, qc, v[i].after);
		ck_assert_int_eq(st_quant_config_fp8(v[i].in, strlen(v[i].in), 128, 64, &out, &n, &e), ST_OK);
		ck_assert_msg(n == strlen(want) && !memcmp(out, want, n), "case %zu: '%.*s'", i, (int)n, out);
		free(out);
	}
	char *out = NULL;
	size_t n = 0;
	st_error e;
	ck_assert_int_eq(st_quant_config_fp8("[1]", 3, 128, 128, &out, &n, &e), ST_EFORMAT);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(st_quant_config_fp8("{}", 2, 0, 128, &out, &n, &e), ST_EINVAL);
	ck_assert_ptr_null(out);
}
END_TEST

/* ---- FP8 dequantization ---------------------------------------------------- */

START_TEST(test_fp8_cases)
{
	static const st_dtype dsts[3] = {ST_DTYPE_F32, ST_DTYPE_BF16, ST_DTYPE_F16};
	static const char *const dnames[3] = {"f32", "bf16", "f16"};
	st_file *f = open_fixture("fp8.safetensors");
	size_t cases = 0;

	for (size_t m = 0; m < st_file_n_meta(f); m++) {
		const st_meta *meta = st_file_meta(f, m);
		char name[64], kind[16];
		unsigned long long b0, b1;
		const void *wd, *sd;
		const st_tensor *w, *s;
		st_quant_fp8 l;
		st_error e;

		if (meta->key[0] != 'c')
			continue;
		ck_assert_int_eq(sscanf(meta->value, "%llu %llu %15s", &b0, &b1, kind), 3);
		snprintf(name, sizeof name, "%s.w", meta->key);
		w = tensor(f, name, &wd);
		snprintf(name, sizeof name, "%s.s", meta->key);
		s = tensor(f, name, &sd);
		ck_assert_msg(st_quant_fp8_layout(&l, w, s, b0, b1, "fp8.safetensors", &e) == ST_OK, "%s: %s",
		              meta->key, e.message);
		ck_assert_int_eq(l.kind, !strcmp(kind, "block") ? ST_QUANT_BLOCK
		                         : !strcmp(kind, "channel") ? ST_QUANT_CHANNEL : ST_QUANT_TENSOR);
		uint64_t rows = l.experts * l.rows, n = rows * l.cols;
		for (int k = 0; k < 3; k++) {
			const size_t es = st_dtype_bits(dsts[k]) / 8;
			const void *want;
			unsigned char *out = xmalloc(n * es + 1), *part = xmalloc(n * es + 1);
			uint64_t at = 0;
			unsigned cut = 0;

			snprintf(name, sizeof name, "%s.%s", meta->key, dnames[k]);
			tensor(f, name, &want);
			ck_assert_int_eq(st_quant_fp8_dequant(&l, dsts[k], out, wd, sd, 0, rows), ST_OK);
			ck_assert_msg(same(dsts[k], out, want, n, &at), "%s -> %s: element %" PRIu64 " differs",
			              meta->key, dnames[k], at);
			/* Row ranges give the same bytes (w points at the range). */
			memset(part, 0xA5, n * es + 1);
			for (uint64_t r0 = 0, r1; r0 < rows; r0 = r1) {
				r1 = next_cut(r0, rows, &cut);
				ck_assert_int_eq(st_quant_fp8_dequant(&l, dsts[k], part + r0 * l.cols * es,
				                                      (const unsigned char *)wd + r0 * l.cols, sd, r0, r1),
				                 ST_OK);
			}
			ck_assert_msg(memcmp(out, part, n * es) == 0, "%s -> %s: row ranges differ", meta->key,
			              dnames[k]);
			ck_assert_uint_eq(part[n * es], 0xA5);
			free(out);
			free(part);
		}
		cases++;
	}
	ck_assert_uint_eq(cases, 19);
	st_file_close(f);
}
END_TEST

START_TEST(test_fp8_environment)
{
#if defined(__x86_64__) || defined(__i386__)
	/* FTZ/DAZ and another rounding mode in the caller change nothing. */
	st_file *f = open_fixture("fp8.safetensors");
	const void *wd, *sd, *want;
	const st_tensor *w = tensor(f, "c15.w", &wd), *s = tensor(f, "c15.s", &sd);
	st_quant_fp8 l;
	st_error e;
	float out[64];
	uint64_t at = 0;
	unsigned saved = _mm_getcsr();

	tensor(f, "c15.f32", &want);
	ck_assert_int_eq(st_quant_fp8_layout(&l, w, s, 8, 8, NULL, &e), ST_OK);
	_mm_setcsr((saved & ~0xFFC0u) | 0x8040 | 0x6000);
	int rc = st_quant_fp8_dequant(&l, ST_DTYPE_F32, out, wd, sd, 0, 8);
	unsigned after = _mm_getcsr();
	_mm_setcsr(saved);
	ck_assert_int_eq(rc, ST_OK);
	ck_assert_uint_eq(after & 0xFFC0u, 0x8040 | 0x6000); /* put back */
	ck_assert_msg(same(ST_DTYPE_F32, out, want, 64, &at), "element %" PRIu64, at);
	st_file_close(f);
#endif
}
END_TEST

/* A tensor record built by hand, for the layout checks. */
static st_tensor fake(const char *name, st_dtype t, unsigned nd, const uint64_t *shape)
{
	st_tensor x;
	uint64_t n = 1;

	memset(&x, 0, sizeof x);
	for (unsigned i = 0; i < nd; i++)
		n *= shape[i];
	x.name = name;
	x.name_len = strlen(name);
	x.dtype = t;
	x.ndim = nd;
	x.shape = shape;
	x.n_elements = n;
	x.n_bytes = n * st_dtype_bits(t) / 8;
	return x;
}

START_TEST(test_fp8_mismatch)
{
	static const uint64_t w2[2] = {300, 500}, w3[3] = {4, 300, 500};
	static const struct {
		unsigned nd;
		uint64_t shape[3];
	} bad[] = {
		{2, {3, 3}}, {2, {2, 4}}, {2, {300, 2}}, {2, {1, 2}}, {1, {3}}, {3, {1, 3, 4}},
		{2, {4, 3}},
	};
	static const uint64_t bad3[][3] = {{3, 3, 4}, {4, 2, 4}, {4, 3, 5}};
	st_tensor w = fake("x.weight", ST_DTYPE_F8_E4M3, 2, w2), s, w3t;
	st_quant_fp8 l;
	st_error e;

	for (size_t i = 0; i < COUNT(bad); i++) {
		s = fake("x.weight_scale_inv", ST_DTYPE_F32, bad[i].nd, bad[i].shape);
		memset(&e, 0, sizeof e);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w, &s, 128, 128, "model.safetensors", &e), ST_EFORMAT);
		ck_assert_msg(strstr(e.message, "model.safetensors: ") == e.message &&
		              strstr(e.message, "'x.weight'") && strstr(e.message, "'x.weight_scale_inv'") &&
		              strstr(e.message, "[3, 4]"),
		              "message '%s'", e.message);
	}
	/* Good shapes, for contrast. */
	{
		static const uint64_t ok[] = {3, 4}, ch[] = {300, 1}, one[] = {1};
		s = fake("x.weight_scale_inv", ST_DTYPE_BF16, 2, ok);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w, &s, 128, 128, NULL, &e), ST_OK);
		ck_assert_uint_eq(l.scale_rows, 3);
		s = fake("x.weight_scale", ST_DTYPE_F32, 2, ch);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w, &s, 128, 128, NULL, &e), ST_OK);
		ck_assert_int_eq(l.kind, ST_QUANT_CHANNEL);
		s = fake("x.weight_scale", ST_DTYPE_F32, 1, one);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w, &s, 128, 128, NULL, &e), ST_OK);
		ck_assert_int_eq(l.kind, ST_QUANT_TENSOR);
	}
	w3t = fake("e.weight", ST_DTYPE_F8_E4M3, 3, w3);
	for (size_t i = 0; i < COUNT(bad3); i++) {
		s = fake("e.weight_scale_inv", ST_DTYPE_F32, 3, bad3[i]);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w3t, &s, 128, 128, "m.safetensors", &e), ST_EFORMAT);
		ck_assert_msg(strstr(e.message, "'e.weight'") && strstr(e.message, "[4, 3, 4]"), "'%s'",
		              e.message);
	}
	/* Wrong dtypes, dimensions and block sizes. */
	{
		static const uint64_t ok[] = {3, 4}, v[] = {300};
		s = fake("x.weight_scale_inv", ST_DTYPE_I32, 2, ok);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w, &s, 128, 128, NULL, &e), ST_EFORMAT);
		ck_assert_ptr_nonnull(strstr(e.message, "F32, BF16, F16 or F8_E8M0"));
		s = fake("x.weight_scale_inv", ST_DTYPE_F32, 2, ok);
		st_tensor wb = fake("x.weight", ST_DTYPE_BF16, 2, w2), w1 = fake("x.weight", ST_DTYPE_F8_E4M3, 1, v);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &wb, &s, 128, 128, NULL, &e), ST_EFORMAT);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w1, &s, 128, 128, NULL, &e), ST_EFORMAT);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w, &s, 0, 128, NULL, &e), ST_EINVAL);
		ck_assert_int_eq(st_quant_fp8_layout(&l, &w, &s, 128, ST_QUANT_MAX_BLOCK + 1, NULL, &e), ST_EINVAL);
	}
}
END_TEST

START_TEST(test_fp8_bad_calls)
{
	static const uint64_t w2[2] = {4, 4}, s2[2] = {2, 2};
	st_tensor w = fake("w", ST_DTYPE_F8_E4M3, 2, w2), s = fake("s", ST_DTYPE_F32, 2, s2);
	unsigned char codes[16] = {0};
	float sc[4] = {1, 1, 1, 1}, out[16];
	st_quant_fp8 l, forged;
	st_error e;

	ck_assert_int_eq(st_quant_fp8_layout(&l, &w, &s, 2, 2, NULL, &e), ST_OK);
	ck_assert_int_eq(st_quant_fp8_dequant(&l, ST_DTYPE_F32, out, codes, sc, 0, 5), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_dequant(&l, ST_DTYPE_F32, out, codes, sc, 3, 2), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_dequant(&l, ST_DTYPE_F8_E4M3, out, codes, sc, 0, 4), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_dequant(NULL, ST_DTYPE_F32, out, codes, sc, 0, 4), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_dequant(&l, ST_DTYPE_F32, NULL, NULL, NULL, 2, 2), ST_OK);
	forged = l;
	forged.block_rows = 0;
	ck_assert_int_eq(st_quant_fp8_dequant(&forged, ST_DTYPE_F32, out, codes, sc, 0, 4), ST_EINVAL);
	forged = l;
	forged.scale_cols = 1; /* would read past the scales */
	ck_assert_int_eq(st_quant_fp8_dequant(&forged, ST_DTYPE_F32, out, codes, sc, 0, 4), ST_EINVAL);
	forged = l;
	forged.experts = UINT64_MAX; /* rows overflow */
	ck_assert_int_eq(st_quant_fp8_dequant(&forged, ST_DTYPE_F32, out, codes, sc, 0, 4), ST_EINVAL);

	/* No experts: a layout, and nothing to write (found by fuzz_quant). */
	static const uint64_t w3[3] = {0, 1, 16}, s3[3] = {0, 1, 2};
	st_tensor we = fake("w", ST_DTYPE_F8_E5M2, 3, w3), se = fake("s", ST_DTYPE_F8_E8M0, 3, s3);
	ck_assert_int_eq(st_quant_fp8_layout(&l, &we, &se, 45, 13, NULL, &e), ST_OK);
	ck_assert_int_eq(st_quant_fp8_dequant(&l, ST_DTYPE_F32, out, codes, sc, 0, 0), ST_OK);
	ck_assert_int_eq(st_quant_fp8_dequant(&l, ST_DTYPE_F32, out, codes, sc, 0, 1), ST_EINVAL);
}
END_TEST

/* ---- MXFP4 ------------------------------------------------------------------- */

START_TEST(test_mxfp4_cases)
{
	static const char *const cases[] = {"m0", "m1", "m2", "m3", "m4"};
	st_file *f = open_fixture("mxfp4.safetensors");

	for (size_t c = 0; c < COUNT(cases); c++) {
		char name[64];
		const void *bd, *sd, *want;
		const st_tensor *b, *s, *ref;
		st_quant_mxfp4 l;
		st_error e;

		snprintf(name, sizeof name, "%s_blocks", cases[c]);
		b = tensor(f, name, &bd);
		snprintf(name, sizeof name, "%s_scales", cases[c]);
		s = tensor(f, name, &sd);
		ck_assert_msg(st_quant_mxfp4_layout(&l, b, s, NULL, &e) == ST_OK, "%s", e.message);
		for (int k = 0; k < 2; k++) {
			st_dtype t = k ? ST_DTYPE_BF16 : ST_DTYPE_F32;
			const size_t es = st_dtype_bits(t) / 8;
			snprintf(name, sizeof name, "%s.%s", cases[c], k ? "bf16" : "f32");
			ref = tensor(f, name, &want);
			/* [experts, groups * 32, rows], as transformers gives it. */
			ck_assert_uint_eq(ref->ndim, 3);
			ck_assert_uint_eq(ref->shape[0], l.experts);
			ck_assert_uint_eq(ref->shape[1], l.groups * 32);
			ck_assert_uint_eq(ref->shape[2], l.rows);
			uint64_t rows = l.experts * l.groups * 32, n = rows * l.rows, at = 0;
			unsigned char *out = xmalloc(n * es), *part = xmalloc(n * es + 1);
			unsigned cut = 0;
			ck_assert_int_eq(st_quant_mxfp4_dequant(&l, t, out, bd, sd, 0, rows), ST_OK);
			ck_assert_msg(same(t, out, want, n, &at), "%s %s: element %" PRIu64 " differs", cases[c],
			              st_dtype_name(t), at);
			memset(part, 0xA5, n * es + 1);
			for (uint64_t r0 = 0, r1; r0 < rows; r0 = r1) {
				r1 = next_cut(r0, rows, &cut);
				ck_assert_int_eq(st_quant_mxfp4_dequant(&l, t, part + r0 * l.rows * es, bd, sd, r0, r1),
				                 ST_OK);
			}
			ck_assert_msg(memcmp(out, part, n * es) == 0, "%s: row ranges differ", cases[c]);
			ck_assert_uint_eq(part[n * es], 0xA5);
			free(out);
			free(part);
		}
	}
	st_file_close(f);
}
END_TEST

START_TEST(test_mxfp4_errors)
{
	static const uint64_t b4[4] = {2, 3, 4, 16}, s3[3] = {2, 3, 4}, s3b[3] = {2, 3, 5},
	                      b4b[4] = {2, 3, 4, 15}, b3[3] = {3, 4, 16};
	st_tensor b = fake("m.w_blocks", ST_DTYPE_U8, 4, b4), s = fake("m.w_scales", ST_DTYPE_U8, 3, s3);
	st_quant_mxfp4 l;
	st_error e;

	ck_assert_int_eq(st_quant_mxfp4_layout(&l, &b, &s, "x.safetensors", &e), ST_OK);
	s = fake("m.w_scales", ST_DTYPE_U8, 3, s3b);
	ck_assert_int_eq(st_quant_mxfp4_layout(&l, &b, &s, "x.safetensors", &e), ST_EFORMAT);
	ck_assert_msg(strstr(e.message, "'m.w_blocks'") && strstr(e.message, "'m.w_scales'") &&
	              strstr(e.message, "[2, 3, 4]"), "'%s'", e.message);
	s = fake("m.w_scales", ST_DTYPE_F32, 3, s3);
	ck_assert_int_eq(st_quant_mxfp4_layout(&l, &b, &s, NULL, &e), ST_EFORMAT);
	s = fake("m.w_scales", ST_DTYPE_U8, 3, s3);
	b = fake("m.w_blocks", ST_DTYPE_U8, 4, b4b);
	ck_assert_int_eq(st_quant_mxfp4_layout(&l, &b, &s, NULL, &e), ST_EFORMAT);
	b = fake("m.w_blocks", ST_DTYPE_U8, 3, b3);
	ck_assert_int_eq(st_quant_mxfp4_layout(&l, &b, &s, NULL, &e), ST_EFORMAT);
	/* Scale byte 255 is E8M0's NaN; 0 is 2^-127. */
	{
		unsigned char blk[16], sc[2] = {255, 0};
		float out[64];
		st_quant_mxfp4 one = {1, 2, 1};
		memset(blk, 0x22, sizeof blk); /* 1.0 in both nibbles */
		unsigned char blocks[32];
		memcpy(blocks, blk, 16);
		memcpy(blocks + 16, blk, 16);
		ck_assert_int_eq(st_quant_mxfp4_dequant(&one, ST_DTYPE_F32, out, blocks, sc, 0, 32), ST_OK);
		for (int k = 0; k < 32; k++) {
			ck_assert(isnan(out[2 * k]));
			ck_assert_float_eq(out[2 * k + 1], 0x1p-127f);
		}
		ck_assert_int_eq(st_quant_mxfp4_dequant(&one, ST_DTYPE_F32, out, blocks, sc, 0, 33), ST_EINVAL);
		ck_assert_int_eq(st_quant_mxfp4_dequant(&one, ST_DTYPE_U8, out, blocks, sc, 0, 1), ST_EINVAL);
	}
}
END_TEST

/* ---- FP8 quantization --------------------------------------------------------- */

START_TEST(test_quantize_cases)
{
	st_file *f = open_fixture("quantize.safetensors");
	size_t cases = 0;

	for (size_t m = 0; m < st_file_n_meta(f); m++) {
		const st_meta *meta = st_file_meta(f, m);
		char name[64];
		unsigned long long b0, b1;
		const void *xd, *wd, *sd;
		const st_tensor *x, *s;
		st_quant_fp8 l;

		if (meta->key[0] != 'q')
			continue;
		ck_assert_int_eq(sscanf(meta->value, "%llu %llu", &b0, &b1), 2);
		snprintf(name, sizeof name, "%s.x", meta->key);
		x = tensor(f, name, &xd);
		snprintf(name, sizeof name, "%s.w", meta->key);
		tensor(f, name, &wd);
		snprintf(name, sizeof name, "%s.s", meta->key);
		s = tensor(f, name, &sd);
		uint64_t ex = x->ndim == 3 ? x->shape[0] : 1;
		ck_assert_int_eq(st_quant_fp8_block(&l, ex, x->shape[x->ndim - 2], x->shape[x->ndim - 1], b0, b1),
		                 ST_OK);
		ck_assert_uint_eq(s->n_elements, ex * l.scale_rows * l.scale_cols);
		uint64_t rows = ex * l.rows, n = rows * l.cols, at;
		unsigned char *codes = xmalloc(n), *codes2 = xmalloc(n);
		float *scales = xmalloc(s->n_bytes), *scales2 = xmalloc(s->n_bytes), *back = xmalloc(n * 4),
		      *xf = xmalloc(n * 4);

		ck_assert_int_eq(st_quant_fp8_quantize(&l, codes, scales, x->dtype, xd, 0, rows), ST_OK);
		ck_assert_msg(memcmp(scales, sd, s->n_bytes) == 0, "%s: scales differ", meta->key);
		for (at = 0; at < n && codes[at] == ((const unsigned char *)wd)[at]; at++)
			;
		ck_assert_msg(at == n, "%s: code %" PRIu64 ": %#04x, expected %#04x", meta->key, at, codes[at],
		              ((const unsigned char *)wd)[at]);
		/* One block row at a time: the same. */
		const size_t xs = st_dtype_bits(x->dtype) / 8;
		for (uint64_t r0 = 0; r0 < rows;) {
			uint64_t i = r0 % l.rows, r1 = r0 + (l.rows - i < b0 ? l.rows - i : b0);
			uint64_t srow = r0 / l.rows * l.scale_rows + i / b0;
			ck_assert_int_eq(st_quant_fp8_quantize(&l, codes2 + r0 * l.cols, scales2 + srow * l.scale_cols,
			                                       x->dtype, (const unsigned char *)xd + r0 * l.cols * xs,
			                                       r0, r1),
			                 ST_OK);
			r0 = r1;
		}
		ck_assert_mem_eq(codes, codes2, n);
		ck_assert_mem_eq(scales, scales2, s->n_bytes);
		/* The scales alone: the reference's bits too. */
		memset(scales2, 0, s->n_bytes);
		ck_assert_int_eq(st_quant_fp8_scales(&l, scales2, x->dtype, xd, 0, rows), ST_OK);
		ck_assert_msg(memcmp(scales2, sd, s->n_bytes) == 0, "%s: scales alone differ", meta->key);
		/* Ranges that do not start or end a block row are refused. */
		if (l.rows > b0) {
			ck_assert_int_eq(st_quant_fp8_quantize(&l, codes2, scales2, x->dtype, xd, 1, rows), ST_EINVAL);
			ck_assert_int_eq(st_quant_fp8_quantize(&l, codes2, scales2, x->dtype, xd, 0, 1), ST_EINVAL);
		}
		/* Dequantized, every finite value is within E4M3's rounding of the input. */
		ck_assert_int_eq(st_quant_fp8_dequant(&l, ST_DTYPE_F32, back, codes, scales, 0, rows), ST_OK);
		ck_assert_int_eq(st_convert(ST_DTYPE_F32, xf, x->dtype, xd, n, NULL), ST_OK);
		for (uint64_t i = 0; i < n; i++) {
			uint64_t r = i / l.cols, c = i % l.cols;
			float sc = scales[(r / l.rows * l.scale_rows + r % l.rows / b0) * l.scale_cols + c / b1];
			if (!isfinite(xf[i])) {
				CHECK(isnan(back[i]), "%s: %" PRIu64 ": a non-finite input gave %a", meta->key, i,
				      (double)back[i]);
				continue;
			}
			double err = fabs((double)back[i] - (double)xf[i]);
			double bound = fabs((double)xf[i]) * 0x1p-4 + 0x1p-10 * (double)sc;
			CHECK(err <= bound * (1 + 0x1p-20), "%s: element %" PRIu64 ": %a -> %a (scale %a)",
			      meta->key, i, (double)xf[i], (double)back[i], (double)sc);
		}
		free(codes);
		free(codes2);
		free(scales);
		free(scales2);
		free(back);
		free(xf);
		cases++;
	}
	ck_assert_uint_eq(cases, 5);
	st_file_close(f);
}
END_TEST

START_TEST(test_quantize_bad_calls)
{
	st_quant_fp8 l;
	float x[4] = {1, 2, 3, 4}, s[4];
	unsigned char w[4];

	ck_assert_int_eq(st_quant_fp8_block(&l, 1, 2, 2, 0, 2), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_block(&l, 1, 2, 2, 2, ST_QUANT_MAX_BLOCK + 1), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_block(&l, 0, 2, 2, 2, 2), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_block(&l, UINT64_MAX, UINT64_MAX, 2, 2, 2), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_block(&l, 1, 2, 2, 2, 2), ST_OK);
	ck_assert_int_eq(st_quant_fp8_quantize(&l, w, s, ST_DTYPE_I32, x, 0, 2), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_quantize(&l, w, s, ST_DTYPE_F32, x, 0, 3), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_quantize(&l, w, s, ST_DTYPE_F32, x, 0, 2), ST_OK);
	ck_assert_float_eq(s[0], 4.0f / 448.0f);
	ck_assert_uint_eq(w[3], 0x7E); /* 4 / scale = 448 */
	ck_assert_int_eq(st_quant_fp8_quantize(&l, NULL, s, ST_DTYPE_F32, x, 0, 2), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_scales(&l, s, ST_DTYPE_I32, x, 0, 2), ST_EINVAL);
	ck_assert_int_eq(st_quant_fp8_scales(&l, s, ST_DTYPE_F32, x, 0, 3), ST_EINVAL);
	s[0] = 0;
	ck_assert_int_eq(st_quant_fp8_scales(&l, s, ST_DTYPE_F32, x, 0, 2), ST_OK);
	ck_assert_float_eq(s[0], 4.0f / 448.0f);
	/* A weight of no rows: nothing to do, no division by its rows. */
	ck_assert_int_eq(st_quant_fp8_block(&l, 1, 0, 2, 2, 2), ST_OK);
	ck_assert_int_eq(st_quant_fp8_quantize(&l, w, s, ST_DTYPE_F32, x, 0, 0), ST_OK);
	ck_assert_int_eq(st_quant_fp8_scales(&l, s, ST_DTYPE_F32, x, 0, 0), ST_OK);
	ck_assert_int_eq(st_quant_fp8_quantize(&l, w, s, ST_DTYPE_F32, x, 0, 1), ST_EINVAL);
}
END_TEST

START_TEST(test_f4_odd_count)
{
	/* F4 packs two elements a byte: an odd element count is no file. */
	static const char hdr[] = "{\"w\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}";
	unsigned char buf[8 + sizeof hdr + 2];
	uint64_t n = sizeof hdr - 1;
	st_file *f = NULL;
	st_error e;

	memcpy(buf, &n, 8);
	memcpy(buf + 8, hdr, n);
	memset(buf + 8 + n, 0, 2);
	ck_assert_int_eq(st_file_open_memory(&f, buf, 8 + n + 2, "odd.safetensors", 0, &e), ST_EFORMAT);
	ck_assert_msg(strstr(e.message, "'w'") != NULL, "%s", e.message);
	ck_assert_int_eq(st_convert(ST_DTYPE_F32, buf, ST_DTYPE_F4, buf, 3, NULL), ST_EINVAL);
}
END_TEST

static Suite *quant_suite(void)
{
	Suite *s = suite_create("quant");
	TCase *tc = tcase_create("fp8");

	tcase_add_test(tc, test_block_size);
	tcase_add_test(tc, test_config_block_size);
	tcase_add_test(tc, test_config_dequantized);
	tcase_add_test(tc, test_config_fp8);
	tcase_add_test(tc, test_fp8_cases);
	tcase_add_test(tc, test_fp8_environment);
	tcase_add_test(tc, test_fp8_mismatch);
	tcase_add_test(tc, test_fp8_bad_calls);
	suite_add_tcase(s, tc);
	tc = tcase_create("mxfp4");
	tcase_add_test(tc, test_mxfp4_cases);
	tcase_add_test(tc, test_mxfp4_errors);
	tcase_add_test(tc, test_f4_odd_count);
	suite_add_tcase(s, tc);
	tc = tcase_create("quantize");
	tcase_add_test(tc, test_quantize_cases);
	tcase_add_test(tc, test_quantize_bad_calls);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(quant_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
