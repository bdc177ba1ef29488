#!/usr/bin/env bash
# gpt2run on the fixtures of testdata/gpt2 (made by gen_fixtures.py from an
# independent PyTorch reference): logits within 1e-4 at every position,
# greedy ids, --dtype, --logits-out, sampling determinism, end-of-text and
# context-limit stops, text prompts through the real GPT-2 tokenizer, usage
# errors, and broken snapshots (exit 2, a message naming the problem).
# GPT2RUN_KERNEL, when set, picks the kernel table every run uses.
. "$(dirname "$0")/lib.bash"
G=$BIN/gpt2run
[ -x "$G" ] || { echo "gpt2run not built"; exit 77; }
# GPT2RUN_KERNEL (ctest runs this script once per kernel table) naming a
# table this CPU cannot run: nothing to test here.
if [ -n "${GPT2RUN_KERNEL:-}" ] &&
   "$G" --model-dir "$TESTDATA/gpt2/tiny-f32" --ids 1 -n 1 -q 2>&1 >/dev/null | grep -q "cannot run it"; then
  echo "GPT2RUN_KERNEL=$GPT2RUN_KERNEL: not on this CPU"; exit 77
fi
D=$TESTDATA/gpt2
TOK=$TESTDATA/gpt2-tokenizer
ids()    { grep "^$1 $2 ids " "$D/refs.txt" | cut -d' ' -f4; }
greedy() { grep "^$1 $2 greedy " "$D/refs.txt" | cut -d' ' -f4; }

# ---- --help, --version, usage errors -----------------------------------------
run help 0 "$G" --help && expect_out help '^Usage: gpt2run --model-dir DIR'
[ -s "$TMP/help.err" ] && fail "help: stderr not empty" || ok
run version 0 "$G" --version && expect_out version '^gpt2run \(libst\) [0-9]'
usage() { local name=$1; shift; run "$name" 2 "$G" "$@" && expect_err "$name" "Try 'gpt2run --help'"; }
usage u_nodir --ids 1
usage u_dtype --model-dir "$D/tiny-f32" --dtype f64
usage u_greedy --model-dir "$D/tiny-f32" --greedy --temperature 0.7
usage u_two --model-dir "$D/tiny-f32" --ids 1 --prompt hi
usage u_arg --model-dir "$D/tiny-f32" extra
usage u_ids --model-dir "$D/tiny-f32" --ids 1,,2
usage u_topp --model-dir "$D/tiny-f32" --top-p 0
usage u_threads --model-dir "$D/tiny-f32" -j 0
usage u_opt --model-dir "$D/tiny-f32" --no-such-option
usage u_tokenize --model-dir "$D/tiny-f32" --tokenize --ids 1

# ---- logits against the reference: every dtype, every prompt -----------------
for dt in f32 f16 bf16; do
  for p in p1 p7 p70; do
    # Without a prompt, --check takes the ids stored in REF.
    run "chk_${dt}_$p" 0 "$G" --model-dir "$D/tiny-$dt" --check "$D/ref-$dt-$p.safetensors" -q &&
      expect_out "chk_${dt}_$p" '^max abs diff [0-9.e+-]+ at position [0-9]+, token [0-9]+ .*: OK \(atol 0.0001'
  done
done
# Sharded, "transformer." prefix, legacy buffers, lm_head alias: tiny-f32's logits.
run chk_hf 0 "$G" --model-dir "$D/tiny-hf" --check "$D/ref-f32-p70.safetensors" --ids "$(ids f32 p70)" -q
# BF16 matrices with F32 vectors: the vectors stay F32 unless --dtype says.
run chk_mixed 0 "$G" --model-dir "$D/tiny-mixed" --check "$D/ref-mixed-p7.safetensors" -q
run chk_mixed_bf16 0 "$G" --model-dir "$D/tiny-mixed" --dtype bf16 --check "$D/ref-bf16-p7.safetensors" -q
run chk_hand 0 "$G" --model-dir "$D/hand" --check "$D/ref-hand.safetensors" --atol 1e-6 -q
# --dtype: tiny-f32 held as BF16 / F16 computes tiny-bf16's / tiny-f16's logits.
run chk_as_bf16 0 "$G" --model-dir "$D/tiny-f32" --dtype bf16 --check "$D/ref-bf16-p70.safetensors" -q
run chk_as_f16 0 "$G" --model-dir "$D/tiny-f32" --dtype f16 --check "$D/ref-f16-p70.safetensors" -q
# ... and not F32's: a real mismatch is exit 1 with the place it is.
run chk_mismatch 1 "$G" --model-dir "$D/tiny-f32" --check "$D/ref-bf16-p70.safetensors" -q &&
  expect_out chk_mismatch 'MISMATCH \(atol 0.0001, 70 positions x 300 logits\)'
