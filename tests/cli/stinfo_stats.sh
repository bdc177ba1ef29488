# stinfo --stats: per-tensor min, max, mean, std and NaN/Inf/zero counts
# against numpy's (testdata/stinfo/stats.expected, written by
# gen_fixtures.py in float64 over the finite values, population std).
# min, max and the counts must match exactly; mean and std within a
# relative 1e-10 of the spread. Runs with 1, 2 and 3 threads and with tiny
# chunks (STINFO_CHUNK_ELEMENTS), so slices and chunk merges are exercised.
. "$(dirname "$0")/lib.bash"
S=$BIN/stinfo
[ -x "$S" ] || { echo "no $S"; exit 77; }
cd "$TESTDATA/stinfo" || exit 1
mkdir -p "$TMP/stinfo"

# stats_lines FILE: "name min max mean std nan inf zeros" (or "name skip")
# per tensor from stinfo --stats --json output, null as "-".
stats_lines() {
  sed -n -e 's/.*"name": "\([^"]*\)".*"stats": null.*/\1 skip/p' \
    -e 's/.*"name": "\([^"]*\)".*"stats": {"min": \([^,]*\), "max": \([^,]*\), "mean": \([^,]*\), "std": \([^,]*\), "nan": \([0-9]*\), "inf": \([0-9]*\), "zeros": \([0-9]*\)}.*/\1 \2 \3 \4 \5 \6 \7 \8/p' \
    "$1" | sed 's/null/-/g' | sort
}

# compare NAME: the stats of run NAME against stats.expected.
compare() {
  stats_lines "$TMP/$1.out" >"$TMP/$1.got"
  if awk -v label="$1" '
    function abs(x) { return x < 0 ? -x : x }
    NR == FNR { want[$1] = $0; next }
    {
      seen[$1] = 1
      if (!($1 in want)) { print label ": unexpected tensor " $1; bad = 1; next }
      split(want[$1], w, " ")
      if (w[2] == "skip" || $2 == "skip" || w[2] == "-" || $2 == "-") {
        if (want[$1] != $0) { print label ": " $1 ": got [" $0 "] want [" want[$1] "]"; bad = 1 }
        next
      }
      # min, max and the three counts are exact.
      if ($2 + 0 != w[2] + 0 || $3 + 0 != w[3] + 0 || $6 != w[6] || $7 != w[7] || $8 != w[8]) {
        print label ": " $1 ": got [" $0 "] want [" want[$1] "]"; bad = 1; next
      }
      scale = abs(w[4]) + w[5] + 1e-300
      dm = abs($4 - w[4]) / scale; ds = abs($5 - w[5]) / scale
      if (dm > worst) worst = dm
      if (ds > worst) worst = ds
      if (dm > 1e-10 || ds > 1e-10) {
        printf "%s: %s: mean %s vs %s, std %s vs %s\n", label, $1, $4, w[4], $5, w[5]; bad = 1
      }
    }
    END {
      for (n in want) if (!(n in seen)) { print label ": missing tensor " n; bad = 1 }
      printf "%s: max relative error of mean/std %.3g\n", label, worst
      exit bad
    }' "$TESTDATA/stinfo/stats.expected" "$TMP/$1.got"; then ok; else fail "$1: statistics differ from numpy"; fi
}

run stats-default 0 "$S" --stats --json stats.safetensors && compare stats-default
run stats-t1 0 "$S" --stats --json --threads 1 stats.safetensors && compare stats-t1
STINFO_CHUNK_ELEMENTS=7 run stats-t2-chunk7 0 "$S" --stats --json -j 2 stats.safetensors \
  && compare stats-t2-chunk7
STINFO_CHUNK_ELEMENTS=1 run stats-t3-chunk1 0 "$S" -s --json -j 3 stats.safetensors \
  && compare stats-t3-chunk1
STINFO_CHUNK_ELEMENTS=100 run stats-t2-chunk100 0 "$S" -s --json -j 2 stats.safetensors \
  && compare stats-t2-chunk100

# Chunk results merge in element order, so the figures, to the last digit
# of the JSON, do not depend on the number of threads.
STINFO_CHUNK_ELEMENTS=7 run stats-chunk7-t1 0 "$S" --stats --json -j 1 stats.safetensors
STINFO_CHUNK_ELEMENTS=7 run stats-chunk7-t3 0 "$S" --stats --json -j 3 stats.safetensors
cmp -s "$TMP/stats-chunk7-t1.out" "$TMP/stats-chunk7-t3.out" && ok \
  || fail "--stats figures depend on the thread count"

# Without --stats the JSON is exactly the plain document, with stats it
# only gains the "stats" members.
run plain 0 "$S" --json stats.safetensors
sed 's/, "stats": \(null\|{[^}]*}\)//' "$TMP/stats-default.out" >"$TMP/stripped"
cmp -s "$TMP/plain.out" "$TMP/stripped" && ok || fail "--stats --json changed more than stats"

# The human table (6 significant digits) and the skipped-dtype note.
golden stinfo/stats 0 "$S" --stats -j 2 stats.safetensors
golden stinfo/stats-dtypes 0 "$S" --stats dtypes.safetensors
golden stinfo/stats-snap 0 "$S" --stats snap
# A shard with data missing: the header check fails before any data is read.
golden stinfo/stats-truncated 2 "$S" --stats bad/truncated.safetensors

finish
