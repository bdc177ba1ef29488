/*
 * check_tokenizer_vocab.c - the tokenizer (tools/gpt2/tokenizer*.c) on
 * real vocabularies, against ids recorded by others.
 *
 * testdata/tokenizers/ggml-vocab-{gpt-2,llama-bpe,qwen2,llama-spm}.gguf
 * and their .inp/.out cases are llama.cpp's (see the README there): the
 * .out ids are what Hugging Face's tokenizers gave for each case with
 * add_special_tokens=False (convert_hf_to_gguf_update.py); the .inp
 * separates the cases with "\n__ggml_vocab_test__\n" after each one, as
 * llama.cpp's tests/test-tokenizer-0.cpp reads them. Each case is encoded
 * from the GGUF metadata, and for llama-bpe, qwen2 and llama-spm once
 * more from a tokenizer.json (made from the same metadata by make_tokenizer_json.py,
 * trimmed to what the cases use). extra.inp holds more cases (special
 * tokens in the text, invalid UTF-8, long whitespace runs, digits), whose
 * ids Hugging Face's Rust tokenizers (npm tokenizers@0.23.2, through
 * make_extra.js) gave on those tokenizer.json files, with and without
 * add_special_tokens.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpt2/tokenizer.h"
#include "tmpdir.h"

#define TD ST_TESTDATA "/tokenizers/"
#define SEP "\n__ggml_vocab_test__\n"

typedef struct cases {
	char *inp;
	char **text;
	size_t *len;
	char **ids; /* the .out line of each case */
	size_t n;
} cases;

static void cases_read(cases *c, const char *inp_path, const char *out_path)
{
	size_t ilen, olen;
	memset(c, 0, sizeof *c);
	c->inp = read_file(inp_path, &ilen);
	char *out = read_file(out_path, &olen);
	ck_assert_msg(c->inp && out, "%s or %s: cannot read", inp_path, out_path);
	size_t cap = 1024;
	c->text = calloc(cap, sizeof *c->text);
	c->len = calloc(cap, sizeof *c->len);
	c->ids = calloc(cap, sizeof *c->ids);
	for (char *p = c->inp, *e = c->inp + ilen; p < e;) {
		char *sep = memmem(p, (size_t)(e - p), SEP, strlen(SEP));
		ck_assert_uint_lt(c->n, cap);
		c->text[c->n] = p;
		c->len[c->n] = sep ? (size_t)(sep - p) : (size_t)(e - p);
		c->n++;
		p = sep ? sep + strlen(SEP) : e;
	}
	size_t k = 0;
	for (char *line = out; line < out + olen && k < cap; k++) {
		char *nl = memchr(line, '\n', (size_t)(out + olen - line));
		ck_assert_ptr_nonnull(nl);
		*nl = 0;
		c->ids[k] = strdup(line);
		line = nl + 1;
	}
	free(out);
	ck_assert_msg(k == c->n, "%s: %zu cases, %s: %zu lines", inp_path, c->n, out_path, k);
}

static void cases_free(cases *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->ids[i]);
	free(c->text);
	free(c->len);
	free(c->ids);
	free(c->inp);
}

/* The ids as the .out files write them: " 1 2 3". */
static char *ids_line(const int32_t *ids, size_t n)
{
	char *s = malloc(n * 12 + 1);
	size_t o = 0;
	s[0] = 0;
	for (size_t i = 0; i < n; i++)
		o += (size_t)sprintf(s + o, " %d", (int)ids[i]);
	return s;
}

/* Encode every case; fail naming the first that differs and the count. */
static void run_cases(const char *tok_path, const char *inp, const char *out, unsigned flags)
{
	char err[512];
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_open(&t, tok_path, err, sizeof err) == 0, "%s", err);
	cases c;
	cases_read(&c, inp, out);
	size_t bad = 0, first = SIZE_MAX;
	char *got_first = NULL;
	for (size_t i = 0; i < c.n; i++) {
		int32_t *ids;
		size_t n;
		ck_assert_int_eq(gpt2_tokenizer_encode(t, c.text[i], c.len[i], flags, &ids, &n,
		                                       NULL, err, sizeof err),
		                 0);
		char *got = ids_line(ids, n);
		free(ids);
		if (strcmp(got, c.ids[i]) != 0) {
			if (!bad++) {
				first = i;
				got_first = got;
				continue;
			}
		}
		free(got);
	}
	if (bad)
		ck_abort_msg("%s: %zu of %zu cases differ; the first, case %zu '%.*s': got '%s', "
		             "expected '%s'",
		             tok_path, bad, c.n, first, (int)c.len[first], c.text[first], got_first,
		             c.ids[first]);
	ck_assert_uint_gt(c.n, 15);
	cases_free(&c);
	gpt2_tokenizer_free(t);
}

