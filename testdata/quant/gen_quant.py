#!/usr/bin/python3
"""Reference fixtures for tests/check_quant.c (libst/quant.c).

Run with the system Python that has numpy and torch:

    /usr/bin/python3 testdata/quant/gen_quant.py testdata/quant

An implementation of the layouts independent of libst: codes are decoded
with testdata/dtype/gen_f8.py (the OCP formulas), products are numpy
float32 multiplications (round to nearest even), the rounding to BF16 is
PyTorch's .to(torch.bfloat16) and to F16 numpy's astype(float16).

fp8.safetensors       case cN: cN.w (an F8 weight), cN.s (its scale),
                      cN.f32 / cN.bf16 / cN.f16 the dequantized values;
                      __metadata__ "cN" = "B0 B1 KIND" (KIND block,
                      channel or tensor: what the scale's shape means).
mxfp4.safetensors     case mN: mN_blocks, mN_scales (gpt-oss layout),
                      mN.f32 / mN.bf16 as transformers'
                      convert_moe_packed_tensors computes them: nibbles
                      low first, times 2^(scale - 127), reshaped to
                      [experts, rows, groups * 32], transpose(1, 2).
quantize.safetensors  case qN: qN.x (F32 or BF16), qN.w (F8_E4M3) and qN.s
                      (F32) as DeepSeek-style block quantization gives them:
                      scale = amax / 448 over each block's finite values
                      (1 for zeros, the least F32 subnormal where it would
                      round to 0), x / scale in F32, nearest even,
                      saturating; __metadata__ "qN" = "B0 B1".
snap-q/               a snapshot to quantize (F32, BF16, a 1-D norm),
                      snap-q.f8.safetensors what stconvert --to f8_e4m3
                      --block 2,3 --keep '*embed*' gives, and
                      snap-q.f8.bf16.safetensors its dequantization.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dtype"))
import gen_f8  # noqa: E402

F8_NAMES = ["F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0"]
DECODE = {n: np.array([np.nan if gen_f8.value(n, c) is None else gen_f8.value(n, c)
                       for c in range(256)], dtype=np.float64) for n in F8_NAMES}
E2M1 = np.array([gen_f8.value("F4", c) for c in range(16)], dtype=np.float32)


def bf16_bytes(f32):
    t = torch.from_numpy(np.ascontiguousarray(f32, dtype=np.float32)).to(torch.bfloat16)
    return t.view(torch.int16).numpy().tobytes()


def f16_bytes(f32):
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(f32, dtype=np.float32).astype(np.float16).tobytes()


class Writer:
    def __init__(self):
        self.t = []
        self.meta = {}

    def add(self, name, dtype, shape, data):
        self.t.append((name, dtype, list(shape), bytes(data)))

    def write(self, path):
        header = {"__metadata__": self.meta}
        off = 0
        blobs = []
        for name, dtype, shape, data in sorted(self.t):
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
            off += len(data)
            blobs.append(data)
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with open(path, "wb") as f:
            f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def scale_values(rng, n, special=None):
    v = (2.0 ** rng.uniform(-20, 10, n)) * np.where(rng.integers(0, 2, n) == 1, -1, 1)
    return v.astype(np.float32)


def encode_scale(s32, dtype):
    """Scale bytes and the F32 value each one stands for."""
    if dtype == "F32":
        return s32.tobytes(), s32
    if dtype == "F16":
        h = s32.astype(np.float16)
        return h.tobytes(), h.astype(np.float32)
    if dtype == "BF16":
        b = torch.from_numpy(s32).to(torch.bfloat16)
        return b.view(torch.int16).numpy().tobytes(), b.to(torch.float32).numpy()
    codes = gen_f8.encode("F8_E8M0", np.abs(s32).view(np.uint32)).astype(np.uint8)
    return codes.tobytes(), DECODE["F8_E8M0"][codes].astype(np.float32)


FP8_CASES = [
    # name, experts (0: 2-D), out, in, B0, B1, scale dtype, kind, weight dtype
    ("c00", 0, 4, 4, 2, 2, "F32", "block", "F8_E4M3"),
    ("c01", 0, 5, 7, 2, 3, "F32", "block", "F8_E4M3"),
    ("c02", 0, 129, 130, 128, 128, "F32", "block", "F8_E4M3"),
    ("c03", 0, 3, 300, 1, 128, "BF16", "block", "F8_E4M3"),
    ("c04", 0, 1, 1, 128, 128, "F32", "block", "F8_E4M3"),
    ("c05", 0, 9, 17, 4, 16, "F16", "block", "F8_E4M3"),
    ("c06", 0, 6, 10, 3, 10, "F8_E8M0", "block", "F8_E4M3"),
    ("c07", 2, 5, 7, 2, 3, "F32", "block", "F8_E4M3"),
    ("c08", 0, 5, 7, 128, 128, "F32", "tensor", "F8_E4M3"),
    ("c09", 0, 5, 7, 2, 2, "F32", "channel", "F8_E4M3"),
    ("c10", 0, 5, 7, 2, 2, "BF16", "channel1", "F8_E4M3"),
    ("c11", 0, 6, 6, 4, 4, "F32", "block", "F8_E5M2"),
    ("c12", 3, 4, 5, 2, 2, "F32", "tensor", "F8_E4M3"),
    ("c13", 0, 4, 4, 2, 2, "F32", "tensor1", "F8_E4M3"),
    ("c14", 0, 5, 5, 2, 2, "F32", "block", "F8_E4M3FNUZ"),
    ("c15", 0, 8, 8, 8, 8, "F32", "extreme", "F8_E4M3"),
    ("c16", 0, 3, 3, 5, 5, "F32", "block", "F8_E5M2FNUZ"),
    ("c17", 0, 7, 300, 3, 64, "F8_E8M0", "block", "F8_E4M3"),
    ("c18", 0, 4, 4, 4, 4, "F32", "extreme", "F8_E4M3"),
]


def gen_fp8(rng, outdir):
    w = Writer()
    for name, ex, out, inn, b0, b1, sdt, kind, wdt in FP8_CASES:
        e = max(ex, 1)
        codes = rng.integers(0, 256, size=(e, out, inn), dtype=np.uint8)
        sr, sc = -(-out // b0), -(-inn // b1)
        if kind.startswith("tensor"):
            sr, sc, br, bc = 1, 1, out, inn
        elif kind.startswith("channel"):
            sr, sc, br, bc = out, 1, 1, inn
        else:
            br, bc = b0, b1
        s32 = scale_values(rng, e * sr * sc).reshape(e, sr, sc)
        if kind == "extreme":
            # Products in the F32 subnormal range, or past FLT_MAX.
            s32[:] = np.float32(2.0 ** -140) if name == "c15" else np.float32(1e36)
        sbytes, sval = encode_scale(s32.reshape(-1), sdt)
        sval = sval.reshape(e, sr, sc)
        x = DECODE[wdt][codes].astype(np.float32)
        rows = np.arange(out) // br
        cols = np.arange(inn) // bc
        s_full = sval[:, rows][:, :, cols]
        with np.errstate(over="ignore", invalid="ignore"):
            prod = (x * s_full).astype(np.float32)
        wshape = [out, inn] if ex == 0 else [ex, out, inn]
        if kind in ("tensor", "block", "extreme"):
            sshape = [sr, sc] if ex == 0 else [ex, sr, sc]
            if kind == "tensor" and ex == 0:
                sshape = []
        elif kind == "tensor1":
            sshape = [1]
        elif kind == "channel":
            sshape = [out, 1]
        else:
            sshape = [out]
        w.add(f"{name}.w", wdt, wshape, codes.tobytes())
        w.add(f"{name}.s", sdt, sshape, sbytes)
        w.add(f"{name}.f32", "F32", wshape, prod.tobytes())
        w.add(f"{name}.bf16", "BF16", wshape, bf16_bytes(prod))
        w.add(f"{name}.f16", "F16", wshape, f16_bytes(prod))
        w.meta[name] = f"{b0} {b1} {kind.rstrip('1').replace('extreme', 'block')}"
    w.write(os.path.join(outdir, "fp8.safetensors"))


def mxfp4_reference(blocks, scales):
    """transformers' convert_moe_packed_tensors, in numpy float32."""
    *prefix, g, b = blocks.shape
    rows_total = int(np.prod(prefix)) * g
    blk = blocks.reshape(rows_total, b)
    exp = scales.astype(np.int32).reshape(rows_total, 1) - 127
    out = np.empty((rows_total, b * 2), dtype=np.float32)
    out[:, 0::2] = E2M1[blk & 0x0F]
    out[:, 1::2] = E2M1[blk >> 4]
    with np.errstate(over="ignore"):
        out = (out.astype(np.float64) * np.exp2(exp.astype(np.float64))).astype(np.float32)
    out = out.reshape(*prefix, g * b * 2)
    return np.ascontiguousarray(np.swapaxes(out, 1, 2))


