#!/usr/bin/python3
"""Expected output of stinfo --dump (tests/cli/stinfo_dump.sh), made without libst.

For each case below this writes, in this directory,
  CASE.npy  the tensor as numpy's own np.save writes it (format 1.0): the
            dtype kept where numpy has it, float32 otherwise; the test
            compares stinfo --dump NAME --output's file with it byte for byte
  CASE.txt  the values as stinfo prints them: a row of the last dimension
            a line, floats '%.9g' (F64 '%.17g'), NaN as 'nan', integers
            exact, BOOL 0/1, C64 '(re, im)'
The values are decoded here: safetensors files parsed by hand (8-byte
length, JSON header, little-endian data; BF16 as the upper half of an F32;
the F8 and F4 codes by testdata/dtype/gen_f8.py's OCP formulas), GGUF
tensors by gguf-py (its GGUFReader, and gguf.quants.dequantize for the
block types), a PyTorch checkpoint's by torch.load.

With --check BIN (the build's bin directory) it also runs BIN/stinfo
--dump --output for every case and checks that np.load gives the very
values (and dtype) decoded here.

Run: PYTHONPATH=/work/ref/llama.cpp/gguf-py /usr/bin/python3 testdata/npy/make_expected.py [--check BIN]
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(DATA, "dtype"))
import gen_f8  # noqa: E402

NP = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "C64": "<c8", "I64": "<i8", "I32": "<i4",
      "I16": "<i2", "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1",
      "BOOL": "?"}


def safetensors_tensor(path, name):
    """(dtype name, numpy array) of tensor name, decoded by hand."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    t = header[name]
    b, e = t["data_offsets"]
    data = raw[8 + n + b:8 + n + e]
    dt, shape = t["dtype"], tuple(t["shape"])
    if dt in NP:
        return dt, np.frombuffer(data, dtype=NP[dt]).reshape(shape)
    if dt == "BF16":
        bits = np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16
        return dt, bits.view(np.float32).reshape(shape)
    if dt == "F4":
        codes = []
        for byte in data:  # element 2i in the low nibble
            codes += [byte & 15, byte >> 4]
    else:
        codes = list(data)
    vals = [gen_f8.value(dt, c) for c in codes]
    vals = [np.nan if v is None else v for v in vals]
    return dt, np.array(vals, dtype=np.float32).reshape(shape)


def gguf_tensor(path, name):
    """(type name, numpy array in numpy's dimension order) of a GGUF tensor."""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    r = GGUFReader(path)
    t = next(x for x in r.tensors if x.name == name)
    shape = tuple(int(d) for d in reversed(t.shape))  # ggml's ne, fastest first
    kind = t.tensor_type.name
    raw = np.asarray(t.data)
    if kind in ("F32", "F16", "I8", "I16", "I32", "I64", "F64"):
        return kind, raw.reshape(shape)
    return kind, dequantize(raw, t.tensor_type).astype(np.float32).reshape(shape)


def torch_tensor(path, name):
    """(dtype name, numpy array) of a PyTorch checkpoint's tensor, by torch.load."""
    import torch
    # C order, as stinfo writes it (numpy would keep a transposed view Fortran)
    return "torch", np.ascontiguousarray(torch.load(path)[name].numpy())


def fmt(a):
    def one(v):
        if a.dtype == np.complex64:
            return "(%.9g, %.9g)" % (v.real, v.imag)
        if a.dtype.kind == "f":
            if np.isnan(v):
                return "nan"
            return ("%.17g" if a.dtype == np.float64 else "%.9g") % float(v)
        return "%d" % int(v)
    if a.size == 0:
        return ""
    rows = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
    return "".join(" ".join(one(v) for v in row) + "\n" for row in rows)


ST = os.path.join(DATA, "stinfo")
GG = os.path.join(DATA, "gguf", "ok_all_types.gguf")
CASES = [  # case, path, tensor, reader
    ("tiny-wte", os.path.join(ST, "tiny.safetensors"), "wte.weight", safetensors_tensor),
    ("tiny-bf16", os.path.join(ST, "tiny.safetensors"), "h.1.mlp.c_fc.weight",
     safetensors_tensor),
    ("tiny-step", os.path.join(ST, "tiny.safetensors"), "step", safetensors_tensor),
] + [("dtypes-" + n, os.path.join(ST, "dtypes.safetensors"), n, safetensors_tensor)
     for n in ("scalar", "c", "empty", "u16", "e8m0", "e4m3", "f4", "flag")] + [
    ("gguf-" + n, GG, n, gguf_tensor) for n in ("f32", "f16", "bf16", "q8", "q4k", "i32")] + [
    # a transposed view: its storage is not in the tensor's order
    ("torch-noncontig", os.path.join(DATA, "torch", "noncontig.bin"), "t", torch_tensor)]


def main():
    check = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--check" else None
    bad = 0
    for case, path, name, reader in CASES:
        _, a = reader(path, name)
        np.save(os.path.join(HERE, case + ".npy"), a)
        with open(os.path.join(HERE, case + ".txt"), "w") as f:
            f.write(fmt(a))
        if check:
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "x.npy")
                subprocess.run([os.path.join(check, "stinfo"), "--dump", name, "--output", out,
                                path], check=True)
                got = np.load(out)
                same = got.dtype == a.dtype and got.shape == a.shape and \
                    np.array_equal(got, a, equal_nan=True)
                print("%-14s %-8s %-12s %s" % (case, got.dtype, got.shape,
                                               "same" if same else "DIFFERS"))
                bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
