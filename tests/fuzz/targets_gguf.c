/*
 * targets_gguf.c - the fuzz target of libst's GGUF reader, shared by the
 * libFuzzer harness (fuzz.c with -DFUZZ_GGUF, built by build.sh) and the
 * corpus replay unit test (tests/check_gguf_fuzz_corpus.c), which both
 * #include this file.
 *
 *   fuzz_gguf  st_gguf_open_memory and st_gguf_check_memory must agree
 *              (opens <=> no error); every value of an accepted file, down
 *              to the last nested array element, lies inside the input;
 *              every key and tensor is found by its name; every tensor lies
 *              inside the data section, aligned, and the decodable ones
 *              decode (ASan watches the exact-size copy of the input);
 *              a file of a GPT-2 or Llama-family map gives a config.json,
 *              a generation_config.json and each tensor's HF name, or one
 *              line saying why not, and a GPT-2 one is written as a
 *              snapshot (every tensor there) or refused in one line,
 *              leaving nothing; a file with a tokenizer.ggml.model
 *              gives a tokenizer.json and tokenizer_config.json that are
 *              JSON objects, or one line saying why not.
 *
 * Input: a mode byte, then a whole file (bit 0 clear), or the bytes after
 * a version-3 header's magic and version (bit 0 set), so that the fuzzer
 * starts past the magic. With bit 1 set the file is also written to a
 * temporary file and opened by path (the mapping), with the same verdict,
 * and as a split set (st_gguf_open_set and st_gguf_check_set agree; a
 * file without split keys is a set of one).
 *
 * fuzz_hf_vocab (below): libst/hf_gguf_vocab.c's tokenizer.json reader.
 */
#include "internal.h"
#include "fuzz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

struct fz_gguf_counts {
	int errors;
};

static void fz_gguf_count(void *ctx, int severity, const char *msg)
{
	struct fz_gguf_counts *c = ctx;
	CHECK(msg != NULL && strchr(msg, '\n') == NULL);
	if (severity == ST_PROBLEM_ERROR)
		c->errors++;
}

static int fz_inside(const void *p, uint64_t n, const unsigned char *buf,
                     size_t len)
{
	const unsigned char *q = p;
	return q >= buf && q <= buf + len && n <= (uint64_t)(buf + len - q);
}

/* Walk a value; strings and raw arrays must lie inside the input. */
static void fz_gguf_walk(const st_gguf_value *v, const unsigned char *buf,
                         size_t len, int depth)
{
	if (v->type == ST_GGUF_STRING) {
		CHECK(fz_inside(v->v.s, v->n, buf, len));
		return;
	}
	if (v->type != ST_GGUF_ARRAY)
		return;
	CHECK(depth <= ST_GGUF_MAX_DEPTH);
	CHECK(v->elem_type >= 0 && v->elem_type < ST_GGUF_TYPE_COUNT);
	CHECK(v->n <= len);
	for (uint64_t i = 0; i < v->n; i++) {
		st_gguf_value e;
		st_gguf_array_get(v, i, &e);
		CHECK(e.type == v->elem_type);
		if (e.type == ST_GGUF_BOOL) /* any byte (ggml reads it) */
			CHECK(e.v.u <= 255);
		fz_gguf_walk(&e, buf, len, depth + 1);
	}
}

/* The same file through the path reader: the same verdict and tensors. */
static void fz_gguf_path(const unsigned char *buf, size_t size, int ok)
{
	char path[4096];
	const char *tmp = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/fz_gguf.%ld", tmp ? tmp : "/tmp",
	         (long)getpid());
	fz_write(path, buf, size);
	st_gguf *g = NULL;
	st_error err = {0};
	int rc = st_gguf_open(&g, path, &err);
	CHECK((rc == ST_OK) == ok);
	if (ok) {
		for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
			const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
			const unsigned char *p = st_gguf_tensor_data(g, i);
			unsigned char sum = 0;
			for (uint64_t j = 0; j < t->n_bytes; j++)
				sum = (unsigned char)(sum + p[j]);
			(void)sum;
		}
	}
	size_t n_single = ok ? st_gguf_n_tensors(g) : 0;
	st_gguf_close(g);
	/*
	 * As a split set (gguf_split.c): the file alone is the set when it has
	 * no split keys (or split.count 1); a part of more needs parts this
	 * name cannot give (it does not end in -0000k-of-0000N.gguf), so open
	 * and check refuse it alike, in one line each.
	 */
	st_gguf *s = NULL;
	int src = st_gguf_open_set(&s, path, &err);
	CHECK(src == ST_OK || src == ST_EFORMAT || src == ST_ENOMEM);
	struct fz_gguf_counts sc = {0};
	st_error serr = {0};
	int sn = st_gguf_check_set(path, fz_gguf_count, &sc, &serr);
	CHECK(sn == sc.errors);
	if (src != ST_ENOMEM)
		CHECK((src == ST_OK) == (sn == 0));
	if (!ok)
		CHECK(src != ST_OK);
	if (src == ST_OK) {
		CHECK(st_gguf_n_parts(s) == 1 && st_gguf_part(s, 0) == s);
		CHECK(st_gguf_n_tensors(s) == n_single);
	} else {
		CHECK(s == NULL && strchr(err.message, '\n') == NULL);
	}
	st_gguf_close(s);
	unlink(path);
}

