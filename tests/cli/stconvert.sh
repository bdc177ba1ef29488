# stconvert on single files: options, dtype conversion bit for bit against
# PyTorch (testdata/stconvert/gen_fixtures.py), the report, round trips,
# --force and in-place conversion, usage errors.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/stconvert_lib.bash"

# ---- --help, --version, usage errors ---------------------------------------
run help 0 "$SC" --help
expect_out help '^Usage: stconvert '
if [ -s "$TMP/help.err" ]; then fail "help: stderr not empty"; else ok; fi
run version 0 "$SC" --version
expect_out version '^stconvert '

usage() { # NAME PATTERN ARGS...
  local name=$1 pat=$2; shift 2
  run "$name" 2 "$SC" "$@" && expect_err "$name" "$pat" && expect_err "$name" "Try 'stconvert --help'"
}
usage u_none 'missing operand: IN and OUT'
usage u_one 'missing operand: OUT' "$D/mixed.safetensors"
usage u_three "extra operand 'c'" a b c
usage u_to "--to: 'f8' is not f64, f32, f16, bf16, f8_e4m3, or for OUT.gguf q8_0, q4_0, q4_1, q5_0, q5_1$" --to f8 "$D/mixed.safetensors" "$TMP/x.safetensors"
usage u_size "--shard-size: 'lots' is not a size" --shard-size lots "$D/mixed.safetensors" "$TMP/x"
usage u_size0 "--shard-size: '0' is not a size" --shard-size 0 "$D/mixed.safetensors" "$TMP/x"
usage u_meta "--metadata: 'novalue' is not KEY=VALUE" --metadata novalue "$D/mixed.safetensors" "$TMP/x.safetensors"
usage u_meta2 "--metadata: '=v' is not KEY=VALUE" --metadata =v "$D/mixed.safetensors" "$TMP/x.safetensors"
usage u_opt "^stconvert: unrecognized option '--bogus'\$" --bogus "$D/mixed.safetensors" "$TMP/x.safetensors"
usage u_noarg "^stconvert: option requires an argument -- 't'\$" "$D/mixed.safetensors" "$TMP/x.safetensors" -t
[ "$(wc -l < "$TMP/u_noarg.err")" = 2 ] && ok || fail "u_noarg: not two lines on stderr"
usage u_shardfile '--shard-size writes shards and an index: OUT must be a directory' \
  --shard-size 1kB "$D/mixed.safetensors" "$TMP/x.safetensors"
usage u_index 'not an index path' "$D/mixed.safetensors" "$TMP/model.safetensors.index.json"
expect_absent u_shardfile "$TMP/x.safetensors"

# ---- inputs that cannot be converted ------------------------------------------
run in_missing 2 "$SC" "$TMP/nope.safetensors" "$TMP/o1.safetensors"
expect_err in_missing "nope.safetensors"
expect_absent in_missing "$TMP/o1.safetensors"
# PyTorch checkpoints are read (through libst, no pickle code executed),
# sharded ones too; an index naming a shard that is not there fails.
mkdir "$TMP/binsh" && cp "$TESTDATA/torch/sharded/pytorch_model-00001-of-00002.bin" "$TMP/binsh/"
cp "$TESTDATA/torch/sharded/pytorch_model.bin.index.json" "$TMP/binsh/"
run in_binsh 2 "$SC" "$TMP/binsh" "$TMP/o1"
expect_err in_binsh "missing shard 'pytorch_model-00002-of-00002.bin'"
run in_binidx 2 "$SC" "$TMP/binsh/pytorch_model.bin.index.json" "$TMP/o1"
expect_err in_binidx 'missing shard'
expect_absent in_binsh "$TMP/o1"
run in_evil 2 "$SC" "$TESTDATA/torch/evil.bin" "$TMP/o1.safetensors"
expect_err in_evil "evil.bin: data.pkl: refusing to load 'posix.system'"
expect_absent in_evil "$TMP/o1.safetensors"
head -c 1000 "$D/mixed.safetensors" >"$TMP/trunc.safetensors"
run in_trunc 2 "$SC" --to bf16 "$TMP/trunc.safetensors" "$TMP/o1.safetensors"
expect_err in_trunc '^stconvert: .*trunc.safetensors'
expect_absent in_trunc "$TMP/o1.safetensors"
no_temps in_trunc "$TMP"

