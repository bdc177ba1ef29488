/*
 * tokenizer.c - GPT-2's byte-level BPE tokenizer (see tokenizer.h): loading
 * tokenizer.json or vocab.json + merges.txt, the pre-tokenizer, BPE by merge
 * rank with a word cache, decoding. It gives the ids Hugging Face
 * `tokenizers` gives for GPT-2-style tokenizers; it is not a general
 * Hugging Face tokenizer (no normalizers, no other models or pre-tokenizers).
 *
 * Vocabulary strings live in two domains. The "char" domain is the text of
 * vocab.json: each byte is spelled as one code point of GPT-2's
 * byte-to-unicode alphabet ("Ġthe"). Merges are resolved there, as Hugging
 * Face does. The "byte" domain is what the text really holds (" the"); the
 * encoder works on bytes and decoding returns bytes.
 */
#include "gpt2/tokenizer.h"

#include <cJSON.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

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

	int add_prefix_space, use_regex, ignore_merges;

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

/* ---- errors and files ------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Read a whole file into a NUL-terminated buffer. */
static int read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) != 0) {
		int e = errno;
		fclose(f);
		return fail(err, errlen, "%s: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		fclose(f);
		return fail(err, errlen, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > MAX_FILE_SIZE) {
		fclose(f);
		return fail(err, errlen, "%s: file too large (%lld bytes, expected at most %zu)",
		            path, (long long)st.st_size, MAX_FILE_SIZE);
	}
	size_t size = (size_t)st.st_size;
	char *b = malloc(size + 1);
	if (!b) {
		fclose(f);
		return fail(err, errlen, "%s: out of memory", path);
	}
	size_t got = fread(b, 1, size, f);
	int rerr = ferror(f);
	fclose(f);
	if (rerr || got != size) {
		free(b);
		return fail(err, errlen, "%s: read error%s", path, rerr ? "" : " (file changed size)");
	}
	b[size] = 0;
	*buf = b;
	*len = size;
	return 0;
}

/*
 * Text from a file (a token, a type name) made fit for a one-line message:
 * control bytes as \xNN, and cut after about 64 bytes, at a character
 * boundary, with "..." to say so. Returns buf, which holds SHOW_MAX bytes.
 */
#define SHOW_MAX 96
static const char *show(char *buf, const char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c & 0xC0) != 0x80 && o >= 64) {
			memcpy(buf + o, "...", 4);
			return buf;
		}
		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, SHOW_MAX - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = 0;
	return buf;
}

static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* ---- GPT-2's byte-to-unicode alphabet ------------------------------------ */

/* Bytes that print as themselves in Latin-1 keep their code point; the other
 * 68 are numbered from U+0100 in byte order (GPT-2's bytes_to_unicode). */
static int byte_keeps_code_point(unsigned b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
}

static unsigned byte_to_cp(unsigned b)
{
	if (byte_keeps_code_point(b))
		return b;
	unsigned n = 0;
	for (unsigned i = 0; i < b; i++)
		n += !byte_keeps_code_point(i);
	return 256 + n;
}

/* The byte a code point of the alphabet spells, or -1. Only the loader
 * calls these two, so they count instead of keeping a table. */
static int cp_to_byte(unsigned cp)
{
	if (cp < 256)
		return byte_keeps_code_point(cp) ? (int)cp : -1;
	for (unsigned b = 0, n = 256; b < 256; b++)
		if (!byte_keeps_code_point(b) && n++ == cp)
			return (int)b;
	return -1;
}

static size_t utf8_put(char *out, unsigned cp)
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
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
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
static unsigned utf8_get(const unsigned char *s, size_t *len)
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
static size_t utf8_valid_prefix(const unsigned char *s, size_t len)
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

/* ---- Unicode classes ------------------------------------------------------ */

/*
 * The class of every code point, as runs: each entry is (first code point
 * << 2 | class), and a run lasts until the next entry. The table was made
 * by asking Hugging Face's own pre-tokenizer about each code point (its
 * Oniguruma has Unicode 16; Python's unicodedata and PCRE2 here are older),
 * so \s is U+0009-000D, U+0020, U+0085, U+00A0, U+1680, U+2000-200A,
 * U+2028, U+2029, U+202F, U+205F and U+3000, and U+180E, U+200B and U+FEFF
 * are neither spaces nor letters.
 */
