#!/usr/bin/env bash
# bench_meta.sh - stconvert on a file with many __metadata__ entries,
# against stinfo reading the same file, in the same run.
#
# Usage: bench/bench_meta.sh [BUILD_DIR] [KEYS] [BASE_BUILD_DIR] [RUNS]
#                            [ORDER] [REPEAT]
#        (defaults: build, 100000, none, 7, sorted, 10)
#
# Makes one safetensors file whose header holds KEYS metadata entries
# ("key000000": "value0", ...; ORDER sorted lists them in key order, as
# libst writes them, shuffled in a fixed random order) and one 4-byte
# tensor, written by hand (awk), then times `stinfo FILE` and
# `stconvert -q -f FILE OUT` RUNS times each, alternating (and
# BASE_BUILD_DIR's stconvert when given). Each timing is of REPEAT runs
# in a row, divided by REPEAT, so that GNU time's 10 ms resolution does
# not hide the ratio. Prints median, minimum and maximum wall and CPU
# seconds per run and the ratio stconvert/stinfo of the CPU medians and
# minimums. The goal (issue 24, item 9) is at most 2: the writer used to
# compare each key with every earlier one.
set -eu
build=${1:-build} keys=${2:-100000} base=${3:-} runs=${4:-7}
order=${5:-sorted} rep=${6:-10}
case $order in sorted | shuffled) ;; *) echo "bench_meta: ORDER is sorted or shuffled" >&2; exit 2 ;; esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/lib.sh"
f=$dir/meta.safetensors
awk -v n="$keys" -v shuffle="$([ "$order" = shuffled ] && echo 1 || echo 0)" 'BEGIN {
	for (i = 0; i < n; i++) p[i] = i
	if (shuffle) {
		srand(1)
		for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = p[i]; p[i] = p[j]; p[j] = t }
	}
	h = "{\"__metadata__\":{\"format\":\"pt\""
	for (i = 0; i < n; i++) h = h sprintf(",\"key%06d\":\"value%d\"", p[i], p[i])
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

# time_rep NAME CMD...: REPEAT runs of CMD in one timing, per run.
time_rep() {
	local name=$1
	shift
	time_one "$name.all" bash -c 'for ((i = 0; i < '"$rep"'; i++)); do "$@" >/dev/null; done' - "$@"
	tail -1 "$dir/$name.all.t" | awk -v r="$rep" '{ printf "%.4f\n", $1 / r }' >>"$dir/$name.t"
	tail -1 "$dir/$name.all.c" | awk -v r="$rep" '{ printf "%.4f\n", $1 / r }' >>"$dir/$name.c"
}

"$build/bin/stinfo" "$f" >/dev/null # warm the page cache
"$build/bin/stconvert" -q "$f" "$dir/out.safetensors" # OUT exists: every run replaces it
for r in $(seq 1 "$runs"); do
	time_rep stinfo "$build/bin/stinfo" "$f"
	time_rep stconvert "$build/bin/stconvert" -q -f "$f" "$dir/out.safetensors"
	if [ -n "$base" ]; then
		time_rep base "$base/bin/stconvert" -q -f "$f" "$dir/out.safetensors"
	fi
done
echo "$keys metadata keys ($order), $(stat -c %s "$f") bytes, $runs x $rep runs each (median min max, per run)"
for n in stinfo stconvert ${base:+base}; do
	printf '%-10s wall %s  CPU %s\n' "$n" "$(summary <"$dir/$n.t")" "$(summary <"$dir/$n.c")"
done
read -r si_med si_min _ < <(summary <"$dir/stinfo.c")
read -r sc_med sc_min _ < <(summary <"$dir/stconvert.c")
awk -v a="$sc_med" -v b="$si_med" -v c="$sc_min" -v d="$si_min" 'BEGIN {
	printf "ratio stconvert/stinfo of the CPU medians %.2f, of the minimums %.2f (goal <= 2)\n",
		(b > 0 ? a / b : 0), (d > 0 ? c / d : 0) }'
