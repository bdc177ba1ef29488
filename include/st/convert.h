/*
 * st/convert.h - converting a whole checkpoint: the plan of what happens
 * to each tensor (copied, converted to another float dtype, kept, dropped,
 * dequantized, quantized to block-scaled FP8), the output's shard layout,
 * the config.json a snapshot output gets, and the data path that writes
 * one file or a whole snapshot directory, streaming on N threads. It is
 * what stconvert does, for any program linked against libst.
 *
 * What it is not: it prints nothing and owns no policy. Defaults (thread
 * count, whether OUT is a file or a directory, --force), messages and
 * exit codes are the caller's; what the plan decided is read back from it
 * (st_convert_plan_item, the glob hits, the pairs) to report. The format,
 * the writer, the shard rule, the snapshot directory, the value
 * conversion and the quantization arithmetic are the other modules'
 * (st/writer.h, st/snapshot.h, st_convert, st/quant.h, st/stream.h).
 *
 * Contract. A plan borrows its checkpoint, which must stay open until
 * st_convert_plan_free. st_convert_plan_new decides every tensor's fate
 * from the options and the checkpoint (and the config.json beside its
 * files: the FP8 block size); st_convert_plan_shards then lays the
 * tensors out over output files; a write streams them (one file, or a
 * snapshot directory built beside the target and swapped in). A write
 * that fails or is cancelled leaves the target as it was and removes its
 * temporaries. Errors are st_error messages naming the file and the
 * tensor. Plans are not shared between threads; a write runs its own.
 */
#ifndef ST_CONVERT_H
#define ST_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"
#include "file.h"
#include "index.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What happens to one tensor. */
typedef enum st_convert_action {
	ST_CONVERT_COPY = 0, /* written unchanged */
	ST_CONVERT_CONVERT,  /* a float converted to the target dtype: a wide
	                        one rounded as st_convert, a plain (unscaled)
	                        F8 or F4 one decoded exactly */
	ST_CONVERT_KEEP,     /* a float left in its dtype by a keep glob */
	ST_CONVERT_DROP,     /* not written: a drop glob, a scale folded into
	                        its dequantized weight, a tied alias */
	ST_CONVERT_ASIS,     /* not a float st_convert decodes (integers,
	                        BOOL, F6, C64): copied while floats convert */
	ST_CONVERT_DEQUANT,  /* a scaled FP8 or MXFP4 weight dequantized */
	ST_CONVERT_QUANT,    /* quantized to F8_E4M3 (st_quant_target) */
	ST_CONVERT_QSCALE,   /* the new F32 scales of a QUANT weight */
	ST_CONVERT_N_ACTIONS
} st_convert_action;

/* A __metadata__ entry to add or replace. */
typedef struct st_convert_meta {
	const char *key, *value;
} st_convert_meta;

/*
 * A rename rule: a name that starts with from is written with to in place
 * of that prefix (an empty from puts to in front of every name; an empty
 * to strips from).
 */
typedef struct st_convert_rename {
	const char *from, *to;
} st_convert_rename;

/* What to do. Zeroed: copy every tensor unchanged (a layout change). */
typedef struct st_convert_options {
	int has_to;              /* convert floats (F64, F32, F16, BF16, and
	                            the F8 types and F4 without scales,
	                            decoded exactly) to to, and dequantize
	                            scaled weights to it */
	st_dtype to;             /* F64, F32, F16 or BF16 */
	int quantize;            /* to F8_E4M3 blocks (excludes has_to) */
	uint64_t block_rows;     /* quantize's blocks; 0: IN's config.json
	                            weight_block_size when IN has FP8
	                            weights, else ST_QUANT_DEFAULT_BLOCK */
	uint64_t block_cols;
	const char *const *keep; /* fnmatch globs: floats left in their dtype */
	size_t n_keep;
	const char *const *drop; /* globs: tensors left out (win over keep) */
	size_t n_drop;
	const st_convert_meta *meta; /* set after the input files' metadata */
	size_t n_meta;
	/* Renames of the names written (the tensors, their new scales, the
	 * shard index), tried in order: the first rule whose from starts a
	 * name renames it, and no other rule is tried. Keep and drop globs
	 * match the input names. */
	const st_convert_rename *rename;
	size_t n_rename;
} st_convert_options;

