#!/usr/bin/python3
"""Generate the PyTorch reference fixtures for tests/check_dtype.c.

Run with the system Python that has torch and numpy:

    /usr/bin/python3 testdata/dtype/gen_dtype.py testdata/dtype

The inputs are not stored. Both this script and the C test make them with
the same generator (splitmix64 of a seed and the index, mapped to raw bit
patterns or to one of several classes of interesting values), so only what
PyTorch computed from them is stored:

digests.txt   one line per (source, target, chunk):
                  SRC DST CHUNK FIRST COUNT DIGEST OVERFLOW UNDERFLOW
              DIGEST is sum_i splitmix64(out_i, FIRST + i) mod 2^64 over the
              chunk, with every NaN output replaced by the canonical NaN of
              its type (F16 0x7E00, BF16 0x7FC0, F32 0x7FC00000, F64
              0x7FF8000000000000): NaN outputs are compared by NaN-ness only,
              everything else bit for bit. OVERFLOW counts finite inputs
              that became +-Inf, UNDERFLOW non-zero inputs that became +-0,
              both computed with numpy from PyTorch's output. SRC "F16>F32"
              means every F16 pattern widened to F32 and narrowed back.
samples.txt   SRC DST INPUT OUTPUT (hex bits): special values and the first
              inputs of every class, so that a failing test can name a value.

Streams (the C test has the same constants):
  F32  2^22 inputs, seed 0x5EED0032, chunks of 2^16
  F64  2^21 inputs, seeds 0x5EED0064 (value) and 0x5EED0065 (class)
  F16, BF16: all 65,536 patterns, chunks of 2^12
"""
import os
import sys

import numpy as np
import torch

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)

F32_N = 1 << 22
F32_CHUNK = 1 << 16
F64_N = 1 << 21
F64_CHUNK = 1 << 16
H_CHUNK = 1 << 12
SEED_F32 = 0x5EED0032
SEED_F64 = 0x5EED0064
SEED_F64_CLASS = 0x5EED0065
SAMPLES_PER_CLASS = 24


def u64(x):
    return np.uint64(x)


def splitmix64(seed, idx):
    """splitmix64 of (seed + (idx + 1) * golden), vectorised; wraps mod 2^64."""
    with np.errstate(over="ignore"):
        z = (np.asarray(seed, dtype=np.uint64) + (idx.astype(np.uint64) + u64(1)) * GOLDEN)
        z = (z ^ (z >> u64(30))) * u64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> u64(27))) * u64(0x94D049BB133111EB)
        return z ^ (z >> u64(31))


F32_SPECIALS = [
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
    0x7F800001, 0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x7FFFFFFF, 0x7FA00000,
    0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
    0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x477FE000, 0x477FEFFF,
    0x477FF000, 0x477FF001, 0x38800000, 0x387FE000, 0x387FF000, 0x33800000,
    0x33000000, 0x33000001, 0x32FFFFFF, 0x7F7F7FFF, 0x7F7F8000, 0x7F7F8001,
    0x3F808000, 0x3F818000, 0x3F800FFF, 0x3F801000, 0x3F803000, 0x00008000,
    0x00018000, 0x00007FFF, 0x80008000, 0x47800000, 0xC77FF000, 0x33C00000,
]

F64_SPECIALS = [
    0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000,
    0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000,
    0x7FF0000000000001, 0xFFF0000000000001, 0x7FF7FFFFFFFFFFFF,
    0xFFFFFFFFFFFFFFFF, 0x7FF4000020000000, 0x7FF0000020000000,
    0x0000000000000001, 0x800FFFFFFFFFFFFF, 0x0010000000000000,
    0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 0x47EFFFFFE0000000,
    0x47EFFFFFEFFFFFFF, 0x47EFFFFFF0000000, 0x47EFFFFFF0000001,
    0x3810000000000000, 0x380FFFFFF0000000, 0x36A0000000000000,
    0x3690000000000000, 0x3690000000000001, 0x368FFFFFFFFFFFFF,
    0x3FF0000000000000, 0x3FF0020000000001, 0x3FF0020000000000,
    0x3FF0100000000001, 0x40EFFE0000000000, 0x40EFFDFFFFFFFFFF,
    0x40EFFDFFF0000000, 0x40EFFDFFEFFFFFFF, 0x3E70000000000000,
    0x3E60000000000000, 0x3E60000000000001, 0x47EFF00000000000,
    0x47EFEFFFF0000000, 0x3FF0000010000000, 0x3FF0000030000000,
]