static int fz_gguf_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/*
 * A gpt2 file written as a snapshot (gguf_hf_gpt2.c) into $TMPDIR: done,
 * or one line why not and no directory; what is written opens with every
 * tensor of the GGUF, each of as many elements.
 */
static void fz_gguf_gpt2_snapshot(const st_gguf *g)
{
	char dir[4096], model[4200];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/fz_gguf_gpt2.%ld", tmp ? tmp : "/tmp", (long)getpid());
	snprintf(model, sizeof model, "%s/model.safetensors", dir);
	st_error err = {0};
	unsigned lost = 0;
	int rc = st_gguf_write_snapshot(g, dir, ST_SNAPSHOT_REPLACE, NULL, NULL, NULL, &lost, &err);
	if (rc != ST_OK) {
		CHECK(rc == ST_EFORMAT || rc == ST_EUNSUPPORTED || rc == ST_ENOMEM);
		CHECK(strchr(err.message, '\n') == NULL && access(dir, F_OK) != 0);
		return;
	}
	st_file *f = NULL;
	CHECK(st_file_open(&f, model, 0, &err) == ST_OK);
	CHECK(st_file_n_tensors(f) == st_gguf_n_tensors(g));
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		char name[128];
		CHECK(st_gguf_hf_name(g, i, name, sizeof name, NULL, &err) == ST_OK);
		long j = st_file_find(f, name, strlen(name));
		CHECK(j >= 0 && st_file_tensor(f, (size_t)j)->n_elements == t->n_elements);
	}
	st_file_close(f);
	nftw(dir, fz_gguf_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* What a snapshot would say of the metadata (gguf_hf.c). */
static void fz_gguf_hf(const st_gguf *g)
{
	st_error err = {0};
	const char *arch;
	if (st_gguf_hf_arch(g, &arch, &err) != ST_OK) {
		CHECK(strchr(err.message, '\n') == NULL);
		return;
	}
	char *json = NULL;
	size_t len = 0;
	unsigned lost = 0;
	int rc = st_gguf_hf_config(g, ST_DTYPE_F32, &json, &len, &lost, &err);
	CHECK(rc == ST_OK || rc == ST_EFORMAT);
	CHECK(rc == ST_OK ? json && strlen(json) == len && json[len - 1] == '\n' : !json);
	free(json);
	json = NULL;
	rc = st_gguf_hf_generation_config(g, &json, &len, &err);
	CHECK(rc == ST_OK || rc == ST_EFORMAT);
	CHECK(rc == ST_OK ? json && strlen(json) == len : !json);
	free(json);
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		char name[128];
		int permute = -1;
		rc = st_gguf_hf_name(g, i, name, sizeof name, &permute, &err);
		CHECK(rc == ST_OK || rc == ST_ENOTFOUND || rc == ST_EFORMAT);
		if (rc == ST_OK)
			CHECK(strlen(name) < sizeof name && permute >= 0 && permute <= 2);
		else
			CHECK(strchr(err.message, '\n') == NULL);
	}
	if (!strcmp(arch, "gpt2"))
		fz_gguf_gpt2_snapshot(g);
}

/* A JSON object text of len bytes, NUL-terminated, ending in a newline. */
static void fz_gguf_json(const char *json, size_t len)
{
	CHECK(json && len && strlen(json) == len && json[len - 1] == '\n');
	struct st__json *root = st__json_parse(json, len);
	/* NULL only when memory ran out: the fuzzer's limit is far above it */
	CHECK(root != NULL && st__json_type(root) == ST__JSON_OBJECT);
	st__json_free(root);
}

