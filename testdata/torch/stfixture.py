"""Shared by the fixture scripts of testdata/torch: a safetensors file
written byte by byte from PyTorch tensors (not by libst)."""
import json
import struct

import torch

NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
         torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
         torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}


def raw(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_expected(path, tensors):
    """A safetensors file of the given name -> tensor dict, by hand."""
    hdr, data, off = {}, b"", 0
    for name in sorted(tensors):
        t = tensors[name]
        blob = raw(t)
        hdr[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                     "data_offsets": [off, off + len(blob)]}
        data += blob
        off += len(blob)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
