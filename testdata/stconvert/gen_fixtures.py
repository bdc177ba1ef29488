#!/usr/bin/python3
"""Make the stconvert test fixtures (run from anywhere: /usr/bin/python3 gen_fixtures.py).

Every safetensors file here is built by hand with struct and json, so the
fixtures do not depend on libst; every expected conversion comes from
PyTorch's Tensor.to() (Debian's python3-torch), so the tests check stconvert
against an independent reference, bit for bit.

Files made (all in this directory):
  mixed.safetensors             the input: every float dtype with special
                                values (ties, overflow, underflow, subnormals,
                                NaN, Inf) and random bit patterns, integer and
                                bool tensors, an F8 tensor, a scalar and an
                                empty tensor, written in a NON-canonical order
  mixed.canonical.safetensors   the same tensors written canonically (what
                                stconvert without --to must produce)
  mixed.{f64,f32,f16,bf16}.safetensors   expected output of --to
                                f64|f32|f16|bf16
  mixed.keep.safetensors        expected output of --to bf16 --keep '*ln_*'
                                --drop 'int.*' --metadata author=stconvert-test
                                --metadata source=override
  *.nan                         for each expected file: the byte ranges of its
                                NaN tensors ("BEGIN END DTYPE"), which the test
                                compares by NaN-ness only (PyTorch drops the
                                sign and payload of a NaN; FORMAT.md allows
                                libst to differ there)
  counts.txt                    expected overflow/underflow counts per tensor
                                and target ("TARGET NAME OVERFLOW UNDERFLOW")
  shards-bf16/                  expected --to bf16 --shard-size 3000 output:
                                the shards and model.safetensors.index.json,
                                split as huggingface_hub splits (with a .nan
                                file per shard)
  shards-none/                  expected --shard-size 3kB (no --to) output
  snap/                         a snapshot directory: config.json, tokenizer
                                files, a subdirectory, a fake pytorch_model.bin
                                and an F32 model.safetensors
  snap.config.bf16.json         expected snap config.json after --to bf16
  snap-sharded/                 a sharded snapshot (index + 2 shards), whose
                                config.json has no torch_dtype
  snap-sharded.config.f16.json  expected config.json after --to f16
  narrow.safetensors            the 8- and 4-bit floats without scales: every
                                code of F8_E4M3, F8_E5M2, F8_E8M0,
                                F8_E4M3FNUZ, F8_E5M2FNUZ (NaN codes in nan.*
                                tensors) and F4, a 2-D F8_E4M3 weight, and an
                                F6_E2M3 tensor (not decoded: copied)
  narrow.{f64,f32,f16,bf16}.safetensors  expected output of --to: each code's
                                value from the OCP specifications
                                (../dtype/gen_f8.py's value(), exact float64;
                                torch 1.13 has no float8), then PyTorch's
                                Tensor.to() from float64; per-tensor counts in
                                narrow.counts.txt

F8 and F4 values are exact in F64, F32, F16 and BF16, so the one rounding is
PyTorch's; only F8_E8M0 (2^-127 .. 2^127) overflows and underflows F16.
"""
import importlib.util
import json
import os
import shutil
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# st_dtype order of include/st/dtype.h: the canonical writer emits tensors by
# descending rank, then by name bytes (FORMAT.md).
RANK = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
        "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16",
        "I32", "U32", "F32", "C64", "F64", "I64", "U64"]
FLOATS = ("F64", "F32", "F16", "BF16")
TORCH = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
         "BF16": torch.bfloat16}
ITEM = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2}
TARGETS = {"f64": "F64", "f32": "F32", "f16": "F16", "bf16": "BF16"}
# The floats of fewer than 16 bits that stconvert --to decodes (not F6).
NARROW = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4")

# The OCP decoding of testdata/dtype (written from the specifications).
_spec = importlib.util.spec_from_file_location(
    "dtype_gen_f8", os.path.join(HERE, "..", "dtype", "gen_f8.py"))
ocp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ocp)

rng = np.random.default_rng(20240601)


class Tensor:
    def __init__(self, name, dtype, shape, data):
        self.name, self.dtype, self.shape, self.data = name, dtype, list(shape), bytes(data)


def header(meta, entries):
    """[u64 N][compact JSON padded with spaces to a multiple of 8]."""
    obj = {}
    if meta is not None:
        obj["__metadata__"] = dict(sorted(meta.items()))
    for name, dtype, shape, b, e in entries:
        obj[name] = {"dtype": dtype, "shape": shape, "data_offsets": [b, e]}
    js = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    js += b" " * ((-len(js)) % 8)
    return struct.pack("<Q", len(js)) + js


