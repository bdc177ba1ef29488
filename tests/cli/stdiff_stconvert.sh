#!/usr/bin/env bash
# stdiff on what stconvert writes: a BF16/F16 conversion is "exactly A
# rounded", the same values as PyTorch's .to() (the fixtures' ref_*), and a
# re-sharded copy is --exact equal. Skipped until stconvert is built.
. "$(dirname "$0")/lib.bash"
S=$BIN/stdiff
C=$BIN/stconvert
[ -x "$S" ] && [ -x "$C" ] || { echo "stdiff or stconvert not built"; exit 77; }
D=$TESTDATA/stdiff

for to in bf16 f16; do
	run conv_$to 0 "$C" --to $to "$D/ref_f32.safetensors" "$TMP/$to.safetensors"
	run rounded_$to 1 "$S" --json "$D/ref_f32.safetensors" "$TMP/$to.safetensors"
	[ "$(grep -c '"exactly_encoded": true' "$TMP/rounded_$to.out")" = 2 ] && ok ||
		fail "rounded_$to: not every tensor is A rounded"
	# Equal values, NaN where PyTorch has NaN (its payload need not match).
	run torch_$to 0 "$S" --rtol 0 --atol 0 "$TMP/$to.safetensors" "$D/ref_$to.safetensors"
done
run conv_a 0 "$C" --shard-size 1kB "$D/a.safetensors" "$TMP/resharded"
run resharded 0 "$S" --exact "$D/a.safetensors" "$TMP/resharded"
expect_out resharded '^17 tensors compared: 17 identical'
finish
