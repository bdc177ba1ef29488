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

# le VALUE BYTES: VALUE little-endian.
le() {
	local i
	for ((i = 0; i < $2; i++)); do
		printf "\\x$(printf %02x $((($1 >> (8 * i)) & 255)))"
	done
}
# str S: a GGUF string (u64 length, bytes).
str() { le ${#1} 8; printf '%s' "$1"; }

# mk_gguf OUT TYPE ELEMENTS DATA [NAME]: one tensor NAME (default w) of
# ELEMENTS values of ggml type TYPE (1-D) holding the bytes of DATA, GGUF
# v3, alignment 32.
mk_gguf() {
	{
		printf 'GGUF'; le 3 4; le 1 8; le 2 8
		str general.architecture; le 8 4; str test
		str general.quantization_version; le 4 4; le 2 4
		str "${5:-w}"; le 1 4; le "$3" 8; le "$2" 4; le 0 8
	} > "$1"
	local size pad
	size=$(stat -c %s "$1")
	pad=$(((32 - size % 32) % 32))
	head -c "$pad" /dev/zero >> "$1"
	cat "$4" >> "$1"
}

# mk_st OUT NAME ELEMENTS DATA: a safetensors file of one F32 tensor NAME
# holding the first ELEMENTS floats of DATA.
mk_st() {
	local h="{\"$2\":{\"dtype\":\"F32\",\"shape\":[$3],\"data_offsets\":[0,$(($3 * 4))]}}"
	while [ $((${#h} % 8)) != 0 ]; do h="$h "; done
	{ le ${#h} 8; printf '%s' "$h"; head -c $(($3 * 4)) "$4"; } > "$1"
}

# name type block bytes (ggml's type traits)
types="Q4_0 2 32 18
Q4_1 3 32 20
Q5_0 6 32 22
Q5_1 7 32 24
Q8_0 8 32 34
Q8_1 9 32 36
Q2_K 10 256 84
Q3_K 11 256 110
Q4_K 12 256 144
Q5_K 13 256 176
Q6_K 14 256 210
Q8_K 15 256 292
IQ2_XXS 16 256 66
IQ2_XS 17 256 74
IQ3_XXS 18 256 98
IQ1_S 19 256 50
IQ4_NL 20 32 18
IQ3_S 21 256 110
IQ2_S 22 256 82
IQ4_XS 23 256 136
IQ1_M 29 256 56
TQ1_0 34 256 54
TQ2_0 35 256 66
MXFP4 39 32 17
NVFP4 40 64 36
Q1_0 41 128 18
Q2_0 42 64 18"

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
# ggml decodes it to is compared and within tolerance (no element off); a
# damaged block differs; a type libst does not know is not compared.
D=$BIN/stdiff
G=$TESTDATA/ggml
mk_st "$TMP/ln.safetensors" h.0.ln_1.weight 256 "$G/q4_k.f32"
head -c 144 "$G/q4_k.bin" > "$TMP/blk"
mk_gguf "$TMP/ln.gguf" 12 256 "$TMP/blk" blk.0.attn_norm.weight
run diff_q4_k 0 "$D" --map gpt2 -v "$TMP/ln.safetensors" "$TMP/ln.gguf"
expect_out diff_q4_k '^within tolerance: h\.0\.ln_1\.weight ~ blk\.0\.attn_norm\.weight \(F32 vs Q4_K, 256 elements\): 0 mismatched \(0%\), max abs 0, max rel 0$'
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
