#!/usr/bin/env python3
"""bench_ggml_quant.py - encode throughput of the quantizers libst shares
with ggml: libst's st_ggml_from_f32 (build/lib/libst.so) against ggml's own
ggml_quantize_chunk without an importance matrix (quantize_row_<type>_ref,
node-llama-cpp 3.21.1's libggml-base.so), both called once per run through
ctypes on the same random floats (rows of 4096), so the call overhead is
nothing next to the work. Both outputs are also checked to be identical.

Usage: bench/bench_ggml_quant.py LIBST LIBGGML_BASE [ELEMENTS] [RUNS]
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
TYPES = [("Q4_0", 2, 18), ("Q4_1", 3, 20), ("Q5_0", 6, 22), ("Q5_1", 7, 24),
         ("Q8_0", 8, 34)]

ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
ggml.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                     ctypes.c_void_p]
libst.st_ggml_from_f32.restype = ctypes.c_int
libst.st_ggml_from_f32.argtypes = [ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_uint64]
rng = np.random.default_rng(1)
x = rng.standard_normal(N).astype(np.float32)


def best(fn):
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


print("%-8s %12s %12s %8s" % ("type", "libst Me/s", "ggml Me/s", "ratio"))
for name, t, size in TYPES:
    a = np.zeros(N // 32 * size, np.uint8)
    b = np.zeros(N // 32 * size, np.uint8)
    ta = best(lambda: libst.st_ggml_from_f32(t, x.ctypes.data, a.ctypes.data, N))
    tb = best(lambda: ggml.ggml_quantize_chunk(t, x.ctypes.data, b.ctypes.data, 0,
                                               N // 4096, 4096, None))
    assert (a == b).all(), name
    print("%-8s %12.0f %12.0f %8.2f" % (name, N / ta / 1e6, N / tb / 1e6, tb / ta))