/* One tensor of the output (or a dropped input tensor). */
typedef struct st_convert_item {
	const st_tensor *tensor;   /* the input tensor; for QSCALE the new
	                              scale tensor's header */
	size_t src;                /* checkpoint index (QSCALE: its weight's) */
	size_t file;               /* input file holding it */
	st_convert_action action;
	st_dtype out;              /* dtype written */
	const char *out_name;      /* name written (MXFP4 NAME_blocks -> NAME,
	                              the rename rules) */
	size_t out_name_len;
	unsigned out_ndim;         /* shape written */
	const uint64_t *out_dims;
	uint64_t out_bytes;        /* bytes written */
	unsigned shard;            /* output file (st_convert_plan_shards) */
	const st_tensor *alias;    /* a PyTorch alias (dropped): the tensor
	                              whose data it shares, written once; or
	                              NULL */
	int narrows;               /* CONVERT to a narrower (or differently
	                              ranged) float: what it lost is counted
	                              (of the F8 and F4 types only F8_E8M0 to
	                              F16 can lose a value) */
	uint64_t overflow;         /* after a write, when narrows: finite
	                              values that became +-Inf */
	uint64_t underflow;        /* non-zero values that became 0 */
} st_convert_item;

typedef struct st_convert_plan st_convert_plan;

/*
 * Plan the conversion of c (borrowed until st_convert_plan_free) by o
 * (copied). Reads the config.json beside c's files (st_config_read) for
 * the FP8 block size; pairs scaled weights with their scales when
 * converting; when quantizing, refuses weights already quantized in a way
 * the config.json written would not describe (MXFP4, an F8 weight without
 * a scale, other blocks or dtypes: ST_EFORMAT naming file and tensor; for
 * MXFP4 and other blocks or dtypes the message ends in "dequantize it
 * first", or in "dequantize it first or quantize with RxC blocks" when IN's
 * config.json's R x C blocks would keep the weight, for a front end to
 * word in its options) and prepares every quantized weight and its new
 * scale tensor; then renames the names written and refuses two tensors
 * written under one name (ST_EINVAL naming both and the name) or a name
 * renamed to nothing. Returns ST_OK,
 * ST_EINVAL (bad options, a config.json's hostile block size, a clash),
 * ST_EFORMAT, ST_EIO, ST_ENOMEM.
 */
ST_API int st_convert_plan_new(st_convert_plan **out, st_checkpoint *c,
                               const st_convert_options *o, st_error *err);

/* Free a plan (NULL is fine). */
ST_API void st_convert_plan_free(st_convert_plan *p);

/* The items: the checkpoint's tensors in order, then the new scale
 * tensors (QSCALE) of the quantized weights. */
ST_API size_t st_convert_plan_n_items(const st_convert_plan *p);

/* Item i (i < st_convert_plan_n_items), valid until the plan is freed. */
ST_API const st_convert_item *st_convert_plan_item(const st_convert_plan *p, size_t i);

/* How many items have action a. */
ST_API size_t st_convert_plan_count(const st_convert_plan *p, st_convert_action a);

/* Tensors matched by keep glob g (which == 0) or drop glob g (which == 1):
 * 0 for a glob that matches no tensor. */
ST_API size_t st_convert_plan_glob_hits(const st_convert_plan *p, int which, size_t g);

/* Names rename rule r renamed: 0 for a rule that matches no name written
 * (or whose names an earlier rule took). */
ST_API size_t st_convert_plan_rename_hits(const st_convert_plan *p, size_t r);

/*
 * The scaled weights and their scales found (st_quant_plan_build), when
 * converting or quantizing; else an empty plan (every count 0).
 */
ST_API const st_quant_plan *st_convert_plan_pairs(const st_convert_plan *p);

