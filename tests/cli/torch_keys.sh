#!/usr/bin/env bash
# What stinfo lists of a PyTorch checkpoint's dictionary, in text and in
# --json, for the zip, legacy and tar formats (gen_keys.py): the top-level
# keys, the key read (chosen automatically or given by --key), and the
# values that are not tensors, left out (how many, the first named). The
# expected "pytorch" objects were worked out by the script from the
# dictionary and written by Python's json.dumps.
. "$(dirname "$0")/lib.bash"
T=$TESTDATA/torch
auto=$(sed -n 's/^auto //p' "$T/keys.expected.json")
enc=$(sed -n 's/^enc //p' "$T/keys.expected.json")
[ -n "$auto" ] && [ -n "$enc" ] || { fail "keys.expected.json unreadable"; finish; exit; }

for f in zip legacy tar; do
  k=keys.$f.bin
  run "json_$f" 0 "$BIN/stinfo" --json "$T/$k"
  if grep -qF "\"format\": \"pytorch-$f\", \"pytorch\": $auto, \"header_bytes\"" "$TMP/json_$f.out"; then ok; else
    fail "json_$f: no \"pytorch\": $auto"; sed -n 3p "$TMP/json_$f.out" >&2; fi
  run "json_key_$f" 0 "$BIN/stinfo" --json --key model --key enc "$T/$k"
  if grep -qF "\"pytorch\": $enc" "$TMP/json_key_$f.out"; then ok; else
    fail "json_key_$f: no \"pytorch\": $enc"; sed -n 3p "$TMP/json_key_$f.out" >&2; fi
  expect_out "json_key_$f" '"name": "weight", "dtype": "F32", "shape": \[3, 2\]'
  run "json_key1_$f" 0 "$BIN/stinfo" --json --key model.enc "$T/$k"
  if cmp -s "$TMP/json_key1_$f.out" "$TMP/json_key_$f.out"; then ok; else
    fail "json_key1_$f: --key model.enc differs from --key model --key enc"; fi

  run "text_$f" 0 "$BIN/stinfo" "$T/$k"
  expect_out "text_$f" '^  keys: +model, epoch, step, époque, ema, n0, n1, n2, n3, n4, n5, \.\.\. \(14 keys\)$'
  expect_out "text_$f" '^  read: +model \(every tensor is under it\)$'
  expect_out "text_$f" '^  skipped: +16 entries that are not tensors \(epoch, step, époque, ema, n0, n1, n2, n3, n4, \.\.\.\)$'
  run "text_key_$f" 0 "$BIN/stinfo" --key model.enc "$T/$k"
  expect_out "text_key_$f" '^  read: +model\.enc$'
  expect_out "text_key_$f" '^  skipped: +15 entries'

  # The tensors read are torch.load's, and stconvert says what it left out.
  run "diff_$f" 0 "$BIN/stdiff" --exact "$T/$k" "$T/keys.expected.safetensors"
  if [ -x "$BIN/stconvert" ]; then
    run "conv_$f" 0 "$BIN/stconvert" "$T/$k" "$TMP/keys.$f.safetensors"
    expect_err "conv_$f" "^stconvert: key 'model': every tensor is under it; reading it$"
    expect_err "conv_$f" '^stconvert: left out 16 entries that are not tensors: epoch, step, époque, ema, n0, n1, n2, n3, n4, \.\.\.$'
    run "conv_diff_$f" 0 "$BIN/stdiff" --exact "$TMP/keys.$f.safetensors" "$T/keys.expected.safetensors"
  fi
done

# A flat state dict: every key listed, nothing read from a key or skipped.
run json_flat 0 "$BIN/stinfo" --json "$T/state.bin"
expect_out json_flat '"pytorch": \{"keys": \["f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "bool", "scalar", "empty", "wte.weight", "lm_head.weight", "slice", "param"\], "key": null, "key_auto": false, "skipped": 0, "skipped_keys": \[\]\}'
# safetensors files have no "pytorch" object.
run json_st 0 "$BIN/stinfo" --json "$T/keys.expected.safetensors"
if grep -q '"pytorch"' "$TMP/json_st.out"; then fail "json_st: a \"pytorch\" object"; else ok; fi
finish
