/*
 * hf_gguf_vocab.c - a Hugging Face tokenizer.json (byte-level BPE) as a
 * GGUF vocabulary, tokenizer.ggml.* (internal.h's st__hf_vocab), read as
 * convert_hf_to_gguf.py's get_vocab_base and gguf-py's SpecialVocab
 * write it (llama.cpp's conversion/base.py): every id below vocab_size in
 * order, an id without a token "[PAD<id>]" of type UNUSED; an added token
 * CONTROL when special (or when it looks special: "<|...|>"), else
 * USER_DEFINED; merges as "a b"; tokenizer.ggml.pre the name llama.cpp
 * gives the Split regex (st_gguf_pre_from_pattern), "gpt-2" for GPT-2's
 * own ByteLevel regex. The special tokens are tokenizer_config.json's
 * bos_token, eos_token, pad_token, unk_token, found by their text.
 *
 * SentencePiece-style BPE (Llama 2, Mistral's tokenizer.json: model BPE
 * with byte_fallback, a Sequence decoder) is written as
 * _set_vocab_llama_hf and gguf-py's LlamaHfVocab write it when there is no
 * tokenizer.model: tokenizer.ggml.model "llama", pre "default", the tokens
 * as they are (U+2581 for spaces), every score -1000, "<0xHH>" BYTE, the
 * special tokens (tokenizer_config.json's bos/eos/unk/pad and
 * additional_special_tokens) CONTROL, other added tokens USER_DEFINED, no
 * merges; ids the tokenizer lacks up to vocab_size "[PAD<id>]" UNUSED
 * (LlamaHfVocab writes only the tokenizer's, which llama.cpp then refuses
 * against token_embd's rows); add_space_prefix from
 * tokenizer_config.json's add_prefix_space. (With a tokenizer.model the
 * converter reads that instead, with its real scores: not done here.)
 *
 * What it is not: other SentencePiece-like tokenizers (Metaspace without
 * byte_fallback, Unigram), refused rather than written as something
 * llama.cpp would tokenize differently; a tokenizer.json whose regex
 * llama.cpp has no name for is refused too (llama.cpp refuses an unknown
 * tokenizer.ggml.pre).
 *
 * Untrusted input: every id is checked against vocab_size before it
 * indexes anything; strings are cJSON's (an escaped NUL ends them).
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gguf-py's TokenType. */
enum { T_NORMAL = 1, T_CONTROL = 3, T_USER_DEFINED = 4, T_UNUSED = 5, T_BYTE = 6 };

#define PAD_TEXT 26 /* "[PAD" 20 digits "]" NUL, and room */

void st__hf_vocab_free(struct st__hf_vocab *v)
{
	free(v->tokens);
	free(v->types);
	free(v->scores);
	free(v->pads);
	free(v->merges);
	free(v->mtext);
	st__json_free(v->tok);
	st__json_free(v->cfg);
	memset(v, 0, sizeof *v);
	v->bos = v->eos = v->pad = v->unk = -1;
	v->add_bos = v->add_eos = v->add_space_prefix = -1;
}

static int is_str(const struct st__json *j, const char *want)
{
	const char *s = st__json_string(j);
	return s && !strcmp(s, want);
}

/* An id: an integer from 0 below n, else -1. */
static long long json_id(const struct st__json *j, uint64_t n)
{
	if (st__json_type(j) != ST__JSON_NUMBER)
		return -1;
	double d = st__json_number(j);
	if (!(d >= 0) || d != floor(d) || d >= (double)n)
		return -1;
	return (long long)d;
}

static void set_token(struct st__hf_vocab *v, uint64_t id, const char *s, int type)
{
	v->tokens[id].type = ST_GGUF_STRING;
	v->tokens[id].v.s = s;
	v->tokens[id].n = strlen(s);
	for (unsigned b = 0; b < 4; b++)
		v->types[id * 4 + b] = (unsigned char)((unsigned)type >> (8 * b));
}

