#!/usr/bin/python3
"""make_fixtures.py - small random Llama-family snapshots and their
reference logits, for tests/cli/strun.sh.

Each snapshot folder holds config.json, the weights (model.safetensors,
or two shards and model.safetensors.index.json) and:

  ref.safetensors        ids (I64 [7]), logits (F32 [7, V]) and greedy
                         (I64 [8]): the next 8 ids chosen greedily
  ref_short.safetensors  ids (I64 [3]) and logits (F32 [3, V])

The logits come from scripts/llama_trace_torch.py's forward pass: plain
PyTorch in float32, written from transformers' modeling code (not from
strun's C). The snapshots:

  llama3        llama, rope_scaling llama3 (every wavelength band is hit:
                factor 8, low 1, high 4, original context 16), rope_theta
                500000, GQA 4/2, untied lm_head, two shards
  mistral       sliding_window 4 (the 7-token prompt is longer), GQA
  qwen2         q/k/v biases, tie_word_embeddings and no lm_head.weight
  qwen3         q_norm/k_norm, head_dim 16 explicit (4 x 16 != 32)
  llama2_bf16   llama, rope_scaling linear (factor 2), attention_bias and
                mlp_bias, tied with lm_head.weight present (an equal
                copy), weights in BF16. Its ref.safetensors is the forward
                pass on the BF16 values (widened exactly to F32), and
                ref_f32.safetensors the one on the F32 values they were
                rounded from: how far BF16 storage moves the logits.
  llama3_bin    llama3's config.json and weights as one pytorch_model.bin
                (torch.save of an OrderedDict, zip format, as transformers'
                save_pretrained(safe_serialization=False) writes); no
                reference of its own: strun.sh checks it against llama3's
  llama3_bin_sharded  the same as pytorch_model-0000k-of-00002.bin (llama3's
                two shards) and pytorch_model.bin.index.json
  trace_ref.safetensors (in each): the reference trace of ids 5,17,42
                (scripts/llama_trace_torch.py's names); trace_interleaved
                and trace_gqa_tile.safetensors (in qwen3/): the same with a planted
                mistake (--interleaved, --gqa-tile)

  llama_cpp_greedy.txt (in qwen2/, qwen3/, llama3/, llama2_bf16/):
                llama.cpp's greedy ids, 32 per prompt for 5 prompts, on
                the same weights as an F32 GGUF (llama and mistral as
                llama.cpp's "llama" arch, q/k rows permuted per head):
                  python3 testdata/llama/gguf_llama.py testdata/llama/qwen3 q3.gguf
                  node testdata/llama/llama_cpp_greedy.mjs NODE_MODULES q3.gguf \
                      > testdata/llama/qwen3/llama_cpp_greedy.txt
                (the same for llama3 and llama2_bf16; node-llama-cpp
                3.21.1, e.g. /work/ref/node_modules; this script keeps
                the files, as it rewrites the others)
  llama_cpp_greedy_nowindow.txt (in mistral/): the same for mistral's
                weights, which llama.cpp's llama arch runs WITHOUT the
                sliding window (gguf_llama.py says so on stderr):
                  python3 testdata/llama/gguf_llama.py testdata/llama/mistral m.gguf
                  node testdata/llama/llama_cpp_greedy.mjs NODE_MODULES m.gguf \
                      > testdata/llama/mistral/llama_cpp_greedy_nowindow.txt

    python3 testdata/llama/make_fixtures.py   (rewrites the folders)

Deterministic: numpy's default_rng(seed) per snapshot.
"""
import collections
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import llama_trace_torch as ref  # noqa: E402

IDS = [1, 5, 17, 42, 99, 200, 255]
SHORT = [3, 141, 59]
V, C, L, I = 256, 32, 2, 48


def bf16_round(a):
    """float32 -> (uint16 bits of BF16, float32 values), round to nearest
    even, as torch's .to(torch.bfloat16)."""
    t = torch.from_numpy(a).to(torch.bfloat16)
    bits = t.view(torch.int16).numpy().view(np.uint16)
    return bits, t.to(torch.float32).numpy()


