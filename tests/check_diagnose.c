/*
 * check_diagnose.c - st/diagnose.h (libst/diagnose.c): each trap planted by
 * hand in a small tensor, and the diagnosis it must get. Expected values
 * are written out here (bit patterns computed by hand from the IEEE
 * layouts), never produced by the code under test.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

static st_diagnose_tensor f32(const float *v, unsigned ndim,
                              const uint64_t *shape, uint64_t n)
{
	return (st_diagnose_tensor){ST_DTYPE_F32, ndim, shape, n, v};
}

START_TEST(square_untransposed_is_named)
{
	/* A = [[1,2,3],[4,5,6],[7,8,10]], B = A^T. */
	static const float a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10};
	static const float b[9] = {1, 4, 7, 2, 5, 8, 3, 6, 10};
	uint64_t shape[2] = {3, 3};
	st_diagnose_tensor ta = f32(a, 2, shape, 9), tb = f32(b, 2, shape, 9);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_TRANSPOSED);
	ck_assert_int_eq(r.exact, 1);
	char buf[256];
	ck_assert_ptr_nonnull(strstr(st_diagnose_describe(&r, buf, sizeof buf),
	                             "B is A transposed (exactly)"));
}
END_TEST

START_TEST(transpose_within_tolerance)
{
	static const float a[4] = {1, 2, 3, 4};
	static const float b[4] = {1.000001f, 3, 2, 4};
	uint64_t shape[2] = {2, 2};
	st_diagnose_tensor ta = f32(a, 2, shape, 4), tb = f32(b, 2, shape, 4);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 1e-5, 1e-5, &r),
	                 ST_DIAGNOSE_TRANSPOSED);
	ck_assert_int_eq(r.exact, 0);
	/* Without tolerance, nothing fits. */
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_NONE);
}
END_TEST

START_TEST(large_square_transpose)
{
	/* 512 x 512, values i * 512 + j + 1: distinct, exact in F32. */
	enum { M = 512 };
	float *a = malloc(sizeof(float) * M * M), *b = malloc(sizeof(float) * M * M);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < M; j++) {
			a[i * M + j] = (float)(i * M + j + 1);
			b[j * M + i] = (float)(i * M + j + 1);
		}
	uint64_t shape[2] = {M, M};
	st_diagnose_tensor ta = f32(a, 2, shape, M * M), tb = f32(b, 2, shape, M * M);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_TRANSPOSED);
	/* One element off: no longer exactly the transpose, and nothing else. */
	b[M * 100 + 7] += 1000;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_NONE);
	free(a);
	free(b);
}
END_TEST

START_TEST(rectangular_is_not_transposed)
{
	/* [2, 3] cannot be a transpose of a [2, 3]: no diagnosis. */
	static const float a[6] = {1, 2, 3, 4, 5, 6};
	static const float b[6] = {1, 4, 2, 5, 3, 6};
	uint64_t shape[2] = {2, 3};
	st_diagnose_tensor ta = f32(a, 2, shape, 6), tb = f32(b, 2, shape, 6);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_NONE);
}
END_TEST

START_TEST(qkv_thirds_swapped)
{
	/* A [2, 6] as [Q Q K K V V] per row; B has K and Q swapped. */
	static const float a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	static const float b[12] = {3, 4, 1, 2, 5, 6, 9, 10, 7, 8, 11, 12};
	uint64_t shape[2] = {2, 6};
	st_diagnose_tensor ta = f32(a, 2, shape, 12), tb = f32(b, 2, shape, 12);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_PERMUTED);
	ck_assert_int_eq(r.n_blocks, 3);
	ck_assert_int_eq(r.block_width, 2);
	ck_assert_int_eq(r.perm[0], 1);
	ck_assert_int_eq(r.perm[1], 0);
	ck_assert_int_eq(r.perm[2], 2);
	char buf[256];
	st_diagnose_describe(&r, buf, sizeof buf);
	ck_assert_str_eq(buf, "B is A with its 3 column blocks of 2 in the order "
	                 "2,1,3 (exactly): Q, K, V thirds packed as K, Q, V?");
}
END_TEST