/* does_token_look_special of conversion/base.py. */
static int looks_special(const char *s)
{
	size_t n = strlen(s);
	static const char *const exact[] = {"<pad>", "<mask>", "<2mass>", "[@BOS@]"};
	for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
		if (!strcmp(s, exact[i]))
			return 1;
	if (n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>"))
		return 1;
	if (n >= 8 && !strncmp(s, "<\xef\xbd\x9c", 4) && !strcmp(s + n - 4, "\xef\xbd\x9c>"))
		return 1;
	return n >= 8 && !strncmp(s, "<unused", 7) && s[n - 1] == '>';
}

/* A Metaspace step anywhere in a normalizer or pre-tokenizer, or a Replace
 * of " " with U+2581: SentencePiece's convention. */
static int sentencepiece_like(const struct st__json *j)
{
	if (is_str(st__json_get(j, "type"), "Metaspace"))
		return 1;
	if (is_str(st__json_get(j, "type"), "Replace") &&
	    is_str(st__json_get(j, "content"), "\xe2\x96\x81"))
		return 1;
	const struct st__json *list = st__json_get(j, "pretokenizers");
	if (!list)
		list = st__json_get(j, "normalizers");
	for (const struct st__json *e = st__json_first(list); e; e = st__json_next(e))
		if (sentencepiece_like(e))
			return 1;
	return 0;
}

/* tokenizer.ggml.pre from the pre_tokenizer: a Split regex with ByteLevel,
 * or ByteLevel alone with its own regex (GPT-2). */
static int find_pre(struct st__hf_vocab *v, const struct st__json *pt, const char *name,
                    st_error *err)
{
	const struct st__json *steps = st__json_get(pt, "pretokenizers");
	const char *pattern = NULL;
	int byte_level = 0, gpt2_regex = 0;
	const struct st__json *one = steps ? st__json_first(steps) : pt;
	for (const struct st__json *e = one; e; e = steps ? st__json_next(e) : NULL) {
		if (is_str(st__json_get(e, "type"), "ByteLevel")) {
			byte_level = 1;
			gpt2_regex |= st__json_type(st__json_get(e, "use_regex")) != ST__JSON_FALSE;
		} else if (is_str(st__json_get(e, "type"), "Split") && !pattern) {
			pattern =
				st__json_string(st__json_get(st__json_get(e, "pattern"), "Regex"));
			if (!pattern)
				return st__error(err, ST_EUNSUPPORTED,
				                 "%s: a Split pre-tokenizer without a Regex "
				                 "pattern: "
				                 "llama.cpp has no name for it",
				                 name);
		}
	}
	if (!byte_level)
		return st__error(err, ST_EUNSUPPORTED,
		                 "%s: the pre-tokenizer has no ByteLevel step: not a byte-level "
		                 "BPE "
		                 "tokenizer llama.cpp's \"gpt2\" model reads",
		                 name);
	const st_gguf_pre *p = pattern      ? st_gguf_pre_from_pattern(pattern, strlen(pattern))
	                       : gpt2_regex ? st_gguf_pre_find("gpt-2", 5)
	                                    : NULL;
	if (!p) {
		char q[160];
		return st__error(err, ST_EUNSUPPORTED,
		                 "%s: pre-tokenizer regex '%s' is not one llama.cpp names "
		                 "(gpt-2, llama-bpe, qwen2): no tokenizer.ggml.pre to write",
		                 name,
		                 pattern ? st__qname(q, sizeof q, pattern, strlen(pattern))
		                         : "(none)");
	}
	v->pre = p->name;
	return ST_OK;
}

/* model.vocab {text: id}: each id once, below n. */
static int read_vocab(struct st__hf_vocab *v, const struct st__json *vocab, const char *name,
                      st_error *err)
{
	if (st__json_type(vocab) != ST__JSON_OBJECT)
		return st__error(err, ST_EFORMAT, "%s: model.vocab is not an object", name);
	for (const struct st__json *e = st__json_first(vocab); e; e = st__json_next(e)) {
		char q[160];
		const char *s = st__json_key(e);
		long long id = json_id(e, v->n);
		if (!s || id < 0)
			return st__error(err, ST_EFORMAT,
			                 "%s: token '%s': its id is not an integer below "
			                 "vocab_size "
			                 "%llu",
			                 name, s ? st__qname(q, sizeof q, s, strlen(s)) : "?",
			                 (unsigned long long)v->n);
		if (v->tokens[id].v.s)
			return st__error(err, ST_EFORMAT, "%s: id %lld is given to two tokens",
			                 name, id);
		set_token(v, (uint64_t)id, s, T_NORMAL);
	}
	return ST_OK;
}

/* added_tokens [{id, content, special}]: over the vocabulary's ids. */
static int read_added(struct st__hf_vocab *v, const struct st__json *added, const char *name,
                      st_error *err)
{
	for (const struct st__json *e = st__json_first(added); e; e = st__json_next(e)) {
		long long id = json_id(st__json_get(e, "id"), v->n);
		const char *s = st__json_string(st__json_get(e, "content"));
		if (id < 0 || !s)
			return st__error(err, ST_EFORMAT,
			                 "%s: an added token without a content or an id below "
			                 "vocab_size %llu",
			                 name, (unsigned long long)v->n);
		int special = st__json_type(st__json_get(e, "special")) == ST__JSON_TRUE;
		set_token(v, (uint64_t)id, s,
		          special || looks_special(s) ? T_CONTROL : T_USER_DEFINED);
	}
	return ST_OK;
}

/* model.merges: "a b" strings or [a, b] pairs, as "a b". */
static int read_merges(struct st__hf_vocab *v, const struct st__json *merges, const char *name,
                       st_error *err)
{
	size_t n = 0, bytes = 0;
	for (const struct st__json *e = st__json_first(merges); e; e = st__json_next(e)) {
		const char *s = st__json_string(e);
		const char *a = st__json_string(st__json_at(e, 0));
		const char *b = st__json_string(st__json_at(e, 1));
		if (s ? !strchr(s, ' ') : !(a && b && !st__json_at(e, 2)))
			return st__error(err, ST_EFORMAT, "%s: merge %zu is not \"a b\" or [a, b]",
			                 name, n);
		bytes += s ? strlen(s) : strlen(a) + 1 + strlen(b);
		n++;
	}
	v->merges = calloc(n ? n : 1, sizeof *v->merges);
	v->mtext = malloc(bytes ? bytes : 1);
	if (!v->merges || !v->mtext)
		return st__error(err, ST_ENOMEM, "%s: out of memory for %zu merges", name, n);
	size_t at = 0, i = 0;
	for (const struct st__json *e = st__json_first(merges); e; e = st__json_next(e), i++) {
		const char *s = st__json_string(e);
		st_gguf_value *m = &v->merges[i];
		m->type = ST_GGUF_STRING;
		if (s) {
			m->v.s = s;
			m->n = strlen(s);
			continue;
		}
		const char *a = st__json_string(st__json_at(e, 0));
		const char *b = st__json_string(st__json_at(e, 1));
		size_t la = strlen(a), lb = strlen(b);
		memcpy(v->mtext + at, a, la);
		v->mtext[at + la] = ' ';
		memcpy(v->mtext + at + la + 1, b, lb);
		m->v.s = v->mtext + at;
		m->n = la + 1 + lb;
		at += la + 1 + lb;
	}
	v->n_merges = n;
	return ST_OK;
}

/* The id of a token's text: an added token first, then the vocabulary. */
static long long id_of(const struct st__hf_vocab *v, const char *s)
{
	const struct st__json *added = st__json_get(v->tok, "added_tokens");
	for (const struct st__json *e = st__json_first(added); e; e = st__json_next(e))
		if (is_str(st__json_get(e, "content"), s))
			return json_id(st__json_get(e, "id"), v->n);
	return json_id(st__json_get(st__json_get(st__json_get(v->tok, "model"), "vocab"), s), v->n);
}

/* tokenizer_config.json's <typ>_token (a string or {"content": ...}). */
static long long special_id(const struct st__hf_vocab *v, const char *key)
{
	const struct st__json *t = st__json_get(v->cfg, key);
	const char *s = st__json_string(t) ? st__json_string(t)
	                                   : st__json_string(st__json_get(t, "content"));
	return s ? id_of(v, s) : -1;
}

static int flag(const struct st__json *cfg, const char *key)
{
	enum st__json_type t = st__json_type(st__json_get(cfg, key));
	return t == ST__JSON_TRUE ? 1 : t == ST__JSON_FALSE ? 0 : -1;
}

/* SpecialVocab: the special ids and add_bos/add_eos of tokenizer_config.json. */
static void read_specials(struct st__hf_vocab *v)
{
	v->bos = special_id(v, "bos_token");
	v->eos = special_id(v, "eos_token");
	v->pad = special_id(v, "pad_token");
	v->unk = special_id(v, "unk_token");
	v->add_bos = flag(v->cfg, "add_bos_token");
	v->add_eos = flag(v->cfg, "add_eos_token");
}

/* Mark the ids of the special tokens (LlamaHfVocab's all_special_ids,
 * transformers' special tokens map): tokenizer_config.json's bos/eos/unk/
 * pad and additional_special_tokens (an added token marked special but
 * not named there is not one). Each looked up once. */
static void mark_special(const struct st__hf_vocab *v, unsigned char *mark)
{
	static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		long long id = special_id(v, keys[i]);
		if (id >= 0)
			mark[id] = 1;
	}
	const struct st__json *more = st__json_get(v->cfg, "additional_special_tokens");
	for (const struct st__json *e = st__json_first(more); e; e = st__json_next(e)) {
		const char *s = st__json_string(e) ? st__json_string(e)
		                                   : st__json_string(st__json_get(e, "content"));
		long long id = s ? id_of(v, s) : -1;
		if (id >= 0)
			mark[id] = 1;
	}
}