/* BEGIN GENERATED by testdata/tokenizer/gen_unicode.js */
static const uint32_t ucd_runs[] = {
	0x00000003, 0x00000026, 0x0000003b, 0x00000082, 0x00000087, 0x000000c1, 0x000000eb, 0x00000104,
	0x0000016f, 0x00000184, 0x000001ef, 0x00000216, 0x0000021b, 0x00000282, 0x00000287, 0x000002a8,
	0x000002af, 0x000002c9, 0x000002d3, 0x000002d4, 0x000002db, 0x000002e5, 0x000002e8, 0x000002ef,
	0x000002f1, 0x000002ff, 0x00000300, 0x0000035f, 0x00000360, 0x000003df, 0x000003e0, 0x00000b0b,
	0x00000b18, 0x00000b4b, 0x00000b80, 0x00000b97, 0x00000bb0, 0x00000bb7, 0x00000bb8, 0x00000bbf,
	0x00000dc0, 0x00000dd7, 0x00000dd8, 0x00000de3, 0x00000de8, 0x00000dfb, 0x00000dfc, 0x00000e03,
	0x00000e18, 0x00000e1f, 0x00000e20, 0x00000e2f, 0x00000e30, 0x00000e37, 0x00000e38, 0x00000e8b,
	0x00000e8c, 0x00000fdb, 0x00000fdc, 0x0000120b, 0x00001228, 0x000014c3, 0x000014c4, 0x0000155f,
	0x00001564, 0x0000156b, 0x00001580, 0x00001627, 0x00001740, 0x000017af, 0x000017bc, 0x000017cf,
	0x00001880, 0x0000192f, 0x00001981, 0x000019ab, 0x000019b8, 0x000019c3, 0x000019c4, 0x00001b53,
	0x00001b54, 0x00001b5b, 0x00001b94, 0x00001b9f, 0x00001bb8, 0x00001bc1, 0x00001be8, 0x00001bf7,
	0x00001bfc, 0x00001c03, 0x00001c40, 0x00001c47, 0x00001c48, 0x00001cc3, 0x00001d34, 0x00001e9b,
	0x00001ec4, 0x00001ecb, 0x00001f01, 0x00001f28, 0x00001faf, 0x00001fd0, 0x00001fdb, 0x00001fe8,
	0x00001fef, 0x00002000, 0x0000205b, 0x00002068, 0x0000206f, 0x00002090, 0x00002097, 0x000020a0,
	0x000020a7, 0x00002100, 0x00002167, 0x00002180, 0x000021af, 0x000021c0, 0x00002223, 0x00002224,
	0x0000223f, 0x00002280, 0x0000232b, 0x00002410, 0x000024eb, 0x000024f4, 0x000024fb, 0x00002540,
	0x00002547, 0x00002560, 0x0000258b, 0x00002599, 0x000025c3, 0x000025c4, 0x00002607, 0x00002614,
	0x00002637, 0x0000263c, 0x00002647, 0x0000264c, 0x000026a7, 0x000026a8, 0x000026c7, 0x000026c8,
	0x000026cf, 0x000026d8, 0x000026eb, 0x000026f4, 0x000026fb, 0x00002738, 0x0000273f, 0x00002770,
	0x0000277b, 0x0000277c, 0x0000278b, 0x00002799, 0x000027c0, 0x000027cb, 0x000027d1, 0x000027eb,
	0x000027f0, 0x000027f7, 0x00002814, 0x0000282f, 0x0000283c, 0x00002847, 0x0000284c, 0x000028a7,
	0x000028a8, 0x000028c7, 0x000028c8, 0x000028d3, 0x000028d4, 0x000028df, 0x000028e0, 0x000028eb,
	0x00002964, 0x00002977, 0x00002978, 0x0000297f, 0x00002999, 0x000029c3, 0x000029c8, 0x000029d7,
	0x00002a14, 0x00002a3b, 0x00002a3c, 0x00002a4b, 0x00002a4c, 0x00002aa7, 0x00002aa8, 0x00002ac7,
	0x00002ac8, 0x00002ad3, 0x00002ad4, 0x00002aeb, 0x00002af4, 0x00002afb, 0x00002b40, 0x00002b47,
	0x00002b80, 0x00002b8b, 0x00002b99, 0x00002bc3, 0x00002be4, 0x00002beb, 0x00002c14, 0x00002c37,
	0x00002c3c, 0x00002c47, 0x00002c4c, 0x00002ca7, 0x00002ca8, 0x00002cc7, 0x00002cc8, 0x00002cd3,
	0x00002cd4, 0x00002ceb, 0x00002cf4, 0x00002cfb, 0x00002d70, 0x00002d7b, 0x00002d7c, 0x00002d8b,
	0x00002d99, 0x00002dc3, 0x00002dc4, 0x00002dc9, 0x00002de3, 0x00002e0c, 0x00002e13, 0x00002e14,
	0x00002e2f, 0x00002e38, 0x00002e47, 0x00002e48, 0x00002e5b, 0x00002e64, 0x00002e6f, 0x00002e70,
	0x00002e77, 0x00002e78, 0x00002e83, 0x00002e8c, 0x00002e97, 0x00002ea0, 0x00002eaf, 0x00002eb8,
	0x00002eeb, 0x00002f40, 0x00002f47, 0x00002f99, 0x00002fcf, 0x00003014, 0x00003037, 0x00003038,
	0x00003047, 0x00003048, 0x000030a7, 0x000030a8, 0x000030eb, 0x000030f4, 0x000030fb, 0x00003160,
	0x0000316f, 0x00003174, 0x0000317b, 0x00003180, 0x0000318b, 0x00003199, 0x000031c3, 0x000031e1,
	0x000031ff, 0x00003200, 0x00003207, 0x00003214, 0x00003237, 0x00003238, 0x00003247, 0x00003248,
	0x000032a7, 0x000032a8, 0x000032d3, 0x000032d4, 0x000032eb, 0x000032f4, 0x000032fb, 0x00003374,
	0x0000337f, 0x00003380, 0x0000338b, 0x00003399, 0x000033c3, 0x000033c4, 0x000033cf, 0x00003410,
	0x00003437, 0x00003438, 0x00003447, 0x00003448, 0x000034ef, 0x000034f4, 0x000034fb, 0x00003538,
	0x0000353f, 0x00003550, 0x0000355f, 0x00003561, 0x0000357c, 0x0000358b, 0x00003599, 0x000035e7,
	0x000035e8, 0x00003603, 0x00003614, 0x0000365f, 0x00003668, 0x000036cb, 0x000036cc, 0x000036f3,
	0x000036f4, 0x000036fb, 0x00003700, 0x0000371f, 0x00003799, 0x000037c3, 0x00003804, 0x000038c7,
	0x000038c8, 0x000038d3, 0x00003900, 0x0000391f, 0x00003941, 0x0000396b, 0x00003a04, 0x00003a0f,
	0x00003a10, 0x00003a17, 0x00003a18, 0x00003a2f, 0x00003a30, 0x00003a93, 0x00003a94, 0x00003a9b,
	0x00003a9c, 0x00003ac7, 0x00003ac8, 0x00003ad3, 0x00003af4, 0x00003afb, 0x00003b00, 0x00003b17,
	0x00003b18, 0x00003b1f, 0x00003b41, 0x00003b6b, 0x00003b70, 0x00003b83, 0x00003c00, 0x00003c07,
	0x00003c81, 0x00003cd3, 0x00003d00, 0x00003d23, 0x00003d24, 0x00003db7, 0x00003e20, 0x00003e37,
	0x00004000, 0x000040af, 0x000040fc, 0x00004101, 0x0000412b, 0x00004140, 0x0000415b, 0x00004168,
	0x0000417b, 0x00004184, 0x0000418b, 0x00004194, 0x0000419f, 0x000041b8, 0x000041c7, 0x000041d4,
	0x0000420b, 0x00004238, 0x0000423f, 0x00004241, 0x0000426b, 0x00004280, 0x0000431b, 0x0000431c,
	0x00004323, 0x00004334, 0x0000433b, 0x00004340, 0x000043ef, 0x000043f0, 0x00004927, 0x00004928,
	0x0000493b, 0x00004940, 0x0000495f, 0x00004960, 0x00004967, 0x00004968, 0x0000497b, 0x00004980,
	0x00004a27, 0x00004a28, 0x00004a3b, 0x00004a40, 0x00004ac7, 0x00004ac8, 0x00004adb, 0x00004ae0,
	0x00004aff, 0x00004b00, 0x00004b07, 0x00004b08, 0x00004b1b, 0x00004b20, 0x00004b5f, 0x00004b60,
	0x00004c47, 0x00004c48, 0x00004c5b, 0x00004c60, 0x00004d6f, 0x00004da5, 0x00004df7, 0x00004e00,
	0x00004e43, 0x00004e80, 0x00004fdb, 0x00004fe0, 0x00004ffb, 0x00005004, 0x000059b7, 0x000059bc,
	0x00005a02, 0x00005a04, 0x00005a6f, 0x00005a80, 0x00005baf, 0x00005bb9, 0x00005bc4, 0x00005be7,
	0x00005c00, 0x00005c4b, 0x00005c7c, 0x00005ccb, 0x00005d00, 0x00005d4b, 0x00005d80, 0x00005db7,
	0x00005db8, 0x00005dc7, 0x00005e00, 0x00005ed3, 0x00005f5c, 0x00005f63, 0x00005f70, 0x00005f77,
	0x00005f81, 0x00005fab, 0x00005fc1, 0x00005feb, 0x00006041, 0x0000606b, 0x00006080, 0x000061e7,
	0x00006200, 0x00006217, 0x0000621c, 0x000062a7, 0x000062a8, 0x000062af, 0x000062c0, 0x000063db,
	0x00006400, 0x0000647f, 0x00006519, 0x00006540, 0x000065bb, 0x000065c0, 0x000065d7, 0x00006600,
	0x000066b3, 0x000066c0, 0x0000672b, 0x00006741, 0x0000676f, 0x00006800, 0x0000685f, 0x00006880,
	0x00006957, 0x00006a01, 0x00006a2b, 0x00006a41, 0x00006a6b, 0x00006a9c, 0x00006aa3, 0x00006c14,
	0x00006cd3, 0x00006d14, 0x00006d37, 0x00006d41, 0x00006d6b, 0x00006e0c, 0x00006e87, 0x00006eb8,
	0x00006ec1, 0x00006ee8, 0x00006f9b, 0x00007000, 0x00007093, 0x00007101, 0x0000712b, 0x00007134,
	0x00007141, 0x00007168, 0x000071fb, 0x00007200, 0x0000722f, 0x00007240, 0x000072ef, 0x000072f4,
	0x00007303, 0x000073a4, 0x000073b7, 0x000073b8, 0x000073d3, 0x000073d4, 0x000073df, 0x000073e8,
	0x000073ef, 0x00007400, 0x00007703, 0x00007800, 0x00007c5b, 0x00007c60, 0x00007c7b, 0x00007c80,
	0x00007d1b, 0x00007d20, 0x00007d3b, 0x00007d40, 0x00007d63, 0x00007d64, 0x00007d6b, 0x00007d6c,
	0x00007d73, 0x00007d74, 0x00007d7b, 0x00007d7c, 0x00007dfb, 0x00007e00, 0x00007ed7, 0x00007ed8,
	0x00007ef7, 0x00007ef8, 0x00007eff, 0x00007f08, 0x00007f17, 0x00007f18, 0x00007f37, 0x00007f40,
	0x00007f53, 0x00007f58, 0x00007f73, 0x00007f80, 0x00007fb7, 0x00007fc8, 0x00007fd7, 0x00007fd8,
	0x00007ff7, 0x00008002, 0x0000802f, 0x000080a2, 0x000080ab, 0x000080be, 0x000080c3, 0x0000817e,
	0x00008183, 0x000081c1, 0x000081c4, 0x000081cb, 0x000081d1, 0x000081eb, 0x000081fc, 0x00008201,
	0x0000822b, 0x00008240, 0x00008277, 0x00008408, 0x0000840f, 0x0000841c, 0x00008423, 0x00008428,
	0x00008453, 0x00008454, 0x0000845b, 0x00008464, 0x0000847b, 0x00008490, 0x00008497, 0x00008498,
	0x0000849f, 0x000084a0, 0x000084a7, 0x000084a8, 0x000084bb, 0x000084bc, 0x000084eb, 0x000084f0,
	0x00008503, 0x00008514, 0x0000852b, 0x00008538, 0x0000853f, 0x00008541, 0x0000860c, 0x00008615,
	0x0000862b, 0x00009181, 0x00009273, 0x000093a9, 0x00009403, 0x00009dd9, 0x00009e53, 0x0000b000,
	0x0000b397, 0x0000b3ac, 0x0000b3bf, 0x0000b3c8, 0x0000b3d3, 0x0000b3f5, 0x0000b3fb, 0x0000b400,
	0x0000b49b, 0x0000b49c, 0x0000b4a3, 0x0000b4b4, 0x0000b4bb, 0x0000b4c0, 0x0000b5a3, 0x0000b5bc,
	0x0000b5c3, 0x0000b600, 0x0000b65f, 0x0000b680, 0x0000b69f, 0x0000b6a0, 0x0000b6bf, 0x0000b6c0,
	0x0000b6df, 0x0000b6e0, 0x0000b6ff, 0x0000b700, 0x0000b71f, 0x0000b720, 0x0000b73f, 0x0000b740,
	0x0000b75f, 0x0000b760, 0x0000b77f, 0x0000b8bc, 0x0000b8c3, 0x0000c002, 0x0000c007, 0x0000c014,
	0x0000c01d, 0x0000c023, 0x0000c085, 0x0000c0ab, 0x0000c0c4, 0x0000c0db, 0x0000c0e1, 0x0000c0ec,
	0x0000c0f7, 0x0000c104, 0x0000c25f, 0x0000c274, 0x0000c283, 0x0000c284, 0x0000c3ef, 0x0000c3f0,
	0x0000c403, 0x0000c414, 0x0000c4c3, 0x0000c4c4, 0x0000c63f, 0x0000c649, 0x0000c65b, 0x0000c680,
	0x0000c703, 0x0000c7c0, 0x0000c803, 0x0000c881, 0x0000c8ab, 0x0000c921, 0x0000c943, 0x0000c945,
	0x0000c983, 0x0000ca01, 0x0000ca2b, 0x0000cac5, 0x0000cb03, 0x0000d000, 0x00013703, 0x00013800,
	0x00029237, 0x00029340, 0x000293fb, 0x00029400, 0x00029837, 0x00029840, 0x00029881, 0x000298a8,
	0x000298b3, 0x00029900, 0x000299bf, 0x000299fc, 0x00029a7b, 0x00029a80, 0x00029b99, 0x00029bc3,
	0x00029c5c, 0x00029c83, 0x00029c88, 0x00029e27, 0x00029e2c, 0x00029f3b, 0x00029f40, 0x00029f4b,
	0x00029f4c, 0x00029f53, 0x00029f54, 0x00029f77, 0x00029fc8, 0x0002a00b, 0x0002a00c, 0x0002a01b,
	0x0002a01c, 0x0002a02f, 0x0002a030, 0x0002a08f, 0x0002a0c1, 0x0002a0db, 0x0002a100, 0x0002a1d3,
	0x0002a208, 0x0002a2d3, 0x0002a341, 0x0002a36b, 0x0002a3c8, 0x0002a3e3, 0x0002a3ec, 0x0002a3f3,
	0x0002a3f4, 0x0002a3ff, 0x0002a401, 0x0002a428, 0x0002a49b, 0x0002a4c0, 0x0002a51f, 0x0002a580,
	0x0002a5f7, 0x0002a610, 0x0002a6cf, 0x0002a73c, 0x0002a741, 0x0002a76b, 0x0002a780, 0x0002a797,
	0x0002a798, 0x0002a7c1, 0x0002a7e8, 0x0002a7ff, 0x0002a800, 0x0002a8a7, 0x0002a900, 0x0002a90f,
	0x0002a910, 0x0002a933, 0x0002a941, 0x0002a96b, 0x0002a980, 0x0002a9df, 0x0002a9e8, 0x0002a9ef,
	0x0002a9f8, 0x0002aac3, 0x0002aac4, 0x0002aacb, 0x0002aad4, 0x0002aadf, 0x0002aae4, 0x0002aafb,
	0x0002ab00, 0x0002ab07, 0x0002ab08, 0x0002ab0f, 0x0002ab6c, 0x0002ab7b, 0x0002ab80, 0x0002abaf,
	0x0002abc8, 0x0002abd7, 0x0002ac04, 0x0002ac1f, 0x0002ac24, 0x0002ac3f, 0x0002ac44, 0x0002ac5f,
	0x0002ac80, 0x0002ac9f, 0x0002aca0, 0x0002acbf, 0x0002acc0, 0x0002ad6f, 0x0002ad70, 0x0002adab,
	0x0002adc0, 0x0002af8f, 0x0002afc1, 0x0002afeb, 0x0002b000, 0x00035e93, 0x00035ec0, 0x00035f1f,
	0x00035f2c, 0x00035ff3, 0x0003e400, 0x0003e9bb, 0x0003e9c0, 0x0003eb6b, 0x0003ec00, 0x0003ec1f,
	0x0003ec4c, 0x0003ec63, 0x0003ec74, 0x0003ec7b, 0x0003ec7c, 0x0003eca7, 0x0003eca8, 0x0003ecdf,
	0x0003ece0, 0x0003ecf7, 0x0003ecf8, 0x0003ecff, 0x0003ed00, 0x0003ed0b, 0x0003ed0c, 0x0003ed17,
	0x0003ed18, 0x0003eecb, 0x0003ef4c, 0x0003f4fb, 0x0003f540, 0x0003f643, 0x0003f648, 0x0003f723,
	0x0003f7c0, 0x0003f7f3, 0x0003f9c0, 0x0003f9d7, 0x0003f9d8, 0x0003fbf7, 0x0003fc41, 0x0003fc6b,
	0x0003fc84, 0x0003fcef, 0x0003fd04, 0x0003fd6f, 0x0003fd98, 0x0003feff, 0x0003ff08, 0x0003ff23,
	0x0003ff28, 0x0003ff43, 0x0003ff48, 0x0003ff63, 0x0003ff68, 0x0003ff77, 0x00040000, 0x00040033,
	0x00040034, 0x0004009f, 0x000400a0, 0x000400ef, 0x000400f0, 0x000400fb, 0x000400fc, 0x0004013b,
	0x00040140, 0x0004017b, 0x00040200, 0x000403ef, 0x0004041d, 0x000404d3, 0x00040501, 0x000405e7,
	0x00040629, 0x00040633, 0x00040a00, 0x00040a77, 0x00040a80, 0x00040b47, 0x00040b85, 0x00040bf3,
	0x00040c00, 0x00040c81, 0x00040c93, 0x00040cb4, 0x00040d05, 0x00040d08, 0x00040d29, 0x00040d2f,
	0x00040d40, 0x00040ddb, 0x00040e00, 0x00040e7b, 0x00040e80, 0x00040f13, 0x00040f20, 0x00040f43,
	0x00040f45, 0x00040f5b, 0x00041000, 0x0004127b, 0x00041281, 0x000412ab, 0x000412c0, 0x00041353,
	0x00041360, 0x000413f3, 0x00041400, 0x000414a3, 0x000414c0, 0x00041593, 0x000415c0, 0x000415ef,
	0x000415f0, 0x0004162f, 0x00041630, 0x0004164f, 0x00041650, 0x0004165b, 0x0004165c, 0x0004168b,
	0x0004168c, 0x000416cb, 0x000416cc, 0x000416eb, 0x000416ec, 0x000416f7, 0x00041700, 0x000417d3,
	0x00041800, 0x00041cdf, 0x00041d00, 0x00041d5b, 0x00041d80, 0x00041da3, 0x00041e00, 0x00041e1b,
	0x00041e1c, 0x00041ec7, 0x00041ec8, 0x00041eef, 0x00042000, 0x0004201b, 0x00042020, 0x00042027,
	0x00042028, 0x000420db, 0x000420dc, 0x000420e7, 0x000420f0, 0x000420f7, 0x000420fc, 0x0004215b,
	0x00042161, 0x00042180, 0x000421df, 0x000421e5, 0x00042200, 0x0004227f, 0x0004229d, 0x000422c3,
	0x00042380, 0x000423cf, 0x000423d0, 0x000423db, 0x000423ed, 0x00042400, 0x00042459, 0x00042473,
	0x00042480, 0x000424eb, 0x00042600, 0x000426e3, 0x000426f1, 0x000426f8, 0x00042701, 0x00042743,
	0x00042749, 0x00042800, 0x00042807, 0x00042840, 0x00042853, 0x00042854, 0x00042863, 0x00042864,
	0x000428db, 0x00042901, 0x00042927, 0x00042980, 0x000429f5, 0x000429ff, 0x00042a00, 0x00042a75,
	0x00042a83, 0x00042b00, 0x00042b23, 0x00042b24, 0x00042b97, 0x00042bad, 0x00042bc3, 0x00042c00,
	0x00042cdb, 0x00042d00, 0x00042d5b, 0x00042d61, 0x00042d80, 0x00042dcf, 0x00042de1, 0x00042e00,
	0x00042e4b, 0x00042ea5, 0x00042ec3, 0x00043000, 0x00043127, 0x00043200, 0x000432cf, 0x00043300,
	0x000433cf, 0x000433e9, 0x00043400, 0x00043493, 0x000434c1, 0x000434eb, 0x00043501, 0x00043528,
	0x0004359b, 0x000435bc, 0x0004361b, 0x00043981, 0x000439ff, 0x00043a00, 0x00043aab, 0x00043ac0,
	0x00043acb, 0x00043b08, 0x00043b17, 0x00043c00, 0x00043c75, 0x00043c9c, 0x00043ca3, 0x00043cc0,
	0x00043d1b, 0x00043d45, 0x00043d57, 0x00043dc0, 0x00043e0b, 0x00043ec0, 0x00043f15, 0x00043f33,
	0x00043f80, 0x00043fdf, 0x0004400c, 0x000440e3, 0x00044149, 0x000441c3, 0x000441c4, 0x000441cf,
	0x000441d4, 0x000441db, 0x0004420c, 0x000442c3, 0x00044340, 0x000443a7, 0x000443c1, 0x000443eb,
	0x0004440c, 0x0004449f, 0x000444d9, 0x00044503, 0x00044510, 0x00044517, 0x0004451c, 0x00044523,
	0x00044540, 0x000445cf, 0x000445d8, 0x000445df, 0x0004460c, 0x000446cf, 0x00044704, 0x00044717,
	0x00044741, 0x00044768, 0x0004476f, 0x00044770, 0x00044777, 0x00044785, 0x000447d7, 0x00044800,
	0x0004484b, 0x0004484c, 0x000448b3, 0x000448fc, 0x00044907, 0x00044a00, 0x00044a1f, 0x00044a20,
	0x00044a27, 0x00044a28, 0x00044a3b, 0x00044a3c, 0x00044a7b, 0x00044a7c, 0x00044aa7, 0x00044ac0,
	0x00044b7f, 0x00044bc1, 0x00044beb, 0x00044c14, 0x00044c37, 0x00044c3c, 0x00044c47, 0x00044c4c,
	0x00044ca7, 0x00044ca8, 0x00044cc7, 0x00044cc8, 0x00044cd3, 0x00044cd4, 0x00044ceb, 0x00044cf4,
	0x00044cfb, 0x00044d40, 0x00044d47, 0x00044d74, 0x00044d8b, 0x00044e00, 0x00044e2b, 0x00044e2c,
	0x00044e33, 0x00044e38, 0x00044e3f, 0x00044e40, 0x00044edb, 0x00044edc, 0x00044ee3, 0x00044f44,
	0x00044f4b, 0x00044f4c, 0x00044f53, 0x00045000, 0x000450d7, 0x0004511c, 0x0004512f, 0x00045141,
	0x0004516b, 0x0004517c, 0x0004518b, 0x00045200, 0x000452c3, 0x00045310, 0x0004531b, 0x0004531c,
	0x00045323, 0x00045341, 0x0004536b, 0x00045600, 0x000456bf, 0x00045760, 0x00045773, 0x00045800,
	0x000458c3, 0x00045910, 0x00045917, 0x00045941, 0x0004596b, 0x00045a00, 0x00045aaf, 0x00045ae0,
	0x00045ae7, 0x00045b01, 0x00045b2b, 0x00045b41, 0x00045b93, 0x00045c00, 0x00045c6f, 0x00045cc1,
	0x00045cf3, 0x00045d00, 0x00045d1f, 0x00046000, 0x000460b3, 0x00046280, 0x00046381, 0x000463cf,
	0x000463fc, 0x0004641f, 0x00046424, 0x0004642b, 0x00046430, 0x00046453, 0x00046454, 0x0004645f,
	0x00046460, 0x000464c3, 0x000464fc, 0x00046503, 0x00046504, 0x0004650b, 0x00046541, 0x0004656b,
	0x00046680, 0x000466a3, 0x000466a8, 0x00046747, 0x00046784, 0x0004678b, 0x0004678c, 0x00046793,
	0x00046800, 0x00046807, 0x0004682c, 0x000468cf, 0x000468e8, 0x000468ef, 0x00046940, 0x00046947,
	0x00046970, 0x00046a2b, 0x00046a74, 0x00046a7b, 0x00046ac0, 0x00046be7, 0x00046f00, 0x00046f87,
	0x00046fc1, 0x00046feb, 0x00047000, 0x00047027, 0x00047028, 0x000470bf, 0x00047100, 0x00047107,
	0x00047141, 0x000471b7, 0x000471c8, 0x00047243, 0x00047400, 0x0004741f, 0x00047420, 0x0004742b,
	0x0004742c, 0x000474c7, 0x00047518, 0x0004751f, 0x00047541, 0x0004756b, 0x00047580, 0x0004759b,
	0x0004759c, 0x000475a7, 0x000475a8, 0x0004762b, 0x00047660, 0x00047667, 0x00047681, 0x000476ab,
	0x00047b80, 0x00047bcf, 0x00047c08, 0x00047c0f, 0x00047c10, 0x00047c47, 0x00047c48, 0x00047cd3,
	0x00047d41, 0x00047d6b, 0x00047ec0, 0x00047ec7, 0x00047f01, 0x00047f57, 0x00048000, 0x00048e6b,
	0x00049001, 0x000491bf, 0x00049200, 0x00049513, 0x0004be40, 0x0004bfc7, 0x0004c000, 0x0004d0c3,
	0x0004d104, 0x0004d11f, 0x0004d180, 0x00050fef, 0x00051000, 0x0005191f, 0x00058400, 0x0005847b,
	0x000584c1, 0x000584eb, 0x0005a000, 0x0005a8e7, 0x0005a900, 0x0005a97f, 0x0005a981, 0x0005a9ab,
	0x0005a9c0, 0x0005aaff, 0x0005ab01, 0x0005ab2b, 0x0005ab40, 0x0005abbb, 0x0005ac00, 0x0005acc3,
	0x0005ad00, 0x0005ad13, 0x0005ad41, 0x0005ad6b, 0x0005ad6d, 0x0005ad8b, 0x0005ad8c, 0x0005ade3,
	0x0005adf4, 0x0005ae43, 0x0005b500, 0x0005b5b7, 0x0005b5c1, 0x0005b5eb, 0x0005b900, 0x0005ba01,
	0x0005ba5f, 0x0005bc00, 0x0005bd2f, 0x0005bd40, 0x0005bd47, 0x0005be4c, 0x0005be83, 0x0005bf80,
	0x0005bf8b, 0x0005bf8c, 0x0005bf93, 0x0005c000, 0x00061fe3, 0x00062000, 0x0006335b, 0x000633fc,
	0x00063427, 0x0006bfc0, 0x0006bfd3, 0x0006bfd4, 0x0006bff3, 0x0006bff4, 0x0006bfff, 0x0006c000,
	0x0006c48f, 0x0006c4c8, 0x0006c4cf, 0x0006c540, 0x0006c54f, 0x0006c554, 0x0006c55b, 0x0006c590,
	0x0006c5a3, 0x0006c5c0, 0x0006cbf3, 0x0006f000, 0x0006f1af, 0x0006f1c0, 0x0006f1f7, 0x0006f200,
	0x0006f227, 0x0006f240, 0x0006f26b, 0x000733c1, 0x000733eb, 0x00074b01, 0x00074b53, 0x00074b81,
	0x00074bd3, 0x00074d81, 0x00074de7, 0x00075000, 0x00075157, 0x00075158, 0x00075277, 0x00075278,
	0x00075283, 0x00075288, 0x0007528f, 0x00075294, 0x0007529f, 0x000752a4, 0x000752b7, 0x000752b8,
	0x000752eb, 0x000752ec, 0x000752f3, 0x000752f4, 0x00075313, 0x00075314, 0x0007541b, 0x0007541c,
	0x0007542f, 0x00075434, 0x00075457, 0x00075458, 0x00075477, 0x00075478, 0x000754eb, 0x000754ec,
	0x000754ff, 0x00075500, 0x00075517, 0x00075518, 0x0007551f, 0x00075528, 0x00075547, 0x00075548,
	0x00075a9b, 0x00075aa0, 0x00075b07, 0x00075b08, 0x00075b6f, 0x00075b70, 0x00075bef, 0x00075bf0,
	0x00075c57, 0x00075c58, 0x00075cd7, 0x00075cd8, 0x00075d3f, 0x00075d40, 0x00075dbf, 0x00075dc0,
	0x00075e27, 0x00075e28, 0x00075ea7, 0x00075ea8, 0x00075f0f, 0x00075f10, 0x00075f33, 0x00075f39,
	0x00076003, 0x00077c00, 0x00077c7f, 0x00077c94, 0x00077caf, 0x000780c0, 0x000781bb, 0x00078400,
	0x000784b7, 0x000784dc, 0x000784fb, 0x00078501, 0x0007852b, 0x00078538, 0x0007853f, 0x00078a40,
	0x00078abb, 0x00078b00, 0x00078bb3, 0x00078bc1, 0x00078beb, 0x00079340, 0x000793b3, 0x000793c1,
	0x000793eb, 0x00079740, 0x000797bb, 0x000797c0, 0x000797c5, 0x000797ef, 0x00079f80, 0x00079f9f,
	0x00079fa0, 0x00079fb3, 0x00079fb4, 0x00079fbf, 0x00079fc0, 0x00079fff, 0x0007a000, 0x0007a317,
	0x0007a31d, 0x0007a343, 0x0007a400, 0x0007a513, 0x0007a52c, 0x0007a533, 0x0007a541, 0x0007a56b,
	0x0007b1c5, 0x0007b2b3, 0x0007b2b5, 0x0007b2c3, 0x0007b2c5, 0x0007b2d7, 0x0007b405, 0x0007b4bb,
	0x0007b4bd, 0x0007b4fb, 0x0007b800, 0x0007b813, 0x0007b814, 0x0007b883, 0x0007b884, 0x0007b88f,
	0x0007b890, 0x0007b897, 0x0007b89c, 0x0007b8a3, 0x0007b8a4, 0x0007b8cf, 0x0007b8d0, 0x0007b8e3,
	0x0007b8e4, 0x0007b8eb, 0x0007b8ec, 0x0007b8f3, 0x0007b908, 0x0007b90f, 0x0007b91c, 0x0007b923,
	0x0007b924, 0x0007b92b, 0x0007b92c, 0x0007b933, 0x0007b934, 0x0007b943, 0x0007b944, 0x0007b94f,
	0x0007b950, 0x0007b957, 0x0007b95c, 0x0007b963, 0x0007b964, 0x0007b96b, 0x0007b96c, 0x0007b973,
	0x0007b974, 0x0007b97b, 0x0007b97c, 0x0007b983, 0x0007b984, 0x0007b98f, 0x0007b990, 0x0007b997,
	0x0007b99c, 0x0007b9af, 0x0007b9b0, 0x0007b9cf, 0x0007b9d0, 0x0007b9e3, 0x0007b9e4, 0x0007b9f7,
	0x0007b9f8, 0x0007b9ff, 0x0007ba00, 0x0007ba2b, 0x0007ba2c, 0x0007ba73, 0x0007ba84, 0x0007ba93,
	0x0007ba94, 0x0007baab, 0x0007baac, 0x0007baf3, 0x0007c401, 0x0007c437, 0x0007efc1, 0x0007efeb,
	0x00080000, 0x000a9b83, 0x000a9c00, 0x000adceb, 0x000add00, 0x000ae07b, 0x000ae080, 0x000b3a8b,
	0x000b3ac0, 0x000baf87, 0x000bafc0, 0x000bb97b, 0x000be000, 0x000be87b, 0x000c0000, 0x000c4d2f,
	0x000c4d40, 0x000c8ec3,
};
/* END GENERATED */

