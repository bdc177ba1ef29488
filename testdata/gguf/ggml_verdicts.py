#!/usr/bin/env python3
"""Record what llama.cpp's loader says of every GGUF fixture here: GGML.tsv.

For each testdata/gguf/*.gguf this calls ggml's own gguf_init_from_file
(with ctypes, on node-llama-cpp 3.21.1's libggml-base.so) the way
llama.cpp's model loader does (no_alloc true, a metadata context), and
then the loader's one check of its own (llama-model-loader.h): every
tensor's data, at gguf_get_data_offset + gguf_get_tensor_offset and
gguf_get_tensor_size bytes long, lies inside the file ("data is not within
the file bounds"). A file passing both is "accept", else "refuse", with
the first line ggml logged (or the bounds message) as the reason.

tests/check_gguf.c (test_ggml_agrees) holds libst to these verdicts:
ggml refuses -> libst's check reports an error or warns "llama.cpp will
refuse this"; ggml accepts -> no error and no such warning.

Run: python3 testdata/gguf/ggml_verdicts.py [LIBGGML_BASE]
(after gen_fixtures.py; deterministic).
"""
import ctypes
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = (sys.argv[1] if len(sys.argv) > 1 else
       "/work/ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/"
       "libggml-base.so")

ggml = ctypes.CDLL(LIB)


class InitParams(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool),
                ("ctx", ctypes.POINTER(ctypes.c_void_p))]


ggml.gguf_init_from_file.restype = ctypes.c_void_p
ggml.gguf_init_from_file.argtypes = [ctypes.c_char_p, InitParams]
ggml.gguf_free.argtypes = [ctypes.c_void_p]
ggml.ggml_free.argtypes = [ctypes.c_void_p]
ggml.gguf_get_n_tensors.restype = ctypes.c_int64
ggml.gguf_get_n_tensors.argtypes = [ctypes.c_void_p]
ggml.gguf_get_data_offset.restype = ctypes.c_size_t
ggml.gguf_get_data_offset.argtypes = [ctypes.c_void_p]
ggml.gguf_get_tensor_offset.restype = ctypes.c_size_t
ggml.gguf_get_tensor_offset.argtypes = [ctypes.c_void_p, ctypes.c_int64]
ggml.gguf_get_tensor_size.restype = ctypes.c_size_t
ggml.gguf_get_tensor_size.argtypes = [ctypes.c_void_p, ctypes.c_int64]

LOG = []
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_void_p)


@LOG_FN
def log(level, text, user):
    LOG.append(text.decode("utf-8", "replace"))


ggml.ggml_log_set.argtypes = [LOG_FN, ctypes.c_void_p]
ggml.ggml_log_set(log, None)


def verdict(path):
    LOG.clear()
    meta = ctypes.c_void_p()
    ctx = ggml.gguf_init_from_file(path.encode(),
                                   InitParams(True, ctypes.pointer(meta)))
    if not ctx:
        lines = "".join(LOG).splitlines()
        return "refuse", lines[0] if lines else "(nothing logged)"
    size = os.path.getsize(path)
    base = ggml.gguf_get_data_offset(ctx)
    reason = ""
    for i in range(ggml.gguf_get_n_tensors(ctx)):
        end = (base + ggml.gguf_get_tensor_offset(ctx, i) +
               ggml.gguf_get_tensor_size(ctx, i))
        if end > size:
            reason = (f"tensor {i} data is not within the file bounds "
                      "(llama-model-loader)")
            break
    ggml.gguf_free(ctx)
    if meta:
        ggml.ggml_free(meta)
    return ("refuse", reason) if reason else ("accept", "")


rows = []
for path in sorted(glob.glob(os.path.join(HERE, "*.gguf"))):
    v, why = verdict(path)
    rows.append((os.path.basename(path), v, why.strip().replace("\t", " ")))
with open(os.path.join(HERE, "GGML.tsv"), "w") as f:
    f.write("# file\tggml\twhat ggml logged (made by ggml_verdicts.py with "
            "gguf_init_from_file of libggml-base.so)\n")
    for name, v, why in rows:
        f.write(f"{name}\t{v}\t{why}\n")
print(f"{len(rows)} files: {sum(v == 'accept' for _, v, _ in rows)} accepted")
