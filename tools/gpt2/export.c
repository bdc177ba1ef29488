/*
 * export.c - gpt2export's conversions between llm.c checkpoints and
 * Hugging Face GPT-2 snapshots: the mapping between the two layouts
 * (llm.c's [out, in] matrices and padded vocabulary, HF's Conv1D [in, out]
 * and names), and the sink that converts and writes values. The snapshot
 * folder is export_snapshot.c's, random snapshots export_random.c's, the
 * logits check export_check.c's.
 *
 * This file moves values; it never changes one except by the dtype
 * conversion asked for (st_convert: round to nearest even, exact widening).
 * The name table, the config parser and the loader are gpt2.c's; the .bin
 * format is llmc.c's. Memory: about one tensor (the largest layer matrix,
 * which must be whole to be transposed), whatever the model's size.
 *
 * Dimension letters: V vocabulary, Vp padded vocabulary, P context, L
 * layers, C channels.
 */
#include "gpt2/export.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2/export_impl.h"
#include "gpt2/internal.h"
#include "gpt2/llmc.h"


/* Stop when asked to (a signal): the caller's cleanup removes temporaries. */
static int cancelled(const gpt2_export_opts *o, char *err, size_t errlen)
{
	if (o->cancel && o->cancel())
		return gpt2_err(err, errlen, "interrupted");
	return 0;
}

/* Short for export_impl.h's chunk. */
#define CHUNK GPT2_EXPORT_CHUNK

/* A conversion that changes no value: the same type, or a widening. */
static int exact_conversion(st_dtype src, st_dtype dst)
{
	return src == dst || (dst == ST_DTYPE_F32 && (src == ST_DTYPE_BF16 ||
	                                              src == ST_DTYPE_F16));
}

/*
 * dst (cols x rows) = src (rows x cols) transposed, elements of es bytes;
 * in 32 x 32 blocks so both sides stay in cache.
 */
static void transpose(void *dst, const void *src, size_t rows, size_t cols,
                      size_t es)
{
	const char *s = src;
	char *d = dst;
	enum { B = 32 };
	for (size_t r0 = 0; r0 < rows; r0 += B) {
		size_t r1 = r0 + B < rows ? r0 + B : rows;
		for (size_t c0 = 0; c0 < cols; c0 += B) {
			size_t c1 = c0 + B < cols ? c0 + B : cols;
			for (size_t r = r0; r < r1; r++)
				for (size_t c = c0; c < c1; c++)
					memcpy(d + (c * rows + r) * es,
					       s + (r * cols + c) * es, es);
		}
	}
}

/*
 * Elements of a buffer for the largest per-layer Conv1D matrix (4C x C),
 * transposed whole, and for a chunk.
 */
static size_t max_matrix_numel(const gpt2_config *cfg)
{
	size_t n = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		if (!gpt2_param(s)->conv1d)
			continue;
		size_t k = (size_t)gpt2_param_numel(cfg, s);
		if (k > n)
			n = k;
	}
	return n > CHUNK ? n : CHUNK;
}

/* ---- moving values ------------------------------------------------------- */

int gpt2_sink_init(gpt2_sink *k, st_dtype dtype, const gpt2_export_opts *o,
                   char *err, size_t errlen)
{
	memset(k, 0, sizeof *k);
	k->dtype = dtype;
	k->o = o;
	k->buf = malloc(CHUNK * gpt2_dtype_size(dtype));
	return k->buf ? 0 : gpt2_err(err, errlen, "out of memory");
}

void gpt2_sink_free(gpt2_sink *k)
{
	cli_progress_done(&k->prog);
	free(k->buf);
}

int gpt2_sink_put(gpt2_sink *k, st_dtype t, const void *src, size_t n,
                  char *err, size_t errlen)
{
	size_t es = gpt2_dtype_size(k->dtype), ts = gpt2_dtype_size(t);
	for (size_t off = 0; off < n; off += CHUNK) {
		size_t m = n - off < CHUNK ? n - off : CHUNK;
		if (cancelled(k->o, err, errlen))
			return -1;
		st_convert(k->dtype, k->buf, t, (const char *)src + off * ts, m,
		           NULL);
		st_error e;
		if (k->st && st_writer_write(k->st, k->buf, m * es, &e) != ST_OK)
			return gpt2_err(err, errlen, "%s", e.message);
		if (k->llmc && llmc_writer_write(k->llmc, k->buf, m * es, err,
		                                 errlen))
			return -1;
		cli_progress_add(&k->prog, (uint64_t)m * es);
	}
	return 0;
}

/*
 * Where values come from: a slot of an llm.c file from element base on, or
 * tensor i of a checkpoint; either holds elements of dtype.
 */
typedef struct source {
	llmc_reader *llmc;
	int slot;
	uint64_t base;
	st_checkpoint *ck;
	size_t i;
	st_dtype dtype;
} source;

