/*
 * check_tokenizer.c - unit tests for the GPT-2 tokenizer
 * (tools/gpt2/tokenizer.c).
 *
 * The references are Hugging Face tokenizers' ids (its Rust code through the
 * npm package `tokenizers`), made by testdata/tokenizer/gen_fixtures.js: a
 * corpus of files (English, code, whitespace, numbers, punctuation, scripts
 * and emoji, control characters, the special token, invalid UTF-8), 2000
 * random strings, 100 KB words (regenerated here with the script's
 * xorshift32 and compared through an FNV-1a digest of the ids) and small
 * tokenizers in other file layouts. Invalid UTF-8 in them was replaced by
 * Python's bytes.decode('utf-8', 'replace'), which also counted the
 * replacements. The streaming decoder and the error messages are checked
 * against hand-written expectations.
 *
 * It does not test gpt2run's --tokenize (tests/cli does).
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpt2/tokenizer.h"

#define TD ST_TESTDATA "/tokenizer"
#define GPT2_DIR ST_TESTDATA "/gpt2-tokenizer"

/* The GPT-2 tokenizer loaded both ways, once per tcase. */
static gpt2_tokenizer *tok_json, *tok_files;

static void load_gpt2(void)
{
	char err[512];
	if (gpt2_tokenizer_load(&tok_json, GPT2_DIR, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	if (gpt2_tokenizer_load_files(&tok_files, GPT2_DIR "/vocab.json", GPT2_DIR "/merges.txt",
	                              err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
}

static void free_gpt2(void)
{
	gpt2_tokenizer_free(tok_json);
	gpt2_tokenizer_free(tok_files);
	tok_json = tok_files = NULL;
}

/* ---- helpers ------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap + 1);
	ck_assert_ptr_nonnull(b);
	size_t got;
	while ((got = fread(b + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			b = realloc(b, cap + 1);
			ck_assert_ptr_nonnull(b);
		}
	}
	fclose(f);
	b[n] = 0;
	*len = n;
	return b;
}

static void spit(const char *path, const char *s)
{
	FILE *f = fopen(path, "wb");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	fputs(s, f);
	fclose(f);
}

/* Parse "1,2,3" (up to end or a tab/newline) into a malloc'd array. */
static int32_t *parse_ids(const char *s, size_t *n)
{
	size_t cap = 16;
	int32_t *v = malloc(cap * sizeof *v);
	ck_assert_ptr_nonnull(v);
	*n = 0;
	while (*s && *s != '\t' && *s != '\n') {
		char *end;
		long x = strtol(s, &end, 10);
		ck_assert_msg(end != s, "bad id list near '%.20s'", s);
		if (*n == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof *v);
			ck_assert_ptr_nonnull(v);
		}
		v[(*n)++] = (int32_t)x;
		s = *end == ',' ? end + 1 : end;
	}
	return v;
}

static unsigned hexval(char c)
{
	return c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10);
}

/* Compare ids with the reference; name says which case. */
static void expect_ids(const char *name, const int32_t *got, size_t n, const int32_t *want, size_t wn)
{
	size_t i = 0;
	while (i < n && i < wn && got[i] == want[i])
		i++;
	if (i == n && i == wn)
		return;
	ck_abort_msg("%s: ids differ at index %zu: got %d, expected %d (%zu ids, expected %zu)", name, i,
	             i < n ? got[i] : -1, i < wn ? want[i] : -1, n, wn);
}

/* Encode text and compare with the reference ids and replacement count. */
static void check_encode(gpt2_tokenizer *t, const char *name, const char *text, size_t len,
                         unsigned flags, const int32_t *want, size_t wn, size_t want_replaced)
{
	int32_t *ids;
	size_t n, replaced;
	ck_assert_int_eq(gpt2_tokenizer_encode(t, text, len, flags, &ids, &n, &replaced, NULL, 0), 0);
	ck_assert_ptr_nonnull(ids);
	expect_ids(name, ids, n, want, wn);
	ck_assert_msg(replaced == want_replaced, "%s: %zu replaced, expected %zu", name, replaced,
	              want_replaced);
	free(ids);
}

/* decode(ids) must be the input with invalid UTF-8 replaced. */
static void check_round_trip(const gpt2_tokenizer *t, const char *name, const char *text,
                             size_t len, const int32_t *ids, size_t n)
{
	char *clean, *back;
	size_t clean_len, back_len, bad;
	size_t r = gpt2_utf8_sanitize(text, len, &clean, &clean_len);
	ck_assert(r != (size_t)-1);
	if (!clean) {
		clean_len = len;
	}
	ck_assert_int_eq(gpt2_tokenizer_decode(t, ids, n, &back, &back_len, &bad, NULL, 0), 0);
	ck_assert_msg(back_len == clean_len && memcmp(back, clean ? clean : text, clean_len) == 0,
	              "%s: decode(encode(s)) != s", name);
	free(back);
	free(clean);
}

/* ---- core ------------------------------------------------------------------ */

START_TEST(test_core_sizes)
{
	ck_assert_int_eq(gpt2_tokenizer_vocab_size(tok_json), 50257);
	ck_assert_int_eq(gpt2_tokenizer_eot(tok_json), 50256);
	ck_assert_int_eq(gpt2_tokenizer_vocab_size(tok_files), 50257);
	ck_assert_int_eq(gpt2_tokenizer_eot(tok_files), 50256);
}
END_TEST

START_TEST(test_core_hello)
{
	static const int32_t want[] = {15496, 995, 50256, 340, 338};
	static const int32_t plain[] = {27, 91, 437, 1659, 5239, 91, 29};
	const char *s = "Hello world<|endoftext|> it's";
	check_encode(tok_json, "hello", s, strlen(s), 0, want, 5, 0);
	check_encode(tok_files, "hello", s, strlen(s), 0, want, 5, 0);
	/* The README's example of plain GPT-2. */
	check_encode(tok_json, "plain", "<|endoftext|>", 13, GPT2_ENCODE_NO_SPECIAL, plain, 7, 0);
}
END_TEST

START_TEST(test_core_empty)
{
	int32_t *ids;
	size_t n = 99, r = 99;
	ck_assert_int_eq(gpt2_tokenizer_encode(tok_json, "", 0, 0, &ids, &n, &r, NULL, 0), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(r, 0);
	free(ids);
	/* n_replaced may be NULL. */
	ck_assert_int_eq(gpt2_tokenizer_encode(tok_json, "\xff", 1, 0, &ids, &n, NULL, NULL, 0), 0);
	ck_assert_uint_eq(n, 1);
	free(ids);
}
END_TEST

START_TEST(test_core_token_bytes)
{
	size_t len;
	const char *p = gpt2_tokenizer_token_bytes(tok_json, 262, &len);
	ck_assert(p && len == 4 && memcmp(p, " the", 4) == 0);
	p = gpt2_tokenizer_token_bytes(tok_json, 198, &len);
	ck_assert(p && len == 1 && p[0] == '\n');
	p = gpt2_tokenizer_token_bytes(tok_json, 50256, &len);
	ck_assert(p && len == 13 && memcmp(p, "<|endoftext|>", 13) == 0);
	/* Every byte is some token: byte b's token has one byte, b. */
	for (int b = 0; b < 256; b++) {
		char c = (char)b;
		int32_t *ids;
		size_t n;
		ck_assert_int_eq(gpt2_tokenizer_encode(tok_json, &c, 1, 0, &ids, &n, NULL, NULL, 0), 0);
		if (b < 0x80) {
			ck_assert_uint_eq(n, 1);
			p = gpt2_tokenizer_token_bytes(tok_json, ids[0], &len);
			ck_assert(p && len == 1 && (unsigned char)p[0] == b);
		}
		free(ids);
	}
	ck_assert_ptr_null(gpt2_tokenizer_token_bytes(tok_json, -1, &len));
	ck_assert_ptr_null(gpt2_tokenizer_token_bytes(tok_json, 50257, &len));
	ck_assert_ptr_null(gpt2_tokenizer_token_bytes(tok_json, INT32_MAX, &len));
}
END_TEST

START_TEST(test_core_decode_invalid_id)
{
	int32_t ids[] = {15496, 995, 50257, 1};
	char *out = (char *)1;
	size_t len, bad = 0;
	char err[256] = "";
	ck_assert_int_eq(gpt2_tokenizer_decode(tok_json, ids, 4, &out, &len, &bad, err,
	                                       sizeof err), -1);
	ck_assert_uint_eq(bad, 2);
	ck_assert_str_eq(err, "token id 50257 (at 2) is not in the vocabulary");
	ck_assert_ptr_null(out);
	ck_assert_int_eq(gpt2_tokenizer_decode(tok_json, ids, 2, &out, &len, &bad, NULL, 0), 0);
	ck_assert_str_eq(out, "Hello world");
	free(out);
}
END_TEST

/* Python: b'...'.decode('utf-8', 'replace') (counted with an error handler). */
START_TEST(test_core_sanitize)
{
	static const struct {
		const char *in, *out;
		size_t n;
	} cases[] = {
		{"abc", NULL, 0},
		{"a\xff" "b", "a\xEF\xBF\xBD" "b", 1},
		{"\x80\xbf", "\xEF\xBF\xBD\xEF\xBF\xBD", 2},
		{"\xc0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD", 2},
		{"\xe0\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 3},
		{"\xed\xa0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 3},
		{"\xf4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 4},
		{"\xf0\x9f\x98", "\xEF\xBF\xBD", 1},
		{"\xf0\x9f\x98" "x", "\xEF\xBF\xBD" "x", 1},
		{"\xe2\x82" "\xe2\x82\xac", "\xEF\xBF\xBD\xE2\x82\xAC", 1},
		{"\xf0\x9f\x98\x80", NULL, 0},
		{"\xed\x9f\xbf", NULL, 0},
		{"\xf8\x88\x80\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", 5},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out;
		size_t len;
		size_t n = gpt2_utf8_sanitize(cases[i].in, strlen(cases[i].in), &out, &len);
		ck_assert_msg(n == cases[i].n, "case %zu: %zu replaced, expected %zu", i, n, cases[i].n);
		if (!cases[i].out) {
			ck_assert_ptr_null(out);
		} else {
			ck_assert_msg(len == strlen(cases[i].out) && memcmp(out, cases[i].out, len) == 0,
			              "case %zu: wrong replacement", i);
		}
		free(out);
	}
}
END_TEST

/* ---- Hugging Face references ---------------------------------------------------- */

static const char *const corpus_names[] = {"english.txt", "code.txt", "whitespace.txt",
                                           "numbers.txt", "punct.txt", "unicode.txt",
                                           "control.txt", "special.txt", "invalid.bin"};
#define N_CORPUS (sizeof corpus_names / sizeof corpus_names[0])

START_TEST(test_ref_corpus)
{
	const char *name = corpus_names[_i];
	char path[512];
	size_t len, ilen;
	snprintf(path, sizeof path, TD "/corpus/%s", name);
	char *text = slurp(path, &len);
	snprintf(path, sizeof path, TD "/corpus/%.*s.ids", (int)(strrchr(name, '.') - name), name);
	char *ref = slurp(path, &ilen);

	size_t replaced = 0, wn, pn;
	ck_assert_int_eq(sscanf(ref, "replaced %zu", &replaced), 1);
	char *line = strstr(ref, "\nids ");
	ck_assert_ptr_nonnull(line);
	int32_t *want = parse_ids(line + 5, &wn);
	line = strstr(ref, "\nnospecial ");
	int32_t *plain = line ? parse_ids(line + 11, &pn) : want;
	if (!line)
		pn = wn;

	gpt2_tokenizer *both[] = {tok_json, tok_files};
	for (int k = 0; k < 2; k++) {
		check_encode(both[k], name, text, len, 0, want, wn, replaced);
		check_encode(both[k], name, text, len, GPT2_ENCODE_NO_SPECIAL, plain, pn, replaced);
	}
	check_round_trip(tok_json, name, text, len, want, wn);
	check_round_trip(tok_json, name, text, len, plain, pn);
	if (plain != want)
		free(plain);
	free(want);
	free(ref);
	free(text);
}
END_TEST

/* A cases file: "hex<TAB>replaced<TAB>ids<TAB>nospecial-ids or =". */
static void run_cases(gpt2_tokenizer *t, const char *path, int round_trip)
{
	size_t len;
	char *all = slurp(path, &len);
	size_t n_cases = 0;
	char *p = all;
	while (*p) {
		char *tab = strchr(p, '\t');
		ck_assert_ptr_nonnull(tab);
		size_t hl = (size_t)(tab - p);
		char *text = malloc(hl / 2 + 1);
		ck_assert_ptr_nonnull(text);
		for (size_t i = 0; i < hl / 2; i++)
			text[i] = (char)(hexval(p[2 * i]) << 4 | hexval(p[2 * i + 1]));
		char *q;
		size_t replaced = strtoul(tab + 1, &q, 10), wn, pn;
		ck_assert(*q == '\t');
		int32_t *want = parse_ids(q + 1, &wn);
		q = strchr(q + 1, '\t');
		ck_assert_ptr_nonnull(q);
		int32_t *plain = want;
		pn = wn;
		if (q[1] != '=')
			plain = parse_ids(q + 1, &pn);
		char name[800];
		snprintf(name, sizeof name, "%.500s: case %zu (%.*s)", path, n_cases, (int)(hl < 80 ? hl : 80), p);
		check_encode(t, name, text, hl / 2, 0, want, wn, replaced);
		check_encode(t, name, text, hl / 2, GPT2_ENCODE_NO_SPECIAL, plain, pn, replaced);
		if (round_trip)
			check_round_trip(t, name, text, hl / 2, want, wn);
		if (plain != want)
			free(plain);
		free(want);
		free(text);
		n_cases++;
		p = strchr(q, '\n');
		ck_assert_ptr_nonnull(p);
		p++;
	}
	ck_assert_uint_gt(n_cases, 0);
	free(all);
}

START_TEST(test_ref_fuzz)
{
	run_cases(tok_json, TD "/fuzz.txt", 1);
}
END_TEST

START_TEST(test_ref_fuzz_files)
{
	run_cases(tok_files, TD "/fuzz.txt", 1);
}
END_TEST

/* The script's xorshift32 words (gen_fixtures.js longWord). */
static char *long_word(const char *kind, size_t n, uint32_t seed)
{
	static const char punct[] = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~";
	static const char ws[] = " \t\n";
	uint32_t x = seed;
#define NEXT() (x ^= x << 13, x ^= x >> 17, x ^= x << 5, x)
	char *b = malloc(n);
	ck_assert_ptr_nonnull(b);
	if (strcmp(kind, "cjk") == 0) {
		for (size_t i = 0; i + 3 <= n; i += 3) {
			unsigned cp = 0x4E00 + NEXT() % 20000;
			b[i] = (char)(0xE0 | (cp >> 12));
			b[i + 1] = (char)(0x80 | ((cp >> 6) & 0x3F));
			b[i + 2] = (char)(0x80 | (cp & 0x3F));
		}
		return b;
	}
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(kind, "a"))
			b[i] = 'a';
		else if (!strcmp(kind, "ab"))
			b[i] = i % 2 ? 'b' : 'a';
		else if (!strcmp(kind, "letters"))
			b[i] = (char)('a' + NEXT() % 26);
		else if (!strcmp(kind, "digits"))
			b[i] = (char)('0' + NEXT() % 10);
		else if (!strcmp(kind, "punct"))
			b[i] = punct[NEXT() % (sizeof punct - 1)];
		else if (!strcmp(kind, "spaces"))
			b[i] = i == n - 1 ? 'x' : ws[NEXT() % 3];
		else if (!strcmp(kind, "nul"))
			b[i] = 0;
		else
			ck_abort_msg("unknown kind %s", kind);
	}
#undef NEXT
	return b;
}

static uint64_t fnv1a64(const int32_t *ids, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 4; k++) {
			h ^= ((uint32_t)ids[i] >> (8 * k)) & 255;
			h *= 0x100000001b3ull;
		}
	return h;
}

START_TEST(test_ref_long_words)
{
	size_t len;
	char *all = slurp(TD "/long.txt", &len);
	char kind[32];
	size_t n, n_ids;
	unsigned seed;
	char hash[17];
	int off = 0, used, cases = 0;
	while (sscanf(all + off, "%31s %zu %u %zu %16s%n", kind, &n, &seed, &n_ids, hash, &used) == 5) {
		off += used;
		char *w = long_word(kind, n, seed);
		int32_t *ids;
		size_t got;
		ck_assert_int_eq(gpt2_tokenizer_encode(tok_json, w, n, 0, &ids, &got, NULL, NULL, 0), 0);
		char mine[17];
		snprintf(mine, sizeof mine, "%016" PRIx64, fnv1a64(ids, got));
		ck_assert_msg(got == n_ids && strcmp(mine, hash) == 0,
		              "long %s: %zu ids (digest %s), expected %zu (digest %s)", kind, got, mine,
		              n_ids, hash);
		check_round_trip(tok_json, kind, w, n, ids, got);
		free(ids);
		free(w);
		cases++;
	}
	ck_assert_int_eq(cases, 8);
	free(all);
}
END_TEST

static const char *const variant_names[] = {"pairs", "prefix", "noregex", "ignore", "files"};

START_TEST(test_ref_variants)
{
	const char *name = variant_names[_i];
	char dir[512], path[600], err[512];
	snprintf(dir, sizeof dir, TD "/variants/%s", name);
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_load(&t, dir, err, sizeof err) == 0, "%s", err);
	snprintf(path, sizeof path, "%s/cases.txt", dir);
	/* add_prefix_space adds a space that decoding keeps. */
	run_cases(t, path, strcmp(name, "prefix") != 0);
	if (strcmp(name, "pairs") == 0) {
		/* Ids: 256 bytes, 400 merges (256..655), <|endoftext|> 656; the
		 * file says 657 and 659 for <|im_start|> and <|im|>, but Hugging
		 * Face numbers added tokens itself: 657 and 658. */
		size_t len;
		ck_assert_int_eq(gpt2_tokenizer_vocab_size(t), 659);
		ck_assert_int_eq(gpt2_tokenizer_eot(t), 656);
		const char *p = gpt2_tokenizer_token_bytes(t, 658, &len);
		ck_assert(p && len == 6 && memcmp(p, "<|im|>", 6) == 0);
		ck_assert_ptr_null(gpt2_tokenizer_token_bytes(t, 659, &len));
	}
	gpt2_tokenizer_free(t);
}
END_TEST

/* ---- limits ------------------------------------------------------------------- */

/* 1 MB words: a quadratic step would take hours, linear ones take well
 * under a second (several under sanitizers). */
START_TEST(test_limits_huge_words)
{
	static const char *const kinds[] = {"letters", "spaces", "nul", "punct", "ab"};
	size_t n = 1 << 20;
	for (size_t k = 0; k < 5; k++) {
		char *w = long_word(kinds[k], n, 5);
		int32_t *ids;
		size_t got;
		ck_assert_int_eq(gpt2_tokenizer_encode(tok_json, w, n, 0, &ids, &got, NULL, NULL, 0), 0);
		check_round_trip(tok_json, kinds[k], w, n, ids, got);
		free(ids);
		free(w);
	}
	/* Invalid bytes only: every byte becomes U+FFFD. */
	char *w = malloc(n);
	ck_assert_ptr_nonnull(w);
	memset(w, 0xff, n);
	int32_t *ids;
	size_t got, replaced;
	ck_assert_int_eq(gpt2_tokenizer_encode(tok_json, w, n, 0, &ids, &got, &replaced, NULL, 0), 0);
	ck_assert_uint_eq(replaced, n);
	free(ids);
	free(w);
}
END_TEST

/* Many distinct words fill the cache and make it start over; results must
 * not change. */
START_TEST(test_limits_cache_overflow)
{
	size_t len, ilen, wn;
	char *text = slurp(TD "/corpus/english.txt", &len);
	char *ref = slurp(TD "/corpus/english.ids", &ilen);
	int32_t *want = parse_ids(strstr(ref, "\nids ") + 5, &wn);
	size_t cap = 200000 * 12;
	char *words = malloc(cap);
	ck_assert_ptr_nonnull(words);
	size_t o = 0;
	for (unsigned i = 0; i < 200000; i++)
		o += (size_t)snprintf(words + o, cap - o, " w%xq", i * 2654435761u);
	for (int round = 0; round < 3; round++) {
		int32_t *ids;
		size_t n;
		ck_assert_int_eq(gpt2_tokenizer_encode(tok_json, words, o, 0, &ids, &n, NULL, NULL, 0), 0);
		free(ids);
		check_encode(tok_json, "english after cache overflow", text, len, 0, want, wn, 0);
	}
	free(words);
	free(want);
	free(ref);
	free(text);
}
END_TEST

/* ---- the streaming decoder -------------------------------------------------------- */

START_TEST(test_decoder_split_char)
{
	gpt2_decoder d = {0};
	char out[16];
	/* U+1F600 in three pushes: nothing comes out until it is whole. */
	ck_assert_uint_eq(gpt2_decoder_push(&d, "a\xF0\x9F", 3, out), 1);
	ck_assert_int_eq(out[0], 'a');
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\x98", 1, out), 0);
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\x80" "b", 2, out), 5);
	ck_assert(memcmp(out, "\xF0\x9F\x98\x80" "b", 5) == 0);
	ck_assert_uint_eq(gpt2_decoder_flush(&d, out), 0);
	/* An incomplete character at the end comes out of flush. */
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\xE2\x82", 2, out), 0);
	ck_assert_uint_eq(gpt2_decoder_flush(&d, out), 2);
	ck_assert(memcmp(out, "\xE2\x82", 2) == 0);
	ck_assert_uint_eq(d.n_pending, 0);
}
END_TEST

START_TEST(test_decoder_invalid_passes)
{
	gpt2_decoder d = {0};
	char out[16];
	/* A lead byte followed by ASCII can never complete: out it goes. */
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\xE2", 1, out), 0);
	ck_assert_uint_eq(gpt2_decoder_push(&d, "x", 1, out), 2);
	ck_assert(memcmp(out, "\xE2x", 2) == 0);
	/* Lone continuation bytes, bytes that are never valid, and a
	 * surrogate's start (ED A0) are not held. */
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\x80\xBF", 2, out), 2);
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\xFF", 1, out), 1);
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\xC0", 1, out), 1);
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\xED\xA0", 2, out), 2);
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\xF0\x80", 2, out), 2);
	/* But ED 9F may still become U+D7FF. */
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\xED\x9F", 2, out), 0);
	ck_assert_uint_eq(gpt2_decoder_push(&d, "\xBF", 1, out), 3);
}
END_TEST

/* Decoding a corpus token by token gives the text back, and no output
 * ever ends inside a character. */
START_TEST(test_decoder_stream_corpus)
{
	size_t len, ilen, wn;
	char *text = slurp(TD "/corpus/unicode.txt", &len);
	char *ref = slurp(TD "/corpus/unicode.ids", &ilen);
	int32_t *ids = parse_ids(strstr(ref, "\nids ") + 5, &wn);
	char *all = malloc(len + 4);
	ck_assert_ptr_nonnull(all);
	size_t o = 0;
	gpt2_decoder d = {0};
	for (size_t i = 0; i < wn; i++) {
		size_t tl;
		const char *tb = gpt2_tokenizer_token_bytes(tok_json, ids[i], &tl);
		ck_assert_ptr_nonnull(tb);
		char out[64];
		ck_assert_uint_le(tl + 4, sizeof out);
		size_t k = gpt2_decoder_push(&d, tb, tl, out);
		char *clean;
		size_t cl;
		ck_assert_uint_eq(gpt2_utf8_sanitize(out, k, &clean, &cl), 0);
		ck_assert_uint_le(o + k, len);
		memcpy(all + o, out, k);
		o += k;
	}
	o += gpt2_decoder_flush(&d, all + o);
	ck_assert(o == len && memcmp(all, text, len) == 0);
	free(all);
	free(ids);
	free(ref);
	free(text);
}
END_TEST

/* Random bytes in random pieces: the output is the input, byte for byte. */
START_TEST(test_decoder_random)
{
	uint32_t x = 12345;
	for (int round = 0; round < 2000; round++) {
		unsigned char in[64];
		char out[64 + 4 * 64], piece[8];
		size_t n = 1 + (x ^= x << 13, x ^= x >> 17, x ^= x << 5) % 64, o = 0;
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			/* Mostly UTF-8-ish bytes, so that characters do form. */
			static const unsigned char pool[] = {'a', 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0,
			                                     0x9F, 0x98, 0x80, 0xED, 0xFF, 0xBF};
			in[i] = pool[x % sizeof pool];
		}
		gpt2_decoder d = {0};
		for (size_t i = 0; i < n;) {
			size_t k = 1 + (x ^= x << 13, x ^= x >> 17, x ^= x << 5) % 4;
			if (k > n - i)
				k = n - i;
			memcpy(piece, in + i, k);
			o += gpt2_decoder_push(&d, piece, k, out + o);
			ck_assert_uint_le(d.n_pending, 3);
			i += k;
		}
		o += gpt2_decoder_flush(&d, out + o);
		ck_assert(o == n && memcmp(out, in, n) == 0);
	}
}
END_TEST

/* ---- errors ----------------------------------------------------------------------- */

static char tmpdir[64];

static void tmp_setup(void)
{
	strcpy(tmpdir, "/tmp/check_tokenizer.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Load tmpdir with one file written; expect failure with a message holding
 * each of the given fragments. */
static void expect_load_error(const char *file, const char *content, const char *frag1,
                              const char *frag2)
{
	char path[256], err[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, file);
	spit(path, content);
	gpt2_tokenizer *t = (gpt2_tokenizer *)1;
	ck_assert_int_eq(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err), -1);
	ck_assert_ptr_null(t);
	ck_assert_msg(strstr(err, frag1) && (!frag2 || strstr(err, frag2)),
	              "message '%s' lacks '%s' / '%s'", err, frag1, frag2 ? frag2 : "");
	ck_assert_ptr_null(strchr(err, '\n'));
	unlink(path);
}

#define MINI_MODEL "\"model\": {\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}"

START_TEST(test_errors_missing)
{
	char err[512];
	gpt2_tokenizer *t;
	ck_assert_int_eq(gpt2_tokenizer_load(&t, "/nonexistent/dir", err, sizeof err), -1);
	ck_assert_str_eq(err, "/nonexistent/dir: no tokenizer.json, or vocab.json and merges.txt");
	/* A vocab.json without merges.txt is not enough. */
	expect_load_error("vocab.json", "{}", "no tokenizer.json", NULL);
	/* An errlen of 0 writes nothing. */
	ck_assert_int_eq(gpt2_tokenizer_load(&t, "/nonexistent/dir", NULL, 0), -1);
}
END_TEST

START_TEST(test_errors_json)
{
	/* Syntax error at byte 11. */
	expect_load_error("tokenizer.json", "{\"model\": {,}}", "tokenizer.json: not valid JSON (error at byte 1", NULL);
	expect_load_error("tokenizer.json", "[]", "tokenizer.json: not a JSON object", NULL);
	expect_load_error("tokenizer.json", "{}", "tokenizer.json: model is missing", NULL);
	/* A merge of tokens the vocabulary lacks. */
	expect_load_error("tokenizer.json",
	                  "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a c\"]}}",
	                  "model.merges[0]: token 'c' is not in the vocabulary", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [[\"a\", \"b\"]]}}",
	                  "merged token 'ab' is not in the vocabulary", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a  b\"]}}",
	                  "model.merges[0]: 'a  b' is not two tokens", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [[\"a\"]]}}",
	                  "model.merges[0]: expected a string", NULL);
	/* Ids: negative, fractional, huge, repeated. */
	expect_load_error("tokenizer.json", "{\"model\": {\"vocab\": {\"a\": -1}}}",
	                  "token 'a' has id out of range", NULL);
	expect_load_error("tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 1.5}}}",
	                  "token 'a' has id out of range", NULL);
	expect_load_error("tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 1e12}}}",
	                  "token 'a' has id out of range", NULL);
	expect_load_error("tokenizer.json", "{\"model\": {\"vocab\": {\"a\": \"1\"}}}",
	                  "token 'a' has id not a number", NULL);
	expect_load_error("tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 3, \"b\": 3}}}",
	                  "tokens 'a' and 'b' both have id 3", NULL);
	expect_load_error("tokenizer.json", "{\"model\": {\"vocab\": {}}}", "the vocabulary is empty", NULL);
	/* What this tokenizer does not do. */
	expect_load_error("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}",
	                  "model: type 'WordPiece' is not supported (expected BPE)", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"normalizer\": {\"type\": \"Lowercase\"}, " MINI_MODEL "}",
	                  "normalizer: type 'Lowercase' is not supported", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, " MINI_MODEL "}",
	                  "pre_tokenizer: type 'Whitespace' is not supported", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"added_tokens\": [{\"id\": 3, \"content\": \"<x>\", \"lstrip\": true}], " MINI_MODEL "}",
	                  "added_tokens[0] '<x>': lstrip is not supported", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"added_tokens\": [{\"id\": 3}], " MINI_MODEL "}",
	                  "added_tokens[0]: content is missing", NULL);
}
END_TEST

START_TEST(test_errors_merges_txt)
{
	char path[256];
	snprintf(path, sizeof path, "%s/vocab.json", tmpdir);
	spit(path, "{\"a\": 0, \"b\": 1, \"ab\": 2}");
	expect_load_error("merges.txt", "#version: 0.2\na b c\n", "merges.txt: line 2: expected two tokens", NULL);
	expect_load_error("merges.txt", "#version: 0.2\n\na x\n", "merges.txt: line 3: token 'x' is not in", NULL);
	expect_load_error("merges.txt", "b a\n", "merges.txt: line 1: merged token 'ba'", NULL);
	expect_load_error("merges.txt", "a\xc4\x80 b\n", "merges.txt: line 1: token", NULL);
	/* And a good one loads, with the merge applied. */
	snprintf(path, sizeof path, "%s/merges.txt", tmpdir);
	spit(path, "#version: 0.2\r\na b\r\n\r\n");
	char err[512];
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err) == 0, "%s", err);
	int32_t *ids;
	size_t n;
	/* "c" is not in this vocabulary: dropped, and the bytes around it
	 * still merge, as Hugging Face does (npm tokenizers 0.23.2 gives 2, 2). */
	ck_assert_int_eq(gpt2_tokenizer_encode(t, "abcab", 5, 0, &ids, &n, NULL, NULL, 0), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ids[0], 2);
	ck_assert_int_eq(ids[1], 2);
	free(ids);
	/* transformers adds <|endoftext|> when the vocabulary lacks it. */
	ck_assert_int_eq(gpt2_tokenizer_eot(t), 3);
	ck_assert_int_eq(gpt2_tokenizer_vocab_size(t), 4);
	gpt2_tokenizer_free(t);
	unlink(path);
	snprintf(path, sizeof path, "%s/vocab.json", tmpdir);
	unlink(path);
}
END_TEST

/* Added token ids as Hugging Face gives them (checked with npm tokenizers
 * 0.23.2): "<x>" (file id 0) gets 3, the model's size in entries; "b" is
 * the model's 5; "<y>" gets 4. Ids 1, 2 and 6 are holes. */
START_TEST(test_errors_added_ids)
{
	char path[256], err[512];
	snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
	spit(path, "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 5, \"ab\": 7}, \"merges\": [\"a b\"]},"
	           " \"added_tokens\": [{\"id\": 0, \"content\": \"<x>\", \"special\": true},"
	           " {\"id\": 99, \"content\": \"b\", \"special\": true},"
	           " {\"id\": 3, \"content\": \"<y>\", \"special\": false},"
	           " {\"id\": 3, \"content\": \"\", \"special\": false}]}");
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err) == 0, "%s", err);
	static const int32_t want[] = {0, 3, 5, 4, 0, 5};
	check_encode(t, "added ids", "a<x>b<y>ab", 10, 0, want, 6, 0);
	/* Without special tokens "<x>" and "b" are text again ("<", "x" and
	 * ">" are not in this vocabulary, so they are dropped); "<y>" is not
	 * special and still splits. */
	static const int32_t plain[] = {0, 5, 4, 7};
	check_encode(t, "added ids, no special", "a<x>b<y>ab", 10, GPT2_ENCODE_NO_SPECIAL, plain, 4, 0);
	ck_assert_int_eq(gpt2_tokenizer_vocab_size(t), 8);
	ck_assert_int_eq(gpt2_tokenizer_eot(t), -1);
	size_t len;
	for (int32_t id = 0; id < 9; id++) {
		const char *p = gpt2_tokenizer_token_bytes(t, id, &len);
		int hole = id == 1 || id == 2 || id == 6 || id == 8;
		ck_assert_msg(hole ? p == NULL : p != NULL, "id %d", id);
	}
	ck_assert(memcmp(gpt2_tokenizer_token_bytes(t, 4, &len), "<y>", 3) == 0 && len == 3);
	gpt2_tokenizer_free(t);
	unlink(path);
}
END_TEST

/* add_prefix_space and ignore_merges together: " ab" is a token, so it
 * is taken whole; " abab" is not, so it is merged (npm tokenizers 0.23.2
 * gives 4, 4, 4, 2). */
START_TEST(test_errors_prefix_and_ignore)
{
	char path[256], err[512];
	snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
	spit(path, "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true},"
	           " \"model\": {\"ignore_merges\": true, \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2,"
	           " \"\u0120\": 3, \"\u0120ab\": 4}, \"merges\": [\"a b\", \"\u0120 ab\"]}}");
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err) == 0, "%s", err);
	static const int32_t want[] = {4, 4, 4, 2};
	check_encode(t, "prefix and ignore", "ab ab abab", 10, 0, want, 4, 0);
	gpt2_tokenizer_free(t);
	unlink(path);
}
END_TEST

