/*
 * tokenizer_impl.h - what the three files of the tokenizer share: its
 * limits, its tables (struct gpt2_tokenizer), and the small helpers both
 * the loader and the encoder call, inline because the encoder's inner
 * loops call them per byte. Not for users of tokenizer.h.
 *
 *   tokenizer_unicode.c  the generated table of character classes
 *   tokenizer_load.c     tokenizer.json / vocab.json + merges.txt
 *   tokenizer_pipe.c     tokenizer.json's normalizer, pre-tokenizer and
 *                        post-processor, tokenizer_config.json
 *   tokenizer_gguf.c     a GGUF file's tokenizer.ggml.* metadata
 *   tokenizer.c          the pre-tokenizer, BPE, encoding and decoding
 */
#ifndef ST_GPT2_TOKENIZER_IMPL_H
#define ST_GPT2_TOKENIZER_IMPL_H

#include "gpt2/regex.h"
#include "gpt2/tokenizer.h"
#include "fe/json.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>


/* Ids at or above this are refused, so that a hostile file cannot make the
 * per-id tables huge; real vocabularies are below 300000. */
#define MAX_IDS (1 << 22)
/* Files larger than this are refused before they are read. */
#define MAX_FILE_SIZE ((size_t)1 << 30)
/* Words of up to this many symbols are merged with the simple scan; longer
 * ones use a heap so that a 100 KB word is not quadratic. */
#define BPE_SIMPLE_MAX 48
/* Word cache limits: words longer than CACHE_MAX_WORD bytes are not cached;
 * the cache is emptied when it holds CACHE_MAX_ENTRIES words or its arenas
 * are full. */
#define CACHE_BITS 16
#define CACHE_MAX_ENTRIES (1u << (CACHE_BITS - 1))
#define CACHE_MAX_WORD 128
#define CACHE_KEY_ARENA ((size_t)4 << 20)
#define CACHE_ID_ARENA ((size_t)1 << 20)

/* Character classes of the pre-tokenizer regex, as Oniguruma (used by
 * Hugging Face) sees them: \p{L}, \p{N}, \s and everything else. */
enum { CL_L = 0, CL_N = 1, CL_S = 2, CL_O = 3 };

typedef struct added_token {
	char *text;
	size_t len;
	int32_t id;
	int special;
} added_token;

typedef struct merge_slot {
	uint64_t key; /* left id << 32 | right id; UINT64_MAX when empty */
	uint32_t rank;
	int32_t id;
} merge_slot;

typedef struct cache_entry {
	uint64_t hash;
	uint32_t key_off, ids_off;
	uint16_t key_len, n_ids;
} cache_entry;

typedef struct bpe_sym {
	int32_t id;
	int32_t prev, next; /* -1 at the ends */
} bpe_sym;

typedef struct bpe_heap_item {
	uint32_t rank;
	uint32_t pos;
} bpe_heap_item;

/* One pre-tokenizer step (Hugging Face's pre_tokenizer, a Sequence of
 * them in order). Each step splits every piece the previous one made. */
enum {
	PRE_BYTELEVEL = 1, /* ByteLevel: add_prefix_space, GPT-2's regex if use_regex */
	PRE_SPLIT,         /* Split: a regex or a literal string */
	PRE_METASPACE      /* Metaspace with split: a piece starts at each U+2581 */
};
/* Split's behaviour: what becomes of a match. */
enum { SPLIT_ISOLATED = 0, SPLIT_REMOVED };

typedef struct pre_step {
	int kind;
	int behavior, invert; /* PRE_SPLIT */
	gpt2_regex *re;       /* PRE_SPLIT with a Regex pattern */
	char *lit;            /* PRE_SPLIT with a String pattern */
	size_t lit_len;
	int add_prefix_space, use_regex; /* PRE_BYTELEVEL */
	/* PRE_SPLIT: 3 or 1 when the pattern is Llama 3's or Qwen2's (\p{N}
	 * taken 3 or 1 at a time) and Isolated: then tokenizer.c's scan of it
	 * runs instead of Oniguruma (the same pieces, tested). */
	int scan_digits;
} pre_step;

