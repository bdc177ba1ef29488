#!/usr/bin/env bash
# PyTorch checkpoints through the tools: stinfo describes a pytorch_model.bin,
# stdiff compares it with the safetensors file gen_torch.py built from numpy,
# stconvert turns it into safetensors, sharded PyTorch checkpoints too;
# gpt2run and gpt2export load a GPT-2 snapshot that ships only a .bin (no pickle is ever executed: the
# fixture evil.bin would run a shell command if it were).
. "$(dirname "$0")/lib.bash"
T=$TESTDATA/torch

run info 0 "$BIN/stinfo" "$T/state.bin"
expect_out info 'PyTorch zip checkpoint'
expect_out info '^tensors: +16$'
run info_json 0 "$BIN/stinfo" --json "$T/state.bin"
expect_out info_json '"name": "lm_head.weight", "dtype": "F32", "shape": \[3, 4\]'
run info_dir 0 "$BIN/stinfo" "$T/snapshot"
expect_out info_dir 'pytorch_model.bin'
run stats 0 "$BIN/stinfo" --stats "$T/nested.bin"
run evil 2 "$BIN/stinfo" "$T/evil.bin"
expect_err evil "refusing to load 'posix.system'"
run legacy 2 "$BIN/stinfo" "$T/legacy.bin"
expect_err legacy 'legacy \(pre-1.6'
# --check judges the safetensors format: a .bin is not one.
run check 1 "$BIN/stinfo" --check "$T/state.bin"
expect_err check 'zip archive'

run diff 0 "$BIN/stdiff" --exact "$T/state.bin" "$T/state.expected.safetensors"
run diff_nested 0 "$BIN/stdiff" --exact "$T/nested.bin" "$T/nested.expected.safetensors"
run diff_sharded 0 "$BIN/stdiff" --exact "$T/sharded" "$T/state.expected.safetensors"
run info_sharded 0 "$BIN/stinfo" "$T/sharded/pytorch_model.bin.index.json"
expect_out info_sharded 'pytorch_model-00002-of-00002.bin'
run diff_other 1 "$BIN/stdiff" -q "$T/nested.bin" "$T/state.expected.safetensors"

if [ -x "$BIN/stconvert" ]; then
  run conv 0 "$BIN/stconvert" -q "$T/state.bin" "$TMP/state.safetensors"
  run conv_diff 0 "$BIN/stdiff" --exact "$TMP/state.safetensors" "$T/state.expected.safetensors"
  run conv_check 0 "$BIN/stinfo" --check "$TMP/state.safetensors"
  run conv_bf16 0 "$BIN/stconvert" -q "$T/state.bin" "$TMP/bf16.safetensors" --to bf16
  run conv_bf16_diff 0 "$BIN/stdiff" --json "$T/state.expected.safetensors" "$TMP/bf16.safetensors"
  expect_out conv_bf16_diff '"rounded_equal": true'
  run conv_sharded 0 "$BIN/stconvert" -q "$T/sharded" "$TMP/from_shards" --shard-size 100B
  run conv_sharded_diff 0 "$BIN/stdiff" --exact "$TMP/from_shards" "$T/state.expected.safetensors"
  run conv_sharded_check 0 "$BIN/stinfo" --check "$TMP/from_shards"
  run conv_evil 2 "$BIN/stconvert" "$T/evil.bin" "$TMP/evil.safetensors"
  if [ -e "$TMP/evil.safetensors" ]; then fail "partial output left"; else ok; fi
fi

# GPT-2 from a snapshot that ships only pytorch_model.bin (tied head sharing
# wte's storage, legacy buffers): the same logits as the PyTorch reference,
# and the same llm.c checkpoint as from the safetensors snapshot.
G=$TESTDATA/gpt2
if [ -x "$BIN/gpt2run" ]; then
  run gpt2run_bin 0 "$BIN/gpt2run" -q --model-dir "$G/tiny-torch" --check "$G/ref-f32-p70.safetensors"
  expect_out gpt2run_bin 'OK \(atol'
fi
if [ -x "$BIN/gpt2export" ]; then
  run export_bin 0 "$BIN/gpt2export" "$G/tiny-torch" "$TMP/from_bin.bin"
  run export_hf 0 "$BIN/gpt2export" "$G/tiny-hf" "$TMP/from_hf.bin"
  if cmp -s "$TMP/from_bin.bin" "$TMP/from_hf.bin"; then ok; else fail "llm.c files from .bin and safetensors differ"; fi
fi
finish
