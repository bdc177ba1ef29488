/*
 * gguf_export.c - a Hugging Face GPT-2 snapshot -> a GGUF file for
 * llama.cpp (see gguf_export.h for what the file holds). The keys, names,
 * layouts and types follow convert_hf_to_gguf.py's GPT2Model and its
 * defaults; libst's st_gguf_writer writes the file atomically, and
 * st_ggml_from_f32 does the rounding and the Q4_0 Q4_1 Q5_0 Q5_1 Q8_0
 * quantization.
 *
 * Memory: one tensor at a time, three buffers of the largest one.
 */
#include "gpt2/gguf_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fe/cli.h"
#include "gpt2/internal.h"
#include "gpt2/tokenizer.h"
#include "gpt2/tokenizer_vocab.h"

/* llama.cpp's llama_token_type / gguf-py's TokenType. */
enum { TOKEN_NORMAL = 1, TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4 };

int gpt2_gguf_file_type(unsigned type)
{
	switch (type) {
	case ST_GGML_F32: return 0;   /* ALL_F32 */
	case ST_GGML_F16: return 1;   /* MOSTLY_F16 */
	case ST_GGML_Q4_0: return 2;  /* MOSTLY_Q4_0 */
	case ST_GGML_Q4_1: return 3;  /* MOSTLY_Q4_1 */
	case ST_GGML_Q8_0: return 7;  /* MOSTLY_Q8_0 */
	case ST_GGML_Q5_0: return 8;  /* MOSTLY_Q5_0 */
	case ST_GGML_Q5_1: return 9;  /* MOSTLY_Q5_1 */
	case ST_GGML_BF16: return 32; /* MOSTLY_BF16 */
	default: return -1;
	}
}

/* ---- metadata ---------------------------------------------------------- */

struct meta {
	st_gguf_writer *w;
	const char *out;
	char *err;
	size_t errlen;
	int failed;
};

static void put(struct meta *m, const char *key, const st_gguf_value *v)
{
	st_error e;
	if (m->failed)
		return;
	if (st_gguf_writer_set(m->w, key, v, &e) != ST_OK) {
		gpt2_err(m->err, m->errlen, "%s: %s", m->out, e.message);
		m->failed = 1;
	}
}

static void put_str(struct meta *m, const char *key, const char *s)
{
	st_gguf_value v = {.type = ST_GGUF_STRING, .n = strlen(s)};
	v.v.s = s;
	put(m, key, &v);
}

static void put_u32(struct meta *m, const char *key, uint64_t u)
{
	st_gguf_value v = {.type = ST_GGUF_UINT32};
	v.v.u = u;
	put(m, key, &v);
}

/* The snapshot folder's name, for general.name. */
static void folder_name(char *buf, size_t size, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	size_t b = n;
	while (b > 0 && dir[b - 1] != '/')
		b--;
	snprintf(buf, size, "%.*s", (int)(n - b), dir + b);
}

/*
 * tokenizer.ggml.*: every id below V, in order. Ids the tokenizer lacks
 * become "[PAD<id>]", user-defined, as the converter pads a vocabulary;
 * added special tokens are control tokens.
 */
