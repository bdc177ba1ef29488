# stinfo on quantized checkpoints (testdata/quant/stinfo, made by
# gen_stinfo.py): the layouts in words (FP8 block-scaled 2-D and 3-D,
# per-channel, per-tensor, E8M0 scales, MXFP4), the parameters without
# the scales and the scales' bytes, in the summary and under --json's
# "quantization"; --check naming every weight/scale pair that does not
# fit (exit 1); --stats on F8 weights and E8M0 scales. Every expected
# figure and sentence is in expected.tsv, worked out by gen_stinfo.py
# from the shapes it wrote, with numpy's statistics of the decoded codes.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
Q="$TESTDATA/quant/stinfo"
EXP="$Q/expected.tsv"
cd "$Q" || exit 1

# want FIXTURE KEY: expected.tsv's values, one a line.
want() { awk -F'\t' -v f="$1" -v k="$2" '$1 == f && $2 == k { print $3 }' "$EXP"; }
# qnum RUN KEY: KEY's number in the top level of RUN's "quantization".
qnum() { sed -n 's/^  "quantization": {.*"'"$2"'": \([0-9]*\).*/\1/p' "$TMP/$1.out"; }
# same WHAT GOT WANT
same() {
  if [ "$2" = "$3" ]; then ok; else
    fail "$1: got [$2], expected [$3]"; fi
}

FIXTURES="block default.safetensors channel.safetensors tensor.safetensors e8m0 mx broken"
for path in $FIXTURES; do
  f=${path%.safetensors}
  # --json: the member's figures and each layout's words.
  run "json-$f" 0 "$S" --json "$path" || continue
  for key in weights parameters_without_scales scale_tensors scale_parameters scale_bytes; do
    same "json-$f: $key" "$(qnum "json-$f" "$key")" "$(want "$f" "$key")"
  done
  same "json-$f: layouts" \
    "$(sed -n 's/^    {"method".*"description": "\(.*\)"},\{0,1\}$/\1/p' "$TMP/json-$f.out")" \
    "$(want "$f" layout)"
  # The summary: the same words and figures.
  run "sum-$f" 0 "$S" "$path" || continue
  same "sum-$f: layouts" \
    "$(sed -n -e 's/^quantized:   //p' -e 's/^             \([A-Z]\)/\1/p' "$TMP/sum-$f.out")" \
    "$(want "$f" layout)"
  expect_out "sum-$f" "^  weights:   $(want "$f" parameters_without_scales) parameters, not counting the scales"
  n=$(want "$f" scale_tensors)
  expect_out "sum-$f" "^  scales:    $n tensors?, $(want "$f" scale_parameters) parameters, $(want "$f" scale_bytes) B\$"
  # --check: the good ones are valid; broken/ is looked at below.
  if [ "$f" != broken ]; then
    run "check-$f" 0 "$S" --check "$path" && expect_out "check-$f" "^$path: OK\$"
    [ -s "$TMP/check-$f.err" ] && fail "check-$f: stderr: $(head -1 "$TMP/check-$f.err")" || ok
  fi
done

# The JSON stays what SPEC says, the member added after "total": total
# parameters still count every element (scales and blocks as stored).
expect_out json-block '^  "total": \{"tensors": 7, "parameters": 151, '
expect_out json-block '^  "quantization": \{.*"block_size": \[2, 3\], "block_size_from": "config.json", "problems": 0, "layouts": \[$'
expect_out json-block '^    \{"method": "fp8", "format": "F8_E4M3", "scaling": "block", "block_size": \[2, 3\], "scale_dtype": "F32", "experts": true, "weights": 1, "parameters": 60, "scale_bytes": 48, '
expect_out json-default '"block_size": \[128, 128\], "block_size_from": "default"'
expect_out json-channel '"scaling": "channel", "block_size": null, "scale_dtype": "BF16", "experts": false, "weights": 1, "parameters": 15, "scale_bytes": 6,'
expect_out json-tensor '"format": "F8_E5M2", "scaling": "tensor", "block_size": null, "scale_dtype": "F16",'
expect_out json-e8m0 '"block_size": \[1, 32\], "scale_dtype": "F8_E8M0", "experts": false, "weights": 1, "parameters": 256, "scale_bytes": 8,'
expect_out json-mx '^    \{"method": "mxfp4", "format": "F4", "scaling": "block", "block_size": \[32\], "scale_dtype": "F8_E8M0", "experts": true, "weights": 2, "parameters": 704, "scale_bytes": 22, '
expect_out sum-mx '^  weights:   712 parameters, not counting the scales \(MXFP4: two a byte\)$'
[ "$(tail -n 2 "$TMP/json-block.out")" = "$(printf '  ]}\n}')" ] && ok || fail "json-block: does not end the document"

