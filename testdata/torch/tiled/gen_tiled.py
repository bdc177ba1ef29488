#!/usr/bin/env python3
"""Make tiled.bin, views large enough that gathering them takes many
tiles and many reads, with edge sizes that are no multiple of a tile
(libst/torch.c gathers 64 / element-size rows by 64 columns at a time),
and tiled.expected.safetensors, what torch.load returns for each made
contiguous by torch (written byte by byte by ../stfixture.py, not by
libst). Each view is of a storage saved whole by torch.save:

  f32.t        F32 (97, 141) transposed: 141 x 97
  f32.slice.t  F32 (60, 150)[3:57, 5:140] transposed (an offset and a
               row stride that is not the width)
  f16.t        F16 (131, 227) transposed
  u8.t         U8 (150, 201) transposed
  f64.perm     F64 (3, 37, 70) permuted (0, 2, 1): 3 x 70 x 37
  i16.perm     I16 (2, 3, 45, 67) permuted (2, 0, 3, 1): the last two
               dimensions strided, the outer ones mixed

Run:  /usr/bin/python3 testdata/torch/tiled/gen_tiled.py
"""
import collections
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
from stfixture import write_expected  # noqa: E402

g = torch.Generator().manual_seed(12)
f32 = torch.randn(97, 141, generator=g)
f32b = torch.randn(60, 150, generator=g)
f16 = torch.randn(131, 227, generator=g).half()
u8 = torch.randint(0, 256, (150, 201), generator=g, dtype=torch.uint8)
f64 = torch.randn(3, 37, 70, generator=g, dtype=torch.float64)
i16 = torch.randint(-32768, 32768, (2, 3, 45, 67), generator=g,
                    dtype=torch.int16)
sd = collections.OrderedDict([
    ("f32.t", f32.t()),
    ("f32.slice.t", f32b[3:57, 5:140].t()),
    ("f16.t", f16.t()),
    ("u8.t", u8.t()),
    ("f64.perm", f64.permute(0, 2, 1)),
    ("i16.perm", i16.permute(2, 0, 3, 1)),
])
for t in sd.values():
    assert not t.is_contiguous()
torch.save(sd, os.path.join(here, "tiled.bin"))
back = torch.load(os.path.join(here, "tiled.bin"))
write_expected(os.path.join(here, "tiled.expected.safetensors"),
               {k: v.contiguous() for k, v in back.items()})
