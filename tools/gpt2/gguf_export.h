/*
 * gguf_export.h - gpt2export's GGUF work: a Hugging Face GPT-2 snapshot
 * -> a GGUF file that llama.cpp loads and runs, and back. Not part of
 * libst.
 *
 * The file follows llama.cpp's convert_hf_to_gguf.py for GPT2LMHeadModel:
 * general.architecture "gpt2" with its keys (context_length,
 * embedding_length, feed_forward_length, block_count,
 * attention.head_count, attention.layer_norm_epsilon), general.file_type,
 * the tokenizer as tokenizer.ggml.* (model "gpt2", pre "gpt-2", tokens,
 * token types, merges, special ids), and the tensors under llama.cpp's
 * names (st/arch.h): Conv1D weights transposed to [out, in];
 * LayerNorm weights, biases and position_embd F32 whatever the type asked
 * for; no output.weight (llama.cpp ties it to token_embd).
 */
#ifndef ST_GPT2_GGUF_EXPORT_H
#define ST_GPT2_GGUF_EXPORT_H

#include <stddef.h>

#include "gpt2/export.h"

/* general.file_type of a GGUF whose matrices are type (ST_GGML_*), or -1. */
int gpt2_gguf_file_type(unsigned type);

/*
 * Snapshot in (a folder, .safetensors file or shard index with config.json
 * and the tokenizer files in its folder) -> GGUF file out, its matrices
 * (token_embd and the four per-layer weights) as type: ST_GGML_F32, F16,
 * BF16, Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1 (rows not a multiple of 32 fall back
 * to F16, as llama-quantize and the converter do), or -1 for the source's
 * dtype (F32 when they mix). Streams one tensor at a time; out is written
 * atomically. Returns 0, or -1 with one line in err.
 */
int gpt2_export_hf_to_gguf(const char *in, const char *out, int type,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen);

/*
 * GGUF file in (a GPT-2, as gpt2_export_hf_to_gguf or llama.cpp's converter
 * writes one) -> snapshot folder out_dir, by libst's st_gguf_write_snapshot
 * (config.json and generation_config.json from the gpt2.* keys,
 * model.safetensors with HF names and layouts, quantized types dequantized,
 * vocab.json, merges.txt, tokenizer.json and tokenizer_config.json rebuilt
 * from tokenizer.ggml.*), every tensor in one dtype: ST_DTYPE_F32, _F16,
 * _BF16, or -1 for the matrices' type (F32 when they are quantized or
 * mixed). An existing out_dir (the caller checked --force) is written
 * into: what it holds but weights is kept (ST_GGUF_SNAPSHOT_KEEP_OLD).
 * Returns 0, or -1 with one line.
 */
int gpt2_export_gguf_to_hf(const char *in, const char *out_dir, int dtype,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen);

#endif
