#!/usr/bin/python3
"""gen_fixtures.py - reference traces and planted-trap snapshots for
`gpt2run --trace` and `stdiff --first` (tests/check_gpt2_trace.c,
tests/cli/trace.sh). Deterministic; run it here:

    /usr/bin/python3 gen_fixtures.py

Every reference trace is made by scripts/gpt2_trace_torch.py (plain
PyTorch, its own safetensors reader and writer), never by libst or gpt2run.
Snapshots are written by hand here. See MANIFEST.tsv for each file.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gpt2_trace_torch as tracer  # noqa: E402

TINY = os.path.join(ROOT, "testdata", "gpt2", "tiny-f32")
P7 = [38, 238, 149, 176, 179, 212, 8]   # testdata/gpt2/ref-f32-p7's prompt


def write_safetensors(path, tensors):
    """tensors: list of (name, float32 array), written in this order."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, arr in tensors:
        b = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def snapshot(name, config, tensors):
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(d, "model.safetensors"), tensors)
    return d


def tiny():
    with open(os.path.join(TINY, "config.json")) as f:
        cfg = json.load(f)
    t = tracer.read_safetensors(os.path.join(TINY, "model.safetensors"))
    return cfg, [(n, np.array(a, dtype=np.float32)) for n, a in t.items()]


def edit(tensors, name, fn):
    return [(n, fn(a) if n == name else a) for n, a in tensors]


def init_model():
    """A GPT-2 with GPT-2's own initialisation (normal, std 0.02; LayerNorm
    weight 1, biases 0 perturbed slightly), so activations stay O(1)."""
    rng = np.random.default_rng(14)
    C, L, V, P = 32, 2, 128, 32
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
           "vocab_size": V, "n_positions": P, "n_embd": C, "n_layer": L,
           "n_head": 2, "n_inner": None, "activation_function": "gelu_new",
           "layer_norm_epsilon": 1e-5, "scale_attn_weights": True,
           "tie_word_embeddings": True}
    n = lambda *s: (0.02 * rng.standard_normal(s)).astype(np.float32)
    t = [("wte.weight", n(V, C)), ("wpe.weight", n(P, C))]
    for i in range(L):
        h = f"h.{i}."
        t += [(h + "ln_1.weight", 1 + n(C)), (h + "ln_1.bias", n(C)),
              (h + "attn.c_attn.weight", n(C, 3 * C)),
              (h + "attn.c_attn.bias", n(3 * C)),
              (h + "attn.c_proj.weight", n(C, C)),
              (h + "attn.c_proj.bias", n(C)),
              (h + "ln_2.weight", 1 + n(C)), (h + "ln_2.bias", n(C)),
              (h + "mlp.c_fc.weight", n(C, 4 * C)),
              (h + "mlp.c_fc.bias", n(4 * C)),
              (h + "mlp.c_proj.weight", n(4 * C, C)),
              (h + "mlp.c_proj.bias", n(C))]
    t += [("ln_f.weight", 1 + n(C)), ("ln_f.bias", n(C))]
    return cfg, t


def trace(model_dir, ids, out, *extra):
    tracer.main([model_dir, "--ids", ",".join(map(str, ids)),
                 "-o", os.path.join(HERE, out), *extra])


def main():
    cfg, t = init_model()
    d = snapshot("gpt2-init", cfg, t)
    trace(d, list(range(3, 19)), "ref-init-t16.safetensors")

    trace(TINY, P7, "ref-tiny-p7.safetensors")
    # The reference computed with the exact (erf) GELU instead of gelu_new.
    trace(TINY, P7, "ref-tiny-p7-exact-gelu.safetensors", "--gelu", "exact")
    # The reference with its 'greedy' continuation, for gpt2run --check.
    trace(TINY, P7, "ref-tiny-p7-greedy.safetensors", "--greedy", "8")

    cfg, t = tiny()
    C = cfg["n_embd"]
    # Block 1's square c_proj copied without its transpose.
    snapshot("trap-cproj", cfg, edit(t, "h.1.attn.c_proj.weight",
                                     lambda a: a.T.copy()))
    # Block 1's c_attn packed K, Q, V instead of Q, K, V (weight and bias).
    kqv = lambda a: np.concatenate([a[..., C:2 * C], a[..., :C],
                                    a[..., 2 * C:]], axis=-1)
    q = edit(t, "h.1.attn.c_attn.weight", kqv)
    snapshot("trap-qk", cfg, edit(q, "h.1.attn.c_attn.bias", kqv))
    # layer_norm_epsilon 1e-5 -> 1e-3 in config.json; weights untouched.
    snapshot("trap-eps", dict(cfg, layer_norm_epsilon=1e-3), t)


if __name__ == "__main__":
    main()