MX_CASES = [("m0", 1, 1, 1), ("m1", 2, 3, 2), ("m2", 3, 5, 4), ("m3", 1, 260, 1), ("m4", 2, 33, 3)]


def gen_mxfp4(rng, outdir):
    w = Writer()
    for name, e, r, g in MX_CASES:
        blocks = rng.integers(0, 256, size=(e, r, g, 16), dtype=np.uint8)
        scales = rng.integers(110, 141, size=(e, r, g), dtype=np.uint8)
        flat = scales.reshape(-1)
        flat[: min(3, flat.size)] = [0, 254, 1][: min(3, flat.size)]
        ref = mxfp4_reference(blocks, scales)
        w.add(f"{name}_blocks", "U8", [e, r, g, 16], blocks.tobytes())
        w.add(f"{name}_scales", "U8", [e, r, g], scales.tobytes())
        w.add(f"{name}.f32", "F32", list(ref.shape), ref.tobytes())
        w.add(f"{name}.bf16", "BF16", list(ref.shape), bf16_bytes(ref))
    w.write(os.path.join(outdir, "mxfp4.safetensors"))


Q_CASES = [
    # name, experts, out, in, B0, B1, input dtype
    ("q0", 0, 5, 7, 2, 3, "F32"),
    ("q1", 0, 129, 130, 128, 128, "BF16"),
    ("q2", 0, 4, 4, 2, 2, "F32"),
    ("q3", 2, 4, 6, 2, 4, "F32"),
    ("q4", 0, 3, 9, 5, 4, "F32"),
]


