#!/usr/bin/env python3
"""Make the ggml quantizer fixtures of testdata/ggml_quant/ (tests/check_ggml_quant.c).

  src.f32       float32 rows, whole blocks of 32 (the cases below, in order)
  <type>.bin    the bytes ggml's own quantizer makes of src.f32
  <type>.f32    ggml's own to_float of those bytes (the round trip)
  cases.tsv     each case's first block and block count, and per type
                whether gguf-py's quants.quantize gives ggml's bytes
for Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0.

The quantizer is ggml_quantize_chunk(type, src, dst, 0, 1, n, NULL) on
node-llama-cpp 3.21.1's libggml-base.so (ggml v0.4.0), called with ctypes.
Without an importance matrix ggml_quantize_chunk calls quantize_q4_0 ...
quantize_q8_0, which call quantize_row_<type>_ref on the whole row
(ggml.c, ggml-quants.c): these bytes are ggml's reference quantizers'.

The last cases hold Inf and NaN. C leaves (int8_t)NaN and (int8_t)Inf
undefined; the x86-64 build converts through a 32-bit cvttss2si, whose
0x80000000 has low byte 0, so every such q is 0 (as if x * id + 8.5 were
0). libst does the same on every machine; the fixture records what the
x86 library gives. gguf-py differs from ggml on NaN (argmax/max/min see
NaN, ggml's comparisons skip it), on blocks of +Inf only (Q4_1/Q5_1: ggml's
min stays FLT_MAX) and on signed zeros (ggml's d is -0 / 0 where gguf-py
takes the first element's sign): cases.tsv says where.

Run: python3 testdata/ggml_quant/make_fixtures.py [LIBGGML_BASE] [GGUF_PY_DIR]
Deterministic (fixed seed): rerunning rewrites identical files.
"""
import ctypes
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GGUF_PY = sys.argv[2] if len(sys.argv) > 2 else "/work/ref/llama.cpp/gguf-py"

# name: (ggml type number, bytes per block of 32)
TYPES = {"Q4_0": (2, 18), "Q4_1": (3, 20), "Q5_0": (6, 22), "Q5_1": (7, 24),
         "Q8_0": (8, 34)}


# The ctypes bindings of ggml (the library, ggml_quantize_chunk, to_float)
# are testdata/ggml/make_fixtures.py's, which loads LIB from the same argv.
sys.path.insert(0, os.path.join(HERE, "..", "ggml"))
from make_fixtures import ggml, ggml_to_float  # noqa: E402

rng = np.random.default_rng(20261202)
F32 = np.float32


def normal(nblocks, scale=1.0):
    return (rng.standard_normal(32 * nblocks) * scale).astype(F32)


def blocks_with(nblocks, fn):
    """nblocks normal blocks, each changed by fn(block, index)."""
    x = normal(nblocks).reshape(nblocks, 32)
    for b in range(nblocks):
        fn(x[b], b)
    return x.reshape(-1)


def outliers(blk, b):
    blk[rng.integers(0, 32, 2)] *= 20.0


def negative_max(blk, b):
    blk[b % 32] = -np.abs(blk).max() * F32(1.5)


def positive_max(blk, b):
    blk[(7 * b) % 32] = np.abs(blk).max() * F32(1.5)


def tie(blk, b):
    # +a and -a both at the largest magnitude: the first one sets the sign.
    i, j = rng.choice(32, 2, replace=False)
    a = np.abs(blk).max() * F32(1.25)
    blk[i], blk[j] = (a, -a) if b % 2 else (-a, a)


def equal(blk, b):
    blk[:] = F32([0.7, -0.7, 3.0, -1e-3, 65504.0, 1e5, 0.1, -0.1][b % 8])


def signed_zeros(blk, b):
    blk[:] = 0.0
    if b % 4 == 1:
        blk[:] = -0.0
    elif b % 4 == 2:
        blk[::2] = -0.0
    elif b % 4 == 3:
        blk[0] = -0.0


def few_nonzero(blk, b):
    blk[:] = 0.0
    blk[rng.integers(0, 32, 1 + b % 3)] = rng.standard_normal(1 + b % 3)


def huge(blk, b):
    # Q4_1/Q5_1's max - min overflows to Inf; F16 d and m overflow.
    blk *= F32(1e37)
    blk[0], blk[1] = F32(3e38), F32(-3e38)


