# stdiff with one quantized side: its weights are compared dequantized
# (FP8 block-scaled 2-D and 3-D experts, E8M0 and BF16 block scales,
# per-tensor and per-channel weight_scale; MXFP4) and its scales are
# consumed. The references are gen_stdiff.py's and gen_quant.py's numpy
# dequantizations (testdata/quant), independent of libst; tampered copies
# are made here byte by byte.
. "$(dirname "$0")/lib.bash"
Q="$TESTDATA/quant"
SD="$BIN/stdiff"
SC="$BIN/stconvert"
[ -x "$SD" ] && [ -x "$SC" ] || { echo "tools not built"; exit 77; }
export ST_NO_PROGRESS=1

no_line() { # NAME PATTERN: stdout of NAME has no line matching
  if grep -Eq -- "$2" "$TMP/$1.out"; then fail "$1: stdout matches /$2/"; else ok; fi
}

# ---- FP8 against the numpy reference ------------------------------------------
run ref 0 "$SD" "$Q/snap-dq" "$Q/snap-dq.bf16.safetensors"
expect_out ref '^A: dequantized 5 FP8 weights \(blocks 2x3\); 5 scale tensors \(100 bytes\) folded in$'
expect_out ref '^5 tensors F8_E4M3 → BF16, all exactly A dequantized$'
expect_out ref '^B is exactly A dequantized to BF16$'
expect_out ref '^7 tensors compared: 1 identical, 6 within tolerance, 0 differ; 0 only in A, 0 only in B, 0 shape changed, 6 dtype changed: equal$'
no_line ref '^only in|scale_inv|weight_scale'
# Bits against bits, the other way round, and the F32 products.
run ref_exact 0 "$SD" --exact -T '*proj*' -T '*gate*' "$Q/snap-dq" "$Q/snap-dq.bf16.safetensors"
expect_out ref_exact '^B is exactly A dequantized to BF16$'
run ref_rev 0 "$SD" "$Q/snap-dq.bf16.safetensors" "$Q/snap-dq"
expect_out ref_rev '^B: dequantized 5 FP8 weights'
expect_out ref_rev '^5 tensors BF16 → F8_E4M3, all A exactly B dequantized$'
expect_out ref_rev '^A is exactly B dequantized to BF16$'
run ref_f32 0 "$SD" "$Q/snap-dq" "$Q/snap-dq.f32.safetensors"
expect_out ref_f32 '^B is exactly A dequantized to F32$'
run ref_f32_exact 0 "$SD" --exact -T '*proj*' -T '*gate*' -T '*embed*' "$Q/snap-dq" "$Q/snap-dq.f32.safetensors"
# One pair at a time, verbose: each scale layout named and exact.
for t in mlp.experts.down_proj mlp.gate self_attn.k_proj self_attn.o_proj self_attn.q_proj; do
  run "v_$t" 0 "$SD" -v -T "model.layers.0.$t.weight" "$Q/snap-dq" "$Q/snap-dq.bf16.safetensors"
  expect_out "v_$t" "^within tolerance: model\.layers\.0\.$t\.weight \(F8_E4M3 dequantized vs BF16, [0-9]+ elements\): 0 mismatched .*, B is exactly A dequantized to BF16$"
done

# ---- against stconvert's dequantization ---------------------------------------
run conv 0 "$SC" --to bf16 "$Q/snap-dq" "$TMP/bf16"
run conv_same 0 "$SD" "$Q/snap-dq" "$TMP/bf16"
expect_out conv_same '^B is exactly A dequantized to BF16$'
expect_out conv_same "^config\.json quantization_config: .* -> \(absent\)$"
run conv_f32 0 "$SC" --to f32 "$Q/snap-dq" "$TMP/f32"
run conv_f32_same 0 "$SD" "$Q/snap-dq" "$TMP/f32"
expect_out conv_f32_same '^B is exactly A dequantized to F32$'
expect_out conv_f32_same '^1 tensor BF16 → F32, A exactly B rounded$'
run conv_mx 0 "$SC" --to bf16 "$Q/snap-mxfp4" "$TMP/mx"
run conv_mx_same 0 "$SD" "$Q/snap-mxfp4" "$TMP/mx"
expect_out conv_mx_same '^A: dequantized 1 MXFP4 weight; 1 scale tensor \(16 bytes\) folded in$'
expect_out conv_mx_same '^1 tensor MXFP4 → BF16, exactly A dequantized$'
expect_out conv_mx_same '^B is exactly A dequantized to BF16$'

