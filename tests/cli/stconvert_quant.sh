# stconvert --to on quantized snapshots: DeepSeek-style block-scaled FP8
# and gpt-oss MXFP4 dequantized bit for bit against gen_quant.py's numpy
# reference (testdata/quant), config.json without quantization_config,
# scales folded in, shards and index; a weight without its scale, a scale
# without its weight, a scale that does not fit and a hostile
# weight_block_size are errors naming the tensors, and nothing is written.
# --to f8_e4m3 quantizes against the same script's numpy reference, and
# dequantizing the result stays within E4M3's rounding bound.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/stconvert_lib.bash"
Q="$TESTDATA/quant"
SD="$BIN/stdiff"

# ---- FP8, block-scaled 2 x 3 (from config.json) ------------------------------
run fp8 0 "$SC" --to bf16 "$Q/snap-fp8" "$TMP/fp8"
expect_err fp8 '^stconvert: to BF16: 0 converted, 2 dequantized, 1 copied, 0 kept, 0 dropped$'
expect_err fp8 '^stconvert: dequantized 2 FP8 weights \(blocks 2x3\); 2 scale tensors \(44 bytes\) folded in$'
run fp8_same 0 "$SD" --exact "$TMP/fp8" "$Q/snap-fp8.bf16.safetensors"
expect_exists fp8 "$TMP/fp8/tokenizer_config.json"
if grep -q quantization_config "$TMP/fp8/config.json"; then fail "fp8: quantization_config kept"; else ok; fi
if grep -q '"torch_dtype": "bfloat16"' "$TMP/fp8/config.json" && grep -q '"vocab_size": 10' "$TMP/fp8/config.json"
then ok; else fail "fp8: config.json lost its other keys"; cat "$TMP/fp8/config.json" >&2; fi
# The rest of config.json is kept byte for byte.
printf '{\n  "architectures": ["DeepseekV3ForCausalLM"],\n  "hidden_size": 7,\n  "torch_dtype": "bfloat16",\n  "vocab_size": 10\n}\n' >"$TMP/fp8.config"
if cmp -s "$TMP/fp8.config" "$TMP/fp8/config.json"; then ok; else fail "fp8: config.json"; diff "$TMP/fp8.config" "$TMP/fp8/config.json" >&2; fi

# --to f64: the products widened exactly, so narrowing them to F32 gives
# gen_stdiff.py's F32 products and to BF16 gen_quant.py's reference.
run f64 0 "$SC" --to f64 "$Q/snap-dq" "$TMP/dq64"
grep -q '"torch_dtype": "float64"' "$TMP/dq64/config.json" && ok || fail "f64: torch_dtype"
run f64_f32 0 "$SC" -q --to f32 "$TMP/dq64" "$TMP/dq64.f32.safetensors"
run f64_f32_same 0 "$SD" --exact "$TMP/dq64.f32.safetensors" "$Q/snap-dq.f32.safetensors"
run f64_fp8 0 "$SC" -q --to double "$Q/snap-fp8" "$TMP/fp8-64"
run f64_fp8_bf16 0 "$SC" -q --to bf16 "$TMP/fp8-64" "$TMP/fp8-64.bf16.safetensors"
run f64_fp8_same 0 "$SD" --exact "$TMP/fp8-64.bf16.safetensors" "$Q/snap-fp8.bf16.safetensors"

# A file inside the snapshot: the config.json beside it gives the blocks.
run fp8_file 0 "$SC" --to bf16 "$Q/snap-fp8/model.safetensors" "$TMP/fp8-file.safetensors"
expect_err fp8_file '\(blocks 2x3\); 2 scale tensors \(44 bytes\) folded in$'
run fp8_file_same 0 "$SD" --exact "$TMP/fp8-file.safetensors" "$Q/snap-fp8.bf16.safetensors"

# To F16 and F32: the same products rounded to those types.
run fp8_f32 0 "$SC" --to f32 "$Q/snap-fp8" "$TMP/fp8-f32"
run fp8_f32_close 0 "$SD" "$TMP/fp8-f32" "$Q/snap-fp8.bf16.safetensors"
grep -q '"torch_dtype": "float32"' "$TMP/fp8-f32/config.json" && ok || fail "fp8_f32: torch_dtype"

