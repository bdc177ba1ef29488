#!/usr/bin/env python3
"""Make zip checkpoints with each byteorder record torch.save (2.0 and
later) may write, numpy's byteswap giving the big-endian bytes, and the
expected tensors from the state dict itself (stfixture.py):

  byteorder.little.bin  a byteorder record "little" (what torch 2.x writes
      on every little-endian machine; 1.13 writes none)
  byteorder.big.bin     a record "big", every storage's elements in big-
      endian order: numpy arrays of the storage's dtype, byteswap()ed
      (BF16 as 16-bit integers, numpy having no bfloat16)
  byteorder.expected.safetensors  the state dict's tensors, contiguous
  bad/byteorder_middle.bin, bad/byteorder_empty.bin  a record saying
      "middle", or nothing: refused
It also checks views.zipbig.bin (gen_formats.py, which reverses each
element's bytes by slicing) against numpy's byteswap of views.zip.bin.
Big-endian legacy files need no such work: a legacy file records the
machine's byte order in its system info, but torch wrote its storages
little-endian on every machine (views.legacybig.bin).
Run:  /usr/bin/python3 testdata/torch/gen_byteorder.py
"""
import collections
import os
import zipfile

import numpy as np
import torch

from stfixture import write_expected, zip_storage_dtypes

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(7)


def p(*names):
    return os.path.join(HERE, *names)


sd = collections.OrderedDict()
for name, dt in [("f64", torch.float64), ("f32", torch.float32),
                 ("f16", torch.float16), ("bf16", torch.bfloat16),
                 ("i64", torch.int64), ("i32", torch.int32),
                 ("i16", torch.int16), ("i8", torch.int8), ("u8", torch.uint8)]:
    sd[name] = (torch.randn(2, 3) * 100).to(dt)
sd["bool"] = torch.tensor([True, False, True])
sd["f32.t"] = sd["f32"].t()                     # a view of a swapped storage
sd["scalar"] = torch.tensor(-3.5, dtype=torch.float64)
sd["sliced"] = torch.arange(10, dtype=torch.int32)[3:7]

# numpy dtype of each torch dtype's elements, little-endian
NP = {torch.float64: "<f8", torch.float32: "<f4", torch.float16: "<f2",
      torch.bfloat16: "<u2", torch.int64: "<i8", torch.int32: "<i4",
      torch.int16: "<i2", torch.int8: "i1", torch.uint8: "u1", torch.bool: "u1"}


def swapped(data, dtype):
    return np.frombuffer(data, dtype=NP[dtype]).byteswap().tobytes()


def rewrite(src, dst, record, swap):
    """src's members into dst with a byteorder record; storages swapped."""
    with zipfile.ZipFile(src) as zs:
        top, dtypes = zip_storage_dtypes(zs)
        with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zd:
            for info in zs.infolist():
                data = zs.read(info.filename)
                rel = info.filename[len(top) + 1:]
                if swap and rel.startswith("data/"):
                    data = swapped(data, dtypes[rel[5:]])
                zd.writestr(zipfile.ZipInfo(info.filename), data)
            if record is not None:
                zd.writestr(zipfile.ZipInfo(top + "/byteorder"), record)


tmp = p("byteorder.tmp.bin")
torch.save(sd, tmp)
rewrite(tmp, p("byteorder.little.bin"), b"little", False)
rewrite(tmp, p("byteorder.big.bin"), b"big", True)
os.makedirs(p("bad"), exist_ok=True)
rewrite(tmp, p("bad", "byteorder_middle.bin"), b"middle", False)
rewrite(tmp, p("bad", "byteorder_empty.bin"), b"", False)
os.remove(tmp)
write_expected(p("byteorder.expected.safetensors"), dict(sd))

# The big-endian file holds what a big-endian machine would: each value
# read back as big-endian numbers is the tensor's value.
with zipfile.ZipFile(p("byteorder.big.bin")) as z:
    top, dtypes = zip_storage_dtypes(z)
    assert z.read(top + "/byteorder") == b"big"
    for key, dt in dtypes.items():
        be = np.frombuffer(z.read(top + "/data/" + key), dtype=NP[dt].replace("<", ">"))
        assert (be == np.frombuffer(swapped(z.read(top + "/data/" + key), dt),
                                    dtype=NP[dt])).all()
f32_key = [k for k, d in dtypes.items() if d == torch.float32][0]
with zipfile.ZipFile(p("byteorder.big.bin")) as z:
    got = np.frombuffer(z.read(top + "/data/" + f32_key), dtype=">f4")
assert (got == sd["f32"].numpy().reshape(-1)).all()

# views.zipbig.bin: its storages are numpy's byteswap of views.zip.bin's.
with zipfile.ZipFile(p("views.zip.bin")) as a, zipfile.ZipFile(p("views.zipbig.bin")) as b:
    top, dtypes = zip_storage_dtypes(a)
    for key, dt in dtypes.items():
        name = top + "/data/" + key
        assert swapped(a.read(name), dt) == b.read(name), key
print("ok")
