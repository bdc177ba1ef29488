#!/usr/bin/python3
"""gguf_py_dequant.py - decode every tensor of a GGUF file to F32 with
llama.cpp's gguf-py (GGUFReader + quants.dequantize), the baseline of
bench_gguf_stream.sh's stconvert GGUF -> safetensors. Writes nothing;
prints the tensors, elements and seconds spent decoding.

Usage: PYTHONPATH=/work/ref/llama.cpp/gguf-py gguf_py_dequant.py IN.gguf
"""
import sys
import time

from gguf import GGUFReader
from gguf.quants import dequantize


def main():
    r = GGUFReader(sys.argv[1])
    t0 = time.perf_counter()
    n = 0
    for t in r.tensors:
        v = dequantize(t.data, t.tensor_type)
        n += v.size
    print(f"{len(r.tensors)} tensors, {n} elements, {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