static int put_tokenizer(struct meta *m, const gpt2_tokenizer *tok, int V,
                         const gpt2_config *cfg)
{
	int n_ids = gpt2_tokenizer_vocab_size(tok);
	if (n_ids > V)
		return gpt2_err(m->err, m->errlen,
		                "%s: the tokenizer has %d ids, more than the model's "
		                "vocab_size %d", m->out, n_ids, V);
	st_gguf_value *tokens = calloc((size_t)V, sizeof *tokens);
	unsigned char *types = malloc((size_t)V * 4);
	char *pads = malloc((size_t)V * 24);
	int32_t *pairs = NULL;
	size_t n_merges = 0;
	st_gguf_value *merges = NULL;
	char *mtext = NULL;
	int rc = -1;
	if (!tokens || !types || !pads) {
		gpt2_err(m->err, m->errlen, "out of memory");
		goto out;
	}
	for (int id = 0; id < V; id++) {
		size_t len = 0;
		int kind = 0;
		const char *s = gpt2_tokenizer_token_text(tok, id, &len, &kind);
		uint32_t type = kind == GPT2_TOKEN_SPECIAL ? TOKEN_CONTROL
		                : kind == GPT2_TOKEN_ADDED ? TOKEN_USER_DEFINED
		                                           : TOKEN_NORMAL;
		if (!s) {
			s = pads + (size_t)id * 24;
			len = (size_t)snprintf(pads + (size_t)id * 24, 24, "[PAD%d]", id);
			type = TOKEN_USER_DEFINED;
		}
		tokens[id].type = ST_GGUF_STRING;
		tokens[id].n = len;
		tokens[id].v.s = s;
		for (int b = 0; b < 4; b++)
			types[(size_t)id * 4 + (size_t)b] = (unsigned char)(type >> (8 * b));
	}
	if (gpt2_tokenizer_merge_pairs(tok, &pairs, &n_merges, m->err,
	                               m->errlen))
		goto out;
	size_t total = 0;
	for (size_t i = 0; i < 2 * n_merges; i++) {
		size_t len;
		int kind;
		if (!gpt2_tokenizer_token_text(tok, pairs[i], &len, &kind)) {
			gpt2_err(m->err, m->errlen, "merge %zu names id %d, which the "
			         "tokenizer lacks", i / 2, (int)pairs[i]);
			goto out;
		}
		total += len + 1;
	}
	merges = calloc(n_merges ? n_merges : 1, sizeof *merges);
	mtext = malloc(total ? total : 1);
	if (!merges || !mtext) {
		gpt2_err(m->err, m->errlen, "out of memory");
		goto out;
	}
	size_t at = 0;
	for (size_t i = 0; i < n_merges; i++) {
		size_t la, lb;
		int kind;
		const char *a = gpt2_tokenizer_token_text(tok, pairs[2 * i], &la, &kind);
		const char *b = gpt2_tokenizer_token_text(tok, pairs[2 * i + 1], &lb,
		                                          &kind);
		merges[i].type = ST_GGUF_STRING;
		merges[i].v.s = mtext + at;
		merges[i].n = la + 1 + lb;
		memcpy(mtext + at, a, la);
		mtext[at + la] = ' ';
		memcpy(mtext + at + la + 1, b, lb);
		at += la + 1 + lb;
	}
	put_str(m, "tokenizer.ggml.model", "gpt2");
	put_str(m, "tokenizer.ggml.pre", "gpt-2");
	st_gguf_value v = {.type = ST_GGUF_ARRAY, .elem_type = ST_GGUF_STRING,
	                   .n = (uint64_t)V};
	v.v.vals = tokens;
	put(m, "tokenizer.ggml.tokens", &v);
	v.elem_type = ST_GGUF_INT32;
	v.v.raw = types;
	put(m, "tokenizer.ggml.token_type", &v);
	v.elem_type = ST_GGUF_STRING;
	v.n = n_merges;
	v.v.vals = merges;
	put(m, "tokenizer.ggml.merges", &v);
	/* GPT-2's tokenizer_config: bos and eos are <|endoftext|>. */
	int eot = gpt2_tokenizer_eot(tok);
	int eos = cfg->n_eos ? cfg->eos[0] : eot;
	int bos = cfg->has_bos ? cfg->bos : eot >= 0 ? eot : eos;
	if (bos >= 0 && bos < V)
		put_u32(m, "tokenizer.ggml.bos_token_id", (uint64_t)bos);
	if (eos >= 0 && eos < V)
		put_u32(m, "tokenizer.ggml.eos_token_id", (uint64_t)eos);
	/* GPT-2 prepends nothing; say so rather than leave it to defaults. */
	st_gguf_value f = {.type = ST_GGUF_BOOL};
	put(m, "tokenizer.ggml.add_bos_token", &f);
	rc = m->failed ? -1 : 0;
out:
	free(tokens);
	free(types);
	free(pads);
	free(pairs);
	free(merges);
	free(mtext);
	return rc;
}

/* ---- tensors ----------------------------------------------------------- */

/* One GGUF tensor: where its data comes from and how it is stored. */
struct plan {
	int slot, layer;
	char name[80];
	unsigned type;
	unsigned ndim;
	uint64_t dims[2];
	int transpose;
	uint64_t rows, cols; /* the HF shape of a transposed matrix */
};

/* token_embd, position_embd, the blocks in order, output_norm. */
static size_t plan_order(const gpt2_config *cfg, int *slots, int *layers)
{
	size_t n = 0;
	slots[n] = GPT2_WTE, layers[n++] = 0;
	slots[n] = GPT2_WPE, layers[n++] = 0;
	for (int l = 0; l < cfg->num_layers; l++)
		for (int s = GPT2_LN1W; s <= GPT2_FCPROJB; s++)
			slots[n] = s, layers[n++] = l;
	slots[n] = GPT2_LNFW, layers[n++] = 0;
	slots[n] = GPT2_LNFB, layers[n++] = 0;
	return n;
}

