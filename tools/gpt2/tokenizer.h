/*
 * tokenizer.h - BPE tokenizers giving the same ids as Hugging Face
 * `tokenizers` on any input: byte-level (GPT-2; Llama 3 and Qwen2 with
 * their Split patterns, run on Oniguruma as there, or for these three
 * patterns by hand-written scans that give the same pieces) and
 * SentencePiece-style
 * (Llama 2, Mistral: the U+2581 space, <0xNN> byte fallback), loaded from
 * tokenizer.json (+ tokenizer_config.json), vocab.json + merges.txt, or a
 * GGUF file's tokenizer.ggml.* metadata. Internal to the tools (gpt2run,
 * gpt2export); not part of libst. Not WordPiece or Unigram.
 *
 * Recipe:
 *   1. gpt2_tokenizer_open(&t, "snapshot/" or "tokenizer.json" or
 *      "model.gguf", err, sizeof err)  (gpt2_tokenizer_load: a folder)
 *   2. gpt2_tokenizer_encode(t, text, len, GPT2_ENCODE_ADD_SPECIAL, &ids, &n,
 *      &n_replaced); free(ids)  (flags 0: no BOS, as llama.cpp's test
 *      cases and add_special_tokens=False)
 *   3. to print ids as text: gpt2_tokenizer_token_bytes() for each id,
 *      through a gpt2_decoder so that a UTF-8 character split across
 *      tokens comes out whole
 *   4. gpt2_tokenizer_free(t)
 *
 * The library never prints: a caller reports err, and warns once when
 * n_replaced is not 0.
 */
#ifndef ST_GPT2_TOKENIZER_H
#define ST_GPT2_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpt2_tokenizer gpt2_tokenizer;

/*
 * Load from a snapshot directory: tokenizer.json if present, else
 * vocab.json + merges.txt (then "<|endoftext|>" is registered as a special
 * token, as transformers does: with its id in the vocabulary, or the next
 * free id when the vocabulary lacks it). Added tokens take the ids Hugging
 * Face gives them, which are the ids its own files list.
 * Returns 0 and sets *out (free it with gpt2_tokenizer_free), or -1 with a
 * one-line message naming the file in err (errlen bytes, may be 0).
 */
int gpt2_tokenizer_load(gpt2_tokenizer **out, const char *dir, char *err, size_t errlen);

/*
 * Load from PATH: a tokenizer.json (with the tokenizer_config.json beside
 * it, when there is one), a snapshot directory (as gpt2_tokenizer_load,
 * plus its tokenizer_config.json), or a .gguf file (its tokenizer.ggml.*
 * metadata: model gpt2 with merges and the pre-tokenizer that
 * tokenizer.ggml.pre names, or llama with scores). Same returns.
 */
int gpt2_tokenizer_open(gpt2_tokenizer **out, const char *path, char *err, size_t errlen);

/* Load from explicit files; merges_txt is NULL for a tokenizer.json. */
int gpt2_tokenizer_load_files(gpt2_tokenizer **out, const char *json_path,
                              const char *merges_txt, char *err, size_t errlen);

/* Free everything; NULL does nothing. */
void gpt2_tokenizer_free(gpt2_tokenizer *t);

/* Number of ids: the largest id plus one (50257 for GPT-2). */
int gpt2_tokenizer_vocab_size(const gpt2_tokenizer *t);

/* The id of "<|endoftext|>", or -1 when the vocabulary lacks it. */
int gpt2_tokenizer_eot(const gpt2_tokenizer *t);

/*
 * The BOS and EOS ids the files name (a GGUF's bos/eos_token_id, the
 * post-processor's template, tokenizer_config.json's bos/eos_token), or
 * -1; *added (when not NULL) gets whether GPT2_ENCODE_ADD_SPECIAL adds it.
 */
int gpt2_tokenizer_bos(const gpt2_tokenizer *t, int *added);
int gpt2_tokenizer_eos(const gpt2_tokenizer *t, int *added);

