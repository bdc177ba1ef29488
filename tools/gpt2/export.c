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
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	if (o->cancel && o->cancel())
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
	                                              src == ST_DTYPE_F16));
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

/*
 * Elements of a buffer for the largest per-layer Conv1D matrix (4C x C),
 * transposed whole, and for a chunk.
 */
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

/*
 * The JSON values of bos_token_id and eos_token_id for cfg (see export.h):
 * an id, a list of ids, or null.
 */
static void special_ids(const gpt2_config *cfg, char bos[16], char eos[16 * GPT2_MAX_EOS])
{
	int dflt = cfg->vocab_size > GPT2_EXPORT_EOT ? GPT2_EXPORT_EOT : -1;
	int first = cfg->n_eos ? cfg->eos[0] : dflt;
	int b = cfg->has_bos ? cfg->bos : first;
	if (b >= 0)
		snprintf(bos, 16, "%d", b);
	else
		snprintf(bos, 16, "null");
	if (cfg->n_eos > 1) {
		size_t n = 0;
		for (int i = 0; i < cfg->n_eos; i++)
			n += (size_t)snprintf(eos + n, 16 * GPT2_MAX_EOS - n, "%s%d",
			                      i ? ", " : "[", cfg->eos[i]);
		snprintf(eos + n, 16 * GPT2_MAX_EOS - n, "]");
	} else if (first >= 0) {
		snprintf(eos, 16, "%d", first);
	} else {
		snprintf(eos, 16, "null");
	}
}

int gpt2_export_config_json(char *buf, size_t size, const gpt2_config *cfg,
                            st_dtype dtype)
{
	char bos[16], eos[16 * GPT2_MAX_EOS];
	special_ids(cfg, bos, eos);
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
		"  \"bos_token_id\": %s,\n"
		"  \"embd_pdrop\": 0.1,\n"
		"  \"eos_token_id\": %s,\n"
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
		bos, eos, cfg->max_seq_len, cfg->channels,
		cfg->num_heads, cfg->num_layers, cfg->max_seq_len,
		torch_dtype_name(dtype), GPT2_EXPORT_TRANSFORMERS_VERSION,
		cfg->vocab_size);
	return n < 0 || (size_t)n >= size ? -1 : n;
}

int gpt2_export_generation_config_json(char *buf, size_t size,
                                       const gpt2_config *cfg)
{
	/* GenerationConfig.from_model_config, as save_pretrained writes it. */
	char bos[16], eos[16 * GPT2_MAX_EOS];
	special_ids(cfg, bos, eos);
	int n = snprintf(buf, size,
		"{\n"
		"  \"_from_model_config\": true,\n"
		"  \"bos_token_id\": %s,\n"
		"  \"eos_token_id\": %s,\n"
		"  \"transformers_version\": \"%s\"\n"
		"}\n",
		bos, eos,
		GPT2_EXPORT_TRANSFORMERS_VERSION);
	return n < 0 || (size_t)n >= size ? -1 : n;
}

/*
 * Copy file src into the snapshot's temporary folder as name, 64 KiB at a
 * time (st/atomic.h inside st/snapshot.h's folder: the folder appears
 * whole at the commit, and a file is never seen half-copied inside it).
 */
static int copy_file(const char *src, st_snapshot *snap, const char *name,
                     char *err, size_t errlen)
{
	char dst[4096 + 64];
	if (gpt2_join(dst, sizeof dst, st_snapshot_temp_path(snap), name, err,
	              errlen))
		return -1;
	FILE *in = fopen(src, "rb");
	if (!in)
		return gpt2_err(err, errlen, "%s: %s", src, strerror(errno));
	st_atomic *a;
	st_error e;
	if (st_atomic_open(&a, dst, &e) != ST_OK) {
		fclose(in);
		return gpt2_err(err, errlen, "%s", e.message);
	}
	char *buf = malloc(1 << 16);
	int rc = buf ? 0 : gpt2_err(err, errlen, "%s: out of memory", dst);
	size_t n;
	while (!rc && (n = fread(buf, 1, 1 << 16, in)) > 0)
		if (st_atomic_write(a, buf, n, &e) != ST_OK)
			rc = gpt2_err(err, errlen, "%s", e.message);
	if (!rc && ferror(in))
		rc = gpt2_err(err, errlen, "%s: read error", src);
	free(buf);
	fclose(in);
	if (!rc && st_atomic_commit(a, &e) != ST_OK)
		rc = gpt2_err(err, errlen, "%s", e.message);
	st_atomic_close(a);
	return rc;
}