# Shards and an index, the scales gone from it.
run fp8_shards 0 "$SC" --to bf16 --shard-size 100B "$Q/snap-fp8" "$TMP/fp8-sh"
run fp8_shards_same 0 "$SD" --exact "$TMP/fp8-sh" "$Q/snap-fp8.bf16.safetensors"
if grep -q scale "$TMP/fp8-sh/model.safetensors.index.json"; then fail "fp8_shards: scale in index"; else ok; fi
grep -q '"total_size": 132' "$TMP/fp8-sh/model.safetensors.index.json" && ok || fail "fp8_shards: total_size"

# Without --to, the quantized checkpoint is copied as it is.
run fp8_copy 0 "$SC" "$Q/snap-fp8" "$TMP/fp8-copy"
run fp8_copy_same 0 "$SD" --exact "$TMP/fp8-copy" "$Q/snap-fp8"
grep -q quantization_config "$TMP/fp8-copy/config.json" && ok || fail "fp8_copy: config changed"

# ---- MXFP4 (gpt-oss) ---------------------------------------------------------
run mx 0 "$SC" --to bf16 "$Q/snap-mxfp4" "$TMP/mx"
expect_err mx 'dequantized 1 MXFP4 weight; 1 scale tensor \(16 bytes\) folded in'
run mx_same 0 "$SD" --exact "$TMP/mx" "$Q/snap-mxfp4.bf16.safetensors"
if [ "$(cat "$TMP/mx/config.json")" = '{"architectures": ["GptOssForCausalLM"], "torch_dtype": "bfloat16"}' ]
then ok; else fail "mx: config.json"; cat "$TMP/mx/config.json" >&2; fi

# ---- mismatches: errors naming both tensors, nothing written ------------------
run mk_noscale 0 "$SC" --drop '*down_proj.weight_scale_inv' "$Q/snap-fp8" "$TMP/noscale"
run noscale 2 "$SC" --to bf16 "$TMP/noscale" "$TMP/o1"
expect_err noscale "weight 'model.layers.0.mlp.down_proj.weight' has no scale 'model.layers.0.mlp.down_proj.weight_scale_inv'"
expect_absent noscale "$TMP/o1"
run mk_noweight 0 "$SC" --drop '*up_proj.weight' "$Q/snap-fp8" "$TMP/noweight"
run noweight 2 "$SC" --to bf16 "$TMP/noweight" "$TMP/o2"
expect_err noweight "scale 'model.layers.0.mlp.up_proj.weight_scale_inv' has no weight 'model.layers.0.mlp.up_proj.weight'"
expect_absent noweight "$TMP/o2"
run mk_noblocks 0 "$SC" --drop '*_blocks' "$Q/snap-mxfp4" "$TMP/noblocks"
run noblocks 2 "$SC" --to bf16 "$TMP/noblocks" "$TMP/o3"
expect_err noblocks "MXFP4 scale 'model.layers.0.mlp.experts.gate_up_proj_scales' has no weight 'model.layers.0.mlp.experts.gate_up_proj_blocks'"
expect_absent noblocks "$TMP/o3"

# A block size the scales do not fit, and hostile ones.
bad_block() { # NAME VALUE PATTERN
  mkdir -p "$TMP/$1"
  cp "$Q/snap-fp8/model.safetensors" "$TMP/$1/"
  tr -d '\n' <"$Q/snap-fp8/config.json" |
    sed 's/"weight_block_size": \[ *2, *3 *\]/"weight_block_size": '"$2"'/' >"$TMP/$1/config.json"
  run "$1" 2 "$SC" --to bf16 "$TMP/$1" "$TMP/$1-result"
  expect_err "$1" "$3"
  expect_absent "$1" "$TMP/$1-result"
}
bad_block bk_fit '[4, 4]' "scale 'model.layers.0.mlp.down_proj.weight_scale_inv' F32 \[3, 3\] does not fit weight 'model.layers.0.mlp.down_proj.weight' F8_E4M3 \[5, 7\]: block 4 x 4 needs \[2, 2\]"
bad_block bk_zero '[0, 128]' 'weight_block_size \[0, 128\]: a block side is 0'
bad_block bk_neg '[-128, 128]' 'weight_block_size \[-128, 128\]: a block side is negative'
bad_block bk_huge '[99999999999, 1]' 'weight_block_size \[99999999999, 1\]: a block side is too large'
bad_block bk_float '[128.0, 128]' 'weight_block_size \[128.0, 128\]: a block side is not an integer'
bad_block bk_one '[128]' 'weight_block_size \[128\]: a block side is not a pair of integers'
[ "$(wc -l <"$TMP/bk_zero.err")" = 1 ] && ok || fail "bk_zero: not one line"

