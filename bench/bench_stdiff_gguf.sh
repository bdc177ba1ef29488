#!/usr/bin/env bash
# bench_stdiff_gguf.sh - time stdiff comparing a GPT-2 snapshot with its
# Q8_0 GGUF through the name map, and its peak memory.
#
# Usage: bench/bench_stdiff_gguf.sh [BUILD_DIR] [BASE_BUILD_DIR] [RUNS] [WIDTH] [VOCAB]
#        (defaults: build, none, 5, 768, 50257)
#
# Writes a random 2-layer GPT-2 snapshot (gpt2export --random: F32, the
# token embedding VOCAB x WIDTH the largest tensor) and its Q8_0 GGUF
# (gpt2export --type q8_0) in a temporary directory under /tmp, reads both
# once so every run sees a warm page cache, then times `stdiff -q SNAPSHOT
# GGUF` (and BASE_BUILD_DIR's, when given) RUNS times each, alternating,
# with `cat` of the two files as the floor of reading them. It prints the
# median, minimum and maximum, the CPU median, the ratios to the floor and
# to the base, and each stdiff's peak resident memory (GNU time), of which
# the two files' mapped pages are a part. The files are deleted on exit.
set -euo pipefail
build=${1:-build}
base=${2:-}
runs=${3:-5}
width=${4:-768}
vocab=${5:-50257}
for b in "$build" ${base:+"$base"}; do
	[ -x "$b/bin/stdiff" ] || { echo "bench_stdiff_gguf: $b/bin/stdiff not built" >&2; exit 2; }
done
dir=$(mktemp -d /tmp/bench_stdiff_gguf.XXXXXX)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/lib.sh"

"$build/bin/gpt2export" --random "$dir/snap" --layers 2 --heads 12 --width "$width" \
	--vocab "$vocab" --context 1024 >/dev/null
"$build/bin/gpt2export" "$dir/snap" "$dir/m.gguf" --type q8_0 >/dev/null
S=$dir/snap G=$dir/m.gguf
cat "$S/model.safetensors" "$G" >/dev/null # warm the cache
"$build/bin/stdiff" -q "$S" "$G" || {
	echo "bench_stdiff_gguf: stdiff says the GGUF is not the snapshot quantized" >&2; exit 1; }
for _ in $(seq "$runs"); do
	time_one floor cat "$S/model.safetensors" "$G"
	time_one new "$build/bin/stdiff" -q "$S" "$G"
	[ -z "$base" ] || time_one base "$base/bin/stdiff" -q "$S" "$G"
done
printf 'GPT-2 snapshot %s MB (F32) against its Q8_0 GGUF %s MB, warm cache, %s CPUs, %s runs each\n' \
	"$(du -m "$S/model.safetensors" | cut -f1)" "$(du -m "$G" | cut -f1)" "$(nproc)" "$runs"
report "cat (floor)" floor
report stdiff new
printf 'stdiff peak RSS %s KB; ratio stdiff/cat of the medians %s\n' \
	"$(rss "$build/bin/stdiff" -q "$S" "$G")" "$(ratio new.t floor.t)"
if [ -n "$base" ]; then
	report "base stdiff" base
	printf 'base peak RSS %s KB; new/base of the medians %s, of CPU %s\n' \
		"$(rss "$base/bin/stdiff" -q "$S" "$G")" "$(ratio new.t base.t)" "$(ratio new.c base.c)"
fi
