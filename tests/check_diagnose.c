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
#include <unistd.h>

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

/* ---- the Llama family's traps ---------------------------------------------- */

START_TEST(qk_rows_permuted_to_gguf)
{
	/* One head of 8 rows of 2 columns, row r = (10r, 10r + 1). GGUF's
	 * order (reshape(1, 2, 4, 2).swapaxes(1, 2)): row 2i + j is row
	 * 4j + i, so B's rows are A's 0, 4, 1, 5, 2, 6, 3, 7. */
	static const int order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
	float a[16], b[16];
	for (int r = 0; r < 8; r++)
		for (int c = 0; c < 2; c++) {
			a[r * 2 + c] = (float)(10 * r + c);
			b[r * 2 + c] = (float)(10 * order[r] + c);
		}
	uint64_t shape[2] = {8, 2};
	st_diagnose_tensor ta = f32(a, 2, shape, 16), tb = f32(b, 2, shape, 16);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_ROTARY_ROWS);
	ck_assert_int_eq(r.exact, 1);
	ck_assert_uint_eq(r.head_dim, 8);
	ck_assert_int_eq(r.to_interleaved, 1);
	char buf[512];
	ck_assert_ptr_nonnull(strstr(st_diagnose_describe(&r, buf, sizeof buf),
	                             "permuted to GGUF's interleaved rotary layout "
	                             "(heads of 8 rows)"));
	/* The other way round: back to Hugging Face's order. */
	ck_assert_int_eq(st_diagnose_pair(&tb, &ta, 0, 0, &r), ST_DIAGNOSE_ROTARY_ROWS);
	ck_assert_uint_eq(r.head_dim, 8);
	ck_assert_int_eq(r.to_interleaved, 0);
}
END_TEST

START_TEST(qk_bias_heads_of_four)
{
	/* A bias of 2 heads of 4: rows 0 2 1 3 within each head (D = 4). */
	static const float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	static const float b[8] = {1, 3, 2, 4, 5, 7, 6, 8};
	uint64_t shape[1] = {8};
	st_diagnose_tensor ta = f32(a, 1, shape, 8), tb = f32(b, 1, shape, 8);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_ROTARY_ROWS);
	ck_assert_uint_eq(r.head_dim, 4);
}
END_TEST

START_TEST(rows_scaled_each_by_its_factor)
{
	/* Rows times 2, 0.5 and 3: exact in F32. */
	static const float a[12] = {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, 0.5f, 9};
	static const float b[12] = {2, 4, 6, 8, 2.5f, 3, 3.5f, 4, -3, -6, 1.5f, 27};
	uint64_t shape[2] = {3, 4};
	st_diagnose_tensor ta = f32(a, 2, shape, 12), tb = f32(b, 2, shape, 12);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 0, 0, &r), ST_DIAGNOSE_ROW_SCALED);
	ck_assert_int_eq(r.exact, 1);
	ck_assert(r.scale_min == 0.5 && r.scale_max == 3);
	char buf[512];
	ck_assert_str_eq(st_diagnose_describe(&r, buf, sizeof buf),
	                 "B is A with each row scaled by its own factor, 0.5 to 3 "
	                 "(exactly)");
}
END_TEST

START_TEST(vector_scaled_per_element_is_no_permutation)
{
	/* A norm weight times factors near 1, element by element: nothing. */
	static const float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	static const float b[8] = {1.01f, 1.98f, 3.03f, 3.96f, 5.05f, 5.94f, 7.07f, 7.92f};
	uint64_t shape[1] = {8};
	st_diagnose_tensor ta = f32(a, 1, shape, 8), tb = f32(b, 1, shape, 8);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_pair(&ta, &tb, 1e-6, 1e-6, &r), ST_DIAGNOSE_NONE);
}
END_TEST

/*
 * pre [T = 3, H = 2, D = 8] rotated at position t by t * base^(-2i/8),
 * pairs (i, i + 4) (rotate-half) or (2i, 2i + 1): the definitions of
 * doc/trace.md and llama_trace_torch.py's rope(), computed here.
 */
