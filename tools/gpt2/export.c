/*
 * export.c - gpt2export's conversions between llm.c checkpoints and
 * Hugging Face GPT-2 snapshots, random snapshots, and the logits check.
 *
 * This file moves values; it never changes one except by the dtype
 * conversion asked for (st_convert: round to nearest even, exact widening).
 * The name table, the config parser and the loader are gpt2.c's; the .bin
 * format is llmc.c's. Memory: about one tensor (the largest layer matrix,
 * which must be whole to be transposed), whatever the model's size.
 *
 * Dimension letters: V vocabulary, Vp padded vocabulary, P context, L
 * layers, C channels.
 */
#include "gpt2/export.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.h"
#include "gpt2/internal.h"
#include "gpt2/llmc.h"

static void warnf(const gpt2_export_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warnf(const gpt2_export_opts *o, const char *fmt, ...)
{
	if (!o->warn)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	o->warn(o->warn_ctx, msg);
}

/* Stop when asked to (a signal): the caller's cleanup removes temporaries. */
static int cancelled(const gpt2_export_opts *o, char *err, size_t errlen)
{
	if (o->cancel && *o->cancel)
		return gpt2_err(err, errlen, "interrupted");
	return 0;
}

/* Elements converted per chunk when no transpose needs the whole tensor. */
#define CHUNK ((size_t)1 << 16)

static size_t esize(st_dtype t)
{
	return st_dtype_bits(t) / 8;
}

static const char *torch_dtype_name(st_dtype t)
{
	switch (t) {
	case ST_DTYPE_BF16: return "bfloat16";
	case ST_DTYPE_F16: return "float16";
	case ST_DTYPE_F64: return "float64";
	default: return "float32";
	}
}

/* A conversion that changes no value: the same type, or a widening. */
static int exact_conversion(st_dtype src, st_dtype dst)
{
	return src == dst || (dst == ST_DTYPE_F32 && (src == ST_DTYPE_BF16 ||
	                                              src == ST_DTYPE_F16)) ||
	       (dst == ST_DTYPE_F64 && src != ST_DTYPE_F64);
}

/*
 * dst (cols x rows) = src (rows x cols) transposed, elements of es bytes;
 * in 32 x 32 blocks so both sides stay in cache.
 */
static void transpose(void *dst, const void *src, size_t rows, size_t cols,
                      size_t es)
{
	const char *s = src;
	char *d = dst;
	enum { B = 32 };
	for (size_t r0 = 0; r0 < rows; r0 += B) {
		size_t r1 = r0 + B < rows ? r0 + B : rows;
		for (size_t c0 = 0; c0 < cols; c0 += B) {
			size_t c1 = c0 + B < cols ? c0 + B : cols;
			for (size_t r = r0; r < r1; r++)
				for (size_t c = c0; c < c1; c++)
					memcpy(d + (c * rows + r) * es,
					       s + (r * cols + c) * es, es);
		}
	}
}

/* The largest per-layer Conv1D matrix, in elements (4C x C). */
static size_t max_matrix_numel(const gpt2_config *cfg)
{
	size_t n = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		if (!gpt2_param(s)->conv1d)
			continue;
		size_t k = (size_t)gpt2_param_numel(cfg, s);
		if (k > n)
			n = k;
	}
	return n > CHUNK ? n : CHUNK;
}

/* ---- JSON files ---------------------------------------------------------- */

