#!/usr/bin/env python3
"""Make the ggml decoding fixtures of testdata/ggml/ (tests/check_ggml_decode.c).

For every ggml type with a defined dequantization this writes
  <type>.bin  some whole blocks (raw bytes as a GGUF stores them)
  <type>.f32  the little-endian float32 bits ggml decodes them to
The blocks are: ggml's own quantizer (ggml_quantize_chunk) on random floats
where ggml has one, random raw bytes whose scale fields are set to random
finite values, and edge cases (zero, negative and subnormal F16 scales,
every E8M0 / UE4M3 scale byte for MXFP4 / NVFP4) and, last, one block
with an infinite and one with a NaN scale: ggml then gives Inf, and NaN
(the scale's NaN quietened, or x86's default NaN 0xffc00000 for Inf * 0).

The expected floats are ggml's own decoder, ggml_get_type_traits(t)->to_float,
called with ctypes on node-llama-cpp 3.21.1's libggml-base.so (ggml v0.4.0,
llama.cpp release of that package). Q8_1 and Q8_K have no to_float in ggml
(they are only the other operand of ggml's dot products): their expected
values are computed here with numpy (d * q; Q8_1's s and Q8_K's bsums
unused). Where gguf-py's quants.dequantize has the type,
the script checks that gguf-py and ggml agree bit for bit and says where
they do not.

Run: python3 testdata/ggml/make_fixtures.py [LIBGGML_BASE] [GGUF_PY_DIR]
Deterministic (fixed seed): rerunning rewrites identical files.
"""
import ctypes
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = (sys.argv[1] if len(sys.argv) > 1 else
       "/work/ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so")
GGUF_PY = sys.argv[2] if len(sys.argv) > 2 else "/work/ref/llama.cpp/gguf-py"

# name: (ggml type number, elements per block, bytes per block)
TYPES = {
    "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q8_1": (9, 32, 36),
    "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144),
    "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292),
    "IQ2_XXS": (16, 256, 66), "IQ2_XS": (17, 256, 74),
    "IQ3_XXS": (18, 256, 98), "IQ1_S": (19, 256, 50),
    "IQ4_NL": (20, 32, 18), "IQ3_S": (21, 256, 110), "IQ2_S": (22, 256, 82),
    "IQ4_XS": (23, 256, 136), "IQ1_M": (29, 256, 56),
    "TQ1_0": (34, 256, 54), "TQ2_0": (35, 256, 66), "MXFP4": (39, 32, 17),
    "NVFP4": (40, 64, 36), "Q1_0": (41, 128, 18), "Q2_0": (42, 64, 18),
}
# Byte offsets of the F16 scales in a block ("f32" for Q8_K's float d).
F16_SCALES = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q8_1": [0, 2], "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2],
    "Q5_K": [0, 2], "Q6_K": [208], "IQ2_XXS": [0], "IQ2_XS": [0],
    "IQ3_XXS": [0], "IQ1_S": [0], "IQ4_NL": [0], "IQ3_S": [0], "IQ2_S": [0],
    "IQ4_XS": [0], "TQ1_0": [52], "TQ2_0": [64], "Q1_0": [0], "Q2_0": [0],
}
# Types ggml_quantize_chunk cannot make (no quantizer, or it aborts).
NO_QUANTIZER = {"Q8_1", "Q8_K"}
# Types whose ggml quantizer needs an importance matrix.
NEEDS_IMATRIX = {"IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M", "IQ2_S"}


class Traits(ctypes.Structure):
    # struct ggml_type_traits of ggml/include/ggml.h
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64),
                ("type_size", ctypes.c_size_t), ("is_quantized", ctypes.c_bool),
                ("to_float", ctypes.c_void_p), ("from_float_ref", ctypes.c_void_p)]


ggml = ctypes.CDLL(LIB)
ggml.ggml_get_type_traits.restype = ctypes.POINTER(Traits)
ggml.ggml_get_type_traits.argtypes = [ctypes.c_int]
ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                     ctypes.c_void_p]
TO_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

rng = np.random.default_rng(20261201)


def ggml_to_float(t, raw, n):
    tr = ggml.ggml_get_type_traits(t).contents
    if not tr.to_float:
        return None
    src = ctypes.create_string_buffer(bytes(raw), len(raw))
    out = (ctypes.c_float * n)()
    TO_FLOAT(tr.to_float)(src, out, n)
    return np.frombuffer(bytes(out), dtype="<f4").copy()


def ggml_quantize(name, nblocks):
    t, blk, size = TYPES[name]
    n = blk * nblocks
    x = (rng.standard_normal(n) * rng.uniform(0.01, 3.0)).astype(np.float32)
    x[rng.integers(0, n, 3)] *= 20.0  # a few outliers
    dst = ctypes.create_string_buffer(size * nblocks)
    imat = None
    if name in NEEDS_IMATRIX:
        w = rng.uniform(0.1, 2.0, n).astype(np.float32)
        imat = w.ctypes.data_as(ctypes.c_void_p)
    got = ggml.ggml_quantize_chunk(t, x.ctypes.data_as(ctypes.c_void_p), dst, 0,
                                   1, n, imat)
    assert got == size * nblocks, (name, got)
    return bytearray(dst.raw)


