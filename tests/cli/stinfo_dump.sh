# stinfo --dump NAME [--output FILE]: one tensor's values, printed or as a
# .npy file. The expected files are testdata/npy/, written by numpy
# (np.save) from values make_expected.py decodes without libst (the
# safetensors bytes by hand, F8/F4 by the OCP formulas, GGUF by gguf-py,
# PyTorch by torch.load):
# the .npy files must be the same bytes, the printed values the same text.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TESTDATA" || exit 1
mkdir -p "$TMP/stinfo"
N=npy

# case CASE PATH NAME: --output gives numpy's bytes, the print its values.
case_() {
  local c=$1 path=$2 name=$3
  run "$c-npy" 0 "$S" --dump "$name" --output "$TMP/$c.npy" "$path" || return
  [ ! -s "$TMP/$c-npy.out" ] && ok || fail "$c: --output printed something"
  cmp "$N/$c.npy" "$TMP/$c.npy" >&2 && ok || fail "$c: .npy differs from numpy's np.save"
  run "$c-print" 0 "$S" --dump "$name" "$path" || return
  # Three heading lines (name, dtype, shape) and a blank one, then values.
  if diff "$N/$c.txt" <(tail -n +5 "$TMP/$c-print.out") >&2; then ok; else
    fail "$c: printed values differ from $N/$c.txt"; fi
}
for t in wte:wte.weight bf16:h.1.mlp.c_fc.weight step:step; do
  case_ "tiny-${t%%:*}" stinfo/tiny.safetensors "${t#*:}"
done
for t in scalar c empty u16 e8m0 e4m3 f4 flag; do
  case_ "dtypes-$t" stinfo/dtypes.safetensors "$t"
done
for t in f32 f16 bf16 q8 q4k i32; do
  case_ "gguf-$t" gguf/ok_all_types.gguf "$t"
done
case_ torch-noncontig torch/noncontig.bin t
# --out, getopt's abbreviation of --output, is the same option.
run out-abbrev 0 "$S" --dump step --out "$TMP/abbrev.npy" stinfo/tiny.safetensors
cmp -s "$N/tiny-step.npy" "$TMP/abbrev.npy" && ok || fail "--out is not --output"

# The headings: dtype (decoded), and a GGUF shape in numpy's order.
golden stinfo/dump-bf16 0 "$S" --dump h.1.mlp.c_fc.weight stinfo/tiny.safetensors
golden stinfo/dump-gguf-q8 0 "$S" --dump q8 gguf/ok_all_types.gguf
expect_out stinfo/dump-gguf-q8 '^shape: +\[2, 32\]$'
expect_out stinfo/dump-gguf-q8 '^dtype: +Q8_0 \(values decoded to F32\)$'

# --- refusals: exit 2, one line, no file; an existing FILE untouched -----------
golden stinfo/dump-missing 2 "$S" --dump nope stinfo/tiny.safetensors
golden stinfo/dump-f6 2 "$S" --dump f6 stinfo/dtypes.safetensors
echo keep >"$TMP/keep.npy"
run dump-f6-out 2 "$S" --dump f6 --output "$TMP/keep.npy" stinfo/dtypes.safetensors
[ "$(cat "$TMP/keep.npy")" = keep ] && ok || fail "a refused --dump changed its --output"
run dump-no-dir 2 "$S" --dump step --output "$TMP/no/such/dir/x.npy" stinfo/tiny.safetensors
expect_err dump-no-dir "^stinfo: .*x\.npy"
[ -e "$TMP/no" ] && fail "--output into a missing folder made something" || ok
[ "$(ls -A "$TMP" | grep -c '\.tmp-')" = 0 ] && ok || fail "a temporary was left behind"
golden stinfo/usage-output-alone 2 "$S" --output x.npy stinfo/tiny.safetensors
golden stinfo/usage-dump-two 2 "$S" --dump step stinfo/tiny.safetensors stinfo/tiny.safetensors
golden stinfo/usage-dump-json 2 "$S" --dump step --json stinfo/tiny.safetensors

finish
