#!/usr/bin/python3
"""make_exports.py - stconvert's GGUF exports of the Llama fixtures, run by
llama.cpp: the independent reference of tests/cli/stconvert_to_gguf.sh.

Usage: make_exports.py BIN_DIR [NODE_MODULES]
  (BIN_DIR: a build's bin/ with stconvert and strun; NODE_MODULES default
  /work/ref/node_modules, node-llama-cpp 3.21.1's prebuilt llama.cpp)

For each fixture (llama3, llama2_bf16, mistral_nowindow: mistral's copy
without sliding_window, as tests/cli/strun.sh makes it, qwen2, qwen3) and
each type (f32, f16, bf16, q8_0, q4_0), with the stand-in vocabulary (the
fixtures have no tokenizer; ids are fed as ids):
  1. stconvert --stand-in-vocab --to TYPE SNAP X.gguf
  2. gguf-py (gguf.GGUFReader, PYTHONPATH /work/ref/llama.cpp/gguf-py)
     reads X.gguf: general.architecture, every tensor, the token count
  3. llama.cpp's greedy ids (../llama_cpp_greedy.mjs: 5 prompts x 32 ids)
  4. strun's greedy ids on the source snapshot, the same prompts
and records in this folder:
  SHA256SUMS       the exports' sha256 (the files llama.cpp ran)
  <m>_<type>.txt   llama.cpp's ids on the export ("PROMPT IDS" lines)
  AGREEMENT        per export: ids where llama.cpp on the export equals
                   strun on the source, of 160
The exports themselves are not kept (the test re-makes them and checks
their sha256).
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LLAMA = os.path.dirname(HERE)
FIXTURES = ["llama3", "llama2_bf16", "mistral_nowindow", "qwen2", "qwen3"]
TYPES = ["f32", "f16", "bf16", "q8_0", "q4_0"]
sys.path.insert(0, "/work/ref/llama.cpp/gguf-py")
import gguf  # noqa: E402


def snapshot(tmp, m):
    """The fixture's folder, or mistral's copy without its window (its
    folder name is general.name: the test makes the same copy)."""
    if m != "mistral_nowindow":
        return os.path.join(LLAMA, m)
    d = os.path.join(tmp, m)
    shutil.copytree(os.path.join(LLAMA, "mistral"), d)
    cfg = os.path.join(d, "config.json")
    lines = [l for l in open(cfg) if '"sliding_window"' not in l]
    text = "".join(lines).replace('"rope_theta": 1000000.0,', '"rope_theta": 1000000.0')
    open(cfg, "w").write(text)
    return d


def check_gguf(path, n_tokens=256):
    r = gguf.GGUFReader(path)
    f = r.fields["general.architecture"]
    arch = bytes(f.parts[f.data[0]]).decode()
    toks = r.fields["tokenizer.ggml.tokens"]
    assert len(toks.data) == n_tokens, (path, len(toks.data))
    for t in r.tensors:
        assert t.data is not None and t.n_elements > 0, (path, t.name)
    return arch, len(r.tensors)


def greedy_cpp(modules, path):
    out = subprocess.run(["node", os.path.join(LLAMA, "llama_cpp_greedy.mjs"), modules, path],
                         check=True, capture_output=True, text=True).stdout
    return [l.split() for l in out.strip().split("\n")]


def greedy_strun(bindir, snap, prompt):
    return subprocess.run([os.path.join(bindir, "strun"), "--model-dir", snap, "--ids", prompt,
                           "--greedy", "-n", "32", "--ignore-eos", "--print-ids", "-q"],
                          check=True, capture_output=True, text=True).stdout.strip()


def main():
    bindir = os.path.abspath(sys.argv[1])
    modules = sys.argv[2] if len(sys.argv) > 2 else "/work/ref/node_modules"
    sums, agree = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for m in FIXTURES:
            snap = snapshot(tmp, m)
            for t in TYPES:
                name = "%s_%s.gguf" % (m, t)
                out = os.path.join(tmp, name)
                subprocess.run([os.path.join(bindir, "stconvert"), "-q", "--stand-in-vocab",
                                "--to", t, snap, out], check=True)
                sums.append("%s  %s\n" % (hashlib.sha256(open(out, "rb").read()).hexdigest(),
                                          name))
                arch, n = check_gguf(out)
                rows = greedy_cpp(modules, out)
                assert len(rows) == 5, rows
                with open(os.path.join(HERE, "%s_%s.txt" % (m, t)), "w") as f:
                    f.write("".join("%s %s\n" % (p, ids) for p, ids in rows))
                same = 0
                for p, ids in rows:
                    mine = greedy_strun(bindir, snap, p).split(",")
                    same += sum(a == b for a, b in zip(mine, ids.split(",")))
                agree.append("%s %s %d/160\n" % (m, t, same))
                print("%s: %s, %d tensors (gguf-py), llama.cpp = strun on the source: %d/160"
                      % (name, arch, n, same))
    open(os.path.join(HERE, "SHA256SUMS"), "w").write("".join(sums))
    open(os.path.join(HERE, "AGREEMENT"), "w").write("".join(agree))
    return 0


if __name__ == "__main__":
    sys.exit(main())
