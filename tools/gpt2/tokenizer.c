/*
 * tokenizer.c - GPT-2's byte-level BPE tokenizer (see tokenizer.h): the
 * pre-tokenizer, BPE by merge rank with a word cache, encoding and
 * decoding. Loading is in tokenizer_load.c, tokenizer_pipe.c and
 * tokenizer_gguf.c, the character classes in tokenizer_unicode.c. It
 * gives the ids Hugging Face `tokenizers` gives for BPE tokenizers, byte-
 * level (GPT-2, Llama 3, Qwen2) or SentencePiece-style (Llama 2,
 * Mistral); it is not a general Hugging Face tokenizer (no WordPiece or
 * Unigram models, only the normalizers and pre-tokenizers those files use).
 *
 * Vocabulary strings live in two domains. The "char" domain is the text of
 * vocab.json: each byte is spelled as one code point of GPT-2's
 * byte-to-unicode alphabet ("Ġthe"). Merges are resolved there, as Hugging
 * Face does. The "byte" domain is what the text really holds (" the"); the
 * encoder works on bytes and decoding returns bytes.
 */
#include "gpt2/tokenizer_impl.h"
#include "gpt2/internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ---------------------------------------------------------------- */

size_t gpt2_utf8_sanitize(const char *src, size_t len, char **dst, size_t *dst_len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i = utf8_valid_prefix(s, len);
	*dst = NULL;
	*dst_len = 0;
	if (i == len)
		return 0;
	/* Measure first: each replacement is 3 bytes for 1 to 3 bad ones. */
	size_t o = i, start = i;
	while (i < len) {
		size_t bad = 0;
		size_t k = utf8_seq(s + i, len - i, &bad);
		if (k) {
			o += k;
			i += k;
		} else {
			if (o > SIZE_MAX - 4)
				return (size_t)-1;
			o += 3;
			i += bad;
		}
	}
	char *out = malloc(o + 1);
	if (!out)
		return (size_t)-1;
	i = start;
	memcpy(out, src, i);
	o = i;
	size_t n_bad = 0;
	while (i < len) {
		size_t bad = 0;
		size_t k = utf8_seq(s + i, len - i, &bad);
		if (k) {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i += bad;
			n_bad++;
		}
	}
	*dst = out;
	*dst_len = o;
	return n_bad;
}


/* ---- character classes ---------------------------------------------------- */

static const unsigned char ascii_class[128] = {
	/* 0x00-0x1F: controls are "other"; \t \n \v \f \r are spaces. */
	3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 3, 3,
	3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	/* space ! " # $ % & ' ( ) * + , - . / 0-9 : ; < = > ? */
	2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3,
	/* @ A-Z [ \ ] ^ _ */
	3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3,
	/* ` a-z { | } ~ DEL */
	3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3,
};

/* The class of the (valid UTF-8) character at s, and its length. */
static inline int char_class(const gpt2_tokenizer *t, const unsigned char *s, size_t *len)
{
	if (s[0] < 0x80) {
		*len = 1;
		return ascii_class[s[0]];
	}
	unsigned cp = utf8_get(s, len);
	return t->ucd_blocks[(size_t)t->ucd_stage1[cp >> 8] * 256 + (cp & 255)];
}

/* ---- the pre-tokenizer ---------------------------------------------------- */

/*
 * The end of the piece that starts at s[i], following GPT-2's regex
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * the way a backtracking engine matches it: the first alternative that
 * matches wins, each one greedy.
 */
static size_t next_piece(const gpt2_tokenizer *t, const unsigned char *s, size_t i, size_t end)
{
	unsigned c = s[i];
	if (c == '\'' && i + 1 < end) {
		unsigned c1 = s[i + 1];
		if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')
			return i + 2;
		if (i + 2 < end) {
			unsigned c2 = s[i + 2];
			if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') ||
			    (c1 == 'l' && c2 == 'l'))
				return i + 3;
		}
	}
	size_t k, j = i;
	int cl = char_class(t, s + i, &k);
	if (c == ' ' && i + 1 < end) {
		/* " ?" takes the space when a letter, digit or other follows. */
		size_t k1;
		int cl1 = char_class(t, s + i + 1, &k1);
		if (cl1 != CL_S) {
			cl = cl1;
			k = 1 + k1;
		}
	}
	j = i + k;
	if (cl != CL_S) {
		/* The run of \p{L}, \p{N} or [^\s\p{L}\p{N}]; ASCII first. */
		for (;;) {
			while (j < end && s[j] < 0x80 && ascii_class[s[j]] == cl)
				j++;
			if (j >= end || s[j] < 0x80)
				return j;
			if (char_class(t, s + j, &k) != cl)
				return j;
			j += k;
		}
	}
	/* Whitespace: \s+(?!\S) keeps all of a run that ends the text, and
	 * gives back the last character of a run followed by something else,
	 * unless that leaves nothing; then \s+ takes the single character. */
	size_t last = i;
	for (;;) {
		if (j >= end)
			return j;
		if (char_class(t, s + j, &k) != CL_S)
			break;
		last = j;
		j += k;
	}
	return last > i ? last : j;
}