def rounding_edges(blk, b):
    # Values on the k + 0.5 steps of q, where truncating x * id + 8.5
    # and rounding would differ.
    d = F32(2.0 ** -(b % 5))
    k = rng.integers(-8, 8, 32).astype(F32)
    blk[:] = (k + F32(0.5)) * d
    blk[0] = F32(-8.0) * d


def with_inf(blk, b):
    blk[(3 * b) % 32] = [np.inf, -np.inf][b % 2]
    if b % 3 == 2:
        blk[(5 * b + 1) % 32] = -blk[(3 * b) % 32]
    if b % 4 == 3:
        blk[:] = [np.inf, -np.inf][b % 2]


def with_nan(blk, b):
    blk[(3 * b) % 32] = np.nan
    if b % 3 == 2:
        blk[(5 * b + 1) % 32] = np.inf
    if b % 4 == 3:
        blk[:] = np.nan


CASES = [
    ("normal", normal(64, 0.05)),
    ("normal_wide", normal(32, 3.0)),
    ("outliers", blocks_with(16, outliers)),
    ("all_zero", np.zeros(32 * 2, F32)),
    ("signed_zeros", blocks_with(4, signed_zeros)),
    ("few_nonzero", blocks_with(6, few_nonzero)),
    ("equal_values", blocks_with(8, equal)),
    ("negative_max", blocks_with(8, negative_max)),
    ("positive_max", blocks_with(8, positive_max)),
    ("sign_tie", blocks_with(8, tie)),
    ("rounding_edges", blocks_with(10, rounding_edges)),
    ("f16_subnormal_d", normal(8, 1e-6)),
    ("f32_subnormal", normal(4, 1e-40)),
    ("tiny_and_normal", np.concatenate([normal(2, 1e-39), normal(2, 1e-30)])),
    ("huge", blocks_with(4, huge)),
    ("inf", blocks_with(8, with_inf)),
    ("nan", blocks_with(8, with_nan)),
]


def ggml_quantize(t, size, x):
    n = x.size
    dst = ctypes.create_string_buffer(size * (n // 32))
    got = ggml.ggml_quantize_chunk(t, x.ctypes.data_as(ctypes.c_void_p), dst, 0, 1, n, None)
    assert got == size * (n // 32), (t, got)
    return dst.raw


def gguf_py_quantize(name, x):
    sys.path.insert(0, GGUF_PY)
    from gguf import quants
    from gguf.constants import GGMLQuantizationType
    with np.errstate(all="ignore"):
        return quants.quantize(x.reshape(-1, 32), getattr(GGMLQuantizationType, name)).tobytes()


def main():
    src = np.concatenate([c for _, c in CASES]).astype("<f4")
    with open(os.path.join(HERE, "src.f32"), "wb") as f:
        f.write(src.tobytes())
    rows = []
    first = 0
    for cname, c in CASES:
        rows.append([cname, first, c.size // 32])
        first += c.size // 32
    for name, (t, size) in TYPES.items():
        tr = ggml.ggml_get_type_traits(t).contents
        assert tr.blck_size == 32 and tr.type_size == size, name
        raw = ggml_quantize(t, size, src)
        deq = ggml_to_float(t, raw, src.size)
        with open(os.path.join(HERE, name.lower() + ".bin"), "wb") as f:
            f.write(raw)
        with open(os.path.join(HERE, name.lower() + ".f32"), "wb") as f:
            f.write(deq.astype("<f4").tobytes())
        try:
            py = gguf_py_quantize(name, src)
        except ImportError as e:  # gguf-py absent: ggml's bytes stand
            py = None
            print("gguf-py not found (%s)" % e)
        for row in rows:
            b0, nb = row[1], row[2]
            if py is None:
                row.append("?")
                continue
            bad = sum(raw[(b0 + k) * size:(b0 + k + 1) * size] !=
                      py[(b0 + k) * size:(b0 + k + 1) * size] for k in range(nb))
            row.append("same" if bad == 0 else "%d differ" % bad)
    with open(os.path.join(HERE, "cases.tsv"), "w") as f:
        f.write("# case\tfirst block\tblocks\tgguf-py quants.quantize against ggml, blocks: " +
                "\t".join(TYPES) + "\n")
        for row in rows:
            f.write("\t".join(str(v) for v in row) + "\n")
    print(open(os.path.join(HERE, "cases.tsv")).read(), end="")


if __name__ == "__main__":
    main()
