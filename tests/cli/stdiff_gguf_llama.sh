# stdiff: a Llama-family GGUF against the Hugging Face snapshot it came
# from, through the name map of its general.architecture (llama, qwen2,
# qwen3), llama's q/k row permutation undone. The GGUF files of
# testdata/gguf_llama were written by make_fixtures.py with gguf-py's
# names, LlamaModel.permute in numpy and gguf-py's quantizers, apart from
# libst: F32 must come out identical, Q8_0 exactly quantized, Q4_0, Q4_1,
# Q5_0 and Q5_1 within their blocks' bounds; a block with one byte
# flipped, q/k left unpermuted and an architecture with no map must not.
. "$(dirname "$0")/lib.bash"
D=$BIN/stdiff
[ -x "$D" ] || { echo "no $D"; exit 77; }
cd "$TESTDATA/gguf_llama" || exit 1
S=../llama

last_line() { # NAME PATTERN: the last line of NAME's stdout matches
	if tail -n1 "$TMP/$1.out" | grep -Eq -- "$2"; then ok; else
		fail "$1: last line $(tail -n1 "$TMP/$1.out")"; fi
}
count() { # NAME PATTERN WANT: WANT lines of NAME's stdout match
	local n
	n=$(grep -Ec -- "$2" "$TMP/$1.out")
	if [ "$n" = "$3" ]; then ok; else fail "$1: $n lines match '$2', expected $3"; fi
}

# F32, chosen from general.architecture: every tensor identical once the
# q/k rows are put back; rope_freqs is said to be the converter's own.
run f32 0 "$D" -v "$S/llama3" llama3-f32.gguf
last_line f32 '^21 tensors compared through the llama name map: 21 identical, 0 within tolerance, 0 differ; 0 only in A, 0 only in B, 0 shape changed: equal$'
count f32 '^identical: model\.layers\.[01]\.self_attn\.q_proj\.weight ~ blk\.[01]\.attn_q\.weight \(F32 vs F32, rows permuted \(4 heads\), 1024 elements\)$' 2
count f32 '^identical: model\.layers\.[01]\.self_attn\.k_proj\.weight ~ blk\.[01]\.attn_k\.weight \(F32 vs F32, rows permuted \(2 heads\), 512 elements\)$' 2
count f32 'rows permuted' 4
expect_out f32 '^identical: lm_head\.weight ~ output\.weight \(F32 vs F32, 8192 elements\)$'
expect_out f32 "^GGUF only: rope_freqs\.weight \(B\): llama3 rope scaling factors, computed from config\.json's rope_scaling, no Hugging Face tensor$"
count f32 '^only in' 0
# The GGUF as A, and --map forcing the same map.
run f32_as_a 0 "$D" --map llama llama3-f32.gguf "$S/llama3"
last_line f32_as_a ': 21 identical, .*: equal$'
run f32_json 0 "$D" --json "$S/llama3" llama3-f32.gguf
expect_out f32_json '^\{"schema": 1, "equal": true, "map": "llama",$'
count f32_json '"name": "model\.layers\.[01]\.self_attn\.q_proj\.weight", "gguf_name": "blk\.[01]\.attn_q\.weight", .*"permuted_heads": 4, .*"verdict": "identical"' 2
count f32_json '"permuted_heads": 2,' 2
count f32_json '"permuted_heads": 0,' 17
expect_out f32_json '\{"name": null, "gguf_name": "rope_freqs\.weight", "dtype_b": "F32", "elements": 4, "values_compared": false, "verdict": "gguf_only", "reason": "llama3 rope scaling factors'
expect_out f32_json '"summary": \{"compared": 21, "identical": 21, "within_tolerance": 0, "differ": 0, "only_in_a": 0, "only_in_b": 0, "shape_changed": 0\}\}$'

# Q8_0: the 14 matrices whose rows are whole blocks exactly quantized, the
# two ffn_down (48 columns) rounded to F16 as the converter falls back.
run q8_0 0 "$D" -v "$S/llama3" llama3-q8_0.gguf
last_line q8_0 ': 5 identical, 16 within tolerance, 0 differ;.*: equal$'
count q8_0 'B is exactly A quantized to Q8_0$' 14
count q8_0 'ffn_down\.weight \(F32 vs F16, .*B is exactly A rounded to F16$' 2
# Q4_0: judged by the bound from each block's stored scale; and since
# gguf-py's quantizer made these bytes and libst encodes as ggml does,
# each matrix is also "exactly A quantized".
run q4_0 0 "$D" -v "$S/llama3" llama3-q4_0.gguf
count q4_0 "^within tolerance: .*\(F32 vs Q4_0, .*, B is exactly A quantized to Q4_0, Q4_0's error bound" 14
last_line q4_0 ': 5 identical, 16 within tolerance, 0 differ;.*: equal$'
count q4_0 "^within tolerance: .*\(F32 vs Q4_0, .*: 0 mismatched \(0%\), .*, Q4_0's error bound \(at most [0-9.e-]+\)$" 14
run q4_0_json 0 "$D" --json llama3-q4_0.gguf "$S/llama3"
count q4_0_json '"dtype_a": "Q4_0", "dtype_b": "F32", .*"verdict": "within tolerance", .*"rtol": 0, "atol": [0-9]' 14
# --exact, and a snapshot the file was not made from (Mistral's weights).
run q4_0_exact 1 "$D" --exact "$S/llama3" llama3-q4_0.gguf
run q4_0_other 1 "$D" "$S/mistral" llama3-q4_0.gguf
expect_out q4_0_other '^differs: model\.embed_tokens\.weight ~ token_embd\.weight \(F32 vs Q4_0, '
# One byte of one block flipped: that tensor, and only it, differs.
run damaged 1 "$D" "$S/llama3" llama3-q4_0-damaged.gguf
count damaged '^differs: ' 1
expect_out damaged "^differs: model\.layers\.0\.mlp\.up_proj\.weight ~ blk\.0\.ffn_up\.weight \(F32 vs Q4_0, 1536 elements\): 2 mismatched "
last_line damaged ': 5 identical, 15 within tolerance, 1 differ;.*: different$'
run damaged_json 1 "$D" --json "$S/llama3" llama3-q4_0-damaged.gguf
expect_out damaged_json '"name": "model\.layers\.0\.mlp\.up_proj\.weight", .*"verdict": "differs", .*"mismatched": 2,'

