#!/usr/bin/env bash
# PyTorch checkpoints through the tools: stinfo describes a pytorch_model.bin,
# stdiff compares it with the safetensors file gen_torch.py built from numpy,
# stconvert turns it into safetensors, sharded PyTorch checkpoints too;
# gpt2run and gpt2export load a GPT-2 snapshot that ships only a .bin (no pickle is ever executed: the
# fixture evil.bin would run a shell command if it were).
. "$(dirname "$0")/lib.bash"
T=$TESTDATA/torch
mkdir "$TMP/out"

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
run legacy 0 "$BIN/stinfo" "$T/legacy.bin"
expect_out legacy 'PyTorch legacy \(pre-1.6\) checkpoint'
# --check checks a PyTorch file as a safetensors one: the pickle, every
# view, and every member's CRC (an open reads storages in place; reads
# check their CRCs, see conv_crc).
run check 0 "$BIN/stinfo" --check "$T/state.bin" "$T/views.legacy.bin" "$T/views.tar.bin" "$T/sharded"
expect_out check '^.*/state.bin: OK$'
run check_crc 1 "$BIN/stinfo" --check "$T/storage_crc.bin"
expect_out check_crc 'storage_crc.bin: INVALID \(1 error\)'
expect_err check_crc "storage_crc.bin: zip: member 'views.zip/data/0': ZIP bad CRC"
run check_evil 1 "$BIN/stinfo" --check "$T/evil.bin"
expect_err check_evil "refusing to load 'posix.system'"

# A training checkpoint: its state_dict is read (and said so); --key picks
# a sub-dictionary; a missing one is a clear error.
for f in zip legacy tar; do
  run "ckpt_$f" 0 "$BIN/stinfo" "$T/ckpt.$f.bin"
  expect_out "ckpt_$f" '^  keys: +state_dict, epoch, lr, name, optimizer$'
  expect_out "ckpt_$f" '^  read: +state_dict \(every tensor is under it\)$'
  expect_out "ckpt_$f" '^  skipped: +4 entries that are not tensors \(epoch, lr, name, optimizer\)$'
  run "ckpt_diff_$f" 0 "$BIN/stdiff" --exact "$T/ckpt.$f.bin" "$T/ckpt.expected.safetensors"
  if [ -x "$BIN/stconvert" ]; then
    run "ckpt_conv_$f" 0 "$BIN/stconvert" --key state_dict "$T/ckpt.$f.bin" "$TMP/ckpt.$f.safetensors"
    expect_err "ckpt_conv_$f" '^stconvert: left out 4 entries that are not tensors: epoch, lr, name, optimizer$'
    run "ckpt_conv_diff_$f" 0 "$BIN/stdiff" --exact "$TMP/ckpt.$f.safetensors" "$T/ckpt.expected.safetensors"
  fi
done
run ckpt_auto_conv 0 "$BIN/stconvert" "$T/ckpt.zip.bin" "$TMP/ckpt_auto.safetensors"
expect_err ckpt_auto_conv "^stconvert: key 'state_dict': every tensor is under it; reading it$"
run ckpt_key_json 0 "$BIN/stinfo" --json --key model --key b "$T/nested.bin"
expect_out ckpt_key_json '"name": "c", "dtype": "I64"'
run ckpt_nokey 2 "$BIN/stinfo" --key nope "$T/ckpt.zip.bin"
expect_err ckpt_nokey "ckpt.zip.bin: --key 'nope': no key 'nope' in the checkpoint \(its keys: state_dict, epoch, lr, name, optimizer\)$"
run ckpt_nokey_conv 2 "$BIN/stconvert" --key state_dict.enc "$T/ckpt.zip.bin" "$TMP/out/nokey.safetensors"
expect_err ckpt_nokey_conv "no key 'enc' in 'state_dict'"

run diff 0 "$BIN/stdiff" --exact "$T/state.bin" "$T/state.expected.safetensors"
run diff_nested 0 "$BIN/stdiff" --exact "$T/nested.bin" "$T/nested.expected.safetensors"
run diff_sharded 0 "$BIN/stdiff" --exact "$T/sharded" "$T/state.expected.safetensors"
run info_sharded 0 "$BIN/stinfo" "$T/sharded/pytorch_model.bin.index.json"
expect_out info_sharded 'pytorch_model-00002-of-00002.bin'
run diff_other 1 "$BIN/stdiff" -q "$T/nested.bin" "$T/state.expected.safetensors"

