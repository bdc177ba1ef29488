# stconvert x.gguf OUT/: a Llama-family GGUF back to a Hugging Face
# snapshot. The GGUFs are testdata/gguf_llama's (gguf-py wrote them from
# testdata/llama's snapshots: make_fixtures.py there), so the snapshot they
# came from is the reference: F32 comes back bit for bit (llama's q/k rows
# un-permuted), Q8_0 within its step, and strun runs the result against the
# logits PyTorch computed (testdata/llama/*/ref.safetensors).
. "$(dirname "$0")/lib.bash"
export ST_NO_PROGRESS=1
C=$BIN/stconvert
G=$TESTDATA/gguf_llama
L=$TESTDATA/llama
IDS=1,5,17,42,99,200,255

# check NAME DIR REF [ATOL]: strun's logits of IDS against REF's.
check() {
	run "$1" 0 "$BIN/strun" --model-dir "$2" --ids $IDS --check "$3" --atol "${4:-1e-4}"
	expect_out "$1" "OK \(atol"
}

# key FILE KEY: the value of a top-level config.json key, as one line.
key() { grep -E "^  \"$2\": " "$1" | sed -E 's/^  "[^"]*": //; s/,$//'; }

# same_config NAME SNAPSHOT: $TMP/NAME/config.json has SNAPSHOT's values of
# the fields strun reads.
same_config() {
	for k in model_type hidden_size intermediate_size num_hidden_layers num_attention_heads \
		num_key_value_heads head_dim max_position_embeddings vocab_size tie_word_embeddings \
		torch_dtype hidden_act rms_norm_eps rope_theta; do
		a=$(key "$TMP/$1/config.json" $k) b=$(key "$2/config.json" $k)
		if [ "$a" = "$b" ]; then ok; else fail "$1: config.json $k: '$a', expected '$b'"; fi
	done
}

# llama3 F32: every tensor bit-identical to the snapshot it came from
# (rope_freqs.weight is left out, and said so; rope_scaling comes back from
# its divisors, which gguf_llama.py computed in Python: strun's logits on the
# result are the PyTorch reference's of the original).
run l3 0 "$C" "$G/llama3-f32.gguf" "$TMP/l3"
expect_err l3 "^stconvert: left out: .*tensor 'rope_freqs.weight': llama3 rope scaling factors"
expect_err l3 "^stconvert: out: 21 tensors, 127616 bytes .*a snapshot: .*/l3/model.safetensors, config.json, generation_config.json$"
expect_err l3 "^stconvert: nothing lost: 0 decoded to F32, 21 copied in their dtype$"
expect_not_err l3 "no rope_scaling"
expect_err l3 "^stconvert: no tokenizer files: the GGUF has no tokenizer.ggml.model$"
run l3_exact 0 "$BIN/stdiff" --exact "$L/llama3" "$TMP/l3"
expect_out l3_exact "21 identical, 0 within tolerance, 0 differ; 0 only in A, 0 only in B"
# The config.json fields strun reads equal the original's; what cannot come
# back (bos/eos: the fixture has no tokenizer keys) is absent.
same_config l3 "$L/llama3"
[ "$(key "$TMP/l3/config.json" rms_norm_eps)" = 1e-05 ] && ok || fail "l3: rms_norm_eps"
[ "$(key "$TMP/l3/config.json" rope_theta)" = 500000.0 ] && ok || fail "l3: rope_theta"
tr -d ' \n' <"$TMP/l3/config.json" | grep -qF '"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":16}' &&
	ok || fail "l3: rope_scaling: $(grep -A6 rope_scaling "$TMP/l3/config.json")"
run l3_logits 0 "$BIN/strun" --model-dir "$TMP/l3" --check "$L/llama3/ref.safetensors" -q
[ "$(cat "$TMP/l3/generation_config.json")" = "{}" ] && ok || fail "l3: generation_config.json"
ls -A "$TMP/l3" | tr '\n' ' ' | grep -qx 'config.json generation_config.json model.safetensors ' &&
	ok || fail "l3: files: $(ls -A "$TMP/l3")"

# llama2 (llama, permuted, linear rope scaling, q/k/v/o and MLP biases):
# F32 bit-identical, strun's logits within 1e-4; --to bf16 gives back the
# BF16 snapshot the F32 values came from, byte for byte.
run l2 0 "$C" -q "$G/llama2-f32.gguf" "$TMP/l2"
run l2_exact 0 "$BIN/stdiff" --rtol 0 --atol 0 "$L/llama2_bf16" "$TMP/l2"
expect_out l2_exact "0 differ; 0 only in A, 0 only in B, 0 shape changed"
grep -q '"rope_type": "linear"' "$TMP/l2/config.json" && ok || fail "l2: no linear rope_scaling"
[ "$(key "$TMP/l2/config.json" attention_bias)" = true ] && ok || fail "l2: attention_bias"
[ "$(key "$TMP/l2/config.json" mlp_bias)" = true ] && ok || fail "l2: mlp_bias"
check l2_run "$TMP/l2" "$L/llama2_bf16/ref.safetensors"
run l2_bf16 0 "$C" --to bf16 "$G/llama2-f32.gguf" "$TMP/l2b"
expect_err l2_bf16 "^stconvert: to BF16: 0 decoded, 35 converted, 0 copied$"
run l2_bf16_exact 0 "$BIN/stdiff" --exact "$L/llama2_bf16" "$TMP/l2b"
expect_out l2_bf16_exact "35 identical"
[ "$(key "$TMP/l2b/config.json" torch_dtype)" = '"bfloat16"' ] && ok || fail "l2b: torch_dtype"
check l2_bf16_run "$TMP/l2b" "$L/llama2_bf16/ref.safetensors"

