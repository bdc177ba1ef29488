#!/usr/bin/env bash
# stdiff CLI: options, exit codes, layouts, structure reports, golden output.
# Statistics against numpy are in stdiff_values.sh.
. "$(dirname "$0")/lib.bash"
S=$BIN/stdiff
[ -x "$S" ] || { echo "stdiff not built"; exit 77; }
D=$TESTDATA/stdiff
mkdir -p "$TMP/stdiff"
cd "$D" || exit 2 # relative paths keep golden output independent of the tree

# --help, --version, usage errors.
run help 0 "$S" --help
expect_out help '^Usage: stdiff \[OPTION\]\.\.\. A B'
[ -s "$TMP/help.err" ] && fail "help: stderr not empty" || ok
run version 0 "$S" --version
expect_out version '^stdiff \(libst\) [0-9]+\.[0-9]+\.[0-9]+$'
run no_args 2 "$S"
expect_err no_args "missing operand"
expect_err no_args "Try 'stdiff --help'"
run one_arg 2 "$S" a.safetensors
run three_args 2 "$S" a.safetensors b.safetensors a.safetensors
expect_err three_args "extra operand"
run bad_opt 2 "$S" --frobnicate a.safetensors b.safetensors
expect_err bad_opt "Try 'stdiff --help'"
# One message under the program's name, then the hint: two lines.
expect_err bad_opt "^stdiff: unrecognized option '--frobnicate'\$"
[ "$(wc -l < "$TMP/bad_opt.err")" = 2 ] && ok || fail "bad_opt: not two lines on stderr"
run no_arg 2 "$S" a.safetensors b.safetensors --rtol
expect_err no_arg "^stdiff: option '--rtol' requires an argument\$"
run help_short 0 "$S" -h
cmp -s "$TMP/help.out" "$TMP/help_short.out" && ok || fail "-h differs from --help"
run bad_rtol 2 "$S" --rtol abc a.safetensors b.safetensors
expect_err bad_rtol "--rtol"
run neg_atol 2 "$S" --atol -1 a.safetensors b.safetensors
run exact_tol 2 "$S" --exact --rtol 0 a.safetensors b.safetensors
run bad_threads 2 "$S" -j 0 a.safetensors b.safetensors

# q/k weights left in GGUF's interleaved rotary order (rotary/make_fixtures.py
# permutes them as convert_hf_to_gguf.py does): named for exactly the 8 q/k
# weights and biases, heads of 8 rows (Qwen2's head_dim), in both
# directions; per-row and per-element scaling is not mistaken for it.
Q=../llama/qwen2/model.safetensors
run rotary_rows 1 "$S" -vv "$Q" rotary/qk_gguf.safetensors
[ "$(grep -c "B is A's rows permuted to GGUF's interleaved rotary layout (heads of 8 rows) (exactly)" \
  "$TMP/rotary_rows.out")" = 8 ] && ok || fail "rotary_rows: not 8 tensors named"
[ "$(grep -B1 "rotary layout" "$TMP/rotary_rows.out" | grep -c '^differs: model\.layers\.[01]\.self_attn\.[qk]_proj\.\(weight\|bias\) ')" = 8 ] &&
  ok || fail "rotary_rows: not the q/k weights and biases"
run rotary_rows_back 1 "$S" rotary/qk_gguf.safetensors "$Q"
expect_out rotary_rows_back "^  B is A's rows permuted from GGUF's interleaved rotary layout to Hugging Face's \(heads of 8 rows\)"
run rotary_rows_json 1 "$S" --json "$Q" rotary/qk_gguf.safetensors
expect_out rotary_rows_json '"diagnosis": \{"kind": "rotary_rows", "exact": true, .*"head_dim": 8, "to_interleaved": true\}'
run rows_scaled 1 "$S" "$Q" rotary/scaled.safetensors
expect_out rows_scaled '^  B is A with each row scaled by its own factor, 0\.99[0-9]* to 1\.00[0-9]* \(within tolerance\)$'
expect_not_out() { grep -Eq -- "$2" "$TMP/$1.out" && fail "$1: stdout matches /$2/" || ok; }
expect_not_out rows_scaled 'rotary|permuted'

