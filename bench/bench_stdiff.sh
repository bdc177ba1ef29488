#!/usr/bin/env bash
# bench_stdiff.sh - time stdiff against cmp on two identical F32 checkpoints.
#
# Usage: bench/bench_stdiff.sh [BUILD_DIR] [SIZE_MB]   (defaults: build, 1024)
#
# Makes two identical single-tensor F32 files of SIZE_MB MiB of random bytes
# in a temporary directory under /tmp, reads them once so both tools see a
# warm page cache, then times `cmp A B` and `stdiff -q A B` (best of 3 each)
# and prints both times and the ratio stdiff/cmp. The goal (issue 4) is a
# ratio of at most 1.5. It also times one thread (-j 1) and reports stdiff's
# peak resident memory (GNU time). The files are deleted on exit.
set -euo pipefail
build=${1:-build}
mb=${2:-1024}
stdiff=$build/bin/stdiff
[ -x "$stdiff" ] || { echo "bench_stdiff: $stdiff not built" >&2; exit 2; }

dir=$(mktemp -d /tmp/bench_stdiff.XXXXXX)
trap 'rm -rf "$dir"' EXIT

# A safetensors file by hand: u64 LE header length, space-padded JSON, data.
bytes=$((mb * 1024 * 1024))
n=$((bytes / 4))
hdr="{\"w\":{\"dtype\":\"F32\",\"shape\":[$n],\"data_offsets\":[0,$bytes]}}"
while [ $(( ${#hdr} % 8 )) -ne 0 ]; do hdr="$hdr "; done
len=${#hdr}
{
	printf "$(printf '\\x%02x' $((len & 255)) $(((len >> 8) & 255)) \
	          $(((len >> 16) & 255)) $(((len >> 24) & 255)) 0 0 0 0)"
	printf '%s' "$hdr"
	head -c "$bytes" /dev/urandom
} >"$dir/a.safetensors"
cp "$dir/a.safetensors" "$dir/b.safetensors"

best() { # best of 3 wall-clock seconds of "$@"
	local b="" t0 t1 d
	for _ in 1 2 3; do
		t0=$(date +%s.%N)
		"$@" >/dev/null
		t1=$(date +%s.%N)
		d=$(echo "$t1 - $t0" | bc -l)
		if [ -z "$b" ] || [ "$(echo "$d < $b" | bc -l)" = 1 ]; then b=$d; fi
	done
	printf '%.3f' "$b"
}

cat "$dir/a.safetensors" "$dir/b.safetensors" >/dev/null # warm the cache
"$stdiff" -q "$dir/a.safetensors" "$dir/b.safetensors" || {
	echo "bench_stdiff: stdiff says the identical files differ" >&2; exit 1; }
tc=$(best cmp "$dir/a.safetensors" "$dir/b.safetensors")
ts=$(best "$stdiff" -q "$dir/a.safetensors" "$dir/b.safetensors")
t1=$(best "$stdiff" -q -j 1 "$dir/a.safetensors" "$dir/b.safetensors")
ratio=$(echo "$ts / $tc" | bc -l)
rss=?
if [ -x /usr/bin/time ]; then
	rss=$( { /usr/bin/time -f '%M' "$stdiff" -q "$dir/a.safetensors" \
	         "$dir/b.safetensors"; } 2>&1 >/dev/null | tail -1)
fi
size=$(du -m "$dir/a.safetensors" | cut -f1)
printf 'two identical %s MB F32 files, warm cache, %s CPUs\n' "$size" "$(nproc)"
printf 'cmp     %8.3f s  %7.0f MB/s per file\n' "$tc" "$(echo "$size / $tc" | bc -l)"
printf 'stdiff  %8.3f s  %7.0f MB/s per file  (peak RSS %s KB)\n' "$ts" \
	"$(echo "$size / $ts" | bc -l)" "$rss"
printf 'stdiff -j 1 %4.3f s  %7.0f MB/s per file\n' "$t1" "$(echo "$size / $t1" | bc -l)"
printf 'ratio stdiff/cmp %.2f (goal <= 1.5)\n' "$ratio"
