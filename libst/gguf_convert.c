/*
 * gguf_convert.c - a GGUF file's tensors as one safetensors file
 * (st_gguf_write_safetensors, st/gguf.h): every tensor under its GGUF name,
 * row-major, decoded by the codec table (ggml_types.c) where it is
 * quantized, streamed through st_writer in bounded memory; or, with
 * o->hf, under the Hugging Face names of the Llama family (gguf_hf.c) with
 * llama's q/k rows put back in HF's order a row at a time, as one file or
 * as a snapshot directory with config.json and generation_config.json
 * (st_gguf_write_snapshot).
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

/* A name as the output has it: the GGUF's, or with o->hf HF's. */
#define NAME_MAX_HF 128
struct plan {
	char (*names)[NAME_MAX_HF]; /* o->hf: each tensor's HF name */
	int *permute;               /* o->hf: enum st_arch_permute or 0 */
	int *skip;                  /* o->hf: a GGUF-only tensor, left out */
	size_t n_out;
};

static int is_hf(const st_gguf_convert_options *o)
{
	return o && o->hf;
}

/* With o->hf: every tensor's HF name, or left out when GGUF-only. */
static int plan_names(struct plan *p, const st_gguf *g, const st_gguf_convert_options *o,
                      st_error *err)
{
	size_t n = st_gguf_n_tensors(g);
	p->n_out = n;
	if (!is_hf(o))
		return ST_OK;
	p->names = calloc(n ? n : 1, sizeof *p->names);
	p->permute = calloc(n ? n : 1, sizeof *p->permute);
	p->skip = calloc(n ? n : 1, sizeof *p->skip);
	if (!p->names || !p->permute || !p->skip)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		st_error e;
		int rc = st_gguf_hf_name(g, i, p->names[i], NAME_MAX_HF, &p->permute[i], &e);
		if (rc == ST_ENOTFOUND) {
			p->skip[i] = 1;
			p->n_out--;
			continue;
		}
		if (rc != ST_OK) {
			if (err)
				*err = e;
			return rc;
		}
	}
	return ST_OK;
}

static void plan_free(struct plan *p)
{
	free(p->names);
	free(p->permute);
	free(p->skip);
}

static const char *out_name(const struct plan *p, const st_gguf_tensor *t, size_t i, size_t *len)
{
	if (!p->names) {
		*len = t->name_len;
		return t->name;
	}
	*len = strlen(p->names[i]);
	return p->names[i];
}

