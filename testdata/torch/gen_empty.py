#!/usr/bin/env python3
"""Empty views at any storage offset, which torch accepts: its bounds check
(checkInBoundsForStorage) passes every tensor of no elements, so
as_strided may place one far past its storage's end.

  empty.zip.bin / empty.legacy.bin    {"far": an empty [0, 3] view at
      offset 1000 of a 10-element storage, "end": x[10:] (offset 10, the
      storage's end), "x": the storage's 10 values}, torch.save in the
      zip and the pre-1.6 formats
  empty.expected.safetensors          what torch.load gives for both,
      written by stfixture.write_expected (not by libst)

Run:  /usr/bin/python3 testdata/torch/gen_empty.py
"""
import collections
import os

import torch

import stfixture

here = os.path.dirname(os.path.abspath(__file__))
x = torch.arange(10, dtype=torch.float32)
sd = collections.OrderedDict([("far", x.as_strided((0, 3), (3, 1), 1000)),
                              ("end", x[10:]), ("x", x)])
torch.save(sd, os.path.join(here, "empty.zip.bin"))
torch.save(sd, os.path.join(here, "empty.legacy.bin"), _use_new_zipfile_serialization=False)
for name in ("empty.zip.bin", "empty.legacy.bin"):
    back = torch.load(os.path.join(here, name))
    assert list(back) == ["far", "end", "x"], name
    assert back["far"].shape == (0, 3) and back["far"].storage_offset() == 1000, name
    assert back["end"].numel() == 0 and torch.equal(back["x"], x), name
stfixture.write_expected(os.path.join(here, "empty.expected.safetensors"),
                         {k: v for k, v in torch.load(os.path.join(here, "empty.zip.bin")).items()})
