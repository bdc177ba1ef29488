/*
 * trace.h - record every intermediate of one GPT-2 forward pass and write
 * it as a safetensors trace (doc/trace.md: names, shapes, definitions).
 *
 * Recipe (gpt2run --trace):
 *   1. gpt2_trace_new(&tr, &m->config, T, err, n)
 *   2. gpt2_cache_set_trace(cache, gpt2_trace_record, tr)
 *   3. gpt2_forward(m, cache, ids, T, logits, 1, ...)  positions 0..T-1
 *   4. gpt2_trace_write(tr, "trace.safetensors", ids, err, n)
 *   5. gpt2_trace_free(tr)
 *
 * The values are copied as the forward pass hands them over, and written
 * after it: the file's header lists tensors in the canonical writer's
 * order, so the forward order is kept in __metadata__["order"].
 */
#ifndef ST_GPT2_TRACE_H
#define ST_GPT2_TRACE_H

#include "gpt2/gpt2.h"

typedef struct gpt2_trace gpt2_trace;

/* A trace of T tokens at positions 0..T-1. 0, or -1 with a message. */
int gpt2_trace_new(gpt2_trace **out, const gpt2_config *cfg, int T,
                   char *err, size_t errlen);
void gpt2_trace_free(gpt2_trace *tr);
/* The gpt2_trace_fn to give gpt2_cache_set_trace, with ctx the trace. */
void gpt2_trace_record(void *ctx, enum gpt2_stage stage, int layer,
                       const float *values, int rows, size_t width);
/* How many tensors the file will hold (ids included): 6 + 13 n_layer. */
size_t gpt2_trace_n_tensors(const gpt2_trace *tr);
/* Bytes of tensor data the file will hold. */
uint64_t gpt2_trace_bytes(const gpt2_trace *tr);
/*
 * Write the trace (ids: the T prompt ids, stored as I64 'ids') to path,
 * atomically. Every stage must have been recorded once, with the shape
 * it has for this config and T. 0, or -1 with a message.
 */
int gpt2_trace_write(const gpt2_trace *tr, const char *path,
                     const int32_t *ids, char *err, size_t errlen);

#endif