/* Unknown keys anywhere are ignored. */
START_TEST(test_errors_unknown_keys)
{
	char path[256], err[512];
	snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
	spit(path, "{\"future\": {\"x\": [1, {}]}, \"model\": {\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
	           " \"merges\": [[\"a\", \"b\"]], \"new_option\": {\"y\": null}},"
	           " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"other\": 1}}");
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(gpt2_tokenizer_vocab_size(t), 3);
	gpt2_tokenizer_free(t);
	unlink(path);
}
END_TEST

/* ---- hostile files ---------------------------------------------------------------- */

/*
 * The files must be UTF-8. An added token of half a character ("\xc3")
 * split the text's "\xc3\xa9" in two, and the pre-tokenizer then read the
 * rest of the character past the end of the text (found by fuzzing).
 */
START_TEST(test_hostile_invalid_utf8)
{
	expect_load_error("tokenizer.json",
	                  "{\"added_tokens\": [{\"id\": 3, \"content\": \"\xc3\"}], " MINI_MODEL "}",
	                  "tokenizer.json: not valid UTF-8 (at byte 40)", NULL);
	expect_load_error("tokenizer.json", "{\"model\": {\"vocab\": {\"a\xff\": 0}}}",
	                  "tokenizer.json: not valid UTF-8 (at byte 23)", NULL);
	char path[256];
	snprintf(path, sizeof path, "%s/merges.txt", tmpdir);
	spit(path, "a b\n");
	expect_load_error("vocab.json", "{\"a\": 0, \"b\": 1, \"ab\": 2, \"\xed\xa0\x80\": 3}",
	                  "vocab.json: not valid UTF-8 (at byte 27)", NULL);
	snprintf(path, sizeof path, "%s/vocab.json", tmpdir);
	spit(path, "{\"a\": 0, \"b\": 1, \"ab\": 2}");
	expect_load_error("merges.txt", "#version: 0.2\na b\xe2\x82\n", "merges.txt: not valid UTF-8 (at byte 17)",
	                  NULL);
	unlink(path);
	/* Whole characters are fine, and an added token of two bytes
	 * matches them. */
	snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
	spit(path, "{\"added_tokens\": [{\"id\": 3, \"content\": \"\xc3\xa9\"}], " MINI_MODEL "}");
	char err[512];
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err) == 0, "%s", err);
	static const int32_t want[] = {2, 3, 0};
	check_encode(t, "added character", "ab\xc3\xa9" "a", 5, 0, want, 3, 0);
	gpt2_tokenizer_free(t);
	unlink(path);
}
END_TEST

