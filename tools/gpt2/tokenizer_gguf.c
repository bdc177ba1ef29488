/*
 * tokenizer_gguf.c - a tokenizer from a GGUF file's tokenizer.ggml.*
 * metadata (see tokenizer.h), read through libst's GGUF reader:
 *
 *   tokenizer.ggml.model   "gpt2": byte-level BPE with tokenizer.ggml.merges
 *                          ("a b" strings, in rank order); "llama":
 *                          SentencePiece-style BPE whose merges are every
 *                          split of a normal token into two tokens, ranked
 *                          by the token's tokenizer.ggml.scores (higher
 *                          first, as llama.cpp's llm_tokenizer_spm)
 *   tokenizer.ggml.tokens  the vocabulary; the index is the id
 *   tokenizer.ggml.token_type  1 normal, 2 unknown, 3 control, 4 user
 *                          defined, 5 unused, 6 byte; unknown, control and
 *                          user-defined tokens are Hugging Face's added
 *                          tokens (special but for user defined)
 *   tokenizer.ggml.pre     which pre-tokenizer regex (below)
 *   tokenizer.ggml.{bos,eos,unknown}_token_id, add_bos_token,
 *   add_eos_token, add_space_prefix
 *
 * Every count, id and string is checked before it is used; a refusal is
 * one line naming the file and the key.
 */
#include "gpt2/internal.h"
#include "gpt2/tokenizer_impl.h"

#include <st/gguf.h>
#include <stdlib.h>
#include <string.h>

#define SPM_SPACE "\xe2\x96\x81"

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

typedef struct gguf_src {
	st_gguf *g;
	const char *path;
	char *err;
	size_t errlen;
} gguf_src;

/* The value of key, of one of the types in mask (1 << type), or NULL.
 * *bad is set when the key is there with another type. */
static const st_gguf_value *get(const gguf_src *s, const char *key, unsigned mask, int *bad)
{
	long i = st_gguf_find_kv(s->g, key);
	if (i < 0)
		return NULL;
	const st_gguf_value *v = &st_gguf_kv_at(s->g, (size_t)i)->value;
	if (!(mask & (1u << v->type))) {
		*bad = 1;
		gpt2_err(s->err, s->errlen, "%s: %s has type %s", s->path, key,
		         st_gguf_type_name(v->type) ? st_gguf_type_name(v->type) : "?");
		return NULL;
	}
	return v;
}

#define INT_TYPES                                                                 \
	((1u << ST_GGUF_UINT8) | (1u << ST_GGUF_INT8) | (1u << ST_GGUF_UINT16) |  \
	 (1u << ST_GGUF_INT16) | (1u << ST_GGUF_UINT32) | (1u << ST_GGUF_INT32) | \
	 (1u << ST_GGUF_UINT64) | (1u << ST_GGUF_INT64))

static int64_t int_value(const st_gguf_value *v)
{
	int is_signed = v->type == ST_GGUF_INT8 || v->type == ST_GGUF_INT16 ||
	                v->type == ST_GGUF_INT32 || v->type == ST_GGUF_INT64;
	if (is_signed)
		return v->v.i;
	return v->v.u > INT64_MAX ? -1 : (int64_t)v->v.u;
}

/* An optional token id: -1 when absent; -2 on an error. */
static int32_t id_key(const gguf_src *s, const char *key, size_t n_tokens)
{
	int bad = 0;
	const st_gguf_value *v = get(s, key, INT_TYPES, &bad);
	if (bad)
		return -2;
	if (!v)
		return -1;
	int64_t id = int_value(v);
	if (id < 0 || (uint64_t)id >= n_tokens) {
		gpt2_err(s->err, s->errlen, "%s: %s is %lld (expected an id below %zu)", s->path,
		         key, (long long)id, n_tokens);
		return -2;
	}
	return (int32_t)id;
}

/* An optional bool: dflt when absent; -1 on an error. */
static int bool_key(const gguf_src *s, const char *key, int dflt)
{
	int bad = 0;
	const st_gguf_value *v = get(s, key, 1u << ST_GGUF_BOOL, &bad);
	if (bad)
		return -1;
	return v ? v->v.u != 0 : dflt;
}

/* An array of n elements of type elem (n 0: any length). */
static const st_gguf_value *array_key(const gguf_src *s, const char *key, int elem, uint64_t n,
                                      int required)
{
	int bad = 0;
	const st_gguf_value *v = get(s, key, 1u << ST_GGUF_ARRAY, &bad);
	if (bad)
		return NULL;
	if (!v) {
		if (required)
			gpt2_err(s->err, s->errlen, "%s: %s is missing", s->path, key);
		return NULL;
	}
	if (v->elem_type != elem || (n && v->n != n)) {
		gpt2_err(s->err, s->errlen, "%s: %s is an array of %llu %s (expected %llu %s)",
		         s->path, key, (unsigned long long)v->n,
		         st_gguf_type_name(v->elem_type) ? st_gguf_type_name(v->elem_type) : "?",
		         (unsigned long long)n, st_gguf_type_name(elem));
		return NULL;
	}
	return v;
}

