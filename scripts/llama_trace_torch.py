#!/usr/bin/python3
"""llama_trace_torch.py - every stage of a Llama-family forward pass
(llama, mistral, qwen2, qwen3) in plain PyTorch, written as the
safetensors trace `strun --trace` writes (doc/trace.md, "The Llama
family").

    strun --model-dir DIR --ids 1,2,3 --trace ours.safetensors
    scripts/llama_trace_torch.py DIR --ids 1,2,3 -o ref.safetensors
    stdiff --first ref.safetensors ours.safetensors

The math is written here from transformers' modeling_llama.py,
modeling_mistral.py, modeling_qwen2.py and modeling_qwen3.py: RMSNorm
(x * rsqrt(mean(x^2) + eps) * w, in float32), nn.Linear (x @ W^T + b, W
[out, in]), rotary embeddings with rotate_half (pairs i and i + hd/2;
inv_freq from rope_theta, rope_scaling linear or llama3 as
modeling_rope_utils.py computes it), Qwen3's per-head q_norm/k_norm
before the rotation, grouped-query attention with repeat_kv (query head h
reads kv head h // (NH / NKV)), Mistral's sliding window (key s visible
to query t when t - window < s <= t), the SwiGLU MLP down(silu(gate(x)) *
up(x)), the final norm and lm_head (embed_tokens when tied). It is the
reference of testdata/llama/make_fixtures.py too (imported from there).

No transformers, no safetensors package and no libst: it reads the
snapshot's *.safetensors (one file or an index) and config.json with its
own few lines, computes in float32 on the CPU (full recompute, no KV
cache), and writes the trace by hand.

    scripts/llama_trace_torch.py DIR (--ids 1,2,3 | --ids-from REF) -o OUT
        [--greedy N] [--eps E] [--theta T] [--interleaved] [--gqa-tile]

--eps, --theta, --interleaved (rotate pairs 2i, 2i+1, GGUF's layout) and
--gqa-tile (query head h reads kv head h % NKV) plant a known mistake on
the reference side, for tests and for learning what each looks like.
--greedy N adds 'greedy' (I64 [N]): the next N ids chosen greedily.

Needs Python 3.9+, numpy and torch (1.13 tested).
"""
import argparse
import json
import math
import os
import struct
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    sys.exit("llama_trace_torch.py: %s: it needs numpy and torch "
             "(Debian: apt-get install python3-numpy python3-torch)" % e)

NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


# ---- files ---------------------------------------------------------------------

def read_safetensors(path):
    """{name: numpy array} of one safetensors file (BF16 widened to F32)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = blob[8 + n + begin:8 + n + end]
        if info["dtype"] == "BF16":
            arr = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(
                np.float32)
        else:
            arr = np.frombuffer(raw, NUMPY[info["dtype"]])
        out[name] = arr.reshape(info["shape"])
    return out


def read_snapshot(directory):
    index = os.path.join(directory, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(directory, "model.safetensors"))
    with open(index) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    tensors = {}
    for shard in shards:
        tensors.update(read_safetensors(os.path.join(directory, shard)))
    return tensors


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, numpy array); written in that order."""
    dtypes = {np.dtype("<f4"): "F32", np.dtype("<i8"): "I64",
              np.dtype("<f2"): "F16"}
    header = {"__metadata__": dict(metadata or {}, format="pt")}
    blobs, off = [], 0
    for name, arr in tensors:
        if isinstance(arr, tuple):  # ("BF16", uint16 array)
            kind, arr = arr
        else:
            arr = np.ascontiguousarray(arr)
            arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
            kind = dtypes[arr.dtype]
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": kind, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_trace(path, records):
    write_safetensors(path, records,
                      {"order": ",".join(n for n, _ in records)})


# ---- the config ------------------------------------------------------------------

