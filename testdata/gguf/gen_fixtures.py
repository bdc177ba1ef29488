#!/usr/bin/python3
"""Make the GGUF reader's fixtures byte by byte, from ggml's docs/gguf.md.

Every file is written with struct (little-endian) by the helpers below, not
by any GGUF library, so the reader is checked against the spec itself.
MANIFEST.tsv lists each file with the verdict the reader must give and what
is broken; ggml_verdicts.py then records in GGML.tsv what ggml's own loader
says of each file (rerun it after this script). q8_0/ holds an independent numpy implementation of ggml's
quantize_row_q8_0_ref applied to random rows: src.f32 (the input),
ref.q8_0 (its blocks), deq.f32 (the blocks dequantized).

Run: /usr/bin/python3 testdata/gguf/gen_fixtures.py  (numpy 1.24)
"""
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# gguf_metadata_value_type
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
FMT = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i',
       F32: '<f', BOOL: '<B', U64: '<Q', I64: '<q', F64: '<d'}
# ggml_type numbers and (block, bytes) from ggml's type traits
T_F32, T_F16, T_Q8_0, T_Q4_K, T_I32, T_BF16 = 0, 1, 8, 12, 26, 30
SIZE = {T_F32: (1, 4), T_F16: (1, 2), T_Q8_0: (32, 34), T_Q4_K: (256, 144),
        T_I32: (1, 4), T_BF16: (1, 2)}


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack('<Q', len(b)) + b


def val(t, v):
    """The bytes of a value of type t (without the type)."""
    if t == STR:
        return s(v)
    if t == ARR:
        et, items = v
        return struct.pack('<IQ', et, len(items)) + b''.join(
            val(et, x) for x in items)
    return struct.pack(FMT[t], v)


def kv(key, t, v):
    return s(key) + struct.pack('<I', t) + val(t, v)


def tinfo(name, dims, ttype, offset):
    return (s(name) + struct.pack('<I', len(dims)) +
            b''.join(struct.pack('<Q', d) for d in dims) +
            struct.pack('<IQ', ttype, offset))


def nbytes(dims, ttype):
    blk, size = SIZE[ttype]
    n = 1
    for d in dims:
        n *= d
    return n // blk * size


def gguf(kvs, tensors, version=3, align=32, n_kv=None, n_t=None,
         offsets=None, pad_data=True):
    """A whole file. tensors: (name, dims, type, data bytes). Offsets are
    packed with padding to align unless given."""
    head = b'GGUF' + struct.pack('<IQQ', version,
                                 len(tensors) if n_t is None else n_t,
                                 len(kvs) if n_kv is None else n_kv)
    body = b''.join(kvs)
    infos, data, offs = b'', b'', []
    for i, (name, dims, tt, blob) in enumerate(tensors):
        off = len(data) if offsets is None else offsets[i]
        offs.append(off)
        infos += tinfo(name, dims, tt, off)
        if offsets is None:
            data += blob
            if pad_data:
                data += b'\0' * ((align - len(data) % align) % align)
    out = head + body + infos
    if tensors or offsets:
        out += b'\0' * ((align - len(out) % align) % align)
    if offsets is not None:
        end = max([o + len(t[3]) for o, t in zip(offs, tensors)] + [0])
        buf = bytearray(end)
        for o, t in zip(offs, tensors):
            buf[o:o + len(t[3])] = t[3]
        data = bytes(buf)
    return out + data


def f32(vals):
    return np.asarray(vals, dtype='<f4').tobytes()


ARCH = kv('general.architecture', STR, 'test')

# ---- the valid file with every value type ----------------------------------