/* ---- BPE ------------------------------------------------------------------- */

/* A growable id list. */
typedef struct id_buf {
	int32_t *v;
	size_t n, cap;
} id_buf;

static int ids_reserve(id_buf *b, size_t extra)
{
	if (b->cap - b->n >= extra)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap - b->n < extra) {
		if (cap > SIZE_MAX / 2 / sizeof *b->v)
			return -1;
		cap *= 2;
	}
	int32_t *v = realloc(b->v, cap * sizeof *v);
	if (!v)
		return -1;
	b->v = v;
	b->cap = cap;
	return 0;
}

static int scratch_reserve(gpt2_tokenizer *t, size_t n)
{
	if (n <= t->scratch_cap)
		return 0;
	size_t cap = t->scratch_cap ? t->scratch_cap : 256;
	while (cap < n)
		cap *= 2;
	bpe_sym *s = realloc(t->syms, cap * sizeof *s);
	if (s)
		t->syms = s;
	/* The heap gets n - 1 pairs at the start and at most 2 per merge. */
	bpe_heap_item *h = realloc(t->heap, cap * 3 * sizeof *h);
	if (h)
		t->heap = h;
	uint32_t *r = realloc(t->ranks, cap * sizeof *r);
	if (r)
		t->ranks = r;
	if (!s || !h || !r)
		return -1;
	t->scratch_cap = cap;
	return 0;
}

static inline uint32_t pair_rank(const gpt2_tokenizer *t, int32_t a, int32_t b, int32_t *id)
{
	const merge_slot *m = merge_find(t, a, b);
	*id = m ? m->id : -1;
	return m ? m->rank : UINT32_MAX;
}

/* Merge n symbols (ids in v, in place) by the simple scan: find the lowest
 * rank among adjacent pairs (leftmost on ties), merge, repeat. Returns the
 * new count. Quadratic, so only for short words. */
static size_t bpe_simple(const gpt2_tokenizer *t, int32_t *v, size_t n, uint32_t *rank, int32_t *res)
{
	for (size_t i = 0; i + 1 < n; i++)
		rank[i] = pair_rank(t, v[i], v[i + 1], &res[i]);
	while (n > 1) {
		size_t best = 0;
		for (size_t i = 1; i + 1 < n; i++)
			if (rank[i] < rank[best])
				best = i;
		if (rank[best] == UINT32_MAX)
			break;
		v[best] = res[best];
		memmove(v + best + 1, v + best + 2, (n - best - 2) * sizeof *v);
		memmove(rank + best + 1, rank + best + 2, (n - best - 2) * sizeof *rank);
		memmove(res + best + 1, res + best + 2, (n - best - 2) * sizeof *res);
		n--;
		if (best > 0)
			rank[best - 1] = pair_rank(t, v[best - 1], v[best], &res[best - 1]);
		if (best + 1 < n)
			rank[best] = pair_rank(t, v[best], v[best + 1], &res[best]);
	}
	return n;
}