def params(cfg, rng):
    """{name: float32 array} for a config dict (names as transformers')."""
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", C // nh)
    typ = cfg["model_type"]
    qkv_bias = typ == "qwen2" or cfg.get("attention_bias", False)
    o_bias = typ != "qwen2" and cfg.get("attention_bias", False)
    mlp_bias = cfg.get("mlp_bias", False)

    def mat(o, i):
        return (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)

    def vec(n, one=False):
        v = rng.standard_normal(n) * (0.2 if one else 0.1)
        return ((1.0 if one else 0.0) + v).astype(np.float32)

    p = {"model.embed_tokens.weight": mat(V, C) * 4}
    for i in range(L):
        s = "model.layers.%d." % i
        p[s + "input_layernorm.weight"] = vec(C, True)
        p[s + "self_attn.q_proj.weight"] = mat(nh * hd, C)
        p[s + "self_attn.k_proj.weight"] = mat(nkv * hd, C)
        p[s + "self_attn.v_proj.weight"] = mat(nkv * hd, C)
        p[s + "self_attn.o_proj.weight"] = mat(C, nh * hd)
        if qkv_bias:
            p[s + "self_attn.q_proj.bias"] = vec(nh * hd)
            p[s + "self_attn.k_proj.bias"] = vec(nkv * hd)
            p[s + "self_attn.v_proj.bias"] = vec(nkv * hd)
        if o_bias:
            p[s + "self_attn.o_proj.bias"] = vec(C)
        if typ == "qwen3":
            p[s + "self_attn.q_norm.weight"] = vec(hd, True)
            p[s + "self_attn.k_norm.weight"] = vec(hd, True)
        p[s + "post_attention_layernorm.weight"] = vec(C, True)
        p[s + "mlp.gate_proj.weight"] = mat(I, C)
        p[s + "mlp.up_proj.weight"] = mat(I, C)
        p[s + "mlp.down_proj.weight"] = mat(C, I)
        if mlp_bias:
            p[s + "mlp.gate_proj.bias"] = vec(I)
            p[s + "mlp.up_proj.bias"] = vec(I)
            p[s + "mlp.down_proj.bias"] = vec(C)
    p["model.norm.weight"] = vec(C, True)
    if not cfg.get("tie_word_embeddings", False):
        p["lm_head.weight"] = mat(V, C)
    return p


def run(directory, p, ids, greedy=0):
    with open(os.path.join(directory, "config.json")) as f:
        cfg = ref.Config(json.load(f))
    t = {k: torch.from_numpy(v) for k, v in p.items()}
    with torch.no_grad():
        logits = ref.forward(cfg, t, ids).numpy().astype(np.float32)
    out = [("ids", np.array(ids, dtype=np.int64)), ("logits", logits)]
    if greedy:
        g = ref.greedy(cfg, t, ids, greedy)
        out.append(("greedy", np.array(g, dtype=np.int64)))
    return out


def write_snapshot(name, cfg, seed, shards=1, bf16=False, head_copy=False):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith("llama_cpp_greedy"):
            os.remove(os.path.join(d, f))
    rng = np.random.default_rng(seed)
    base = {"vocab_size": V, "hidden_size": C, "num_hidden_layers": L,
            "intermediate_size": I, "hidden_act": "silu",
            "max_position_embeddings": 64, "bos_token_id": 1,
            "eos_token_id": 2, "torch_dtype": "bfloat16" if bf16
            else "float32"}
    base.update(cfg)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(base, f, indent=2)
        f.write("\n")
    p = params(base, rng)
    orig = dict(p)
    stored = {}
    for k, v in p.items():
        if bf16:
            bits, vals = bf16_round(v)
            stored[k] = ("BF16", bits)
            p[k] = vals
        else:
            stored[k] = v
    if head_copy:  # tied, and lm_head.weight saved too: the same values
        stored["lm_head.weight"] = stored["model.embed_tokens.weight"]
    names = list(stored)
    if shards == 1:
        ref.write_safetensors(os.path.join(d, "model.safetensors"),
                              [(n, stored[n]) for n in names])
    else:
        half = len(names) // 2
        parts = [names[:half], names[half:]]
        wmap = {}
        for i, part in enumerate(parts):
            fn = "model-%05d-of-%05d.safetensors" % (i + 1, len(parts))
            ref.write_safetensors(os.path.join(d, fn),
                                  [(n, stored[n]) for n in part])
            wmap.update({n: fn for n in part})
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": sum(
                (v[1] if isinstance(v, tuple) else v).nbytes
                for v in stored.values())}, "weight_map": wmap}, f, indent=2)
            f.write("\n")
    ref.write_safetensors(os.path.join(d, "ref.safetensors"),
                          run(d, p, IDS, greedy=8))
    ref.write_safetensors(os.path.join(d, "ref_short.safetensors"),
                          run(d, p, SHORT))
    if bf16:
        ref.write_safetensors(os.path.join(d, "ref_f32.safetensors"),
                              run(d, orig, IDS))
    write_trace_ref(d, p)
    return d, p


