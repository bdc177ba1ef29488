/*
 * targets_quant.c - the fuzz target of libst's quantization module
 * (libst/quant.c), shared by the libFuzzer harness (fuzz.c with
 * -DFUZZ_QUANT) and the corpus replay test (tests/check_quant_fuzz_corpus.c).
 *
 *   fuzz_quant   the first byte picks the mode:
 *                0  weight_block_size text: accepted values are in range,
 *                   refusals have a one-line message;
 *                1  a weight/scale pair whose dtypes and shapes come from
 *                   the input: an accepted layout must dequantize every
 *                   row (whole and in two ranges, the same bytes) reading
 *                   only the tensors' bytes;
 *                2  the same for MXFP4 blocks and scales;
 *                3  config.json text: the block size and the dequantized
 *                   config (which, when made, holds no top-level
 *                   quantization_config and is again an object).
 *
 * Shapes are small (each side below 64) so that every accepted input is
 * dequantized; it is the checks on hostile geometry that are fuzzed.
 */
#include "internal.h"
#include "fuzz.h"

#include <stdint.h>

static const st_dtype fzq_types[8] = {
	ST_DTYPE_F8_E4M3, ST_DTYPE_F8_E5M2, ST_DTYPE_F8_E4M3FNUZ, ST_DTYPE_F8_E8M0,
	ST_DTYPE_F32,     ST_DTYPE_BF16,    ST_DTYPE_F16,         ST_DTYPE_U8,
};

/* A tensor record from the input: dtype, ndim (0..4), dims (0..63). */
static int fzq_tensor(const unsigned char **p, size_t *n, st_tensor *t, uint64_t *shape,
                      const char *name)
{
	if (*n < 2)
		return -1;
	memset(t, 0, sizeof *t);
	t->name = name;
	t->name_len = strlen(name);
	t->dtype = fzq_types[(*p)[0] & 7];
	t->ndim = (*p)[1] % 5;
	*p += 2;
	*n -= 2;
	if (*n < t->ndim)
		return -1;
	t->n_elements = 1;
	for (unsigned i = 0; i < t->ndim; i++) {
		shape[i] = (*p)[i] & 63;
		t->n_elements *= shape[i];
	}
	*p += t->ndim;
	*n -= t->ndim;
	t->shape = shape;
	t->n_bytes = t->n_elements * st_dtype_bits(t->dtype) / 8;
	return 0;
}

/* Bytes from the input, repeated to fill len (never read past data). */
static unsigned char *fzq_fill(const unsigned char *data, size_t size, size_t len)
{
	unsigned char *b = malloc(len ? len : 1);
	CHECK(b != NULL);
	for (size_t i = 0; i < len; i++)
		b[i] = size ? data[i % size] : (unsigned char)i;
	return b;
}

static void fzq_fp8(const unsigned char *p, size_t n)
{
	uint64_t ws[4], ss[4];
	st_tensor w, s;
	st_quant_fp8 l;
	st_error e;

	if (n < 2 || fzq_tensor(&p, &n, &w, ws, "w") || fzq_tensor(&p, &n, &s, ss, "s") || n < 2)
		return;
	uint64_t b0 = p[0] % 70, b1 = p[1] % 70;
	memset(&e, 0, sizeof e);
	if (st_quant_fp8_layout(&l, &w, &s, b0, b1, "f", &e) != ST_OK) {
		CHECK(e.message[0] && !strchr(e.message, '\n'));
		return;
	}
	CHECK(l.block_rows && l.block_cols);
	CHECK(l.experts * l.scale_rows * l.scale_cols <= s.n_elements || l.rows == 0 || l.cols == 0);
	uint64_t rows = l.experts * l.rows, cells = rows * l.cols;
	unsigned char *wd = fzq_fill(p, n, (size_t)w.n_bytes), *sd = fzq_fill(p, n, (size_t)s.n_bytes);
	unsigned char *a = malloc(cells * 4 + 1), *b = malloc(cells * 4 + 1);
	CHECK(a && b);
	CHECK(st_quant_fp8_dequant(&l, ST_DTYPE_F32, a, wd, sd, 0, rows) == ST_OK);
	uint64_t mid = rows / 2;
	CHECK(st_quant_fp8_dequant(&l, ST_DTYPE_F32, b, wd, sd, 0, mid) == ST_OK);
	CHECK(st_quant_fp8_dequant(&l, ST_DTYPE_F32, b + mid * l.cols * 4, wd + mid * l.cols, sd, mid,
	                           rows) == ST_OK);
	CHECK(memcmp(a, b, cells * 4) == 0);
	CHECK(st_quant_fp8_dequant(&l, ST_DTYPE_BF16, a, wd, sd, 0, rows) == ST_OK);
	CHECK(st_quant_fp8_dequant(&l, ST_DTYPE_F32, a, wd, sd, 0, rows + 1) == ST_EINVAL);
	free(wd);
	free(sd);
	free(a);
	free(b);
}

