/*
 * gguf_convert.c - a GGUF file's tensors as one safetensors file
 * (st_gguf_write_safetensors, st/gguf.h): every tensor under its GGUF name,
 * row-major, decoded by the codec table (ggml_types.c) where it is
 * quantized, streamed through st_writer in bounded memory; or, with
 * o->hf, under the Hugging Face names of the Llama family (gguf_hf.c) with
 * llama's q/k rows put back in HF's order, as one file or as a snapshot
 * directory with config.json and generation_config.json
 * (st_gguf_write_snapshot). The data goes through st_stream_run as
 * stconvert's other writes do (convert_write.c): chunks of whole blocks,
 * decoded on the run's threads straight from the mapping, appended to
 * the writer in chunk order.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Elements decoded at a time into a worker's F32 scratch: 64 Ki floats
 * (256 KiB), whole blocks. */
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

/*
 * One output tensor as the stream (st/stream.h, recipe 1) sees it: a run
 * of GGUF blocks (a group each), which the work reads itself from the
 * mapping. A permuted llama q/k tensor's block g is in output row
 * g / per_row, which is GGUF row src_row() of it.
 */
struct gitem {
	size_t ti;             /* GGUF tensor index */
	st_dtype d, same;      /* output dtype; the GGUF's when plain */
	int plain;             /* a type with a dtype: no decoding */
	unsigned block, bytes; /* elements and bytes of a block */
	uint64_t per_row;      /* blocks per row */
	uint64_t heads;        /* the permutation's heads, 0: none */
	uint64_t rows;
};

struct job {
	const st_gguf *g;
	const st_convert_run *r;
	st_writer *w;
	const struct gitem *items;
	st_convert_stats *stats; /* one per worker */
};

/* Output bytes per chunk (and its buffer), and between starts of
 * writeback, as stconvert's other writes (convert_write.c). */
#define CHUNK_BYTES (4u << 20)
#define WRITEBACK_EVERY (64u << 20)

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

/* How tensor ti is read, decoded and converted to d; with which (a llama
 * q/k, enum st_arch_permute) its rows in HF's order. */
static int item_setup(const st_gguf *g, size_t ti, st_dtype d, int which, struct gitem *it,
                      st_error *err)
{
	const st_gguf_tensor *t = st_gguf_tensor_at(g, ti);
	memset(it, 0, sizeof *it);
	it->ti = ti;
	it->d = d;
	if (st_ggml_type_block(t->type, &it->block, &it->bytes) != ST_OK)
		return st__error(err, ST_EUNSUPPORTED, "%s: tensor '%s': ggml type %u",
		                 st_gguf_path(g), t->name, t->type);
	it->plain = st_ggml_type_dtype(t->type, &it->same) == ST_OK;
	uint64_t cols = t->ndim == 1 ? 1 : t->ndim ? t->dims[0] : 1;
	it->rows = t->ndim == 1 ? t->dims[0] : t->ndim ? t->dims[1] : 1;
	it->per_row = cols / it->block;
	if (!which)
		return ST_OK;
	int rc = permute_heads(g, t, which, &it->heads, err);
	if (rc != ST_OK)
		return rc;
	if (t->ndim > 2 || cols % it->block)
		return st__error(err, ST_EFORMAT,
		                 "%s: tensor '%s': not a matrix or vector of whole %s blocks",
		                 st_gguf_path(g), t->name, st_ggml_type_name(t->type));
	uint64_t unused;
	if (st_arch_permuted_row(0, it->rows, it->heads, &unused) != ST_OK)
		return st__error(err, ST_EFORMAT,
		                 "%s: tensor '%s': %llu rows are not %llu heads of an even "
		                 "size",
		                 st_gguf_path(g), t->name, (unsigned long long)it->rows,
		                 (unsigned long long)it->heads);
	return ST_OK;
}

/*
 * llama's q/k: HF row r is GGUF row h*D + 2i + j for r = h*D + j*D/2 + i
 * (st_arch_permuted_row's map read backwards); a bias is a tensor of
 * one-element rows.
 */
