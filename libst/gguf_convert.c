/*
 * gguf_convert.c - a GGUF file's tensors as one safetensors file
 * (st_gguf_write_safetensors, st/gguf.h): every tensor under its GGUF name,
 * row-major, decoded by the codec table (ggml_types.c) where it is
 * quantized, streamed through st_writer in bounded memory.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Elements decoded at a time: 64 Ki floats (256 KiB), whole blocks. */
#define CHUNK_ELEMS 65536u

int st_gguf_out_dtype(unsigned type, const st_gguf_convert_options *o, st_dtype *out)
{
	st_dtype same;
	int has_to = o && o->has_to;
	if (st_ggml_type_dtype(type, &same) == ST_OK) {
		*out = has_to && st_dtype_is_wide_float(same) ? o->to : same;
		return ST_OK;
	}
	if (st_ggml_to_f32(type, NULL, NULL, 0) != ST_OK)
		return ST_EUNSUPPORTED;
	*out = has_to ? o->to : ST_DTYPE_F32;
	return ST_OK;
}

/* Declare every tensor, row-major (dims reversed). */
static int declare(st_writer *w, const st_gguf *g, const st_gguf_convert_options *o, st_error *err)
{
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		st_dtype d;
		if (st_gguf_out_dtype(t->type, o, &d) != ST_OK) {
			const char *tn = st_ggml_type_name(t->type);
			if (tn)
				return st__error(err, ST_EUNSUPPORTED,
				                 "%s: tensor '%s': ggml type %s has no "
				                 "decoder",
				                 st_gguf_path(g), t->name, tn);
			return st__error(err, ST_EUNSUPPORTED,
			                 "%s: tensor '%s': ggml type %u is unknown to "
			                 "libst; its values cannot be converted",
			                 st_gguf_path(g), t->name, t->type);
		}
		uint64_t shape[ST_GGUF_MAX_DIMS];
		for (unsigned k = 0; k < t->ndim; k++)
			shape[k] = t->dims[t->ndim - 1 - k];
		int rc = st_writer_add(w, t->name, t->name_len, d, t->ndim, shape, err);
		if (rc != ST_OK)
			return rc;
	}
	return ST_OK;
}

struct pump {
	st_writer *w;
	const st_convert_run *r;
	float *f32;
	unsigned char *out;
	st_convert_stats stats;
};

/* One tensor's bytes, decoded and converted a chunk at a time. */
static int pump_tensor(struct pump *p, const st_gguf *g, size_t i, st_dtype d, st_error *err)
{
	const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
	const unsigned char *src = st_gguf_tensor_data(g, i);
	unsigned block, bytes;
	if (st_ggml_type_block(t->type, &block, &bytes) != ST_OK)
		return st__error(err, ST_EUNSUPPORTED, "%s: tensor '%s': ggml type %u",
		                 st_gguf_path(g), t->name, t->type);
	st_dtype same;
	int plain = st_ggml_type_dtype(t->type, &same) == ST_OK;
	/* A type stored as safetensors stores it: its bytes as they are. */
	if (plain && same == d) {
		int rc = st_writer_write(p->w, src, (size_t)t->n_bytes, err);
		if (rc == ST_OK && p->r && p->r->progress)
			p->r->progress(p->r->ctx, t->n_bytes);
		return rc;
	}
	uint64_t per = CHUNK_ELEMS / block * block;
	unsigned osize = st_dtype_bits(d) / 8;
	for (uint64_t done = 0; done < t->n_elements;) {
		if (p->r && p->r->cancel && p->r->cancel(p->r->ctx))
			return st__error(err, ST_EIO, "%s: cancelled", st_gguf_path(g));
		uint64_t n = t->n_elements - done < per ? t->n_elements - done : per;
		const unsigned char *at = src + done / block * bytes;
		int rc;
		if (plain)
			rc = st_convert(d, p->out, same, at, (size_t)n, &p->stats);
		else {
			rc = st_ggml_to_f32(t->type, at, p->f32, n);
			if (rc == ST_OK)
				rc = st_convert(d, p->out, ST_DTYPE_F32, p->f32, (size_t)n,
				                &p->stats);
		}
		if (rc != ST_OK)
			return st__error(err, rc,
			                 "%s: tensor '%s': cannot convert %s "
			                 "to %s",
			                 st_gguf_path(g), t->name, st_ggml_type_name(t->type),
			                 st_dtype_name(d));
		rc = st_writer_write(p->w, p->out, (size_t)n * osize, err);
		if (rc != ST_OK)
			return rc;
		if (p->r && p->r->progress)
			p->r->progress(p->r->ctx, n / block * bytes);
		done += n;
	}
	return ST_OK;
}

