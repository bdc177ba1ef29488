/*
 * gguf_tokenizer.c - the Hugging Face tokenizer files a GGUF's
 * tokenizer.ggml.* metadata stands for (st/gguf.h): tokenizer.json
 * (tokenizers' own format) and tokenizer_config.json, laid out as the
 * files of the models llama.cpp's converter read them from (Meta's Llama 3
 * and Llama 2, Qwen2, GPT-2), so that llama.cpp's conversion is undone:
 *
 *   tokenizer.ggml.model "gpt2"   byte-level BPE: model.merges are
 *                                 tokenizer.ggml.merges; the pre-tokenizer
 *                                 is what tokenizer.ggml.pre names
 *                                 (st_gguf_pre_find)
 *   tokenizer.ggml.model "llama"  SentencePiece BPE as transformers'
 *                                 converter writes it: byte_fallback,
 *                                 fuse_unk, the U+2581 normalizer and
 *                                 decoder, merges made from the scores
 *
 * Every count, id and string is checked before it is used: a token that
 * is not UTF-8 is refused, naming the key and the index (JSON cannot hold
 * it, and escaping would make it another token). The JSON text is written
 * with libst's JSON string escaper (st__buf_json_string), as config.json is.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPM_SPACE "\xe2\x96\x81" /* U+2581, SentencePiece's space */

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4 };

/* A token id key: absent, or below the vocabulary's size. */
struct tok_id {
	int present;
	uint32_t id;
};

/* What the metadata says, checked. */
struct vocab {
	const st_gguf *g;
	const char *path;
	int spm;
	const st_gguf_pre *pre;      /* gpt2 only */
	const st_gguf_value *tokens; /* STRING array */
	const st_gguf_value *types;  /* INT32 array, or NULL */
	const st_gguf_value *scores; /* FLOAT32 array (llama) */
	const st_gguf_value *merges; /* STRING array (gpt2) */
	uint32_t n;
	struct tok_id bos, eos, unk, pad;
	int add_bos, add_eos, add_space_prefix;
	uint32_t *table; /* open addressing: id + 1, 0 empty */
	size_t mask;
	unsigned char *first; /* 1: the first token of its text */
};

static const st_gguf_value *meta(const st_gguf *g, const char *key)
{
	long k = st_gguf_find_kv(g, key);
	return k < 0 ? NULL : &st_gguf_kv_at(g, (size_t)k)->value;
}

static int is_int(int type)
{
	return type == ST_GGUF_UINT8 || type == ST_GGUF_UINT16 || type == ST_GGUF_UINT32 ||
	       type == ST_GGUF_UINT64 || type == ST_GGUF_INT8 || type == ST_GGUF_INT16 ||
	       type == ST_GGUF_INT32 || type == ST_GGUF_INT64;
}

static int is_signed(int type)
{
	return type == ST_GGUF_INT8 || type == ST_GGUF_INT16 || type == ST_GGUF_INT32 ||
	       type == ST_GGUF_INT64;
}

static int read_id(struct vocab *v, const char *key, struct tok_id *out, st_error *err)
{
	const st_gguf_value *x = meta(v->g, key);
	out->present = 0;
	if (!x)
		return ST_OK;
	if (!is_int(x->type) || (is_signed(x->type) && x->v.i < 0) || x->v.u >= v->n)
		return st__error(err, ST_EFORMAT, "%s: %s is not a token id (below %u)", v->path,
		                 key, (unsigned)v->n);
	out->present = 1;
	out->id = (uint32_t)x->v.u;
	return ST_OK;
}

static int read_bool(struct vocab *v, const char *key, int dflt, int *out, st_error *err)
{
	const st_gguf_value *x = meta(v->g, key);
	*out = dflt;
	if (!x)
		return ST_OK;
	if (x->type != ST_GGUF_BOOL)
		return st__error(err, ST_EFORMAT, "%s: %s is not a bool", v->path, key);
	*out = x->v.u != 0;
	return ST_OK;
}

