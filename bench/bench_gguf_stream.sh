#!/usr/bin/env bash
# bench_gguf_stream.sh - issue 22's "decoding any type streams in bounded
# memory", for the two GGUF paths that used to hold whole tensors or one
# thread: `stdiff A.gguf B.gguf` (both sides decoded a chunk at a time)
# and `stconvert X.gguf OUT.safetensors` (decoded on -j threads).
#
# Usage: bench/bench_gguf_stream.sh [BUILD_DIR] [BASE_BUILD_DIR] [RUNS]
#        (defaults: build, none, 3)
#   GGUF_A, GGUF_B  the pair stdiff compares (default: bench/qwen2_random.py's
#                   BF16 and F16 GGUFs of its Qwen2-0.5B-shaped model in
#                   /tmp/bs, made there when missing: 988 MB each)
#   NODE_LLAMA_CPP_DIR  node-llama-cpp 3.21.1's node_modules (default
#                   /work/ref/node_modules): its libllama quantizes GGUF_B
#                   to Q8_0 and Q4_K_M (bench/llama_quantize.py)
#   GGUF_PY         llama.cpp's gguf-py folder (default
#                   /work/ref/llama.cpp/gguf-py), for the baseline decode
#   BENCH_DIR       where the quantized GGUFs go (default: the temporary
#                   folder); kept files there are reused
#
# Warm page cache; RUNS rounds, interleaved, of each command (and of
# BASE_BUILD_DIR's stdiff/stconvert, when given). stconvert writes to
# standard output, /dev/null: what is timed is the decoding, not the disk
# (a 2 GB output file's writeback made the system time of one command
# swing from 0.7 to 5.5 s between runs on the shared machine). Prints the medians [min,
# max] and CPU seconds, the ratios to the floor (`cat A B` for stdiff:
# `cmp A B` stops at the first byte that differs, in the header; `cat X`
# for stconvert), one gguf-py decode of X to F32 (which writes
# nothing), -j 1 / -j 2, new / base, and each command's peak RSS (GNU
# time's %M: it counts the mapped pages of the inputs) and peak anonymous
# memory (RssAnon of /proc/PID/status, sampled every 10 ms: what the
# command allocated). The outputs of -j 1 and -j 2 are compared (cmp).
# Before and after, the CPUs free: what two spinning shells get.
# Not a test: nothing else is asserted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
base=${2:-}
runs=${3:-3}
for b in "$build" ${base:+"$base"}; do
	for t in stdiff stconvert; do
		[ -x "$b/bin/$t" ] || { echo "bench_gguf_stream: $b/bin/$t not built" >&2; exit 2; }
	done
done
A=${GGUF_A:-/tmp/bs/qwen2-bf16.gguf}
B=${GGUF_B:-/tmp/bs/qwen2-f16.gguf}
nlc=${NODE_LLAMA_CPP_DIR:-/work/ref/node_modules}
gpy=${GGUF_PY:-/work/ref/llama.cpp/gguf-py}
lib=$(ls "$nlc"/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v*.so 2>/dev/null | head -1)
dir=$(mktemp -d /tmp/bench_gguf_stream.XXXXXX)
trap 'rm -rf "$dir"' EXIT
. "$here/lib.sh"

for f in "$A" "$B"; do
	[ -f "$f" ] && continue
	dt=$(basename "$f" .gguf | sed 's/.*-//')
	mkdir -p "$(dirname "$f")"
	/usr/bin/python3 "$here/qwen2_random.py" "$dir/model" "$f.part" "$dt"
	rm -rf "$dir/model"
	mv "$f.part" "$f"
done
[ -n "$lib" ] || { echo "bench_gguf_stream: no libllama under $nlc" >&2; exit 2; }
qdir=${BENCH_DIR:-$dir}
mkdir -p "$qdir"
for q in "q8 7" "q4km 15"; do
	set -- $q
	[ ! -f "$qdir/$1.gguf" ] || continue
	/usr/bin/python3 "$here/llama_quantize.py" "$lib" "$B" "$qdir/$1.part" "$2" >"$dir/q.log" 2>&1 ||
		{ tail "$dir/q.log" >&2; exit 2; }
	mv "$qdir/$1.part" "$qdir/$1.gguf"
