#!/usr/bin/python3
"""make_fixtures.py - the q/k weights of a Llama-family snapshot as
llama.cpp's GGUF converter leaves them, for stdiff's rotary-layout
diagnosis (tests/cli/stdiff_traps.sh).

Input: testdata/llama/qwen2/model.safetensors (4 query heads and 1 KV
head of head_dim 8, with q/k/v biases). Output, next to this script:

  qk_gguf.safetensors  the same tensors, but every q_proj/k_proj weight
                       and bias permuted as convert_hf_to_gguf.py's
                       LlamaModel.permute does: reshape(H, 2, D/2, ...)
                       .swapaxes(1, 2) (H = num_attention_heads for q,
                       num_key_value_heads for k). stdiff must name
                       exactly those 8 tensors, heads of 8 rows.
  scaled.safetensors   the same tensors, but each norm weight multiplied
                       element by element and each q_proj weight row by
                       row by factors near 1: not a permutation, and
                       stdiff must not call it one.

numpy (and scripts/llama_trace_torch.py's file helpers, which import
torch); run from anywhere: python3 make_fixtures.py
"""
import json
import os
import struct

import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "scripts"))
import llama_trace_torch as ref  # noqa: E402  (its safetensors reader/writer)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "llama", "qwen2", "model.safetensors")
N_HEAD, N_KV_HEAD = 4, 1


def read(path):
    """[(name, array)] in data order, and the __metadata__."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", None)
    tensors = ref.read_safetensors(path)
    order = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    return [(k, tensors[k].copy()) for k in order], meta


def permute(w, n_head):
    """convert_hf_to_gguf.py, LlamaModel.permute (weights and biases)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def main():
    tensors, meta = read(SRC)
    gguf, scaled = [], []
    rng = np.random.default_rng(21)
    for name, arr in tensors:
        g = arr
        if ".q_proj." in name:
            g = permute(arr, N_HEAD)
        elif ".k_proj." in name:
            g = permute(arr, N_KV_HEAD)
        gguf.append((name, g))
        s = arr
        if name.endswith("norm.weight"):
            s = arr * (1 + rng.uniform(-0.01, 0.01, arr.shape)).astype("f4")
        elif name.endswith("q_proj.weight"):
            f = 1 + rng.uniform(-0.01, 0.01, (arr.shape[0], 1))
            s = arr * f.astype("f4")
        scaled.append((name, s))
    ref.write_safetensors(os.path.join(HERE, "qk_gguf.safetensors"), gguf, meta)
    ref.write_safetensors(os.path.join(HERE, "scaled.safetensors"), scaled, meta)


if __name__ == "__main__":
    main()
