/*
 * targets_gpt2.c - the fuzz targets of the GPT-2 tools' parsers of
 * untrusted input (tools/gpt2), shared by the libFuzzer harness (fuzz.c
 * with -DFUZZ_GPT2, built by build.sh with clang) and by the corpus replay
 * unit test (tests/check_gpt2_fuzz_corpus.c, built by CMake), which both
 * #include this file.
 *
 * Each target takes one input and calls abort() when a property fails, so
 * that libFuzzer records a crash and a replay test dies on a signal:
 *
 *   fuzz_tokenizer  hostile tokenizer.json, or vocab.json + merges.txt:
 *                   what loads encodes and decodes without error, every id
 *                   it gives has bytes, and encoding is repeatable.
 *   fuzz_encode     any bytes through the real GPT-2 tokenizer, loaded both
 *                   ways: the two agree, decode(encode(s)) is s with invalid
 *                   UTF-8 replaced, <|endoftext|> becomes 50256 exactly where
 *                   it is in the text, and the streaming decoder gives back
 *                   the same bytes in whole characters.
 *   fuzz_tok_gguf   a hostile GGUF file as a tokenizer (tokenizer.ggml.*,
 *                   through gpt2_tokenizer_open): it loads or is refused in
 *                   one line; what loads encodes as fuzz_tokenizer checks.
 *   fuzz_encode_vocab  any bytes through real Llama-family vocabularies
 *                   (testdata/tokenizers: llama-bpe and llama-spm GGUF,
 *                   the qwen2 tokenizer.json): ids valid and repeatable;
 *                   llama-bpe decodes back to the text (invalid UTF-8
 *                   replaced), llama-spm to it with U+2581 as spaces and
 *                   one in front, and qwen2's ids survive decoding and
 *                   encoding again (its NFC is idempotent).
 *   fuzz_config     config.json text (and generation_config.json): what
 *                   parses passes gpt2_config_check, survives the config
 *                   and llm.c header writers, and small models allocate;
 *                   the same text through llama_config_parse: what parses
 *                   has usable sizes and finite rotary frequencies.
 *   fuzz_llmc       an llm.c checkpoint, whole or built around fuzzed sizes:
 *                   what opens has the size its header implies, reads back
 *                   slot by slot, loads as a model, and goes through
 *                   .bin -> snapshot -> .bin unchanged (padding aside).
 *   fuzz_model      a config plus a hostile model.safetensors or
 *                   pytorch_model.bin: what gpt2_model_load accepts is
 *                   complete, takes at most twice the file's size, and
 *                   gives the same logits after a round trip through an
 *                   llm.c checkpoint.
 *   fuzz_llama_model  a config.json plus a hostile model.safetensors for
 *                   the Llama family's loader (llama_model_load: F32,
 *                   F16, BF16, scaled F8 and their scales, tied heads):
 *                   a refusal is one line; what loads runs a prompt on
 *                   every kernel table the CPU has, every traced stage
 *                   has the prompt's rows, and the last token's logits
 *                   do not depend on whether all positions' were asked.
 *
 * Files go to one temporary folder (under $TMPDIR, else /tmp), removed at
 * exit. It is not a test of messages or exact results: the unit tests do
 * that.
 */
#include "gpt2/export.h"
#include "gpt2/gpt2.h"
#include "gpt2/kernels.h"
#include "gpt2/llama.h"
#include "gpt2/llmc.h"
#include "gpt2/tokenizer.h"
#include "fuzz.h"

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ST_TESTDATA
#error "ST_TESTDATA must name the testdata folder"
#endif

/* A message from the tools: not empty, one line. */
#define CHECK_MESSAGE(err)                                                   \
	CHECK((err)[0] != 0 && strchr((err), '\n') == NULL)

/* ---- the temporary folder ------------------------------------------------ */

static char fz_dir[256];

