#!/usr/bin/env bash
# Export model/ to GGUF in each type and record llama.cpp's greedy ids for
# the prompts of prompts.txt in ids.txt (a fixture: the test suite never
# runs this). Needs node and node-llama-cpp 3.21.1 installed in $LLAMA_DIR
# (default $HOME/llama):
#   mkdir -p $LLAMA_DIR && cd $LLAMA_DIR && npm i -E node-llama-cpp@3.21.1
# Usage: testdata/gguf/judge/run.sh [BUILD_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../../build}/bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prompts=$(grep -v '^#' "$here/prompts.txt" | tr '\n' ' ')
{
	echo "# llama.cpp (node-llama-cpp 3.21.1, CPU, F32 KV cache): 16 greedy ids"
	echo "# per GGUF type and prompt, made by run.sh from model/"
	for t in f32 f16 bf16 q8_0; do
		"$bin/gpt2export" "$here/model" "$tmp/$t.gguf" --type "$t"
		node "$here/llama_judge.mjs" 16 "$tmp/$t.gguf" $prompts |
			sed "s/^$t.gguf /$t /"
	done
} > "$here/ids.txt"
cat "$here/ids.txt"