# ---- MXFP4 against transformers' layout (numpy) --------------------------------
run mx 0 "$SD" "$Q/snap-mxfp4" "$Q/snap-mxfp4.bf16.safetensors"
expect_out mx '^B is exactly A dequantized to BF16$'
no_line mx '^only in'
run mx_rev 0 "$SD" -v "$Q/snap-mxfp4.bf16.safetensors" "$Q/snap-mxfp4"
expect_out mx_rev '^within tolerance: model\.layers\.0\.mlp\.experts\.gate_up_proj \(BF16 vs MXFP4 dequantized, 512 elements\): .*A is exactly B dequantized to BF16$'
expect_out mx_rev '^A is exactly B dequantized to BF16$'

# ---- tampered copies of the reference ------------------------------------------
# The file's last two bytes are the BF16 of q_proj's element [4, 6], 1.5
# (0x3FC0, gen_stdiff.py): a flipped sign makes it -1.5 (|d| / |b| = 2),
# a flipped low bit 1.5078125 (within BF16's tolerance, but not exact).
n=$(stat -c %s "$Q/snap-dq.bf16.safetensors")
cp "$Q/snap-dq.bf16.safetensors" "$TMP/sign.safetensors"
printf '\277' | dd of="$TMP/sign.safetensors" bs=1 seek=$((n - 1)) conv=notrunc 2>/dev/null
cp "$Q/snap-dq.bf16.safetensors" "$TMP/ulp.safetensors"
printf '\301' | dd of="$TMP/ulp.safetensors" bs=1 seek=$((n - 2)) conv=notrunc 2>/dev/null
run sign 1 "$SD" "$Q/snap-dq" "$TMP/sign.safetensors"
expect_out sign '^differs: model\.layers\.0\.self_attn\.q_proj\.weight \(F8_E4M3 dequantized vs BF16, 35 elements\): 1 mismatched \(2\.86%\), max abs [0-9.]+, max rel 2, .*B is not exactly A dequantized to BF16$'
expect_out sign '^4 tensors F8_E4M3 → BF16, all exactly A dequantized$'
no_line sign 'B is exactly A dequantized'
run sign_exact 1 "$SD" --exact -T '*q_proj*' "$Q/snap-dq" "$TMP/sign.safetensors"
expect_out sign_exact '1 mismatched \(2\.86%\).*worst at \[4, 6\]'
run ulp 0 "$SD" "$Q/snap-dq" "$TMP/ulp.safetensors"
expect_out ulp '^5 tensors F8_E4M3 → BF16: 4 exactly A dequantized, 1 within tolerance; max abs [0-9.e+-]+, max rel 0\.005181, mean abs [0-9.e+-]+ \(rtol [0-9.e-]+, atol [0-9.e-]+ at most\)$'
no_line ulp 'B is exactly A dequantized'
run ulp_exact 1 "$SD" --exact -T '*q_proj*' "$Q/snap-dq" "$TMP/ulp.safetensors"
expect_out ulp_exact '^differs: model\.layers\.0\.self_attn\.q_proj\.weight .*: 1 mismatched .*, max rel 0\.005181, .*worst at \[4, 6\], B is not exactly A dequantized to BF16$'
run sign_first 1 "$SD" --first "$Q/snap-dq" "$TMP/sign.safetensors"
expect_out sign_first '^differs: model\.layers\.0\.self_attn\.q_proj\.weight '

# ---- JSON ----------------------------------------------------------------------
run json 0 "$SD" --json "$Q/snap-dq" "$Q/snap-dq.bf16.safetensors"
expect_out json '^ "dequantized": \{"side": "a", "fp8_weights": 5, "mxfp4_weights": 0, "scale_tensors": 5, "scale_bytes": 100, "block_size": \[2, 3\], "exactly_quantized_to": null, "exactly_dequantized_to": "BF16"\}\}$'
expect_out json '"name": "model\.layers\.0\.mlp\.gate\.weight", "dtype_a": "F8_E4M3", "dtype_b": "BF16", "elements": 15, .*"exactly_encoded": true, "mismatched": 0, .*"dequantized": "a", "scale": "model\.layers\.0\.mlp\.gate\.weight_scale_inv", "quantization_checked": false\}'
expect_out json '"name": "model\.embed_tokens\.weight", .*"dequantized": null, "scale": null, "quantization_checked": false\}'
expect_out json '^\{"schema": 1, "equal": true,$'
expect_out json '"only_in_a": \[\],'
run json_sign 1 "$SD" --json "$Q/snap-dq" "$TMP/sign.safetensors"
expect_out json_sign '"exactly_dequantized_to": null\}\}$'
expect_out json_sign '"name": "model\.layers\.0\.self_attn\.q_proj\.weight", .*"exactly_encoded": false, "mismatched": 1, .*"max_rel_diff": 2, .*"mean_abs_diff": [0-9.e-]+, .*"quantization_checked": false\}'
run json_mx 0 "$SD" --json "$Q/snap-mxfp4.bf16.safetensors" "$Q/snap-mxfp4"
expect_out json_mx '"dtype_a": "BF16", "dtype_b": "F4", "elements": 512, .*"exactly_encoded": true, .*"dequantized": "b", "scale": "model\.layers\.0\.mlp\.experts\.gate_up_proj_scales", "quantization_checked": false\}'
expect_out json_mx '"side": "b", "fp8_weights": 0, "mxfp4_weights": 1, .*"exactly_dequantized_to": "BF16"'
# The format's tolerance (doc/format.md, "Comparing a quantized side"): E2M1
# rounds within r = 1/4 of a value plus h = 1/4 of the scale, s = 2^(b - 127)
# for the largest scale byte b (the file's last 16 bytes). B quantized: rtol
# r / (1 - r) = 1/3, atol h s / (1 - r); A quantized: r and h s; BF16's
# 0.016 and 1e-5 added. F8_E4M3 (snap-dq, A quantized): r = 1/16.
b=$(tail -c 16 "$Q/snap-mxfp4/model.safetensors" | od -An -tu1 | tr -s ' ' '\n' | sort -n | tail -1)
tol() { awk -v b="$b" -v k="$1" 'BEGIN { s = 2 ^ (b - 127); printf "%.6g %.6g", 0.016 + 0.25 * k, 1e-5 + 0.25 * s * k }'; }
fig() { sed -n 's/.*"rtol": \([^,]*\), "atol": \([^,]*\),.*"dequantized": "[ab]".*/\1 \2/p' "$TMP/$1.out" |
  awk '{ printf "%.6g %.6g", $1, $2 }'; }
