# gpt2export SNAPSHOT OUT.gguf: every --type against the files
# testdata/gguf/judge/gen_expected.py computes independently (numpy, from
# the spec and llama.cpp's converter rules; Q4_0 Q4_1 Q5_0 Q5_1 by ggml's
# own ggml_quantize_chunk), byte for byte; gpt2run on the
# source snapshot against the greedy ids llama.cpp itself produced from
# those files (testdata/gguf/judge/ids.txt, recorded by run.sh): F32, F16
# and BF16 on every prompt, Q8_0 where its greedy path is F32's; the way
# back (gpt2export IN.gguf OUT/): F32 bit-identical to the source, F16 and
# BF16 exactly the source rounded (stconvert --to), Q8_0 dequantized within
# a step, Q4_0 Q4_1 Q5_0 Q5_1 exactly the file's dequantization (stdiff
# --map gpt2 with tolerance 0: libst's decoder, itself checked against
# ggml's to_float by check_ggml_decode), the tokenizer rebuilt from the file
# giving the same ids, and gpt2run on what came back reproducing
# llama.cpp's ids; and bad
# invocations (exit 2, one line, nothing left behind).
. "$(dirname "$0")/lib.bash"
G=$BIN/gpt2export R=$BIN/gpt2run
[ -x "$G" ] && [ -x "$R" ] || { echo "no gpt2export or gpt2run"; exit 77; }
J=$TESTDATA/gguf/judge
O=$TMP/out
mkdir -p "$O"
same() { if cmp -s "$2" "$3"; then ok; else fail "$1: $2 and $3 differ"; fi; }

for t in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1; do
	run "export_$t" 0 "$G" "$J/model" "$O/$t.gguf" --type "$t" &&
		same "export_$t" "$O/$t.gguf" "$J/expected-$t.gguf"
done
# The default type is the source's: F32 here.
run export_default 0 "$G" "$J/model" "$O/default.gguf" &&
	same export_default "$O/default.gguf" "$J/expected-f32.gguf"

# llama.cpp's greedy ids, reproduced by gpt2run on the source snapshot.
checked=0
while read -r type prompt ids; do
	case $type in '#'*|'') continue ;; esac
	f32=$(awk -v p="$prompt" '$1 == "f32" && $2 == p { print $3 }' "$J/ids.txt")
	[ "$type" = q8_0 ] && [ "$ids" != "$f32" ] && continue
	run "ids_$type" 0 "$R" --model-dir "$J/model" --ids "$prompt" \
		--new-tokens 16 --greedy --print-ids || continue
	if [ "$(cat "$TMP/ids_$type.out")" = "$ids" ]; then ok; else
		fail "ids $type $prompt: gpt2run $(cat "$TMP/ids_$type.out"), llama.cpp $ids"
	fi
	checked=$((checked + 1))
done < "$J/ids.txt"
# 5 prompts for each of F32, F16, BF16, and the 2 where Q8_0 agrees.
if [ "$checked" = 17 ]; then ok; else fail "checked $checked id lines, expected 17"; fi

# The way back: GGUF -> snapshot.
D=$BIN/stdiff C=$BIN/stconvert
for t in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1; do
	run "import_$t" 0 "$G" "$J/expected-$t.gguf" "$O/back-$t"
done
for t in q4_0 q4_1 q5_0 q5_1; do
	run "back_${t}_dequantized" 0 "$D" --map gpt2 --atol 0 --rtol 0 -v "$O/back-$t" \
		"$J/expected-$t.gguf" &&
		expect_out "back_${t}_dequantized" ': 19 identical, 9 within tolerance, 0 differ;'
	run "back_${t}_not_source" 1 "$D" --exact -q "$J/model" "$O/back-$t"
done
run back_f32_exact 0 "$D" --exact -q "$J/model" "$O/back-f32"
for t in f16 bf16; do
	run "round_$t" 0 "$C" "$J/model" "$O/round-$t" --to "$t"
	run "back_${t}_exact" 0 "$D" --exact -q "$O/round-$t" "$O/back-$t"