q8_block = struct.pack('<H', 0x3800) + bytes((q & 0xff) for q in range(-16, 16))
ALL_KVS = [
    ARCH,
    kv('general.alignment', U32, 64),
    kv('general.quantization_version', U32, 2),
    kv('t.u8', U8, 200), kv('t.i8', I8, -100),
    kv('t.u16', U16, 60000), kv('t.i16', I16, -30000),
    kv('t.u32', U32, 4000000000), kv('t.i32', I32, -2000000000),
    kv('t.f32', F32, 1.5), kv('t.bool', BOOL, 1),
    kv('t.string', STR, 'h\u00e9llo'),
    kv('t.u64', U64, 2**63 + 5), kv('t.i64', I64, -2**62),
    kv('t.f64', F64, -0.1),
    kv('t.arr_u32', ARR, (U32, [1, 2, 3])),
    kv('t.arr_str', ARR, (STR, ['a', '', 'ccc'])),
    kv('t.arr_nested', ARR, (ARR, [(I16, [1, -2]), (I16, [3])])),
    kv('t.arr_empty', ARR, (F32, [])),
    kv('t.arr_bool', ARR, (BOOL, [1, 0, 1])),
    kv('t.arr_f64', ARR, (F64, [0.25, -8.0])),
]
ALL_TENSORS = [
    ('f32', [3, 2], T_F32, f32([0, 0.5, 1, 1.5, 2, 2.5])),
    ('f16', [4], T_F16, np.array([1, -2, 0.5, 65504], '<f2').tobytes()),
    ('bf16', [2], T_BF16, struct.pack('<HH', 0x3f80, 0xc040)),
    ('q8', [32, 2], T_Q8_0, q8_block * 2),
    ('q4k', [256], T_Q4_K, b'\0' * 144),
    ('i32', [2], T_I32, struct.pack('<ii', 7, -7)),
]

FILES = []  # (name, expect, substring, what)


def add(name, data, expect, needle, what):
    with open(os.path.join(HERE, name), 'wb') as f:
        f.write(data)
    FILES.append((name, expect, needle, what))


# (ggml reads no arrays of arrays: the one nested array is warned about.)
add('ok_all_types.gguf', gguf(ALL_KVS, ALL_TENSORS, align=64), 'warning',
    "llama.cpp will refuse this: key 't.arr_nested' is an array of arrays",
    'v3, alignment 64, every value type, nested and empty arrays, six '
    'tensor types')
add('ok_v2.gguf', gguf([ARCH], [('w', [8], T_F32, f32(range(8)))],
                       version=2), 'ok', '',
    'version 2, no general.alignment (32 by default)')
add('ok_no_tensors.gguf', gguf([ARCH, kv('general.name', STR, 'x')], []),
    'ok', '', 'metadata only: the file ends right after it, unpadded')


def nest(depth):
    v = (U8, [7])
    for _ in range(depth - 1):
        v = (ARR, [v])
    return v


add('ok_depth16.gguf', gguf([ARCH, kv('t.deep', ARR, nest(16))], []),
    'warning', "llama.cpp will refuse this: key 't.deep' is an array of "
    "arrays", 'arrays nested 16 deep, the most the reader accepts')
add('warn_no_arch.gguf', gguf([], [('w', [8], T_F32, f32(range(8)))]),
    'warning', "'general.architecture' is missing",
    'legal but the spec requires general.architecture')
add('warn_no_quant_version.gguf',
    gguf([ARCH], [('q', [32], T_Q8_0, q8_block)]), 'warning',
    "'general.quantization_version' is missing",
    'a quantized tensor and no general.quantization_version')

# ---- broken files: each breaks one rule --------------------------------------

ok_small = gguf([ARCH], [('w', [8], T_F32, f32(range(8)))])
add('bad_magic.gguf', b'GGUX' + ok_small[4:], 'error', 'not a GGUF file',
    'the magic is GGUX')
add('bad_short.gguf', ok_small[:12], 'error', 'too short',
    '12 bytes: the header needs 24')
add('bad_empty.gguf', b'', 'error', 'not a GGUF file', 'an empty file')
add('bad_version1.gguf', b'GGUF' + struct.pack('<I', 1) + ok_small[8:],
    'error', 'version 1', 'the draft version 1')
add('bad_version99.gguf', b'GGUF' + struct.pack('<I', 99) + ok_small[8:],
    'error', 'unknown version 99', 'version 99')
add('bad_big_endian.gguf', b'GGUF' + struct.pack('>I', 3) + ok_small[8:],
    'error', 'big-endian', 'version 3 written big-endian')
add('bad_kv_count.gguf', gguf([ARCH], [], n_kv=2**40), 'error',
    'metadata count 1099511627776', '2^40 key/value pairs in a tiny file')
