#!/usr/bin/python3
"""Make the stdiff test fixtures and the statistics numpy expects for them.

Run from anywhere with /usr/bin/python3 (numpy and torch needed):
    /usr/bin/python3 testdata/stdiff/gen_fixtures.py
It rewrites every file under testdata/stdiff/ (fixed seed: same bytes each
time). safetensors files are built by hand with struct and json, so the
fixtures do not depend on libst; BF16/F16 rounding comes from torch's .to(),
which is what stconvert must reproduce.

expected/<name>.txt holds, per compared tensor, the statistics stdiff must
report (one "tensor field value" line each), computed here with numpy in
float64 from the definitions in man/stdiff.1:
  - a NaN on both sides is equal (nan_equal); a NaN on one side is a
    mismatch and the worst element; magnitudes skip pairs with a NaN;
  - equal values (Inf == Inf included) differ by 0; Inf against anything
    else differs by Inf and is outside any tolerance;
  - max_rel_diff = max |a - b| / |b| over b != 0 (Inf when b is Inf);
  - mismatched: not (|a - b| <= atol + rtol * |b|);
  - worst_index: flat index of the largest |a - b| (NaN mismatches first,
    ties to the lowest index), null when no element differs;
  - exactly_encoded: the narrower float side equals the wider one rounded to
    its dtype (torch .to()), bitwise, NaN matching NaN; null for same dtype.
"""
import json
import os
import shutil
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
EXP = os.path.join(HERE, "expected")

NP = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
      "I16": "<i2", "I8": "i1", "U8": "u1", "U16": "<u2", "U32": "<u4",
      "U64": "<u8", "BOOL": "u1"}
TOL = {"F64": (1e-7, 1e-7), "F32": (1.3e-6, 1e-5), "F16": (1e-3, 1e-5),
       "BF16": (1.6e-2, 1e-5)}
FLOATS = ("F64", "F32", "F16", "BF16")
RANK = {"F64": 3, "F32": 2, "F16": 1, "BF16": 1}


class T:
    """A tensor: name, dtype name, shape, little-endian bytes."""

    def __init__(self, name, dtype, shape, data):
        self.name, self.dtype, self.shape, self.data = name, dtype, list(shape), data


def f32(name, arr):
    arr = np.asarray(arr, dtype="<f4")
    return T(name, "F32", arr.shape, arr.tobytes())


def from_torch(name, t):
    dt = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.float64: "F64"}[t.dtype]
    if dt == "BF16":
        raw = t.view(torch.int16).numpy().astype("<i2").tobytes()
    else:
        raw = t.numpy().astype(NP[dt]).tobytes()
    return T(name, dt, list(t.shape), raw)