/* An array key of n elements of type elem (n 0: any length), or NULL. */
static int read_array(struct vocab *v, const char *key, int elem, uint64_t n, int required,
                      const st_gguf_value **out, st_error *err)
{
	const st_gguf_value *x = meta(v->g, key);
	*out = NULL;
	if (!x && !required)
		return ST_OK;
	if (!x)
		return st__error(err, ST_EFORMAT, "%s: %s is missing", v->path, key);
	if (x->type != ST_GGUF_ARRAY || x->elem_type != elem || (n && x->n != n)) {
		char count[32] = "";
		if (n)
			snprintf(count, sizeof count, "%llu ", (unsigned long long)n);
		return st__error(err, ST_EFORMAT, "%s: %s is not an array of %s%s", v->path, key,
		                 count, st_gguf_type_name(elem));
	}
	*out = x;
	return ST_OK;
}

static int str_is(const st_gguf_value *x, const char *s)
{
	return x && x->type == ST_GGUF_STRING && x->n == strlen(s) &&
	       !memcmp(x->v.s, s, (size_t)x->n);
}

static st_gguf_value token(const struct vocab *v, uint32_t i)
{
	st_gguf_value t;
	st_gguf_array_get(v->tokens, i, &t);
	return t;
}

static int token_type(const struct vocab *v, uint32_t i)
{
	if (!v->types)
		return TT_NORMAL;
	st_gguf_value t;
	st_gguf_array_get(v->types, i, &t);
	return (int)t.v.i;
}

/* ---- the token -> id table (the first id of a text) ------------------------ */

static size_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return (size_t)h;
}

/* The id of the token s (n bytes), or -1. */
static long find(const struct vocab *v, const char *s, size_t n)
{
	for (size_t k = hash(s, n) & v->mask;; k = (k + 1) & v->mask) {
		uint32_t e = v->table[k];
		if (!e)
			return -1;
		st_gguf_value t = token(v, e - 1);
		if (t.n == n && !memcmp(t.v.s, s, n))
			return (long)(e - 1);
	}
}

static int build_table(struct vocab *v, st_error *err)
{
	size_t size = 2;
	while (size < 2 * (size_t)v->n)
		size *= 2;
	v->table = calloc(size, sizeof *v->table);
	v->first = calloc(v->n, 1);
	if (!v->table || !v->first)
		return st__error(err, ST_ENOMEM, "out of memory");
	v->mask = size - 1;
	for (uint32_t i = 0; i < v->n; i++) {
		st_gguf_value t = token(v, i);
		size_t bad;
		if (!st__utf8_valid(t.v.s, (size_t)t.n, &bad))
			return st__error(err, ST_EFORMAT,
			                 "%s: tokenizer.ggml.tokens[%u] is not valid UTF-8 (byte "
			                 "%zu)",
			                 v->path, (unsigned)i, bad);
		if (find(v, t.v.s, (size_t)t.n) >= 0)
			continue; /* a later copy of a text: never produced, left out */
		size_t k = hash(t.v.s, (size_t)t.n) & v->mask;
		while (v->table[k])
			k = (k + 1) & v->mask;
		v->table[k] = i + 1;
		v->first[i] = 1;
	}
	return ST_OK;
}

/* ---- reading the keys ------------------------------------------------------ */