class Config:
    def __init__(self, c):
        self.type = c.get("model_type", "llama")
        self.C = c["hidden_size"]
        self.L = c["num_hidden_layers"]
        self.NH = c["num_attention_heads"]
        self.NKV = c.get("num_key_value_heads") or self.NH
        dflt = 128 if self.type == "qwen3" else self.C // self.NH
        self.hd = c.get("head_dim") or dflt
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.theta = c.get("rope_theta", 10000.0)
        self.scaling = c.get("rope_scaling")
        self.tied = c.get("tie_word_embeddings", False)
        self.window = c.get("sliding_window") if self.type == "mistral" \
            else None
        self.qk_norm = self.type == "qwen3"


def inv_freq(cfg):
    """modeling_rope_utils.py: default, linear and llama3, in float32."""
    dim = cfg.hd
    f = 1.0 / (cfg.theta ** (torch.arange(0, dim, 2, dtype=torch.int64)
                             .float() / dim))
    s = cfg.scaling
    if not s or s.get("rope_type", s.get("type")) == "default":
        return f
    kind = s.get("rope_type", s.get("type"))
    if kind == "linear":
        return f / s["factor"]
    assert kind == "llama3", kind
    factor, lo, hi = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    lo_wl, hi_wl = old / lo, old / hi
    wavelen = 2 * math.pi / f
    g = torch.where(wavelen > lo_wl, f / factor, f)
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * g / factor + smooth * g
    medium = ~(wavelen < hi_wl) * ~(wavelen > lo_wl)
    return torch.where(medium, smoothed, g)


# ---- the model -------------------------------------------------------------------

def rmsnorm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def linear(x, p, name):
    y = x @ p[name + ".weight"].T
    b = p.get(name + ".bias")
    return y + b if b is not None else y


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(x, cos, sin, interleaved):
    """x [T, heads, hd]; cos, sin [T, hd/2]."""
    if interleaved:  # the planted mistake: pairs (2i, 2i+1)
        a, b = x[..., 0::2], x[..., 1::2]
        c, s = cos[:, None, :], sin[:, None, :]
        out = torch.empty_like(x)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = b * c + a * s
        return out
    c = torch.cat((cos, cos), -1)[:, None, :]
    s = torch.cat((sin, sin), -1)[:, None, :]
    return x * c + rotate_half(x) * s


