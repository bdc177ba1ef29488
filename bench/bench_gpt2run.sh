#!/usr/bin/env bash
# bench_gpt2run.sh - gpt2run against the machine's limits and against
# llama.cpp, on GPT-2 small-sized random weights (issue 11's table).
#
# Usage: bench/bench_gpt2run.sh [BUILD_DIR] [ROUNDS] [THREADS]
#        (defaults: build, 5, 2)
#   NODE_LLAMA_CPP_DIR  a folder where `npm i -E node-llama-cpp@3.21.1` was
#                       run (outside the repository); unset or without it:
#                       gpt2run's figures only.
#   BENCH_DIR           where the snapshots and GGUF files go (default: a
#                       temporary folder, removed at the end).
#   BASE_GPT2RUN        another gpt2run (an older build) to time in each
#                       round too, through its own timing lines: decode at
#                       context 8 and the 864-token prompt.
#
# Makes a 124M snapshot in F32 and in BF16 (gpt2export --random, 12 layers,
# 12 heads, n_embd 768, vocab 50257, n_positions 1024, the same seed), and,
# for llama.cpp, the F32 snapshot as F32 and F16 GGUF files
# (bench/gguf_gpt2.py). Then ROUNDS rounds, each one measuring on the spot
# the read bandwidth and the FMA peak (bench_gpt2), gpt2run's figures
# (decode at context 8 and ~900, an 864-token prompt; F32 and BF16; F32 on
# one thread too), and llama.cpp's on F32 and F16 (bench/llama_bench.mjs),
# so that both sides meet the same load. Prints the medians over the
# rounds with [min, max], the shares of the limits and the ratios. Speed is
# never asserted anywhere; this is not a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rounds=${2:-5}
threads=${3:-2}
bench=$build/bench/bench_gpt2
export_tool=$build/bin/gpt2export
[ -x "$bench" ] && [ -x "$export_tool" ] ||
	{ echo "bench_gpt2run: build bench_gpt2 and gpt2export first" >&2; exit 2; }
dir=${BENCH_DIR:-}
if [ -z "$dir" ]; then
	dir=$(mktemp -d /tmp/bench_gpt2run.XXXXXX)
	trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
shape=(--layers 12 --heads 12 --width 768 --vocab 50257 --context 1024 --seed 1)
[ -f "$dir/f32/model.safetensors" ] || "$export_tool" --random "$dir/f32" "${shape[@]}" >/dev/null
[ -f "$dir/bf16/model.safetensors" ] || "$export_tool" --random "$dir/bf16" "${shape[@]}" --dtype bf16 >/dev/null

llama=""
if [ -n "${NODE_LLAMA_CPP_DIR:-}" ] && [ -d "$NODE_LLAMA_CPP_DIR/node_modules/node-llama-cpp" ]; then
	llama=$NODE_LLAMA_CPP_DIR/node_modules
	for t in f32 f16; do
		[ -f "$dir/$t.gguf" ] || /usr/bin/python3 "$here/gguf_gpt2.py" "$dir/f32" "$dir/$t.gguf" "$t"
	done
fi
cat "$dir"/f32/model.safetensors "$dir"/bf16/model.safetensors >/dev/null # warm page cache

# The prompts bench_gpt2 and llama_bench.mjs use: (1000 + 7919 t) mod V.
ids8=$(awk 'BEGIN { for (t = 0; t < 8; t++) printf "%s%d", t ? "," : "", (1000 + 7919 * t) % 50257 }')
ids864=$(awk 'BEGIN { for (t = 0; t < 864; t++) printf "%s%d", t ? "," : "", (1000 + 7919 * t) % 50257 }')
raw=$dir/raw.txt
: >"$raw"
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	"$bench" --raw -r 1 -t "$threads" --scaling "$dir/f32" >>"$raw"
	"$bench" --raw -r 1 -t "$threads" "$dir/bf16" >>"$raw"
	if [ -n "${BASE_GPT2RUN:-}" ]; then
		for d in f32 bf16; do
			D=$(tr a-z A-Z <<<"$d")
			out=$("$BASE_GPT2RUN" --model-dir "$dir/$d" --ids "$ids8" -n 33 --greedy \
				--ignore-eos --print-ids -j "$threads" 2>&1 >/dev/null)
			# 33 new tokens: the first comes from the prompt, then 32 forwards.
			awk -v D="$D" '/generated:/ { for (i = 1; i <= NF; i++) if ($i == "in") ms = $(i + 1) }
				END { printf "base %s decode8 %.4f 0 0\n", D, ms / 32 }' <<<"$out" >>"$raw"
			out=$("$BASE_GPT2RUN" --model-dir "$dir/$d" --ids "$ids864" -n 1 --greedy \
				--print-ids -j "$threads" 2>&1 >/dev/null)
			awk -v D="$D" '/prompt:/ { for (i = 1; i <= NF; i++) if ($i == "in") ms = $(i + 1) }
				END { printf "base %s prompt864 %.4f 0 0\n", D, ms / 864 }' <<<"$out" >>"$raw"
		done
	fi
	if [ -n "$llama" ]; then
		node "$here/llama_bench.mjs" "$llama" "$dir/f32.gguf" F32 1 "$threads" >>"$raw"
		node "$here/llama_bench.mjs" "$llama" "$dir/f16.gguf" F16 1 "$threads" >>"$raw"
	fi
