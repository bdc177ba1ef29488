# gpt2export: both directions and both llm.c versions against the
# independent fixtures of testdata/llmc (gen_llmc.py re-implements llm.c's
# write_model and writes the expected snapshots by hand), round trips,
# --dtype, --check, random snapshots, bad inputs (exit 2, one line naming
# the file, goldens in tests/golden/gpt2export/), atomic output and the
# options. Inputs are given relative to testdata/llmc so the messages do
# not depend on where the tree lives.
. "$(dirname "$0")/lib.bash"
G=$BIN/gpt2export
[ -x "$G" ] || { echo "no $G"; exit 77; }
cd "$TESTDATA/llmc" || exit 1
mkdir -p "$TMP/gpt2export"
export ST_TOKENIZER_DIR=$TESTDATA/gpt2-tokenizer
O=$TMP/out
mkdir -p "$O"

no_err() {
  if [ -s "$TMP/$1.err" ]; then
    fail "$1: unexpected stderr:"; sed 's/^/  /' "$TMP/$1.err" | head -5 >&2
  else ok; fi
}
# same NAME A B: files A and B are byte-identical.
same() { if cmp -s "$2" "$3"; then ok; else fail "$1: $2 and $3 differ"; fi; }
# absent NAME PATH: PATH does not exist.
absent() { if [ -e "$2" ]; then fail "$1: $2 exists"; else ok; fi; }
# no_temps NAME DIR: nothing a failed run left behind (".x.tmp-...").
no_temps() {
  if ls -A "$2" | grep -q '\.tmp-'; then fail "$1: temporary left in $2: $(ls -A "$2")"; else ok; fi
}

# --- options -------------------------------------------------------------------
run help 0 "$G" --help && no_err help
[ "$(head -n1 "$TMP/help.out")" = "Usage: gpt2export [OPTION]... IN OUT" ] && ok || fail "help: first line"
for opt in --dtype --check --tokenizer --no-tokenizer --random --layers --heads \
           --width --vocab --context --seed --version 'Exit status'; do
  expect_out help "$opt"
done
run help_short 0 "$G" -h
same help_short "$TMP/help.out" "$TMP/help_short.out"
run version 0 "$G" --version && no_err version
expect_out version '^gpt2export \(libst\) [0-9]+\.[0-9]+\.[0-9]+$'

golden gpt2export/usage-none 2 "$G"
golden gpt2export/usage-one 2 "$G" tiny_fp32.bin
golden gpt2export/usage-three 2 "$G" tiny_fp32.bin a b
golden gpt2export/usage-bad-option 2 "$G" --bogus tiny_fp32.bin x
golden gpt2export/usage-bad-short 2 "$G" -x tiny_fp32.bin x
golden gpt2export/usage-no-arg 2 "$G" tiny_fp32.bin x --dtype
golden gpt2export/usage-no-arg-long 2 "$G" --random
golden gpt2export/usage-dtype 2 "$G" --dtype f64 tiny_fp32.bin x
golden gpt2export/usage-f16-bin 2 "$G" --dtype f16 tiny_fp32_hf x.bin
golden gpt2export/usage-heads-alone 2 "$G" --heads 4 tiny_fp32.bin x
golden gpt2export/usage-random-heads 2 "$G" --random x --heads 5 --width 64
golden gpt2export/usage-random-zero 2 "$G" --random x --layers 0
golden gpt2export/usage-random-check 2 "$G" --random x --check
golden gpt2export/usage-random-in 2 "$G" --random x tiny_fp32.bin
golden gpt2export/usage-tokenizer-both 2 "$G" --tokenizer . --no-tokenizer tiny_fp32.bin x
absent usage-wrote "x"

# --- llm.c -> HF, against the expected snapshots -------------------------------
for v in fp32 bf16; do
  run "to_hf_$v" 0 "$G" "tiny_$v.bin" "$O/hf_$v" && no_err "to_hf_$v"
  for f in model.safetensors config.json generation_config.json; do
    same "to_hf_$v" "$O/hf_$v/$f" "tiny_${v}_hf/$f"
  done
  for f in tokenizer.json vocab.json merges.txt tokenizer_config.json special_tokens_map.json; do
    same "to_hf_$v tokenizer" "$O/hf_$v/$f" "$ST_TOKENIZER_DIR/$f"
  done
  absent "to_hf_$v readme" "$O/hf_$v/README.txt"
