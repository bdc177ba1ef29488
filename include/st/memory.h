/*
 * st/memory.h - what a checkpoint takes in memory: its weights loaded
 * with the floats in a given dtype, and the KV cache its config.json
 * implies for a context length.
 *
 * What it is: arithmetic over the tensor inventory (headers only) and
 * over st_arch_config's sizes, the conventions a loader follows: every
 * floating-point tensor is held in the dtype asked for (n_elements x its
 * size), everything else as stored (integers, BOOL, and the quantized
 * layouts st_quant_summary_load pairs: FP8 weights with their scales,
 * MXFP4 blocks and scales, which a loader keeps quantized). The KV cache
 * is transformers' and llama.cpp's: per layer a key and a value of
 * kv_heads x head_dim per token, layers x 2 x kv_heads x head_dim x
 * context x the element's bytes (GPT-2: kv_heads = heads, head_dim =
 * n_embd / n_head).
 *
 * What it is not: a measure of a process (no allocator overhead, no
 * activations, no framework's buffers), nor a reader of tensor data.
 *
 * Contract: no state, no printing; every product is checked and a sum
 * that would pass 2^64 is an error, never a wrapped number.
 */
#ifndef ST_MEMORY_H
#define ST_MEMORY_H

#include "arch.h"
#include "checkpoint.h"
#include "dtype.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The bytes of ck's tensors with every floating-point tensor (F64 to F4)
 * held as as[k], for each of the n dtypes of as, into bytes[k]; a
 * tensor's bytes are rounded up to whole bytes (F4: two elements a byte).
 * Quantized layouts (the FP8 weights and scales, MXFP4 blocks and scales
 * st_quant_summary_load pairs, with config.json's FP8 block size) and
 * every tensor that is not a float count as stored. Reads headers and
 * config.json only. Returns ST_OK; ST_EINVAL (an as[k] that is not a
 * float dtype, or a total past 2^64); ST_ENOMEM.
 */
ST_API int st_memory_load_bytes(const st_checkpoint *ck, const st_dtype *as, size_t n,
                                uint64_t *bytes, st_error *err);

/*
 * The KV cache of cfg (st_arch_config_parse) for context tokens held in
 * dtype as: cfg->layers x 2 x cfg->kv_heads x cfg->head_dim x context x
 * st_dtype_bits(as) / 8, into *bytes. Returns ST_OK; ST_EINVAL (cfg of
 * no known family, as not a float of whole bytes, a product past 2^64,
 * e.g. "KV cache for 18446744073709551615 tokens: more than 2^64 bytes").
 */
ST_API int st_memory_kv_cache(const st_arch_config *cfg, uint64_t context, st_dtype as,
                              uint64_t *bytes, st_error *err);

#ifdef __cplusplus
}
#endif

#endif
