/*
 * gguf_hf_gpt2.c - a GPT-2 GGUF back as a Hugging Face GPT2LMHeadModel
 * snapshot (st_gguf_write_snapshot's gpt2 case): every tensor of the file
 * a GPT-2 parameter under its HF name (st_arch_from_gguf), the Conv1D
 * weights (c_attn, c_proj, c_fc, mlp.c_proj) put back from GGUF's
 * [out, in] rows into HF's [in, out], no lm_head (GPT-2 ties it to wte),
 * config.json and generation_config.json (gguf_hf.c), and the tokenizer
 * files HF GPT-2 snapshots carry: vocab.json, merges.txt, tokenizer.json
 * and tokenizer_config.json (gguf_tokenizer.c).
 *
 * Memory: a transposed weight is written a band of HF rows at a time: for
 * a band of T input columns (T = 64, or one block of a larger type),
 * every GGUF row's T values are decoded into a T x out tile, which is
 * converted and written; each block is decoded once. The tile is
 * T * out floats (never more than the tensor) plus its converted copy
 * (GPT-2 XL's c_fc, out 6400, in a 256-element type: 6.5 MB each). Other
 * tensors go a chunk of 64 Ki elements at a time.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_ELEMS 65536u
#define TILE_MIN 64u
#define NAME_MAX_HF 128
/* A band's width at most: ggml's largest block is 256. */
#define ROW_MAX 4096u

struct g2_tensor {
	size_t gi;              /* the GGUF tensor */
	char name[NAME_MAX_HF]; /* its HF name */
	int transpose;          /* a Conv1D weight */
	st_dtype dtype;         /* written as */
};

struct g2_hparams {
	uint64_t embd, ff, ctx, layers, vocab;
};

static int hparam(const st_gguf *g, const char *key, uint64_t *out, st_error *err)
{
	long k = st_gguf_find_kv(g, key);
	const st_gguf_value *v = k < 0 ? NULL : &st_gguf_kv_at(g, (size_t)k)->value;
	int ok = v && (v->type == ST_GGUF_UINT32 || v->type == ST_GGUF_UINT64 ||
	               ((v->type == ST_GGUF_INT32 || v->type == ST_GGUF_INT64) && v->v.i >= 0));
	if (!ok || v->v.u < 1 || v->v.u > (1ull << 31))
		return st__error(err, ST_EFORMAT, "%s: %s is missing or not a count from 1 to 2^31",
		                 st_gguf_path(g), key);
	*out = v->v.u;
	return ST_OK;
}

static int read_hparams(const st_gguf *g, struct g2_hparams *h, st_error *err)
{
	int rc = hparam(g, "gpt2.embedding_length", &h->embd, err);
	if (rc == ST_OK)
		rc = hparam(g, "gpt2.context_length", &h->ctx, err);
	if (rc == ST_OK)
		rc = hparam(g, "gpt2.block_count", &h->layers, err);
	h->ff = 4 * h->embd;
	if (rc == ST_OK && st_gguf_find_kv(g, "gpt2.feed_forward_length") >= 0)
		rc = hparam(g, "gpt2.feed_forward_length", &h->ff, err);
	long e = st_gguf_find(g, "token_embd.weight");
	if (rc == ST_OK && e < 0)
		rc = st__error(err, ST_EFORMAT, "%s: no token_embd.weight", st_gguf_path(g));
	if (rc == ST_OK)
		h->vocab = st_gguf_tensor_at(g, (size_t)e)->dims[1];
	return rc;
}

/* The GGUF dims {d0, d1} (d1 0 for a vector) a GPT-2 tensor must have. */
static void want_dims(const struct g2_hparams *h, const char *gguf, uint64_t d[2])
{
	const char *s = strrchr(gguf, '.');
	const char *base = gguf;
	if (!strncmp(gguf, "blk.", 4)) /* blk.N.<base> */
		base = strchr(gguf + 4, '.') + 1;
	size_t bl = (size_t)(s - base);
	int weight = !strcmp(s, ".weight");
	uint64_t C = h->embd;
	d[1] = 0;
	if (!strncmp(base, "token_embd", bl))
		d[0] = C, d[1] = h->vocab;
	else if (!strncmp(base, "position_embd", bl))
		d[0] = C, d[1] = h->ctx;
	else if (!strncmp(base, "attn_qkv", bl))
		d[0] = weight ? C : 3 * C, d[1] = weight ? 3 * C : 0;
	else if (!strncmp(base, "ffn_up", bl))
		d[0] = weight ? C : h->ff, d[1] = weight ? h->ff : 0;
	else if (!strncmp(base, "ffn_down", bl))
		d[0] = weight ? h->ff : C, d[1] = weight ? C : 0;
	else if (!strncmp(base, "attn_output", bl))
		d[0] = C, d[1] = weight ? C : 0;
	else /* the LayerNorms */
		d[0] = C;
}

