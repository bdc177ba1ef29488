#!/usr/bin/env bash
# llama.cpp as the judge of the split set (a fixture check: the test suite
# never runs it): node-llama-cpp loads gpt2-00001-of-00003.gguf, finding
# the other parts by name as llama.cpp does, and must generate the same
# greedy ids as from whole.gguf on every prompt of ../gguf/judge/prompts.txt.
# Needs node and node-llama-cpp 3.21.1 in $LLAMA_DIR (see ../gguf/judge/run.sh).
# Usage: LLAMA_DIR=/work/ref testdata/gguf_split/judge.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
judge=$here/../gguf/judge/llama_judge.mjs
prompts=$(grep -v '^#' "$here/../gguf/judge/prompts.txt" | tr '\n' ' ')
split=$(node "$judge" 16 "$here/gpt2-00001-of-00003.gguf" $prompts 2>/dev/null | cut -d' ' -f2-)
whole=$(node "$judge" 16 "$here/whole.gguf" $prompts 2>/dev/null | cut -d' ' -f2-)
printf '%s\n' "$split"
if [ "$split" = "$whole" ] && [ -n "$split" ]; then
	echo "llama.cpp: the split set generates what whole.gguf does"
else
	echo "llama.cpp: the split set and whole.gguf differ"; exit 1
fi
