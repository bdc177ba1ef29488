#!/usr/bin/python3
"""reference.py - an independent GPT-2 forward pass in PyTorch, for tests.

It reads a Hugging Face GPT-2 snapshot with its own safetensors reader (no
libst, no safetensors package, no transformers), applies the seed chapter's
loading rules, and computes logits by full recompute (no KV cache) in F32,
following transformers' modeling_gpt2.py: Conv1D is x @ W + b with W stored
[in, out]; c_attn packs Q, K, V in that order; attention is scaled by
1/sqrt(head size) and causal; the MLP uses gelu_new; the head is tied to wte.

gen_fixtures.py imports it to make the reference logits and greedy ids that
tests/check_gpt2.c and tests/cli/gpt2run.sh compare gpt2run with.

    /usr/bin/python3 reference.py --selftest          check this file itself
    /usr/bin/python3 reference.py DIR 1,2,3           print logits for ids

--selftest checks this implementation once against values derived by hand
(a 1-layer model whose logits follow from a few lines of algebra, written
out below) and against a plain-Python scalar implementation (lists and the
math module, no torch) of a random 1-layer model.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
         "U8": "u1", "I8": "i1", "BOOL": "?"}


def read_safetensors(path):
    """{name: numpy array} of one file; BF16 widened to float32."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = blob[base + begin:base + end]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=NUMPY[info["dtype"]])
        out[name] = arr.reshape(info["shape"])
    return out


def read_snapshot(directory):
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            part = read_safetensors(os.path.join(directory, shard))
            assert set(part) == {k for k, v in weight_map.items() if v == shard}
            tensors.update(part)
        return tensors
    return read_safetensors(os.path.join(directory, "model.safetensors"))


def expected_names(cfg):
    names = ["wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"]
    for i in range(cfg["n_layer"]):
        for part in ("ln_1", "ln_2", "attn.c_attn", "attn.c_proj", "mlp.c_fc",
                     "mlp.c_proj"):
            names += [f"h.{i}.{part}.weight", f"h.{i}.{part}.bias"]
    return names


def load(directory):
    """(config dict, {name: float32 torch tensor}) with the seed's rules."""
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["model_type"] == "gpt2"
    assert cfg.get("activation_function", "gelu_new") == "gelu_new"
    params, head = {}, None
    for name, arr in read_snapshot(directory).items():
        if name == "lm_head.weight":
            head = arr
            continue
        name = name.removeprefix("transformer.")
        if name.endswith((".attn.bias", ".attn.masked_bias")):
            continue
        assert name not in params, name
        params[name] = torch.tensor(np.array(arr, dtype=np.float32))
    assert sorted(params) == sorted(expected_names(cfg)), "names"
    if head is not None:
        assert np.array_equal(np.asarray(head, np.float32),
                              params["wte.weight"].numpy()), "untied head"
    return cfg, params


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


@torch.no_grad()
def forward(cfg, p, ids):
    """Logits (T, V), float32, at every position of ids."""
    T, C, nh = len(ids), cfg["n_embd"], cfg["n_head"]
    hs = C // nh
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    ids = torch.tensor(ids, dtype=torch.long)
    x = p["wte.weight"][ids] + p["wpe.weight"][torch.arange(T)]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["n_layer"]):
        w = lambda part: p[f"h.{i}.{part}"]
        h = F.layer_norm(x, (C,), w("ln_1.weight"), w("ln_1.bias"), eps)
        qkv = torch.addmm(w("attn.c_attn.bias"), h, w("attn.c_attn.weight"))
        q, k, v = qkv.split(C, dim=1)
        q, k, v = (t.view(T, nh, hs).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(1, 2)) / math.sqrt(hs)
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        x = x + torch.addmm(w("attn.c_proj.bias"), y, w("attn.c_proj.weight"))
        h = F.layer_norm(x, (C,), w("ln_2.weight"), w("ln_2.bias"), eps)
        h = gelu_new(torch.addmm(w("mlp.c_fc.bias"), h, w("mlp.c_fc.weight")))
        x = x + torch.addmm(w("mlp.c_proj.bias"), h, w("mlp.c_proj.weight"))
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], eps)
    return x @ p["wte.weight"].T


def greedy(cfg, p, ids, n):
    """n greedy ids by full recompute, and the smallest top-1/top-2 gap."""
    ids, out, margin = list(ids), [], float("inf")
    for _ in range(n):
        logits = forward(cfg, p, ids)[-1]
        top = torch.topk(logits, 2).values
        margin = min(margin, float(top[0] - top[1]))
        nxt = int(torch.argmax(logits))
        out.append(nxt)
        ids.append(nxt)
    return out, margin