run chk_atol 0 "$G" --model-dir "$D/tiny-f32" --check "$D/ref-bf16-p70.safetensors" --atol 1 -q
# Another prompt than REF's: a shape mismatch is exit 1, and a warning.
run chk_shape 1 "$G" --model-dir "$D/tiny-f32" --check "$D/ref-f32-p7.safetensors" --ids 1,2 -q &&
  expect_err chk_shape "tensor 'logits': shape \[7, 300\] does not match this run \(\[2, 300\]"
expect_err chk_shape "its tensor 'ids' is not this prompt"
run chk_noref 2 "$G" --model-dir "$D/tiny-f32" --check "$TMP/none.safetensors" --ids 1 -q
run chk_nologits 2 "$G" --model-dir "$D/tiny-f32" --check "$D/tiny-f32/model.safetensors" --ids 1 -q &&
  expect_err chk_nologits "no tensor 'logits'"

# ---- --logits-out -----------------------------------------------------------------
run lo 0 "$G" --model-dir "$D/tiny-f32" --ids "$(ids f32 p7)" --logits-out "$TMP/l.safetensors" -q
[ -s "$TMP/lo.out" ] && fail "lo: --logits-out printed something" || ok
# The file is [7, 300] F32 and holds the reference's logits...
run lo_ref 0 "$G" --model-dir "$D/hand" --ids 0,1 --logits-out "$TMP/h.safetensors" -q
if [ "$(head -c 8 "$TMP/l.safetensors" | od -An -tu8 | tr -d ' ')" -gt 0 ] &&
   grep -aq '"logits":{"dtype":"F32","shape":\[7,300\]' "$TMP/l.safetensors"; then ok; else fail "lo: header"; fi
run lo_vs_ref 0 "$G" --model-dir "$D/tiny-hf" --ids "$(ids f32 p7)" --check "$TMP/l.safetensors" --atol 0 -q
# ... the same bits from the sharded layout (identical weights, atol 0).

# ---- greedy generation: the reference's 32 ids, through the KV cache --------------
for dt in f32 f16 bf16; do
  for p in p1 p7 p70; do
    run "gr_${dt}_$p" 0 "$G" --model-dir "$D/tiny-$dt" --ids "$(ids $dt $p)" --greedy -n 32 --ignore-eos --print-ids -q &&
      { [ "$(cat "$TMP/gr_${dt}_$p.out")" = "$(greedy $dt $p)" ] && ok || fail "gr_${dt}_$p: $(cat "$TMP/gr_${dt}_$p.out") != $(greedy $dt $p)"; }
  done
done
run gr_hf 0 "$G" --model-dir "$D/tiny-hf" --ids "$(ids f32 p7)" --greedy -n 32 --ignore-eos --print-ids -q
[ "$(cat "$TMP/gr_hf.out")" = "$(greedy f32 p7)" ] && ok || fail "gr_hf"