# Full report of a pair that differs in every way stdiff knows.
golden stdiff/a_b 1 "$S" a.safetensors b.safetensors
golden stdiff/a_b_json 1 "$S" --json a.safetensors b.safetensors
golden stdiff/a_b_verbose 1 "$S" -vv a.safetensors b.safetensors
# -v: every pair, folded by layer (none here); a compared dtype change is its
# pair's line only.
golden stdiff/a_b_v 1 "$S" -v a.safetensors b.safetensors
golden stdiff/a_b_markdown 1 "$S" --markdown a.safetensors b.safetensors
golden stdiff/a_b_names 1 "$S" --names-only a.safetensors b.safetensors
golden stdiff/a_b_names_json 1 "$S" --names-only --json a.safetensors b.safetensors

# A directory holding B's file gives the same report as B's file.
golden stdiff/a_b 1 "$S" a.safetensors snap
# -q / -s: nothing on stdout, only the status.
for q in -q --quiet; do
	run quiet 1 "$S" $q a.safetensors b.safetensors
	[ -s "$TMP/quiet.out" ] && fail "$q: stdout not empty" || ok
done
run quiet_json 1 "$S" -q --json a.safetensors b.safetensors
[ -s "$TMP/quiet_json.out" ] && fail "-q --json: stdout not empty" || ok
run quiet_eq 0 "$S" -q a.safetensors a.safetensors
[ -s "$TMP/quiet_eq.out" ] && fail "-q equal: stdout not empty" || ok

# Same checkpoint: equal, every tensor identical; --exact agrees.
run same 0 "$S" a.safetensors a.safetensors
expect_out same '^17 tensors compared: 17 identical, 0 within tolerance, 0 differ; 0 only in A, 0 only in B, 0 shape changed, 0 dtype changed: equal$'
run same_exact 0 "$S" --exact a.safetensors a.safetensors

# Layouts: shards + index (as directory or index path) vs one file.
golden stdiff/a_sharded 0 "$S" a.safetensors sharded
golden stdiff/a_sharded 0 "$S" sharded/model.safetensors.index.json a.safetensors
run sharded_exact 0 "$S" --exact sharded a.safetensors
golden stdiff/a_sharded_json 0 "$S" --json sharded a.safetensors

# Prefixes: without --strip-prefix nothing matches; with it, all identical.
run prefix 1 "$S" --json a.safetensors prefixed.safetensors
expect_out prefix '"only_in_a": \["b.f32", "dtype.chg",'
expect_out prefix '"only_in_b": \["transformer.b.f32", "transformer.dtype.chg",'
run strip 0 "$S" --strip-prefix transformer. a.safetensors prefixed.safetensors
expect_out strip '^17 tensors compared: 17 identical'
run strip_p 0 "$S" --strip-prefix transformer. prefixed.safetensors sharded
run strip_other 1 "$S" --strip-prefix model. a.safetensors prefixed.safetensors
run strip_clash 2 "$S" --strip-prefix transformer. broken/clash.safetensors a.safetensors
expect_err strip_clash "^stdiff: broken/clash.safetensors: tensors 'transformer.x' and 'x' have the same name after --strip-prefix"

# --tensor GLOB restricts both sides (matched after prefix stripping).
golden stdiff/a_b_tensor_w 1 "$S" --json --tensor 'w.*' a.safetensors b.safetensors
run tensor_eq 0 "$S" --tensor b.f32 --tensor u8 a.safetensors b.safetensors
expect_out tensor_eq '^2 tensors compared: 2 identical'
run tensor_only 1 "$S" -T 'only.*' a.safetensors b.safetensors
expect_out tensor_only '^only in A: only.a$'
expect_out tensor_only '^only in B: only.b$'
run tensor_strip 0 "$S" --strip-prefix transformer. -T 'w.f32' a.safetensors prefixed.safetensors
expect_out tensor_strip '^1 tensor compared: 1 identical'
run tensor_none 2 "$S" -T 'nomatch*' a.safetensors b.safetensors
expect_err tensor_none "no tensor in a.safetensors or b.safetensors matches --tensors 'nomatch\*'"