static int ucd_build(gpt2_tokenizer *t)
{
	size_t n_runs = sizeof ucd_runs / sizeof ucd_runs[0];
	unsigned char *all = malloc(0x110000);
	if (!all)
		return -1;
	for (size_t r = 0; r < n_runs; r++) {
		uint32_t start = ucd_runs[r] >> 2;
		uint32_t end = r + 1 < n_runs ? ucd_runs[r + 1] >> 2 : 0x110000;
		memset(all + start, (int)(ucd_runs[r] & 3), end - start);
	}
	/* Blocks 0-3 are the uniform ones, one per class; every mixed 256-code
	 * point block gets its own copy. */
	size_t n_mixed = 0;
	for (size_t b = 0; b < 0x1100; b++) {
		const unsigned char *p = all + b * 256;
		if (memchr(p, p[0] ^ 1, 256) || memchr(p, p[0] ^ 2, 256) || memchr(p, p[0] ^ 3, 256))
			n_mixed++;
	}
	t->ucd_blocks = malloc((4 + n_mixed) * 256);
	if (!t->ucd_blocks) {
		free(all);
		return -1;
	}
	for (int c = 0; c < 4; c++)
		memset(t->ucd_blocks + c * 256, c, 256);
	size_t next = 4;
	for (size_t b = 0; b < 0x1100; b++) {
		const unsigned char *p = all + b * 256;
		if (memchr(p, p[0] ^ 1, 256) || memchr(p, p[0] ^ 2, 256) || memchr(p, p[0] ^ 3, 256)) {
			memcpy(t->ucd_blocks + next * 256, p, 256);
			t->ucd_stage1[b] = (uint16_t)next++;
		} else {
			t->ucd_stage1[b] = p[0];
		}
	}
	free(all);
	return 0;
}

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

