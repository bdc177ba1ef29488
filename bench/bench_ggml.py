#!/usr/bin/env python3
"""bench_ggml.py - decode throughput of every quantized ggml type: libst's
st_ggml_to_f32 (build/lib/libst.so) against ggml's own to_float
(node-llama-cpp 3.21.1's libggml-base.so), both called once per run through
ctypes on the same buffer of whole blocks, so the call overhead is nothing
next to the work. The blocks are ggml_quantize_chunk's output on random
floats (random bytes with a finite scale for Q8_1 and Q8_K, which ggml
cannot quantize). Both outputs are also checked to be bit-identical.

Usage: bench/bench_ggml.py LIBST LIBGGML_BASE [ELEMENTS] [RUNS]
Prints per type the best of RUNS wall times, as million elements per second,
and the ratio libst / ggml (above 1: libst faster).
"""
import ctypes
import sys
import time

import numpy as np

libst = ctypes.CDLL(sys.argv[1])
ggml = ctypes.CDLL(sys.argv[2])
N = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 22
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 7

TYPES = [("Q4_0", 2), ("Q4_1", 3), ("Q5_0", 6), ("Q5_1", 7), ("Q8_0", 8),
         ("Q8_1", 9), ("Q2_K", 10), ("Q3_K", 11), ("Q4_K", 12), ("Q5_K", 13),
         ("Q6_K", 14), ("Q8_K", 15), ("IQ2_XXS", 16), ("IQ2_XS", 17),
         ("IQ3_XXS", 18), ("IQ1_S", 19), ("IQ4_NL", 20), ("IQ3_S", 21),
         ("IQ2_S", 22), ("IQ4_XS", 23), ("IQ1_M", 29), ("TQ1_0", 34),
         ("TQ2_0", 35), ("MXFP4", 39), ("NVFP4", 40), ("Q1_0", 41),
         ("Q2_0", 42)]
IMATRIX = {"IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M", "IQ2_S"}


class Traits(ctypes.Structure):
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64),
                ("type_size", ctypes.c_size_t), ("is_quantized", ctypes.c_bool),
                ("to_float", ctypes.c_void_p), ("from_float_ref", ctypes.c_void_p)]


ggml.ggml_get_type_traits.restype = ctypes.POINTER(Traits)
ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                     ctypes.c_void_p]
libst.st_ggml_to_f32.restype = ctypes.c_int
libst.st_ggml_to_f32.argtypes = [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_uint64]
TO_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
rng = np.random.default_rng(1)


def blocks(name, t, tr):
    size = N // tr.blck_size * tr.type_size
    if name in ("Q8_1", "Q8_K"):
        raw = rng.integers(0, 256, size, dtype=np.uint8)
        b = raw.reshape(-1, tr.type_size)
        if name == "Q8_1":
            b[:, 0:2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
        else:
            b[:, 0:4] = np.frombuffer(np.float32(0.01).tobytes(), np.uint8)
        return raw
    rows = N // 4096
    x = rng.standard_normal(N).astype(np.float32)
    w = np.ones(4096, np.float32) if name in IMATRIX else None
    out = np.zeros(size, np.uint8)
    got = ggml.ggml_quantize_chunk(t, x.ctypes.data, out.ctypes.data, 0, rows, 4096,
                                   w.ctypes.data if w is not None else None)
    assert got == size, (name, got, size)
    return out


def best(fn):
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


print("%-8s %12s %12s %8s" % ("type", "libst Me/s", "ggml Me/s", "ratio"))
for name, t in TYPES:
    tr = ggml.ggml_get_type_traits(t).contents
    src = blocks(name, t, tr)
    a = np.empty(N, np.float32)
    b = np.empty(N, np.float32)
    ta = best(lambda: libst.st_ggml_to_f32(t, src.ctypes.data, a.ctypes.data, N))
    if tr.to_float:
        f = TO_FLOAT(tr.to_float)
        tb = best(lambda: f(src.ctypes.data, b.ctypes.data, N))
        assert (a.view(np.uint32) == b.view(np.uint32)).all(), name
        print("%-8s %12.0f %12.0f %8.2f" % (name, N / ta / 1e6, N / tb / 1e6, tb / ta))
    else:
        print("%-8s %12.0f %12s %8s" % (name, N / ta / 1e6, "-", "-"))