[ "$(fig json_mx)" = "$(tol 1.3333333333333333)" ] && ok || fail "json_mx: tolerance $(fig json_mx), want $(tol 1.3333333333333333)"
run json_mx_a 0 "$SD" --json "$Q/snap-mxfp4" "$Q/snap-mxfp4.bf16.safetensors"
[ "$(fig json_mx_a)" = "$(tol 1)" ] && ok || fail "json_mx_a: tolerance $(fig json_mx_a), want $(tol 1)"
expect_out json '"name": "model\.layers\.0\.self_attn\.q_proj\.weight", .*"rtol": 0\.0785, '
run json_plain 0 "$SD" --json "$Q/snap-dq.bf16.safetensors" "$TMP/bf16"
no_line json_plain dequantized

# ---- quantization error, on the dequantized values ------------------------------
# gen_quant.py checks every element of snap-q's quantization within E4M3's
# rounding bound (2^-4 relative plus 2^-10 x scale); stdiff sees the same.
run q8 0 "$SC" --to f8_e4m3 --block 2,3 --keep '*embed*' "$Q/snap-q" "$TMP/q8"
run q8_bound 0 "$SD" --rtol 0.0625 --atol 1e-5 "$TMP/q8" "$Q/snap-q"
expect_out q8_bound '^A: dequantized 2 FP8 weights \(blocks 2x3\); 2 scale tensors \(52 bytes\) folded in$'
run q8_lossy 1 "$SD" --rtol 0.001 --atol 0 "$TMP/q8" "$Q/snap-q"
expect_out q8_lossy '^differs: model\.layers\.0\.mlp\.down_proj\.weight \(F8_E4M3 dequantized vs F32, 35 elements\)'
no_line q8_lossy '^B is exactly'

# ---- chunks: a weight longer than a chunk, rows cut mid-way ------------------------
# wte [1000, 96] is 96000 elements: chunks of 65536 (F32 dequantized) end
# inside a row. The stconvert route is checked bit for bit above; here the
# chunked comparison must agree with it, and be the same on 1 and 3 threads.
run g 0 "$BIN/gpt2export" --random "$TMP/g" --layers 1 --heads 2 --width 96 --vocab 1000 --seed 3
run g8 0 "$SC" --to f8_e4m3 "$TMP/g" "$TMP/g8"
run g8b 0 "$SC" --to bf16 "$TMP/g8" "$TMP/g8b"
run g_same 0 "$SD" -j1 "$TMP/g8" "$TMP/g8b"
expect_out g_same '^6 tensors F8_E4M3 → BF16, all exactly A dequantized$'
expect_out g_same '^B is exactly A dequantized to BF16$'
run g_exact 1 "$SD" --exact -j3 "$TMP/g8" "$TMP/g8b"
expect_out g_exact '^6 tensors F8_E4M3 → BF16, all exactly A dequantized$'
run g_j1 0 "$SD" --json --rtol 0.0625 --atol 1e-5 -j1 "$TMP/g8" "$TMP/g"
run g_j3 0 "$SD" --json --rtol 0.0625 --atol 1e-5 -j3 "$TMP/g8" "$TMP/g"
cmp -s "$TMP/g_j1.out" "$TMP/g_j3.out" && ok || fail "g: -j1 and -j3 differ"
expect_out g_j1 '"name": "wte\.weight", "dtype_a": "F8_E4M3", "dtype_b": "F32", "elements": 96000, .*"mismatched": 0, .*"dequantized": "a"'