static int fz_rm(const char *path, const struct stat *sb, int flag,
                 struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void fz_gpt2_cleanup(void)
{
	if (!fz_dir[0])
		return;
	nftw(fz_dir, fz_rm, 16, FTW_DEPTH | FTW_PHYS);
	fz_dir[0] = 0;
}

/* fz_dir "/" name into out (at least 512 bytes). */
static char *fz_path(char *out, const char *name)
{
	if (!fz_dir[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(fz_dir, sizeof fz_dir, "%s/st-fuzz-gpt2-XXXXXX",
		         tmp && tmp[0] && strlen(tmp) < 200 ? tmp : "/tmp");
		CHECK(mkdtemp(fz_dir) != NULL);
		atexit(fz_gpt2_cleanup);
	}
	snprintf(out, 512, "%s/%s", fz_dir, name);
	return out;
}

static unsigned char *fz_get(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	CHECK(fseek(f, 0, SEEK_END) == 0);
	long n = ftell(f);
	CHECK(n >= 0 && fseek(f, 0, SEEK_SET) == 0);
	unsigned char *b = malloc((size_t)n + 1);
	CHECK(b != NULL);
	CHECK(fread(b, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* Valid UTF-8 (the decoder's own rules are what is under test). */
static int fz_utf8_ok(const unsigned char *s, size_t n)
{
	char *clean;
	size_t clean_len;
	size_t bad = gpt2_utf8_sanitize((const char *)s, n, &clean, &clean_len);
	CHECK(bad != (size_t)-1);
	free(clean);
	return bad == 0;
}

/*
 * Push ids' bytes through a streaming decoder: the output is exactly the
 * bytes of the ids, at most 3 are held, and each push of a valid text
 * gives whole characters.
 */
static void fz_stream(const gpt2_tokenizer *t, const int32_t *ids, size_t n,
                      const char *want, size_t want_len, int valid)
{
	gpt2_decoder d = {0};
	char *all = malloc(want_len + 8);
	CHECK(all != NULL);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *b = gpt2_tokenizer_token_bytes(t, ids[i], &len);
		CHECK(b != NULL);
		CHECK(o + len <= want_len);
		char *out = malloc(len + 4);
		CHECK(out != NULL);
		size_t k = gpt2_decoder_push(&d, b, len, out);
		CHECK(k <= len + 4 && d.n_pending <= 3);
		if (valid)
			CHECK(fz_utf8_ok((unsigned char *)out, k));
		memcpy(all + o, out, k);
		o += k;
		free(out);
	}
	char tail[4];
	size_t k = gpt2_decoder_flush(&d, tail);
	CHECK(k <= 3 && d.n_pending == 0);
	if (valid)
		CHECK(k == 0);
	CHECK(o + k == want_len);
	memcpy(all + o, tail, k);
	CHECK(want_len == 0 || memcmp(all, want, want_len) == 0);
	free(all);
}

/* ---- tokenizer: hostile files --------------------------------------------- */

/*
 * Encode text with t (twice: the word cache must not change the answer),
 * check every id has bytes, decode, and stream the decode. The text is
 * copied to a buffer of exactly its size, so that ASan sees a read past
 * its end.
 */
static void fz_tok_use(gpt2_tokenizer *t, const char *given, size_t len,
                       unsigned flags)
{
	char *text = malloc(len ? len : 1);
	CHECK(text != NULL);
	memcpy(text, given, len);
	int32_t *ids = NULL, *again = NULL;
	size_t n = 0, n2 = 0, repl = 0;
	CHECK(gpt2_tokenizer_encode(t, text, len, flags, &ids, &n, &repl, NULL, 0) == 0);
	CHECK(gpt2_tokenizer_encode(t, text, len, flags, &again, &n2, NULL, NULL, 0) == 0);
	CHECK(n == n2 && (n == 0 || memcmp(ids, again, n * sizeof *ids) == 0));
	free(again);
	free(text);
	int V = gpt2_tokenizer_vocab_size(t);
	for (size_t i = 0; i < n; i++) {
		size_t bl;
		CHECK(ids[i] >= 0 && ids[i] < V);
		CHECK(gpt2_tokenizer_token_bytes(t, ids[i], &bl) != NULL);
	}
	char *out = NULL;
	size_t out_len = 0, bad = 0;
	CHECK(gpt2_tokenizer_decode(t, ids, n, &out, &out_len, &bad, NULL, 0) == 0);
	CHECK(out != NULL && out[out_len] == 0);
	fz_stream(t, ids, n, out, out_len, 0);
	free(out);
	free(ids);
}

/*
 * Input: a mode byte, then a tokenizer.json (mode bit 0 clear), or a
 * vocab.json and a merges.txt separated by the first NUL byte (bit 0 set).
 */
static void fuzz_tokenizer(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	char json[512], merges[512], err[1024];
	gpt2_tokenizer *t = NULL;
	int rc;
	if (!(mode & 1)) {
		fz_write(fz_path(json, "tokenizer.json"), data, size);
		rc = gpt2_tokenizer_load_files(&t, json, NULL, err, sizeof err);
	} else {
		const unsigned char *nul = memchr(data, 0, size);
		size_t vl = nul ? (size_t)(nul - data) : size;
		fz_write(fz_path(json, "vocab.json"), data, vl);
		fz_write(fz_path(merges, "merges.txt"), nul ? nul + 1 : data,
		       nul ? size - vl - 1 : 0);
		rc = gpt2_tokenizer_load_files(&t, json, merges, err, sizeof err);
	}
	if (rc != 0) {
		CHECK(rc == -1 && t == NULL);
		CHECK_MESSAGE(err);
		return;
	}
	CHECK(t != NULL);
	int V = gpt2_tokenizer_vocab_size(t);
	CHECK(V >= 1);
	int eot = gpt2_tokenizer_eot(t);
	CHECK(eot >= -1 && eot < V);
	size_t len;
	CHECK(gpt2_tokenizer_token_bytes(t, -1, &len) == NULL);
	CHECK(gpt2_tokenizer_token_bytes(t, V, &len) == NULL);
	if (eot >= 0) {
		const char *b = gpt2_tokenizer_token_bytes(t, eot, &len);
		CHECK(b != NULL);
	}
	/* Every id that has bytes decodes alone to those bytes. */
	for (int id = 0; id < V; id++) {
		const char *b = gpt2_tokenizer_token_bytes(t, id, &len);
		if (!b)
			continue;
		char *out;
		size_t out_len;
		int32_t one = id;
		CHECK(gpt2_tokenizer_decode(t, &one, 1, &out, &out_len, NULL, NULL, 0) == 0);
		CHECK(out_len == len && memcmp(out, b, len) == 0);
		free(out);
	}
	/* Texts that reach each path: plain words, a word longer than the
	 * short-word merge and the cache, the added tokens, the input. */
	static const char fixed[] = "Hello world, it's 2024!\n\n  <|endoftext|>"
	                            "\xc3\xa9\xe2\x82\xac \xf0\x9f\x98\x80 a";
	char longw[300];
	for (size_t i = 0; i < sizeof longw; i++)
		longw[i] = "abab ab"[i % 7];
	fz_tok_use(t, fixed, sizeof fixed - 1, 0);
	fz_tok_use(t, fixed, sizeof fixed - 1, GPT2_ENCODE_NO_SPECIAL);
	fz_tok_use(t, longw, sizeof longw, 0);
	fz_tok_use(t, longw, 200, 0);
	/* Texts ending in a character of two and of four bytes. */
	fz_tok_use(t, "caf\xc3\xa9", 5, 0);
	fz_tok_use(t, "ok \xf0\x9f\x98\x80", 7, 0);
	fz_tok_use(t, (const char *)data, size < 4096 ? size : 4096, mode >> 1 & 1);
	gpt2_tokenizer_free(t);
}

/* Input: a whole GGUF file, loaded as a tokenizer by path. */
static void fuzz_tok_gguf(const unsigned char *data, size_t size)
{
	char path[512], err[1024];
	gpt2_tokenizer *t = NULL;
	fz_write(fz_path(path, "tok.gguf"), data, size);
	int rc = gpt2_tokenizer_open(&t, path, err, sizeof err);
	if (rc != 0) {
		CHECK(rc == -1 && t == NULL);
		CHECK_MESSAGE(err);
		return;
	}
	int V = gpt2_tokenizer_vocab_size(t);
	CHECK(V >= 1);
	static const char fixed[] = "Hello world, it's 2024!\n\n  <s><|endoftext|>"
	                            "\xc3\xa9\xe2\x82\xac \xf0\x9f\x98\x80 a\xe2\x96\x81" "b";
	fz_tok_use(t, fixed, sizeof fixed - 1, 0);
	fz_tok_use(t, fixed, sizeof fixed - 1, GPT2_ENCODE_ADD_SPECIAL);
	fz_tok_use(t, fixed, sizeof fixed - 1, GPT2_ENCODE_NO_SPECIAL);
	fz_tok_use(t, (const char *)data, size < 2048 ? size : 2048, 0);
	gpt2_tokenizer_free(t);
}

/* ---- real Llama-family vocabularies: any text ------------------------------ */

#define VOCABS ST_TESTDATA "/tokenizers/"

static gpt2_tokenizer *fz_llama_bpe, *fz_llama_spm, *fz_qwen2;

static void fz_vocab_free(void)
{
	gpt2_tokenizer_free(fz_llama_bpe);
	gpt2_tokenizer_free(fz_llama_spm);
	gpt2_tokenizer_free(fz_qwen2);
	fz_llama_bpe = fz_llama_spm = fz_qwen2 = NULL;
}

static void fz_vocab_load(void)
{
	if (fz_llama_bpe)
		return;
	char err[1024];
	if (gpt2_tokenizer_open(&fz_llama_bpe, VOCABS "ggml-vocab-llama-bpe.gguf", err,
	                        sizeof err) != 0 ||
	    gpt2_tokenizer_open(&fz_llama_spm, VOCABS "ggml-vocab-llama-spm.gguf", err,
	                        sizeof err) != 0 ||
	    gpt2_tokenizer_open(&fz_qwen2, VOCABS "qwen2.tokenizer.json", err, sizeof err) != 0) {
		fprintf(stderr, "cannot load the vocabularies: %s\n", err);
		abort();
	}
	atexit(fz_vocab_free);
}

static char *fz_decode(gpt2_tokenizer *t, const int32_t *ids, size_t n, size_t *len)
{
	char *out = NULL;
	CHECK(gpt2_tokenizer_decode(t, ids, n, &out, len, NULL, NULL, 0) == 0);
	return out;
}

/* Input: a mode byte (bit 0: add the special tokens), then any bytes. */
static void fuzz_encode_vocab(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	fz_vocab_load();
	const char *text = (const char *)data;
	unsigned flags = mode & 1 ? GPT2_ENCODE_ADD_SPECIAL : 0;
	fz_tok_use(fz_llama_bpe, text, size, flags);
	fz_tok_use(fz_llama_spm, text, size, flags);
	fz_tok_use(fz_qwen2, text, size, flags);

	char *clean;
	size_t clean_len, n, m, out_len;
	size_t n_bad = gpt2_utf8_sanitize(text, size, &clean, &clean_len);
	CHECK(n_bad != (size_t)-1);
	const char *want = clean ? clean : text;
	if (!clean)
		clean_len = size;
	int32_t *ids, *again;

	/* llama-bpe: byte-level, no normalizer; special tokens decode to
	 * their text. */
	CHECK(gpt2_tokenizer_encode(fz_llama_bpe, text, size, 0, &ids, &n, NULL, NULL, 0) == 0);
	char *out = fz_decode(fz_llama_bpe, ids, n, &out_len);
	CHECK(out_len == clean_len && (!out_len || memcmp(out, want, out_len) == 0));
	free(out);
	free(ids);

	/* llama-spm: a U+2581 in front of each stretch between special tokens
	 * and for each space; without special-token text, one in front. */
	CHECK(gpt2_tokenizer_encode(fz_llama_spm, text, size, 0, &ids, &n, NULL, NULL, 0) == 0);
	out = fz_decode(fz_llama_spm, ids, n, &out_len);
	if (clean_len && !memmem(want, clean_len, "<", 1)) {
		size_t k = 0, o = 1;
		CHECK(out_len >= 1 && out[0] == ' ');
		while (k < clean_len && o < out_len) {
			if (clean_len - k >= 3 && memcmp(want + k, "\xe2\x96\x81", 3) == 0) {
				CHECK(out[o] == ' ');
				k += 3;
			} else {
				CHECK(out[o] == want[k]);
				k++;
			}
			o++;
		}
		CHECK(k == clean_len && o == out_len);
	}
	free(out);
	free(ids);

	/* qwen2: NFC first, so decoding gives NFC(text), which encodes to
	 * the same ids. */
	CHECK(gpt2_tokenizer_encode(fz_qwen2, text, size, 0, &ids, &n, NULL, NULL, 0) == 0);
	out = fz_decode(fz_qwen2, ids, n, &out_len);
	CHECK(gpt2_tokenizer_encode(fz_qwen2, out, out_len, 0, &again, &m, NULL, NULL, 0) == 0);
	CHECK(m == n && (!n || memcmp(ids, again, n * sizeof *ids) == 0));
	free(out);
	free(ids);
	free(again);
	free(clean);
}

/* ---- the real GPT-2 tokenizer: any text ---------------------------------- */

#define GPT2_TOK ST_TESTDATA "/gpt2-tokenizer/"

static gpt2_tokenizer *fz_gpt2_json, *fz_gpt2_files;

static void fz_gpt2_free(void)
{
	gpt2_tokenizer_free(fz_gpt2_json);
	gpt2_tokenizer_free(fz_gpt2_files);
	fz_gpt2_json = fz_gpt2_files = NULL;
}

static void fz_gpt2_load(void)
{
	if (fz_gpt2_json)
		return;
	char err[1024];
	if (gpt2_tokenizer_load_files(&fz_gpt2_json, GPT2_TOK "tokenizer.json",
	                              NULL, err, sizeof err) != 0 ||
	    gpt2_tokenizer_load_files(&fz_gpt2_files, GPT2_TOK "vocab.json",
	                              GPT2_TOK "merges.txt", err,
	                              sizeof err) != 0) {
		fprintf(stderr, "cannot load the GPT-2 tokenizer: %s\n", err);
		abort();
	}
	atexit(fz_gpt2_free);
}

/* How many times "<|endoftext|>" occurs, left to right, not overlapping. */
static size_t fz_count_eot(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i + 13 <= n;) {
		if (memcmp(s + i, "<|endoftext|>", 13) == 0) {
			c++;
			i += 13;
		} else {
			i++;
		}
	}
	return c;
}

/* Input: a mode byte (bit 0: GPT2_ENCODE_NO_SPECIAL), then any bytes. */
static void fuzz_encode(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	unsigned flags = mode & 1 ? GPT2_ENCODE_NO_SPECIAL : 0;
	unsigned split = (unsigned)mode >> 1;
	const char *text = (const char *)data;
	size_t len = size;
	fz_gpt2_load();

	/* The text as encode sees it: invalid UTF-8 replaced. */
	char *clean;
	size_t clean_len;
	size_t n_bad = gpt2_utf8_sanitize(text, len, &clean, &clean_len);
	CHECK(n_bad != (size_t)-1);
	if (!clean) {
		CHECK(n_bad == 0);
		clean_len = len;
	}
	const char *want = clean ? clean : text;
	CHECK(fz_utf8_ok((const unsigned char *)want, clean_len));

	int32_t *a = NULL, *b = NULL;
	size_t na, nb, ra, rb;
	CHECK(gpt2_tokenizer_encode(fz_gpt2_json, text, len, flags, &a, &na,
	                            &ra, NULL, 0) == 0);
	CHECK(gpt2_tokenizer_encode(fz_gpt2_files, text, len, flags, &b, &nb,
	                            &rb, NULL, 0) == 0);
	CHECK(ra == n_bad && rb == n_bad);
	/* tokenizer.json and vocab.json + merges.txt are one tokenizer. */
	CHECK(na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0));
	size_t eots = 0;
	for (size_t i = 0; i < na; i++) {
		CHECK(a[i] >= 0 && a[i] < 50257);
		eots += a[i] == 50256;
	}
	CHECK(eots == (flags ? 0 : fz_count_eot(want, clean_len)));

	char *out;
	size_t out_len;
	CHECK(gpt2_tokenizer_decode(fz_gpt2_json, a, na, &out, &out_len,
	                            NULL, NULL, 0) == 0);
	CHECK(out_len == clean_len &&
	      (out_len == 0 || memcmp(out, want, out_len) == 0));
	free(out);
	fz_stream(fz_gpt2_json, a, na, want, clean_len, 1);

	/* The raw input through the streaming decoder, in chunks of 1 to
	 * 8 bytes: the same bytes come out, whatever they are. */
	gpt2_decoder d = {0};
	char *all = malloc(len + 8);
	CHECK(all != NULL);
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		size_t k = 1 + (split + i) % 8;
		if (k > len - i)
			k = len - i;
		char buf[16];
		size_t got = gpt2_decoder_push(&d, text + i, k, buf);
		CHECK(got <= k + 4 && d.n_pending <= 3);
		memcpy(all + o, buf, got);
		o += got;
		i += k;
	}
	char tail[4];
	size_t got = gpt2_decoder_flush(&d, tail);
	CHECK(got <= 3);
	memcpy(all + o, tail, got);
	o += got;
	CHECK(o == len && (len == 0 || memcmp(all, text, len) == 0));
	free(all);
	free(clean);
	free(a);
	free(b);
}

/* ---- config.json --------------------------------------------------------- */

/* Bytes the parameters of cfg take as F32 (the config must be checked). */
static uint64_t fz_model_bytes(const gpt2_config *cfg)
{
	uint64_t n = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++)
		n += gpt2_param_numel(cfg, s) * (uint64_t)gpt2_param_layers(cfg, s);
	return n * 4;
}

/* A parsed config: checked, and it survives the writers built on it. */
static void fz_config_ok(const gpt2_config *cfg)
{
	char err[1024];
	CHECK(gpt2_config_check(cfg, err, sizeof err) == 0);
	CHECK(cfg->n_eos >= 0 && cfg->n_eos <= GPT2_MAX_EOS);
	for (int i = 0; i < cfg->n_eos; i++)
		CHECK(cfg->eos[i] >= 0);

	/* config.json as gpt2export writes it parses back to the same sizes. */
	char json[4096];
	int n = gpt2_export_config_json(json, sizeof json, cfg, ST_DTYPE_F32);
	CHECK(n > 0);
	gpt2_config back;
	CHECK(gpt2_config_parse(&back, json, (size_t)n, "export", err,
	                        sizeof err) == 0);
	CHECK(back.vocab_size == cfg->vocab_size &&
	      back.max_seq_len == cfg->max_seq_len &&
	      back.channels == cfg->channels &&
	      back.num_layers == cfg->num_layers &&
	      back.num_heads == cfg->num_heads);
	/* Its eos ids, or <|endoftext|> when it names none and holds it. */
	if (cfg->n_eos) {
		CHECK(back.n_eos == cfg->n_eos);
		for (int i = 0; i < cfg->n_eos; i++)
			CHECK(back.eos[i] == cfg->eos[i]);
	} else {
		CHECK(cfg->vocab_size > GPT2_EXPORT_EOT
		          ? back.n_eos == 1 && back.eos[0] == GPT2_EXPORT_EOT
		          : back.n_eos == 0);
	}

	/* The llm.c header of it: accepted with exactly its file size. */
	for (int v = 3; v <= 5; v += 2) {
		llmc_header h, h2;
		llmc_header_from_config(&h, cfg, v);
		unsigned char hb[LLMC_HEADER_BYTES];
		llmc_header_encode(&h, hb);
		uint64_t size = llmc_file_size(&h);
		CHECK(size > LLMC_HEADER_BYTES);
		CHECK(llmc_header_parse(&h2, hb, size, "h", err, sizeof err) == 0);
		CHECK(memcmp(&h, &h2, sizeof h) == 0);
		CHECK(llmc_header_parse(&h2, hb, size + 1, "h", err,
		                        sizeof err) == -1);
		CHECK(llmc_header_parse(&h2, hb, size - 1, "h", err,
		                        sizeof err) == -1);
	}

	/* A small model allocates, empty. */
	if (fz_model_bytes(cfg) <= (32u << 20)) {
		gpt2_model *m = NULL;
		CHECK(gpt2_model_new(&m, cfg, ST_DTYPE_BF16, err, sizeof err) == 0);
		int s, l;
		CHECK(gpt2_model_missing(m, &s, &l) == -1 && s == 0 && l == 0);
		gpt2_model_free(m);
	}
}

/* The Llama family's parser on the same text (tools/gpt2/llama_config.c). */
static void fz_llama_config(const char *text, size_t len)
{
	llama_config lc;
	char err[1024];
	err[0] = 0;
	int rc = llama_config_parse(&lc, text, len, "config.json", err,
	                            sizeof err);
	if (rc != 0) {
		CHECK(rc == -1);
		CHECK_MESSAGE(err);
		return;
	}
	CHECK(lc.vocab_size >= 1 && lc.hidden >= 1 && lc.layers >= 1 &&
	      lc.intermediate >= 1 && lc.heads >= 1 && lc.kv_heads >= 1 &&
	      lc.heads % lc.kv_heads == 0 && lc.head_dim >= 2 &&
	      lc.head_dim % 2 == 0 && lc.max_seq_len >= 1 && lc.rms_eps > 0 &&
	      lc.sliding_window >= 0 && lc.n_eos <= GPT2_MAX_EOS);
	float *f = malloc((size_t)lc.head_dim / 2 * sizeof *f);
	CHECK(f != NULL);
	llama_rope_inv_freq(&lc, f);
	for (int i = 0; i < lc.head_dim / 2; i++)
		CHECK(!isnan(f[i]) && f[i] >= 0);
	free(f);
}

/*
 * Input: config.json text; a NUL byte, if any, ends it and the rest is a
 * generation_config.json beside it (read through gpt2_config_load).
 */
static void fuzz_config(const unsigned char *data, size_t size)
{
	const char *text = (const char *)data;
	const unsigned char *nul = memchr(data, 0, size);
	size_t len = nul ? (size_t)(nul - data) : size;
	gpt2_config cfg;
	char err[1024];
	err[0] = 0;
	int rc = gpt2_config_parse(&cfg, text, len, "config.json", err,
	                           sizeof err);
	if (rc != 0) {
		CHECK(rc == -1);
		CHECK_MESSAGE(err);
	} else {
		fz_config_ok(&cfg);
	}
	fz_llama_config(text, len);
	if (!nul)
		return;
	char p[512];
	fz_write(fz_path(p, "config.json"), data, len);
	fz_write(fz_path(p, "generation_config.json"), nul + 1, size - len - 1);
	gpt2_config cfg2;
	err[0] = 0;
	int rc2 = gpt2_config_load(&cfg2, fz_dir, err, sizeof err);
	if (rc2 != 0) {
		CHECK(rc2 == -1);
		CHECK_MESSAGE(err);
		return;
	}
	/* What loads parsed; generation_config.json only changes eos. */
	CHECK(rc == 0);
	CHECK(cfg2.vocab_size == cfg.vocab_size &&
	      cfg2.num_layers == cfg.num_layers);
	fz_config_ok(&cfg2);
}

/* ---- llm.c checkpoints ------------------------------------------------------- */

/*
 * Mode bit 0 set: a checkpoint built from the input. The next 8 bytes pick
 * sizes small enough to run (some out of range: heads that do not divide
 * C, Vp < V, versions other than 3 and 5), then the file is grown to the
 * size its header implies, give or take (mode bits 1-2), filled with the
 * rest of the input repeated.
 */
static unsigned char *fz_llmc_build(const unsigned char *in, size_t n,
                                    int mode, size_t *len)
{
	unsigned char b[8] = {0};
	memcpy(b, in, n < 8 ? n : 8);
	in += n < 8 ? n : 8;
	n -= n < 8 ? n : 8;
	llmc_header h;
	memset(&h, 0, sizeof h);
	h.version = b[0] & 1 ? 5 : 3;
	if ((b[0] & 0x0e) == 0x0e)
		h.version = b[0] >> 4; /* sometimes a wrong one */
	h.vocab_size = 1 + b[1] % 200;
	h.max_seq_len = 1 + b[2] % 16;
	h.num_layers = 1 + b[3] % 3;
	h.num_heads = 1 + b[4] % 4;
	h.channels = h.num_heads * (1 + b[5] % 4) + (b[5] >= 250 ? 1 : 0);
	h.padded_vocab_size = b[6] < 128 ? llmc_pad_vocab(h.vocab_size)
	                      : h.vocab_size + (int)b[6] - 192;
	if (b[7] == 255)
		h.num_layers = 0;
	unsigned char hb[LLMC_HEADER_BYTES];
	llmc_header_encode(&h, hb);
	uint64_t want = llmc_file_size(&h);
	if (want > (8u << 20))
		want = 8u << 20;
	if (mode & 2)
		want += (mode & 4) ? 1 : (uint64_t)-1;
	if (want < 32)
		want = 32;
	unsigned char *f = malloc((size_t)want);
	CHECK(f != NULL);
	memcpy(f, hb, want < sizeof hb ? (size_t)want : sizeof hb);
	for (size_t i = sizeof hb; i < want; i++)
		f[i] = n ? in[(i - sizeof hb) % n] : (unsigned char)i;
	*len = (size_t)want;
	return f;
}

/* Input: a mode byte, then a whole .bin (bit 0 clear) or sizes and data. */
static void fuzz_llmc(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	unsigned char *built = NULL;
	size_t len = size;
	const unsigned char *file = data;
	if (mode & 1) {
		built = fz_llmc_build(data, size, mode, &len);
		file = built;
	}
	char bin[512], err[1024];
	fz_write(fz_path(bin, "model.bin"), file, len);

	/* The header alone, from memory, decides as llmc_open does. */
	llmc_header hm;
	err[0] = 0;
	int rc_mem = llmc_header_parse(&hm, file, len, "model.bin", err,
	                               sizeof err);
	if (rc_mem)
		CHECK_MESSAGE(err);
	llmc_reader *r = NULL;
	err[0] = 0;
	int rc = llmc_open(&r, bin, err, sizeof err);
	CHECK(rc == rc_mem);
	if (rc != 0) {
		CHECK(rc == -1 && r == NULL);
		CHECK_MESSAGE(err);
		free(built);
		return;
	}
	const llmc_header *h = &hm;
	CHECK(memcmp(llmc_reader_header(r), &hm, sizeof hm) == 0);
	CHECK(llmc_file_size(h) == len);
	gpt2_config cfg;
	llmc_header_config(h, &cfg);
	CHECK(gpt2_config_check(&cfg, err, sizeof err) == 0);

	/* Every slot reads back as the file's bytes; nothing past it. */
	st_dtype dt = llmc_reader_dtype(r);
	size_t es = st_dtype_bits(dt) / 8;
	CHECK(es == 4 || es == 2);
	uint64_t at = LLMC_HEADER_BYTES;
	unsigned char buf[4096];
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		uint64_t numel = llmc_slot_numel(h, s);
		CHECK(llmc_slot_offset(h, s) * es + LLMC_HEADER_BYTES == at);
		for (uint64_t off = 0; off < numel;) {
			size_t k = numel - off < sizeof buf / es
			                   ? (size_t)(numel - off) : sizeof buf / es;
			CHECK(llmc_read(r, s, off, buf, k, err, sizeof err) == 0);
			CHECK(memcmp(buf, file + at, k * es) == 0);
			at += k * es;
			off += k;
		}
		CHECK(llmc_read(r, s, numel, buf, 1, err, sizeof err) == -1);
		CHECK(llmc_read(r, s, UINT64_MAX, buf, 1, err, sizeof err) == -1);
		CHECK(llmc_read(r, s, 1, buf, (size_t)numel, err, sizeof err) == -1);
	}
	CHECK(at == len);
	llmc_close(r);

	/* A model from it runs. */
	gpt2_model *m = NULL;
	CHECK(gpt2_export_load_llmc(&m, bin, -1, err, sizeof err) == 0);
	int s, l;
	CHECK(gpt2_model_missing(m, &s, &l) == 0);
	gpt2_model_free(m);

	/*
	 * .bin -> snapshot -> .bin: the same values. The new file pads the
	 * vocabulary as llm.c does (any Vp >= V is read), with zeros, and its
	 * header words after the eighth are zero.
	 */
	char snap[512], back[512];
	fz_path(snap, "snap");
	fz_path(back, "back.bin");
	gpt2_export_opts o = {.dtype = -1};
	gpt2_export_result res;
	CHECK(gpt2_export_llmc_to_hf(bin, snap, &o, &res, err, sizeof err) == 0);
	CHECK(res.exact == 1 && (int)res.dst_dtype == (int)dt);
	CHECK(gpt2_export_hf_to_llmc(snap, back, &o, &res, err, sizeof err) == 0);
	llmc_header hb;
	llmc_header_from_config(&hb, &cfg, h->version);
	unsigned char want[LLMC_HEADER_BYTES];
	llmc_header_encode(&hb, want);
	size_t blen;
	unsigned char *bb = fz_get(back, &blen);
	CHECK(blen == llmc_file_size(&hb));
	CHECK(memcmp(bb, want, sizeof want) == 0);
	for (int slot = 0; slot < GPT2_NUM_SLOTS; slot++) {
		const unsigned char *a = file + LLMC_HEADER_BYTES +
		                         llmc_slot_offset(h, slot) * es;
		const unsigned char *b = bb + LLMC_HEADER_BYTES +
		                         llmc_slot_offset(&hb, slot) * es;
		size_t n = (size_t)llmc_slot_numel(&hb, slot) * es;
		size_t keep = slot == GPT2_WTE ? (size_t)cfg.vocab_size *
		                                 (size_t)cfg.channels * es : n;
		CHECK(memcmp(a, b, keep) == 0);
		for (size_t i = keep; i < n; i++)
			CHECK(b[i] == 0);
	}
	free(bb);
	fz_gpt2_cleanup();
	free(built);
}