# ---- --to f8_e4m3: quantizing (reference: gen_quant.py's numpy) ---------------
run q8 0 "$SC" --to f8_e4m3 --block 2,3 --keep '*embed*' "$Q/snap-q" "$TMP/q8"
expect_err q8 '^stconvert: to F8_E4M3: 2 quantized \(blocks 2x3, 2 F32 scale tensors\), 1 copied, 1 kept, 0 dropped$'
# (a) codes and scales bit for bit; (c) the 1-D and --keep tensors as they were.
run q8_same 0 "$SD" --exact "$TMP/q8" "$Q/snap-q.f8.safetensors"
run q8_keep 0 "$SD" --exact -T 'model.embed_tokens.weight' -T 'model.norm.weight' \
  "$TMP/q8" "$Q/snap-q/model.safetensors"
# (b) dequantized back: the numpy dequantization exactly, and within
# E4M3's rounding bound (2^-4 relative, plus BF16's) of the original.
run q8_back 0 "$SC" --to bf16 "$TMP/q8" "$TMP/q8-back"
run q8_back_same 0 "$SD" --exact "$TMP/q8-back" "$Q/snap-q.f8.bf16.safetensors"
run q8_bound 0 "$SD" --rtol 0.0645 --atol 1e-5 "$TMP/q8-back" "$Q/snap-q/model.safetensors"
run q8_lossy 1 "$SD" --rtol 0.001 --atol 0 "$TMP/q8-back" "$Q/snap-q/model.safetensors"
# (d) config.json: the quantization_config, every other byte kept.
printf '{\n  "architectures": ["DeepseekV3ForCausalLM"],\n  "torch_dtype": "bfloat16",\n  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [2, 3]}\n}\n' >"$TMP/q8.config"
if cmp -s "$TMP/q8.config" "$TMP/q8/config.json"; then ok; else fail "q8: config.json"; diff "$TMP/q8.config" "$TMP/q8/config.json" >&2; fi
# The default block is 128 x 128: one scale per weight here.
run q8_default 0 "$SC" --to f8_e4m3 "$Q/snap-q" "$TMP/q8-def"
grep -q '"weight_block_size": \[128, 128\]' "$TMP/q8-def/config.json" && ok || fail "q8_default: config"
run q8_def_info 0 "$BIN/stinfo" --json "$TMP/q8-def"
grep -q '"model.layers.0.mlp.down_proj.weight_scale_inv"' "$TMP/q8_def_info.out" && ok || fail "q8_default: no scale"
run q8_def_back 0 "$SC" --to bf16 "$TMP/q8-def" "$TMP/q8-def-back"
run q8_def_bound 0 "$SD" --rtol 0.0645 --atol 1e-5 "$TMP/q8-def-back" "$Q/snap-q/model.safetensors"
# (e) hostile --block: one line, exit 2, nothing written.
bad_qblock() { # NAME VALUE PATTERN
  run "$1" 2 "$SC" --to f8_e4m3 --block "$2" "$Q/snap-q" "$TMP/$1-result"
  expect_err "$1" "$3"
  [ "$(wc -l <"$TMP/$1.err")" = 1 ] && ok || fail "$1: not one line"
  expect_absent "$1" "$TMP/$1-result"
}
bad_qblock qb_zero '0,128' "^stconvert: --block '0,128': a block side is 0$"
bad_qblock qb_neg '-1,128' "^stconvert: --block '-1,128': a block side is negative$"
bad_qblock qb_huge '99999999999,1' "^stconvert: --block '99999999999,1': a block side is too large \(at most 1048576\)$"
bad_qblock qb_alpha 'a,b' "^stconvert: --block 'a,b': a block side is not a pair of integers$"
bad_qblock qb_one '128' "^stconvert: --block '128': not R,C"
bad_qblock qb_three '1,2,3' "^stconvert: --block '1,2,3': not R,C"
run qb_noquant 2 "$SC" --to bf16 --block 2,3 "$Q/snap-q" "$TMP/qb_noquant-result"
# A single file has no config.json to record other blocks than 128 x 128.
run qb_file 2 "$SC" --to f8_e4m3 --block 2,3 "$Q/snap-q/model.safetensors" "$TMP/qb_file.safetensors"
expect_err qb_file "^stconvert: 2x3 blocks are recorded in config\.json's quantization_config: OUT must be a directory"
expect_absent qb_file "$TMP/qb_file.safetensors"
run qb_file_default 0 "$SC" --to f8_e4m3 "$Q/snap-q/model.safetensors" "$TMP/qb_file128.safetensors"
run qb_file_back 0 "$SC" --to bf16 "$TMP/qb_file128.safetensors" "$TMP/qb_file128-back.safetensors"
run qb_file_bound 0 "$SD" --rtol 0.0645 --atol 1e-5 "$TMP/qb_file128-back.safetensors" "$Q/snap-q/model.safetensors"
expect_absent qb_noquant "$TMP/qb_noquant-result"
# ---- the progress bar (on a terminal: script(1) gives one) counts every input
# byte, a quantized weight's and MXFP4 blocks' too, which the work reads.
if command -v script >/dev/null; then
  prog_full() { # NAME TOTAL ARGS...: the last bar line reaches TOTAL of TOTAL
    local name=$1 total=$2
    shift 2
    script -qec "$(printf '%q ' env -u ST_NO_PROGRESS "$SC" -q "$@")" /dev/null >"$TMP/$name.tty" 2>&1
    if tr '\r' '\n' <"$TMP/$name.tty" | grep -a '%' | tail -n1 |
       grep -aq "\] 100% $total / $total "; then ok; else
      fail "$name: progress did not reach $total"; tr '\r' '\n' <"$TMP/$name.tty" | tail -n3 >&2; fi
  }
  prog_full prog_quant '250 B' --to f8_e4m3 "$Q/snap-q" "$TMP/prog-q"
  prog_full prog_mxfp4 '288 B' --to bf16 "$Q/snap-mxfp4" "$TMP/prog-mx"
