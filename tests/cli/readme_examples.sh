# Every command example of README.md, run as written (issue 23). The
# examples are read from README.md when the test runs: each command line
# of an indented or shell-fenced code block (the text before its comment
# is its key) must be one tests/cli/readme_table.bash knows, else the
# test fails naming the line; a line the table knows that README.md no
# longer has fails too, so neither list goes stale. The ```c program is
# built against this build's libst and run.
#
# Each example runs by bash, unchanged, in a folder of its own that is
# also its HOME, holding copies of the files it names under the names it
# uses (models/gpt2, models/llama/, epoch3.pt, ~/.cache/huggingface/hub,
# ...), with the built tools first on PATH. The table gives each its exit
# code and one fact of its output that something other than the tools
# knows: a count made from the safetensors header with jq, the values a
# fixture script computed with numpy or PyTorch, sha256sum, GPT-2's and
# Llama 3's token ids, ggml's decoded floats.
#
# What the suite cannot have (a network, root, a 1 GB model, PyTorch) is
# listed by not_run with the reason; PyTorch's trace runs when python3
# has numpy and torch, and is skipped with a message otherwise.
. "$(dirname "$0")/lib.bash"
. "$(dirname "$0")/gguf_lib.bash"
export ST_NO_PROGRESS=1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
README=${ST_README:-$SRC/README.md} # ST_README: another file, to test this test
BIN=$(cd "$BIN" && pwd)
export PATH=$BIN:$PATH # the checks run the tools too
if ! command -v jq >/dev/null; then
	fail "jq is not installed: the README's examples use it (bash .ci/setup installs it)"
	finish
	exit
fi

# --- the table ----------------------------------------------------------------
# ex 'COMMAND' RC 'INPUTS' 'KEEPS' 'CHECK'
#   INPUTS  NAME=SOURCE ... copied into the example's folder (SOURCE: td/X
#           is testdata/X, src/X the source tree's X, else the pool of
#           fixtures made below and files earlier examples kept)
#   KEEPS   NAME or POOLNAME=NAME ...: files the example writes that later
#           examples use, copied to the pool
#   CHECK   bash run in the example's folder after it: $OUT and $ERR are
#           its stdout and stderr
# not_run 'COMMAND' 'REASON'
declare -A E_RC E_IN E_KEEP E_CHECK E_NEEDS NOT_RUN SEEN
ex() { E_RC[$1]=$2; E_IN[$1]=$3; E_KEEP[$1]=$4; E_CHECK[$1]=$5; }
not_run() { NOT_RUN[$1]=$2; }
# needs 'COMMAND' WHAT: run it only when WHAT (torch) is there.
needs() { E_NEEDS[$1]=$2; }

# Checks, for CHECK snippets. Each counts one pass or one failure.
# is WHAT GOT WANT (an empty WANT is a check that could not compute it)
is() {
	if [ -z "$3" ]; then fail "$EX: $1: no expected value (the check's own count failed)"
	elif [ "$2" = "$3" ]; then ok; else fail "$EX: $1: got '$2', expected '$3'"; fi
}
# same WHAT FILE1 FILE2: the same bytes, and not none.
same() {
	cat "$2" >"$TMP/same.1"; cat "$3" >"$TMP/same.2"
	if [ -s "$TMP/same.2" ] && cmp -s "$TMP/same.1" "$TMP/same.2"; then ok; else fail "$EX: $1"; fi
}
# out_has REGEX / err_has REGEX: a line of stdout / stderr matches.
out_has() { if grep -Eq -- "$1" "$OUT"; then ok; else fail "$EX: stdout does not match /$1/:"; head -5 "$OUT" | sed 's/^/  /' >&2; fi; }
err_has() { if grep -Eq -- "$1" "$ERR"; then ok; else fail "$EX: stderr does not match /$1/:"; head -5 "$ERR" | sed 's/^/  /' >&2; fi; }
# holds DESCRIPTION CMD...: CMD succeeds.
holds() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok; else fail "$EX: $what"; fi; }