def gen_f32(idx):
    """The F32 stream: uint32 bit patterns for the indices idx."""
    r = splitmix64(SEED_F32, idx)
    hi = (r >> u64(32)).astype(np.uint32)
    lo = (r & u64(0xFFFFFFFF)).astype(np.uint32)
    c = lo & 15
    sel = lo >> 4
    sign = hi & np.uint32(0x80000000)
    mant = hi & np.uint32(0x7FFFFF)
    out = hi.copy()  # classes 0-5: raw bits
    with np.errstate(over="ignore"):
        # 6: anywhere from below the F16 subnormals to past F16 overflow.
        e = np.uint32(101) + sel % np.uint32(44)
        v6 = sign | e << np.uint32(23) | mant
        # 7: F16 normal rounding ties and their neighbours.
        e = np.uint32(113) + sel % np.uint32(31)
        tie = np.array([0xFFF, 0x1000, 0x1001], dtype=np.uint32)[(sel >> np.uint32(12)) % np.uint32(3)]
        v7 = sign | e << np.uint32(23) | (hi & np.uint32(0x7FE000)) | tie
        # 8: F16 subnormal ties: the rounding bit moves with the exponent.
        e = np.uint32(102) + sel % np.uint32(11)
        shift = np.uint32(126) - e
        d = (sel >> np.uint32(12)) % np.uint32(3)
        low = (np.uint32(1) << (shift - np.uint32(1))) + d - np.uint32(1)
        m = ((hi & ~((np.uint32(1) << shift) - np.uint32(1))) | low) & np.uint32(0x7FFFFF)
        v8 = sign | e << np.uint32(23) | m
        # 9: BF16 ties and neighbours, any exponent.
        pat = np.array([0x7FFF, 0x8000, 0x8001, 0x0000, 0xFFFF], dtype=np.uint32)[sel % np.uint32(5)]
        v9 = (hi & np.uint32(0xFFFF0000)) | pat
        # 10: around the F16 overflow threshold 65520.
        v10 = sign | (np.uint32(0x477FF000) + sel % np.uint32(8193) - np.uint32(4096))
        # 11: around the BF16 overflow threshold, up to Inf.
        v11 = sign | (np.uint32(0x7F7F8000) + sel % np.uint32(65537) - np.uint32(32768))
        # 12: NaNs with random payloads, both signs, quiet and signalling.
        v12 = sign | np.uint32(0x7F800000) | np.where(mant == 0, np.uint32(1), mant)
        # 13: the special values.
        v13 = np.array(F32_SPECIALS, dtype=np.uint32)[sel % np.uint32(len(F32_SPECIALS))]
        # 14: F32 subnormals and the smallest normals.
        v14 = sign | (sel % np.uint32(3)) << np.uint32(23) | mant
        # 15: around the F16 normal/subnormal boundary 2^-14.
        v15 = sign | (np.uint32(0x38800000) + sel % np.uint32(16385) - np.uint32(8192))
    for k, v in ((6, v6), (7, v7), (8, v8), (9, v9), (10, v10), (11, v11), (12, v12),
                 (13, v13), (14, v14), (15, v15)):
        out = np.where(c == k, v, out)
    return out.astype(np.uint32), c


