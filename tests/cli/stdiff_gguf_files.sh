# stdiff with GGUF files on both sides: tensors paired by name, the same
# type and bytes identical, otherwise both decoded and compared; a Q8_0 or
# F16 B that is exactly A quantized or rounded is equal. A GGUF against a
# safetensors snapshot takes the name map of its general.architecture
# (gpt2) without --map; one of another architecture is refused, saying so.
# A split set compares as the one file it was split from.
. "$(dirname "$0")/lib.bash"
export ST_NO_PROGRESS=1
S=$BIN/stdiff
X=$BIN/gpt2export

run random 0 "$X" --random "$TMP/m" --layers 1 --heads 2 --width 64 --context 32 || { finish; exit; }
for t in f32 f16 q8_0; do
	run "export_$t" 0 "$X" "$TMP/m" "$TMP/m-$t.gguf" --type "$t"
done

run same 0 "$S" "$TMP/m-f32.gguf" "$TMP/m-f32.gguf"
expect_out same '^16 tensors compared by name: 16 identical, 0 within tolerance, 0 differ; 0 only in A, 0 only in B, 0 shape changed: equal$'
run q8 0 "$S" -v "$TMP/m-f32.gguf" "$TMP/m-q8_0.gguf"
expect_out q8 '^within tolerance: blk\.0\.attn_qkv\.weight \(F32 vs Q8_0, 12288 elements\): 0 mismatched \(0%\), max abs [0-9.e-]+, max rel [0-9.e-]+, B is exactly A quantized to Q8_0$'
expect_out q8 '^identical: blk\.0\.attn_norm\.weight \(F32 vs F32, 64 elements\)$'
expect_out q8 ': 11 identical, 5 within tolerance, 0 differ;.*: equal$'
run f16 0 "$S" -v "$TMP/m-f32.gguf" "$TMP/m-f16.gguf"
expect_out f16 '^within tolerance: token_embd\.weight \(F32 vs F16, [0-9]+ elements\): 0 mismatched \(0%\), .*, B is exactly A rounded to F16$'
# Q8_0 made from F32 is not the F16 file quantized: it differs, named.
run f16_q8 1 "$S" "$TMP/m-f16.gguf" "$TMP/m-q8_0.gguf"
expect_out f16_q8 '^differs: blk\.0\.ffn_down\.weight \(F16 vs Q8_0, 16384 elements\): [0-9]+ mismatched'
expect_out f16_q8 ': different$'

# A damaged byte: the last tensor's last float.
cp "$TMP/m-f32.gguf" "$TMP/bad.gguf"
size=$(stat -c %s "$TMP/bad.gguf")
printf '\177\177\177\177' | dd of="$TMP/bad.gguf" bs=1 seek=$((size - 4)) conv=notrunc status=none
run damaged 1 "$S" "$TMP/m-f32.gguf" "$TMP/bad.gguf"
expect_out damaged '^differs: [a-z_.0-9]+ \(F32 vs F32, [0-9]+ elements\): 1 mismatched'
expect_out damaged ': 15 identical, 0 within tolerance, 1 differ;'

run json 0 "$S" --json "$TMP/m-f32.gguf" "$TMP/m-q8_0.gguf"
expect_out json '^\{"schema": 1, "equal": true, "map": "names"'
expect_out json '"name": "blk\.0\.attn_qkv\.weight", "dtype_a": "F32", "dtype_b": "Q8_0", "elements": 12288, "values_compared": true, "verdict": "within tolerance", "identical": false, "exactly_encoded": true, "mismatched": 0'
expect_out json '"summary": \{"compared": 16, "identical": 11, "within_tolerance": 5, "differ": 0'

run first 2 "$S" --first "$TMP/m-f32.gguf" "$TMP/m-q8_0.gguf"
expect_err first 'comparing two GGUF files takes --rtol, --atol, --exact, --json, -v and -q only'

# A GGUF against a snapshot: the map of general.architecture.
run auto 0 "$S" "$TMP/m" "$TMP/m-q8_0.gguf"
expect_out auto '^16 tensors compared through the GPT-2 name map: 11 identical, 5 within tolerance, 0 differ'
run other_arch 2 "$S" "$TMP/m" "$TESTDATA/gguf/ok_v2.gguf"
expect_err other_arch "ok_v2\.gguf is a GGUF file of architecture 'test': stdiff compares it with another GGUF by name, or with a safetensors checkpoint through a name map \(--map gpt2, llama, qwen2 or qwen3\) only"

# A split set and the file it was split from.
G=$TESTDATA/gguf_split
run split 0 "$S" "$G/gpt2-00002-of-00003.gguf" "$G/whole.gguf"
expect_out split '^28 tensors compared by name: 28 identical,.*: equal$'
finish
