# '-' as the input where one safetensors file is read (issue 23, item 2):
# stinfo - (summary, --json, --tensors, --markdown, --memory, --check,
# --stats, --dump) and stdiff A - / - B, from a pipe and from a redirect.
# What they print is what they print for the file, byte for byte, with the
# path replaced by <stdin>; the sizes are the stream's, counted. Refused,
# each in one line with exit 2: another format on stdin (GGUF, zip), a
# terminal, '-' twice, and what reads by path (--verify, --hash, stconvert
# gpt2run --model-dir, gpt2export IN). stconvert - OUT converts the stream.
. "$(dirname "$0")/lib.bash"
export ST_NO_PROGRESS=1
S=$BIN/stinfo
D=$BIN/stdiff
cd "$TMP" || exit 2

# The path as a sed pattern, every character taken literally.
literal() { printf '%s' "$1" | sed 's/[][\.*^$/|]/\\&/g'; }

# compare NAME WANT: NAME-pipe's and NAME-redir's stdout and stderr equal
# NAME-file's with the file's path replaced by <stdin>.
compare() {
	local name=$1 pat=$2 k s
	for k in out err; do
		sed "s|$pat|${STDIN_AS:-<stdin>}|g" "$TMP/$name-file.$k" > "$TMP/$name-want.$k"
		for s in pipe redir; do
			if cmp -s "$TMP/$name-want.$k" "$TMP/$name-$s.$k"; then ok; else
				fail "$name: $s std$k differs from the file's"
				diff -u "$TMP/$name-want.$k" "$TMP/$name-$s.$k" | head -10 >&2
			fi
		done
	done
}

# same NAME WANT FILE TOOL ARGS...: ARGS hold '@' where the path goes; run
# with FILE, with '-' reading a pipe of FILE and with '-' redirected from
# FILE, each exiting WANT, and compare.
same() {
	local name=$1 want=$2 file=$3 a=() b=() x
	shift 3
	for x in "$@"; do
		if [ "$x" = @ ]; then a+=("$file"); b+=(-); else a+=("$x"); b+=("$x"); fi
	done
	run "$name-file" "$want" "${a[@]}"
	run "$name-pipe" "$want" "${b[@]}" < <(cat "$file")
	run "$name-redir" "$want" "${b[@]}" < "$file"
	compare "$name" "$(literal "$file")"
}

