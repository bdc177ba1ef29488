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

struct reader {
	const st_gguf *g;
	const char *in;
	char *err;
	size_t errlen;
};

/* A key's value, which must be of one of the integer types; -1 if absent. */
static int get_uint(const struct reader *r, const char *key, int need,
                    uint64_t *out)
{
	long i = st_gguf_find_kv(r->g, key);
	if (i < 0) {
		if (need)
			return gpt2_err(r->err, r->errlen, "%s: key '%s' is missing",
			                r->in, key);
		return 1;
	}
	const st_gguf_value *v = &st_gguf_kv_at(r->g, (size_t)i)->value;
	switch (v->type) {
	case ST_GGUF_UINT8: case ST_GGUF_UINT16: case ST_GGUF_UINT32:
	case ST_GGUF_UINT64:
		*out = v->v.u;
		return 0;
	case ST_GGUF_INT8: case ST_GGUF_INT16: case ST_GGUF_INT32:
	case ST_GGUF_INT64:
		if (v->v.i >= 0) {
			*out = (uint64_t)v->v.i;
			return 0;
		}
		break;
	default:
		break;
	}
	return gpt2_err(r->err, r->errlen, "%s: key '%s': a %s, expected a "
	                "non-negative integer", r->in, key,
	                st_gguf_type_name(v->type));
}

/* A key's array value of elem_type, or NULL with a message. */
static const st_gguf_value *get_array(const struct reader *r, const char *key,
                                      int elem_type)
{
	long i = st_gguf_find_kv(r->g, key);
	const st_gguf_value *v = i < 0 ? NULL
	                               : &st_gguf_kv_at(r->g, (size_t)i)->value;
	if (!v) {
		gpt2_err(r->err, r->errlen, "%s: key '%s' is missing", r->in, key);
		return NULL;
	}
	if (v->type != ST_GGUF_ARRAY || v->elem_type != elem_type) {
		gpt2_err(r->err, r->errlen, "%s: key '%s': expected an array of %s",
		         r->in, key, st_gguf_type_name(elem_type));
		return NULL;
	}
	return v;
}

static int key_is(const st_gguf *g, const char *key, const char *want)
{
	long i = st_gguf_find_kv(g, key);
	if (i < 0)
		return 0;
	const st_gguf_value *v = &st_gguf_kv_at(g, (size_t)i)->value;
	return v->type == ST_GGUF_STRING && v->n == strlen(want) &&
	       !memcmp(v->v.s, want, v->n);
}

/* The config a GPT-2 GGUF describes, checked as config.json would be. */
static int read_config(const struct reader *r, gpt2_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	if (!key_is(r->g, "general.architecture", "gpt2"))
		return gpt2_err(r->err, r->errlen, "%s: general.architecture is not "
		                "\"gpt2\"", r->in);
	uint64_t ctx, C, Lc, H, ff;
	if (get_uint(r, "gpt2.context_length", 1, &ctx) ||
	    get_uint(r, "gpt2.embedding_length", 1, &C) ||
	    get_uint(r, "gpt2.block_count", 1, &Lc) ||
	    get_uint(r, "gpt2.attention.head_count", 1, &H))
		return -1;
	int rc = get_uint(r, "gpt2.feed_forward_length", 0, &ff);
	if (rc < 0)
		return -1;
	if (rc == 0 && ff != 4 * C)
		return gpt2_err(r->err, r->errlen, "%s: gpt2.feed_forward_length "
		                "%llu: GPT-2's is 4 * %llu", r->in,
		                (unsigned long long)ff, (unsigned long long)C);
	const st_gguf_value *toks = get_array(r, "tokenizer.ggml.tokens",
	                                      ST_GGUF_STRING);
	if (!toks)
		return -1;
	long e = st_gguf_find_kv(r->g, "gpt2.attention.layer_norm_epsilon");
	const st_gguf_value *ev = e < 0 ? NULL
	                                : &st_gguf_kv_at(r->g, (size_t)e)->value;
	if (!ev || ev->type != ST_GGUF_FLOAT32)
		return gpt2_err(r->err, r->errlen, "%s: key "
		                "'gpt2.attention.layer_norm_epsilon': missing or not "
		                "a float32", r->in);
	if (ctx > INT32_MAX || C > INT32_MAX || Lc > INT32_MAX || H > INT32_MAX ||
	    toks->n > INT32_MAX)
		return gpt2_err(r->err, r->errlen, "%s: hyperparameters too large",
		                r->in);
	cfg->max_seq_len = (int)ctx;
	cfg->channels = (int)C;
	cfg->num_layers = (int)Lc;
	cfg->num_heads = (int)H;
	cfg->vocab_size = (int)toks->n;
	cfg->layer_norm_eps = (float)ev->v.f;
	uint64_t eos;
	rc = get_uint(r, "tokenizer.ggml.eos_token_id", 0, &eos);
	if (rc < 0)
		return -1;
	if (rc == 0 && eos < toks->n) {
		cfg->n_eos = 1;
		cfg->eos[0] = (int)eos;
	}
	uint64_t bos;
	rc = get_uint(r, "tokenizer.ggml.bos_token_id", 0, &bos);
	if (rc < 0)
		return -1;
	if (rc == 0 && bos < toks->n) {
		cfg->has_bos = 1;
		cfg->bos = (int)bos;
	}
	char msg[512];
	if (gpt2_config_check(cfg, msg, sizeof msg))
		return gpt2_err(r->err, r->errlen, "%s: %s", r->in, msg);
	return 0;
}