# ---- self-test ---------------------------------------------------------------

def scalar_forward(cfg, p, ids):
    """The same model in plain Python floats (lists, math): no torch."""
    L = lambda t: t.double().tolist()
    C, nh, V = cfg["n_embd"], cfg["n_head"], cfg["vocab_size"]
    hs, eps = C // nh, cfg.get("layer_norm_epsilon", 1e-5)

    def layernorm(v, w, b):
        mean = sum(v) / len(v)
        var = sum((a - mean) ** 2 for a in v) / len(v)
        return [(a - mean) / math.sqrt(var + eps) * w[j] + b[j]
                for j, a in enumerate(v)]

    def conv1d(v, W, b):  # W is [in, out]
        return [b[o] + sum(v[i] * W[i][o] for i in range(len(v)))
                for o in range(len(b))]

    def gelu(a):
        return 0.5 * a * (1 + math.tanh(math.sqrt(2 / math.pi) *
                                        (a + 0.044715 * a ** 3)))

    wte, wpe = L(p["wte.weight"]), L(p["wpe.weight"])
    xs = [[wte[t][j] + wpe[pos][j] for j in range(C)]
          for pos, t in enumerate(ids)]
    for i in range(cfg["n_layer"]):
        w = lambda part: L(p[f"h.{i}.{part}"])
        hs_ = [layernorm(x, w("ln_1.weight"), w("ln_1.bias")) for x in xs]
        qkv = [conv1d(h, w("attn.c_attn.weight"), w("attn.c_attn.bias"))
               for h in hs_]
        ys = []
        for t in range(len(xs)):
            y = []
            for h in range(nh):
                q = qkv[t][h * hs:(h + 1) * hs]
                sc = [sum(q[j] * qkv[s][C + h * hs + j] for j in range(hs)) /
                      math.sqrt(hs) for s in range(t + 1)]
                m = max(sc)
                e = [math.exp(a - m) for a in sc]
                z = sum(e)
                y += [sum(e[s] / z * qkv[s][2 * C + h * hs + j]
                          for s in range(t + 1)) for j in range(hs)]
            ys.append(y)
        xs = [[a + b for a, b in zip(x, conv1d(y, w("attn.c_proj.weight"),
                                                w("attn.c_proj.bias")))]
              for x, y in zip(xs, ys)]
        for t, x in enumerate(xs):
            h = layernorm(x, w("ln_2.weight"), w("ln_2.bias"))
            h = [gelu(a) for a in conv1d(h, w("mlp.c_fc.weight"),
                                         w("mlp.c_fc.bias"))]
            m = conv1d(h, w("mlp.c_proj.weight"), w("mlp.c_proj.bias"))
            xs[t] = [a + b for a, b in zip(x, m)]
    out = []
    for x in xs:
        h = layernorm(x, L(p["ln_f.weight"]), L(p["ln_f.bias"]))
        out.append([sum(h[j] * wte[v][j] for j in range(C)) for v in range(V)])
    return out


def hand_model():
    """The 1-layer, 2-channel model whose logits are derived by hand.

    vocab 2, n_embd 2, n_head 1, n_positions 2, eps 1e-5. wte = I (token 0
    is [1, 0], token 1 is [0, 1]), wpe = 0, every LayerNorm weight 1 and
    bias 0. c_attn's Q and K parts are 0, so attention is uniform over the
    prefix; its V part is I, c_proj is I, all biases 0; the MLP is all 0.

    A LayerNorm of [a, b] is [s, -s] * sign(a - b) with d = |a - b| / 2 and
    s = d / sqrt(d^2 + eps). Let s1 = 0.5 / sqrt(0.25 + eps).
      ids [0, 1]:
      t=0: ln_1([1, 0]) = [s1, -s1]; attention over {0}: y = [s1, -s1];
           x = [1 + s1, -s1]; d = (1 + 2 s1) / 2; logits = [n, -n] with
           n = d / sqrt(d^2 + eps) (the head dots [n, -n] with rows of I).
      t=1: ln_1([0, 1]) = [-s1, s1]; attention averages {0, 1}: y = [0, 0];
           x = [0, 1]; logits = [-s1, s1].
    """
    eye, zero2 = np.eye(2, dtype=np.float32), np.zeros((2, 2), np.float32)
    c_attn = np.concatenate([zero2, zero2, eye], axis=1)  # [in 2, out 6]
    p = {"wte.weight": eye, "wpe.weight": zero2,
         "ln_f.weight": np.ones(2, np.float32), "ln_f.bias": np.zeros(2, np.float32),
         "h.0.ln_1.weight": np.ones(2, np.float32), "h.0.ln_1.bias": np.zeros(2, np.float32),
         "h.0.ln_2.weight": np.ones(2, np.float32), "h.0.ln_2.bias": np.zeros(2, np.float32),
         "h.0.attn.c_attn.weight": c_attn, "h.0.attn.c_attn.bias": np.zeros(6, np.float32),
         "h.0.attn.c_proj.weight": eye, "h.0.attn.c_proj.bias": np.zeros(2, np.float32),
         "h.0.mlp.c_fc.weight": np.zeros((2, 8), np.float32),
         "h.0.mlp.c_fc.bias": np.zeros(8, np.float32),
         "h.0.mlp.c_proj.weight": np.zeros((8, 2), np.float32),
         "h.0.mlp.c_proj.bias": np.zeros(2, np.float32)}
    cfg = {"model_type": "gpt2", "vocab_size": 2, "n_positions": 2, "n_embd": 2,
           "n_layer": 1, "n_head": 1, "layer_norm_epsilon": 1e-5}
    return cfg, p