fi

# ---- static FP8 (compressed-tensors, ModelOpt): activation scales --------------
# gen_ct.py: per-tensor and per-channel weight_scale, input_scale, k_scale
# and v_scale; the BF16 reference has no activation scale.
run ct 0 "$SC" --to bf16 "$Q/snap-ct" "$TMP/ct"
expect_err ct '^stconvert: dequantized 2 FP8 weights \(per-channel or per-tensor scales\); 2 scale tensors \(28 bytes\) folded in, 4 activation scales \(16 bytes\) dropped$'
run ct_same 0 "$SD" --exact "$TMP/ct" "$Q/snap-ct.bf16.safetensors"
if grep -q quantization_config "$TMP/ct/config.json"; then fail "ct: quantization_config kept"; else ok; fi
run ct_diff 0 "$SD" "$Q/snap-ct" "$TMP/ct"
expect_out ct_diff '^B is exactly A dequantized to BF16$'
if grep -q '^only in' "$TMP/ct_diff.out"; then fail "ct_diff: activation scales listed"; else ok; fi
# Without --to they are copied with everything else.
run ct_copy 0 "$SC" "$Q/snap-ct" "$TMP/ct-copy"
run ct_copy_same 0 "$SD" --exact "$TMP/ct-copy" "$Q/snap-ct"