/*
 * A seed for the hash tables, new for each tokenizer. The hashes below are
 * easy to invert: with them fixed, a vocab.json of 100000 keys made to fall
 * into one slot took 16 s to load (a million, half an hour). Whoever writes
 * the file cannot know the seed. The results never depend on it.
 */
static uint64_t random_seed(const void *salt)
{
	uint64_t seed;
	if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed) {
		/* No entropy yet (early boot): the clock and an address. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		seed = ((uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec) *
		               0x9E3779B97F4A7C15ull ^
		       (uint64_t)(uintptr_t)salt;
	}
	return seed;
}

static uint64_t hash_bytes(uint64_t seed, const void *p, size_t n)
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

static int32_t key_find(const gpt2_tokenizer *t, const char *k, size_t n)
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

static void key_insert(gpt2_tokenizer *t, uint32_t id)
{
	uint64_t h = hash_bytes(t->seed, t->key_data + t->key_off[id], t->key_len[id]);
	uint32_t i = (uint32_t)h & t->key_mask;
	while (t->key_tab[i])
		i = (i + 1) & t->key_mask;
	t->key_tab[i] = id + 1;
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

/* Later duplicates replace earlier ones, as in Hugging Face's merge map. */
static void merge_insert(gpt2_tokenizer *t, int32_t a, int32_t b, uint32_t rank, int32_t id)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	uint64_t i = mix64(key ^ t->seed) & t->merge_mask;
	while (t->merges[i].key != UINT64_MAX && t->merges[i].key != key)
		i = (i + 1) & t->merge_mask;
	t->merges[i].key = key;
	t->merges[i].rank = rank;
	t->merges[i].id = id;
}