static int vocab_read(struct vocab *v, const st_gguf *g, st_error *err)
{
	memset(v, 0, sizeof *v);
	v->g = g;
	v->path = st_gguf_path(g);
	const st_gguf_value *model = meta(g, "tokenizer.ggml.model");
	if (!model)
		return st__error(err, ST_ENOTFOUND, "%s: no tokenizer.ggml.model: no tokenizer",
		                 v->path);
	char q[160];
	if (str_is(model, "llama")) {
		v->spm = 1;
	} else if (!str_is(model, "gpt2")) {
		if (model->type != ST_GGUF_STRING)
			return st__error(err, ST_EFORMAT,
			                 "%s: tokenizer.ggml.model is not a string", v->path);
		return st__error(err, ST_EUNSUPPORTED,
		                 "%s: tokenizer.ggml.model '%s' is not rebuilt (gpt2, llama)",
		                 v->path, st__qname(q, sizeof q, model->v.s, (size_t)model->n));
	}
	int rc = read_array(v, "tokenizer.ggml.tokens", ST_GGUF_STRING, 0, 1, &v->tokens, err);
	if (rc != ST_OK)
		return rc;
	if (v->tokens->n == 0 || v->tokens->n >= (1ull << 31))
		return st__error(err, ST_EFORMAT,
		                 "%s: tokenizer.ggml.tokens has %llu tokens (expected 1 to 2^31-1)",
		                 v->path, (unsigned long long)v->tokens->n);
	v->n = (uint32_t)v->tokens->n;
	rc = read_array(v, "tokenizer.ggml.token_type", ST_GGUF_INT32, v->n, 0, &v->types, err);
	if (rc == ST_OK && v->spm)
		rc = read_array(v, "tokenizer.ggml.scores", ST_GGUF_FLOAT32, v->n, 1, &v->scores,
		                err);
	if (rc == ST_OK && !v->spm)
		rc = read_array(v, "tokenizer.ggml.merges", ST_GGUF_STRING, 0, 1, &v->merges, err);
	if (rc != ST_OK)
		return rc;
	if (!v->spm) {
		const st_gguf_value *pre = meta(g, "tokenizer.ggml.pre");
		if (pre && pre->type != ST_GGUF_STRING)
			return st__error(err, ST_EFORMAT, "%s: tokenizer.ggml.pre is not a string",
			                 v->path);
		v->pre = pre ? st_gguf_pre_find(pre->v.s, (size_t)pre->n)
		             : st_gguf_pre_find("default", 7);
		if (!v->pre)
			return st__error(err, ST_EUNSUPPORTED,
			                 "%s: tokenizer.ggml.pre '%s' is not rebuilt (gpt-2, "
			                 "llama-bpe, qwen2)",
			                 v->path, st__qname(q, sizeof q, pre->v.s, (size_t)pre->n));
	}
	static const char *const ids[] = {"tokenizer.ggml.bos_token_id",
	                                  "tokenizer.ggml.eos_token_id",
	                                  "tokenizer.ggml.unknown_token_id",
	                                  "tokenizer.ggml.padding_token_id"};
	struct tok_id *to[] = {&v->bos, &v->eos, &v->unk, &v->pad};
	for (size_t i = 0; rc == ST_OK && i < 4; i++)
		rc = read_id(v, ids[i], to[i], err);
	/* llama.cpp's defaults: BOS for SentencePiece and Llama 3. */
	int llama3 = v->pre && v->pre->ignore_merges;
	if (rc == ST_OK)
		rc = read_bool(v, "tokenizer.ggml.add_bos_token", v->spm || llama3, &v->add_bos,
		               err);
	if (rc == ST_OK)
		rc = read_bool(v, "tokenizer.ggml.add_eos_token", 0, &v->add_eos, err);
	if (rc == ST_OK)
		rc = read_bool(v, "tokenizer.ggml.add_space_prefix", 1, &v->add_space_prefix, err);
	if (rc != ST_OK)
		return rc;
	v->add_bos = v->add_bos && v->bos.present;
	v->add_eos = v->add_eos && v->eos.present;
	return build_table(v, err);
}

static void vocab_free(struct vocab *v)
{
	free(v->table);
	free(v->first);
}

/* ---- tokenizer.json -------------------------------------------------------- */

static void put_token(struct st__buf *b, const struct vocab *v, uint32_t id)
{
	st_gguf_value t = token(v, id);
	st__buf_json_string(b, t.v.s, (size_t)t.n);
}

static void put_added(struct st__buf *b, const struct vocab *v)
{
	int any = 0;
	st__buf_puts(b, "  \"added_tokens\": [");
	for (uint32_t i = 0; i < v->n; i++) {
		int type = token_type(v, i);
		if ((type != TT_UNKNOWN && type != TT_CONTROL && type != TT_USER) || !v->first[i] ||
		    token(v, i).n == 0)
			continue;
		st__buf_printf(b,
		               "%s\n    {\n      \"id\": %u,\n      \"content\": ", any ? "," : "",
		               (unsigned)i);
		put_token(b, v, i);
		st__buf_puts(b, ",\n      \"single_word\": false,\n      \"lstrip\": false,\n"
		                "      \"rstrip\": false,\n      \"normalized\": false,\n"
		                "      \"special\": ");
		st__buf_puts(b, type == TT_USER ? "false\n    }" : "true\n    }");
		any = 1;
	}
	st__buf_puts(b, any ? "\n  ],\n" : "],\n");
}

/* One SpecialToken piece of a template. */
static void put_piece(struct st__buf *b, const struct vocab *v, uint32_t id, int type_id)
{
	st__buf_puts(b, "{\"SpecialToken\": {\"id\": ");
	put_token(b, v, id);
	st__buf_printf(b, ", \"type_id\": %d}}", type_id);
}