# Tolerances: defaults per dtype, overrides, --exact.
run tol_default 1 "$S" -T w.f32 a.safetensors b.safetensors
expect_out tol_default '^differs: w.f32 \(F32, 128 elements\): 2 mismatched'
run tol_loose 0 "$S" -v -T w.f32 --atol 3e-3 a.safetensors b.safetensors
expect_out tol_loose '^within tolerance: w.f32'
run tol_rtol 0 "$S" -T w.f32 --rtol 0.01 a.safetensors b.safetensors
run tol_zero 1 "$S" -T b.f32 -T zero.f32 --rtol 0 --atol 0 a.safetensors b.safetensors
expect_out tol_zero '^differs: zero.f32 \(F32, 10 elements\): 10 mismatched'
run tol_bf16 1 "$S" -T w.bf16 a.safetensors b.safetensors
expect_out tol_bf16 '1 mismatched'
run tol_bf16_loose 0 "$S" -T w.bf16 --rtol 0.2 a.safetensors b.safetensors
# b == 0: only atol can make it pass.
run tol_b0 0 "$S" -T zero.f32 --rtol 0 --atol 1e-6 a.safetensors b.safetensors
run tol_b0_tight 1 "$S" -T zero.f32 --rtol 1 --atol 1e-7 a.safetensors b.safetensors
# Integers are exact by default, atol loosens them.
run int_exact 1 "$S" -T ids a.safetensors b.safetensors
run int_atol 0 "$S" -T ids --atol 1 a.safetensors b.safetensors
# Within tolerance is not bit-identical: --exact says so.
run exact_within 1 "$S" --exact -T zero.f32 a.safetensors b.safetensors
expect_out exact_within '^differs: zero.f32 .*: 10 mismatched'

# NaN: same place on both sides equal (and reported), payload/sign of zero
# only matter with --exact; NaN against a number differs.
golden stdiff/nan 0 "$S" nan_a.safetensors nan_b.safetensors
golden stdiff/nan_exact 1 "$S" --exact nan_a.safetensors nan_b.safetensors
run nan_num 1 "$S" -T nan.f32 a.safetensors b.safetensors
expect_out nan_num 'worst at \[7\], NaN on one side: 2, NaN in both: 2$'
# Inf equal to the same Inf; Inf against a number or -Inf differs.
run inf 1 "$S" -T inf.f32 a.safetensors b.safetensors
expect_out inf '^differs: inf.f32 \(F32, 6 elements\): 3 mismatched \(50%\), max abs inf, max rel inf, mean abs inf, worst at \[2\]$'

# Across dtypes: "is B the BF16 version of A?"
golden stdiff/ref_f32_bf16 1 "$S" ref_f32.safetensors ref_bf16.safetensors
golden stdiff/ref_f32_bf16_trunc 0 "$S" ref_f32.safetensors ref_bf16_trunc.safetensors
golden stdiff/ref_bf16_f32 1 "$S" ref_bf16.safetensors ref_f32.safetensors
run ref_y 0 "$S" -v -T y ref_f32.safetensors ref_bf16.safetensors
expect_out ref_y 'B is exactly A rounded to BF16$'
# Without -v, a dtype change that holds A rounded is one line per pair.
run ref_y_sum 0 "$S" -T y ref_f32.safetensors ref_bf16.safetensors
expect_out ref_y_sum '^1 tensor F32 → BF16, exactly A rounded$'
grep -q 'within tolerance: y' "$TMP/ref_y_sum.out" && fail "ref_y_sum: lists the tensor" || ok
run ref_f16 1 "$S" ref_f32.safetensors ref_f16.safetensors
expect_out ref_f16 '^differs: x .*2 mismatched.*B is exactly A rounded to F16$'
run ref_f64 0 "$S" -v ref_f64.safetensors ref_f32.safetensors
expect_out ref_f64 '^within tolerance: x \(F64 vs F32, 64 elements\): 0 mismatched \(0%\), max abs 0, max rel 0, mean abs 0, NaN in both: 1, B is exactly A rounded to F32$'
# A dtype change alone is no difference; with --exact (bit equality) it is.
run ref_f64_exact 1 "$S" --exact ref_f64.safetensors ref_f32.safetensors
run names_dtype 0 "$S" --names-only ref_f32.safetensors ref_bf16.safetensors
expect_out names_dtype '^dtype changed: x: F32 -> BF16$'
run names_dtype_exact 1 "$S" --names-only --exact ref_f32.safetensors ref_bf16.safetensors
run names_same 0 "$S" --names-only a.safetensors sharded
expect_out names_same '^17 tensors in both; 0 only in A, 0 only in B, 0 shape changed, 0 dtype changed: same tensors$'