def canonical_order(tensors):
    return sorted(tensors, key=lambda t: (-RANK.index(t.dtype), t.name.encode()))


def write_canonical(path, meta, tensors):
    meta = dict(meta)
    meta.setdefault("format", "pt")
    entries, data, off = [], b"", 0
    ordered = canonical_order(tensors)
    for t in ordered:
        entries.append((t.name, t.dtype, t.shape, off, off + len(t.data)))
        data += t.data
        off += len(t.data)
    hdr = header(meta, entries)
    with open(path, "wb") as f:
        f.write(hdr + data)
    # NaN tensors' byte ranges within the file, for the NaN-aware compare.
    nan_ranges = []
    for (name, dtype, _, b, e) in entries:
        if name.startswith("nan.") and e > b:
            nan_ranges.append("%d %d %s" % (len(hdr) + b, len(hdr) + e, dtype))
    with open(path[: -len(".safetensors")] + ".nan", "w") as f:
        f.write("".join(r + "\n" for r in nan_ranges))
    return ordered


def write_scrambled(path, meta, tensors):
    """A valid but non-canonical file: data in reversed-name order, header
    keys in yet another order, metadata last."""
    data_order = sorted(tensors, key=lambda t: t.name.encode(), reverse=True)
    offs, data, off = {}, b"", 0
    for t in data_order:
        offs[t.name] = (off, off + len(t.data))
        data += t.data
        off += len(t.data)
    obj = {}
    for t in sorted(tensors, key=lambda t: (len(t.name), t.name)):
        obj[t.name] = {"shape": t.shape, "dtype": t.dtype,
                       "data_offsets": list(offs[t.name])}
    obj["__metadata__"] = meta
    js = json.dumps(obj, separators=(", ", ": "), ensure_ascii=False).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + data)


# ---- values -----------------------------------------------------------------

def f32(vals):
    return np.array(vals, dtype=np.float32)


def u32bits(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def non_nan_bits(dtype_bits, n, exp_mask, man_mask, width):
    """n random bit patterns that are not NaN."""
    out = []
    while len(out) < n:
        b = int(rng.integers(0, 1 << width, dtype=np.uint64))
        if (b & exp_mask) == exp_mask and (b & man_mask):
            continue
        out.append(b)
    return np.array(out, dtype=dtype_bits)


F32_SPECIAL = np.concatenate([
    f32([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 0.5, 3.0, -7.25, 1e-3]),
    u32bits([0x7F7FFFFF, 0xFF7FFFFF,        # max finite: BF16 overflow
             0x00800000, 0x80800000,        # smallest normal
             0x00000001, 0x80000001,        # smallest subnormal: BF16 underflow
             0x00400000, 0x007FFFFF,        # subnormals kept by BF16
             0x3F808000, 0x3F818000,        # BF16 ties: to even down, up
             0x3F808001, 0x3F807FFF,        # just above / below a BF16 tie
             0x7F7F8000, 0x7F7F7FFF,        # BF16: ties up to Inf / stays
             0x3F801000, 0x3F803000,        # F16 ties (to even down, up)
             0x477FEFFF, 0x477FF000,        # F16: 65519.99 stays, 65520 -> Inf
             0x47800000, 0xC7800000,        # 65536: F16 overflow
             0x33000000, 0x33000001,        # F16: 2^-25 ties to 0, above it not
             0x33800000, 0x387FC000,        # F16: smallest subnormal, largest
             0x38800000, 0x32000000,        # F16: smallest normal, 2^-27 -> 0
             0xB3000000, 0x00000010]),      # -2^-25 -> -0, tiny subnormal
    f32([65504.0, -65504.0, 1e5, -1e-9, 3.14159265, 6.1e-5, 1e38, -3e38]),
])
F32_RANDOM = np.concatenate([
    non_nan_bits(np.uint32, 512, 0x7F800000, 0x007FFFFF, 32).view(np.float32),
    (rng.standard_normal(256) * 0.02).astype(np.float32),
    (rng.standard_normal(128) * 3e4).astype(np.float32),
    (rng.standard_normal(128) * 1e-6).astype(np.float32),
])

# F64 values whose rounding via F32 differs from a direct rounding: PyTorch
# converts F64 to F16/BF16 through F32 (c10::Half and c10::BFloat16 are built
# from float), so the expected bits follow that double rounding.
F64_SPECIAL = np.array([
    0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, 1e300, -1e300, 1e-300, -1e-320,
    1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40,      # double-rounding cases
    1 + 2**-24, 1 + 2**-24 + 2**-60,              # F32 tie, just above it
    3.4028235677973366e38, 3.4028235677973366e38 * 1.0000001,
    1.401298464324817e-45, 7.006492321624085e-46, 7.1e-46,
    65519.999, 65520.0, 2.0**-25, 2.0**-25 * 1.0000001, 0.1, 1 / 3,
], dtype=np.float64)
F64_RANDOM = np.concatenate([
    non_nan_bits(np.uint64, 96, 0x7FF0000000000000, 0x000FFFFFFFFFFFFF, 64).view(np.float64),
    rng.standard_normal(96) * 100.0,
    rng.standard_normal(64) * 1e-40,
])

F16_SPECIAL = np.array([0x0000, 0x8000, 0x3C00, 0x7C00, 0xFC00, 0x7BFF, 0xFBFF,
                        0x0001, 0x8001, 0x03FF, 0x0400, 0x3555, 0x5BFF, 0x7800],
                       dtype=np.uint16)
F16_RANDOM = np.concatenate([F16_SPECIAL,
                             non_nan_bits(np.uint16, 1024, 0x7C00, 0x03FF, 16)])
BF16_SPECIAL = np.array([0x0000, 0x8000, 0x3F80, 0x7F80, 0xFF80, 0x7F7F, 0xFF7F,
                         0x0001, 0x8001, 0x007F, 0x0080, 0x477F, 0x4780, 0x3380,
                         0x3300, 0x3301, 0x387F, 0x3F81, 0x3D4D],
                        dtype=np.uint16)
BF16_RANDOM = np.concatenate([BF16_SPECIAL,
                              non_nan_bits(np.uint16, 1024, 0x7F80, 0x007F, 16)])

NAN_F32 = u32bits([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x7FC12345])
NAN_F64 = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                    0x7FF7FFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF], dtype=np.uint64).view(np.float64)
NAN_F16 = np.array([0x7E00, 0xFE00, 0x7C01, 0x7DFF, 0xFFFF], dtype=np.uint16)
NAN_BF16 = np.array([0x7FC0, 0xFFC0, 0x7F81, 0x7FBF, 0xFFFF], dtype=np.uint16)