/* A "[PAD<id>]" filler the exporter (or the converter) made for a hole. */
static int is_pad(const st_gguf_value *t, uint64_t id)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "[PAD%llu]", (unsigned long long)id);
	return t->n == (uint64_t)n && !memcmp(t->v.s, buf, (size_t)n);
}

/* The tokenizer files write_tokenizer makes, in memory (malloc'd). */
static const char *const tokenizer_names[3] = {
	"vocab.json", "merges.txt", "tokenizer.json",
};
struct tokenizer_files {
	char *data[3];
	size_t len[3];
};

/*
 * vocab.json, merges.txt and tokenizer.json into tf, rebuilt from the
 * tokenizer.ggml arrays as Hugging Face's GPT-2 files hold them.
 */
static int write_tokenizer(const struct reader *r, struct tokenizer_files *tf)
{
	const st_gguf_value *toks = get_array(r, "tokenizer.ggml.tokens",
	                                      ST_GGUF_STRING);
	const st_gguf_value *merges = get_array(r, "tokenizer.ggml.merges",
	                                        ST_GGUF_STRING);
	if (!toks || !merges)
		return -1;
	const st_gguf_value *types = NULL;
	if (st_gguf_find_kv(r->g, "tokenizer.ggml.token_type") >= 0 &&
	    !(types = get_array(r, "tokenizer.ggml.token_type", ST_GGUF_INT32)))
		return -1;
	if (types && types->n != toks->n)
		return gpt2_err(r->err, r->errlen, "%s: tokenizer.ggml.token_type "
		                "has %llu entries for %llu tokens", r->in,
		                (unsigned long long)types->n,
		                (unsigned long long)toks->n);
	if (!key_is(r->g, "tokenizer.ggml.model", "gpt2"))
		return gpt2_err(r->err, r->errlen, "%s: tokenizer.ggml.model is not "
		                "\"gpt2\" (GPT-2's byte-level BPE)", r->in);
	FILE *v = open_memstream(&tf->data[0], &tf->len[0]);
	FILE *m = open_memstream(&tf->data[1], &tf->len[1]);
	FILE *j = open_memstream(&tf->data[2], &tf->len[2]);
	int rc = -1;
	if (!v || !m || !j) {
		gpt2_err(r->err, r->errlen, "%s: out of memory for the tokenizer "
		         "files", r->in);
		goto out;
	}
	/* added_tokens: the control and user-defined tokens, but fillers. */
	fputs("{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, "
	      "\"added_tokens\": [", j);
	int first = 1;
	for (uint64_t i = 0; types && i < toks->n; i++) {
		st_gguf_value t, ty;
		st_gguf_array_get(toks, i, &t);
		st_gguf_array_get(types, i, &ty);
		if ((ty.v.i != TOKEN_CONTROL && ty.v.i != TOKEN_USER_DEFINED) ||
		    is_pad(&t, i))
			continue;
		fprintf(j, "%s{\"id\": %llu, \"content\": ", first ? "" : ", ",
		        (unsigned long long)i);
		cli_json_string(j, t.v.s, (size_t)t.n);
		fprintf(j, ", \"single_word\": false, \"lstrip\": false, "
		        "\"rstrip\": false, \"normalized\": true, \"special\": %s}",
		        ty.v.i == TOKEN_CONTROL ? "true" : "false");
		first = 0;
	}
	fputs("], \"normalizer\": null, "
	      "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
	      "false, \"trim_offsets\": true, \"use_regex\": true}, "
	      "\"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
	      "true, \"trim_offsets\": false, \"use_regex\": true}, "
	      "\"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
	      "\"trim_offsets\": true, \"use_regex\": true}, "
	      "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": "
	      "null, \"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": "
	      "\"\", \"fuse_unk\": false, \"byte_fallback\": false, "
	      "\"ignore_merges\": false, \"vocab\": {", j);
	fputc('{', v);
	first = 1;
	for (uint64_t i = 0; i < toks->n; i++) {
		st_gguf_value t;
		st_gguf_array_get(toks, i, &t);
		if (is_pad(&t, i))
			continue;
		for (int k = 0; k < 2; k++) {
			FILE *f = k ? j : v;
			if (!first)
				fputs(", ", f);
			cli_json_string(f, t.v.s, (size_t)t.n);
			fprintf(f, ": %llu", (unsigned long long)i);
		}
		first = 0;
	}
	fputs("}\n", v);
	fputs("}, \"merges\": [", j);
	fputs("#version: 0.2\n", m);
	for (uint64_t i = 0; i < merges->n; i++) {
		st_gguf_value t;
		st_gguf_array_get(merges, i, &t);
		if (memchr(t.v.s, '\n', (size_t)t.n)) {
			gpt2_err(r->err, r->errlen, "%s: tokenizer.ggml.merges[%llu] "
			         "holds a newline", r->in, (unsigned long long)i);
			goto out;
		}
		fwrite(t.v.s, 1, (size_t)t.n, m);
		fputc('\n', m);
		if (i)
			fputs(", ", j);
		cli_json_string(j, t.v.s, (size_t)t.n);
	}
	fputs("]}}\n", j);
	rc = 0;
out:
	for (int k = 0; k < 3; k++) {
		FILE *f = k == 0 ? v : k == 1 ? m : j;
		if (f && (ferror(f) | fclose(f)) && !rc)
			rc = gpt2_err(r->err, r->errlen, "%s: out of memory for "
			              "the tokenizer files", r->in);
	}
	return rc;
}

