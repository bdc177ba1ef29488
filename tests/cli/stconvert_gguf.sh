# stconvert GGUF -> one .safetensors file: every tensor under its GGUF name,
# row-major, quantized types decoded. For each fixture of testdata/ggml/
# (blocks and the floats ggml's own to_float gives them, make_fixtures.py)
# a GGUF is built here byte by byte; the F32 it converts to must be ggml's
# floats, byte for byte. F16 stays F16 (nothing lost), --to narrows with
# the same rounding as converting ggml's floats, ggml's {ne0, ne1} becomes
# [ne1, ne0], and what cannot be converted leaves no file.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/gguf_lib.bash"
export ST_NO_PROGRESS=1
C=$BIN/stconvert
G=$TESTDATA/ggml

# data FILE BYTES: the last BYTES bytes of FILE (a one-tensor file's data).
data() { tail -c "$2" "$1"; }

while read -r name type block bytes; do
	lower=$(echo "$name" | tr A-Z a-z)
	bin=$G/$lower.bin
	n=$(($(stat -c %s "$bin") / bytes * block))
	mk_gguf "$TMP/$lower.gguf" "$type" "$n" "$bin"
	run "conv_$lower" 0 "$C" "$TMP/$lower.gguf" "$TMP/$lower.safetensors" || continue
	expect_err "conv_$lower" "^stconvert: nothing lost: 1 decoded to F32, 0 copied in their dtype$"
	# ggml's bits; a NaN matches any NaN (the payload of a NaN scale times
	# a code can differ between builds, as check_ggml_decode allows).
	mk_st "$TMP/$lower-ref.safetensors" w "$n" "$G/$lower.f32"
	if cmp -s <(data "$TMP/$lower.safetensors" $((n * 4))) <(head -c $((n * 4)) "$G/$lower.f32"); then
		ok
	elif "$BIN/stdiff" -v --rtol 0 --atol 0 "$TMP/$lower-ref.safetensors" "$TMP/$lower.safetensors" |
		grep -q ': 0 mismatched (0%), max abs 0, max rel 0, .*NaN in both: [0-9]'; then
		ok
	else
		fail "$name: the F32 written is not ggml's to_float"
	fi
	if [ "$(stat -c %s "$TMP/$lower.safetensors")" -gt $((n * 4 + 8)) ]; then ok; else fail "$name: short file"; fi
done <<< "$types"

# The file libst reads back: name, dtype, shape, and a full check.
run info 0 "$BIN/stinfo" "$TMP/q4_k.safetensors"
expect_out info '^w +F32 +\[[0-9]+\]'
run info_check 0 "$BIN/stinfo" --check "$TMP/q4_k.safetensors"

# --to bf16: the same bits as converting ggml's floats to BF16.
n=$(($(stat -c %s "$G/q4_k.bin") / 144 * 256))
mk_st "$TMP/q4k-ref.safetensors" w "$n" "$G/q4_k.f32"
run to_bf16 0 "$C" --to bf16 "$TMP/q4_k.gguf" "$TMP/q4k-bf16.safetensors"
expect_err to_bf16 "^stconvert: to BF16: 1 decoded, 0 converted, 0 copied$"
run ref_bf16 0 "$C" --to bf16 "$TMP/q4k-ref.safetensors" "$TMP/ref-bf16.safetensors"
if cmp -s <(data "$TMP/q4k-bf16.safetensors" $((n * 2))) <(data "$TMP/ref-bf16.safetensors" $((n * 2))); then
	ok
else
	fail "--to bf16: not the bits of ggml's floats rounded to BF16"
fi
run diff_bf16 0 "$BIN/stdiff" "$TMP/q4k-bf16.safetensors" "$TMP/ref-bf16.safetensors"

# -j: 2048 copies of the Q4_K fixture's blocks (23 MB of F32 out, six 4 MiB
# chunks) are 2048 copies of ggml's floats, on 1 thread and on 3.
cp "$G/q4_k.bin" "$TMP/big.bin"
cp "$G/q4_k.f32" "$TMP/big.f32"
for _ in $(seq 11); do
	cat "$TMP/big.bin" "$TMP/big.bin" > "$TMP/big2" && mv "$TMP/big2" "$TMP/big.bin"
	cat "$TMP/big.f32" "$TMP/big.f32" > "$TMP/big2" && mv "$TMP/big2" "$TMP/big.f32"