enum { RT = 3, RH = 2, RD = 8, RN = RT * RH * RD };
static void rotate(const float *pre, float *out, int interleaved, double base)
{
	for (int t = 0; t < RT; t++)
		for (int h = 0; h < RH; h++)
			for (int i = 0; i < RD / 2; i++) {
				int o = (t * RH + h) * RD;
				int x = interleaved ? 2 * i : i, y = interleaved ? 2 * i + 1 : i + RD / 2;
				double ang = t * pow(base, -2.0 * i / RD);
				out[o + x] = (float)(pre[o + x] * cos(ang) - pre[o + y] * sin(ang));
				out[o + y] = (float)(pre[o + y] * cos(ang) + pre[o + x] * sin(ang));
			}
}

static void rotary_input(float *pre)
{
	for (int k = 0; k < RN; k++)
		pre[k] = (float)((k * 37 % 23) - 11) / 8;
}

/* A rotate-half with base_a, B (interleaved or not) with base_b, of the
 * same input: st_diagnose_rotary's answer. */
static enum st_diagnose_kind rotary_pair(float *pre, float *a, float *b, double base_a,
                                         int interleaved_b, double base_b,
                                         st_diagnose_result *r)
{
	rotary_input(pre);
	rotate(pre, a, 0, base_a);
	rotate(pre, b, interleaved_b, base_b);
	uint64_t shape[3] = {RT, RH, RD};
	st_diagnose_tensor tp = f32(pre, 3, shape, RN), ta = f32(a, 3, shape, RN),
	                   tb = f32(b, 3, shape, RN);
	return st_diagnose_rotary(&tp, &ta, &tp, &tb, 1.3e-6, 1e-5, r);
}

START_TEST(rotary_layout_named)
{
	float pre[RN], a[RN], b[RN];
	st_diagnose_result r;
	ck_assert_int_eq(rotary_pair(pre, a, b, 10000, 1, 10000, &r), ST_DIAGNOSE_ROTARY);
	ck_assert_int_eq(r.layout_a, ST_DIAGNOSE_ROTARY_HALF);
	ck_assert_int_eq(r.layout_b, ST_DIAGNOSE_ROTARY_INTERLEAVED);
	ck_assert(fabs(r.base_a - 10000) < 10 && fabs(r.base_b - 10000) < 10);
	ck_assert_uint_eq(r.head_dim, RD);
	char buf[512];
	ck_assert_ptr_nonnull(strstr(st_diagnose_describe(&r, buf, sizeof buf),
	                             "A rotates pairs (i, i+D/2) (rotate-half), B pairs "
	                             "(2i, 2i+1) (interleaved, GGUF's)"));
}
END_TEST

START_TEST(rotary_base_estimated)
{
	float pre[RN], a[RN], b[RN];
	st_diagnose_result r;
	ck_assert_int_eq(rotary_pair(pre, a, b, 1000000, 0, 10000, &r), ST_DIAGNOSE_ROTARY);
	uint64_t shape[3] = {RT, RH, RD};
	st_diagnose_tensor tp = f32(pre, 3, shape, RN), ta = f32(a, 3, shape, RN),
	                   tb = f32(b, 3, shape, RN);
	ck_assert_int_eq(r.layout_a, ST_DIAGNOSE_ROTARY_HALF);
	ck_assert_int_eq(r.layout_b, ST_DIAGNOSE_ROTARY_HALF);
	ck_assert(fabs(r.base_a / 1000000 - 1) < 1e-3);
	ck_assert(fabs(r.base_b / 10000 - 1) < 1e-3);
	char buf[512];
	ck_assert_ptr_nonnull(strstr(st_diagnose_describe(&r, buf, sizeof buf),
	                             "A with base about 1000000, B with base about "
	                             "10000: rope_theta ignored?"));
	/* Same rotation on both sides, or another input: not this trap. */
	ck_assert_int_eq(st_diagnose_rotary(&tp, &ta, &tp, &ta, 1.3e-6, 1e-5, &r),
	                 ST_DIAGNOSE_NONE);
	float other[RN];
	memcpy(other, pre, sizeof other);
	other[5] += 1;
	st_diagnose_tensor to = f32(other, 3, shape, RN);
	ck_assert_int_eq(st_diagnose_rotary(&tp, &ta, &to, &tb, 1.3e-6, 1e-5, &r),
	                 ST_DIAGNOSE_NONE);
}
END_TEST