/* The vocabulary, and the added tokens its types make. */
static int gguf_vocab(const gguf_src *s, load_state *ls, const st_gguf_value *tokens,
                      const st_gguf_value *types)
{
	size_t n = (size_t)tokens->n;
	ls->vocab = calloc(n, sizeof *ls->vocab);
	ls->added = calloc(n, sizeof *ls->added);
	if (!ls->vocab || !ls->added)
		return gpt2_err(s->err, s->errlen, "%s: out of memory", s->path);
	for (size_t i = 0; i < n; i++) {
		st_gguf_value tv, ty;
		st_gguf_array_get(tokens, i, &tv);
		if (utf8_valid_prefix((const unsigned char *)tv.v.s, (size_t)tv.n) != tv.n)
			return gpt2_err(s->err, s->errlen,
			                "%s: tokenizer.ggml.tokens[%zu] is not valid UTF-8",
			                s->path, i);
		vocab_entry *e = &ls->vocab[ls->n_vocab++];
		e->key = tv.v.s;
		e->len = (size_t)tv.n;
		e->id = (int32_t)i;
		int type = TT_NORMAL;
		if (types) {
			st_gguf_array_get(types, i, &ty);
			type = (int)ty.v.i;
		}
		if ((type == TT_UNKNOWN || type == TT_CONTROL || type == TT_USER) && tv.n) {
			added_token *a = &ls->added[ls->n_added++];
			a->text = (char *)tv.v.s; /* borrowed while loading */
			a->len = (size_t)tv.n;
			a->id = (int32_t)i;
			a->special = type != TT_USER;
		}
	}
	return 0;
}

/* tokenizer.ggml.merges: "a b", split at the first space after the first
 * byte (as llama.cpp reads them). */
static int gguf_merges(const gguf_src *s, load_state *ls, const st_gguf_value *merges)
{
	size_t n = (size_t)merges->n;
	ls->mergev = calloc(n ? n : 1, sizeof *ls->mergev);
	if (!ls->mergev)
		return gpt2_err(s->err, s->errlen, "%s: out of memory", s->path);
	for (size_t i = 0; i < n; i++) {
		st_gguf_value mv;
		st_gguf_array_get(merges, i, &mv);
		const char *sp = mv.n > 1 ? memchr(mv.v.s + 1, ' ', (size_t)mv.n - 1) : NULL;
		if (!sp || sp + 1 == mv.v.s + mv.n)
			return gpt2_err(s->err, s->errlen,
			                "%s: tokenizer.ggml.merges[%zu] is not two tokens "
			                "separated by a space",
			                s->path, i);
		merge_entry *m = &ls->mergev[ls->n_merges++];
		m->a = mv.v.s;
		m->alen = (size_t)(sp - mv.v.s);
		m->b = sp + 1;
		m->blen = (size_t)(mv.v.s + mv.n - sp - 1);
		m->where = i;
	}
	return 0;
}

typedef struct scored {
	float score;
	uint32_t id;
} scored;

static int cmp_scored(const void *a, const void *b)
{
	const scored *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* SentencePiece's merges: each normal token of two or more characters,
 * split at each character boundary, ranked by its score (equal scores,
 * equal ranks: then the leftmost pair merges first, as in llama.cpp). */
static int spm_merges(const gguf_src *s, load_state *ls, const st_gguf_value *scores,
                      const st_gguf_value *types)
{
	size_t n = ls->n_vocab, total = 0;
	scored *order = malloc((n ? n : 1) * sizeof *order);
	uint32_t *rank = malloc((n ? n : 1) * sizeof *rank);
	if (!order || !rank) {
		free(order);
		free(rank);
		return gpt2_err(s->err, s->errlen, "%s: out of memory", s->path);
	}
	for (size_t i = 0; i < n; i++) {
		st_gguf_value v;
		st_gguf_array_get(scores, i, &v);
		order[i].score = (float)v.v.f;
		order[i].id = (uint32_t)i;
		if (order[i].score != order[i].score)
			order[i].score = -1e30f; /* NaN last */
	}
	qsort(order, n, sizeof *order, cmp_scored);
	uint32_t r = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && order[i].score != order[i - 1].score)
			r++;
		rank[order[i].id] = r;
	}
	free(order);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			const vocab_entry *e = &ls->vocab[i];
			st_gguf_value ty;
			if (types) {
				st_gguf_array_get(types, i, &ty);
				if (ty.v.i != TT_NORMAL)
					continue;
			}
			const unsigned char *k = (const unsigned char *)e->key;
			for (size_t j = 0, cl, bad; j < e->len; j += cl) {
				cl = utf8_seq(k + j, e->len - j, &bad);
				if (!j)
					continue;
				if (pass == 0) {
					total++;
					continue;
				}
				merge_entry *m = &ls->mergev[ls->n_merges++];
				m->a = e->key;
				m->alen = j;
				m->b = e->key + j;
				m->blen = e->len - j;
				m->rank = rank[i];
				m->where = i;
			}
		}
		if (pass == 0) {
			ls->mergev = calloc(total ? total : 1, sizeof *ls->mergev);
			if (!ls->mergev) {
				free(rank);
				return gpt2_err(s->err, s->errlen, "%s: out of memory", s->path);
			}
		}
	}
	free(rank);
	ls->ranked = 1;
	return 0;
}