# Against numpy, past a chunk: dq-big's weight is 67600 values, mx-big's
# 66240 (chunks of 65536 end inside a row); their last elements (1.5 and
# 1.0, the files' last two bytes) flipped in sign must be found there.
for f in dq-big mx-big; do
  run "$f" 0 "$SD" -j1 "$Q/$f.safetensors" "$Q/$f.bf16.safetensors"
  expect_out "$f" '^B is exactly A dequantized to BF16$'
  run "${f}_j3" 0 "$SD" --json -j3 "$Q/$f.safetensors" "$Q/$f.bf16.safetensors"
  run "${f}_j1" 0 "$SD" --json -j1 "$Q/$f.safetensors" "$Q/$f.bf16.safetensors"
  cmp -s "$TMP/${f}_j1.out" "$TMP/${f}_j3.out" && ok || fail "$f: -j1 and -j3 differ"
  run "${f}_exact" 0 "$SD" --exact "$Q/$f.safetensors" "$Q/$f.bf16.safetensors"
  n=$(stat -c %s "$Q/$f.bf16.safetensors")
  cp "$Q/$f.bf16.safetensors" "$TMP/$f.sign.safetensors"
  printf '\277' | dd of="$TMP/$f.sign.safetensors" bs=1 seek=$((n - 1)) conv=notrunc 2>/dev/null
  run "${f}_sign" 1 "$SD" --exact "$Q/$f.safetensors" "$TMP/$f.sign.safetensors"
done
expect_out dq-big_sign '^differs: big\.weight \(F8_E4M3 dequantized vs BF16, 67600 elements\): 1 mismatched .*worst at \[259, 259\], B is not exactly A dequantized to BF16$'
expect_out mx-big_sign '^differs: mx \(MXFP4 dequantized vs BF16, 66240 elements\): 1 mismatched .*, max abs 2, .*worst at \[1, 735, 44\], B is not exactly A dequantized to BF16$'

# ---- structure: names only, both sides quantized, errors -------------------------
run names 0 "$SD" --names-only "$Q/snap-dq" "$Q/snap-dq.bf16.safetensors"
expect_out names '^7 tensors in both; 0 only in A, 0 only in B, 0 shape changed, 6 dtype changed: same tensors$'
run both 0 "$SD" "$Q/snap-dq" "$Q/snap-dq"
expect_out both '^12 tensors compared: 12 identical'
run mk_noscale 0 "$SC" --drop '*q_proj.weight_scale_inv' "$Q/snap-dq" "$TMP/noscale"
run noscale 2 "$SD" "$TMP/noscale" "$Q/snap-dq.bf16.safetensors"
expect_err noscale "^stdiff: $TMP/noscale/model\.safetensors: weight 'model\.layers\.0\.self_attn\.q_proj\.weight' has no scale 'model\.layers\.0\.self_attn\.q_proj\.weight_scale_inv'$"
# The other side's weights in F8 without scales: not comparable, different.
run mk_bare 0 "$SC" --drop '*_scale_inv' "$Q/snap-fp8" "$TMP/bare"
run bare 1 "$SD" "$Q/snap-fp8" "$TMP/bare"
expect_out bare '^not compared: model\.layers\.0\.mlp\.down_proj\.weight: F8_E4M3 dequantized vs F8_E4M3 \(values not comparable\)$'
mkdir -p "$TMP/hostile"
cp "$Q/snap-dq/model.safetensors" "$TMP/hostile/"
sed 's/"weight_block_size": \[2, 3\]/"weight_block_size": [0, 3]/' "$Q/snap-dq/config.json" >"$TMP/hostile/config.json"
run hostile 2 "$SD" "$TMP/hostile" "$Q/snap-dq.bf16.safetensors"
expect_err hostile "^stdiff: $TMP/hostile/config\.json: .*weight_block_size \[0, 3\]: a block side is 0$"
[ "$(wc -l <"$TMP/hostile.err")" = 1 ] && ok || fail "hostile: not one line"
mkdir -p "$TMP/misfit"
cp "$Q/snap-dq/model.safetensors" "$TMP/misfit/"
sed 's/"weight_block_size": \[2, 3\]/"weight_block_size": [4, 4]/' "$Q/snap-dq/config.json" >"$TMP/misfit/config.json"
run misfit 2 "$SD" "$TMP/misfit" "$Q/snap-dq.bf16.safetensors"
expect_err misfit "does not fit weight"

finish