/* "<0xHH>": a byte_fallback token. */
static int is_byte_token(const char *s)
{
	static const char hex[] = "0123456789abcdefABCDEF";
	return strlen(s) == 6 && !strncmp(s, "<0x", 3) && s[3] && strchr(hex, s[3]) && s[4] &&
	       strchr(hex, s[4]) && s[5] == '>';
}

/* LlamaHfVocab: tokens, types, scores of -1000; no merges. */
static int parse_llama(struct st__hf_vocab *v, const struct st__json *model, const char *name,
                       st_error *err)
{
	v->model = "llama";
	v->pre = "default";
	v->scores = malloc((size_t)v->n * 4);
	v->merges = calloc(1, sizeof *v->merges);
	unsigned char *special = calloc((size_t)v->n, 1);
	int rc = v->scores && v->merges && special
	                 ? read_vocab(v, st__json_get(model, "vocab"), name, err)
	                 : st__error(err, ST_ENOMEM, "%s: out of memory", name);
	if (rc == ST_OK)
		rc = read_added(v, st__json_get(v->tok, "added_tokens"), name, err);
	if (rc != ST_OK) {
		free(special);
		return rc;
	}
	mark_special(v, special);
	const float score = -1000.0f;
	uint32_t bits;
	memcpy(&bits, &score, 4);
	for (uint64_t id = 0; id < v->n; id++) {
		for (unsigned b = 0; b < 4; b++)
			v->scores[id * 4 + b] = (unsigned char)(bits >> (8 * b));
		if (!v->tokens[id].v.s) {
			char *p = v->pads + id * PAD_TEXT;
			snprintf(p, PAD_TEXT, "[PAD%llu]", (unsigned long long)id);
			set_token(v, id, p, T_UNUSED);
			continue;
		}
		const char *s = v->tokens[id].v.s;
		int added = v->types[id * 4] != T_NORMAL;
		int type = is_byte_token(s) ? T_BYTE
		           : special[id]    ? T_CONTROL
		           : added          ? T_USER_DEFINED
		                            : T_NORMAL;
		set_token(v, id, s, type);
	}
	free(special);
	read_specials(v);
	v->add_space_prefix = flag(v->cfg, "add_prefix_space");
	return ST_OK;
}