/* How many digits the fast scan of a known Split pattern (st_gguf_pre)
 * takes as one piece: 3 for Llama 3's \p{N}{1,3}, 1 for Qwen2's \p{N}; 0
 * for any other pattern, which the regex engine runs. */
int gpt2_tok_scan_digits(const char *pattern, size_t len);

/* One normalizer step (a Sequence of them in order). */
enum { NORM_NFC = 1, NORM_PREPEND, NORM_REPLACE };
typedef struct norm_step {
	int kind;
	char *a, *b; /* PREPEND: a; REPLACE: a by b */
	size_t alen, blen;
	int first_only; /* PREPEND: only to a stretch at the start of the text */
	int unless_there; /* PREPEND: not when the stretch starts with a already */
} norm_step;

#define PRE_MAX_STEPS 8

struct gpt2_tokenizer {
	int n_ids;
	int32_t eot;
	uint64_t seed; /* of every hash below (random_seed) */

	/* Decoding: the bytes of id i are tok_data[tok_off[i] .. tok_off[i + 1]);
	 * tok_ok[i] is 0 for a hole in the id space. */
	uint32_t *tok_off;
	unsigned char *tok_ok;
	char *tok_data;

	/* The model vocabulary in the char domain: key of id i is
	 * key_data[key_off[i] .. key_off[i] + key_len[i]); key_len is
	 * UINT32_MAX for ids the model lacks. key_tab holds id + 1, 0 = empty. */
	uint32_t *key_off, *key_len;
	char *key_data;
	uint32_t *key_tab;
	uint32_t key_mask;

	/* The id of each single byte, or -1 when the vocabulary lacks it. */
	int32_t byte_id[256];

	merge_slot *merges;
	uint64_t merge_mask;

	added_token *added; /* sorted by their bytes, each text once */
	size_t n_added;
	unsigned char added_first[256]; /* 1 = some added token starts with it */

	int ignore_merges;

	/* byte_level: BPE over GPT-2's byte alphabet (the key domain above);
	 * else over the text's own characters (SentencePiece style, keys as
	 * the file spells them, "\xe2\x96\x81the"), where a character
	 * missing from the vocabulary becomes its bytes' <0xNN> tokens
	 * (byte_fallback) or unk_id (consecutive ones fused with fuse_unk). */
	int byte_level, byte_fallback, fuse_unk;
	int32_t unk_id;
	int32_t byte_tok[256]; /* the id of "<0xNN>", or -1 */

	/* The pipeline: normalizer steps, then pre-tokenizer steps; with
	 * n_pre 0 a stretch is one word. */
	norm_step norm[PRE_MAX_STEPS];
	size_t n_norm;
	pre_step pre[PRE_MAX_STEPS];
	size_t n_pre;
	char *norm_buf[2]; /* the normalizer's output, two buffers in turn */
	size_t norm_cap[2];

	/* What GPT2_ENCODE_ADD_SPECIAL adds: bos first, eos last (-1: none). */
	int32_t bos, eos;
	int add_bos, add_eos;

	/* Code point classes: ucd_blocks[ucd_stage1[cp >> 8] * 256 + (cp & 255)]. */
	uint16_t ucd_stage1[0x110000 >> 8];
	unsigned char *ucd_blocks;

	/* Word cache. */
	uint32_t *cache_tab; /* entry index + 1, 0 = empty */
	cache_entry *cache_entries;
	uint32_t cache_n;
	char *cache_keys;
	size_t cache_keys_used;
	int32_t *cache_ids;
	size_t cache_ids_used;

	/* Scratch space for BPE and encoding, reused between calls. */
	bpe_sym *syms;
	bpe_heap_item *heap;
	uint32_t *ranks;
	size_t scratch_cap;
	char *tmp; /* bpe_word's char-domain key */
	size_t tmp_cap;
	char *seg; /* encode_segment's text with a space in front */
	size_t seg_cap;
};

