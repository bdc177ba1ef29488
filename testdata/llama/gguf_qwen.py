#!/usr/bin/python3
"""gguf_qwen.py - a qwen2 or qwen3 fixture snapshot as an F32 GGUF file
for llama.cpp (llama_cpp_greedy.mjs), so that its greedy ids are a second,
independent reference for strun's (tests/cli/strun.sh).

Usage: gguf_qwen.py SNAPSHOT OUT.gguf

llama.cpp's "qwen2" / "qwen3" names and metadata (Qwen3: attn_q_norm,
attn_k_norm, key_length and value_length for its explicit head_dim),
written with bench/qwen2_random.py's helpers; every tensor F32; no q/k
permutation (llama.cpp runs both with NEOX rotary, Hugging Face's
rotate-half layout); an untied lm_head is "output"; a stand-in tokenizer
(one token per id, no merges): the ids are fed as ids.
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import qwen2_random as q  # noqa: E402
import llama_trace_torch as ref  # noqa: E402


def gguf_name(hf):
    if hf == "lm_head.weight":
        return "output.weight"
    for a, b in (("self_attn.q_norm.weight", "attn_q_norm.weight"),
                 ("self_attn.k_norm.weight", "attn_k_norm.weight")):
        if hf.endswith(a):
            return "blk.%s.%s" % (hf.split(".")[2], b)
    return q.gguf_name(hf)


def main():
    snap, out = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(snap, "config.json")))
    t = ref.read_snapshot(snap)
    arch = cfg["model_type"]
    V, pre = cfg["vocab_size"], arch + "."
    hd = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    meta = [q.kv("general.architecture", q.T_STRING, arch),
            q.kv(pre + "attention.key_length", q.T_UINT32, hd),
            q.kv(pre + "attention.value_length", q.T_UINT32, hd),
            q.kv("general.name", q.T_STRING, "strun-fixture"),
            q.kv("general.file_type", q.T_UINT32, 0),
            q.kv(pre + "context_length", q.T_UINT32, cfg["max_position_embeddings"]),
            q.kv(pre + "embedding_length", q.T_UINT32, cfg["hidden_size"]),
            q.kv(pre + "feed_forward_length", q.T_UINT32, cfg["intermediate_size"]),
            q.kv(pre + "block_count", q.T_UINT32, cfg["num_hidden_layers"]),
            q.kv(pre + "attention.head_count", q.T_UINT32, cfg["num_attention_heads"]),
            q.kv(pre + "attention.head_count_kv", q.T_UINT32, cfg["num_key_value_heads"]),
            q.kv(pre + "attention.layer_norm_rms_epsilon", q.T_FLOAT32, cfg["rms_norm_eps"]),
            q.kv(pre + "rope.freq_base", q.T_FLOAT32, cfg["rope_theta"]),
            q.kv("tokenizer.ggml.model", q.T_STRING, "gpt2"),
            q.kv("tokenizer.ggml.pre", q.T_STRING, "qwen2"),
            q.kv_array("tokenizer.ggml.tokens", q.T_STRING, ["<t%d>" % i for i in range(V)]),
            q.kv_array("tokenizer.ggml.token_type", q.T_INT32, [1] * V),
            q.kv_array("tokenizer.ggml.merges", q.T_STRING, []),
            q.kv("tokenizer.ggml.bos_token_id", q.T_UINT32, cfg["bos_token_id"]),
            q.kv("tokenizer.ggml.eos_token_id", q.T_UINT32, cfg["eos_token_id"])]
    infos, blobs, off = [], [], 0
    for name in sorted(t):
        a = np.ascontiguousarray(t[name], dtype=np.float32)
        dims = list(reversed(a.shape))
        infos.append(q.s(gguf_name(name)) + struct.pack("<I", len(dims)) +
                     struct.pack("<%dQ" % len(dims), *dims) +
                     struct.pack("<IQ", q.GGML_F32, off))
        raw = a.tobytes()
        pad = (-len(raw)) % q.ALIGN
        blobs.append(raw + b"\0" * pad)
        off += len(raw) + pad
    head = b"GGUF" + struct.pack("<IQQ", 3, len(t), len(meta))
    head += b"".join(meta) + b"".join(infos)
    head += b"\0" * ((-len(head)) % q.ALIGN)
    with open(out, "wb") as f:
        f.write(head + b"".join(blobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
