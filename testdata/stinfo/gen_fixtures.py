#!/usr/bin/python3
"""Make the stinfo test fixtures in this directory (run it from anywhere).

Every file is built by hand (8-byte little-endian N, JSON header, data), not
with libst, so the tests compare the tool against an independent writer.
Valid files follow FORMAT.md's canonical layout: __metadata__ first,
tensors by descending dtype rank then name bytes, offsets contiguous from 0,
the header padded with spaces to a multiple of 8. Broken files say what
they break next to where they are made.

stats.expected holds the statistics numpy computes for stats.safetensors
(in float64, over the finite values; population std), one tensor a line:
    name min max mean std nan inf zeros
with "-" where a tensor has no finite value and "skip" for dtypes stinfo
does not summarise. The 8- and 4-bit float tensors hold every code of
their type; their values come from testdata/dtype/gen_f8.py (the OCP
formulas, not libst). Run with /usr/bin/python3 (numpy).
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "dtype"))
import gen_f8  # noqa: E402

# Canonical writer order (FORMAT.md), highest rank first.
ORDER = ["U64", "I64", "F64", "C64", "F32", "U32", "I32", "BF16", "F16",
         "U16", "I16", "F8_E5M2FNUZ", "F8_E4M3FNUZ", "F8_E8M0", "F8_E4M3",
         "F8_E5M2", "I8", "U8", "F6_E3M2", "F6_E2M3", "F4", "BOOL"]
RANK = {d: i for i, d in enumerate(ORDER)}


def bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even (NaN kept quiet)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    r[nan] = 0x7FC0
    return r


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def header_bytes(obj):
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    raw = text.encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def build(tensors, metadata=None, canonical=True):
    """tensors: list of (name, dtype, shape, data bytes). Returns file bytes."""
    if canonical:
        tensors = sorted(tensors, key=lambda t: (RANK[t[1]], t[0].encode()))
    hdr = {}
    if metadata is not None:
        hdr["__metadata__"] = metadata
    off = 0
    blobs = []
    for name, dtype, shape, data in tensors:
        hdr[name] = {"dtype": dtype, "shape": list(shape),
                     "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    return header_bytes(hdr) + b"".join(blobs)


def raw_file(header_text, data=b""):
    """A file from literal header text (for broken headers), unpadded."""
    raw = header_text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw + data


def write(rel, data):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def f32(rng, *shape):
    return rng.standard_normal(shape).astype("<f4").tobytes()


def tiny_tensors(rng):
    """A GPT-2-like toy: six layers with repeats, gaps and a dtype change."""
    t = [("wte.weight", "F32", [16, 4], f32(rng, 16, 4)),
         ("wpe.weight", "F32", [8, 4], f32(rng, 8, 4)),
         ("ln_f.weight", "F32", [4], f32(rng, 4)),
         ("step", "I64", [], struct.pack("<q", 1234))]
    for i in range(6):
        t.append((f"h.{i}.ln_1.weight", "F32", [4], f32(rng, 4)))
        t.append((f"h.{i}.attn.c_attn.weight", "F32", [4, 12], f32(rng, 4, 12)))
        if i != 4:  # layer 4 has no attn.bias buffer: h.{0..3,5}
            t.append((f"h.{i}.attn.bias", "F32", [1, 1, 8, 8], f32(rng, 1, 1, 8, 8)))
        # c_fc alternates dtype: h.{0,2,5} F32 and h.{1,3,4} BF16.
        if i in (0, 2, 5):
            t.append((f"h.{i}.mlp.c_fc.weight", "F32", [4, 16], f32(rng, 4, 16)))
        else:
            bits = bf16_bits(rng.standard_normal(64).astype(np.float32))
            t.append((f"h.{i}.mlp.c_fc.weight", "BF16", [4, 16],
                      bits.astype("<u2").tobytes()))
    return t


def make_valid(rng):
    meta = {"format": "pt", "note": "made by gen_fixtures.py"}
    tiny = build(tiny_tensors(rng), meta)
    write("tiny.safetensors", tiny)

    # Names that need escaping: control bytes, NUL, quotes, backslash,
    # non-ASCII, the empty name. Metadata with a newline and a long value.
    names = [("", "F32", [1], f32(rng, 1)),
             ("tab\there", "F32", [1], f32(rng, 1)),
             ("nul\x00byte", "F32", [1], f32(rng, 1)),
             ("line\nbreak", "F32", [1], f32(rng, 1)),
             ('quote"back\\slash', "F32", [1], f32(rng, 1)),
             ("gewicht.äöü.权重", "F32", [2], f32(rng, 2)),
             ("del\x7fchar", "U8", [3], bytes([1, 2, 3]))]
    write("names.safetensors",
          build(names, {"format": "pt", "multi\nline": "a\tb\"c\\d",
                        "long": "x" * 250 + "é" * 10}))

    # Mixture of experts: layers 0 and 1 have experts 0..3, layer 2 only
    # 0..2, so only layers {0,1} collapse over the full expert set.
    moe = []
    for layer, experts in ((0, 4), (1, 4), (2, 3)):
        for e in range(experts):
            moe.append((f"layers.{layer}.experts.{e}.w1", "F16", [2, 2],
                        rng.standard_normal(4).astype("<f2").tobytes()))
        moe.append((f"layers.{layer}.norm", "F32", [2], f32(rng, 2)))
    # Leading zeros are text, not integers: never merged with "1".
    moe.append(("blk.01.w", "F32", [2], f32(rng, 2)))
    moe.append(("blk.1.w", "F32", [2], f32(rng, 2)))
    write("moe.safetensors", build(moe, {"format": "pt"}))

    # No metadata at all; an empty tensor; every dtype's name.
    dts = [("empty", "F32", [0, 3], b""),
           ("scalar", "F64", [], struct.pack("<d", 2.5)),
           ("c", "C64", [2], b"\0" * 16),
           ("e4m3", "F8_E4M3", [4], b"\1\2\3\4"),
           ("e8m0", "F8_E8M0", [2], b"\1\2"),
           ("f4", "F4", [4], b"\x12\x34"),
           ("f6", "F6_E2M3", [4], b"\0\0\0"),
           ("flag", "BOOL", [3], b"\1\0\1"),
           ("u16", "U16", [2], b"\1\0\2\0")]
    write("dtypes.safetensors", build(dts, None))

    # A sharded snapshot: two shards, an index, a config file.
    tensors = tiny_tensors(np.random.default_rng(7))
    tensors = sorted(tensors, key=lambda t: t[0])
    half = len(tensors) // 2
    shards = [tensors[:half], tensors[half:]]
    weight_map = {}
    total = 0
    for i, part in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write(f"snap/{name}", build(part, {"format": "pt"}))
        for t in part:
            weight_map[t[0]] = name
            total += len(t[3])
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    write("snap/model.safetensors.index.json",
          (json.dumps(index, indent=2, sort_keys=True) + "\n").encode())
    write("snap/config.json", b'{"model_type": "gpt2"}\n')
    return tiny, shards, weight_map, total


def make_broken(tiny, shards, weight_map, total):
    ok = build([("a", "F32", [2], b"\0" * 8)], {"format": "pt"})
    bad = os.path.join("bad", "")
    # Shorter than the 8-byte length prefix (rule 1).
    write(bad + "short.safetensors", b"\x10\0\0\0\0")
    # The last 10 data bytes are missing (rule 13: truncated download).
    write(bad + "truncated.safetensors", tiny[:-10])
    # 16 bytes after the last tensor (rule 13: how polyglot files hide).
    write(bad + "trailing.safetensors", tiny + b"\0" * 16)
    # A git-lfs pointer saved instead of the weights (clone without LFS).
    write(bad + "lfs-pointer.safetensors",
          b"version https://git-lfs.github.com/spec/v1\n"
          b"oid sha256:248dfc3911869ec493c76e65bf2fcf7f615828b0254c12b473182f0f81d3a707\n"
          b"size 548105171\n")
    # An HTML page saved instead of the file (a login or error page).
    write(bad + "html.safetensors",
          b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>"
          b"<body>Not Found</body></html>\n")
    # N = 100,000,001: over the limit, checked before the file size (rule 2).
    write(bad + "huge-header.safetensors", struct.pack("<Q", 100000001) + b"{}")
    # A lowercase dtype (rule 7: names are case-sensitive).
    write(bad + "bad-dtype.safetensors",
          raw_file('{"a":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}}', b"\0" * 8))
    # Two tensors share bytes [4, 8) (rule 9: no overlaps).
    write(bad + "overlap.safetensors",
          raw_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                   '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', b"\0" * 12))
    # The offsets hold 12 bytes, the shape needs 8 (rule 12).
    write(bad + "size-mismatch.safetensors",
          raw_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}}', b"\0" * 12))
    # The same key twice (rule 14).
    write(bad + "duplicate.safetensors",
          raw_file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                   '"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b"\0" * 4))
    # A metadata value that is a number (rule 6).
    write(bad + "meta-number.safetensors",
          raw_file('{"__metadata__":{"format":1},'
                   '"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b"\0" * 4))
    # Several problems in one file, for --check to list each: a bad dtype,
    # a negative dimension and a float offset.
    write(bad + "several.safetensors",
          raw_file('{"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]},'
                   '"b":{"dtype":"F32","shape":[-1],"data_offsets":[4,8]},'
                   '"c":{"dtype":"F32","shape":[1],"data_offsets":[8,12.0]}}',
                   b"\0" * 12))
    # Invalid JSON: the header stops in the middle of a string.
    write(bad + "bad-json.safetensors", raw_file('{"a":{"dtype":"F3'))
    # Legal, but with a field readers ignore: a warning, not an error.
    write("unknown-field.safetensors",
          raw_file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],'
                   '"quant":"none"}}', b"\0" * 8))

    def snapshot(folder, files, index):
        for name, data in files.items():
            write(f"{bad}{folder}/{name}", data)
        write(f"{bad}{folder}/model.safetensors.index.json",
              (json.dumps(index, indent=2, sort_keys=True) + "\n").encode())

    names = [f"model-{i + 1:05d}-of-00002.safetensors" for i in range(2)]
    shard0 = build(shards[0], {"format": "pt"})
    shard1 = build(shards[1], {"format": "pt"})
    # The second shard is missing (I3/I5).
    snapshot("snap-missing-shard", {names[0]: shard0},
             {"metadata": {"total_size": total}, "weight_map": weight_map})
    # total_size is 1 more than the tensors' bytes (I4).
    snapshot("snap-total-size", {names[0]: shard0, names[1]: shard1},
             {"metadata": {"total_size": total + 1}, "weight_map": weight_map})
    # A shard name that leaves the directory (I2).
    wm = dict(weight_map)
    wm[next(iter(wm))] = "../tiny.safetensors"
    snapshot("snap-escape", {names[0]: shard0, names[1]: shard1},
             {"metadata": {"total_size": total}, "weight_map": wm})
    # One tensor of the shards is not listed in weight_map (I3).
    wm = dict(weight_map)
    del wm[sorted(wm)[0]]
    snapshot("snap-unlisted", {names[0]: shard0, names[1]: shard1},
             {"metadata": {"total_size": total}, "weight_map": wm})
    # The second shard is itself broken: truncated (I5).
    snapshot("snap-bad-shard", {names[0]: shard0, names[1]: shard1[:-4]},
             {"metadata": {"total_size": total}, "weight_map": weight_map})
    # A snapshot directory with two files and no index: ambiguous.
    write(bad + "two-files/a.safetensors", ok)
    write(bad + "two-files/b.safetensors", ok)


def stats_fixture(rng):
    """Tensors of many dtypes with NaN, Inf and zeros, and numpy's answers."""
    t = []  # (name, dtype, shape, bytes, float64 values or None)

    def add(name, dtype, arr, store, shape=None):
        shape = list(arr.shape) if shape is None else shape
        t.append((name, dtype, shape, store, arr))

    x = rng.standard_normal(1000).astype(np.float32) * 3 + 1
    x[[5, 17, 300]] = 0
    x[7] = np.nan
    x[[8, 9]] = [np.inf, -np.inf]
    x[600] = -0.0
    add("f32.mixed", "F32", x, x.astype("<f4").tobytes())
    # A large offset and a small spread: a naive sum of squares loses it.
    y = (1e6 + rng.standard_normal(777) * 1e-3).astype(np.float64)
    add("f64.offset", "F64", y, y.astype("<f8").tobytes())
    h = (rng.standard_normal(500) * 100).astype(np.float16)
    h[[1, 2]] = [np.inf, np.nan]
    h[3] = -np.inf
    add("f16.values", "F16", h, h.astype("<f2").tobytes())
    b = rng.standard_normal(513).astype(np.float32) * 1e3
    b[0] = np.nan
    b[1] = 0
    bb = bf16_bits(b)
    add("bf16.values", "BF16", bf16_values(bb), bb.astype("<u2").tobytes())
    i32 = rng.integers(-2**31, 2**31, 200, dtype=np.int64).astype(np.int32)
    i32[0] = 0
    add("i32.values", "I32", i32, i32.astype("<i4").tobytes())
    u8 = rng.integers(0, 256, 64, dtype=np.int64).astype(np.uint8)
    add("u8.values", "U8", u8, u8.tobytes())
    i8 = rng.integers(-128, 128, 64, dtype=np.int64).astype(np.int8)
    add("i8.values", "I8", i8, i8.tobytes())
    i64 = np.array([-5, 0, 7, 2**40, -(2**40)], dtype=np.int64)
    add("i64.values", "I64", i64, i64.astype("<i8").tobytes())
    u16 = np.array([0, 1, 65535, 300], dtype=np.uint16)
    add("u16.values", "U16", u16, u16.astype("<u2").tobytes())
    flag = (rng.random(40) < 0.3)
    add("bool.flags", "BOOL", flag.astype(np.uint8), flag.astype(np.uint8).tobytes())
    add("f32.empty", "F32", np.zeros((0, 3), np.float32), b"")
    add("f32.scalar", "F32", np.array(-4.5, np.float32),
        np.array(-4.5, "<f4").tobytes(), shape=[])
    add("f32.allnan", "F32", np.array([np.nan, np.inf, np.nan], np.float32),
        np.array([np.nan, np.inf, np.nan], "<f4").tobytes())
    # 8- and 4-bit floats: every code, decoded by the OCP formulas.
    def decoded(dtype, codes):
        v = [gen_f8.value(dtype, int(c)) for c in codes]
        return np.array([np.nan if x is None else x for x in v], np.float64)
    add("f8.e4m3", "F8_E4M3", decoded("F8_E4M3", b"\x38\x40\x00\x80"),
        b"\x38\x40\x00\x80")
    every = bytes(range(256))
    for dtype in ("F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0"):
        add("codes." + dtype.lower(), dtype, decoded(dtype, every), every)
    # F4: two codes a byte, element 2i in the low nibble (float4_e2m1fn_x2).
    nibbles = [n for b in every for n in (b & 15, b >> 4)]
    add("codes.f4", "F4", decoded("F4", nibbles), every, shape=[512])
    big = rng.standard_normal(4099).astype(np.float32) - 2
    add("f32.big", "F32", big, big.astype("<f4").tobytes())

    write("stats.safetensors",
          build([(n, d, s, data) for n, d, s, data, _ in t], {"format": "pt"}))
    lines = []
    for name, dtype, shape, data, arr in sorted(t, key=lambda v: v[0]):
        if arr is None:
            lines.append(f"{name} skip")
            continue
        v = np.asarray(arr).astype(np.float64).ravel()
        fin = v[np.isfinite(v)]
        nan = int(np.isnan(v).sum())
        inf = int(np.isinf(v).sum())
        zeros = int((v == 0).sum())
        if fin.size:
            stats = [repr(float(fin.min())), repr(float(fin.max())),
                     repr(float(fin.mean())), repr(float(fin.std()))]
        else:
            stats = ["-"] * 4
        lines.append(" ".join([name] + stats + [str(nan), str(inf), str(zeros)]))
    write("stats.expected", ("\n".join(lines) + "\n").encode())


def main():
    rng = np.random.default_rng(2024)
    tiny, shards, weight_map, total = make_valid(rng)
    make_broken(tiny, shards, weight_map, total)
    stats_fixture(np.random.default_rng(99))
    return 0


if __name__ == "__main__":
    sys.exit(main())
