#!/usr/bin/python3
"""gen_fixtures.py - snapshots for tools/common/archcheck (config-aware
inventory) and stinfo: a config.json and a model.safetensors whose names
and shapes are written out here from transformers' modeling_gpt2.py and
modeling_llama.py / modeling_qwen2.py, then broken in one way each.

Tensors hold zeros (only names and shapes matter); files are written by
hand (8-byte length, JSON header, data), never through libst. Run it here:

    /usr/bin/python3 gen_fixtures.py

Snapshots (see MANIFEST.tsv for what each is and what is wrong with it).
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, shape); data is zeros."""
    size = {"F32": 4, "F16": 2, "BF16": 2}
    header, off = {}, 0
    for name, dtype, shape in tensors:
        n = size[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [off, off + n]}
        off += n
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob + bytes(off))


def snapshot(name, config, tensors):
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(d, "model.safetensors"), tensors)


# GPT-2: V 16, P 8, C 8, L 2, 2 heads; Conv1D weights [in, out].
GPT2 = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
        "vocab_size": 16, "n_positions": 8, "n_embd": 8, "n_layer": 2,
        "n_head": 2, "n_inner": None, "activation_function": "gelu_new",
        "layer_norm_epsilon": 1e-5}


def gpt2_tensors(V=16, P=8, C=8, L=2):
    t = [("wte.weight", "F32", (V, C)), ("wpe.weight", "F32", (P, C))]
    for i in range(L):
        h = f"h.{i}."
        t += [(h + "ln_1.weight", "F32", (C,)), (h + "ln_1.bias", "F32", (C,)),
              (h + "attn.c_attn.weight", "F32", (C, 3 * C)),
              (h + "attn.c_attn.bias", "F32", (3 * C,)),
              (h + "attn.c_proj.weight", "F32", (C, C)),
              (h + "attn.c_proj.bias", "F32", (C,)),
              (h + "ln_2.weight", "F32", (C,)), (h + "ln_2.bias", "F32", (C,)),
              (h + "mlp.c_fc.weight", "F32", (C, 4 * C)),
              (h + "mlp.c_fc.bias", "F32", (4 * C,)),
              (h + "mlp.c_proj.weight", "F32", (4 * C, C)),
              (h + "mlp.c_proj.bias", "F32", (C,))]
    t += [("ln_f.weight", "F32", (C,)), ("ln_f.bias", "F32", (C,))]
    return t


def replace(tensors, name, shape):
    return [(n, d, shape if n == name else s) for n, d, s in tensors]


def drop(tensors, *names):
    return [x for x in tensors if x[0] not in names]


# Llama family: V 32, H 16, L 2, 4 heads of 4, 2 KV heads, I 24.
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
         "vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 24, "rms_norm_eps": 1e-6,
         "tie_word_embeddings": False}


def llama_tensors(V=32, H=16, L=2, NH=4, NKV=2, I=24, tied=False,
                  qkv_bias=False, dtype="BF16"):
    hd = H // NH
    t = [("model.embed_tokens.weight", dtype, (V, H))]
    for i in range(L):
        p = f"model.layers.{i}."
        t.append((p + "input_layernorm.weight", dtype, (H,)))
        for proj, out in (("q", NH * hd), ("k", NKV * hd), ("v", NKV * hd)):
            t.append((p + f"self_attn.{proj}_proj.weight", dtype, (out, H)))
            if qkv_bias:
                t.append((p + f"self_attn.{proj}_proj.bias", dtype, (out,)))
        t += [(p + "self_attn.o_proj.weight", dtype, (H, NH * hd)),
              (p + "post_attention_layernorm.weight", dtype, (H,)),
              (p + "mlp.gate_proj.weight", dtype, (I, H)),
              (p + "mlp.up_proj.weight", dtype, (I, H)),
              (p + "mlp.down_proj.weight", dtype, (H, I))]
    t.append(("model.norm.weight", dtype, (H,)))
    if not tied:
        t.append(("lm_head.weight", dtype, (V, H)))
    return t


def main():
    g = gpt2_tensors()
    snapshot("gpt2-good", GPT2, g)
    snapshot("gpt2-missing", GPT2,
             drop(g, "h.1.mlp.c_fc.bias", "ln_f.weight"))
    # c_attn saved in nn.Linear's [out, in] layout; c_proj one row short.
    bad = replace(g, "h.1.attn.c_attn.weight", (24, 8))
    bad = replace(bad, "h.0.attn.c_proj.weight", (7, 8))
    snapshot("gpt2-misshapen", GPT2, bad)
    # What GPT2LMHeadModel saved in older transformers: prefix, the causal
    # mask buffers and the tied head, plus one stray tensor.
    legacy = [("transformer." + n, d, s) for n, d, s in g]
    legacy += [("transformer.h.0.attn.bias", "F32", (1, 1, 8, 8)),
               ("transformer.h.0.attn.masked_bias", "F32", ()),
               ("transformer.h.1.attn.bias", "F32", (1, 1, 8, 8)),
               ("transformer.h.1.attn.masked_bias", "F32", ()),
               ("lm_head.weight", "F32", (16, 8)),
               ("transformer.h.2.attn.bias", "F32", (1, 1, 8, 8)),
               ("optimizer.step", "F32", (1,))]
    snapshot("gpt2-legacy", GPT2, legacy)

    snapshot("llama-gqa", LLAMA,
             llama_tensors() +
             [("model.layers.0.self_attn.rotary_emb.inv_freq", "F32", (2,))])
    # k_proj of layer 1 gone; v_proj of layer 0 shaped for 4 KV heads.
    t = drop(llama_tensors(), "model.layers.1.self_attn.k_proj.weight")
    t = replace(t, "model.layers.0.self_attn.v_proj.weight", (16, 16))
    snapshot("llama-broken", LLAMA, t)

    qwen = dict(LLAMA, architectures=["Qwen2ForCausalLM"], model_type="qwen2",
                tie_word_embeddings=True)
    snapshot("qwen2-tied", qwen, llama_tensors(tied=True, qkv_bias=True))
    # The q/k/v biases Qwen2 needs, dropped as a Llama converter would.
    snapshot("qwen2-nobias", qwen, llama_tensors(tied=True))


if __name__ == "__main__":
    main()