done

# Padding rows that are not zero cannot come back: a warning, not an error.
# Row 201 of wte starts at byte 1024 + 201 * 16 * 4.
cp tiny_fp32.bin "$TMP/dirty.bin"
printf '\001' | dd of="$TMP/dirty.bin" bs=1 seek=$((1024 + 201 * 64 + 5)) conv=notrunc 2>/dev/null
run dirty_padding 0 "$G" "$TMP/dirty.bin" "$O/dirty"
expect_err dirty_padding '^gpt2export: warning: .*dirty\.bin: padding row 201 of wte \(rows 200\.\.255 pad V = 200 to Vp = 256\) is not zero'
same dirty_padding "$O/dirty/model.safetensors" tiny_fp32_hf/model.safetensors
run dirty_quiet 0 "$G" -q "$TMP/dirty.bin" "$O/dirty_q" && no_err dirty_quiet

# --- HF -> llm.c, against llm.c's own bytes ---------------------------------------
run to_bin_fp32 0 "$G" tiny_fp32_hf "$O/fp32.bin" && no_err to_bin_fp32
same to_bin_fp32 "$O/fp32.bin" tiny_fp32.bin
# BF16 parameters make a version 5 file without being asked.
run to_bin_bf16 0 "$G" tiny_bf16_hf "$O/bf16.bin"
same to_bin_bf16 "$O/bf16.bin" tiny_bf16.bin
# The "transformer." prefix, legacy attn.bias buffers, the tied lm_head and
# two shards: the same llm.c file. The file and the index as IN, too.
run to_bin_variants 0 "$G" tiny_variants_hf "$O/variants.bin"
same to_bin_variants "$O/variants.bin" tiny_fp32.bin
run to_bin_index 0 "$G" tiny_variants_hf/model.safetensors.index.json "$O/index.bin"
same to_bin_index "$O/index.bin" tiny_fp32.bin
run to_bin_file 0 "$G" tiny_fp32_hf/model.safetensors "$O/file.bin"
same to_bin_file "$O/file.bin" tiny_fp32.bin

# --- round trips --------------------------------------------------------------
for v in fp32 bf16; do
  run "rt_bin_$v" 0 "$G" "$O/hf_$v" "$O/rt_$v.bin"
  same "rt_bin_$v" "$O/rt_$v.bin" "tiny_$v.bin"
  run "rt_hf_$v" 0 "$G" "$O/rt_$v.bin" "$O/rt_hf_$v"
  same "rt_hf_$v" "$O/rt_hf_$v/model.safetensors" "tiny_${v}_hf/model.safetensors"
done
if [ -x "$BIN/stdiff" ]; then
  # HF -> llm.c -> HF: the same parameters, to the bit (the names lose the
  # prefix; the legacy buffers and the tied head are not kept).
  run rt_variants 0 "$G" "$O/variants.bin" "$O/rt_variants"
  run rt_variants_stdiff 1 "$BIN/stdiff" --exact --strip-prefix transformer. tiny_variants_hf "$O/rt_variants"
  expect_out rt_variants_stdiff '^28 tensors compared: 28 identical, 0 within tolerance, 0 differ; 5 only in A, 0 only in B, 0 shape changed, 0 dtype changed'
  [ "$(grep -c '^only in A: .*\(attn\.bias\|attn\.masked_bias\|lm_head\.weight\)$' "$TMP/rt_variants_stdiff.out")" = 5 ] \
    && ok || fail "rt_variants: unexpected tensors only in A"
  run rt_stdiff 0 "$BIN/stdiff" --exact tiny_bf16_hf "$O/rt_hf_bf16"
fi

