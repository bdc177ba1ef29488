#!/usr/bin/env python3
"""Make tiny-torch/: tiny-hf's weights as transformers saved GPT-2 before
safetensors: one pytorch_model.bin written by torch.save, GPT2LMHeadModel's
names ("transformer." prefix, legacy attn.bias / attn.masked_bias buffers)
and lm_head.weight sharing wte's storage, as a tied state dict does.
The shards of tiny-hf are read here by hand (8-byte length, JSON, data).

Run after gen_fixtures.py:  /usr/bin/python3 testdata/gpt2/gen_torch_bin.py
"""
import json
import os
import shutil
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SRC, DST = os.path.join(HERE, "tiny-hf"), os.path.join(HERE, "tiny-torch")
NP = {"F32": np.float32, "BOOL": np.bool_}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        arr = np.frombuffer(blob[8 + n + b:8 + n + e], NP[info["dtype"]])
        out[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return out


with open(os.path.join(SRC, "model.safetensors.index.json")) as f:
    shards = sorted(set(json.load(f)["weight_map"].values()))
state = {}
for s in shards:
    state.update(read_safetensors(os.path.join(SRC, s)))
assert torch.equal(state["lm_head.weight"], state["transformer.wte.weight"])
state["lm_head.weight"] = state["transformer.wte.weight"]  # tied: one storage
if os.path.isdir(DST):
    shutil.rmtree(DST)
os.makedirs(DST)
for name in ("config.json", "generation_config.json"):
    shutil.copy(os.path.join(SRC, name), os.path.join(DST, name))
torch.save({k: state[k] for k in sorted(state)}, os.path.join(DST, "pytorch_model.bin"))
print("ok")
