#!/usr/bin/python3
"""gguf_llama.py - a fixture snapshot (llama, mistral, qwen2, qwen3) as an
F32 GGUF file for llama.cpp (llama_cpp_greedy.mjs), so that its greedy ids
are a second, independent reference for strun's (tests/cli/strun.sh).

Usage: gguf_llama.py SNAPSHOT OUT.gguf

Written as llama.cpp's convert_hf_to_gguf.py (/work/ref/llama.cpp,
conversion/llama.py and conversion/base.py) would, with
bench/qwen2_random.py's GGUF helpers; every tensor F32 (BF16 weights
widen exactly); an untied lm_head is "output"; a stand-in tokenizer (one
token per id, no merges): the ids are fed as ids.

  qwen2, qwen3   llama.cpp's "qwen2" / "qwen3" (Qwen3: attn_q_norm,
                 attn_k_norm, key_length and value_length for its explicit
                 head_dim); no q/k permutation: llama.cpp runs both with
                 NEOX rotary, Hugging Face's rotate-half layout.
  llama, mistral llama.cpp's "llama" (convert_hf_to_gguf maps
                 MistralForCausalLM to it too), which runs the interleaved
                 (NORM) rotary: q_proj and k_proj rows (and biases) are
                 permuted per head, see permute(). rope_scaling llama3
                 becomes a rope_freqs.weight tensor of per-frequency
                 divisors (LlamaModel.generate_extra_tensors), linear
                 becomes llama.rope.scaling.type/.factor (TextModel.
                 set_gguf_parameters). attention_bias and mlp_bias: the
                 llama arch loads blk.N.attn_{q,k,v,output}.bias and
                 ffn_{gate,up,down}.bias when present (src/models/llama.cpp,
                 TENSOR_NOT_REQUIRED). sliding_window: convert_hf_to_gguf
                 writes none for the llama arch and its graph has no
                 sliding-window mask, so the GGUF is the model WITHOUT the
                 window (said on stderr).
"""
import json
import math
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import qwen2_random as q  # noqa: E402
import llama_trace_torch as ref  # noqa: E402

EXTRA_NAMES = (("self_attn.q_norm.weight", "attn_q_norm.weight"),
               ("self_attn.k_norm.weight", "attn_k_norm.weight"),
               ("self_attn.o_proj.bias", "attn_output.bias"),
               ("mlp.gate_proj.bias", "ffn_gate.bias"),
               ("mlp.up_proj.bias", "ffn_up.bias"),
               ("mlp.down_proj.bias", "ffn_down.bias"))


def gguf_name(hf):
    if hf == "lm_head.weight":
        return "output.weight"
    if hf == "rope_freqs.weight":  # llama_tensors' own, already llama.cpp's
        return hf
    for a, b in EXTRA_NAMES:
        if hf.endswith(a):
            return "blk.%s.%s" % (hf.split(".")[2], b)
    return q.gguf_name(hf)


def permute(w, n_head):
    """Rows of one q_proj/k_proj weight (or bias) from Hugging Face's
    rotate-half order (per head: the first halves of the rotary pairs, then
    the second halves) to llama.cpp's interleaved pairs: LlamaModel.permute
    of llama.cpp's conversion/llama.py, reshape(n_head, 2, head_dim / 2,
    ...).swapaxes(1, 2); n_head is num_key_value_heads for k_proj."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def llama3_rope_freqs(cfg, hd):
    """rope_freqs.weight: llama.cpp divides each rotary frequency by these
    (LlamaModel.generate_extra_tensors, the same rule as transformers'
    _compute_llama3_parameters)."""
    rs = cfg["rope_scaling"]
    base = cfg["rope_theta"]
    factor = rs.get("factor", 8.0)
    low, high = rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
    old = rs.get("original_max_position_embeddings", 8192)
    freqs = 1.0 / (np.float32(base) ** (np.arange(0, hd, 2, dtype=np.float32) / np.float32(hd)))
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / float(freq)
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def llama_tensors(cfg, t):
    """The llama arch's q/k permutation, and rope_freqs for llama3."""
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    for name in t:
        if ".self_attn.q_proj." in name:
            t[name] = permute(t[name], nh)
        elif ".self_attn.k_proj." in name:
            t[name] = permute(t[name], nkv)
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) == "llama3":
        hd = cfg.get("head_dim", cfg["hidden_size"] // nh)
        t["rope_freqs.weight"] = llama3_rope_freqs(cfg, hd)


def rope_meta(cfg, pre):
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type"))
    if kind is None or kind == "llama3":  # llama3: rope_freqs.weight
        return []
    if kind != "linear":
        raise SystemExit("gguf_llama.py: rope_scaling %s not written" % kind)
    return [q.kv(pre + "rope.scaling.type", q.T_STRING, "linear"),
            q.kv(pre + "rope.scaling.factor", q.T_FLOAT32, rs["factor"])]


def main():
    snap, out = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(snap, "config.json")))
    t = ref.read_snapshot(snap)
    arch = {"mistral": "llama"}.get(cfg["model_type"], cfg["model_type"])
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
    if arch == "llama":
        meta.append(q.kv(pre + "rope.dimension_count", q.T_UINT32, hd))
        meta += rope_meta(cfg, pre)
        llama_tensors(cfg, t)
        if cfg.get("sliding_window") is not None:
            sys.stderr.write("gguf_llama.py: %s: sliding_window %d is not "
                             "written: llama.cpp's llama arch attends to the "
                             "whole context\n" % (snap, cfg["sliding_window"]))
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