if [ -x "$BIN/stconvert" ]; then
  run conv 0 "$BIN/stconvert" "$T/state.bin" "$TMP/state.safetensors"
  # lm_head.weight repeats wte.weight (tied): written once, and said so.
  expect_err conv "alias: 'lm_head.weight' is the same data as 'wte.weight'; written once"
  run conv_diff 0 "$BIN/stdiff" --exact "$TMP/state.safetensors" "$T/state.dedup.expected.safetensors"
  run conv_check 0 "$BIN/stinfo" --check "$TMP/state.safetensors"
  run conv_bf16 0 "$BIN/stconvert" -q "$T/state.bin" "$TMP/bf16.safetensors" --to bf16
  run conv_bf16_diff 0 "$BIN/stdiff" --json "$T/state.dedup.expected.safetensors" "$TMP/bf16.safetensors"
  expect_out conv_bf16_diff '"exactly_encoded": true'
  run conv_sharded 0 "$BIN/stconvert" -q "$T/sharded" "$TMP/from_shards" --shard-size 100B
  run conv_sharded_diff 0 "$BIN/stdiff" --exact "$TMP/from_shards" "$T/state.dedup.expected.safetensors"
  run conv_sharded_check 0 "$BIN/stinfo" --check "$TMP/from_shards"
  run conv_evil 2 "$BIN/stconvert" "$T/evil.bin" "$TMP/evil.safetensors"
  if [ -e "$TMP/evil.safetensors" ]; then fail "partial output left"; else ok; fi
  # A flipped byte in a storage read in place: its CRC-32 is checked as
  # the storage is read; one error line, nothing written.
  run conv_crc 2 "$BIN/stconvert" -q "$T/storage_crc.bin" "$TMP/crc.safetensors"
  expect_err conv_crc "^stconvert: .*storage_crc.bin: tensor 'f64(\\.t)?': zip member 'views.zip/data/0' fails its CRC-32"
  if [ "$(wc -l <"$TMP/conv_crc.err")" = 1 ]; then ok; else fail "conv_crc: not one line"; fi
  if [ -e "$TMP/crc.safetensors" ]; then fail "conv_crc: output left"; else ok; fi
fi

# Every format (gen_formats.py): views, all dtypes, aliases; the bytes
# torch.load gives, made contiguous.
for f in zip zip4 legacy legacy4 legacybig zipbig tar; do
  case $f in zip*) kind=zip ;; legacy*) kind=legacy ;; *) kind=tar ;; esac
  run "fmt_$f" 0 "$BIN/stdiff" --exact "$T/views.$f.bin" "$T/views.expected.safetensors"
  run "fmt_json_$f" 0 "$BIN/stinfo" --json "$T/views.$f.bin"
  expect_out "fmt_json_$f" "\"format\": \"pytorch-$kind\""
  if [ -x "$BIN/stconvert" ]; then
    run "fmt_conv_$f" 0 "$BIN/stconvert" "$T/views.$f.bin" "$TMP/views.$f.safetensors"
    expect_err "fmt_conv_$f" "alias: 'alias' is the same data as 'transposed'; written once"
    run "fmt_conv_diff_$f" 1 "$BIN/stdiff" "$TMP/views.$f.safetensors" "$T/views.expected.safetensors"
    expect_out "fmt_conv_diff_$f" '^only in B: alias$'
    expect_out "fmt_conv_diff_$f" '35 tensors compared: 35 identical, 0 within tolerance, 0 differ; 0 only in A, 1 only in B'
    run "fmt_conv_check_$f" 0 "$BIN/stinfo" --check "$TMP/views.$f.safetensors"
  fi
done

# Byte order records (gen_byteorder.py): "little" as torch 2.x writes,
# "big" with every element byte-swapped by numpy; both read as the values
# saved. views.zipbig.bin and views.legacybig.bin (above) too.
for f in little big; do
  run "bo_$f" 0 "$BIN/stdiff" --exact "$T/byteorder.$f.bin" "$T/byteorder.expected.safetensors"
  expect_out "bo_$f" '^13 tensors compared: 13 identical'
  run "bo_check_$f" 0 "$BIN/stinfo" --check "$T/byteorder.$f.bin"
  run "bo_stats_$f" 0 "$BIN/stinfo" --stats "$T/byteorder.$f.bin"
  if [ -x "$BIN/stconvert" ]; then
    run "bo_conv_$f" 0 "$BIN/stconvert" -q "$T/byteorder.$f.bin" "$TMP/bo.$f.safetensors"
    run "bo_conv_diff_$f" 0 "$BIN/stdiff" --exact "$TMP/bo.$f.safetensors" \
      "$T/byteorder.expected.safetensors"
    if cmp -s "$TMP/bo.$f.safetensors" "$TMP/bo.little.safetensors"; then ok; else
      fail "bo_conv_$f: not the bytes of the little-endian file's conversion"; fi
  fi
done
# The statistics tables (from "name" on) are the same.
if cmp -s <(sed -n '/^name /,$p' "$TMP/bo_stats_big.out") <(sed -n '/^name /,$p' "$TMP/bo_stats_little.out") &&
   grep -q '^f32 ' "$TMP/bo_stats_big.out"; then
  ok; else fail "bo_stats: big and little differ"; fi

# Hostile and broken files: torch_bad.sh.

# Empty views at any offset, as torch accepts them (gen_empty.py): one far
# past its storage's end, one at the end.
for f in empty.zip.bin empty.legacy.bin; do
  run "check_$f" 0 "$BIN/stinfo" --check "$T/$f"
  run "conv_$f" 0 "$BIN/stconvert" "$T/$f" "$TMP/$f.safetensors"
  run "same_$f" 0 "$BIN/stdiff" --exact "$TMP/$f.safetensors" "$T/empty.expected.safetensors"
done

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
