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

Also qwen2_tok/: a snapshot of qwen2's config.json and weights (copied)
with a tokenizer.json and tokenizer_config.json (written here: a byte-level BPE of 250 ids, 6
merges, Qwen2's Split regex, special and plain added tokens, two ids left
without a token), exported F32; gguf-py's view of its tokenizer.ggml.*
must be what convert_hf_to_gguf.py's get_vocab_base and SpecialVocab make
of those files (expected_vocab() below, from the JSON alone), and
llama.cpp must load it; its sha256 is recorded with the others.
And llama2_spm/: llama2_bf16's weights with a Llama 2 style tokenizer.json
(BPE with byte_fallback, U+2581 spaces, a Sequence decoder), exported
as it is (BF16): gguf-py's tokenizer.ggml.* must be what
_set_vocab_llama_hf (gguf-py's LlamaHfVocab) makes of the files
(expected_spm_vocab()), and llama.cpp loads it with the ids of the
stand-in BF16 export.
"""
import json
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


sys.path.insert(0, os.path.join(LLAMA, "..", "tokenizers"))
import make_tokenizer_json as mtj  # noqa: E402  (GPT-2's byte table, Qwen2's regex)

QWEN2_SPLIT = mtj.QWEN2


def bytes_to_unicode():
    """GPT-2's byte -> printable character table."""
    return {b: c for c, b in mtj.bytes_to_unicode().items()}


def write_tokenizer(d):
    chars = [bytes_to_unicode()[b] for b in range(256)]
    vocab = {c: i for i, c in enumerate(chars[:244])}
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("o", "w"), ("Ġ", "t"), ("Ġt", "he")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    added = [(250, "<|endoftext|>", True), (251, "<|im_start|>", True),
             (252, "<|im_end|>", True), (253, "<extra>", False)]
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": sp}
                            for i, c, sp in added],
           "normalizer": {"type": "NFC"},
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated",
                "invert": False},
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                "use_regex": False}]},
           "post_processor": None, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": "", "end_of_word_suffix": "",
                     "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                     "vocab": vocab, "merges": ["%s %s" % m for m in merges[:3]] +
                     [list(m) for m in merges[3:]]}}
    cfg = {"add_bos_token": False, "bos_token": None, "eos_token": "<|im_end|>",
           "pad_token": "<|endoftext|>", "model_max_length": 64}
    os.makedirs(d, exist_ok=True)
    json.dump(tok, open(os.path.join(d, "tokenizer.json"), "w"), ensure_ascii=False, indent=1)
    json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=1)


def expected_vocab(d, n_vocab):
    """get_vocab_base and SpecialVocab, from the two files alone."""
    tok = json.load(open(os.path.join(d, "tokenizer.json")))
    cfg = json.load(open(os.path.join(d, "tokenizer_config.json")))
    rev = {i: t for t, i in tok["model"]["vocab"].items()}
    types = {}
    for a in tok["added_tokens"]:
        rev[a["id"]] = a["content"]
        types[a["id"]] = 3 if a["special"] or a["content"].startswith("<|") else 4
    tokens = [rev.get(i, "[PAD%d]" % i) for i in range(n_vocab)]
    ttype = [types.get(i, 1 if i in rev else 5) for i in range(n_vocab)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    ids = {c: i for i, c in enumerate(tokens)}
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2",
            "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": ttype,
            "tokenizer.ggml.merges": merges,
            "tokenizer.ggml.eos_token_id": ids[cfg["eos_token"]],
            "tokenizer.ggml.padding_token_id": ids[cfg["pad_token"]],
            "tokenizer.ggml.bos_token_id": 1,  # config.json's: bos_token is null
            "tokenizer.ggml.add_bos_token": False}


def field(r, key):
    f = r.fields[key]
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        if f.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode() for i in f.data]
        if f.types[-1] == gguf.GGUFValueType.FLOAT32:
            return [float(f.parts[i][0]) for i in f.data]
        return [int(f.parts[i][0]) for i in f.data]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode()
    v = f.parts[f.data[0]][0]
    return bool(v) if f.types[0] == gguf.GGUFValueType.BOOL else int(v)


def tokenizer_export(bindir, modules, tmp):
    tokdir = snap = os.path.join(HERE, "qwen2_tok")
    write_tokenizer(tokdir)
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(LLAMA, "qwen2", f), snap)
    out = os.path.join(tmp, "qwen2_tok_f32.gguf")
    subprocess.run([os.path.join(bindir, "stconvert"), "-q", snap, out], check=True)
    r = gguf.GGUFReader(out)
    for k, want in expected_vocab(tokdir, 256).items():
        got = field(r, k)
        assert got == want, (k, got, want)
    assert "tokenizer.ggml.unknown_token_id" not in r.fields
    rows = greedy_cpp(modules, out)
    want = [l.split() for l in open(os.path.join(LLAMA, "qwen2", "llama_cpp_greedy.txt"))]
    assert rows == want, "qwen2_tok: llama.cpp's ids are not the stand-in export's"
    print("qwen2_tok_f32.gguf: tokenizer.ggml.* as convert_hf_to_gguf writes them "
          "(gguf-py), llama.cpp loads it: 160/160")
    return "%s  qwen2_tok_f32.gguf\n" % hashlib.sha256(open(out, "rb").read()).hexdigest()