static int make_plan(struct plan *p, const gpt2_config *cfg, int slot,
                     int layer, unsigned type, char *err, size_t errlen)
{
	char hf[128];
	uint64_t shape[2];
	st_arch_gguf_info info;
	gpt2_param_name(slot, layer, hf, sizeof hf);
	int nd = gpt2_param_shape(cfg, slot, shape);
	if (st_arch_gpt2_to_gguf(hf, p->name, sizeof p->name, &info))
		return gpt2_err(err, errlen, "tensor '%s': no GGUF name", hf);
	p->slot = slot;
	p->layer = layer;
	p->ndim = (unsigned)nd;
	p->transpose = info.transpose && nd == 2;
	if (nd == 1) {
		p->dims[0] = shape[0];
	} else if (p->transpose) {
		/* [in, out] -> [out, in], whose dims are {in, out}. */
		p->dims[0] = shape[0];
		p->dims[1] = shape[1];
		p->rows = shape[0];
		p->cols = shape[1];
	} else {
		p->dims[0] = shape[1];
		p->dims[1] = shape[0];
	}
	p->type = info.keep_f32 || nd == 1 ? ST_GGML_F32 : type;
	/*
	 * Rows that are not whole blocks: F16, as llama-quantize's
	 * tensor_type_fallback does for a 32-element type (and gguf-py's
	 * QuantError makes convert_hf_to_gguf.py do for Q8_0).
	 */
	unsigned blk = 1;
	st_ggml_type_block(p->type, &blk, NULL);
	if (p->dims[0] % blk)
		p->type = ST_GGML_F16;
	return 0;
}