/* ---- GPT-2's byte-to-unicode alphabet ------------------------------------ */

/* Bytes that print as themselves in Latin-1 keep their code point; the other
 * 68 are numbered from U+0100 in byte order (GPT-2's bytes_to_unicode). */
static inline int byte_keeps_code_point(unsigned b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
}

static inline unsigned byte_to_cp(unsigned b)
{
	if (byte_keeps_code_point(b))
		return b;
	unsigned n = 0;
	for (unsigned i = 0; i < b; i++)
		n += !byte_keeps_code_point(i);
	return 256 + n;
}

/* The byte a code point of the alphabet spells, or -1. Only the loader
 * and the cache-miss path call these two, so they count instead of
 * keeping a table. */
static inline int cp_to_byte(unsigned cp)
{
	if (cp < 256)
		return byte_keeps_code_point(cp) ? (int)cp : -1;
	for (unsigned b = 0, n = 256; b < 256; b++)
		if (!byte_keeps_code_point(b) && n++ == cp)
			return (int)b;
	return -1;
}

static inline size_t utf8_put(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* ---- UTF-8 ---------------------------------------------------------------- */

/*
 * The length of the valid UTF-8 sequence at s (at most n bytes), or 0 when
 * the bytes there are not one. When 0, *bad gets the length of the maximal
 * subpart to replace by one U+FFFD (Unicode 15 §3.9, "U+FFFD Substitution of
 * Maximal Subparts"), which is what Python's decoder does.
 */
static inline size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
	unsigned c = s[0];
	size_t need;
	unsigned lo = 0x80, hi = 0xBF;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		need = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		*bad = 1;
		return 0;
	}
	size_t i = 1;
	for (; i < need; i++) {
		if (i >= n)
			break;
		unsigned d = s[i];
		if (d < lo || d > hi)
			break;
		lo = 0x80;
		hi = 0xBF;
	}
	if (i == need)
		return need;
	*bad = i;
	return 0;
}

/* Decode one code point of valid UTF-8. */
static inline unsigned utf8_get(const unsigned char *s, size_t *len)
{
	unsigned c = s[0];
	if (c < 0x80) {
		*len = 1;
		return c;
	}
	if (c < 0xE0) {
		*len = 2;
		return ((c & 0x1F) << 6) | (s[1] & 0x3F);
	}
	if (c < 0xF0) {
		*len = 3;
		return ((c & 0x0F) << 12) | ((unsigned)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
	}
	*len = 4;
	return ((c & 0x07) << 18) | ((unsigned)(s[1] & 0x3F) << 12) |
	       ((unsigned)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

/* The length of the valid prefix, checked 8 bytes at a time while ASCII. */
static inline size_t utf8_valid_prefix(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		if (len - i >= 8) {
			uint64_t w;
			memcpy(&w, s + i, 8);
			if (!(w & 0x8080808080808080ull)) {
				i += 8;
				continue;
			}
		}
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t bad;
		size_t k = utf8_seq(s + i, len - i, &bad);
		if (!k)
			return i;
		i += k;
	}
	return len;
}

/* ---- hash tables ----------------------------------------------------------- */

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 32;
	return x;
}

static inline uint64_t hash_bytes(uint64_t seed, const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = seed ^ 0x9E3779B97F4A7C15ull ^ n;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
		s += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, s, n);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	}
	return mix64(h);
}

static inline int32_t key_find(const gpt2_tokenizer *t, const char *k, size_t n)
{
	uint64_t h = hash_bytes(t->seed, k, n);
	for (uint32_t i = (uint32_t)h & t->key_mask;; i = (i + 1) & t->key_mask) {
		uint32_t v = t->key_tab[i];
		if (!v)
			return -1;
		uint32_t id = v - 1;
		if (t->key_len[id] == n && memcmp(t->key_data + t->key_off[id], k, n) == 0)
			return (int32_t)id;
	}
}