# ---- layout only: canonical bytes, unchanged tensors ------------------------
run relayout 0 "$SC" "$D/mixed.safetensors" "$TMP/canon.safetensors"
expect_same relayout "$D/mixed.canonical.safetensors" "$TMP/canon.safetensors"
expect_err relayout '^stconvert: layout only: 22 copied unchanged, 0 dropped$'
if [ -s "$TMP/relayout.out" ]; then fail "relayout: stdout not empty"; else ok; fi

# ---- --to: bit for bit as PyTorch's .to() ------------------------------------
for t in f64 f32 f16 bf16 F16 bfloat16 double; do
  lt=$(echo "$t" | tr 'A-Z' 'a-z'); [ "$lt" = bfloat16 ] && lt=bf16; [ "$lt" = double ] && lt=f64
  run "to_$t" 0 "$SC" --to "$t" "$D/mixed.safetensors" "$TMP/to_$t.safetensors"
  expect_same "to_$t" "$D/mixed.$lt.safetensors" "$TMP/to_$t.safetensors" "$D/mixed.$lt.nan"
done
# mixed.safetensors holds F64, F32, F16 and BF16 tensors, so the four
# conversions above cover every dtype pair. PyTorch converts through F32, so
# the F32 file converts to the same bytes; a same-dtype --to is a copy.
run pair_canonical 0 "$SC" --to bf16 "$D/mixed.canonical.safetensors" "$TMP/p1.safetensors"
expect_same pair_canonical "$D/mixed.bf16.safetensors" "$TMP/p1.safetensors" "$D/mixed.bf16.nan"
run pair_f32_f16 0 "$SC" --to f16 "$D/mixed.f32.safetensors" "$TMP/p2.safetensors"
expect_same pair_f32_f16 "$D/mixed.f16.safetensors" "$TMP/p2.safetensors" "$D/mixed.f16.nan"
run pair_f32_bf16 0 "$SC" --to bf16 "$D/mixed.f32.safetensors" "$TMP/p3.safetensors"
expect_same pair_f32_bf16 "$D/mixed.bf16.safetensors" "$TMP/p3.safetensors" "$D/mixed.bf16.nan"
run pair_f16_f16 0 "$SC" --to f16 "$D/mixed.f16.safetensors" "$TMP/p4.safetensors"
expect_same pair_f16_f16 "$D/mixed.f16.safetensors" "$TMP/p4.safetensors"

# ---- the report: overflow/underflow per tensor as PyTorch counts them ---------
run verbose 0 "$SC" --verbose --to f16 "$D/mixed.safetensors" "$TMP/v.safetensors"
check_counts() { # TARGET REPORT [COUNTS]
  local target=$1 report=$2 counts=${3:-$D/counts.txt} t name o u line bad=0
  while read -r t name o u; do
    [ "$t" = "$target" ] || continue
    line=$(grep -F "tensor '$name': " "$report")
    case $line in
      *overflow*) [[ $line == *", $o overflow, $u underflow" ]] || { echo "$line: expected $o overflow, $u underflow"; bad=1; } ;;
      *) [ "$o $u" = "0 0" ] || { echo "$line: expected $o overflow, $u underflow"; bad=1; } ;;
    esac
  done <"$counts"
  return $bad
}
if why=$(check_counts f16 "$TMP/verbose.err"); then ok; else fail "verbose counts: $why"; fi
for t in f64 f32 bf16; do
  run "verbose_$t" 0 "$SC" -v --force --to $t "$D/mixed.safetensors" "$TMP/v.safetensors"
  if why=$(check_counts $t "$TMP/verbose_$t.err"); then ok; else fail "verbose_$t counts: $why"; fi
