#!/usr/bin/env python3
"""bands.gguf: a GPT-2 GGUF (1 layer, n_embd 96, 16 tokens) whose Conv1D
weights make libst's band transpose (libst/gguf_hf_gpt2.c: 64 input columns
a band, or one block when larger) end on partial bands and mid-row blocks:
attn_output F32 (in 96: bands of 64 and 32), attn_qkv Q8_0 (in 96: 2 blocks
and 1), ffn_up Q4_0 (in 96) and ffn_down Q8_0 (in 384: 6 bands). Written by
llama.cpp's gguf-py, quantized by its quants.quantize.

bands-hf.safetensors: what the snapshot must hold, computed here alone:
each tensor as gguf-py's quants.dequantize gives it, the Conv1D weights
transposed by numpy to HF's [in, out], under HF GPT-2's names, F32.

bad-*.gguf: tiny GPT-2 GGUFs (n_embd 4) that are not GPT-2's tensors:
bad-shape (attn_qkv [4, 8]), bad-extra (an output.weight), bad-missing (no
ffn_down.bias), bad-layer (a blk.1 tensor in a 1-layer file).

Run: python3 make_fixtures.py (GGUF_PY=/work/ref/llama.cpp/gguf-py by
default)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.environ.get("GGUF_PY", "/work/ref/llama.cpp/gguf-py"))
import gguf  # noqa: E402
from gguf import quants  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpt2"))
from gen_fixtures import write_safetensors  # noqa: E402  (FORMAT.md, by hand)

HERE = os.path.dirname(os.path.abspath(__file__))
C, V, T = 96, 16, 8
Q = gguf.GGMLQuantizationType

# GGUF name, HF name, GGUF row-major shape, type, Conv1D (transposed in HF)
LAYOUT = [
    ("token_embd.weight", "wte.weight", (V, C), Q.F32, False),
    ("position_embd.weight", "wpe.weight", (T, C), Q.F32, False),
    ("blk.0.attn_norm.weight", "h.0.ln_1.weight", (C,), Q.F32, False),
    ("blk.0.attn_norm.bias", "h.0.ln_1.bias", (C,), Q.F32, False),
    ("blk.0.attn_qkv.weight", "h.0.attn.c_attn.weight", (3 * C, C), Q.Q8_0, True),
    ("blk.0.attn_qkv.bias", "h.0.attn.c_attn.bias", (3 * C,), Q.F32, False),
    ("blk.0.attn_output.weight", "h.0.attn.c_proj.weight", (C, C), Q.F32, True),
    ("blk.0.attn_output.bias", "h.0.attn.c_proj.bias", (C,), Q.F32, False),
    ("blk.0.ffn_norm.weight", "h.0.ln_2.weight", (C,), Q.F32, False),
    ("blk.0.ffn_norm.bias", "h.0.ln_2.bias", (C,), Q.F32, False),
    ("blk.0.ffn_up.weight", "h.0.mlp.c_fc.weight", (4 * C, C), Q.Q4_0, True),
    ("blk.0.ffn_up.bias", "h.0.mlp.c_fc.bias", (4 * C,), Q.F32, False),
    ("blk.0.ffn_down.weight", "h.0.mlp.c_proj.weight", (C, 4 * C), Q.Q8_0, True),
    ("blk.0.ffn_down.bias", "h.0.mlp.c_proj.bias", (C,), Q.F32, False),
    ("output_norm.weight", "ln_f.weight", (C,), Q.F32, False),
    ("output_norm.bias", "ln_f.bias", (C,), Q.F32, False),
]


def start(path, c, t):
    w = gguf.GGUFWriter(path, "gpt2")
    w.add_block_count(1)
    w.add_context_length(t)
    w.add_embedding_length(c)
    w.add_feed_forward_length(4 * c)
    w.add_head_count(4 if c % 4 == 0 else 1)
    w.add_layer_norm_eps(1e-5)
    return w


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bad(name, edit):
    """A tiny GPT-2 (n_embd 4, vocab 16) with LAYOUT's names, edited."""
    c = 4
    w = start(os.path.join(HERE, "bad-%s.gguf" % name), c, 2)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([chr(ord("a") + i) for i in range(V)])
    shapes = {"token_embd.weight": (V, c), "position_embd.weight": (2, c),
              "blk.0.attn_qkv.weight": (3 * c, c), "blk.0.attn_qkv.bias": (3 * c,),
              "blk.0.ffn_up.weight": (4 * c, c), "blk.0.ffn_up.bias": (4 * c,),
              "blk.0.ffn_down.weight": (c, 4 * c), "blk.0.attn_output.weight": (c, c)}
    names = [(g, shapes.get(g, (c,))) for g, _, _, _, _ in LAYOUT]
    for g, s in edit(names):
        w.add_tensor(g, np.zeros(s, dtype=np.float32))
    finish(w)


def main():
    rng = np.random.default_rng(96)
    w = start(os.path.join(HERE, "bands.gguf"), C, T)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    toks = [chr(ord("a") + i) for i in range(V - 2)] + ["ab", "<|endoftext|>"]
    w.add_token_list(toks)
    w.add_token_types([1] * (V - 1) + [3])
    w.add_token_merges(["a b"])
    w.add_eos_token_id(V - 1)
    want = []
    for gname, hname, shape, qtype, conv in LAYOUT:
        a = (rng.standard_normal(shape) * 0.5).astype(np.float32)
        if qtype == Q.F32:
            data, back = a, a
        else:
            data = quants.quantize(a, qtype)
            back = quants.dequantize(data, qtype).reshape(shape)
        w.add_tensor(gname, data, raw_shape=data.shape, raw_dtype=qtype)
        ref = np.ascontiguousarray(back.T if conv else back, dtype="<f4")
        want.append((hname, "F32", ref.shape, ref.tobytes()))
    finish(w)
    write_safetensors(os.path.join(HERE, "bands-hf.safetensors"), want)
    bad("shape", lambda ns: [(g, (8, 4) if g == "blk.0.attn_qkv.weight" else s)
                             for g, s in ns])
    bad("extra", lambda ns: ns + [("output.weight", (V, 4))])
    bad("missing", lambda ns: [(g, s) for g, s in ns if g != "blk.0.ffn_down.bias"])
    bad("layer", lambda ns: [("blk.1.ffn_down.bias" if g == "blk.0.ffn_down.bias" else g, s)
                             for g, s in ns])


main()
