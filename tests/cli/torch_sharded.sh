#!/usr/bin/env bash
# A sharded PyTorch snapshot (pytorch_model-0000k-of-00003.bin with
# pytorch_model.bin.index.json, gen_sharded.py) converts shard by shard
# into a sharded safetensors snapshot: one output shard per input shard,
# the index transformers would write, every other file copied, the .bin
# index left behind; --shard-size plans anew. Expected values and the
# expected index come from the script (torch.load, Python's json).
. "$(dirname "$0")/lib.bash"
T=$TESTDATA/torch
S=$T/sharded3
E=$T/sharded3.expected
[ -x "$BIN/stconvert" ] || { echo "no stconvert: skipped"; finish; exit; }

# the names of the files in directory $1, one a line
files() { (cd "$1" && ls -A); }

run conv 0 "$BIN/stconvert" "$S" "$TMP/out"
expect_err conv "alias: 'model.embed_out.weight' is the same data as 'lm_head.weight'; written once"
expect_err conv '^stconvert: out: 13 tensors, 1648 bytes \(1.6 kB\), 3 files \+ index$'
if [ "$(files "$TMP/out")" = "$(files "$E")" ]; then ok; else
  fail "conv: files $(files "$TMP/out" | tr '\n' ' '), expected $(files "$E" | tr '\n' ' ')"; fi
# The index, byte for byte as transformers writes it (json.dumps in the script).
if cmp "$TMP/out/model.safetensors.index.json" "$E/model.safetensors.index.json"; then ok; else
  fail "conv: model.safetensors.index.json differs"; fi
for f in config.json generation_config.json tokenizer.json tokenizer_config.json \
         special_tokens_map.json README.md; do
  if cmp -s "$TMP/out/$f" "$S/$f"; then ok; else fail "conv: $f not copied as it was"; fi
done
if [ -e "$TMP/out/pytorch_model.bin.index.json" ]; then fail "conv: the .bin index was carried over"; else ok; fi
# Each output shard holds exactly its input shard's tensors, bit for bit
# (the transposed view of shard 2 made contiguous, the alias written once).
for k in 1 2 3; do
  f=model-0000$k-of-00003.safetensors
  run "shard_$k" 0 "$BIN/stdiff" --exact "$TMP/out/$f" "$E/$f"
  expect_out "shard_$k" '0 only in A, 0 only in B'
done
run conv_check 0 "$BIN/stinfo" --check "$TMP/out"
expect_out conv_check ': OK$'
run conv_all 0 "$BIN/stdiff" --exact "$TMP/out" "$T/sharded3.all.safetensors"
run conv_json 0 "$BIN/stinfo" --json "$TMP/out"
expect_out conv_json '"name": "lm_head.weight", .*model-00003-of-00003.safetensors'
expect_out conv_json '"name": "model.embed_tokens.weight", .*model-00001-of-00003.safetensors'

# -v names what became of each input shard.
run conv_v 0 "$BIN/stconvert" -v "$S/pytorch_model.bin.index.json" "$TMP/out_v"
expect_err conv_v '^stconvert: shard pytorch_model-00002-of-00003.bin -> model-00002-of-00003.safetensors$'
if cmp -s "$TMP/out_v/model.safetensors.index.json" "$E/model.safetensors.index.json"; then ok; else
  fail "conv_v: index differs"; fi

# --to keeps the shards and sets torch_dtype.
run conv_f32 0 "$BIN/stconvert" -q --to f32 "$S" "$TMP/out_f32"
if [ "$(files "$TMP/out_f32")" = "$(files "$E")" ]; then ok; else fail "conv_f32: other files"; fi
if grep -q '"torch_dtype": "float32"' "$TMP/out_f32/config.json"; then ok; else fail "conv_f32: torch_dtype"; fi
# (BF16 widened to F32 exactly: rounded back, it is the input.)
run conv_f32_diff 0 "$BIN/stdiff" "$TMP/out_f32/model-00002-of-00003.safetensors" \
  "$E/model-00002-of-00003.safetensors"
expect_out conv_f32_diff '^4 tensors F32 → BF16, all exactly A rounded$'
expect_out conv_f32_diff '5 tensors compared: .*0 differ; 0 only in A, 0 only in B, 0 shape changed, 4 dtype changed'

