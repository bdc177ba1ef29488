#!/usr/bin/env bash
# bench_ggml_quant.sh - encode throughput of Q4_0 Q4_1 Q5_0 Q5_1 Q8_0,
# libst's st_ggml_from_f32 against ggml's ggml_quantize_chunk
# (bench/bench_ggml_quant.py).
#
# Usage: bench/bench_ggml_quant.sh [BUILD_DIR] [LIBGGML_BASE] [ELEMENTS] [RUNS]
#   (defaults: build, node-llama-cpp 3.21.1's libggml-base.so under
#   /work/ref/node_modules, 4194304, 7)
set -eu
build=${1:-build}
ggml=${2:-/work/ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so}
exec /usr/bin/python3 "$(dirname "$0")/bench_ggml_quant.py" "$build/lib/libst.so" "$ggml" \
	"${3:-4194304}" "${4:-7}"