/* The FP8 blocks quantizing writes (the options', IN's or the default). */
ST_API void st_convert_plan_block(const st_convert_plan *p, uint64_t *rows, uint64_t *cols);

/* Whether weights change size by a factor (dequantized or quantized). */
ST_API int st_convert_plan_scaled(const st_convert_plan *p);

/* Input bytes the written tensors read (for a progress total). */
ST_API uint64_t st_convert_plan_in_bytes(const st_convert_plan *p);

/*
 * Lay the items out over output files. A file output (to_dir 0) is one
 * file. A directory with shard_size > 0 is split greedily in canonical
 * order (st_shard_plan); without one, a sharded checkpoint keeps its
 * shards (safetensors or PyTorch, scaled or not): output shard k holds
 * what input shard k held, numbered as the input file names sort, a shard
 * with every tensor dropped left out; a one-file input stays one file. Returns ST_OK, ST_EINVAL (shard_size for a file), ST_ENOMEM.
 */
ST_API int st_convert_plan_shards(st_convert_plan *p, int to_dir, uint64_t shard_size,
                                  st_error *err);

/* Output files (at least 1), after st_convert_plan_shards. */
ST_API unsigned st_convert_plan_n_shards(const st_convert_plan *p);

/* Whether st_convert_plan_shards kept the input's shards. */
ST_API int st_convert_plan_keeps_shards(const st_convert_plan *p);

/* The input file that comes k-th in path order (k < the checkpoint's
 * file count). */
ST_API size_t st_convert_plan_file_order(const st_convert_plan *p, size_t k);

/* The output shard input file f became when shards are kept, or -1 (every
 * tensor of it dropped, or shards not kept). */
ST_API long st_convert_plan_file_shard(const st_convert_plan *p, size_t f);

/* How a write runs. Zeroed: one thread, no progress, never cancelled. */
typedef struct st_convert_run {
	unsigned threads;        /* workers, the caller included; 0: 1 */
	/* Input bytes done since the last call; serialized. May be NULL. */
	void (*progress)(void *ctx, uint64_t bytes);
	/* Polled between chunks (from any worker thread, concurrently) and
	 * between steps; non-zero stops the write with ST_EIO ("cancelled").
	 * Not polled once a snapshot's commit has begun. May be NULL. */
	int (*cancel)(void *ctx);
	/* What st_snapshot_copy_dir and st_snapshot_keep_old did
	 * (ST_PROBLEM_WARNING or ST_PROBLEM_NOTE). May be NULL. */
	st_problem_fn note;
	void *ctx;
} st_convert_run;

/*
 * Write every item to one file at path (st_writer: temporary file +
 * rename), with the input files' metadata (the first file winning) and
 * the options'. The items' overflow and underflow are filled. Returns
 * ST_OK, ST_EIO (a failed write names path and the system error), or the
 * writer's or a read's error.
 */
ST_API int st_convert_write_file(st_convert_plan *p, const char *path, const st_convert_run *r,
                                 st_error *err);

/*
 * The same, to the open descriptor fd (standard output, a pipe) through
 * st_writer_open_fd: no temporary file, no rename; name is what messages
 * call it ("<stdout>"). The plan must have one output file.
 */
ST_API int st_convert_write_fd(st_convert_plan *p, int fd, const char *name,
                               const st_convert_run *r, st_error *err);

/*
 * Write the snapshot directory dir (st/snapshot.h, opened with flags):
 * the shards and, for several, their index; when src is a directory (the
 * input snapshot), its other files, with the config.json the conversion
 * implies (torch_dtype; no quantization_config when dequantizing; FP8's
 * when quantizing); what an existing dir held besides its checkpoint;
 * then swap it in. Returns as st_convert_write_file, or the snapshot's
 * error.
 */
ST_API int st_convert_write_snapshot(st_convert_plan *p, const char *dir, const char *src,
                                     unsigned flags, const st_convert_run *r, st_error *err);

#ifdef __cplusplus
}
#endif

#endif