static const char *const gguf_names[] = {"gpt-2", "llama-bpe", "qwen2", "llama-spm"};

START_TEST(test_gguf_cases_give_the_recorded_ids)
{
	char tok[256], inp[300], out[300];
	snprintf(tok, sizeof tok, TD "ggml-vocab-%s.gguf", gguf_names[_i]);
	snprintf(inp, sizeof inp, "%s.inp", tok);
	snprintf(out, sizeof out, "%s.out", tok);
	run_cases(tok, inp, out, 0);
}
END_TEST

/* The BOS and EOS of each GGUF, as its metadata gives them (gguf-py
 * reads bos_token_id / eos_token_id / add_bos_token so), and whether an
 * encode adds the BOS: llama-spm says so, llama-bpe has no add_bos_token
 * and gets llama.cpp's default for Llama 3 (true, as Meta's template). */
START_TEST(test_gguf_bos_and_eos)
{
	static const struct {
		const char *name;
		int bos, eos, add_bos;
	} want[] = {{"gpt-2", 50256, 50256, 0},
	            {"llama-bpe", 128000, 128001, 1},
	            {"qwen2", 151643, 151643, 0},
	            {"llama-spm", 1, 2, 1}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		char path[256], err[512];
		snprintf(path, sizeof path, TD "ggml-vocab-%s.gguf", want[i].name);
		gpt2_tokenizer *t;
		ck_assert_msg(gpt2_tokenizer_open(&t, path, err, sizeof err) == 0, "%s", err);
		int add_bos, add_eos;
		ck_assert_int_eq(gpt2_tokenizer_bos(t, &add_bos), want[i].bos);
		ck_assert_int_eq(gpt2_tokenizer_eos(t, &add_eos), want[i].eos);
		ck_assert_int_eq(add_bos, want[i].add_bos);
		ck_assert_int_eq(add_eos, 0);
		gpt2_tokenizer_free(t);
	}
}
END_TEST

static const char *const json_names[] = {"llama-bpe", "qwen2", "llama-spm"};

START_TEST(test_json_cases_give_the_recorded_ids)
{
	char tok[256], inp[300], out[300];
	snprintf(tok, sizeof tok, TD "%s.tokenizer.json", json_names[_i]);
	snprintf(inp, sizeof inp, TD "ggml-vocab-%s.gguf.inp", json_names[_i]);
	snprintf(out, sizeof out, TD "ggml-vocab-%s.gguf.out", json_names[_i]);
	run_cases(tok, inp, out, 0);
}
END_TEST

/* extra.inp through each file of each vocabulary, with and without the
 * special tokens an encode adds: _i bit 0 the GGUF, bit 1 add special,
 * bits 2.. the vocabulary. The Metaspace layout of llama-spm (which
 * never doubles a leading U+2581, and prepends none after a special
 * token) has no GGUF of its own. */
static const char *const extra_names[] = {"llama-bpe", "qwen2", "llama-spm", "llama-spm-metaspace"};

START_TEST(test_extra_cases_give_hugging_face_ids)
{
	const char *name = extra_names[_i >> 2];
	int gguf = _i & 1, special = (_i >> 1) & 1;
	if (gguf && strstr(name, "-metaspace"))
		return;
	char tok[256], out[300];
	if (gguf)
		snprintf(tok, sizeof tok, TD "ggml-vocab-%s.gguf", name);
	else
		snprintf(tok, sizeof tok, TD "%s.tokenizer.json", name);
	snprintf(out, sizeof out, TD "extra.%s%s.out", name, special ? ".special" : "");
	run_cases(tok, TD "extra.inp", out, special ? GPT2_ENCODE_ADD_SPECIAL : 0);
}
END_TEST