add('bad_tensor_count.gguf', gguf([ARCH], [], n_t=2**40), 'error',
    'tensor count 1099511627776', '2^40 tensor infos in a tiny file')
add('bad_kv_count_short.gguf', gguf([ARCH], [], n_kv=2), 'error',
    'key 1: string length at byte', 'two pairs counted, one present')
add('bad_key_len.gguf', ok_small[:24] + struct.pack('<Q', 2**62) +
    ok_small[32:], 'error', 'key 0: string of 4611686018427387904 bytes',
    'the first key claims 2^62 bytes')
add('bad_string_len.gguf',
    gguf([ARCH, s('general.name') + struct.pack('<IQ', STR, 10**12) + b'x'],
         []), 'error', "key 'general.name': string of 1000000000000 bytes",
    'a string value longer than the file')
add('bad_value_type.gguf',
    gguf([ARCH, s('t.x') + struct.pack('<I', 13) + b'\0' * 8], []), 'error',
    "key 't.x': unknown value type 13", 'value type 13')
add('bad_array_type.gguf',
    gguf([ARCH, s('t.x') + struct.pack('<IIQ', ARR, 99, 1) + b'\0' * 8], []),
    'error', "key 't.x': unknown array element type 99",
    'array element type 99')
add('bad_array_count.gguf',
    gguf([ARCH, s('t.x') + struct.pack('<IIQ', ARR, U32, 2**61)], []),
    'error', "key 't.x': array of 2305843009213693952 uint32",
    'an array of 2^61 uint32 in a tiny file')
add('bad_array_strings.gguf',
    gguf([ARCH, s('t.x') + struct.pack('<IIQ', ARR, STR, 1000) + s('a')],
         []), 'error', "key 't.x': array of 1000 string",
    '1000 strings counted, one present')
add('bad_deep17.gguf', gguf([ARCH, kv('t.deep', ARR, nest(17))], []),
    'error', "key 't.deep': arrays nested deeper than 16",
    'arrays nested 17 deep')


def deep_raw(depth):
    """depth nested one-element arrays, the innermost empty."""
    out = b''
    for _ in range(depth - 1):
        out += struct.pack('<IQ', ARR, 1)
    return out + struct.pack('<IQ', U8, 0)


add('bad_deep_absurd.gguf',
    gguf([ARCH, s('t.deep') + struct.pack('<I', ARR) + deep_raw(5000)], []),
    'error', 'arrays nested deeper than 16', 'arrays nested 5000 deep')
# The spec's bools are 0 or 1; ggml and gguf-py read any other byte as true.
add('warn_bool.gguf', gguf([ARCH, kv('t.b', BOOL, 2)], []), 'warning',
    "key 't.b': bool value 2", 'a bool of 2')
add('warn_bool_array.gguf', gguf([ARCH, kv('t.b', ARR, (BOOL, [1, 0, 5]))],
                                 []), 'warning',
    "key 't.b': element 2: bool value 5", 'a bool array holding 5')
add('bad_dup_key.gguf', gguf([ARCH, kv('t.a', U8, 1), kv('t.a', U8, 2)], []),
    'error', "key 't.a' appears more than once", 'the key t.a twice')
# Keys the spec frowns on but ggml and gguf-py read.
add('warn_key_ascii.gguf', gguf([ARCH, kv('t.\u00e9', U8, 1)], []),
    'warning', "not ASCII (byte 2 is 0xc3)", 'a key with an e-acute')
add('warn_key_nul.gguf', gguf([ARCH, kv('t.a\0b', U8, 1)], []), 'warning',
    "holds a NUL (byte 3 is 0x00)", 'a key with a NUL byte inside')
add('warn_key_long.gguf', gguf([ARCH, kv('k' * 65536, U8, 1)], []),
    'warning', 'key 1: 65536 bytes long (the spec allows at most 65535',
    'a key of 65536 bytes')
# Strings that are not UTF-8 (the spec's strings are UTF-8).
add('warn_utf8_key.gguf', gguf([ARCH, kv(b't.\xff', U8, 1)], []), 'warning',
    "key 't.\\xff': not valid UTF-8 (byte 2 is 0xff)",
    'a key holding the byte 0xff')