static uint64_t src_row(const struct gitem *it, uint64_t r)
{
	uint64_t dh = it->rows / it->heads;
	uint64_t h = r / dh, in = r % dh, j = in / (dh / 2), i = in % (dh / 2);
	return h * dh + 2 * i + j;
}

/* n blocks of it from src into out, decoded (through f32, CHUNK_ELEMS
 * floats) and converted a sub-chunk at a time. */
static int decode_blocks(const struct job *j, const struct gitem *it, const unsigned char *src,
                         uint64_t n, unsigned char *out, float *f32, st_convert_stats *stats,
                         st_error *err)
{
	if (it->plain && it->same == it->d) {
		memcpy(out, src, (size_t)(n * it->bytes));
		return ST_OK;
	}
	uint64_t per = CHUNK_ELEMS / it->block;
	size_t osize = st_dtype_bits(it->d) / 8;
	for (uint64_t done = 0; done < n;) {
		uint64_t k = n - done < per ? n - done : per, elems = k * it->block;
		const unsigned char *at = src + done * it->bytes;
		int rc;
		if (it->plain)
			rc = st_convert(it->d, out, it->same, at, (size_t)elems, stats);
		else {
			rc = st_ggml_to_f32(st_gguf_tensor_at(j->g, it->ti)->type, at, f32, elems);
			if (rc == ST_OK)
				rc = st_convert(it->d, out, ST_DTYPE_F32, f32, (size_t)elems,
				                stats);
		}
		if (rc != ST_OK) {
			const st_gguf_tensor *t = st_gguf_tensor_at(j->g, it->ti);
			return st__error(err, rc, "%s: tensor '%s': cannot convert %s to %s",
			                 st_gguf_path(j->g), t->name, st_ggml_type_name(t->type),
			                 st_dtype_name(it->d));
		}
		out += elems * osize;
		done += k;
	}
	return ST_OK;
}

static uint64_t out_bytes(const struct gitem *it, uint64_t n_blocks)
{
	return n_blocks * it->block * (st_dtype_bits(it->d) / 8);
}

/* A chunk's pieces (runs of blocks) decoded into chunk->out, on any
 * worker. */
static int gguf_work(void *ctx, const st_stream_chunk *c, st_error *err)
{
	const struct job *j = ctx;
	unsigned char *out = c->out;
	if (j->r && j->r->cancel && j->r->cancel(j->r->ctx)) {
		st__error(err, ST_EIO, "%s: cancelled", st_gguf_path(j->g));
		return -1;
	}
	for (size_t k = 0; k < c->n_pieces; k++) {
		const st_stream_piece *pc = &c->pieces[k];
		const struct gitem *it = &j->items[pc->item];
		const unsigned char *data = st_gguf_tensor_data(j->g, it->ti);
		st_convert_stats *stats = &j->stats[c->worker];
		for (uint64_t b = pc->group, end = pc->group + pc->n_groups; b < end;) {
			/* Up to the end of the row, whose source row is permuted. */
			uint64_t n = end - b, from = b;
			if (it->heads) {
				uint64_t r = b / it->per_row, in = b % it->per_row;
				if (n > it->per_row - in)
					n = it->per_row - in;
				from = src_row(it, r) * it->per_row + in;
			}
			if (decode_blocks(j, it, data + from * it->bytes, n, out, c->scratch, stats,
			                  err) != ST_OK)
				return -1;
			out += out_bytes(it, n);
			b += n;
		}
	}
	return 0;
}

/* chunk->out to the writer, in chunk order. */
static int gguf_sink(void *ctx, const st_stream_chunk *c, st_error *err)
{
	const struct job *j = ctx;
	uint64_t n = 0;
	for (size_t k = 0; k < c->n_pieces; k++)
		n += out_bytes(&j->items[c->pieces[k].item], c->pieces[k].n_groups);
	return st_writer_write(j->w, c->out, (size_t)n, err) == ST_OK ? 0 : -1;
}

