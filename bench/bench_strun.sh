#!/usr/bin/env bash
# bench_strun.sh - strun on a Qwen2-0.5B-shaped random BF16 model (issue
# 21's table), and llama.cpp on the same weights as BF16 and F16 GGUF.
#
# Usage: bench/bench_strun.sh [BUILD_DIR] [ROUNDS] [THREADS]
#        (defaults: build, 3, 2)
#   NODE_LLAMA_CPP_DIR  a node_modules folder holding node-llama-cpp
#                       3.21.1 (e.g. /work/ref/node_modules); unset or
#                       without it: strun's figures only.
#   BENCH_DIR           where the snapshot and GGUF files go (default: a
#                       temporary folder, removed at the end). Kept files
#                       are reused.
#
# Makes the model once (bench/qwen2_random.py: 24 layers, width 896, 14
# heads, 2 KV heads, vocab 151,936, tied, BF16, 988 MB), then ROUNDS
# rounds of: strun's load time, decode ms/token (8-token prompt, 32
# greedy tokens), a 512-token prompt, and peak RSS (/usr/bin/time), on 1
# thread and on THREADS; the same on an FP8 copy (stconvert --to
# f8_e4m3); llama.cpp's decode and 512-token prompt on the BF16 and F16
# GGUF files (bench/llama_bench.mjs), BF16 on 1 thread as well; and the
# machine's read bandwidth on 1 and THREADS threads (bench_fp8 -R, best
# of 5 passes over 253 MB), as the time one pass over the BF16 weights
# takes at it: decode reads every weight once a token, so that is its
# floor, and its 1 -> THREADS ratio is the most any decode can scale by.
# Prints the medians with [min, max], then ratios of figures of the same
# round.
# Speed is never asserted anywhere; this is not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rounds=${2:-3}
threads=${3:-2}
strun=$build/bin/strun
[ -x "$strun" ] || { echo "bench_strun: build strun first" >&2; exit 2; }
dir=${BENCH_DIR:-}
if [ -z "$dir" ]; then
	dir=$(mktemp -d /tmp/bench_strun.XXXXXX)
	trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
snap=$dir/qwen2
# The snapshot goes through libst's writer, as the FP8 copy does, so that
# both lie in the page cache alike: in 2 MiB folios, which strun's
# mappings map with huge pages (bench/README.md, "page cache").
if ! [ -f "$snap/model.safetensors" ] || ! [ -f "$dir/qwen2-bf16.gguf" ]; then
	/usr/bin/python3 "$here/qwen2_random.py" "$dir/py" "$dir/qwen2-bf16.gguf" bf16
	rm -rf "$snap"
	"$build/bin/stconvert" "$dir/py" "$snap" -q
	rm -rf "$dir/py"
fi
[ -f "$dir/qwen2-f16.gguf" ] || /usr/bin/python3 "$here/qwen2_random.py" "$dir/tmp" "$dir/qwen2-f16.gguf" f16
rm -rf "$dir/tmp"
[ -f "$dir/qwen2-fp8/model.safetensors" ] ||
	"$build/bin/stconvert" "$snap" "$dir/qwen2-fp8" --to f8_e4m3 -q
ids() { /usr/bin/python3 -c "print(','.join(str((1000 + 7919 * t) % 151936) for t in range($1)))"; }
ids8=$(ids 8)
ids512=$(ids 512)
cat "$snap/model.safetensors" "$dir/qwen2-fp8/model.safetensors" >/dev/null # warm

