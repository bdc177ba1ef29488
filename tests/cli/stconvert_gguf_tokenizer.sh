# stconvert VOCAB.gguf OUT/ on llama.cpp's vocabulary-only GGUFs
# (testdata/tokenizers/ggml-vocab-*.gguf: no tensors) writes the tokenizer
# files their tokenizer.ggml.* keys stand for (st_gguf_write_tokenizer),
# and strun's tokenizer, reading them, gives the ids Hugging Face's
# tokenizers recorded for every llama.cpp case (.inp/.out, made with
# add_special_tokens=False: strun adds the BOS the files ask for, Llama 3's
# and Llama 2's). That Hugging Face's own tokenizers loads the written
# files and gives the same ids is checked when the fixtures are made
# (testdata/tokenizers/check_gguf_tokenizer.js), not here.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/gguf_lib.bash"
export ST_NO_PROGRESS=1
V=$TESTDATA/tokenizers
SEP=__ggml_vocab_test__

# cases INP OUT DIR: DIR/N.txt, each case's bytes (without the separator),
# and DIR/N.ids, its recorded ids comma-separated; as many of each.
cases() {
	mkdir -p "$3"
	awk -v d="$3" -v sep="$SEP" 'BEGIN { RS = "\n" sep "\n"; ORS = "" }
		{ n++; printf "%s", $0 > (d "/" n ".txt"); close(d "/" n ".txt") }' "$1"
	awk -v d="$3" '{ n++; s = $0; sub(/^ +/, "", s); gsub(/ +/, ",", s)
		print s > (d "/" n ".ids"); close(d "/" n ".ids") }' "$2"
	local t i
	t=$(ls "$3" | grep -c '\.txt$') i=$(ls "$3" | grep -c '\.ids$')
	if [ "$t" = "$i" ] && [ "$t" = "$(wc -l <"$2")" ] && [ "$t" -gt 10 ]; then ok; else
		fail "$1: $t cases, $i id lines"; fi
}