done
expect_err verbose "^stconvert: tensor 'int.i64': I64 copied$"
expect_err verbose "^stconvert: tensor 'f8.e4m3': F8_E4M3 -> F16$"
expect_err verbose "^stconvert: tensor 'nan.f16': F16 copied$"
expect_err verbose_f32 "^stconvert: tensor 'f16.random': F16 -> F32$"
total_o=$(awk '$1 == "f16" { o += $3; u += $4 } END { print o " " u }' "$D/counts.txt")
expect_err verbose "^stconvert: overflow: ${total_o% *} finite values became \+-Inf; underflow: ${total_o#* } non-zero values became 0$"
golden stconvert/report_bf16 0 "$SC" --to bf16 "$D/mixed.safetensors" "$TMP/r.safetensors"
run quiet 0 "$SC" -q --force --to bf16 "$D/mixed.safetensors" "$TMP/r.safetensors"
if [ -s "$TMP/quiet.err" ] || [ -s "$TMP/quiet.out" ]; then fail "quiet: output"; else ok; fi

# ---- 8- and 4-bit floats without scales: decoded exactly --------------------
# narrow.safetensors holds every code of the five F8 types and F4; the
# expected files are the OCP specifications' values through PyTorch's .to()
# (gen_fixtures.py). F6 is not decoded: copied.
for t in f64 f32 f16 bf16; do
  run "narrow_$t" 0 "$SC" -v --to $t "$D/narrow.safetensors" "$TMP/narrow_$t.safetensors"
  expect_same "narrow_$t" "$D/narrow.$t.safetensors" "$TMP/narrow_$t.safetensors" "$D/narrow.$t.nan"
  if why=$(check_counts $t "$TMP/narrow_$t.err" "$D/narrow.counts.txt"); then ok
  else fail "narrow_$t counts: $why"; fi
done
expect_err narrow_f16 '^stconvert: to F16: 12 converted, 1 copied, 0 kept, 0 dropped$'
expect_err narrow_f16 "^stconvert: tensor 'f6.e2m3': F6_E2M3 copied$"
expect_err narrow_f16 "^stconvert: tensor 'f4': F4 -> F16$"
expect_err narrow_bf16 "^stconvert: tensor 'f8.e8m0': F8_E8M0 -> BF16$"
run narrow_keep 0 "$SC" --to f32 --keep 'f8.*' "$D/narrow.safetensors" "$TMP/narrow_keep.safetensors"
expect_err narrow_keep '^stconvert: to F32: 7 converted, 1 copied, 5 kept, 0 dropped$'

# ---- --keep, --drop, --metadata --------------------------------------------
run keep 0 "$SC" --to bf16 --keep '*ln_*' --drop 'int.*' --metadata author=stconvert-test \
  --metadata source=override "$D/mixed.safetensors" "$TMP/keep.safetensors"
expect_same keep "$D/mixed.keep.safetensors" "$TMP/keep.safetensors" "$D/mixed.keep.nan"
expect_err keep '^stconvert: to BF16: 12 converted, 3 copied, 2 kept, 5 dropped$'
run nomatch 0 "$SC" --keep 'zzz*' --drop 'yyy' "$D/mixed.safetensors" "$TMP/nomatch.safetensors"
expect_err nomatch "warning: --keep 'zzz\*' matches no tensor"
expect_err nomatch "warning: --drop 'yyy' matches no tensor"
expect_same nomatch "$D/mixed.canonical.safetensors" "$TMP/nomatch.safetensors"
# --drop wins over --keep; --keep without --to changes nothing.
run dropall 0 "$SC" --keep '*' --drop '*' "$D/mixed.safetensors" "$TMP/none.safetensors"
expect_err dropall 'out: 0 tensors, 0 bytes'
# An empty checkpoint is still a valid file: metadata only.
run dropall_back 0 "$SC" "$TMP/none.safetensors" "$TMP/none2.safetensors"
expect_same dropall_back "$TMP/none.safetensors" "$TMP/none2.safetensors"
# Metadata: kept, overridden, format stays pt.
if grep -q '"__metadata__":{"author":"stconvert-test","format":"pt","source":"override"}' "$TMP/keep.safetensors"; then ok; else fail "keep: metadata"; fi