done
# A Q8_0 step is at most amax / 127 (wte's amax is about 4.3).
run back_q8_0_close 0 "$D" -q --atol 0.02 --rtol 0 "$J/model" "$O/back-q8_0"
run back_q8_0_not_exact 1 "$D" --exact -q "$J/model" "$O/back-q8_0"
for text in "The cat sat on the mat" "Hello, world<|endoftext|> é 日本" \
            "  multiple   spaces and 123 numbers!"; do
	run tok_src 0 "$R" --model-dir "$J/model" --tokenize --prompt "$text"
	for t in f32 q8_0; do
		run "tok_$t" 0 "$R" --model-dir "$O/back-$t" --tokenize --prompt "$text"
		if cmp -s "$TMP/tok_src.out" "$TMP/tok_$t.out"; then ok; else
			fail "tokenizer of back-$t: '$text' gives $(cat "$TMP/tok_$t.out"), the source $(cat "$TMP/tok_src.out")"
		fi
	done
done
# gpt2run on the snapshots that came back (OUT/PREFIX-f32, -f16) gives
# llama.cpp's ids.
back_ids() {
	local prefix=$1 type prompt ids
	while read -r type prompt ids; do
		case $type in f32|f16) ;; *) continue ;; esac
		run "${prefix}_ids_$type" 0 "$R" --model-dir "$O/$prefix-$type" --ids "$prompt" \
			--new-tokens 16 --greedy --print-ids || continue
		if [ "$(cat "$TMP/${prefix}_ids_$type.out")" = "$ids" ]; then ok; else
			fail "$prefix-$type $prompt: gpt2run $(cat "$TMP/${prefix}_ids_$type.out"), llama.cpp $ids"
		fi
	done < "$J/ids.txt"
}
back_ids back
# stconvert IN.gguf OUT/ takes the same way (libst's st_gguf_write_snapshot):
# without --to each tensor keeps its GGUF type (F16 matrices, F32 norms),
# quantized ones decoded to F32. F32: the source snapshot back, its JSON
# and tokenizer files byte for byte; F16 and Q8_0 as the stdiff bounds
# above; gpt2run on them gives llama.cpp's ids.
for t in f32 f16 q8_0 q4_0; do
	run "stconvert_$t" 0 "$C" -q "$J/expected-$t.gguf" "$O/st-$t"
done
run st_f32_exact 0 "$D" --exact -q "$J/model" "$O/st-f32"
for f in config.json generation_config.json vocab.json merges.txt; do
	same "st_f32_$f" "$O/st-f32/$f" "$J/model/$f"
done
same st_f32_is_gpt2export "$O/st-f32/model.safetensors" "$O/back-f32/model.safetensors"
run st_f16_dtypes 0 "$BIN/stinfo" --json "$O/st-f16/model.safetensors"
n16=$(grep -o '"dtype": *"F16"' "$TMP/st_f16_dtypes.out" | wc -l)
n32=$(grep -o '"dtype": *"F32"' "$TMP/st_f16_dtypes.out" | wc -l)
# wte and the 4 matrices of each of 2 layers F16; wpe and 19 norms/biases F32.
if [ "$n16" = 9 ] && [ "$n32" = 19 ]; then ok; else fail "st-f16: $n16 F16, $n32 F32 tensors"; fi
# --to f16 narrows the F32 norms too: gpt2export's snapshot, byte for byte.
run st_to_f16 0 "$C" -q --to f16 "$J/expected-f16.gguf" "$O/st-to-f16"
same st_to_f16 "$O/st-to-f16/model.safetensors" "$O/back-f16/model.safetensors"
run st_q8_0_close 0 "$D" -q --atol 0.02 --rtol 0 "$J/model" "$O/st-q8_0"
run st_q4_0_dequantized 0 "$D" --map gpt2 --atol 0 --rtol 0 -q "$O/st-q4_0" \
	"$J/expected-q4_0.gguf"
