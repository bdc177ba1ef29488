#!/usr/bin/python3
"""Make model/, the random GPT-2 snapshot that llama.cpp judges.

A GPT-2 of 2 layers, 4 heads, n_embd 32, n_positions 32 and a 512-token
vocabulary: GPT-2's own tokenizer cut to its first 255 merges (ids 0-255
are GPT-2's byte tokens, ids 256-510 the results of merges 1-255, in
GPT-2's order, and 511 is <|endoftext|>), so that it is a true prefix of
GPT-2's BPE. The weights have a larger spread than GPT-2's initialisation
(wte and wpe normal(0, 1), the other matrices normal(0, 0.35), biases
normal(0, 0.1), LayerNorm weights
uniform(0.6, 1.4)) so that attention is far from uniform and greedy
decoding is not stuck on one token. model.safetensors is written by hand
(json header, F32 data), never through libst.

Run: /usr/bin/python3 testdata/gguf/judge/gen_model.py [OUT [N_POSITIONS]]
(numpy; deterministic). OUT defaults to model/ beside this script and
N_POSITIONS to 32; testdata/ggml_quant/llama_judge.sh makes a 64-position
copy in a temporary folder for its 32-token runs.
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, 'model')
TOK = os.path.join(HERE, '..', '..', 'gpt2-tokenizer')
V, C, L, NH = 512, 32, 2, 4
P = int(sys.argv[2]) if len(sys.argv) > 2 else 32

rng = np.random.default_rng(2026)
tensors = {}


def normal(shape, std):
    return (rng.standard_normal(shape) * std).astype(np.float32)


tensors['wte.weight'] = normal((V, C), 1.0)
tensors['wpe.weight'] = normal((P, C), 1.0)
for layer in range(L):
    h = f'h.{layer}.'
    for ln in ('ln_1', 'ln_2'):
        tensors[h + ln + '.weight'] = rng.uniform(0.6, 1.4, C).astype(
            np.float32)
        tensors[h + ln + '.bias'] = normal(C, 0.1)
    for name, n_in, n_out in (('attn.c_attn', C, 3 * C),
                              ('attn.c_proj', C, C),
                              ('mlp.c_fc', C, 4 * C),
                              ('mlp.c_proj', 4 * C, C)):
        tensors[h + name + '.weight'] = normal((n_in, n_out), 0.35)
        tensors[h + name + '.bias'] = normal(n_out, 0.1)
tensors['ln_f.weight'] = rng.uniform(0.6, 1.4, C).astype(np.float32)
tensors['ln_f.bias'] = normal(C, 0.1)

os.makedirs(OUT, exist_ok=True)
header, blobs, off = {}, [], 0
for name in sorted(tensors):
    a = tensors[name]
    b = a.astype('<f4').tobytes()
    header[name] = {'dtype': 'F32', 'shape': list(a.shape),
                    'data_offsets': [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
header['__metadata__'] = {'format': 'pt'}
h = json.dumps(header, separators=(',', ':')).encode()
h += b' ' * ((8 - len(h) % 8) % 8)
with open(os.path.join(OUT, 'model.safetensors'), 'wb') as f:
    f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))

config = {
    'activation_function': 'gelu_new', 'architectures': ['GPT2LMHeadModel'],
    'attn_pdrop': 0.1, 'bos_token_id': V - 1, 'embd_pdrop': 0.1,
    'eos_token_id': V - 1, 'initializer_range': 0.02,
    'layer_norm_epsilon': 1e-05, 'model_type': 'gpt2', 'n_ctx': P,
    'n_embd': C, 'n_head': NH, 'n_inner': None, 'n_layer': L,
    'n_positions': P, 'reorder_and_upcast_attn': False,
    'resid_pdrop': 0.1, 'scale_attn_by_inverse_layer_idx': False,
    'scale_attn_weights': True, 'summary_activation': None,
    'summary_first_dropout': 0.1, 'summary_proj_to_labels': True,
    'summary_type': 'cls_index', 'summary_use_proj': True,
    'torch_dtype': 'float32', 'transformers_version': '4.46.3',
    'use_cache': True, 'vocab_size': V}
with open(os.path.join(OUT, 'config.json'), 'w') as f:
    json.dump(config, f, indent=2, sort_keys=True)
    f.write('\n')
with open(os.path.join(OUT, 'generation_config.json'), 'w') as f:
    json.dump({'_from_model_config': True, 'bos_token_id': V - 1,
               'eos_token_id': V - 1, 'transformers_version': '4.46.3'},
              f, indent=2)
    f.write('\n')

# The tokenizer: GPT-2's first 511 ids and first 255 merges.
vocab = json.load(open(os.path.join(TOK, 'vocab.json'), encoding='utf-8'))
keep = {t: i for t, i in vocab.items() if i < V - 1}
assert len(keep) == V - 1
keep['<|endoftext|>'] = V - 1
with open(os.path.join(OUT, 'vocab.json'), 'w', encoding='utf-8') as f:
    json.dump(keep, f, ensure_ascii=False)
lines = open(os.path.join(TOK, 'merges.txt'), encoding='utf-8').read(
).split('\n')
merges = lines[1:V - 256]
for k, m in enumerate(merges):
    a, b = m.split(' ')
    assert vocab[a + b] == 256 + k, m    # merge k makes id 256 + k
with open(os.path.join(OUT, 'merges.txt'), 'w', encoding='utf-8') as f:
    f.write(lines[0] + '\n' + '\n'.join(merges) + '\n')
print(f'{OUT}: {sum(a.size for a in tensors.values())} parameters, '
      f'{len(keep)} tokens, {len(merges)} merges')