/*
 * The GGUF indices in the order the writer takes data (st_canonical_order
 * of the declared names and dtypes), and each one's output dtype.
 */
static int write_order(const st_gguf *g, const st_gguf_convert_options *o, size_t *order,
                       st_dtype *dt, st_error *err)
{
	size_t n = st_gguf_n_tensors(g);
	st_tensor *t = calloc(n ? n : 1, sizeof *t);
	if (!t)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *gt = st_gguf_tensor_at(g, i);
		t[i].name = gt->name;
		t[i].name_len = gt->name_len;
		if (st_gguf_out_dtype(gt->type, o, &dt[i]) != ST_OK)
			dt[i] = ST_DTYPE_F32; /* declare() has refused it already */
		t[i].dtype = dt[i];
	}
	int rc = st_canonical_order(t, n, order, err);
	free(t);
	return rc;
}

/* To path (fd < 0) or to the descriptor fd, path then naming it. */
static int write_st(const st_gguf *g, const char *path, int fd, const st_gguf_convert_options *o,
                    const st_convert_run *r, st_convert_stats *stats, st_error *err)
{
	ST__REQUIRE(g && path);
	if (o && o->has_to && o->to != ST_DTYPE_F32 && o->to != ST_DTYPE_F16 &&
	    o->to != ST_DTYPE_BF16)
		return st__error(err, ST_EINVAL,
		                 "a GGUF file converts to F32, F16 "
		                 "or BF16, not %s",
		                 st_dtype_name(o->to));
	size_t n = st_gguf_n_tensors(g);
	struct pump p = {.r = r};
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	st_dtype *dt = malloc((n ? n : 1) * sizeof *dt);
	p.f32 = malloc(CHUNK_ELEMS * sizeof(float));
	p.out = malloc(CHUNK_ELEMS * sizeof(double));
	int rc = ST_OK;
	if (!order || !dt || !p.f32 || !p.out)
		rc = st__error(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = st_writer_new(&p.w, err);
	if (rc == ST_OK)
		rc = declare(p.w, g, o, err);
	if (rc == ST_OK)
		rc = write_order(g, o, order, dt, err);
	if (rc == ST_OK)
		rc = fd >= 0 ? st_writer_open_fd(p.w, fd, path, err)
		             : st_writer_open(p.w, path, err);
	for (size_t k = 0; rc == ST_OK && k < n; k++)
		rc = pump_tensor(&p, g, order[k], dt[order[k]], err);
	if (rc == ST_OK)
		rc = st_writer_finish(p.w, err);
	st_writer_free(p.w);
	if (stats) {
		stats->overflow += p.stats.overflow;
		stats->underflow += p.stats.underflow;
	}
	free(order);
	free(dt);
	free(p.f32);
	free(p.out);
	return rc;
}

int st_gguf_write_safetensors(const st_gguf *g, const char *path, const st_gguf_convert_options *o,
                              const st_convert_run *r, st_convert_stats *stats, st_error *err)
{
	return write_st(g, path, -1, o, r, stats, err);
}

int st_gguf_write_safetensors_fd(const st_gguf *g, int fd, const char *name,
                                 const st_gguf_convert_options *o, const st_convert_run *r,
                                 st_convert_stats *stats, st_error *err)
{
	ST__REQUIRE(fd >= 0 && name);
	return write_st(g, name, fd, o, r, stats, err);
}
