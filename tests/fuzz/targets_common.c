/*
 * targets_common.c - fuzz targets of the tools' shared modules
 * (tools/common), shared by the libFuzzer harness (fuzz.c with
 * -DFUZZ_COMMON, built by build.sh) and the corpus replay unit test
 * (tests/check_common_fuzz_corpus.c), which both #include this file.
 *
 *   fuzz_order      an __metadata__ "order" entry (the text up to a NUL,
 *                   if valid UTF-8) on a fixed file of five tensors:
 *                   order_tensors gives every tensor exactly once, the
 *                   listed ones first.
 *
 *   fuzz_dequant    a table of tensors (libst's st_quant_plan_*, which
 *                   the tools' dequantization runs on): the first byte
 *                   picks the FP8 block size, then each 4-byte record a
 *                   name from a small set of weight and scale names, a
 *                   dtype, a rank and a shape code; the file is written
 *                   and opened. st_quant_plan_inspect reports as many one-line
 *                   messages as it counts, maps nothing, and counts every
 *                   element once (scales apart, MXFP4 weights
 *                   dequantized); its layouts add up to its pairs;
 *                   st_quant_plan_build succeeds exactly when inspection finds
 *                   nothing, with the same pairs and counts, and else
 *                   fails with inspection's first message.
 *
 * It is not a test of messages or exact results: the unit tests do that.
 */
#include "common/order.h"
/* fuzz.h's file and mode-byte helpers are not needed here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "fuzz.h"
#pragma GCC diagnostic pop

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A new writer, and the temporary file (path: a mkstemp template) it is for. */
static st_writer *fz_temp_writer(char *path)
{
	st_writer *w;
	st_error e;
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK(st_writer_new(&w, &e) == ST_OK);
	return w;
}

static void fuzz_order(const unsigned char *data, size_t size)
{
	static const char *names[] = {"a", "b", "a.b", "h.0.ln_1", ","};
	enum { N = 5 };
	char *order = malloc(size + 1);
	CHECK(order != NULL);
	memcpy(order, data, size);
	order[size] = 0;
	char path[] = "/tmp/fuzz_order_XXXXXX";
	st_writer *w = fz_temp_writer(path);
	st_error e;
	if (st_writer_set_meta(w, "order", order, &e) != ST_OK) {
		st_writer_free(w); /* not UTF-8: nothing to walk */
		unlink(path);
		free(order);
		return;
	}
	for (int i = 0; i < N; i++)
		CHECK(st_writer_add(w, names[i], strlen(names[i]), ST_DTYPE_U8, 0,
		                    NULL, &e) == ST_OK);
	unsigned char zeros[N] = {0};
	CHECK(st_writer_open(w, path, &e) == ST_OK);
	CHECK(st_writer_write(w, zeros, N, &e) == ST_OK);
	CHECK(st_writer_finish(w, &e) == ST_OK);
	st_writer_free(w);
	st_checkpoint *ck;
	CHECK(st_checkpoint_open(&ck, path, 0, &e) == ST_OK);
	size_t *idx;
	CHECK(order_tensors(ck, &idx) == 1);
	unsigned char seen[N] = {0};
	for (size_t k = 0; k < N; k++) {
		CHECK(idx[k] < N && !seen[idx[k]]);
		seen[idx[k]] = 1;
	}
	free(idx);
	st_checkpoint_close(ck);
	unlink(path);
	free(order);
}

struct fz_reports {
	int n;
	char first[600];
	const char *path;
};

static void fz_on_mismatch(void *ctx, const char *message)
{
	struct fz_reports *r = ctx;
	CHECK(message[0] && !strchr(message, '\n'));
	CHECK(strncmp(message, r->path, strlen(r->path)) == 0);
	if (r->n++ == 0)
		snprintf(r->first, sizeof r->first, "%s", message);
}