done

# Peak RssAnon (KB) of one run of CMD, sampled every 10 ms.
anon() {
	"$@" >/dev/null 2>&1 &
	local pid=$! peak=0 v
	while kill -0 "$pid" 2>/dev/null; do
		v=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
		[ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
		sleep 0.01
	done
	wait "$pid" || true
	echo "$peak"
}
mem() { # LABEL CMD...
	local label=$1
	shift
	printf '  %-26s peak RSS %8s KB, peak anonymous %8s KB\n' "$label" "$(rss "$@")" "$(anon "$@")"
}
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.0f", b / 1e6 }'; }

# The CPUs this run can have: what two spinning shells get in one second
# (on a shared machine, less than nproc; -j 2 cannot beat it).
free_cpus() {
	/usr/bin/time -f %P bash -c 'for i in 1 2; do timeout 1 sh -c "while :; do :; done" & done
		wait' 2>&1 | tail -1 | awk '{ printf "%.2f", $1 / 100 }'
}
echo "load before: $(uptime | sed 's/.*load average: //'); $(nproc) CPUs, $(free_cpus) free; $runs rounds"
echo
echo "== stdiff A.gguf B.gguf: $(basename "$A") $(mb "$A") MB against $(basename "$B") $(mb "$B") MB"
cat "$A" "$B" >/dev/null
for _ in $(seq "$runs"); do
	time_one cat cat "$A" "$B"
	time_one diff sh -c "'$build/bin/stdiff' -q '$A' '$B' || true"
	[ -z "$base" ] || time_one diff-base sh -c "'$base/bin/stdiff' -q '$A' '$B' || true"
done
report "cat A B (floor)" cat
report "stdiff" diff
[ -z "$base" ] || report "base stdiff" diff-base
echo "  stdiff / cat $(ratio diff.t cat.t)${base:+, new / base $(ratio diff.t diff-base.t)}"
mem "stdiff" "$build/bin/stdiff" -q "$A" "$B"
[ -z "$base" ] || mem "base stdiff" "$base/bin/stdiff" -q "$A" "$B"
echo "  (the two inputs: $(($(stat -c %s "$A") / 1024 + $(stat -c %s "$B") / 1024)) KB, mapped)"

for q in q8 q4km; do
	X=$qdir/$q.gguf
	echo
	echo "== stconvert $q.gguf ($(mb "$X") MB) - >/dev/null (F32 safetensors)"
	cat "$X" >/dev/null
	"$build/bin/stconvert" -q -j 1 "$X" "$dir/o1.safetensors"
	"$build/bin/stconvert" -q -j 2 "$X" "$dir/o2.safetensors"
	cmp "$dir/o1.safetensors" "$dir/o2.safetensors" && echo "  -j 1 and -j 2 outputs identical"
	echo "  output $(mb "$dir/o1.safetensors") MB"
	rm -f "$dir"/*.t "$dir"/*.c
	for _ in $(seq "$runs"); do
		time_one cat cat "$X"
		time_one j1 "$build/bin/stconvert" -q -j 1 "$X" -
		time_one j2 "$build/bin/stconvert" -q -j 2 "$X" -
		[ -z "$base" ] || time_one base "$base/bin/stconvert" -q "$X" -
	done
	report "cat (floor)" cat
	report "stconvert -j 1" j1
	report "stconvert -j 2" j2
	[ -z "$base" ] || report "base stconvert" base
	echo "  -j 1 / -j 2 $(ratio j1.t j2.t); -j 2 / cat $(ratio j2.t cat.t)${base:+; base / -j 2 $(ratio base.t j2.t)}"
	mem "stconvert -j 2" "$build/bin/stconvert" -q -j 2 "$X" -
	if [ -d "$gpy" ]; then
		printf '  gguf-py dequantize (no write): %s\n' \
			"$(PYTHONPATH=$gpy /usr/bin/python3 "$here/gguf_py_dequant.py" "$X")"
	fi
	rm -f "$dir"/o*.safetensors
done
echo
echo "load after: $(uptime | sed 's/.*load average: //'); $(free_cpus) CPUs free"
