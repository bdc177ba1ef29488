#!/usr/bin/env python3
"""Make the fixtures of what stinfo lists for a PyTorch checkpoint's
dictionary, and what it must say, worked out here from the dictionary
itself (not by libst):

  keys.{zip,legacy,tar}.bin   one training checkpoint in each format:
      every tensor under "model" (read, chosen automatically), beside it
      a key holding ", ", a non-ASCII key, a None, a list and ten more
      numbers; inside "model" a dict of hyperparameters and a string
  keys.expected.json   one line per selection (none given: "auto";
      --key model.enc: "enc"): the "pytorch" object stinfo --json gives
      each file, as Python's json.dumps writes it
  keys.expected.safetensors  the tensors read from "model"
Rules (st/file.h, st_torch_info): keys are the top-level string keys;
the values beside the key read are skipped first, then the values below
it that are neither tensors nor dicts, flattened as "a.b"; "skipped"
counts them all and "skipped_keys" names the first 8.
Run:  /usr/bin/python3 testdata/torch/gen_keys.py
"""
import collections
import json
import os

import torch

from stfixture import write_expected, write_tar

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(5)

model = collections.OrderedDict([
    ("enc", collections.OrderedDict([("weight", torch.randn(3, 2)),
                                     ("hp", collections.OrderedDict(
                                         [("dim", 2), ("act", "gelu")]))])),
    ("dec.weight", torch.randn(4).half()),
    ("note", "trained on nothing"),
])
ckpt = collections.OrderedDict([("model", model), ("epoch, step", [3, 100]),
                                ("époque", 3), ("ema", None)])
for i in range(10):
    ckpt["n%d" % i] = i

torch.save(ckpt, os.path.join(HERE, "keys.zip.bin"))
torch.save(ckpt, os.path.join(HERE, "keys.legacy.bin"),
           _use_new_zipfile_serialization=False)
write_tar(os.path.join(HERE, "keys.tar.bin"), ckpt)


def flatten(d, prefix, tensors, skipped):
    for k, v in d.items():
        name = prefix + "." + k if prefix else k
        if isinstance(v, dict):
            flatten(v, name, tensors, skipped)
        elif isinstance(v, torch.Tensor):
            tensors[name] = v
        else:
            skipped.append(name)


def expect(top, path, auto):
    """The pytorch object of the file when dictionary path is read."""
    d = top
    for k in path:
        d = d[k]
    # The values beside the key read are the top-level ones only (a
    # deeper --key names no more than those of its first level).
    skipped = [n for n in top if n != path[0]] if path else []
    tensors = collections.OrderedDict()
    flatten(d, "", tensors, skipped)
    return tensors, {"keys": list(top), "key": ".".join(path) if path else None,
                     "key_auto": auto, "skipped": len(skipped),
                     "skipped_keys": [n[:100] for n in skipped[:8]]}


tensors, auto = expect(ckpt, ["model"], True)
_, enc = expect(ckpt, ["model", "enc"], False)
for f in ("zip", "legacy", "tar"):
    got = torch.load(os.path.join(HERE, "keys.%s.bin" % f))
    assert list(got) == list(ckpt) and torch.equal(got["model"]["enc"]["weight"],
                                                   model["enc"]["weight"])
with open(os.path.join(HERE, "keys.expected.json"), "w", encoding="utf-8") as f:
    f.write("auto " + json.dumps(auto, ensure_ascii=False) + "\n")
    f.write("enc " + json.dumps(enc, ensure_ascii=False) + "\n")
write_expected(os.path.join(HERE, "keys.expected.safetensors"), tensors)
print("ok")