/* ---- loading ------------------------------------------------------------------ */

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
} merge_entry;

typedef struct load_state {
	const char *vocab_path, *merges_path;
	vocab_entry *vocab;
	size_t n_vocab;
	merge_entry *mergev;
	size_t n_merges;
	added_token *added;
	size_t n_added;
	int add_prefix_space, use_regex, ignore_merges;
	char *err;
	size_t errlen;
} load_state;

static int json_int_id(const cJSON *v, int32_t *id)
{
	if (!cJSON_IsNumber(v))
		return -1;
	double d = v->valuedouble;
	if (!(d >= 0 && d < MAX_IDS) || d != (double)(int32_t)d)
		return -1;
	*id = (int32_t)d;
	return 0;
}

/* The vocabulary object {"token": id, ...}. */
static int load_vocab_object(load_state *ls, const cJSON *obj, const char *where)
{
	if (!cJSON_IsObject(obj))
		return fail(ls->err, ls->errlen, "%s: %s is not an object", ls->vocab_path, where);
	size_t n = 0;
	for (const cJSON *c = obj->child; c; c = c->next)
		n++;
	ls->vocab = calloc(n ? n : 1, sizeof *ls->vocab);
	if (!ls->vocab)
		return fail(ls->err, ls->errlen, "%s: out of memory", ls->vocab_path);
	for (const cJSON *c = obj->child; c; c = c->next) {
		vocab_entry *e = &ls->vocab[ls->n_vocab];
		char sa[SHOW_MAX];
		if (json_int_id(c, &e->id) != 0)
			return fail(ls->err, ls->errlen,
			            "%s: %s: token '%s' has id %s (expected an integer in [0, %d))",
			            ls->vocab_path, where, show(sa, c->string, strlen(c->string)),
			            cJSON_IsNumber(c) ? "out of range" : "not a number", MAX_IDS);
		e->key = c->string;
		e->len = strlen(c->string);
		ls->n_vocab++;
	}
	return 0;
}

/* Split "a b" into two tokens; -1 unless there is exactly one space with
 * something on both sides. */
static int split_merge(const char *s, merge_entry *m)
{
	const char *sp = strchr(s, ' ');
	if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' '))
		return -1;
	m->a = s;
	m->alen = (size_t)(sp - s);
	m->b = sp + 1;
	m->blen = strlen(sp + 1);
	return 0;
}

