#!/usr/bin/python3
"""Fixtures for tests/cli/stinfo_quant.sh: quantized layouts as stinfo
describes, counts and checks them.

Run with the system Python that has numpy and torch:

    /usr/bin/python3 testdata/quant/gen_stinfo.py testdata/quant/stinfo

Files are written by gen_quant.py's Writer (by hand: 8-byte length, JSON
header, data; not with libst). stinfo/expected.tsv holds, per fixture,
what stinfo must say, worked out here from the shapes and dtypes the
fixture is made of, not from libst:

    FIXTURE  layout   the layout's words (one line each, in the order of
                      each layout's first weight in the file, which
                      Writer lays out by name)
    FIXTURE  KEY      N    weights, parameters_without_scales (every
                      tensor's elements but the scales', an MXFP4
                      weight's as the 2 x bytes it dequantizes to),
                      scale_tensors, scale_parameters, scale_bytes
    FIXTURE  problem  a substring of one --check error (each a line)
    FIXTURE  stats    NAME min max mean std nan inf zeros of one 8-bit
                      tensor, numpy over gen_f8.py's decoded codes

block/     snapshot, config.json weight_block_size [2, 3]: two 2-D FP8
           weights and one 3-D expert weight with F32 block scales
default.safetensors  no config.json: 128 x 128 blocks, edge blocks partial
channel.safetensors  per-channel scales [out, 1] (F32) and [out] (BF16)
tensor.safetensors   per-tensor scales [] and [1] (F32), and an F8_E5M2
           weight with an F16 one
e8m0/      snapshot, weight_block_size [1, 32]: F8_E8M0 block scales, 2-D
           and 3-D
mx/        snapshot: two gpt-oss MXFP4 expert weights and a bias
broken/    snapshot, weight_block_size [2, 3]: one good pair and seven
           that do not fit (see BROKEN below)
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_quant import DECODE, Writer, encode_scale, scale_values  # noqa: E402

BITS = {"F32": 32, "F16": 16, "BF16": 16, "I32": 32, "U8": 8, "F8_E5M2": 8,
        "F8_E4M3": 8, "F8_E8M0": 8}


def count(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


class Fixture:
    """Tensors of one file, and what stinfo must say about them."""

    def __init__(self, rng, name, block=(128, 128)):
        self.rng, self.name, self.block = rng, name, block
        self.w = Writer()
        self.w.meta = {"format": "pt"}
        self.tensors = []    # (name, dtype, shape)
        self.layouts = []    # (sort key, words) per weight
        self.scales = set()

    def add(self, name, dtype, shape, data=None):
        if data is None:
            if dtype == "U8" or dtype.startswith("F8_E4") or dtype == "F8_E5M2":
                codes = self.rng.integers(0, 256, size=count(shape), dtype=np.uint8)
                if dtype.startswith("F8"):
                    codes[(codes & 0x7F) == 0x7F] = 0x30
                data = codes.tobytes()
            else:
                data = bytes(count(shape) * BITS[dtype] // 8)
        assert len(data) == count(shape) * BITS[dtype] // 8, name
        self.w.add(name, dtype, shape, data)
        self.tensors.append((name, dtype, list(shape)))

    def scale(self, name, dtype, shape):
        s32 = scale_values(self.rng, count(shape))
        data, _ = encode_scale(s32, dtype) if dtype != "I32" else (bytes(4 * count(shape)), None)
        self.add(name, dtype, shape, data)
        self.scales.add(name)

    def fp8(self, base, wdtype, shape, sdtype, kind, suffix="_scale_inv"):
        """X.weight and its scale; kind block, channel, channel1, tensor, tensor1."""
        out, inn = shape[-2], shape[-1]
        ex = shape[:-2]
        b0, b1 = self.block
        if kind == "block":
            sshape = ex + [-(-out // b0), -(-inn // b1)]
            how = f"block-scaled {b0}x{b1}"
        elif kind.startswith("channel"):
            sshape = ex + ([out, 1] if kind == "channel" else [out])
            how = "scaled per channel"
        else:
            sshape = ex + ([] if kind == "tensor" else [1])
            how = "scaled per tensor"
        self.add(base + ".weight", wdtype, shape)
        self.scale(base + ".weight" + suffix, sdtype, sshape)
        words = "E8M0" if sdtype == "F8_E8M0" else sdtype
        key = (wdtype, how, bool(ex), words)
        self.layouts.append((base + ".weight", key, count(shape)))

    def mxfp4(self, base, experts, rows, groups):
        self.add(base + "_blocks", "U8", [experts, rows, groups, 16])
        codes = self.rng.integers(118, 136, size=experts * rows * groups, dtype=np.uint8)
        self.add(base + "_scales", "U8", [experts, rows, groups], codes.tobytes())
        self.scales.add(base + "_scales")
        self.layouts.append((base + "_blocks", ("MXFP4",), experts * rows * groups * 32))

    def expected(self):
        lines = []
        groups = {}
        order = []
        for sort_key, key, n in sorted(self.layouts):
            if key not in groups:
                groups[key] = [0, 0]
                order.append(key)
            groups[key][0] += 1
            groups[key][1] += n
        for key in order:
            k = groups[key][0]
            if key == ("MXFP4",):
                words = (f"MXFP4 (E2M1 blocks of 32 with E8M0 scales), {k} expert "
                         f"weight{'s' if k != 1 else ''}")
            else:
                wdtype, how, experts, sdt = key
                what = ("expert " if experts else "") + ("weight" if k == 1 else "weights")
                words = (f"FP8 {wdtype[3:]}, {how}, {k} {what}{' (3-D)' if experts else ''} "
                         f"with {sdt} scales")
            lines.append((self.name, "layout", words))
        mx = {t[0][:-7] for t in self.layouts if t[1] == ("MXFP4",)}
        params = 0
        for name, dtype, shape in self.tensors:
            if name in self.scales:
                continue
            if name.endswith("_blocks") and name[:-7] in mx:
                params += count(shape) * 2
            else:
                params += count(shape)
        sc = [(n, d, s) for n, d, s in self.tensors if n in self.scales]
        lines += [(self.name, "weights", str(len(self.layouts))),
                  (self.name, "parameters_without_scales", str(params)),
                  (self.name, "scale_tensors", str(len(sc))),
                  (self.name, "scale_parameters", str(sum(count(s) for _, _, s in sc))),
                  (self.name, "scale_bytes", str(sum(count(s) * BITS[d] // 8 for _, d, s in sc)))]
        return lines


def config(path, block):
    with open(os.path.join(path, "config.json"), "w") as f:
        f.write('{\n  "architectures": ["DeepseekV3ForCausalLM"],\n'
                '  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", '
                f'"quant_method": "fp8", "weight_block_size": [{block[0]}, {block[1]}]}},\n'
                '  "torch_dtype": "bfloat16"\n}\n')


def stats_line(name, dtype, data):
    v = DECODE[dtype][np.frombuffer(data, np.uint8)]
    fin = v[np.isfinite(v)]
    return " ".join([name] + [repr(float(x)) for x in (fin.min(), fin.max(), fin.mean(), fin.std())]
                    + [str(int(np.isnan(v).sum())), str(int(np.isinf(v).sum())),
                       str(int((v == 0).sum()))])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "stinfo")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0x57A7)
    expected = []

    d = os.path.join(out, "block")
    os.makedirs(d, exist_ok=True)
    fx = Fixture(rng, "block", (2, 3))
    fx.fp8("model.layers.0.self_attn.q_proj", "F8_E4M3", [5, 7], "F32", "block")
    fx.fp8("model.layers.0.self_attn.o_proj", "F8_E4M3", [4, 6], "F32", "block")
    fx.fp8("model.layers.0.mlp.experts.w1", "F8_E4M3", [3, 4, 5], "F32", "block")
    fx.add("model.norm.weight", "BF16", [7])
    fx.w.write(os.path.join(d, "model.safetensors"))
    config(d, (2, 3))
    expected += fx.expected()

    fx = Fixture(rng, "default")
    fx.fp8("a", "F8_E4M3", [129, 2], "F32", "block")   # blocks of 128 rows: 2 of them
    fx.fp8("b", "F8_E4M3", [3, 5], "F32", "block")     # one partial block
    fx.w.write(os.path.join(out, "default.safetensors"))
    expected += fx.expected()

    fx = Fixture(rng, "channel")
    fx.fp8("a", "F8_E4M3", [4, 6], "F32", "channel", "_scale")
    fx.fp8("b", "F8_E4M3", [3, 5], "BF16", "channel1", "_scale")
    fx.add("a.bias", "F32", [4])
    fx.w.write(os.path.join(out, "channel.safetensors"))
    expected += fx.expected()

    fx = Fixture(rng, "tensor")
    fx.fp8("c", "F8_E4M3", [4, 6], "F32", "tensor", "_scale")
    fx.fp8("d", "F8_E4M3", [2, 3], "F32", "tensor1", "_scale")
    fx.fp8("e", "F8_E5M2", [3, 3], "F16", "tensor", "_scale")
    fx.w.write(os.path.join(out, "tensor.safetensors"))
    expected += fx.expected()

    d = os.path.join(out, "e8m0")
    os.makedirs(d, exist_ok=True)
    fx = Fixture(rng, "e8m0", (1, 32))
    fx.fp8("w", "F8_E4M3", [4, 64], "F8_E8M0", "block")
    fx.fp8("x", "F8_E4M3", [2, 4, 32], "F8_E8M0", "block")
    fx.w.write(os.path.join(d, "model.safetensors"))
    config(d, (1, 32))
    expected += fx.expected()
    data = dict((n, b) for n, _, _, b in fx.w.t)
    for name in ("w.weight_scale_inv", "w.weight"):
        dtype = dict((n, t) for n, t, _ in fx.tensors)[name]
        expected.append(("e8m0", "stats", stats_line(name, dtype, data[name])))

    d = os.path.join(out, "mx")
    os.makedirs(d, exist_ok=True)
    fx = Fixture(rng, "mx")
    fx.mxfp4("model.layers.0.mlp.experts.gate_up_proj", 2, 4, 2)
    fx.mxfp4("model.layers.0.mlp.experts.down_proj", 2, 3, 1)
    fx.add("model.layers.0.mlp.experts.gate_up_proj_bias", "F32", [2, 4])
    fx.w.write(os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{"architectures": ["GptOssForCausalLM"], "quantization_config": '
                '{"quant_method": "mxfp4"}, "torch_dtype": "bfloat16"}\n')
    expected += fx.expected()

    # BROKEN: one pair that fits (g) and seven mismatches, all reported.
    d = os.path.join(out, "broken")
    os.makedirs(d, exist_ok=True)
    fx = Fixture(rng, "broken", (2, 3))
    fx.add("a.weight", "F8_E4M3", [2, 3])                      # no scale
    fx.scale("b.weight_scale_inv", "F32", [1, 1])              # no weight
    fx.add("c.weight", "F8_E4M3", [4, 6])                      # 2 x 3 blocks: [2, 2]
    fx.scale("c.weight_scale_inv", "F32", [3, 3])
    fx.add("d.weight", "F8_E4M3", [2, 3])                      # an I32 scale
    fx.scale("d.weight_scale_inv", "I32", [1, 1])
    fx.add("e_blocks", "U8", [1, 2, 1, 16])                    # scales of 1 row, not 2
    fx.add("e_scales", "U8", [1, 1, 1], b"\x7f")
    fx.scales.add("e_scales")
    fx.add("f_scales", "U8", [1, 1, 1], b"\x7f")               # no blocks
    fx.scales.add("f_scales")
    fx.fp8("g", "F8_E4M3", [2, 3], "F32", "block")             # fits
    fx.add("h.weight", "BF16", [2, 2])                         # not an F8 weight
    fx.scale("h.weight_scale", "F32", [])
    fx.w.write(os.path.join(d, "model.safetensors"))
    config(d, (2, 3))
    expected += fx.expected()
    problems = [
        "weight 'a.weight' has no scale 'a.weight_scale_inv'",
        "scale 'b.weight_scale_inv' has no weight 'b.weight'",
        "scale 'c.weight_scale_inv' F32 [3, 3] does not fit weight 'c.weight' F8_E4M3 [4, 6]: "
        "block 2 x 3 needs [2, 2]",
        "scale 'd.weight_scale_inv' I32 [1, 1] of weight 'd.weight' F8_E4M3 [2, 3]: a scale is "
        "F32, BF16, F16 or F8_E8M0",
        "MXFP4 scales 'e_scales' U8 [1, 1, 1] do not fit blocks 'e_blocks' U8 [1, 2, 1, 16]: "
        "expected [1, 2, 1]",
        "MXFP4 scale 'f_scales' has no weight 'f_blocks'",
        "scale 'h.weight_scale' has no F8 weight: 'h.weight' is BF16 [2, 2]",
    ]
    expected += [("broken", "problem", p) for p in problems]

    with open(os.path.join(out, "expected.tsv"), "w") as f:
        f.write("# fixture\tkey\tvalue (made by ../gen_stinfo.py; see there)\n")
        for row in expected:
            f.write("\t".join(row) + "\n")


if __name__ == "__main__":
    main()
