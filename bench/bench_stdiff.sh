#!/usr/bin/env bash
# bench_stdiff.sh - time stdiff against cmp on two identical F32 checkpoints.
#
# Usage: bench/bench_stdiff.sh [BUILD_DIR] [SIZE_MB] [BASE_BUILD_DIR] [RUNS]
#        (defaults: build, 1024, none, 5)
#
# Makes two identical single-tensor F32 files of SIZE_MB MiB of random bytes
# in a temporary directory under /tmp, reads them once so both tools see a
# warm page cache, then times `cmp A B`, `stdiff -q A B` and `stdiff -q -j 1
# A B` (and BASE_BUILD_DIR's stdiff both ways, when given) RUNS times each,
# alternating them, and prints the median, minimum and maximum of each and
# the ratio stdiff/cmp of the medians. The goal (issue 4) is a ratio of at
# most 1.5. It also reports stdiff's peak resident memory (GNU time). The
# files are deleted on exit.
set -euo pipefail
build=${1:-build}
mb=${2:-1024}
base=${3:-}
runs=${4:-5}
stdiff=$build/bin/stdiff
[ -x "$stdiff" ] || { echo "bench_stdiff: $stdiff not built" >&2; exit 2; }
if [ -n "$base" ]; then
	[ -x "$base/bin/stdiff" ] || { echo "bench_stdiff: $base/bin/stdiff not built" >&2; exit 2; }
fi

dir=$(mktemp -d /tmp/bench_stdiff.XXXXXX)
trap 'rm -rf "$dir"' EXIT

. "$(dirname "$0")/lib.sh"
st_f32_file "$dir/a.safetensors" "$mb"
cp "$dir/a.safetensors" "$dir/b.safetensors"

A=$dir/a.safetensors B=$dir/b.safetensors
cat "$A" "$B" >/dev/null # warm the cache
"$stdiff" -q "$A" "$B" || {
	echo "bench_stdiff: stdiff says the identical files differ" >&2; exit 1; }
# Alternate the commands run after run, so that load on the machine
# falls on all of them alike.
for _ in $(seq "$runs"); do
	time_one cmp cmp "$A" "$B"
	time_one new "$stdiff" -q "$A" "$B"
	time_one new1 "$stdiff" -q -j 1 "$A" "$B"
	if [ -n "$base" ]; then
		time_one base "$base/bin/stdiff" -q "$A" "$B"
		time_one base1 "$base/bin/stdiff" -q -j 1 "$A" "$B"
	fi
done
rss=$(rss "$stdiff" -q "$A" "$B")
size=$(du -m "$A" | cut -f1)
line() { # LABEL NAME: wall median (min, max), throughput per file, CPU median
	read -r m lo hi < <(summary <"$dir/$2.t")
	read -r c _ _ < <(summary <"$dir/$2.c")
	printf '%-16s median %7.3f s (min %.3f, max %.3f)  %6.0f MB/s per file  CPU %.3f s\n' \
		"$1" "$m" "$lo" "$hi" "$(awk -v s="$size" -v t="$m" 'BEGIN { print s / t }')" "$c"
}
med() { summary <"$dir/$1" | cut -d' ' -f1; }
printf 'two identical %s MB F32 files, warm cache, %s CPUs, %s runs each\n' \
	"$size" "$(nproc)" "$runs"
line cmp cmp
line stdiff new
line "stdiff -j 1" new1
printf 'stdiff peak RSS %s KB\n' "$rss"
printf 'ratio stdiff/cmp of the medians %.2f (goal <= 1.5), of CPU %.2f\n' \
	"$(awk -v a="$(med new.t)" -v b="$(med cmp.t)" 'BEGIN { print a / b }')" \
	"$(awk -v a="$(med new.c)" -v b="$(med cmp.c)" 'BEGIN { print a / b }')"
if [ -n "$base" ]; then
	line "base stdiff" base
	line "base stdiff -j 1" base1
	printf 'ratio base stdiff/cmp of the medians %.2f; new/base %.2f, of CPU %.2f\n' \
		"$(awk -v a="$(med base.t)" -v b="$(med cmp.t)" 'BEGIN { print a / b }')" \
		"$(awk -v a="$(med new.t)" -v b="$(med base.t)" 'BEGIN { print a / b }')" \
		"$(awk -v a="$(med new.c)" -v b="$(med base.c)" 'BEGIN { print a / b }')"
fi