int gpt2_tok_scan_digits(const char *pattern, size_t len)
{
	const st_gguf_pre *p = st_gguf_pre_from_pattern(pattern, len);
	if (!p)
		return 0;
	return strcmp(p->name, "llama-bpe") == 0 ? 3 : strcmp(p->name, "qwen2") == 0 ? 1 : 0;
}

static int add_regex_step(const gguf_src *s, gpt2_tokenizer *t, const char *pattern)
{
	char msg[256];
	pre_step *p = &t->pre[t->n_pre++];
	p->kind = PRE_SPLIT;
	p->behavior = SPLIT_ISOLATED;
	p->scan_digits = gpt2_tok_scan_digits(pattern, strlen(pattern));
	if (gpt2_regex_new(&p->re, pattern, strlen(pattern), msg, sizeof msg) != 0)
		return gpt2_err(s->err, s->errlen, "%s: the pre-tokenizer's pattern: %s", s->path,
		                msg);
	return 0;
}

/* The pipeline tokenizer.ggml.model and .pre stand for. */
static int gguf_pipeline(const gguf_src *s, gpt2_tokenizer *t, int spm, int *llama3)
{
	*llama3 = 0;
	if (spm) {
		int prefix = bool_key(s, "tokenizer.ggml.add_space_prefix", 1);
		if (prefix < 0)
			return -1;
		/* Llama 2's tokenizer.json: Prepend("▁"), Replace(" ", "▁"). */
		norm_step *n = &t->norm[t->n_norm];
		if (prefix) {
			n->kind = NORM_PREPEND;
			n->a = malloc(3);
			if (!n->a)
				return gpt2_err(s->err, s->errlen, "%s: out of memory", s->path);
			memcpy(n->a, SPM_SPACE, 3);
			n->alen = 3;
			t->n_norm++;
			n++;
		}
		n->kind = NORM_REPLACE;
		n->a = malloc(1);
		n->b = malloc(3);
		t->n_norm++;
		if (!n->a || !n->b)
			return gpt2_err(s->err, s->errlen, "%s: out of memory", s->path);
		n->a[0] = ' ';
		n->alen = 1;
		memcpy(n->b, SPM_SPACE, 3);
		n->blen = 3;
		t->byte_fallback = 1;
		t->fuse_unk = 1;
		return 0;
	}
	int bad = 0;
	const st_gguf_value *pre = get(s, "tokenizer.ggml.pre", 1u << ST_GGUF_STRING, &bad);
	if (bad)
		return -1;
	/* llama.cpp's names (st_gguf_pre): no name is GPT-2's. */
	const st_gguf_pre *known =
		pre ? st_gguf_pre_find(pre->v.s, (size_t)pre->n) : st_gguf_pre_find("default", 7);
	if (!known) {
		char sa[SHOW_MAX];
		return gpt2_err(s->err, s->errlen,
		                "%s: tokenizer.ggml.pre '%s' is not supported (expected gpt-2, "
		                "default, llama-bpe, llama3, llama-v3 or qwen2)",
		                s->path, gpt2_tok_show(sa, pre->v.s, (size_t)pre->n));
	}
	t->byte_level = 1;
	if (known->nfc)
		t->norm[t->n_norm++].kind = NORM_NFC;
	if (known->pattern && add_regex_step(s, t, known->pattern) != 0)
		return -1;
	*llama3 = strcmp(known->name, "llama-bpe") == 0;
	pre_step *p = &t->pre[t->n_pre++];
	p->kind = PRE_BYTELEVEL;
	p->use_regex = t->n_pre == 1; /* GPT-2's regex when it is the only step */
	return 0;
}

