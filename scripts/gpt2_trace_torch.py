#!/usr/bin/python3
"""gpt2_trace_torch.py - every intermediate of a GPT-2 forward pass in plain
PyTorch, written as the safetensors trace `gpt2run --trace` writes.

It is the reference side of doc/trace.md: the same names, shapes and
definitions, so that

    gpt2run --model-dir DIR --ids 464,3290 --trace ours.safetensors
    scripts/gpt2_trace_torch.py DIR --ids 464,3290 -o ref.safetensors
    stdiff --first ref.safetensors ours.safetensors

names the first stage (and block) where the two disagree.

The model is written here from transformers' modeling_gpt2.py as small
nn.Modules (Conv1D computes x @ W + b with W stored [in, out]; c_attn packs
Q, K, V in that order; attention is causal, scaled by 1/sqrt(head size),
softmax over the keys; the MLP uses gelu_new, the tanh approximation; the
head is tied to wte). The intermediates are captured by forward hooks on
those modules, plus two records inside attention (the per-head q/k/v and
the softmax probabilities, which no module returns). To trace another
PyTorch implementation, register the same hooks on its modules: the
HOOKED table below says which output each name is.

No transformers, no safetensors package and no libst: it reads the
snapshot's *.safetensors (one file or an index) and config.json with its
own few lines, computes in float32 on the CPU (full recompute, no KV
cache), and writes the trace by hand.

    scripts/gpt2_trace_torch.py DIR (--ids 1,2,3 | --ids-from REF) -o OUT
        [--gelu tanh|exact] [--greedy N] [--eps E]

--gelu exact computes the MLP with the exact (erf) GELU instead of
gelu_new, and --eps overrides config.json's layer_norm_epsilon: both plant
a known mistake on the reference side, for tests. --greedy N adds 'greedy'
(I64 [N]): the next N ids chosen greedily, so the file also serves as a
`gpt2run --check` reference for level 3.

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
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:  # say what to install, not a traceback
    sys.exit("gpt2_trace_torch.py: needs numpy and PyTorch for the system python3 (%s);\n"
             "on Debian: apt-get install python3-numpy python3-torch" % e)

NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


# ---- files ---------------------------------------------------------------------

def read_safetensors(path):
    """{name: float32/int numpy array} of one safetensors file."""
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


def write_trace(path, tensors):
    """tensors: list of (name, numpy array) in forward order. The forward
    order goes to __metadata__["order"] (names joined by commas)."""
    dtypes = {np.dtype("<f4"): "F32", np.dtype("<i8"): "I64"}
    header = {"__metadata__": {"format": "pt",
                               "order": ",".join(n for n, _ in tensors)}}
    blobs, off = [], 0
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        b = arr.tobytes()
        header[name] = {"dtype": dtypes[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ---- the model -------------------------------------------------------------------

class Conv1D(nn.Module):
    """y = x @ W + b, W stored [in, out] as GPT-2 stores it."""

    def __init__(self, w, b):
        super().__init__()
        self.weight, self.bias = nn.Parameter(w), nn.Parameter(b)

    def forward(self, x):
        return torch.addmm(self.bias, x, self.weight)


class LayerNorm(nn.Module):
    def __init__(self, w, b, eps):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(w), nn.Parameter(b), eps

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


class GELU(nn.Module):
    def __init__(self, exact):
        super().__init__()
        self.exact = exact

    def forward(self, x):
        if self.exact:
            return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * torch.pow(x, 3.0))))


class Attention(nn.Module):
    def __init__(self, p, i, n_head, record):
        super().__init__()
        self.c_attn = Conv1D(p[f"h.{i}.attn.c_attn.weight"],
                             p[f"h.{i}.attn.c_attn.bias"])
        self.c_proj = Conv1D(p[f"h.{i}.attn.c_proj.weight"],
                             p[f"h.{i}.attn.c_proj.bias"])
        self.n_head, self.i, self.record = n_head, i, record

    def forward(self, x):
        T, C = x.shape
        nh = self.n_head
        hs = C // nh
        q, k, v = self.c_attn(x).split(C, dim=1)   # Q, K, V in that order
        q, k, v = (t.reshape(T, nh, hs) for t in (q, k, v))
        h = f"h.{self.i}.attn."
        self.record(h + "q", q)
        self.record(h + "k", k)
        self.record(h + "v", v)
        scores = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hs)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        probs = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        self.record(h + "weights", probs.permute(1, 0, 2))   # [T, nh, T]
        out = torch.einsum("hts,shd->thd", probs, v).reshape(T, C)
        self.record(h + "out", out)
        return self.c_proj(out)


class Block(nn.Module):
    def __init__(self, p, i, cfg, eps, exact_gelu, record):
        super().__init__()
        w = lambda s: p[f"h.{i}.{s}"]
        self.ln_1 = LayerNorm(w("ln_1.weight"), w("ln_1.bias"), eps)
        self.attn = Attention(p, i, cfg["n_head"], record)
        self.ln_2 = LayerNorm(w("ln_2.weight"), w("ln_2.bias"), eps)
        self.c_fc = Conv1D(w("mlp.c_fc.weight"), w("mlp.c_fc.bias"))
        self.gelu = GELU(exact_gelu)
        self.c_proj = Conv1D(w("mlp.c_proj.weight"), w("mlp.c_proj.bias"))
        self.i, self.record = i, record

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        self.record(f"h.{self.i}.resid_mid", x)
        x = x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))
        self.record(f"h.{self.i}.resid", x)
        return x


class GPT2(nn.Module):
    def __init__(self, cfg, p, eps, exact_gelu, record):
        super().__init__()
        self.wte = nn.Embedding.from_pretrained(p["wte.weight"])
        self.wpe = nn.Embedding.from_pretrained(p["wpe.weight"])
        self.h = nn.ModuleList(Block(p, i, cfg, eps, exact_gelu, record)
                               for i in range(cfg["n_layer"]))
        self.ln_f = LayerNorm(p["ln_f.weight"], p["ln_f.bias"], eps)
        self.record = record

    def forward(self, ids):
        te, pe = self.wte(ids), self.wpe(torch.arange(len(ids)))
        x = te + pe
        self.record("embed", x)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = x @ self.wte.weight.T   # the head is tied to wte
        self.record("logits", logits)
        return logits


# Module outputs captured by forward hooks: trace name -> module path
# ("N" is the block). The rest are recorded inside forward().
HOOKED = {"wte": "wte", "wpe": "wpe", "h.N.ln_1": "h.N.ln_1",
          "h.N.attn.proj": "h.N.attn.c_proj", "h.N.ln_2": "h.N.ln_2",
          "h.N.mlp.fc": "h.N.c_fc", "h.N.mlp.gelu": "h.N.gelu",
          "h.N.mlp.proj": "h.N.c_proj", "ln_f": "ln_f"}


def load_params(directory):
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    params = {}
    for name, arr in read_snapshot(directory).items():
        name = name.removeprefix("transformer.")
        if name == "lm_head.weight" or name.endswith(
                (".attn.bias", ".attn.masked_bias")):
            continue
        params[name] = torch.tensor(np.array(arr, dtype=np.float32))
    return cfg, params


@torch.no_grad()
def trace(cfg, params, ids, eps, exact_gelu):
    """[(name, float32 numpy array)] in forward order, and the logits."""
    records = []

    def record(name, t):
        records.append((name, t.detach().to(torch.float32).numpy().copy()))

    model = GPT2(cfg, params, eps, exact_gelu, record)
    for name, path in HOOKED.items():
        for i in range(cfg["n_layer"]) if "N" in name else [None]:
            module = model
            for part in path.replace("N", str(i)).split("."):
                module = module[int(part)] if part.isdigit() else \
                    getattr(module, part)
            trace_name = name.replace("N", str(i))
            module.register_forward_hook(
                lambda m, inp, out, n=trace_name: record(n, out))
    logits = model(torch.tensor(ids, dtype=torch.long))
    return order_records(records, cfg["n_layer"]), logits


def trace_names(n_layer):
    """Every name in forward order (doc/trace.md)."""
    names = ["ids", "wte", "wpe", "embed"]
    for i in range(n_layer):
        names += [f"h.{i}.{s}" for s in (
            "ln_1", "attn.q", "attn.k", "attn.v", "attn.weights", "attn.out",
            "attn.proj", "resid_mid", "ln_2", "mlp.fc", "mlp.gelu",
            "mlp.proj", "resid")]
    return names + ["ln_f", "logits"]


def order_records(records, n_layer):
    got = dict(records)
    assert len(got) == len(records), "a stage recorded twice"
    names = trace_names(n_layer)[1:]
    assert sorted(got) == sorted(names), sorted(set(got) ^ set(names))
    return [(n, got[n]) for n in names]


@torch.no_grad()
def greedy(cfg, params, ids, n, eps, exact_gelu):
    ids, out = list(ids), []
    for _ in range(n):
        model = GPT2(cfg, params, eps, exact_gelu, lambda name, t: None)
        nxt = int(torch.argmax(model(torch.tensor(ids))[-1]))
        out.append(nxt)
        ids.append(nxt)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--ids", help="comma-separated token ids")
    src.add_argument("--ids-from", help="a safetensors file whose 'ids' "
                     "tensor is the prompt")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--gelu", choices=("tanh", "exact"), default="tanh")
    ap.add_argument("--eps", type=float, help="LayerNorm epsilon (default: "
                    "config.json's layer_norm_epsilon, else 1e-5)")
    ap.add_argument("--greedy", type=int, default=0, metavar="N")
    a = ap.parse_args(argv)
    if a.ids:
        ids = [int(x) for x in a.ids.split(",")]
    else:
        ids = [int(x) for x in read_safetensors(a.ids_from)["ids"]]
    cfg, params = load_params(a.model_dir)
    eps = a.eps if a.eps is not None else cfg.get("layer_norm_epsilon", 1e-5)
    exact = a.gelu == "exact"
    records, _ = trace(cfg, params, ids, eps, exact)
    records.insert(0, ("ids", np.array(ids, dtype="<i8")))
    if a.greedy:
        records.append(("greedy", np.array(
            greedy(cfg, params, ids, a.greedy, eps, exact), dtype="<i8")))
    write_trace(a.output, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