/* Token text in a message is one line: control characters escaped, long
 * text cut (found by fuzzing: a newline in a token broke the line). */
START_TEST(test_hostile_one_line_messages)
{
	expect_load_error("tokenizer.json", "{\"model\": {\"vocab\": {\"a\\nb\": 3, \"b\\r\": 3}}}",
	                  "tokens 'a\\x0ab' and 'b\\x0d' both have id 3", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a\\nb\"]}}",
	                  "model.merges[0]: 'a\\x0ab' is not two tokens", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a\\n b\"]}}",
	                  "model.merges[0]: token 'a\\x0a' is not in the vocabulary", NULL);
	expect_load_error("tokenizer.json",
	                  "{\"model\": {\"vocab\": {\"a\": 0}, \"type\": \"x\\ny\"}}",
	                  "model: type 'x\\x0ay' is not supported", NULL);
	/* 1000 letters: 64 are shown. */
	char json[1200], path[256], err[512];
	int n = snprintf(json, sizeof json, "{\"model\": {\"vocab\": {\"");
	memset(json + n, 'x', 1000);
	snprintf(json + n + 1000, sizeof json - (size_t)n - 1000, "\": -1}}}");
	snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
	spit(path, json);
	gpt2_tokenizer *t;
	ck_assert_int_eq(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err), -1);
	char want[100];
	memset(want, 'x', 64);
	strcpy(want + 64, "...' has id out of range");
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	unlink(path);
}
END_TEST

