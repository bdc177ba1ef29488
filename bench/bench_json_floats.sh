#!/usr/bin/env bash
# bench_json_floats.sh - `stinfo --all --json` on a GGUF file whose
# metadata holds one long float32 array (issue "GGUF as people download
# it", item 7: printf/strtod's shortest-digit search took half of 2 s),
# against BASE_BUILD_DIR's stinfo (the code before) and Python's
# json.dumps of the same values, in the same run.
#
# Usage: bench/bench_json_floats.sh [BUILD_DIR] [BASE_BUILD_DIR] [N] [RUNS]
#        (defaults: build, none, 250000, 5)
#
# The file is written by gguf-py (PYTHONPATH=/work/ref/llama.cpp/gguf-py,
# or GGUF_PY): N float32 values spread over the exponents (random
# mantissas, 1e-30 to 1e30, both signs), one tiny tensor. Python's time
# is json.dumps alone, of the values as Python floats (doubles: repr's
# shortest digits for a double, so its texts are the longer ones), timed
# inside the interpreter. Prints median, minimum and maximum wall and
# CPU seconds, and the ratios of the CPU medians.
set -eu
build=${1:-build} base=${2:-} n=${3:-250000} runs=${4:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/lib.sh"
export PYTHONPATH=${GGUF_PY:-/work/ref/llama.cpp/gguf-py}
/usr/bin/python3 - "$dir" "$n" <<'PY'
import sys, numpy as np, gguf
d, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(7)
v = (rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-30, 30, n)).astype(np.float32)
v.tofile(d + "/values.f32")
w = gguf.GGUFWriter(d + "/floats.gguf", "llama")
w.add_array("bench.floats", v.tolist())
w.add_tensor("t", np.zeros(4, dtype=np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
PY
cat >"$dir/dumps.py" <<'PY'
import json, sys, time, numpy as np
v = np.fromfile(sys.argv[1], dtype=np.float32).tolist()
c0, t0 = time.process_time(), time.perf_counter()
s = json.dumps(v)
c1, t1 = time.process_time(), time.perf_counter()
print("%.4f %.4f %d" % (t1 - t0, c1 - c0, len(s)))
PY
f=$dir/floats.gguf
"$build/bin/stinfo" --all --json "$f" >"$dir/new.json"
# Every value reads back as the float it was written from.
/usr/bin/python3 - "$dir" <<'PY'
import json, sys, numpy as np
d = sys.argv[1]
doc = json.load(open(d + "/new.json"))
got = np.array(doc["gguf_metadata"]["bench.floats"]["value"], dtype=np.float32)
want = np.fromfile(d + "/values.f32", dtype=np.float32)
assert got.tobytes() == want.tobytes(), "values do not read back"
PY
for r in $(seq 1 "$runs"); do
	time_one new "$build/bin/stinfo" --all --json "$f"
	[ -z "$base" ] || time_one base "$base/bin/stinfo" --all --json "$f"
	/usr/bin/python3 "$dir/dumps.py" "$dir/values.f32" >"$dir/py.out"
	read -r pt pc plen <"$dir/py.out"
	echo "$pt" >>"$dir/python.t"
	echo "$pc" >>"$dir/python.c"
done
echo "$n float32 values in GGUF metadata, stinfo --all --json: $(stat -c %s "$dir/new.json") bytes" \
     "(json.dumps: $plen), $runs runs each (median min max)"
for k in new ${base:+base} python; do
	printf '%-8s wall %s  CPU %s\n' "$k" "$(summary <"$dir/$k.t")" "$(summary <"$dir/$k.c")"
done
read -r new_c _ < <(summary <"$dir/new.c")
read -r py_c _ < <(summary <"$dir/python.c")
awk -v a="$new_c" -v b="$py_c" 'BEGIN {
	printf "ratio new/python json.dumps of the CPU medians %.2f\n", (b > 0 ? a / b : 0) }'
if [ -n "$base" ]; then
	read -r base_c _ < <(summary <"$dir/base.c")
	awk -v a="$base_c" -v b="$new_c" -v c="$py_c" 'BEGIN {
		printf "ratio base/new of the CPU medians %.2f (base/python %.2f)\n",
			(b > 0 ? a / b : 0), (c > 0 ? a / c : 0) }'
fi