/* bos, eos, unk and whether an encode adds them. */
static int gguf_specials(const gguf_src *s, gpt2_tokenizer *t, size_t n_tokens, int dflt_bos)
{
	int32_t bos = id_key(s, "tokenizer.ggml.bos_token_id", n_tokens);
	int32_t eos = id_key(s, "tokenizer.ggml.eos_token_id", n_tokens);
	int32_t unk = id_key(s, "tokenizer.ggml.unknown_token_id", n_tokens);
	int add_bos = bool_key(s, "tokenizer.ggml.add_bos_token", dflt_bos);
	int add_eos = bool_key(s, "tokenizer.ggml.add_eos_token", 0);
	if (bos == -2 || eos == -2 || unk == -2 || add_bos < 0 || add_eos < 0)
		return -1;
	t->bos = bos;
	t->eos = eos;
	t->add_bos = add_bos && bos >= 0;
	t->add_eos = add_eos && eos >= 0;
	if (unk >= 0)
		t->unk_id = unk;
	return 0;
}

static int gguf_read(const gguf_src *s, gpt2_tokenizer *t, load_state *ls)
{
	int bad = 0;
	const st_gguf_value *model = get(s, "tokenizer.ggml.model", 1u << ST_GGUF_STRING, &bad);
	if (!model)
		return bad ? -1
		           : gpt2_err(s->err, s->errlen, "%s: tokenizer.ggml.model is missing",
		                      s->path);
	int spm;
	if (model->n == 4 && memcmp(model->v.s, "gpt2", 4) == 0) {
		spm = 0;
	} else if (model->n == 5 && memcmp(model->v.s, "llama", 5) == 0) {
		spm = 1;
	} else {
		char sa[SHOW_MAX];
		return gpt2_err(s->err, s->errlen,
		                "%s: tokenizer.ggml.model '%s' is not supported (expected gpt2 or "
		                "llama)",
		                s->path, gpt2_tok_show(sa, model->v.s, (size_t)model->n));
	}
	const st_gguf_value *tokens = array_key(s, "tokenizer.ggml.tokens", ST_GGUF_STRING, 0, 1);
	if (!tokens)
		return -1;
	if (tokens->n == 0 || tokens->n >= MAX_IDS)
		return gpt2_err(s->err, s->errlen,
		                "%s: tokenizer.ggml.tokens has %llu tokens (expected 1 to %d)",
		                s->path, (unsigned long long)tokens->n, MAX_IDS - 1);
	const st_gguf_value *types =
		array_key(s, "tokenizer.ggml.token_type", ST_GGUF_INT32, tokens->n, 0);
	if (!types && st_gguf_find_kv(s->g, "tokenizer.ggml.token_type") >= 0)
		return -1;
	if (gguf_vocab(s, ls, tokens, types) != 0)
		return -1;
	if (spm) {
		const st_gguf_value *scores =
			array_key(s, "tokenizer.ggml.scores", ST_GGUF_FLOAT32, tokens->n, 1);
		if (!scores || spm_merges(s, ls, scores, types) != 0)
			return -1;
	} else {
		const st_gguf_value *merges =
			array_key(s, "tokenizer.ggml.merges", ST_GGUF_STRING, 0, 1);
		if (!merges || gguf_merges(s, ls, merges) != 0)
			return -1;
	}
	int llama3;
	if (gguf_pipeline(s, t, spm, &llama3) != 0)
		return -1;
	/* Meta's Llama 3 tokenizer.json sets model.ignore_merges (and
	 * llama.cpp does for this pre-tokenizer). */
	ls->ignore_merges = llama3;
	if (gpt2_tok_build(t, ls) != 0)
		return -1;
	/* llama.cpp adds BOS by default to SentencePiece and Llama 3 vocabularies,
	 * as their Hugging Face templates do. */
	return gguf_specials(s, t, (size_t)tokens->n, spm || llama3);
}

int gpt2_tok_load_gguf(gpt2_tokenizer **out, const char *path, char *err, size_t errlen)
{
	*out = NULL;
	st_error e = {0};
	gguf_src s = {NULL, path, err, errlen};
	if (st_gguf_open_set(&s.g, path, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	gpt2_tokenizer *t = gpt2_tok_new();
	load_state ls = {0};
	ls.vocab_path = path;
	ls.merges_where = "tokenizer.ggml.merges[%zu]";
	ls.fixed_ids = 1;
	ls.t = t;
	ls.err = err;
	ls.errlen = errlen;
	int rc = -1;
	if (!t)
		gpt2_err(err, errlen, "%s: out of memory", path);
	else if (gguf_read(&s, t, &ls) == 0)
		rc = 0;
	free(ls.vocab);
	free(ls.mergev);
	free(ls.added);
	st_gguf_close(s.g);
	if (rc == 0)
		*out = t;
	else
		gpt2_tokenizer_free(t);
	return rc;
}