START_TEST(qkv_bias_swapped)
{
	/* The 1-D bias [6] of the same layer. */
	static const float a[6] = {0.5f, -1, 2, 0.25f, 8, 9};
	static const float b[6] = {2, 0.25f, 0.5f, -1, 8, 9};
	uint64_t shape[1] = {6};
	st_diagnose_tensor ta = f32(a, 1, shape, 6), tb = f32(b, 1, shape, 6);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_PERMUTED);
	ck_assert_int_eq(r.n_blocks, 3);
	ck_assert_int_eq(r.perm[0], 1);
	ck_assert_int_eq(r.perm[1], 0);
}
END_TEST

START_TEST(heads_permuted)
{
	/*
	 * [1, 12]: Q, K, V of 4 columns, each 2 heads of 2. B swaps Q's two
	 * heads only: no third moved, so 3 blocks do not explain it; 6 do.
	 */
	static const float a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	static const float b[12] = {3, 4, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12};
	uint64_t shape[2] = {1, 12};
	st_diagnose_tensor ta = f32(a, 2, shape, 12), tb = f32(b, 2, shape, 12);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_PERMUTED);
	ck_assert_int_eq(r.n_blocks, 6);
	static const int want[6] = {1, 0, 2, 3, 4, 5};
	for (int j = 0; j < 6; j++)
		ck_assert_int_eq(r.perm[j], want[j]);
	char buf[256];
	ck_assert_ptr_nonnull(strstr(st_diagnose_describe(&r, buf, sizeof buf),
	                             "order 2,1,3,4,5,6 (exactly): heads"));
}
END_TEST

START_TEST(many_blocks_described_by_moves)
{
	/* 36 blocks of 1 (GPT-2 small's 3 x 12 heads), blocks 1 and 2 swapped. */
	float a[36], b[36];
	for (int i = 0; i < 36; i++)
		a[i] = b[i] = (float)(i + 1);
	b[0] = 2;
	b[1] = 1;
	uint64_t shape[1] = {36};
	st_diagnose_tensor ta = f32(a, 1, shape, 36), tb = f32(b, 1, shape, 36);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_PERMUTED);
	/* 2 blocks of 18 cannot do it; 3 cannot; ...; 36 of 1 can. */
	ck_assert_int_eq(r.n_blocks, 36);
	char buf[256];
	st_diagnose_describe(&r, buf, sizeof buf);
	ck_assert_str_eq(buf, "B is A with its 36 column blocks of 1 in the order "
	                 "of A's, but 1 from 2, 2 from 1 (exactly): heads of a "
	                 "packed Q, K, V reordered?");
}
END_TEST

START_TEST(scaled_by_constant)
{
	static const float a[4] = {1, -2, 0.75f, 3};
	static const float b[4] = {0.5f, -1, 0.375f, 1.5f};
	uint64_t shape[1] = {4};
	st_diagnose_tensor ta = f32(a, 1, shape, 4), tb = f32(b, 1, shape, 4);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_SCALED);
	ck_assert(r.scale == 0.5);
	ck_assert_int_eq(r.exact, 1);
	char buf[256];
	ck_assert_str_eq(st_diagnose_describe(&r, buf, sizeof buf),
	                 "B is A scaled by 0.5 (exactly)");
}
END_TEST

START_TEST(scaled_by_sqrt_head_size)
{
	/* 1/sqrt(64) = 0.125 applied twice, say: B = A / 8, within 1e-6 noise. */
	static const float a[4] = {8, 16, -24, 4};
	static const float b[4] = {1.0000001f, 2, -3, 0.5f};
	uint64_t shape[1] = {4};
	st_diagnose_tensor ta = f32(a, 1, shape, 4), tb = f32(b, 1, shape, 4);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 1.3e-6, 1e-5, &r),
	                 ST_DIAGNOSE_SCALED);
	ck_assert(fabs(r.scale - 0.125) < 1e-7);
	ck_assert_int_eq(r.exact, 0);
}
END_TEST

