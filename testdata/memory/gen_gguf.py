#!/usr/bin/python3
"""GGUF fixtures of tests/check_memory.c, written by gguf-py (not libst).

llama.gguf   general.architecture llama with Llama-3-8B's attention
             (block_count 32, head_count 32, head_count_kv 8,
             embedding_length 4096: head_dim 128) and four small tensors:
             token_embd.weight F32 [4, 8] (32 values), blk.0.attn_q.weight
             Q8_0 of 64 values (2 blocks, 68 bytes), output_norm.weight F16
             [8], blk.0.ids I32 [2] (8 bytes)
qwen2.gguf   qwen2 with Qwen2.5-0.5B's (24 blocks, 14 heads, 2 KV heads,
             embedding_length 896) and an explicit key_length 64; no tensor
phi.gguf     general.architecture phi3: not a family libst knows
kvarray.gguf llama whose head_count_kv is a per-layer array

Run: PYTHONPATH=/work/ref/llama.cpp/gguf-py /usr/bin/python3 testdata/memory/gen_gguf.py
"""
import os

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType
from gguf.quants import quantize

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, arch, kv, tensors=()):
    w = GGUFWriter(os.path.join(HERE, name), arch)
    for key, val in kv.items():
        if isinstance(val, list):
            w.add_array(key, val)
        else:
            w.add_uint32(key, val)
    for tname, arr, raw in tensors:
        if raw is None:
            w.add_tensor(tname, arr)
        else:
            w.add_tensor(tname, quantize(arr, raw), raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    rng = np.random.default_rng(7)
    write("llama.gguf", "llama",
          {"llama.block_count": 32, "llama.attention.head_count": 32,
           "llama.attention.head_count_kv": 8, "llama.embedding_length": 4096},
          [("token_embd.weight", rng.standard_normal((4, 8)).astype(np.float32), None),
           ("blk.0.attn_q.weight", rng.standard_normal((2, 32)).astype(np.float32),
            GGMLQuantizationType.Q8_0),
           ("output_norm.weight", np.ones(8, dtype=np.float16), None),
           ("blk.0.ids", np.array([1, 2], dtype=np.int32), None)])
    write("qwen2.gguf", "qwen2",
          {"qwen2.block_count": 24, "qwen2.attention.head_count": 14,
           "qwen2.attention.head_count_kv": 2, "qwen2.embedding_length": 896,
           "qwen2.attention.key_length": 64, "qwen2.attention.value_length": 64})
    write("phi.gguf", "phi3", {"phi3.block_count": 32})
    write("kvarray.gguf", "llama",
          {"llama.block_count": 2, "llama.attention.head_count": 4,
           "llama.attention.head_count_kv": [2, 4], "llama.embedding_length": 16})


if __name__ == "__main__":
    main()