def hand_logits(eps=1e-5):
    s1 = 0.5 / math.sqrt(0.25 + eps)
    d = (1 + 2 * s1) / 2
    n = d / math.sqrt(d * d + eps)
    return [[n, -n], [-s1, s1]]


def random_params(cfg, rng):
    """Random weights, larger than GPT-2's initialisation on purpose:
    attention far from uniform, position and block outputs strong enough
    that greedy decoding visits many tokens instead of repeating one."""
    C, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    g = lambda *shape, s=1.0: (rng.standard_normal(shape) * s).astype(np.float32)
    p = {"wte.weight": g(V, C, s=0.3), "wpe.weight": g(P, C, s=1.0),
         "ln_f.weight": 1 + g(C, s=0.2), "ln_f.bias": g(C, s=0.2)}
    for i in range(cfg["n_layer"]):
        p.update({f"h.{i}.ln_1.weight": 1 + g(C, s=0.2), f"h.{i}.ln_1.bias": g(C, s=0.2),
                  f"h.{i}.ln_2.weight": 1 + g(C, s=0.2), f"h.{i}.ln_2.bias": g(C, s=0.2),
                  f"h.{i}.attn.c_attn.weight": g(C, 3 * C, s=0.25),
                  f"h.{i}.attn.c_attn.bias": g(3 * C, s=0.1),
                  f"h.{i}.attn.c_proj.weight": g(C, C, s=0.5),
                  f"h.{i}.attn.c_proj.bias": g(C, s=0.1),
                  f"h.{i}.mlp.c_fc.weight": g(C, 4 * C, s=0.25),
                  f"h.{i}.mlp.c_fc.bias": g(4 * C, s=0.1),
                  f"h.{i}.mlp.c_proj.weight": g(4 * C, C, s=0.5),
                  f"h.{i}.mlp.c_proj.bias": g(C, s=0.1)})
    return p


def selftest():
    cfg, p = hand_model()
    p = {k: torch.tensor(v) for k, v in p.items()}
    got = forward(cfg, p, [0, 1]).double().numpy()
    want = np.array(hand_logits())
    err = np.abs(got - want).max()
    print(f"hand-derived 1-layer model: logits {got.tolist()}, max abs diff {err:.2e}")
    assert err < 1e-6, "reference disagrees with the hand-derived logits"

    cfg = {"model_type": "gpt2", "vocab_size": 11, "n_positions": 8, "n_embd": 8,
           "n_layer": 1, "n_head": 2, "layer_norm_epsilon": 1e-5}
    p = {k: torch.tensor(v) for k, v in random_params(cfg, np.random.default_rng(7)).items()}
    ids = [3, 1, 4, 1, 5]
    got = forward(cfg, p, ids).double().numpy()
    want = np.array(scalar_forward(cfg, p, ids))
    err = np.abs(got - want).max()
    print(f"random 1-layer model vs scalar Python: max abs diff {err:.2e} "
          f"(logits up to {np.abs(want).max():.2f})")
    assert err < 1e-4, "reference disagrees with the scalar implementation"
    print("selftest OK")


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        selftest()
    elif len(sys.argv) == 3:
        cfg, p = load(sys.argv[1])
        ids = [int(t) for t in sys.argv[2].split(",")]
        torch.set_printoptions(precision=6)
        print(forward(cfg, p, ids))
    else:
        sys.exit(__doc__)
