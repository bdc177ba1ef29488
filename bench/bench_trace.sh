#!/usr/bin/env bash
# bench_trace.sh - what gpt2run --trace costs on a GPT-2 small-sized model.
#
# Usage: bench/bench_trace.sh [BUILD_DIR] [SNAPSHOT_DIR] [THREADS] [RUNS]
#        (defaults: build, a random snapshot, all CPUs, 5)
#
# Without SNAPSHOT_DIR, makes a random GPT-2 small-sized snapshot (12
# layers, 12 heads, n_embd 768, vocab 50257, F32) with gpt2export --random.
# Then, alternating in one loop so that machine load hits both alike, runs
# a 64-token prompt with --logits-out (the baseline: one forward pass, the
# logits written) and with --trace, and prints the median wall time, peak
# RSS and output size of each and the ratio trace / baseline. Nothing is
# asserted.
set -euo pipefail
build=${1:-build}
snap=${2:-}
threads=${3:-$(nproc)}
runs=${4:-5}
run=$build/bin/gpt2run
[ -x "$run" ] || { echo "bench_trace: $run not built" >&2; exit 2; }
dir=$(mktemp -d /tmp/bench_trace.XXXXXX)
trap 'rm -rf "$dir"' EXIT
if [ -z "$snap" ]; then
	"$build/bin/gpt2export" --random "$dir/gpt2" --layers 12 --heads 12 \
		--width 768 --vocab 50257 --context 1024 --seed 1 >/dev/null
	snap=$dir/gpt2
fi
ids=$(seq 1000 1063 | paste -sd,)
cat "$snap"/*.safetensors >/dev/null # a warm page cache for every run
median() { sort -g | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
: >"$dir/base.t"; : >"$dir/trace.t"; : >"$dir/base.m"; : >"$dir/trace.m"
for i in $(seq "$runs"); do
	for mode in base trace; do
		if [ $mode = base ]; then out=(--logits-out "$dir/out.safetensors")
		else out=(--trace "$dir/out.safetensors"); fi
		/usr/bin/time -f "%e %M" -o "$dir/time" "$run" --model-dir "$snap" \
			--ids "$ids" -j "$threads" -q "${out[@]}"
		read -r t m <"$dir/time"
		echo "$t" >>"$dir/$mode.t"
		echo "$m" >>"$dir/$mode.m"
		stat -c %s "$dir/out.safetensors" >"$dir/$mode.size"
	done
done
echo "snapshot: $snap, 64-token prompt, $threads threads, $runs runs each"
for mode in base trace; do
	printf '%-6s median %6.2f s (min %.2f, max %.2f)  peak RSS %d MB  file %.1f MB\n' \
		"$mode" "$(median <"$dir/$mode.t")" "$(sort -g "$dir/$mode.t" | head -1)" \
		"$(sort -g "$dir/$mode.t" | tail -1)" "$(( $(median <"$dir/$mode.m") / 1024 ))" \
		"$(awk '{print $1 / 1e6}' "$dir/$mode.size")"
done
awk -v b="$(median <"$dir/base.t")" -v t="$(median <"$dir/trace.t")" \
	'BEGIN{printf "ratio trace / base: %.2f\n", t / b}'
