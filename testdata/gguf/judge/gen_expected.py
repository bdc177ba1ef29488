#!/usr/bin/python3
"""Write expected-<type>.gguf: what `gpt2export model/ OUT.gguf --type T`
must produce byte for byte, computed here independently of libst from
model/ (safetensors parsed by hand) and the rules llama.cpp's
convert_hf_to_gguf.py follows for GPT2LMHeadModel:

- keys: general.architecture, general.name (the folder's name), the gpt2.*
  hyperparameters (uint32; layer_norm_epsilon float32), general.file_type
  (ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q4_0 2, MOSTLY_Q4_1 3, MOSTLY_Q8_0 7,
  MOSTLY_Q5_0 8, MOSTLY_Q5_1 9, MOSTLY_BF16 32),
  general.quantization_version 2, then tokenizer.ggml.model "gpt2", pre
  "gpt-2", tokens (vocab.json by id), token_type (1 normal, 3 control for
  <|endoftext|>), merges (merges.txt), bos/eos ids, add_bos_token false;
- tensors: token_embd, position_embd, each block's attn_norm, attn_qkv,
  attn_output, ffn_norm, ffn_up, ffn_down (weight, bias), output_norm;
  Conv1D weights transposed to [out, in] (GGUF dims {in, out}); vectors
  and position_embd F32; the other matrices in the type asked for, Q8_0 by
  ggml's quantize_row_q8_0_ref (d = amax / 127, q = roundf(x * (1 / d)),
  d as F16), F16 and BF16 rounded to nearest even; Q4_0, Q4_1, Q5_0 and
  Q5_1 by ggml's own quantizer, ggml_quantize_chunk (no importance matrix:
  quantize_row_<type>_ref) called with ctypes on node-llama-cpp 3.21.1's
  libggml-base.so ($LIBGGML_BASE); a matrix whose rows are not whole
  blocks of 32 in F16, as llama-quantize's tensor_type_fallback does;
- alignment 32: zero padding after the header and after every tensor.

Run: /usr/bin/python3 testdata/gguf/judge/gen_expected.py
"""
import ctypes
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, 'model')

raw = open(os.path.join(MODEL, 'model.safetensors'), 'rb').read()
n = struct.unpack_from('<Q', raw)[0]
hdr = json.loads(raw[8:8 + n])
W = {}
for k, v in hdr.items():
    if k != '__metadata__':
        b, e = v['data_offsets']
        W[k] = np.frombuffer(raw[8 + n + b:8 + n + e], '<f4').reshape(
            v['shape'])
cfg = json.load(open(os.path.join(MODEL, 'config.json')))
vocab = json.load(open(os.path.join(MODEL, 'vocab.json'), encoding='utf-8'))
merges = open(os.path.join(MODEL, 'merges.txt'), encoding='utf-8').read(
).split('\n')[1:-1]
C, L, V = cfg['n_embd'], cfg['n_layer'], cfg['vocab_size']


def s(x):
    b = x.encode() if isinstance(x, str) else x
    return struct.pack('<Q', len(b)) + b


def kv_str(k, v):
    return s(k) + struct.pack('<I', 8) + s(v)


def kv_u32(k, v):
    return s(k) + struct.pack('<II', 4, v)


def roundf(x):
    a = np.abs(x)
    fl = np.floor(a)
    return np.sign(x) * (fl + np.floor(np.float32(2) * (a - fl)))


def bf16(x):
    u = x.astype('<f4').view(np.uint32).astype(np.uint64)
    r = (u + 0x7fff + ((u >> 16) & 1)) >> 16   # round to nearest even
    return r.astype('<u2').tobytes()


def q8_0(x):
    blk = x.reshape(-1, 32).astype(np.float32)
    d = (np.abs(blk).max(axis=1, keepdims=True) / np.float32(127)).astype(
        np.float32)
    with np.errstate(divide='ignore'):
        idd = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(
            np.float32)
    q = roundf((blk * idd).astype(np.float32)).astype(np.int8)
    out = np.zeros((blk.shape[0], 34), np.uint8)
    out[:, :2] = d.astype('<f2').view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


LIB = os.environ.get('LIBGGML_BASE', '/work/ref/node_modules/@node-llama-cpp/'
                     'linux-x64/bins/linux-x64/libggml-base.so')
# ggml type: bytes per block of 32 (Q4_0, Q4_1, Q5_0, Q5_1).
GGML_QUANT = {2: 18, 3: 20, 6: 22, 7: 24}


