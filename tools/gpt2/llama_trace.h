/*
 * llama_trace.h - record every stage of one Llama-family forward pass
 * (llama_forward's llama_trace_fn) and write it as a safetensors trace:
 * the names of doc/trace.md ("The Llama family"), "layers.N." before a
 * block's stages, per-head stages [T, heads, head_dim], the forward
 * order in __metadata__["order"], as GPT-2's trace.h writes its own.
 *
 * Recipe (model.c): llama_trace_new(&tr, T, ...),
 * llama_cache_set_trace(c, llama_trace_record, tr), llama_forward(...,
 * all_logits 1), llama_trace_write(tr, path, ids, ...), llama_trace_free.
 */
#ifndef ST_GPT2_LLAMA_TRACE_H
#define ST_GPT2_LLAMA_TRACE_H

#include "gpt2/llama.h"

typedef struct llama_trace llama_trace;

/* A trace of T tokens at positions 0..T-1. 0, or -1 with a message. */
int llama_trace_new(llama_trace **out, int T, char *err, size_t errlen);
void llama_trace_free(llama_trace *tr);
/* The llama_trace_fn to give llama_cache_set_trace, ctx the trace. */
void llama_trace_record(void *ctx, const char *name, int layer, const float *values, int rows,
                        size_t width, int heads);
/* Write the stages recorded (ids: the T prompt ids, as I64 'ids') to
 * path, atomically. 0, or -1 with a message. */
int llama_trace_write(const llama_trace *tr, const char *path, const int32_t *ids, char *err,
                      size_t errlen);

#endif
