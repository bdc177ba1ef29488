#!/usr/bin/python3
"""gen_llmc.py - fixtures for gpt2export (llm.c checkpoints <-> HF snapshots).

Re-make them with:   /usr/bin/python3 testdata/llmc/gen_llmc.py

Everything here is computed independently of libst and gpt2export, from the
published formats:

* llm.c's checkpoint, as karpathy/llm.c train_gpt2.py writes it: write_model
  (a 256 x int32 header: magic 20240326, version 3 = fp32 / 5 = bf16, maxT,
  V, L, NH, C, padded Vp, zeros), pad_vocab (wte padded with zero rows to a
  multiple of 128), write_tensors (the 16 parameter groups in llm.c's order,
  each layer after the other) with write_fp32 / write_bf16. The weights are
  in nn.Linear's [out, in] layout: train_gpt2.py's from_pretrained copies
  HF's four Conv1D weights transposed (sd_hf[k].t()). That code is
  re-implemented below, not imported.
* Hugging Face's side: the same parameters under HF GPT-2 names, Conv1D
  weights [in, out], no padding rows; written by a small canonical
  safetensors writer (compact JSON, __metadata__ {"format": "pt"} first,
  tensors sorted by name, header padded with spaces to a multiple of 8),
  and config.json / generation_config.json as transformers' save_pretrained
  writes them (json.dumps(indent=2, sort_keys=True) + newline).

Fixtures (L=2, NH=2, C=16, V=200 so Vp=256 shows the padding, maxT=64):
  tiny_fp32.bin          llm.c version 3
  tiny_bf16.bin          llm.c version 5 (the same parameters rounded to bf16)
  tiny_fp32_hf/          what gpt2export must make of tiny_fp32.bin
  tiny_bf16_hf/          ... of tiny_bf16.bin
  tiny_variants_hf/      tiny_fp32_hf's parameters as older / other writers
                         save them: "transformer." prefix, the legacy
                         attn.bias / attn.masked_bias buffers, the tied
                         lm_head.weight, two shards with an index; turning it
                         into a .bin must give tiny_fp32.bin exactly.
Broken inputs (a 1-layer C=4 V=3 model, so they stay small), each must be
refused with exit status 2 and a reason:
  bad/short.bin           100 bytes: shorter than the 1024-byte header
  bad/magic.bin           magic 20240327 (llm.c's debug-state magic)
  bad/version.bin         version 4 (only 3 and 5 exist)
  bad/truncated.bin       a valid checkpoint with its last 10 bytes cut
  bad/trailing.bin        a valid checkpoint with 4 bytes appended
  bad/heads.bin           NH=3 does not divide C=4
  bad/padded_vocab.bin    Vp=2 is smaller than V=3
  bad/zero_layers.bin     L=0
  bad/not_gpt2_hf/        config.json says model_type "llama"
  bad/missing_hf/         h.0.mlp.c_proj.bias is missing
  bad/transposed_hf/      h.0.mlp.c_fc.weight stored [4C, C] (nn.Linear layout)
  bad/extra_hf/           an unexpected tensor h.0.attn.rotary.inv_freq
  bad/untied_hf/          lm_head.weight differs from wte.weight
  bad/eps_hf/             layer_norm_epsilon 1e-6: llm.c hardcodes 1e-5
"""
import json
import os
import shutil
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TRANSFORMERS_VERSION = "4.46.3"   # must match gpt2export's config.json

# ---- llm.c's writer (train_gpt2.py), re-implemented ------------------------


def write_fp32(tensor, file):
    t = tensor.detach().cpu().to(torch.float32)
    file.write(t.numpy().tobytes())


def write_bf16(tensor, file):
    t = tensor.detach().cpu().to(torch.bfloat16)
    t = t.view(torch.int16)   # numpy has no bf16: reinterpret as int16
    file.write(t.numpy().tobytes())