back_ids st
# --force into a folder: written into as the other imports are, its
# README kept, a stale sharded save dropped.
mkdir -p "$O/into"
echo keep > "$O/into/README.md"
echo '{}' > "$O/into/model.safetensors.index.json"
run import_into 2 "$G" "$J/expected-f32.gguf" "$O/into"
expect_err import_into 'into: already exists \(use --force to replace it\)'
run import_into_force 0 "$G" -f "$J/expected-f32.gguf" "$O/into"
same import_into_readme "$O/into/README.md" <(echo keep)
[ -e "$O/into/model.safetensors.index.json" ] && fail "into: the stale index was kept" || ok
same import_into_model "$O/into/model.safetensors" "$O/back-f32/model.safetensors"
# A pre-tokenizer libst does not rebuild: the snapshot without tokenizer
# files, and a line saying so.
perl -0777 -pe 's/\x05\0\0\0\0\0\0\0gpt-2/\x05\0\0\0\0\0\0\0gpt-3/' \
	"$J/expected-f32.gguf" > "$TMP/pre.gguf"
run import_pre 0 "$G" "$TMP/pre.gguf" "$O/pre"
expect_err import_pre "pre: no tokenizer files: the GGUF's tokenizer.ggml.pre is not one libst rebuilds$"
[ -e "$O/pre/tokenizer.json" ] || [ -e "$O/pre/vocab.json" ] && fail "pre: tokenizer files written" || ok
run import_not_gguf 2 "$G" "$TESTDATA/gguf/bad_magic.gguf" "$O/nope"
expect_err import_not_gguf "bad_magic.gguf: not a GGUF file"
run import_not_gpt2 2 "$G" "$TESTDATA/gguf/ok_all_types.gguf" "$O/nope"
expect_err import_not_gpt2 'general.architecture is not "gpt2"'
if [ -e "$O/nope" ]; then fail "a failed import left $O/nope"; else ok; fi

# Rows that are not whole blocks of 32 (width 48): F16, as llama-quantize's
# tensor_type_fallback does; only ffn_down, rows of 4 * 48 = 192, keeps
# the type (gguf-py's quantize refuses such rows: QuantError).
I=$BIN/stinfo
run w48 0 "$G" --random "$O/w48" --width 48 --heads 2 --layers 1 --context 16 \
	--tokenizer "$TESTDATA/gpt2-tokenizer"
for t in q4_0 q4_1 q5_0 q5_1 q8_0; do
	T=$(echo "$t" | tr a-z A-Z)
	run "w48_$t" 0 "$G" "$O/w48" "$O/w48-$t.gguf" --type "$t" &&
		run "w48_${t}_info" 0 "$I" "$O/w48-$t.gguf" || continue
	expect_out "w48_${t}_info" '^blk\.0\.ffn_down\.weight +'"$T"' '
	expect_out "w48_${t}_info" '^F16 +4 '
	expect_out "w48_${t}_info" '^'"$T"' +1 '
done

# Bad invocations: one line, exit 2, no file left.
run bad_type 2 "$G" "$J/model" "$O/x.gguf" --type q4_k
expect_err bad_type "unknown type 'q4_k'"
run type_needs_gguf 2 "$G" "$J/model" "$O/x.bin" --type f16
expect_err type_needs_gguf "--type applies to a GGUF OUT"
mkdir -p "$TMP/notok"
cp "$J/model/config.json" "$J/model/model.safetensors" "$TMP/notok/"
run no_tokenizer 2 "$G" "$TMP/notok" "$O/x.gguf"
if [ "$(wc -l < "$TMP/no_tokenizer.err")" = 1 ]; then ok; else
	fail "no_tokenizer: not one line"; fi
run missing_dir 2 "$G" "$J/model" "$TMP/no/such/x.gguf"
if [ -e "$O/x.gguf" ] || ls -A "$O" | grep -q '\.tmp-'; then
	fail "a failed export left a file in $O"; else ok; fi
finish