/* The tokenizer files a GPT-2 snapshot carries, as transformers saves them. */
static const char *const tokenizer_files[] = {
	"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
	"special_tokens_map.json",
};
#define N_TOKENIZER_FILES (sizeof tokenizer_files / sizeof tokenizer_files[0])

static int copy_tokenizer(const char *from, st_snapshot *snap, char *err,
                          size_t errlen)
{
	char src[4096];
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
		    copy_file(src, snap, tokenizer_files[i], err, errlen))
			return -1;
	}
	return 0;
}

/* ---- moving values ------------------------------------------------------- */

/*
 * Where values go: model.safetensors of a snapshot (st) or a .bin (llmc),
 * converted to dtype CHUNK elements at a time through buf, counted by the
 * progress bar; the export stops between chunks when it is cancelled.
 */
typedef struct sink {
	st_writer *st;
	llmc_writer *llmc;
	st_dtype dtype;
	void *buf; /* CHUNK elements of dtype */
	const gpt2_export_opts *o;
	cli_progress prog;
} sink;

static int sink_init(sink *k, st_dtype dtype, const gpt2_export_opts *o,
                     char *err, size_t errlen)
{
	memset(k, 0, sizeof *k);
	k->dtype = dtype;
	k->o = o;
	k->buf = malloc(CHUNK * esize(dtype));
	return k->buf ? 0 : gpt2_err(err, errlen, "out of memory");
}

static void sink_free(sink *k)
{
	cli_progress_done(&k->prog);
	free(k->buf);
}

/* n values of type t from src, converted to the sink's dtype and written. */
static int sink_put(sink *k, st_dtype t, const void *src, size_t n, char *err,
                    size_t errlen)
{
	size_t es = esize(k->dtype);
	for (size_t off = 0; off < n; off += CHUNK) {
		size_t m = n - off < CHUNK ? n - off : CHUNK;
		if (cancelled(k->o, err, errlen))
			return -1;
		st_convert(k->dtype, k->buf, t, (const char *)src + off * esize(t), m,
		           NULL);
		st_error e;
		if (k->st && st_writer_write(k->st, k->buf, m * es, &e) != ST_OK)
			return gpt2_err(err, errlen, "%s", e.message);
		if (k->llmc && llmc_writer_write(k->llmc, k->buf, m * es, err,
		                                 errlen))
			return -1;
		cli_progress_add(&k->prog, (uint64_t)m * es);
	}
	return 0;
}

/*
 * Where values come from: a slot of an llm.c file from element base on, or
 * tensor i of a checkpoint; either holds elements of dtype.
 */
typedef struct source {
	llmc_reader *llmc;
	int slot;
	uint64_t base;
	st_checkpoint *ck;
	size_t i;
	st_dtype dtype;
} source;

