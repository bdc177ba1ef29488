#!/usr/bin/env bash
# stdiff statistics against numpy: testdata/stdiff/gen_fixtures.py computed
# the expected values (expected/*.txt, "tensor field value" per line) with
# numpy in float64; here the --json output must agree. Maxima, counts and
# indices must be equal; the mean within 1e-12 relative (summation order).
# Then multi-chunk tensors built here (zeros with known values patched in)
# check that chunking and threads merge the statistics correctly.
. "$(dirname "$0")/lib.bash"
S=$BIN/stdiff
[ -x "$S" ] || { echo "stdiff not built"; exit 77; }
D=$TESTDATA/stdiff

# values NAME EXPECTED: compare $TMP/NAME.out (stdiff --json) with EXPECTED.
values() {
	if awk -v want_file="$2" '
	BEGIN {
		nf = split("elements identical max_abs_diff max_rel_diff mean_abs_diff mismatched worst_index exactly_encoded nan_equal", fields, " ")
		while ((getline line < want_file) > 0) {
			split(line, ww, " ")
			n++; key[n] = ww[1] SUBSEP ww[2]; want[key[n]] = ww[3]
		}
	}
	/^  \{"name": "/ && /"elements": / {
		match($0, /"name": "[^"]*"/)
		name = substr($0, RSTART + 9, RLENGTH - 10)
		for (i = 1; i <= nf; i++) {
			pat = "\"" fields[i] "\": [^,}]*"
			if (match($0, pat)) {
				skip = length(fields[i]) + 4
				got[name SUBSEP fields[i]] = substr($0, RSTART + skip, RLENGTH - skip)
			}
		}
	}
	END {
		bad = 0
		for (i = 1; i <= n; i++) {
			k = key[i]; split(k, kk, SUBSEP)
			if (!(k in got)) { print "  missing: " kk[1] " " kk[2]; bad++; continue }
			w = want[k]; g = got[k]
			if (w ~ /^(null|true|false)$/ || g ~ /^(null|true|false)$/)
				good = (w == g)
			else if (kk[2] == "mean_abs_diff") {
				d = w - g; if (d < 0) d = -d
				a = w < 0 ? -w : w
				good = (d <= 1e-12 * a)
			} else
				good = (w + 0 == g + 0)
			if (!good) { print "  " kk[1] " " kk[2] ": got " g ", numpy " w; bad++ }
		}
		exit bad != 0
	}' "$TMP/$1.out" >&2; then ok; else fail "$1: values differ from $2"; fi
}

check() { # check NAME RC EXPECTED ARGS...
	local name=$1 rc=$2 exp=$3; shift 3
	run "$name" "$rc" "$S" --json "$@" && values "$name" "$D/expected/$exp.txt"
}

check a_b 1 a_b "$D/a.safetensors" "$D/b.safetensors"
check a_b_j1 1 a_b -j 1 "$D/a.safetensors" "$D/b.safetensors"
check a_b_tol 1 a_b_tol --rtol 1e-4 --atol 1e-4 "$D/a.safetensors" "$D/b.safetensors"
check a_b_exact 1 a_b_exact --exact "$D/a.safetensors" "$D/b.safetensors"
check sharded_b 1 a_b "$D/sharded" "$D/snap"
check nan 0 nan "$D/nan_a.safetensors" "$D/nan_b.safetensors"
check nan_exact 1 nan_exact --exact "$D/nan_a.safetensors" "$D/nan_b.safetensors"
check ref_f32_bf16 1 ref_f32_bf16 "$D/ref_f32.safetensors" "$D/ref_bf16.safetensors"
check ref_f32_bf16_trunc 0 ref_f32_bf16_trunc "$D/ref_f32.safetensors" "$D/ref_bf16_trunc.safetensors"
check ref_f32_f16 1 ref_f32_f16 "$D/ref_f32.safetensors" "$D/ref_f16.safetensors"
check ref_f64_f32 0 ref_f64_f32 "$D/ref_f64.safetensors" "$D/ref_f32.safetensors"
check ref_bf16_f32 1 ref_bf16_f32 "$D/ref_bf16.safetensors" "$D/ref_f32.safetensors"
check ref_f16_bf16 1 ref_f16_bf16 "$D/ref_f16.safetensors" "$D/ref_bf16.safetensors"