int gpt2_export_config_json(char *buf, size_t size, const gpt2_config *cfg,
                            st_dtype dtype)
{
	/*
	 * Every key transformers' GPT2Config.save_pretrained writes for a
	 * GPT2LMHeadModel (to_json_string: indent 2, sort_keys, newline),
	 * plus n_ctx, which older configs and tools still read. Keys that
	 * equal PretrainedConfig's defaults (tie_word_embeddings...) are left
	 * out, as transformers leaves them out.
	 */
	int n = snprintf(buf, size,
		"{\n"
		"  \"activation_function\": \"gelu_new\",\n"
		"  \"architectures\": [\n"
		"    \"GPT2LMHeadModel\"\n"
		"  ],\n"
		"  \"attn_pdrop\": 0.1,\n"
		"  \"bos_token_id\": %d,\n"
		"  \"embd_pdrop\": 0.1,\n"
		"  \"eos_token_id\": %d,\n"
		"  \"initializer_range\": 0.02,\n"
		"  \"layer_norm_epsilon\": 1e-05,\n"
		"  \"model_type\": \"gpt2\",\n"
		"  \"n_ctx\": %d,\n"
		"  \"n_embd\": %d,\n"
		"  \"n_head\": %d,\n"
		"  \"n_inner\": null,\n"
		"  \"n_layer\": %d,\n"
		"  \"n_positions\": %d,\n"
		"  \"reorder_and_upcast_attn\": false,\n"
		"  \"resid_pdrop\": 0.1,\n"
		"  \"scale_attn_by_inverse_layer_idx\": false,\n"
		"  \"scale_attn_weights\": true,\n"
		"  \"summary_activation\": null,\n"
		"  \"summary_first_dropout\": 0.1,\n"
		"  \"summary_proj_to_labels\": true,\n"
		"  \"summary_type\": \"cls_index\",\n"
		"  \"summary_use_proj\": true,\n"
		"  \"torch_dtype\": \"%s\",\n"
		"  \"transformers_version\": \"%s\",\n"
		"  \"use_cache\": true,\n"
		"  \"vocab_size\": %d\n"
		"}\n",
		GPT2_EXPORT_EOT, GPT2_EXPORT_EOT, cfg->max_seq_len, cfg->channels,
		cfg->num_heads, cfg->num_layers, cfg->max_seq_len,
		torch_dtype_name(dtype), GPT2_EXPORT_TRANSFORMERS_VERSION,
		cfg->vocab_size);
	return n < 0 || (size_t)n >= size ? -1 : n;
}

int gpt2_export_generation_config_json(char *buf, size_t size)
{
	/* GenerationConfig.from_model_config, as save_pretrained writes it. */
	int n = snprintf(buf, size,
		"{\n"
		"  \"_from_model_config\": true,\n"
		"  \"bos_token_id\": %d,\n"
		"  \"eos_token_id\": %d,\n"
		"  \"transformers_version\": \"%s\"\n"
		"}\n",
		GPT2_EXPORT_EOT, GPT2_EXPORT_EOT,
		GPT2_EXPORT_TRANSFORMERS_VERSION);
	return n < 0 || (size_t)n >= size ? -1 : n;
}

static int write_small_file(const char *path, const char *data, size_t n,
                            char *err, size_t errlen)
{
	llmc_outfile *f;
	if (llmc_outfile_open(&f, path, err, errlen))
		return -1;
	if (llmc_outfile_write(f, data, n, err, errlen)) {
		llmc_outfile_abort(f);
		return -1;
	}
	return llmc_outfile_commit(f, err, errlen);
}

/* Copy src to dst (atomically), 64 KiB at a time. */
static int copy_file(const char *src, const char *dst, char *err,
                     size_t errlen)
{
	FILE *in = fopen(src, "rb");
	if (!in)
		return gpt2_err(err, errlen, "%s: %s", src, strerror(errno));
	llmc_outfile *f;
	if (llmc_outfile_open(&f, dst, err, errlen)) {
		fclose(in);
		return -1;
	}
	char *buf = malloc(1 << 16);
	int rc = buf ? 0 : gpt2_err(err, errlen, "%s: out of memory", dst);
	size_t n;
	while (!rc && (n = fread(buf, 1, 1 << 16, in)) > 0)
		rc = llmc_outfile_write(f, buf, n, err, errlen);
	if (!rc && ferror(in))
		rc = gpt2_err(err, errlen, "%s: read error", src);
	free(buf);
	fclose(in);
	if (rc) {
		llmc_outfile_abort(f);
		return -1;
	}
	return llmc_outfile_commit(f, err, errlen);
}

/* The tokenizer files a GPT-2 snapshot carries, as transformers saves them. */
static const char *const tokenizer_files[] = {
	"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
	"special_tokens_map.json",
};
#define N_TOKENIZER_FILES (sizeof tokenizer_files / sizeof tokenizer_files[0])

static int copy_tokenizer(const char *from, const char *dir, char *err,
                          size_t errlen)
{
	char src[4096], dst[4096];
	int have[N_TOKENIZER_FILES];
	for (size_t i = 0; i < N_TOKENIZER_FILES; i++) {
		if (gpt2_join(src, sizeof src, from, tokenizer_files[i], err, errlen))
			return -1;
		have[i] = access(src, R_OK) == 0;
	}
	/* tokenizer.json alone, or vocab.json with merges.txt, is loadable. */
	if (!have[0] && !(have[1] && have[2]))
		return gpt2_err(err, errlen,
		                "%s: no GPT-2 tokenizer files here (tokenizer.json, "
		                "or vocab.json and merges.txt)", from);
	for (size_t i = 0; i < N_TOKENIZER_FILES; i++) {
		if (!have[i])
			continue;
		if (gpt2_join(src, sizeof src, from, tokenizer_files[i], err, errlen) ||
		    gpt2_join(dst, sizeof dst, dir, tokenizer_files[i], err, errlen) ||
		    copy_file(src, dst, err, errlen))
			return -1;
	}
	return 0;
}