def write_tensors(model_tensors, L, file, dtype):
    write_fun = write_fp32 if dtype == "float32" else write_bf16
    write_fun(model_tensors["transformer.wte.weight"], file)       # (Vp, C)
    write_fun(model_tensors["transformer.wpe.weight"], file)       # (T, C)
    for suffix in ["ln_1.weight", "ln_1.bias",
                   "attn.c_attn.weight", "attn.c_attn.bias",
                   "attn.c_proj.weight", "attn.c_proj.bias",
                   "ln_2.weight", "ln_2.bias",
                   "mlp.c_fc.weight", "mlp.c_fc.bias",
                   "mlp.c_proj.weight", "mlp.c_proj.bias"]:
        for i in range(L):
            write_fun(model_tensors[f"transformer.h.{i}.{suffix}"], file)
    write_fun(model_tensors["transformer.ln_f.weight"], file)     # (C,)
    write_fun(model_tensors["transformer.ln_f.bias"], file)       # (C,)


def pad_vocab(tensor, multiple=128, value=0):
    V, C = tensor.shape
    Vp = ((V + multiple - 1) // multiple) * multiple
    pad_rows = Vp - V
    if pad_rows == 0:
        return tensor
    return torch.nn.functional.pad(tensor, (0, 0, 0, pad_rows), value=value)


def llmc_header(version, maxT, V, L, NH, C, Vp, magic=20240326):
    header = torch.zeros(256, dtype=torch.int32)
    header[0] = magic
    header[1] = version
    header[2] = maxT
    header[3] = V
    header[4] = L
    header[5] = NH
    header[6] = C
    header[7] = Vp
    return header.numpy().tobytes()


CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight",
          "mlp.c_proj.weight")


def write_llmc(path, hf, cfg, dtype):
    """llm.c's write_model for the HF parameters hf (numpy, HF layout)."""
    version = {"float32": 3, "bfloat16": 5}[dtype]
    # train_gpt2.py's model: "transformer." names, Conv1D weights transposed
    # into nn.Linear's [out, in] (from_pretrained: sd[k].copy_(sd_hf[k].t())).
    params = {}
    for name, arr in hf.items():
        t = torch.from_numpy(arr.copy())
        if name.endswith(CONV1D):
            t = t.t().contiguous()
        params["transformer." + name] = t
    wte = params["transformer.wte.weight"]
    wte_padded = pad_vocab(wte)
    params["transformer.wte.weight"] = wte_padded
    with open(path, "wb") as f:
        f.write(llmc_header(version, cfg["maxT"], cfg["V"], cfg["L"],
                            cfg["NH"], cfg["C"], wte_padded.shape[0]))
        write_tensors(params, cfg["L"], f, dtype)


# ---- safetensors and the HF snapshot files ---------------------------------

DTYPE = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16", np.dtype("u1"): "U8"}


def safetensors_bytes(tensors):
    """Canonical safetensors: tensors = {name: (dtype_name, shape, bytes)}."""
    rank = {"F32": 3, "BF16": 2, "F16": 1, "U8": 0}   # descending dtype rank
    names = sorted(tensors, key=lambda n: (-rank[tensors[n][0]], n.encode()))
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    blobs = []
    for n in names:
        dt, shape, raw = tensors[n]
        header[n] = {"dtype": dt, "shape": list(shape),
                     "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)
    return struct.pack("<Q", len(js)) + js + b"".join(blobs)


def f32_entry(arr):
    return ("F32", arr.shape, np.ascontiguousarray(arr, dtype="<f4").tobytes())


def bf16_entry(arr):
    bits = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float32))
    bits = bits.to(torch.bfloat16).view(torch.int16).numpy()
    return ("BF16", arr.shape, bits.tobytes())


def config_json(cfg, torch_dtype, **extra):
    c = {
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1,
        "bos_token_id": 50256,
        "embd_pdrop": 0.1,
        "eos_token_id": 50256,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": cfg["maxT"],
        "n_embd": cfg["C"],
        "n_head": cfg["NH"],
        "n_inner": None,
        "n_layer": cfg["L"],
        "n_positions": cfg["maxT"],
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "torch_dtype": torch_dtype,
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "vocab_size": cfg["V"],
    }
    c.update(extra)
    return json.dumps(c, indent=2, sort_keys=True) + "\n"


