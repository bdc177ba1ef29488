/*
 * quantize.c - stconvert --to f8_e4m3's tensors (see quantize.h).
 */
#include "quantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "--block 'ARG': WHY", ARG cut at 64 bytes. */
static int einval(st_error *err, const char *arg, const char *why)
{
	err->code = ST_EINVAL;
	err->sys_errno = 0;
	snprintf(err->message, sizeof err->message, "--block '%.64s%s': %.400s", arg,
	         strlen(arg) > 64 ? "..." : "", why);
	return ST_EINVAL;
}

int qz_parse_block(const char *arg, uint64_t *b0, uint64_t *b1, st_error *err)
{
	char json[96];
	size_t len = strlen(arg);
	const char *comma = strchr(arg, ',');

	if (len > 64)
		return einval(err, arg, "not R,C");
	if (!comma || strchr(comma + 1, ','))
		return einval(err, arg, "not R,C (two block sides)");
	/* st_quant_parse_block_size reads the pair as config.json gives it. */
	snprintf(json, sizeof json, "[%s]", arg);
	st_error e;
	if (st_quant_parse_block_size(json, strlen(json), b0, b1, &e) != ST_OK) {
		const char *why = strstr(e.message, ": ");
		return einval(err, arg, why ? why + 2 : e.message);
	}
	return ST_OK;
}

int qz_wanted(const st_tensor *t)
{
	return t->ndim == 2 && st_dtype_is_wide_float(t->dtype) && t->name_len >= 6 &&
	       memcmp(t->name + t->name_len - 6, "weight", 6) == 0;
}

int qz_prepare(qz_tensor *q, st_checkpoint *c, size_t i, uint64_t b0, uint64_t b1,
               st_error *err)
{
	size_t f = 0;
	const st_tensor *t = st_checkpoint_tensor(c, i, &f);
	st_file *file = st_checkpoint_file(c, f);

	memset(q, 0, sizeof *q);
	if (st_quant_fp8_block(&q->l, 1, t->shape[0], t->shape[1], b0, b1) != ST_OK) {
		err->code = ST_EINVAL;
		err->sys_errno = 0;
		snprintf(err->message, sizeof err->message, "%s: tensor '%.*s': cannot quantize",
		         st_file_path(file), (int)(t->name_len > 200 ? 200 : t->name_len), t->name);
		return -1;
	}
	q->c = c;
	q->index = i;
	q->src_type = t->dtype;
	q->scale_name_len = t->name_len + 10;
	q->scale_name = malloc(q->scale_name_len + 1);
	if (!q->scale_name) {
		err->code = ST_ENOMEM;
		err->sys_errno = 0;
		snprintf(err->message, sizeof err->message, "out of memory");
		return -1;
	}
	memcpy(q->scale_name, t->name, t->name_len);
	memcpy(q->scale_name + t->name_len, "_scale_inv", 11);
	q->scale_shape[0] = q->l.scale_rows;
	q->scale_shape[1] = q->l.scale_cols;
	return 0;
}

void qz_free(qz_tensor *q)
{
	free(q->scale_name);
	q->scale_name = NULL;
}

/* Rows of one block row (at most the tensor's). */
static uint64_t block_height(const qz_tensor *q)
{
	return q->l.block_rows < q->l.rows ? q->l.block_rows : q->l.rows;
}

/* Bytes of the scales at the start of scratch, 8-aligned. */
static size_t scales_bytes(const qz_tensor *q)
{
	return ((size_t)q->l.scale_cols * 4 + 7) & ~(size_t)7;
}

/* Bytes of a block row's codes after the scales, 8-aligned: the input follows. */
static size_t codes_bytes(const qz_tensor *q)
{
	return ((size_t)(block_height(q) * q->l.cols) + 7) & ~(size_t)7;
}

size_t qz_scratch(const qz_tensor *q)
{
	return scales_bytes(q) + codes_bytes(q) +
	       (size_t)(block_height(q) * q->l.cols) * (st_dtype_bits(q->src_type) / 8);
}

/*
 * Quantize block row br into scratch: scales first, then the codes (only
 * the scales when that is all the caller wants).
 */
static int block_row(const qz_tensor *q, uint64_t br, int scale_only, void *scratch,
                     st_error *err)
{
	uint64_t r0 = br * q->l.block_rows, r1 = r0 + q->l.block_rows;
	size_t ss = st_dtype_bits(q->src_type) / 8;
	unsigned char *src = (unsigned char *)scratch + scales_bytes(q) + codes_bytes(q);
	if (r1 > q->l.rows)
		r1 = q->l.rows;
	int rc = st_checkpoint_read(q->c, q->index, r0 * q->l.cols * ss, src,
	                            (size_t)((r1 - r0) * q->l.cols * ss), err);
	if (rc != ST_OK)
		return rc;
	if (scale_only)
		rc = st_quant_fp8_scales(&q->l, scratch, q->src_type, src, r0, r1);
	else
		rc = st_quant_fp8_quantize(&q->l, (unsigned char *)scratch + scales_bytes(q), scratch,
		                           q->src_type, src, r0, r1);
	if (rc != ST_OK) {
		err->code = rc;
		err->sys_errno = 0;
		snprintf(err->message, sizeof err->message, "%s",
		         rc == ST_ENOMEM ? "out of memory" : "internal error: cannot quantize");
	}
	return rc;
}

int qz_range(const qz_tensor *q, int scale, unsigned char *out, uint64_t first, uint64_t n,
             void *scratch, st_error *err)
{
	/* Elements per block row of the output, and the first's offset. */
	uint64_t per = scale ? q->l.scale_cols : q->l.block_rows * q->l.cols;
	unsigned es = scale ? 4 : 1;
	if (n == 0 || per == 0)
		return ST_OK;
	for (uint64_t br = first / per, end = first + n; br * per < end; br++) {
		int rc = block_row(q, br, scale, scratch, err);
		if (rc != ST_OK)
			return rc;
		uint64_t a = br * per > first ? br * per : first;
		uint64_t b = (br + 1) * per < end ? (br + 1) * per : end;
		const unsigned char *src = (const unsigned char *)scratch +
		                           (scale ? 0 : scales_bytes(q)) + (a - br * per) * es;
		memcpy(out + (a - first) * es, src, (size_t)((b - a) * es));
	}
	return ST_OK;
}
