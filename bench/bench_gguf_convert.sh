#!/usr/bin/env bash
# bench_gguf_convert.sh - stconvert GGUF -> one .safetensors file (every
# tensor decoded to F32 as ggml decodes it), against cp + sync of the F32
# file it writes (the bytes it must put on disk), in the same run.
#
# Usage: bench/bench_gguf_convert.sh [BUILD_DIR] [RUNS]   (defaults: build, 3)
#
# Makes a random GPT-2 124M snapshot with gpt2export --random and exports
# it to a Q8_0 GGUF and an F16 GGUF in a temporary directory under /tmp.
# Then, RUNS times in alternation with sync(1) before each: `stconvert -q
# --force Q8.gguf OUT.safetensors` (Q8_0 blocks decoded to F32), the same
# for the F16 GGUF (F16 kept: a copy), and `cp OUT COPY && sync COPY`.
# Prints the medians, the ratios to cp + sync, and stconvert's peak RSS
# (GNU time; the input GGUF is mapped, so it counts). Not a test.
set -eu
build=${1:-build}
runs=${2:-3}
bin=$(cd "$build/bin" && pwd)
dir=$(mktemp -d /tmp/bench_gguf_convert.XXXXXX)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/lib.sh"

"$bin/gpt2export" --random "$dir/m" >/dev/null 2>&1
"$bin/gpt2export" "$dir/m" "$dir/q8.gguf" --type q8_0 >/dev/null 2>&1
"$bin/gpt2export" "$dir/m" "$dir/f16.gguf" --type f16 >/dev/null 2>&1
"$bin/stconvert" -q "$dir/q8.gguf" "$dir/out.safetensors"
echo "q8.gguf $(stat -c %s "$dir/q8.gguf") B -> out.safetensors $(stat -c %s "$dir/out.safetensors") B"
for ((r = 0; r < runs; r++)); do
	sync
	time_one q8 "$bin/stconvert" -q --force "$dir/q8.gguf" "$dir/out.safetensors"
	sync
	time_one f16 "$bin/stconvert" -q --force "$dir/f16.gguf" "$dir/f16.safetensors"
	rm -f "$dir/copy"
	sync
	time_one cp sh -c "cp '$dir/out.safetensors' '$dir/copy' && sync '$dir/copy'"
done
q8=$(summary <"$dir/q8.t" | awk '{print $1}')
f16=$(summary <"$dir/f16.t" | awk '{print $1}')
cp=$(summary <"$dir/cp.t" | awk '{print $1}')
printf 'stconvert Q8_0 GGUF -> F32  %s s (median of %d)\n' "$q8" "$runs"
printf 'stconvert F16 GGUF -> F16   %s s\n' "$f16"
printf 'cp + sync of the F32 output %s s\n' "$cp"
awk -v a="$q8" -v b="$f16" -v c="$cp" 'BEGIN {
	printf "ratio Q8_0 / cp+sync %.2f, F16 / cp+sync %.2f\n", a / c, b / c }'
echo "stconvert Q8_0 peak RSS: $(rss "$bin/stconvert" -q --force "$dir/q8.gguf" "$dir/out.safetensors") KB"
