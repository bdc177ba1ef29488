#!/usr/bin/env python3
"""Make the format fixtures: one small file per rule of FORMAT.md, valid and
invalid, each built byte by byte here (independently of libst), and
MANIFEST.tsv listing, for each file: the expected outcome (ok / error), a
substring the error message must contain, and what is broken.

Run from anywhere:  python3 testdata/format/gen_fixtures.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
rows = []


def put(name, blob, expect, needle, comment):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(blob)
    rows.append((name, expect, needle, comment))


def st(header, data=b"", pad=True, raw=None):
    """A file from a header (dict or raw bytes) and a data buffer."""
    h = raw if raw is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad and raw is None:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


T = lambda dt, shape, b, e: {"dtype": dt, "shape": shape, "data_offsets": [b, e]}

# ---- valid files -------------------------------------------------------------
put("ok_simple.safetensors", st({"w": T("F32", [2], 0, 8)}, f32(1.5, -2.0)),
    "ok", "", "one F32 tensor, the seed's hand-written example")
put("ok_empty_header.safetensors", st({}, pad=False), "ok", "",
    "no tensors at all: header {} and no data")
put("ok_metadata.safetensors",
    st({"__metadata__": {"format": "pt", "k": "v"}, "a": T("F16", [2, 2], 0, 8)}, b"\0" * 8),
    "ok", "", "metadata with two string entries")
put("ok_metadata_null.safetensors",
    st({"__metadata__": None, "a": T("U8", [3], 0, 3)}, b"abc"), "ok", "",
    "__metadata__ null counts as absent")
put("ok_scalar.safetensors", st({"s": T("F64", [], 0, 8)}, struct.pack("<d", 3.0)),
    "ok", "", "shape [] is a scalar of one element")
put("ok_empty_tensor.safetensors",
    st({"e": T("F32", [0, 5], 0, 0), "w": T("I64", [1], 0, 8)}, b"\1" * 8),
    "ok", "", "a 0 dimension gives an empty tensor with BEGIN == END")
put("ok_unordered.safetensors",
    st({"b": T("U8", [2], 2, 4), "a": T("U8", [2], 0, 2)}, b"abcd"),
    "ok", "", "header order differs from data order: allowed")
put("ok_leading_ws.safetensors", st(None, b"\0" * 4, raw=b'\n\t {"x":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}} \r\n'),
    "ok", "", "JSON whitespace before and after the object is accepted")
put("ok_no_padding.safetensors", st(None, b"\0\0", raw=b'{"x":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}'),
    "ok", "", "header length not a multiple of 8: allowed on read")
put("ok_unknown_field.safetensors", st(None, b"\0", raw=b'{"x":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1],"extra":[1,{"a":null}]}}'),
    "warning", "unknown field 'extra'", "an extra field in a tensor entry is ignored (a warning for --check)")
put("ok_nul_name.safetensors", st(None, b"\0\0", raw=b'{"a\\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}'),
    "ok", "", "names 'a\\0b' and 'a' differ only after a NUL: both kept")
put("ok_empty_name.safetensors", st(None, b"\0", raw=b'{"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
    "ok", "", "the empty string is a valid name")
put("ok_unicode_name.safetensors", st(None, b"\0", raw='{"h\u00e9\\u00e9\\ud83d\\ude00":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}'.encode()),
    "ok", "", "UTF-8 and escaped non-ASCII names, with a surrogate pair")
put("ok_subbyte.safetensors", st({"q": T("F4", [2, 3], 0, 3)}, b"\0" * 3),
    "ok", "", "F4 [2,3] is 24 bits = 3 bytes")
put("ok_f6.safetensors", st({"q": T("F6_E2M3", [4], 0, 3)}, b"\0" * 3),
    "ok", "", "F6 x4 is 24 bits = 3 bytes")
dtypes = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
          "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"]
sizes = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4,
         "F32": 4, "C64": 8, "F64": 8, "I64": 8, "U64": 8}
hdr, off = {}, 0
for d in dtypes:
    n = sizes.get(d, 1) * 3
    hdr["t_" + d] = T(d, [3], off, off + n)
    off += n
put("ok_all_dtypes.safetensors", st(hdr, b"\0" * off), "ok", "",
    "every byte-sized dtype of FORMAT.md once")
put("ok_n_limit.safetensors", st(None, raw=b"{}" + b" " * (100000000 - 2)) if False else b"",
    "skip", "", "placeholder")
rows.pop()
os.remove(os.path.join(HERE, "ok_n_limit.safetensors"))

# ---- rules 1-3: the length prefix --------------------------------------------
put("bad_empty.safetensors", b"", "error", "too short", "rule 1: an empty file")
put("bad_short.safetensors", b"\x02\0\0\0", "error", "too short", "rule 1: 4 bytes, less than 8")
put("bad_n_too_large.safetensors", struct.pack("<Q", 100000001) + b"{}",
    "error", "exceeds the limit", "rule 2: N = 10^8 + 1 is rejected before the size check")
put("bad_n_huge.safetensors", struct.pack("<Q", 2**64 - 1) + b"{}",
    "error", "exceeds the limit", "rule 2: N = 2^64-1 (8 + N would overflow)")
put("bad_n_past_eof.safetensors", struct.pack("<Q", 64) + b"{}",
    "error", "62 bytes missing", "rule 3: 8 + N is past the end of the file")
# ---- broken downloads ---------------------------------------------------------
put("bad_lfs_pointer.safetensors",
    b"version https://git-lfs.github.com/spec/v1\noid sha256:4d3c1a2b9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b\nsize 548105171\n",
    "error", "git-lfs pointer", "a git-lfs pointer file instead of the weights")
put("bad_html.safetensors",
    b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>Not Found</body></html>\n",
    "error", "HTML", "an HTML error page saved in place of the file")
put("bad_json_file.safetensors", b'{\n  "model_type": "gpt2"\n}\n', "error", "JSON text file",
    "a JSON text file (e.g. config.json) given as weights")
put("bad_truncated.safetensors", st({"w": T("F32", [4], 0, 16)}, f32(1, 2)),
    "error", "8 bytes missing", "rule 13: data cut short (truncated download)")
put("bad_trailing.safetensors", st({"w": T("F32", [2], 0, 8)}, f32(1, 2) + b"EXTRA!"),
    "error", "6 trailing bytes", "rule 13: bytes after the last tensor (polyglot files)")
# ---- rules 4-6: the JSON header ------------------------------------------------
put("bad_utf8.safetensors", st(None, b"\0", raw=b'{"\xff":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
    "error", "not valid UTF-8", "rule 4: a name with byte 0xff")
put("bad_overlong_utf8.safetensors", st(None, b"\0", raw=b'{"\xc0\xaf":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
    "error", "not valid UTF-8", "rule 4: an overlong encoding of '/'")
put("bad_nul_padding.safetensors", st(None, raw=b'{}\0\0\0\0\0\0'),
    "error", "NUL padding", "rule 5: NUL bytes after the object instead of spaces")
put("bad_bom.safetensors", st(None, raw=b'\xef\xbb\xbf{}   '),
    "error", "JSON object", "rule 5: a UTF-8 byte order mark before the object")
put("bad_two_values.safetensors", st(None, raw=b'{} {}   '),
    "error", "after the header object", "rule 5: a second JSON value")
put("bad_not_object.safetensors", st(None, raw=b'[1,2,3] '),
    "error", "JSON object", "rule 6: the header is an array")
put("bad_syntax.safetensors", st(None, raw=b'{"a":{"dtype":"U8",}}'),
    "error", "header JSON", "rule 5: a trailing comma (invalid JSON)")
put("bad_unterminated.safetensors", st(None, raw=b'{"a":{"dtype":"U8'),
    "error", "unterminated string", "rule 5: the header ends inside a string")
put("bad_lone_surrogate.safetensors", st(None, b"\0", raw=b'{"\\ud800":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
    "error", "surrogate", "rule 4: an escaped lone surrogate is not UTF-8")
put("bad_control_char.safetensors", st(None, b"\0", raw=b'{"a\nb":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
    "error", "control character", "rule 5: a raw newline inside a string")
put("bad_deep.safetensors", st(None, b"\0", raw=b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":' + b"[" * 10000 + b"]" * 10000 + b"}}"),
    "error", "too deep", "an ignored field nested 10000 deep: rejected, no stack overflow")
put("bad_meta_number.safetensors", st({"__metadata__": {"a": 1}, "w": T("U8", [1], 0, 1)}, b"\0"),
    "error", "is not a string", "rule 6: a metadata value that is a number")
put("bad_meta_array.safetensors", st({"__metadata__": ["a"], "w": T("U8", [1], 0, 1)}, b"\0"),
    "error", "__metadata__ is not an object", "rule 6: __metadata__ is an array")
put("bad_meta_twice.safetensors", st(None, b"\0", raw=b'{"__metadata__":{},"__metadata__":{},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
    "error", "more than once", "rule 6: __metadata__ twice")
put("bad_meta_dup_key.safetensors", st(None, b"\0", raw=b'{"__metadata__":{"a":"1","a":"2"},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
    "error", "duplicate key 'a'", "rule 14: a duplicate metadata key")
put("bad_entry_not_object.safetensors", st({"w": [1, 2]}), "error", "not an object",
    "rule 6: a tensor entry that is an array")
put("bad_missing_dtype.safetensors", st({"w": {"shape": [1], "data_offsets": [0, 1]}}, b"\0"),
    "error", "missing field 'dtype'", "rule 6: no dtype")
put("bad_missing_shape.safetensors", st({"w": {"dtype": "U8", "data_offsets": [0, 1]}}, b"\0"),
    "error", "missing field 'shape'", "rule 6: no shape")
put("bad_missing_offsets.safetensors", st({"w": {"dtype": "U8", "shape": [1]}}, b"\0"),
    "error", "missing field 'data_offsets'", "rule 6: no data_offsets")
put("bad_dtype_type.safetensors", st({"w": {"dtype": 4, "shape": [1], "data_offsets": [0, 1]}}, b"\0"),
    "error", "dtype is not a string", "rule 6: dtype is a number")
put("bad_dup_field.safetensors", st(None, b"\0", raw=b'{"w":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}}'),
    "error", "duplicate field 'dtype'", "rule 14: a field given twice")
# ---- rule 7: dtype names -------------------------------------------------------
put("bad_dtype_case.safetensors", st({"w": T("f32", [1], 0, 4)}, b"\0" * 4),
    "error", "unknown dtype 'f32'", "rule 7: dtype names are case-sensitive")
put("bad_dtype_unknown.safetensors", st({"w": T("F128", [1], 0, 16)}, b"\0" * 16),
    "error", "unknown dtype 'F128'", "rule 7: no such dtype")
# ---- rules 8, 10-12, 15: shapes and sizes --------------------------------------
put("bad_shape_negative.safetensors", st(None, b"\0", raw=b'{"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}'),
    "error", "is negative", "rule 8: a negative dimension")
put("bad_shape_float.safetensors", st(None, b"\0" * 4, raw=b'{"w":{"dtype":"U8","shape":[4.0],"data_offsets":[0,4]}}'),
    "error", "not an exact integer", "rule 15: 4.0 is not an integer")
put("bad_shape_exp.safetensors", st(None, b"\0" * 4, raw=b'{"w":{"dtype":"U8","shape":[4e0],"data_offsets":[0,4]}}'),
    "error", "not an exact integer", "rule 15: 4e0 is not an integer")
put("bad_shape_minus_zero.safetensors", st(None, raw=b'{"w":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}}'),
    "error", "is negative", "rule 15: -0 carries a sign")
put("bad_shape_string.safetensors", st(None, b"\0", raw=b'{"w":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}}'),
    "error", "not an integer", "rule 8: a dimension that is a string")
put("bad_shape_not_array.safetensors", st(None, b"\0", raw=b'{"w":{"dtype":"U8","shape":1,"data_offsets":[0,1]}}'),
    "error", "shape is not an array", "rule 8: shape is a number")
put("bad_shape_2_64.safetensors", st(None, raw=b'{"w":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}}'),
    "error", "does not fit in 64 bits", "rule 15: 2^64 cannot be represented")
put("bad_count_overflow.safetensors", st(None, raw=b'{"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}}'),
    "error", "more elements than 2^64", "rule 10: 2^32 x 2^32 elements overflow u64")
put("bad_bits_overflow.safetensors", st(None, raw=b'{"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}}'),
    "error", "more than 2^64 bits", "rule 10: 2^62 x 64 bits overflow u64")
put("bad_subbyte.safetensors", st({"q": T("F4", [3], 0, 2)}, b"\0" * 2),
    "error", "not a whole number of bytes", "rule 11: F4 x3 is 12 bits")
put("bad_size_mismatch.safetensors", st({"w": T("F32", [5, 6], 0, 100)}, b"\0" * 100),
    "error", "hold 100 bytes; F32 [5, 6] needs 120", "rule 12: END - BEGIN != count x size")
# ---- rule 9: offsets ------------------------------------------------------------
put("bad_offsets_three.safetensors", st(None, b"\0", raw=b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}'),
    "error", "has 3 entries", "rule 9: data_offsets with three numbers")
put("bad_offsets_reversed.safetensors", st({"w": T("U8", [0], 4, 0)}, b""),
    "error", "end before they begin", "rule 9: END < BEGIN")
put("bad_offsets_gap.safetensors", st({"a": T("U8", [2], 0, 2), "b": T("U8", [2], 3, 5)}, b"\0" * 5),
    "error", "gap of 1 bytes", "rule 9: one unused byte between tensors")
put("bad_offsets_start.safetensors", st({"a": T("U8", [2], 2, 4)}, b"\0" * 4),
    "error", "must begin at 0", "rule 9: the first tensor does not begin at 0")
put("bad_offsets_overlap.safetensors", st({"a": T("U8", [4], 0, 4), "b": T("U8", [4], 2, 6)}, b"\0" * 6),
    "error", "overlap tensor 'a'", "rule 9: two tensors share bytes")
put("bad_offsets_alias.safetensors", st({"a": T("U8", [4], 0, 4), "b": T("U8", [4], 0, 4)}, b"\0" * 4),
    "error", "overlap", "rule 9: two tensors with the same range (aliasing)")
put("bad_offsets_past_eof.safetensors", st({"a": T("U8", [4], 0, 4), "b": T("U8", [4], 4, 8)}, b"\0" * 6),
    "error", "2 bytes missing", "rules 9/13: the last tensor ends past the file")
put("bad_offsets_huge.safetensors", st(None, b"\0", raw=b'{"a":{"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}}'),
    "error", "must begin at 0", "rule 9: offsets near 2^64 (no overflow)")
# ---- rule 14: duplicates ----------------------------------------------------------
put("bad_dup_name.safetensors", st(None, b"\0\0", raw=b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}'),
    "error", "duplicate name", "rule 14: the same tensor name twice")
put("bad_dup_escaped.safetensors", st(None, b"\0\0", raw=b'{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"\\u0077":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}'),
    "error", "duplicate name", "rule 14: 'w' and '\\u0077' are the same name")
put("bad_many.safetensors", st(None, b"\0" * 8, raw=b'{"a":{"dtype":"X","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[2],"data_offsets":[0,1]},"c":{"dtype":"U8","shape":[1],"data_offsets":[5,6]}}'),
    "error", "unknown dtype 'X'", "three problems at once: bad dtype, size mismatch, gap/trailing (--check lists each)")
# ---- found by fuzzing (tests/fuzz) ---------------------------------------------------
put("bad_scalar_size.safetensors", st(None, b"\0" * 8, raw=b'{"s":{"dtype":"F64","shape":[],"data_offsets":[4,8]}}'),
    "error", "F64 [] needs 8", "rule 12 in a file of scalars only (no shape array at all: UBSan found NULL + 0)")
put("bad_meta_dup_three.safetensors", st(None, b"\0", raw=b'{"__metadata__":{"b":"1","a":"2","b":"3","a":"4","b":"5"},"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
    "error", "duplicate key 'b'", "rule 14: three of one metadata key, two of another (found by sorting)")

with open(os.path.join(HERE, "MANIFEST.tsv"), "w") as f:
    f.write("# file\texpect\tmessage substring\twhat is broken (made by gen_fixtures.py)\n")
    for r in rows:
        f.write("\t".join(r) + "\n")
print(len(rows), "fixtures")