/*
 * 200000 added tokens beginning with 'a', and 5 MB of "aa": trying every
 * added token at every byte made 5e11 comparisons (about 10 minutes, found
 * by hand); a binary search per byte matched makes this take a second.
 */
START_TEST(test_hostile_many_added_tokens)
{
	size_t n_added = 200000, cap = n_added * 40 + 256, o = 0;
	char *json = malloc(cap);
	ck_assert_ptr_nonnull(json);
	o += (size_t)snprintf(json, cap, "{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}, "
	                      "\"added_tokens\": [{\"id\": 1, \"content\": \"aa\"}");
	for (size_t i = 0; i < n_added; i++)
		o += (size_t)snprintf(json + o, cap - o, ", {\"id\": %zu, \"content\": \"a%06zu\"}", i + 2, i);
	snprintf(json + o, cap - o, "]}");
	char path[256], err[512];
	snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
	spit(path, json);
	free(json);
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err) == 0, "%s", err);
	size_t len = ((size_t)5 << 20) + 1;
	char *text = malloc(len);
	ck_assert_ptr_nonnull(text);
	memset(text, 'a', len);
	/* A long token at the end: the longest match still wins. */
	memcpy(text + len - 7, "a123456", 7);
	int32_t *ids;
	size_t got;
	ck_assert_int_eq(gpt2_tokenizer_encode(t, text, len, 0, &ids, &got, NULL, NULL, 0), 0);
	ck_assert_uint_eq(got, (len - 7) / 2 + 1);
	for (size_t i = 0; i + 1 < got; i++)
		ck_assert_int_eq(ids[i], 1);
	ck_assert_int_eq(ids[got - 1], 123458);
	free(ids);
	free(text);
	gpt2_tokenizer_free(t);
	unlink(path);
}
END_TEST