def f16_bits(kind):
    """A random finite F16 of the given kind, as an int."""
    if kind == "zero":
        return 0x0000
    if kind == "negzero":
        return 0x8000
    if kind == "inf":
        return 0x7c00 | (int(rng.integers(0, 2)) << 15)
    if kind == "nan":
        return 0x7c00 | int(rng.integers(1, 0x400)) | (int(rng.integers(0, 2)) << 15)
    if kind == "subnormal":
        return int(rng.integers(1, 0x400)) | (int(rng.integers(0, 2)) << 15)
    if kind == "negative":
        return 0x8000 | (int(rng.integers(1, 31)) << 10) | int(rng.integers(0, 0x400))
    # any finite: exponent 0..30
    return (int(rng.integers(0, 2)) << 15 | int(rng.integers(0, 31)) << 10 |
            int(rng.integers(0, 0x400)))


def set_scales(name, blk, kind):
    """Give a raw block finite scales of a kind (none for MXFP4/NVFP4)."""
    for off in F16_SCALES.get(name, []):
        struct.pack_into("<H", blk, off, f16_bits(kind))
    if name == "Q8_K":
        v = {"zero": 0.0, "negzero": -0.0, "subnormal": 1e-40,
             "inf": float("inf"), "nan": float("nan"),
             "negative": -float(rng.uniform(1e-4, 1.0))}.get(
                 kind, float(rng.standard_normal() * 0.05))
        struct.pack_into("<f", blk, 0, v)
    if name == "IQ1_M":
        # The F16 scale is the top 4 bits of the four u16 scales (offset 48).
        h = f16_bits(kind)
        for i in range(4):
            (w,) = struct.unpack_from("<H", blk, 48 + 2 * i)
            w = (w & 0x0fff) | (((h >> (4 * i)) & 0xf) << 12)
            struct.pack_into("<H", blk, 48 + 2 * i, w)


def raw_blocks(name, kinds):
    _, _, size = TYPES[name]
    out = bytearray()
    for kind in kinds:
        blk = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        set_scales(name, blk, kind)
        out += blk
    return out


def scale_byte_blocks(name):
    """MXFP4: one block per E8M0 byte; NVFP4: each UE4M3 byte in a sub-block."""
    _, _, size = TYPES[name]
    out = bytearray()
    if name == "MXFP4":
        for e in range(256):
            blk = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
            blk[0] = e
            out += blk
    else:
        for first in range(0, 256, 4):
            blk = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
            blk[0:4] = bytes(range(first, first + 4))
            out += blk
    return out


def blocks_for(name):
    _, blk, _ = TYPES[name]
    small = blk == 32
    kinds = ["any"] * (8 if small else 3) + ["zero", "negative", "subnormal", "negzero",
                                           "inf", "nan"]
    raw = bytearray()
    if name not in NO_QUANTIZER:
        raw += ggml_quantize(name, 4 if small else 2)
    if name in ("MXFP4", "NVFP4"):
        raw += scale_byte_blocks(name)
    else:
        raw += raw_blocks(name, kinds)
    return raw


def numpy_q8_1(raw):
    b = np.frombuffer(bytes(raw), dtype=np.uint8).reshape(-1, 36)
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)
    q = b[:, 4:].copy().view(np.int8).astype(np.float32)
    return (d * q).reshape(-1).astype("<f4")


def numpy_q8_k(raw):
    b = np.frombuffer(bytes(raw), dtype=np.uint8).reshape(-1, 292)
    d = b[:, 0:4].copy().view("<f4")
    q = b[:, 4:260].copy().view(np.int8).astype(np.float32)
    return (d * q).reshape(-1).astype("<f4")


def same_bits(a, b):
    a = np.asarray(a, dtype="<f4")
    b = np.asarray(b, dtype="<f4")
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all((a.view("<u4") == b.view("<u4")) | both_nan)), int(
        np.sum((a.view("<u4") != b.view("<u4")) & ~both_nan))


def gguf_py_check(name, raw, n, want):
    try:
        sys.path.insert(0, GGUF_PY)
        from gguf import quants
        from gguf.constants import GGMLQuantizationType
    except ImportError as e:  # gguf-py absent: ggml's own output stands
        return "gguf-py not found (%s)" % e
    qt = getattr(GGMLQuantizationType, name, None)
    if qt is None:
        return "gguf-py lacks the type"
    try:
        arr = np.frombuffer(bytes(raw), dtype=np.uint8)
        with np.errstate(all="ignore"):
            got = quants.dequantize(arr, qt).reshape(-1)
    except Exception as e:  # noqa: BLE001 - report whatever gguf-py does
        return "gguf-py fails: %s: %s" % (type(e).__name__, str(e)[:80])
    if got.size != n:
        return "gguf-py gives %d values for %d" % (got.size, n)
    ok, bad = same_bits(got.astype(np.float32), want)
    return "gguf-py agrees" if ok else "gguf-py differs in %d of %d values" % (bad, n)


def main():
    for name, (t, blk, size) in TYPES.items():
        tr = ggml.ggml_get_type_traits(t).contents
        assert tr.blck_size == blk and tr.type_size == size, (name, tr.blck_size, tr.type_size)
        raw = blocks_for(name)
        n = len(raw) // size * blk
        want = ggml_to_float(t, raw, n)
        source = "ggml to_float"
        if want is None:
            want = {"Q8_1": numpy_q8_1, "Q8_K": numpy_q8_k}[name](raw)
            source = "numpy"
        assert want is not None, name
        note = gguf_py_check(name, raw, n, want)
        with open(os.path.join(HERE, name.lower() + ".bin"), "wb") as f:
            f.write(raw)
        with open(os.path.join(HERE, name.lower() + ".f32"), "wb") as f:
            f.write(want.astype("<f4").tobytes())
        nan = int(np.isnan(want).sum())
        print("%-8s %3d blocks %6d values  expected: %-13s nan: %-4d %s" %
              (name, len(raw) // size, n, source, nan, note))


if __name__ == "__main__":
    main()
