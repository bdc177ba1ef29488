#!/usr/bin/python3
"""make_fixtures.py - evidence for stdiff's default judgement of a quantized
side (doc/ggml.md, "Expected error"), and the small GGUF files
tests/cli/stdiff_gguf_bounds.sh reads.

Usage: PYTHONPATH=/work/ref/llama.cpp/gguf-py make_fixtures.py [STDIFF] [--evidence]

The quantized blocks are ggml's own: ggml_quantize_chunk (Q8_1 and Q8_K:
quantize_row_q8_1_ref, quantize_row_q8_K_ref) and to_float from
node-llama-cpp 3.21.1's libggml-base.so through ctypes (loaded as
../ggml/make_fixtures.py loads it; Q8_1's values, which ggml has no
to_float for, are d * q in numpy, as ../ggml/make_fixtures.py computes them); the GGUF files are written by gguf-py's GGUFWriter. Nothing here
uses libst but STDIFF, the program under test, in --evidence.

Writes, next to this script:
  ref.gguf       per type T a tensor "T" of F32 values (a mix of Gaussian,
                 heavy-tailed, outlier, constant and near-zero blocks)
  quant.gguf     the same tensors, each quantized by ggml to its type (an
                 importance matrix for the types that need one; and for
                 Q4_0, Q4_1, Q5_0, Q5_1 and Q4_K, "T.imatrix": with one)
  damaged.gguf   quant.gguf with one byte of every tensor's blocks changed
                 (listed in damaged.txt): a stored scale made 2^8 larger
                 or smaller (the high byte of an F16 XOR 0x04, ...), which
                 the default rule must see

--evidence (slow, writes nothing but evidence.txt): for every type and
distribution, with and without an importance matrix, thousands of blocks
quantized by ggml and judged by STDIFF GGUF against GGUF (every element or
block outside its rule is counted), the largest block RMS error ratio of
the lattice types (the figures libst/diff_gguf.c's table holds), and one
block damaged at a time (a code byte, a scale byte): the fraction caught.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "ggml"))
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
EVIDENCE = "--evidence" in sys.argv
sys.argv[1:] = []  # ../ggml/make_fixtures.py reads its own arguments
import make_fixtures as mf  # noqa: E402  (ggml through ctypes, the type table)
import gguf  # noqa: E402

# gguf-py's size table gives Q8_1 40 bytes (4 + 4 + 32); ggml's block_q8_1
# is 36 (two F16, 32 int8: ggml_type_size, checked by ../ggml): the writer
# computes the tensor's shape from it.
gguf.constants.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_1] = (32, 36)

STDIFF = ARGS[0] if ARGS else os.path.join(HERE, "..", "..", "build", "bin", "stdiff")

# The types judged by an error rule (Q8_0 is judged by exact re-quantization).
JUDGED = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
          "Q8_K", "Q8_1", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0",
          "Q2_0", "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"]
# Also quantized with an importance matrix in quant.gguf ("T.imatrix").
IMATRIX_TOO = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K"]
LEGACY = {"Q4_0", "Q4_1", "Q5_0", "Q5_1"}
LATTICE = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"}
# Types whose quantizer uses an importance matrix when given one.
TAKES_IMATRIX = set(JUDGED) - {"Q8_K", "Q8_1", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0",
                               "Q2_0"}

# Byte ranges [lo, hi) of a block: stored scales (F16/F32/E8M0/UE4M3 and
# the sub-block scales) and codes, from doc/ggml.md's layouts.
SCALE_BYTES = {
    "Q4_0": [(0, 2)], "Q4_1": [(0, 4)], "Q5_0": [(0, 2)], "Q5_1": [(0, 4)],
    "Q2_K": [(0, 16), (80, 84)], "Q3_K": [(96, 110)], "Q4_K": [(0, 16)],
    "Q5_K": [(0, 16)], "Q6_K": [(192, 210)], "Q8_K": [(0, 4)], "Q8_1": [(0, 2)], "IQ4_NL": [(0, 2)],
    "IQ4_XS": [(0, 8)], "TQ1_0": [(52, 54)], "TQ2_0": [(64, 66)], "MXFP4": [(0, 1)],
    "NVFP4": [(0, 4)], "Q1_0": [(0, 2)], "Q2_0": [(0, 2)], "IQ1_S": [(0, 2)],
    "IQ1_M": [(48, 56)], "IQ2_XXS": [(0, 2)], "IQ2_XS": [(0, 2), (66, 74)],
    "IQ2_S": [(0, 2), (74, 82)], "IQ3_XXS": [(0, 2)], "IQ3_S": [(0, 2), (106, 110)],
}
CODE_BYTES = {
    "Q4_0": (2, 18), "Q4_1": (4, 20), "Q5_0": (2, 22), "Q5_1": (4, 24),
    "Q2_K": (16, 80), "Q3_K": (0, 96), "Q4_K": (16, 144), "Q5_K": (16, 176),
    "Q6_K": (0, 192), "Q8_K": (4, 260), "Q8_1": (4, 36), "IQ4_NL": (2, 18), "IQ4_XS": (8, 136),
    "TQ1_0": (0, 52), "TQ2_0": (0, 64), "MXFP4": (1, 17), "NVFP4": (4, 36),
    "Q1_0": (2, 18), "Q2_0": (2, 18), "IQ1_S": (2, 50), "IQ1_M": (0, 48),
    "IQ2_XXS": (2, 66), "IQ2_XS": (2, 66), "IQ2_S": (2, 74), "IQ3_XXS": (2, 98),
    "IQ3_S": (2, 106),
}
# The byte of a block damaged in damaged.gguf and the XOR: an F16 scale's
# high byte XOR 0x20 (the exponent moved by 8: 256 times), E8M0 + 8, ...
DAMAGE = {
    "Q2_K": (81, 0x20), "Q3_K": (109, 0x20), "Q4_K": (1, 0x20), "Q5_K": (1, 0x20),
    "Q6_K": (209, 0x20), "Q8_K": (3, 0x04), "Q8_1": (1, 0x20), "IQ4_NL": (1, 0x20), "IQ4_XS": (1, 0x20),
    "TQ1_0": (53, 0x20), "TQ2_0": (65, 0x20), "MXFP4": (0, 0x08), "NVFP4": (0, 0x40),
    "Q1_0": (2, 0xFF), "Q2_0": (1, 0x20), "IQ1_S": (1, 0x20), "IQ1_M": (55, 0x20),
    "IQ2_XXS": (1, 0x20), "IQ2_XS": (1, 0x20), "IQ2_S": (1, 0x20), "IQ3_XXS": (1, 0x20),
    "IQ3_S": (1, 0x20), "Q4_0": (1, 0x20), "Q4_1": (1, 0x20), "Q5_0": (1, 0x20),
    "Q5_1": (1, 0x20),
}

rng = np.random.default_rng(20261202)


def quantize_ref(name, x):
    """Q8_1 and Q8_K have no ggml_quantize_chunk path: quantize_row_*_ref."""
    t, blk, size = mf.TYPES[name]
    dst = ctypes.create_string_buffer(size * (len(x) // blk))
    fn = getattr(mf.ggml, "quantize_row_%s_ref" % name.lower().replace("q8_k", "q8_K"))
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    fn(x.ctypes.data_as(ctypes.c_void_p), dst, len(x))
    return bytes(dst.raw)


def to_float(name, raw, n):
    """ggml's values of the bytes raw (Q8_K: dequantize_row_q8_K; Q8_1,
    which ggml cannot decode: d * q in numpy)."""
    if name == "Q8_1":
        return mf.numpy_q8_1(bytes(raw))
    if name != "Q8_K":
        return mf.ggml_to_float(mf.TYPES[name][0], raw, n)
    out = np.zeros(n, dtype=np.float32)
    fn = mf.ggml.dequantize_row_q8_K
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64]
    fn(bytes(raw), out.ctypes.data_as(ctypes.c_void_p), n)
    return out


def quantize(name, x, imat):
    """ggml's bytes for the F32 values x (whole blocks, one row)."""
    if name in ("Q8_1", "Q8_K"):
        return quantize_ref(name, x)
    t, blk, size = mf.TYPES[name]
    dst = ctypes.create_string_buffer(size * (len(x) // blk))
    w = None if imat is None else imat.ctypes.data_as(ctypes.c_void_p)
    got = mf.ggml.ggml_quantize_chunk(t, x.ctypes.data_as(ctypes.c_void_p), dst, 0, 1,
                                      len(x), w)
    assert got == len(dst.raw), (name, got)
    return bytes(dst.raw)


def blocks(kind, nb, blk):
    """nb blocks of blk floats of a kind, each its own scale."""
    s = np.exp(rng.uniform(np.log(1e-4), np.log(10.0), (nb, 1)))
    g = rng.standard_normal((nb, blk))
    if kind == "gauss":
        x = g * s
    elif kind == "weights":  # a trained matrix's rows: N(0, 0.02)
        x = g * 0.02
    elif kind == "heavy":  # Student's t, 2 degrees of freedom
        x = rng.standard_t(2, (nb, blk)) * s
    elif kind == "outliers":
        x = g * s
        x[rng.random((nb, blk)) < 0.02] *= 30
    elif kind == "constant":
        x = np.ones((nb, blk)) * s * rng.choice([-1, 1], (nb, 1))
    elif kind == "nearzero":
        x = g * 1e-7
    elif kind == "tiny":
        x = g * 1e-12
    elif kind == "shifted":  # far from zero: LayerNorm weights
        x = 1 + 0.05 * g
    elif kind == "sparse":
        x = g * s * (rng.random((nb, blk)) < 0.1)
    else:
        raise ValueError(kind)
    return x.astype(np.float32).ravel()


KINDS = ["gauss", "weights", "heavy", "outliers", "constant", "nearzero", "tiny",
         "shifted", "sparse"]


def imatrix(n, how):
    if how == "none":
        return None
    if how == "uniform":
        return rng.uniform(0.1, 2.0, n).astype(np.float32)
    return rng.exponential(1.0, n).astype(np.float32) ** 2  # squared activations


def imat_choices(name):
    if name in mf.NEEDS_IMATRIX:
        return ["uniform", "activations"]
    return ["none", "uniform", "activations"] if name in TAKES_IMATRIX else ["none"]


def write_gguf(path, tensors):
    """tensors: (name, ggml type name or None for F32, values or bytes, n)."""
    w = gguf.GGUFWriter(path, "bounds")
    for name, tname, data, n in tensors:
        if tname is None:
            w.add_tensor(name, data)
        else:
            t = gguf.GGMLQuantizationType[tname]
            w.add_tensor(name, np.frombuffer(data, dtype=np.uint8),
                         raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def stdiff(a, b):
    """STDIFF --json a b: {tensor name: its JSON object}."""
    p = subprocess.run([STDIFF, "--json", a, b], capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, {t["name"]: t for t in json.loads(p.stdout)["tensors"]}


def block_rms_ratio(x, y, blk):
    """The largest (RMS(y - x) - 2^-20) / RMS(x) of the blocks: the least
    figure libst's rule (RMS error <= figure * RMS(x) + 2^-20) passes."""
    x = x.reshape(-1, blk).astype(np.float64)
    e = x - y.reshape(-1, blk)
    rx = np.sqrt((x * x).mean(axis=1))
    re = np.sqrt((e * e).mean(axis=1)) - 2.0**-20
    ok = (rx > 0) & (re > 0)
    return float((re[ok] / rx[ok]).max()) if ok.any() else 0.0


def fixtures():
    """ref.gguf, quant.gguf, damaged.gguf: 2 to 8 blocks per type."""
    ref, good, bad, notes = [], [], [], []
    cases = [(name, imat_choices(name)[0]) for name in JUDGED]
    cases += [(name, "activations") for name in IMATRIX_TOO]
    for name, how in cases:
        t, blk, size = mf.TYPES[name]
        nb = max(2, 512 // blk)
        x = np.concatenate([blocks(k, nb // 2, blk) for k in ("gauss", "heavy")])
        x[:blk] = blocks("weights", 1, blk)
        q = quantize(name, x, imatrix(len(x), how))
        off, xor = DAMAGE[name]
        d = bytearray(q)
        d[off] ^= xor
        tn = name if how == imat_choices(name)[0] else name + ".imatrix"
        ref.append((tn, None, x, len(x)))
        good.append((tn, name, q, len(x)))
        bad.append((tn, name, bytes(d), len(x)))
        notes.append("%s: %s, block 0 byte %d XOR 0x%02x" % (tn, how, off, xor))
    write_gguf(os.path.join(HERE, "ref.gguf"), ref)
    write_gguf(os.path.join(HERE, "quant.gguf"), good)
    write_gguf(os.path.join(HERE, "damaged.gguf"), bad)
    with open(os.path.join(HERE, "damaged.txt"), "w") as f:
        f.write("\n".join(notes) + "\n")


def damaged_copies(name, q, blk, size, where):
    """One damaged copy of each block: a random byte of `where` XOR random."""
    out = bytearray(q)
    for b in range(len(q) // size):
        lo, hi = where[rng.integers(len(where))]
        out[b * size + int(rng.integers(lo, hi))] ^= int(rng.integers(1, 256))
    return bytes(out)


def evidence(nb=1024):
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in JUDGED:
            t, blk, size = mf.TYPES[name]
            n = max(1, nb * 256 // blk // 4)  # blocks per tensor
            ref, good, worst, total = [], [], 0.0, 0
            code, scale = [], []
            for kind in KINDS:
                for how in imat_choices(name):
                    x = blocks(kind, n, blk)
                    q = quantize(name, x, imatrix(len(x), how))
                    y = to_float(name, q, len(x))
                    tn = "%s.%s" % (kind, how)
                    ref.append((tn, None, x, len(x)))
                    good.append((tn, name, q, len(x)))
                    total += n
                    if name in LATTICE or (name in LEGACY and how != "none"):
                        worst = max(worst, block_rms_ratio(x, y, blk))
                    if kind in ("gauss", "weights", "heavy") and how != "activations":
                        # One block per tensor: what is caught is counted per block.
                        for b in range(min(n, 64)):
                            xb, qb = x[b * blk:(b + 1) * blk], q[b * size:(b + 1) * size]
                            yb = y[b * blk:(b + 1) * blk]
                            for what, where in (("code", [CODE_BYTES[name]]),
                                                ("scale", SCALE_BYTES[name])):
                                db = damaged_copies(name, qb, blk, size, where)
                                yd = to_float(name, db, blk)
                                if np.array_equal(yd.view(np.uint32), yb.view(np.uint32)):
                                    continue  # a byte that does not change a value
                                (code if what == "code" else scale).append(
                                    ("%s.%d.%s" % (tn, b, what), xb, db))
            a, b = os.path.join(tmp, "a.gguf"), os.path.join(tmp, "b.gguf")
            write_gguf(a, ref)
            write_gguf(b, good)
            _, res = stdiff(a, b)
            outside = sum(r["mismatched"] for r in res.values())
            caught = {}
            for what, items in (("code", code), ("scale", scale)):
                write_gguf(a, [(k, None, xb, blk) for k, xb, _ in items])
                write_gguf(b, [(k, name, db, blk) for k, _, db in items])
                _, res = stdiff(a, b) if items else (0, {})
                caught[what] = (sum(r["verdict"] == "differs" for r in res.values()),
                                len(items))
            line = "%-8s %6d blocks, %d outside the rule" % (name, total, outside)
            if name in LATTICE or name in LEGACY:
                line += ", largest block RMS ratio %.4f%s" % (
                    worst, " (with an imatrix)" if name in LEGACY else "")
            line += "; damaged, caught: codes %d/%d, scales %d/%d" % (
                caught["code"] + caught["scale"])
            print(line, flush=True)
            lines.append(line)
    with open(os.path.join(HERE, "evidence.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if EVIDENCE:
        evidence()
    else:
        fixtures()
