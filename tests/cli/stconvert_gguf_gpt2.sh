# stconvert x.gguf OUT/ for a GPT-2 GGUF (libst/gguf_hf_gpt2.c), beyond
# what gguf_export.sh checks on testdata/gguf/judge: testdata/gguf_gpt2's
# bands.gguf, whose Conv1D weights end on partial bands of the transpose
# and mid-row blocks (F32, Q8_0, Q4_0), comes back exactly as
# bands-hf.safetensors, which make_fixtures.py computed with gguf-py's
# dequantize and numpy's transpose alone; --to bf16 narrows every tensor;
# the tiny files that are not GPT-2's tensors are refused in one line
# naming the tensor, leaving nothing.
. "$(dirname "$0")/lib.bash"
export ST_NO_PROGRESS=1
C=$BIN/stconvert D=$BIN/stdiff
G=$TESTDATA/gguf_gpt2

run bands 0 "$C" "$G/bands.gguf" "$TMP/bands"
expect_err bands 'a snapshot: .*/model.safetensors, config.json, generation_config.json, vocab.json, merges.txt, tokenizer.json, tokenizer_config.json$'
expect_err bands 'nothing lost: 3 decoded to F32, 13 copied in their dtype'
run bands_exact 0 "$D" --exact -q "$TMP/bands" "$G/bands-hf.safetensors"
# config.json: the keys gpt2run reads, from the gpt2.* keys.
for kv in '"n_embd": 96' '"n_head": 4' '"n_layer": 1' '"n_ctx": 8' '"n_positions": 8' \
	'"n_inner": null' '"vocab_size": 16' '"eos_token_id": 15' '"bos_token_id": 15' \
	'"layer_norm_epsilon": 1e-05' '"torch_dtype": "float32"'; do
	grep -qF "  $kv," "$TMP/bands/config.json" || grep -qF "  $kv" "$TMP/bands/config.json" &&
		ok || fail "bands: config.json lacks $kv"
done
printf '#version: 0.2\na b\n' | cmp -s - "$TMP/bands/merges.txt" && ok ||
	fail "bands: merges.txt is not the one merge"
run bands_run 0 "$BIN/gpt2run" --model-dir "$TMP/bands" --ids 0,1,2 --new-tokens 3 --greedy \
	--print-ids
# --to bf16: every tensor BF16, the values those of the F32 reference rounded.
run bands_bf16 0 "$C" -q --to bf16 "$G/bands.gguf" "$TMP/bf16"
run ref_bf16 0 "$C" -q --to bf16 "$G/bands-hf.safetensors" "$TMP/ref-bf16.safetensors"
run bands_bf16_exact 0 "$D" --exact -q "$TMP/bf16" "$TMP/ref-bf16.safetensors"
grep -qF '"torch_dtype": "bfloat16"' "$TMP/bf16/config.json" && ok || fail "bf16: torch_dtype"

run bad_shape 2 "$C" "$G/bad-shape.gguf" "$TMP/bad"
expect_err bad_shape "bad-shape.gguf: tensor 'blk.0.attn_qkv.weight': dims \[4, 8\], expected \[4, 12\]$"
run bad_extra 2 "$C" "$G/bad-extra.gguf" "$TMP/bad"
expect_err bad_extra "bad-extra.gguf: tensor 'output.weight': not a GPT-2 tensor$"
run bad_missing 2 "$C" "$G/bad-missing.gguf" "$TMP/bad"
expect_err bad_missing "bad-missing.gguf: 15 tensors; GPT-2's with gpt2.block_count 1 are 16$"
run bad_layer 2 "$C" "$G/bad-layer.gguf" "$TMP/bad"
expect_err bad_layer "bad-layer.gguf: tensor 'blk.1.ffn_down.bias': layer 1, past gpt2.block_count 1$"
[ -e "$TMP/bad" ] && fail "bad: left OUT" || ok
if ls -A "$TMP" | grep -q '^\.bad\.tmp'; then fail "bad: left a temporary"; else ok; fi
finish
