# stinfo --memory [--context N]: the weights' bytes in each dtype and the
# KV cache. The expected figures are worked out here from what the fixture
# files hold: the weights from each tensor's dtype and element count (as
# --json lists them, summed by awk), the KV cache from config.json's own
# numbers (layers x 2 x kv_heads x head_dim x tokens x bytes). libst's
# arithmetic against published configs is tests/check_memory.c's.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TESTDATA" || exit 1
mkdir -p "$TMP/stinfo"

# cfg DIR KEY: an integer of DIR/config.json.
cfg() { sed -n "s/^ *\"$2\": *\([0-9]*\),*$/\1/p" "$1/config.json"; }
# weights PATH BITS: every float tensor's elements at BITS bits (rounded up
# per tensor), every other tensor's bytes as stored.
weights() {
  "$S" --json "$1" | awk -v bits="$2" '
    /^    {"name"/ {
      match($0, /"dtype": "[^"]*"/); d = substr($0, RSTART + 10, RLENGTH - 11)
      match($0, /"parameters": [0-9]*/); n = substr($0, RSTART + 14, RLENGTH - 14)
      match($0, /"bytes": [0-9]*/); b = substr($0, RSTART + 9, RLENGTH - 9)
      if (d ~ /^(F64|F32|F16|BF16|F8_.*|F6_.*|F4)$/) s += int((n * bits + 7) / 8); else s += b
    } END { printf "%d\n", s }'
}

# --- GPT-2: kv_heads = n_head, head_dim = n_embd / n_head -------------------
d=archcheck/gpt2-good
L=$(cfg $d n_layer) H=$(cfg $d n_head) E=$(cfg $d n_embd)
run gpt2 0 "$S" --memory --json --context 4096 $d
for pair in F32:32 BF16:16 F16:16 F8_E4M3:8; do
  dt=${pair%:*} bits=${pair#*:}
  w=$(weights $d "$bits") tok=$((L * 2 * H * (E / H) * bits / 8))
  grep -q "^  \"weights\": {.*\"$dt\": $w[,}]" "$TMP/gpt2.out" && ok || fail "gpt2 $dt weights: not $w"
  grep -q "\"per_token\": {[^}]*\"$dt\": $tok[,}]" "$TMP/gpt2.out" && ok || fail "gpt2 $dt: not $tok a token"
  grep -q "\"bytes\": {[^}]*\"$dt\": $((tok * 4096))[,}]" "$TMP/gpt2.out" && ok || fail "gpt2 $dt: not $((tok * 4096)) for 4096"
  grep -q "\"total\": {[^}]*\"$dt\": $((w + tok * 4096))[,}]" "$TMP/gpt2.out" && ok || fail "gpt2 $dt: total"
done
expect_out gpt2 "\"layers\": $L, \"kv_heads\": $H, \"head_dim\": $((E / H)),"

# --- Llama with grouped-query attention: kv_heads from num_key_value_heads ---
d=archcheck/llama-gqa
L=$(cfg $d num_hidden_layers) KV=$(cfg $d num_key_value_heads)
HD=$(($(cfg $d hidden_size) / $(cfg $d num_attention_heads)))
run llama 0 "$S" --memory --json --context 7 $d
tok=$((L * 2 * KV * HD * 2))
grep -q "\"per_token\": {[^}]*\"BF16\": $tok[,}]" "$TMP/llama.out" && ok || fail "llama: not $tok a token in BF16"
grep -q "\"context\": 7, \"bytes\": {[^}]*\"BF16\": $((tok * 7))[,}]" "$TMP/llama.out" && ok || fail "llama: not $((tok * 7)) for 7"

# --- FP8 weights and their scales as stored; no known config: no KV cache ---
d=quant/snap-fp8
run fp8 0 "$S" --memory --json $d
# 35 + 24 F8 bytes, 36 + 8 of scales, as stored; the BF16 norm of 7 at each.
grep -q '^  "weights": {"F32": 131, "BF16": 117, "F16": 117, "F8_E4M3": 110}' "$TMP/fp8.out" \
  && ok || fail "fp8: weights not counted with the quantized layouts as stored"
expect_out fp8 '^  "kv_cache": null$'
golden stinfo/memory-fp8 2 "$S" --memory --context 8 $d

# --- a GGUF file: its metadata's sizes, its block types as stored -----------------
# testdata/memory/llama.gguf (gen_gguf.py): Llama-3-8B's 32 layers, 8 KV
# heads of 4096 / 32; 32 F32 and 8 F16 values, a Q8_0 of 68 bytes and an
# I32 of 8 as stored.
run gguf 0 "$S" --memory --json --context 8192 memory/llama.gguf
grep -q '^  "weights": {"F32": 236, "BF16": 156, "F16": 156, "F8_E4M3": 116}' "$TMP/gguf.out" \
  && ok || fail "gguf: weights"
tok=$((32 * 2 * 8 * 128 * 2))
grep -q "\"per_token\": {[^}]*\"BF16\": $tok[,}]" "$TMP/gguf.out" && ok || fail "gguf: not $tok a token"
grep -q "\"bytes\": {[^}]*\"BF16\": $((tok * 8192))[,}]" "$TMP/gguf.out" && ok || fail "gguf: not 1 GiB for 8192"
golden stinfo/memory-gguf 0 "$S" --memory --context 8192 memory/llama.gguf
# A config that cannot be used: said on the config line; an error with --context.
golden stinfo/memory-gguf-bad 0 "$S" --memory memory/kvarray.gguf memory/phi.gguf stinfo/snap
golden stinfo/memory-gguf-bad-context 2 "$S" --memory --context 4 memory/kvarray.gguf
run gguf-bad-json 0 "$S" --memory --json memory/kvarray.gguf
expect_out gguf-bad-json "^  \"kv_cache\": \{\"error\": \"memory/kvarray.gguf: 'llama.attention.head_count_kv' is of type array"

# --- wording -----------------------------------------------------------------
golden stinfo/memory-gpt2 0 "$S" --memory --context 1024 archcheck/gpt2-good
golden stinfo/memory-llama-markdown 0 "$S" --memory --markdown archcheck/llama-gqa
golden stinfo/memory-two 0 "$S" --memory --json archcheck/qwen2-tied stinfo/tiny.safetensors
golden stinfo/usage-context-alone 2 "$S" --context 8 archcheck/gpt2-good
golden stinfo/usage-context-zero 2 "$S" --memory --context 0 archcheck/gpt2-good
golden stinfo/usage-memory-stats 2 "$S" --memory --stats archcheck/gpt2-good

finish