/*
 * GPT-2's pre-tokenizer two ways: the hand-written scan of ByteLevel's
 * regex (tokenizer.c's next_piece) and the same regex as a Split pattern
 * on Oniguruma, on the corpus files and on random text.
 */
#define GPT2_TOKJSON ST_TESTDATA "/gpt2-tokenizer/tokenizer.json"
#define BYTELEVEL_BLOCK                                                                            \
	"\"pre_tokenizer\": {\n    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": false,\n  " \
	"  "                                                                                       \
	"\"trim_offsets\": true,\n    \"use_regex\": true\n  }"
#define SPLIT_BLOCK                                                                              \
	"\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", " \
	"\"pattern\": {\"Regex\": \"'s|'t|'re|'ve|'m|'ll|'d| ?\\\\p{L}+| ?\\\\p{N}+| "           \
	"?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", "     \
	"\"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "            \
	"\"use_regex\": "                                                                        \
	"false}]}"

static void same_ids(gpt2_tokenizer *a, gpt2_tokenizer *b, const char *text, size_t len,
                     const char *what)
{
	int32_t *x, *y;
	size_t nx, ny;
	char err[256];
	ck_assert_int_eq(gpt2_tokenizer_encode(a, text, len, 0, &x, &nx, NULL, err, sizeof err), 0);
	ck_assert_int_eq(gpt2_tokenizer_encode(b, text, len, 0, &y, &ny, NULL, err, sizeof err), 0);
	ck_assert_msg(nx == ny && (nx == 0 || memcmp(x, y, nx * sizeof *x) == 0),
	              "%s: the built-in scan gives %zu ids, the Split pattern %zu", what, nx, ny);
	free(x);
	free(y);
}

/* rounds random texts of up to max_pieces strings of the alphabet (""
 * stands for a NUL byte; xorshift32 from seed) give both the same ids. */
static void random_agree(gpt2_tokenizer *a, gpt2_tokenizer *b, const char *const *alphabet,
                         size_t n_alpha, uint32_t seed, int rounds, uint32_t max_pieces)
{
	uint32_t x = seed;
	char buf[1024];
	for (int round = 0; round < rounds; round++) {
		size_t n = 0;
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		uint32_t pieces = x % max_pieces;
		for (uint32_t k = 0; k < pieces; k++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			const char *p = alphabet[x % n_alpha];
			size_t pl = p[0] ? strlen(p) : 1;
			ck_assert_uint_lt(n + pl, sizeof buf);
			memcpy(buf + n, p, pl);
			n += pl;
		}
		same_ids(a, b, buf, n, "random text");
	}
}