static void put_sequence(struct st__buf *b, const struct vocab *v, const char *seq, int type_id)
{
	if (v->add_bos) {
		put_piece(b, v, v->bos.id, type_id);
		st__buf_puts(b, ", ");
	}
	st__buf_printf(b, "{\"Sequence\": {\"id\": \"%s\", \"type_id\": %d}}", seq, type_id);
	if (v->add_eos) {
		st__buf_puts(b, ", ");
		put_piece(b, v, v->eos.id, type_id);
	}
}

static void put_special(struct st__buf *b, const struct vocab *v, uint32_t id, int *first)
{
	st__buf_puts(b, *first ? "" : ", ");
	put_token(b, v, id);
	st__buf_puts(b, ": {\"id\": ");
	put_token(b, v, id);
	st__buf_printf(b, ", \"ids\": [%u], \"tokens\": [", (unsigned)id);
	put_token(b, v, id);
	st__buf_puts(b, "]}");
	*first = 0;
}

/* TemplateProcessing: BOS and EOS around each sequence, as asked. */
static void put_template(struct st__buf *b, const struct vocab *v, const char *indent)
{
	st__buf_printf(b, "{\n%s  \"type\": \"TemplateProcessing\",\n%s  \"single\": [", indent,
	               indent);
	put_sequence(b, v, "A", 0);
	st__buf_printf(b, "],\n%s  \"pair\": [", indent);
	put_sequence(b, v, "A", 0);
	st__buf_puts(b, ", ");
	put_sequence(b, v, "B", 1);
	st__buf_printf(b, "],\n%s  \"special_tokens\": {", indent);
	int first = 1;
	if (v->add_bos)
		put_special(b, v, v->bos.id, &first);
	if (v->add_eos && !(v->add_bos && v->eos.id == v->bos.id))
		put_special(b, v, v->eos.id, &first);
	st__buf_printf(b, "}\n%s}", indent);
}

#define BYTELEVEL(prefix, trim, regex)                                                        \
	"{\"type\": \"ByteLevel\", \"add_prefix_space\": " prefix ", \"trim_offsets\": " trim \
	", \"use_regex\": " regex "}"

static void put_pipeline_bpe(struct st__buf *b, const struct vocab *v)
{
	st__buf_puts(b, v->pre->nfc ? "  \"normalizer\": {\"type\": \"NFC\"},\n"
	                            : "  \"normalizer\": null,\n");
	if (v->pre->pattern) {
		st__buf_puts(b, "  \"pre_tokenizer\": {\n    \"type\": \"Sequence\",\n"
		                "    \"pretokenizers\": [\n      {\"type\": \"Split\", "
		                "\"pattern\": {\"Regex\": ");
		st__buf_json_string(b, v->pre->pattern, strlen(v->pre->pattern));
		st__buf_puts(b, "}, \"behavior\": \"Isolated\", \"invert\": false},\n     "
		                " " BYTELEVEL("false", "true", "false") "\n    ]\n  },\n");
	} else {
		st__buf_puts(b, "  \"pre_tokenizer\": " BYTELEVEL("false", "true", "true") ",\n");
	}
	if (v->add_bos || v->add_eos) {
		st__buf_puts(b, "  \"post_processor\": {\n    \"type\": \"Sequence\",\n"
		                "    \"processors\": [\n      " BYTELEVEL("true", "false",
		                                                          "true") ",\n      ");
		put_template(b, v, "      ");
		st__buf_puts(b, "\n    ]\n  },\n");
	} else {
		st__buf_puts(b, "  \"post_processor\": " BYTELEVEL("true", "false", "true") ",\n");
	}
	st__buf_puts(b, "  \"decoder\": " BYTELEVEL("true", "true", "true") ",\n");
}