/* ---- model snapshots --------------------------------------------------------- */

/*
 * The input's config.json, up to its first NUL (then *data and *size the
 * rest: the checkpoint), else dflt (the whole input the checkpoint),
 * written into the temporary folder.
 */
static void fz_write_config(const unsigned char **data, size_t *size, const char *dflt)
{
	const unsigned char *nul = memchr(*data, 0, *size);
	char p[512];
	if (!nul) {
		fz_write(fz_path(p, "config.json"), dflt, strlen(dflt));
		return;
	}
	size_t len = (size_t)(nul - *data);
	fz_write(fz_path(p, "config.json"), *data, len);
	*size -= len + 1;
	*data = nul + 1;
}

/* The config of testdata/gpt2/hand: the smallest GPT-2. */
static const char fz_hand_config[] =
	"{\"model_type\": \"gpt2\", \"vocab_size\": 2, \"n_positions\": 2, "
	"\"n_embd\": 2, \"n_layer\": 1, \"n_head\": 1}";

/*
 * Input: a mode byte, then a config.json ended by a NUL byte and the
 * checkpoint (without a NUL the whole input is the checkpoint beside the
 * config of testdata/gpt2/hand). Mode bit 0: the checkpoint is a
 * pytorch_model.bin instead of a model.safetensors; bits 1-2: the weight
 * dtype asked for (as stored, F32, BF16, F16).
 */
