#!/bin/bash
# llama_files.sh [STDIFF] - stdiff's default rules on files made by
# llama.cpp's own quantizer (doc/ggml.md, "Expected error"): a random
# Qwen2 snapshot of 2 layers with rows of 512 and 1024 (bench/qwen2_random.py's
# generator, shapes patched), its F16 GGUF, llama_model_quantize
# (bench/llama_quantize.py, node-llama-cpp 3.21.1's libllama) to each
# llama_ftype below, then `stdiff --map qwen2 SNAPSHOT FILE` (exit 0 wanted),
# and a Q4_K_M copy with one scale and one code byte changed (exit 1 wanted).
# Not part of the suite: it needs Python and node-llama-cpp.
set -u
here=$(cd "$(dirname "$0")" && pwd)
S=${1:-$here/../../build/bin/stdiff}
lib=$(ls /work/ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v*.so | head -1)
dir=$(mktemp -d /tmp/llama_files.XXXXXX)
trap 'rm -rf "$dir"' EXIT
python3 - "$here/../../bench" "$dir" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import qwen2_random as q
q.SHAPES["tiny"] = (2, 512, 4, 2, 1024, 1024)
out = sys.argv[2]
sys.argv = ["qwen2_random.py", out + "/snap", out + "/f16.gguf", "f16", "tiny"]
q.main()
PY
# Q4_K_M Q5_K_M Q6_K Q2_K Q3_K_M IQ4_XS IQ4_NL IQ3_S TQ1_0 TQ2_0
for ft in 15 17 18 10 12 30 25 26 36 37; do
	python3 "$here/../../bench/llama_quantize.py" "$lib" "$dir/f16.gguf" "$dir/$ft.gguf" $ft \
		>"$dir/$ft.log" 2>&1 || { echo "ftype $ft: llama_model_quantize failed"; continue; }
	out=$("$S" --map qwen2 "$dir/snap" "$dir/$ft.gguf")
	echo "ftype $ft: exit $?: ${out##*$'\n'}"
done
PYTHONPATH=/work/ref/llama.cpp/gguf-py python3 - "$dir" <<'PY'
import shutil, sys
import gguf
d = sys.argv[1]
shutil.copy(d + "/15.gguf", d + "/15-damaged.gguf")
r = gguf.GGUFReader(d + "/15.gguf")
at = {t.name: t.data_offset for t in r.tensors}
with open(d + "/15-damaged.gguf", "r+b") as f:
    # block 7's F16 d, high byte; a code byte of block 3
    for name, off, xor in (("blk.0.ffn_gate.weight", 144 * 7 + 1, 0x20),
                           ("blk.1.attn_q.weight", 144 * 3 + 40, 0x11)):
        f.seek(at[name] + off)
        b = f.read(1)[0]
        f.seek(at[name] + off)
        f.write(bytes([b ^ xor]))
PY
"$S" --map qwen2 "$dir/snap" "$dir/15-damaged.gguf"
echo "Q4_K_M damaged: exit $?"