static int load_tokenizer_json(load_state *ls, const cJSON *root)
{
	const char *path = ls->vocab_path;
	if (!cJSON_IsObject(root))
		return fail(ls->err, ls->errlen, "%s: not a JSON object", path);

	/* The normalizer must be absent or null: the GPT-2 tokenizer has none. */
	const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
	if (norm && !cJSON_IsNull(norm))
		return fail(ls->err, ls->errlen, "%s: normalizer is not supported (expected null)", path);

	/* The pre-tokenizer: ByteLevel, or absent (then its defaults). */
	const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
	char sa[SHOW_MAX];
	if (pre && !cJSON_IsNull(pre)) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(pre, "type");
		if (!cJSON_IsObject(pre) || (type && (!cJSON_IsString(type) ||
		                                      strcmp(type->valuestring, "ByteLevel") != 0)))
			return fail(ls->err, ls->errlen,
			            "%s: pre_tokenizer: type '%s' is not supported (expected ByteLevel)",
			            path, cJSON_IsString(type)
			                  ? show(sa, type->valuestring, strlen(type->valuestring))
			                  : "?");
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(pre, "add_prefix_space");
		if (cJSON_IsBool(v))
			ls->add_prefix_space = cJSON_IsTrue(v);
		v = cJSON_GetObjectItemCaseSensitive(pre, "use_regex");
		if (cJSON_IsBool(v))
			ls->use_regex = cJSON_IsTrue(v);
	}

	/* The model: BPE. */
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	if (!cJSON_IsObject(model))
		return fail(ls->err, ls->errlen, "%s: model is missing or not an object", path);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
	if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE") != 0))
		return fail(ls->err, ls->errlen, "%s: model: type '%s' is not supported (expected BPE)",
		            path, cJSON_IsString(type)
		                  ? show(sa, type->valuestring, strlen(type->valuestring))
		                  : "?");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, "ignore_merges");
	if (cJSON_IsBool(v))
		ls->ignore_merges = cJSON_IsTrue(v);
	v = cJSON_GetObjectItemCaseSensitive(model, "byte_fallback");
	if (cJSON_IsTrue(v))
		return fail(ls->err, ls->errlen, "%s: model: byte_fallback is not supported (expected false)", path);
	v = cJSON_GetObjectItemCaseSensitive(model, "dropout");
	if (v && !cJSON_IsNull(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0))
		return fail(ls->err, ls->errlen, "%s: model: dropout is not supported (expected null)", path);
	const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
	for (int i = 0; i < 2; i++) {
		v = cJSON_GetObjectItemCaseSensitive(model, affix[i]);
		if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && !v->valuestring[0]))
			return fail(ls->err, ls->errlen, "%s: model: %s is not supported (expected empty)",
			            path, affix[i]);
	}

	if (load_vocab_object(ls, cJSON_GetObjectItemCaseSensitive(model, "vocab"), "model.vocab") != 0)
		return -1;

	const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
	if (merges && !cJSON_IsArray(merges))
		return fail(ls->err, ls->errlen, "%s: model.merges is not an array", path);
	size_t n = (size_t)cJSON_GetArraySize(merges);
	ls->mergev = calloc(n ? n : 1, sizeof *ls->mergev);
	if (!ls->mergev)
		return fail(ls->err, ls->errlen, "%s: out of memory", path);
	size_t i = 0;
	for (const cJSON *m = merges ? merges->child : NULL; m; m = m->next, i++) {
		merge_entry *e = &ls->mergev[i];
		e->where = i;
		if (cJSON_IsString(m)) {
			if (split_merge(m->valuestring, e) != 0)
				return fail(ls->err, ls->errlen,
				            "%s: model.merges[%zu]: '%s' is not two tokens separated by one space",
				            path, i, show(sa, m->valuestring, strlen(m->valuestring)));
		} else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 &&
		           cJSON_IsString(m->child) && cJSON_IsString(m->child->next)) {
			e->a = m->child->valuestring;
			e->alen = strlen(e->a);
			e->b = m->child->next->valuestring;
			e->blen = strlen(e->b);
		} else {
			return fail(ls->err, ls->errlen,
			            "%s: model.merges[%zu]: expected a string \"a b\" or a pair [\"a\", \"b\"]",
			            path, i);
		}
	}
	ls->n_merges = i;

	/* Added tokens: found in the text before pre-tokenization. */
	const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
	if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
		return fail(ls->err, ls->errlen, "%s: added_tokens is not an array", path);
	n = added && cJSON_IsArray(added) ? (size_t)cJSON_GetArraySize(added) : 0;
	ls->added = calloc(n ? n : 1, sizeof *ls->added);
	if (!ls->added)
		return fail(ls->err, ls->errlen, "%s: out of memory", path);
	i = 0;
	for (const cJSON *a = n ? added->child : NULL; a; a = a->next, i++) {
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(a, "content");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
		added_token *e;
		if (!cJSON_IsString(content))
			return fail(ls->err, ls->errlen, "%s: added_tokens[%zu]: content is missing", path, i);
		/* The id must be there, but its value is not used (build). */
		if (!cJSON_IsNumber(id))
			return fail(ls->err, ls->errlen, "%s: added_tokens[%zu]: id is missing", path, i);
		/* Hugging Face skips empty tokens. */
		if (!content->valuestring[0])
			continue;
		const char *unsupported[] = {"lstrip", "rstrip", "single_word"};
		for (int k = 0; k < 3; k++)
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, unsupported[k])))
				return fail(ls->err, ls->errlen,
				            "%s: added_tokens[%zu] '%s': %s is not supported (expected false)",
				            path, i,
				            show(sa, content->valuestring, strlen(content->valuestring)),
				            unsupported[k]);
		e = &ls->added[ls->n_added++];
		e->text = content->valuestring;
		e->len = strlen(content->valuestring);
		e->special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "special"));
	}
	return 0;
}

/* merges.txt: a "#version" line, then one "a b" per line; the line order is
 * the rank. Empty lines are skipped; a "\r" before "\n" is dropped. */
static int load_merges_txt(load_state *ls, char *text, size_t len)
{
	size_t n_lines = 1;
	for (size_t i = 0; i < len; i++)
		n_lines += text[i] == '\n';
	ls->mergev = calloc(n_lines, sizeof *ls->mergev);
	if (!ls->mergev)
		return fail(ls->err, ls->errlen, "%s: out of memory", ls->merges_path);
	size_t line_no = 0;
	char *p = text, *end = text + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl : end;
		line_no++;
		if (memchr(p, 0, (size_t)(e - p)))
			return fail(ls->err, ls->errlen, "%s: line %zu: holds a NUL byte", ls->merges_path, line_no);
		*e = 0;
		if (e > p && e[-1] == '\r')
			e[-1] = 0;
		if (p[0] && strncmp(p, "#version", 8) != 0) {
			merge_entry *m = &ls->mergev[ls->n_merges];
			if (split_merge(p, m) != 0)
				return fail(ls->err, ls->errlen,
				            "%s: line %zu: expected two tokens separated by one space",
				            ls->merges_path, line_no);
			m->where = line_no;
			ls->n_merges++;
		}
		p = e + 1;
	}
	return 0;
}

static uint32_t pow2_at_least(size_t n)
{
	uint32_t c = 16;
	while (c < n)
		c <<= 1;
	return c;
}

