#!/usr/bin/env python3
"""Seeds for fuzz_gguf's GPT-2 snapshot path (libst/gguf_hf_gpt2.c): a
tiny GPT-2 GGUF (1 layer, n_embd 4, 8 tokens, one merge) in F32 and in F16,
written with llama.cpp's gguf-py as its converter lays GPT2Model out
(Conv1D weights as [out, in] rows), each after fuzz_gguf's mode byte 0.
Run: python3 make_gpt2_seeds.py (GGUF_PY=/work/ref/llama.cpp/gguf-py by
default)."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.environ.get("GGUF_PY", "/work/ref/llama.cpp/gguf-py"))
import gguf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
C, V, T = 4, 8, 4


def tensors():
    """(GGUF name, numpy array in GGUF's row-major layout, is a matrix)."""
    rng = np.random.default_rng(7)
    out = [("token_embd.weight", (V, C), True), ("position_embd.weight", (T, C), False)]
    blk = [("attn_norm.weight", (C,)), ("attn_norm.bias", (C,)),
           ("attn_qkv.weight", (3 * C, C)), ("attn_qkv.bias", (3 * C,)),
           ("attn_output.weight", (C, C)), ("attn_output.bias", (C,)),
           ("ffn_norm.weight", (C,)), ("ffn_norm.bias", (C,)),
           ("ffn_up.weight", (4 * C, C)), ("ffn_up.bias", (4 * C,)),
           ("ffn_down.weight", (C, 4 * C)), ("ffn_down.bias", (C,))]
    out += [("blk.0." + n, s, len(s) == 2) for n, s in blk]
    out += [("output_norm.weight", (C,), False), ("output_norm.bias", (C,), False)]
    return [(n, rng.standard_normal(s).astype(np.float32), m) for n, s, m in out]


def write(name, f16):
    fd, path = tempfile.mkstemp()
    os.close(fd)
    w = gguf.GGUFWriter(path, "gpt2")
    w.add_block_count(1)
    w.add_context_length(T)
    w.add_embedding_length(C)
    w.add_feed_forward_length(4 * C)
    w.add_head_count(1)
    w.add_layer_norm_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(["a", "b", "ab", "c", "d", "e", "f", "<|endoftext|>"])
    w.add_token_types([1] * 7 + [3])
    w.add_token_merges(["a b"])
    w.add_bos_token_id(7)
    w.add_eos_token_id(7)
    for n, a, matrix in tensors():
        w.add_tensor(n, a.astype(np.float16) if f16 and matrix else a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    with open(os.path.join(HERE, "corpus", "gguf", name), "wb") as f:
        f.write(b"\0" + data)


write("gpt2-tiny-f32", False)
write("gpt2-tiny-f16", True)
