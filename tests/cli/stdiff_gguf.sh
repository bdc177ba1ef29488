# stdiff --map gpt2: a GPT-2 GGUF against the snapshot it came from,
# through the GPT-2 name map with the Conv1D transposes: the files of
# testdata/gguf/judge (expected-*.gguf, computed independently from
# model/ by gen_expected.py) must come out identical (F32), exactly
# rounded (F16, BF16) or exactly quantized (Q8_0); a snapshot they did not
# come from must not; and the options --map refuses.
. "$(dirname "$0")/lib.bash"
D=$BIN/stdiff C=$BIN/stconvert
[ -x "$D" ] || { echo "no $D"; exit 77; }
cd "$TESTDATA/gguf/judge" || exit 1

golden_line() { # NAME PATTERN: the last line of NAME's stdout matches
	if tail -n1 "$TMP/$1.out" | grep -Eq -- "$2"; then ok; else
		fail "$1: last line $(tail -n1 "$TMP/$1.out")"; fi
}
run f32 0 "$D" --map gpt2 model expected-f32.gguf
golden_line f32 '^28 tensors compared .*: 28 identical, 0 within tolerance, 0 differ; 0 only in A, 0 only in B, 0 shape changed: equal$'
for t in f16 bf16 q8_0; do
	T=$(echo "$t" | tr a-z A-Z)
	run "$t" 0 "$D" --map gpt2 -v model "expected-$t.gguf"
	golden_line "$t" ': 19 identical, 9 within tolerance, 0 differ;.*: equal$'
	# The 9 matrices, each exactly the snapshot's rounded or quantized.
	n=$(grep -c "B is exactly A \(rounded\|quantized\) to $T\$" "$TMP/$t.out")
	if [ "$n" = 9 ]; then ok; else fail "$t: $n tensors exactly converted, expected 9"; fi
done
# With the GGUF as A, the sentence turns round.
run q8_0_as_a 0 "$D" --map gpt2 -v expected-q8_0.gguf model
expect_out q8_0_as_a 'A is exactly B quantized to Q8_0$'
expect_out q8_0_as_a 'h\.1\.mlp\.c_proj\.weight ~ blk\.1\.ffn_down\.weight \(F32 vs Q8_0, transposed, 4096 elements\)'
# --exact: only bit-identical values pass.
run f16_exact 1 "$D" --map gpt2 --exact model expected-f16.gguf
golden_line f16_exact ': 19 identical, 0 within tolerance, 9 differ;'
# A snapshot the Q8_0 file was not quantized from (the BF16 rounding).
run round_bf16 0 "$C" model "$TMP/bf16" --to bf16
run q8_0_other 1 "$D" --map gpt2 "$TMP/bf16" expected-q8_0.gguf
expect_out q8_0_other '^differs: wte\.weight ~ token_embd\.weight \(BF16 vs Q8_0, '
# Only in one side: a GGUF that is no GPT-2.
run not_gpt2 1 "$D" --map gpt2 model ../ok_all_types.gguf
expect_out not_gpt2 '^only in A: wte\.weight$'
expect_out not_gpt2 '^only in B: f32$'
# Refused combinations.
run two_gguf 2 "$D" --map gpt2 expected-f32.gguf expected-f16.gguf
expect_err two_gguf 'give one of each'
# --json: the same verdicts as one document.
json_list() { # NAME LIST: the items of LIST in NAME's stdout, one a line
	awk -v l="\"$2\": [" 'index($0, l) { on = 1; next } on && /^ *\]/ { exit }
		on { print }' "$TMP/$1.out"
}
run f32_json 0 "$D" --map gpt2 --json model expected-f32.gguf
expect_out f32_json '^\{"schema": 1, "equal": true, "map": "gpt2",$'
expect_out f32_json '"summary": \{"compared": 28, "identical": 28, "within_tolerance": 0, "differ": 0, "only_in_a": 0, "only_in_b": 0, "shape_changed": 0\}\}$'
n=$(json_list f32_json tensors | grep -c '"verdict": "identical", "identical": true')
if [ "$n" = 28 ]; then ok; else fail "f32_json: $n identical entries, expected 28"; fi
run q8_json_as_a 0 "$D" --map gpt2 --json expected-q8_0.gguf model
n=$(json_list q8_json_as_a tensors |
	grep -c '"dtype_a": "Q8_0", "dtype_b": "F32", .*"exactly_encoded": true')
if [ "$n" = 9 ]; then ok; else fail "q8_json_as_a: $n exactly quantized, expected 9"; fi
# The 8 Conv1D weights of the 2 layers are transposed; wte is not.
n=$(json_list q8_json_as_a tensors | grep -c '"transposed": true')
if [ "$n" = 8 ]; then ok; else fail "q8_json_as_a: $n transposed, expected 8"; fi
expect_out q8_json_as_a '"name": "h\.1\.mlp\.c_proj\.weight", "gguf_name": "blk\.1\.ffn_down\.weight"'
run q8_other_json 1 "$D" --map gpt2 --json "$TMP/bf16" expected-q8_0.gguf
expect_out q8_other_json '^\{"schema": 1, "equal": false,'
expect_out q8_other_json '"name": "wte\.weight", .*"verdict": "differs", .*"exactly_encoded": false'
run not_gpt2_json 1 "$D" --map gpt2 --json model ../ok_all_types.gguf
if json_list not_gpt2_json only_in_a | grep -qx '  "wte\.weight",\?'; then ok; else
	fail "not_gpt2_json: wte.weight not in only_in_a"; fi
if json_list not_gpt2_json only_in_b | grep -qx '  "f32",\?'; then ok; else
	fail "not_gpt2_json: f32 not in only_in_b"; fi
# Another width: every pair's shape changed (the GGUF's own dims shown).
G=$BIN/gpt2export
run wide 0 "$G" --random "$TMP/wide" --layers 2 --heads 4 --width 64 --vocab 512 \
	--context 32 --no-tokenizer
run wide_json 1 "$D" --map gpt2 --json "$TMP/wide" expected-f32.gguf
expect_out wide_json '"shape_changed": 28\}\}$'
expect_out wide_json '^  \{"name": "h\.0\.attn\.c_attn\.weight", "gguf_name": "blk\.0\.attn_qkv\.weight", "dtype_a": "F32", "dtype_b": "F32", "shape": \[64, 192\], "gguf_dims": \[32, 96\]\},?$'
run quiet_json 0 "$D" --map gpt2 -q --json model expected-f32.gguf
[ -s "$TMP/quiet_json.out" ] && fail "-q --json: stdout not empty" || ok
run map_names 2 "$D" --map gpt2 --names-only model expected-f32.gguf
run map_other 2 "$D" --map falcon model expected-f32.gguf
expect_err map_other "unknown map 'falcon' \(there are gpt2, llama, qwen2 and qwen3\)"
finish