bytes=$(stat -c %s "$snap/model.safetensors")
out=$dir/results.txt
: >"$out"
# run LABEL MODEL THREADS: one round of strun's figures into $out.
run() {
	local label=$1 model=$2 j=$3 err=$dir/err.txt
	/usr/bin/time -f "rss %M" "$strun" --model-dir "$model" --ids "$ids8" -n 32 --greedy \
		--ignore-eos --print-ids -j "$j" >/dev/null 2>"$err"
	awk -v l="$label" -v r="$r" '/loaded/ {for (i = 1; i <= NF; i++) if ($i == "ms") print l, "load_ms", $(i - 1), r}
		/generated:/ {print l, "decode_ms", $6 / $3, r}
		/^rss/ {print l, "rss_mb", $2 / 1024, r}' "$err" >>"$out"
	"$strun" --model-dir "$model" --ids "$ids512" -n 1 --greedy --ignore-eos --print-ids \
		-j "$j" >/dev/null 2>"$err"
	awk -v l="$label" -v r="$r" '/prompt:/ {print l, "prompt512_ms", $6, r}' "$err" >>"$out"
}
# readbw THREADS: one pass over the weights at the read bandwidth, ms.
readbw() {
	[ -x "$build/bench/bench_fp8" ] || return 0
	"$build/bench/bench_fp8" -R -r 5 -t "$1" |
		awk -v b="$bytes" -v j="$1" -v r="$r" '/^read/ {print "read-j" j, "weights_read_ms", b / ($9 * 1e9) * 1e3, r}' >>"$out"
}
for r in $(seq "$rounds"); do
	readbw 1
	readbw "$threads"
	run "strun-bf16-j1" "$snap" 1
	run "strun-bf16-j$threads" "$snap" "$threads"
	run "strun-fp8-j$threads" "$dir/qwen2-fp8" "$threads"
	if [ -n "${NODE_LLAMA_CPP_DIR:-}" ] && [ -d "$NODE_LLAMA_CPP_DIR/node-llama-cpp" ]; then
		# BF16 on 1 thread too: llama.cpp's own scaling, the machine's
		# baseline for strun's.
		for tj in bf16:1 bf16:$threads f16:$threads; do
			t=${tj%:*} j=${tj#*:}
			[ "$tj" = bf16:1 ] && [ "$threads" = 1 ] && continue
			BENCH_VOCAB=151936 BENCH_PROMPT=512 node "$here/llama_bench.mjs" \
				"$NODE_LLAMA_CPP_DIR" "$dir/qwen2-$t.gguf" "$t" 1 "$j" |
				awk -v j="$j" -v r="$r" '$3 == "decode8" {print "llama.cpp-" $2 "-j" j, "decode_ms", $4, r}
					$3 == "prompt512" {print "llama.cpp-" $2 "-j" j, "prompt512_ms", $4 * 512, r}' >>"$out"
		done
	fi
done
echo "weights: $(stat -c %s "$snap/model.safetensors" | awk '{printf "%.0f MB", $1 / 1e6}')"
echo "what | median [min, max] over $rounds rounds"
sort "$out" | awk '{k = $1 " " $2; v[k] = v[k] " " $3} END {for (k in v) print k, v[k]}' |
	sort | while read -r label what vals; do
	echo "$vals" | tr ' ' '\n' | sort -g | awk -v l="$label" -v w="$what" '
		{a[NR] = $1} END {m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
		printf "%-20s %-13s %10.1f [%.1f, %.1f]\n", l, w, m, a[1], a[NR]}'
done
# Ratios of two figures of the same round (the machine's speed drifts
# between rounds, less within one): median [min, max] over the rounds.
# ratio A B WHAT [WHAT_B]: A's WHAT over B's (WHAT_B, default WHAT).
ratio() {
	awk -v a="$1" -v b="$2" -v w="$3" -v wb="${4:-$3}" '$2 == w && $1 == a {x[$4] = $3} $2 == wb && $1 == b {y[$4] = $3}
		END {for (r in x) if (r in y && y[r] > 0) print x[r] / y[r]}' "$out" | sort -g |
		awk -v l="$1/$2" -v w="$3" '{a[NR] = $1} END {if (!NR) exit;
			m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
			printf "%-40s %-13s %6.3f [%.3f, %.3f]\n", l, w, m, a[1], a[NR]}'
}
echo "ratios of the same round | median [min, max]"
ratio "strun-fp8-j$threads" "strun-bf16-j$threads" decode_ms
ratio "strun-bf16-j1" "strun-bf16-j$threads" decode_ms
ratio "strun-bf16-j1" "strun-bf16-j$threads" prompt512_ms
ratio "read-j1" "read-j$threads" weights_read_ms
ratio "strun-bf16-j1" "read-j1" decode_ms weights_read_ms
ratio "strun-bf16-j$threads" "read-j$threads" decode_ms weights_read_ms
ratio "llama.cpp-bf16-j1" "llama.cpp-bf16-j$threads" decode_ms
ratio "llama.cpp-bf16-j1" "llama.cpp-bf16-j$threads" prompt512_ms
for t in bf16 f16; do
	ratio "strun-bf16-j$threads" "llama.cpp-$t-j$threads" decode_ms
	ratio "strun-bf16-j$threads" "llama.cpp-$t-j$threads" prompt512_ms
done