# ---- a sharded input keeps its shards when (de)quantized ------------------------
# index_shard INDEX TENSOR: the shard file INDEX maps TENSOR to.
index_shard() { grep -o "\"$2\": \"[^\"]*\"" "$1" | sed 's/.*: "//; s/"$//'; }
shard_is() { # NAME INDEX TENSOR FILE
  local got
  got=$(index_shard "$2" "$3")
  if [ "$got" = "$4" ]; then ok; else fail "$1: $3 in '$got', expected $4"; fi
}
S1=model-00001-of-00002.safetensors S2=model-00002-of-00002.safetensors
# snap-fp8 cut in two, as it is (no --to): scales and the norm in shard 1,
# the FP8 weights in shard 2.
run cut 0 "$SC" --shard-size 60B "$Q/snap-fp8" "$TMP/cut"
shard_is cut "$TMP/cut/model.safetensors.index.json" model.layers.0.mlp.up_proj.weight_scale_inv "$S1"
shard_is cut "$TMP/cut/model.safetensors.index.json" model.layers.0.mlp.up_proj.weight "$S2"
run cut_dq 0 "$SC" -v --to bf16 "$TMP/cut" "$TMP/cut-dq"
expect_err cut_dq "^stconvert: shard $S1 -> $S1\$"
expect_err cut_dq "^stconvert: shard $S2 -> $S2\$"
for t in model.norm.weight:$S1 model.layers.0.mlp.up_proj.weight:$S2 \
         model.layers.0.mlp.down_proj.weight:$S2; do
  shard_is cut_dq "$TMP/cut-dq/model.safetensors.index.json" "${t%%:*}" "${t#*:}"
done
if grep -q scale "$TMP/cut-dq/model.safetensors.index.json"; then fail "cut_dq: scale in index"; else ok; fi
grep -q '"total_size": 132' "$TMP/cut-dq/model.safetensors.index.json" && ok || fail "cut_dq: total_size"
run cut_dq_same 0 "$SD" --exact "$TMP/cut-dq" "$Q/snap-fp8.bf16.safetensors"
# Shard 1 without the norm holds only scales: it is not written.
run cut_dq_drop 0 "$SC" --to bf16 --drop model.norm.weight "$TMP/cut" "$TMP/cut-drop"
expect_exists cut_dq_drop "$TMP/cut-drop/model.safetensors"
expect_absent cut_dq_drop "$TMP/cut-drop/model.safetensors.index.json"
# --shard-size plans anew.
run cut_dq_plan 0 "$SC" --to bf16 --shard-size 1GB "$TMP/cut" "$TMP/cut-plan"
expect_exists cut_dq_plan "$TMP/cut-plan/model.safetensors"
# A plain dtype conversion keeps a sharded input's shards too (one rule).
run cut_plain 0 "$SC" --to f32 "$Q/snap-fp8.bf16.safetensors" "$TMP/plain.safetensors"
run cut_plain_sh 0 "$SC" --shard-size 60B "$TMP/plain.safetensors" "$TMP/plain-cut"
run cut_plain_kept 0 "$SC" --to bf16 "$TMP/plain-cut" "$TMP/plain-kept"
n=$(ls "$TMP/plain-kept" | tr '\n' ' ')
want=$(ls "$TMP/plain-cut" | tr '\n' ' ')
if [ "$n" = "$want" ]; then ok; else fail "cut_plain_kept: files '$n', expected '$want'"; fi
# Quantizing: each scale lands beside its weight, in the weight's shard.
run cut_q_in 0 "$SC" --shard-size 100B "$Q/snap-q" "$TMP/cut-q-in"
run cut_q 0 "$SC" --to f8_e4m3 --block 2,3 --keep '*embed*' "$TMP/cut-q-in" "$TMP/cut-q"
for w in model.layers.0.mlp.down_proj.weight model.layers.0.mlp.up_proj.weight; do
  want=$(index_shard "$TMP/cut-q-in/model.safetensors.index.json" "$w")
  shard_is cut_q "$TMP/cut-q/model.safetensors.index.json" "$w" "$want"
  shard_is cut_q "$TMP/cut-q/model.safetensors.index.json" "${w}_scale_inv" "$want"
done
run cut_q_same 0 "$SD" --exact "$TMP/cut-q" "$Q/snap-q.f8.safetensors"
no_temps quant "$TMP"

finish