# tokenize NAME TOKENIZER CASEDIR BOS [N...]: strun's ids of the cases
# (all, or N...) are the recorded ones, after BOS (may be empty).
tokenize() {
	local name=$1 tok=$2 dir=$3 bos=$4 n want got bad=0
	shift 4
	local list=("$@")
	[ ${#list[@]} = 0 ] && list=($(ls "$dir" | sed -n 's/\.txt$//p' | sort -n))
	for n in "${list[@]}"; do
		want=$(cat "$dir/$n.ids")
		[ -n "$bos" ] && want=$bos${want:+,$want}
		got=$("$BIN/strun" --tokenize --tokenizer "$tok" --prompt-file "$dir/$n.txt" 2>"$TMP/tok.err")
		if [ "$got" != "$want" ]; then
			bad=$((bad + 1))
			[ $bad -le 3 ] && echo "  $name case $n: got $got, want $want" >&2
		fi
	done
	if [ $bad = 0 ]; then ok; else fail "$name: $bad of ${#list[@]} cases differ"; fi
}

for v in gpt-2:: llama-bpe:128000 qwen2: llama-spm:1; do
	name=${v%%:*} bos=${v#*:}
	bos=${bos#:}
	run "out_$name" 0 "$BIN/stconvert" "$V/ggml-vocab-$name.gguf" "$TMP/$name" || continue
	expect_err "out_$name" "^stconvert: out: no tensors in the GGUF: a tokenizer folder: .*/$name/tokenizer.json, tokenizer_config.json$"
	ls -A "$TMP/$name" | tr '\n' ' ' | grep -qx 'tokenizer.json tokenizer_config.json ' &&
		ok || fail "$name: files: $(ls -A "$TMP/$name")"
	cases "$V/ggml-vocab-$name.gguf.inp" "$V/ggml-vocab-$name.gguf.out" "$TMP/cases-$name"
	# Every case (a run reads up to 10 MB of JSON; under valgrind, ST_WRAP,
	# three cases a vocabulary).
	tokenize "$name" "$TMP/$name/tokenizer.json" "$TMP/cases-$name" "$bos" ${ST_WRAP:+1 13 46}
	# The folder: tokenizer_config.json's add_bos_token agrees.
	tokenize "$name-dir" "$TMP/$name" "$TMP/cases-$name" "$bos" 1 2 13 30 46
done
# extra.inp (special tokens in the text, invalid UTF-8, NFC, long runs):
# the ids Hugging Face gave with add_special_tokens (make_extra.js), for
# the two fast vocabularies.
for name in llama-spm qwen2; do
	cases "$V/extra.inp" "$V/extra.$name.special.out" "$TMP/extra-$name"
	tokenize "extra-$name" "$TMP/$name/tokenizer.json" "$TMP/extra-$name" "" ${ST_WRAP:+5 13 17}
done

# A Llama snapshot with a vocabulary back from its GGUF (llama2_bf16 as
# testdata/llama/gguf_llama.py writes it for llama.cpp: a stand-in
# vocabulary <t0>..<t255>) runs in strun without --print-ids: the text it
# prints is llama.cpp's greedy ids on that GGUF, token by token.
run l2 0 "$BIN/stconvert" "$TESTDATA/gguf_llama/llama2-vocab.gguf" "$TMP/l2"
expect_err l2 "^stconvert: out: 35 tensors, .*a snapshot: .*/l2/model.safetensors, config.json, generation_config.json, tokenizer.json, tokenizer_config.json$"
if grep -q "no tokenizer" "$TMP/l2.err"; then fail "l2: said no tokenizer"; else ok; fi
L2=$TESTDATA/llama/llama2_bf16/llama_cpp_greedy.txt
for p in 3,141,59 7; do
	want=$(grep "^$p " "$L2" | cut -d' ' -f2 | tr ',' '\n' | sed 's/.*/<t&>/' | tr -d '\n')
	run "l2_gen_$p" 0 "$BIN/strun" --model-dir "$TMP/l2" --ids "$p" --greedy -n 32 --ignore-eos -q &&
		{ [ "$(cat "$TMP/l2_gen_$p.out")" = "$want" ] && ok ||
			fail "l2 prompt $p: '$(cat "$TMP/l2_gen_$p.out")', llama.cpp's '$want'"; }
done

# --- malformed vocabularies: one line naming the key, exit 2, no OUT ---------
# vocab OUT TOKENS MERGES: a vocabulary-only GGUF, model gpt2, pre gpt-2,
# the tokens and merges (space-separated lists; a token is printf's %b of
# its text, a merge's '_' its space), token types normal but the last
# (control).
vocab() {
	local out=$1 t m i=0
	local toks=($2) merges=($3)
	{
		printf 'GGUF'; le 3 4; le 0 8; le 5 8
		str tokenizer.ggml.model; le 8 4; str gpt2
		str tokenizer.ggml.pre; le 8 4; str gpt-2
		str tokenizer.ggml.tokens; le 9 4; le 8 4; le ${#toks[@]} 8
		for t in "${toks[@]}"; do t=$(printf '%b' "$t"); le ${#t} 8; printf '%s' "$t"; done
		str tokenizer.ggml.token_type; le 9 4; le 5 4; le ${#toks[@]} 8
		for t in "${toks[@]}"; do i=$((i + 1)); le $([ $i = ${#toks[@]} ] && echo 3 || echo 1) 4; done
		str tokenizer.ggml.merges; le 9 4; le 8 4; le ${#merges[@]} 8
		for m in "${merges[@]}"; do m=${m/_/ }; str "$m"; done
	} >"$out"
}
bos_kv() { str tokenizer.ggml.bos_token_id; le 4 4; le "$1" 4; }

vocab "$TMP/tiny.gguf" "a b ab <|e|>" "a_b"
run tiny 0 "$BIN/stconvert" -q "$TMP/tiny.gguf" "$TMP/tiny"
run tiny_tok 0 "$BIN/strun" --tokenize --tokenizer "$TMP/tiny" --prompt "abab<|e|>a"
[ "$(cat "$TMP/tiny_tok.out")" = "2,2,3,0" ] && ok || fail "tiny: ids $(cat "$TMP/tiny_tok.out"), expected 2,2,3,0"
# refuse NAME GGUF PATTERN: exit 2, one line matching PATTERN, no OUT.
refuse() {
	run "$1" 2 "$BIN/stconvert" "$2" "$TMP/$1.dir"
	expect_err "$1" "$3"
	[ "$(wc -l <"$TMP/$1.err")" = 1 ] && ok || fail "$1: not one line"
	[ -e "$TMP/$1.dir" ] && fail "$1: left OUT" || ok
}
vocab "$TMP/utf8.gguf" 'a b \xff ab <|e|>' "a_b"
refuse utf8 "$TMP/utf8.gguf" "^stconvert: .*utf8.gguf: tokenizer.ggml.tokens\[2\] is not valid UTF-8"
vocab "$TMP/merge.gguf" "a b ab <|e|>" "a_b a_c"
refuse merge "$TMP/merge.gguf" "^stconvert: .*merge.gguf: tokenizer.ggml.merges\[1\] 'a c': a part or the merged token is not in tokenizer.ggml.tokens$"
vocab "$TMP/nospace.gguf" "a b ab <|e|>" "ab"
refuse nospace "$TMP/nospace.gguf" "tokenizer.ggml.merges\[0\] 'ab' is not two tokens separated by a space$"
vocab "$TMP/bos.gguf" "a b ab <|e|>" "a_b"
{ cat "$TMP/bos.gguf"; bos_kv 4; } >"$TMP/bos2.gguf"
# (one more key: the header's count, at byte 16, is patched)
printf '\x06' | dd of="$TMP/bos2.gguf" bs=1 seek=16 conv=notrunc 2>/dev/null
refuse bos "$TMP/bos2.gguf" "tokenizer.ggml.bos_token_id is not a token id \(below 4\)$"
{ printf 'GGUF'; le 3 4; le 0 8; le 1 8; str general.architecture; le 8 4; str llama; } >"$TMP/none.gguf"
refuse none "$TMP/none.gguf" "^stconvert: .*none.gguf: no tensors and no tokenizer.ggml.model: nothing to write$"
sed 's/gpt-2/falc2/' "$TMP/tiny.gguf" >"$TMP/pre.gguf"
refuse pre "$TMP/pre.gguf" "tokenizer.ggml.pre 'falc2' is not rebuilt \(gpt-2, llama-bpe, qwen2\)$"
finish