START_TEST(sign_flipped)
{
	static const float a[3] = {1, -2, 0.5f};
	static const float b[3] = {-1, 2, -0.5f};
	uint64_t shape[1] = {3};
	st_diagnose_tensor ta = f32(a, 1, shape, 3), tb = f32(b, 1, shape, 3);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_NEGATED);
	char buf[256];
	ck_assert_str_eq(st_diagnose_describe(&r, buf, sizeof buf),
	                 "B is A with the sign flipped (exactly)");
}
END_TEST

START_TEST(bf16_bytes_labelled_f16)
{
	/*
	 * A F32 {1.5, -2, 100, 1/3}; B is labelled F16 but holds the BF16
	 * patterns of A: 1.5 = 0x3FC0, -2 = 0xC000, 100 = 0x42C8, and 1/3
	 * (F32 0x3EAAAAAB) rounds to 0x3EAB.
	 */
	static const float a[4] = {1.5f, -2, 100, 1.0f / 3};
	static const uint16_t b[4] = {0x3FC0, 0xC000, 0x42C8, 0x3EAB};
	uint64_t shape[1] = {4};
	st_diagnose_tensor ta = f32(a, 1, shape, 4);
	st_diagnose_tensor tb = {ST_DTYPE_F16, 1, shape, 4, b};
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 1e-3, 1e-5, &r),
	                 ST_DIAGNOSE_REINTERPRETED);
	ck_assert_int_eq(r.read_as, ST_DTYPE_BF16);
	ck_assert_int_eq(r.exact, 1);
	char buf[256];
	ck_assert_str_eq(st_diagnose_describe(&r, buf, sizeof buf),
	                 "B's bytes are A rounded to BF16 (exactly), read as F16: "
	                 "BF16 mislabelled F16");
}
END_TEST

START_TEST(f16_bytes_labelled_bf16)
{
	/* A F16 {1, 0.5, -3}: 0x3C00, 0x3800, 0xC200; B the same bytes as BF16. */
	static const uint16_t bits[3] = {0x3C00, 0x3800, 0xC200};
	uint64_t shape[1] = {3};
	st_diagnose_tensor ta = {ST_DTYPE_F16, 1, shape, 3, bits};
	st_diagnose_tensor tb = {ST_DTYPE_BF16, 1, shape, 3, bits};
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 1.6e-2, 1e-5, &r),
	                 ST_DIAGNOSE_REINTERPRETED);
	ck_assert_int_eq(r.read_as, ST_DTYPE_F16);
	ck_assert_int_eq(r.b_dtype, ST_DTYPE_BF16);
}
END_TEST

START_TEST(within_tolerance_is_not_a_trap)
{
	static const float a[3] = {1, 2, 3};
	static const float b[3] = {1, 2, 3.000001f};
	uint64_t shape[1] = {3};
	st_diagnose_tensor ta = f32(a, 1, shape, 3), tb = f32(b, 1, shape, 3);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 1.3e-6, 1e-5, &r), ST_DIAGNOSE_NONE);
	char buf[8] = "x";
	ck_assert_str_eq(st_diagnose_describe(&r, buf, sizeof buf), "");
}
END_TEST

START_TEST(unrelated_is_none)
{
	static const float a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	static const float b[9] = {9, 1, 4, 4, 0, -6, 2, 8, 1};
	uint64_t shape[2] = {3, 3};
	st_diagnose_tensor ta = f32(a, 2, shape, 9), tb = f32(b, 2, shape, 9);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 1.3e-6, 1e-5, &r), ST_DIAGNOSE_NONE);
}
END_TEST

