#!/usr/bin/env bash
# strun on the Llama-family fixtures of testdata/llama (made by its
# make_fixtures.py from scripts/llama_trace_torch.py, a plain PyTorch
# forward pass written from transformers' modeling code): logits within
# 1e-4 at every position for llama (llama3 rope_scaling, sharded),
# mistral (sliding window), qwen2 (biases, tied, no lm_head), qwen3
# (q/k norms, explicit head_dim) and a BF16 llama (linear rope, biases, tied
# with lm_head present); llama's weights as PyTorch .bin files too; greedy
# ids, also against llama.cpp's on the same weights as GGUF;
# thread-count independence; a trace
# against the recorded reference trace through stdiff --first; the
# loader's refusals (one line, exit 2); and strun on GPT-2 giving
# gpt2run's output byte for byte.
. "$(dirname "$0")/lib.bash"
S=$BIN/strun
G=$BIN/gpt2run
[ -x "$S" ] || { echo "strun not built"; exit 77; }
D=$TESTDATA/llama
# GPT2RUN_KERNEL (ctest runs this script once per kernel table) naming a
# table this CPU cannot run: nothing to test here.
if [ -n "${GPT2RUN_KERNEL:-}" ] &&
   "$S" --model-dir "$D/qwen2" --ids 1 -n 1 -q --print-ids 2>&1 >/dev/null | grep -q "cannot run it"; then
  echo "GPT2RUN_KERNEL=$GPT2RUN_KERNEL: not on this CPU"; exit 77
fi

# ---- --help, usage errors ----------------------------------------------------
run help 0 "$S" --help && expect_out help '^Usage: strun --model-dir DIR' &&
  expect_out help 'Llama'
usage() { local name=$1; shift; run "$name" 2 "$S" "$@" && expect_err "$name" "Try 'strun --help'"; }
usage u_nodir --ids 1
usage u_ids --model-dir "$D/qwen2" --ids 1,,2

variant() { # NAME FROM SED-EXPR: a copy of snapshot FROM with config.json edited
  rm -rf "$TMP/$1"; cp -r "$D/$2" "$TMP/$1"; sed -i -e "$3" "$TMP/$1/config.json"
}

# ---- logits and greedy ids against the PyTorch reference ---------------------
for m in llama3 mistral qwen2 qwen3 llama2_bf16; do
  # ref.safetensors: its ids are the prompt; its greedy ids are checked too.
  run "chk_$m" 0 "$S" --model-dir "$D/$m" --check "$D/$m/ref.safetensors" -q &&
    expect_out "chk_$m" '^max abs diff [0-9.e+-]+ at position [0-9]+, token [0-9]+ .*: OK \(atol 0.0001, 7 positions x 256 logits\)' &&
    expect_out "chk_$m" '^greedy: 8 ids match .*: OK'
  run "chk_short_$m" 0 "$S" --model-dir "$D/$m" --check "$D/$m/ref_short.safetensors" -q -j 3
  # The same logits on 1 and 3 threads, bit for bit.
  run "lo1_$m" 0 "$S" --model-dir "$D/$m" --ids 1,5,17,42,99,200,255 --logits-out "$TMP/$m-1.st" -q -j 1
  run "lo3_$m" 0 "$S" --model-dir "$D/$m" --ids 1,5,17,42,99,200,255 --logits-out "$TMP/$m-3.st" -q -j 3
  cmp -s "$TMP/$m-1.st" "$TMP/$m-3.st" && ok || fail "$m: logits differ between 1 and 3 threads"
done
# PyTorch checkpoints: llama3's weights through torch.save (zip format, an
# OrderedDict, as transformers' save_pretrained(safe_serialization=False)):
# one pytorch_model.bin, and two shards with pytorch_model.bin.index.json.
# Within 1e-4 of llama3's reference, and logits byte-identical to those of
# the safetensors snapshot (the same values through the same code).
run lo_llama3_st 0 "$S" --model-dir "$D/llama3" --ids 1,5,17,42,99,200,255 --logits-out "$TMP/llama3_st.st" -q
for b in llama3_bin llama3_bin_sharded; do
  run "chk_$b" 0 "$S" --model-dir "$D/$b" --check "$D/llama3/ref.safetensors" -q &&
    expect_out "chk_$b" ': OK \(atol 0.0001, 7 positions x 256 logits\)' &&
    expect_out "chk_$b" '^greedy: 8 ids match .*: OK'
  run "lo_$b" 0 "$S" --model-dir "$D/$b" --ids 1,5,17,42,99,200,255 --logits-out "$TMP/$b.st" -q
  cmp -s "$TMP/llama3_st.st" "$TMP/$b.st" && ok || fail "$b: logits differ from the safetensors snapshot's"