# Sharded, a weight in one shard and its scale in the other: the same member.
if [ -x "$BIN/stconvert" ]; then
  run shard 0 "$BIN/stconvert" --shard-size 200B block "$TMP/sharded"
  run json-sharded 0 "$S" --json "$TMP/sharded"
  expect_out json-sharded '"name": "model.layers.0.self_attn.q_proj.weight", .*"file": "[^"]*model-00002-of-00002.safetensors"'
  expect_out json-sharded '"name": "model.layers.0.self_attn.q_proj.weight_scale_inv", .*"file": "[^"]*model-00001-of-00002.safetensors"'
  same "json-sharded: quantization" "$(sed -n '/^  "quantization"/,$p' "$TMP/json-sharded.out")" \
    "$(sed -n '/^  "quantization"/,$p' "$TMP/json-block.out")"
  run check-sharded 0 "$S" --check "$TMP/sharded"
fi

# A file inside a snapshot takes the block size from the config.json beside it.
run file-in-snapshot 0 "$S" --json block/model.safetensors
expect_out file-in-snapshot '"block_size": \[2, 3\], "block_size_from": "config.json"'

# Checkpoints without scaled weights: no member, no lines. F8 tensors
# without any scale (dtypes.safetensors) are plain F8, not quantized.
for p in ../../stinfo/tiny.safetensors ../../stinfo/dtypes.safetensors ../snap-q; do
  n=plain-$(basename "$p" .safetensors)
  run "$n-json" 0 "$S" --json "$p"
  if grep -q quantization "$TMP/$n-json.out"; then fail "$n: a quantization member"; else ok; fi
  run "$n" 0 "$S" "$p"
  if grep -q '^quantized:' "$TMP/$n.out"; then fail "$n: a quantized line"; else ok; fi
done
# Dequantized by stconvert: nothing left to describe.
if [ -x "$BIN/stconvert" ]; then
  run deq 0 "$BIN/stconvert" --to bf16 block "$TMP/deq"
  run deq-json 0 "$S" --json "$TMP/deq"
  if grep -q quantization "$TMP/deq-json.out"; then fail "deq: still quantized"; else ok; fi
fi

# A Llama snapshot quantized by stconvert: its config.json implies the
# weights, and their scales are no extras (summary) or warnings (--check);
# a weight dropped is missing for the inventory and leaves its scale alone.
if [ -x "$BIN/stconvert" ]; then
  run llama-q 0 "$BIN/stconvert" --to f8_e4m3 --block 2,2 "$TESTDATA/archcheck/llama-gqa" "$TMP/llama-q"
  run sum-llama 0 "$S" "$TMP/llama-q"
  expect_out sum-llama '^quantized:   FP8 E4M3, block-scaled 2x2, 16 weights with F32 scales$'
  expect_out sum-llama '^config:      LlamaForCausalLM .*found in 21 of 21 tensors$'
  if grep -q 'not in the config' "$TMP/sum-llama.out"; then fail "sum-llama: scales as extras"; else ok; fi
  run check-llama 0 "$S" --check "$TMP/llama-q"
  expect_out check-llama "^$TMP/llama-q: OK\$"
  run llama-drop 0 "$BIN/stconvert" --drop 'model.layers.1.self_attn.q_proj.weight' "$TMP/llama-q" "$TMP/llama-drop"
  run check-llama-drop 1 "$S" --check "$TMP/llama-drop"
  expect_out check-llama-drop 'INVALID \(2 errors\)$'
  expect_err check-llama-drop "tensor 'model.layers.1.self_attn.q_proj.weight': missing \(LlamaForCausalLM implies \[16, 16\]\)"
  expect_err check-llama-drop "scale 'model.layers.1.self_attn.q_proj.weight_scale_inv' has no weight 'model.layers.1.self_attn.q_proj.weight'"
fi

# ---- broken pairs: every one named, with both tensors, exit 1 -----------------
expect_out sum-broken '^  problems:  7 weight/scale mismatches \(stinfo --check names them\)$'
expect_out json-broken '"problems": 7, "layouts": \['
run check-broken 1 "$S" --check broken
expect_out check-broken '^broken: INVALID \(7 errors\)$'
same "check-broken: error lines" "$(grep -c '^stinfo: broken/model.safetensors: ' "$TMP/check-broken.err")" 7
while IFS= read -r p; do
  same "check-broken: '$p'" "$(grep -cF -- "$p" "$TMP/check-broken.err")" 1