/* The inverse of an odd number modulo 2^64 (Newton's iteration). */
static uint64_t inverse_odd(uint64_t a)
{
	uint64_t x = a;
	for (int i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

/*
 * 300000 vocabulary keys made to share the low 20 bits of the tokenizer's
 * hash as it was before it had a seed (that function inverted, step by
 * step): loading 100000 of them took 16 s, these would take minutes (found
 * by hand). With a random seed they are ordinary keys.
 */
START_TEST(test_hostile_hash_flood)
{
	const uint64_t A = 0xff51afd7ed558ccdull, C = 0xd6e8feb86659fd93ull;
	const uint64_t ai = inverse_odd(A), ci = inverse_odd(C);
	/* The state after the first word, "abcdefgh", of a 16-byte key. */
	uint64_t h = 0x9E3779B97F4A7C15ull ^ 16, w1;
	memcpy(&w1, "abcdefgh", 8);
	h = (h ^ w1) * A;
	h ^= h >> 29;
	size_t n_keys = 300000, cap = n_keys * 80 + 16, o = 0;
	char *json = malloc(cap);
	ck_assert_ptr_nonnull(json);
	json[o++] = '{';
	uint64_t x = 88172645463325252ull;
	for (size_t k = 0; k < n_keys;) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* A final hash with its low 20 bits zero, undone: mix64, then
		 * h ^= h >> 29, then the multiplication, then the xor. */
		uint64_t y = x << 20;
		y ^= y >> 32;
		y *= ci;
		y ^= y >> 32;
		y *= ci;
		y ^= y >> 32;
		y ^= (y >> 29) ^ (y >> 58);
		uint64_t w2 = y * ai ^ h;
		unsigned char b[8];
		memcpy(b, &w2, 8);
		int ok = 1;
		for (int i = 0; i < 8; i++)
			ok &= b[i] >= 1 && b[i] <= 0x7f;
		if (!ok)
			continue;
		o += (size_t)snprintf(json + o, cap - o, "%s\"abcdefgh", k ? ", " : "");
		for (int i = 0; i < 8; i++)
			o += (size_t)snprintf(json + o, cap - o, "\\u%04x", b[i]);
		o += (size_t)snprintf(json + o, cap - o, "\": %zu", k);
		k++;
	}
	snprintf(json + o, cap - o, "}");
	char path[256], err[512];
	snprintf(path, sizeof path, "%s/vocab.json", tmpdir);
	spit(path, json);
	free(json);
	snprintf(path, sizeof path, "%s/merges.txt", tmpdir);
	spit(path, "#version: 0.2\n");
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_load(&t, tmpdir, err, sizeof err) == 0, "%s", err);
	/* The keys, and <|endoftext|> after them. */
	ck_assert_int_eq(gpt2_tokenizer_vocab_size(t), (int)n_keys + 1);
	gpt2_tokenizer_free(t);
}
END_TEST