# ---- multi-chunk tensors ----------------------------------------------------
# mkst FILE DTYPE N BYTES_PER_ELEMENT: one tensor "t" of N zeros.
mkst() {
	local f=$1 dt=$2 n=$3 es=$4 bytes=$(($3 * $4)) hdr len
	hdr="{\"t\":{\"dtype\":\"$dt\",\"shape\":[$n],\"data_offsets\":[0,$bytes]}}"
	while [ $(( ${#hdr} % 8 )) -ne 0 ]; do hdr="$hdr "; done
	len=${#hdr}
	{
		printf "$(printf '\\x%02x' $((len & 255)) $((len >> 8)) 0 0 0 0 0 0)"
		printf '%s' "$hdr"
		head -c "$bytes" /dev/zero
	} >"$f"
	echo $((8 + len)) # where the data starts
}
# poke FILE OFFSET HEXBYTES: overwrite bytes in place.
poke() { printf "$(echo "$3" | sed 's/../\\x&/g')" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }

N=3000000 # 12 MB of F32: three 4 MiB chunks, so chunk merging is exercised
da=$(mkst "$TMP/za.st" F32 $N 4)
mkst "$TMP/zb.st" F32 $N 4 >/dev/null
# B gets 2.0 at element 10 (chunk 1), 1.0 at 1500000 (chunk 2), 2.0 at
# 2800000 (chunk 3, ties with 10: the first wins), -0.0 at 2999999 (equal by
# value), NaN at 1048576 and 1048577 in A and B (a chunk edge).
poke "$TMP/zb.st" $((da + 4 * 10)) 00000040
poke "$TMP/zb.st" $((da + 4 * 1500000)) 0000803f
poke "$TMP/zb.st" $((da + 4 * 2800000)) 00000040
poke "$TMP/zb.st" $((da + 4 * 2999999)) 00000080
for f in za zb; do
	poke "$TMP/$f.st" $((da + 4 * 1048576)) 0000c07f
	poke "$TMP/$f.st" $((da + 4 * 1048577)) 0000c07f
done
cat >"$TMP/big.txt" <<EOF
t elements 3000000
t identical false
t max_abs_diff 2.0
t max_rel_diff 1.0
t mean_abs_diff $(awk 'BEGIN { printf "%.17g", 5 / 2999998 }')
t mismatched 3
t worst_index 10
t exactly_encoded null
t nan_equal 2
EOF
for j in 1 2 3; do
	run big_j$j 1 "$S" --json -j $j "$TMP/za.st" "$TMP/zb.st" &&
		values big_j$j "$TMP/big.txt"
done
cmp -s "$TMP/big_j1.out" "$TMP/big_j2.out" && ok || fail "big: -j 1 and -j 2 differ"
run big_exact 1 "$S" --json --exact "$TMP/za.st" "$TMP/zb.st"
expect_out big_exact '"mismatched": 4, .*"worst_index": 10,'
run big_same 0 "$S" --json "$TMP/za.st" "$TMP/za.st"
expect_out big_same '"identical": true, "exactly_encoded": null, "mismatched": 0, "max_abs_diff": 0, "max_rel_diff": 0, .*"mean_abs_diff": 0, "worst_index": null, "nan_equal": 2,'

# The same zeros as BF16 (6 MB): B is exactly A rounded; then not, once one
# BF16 element is off by one ulp in the last chunk.
dc=$(mkst "$TMP/zc.st" BF16 $N 2)
for off in 1048576 1048577; do poke "$TMP/zc.st" $((dc + 2 * off)) c07f; done
run big_bf16 0 "$S" --json "$TMP/za.st" "$TMP/zc.st"
expect_out big_bf16 '"identical": false, "exactly_encoded": true, "mismatched": 0, "max_abs_diff": 0, "max_rel_diff": 0, .*"mean_abs_diff": 0, "worst_index": null, "nan_equal": 2,'
poke "$TMP/zc.st" $((dc + 2 * 2999990)) 0100
run big_bf16_off 0 "$S" --json "$TMP/za.st" "$TMP/zc.st"
expect_out big_bf16_off '"exactly_encoded": false, "mismatched": 0, .*"worst_index": 2999990, "nan_equal": 2,'

finish