done
n=$(($(stat -c %s "$TMP/big.bin") / 144 * 256))
mk_gguf "$TMP/big.gguf" 12 "$n" "$TMP/big.bin"
run big_j1 0 "$C" -q -j 1 "$TMP/big.gguf" "$TMP/big1.safetensors"
run big_j3 0 "$C" -q -j 3 "$TMP/big.gguf" "$TMP/big3.safetensors"
cmp -s "$TMP/big1.safetensors" "$TMP/big3.safetensors" && ok || fail "-j 3: not -j 1's bytes"
if cmp -s <(data "$TMP/big3.safetensors" $((n * 4))) "$TMP/big.f32"; then
	ok
else
	fail "-j 3: the F32 written is not ggml's to_float"
fi
rm -f "$TMP"/big*

# F16 and F32 keep their dtype and bytes; ggml's dims {4, 2} are [2, 4].
head -c 16 /dev/urandom > "$TMP/f16.bin"
mk_gguf_dims "$TMP/f16.gguf" 1 "4 2" "$TMP/f16.bin" blk.0.attn_q.weight
run f16 0 "$C" -v "$TMP/f16.gguf" "$TMP/f16.safetensors"
expect_err f16 "^stconvert: tensor 'blk.0.attn_q.weight': F16 copied$"
expect_err f16 "^stconvert: nothing lost: 0 decoded to F32, 1 copied in their dtype$"
if cmp -s <(data "$TMP/f16.safetensors" 16) "$TMP/f16.bin"; then ok; else fail "f16: bytes changed"; fi
run f16_info 0 "$BIN/stinfo" "$TMP/f16.safetensors"
expect_out f16_info '^blk\.0\.attn_q\.weight +F16 +\[2, 4\] +8 '
run f16_to_f32 0 "$C" --to f32 -v "$TMP/f16.gguf" "$TMP/f16-f32.safetensors"
expect_err f16_to_f32 "^stconvert: tensor 'blk.0.attn_q.weight': F16 -> F32, converted$"

# Refusals: a type libst cannot decode (no file left), options with no
# meaning here, an OUT that is not one .safetensors file, an existing OUT.
mk_gguf "$TMP/t57.gguf" 57 256 "$TMP/f16.bin" blk.0.odd
run unknown 2 "$C" "$TMP/t57.gguf" "$TMP/t57.safetensors"
expect_err unknown "tensor 'blk.0.odd': ggml type 57 is unknown to libst; its values cannot be converted"
if ls "$TMP" | grep -q 't57\.safetensors'; then fail "unknown: left a file"; else ok; fi
run keep 2 "$C" --keep 'x*' "$TMP/f16.gguf" "$TMP/k.safetensors"
expect_err keep "^stconvert: --keep: not available for a GGUF input"
run rename 2 "$C" --strip-prefix blk. "$TMP/f16.gguf" "$TMP/k.safetensors"
expect_err rename "^stconvert: --rename/--strip-prefix: not available for a GGUF input"
run to_f8 2 "$C" --to f8_e4m3 "$TMP/f16.gguf" "$TMP/k.safetensors"
run meta 2 "$C" --metadata a=b "$TMP/f16.gguf" "$TMP/k.safetensors"
expect_err meta "^stconvert: --metadata: not available for a GGUF input"
mkdir -p "$TMP/outdir"
run outdir 2 "$C" "$TMP/f16.gguf" "$TMP/outdir"
expect_err outdir "architecture 'test' has no Hugging Face map \(gpt2, llama, qwen2, qwen3\); stconvert .*f16.gguf OUT.safetensors writes its tensors under their GGUF names"
run outname 2 "$C" "$TMP/f16.gguf" "$TMP/model"
if [ -e "$TMP/model" ]; then fail "outname: left a directory"; else ok; fi
run exists 2 "$C" "$TMP/f16.gguf" "$TMP/f16.safetensors"
expect_err exists "already exists \(use --force to replace it\)"
run force 0 "$C" --force -q "$TMP/f16.gguf" "$TMP/f16.safetensors"
if [ -s "$TMP/force.err" ]; then fail "force -q: printed"; else ok; fi
finish