done <<EOF
$(want broken problem)
EOF

# reblock NAME VALUE: block/ in $TMP/NAME with weight_block_size VALUE.
reblock() {
  mkdir -p "$TMP/$1"
  cp block/model.safetensors "$TMP/$1/"
  sed 's/"weight_block_size": \[2, 3\]/"weight_block_size": '"$2"'/' block/config.json >"$TMP/$1/config.json"
}

# A block size the scales do not fit: each weight named (3 of them).
reblock misfit '[4, 4]'
run check-misfit 1 "$S" --check "$TMP/misfit"
expect_out check-misfit 'INVALID \(3 errors\)$'
expect_err check-misfit "scale 'model.layers.0.self_attn.q_proj.weight_scale_inv' F32 \[3, 3\] does not fit weight 'model.layers.0.self_attn.q_proj.weight' F8_E4M3 \[5, 7\]: block 4 x 4 needs \[2, 2\]"
expect_err check-misfit "scale 'model.layers.0.mlp.experts.w1.weight_scale_inv' F32 \[3, 2, 2\] does not fit weight 'model.layers.0.mlp.experts.w1.weight' F8_E4M3 \[3, 4, 5\]: block 4 x 4 needs \[3, 1, 2\]"

# A hostile weight_block_size: --check fails on it (one error, the pairs
# are not judged against a guess); the summary and --json say it and
# describe the pairs with 128 x 128 blocks.
reblock hostile '[0, 128]'
run check-hostile 1 "$S" --check "$TMP/hostile"
expect_out check-hostile 'INVALID \(1 error\)$'
expect_err check-hostile "^stinfo: .*/hostile/config.json: quantization_config.weight_block_size \[0, 128\]: a block side is 0\$"
run sum-hostile 0 "$S" "$TMP/hostile"
expect_out sum-hostile "^  config:    .*/hostile/config.json: quantization_config.weight_block_size \[0, 128\]: a block side is 0 \(blocks taken as 128x128\)\$"
run json-hostile 0 "$S" --json "$TMP/hostile"
expect_out json-hostile '"block_size": \[128, 128\], "block_size_from": "default", "problems": 3, "config_error": ".*weight_block_size \[0, 128\]: a block side is 0", "layouts": \[\]\}$'

# ---- --stats: F8 weights and E8M0 scales decoded, against numpy ---------------
for t in 1 2; do
  STINFO_CHUNK_ELEMENTS=7 run "stats-t$t" 0 "$S" --stats --json -j "$t" e8m0
  while read -r name min max mean std nan inf zeros; do
    got=$(sed -n 's/.*"name": "'"$name"'".*"stats": {"min": \([^,]*\), "max": \([^,]*\), "mean": \([^,]*\), "std": \([^,]*\), "nan": \([0-9]*\), "inf": \([0-9]*\), "zeros": \([0-9]*\)}.*/\1 \2 \3 \4 \5 \6 \7/p' "$TMP/stats-t$t.out")
    if echo "$got" | awk -v w="$min $max $mean $std $nan $inf $zeros" '
      function abs(x) { return x < 0 ? -x : x }
      { split(w, e, " "); s = abs(e[3]) + e[4]
        bad = NF != 7 || $1 + 0 != e[1] + 0 || $2 + 0 != e[2] + 0 || $5 != e[5] || $6 != e[6] || $7 != e[7] ||
              abs($3 - e[3]) > 1e-10 * s || abs($4 - e[4]) > 1e-10 * s
        exit bad }'; then ok; else fail "stats-t$t: $name: got [$got], expected [$min $max $mean $std $nan $inf $zeros]"; fi
  done <<EOF
$(want e8m0 stats)
EOF
done
cmp -s "$TMP/stats-t1.out" "$TMP/stats-t2.out" && ok || fail "--stats figures depend on the thread count"

# Static FP8 (../gen_ct.py): input_scale, k_scale and v_scale are scales.
run ct 0 "$S" ../snap-ct
expect_out ct '^  weights:   52 parameters, not counting the scales$'
expect_out ct '^  scales:    6 tensors, 11 parameters, 44 B \(4 of them activation scales\)$'
run ct_json 0 "$S" --json ../snap-ct
expect_out ct_json '"scale_tensors": 6, .*"problems": 0, "activation_scales": 4, "layouts"'
run ct_check 0 "$S" --check ../snap-ct

finish