def write_torch_bin(name, src, sharded=False):
    """Snapshot src's config.json and weights (the values its files hold)
    as PyTorch files: torch.save of an OrderedDict of tensors in the zip
    format, what transformers' save_pretrained(safe_serialization=False)
    writes: one pytorch_model.bin, or (sharded) one
    pytorch_model-0000k-of-0000n.bin per shard of src's
    model.safetensors.index.json and pytorch_model.bin.index.json."""
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    s = os.path.join(HERE, src)
    with open(os.path.join(s, "config.json")) as f:
        config = f.read()
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(config)
    t = ref.read_snapshot(s)
    if not sharded:
        torch.save(collections.OrderedDict(
            (k, torch.from_numpy(np.array(v))) for k, v in t.items()),
            os.path.join(d, "pytorch_model.bin"))
        return
    with open(os.path.join(s, "model.safetensors.index.json")) as f:
        index = json.load(f)
    wmap = {k: v.replace("model-", "pytorch_model-").replace(
        ".safetensors", ".bin") for k, v in index["weight_map"].items()}
    for fn in sorted(set(wmap.values())):
        torch.save(collections.OrderedDict(
            (k, torch.from_numpy(np.array(v))) for k, v in t.items()
            if wmap[k] == fn), os.path.join(d, fn))
    with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": index["metadata"], "weight_map": wmap}, f,
                  indent=2)
        f.write("\n")


def write_trace_ref(d, p):
    """trace_ref.safetensors in d: every stage of ids 5,17,42 through the
    PyTorch reference (scripts/llama_trace_torch.py's names), on the
    snapshot's stored values p. Returns its Config and the torch tensors."""
    with open(os.path.join(d, "config.json")) as f:
        cfg = ref.Config(json.load(f))
    records = [("ids", np.array([5, 17, 42], dtype=np.int64))]
    t = {k: torch.from_numpy(v) for k, v in p.items()}
    with torch.no_grad():
        ref.forward(cfg, t, [5, 17, 42], lambda n, x: records.append(
            (n, x.numpy().astype(np.float32))))
    ref.write_trace(os.path.join(d, "trace_ref.safetensors"), records)
    return cfg, t


def main():
    write_snapshot("llama3", {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"],
        "num_attention_heads": 4, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 16},
        "tie_word_embeddings": False}, seed=1, shards=2)
    write_torch_bin("llama3_bin", "llama3")
    write_torch_bin("llama3_bin_sharded", "llama3", sharded=True)
    write_snapshot("mistral", {
        "model_type": "mistral", "architectures": ["MistralForCausalLM"],
        "num_attention_heads": 4, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5, "rope_theta": 1000000.0,
        "sliding_window": 4}, seed=2)
    write_snapshot("qwen2", {
        "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"],
        "num_attention_heads": 4, "num_key_value_heads": 1,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "tie_word_embeddings": True, "use_sliding_window": False},
        seed=3)
    d, p = write_snapshot("qwen3", {
        "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "tie_word_embeddings": False}, seed=4)
    cfg, t = write_trace_ref(d, p)
    # Two planted mistakes on the reference side, for stdiff --first to
    # name: GGUF's interleaved rotary pairs, and kv heads tiled (h % NKV)
    # instead of repeated (h // (NH / NKV)).
    for plant, kw in (("interleaved", {"interleaved": True}),
                      ("gqa_tile", {"gqa_tile": True})):
        rec = [("ids", np.array([5, 17, 42], dtype=np.int64))]
        with torch.no_grad():
            ref.forward(cfg, t, [5, 17, 42], lambda n, x: rec.append(
                (n, x.numpy().astype(np.float32))), **kw)
        ref.write_trace(os.path.join(d, "trace_%s.safetensors" % plant), rec)
    write_snapshot("llama2_bf16", {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"],
        "num_attention_heads": 4, "num_key_value_heads": 4,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "rope_scaling": {"type": "linear", "factor": 2.0},
        "attention_bias": True, "mlp_bias": True,
        "tie_word_embeddings": True}, seed=5, bf16=True, head_copy=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
