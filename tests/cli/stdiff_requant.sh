# stdiff against stconvert --to f8_e4m3's own output: B quantized from A is
# judged with the tolerance of B's format and, an FP8 weight with F32
# scales, quantized again from A with B's blocks (libst's quantizer, the
# reference): "B is exactly A quantized" exits 0 with the error figures; a
# damaged code or scale exits 1 naming the tensor. The figures the
# tolerance comes from are E4M3's spacing (doc/format.md, "Comparing a
# quantized side"). And PyTorch's tied lm_head.weight, written once by
# stconvert, is no difference (testdata/torch/gen_torch.py saves it tied).
. "$(dirname "$0")/lib.bash"
SD="$BIN/stdiff"
SC="$BIN/stconvert"
[ -x "$SD" ] && [ -x "$SC" ] && [ -x "$BIN/gpt2export" ] && [ -x "$BIN/stinfo" ] ||
  { echo "tools not built"; exit 77; }
export ST_NO_PROGRESS=1

no_line() { # NAME PATTERN: stdout of NAME has no line matching
  if grep -Eq -- "$2" "$TMP/$1.out"; then fail "$1: stdout matches /$2/"; else ok; fi
}

# byte_at FILE TENSOR K: the file offset of byte K of TENSOR's data
# (stinfo --json's header_bytes and data_offsets).
byte_at() {
  local j hb off
  j=$("$BIN/stinfo" --json "$1")
  hb=$(sed -n 's/.*"header_bytes": \([0-9]*\).*/\1/p' <<<"$j" | head -1)
  off=$(grep -F "\"name\": \"$2\"," <<<"$j" | sed -n 's/.*"data_offsets": \[\([0-9]*\),.*/\1/p')
  echo $((8 + hb + off + $3))
}