add('warn_utf8_value.gguf', gguf([ARCH, kv('t.s', STR, b'ab\xc3(')], []),
    'warning', "key 't.s': string value not valid UTF-8 (byte 2 is 0xc3)",
    'a string value with a cut two-byte sequence')
add('warn_utf8_array.gguf',
    gguf([ARCH, kv('t.a', ARR, (STR, ['ok', b'\xed\xa0\x80']))], []),
    'warning', "key 't.a': element 1 not valid UTF-8 (byte 0 is 0xed)",
    'an array element holding a UTF-16 surrogate (U+D800)')
add('warn_utf8_name.gguf', gguf([ARCH], [(b'w\xfe', [8], T_F32,
                                          f32(range(8)))]), 'warning',
    "tensor 'w\\xfe': name not valid UTF-8 (byte 1 is 0xfe)",
    'a tensor name holding the byte 0xfe')
add('bad_key_empty.gguf', gguf([ARCH, kv('', U8, 1)], []), 'error',
    'key 1 is empty', 'an empty key')
add('bad_alignment_type.gguf',
    gguf([ARCH, kv('general.alignment', U64, 32)], []), 'error',
    "'general.alignment': type uint64, expected uint32",
    'general.alignment stored as uint64')
add('warn_alignment4.gguf',
    gguf([ARCH, kv('general.alignment', U32, 4)],
         [('a', [3], T_F32, f32(range(3))), ('b', [3], T_F32, f32(range(3)))],
         align=4), 'warning',
    "'general.alignment': 4 is not a multiple of 8",
    'alignment 4: a power of two (ggml reads it) but not a multiple of 8')
add('bad_alignment_zero.gguf',
    gguf([ARCH, kv('general.alignment', U32, 0)], []), 'error',
    "'general.alignment': 0 is not a power of two", 'alignment 0')
add('bad_alignment_value.gguf',
    gguf([ARCH, kv('general.alignment', U32, 48)],
         [('w', [8], T_F32, f32(range(8)))], align=48), 'error',
    "'general.alignment': 48 is not a power of two",
    'alignment 48')
# Unknown types are listed, not fatal (only their start can be checked).
add('bad_tensor_type.gguf', gguf([ARCH], [('w', [8], 4, b'\0' * 32)]),
    'warning', "tensor 'w': unknown ggml type 4",
    'ggml type 4 (Q4_2, removed from ggml): a warning, the file opens')
add('bad_tensor_type99.gguf', gguf([ARCH], [('w', [8], 99, b'\0' * 32)]),
    'warning', "tensor 'w': unknown ggml type 99",
    'ggml type 99: a warning, the file opens')
add('warn_type57_between.gguf',
    gguf([ARCH], [('a', [8], T_F32, f32(range(8))),
                  ('new', [64], 57, b'\x5a' * 40),
                  ('b', [4], T_F32, f32([1, 2, 3, 4]))]),
    'warning', "tensor 'new': unknown ggml type 57",
    'a future type between two F32 tensors: they still read')
add('bad_type57_past_end.gguf',
    gguf([ARCH], [('a', [8], T_F32, f32(range(8))),
                  ('new', [64], 57, b'')], offsets=[0, 4096])[:-4064],
    'error', "tensor 'new' (unknown type 57): data offset 4096 is past the end",
    'a future type whose offset lies past the data section')
add('bad_ndims.gguf', gguf([ARCH], [('w', [1, 1, 1, 1, 8], T_F32,
                                     f32(range(8)))]), 'error',
    "tensor 'w': 5 dimensions (at most 4)", 'five dimensions')
add('bad_blocks.gguf', gguf([ARCH, kv('general.quantization_version', U32,
                                      2)],
                            [('q', [31, 2], T_Q8_0, b'\0' * 68)]),
    'error', "tensor 'q': rows of 31 elements are not whole Q8_0 blocks",
    'a Q8_0 row of 31 elements')
add('bad_dims_overflow.gguf',
    gguf([ARCH], [('w', [2**32, 2**32], T_F32, b'')]), 'error',
    "tensor 'w': dimensions [4294967296, 4294967296, 1, 1] overflow",
    '2^64 elements')