done
# Generation: --greedy --print-ids continues as the reference's greedy ids.
# (14,24,243,243,222,176,58,137: qwen3/ref.safetensors' greedy ids.)
run gen_qwen3 0 "$S" --model-dir "$D/qwen3" --ids 1,5,17,42,99,200,255 --greedy -n 8 --ignore-eos --print-ids -q &&
  expect_out gen_qwen3 '^14,24,243,243,222,176,58,137$'
# llama.cpp's greedy ids on the same weights (testdata/llama/gguf_llama.py's
# F32 GGUF, llama_cpp_greedy.mjs): 5 prompts x 32 tokens each. qwen2 and
# qwen3 run as llama.cpp's own archs; llama3, llama2_bf16 (linear rope,
# biases) and mistral as its "llama" arch, whose interleaved rotary needs
# the GGUF's q/k rows permuted per head (convert_hf_to_gguf's rule).
cpp_greedy() { # NAME DIR FILE
  local m=$1 dir=$2 n=0 p want
  while read -r p want; do
    n=$((n + 1))
    run "cpp_${m}_$n" 0 "$S" --model-dir "$dir" --ids "$p" --greedy -n 32 --ignore-eos --print-ids -q &&
      { [ "$(cat "$TMP/cpp_${m}_$n.out")" = "$want" ] && ok ||
        fail "$m prompt $p: strun's greedy ids are not llama.cpp's"; }
  done <"$3"
  [ "$n" = 5 ] && ok || fail "$m: $n llama.cpp prompts, expected 5"
}
for m in qwen3 qwen2 llama3 llama2_bf16; do
  cpp_greedy "$m" "$D/$m" "$D/$m/llama_cpp_greedy.txt"
done
# llama.cpp's llama arch has no sliding window (convert_hf_to_gguf writes
# none for it, its graph masks causally only), so its mistral ids are those
# of mistral's weights without the window: the copy nowindow, checked in
# full. The windowed fixture (window 4: position i sees i-3..i) agrees with
# them while the context fits the window, and parts right after: prompt 7
# for 4 ids, prompt 3,141,59 for 2.
variant nowindow mistral '/"sliding_window"/d; s/"rope_theta": 1000000.0,/"rope_theta": 1000000.0/'
cpp_greedy mistral_nowindow "$TMP/nowindow" "$D/mistral/llama_cpp_greedy_nowindow.txt"
for pk in "7 4" "3,141,59 2"; do
  read -r p k <<<"$pk"
  want=$(grep "^$p " "$D/mistral/llama_cpp_greedy_nowindow.txt" | cut -d' ' -f2)
  run "cpp_window_$k" 0 "$S" --model-dir "$D/mistral" --ids "$p" --greedy -n 32 --ignore-eos --print-ids -q
  got=$(cat "$TMP/cpp_window_$k.out")
  [ "$(cut -d, -f1-"$k" <<<"$got")" = "$(cut -d, -f1-"$k" <<<"$want")" ] &&
    [ "$(cut -d, -f$((k + 1)) <<<"$got")" != "$(cut -d, -f$((k + 1)) <<<"$want")" ] && ok ||
    fail "mistral prompt $p: not llama.cpp's first $k ids, then different ones"
done
# BF16: the reference computed on the BF16 values agrees to 1e-4; the one on
# the F32 values they were rounded from moves by about 0.1 (BF16 keeps 8
# bits of mantissa: 2^-9 relative per weight, logits of magnitude ~10).
run bf16_vs_f32 1 "$S" --model-dir "$D/llama2_bf16" --check "$D/llama2_bf16/ref_f32.safetensors" -q &&
  expect_out bf16_vs_f32 'MISMATCH'
run bf16_vs_f32_atol 0 "$S" --model-dir "$D/llama2_bf16" --check "$D/llama2_bf16/ref_f32.safetensors" --atol 0.25 -q
run bf16_held 0 "$S" --model-dir "$D/llama2_bf16" --ids 1 -n 1 --print-ids &&
  expect_err bf16_held 'parameters held as BF16'