/* Llama 2's tokenizer.json: Prepend and Replace, no pre-tokenizer. */
static void put_pipeline_spm(struct st__buf *b, const struct vocab *v)
{
	st__buf_puts(b, "  \"normalizer\": {\n    \"type\": \"Sequence\",\n"
	                "    \"normalizers\": [\n");
	if (v->add_space_prefix)
		st__buf_puts(b, "      {\"type\": \"Prepend\", \"prepend\": \"" SPM_SPACE "\"},\n");
	st__buf_puts(b, "      {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
	                "\"content\": \"" SPM_SPACE "\"}\n    ]\n  },\n"
	                "  \"pre_tokenizer\": null,\n");
	if (v->add_bos || v->add_eos) {
		st__buf_puts(b, "  \"post_processor\": ");
		put_template(b, v, "  ");
		st__buf_puts(b, ",\n");
	} else {
		st__buf_puts(b, "  \"post_processor\": null,\n");
	}
	st__buf_puts(b, "  \"decoder\": {\n    \"type\": \"Sequence\",\n    \"decoders\": [\n"
	                "      {\"type\": \"Replace\", \"pattern\": {\"String\": \"" SPM_SPACE
	                "\"}, \"content\": \" \"},\n"
	                "      {\"type\": \"ByteFallback\"},\n      {\"type\": \"Fuse\"}");
	if (v->add_space_prefix)
		st__buf_puts(b, ",\n      {\"type\": \"Strip\", \"content\": \" \", \"start\": 1, "
		                "\"stop\": 0}");
	st__buf_puts(b, "\n    ]\n  },\n");
}

static void put_vocab(struct st__buf *b, const struct vocab *v)
{
	st__buf_puts(b, "    \"vocab\": {");
	int any = 0;
	for (uint32_t i = 0; i < v->n; i++) {
		if (!v->first[i])
			continue;
		st__buf_puts(b, any ? ",\n      " : "\n      ");
		put_token(b, v, i);
		st__buf_printf(b, ": %u", (unsigned)i);
		any = 1;
	}
	st__buf_puts(b, "\n    },\n");
}

static void put_merge(struct st__buf *b, const char *a, size_t alen, const char *c, size_t clen,
                      int *first)
{
	st__buf_puts(b, *first ? "\n      [" : ",\n      [");
	st__buf_json_string(b, a, alen);
	st__buf_puts(b, ", ");
	st__buf_json_string(b, c, clen);
	st__buf_puts(b, "]");
	*first = 0;
}

static int bad_merge(const struct vocab *v, uint64_t i, const char *s, size_t n, const char *why,
                     st_error *err)
{
	char q[160];
	return st__error(err, ST_EFORMAT, "%s: tokenizer.ggml.merges[%llu] '%s'%s", v->path,
	                 (unsigned long long)i, st__qname(q, sizeof q, s, n), why);
}

/* tokenizer.ggml.merges: "a b" split at the first space after the first
 * byte (as llama.cpp reads them); a, b and ab must be tokens (tokenizers
 * refuses a file where they are not). */
static int put_merges_bpe(struct st__buf *b, const struct vocab *v, st_error *err)
{
	char *cat = NULL;
	size_t cap = 0;
	int first = 1, rc = ST_OK;
	for (uint64_t i = 0; rc == ST_OK && i < v->merges->n; i++) {
		st_gguf_value m;
		st_gguf_array_get(v->merges, i, &m);
		const char *s = m.v.s;
		size_t n = (size_t)m.n;
		const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;
		if (!sp || sp + 1 == s + n) {
			rc = bad_merge(v, i, s, n, " is not two tokens separated by a space", err);
			break;
		}
		size_t alen = (size_t)(sp - s), clen = n - alen - 1;
		if (n > cap) {
			free(cat);
			cap = n;
			cat = malloc(cap);
			if (!cat) {
				rc = st__error(err, ST_ENOMEM, "out of memory");
				break;
			}
		}
		memcpy(cat, s, alen);
		memcpy(cat + alen, sp + 1, clen);
		if (find(v, s, alen) < 0 || find(v, sp + 1, clen) < 0 || find(v, cat, n - 1) < 0) {
			rc = bad_merge(v, i, s, n,
			               ": a part or the merged token is not in "
			               "tokenizer.ggml.tokens",
			               err);
			break;
		}
		put_merge(b, s, alen, sp + 1, clen, &first);
	}
	free(cat);
	return rc;
}

/* One SentencePiece merge: token id split after `at` bytes. */
struct spm_merge {
	float score;
	uint32_t id, left, at;
};

static int cmp_spm(const void *pa, const void *pb)
{
	const struct spm_merge *a = pa, *b = pb;
	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return (a->left > b->left) - (a->left < b->left);
}

/* The length of the UTF-8 character at s (valid UTF-8, n > 0). */
static size_t char_len(const unsigned char *s)
{
	return *s < 0x80 ? 1 : *s < 0xe0 ? 2 : *s < 0xf0 ? 3 : 4;
}

/* Visit each split of normal token i into two tokens; n counts them, out
 * (may be NULL) gets them. */
