# stdiff --first --json: the first difference of two traces as one JSON
# document (doc/json.md), the same tensor, position and figures as the
# text of --first; null when there is none.
. "$(dirname "$0")/lib.bash"
S=$BIN/stdiff
D=$TESTDATA/llama/qwen3
run text 1 "$S" --first "$D/trace_ref.safetensors" "$D/trace_interleaved.safetensors"
expect_out text '^first difference: tensor 9 of 38 in A.s recorded order$'
expect_out text '^differs: layers\.0\.attn\.q_rope \(F32, 192 elements\): 121 mismatched'
run json 1 "$S" --first --json "$D/trace_ref.safetensors" "$D/trace_interleaved.safetensors"
expect_out json '^\{"schema": 1, "equal": false, "order": "recorded", "walked": 9, "tensors": 38,$'
expect_out json '^ "first": \{"position": 9, "kind": "differs", "tensor": \{"name": "layers\.0\.attn\.q_rope", "dtype_a": "F32", "dtype_b": "F32", "elements": 192, "values_compared": true, "verdict": "differs", .*"mismatched": 121,'
expect_out json '^ "only_in_b": \[\]\}$'
run same 0 "$S" --first --json "$D/trace_ref.safetensors" "$D/trace_ref.safetensors"
expect_out same '^\{"schema": 1, "equal": true, "order": "recorded", "walked": 38, "tensors": 38,$'
expect_out same '^ "first": null,$'
run quiet 1 "$S" --first --json -q "$D/trace_ref.safetensors" "$D/trace_interleaved.safetensors"
if [ -s "$TMP/quiet.out" ]; then fail "quiet: printed"; else ok; fi
run names 2 "$S" --first --names-only "$D/trace_ref.safetensors" "$D/trace_ref.safetensors"
expect_err names '^stdiff: --first cannot be combined with --markdown or --names-only$'
finish