static void fuzz_model(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	fz_write_config(&data, &size, fz_hand_config);
	char p[512], err[1024];
	remove(fz_path(p, "model.safetensors"));
	remove(fz_path(p, "pytorch_model.bin"));
	fz_write(fz_path(p, mode & 1 ? "pytorch_model.bin" : "model.safetensors"),
	       data, size);
	static const int wdtypes[4] = {-1, ST_DTYPE_F32, ST_DTYPE_BF16,
	                               ST_DTYPE_F16};
	int wdtype = wdtypes[mode >> 1 & 3];
	gpt2_model *m = NULL;
	err[0] = 0;
	int rc = gpt2_model_load(&m, fz_dir, wdtype, err, sizeof err);
	if (rc != 0) {
		CHECK(rc == -1 && m == NULL);
		CHECK_MESSAGE(err);
		return;
	}
	int s, l;
	CHECK(gpt2_model_missing(m, &s, &l) == 0);
	gpt2_config cfg;
	CHECK(gpt2_config_load(&cfg, fz_dir, err, sizeof err) == 0);
	CHECK(memcmp(&cfg, &m->config, sizeof cfg) == 0);
	/* The file pays for the model: each parameter has bytes of its own
	 * there, at least half what it takes in memory (BF16 or F16 read as
	 * F32), plus the alignment of each slot. */
	CHECK(m->params_bytes <= 2 * (uint64_t)size + 64 * GPT2_NUM_SLOTS);

	/*
	 * What loads also exports (llm.c keeps only epsilon 1e-5), and the
	 * .bin gives the same logits: the values are carried exactly.
	 */
	if (cfg.layer_norm_eps == 1e-5f && wdtype == -1) {
		char bin[512];
		gpt2_export_opts o = {.dtype = -1};
		gpt2_export_result res;
		rc = gpt2_export_hf_to_llmc(fz_dir, fz_path(bin, "model.bin"), &o,
		                            &res, err, sizeof err);
		if (rc)
			fprintf(stderr, "loads but does not export: %s\n", err);
		CHECK(rc == 0);
		gpt2_model *b = NULL;
		CHECK(gpt2_export_load_llmc(&b, bin, -1, err, sizeof err) == 0);
		gpt2_export_diff d;
		CHECK(gpt2_export_compare(m, b, &d, err, sizeof err) == 0);
		CHECK(d.max_abs_diff == 0 && d.nonfinite == 0 && d.prompts >= 1);
		gpt2_model_free(b);
		remove(bin);
	}
	gpt2_model_free(m);
}

