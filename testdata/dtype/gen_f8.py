#!/usr/bin/python3
"""Reference tables for the 8- and 4-bit float types (tests/check_dtype.c).

Run with the system Python that has numpy:

    /usr/bin/python3 testdata/dtype/gen_f8.py testdata/dtype

Written from the OCP 8-bit Floating Point Specification (OFP8, rev. 1.0)
and the OCP Microscaling Formats (MX) v1.0 specification, not from libst:
every value is computed from the format's fields with exact float64
arithmetic, and encoding is a nearest-value search over all the finite
values of the type (no bit tricks), so the two implementations share
nothing but the specification.

  E4M3 (e4m3fn)   bias 7, S.1111.111 NaN, no infinity, max 448
  E5M2            bias 15, S.11111.00 Inf, S.11111.{01,10,11} NaN, max 57344
  E4M3FNUZ        bias 8, 0x80 the only NaN, no -0, no infinity, max 240
  E5M2FNUZ        bias 16, likewise, max 57344
  E8M0            2^(b - 127), 0xFF NaN, no sign, no zero
  F4 (E2M1)       bias 1, +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, no Inf or NaN

f8_decode.txt   TYPE CODE F32 : every code of each type (16 for F4) and
                its value as F32 bits ("nan" for a NaN).
f8_encode.txt   TYPE F32 CODE : F32 inputs (hex bits) and their code under
                round to nearest, ties to even, finite values past the range
                saturating to +-max, +-Inf kept in E5M2 and NaN elsewhere,
                NaN "nan". Ties go to the code whose last bit is 0 (the even
                significand). E8M0 encodes |x|: the nearest power of two,
                a tie (significand 1.5) going to the larger, 0 and values
                below 2^-127 giving 2^-127, values past 2^127 saturating.
                Inputs: every value and its F32 neighbours, every midpoint
                between neighbouring values and its neighbours, the range
                edges, specials, and random bit patterns and values.
"""
import os
import sys

import numpy as np

FORMATS = {
    # name: (exponent bits, mantissa bits, bias, kind)
    "F8_E4M3": (4, 3, 7, "fn"),
    "F8_E5M2": (5, 2, 15, "ieee"),
    "F8_E4M3FNUZ": (4, 3, 8, "fnuz"),
    "F8_E5M2FNUZ": (5, 2, 16, "fnuz"),
}


def value(name, code):
    """The value of a code as a Python float (exact), or None for NaN."""
    if name == "F8_E8M0":
        return None if code == 0xFF else 2.0 ** (code - 127)
    if name == "F4":
        s, e, m = code >> 3 & 1, code >> 1 & 3, code & 1
        v = m * 0.5 if e == 0 else 2.0 ** (e - 1) * (1 + m / 2)
        return -v if s else v
    eb, mb, bias, kind = FORMATS[name]
    s, e, m = code >> 7, code >> mb & ((1 << eb) - 1), code & ((1 << mb) - 1)
    emax_field = (1 << eb) - 1
    if kind == "fnuz" and code == 0x80:
        return None
    if kind == "fn" and e == emax_field and m == (1 << mb) - 1:
        return None
    if kind == "ieee" and e == emax_field:
        if m:
            return None
        return -np.inf if s else np.inf
    if e == 0:
        v = m / 2 ** mb * 2.0 ** (1 - bias)
    else:
        v = (1 + m / 2 ** mb) * 2.0 ** (e - bias)
    return -v if s else v


def f32_bits(v):
    return int(np.array([v], dtype=np.float64).astype(np.float32).view(np.uint32)[0])


def bits_f64(bits):
    with np.errstate(invalid="ignore"):  # signalling NaNs are quieted
        return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(np.float64)


def finite_codes(name):
    """(magnitudes, codes) of the non-negative finite values, ascending."""
    mags, codes = [], []
    top = 256
    for c in range(top):
        v = value(name, c)
        if v is None or np.isinf(v) or (name != "F8_E8M0" and c & 0x80):
            continue
        mags.append(v)
        codes.append(c)
    order = np.argsort(mags, kind="stable")
    return np.array(mags)[order], np.array(codes)[order]