# F16 weights, read as F16: the same logits as the F32 path on their values
# (stconvert --to f16, then back to f32: exact), prompt and one token.
run f16 0 "$BIN/stconvert" "$D/qwen2" "$TMP/f16" --to f16 -q
run f16_32 0 "$BIN/stconvert" "$TMP/f16" "$TMP/f16_32" --to f32 -q
run f16_held 0 "$S" --model-dir "$TMP/f16" --ids 1 -n 1 --print-ids &&
  expect_err f16_held 'parameters held as F16'
for ids in 1,5,17,42,99,200,255 42; do
  run f16_lo 0 "$S" --model-dir "$TMP/f16_32" --ids $ids --logits-out "$TMP/f16_32.st" -q
  run f16_chk 0 "$S" --model-dir "$TMP/f16" --ids $ids --check "$TMP/f16_32.st" -q
done

# ---- scaled FP8 (stconvert --to f8_e4m3), decoded inside the products ----------
# Reference: libst's dequantization of the same file (stconvert --to f32)
# through the F32 path. A prompt (the packed-panel matmul) and one token
# (the decode dot products, F8 bytes read in place), on every kernel table
# the CPU has; then against the F32 original, which E4M3's 3 mantissa bits
# move by up to ~0.4 on these fixtures while the greedy ids stay.
P7=1,5,17,42,99,200,255
for m in qwen3 qwen2 llama2_bf16; do
  run "fp8_$m" 0 "$BIN/stconvert" "$D/$m" "$TMP/fp8_$m" --to f8_e4m3 --block 16,16 -q
  run "deq_$m" 0 "$BIN/stconvert" "$TMP/fp8_$m" "$TMP/deq_$m" --to f32 -q
  run "stinfo_fp8_$m" 0 "$BIN/stinfo" --check "$TMP/fp8_$m"
  run "held_fp8_$m" 0 "$S" --model-dir "$TMP/fp8_$m" --ids 42 -n 1 --print-ids &&
    expect_err "held_fp8_$m" 'parameters held as F8_E4M3'
  for ids in $P7 42; do
    run "deqlo_$m" 0 "$S" --model-dir "$TMP/deq_$m" --ids $ids --logits-out "$TMP/deq_$m.st" -q
    for k in portable avx2 avx512; do
      GPT2RUN_KERNEL=$k "$S" --model-dir "$TMP/fp8_$m" --ids 1 -n 1 -q --print-ids >/dev/null 2>&1 || continue
      GPT2RUN_KERNEL=$k run "fp8chk_${m}_$k" 0 "$S" --model-dir "$TMP/fp8_$m" --ids $ids --check "$TMP/deq_$m.st" -q
    done
  done
done
# Blocks of 5 and 7 rows: the decode's four-row loop with one, two and
# three rows left over (48 = 6 * 7 + 6), 64-column blocks and 48-column.
for b in 5,64 7,48; do
  run "fp8b_$b" 0 "$BIN/stconvert" "$D/qwen3" "$TMP/fp8b_$b" --to f8_e4m3 --block $b -q
  run "deqb_$b" 0 "$BIN/stconvert" "$TMP/fp8b_$b" "$TMP/deqb_$b" --to f32 -q
  run "deqblo_$b" 0 "$S" --model-dir "$TMP/deqb_$b" --ids 42 --logits-out "$TMP/deqb_$b.st" -q
  for k in portable avx2 avx512; do
    GPT2RUN_KERNEL=$k "$S" --model-dir "$TMP/fp8b_$b" --ids 1 -n 1 -q --print-ids >/dev/null 2>&1 || continue
    GPT2RUN_KERNEL=$k run "fp8bchk_${b}_$k" 0 "$S" --model-dir "$TMP/fp8b_$b" --ids 42 --check "$TMP/deqb_$b.st" -q
  done
done
run fp8_vs_f32 0 "$S" --model-dir "$TMP/fp8_qwen3" --check "$D/qwen3/ref.safetensors" --atol 0.5 -q &&
  expect_out fp8_vs_f32 '^greedy: 8 ids match'