/* ---- Llama-family snapshots --------------------------------------------------- */

/* The config of tests/fuzz/make_llama_seeds.py's llama seed. */
static const char fz_llama_hand_config[] =
	"{\"model_type\": \"llama\", \"hidden_size\": 8, \"intermediate_size\": 12, "
	"\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"num_hidden_layers\": 1, "
	"\"vocab_size\": 16, \"max_position_embeddings\": 32, \"tie_word_embeddings\": true}";

/* Every stage the forward pass records: the prompt's rows, values that
 * can be read (ASan watches them). */
struct fz_stages {
	int T, n;
	float sum;
};

static void fz_stage(void *ctx, const char *name, int layer, const float *values, int rows,
                     size_t width, int heads)
{
	struct fz_stages *st = ctx;
	CHECK(name && name[0] && layer >= -1 && rows == st->T && width > 0);
	CHECK(heads >= 0 && (heads == 0 || width % (size_t)heads == 0));
	for (size_t i = 0; i < (size_t)rows * width; i++)
		st->sum += values[i] * 0.0f;
	st->n++;
}

/*
 * Input: a mode byte, then a config.json ended by a NUL byte and a
 * model.safetensors (without a NUL the whole input is the checkpoint,
 * beside fz_llama_hand_config). Mode bit 0: a prompt of 16 tokens (the
 * packed-panel matmul), else 1 + (bits 1-2) tokens (the dot products).
 */
