#!/usr/bin/python3
"""make_llama_seeds.py - seeds of fuzz_llama_model (targets_gpt2.c).

Each seed is the target's input: a mode byte, a config.json, a NUL, then a
model.safetensors written here by hand (u64 LE header length, JSON header
padded with spaces, data), small Llama-family models of each architecture
strun runs, in F32, BF16, F16 and block-scaled F8_E4M3:

    /usr/bin/python3 tests/fuzz/make_llama_seeds.py tests/fuzz/corpus/llama_model

Random values from a fixed seed (numpy), so the same files every time.
"""
import json
import os
import struct
import sys

import numpy as np

rng = np.random.default_rng(21)

H, I, NH, V, L = 8, 12, 2, 16, 1


def config(model_type, kv, tied, extra=None):
    c = {
        "model_type": model_type,
        "hidden_size": H,
        "intermediate_size": I,
        "num_attention_heads": NH,
        "num_key_value_heads": kv,
        "num_hidden_layers": L,
        "vocab_size": V,
        "max_position_embeddings": 32,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "tie_word_embeddings": tied,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    c.update(extra or {})
    return c


def shapes(model_type, kv, tied, hd):
    s = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,)}
    if not tied:
        s["lm_head.weight"] = (V, H)
    for l in range(L):
        p = "model.layers.%d." % l
        s[p + "input_layernorm.weight"] = (H,)
        s[p + "post_attention_layernorm.weight"] = (H,)
        s[p + "self_attn.q_proj.weight"] = (NH * hd, H)
        s[p + "self_attn.k_proj.weight"] = (kv * hd, H)
        s[p + "self_attn.v_proj.weight"] = (kv * hd, H)
        s[p + "self_attn.o_proj.weight"] = (H, NH * hd)
        if model_type == "qwen2":
            s[p + "self_attn.q_proj.bias"] = (NH * hd,)
            s[p + "self_attn.k_proj.bias"] = (kv * hd,)
            s[p + "self_attn.v_proj.bias"] = (kv * hd,)
        if model_type == "qwen3":
            s[p + "self_attn.q_norm.weight"] = (hd,)
            s[p + "self_attn.k_norm.weight"] = (hd,)
        s[p + "mlp.gate_proj.weight"] = (I, H)
        s[p + "mlp.up_proj.weight"] = (I, H)
        s[p + "mlp.down_proj.weight"] = (H, I)
    return s


def bf16(a):
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def safetensors(tensors):
    """tensors: name -> (dtype, shape, bytes), in name order."""
    header, data = {}, b""
    for name in sorted(tensors):
        dt, shape, raw = tensors[name]
        header[name] = {"dtype": dt, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def model(model_type, kv, tied, dtype, hd=None, block=None):
    hd = hd or H // NH
    t = {}
    for name, shape in shapes(model_type, kv, tied, hd).items():
        a = rng.standard_normal(shape).astype(np.float32) * 0.5
        if len(shape) == 1 and name.endswith("norm.weight"):
            a = 1.0 + 0.1 * a
        if dtype == "F8_E4M3" and len(shape) == 2:
            # Codes other than the NaNs, and an F32 scale per block.
            codes = rng.integers(0, 256, shape, dtype=np.uint8)
            codes[(codes & 0x7F) == 0x7F] = 0x38
            t[name] = ("F8_E4M3", shape, codes.tobytes())
            br, bc = block
            sr, sc = -(-shape[0] // br), -(-shape[1] // bc)
            s = (rng.random((sr, sc)) * 0.01 + 0.001).astype(np.float32)
            t[name + "_scale_inv"] = ("F32", (sr, sc), s.tobytes())
        elif dtype == "BF16":
            t[name] = ("BF16", shape, bf16(a).tobytes())
        elif dtype == "F16":
            t[name] = ("F16", shape, a.astype(np.float16).tobytes())
        else:
            t[name] = ("F32", shape, a.tobytes())
    return safetensors(t)


def seed(path, mode, cfg, st):
    with open(path, "wb") as f:
        f.write(bytes([mode]) + json.dumps(cfg).encode() + b"\0" + st)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    fp8 = {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
                                   "activation_scheme": "dynamic",
                                   "weight_block_size": [4, 4]}}
    seeds = [
        ("seed-llama-f32", 0, config("llama", 1, True), model("llama", 1, True, "F32")),
        ("seed-llama-bf16-untied", 2, config("llama", 2, False),
         model("llama", 2, False, "BF16")),
        ("seed-mistral-f16", 4, config("mistral", 1, False, {"sliding_window": 4}),
         model("mistral", 1, False, "F16")),
        ("seed-qwen2-f32", 1, config("qwen2", 1, True), model("qwen2", 1, True, "F32")),
        ("seed-qwen3-bf16", 3, config("qwen3", 1, True, {"head_dim": 8}),
         model("qwen3", 1, True, "BF16", hd=8)),
        ("seed-qwen3-fp8", 0, config("qwen3", 1, True, dict(fp8, head_dim=4)),
         model("qwen3", 1, True, "F8_E4M3", block=(4, 4))),
        ("seed-llama-fp8-gemm", 1, config("llama", 1, False, fp8),
         model("llama", 1, False, "F8_E4M3", block=(4, 4))),
        ("seed-llama3-rope", 2, config("llama", 1, True, {
            "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 16}}),
         model("llama", 1, True, "F32")),
    ]
    for name, mode, cfg, st in seeds:
        seed(os.path.join(out, name), mode, cfg, st)


if __name__ == "__main__":
    main()