static void spm_splits(const struct vocab *v, uint32_t i, struct spm_merge *out, size_t *n)
{
	st_gguf_value t = token(v, i);
	st_gguf_value sc;
	st_gguf_array_get(v->scores, i, &sc);
	float score = isnan(sc.v.f) ? -INFINITY : (float)sc.v.f;
	const unsigned char *s = (const unsigned char *)t.v.s;
	for (size_t j = t.n ? char_len(s) : 0; j < t.n; j += char_len(s + j)) {
		long l = find(v, t.v.s, j), r = find(v, t.v.s + j, (size_t)t.n - j);
		if (l < 0 || r < 0)
			continue;
		if (out)
			out[*n] = (struct spm_merge){score, i, (uint32_t)l, (uint32_t)j};
		(*n)++;
	}
}

/*
 * transformers' SentencePieceExtractor: every split of a piece into two
 * pieces of the vocabulary, ordered by the piece's score (higher first),
 * then by the piece's id and the left part's id. Only normal tokens are
 * split: control, byte and user-defined tokens are never merged into
 * (llama.cpp's tokenizer and strun's read the GGUF so).
 */
static int put_merges_spm(struct st__buf *b, const struct vocab *v, st_error *err)
{
	size_t total = 0;
	for (uint32_t i = 0; i < v->n; i++)
		if (v->first[i] && token_type(v, i) == TT_NORMAL)
			spm_splits(v, i, NULL, &total);
	struct spm_merge *m = malloc((total ? total : 1) * sizeof *m);
	if (!m)
		return st__error(err, ST_ENOMEM, "out of memory");
	size_t k = 0;
	for (uint32_t i = 0; i < v->n; i++)
		if (v->first[i] && token_type(v, i) == TT_NORMAL)
			spm_splits(v, i, m, &k);
	qsort(m, total, sizeof *m, cmp_spm);
	int first = 1;
	for (size_t i = 0; i < total; i++) {
		st_gguf_value t = token(v, m[i].id);
		put_merge(b, t.v.s, m[i].at, t.v.s + m[i].at, (size_t)t.n - m[i].at, &first);
	}
	free(m);
	return ST_OK;
}

static int put_model(struct st__buf *b, const struct vocab *v, st_error *err)
{
	st__buf_puts(b, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n"
	                "    \"unk_token\": ");
	if (v->spm && v->unk.present)
		put_token(b, v, v->unk.id);
	else
		st__buf_puts(b, "null");
	/* (st__buf_printf takes up to 127 bytes) */
	st__buf_puts(b, ",\n    \"continuing_subword_prefix\": null,\n"
	                "    \"end_of_word_suffix\": null,\n");
	st__buf_printf(b, "    \"fuse_unk\": %s,\n    \"byte_fallback\": %s,\n",
	               v->spm ? "true" : "false", v->spm ? "true" : "false");
	st__buf_printf(b, "    \"ignore_merges\": %s,\n",
	               !v->spm && v->pre->ignore_merges ? "true" : "false");
	put_vocab(b, v);
	st__buf_puts(b, "    \"merges\": [");
	int rc = v->spm ? put_merges_spm(b, v, err) : put_merges_bpe(b, v, err);
	st__buf_puts(b, "\n    ]\n  }\n}\n");
	return rc;
}

static int finish(struct st__buf *b, int rc, char **json, size_t *len, st_error *err)
{
	if (rc == ST_OK && b->failed)
		rc = st__error(err, ST_ENOMEM, "out of memory");
	if (rc != ST_OK) {
		st__buf_free(b);
		return rc;
	}
	*json = b->data;
	*len = b->len;
	return ST_OK;
}

int st_gguf_hf_tokenizer(const st_gguf *g, char **json, size_t *len, st_error *err)
{
	ST__REQUIRE(g && json && len);
	*json = NULL;
	*len = 0;
	struct vocab v;
	int rc = vocab_read(&v, g, err);
	struct st__buf b = {0};
	if (rc == ST_OK) {
		st__buf_puts(&b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n"
		                 "  \"padding\": null,\n");
		put_added(&b, &v);
		if (v.spm)
			put_pipeline_spm(&b, &v);
		else
			put_pipeline_bpe(&b, &v);
		rc = put_model(&b, &v, err);
	}
	vocab_free(&v);
	return finish(&b, rc, json, len, err);
}

/* ---- tokenizer_config.json ------------------------------------------------- */