def gen_f64(idx):
    """The F64 stream: uint64 bit patterns for the indices idx."""
    r = splitmix64(SEED_F64, idx)
    r2 = splitmix64(SEED_F64_CLASS, idx)
    c = r2 & u64(15)
    t = r2 >> u64(4)
    sign = r & u64(0x8000000000000000)
    m52 = u64(0xFFFFFFFFFFFFF)
    mant = r & m52
    out = r.copy()  # classes 0-3: raw bits
    with np.errstate(over="ignore"):
        # 4: the whole F32 range and a little beyond both ends.
        e = u64(872) + t % u64(280)
        v4 = sign | e << u64(52) | mant
        # 5: F32 normal ties and neighbours.
        e = u64(897) + t % u64(254)
        pat = np.array([0x0FFFFFFF, 0x10000000, 0x10000001, 0, 0x1FFFFFFF],
                       dtype=np.uint64)[(t >> u64(16)) % u64(5)]
        v5 = sign | e << u64(52) | (mant & ~u64(0x1FFFFFFF)) | pat
        # 6: F32 subnormal ties.
        e = u64(873) + t % u64(24)
        shift = u64(926) - e
        d = (t >> u64(16)) % u64(3)
        low = (u64(1) << (shift - u64(1))) + d - u64(1)
        v6 = sign | e << u64(52) | (((r & ~((u64(1) << shift) - u64(1))) | low) & m52)
        # 7: F16 double rounding: near an F16 tie, within F32's reach.
        e = u64(998) + t % u64(41)
        mid = np.array([0x20000000000, 0x20000000001, 0x20010000000, 0x2000FFFFFFF,
                        0x1FFFFFFFFFF, 0x1FFF0000000, 0x1FFF0000001, 0x1FFEFFFFFFF],
                       dtype=np.uint64)[(t >> u64(16)) % u64(8)]
        v7 = sign | e << u64(52) | (mant & u64(0xFFC0000000000)) | mid
        # 8: BF16 double rounding, any exponent F32 can hold.
        e = u64(890) + t % u64(262)
        mid = np.array([0x100000000000, 0x100000000001, 0x100010000000, 0x10000FFFFFFF,
                        0x0FFFFFFFFFFF, 0x0FFFF0000000, 0x0FFFF0000001, 0x0FFFEFFFFFFF],
                       dtype=np.uint64)[(t >> u64(16)) % u64(8)]
        v8 = sign | e << u64(52) | (mant & u64(0xFE00000000000)) | mid
        # 9: around the F32 overflow threshold.
        v9 = sign | (u64(0x47EFFFFFF0000000) + t % u64(1 << 31) - u64(1 << 30))
        # 10: around the F16 overflow threshold 65520.
        v10 = sign | (u64(0x40EFFE0000000000) + t % u64(1 << 43) - u64(1 << 42))
        # 11: around the BF16 overflow threshold.
        v11 = sign | (u64(0x47EFF00000000000) + t % u64(1 << 45) - u64(1 << 44))
        # 12: NaNs with random payloads.
        v12 = sign | u64(0x7FF0000000000000) | np.where(mant == 0, u64(1), mant)
        # 13: the special values.
        v13 = np.array(F64_SPECIALS, dtype=np.uint64)[t % u64(len(F64_SPECIALS))]
        # 14: F64 subnormals and the smallest normals.
        v14 = sign | (t % u64(3)) << u64(52) | mant
        # 15: values F32 holds exactly.
        e = u64(897) + t % u64(254)
        v15 = sign | e << u64(52) | (mant & ~u64(0x1FFFFFFF))
    for k, v in ((4, v4), (5, v5), (6, v6), (7, v7), (8, v8), (9, v9), (10, v10), (11, v11),
                 (12, v12), (13, v13), (14, v14), (15, v15)):
        out = np.where(c == u64(k), v, out)
    return out.astype(np.uint64), c.astype(np.uint32)


# ---- torch conversion on raw bit patterns ----------------------------------

TORCH = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
NP_INT = {"F64": np.int64, "F32": np.int32, "F16": np.int16, "BF16": np.int16}
NP_UINT = {"F64": np.uint64, "F32": np.uint32, "F16": np.uint16, "BF16": np.uint16}
CANON_NAN = {"F64": 0x7FF8000000000000, "F32": 0x7FC00000, "F16": 0x7E00, "BF16": 0x7FC0}


def to_tensor(bits, t):
    return torch.from_numpy(bits.astype(NP_UINT[t]).view(NP_INT[t]).copy()).view(TORCH[t])


def from_tensor(x, t):
    return x.contiguous().view(TORCH_INT[t]).numpy().view(NP_UINT[t])


TORCH_INT = {"F64": torch.int64, "F32": torch.int32, "F16": torch.int16, "BF16": torch.int16}


def convert(bits, src, dst):
    """PyTorch's .to() on bit patterns; returns the output bit patterns."""
    return from_tensor(to_tensor(bits, src).to(TORCH[dst]), dst)


def as_f64(bits, t):
    """Values as numpy float64 (exact for every type), for the counts."""
    with np.errstate(invalid="ignore"):  # signalling NaNs are quieted
        return _as_f64(bits, t)


def _as_f64(bits, t):
    if t == "F64":
        return bits.astype(np.uint64).view(np.float64)
    if t == "F32":
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    if t == "F16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def is_nan(bits, t):
    return np.isnan(as_f64(bits, t))