int gpt2_export_gguf_to_hf(const char *in, const char *out_dir, int dtype,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	st_gguf *g = NULL;
	st_error e;
	if (st_gguf_open_set(&g, in, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	struct reader r = {.g = g, .in = in, .err = err, .errlen = errlen};
	gpt2_config cfg;
	gpt2_export_snapshot *s = NULL;
	float *a = NULL, *b = NULL;
	struct tokenizer_files tf = {{NULL}, {0}};
	int rc = -1;
	if (read_config(&r, &cfg))
		goto out;
	/* Every tensor of the file must be a GPT-2 parameter of this shape. */
	size_t n = st_gguf_n_tensors(g), expect = 4 + 12 * (size_t)cfg.num_layers;
	int one = -2;
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		char hf[128];
		st_arch_gguf_info info;
		if (st_arch_gpt2_from_gguf(t->name, hf, sizeof hf, &info)) {
			gpt2_err(err, errlen, "%s: tensor '%s': not a GPT-2 tensor", in,
			         t->name);
			goto out;
		}
		/* The matrices the type applied to (the others are F32). */
		int kind = (int)t->type;
		if (!info.keep_f32)
			one = one == -2 || one == kind ? kind : -1;
	}
	if (n != expect) {
		gpt2_err(err, errlen, "%s: %zu tensors; a GPT-2 of %d layers has %zu",
		         in, n, cfg.num_layers, expect);
		goto out;
	}
	/* The snapshot's dtype: asked for, else the matrices' (F32 for Q8_0). */
	st_dtype dst = dtype >= 0 ? (st_dtype)dtype
	               : one == ST_GGML_F16 ? ST_DTYPE_F16
	               : one == ST_GGML_BF16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
	memset(res, 0, sizeof *res);
	res->src_dtype = -1;
	res->dst_dtype = dst;
	res->exact = 1;
	/* The tokenizer files, rebuilt from the file, not copied from a folder. */
	if (write_tokenizer(&r, &tf))
		goto out;
	gpt2_export_opts oo = *o;
	oo.tokenizer_dir = NULL;
	if (gpt2_export_snapshot_open(&s, out_dir, &cfg, dst, &oo, err, errlen))
		goto out;
	for (int k = 0; k < 3; k++)
		if (gpt2_export_snapshot_add(s, tokenizer_names[k], tf.data[k],
		                             tf.len[k], err, errlen))
			goto out;
	uint64_t maxn = 0;
	for (size_t i = 0; i < gpt2_export_snapshot_n_tensors(s); i++) {
		uint64_t k = gpt2_export_snapshot_tensor(s, i)->n_elements;
		maxn = k > maxn ? k : maxn;
	}
	a = malloc((size_t)maxn * sizeof *a);
	b = malloc((size_t)maxn * sizeof *b);
	if (!a || !b) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < gpt2_export_snapshot_n_tensors(s); i++) {
		const st_tensor *t = gpt2_export_snapshot_tensor(s, i);
		char gname[128];
		st_arch_gguf_info info;
		long gi = -1;
		if (!st_arch_gpt2_to_gguf(t->name, gname, sizeof gname, &info))
			gi = st_gguf_find(g, gname);
		if (gi < 0) {
			gpt2_err(err, errlen, "%s: tensor '%s' (for %s) is missing", in,
			         gname, t->name);
			goto out;
		}
		const st_gguf_tensor *gt = st_gguf_tensor_at(g, (size_t)gi);
		/* GGUF dims are the HF shape reversed, or as is when transposed. */
		int tr = info.transpose && t->ndim == 2;
		uint64_t want0 = t->ndim == 1 ? t->shape[0]
		                 : tr ? t->shape[0] : t->shape[1];
		uint64_t want1 = t->ndim == 1 ? 1 : tr ? t->shape[1] : t->shape[0];
		if (gt->ndim != t->ndim || gt->dims[0] != want0 ||
		    gt->dims[1] != want1) {
			gpt2_err(err, errlen, "%s: tensor '%s': dims [%llu, %llu], "
			         "expected [%llu, %llu] for %s", in, gname,
			         (unsigned long long)gt->dims[0],
			         (unsigned long long)gt->dims[1],
			         (unsigned long long)want0, (unsigned long long)want1,
			         t->name);
			goto out;
		}
		int drc = st_ggml_to_f32(gt->type, st_gguf_tensor_data(g, (size_t)gi),
		                         a, gt->n_elements);
		if (drc != ST_OK) {
			/* Every float and quantized type decodes: what is left is an
			 * integer type, or a type libst does not know. */
			if (st_ggml_type_name(gt->type))
				gpt2_err(err, errlen, "%s: tensor '%s': %s values are not "
				         "floats: not converted", in, gname,
				         st_ggml_type_name(gt->type));
			else
				gpt2_err(err, errlen, "%s: tensor '%s': type %u (unknown): "
				         "libst does not know the type, its values were not "
				         "read: not converted", in, gname, gt->type);
			goto out;
		}
		const float *x = a;
		if (tr) {
			/* [out, in] -> HF's [in, out]. */
			uint64_t rows = t->shape[0], cols = t->shape[1];
			for (uint64_t q = 0; q < cols; q++)
				for (uint64_t p = 0; p < rows; p++)
					b[p * cols + q] = a[q * rows + p];
			x = b;
		}
		st_dtype src = ST_DTYPE_F32;
		int widened = !st_ggml_type_dtype(gt->type, &src) &&
		              st_dtype_bits(src) <= st_dtype_bits(dst);
		res->exact &= widened || src == dst;
		if (gpt2_export_snapshot_put(s, x, (size_t)t->n_elements, err,
		                             errlen))
			goto out;
		res->parameters += t->n_elements;
	}
	if (gpt2_export_snapshot_finish(s, &cfg, err, errlen))
		goto out;
	rc = 0;
out:
	gpt2_export_snapshot_free(s);
	for (int k = 0; k < 3; k++)
		free(tf.data[k]);
	free(a);
	free(b);
	st_gguf_close(g);
	return rc;
}