# Every fixture of the format's rules, valid and not: the summary and the
# full check's JSON document (every problem, with its message).
for f in "$TESTDATA"/format/*.safetensors; do
	n=$(basename "$f" .safetensors)
	case $n in ok_*) want=0 check=0 ;; *) want=2 check=1 ;; esac
	same "$n-summary" $want "$f" "$S" @
	same "$n-check-json" $check "$f" "$S" --check --json @
done

# Real checkpoints: a GPT-2 shard's worth, dtypes, statistics, an F8 file
# with its scales, one shard of a sharded snapshot.
run random 0 "$BIN/gpt2export" --random m --layers 1 --heads 2 --width 64 --vocab 300 --context 32
cp m/model.safetensors alone.safetensors # by path, config.json is beside m's
fixtures=(alone.safetensors "$TESTDATA"/stinfo/dtypes.safetensors
          "$TESTDATA"/stinfo/stats.safetensors "$TESTDATA"/quant/fp8.safetensors)
fixtures+=("$(ls "$TESTDATA"/index/sharded/*.safetensors | head -1)")
i=0
for f in "${fixtures[@]}"; do
	i=$((i + 1))
	same "fx$i-summary" 0 "$f" "$S" @
	same "fx$i-all" 0 "$f" "$S" --all --verbose @
	STDIN_AS='\\<stdin>' same "fx$i-markdown" 0 "$f" "$S" --markdown @
	same "fx$i-json" 0 "$f" "$S" --json @
	same "fx$i-tensors" 0 "$f" "$S" --tensors '*' --json @
	same "fx$i-stats" 0 "$f" "$S" --stats @
	same "fx$i-stats-json" 0 "$f" "$S" --stats --json @
	same "fx$i-check" 0 "$f" "$S" --check @
	same "fx$i-memory" 0 "$f" "$S" --memory @
	same "fx$i-memory-json" 0 "$f" "$S" --memory --json @
done
# From '-' there is no directory, so no config.json is read: by path, the
# GPT-2 file beside m's config.json gets its parameters checked too.
same dump 0 alone.safetensors "$S" --dump h.0.ln_1.weight @
run dump-npy-file 0 "$S" --dump h.0.ln_1.bias --output file.npy alone.safetensors
run dump-npy-pipe 0 "$S" --dump h.0.ln_1.bias --output pipe.npy - < <(cat alone.safetensors)
if cmp -s pipe.npy file.npy; then ok; else fail "dump --output: .npy differs"; fi
run config-file 0 "$S" m/model.safetensors
expect_out config-file 'config'
run config-pipe 0 "$S" - < <(cat m/model.safetensors)
if grep -q config config-pipe.out; then fail "config-pipe: a config.json was read"; else ok; fi
# stdin beside other PATHs: the entries of one array.
run several-file 0 "$S" --json alone.safetensors "$TESTDATA"/stinfo/dtypes.safetensors
run several-pipe 0 "$S" --json - "$TESTDATA"/stinfo/dtypes.safetensors < <(cat alone.safetensors)
sed 's|alone\.safetensors|<stdin>|g' several-file.out > several-want.out
if cmp -s several-want.out several-pipe.out; then ok; else fail "several: the array differs"; fi

# Truncated stream, stream longer than its header says: the file's errors.
head -c 1000 alone.safetensors > cut.safetensors
same cut 2 cut.safetensors "$S" @
expect_err cut-pipe '^stinfo: <stdin>: file truncated'
same cut-check 1 cut.safetensors "$S" --check @
same cut-stats 2 cut.safetensors "$S" --stats @
head -c 20 alone.safetensors > cut-header.safetensors
same cut-header 2 cut-header.safetensors "$S" @
expect_err cut-header-pipe '^stinfo: <stdin>: file truncated: the header needs'
{ cat alone.safetensors; printf 'extra'; } > long.safetensors
same long 2 long.safetensors "$S" @
same long-stats 2 long.safetensors "$S" --stats @
same long-check 1 long.safetensors "$S" --check @
: > empty.safetensors
same empty 2 empty.safetensors "$S" @
expect_err empty-pipe '^stinfo: <stdin>: file is 0 bytes'

# Another format on stdin: one line saying what it is.
gguf=$(ls "$TESTDATA"/gguf/ok_*.gguf | head -1)
run gguf 2 "$S" - < <(cat "$gguf")
expect_err gguf '^stinfo: <stdin>: a GGUF file, not safetensors: only a safetensors file can be read from a stream'
if [ "$(wc -l < gguf.err)" = 1 ]; then ok; else fail "gguf: more than one line"; fi
run gguf-stats 2 "$S" --stats - < <(cat "$gguf")
expect_err gguf-stats 'a GGUF file, not safetensors'
for t in zip legacy tar; do
	run "$t" 2 "$S" - < <(cat "$TESTDATA/torch/ckpt.$t.bin")
	expect_err "$t" '^stinfo: <stdin>: a .*, not safetensors: only a safetensors file can be read from a stream'
	# Redirected, a PyTorch file is a file: read as its path is.
	run "$t-file" 0 "$S" --json "$TESTDATA/torch/ckpt.$t.bin"
	run "$t-redir" 0 "$S" --json - < "$TESTDATA/torch/ckpt.$t.bin"
	sed "s|$(literal "$TESTDATA/torch/ckpt.$t.bin")|<stdin>|g" "$t-file.out" > "$t-want.out"
	if cmp -s "$t-want.out" "$t-redir.out"; then ok; else fail "$t: redirect differs from the path"; fi
	run "$t-check" 0 "$S" --check - < "$TESTDATA/torch/ckpt.$t.bin"
done
printf 'hello, this is text\n' > text.txt
same text 2 text.txt "$S" @
expect_err text-pipe '^stinfo: <stdin>: this is a text file, not a safetensors file'
run text-dump 2 "$S" --dump x - < <(cat text.txt)
expect_err text-dump 'text file'

# Refused: '-' twice, what reads by path.
run twice 2 "$S" - - < /dev/null
expect_err twice "'-' \(standard input\) can be read once"
run verify 2 "$S" --verify - < alone.safetensors
expect_err verify "^stinfo: --verify reads a checkpoint by its path and cannot read '-'"
run hash 2 "$S" --hash - < alone.safetensors
expect_err hash "^stinfo: --hash reads a checkpoint by its path"
run gpt2run-tok 2 "$BIN/gpt2run" --model-dir - --tokenize --prompt hi < alone.safetensors
expect_err gpt2run-tok "^gpt2run: --model-dir reads a checkpoint by its path"
run gpt2run 2 "$BIN/gpt2run" --model-dir - --ids 1,2 < alone.safetensors
expect_err gpt2run "^gpt2run: --model-dir reads a checkpoint by its path"
run gpt2export 2 "$BIN/gpt2export" - out-dir < alone.safetensors
expect_err gpt2export "^gpt2export: IN reads a checkpoint by its path"
if [ -e ./- ]; then fail "a file named '-' was made"; else ok; fi

# stconvert - OUT: the bytes and the report of stconvert FILE OUT; - - too.
run conv-file 0 "$BIN/stconvert" --to bf16 alone.safetensors conv-file.safetensors
run conv-pipe 0 "$BIN/stconvert" --to bf16 - conv-pipe.safetensors < <(cat alone.safetensors)
run conv-redir 0 "$BIN/stconvert" --to bf16 - conv-redir.safetensors < alone.safetensors
sed -i 's/conv-[a-z]*\.safetensors/OUT/' conv-file.err conv-pipe.err conv-redir.err
compare conv 'alone\.safetensors'
for s in pipe redir; do
	if cmp -s conv-$s.safetensors conv-file.safetensors; then ok; else fail "stconvert - ($s): bytes differ"; fi
done
run conv-both 0 sh -c "cat alone.safetensors | '$BIN/stconvert' --to f16 - - > both.safetensors"
run conv-both-ref 0 "$BIN/stconvert" --to f16 alone.safetensors both-ref.safetensors
if cmp -s both.safetensors both-ref.safetensors; then ok; else fail "stconvert - -: bytes differ"; fi
run conv-gguf 2 "$BIN/stconvert" - conv2.safetensors < <(cat "$gguf")
expect_err conv-gguf '^stconvert: <stdin>: a GGUF file, not safetensors'
if [ -e conv2.safetensors ]; then fail "stconvert - < GGUF: an output was written"; else ok; fi

# stdiff with one side '-': the same report as with the file.
SD=$TESTDATA/stdiff
same diff-b 1 "$SD"/b.safetensors "$D" "$SD"/a.safetensors @
same diff-a 1 "$SD"/a.safetensors "$D" @ "$SD"/b.safetensors
same diff-json 1 "$SD"/b.safetensors "$D" --json "$SD"/a.safetensors @
same diff-names 1 "$SD"/b.safetensors "$D" --names-only "$SD"/a.safetensors @
same diff-self 0 alone.safetensors "$D" m/model.safetensors @
same diff-fp8 0 "$TESTDATA"/quant/fp8.safetensors "$D" @ "$TESTDATA"/quant/fp8.safetensors
same diff-cut 2 cut.safetensors "$D" alone.safetensors @
J=$TESTDATA/gguf/judge
same diff-map 0 "$J"/model/model.safetensors "$D" --map gpt2 -v @ "$J"/expected-f32.gguf
same diff-map-json 0 "$J"/model/model.safetensors "$D" --json "$J"/expected-q8_0.gguf @
run diff-both 2 "$D" - - < alone.safetensors
expect_err diff-both "'-' \(standard input\) can be one side only"
run diff-gguf 2 "$D" alone.safetensors - < <(cat "$gguf")
expect_err diff-gguf '<stdin>: a GGUF file, not safetensors'

# --key picks a sub-dictionary by path only: refused with '-', not ignored.
run key-stinfo 2 "$S" --key state_dict - < "$TESTDATA/torch/ckpt.zip.bin"
expect_err key-stinfo "^stinfo: --key cannot be used with '-' \(standard input\)"
run key-stconvert 2 "$BIN/stconvert" --key state_dict - key.safetensors < "$TESTDATA/torch/ckpt.zip.bin"
expect_err key-stconvert "^stconvert: --key cannot be used with '-'"
[ ! -e key.safetensors ] && ok || fail "key-stconvert: wrote OUT"

# A terminal on stdin: refused before anything is read.
if command -v script >/dev/null; then
	for c in "'$S' -" "'$S' --check -" "'$S' --stats -" "'$D' alone.safetensors -"; do
		script -qec "$c" /dev/null > tty.txt 2>&1
		rc=$?
		if [ "$rc" = 2 ]; then ok; else fail "terminal ($c): exit $rc, expected 2"; fi
		if grep -q "refusing to read a checkpoint from a terminal" tty.txt; then ok; else
			fail "terminal ($c): no message"; sed 's/^/  /' tty.txt | head -3 >&2; fi
	done
fi
finish