static inline const merge_slot *merge_find(const gpt2_tokenizer *t, int32_t a, int32_t b)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	for (uint64_t i = mix64(key ^ t->seed) & t->merge_mask;; i = (i + 1) & t->merge_mask) {
		const merge_slot *m = &t->merges[i];
		if (m->key == key)
			return m;
		if (m->key == UINT64_MAX)
			return NULL;
	}
}

/* ---- loading (tokenizer_load.c, tokenizer_pipe.c, tokenizer_gguf.c) ---- */

/* What the loader collects before the tables are built. */
typedef struct vocab_entry {
	const char *key; /* char domain, points into the parsed JSON */
	size_t len;
	int32_t id;
} vocab_entry;

typedef struct merge_entry {
	const char *a, *b; /* char domain */
	size_t alen, blen;
	size_t where; /* line number in merges.txt, index in model.merges */
	uint32_t rank; /* with load_state.ranked; else the index is the rank */
} merge_entry;

typedef struct load_state {
	const char *vocab_path, *merges_path;
	vocab_entry *vocab;
	size_t n_vocab;
	merge_entry *mergev;
	size_t n_merges;
	added_token *added;
	size_t n_added;
	int ignore_merges;
	const char *unk; /* model.unk_token, or NULL */
	size_t unk_len;
	/* fixed_ids: added tokens keep the ids given (a GGUF file numbers
	 * every token); ranked: merges carry their rank, and those whose
	 * sides are not both tokens are dropped (merges made from scores). */
	int fixed_ids, ranked;
	const char *merges_where; /* a printf format for a merge's place, or NULL */
	gpt2_tokenizer *t; /* the pipeline's steps go straight into it */
	char *err;
	size_t errlen;
} load_state;

/* Read a whole file into a NUL-terminated malloc'd buffer. */
int gpt2_tok_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen);

/*
 * Text from a file (a token, a type name) made fit for a one-line message:
 * control bytes as \xNN, and cut after about 64 bytes, at a character
 * boundary, with "..." to say so. Returns buf, which holds SHOW_MAX bytes.
 */
#define SHOW_MAX 96
const char *gpt2_tok_show(char *buf, const char *s, size_t len);

/* A zeroed tokenizer with no bos, eos, unk or byte tokens; NULL when out
 * of memory. */
gpt2_tokenizer *gpt2_tok_new(void);

/* Build ls->t's tables from what was loaded (tokenizer_load.c). */
int gpt2_tok_build(gpt2_tokenizer *t, load_state *ls);

/*
 * tokenizer.json's normalizer, pre_tokenizer and post_processor into
 * ls->t (tokenizer_pipe.c); the model's byte_fallback is read before.
 */
int gpt2_tok_pipeline_json(load_state *ls, const json_node *root);

/* tokenizer_config.json's add_bos_token / add_eos_token and the tokens
 * they name, over what tokenizer.json said (tokenizer_pipe.c). */
int gpt2_tok_config_json(gpt2_tokenizer *t, const char *path, char *err, size_t errlen);

/* A GGUF file's tokenizer.ggml.* (tokenizer_gguf.c). */
int gpt2_tok_load_gguf(gpt2_tokenizer **out, const char *path, char *err, size_t errlen);

/*
 * NFC of s (*len bytes of valid UTF-8) into t->norm_buf[which] (an ASCII
 * text is returned as it is); *len gets the new length. NULL when out of
 * memory (tokenizer_pipe.c, through utf8proc).
 */
const char *gpt2_nfc(gpt2_tokenizer *t, int which, const char *s, size_t *len);

/* Free the pipeline's steps (tokenizer_pipe.c). */
void gpt2_tok_pipeline_free(gpt2_tokenizer *t);

/*
 * Fill t->ucd_stage1 and t->ucd_blocks (malloc'd, freed with t) from the
 * generated table. 0, or -1 when out of memory. tokenizer_unicode.c.
 */
int gpt2_tok_ucd_build(gpt2_tokenizer *t);

#endif
