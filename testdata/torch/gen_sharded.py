#!/usr/bin/env python3
"""Make a sharded PyTorch snapshot as transformers saved large models
before safetensors (save_pretrained with max_shard_size: one torch.save
per shard, pytorch_model.bin.index.json), and the sharded safetensors
snapshot that converting it shard by shard must give, written here from
the tensors (stfixture.py) and Python's json, not by libst.

  sharded3/          a Llama-like model in three shards (its config.json
      names an architecture stinfo does not know, so --check looks at
      the files alone):
      pytorch_model-0000{1,2,3}-of-00003.bin   shard 2 in the legacy
          (pre-1.6) format, the others zip; shard 2 holds a transposed
          view, shard 3 a tied alias (model.embed_out.weight is
          lm_head.weight: one storage, the same view)
      pytorch_model.bin.index.json   sorted keys, indent 2, as
          transformers writes it; lm_head.weight (shard 3) sorts first
      config.json, generation_config.json, tokenizer.json,
      tokenizer_config.json, special_tokens_map.json, README.md
  sharded3.expected/  what `stconvert sharded3 OUT` writes: one
      model-0000k-of-00003.safetensors per input shard holding that
      shard's tensors (contiguous, the alias left out),
      model.safetensors.index.json (weight_map, metadata.total_size; the
      bytes of transformers' json.dumps(indent=2, sort_keys=True) + "\\n"),
      and the other files copied unchanged
  sharded3.all.safetensors  every tensor of the expected shards in one
      file (for conversions that re-plan the shards)
  bad/sharded_crc/   sharded3 with one byte of a storage of shard 3 flipped:
      it opens (storages are read in place), and a conversion fails on
      the last shard, after the first two were written
Run:  /usr/bin/python3 testdata/torch/gen_sharded.py
"""
import collections
import json
import os
import shutil
import struct
import zipfile

import torch

from stfixture import write_expected

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "sharded3")
EXP = os.path.join(HERE, "sharded3.expected")
torch.manual_seed(3)

H, F, V = 8, 12, 16        # width, MLP width, vocabulary


def layer(i):
    p = "model.layers.%d." % i
    return [(p + "self_attn.q_proj.weight", torch.randn(H, H).bfloat16()),
            (p + "self_attn.o_proj.weight", torch.randn(H, H).t().bfloat16()),
            (p + "mlp.up_proj.weight", torch.randn(F, H).bfloat16()),
            (p + "input_layernorm.weight", torch.ones(H) + torch.randn(H) * 0.1)]


head = torch.randn(V, H).bfloat16()
o_proj = torch.randn(H, H).bfloat16()
shards = [
    collections.OrderedDict([("model.embed_tokens.weight", torch.randn(V, H).bfloat16())]
                            + layer(0)),
    collections.OrderedDict(layer(1) + [
        # a transposed view, saved as it is (not .contiguous())
        ("model.layers.1.self_attn.k_proj.weight", o_proj.t())]),
    collections.OrderedDict([("lm_head.weight", head),
                             ("model.embed_out.weight", head),   # tied alias
                             ("model.norm.weight", torch.randn(H)),
                             ("model.layers.1.rotary_emb.inv_freq",
                              1.0 / (10000 ** (torch.arange(0, 4, 2).double() / 4)))]),
]
ALIAS = "model.embed_out.weight"
N = len(shards)

for d in (SRC, EXP):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)


def bin_name(k):
    return "pytorch_model-%05d-of-%05d.bin" % (k + 1, N)


def st_name(k):
    return "model-%05d-of-%05d.safetensors" % (k + 1, N)


weight_map, total = {}, 0
for k, sd in enumerate(shards):
    torch.save(sd, os.path.join(SRC, bin_name(k)),
               _use_new_zipfile_serialization=(k != 1))
    for name, t in sd.items():
        weight_map[name] = bin_name(k)
        total += t.numel() * t.element_size()
with open(os.path.join(SRC, "pytorch_model.bin.index.json"), "w") as f:
    f.write(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map},
                       indent=2, sort_keys=True) + "\n")
assert sorted(weight_map)[0] == "lm_head.weight"   # shard 3 first in the map

OTHER = {
    "config.json": json.dumps({"architectures": ["TinyForCausalLM"],
                               "hidden_size": H, "intermediate_size": F,
                               "model_type": "tiny", "num_hidden_layers": 2,
                               "torch_dtype": "bfloat16", "vocab_size": V},
                              indent=2) + "\n",
    "generation_config.json": '{\n  "bos_token_id": 1,\n  "eos_token_id": 2\n}\n',
    "tokenizer.json": '{"version": "1.0", "model": {"type": "BPE", "vocab": {}}}\n',
    "tokenizer_config.json": '{"model_max_length": 64}\n',
    "special_tokens_map.json": '{"bos_token": "<s>", "eos_token": "</s>"}\n',
    "README.md": "A tiny sharded PyTorch checkpoint (testdata/torch/gen_sharded.py).\n",
}
for name, text in OTHER.items():
    for d in (SRC, EXP):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)

# What torch.load gives for each shard, the alias written once.
out_map, out_total, every = {}, 0, {}
for k in range(N):
    got = torch.load(os.path.join(SRC, bin_name(k)))
    assert list(got) == list(shards[k])
    for name in got:
        assert torch.equal(got[name], shards[k][name]), name
    kept = {n: t for n, t in got.items() if n != ALIAS}
    write_expected(os.path.join(EXP, st_name(k)), kept)
    for n, t in kept.items():
        out_map[n] = st_name(k)
        out_total += t.numel() * t.element_size()
        every[n] = t
with open(os.path.join(EXP, "model.safetensors.index.json"), "w") as f:
    f.write(json.dumps({"metadata": {"total_size": out_total}, "weight_map": out_map},
                       indent=2, sort_keys=True) + "\n")
write_expected(os.path.join(HERE, "sharded3.all.safetensors"), every)

# One flipped byte in the first storage of shard 3 (read in place).
BAD = os.path.join(HERE, "bad", "sharded_crc")
shutil.rmtree(BAD, ignore_errors=True)
shutil.copytree(SRC, BAD)
path = os.path.join(BAD, bin_name(2))
with open(path, "rb") as f:
    blob = bytearray(f.read())
with zipfile.ZipFile(path) as z:
    info = [i for i in z.infolist() if "/data/" in i.filename][0]
    nl, xl = struct.unpack("<HH", blob[info.header_offset + 26:info.header_offset + 30])
    blob[info.header_offset + 30 + nl + xl] ^= 0x01
with open(path, "wb") as f:
    f.write(blob)
print("ok")