START_TEST(rotary_of_unrelated_is_none)
{
	float pre[RN], a[RN], b[RN];
	rotary_input(pre);
	rotate(pre, a, 0, 10000);
	for (int k = 0; k < RN; k++)
		b[k] = (float)((k * 53 % 29) - 14) / 7;
	uint64_t shape[3] = {RT, RH, RD};
	st_diagnose_tensor tp = f32(pre, 3, shape, RN), ta = f32(a, 3, shape, RN),
	                   tb = f32(b, 3, shape, RN);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_rotary(&tp, &ta, &tp, &tb, 1.3e-6, 1e-5, &r),
	                 ST_DIAGNOSE_NONE);
}
END_TEST

START_TEST(gqa_tiled_named)
{
	/* 4 query heads, 2 KV heads of 2 at position 0: v = (1, 2), (3, 4).
	 * repeat_kv reads KV heads 0 0 1 1, tiling 0 1 0 1. */
	static const float v[4] = {1, 2, 3, 4};
	static const float rep[8] = {1, 2, 1, 2, 3, 4, 3, 4};
	static const float tile[8] = {1, 2, 3, 4, 1, 2, 3, 4};
	static const float junk[8] = {1, 2, 5, 6, 3, 4, 7, 8};
	uint64_t vs[3] = {1, 2, 2}, os[2] = {1, 8};
	st_diagnose_tensor tv = f32(v, 3, vs, 4), ta = f32(rep, 2, os, 8),
	                   tb = f32(tile, 2, os, 8), tj = f32(junk, 2, os, 8);
	st_diagnose_result r;
	ck_assert_int_eq(st_diagnose_gqa(&ta, &tb, &tv, 4, 2, 0, 0, &r), ST_DIAGNOSE_GQA);
	ck_assert_int_eq(r.a_tiled, 0);
	ck_assert_uint_eq(r.n_head, 4);
	ck_assert_uint_eq(r.n_kv_head, 2);
	char buf[512];
	ck_assert_ptr_nonnull(strstr(st_diagnose_describe(&r, buf, sizeof buf),
	                             "A repeats each KV head for 2 consecutive query heads "
	                             "(repeat_kv: h / 2), B tiles them (h % 2)"));
	ck_assert_int_eq(st_diagnose_gqa(&tb, &ta, &tv, 4, 2, 0, 0, &r), ST_DIAGNOSE_GQA);
	ck_assert_int_eq(r.a_tiled, 1);
	/* Heads that are neither: nothing. */
	ck_assert_int_eq(st_diagnose_gqa(&ta, &tj, &tv, 4, 2, 0, 0, &r), ST_DIAGNOSE_NONE);
}
END_TEST

/* ---- trace stages through st_diagnose_checkpoints --------------------------- */

struct stage {
	const char *name; /* given in name order: the writer's order for F32 */
	unsigned ndim;
	uint64_t shape[3];
	const float *data;
};

static st_checkpoint *write_trace(char *path, const struct stage *s, int n)
{
	st_writer *w;
	st_error e;
	strcpy(path, "/tmp/check_diagnose_XXXXXX");
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	close(fd);
	ck_assert(st_writer_new(&w, &e) == ST_OK);
	for (int i = 0; i < n; i++)
		ck_assert(st_writer_add(w, s[i].name, strlen(s[i].name), ST_DTYPE_F32, s[i].ndim,
		                        s[i].shape, &e) == ST_OK);
	ck_assert(st_writer_open(w, path, &e) == ST_OK);
	for (int i = 0; i < n; i++) {
		uint64_t k = 1;
		for (unsigned d = 0; d < s[i].ndim; d++)
			k *= s[i].shape[d];
		ck_assert(st_writer_write(w, s[i].data, k * sizeof(float), &e) == ST_OK);
	}
	ck_assert(st_writer_finish(w, &e) == ST_OK);
	st_writer_free(w);
	st_checkpoint *c;
	ck_assert(st_checkpoint_open(&c, path, 0, &e) == ST_OK);
	return c;
}