int gpt2_export_hf_to_gguf(const char *in, const char *out, int type,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	char dir[4096];
	gpt2_config cfg;
	if (gpt2_config_dir(in, dir, sizeof dir, err, errlen) ||
	    gpt2_config_load(&cfg, dir, err, errlen))
		return -1;
	gpt2_tokenizer *tok = NULL;
	st_checkpoint *ck = NULL;
	st_gguf_writer *w = NULL;
	size_t *where = NULL;
	int *slots = NULL, *layers = NULL;
	float *a = NULL, *b = NULL;
	void *c = NULL;
	int rc = -1;
	st_error e;
	uint64_t out_bytes = 0;
	cli_progress prog;
	memset(&prog, 0, sizeof prog); /* disabled until started */
	if (gpt2_tokenizer_load(&tok, dir, err, errlen))
		return -1;
	if (st_checkpoint_open(&ck, in, ST_OPEN_TORCH, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message[0] ? e.message
		                                         : st_strerror(e.code));
		goto out;
	}
	int L = cfg.num_layers;
	size_t nslots = (size_t)GPT2_NUM_SLOTS * (size_t)L, head;
	size_t ntens = 4 + (size_t)L * 12;
	where = malloc(nslots * sizeof *where);
	slots = malloc(ntens * sizeof *slots);
	layers = malloc(ntens * sizeof *layers);
	if (!where || !slots || !layers) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (gpt2_checkpoint_index(ck, &cfg, where, &head, err, errlen) ||
	    gpt2_checkpoint_check_head(ck, &cfg, where, head, err, errlen))
		goto out;

	/* The matrices' type: asked for, else the source's dtype. */
	int one = -2;
	for (size_t i = 0; i < nslots; i++)
		if (where[i] != SIZE_MAX) {
			int t = (int)st_checkpoint_tensor(ck, where[i], NULL)->dtype;
			one = one == -2 || one == t ? t : -1;
		}
	if (type < 0)
		type = one == ST_DTYPE_F16 ? ST_GGML_F16
		       : one == ST_DTYPE_BF16 ? ST_GGML_BF16 : ST_GGML_F32;
	if (gpt2_gguf_file_type((unsigned)type) < 0) {
		gpt2_err(err, errlen, "%s: type %s: gpt2export writes F32, F16, BF16, "
		         "Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1", out, st_ggml_type_name((unsigned)type)
		                         ? st_ggml_type_name((unsigned)type) : "?");
		goto out;
	}
	memset(res, 0, sizeof *res);
	res->src_dtype = one;
	res->dst_dtype = type == ST_GGML_F16 ? ST_DTYPE_F16
	                 : type == ST_GGML_BF16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
	res->exact = 1;

	/* Metadata, in convert_hf_to_gguf.py's order. */
	if (st_gguf_writer_new(&w, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message);
		goto out;
	}
	struct meta m = {.w = w, .out = out, .err = err, .errlen = errlen};
	char name[256];
	folder_name(name, sizeof name, dir);
	put_str(&m, "general.architecture", "gpt2");
	put_str(&m, "general.name", name);
	put_u32(&m, "gpt2.block_count", (uint64_t)L);
	put_u32(&m, "gpt2.context_length", (uint64_t)cfg.max_seq_len);
	put_u32(&m, "gpt2.embedding_length", (uint64_t)cfg.channels);
	put_u32(&m, "gpt2.feed_forward_length", 4 * (uint64_t)cfg.channels);
	put_u32(&m, "gpt2.attention.head_count", (uint64_t)cfg.num_heads);
	st_gguf_value eps = {.type = ST_GGUF_FLOAT32};
	eps.v.f = (double)cfg.layer_norm_eps;
	put(&m, "gpt2.attention.layer_norm_epsilon", &eps);
	put_u32(&m, "general.file_type",
	        (uint64_t)gpt2_gguf_file_type((unsigned)type));
	put_u32(&m, "general.quantization_version", 2);
	if (m.failed || put_tokenizer(&m, tok, cfg.vocab_size, &cfg))
		goto out;

	/* Tensor infos, then their data in the same order. */
	size_t n = plan_order(&cfg, slots, layers);
	uint64_t maxn = 0;
	for (size_t i = 0; i < n; i++) {
		struct plan p;
		if (make_plan(&p, &cfg, slots[i], layers[i], (unsigned)type, err,
		              errlen))
			goto out;
		if (st_gguf_writer_add_tensor(w, p.name, p.type, p.ndim, p.dims,
		                              &e) != ST_OK) {
			gpt2_err(err, errlen, "%s: %s", out, e.message);
			goto out;
		}
		uint64_t k = gpt2_param_numel(&cfg, p.slot);
		maxn = k > maxn ? k : maxn;
		unsigned blk, bytes;
		st_ggml_type_block(p.type, &blk, &bytes);
		out_bytes += k / blk * bytes;
	}
	a = malloc((size_t)maxn * 4);
	b = malloc((size_t)maxn * 4);
	c = malloc((size_t)maxn * 4);
	if (!a || !b || !c) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (st_gguf_writer_open(w, out, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message);
		goto out;
	}
	if (o->progress)
		cli_progress_start(&prog, "exporting", out_bytes);
	for (size_t i = 0; i < n; i++) {
		struct plan p;
		make_plan(&p, &cfg, slots[i], layers[i], (unsigned)type, err, errlen);
		if (o->cancel && o->cancel()) {
			gpt2_err(err, errlen, "%s: interrupted", out);
			goto out;
		}
		size_t ti = where[(size_t)p.slot * (size_t)L + (size_t)p.layer];
		const st_tensor *t = st_checkpoint_tensor(ck, ti, NULL);
		const void *src;
		size_t k = (size_t)t->n_elements;
		if (st_checkpoint_data(ck, ti, &src, &e) != ST_OK ||
		    st_convert(ST_DTYPE_F32, a, t->dtype, src, k, NULL) != ST_OK) {
			gpt2_err(err, errlen, "%s", e.message);
			goto out;
		}
		const float *x = a;
		if (p.transpose) {
			for (uint64_t r = 0; r < p.rows; r++)
				for (uint64_t q = 0; q < p.cols; q++)
					b[q * p.rows + r] = a[r * p.cols + q];
			x = b;
		}
		unsigned blk, bytes;
		st_ggml_type_block(p.type, &blk, &bytes);
		if (st_ggml_from_f32(p.type, x, c, k) != ST_OK ||
		    st_gguf_writer_write(w, c, k / blk * bytes, &e) != ST_OK) {
			gpt2_err(err, errlen, "%s", e.message);
			goto out;
		}
		cli_progress_add(&prog, k / blk * bytes);
		/* Exact: F32 kept, or a narrower source widened back into it. */
		res->exact &= p.type == ST_GGML_F32 ||
		              (p.type == ST_GGML_F16 && t->dtype == ST_DTYPE_F16) ||
		              (p.type == ST_GGML_BF16 && t->dtype == ST_DTYPE_BF16);
		res->parameters += k;
	}
	if (st_gguf_writer_finish(w, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message);
		goto out;
	}
	rc = 0;
out:
	cli_progress_done(&prog);
	st_gguf_writer_free(w);
	st_checkpoint_close(ck);
	gpt2_tokenizer_free(tok);
	free(where);
	free(slots);
	free(layers);
	free(a);
	free(b);
	free(c);
	return rc;
}