run fp8_vs_f32_tight 1 "$S" --model-dir "$TMP/fp8_qwen3" --check "$D/qwen3/ref.safetensors" -q
# A NaN code (0x7f) in one weight: NaN logits on every kernel table, as
# libst's dequantization of the same file gives (the table-free AVX2 loop
# alone would read the code as 480: the loader scans the matrices that
# loop would run and sends this one to the portable loop).
cp -r "$TMP/fp8_qwen3" "$TMP/fp8_nan"
nanj=$("$BIN/stinfo" --json --tensors 'model.layers.0.mlp.up_proj.weight' "$TMP/fp8_nan")
hb=$(printf '%s\n' "$nanj" | sed -n 's/.*"header_bytes": \([0-9]*\).*/\1/p')
off=$(printf '%s\n' "$nanj" | sed -n 's/.*"data_offsets": \[\([0-9]*\),.*/\1/p')
[ -n "$hb" ] && [ -n "$off" ] || fail "fp8_nan: no offsets in stinfo --json"
printf '\177' | dd of="$TMP/fp8_nan/model.safetensors" bs=1 seek=$((8 + hb + off + 37)) conv=notrunc 2>/dev/null
run fp8_nan_deq 0 "$BIN/stconvert" "$TMP/fp8_nan" "$TMP/deq_nan" --to f32 -q
run fp8_nan_ref 0 "$S" --model-dir "$TMP/deq_nan" --ids 42 --logits-out "$TMP/deq_nan.st" -q
for k in portable avx2 avx512; do
  GPT2RUN_KERNEL=$k "$S" --model-dir "$TMP/fp8_nan" --ids 1 -n 1 -q --print-ids >/dev/null 2>&1 || continue
  GPT2RUN_KERNEL=$k run "fp8_nan_$k" 0 "$S" --model-dir "$TMP/fp8_nan" --ids 42 --check "$TMP/deq_nan.st" -q &&
    expect_out "fp8_nan_$k" '\(-?nan, reference -?nan\): OK'
done
# An FP8 weight without its scale is refused, by name.
run fp8_drop 0 "$BIN/stconvert" "$TMP/fp8_qwen3" "$TMP/fp8_noscale2" --drop 'model.layers.1.mlp.up_proj.weight_scale_inv' -q
run fp8_noscale 2 "$S" --model-dir "$TMP/fp8_noscale2" --ids 1 -n 1 --print-ids -q &&
  expect_err fp8_noscale "model.layers.1.mlp.up_proj.weight"

# ---- the traps: each config value matters ---------------------------------------
variant theta qwen3 's/"rope_theta": 1000000.0/"rope_theta": 10000.0/'
run trap_theta 1 "$S" --model-dir "$TMP/theta" --check "$D/qwen3/ref.safetensors" -q
variant eps mistral 's/"rms_norm_eps": 1e-05/"rms_norm_eps": 0.1/'
run trap_eps 1 "$S" --model-dir "$TMP/eps" --check "$D/mistral/ref.safetensors" -q
# Mistral's window is honoured: without it (the copy nowindow, made above)
# the 7-token prompt attends further.
run trap_window 1 "$S" --model-dir "$TMP/nowindow" --check "$D/mistral/ref.safetensors" -q
# llama3's scaling is applied: without it the frequencies differ.
variant norope llama3 '/"rope_scaling"/,/}/d'
run trap_llama3 1 "$S" --model-dir "$TMP/norope" --check "$D/llama3/ref.safetensors" -q

# ---- --trace and stdiff --first ----------------------------------------------
# Every architecture's trace against its PyTorch reference trace, stage by
# stage (qwen3 has per-head q/k norms: 4 more stages).
for m in llama3 mistral qwen2 llama2_bf16 qwen3; do
  want=34; [ $m = qwen3 ] && want=38
  run "trace_$m" 0 "$S" --model-dir "$D/$m" --ids 5,17,42 --trace "$TMP/trace_$m.st" -q
  run "trace_first_$m" 0 "$BIN/stdiff" --first "$D/$m/trace_ref.safetensors" "$TMP/trace_$m.st" &&
    expect_out "trace_first_$m" "no difference: $want tensors"
done
cp "$TMP/trace_qwen3.st" "$TMP/trace.st"
# Planted on the reference side, each trap is named at its first stage:
# interleaved rotary pairs (GGUF's layout) at q_rope, GQA heads tiled
# instead of repeated at attn.out.
# The diagnosis under it says why, recomputed from the trace's own tensors
# (the rotary input q_norm, the values v): the rotary pairs, the KV head
# each query head reads at position 0.
run trace_rope 1 "$BIN/stdiff" --first "$D/qwen3/trace_interleaved.safetensors" "$TMP/trace.st" &&
  expect_out trace_rope 'differs: layers.0.attn.q_rope ' &&
  expect_out trace_rope "^  the rotary embedding's input is equal, its output differs after position 0 \(heads of 16\): A rotates pairs \(2i, 2i\+1\) \(interleaved, GGUF's\), B pairs \(i, i\+D/2\) \(rotate-half\): the rotary layout differs"