def generation_config_json():
    g = {"_from_model_config": True, "bos_token_id": 50256,
         "eos_token_id": 50256, "transformers_version": TRANSFORMERS_VERSION}
    return json.dumps(g, indent=2, sort_keys=True) + "\n"


def write_file(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mode = "w" if isinstance(data, str) else "wb"
    with open(path, mode) as f:
        f.write(data)


def write_snapshot(d, cfg, tensors, torch_dtype, **extra):
    if os.path.isdir(d):
        shutil.rmtree(d)
    write_file(os.path.join(d, "config.json"),
               config_json(cfg, torch_dtype, **extra))
    write_file(os.path.join(d, "model.safetensors"), safetensors_bytes(tensors))


# ---- the parameters ---------------------------------------------------------


def hf_params(cfg, rng):
    """GPT-2 parameters in HF layout; every value distinct and non-zero, so
    a transpose, a shifted row or a swapped tensor cannot go unnoticed."""
    V, P, L, C = cfg["V"], cfg["maxT"], cfg["L"], cfg["C"]
    p = {}
    p["wte.weight"] = rng.standard_normal((V, C))
    p["wpe.weight"] = rng.standard_normal((P, C)) * 0.1
    for i in range(L):
        h = f"h.{i}."
        p[h + "ln_1.weight"] = 1 + 0.1 * rng.standard_normal(C)
        p[h + "ln_1.bias"] = 0.1 * rng.standard_normal(C)
        p[h + "attn.c_attn.weight"] = 0.2 * rng.standard_normal((C, 3 * C))
        p[h + "attn.c_attn.bias"] = 0.1 * rng.standard_normal(3 * C)
        p[h + "attn.c_proj.weight"] = 0.2 * rng.standard_normal((C, C))
        p[h + "attn.c_proj.bias"] = 0.1 * rng.standard_normal(C)
        p[h + "ln_2.weight"] = 1 + 0.1 * rng.standard_normal(C)
        p[h + "ln_2.bias"] = 0.1 * rng.standard_normal(C)
        p[h + "mlp.c_fc.weight"] = 0.2 * rng.standard_normal((C, 4 * C))
        p[h + "mlp.c_fc.bias"] = 0.1 * rng.standard_normal(4 * C)
        p[h + "mlp.c_proj.weight"] = 0.1 * rng.standard_normal((4 * C, C))
        p[h + "mlp.c_proj.bias"] = 0.1 * rng.standard_normal(C)
    p["ln_f.weight"] = 1 + 0.1 * rng.standard_normal(C)
    p["ln_f.bias"] = 0.1 * rng.standard_normal(C)
    return {k: v.astype(np.float32) for k, v in p.items()}


def to_bf16_values(p):
    """The float32 values that bf16 rounding (round to nearest even) gives."""
    return {k: torch.from_numpy(v).to(torch.bfloat16).to(torch.float32).numpy()
            for k, v in p.items()}


def main():
    rng = np.random.default_rng(20240326)
    cfg = {"maxT": 64, "V": 200, "L": 2, "NH": 2, "C": 16}
    p32 = hf_params(cfg, rng)
    p16 = to_bf16_values(p32)

    write_llmc(os.path.join(HERE, "tiny_fp32.bin"), p32, cfg, "float32")
    write_llmc(os.path.join(HERE, "tiny_bf16.bin"), p16, cfg, "bfloat16")
    write_snapshot(os.path.join(HERE, "tiny_fp32_hf"), cfg,
                   {k: f32_entry(v) for k, v in p32.items()}, "float32")
    write_snapshot(os.path.join(HERE, "tiny_bf16_hf"), cfg,
                   {k: bf16_entry(v) for k, v in p16.items()}, "bfloat16")
    gen = generation_config_json()
    write_file(os.path.join(HERE, "tiny_fp32_hf", "generation_config.json"), gen)
    write_file(os.path.join(HERE, "tiny_bf16_hf", "generation_config.json"), gen)

    # The variants: prefix, legacy buffers, tied head, two shards.
    d = os.path.join(HERE, "tiny_variants_hf")
    if os.path.isdir(d):
        shutil.rmtree(d)
    write_file(os.path.join(d, "config.json"), config_json(cfg, "float32"))
    P = cfg["maxT"]
    tril = np.tril(np.ones((P, P), dtype=np.uint8)).reshape(1, 1, P, P)
    shards = [{}, {}]
    for k, v in p32.items():
        shard = 0 if k.startswith(("wte", "wpe", "h.0.")) else 1
        shards[shard]["transformer." + k] = f32_entry(v)
    shards[1]["lm_head.weight"] = f32_entry(p32["wte.weight"])
    for i in range(cfg["L"]):
        shards[i]["transformer.h.%d.attn.bias" % i] = ("U8", tril.shape,
                                                       tril.tobytes())
        shards[i]["transformer.h.%d.attn.masked_bias" % i] = f32_entry(
            np.array(-1e4, dtype=np.float32))
    weight_map = {}
    total = 0
    for i, s in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        write_file(os.path.join(d, fname), safetensors_bytes(s))
        for name, (_, _, raw) in s.items():
            weight_map[name] = fname
            total += len(raw)
    write_file(os.path.join(d, "model.safetensors.index.json"),
               json.dumps({"metadata": {"total_size": total},
                           "weight_map": weight_map},
                          indent=2, sort_keys=True) + "\n")

    # ---- broken inputs ----
    bad = os.path.join(HERE, "bad")
    if os.path.isdir(bad):
        shutil.rmtree(bad)
    small = {"maxT": 2, "V": 3, "L": 1, "NH": 1, "C": 4}
    ps = hf_params(small, np.random.default_rng(7))
    good = os.path.join(bad, "good.bin")
    os.makedirs(bad)
    write_llmc(good, ps, small, "float32")
    with open(good, "rb") as f:
        blob = f.read()
    os.remove(good)
    body = blob[1024:]

    def hdr(**kw):
        h = dict(version=3, maxT=2, V=3, L=1, NH=1, C=4, Vp=128, magic=20240326)
        h.update(kw)
        return llmc_header(h["version"], h["maxT"], h["V"], h["L"], h["NH"],
                           h["C"], h["Vp"], h["magic"])

    write_file(os.path.join(bad, "short.bin"), blob[:100])
    write_file(os.path.join(bad, "magic.bin"), hdr(magic=20240327) + body)
    write_file(os.path.join(bad, "version.bin"), hdr(version=4) + body)
    write_file(os.path.join(bad, "truncated.bin"), blob[:-10])
    write_file(os.path.join(bad, "trailing.bin"), blob + b"\0\0\0\0")
    write_file(os.path.join(bad, "heads.bin"), hdr(NH=3) + body)
    write_file(os.path.join(bad, "padded_vocab.bin"), hdr(Vp=2) + body)
    write_file(os.path.join(bad, "zero_layers.bin"), hdr(L=0) + body)

    ts = {k: f32_entry(v) for k, v in ps.items()}
    write_snapshot(os.path.join(bad, "not_gpt2_hf"), small, ts, "float32",
                   model_type="llama")
    t = dict(ts)
    del t["h.0.mlp.c_proj.bias"]
    write_snapshot(os.path.join(bad, "missing_hf"), small, t, "float32")
    t = dict(ts)
    t["h.0.mlp.c_fc.weight"] = f32_entry(ps["h.0.mlp.c_fc.weight"].T)
    write_snapshot(os.path.join(bad, "transposed_hf"), small, t, "float32")
    t = dict(ts)
    t["h.0.attn.rotary.inv_freq"] = f32_entry(np.ones(2, dtype=np.float32))
    write_snapshot(os.path.join(bad, "extra_hf"), small, t, "float32")
    t = dict(ts)
    head = ps["wte.weight"].copy()
    head[2, 3] += 1
    t["lm_head.weight"] = f32_entry(head)
    write_snapshot(os.path.join(bad, "untied_hf"), small, t, "float32")
    write_snapshot(os.path.join(bad, "eps_hf"), small, ts, "float32",
                   layer_norm_epsilon=1e-06)


if __name__ == "__main__":
    main()
