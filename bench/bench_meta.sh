#!/usr/bin/env bash
# bench_meta.sh - stconvert on a file with many __metadata__ entries,
# against stinfo reading the same file, in the same run.
#
# Usage: bench/bench_meta.sh [BUILD_DIR] [KEYS] [BASE_BUILD_DIR] [RUNS]
#        (defaults: build, 100000, none, 7)
#
# Makes one safetensors file whose header holds KEYS metadata entries
# ("key000000": "value0", ...) and one 4-byte tensor, written by hand
# (awk), then times `stinfo FILE` and `stconvert -q FILE OUT` RUNS times
# each, alternating (and BASE_BUILD_DIR's stconvert when given), and
# prints median, minimum and maximum wall and CPU seconds and the ratio
# stconvert/stinfo of the CPU medians. The goal (issue 24, item 9) is at
# most 2: the writer used to compare each key with every earlier one.
set -eu
build=${1:-build} keys=${2:-100000} base=${3:-} runs=${4:-7}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/lib.sh"
f=$dir/meta.safetensors
awk -v n="$keys" 'BEGIN {
	h = "{\"__metadata__\":{\"format\":\"pt\""
	for (i = 0; i < n; i++) h = h sprintf(",\"key%06d\":\"value%d\"", i, i)
	h = h "},\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"
	while (length(h) % 8) h = h " "
	printf "%s", h > "'"$dir/hdr"'"
}'
len=$(stat -c %s "$dir/hdr")
{
	printf "$(printf '\\x%02x' $((len & 255)) $(((len >> 8) & 255)) \
	          $(((len >> 16) & 255)) $(((len >> 24) & 255)) 0 0 0 0)"
	cat "$dir/hdr"
	printf '\0\0\0\0'
} >"$f"
"$build/bin/stinfo" "$f" >/dev/null # warm the page cache
for r in $(seq 1 "$runs"); do
	time_one stinfo "$build/bin/stinfo" "$f"
	rm -f "$dir/out.safetensors"
	time_one stconvert "$build/bin/stconvert" -q "$f" "$dir/out.safetensors"
	if [ -n "$base" ]; then
		rm -f "$dir/out.safetensors"
		time_one base "$base/bin/stconvert" -q "$f" "$dir/out.safetensors"
	fi
done
echo "$keys metadata keys, $(stat -c %s "$f") bytes, $runs runs each (median min max)"
for n in stinfo stconvert ${base:+base}; do
	printf '%-10s wall %s  CPU %s\n' "$n" "$(summary <"$dir/$n.t")" "$(summary <"$dir/$n.c")"
done
si=$(summary <"$dir/stinfo.c" | cut -d' ' -f1)
sc=$(summary <"$dir/stconvert.c" | cut -d' ' -f1)
awk -v a="$sc" -v b="$si" 'BEGIN { printf "ratio stconvert/stinfo of the CPU medians %.2f (goal <= 2)\n", (b > 0 ? a / b : 0) }'