static void fuzz_llama_model(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	fz_write_config(&data, &size, fz_llama_hand_config);
	char p[512], err[1024];
	fz_write(fz_path(p, "model.safetensors"), data, size);
	llama_model *m = NULL;
	err[0] = 0;
	int rc = llama_model_load(&m, fz_dir, err, sizeof err);
	if (rc != 0) {
		CHECK(rc == -1 && m == NULL);
		CHECK_MESSAGE(err);
		return;
	}
	int V = m->config.vocab_size, T = mode & 1 ? 16 : 1 + (mode >> 1 & 3);
	CHECK(V >= 1 && m->config.max_seq_len >= 1);
	if (T > m->config.max_seq_len)
		T = m->config.max_seq_len;
	int32_t ids[16];
	for (int t = 0; t < T; t++)
		ids[t] = (int32_t)((7 * t + 1) % V);
	float *all = malloc((size_t)T * (size_t)V * sizeof(float));
	float *last = malloc((size_t)V * sizeof(float));
	CHECK(all && last);
	const gpt2_kernels *dflt = m->kernels;
	for (int kt = 0; kt < 3; kt++) {
		const gpt2_kernels *k = gpt2_kernels_find(gpt2_kernel_names[kt]);
		if (!k)
			continue;
		m->kernels = k;
		llama_cache *c = NULL;
		CHECK(llama_cache_new(&c, m, T, err, sizeof err) == 0);
		struct fz_stages st = {T, 0, 0.0f};
		llama_cache_set_trace(c, fz_stage, &st);
		if (llama_forward(m, c, ids, T, all, 1, err, sizeof err) != 0) {
			fprintf(stderr, "loads but does not run: %s\n", err);
			CHECK(0);
		}
		CHECK(st.n > 0 && llama_cache_len(c) == T);
		llama_cache_free(c);
		/* The last token's logits alone: the same bits, where both go
		 * through the dot products (a prompt's head is a matmul). */
		if (T < 16) {
			c = NULL;
			CHECK(llama_cache_new(&c, m, T, err, sizeof err) == 0);
			CHECK(llama_forward(m, c, ids, T, last, 0, err, sizeof err) == 0);
			CHECK(memcmp(last, all + (size_t)(T - 1) * (size_t)V,
			             (size_t)V * sizeof(float)) == 0);
			llama_cache_free(c);
		}
	}
	m->kernels = dflt;
	free(all);
	free(last);
	llama_model_free(m);
}