# --to f8_e4m3: each new scale tensor goes to its weight's shard.
run conv_fp8 0 "$BIN/stconvert" -q --to f8_e4m3 --block 4,4 "$S" "$TMP/out_fp8"
run conv_fp8_json 0 "$BIN/stinfo" --json "$TMP/out_fp8"
expect_out conv_fp8_json '"name": "model.layers.1.self_attn.k_proj.weight_scale_inv", .*model-00002-of-00003.safetensors'
expect_out conv_fp8_json '"name": "lm_head.weight_scale_inv", .*model-00003-of-00003.safetensors'
run conv_fp8_check 0 "$BIN/stinfo" --check "$TMP/out_fp8"

# A shard whose every tensor is dropped is not written; the others are
# numbered without it.
run conv_drop 0 "$BIN/stconvert" -q --drop 'model.layers.1.[ism]*' "$S" "$TMP/out_drop"
if [ "$(cd "$TMP/out_drop" && ls model*.safetensors | tr '\n' ' ')" = \
     "model-00001-of-00002.safetensors model-00002-of-00002.safetensors " ]; then ok; else
  fail "conv_drop: shards $(cd "$TMP/out_drop" && ls model*.safetensors | tr '\n' ' ')"; fi
run drop_1 0 "$BIN/stdiff" --exact "$TMP/out_drop/model-00001-of-00002.safetensors" \
  "$E/model-00001-of-00003.safetensors"
run drop_2 0 "$BIN/stdiff" --exact "$TMP/out_drop/model-00002-of-00002.safetensors" \
  "$E/model-00003-of-00003.safetensors"
run drop_check 0 "$BIN/stinfo" --check "$TMP/out_drop"
if grep -q 'model-00002-of-00003' "$TMP/out_drop/model.safetensors.index.json"; then
  fail "conv_drop: the index names a shard of three"; else ok; fi

# --shard-size plans anew (huggingface_hub's rule): one file under a
# large limit, more shards under a small one; the same tensors either way.
run plan_one 0 "$BIN/stconvert" -q --shard-size 1GB "$S" "$TMP/out_one"
if [ "$(files "$TMP/out_one" | grep safetensors)" = "model.safetensors" ]; then ok; else
  fail "plan_one: $(files "$TMP/out_one" | tr '\n' ' ')"; fi
run plan_one_diff 0 "$BIN/stdiff" --exact "$TMP/out_one/model.safetensors" "$T/sharded3.all.safetensors"
run plan_small 0 "$BIN/stconvert" -q --shard-size 300B "$S" "$TMP/out_small"
n=$(cd "$TMP/out_small" && ls model-*.safetensors | wc -l)
if [ "$n" -gt 3 ]; then ok; else fail "plan_small: $n shards, expected more than 3"; fi
run plan_small_check 0 "$BIN/stinfo" --check "$TMP/out_small"
run plan_small_diff 0 "$BIN/stdiff" --exact "$TMP/out_small" "$T/sharded3.all.safetensors"

# A .safetensors OUT is one file, as asked.
run conv_file 0 "$BIN/stconvert" -q "$S" "$TMP/one.safetensors"
run conv_file_diff 0 "$BIN/stdiff" --exact "$TMP/one.safetensors" "$T/sharded3.all.safetensors"

# A damaged storage in the last shard: the conversion fails after writing
# the first two shards into its temporary directory; nothing is left.
mkdir "$TMP/fail"
run conv_crc 2 "$BIN/stconvert" -q "$T/bad/sharded_crc" "$TMP/fail/out"
expect_err conv_crc "^stconvert: .*/pytorch_model-00003-of-00003.bin: tensor '[^']+': zip member '[^']+' fails its CRC-32"
if [ -z "$(ls -A "$TMP/fail")" ]; then ok; else fail "conv_crc left $(ls -A "$TMP/fail")"; fi
# ... and an existing OUT is kept as it was.
cp -r "$TMP/out" "$TMP/fail/keep"
run conv_crc_force 2 "$BIN/stconvert" -q -f "$T/bad/sharded_crc" "$TMP/fail/keep"
if diff -r "$TMP/out" "$TMP/fail/keep" >/dev/null; then ok; else fail "conv_crc_force changed OUT"; fi
if [ "$(ls -A "$TMP/fail")" = keep ]; then ok; else fail "conv_crc_force left $(ls -A "$TMP/fail")"; fi
run check_crc 1 "$BIN/stinfo" --check "$T/bad/sharded_crc"
expect_err check_crc 'pytorch_model-00003-of-00003.bin: zip: member .* ZIP bad CRC'
finish