# ---- threads and seeds ----------------------------------------------------------------
samp() { "$G" --model-dir "$D/tiny-bf16" --ids "$(ids bf16 p7)" -n 40 --ignore-eos --print-ids -q "$@"; }
a=$(samp -j 1 --seed 7 --temperature 0.9 --top-k 50 --top-p 0.95)
b=$(samp -j 3 --seed 7 --temperature 0.9 --top-k 50 --top-p 0.95)
c=$(samp -j 2 --seed 8 --temperature 0.9 --top-k 50 --top-p 0.95)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || fail "same seed, other thread count: $a / $b"
[ "$a" != "$c" ] && ok || fail "seeds 7 and 8 gave the same tokens"
[ "$(samp -j 1 --greedy)" = "$(samp -j 3 --temperature 0)" ] && ok || fail "temperature 0 is not greedy"
[ "$(samp --greedy)" = "$(samp --top-k 1 --seed 99)" ] && ok || fail "top-k 1 is not greedy"

# ---- stops: end-of-text and the context limit ----------------------------------------
# Make the 5th-first distinct greedy id of f32 p7 the end-of-text token.
IFS=, read -ra G7 <<<"$(greedy f32 p7)"
k=0; declare -A seen=(); distinct=0
for i in "${!G7[@]}"; do
  if [ -z "${seen[${G7[$i]}]:-}" ]; then seen[${G7[$i]}]=1; distinct=$((distinct + 1)); fi
  if [ $distinct = 3 ]; then k=$i; break; fi
done
eos=${G7[$k]}
want=$(IFS=,; echo "${G7[*]:0:$((k + 1))}")
cp -r "$D/tiny-f32" "$TMP/eos"
printf '{"eos_token_id": %s}\n' "$eos" >"$TMP/eos/generation_config.json"
run eos 0 "$G" --model-dir "$TMP/eos" --ids "$(ids f32 p7)" --greedy -n 32 --print-ids &&
  { [ "$(cat "$TMP/eos.out")" = "$want" ] && ok || fail "eos: $(cat "$TMP/eos.out") != $want"; }
expect_err eos "generated: $((k + 1)) tokens .*stopped at end-of-text"
run eos_ignored 0 "$G" --model-dir "$TMP/eos" --ids "$(ids f32 p7)" --greedy -n 32 --print-ids --ignore-eos -q
[ "$(cat "$TMP/eos_ignored.out")" = "$(greedy f32 p7)" ] && ok || fail "eos_ignored"
# A list of ids works too (generation_config.json replaces config.json's 299).
printf '{"eos_token_id": [298, %s]}\n' "$eos" >"$TMP/eos/generation_config.json"
run eos_list 0 "$G" --model-dir "$TMP/eos" --ids "$(ids f32 p7)" --greedy -n 32 --print-ids -q
[ "$(cat "$TMP/eos_list.out")" = "$want" ] && ok || fail "eos_list"
# 70 prompt tokens + 58 fed back = n_positions 128: 59 new tokens, then a clear stop.
run ctx 0 "$G" --model-dir "$D/tiny-f32" --ids "$(ids f32 p70)" --greedy -n 100 --ignore-eos --print-ids &&
  expect_err ctx 'stopped at the context limit: 128 tokens \(n_positions\) after 59 new tokens'
[ "$(tr , '\n' <"$TMP/ctx.out" | wc -l)" = 59 ] && ok || fail "ctx: $(tr , '\n' <"$TMP/ctx.out" | wc -l) ids"
long=$(seq 1 129 | paste -sd,)
run ctx_prompt 2 "$G" --model-dir "$D/tiny-f32" --ids "$long" --print-ids -q &&
  expect_err ctx_prompt "the prompt has 129 tokens, more than the model's context \(n_positions 128\)"
run vocab 2 "$G" --model-dir "$D/tiny-f32" --ids 1,300 --print-ids -q &&
  expect_err vocab "prompt token 1: id 300 is outside the model's vocabulary \(0..299\)"
# No prompt: generation starts from end-of-text.
run noprompt 0 "$G" --model-dir "$D/tiny-f32" -n 3 --greedy --print-ids --ignore-eos -q &&
  expect_out noprompt '^[0-9]+,[0-9]+,[0-9]+$'

