#!/usr/bin/env bash
# bench_verify.sh - hashing and verification speed of stinfo --hash and
# --verify, against sha256sum and against one thread, in the same run.
#
# Usage: bench/bench_verify.sh [BUILD_DIR] [BIG_MB] [SHARDS] [SHARD_MB] [RUNS]
#        (defaults: build 2048 10 200 5; BIG_MB 0 skips part 1)
#
# 1. A BIG_MB MiB file of random bytes: `sha256sum FILE` and
#    `stinfo --hash FILE`, RUNS times each, interleaved, warm page cache.
#    Goal: stinfo at most 0.5x sha256sum's time (coreutils' SHA-256 does
#    not use the CPU's SHA instructions; libcrypto does).
# 2. A Hugging Face cache, one repository of SHARDS safetensors shards of
#    SHARD_MB MiB each (blobs named by their SHA-256, snapshot links, a
#    ref): `stinfo --verify --threads 1` and `--threads 2`, RUNS times each,
#    interleaved. Goal: two threads at least 1.7x one thread's throughput.
# Prints the median, min and max of each, and the ratios of the medians;
# for the cache also the CPU seconds (user + system) per wall second, which
# shows whether both threads ran even when other jobs hold the CPUs.
# Everything lives in a temporary directory under /tmp, removed on exit.
set -euo pipefail
build=${1:-build}
big_mb=${2:-2048}
shards=${3:-10}
shard_mb=${4:-200}
runs=${5:-5}
stinfo=$build/bin/stinfo
[ -x "$stinfo" ] || { echo "bench_verify: $stinfo not built" >&2; exit 2; }
dir=$(mktemp -d /tmp/bench_verify.XXXXXX)
trap 'rm -rf "$dir"' EXIT

# secs CMD...: wall-clock seconds of one run (output discarded).
secs() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}
# cpu CMD...: "wall cpu/wall" of one run, by GNU time (output discarded).
cpu() {
	/usr/bin/time -f '%e %U %S' "$@" 2>&1 >/dev/null | tail -1 |
		awk '{ printf "%.3f %.2f\n", $1, ($1 > 0 ? ($2 + $3) / $1 : 0) }'
}
# stats FILE: "median min max" of the numbers in FILE.
stats() { sort -g "$1" | awk '{ v[NR] = $1 } END {
	m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'; }

# --- 1. one big file (BIG_MB 0 skips it) ---------------------------------------
if [ "$big_mb" -gt 0 ]; then
head -c $((big_mb * 1024 * 1024)) /dev/urandom >"$dir/big"
cat "$dir/big" >/dev/null
want=$(sha256sum "$dir/big" | cut -d' ' -f1)
got=$("$stinfo" --hash "$dir/big" | cut -d' ' -f1)
[ "$want" = "$got" ] || { echo "bench_verify: digests differ" >&2; exit 1; }
: >"$dir/t.sum"; : >"$dir/t.st"
for _ in $(seq "$runs"); do
	secs sha256sum "$dir/big" >>"$dir/t.sum"
	secs "$stinfo" --hash "$dir/big" >>"$dir/t.st"
done
rm -f "$dir/big"
read -r sm smin smax < <(stats "$dir/t.sum")
read -r tm tmin tmax < <(stats "$dir/t.st")
printf '%d MiB file, warm cache, %s CPUs, %d runs each (median [min, max])\n' \
	"$big_mb" "$(nproc)" "$runs"
printf '  sha256sum     %7.3f s [%.3f, %.3f]  %6.0f MB/s\n' "$sm" "$smin" "$smax" \
	"$(awk -v m="$big_mb" -v t="$sm" 'BEGIN { print m * 1.048576 / t }')"
printf '  stinfo --hash %7.3f s [%.3f, %.3f]  %6.0f MB/s\n' "$tm" "$tmin" "$tmax" \
	"$(awk -v m="$big_mb" -v t="$tm" 'BEGIN { print m * 1.048576 / t }')"
printf '  ratio stinfo/sha256sum %.2f (goal <= 0.5)\n' \
	"$(awk -v a="$tm" -v b="$sm" 'BEGIN { print a / b }')"
fi

# --- 2. a cache of shards ----------------------------------------------------
repo=$dir/hub/models--bench--shards
c=0123456789abcdef0123456789abcdef01234567
mkdir -p "$repo/blobs" "$repo/refs" "$repo/snapshots/$c"
printf '%s' "$c" >"$repo/refs/main"
bytes=$((shard_mb * 1024 * 1024))
hdr="{\"w\":{\"dtype\":\"U8\",\"shape\":[$bytes],\"data_offsets\":[0,$bytes]}}"
while [ $(( ${#hdr} % 8 )) -ne 0 ]; do hdr="$hdr "; done
len=${#hdr}
for i in $(seq "$shards"); do
	name=$(printf 'model-%05d-of-%05d.safetensors' "$i" "$shards")
	{
		printf "$(printf '\\x%02x' $((len & 255)) $(((len >> 8) & 255)) 0 0 0 0 0 0)"
		printf '%s' "$hdr"
		head -c "$bytes" /dev/urandom
	} >"$dir/shard"
	h=$(sha256sum "$dir/shard" | cut -d' ' -f1)
	mv "$dir/shard" "$repo/blobs/$h"
	ln -s "../../blobs/$h" "$repo/snapshots/$c/$name"
done
"$stinfo" --verify "$dir/hub" >/dev/null || { echo "bench_verify: cache not clean" >&2; exit 1; }
: >"$dir/c.1"; : >"$dir/c.2"
for _ in $(seq "$runs"); do
	cpu "$stinfo" --verify --threads 1 "$dir/hub" >>"$dir/c.1"
	cpu "$stinfo" --verify --threads 2 "$dir/hub" >>"$dir/c.2"
done
cut -d' ' -f1 "$dir/c.1" >"$dir/t.1"; cut -d' ' -f2 "$dir/c.1" >"$dir/u.1"
cut -d' ' -f1 "$dir/c.2" >"$dir/t.2"; cut -d' ' -f2 "$dir/c.2" >"$dir/u.2"
read -r am amin amax < <(stats "$dir/t.1")
read -r bm bmin bmax < <(stats "$dir/t.2")
read -r au _ _ < <(stats "$dir/u.1")
read -r bu _ _ < <(stats "$dir/u.2")
total=$((shards * shard_mb))
printf 'cache of %d x %d MiB shards, warm cache, %d runs each (median [min, max])\n' \
	"$shards" "$shard_mb" "$runs"
printf '  --verify --threads 1 %7.3f s [%.3f, %.3f]  %6.0f MB/s  CPU/wall %.2f\n' \
	"$am" "$amin" "$amax" \
	"$(awk -v m="$total" -v t="$am" 'BEGIN { print m * 1.048576 / t }')" "$au"
printf '  --verify --threads 2 %7.3f s [%.3f, %.3f]  %6.0f MB/s  CPU/wall %.2f\n' \
	"$bm" "$bmin" "$bmax" \
	"$(awk -v m="$total" -v t="$bm" 'BEGIN { print m * 1.048576 / t }')" "$bu"
printf '  speed-up 2 threads / 1 thread %.2f (goal >= 1.7); load average %s\n' \
	"$(awk -v a="$am" -v b="$bm" 'BEGIN { print a / b }')" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