def ggml_quantize(x, t):
    ggml = ctypes.CDLL(LIB)
    ggml.ggml_quantize_chunk.restype = ctypes.c_size_t
    ggml.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                         ctypes.c_void_p]
    x = np.ascontiguousarray(x, dtype='<f4')
    rows, cols = x.reshape(-1, x.shape[-1]).shape
    dst = ctypes.create_string_buffer(rows * cols // 32 * GGML_QUANT[t])
    got = ggml.ggml_quantize_chunk(t, x.ctypes.data_as(ctypes.c_void_p), dst, 0, rows,
                                   cols, None)
    assert got == len(dst.raw), (t, got)
    return dst.raw


def encode(x, t):
    if t == 0:
        return x.astype('<f4').tobytes()
    if t == 1:
        return x.astype('<f2').tobytes()
    if t == 30:
        return bf16(x)
    if t in GGML_QUANT:
        return ggml_quantize(x, t)
    return q8_0(x)


def tensors(mtype):
    """(gguf name, data in GGUF order as a 2-D or 1-D array, ggml type)."""
    out = [('token_embd.weight', W['wte.weight'], mtype),
           ('position_embd.weight', W['wpe.weight'], 0)]
    names = [('ln_1', 'attn_norm'), ('attn.c_attn', 'attn_qkv'),
             ('attn.c_proj', 'attn_output'), ('ln_2', 'ffn_norm'),
             ('mlp.c_fc', 'ffn_up'), ('mlp.c_proj', 'ffn_down')]
    for layer in range(L):
        for hf, gg in names:
            w = W[f'h.{layer}.{hf}.weight']
            b = W[f'h.{layer}.{hf}.bias']
            if w.ndim == 2:
                t = mtype if not (mtype in (8, 2, 3, 6, 7) and w.shape[0] % 32) else 1
                out.append((f'blk.{layer}.{gg}.weight', w.T, t))
            else:
                out.append((f'blk.{layer}.{gg}.weight', w, 0))
            out.append((f'blk.{layer}.{gg}.bias', b, 0))
    out += [('output_norm.weight', W['ln_f.weight'], 0),
            ('output_norm.bias', W['ln_f.bias'], 0)]
    return out


def gguf(mtype, file_type):
    inv = {i: t for t, i in vocab.items()}
    kvs = [kv_str('general.architecture', 'gpt2'),
           kv_str('general.name', 'model'),
           kv_u32('gpt2.block_count', L),
           kv_u32('gpt2.context_length', cfg['n_positions']),
           kv_u32('gpt2.embedding_length', C),
           kv_u32('gpt2.feed_forward_length', 4 * C),
           kv_u32('gpt2.attention.head_count', cfg['n_head']),
           s('gpt2.attention.layer_norm_epsilon') +
           struct.pack('<If', 6, cfg['layer_norm_epsilon']),
           kv_u32('general.file_type', file_type),
           kv_u32('general.quantization_version', 2),
           kv_str('tokenizer.ggml.model', 'gpt2'),
           kv_str('tokenizer.ggml.pre', 'gpt-2'),
           s('tokenizer.ggml.tokens') + struct.pack('<IIQ', 9, 8, V) +
           b''.join(s(inv[i]) for i in range(V)),
           s('tokenizer.ggml.token_type') + struct.pack('<IIQ', 9, 5, V) +
           b''.join(struct.pack('<i', 3 if inv[i] == '<|endoftext|>' else 1)
                    for i in range(V)),
           s('tokenizer.ggml.merges') +
           struct.pack('<IIQ', 9, 8, len(merges)) +
           b''.join(s(m) for m in merges),
           kv_u32('tokenizer.ggml.bos_token_id', vocab['<|endoftext|>']),
           kv_u32('tokenizer.ggml.eos_token_id', cfg['eos_token_id']),
           s('tokenizer.ggml.add_bos_token') + struct.pack('<IB', 7, 0)]
    ts = tensors(mtype)
    infos, data = b'', b''
    for name, x, t in ts:
        dims = list(reversed(x.shape))
        infos += (s(name) + struct.pack('<I', len(dims)) +
                  b''.join(struct.pack('<Q', d) for d in dims) +
                  struct.pack('<IQ', t, len(data)))
        data += encode(np.ascontiguousarray(x), t)
        data += b'\0' * ((32 - len(data) % 32) % 32)
    head = (b'GGUF' + struct.pack('<IQQ', 3, len(ts), len(kvs)) +
            b''.join(kvs) + infos)
    return head + b'\0' * ((32 - len(head) % 32) % 32) + data


for name, mtype, ft in (('f32', 0, 0), ('f16', 1, 1), ('bf16', 30, 32),
                        ('q8_0', 8, 7), ('q4_0', 2, 2), ('q4_1', 3, 3),
                        ('q5_0', 6, 8), ('q5_1', 7, 9)):
    with open(os.path.join(HERE, f'expected-{name}.gguf'), 'wb') as f:
        f.write(gguf(mtype, ft))
print('wrote expected-{f32,f16,bf16,q8_0,q4_0,q4_1,q5_0,q5_1}.gguf')
