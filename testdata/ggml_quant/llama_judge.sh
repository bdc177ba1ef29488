#!/usr/bin/env bash
# llama.cpp as the judge of gpt2export's quantized GGUF files (a fixture
# check, run by hand: the test suite never runs it). A random GPT-2 with
# 64 positions (../gguf/judge/gen_model.py; otherwise model/'s shape and
# spread) is exported with every --type; node-llama-cpp 3.21.1 loads each
# file and generates 32 greedy ids for the 5 prompts of
# ../gguf/judge/prompts.txt (../gguf/judge/llama_judge.mjs: ids in, F32 KV
# cache). They are compared with gpt2run on the source snapshot and on the
# snapshot gpt2export makes back from the file (the file dequantized):
# per type, how many prompts give the same 32 ids and how many leading
# ids agree in all. Writes llama_agreement.txt beside this script.
# Needs python3 with numpy, node, and node-llama-cpp in $LLAMA_DIR (as
# ../gguf/judge/run.sh; here LLAMA_DIR=/work/ref works).
# Usage: LLAMA_DIR=/work/ref testdata/ggml_quant/llama_judge.sh [BUILD_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../build}/bin
judge=$here/../gguf/judge/llama_judge.mjs
n=32
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/../gguf/judge/gen_model.py" "$tmp/model" 64 >/dev/null
prompts=$(grep -v '^#' "$here/../gguf/judge/prompts.txt")

# gpt2run's greedy ids for every prompt, one line each, from snapshot $1.
gpt2run_ids() {
	for p in $prompts; do
		"$bin/gpt2run" --model-dir "$1" --ids "$p" --new-tokens "$n" --greedy \
			--print-ids 2>/dev/null
	done
}

# "equal prompts/5, leading ids agreeing/160" between two files of id lines.
agree() {
	paste -d' ' "$1" "$2" | awk -v n="$n" '{
		split($1, a, ","); split($2, b, ",")
		k = 0; while (k < n && a[k + 1] == b[k + 1]) k++
		same += (k == n); lead += k; total += n; lines++
	} END { printf "%d/%d %d/%d", same, lines, lead, total }'
}

gpt2run_ids "$tmp/model" > "$tmp/source.ids"
{
	echo "# llama.cpp (node-llama-cpp 3.21.1, CPU, F32 KV cache) against gpt2run:"
	echo "# $n greedy ids for each of the 5 prompts of ../gguf/judge/prompts.txt,"
	echo "# on a random GPT-2 (gen_model.py, 64 positions) exported with --type T."
	echo "# Columns: prompts whose $n ids are all equal, leading ids equal summed"
	echo "# over the prompts; against gpt2run on the source snapshot, and on the"
	echo "# snapshot gpt2export makes back from the file (its values dequantized);"
	echo "# then the smallest top-2 logit margin llama.cpp saw. Made by llama_judge.sh."
	echo "# llama.cpp's CPU matmuls round the activations too (F16 for F16 weights,"
	echo "# Q8_0 / Q8_1 for the quantized types), gpt2run's do not: on a model"
	echo "# with margins this small, its quantized paths drift from gpt2run's."
	printf '%-5s %-18s %-18s %s\n' type vs-source vs-dequantized margin
	for t in f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1; do
		"$bin/gpt2export" -q "$tmp/model" "$tmp/$t.gguf" --type "$t" >/dev/null
		# shellcheck disable=SC2086
		node "$judge" "$n" "$tmp/$t.gguf" $prompts 2>"$tmp/$t.margins" |
			cut -d' ' -f3 > "$tmp/$t.llama"
		"$bin/gpt2export" -q "$tmp/$t.gguf" "$tmp/back-$t" >/dev/null
		gpt2run_ids "$tmp/back-$t" > "$tmp/$t.back"
		margin=$(awk '{ print $NF }' "$tmp/$t.margins" | sort -g | head -n1)
		read -r s1 l1 <<< "$(agree "$tmp/$t.llama" "$tmp/source.ids")"
		read -r s2 l2 <<< "$(agree "$tmp/$t.llama" "$tmp/$t.back")"
		printf '%-5s %-18s %-18s %s\n' "$t" "$s1 $l1" "$s2 $l2" "$margin"
	done
} > "$here/llama_agreement.txt"
cat "$here/llama_agreement.txt"
