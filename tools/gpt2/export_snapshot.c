/*
 * export_snapshot.c - the Hugging Face snapshot folders gpt2export writes:
 * the folder itself through st/snapshot.h (built beside OUT, swapped in
 * whole), its config.json and generation_config.json as transformers'
 * save_pretrained writes them, and its tokenizer files (a GGUF's snapshot
 * is libst's st_gguf_write_snapshot).
 *
 * What it is not: the values (export.c maps and converts them) or the
 * atomicity itself (libst's st/snapshot.h and st/atomic.h).
 */
#include "gpt2/export.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpt2/export_impl.h"
#include "gpt2/internal.h"

static const char *torch_dtype_name(st_dtype t)
{
	switch (t) {
	case ST_DTYPE_BF16: return "bfloat16";
	case ST_DTYPE_F16: return "float16";
	case ST_DTYPE_F64: return "float64";
	default: return "float32";
	}
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
 * Write file name of the new folder: the bytes of file from, 64 KiB at a
 * time, or when from is NULL the n bytes of data. Through st/atomic.h
 * inside the temporary folder, so it replaces the old file that
 * st_snapshot_keep_old linked there (keeping its permission bits, as
 * those of any replaced file are kept), and first removes the temporaries
 * of that name that a dead process left in OUT (an earlier gpt2export
 * wrote an existing OUT file by file).
 */
static int put_file(st_snapshot *snap, const char *name, const char *from,
                    const void *data, size_t n, char *err, size_t errlen)
{
	char dst[4096 + 64];
	if (gpt2_join(dst, sizeof dst, st_snapshot_temp_path(snap), name, err,
	              errlen))
		return -1;
	FILE *in = NULL;
	if (from && !(in = fopen(from, "rb")))
		return gpt2_err(err, errlen, "%s: %s", from, strerror(errno));
	st_atomic *a;
	st_error e;
	if (st_atomic_open(&a, dst, &e) != ST_OK) {
		if (in)
			fclose(in);
		return gpt2_err(err, errlen, "%s", e.message);
	}
	int rc = 0;
	if (in) {
		char *buf = malloc(1 << 16);
		if (!buf)
			rc = gpt2_err(err, errlen, "%s: out of memory", dst);
		while (!rc && (n = fread(buf, 1, 1 << 16, in)) > 0)
			if (st_atomic_write(a, buf, n, &e) != ST_OK)
				rc = gpt2_err(err, errlen, "%s", e.message);
		if (!rc && ferror(in))
			rc = gpt2_err(err, errlen, "%s: read error", from);
		free(buf);
		fclose(in);
	} else if (st_atomic_write(a, data, n, &e) != ST_OK) {
		rc = gpt2_err(err, errlen, "%s", e.message);
	}
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
		    put_file(snap, tokenizer_files[i], src, NULL, 0, err, errlen))
			return -1;
	}
	return 0;
}

/* ---- the snapshot folder ------------------------------------------------- */

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
int gpt2_snapshot_dtype(st_dtype dtype, char *err, size_t errlen)
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
 * s->sink). label names the progress bar. gpt2_snapshot_out_free in any
 * case.
 */
int gpt2_snapshot_out_open(gpt2_snapshot_out *s, const char *out,
                           const gpt2_config *cfg, st_dtype dtype,
                           const gpt2_export_opts *o, const char *label,
                           char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	st_error e;
	if (gpt2_sink_init(&s->sink, dtype, o, err, errlen) ||
	    declare_tensors(&s->w, cfg, dtype, err, errlen) ||
	    check_out_folder(out, err, errlen))
		return -1;
	/*
	 * An existing folder is replaced. What it holds but an earlier
	 * sharded save (which would shadow the new model.safetensors: loaders
	 * prefer the index, and save_pretrained removes stale shards likewise)
	 * is carried over first, and the files written below replace theirs.
	 */
	if (st_snapshot_open(&s->snap, out, ST_SNAPSHOT_REPLACE, &e) != ST_OK ||
	    st_snapshot_keep_old(s->snap, NULL, NULL, NULL, &e) != ST_OK ||
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

/* Write JSON file name of the new folder: n bytes of json, or too long. */
static int put_json(gpt2_snapshot_out *s, const char *name, const char *json,
                    int n, char *err, size_t errlen)
{
	if (n < 0)
		return gpt2_err(err, errlen, "%s: too long", name);
	return put_file(s->snap, name, NULL, json, (size_t)n, err, errlen);
}

/*
 * Finish the snapshot once every tensor is written: model.safetensors,
 * config.json, generation_config.json and the tokenizer files; then the
 * folder put in place.
 */
int gpt2_snapshot_out_finish(gpt2_snapshot_out *s, const gpt2_config *cfg,
                             char *err, size_t errlen)
{
	char json[4096];
	st_error e;
	if (st_writer_finish(s->w, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	if (put_json(s, "config.json", json,
	             gpt2_export_config_json(json, sizeof json, cfg,
	                                     s->sink.dtype), err, errlen) ||
	    put_json(s, "generation_config.json", json,
	             gpt2_export_generation_config_json(json, sizeof json, cfg),
	             err, errlen))
		return -1;
	if (s->sink.o->tokenizer_dir &&
	    copy_tokenizer(s->sink.o->tokenizer_dir, s->snap, err, errlen))
		return -1;
	if (st_snapshot_commit(s->snap, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	return 0;
}

/* Free s; before gpt2_snapshot_out_finish succeeded, remove what it made. */
void gpt2_snapshot_out_free(gpt2_snapshot_out *s)
{
	gpt2_sink_free(&s->sink);
	st_writer_free(s->w);
	st_snapshot_close(s->snap);
}

/* Which slot and layer a tensor the writer declared is. */
void gpt2_writer_slot(const gpt2_config *cfg, const st_tensor *t,
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
