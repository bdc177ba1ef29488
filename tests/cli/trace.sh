#!/usr/bin/env bash
# Proving a load right, end to end: gpt2run --trace against the PyTorch
# traces of testdata/trace (made by scripts/gpt2_trace_torch.py), compared
# with stdiff --first, which must name the first wrong stage and block of
# each planted trap; stdiff of the trap snapshots naming the trap in
# words; the greedy continuation of gpt2run --check; and the timings on a
# line of their own after generated text.
. "$(dirname "$0")/lib.bash"
G=$BIN/gpt2run
S=$BIN/stdiff
[ -x "$G" ] && [ -x "$S" ] || { echo "gpt2run or stdiff not built"; exit 77; }
D=$TESTDATA/trace
TINY=$TESTDATA/gpt2/tiny-f32
P7=38,238,149,176,179,212,8

# ---- --trace ----------------------------------------------------------------
run tr_tiny 0 "$G" --model-dir "$TINY" --ids $P7 --trace "$TMP/tiny.safetensors" -q
[ -s "$TMP/tiny.out" ] && fail "tr_tiny: stdout not empty" || ok
# 6 + 13 x 2 tensors; the order in __metadata__ starts with the embeddings.
head -c 4096 "$TMP/tiny.safetensors" | grep -aq '"order":"ids,wte,wpe,embed,h.0.ln_1,h.0.attn.q,h.0.attn.k,h.0.attn.v,h.0.attn.weights,' &&
  ok || fail "tr_tiny: no forward order in __metadata__"
# --trace goes with --check: the trace is written and the logits checked.
run tr_check 0 "$G" --model-dir "$TINY" --trace "$TMP/t2.safetensors" \
  --check "$D/ref-tiny-p7.safetensors" -q &&
  expect_out tr_check 'OK \(atol'
cmp -s "$TMP/tiny.safetensors" "$TMP/t2.safetensors" && ok ||
  fail "tr_check: the trace differs from tr_tiny's"
run tr_dir 2 "$G" --model-dir "$TINY" --ids 1 --trace "$TMP/no/such/t.safetensors" -q &&
  expect_err tr_dir "^gpt2run: .*no/such"
[ -e "$TMP/no" ] && fail "tr_dir: left something behind" || ok

# ---- stdiff --first: the first stage where two runs part ----------------------
# GPT-2's initialisation: every stage within stdiff's default F32 tolerance.
run init 0 "$G" --model-dir "$D/gpt2-init" --ids "$(seq -s, 3 18)" \
  --trace "$TMP/init.safetensors" -q
run first_init 0 "$S" --first "$D/ref-init-t16.safetensors" "$TMP/init.safetensors" &&
  expect_out first_init '^no difference: 32 tensors in A.s recorded order, all within tolerance$'
# tiny-f32's large weights: within 1e-4 (cancellation near 0, see
# tests/check_gpt2_trace.c); every planted trap is far outside that.
run first_tiny 0 "$S" --first --atol 1e-4 "$D/ref-tiny-p7.safetensors" "$TMP/tiny.safetensors"
# first_trap NAME SNAPSHOT REF STAGE: the first difference is STAGE.
first_trap() {
  local name=$1 snap=$2 ref=$3 stage=$4
  run "tr_$name" 0 "$G" --model-dir "$snap" --ids $P7 --trace "$TMP/$name.safetensors" -q &&
  run "first_$name" 1 "$S" --first --atol 1e-4 "$ref" "$TMP/$name.safetensors" &&
  expect_out "first_$name" "^first difference: tensor [0-9]+ of 32 in A.s recorded order$" &&
  expect_out "first_$name" "^differs: ${stage//./\\.} \\(F32, "
  [ "$(wc -l <"$TMP/first_$name.out")" = 2 ] && ok || fail "first_$name: more than the first"
}
# c_proj untransposed in block 1: block 1's attention projection.
first_trap cproj "$D/trap-cproj" "$D/ref-tiny-p7.safetensors" h.1.attn.proj
# Q and K swapped in block 1's c_attn (weight and bias): block 1's q.
first_trap qk "$D/trap-qk" "$D/ref-tiny-p7.safetensors" h.1.attn.q
# layer_norm_epsilon changed in config.json: the very first LayerNorm.
first_trap eps "$D/trap-eps" "$D/ref-tiny-p7.safetensors" h.0.ln_1
# The reference computed with the exact GELU: block 0's GELU, not its fc.
first_trap gelu "$TINY" "$D/ref-tiny-p7-exact-gelu.safetensors" h.0.mlp.gelu
# Without a recorded order, file order: a file without one walks by data order.
run first_noorder 1 "$S" --first "$TESTDATA/gpt2/tiny-f32" "$D/trap-cproj" &&
  expect_out first_noorder "^first difference: tensor [0-9]+ of 28 in A.s file order$"
