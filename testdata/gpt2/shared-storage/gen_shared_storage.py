#!/usr/bin/env python3
"""Make pytorch_model.bin and config.json here: a 2-layer GPT-2 (vocab 2,
n_positions 2, n_embd 2, 1 head) whose layer 1 parameters are views of
layer 0's storages, as torch.save keeps them. A checkpoint like this, with
thousands of layers over one storage, would make a model thousands of
times the size of its file: the loader must refuse it (tensor
'h.1.ln_1.weight': its data overlaps that of 'h.0.ln_1.weight').

Run:  /usr/bin/python3 testdata/gpt2/shared-storage/gen_shared_storage.py
"""
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
C = 2
g = torch.Generator().manual_seed(0)
layer = {
    "ln_1.weight": (C,), "ln_1.bias": (C,),
    "attn.c_attn.weight": (C, 3 * C), "attn.c_attn.bias": (3 * C,),
    "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,),
    "ln_2.weight": (C,), "ln_2.bias": (C,),
    "mlp.c_fc.weight": (C, 4 * C), "mlp.c_fc.bias": (4 * C,),
    "mlp.c_proj.weight": (4 * C, C), "mlp.c_proj.bias": (C,),
}
state = {
    "wte.weight": torch.randn(2, C, generator=g),
    "wpe.weight": torch.randn(2, C, generator=g),
    "ln_f.weight": torch.ones(C),
    "ln_f.bias": torch.zeros(C),
}
for name, shape in layer.items():
    t = torch.randn(*shape, generator=g)
    state["h.0." + name] = t
    state["h.1." + name] = t.view(*shape)  # the same storage
torch.save(state, os.path.join(HERE, "pytorch_model.bin"))
config = {"model_type": "gpt2", "vocab_size": 2, "n_positions": 2,
          "n_embd": C, "n_layer": 2, "n_head": 1}
with open(os.path.join(HERE, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
print("ok")