run trace_gqa 1 "$BIN/stdiff" --first "$D/qwen3/trace_gqa_tile.safetensors" "$TMP/trace.st" &&
  expect_out trace_gqa 'differs: layers.0.attn.out ' &&
  expect_out trace_gqa '^  query heads read other KV heads \(GQA, 2 KV heads for 4 query heads\): A tiles them \(h % 2\), B repeats each KV head for 2 consecutive query heads \(repeat_kv: h / 2\)'
run trace_gqa_json 1 "$BIN/stdiff" --first --json "$D/qwen3/trace_gqa_tile.safetensors" "$TMP/trace.st" &&
  expect_out trace_gqa_json '"diagnosis": \{"kind": "gqa", "exact": false, .*"n_head": 4, "n_kv_head": 2, "a_tiled": true\}'
# rope_theta ignored (10000 instead of the config's 1000000): both rotate
# half, with bases fitted from the angles.
run trace_theta 0 "$S" --model-dir "$TMP/theta" --ids 5,17,42 --trace "$TMP/trace_theta.st" -q
run trace_first_theta 1 "$BIN/stdiff" --first "$D/qwen3/trace_ref.safetensors" "$TMP/trace_theta.st" &&
  expect_out trace_first_theta 'differs: layers.0.attn.q_rope ' &&
  expect_out trace_first_theta '^  .*both rotate pairs \(i, i\+D/2\) \(rotate-half\), A with base about 1000000, B with base about 10000: rope_theta ignored\?$'
# A wrong RMSNorm epsilon is named at the first stage it touches, with
# eps(B) - eps(A) estimated from the norm's input (0.1 - 1e-5).
run trace_eps 0 "$S" --model-dir "$TMP/eps" --ids 5,17,42 --trace "$TMP/trace_eps.st" -q
run trace_mistral 0 "$S" --model-dir "$D/mistral" --ids 5,17,42 --trace "$TMP/trace_m.st" -q
run trace_first_eps 1 "$BIN/stdiff" --first "$TMP/trace_m.st" "$TMP/trace_eps.st" &&
  expect_out trace_first_eps 'layers.0.input_norm' &&
  expect_out trace_first_eps '^  B is A with each row scaled by its own factor within 0\.099 of 1 \(within tolerance\): the RMSNorm epsilon differs \(eps\(B\) - eps\(A\) about 0\.1\)$'
run trace_first_eps_json 1 "$BIN/stdiff" --first --json "$TMP/trace_m.st" "$TMP/trace_eps.st" &&
  expect_out trace_first_eps_json '"kind": "row_scaled", .*"norm": true, "eps_delta": 0\.099'

# ---- the loader's refusals: one line, exit 2 ---------------------------------
refuse() { # NAME PATTERN: strun on $TMP/NAME refuses with PATTERN
  run "$1" 2 "$S" --model-dir "$TMP/$1" --ids 1 -n 1 --print-ids -q &&
    expect_err "$1" "$2" &&
    { [ "$(wc -l < "$TMP/$1.err")" = 1 ] && ok || fail "$1: more than one line"; }
}
variant missing qwen2 's/"num_hidden_layers": 2/"num_hidden_layers": 3/'
refuse missing "^strun: .*/missing: missing tensor 'model.layers.2.input_layernorm.weight'"
variant leftover qwen2 's/"qwen2"/"llama"/; s/Qwen2ForCausalLM/LlamaForCausalLM/'
refuse leftover "^strun: .*: tensor 'model.layers.0.self_attn.q_proj.bias' is not a parameter of this config"
variant misshapen qwen2 's/"intermediate_size": 48/"intermediate_size": 40/'
refuse misshapen "tensor 'model.layers.0.mlp.gate_proj.weight': shape \[48, 32\], expected \[40, 32\]"
variant badeps qwen2 's/"rms_norm_eps": 1e-06/"rms_norm_eps": -1/'
refuse badeps 'config.json: "rms_norm_eps" is -1, expected a positive number'
variant yarn llama3 's/"rope_type": "llama3"/"rope_type": "yarn"/'
refuse yarn 'config.json: "rope_scaling": rope_type "yarn" is not implemented'
variant moe qwen2 's/"hidden_act": "silu"/"hidden_act": "silu", "num_experts": 8/'
refuse moe 'config.json: "num_experts": mixture-of-experts models are not implemented'
variant gelu qwen2 's/"hidden_act": "silu"/"hidden_act": "gelu"/'
refuse gelu 'config.json: "hidden_act" must be "silu"'
# One architecture table: stinfo --check agrees with strun on each of them
# (a leftover is stinfo's warning and strun's refusal: it cannot run it).
for v in missing misshapen; do
  run "stinfo_$v" 1 "$BIN/stinfo" --check "$TMP/$v" && expect_err "stinfo_$v" "model.layers"
