/*
 * check_common_dequant.c - unit tests for tools/common/dequant.c: pairing
 * scaled weights with their scales by name, and dequantizing any element
 * range (as the pipeline cuts them, across row boundaries) to the same
 * bytes as libst's whole-tensor dequantization, which check_quant tests
 * against the numpy reference.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dequant.h"

static char g_path[64];

/* A file of named tensors with fixed bytes; returns the open checkpoint. */
static st_checkpoint *make(const char *const *names, const st_dtype *types, const unsigned *ndims,
                           const uint64_t (*shapes)[4], size_t n)
{
	st_writer *w;
	st_error e;
	snprintf(g_path, sizeof g_path, "/tmp/check_dequant.%d.safetensors", (int)getpid());
	ck_assert_int_eq(st_writer_new(&w, &e), ST_OK);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(st_writer_add(w, names[i], strlen(names[i]), types[i], ndims[i], shapes[i], &e),
		                 ST_OK);
	ck_assert_int_eq(st_writer_open(w, g_path, &e), ST_OK);
	for (size_t i = 0; i < st_writer_n_tensors(w); i++) {
		const st_tensor *t = st_writer_tensor(w, i);
		unsigned char *b = malloc(t->n_bytes + 1);
		ck_assert(b != NULL);
		for (uint64_t k = 0; k < t->n_bytes; k++)
			b[k] = (unsigned char)(k * 37 + 11);
		if (t->dtype == ST_DTYPE_F32) /* sane scales: 0.5 .. 4 */
			for (uint64_t k = 0; k < t->n_elements; k++) {
				float v = 0.5f + (float)(k % 8) * 0.5f;
				memcpy(b + 4 * k, &v, 4);
			}
		ck_assert_int_eq(st_writer_write(w, b, t->n_bytes, &e), ST_OK);
		free(b);
	}
	ck_assert_int_eq(st_writer_finish(w, &e), ST_OK);
	st_writer_free(w);
	st_checkpoint *c;
	ck_assert_msg(st_checkpoint_open(&c, g_path, 0, &e) == ST_OK, "%s", e.message);
	return c;
}