enum {
	/* Plain GPT-2 (OpenAI encoder.py, tiktoken encode_ordinary): added
	 * special tokens found in the text are not split out, so
	 * "<|endoftext|>" becomes 27 91 437 1659 5239 91 29. */
	GPT2_ENCODE_NO_SPECIAL = 1,
	/* Add the special tokens the post-processor's template or
	 * tokenizer_config.json's add_bos_token / add_eos_token ask for
	 * (Hugging Face's add_special_tokens=True, its default); GPT-2
	 * adds none. */
	GPT2_ENCODE_ADD_SPECIAL = 2
};

/*
 * Encode len bytes of text (any bytes, NUL included). Invalid UTF-8 is
 * first replaced by U+FFFD exactly as Python's
 * bytes.decode('utf-8', 'replace') does; *n_replaced (when not NULL) gets
 * the number of replacements. Unless flags has GPT2_ENCODE_NO_SPECIAL,
 * added tokens ("<|endoftext|>") in the text become their id and split the
 * text around them, as Hugging Face does.
 * *ids is malloc'd (the caller frees it, also when *n is 0; it may be
 * NULL then). Returns 0, or -1 with a message on allocation failure
 * (*ids NULL, *n 0).
 * A tokenizer is not thread-safe: encode uses a cache inside it.
 */
int gpt2_tokenizer_encode(gpt2_tokenizer *t, const char *text, size_t len, unsigned flags,
                          int32_t **ids, size_t *n, size_t *n_replaced, char *err,
                          size_t errlen);

/*
 * The bytes of one id (not NUL-terminated), valid until
 * gpt2_tokenizer_free; NULL for an invalid id (negative, too large, or a
 * hole in the vocabulary). Added tokens give their text ("<|endoftext|>").
 * A SentencePiece-style token gives its text with each U+2581 as a space,
 * a <0xNN> token its byte; the one space in front of a decoded text that
 * Hugging Face's Strip decoder takes off is left to the caller.
 */
const char *gpt2_tokenizer_token_bytes(const gpt2_tokenizer *t, int32_t id, size_t *len);

/*
 * Decode ids into one malloc'd buffer (*out, *out_len; NUL-terminated for
 * convenience, the caller frees it). Returns 0, or -1 with a message: an
 * invalid id (its index also goes to *bad_index when not NULL; *bad_index
 * is SIZE_MAX after an allocation failure).
 */
int gpt2_tokenizer_decode(const gpt2_tokenizer *t, const int32_t *ids, size_t n,
                          char **out, size_t *out_len, size_t *bad_index, char *err,
                          size_t errlen);

/*
 * Streaming decoder: zero-initialise it (gpt2_decoder d = {0}), push each
 * token's bytes, get back the bytes that form complete UTF-8 characters.
 * out must hold len + 4 bytes. An incomplete trailing sequence (a lead
 * byte and the continuation bytes that may still complete it) is held
 * until the next push; bytes that can never form a character pass through
 * unchanged, so the concatenated output is exactly the input bytes.
 * flush returns what is held (at most 3 bytes; out must hold 4).
 */
typedef struct gpt2_decoder {
	unsigned char pending[4];
	size_t n_pending;
} gpt2_decoder;
size_t gpt2_decoder_push(gpt2_decoder *d, const char *bytes, size_t len, char *out);
size_t gpt2_decoder_flush(gpt2_decoder *d, char *out);

/*
 * Replace invalid UTF-8 in src (len bytes) as Python's
 * bytes.decode('utf-8', 'replace') does. Returns the number of
 * replacements; when it is not 0, *dst gets a malloc'd copy (the caller
 * frees it) of *dst_len bytes, else *dst is NULL. Returns (size_t)-1 on
 * allocation failure.
 */
size_t gpt2_utf8_sanitize(const char *src, size_t len, char **dst, size_t *dst_len);

#endif
