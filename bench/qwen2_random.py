#!/usr/bin/python3
"""qwen2_random.py - a Qwen2-0.5B-shaped random snapshot in BF16 for
bench_strun.sh, and the same weights as a GGUF file llama.cpp loads.

Usage: qwen2_random.py OUT_DIR [OUT.gguf [bf16|f16 [0.5b|1.5b]]]

The snapshot (config.json, model.safetensors) has Qwen2-0.5B's shapes:
24 layers, hidden 896, 14 heads, 2 KV heads (head_dim 64), intermediate
4864, vocab 151,936, q/k/v biases, a tied head: 494,032,768 parameters,
about 988 MB in BF16. Weights are N(0, 1/fan_in) rounded to BF16 (norms
near 1), from numpy's default_rng(0): random, so the text is noise, but
the work per token is the real model's. With 1.5b, Qwen2-1.5B's shapes
instead: 28 layers, hidden 1536, 12 heads, 2 KV heads (head_dim 128),
intermediate 8960, the same vocab and tied head: 1,543,714,304
parameters, 3.1 GB in BF16 or F16 (every row a multiple of 256 elements,
so llama.cpp's K-quants apply to every matrix).

The GGUF (version 3, ggml's docs/gguf.md) holds the same BF16 bits (or,
with f16, the same values rounded to F16: exact down to 2^-17, below
which F16's subnormals lack BF16's 8 significant bits, so a few in 10^4
of the values move by less than 2^-25) under
llama.cpp's "qwen2" names (token_embd, output_norm, blk.N.attn_norm,
attn_q/k/v (+bias), attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down;
no output tensor: tied), norms and biases F32, and a stand-in "gpt2"
tokenizer (one token per id, no merges) so that llama.cpp loads it; the
benchmark feeds token ids, never text. Qwen2 runs with NEOX (rotate-half)
rotary embeddings in llama.cpp, so no q/k row is permuted.
"""
import json
import os
import struct
import sys

import numpy as np

SHAPES = {"0.5b": (24, 896, 14, 2, 4864, 151936),
          "1.5b": (28, 1536, 12, 2, 8960, 151936)}
L, C, NH, NKV, I, V = SHAPES["0.5b"]
HD = C // NH
T_UINT32, T_INT32, T_FLOAT32, T_STRING, T_ARRAY = 4, 5, 6, 8, 9
GGML_F32, GGML_F16, GGML_BF16 = 0, 1, 30
ALIGN = 32


def tensors(rng):
    """(name, shape, kind) in order; kind 'mat', 'norm' or 'bias'."""
    out = [("model.embed_tokens.weight", (V, C), "mat")]
    for i in range(L):
        p = "model.layers.%d." % i
        out += [(p + "input_layernorm.weight", (C,), "norm"),
                (p + "self_attn.q_proj.weight", (NH * HD, C), "mat"),
                (p + "self_attn.q_proj.bias", (NH * HD,), "bias"),
                (p + "self_attn.k_proj.weight", (NKV * HD, C), "mat"),
                (p + "self_attn.k_proj.bias", (NKV * HD,), "bias"),
                (p + "self_attn.v_proj.weight", (NKV * HD, C), "mat"),
                (p + "self_attn.v_proj.bias", (NKV * HD,), "bias"),
                (p + "self_attn.o_proj.weight", (C, NH * HD), "mat"),
                (p + "post_attention_layernorm.weight", (C,), "norm"),
                (p + "mlp.gate_proj.weight", (I, C), "mat"),
                (p + "mlp.up_proj.weight", (I, C), "mat"),
                (p + "mlp.down_proj.weight", (C, I), "mat")]
    out.append(("model.norm.weight", (C,), "norm"))
    return out


def values(rng, shape, kind):
    """BF16 bits (uint16) of one tensor."""
    n = int(np.prod(shape))
    if kind == "mat":
        x = rng.standard_normal(n, dtype=np.float32) / np.float32(np.sqrt(shape[-1]))
    elif kind == "norm":
        x = 1 + 0.1 * rng.standard_normal(n, dtype=np.float32)
    else:
        x = 0.1 * rng.standard_normal(n, dtype=np.float32)
    bits = x.astype(np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # nearest even
    return bits.astype(np.uint16).reshape(shape)


def gguf_name(hf):
    table = {"model.embed_tokens.weight": "token_embd.weight",
             "model.norm.weight": "output_norm.weight"}
    if hf in table:
        return table[hf]
    parts = hf.split(".")
    i, rest = parts[2], ".".join(parts[3:])
    m = {"input_layernorm.weight": "attn_norm.weight",
         "post_attention_layernorm.weight": "ffn_norm.weight",
         "self_attn.q_proj.weight": "attn_q.weight",
         "self_attn.q_proj.bias": "attn_q.bias",
         "self_attn.k_proj.weight": "attn_k.weight",
         "self_attn.k_proj.bias": "attn_k.bias",
         "self_attn.v_proj.weight": "attn_v.weight",
         "self_attn.v_proj.bias": "attn_v.bias",
         "self_attn.o_proj.weight": "attn_output.weight",
         "mlp.gate_proj.weight": "ffn_gate.weight",
         "mlp.up_proj.weight": "ffn_up.weight",
         "mlp.down_proj.weight": "ffn_down.weight"}
    return "blk.%s.%s" % (i, m[rest])


def s(text):
    b = text.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, kind, value):
    out = s(key) + struct.pack("<I", kind)
    if kind == T_STRING:
        return out + s(value)
    if kind == T_UINT32:
        return out + struct.pack("<I", value)
    return out + struct.pack("<f", value)


