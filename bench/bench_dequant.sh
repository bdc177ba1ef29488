#!/usr/bin/env bash
# bench_dequant.sh - dequantizing a block-scaled FP8 checkpoint to BF16
# with stconvert, against cp of the BF16 result (twice the bytes), and
# quantizing a BF16 checkpoint of the same size to F8_E4M3 with 128x128
# F32 scales, against cp of its input, in the same run.
#
# Usage: bench/bench_dequant.sh [BUILD_DIR] [SIZE_MB] [RUNS]
#        (defaults: build, 1024, 3)
#
# Makes a DeepSeek-style snapshot in a temporary directory under /tmp:
# config.json with weight_block_size [128, 128] and one model.safetensors
# of SIZE_MB / 16 F8_E4M3 weights [4096, 4096] (16 MiB each, codes from a
# fixed sequence, no NaN) with their F32 weight_scale_inv [32, 32]. It
# dequantizes it once (the 2x larger BF16 output is the file cp copies),
# then times in alternation, RUNS times each, `cp OUT/model.safetensors
# COPY`, the same cp followed by `sync COPY` (stconvert fsyncs its output
# before renaming it into place; cp does not), and `stconvert -q --to bf16
# IN OUT2`, each writing a new file (the old one removed untimed), with
# sync(1) before each so no run pays for another's
# writeback, and prints the medians, the stconvert/cp ratios (the goal is
# <= 1.5) and stconvert's peak RSS and CPU seconds (GNU time).
#
# The quantization's input is a BF16 snapshot of SIZE_MB (SIZE_MB / 32
# weights [4096, 4096], values taken from the dequantized file, so no NaN
# or Inf); `cp` and `cp` + `sync` of its file and `stconvert -q --to
# f8_e4m3 QIN QOUT` are timed in the same rounds. So are `stdiff -q IN
# OUT` (the FP8 side compared dequantized with the BF16 file: "exactly
# dequantized") and, as its baseline, `stdiff -q OUT COPY` of the BF16
# file and its copy (the same bytes: read and memcmp only). Everything it
# made is removed on exit. Not a test.
set -euo pipefail
build=${1:-build}
mb=${2:-1024}
runs=${3:-3}
sc=$build/bin/stconvert sd=$build/bin/stdiff
[ -x "$sc" ] && [ -x "$sd" ] || { echo "bench_dequant: $sc or $sd not built" >&2; exit 2; }
d=$(mktemp -d /tmp/bench_dequant.XXXXXX)
trap 'rm -rf "$d"' EXIT
mkdir "$d/in"
printf '{"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "torch_dtype": "bfloat16"}\n' >"$d/in/config.json"

n=$((mb / 16))
[ "$n" -ge 1 ] || { echo "bench_dequant: SIZE_MB must be at least 16" >&2; exit 2; }
W=$((4096 * 4096)) S=$((32 * 32 * 4))
hdr='{"__metadata__":{"format":"pt"}'
for i in $(seq 0 $((n - 1))); do
	hdr+=",\"model.layers.$i.mlp.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[4096,4096],\"data_offsets\":[$((i * W)),$(((i + 1) * W))]}"
	hdr+=",\"model.layers.$i.mlp.weight_scale_inv\":{\"dtype\":\"F32\",\"shape\":[32,32],\"data_offsets\":[$((n * W + i * S)),$((n * W + (i + 1) * S))]}"