/* Every tensor a GPT-2 parameter of the file's shape, each one once. */
static int plan(const st_gguf *g, const struct g2_hparams *h, const st_gguf_convert_options *o,
                struct g2_tensor *p, st_error *err)
{
	size_t n = st_gguf_n_tensors(g);
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		char q[160];
		st__qname(q, sizeof q, t->name, t->name_len);
		st_arch_gguf_info info;
		if (strlen(t->name) != t->name_len ||
		    st_arch_from_gguf("gpt2", t->name, p[i].name, sizeof p[i].name, &info) != ST_OK)
			return st__error(err, ST_EFORMAT, "%s: tensor '%s': not a GPT-2 tensor",
			                 st_gguf_path(g), q);
		if (info.layer >= 0 && (uint64_t)info.layer >= h->layers)
			return st__error(err, ST_EFORMAT,
			                 "%s: tensor '%s': layer %d, past gpt2.block_count %llu",
			                 st_gguf_path(g), q, info.layer,
			                 (unsigned long long)h->layers);
		uint64_t d[2];
		want_dims(h, t->name, d);
		if (t->ndim != (d[1] ? 2u : 1u) || t->dims[0] != d[0] ||
		    (d[1] && t->dims[1] != d[1]))
			return st__error(err, ST_EFORMAT,
			                 "%s: tensor '%s': dims [%llu, %llu], expected [%llu, "
			                 "%llu]",
			                 st_gguf_path(g), q, (unsigned long long)t->dims[0],
			                 (unsigned long long)(t->ndim > 1 ? t->dims[1] : 1),
			                 (unsigned long long)d[0],
			                 (unsigned long long)(d[1] ? d[1] : 1));
		if (st_gguf_out_dtype(t->type, o, &p[i].dtype) != ST_OK) {
			const char *tn = st_ggml_type_name(t->type);
			if (tn)
				return st__error(err, ST_EUNSUPPORTED,
				                 "%s: tensor '%s': %s values are not floats: not "
				                 "converted",
				                 st_gguf_path(g), q, tn);
			return st__error(err, ST_EUNSUPPORTED,
			                 "%s: tensor '%s': ggml type %u is unknown to libst; its "
			                 "values cannot be converted",
			                 st_gguf_path(g), q, t->type);
		}
		p[i].gi = i;
		p[i].transpose = info.transpose && t->ndim == 2;
	}
	/* Each one a GPT-2 name, and names are unique: all of them, or not. */
	if ((uint64_t)n != 4 + 12 * h->layers)
		return st__error(err, ST_EFORMAT,
		                 "%s: %zu tensors; GPT-2's with gpt2.block_count %llu are %llu",
		                 st_gguf_path(g), n, (unsigned long long)h->layers,
		                 (unsigned long long)(4 + 12 * h->layers));
	return ST_OK;
}

struct g2_pump {
	const st_gguf *g;
	st_writer *w;
	const st_convert_run *r;
	float *f32;         /* a chunk or a tile */
	float *row;         /* one GGUF row's band */
	unsigned char *out; /* f32 converted */
	size_t cap;         /* elements f32 and out hold */
	st_convert_stats stats;
};

static int cancelled(const struct g2_pump *p)
{
	return p->r && p->r->cancel && p->r->cancel(p->r->ctx);
}

/* n floats of p->f32 converted to d and written. */
static int emit(struct g2_pump *p, const st_gguf_tensor *t, st_dtype d, size_t n,
                uint64_t src_bytes, st_error *err)
{
	if (st_convert(d, p->out, ST_DTYPE_F32, p->f32, n, &p->stats) != ST_OK)
		return st__error(err, ST_EINVAL, "%s: tensor '%s': cannot convert F32 to %s",
		                 st_gguf_path(p->g), t->name, st_dtype_name(d));
	int rc = st_writer_write(p->w, p->out, n * (st_dtype_bits(d) / 8), err);
	if (rc == ST_OK && p->r && p->r->progress)
		p->r->progress(p->r->ctx, src_bytes);
	return rc;
}

