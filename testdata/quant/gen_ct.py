#!/usr/bin/python3
"""snap-ct/ and snap-ct.bf16.safetensors for tests/cli/stconvert_quant.sh.

Run with the system Python that has numpy and torch:

    /usr/bin/python3 testdata/quant/gen_ct.py testdata/quant

A compressed-tensors-style static FP8 snapshot (what llm-compressor and
ModelOpt write): F8_E4M3 X.weight with a per-tensor F32 X.weight_scale []
(q_proj) or a per-channel one [out, 1] (down_proj), each with an
activation scale X.input_scale (F32 [] or [1]), the attention's k_scale and
v_scale (F32 []), and a BF16 norm. snap-ct.bf16.safetensors is its
dequantization to BF16 computed here with gen_quant.py's numpy reference
(f32(code) * f32(scale) in float32, then PyTorch's rounding to BF16); the
activation scales are not in it: a BF16 model has no use for them.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_quant as gq  # noqa: E402


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(20261201)
    d = os.path.join(outdir, "snap-ct")
    os.makedirs(d, exist_ok=True)
    w, want = gq.Writer(), gq.Writer()
    w.meta = want.meta = {"format": "pt"}
    for name, out, inn, per_channel in (("model.layers.0.self_attn.q_proj", 4, 6, False),
                                        ("model.layers.0.mlp.down_proj", 6, 4, True)):
        codes = rng.integers(0, 256, size=(out, inn), dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x30  # no NaN: stdiff --exact compares values
        if per_channel:
            s32 = gq.scale_values(rng, out).reshape(out, 1)
            w.add(f"{name}.weight_scale", "F32", [out, 1], s32.tobytes())
            w.add(f"{name}.input_scale", "F32", [1], np.float32([0.125]).tobytes())
            ref = gq.dequant_fp8(codes, "F8_E4M3", s32, 1, inn)
        else:
            s32 = gq.scale_values(rng, 1).reshape(1, 1)
            w.add(f"{name}.weight_scale", "F32", [], s32.tobytes())
            w.add(f"{name}.input_scale", "F32", [], np.float32([0.5]).tobytes())
            ref = gq.dequant_fp8(codes, "F8_E4M3", s32, out, inn)
        w.add(f"{name}.weight", "F8_E4M3", [out, inn], codes.tobytes())
        want.add(f"{name}.weight", "BF16", [out, inn], gq.bf16_bytes(ref))
    w.add("model.layers.0.self_attn.k_scale", "F32", [], np.float32([2.0]).tobytes())
    w.add("model.layers.0.self_attn.v_scale", "F32", [], np.float32([4.0]).tobytes())
    norm = torch.from_numpy(rng.standard_normal(4).astype(np.float32)).to(torch.bfloat16)
    nb = norm.view(torch.int16).numpy().tobytes()
    w.add("model.norm.weight", "BF16", [4], nb)
    want.add("model.norm.weight", "BF16", [4], nb)
    w.write(os.path.join(d, "model.safetensors"))
    want.write(os.path.join(outdir, "snap-ct.bf16.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{\n  "architectures": ["MixtralForCausalLM"],\n'
                '  "quantization_config": {\n    "format": "float-quantized",\n'
                '    "quant_method": "compressed-tensors"\n  },\n'
                '  "torch_dtype": "bfloat16"\n}\n')


if __name__ == "__main__":
    main()