def encode(name, bits):
    """Codes for F32 bit patterns (numpy uint32 array); -1 for NaN."""
    x = bits_f64(bits)
    mags, codes = finite_codes(name)
    a = np.abs(x)
    neg = np.signbit(x)
    out = np.zeros(len(x), dtype=np.int64)
    # Nearest value: the candidates just below and above |x|.
    hi = np.clip(np.searchsorted(mags, a, side="left"), 0, len(mags) - 1)
    lo = np.clip(hi - 1, 0, len(mags) - 1)
    with np.errstate(invalid="ignore"):
        dlo = np.abs(a - mags[lo])
        dhi = np.abs(mags[hi] - a)
    if name == "F8_E8M0":
        tie_hi = np.ones(len(x), dtype=bool)  # significand 1.5 goes to 2
    else:
        tie_hi = (codes[hi] & 1) == 0
    pick_hi = (dhi < dlo) | ((dhi == dlo) & tie_hi)
    c = np.where(pick_hi, codes[hi], codes[lo])
    # Saturation: past the largest finite value (searchsorted clips to it).
    c = np.where(a >= mags[-1], codes[-1], c)
    if name == "F8_E8M0":
        c = np.where(a <= mags[0], codes[0], c)
        out = c
        out = np.where(np.isinf(x) | np.isnan(x), 0xFF, out)
        out = np.where(np.isnan(x), -1, out)
        return out
    if name == "F4":
        raise ValueError("F4 is not encoded")
    fnuz = FORMATS[name][3] == "fnuz"
    signed = np.where(neg & ~((c == 0) & fnuz), c | 0x80, c)
    out = signed
    kind = FORMATS[name][3]
    if kind == "ieee":
        out = np.where(np.isinf(x), np.where(neg, 0xFC, 0x7C), out)
    else:
        out = np.where(np.isinf(x), -1, out)  # Inf has no code: NaN
    out = np.where(np.isnan(x), -1, out)
    return out


def encode_inputs(name, rng):
    mags, _ = finite_codes(name)
    vals = set()
    m32 = np.array(mags, dtype=np.float64)
    for v in m32:
        b = f32_bits(v)
        vals.update({b, b + 1, b - 1 if b else 0})
    mids = (m32[:-1] + m32[1:]) / 2
    for v in mids:
        b = f32_bits(v)
        assert bits_f64([b])[0] == v, (name, v)  # midpoints are exact in F32
        vals.update({b - 1, b, b + 1})
    top = f32_bits(m32[-1])
    # Past the largest value: its would-be next neighbour's midpoint and on.
    for d in (1, 2, 3, 0x7FFF, 0x80000, 0x100000, 0x200000, 0x800000, 0x1000000):
        vals.add(top + d)
    low = f32_bits(m32[1]) if len(m32) > 1 else 1
    for d in range(1, 40):
        vals.add(max(low >> d, 0))
    vals.update({0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000,
                 0x7F800001, 0x7FA00000, 0x7FC00000, 0x7FE00000, 0x7FFFFFFF, 0x7F900000,
                 0x3F800000, 0x3FC00000, 0x40000000, 0x33800000, 0x1F800000})
    vals = {v & 0x7FFFFFFF for v in vals if 0 <= v < 1 << 32}
    both = sorted(vals | {v | 0x80000000 for v in vals})
    raw = rng.integers(0, 1 << 32, size=400, dtype=np.uint64).astype(np.uint32)
    lg = np.log2(m32[m32 > 0])
    e = rng.uniform(lg[0] - 3, lg[-1] + 2, size=600)
    with np.errstate(over="ignore"):  # past FLT_MAX: +-Inf, also an input
        ranged = (2.0 ** e * np.where(rng.integers(0, 2, 600) == 1, -1, 1)).astype(np.float32)
    arr = np.concatenate([np.array(both, dtype=np.uint32), raw, ranged.view(np.uint32)])
    return np.unique(arr)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(0x0F8)
    names = ["F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0"]
    with open(os.path.join(outdir, "f8_decode.txt"), "w") as f:
        f.write(f"# TYPE CODE F32 (numpy {np.__version__}; gen_f8.py)\n")
        for name in names + ["F4"]:
            for c in range(16 if name == "F4" else 256):
                v = value(name, c)
                if v is None:
                    f.write(f"{name} {c:02x} nan\n")
                else:
                    b = f32_bits(v)
                    assert bits_f64([b])[0] == v or np.isinf(v)
                    f.write(f"{name} {c:02x} {b:08x}\n")
    lines = 0
    with open(os.path.join(outdir, "f8_encode.txt"), "w") as f:
        f.write(f"# TYPE F32 CODE (numpy {np.__version__}; gen_f8.py)\n")
        for name in names:
            inp = encode_inputs(name, rng)
            out = encode(name, inp)
            for b, c in zip(inp, out):
                f.write(f"{name} {int(b):08x} {'nan' if c < 0 else format(int(c), '02x')}\n")
                lines += 1
    print(f"{lines} encode lines")


if __name__ == "__main__":
    main()
