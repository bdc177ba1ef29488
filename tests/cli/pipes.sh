# '-' as standard output where one safetensors file is written: stconvert
# IN - (a safetensors, PyTorch or GGUF IN), gpt2run and strun --logits-out
# - and --trace -. The bytes are those of the same command writing a file;
# no file or directory named '-' appears; a terminal and a sharded '-' are
# refused (exit 2).
. "$(dirname "$0")/lib.bash"
export ST_NO_PROGRESS=1
C=$BIN/stconvert
cd "$TMP" || exit 2

run random 0 "$BIN/gpt2export" --random m --layers 1 --heads 2 --width 64 --context 32 || { finish; exit; }
src=m/model.safetensors

# same NAME FILE-A FILE-B
same() { if cmp -s "$2" "$3"; then ok; else fail "$1: $2 and $3 differ"; fi; }

run st_file 0 "$C" --to bf16 "$src" bf16.safetensors
run st_pipe 0 sh -c "'$C' --to bf16 '$src' - | cat > pipe.safetensors"
same st pipe.safetensors bf16.safetensors
run st_check 0 "$BIN/stinfo" --check pipe.safetensors
if [ -e ./- ]; then fail "a file named '-' was left"; else ok; fi
# The report goes to stderr, never into the data.
run st_redirect 0 sh -c "'$C' --to bf16 '$src' - > redirect.safetensors 2> report.txt"
same redirect redirect.safetensors bf16.safetensors
if grep -q "to BF16: 16 converted" report.txt; then ok; else fail "redirect: no report on stderr"; fi

run gguf_export 0 "$BIN/gpt2export" m m.gguf --type q8_0
run gguf_file 0 "$C" m.gguf gguf.safetensors
run gguf_pipe 0 sh -c "'$C' m.gguf - | cat > gguf-pipe.safetensors"
same gguf gguf-pipe.safetensors gguf.safetensors

run shards 2 "$C" --shard-size 1MB "$src" -
expect_err shards "OUT '-' \(standard output\) holds one file"
if command -v script >/dev/null; then
	script -qec "'$C' '$src' -" /dev/null > tty.txt 2>&1
	rc=$?
	if [ "$rc" = 2 ]; then ok; else fail "terminal: exit $rc, expected 2"; fi
	if grep -q "standard output is a terminal" tty.txt; then ok; else fail "terminal: no message"; fi
fi

for t in gpt2run strun; do
	run "$t-logits" 0 "$BIN/$t" --model-dir m --ids 1,2,3 --logits-out "$t-logits.safetensors"
	run "$t-logits-pipe" 0 sh -c "'$BIN/$t' --model-dir m --ids 1,2,3 --logits-out - > $t-logits-pipe.safetensors"
	same "$t-logits" "$t-logits-pipe.safetensors" "$t-logits.safetensors"
	run "$t-trace" 0 "$BIN/$t" --model-dir m --ids 1,2,3 --trace "$t-trace.safetensors"
	run "$t-trace-pipe" 0 sh -c "'$BIN/$t' --model-dir m --ids 1,2,3 --trace - | cat > $t-trace-pipe.safetensors"
	same "$t-trace" "$t-trace-pipe.safetensors" "$t-trace.safetensors"
	run "$t-both" 2 "$BIN/$t" --model-dir m --ids 1,2,3 --trace - --logits-out -
	expect_err "$t-both" "would both write to standard output"
done
if [ -e ./- ]; then fail "a file named '-' was left"; else ok; fi
finish
