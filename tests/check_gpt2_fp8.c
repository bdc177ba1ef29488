/*
 * check_gpt2_fp8.c - strun's scaled FP8 decode products (tools/gpt2/
 * llama_fp8.c) on every kernel table this CPU runs, against the
 * definition W[o][i] = value(code) * scale[o / br][i / bc] summed in
 * double: ragged widths and heights around the vector loops' 16, 32 and
 * 64 columns, blocks that do and do not divide them, rows starting inside
 * a block of rows, E4M3 and E5M2, the codes 1, 16, 36 and 63 bytes past a
 * 64-byte boundary with NaN codes on both sides of them (nothing outside
 * the rows is read); the prompt's dequantized rows; the BF16 byte table
 * against values worked by hand from the formats; and the NaN codes as
 * llama_fp8.c documents them.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2/kernels.h"
#include "gpt2/llama.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 32);
}

static void fill_lut(float lut[256], st_dtype dt)
{
	unsigned char codes[256];
	for (int c = 0; c < 256; c++)
		codes[c] = (unsigned char)c;
	ck_assert_int_eq(st_convert(ST_DTYPE_F32, lut, dt, codes, 256, NULL), ST_OK);
}

START_TEST(bf16_table_by_hand)
{
	float lut[256];
	unsigned char tab[256];
	fill_lut(lut, ST_DTYPE_F8_E4M3);
	ck_assert_int_eq(llama_fp8_bf16_table(tab, lut), 1);
	/* E4M3 0x7e: 1.75 * 2^8 = 448, BF16 0x43E0; 0x01: 2^-9 (subnormal),
	 * 0x3B00; 0x38: 1.0, 0x3F80. */
	static const struct {
		int code, bf16;
	} e4m3[] = {{0x7e, 0x43E0}, {0x01, 0x3B00}, {0x38, 0x3F80}, {0x00, 0x0000}};
	for (size_t k = 0; k < sizeof e4m3 / sizeof e4m3[0]; k++) {
		ck_assert_int_eq(tab[e4m3[k].code], (e4m3[k].bf16 >> 8));
		ck_assert_int_eq(tab[128 + e4m3[k].code], (e4m3[k].bf16 & 0xFF));
	}
	/* 0x7f: a NaN (exponent all ones, mantissa not 0). */
	ck_assert_int_eq(tab[0x7f], 0x7F);
	ck_assert_int_ne(tab[128 + 0x7f] & 0x80, 0);
	ck_assert_int_ne(tab[128 + 0x7f] & 0x7F, 0);
	fill_lut(lut, ST_DTYPE_F8_E5M2);
	ck_assert_int_eq(llama_fp8_bf16_table(tab, lut), 1);
	/* E5M2 0x7b: 1.75 * 2^15 = 57344, BF16 0x4760; 0x01: 2^-16, 0x3780. */
	ck_assert_int_eq(tab[0x7b], 0x47);
	ck_assert_int_eq(tab[128 + 0x7b], 0x60);
	ck_assert_int_eq(tab[0x01], 0x37);
	ck_assert_int_eq(tab[128 + 0x01], 0x80);
	/* A value with bits below BF16's, or a sign that is not the code's. */
	fill_lut(lut, ST_DTYPE_F8_E4M3);
	lut[5] = 1.0f + 0x1p-10f;
	ck_assert_int_eq(llama_fp8_bf16_table(tab, lut), 0);
	fill_lut(lut, ST_DTYPE_F8_E4M3);
	lut[0x85] = lut[5];
	ck_assert_int_eq(llama_fp8_bf16_table(tab, lut), 0);
}
END_TEST

struct mat {
	llama_mat w;
	unsigned char *base, *codes, tab[256];
	float *scale, lut[256];
	int OUT, IN;
};

/* The codes at offset off from a 64-byte boundary, NaN codes (0x7f, in
 * E4M3 and E5M2) in the bytes around them. */
static void make_at(struct mat *m, st_dtype dt, int OUT, int IN, int br, int bc, int off)
{
	m->OUT = OUT;
	m->IN = IN;
	fill_lut(m->lut, dt);
	int srows = (OUT + br - 1) / br, scols = (IN + bc - 1) / bc;
	size_t room = ((size_t)OUT * (size_t)IN + 128 + 63) / 64 * 64;
	m->base = aligned_alloc(64, room);
	ck_assert_ptr_nonnull(m->base);
	memset(m->base, 0x7f, room);
	m->codes = m->base + off;
	m->scale = malloc((size_t)srows * (size_t)scols * sizeof(float));
	ck_assert_ptr_nonnull(m->codes);
	ck_assert_ptr_nonnull(m->scale);
	for (size_t i = 0; i < (size_t)OUT * (size_t)IN; i++) {
		unsigned char c = (unsigned char)next();
		/* Every code but the NaNs (and E5M2's infinities). */
		while (!isfinite(m->lut[c]))
			c = (unsigned char)next();
		m->codes[i] = c;
	}
	for (int i = 0; i < srows * scols; i++)
		m->scale[i] = (float)(1 + next() % 1000) * 1e-4f;
	int ok = llama_fp8_bf16_table(m->tab, m->lut);
	m->w = (llama_mat){m->codes, dt, m->lut, m->scale, br, bc, scols, ok ? m->tab : NULL, 0};
}