def write_st(path, tensors, metadata=None):
    """A safetensors file: offsets in the order given, header space-padded."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    off = 0
    for t in tensors:
        header[t.name] = {"dtype": t.dtype, "shape": t.shape,
                          "data_offsets": [off, off + len(t.data)]}
        off += len(t.data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for t in tensors:
            f.write(t.data)


def write_index(path, shards, metadata_extra=None):
    wm = {}
    total = 0
    for fname, tensors in shards:
        for t in tensors:
            wm[t.name] = fname
            total += len(t.data)
    meta = {"total_size": total}
    with open(path, "w") as f:
        json.dump({"metadata": meta, "weight_map": dict(sorted(wm.items()))},
                  f, indent=2, sort_keys=True)
        f.write("\n")


# ---- reference statistics ---------------------------------------------------

def decode(t):
    """Values as float64 (floats exactly), or exact Python-int-able int64s."""
    if t.dtype == "BF16":
        u = np.frombuffer(t.data, dtype="<u2").astype(np.uint32) << 16
        return u.view("<f4").astype(np.float64)
    if t.dtype in ("U64",):
        return np.frombuffer(t.data, dtype="<u8")
    return np.frombuffer(t.data, dtype=NP[t.dtype]).astype(
        np.float64 if t.dtype in FLOATS else np.int64)


def to_torch(t):
    if t.dtype == "BF16":
        return torch.from_numpy(np.frombuffer(t.data, dtype="<i2").copy()).view(torch.bfloat16)
    return torch.from_numpy(np.frombuffer(t.data, dtype=NP[t.dtype]).copy())


def rounded_equal(ta, tb):
    if ta.dtype == tb.dtype or ta.dtype not in FLOATS or tb.dtype not in FLOATS:
        return None
    wide, narrow = (ta, tb) if RANK[ta.dtype] >= RANK[tb.dtype] else (tb, ta)
    tdt = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "F64": torch.float64}[narrow.dtype]
    r = to_torch(wide).to(tdt)
    n = to_torch(narrow)
    rn, nn = torch.isnan(r.to(torch.float64)), torch.isnan(n.to(torch.float64))
    rbits = r.view(torch.int16 if r.element_size() == 2 else
                   torch.int32 if r.element_size() == 4 else torch.int64)
    nbits = n.view(rbits.dtype)
    ok = (rbits == nbits) | (rn & nn)
    return bool(ok.all())


def stats(ta, tb, rtol=None, atol=None, exact=False):
    """What stdiff must report for one pair (same shape)."""
    if ta.dtype in FLOATS or tb.dtype in FLOATS:
        ra, rb = TOL.get(ta.dtype, (0, 0)), TOL.get(tb.dtype, (0, 0))
    else:
        ra, rb = (0, 0), (0, 0)
    if exact:
        drtol, datol = 0.0, 0.0
    else:
        drtol, datol = max(ra[0], rb[0]), max(ra[1], rb[1])
    rtol = drtol if rtol is None else rtol
    atol = datol if atol is None else atol
    n = int(np.prod(ta.shape)) if ta.shape else 1
    out = {"elements": n, "identical": ta.dtype == tb.dtype and ta.data == tb.data,
           "exactly_encoded": rounded_equal(ta, tb)}
    if ta.dtype.startswith("F8"):
        ba, bb = np.frombuffer(ta.data, "u1"), np.frombuffer(tb.data, "u1")
        bad = np.nonzero(ba != bb)[0]
        out.update(max_abs_diff=None, max_rel_diff=None, mean_abs_diff=None,
                   mismatched=len(bad), nan_equal=0,
                   worst_index=int(bad[0]) if len(bad) else None)
        return out
    a, b = decode(ta), decode(tb)
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":
        # Exact integer differences (Python ints), then float64.
        d_int = np.array([abs(int(x) - int(y)) for x, y in zip(a, b)], dtype=object)
        d = d_int.astype(np.float64)
        fb = np.abs(b.astype(np.float64))
        nan_a = nan_b = np.zeros(n, bool)
        eq = d_int == 0
    else:
        a, b = a.astype(np.float64), b.astype(np.float64)
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        eq = (a == b)
        with np.errstate(invalid="ignore"):
            d = np.where(eq, 0.0, np.abs(a - b))
        fb = np.abs(b)
    both = nan_a & nan_b
    one = nan_a ^ nan_b
    num = ~(nan_a | nan_b)
    if exact and ta.dtype == tb.dtype:
        es = len(ta.data) // max(n, 1)
        ra_ = np.frombuffer(ta.data, "u1").reshape(n, es)
        rb_ = np.frombuffer(tb.data, "u1").reshape(n, es)
        bits = (ra_ != rb_).any(axis=1)
    else:
        bits = np.zeros(n, bool)
    dn = d[num]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        inf_involved = np.zeros(n, bool)
        if a.dtype.kind == "f":
            inf_involved = np.isinf(a) | np.isinf(b)
        outside = num & ~eq & (exact | inf_involved | ~(d <= atol + rtol * fb))
        relmask = num & ~eq & (b != 0)
        rel = np.where(np.isinf(fb), np.inf, d / np.where(fb == 0, 1, fb))
    mism = one | outside | (bits & (eq | both))
    out["mismatched"] = int(mism.sum())
    out["nan_equal"] = int(both.sum())
    out["max_abs_diff"] = float(dn.max()) if dn.size else 0.0
    out["max_rel_diff"] = float(rel[relmask].max()) if relmask.any() else 0.0
    out["mean_abs_diff"] = float(dn.mean()) if dn.size else 0.0
    # Worst: NaN mismatch, then the largest value difference, then bits only.
    if one.any():
        w = int(np.nonzero(one)[0][0])
    elif (num & ~eq).any():
        cand = np.where(num & ~eq, d, -1.0)
        w = int(np.nonzero(cand == cand.max())[0][0])
    elif (bits & (eq | both)).any():
        w = int(np.nonzero(bits & (eq | both))[0][0])
    else:
        w = None
    out["worst_index"] = w
    return out


def fmt(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "null" if not np.isfinite(v) else repr(v)
    return str(v)


def write_expected(name, ta_list, tb_list, **kw):
    a = {t.name: t for t in ta_list}
    b = {t.name: t for t in tb_list}
    lines = []
    for k in sorted(set(a) & set(b)):
        if a[k].shape != b[k].shape:
            continue
        s = stats(a[k], b[k], **kw)
        for f in ("elements", "identical", "max_abs_diff", "max_rel_diff",
                  "mean_abs_diff", "mismatched", "worst_index", "exactly_encoded",
                  "nan_equal"):
            lines.append("%s %s %s" % (k, f, fmt(s[f])))
    with open(os.path.join(EXP, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


# ---- fixtures ---------------------------------------------------------------

def bits16(arr_u16, name, dtype, shape):
    return T(name, dtype, shape, np.asarray(arr_u16, "<u2").tobytes())


def main():
    rng = np.random.RandomState(1234)
    for sub in ("expected", "sharded", "snap", "broken"):
        shutil.rmtree(os.path.join(HERE, sub), ignore_errors=True)
        os.makedirs(os.path.join(HERE, sub))

    # A: one tensor of each kind stdiff handles.
    w32 = rng.randn(16, 8).astype("<f4")
    b32 = rng.randn(8).astype("<f4")
    w16 = rng.randn(12, 4).astype("<f2")
    wbf = torch.from_numpy(rng.randn(10, 3).astype("<f4")).to(torch.bfloat16)
    w64 = rng.randn(5, 5)
    ids = np.array([1, 2, 3, 4, 5, 2**62], "<i8")
    u8 = rng.randint(0, 256, 10).astype("u1")
    mask = np.array([1, 0, 1, 1, 0, 0, 1], "u1")
    nan = rng.randn(20).astype("<f4")
    nan[[2, 5, 7]] = np.nan
    inf = np.array([np.inf, -np.inf, 1, np.inf, 5, -np.inf], "<f4")
    zero = (np.arange(10) * 1e-7).astype("<f4")
    zero[0] = 1.0
    f8 = rng.randint(0, 256, 16).astype("u1")
    chg = rng.randn(4, 4).astype("<f4")
    A = [
        f32("w.f32", w32), f32("b.f32", b32),
        T("w.f16", "F16", [12, 4], w16.tobytes()),
        from_torch("w.bf16", wbf),
        T("w.f64", "F64", [5, 5], w64.astype("<f8").tobytes()),
        T("ids", "I64", [6], ids.tobytes()),
        T("u8", "U8", [10], u8.tobytes()),
        T("mask", "BOOL", [7], mask.tobytes()),
        f32("nan.f32", nan), f32("inf.f32", inf),
        T("scalar", "F32", [], np.array(3.0, "<f4").tobytes()),
        T("empty", "F32", [0, 3], b""),
        f32("zero.f32", zero),
        T("f8", "F8_E4M3", [16], f8.tobytes()),
        f32("shape", rng.randn(4, 6)),
        f32("only.a", rng.randn(3)),
        f32("dtype.chg", chg),
    ]
    meta_a = {"format": "pt", "source": "gen"}

    # B: the same, perturbed (comments say what stdiff must see).
    w32b = w32 * np.float32(1 + 1e-7)          # mostly 1-ulp: within F32 tol
    w32b[3, 5] += np.float32(1e-3)              # outside
    w32b[10, 0] -= np.float32(2e-3)             # outside, the worst
    w32b[15, 7] += np.float32(5e-6)             # within (atol)
    w16b = w16.view("<u2").reshape(-1).copy()
    w16b[[1, 7, 20]] += 1                        # 1 ulp: within 1e-3
    w16b[33] += 40                               # outside
    wbfb = wbf.view(torch.int16).numpy().astype("<u2").reshape(-1).copy()
    wbfb[[0, 4]] += 1                            # 1 ulp: within 1.6e-2
    wbfb[9] += 30                                # outside
    w64b = w64 * (1 + 1e-9)                      # within F64 tol
    w64b[2, 2] += 1e-6                           # outside
    idsb = ids.copy()
    idsb[4] = 6
    idsb[5] = 2**62 + 1                          # needs exact integers
    maskb = mask.copy()
    maskb[3] = 0
    nanb = nan.copy()
    nanb[7] = 1.0                                # NaN vs number (worst)
    nanb[9] = np.nan                             # number vs NaN
    nanb[11] += np.float32(0.5)
    infb = np.array([np.inf, -np.inf, np.inf, 1, 5, np.inf], "<f4")
    zerob = np.zeros(10, "<f4")                  # b == 0: only atol decides
    zerob[0] = np.float32(1.0) + np.float32(2**-23)
    f8b = f8.copy()
    f8b[[4, 9]] ^= 0x01
    B = [
        f32("w.f32", w32b), f32("b.f32", b32),
        T("w.f16", "F16", [12, 4], w16b.tobytes()),
        bits16(wbfb, "w.bf16", "BF16", [10, 3]),
        T("w.f64", "F64", [5, 5], w64b.astype("<f8").tobytes()),
        T("ids", "I64", [6], idsb.tobytes()),
        T("u8", "U8", [10], u8.tobytes()),
        T("mask", "BOOL", [7], maskb.tobytes()),
        f32("nan.f32", nanb), f32("inf.f32", infb),
        T("scalar", "F32", [], np.array(3.0001, "<f4").tobytes()),
        T("empty", "F32", [0, 3], b""),
        f32("zero.f32", zerob),
        T("f8", "F8_E4M3", [16], f8b.tobytes()),
        f32("shape", rng.randn(6, 4)),
        f32("only.b", rng.randn(2)),
        from_torch("dtype.chg", torch.from_numpy(chg).to(torch.float16)),
    ]
    meta_b = {"format": "pt", "source": "other", "extra": "1"}
    write_st(os.path.join(HERE, "a.safetensors"), A, meta_a)
    write_st(os.path.join(HERE, "b.safetensors"), B, meta_b)
    write_expected("a_b", A, B)
    write_expected("a_b_tol", A, B, rtol=1e-4, atol=1e-4)
    write_expected("a_b_exact", A, B, exact=True)

    # Layouts of A: two shards + index; every name prefixed; a directory.
    half = len(A) // 2
    s1, s2 = A[:half], A[half:]
    n1, n2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    write_st(os.path.join(HERE, "sharded", n1), s1, meta_a)
    write_st(os.path.join(HERE, "sharded", n2), s2, {"format": "pt"})
    write_index(os.path.join(HERE, "sharded", "model.safetensors.index.json"),
                [(n1, s1), (n2, s2)])
    pre = [T("transformer." + t.name, t.dtype, t.shape, t.data) for t in A]
    write_st(os.path.join(HERE, "prefixed.safetensors"), pre, meta_a)
    write_st(os.path.join(HERE, "snap", "model.safetensors"), B, meta_b)

    # Cross-dtype: F32 reference with the values rounding cares about.
    x = np.concatenate([
        np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e-40,
                  65504.0, 65520.0, 3.4e38, 1 + 2**-8, 1 + 3 * 2**-8,
                  1 + 2**-11, 1 + 3 * 2**-11, -2.5e-3, 6e-8], "<f4"),
        (rng.randn(47) * 10).astype("<f4")])
    y = rng.randn(32, 4).astype("<f4")
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    ref32 = [f32("x", x), f32("y", y)]
    ref64 = [from_torch("x", tx.double()), from_torch("y", ty.double())]
    refbf = [from_torch("x", tx.bfloat16()), from_torch("y", ty.bfloat16())]
    ref16 = [from_torch("x", tx.half()), from_torch("y", ty.half())]
    # Truncated, not rounded: within BF16 tolerance, but not what .to() makes.
    trunc = [bits16((np.frombuffer(t.tobytes(), "<u4") >> 16).astype("<u2"),
                    n, "BF16", list(t.shape)) for n, t in (("x", x), ("y", y))]
    for name, ts in (("ref_f32", ref32), ("ref_f64", ref64), ("ref_bf16", refbf),
                     ("ref_f16", ref16), ("ref_bf16_trunc", trunc)):
        write_st(os.path.join(HERE, name + ".safetensors"), ts, {"format": "pt"})
    write_expected("ref_f32_bf16", ref32, refbf)
    write_expected("ref_f32_bf16_trunc", ref32, trunc)
    write_expected("ref_f32_f16", ref32, ref16)
    write_expected("ref_f64_f32", ref64, ref32)
    write_expected("ref_bf16_f32", refbf, ref32)
    write_expected("ref_f16_bf16", ref16, refbf)

    # NaN payloads and signed zeros: equal by value, not by bits.
    na = np.array([1.0, np.nan, 2.0, np.nan, 0.0], "<f4")
    nb = na.copy()
    nb[4] = -0.0
    nbu = nb.view("<u4")
    nbu[3] = 0x7fc00001
    write_st(os.path.join(HERE, "nan_a.safetensors"), [f32("v", na)])
    write_st(os.path.join(HERE, "nan_b.safetensors"), [f32("v", nb)])
    write_expected("nan", [f32("v", na)], [f32("v", nb)])
    write_expected("nan_exact", [f32("v", na)], [f32("v", nb)], exact=True)

    # Broken inputs. A file cut 10 bytes short (rule 13).
    with open(os.path.join(HERE, "a.safetensors"), "rb") as f:
        raw = f.read()
    with open(os.path.join(HERE, "broken", "truncated.safetensors"), "wb") as f:
        f.write(raw[:-10])
    # An index naming a second shard that is not there (I5).
    os.makedirs(os.path.join(HERE, "broken", "missing-shard"))
    write_st(os.path.join(HERE, "broken", "missing-shard", n1), s1, meta_a)
    write_index(os.path.join(HERE, "broken", "missing-shard",
                             "model.safetensors.index.json"), [(n1, s1), (n2, s2)])
    # Two names that become one after --strip-prefix transformer.
    write_st(os.path.join(HERE, "broken", "clash.safetensors"),
             [f32("transformer.x", [1.0]), f32("x", [1.0])])


if __name__ == "__main__":
    main()