static void put_config_token(struct st__buf *b, const struct vocab *v, const char *field,
                             const struct tok_id *id)
{
	st__buf_printf(b, ",\n  \"%s\": ", field);
	if (id->present)
		put_token(b, v, id->id);
	else
		st__buf_puts(b, "null");
}

/* <arch>.context_length, when general.architecture names one. */
static uint64_t context_length(const st_gguf *g)
{
	const st_gguf_value *a = meta(g, "general.architecture");
	char key[96];
	if (!a || a->type != ST_GGUF_STRING || a->n == 0 || a->n > 64 ||
	    memchr(a->v.s, 0, (size_t)a->n))
		return 0;
	snprintf(key, sizeof key, "%.*s.context_length", (int)a->n, a->v.s);
	const st_gguf_value *c = meta(g, key);
	if (!c || !is_int(c->type) || (is_signed(c->type) && c->v.i < 1) || c->v.u < 1)
		return 0;
	return c->v.u;
}

int st_gguf_hf_tokenizer_config(const st_gguf *g, char **json, size_t *len, st_error *err)
{
	ST__REQUIRE(g && json && len);
	*json = NULL;
	*len = 0;
	struct vocab v;
	int rc = vocab_read(&v, g, err);
	struct st__buf b = {0};
	const st_gguf_value *chat = meta(g, "tokenizer.chat_template");
	size_t bad;
	if (rc == ST_OK && chat &&
	    (chat->type != ST_GGUF_STRING || !st__utf8_valid(chat->v.s, (size_t)chat->n, &bad)))
		rc = st__error(err, ST_EFORMAT, "%s: tokenizer.chat_template is not a UTF-8 string",
		               v.path);
	if (rc == ST_OK) {
		st__buf_printf(&b, "{\n  \"add_bos_token\": %s,\n  \"add_eos_token\": %s",
		               v.add_bos ? "true" : "false", v.add_eos ? "true" : "false");
		put_config_token(&b, &v, "bos_token", &v.bos);
		if (chat) {
			st__buf_puts(&b, ",\n  \"chat_template\": ");
			st__buf_json_string(&b, chat->v.s, (size_t)chat->n);
		}
		st__buf_puts(&b, ",\n  \"clean_up_tokenization_spaces\": false");
		put_config_token(&b, &v, "eos_token", &v.eos);
		uint64_t ctx = context_length(g);
		if (ctx)
			st__buf_printf(&b, ",\n  \"model_max_length\": %llu",
			               (unsigned long long)ctx);
		if (v.pad.present)
			put_config_token(&b, &v, "pad_token", &v.pad);
		st__buf_puts(&b, ",\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\"");
		if (v.unk.present)
			put_config_token(&b, &v, "unk_token", &v.unk);
		st__buf_puts(&b, "\n}\n");
	}
	vocab_free(&v);
	return finish(&b, rc, json, len, err);
}

int st__gguf_tokenizer_files(const st_gguf *g, char **tok, size_t *tok_len, char **cfg,
                             size_t *cfg_len, st_error *err)
{
	int rc = st_gguf_hf_tokenizer(g, tok, tok_len, err);
	if (rc == ST_OK)
		rc = st_gguf_hf_tokenizer_config(g, cfg, cfg_len, err);
	if (rc != ST_OK) {
		free(*tok);
		*tok = NULL;
	}
	return rc;
}

int st_gguf_write_tokenizer(const st_gguf *g, const char *dir, unsigned flags, st_error *err)
{
	ST__REQUIRE(g && dir);
	char *tok = NULL, *cfg = NULL;
	size_t tok_len = 0, cfg_len = 0;
	/* The files first: a GGUF without a tokenizer writes nothing. */
	int rc = st__gguf_tokenizer_files(g, &tok, &tok_len, &cfg, &cfg_len, err);
	st_snapshot *s = NULL;
	if (rc == ST_OK)
		rc = st_snapshot_open(&s, dir, flags, err);
	if (rc == ST_OK)
		rc = st_snapshot_add_file(s, "tokenizer.json", tok, tok_len, 0666, err);
	if (rc == ST_OK)
		rc = st_snapshot_add_file(s, "tokenizer_config.json", cfg, cfg_len, 0666, err);
	if (rc == ST_OK)
		rc = st_snapshot_commit(s, err);
	st_snapshot_close(s);
	free(tok);
	free(cfg);
	return rc;
}
