#!/usr/bin/env python3
"""Make the PyTorch-checkpoint fixtures with torch.save (Debian's
python3-torch), and, for each readable one, the expected tensors as a
safetensors file built byte by byte here from numpy (not by libst):
  state.bin / state.expected.safetensors   every dtype, a scalar, an empty
      tensor, two names sharing one storage, a slice at a storage offset,
      an nn.Parameter
  nested.bin / nested.expected.safetensors  {"model": {...}, "epoch": 3}:
      every tensor is under "model", which is read; nested dicts below it
      flatten to "b.c", non-tensors are left out
  snapshot/pytorch_model.bin                a directory holding only a .bin
  sharded/pytorch_model-0000{1,2}-of-00002.bin + pytorch_model.bin.index.json
      state.bin's tensors split in two shards with an index, as
      transformers saved large models before safetensors
  evil.bin        a pickle that would call os.system: must be refused
  legacy.bin      the pre-1.6 non-zip format
  noncontig.bin   a transposed (non-contiguous) view
  truncated.bin   state.bin cut short: no zip directory
  state_zip64.bin state.bin's entries re-zipped by Python's zipfile with
      its zip64 limits forced to 0: zip64 end records and zip64 extra
      fields everywhere, as torch.save writes for files over 4 GiB
Run:  /usr/bin/python3 testdata/torch/gen_torch.py
"""
import collections
import json
import os
import struct

import numpy as np
import torch

from stfixture import write_expected

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)

def p(name):
    return os.path.join(HERE, name)


big = torch.arange(10, dtype=torch.float32)
shared = torch.randn(3, 4)
sd = collections.OrderedDict()
sd["f32"] = torch.randn(2, 3)
sd["f16"] = torch.randn(5).half()
sd["bf16"] = torch.randn(2, 2).bfloat16()
sd["f64"] = torch.randn(3, dtype=torch.float64)
sd["i64"] = torch.tensor([1, -2, 3 << 40])
sd["i32"] = torch.tensor([7, -7], dtype=torch.int32)
sd["i16"] = torch.tensor([300, -300], dtype=torch.int16)
sd["i8"] = torch.tensor([-5, 5], dtype=torch.int8)
sd["u8"] = torch.tensor([0, 255], dtype=torch.uint8)
sd["bool"] = torch.tensor([True, False, True])
sd["scalar"] = torch.tensor(2.5)
sd["empty"] = torch.zeros(0, 4)
sd["wte.weight"] = shared
sd["lm_head.weight"] = shared          # the same storage twice (tied)
sd["slice"] = big[4:7]                  # a view at storage offset 4
sd["param"] = torch.nn.Parameter(torch.randn(4))
torch.save(sd, p("state.bin"))
write_expected(p("state.expected.safetensors"), {k: v for k, v in sd.items()})

nested = {"model": {"a": torch.ones(2), "b": {"c": torch.zeros(1, dtype=torch.int64)}},
          "epoch": 3, "name": "run-1"}
torch.save(nested, p("nested.bin"))
write_expected(p("nested.expected.safetensors"),
               {"a": nested["model"]["a"], "b.c": nested["model"]["b"]["c"]})

os.makedirs(p("snapshot"), exist_ok=True)
torch.save({"w": torch.ones(3)}, p("snapshot/pytorch_model.bin"))
with open(p("snapshot/config.json"), "w") as f:
    f.write("{}\n")

# Sharded, with the index transformers writes (sorted keys, indent 2).
os.makedirs(p("sharded"), exist_ok=True)
names = list(sd)
halves = [names[: len(names) // 2], names[len(names) // 2:]]
weight_map = {}
for i, half in enumerate(halves):
    shard = "pytorch_model-%05d-of-%05d.bin" % (i + 1, len(halves))
    torch.save(collections.OrderedDict((k, sd[k]) for k in half), p("sharded/" + shard))
    weight_map.update({k: shard for k in half})
total = sum(v.numel() * v.element_size() for v in sd.values())
with open(p("sharded/pytorch_model.bin.index.json"), "w") as f:
    f.write(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map},
                       indent=2, sort_keys=True) + "\n")


class Evil:
    def __reduce__(self):
        return (os.system, ("echo this must never run",))


torch.save({"x": torch.ones(1), "y": Evil()}, p("evil.bin"))
torch.save({"w": torch.ones(2)}, p("legacy.bin"), _use_new_zipfile_serialization=False)
torch.save({"t": torch.randn(3, 2).t()}, p("noncontig.bin"))
with open(p("state.bin"), "rb") as f:
    blob = f.read()
with open(p("truncated.bin"), "wb") as f:
    f.write(blob[: len(blob) - 200])

# zip64: Python's zipfile writes zip64 records once a limit is passed; with
# the limits at 0 every entry and the end of the archive use them.
import zipfile
zipfile.ZIP64_LIMIT = 0
zipfile.ZIP_FILECOUNT_LIMIT = 0
with zipfile.ZipFile(p("state.bin")) as src, \
        zipfile.ZipFile(p("state_zip64.bin"), "w", zipfile.ZIP_STORED) as dst:
    for info in src.infolist():
        with dst.open(info.filename, "w", force_zip64=True) as out:
            out.write(src.read(info.filename))
print("ok")