/* n elements from element off of the source into buf. */
static int source_read(const source *s, uint64_t off, void *buf, size_t n,
                       char *err, size_t errlen)
{
	if (s->llmc)
		return llmc_read(s->llmc, s->slot, s->base + off, buf, n, err,
		                 errlen);
	size_t es = gpt2_dtype_size(s->dtype);
	st_error e;
	if (st_checkpoint_read(s->ck, s->i, off * es, buf, n * es, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	return 0;
}

/*
 * Copy one tensor of n elements from s to k. A Conv1D matrix, stored as
 * rows x cols, is transposed on its way (between the two layouts) and so
 * read whole into a and b; anything else (rows 0) goes through a in chunks.
 */
static int copy_tensor(const source *s, gpt2_sink *k, size_t n, size_t rows,
                       size_t cols, void *a, void *b, char *err, size_t errlen)
{
	if (rows) {
		if (source_read(s, 0, a, n, err, errlen))
			return -1;
		transpose(b, a, rows, cols, gpt2_dtype_size(s->dtype));
		return gpt2_sink_put(k, s->dtype, b, n, err, errlen);
	}
	for (size_t off = 0; off < n; off += CHUNK) {
		size_t m = n - off < CHUNK ? n - off : CHUNK;
		if (source_read(s, off, a, m, err, errlen) ||
		    gpt2_sink_put(k, s->dtype, a, m, err, errlen))
			return -1;
	}
	return 0;
}

/* ---- llm.c -> HF --------------------------------------------------------- */

/* Warn when the padding rows V..Vp-1 of wte are not all zero. */
static int check_padding(llmc_reader *r, void *buf, const gpt2_export_opts *o,
                         char *err, size_t errlen)
{
	const llmc_header *h = llmc_reader_header(r);
	uint64_t C = (uint64_t)h->channels;
	uint64_t begin = (uint64_t)h->vocab_size * C;
	uint64_t end = (uint64_t)h->padded_vocab_size * C;
	size_t es = gpt2_dtype_size(llmc_reader_dtype(r));
	for (uint64_t off = begin; off < end;) {
		size_t n = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
		if (llmc_read(r, GPT2_WTE, off, buf, n, err, errlen))
			return -1;
		const unsigned char *b = buf;
		for (size_t i = 0; i < n * es; i++) {
			if (b[i] != 0) {
				uint64_t at = off + i / es;
				st_problem_report(o->warn, o->warn_ctx, ST_PROBLEM_WARNING, "%s: padding row %llu of wte (rows %ld..%ld pad "
				      "V = %ld to Vp = %ld) is not zero; the snapshot "
				      "drops it, so a .bin made back from it holds "
				      "zeros there", llmc_reader_path(r),
				      (unsigned long long)(at / C),
				      (long)h->vocab_size, (long)h->padded_vocab_size - 1,
				      (long)h->vocab_size, (long)h->padded_vocab_size);
				return 0;
			}
		}
		off += n;
	}
	return 0;
}

int gpt2_export_llmc_to_hf(const char *in, const char *out_dir,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	llmc_reader *r;
	if (llmc_open(&r, in, err, errlen))
		return -1;
	gpt2_config cfg;
	llmc_header_config(llmc_reader_header(r), &cfg);
	st_dtype src = llmc_reader_dtype(r);
	st_dtype dst = o->dtype >= 0 ? (st_dtype)o->dtype : src;
	if (gpt2_snapshot_dtype(dst, err, errlen)) {
		llmc_close(r);
		return -1;
	}
	memset(res, 0, sizeof *res);
	res->src_dtype = (int)src;
	res->dst_dtype = dst;
	res->exact = exact_conversion(src, dst);

	size_t maxn = max_matrix_numel(&cfg);
	size_t es = gpt2_dtype_size(src);
	void *a = malloc(maxn * es), *b = malloc(maxn * es);
	gpt2_snapshot_out snap;
	int rc = -1;
	memset(&snap, 0, sizeof snap);
	if (!a || !b) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (check_padding(r, a, o, err, errlen) ||
	    gpt2_snapshot_out_open(&snap, out_dir, &cfg, dst, o, "exporting", err,
	                           errlen))
		goto out;

	/* Each tensor in the writer's order, read from where llm.c put it. */
	for (size_t i = 0; i < st_writer_n_tensors(snap.w); i++) {
		const st_tensor *t = st_writer_tensor(snap.w, i);
		int slot, layer;
		gpt2_writer_slot(&cfg, t, &slot, &layer);
		size_t n = (size_t)t->n_elements;
		/* wte: its first V rows only; the padding stays behind. */
		source s = {.llmc = r, .slot = slot, .base = (uint64_t)layer * n,
		            .dtype = src};
		/* llm.c's [out, in] -> HF's [in, out]. */
		size_t rows = gpt2_param(slot)->conv1d ? (size_t)t->shape[1] : 0;
		if (copy_tensor(&s, &snap.sink, n, rows, (size_t)t->shape[0], a, b,
		                err, errlen))
			goto out;
		res->parameters += n;
	}
	if (gpt2_snapshot_out_finish(&snap, &cfg, err, errlen))
		goto out;
	rc = 0;
out:
	gpt2_snapshot_out_free(&snap);
	free(a);
	free(b);
	llmc_close(r);
	return rc;
}

/* ---- HF -> llm.c --------------------------------------------------------- */

int gpt2_export_hf_to_llmc(const char *in, const char *out,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	char dir[4096];
	gpt2_config cfg;
	if (gpt2_config_dir(in, dir, sizeof dir, err, errlen) ||
	    gpt2_config_load(&cfg, dir, err, errlen))
		return -1;
	/* llm.c's layernorm hardcodes its epsilon. */
	if (cfg.layer_norm_eps != 1e-5f) {
		char path[4096 + 16];
		if (gpt2_join(path, sizeof path, dir, "config.json", err, errlen))
			return -1;
		return gpt2_err(err, errlen,
		                "%s: layer_norm_epsilon %g cannot be kept in an "
		                "llm.c checkpoint (llm.c always uses 1e-05)", path,
		                (double)cfg.layer_norm_eps);
	}
	st_checkpoint *ck;
	st_error e;
	if (st_checkpoint_open(&ck, in, ST_OPEN_TORCH, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message[0] ? e.message
		                                                : st_strerror(e.code));
	int L = cfg.num_layers;
	size_t nslots = (size_t)GPT2_NUM_SLOTS * (size_t)L;
	size_t *where = malloc(nslots * sizeof *where);
	size_t maxn = max_matrix_numel(&cfg);
	/* Up to F64 (8 bytes) per element in the source. */
	void *a = malloc(maxn * 8), *b = malloc(maxn * 8);
	gpt2_sink k;
	int rc = -1;
	memset(&k, 0, sizeof k);
	size_t head;
	if (!where || !a || !b) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (gpt2_checkpoint_index(ck, &cfg, where, &head, err, errlen) ||
	    gpt2_checkpoint_check_head(ck, &cfg, where, head, err, errlen))
		goto out;

	/* The output dtype: asked for, else BF16 only when all of it is. */
	int one = -2; /* the tensors' one dtype, or -1 when they mix */
	for (size_t i = 0; i < nslots; i++) {
		if (where[i] == SIZE_MAX)
			continue;
		int t = (int)st_checkpoint_tensor(ck, where[i], NULL)->dtype;
		one = one == -2 || one == t ? t : -1;
	}
	st_dtype dst = o->dtype >= 0 ? (st_dtype)o->dtype
	               : one == ST_DTYPE_BF16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
	if (llmc_dtype_version(dst) < 0) {
		gpt2_err(err, errlen, "an llm.c checkpoint holds F32 or BF16, not %s",
		         st_dtype_name(dst));
		goto out;
	}
	memset(res, 0, sizeof *res);
	res->src_dtype = one;
	res->dst_dtype = dst;
	res->exact = 1;

	llmc_header h;
	llmc_header_from_config(&h, &cfg, llmc_dtype_version(dst));
	if (gpt2_sink_init(&k, dst, o, err, errlen) ||
	    llmc_writer_open(&k.llmc, out, &h, err, errlen))
		goto out;
	if (o->progress)
		cli_progress_start(&k.prog, "exporting",
		                   llmc_file_size(&h) - LLMC_HEADER_BYTES);

	/* llm.c's order: slot by slot, each slot's layers in turn. */
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		for (int l = 0; l < gpt2_param_layers(&cfg, s); l++) {
			size_t i = where[(size_t)s * (size_t)L + (size_t)l];
			const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
			size_t n = (size_t)t->n_elements;
			res->exact &= exact_conversion(t->dtype, dst);
			source src = {.ck = ck, .i = i, .dtype = t->dtype};
			/* HF's [in, out] -> llm.c's [out, in]; vectors have no
			 * second dimension to read. */
			int conv = gpt2_param(s)->conv1d && t->ndim == 2;
			size_t rows = conv ? (size_t)t->shape[0] : 0;
			size_t cols = conv ? (size_t)t->shape[1] : 0;
			if (copy_tensor(&src, &k, n, rows, cols, a, b, err, errlen))
				goto out;
			res->parameters += n;
		}
		if (s == GPT2_WTE) {
			/* The padding rows V..Vp-1, zeros as llm.c's pad_vocab. */
			size_t pad = (size_t)(h.padded_vocab_size - h.vocab_size) *
			             (size_t)h.channels;
			memset(a, 0, CHUNK * sizeof(float));
			for (size_t off = 0; off < pad; off += CHUNK)
				if (gpt2_sink_put(&k, ST_DTYPE_F32, a,
				             pad - off < CHUNK ? pad - off : CHUNK, err,
				             errlen))
					goto out;
		}
	}
	if (llmc_writer_finish(k.llmc, err, errlen))
		goto out;
	rc = 0;
out:
	gpt2_sink_free(&k);
	llmc_writer_free(k.llmc);
	free(where);
	free(a);
	free(b);
	st_checkpoint_close(ck);
	return rc;
}