static Suite *tokenizer_suite(void)
{
	Suite *s = suite_create("tokenizer");
	TCase *tc = tcase_create("core");
	tcase_add_unchecked_fixture(tc, load_gpt2, free_gpt2);
	tcase_add_test(tc, test_core_sizes);
	tcase_add_test(tc, test_core_hello);
	tcase_add_test(tc, test_core_empty);
	tcase_add_test(tc, test_core_token_bytes);
	tcase_add_test(tc, test_core_decode_invalid_id);
	tcase_add_test(tc, test_core_sanitize);
	suite_add_tcase(s, tc);

	tc = tcase_create("reference");
	tcase_add_unchecked_fixture(tc, load_gpt2, free_gpt2);
	tcase_add_loop_test(tc, test_ref_corpus, 0, (int)N_CORPUS);
	tcase_add_test(tc, test_ref_fuzz);
	tcase_add_test(tc, test_ref_fuzz_files);
	tcase_add_test(tc, test_ref_long_words);
	tcase_add_loop_test(tc, test_ref_variants, 0,
	                    (int)(sizeof variant_names / sizeof variant_names[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_unchecked_fixture(tc, load_gpt2, free_gpt2);
	tcase_add_test(tc, test_limits_huge_words);
	tcase_add_test(tc, test_limits_cache_overflow);
	suite_add_tcase(s, tc);

	tc = tcase_create("decoder");
	tcase_add_unchecked_fixture(tc, load_gpt2, free_gpt2);
	tcase_add_test(tc, test_decoder_split_char);
	tcase_add_test(tc, test_decoder_invalid_passes);
	tcase_add_test(tc, test_decoder_stream_corpus);
	tcase_add_test(tc, test_decoder_random);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_errors_missing);
	tcase_add_test(tc, test_errors_json);
	tcase_add_test(tc, test_errors_merges_txt);
	tcase_add_test(tc, test_errors_unknown_keys);
	tcase_add_test(tc, test_errors_added_ids);
	tcase_add_test(tc, test_errors_prefix_and_ignore);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_hostile_invalid_utf8);
	tcase_add_test(tc, test_hostile_one_line_messages);
	tcase_add_test(tc, test_hostile_many_added_tokens);
	tcase_add_test(tc, test_hostile_hash_flood);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tokenizer_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