static void make(struct mat *m, st_dtype dt, int OUT, int IN, int br, int bc)
{
	make_at(m, dt, OUT, IN, br, bc, 0);
}

static void unmake(struct mat *m)
{
	free(m->base);
	free(m->scale);
}

/* The definition, in double: the value and the bound of its rounding. */
static double want(const struct mat *m, const float *x, int r, double *mag)
{
	double s = 0, a = 0;
	for (int i = 0; i < m->IN; i++) {
		double v = (double)x[i] * m->lut[m->codes[(size_t)r * (size_t)m->IN + (size_t)i]] *
		           m->scale[(r / m->w.br) * m->w.scols + i / m->w.bc];
		s += v;
		a += fabs(v);
	}
	*mag = a;
	return s;
}

static void check_shape_at(st_dtype dt, int OUT, int IN, int br, int bc, int off)
{
	struct mat m;
	make_at(&m, dt, OUT, IN, br, bc, off);
	float *x = malloc((size_t)IN * sizeof(float));
	size_t pad = ((size_t)IN + LLAMA_FP8_PAD - 1) / LLAMA_FP8_PAD * LLAMA_FP8_PAD;
	float *xs = malloc(pad * sizeof(float));
	float *px = malloc(pad * sizeof(float));
	float *out = malloc((size_t)OUT * sizeof(float));
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(xs);
	ck_assert_ptr_nonnull(px);
	ck_assert_ptr_nonnull(out);
	for (int i = 0; i < IN; i++)
		x[i] = (float)((int)(next() % 2001) - 1000) * 1e-2f;
	for (int kt = 0; kt < 3; kt++) {
		const gpt2_kernels *k = gpt2_kernels_find(gpt2_kernel_names[kt]);
		if (!k)
			continue;
		/* As strun's tasks: x prepared once, blocks of rows from o0, the
		 * last one short. */
		llama_fp8_prepare(px, x, IN, llama_fp8_layout(k, &m.w));
		for (int o0 = 0; o0 < OUT; o0 += 7) {
			int n = OUT - o0 < 7 ? OUT - o0 : 7;
			llama_fp8_dots(k, out + o0, px, &m.w, IN, o0, n, xs);
		}
		for (int r = 0; r < OUT; r++) {
			double mag, v = want(&m, x, r, &mag);
			ck_assert_msg(fabs(out[r] - v) <= 4e-6 * mag + 1e-30,
			              "%s %s %dx%d block %dx%d at +%d: row %d = %.9g, want %.9g",
			              k->name, st_dtype_name(dt), OUT, IN, br, bc, off, r, out[r],
			              v);
		}
	}
	free(x);
	free(xs);
	free(px);
	free(out);
	unmake(&m);
}

static void check_shape(st_dtype dt, int OUT, int IN, int br, int bc)
{
	check_shape_at(dt, OUT, IN, br, bc, 0);
}

START_TEST(dots_match_definition)
{
	static const int widths[] = {1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 200, 896};
	static const int blocks[][2] = {{128, 128}, {16, 16}, {3, 5}, {1, 64}, {40, 1000}};
	for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
		for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
			check_shape(ST_DTYPE_F8_E4M3, 45, widths[w], blocks[b][0], blocks[b][1]);
	check_shape(ST_DTYPE_F8_E5M2, 45, 200, 128, 128);
	check_shape(ST_DTYPE_F8_E5M2, 45, 65, 16, 16);
}
END_TEST

/* Rows at offsets from a 64-byte boundary, as a checkpoint's tensors lie,
 * NaN codes around them: widths that are multiples of 64 (every row as
 * far from a boundary) and one that is not. */
START_TEST(dots_any_alignment)
{
	static const int widths[] = {64, 128, 192, 896, 200};
	static const int blocks[][2] = {{128, 128}, {64, 64}, {16, 192}, {5, 16}};
	static const int offs[] = {1, 16, 36, 63};
	for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
		for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
			for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
				check_shape_at(ST_DTYPE_F8_E4M3, 21, widths[w], blocks[b][0],
				               blocks[b][1], offs[o]);
	check_shape_at(ST_DTYPE_F8_E5M2, 21, 128, 128, 128, 36);
}
END_TEST

/* The prompt's rows: value(code) * scale, each one F32 product. */
START_TEST(row_is_dequantized)
{
	static const int blocks[][2] = {{128, 128}, {16, 16}, {3, 5}, {1, 1000}};
	for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
		struct mat m;
		make(&m, ST_DTYPE_F8_E4M3, 20, 77, blocks[b][0], blocks[b][1]);
		float row[77];
		for (int r = 0; r < 20; r++) {
			llama_fp8_row(row, &m.w, 77, r);
			for (int i = 0; i < 77; i++) {
				float v = m.lut[m.codes[r * 77 + i]] *
				          m.scale[(r / m.w.br) * m.w.scols + i / m.w.bc];
				ck_assert_msg(row[i] == v, "row %d col %d = %.9g, want %.9g", r, i,
				              row[i], v);
			}
		}
		unmake(&m);
	}
}
END_TEST

