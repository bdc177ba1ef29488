# stinfo's JSON you can rely on (doc/json.md): statistics of integer
# dtypes as JSON integers, a failed path in a --json array as an entry
# with its error, --check --json's problems document, and file contents
# escaped in it. The expected values are written by hand from the bytes
# built here (numpy gave the one std that is not a whole number).
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TMP" || exit 1

# st_file PATH HEADER DATA: a safetensors file, HEADER padded with spaces
# to a multiple of 8, DATA in printf escapes.
st_file() {
  local hdr=$2
  while [ $((${#hdr} % 8)) -ne 0 ]; do hdr="$hdr "; done
  local len=${#hdr}
  {
    printf "$(printf '\\x%02x\\x%02x\\x00\\x00\\x00\\x00\\x00\\x00' $((len & 255)) $((len >> 8)))"
    printf '%s' "$hdr"
    printf "$3"
  } >"$1"
}

# --- integer statistics ----------------------------------------------------------
# i32 [-100, 98, 1000, 0], f32 [-100.0, 98.0], i16 [100, 100].
st_file ints.safetensors \
  '{"i32":{"dtype":"I32","shape":[4],"data_offsets":[0,16]},"f32":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},"i16":{"dtype":"I16","shape":[2],"data_offsets":[24,28]}}' \
  '\x9c\xff\xff\xff\x62\x00\x00\x00\xe8\x03\x00\x00\x00\x00\x00\x00\x00\x00\xc8\xc2\x00\x00\xc4\x42\x64\x00\x64\x00'
run check-ints 0 "$S" --check ints.safetensors
run stats 0 "$S" --stats --json ints.safetensors
# -100 and 1000 have one significant digit: the shortest form is -1e+02.
expect_out stats '"name": "i32".*"stats": \{"min": -100, "max": 1000, "mean": 249.5, "std": 438.9199813177796, "nan": 0, "inf": 0, "zeros": 1\}'
expect_out stats '"name": "i16".*"stats": \{"min": 100, "max": 100, "mean": 100, "std": 0, '
# A float tensor keeps the float form.
expect_out stats '"name": "f32".*"stats": \{"min": -1e\+02, "max": 98, "mean": -1, "std": 99, '

# --- a failed path in a --json array ---------------------------------------------
run two 2 "$S" --json ints.safetensors missing.safetensors
expect_err two '^stinfo: missing.safetensors: No such file or directory$'
[ "$(head -n1 "$TMP/two.out")" = "[" ] && [ "$(tail -n1 "$TMP/two.out")" = "]" ] && ok \
  || fail "two: not one array"
expect_out two '^\{"schema": 1, "path": "missing.safetensors", "error": "missing.safetensors: No such file or directory"\}$'
[ "$(grep -c '^{' "$TMP/two.out")" = 2 ] && ok || fail "two: not two entries"
# In order, the failed one too.
run two-first 2 "$S" --json missing.safetensors ints.safetensors
[ "$(sed -n 2p "$TMP/two-first.out")" = '{"schema": 1, "path": "missing.safetensors", "error": "missing.safetensors: No such file or directory"}' ] \
  && [ "$(sed -n 3p "$TMP/two-first.out")" = "," ] && ok || fail "two-first: the error entry is not first"
# GGUF paths and --verify too.
run two-gguf 2 "$S" --json "$TESTDATA/gguf/ok_v2.gguf" missing.gguf
expect_out two-gguf '^\{"schema": 1, "path": "missing.gguf", "error": "missing.gguf: No such file or directory"\}$'
run two-verify 2 "$S" --verify --json ints.safetensors missing.safetensors
expect_out two-verify '^\{"schema": 1, "path": "missing.safetensors", "error": "missing.safetensors: No such file or directory"\}$'
# One path: no document, as before (exit 2, the error on stderr).
run one-missing 2 "$S" --json missing.safetensors
[ -s "$TMP/one-missing.out" ] && fail "one-missing: printed a document" || ok

# --- --check --json --------------------------------------------------------------
run check-ok 0 "$S" --check --json ints.safetensors
[ "$(cat "$TMP/check-ok.out")" = '{"schema": 1, "path": "ints.safetensors", "ok": true, "errors": 0, "warnings": 0, "problems": []}' ] \
  && ok || fail "check-ok: $(cat "$TMP/check-ok.out")"
[ -s "$TMP/check-ok.err" ] && fail "check-ok: stderr not empty" || ok

# Two broken tensors: an unknown dtype, and a name with a control
# character (\u0001 in the header's JSON) whose offsets pass the data.
st_file bad.safetensors \
  '{"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]},"b\u0001c":{"dtype":"F32","shape":[1],"data_offsets":[4,12]}}' \
  '\x00\x00\x00\x00\x00\x00\x00\x00'
run check-bad 1 "$S" --check --json bad.safetensors
[ -s "$TMP/check-bad.err" ] && fail "check-bad: problems on stderr too" || ok
expect_out check-bad '^\{"schema": 1, "path": "bad.safetensors", "ok": false, "errors": [1-9][0-9]*, "warnings": 0, "problems": \[$'
expect_out check-bad '^  \{"kind": "error", "file": "bad.safetensors", "tensor": "a", "message": "bad.safetensors: tensor '"'a'"': unknown dtype '"'F33'"'"\}'
# libst's messages show such a name escaped (b\x01c), and "tensor" is the
# name as the message shows it; JSON escapes that backslash once more.
expect_out check-bad '"tensor": "b\\\\x01c", "message": "bad.safetensors: tensor .b\\\\x01c.: '
grep -q $'\x01' "$TMP/check-bad.out" && fail "check-bad: a raw control character" || ok
# The count in the document is the number of problems listed.
n=$(sed -n 's/.*"errors": \([0-9]*\).*/\1/p' "$TMP/check-bad.out")
[ "$(grep -c '^  {"kind": "error"' "$TMP/check-bad.out")" = "$n" ] && ok || fail "check-bad: $n errors counted"

# A snapshot's problem names the index file and the tensor.
run check-snap 1 "$S" --check --json "$TESTDATA/stinfo/bad/snap-missing-shard"
expect_out check-snap '"file": "[^"]*/snap-missing-shard/model.safetensors.index.json", "tensor": "h.3.attn.c_attn.weight", '
# Several paths: one array; an unreadable path is an entry, and exit 2.
run check-array 2 "$S" --check --json ints.safetensors bad.safetensors missing
[ "$(head -n1 "$TMP/check-array.out")" = "[" ] && [ "$(tail -n1 "$TMP/check-array.out")" = "]" ] \
  && ok || fail "check-array: not one array"
[ "$(grep -c '^{"schema": 1, "path"' "$TMP/check-array.out")" = 3 ] && ok || fail "check-array: not three entries"
expect_out check-array '^\{"schema": 1, "path": "missing", "error": "missing: No such file or directory"\}$'
# --check --json of a GGUF file.
run check-gguf 0 "$S" --check --json "$TESTDATA/gguf/ok_v2.gguf"
expect_out check-gguf '"ok": true, "errors": 0, "warnings": 0, "problems": \[\]\}$'

# --- GGUF float arrays: the shortest text that reads back ------------------------
# A hand-built GGUF (version 3, no tensors) with a float32 and a float64
# array of chosen bit patterns. The texts are numpy's
# format_float_scientific(unique=True) and Python's repr digits, in %g's
# layout; NaN and Inf are null in JSON.
u32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }
u64() { u32 $(($1 & 0xffffffff)); u32 $(($1 >> 32 & 0xffffffff)); }
gstr() { u64 ${#1}; printf '%s' "$1"; }
{
  printf 'GGUF'; u32 3; u64 0; u64 3
  gstr general.architecture; u32 8; gstr llama
  gstr f; u32 9; u32 6; u64 10
  for b in 0x3dcccccd 0x00000001 0x7f7fffff 0x0f800000 0x4b800000 0x42c80000 \
           0x80000000 0x3727c5ac 0x7fc00000 0xff800000; do u32 $b; done
  gstr d; u32 9; u32 12; u64 4
  for b in 0x3fb999999999999a 0x3e70000000000000 0x0000000000000001 0x7fefffffffffffff; do u64 $b; done
} >floats.gguf
run floats 0 "$S" --all --json floats.gguf
expect_out floats '"f": \{"type": "array", "element_type": "float32", "length": 10, "value": \[0.1, 1e-45, 3.4028235e\+38, 1.2621775e-29, 16777216, 1e\+02, -0, 1e-05, null, null\]\}'
expect_out floats '"d": \{"type": "array", "element_type": "float64", "length": 4, "value": \[0.1, 5.960464477539063e-08, 5e-324, 1.7976931348623157e\+308\]\}'
run floats-text 0 "$S" --all floats.gguf
expect_out floats-text 'f: \[0.1, 1e-45, 3.4028235e\+38, 1.2621775e-29, 16777216, 1e\+02, -0, 1e-05, nan, -inf\]'
finish
