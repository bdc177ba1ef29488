#!/usr/bin/env bash
# stconvert SNAPSHOT OUT.gguf: the Llama fixtures as GGUF files for
# llama.cpp. The reference is llama.cpp itself, run by
# testdata/llama/gguf_export/make_exports.py (node-llama-cpp's prebuilt
# llama.cpp, gguf-py's reader): the sha256 of every export it ran
# (SHA256SUMS), llama.cpp's greedy ids on each (<m>_<type>.txt), and how
# many of them equal strun's on the source (AGREEMENT). Here: stconvert
# still writes those very files, and strun's ids on each source equal
# llama.cpp's on its F32, F16 and BF16 exports as recorded (quantized
# exports: the recorded count of equal ids, measured, not asserted to be
# 160).
. "$(dirname "$0")/lib.bash"
C=$BIN/stconvert
S=$BIN/strun
D=$TESTDATA/llama
E=$D/gguf_export

# mistral's copy without its window, named as make_exports.py names it
# (the folder's name is general.name).
rm -rf "$TMP/mistral_nowindow"
cp -r "$D/mistral" "$TMP/mistral_nowindow"
sed -i -e '/"sliding_window"/d; s/"rope_theta": 1000000.0,/"rope_theta": 1000000.0/' \
  "$TMP/mistral_nowindow/config.json"
snap() { [ "$1" = mistral_nowindow ] && echo "$TMP/$1" || echo "$D/$1"; }

# ---- the exports are the files llama.cpp ran ---------------------------------
for m in llama3 llama2_bf16 mistral_nowindow qwen2 qwen3; do
  for t in f32 f16 bf16 q8_0 q4_0; do
    run "x_${m}_$t" 0 "$C" -q --stand-in-vocab --to "$t" "$(snap "$m")" "$TMP/${m}_$t.gguf"
  done
done
(cd "$TMP" && grep -v -e qwen2_tok -e llama2_spm "$E/SHA256SUMS" | sha256sum --quiet -c -) >"$TMP/sums.err" 2>&1 &&
  ok || { fail "the exports are not the files llama.cpp ran"; head -5 "$TMP/sums.err" >&2; }

# ---- and back: F32 exports give their snapshots again -------------------------
# Every tensor bit-identical; llama3's rope_scaling from the rope_freqs.weight
# libst computed, so strun's logits are the PyTorch reference's again.
for m in llama3 qwen2 qwen3; do
  run "back_$m" 0 "$C" -q "$TMP/${m}_f32.gguf" "$TMP/back_$m"
  run "back_${m}_exact" 0 "$BIN/stdiff" --exact "$D/$m" "$TMP/back_$m"
  expect_out "back_${m}_exact" " 0 differ; 0 only in A, 0 only in B, 0 shape changed, 0 dtype changed"
  run "back_${m}_logits" 0 "$S" --model-dir "$TMP/back_$m" --check "$D/$m/ref.safetensors" -q
done

# ---- strun on the source, llama.cpp on the export ------------------------------
for m in llama3 llama2_bf16 mistral_nowindow qwen2 qwen3; do
  : >"$TMP/strun_$m.txt"
  while read -r p _; do
    "$S" --model-dir "$(snap "$m")" --ids "$p" --greedy -n 32 --ignore-eos --print-ids -q \
      >>"$TMP/strun_$m.txt" || fail "$m: strun failed on prompt $p"
  done <"$E/${m}_f32.txt"
  for t in f32 f16 bf16 q8_0 q4_0; do
    same=0
    while read -r p want && read -r mine <&3; do
      for i in $(seq 1 32); do
        [ "$(cut -d, -f"$i" <<<"$want")" = "$(cut -d, -f"$i" <<<"$mine")" ] && same=$((same + 1))
      done
    done <"$E/${m}_$t.txt" 3<"$TMP/strun_$m.txt"
    rec=$(awk -v m="$m" -v t="$t" '$1 == m && $2 == t { print $3 }' "$E/AGREEMENT")
    [ "$same/160" = "$rec" ] && ok || fail "$m $t: strun agrees with llama.cpp on $same/160, recorded $rec"
    case $t in f32 | f16 | bf16)
      # A float export of an F32 source to BF16 rounds the weights: llama3's
      # 153/160 is that rounding, measured; every other float export agrees.
      [ "$same" = 160 ] || [ "$m/$t" = llama3/bf16 ] && ok ||
        fail "$m $t: strun's ids on the source are not llama.cpp's on the export ($same/160)"
      ;;
    esac
  done
done

# llama3's BF16 export rounds its F32 weights (norms stay F32): a different
# model from the source. strun on the export's own weights (the GGUF back
# as a snapshot) agrees with llama.cpp on it, 160 of 160.
run l3bf_back 0 "$C" -q "$TMP/llama3_bf16.gguf" "$TMP/l3bf_back"
same=0
while read -r p want; do
  mine=$("$S" --model-dir "$TMP/l3bf_back" --ids "$p" --greedy -n 32 --ignore-eos --print-ids -q)
  for i in $(seq 1 32); do
    [ "$(cut -d, -f"$i" <<<"$want")" = "$(cut -d, -f"$i" <<<"$mine")" ] && same=$((same + 1))
  done