/* A NaN code: NaN from the table (portable; AVX-512 through the BF16
 * table), 480 on the table-free AVX2 loop, NaN again once the loader's
 * scan (llama_fp8_mark_nan) has marked the matrix. */
START_TEST(nan_codes_as_documented)
{
	struct mat m;
	make(&m, ST_DTYPE_F8_E4M3, 2, 80, 128, 128);
	memset(m.codes, 0x38, 160); /* 1.0 */
	m.codes[70] = 0x7f;
	m.codes[80 + 3] = 0xff;
	m.scale[0] = 0.5f;
	float x[80], xs[128], px[128], out[2];
	for (int i = 0; i < 80; i++)
		x[i] = 1.0f;
	const gpt2_kernels *k = gpt2_kernels_find("portable");
	llama_fp8_prepare(px, x, 80, llama_fp8_layout(k, &m.w));
	llama_fp8_dots(k, out, px, &m.w, 80, 0, 2, xs);
	ck_assert(isnan(out[0]) && isnan(out[1]));
	if ((k = gpt2_kernels_find("avx2"))) {
		llama_fp8_prepare(px, x, 80, llama_fp8_layout(k, &m.w));
		llama_fp8_dots(k, out, px, &m.w, 80, 0, 2, xs);
		ck_assert_float_eq(out[0], (79.0f + 480.0f) * 0.5f);
		ck_assert_float_eq(out[1], (79.0f - 480.0f) * 0.5f);
		ck_assert_int_eq(llama_fp8_mark_nan(k, &m.w, 160), 1);
		llama_fp8_prepare(px, x, 80, llama_fp8_layout(k, &m.w));
		llama_fp8_dots(k, out, px, &m.w, 80, 0, 2, xs);
		ck_assert(isnan(out[0]) && isnan(out[1]));
		m.w.nan_codes = 0;
	}
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if ((k = gpt2_kernels_find("avx512")) && __builtin_cpu_supports("avx512vbmi")) {
		llama_fp8_prepare(px, x, 80, llama_fp8_layout(k, &m.w));
		llama_fp8_dots(k, out, px, &m.w, 80, 0, 2, xs);
		ck_assert(isnan(out[0]) && isnan(out[1]));
	}
#endif
	unmake(&m);
}
END_TEST

/*
 * The loader's scan on the AVX2 table: one NaN code (0x7f or 0xff)
 * anywhere in the n codes, and only there, whatever n and the alignment
 * (the bytes around the codes are NaN codes too: a read past either end
 * would find them); never on a loop that reads NaN as NaN.
 */
START_TEST(nan_scan_finds_every_place)
{
	const gpt2_kernels *k = gpt2_kernels_find("avx2");
	if (!k)
		return;
	static const int sizes[][2] = {{1, 1}, {1, 31}, {1, 32}, {3, 33}, {64, 64}, {70, 97}};
	for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
		for (int off = 0; off < 64; off += 21) {
			struct mat m;
			make_at(&m, ST_DTYPE_F8_E4M3, sizes[z][0], sizes[z][1], 128, 128, off);
			size_t n = (size_t)m.OUT * (size_t)m.IN;
			ck_assert_int_eq(llama_fp8_mark_nan(k, &m.w, n), 0);
			size_t at[] = {0, n - 1, n / 2, 31, 32, 4095, 4096, 4127};
			for (size_t a = 0; a < sizeof at / sizeof at[0]; a++) {
				if (at[a] >= n)
					continue;
				unsigned char keep = m.codes[at[a]];
				m.codes[at[a]] = a % 2 ? 0xff : 0x7f;
				ck_assert_msg(llama_fp8_mark_nan(k, &m.w, n) == 1,
				              "%zu codes at +%d: NaN at %zu not found", n, off,
				              at[a]);
				m.w.nan_codes = 0;
				m.codes[at[a]] = keep;
			}
			unmake(&m);
		}
	/* A 0x7f in E5M2 is NaN too, but that loop is the table's: no scan. */
	struct mat m;
	make(&m, ST_DTYPE_F8_E5M2, 2, 40, 128, 128);
	m.codes[3] = 0x7f;
	ck_assert_int_eq(llama_fp8_mark_nan(k, &m.w, 80), 0);
	ck_assert_int_eq(llama_fp8_mark_nan(gpt2_kernels_find("portable"), &m.w, 80), 0);
	unmake(&m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpt2_fp8");
	TCase *tc = tcase_create("dots");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bf16_table_by_hand);
	tcase_add_test(tc, dots_match_definition);
	tcase_add_test(tc, dots_any_alignment);
	tcase_add_test(tc, row_is_dequantized);
	tcase_add_test(tc, nan_codes_as_documented);
	tcase_add_test(tc, nan_scan_finds_every_place);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