def to_torch(dtype, arr):
    if dtype == "BF16":
        return torch.from_numpy(arr.astype(np.uint16).view(np.int16).copy()).view(torch.bfloat16)
    if dtype == "F16":
        return torch.from_numpy(arr.astype(np.uint16).view(np.float16).copy())
    return torch.from_numpy(arr.copy())


def tbytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def ft(name, dtype, arr, shape=None):
    t = to_torch(dtype, arr)
    return Tensor(name, dtype, shape if shape is not None else [t.numel()], tbytes(t)), t


def narrow_tensor(name, dtype, codes, shape=None):
    """A tensor of 8- or 4-bit codes (F4: two a byte, element 2i in the low
    nibble) and its values as a float64 torch tensor."""
    vals = [ocp.value(dtype, c) for c in codes]
    vals = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
    if dtype == "F4":
        data = bytes(codes[i] | codes[i + 1] << 4 for i in range(0, len(codes), 2))
    else:
        data = bytes(codes)
    shape = shape if shape is not None else [len(codes)]
    return Tensor(name, dtype, shape, data), torch.from_numpy(vals).reshape(shape)


def build_narrow():
    """The tensors of narrow.safetensors and their float64 values."""
    nrng = np.random.default_rng(20261201)  # not rng: mixed stays as it was
    tensors, floats = [], {}

    def add(name, dtype, codes, shape=None):
        t, v = narrow_tensor(name, dtype, codes, shape)
        tensors.append(t)
        floats[name] = (dtype, v)

    for dtype in NARROW[:5]:
        codes = list(range(256))
        is_nan = [ocp.value(dtype, c) is None for c in codes]
        low = dtype.lower().replace("_", ".")
        add(low, dtype, [c for c in codes if not is_nan[c]])
        add("nan." + low, dtype, [c for c in codes if is_nan[c]])
    add("f4", "F4", list(range(16)), [4, 4])
    weight = [int(c) for c in nrng.integers(0, 256, 32) if c & 0x7F != 0x7F][:24]
    add("h.0.attn.weight", "F8_E4M3", weight, [3, 8])
    tensors.append(Tensor("f6.e2m3", "F6_E2M3", [4], bytes([0x41, 0x10, 0x83])))
    return tensors, floats


