/*
 * check_ggml_decode.c - st_ggml_to_f32 on every quantized ggml type, bit
 * for bit against ggml's own to_float: testdata/ggml/<type>.bin holds
 * whole blocks (ggml's quantizer on random floats, random bytes with
 * finite scales, zero / negative / subnormal / infinite / NaN scales,
 * every MXFP4 and NVFP4 scale byte) and <type>.f32 the floats ggml decodes
 * them to (testdata/ggml/make_fixtures.py, on node-llama-cpp 3.21.1's
 * libggml-base.so; Q8_1 and Q8_K, which ggml never decodes, from numpy).
 * A NaN matches any NaN (ggml gives the scale's NaN quietened, or x86's
 * default NaN for Inf * 0); every other float must have the same bits.
 */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#include "tmpdir.h"

#define DIR ST_TESTDATA "/ggml/"

static const char *const types[] = {
	"Q4_0",    "Q4_1",   "Q5_0",  "Q5_1",    "Q8_0",  "Q8_1",  "Q2_K",  "Q3_K",   "Q4_K",
	"Q5_K",    "Q6_K",   "Q8_K",  "TQ1_0",   "TQ2_0", "MXFP4", "NVFP4", "Q1_0",   "Q2_0",
	"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL", "IQ4_XS",
};
#define N_TYPES (int)(sizeof types / sizeof types[0])

/* A whole fixture file, malloc'd; its size in *len. */
static unsigned char *slurp(const char *name, const char *ext, size_t *len)
{
	char path[512], lower[32];
	size_t i = 0;
	for (; name[i] && i + 1 < sizeof lower; i++)
		lower[i] = (char)tolower((unsigned char)name[i]);
	lower[i] = 0;
	snprintf(path, sizeof path, "%s%s.%s", DIR, lower, ext);
	return read_file(path, len);
}

static uint32_t bits_at(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int is_nan_bits(uint32_t u)
{
	return (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu);
}

struct fixture {
	unsigned type, block, bytes;
	unsigned char *raw, *want;
	size_t raw_len;
	uint64_t n;
};

static void load(int i, struct fixture *fx)
{
	size_t want_len;
	ck_assert_int_eq(st_ggml_type_from_name(types[i], &fx->type), ST_OK);
	ck_assert_int_eq(st_ggml_type_block(fx->type, &fx->block, &fx->bytes), ST_OK);
	fx->raw = slurp(types[i], "bin", &fx->raw_len);
	fx->want = slurp(types[i], "f32", &want_len);
	ck_assert_uint_eq(fx->raw_len % fx->bytes, 0);
	fx->n = fx->raw_len / fx->bytes * fx->block;
	ck_assert_uint_eq(want_len, fx->n * 4);
}

static void expect_bits(const struct fixture *fx, const float *got, uint64_t from, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		uint32_t g, w = bits_at(fx->want + 4 * (from + k));
		memcpy(&g, &got[k], 4);
		if (is_nan_bits(w) && is_nan_bits(g))
			continue;
		ck_assert_msg(g == w, "%s element %llu (block %llu): 0x%08x, ggml 0x%08x",
		              st_ggml_type_name(fx->type), (unsigned long long)(from + k),
		              (unsigned long long)((from + k) / fx->block), g, w);
	}
}

/* The whole fixture in one call: every float's bits are ggml's. */
START_TEST(test_decodes_as_ggml_to_float)
{
	struct fixture fx;
	load(_i, &fx);
	float *got = malloc(fx.n * sizeof *got);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(st_ggml_to_f32(fx.type, fx.raw, got, fx.n), ST_OK);
	expect_bits(&fx, got, 0, fx.n);
	free(got);
	free(fx.raw);
	free(fx.want);
}
END_TEST

/*
 * Block by block from an unaligned copy: a decoder reads only its own
 * block's bytes, at any alignment, and streams (no state across calls).
 */
START_TEST(test_decodes_one_block_at_a_time_unaligned)
{
	struct fixture fx;
	load(_i, &fx);
	unsigned char *copy = malloc(fx.bytes + 1);
	float *got = malloc(fx.block * sizeof *got);
	ck_assert_ptr_nonnull(copy);
	ck_assert_ptr_nonnull(got);
	for (size_t b = 0; b < fx.raw_len / fx.bytes; b++) {
		memcpy(copy + 1, fx.raw + b * fx.bytes, fx.bytes);
		ck_assert_int_eq(st_ggml_to_f32(fx.type, copy + 1, got, fx.block), ST_OK);
		expect_bits(&fx, got, b * fx.block, fx.block);
	}
	free(copy);
	free(got);
	free(fx.raw);
	free(fx.want);
}
END_TEST

/* A count that is not whole blocks is refused, and nothing is written. */
START_TEST(test_refuses_partial_blocks)
{
	struct fixture fx;
	load(_i, &fx);
	float out[2] = {1.0f, 2.0f};
	ck_assert_int_eq(st_ggml_to_f32(fx.type, fx.raw, out, 1), ST_EINVAL);
	ck_assert(out[0] == 1.0f && out[1] == 2.0f);
	ck_assert_int_eq(st_ggml_to_f32(fx.type, fx.raw, out, 0), ST_OK);
	free(fx.raw);
	free(fx.want);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ggml_decode");
	TCase *tc = tcase_create("core");
	tcase_add_loop_test(tc, test_decodes_as_ggml_to_float, 0, N_TYPES);
	tcase_add_loop_test(tc, test_decodes_one_block_at_a_time_unaligned, 0, N_TYPES);
	tcase_add_loop_test(tc, test_refuses_partial_blocks, 0, N_TYPES);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
