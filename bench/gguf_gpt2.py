#!/usr/bin/python3
"""gguf_gpt2.py - write a GPT-2 snapshot (model.safetensors, config.json,
vocab.json, merges.txt) as a GGUF file llama.cpp loads, for the llama.cpp
side of bench_gpt2run.sh only (gpt2export may write GGUF itself; this is
the benchmark's own small writer, so it does not depend on it).

Usage: gguf_gpt2.py SNAPSHOT OUT.gguf f32|f16

The format follows ggml's docs/gguf.md (version 3: header, key-value
metadata, tensor infos, data aligned to 32 bytes); the tensor names and
shapes are llama.cpp's for its "gpt2" architecture: token_embd,
position_embd, output_norm, and per block attn_norm, attn_qkv,
attn_output, ffn_norm, ffn_up, ffn_down (weights and biases). The output
head is tied (no "output" tensor: llama.cpp then uses token_embd). GGUF
dims are ggml's ne order (fastest first), so a numpy (out, in) matrix is
written with dims [in, out]; HF's Conv1D weights are [in, out] and are
transposed first. Matrices and embeddings take the asked type, vectors
stay F32 (as llama.cpp's converter writes them).
"""
import json
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, T_UINT64 = 4, 5, 6, 7, 8, 9, 10
GGML_F32, GGML_F16 = 0, 1
ALIGN = 32


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        data = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    kinds = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[base + b:base + e]
        if info["dtype"] == "BF16":
            a = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            a = raw.view(kinds[info["dtype"]]).astype(np.float32)
        out[name] = a.reshape(info["shape"])
    return out


def s(text):
    b = text.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, kind, value):
    out = s(key) + struct.pack("<I", kind)
    if kind == T_STRING:
        return out + s(value)
    if kind == T_UINT32:
        return out + struct.pack("<I", value)
    if kind == T_FLOAT32:
        return out + struct.pack("<f", value)
    raise ValueError(kind)


def kv_array(key, kind, values):
    out = s(key) + struct.pack("<I", T_ARRAY) + struct.pack("<IQ", kind, len(values))
    if kind == T_STRING:
        return out + b"".join(s(v) for v in values)
    if kind == T_INT32:
        return out + struct.pack("<%di" % len(values), *values)
    raise ValueError(kind)


def main():
    snap, out_path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    wtype = {"f32": GGML_F32, "f16": GGML_F16}[kind]
    cfg = json.load(open(snap + "/config.json"))
    t = read_safetensors(snap + "/model.safetensors")
    t = {k[len("transformer."):] if k.startswith("transformer.") else k: v
         for k, v in t.items()}
    L, C = cfg["n_layer"], cfg["n_embd"]

    tensors = []  # (name, array in numpy (rows, cols) order, is_matrix)
    tensors.append(("token_embd.weight", t["wte.weight"], True))
    tensors.append(("position_embd.weight", t["wpe.weight"], True))
    tensors.append(("output_norm.weight", t["ln_f.weight"], False))
    tensors.append(("output_norm.bias", t["ln_f.bias"], False))
    for i in range(L):
        h = "h.%d." % i
        b = "blk.%d." % i
        tensors += [
            (b + "attn_norm.weight", t[h + "ln_1.weight"], False),
            (b + "attn_norm.bias", t[h + "ln_1.bias"], False),
            (b + "attn_qkv.weight", t[h + "attn.c_attn.weight"].T, True),
            (b + "attn_qkv.bias", t[h + "attn.c_attn.bias"], False),
            (b + "attn_output.weight", t[h + "attn.c_proj.weight"].T, True),
            (b + "attn_output.bias", t[h + "attn.c_proj.bias"], False),
            (b + "ffn_norm.weight", t[h + "ln_2.weight"], False),
            (b + "ffn_norm.bias", t[h + "ln_2.bias"], False),
            (b + "ffn_up.weight", t[h + "mlp.c_fc.weight"].T, True),
            (b + "ffn_up.bias", t[h + "mlp.c_fc.bias"], False),
            (b + "ffn_down.weight", t[h + "mlp.c_proj.weight"].T, True),
            (b + "ffn_down.bias", t[h + "mlp.c_proj.bias"], False),
        ]

    vocab = json.load(open(snap + "/vocab.json", encoding="utf-8"))
    tokens = [None] * (max(vocab.values()) + 1)
    for k, v in vocab.items():
        tokens[v] = k
    tokens = [x if x is not None else "[PAD%d]" % i for i, x in enumerate(tokens)]
    merges = [l for l in open(snap + "/merges.txt", encoding="utf-8").read().split("\n")
              if l and not l.startswith("#version")]
    eot = vocab.get("<|endoftext|>", len(tokens) - 1)
    types = [1] * len(tokens)
    types[eot] = 3  # control

    meta = [
        kv("general.architecture", T_STRING, "gpt2"),
        kv("general.name", T_STRING, "gpt2-bench"),
        kv("general.file_type", T_UINT32, 0 if wtype == GGML_F32 else 1),
        kv("gpt2.context_length", T_UINT32, cfg["n_positions"]),
        kv("gpt2.embedding_length", T_UINT32, C),
        kv("gpt2.feed_forward_length", T_UINT32, 4 * C),
        kv("gpt2.block_count", T_UINT32, L),
        kv("gpt2.attention.head_count", T_UINT32, cfg["n_head"]),
        kv("gpt2.attention.layer_norm_epsilon", T_FLOAT32,
           float(cfg.get("layer_norm_epsilon", 1e-5))),
        kv("tokenizer.ggml.model", T_STRING, "gpt2"),
        kv("tokenizer.ggml.pre", T_STRING, "gpt-2"),
        kv_array("tokenizer.ggml.tokens", T_STRING, tokens),
        kv_array("tokenizer.ggml.token_type", T_INT32, types),
        kv_array("tokenizer.ggml.merges", T_STRING, merges),
        kv("tokenizer.ggml.bos_token_id", T_UINT32, eot),
        kv("tokenizer.ggml.eos_token_id", T_UINT32, eot),
    ]

    infos, blobs, off = [], [], 0
    for name, a, matrix in tensors:
        a = np.ascontiguousarray(a.astype(np.float16 if matrix and wtype == GGML_F16
                                          else np.float32))
        ty = GGML_F16 if a.dtype == np.float16 else GGML_F32
        dims = list(reversed(a.shape))
        infos.append(s(name) + struct.pack("<I", len(dims)) +
                     struct.pack("<%dQ" % len(dims), *dims) + struct.pack("<IQ", ty, off))
        raw = a.tobytes()
        pad = (-len(raw)) % ALIGN
        blobs.append(raw + b"\0" * pad)
        off += len(raw) + pad

    head = GGUF_MAGIC + struct.pack("<IQQ", 3, len(tensors), len(meta))
    head += b"".join(meta) + b"".join(infos)
    head += b"\0" * ((-len(head)) % ALIGN)
    with open(out_path, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)


if __name__ == "__main__":
    main()
