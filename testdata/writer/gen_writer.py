#!/usr/bin/env python3
"""Make the byte-exact expected files for tests/check_writer.c.

The bytes follow the reference writer (huggingface/safetensors,
safetensors/src/tensor.rs: prepare() and serialize()), re-implemented here
without libst:
  - tensors sorted by descending Dtype (the enum order of the reference:
    BOOL < F4 < F6_E2M3 < ... < U64), then by name (Rust String order = UTF-8
    bytes, a shorter prefix first);
  - data_offsets contiguous from 0 in that order;
  - the header serialized by serde_json compactly: "__metadata__" first,
    then the tensors, each {"dtype","shape","data_offsets"} in that field
    order; serde_json escapes only '"', '\\' and U+0000..U+001F (\\b \\t \\n
    \\f \\r short, the others \\u00xx lowercase), everything else raw UTF-8;
  - spaces appended up to a multiple of 8, N = the padded length.
Two decisions of libst, not of the reference: __metadata__ keys are sorted
by bytes (the reference keeps them in a HashMap, in random order), and
"format": "pt" is added when the caller does not set "format" (the
reference adds nothing; transformers always passes {"format": "pt"}).

Index files are what transformers' save_pretrained writes:
json.dumps(index, indent=2, sort_keys=True) + "\\n".

Tensor data: byte j of the k-th declared tensor of a case is
(k * 31 + j * 7 + 1) & 0xff; tests/check_writer.c uses the same rule.

Run: /usr/bin/python3 testdata/writer/gen_writer.py  (writes beside itself)
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# The reference Dtype enum in declaration order (its derived Ord), with bits.
DTYPES = [
    ("BOOL", 8), ("F4", 4), ("F6_E2M3", 6), ("F6_E3M2", 6), ("U8", 8),
    ("I8", 8), ("F8_E5M2", 8), ("F8_E4M3", 8), ("F8_E8M0", 8),
    ("F8_E4M3FNUZ", 8), ("F8_E5M2FNUZ", 8), ("I16", 16), ("U16", 16),
    ("F16", 16), ("BF16", 16), ("I32", 32), ("U32", 32), ("F32", 32),
    ("C64", 64), ("F64", 64), ("I64", 64), ("U64", 64),
]
RANK = {name: i for i, (name, _) in enumerate(DTYPES)}
BITS = dict(DTYPES)


def serde_string(s):
    """serde_json's string literal (format_escaped_str)."""
    short = {0x08: "\\b", 0x09: "\\t", 0x0a: "\\n", 0x0c: "\\f", 0x0d: "\\r"}
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append(short.get(o, "\\u%04x" % o))
        else:
            out.append(ch)
    out.append('"')
    r = "".join(out)
    # Python's json with ensure_ascii=False escapes the same set the same way.
    assert r == json.dumps(s, ensure_ascii=False), (s, r)
    return r


def nbytes(dtype, shape):
    n = 1
    for d in shape:
        n *= d
    bits = n * BITS[dtype]
    assert bits % 8 == 0, (dtype, shape)
    return bits // 8


def data_of(k, n):
    return bytes(((k * 31 + j * 7 + 1) & 0xFF) for j in range(n))


def serialize(tensors, meta_calls, default_format=True):
    """tensors: [(name, dtype, shape)] in declaration order.
    meta_calls: [(key, value)] in the order the caller sets them (a later
    value for the same key replaces the earlier one).
    Returns (file bytes, header length N)."""
    meta = {}
    if default_format:
        meta["format"] = "pt"
    for k, v in meta_calls:
        meta[k] = v
    order = sorted(range(len(tensors)),
                   key=lambda i: (-RANK[tensors[i][1]], tensors[i][0].encode()))
    entries, off = [], 0
    for i in order:
        name, dtype, shape = tensors[i]
        n = nbytes(dtype, shape)
        entries.append((name, dtype, shape, off, off + n))
        off += n

    parts = []
    if meta:
        keys = sorted(meta, key=lambda k: k.encode())
        parts.append('"__metadata__":{' + ",".join(
            serde_string(k) + ":" + serde_string(meta[k]) for k in keys) + "}")
    for name, dtype, shape, b, e in entries:
        parts.append(serde_string(name) + ':{"dtype":"%s","shape":[%s],'
                     '"data_offsets":[%d,%d]}'
                     % (dtype, ",".join(str(d) for d in shape), b, e))
    header = ("{" + ",".join(parts) + "}").encode()

    # Second path to the same bytes: Python's own serializer on the dict the
    # reference builds (insertion order = serialization order).
    doc = {}
    if meta:
        doc["__metadata__"] = {k: meta[k] for k in sorted(meta, key=lambda k: k.encode())}
    for name, dtype, shape, b, e in entries:
        doc[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [b, e]}
    assert header == json.dumps(doc, ensure_ascii=False,
                                separators=(",", ":")).encode()

    header += b" " * ((8 - len(header) % 8) % 8)
    body = b"".join(data_of(i, nbytes(tensors[i][1], tensors[i][2])) for i in order)
    return struct.pack("<Q", len(header)) + header + body, len(header)


