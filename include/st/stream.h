/*
 * st/stream.h - streaming a checkpoint's tensor data: the tensors of one
 * st_checkpoint (or of two, side by side, in lockstep) read in chunks on
 * N threads, handed to a per-chunk callback and, where order matters, to
 * a second callback in chunk order. It is the engine under stconvert's
 * writes, stinfo --stats and stdiff's value pass.
 *
 * What it is not: it does no arithmetic on tensor data (the callbacks
 * convert, reduce or compare) and it writes nothing. Threads are allowed
 * in libst where a library job needs them (st/verify.h runs its own
 * readers); this module's job is reading big checkpoints in bounded
 * memory, and what it needs from the rest of libst is only that
 * st_checkpoint_read may be called from many threads on one handle.
 * Chunk size, threads and buffers are the caller's policy.
 *
 * Model. The caller lists items, each a tensor of side 0 (and the tensor
 * of side 1 it is read beside, for a comparison). An item is read in
 * whole groups of elements: a group is the smallest run of elements that
 * fills whole bytes (one element; two of a 4-bit dtype; four of a 6-bit
 * one: st_dtype_group, which lives in st/dtype.h because it is dtype
 * knowledge). st_stream_run cuts the items, in order, into
 * chunks of at most chunk_size cost units (bytes of the wider side
 * unless the item says otherwise), reads each chunk's pieces into one of
 * a fixed number of buffers, and calls work on it from any worker
 * thread. With a sink, it then calls sink on the chunks strictly in
 * chunk order, one at a time, while other workers go on reading and
 * working. Memory is buffers x (the largest chunk's bytes per side +
 * out_size) plus threads x scratch_size, whatever the checkpoint's size:
 * chunks are cut as they are claimed, so not even a list of them grows
 * with it.
 *
 * Errors: a failed read or a callback returning non-zero records its
 * st_error; the first one wins, no further chunk is claimed and no
 * further sink runs, and st_stream_run returns that error once every
 * thread has stopped. A thread that cannot be started only means fewer
 * workers; the calling thread is always one of them.
 *
 * The three uses (recipes):
 *  1. Convert and write a streaming file (stconvert): one item per output
 *     tensor in write order, cost = output bytes per group, pack = 1 so
 *     small tensors share a chunk, out_size = chunk_size. work converts
 *     each piece into chunk->out; sink appends chunk->out to the writer.
 *  2. Reduce per tensor (stinfo --stats): one item per tensor, cost = 1
 *     (chunk_size counts elements), pack = 0. work computes a partial
 *     result per chunk into chunk->out; sink merges it into the tensor's
 *     total: merges then happen in element order, so the result does not
 *     depend on the thread count.
 *  3. Compare two checkpoints (stdiff): src[1] set, one item per tensor
 *     pair with tensor[0] from A and tensor[1] from B and equal element
 *     counts; work compares piece->data[0] with piece->data[1] into
 *     chunk->out, sink merges in order as in 2 (st/compare.h).
 */
#ifndef ST_STREAM_H
#define ST_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"
#include "index.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Side 0 and side 1 (the second checkpoint of a comparison). */
enum { ST_STREAM_SIDES = 2 };

/* One tensor (pair) to stream. */
typedef struct st_stream_item {
	size_t tensor[ST_STREAM_SIDES]; /* tensor index in each side's handle */
	uint64_t n_groups;               /* groups to read, from the start */
	unsigned group_bytes[ST_STREAM_SIDES]; /* bytes of a group per side; 0
	                                    for a side not read */
	unsigned cost;                   /* chunk_size units per group; 0:
	                                    the largest group_bytes */
} st_stream_item;

/* A run of groups of one item inside a chunk. */
typedef struct st_stream_piece {
	size_t item;                     /* index into the items */
	uint64_t group;                  /* first group, from the item's start */
	uint64_t n_groups;
	const unsigned char *data[ST_STREAM_SIDES]; /* n_groups * group_bytes */
} st_stream_piece;

/* What a callback sees. The pointers are valid during the call only. */
typedef struct st_stream_chunk {
	uint64_t index;                  /* 0, 1, ... in item order */
	const st_stream_piece *pieces;   /* in item and group order */
	size_t n_pieces;
	void *out;                       /* out_size bytes of this chunk's
	                                    buffer: from work to sink */
	void *scratch;                   /* scratch_size bytes of the calling
	                                    worker's own, zeroed at the start */
	unsigned worker;                 /* 0 .. threads-1; 0 is the caller */
} st_stream_chunk;

/*
 * A callback returns 0, or non-zero after filling err (code and a message
 * naming file and tensor); the run then stops.
 */
typedef int (*st_stream_fn)(void *ctx, const st_stream_chunk *chunk,
                            st_error *err);

/* A run: what to read, how, and the callbacks. */
typedef struct st_stream_config {
	st_checkpoint *src[ST_STREAM_SIDES]; /* src[1] NULL: one side */
	const st_stream_item *items;
	size_t n_items;
	uint64_t chunk_size;  /* cost units per chunk; 0: 4 MiB */
	int pack;             /* let a chunk hold pieces of several items */
	unsigned threads;     /* workers, the caller included; 0: 1 */
	unsigned buffers;     /* chunks in flight; 0: threads, or twice that
	                         with a sink; never fewer than threads */
	size_t out_size;      /* bytes of chunk->out per buffer (may be 0) */
	size_t scratch_size;  /* bytes of chunk->scratch per worker (may be 0) */
	st_stream_fn work;    /* any worker, concurrently; required */
	st_stream_fn sink;    /* chunk order, one at a time; NULL for none */
	/*
	 * After each chunk's work, serialized: the chunk and the bytes the
	 * stream read for it (a tool whose work reads more, through a
	 * mapping, counts that itself from the pieces). May be NULL.
	 */
	void (*progress)(void *ctx, const st_stream_chunk *c, uint64_t bytes);
	void *ctx;
} st_stream_config;

/*
 * Stream every item through work (and sink). Returns ST_OK, the first
 * error's code (err filled, when not NULL), or ST_ENOMEM. Helper threads
 * block every signal, so signals reach the calling thread.
 */
ST_API int st_stream_run(const st_stream_config *cfg, st_error *err);

#ifdef __cplusplus
}
#endif

#endif