static inline int heap_less(bpe_heap_item a, bpe_heap_item b)
{
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(bpe_heap_item *h, size_t *n, bpe_heap_item x)
{
	size_t i = (*n)++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(x, h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static bpe_heap_item heap_pop(bpe_heap_item *h, size_t *n)
{
	bpe_heap_item top = h[0], x = h[--*n];
	size_t i = 0, m = *n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= m)
			break;
		if (c + 1 < m && heap_less(h[c + 1], h[c]))
			c++;
		if (!heap_less(h[c], x))
			break;
		h[i] = h[c];
		i = c;
	}
	if (m)
		h[i] = x;
	return top;
}

/* The same merges with a heap of candidate pairs keyed by (rank, position)
 * over a linked list of symbols, as Hugging Face's Word::merge_all: each
 * merge costs O(log n). A popped pair is stale when either symbol has been
 * merged since; the rank of its current pair tells, as ranks are unique. */
static size_t bpe_heap(gpt2_tokenizer *t, int32_t *v, size_t n)
{
	bpe_sym *s = t->syms;
	bpe_heap_item *h = t->heap;
	size_t hn = 0;
	for (size_t i = 0; i < n; i++) {
		s[i].id = v[i];
		s[i].prev = (int32_t)i - 1;
		s[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		int32_t id;
		uint32_t r = pair_rank(t, v[i], v[i + 1], &id);
		if (r != UINT32_MAX)
			heap_push(h, &hn, (bpe_heap_item){r, (uint32_t)i});
	}
	while (hn) {
		bpe_heap_item top = heap_pop(h, &hn);
		bpe_sym *l = &s[top.pos];
		if (l->id < 0 || l->next < 0)
			continue;
		bpe_sym *r = &s[l->next];
		int32_t id;
		if (pair_rank(t, l->id, r->id, &id) != top.rank)
			continue;
		l->id = id;
		r->id = -1;
		l->next = r->next;
		if (r->next >= 0)
			s[r->next].prev = (int32_t)top.pos;
		if (l->prev >= 0) {
			uint32_t pr = pair_rank(t, s[l->prev].id, l->id, &id);
			if (pr != UINT32_MAX)
				heap_push(h, &hn, (bpe_heap_item){pr, (uint32_t)l->prev});
		}
		if (l->next >= 0) {
			uint32_t nr = pair_rank(t, l->id, s[l->next].id, &id);
			if (nr != UINT32_MAX)
				heap_push(h, &hn, (bpe_heap_item){nr, top.pos});
		}
	}
	size_t m = 0;
	for (int32_t i = 0; i >= 0; i = s[i].next)
		v[m++] = s[i].id;
	return m;
}

/*
 * The first symbols of a SentencePiece-style word: each character's token;
 * a character the vocabulary lacks becomes its bytes' <0xNN> tokens when
 * all exist (byte_fallback), else unk_id (one for a run with fuse_unk),
 * else nothing, as Hugging Face's BPE::merge_word. Returns the count.
 */
static size_t raw_symbols(const gpt2_tokenizer *t, const unsigned char *w, size_t len, int32_t *v)
{
	size_t n = 0;
	int last_unk = 0;
	for (size_t i = 0, k; i < len; i += k) {
		size_t bad = 0;
		k = utf8_seq(w + i, len - i, &bad);
		if (!k)
			k = bad; /* not reached: the text was made valid */
		int32_t id = key_find(t, (const char *)w + i, k);
		if (id >= 0) {
			v[n++] = id;
			last_unk = 0;
			continue;
		}
		int all = t->byte_fallback;
		for (size_t j = 0; all && j < k; j++)
			all = t->byte_tok[w[i + j]] >= 0;
		if (all) {
			for (size_t j = 0; j < k; j++)
				v[n++] = t->byte_tok[w[i + j]];
			last_unk = 0;
		} else if (t->unk_id >= 0 && !(last_unk && t->fuse_unk)) {
			v[n++] = t->unk_id;
			last_unk = 1;
		}
	}
	return n;
}

/* Encode one word (the bytes of one piece) onto out. */
static int bpe_word(gpt2_tokenizer *t, const unsigned char *w, size_t len, id_buf *out)
{
	if (ids_reserve(out, len) != 0)
		return -1;
	int32_t *v = out->v + out->n;
	size_t n = 0;
	/* Bytes whose one-character token the vocabulary lacks are dropped, as
	 * Hugging Face drops characters it cannot map when there is no
	 * unk_token. */
	if (t->byte_level) {
		for (size_t i = 0; i < len; i++)
			if (t->byte_id[w[i]] >= 0)
				v[n++] = t->byte_id[w[i]];
	} else {
		n = raw_symbols(t, w, len, v);
	}
	if (n > 1 && t->ignore_merges && !t->byte_level) {
		int32_t id = key_find(t, (const char *)w, len);
		if (id >= 0) {
			v[0] = id;
			out->n++;
			return 0;
		}
	} else if (n > 1 && t->ignore_merges) {
		/* ignore_merges: a word that is itself a token is that token. */
		if (len * 2 > t->tmp_cap) {
			char *p = realloc(t->tmp, len * 2);
			if (!p)
				return -1;
			t->tmp = p;
			t->tmp_cap = len * 2;
		}
		size_t kl = 0;
		for (size_t i = 0; i < len; i++)
			kl += utf8_put(t->tmp + kl, byte_to_cp(w[i]));
		int32_t id = key_find(t, t->tmp, kl);
		if (id >= 0) {
			v[0] = id;
			out->n++;
			return 0;
		}
	}
	if (n <= BPE_SIMPLE_MAX) {
		uint32_t rank[BPE_SIMPLE_MAX];
		int32_t res[BPE_SIMPLE_MAX];
		n = bpe_simple(t, v, n, rank, res);
	} else {
		if (scratch_reserve(t, n) != 0)
			return -1;
		n = bpe_heap(t, v, n);
	}
	out->n += n;
	return 0;
}

/* ---- the word cache ---------------------------------------------------------- */

static void cache_clear(gpt2_tokenizer *t)
{
	memset(t->cache_tab, 0, ((size_t)1 << CACHE_BITS) * sizeof *t->cache_tab);
	t->cache_n = 0;
	t->cache_keys_used = 0;
	t->cache_ids_used = 0;
}

/* Encode a word through the cache. */
static int encode_word(gpt2_tokenizer *t, const unsigned char *w, size_t len, id_buf *out)
{
	if (len == 1 && t->byte_level && t->byte_id[w[0]] >= 0) {
		if (ids_reserve(out, 1) != 0)
			return -1;
		out->v[out->n++] = t->byte_id[w[0]];
		return 0;
	}
	if (len > CACHE_MAX_WORD)
		return bpe_word(t, w, len, out);
	const uint32_t mask = (1u << CACHE_BITS) - 1;
	uint64_t h = hash_bytes(t->seed, w, len);
	uint32_t i = (uint32_t)h & mask;
	for (;; i = (i + 1) & mask) {
		uint32_t e = t->cache_tab[i];
		if (!e)
			break;
		const cache_entry *c = &t->cache_entries[e - 1];
		if (c->hash == h && c->key_len == len && memcmp(t->cache_keys + c->key_off, w, len) == 0) {
			if (ids_reserve(out, c->n_ids) != 0)
				return -1;
			memcpy(out->v + out->n, t->cache_ids + c->ids_off, c->n_ids * sizeof *out->v);
			out->n += c->n_ids;
			return 0;
		}
	}
	size_t start = out->n;
	if (bpe_word(t, w, len, out) != 0)
		return -1;
	size_t n = out->n - start;
	if (t->cache_n >= CACHE_MAX_ENTRIES || t->cache_keys_used + len > CACHE_KEY_ARENA ||
	    t->cache_ids_used + n > CACHE_ID_ARENA) {
		cache_clear(t);
		i = (uint32_t)h & mask;
		while (t->cache_tab[i])
			i = (i + 1) & mask;
	}
	cache_entry *c = &t->cache_entries[t->cache_n];
	c->hash = h;
	c->key_off = (uint32_t)t->cache_keys_used;
	c->key_len = (uint16_t)len;
	c->ids_off = (uint32_t)t->cache_ids_used;
	c->n_ids = (uint16_t)n;
	memcpy(t->cache_keys + t->cache_keys_used, w, len);
	memcpy(t->cache_ids + t->cache_ids_used, out->v + start, n * sizeof *out->v);
	t->cache_keys_used += len;
	t->cache_ids_used += n;
	t->cache_tab[i] = ++t->cache_n;
	return 0;
}

/* ---- encoding ------------------------------------------------------------------ */

/* ---- the pre-tokenizer's steps ------------------------------------------ */

static int run_pre(gpt2_tokenizer *t, size_t step, const unsigned char *s, size_t len,
                   id_buf *out);

/* ByteLevel: a space in front when add_prefix_space, then GPT-2's regex
 * when use_regex. There is at most one ByteLevel step, so t->seg is free. */
static int pre_bytelevel(gpt2_tokenizer *t, size_t step, const unsigned char *s, size_t len,
                         id_buf *out)
{
	const pre_step *p = &t->pre[step];
	if (p->add_prefix_space && s[0] != ' ') {
		if (len + 1 > t->seg_cap) {
			char *q = realloc(t->seg, len + 1);
			if (!q)
				return -1;
			t->seg = q;
			t->seg_cap = len + 1;
		}
		t->seg[0] = ' ';
		memcpy(t->seg + 1, s, len);
		s = (const unsigned char *)t->seg;
		len++;
	}
	if (!p->use_regex)
		return run_pre(t, step + 1, s, len, out);
	size_t i = 0;
	while (i < len) {
		size_t j = next_piece(t, s, i, len);
		if (run_pre(t, step + 1, s + i, j - i, out) != 0)
			return -1;
		i = j;
	}
	return 0;
}

/* The class of the character at s[i] (i < end), and its length. */
static inline int class_at(const gpt2_tokenizer *t, const unsigned char *s, size_t i, size_t end,
                           size_t *len)
{
	(void)end;
	return char_class(t, s + i, len);
}

/* Whether the character at s[i] is one of the letters that (?i:...) matches
 * for the lower-case ASCII letter c: c, its capital, and U+017F (long s,
 * which folds to s). */
static size_t fold_is(const unsigned char *s, size_t i, size_t end, unsigned c)
{
	if (i >= end)
		return 0;
	if (s[i] == c || s[i] == c - 32)
		return 1;
	if (c == 's' && i + 1 < end && s[i] == 0xC5 && s[i + 1] == 0xBF)
		return 2;
	return 0;
}

/*
 * The end of the piece at s[i], following Llama 3's pattern (ndig 3) or
 * Qwen2's (ndig 1)
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,ndig}|
 *    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * as a backtracking engine matches it: the first alternative that matches,
 * each greedy. Every character starts some alternative, so the pieces
 * cover the text.
 */
static size_t next_piece_llama3(const gpt2_tokenizer *t, const unsigned char *s, size_t i,
                                size_t end, int ndig)
{
	size_t k, k1, j;
	if (s[i] == '\'') {
		static const char two[][3] = {"re", "ve", "ll"};
		static const char one[] = "stmd";
		for (int a = 0; a < 3; a++) {
			size_t f1 = fold_is(s, i + 1, end, (unsigned)two[a][0]);
			size_t f2 = f1 ? fold_is(s, i + 1 + f1, end, (unsigned)two[a][1]) : 0;
			if (f1 && f2 && f1 + f2 == 2)
				return i + 3;
		}
		for (int a = 0; a < 4; a++) {
			size_t f = fold_is(s, i + 1, end, (unsigned)one[a]);
			if (f)
				return i + 1 + f;
		}
	}
	int cl = class_at(t, s, i, end, &k);
	/* [^\r\n\p{L}\p{N}]?\p{L}+ */
	j = i;
	if (cl != CL_L && cl != CL_N && s[i] != '\r' && s[i] != '\n' && i + k < end &&
	    class_at(t, s, i + k, end, &k1) == CL_L)
		j = i + k;
	if (class_at(t, s, j, end, &k1) == CL_L) {
		j += k1;
		while (j < end && class_at(t, s, j, end, &k1) == CL_L)
			j += k1;
		return j;
	}
	if (cl == CL_N) {
		j = i + k;
		for (int d = 1; d < ndig && j < end && class_at(t, s, j, end, &k1) == CL_N; d++)
			j += k1;
		return j;
	}
	/*  ?[^\s\p{L}\p{N}]+[\r\n]* */
	j = i;
	if (s[i] == ' ' && i + 1 < end && class_at(t, s, i + 1, end, &k1) == CL_O)
		j = i + 1;
	if (class_at(t, s, j, end, &k1) == CL_O) {
		while (j < end && class_at(t, s, j, end, &k1) == CL_O)
			j += k1;
		while (j < end && (s[j] == '\r' || s[j] == '\n'))
			j++;
		return j;
	}
	/* Whitespace: the run [i, e) and its last \r or \n. */
	size_t e = i, last_nl = SIZE_MAX, last = i;
	while (e < end && class_at(t, s, e, end, &k1) == CL_S) {
		if (s[e] == '\r' || s[e] == '\n')
			last_nl = e;
		last = e;
		e += k1;
	}
	if (last_nl != SIZE_MAX)
		return last_nl + 1;           /* \s*[\r\n]+ */
	if (e >= end || last == i)
		return e;                     /* \s+(?!\S) to the end, or \s+ */
	return last;                      /* \s+(?!\S): all but the last */
}

/* The next match of a Split step's pattern at or after from: 1, 0 (none)
 * or -1. */
static int split_find(const pre_step *p, const unsigned char *s, size_t len, size_t from,
                      size_t *ms, size_t *me)
{
	if (p->re)
		return gpt2_regex_find(p->re, (const char *)s, len, from, ms, me);
	if (len - from < p->lit_len)
		return 0;
	const unsigned char *q = memmem(s + from, len - from, p->lit, p->lit_len);
	if (!q)
		return 0;
	*ms = (size_t)(q - s);
	*me = *ms + p->lit_len;
	return 1;
}

/* Split: the text is cut into the pattern's matches and the stretches
 * between them (Hugging Face's find_matches); Isolated keeps each as a
 * piece, Removed drops the matches; invert swaps matches and stretches. */
static int pre_split(gpt2_tokenizer *t, size_t step, const unsigned char *s, size_t len,
                     id_buf *out)
{
	const pre_step *p = &t->pre[step];
	if (p->scan_digits) {
		for (size_t i = 0; i < len;) {
			size_t j = next_piece_llama3(t, s, i, len, p->scan_digits);
			if (run_pre(t, step + 1, s + i, j - i, out) != 0)
				return -1;
			i = j;
		}
		return 0;
	}
	size_t prev = 0, from = 0;
	for (;;) {
		size_t ms = len, me = len;
		int r = split_find(p, s, len, from, &ms, &me);
		if (r < 0)
			return -1;
		if (r && ms == me) { /* an empty match: resume a character on */
			size_t k = 1, bad;
			if (ms >= len)
				break;
			if (s[ms] >= 0x80 && !(k = utf8_seq(s + ms, len - ms, &bad)))
				k = 1;
			from = ms + k;
			continue;
		}
		if (!r)
			break;
		int keep_gap = !(p->invert && p->behavior == SPLIT_REMOVED);
		int keep_match = !(!p->invert && p->behavior == SPLIT_REMOVED);
		if ((keep_gap && run_pre(t, step + 1, s + prev, ms - prev, out) != 0) ||
		    (keep_match && run_pre(t, step + 1, s + ms, me - ms, out) != 0))
			return -1;
		prev = from = me;
	}
	if (p->invert && p->behavior == SPLIT_REMOVED)
		return 0;
	return run_pre(t, step + 1, s + prev, len - prev, out);
}

/* Metaspace's split: a piece starts at each U+2581. */
static int pre_metaspace(gpt2_tokenizer *t, size_t step, const unsigned char *s, size_t len,
                         id_buf *out)
{
	size_t start = 0;
	for (size_t i = 1; i + 3 <= len; i++) {
		if (s[i] == 0xE2 && s[i + 1] == 0x96 && s[i + 2] == 0x81) {
			if (run_pre(t, step + 1, s + start, i - start, out) != 0)
				return -1;
			start = i;
		}
	}
	return run_pre(t, step + 1, s + start, len - start, out);
}

/* Run pre-tokenizer step `step` on one piece, and the words it makes
 * through the model. Empty pieces are dropped, as Hugging Face does. */
static int run_pre(gpt2_tokenizer *t, size_t step, const unsigned char *s, size_t len,
                   id_buf *out)
{
	if (!len)
		return 0;
	if (step == t->n_pre)
		return encode_word(t, s, len, out);
	switch (t->pre[step].kind) {
	case PRE_BYTELEVEL:
		return pre_bytelevel(t, step, s, len, out);
	case PRE_SPLIT:
		return pre_split(t, step, s, len, out);
	default:
		return pre_metaspace(t, step, s, len, out);
	}
}

/* ---- the normalizer ------------------------------------------------------- */

static char *norm_reserve(gpt2_tokenizer *t, int which, size_t n)
{
	if (n > t->norm_cap[which]) {
		char *p = realloc(t->norm_buf[which], n);
		if (!p)
			return NULL;
		t->norm_buf[which] = p;
		t->norm_cap[which] = n;
	}
	return t->norm_buf[which];
}

/* Apply one step from s into buffer `which`; NULL when out of memory. */
static const char *norm_apply(gpt2_tokenizer *t, const norm_step *ns, int which, const char *s,
                              size_t *len)
{
	size_t n = *len;
	if (ns->kind == NORM_NFC) {
		return gpt2_nfc(t, which, s, len);
	}
	if (ns->kind == NORM_PREPEND) {
		char *o = norm_reserve(t, which, n + ns->alen);
		if (!o)
			return NULL;
		memcpy(o, ns->a, ns->alen);
		memcpy(o + ns->alen, s, n);
		*len = n + ns->alen;
		return o;
	}
	/* REPLACE: count, then copy. */
	size_t hits = 0;
	for (const char *q = s; (q = memmem(q, n - (size_t)(q - s), ns->a, ns->alen)); q += ns->alen)
		hits++;
	if (!hits)
		return s;
	size_t total = n - hits * ns->alen + hits * ns->blen;
	char *o = norm_reserve(t, which, total ? total : 1);
	if (!o)
		return NULL;
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		if (n - i >= ns->alen && memcmp(s + i, ns->a, ns->alen) == 0) {
			memcpy(o + w, ns->b, ns->blen);
			w += ns->blen;
			i += ns->alen;
		} else {
			o[w++] = s[i++];
		}
	}
	*len = w;
	return o;
}

/* Pre-tokenize and encode one stretch of text that holds no added token;
 * at_start when it begins the text. */
static int encode_segment(gpt2_tokenizer *t, const unsigned char *s, size_t len, int at_start,
                          id_buf *out)
{
	if (!len)
		return 0;
	const char *p = (const char *)s;
	int which = 0;
	for (size_t k = 0; k < t->n_norm; k++) {
		const norm_step *ns = &t->norm[k];
		if (ns->kind == NORM_PREPEND &&
		    ((ns->first_only && !at_start) ||
		     (ns->unless_there && len >= ns->alen && memcmp(p, ns->a, ns->alen) == 0)))
			continue;
		const char *q = norm_apply(t, ns, which, p, &len);
		if (!q)
			return -1;
		if (q != p)
			which ^= 1;
		p = q;
	}
	return run_pre(t, 0, (const unsigned char *)p, len, out);
}

/*
 * The longest added token at s (n bytes left), or NULL. The tokens are in
 * byte order, so those that begin with s[0..d) are a run of the array; each
 * next byte narrows the run by binary search. That costs the length of the
 * match times log n_added, where trying every token cost n_added per byte
 * of text (100000 added tokens made an encode minutes long).
 */
static const added_token *added_at(const gpt2_tokenizer *t, const unsigned char *s, size_t n,
                                   unsigned flags)
{
	const added_token *v = t->added, *best = NULL;
	size_t lo = 0, hi = t->n_added;
	for (size_t d = 0; d < n && lo < hi; d++) {
		/* A token of exactly d bytes is first in the run (a prefix sorts
		 * first) and was considered at the last step; the rest all have
		 * a byte d, which orders them. */
		if (v[lo].len == d)
			lo++;
		unsigned c = s[d];
		size_t a = lo, b = hi;
		while (a < b) {
			size_t mid = a + (b - a) / 2;
			if ((unsigned char)v[mid].text[d] < c)
				a = mid + 1;
			else
				b = mid;
		}
		lo = a;
		b = hi;
		while (a < b) {
			size_t mid = a + (b - a) / 2;
			if ((unsigned char)v[mid].text[d] <= c)
				a = mid + 1;
			else
				b = mid;
		}
		hi = a;
		if (lo < hi && v[lo].len == d + 1 &&
		    !(v[lo].special && (flags & GPT2_ENCODE_NO_SPECIAL)))
			best = &v[lo];
	}
	return best;
}

int gpt2_tokenizer_encode(gpt2_tokenizer *t, const char *text, size_t len, unsigned flags,
                          int32_t **ids, size_t *n, size_t *n_replaced, char *err,
                          size_t errlen)
{
	*ids = NULL;
	*n = 0;
	char *clean = NULL;
	size_t clean_len = 0;
	size_t n_bad = gpt2_utf8_sanitize(text, len, &clean, &clean_len);
	if (n_bad == (size_t)-1)
		return gpt2_err(err, errlen, "out of memory");
	if (n_replaced)
		*n_replaced = n_bad;
	const unsigned char *s = (const unsigned char *)(clean ? clean : text);
	if (clean)
		len = clean_len;

	id_buf out = {0};
	/* English averages over 4 bytes a token; growth covers the rest. */
	if (ids_reserve(&out, len / 4 + 16) != 0)
		goto fail;
	if ((flags & GPT2_ENCODE_ADD_SPECIAL) && t->add_bos && t->bos >= 0)
		out.v[out.n++] = t->bos;
	/* Split on added tokens, then encode each stretch between them. The
	 * text left over after the last one is its own stretch, so the
	 * pre-tokenizer sees the same pieces Hugging Face's does. */
	size_t seg = 0, i = 0;
	int any_added = 0;
	for (size_t k = 0; k < t->n_added; k++)
		any_added |= !(t->added[k].special && (flags & GPT2_ENCODE_NO_SPECIAL));
	while (any_added && i < len) {
		if (!t->added_first[s[i]]) {
			i++;
			continue;
		}
		const added_token *a = added_at(t, s + i, len - i, flags);
		if (!a) {
			i++;
			continue;
		}
		if (encode_segment(t, s + seg, i - seg, seg == 0, &out) != 0 || ids_reserve(&out, 1) != 0)
			goto fail;
		out.v[out.n++] = a->id;
		i += a->len;
		seg = i;
	}
	if (encode_segment(t, s + seg, len - seg, seg == 0, &out) != 0)
		goto fail;
	if ((flags & GPT2_ENCODE_ADD_SPECIAL) && t->add_eos && t->eos >= 0) {
		if (ids_reserve(&out, 1) != 0)
			goto fail;
		out.v[out.n++] = t->eos;
	}
	free(clean);
	*ids = out.v;
	*n = out.n;
	return 0;
fail:
	free(clean);
	free(out.v);
	return gpt2_err(err, errlen, "out of memory");
}

int gpt2_tokenizer_decode(const gpt2_tokenizer *t, const int32_t *ids, size_t n,
                          char **out, size_t *out_len, size_t *bad_index, char *err,
                          size_t errlen)
{
	*out = NULL;
	*out_len = 0;
	size_t total = 0, len;
	for (size_t i = 0; i < n; i++) {
		if (!gpt2_tokenizer_token_bytes(t, ids[i], &len)) {
			if (bad_index)
				*bad_index = i;
			return gpt2_err(err, errlen, "token id %ld (at %zu) is not in the vocabulary",
			                (long)ids[i], i);
		}
		total += len;
	}
	char *b = malloc(total + 1);
	if (!b) {
		if (bad_index)
			*bad_index = SIZE_MAX;
		return gpt2_err(err, errlen, "out of memory");
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		const char *p = gpt2_tokenizer_token_bytes(t, ids[i], &len);
		memcpy(b + o, p, len);
		o += len;
	}
	b[o] = 0;
	*out = b;
	*out_len = o;
	return 0;
}

/* ---- the streaming decoder --------------------------------------------------- */

/* How many bytes at the end of s[0..n) are the start of a character that
 * later bytes may still complete. */
static size_t incomplete_tail(const unsigned char *s, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned c = s[n - back];
		if ((c & 0xC0) == 0x80)
			continue;
		/* A lead byte: is it waiting for more? */
		size_t bad = 0;
		if (c < 0xC2 || c > 0xF4 || utf8_seq(s + n - back, back, &bad))
			return 0;
		/* utf8_seq failed: either the bytes are wrong (bad < back) or
		 * they ran out (bad == back). */
		return bad == back ? back : 0;
	}
	return 0;
}

size_t gpt2_decoder_push(gpt2_decoder *d, const char *bytes, size_t len, char *out)
{
	size_t n = d->n_pending;
	memcpy(out, d->pending, n);
	memcpy(out + n, bytes, len);
	n += len;
	size_t hold = incomplete_tail((const unsigned char *)out, n);
	memcpy(d->pending, out + n - hold, hold);
	d->n_pending = hold;
	return n - hold;
}

size_t gpt2_decoder_flush(gpt2_decoder *d, char *out)
{
	size_t n = d->n_pending;
	memcpy(out, d->pending, n);
	d->n_pending = 0;
	return n;
}
