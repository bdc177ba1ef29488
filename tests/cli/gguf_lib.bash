# Shared by the CLI tests that build GGUF files byte by byte
# (ggml_gguf.sh, stconvert_gguf.sh). Source it after lib.bash.

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
mk_gguf() { mk_gguf_dims "$1" "$2" "$3" "$4" "${5:-w}"; }
# mk_gguf_dims OUT TYPE "NE0 NE1..." DATA NAME: the same with ggml's dims
# (ne[0], the fastest-varying, first).
mk_gguf_dims() {
	local d dims=($3)
	{
		printf 'GGUF'; le 3 4; le 1 8; le 2 8
		str general.architecture; le 8 4; str test
		str general.quantization_version; le 4 4; le 2 4
		str "$5"; le ${#dims[@]} 4
		for d in "${dims[@]}"; do le "$d" 8; done
		le "$2" 4; le 0 8
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
