#!/usr/bin/env bash
# bench_gguf_stats.sh - stinfo --stats on a Q4_K_M GGUF file against the
# same command on the F16 GGUF file of the same model (issue 22: at most
# 2x), and cat of each file as the memory-bandwidth baseline, measured in
# the same run.
#
# Usage: bench/bench_gguf_stats.sh [BUILD_DIR] [ROUNDS] [SHAPE] [BASE_BUILD_DIR]
#        (defaults: build, 5, 1.5b, none)
#   NODE_LLAMA_CPP_DIR  a node_modules folder holding node-llama-cpp
#                       3.21.1 (default /work/ref/node_modules): its
#                       libllama quantizes
#   BENCH_DIR           where the GGUF files go (default: a temporary
#                       folder, removed at the end). Kept files are reused.
#
# Makes the model once: bench/qwen2_random.py's F16 GGUF of a random
# Qwen2-1.5B-shaped model (SHAPE 1.5b: 1.54 B parameters, 3.1 GB; 0.5b:
# Qwen2-0.5B's shapes, 988 MB), then bench/llama_quantize.py quantizes it
# to Q4_K_M with llama.cpp's llama_model_quantize (about 1 GB for 1.5b).
# Prints the Q4_K_M file's type table (what llama.cpp chose), warms the
# page cache (cat and one stinfo --stats of each), then ROUNDS rounds of,
# interleaved: cat F16, cat Q4_K_M, stinfo --stats on each with the
# default threads and with --threads 1 (and with BASE_BUILD_DIR's stinfo,
# default threads, when given). Prints each one's wall-clock median [min,
# max] and median CPU seconds, and the ratios Q4_K_M / F16, stinfo / cat
# and new / base of the medians. Not a test: nothing is asserted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rounds=${2:-5}
shape=${3:-1.5b}
base=${4:-}
S=$build/bin/stinfo
B=${base:+$base/bin/stinfo}
[ -x "$S" ] || { echo "bench_gguf_stats: $S not built" >&2; exit 2; }
nlc=${NODE_LLAMA_CPP_DIR:-/work/ref/node_modules}
lib=$(ls "$nlc"/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v*.so 2>/dev/null | head -1)
dir=${BENCH_DIR:-}
if [ -z "$dir" ]; then
	dir=$(mktemp -d /tmp/bench_gguf_stats.XXXXXX)
	trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
. "$here/lib.sh"

f16=$dir/qwen2-$shape-f16.gguf
q4=$dir/qwen2-$shape-q4_k_m.gguf
if [ ! -f "$f16" ]; then
	/usr/bin/python3 "$here/qwen2_random.py" "$dir/tmp" "$f16.part" f16 "$shape"
	rm -rf "$dir/tmp"
	mv "$f16.part" "$f16"
fi
if [ ! -f "$q4" ]; then
	[ -n "$lib" ] || { echo "bench_gguf_stats: no libllama under $nlc" >&2; exit 2; }
	/usr/bin/python3 "$here/llama_quantize.py" "$lib" "$f16" "$q4.part" 15 >"$dir/quantize.log" 2>&1 ||
		{ tail "$dir/quantize.log" >&2; exit 2; }
	mv "$q4.part" "$q4"
fi
echo "F16:    $(stat -c %s "$f16") B  $f16"
echo "Q4_K_M: $(stat -c %s "$q4") B  $q4"
"$S" "$q4" | sed -n '/^type /,/^$/p'

rm -f "$dir"/*.t "$dir"/*.c
load0=$(uptime | sed 's/.*load average: //')
cat "$f16" "$q4" >/dev/null
"$S" --stats "$f16" >/dev/null
"$S" --stats "$q4" >/dev/null
kinds="cat-f16 cat-q4 f16 q4 f16-t1 q4-t1${B:+ base-f16 base-q4}"
for _ in $(seq "$rounds"); do
	time_one cat-f16 cat "$f16"
	time_one cat-q4 cat "$q4"
	time_one f16 "$S" --stats "$f16"
	time_one q4 "$S" --stats "$q4"
	time_one f16-t1 "$S" --stats --threads 1 "$f16"
	time_one q4-t1 "$S" --stats --threads 1 "$q4"
	if [ -n "$B" ]; then
		time_one base-f16 "$B" --stats "$f16"
		time_one base-q4 "$B" --stats "$q4"
	fi
done

med() { summary <"$dir/$1.t" | awk '{print $1}'; }
echo "load average (1, 5, 15 min) at the start: $load0; at the end: $(uptime | sed 's/.*load average: //')"
echo "$rounds rounds, wall seconds median [min, max], CPU seconds median"
for k in $kinds; do
	read -r m lo hi < <(summary <"$dir/$k.t")
	c=$(summary <"$dir/$k.c" | awk '{print $1}')
	printf '  %-8s %7.3f [%.3f, %.3f]  CPU %.3f\n' "$k" "$m" "$lo" "$hi" "$c"
done
awk -v q="$(med q4)" -v f="$(med f16)" -v q1="$(med q4-t1)" -v f1="$(med f16-t1)" \
	-v cq="$(med cat-q4)" -v cf="$(med cat-f16)" 'BEGIN {
	printf "ratio Q4_K_M / F16: %.2f (default threads), %.2f (--threads 1)\n", q / f, q1 / f1
	printf "stinfo / cat: F16 %.1f, Q4_K_M %.1f (default threads)\n", f / cf, q / cq }'
[ -z "$B" ] || awk -v q="$(med q4)" -v f="$(med f16)" -v bq="$(med base-q4)" \
	-v bf="$(med base-f16)" 'BEGIN {
	printf "base: ratio Q4_K_M / F16 %.2f; new / base: F16 %.2f, Q4_K_M %.2f\n", bq / bf, f / bf, q / bq }'