/* n elements from element off of the source into buf. */
static int source_read(const source *s, uint64_t off, void *buf, size_t n,
                       char *err, size_t errlen)
{
	if (s->llmc)
		return llmc_read(s->llmc, s->slot, s->base + off, buf, n, err,
		                 errlen);
	size_t es = esize(s->dtype);
	st_error e;
	if (st_checkpoint_read(s->ck, s->i, off * es, buf, n * es, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	return 0;
}

/*
 * Copy one tensor of n elements from s to k. A Conv1D matrix, stored as
 * rows x cols, is transposed on its way (between the two layouts) and so
 * read whole into a and b; anything else (rows 0) goes through a in chunks.
 */
static int copy_tensor(const source *s, sink *k, size_t n, size_t rows,
                       size_t cols, void *a, void *b, char *err, size_t errlen)
{
	if (rows) {
		if (source_read(s, 0, a, n, err, errlen))
			return -1;
		transpose(b, a, rows, cols, esize(s->dtype));
		return sink_put(k, s->dtype, b, n, err, errlen);
	}
	for (size_t off = 0; off < n; off += CHUNK) {
		size_t m = n - off < CHUNK ? n - off : CHUNK;
		if (source_read(s, off, a, m, err, errlen) ||
		    sink_put(k, s->dtype, a, m, err, errlen))
			return -1;
	}
	return 0;
}

/* ---- the snapshot folder ------------------------------------------------- */

/*
 * Where a snapshot is written: st/snapshot.h's temporary folder beside
 * OUT, which receives model.safetensors (through the sink), the JSON
 * files and the tokenizer files, and what else an existing OUT held; the
 * commit then puts it in place whole, so OUT is the old snapshot or the
 * new one at every instant. A run killed before that leaves only the
 * temporary folder, which the next run into OUT removes.
 */
typedef struct snapshot_out {
	st_snapshot *snap;
	st_writer *w; /* model.safetensors of the temporary folder */
	sink sink;
} snapshot_out;

/*
 * The checks of OUT whose messages are gpt2export's own (st_snapshot_open
 * makes the rest): a name, and a folder when it exists.
 */
static int check_out_folder(const char *out, char *err, size_t errlen)
{
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		n--;
	if (n == 0 || n >= 4096 - 32)
		return gpt2_err(err, errlen, "'%s': not a usable output folder name",
		                out);
	struct stat sb;
	if (stat(out, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode))
			return gpt2_err(err, errlen, "%.*s: exists and is not a folder",
			                (int)n, out);
		return 0;
	}
	if (errno != ENOENT)
		return gpt2_err(err, errlen, "%.*s: %s", (int)n, out,
		                strerror(errno));
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
		for (int l = 0; l < gpt2_param_layers(cfg, s); l++) {
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

/* dtype is one a snapshot is written in. */
static int snapshot_dtype(st_dtype dtype, char *err, size_t errlen)
{
	if (dtype != ST_DTYPE_F32 && dtype != ST_DTYPE_BF16 &&
	    dtype != ST_DTYPE_F16)
		return gpt2_err(err, errlen, "a snapshot is written as F32, BF16 "
		                "or F16, not %s", st_dtype_name(dtype));
	return 0;
}
/*
 * Start the snapshot of cfg in out: the folder, and model.safetensors
 * open for its tensors (st_writer_tensor(s->w, i), in order, through
 * s->sink). label names the progress bar. snapshot_free in any case.
 */
static int snapshot_open(snapshot_out *s, const char *out,
                         const gpt2_config *cfg, st_dtype dtype,
                         const gpt2_export_opts *o, const char *label,
                         char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	st_error e;
	if (sink_init(&s->sink, dtype, o, err, errlen) ||
	    declare_tensors(&s->w, cfg, dtype, err, errlen) ||
	    check_out_folder(out, err, errlen))
		return -1;
	/* An existing folder is replaced (keeping what else it holds). */
	if (st_snapshot_open(&s->snap, out, ST_SNAPSHOT_REPLACE, &e) != ST_OK ||
	    st_snapshot_open_writer(s->snap, s->w, "model.safetensors", &e) !=
	    ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	s->sink.st = s->w;
	uint64_t total = 0;
	for (size_t i = 0; i < st_writer_n_tensors(s->w); i++)
		total += st_writer_tensor(s->w, i)->n_bytes;
	if (o->progress)
		cli_progress_start(&s->sink.prog, label, total);
	return 0;
}

/* Write one small file of the new folder. */
static int add_file(snapshot_out *s, const char *name, const char *data,
                    int n, char *err, size_t errlen)
{
	st_error e;
	if (n < 0)
		return gpt2_err(err, errlen, "%s: too long", name);
	/* 0666 less the umask, as any new file. */
	if (st_snapshot_add_file(s->snap, name, data, (size_t)n, 0666, &e) !=
	    ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	return 0;
}

/*
 * Finish the snapshot once every tensor is written: model.safetensors,
 * config.json, generation_config.json and the tokenizer files; what else
 * an existing folder held but an earlier sharded save (it would shadow
 * the new model.safetensors: loaders prefer the index, and save_pretrained
 * removes stale shards likewise); then the folder put in place.
 */
static int snapshot_finish(snapshot_out *s, const gpt2_config *cfg,
                           char *err, size_t errlen)
{
	char json[4096];
	st_error e;
	if (st_writer_finish(s->w, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	if (add_file(s, "config.json", json,
	             gpt2_export_config_json(json, sizeof json, cfg,
	                                     s->sink.dtype), err, errlen) ||
	    add_file(s, "generation_config.json", json,
	             gpt2_export_generation_config_json(json, sizeof json, cfg),
	             err, errlen))
		return -1;
	if (s->sink.o->tokenizer_dir &&
	    copy_tokenizer(s->sink.o->tokenizer_dir, s->snap, err, errlen))
		return -1;
	if (st_snapshot_keep_old(s->snap, NULL, NULL, NULL, &e) != ST_OK ||
	    st_snapshot_commit(s->snap, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	return 0;
}

/* Free s; before snapshot_finish succeeded, remove what it made. */
static void snapshot_free(snapshot_out *s)
{
	sink_free(&s->sink);
	st_writer_free(s->w);
	st_snapshot_free(s->snap);
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
	gpt2_config cfg;
	llmc_header_config(llmc_reader_header(r), &cfg);
	st_dtype src = llmc_reader_dtype(r);
	st_dtype dst = o->dtype >= 0 ? (st_dtype)o->dtype : src;
	if (snapshot_dtype(dst, err, errlen)) {
		llmc_close(r);
		return -1;
	}
	memset(res, 0, sizeof *res);
	res->src_dtype = (int)src;
	res->dst_dtype = dst;
	res->exact = exact_conversion(src, dst);

	size_t maxn = max_matrix_numel(&cfg);
	void *a = malloc(maxn * esize(src)), *b = malloc(maxn * esize(src));
	snapshot_out snap;
	int rc = -1;
	memset(&snap, 0, sizeof snap);
	if (!a || !b) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (check_padding(r, a, o, err, errlen) ||
	    snapshot_open(&snap, out_dir, &cfg, dst, o, "exporting", err, errlen))
		goto out;

	/* Each tensor in the writer's order, read from where llm.c put it. */
	for (size_t i = 0; i < st_writer_n_tensors(snap.w); i++) {
		const st_tensor *t = st_writer_tensor(snap.w, i);
		int slot, layer;
		writer_slot(&cfg, t, &slot, &layer);
		size_t n = (size_t)t->n_elements;
		/* wte: its first V rows only; the padding stays behind. */
		source s = {.llmc = r, .slot = slot, .base = (uint64_t)layer * n,
		            .dtype = src};
		/* llm.c's [out, in] -> HF's [in, out]. */
		size_t rows = gpt2_param(slot)->conv1d ? (size_t)t->shape[1] : 0;
		if (copy_tensor(&s, &snap.sink, n, rows, (size_t)t->shape[0], a, b,
		                err, errlen))
			goto out;
		res->parameters += n;
	}
	if (snapshot_finish(&snap, &cfg, err, errlen))
		goto out;
	rc = 0;
out:
	snapshot_free(&snap);
	free(a);
	free(b);
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
	if (st_checkpoint_open(&ck, in, ST_OPEN_TORCH, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message[0] ? e.message
		                                                : st_strerror(e.code));
	int L = cfg.num_layers;
	size_t nslots = (size_t)GPT2_NUM_SLOTS * (size_t)L;
	size_t *where = malloc(nslots * sizeof *where);
	size_t maxn = max_matrix_numel(&cfg);
	/* Up to F64 (8 bytes) per element in the source. */
	void *a = malloc(maxn * 8), *b = malloc(maxn * 8);
	sink k;
	int rc = -1;
	memset(&k, 0, sizeof k);
	size_t head;
	if (!where || !a || !b) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (gpt2_checkpoint_index(ck, &cfg, where, &head, err, errlen) ||
	    gpt2_checkpoint_check_head(ck, &cfg, where, head, err, errlen))
		goto out;

	/* The output dtype: asked for, else BF16 only when all of it is. */
	int one = -2; /* the tensors' one dtype, or -1 when they mix */
	for (size_t i = 0; i < nslots; i++) {
		if (where[i] == SIZE_MAX)
			continue;
		int t = (int)st_checkpoint_tensor(ck, where[i], NULL)->dtype;
		one = one == -2 || one == t ? t : -1;
	}
	st_dtype dst = o->dtype >= 0 ? (st_dtype)o->dtype
	               : one == ST_DTYPE_BF16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
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
	if (sink_init(&k, dst, o, err, errlen) ||
	    llmc_writer_open(&k.llmc, out, &h, err, errlen))
		goto out;
	if (o->progress)
		cli_progress_start(&k.prog, "exporting",
		                   llmc_file_size(&h) - LLMC_HEADER_BYTES);

	/* llm.c's order: slot by slot, each slot's layers in turn. */
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		for (int l = 0; l < gpt2_param_layers(&cfg, s); l++) {
			size_t i = where[(size_t)s * (size_t)L + (size_t)l];
			const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
			size_t n = (size_t)t->n_elements;
			res->exact &= exact_conversion(t->dtype, dst);
			source src = {.ck = ck, .i = i, .dtype = t->dtype};
			/* HF's [in, out] -> llm.c's [out, in]; vectors have no
			 * second dimension to read. */
			int conv = gpt2_param(s)->conv1d && t->ndim == 2;
			size_t rows = conv ? (size_t)t->shape[0] : 0;
			size_t cols = conv ? (size_t)t->shape[1] : 0;
			if (copy_tensor(&src, &k, n, rows, cols, a, b, err, errlen))
				goto out;
			res->parameters += n;
		}
		if (s == GPT2_WTE) {
			/* The padding rows V..Vp-1, zeros as llm.c's pad_vocab. */
			size_t pad = (size_t)(h.padded_vocab_size - h.vocab_size) *
			             (size_t)h.channels;
			memset(a, 0, CHUNK * sizeof(float));
			for (size_t off = 0; off < pad; off += CHUNK)
				if (sink_put(&k, ST_DTYPE_F32, a,
				             pad - off < CHUNK ? pad - off : CHUNK, err,
				             errlen))
					goto out;
		}
	}
	if (llmc_writer_finish(k.llmc, err, errlen))
		goto out;
	rc = 0;
out:
	sink_free(&k);
	llmc_writer_free(k.llmc);
	free(where);
	free(a);
	free(b);
	st_checkpoint_close(ck);
	return rc;
}

/* ---- random snapshots ---------------------------------------------------- */

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
		r->s[i] = gpt2_splitmix64(&x);
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
	if (snapshot_dtype(dst, err, errlen))
		return -1;
	float *a = malloc(CHUNK * sizeof(float));
	snapshot_out snap;
	int rc = -1;
	memset(&snap, 0, sizeof snap);
	if (!a) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (snapshot_open(&snap, out_dir, cfg, dst, o, "initialising", err,
	                  errlen))
		goto out;
	for (size_t i = 0; i < st_writer_n_tensors(snap.w); i++) {
		const st_tensor *t = st_writer_tensor(snap.w, i);
		int slot, layer;
		writer_slot(cfg, t, &slot, &layer);
		double v;
		int normal = gpt2_export_init(cfg, slot, &v);
		gpt2_export_rng rng;
		gpt2_export_rng_init(&rng, seed, t->name, t->name_len);
		size_t n = (size_t)t->n_elements;
		for (size_t off = 0; off < n; off += CHUNK) {
			size_t k = n - off < CHUNK ? n - off : CHUNK;
			for (size_t j = 0; j < k; j++)
				a[j] = normal ? (float)(v * gpt2_export_rng_normal(&rng))
				              : (float)v;
			if (sink_put(&snap.sink, ST_DTYPE_F32, a, k, err, errlen))
				goto out;
		}
	}
	if (snapshot_finish(&snap, cfg, err, errlen))
		goto out;
	rc = 0;
out:
	snapshot_free(&snap);
	free(a);
	return rc;
}

/* ---- the check ----------------------------------------------------------- */

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
		for (int l = 0; l < gpt2_param_layers(&cfg, s); l++) {
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
		if (gpt2_cache_new(&qa, a, T, err, errlen) ||
		    gpt2_cache_new(&qb, b, T, err, errlen))
			goto out;
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

/* ---- snapshots written by other exporters (GGUF) -------------------------- */

struct gpt2_export_snapshot {
	snapshot_out s;
};

int gpt2_export_snapshot_open(gpt2_export_snapshot **out, const char *dir,
                              const gpt2_config *cfg, st_dtype dtype,
                              const gpt2_export_opts *o, char *err,
                              size_t errlen)
{
	*out = NULL;
	if (snapshot_dtype(dtype, err, errlen))
		return -1;
	gpt2_export_snapshot *s = calloc(1, sizeof *s);
	if (!s)
		return gpt2_err(err, errlen, "out of memory");
	if (snapshot_open(&s->s, dir, cfg, dtype, o, "importing", err, errlen)) {
		gpt2_export_snapshot_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

size_t gpt2_export_snapshot_n_tensors(const gpt2_export_snapshot *s)
{
	return st_writer_n_tensors(s->s.w);
}

const st_tensor *gpt2_export_snapshot_tensor(const gpt2_export_snapshot *s,
                                             size_t i)
{
	return st_writer_tensor(s->s.w, i);
}

int gpt2_export_snapshot_put(gpt2_export_snapshot *s, const float *x,
                             size_t n, char *err, size_t errlen)
{
	return sink_put(&s->s.sink, ST_DTYPE_F32, x, n, err, errlen);
}

int gpt2_export_snapshot_finish(gpt2_export_snapshot *s,
                                const gpt2_config *cfg, char *err,
                                size_t errlen)
{
	return snapshot_finish(&s->s, cfg, err, errlen);
}

void gpt2_export_snapshot_free(gpt2_export_snapshot *s)
{
	if (!s)
		return;
	snapshot_free(&s->s);
	free(s);
}