static int parse(struct st__hf_vocab *v, const char *name, st_error *err)
{
	const struct st__json *model = st__json_get(v->tok, "model");
	if (st__json_type(v->tok) != ST__JSON_OBJECT || st__json_type(model) != ST__JSON_OBJECT)
		return st__error(err, ST_EFORMAT, "%s: not a tokenizer.json (no \"model\" object)",
		                 name);
	const char *type = st__json_string(st__json_get(model, "type"));
	char q[160];
	if (!type || strcmp(type, "BPE"))
		return st__error(err, ST_EUNSUPPORTED,
		                 "%s: model type '%s': only BPE tokenizers are written", name,
		                 type ? st__qname(q, sizeof q, type, strlen(type)) : "(none)");
	int fallback = st__json_type(st__json_get(model, "byte_fallback")) == ST__JSON_TRUE;
	if (fallback && is_str(st__json_get(st__json_get(v->tok, "decoder"), "type"), "Sequence"))
		return parse_llama(v, model, name, err);
	if (fallback || sentencepiece_like(st__json_get(v->tok, "pre_tokenizer")) ||
	    sentencepiece_like(st__json_get(v->tok, "normalizer")))
		return st__error(err, ST_EUNSUPPORTED,
		                 "%s: a SentencePiece-style tokenizer that is not BPE with "
		                 "byte_fallback and a Sequence decoder (as Llama 2's and Mistral's "
		                 "tokenizer.json are): convert_hf_to_gguf has no GGUF vocabulary "
		                 "for it",
		                 name);
	v->model = "gpt2";
	int rc = find_pre(v, st__json_get(v->tok, "pre_tokenizer"), name, err);
	if (rc == ST_OK)
		rc = read_vocab(v, st__json_get(model, "vocab"), name, err);
	if (rc == ST_OK)
		rc = read_added(v, st__json_get(v->tok, "added_tokens"), name, err);
	if (rc == ST_OK)
		rc = read_merges(v, st__json_get(model, "merges"), name, err);
	if (rc != ST_OK)
		return rc;
	for (uint64_t id = 0; id < v->n; id++)
		if (!v->tokens[id].v.s) {
			char *p = v->pads + id * PAD_TEXT;
			snprintf(p, PAD_TEXT, "[PAD%llu]", (unsigned long long)id);
			set_token(v, id, p, T_UNUSED);
		}
	read_specials(v);
	return ST_OK;
}