static void fuzz_dequant(const unsigned char *data, size_t size)
{
	static const char *const names[16] = {
		"a.weight", "a.weight_scale_inv", "a.weight_scale", "b.weight",
		"b.weight_scale_inv", "b.weight_scale", "m_blocks", "m_scales",
		"n_blocks", "n_scales", "x.bias", "x.weight", "x.weight_scale",
		"e.weight", "e.weight_scale_inv", "_blocks",
	};
	static const st_dtype types[8] = {
		ST_DTYPE_F8_E4M3, ST_DTYPE_F8_E5M2, ST_DTYPE_F32, ST_DTYPE_BF16,
		ST_DTYPE_F16, ST_DTYPE_F8_E8M0, ST_DTYPE_U8, ST_DTYPE_I32,
	};
	static const uint64_t dims[8] = {0, 1, 2, 3, 4, 5, 16, 33};
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	uint64_t b0 = 1 + (unsigned)(mode & 7), b1 = 1 + (unsigned)(mode >> 3);
	char path[] = "/tmp/fuzz_dequant_XXXXXX";
	st_writer *w = fz_temp_writer(path);
	st_error e;
	uint64_t bytes = 0;
	for (size_t k = 0; k + 4 <= size && k < 4 * 24; k += 4) {
		const unsigned char *r = data + k;
		unsigned ndim = (r[2] & 0x7f) % 5;
		uint64_t shape[4], n = 1;
		for (unsigned d = 0; d < ndim; d++) {
			/* two bits of r[3] and one of r[1] a dimension */
			shape[d] = dims[((r[3] >> (2 * d)) & 3) | (((r[1] >> (3 + d)) & 1u) << 2)];
			if (d == 3 && (r[2] & 0x80))
				shape[d] = 16; /* an MXFP4 block row */
			n *= shape[d];
		}
		if (n > 4096)
			continue; /* small files: it is the pairing that is fuzzed */
		const char *nm = names[r[0] & 15];
		/* A duplicate name, or an F4 count the writer refuses: left out. */
		(void)st_writer_add(w, nm, strlen(nm), types[r[1] & 7], ndim, shape, &e);
	}
	for (size_t i = 0; i < st_writer_n_tensors(w); i++)
		bytes += st_writer_tensor(w, i)->n_bytes;
	CHECK(st_writer_open(w, path, &e) == ST_OK);
	unsigned char *zeros = calloc(bytes ? bytes : 1, 1);
	CHECK(zeros != NULL);
	CHECK(st_writer_write(w, zeros, bytes, &e) == ST_OK);
	CHECK(st_writer_finish(w, &e) == ST_OK);
	st_writer_free(w);
	free(zeros);
	st_checkpoint *ck;
	CHECK(st_checkpoint_open(&ck, path, 0, &e) == ST_OK);
	size_t nt = st_checkpoint_n_tensors(ck);

	st_quant_plan p, b;
	struct fz_reports rep = {0, "", path};
	CHECK(st_quant_plan_inspect(&p, ck, b0, b1, fz_on_mismatch, &rep, &e) == 0);
	CHECK((size_t)rep.n == p.n_problems && p.n == nt);
	uint64_t elems = 0, scale_elems = 0, scale_bytes = 0, out = 0, paired_in = 0;
	size_t fp8 = 0, mx = 0, scales = 0;
	for (size_t i = 0; i < nt; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		const st_quant_tensor *d = &p.t[i];
		CHECK(d->data == NULL && d->scale_data == NULL);
		elems += t->n_elements;
		if (d->role == ST_QUANT_ROLE_SCALE) {
			scales++;
			scale_elems += t->n_elements;
			scale_bytes += t->n_bytes;
		} else if (d->role == ST_QUANT_ROLE_FP8 || d->role == ST_QUANT_ROLE_MXFP4) {
			fp8 += d->role == ST_QUANT_ROLE_FP8;
			mx += d->role == ST_QUANT_ROLE_MXFP4;
			CHECK(d->scale < nt && p.t[d->scale].role == ST_QUANT_ROLE_SCALE && p.t[d->scale].scale == i);
			out += d->n_out;
			paired_in += t->n_elements;
			CHECK(d->role == ST_QUANT_ROLE_MXFP4 ? d->n_out == 2 * t->n_elements : d->n_out == t->n_elements);
		}
	}
	CHECK(fp8 == p.n_fp8 && mx == p.n_mxfp4 && scales == p.n_scales && scale_bytes == p.scale_bytes);
	CHECK(p.parameters + scale_elems == elems - paired_in + out);
	st_quant_layout *l;
	size_t nl;
	CHECK(st_quant_plan_layouts(&p, ck, &l, &nl) == 0);
	size_t lw = 0;
	uint64_t lp = 0;
	for (size_t i = 0; i < nl; i++) {
		char line[256];
		st_quant_layout_describe(&l[i], line, sizeof line);
		CHECK(line[0] && l[i].weights > 0);
		lw += l[i].weights;
		lp += l[i].parameters;
	}
	CHECK(lw == fp8 + mx && lp == out);
	free(l);

	memset(&e, 0, sizeof e);
	int rc = st_quant_plan_build(&b, ck, b0, b1, &e);
	CHECK(rc == (p.n_problems ? ST_EFORMAT : ST_OK));
	if (rc == 0) {
		CHECK(b.n_fp8 == p.n_fp8 && b.n_mxfp4 == p.n_mxfp4 && b.n_scales == p.n_scales &&
		      b.scale_bytes == p.scale_bytes && b.parameters == p.parameters);
		for (size_t i = 0; i < nt; i++)
			CHECK(b.t[i].role == p.t[i].role && b.t[i].n_out == p.t[i].n_out);
	} else {
		CHECK(strcmp(e.message, rep.first) == 0);
	}
	st_quant_plan_free(&b);
	st_quant_plan_free(&p);
	st_checkpoint_close(ck);
	unlink(path);
}