# flip FILE OFFSET MASK: XOR the byte at OFFSET with MASK, in place.
flip() {
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "\\$(printf '%03o' $((b ^ $3)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

run g 0 "$BIN/gpt2export" --random "$TMP/g" --layers 2 --heads 2 --width 64 --vocab 300 --context 160 --seed 5
W='h\.[01]\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight|wte\.weight|wpe\.weight'

# ---- the README's example: the default blocks -----------------------------------
run q 0 "$SC" -q --to f8_e4m3 "$TMP/g" "$TMP/q"
run same 0 "$SD" "$TMP/g" "$TMP/q"
expect_out same '^B: dequantized 10 FP8 weights \(blocks 128x128\); 10 scale tensors \(76 bytes\) folded in$'
expect_out same '^10 tensors F32 → F8_E4M3, all exactly A quantized; max abs [0-9.e-]+, max rel [0-9.e-]+, mean abs [0-9.e-]+ \(rtol 0\.06667, atol [0-9.e-]+ at most\)$'
expect_out same '^B is exactly A quantized to F8_E4M3 \(128×128 blocks\)$'
expect_out same '^28 tensors compared: 18 identical, 10 within tolerance, 0 differ; 0 only in A, 0 only in B, 0 shape changed, 10 dtype changed, 1 config\.json key differs: equal$'
no_line same '^dtype changed:|^differs:'
# -vv: every weight within E4M3's tolerance and its quantization, one by one.
run same_v 0 "$SD" -vv "$TMP/g" "$TMP/q"
n=$(grep -Ec "^within tolerance: ($W) \(F32 vs F8_E4M3 dequantized, [0-9]+ elements\): 0 mismatched \(0%\), max abs .*, B is exactly A quantized to F8_E4M3 \(128×128 blocks\)$" "$TMP/same_v.out")
[ "$n" = 10 ] && ok || fail "same_v: $n of 10 weights exactly quantized"
[ "$(grep -c '^dtype changed: .*: F32 -> F8_E4M3$' "$TMP/same_v.out")" = 10 ] && ok || fail "same_v: dtype lines"
# Every element within |a - b| <= 1e-5 + (1/15) |b| + ...: E4M3 rounds to
# 2^-4 of a value; the mean well under it.
run rel 0 "$SD" --rtol 0.0667 --atol 1e-5 "$TMP/g" "$TMP/q"
expect_out rel '^B is exactly A quantized to F8_E4M3 \(128×128 blocks\)$'
# Tighter than E4M3 can be: differs, and is still said to be A quantized.
run tight 1 "$SD" --rtol 0.01 "$TMP/g" "$TMP/q"
expect_out tight '^differs: wte\.weight \(F32 vs F8_E4M3 dequantized, 19200 elements\): .*, B is exactly A quantized to F8_E4M3 \(128×128 blocks\)$'
no_line tight '^B is exactly'
run exact 1 "$SD" --exact "$TMP/g" "$TMP/q"

# ---- other blocks, per channel (--block 1,C) ------------------------------------------
for b in 32,16 1,1024 7,5; do
  run "q_$b" 0 "$SC" -q --to f8_e4m3 --block "$b" "$TMP/g" "$TMP/q_$b"
  run "same_$b" 0 "$SD" "$TMP/g" "$TMP/q_$b"
  expect_out "same_$b" "^B is exactly A quantized to F8_E4M3 \\(${b%,*}×${b#*,} blocks\\)\$"
done
# Without weight_block_size in config.json, [out, 1] scales are per channel
# and [1, 1] per tensor (the default 128 x 128 would need other shapes).
mkdir "$TMP/ch" && cp "$TMP/q_1,1024/model.safetensors" "$TMP/ch/"
run ch 0 "$SD" -T 'h.1.mlp.c_fc.weight' -T 'wte.weight' "$TMP/g" "$TMP/ch"
expect_out ch '^B is exactly A quantized to F8_E4M3 \(per channel\)$'
run qt 0 "$SC" -q --to f8_e4m3 --block 1024,1024 "$TMP/g" "$TMP/qt"
mkdir "$TMP/tensor" && cp "$TMP/qt/model.safetensors" "$TMP/tensor/"
run tensor 0 "$SD" -T 'h.0.mlp.c_proj.weight' -T 'wte.weight' "$TMP/g" "$TMP/tensor"
expect_out tensor '^B is exactly A quantized to F8_E4M3 \(per tensor\)$'
# BF16 in, as a BF16 checkpoint quantizes: BF16's tolerance added.
run b16 0 "$SC" -q --to bf16 "$TMP/g" "$TMP/b16"
run qb16 0 "$SC" -q --to f8_e4m3 "$TMP/b16" "$TMP/qb16"
run same_b16 0 "$SD" "$TMP/b16" "$TMP/qb16"
expect_out same_b16 '^10 tensors BF16 → F8_E4M3, all exactly A quantized; .*\(rtol 0\.08267, '
expect_out same_b16 '^B is exactly A quantized to F8_E4M3 \(128×128 blocks\)$'
# F32 against the quantization of its BF16 copy: close, but not its quantization.
run other 1 "$SD" "$TMP/g" "$TMP/qb16"
expect_out other '^differs: wte\.weight \(F32 vs F8_E4M3 dequantized, 19200 elements\): .*, B is not exactly A quantized to F8_E4M3 \(128×128 blocks\)$'
run other_tol 0 "$SD" --rtol 0.08 --atol 1e-5 "$TMP/g" "$TMP/qb16"

# ---- damaged: one code, one scale -------------------------------------------------
f="$TMP/q/model.safetensors"
cp -r "$TMP/q" "$TMP/code"
flip "$TMP/code/model.safetensors" "$(byte_at "$f" h.1.mlp.c_fc.weight 1000)" 1
run code 1 "$SD" "$TMP/g" "$TMP/code"
expect_out code '^differs: h\.1\.mlp\.c_fc\.weight \(F32 vs F8_E4M3 dequantized, 16384 elements\): .*, B is not exactly A quantized to F8_E4M3 \(128×128 blocks\)$'
expect_out code '^9 tensors F32 → F8_E4M3, all exactly A quantized; '
expect_out code ' 9 within tolerance, 1 differ; .*: different$'
no_line code '^B is exactly'
[ "$(grep -c '^differs:' "$TMP/code.out")" = 1 ] && ok || fail "code: not one tensor named"
cp -r "$TMP/q" "$TMP/scale"
flip "$TMP/scale/model.safetensors" "$(byte_at "$f" h.0.attn.c_attn.weight_scale_inv 4)" 1
run scale 1 "$SD" "$TMP/g" "$TMP/scale"
expect_out scale '^differs: h\.0\.attn\.c_attn\.weight \(F32 vs F8_E4M3 dequantized, 12288 elements\): 0 mismatched \(0%\), .*, B is not exactly A quantized to F8_E4M3 \(128×128 blocks\)$'
# Given tolerances judge by the values alone: a 2^-23 scale change passes.
run scale_tol 0 "$SD" --rtol 0.0667 --atol 1e-5 "$TMP/g" "$TMP/scale"
# A flipped sign is far outside E4M3's tolerance.
cp -r "$TMP/q" "$TMP/sign"
flip "$TMP/sign/model.safetensors" "$(byte_at "$f" wpe.weight 77)" 128
run sign 1 "$SD" "$TMP/g" "$TMP/sign"
expect_out sign '^differs: wpe\.weight \(F32 vs F8_E4M3 dequantized, 10240 elements\): 1 mismatched \(0\.00977%\), max abs [0-9.e-]+, max rel 1\.9[0-9]*, .*B is not exactly A quantized'
run sign_first 1 "$SD" --first "$TMP/g" "$TMP/sign"
expect_out sign_first '^differs: wpe\.weight '

# ---- JSON: the same verdicts, config.json's changes -------------------------------------
run json 0 "$SD" --json "$TMP/g" "$TMP/q"
expect_out json '"exactly_quantized_to": "F8_E4M3 \(128×128 blocks\)", "exactly_dequantized_to": null\}\}$'
expect_out json '^  \{"name": "wte\.weight", "dtype_a": "F32", "dtype_b": "F8_E4M3", "elements": 19200, "values_compared": true, "verdict": "within tolerance", "identical": false, "exactly_encoded": true, "mismatched": 0, .*"rtol": 0\.0666[0-9]*, .*"dequantized": "b", "scale": "wte\.weight_scale_inv", "quantization_checked": true\},?$'
expect_out json '^  \{"key": "quantization_config", "a": null, "b": "\{\\"activation_scheme\\":\\"dynamic\\",.*\}"\}$'
run json_code 1 "$SD" --json "$TMP/g" "$TMP/code"
expect_out json_code '"name": "h\.1\.mlp\.c_fc\.weight", .*"verdict": "differs", "identical": false, "exactly_encoded": false, '
expect_out json_code '"exactly_quantized_to": null, '
# The config.json keys stconvert --to bf16 changes, in the text and in JSON.
run cfg 0 "$SD" "$TMP/g" "$TMP/b16"
expect_out cfg '^config\.json torch_dtype: "float32" -> "bfloat16"$'
run cfg_json 0 "$SD" --json "$TMP/g" "$TMP/b16"
expect_out cfg_json '^  \{"key": "torch_dtype", "a": "\\"float32\\"", "b": "\\"bfloat16\\""\}$'

# ---- tied aliases --------------------------------------------------------------------
T=$TESTDATA/torch
run tie_conv 0 "$SC" -q "$T/state.bin" "$TMP/state.safetensors"
run tie 0 "$SD" "$T/state.bin" "$TMP/state.safetensors"
expect_out tie '^lm_head\.weight: tied alias of wte\.weight, not stored in B$'
expect_out tie '^15 tensors compared: 15 identical, .* 0 only in A, 0 only in B, .*, 1 tied alias, .*: equal$'
run tie_rev 0 "$SD" "$TMP/state.safetensors" "$T/state.bin"
expect_out tie_rev '^lm_head\.weight: tied alias of wte\.weight, not stored in A$'
run tie_first 0 "$SD" --first "$T/state.bin" "$TMP/state.safetensors"
run tie_json 0 "$SD" --json "$T/state.bin" "$TMP/state.safetensors"
expect_out tie_json '^ "tied_aliases": \[\{"name": "lm_head\.weight", "alias_of": "wte\.weight", "only_in": "a"\}\],$'
expect_out tie_json '"only_in_a": \[\],'
# Against numpy's copy without the alias (gen_torch.py), not stconvert's.
run tie_np 0 "$SD" --exact "$T/state.bin" "$T/state.dedup.expected.safetensors"
expect_out tie_np '^lm_head\.weight: tied alias of wte\.weight, not stored in B$'
# Not an alias: a safetensors file holding the name twice has it stored.
run tie_stored 1 "$SD" "$TMP/state.safetensors" "$T/state.expected.safetensors"
expect_out tie_stored '^only in B: lm_head\.weight$'
# A GPT-2 snapshot that ships pytorch_model.bin, against stconvert's copy.
run tie_g 0 "$SC" -q "$TESTDATA/gpt2/tiny-torch" "$TMP/tiny"
run tie_gd 0 "$SD" "$TESTDATA/gpt2/tiny-torch" "$TMP/tiny"
# (tiny-torch saves lm_head.weight first: the one stconvert writes.)
expect_out tie_gd '^transformer\.wte\.weight: tied alias of lm_head\.weight, not stored in B$'
expect_out tie_gd ', 1 tied alias, .*: equal$'
finish