add('bad_misaligned.gguf',
    gguf([ARCH], [('a', [4], T_F32, f32(range(4))),
                  ('b', [4], T_F32, f32(range(4)))], offsets=[0, 16]),
    'error', "tensor 'b': data offset 16 is not a multiple of the alignment "
    "32", "b's data at 16 with alignment 32")
add('bad_overlap.gguf',
    gguf([ARCH], [('a', [16], T_F32, f32(range(16))),
                  ('b', [8], T_F32, f32(range(8)))], offsets=[0, 32]),
    'error', "tensor 'b': data [32, 64) overlaps tensor 'a' [0, 64)",
    "b's data inside a's")
# ggml's loader wants the tensors packed in file order from offset 0.
add('warn_gap.gguf',
    gguf([ARCH], [('a', [8], T_F32, f32(range(8))),
                  ('b', [8], T_F32, f32(range(8)))], offsets=[0, 64]),
    'warning', "llama.cpp will refuse this: a gap of 32 bytes before tensor "
    "'b' (data at 64", "32 unused bytes between a's data and b's")
add('warn_gap_first.gguf',
    gguf([ARCH], [('a', [8], T_F32, f32(range(8)))], offsets=[32]),
    'warning', "llama.cpp will refuse this: a gap of 32 bytes before tensor "
    "'a' (data at 32", "the only tensor's data at 32, not 0")
add('warn_out_of_order.gguf',
    gguf([ARCH], [('a', [8], T_F32, f32(range(8))),
                  ('b', [8], T_F32, f32(range(8)))], offsets=[32, 0]),
    'warning', "llama.cpp will refuse this: tensors out of offset order: "
    "'b' (data at 0) is listed after 'a' (data at 32)",
    "packed, but b's data before a's")
add('warn_name64.gguf', gguf([ARCH], [('n' * 64, [8], T_F32,
                                       f32(range(8)))]), 'warning',
    'llama.cpp will refuse this: tensor \'' + 'n' * 64 + "': name of 64 bytes",
    'a tensor name of 64 bytes (ggml keeps at most 63)')
add('bad_past_end.gguf',
    gguf([ARCH], [('w', [8], T_F32, f32(range(8)))])[:-8], 'error',
    "tensor 'w': data [0, 32) runs past the end of the data section (24 "
    "bytes)", 'the last 8 data bytes cut off')
add('bad_dup_tensor.gguf',
    gguf([ARCH], [('a', [8], T_F32, f32(range(8))),
                  ('a', [8], T_F32, f32(range(8)))]), 'error',
    "tensor 'a' appears more than once", 'the tensor name a twice')
add('bad_name_long.gguf', gguf([ARCH], [('n' * 65, [8], T_F32,
                                         f32(range(8)))]), 'error',
    'name of 65 bytes (at most 64)', 'a tensor name of 65 bytes')
whole = gguf([ARCH], [('w', [8], T_F32, f32(range(8)))])
info_at = len(b'GGUF') + 20 + len(ARCH)
add('bad_truncated_count.gguf', whole[:info_at + 12], 'error',
    'tensor count 1 cannot fit in the 12 bytes',
    'cut 12 bytes into the only tensor info')
two = gguf([ARCH], [('a' * 40, [8], T_F32, f32(range(8))),
                    ('b' * 40, [8], T_F32, f32(range(8)))])
add('bad_truncated_info.gguf', two[:info_at + 73 + 8 + 40 + 4 + 3], 'error',
    "tensor '" + 'b' * 40 + "': info at byte",
    'cut inside the second tensor info, in its dimensions')
padded = gguf([ARCH], [('e', [0], T_F32, b'')])
assert len(padded) % 32 == 0 and padded[-4:] == b'\0' * 4
add('bad_padding_past_end.gguf', padded[:-4], 'error',
    f'its padding to {len(padded)} runs past the end of the file',
    'an empty tensor, the padding after the header cut short')

