#!/usr/bin/python3
"""make_fixtures.py - Llama-family GGUF files made from the snapshots of
testdata/llama/ the way llama.cpp's convert_hf_to_gguf.py makes them, for
stdiff's GGUF <-> snapshot comparison (tests/cli/stdiff_gguf_llama.sh).

Usage: PYTHONPATH=/work/ref/llama.cpp/gguf-py make_fixtures.py

Independent of libst: the GGUF names are gguf-py's own
(gguf.get_tensor_name_map, i.e. gguf/tensor_mapping.py and constants.py),
the q/k permutation is conversion/llama.py's LlamaModel.permute written
with numpy (reshape(n_head, 2, D/2, ...).swapaxes(1, 2); k with the KV head
count), for "llama" only (Qwen2Model/Qwen3Model permute nothing), the
quantized blocks are gguf-py's quants.quantize (Q8_0 is bit-exact with
ggml's quantize_row_q8_0_ref), and llama3's rope_freqs.weight is
LlamaModel.generate_extra_tensors' formula. As the converter does, 1-D
tensors stay F32 and a matrix whose rows are not whole blocks (ffn_down,
48 columns) falls back to F16.

Writes, next to this script:
  llama3-f32.gguf        llama3 (arch llama, GQA 4/2, untied, rope_freqs)
  llama3-q8_0.gguf       ... matrices Q8_0
  llama3-q4_0.gguf       ... matrices Q4_0
  llama3-q4_0-damaged.gguf  one byte of one block of blk.0.ffn_up.weight
                         flipped (XOR 0x88: two codes moved by 8)
  llama3-unpermuted.gguf q/k written in Hugging Face's order (the bug)
  qwen3-q8_0.gguf        qwen3 (q_norm/k_norm, head_dim 16, no permutation)
  qwen3-mixed.gguf       qwen3, the matrices of types mixed as llama-quantize
                         mixes them: token_embd and output Q4_1, block 0's
                         Q5_0, block 1's Q5_1
  qwen3-mixed-damaged.gguf  one byte of codes of one block of
                         blk.1.attn_v.weight (Q5_1) flipped (XOR 0x88)
  qwen2-q8_0.gguf        qwen2 (q/k/v biases, tied: no output.weight)
  mistral-q8_0.gguf      mistral (written as arch llama, like llama.cpp)
  llama2-f32.gguf        llama2_bf16's BF16 values as F32 (arch llama, permuted,
                         no rope scaling: stconvert's GGUF -> snapshot runs it)
  falcon.gguf            an architecture stdiff has no name map for
Not written here: llama2-vocab.gguf, llama2_bf16 as llama.cpp runs it, with
a stand-in vocabulary (<t0>..<t255>, for stconvert's snapshot with tokenizer
files, tests/cli/stconvert_gguf_tokenizer.sh):
  ../llama/gguf_llama.py ../llama/llama2_bf16 llama2-vocab.gguf
"""
import json
import os
import sys

import numpy as np

import gguf
from gguf import quants

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA = os.path.join(HERE, "..", "llama")
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import llama_trace_torch as ref  # noqa: E402  (read_snapshot: numpy arrays)
sys.path.insert(0, LLAMA)
# The llama arch's q/k permutation and llama3's rope_freqs, as llama.cpp's
# converter makes them: one copy, beside the llama.cpp greedy fixtures.
from gguf_llama import llama3_rope_freqs, permute  # noqa: E402

T = gguf.GGMLQuantizationType
ARCH = {"llama": gguf.MODEL_ARCH.LLAMA, "mistral": gguf.MODEL_ARCH.LLAMA,
        "qwen2": gguf.MODEL_ARCH.QWEN2, "qwen3": gguf.MODEL_ARCH.QWEN3}


def write(snapshot, out, qtype, undo_permute=True, damage=None, mixed=False):
    cfg = json.load(open(os.path.join(LLAMA, snapshot, "config.json")))
    mt = cfg["model_type"]
    arch = ARCH[mt]
    name = gguf.MODEL_ARCH_NAMES[arch]
    L, H = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    tmap = gguf.get_tensor_name_map(arch, L)
    w = gguf.GGUFWriter(os.path.join(HERE, out), name)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(L)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg["rope_theta"])
    if "head_dim" in cfg:
        w.add_key_length(hd)
        w.add_value_length(hd)
    rs = cfg.get("rope_scaling") or {}
    if rs.get("type", rs.get("rope_type")) == "linear":  # as LlamaModel writes it
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rs["factor"])
    w.add_file_type({T.F32: 0, T.Q8_0: 7, T.Q4_0: 2, T.Q5_1: 9}[qtype])
    tensors = ref.read_snapshot(os.path.join(LLAMA, snapshot))
    permuting = name == "llama" and undo_permute
    for hf, data in tensors.items():
        if hf.endswith("rotary_emb.inv_freq"):
            continue
        data = np.asarray(data, dtype=np.float32)
        if permuting and hf.endswith(("q_proj.weight", "q_proj.bias")):
            data = permute(data, H)
        if permuting and hf.endswith(("k_proj.weight", "k_proj.bias")):
            data = permute(data, KV)
        gname = tmap.get_name(hf, try_suffixes=(".weight", ".bias"))
        assert gname, hf
        t = qtype if data.ndim == 2 else T.F32
        if mixed and data.ndim == 2:  # as llama-quantize mixes types
            t = T.Q5_0 if ".0." in gname else T.Q5_1 if ".1." in gname else T.Q4_1
        if t != T.F32 and data.shape[-1] % 32:
            t = T.F16  # the converter's fallback for a row of partial blocks
        q = quants.quantize(data, t)
        if damage and gname == damage:
            q = q.copy()
            size, at = {T.Q4_0: (18, 7), T.Q5_1: (24, 15)}[t]
            q.reshape(-1)[3 * size + at] ^= 0x88  # block 3, a byte of codes
        w.add_tensor(gname, q, raw_dtype=t if t not in (T.F32, T.F16) else None)
    rs = cfg.get("rope_scaling") or {}
    if name == "llama" and rs.get("rope_type", "").lower() == "llama3":
        w.add_tensor(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.ROPE_FREQS] + ".weight",
                     llama3_rope_freqs(cfg, cfg.get("head_dim") or
                                       cfg["hidden_size"] // cfg["num_attention_heads"]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def falcon():
    w = gguf.GGUFWriter(os.path.join(HERE, "falcon.gguf"), "falcon")
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.arange(64, dtype=np.float32).reshape(2, 32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    write("llama3", "llama3-f32.gguf", T.F32)
    write("llama3", "llama3-q8_0.gguf", T.Q8_0)
    write("llama3", "llama3-q4_0.gguf", T.Q4_0)
    write("llama3", "llama3-q4_0-damaged.gguf", T.Q4_0, damage="blk.0.ffn_up.weight")
    write("llama3", "llama3-unpermuted.gguf", T.Q8_0, undo_permute=False)
    write("qwen3", "qwen3-q8_0.gguf", T.Q8_0)
    write("qwen3", "qwen3-mixed.gguf", T.Q5_1, mixed=True)
    write("qwen3", "qwen3-mixed-damaged.gguf", T.Q5_1, mixed=True,
          damage="blk.1.attn_v.weight")
    write("qwen2", "qwen2-q8_0.gguf", T.Q8_0)
    write("mistral", "mistral-q8_0.gguf", T.Q8_0)
    write("llama2_bf16", "llama2-f32.gguf", T.F32)
    falcon()


if __name__ == "__main__":
    main()