# ---- timings, -q -----------------------------------------------------------------------
run timing 0 "$G" --model-dir "$D/tiny-f32" --ids 1,2,3 -n 4 --greedy --print-ids -j 2
expect_err timing '^gpt2run: loaded .*tiny-f32: n_layer 2, n_head 4, n_embd 32, vocab 300, 39.2K parameters held as F32, in [0-9]+ ms \(2 threads\)$'
expect_err timing '^gpt2run: prompt: 3 tokens in [0-9.]+ ms \([0-9.]+ tokens/s\)$'
expect_err timing '^gpt2run: generated: 4 tokens in [0-9.]+ ms \([0-9.]+ tokens/s\)$'
run quiet 0 "$G" --model-dir "$D/tiny-f32" --ids 1,2,3 -n 4 --print-ids -q
[ -s "$TMP/quiet.err" ] && fail "quiet: stderr not empty" || ok

# ---- text: the real GPT-2 tokenizer -----------------------------------------------------
run tok 0 "$G" --tokenizer "$TOK" --tokenize --prompt "Hello, world" && expect_out tok '^15496,11,995$'
# A directory holding only the tokenizer files is enough for --tokenize.
run tok_dir 0 "$G" --model-dir "$TOK" --tokenize --prompt "<|endoftext|>Hi" && expect_out tok_dir '^50256,17250$'
printf 'caf\xc3\xa9\n' >"$TMP/p.txt"
run tok_file 0 "$G" --model-dir "$TOK" --tokenize --prompt-file "$TMP/p.txt" && expect_out tok_file '^66,1878,2634,198$'
run tok_stdin 0 "$G" --model-dir "$TOK" --tokenize --prompt-file - <"$TMP/p.txt" && expect_out tok_stdin '^66,1878,2634,198$'
printf 'a\xffb' >"$TMP/bad.txt"
run tok_bad 0 "$G" --model-dir "$TOK" --tokenize --prompt-file "$TMP/bad.txt" &&
  expect_err tok_bad 'invalid UTF-8 sequence, replaced by U\+FFFD'
mkdir -p "$TMP/gpt2run"
# "he in" is ids 258,287 (< vocab 300 of the tiny model): text streams out.
golden gpt2run/text 0 "$G" --model-dir "$D/tiny-f32" --tokenizer "$TOK" --prompt "he in" --greedy -n 24 --ignore-eos -q
run text_ids 0 "$G" --model-dir "$D/tiny-f32" --tokenizer "$TOK" --prompt "he in" --greedy -n 24 --ignore-eos --print-ids -q
run text_ids2 0 "$G" --model-dir "$D/tiny-f32" --ids 258,287 --greedy -n 24 --ignore-eos --print-ids -q
cmp -s "$TMP/text_ids.out" "$TMP/text_ids2.out" && ok || fail "text prompt and --ids differ"
run text_oov 2 "$G" --model-dir "$D/tiny-f32" --tokenizer "$TOK" --prompt "Hello" -q &&
  expect_err text_oov "id 15496 is outside the model's vocabulary \(0..299\); is the tokenizer the model's\?"
# No tokenizer files in the snapshot: the GPT-2 tokenizer installed with
# libst ($ST_TOKENIZER_DIR first), with a warning; none there: an error.
ST_TOKENIZER_DIR=$TOK run text_fallback 0 "$G" --model-dir "$D/tiny-f32" --prompt "he in" --greedy -n 24 --ignore-eos -q &&
  expect_err text_fallback "tiny-f32: no tokenizer files; using the GPT-2 tokenizer in $TOK"
cmp -s "$TMP/text_fallback.out" "$GOLDEN/gpt2run/text.out" && ok || fail "text_fallback: other text"
mkdir -p "$TMP/notok"
ST_TOKENIZER_DIR=$TMP/notok run text_notok 2 "$G" --model-dir "$D/tiny-f32" --ids 1 -q &&
  expect_err text_notok 'notok'
run text_badtok 2 "$G" --model-dir "$D/tiny-f32" --tokenizer "$TMP/notok" --ids 1 -q &&
  expect_err text_badtok 'notok'
# --tokenizer PATH: a .gguf file's vocabulary, a tokenizer.json (llama.cpp's
# recorded ids, testdata/tokenizers; the BOS is what the files ask for).
VOC=$TESTDATA/tokenizers
run tok_gguf 0 "$G" --tokenizer "$VOC/ggml-vocab-llama-bpe.gguf" --tokenize --prompt "Hello world" &&
  expect_out tok_gguf '^128000,9906,1917$'
