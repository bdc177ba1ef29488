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
#include "gguf.h"

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

/* ---- a GGUF file ----------------------------------------------------------- */

/*
 * st_memory_load_bytes for a GGUF file: its float tensors (F64, F32, F16,
 * BF16) as n_elements x as[k]'s size, its block types (Q8_0, Q4_K, ...)
 * and integers as stored. Returns ST_OK, ST_EINVAL (as st_memory_load_bytes).
 */
ST_API int st_memory_gguf_load_bytes(const st_gguf *g, const st_dtype *as, size_t n,
                                     uint64_t *bytes, st_error *err);

/*
 * The attention sizes of a GGUF file's metadata, as st_memory_kv_cache
 * reads them from cfg: general.architecture "gpt2" (family ST_ARCH_GPT2)
 * or "llama", "qwen2", "qwen3" (ST_ARCH_LLAMA; llama.cpp calls Mistral
 * "llama"), then ARCH.block_count (layers), ARCH.attention.head_count,
 * ARCH.attention.head_count_kv (default: head_count), ARCH.embedding_length
 * and ARCH.attention.key_length (head_dim; default: embedding_length /
 * head_count). Only those members and arch are set; the others are 0.
 * Returns ST_OK; ST_EUNSUPPORTED (another architecture or none, cfg->arch
 * says which; or a value_length other than key_length); ST_EFORMAT (a key
 * missing, not an unsigned integer (a per-layer array included), or out
 * of range: 1 to 2^31, at most 4096 layers, head_count a multiple of
 * head_count_kv).
 */
ST_API int st_memory_gguf_config(const st_gguf *g, st_arch_config *cfg, st_error *err);

#ifdef __cplusplus
}
#endif

#endif