static void fzq_mxfp4(const unsigned char *p, size_t n)
{
	uint64_t bs[4], ss[4];
	st_tensor b, s;
	st_quant_mxfp4 l;
	st_error e;

	if (fzq_tensor(&p, &n, &b, bs, "x_blocks") || fzq_tensor(&p, &n, &s, ss, "x_scales"))
		return;
	/* Let a fair share of inputs have the 16 the layout needs. */
	if (b.ndim == 4 && n && (p[0] & 1))
		bs[3] = 16, b.n_elements = bs[0] * bs[1] * bs[2] * 16, b.n_bytes = b.n_elements;
	b.dtype = s.dtype = (n && (p[0] & 2)) ? ST_DTYPE_F32 : ST_DTYPE_U8;
	b.n_bytes = b.n_elements * st_dtype_bits(b.dtype) / 8;
	s.n_bytes = s.n_elements * st_dtype_bits(s.dtype) / 8;
	memset(&e, 0, sizeof e);
	if (st_quant_mxfp4_layout(&l, &b, &s, "f", &e) != ST_OK) {
		CHECK(e.message[0] && !strchr(e.message, '\n'));
		return;
	}
	CHECK(l.experts * l.rows * l.groups * 16 == b.n_bytes);
	CHECK(l.experts * l.rows * l.groups == s.n_bytes);
	uint64_t rows = l.experts * l.groups * 32, cells = rows * l.rows;
	unsigned char *bd = fzq_fill(p, n, (size_t)b.n_bytes), *sd = fzq_fill(p, n, (size_t)s.n_bytes);
	unsigned char *x = malloc(cells * 2 + 1), *y = malloc(cells * 2 + 1);
	CHECK(x && y);
	CHECK(st_quant_mxfp4_dequant(&l, ST_DTYPE_BF16, x, bd, sd, 0, rows) == ST_OK);
	uint64_t mid = rows / 3;
	CHECK(st_quant_mxfp4_dequant(&l, ST_DTYPE_BF16, y, bd, sd, 0, mid) == ST_OK);
	CHECK(st_quant_mxfp4_dequant(&l, ST_DTYPE_BF16, y + mid * l.rows * 2, bd, sd, mid, rows) == ST_OK);
	CHECK(memcmp(x, y, cells * 2) == 0);
	free(bd);
	free(sd);
	free(x);
	free(y);
}

static void fuzz_quant(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	uint64_t r = 0, c = 0;
	st_error e;

	switch (mode) {
	case 0:
		memset(&e, 0, sizeof e);
		if (st_quant_parse_block_size((const char *)data, size, &r, &c, &e) == ST_OK)
			CHECK(r >= 1 && c >= 1 && r <= ST_QUANT_MAX_BLOCK && c <= ST_QUANT_MAX_BLOCK);
		else
			CHECK(e.message[0] && !strchr(e.message, '\n') && r == 0 && c == 0);
		break;
	case 1:
		fzq_fp8(data, size);
		break;
	case 2:
		fzq_mxfp4(data, size);
		break;
	case 3: {
		int found = 0;
		char *out = NULL;
		size_t n = 0;
		memset(&e, 0, sizeof e);
		if (st_quant_config_block_size((const char *)data, size, &r, &c, &found, &e) == ST_OK)
			CHECK(r >= 1 && c >= 1 && r <= ST_QUANT_MAX_BLOCK);
		if (st_quant_config_dequantized((const char *)data, size, "bfloat16", &out, &n, &e) == ST_OK) {
			CHECK(out != NULL);
			CHECK(st_quant_config_block_size(out, n, &r, &c, &found, &e) == ST_OK && !found);
			free(out);
		}
		break;
	}
	default:
		(void)fz_write; /* fuzz.h's, unused here */
		break;
	}
}