def kv_array(key, kind, vals):
    out = s(key) + struct.pack("<I", T_ARRAY) + struct.pack("<IQ", kind, len(vals))
    if kind == T_STRING:
        return out + b"".join(s(v) for v in vals)
    return out + struct.pack("<%di" % len(vals), *vals)


def main():
    out_dir = sys.argv[1]
    gguf = sys.argv[2] if len(sys.argv) > 2 else None
    f16 = len(sys.argv) > 3 and sys.argv[3] == "f16"
    global L, C, NH, NKV, I, V, HD
    L, C, NH, NKV, I, V = SHAPES[sys.argv[4] if len(sys.argv) > 4 else "0.5b"]
    HD = C // NH
    os.makedirs(out_dir, exist_ok=True)
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
           "hidden_size": C, "intermediate_size": I, "num_hidden_layers": L,
           "num_attention_heads": NH, "num_key_value_heads": NKV,
           "vocab_size": V, "max_position_embeddings": 32768,
           "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
           "tie_word_embeddings": True, "hidden_act": "silu",
           "bos_token_id": 151643, "eos_token_id": 151643,
           "torch_dtype": "bfloat16", "use_sliding_window": False}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    rng = np.random.default_rng(0)
    specs = tensors(rng)
    header, off = {}, 0
    for name, shape, _ in specs:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    data = {}
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape, kind in specs:
            v = values(rng, shape, kind)
            f.write(v.tobytes())
            if gguf:
                data[name] = (v, kind)
    if not gguf:
        return 0
    tokens = ["<t%d>" % i for i in range(V)]
    meta = [kv("general.architecture", T_STRING, "qwen2"),
            kv("general.name", T_STRING, "qwen2-bench"),
            kv("general.file_type", T_UINT32, 1 if f16 else 32),  # F16, BF16
            kv("qwen2.context_length", T_UINT32, 32768),
            kv("qwen2.embedding_length", T_UINT32, C),
            kv("qwen2.feed_forward_length", T_UINT32, I),
            kv("qwen2.block_count", T_UINT32, L),
            kv("qwen2.attention.head_count", T_UINT32, NH),
            kv("qwen2.attention.head_count_kv", T_UINT32, NKV),
            kv("qwen2.attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-6),
            kv("qwen2.rope.freq_base", T_FLOAT32, 1000000.0),
            kv("tokenizer.ggml.model", T_STRING, "gpt2"),
            kv("tokenizer.ggml.pre", T_STRING, "qwen2"),
            kv_array("tokenizer.ggml.tokens", T_STRING, tokens),
            kv_array("tokenizer.ggml.token_type", T_INT32, [1] * V),
            kv_array("tokenizer.ggml.merges", T_STRING, []),
            kv("tokenizer.ggml.bos_token_id", T_UINT32, 151643),
            kv("tokenizer.ggml.eos_token_id", T_UINT32, 151643)]
    infos, off = [], 0
    order = []
    for name, shape, kind in specs:
        v, kind = data[name]
        if kind == "mat" and f16:
            raw = (v.astype(np.uint32) << 16).view(np.float32).astype(np.float16).tobytes()
            ty = GGML_F16
        elif kind == "mat":
            raw, ty = v.tobytes(), GGML_BF16
        else:
            raw = (v.astype(np.uint32) << 16).view(np.float32).tobytes()
            ty = GGML_F32
        dims = list(reversed(shape))
        infos.append(s(gguf_name(name)) + struct.pack("<I", len(dims)) +
                     struct.pack("<%dQ" % len(dims), *dims) + struct.pack("<IQ", ty, off))
        pad = (-len(raw)) % ALIGN
        order.append(raw + b"\0" * pad)
        off += len(raw) + pad
    head = b"GGUF" + struct.pack("<IQQ", 3, len(specs), len(meta))
    head += b"".join(meta) + b"".join(infos)
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(gguf, "wb") as f:
        f.write(head)
        for b in order:
            f.write(b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
