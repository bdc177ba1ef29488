#!/usr/bin/env bash
# bench_ggml.sh - decode throughput of each quantized ggml type, libst's
# st_ggml_to_f32 against ggml's own to_float (bench/bench_ggml.py).
#
# Usage: bench/bench_ggml.sh [BUILD_DIR] [LIBGGML_BASE] [ELEMENTS] [RUNS]
#   (defaults: build, node-llama-cpp 3.21.1's libggml-base.so under
#   /work/ref/node_modules, 4194304, 7)
set -eu
build=${1:-build}
ggml=${2:-/work/ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so}
exec /usr/bin/python3 "$(dirname "$0")/bench_ggml.py" "$build/lib/libst.so" "$ggml" \
	"${3:-4194304}" "${4:-7}"
