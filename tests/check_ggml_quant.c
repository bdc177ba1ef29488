/*
 * check_ggml_quant.c - st_ggml_from_f32 for Q4_0, Q4_1, Q5_0, Q5_1 and
 * Q8_0, byte for byte against ggml's own quantizer: testdata/ggml_quant/
 * src.f32 holds rows of whole blocks (normal values, outliers, zero and
 * signed-zero blocks, equal values, negative and positive maxima, +a/-a
 * ties, values on the rounding steps, F16-subnormal scales, F32
 * subnormals, values whose range overflows, and last Inf and NaN
 * blocks), <type>.bin the bytes ggml_quantize_chunk (no importance
 * matrix: quantize_row_<type>_ref) gives for them on node-llama-cpp
 * 3.21.1's libggml-base.so, <type>.f32 ggml's to_float of those bytes
 * (testdata/ggml_quant/make_fixtures.py; cases.tsv names each case's
 * blocks). For NaN and Inf C leaves ggml's float-to-int8 cast undefined:
 * the bytes are those of ggml's x86-64 build, which libst gives everywhere.
 *
 * gguf-py's quants.quantize is not the reference: it agrees on every
 * finite case except signed zeros (ggml's d is -0 for Q4_0/Q5_0 and its
 * m the first zero's sign for Q4_1/Q5_1; gguf-py takes other signs), and
 * differs on NaN (gguf-py's argmax, max and min see NaN and make the
 * block NaN; ggml skips it and stores q = 0) and, for Q4_1 and Q5_1, on
 * blocks of +Inf only (ggml's min stays FLT_MAX, so d is Inf, not NaN).
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#include "tmpdir.h"

#define DIR ST_TESTDATA "/ggml_quant/"

static const char *const types[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"};
#define N_TYPES (int)(sizeof types / sizeof types[0])

struct fixture {
	unsigned type, bytes;
	float *src;
	unsigned char *want, *deq;
	uint64_t n, nb;
};

static void load(int i, struct fixture *fx)
{
	char path[512], lower[8];
	size_t src_len, want_len, deq_len, k = 0;
	unsigned block;
	for (; types[i][k]; k++)
		lower[k] = (char)tolower((unsigned char)types[i][k]);
	lower[k] = 0;
	ck_assert_int_eq(st_ggml_type_from_name(types[i], &fx->type), ST_OK);
	ck_assert_int_eq(st_ggml_type_block(fx->type, &block, &fx->bytes), ST_OK);
	ck_assert_uint_eq(block, 32);
	fx->src = read_file(DIR "src.f32", &src_len);
	snprintf(path, sizeof path, "%s%s.bin", DIR, lower);
	fx->want = read_file(path, &want_len);
	snprintf(path, sizeof path, "%s%s.f32", DIR, lower);
	fx->deq = read_file(path, &deq_len);
	fx->n = src_len / 4;
	fx->nb = fx->n / 32;
	ck_assert_uint_eq(src_len, fx->nb * 32 * 4);
	ck_assert_uint_eq(want_len, fx->nb * fx->bytes);
	ck_assert_uint_eq(deq_len, src_len);
}

static void unload(struct fixture *fx)
{
	free(fx->src);
	free(fx->want);
	free(fx->deq);
}

/* The case of cases.tsv block b belongs to, for the failure message. */
static const char *case_of(uint64_t b, char *name, size_t size)
{
	size_t len;
	char *text = read_file(DIR "cases.tsv", &len);
	char *line = strtok(text, "\n");
	snprintf(name, size, "?");
	for (; line; line = strtok(NULL, "\n")) {
		char c[64];
		unsigned long long first, count;
		if (line[0] != '#' && sscanf(line, "%63s %llu %llu", c, &first, &count) == 3 &&
		    b >= first && b - first < count)
			snprintf(name, size, "%s", c);
	}
	free(text);
	return name;
}

static void expect_block(const struct fixture *fx, const unsigned char *got, uint64_t b)
{
	const unsigned char *w = fx->want + b * fx->bytes;
	for (unsigned k = 0; k < fx->bytes; k++)
		if (got[k] != w[k]) {
			char c[64];
			ck_abort_msg("%s block %llu (%s) byte %u: 0x%02x, ggml 0x%02x",
			             st_ggml_type_name(fx->type), (unsigned long long)b,
			             case_of(b, c, sizeof c), k, got[k], w[k]);
		}
}