def build_inputs():
    """The tensors of mixed.safetensors, and the torch views of float ones."""
    tensors, floats = [], {}

    def add_float(name, dtype, arr, shape=None):
        t, tt = ft(name, dtype, arr, shape)
        tensors.append(t)
        floats[name] = (dtype, tt.reshape(t.shape) if t.shape else tt.reshape(()))

    add_float("f32.special", "F32", F32_SPECIAL)
    add_float("f32.random", "F32", F32_RANDOM, [8, 128])
    add_float("f64.special", "F64", F64_SPECIAL)
    add_float("f64.random", "F64", F64_RANDOM, [16, 16])
    add_float("f16.random", "F16", F16_RANDOM, [2, 519])
    add_float("bf16.random", "BF16", BF16_RANDOM, [1043])
    add_float("nan.f32", "F32", NAN_F32)
    add_float("nan.f64", "F64", NAN_F64)
    add_float("nan.f16", "F16", NAN_F16)
    add_float("nan.bf16", "BF16", NAN_BF16)
    add_float("h.0.ln_1.weight", "F32", (1 + rng.standard_normal(48) * 0.1).astype(np.float32))
    add_float("h.0.ln_2.bias", "F16", np.array([0x3C01, 0x0001, 0x7BFF, 0x3555] * 4, np.uint16))
    add_float("scalar", "F32", f32([1.0 + 2**-9]), [])
    add_float("empty", "F32", np.zeros(0, np.float32), [0, 3])
    add_float("wte.ünïcode", "F64", np.array([1.5, -2**-30, 1e-50]), [3])

    tensors.append(Tensor("int.i64", "I64", [3], np.array([-1, 2**62, 7], np.int64).tobytes()))
    tensors.append(Tensor("int.i32", "I32", [2, 2], np.array([1, -2, 3, 2**31 - 1], np.int32).tobytes()))
    tensors.append(Tensor("int.u16", "U16", [3], np.array([0, 65535, 256], np.uint16).tobytes()))
    tensors.append(Tensor("int.i8", "I8", [4], np.array([-128, 0, 1, 127], np.int8).tobytes()))
    tensors.append(Tensor("int.u8", "U8", [5], bytes([0, 1, 128, 200, 255])))
    tensors.append(Tensor("mask", "BOOL", [2, 3], bytes([1, 0, 1, 1, 0, 0])))
    t, v = narrow_tensor("f8.e4m3", "F8_E4M3", [0x38, 0x40, 0x7E, 0xB8])
    tensors.append(t)
    floats[t.name] = ("F8_E4M3", v)
    return tensors, floats


def convert(tensors, floats, target, keep=(), drop=()):
    """What stconvert --to TARGET must write, and the per-tensor counts."""
    import fnmatch
    out, counts = [], []
    for t in tensors:
        if any(fnmatch.fnmatchcase(t.name, g) for g in drop):
            continue
        if (target is None or t.dtype not in FLOATS + NARROW
                or any(fnmatch.fnmatchcase(t.name, g) for g in keep)):
            out.append(t)
            continue
        src_dtype, src = floats[t.name]
        dst = src.to(TORCH[target])
        out.append(Tensor(t.name, target, t.shape, tbytes(dst)))
        s = src.double()
        d = dst.double()
        overflow = int((torch.isfinite(s) & torch.isinf(d)).sum())
        underflow = int(((s != 0) & ~torch.isnan(s) & (d == 0)).sum())
        counts.append((t.name, overflow, underflow))
    return out, counts


def hf_split(ordered, max_size):
    """huggingface_hub's split_state_dict_into_shards_factory (serialization/
    _base.py): walk the tensors in order; a tensor larger than max_size gets
    a shard of its own, appended at once (so before the shard being filled);
    otherwise start a new shard when the tensor would push the current one
    past max_size."""
    shards, cur, cur_size = [], [], 0
    for t in ordered:
        size = len(t.data)
        if size > max_size:
            shards.append([t])
            continue
        if cur_size + size > max_size:
            shards.append(cur)
            cur, cur_size = [], 0
        cur.append(t)
        cur_size += size
    if cur:
        shards.append(cur)
    return shards


def write_shards(dirname, meta, tensors, max_size):
    if os.path.isdir(dirname):
        shutil.rmtree(dirname)
    os.makedirs(dirname)
    meta = dict(meta)
    meta.setdefault("format", "pt")
    shards = hf_split(canonical_order(tensors), max_size)
    n = len(shards)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        name = "model-%05d-of-%05d.safetensors" % (i + 1, n)
        write_canonical(os.path.join(dirname, name), meta, shard)
        for t in shard:
            weight_map[t.name] = name
            total += len(t.data)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(dirname, "model.safetensors.index.json"), "w") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return n