done
hdr+='}'
while [ $(( ${#hdr} % 8 )) -ne 0 ]; do hdr+=' '; done
len=${#hdr}
f=$d/in/model.safetensors
{
	printf "$(printf '\\x%02x' $((len & 255)) $(((len >> 8) & 255)) $(((len >> 16) & 255)) \
	          $(((len >> 24) & 255)) 0 0 0 0)"
	printf '%s' "$hdr"
} >"$f"
# 1 MiB of E4M3 codes without the NaN ones (x & 0x7F == 0x7F), repeated.
LC_ALL=C awk 'BEGIN { x = 7; for (i = 0; i < 1048576; i++) {
	x = (x * 1103515245 + 12345) % 2147483648; c = int(x / 65536) % 256
	if (c % 128 == 127) c -= 1
	printf "%c", c } }' >"$d/codes"
[ "$(stat -c %s "$d/codes")" = 1048576 ] || { echo "bench_dequant: bad code block" >&2; exit 2; }
for _ in $(seq $((n * 16))); do cat "$d/codes"; done >>"$f"
# Scales: 2^-8 (0x3B800000) everywhere.
printf '\x00\x00\x80\x3b' >"$d/s"
for _ in $(seq 10); do cat "$d/s" "$d/s" >"$d/s2"; mv "$d/s2" "$d/s"; done
for _ in $(seq "$n"); do cat "$d/s"; done >>"$f"
rm "$d/codes" "$d/s"

"$sc" -q --to bf16 "$d/in" "$d/out" # also warms the cache

# The BF16 snapshot to quantize: the first SIZE_MB of the dequantized
# file's data under a header of m BF16 weights.
m=$((mb / 32))
[ "$m" -ge 1 ] || m=1
QW=$((4096 * 4096 * 2))
mkdir "$d/qin"
printf '{"torch_dtype": "bfloat16"}\n' >"$d/qin/config.json"
qh='{"__metadata__":{"format":"pt"}'
for i in $(seq 0 $((m - 1))); do
	qh+=",\"model.layers.$i.mlp.weight\":{\"dtype\":\"BF16\",\"shape\":[4096,4096],\"data_offsets\":[$((i * QW)),$(((i + 1) * QW))]}"
done
qh+='}'
while [ $(( ${#qh} % 8 )) -ne 0 ]; do qh+=' '; done
ql=${#qh} qf=$d/qin/model.safetensors
ohl=$(od -An -t u8 -N8 "$d/out/model.safetensors" | tr -d ' ')
{
	printf "$(printf '\\x%02x' $((ql & 255)) $(((ql >> 8) & 255)) $(((ql >> 16) & 255)) \
	          $(((ql >> 24) & 255)) 0 0 0 0)"
	printf '%s' "$qh"
	dd if="$d/out/model.safetensors" bs=1M iflag=skip_bytes,count_bytes skip=$((8 + ohl)) \
	   count=$((m * QW)) status=none
} >"$qf"
[ "$(stat -c %s "$qf")" = $((8 + ql + m * QW)) ] || { echo "bench_dequant: short BF16 input" >&2; exit 2; }
"$sc" -q --to f8_e4m3 "$d/qin" "$d/qout" # checks it, warms the cache
cat "$f" "$d/out/model.safetensors" "$qf" >/dev/null

one() { # FILE CMD...: append the wall seconds of CMD to FILE
	local out=$1; shift
	sync
	/usr/bin/time -f '%e %M %U %S' -o "$d/t" "$@" >/dev/null 2>&1
	cat "$d/t" >>"$out"
}
for _ in $(seq "$runs"); do
	rm -f "$d/copy"
	one "$d/cp.t" cp "$d/out/model.safetensors" "$d/copy"
	rm -f "$d/copy"
	one "$d/cps.t" sh -c 'cp "$1" "$2" && sync "$2"' sh "$d/out/model.safetensors" "$d/copy"
	one "$d/sdc.t" "$sd" -q "$d/out" "$d/copy"
	one "$d/sd.t" "$sd" -q "$d/in" "$d/out"
	rm -rf "$d/out2"
	one "$d/sc.t" "$sc" -q --to bf16 "$d/in" "$d/out2"
	rm -f "$d/copy"
	one "$d/qcp.t" cp "$qf" "$d/copy"
	rm -f "$d/copy"
	one "$d/qcps.t" sh -c 'cp "$1" "$2" && sync "$2"' sh "$qf" "$d/copy"
	rm -rf "$d/out2" "$d/copy"
	one "$d/qsc.t" "$sc" -q --to f8_e4m3 "$d/qin" "$d/out2"
done
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cpm=$(med "$d/cp.t") cpsm=$(med "$d/cps.t") scm=$(med "$d/sc.t")
cpu=$(awk '{ print $3 + $4 }' "$d/sc.t" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
rss=$(sort -k2 -n "$d/sc.t" | tail -1 | cut -d' ' -f2)
printf 'in:  %s MB F8_E4M3 (%d weights [4096, 4096], 128x128 F32 scales); out: %s MB BF16\n' \
	"$(du -m "$f" | cut -f1)" "$n" "$(du -m "$d/out/model.safetensors" | cut -f1)"
printf 'cp of the BF16 file        median %.2f s  (runs: %s)\n' "$cpm" "$(cut -d' ' -f1 "$d/cp.t" | tr '\n' ' ')"
printf 'cp + sync of the BF16 file median %.2f s  (runs: %s)\n' "$cpsm" "$(cut -d' ' -f1 "$d/cps.t" | tr '\n' ' ')"
printf 'stconvert --to bf16        median %.2f s  (runs: %s)  peak RSS %s KB, CPU %s s\n' "$scm" \
	"$(cut -d' ' -f1 "$d/sc.t" | tr '\n' ' ')" "$rss" "$cpu"
printf 'ratio stconvert/cp %.2f, stconvert/(cp + sync) %.2f (goal <= 1.5), %s CPUs\n' \
	"$(awk -v a="$scm" -v b="$cpm" 'BEGIN { print a / b }')" \
	"$(awk -v a="$scm" -v b="$cpsm" 'BEGIN { print a / b }')" "$(nproc)"

mn() { sort -n "$1" | head -1 | cut -d' ' -f1; }
sdm=$(med "$d/sd.t") sdcm=$(med "$d/sdc.t")
printf 'stdiff BF16 vs its copy    median %.2f s  min %.2f s  peak RSS %s KB\n' "$sdcm" \
	"$(mn "$d/sdc.t")" "$(sort -k2 -n "$d/sdc.t" | tail -1 | cut -d' ' -f2)"
printf 'stdiff FP8 vs BF16         median %.2f s  min %.2f s  peak RSS %s KB (dequantized, exact)\n' \
	"$sdm" "$(mn "$d/sd.t")" "$(sort -k2 -n "$d/sd.t" | tail -1 | cut -d' ' -f2)"

qcpm=$(med "$d/qcp.t") qcpsm=$(med "$d/qcps.t") qscm=$(med "$d/qsc.t")
qcpu=$(awk '{ print $3 + $4 }' "$d/qsc.t" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
qusr=$(awk '{ print $3 }' "$d/qsc.t" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
qrss=$(sort -k2 -n "$d/qsc.t" | tail -1 | cut -d' ' -f2)
printf 'quantize: in %s MB BF16 (%d weights [4096, 4096]); out %s MB F8_E4M3 + 128x128 F32 scales\n' \
	"$(du -m "$qf" | cut -f1)" "$m" "$(du -m "$d/qout/model.safetensors" | cut -f1)"
printf 'cp of the BF16 input          median %.2f s  min %.2f s  (runs: %s)\n' "$qcpm" \
	"$(mn "$d/qcp.t")" "$(cut -d' ' -f1 "$d/qcp.t" | tr '\n' ' ')"
printf 'cp + sync of the BF16 input   median %.2f s  min %.2f s  (runs: %s)\n' "$qcpsm" \
	"$(mn "$d/qcps.t")" "$(cut -d' ' -f1 "$d/qcps.t" | tr '\n' ' ')"
printf 'stconvert --to f8_e4m3        median %.2f s  min %.2f s  (runs: %s)  peak RSS %s KB, CPU %s s (user %s s)\n' \
	"$qscm" "$(mn "$d/qsc.t")" "$(cut -d' ' -f1 "$d/qsc.t" | tr '\n' ' ')" "$qrss" "$qcpu" "$qusr"
printf 'ratio quantize/cp %.2f (mins %.2f), quantize/(cp + sync) %.2f\n' \
	"$(awk -v a="$qscm" -v b="$qcpm" 'BEGIN { print a / b }')" \
	"$(awk -v a="$(mn "$d/qsc.t")" -v b="$(mn "$d/qcp.t")" 'BEGIN { print a / b }')" \
	"$(awk -v a="$qscm" -v b="$qcpsm" 'BEGIN { print a / b }')"