# Every kind of string not UTF-8 at once, for stinfo --json and --check
# (tests/cli/stinfo_gguf_strings.sh): not a manifest row (four warnings).
with open(os.path.join(HERE, 'utf8_all.gguf'), 'wb') as f:
    f.write(gguf([ARCH, kv(b'bad.\xff\xfekey', STR, 'fine'),
                  kv('bad.value', STR, b'caf\xe9 \xc3'),
                  kv('bad.array', ARR, (STR, ['a', b'\x80b', b'\xf5\x80']))],
                 [(b't\xc0\xafx', [4], T_F32, f32([1, 2, 3, 4]))]))

with open(os.path.join(HERE, 'MANIFEST.tsv'), 'w') as f:
    f.write('# file\texpect\tmessage substring\twhat (made by '
            'gen_fixtures.py)\n')
    for name, expect, needle, what in FILES:
        if expect == 'ok':
            f.write(f'{name}\tok\t{what}\n')
        else:
            f.write(f'{name}\t{expect}\t{needle}\t{what}\n')

# ---- Q8_0: ggml's reference quantizer in numpy --------------------------------


def roundf(x):
    """C's roundf (half away from zero), exact in float32 as gguf-py's."""
    a = np.abs(x)
    fl = np.floor(a)
    b = fl + np.floor(np.float32(2) * (a - fl))
    return np.sign(x) * b


def q8_0(x):
    blocks = x.reshape(-1, 32).astype(np.float32)
    amax = np.abs(blocks).max(axis=1, keepdims=True)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide='ignore'):
        idd = np.where(d == 0, np.float32(0), np.float32(1) / d)
    idd = idd.astype(np.float32)
    q = roundf((blocks * idd).astype(np.float32)).astype(np.int8)
    out = np.zeros((blocks.shape[0], 34), np.uint8)
    with np.errstate(over='ignore'):
        d16 = d.astype('<f2')
    out[:, :2] = d16.view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    # Dividing instead of multiplying by the reciprocal rounds differently
    # in some blocks: the fixture must contain such blocks.
    qdiv = roundf(np.where(d == 0, np.float32(0),
                           (blocks / np.where(d == 0, 1, d)).astype(
                               np.float32))).astype(np.int8)
    deq = (q.astype(np.float32) * d16.astype(np.float32)).astype(np.float32)
    return out.tobytes(), deq, int((qdiv != q).any(axis=1).sum())


rng = np.random.default_rng(15)
src = (rng.standard_normal(512 * 32) *
       np.repeat(rng.uniform(0.01, 3.0, 512), 32)).astype(np.float32)
src[:32] = 0                       # an all-zero block: d = 0, id = 0
src[32:64] = np.arange(-16, 16) * np.float32(0.5)   # exact halves
src[64:96] = np.float32(1e7) * np.sign(np.arange(32) - 15.5)  # d is Inf in F16


def near_ties(rng, nblocks):
    """Blocks whose elements sit within a few ulps of (k + 1/2) * d, where
    x / d and x * (1 / d) can round to different integers."""
    out = []
    while len(out) < nblocks:
        amax = np.float32(rng.uniform(0.1, 10))
        d = np.float32(amax / np.float32(127))
        idd = np.float32(1) / d
        k = rng.integers(-126, 126, 4096).astype(np.float32)
        x = ((k + np.float32(0.5)) * d).astype(np.float32)
        x = np.nextafter(x, x + rng.choice([-1, 1], 4096) *
                         np.float32(1)).astype(np.float32)
        hit = x[roundf((x * idd).astype(np.float32)) !=
                roundf((x / d).astype(np.float32))]
        if len(hit) >= 8:
            blk = np.resize(hit, 32).astype(np.float32)
            blk[0] = amax
            out.append(blk)
    return np.concatenate(out)


src[96:96 + 8 * 32] = near_ties(rng, 8)
ref, deq, ndiff = q8_0(src)
assert ndiff > 0, 'no block where x/d and x*(1/d) round apart'
os.makedirs(os.path.join(HERE, 'q8_0'), exist_ok=True)
for name, blob in (('src.f32', src.astype('<f4').tobytes()),
                   ('ref.q8_0', ref),
                   ('deq.f32', deq.astype('<f4').tobytes())):
    with open(os.path.join(HERE, 'q8_0', name), 'wb') as f:
        f.write(blob)
print(f'{len(FILES)} files; q8_0: {len(src) // 32} blocks, {ndiff} where '
      'dividing would differ')