CONFIG = """{
  "_name_or_path": "tiny-test",
  "architectures": [
    "GPT2LMHeadModel"
  ],
  "n_embd": 8,
  "text_config": {
    "torch_dtype": "float32",
    "vocab_size": 16
  },
  "torch_dtype": "float32",
  "transformers_version": "4.40.0",
  "note": "a \\"torch_dtype\\": \\"float32\\" inside a string stays"
}
"""

CONFIG_NO_DTYPE = """{"model_type": "gpt2", "n_layer": 1}
"""


def write_targets(stem, meta, tensors, floats, counts_name):
    """STEM.{f64,f32,f16,bf16}.safetensors, what --to makes of tensors, and
    the per-tensor counts in counts_name."""
    lines = []
    for target in ("f64", "f32", "f16", "bf16"):
        out, counts = convert(tensors, floats, TARGETS[target])
        write_canonical(os.path.join(HERE, "%s.%s.safetensors" % (stem, target)), meta, out)
        for name, o, u in counts:
            lines.append("%s %s %d %d\n" % (target, name, o, u))
    with open(os.path.join(HERE, counts_name), "w") as f:
        f.write("".join(lines))


def main():
    tensors, floats = build_inputs()
    meta = {"format": "pt", "source": "gen_fixtures.py"}
    write_scrambled(os.path.join(HERE, "mixed.safetensors"), meta, tensors)
    write_canonical(os.path.join(HERE, "mixed.canonical.safetensors"), meta, tensors)

    write_targets("mixed", meta, tensors, floats, "counts.txt")

    out, _ = convert(tensors, floats, "BF16", keep=("*ln_*",), drop=("int.*",))
    keep_meta = dict(meta, author="stconvert-test", source="override")
    write_canonical(os.path.join(HERE, "mixed.keep.safetensors"), keep_meta, out)

    out, _ = convert(tensors, floats, "BF16")
    n = write_shards(os.path.join(HERE, "shards-bf16"), meta, out, 3000)
    print("shards-bf16:", n, "shards")
    n = write_shards(os.path.join(HERE, "shards-none"), meta, tensors, 3000)
    print("shards-none:", n, "shards")

    ntensors, nfloats = build_narrow()
    write_scrambled(os.path.join(HERE, "narrow.safetensors"), meta, ntensors)
    write_targets("narrow", meta, ntensors, nfloats, "narrow.counts.txt")

    # A snapshot directory with an F32 model and the files around it.
    snap = os.path.join(HERE, "snap")
    if os.path.isdir(snap):
        shutil.rmtree(snap)
    os.makedirs(os.path.join(snap, "sub"))
    small = [t for t in tensors if t.name in ("f32.special", "int.i32", "h.0.ln_2.bias")]
    write_canonical(os.path.join(snap, "model.safetensors"), {"format": "pt"}, small)
    os.remove(os.path.join(snap, "model.nan"))
    with open(os.path.join(snap, "config.json"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(snap, "tokenizer_config.json"), "w") as f:
        f.write('{"model_max_length": 16}\n')
    with open(os.path.join(snap, "vocab.txt"), "w") as f:
        f.write("a\nb\nc\n")
    with open(os.path.join(snap, "sub", "README.md"), "w") as f:
        f.write("a file in a subdirectory\n")
    with open(os.path.join(snap, "pytorch_model.bin"), "wb") as f:
        f.write(b"PK\x03\x04 not a real PyTorch checkpoint, stconvert must not copy it\n")
    with open(os.path.join(HERE, "snap.config.bf16.json"), "w") as f:
        f.write(CONFIG.replace('"torch_dtype": "float32",\n    "vocab',
                               '"torch_dtype": "bfloat16",\n    "vocab')
                .replace('"torch_dtype": "float32",\n  "trans',
                         '"torch_dtype": "bfloat16",\n  "trans'))

    # A sharded snapshot: two shards and an index, config without torch_dtype.
    sharded = os.path.join(HERE, "snap-sharded")
    write_shards(sharded, {"format": "pt"}, small, 200)
    for f in os.listdir(sharded):
        if f.endswith(".nan"):
            os.remove(os.path.join(sharded, f))
    with open(os.path.join(sharded, "config.json"), "w") as f:
        f.write(CONFIG_NO_DTYPE)
    with open(os.path.join(HERE, "snap-sharded.config.f16.json"), "w") as f:
        f.write('{"model_type": "gpt2", "n_layer": 1, "torch_dtype": "float16"}\n')


if __name__ == "__main__":
    main()