# --- dtypes -------------------------------------------------------------------
# fp32 rounded to bf16 is what torch's .to(torch.bfloat16) made.
run dtype_bf16_hf 0 "$G" --dtype bf16 tiny_fp32.bin "$O/hf_to_bf16"
same dtype_bf16_hf "$O/hf_to_bf16/model.safetensors" tiny_bf16_hf/model.safetensors
same dtype_bf16_cfg "$O/hf_to_bf16/config.json" tiny_bf16_hf/config.json
run dtype_bf16_bin 0 "$G" --dtype bf16 tiny_fp32_hf "$O/to_bf16.bin"
same dtype_bf16_bin "$O/to_bf16.bin" tiny_bf16.bin
# bf16 widened to f32 and back is exact.
run dtype_f32_bin 0 "$G" --dtype f32 tiny_bf16_hf "$O/bf16_as_f32.bin"
run dtype_f32_back 0 "$G" --dtype bf16 "$O/bf16_as_f32.bin" "$O/bf16_again"
same dtype_f32_back "$O/bf16_again/model.safetensors" tiny_bf16_hf/model.safetensors
run dtype_f16_hf 0 "$G" --dtype f16 tiny_fp32.bin "$O/hf_f16"
grep -q '"torch_dtype": "float16"' "$O/hf_f16/config.json" && ok || fail "f16 torch_dtype"
run dtype_f16_bin 0 "$G" "$O/hf_f16" "$O/f16.bin"
[ "$(od -An -tu4 -j4 -N4 "$O/f16.bin" | tr -d ' ')" = 3 ] && ok || fail "f16 -> version 3"

# --- --check --------------------------------------------------------------------
for v in fp32 bf16; do
  run "check_$v" 0 "$G" --check "tiny_$v.bin" "$O/check_$v"
  expect_out "check_$v" '^check: 3 prompts, 41 positions: max abs logit difference 0 \((F32 -> F32|BF16 -> BF16), exact: must be 0\)$'
  run "check_bin_$v" 0 "$G" --check "tiny_${v}_hf" "$O/check_$v.bin"
  expect_out "check_bin_$v" 'max abs logit difference 0 .*exact: must be 0'
done
run check_variants 0 "$G" --check tiny_variants_hf "$O/check_variants.bin"
expect_out check_variants 'difference 0 \(F32 -> F32, exact'
run check_widen 0 "$G" --check --dtype f32 tiny_bf16.bin "$O/check_widen"
expect_out check_widen 'difference 0 \(BF16 -> F32, exact: must be 0\)'
# Rounding to bf16 changes the logits; that is reported, not an error.
run check_round 0 "$G" --check --dtype bf16 tiny_fp32.bin "$O/check_round"
expect_out check_round 'difference 0\.[0-9]+ \(F32 -> BF16, rounded\)'

# --- bad inputs: exit 2, the reason, nothing written ---------------------------
for b in short magic version truncated trailing heads padded_vocab zero_layers; do
  golden "gpt2export/bad-$b" 2 "$G" "bad/$b.bin" "$O/bad_$b"
  absent "bad-$b" "$O/bad_$b"
done
for b in not_gpt2 missing transposed extra untied eps; do
  golden "gpt2export/bad-$b" 2 "$G" "bad/${b}_hf" "$O/bad_$b.bin"
  absent "bad-$b" "$O/bad_$b.bin"
done
golden gpt2export/bad-no-input 2 "$G" does-not-exist.bin "$O/x"
# A snapshot is not a .bin, and a .bin is not a snapshot.
run bad_st_as_bin 2 "$G" tiny_fp32_hf/model.safetensors.bogus "$O/x"
printf 'PK\003\004zip' > "$TMP/zip.bin"
run bad_zip 2 "$G" "$TMP/zip.bin" "$O/x"
expect_err bad_zip 'zip\.bin: .*a zip archive'
no_temps bad-inputs "$O"