/* Progress in input bytes: the blocks the chunk decoded. */
static void gguf_progress(void *ctx, const st_stream_chunk *c, uint64_t bytes)
{
	const struct job *j = ctx;
	for (size_t k = 0; k < c->n_pieces; k++)
		bytes += c->pieces[k].n_groups * j->items[c->pieces[k].item].bytes;
	j->r->progress(j->r->ctx, bytes);
}

/*
 * The data of the n tensors order[] (output dtypes dt[], by GGUF index)
 * through the stream on r's threads: chunks of whole blocks decoded on
 * any worker, written in order, so the bytes do not depend on the count.
 * stats gains what narrowing lost.
 */
static int pump_all(st_writer *w, const st_gguf *g, const struct plan *pl, const size_t *order,
                    size_t n, const st_dtype *dt, const st_convert_run *r, st_convert_stats *stats,
                    st_error *err)
{
	unsigned threads = r && r->threads ? r->threads : 1;
	struct gitem *items = calloc(n ? n : 1, sizeof *items);
	st_stream_item *si = calloc(n ? n : 1, sizeof *si);
	st_convert_stats *ws = calloc(threads, sizeof *ws);
	int rc = items && si && ws ? ST_OK : st__error(err, ST_ENOMEM, "out of memory");
	size_t out_size = CHUNK_BYTES;
	for (size_t k = 0; rc == ST_OK && k < n; k++) {
		size_t ti = order[k];
		rc = item_setup(g, ti, dt[ti], pl->permute ? pl->permute[ti] : 0, &items[k], err);
		if (rc != ST_OK)
			break;
		si[k].tensor[0] = ti;
		si[k].n_groups = st_gguf_tensor_at(g, ti)->n_elements / items[k].block;
		si[k].group_bytes[0] = 0; /* read by the work, from the mapping */
		si[k].cost = (unsigned)out_bytes(&items[k], 1);
		if (si[k].cost > out_size) /* a chunk holds at least one block */
			out_size = si[k].cost;
	}
	struct job j = {g, r, w, items, ws};
	st_stream_config cfg = {
		.items = si,
		.n_items = n,
		.chunk_size = CHUNK_BYTES,
		.pack = 1,
		.threads = threads,
		.out_size = out_size,
		.scratch_size = CHUNK_ELEMS * sizeof(float),
		.work = gguf_work,
		.sink = gguf_sink,
		.progress = r && r->progress ? gguf_progress : NULL,
		.ctx = &j,
	};
	if (rc == ST_OK)
		rc = st_stream_run(&cfg, err);
	for (unsigned k = 0; rc == ST_OK && stats && k < threads; k++) {
		stats->overflow += ws[k].overflow;
		stats->underflow += ws[k].underflow;
	}
	free(items);
	free(si);
	free(ws);
	return rc;
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
	st_writer *w = NULL;
	struct plan pl = {NULL, NULL, NULL, 0};
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	st_dtype *dt = malloc((n ? n : 1) * sizeof *dt);
	if (!order || !dt)
		rc = st__error(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = plan_names(&pl, g, o, err);
	if (rc == ST_OK)
		rc = st_writer_new(&w, err);
	if (rc == ST_OK)
		rc = declare(w, g, o, &pl, err);
	if (rc == ST_OK)
		rc = write_order(g, o, &pl, order, dt, err);
	/* As stconvert's other writes: the disk works while the data is still
	 * coming, so the final fsync has little left to wait for (set before
	 * opening: a pipe turns it off). */
	if (rc == ST_OK)
		st_writer_set_writeback(w, WRITEBACK_EVERY);
	if (rc == ST_OK)
		rc = open_target(w, to, err);
	if (rc == ST_OK)
		rc = pump_all(w, g, &pl, order, pl.n_out, dt, r, stats, err);
	if (rc == ST_OK)
		rc = st_writer_finish(w, err);
	st_writer_free(w);
	plan_free(&pl);
	free(order);
	free(dt);
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
