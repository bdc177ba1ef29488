/*
 * check_ggml_isa.c - the AVX2 block decoders (libst/ggml_quants_avx2.c:
 * Q4_K, Q6_K) against the scalar ones (libst/ggml_quants.c) bit for bit:
 * random blocks whose F16 scale fields take edge values (+-0, subnormal,
 * 65504, +-Inf, NaN) as well as random ones, 1 to 9 blocks and 64, at
 * every source alignment. The scalar decoders are checked against ggml's
 * own in check_ggml_decode.c.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_internal.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint64_t next_u64(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* An F16 scale: half the time an edge value, else random bits. */
static void put_f16(unsigned char *p)
{
	static const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0xFBFF,
	                                 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x3C00, 0x2E66};
	uint16_t h = next_u64() % 2 ? edges[next_u64() % (sizeof edges / sizeof edges[0])]
	                            : (uint16_t)next_u64();
	p[0] = (unsigned char)h;
	p[1] = (unsigned char)(h >> 8);
}

static void check_type(unsigned type, unsigned bytes, const unsigned *f16_at, int n_f16)
{
	enum { MAX_NB = 64 };
	unsigned char *src = malloc(MAX_NB * bytes + 32);
	float *a = malloc(MAX_NB * 256 * sizeof *a), *b = malloc(MAX_NB * 256 * sizeof *b);
	ck_assert(src && a && b);
	static const uint64_t nbs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, MAX_NB};
	for (int round = 0; round < 20; round++)
		for (size_t off = 0; off < 32; off += round % 2 ? 1 : 7)
			for (size_t i = 0; i < sizeof nbs / sizeof nbs[0]; i++) {
				uint64_t nb = nbs[i];
				unsigned char *s = src + off;
				for (uint64_t k = 0; k < nb * bytes; k++)
					s[k] = (unsigned char)next_u64();
				for (uint64_t blk = 0; blk < nb; blk++)
					for (int f = 0; f < n_f16; f++)
						put_f16(s + blk * bytes + f16_at[f]);
				memset(a, 0x55, nb * 256 * sizeof *a);
				memset(b, 0xAA, nb * 256 * sizeof *b);
				ck_assert_int_eq(st__ggml_to_f32_isa(ST__ISA_SCALAR, type, s, a,
				                                     nb * 256),
				                 ST_OK);
				ck_assert_int_eq(st__ggml_to_f32_isa(ST__ISA_AVX2, type, s, b,
				                                     nb * 256),
				                 ST_OK);
				uint64_t k =
					0; /* the first value that differs (one assert: fast) */
				while (k < nb * 256 && memcmp(&a[k], &b[k], sizeof a[k]) == 0)
					k++;
				ck_assert_msg(k == nb * 256,
				              "type %u, %llu blocks, offset %zu: value %llu", type,
				              (unsigned long long)nb, off, (unsigned long long)k);
			}
	free(src);
	free(a);
	free(b);
}

START_TEST(avx2_decoders_match_scalar)
{
	if (!st__isa_available(ST__ISA_AVX2))
		return; /* nothing to compare on this CPU */
	ck_assert_ptr_nonnull(st__ggml_dec_avx2(ST_GGML_Q4_K));
	ck_assert_ptr_nonnull(st__ggml_dec_avx2(ST_GGML_Q6_K));
	check_type(ST_GGML_Q4_K, 144, (const unsigned[]){0, 2}, 2); /* d, dmin */
	check_type(ST_GGML_Q6_K, 210, (const unsigned[]){208}, 1);  /* d */
}
END_TEST

START_TEST(forced_isa)
{
	float y[256];
	unsigned char blk[210] = {0};
	int want = st__isa_available(ST__ISA_AVX2) ? ST_OK : ST_EUNSUPPORTED;
	ck_assert_int_eq(st__ggml_to_f32_isa(ST__ISA_AVX2, ST_GGML_Q6_K, blk, y, 256), want);
	ck_assert_int_eq(st__ggml_to_f32_isa(ST__ISA_AVX512, ST_GGML_Q6_K, blk, y, 256),
	                 ST_EUNSUPPORTED);
	/* A type without an AVX2 decoder gets its scalar one. */
	if (want == ST_OK)
		ck_assert_int_eq(st__ggml_to_f32_isa(ST__ISA_AVX2, ST_GGML_Q5_K, blk, y, 256),
		                 ST_OK);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ggml_isa");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, avx2_decoders_match_scalar);
	tcase_add_test(tc, forced_isa);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