/* st_diagnose_checkpoints on the tensor named name of two traces. */
static enum st_diagnose_kind trace_pair(const struct stage *sa, const struct stage *sb,
                                        int n, const char *name, st_diagnose_result *r)
{
	char pa[64], pb[64];
	st_checkpoint *a = write_trace(pa, sa, n), *b = write_trace(pb, sb, n);
	long ia = st_checkpoint_find(a, name, strlen(name));
	long ib = st_checkpoint_find(b, name, strlen(name));
	ck_assert(ia >= 0 && ib >= 0);
	st_error e;
	ck_assert_int_eq(st_diagnose_checkpoints(a, (size_t)ia, b, (size_t)ib, 1.3e-6, 1e-5,
	                                         r, &e), ST_OK);
	st_checkpoint_close(a);
	st_checkpoint_close(b);
	unlink(pa);
	unlink(pb);
	return r->kind;
}

START_TEST(trace_rotary_input_looked_up)
{
	float pre[RN], a[RN], b[RN];
	st_diagnose_result r;
	rotary_pair(pre, a, b, 10000, 1, 10000, &r);
	struct stage sa[2] = {{"layers.0.attn.q", 3, {RT, RH, RD}, pre},
	                      {"layers.0.attn.q_rope", 3, {RT, RH, RD}, a}};
	struct stage sb[2] = {sa[0], {"layers.0.attn.q_rope", 3, {RT, RH, RD}, b}};
	ck_assert_int_eq(trace_pair(sa, sb, 2, "layers.0.attn.q_rope", &r), ST_DIAGNOSE_ROTARY);
	ck_assert_int_eq(r.layout_b, ST_DIAGNOSE_ROTARY_INTERLEAVED);
	/* An input of another shape (same element count) is not used. */
	sa[0].ndim = sb[0].ndim = 1;
	sa[0].shape[0] = sb[0].shape[0] = RN;
	ck_assert_int_eq(trace_pair(sa, sb, 2, "layers.0.attn.q_rope", &r), ST_DIAGNOSE_NONE);
	/* No input in the file: nothing either. */
	ck_assert_int_eq(trace_pair(sa + 1, sb + 1, 1, "layers.0.attn.q_rope", &r),
	                 ST_DIAGNOSE_NONE);
}
END_TEST

START_TEST(trace_gqa_counts_from_q_and_k)
{
	/* As gqa_tiled_named, T = 1: q [1, 4, 2] and k [1, 2, 2] give the
	 * counts; v [1, 2, 2] the values. */
	static const float v[4] = {1, 2, 3, 4}, q[8] = {0}, k[4] = {0};
	static const float rep[8] = {1, 2, 1, 2, 3, 4, 3, 4};
	static const float tile[8] = {1, 2, 3, 4, 1, 2, 3, 4};
	struct stage sa[4] = {{"layers.3.attn.k", 3, {1, 2, 2}, k},
	                      {"layers.3.attn.out", 2, {1, 8}, rep},
	                      {"layers.3.attn.q", 3, {1, 4, 2}, q},
	                      {"layers.3.attn.v", 3, {1, 2, 2}, v}};
	struct stage sb[4] = {sa[0], {"layers.3.attn.out", 2, {1, 8}, tile}, sa[2], sa[3]};
	st_diagnose_result r;
	ck_assert_int_eq(trace_pair(sa, sb, 4, "layers.3.attn.out", &r), ST_DIAGNOSE_GQA);
	ck_assert_uint_eq(r.n_head, 4);
	ck_assert_uint_eq(r.n_kv_head, 2);
	ck_assert_int_eq(r.a_tiled, 0);
	/* Hostile shapes: v [1, 1, 4] (the same bytes), q that does not fit
	 * out: not named GQA (no read past a tensor); what remains true is
	 * that the heads are reordered. */
	struct stage ha[4] = {sa[0], sa[1], sa[2], {"layers.3.attn.v", 3, {1, 1, 4}, v}};
	struct stage hb[4] = {sb[0], sb[1], sb[2], ha[3]};
	ck_assert_int_eq(trace_pair(ha, hb, 4, "layers.3.attn.out", &r), ST_DIAGNOSE_PERMUTED);
	struct stage qa[4] = {sa[0], sa[1], {"layers.3.attn.q", 3, {1, 2, 2}, q}, sa[3]};
	struct stage qb[4] = {sb[0], sb[1], qa[2], sb[3]};
	ck_assert_int_eq(trace_pair(qa, qb, 4, "layers.3.attn.out", &r), ST_DIAGNOSE_PERMUTED);
}
END_TEST