done <"$E/llama3_bf16.txt"
[ "$same" = 160 ] && ok || fail "llama3 bf16: strun on the export's weights agrees with llama.cpp on $same/160"

# ---- a tokenizer.json: qwen2's weights with testdata's small byte-level BPE ----
run tok 0 "$C" "$E/qwen2_tok" "$TMP/qwen2_tok_f32.gguf"
expect_err tok "^stconvert: vocabulary: 256 tokens, tokenizer.ggml.model gpt2, pre qwen2$"
(cd "$TMP" && grep qwen2_tok "$E/SHA256SUMS" | sha256sum --quiet -c -) >/dev/null 2>&1 && ok ||
  fail "tok: not the file gguf-py and llama.cpp read"
# A Llama 2 style tokenizer.json (byte_fallback, U+2581): model "llama".
run spm_tok 0 "$C" "$E/llama2_spm" "$TMP/llama2_spm_bf16.gguf"
expect_err spm_tok "^stconvert: vocabulary: 256 tokens, tokenizer.ggml.model llama, pre default$"
(cd "$TMP" && grep llama2_spm "$E/SHA256SUMS" | sha256sum --quiet -c -) >/dev/null 2>&1 && ok ||
  fail "spm_tok: not the file gguf-py and llama.cpp read"

# ---- GPT-2: the files testdata/gguf/judge ran in llama.cpp (gpt2export's too) ----
J=$TESTDATA/gguf/judge
for t in f32 bf16 q8_0 q5_1; do
  run "gpt2_$t" 0 "$C" -q --to "$t" "$J/model" "$TMP/gpt2_$t.gguf" &&
    { cmp -s "$TMP/gpt2_$t.gguf" "$J/expected-$t.gguf" && ok || fail "gpt2 $t: not the judge's file"; }
done
run gpt2_stand_in 2 "$C" --stand-in-vocab "$J/model" "$TMP/gpt2_stand_in.gguf"
expect_err gpt2_stand_in "a GPT-2 GGUF takes its vocabulary from the snapshot's tokenizer files"

# ---- the report -------------------------------------------------------------------
run report 0 "$C" -v --stand-in-vocab --to q8_0 "$D/llama2_bf16" "$TMP/r.gguf"
expect_err report "^stconvert: in:  35 tensors, 52544 bytes"
expect_err report "^stconvert: out: 34 tensors, .* 1 GGUF file: llama, matrices Q8_0 \(general.file_type 7\)$"
expect_err report "^stconvert: tensor 'blk.0.ffn_down.weight': rows of 48 are not whole blocks of Q8_0: written F16$"
expect_err report "^stconvert: tensor 'lm_head.weight' left out: alias of the embedding$"
expect_err report "^stconvert: 2 matrices written F16"
run window 0 "$C" --stand-in-vocab "$D/mistral" "$TMP/w.gguf"
expect_err window "warning: .*sliding_window 4 is not written"
run default_bf16 0 "$C" -v --stand-in-vocab "$D/llama2_bf16" "$TMP/b.gguf"
expect_err default_bf16 "matrices BF16 \(general.file_type 32\)$"

# ---- refused: one line, exit 2, no OUT --------------------------------------------
refused() { # NAME PATTERN: the last run NAME said PATTERN in one line and left no OUT
  expect_err "$1" "$2"
  [ "$(wc -l <"$TMP/$1.err")" = 1 ] && ok || fail "$1: not one line"
  [ -e "$TMP/$1.gguf" ] && fail "$1: left OUT" || ok
  if ls -A "$TMP" | grep -q "^\.$1\.gguf"; then fail "$1: left a temporary"; else ok; fi
}
variant() { # NAME FROM SED-EXPR
  rm -rf "$TMP/$1"; cp -r "$D/$2" "$TMP/$1"; sed -i -e "$3" "$TMP/$1/config.json"
}
run notok 2 "$C" "$D/qwen3" "$TMP/notok.gguf"
refused notok "qwen3: no tokenizer.json: a GGUF needs a vocabulary"
variant falcon qwen3 's/"qwen3"/"falcon"/; s/Qwen3ForCausalLM/FalconForCausalLM/'
run falcon 2 "$C" --stand-in-vocab "$TMP/falcon" "$TMP/falcon.gguf"
refused falcon "architecture 'FalconForCausalLM'"
variant noeps qwen2 '/"rms_norm_eps"/d'
run noeps 2 "$C" --stand-in-vocab "$TMP/noeps" "$TMP/noeps.gguf"
refused noeps '"rms_norm_eps" is missing'
variant yarn qwen2 's/"rope_theta": 1000000.0,/"rope_theta": 1000000.0, "rope_scaling": {"type": "yarn", "factor": 4.0},/'
run yarn 2 "$C" --stand-in-vocab "$TMP/yarn" "$TMP/yarn.gguf"
refused yarn "rope_scaling 'yarn' of qwen2 is not written"
# A tensor the map does not know (qwen3's q_norm under a llama config), one
# missing, an FP8 one (made by stconvert).
variant q3llama qwen3 's/"qwen3"/"llama"/; s/Qwen3ForCausalLM/LlamaForCausalLM/'
run q3llama 2 "$C" --stand-in-vocab "$TMP/q3llama" "$TMP/q3llama.gguf"
refused q3llama "tensor 'model.layers.0.self_attn.q_norm.weight' is not a parameter of llama: no GGUF name$"
mkdir -p "$TMP/short" "$TMP/fp8"
cp "$D/qwen2/config.json" "$TMP/short/"
"$C" -q --drop model.layers.1.mlp.up_proj.weight "$D/qwen2/model.safetensors" \
  "$TMP/short/model.safetensors" || fail "short: fixture"