static int decode(const struct g2_pump *p, const st_gguf_tensor *t, const unsigned char *src,
                  float *dst, uint64_t n, st_error *err)
{
	if (st_ggml_to_f32(t->type, src, dst, n) != ST_OK)
		return st__error(err, ST_EUNSUPPORTED, "%s: tensor '%s': %s values not decoded",
		                 st_gguf_path(p->g), t->name, st_ggml_type_name(t->type));
	return ST_OK;
}

/* A tensor as it lies (row-major either way): a chunk at a time. */
static int pump_plain(struct g2_pump *p, size_t gi, st_dtype d, unsigned block, unsigned bytes,
                      st_error *err)
{
	const st_gguf_tensor *t = st_gguf_tensor_at(p->g, gi);
	const unsigned char *src = st_gguf_tensor_data(p->g, gi);
	uint64_t per = block > CHUNK_ELEMS ? block : CHUNK_ELEMS / block * block;
	for (uint64_t done = 0; done < t->n_elements;) {
		if (cancelled(p))
			return st__error(err, ST_EIO, "%s: cancelled", st_gguf_path(p->g));
		uint64_t n = t->n_elements - done < per ? t->n_elements - done : per;
		int rc = decode(p, t, src + done / block * bytes, p->f32, n, err);
		if (rc == ST_OK)
			rc = emit(p, t, d, (size_t)n, n / block * bytes, err);
		if (rc != ST_OK)
			return rc;
		done += n;
	}
	return ST_OK;
}

/*
 * A Conv1D weight: GGUF rows q < out of in values each, HF rows p < in of
 * out values each (HF[p][q] = GGUF[q][p]). A band of T HF rows at a time:
 * each GGUF row's blocks covering columns [p0, p0 + T) decoded and
 * scattered into the tile.
 */
static int pump_transposed(struct g2_pump *p, size_t gi, st_dtype d, unsigned block, unsigned bytes,
                           st_error *err)
{
	const st_gguf_tensor *t = st_gguf_tensor_at(p->g, gi);
	const unsigned char *src = st_gguf_tensor_data(p->g, gi);
	uint64_t in = t->dims[0], out = t->dims[1];
	uint64_t tile = block >= TILE_MIN ? block : TILE_MIN / block * block;
	uint64_t row_bytes = in / block * bytes;
	for (uint64_t p0 = 0; p0 < in; p0 += tile) {
		if (cancelled(p))
			return st__error(err, ST_EIO, "%s: cancelled", st_gguf_path(p->g));
		uint64_t w = in - p0 < tile ? in - p0 : tile;
		for (uint64_t q = 0; q < out; q++) {
			int rc = decode(p, t, src + q * row_bytes + p0 / block * bytes, p->row, w,
			                err);
			if (rc != ST_OK)
				return rc;
			for (uint64_t k = 0; k < w; k++)
				p->f32[k * out + q] = p->row[k];
		}
		int rc = emit(p, t, d, (size_t)(w * out), w / block * bytes * out, err);
		if (rc != ST_OK)
			return rc;
	}
	return ST_OK;
}

/* The largest chunk or tile the tensors need, in elements. */
static size_t buffer_elems(const st_gguf *g, const struct g2_tensor *p, size_t n)
{
	size_t cap = CHUNK_ELEMS;
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, p[i].gi);
		unsigned block = 1;
		st_ggml_type_block(t->type, &block, NULL);
		uint64_t need = block > CHUNK_ELEMS ? block : 0;
		if (p[i].transpose && block > ROW_MAX)
			return 0;
		/* a band of at most in columns: never more than the tensor */
		uint64_t band = block >= TILE_MIN ? block : TILE_MIN / block * block;
		if (p[i].transpose)
			need = (band < t->dims[0] ? band : t->dims[0]) * t->dims[1];
		cap = need > cap ? (size_t)need : cap;
	}
	return cap;
}