START_TEST(nan_matches_only_nan)
{
	static const float a[3] = {1, NAN, 3};
	static const float b[3] = {-1, NAN, -3};
	static const float c[3] = {-1, 0, -3};
	uint64_t shape[1] = {3};
	st_diagnose_tensor ta = f32(a, 1, shape, 3), tb = f32(b, 1, shape, 3);
	st_diagnose_tensor tc = f32(c, 1, shape, 3);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_NEGATED);
	ck_assert_int_eq(st_diagnose_pair(&ta, &tc, 0, 0, &r), ST_DIAGNOSE_NONE);
}
END_TEST

/*
 * An infinity matches only the same infinity: B = -A but for one element
 * where B holds +Inf is not "negated", however loose the tolerance
 * (atol + rtol * |Inf| would let it through); B = -A with A's infinity
 * negated too is, exactly.
 */
START_TEST(infinity_matches_only_itself)
{
	static const float a[4] = {1, -2, 3, 5};
	static const float b[4] = {-1, 2, -3, INFINITY};
	static const float c[4] = {1, -2, INFINITY, 5};
	static const float d[4] = {-1, 2, -INFINITY, -5};
	uint64_t shape[1] = {4};
	st_diagnose_tensor ta = f32(a, 1, shape, 4), tb = f32(b, 1, shape, 4);
	st_diagnose_tensor tc = f32(c, 1, shape, 4), td = f32(d, 1, shape, 4);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0.5, 0.5, &r), ST_DIAGNOSE_NONE);
	ck_assert_int_eq(st_diagnose_pair(&tc, &td, 0.5, 0.5, &r), ST_DIAGNOSE_NEGATED);
	ck_assert_int_eq(r.exact, 1);
}
END_TEST

START_TEST(short_describe_buffer)
{
	st_diagnose_result r = {.kind = ST_DIAGNOSE_TRANSPOSED, .exact = 1};
	char buf[10];
	ck_assert_str_eq(st_diagnose_describe(&r, buf, sizeof buf), "B is A tr");
}
END_TEST

START_TEST(dtype_tally_lines)
{
	st_diagnose_dtype_tally t = {0};
	for (int i = 0; i < 52; i++)
		st_diagnose_dtype_add(&t, ST_DTYPE_F32, ST_DTYPE_BF16, 1, 1);
	st_diagnose_dtype_add(&t, ST_DTYPE_F32, ST_DTYPE_F16, 1, 1);
	st_diagnose_dtype_add(&t, ST_DTYPE_F32, ST_DTYPE_F16, 0, 1);
	st_diagnose_dtype_add(&t, ST_DTYPE_F32, ST_DTYPE_F16, 0, 0);
	st_diagnose_dtype_add(&t, ST_DTYPE_BF16, ST_DTYPE_F32, 0, 1);
	ck_assert_uint_eq(t.n, 3);
	char buf[128];
	ck_assert_str_eq(st_diagnose_dtype_line(&t, 0, buf, sizeof buf),
	                 "52 tensors F32 \xe2\x86\x92 BF16, all exactly A rounded");
	ck_assert_str_eq(st_diagnose_dtype_line(&t, 1, buf, sizeof buf),
	                 "3 tensors F32 \xe2\x86\x92 F16: 1 exactly A rounded, "
	                 "1 within tolerance, 1 outside tolerance");
	ck_assert_str_eq(st_diagnose_dtype_line(&t, 2, buf, sizeof buf),
	                 "1 tensor BF16 \xe2\x86\x92 F32, within tolerance");
	st_diagnose_dtype_add(&t, ST_DTYPE_BF16, ST_DTYPE_F64, 1, 1);
	ck_assert_str_eq(st_diagnose_dtype_line(&t, 3, buf, sizeof buf),
	                 "1 tensor BF16 \xe2\x86\x92 F64, A exactly B rounded");
}
END_TEST

/*
 * The tally holds ST_DIAGNOSE_MAX_DTYPE_PAIRS distinct pairs; a pair past
 * them is not counted, and the pairs it holds go on counting.
 */