START_TEST(test_ranges)
{
	static const char *const names[] = {"a.weight", "a.weight_scale_inv", "e_blocks", "e_scales", "n.weight"};
	static const st_dtype types[] = {ST_DTYPE_F8_E4M3, ST_DTYPE_F32, ST_DTYPE_U8, ST_DTYPE_U8, ST_DTYPE_BF16};
	static const unsigned nd[] = {2, 2, 4, 3, 1};
	static const uint64_t shapes[][4] = {{13, 29}, {5, 4}, {2, 3, 2, 16}, {2, 3, 2}, {7}};
	st_checkpoint *c = make(names, types, nd, shapes, 5);
	dq_plan p;
	st_error e;

	ck_assert_msg(dq_plan_build(&p, c, 3, 8, &e) == 0, "%s", e.message);
	ck_assert_uint_eq(p.n_fp8, 1);
	ck_assert_uint_eq(p.n_mxfp4, 1);
	ck_assert_uint_eq(p.n_scales, 2);
	for (size_t i = 0; i < p.n; i++) {
		const dq_tensor *t = &p.t[i];
		const st_tensor *st = st_checkpoint_tensor(c, i, NULL);
		if (t->role != DQ_FP8 && t->role != DQ_MXFP4) {
			ck_assert(t->role == DQ_SCALE || !strcmp(st->name, "n.weight"));
			continue;
		}
		unsigned char *in = malloc(st->n_bytes + 1), *ref = malloc(t->n_out * 2 + 1),
		              *got = malloc(t->n_out * 2 + 1), *scratch = malloc(DQ_SCRATCH(p.max_row));
		ck_assert(in && ref && got && scratch);
		ck_assert_int_eq(st_checkpoint_read(c, i, 0, in, st->n_bytes, &e), ST_OK);
		uint64_t rows = t->n_out / t->row_len;
		if (t->role == DQ_FP8)
			ck_assert_int_eq(st_quant_fp8_dequant(&t->fp8, ST_DTYPE_BF16, ref, in, t->scale_data, 0, rows),
			                 ST_OK);
		else
			ck_assert_int_eq(st_quant_mxfp4_dequant(&t->mx, ST_DTYPE_BF16, ref, t->data, t->scale_data, 0,
			                                        rows),
			                 ST_OK);
		/* Every cut into two or three pieces of steps 1..row+2. */
		for (uint64_t step = 1; step <= t->row_len + 2; step++) {
			memset(got, 0xA5, t->n_out * 2 + 1);
			for (uint64_t f = 0; f < t->n_out; f += step) {
				uint64_t k = t->n_out - f < step ? t->n_out - f : step;
				dq_range(t, ST_DTYPE_BF16, got + f * 2, t->role == DQ_FP8 ? in + f : NULL, f, k, scratch);
			}
			ck_assert_msg(memcmp(got, ref, t->n_out * 2) == 0, "%s: pieces of %llu differ", st->name,
			              (unsigned long long)step);
			ck_assert_uint_eq(got[t->n_out * 2], 0xA5);
		}
		free(in);
		free(ref);
		free(got);
		free(scratch);
	}
	long eb = st_checkpoint_find(c, "e_blocks", 8);
	ck_assert_int_ge(eb, 0);
	ck_assert_str_eq(p.t[eb].out_name, "e");
	ck_assert_uint_eq(p.t[eb].out_shape[0], 2);
	ck_assert_uint_eq(p.t[eb].out_shape[1], 64);
	ck_assert_uint_eq(p.t[eb].out_shape[2], 3);
	char line[256];
	dq_plan_describe(&p, line, sizeof line);
	ck_assert_str_eq(line, "dequantized 1 FP8 weight (blocks 3x8), 1 MXFP4 weight; 2 scale tensors "
	                       "(92 bytes) folded in");
	dq_plan_free(&p);
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

START_TEST(test_mismatches)
{
	static const char *const n1[] = {"a.weight", "b.weight", "b.weight_scale"};
	static const st_dtype t1[] = {ST_DTYPE_F8_E4M3, ST_DTYPE_F8_E4M3, ST_DTYPE_F32};
	static const unsigned d1[] = {2, 2, 0};
	static const uint64_t s1[][4] = {{2, 2}, {2, 2}, {0}};
	static const char *const n2[] = {"x.weight_scale_inv"};
	static const st_dtype t2[] = {ST_DTYPE_F32};
	static const unsigned d2[] = {0};
	static const uint64_t s2[][4] = {{0}};
	static const char *const n3[] = {"a.weight", "b.weight"};
	dq_plan p;
	st_error e;

	st_checkpoint *c = make(n1, t1, d1, s1, 3);
	ck_assert_int_eq(dq_plan_build(&p, c, 128, 128, &e), -1);
	ck_assert_msg(strstr(e.message, "weight 'a.weight' has no scale 'a.weight_scale_inv'"), "%s", e.message);
	dq_plan_free(&p);
	st_checkpoint_close(c);
	c = make(n2, t2, d2, s2, 1);
	ck_assert_int_eq(dq_plan_build(&p, c, 128, 128, &e), -1);
	ck_assert_msg(strstr(e.message, "scale 'x.weight_scale_inv' has no weight 'x.weight'"), "%s", e.message);
	dq_plan_free(&p);
	st_checkpoint_close(c);
	/* F8 weights and no scales anywhere: plain tensors, nothing paired. */
	c = make(n3, t1, d1, s1, 2);
	ck_assert_int_eq(dq_plan_build(&p, c, 128, 128, &e), 0);
	ck_assert_uint_eq(p.n_fp8 + p.n_mxfp4 + p.n_scales, 0);
	dq_plan_free(&p);
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dequant");
	TCase *tc = tcase_create("dequant");
	tcase_add_test(tc, test_ranges);
	tcase_add_test(tc, test_mismatches);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
