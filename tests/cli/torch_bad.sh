#!/usr/bin/env bash
# Hostile and broken PyTorch files (testdata/torch/bad/*.bin, made by
# gen_formats.py, gen_bad.py and gen_byteorder.py), in the zip, legacy and
# tar formats:
# pickles naming os.system, builtins.eval, subprocess.Popen or any other
# callable outside the allowlist (through REDUCE, STACK_GLOBAL, INST, OBJ,
# NEWOBJ, EXT1), recursive structures, storages missing or larger than
# the file, truncated containers, bad CRCs and tar checksums, zip bombs
# declared and real, views reaching outside their storage, byteorder
# records that say neither "little" nor "big", zips holding one member
# twice (gen_dup.py: torch.load reads the last). Each must be, in every
# tool: exit 2 (1 for stinfo --check, which says INVALID), one error line
# naming the file (and the tensor where there is one), nothing on stdout
# but --check's verdict, nothing run, nothing written (no output and no
# temporary, to a file or to a directory).
. "$(dirname "$0")/lib.bash"
T=$TESTDATA/torch
mkdir "$TMP/out" "$TMP/canary"
# Were any of these pickles executed, this is what they would touch.
cd "$TMP/canary" || exit 1

# one_line NAME: the run's stderr is exactly one line
one_line() {
  if [ "$(wc -l <"$TMP/$1.err")" = 1 ]; then ok; else
    fail "$1: $(wc -l <"$TMP/$1.err") lines on stderr"; sed 's/^/  /' "$TMP/$1.err" | head -4 >&2; fi
}
# no_stdout NAME
no_stdout() {
  if [ -s "$TMP/$1.out" ]; then fail "$1: wrote to stdout"; else ok; fi
}

n_files=0
while IFS='|' read -r f msg; do
  [ -n "$f" ] || continue
  n_files=$((n_files + 1))
  n=bad_${f%.bin}
  in=$T/bad/$f
  [ -f "$in" ] || { fail "$n: $in missing"; continue; }
  run "$n" 2 "$BIN/stinfo" "$in"
  expect_err "$n" "^stinfo: $in: .*$msg"
  one_line "$n"
  no_stdout "$n"
  run "${n}_json" 2 "$BIN/stinfo" --json "$in"
  expect_err "${n}_json" "^stinfo: $in: .*$msg"
  one_line "${n}_json"
  no_stdout "${n}_json"
  # --check: exit 1, the problem on stderr, the verdict on stdout
  run "${n}_check" 1 "$BIN/stinfo" --check "$in"
  expect_err "${n}_check" "^stinfo: $in: .*$msg"
  one_line "${n}_check"
  expect_out "${n}_check" "^$in: INVALID \\(1 error\\)$"
  if [ -x "$BIN/stconvert" ]; then
    run "${n}_conv" 2 "$BIN/stconvert" "$in" "$TMP/out/$n.safetensors"
    expect_err "${n}_conv" "^stconvert: $in: .*$msg"
    one_line "${n}_conv"
    run "${n}_convdir" 2 "$BIN/stconvert" -q --to bf16 "$in" "$TMP/out/$n"
    expect_err "${n}_convdir" "$msg"
  fi
  if [ -x "$BIN/stdiff" ]; then
    run "${n}_diff" 2 "$BIN/stdiff" "$in" "$T/state.expected.safetensors"
    expect_err "${n}_diff" "$msg"
  fi
done <<'EOF'
eval.bin|data.pkl: refusing to load '__builtin__.eval'
legacy_eval.bin|legacy pickle: refusing to load '__builtin__.eval'
tar_eval.bin|tar member 'pickle': refusing to load '__builtin__.eval'
popen.bin|data.pkl: refusing to load 'commands.Popen'
legacy_popen.bin|legacy pickle: refusing to load 'commands.Popen'
tar_popen.bin|tar member 'pickle': refusing to load 'commands.Popen'
legacy_system.bin|legacy pickle: refusing to load 'posix.system'
tar_system.bin|tar member 'pickle': refusing to load 'posix.system'
zip4_system.bin|data.pkl: refusing to load 'posix.system'
legacy4_system.bin|legacy pickle: refusing to load 'posix.system'
torch_fn.bin|data.pkl: refusing to load '__builtin__.getattr'
inst.bin|data.pkl: unsupported pickle opcode 0x69
obj.bin|data.pkl: refusing to load 'os.system'
newobj.bin|data.pkl: refusing to load 'os.system'
ext.bin|data.pkl: unsupported pickle opcode 0x82
recursive.bin|a dictionary appears twice \(or inside itself\)
legacy_recursive.bin|a dictionary appears twice \(or inside itself\)
tar_recursive.bin|a dictionary appears twice \(or inside itself\)
stride_outside.bin|tensor 'w': offset 0 and strides reach element 15 of a storage of 4 elements
legacy_stride_outside.bin|tensor 'w': offset 0 and strides reach element 15 of a storage of 4 elements
tar_stride_outside.bin|tensor 'w': offset 0 and strides reach element 15 of a storage of 4 elements
missing_storage.bin|tensor 'bf16': storage 'data/3' is missing from the archive
legacy_missing_key.bin|tensor 'w': storage '0' is missing from the file
tar_missing_storage.bin|tar: tensor '1000': storage '7' is missing
huge_storage.bin|tensor 'w': its storage of 1099511627776 elements needs more than the 12 bytes
legacy_huge_storage.bin|storage '0' of 1099511627776 elements runs past the end of the 247-byte file
tar_huge_storage.bin|tar: storage '0' of 1099511627776 elements runs past the end of its member
stored_past_end.bin|tensor 'w': storage '0' claims 1073741824 bytes, more than a [0-9]+-byte archive can inflate to
truncated_zip.bin|zip: cannot read the archive's directory \(a truncated or damaged file\?\)
truncated_legacy.bin|runs past the end of the [0-9]+-byte file \(truncated\?\)
tar_truncated.bin|tar: member [0-9]+: Truncated input file
tar_checksum.bin|tar: cannot read the archive's directory \(a truncated or damaged file\?\)
bad_crc.bin|zip: member 'views.zip/data.pkl': ZIP bad CRC
bomb_pickle.bin|zip: member 'archive/data.pkl' inflates past its declared [0-9]+ bytes \(a zip bomb\?\)
bomb_storage.bin|zip: member 'archive/data/0' inflates past its declared 12 bytes \(a zip bomb\?\)
bomb_declared.bin|zip: member 'archive/data.pkl' declares 4294967295 bytes, more than the 1073741824 allowed
byteorder_middle.bin|the byteorder record says neither 'little' nor 'big'
byteorder_empty.bin|the byteorder record says neither 'little' nor 'big'
dup_storage.bin|zip: member 'state/data/0' appears twice \(torch.load would read the last, not the first\)
dup_pickle.bin|zip: member 'state/data.pkl' appears twice \(torch.load would read the last, not the first\)
EOF
# Every bad file is listed above (a new one must say what it is refused for).
for f in "$T"/bad/*.bin; do
  case $f in */list_recursive.bin) continue ;; esac
  if grep -qF "bad_$(basename "$f" .bin)" <(ls "$TMP"); then ok; else fail "$(basename "$f"): not tested"; fi