/* The tokenizer files (gguf_tokenizer.c): valid JSON, or one line why not. */
static void fz_gguf_tokenizer(const st_gguf *g)
{
	st_error err = {0};
	char *json = NULL;
	size_t len = 0;
	int rc = st_gguf_hf_tokenizer(g, &json, &len, &err);
	CHECK(rc == ST_OK || rc == ST_ENOTFOUND || rc == ST_EUNSUPPORTED || rc == ST_EFORMAT);
	if (rc == ST_OK) {
		fz_gguf_json(json, len);
		struct st__json *root = st__json_parse(json, len);
		const struct st__json *model = st__json_get(root, "model");
		CHECK(st__json_type(st__json_get(model, "vocab")) == ST__JSON_OBJECT);
		CHECK(st__json_type(st__json_get(model, "merges")) == ST__JSON_ARRAY);
		st__json_free(root);
	} else {
		CHECK(!json && strchr(err.message, '\n') == NULL);
		CHECK(strncmp(err.message, "fuzz: ", 6) == 0 || rc == ST_ENOMEM);
	}
	free(json);
	json = NULL;
	int crc = st_gguf_hf_tokenizer_config(g, &json, &len, &err);
	/* the same keys read: the same verdict, but for what only one file
	 * holds (the merges, the chat template) */
	CHECK(crc == rc || ((rc == ST_OK || rc == ST_EFORMAT) &&
	                    (crc == ST_OK || crc == ST_EFORMAT)));
	if (crc == ST_OK)
		fz_gguf_json(json, len);
	else
		CHECK(!json && strchr(err.message, '\n') == NULL);
	free(json);
}

static void fz_gguf_file(const unsigned char *data, size_t size, int by_path)
{
	unsigned char *buf = malloc(size ? size : 1);
	CHECK(buf != NULL);
	memcpy(buf, data, size);
	st_gguf *g = NULL;
	st_error err = {0};
	int rc = st_gguf_open_memory(&g, buf, size, "fuzz", &err);
	struct fz_gguf_counts c = {0};
	int n = st_gguf_check_memory(buf, size, "fuzz", fz_gguf_count, &c);
	CHECK(n == c.errors);
	CHECK((rc == ST_OK) == (n == 0));
	if (by_path)
		fz_gguf_path(buf, size, rc == ST_OK);
	if (rc != ST_OK) {
		CHECK(g == NULL && rc == ST_EFORMAT);
		CHECK(strncmp(err.message, "fuzz: ", 6) == 0);
		free(buf);
		return;
	}
	CHECK(st_gguf_version(g) == 2 || st_gguf_version(g) == 3);
	uint64_t align = st_gguf_alignment(g);
	CHECK(align >= 1 && (align & (align - 1)) == 0);
	for (size_t i = 0; i < st_gguf_n_kv(g); i++) {
		const st_gguf_kv *kv = st_gguf_kv_at(g, i);
		CHECK(strlen(kv->key) <= kv->key_len); /* a NUL inside: warned */
		if (strlen(kv->key) == kv->key_len)
			CHECK(st_gguf_find_kv(g, kv->key) == (long)i);
		fz_gguf_walk(&kv->value, buf, size, 1);
	}
	uint64_t base = st_gguf_data_offset(g);
	CHECK(base % align == 0);
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		unsigned blk, bytes;
		if (st_ggml_type_block(t->type, &blk, &bytes) != ST_OK) {
			/* An unknown type: listed, no size, its start in the file. */
			CHECK(t->n_bytes == 0 && t->offset <= st_gguf_data_size(g));
			continue;
		}
		CHECK(t->ndim <= ST_GGUF_MAX_DIMS && t->dims[0] % blk == 0);
		CHECK(t->n_bytes == t->n_elements / blk * bytes);
		CHECK(t->offset % align == 0);
		if (strlen(t->name) == t->name_len)
			CHECK(st_gguf_find(g, t->name) == (long)i);
		const void *p = st_gguf_tensor_data(g, i);
		if (t->n_bytes) {
			CHECK(fz_inside(p, t->n_bytes, buf, size));
		}
		if (t->n_elements <= (1u << 16) && t->n_bytes) {
			float *f = malloc((size_t)t->n_elements * sizeof *f);
			CHECK(f != NULL);
			rc = st_ggml_to_f32(t->type, p, f, t->n_elements);
			CHECK(rc == ST_OK || rc == ST_EUNSUPPORTED);
			free(f);
		}
	}
	fz_gguf_hf(g);
	fz_gguf_tokenizer(g);
	st_gguf_close(g);
	free(buf);
}