/* ---- the snapshot folder --------------------------------------------------- */

/*
 * Where a snapshot is written: a new folder is built under a temporary
 * name beside OUT and renamed to OUT at the end, so OUT appears complete
 * or not at all; an existing folder is written into, file by file, each
 * file atomically.
 */
typedef struct snapshot_out {
	char final[4096];
	char work[4096];
	int fresh;
} snapshot_out;

static int snapshot_begin(snapshot_out *s, const char *out, char *err,
                          size_t errlen)
{
	memset(s, 0, sizeof *s);
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		n--;
	if (n == 0 || n >= sizeof s->final - 32)
		return gpt2_err(err, errlen, "'%s': not a usable output folder name",
		                out);
	memcpy(s->final, out, n);
	s->final[n] = '\0';
	struct stat sb;
	if (stat(s->final, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode))
			return gpt2_err(err, errlen,
			                "%s: exists and is not a folder", s->final);
		snprintf(s->work, sizeof s->work, "%s", s->final);
		return 0;
	}
	if (errno != ENOENT)
		return gpt2_err(err, errlen, "%s: %s", s->final, strerror(errno));
	const char *slash = strrchr(s->final, '/');
	size_t dlen = slash ? (size_t)(slash - s->final) + 1 : 0;
	for (int attempt = 0; attempt < 100; attempt++) {
		unsigned char rnd[4];
		if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
			uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15u +
			             (uint64_t)attempt;
			memcpy(rnd, &x, sizeof rnd);
		}
		int k = snprintf(s->work, sizeof s->work,
		                 "%.*s.%s.tmp-%02x%02x%02x%02x", (int)dlen,
		                 s->final, s->final + dlen, rnd[0], rnd[1], rnd[2],
		                 rnd[3]);
		if (k < 0 || (size_t)k >= sizeof s->work)
			return gpt2_err(err, errlen, "%s: path too long", s->final);
		if (mkdir(s->work, 0777) == 0) {
			s->fresh = 1;
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	return gpt2_err(err, errlen, "%s: cannot create a temporary folder "
	                "beside it: %s", s->final, strerror(errno));
}

/* After a failure: a temporary folder is removed with what it holds. */
static void snapshot_abort(snapshot_out *s)
{
	if (!s->fresh)
		return;
	DIR *d = opendir(s->work);
	if (d) {
		struct dirent *e;
		char p[4096 + 256];
		while ((e = readdir(d)) != NULL) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(p, sizeof p, "%s/%s", s->work, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(s->work);
}

/* "model-00001-of-00002.safetensors": a shard of an earlier save. */
static int is_shard_name(const char *name)
{
	unsigned a, b;
	char tail[32];
	int len = 0;
	return strlen(name) == 32 &&
	       sscanf(name, "model-%5u-of-%5u%n", &a, &b, &len) == 2 &&
	       len == 20 && sscanf(name + 20, "%31s", tail) == 1 &&
	       strcmp(tail, ".safetensors") == 0;
}

static int snapshot_commit(snapshot_out *s, char *err, size_t errlen)
{
	if (s->fresh) {
		if (rename(s->work, s->final) != 0) {
			int e = errno;
			snapshot_abort(s);
			return gpt2_err(err, errlen, "%s: cannot rename the finished "
			                "temporary folder into place: %s", s->final,
			                strerror(e));
		}
		return 0;
	}
	/*
	 * An earlier sharded save in the same folder would shadow the new
	 * model.safetensors (loaders prefer the index), so it goes, as
	 * save_pretrained removes stale shards.
	 */
	DIR *d = opendir(s->work);
	if (!d)
		return 0;
	struct dirent *e;
	char p[4096 + 256];
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, "model.safetensors.index.json") == 0 ||
		    is_shard_name(e->d_name)) {
			snprintf(p, sizeof p, "%s/%s", s->work, e->d_name);
			unlink(p);
		}
	}
	closedir(d);
	return 0;
}

