#!/usr/bin/env bash
# bench_stinfo_quant.sh - what describing a quantized checkpoint costs
# stinfo: the summary and --json of a header of N FP8 weights with their
# scales, against the same header with the scales renamed so that
# nothing pairs, measured in the same run.
#
# Usage: bench/bench_stinfo_quant.sh [BUILD_DIR] [N] [RUNS]
#        (defaults: build, 100000, 7)
#
# Makes two files in a temporary directory under /tmp: N tensors
# model.layers.L.mlp.experts.E.w.weight (F8_E4M3 [2, 2]) each with a
# .weight_scale_inv (F32 [1, 1]) beside it, and the same with the scales
# named .weight_sc (not a scale name): 2 N tensors either way, the same
# header size. Runs `stinfo --json` and `stinfo` (the summary) on each,
# RUNS times, alternating the files so that load on the machine falls on
# both alike; prints the median, minimum and maximum wall-clock seconds
# of each, the ratio paired/unpaired of the medians, and each one's peak
# RSS (GNU time). The files are deleted on exit.
set -euo pipefail
build=${1:-build}
n=${2:-100000}
runs=${3:-7}
S=$build/bin/stinfo
[ -x "$S" ] || { echo "bench_stinfo_quant: $S not built" >&2; exit 2; }

dir=$(mktemp -d /tmp/bench_stinfo_quant.XXXXXX)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/lib.sh"

# header N SUFFIX: the JSON of N weight/scale pairs, offsets contiguous.
header() {
	LC_ALL=C awk -v n="$1" -v sfx="$2" 'BEGIN {
		printf "{\"__metadata__\":{\"format\":\"pt\"}"
		for (i = 0; i < n; i++) {
			w = sprintf("model.layers.%d.mlp.experts.%d.w.weight", int(i / 1000), i % 1000)
			printf ",\"%s\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,2],\"data_offsets\":[%d,%d]}", w, 8 * i, 8 * i + 4
			printf ",\"%s%s\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[%d,%d]}", w, sfx, 8 * i + 4, 8 * i + 8
		}
		printf "}" }'
}
# file PATH SUFFIX: the header, padded to a multiple of 8, its length in
# front (u64 LE), and 8 N zero bytes of data.
file() {
	header "$n" "$2" >"$dir/h"
	local len
	len=$(stat -c %s "$dir/h")
	while [ $((len % 8)) -ne 0 ]; do printf ' ' >>"$dir/h"; len=$((len + 1)); done
	{
		printf "$(printf '\\x%02x' $((len & 255)) $(((len >> 8) & 255)) \
		          $(((len >> 16) & 255)) $(((len >> 24) & 255)) 0 0 0 0)"
		cat "$dir/h"
		head -c $((8 * n)) /dev/zero
	} >"$1"
}
file "$dir/paired.safetensors" _scale_inv
file "$dir/unpaired.safetensors" _sc
"$S" "$dir/paired.safetensors" | grep -q '^quantized:   FP8 E4M3, block-scaled 128x128, '"$n"' weights with F32 scales$' ||
	{ echo "bench_stinfo_quant: the paired file is not described as quantized" >&2; exit 2; }
if "$S" "$dir/unpaired.safetensors" | grep -q '^quantized:'; then
	echo "bench_stinfo_quant: the unpaired file pairs" >&2; exit 2
fi

for _ in $(seq "$runs"); do
	for f in paired unpaired; do
		time_one "$f-json" "$S" --json "$dir/$f.safetensors"
		time_one "$f-summary" "$S" "$dir/$f.safetensors"
	done
done
echo "stinfo on $((2 * n)) tensors ($n FP8 weights + scales), $runs runs, seconds: median min max"
for mode in json summary; do
	p=$(summary <"$dir/paired-$mode.t")
	u=$(summary <"$dir/unpaired-$mode.t")
	echo "  $mode  paired:   $p"
	echo "  $mode  unpaired: $u"
	awk -v a="${p%% *}" -v b="${u%% *}" -v m="$mode" \
		'BEGIN { printf "  %s  paired / unpaired: %.2f\n", m, (b > 0 ? a / b : 0) }'
done
echo "  peak RSS (KB): paired $(rss "$S" --json "$dir/paired.safetensors"), unpaired $(rss "$S" --json "$dir/unpaired.safetensors")"