def gen_quantize(rng, outdir):
    w = Writer()
    for name, ex, out, inn, b0, b1, dt in Q_CASES:
        e = max(ex, 1)
        x = (rng.standard_normal((e, out, inn)) * 2.0 ** rng.uniform(-8, 8, (e, out, 1))).astype(np.float32)
        if name == "q2":
            x[0, :2, :2] = 0  # an all-zero block: scale 1
            x[0, 2:, 2:] = np.float32(1e-44)  # amax / 448 rounds to 0
            x[0, 0, 3] = np.inf
            x[0, 1, 2] = np.nan
            x[0, 3, 0] = -np.float32(3e38)
        if dt == "BF16":
            xb = torch.from_numpy(x).to(torch.bfloat16)
            xbytes = xb.view(torch.int16).numpy().tobytes()
            x = xb.to(torch.float32).numpy()
        else:
            xbytes = x.tobytes()
        sr, sc = -(-out // b0), -(-inn // b1)
        scale = np.ones((e, sr, sc), dtype=np.float32)
        codes = np.zeros((e, out, inn), dtype=np.uint8)
        for k in range(e):
            for i in range(sr):
                for j in range(sc):
                    blk = x[k, i * b0:(i + 1) * b0, j * b1:(j + 1) * b1]
                    a = np.abs(blk[np.isfinite(blk)])
                    amax = np.float32(a.max()) if a.size else np.float32(0)
                    s = np.float32(amax) / np.float32(448) if amax > 0 else np.float32(1)
                    if s == 0:
                        s = np.float32(2.0 ** -149)
                    scale[k, i, j] = s
                    with np.errstate(over="ignore", invalid="ignore"):
                        y = (blk / s).astype(np.float32)
                    c = gen_f8.encode("F8_E4M3", y.reshape(-1).view(np.uint32))
                    # NaN (from NaN or Inf inputs): libst's E4M3 NaN keeps the sign.
                    neg = np.signbit(y.reshape(-1))
                    c = np.where(c < 0, np.where(neg, 0xFF, 0x7F), c)
                    codes[k, i * b0:(i + 1) * b0, j * b1:(j + 1) * b1] = c.reshape(blk.shape)
        shape = [out, inn] if ex == 0 else [ex, out, inn]
        sshape = [sr, sc] if ex == 0 else [ex, sr, sc]
        w.add(f"{name}.x", dt, shape, xbytes)
        w.add(f"{name}.w", "F8_E4M3", shape, codes.tobytes())
        w.add(f"{name}.s", "F32", sshape, scale.tobytes())
        w.meta[name] = f"{b0} {b1}"
    w.write(os.path.join(outdir, "quantize.safetensors"))


def dequant_fp8(codes, wdt, s32, b0, b1):
    x = DECODE[wdt][codes].astype(np.float32)
    rows = np.arange(codes.shape[-2]) // b0
    cols = np.arange(codes.shape[-1]) // b1
    with np.errstate(over="ignore", invalid="ignore"):
        return (x * s32[..., rows, :][..., cols]).astype(np.float32)


def gen_snapshots(rng, outdir):
    """Snapshot directories for tests/cli/stconvert_quant.sh."""
    # DeepSeek-style FP8: block 2 x 3 from config.json, F32 and BF16 scales.
    d = os.path.join(outdir, "snap-fp8")
    os.makedirs(d, exist_ok=True)
    w, want = Writer(), Writer()
    w.meta = want.meta = {"format": "pt"}
    for name, out, inn, sdt in (("model.layers.0.mlp.down_proj", 5, 7, "F32"),
                                ("model.layers.0.mlp.up_proj", 4, 6, "BF16")):
        codes = rng.integers(0, 256, size=(out, inn), dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x30  # no NaN, so stdiff --exact compares values
        s32 = scale_values(rng, (-(-out // 2)) * (-(-inn // 3))).reshape(-(-out // 2), -(-inn // 3))
        sbytes, sval = encode_scale(s32.reshape(-1), sdt)
        w.add(f"{name}.weight", "F8_E4M3", [out, inn], codes.tobytes())
        w.add(f"{name}.weight_scale_inv", sdt, list(s32.shape), sbytes)
        ref = dequant_fp8(codes, "F8_E4M3", sval.reshape(s32.shape), 2, 3)
        want.add(f"{name}.weight", "BF16", [out, inn], bf16_bytes(ref))
    norm = rng.standard_normal(7).astype(np.float32)
    nb = torch.from_numpy(norm).to(torch.bfloat16)
    w.add("model.norm.weight", "BF16", [7], nb.view(torch.int16).numpy().tobytes())
    want.add("model.norm.weight", "BF16", [7], nb.view(torch.int16).numpy().tobytes())
    w.write(os.path.join(d, "model.safetensors"))
    want.write(os.path.join(outdir, "snap-fp8.bf16.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{\n  "architectures": ["DeepseekV3ForCausalLM"],\n  "hidden_size": 7,\n'
                '  "quantization_config": {\n    "activation_scheme": "dynamic",\n'
                '    "fmt": "e4m3",\n    "quant_method": "fp8",\n'
                '    "weight_block_size": [\n      2,\n      3\n    ]\n  },\n'
                '  "torch_dtype": "bfloat16",\n  "vocab_size": 10\n}\n')
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        f.write('{"model_max_length": 16}\n')
    # gpt-oss-style MXFP4 experts beside an F32 bias.
    d = os.path.join(outdir, "snap-mxfp4")
    os.makedirs(d, exist_ok=True)
    w, want = Writer(), Writer()
    w.meta = want.meta = {"format": "pt"}
    blocks = rng.integers(0, 256, size=(2, 4, 2, 16), dtype=np.uint8)
    scales = rng.integers(118, 136, size=(2, 4, 2), dtype=np.uint8)
    ref = mxfp4_reference(blocks, scales)
    w.add("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", [2, 4, 2, 16], blocks.tobytes())
    w.add("model.layers.0.mlp.experts.gate_up_proj_scales", "U8", [2, 4, 2], scales.tobytes())
    want.add("model.layers.0.mlp.experts.gate_up_proj", "BF16", list(ref.shape), bf16_bytes(ref))
    bias = rng.standard_normal((2, 4)).astype(np.float32)
    w.add("model.layers.0.mlp.experts.gate_up_proj_bias", "F32", [2, 4], bias.tobytes())
    want.add("model.layers.0.mlp.experts.gate_up_proj_bias", "BF16", [2, 4], bf16_bytes(bias))
    w.write(os.path.join(d, "model.safetensors"))
    want.write(os.path.join(outdir, "snap-mxfp4.bf16.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{"architectures": ["GptOssForCausalLM"], "quantization_config": '
                '{"modules_to_not_convert": ["model.layers.*.self_attn"], '
                '"quant_method": "mxfp4"}, "torch_dtype": "bfloat16"}\n')


def quantize_ref(x, b0, b1):
    """Codes and F32 scales of a finite 2-D float32 x, as gen_quantize."""
    sr, sc = -(-x.shape[0] // b0), -(-x.shape[1] // b1)
    scale = np.ones((sr, sc), dtype=np.float32)
    codes = np.zeros(x.shape, dtype=np.uint8)
    for i in range(sr):
        for j in range(sc):
            blk = x[i * b0:(i + 1) * b0, j * b1:(j + 1) * b1]
            amax = np.float32(np.abs(blk).max())
            s = amax / np.float32(448) if amax > 0 else np.float32(1)
            scale[i, j] = s
            y = (blk / s).astype(np.float32)
            c = gen_f8.encode("F8_E4M3", y.reshape(-1).view(np.uint32))
            codes[i * b0:(i + 1) * b0, j * b1:(j + 1) * b1] = c.reshape(blk.shape)
    return codes, scale


def gen_quant_snapshot(outdir):
    """snap-q for tests/cli/stconvert_quant.sh: stconvert --to f8_e4m3
    --block 2,3 --keep '*embed*' gives snap-q.f8.safetensors, and that
    with --to bf16 gives snap-q.f8.bf16.safetensors; every element of
    the latter is checked here to be within E4M3's rounding bound of the
    original (half an ulp: 2^-4 relative, or 2^-10 x scale below E4M3's
    normal range) plus BF16's (2^-9 relative)."""
    rng = np.random.default_rng(0x5EED)
    d = os.path.join(outdir, "snap-q")
    os.makedirs(d, exist_ok=True)
    w, want, back = Writer(), Writer(), Writer()
    w.meta = want.meta = back.meta = {"format": "pt"}
    for name, out, inn, dt in (("model.layers.0.mlp.down_proj.weight", 5, 7, "F32"),
                               ("model.layers.0.mlp.up_proj.weight", 4, 6, "BF16")):
        x = (rng.standard_normal((out, inn)) * 2.0 ** rng.uniform(-6, 6, (out, 1))).astype(np.float32)
        if dt == "F32":
            x[:2, :3] = 0  # an all-zero block: scale 1
            x[4, 6] = np.float32(-1e-30)  # a block of one tiny value
            xbytes = x.tobytes()
        else:
            xb = torch.from_numpy(x).to(torch.bfloat16)
            xbytes = xb.view(torch.int16).numpy().tobytes()
            x = xb.to(torch.float32).numpy()
        codes, scale = quantize_ref(x, 2, 3)
        w.add(name, dt, [out, inn], xbytes)
        want.add(name, "F8_E4M3", [out, inn], codes.tobytes())
        want.add(name + "_scale_inv", "F32", list(scale.shape), scale.tobytes())
        deq = dequant_fp8(codes, "F8_E4M3", scale, 2, 3)
        db = torch.from_numpy(deq).to(torch.bfloat16).to(torch.float32).numpy()
        srep = scale[np.arange(out) // 2][:, np.arange(inn) // 3]
        bound = np.abs(x) * 2.0 ** -4 + srep * 2.0 ** -10
        assert np.all(np.abs(deq.astype(np.float64) - x) <= bound), name
        assert np.all(np.abs(db.astype(np.float64) - x) <= bound + np.abs(deq) * 2.0 ** -9), name
        back.add(name, "BF16", [out, inn], bf16_bytes(deq))
    emb = rng.standard_normal((3, 4)).astype(np.float32)
    norm = torch.from_numpy(rng.standard_normal(7).astype(np.float32)).to(torch.bfloat16)
    nbytes = norm.view(torch.int16).numpy().tobytes()
    for wr in (w, want):
        wr.add("model.embed_tokens.weight", "F32", [3, 4], emb.tobytes())
        wr.add("model.norm.weight", "BF16", [7], nbytes)
    back.add("model.embed_tokens.weight", "BF16", [3, 4], bf16_bytes(emb))
    back.add("model.norm.weight", "BF16", [7], nbytes)
    w.write(os.path.join(d, "model.safetensors"))
    want.write(os.path.join(outdir, "snap-q.f8.safetensors"))
    back.write(os.path.join(outdir, "snap-q.f8.bf16.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{\n  "architectures": ["DeepseekV3ForCausalLM"],\n  "torch_dtype": "bfloat16"\n}\n')


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(0x9A47)
    gen_fp8(rng, outdir)
    gen_mxfp4(rng, outdir)
    gen_quantize(rng, outdir)
    gen_snapshots(rng, outdir)
    gen_quant_snapshot(outdir)


if __name__ == "__main__":
    main()