# Q8_0 decoded to F32 (F32 norms and the F16 fallback kept): each weight
# within a Q8_0 step of the value it was quantized from (d = amax/127 of
# its block: 0.003 for the projections, 0.012 for the embedding), which a
# wrong q/k row order would exceed; strun within what Q8_0 moves the
# logits (measured: qwen3 0.052).
run q3 0 "$C" "$G/qwen3-q8_0.gguf" "$TMP/q3"
expect_err q3 "^stconvert: nothing lost: 14 decoded to F32, 11 copied in their dtype$"
run q3_proj 0 "$BIN/stdiff" -T '*proj.weight' --rtol 0 --atol 0.003 "$L/qwen3" "$TMP/q3"
run q3_embd 0 "$BIN/stdiff" -T '*embed_tokens*' -T lm_head.weight --rtol 0 --atol 0.012 "$L/qwen3" "$TMP/q3"
run q3_norms 0 "$BIN/stdiff" --exact -T '*norm*' "$L/qwen3" "$TMP/q3"
[ "$(key "$TMP/q3/config.json" head_dim)" = 16 ] && ok || fail "q3: head_dim"
[ "$(key "$TMP/q3/config.json" rms_norm_eps)" = 1e-06 ] && ok || fail "q3: rms_norm_eps"
check q3_run "$TMP/q3" "$L/qwen3/ref.safetensors" 0.06
same_config q3 "$L/qwen3"
run mistral 0 "$C" -q "$G/mistral-q8_0.gguf" "$TMP/mi"
run mistral_qk 0 "$BIN/stdiff" -T '*[qk]_proj.weight' --rtol 0 --atol 0.003 "$L/mistral" "$TMP/mi"
# ... which rows left in GGUF order do exceed (the control: a GGUF written
# without the permutation, un-permuted here all the same).
run unperm 0 "$C" -q "$G/llama3-unpermuted.gguf" "$TMP/up"
run unperm_qk 1 "$BIN/stdiff" -T '*[qk]_proj.weight' --rtol 0 --atol 0.003 "$L/llama3" "$TMP/up"
run perm_qk 0 "$BIN/stconvert" -q "$G/llama3-q8_0.gguf" "$TMP/p8" &&
	run perm_qk_diff 0 "$BIN/stdiff" -T '*[qk]_proj.weight' --rtol 0 --atol 0.003 "$L/llama3" "$TMP/p8"
# A tied model (no output.weight) has no lm_head.weight.
run q2 0 "$C" -q "$G/qwen2-q8_0.gguf" "$TMP/q2"
run q2_info 0 "$BIN/stinfo" "$TMP/q2/model.safetensors"
if grep -q lm_head "$TMP/q2_info.out"; then fail "q2: lm_head.weight written"; else ok; fi
[ "$(key "$TMP/q2/config.json" tie_word_embeddings)" = true ] && ok || fail "q2: tie_word_embeddings"
same_config q2 "$L/qwen2"

# OUT: an existing empty directory is fine, a non-empty one needs --force
# (and is then replaced), a file name not ending in .safetensors is a folder.
mkdir "$TMP/empty"
run empty 0 "$C" -q "$G/qwen2-q8_0.gguf" "$TMP/empty"
[ -s "$TMP/empty/model.safetensors" ] && ok || fail "empty: no model.safetensors"
run exists 2 "$C" -q "$G/qwen3-q8_0.gguf" "$TMP/empty"
expect_err exists "already exists \(use --force to replace it\)"
cmp -s "$TMP/empty/config.json" "$TMP/q2/config.json" && ok || fail "exists: OUT was touched"
run force 0 "$C" -q --force "$G/qwen3-q8_0.gguf" "$TMP/empty"
cmp -s "$TMP/empty/config.json" "$TMP/q3/config.json" && ok || fail "force: OUT not replaced"

# Refused: an architecture with no HF map (naming it, with the way to keep
# the GGUF names), a truncated file; none leaves OUT. (GPT-2: gguf_export.sh.)
run falcon 2 "$C" "$G/falcon.gguf" "$TMP/falcon"
expect_err falcon "architecture 'falcon' has no Hugging Face map \(gpt2, llama, qwen2, qwen3\); stconvert .*falcon.gguf OUT.safetensors writes its tensors under their GGUF names$"
[ -e "$TMP/falcon" ] && fail "falcon: left OUT" || ok
head -c 100000 "$G/llama3-f32.gguf" > "$TMP/cut.gguf"
run cut 2 "$C" "$TMP/cut.gguf" "$TMP/cut"
expect_err cut "cut.gguf"
[ -e "$TMP/cut" ] && fail "cut: left OUT" || ok
if ls -A "$TMP" | grep -q '^\.cut\.tmp'; then fail "cut: left a temporary"; else ok; fi
finish