# header FILE: a safetensors file's JSON header, read here with od and jq.
header() {
	local n
	n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
	tail -c +9 "$1" | head -c "$n"
}
# tensors FILE...: "name dtype shape" per tensor of the files' headers.
tensors() {
	local f
	for f; do header "$f" | jq -r 'to_entries[] | select(.key != "__metadata__") |
		"\(.key) \(.value.dtype) \(.value.shape | map(tostring) | join(","))"'; done | sort
}
# params FILE...: the number of values the headers' tensors hold.
params() {
	local f
	for f; do header "$f" | jq '[to_entries[] | select(.key != "__metadata__") |
		.value.shape | reduce .[] as $d (1; . * $d)] | add // 0'; done | awk '{ n += $1 } END { print n }'
}
# tensor_bytes FILE NAME: the data bytes of tensor NAME of FILE.
tensor_bytes() {
	local n b e
	n=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
	read -r b e < <(header "$1" | jq -r --arg t "$2" '.[$t].data_offsets | "\(.[0]) \(.[1])"')
	tail -c +$((9 + n + b)) "$1" | head -c $((e - b))
}

# commas N: N with thousands separators, as the tools print counts.
commas() { sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta' <<<"$1"; }
# f32_hex FILE NAME: tensor NAME's F32 values as hex bit patterns, one a line.
f32_hex() { tensor_bytes "$1" "$2" | od -An -v -t x4 | tr -s ' ' '\n' | sed '/^$/d'; }
# vocab_ids VOCAB TEXT: the ids llama.cpp's tokenizer tests give TEXT
# (testdata/tokenizers/VOCAB.inp and .out), comma-separated.
vocab_ids() {
	local i
	i=$(awk -v t="$2" '/^__ggml_vocab_test__$/ { i++; next } $0 == t { print i + 1; exit }' \
		"$TESTDATA/tokenizers/$1.inp")
	sed -n "${i}p" "$TESTDATA/tokenizers/$1.out" | sed -E 's/^ +//; s/ +/,/g'
}
. "$(dirname "$0")/readme_table.bash"

# --- fixtures -----------------------------------------------------------------
P=$TMP/pool
mkdir -p "$P" "$TMP/shims" "$TMP/res"
# A random GPT-2 with GPT-2's tokenizer (as .ci/demo makes it).
"$BIN/gpt2export" --random "$P/gpt2" --layers 2 --heads 4 --width 64 --context 64 --seed 1 \
	--tokenizer "$TESTDATA/gpt2-tokenizer" >/dev/null 2>&1 || fail "fixture: gpt2export --random"
# The F32 model's logits, the reference a BF16 copy is checked against.
"$BIN/gpt2run" --model-dir "$P/gpt2" --ids 464,3290 --logits-out "$P/gpt2-logits.safetensors" \
	>/dev/null 2>&1 || fail "fixture: gpt2run --logits-out"
# A sharded Llama 3 snapshot (2 shards and an index), without its references.
cp -a "$TESTDATA/llama/llama3" "$P/llama" && rm -f "$P"/llama/ref*.safetensors "$P"/llama/trace_*.safetensors
# A Llama GGUF file with a Q4_K matrix, built here byte by byte: ggml's
# blocks of testdata/ggml/q4_k.bin (2816 values: 11 rows of 256) beside
# F32 tensors, and Llama's attention metadata (2 blocks, 4 heads, 2 KV
# heads, width 256: head_dim 64).
gguf_kv_u32() { str "$1"; le 4 4; le "$2" 4; }
gguf_tensor() { str "$1"; le 2 4; le "$2" 8; le "$3" 8; le "$4" 4; le "$5" 8; }
{
	printf 'GGUF'; le 3 4; le 3 8; le 7 8
	str general.architecture; le 8 4; str llama
	gguf_kv_u32 general.quantization_version 2
	gguf_kv_u32 llama.block_count 2
	gguf_kv_u32 llama.embedding_length 256
	gguf_kv_u32 llama.attention.head_count 4
	gguf_kv_u32 llama.attention.head_count_kv 2
	gguf_kv_u32 llama.context_length 8192
	gguf_tensor token_embd.weight 256 4 0 0
	gguf_tensor blk.0.attn_q.weight 256 11 12 4096
	gguf_tensor blk.1.attn_q.weight 256 2 0 5696
} >"$P/llama-q4_k.gguf"
pad=$(((32 - $(stat -c %s "$P/llama-q4_k.gguf") % 32) % 32))
{
	head -c "$pad" /dev/zero
	head -c 4096 "$TESTDATA/ggml/q4_k.f32"
	cat "$TESTDATA/ggml/q4_k.bin"; head -c $((5696 - 4096 - 1584)) /dev/zero
	head -c 2048 "$TESTDATA/ggml/q4_k.f32"
} >>"$P/llama-q4_k.gguf"
# A one-tensor Q4_K GGUF: stconvert must write ggml's own floats.
mk_gguf_dims "$P/q4_k.gguf" 12 "256 11" "$TESTDATA/ggml/q4_k.bin" blk.0.ffn_up.weight
# ssh: the remote command, run here (the pipe is what the example shows).
printf '#!/bin/sh\nshift\nexec sh -c "$*"\n' >"$TMP/shims/ssh"
chmod +x "$TMP/shims/ssh"
# curl: a download from $URL is the file of that name in the example's
# folder (offline; the pipe into stinfo - is what the example shows).
printf '#!/bin/sh\nfor a; do u=$a; done\nexec cat "./${u##*/}"\n' >"$TMP/shims/curl"
chmod +x "$TMP/shims/curl"
export URL=https://huggingface.co/openai-community/gpt2/resolve/main
has_torch=0
python3 -c 'import numpy, torch' >/dev/null 2>&1 && has_torch=1

# --- the examples, in README order --------------------------------------------
# extract: "LINE<TAB>COMMAND LINE" for each command line of a code block
# (comment lines and blank lines are not commands; a fenced block in
# another language than sh/bash/shell/console is named on stderr).
extract() {
	awk '
	/^```/ { if (!fence) { fence = 1; lang = substr($0, 4); sub(/[ \t].*/, "", lang)
	             shell = (lang == "" || lang ~ /^(sh|bash|shell|console)$/)
	             if (!shell && lang != "c") printf "README.md:%d: a ```%s block: not commands\n", NR, lang > "/dev/stderr" }
	         else fence = 0
	         next }
	fence && !shell { next }
	fence || /^    / { l = $0; sub(/^[ \t]+/, "", l); sub(/^\$ /, "", l)
	                   if (l != "" && l !~ /^#/) printf "%d\t%s\n", NR, l }
	' "$README"
}
# key LINE: the command without its comment and trailing blanks.
key() { sed -E 's/[[:space:]]+#.*$//; s/[[:space:]]+$//' <<<"$1"; }

# stage NAME=SOURCE...: copy the inputs into the current folder.
stage() {
	local item name from
	for item in $1; do
		name=${item%%=*}; from=${item#*=}
		case $from in
		td/*) from=$TESTDATA/${from#td/} ;;
		src/*) from=$SRC/${from#src/} ;;
		*) from=$P/$from ;;
		esac
		if [ ! -e "$from" ]; then
			echo "missing input $name ($from)"; return 1
		fi
		mkdir -p "$(dirname "$name")"
		cp -a "$from" "$name"
	done
}

run_example() {
	local n=$1 line=$2 k=$3 W=$TMP/ex/$1
	EX="README.md:$n: $k"
	OUT=$TMP/res/$n.out ERR=$TMP/res/$n.err
	if [ "${E_NEEDS[$k]:-}" = torch ] && [ "$has_torch" = 0 ]; then
		echo "skip: $EX: needs python3 with numpy and torch"
		return
	fi
	mkdir -p "$W"
	local why
	if ! why=$(cd "$W" && stage "${E_IN[$k]}"); then
		fail "$EX: $why"
		return
	fi
	(cd "$W" && HOME=$W PATH=$TMP/shims:$PATH timeout 120 bash -c "$line") >"$OUT" 2>"$ERR"
	local rc=$?
	if [ "${README_EXAMPLES_SHOW:-0}" = 1 ]; then
		echo "=== $EX (exit $rc)"; head -c 3000 "$OUT"; sed 's/^/  err: /' "$ERR" | head -c 2000
	fi
	if [ "$rc" != "${E_RC[$k]}" ]; then
		fail "$EX: exit $rc, expected ${E_RC[$k]}"
		sed 's/^/  stderr: /' "$ERR" | head -5 >&2
		return
	fi
	ok
	cd "$W" && eval "${E_CHECK[$k]}"
	cd "$TMP" || exit 1
	local item
	for item in ${E_KEEP[$k]}; do
		if [ -e "$W/${item#*=}" ]; then cp -a "$W/${item#*=}" "$P/${item%%=*}"; else
			fail "$EX: wrote no ${item#*=}"; fi
	done
}

# c_blocks: the ```c blocks, each line as it is, a line "```" after each.
c_blocks() { awk '/^```c$/ { c = 1; next } c && /^```/ { c = 0; print "```"; next } c' "$README"; }
# c_example FILE: README's C program (its #include lines, then the rest as
# main's body) built against this build's libst.so and run in a folder with
# models/gpt2: it must list the tensors the header names.
c_example() {
	local d=$TMP/ex/c lib
	lib=$(dirname "${ST_REAL_BIN:-$BIN}")/lib
	mkdir -p "$d/models"
	cp -a "$P/gpt2" "$d/models/gpt2"
	{
		grep '^#include' "$1"
		echo '#include <stdio.h>'
		echo 'int main(void) {'
		grep -v '^#include' "$1"
		echo 'return 0; }'
	} >"$d/x.c"
	EX="README.md: the C example"
	# shellcheck disable=SC2086 # ST_TEST_CFLAGS: flags, word-split
	if ! cc ${ST_TEST_CFLAGS:-} -I"$SRC/include" "$d/x.c" -L"$lib" -lst -Wl,-rpath,"$lib" \
		-o "$d/x" 2>"$d/cc.err"; then
		fail "$EX: does not build:"; head -5 "$d/cc.err" >&2; return
	fi
	(cd "$d" && ./x) >"$d/out" 2>"$d/err"
	is "exit" "$?" 0
	is "tensor names" "$(sort "$d/out" | tr '\n' ' ')" \
		"$(tensors "$d/models/gpt2/model.safetensors" | cut -d' ' -f1 | tr '\n' ' ')"
}
n_c=0
while IFS= read -r l; do
	if [ "$l" = '```' ]; then
		c_example "$TMP/block$n_c.c"; n_c=$((n_c + 1))
	else
		printf '%s\n' "$l" >>"$TMP/block$n_c.c"
	fi
done < <(c_blocks)

lines=$(extract)
if [ -n "$lines" ]; then ok; else fail "README.md: no example found"; fi
while IFS=$'\t' read -r n line; do
	k=$(key "$line")
	SEEN[$k]=1
	if [ -n "${NOT_RUN[$k]+x}" ]; then
		echo "not run: README.md:$n: $k: ${NOT_RUN[$k]}"
	elif [ -n "${E_RC[$k]+x}" ]; then
		run_example "$n" "$line" "$k"
	else
		fail "README.md:$n: an example this test does not know (add it to tests/cli/readme_table.bash): $k"
	fi
done <<<"$lines"
for k in "${!E_RC[@]}" "${!NOT_RUN[@]}"; do
	[ -n "${SEEN[$k]+x}" ] || fail "tests/cli/readme_table.bash lists an example README.md does not have: $k"
done
finish