# ---- round trips are exact ---------------------------------------------------
"$SC" -q --to bf16 "$D/mixed.f32.safetensors" "$TMP/rt1.safetensors"
"$SC" -q --to f32 "$TMP/rt1.safetensors" "$TMP/rt2.safetensors"
"$SC" -q --to bf16 "$TMP/rt2.safetensors" "$TMP/rt3.safetensors"
expect_same rt_bf16 "$TMP/rt1.safetensors" "$TMP/rt3.safetensors"
"$SC" -q --to f16 "$D/mixed.f32.safetensors" "$TMP/rh1.safetensors"
"$SC" -q --to f32 "$TMP/rh1.safetensors" "$TMP/rh2.safetensors"
"$SC" -q --to f16 "$TMP/rh2.safetensors" "$TMP/rh3.safetensors"
expect_same rt_f16 "$TMP/rh1.safetensors" "$TMP/rh3.safetensors"
"$SC" -q --to f32 "$D/mixed.bf16.safetensors" "$TMP/rb1.safetensors"
"$SC" -q --to bf16 "$TMP/rb1.safetensors" "$TMP/rb2.safetensors"
expect_same rt_bf16_f32_bf16 "$D/mixed.bf16.safetensors" "$TMP/rb2.safetensors" "$D/mixed.bf16.nan"

# ---- PyTorch input: the same bytes as the same tensors from safetensors -----
# (gen_formats.py's state.dedup.expected.safetensors holds state.bin's
# tensors but the alias lm_head.weight, which is written once.)
for t in "" f32 f16 bf16; do
  opt=(); [ -n "$t" ] && opt=(--to "$t")
  run "torch_$t" 0 "$SC" "${opt[@]}" "$TESTDATA/torch/state.bin" "$TMP/torch_$t.safetensors"
  "$SC" -q "${opt[@]}" "$TESTDATA/torch/state.dedup.expected.safetensors" "$TMP/torchref_$t.safetensors"
  expect_same "torch_$t" "$TMP/torchref_$t.safetensors" "$TMP/torch_$t.safetensors"
done
expect_err torch_ '^stconvert: in:  16 tensors, 237 bytes \(237 B\), 1 file$'

# ---- --force and in-place ----------------------------------------------------
cp "$D/mixed.safetensors" "$TMP/ip.safetensors"
run noforce 2 "$SC" --to bf16 "$TMP/ip.safetensors" "$TMP/ip.safetensors"
expect_err noforce 'ip.safetensors: already exists \(use --force to replace it\)'
expect_same noforce "$D/mixed.safetensors" "$TMP/ip.safetensors"
cp "$D/mixed.canonical.safetensors" "$TMP/existing.safetensors"
run noforce2 2 "$SC" --to f16 "$D/mixed.safetensors" "$TMP/existing.safetensors"
expect_same noforce2 "$D/mixed.canonical.safetensors" "$TMP/existing.safetensors"
run force 0 "$SC" --force --to f16 "$D/mixed.safetensors" "$TMP/existing.safetensors"
expect_same force "$D/mixed.f16.safetensors" "$TMP/existing.safetensors" "$D/mixed.f16.nan"
chmod 640 "$TMP/ip.safetensors"
run inplace 0 "$SC" -f --to bf16 "$TMP/ip.safetensors" "$TMP/ip.safetensors"
# A replaced file keeps its permissions, as with cp.
m=$(stat -c %a "$TMP/ip.safetensors")
if [ "$m" = 640 ]; then ok; else fail "inplace: mode $m, expected 640"; fi
expect_same inplace "$D/mixed.bf16.safetensors" "$TMP/ip.safetensors" "$D/mixed.bf16.nan"
no_temps inplace "$TMP"

finish
