/*
 * export_impl.h - what the files of gpt2export's work share with each
 * other (not with the tools, which use export.h): the sink that converts
 * values and writes them to a snapshot's model.safetensors or a .bin, and
 * the snapshot folder being written (export_snapshot.c).
 *
 * export.c maps llm.c's layout to Hugging Face's and back;
 * export_snapshot.c writes snapshot folders (through st/snapshot.h) and
 * their JSON and tokenizer files; export_random.c makes random snapshots;
 * export_check.c is the logits check.
 */
#ifndef ST_GPT2_EXPORT_IMPL_H
#define ST_GPT2_EXPORT_IMPL_H

#include "fe/cli.h"
#include "gpt2/export.h"
#include "gpt2/llmc.h"

/* Elements converted per chunk when no transpose needs the whole tensor. */
#define GPT2_EXPORT_CHUNK ((size_t)1 << 16)

/*
 * Where values go: model.safetensors of a snapshot (st) or a .bin (llmc),
 * converted to dtype GPT2_EXPORT_CHUNK elements at a time through buf,
 * counted by the progress bar; the export stops between chunks when it is
 * cancelled (o->cancel), with "interrupted".
 */
typedef struct gpt2_sink {
	st_writer *st;
	llmc_writer *llmc;
	st_dtype dtype;
	void *buf; /* GPT2_EXPORT_CHUNK elements of dtype */
	const gpt2_export_opts *o;
	cli_progress prog;
} gpt2_sink;

/* A sink for dtype with neither output yet. 0, or -1 (out of memory). */
int gpt2_sink_init(gpt2_sink *k, st_dtype dtype, const gpt2_export_opts *o,
                   char *err, size_t errlen);
/* End the progress bar and free the buffer (not the outputs). */
void gpt2_sink_free(gpt2_sink *k);
/* n values of type t from src, converted to the sink's dtype and written. */
int gpt2_sink_put(gpt2_sink *k, st_dtype t, const void *src, size_t n,
                  char *err, size_t errlen);

/*
 * A snapshot folder being written: st/snapshot.h's temporary folder beside
 * OUT, which receives what else an existing OUT held (hard links), then
 * model.safetensors (w, fed through sink), the JSON files and the
 * tokenizer files (st/atomic.h inside it, each replacing the old one);
 * the commit then puts it in place whole, so OUT is the old snapshot or
 * the new one at every instant. A run killed before that leaves only the
 * temporary folder, which the next run into OUT removes.
 */
typedef struct gpt2_snapshot_out {
	st_snapshot *snap;
	st_writer *w; /* model.safetensors of the temporary folder */
	gpt2_sink sink;
} gpt2_snapshot_out;

/* dtype is one a snapshot is written in (F32, BF16, F16). 0 or -1. */
int gpt2_snapshot_dtype(st_dtype dtype, char *err, size_t errlen);
/*
 * Start the snapshot of cfg in out (an existing folder is replaced; what
 * it holds but an earlier sharded save is carried over): the folder, and
 * model.safetensors open for its tensors (st_writer_tensor(s->w, i), in
 * order, through s->sink). label names the progress bar.
 * gpt2_snapshot_out_free in any case.
 */
int gpt2_snapshot_out_open(gpt2_snapshot_out *s, const char *out,
                           const gpt2_config *cfg, st_dtype dtype,
                           const gpt2_export_opts *o, const char *label,
                           char *err, size_t errlen);
/*
 * Once every tensor is written: config.json, generation_config.json and
 * the tokenizer files of o->tokenizer_dir; then the folder put in place.
 */
int gpt2_snapshot_out_finish(gpt2_snapshot_out *s, const gpt2_config *cfg,
                             char *err, size_t errlen);
/* Free s; before gpt2_snapshot_out_finish succeeded, remove what it made. */
void gpt2_snapshot_out_free(gpt2_snapshot_out *s);
/* Which slot and layer tensor t of a snapshot's writer is. */
void gpt2_writer_slot(const gpt2_config *cfg, const st_tensor *t, int *slot,
                      int *layer);

#endif