static int write_tensors(const st_gguf *g, st_snapshot *s, struct g2_tensor *p, size_t n,
                         const st_convert_run *r, st_convert_stats *stats, st_error *err)
{
	struct g2_pump pu = {.g = g, .r = r};
	pu.cap = buffer_elems(g, p, n);
	if (!pu.cap)
		return st__error(err, ST_EUNSUPPORTED, "%s: a block of more than %u elements",
		                 st_gguf_path(g), ROW_MAX);
	st_tensor *decl = calloc(n ? n : 1, sizeof *decl);
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	pu.f32 = malloc(pu.cap * sizeof(float));
	pu.row = malloc(ROW_MAX * sizeof(float));
	pu.out = malloc(pu.cap * sizeof(float));
	int rc = ST_OK;
	if (!decl || !order || !pu.f32 || !pu.row || !pu.out)
		rc = st__error(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = st_writer_new(&pu.w, err);
	for (size_t i = 0; rc == ST_OK && i < n; i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, p[i].gi);
		/* HF's shape: a Conv1D weight [in, out] (GGUF's dims in order),
		 * the others row-major (GGUF's dims reversed). */
		uint64_t shape[2] = {t->dims[t->ndim - 1], t->dims[0]};
		if (p[i].transpose)
			shape[0] = t->dims[0], shape[1] = t->dims[1];
		rc = st_writer_add(pu.w, p[i].name, strlen(p[i].name), p[i].dtype, t->ndim, shape,
		                   err);
		decl[i].name = p[i].name;
		decl[i].name_len = strlen(p[i].name);
		decl[i].dtype = p[i].dtype;
	}
	if (rc == ST_OK)
		rc = st_canonical_order(decl, n, order, err);
	if (rc == ST_OK)
		rc = st_snapshot_open_writer(s, pu.w, "model.safetensors", err);
	for (size_t k = 0; rc == ST_OK && k < n; k++) {
		const struct g2_tensor *x = &p[order[k]];
		unsigned block, bytes;
		const st_gguf_tensor *t = st_gguf_tensor_at(g, x->gi);
		if (st_ggml_type_block(t->type, &block, &bytes) != ST_OK)
			rc = st__error(err, ST_EUNSUPPORTED, "%s: tensor '%s': ggml type %u",
			               st_gguf_path(g), t->name, t->type);
		else if (x->transpose)
			rc = pump_transposed(&pu, x->gi, x->dtype, block, bytes, err);
		else
			rc = pump_plain(&pu, x->gi, x->dtype, block, bytes, err);
	}
	if (rc == ST_OK)
		rc = st_writer_finish(pu.w, err);
	st_writer_free(pu.w);
	if (stats) {
		stats->overflow += pu.stats.overflow;
		stats->underflow += pu.stats.underflow;
	}
	free(decl);
	free(order);
	free(pu.f32);
	free(pu.row);
	free(pu.out);
	return rc;
}

/* ---- vocab.json and merges.txt ------------------------------------------ */

static const st_gguf_value *string_array(const st_gguf *g, const char *key, st_error *err)
{
	long k = st_gguf_find_kv(g, key);
	const st_gguf_value *v = k < 0 ? NULL : &st_gguf_kv_at(g, (size_t)k)->value;
	if (!v || v->type != ST_GGUF_ARRAY || v->elem_type != ST_GGUF_STRING) {
		st__error(err, ST_EFORMAT, "%s: %s is missing or not an array of strings",
		          st_gguf_path(g), key);
		return NULL;
	}
	return v;
}

/* A "[PAD<id>]" filler that a converter made for a hole in the ids. */
static int is_pad(const st_gguf_value *t, uint64_t id)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "[PAD%llu]", (unsigned long long)id);
	return t->n == (uint64_t)n && !memcmp(t->v.s, buf, (size_t)n);
}

/* vocab.json ({"token": id, ...} on one line, fillers left out) and merges.txt
 * ("#version: 0.2", then a merge a line), as HF GPT-2 snapshots hold them. */
static int vocab_merges(const st_gguf *g, struct st__buf *vocab, struct st__buf *merges,
                        st_error *err)
{
	const st_gguf_value *toks = string_array(g, "tokenizer.ggml.tokens", err);
	const st_gguf_value *mv = toks ? string_array(g, "tokenizer.ggml.merges", err) : NULL;
	if (!mv)
		return ST_EFORMAT;
	st__buf_puts(vocab, "{");
	int first = 1;
	for (uint64_t i = 0; i < toks->n; i++) {
		st_gguf_value t;
		st_gguf_array_get(toks, i, &t);
		if (is_pad(&t, i))
			continue;
		st__buf_puts(vocab, first ? "" : ", ");
		st__buf_json_string(vocab, t.v.s, (size_t)t.n);
		st__buf_printf(vocab, ": %llu", (unsigned long long)i);
		first = 0;
	}
	st__buf_puts(vocab, "}"); /* no newline, as tokenizers saves it */
	st__buf_puts(merges, "#version: 0.2\n");
	for (uint64_t i = 0; i < mv->n; i++) {
		st_gguf_value t;
		st_gguf_array_get(mv, i, &t);
		if (memchr(t.v.s, '\n', (size_t)t.n))
			return st__error(err, ST_EFORMAT,
			                 "%s: tokenizer.ggml.merges[%llu] holds a "
			                 "newline",
			                 st_gguf_path(g), (unsigned long long)i);
		st__buf_put(merges, t.v.s, (size_t)t.n);
		st__buf_puts(merges, "\n");
	}
	if (vocab->failed || merges->failed)
		return st__error(err, ST_ENOMEM, "out of memory");
	return ST_OK;
}