run first_quiet 1 "$S" --first -q "$D/ref-tiny-p7.safetensors" "$TMP/cproj.safetensors"
[ -s "$TMP/first_quiet.out" ] && fail "first_quiet: printed" || ok
# --first --json: the same first difference as a document (stdiff_first_json.sh).
run first_json 1 "$S" --first --json "$D/ref-tiny-p7.safetensors" "$TMP/cproj.safetensors" &&
  expect_out first_json '"position": 24, "kind": "differs", "tensor": \{"name": "h\.1\.attn\.proj"'

# ---- stdiff of the snapshots names the trap in words -------------------------
run snap_cproj 1 "$S" "$TINY" "$D/trap-cproj" &&
  expect_out snap_cproj '^differs: h\.1\.attn\.c_proj\.weight ' &&
  expect_out snap_cproj '^  B is A transposed \(exactly\): a square matrix copied without its transpose'
run snap_qk 1 "$S" "$TINY" "$D/trap-qk" &&
  expect_out snap_qk '^differs: h\.1\.attn\.c_attn\.weight ' &&
  expect_out snap_qk '^differs: h\.1\.attn\.c_attn\.bias ' &&
  [ "$(grep -c '^  B is A with its 3 column blocks of 32 in the order 2,1,3 (exactly): Q, K, V thirds packed as K, Q, V?$' "$TMP/snap_qk.out")" = 2 ] &&
  ok || fail "snap_qk: both c_attn tensors not named K, Q, V"
# --json carries the same diagnoses.
run snap_cproj_json 1 "$S" --json "$TINY" "$D/trap-cproj" &&
  expect_out snap_cproj_json '"name": "h\.1\.attn\.c_proj\.weight", .*"diagnosis": \{"kind": "transposed", "exact": true, "description": "B is A transposed \(exactly\)'
run snap_qk_json 1 "$S" --json "$TINY" "$D/trap-qk" &&
  [ "$(grep -c '"name": "h\.1\.attn\.c_attn\.\(weight\|bias\)", .*"diagnosis": {"kind": "permuted", "exact": true, .*"block_width": 32, "order": \[2, 1, 3\]}' "$TMP/snap_qk_json.out")" = 2 ] &&
  ok || fail "snap_qk_json: both c_attn tensors not permuted 2, 1, 3"
# The epsilon lives in config.json: the weights are the same, and the
# changed key is named.
run snap_eps 0 "$S" "$TINY" "$D/trap-eps" &&
  expect_out snap_eps '^config\.json layer_norm_epsilon: 1e-05 -> 0\.001$' &&
  expect_out snap_eps ', 1 config\.json key differs: equal$'

# ---- level 3: --check with 'greedy' in REF ---------------------------------------
run gr_ok 0 "$G" --model-dir "$TINY" --check "$D/ref-tiny-p7-greedy.safetensors" -q &&
  expect_out gr_ok '^greedy: 8 ids match .*: OK$'
# With Q and K swapped in block 1 the third greedy id differs (logits
# checked with a tolerance wide enough to let the greedy check speak).
run gr_bad 1 "$G" --model-dir "$D/trap-qk" --check "$D/ref-tiny-p7-greedy.safetensors" \
  --atol 100 -q &&
  expect_out gr_bad '^greedy: step 3 of 8: id [0-9]+, reference [0-9]+: MISMATCH$'

# ---- timings after streamed text -----------------------------------------------
# stdout and stderr in one file: the timings start lines of their own.
"$G" --model-dir "$TINY" --ids 1,2 -n 6 --greedy >"$TMP/both.txt" 2>&1 &&
  ok || fail "both: exit $?"
[ "$(grep -ac '^gpt2run: prompt: ' "$TMP/both.txt")" = 1 ] &&
[ "$(grep -ac '^gpt2run: generated: ' "$TMP/both.txt")" = 1 ] && ok ||
  { fail "both: timings not on lines of their own"; sed 's/^/  /' "$TMP/both.txt" >&2; }
# stdout alone (not a terminal): the text exactly, no newline added.
"$G" --model-dir "$TINY" --ids 1,2 -n 6 --greedy >"$TMP/alone.txt" 2>/dev/null
tail -c 1 "$TMP/alone.txt" | od -An -c | grep -q '\\n' && fail "alone: a newline added" || ok
grep -av '^gpt2run: ' "$TMP/both.txt" | tr -d '\n' >"$TMP/both-text.txt"
tr -d '\n' <"$TMP/alone.txt" | cmp -s - "$TMP/both-text.txt" && ok ||
  fail "alone: stdout is not the streamed text exactly"

finish
