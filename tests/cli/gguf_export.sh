# gpt2export SNAPSHOT OUT.gguf: every --type against the files
# testdata/gguf/judge/gen_expected.py computes independently (numpy, from
# the spec and llama.cpp's converter rules), byte for byte; gpt2run on the
# source snapshot against the greedy ids llama.cpp itself produced from
# those files (testdata/gguf/judge/ids.txt, recorded by run.sh): F32, F16
# and BF16 on every prompt, Q8_0 where its greedy path is F32's; and bad
# invocations (exit 2, one line, nothing left behind).
. "$(dirname "$0")/lib.bash"
G=$BIN/gpt2export R=$BIN/gpt2run
[ -x "$G" ] && [ -x "$R" ] || { echo "no gpt2export or gpt2run"; exit 77; }
J=$TESTDATA/gguf/judge
O=$TMP/out
mkdir -p "$O"
same() { if cmp -s "$2" "$3"; then ok; else fail "$1: $2 and $3 differ"; fi; }

for t in f32 f16 bf16 q8_0; do
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

# Bad invocations: one line, exit 2, no file left.
run bad_type 2 "$G" "$J/model" "$O/x.gguf" --type q4_0
expect_err bad_type "unknown type 'q4_0'"
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