def self_check():
    """The generator reproduces the reference's own test vectors
    (tensor.rs: test_serialization, test_serialization_forced_alignement,
    test_empty), written without metadata there."""
    def plain(tensors, meta=None):
        doc = {}
        if meta is not None:
            doc["__metadata__"] = meta
        off = 0
        for name, dtype, shape in sorted(tensors, key=lambda t: (-RANK[t[1]], t[0].encode())):
            n = nbytes(dtype, shape)
            doc[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
            off += n
        h = json.dumps(doc, separators=(",", ":")).encode()
        h += b" " * ((8 - len(h) % 8) % 8)
        return struct.pack("<Q", len(h)) + h

    ref1 = bytes([64, 0, 0, 0, 0, 0, 0, 0]) + \
        b'{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}'
    assert plain([("attn.0", "F32", [1, 2, 3])]) == ref1
    ref2 = bytes([72, 0, 0, 0, 0, 0, 0, 0]) + \
        b'{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}' + b" " * 7
    assert plain([("attn0", "F32", [1, 1, 2, 3])]) == ref2
    assert plain([]) == bytes([8, 0, 0, 0, 0, 0, 0, 0]) + b"{}" + b" " * 6
    assert plain([], {"framework": "pt"}) == bytes([40, 0, 0, 0, 0, 0, 0, 0]) + \
        b'{"__metadata__":{"framework":"pt"}}' + b" " * 5


# ---- the cases (mirrored in tests/check_writer.c) ----------------------------

CASES = {}

CASES["single_f32"] = ([("attn.0", "F32", [1, 2, 3])], [])

CASES["metadata_sorted"] = (
    [("w", "U8", [3])],
    [("zeta", "1"), ("alpha", "2"), ("format", "tf"), ("Beta", "3"),
     ("\u00e9", "4"), ("", "empty"), ("alphabet", "5"), ("format", "flax")])

CASES["format_default"] = ([("w", "I8", [2])], [("a", "b"), ("zz", "y")])

# One tensor per dtype; names ascend with rank ("ta" is BOOL, "tv" is U64),
# so name order alone would give the opposite of the dtype order. A second
# F32 and a second U8 show the name order inside one dtype.
_all = []
for i, (dt, bits) in enumerate(DTYPES):
    shape = {"F4": [2, 3], "F6_E2M3": [4], "F6_E3M2": [2, 4]}.get(dt, [2])
    _all.append(("t" + chr(ord("a") + i), dt, shape))
_all += [("a_f32", "F32", [3, 1]), ("z_u8", "U8", [5])]
# Declared out of order on purpose.
CASES["all_dtypes"] = (_all[5:] + _all[:5][::-1], [])

CASES["names_sorted"] = (
    [(n, "F16", [1]) for n in
     ["b", "a", "ab", "a\x00", "a\x00b", "", "B", "\u00e9", "\x7f", "a b",
      "~", "\U0001d11e", "aa", "A"]], [])

CASES["escapes"] = (
    [(n, "BF16", [1]) for n in
     ['quote"s', "back\\slash", "nl\n", "tab\t", "cr\r", "bs\b", "ff\f",
      "c1\x01", "c1f\x1f", "nul\x00end", "del\x7f", "slash/", "\u00fc",
      "emoji\U0001f600", "lt<gt>&amp", "ls\u2028"]],
    [('key"q', "va\\l\n"), ("ctl", "\x01\x1f"), ("\u00fc", "\U0001f600")])

CASES["empty_scalar"] = ([
    ("scalar_f64", "F64", []), ("empty_0x5", "F32", [0, 5]),
    ("empty_3x0", "F32", [3, 0]), ("scalar_bool", "BOOL", []),
    ("empty1d", "I32", [0]), ("f4_empty", "F4", [0]),
    ("ones", "U8", [1] * 10)], [])

CASES["no_tensors"] = ([], [])

CASES["shape_large"] = ([
    ("huge_empty", "U64", [0, 18446744073709551615]),
    ("wide_empty", "F32", [4294967296, 0])], [])

# Header padding 0..7: one U8 [1] tensor named "x" * k, k = 1..8.
PAD_CASES = {}
for k in range(1, 9):
    PAD_CASES["pad_%d" % k] = ([("x" * k, "U8", [1])], [])

# ---- index cases -------------------------------------------------------------

S1, S2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
INDEXES = {
    "index_basic": (1234, [("h.0.w", S1), ("h.1.w", S2), ("lm_head.weight", S2),
                           ("a", S1)], []),
    "index_escapes": (18446744073709551615, [
        ("\u00e9", S1), ("\U0001f600", S2), ('q"b\\', S1),
        ("ctl\x01\n\t\x7f", S2), ("nul\x00x", S1), ("", S2), ("Z", S1),
        ("ls\u2028", "mod\u00e8le-00001-of-00001.safetensors")],
        [("format", "pt"), ("zz", "last"), ("aa", "first"),
         ("total_sizf", "x"), ("total_siz", "y\u00e9\U0001f600")]),
    "index_empty": (0, [], []),
}


def main():
    self_check()
    pads = set()
    for name, (tensors, meta) in list(CASES.items()) + list(PAD_CASES.items()):
        data, n = serialize(tensors, meta)
        if name.startswith("pad_"):
            unpadded = len(data[8:8 + n].rstrip(b" "))
            pads.add(n - unpadded)
        with open(os.path.join(HERE, name + ".safetensors"), "wb") as f:
            f.write(data)
    assert pads == set(range(8)), pads

    for name, (total, entries, meta) in INDEXES.items():
        md = {"total_size": total}
        md.update(meta)
        index = {"metadata": md, "weight_map": dict(entries)}
        content = json.dumps(index, indent=2, sort_keys=True) + "\n"
        with open(os.path.join(HERE, name + ".json"), "w", encoding="utf-8",
                  newline="") as f:
            f.write(content)


if __name__ == "__main__":
    main()