/* config.json, generation_config.json and the tokenizer files. */
static int snapshot_write_extras(snapshot_out *s, const gpt2_config *cfg,
                                 st_dtype dtype, const gpt2_export_opts *o,
                                 char *err, size_t errlen)
{
	char path[4096 + 64], json[4096];
	int n = gpt2_export_config_json(json, sizeof json, cfg, dtype);
	if (n < 0 || gpt2_join(path, sizeof path, s->work, "config.json", err, errlen) ||
	    write_small_file(path, json, (size_t)n, err, errlen))
		return -1;
	n = gpt2_export_generation_config_json(json, sizeof json);
	if (n < 0 ||
	    gpt2_join(path, sizeof path, s->work, "generation_config.json", err,
	              errlen) ||
	    write_small_file(path, json, (size_t)n, err, errlen))
		return -1;
	if (o->tokenizer_dir &&
	    copy_tokenizer(o->tokenizer_dir, s->work, err, errlen))
		return -1;
	return 0;
}

/*
 * Declare the HF tensors of cfg to a new writer, in the table's order
 * (the writer sorts them canonically).
 */
static int declare_tensors(st_writer **out, const gpt2_config *cfg,
                           st_dtype dtype, char *err, size_t errlen)
{
	st_writer *w;
	st_error e;
	if (st_writer_new(&w, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		int nl = gpt2_param(s)->per_layer ? cfg->num_layers : 1;
		for (int l = 0; l < nl; l++) {
			char name[128];
			uint64_t shape[2];
			size_t len = gpt2_param_name(s, l, name, sizeof name);
			int nd = gpt2_param_shape(cfg, s, shape);
			if (st_writer_add(w, name, len, dtype, (unsigned)nd, shape,
			                  &e) != ST_OK) {
				st_writer_free(w);
				return gpt2_err(err, errlen, "%s", e.message);
			}
		}
	}
	*out = w;
	return 0;
}

/* Which slot and layer a tensor the writer declared is. */
static void writer_slot(const gpt2_config *cfg, const st_tensor *t,
                        int *slot, int *layer)
{
	*slot = 0;
	*layer = 0;
	enum gpt2_name_kind k = gpt2_name_lookup(cfg, t->name, t->name_len,
	                                         slot, layer);
	/* declare_tensors made every name from the table. */
	assert(k == GPT2_NAME_PARAM);
	(void)k;
}

/* ---- llm.c -> HF --------------------------------------------------------- */

/* Warn when the padding rows V..Vp-1 of wte are not all zero. */
static int check_padding(llmc_reader *r, void *buf, const gpt2_export_opts *o,
                         char *err, size_t errlen)
{
	const llmc_header *h = llmc_reader_header(r);
	uint64_t C = (uint64_t)h->channels;
	uint64_t begin = (uint64_t)h->vocab_size * C;
	uint64_t end = (uint64_t)h->padded_vocab_size * C;
	size_t es = esize(llmc_reader_dtype(r));
	for (uint64_t off = begin; off < end;) {
		size_t n = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
		if (llmc_read(r, GPT2_WTE, off, buf, n, err, errlen))
			return -1;
		const unsigned char *b = buf;
		for (size_t i = 0; i < n * es; i++) {
			if (b[i] != 0) {
				uint64_t at = off + i / es;
				warnf(o, "%s: padding row %llu of wte (rows %ld..%ld pad "
				      "V = %ld to Vp = %ld) is not zero; the snapshot "
				      "drops it, so a .bin made back from it holds "
				      "zeros there", llmc_reader_path(r),
				      (unsigned long long)(at / C),
				      (long)h->vocab_size, (long)h->padded_vocab_size - 1,
				      (long)h->vocab_size, (long)h->padded_vocab_size);
				return 0;
			}
		}
		off += n;
	}
	return 0;
}

int gpt2_export_llmc_to_hf(const char *in, const char *out_dir,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	llmc_reader *r;
	if (llmc_open(&r, in, err, errlen))
		return -1;
	const llmc_header *h = llmc_reader_header(r);
	gpt2_config cfg;
	llmc_header_config(h, &cfg);
	st_dtype src = llmc_reader_dtype(r);
	st_dtype dst = o->dtype >= 0 ? (st_dtype)o->dtype : src;
	if (dst != ST_DTYPE_F32 && dst != ST_DTYPE_BF16 && dst != ST_DTYPE_F16) {
		llmc_close(r);
		return gpt2_err(err, errlen, "a snapshot is written as F32, BF16 or "
		                "F16, not %s", st_dtype_name(dst));
	}
	memset(res, 0, sizeof *res);
	res->src_dtype = (int)src;
	res->dst_dtype = dst;
	res->exact = exact_conversion(src, dst);

	size_t maxn = max_matrix_numel(&cfg);
	void *a = malloc(maxn * 4), *b = malloc(maxn * 4), *c = malloc(maxn * 4);
	st_writer *w = NULL;
	snapshot_out snap;
	int rc = -1, snap_open = 0;
	st_error e;
	cli_progress prog;
	memset(&prog, 0, sizeof prog);
	if (!a || !b || !c) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (check_padding(r, a, o, err, errlen) ||
	    declare_tensors(&w, &cfg, dst, err, errlen) ||
	    snapshot_begin(&snap, out_dir, err, errlen))
		goto out;
	snap_open = 1;

	char path[4096 + 64];
	if (gpt2_join(path, sizeof path, snap.work, "model.safetensors", err, errlen))
		goto out;
	if (st_writer_open(w, path, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message);
		goto out;
	}
	uint64_t total = 0;
	size_t nt = st_writer_n_tensors(w);
	for (size_t i = 0; i < nt; i++)
		total += st_writer_tensor(w, i)->n_bytes;
	if (o->progress)
		cli_progress_start(&prog, "exporting", total);

	/* Each tensor in the writer's order, read from where llm.c put it. */
	for (size_t i = 0; i < nt; i++) {
		const st_tensor *t = st_writer_tensor(w, i);
		int slot, layer;
		writer_slot(&cfg, t, &slot, &layer);
		const gpt2_param_info *p = gpt2_param(slot);
		size_t n = (size_t)t->n_elements;
		uint64_t base = p->per_layer ? (uint64_t)layer * n : 0;
		if (cancelled(o, err, errlen))
			goto out;
		if (p->conv1d) {
			/* llm.c's [out, in] -> HF's [in, out]. */
			if (llmc_read(r, slot, base, a, n, err, errlen))
				goto out;
			transpose(b, a, (size_t)t->shape[1], (size_t)t->shape[0],
			          esize(src));
			st_convert(dst, c, src, b, n, NULL);
			if (st_writer_write(w, c, n * esize(dst), &e) != ST_OK) {
				gpt2_err(err, errlen, "%s", e.message);
				goto out;
			}
		} else {
			/* wte: the first V rows only; the padding stays behind. */
			for (size_t off = 0; off < n; off += CHUNK) {
				size_t k = n - off < CHUNK ? n - off : CHUNK;
				if (cancelled(o, err, errlen) ||
				    llmc_read(r, slot, base + off, a, k, err, errlen))
					goto out;
				st_convert(dst, c, src, a, k, NULL);
				if (st_writer_write(w, c, k * esize(dst), &e) != ST_OK) {
					gpt2_err(err, errlen, "%s", e.message);
					goto out;
				}
			}
		}
		res->parameters += n;
		cli_progress_add(&prog, t->n_bytes);
	}
	if (st_writer_finish(w, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message);
		goto out;
	}
	if (snapshot_write_extras(&snap, &cfg, dst, o, err, errlen))
		goto out;
	snap_open = 0; /* committed or, on failure, cleaned up by commit */
	if (snapshot_commit(&snap, err, errlen))
		goto out;
	rc = 0;
out:
	cli_progress_done(&prog);
	st_writer_free(w);
	if (snap_open)
		snapshot_abort(&snap);
	free(a);
	free(b);
	free(c);
	llmc_close(r);
	return rc;
}

/* ---- HF -> llm.c --------------------------------------------------------- */

int gpt2_export_hf_to_llmc(const char *in, const char *out,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	char dir[4096];
	gpt2_config cfg;
	if (gpt2_config_dir(in, dir, sizeof dir, err, errlen) ||
	    gpt2_config_load(&cfg, dir, err, errlen))
		return -1;
	/* llm.c's layernorm hardcodes its epsilon. */
	if (cfg.layer_norm_eps != 1e-5f) {
		char path[4096 + 16];
		if (gpt2_join(path, sizeof path, dir, "config.json", err, errlen))
			return -1;
		return gpt2_err(err, errlen,
		                "%s: layer_norm_epsilon %g cannot be kept in an "
		                "llm.c checkpoint (llm.c always uses 1e-05)", path,
		                (double)cfg.layer_norm_eps);
	}
	st_checkpoint *ck;
	st_error e;
	memset(&e, 0, sizeof e);
	if (st_checkpoint_open(&ck, in, 0, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message[0] ? e.message
		                                                : st_strerror(e.code));
	int L = cfg.num_layers;
	size_t nslots = (size_t)GPT2_NUM_SLOTS * (size_t)L;
	size_t *where = malloc(nslots * sizeof *where);
	size_t maxn = max_matrix_numel(&cfg);
	void *a = malloc(maxn * 8), *b = malloc(maxn * 8), *c = malloc(maxn * 4);
	llmc_writer *w = NULL;
	int rc = -1;
	cli_progress prog;
	memset(&prog, 0, sizeof prog);
	size_t head;
	if (!where || !a || !b || !c) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (gpt2_checkpoint_index(ck, &cfg, where, &head, err, errlen) ||
	    gpt2_checkpoint_check_head(ck, &cfg, where, head, err, errlen))
		goto out;

	/* The output dtype: asked for, else BF16 only when all of it is. */
	int all_bf16 = 1, one = -2;
	for (size_t k = 0; k < nslots; k++) {
		if (where[k] == SIZE_MAX)
			continue;
		st_dtype t = st_checkpoint_tensor(ck, where[k], NULL)->dtype;
		all_bf16 &= t == ST_DTYPE_BF16;
		one = one == -2 || one == (int)t ? (int)t : -1;
	}
	st_dtype dst = o->dtype >= 0 ? (st_dtype)o->dtype
	               : all_bf16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
	if (llmc_dtype_version(dst) < 0) {
		gpt2_err(err, errlen, "an llm.c checkpoint holds F32 or BF16, not %s",
		         st_dtype_name(dst));
		goto out;
	}
	memset(res, 0, sizeof *res);
	res->src_dtype = one;
	res->dst_dtype = dst;
	res->exact = 1;

	llmc_header h;
	llmc_header_from_config(&h, &cfg, llmc_dtype_version(dst));
	if (llmc_writer_open(&w, out, &h, err, errlen))
		goto out;
	if (o->progress)
		cli_progress_start(&prog, "exporting",
		                   llmc_file_size(&h) - LLMC_HEADER_BYTES);
	size_t des = esize(dst);

	/* llm.c's order: slot by slot, each slot's layers in turn. */
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		const gpt2_param_info *p = gpt2_param(s);
		for (int l = 0; l < (p->per_layer ? L : 1); l++) {
			size_t i = where[(size_t)s * (size_t)L + (size_t)l];
			const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
			size_t n = (size_t)t->n_elements, ses = esize(t->dtype);
			res->exact &= exact_conversion(t->dtype, dst);
			if (cancelled(o, err, errlen))
				goto out;
			if (p->conv1d) {
				/* HF's [in, out] -> llm.c's [out, in]. */
				if (st_checkpoint_read(ck, i, 0, a, n * ses, &e) != ST_OK) {
					gpt2_err(err, errlen, "%s", e.message);
					goto out;
				}
				transpose(b, a, (size_t)t->shape[0],
				          (size_t)t->shape[1], ses);
				st_convert(dst, c, t->dtype, b, n, NULL);
				if (llmc_writer_write(w, c, n * des, err, errlen))
					goto out;
			} else {
				for (size_t off = 0; off < n; off += CHUNK) {
					size_t k = n - off < CHUNK ? n - off : CHUNK;
					if (cancelled(o, err, errlen))
						goto out;
					if (st_checkpoint_read(ck, i, off * ses, a, k * ses,
					                       &e) != ST_OK) {
						gpt2_err(err, errlen, "%s", e.message);
						goto out;
					}
					st_convert(dst, c, t->dtype, a, k, NULL);
					if (llmc_writer_write(w, c, k * des, err, errlen))
						goto out;
				}
			}
			res->parameters += n;
			cli_progress_add(&prog, (uint64_t)n * des);
		}
		if (s == GPT2_WTE) {
			/* The padding rows V..Vp-1, zeros as llm.c's pad_vocab. */
			uint64_t pad = (uint64_t)(h.padded_vocab_size - h.vocab_size) *
			               (uint64_t)h.channels;
			memset(c, 0, CHUNK * des);
			for (uint64_t off = 0; off < pad; off += CHUNK) {
				size_t k = pad - off < CHUNK ? (size_t)(pad - off) : CHUNK;
				if (llmc_writer_write(w, c, k * des, err, errlen))
					goto out;
				cli_progress_add(&prog, (uint64_t)k * des);
			}
		}
	}
	if (llmc_writer_finish(w, err, errlen))
		goto out;
	rc = 0;
out:
	cli_progress_done(&prog);
	llmc_writer_free(w);
	free(where);
	free(a);
	free(b);
	free(c);
	st_checkpoint_close(ck);
	return rc;
}

/* ---- random snapshots ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

void gpt2_export_rng_init(gpt2_export_rng *r, uint64_t seed,
                          const char *name, size_t len)
{
	/* FNV-1a 64 of the name: each tensor its own stream. */
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 0x100000001b3u;
	}
	uint64_t x = seed ^ (h * 0x9e3779b97f4a7c15u);
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	r->has_spare = 0;
	r->spare = 0;
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna). */
uint64_t gpt2_export_rng_next(gpt2_export_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double gpt2_export_rng_normal(gpt2_export_rng *r)
{
	if (r->has_spare) {
		r->has_spare = 0;
		return r->spare;
	}
	/* u1 in (0, 1] so the logarithm is finite; u2 in [0, 1). */
	double u1 = (double)((gpt2_export_rng_next(r) >> 11) + 1) * 0x1.0p-53;
	double u2 = (double)(gpt2_export_rng_next(r) >> 11) * 0x1.0p-53;
	double rad = sqrt(-2.0 * log(u1));
	double th = 6.283185307179586476925 * u2;
	r->spare = rad * sin(th);
	r->has_spare = 1;
	return rad * cos(th);
}

int gpt2_export_init(const gpt2_config *cfg, int slot, double *value)
{
	switch (slot) {
	case GPT2_LN1W:
	case GPT2_LN2W:
	case GPT2_LNFW:
		*value = 1.0;
		return 0;
	case GPT2_WTE:
	case GPT2_WPE:
	case GPT2_QKVW:
	case GPT2_FCW:
		*value = 0.02;
		return 1;
	case GPT2_ATTPROJW:
	case GPT2_FCPROJW:
		/* The residual projections, scaled for depth (GPT-2 paper 2.3). */
		*value = 0.02 / sqrt(2.0 * cfg->num_layers);
		return 1;
	default:
		*value = 0.0;
		return 0;
	}
}

int gpt2_export_random(const char *out_dir, const gpt2_config *cfg,
                       uint64_t seed, const gpt2_export_opts *o,
                       char *err, size_t errlen)
{
	if (gpt2_config_check(cfg, err, errlen))
		return -1;
	st_dtype dst = o->dtype >= 0 ? (st_dtype)o->dtype : ST_DTYPE_F32;
	if (dst != ST_DTYPE_F32 && dst != ST_DTYPE_BF16 && dst != ST_DTYPE_F16)
		return gpt2_err(err, errlen, "a snapshot is written as F32, BF16 or "
		                "F16, not %s", st_dtype_name(dst));
	float *a = malloc(CHUNK * sizeof(float));
	void *c = malloc(CHUNK * 4);
	st_writer *w = NULL;
	snapshot_out snap;
	int rc = -1, snap_open = 0;
	st_error e;
	cli_progress prog;
	memset(&prog, 0, sizeof prog);
	if (!a || !c) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (declare_tensors(&w, cfg, dst, err, errlen) ||
	    snapshot_begin(&snap, out_dir, err, errlen))
		goto out;
	snap_open = 1;
	char path[4096 + 64];
	if (gpt2_join(path, sizeof path, snap.work, "model.safetensors", err, errlen))
		goto out;
	if (st_writer_open(w, path, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message);
		goto out;
	}
	size_t nt = st_writer_n_tensors(w);
	uint64_t total = 0;
	for (size_t i = 0; i < nt; i++)
		total += st_writer_tensor(w, i)->n_bytes;
	if (o->progress)
		cli_progress_start(&prog, "initialising", total);
	for (size_t i = 0; i < nt; i++) {
		const st_tensor *t = st_writer_tensor(w, i);
		int slot, layer;
		writer_slot(cfg, t, &slot, &layer);
		double v;
		int normal = gpt2_export_init(cfg, slot, &v);
		gpt2_export_rng rng;
		gpt2_export_rng_init(&rng, seed, t->name, t->name_len);
		size_t n = (size_t)t->n_elements;
		for (size_t off = 0; off < n; off += CHUNK) {
			size_t k = n - off < CHUNK ? n - off : CHUNK;
			if (cancelled(o, err, errlen))
				goto out;
			for (size_t j = 0; j < k; j++)
				a[j] = normal ? (float)(v * gpt2_export_rng_normal(&rng))
				              : (float)v;
			st_convert(dst, c, ST_DTYPE_F32, a, k, NULL);
			if (st_writer_write(w, c, k * esize(dst), &e) != ST_OK) {
				gpt2_err(err, errlen, "%s", e.message);
				goto out;
			}
		}
		cli_progress_add(&prog, t->n_bytes);
	}
	if (st_writer_finish(w, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message);
		goto out;
	}
	if (snapshot_write_extras(&snap, cfg, dst, o, err, errlen))
		goto out;
	snap_open = 0; /* committed or, on failure, cleaned up by commit */
	if (snapshot_commit(&snap, err, errlen))
		goto out;
	rc = 0;
out:
	cli_progress_done(&prog);
	st_writer_free(w);
	if (snap_open)
		snapshot_abort(&snap);
	free(a);
	free(c);
	return rc;
}

/* ---- the check ------------------------------------------------------------- */

int gpt2_export_load_llmc(gpt2_model **out, const char *path, int wdtype,
                          char *err, size_t errlen)
{
	*out = NULL;
	llmc_reader *r;
	if (llmc_open(&r, path, err, errlen))
		return -1;
	gpt2_config cfg;
	llmc_header_config(llmc_reader_header(r), &cfg);
	st_dtype src = llmc_reader_dtype(r);
	/* The model holds it all anyway: a buffer for its largest tensor. */
	size_t maxn = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++)
		if ((size_t)gpt2_param_numel(&cfg, s) > maxn)
			maxn = (size_t)gpt2_param_numel(&cfg, s);
	gpt2_model *m = NULL;
	void *buf = malloc(maxn * esize(src));
	int rc = -1;
	if (!buf) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (gpt2_model_new(&m, &cfg, wdtype >= 0 ? (st_dtype)wdtype : src, err,
	                   errlen))
		goto out;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		const gpt2_param_info *p = gpt2_param(s);
		uint64_t n = gpt2_param_numel(&cfg, s);
		for (int l = 0; l < (p->per_layer ? cfg.num_layers : 1); l++) {
			/*
			 * wte's first V rows only; gpt2_model_fill transposes
			 * llm.c's [out, in] matrices back (its own code, not the
			 * transpose the export used).
			 */
			if (llmc_read(r, s, (uint64_t)l * n, buf, (size_t)n, err,
			              errlen) ||
			    gpt2_model_fill(m, s, l, src, buf, p->conv1d, err, errlen))
				goto out;
		}
	}
	*out = m;
	m = NULL;
	rc = 0;
