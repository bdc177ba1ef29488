# Every ggml type in the tools: for each fixture of testdata/ggml/ (blocks
# and the floats ggml's own to_float gives them, make_fixtures.py), a GGUF
# holding the blocks and one holding ggml's floats as F32, both built here
# byte by byte; stinfo --stats must give the same statistics for both, and
# gpt2export's reader must see every type. Then a GGUF with a tensor of a
# type libst does not know (testdata/gguf/warn_type57_between.gguf): it is
# listed and flagged, the rest still shows, --check warns, --stats says
# its values were not read.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }

. "$(dirname "$0")/gguf_lib.bash"

# The statistics row of tensor w without its type column.
row() { awk '$1 == "w" { $2 = ""; print }' "$TMP/$1.out"; }

while read -r name type block bytes; do
	lower=$(echo "$name" | tr A-Z a-z)
	bin=$TESTDATA/ggml/$lower.bin
	n=$(($(stat -c %s "$bin") / bytes * block))
	mk_gguf "$TMP/$lower.gguf" "$type" "$n" "$bin"
	mk_gguf "$TMP/$lower-f32.gguf" 0 "$n" "$TESTDATA/ggml/$lower.f32"
	run "stats_$lower" 0 "$S" --stats "$TMP/$lower.gguf" || continue
	run "stats_${lower}_f32" 0 "$S" --stats "$TMP/$lower-f32.gguf" || continue
	expect_out "stats_$lower" "^w +$name +-?[0-9]"
	expect_not_err "stats_$lower" .
	if [ -n "$(row "stats_$lower")" ] &&
	   [ "$(row "stats_$lower")" = "$(row "stats_${lower}_f32")" ]; then
		ok
	else
		fail "$name: --stats '$(row "stats_$lower")', ggml's floats '$(row "stats_${lower}_f32")'"
	fi
	run "check_$lower" 0 "$S" --check "$TMP/$lower.gguf" &&
		expect_out "check_$lower" ": OK$"
done <<< "$types"

# stdiff --map gpt2: a Q4_K block (ggml's quantizer's) against the floats
# ggml decodes it to is compared and within tolerance (no element off, by
# Q4_K's default rule); a damaged block differs; a type libst does not know is not compared.
D=$BIN/stdiff
G=$TESTDATA/ggml
mk_st "$TMP/ln.safetensors" h.0.ln_1.weight 256 "$G/q4_k.f32"
head -c 144 "$G/q4_k.bin" > "$TMP/blk"
mk_gguf "$TMP/ln.gguf" 12 256 "$TMP/blk" blk.0.attn_norm.weight
run diff_q4_k 0 "$D" --map gpt2 -v "$TMP/ln.safetensors" "$TMP/ln.gguf"
expect_out diff_q4_k '^within tolerance: h\.0\.ln_1\.weight ~ blk\.0\.attn_norm\.weight \(F32 vs Q4_K, 256 elements\): 0 mismatched \(0%\), max abs 0, max rel 0, Q4_K'"'"'s error bound \(at most [0-9.e-]+\)$'
printf '\0\0\0\0' | dd of="$TMP/blk" bs=1 seek=16 conv=notrunc status=none
mk_gguf "$TMP/ln-bad.gguf" 12 256 "$TMP/blk" blk.0.attn_norm.weight
run diff_q4_k_bad 1 "$D" --map gpt2 "$TMP/ln.safetensors" "$TMP/ln-bad.gguf"
expect_out diff_q4_k_bad '^differs: h\.0\.ln_1\.weight ~ blk\.0\.attn_norm\.weight \(F32 vs Q4_K, 256 elements\): 8 mismatched'
mk_gguf "$TMP/ln-57.gguf" 57 256 "$TMP/blk" blk.0.attn_norm.weight
run diff_unknown 1 "$D" --map gpt2 "$TMP/ln.safetensors" "$TMP/ln-57.gguf"
expect_out diff_unknown '^differs: h\.0\.ln_1\.weight ~ blk\.0\.attn_norm\.weight: not compared: type 57 \(unknown\): libst does not know the type, its values were not read$'
run diff_unknown_json 1 "$D" --json --map gpt2 "$TMP/ln.safetensors" "$TMP/ln-57.gguf"
expect_out diff_unknown_json '"dtype_b": "type 57 \(unknown\)", "elements": 256, "values_compared": false, "verdict": "differs", "reason": "GGUF type unknown to libst"'

# A type libst does not know: listed and flagged, the rest shown.
U=$TESTDATA/gguf/warn_type57_between.gguf
run unknown 0 "$S" "$U"
expect_out unknown '^new +type 57 \(unknown\) +- +\[64\] +64 +'
expect_out unknown '^a +F32 +32 +\[8\] +8 +0$'
expect_out unknown '^b +F32 +32 +\[4\] +4 +'
expect_out unknown '^unknown types +1 +64 +unknown +-$'
# Bits per weight of the file: the known tensors' 48 bytes * 8 / 12.
expect_out unknown '^bits/weight: 32$'
expect_out unknown 'general.architecture: test'
run unknown_stats 0 "$S" --stats "$U"
expect_out unknown_stats '^new +type 57 \(unknown\)( +-){7}$'
expect_out unknown_stats '^b +F32 +1 +4 +2.5 '
expect_out unknown_stats '^note: no statistics for 1 tensor of a type libst does not know: its values were not read$'
run unknown_json 0 "$S" --json --stats "$U"
expect_out unknown_json '"name": "new", "dtype": "unknown", "ggml_type": 57, "shape": \[64\], "gguf_dims": \[64\], "parameters": 64, "bytes": null, .*"data_offsets": \[32, null\], "stats": null'
run unknown_check 0 "$S" --check "$U"
expect_out unknown_check 'OK \(1 warning\)$'
expect_err unknown_check "llama.cpp will refuse this: tensor 'new': unknown ggml type 57 \\(its size is not known"
run unknown_past_end 1 "$S" --check "$TESTDATA/gguf/bad_type57_past_end.gguf"
expect_err unknown_past_end "tensor 'new' \(unknown type 57\): data offset 4096 is past the end of the data section"
finish
