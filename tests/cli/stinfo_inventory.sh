#!/usr/bin/env bash
# stinfo's config-aware inventory on the snapshots of testdata/archcheck
# (gen_fixtures.py there; the expected lines are written out by hand):
# the summary's config lines, and --check failing (exit 1) with every
# missing or misshapen parameter named.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "stinfo not built"; exit 77; }
cd "$TESTDATA/archcheck" || exit 2

run good 0 "$S" gpt2-good &&
  expect_out good '^config:      GPT2LMHeadModel \(config.json\), 2 layers: 1,952 parameters implied, 1,952 found in 28 of 28 tensors$'
grep -q '^missing:\|^misshapen:\|^extra:' "$TMP/good.out" && fail "good: lists a problem" || ok
run good_check 0 "$S" --check gpt2-good && expect_out good_check '^gpt2-good: OK$'

run missing 0 "$S" gpt2-missing &&
  expect_out missing '^missing:     2 parameters: h\.1\.mlp\.c_fc\.bias \[32\], ln_f\.weight \[8\]$'
run missing_check 1 "$S" --check gpt2-missing &&
  expect_out missing_check '^gpt2-missing: INVALID \(2 errors\)$' &&
  expect_err missing_check "^stinfo: gpt2-missing: tensor 'h\.1\.mlp\.c_fc\.bias': missing \(GPT2LMHeadModel implies \[32\]\)$" &&
  expect_err missing_check "^stinfo: gpt2-missing: tensor 'ln_f\.weight': missing \(GPT2LMHeadModel implies \[8\]\)$"

run shape_check 1 "$S" --check gpt2-misshapen &&
  expect_err shape_check "^stinfo: gpt2-misshapen: tensor 'h\.0\.attn\.c_proj\.weight': shape \[7, 8\], expected \[8, 8\] \(GPT2LMHeadModel\)$" &&
  expect_err shape_check "^stinfo: gpt2-misshapen: tensor 'h\.1\.attn\.c_attn\.weight': shape \[24, 8\], expected \[8, 24\] \(GPT2LMHeadModel\)$"
run shape 0 "$S" gpt2-misshapen &&
  expect_out shape '^misshapen:   2 parameters: h\.0\.attn\.c_proj\.weight \[7, 8\] \(expected \[8, 8\]\), h\.1\.attn\.c_attn\.weight \[24, 8\] \(expected \[8, 24\]\)$'

# Legacy buffers and the tied head's alias are fine; strays only warn.
run legacy_check 0 "$S" --check gpt2-legacy &&
  expect_out legacy_check '^gpt2-legacy: OK \(2 warnings\)$' &&
  expect_err legacy_check "tensor 'optimizer\.step' \[1\]: not a parameter of GPT2LMHeadModel$"
run legacy 0 "$S" gpt2-legacy &&
  expect_out legacy '^extra:       1 alias of the embedding: lm_head\.weight \[16, 8\]$'

run llama_check 1 "$S" --check llama-broken &&
  expect_err llama_check "^stinfo: llama-broken: tensor 'model\.layers\.0\.self_attn\.v_proj\.weight': shape \[16, 16\], expected \[8, 16\] \(LlamaForCausalLM\)$" &&
  expect_err llama_check "^stinfo: llama-broken: tensor 'model\.layers\.1\.self_attn\.k_proj\.weight': missing \(LlamaForCausalLM implies \[8, 16\]\)$"
run gqa_check 0 "$S" --check llama-gqa && expect_out gqa_check '^llama-gqa: OK$'
run qwen_check 0 "$S" --check qwen2-tied && expect_out qwen_check '^qwen2-tied: OK$'
run qwen_nobias 1 "$S" --check qwen2-nobias &&
  expect_out qwen_nobias '^qwen2-nobias: INVALID \(6 errors\)$'
[ "$(grep -c "_proj\.bias': missing" "$TMP/qwen_nobias.err")" = 6 ] && ok ||
  fail "qwen_nobias: not every missing bias named"
# --json carries the same, every item with its shape.
run good_json 0 "$S" --json gpt2-good &&
  expect_out good_json '^  "inventory": \{"architecture": "GPT2LMHeadModel", "layers": 2, "parameters_implied": 1952, "parameters_found": 1952, "tensors_matched": 28, "tensors_expected": 28, "prefix": "", "missing": \[\], "misshapen": \[\], "legacy_buffers": \[\], "aliases": \[\], "unknown": \[\]\}$'
run missing_json 0 "$S" --json gpt2-missing &&
  expect_out missing_json '"missing": \[\{"name": "h\.1\.mlp\.c_fc\.bias", "shape": \[32\]\}, \{"name": "ln_f\.weight", "shape": \[8\]\}\], "misshapen": \[\]'
run shape_json 0 "$S" --json gpt2-misshapen &&
  expect_out shape_json '"misshapen": \[\{"name": "h\.0\.attn\.c_proj\.weight", "shape": \[7, 8\], "expected": \[8, 8\]\}, \{"name": "h\.1\.attn\.c_attn\.weight", "shape": \[24, 8\], "expected": \[8, 24\]\}\]'
run legacy_json 0 "$S" --json gpt2-legacy &&
  expect_out legacy_json '"prefix": "transformer\.", .*"legacy_buffers": \[\{"name": "transformer\.h\.0\.attn\.bias", "shape": \[1, 1, 8, 8\]\}, \{"name": "transformer\.h\.0\.attn\.masked_bias", "shape": \[\]\}, ' &&
  expect_out legacy_json '"aliases": \[\{"name": "lm_head\.weight", "shape": \[16, 8\]\}\], "unknown": \[\{"name": "transformer\.h\.2\.attn\.bias", "shape": \[1, 1, 8, 8\]\}, \{"name": "optimizer\.step", "shape": \[1\]\}\]\}$'
# A file path finds the config.json of its folder.
run file_check 1 "$S" --check gpt2-missing/model.safetensors &&
  expect_out file_check 'INVALID \(2 errors\)$'

# A config.json that is there but cannot be read (a folder in its place)
# is an I/O error: exit 2 with one line, never "OK".
mkdir -p "$TMP/unreadable/config.json"
ln -s "$TESTDATA/archcheck/gpt2-good/model.safetensors" "$TMP/unreadable/"
run unreadable_config 2 "$S" --check "$TMP/unreadable" &&
  expect_err unreadable_config '^stinfo: .*/unreadable/config\.json: cannot read: not a regular file$'
[ "$(wc -l <"$TMP/unreadable_config.err")" = 1 ] && [ ! -s "$TMP/unreadable_config.out" ] && ok ||
  fail "unreadable_config: not one line on stderr and nothing on stdout"

# A leftover of a killed writer in the folder is a warning, not an error.
mkdir -p "$TMP/leftover"
ln -s "$TESTDATA/archcheck/gpt2-good/model.safetensors" "$TMP/leftover/"
cp "$TESTDATA/archcheck/gpt2-good/config.json" "$TMP/leftover/"
gone=$(sh -c 'echo $$')
: >"$TMP/leftover/.config.json.tmp-$gone-AbC123"
run leftover 0 "$S" --check "$TMP/leftover" &&
  expect_out leftover 'leftover: OK \(1 warning\)$' &&
  expect_err leftover "^stinfo: warning: .*/leftover/\.config\.json\.tmp-$gone-AbC123: left by a writer that is gone; not part of the snapshot$"

finish