static void fuzz_gguf(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	if (!(mode & 1)) {
		fz_gguf_file(data, size, mode & 2);
		return;
	}
	unsigned char *buf = malloc(size + 8);
	CHECK(buf != NULL);
	memcpy(buf, "GGUF\3\0\0\0", 8);
	memcpy(buf + 8, data, size);
	fz_gguf_file(buf, size + 8, mode & 2);
	free(buf);
}

/*
 * fuzz_hf_vocab  a tokenizer.json (and tokenizer_config.json) as GGUF
 *                tokenizer.ggml.* (libst/hf_gguf_vocab.c). Input: a mode
 *                byte (the vocab_size: 1 + mode * 2, so ids past it come
 *                up), a 16-bit length of the tokenizer_config.json text
 *                that follows, then the tokenizer.json text. Parses to
 *                ST_OK, ST_EFORMAT or ST_EUNSUPPORTED with one line naming
 *                the file; what parses has exactly vocab_size tokens, each
 *                a NUL-terminated string of its length, a known type,
 *                merges "a b", a pre name llama.cpp knows, special ids
 *                below vocab_size or -1; model "gpt2", or "llama" with
 *                scores and no merges (SentencePiece-style). A
 *                tokenizer_config.json text that starts "#version" is a
 *                merges.txt instead, and the rest GPT-2's vocab.json
 *                (st__hf_vocab_parse_pair): the same checks, pre "gpt-2".
 */
static void fuzz_hf_vocab(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0 || size < 2)
		return;
	size_t clen = (size_t)data[0] | (size_t)data[1] << 8;
	data += 2, size -= 2;
	if (clen > size)
		clen = size;
	uint64_t n = 1 + (uint64_t)mode * 2;
	struct st__hf_vocab v;
	st_error err;
	const char *cfg = clen ? (const char *)data : NULL;
	int pair = clen >= 8 && !memcmp(cfg, "#version", 8);
	int rc = pair ? st__hf_vocab_parse_pair(&v, (const char *)data + clen, size - clen, cfg,
	                                        clen, n, "vocab.json", "merges.txt", &err)
	              : st__hf_vocab_parse(&v, (const char *)data + clen, size - clen, cfg, clen,
	                                   n, "tokenizer.json", &err);
	if (rc != ST_OK) {
		CHECK(rc == ST_EFORMAT || rc == ST_EUNSUPPORTED);
		CHECK(strchr(err.message, '\n') == NULL &&
		      (strncmp(err.message, "tokenizer.json: ", 16) == 0 ||
		       (pair && (strncmp(err.message, "vocab.json: ", 12) == 0 ||
		                 strncmp(err.message, "merges.txt: ", 12) == 0))));
		CHECK(v.tokens == NULL && v.n == 0);
		st__hf_vocab_free(&v);
		return;
	}
	CHECK(v.n == n && v.pre && st_gguf_pre_find(v.pre, strlen(v.pre)));
	CHECK(v.model && (!strcmp(v.model, "gpt2") ? !v.scores : !strcmp(v.model, "llama") &&
	                                                            v.scores && !v.n_merges));
	for (uint64_t i = 0; i < n; i++) {
		const st_gguf_value *t = &v.tokens[i];
		CHECK(t->type == ST_GGUF_STRING && t->v.s && strlen(t->v.s) == t->n);
		unsigned type = v.types[i * 4];
		CHECK(v.types[i * 4 + 1] == 0 && v.types[i * 4 + 2] == 0 && v.types[i * 4 + 3] == 0);
		CHECK(type == 1 || type == 3 || type == 4 || type == 5 || type == 6);
	}
	for (size_t i = 0; i < v.n_merges; i++) {
		const st_gguf_value *m = &v.merges[i];
		CHECK(m->type == ST_GGUF_STRING && memchr(m->v.s, ' ', (size_t)m->n));
		CHECK(!pair || strlen(m->v.s) == m->n);
	}
	long long ids[] = {v.bos, v.eos, v.pad, v.unk};
	for (size_t i = 0; i < 4; i++)
		CHECK(ids[i] >= -1 && ids[i] < (long long)n);
	CHECK(v.add_bos >= -1 && v.add_bos <= 1 && v.add_eos >= -1 && v.add_eos <= 1);
	st__hf_vocab_free(&v);
}