def write_spm_tokenizer(d):
    """A Llama 2 style tokenizer.json: BPE with byte_fallback, U+2581 spaces."""
    sp = "\u2581"
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(245):
        vocab["<0x%02X>" % b] = len(vocab)
    for t in (sp, sp + "t", "he", sp + "the"):
        vocab[t] = len(vocab)
    added = [(0, "<unk>", True), (1, "<s>", True), (2, "</s>", True),
             (252, "<extra>", False), (253, "<sp>", True)]
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": s}
                            for i, c, s in added],
           "normalizer": {"type": "Sequence", "normalizers": [
               {"type": "Prepend", "prepend": sp},
               {"type": "Replace", "pattern": {"String": " "}, "content": sp}]},
           "pre_tokenizer": None, "post_processor": None,
           "decoder": {"type": "Sequence", "decoders": [
               {"type": "Replace", "pattern": {"String": sp}, "content": " "},
               {"type": "ByteFallback"}, {"type": "Fuse"},
               {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                     "continuing_subword_prefix": None, "end_of_word_suffix": None,
                     "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                     "vocab": vocab, "merges": [sp + " t", "h e", sp + "t he"]}}
    cfg = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
           "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None,
           "additional_special_tokens": ["<sp>"], "legacy": False}
    os.makedirs(d, exist_ok=True)
    json.dump(tok, open(os.path.join(d, "tokenizer.json"), "w"), ensure_ascii=False, indent=1)
    json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=1)


def expected_spm_vocab(d, n_vocab):
    """_set_vocab_llama_hf / LlamaHfVocab from the two files alone: base
    tokens, then the added ones past them; -1000 scores; <0xHH> BYTE (6),
    the special tokens map's CONTROL, other added USER_DEFINED; no merges.
    (Ids up to vocab_size padded, as the gpt2 path pads.)"""
    import re
    tok = json.load(open(os.path.join(d, "tokenizer.json")))
    cfg = json.load(open(os.path.join(d, "tokenizer_config.json")))
    rev = {i: t for t, i in tok["model"]["vocab"].items()}
    added = {a["id"]: a["content"] for a in tok["added_tokens"]}
    text = {**rev, **added}
    ids = {t: i for i, t in text.items()}
    special = {ids[cfg[k]] for k in ("bos_token", "eos_token", "unk_token", "pad_token")
               if cfg.get(k)} | {ids[t] for t in cfg["additional_special_tokens"]}
    tokens, types = [], []
    for i in range(n_vocab):
        t = text.get(i)
        tokens.append(t if t is not None else "[PAD%d]" % i)
        types.append(5 if t is None else 6 if re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", t)
                     else 3 if i in special else 4 if i not in rev else 1)
    return {"tokenizer.ggml.model": "llama", "tokenizer.ggml.pre": "default",
            "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.scores": [-1000.0] * n_vocab,
            "tokenizer.ggml.bos_token_id": ids[cfg["bos_token"]],
            "tokenizer.ggml.eos_token_id": ids[cfg["eos_token"]],
            "tokenizer.ggml.unknown_token_id": ids[cfg["unk_token"]],
            "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.add_eos_token": False}


def spm_export(bindir, modules, tmp):
    snap = os.path.join(HERE, "llama2_spm")
    write_spm_tokenizer(snap)
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(LLAMA, "llama2_bf16", f), snap)
    out = os.path.join(tmp, "llama2_spm_bf16.gguf")
    subprocess.run([os.path.join(bindir, "stconvert"), "-q", snap, out], check=True)
    r = gguf.GGUFReader(out)
    for k, want in expected_spm_vocab(snap, 256).items():
        got = field(r, k)
        assert got == want, (k, got, want)
    for k in ("tokenizer.ggml.merges", "tokenizer.ggml.padding_token_id",
              "tokenizer.ggml.add_space_prefix"):
        assert k not in r.fields, k
    rows = greedy_cpp(modules, out)
    want = [l.split() for l in open(os.path.join(HERE, "llama2_bf16_bf16.txt"))]
    assert rows == want, "llama2_spm: llama.cpp's ids are not the stand-in export's"
    print("llama2_spm_bf16.gguf: tokenizer.ggml.* as _set_vocab_llama_hf writes them "
          "(gguf-py), llama.cpp loads it: 160/160")
    return "%s  llama2_spm_bf16.gguf\n" % hashlib.sha256(open(out, "rb").read()).hexdigest()


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
        sums.append(tokenizer_export(bindir, modules, tmp))
        sums.append(spm_export(bindir, modules, tmp))
    open(os.path.join(HERE, "SHA256SUMS"), "w").write("".join(sums))
    open(os.path.join(HERE, "AGREEMENT"), "w").write("".join(agree))
    return 0


if __name__ == "__main__":
    sys.exit(main())
