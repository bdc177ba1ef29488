#!/usr/bin/env bash
# bench_torch.sh - stconvert of PyTorch checkpoints against cp.
#
# Usage: bench/bench_torch.sh [BUILD_DIR] [SIZE_MB] [RUNS]
#        (defaults: build, 1024, 5)
#
# Makes, with /usr/bin/python3 and torch, in a temporary directory under
# /tmp: model.zip.bin (torch.save of 16 F32 tensors, SIZE_MB MiB in all),
# the same state dict in the legacy format (model.legacy.bin), and a zip
# of the same tensors saved transposed (model.views.bin: every element is
# gathered). Reads them once so every run sees a warm page cache, then
# times, in a shuffled order each round and each after a sync, RUNS
# times each: cp of the zip file, cp followed by
# an fsync of the copy (stconvert fsyncs its output before the rename),
# stconvert of each of the three into a .safetensors file, and, as the
# baseline of the same tool, stconvert of that safetensors file. Prints the
# median, minimum and maximum wall-clock time, stconvert's peak resident
# memory (GNU time) against the largest tensor, and the ratios of the
# medians stconvert/cp (goal: at most 1.5 for the zip file) and to the
# safetensors input (what reading the container, checking its CRC-32s
# and gathering views cost over the same copy). The files are deleted
# on exit.
set -euo pipefail
build=${1:-build}
mb=${2:-1024}
runs=${3:-5}
sc=$build/bin/stconvert
[ -x "$sc" ] || { echo "bench_torch: $sc not built" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_torch: needs GNU time (/usr/bin/time)" >&2; exit 2; }

dir=$(mktemp -d /tmp/bench_torch.XXXXXX)
trap 'rm -rf "$dir"' EXIT

/usr/bin/python3 - "$dir" "$mb" <<'EOF'
import collections, sys
import torch
d, mb = sys.argv[1], int(sys.argv[2])
rows = mb * (1 << 20) // 16 // 4 // 1024
torch.manual_seed(0)
sd = collections.OrderedDict(("layers.%d.weight" % i, torch.randn(rows, 1024))
                             for i in range(16))
torch.save(sd, d + "/model.zip.bin")
torch.save(sd, d + "/model.legacy.bin", _use_new_zipfile_serialization=False)
torch.save(collections.OrderedDict((k, v.t()) for k, v in sd.items()),
           d + "/model.views.bin")
print("largest tensor: %d bytes" % (rows * 1024 * 4))
EOF
"$sc" -q "$dir/model.zip.bin" "$dir/model.safetensors"
cat "$dir"/*.bin "$dir/model.safetensors" >/dev/null

one() { # NAME CMD...: wall seconds and peak RSS (KiB) of one run
	local name=$1
	shift
	/usr/bin/time -f '%e %M' -o "$dir/time.out" "$@" >/dev/null 2>&1
	read -r t m <"$dir/time.out"
	echo "$t" >>"$dir/$name.t"
	echo "$m" >>"$dir/$name.m"
}

run_one() { # the Nth command of one round
	case $1 in
	0) one cp cp "$dir/model.zip.bin" "$dir/out.copy" ;;
	1) one cp_fsync sh -c 'cp "$1" "$2" && sync "$2"' sh "$dir/model.zip.bin" "$dir/out.copy" ;;
	2) one zip "$sc" -q "$dir/model.zip.bin" "$dir/out.safetensors" ;;
	3) one legacy "$sc" -q "$dir/model.legacy.bin" "$dir/out.safetensors" ;;
	4) one views "$sc" -q "$dir/model.views.bin" "$dir/out.safetensors" ;;
	5) one safetensors "$sc" -q "$dir/model.safetensors" "$dir/out.safetensors" ;;
	esac
	rm -f "$dir/out.copy" "$dir/out.safetensors"
}
# Each round runs the six in another order (a shuffle seeded by the
# round), so that no command always follows the same one, and each starts
# after a sync: what the previous one left behind (the copy cp did not
# sync, then deleted; the journal's and the disk's work on a deleted
# file: / is mounted with discard here) is done before the clock starts,
# and falls on none. A fixed rotation made stconvert zip always follow
# cp + fsync and its deletion, and cost it half a second.
for ((i = 0; i < runs; i++)); do
	for k in $(awk -v s="$i" 'BEGIN { srand(s + 1); for (k = 0; k < 6; k++) o[k] = k
		for (k = 5; k > 0; k--) { j = int(rand() * (k + 1)); t = o[k]; o[k] = o[j]; o[j] = t }
		for (k = 0; k < 6; k++) print o[k] }'); do
		sync
		run_one "$k"
	done
done

stat_of() { # FILE: median min max
	sort -g "$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}
printf '%s MiB, %d runs each (median, min, max wall seconds; peak RSS)\n' "$mb" "$runs"
for n in cp cp_fsync zip legacy views safetensors; do
	read -r med lo hi < <(stat_of "$dir/$n.t")
	read -r rss _ _ < <(stat_of "$dir/$n.m")
	printf '  %-22s median %6.3f s  (min %.3f, max %.3f)  peak RSS %d MiB\n' \
		"$([ "$n" = cp ] || [ "$n" = cp_fsync ] && echo "$n" || echo "stconvert $n")" \
		"$med" "$lo" "$hi" "$((${rss%.*} / 1024))"
	echo "$med" >"$dir/$n.med"
done
awk -v cp="$(cat "$dir/cp.med")" -v cs="$(cat "$dir/cp_fsync.med")" \
	-v z="$(cat "$dir/zip.med")" -v l="$(cat "$dir/legacy.med")" \
	-v v="$(cat "$dir/views.med")" -v s="$(cat "$dir/safetensors.med")" 'BEGIN {
	printf "  ratio stconvert/cp          zip %.2f  legacy %.2f  views %.2f  safetensors %.2f\n", z / cp, l / cp, v / cp, s / cp
	printf "  ratio stconvert/(cp+fsync)  zip %.2f  legacy %.2f  views %.2f  safetensors %.2f\n", z / cs, l / cs, v / cs, s / cs
	printf "  ratio to the safetensors input  zip %.2f  legacy %.2f  views %.2f\n", z / s, l / s, v / s }'