/* ---- GGUF -> snapshot -------------------------------------------------- */

static int key_is(const st_gguf *g, const char *key, const char *want)
{
	long i = st_gguf_find_kv(g, key);
	if (i < 0)
		return 0;
	const st_gguf_value *v = &st_gguf_kv_at(g, (size_t)i)->value;
	return v->type == ST_GGUF_STRING && v->n == strlen(want) &&
	       !memcmp(v->v.s, want, v->n);
}

struct import_ui {
	cli_progress prog;
	const gpt2_export_opts *o;
};

static void import_progress(void *ctx, uint64_t bytes)
{
	cli_progress_add(&((struct import_ui *)ctx)->prog, bytes);
}

static int import_cancel(void *ctx)
{
	const struct import_ui *ui = ctx;
	return ui->o->cancel && ui->o->cancel();
}

/*
 * The snapshot's dtype: asked for, else the matrices' (the tensors the
 * export's --type applied to) when they are all F16 or all BF16, else
 * F32. *exact: no value of the file is narrowed on the way.
 */
static st_dtype import_dtype(const st_gguf *g, int dtype, int *exact, uint64_t *params)
{
	int one = -2;
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		char hf[128];
		st_arch_gguf_info info;
		if (!st_arch_gpt2_from_gguf(t->name, hf, sizeof hf, &info) && !info.keep_f32)
			one = one == -2 || one == (int)t->type ? (int)t->type : -1;
	}
	st_dtype dst = dtype >= 0 ? (st_dtype)dtype
	               : one == ST_GGML_F16 ? ST_DTYPE_F16
	               : one == ST_GGML_BF16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
	*exact = 1;
	*params = 0;
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		st_dtype src = ST_DTYPE_F32;
		int widened = !st_ggml_type_dtype(t->type, &src) &&
		              st_dtype_bits(src) <= st_dtype_bits(dst);
		*exact &= widened || src == dst;
		*params += t->n_elements;
	}
	return dst;
}

int gpt2_export_gguf_to_hf(const char *in, const char *out_dir, int dtype,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	st_gguf *g = NULL;
	st_error e;
	if (st_gguf_open_set(&g, in, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	if (!key_is(g, "general.architecture", "gpt2")) {
		st_gguf_close(g);
		return gpt2_err(err, errlen, "%s: general.architecture is not \"gpt2\"", in);
	}
	if (!key_is(g, "tokenizer.ggml.model", "gpt2")) {
		st_gguf_close(g);
		return gpt2_err(err, errlen, "%s: tokenizer.ggml.model is not \"gpt2\" (GPT-2's "
		                "byte-level BPE)", in);
	}
	memset(res, 0, sizeof *res);
	res->src_dtype = -1;
	res->dst_dtype = import_dtype(g, dtype, &res->exact, &res->parameters);
	/* Every tensor in the one dtype, as gpt2export's snapshots hold them. */
	st_gguf_convert_options go = {1, (st_dtype)res->dst_dtype, 1};
	struct import_ui ui = {.o = o};
	memset(&ui.prog, 0, sizeof ui.prog); /* disabled until started */
	st_convert_run run = {.progress = import_progress, .cancel = import_cancel, .ctx = &ui};
	struct stat st;
	/* An existing folder (--force) is written into, as the other imports
	 * do: what it holds but weights is kept. */
	unsigned flags =
	        stat(out_dir, &st) == 0 ? ST_SNAPSHOT_REPLACE | ST_GGUF_SNAPSHOT_KEEP_OLD : 0;
	if (o->progress)
		cli_progress_start(&ui.prog, "importing", st_gguf_data_size(g));
	unsigned lost = 0;
	int rc = st_gguf_write_snapshot(g, out_dir, flags, &go, &run, NULL, &lost, &e);
	cli_progress_done(&ui.prog);
	st_gguf_close(g);
	if (rc != ST_OK)
		return gpt2_err(err, errlen, "%s", rc == ST_EIO && o->cancel && o->cancel()
		                                       ? "interrupted" : e.message);
	if (lost & ST_GGUF_HF_LOST_TOKENIZER_UNSUPPORTED) {
		char *p = cli_printable(out_dir, strlen(out_dir));
		cli_warn("%s: no tokenizer files: the GGUF's tokenizer.ggml.pre is not one "
		         "libst rebuilds", p);
		free(p);
	}
	return 0;
}
