/*
 * gguf_map.h - the one table between GPT-2's Hugging Face tensor names and
 * the names llama.cpp gives them in a GGUF file (gguf-py's
 * MODEL_ARCH.GPT2 tensors, as convert_hf_to_gguf.py maps them), with what
 * each conversion does to the data. Shared by gpt2export (both
 * directions) and stdiff --map gpt2. Not part of libst.
 *
 *   wte.weight              token_embd.weight       [V, C]
 *   wpe.weight              position_embd.weight    [P, C], kept F32
 *   h.N.ln_1.weight/bias    blk.N.attn_norm.*       F32
 *   h.N.attn.c_attn.*       blk.N.attn_qkv.*        weight transposed
 *   h.N.attn.c_proj.*       blk.N.attn_output.*     weight transposed
 *   h.N.ln_2.weight/bias    blk.N.ffn_norm.*        F32
 *   h.N.mlp.c_fc.*          blk.N.ffn_up.*          weight transposed
 *   h.N.mlp.c_proj.*        blk.N.ffn_down.*        weight transposed
 *   ln_f.weight/bias        output_norm.*           F32
 *
 * HF's Conv1D weights are [in, out]; llama.cpp wants nn.Linear's
 * [out, in], which a GGUF stores with dims {in, out} (dims[0] fastest).
 * lm_head.weight has no GGUF tensor: llama.cpp ties output to token_embd.
 */
#ifndef ST_GGUF_MAP_H
#define ST_GGUF_MAP_H

#include <stddef.h>

/* What a mapped tensor is. */
typedef struct gguf_map_info {
	int transpose; /* 1: a Conv1D weight, [in, out] <-> [out, in] */
	int keep_f32;  /* 1: vectors and position_embd, never quantized */
	int layer;     /* the block number, or -1 for a global tensor */
} gguf_map_info;

/*
 * The GGUF name of a GPT-2 HF name (a leading "transformer." is
 * ignored) into out. Returns 0, or -1 when it is no GPT-2 parameter (a
 * legacy attn.bias buffer, lm_head.weight, anything else) or out is too
 * small.
 */
int gguf_map_gpt2_to_gguf(const char *hf, char *out, size_t size,
                          gguf_map_info *info);
/* The HF name of a GGUF name; 0, or -1 when it is not one of the table. */
int gguf_map_gpt2_from_gguf(const char *gguf, char *out, size_t size,
                            gguf_map_info *info);

#endif