done

# Medians over the rounds of each figure (the 4th column: a round's
# median), and of the per-round ratios gpt2run / llama.cpp.
awk -v threads="$threads" -v rounds="$rounds" '
function sortmed(n, a,   i, j, t) {
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	mlo = a[1]; mhi = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function med(key,   n, i, a) {
	n = cnt[key]
	for (i = 1; i <= n; i++) a[i] = val[key, i]
	m[key] = sortmed(n, a); lo[key] = mlo; hi[key] = mhi
}
function ratio(gk, lk,   n, i, a) {
	n = cnt[gk] < cnt[lk] ? cnt[gk] : cnt[lk]
	if (n == 0) return "-"
	for (i = 1; i <= n; i++) a[i] = val[gk, i] / val[lk, i]
	r = sortmed(n, a)
	return sprintf("%.2f [%.2f, %.2f]", r, mlo, mhi)
}
function fig(key, f) { return (key in cnt) ? sprintf(f " [" f ", " f "]", m[key], lo[key], hi[key]) : "-" }
{ key = $1 " " $2 " " $3; cnt[key]++; val[key, cnt[key]] = $4 }
END {
	for (k in cnt) med(k)
	printf "%d rounds, %d threads; median [min, max] over the rounds\n", rounds, threads
	printf "machine, measured beside the F32 figures: read bandwidth %s GB/s, F32 FMA peak %s GFLOP/s\n\n", \
		fig("machine F32 bandwidth", "%.1f"), fig("machine F32 fma", "%.0f")
	printf "| what, %d threads | gpt2run before, ms/token | gpt2run, ms/token | llama.cpp, ms/token | gpt2run, share of its limit | gpt2run / llama.cpp |\n", threads
	printf "| --- | --- | --- | --- | --- | --- |\n"
	split("decode8 decode900 prompt864", what, " ")
	split("decode, context 8|decode, context ~900|prompt of 864", label, "|")
	for (d = 1; d <= 2; d++) {
		g = d == 1 ? "F32" : "BF16"; l = d == 1 ? "F32" : "F16"
		for (w = 1; w <= 3; w++) {
			gk = "gpt2 " g " " what[w]; lk = "llama " l " " what[w]
			if (!(gk in cnt)) continue
			printf "| %s, %s (llama.cpp %s) | %s | %s | %s | %s | %s |\n", label[w], g, l, \
				fig("base " g " " what[w], w == 3 ? "%.3f" : "%.2f"), \
				fig(gk, w == 3 ? "%.3f" : "%.2f"), fig(lk, w == 3 ? "%.3f" : "%.2f"), \
				fig("share " g " " what[w], "%.2f"), ratio(gk, lk)
		}
	}
	printf "\n"
	printf "BF16 / F32 decode, context 8: %s\n", ratio("gpt2 BF16 decode8", "gpt2 F32 decode8")
	printf "gpt2run BF16 / llama.cpp F16 decode, context 8: %s\n", ratio("gpt2 BF16 decode8", "llama F16 decode8")
	if ("gpt2-1t F32 decode8" in cnt) {
		printf "1 -> %d threads, F32 decode: %s\n", threads, ratio("gpt2-1t F32 decode8", "gpt2 F32 decode8")
		printf "1 -> %d threads, F32 prompt: %s\n", threads, ratio("gpt2-1t F32 prompt864", "gpt2 F32 prompt864")
	}
	if ("base F32 decode8" in cnt) {
		printf "gpt2run / before, F32: decode %s, prompt %s\n", ratio("gpt2 F32 decode8", "base F32 decode8"), ratio("gpt2 F32 prompt864", "base F32 prompt864")
		printf "gpt2run / before, BF16: decode %s, prompt %s\n", ratio("gpt2 BF16 decode8", "base BF16 decode8"), ratio("gpt2 BF16 prompt864", "base BF16 prompt864")
	}
	printf "load: F32 %s ms, BF16 %s ms\n", fig("gpt2 F32 load", "%.0f"), fig("gpt2 BF16 load", "%.0f")
}' "$raw"