/* The arrays for n_vocab ids, and tok parsed into v->tok. */
static int start(struct st__hf_vocab *v, const char *tok, size_t len, uint64_t n_vocab,
                 const char *name, st_error *err)
{
	memset(v, 0, sizeof *v);
	st__hf_vocab_free(v);
	if (!n_vocab || n_vocab > (1ull << 31))
		return st__error(err, ST_EINVAL, "%s: vocab_size %llu is out of range", name,
		                 (unsigned long long)n_vocab);
	v->n = n_vocab;
	v->tok = st__json_parse(tok, len);
	v->tokens = calloc((size_t)n_vocab, sizeof *v->tokens);
	v->types = malloc((size_t)n_vocab * 4);
	v->pads = malloc((size_t)n_vocab * PAD_TEXT);
	if (!v->tokens || !v->types || !v->pads)
		return st__error(err, ST_ENOMEM, "%s: out of memory for %llu tokens", name,
		                 (unsigned long long)n_vocab);
	if (!v->tok)
		return st__error(err, ST_EFORMAT, "%s: not JSON", name);
	return ST_OK;
}

int st__hf_vocab_parse(struct st__hf_vocab *v, const char *tok, size_t len, const char *cfg,
                       size_t cfg_len, uint64_t n_vocab, const char *name, st_error *err)
{
	int rc = start(v, tok, len, n_vocab, name, err);
	if (rc == ST_OK) {
		v->cfg = cfg ? st__json_parse(cfg, cfg_len) : NULL;
		rc = parse(v, name, err);
	}
	if (rc != ST_OK)
		st__hf_vocab_free(v);
	return rc;
}

