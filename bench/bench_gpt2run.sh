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

raw=$dir/raw.txt
: >"$raw"
for r in $(seq "$rounds"); do
	echo "round $r of $rounds" >&2
	"$bench" --raw -r 1 -t "$threads" --scaling "$dir/f32" >>"$raw"
	"$bench" --raw -r 1 -t "$threads" "$dir/bf16" >>"$raw"
	if [ -n "$llama" ]; then
		node "$here/llama_bench.mjs" "$llama" "$dir/f32.gguf" F32 1 "$threads" >>"$raw"
		node "$here/llama_bench.mjs" "$llama" "$dir/f16.gguf" F16 1 "$threads" >>"$raw"
	fi
done

# Medians over the rounds of each figure (its third column per round), and
# the ratios of the per-round figures' medians.
awk -v threads="$threads" -v rounds="$rounds" '
function med(key,   n, i, j, t, a) {
	n = cnt[key]
	for (i = 1; i <= n; i++) a[i] = val[key, i]
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	lo[key] = a[1]; hi[key] = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function fig(key) { return (key in cnt) ? sprintf("%.2f [%.2f, %.2f]", m[key], lo[key], hi[key]) : "-" }
{ key = $1 " " $2 " " $3; cnt[key]++; val[key, cnt[key]] = $4 }
END {
	for (k in cnt) m[k] = med(k)
	bw = m["machine - bandwidth"]; pk = m["machine - fma"]
	printf "machine: read bandwidth %.1f GB/s [%.1f, %.1f], F32 FMA peak %.0f GFLOP/s [%.0f, %.0f] (%d threads, %d rounds)\n\n", \
		bw, lo["machine - bandwidth"], hi["machine - bandwidth"], pk, lo["machine - fma"], hi["machine - fma"], threads, rounds
	printf "| what, %d threads | gpt2run, ms/token | llama.cpp, ms/token | limit, ms/token | gpt2run share of limit | gpt2run / llama.cpp |\n", threads
	printf "| --- | --- | --- | --- | --- | --- |\n"
	split("decode8 decode900 prompt864", what, " ")
	split("decode context 8|decode context ~900|prompt of 864", label, "|")
	for (d = 1; d <= 2; d++) {
		g = d == 1 ? "F32" : "BF16"; l = d == 1 ? "F32" : "F16"
		for (w = 1; w <= 3; w++) {
			gk = "gpt2 " g " " what[w]; lk = "llama " l " " what[w]; mk = "limit " g " " what[w]
			if (!(gk in cnt)) continue
			share = m[mk] / m[gk]
			ratio = (lk in cnt) ? sprintf("%.2f", m[gk] / m[lk]) : "-"
			printf "| %s, %s (llama.cpp %s) | %s | %s | %.2f | %.2f | %s |\n", label[w], g, l, fig(gk), fig(lk), m[mk], share, ratio
		}
	}
	printf "\n"
	if (("gpt2 BF16 decode8" in cnt) && ("gpt2 F32 decode8" in cnt))
		printf "BF16 / F32 decode (context 8): %.2f\n", m["gpt2 BF16 decode8"] / m["gpt2 F32 decode8"]
	if ("gpt2-1t F32 decode8" in cnt)
		printf "1 -> %d threads, F32: decode %.2fx, prompt %.2fx\n", threads, \
			m["gpt2-1t F32 decode8"] / m["gpt2 F32 decode8"], m["gpt2-1t F32 prompt864"] / m["gpt2 F32 prompt864"]
	if ("gpt2 F32 load" in cnt)
		printf "load: F32 %.0f ms, BF16 %.0f ms\n", m["gpt2 F32 load"], m["gpt2 BF16 load"]
}' "$raw"