/* Declare every tensor, row-major (dims reversed). */
static int declare(st_writer *w, const st_gguf *g, const st_gguf_convert_options *o,
                   const struct plan *p, st_error *err)
{
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		st_dtype d;
		if (p->skip && p->skip[i])
			continue;
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
		size_t len;
		const char *name = out_name(p, t, i, &len);
		int rc = st_writer_add(w, name, len, d, t->ndim, shape, err);
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

/* n elements of tensor t from src (whole blocks), decoded and converted a
 * chunk at a time. */
static int pump_range(struct pump *p, const st_gguf *g, const st_gguf_tensor *t,
                      const unsigned char *src, uint64_t n_elems, st_dtype d, st_error *err)
{
	unsigned block, bytes;
	if (st_ggml_type_block(t->type, &block, &bytes) != ST_OK)
		return st__error(err, ST_EUNSUPPORTED, "%s: tensor '%s': ggml type %u",
		                 st_gguf_path(g), t->name, t->type);
	st_dtype same;
	int plain = st_ggml_type_dtype(t->type, &same) == ST_OK;
	/* A type stored as safetensors stores it: its bytes as they are. */
	if (plain && same == d) {
		uint64_t nb = n_elems / block * bytes;
		int rc = st_writer_write(p->w, src, (size_t)nb, err);
		if (rc == ST_OK && p->r && p->r->progress)
			p->r->progress(p->r->ctx, nb);
		return rc;
	}
	uint64_t per = CHUNK_ELEMS / block * block;
	unsigned osize = st_dtype_bits(d) / 8;
	for (uint64_t done = 0; done < n_elems;) {
		if (p->r && p->r->cancel && p->r->cancel(p->r->ctx))
			return st__error(err, ST_EIO, "%s: cancelled", st_gguf_path(g));
		uint64_t n = n_elems - done < per ? n_elems - done : per;
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

/* The heads a permuted q (head_count) or k (head_count_kv, else
 * head_count) was permuted with, as llama.cpp reads them. */
static int permute_heads(const st_gguf *g, const st_gguf_tensor *t, int which, uint64_t *heads,
                         st_error *err)
{
	long k = which == ST_ARCH_PERMUTE_K ? st_gguf_find_kv(g, "llama.attention.head_count_kv")
	                                    : -1;
	if (k < 0)
		k = st_gguf_find_kv(g, "llama.attention.head_count");
	const st_gguf_value *v = k < 0 ? NULL : &st_gguf_kv_at(g, (size_t)k)->value;
	if (!v || v->type != ST_GGUF_UINT32 || v->v.u == 0)
		return st__error(err, ST_EFORMAT,
		                 "%s: tensor '%s': no llama.attention.head_count to put its "
		                 "rows back in Hugging Face's order",
		                 st_gguf_path(g), t->name);
	*heads = v->v.u;
	return ST_OK;
}

/*
 * llama's q/k: HF row r is GGUF row h*D + 2i + j for r = h*D + j*D/2 + i
 * (st_arch_permuted_row's map read backwards), written a row at a time;
 * a bias is a tensor of one-element rows.
 */
static int pump_permuted(struct pump *p, const st_gguf *g, size_t ti, int which, st_dtype d,
                         st_error *err)
{
	const st_gguf_tensor *t = st_gguf_tensor_at(g, ti);
	const unsigned char *src = st_gguf_tensor_data(g, ti);
	uint64_t heads = 0;
	int rc = permute_heads(g, t, which, &heads, err);
	if (rc != ST_OK)
		return rc;
	unsigned block, bytes;
	if (st_ggml_type_block(t->type, &block, &bytes) != ST_OK)
		return st__error(err, ST_EUNSUPPORTED, "%s: tensor '%s': ggml type %u",
		                 st_gguf_path(g), t->name, t->type);
	uint64_t cols = t->ndim == 1 ? 1 : t->dims[0];
	uint64_t rows = t->ndim == 1 ? t->dims[0] : t->dims[1];
	if (t->ndim > 2 || cols % block)
		return st__error(err, ST_EFORMAT,
		                 "%s: tensor '%s': not a matrix or vector of whole %s blocks",
		                 st_gguf_path(g), t->name, st_ggml_type_name(t->type));
	uint64_t row_bytes = cols / block * bytes, unused;
	if (st_arch_permuted_row(0, rows, heads, &unused) != ST_OK)
		return st__error(err, ST_EFORMAT,
		                 "%s: tensor '%s': %llu rows are not %llu heads of an even "
		                 "size",
		                 st_gguf_path(g), t->name, (unsigned long long)rows,
		                 (unsigned long long)heads);
	uint64_t dh = rows / heads;
	for (uint64_t r = 0; r < rows; r++) {
		uint64_t h = r / dh, in = r % dh, j = in / (dh / 2), i = in % (dh / 2);
		uint64_t from = h * dh + 2 * i + j;
		rc = pump_range(p, g, t, src + from * row_bytes, cols, d, err);
		if (rc != ST_OK)
			return rc;
	}
	return ST_OK;
}

/* One tensor's bytes, decoded and converted a chunk at a time. */
static int pump_tensor(struct pump *p, const st_gguf *g, const struct plan *pl, size_t i,
                       st_dtype d, st_error *err)
{
	const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
	if (pl->permute && pl->permute[i])
		return pump_permuted(p, g, i, pl->permute[i], d, err);
	return pump_range(p, g, t, st_gguf_tensor_data(g, i), t->n_elements, d, err);
}

/*
 * The GGUF indices of the tensors written, in the order the writer takes
 * data (st_canonical_order of the declared names and dtypes), and each
 * tensor's output dtype.
 */
static int write_order(const st_gguf *g, const st_gguf_convert_options *o, const struct plan *p,
                       size_t *order, st_dtype *dt, st_error *err)
{
	size_t n = st_gguf_n_tensors(g), k = 0;
	st_tensor *t = calloc(n ? n : 1, sizeof *t);
	size_t *idx = malloc((n ? n : 1) * sizeof *idx);
	if (!t || !idx) {
		free(t);
		free(idx);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *gt = st_gguf_tensor_at(g, i);
		if (st_gguf_out_dtype(gt->type, o, &dt[i]) != ST_OK)
			dt[i] = ST_DTYPE_F32; /* declare() has refused it already */
		if (p->skip && p->skip[i])
			continue;
		t[k].name = out_name(p, gt, i, &t[k].name_len);
		t[k].dtype = dt[i];
		idx[k++] = i;
	}
	int rc = st_canonical_order(t, k, order, err);
	for (size_t m = 0; rc == ST_OK && m < k; m++)
		order[m] = idx[order[m]];
	free(t);
	free(idx);
	return rc;
}

/* Where write_st writes: a path, a descriptor or a snapshot's file. */
struct target {
	const char *path; /* or the descriptor's name */
	int fd;           /* >= 0: the descriptor */
	st_snapshot *snap;
};

static int open_target(st_writer *w, const struct target *to, st_error *err)
{
	if (to->snap)
		return st_snapshot_open_writer(to->snap, w, "model.safetensors", err);
	return to->fd >= 0 ? st_writer_open_fd(w, to->fd, to->path, err)
	                   : st_writer_open(w, to->path, err);
}

static int check_to(const st_gguf_convert_options *o, st_error *err)
{
	if (o && o->has_to && o->to != ST_DTYPE_F32 && o->to != ST_DTYPE_F16 &&
	    o->to != ST_DTYPE_BF16)
		return st__error(err, ST_EINVAL,
		                 "a GGUF file converts to F32, F16 "
		                 "or BF16, not %s",
		                 st_dtype_name(o->to));
	return ST_OK;
}

static int write_st(const st_gguf *g, const struct target *to, const st_gguf_convert_options *o,
                    const st_convert_run *r, st_convert_stats *stats, st_error *err)
{
	ST__REQUIRE(g && to->path);
	int rc = check_to(o, err);
	if (rc != ST_OK)
		return rc;
	size_t n = st_gguf_n_tensors(g);
	struct pump p = {.r = r};
	struct plan pl = {NULL, NULL, NULL, 0};
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	st_dtype *dt = malloc((n ? n : 1) * sizeof *dt);
	p.f32 = malloc(CHUNK_ELEMS * sizeof(float));
	p.out = malloc(CHUNK_ELEMS * sizeof(double));
	if (!order || !dt || !p.f32 || !p.out)
		rc = st__error(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = plan_names(&pl, g, o, err);
	if (rc == ST_OK)
		rc = st_writer_new(&p.w, err);
	if (rc == ST_OK)
		rc = declare(p.w, g, o, &pl, err);
	if (rc == ST_OK)
		rc = write_order(g, o, &pl, order, dt, err);
	if (rc == ST_OK)
		rc = open_target(p.w, to, err);
	for (size_t k = 0; rc == ST_OK && k < pl.n_out; k++)
		rc = pump_tensor(&p, g, &pl, order[k], dt[order[k]], err);
	if (rc == ST_OK)
		rc = st_writer_finish(p.w, err);
	st_writer_free(p.w);
	if (stats) {
		stats->overflow += p.stats.overflow;
		stats->underflow += p.stats.underflow;
	}
	plan_free(&pl);
	free(order);
	free(dt);
	free(p.f32);
	free(p.out);
	return rc;
}

int st_gguf_write_safetensors(const st_gguf *g, const char *path, const st_gguf_convert_options *o,
                              const st_convert_run *r, st_convert_stats *stats, st_error *err)
{
	struct target to = {path, -1, NULL};
	return write_st(g, &to, o, r, stats, err);
}

int st_gguf_write_safetensors_fd(const st_gguf *g, int fd, const char *name,
                                 const st_gguf_convert_options *o, const st_convert_run *r,
                                 st_convert_stats *stats, st_error *err)
{
	ST__REQUIRE(fd >= 0 && name);
	struct target to = {name, fd, NULL};
	return write_st(g, &to, o, r, stats, err);
}

/* torch_dtype: what token_embd.weight is written in (the matrices'). */
static st_dtype snapshot_dtype(const st_gguf *g, const st_gguf_convert_options *o)
{
	long e = st_gguf_find(g, "token_embd.weight");
	st_dtype d = ST_DTYPE_F32;
	if (e >= 0 && st_gguf_out_dtype(st_gguf_tensor_at(g, (size_t)e)->type, o, &d) != ST_OK)
		d = ST_DTYPE_F32;
	return d;
}

static int add_json(st_snapshot *s, const char *name, int rc, char *json, size_t len, st_error *err)
{
	if (rc == ST_OK)
		rc = st_snapshot_add_file(s, name, json, len, 0666, err);
	free(json);
	return rc;
}

int st_gguf_write_snapshot(const st_gguf *g, const char *dir, unsigned flags,
                           const st_gguf_convert_options *o, const st_convert_run *r,
                           st_convert_stats *stats, unsigned *lost, st_error *err)
{
	ST__REQUIRE(g && dir);
	st_gguf_convert_options hf = {0, ST_DTYPE_F32, 1};
	if (o) {
		hf = *o;
		hf.hf = 1;
	}
	const char *arch;
	int rc = check_to(&hf, err);
	if (rc == ST_OK)
		rc = st_gguf_hf_arch(g, &arch, err);
	if (rc == ST_OK && !strcmp(arch, "gpt2")) /* Conv1D's layout: gguf_hf_gpt2.c */
		return st__gguf_gpt2_write_snapshot(g, dir, flags, &hf, r, stats, lost, err);
	/* config.json first: a file it cannot describe writes nothing. */
	char *cfg = NULL, *gen = NULL;
	size_t cfg_len = 0, gen_len = 0;
	if (rc == ST_OK)
		rc = st_gguf_hf_config(g, snapshot_dtype(g, &hf), &cfg, &cfg_len, lost, err);
	if (rc == ST_OK)
		rc = st_gguf_hf_generation_config(g, &gen, &gen_len, err);
	/* The tokenizer files too: a malformed tokenizer writes nothing; none,
	 * or one that is not rebuilt, is said in *lost. */
	char *tok = NULL, *tcfg = NULL;
	size_t tok_len = 0, tcfg_len = 0;
	if (rc == ST_OK) {
		st_error te;
		int trc = st__gguf_tokenizer_files(g, &tok, &tok_len, &tcfg, &tcfg_len, &te);
		if (trc != ST_OK && trc != ST_ENOTFOUND && trc != ST_EUNSUPPORTED) {
			rc = trc;
			if (err)
				*err = te;
		} else if (trc != ST_OK && lost) {
			*lost |= trc == ST_ENOTFOUND ? ST_GGUF_HF_LOST_TOKENIZER
			                             : ST_GGUF_HF_LOST_TOKENIZER_UNSUPPORTED;
		}
	}
	st_snapshot *s = NULL;
	if (rc == ST_OK)
		rc = st_snapshot_open(&s, dir, flags, err);
	struct target to = {dir, -1, s};
	if (rc == ST_OK)
		rc = write_st(g, &to, &hf, r, stats, err);
	rc = add_json(s, "config.json", rc, cfg, cfg_len, err);
	rc = add_json(s, "generation_config.json", rc, gen, gen_len, err);
	if (tok) {
		rc = add_json(s, "tokenizer.json", rc, tok, tok_len, err);
		rc = add_json(s, "tokenizer_config.json", rc, tcfg, tcfg_len, err);
	}
	if (rc == ST_OK)
		rc = st__gguf_snapshot_commit(s, flags, r, err);
	st_snapshot_close(s);
	return rc;
}