# q/k written in Hugging Face's order into a llama GGUF: exactly the four
# q/k tensors differ (only the rows the permutation fixes agree).
run unpermuted 1 "$D" "$S/llama3" llama3-unpermuted.gguf
count unpermuted '^differs: ' 4
count unpermuted '^differs: model\.layers\.[01]\.self_attn\.[qk]_proj\.weight ~ blk\.[01]\.attn_[qk]\.weight \(F32 vs Q8_0, rows permuted' 4
last_line unpermuted ': 5 identical, 12 within tolerance, 4 differ;.*: different$'

# The NEOX architectures: nothing permuted. Qwen2 (q/k/v biases, tied: no
# output.weight, no lm_head.weight), Qwen3 (q_norm, k_norm).
run qwen2 0 "$D" -v "$S/qwen2" qwen2-q8_0.gguf
last_line qwen2 '^26 tensors compared through the Qwen2 name map: .* 0 differ; 0 only in A, 0 only in B, 0 shape changed: equal$'
count qwen2 'rows permuted' 0
count qwen2 '^identical: model\.layers\.[01]\.self_attn\.[qkv]_proj\.bias ~ blk\.[01]\.attn_[qkv]\.bias \(F32 vs F32, ' 6
run qwen3 0 "$D" -v "$S/qwen3" qwen3-q8_0.gguf
last_line qwen3 '^25 tensors compared through the Qwen3 name map: .* 0 differ; 0 only in A, 0 only in B, 0 shape changed: equal$'
count qwen3 '^identical: model\.layers\.[01]\.self_attn\.[qk]_norm\.weight ~ blk\.[01]\.attn_[qk]_norm\.weight \(F32 vs F32, 16 elements\)$' 4
count qwen3 'rows permuted' 0
# Types mixed as llama-quantize mixes them (Q4_1, Q5_0, Q5_1): each within
# its blocks' bound; one byte of one Q5_1 block flipped: that tensor differs.
run mixed 0 "$D" -v "$S/qwen3" qwen3-mixed.gguf
last_line mixed ': 9 identical, 16 within tolerance, 0 differ;.*: equal$'
count mixed "\(F32 vs Q4_1, 8192 elements\): 0 mismatched .*, Q4_1's error bound" 2
count mixed "^within tolerance: model\.layers\.0\..*\(F32 vs Q5_0, .*: 0 mismatched .*, Q5_0's error bound" 6
count mixed "^within tolerance: model\.layers\.1\..*\(F32 vs Q5_1, .*: 0 mismatched .*, Q5_1's error bound" 6
run mixed_damaged 1 "$D" "$S/qwen3" qwen3-mixed-damaged.gguf
count mixed_damaged '^differs: ' 1
expect_out mixed_damaged "^differs: model\.layers\.1\.self_attn\.v_proj\.weight ~ blk\.1\.attn_v\.weight \(F32 vs Q5_1, 1024 elements\): 2 mismatched "
# Mistral: llama.cpp's llama architecture, permuted like Llama.
run mistral 0 "$D" -v "$S/mistral" mistral-q8_0.gguf
last_line mistral '^21 tensors compared through the llama name map: .* 0 differ;.*: equal$'
count mistral 'rows permuted' 4

# A map forced against the file's architecture: qwen2's keeps the rows as
# they are (q/k differ) and knows no rope_freqs.
run forced_qwen2 1 "$D" --map qwen2 "$S/llama3" llama3-f32.gguf
count forced_qwen2 '^differs: ' 4
expect_out forced_qwen2 '^only in B: rope_freqs\.weight$'
# llama's needs llama.attention.head_count, which a qwen2 file lacks.
run forced_llama 2 "$D" --map llama "$S/qwen2" qwen2-q8_0.gguf
expect_err forced_llama "qwen2-q8_0\.gguf: 'llama\.attention\.head_count' is missing"
# No map for the architecture: refused, naming it.
run falcon 2 "$D" "$S/llama3" falcon.gguf
expect_err falcon "falcon\.gguf is a GGUF file of architecture 'falcon': stdiff compares it with another GGUF by name, or with a safetensors checkpoint through a name map \(--map gpt2, llama, qwen2 or qwen3\) only"
finish