done
[ "$n_files" -ge 38 ] && ok || fail "only $n_files bad files read"
if [ -x "$BIN/stconvert" ]; then
  if [ -z "$(ls -A "$TMP/out")" ]; then ok; else fail "bad files left output: $(ls -A "$TMP/out")"; fi
fi
if [ -z "$(ls -A "$TMP/canary")" ]; then ok; else fail "something wrote in the working directory: $(ls -A "$TMP/canary")"; fi

# A list inside itself beside the tensors is no danger: lists are never
# walked, so it is left out like any value that is not a tensor.
run list_loop 0 "$BIN/stinfo" "$T/bad/list_recursive.bin"
expect_out list_loop '^  skipped: +1 entry that is not a tensor \(b\)$'
if [ -x "$BIN/stconvert" ]; then
  run list_loop_conv 0 "$BIN/stconvert" "$T/bad/list_recursive.bin" "$TMP/list.safetensors"
  expect_err list_loop_conv '^stconvert: left out 1 entry that is not a tensor: b$'
fi

# Among several paths, a bad PyTorch file is handled as a bad safetensors
# file is: --json prints the readable ones and an entry with the error of
# the bad one (an array) and exits 2, --check
# checks every path and exits 1. The outputs differ only in the names.
G=$T/views.zip.bin
S=$TESTDATA/format/bad_n_past_eof.safetensors
for b in "$T/bad/eval.bin" "$T/bad/tar_truncated.bin" "$S"; do
  n=mix_$(basename "$b" | tr . _)
  run "${n}_json" 2 "$BIN/stinfo" --json "$G" "$b" "$G"
  run "${n}_check" 1 "$BIN/stinfo" --check "$G" "$b" "$G"
  # The bad path's entry holds its own error: the same line but for that.
  sed -e "s|$b|BAD|g" -e 's|^{"schema": 1, "path": "BAD", "error": "BAD: .*"}$|{"schema": 1, "path": "BAD", "error": ERROR}|' \
    "$TMP/${n}_json.out" >"$TMP/${n}_json.norm"
  sed "s|$b|BAD|g" "$TMP/${n}_check.out" >"$TMP/${n}_check.norm"
done
for k in json check; do
  for b in eval_bin tar_truncated_bin; do
    if cmp -s "$TMP/mix_${b}_$k.norm" "$TMP/mix_bad_n_past_eof_safetensors_$k.norm"; then ok; else
      fail "mix_$b: stinfo --$k output differs from that with a bad safetensors file"
      diff "$TMP/mix_${b}_$k.norm" "$TMP/mix_bad_n_past_eof_safetensors_$k.norm" | head -5 >&2
    fi
  done
done
if [ "$(grep -c '"files"' "$TMP/mix_eval_bin_json.out")" = 2 ]; then ok; else fail "mix: not two documents"; fi
expect_out mix_eval_bin_json '^\{"schema": 1, "path": "[^"]*/bad/eval.bin", "error": "[^"]*/bad/eval.bin: '
if [ "$(grep -c '"error"' "$TMP/mix_eval_bin_json.norm")" = 1 ]; then ok; else fail "mix: not one error entry"; fi
expect_out mix_eval_bin_check "^$T/bad/eval.bin: INVALID \\(1 error\\)$"
expect_out mix_eval_bin_check "^$G: OK$"

# A damaged storage read in place opens (only the header is read), but
# --check and every read of its data (--stats, stdiff, stconvert) find it.
run crc_open 0 "$BIN/stinfo" "$T/storage_crc.bin"
run crc_stats 2 "$BIN/stinfo" --stats "$T/storage_crc.bin"
expect_err crc_stats "storage_crc.bin: tensor 'f64(\\.t)?': zip member 'views.zip/data/0' fails its CRC-32"
one_line crc_stats
run crc_diff 2 "$BIN/stdiff" "$T/storage_crc.bin" "$T/views.expected.safetensors"
expect_err crc_diff "zip member 'views.zip/data/0' fails its CRC-32"
finish
