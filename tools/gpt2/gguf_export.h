/*
 * gguf_export.h - gpt2export's GGUF work: a GPT-2 GGUF file back to a
 * Hugging Face snapshot. Not part of libst. The way there (snapshot ->
 * GGUF) is libst's st_hf_write_gguf (st/gguf.h), which gpt2export calls.
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

/*
 * GGUF file in (a GPT-2, as st_hf_write_gguf or llama.cpp's converter
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