START_TEST(test_gpt2_scan_agrees_with_oniguruma)
{
	size_t len;
	char *json = read_file(GPT2_TOKJSON, &len);
	ck_assert_ptr_nonnull(json);
	char *at = strstr(json, BYTELEVEL_BLOCK);
	ck_assert_ptr_nonnull(at);
	char dir[] = "/tmp/check_tokenizer_vocab.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(json, 1, (size_t)(at - json), f);
	fputs(SPLIT_BLOCK, f);
	fputs(at + strlen(BYTELEVEL_BLOCK), f);
	fclose(f);
	free(json);

	char err[512];
	gpt2_tokenizer *scan, *onig;
	ck_assert_msg(gpt2_tokenizer_open(&scan, GPT2_TOKJSON, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(gpt2_tokenizer_open(&onig, path, err, sizeof err) == 0, "%s", err);
	unlink(path);
	rmdir(dir);
	const char *files[] = {"code.txt",    "control.txt", "english.txt",
	                       "invalid.bin", "numbers.txt", "punct.txt",
	                       "special.txt", "unicode.txt", "whitespace.txt"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char p[256];
		snprintf(p, sizeof p, ST_TESTDATA "/tokenizer/corpus/%s", files[i]);
		char *text = read_file(p, &len);
		ck_assert_ptr_nonnull(text);
		same_ids(scan, onig, text, len, files[i]);
		free(text);
	}
	/* Random text over an alphabet of the classes the regex tells apart. */
	static const char *const alphabet[] = {"a",
	                                       "Z",
	                                       "7",
	                                       " ",
	                                       "  ",
	                                       "\n",
	                                       "\t",
	                                       "'",
	                                       "'s",
	                                       "'ll",
	                                       "!",
	                                       ".",
	                                       "\xc3\xa9",
	                                       "\xe4\xb8\xad",
	                                       "\xd9\xa3",
	                                       "\xe2\x80\x83",
	                                       "\xf0\x9f\xa6\x99",
	                                       "\xff",
	                                       "\x00"};
	random_agree(scan, onig, alphabet, sizeof alphabet / sizeof alphabet[0], 12345, 3000, 40);
	gpt2_tokenizer_free(scan);
	gpt2_tokenizer_free(onig);
}
END_TEST

/* tokenizer_config.json beside a tokenizer.json: add_bos_token and
 * add_eos_token with the tokens it names (a string, or an object with
 * content, as transformers writes them) over the post-processor's
 * template, which adds only the BOS. Expected: llama.cpp's recorded ids
 * of "Hello world" (15043 3186) between <s> (1) and </s> (2). */
START_TEST(test_config_adds_bos_and_eos)
{
	char dir[] = "/tmp/check_tokenizer_vocab.XXXXXX", path[256], err[512];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	size_t len;
	char *json = read_file(TD "llama-spm.tokenizer.json", &len);
	ck_assert_ptr_nonnull(json);
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	write_bytes(path, json, len);
	free(json);
	char cfg[256];
	snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
	write_text(cfg,
	           "{\"add_bos_token\": true, \"add_eos_token\": true, \"bos_token\": "
	           "{\"__type\": \"AddedToken\", \"content\": \"<s>\"}, \"eos_token\": \"</s>\"}");
	static const int32_t want[] = {1, 15043, 3186, 2};
	const char *paths[] = {path, dir};
	for (int k = 0; k < 2; k++) {
		gpt2_tokenizer *t;
		ck_assert_msg(gpt2_tokenizer_open(&t, paths[k], err, sizeof err) == 0, "%s", err);
		int32_t *ids;
		size_t n;
		ck_assert_int_eq(gpt2_tokenizer_encode(t, "Hello world", 11,
		                                       GPT2_ENCODE_ADD_SPECIAL, &ids, &n, NULL, err,
		                                       sizeof err),
		                 0);
		ck_assert_uint_eq(n, 4);
		ck_assert_mem_eq(ids, want, sizeof want);
		free(ids);
		gpt2_tokenizer_free(t);
	}
	/* A BOS asked for that is not a token: one line naming the file. */
	write_text(cfg, "{\"add_bos_token\": true, \"bos_token\": \"<nope>\"}");
	gpt2_tokenizer *t = NULL;
	ck_assert_int_eq(gpt2_tokenizer_open(&t, path, err, sizeof err), -1);
	ck_assert_ptr_null(t);
	ck_assert_msg(strstr(err,
	                     "tokenizer_config.json: add_bos_token is true but bos_token '<nope>' "
	                     "is not a token") != NULL,
	              "%s", err);
	unlink(cfg);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* GGUF files the loader refuses, each in one line naming the file and
 * the key (seeds of fuzz_tok_gguf, made by tests/fuzz/make_tok_seeds.py). */
START_TEST(test_gguf_refusals_name_the_key)
{
	static const char *const refusals[][2] = {
		{"bpe-unknown-pre.gguf",
	         "tokenizer.ggml.pre 'falcon' is not supported (expected gpt-2, "
	         "default, llama-bpe, llama3, llama-v3 or qwen2)"},
		{"bert.gguf",
	         "tokenizer.ggml.model 'bert' is not supported (expected gpt2 or llama)"},
		{"bpe-bad-merge.gguf",
	         "tokenizer.ggml.merges[0] is not two tokens separated by a space"},
	};
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		char path[256], err[512];
		snprintf(path, sizeof path, ST_TESTDATA "/../tests/fuzz/corpus/tok_gguf/%s",
		         refusals[i][0]);
		gpt2_tokenizer *t = NULL;
		ck_assert_int_eq(gpt2_tokenizer_open(&t, path, err, sizeof err), -1);
		ck_assert_ptr_null(t);
		ck_assert_msg(strstr(err, refusals[i][0]) && strstr(err, refusals[i][1]) &&
		                      !strchr(err, '\n'),
		              "%s", err);
	}
}
END_TEST

/*
 * The hand-written scans of Llama 3's and Qwen2's patterns against
 * Oniguruma: the same tokenizer.json with the pattern wrapped in "(?:...)"
 * (the same regex, which the loader does not recognise, so Oniguruma runs
 * it), on extra.inp and on random text over the characters the patterns
 * tell apart (long s folds to s under (?i)).
 */
static gpt2_tokenizer *open_wrapped(const char *src, char *dir)
{
	size_t len;
	char *json = read_file(src, &len);
	ck_assert_ptr_nonnull(json);
	char *at = strstr(json, "\"Regex\": \"");
	ck_assert_ptr_nonnull(at);
	at += strlen("\"Regex\": \"");
	char *close = strchr(at, '"');
	ck_assert_ptr_nonnull(close);
	char path[256], err[512];
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(json, 1, (size_t)(at - json), f);
	fputs("(?:", f);
	fwrite(at, 1, (size_t)(close - at), f);
	fputs(")", f);
	fputs(close, f);
	fclose(f);
	free(json);
	gpt2_tokenizer *t;
	ck_assert_msg(gpt2_tokenizer_open(&t, path, err, sizeof err) == 0, "%s", err);
	unlink(path);
	return t;
}

START_TEST(test_llama3_and_qwen2_scans_agree_with_oniguruma)
{
	static const char *const names[] = {"llama-bpe", "qwen2"};
	char src[256], err[512];
	snprintf(src, sizeof src, TD "%s.tokenizer.json", names[_i]);
	char dir[] = "/tmp/check_tokenizer_vocab.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	gpt2_tokenizer *onig = open_wrapped(src, dir), *scan;
	rmdir(dir);
	ck_assert_msg(gpt2_tokenizer_open(&scan, src, err, sizeof err) == 0, "%s", err);
	size_t len;
	char *text = read_file(TD "extra.inp", &len);
	ck_assert_ptr_nonnull(text);
	same_ids(scan, onig, text, len, "extra.inp");
	free(text);
	static const char *const alphabet[] = {"a",
	                                       "Z",
	                                       "7",
	                                       "12",
	                                       " ",
	                                       "  ",
	                                       "\n",
	                                       "\r",
	                                       "\r\n",
	                                       "\t",
	                                       "'",
	                                       "'s",
	                                       "'S",
	                                       "'T",
	                                       "'re",
	                                       "'VE",
	                                       "'Ll",
	                                       "'m",
	                                       "'D",
	                                       "'x",
	                                       "\xc5\xbf",
	                                       "!",
	                                       ".",
	                                       "(",
	                                       "\xc3\xa9",
	                                       "\xe4\xb8\xad",
	                                       "\xd9\xa3",
	                                       "\xe2\x80\x83",
	                                       "\xe3\x80\x80",
	                                       "\xcc\x81",
	                                       "\xf0\x9f\xa6\x99",
	                                       "\x00"};
	random_agree(scan, onig, alphabet, sizeof alphabet / sizeof alphabet[0], 2024, 5000, 60);
	gpt2_tokenizer_free(scan);
	gpt2_tokenizer_free(onig);
}
END_TEST

static Suite *vocab_suite(void)
{
	Suite *s = suite_create("tokenizer_vocab");
	TCase *tc = tcase_create("llama.cpp");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_gguf_cases_give_the_recorded_ids, 0,
	                    (int)(sizeof gguf_names / sizeof gguf_names[0]));
	tcase_add_loop_test(tc, test_json_cases_give_the_recorded_ids, 0,
	                    (int)(sizeof json_names / sizeof json_names[0]));
	tcase_add_loop_test(tc, test_extra_cases_give_hugging_face_ids, 0,
	                    (int)(4 * sizeof extra_names / sizeof extra_names[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("pre-tokenizer");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_gpt2_scan_agrees_with_oniguruma);
	tcase_add_loop_test(tc, test_llama3_and_qwen2_scans_agree_with_oniguruma, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_test(tc, test_config_adds_bos_and_eos);
	tcase_add_test(tc, test_gguf_refusals_name_the_key);
	tcase_add_test(tc, test_gguf_bos_and_eos);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vocab_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