/* Byte order, a prefix before the texts it begins. */
static int cmp_added(const void *a, const void *b)
{
	const added_token *x = a, *y = b;
	int c = memcmp(x->text, y->text, x->len < y->len ? x->len : y->len);
	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

/* Build the tokenizer's tables from what was loaded. */
static int build(gpt2_tokenizer *t, load_state *ls)
{
	const char *vpath = ls->vocab_path;
	char *err = ls->err;
	size_t errlen = ls->errlen;

	t->seed = random_seed(t);

	/* The model's id space; added tokens come after it (below). */
	int32_t max_id = -1;
	for (size_t i = 0; i < ls->n_vocab; i++)
		max_id = ls->vocab[i].id > max_id ? ls->vocab[i].id : max_id;
	size_t nid = (size_t)max_id + 1;

	/* The char-domain keys of the model vocabulary. */
	size_t key_bytes = 0;
	for (size_t i = 0; i < ls->n_vocab; i++)
		key_bytes += ls->vocab[i].len;
	t->key_off = malloc((nid ? nid : 1) * sizeof *t->key_off);
	t->key_len = malloc((nid ? nid : 1) * sizeof *t->key_len);
	t->key_data = malloc(key_bytes ? key_bytes : 1);
	t->key_mask = pow2_at_least(ls->n_vocab * 2) - 1;
	t->key_tab = calloc((size_t)t->key_mask + 1, sizeof *t->key_tab);
	if (!t->key_off || !t->key_len || !t->key_data || !t->key_tab)
		return fail(err, errlen, "%s: out of memory", vpath);
	for (size_t i = 0; i < nid; i++)
		t->key_len[i] = UINT32_MAX;
	size_t off = 0;
	for (size_t i = 0; i < ls->n_vocab; i++) {
		const vocab_entry *e = &ls->vocab[i];
		char sa[SHOW_MAX], sb[SHOW_MAX];
		if (t->key_len[e->id] != UINT32_MAX)
			return fail(err, errlen, "%s: tokens '%s' and '%s' both have id %d", vpath,
			            show(sa, t->key_data + t->key_off[e->id], t->key_len[e->id]),
			            show(sb, e->key, e->len), e->id);
		if (key_find(t, e->key, e->len) >= 0)
			return fail(err, errlen, "%s: token '%s' appears twice", vpath,
			            show(sa, e->key, e->len));
		memcpy(t->key_data + off, e->key, e->len);
		t->key_off[e->id] = (uint32_t)off;
		t->key_len[e->id] = (uint32_t)e->len;
		off += e->len;
		key_insert(t, (uint32_t)e->id);
	}

	/*
	 * Added tokens get their ids as Hugging Face gives them, whatever ids
	 * the file lists: the id of a token with the same text (added earlier
	 * or in the model), else the next id after the model's vocabulary,
	 * counted by entries, in file order. Files Hugging Face wrote list the
	 * same ids.
	 */
	int32_t next_id = (int32_t)ls->n_vocab;
	uint32_t amask = pow2_at_least(ls->n_added * 2) - 1;
	uint32_t *atab = calloc((size_t)amask + 1, sizeof *atab); /* index + 1 */
	if (!atab)
		return fail(err, errlen, "%s: out of memory", vpath);
	size_t n_unique = 0;
	for (size_t i = 0; i < ls->n_added; i++) {
		added_token a = ls->added[i];
		uint32_t h = (uint32_t)hash_bytes(t->seed, a.text, a.len) & amask;
		for (;; h = (h + 1) & amask) {
			added_token *u = atab[h] ? &ls->added[atab[h] - 1] : NULL;
			if (!u) {
				/* A new text: the model's id, else the next one. */
				a.id = key_find(t, a.text, a.len);
				if (a.id < 0)
					a.id = next_id++;
				ls->added[n_unique] = a;
				atab[h] = (uint32_t)++n_unique;
				break;
			}
			if (u->len == a.len && memcmp(u->text, a.text, a.len) == 0) {
				/* The same text again: same id, special if either is. */
				u->special |= a.special;
				break;
			}
		}
	}
	free(atab);
	ls->n_added = n_unique;
	t->n_ids = (int)(next_id > (int32_t)nid ? (size_t)next_id : nid);

	/* The id of each byte's one-character token. */
	for (unsigned b = 0; b < 256; b++) {
		char u[4];
		size_t n = utf8_put(u, byte_to_cp(b));
		t->byte_id[b] = key_find(t, u, n);
	}

	/* Merges: both sides and their concatenation must be tokens. */
	const char *mpath = ls->merges_path ? ls->merges_path : vpath;
	if (ls->n_merges > UINT32_MAX / 4)
		return fail(err, errlen, "%s: too many merges (%zu)", mpath, ls->n_merges);
	t->merge_mask = pow2_at_least(ls->n_merges * 2) - 1;
	t->merges = malloc((t->merge_mask + 1) * sizeof *t->merges);
	if (!t->merges)
		return fail(err, errlen, "%s: out of memory", mpath);
	for (uint64_t i = 0; i <= t->merge_mask; i++)
		t->merges[i].key = UINT64_MAX;
	char *cat = NULL;
	size_t cat_cap = 0;
	for (size_t i = 0; i < ls->n_merges; i++) {
		const merge_entry *m = &ls->mergev[i];
		char where[64], sa[SHOW_MAX];
		snprintf(where, sizeof where, ls->merges_path ? "line %zu" : "model.merges[%zu]", m->where);
		int32_t a = key_find(t, m->a, m->alen), b = key_find(t, m->b, m->blen);
		if (a < 0 || b < 0) {
			free(cat);
			return fail(err, errlen, "%s: %s: token '%s' is not in the vocabulary", mpath,
			            where, a < 0 ? show(sa, m->a, m->alen) : show(sa, m->b, m->blen));
		}
		if (m->alen + m->blen > cat_cap) {
			cat_cap = (m->alen + m->blen) * 2;
			char *c = realloc(cat, cat_cap);
			if (!c) {
				free(cat);
				return fail(err, errlen, "%s: out of memory", mpath);
			}
			cat = c;
		}
		memcpy(cat, m->a, m->alen);
		memcpy(cat + m->alen, m->b, m->blen);
		int32_t ab = key_find(t, cat, m->alen + m->blen);
		if (ab < 0) {
			fail(err, errlen, "%s: %s: merged token '%s' is not in the vocabulary",
			     mpath, where, show(sa, cat, m->alen + m->blen));
			free(cat);
			return -1;
		}
		merge_insert(t, a, b, (uint32_t)i, ab);
	}
	free(cat);

	/* Decoding: model tokens spell bytes in the alphabet (a token with a
	 * character outside it decodes to its own UTF-8, as Hugging Face's
	 * ByteLevel decoder does); added tokens decode to their text. */
	size_t data_bytes = key_bytes;
	for (size_t i = 0; i < ls->n_added; i++)
		data_bytes += ls->added[i].len;
	size_t model_nid = nid;
	nid = (size_t)t->n_ids;
	t->tok_off = calloc(nid + 1, sizeof *t->tok_off);
	t->tok_ok = calloc(nid ? nid : 1, 1);
	t->tok_data = malloc(data_bytes ? data_bytes : 1);
	if (!t->tok_off || !t->tok_ok || !t->tok_data)
		return fail(err, errlen, "%s: out of memory", vpath);
	/* Added tokens take precedence over a model token with the same id. */
	const char **added_text = calloc(nid ? nid : 1, sizeof *added_text);
	size_t *added_len = calloc(nid ? nid : 1, sizeof *added_len);
	if (!added_text || !added_len) {
		free(added_text);
		free(added_len);
		return fail(err, errlen, "%s: out of memory", vpath);
	}
	for (size_t i = 0; i < ls->n_added; i++) {
		added_text[ls->added[i].id] = ls->added[i].text;
		added_len[ls->added[i].id] = ls->added[i].len;
	}
	off = 0;
	for (size_t id = 0; id < nid; id++) {
		t->tok_off[id] = (uint32_t)off;
		if (added_text[id]) {
			memcpy(t->tok_data + off, added_text[id], added_len[id]);
			off += added_len[id];
			t->tok_ok[id] = 1;
		} else if (id < model_nid && t->key_len[id] != UINT32_MAX) {
			const unsigned char *k = (const unsigned char *)t->key_data + t->key_off[id];
			size_t kl = t->key_len[id], o = off, j = 0;
			while (j < kl) {
				size_t bad, sl = utf8_seq(k + j, kl - j, &bad);
				int byte = sl ? cp_to_byte(utf8_get(k + j, &sl)) : -1;
				if (byte < 0)
					break;
				t->tok_data[o++] = (char)byte;
				j += sl;
			}
			if (j < kl) {
				memcpy(t->tok_data + off, k, kl);
				o = off + kl;
			}
			off = o;
			t->tok_ok[id] = 1;
		}
	}
	t->tok_off[nid] = (uint32_t)off;
	free(added_text);
	free(added_len);

	/* Added tokens, in byte order for added_at. */
	t->added = calloc(ls->n_added ? ls->n_added : 1, sizeof *t->added);
	if (!t->added)
		return fail(err, errlen, "%s: out of memory", vpath);
	for (size_t i = 0; i < ls->n_added; i++) {
		added_token *a = &t->added[t->n_added];
		a->text = malloc(ls->added[i].len);
		if (!a->text)
			return fail(err, errlen, "%s: out of memory", vpath);
		memcpy(a->text, ls->added[i].text, ls->added[i].len);
		a->len = ls->added[i].len;
		a->id = ls->added[i].id;
		a->special = ls->added[i].special;
		t->n_added++;
		t->added_first[(unsigned char)a->text[0]] = 1;
	}
	qsort(t->added, t->n_added, sizeof *t->added, cmp_added);

	t->eot = -1;
	for (size_t i = 0; i < t->n_added && t->eot < 0; i++)
		if (t->added[i].len == 13 && memcmp(t->added[i].text, "<|endoftext|>", 13) == 0)
			t->eot = t->added[i].id;
	if (t->eot < 0)
		t->eot = key_find(t, "<|endoftext|>", 13);

	t->add_prefix_space = ls->add_prefix_space;
	t->use_regex = ls->use_regex;
	t->ignore_merges = ls->ignore_merges;

	t->cache_tab = calloc((size_t)1 << CACHE_BITS, sizeof *t->cache_tab);
	t->cache_entries = malloc(CACHE_MAX_ENTRIES * sizeof *t->cache_entries);
	t->cache_keys = malloc(CACHE_KEY_ARENA);
	t->cache_ids = malloc(CACHE_ID_ARENA * sizeof *t->cache_ids);
	if (!t->cache_tab || !t->cache_entries || !t->cache_keys || !t->cache_ids || ucd_build(t) != 0)
		return fail(err, errlen, "%s: out of memory", vpath);
	return 0;
}

/*
 * The files must be UTF-8, as Hugging Face reads them (Rust strings, or
 * Python's open(encoding="utf-8")). Then every token, added ones included,
 * is whole characters, which the encoder relies on: an added token holding
 * half a character would split one in the text, and the pre-tokenizer
 * would read the rest of it past the end of the stretch.
 */
static int check_utf8(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
	size_t ok = utf8_valid_prefix((const unsigned char *)buf, len);
	if (ok < len)
		return fail(err, errlen, "%s: not valid UTF-8 (at byte %zu)", path, ok);
	return 0;
}

static int load(gpt2_tokenizer **out, const char *json_path, const char *merges_path,
                char *err, size_t errlen)
{
	*out = NULL;
	load_state ls = {0};
	ls.vocab_path = json_path;
	ls.merges_path = merges_path;
	ls.use_regex = 1;
	ls.err = err;
	ls.errlen = errlen;

	char *json = NULL, *mtext = NULL;
	size_t json_len = 0, mlen = 0;
	cJSON *root = NULL;
	gpt2_tokenizer *t = NULL;
	int rc = -1;

	if (read_file(json_path, &json, &json_len, err, errlen) != 0 ||
	    check_utf8(json_path, json, json_len, err, errlen) != 0)
		goto done;
	const char *end = NULL;
	root = cJSON_ParseWithLengthOpts(json, json_len, &end, 0);
	if (!root) {
		size_t at = end && end >= json && end <= json + json_len ? (size_t)(end - json) : 0;
		fail(err, errlen, "%s: not valid JSON (error at byte %zu)", json_path, at);
		goto done;
	}
	if (merges_path) {
		if (load_vocab_object(&ls, root, "vocabulary") != 0)
			goto done;
		if (read_file(merges_path, &mtext, &mlen, err, errlen) != 0 ||
		    check_utf8(merges_path, mtext, mlen, err, errlen) != 0 ||
		    load_merges_txt(&ls, mtext, mlen) != 0)
			goto done;
		/* transformers registers <|endoftext|> as bos/eos/unk, which makes
		 * it a special added token (with the next free id when the
		 * vocabulary lacks it). */
		ls.added = calloc(1, sizeof *ls.added);
		if (!ls.added) {
			fail(err, errlen, "%s: out of memory", json_path);
			goto done;
		}
		ls.added[0].text = (char *)"<|endoftext|>";
		ls.added[0].len = 13;
		ls.added[0].special = 1;
		ls.n_added = 1;
	} else if (load_tokenizer_json(&ls, root) != 0) {
		goto done;
	}
	if (ls.n_vocab == 0) {
		fail(err, errlen, "%s: the vocabulary is empty", json_path);
		goto done;
	}
	t = calloc(1, sizeof *t);
	if (!t) {
		fail(err, errlen, "%s: out of memory", json_path);
		goto done;
	}
	if (build(t, &ls) != 0)
		goto done;
	*out = t;
	t = NULL;
	rc = 0;
done:
	gpt2_tokenizer_free(t);
	free(ls.vocab);
	free(ls.mergev);
	free(ls.added);
	cJSON_Delete(root);
	free(json);
	free(mtext);
	return rc;
}

int gpt2_tokenizer_load_files(gpt2_tokenizer **out, const char *json_path,
                              const char *merges_txt, char *err, size_t errlen)
{
	return load(out, json_path, merges_txt, err, errlen);
}

int gpt2_tokenizer_load(gpt2_tokenizer **out, const char *dir, char *err, size_t errlen)
{
	*out = NULL;
	size_t n = strlen(dir) + 32;
	char *a = malloc(n), *b = malloc(n);
	int rc = -1;
	if (!a || !b) {
		fail(err, errlen, "%s: out of memory", dir);
		goto done;
	}
	snprintf(a, n, "%s/tokenizer.json", dir);
	if (file_exists(a)) {
		rc = load(out, a, NULL, err, errlen);
		goto done;
	}
	snprintf(a, n, "%s/vocab.json", dir);
	snprintf(b, n, "%s/merges.txt", dir);
	if (file_exists(a) && file_exists(b)) {
		rc = load(out, a, b, err, errlen);
		goto done;
	}
	fail(err, errlen, "%s: no tokenizer.json, or vocab.json and merges.txt", dir);
done:
	free(a);
	free(b);
	return rc;
}

void gpt2_tokenizer_free(gpt2_tokenizer *t)
{
	if (!t)
		return;
	free(t->tok_off);
	free(t->tok_ok);
	free(t->tok_data);
	free(t->key_off);
	free(t->key_len);
	free(t->key_data);
	free(t->key_tab);
	free(t->merges);
	for (size_t i = 0; i < t->n_added; i++)
		free(t->added[i].text);
	free(t->added);
	free(t->ucd_blocks);
	free(t->cache_tab);
	free(t->cache_entries);
	free(t->cache_keys);
	free(t->cache_ids);
	free(t->syms);
	free(t->heap);
	free(t->ranks);
	free(t->tmp);
	free(t->seg);
	free(t);
}

int gpt2_tokenizer_vocab_size(const gpt2_tokenizer *t) { return t->n_ids; }

int gpt2_tokenizer_eot(const gpt2_tokenizer *t) { return t->eot; }

const char *gpt2_tokenizer_token_bytes(const gpt2_tokenizer *t, int32_t id, size_t *len)
{
	if (id < 0 || id >= t->n_ids || !t->tok_ok[id])
		return NULL;
	*len = t->tok_off[id + 1] - t->tok_off[id];
	return t->tok_data + t->tok_off[id];
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
	for (size_t i = 0; i < len; i++)
		if (t->byte_id[w[i]] >= 0)
			v[n++] = t->byte_id[w[i]];
	if (n > 1 && t->ignore_merges) {
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
	if (len == 1 && t->byte_id[w[0]] >= 0) {
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

/* Pre-tokenize and encode one stretch of text that holds no added token. */
static int encode_segment(gpt2_tokenizer *t, const unsigned char *s, size_t len, id_buf *out)
{
	if (!len)
		return 0;
	if (t->add_prefix_space && s[0] != ' ') {
		/* ByteLevel's add_prefix_space puts a space before each stretch. */
		if (len + 1 > t->seg_cap) {
			char *p = realloc(t->seg, len + 1);
			if (!p)
				return -1;
			t->seg = p;
			t->seg_cap = len + 1;
		}
		t->seg[0] = ' ';
		memcpy(t->seg + 1, s, len);
		s = (const unsigned char *)t->seg;
		len++;
	}
	if (!t->use_regex)
		return encode_word(t, s, len, out);
	size_t i = 0;
	while (i < len) {
		size_t j = next_piece(t, s, i, len);
		if (encode_word(t, s + i, j - i, out) != 0)
			return -1;
		i = j;
	}
	return 0;
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
                          int32_t **ids, size_t *n, size_t *n_replaced)
{
	*ids = NULL;
	*n = 0;
	char *clean = NULL;
	size_t clean_len = 0;
	size_t n_bad = gpt2_utf8_sanitize(text, len, &clean, &clean_len);
	if (n_bad == (size_t)-1)
		return -1;
	if (n_replaced)
		*n_replaced = n_bad;
	const unsigned char *s = (const unsigned char *)(clean ? clean : text);
	if (clean)
		len = clean_len;

	id_buf out = {0};
	/* English averages over 4 bytes a token; growth covers the rest. */
	if (ids_reserve(&out, len / 4 + 16) != 0)
		goto fail;
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
		if (encode_segment(t, s + seg, i - seg, &out) != 0 || ids_reserve(&out, 1) != 0)
			goto fail;
		out.v[out.n++] = a->id;
		i += a->len;
		seg = i;
	}
	if (encode_segment(t, s + seg, len - seg, &out) != 0)
		goto fail;
	free(clean);
	*ids = out.v;
	*n = out.n;
	return 0;
fail:
	free(clean);
	free(out.v);
	return -1;
}

int gpt2_tokenizer_decode(const gpt2_tokenizer *t, const int32_t *ids, size_t n,
                          char **out, size_t *out_len, size_t *bad_index)
{
	*out = NULL;
	*out_len = 0;
	size_t total = 0, len;
	for (size_t i = 0; i < n; i++) {
		if (!gpt2_tokenizer_token_bytes(t, ids[i], &len)) {
			if (bad_index)
				*bad_index = i;
			return -2;
		}
		total += len;
	}
	char *b = malloc(total + 1);
	if (!b)
		return -1;
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