def forward(cfg, p, ids, record=None, eps=None, theta=None,
            interleaved=False, gqa_tile=False):
    """The logits [T, V] of ids at positions 0..T-1; record(name, t)."""
    rec = record or (lambda name, t: None)
    eps = cfg.eps if eps is None else eps
    if theta is not None:
        cfg.theta = theta
    T = len(ids)
    x = p["model.embed_tokens.weight"][torch.tensor(ids)]
    rec("embed", x)
    pos = torch.arange(T, dtype=torch.float32)
    freqs = pos[:, None] * inv_freq(cfg)[None, :]
    cos, sin = freqs.cos(), freqs.sin()
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    if cfg.window:
        mask &= ~torch.ones(T, T, dtype=torch.bool).tril(-cfg.window)
    rep = cfg.NH // cfg.NKV
    for i in range(cfg.L):
        pre = "model.layers.%d." % i
        tr = "layers.%d." % i
        h = rmsnorm(x, p[pre + "input_layernorm.weight"], eps)
        rec(tr + "input_norm", h)
        q = linear(h, p, pre + "self_attn.q_proj").view(T, cfg.NH, cfg.hd)
        k = linear(h, p, pre + "self_attn.k_proj").view(T, cfg.NKV, cfg.hd)
        v = linear(h, p, pre + "self_attn.v_proj").view(T, cfg.NKV, cfg.hd)
        rec(tr + "attn.q", q)
        rec(tr + "attn.k", k)
        rec(tr + "attn.v", v)
        if cfg.qk_norm:
            q = rmsnorm(q, p[pre + "self_attn.q_norm.weight"], eps)
            k = rmsnorm(k, p[pre + "self_attn.k_norm.weight"], eps)
            rec(tr + "attn.q_norm", q)
            rec(tr + "attn.k_norm", k)
        q = rope(q, cos, sin, interleaved)
        k = rope(k, cos, sin, interleaved)
        rec(tr + "attn.q_rope", q)
        rec(tr + "attn.k_rope", k)
        if gqa_tile:  # the planted mistake: kv heads tiled, not repeated
            kr, vr = k.repeat(1, rep, 1), v.repeat(1, rep, 1)
        else:  # repeat_kv: each kv head serves rep consecutive query heads
            kr = k.repeat_interleave(rep, dim=1)
            vr = v.repeat_interleave(rep, dim=1)
        scores = torch.einsum("thd,shd->hts", q, kr) / math.sqrt(cfg.hd)
        scores = scores.masked_fill(~mask, float("-inf"))
        att = torch.softmax(scores, dim=-1)
        a = torch.einsum("hts,shd->thd", att, vr).reshape(T, cfg.NH * cfg.hd)
        rec(tr + "attn.out", a)
        o = linear(a, p, pre + "self_attn.o_proj")
        rec(tr + "attn.proj", o)
        x = x + o
        rec(tr + "resid_mid", x)
        h = rmsnorm(x, p[pre + "post_attention_layernorm.weight"], eps)
        rec(tr + "post_norm", h)
        g = linear(h, p, pre + "mlp.gate_proj")
        u = linear(h, p, pre + "mlp.up_proj")
        rec(tr + "mlp.gate", g)
        rec(tr + "mlp.up", u)
        act = torch.nn.functional.silu(g) * u
        rec(tr + "mlp.act", act)
        d = linear(act, p, pre + "mlp.down_proj")
        rec(tr + "mlp.down", d)
        x = x + d
        rec(tr + "resid", x)
    x = rmsnorm(x, p["model.norm.weight"], eps)
    rec("norm", x)
    head = p["model.embed_tokens.weight"] if cfg.tied or \
        "lm_head.weight" not in p else p["lm_head.weight"]
    logits = x @ head.T
    rec("logits", logits)
    return logits


def load(directory):
    with open(os.path.join(directory, "config.json")) as f:
        cfg = Config(json.load(f))
    raw = read_snapshot(directory)
    p = {k: torch.from_numpy(np.array(v, dtype=np.float32))
         for k, v in raw.items()}
    return cfg, p


def greedy(cfg, p, ids, n, **kw):
    out, seq = [], list(ids)
    with torch.no_grad():
        for _ in range(n):
            nxt = int(torch.argmax(forward(cfg, p, seq, **kw)[-1]))
            out.append(nxt)
            seq.append(nxt)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--ids")
    ap.add_argument("--ids-from")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--greedy", type=int, default=0)
    ap.add_argument("--eps", type=float)
    ap.add_argument("--theta", type=float)
    ap.add_argument("--interleaved", action="store_true")
    ap.add_argument("--gqa-tile", action="store_true")
    a = ap.parse_args(argv)
    if a.ids:
        ids = [int(s) for s in a.ids.split(",")]
    elif a.ids_from:
        ids = [int(v) for v in read_safetensors(a.ids_from)["ids"]]
    else:
        ap.error("give --ids or --ids-from")
    cfg, p = load(a.dir)
    kw = dict(eps=a.eps, theta=a.theta, interleaved=a.interleaved,
              gqa_tile=a.gqa_tile)
    records = [("ids", np.array(ids, dtype=np.int64))]
    with torch.no_grad():
        forward(cfg, p, ids, lambda n, t: records.append(
            (n, t.detach().numpy().astype(np.float32))), **kw)
        if a.greedy:
            records.append(("greedy", np.array(
                greedy(cfg, p, ids, a.greedy, **kw), dtype=np.int64)))
    write_trace(a.output, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