/* The whole fixture in one call: ggml's bytes, block for block. */
START_TEST(test_encodes_as_ggml)
{
	struct fixture fx;
	load(_i, &fx);
	unsigned char *got = malloc(fx.nb * fx.bytes);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(st_ggml_from_f32(fx.type, fx.src, got, fx.n), ST_OK);
	for (uint64_t b = 0; b < fx.nb; b++)
		expect_block(&fx, got + b * fx.bytes, b);
	free(got);
	unload(&fx);
}
END_TEST

/*
 * One block at a time into an unaligned output: each block depends on
 * its own 32 floats only, and the bytes may sit at any address.
 */
START_TEST(test_encodes_one_block_at_a_time_unaligned)
{
	struct fixture fx;
	load(_i, &fx);
	unsigned char out[34 + 1];
	for (uint64_t b = 0; b < fx.nb; b++) {
		ck_assert_int_eq(st_ggml_from_f32(fx.type, fx.src + b * 32, out + 1, 32), ST_OK);
		expect_block(&fx, out + 1, b);
	}
	unload(&fx);
}
END_TEST

static int is_nan_bits(uint32_t u)
{
	return (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu);
}

/* st_ggml_to_f32 of libst's bytes is ggml's to_float of ggml's bytes. */
START_TEST(test_round_trip_is_ggml_dequantization)
{
	struct fixture fx;
	load(_i, &fx);
	unsigned char *q = malloc(fx.nb * fx.bytes);
	float *back = malloc(fx.n * sizeof *back);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(st_ggml_from_f32(fx.type, fx.src, q, fx.n), ST_OK);
	ck_assert_int_eq(st_ggml_to_f32(fx.type, q, back, fx.n), ST_OK);
	for (uint64_t k = 0; k < fx.n; k++) {
		uint32_t g, w;
		memcpy(&g, &back[k], 4);
		memcpy(&w, fx.deq + 4 * k, 4);
		if (is_nan_bits(g) && is_nan_bits(w))
			continue;
		ck_assert_msg(g == w, "%s element %llu: 0x%08x, ggml 0x%08x", types[_i],
		              (unsigned long long)k, g, w);
	}
	free(q);
	free(back);
	unload(&fx);
}
END_TEST

/* Not whole blocks: ST_EINVAL and nothing written; 0 floats: ST_OK. */
START_TEST(test_refuses_partial_blocks)
{
	unsigned type;
	ck_assert_int_eq(st_ggml_type_from_name(types[_i], &type), ST_OK);
	float x[33] = {1.0f};
	unsigned char out[2 * 34];
	memset(out, 0xa5, sizeof out);
	ck_assert_int_eq(st_ggml_from_f32(type, x, out, 33), ST_EINVAL);
	ck_assert_int_eq(st_ggml_from_f32(type, x, out, 16), ST_EINVAL);
	ck_assert_int_eq(st_ggml_from_f32(type, NULL, NULL, 0), ST_OK);
	for (size_t k = 0; k < sizeof out; k++)
		ck_assert_uint_eq(out[k], 0xa5);
}
END_TEST

/* The types ggml has no single reference quantizer for stay refused. */
START_TEST(test_other_types_unsupported)
{
	const unsigned other[] = {ST_GGML_Q8_1,   ST_GGML_Q4_K,  ST_GGML_Q6_K,
	                          ST_GGML_IQ4_NL, ST_GGML_MXFP4, ST_GGML_I8};
	float x[256] = {0};
	unsigned char out[512];
	for (size_t k = 0; k < sizeof other / sizeof other[0]; k++)
		ck_assert_int_eq(st_ggml_from_f32(other[k], x, out, 256), ST_EUNSUPPORTED);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ggml_quant");
	TCase *tc = tcase_create("core");
	tcase_add_loop_test(tc, test_encodes_as_ggml, 0, N_TYPES);
	tcase_add_loop_test(tc, test_encodes_one_block_at_a_time_unaligned, 0, N_TYPES);
	tcase_add_loop_test(tc, test_round_trip_is_ggml_dequantization, 0, N_TYPES);
	tcase_add_loop_test(tc, test_refuses_partial_blocks, 0, N_TYPES);
	tcase_add_test(tc, test_other_types_unsupported);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