run short 2 "$C" --stand-in-vocab "$TMP/short" "$TMP/short.gguf"
refused short "tensor 'model.layers.1.mlp.up_proj.weight' is missing"
"$C" -q --to f8_e4m3 "$D/qwen2" "$TMP/fp8" --force || fail "fp8: fixture"
run fp8 2 "$C" --stand-in-vocab "$TMP/fp8" "$TMP/fp8.gguf"
refused fp8 "is F8_E4M3: a GGUF is written from F32, F16 or BF16 tensors \(dequantize it first, to BF16\)$"
# Tokenizers it does not write.
mkdir -p "$TMP/spm" "$TMP/regex"
for d in spm regex; do cp "$D/qwen2/config.json" "$D/qwen2/model.safetensors" "$TMP/$d/"; done
sed 's/"byte_fallback": false/"byte_fallback": true/' "$E/qwen2_tok/tokenizer.json" >"$TMP/spm/tokenizer.json"
run spm 2 "$C" "$TMP/spm" "$TMP/spm.gguf"
refused spm "a SentencePiece-style tokenizer that is not BPE with byte_fallback and a Sequence decoder"
sed 's/(?i:/(?:/' "$E/qwen2_tok/tokenizer.json" >"$TMP/regex/tokenizer.json"
run regex 2 "$C" "$TMP/regex" "$TMP/regex.gguf"
refused regex "pre-tokenizer regex '.*' is not one llama.cpp names \(gpt-2, llama-bpe, qwen2\)"
# GPT-2: an untied head, a variant llama.cpp's gpt2 does not run, no tokenizer files.
mkdir -p "$TMP/untied" "$TMP/gpt2_notok"
cp -r "$TESTDATA/llmc/bad/untied_hf/." "$J/model/vocab.json" "$J/model/merges.txt" "$TMP/untied/"
run untied 2 "$C" "$TMP/untied" "$TMP/untied.gguf"
refused untied "tensor 'lm_head.weight': differs from 'wte.weight' at \[2, 3\] .*: an untied output head is not supported$"
cp -r "$J/model" "$TMP/upcast"
sed -i 's/"reorder_and_upcast_attn": false/"reorder_and_upcast_attn": true/' "$TMP/upcast/config.json"
run upcast 2 "$C" "$TMP/upcast" "$TMP/upcast.gguf"
refused upcast "reorder_and_upcast_attn true is not written \(llama.cpp's gpt2 has no reordered, upcast attention\)$"
cp "$J/model/config.json" "$J/model/model.safetensors" "$TMP/gpt2_notok/"
run gpt2_notok 2 "$C" "$TMP/gpt2_notok" "$TMP/gpt2_notok.gguf"
refused gpt2_notok "gpt2_notok: no tokenizer.json, or vocab.json and merges.txt$"
# Options.
run qsafe 2 "$C" --to q8_0 "$D/qwen2" "$TMP/q.safetensors"
expect_err qsafe "--to q8_0: writes a GGUF file: OUT must end in .gguf"
run f64 2 "$C" --to f64 --stand-in-vocab "$D/qwen2" "$TMP/f64.gguf"
expect_err f64 "--to f64: not available for a GGUF OUT"
[ -e "$TMP/f64.gguf" ] && fail "f64: left OUT" || ok
run keep 2 "$C" --keep 'model.*' --stand-in-vocab "$D/qwen2" "$TMP/keep.gguf"
expect_err keep "--keep: not available for a GGUF OUT"
run exists 2 "$C" --stand-in-vocab "$D/qwen2" "$TMP/r.gguf"
expect_err exists "already exists \(use --force to replace it\)"
run force 0 "$C" -q --force --stand-in-vocab --to f32 "$D/qwen2" "$TMP/r.gguf"
cmp -s "$TMP/r.gguf" "$TMP/qwen2_f32.gguf" && ok || fail "force: OUT not replaced"
finish
