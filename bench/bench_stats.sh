#!/usr/bin/env bash
# bench_stats.sh - time stinfo --stats on a large F32 checkpoint, against
# a baseline build measured in the same run.
#
# Usage: bench/bench_stats.sh [BUILD_DIR] [SIZE_MB] [BASE_BUILD_DIR] [RUNS]
#        (defaults: build, 1024, none, 5)
#
# Makes one single-tensor F32 file of SIZE_MB MiB (values from a fixed
# linear congruential sequence, so every run sees the same data and no
# NaN) in a temporary directory under /tmp, reads it once so every run
# sees a warm page cache, then runs `stinfo --stats` RUNS times, and as
# many times with BASE_BUILD_DIR's stinfo when given, alternating the
# two so that load on the machine falls on both alike. It prints the
# median, minimum and maximum wall-clock seconds of each, the throughput,
# the ratio new/base of the medians, and each one's peak RSS (GNU time).
# The file is deleted on exit.
set -euo pipefail
build=${1:-build}
mb=${2:-1024}
base=${3:-}
runs=${4:-5}
new=$build/bin/stinfo
[ -x "$new" ] || { echo "bench_stats: $new not built" >&2; exit 2; }
if [ -n "$base" ]; then
	[ -x "$base/bin/stinfo" ] || { echo "bench_stats: $base/bin/stinfo not built" >&2; exit 2; }
fi

dir=$(mktemp -d /tmp/bench_stats.XXXXXX)
trap 'rm -rf "$dir"' EXIT
f=$dir/w.safetensors

. "$(dirname "$0")/lib.sh"
# Finite F32 values in [0.5, 1): 1 MiB made by awk, repeated.
LC_ALL=C awk 'BEGIN { x = 12345; for (i = 0; i < 262144; i++) {
	x = (x * 1103515245 + 12345) % 2147483648
	printf "%c%c%c%c", x % 256, int(x / 256) % 256, int(x / 65536) % 128, 63 } }' \
	>"$dir/block"
[ "$(stat -c %s "$dir/block")" = 1048576 ] || { echo "bench_stats: bad block" >&2; exit 2; }
blocks() { for _ in $(seq "$mb"); do cat "$dir/block"; done; }
st_f32_file "$f" "$mb" blocks
rm "$dir/block"
cat "$f" >/dev/null # warm the cache

"$new" --stats "$f" >/dev/null
for _ in $(seq "$runs"); do
	time_one new "$new" --stats "$f"
	if [ -n "$base" ]; then
		time_one base "$base/bin/stinfo" --stats "$f"
	fi
done
size=$(du -m "$f" | cut -f1)
printf 'stinfo --stats on one %s MB F32 tensor, warm cache, %s CPUs, %s runs each\n' \
	"$size" "$(nproc)" "$runs"
read -r nm nlo nhi < <(summary <"$dir/new.t")
read -r nc _ _ < <(summary <"$dir/new.c")
printf 'new   median %7.3f s (min %.3f, max %.3f)  %6.0f MB/s  CPU %.3f s  peak RSS %s KB\n' \
	"$nm" "$nlo" "$nhi" "$(awk -v s="$size" -v t="$nm" 'BEGIN { print s / t }')" \
	"$nc" "$(rss "$new" --stats "$f")"
if [ -n "$base" ]; then
	read -r bm blo bhi < <(summary <"$dir/base.t")
	read -r bc _ _ < <(summary <"$dir/base.c")
	printf 'base  median %7.3f s (min %.3f, max %.3f)  %6.0f MB/s  CPU %.3f s  peak RSS %s KB\n' \
		"$bm" "$blo" "$bhi" "$(awk -v s="$size" -v t="$bm" 'BEGIN { print s / t }')" \
		"$bc" "$(rss "$base/bin/stinfo" --stats "$f")"
	printf 'ratio new/base of the medians %.2f (goal <= 1), of CPU %.2f\n' \
		"$(awk -v a="$nm" -v b="$bm" 'BEGIN { print a / b }')" \
		"$(awk -v a="$nc" -v b="$bc" 'BEGIN { print a / b }')"
fi