START_TEST(trace_norm_epsilon_estimated)
{
	/* embed x, input_norm = x / sqrt(mean(x^2) + eps) with eps 0 (A) and
	 * 0.5 (B), rows of 4: row 0 mean square 7.5, row 1 3 (computed by
	 * hand; the F32 values rounded by the compiler). */
	static const float x[8] = {1, 2, 3, 4, 1, 1, 1, 3};
	float ya[8], yb[8];
	for (int i = 0; i < 8; i++) {
		double ms = i < 4 ? 7.5 : 3.0;
		ya[i] = (float)(x[i] / sqrt(ms));
		yb[i] = (float)(x[i] / sqrt(ms + 0.5));
	}
	struct stage sa[2] = {{"embed", 2, {2, 4}, x}, {"layers.0.input_norm", 2, {2, 4}, ya}};
	struct stage sb[2] = {sa[0], {"layers.0.input_norm", 2, {2, 4}, yb}};
	st_diagnose_result r;
	ck_assert_int_eq(trace_pair(sa, sb, 2, "layers.0.input_norm", &r),
	                 ST_DIAGNOSE_ROW_SCALED);
	ck_assert_int_eq(r.norm, 1);
	ck_assert(fabs(r.eps_delta - 0.5) < 1e-5);
	char buf[512];
	ck_assert_ptr_nonnull(strstr(st_diagnose_describe(&r, buf, sizeof buf),
	                             "the RMSNorm epsilon differs (eps(B) - eps(A) about 0.5)"));
	/* Without the input in the file: named, not estimated. */
	ck_assert_int_eq(trace_pair(sa + 1, sb + 1, 1, "layers.0.input_norm", &r),
	                 ST_DIAGNOSE_ROW_SCALED);
	ck_assert_int_eq(r.norm, 1);
	ck_assert(isnan(r.eps_delta));
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
	tcase_add_test(tc, qk_rows_permuted_to_gguf);
	tcase_add_test(tc, qk_bias_heads_of_four);
	tcase_add_test(tc, rows_scaled_each_by_its_factor);
	tcase_add_test(tc, rotary_layout_named);
	tcase_add_test(tc, rotary_base_estimated);
	tcase_add_test(tc, gqa_tiled_named);
	tcase_add_test(tc, trace_rotary_input_looked_up);
	tcase_add_test(tc, trace_gqa_counts_from_q_and_k);
	tcase_add_test(tc, trace_norm_epsilon_estimated);
	suite_add_tcase(s, tc);
	TCase *te = tcase_create("limits");
	tcase_add_test(te, within_tolerance_is_not_a_trap);
	tcase_add_test(te, unrelated_is_none);
	tcase_add_test(te, vector_scaled_per_element_is_no_permutation);
	tcase_add_test(te, rotary_of_unrelated_is_none);
	tcase_add_test(te, nan_matches_only_nan);
	tcase_add_test(te, short_describe_buffer);
	suite_add_tcase(s, te);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