done
run stinfo_leftover 0 "$BIN/stinfo" --check "$TMP/leftover" &&
  expect_err stinfo_leftover "q_proj.bias' \\[32\\]: not a parameter of LlamaForCausalLM"
for m in llama3 mistral qwen2 qwen3 llama2_bf16; do
  run "stinfo_$m" 0 "$BIN/stinfo" --check "$D/$m"
done
variant untied qwen2 's/"tie_word_embeddings": true/"tie_word_embeddings": false/'
refuse untied "missing tensor 'lm_head.weight'"
variant dtype qwen2 's/x/x/'
run dtype 2 "$S" --model-dir "$TMP/dtype" --ids 1 -n 1 --print-ids --dtype bf16 -q &&
  expect_err dtype 'runs its weights as stored'

# ---- GPT-2: strun is gpt2run, byte for byte ----------------------------------
T=$TESTDATA/gpt2/tiny-f32
same() { # NAME ARGS...: the same stdout and stderr from both tools
  local name=$1; shift
  "$G" "$@" >"$TMP/$name.g.out" 2>"$TMP/$name.g.err"; local rg=$?
  "$S" "$@" >"$TMP/$name.s.out" 2>"$TMP/$name.s.err"; local rs=$?
  sed -i 's/^gpt2run: /strun: /' "$TMP/$name.g.err"
  if [ "$rg" = "$rs" ] && cmp -s "$TMP/$name.g.out" "$TMP/$name.s.out" &&
     cmp -s "$TMP/$name.g.err" "$TMP/$name.s.err"; then ok; else
    fail "$name: strun and gpt2run differ (exit $rs vs $rg)"
    diff "$TMP/$name.g.out" "$TMP/$name.s.out" | head -5 >&2
    diff "$TMP/$name.g.err" "$TMP/$name.s.err" | head -5 >&2
  fi
}
same g_check --model-dir "$T" --check "$TESTDATA/gpt2/ref-f32-p70.safetensors" -q
same g_greedy --model-dir "$T" --ids 1,2,3 --greedy -n 20 --print-ids -q
same g_sample --model-dir "$T" --ids 1,2,3 -n 20 --seed 7 --top-k 40 --print-ids -q -j 2
same g_bf16 --model-dir "$T" --dtype bf16 --check "$TESTDATA/gpt2/ref-bf16-p7.safetensors" -q
same g_bad --model-dir "$TESTDATA/gpt2/broken/ok" --ids 99999 -q
run g_lo 0 "$G" --model-dir "$T" --ids 1,2,3 --logits-out "$TMP/g.st" -q
run s_lo 0 "$S" --model-dir "$T" --ids 1,2,3 --logits-out "$TMP/s.st" -q
cmp -s "$TMP/g.st" "$TMP/s.st" && ok || fail "gpt2: --logits-out differs"
run g_tr 0 "$G" --model-dir "$T" --ids 1,2,3 --trace "$TMP/gt.st" -q
run s_tr 0 "$S" --model-dir "$T" --ids 1,2,3 --trace "$TMP/st.st" -q
cmp -s "$TMP/gt.st" "$TMP/st.st" && ok || fail "gpt2: --trace differs"
# --tokenizer PATH is the same loader as gpt2run's: a .gguf vocabulary and
# a tokenizer.json give llama.cpp's recorded ids (testdata/tokenizers).
VOC=$TESTDATA/tokenizers
run s_tok_gguf 0 "$S" --tokenizer "$VOC/ggml-vocab-llama-bpe.gguf" --tokenize --prompt "Hello world" &&
  expect_out s_tok_gguf '^128000,9906,1917$'
run s_tok_json 0 "$S" --tokenizer "$VOC/qwen2.tokenizer.json" --tokenize --prompt "Hello world" &&
  expect_out s_tok_json '^9707,1879$'
finish
