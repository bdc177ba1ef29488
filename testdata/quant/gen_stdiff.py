#!/usr/bin/python3
"""Fixtures for tests/cli/stdiff_quant.sh (stdiff against a quantized side).

Run with the system Python that has numpy and torch:

    /usr/bin/python3 testdata/quant/gen_stdiff.py testdata/quant

The dequantization is gen_quant.py's numpy one (codes decoded by the OCP
formulas of testdata/dtype/gen_f8.py, F32 products, PyTorch's rounding to
BF16), independent of libst.

snap-dq/                   FP8 weights of every scale layout beside plain
                           tensors; config.json's weight_block_size 2 x 3:
  ...experts.down_proj     [2, 5, 7] experts, BF16 block scales [2, 3, 3]
  ...mlp.gate              [3, 5], F8_E8M0 block scales [2, 2]
  ...self_attn.k_proj      [4, 6], a per-tensor F32 weight_scale []
  ...self_attn.o_proj      [5, 7], a per-channel F32 weight_scale [5, 1]
  ...self_attn.q_proj      [5, 7], F32 block scales [3, 3] (partial edge
                           blocks); its last element [4, 6] is 1.5 (code
                           0x3C, block scale 1), the last two bytes of the
                           BF16 reference, for the tampering tests
  model.embed_tokens       F32 [3, 4], plain
  ...input_layernorm       BF16 [7], plain
snap-dq.bf16.safetensors   every weight dequantized and rounded to BF16,
                           the plain F32 rounded to BF16
snap-dq.f32.safetensors    the F32 products; the plain BF16 widened
dq-big.safetensors         one F8_E4M3 weight [260, 260] with 128x128
                           F32 scales [3, 3] (no config.json: the
                           default block), longer than stdiff's chunk of
                           65536 F32 values; its last element is 1.5
dq-big.bf16.safetensors    it dequantized to BF16
mx-big.safetensors         MXFP4 blocks [2, 45, 23, 16] and scales, NAME
                           [2, 736, 45] (66240 values, a chunk and a
                           bit); the last element is 1.0 (nibble 2,
                           scale 127)
mx-big.bf16.safetensors    transformers' layout, dequantized to BF16
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_quant as gq  # noqa: E402


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(0x5D1F)
    d = os.path.join(outdir, "snap-dq")
    os.makedirs(d, exist_ok=True)
    a, bf, f32 = gq.Writer(), gq.Writer(), gq.Writer()
    a.meta = bf.meta = f32.meta = {"format": "pt"}
    L = "model.layers.0."
    # name, experts (0: 2-D), out, in, scale suffix, scale dtype, kind
    cases = [
        (L + "mlp.experts.down_proj", 2, 5, 7, "_scale_inv", "BF16", "block"),
        (L + "mlp.gate", 0, 3, 5, "_scale_inv", "F8_E8M0", "block"),
        (L + "self_attn.k_proj", 0, 4, 6, "_scale", "F32", "tensor"),
        (L + "self_attn.o_proj", 0, 5, 7, "_scale", "F32", "channel"),
        (L + "self_attn.q_proj", 0, 5, 7, "_scale_inv", "F32", "block"),
    ]
    for name, ex, out, inn, suffix, sdt, kind in cases:
        e = max(ex, 1)
        codes = rng.integers(0, 256, size=(e, out, inn), dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x30  # no NaN: --exact compares values
        if kind == "block":
            sr, sc, b0, b1 = -(-out // 2), -(-inn // 3), 2, 3
        elif kind == "channel":
            sr, sc, b0, b1 = out, 1, 1, inn
        else:
            sr, sc, b0, b1 = 1, 1, out, inn
        s32 = gq.scale_values(rng, e * sr * sc).reshape(e, sr, sc)
        if name.endswith("q_proj"):
            codes[0, 4, 6] = 0x3C  # 1.5
            s32[0, 2, 2] = 1.0
        sbytes, sval = gq.encode_scale(s32.reshape(-1), sdt)
        ref = gq.dequant_fp8(codes, "F8_E4M3", sval.reshape(e, sr, sc), b0, b1)
        shape = [out, inn] if ex == 0 else [ex, out, inn]
        sshape = {"block": [sr, sc] if ex == 0 else [ex, sr, sc], "channel": [out, 1],
                  "tensor": []}[kind]
        a.add(name + ".weight", "F8_E4M3", shape, codes.tobytes())
        a.add(name + ".weight" + suffix, sdt, sshape, sbytes)
        bf.add(name + ".weight", "BF16", shape, gq.bf16_bytes(ref))
        f32.add(name + ".weight", "F32", shape, ref.astype(np.float32).tobytes())
    assert gq.bf16_bytes(np.float32([1.5])) == b"\xc0\x3f"
    emb = rng.standard_normal((3, 4)).astype(np.float32)
    a.add("model.embed_tokens.weight", "F32", [3, 4], emb.tobytes())
    bf.add("model.embed_tokens.weight", "BF16", [3, 4], gq.bf16_bytes(emb))
    f32.add("model.embed_tokens.weight", "F32", [3, 4], emb.tobytes())
    norm = torch.from_numpy(rng.standard_normal(7).astype(np.float32)).to(torch.bfloat16)
    nbytes = norm.view(torch.int16).numpy().tobytes()
    a.add(L + "input_layernorm.weight", "BF16", [7], nbytes)
    bf.add(L + "input_layernorm.weight", "BF16", [7], nbytes)
    f32.add(L + "input_layernorm.weight", "F32", [7], norm.to(torch.float32).numpy().tobytes())
    a.write(os.path.join(d, "model.safetensors"))
    bf.write(os.path.join(outdir, "snap-dq.bf16.safetensors"))
    f32.write(os.path.join(outdir, "snap-dq.f32.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{\n  "architectures": ["DeepseekV3ForCausalLM"],\n'
                '  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", '
                '"quant_method": "fp8", "weight_block_size": [2, 3]},\n'
                '  "torch_dtype": "bfloat16"\n}\n')
    gen_big(outdir)


def gen_big(outdir):
    """Weights longer than a chunk, for tests/cli/stdiff_quant.sh."""
    rng = np.random.default_rng(0xB16)
    w, ref = gq.Writer(), gq.Writer()
    codes = rng.integers(0, 256, size=(260, 260), dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x30
    codes[259, 259] = 0x3C  # 1.5
    s32 = gq.scale_values(rng, 9).reshape(3, 3)
    s32[2, 2] = 1.0
    deq = gq.dequant_fp8(codes, "F8_E4M3", s32, 128, 128)
    w.add("big.weight", "F8_E4M3", [260, 260], codes.tobytes())
    w.add("big.weight_scale_inv", "F32", [3, 3], s32.tobytes())
    ref.add("big.weight", "BF16", [260, 260], gq.bf16_bytes(deq))
    w.write(os.path.join(outdir, "dq-big.safetensors"))
    ref.write(os.path.join(outdir, "dq-big.bf16.safetensors"))
    w, ref = gq.Writer(), gq.Writer()
    blocks = rng.integers(0, 256, size=(2, 45, 23, 16), dtype=np.uint8)
    scales = rng.integers(118, 136, size=(2, 45, 23), dtype=np.uint8)
    blocks[1, 44, 22, 15] = (blocks[1, 44, 22, 15] & 0x0F) | 0x20  # 1.0
    scales[1, 44, 22] = 127
    out = gq.mxfp4_reference(blocks, scales)
    assert out.shape == (2, 736, 45) and out[1, 735, 44] == 1.0
    w.add("mx_blocks", "U8", [2, 45, 23, 16], blocks.tobytes())
    w.add("mx_scales", "U8", [2, 45, 23], scales.tobytes())
    ref.add("mx", "BF16", list(out.shape), gq.bf16_bytes(out))
    w.write(os.path.join(outdir, "mx-big.safetensors"))
    ref.write(os.path.join(outdir, "mx-big.bf16.safetensors"))


if __name__ == "__main__":
    main()
