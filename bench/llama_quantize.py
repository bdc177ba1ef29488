#!/usr/bin/python3
"""llama_quantize.py - quantize a GGUF file with llama.cpp's own quantizer
(libllama's llama_model_quantize through ctypes), for bench_gguf_stats.sh.

Usage: llama_quantize.py LIBLLAMA_SO IN.gguf OUT.gguf [FTYPE [THREADS]]
       (FTYPE a llama_ftype number, default 15: LLAMA_FTYPE_MOSTLY_Q4_K_M;
        THREADS default 0: llama.cpp's choice)

Only the first two fields of llama_model_quantize_params (int32 nthread,
enum llama_ftype ftype; llama.h) are set: the rest keep
llama_model_quantize_default_params's values, so the struct's tail may
differ between llama.cpp releases without harm (it is handled as opaque
bytes, more than the real struct's size).
"""
import ctypes
import sys


class Params(ctypes.Structure):
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int32),
                ("rest", ctypes.c_uint8 * 512)]


def main():
    lib = ctypes.CDLL(sys.argv[1])
    src, dst = sys.argv[2].encode(), sys.argv[3].encode()
    ftype = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    lib.llama_backend_init()
    lib.llama_model_quantize_default_params.restype = Params
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.POINTER(Params)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    p = lib.llama_model_quantize_default_params()
    p.nthread, p.ftype = threads, ftype
    rc = lib.llama_model_quantize(src, dst, ctypes.byref(p))
    if rc:
        print("llama_quantize: llama_model_quantize failed (%d)" % rc, file=sys.stderr)
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