START_TEST(dtype_tally_ignores_pairs_past_its_capacity)
{
	st_diagnose_dtype_tally t = {0};
	int added = 0;
	for (int a = 0; a < ST_DTYPE_COUNT && added <= ST_DIAGNOSE_MAX_DTYPE_PAIRS; a++)
		for (int b = 0; b < ST_DTYPE_COUNT && added <= ST_DIAGNOSE_MAX_DTYPE_PAIRS;
		     b++, added++)
			st_diagnose_dtype_add(&t, (st_dtype)a, (st_dtype)b, 0, 0);
	ck_assert_int_eq(added, ST_DIAGNOSE_MAX_DTYPE_PAIRS + 1);
	ck_assert_uint_eq(t.n, ST_DIAGNOSE_MAX_DTYPE_PAIRS);
	for (size_t i = 0; i < t.n; i++)
		ck_assert_uint_eq(t.pair[i].tensors, 1);
	/* The first pair is still there and counts on. */
	st_diagnose_dtype_add(&t, (st_dtype)0, (st_dtype)0, 1, 1);
	ck_assert_uint_eq(t.n, ST_DIAGNOSE_MAX_DTYPE_PAIRS);
	ck_assert_uint_eq(t.pair[0].tensors, 2);
	ck_assert_uint_eq(t.pair[0].rounded, 1);
	ck_assert_uint_eq(t.pair[0].differ, 1);
}
END_TEST

START_TEST(checkpoint_pair_diagnosed)
{
	/* testdata/trace/trap-cproj holds tiny-f32 with h.1's c_proj transposed. */
	st_checkpoint *a, *b;
	st_error e;
	ck_assert(st_checkpoint_open(&a, ST_TESTDATA "/gpt2/tiny-f32", 0, &e) ==
	          ST_OK);
	ck_assert(st_checkpoint_open(&b, ST_TESTDATA "/trace/trap-cproj", 0, &e) ==
	          ST_OK);
	long ia = st_checkpoint_find(a, "h.1.attn.c_proj.weight", 22);
	long ib = st_checkpoint_find(b, "h.1.attn.c_proj.weight", 22);
	ck_assert(ia >= 0 && ib >= 0);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_checkpoints(a, (size_t)ia, b, (size_t)ib, 0, 0,
	                                         &r, &e), ST_OK);
	ck_assert_int_eq(r.kind, ST_DIAGNOSE_TRANSPOSED);
	st_checkpoint_close(a);
	st_checkpoint_close(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diagnose");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, square_untransposed_is_named);
	tcase_add_test(tc, transpose_within_tolerance);
	tcase_add_test(tc, large_square_transpose);
	tcase_add_test(tc, rectangular_is_not_transposed);
	tcase_add_test(tc, qkv_thirds_swapped);
	tcase_add_test(tc, qkv_bias_swapped);
	tcase_add_test(tc, heads_permuted);
	tcase_add_test(tc, many_blocks_described_by_moves);
	tcase_add_test(tc, scaled_by_constant);
	tcase_add_test(tc, scaled_by_sqrt_head_size);
	tcase_add_test(tc, sign_flipped);
	tcase_add_test(tc, infinity_matches_only_itself);
	tcase_add_test(tc, bf16_bytes_labelled_f16);
	tcase_add_test(tc, f16_bytes_labelled_bf16);
	tcase_add_test(tc, dtype_tally_lines);
	tcase_add_test(tc, dtype_tally_ignores_pairs_past_its_capacity);
	tcase_add_test(tc, checkpoint_pair_diagnosed);
	suite_add_tcase(s, tc);
	TCase *te = tcase_create("limits");
	tcase_add_test(te, within_tolerance_is_not_a_trap);
	tcase_add_test(te, unrelated_is_none);
	tcase_add_test(te, nan_matches_only_nan);
	tcase_add_test(te, short_describe_buffer);
	suite_add_tcase(s, te);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