/* merges.txt: an optional "#version" line, then one "a b" a line. */
static int read_merges_txt(struct st__hf_vocab *v, const char *text, size_t len, const char *name,
                           st_error *err)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	v->merges = calloc(n + 1, sizeof *v->merges);
	v->mtext = malloc(len + 1);
	if (!v->merges || !v->mtext)
		return st__error(err, ST_ENOMEM, "%s: out of memory for %zu merges", name, n);
	memcpy(v->mtext, text, len);
	size_t line = 0;
	for (size_t at = 0; at < len; line++) {
		char *s = v->mtext + at;
		const char *end = memchr(s, '\n', len - at);
		size_t k = end ? (size_t)(end - s) : len - at;
		at += k + (end != NULL);
		if (k && s[k - 1] == '\r')
			k--;
		if (memchr(s, '\0', k))
			return st__error(err, ST_EFORMAT, "%s: line %zu holds a NUL", name,
			                 line + 1);
		s[k] = '\0'; /* each merge a C string too */
		if (k == 0 || (line == 0 && k >= 8 && !memcmp(s, "#version", 8)))
			continue;
		const char *sp = memchr(s, ' ', k);
		if (!sp || sp == s || sp == s + k - 1 ||
		    memchr(sp + 1, ' ', k - (size_t)(sp - s) - 1))
			return st__error(err, ST_EFORMAT, "%s: line %zu is not a merge \"a b\"",
			                 name, line + 1);
		st_gguf_value *m = &v->merges[v->n_merges++];
		m->type = ST_GGUF_STRING;
		m->v.s = s;
		m->n = k;
	}
	return ST_OK;
}

int st__hf_vocab_parse_pair(struct st__hf_vocab *v, const char *vocab, size_t vlen,
                            const char *merges, size_t mlen, uint64_t n_vocab, const char *vname,
                            const char *mname, st_error *err)
{
	int rc = start(v, vocab, vlen, n_vocab, vname, err);
	if (rc == ST_OK)
		rc = read_vocab(v, v->tok, vname, err);
	if (rc == ST_OK)
		rc = read_merges_txt(v, merges, mlen, mname, err);
	/* transformers' GPT2Tokenizer makes <|endoftext|> its bos/eos/unk: a
	 * special added token, with the next free id when vocab.json lacks it. */
	long long eot = rc == ST_OK ? json_id(st__json_get(v->tok, "<|endoftext|>"), v->n) : -1;
	uint64_t next = 0;
	for (uint64_t id = 0; rc == ST_OK && eot < 0 && id < v->n; id++)
		if (v->tokens[id].v.s)
			next = id + 1;
	if (rc == ST_OK && eot < 0 && next >= v->n)
		rc = st__error(err, ST_EFORMAT,
		               "%s: no id below vocab_size %llu is left for <|endoftext|>", vname,
		               (unsigned long long)v->n);
	if (rc != ST_OK) {
		st__hf_vocab_free(v);
		return rc;
	}
	set_token(v, eot >= 0 ? (uint64_t)eot : next, "<|endoftext|>", T_CONTROL);
	v->model = "gpt2";
	v->pre = "gpt-2";
	for (uint64_t id = 0; id < v->n; id++)
		if (!v->tokens[id].v.s) {
			char *p = v->pads + id * PAD_TEXT;
			snprintf(p, PAD_TEXT, "[PAD%llu]", (unsigned long long)id);
			set_token(v, id, p, T_UNUSED);
		}
	return ST_OK;
}