out:
	gpt2_model_free(m);
	free(buf);
	llmc_close(r);
	return rc;
}

int gpt2_export_compare(gpt2_model *a, gpt2_model *b, gpt2_export_diff *d,
                        char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	const gpt2_config *ca = &a->config, *cb = &b->config;
	if (ca->vocab_size != cb->vocab_size || ca->max_seq_len != cb->max_seq_len ||
	    ca->num_layers != cb->num_layers || ca->num_heads != cb->num_heads ||
	    ca->channels != cb->channels)
		return gpt2_err(err, errlen, "the two models differ in size");
	int V = ca->vocab_size, P = ca->max_seq_len;
	int lens[3] = {1, 8, 32};
	int rc = -1;
	int32_t *ids = malloc(32 * sizeof *ids);
	float *la = malloc((size_t)32 * (size_t)V * sizeof(float));
	float *lb = malloc((size_t)32 * (size_t)V * sizeof(float));
	gpt2_cache *qa = NULL, *qb = NULL;
	if (!ids || !la || !lb) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	for (int k = 0; k < 3; k++) {
		int T = lens[k] < P ? lens[k] : P;
		if (k > 0 && T <= (lens[k - 1] < P ? lens[k - 1] : P))
			break; /* a short context repeats the previous prompt */
		/* Ids spread over the whole vocabulary, the last id included. */
		for (int t = 0; t < T; t++)
			ids[t] = (int32_t)(((uint64_t)t * 7919u + (uint64_t)k * 104729u +
			                    (t == T - 1 ? (uint64_t)V - 1 : 0)) %
			                   (uint64_t)V);
		if (gpt2_cache_new(&qa, a, T) || gpt2_cache_new(&qb, b, T)) {
			gpt2_err(err, errlen, "out of memory");
			goto out;
		}
		if (gpt2_forward(a, qa, ids, T, la, 1, err, errlen) ||
		    gpt2_forward(b, qb, ids, T, lb, 1, err, errlen))
			goto out;
		gpt2_cache_free(qa);
		gpt2_cache_free(qb);
		qa = qb = NULL;
		for (size_t i = 0; i < (size_t)T * (size_t)V; i++) {
			/* Equal infinities and NaN against NaN agree. */
			if (la[i] == lb[i] || (isnan(la[i]) && isnan(lb[i])))
				continue;
			if (!isfinite(la[i]) || !isfinite(lb[i])) {
				d->nonfinite++;
				continue;
			}
			double diff = fabs((double)la[i] - (double)lb[i]);
			if (diff > d->max_abs_diff)
				d->max_abs_diff = diff;
		}
		d->prompts++;
		d->positions += T;
	}
	rc = 0;
out:
	gpt2_cache_free(qa);
	gpt2_cache_free(qb);
	free(ids);
	free(la);
	free(lb);
	return rc;
}
