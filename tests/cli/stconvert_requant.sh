# stconvert --to f8_e4m3 on a checkpoint that is quantized already: its
# FP8 weights and their scales are copied byte for byte, never quantized
# again, and only the weights still in a wide float are quantized, with
# the blocks the input's config.json names (--block defaults to them).
# What the written config.json could not describe (other blocks, another
# F8 type, per-tensor or per-channel scales, MXFP4, an F8 weight without
# a scale) is an error naming the tensor, and nothing is written.
# References: gen_quant.py's numpy quantization (testdata/quant).
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/stconvert_lib.bash"
Q="$TESTDATA/quant"
SD="$BIN/stdiff"

# ---- already quantized, block size from config.json ----------------------------
run again 0 "$SC" --to f8_e4m3 "$Q/snap-fp8" "$TMP/again"
expect_err again '^stconvert: to F8_E4M3: 0 quantized \(blocks 2x3, 0 F32 scale tensors\), 5 copied, 0 kept, 0 dropped$'
expect_err again '^stconvert: already quantized: 2 FP8 weights and 2 scale tensors copied as they are$'
# Every tensor the same dtype and bytes (the file's layout is stconvert's).
run again_exact 0 "$SD" --exact "$Q/snap-fp8" "$TMP/again"
grep -q '"weight_block_size": \[2, 3\]' "$TMP/again/config.json" && ok || fail "again: config block"
[ "$(grep -c quantization_config "$TMP/again/config.json")" = 1 ] && ok || fail "again: config"
# It still dequantizes to the numpy reference.
run again_back 0 "$SC" --to bf16 "$TMP/again" "$TMP/again-back"
run again_same 0 "$SD" --exact "$TMP/again-back" "$Q/snap-fp8.bf16.safetensors"
# The same --block is fine too.
run again_block 0 "$SC" --to f8_e4m3 --block 2,3 "$Q/snap-fp8" "$TMP/again-block"
run again_block_exact 0 "$SD" --exact "$Q/snap-fp8" "$TMP/again-block"

# ---- partly quantized: the rest quantized beside it -----------------------------
# snap-q quantized with --keep '*embed*' leaves embed_tokens in F32;
# quantizing that again (blocks 2x3 from its config.json) must give what
# one pass without --keep gives, and keeping it again changes nothing.
run part 0 "$SC" --to f8_e4m3 --block 2,3 --keep '*embed*' "$Q/snap-q" "$TMP/part"
run part_same 0 "$SD" --exact "$TMP/part" "$Q/snap-q.f8.safetensors"
run rest 0 "$SC" --to f8_e4m3 "$TMP/part" "$TMP/rest"
expect_err rest '^stconvert: to F8_E4M3: 1 quantized \(blocks 2x3, 1 F32 scale tensors\), 5 copied, 0 kept, 0 dropped$'
run whole 0 "$SC" --to f8_e4m3 --block 2,3 "$Q/snap-q" "$TMP/whole"
if cmp -s "$TMP/whole/model.safetensors" "$TMP/rest/model.safetensors"; then ok
else fail "rest: not the one-pass quantization"; fi
cmp -s "$TMP/whole/config.json" "$TMP/rest/config.json" && ok || fail "rest: config.json"
# The weights quantized in the first pass are the numpy reference's still.
run rest_ref 0 "$SD" --exact -T '*layers*' "$TMP/rest" "$Q/snap-q.f8.safetensors"
run keep_again 0 "$SC" --to f8_e4m3 --keep '*embed*' "$TMP/part" "$TMP/keep-again"
cmp -s "$TMP/part/model.safetensors" "$TMP/keep-again/model.safetensors" && ok || fail "keep_again"
# A file without config.json: the pairs are read with --block's blocks.
run file 0 "$SC" --to f8_e4m3 --block 2,3 --keep "*embed*" "$Q/snap-q.f8.safetensors" "$TMP/file.safetensors"
run file_exact 0 "$SD" --exact "$Q/snap-q.f8.safetensors" "$TMP/file.safetensors"

# ---- what the written config.json could not describe: refused -------------------
refused() { # NAME PATTERN IN [OPTIONS...]
  local name=$1 pat=$2 in=$3; shift 3
  run "$name" 2 "$SC" --to f8_e4m3 "$@" "$in" "$TMP/$name-out"
  expect_err "$name" "$pat"
  [ "$(wc -l <"$TMP/$name.err")" = 1 ] && ok || fail "$name: not one line"
  expect_absent "$name" "$TMP/$name-out"
}
refused other_block "snap-fp8/model\.safetensors: tensor 'model\.layers\.0\.mlp\.down_proj\.weight': already quantized as F8_E4M3 \[5, 7\] with scale 'model\.layers\.0\.mlp\.down_proj\.weight_scale_inv' F32 \[3, 3\]; the config\.json written describes F8_E4M3 with 4x4 block scales model\.layers\.0\.mlp\.down_proj\.weight_scale_inv \[2, 2\]: dequantize first \(--to bf16\) or give --block 2,3$" \
  "$Q/snap-fp8" --block 4,4
refused per_tensor "tensor 'model\.layers\.0\.self_attn\.k_proj\.weight': already quantized as F8_E4M3 \[4, 6\] with scale 'model\.layers\.0\.self_attn\.k_proj\.weight_scale' F32 \[\]; .*: dequantize first \(--to bf16\)$" \
  "$Q/snap-dq"
run mk_channel 0 "$SC" --drop '*k_proj*' "$Q/snap-dq" "$TMP/channel"
refused per_channel "tensor 'model\.layers\.0\.self_attn\.o_proj\.weight': already quantized as F8_E4M3 \[5, 7\] with scale 'model\.layers\.0\.self_attn\.o_proj\.weight_scale' F32 \[5, 1\]" \
  "$TMP/channel"
refused mxfp4 "tensor 'model\.layers\.0\.mlp\.experts\.gate_up_proj_blocks': MXFP4 blocks cannot be kept beside the FP8 quantization_config --to f8_e4m3 writes; dequantize first \(--to bf16\)$" \
  "$Q/snap-mxfp4"
# What --drop leaves out is not in OUT: no reason to refuse it.
run mxfp4_dropped 0 "$SC" --to f8_e4m3 --drop '*_blocks' --drop '*_scales' "$Q/snap-mxfp4" "$TMP/mx-dropped"
run mxfp4_dropped_same 0 "$SD" --exact -T '*_bias' "$TMP/mx-dropped" "$Q/snap-mxfp4"
run per_tensor_dropped 0 "$SC" --to f8_e4m3 --drop '*k_proj*' --drop '*o_proj*' "$Q/snap-dq" "$TMP/pt-dropped"
# An F8 weight without any scale.
run mk_bare 0 "$SC" --drop '*_scale_inv' "$Q/snap-fp8" "$TMP/bare"
refused bare "tensor 'model\.layers\.0\.mlp\.down_proj\.weight': F8_E4M3 without a scale: config\.json's FP8 quantization_config would call it scaled$" \
  "$TMP/bare"
# A broken pair is the dequantization's error, as with --to bf16.
run mk_half 0 "$SC" --drop '*up_proj.weight_scale_inv' "$Q/snap-fp8" "$TMP/half"
refused half "weight 'model\.layers\.0\.mlp\.up_proj\.weight' has no scale 'model\.layers\.0\.mlp\.up_proj\.weight_scale_inv'$" \
  "$TMP/half"
# Without config.json or --block: the default 128 x 128 does not fit.
refused nocfg "does not fit weight" "$Q/snap-q.f8.safetensors"
no_temps requant "$TMP"

finish