# --- outputs ------------------------------------------------------------------
# An existing OUT is replaced only with --force, as stconvert does (the same
# check, tools/fe): a folder that holds anything, a file, a link to nothing.
mkdir -p "$O/existing"
cp tiny_variants_hf/* "$O/existing/"
echo keep > "$O/existing/README.md"
before=$(cd "$O/existing" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
run noforce 2 "$G" tiny_fp32.bin "$O/existing"
expect_err noforce "^gpt2export: $O/existing: already exists \(use --force to replace it\)\$"
[ "$(cd "$O/existing" && find . -type f -print0 | sort -z | xargs -0 sha256sum)" = "$before" ] &&
  ok || fail "noforce: OUT changed"
run noforce_random 2 "$G" --random "$O/existing" --layers 1 --heads 1 --width 8 --vocab 16 --context 4
expect_err noforce_random "existing: already exists \(use --force to replace it\)"
run noforce_gguf 2 "$G" "$TESTDATA/gguf/judge/expected-f16.gguf" "$O/existing"
expect_err noforce_gguf "existing: already exists \(use --force to replace it\)"
# An empty folder is written into.
mkdir -p "$O/empty"
run empty 0 "$G" tiny_fp32.bin "$O/empty"
same empty "$O/empty/model.safetensors" tiny_fp32_hf/model.safetensors
# With --force the folder is written into; a stale sharded save there is
# removed, since loaders would prefer its index to the new model.safetensors.
run existing 0 "$G" --force tiny_fp32.bin "$O/existing"
same existing "$O/existing/model.safetensors" tiny_fp32_hf/model.safetensors
absent existing-index "$O/existing/model.safetensors.index.json"
absent existing-shard "$O/existing/model-00001-of-00002.safetensors"
same existing-readme "$O/existing/README.md" <(echo keep)
# OUT a file: refused, untouched (with --force too: a folder is written).
echo data > "$O/afile"
run out_file 2 "$G" tiny_fp32.bin "$O/afile"
expect_err out_file 'afile: already exists \(use --force to replace it\)'
run out_file_force 2 "$G" -f tiny_fp32.bin "$O/afile"
expect_err out_file_force 'afile: exists and is not a folder'
same out_file "$O/afile" <(echo data)
# A link to nothing is the user's: refused without --force.
ln -s nowhere "$O/dangling.bin"
run dangling 2 "$G" tiny_fp32_hf "$O/dangling.bin"
expect_err dangling 'dangling.bin: already exists, a link to nothing \(use --force to replace it\)'
# A .bin (or a .gguf) over an existing one: refused, then with --force
# replaced whole.
cp tiny_bf16.bin "$O/replace.bin"
run replace_noforce 2 "$G" tiny_fp32_hf "$O/replace.bin"
expect_err replace_noforce 'replace.bin: already exists \(use --force to replace it\)'
same replace_noforce "$O/replace.bin" tiny_bf16.bin
run replace 0 "$G" -f tiny_fp32_hf "$O/replace.bin"
same replace "$O/replace.bin" tiny_fp32.bin
echo data > "$O/old.gguf"
run gguf_noforce 2 "$G" tiny_fp32_hf "$O/old.gguf"
expect_err gguf_noforce 'old.gguf: already exists \(use --force to replace it\)'
same gguf_noforce "$O/old.gguf" <(echo data)
# A failure while writing a new folder leaves nothing behind.
mkdir -p "$O/fail" "$TMP/notok"
run fail_tokenizer 2 "$G" --tokenizer "$TMP/notok" tiny_fp32.bin "$O/fail/snap"
expect_err fail_tokenizer 'notok: no GPT-2 tokenizer files'
absent fail_tokenizer "$O/fail/snap"
no_temps fail_tokenizer "$O/fail"
# A failure while writing a .bin leaves the old one untouched.
cp tiny_bf16.bin "$O/keep.bin"
run fail_bin 2 "$G" bad/missing_hf "$O/keep.bin"
same fail_bin "$O/keep.bin" tiny_bf16.bin
no_temps fail_bin "$O"

# Killed half-way (GPT-2 small takes seconds): it dies of the signal and
# removes its temporary folder and file.
mkdir -p "$O/killed"
timeout --preserve-status -s TERM 0.5 "$G" --random "$O/killed/snap" >/dev/null 2>&1
rc=$?
if [ "$rc" = 0 ]; then ok  # a machine fast enough to finish first
elif [ "$rc" = 143 ]; then ok; absent killed "$O/killed/snap"; no_temps killed "$O/killed"
else fail "killed: exit $rc, expected 143"; fi

# --- tokenizer files --------------------------------------------------------------
run no_tokenizer 0 "$G" --no-tokenizer tiny_fp32.bin "$O/no_tok"
absent no_tokenizer "$O/no_tok/tokenizer.json"
same no_tokenizer "$O/no_tok/model.safetensors" tiny_fp32_hf/model.safetensors
mkdir -p "$TMP/tok_only"
cp "$ST_TOKENIZER_DIR/tokenizer.json" "$TMP/tok_only/"
run tokenizer_dir 0 "$G" --tokenizer "$TMP/tok_only" tiny_fp32.bin "$O/tok_only"
same tokenizer_dir "$O/tok_only/tokenizer.json" "$ST_TOKENIZER_DIR/tokenizer.json"
absent tokenizer_dir "$O/tok_only/vocab.json"
run tokenizer_env 0 env ST_TOKENIZER_DIR="$TMP/tok_only" "$G" tiny_fp32.bin "$O/tok_env"
absent tokenizer_env "$O/tok_env/merges.txt"
# Without the variable: the installed copy, or the source tree's.
run tokenizer_default 0 env -u ST_TOKENIZER_DIR "$G" tiny_fp32.bin "$O/tok_default"
[ -s "$O/tok_default/tokenizer.json" ] && ok || fail "tokenizer_default: no tokenizer.json"

# --- random snapshots -------------------------------------------------------------
# wte (2000 x 64) is larger than the conversion's chunks, not a multiple of them.
R="--layers 2 --heads 4 --width 64 --vocab 2000 --context 32"
run random 0 "$G" --random "$O/r1" $R --seed 7 && no_err random
run random_again 0 "$G" $R --seed 7 --random "$O/r2"
same random-same-seed "$O/r1/model.safetensors" "$O/r2/model.safetensors"
run random_other 0 "$G" --random "$O/r3" $R --seed 8
if cmp -s "$O/r1/model.safetensors" "$O/r3/model.safetensors"; then fail "seeds 7 and 8 gave the same bytes"; else ok; fi
for kv in '"n_layer": 2' '"n_head": 4' '"n_embd": 64' '"vocab_size": 2000' '"n_positions": 32' '"torch_dtype": "float32"'; do
  grep -qF "$kv" "$O/r1/config.json" && ok || fail "random config: no $kv"
done
same random-tokenizer "$O/r1/tokenizer.json" "$ST_TOKENIZER_DIR/tokenizer.json"
[ -x "$BIN/stinfo" ] && { run random_valid 0 "$BIN/stinfo" --check "$O/r1"; }
# bf16: the f32 values rounded, and it survives the trip through llm.c.
run random_bf16 0 "$G" --random "$O/r16" $R --seed 7 --dtype bf16
grep -qF '"torch_dtype": "bfloat16"' "$O/r16/config.json" && ok || fail "random bf16 torch_dtype"
run random_bf16_from_f32 0 "$G" --dtype bf16 "$O/r1" "$O/r1_as_bf16.bin"
run random_bf16_bin 0 "$G" "$O/r16" "$O/r16.bin"
same random-bf16-rounding "$O/r16.bin" "$O/r1_as_bf16.bin"
run random_check 0 "$G" --check "$O/r1" "$O/r1.bin"
expect_out random_check 'difference 0 \(F32 -> F32, exact'
[ "$(stat -c %s "$O/r1.bin")" = $((1024 + 4 * (2048*64 + 32*64 + 2*(12*64*64 + 13*64) + 2*64))) ] \
  && ok || fail "random .bin size"
run random_rt 0 "$G" --check "$O/r1.bin" "$O/r1_back"
same random-rt "$O/r1_back/model.safetensors" "$O/r1/model.safetensors"

# --- gpt2run loads what gpt2export writes ---------------------------------------------
if [ -x "$BIN/gpt2run" ]; then
  run gpt2run_hf 0 "$BIN/gpt2run" --model-dir "$O/hf_fp32" --ids 1,2,3 --new-tokens 2 --greedy --print-ids
  run gpt2run_random 0 "$BIN/gpt2run" --model-dir "$O/r1" --ids 1,2,3 --new-tokens 2 --greedy --print-ids
fi

finish