run tok_spm 0 "$G" --tokenizer "$VOC/ggml-vocab-llama-spm.gguf" --tokenize --prompt "Hello world" &&
  expect_out tok_spm '^1,15043,3186$'
run tok_json 0 "$G" --tokenizer "$VOC/qwen2.tokenizer.json" --tokenize --prompt "Hello world" &&
  expect_out tok_json '^9707,1879$'
head -c 100 "$VOC/ggml-vocab-gpt-2.gguf" >"$TMP/cut.gguf"
run tok_cut 2 "$G" --tokenizer "$TMP/cut.gguf" --tokenize --prompt "Hi" && expect_err tok_cut 'cut.gguf'

# ---- with stconvert (when built): a converted snapshot still computes the model ---------
if [ -x "$BIN/stconvert" ]; then
  "$BIN/stconvert" --shard-size 50kB "$D/tiny-f32" "$TMP/sharded" >/dev/null 2>&1 && ok || fail "stconvert --shard-size"
  run conv_sharded 0 "$G" --model-dir "$TMP/sharded" --check "$TMP/l.safetensors" --ids "$(ids f32 p7)" --atol 0 -q
  # stconvert's BF16 rounding gives exactly the weights PyTorch's does.
  "$BIN/stconvert" --to bf16 "$D/tiny-f32" "$TMP/bf16" >/dev/null 2>&1 && ok || fail "stconvert --to bf16"
  run conv_bf16 0 "$G" --model-dir "$TMP/bf16" --check "$D/ref-bf16-p70.safetensors" -q
fi

# ---- broken snapshots: exit 2, one line naming the problem ------------------------------
while IFS='|' read -r dir pattern; do
  run "broken_$dir" 2 "$G" --model-dir "$D/broken/$dir" --ids 1 --print-ids -q &&
    expect_err "broken_$dir" "^gpt2run: .*$pattern"
  [ "$(wc -l <"$TMP/broken_$dir.err")" = 1 ] && ok || fail "broken_$dir: not one line"
done <<'LIST'
missing-tensor|broken/missing-tensor/?: missing tensor 'h.0.mlp.c_fc.bias'$
extra-tensor|model.safetensors: tensor 'h.0.attn.rotary_emb.inv_freq': unexpected tensor
extra-layer|model.safetensors: tensor 'h.1.ln_1.weight': unexpected tensor
wrong-shape|model.safetensors: tensor 'h.0.mlp.c_fc.weight': wrong shape \(\[8, 31\], expected \[8, 32\]\)
transposed|tensor 'h.0.attn.c_attn.weight': wrong shape \(\[24, 8\], expected \[8, 24\]\): transposed\?
untied-head|tensor 'lm_head.weight': differs from 'wte.weight' at \[3, 5\]
int-dtype|tensor 'ln_f.bias': dtype I64 is not a float type
duplicate|tensor 'transformer.wte.weight': a second copy of 'wte.weight'
no-weights|broken/no-weights
config-model-type|config.json: model_type "gptj" is not supported
config-activation|config.json: activation_function "relu" is not implemented
config-n-inner|config.json: n_inner 16 is not implemented
config-inverse-layer|config.json: scale_attn_by_inverse_layer_idx true is not implemented
config-upcast|config.json: reorder_and_upcast_attn true is not implemented
config-cross|config.json: add_cross_attention true is not implemented
config-untied|config.json: tie_word_embeddings false is not implemented
config-missing|config.json: "n_embd" is missing
config-heads|config.json: n_head 3 does not divide n_embd 8
config-json|config.json: not valid JSON
config-none|config.json: No such file or directory
LIST
run broken_ok 0 "$G" --model-dir "$D/broken/ok" --ids 1 --print-ids -n 2 -q
run nodir 2 "$G" --model-dir "$TMP/nowhere" --ids 1 -q && expect_err nodir 'nowhere: No such file or directory'
finish