def digest(out, t, first):
    canon = np.where(is_nan(out, t), np.uint64(CANON_NAN[t]), out.astype(np.uint64))
    idx = np.arange(first, first + len(out), dtype=np.uint64)
    with np.errstate(over="ignore"):
        return int(np.sum(splitmix64(canon, idx), dtype=np.uint64))


def counts(inp, src, out, dst):
    x = as_f64(inp, src)
    y = as_f64(out, dst)
    overflow = int(np.count_nonzero(np.isfinite(x) & np.isinf(y)))
    underflow = int(np.count_nonzero((x != 0) & ~np.isnan(x) & (y == 0)))
    return overflow, underflow


HEXW = {"F64": 16, "F32": 8, "F16": 4, "BF16": 4}


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    dig = []
    samples = []

    def add_digests(label, dst, inp, src, out, chunk):
        for c0 in range(0, len(inp), chunk):
            o = out[c0:c0 + chunk]
            ov, un = counts(inp[c0:c0 + chunk], src, o, dst)
            dig.append(f"{label} {dst} {c0 // chunk} {c0} {len(o)} "
                       f"{digest(o, dst, c0):016x} {ov} {un}")

    def add_samples(src, dst, inp, out, classes):
        picked = []
        if classes is None:
            picked = list(range(len(inp)))
        else:
            for k in range(16):
                picked += list(np.flatnonzero(classes == k)[:SAMPLES_PER_CLASS])
        for i in sorted(picked):
            samples.append(f"{src} {dst} {int(inp[i]):0{HEXW[src]}x} {int(out[i]):0{HEXW[dst]}x}")

    # F32 stream.
    f32, c32 = gen_f32(np.arange(F32_N, dtype=np.uint64))
    sp32 = np.array(F32_SPECIALS, dtype=np.uint32)
    for dst in ("F16", "BF16", "F64"):
        out = convert(f32, "F32", dst)
        add_digests("F32", dst, f32, "F32", out, F32_CHUNK)
        add_samples("F32", dst, f32, out, c32)
        add_samples("F32", dst, sp32, convert(sp32, "F32", dst), None)

    # F64 stream.
    f64, c64 = gen_f64(np.arange(F64_N, dtype=np.uint64))
    sp64 = np.array(F64_SPECIALS, dtype=np.uint64)
    for dst in ("F32", "F16", "BF16"):
        out = convert(f64, "F64", dst)
        add_digests("F64", dst, f64, "F64", out, F64_CHUNK)
        add_samples("F64", dst, f64, out, c64)
        add_samples("F64", dst, sp64, convert(sp64, "F64", dst), None)

    # Every F16 and BF16 pattern, to each other type and back through F32.
    allh = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for src, other in (("F16", "BF16"), ("BF16", "F16")):
        for dst in ("F32", other, "F64"):
            out = convert(allh, src, dst)
            add_digests(src, dst, allh, src, out, H_CHUNK)
        wide = convert(allh, src, "F32")
        back = convert(wide, "F32", src)
        add_digests(f"{src}>F32", src, allh, src, back, H_CHUNK)
        # Every 257th pattern, plus the NaN and subnormal boundaries.
        pick = sorted(set(range(0, 1 << 16, 257)) |
                      {0x0000, 0x0001, 0x03FF, 0x0400, 0x007F, 0x0080, 0x7BFF, 0x7C00,
                       0x7C01, 0x7DFF, 0x7E00, 0x7F7F, 0x7F80, 0x7F81, 0x7FBF, 0x7FC0,
                       0x7FFF, 0x8001, 0xFC01, 0xFF81, 0xFFFF})
        p = np.array(pick, dtype=np.uint16)
        for dst in ("F32", other, "F64"):
            add_samples(src, dst, p, convert(p, src, dst), None)

    with open(os.path.join(outdir, "digests.txt"), "w") as f:
        f.write("# SRC DST CHUNK FIRST COUNT DIGEST OVERFLOW UNDERFLOW "
                f"(torch {torch.__version__}, numpy {np.__version__}; gen_dtype.py)\n")
        f.write("\n".join(dig) + "\n")
    with open(os.path.join(outdir, "samples.txt"), "w") as f:
        f.write(f"# SRC DST INPUT OUTPUT (torch {torch.__version__}; gen_dtype.py)\n")
        f.write("\n".join(samples) + "\n")
    print(f"{len(dig)} digests, {len(samples)} samples")


if __name__ == "__main__":
    main()
