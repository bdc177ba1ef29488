#!/usr/bin/env bash
# bench_gpt2run.sh - gpt2run's speed on a GPT-2 small-sized model.
#
# Usage: bench/bench_gpt2run.sh [BUILD_DIR] [SNAPSHOT_DIR] [THREADS]
#        (defaults: build, a random snapshot, all CPUs)
#
# Without SNAPSHOT_DIR, makes a random GPT-2 small-sized snapshot (12
# layers, 12 heads, n_embd 768, vocab 50257, n_positions 1024, F32) with
# `gpt2export --random` in a temporary directory. Then, for the weights
# held as F32, BF16 and F16 (--dtype), runs a 64-token prompt and 64 greedy
# new tokens (best of 3) and prints gpt2run's own timings: load ms, prompt
# tokens/s, generated tokens/s. Speed is not asserted anywhere.
set -euo pipefail
build=${1:-build}
snap=${2:-}
threads=${3:-$(nproc)}
run=$build/bin/gpt2run
[ -x "$run" ] || { echo "bench_gpt2run: $run not built" >&2; exit 2; }
if [ -z "$snap" ]; then
	export_tool=$build/bin/gpt2export
	[ -x "$export_tool" ] || { echo "bench_gpt2run: give a snapshot, or build gpt2export" >&2; exit 2; }
	dir=$(mktemp -d /tmp/bench_gpt2run.XXXXXX)
	trap 'rm -rf "$dir"' EXIT
	snap=$dir/gpt2
	"$export_tool" --random "$snap" --layers 12 --heads 12 --width 768 \
		--vocab 50257 --context 1024 --seed 1 >/dev/null
fi
ids=$(seq 1000 1063 | paste -sd,)
cat "$snap"/*.safetensors >/dev/null # a warm page cache for every run
echo "snapshot: $snap, $threads threads"
for dtype in f32 bf16 f16; do
	best=""
	for i in 1 2 3; do
		out=$("$run" --model-dir "$snap" --dtype "$dtype" --ids "$ids" -n 64 \
			--greedy --ignore-eos --print-ids -j "$threads" 2>&1 >/dev/null)
		gen=$(sed -n 's/.*generated: .*(\([0-9.]*\) tokens\/s).*/\1/p' <<<"$out")
		if [ -z "$best" ] || awk "BEGIN{exit !($gen > ${best%% *})}"; then
			best="$gen $out"
		fi
	done
	echo "--dtype $dtype:"
	sed 's/^/  /' <<<"${best#* }"
done