# Threads do not change the answer.
run j1 1 "$S" --json -j 1 a.safetensors b.safetensors
run j2 1 "$S" --json -j 2 a.safetensors b.safetensors
cmp -s "$TMP/j1.out" "$TMP/j2.out" && ok || fail "-j 1 and -j 2 differ"

# Out of file descriptors for the extra threads' handles: fewer threads do
# the work (the main handles need 3 + 2 shards + 1). A limit too low for
# the main handles is an error naming the file.
# (Run bare under tests/valgrind.sh: valgrind needs descriptors of its own.)
answered=0
for n in 6 7 8; do
	(ulimit -n $n; exec "${ST_REAL_BIN:-$BIN}/stdiff" --json -j 2 sharded snap) >"$TMP/fd.out" 2>"$TMP/fd.err"
	rc=$?
	if [ $rc = 1 ] && cmp -s "$TMP/fd.out" "$GOLDEN/stdiff/a_b_json.out"; then
		answered=$((answered + 1))
	elif grep -q 'Sanitizer' "$TMP/fd.err"; then
		: # LeakSanitizer itself needs descriptors at exit
	elif [ $rc != 2 ] || ! grep -q 'Too many open files' "$TMP/fd.err"; then
		fail "ulimit -n $n: exit $rc"; sed 's/^/  /' "$TMP/fd.err" | head -3 >&2
	fi
done
[ $answered -gt 0 ] && ok || fail "no ulimit -n from 6 to 8 let stdiff answer"

# Errors: exit 2, one line naming the file.
run missing 2 "$S" a.safetensors nope.safetensors
expect_err missing '^stdiff: nope.safetensors: '
[ "$(wc -l <"$TMP/missing.err")" = 1 ] && ok || fail "missing: not one line"
[ -s "$TMP/missing.out" ] && fail "missing: stdout not empty" || ok
run truncated 2 "$S" broken/truncated.safetensors a.safetensors
expect_err truncated '^stdiff: broken/truncated.safetensors: .*truncated'
run shard_missing 2 "$S" a.safetensors broken/missing-shard
expect_err shard_missing "^stdiff: broken/missing-shard/model.safetensors.index.json: .*model-00002-of-00002.safetensors"
run empty_dir 2 "$S" a.safetensors expected
expect_err empty_dir '^stdiff: expected: '
run json_err 2 "$S" --json a.safetensors nope.safetensors
[ -s "$TMP/json_err.out" ] && fail "json_err: stdout not empty" || ok

# A config.json that is there but cannot be read (a folder in its place)
# is an I/O error: exit 2, one line, no comparison without it.
mkdir -p "$TMP/cfg_a/config.json" "$TMP/cfg_b"
cp a.safetensors "$TMP/cfg_a/model.safetensors"
cp a.safetensors "$TMP/cfg_b/model.safetensors"
printf '{"n_layer": 2}\n' >"$TMP/cfg_b/config.json"
run config_unreadable 2 "$S" "$TMP/cfg_a" "$TMP/cfg_b" &&
  expect_err config_unreadable "^stdiff: $TMP/cfg_a/config\.json: cannot read: not a regular file\$"
[ "$(wc -l <"$TMP/config_unreadable.err")" = 1 ] && [ ! -s "$TMP/config_unreadable.out" ] && ok ||
  fail "config_unreadable: not one line on stderr and nothing on stdout"

finish