/* ---- the snapshot ------------------------------------------------------- */

struct g2_file {
	const char *name;
	char *data;
	size_t len;
};

enum { F_CONFIG, F_GEN, F_VOCAB, F_MERGES, F_TOK, F_TOKCFG, N_FILES };

/* The JSON and text files, all made before anything is written. */
static int make_files(const st_gguf *g, st_dtype dtype, struct g2_file *f, unsigned *lost,
                      st_error *err)
{
	static const char *const names[N_FILES] = {
		"config.json", "generation_config.json", "vocab.json",
		"merges.txt",  "tokenizer.json",         "tokenizer_config.json",
	};
	for (int k = 0; k < N_FILES; k++)
		f[k].name = names[k];
	int rc = st_gguf_hf_config(g, dtype, &f[F_CONFIG].data, &f[F_CONFIG].len, lost, err);
	if (rc == ST_OK)
		rc = st_gguf_hf_generation_config(g, &f[F_GEN].data, &f[F_GEN].len, err);
	if (rc != ST_OK)
		return rc;
	st_error te;
	int trc = st__gguf_tokenizer_files(g, &f[F_TOK].data, &f[F_TOK].len, &f[F_TOKCFG].data,
	                                   &f[F_TOKCFG].len, &te);
	if (trc != ST_OK && trc != ST_ENOTFOUND && trc != ST_EUNSUPPORTED) {
		if (err)
			*err = te;
		return trc;
	}
	if (trc != ST_OK) {
		if (lost)
			*lost |= trc == ST_ENOTFOUND ? ST_GGUF_HF_LOST_TOKENIZER
			                             : ST_GGUF_HF_LOST_TOKENIZER_UNSUPPORTED;
		return ST_OK;
	}
	struct st__buf v = {0}, m = {0};
	rc = vocab_merges(g, &v, &m, err);
	if (rc != ST_OK) {
		st__buf_free(&v);
		st__buf_free(&m);
		return rc;
	}
	f[F_VOCAB].data = v.data, f[F_VOCAB].len = v.len;
	f[F_MERGES].data = m.data, f[F_MERGES].len = m.len;
	return ST_OK;
}

int st__gguf_snapshot_commit(st_snapshot *s, unsigned flags, const st_convert_run *r, st_error *err)
{
	/* Last: what the new directory holds already is not carried over. */
	int rc = ST_OK;
	if (flags & ST_GGUF_SNAPSHOT_KEEP_OLD)
		rc = st_snapshot_keep_old(s, NULL, r ? r->note : NULL, r ? r->ctx : NULL, err);
	return rc == ST_OK ? st_snapshot_commit(s, err) : rc;
}

int st__gguf_gpt2_write_snapshot(const st_gguf *g, const char *dir, unsigned flags,
                                 const st_gguf_convert_options *o, const st_convert_run *r,
                                 st_convert_stats *stats, unsigned *lost, st_error *err)
{
	struct g2_hparams h;
	struct g2_file f[N_FILES] = {{0}};
	size_t n = st_gguf_n_tensors(g);
	struct g2_tensor *p = calloc(n ? n : 1, sizeof *p);
	st_snapshot *s = NULL;
	int rc = p ? ST_OK : st__error(err, ST_ENOMEM, "out of memory");
	if (rc == ST_OK)
		rc = read_hparams(g, &h, err);
	if (rc == ST_OK)
		rc = plan(g, &h, o, p, err);
	/* torch_dtype: what wte is written in. */
	long e = st_gguf_find(g, "token_embd.weight");
	if (rc == ST_OK)
		rc = make_files(g, p[e].dtype, f, lost, err);
	if (rc == ST_OK)
		rc = st_snapshot_open(&s, dir, flags, err);
	if (rc == ST_OK)
		rc = write_tensors(g, s, p, n, r, stats, err);
	for (int k = 0; rc == ST_OK && k < N_FILES; k++)
		if (f[k].data)
			rc = st_snapshot_add_file(s, f[k].name, f[k].data, f[k].len, 0666, err);
	if (rc == ST_OK)
		rc = st__gguf_snapshot_commit(s, flags, r, err);
	st_snapshot_close(s);
	for (int k = 0; k < N_FILES; k++)
		free(f[k].data);
	free(p);
	return rc;
}
