#!/usr/bin/env python3
"""Seeds for fuzz_tok_gguf (tiny GGUF tokenizers written with llama.cpp's
gguf-py: each kind tokenizer_gguf.c reads, and a few it refuses) and
fuzz_encode_vocab (a mode byte and a text, from
testdata/tokenizers/extra.inp). Run: python3 make_tok_seeds.py
(GGUF_PY=/work/ref/llama.cpp/gguf-py by default)."""
import os
import sys

sys.path.insert(0, os.environ.get("GGUF_PY", "/work/ref/llama.cpp/gguf-py"))
import gguf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, os.path.join(HERE, "..", "..", "testdata", "tokenizers"))
from make_tokenizer_json import bytes_to_unicode  # noqa: E402


def byte_alphabet():
    """GPT-2's character for each byte, in byte order."""
    return [c for c, _ in sorted(bytes_to_unicode().items(), key=lambda cb: cb[1])]


def write(name, kv):
    path = os.path.join(HERE, "corpus", "tok_gguf", name)
    w = gguf.GGUFWriter(path, "llama")
    for f, v in kv:
        getattr(w, f)(*v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bpe(pre, extra=()):
    toks = byte_alphabet() + ["he", "ll", "hell", "hello", "\u0120w", "\u0120wo", "<|endoftext|>"]
    types = [1] * (len(toks) - 1) + [3]
    merges = ["h e", "l l", "he ll", "hell o", "\u0120 w", "\u0120w o"]
    kv = [("add_tokenizer_model", ("gpt2",)), ("add_token_list", (toks,)),
          ("add_token_types", (types,)), ("add_token_merges", (merges,)),
          ("add_eos_token_id", (len(toks) - 1,))]
    if pre:
        kv.append(("add_tokenizer_pre", (pre,)))
    return kv + list(extra)


def spm(extra=()):
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + \
        ["\u2581", "a", "b", "\u2581a", "ab", "\u2581ab", "\u00e9"]
    types = [2, 3, 3] + [6] * 256 + [1] * 7
    scores = [0.0] * 259 + [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0]
    kv = [("add_tokenizer_model", ("llama",)), ("add_token_list", (toks,)),
          ("add_token_types", (types,)), ("add_token_scores", (scores,)),
          ("add_bos_token_id", (1,)), ("add_eos_token_id", (2,)), ("add_unk_token_id", (0,))]
    return kv + list(extra)


write("bpe-gpt2.gguf", bpe("gpt-2"))
write("bpe-no-pre.gguf", bpe(None))
write("bpe-llama3.gguf", bpe("llama-bpe", [("add_add_bos_token", (True,))]))
write("bpe-qwen2.gguf", bpe("qwen2"))
write("bpe-unknown-pre.gguf", bpe("falcon"))
write("spm.gguf", spm())
write("spm-no-prefix.gguf", spm([("add_add_space_prefix", (False,))]))
write("bpe-bad-merge.gguf", bpe("gpt-2")[:3] + [("add_token_merges", (["hx"],))])
write("bert.gguf", [("add_tokenizer_model", ("bert",)), ("add_token_list", (["a"],))])

SEP = b"\n__ggml_vocab_test__\n"
cases = open(os.path.join(HERE, "..", "..", "testdata", "tokenizers", "extra.inp"), "rb").read().split(SEP)
for i, c in enumerate(c for c in cases if c):
    with open(os.path.join(HERE, "corpus", "encode_vocab", "extra-%02d" % i), "wb") as f:
        f.write(bytes([i & 1]) + c)

# fuzz_tokenizer seeds (mode byte 0, then a tokenizer.json) for the
# pipelines tokenizer_pipe.c reads.
import json  # noqa: E402

BL = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}
alpha = byte_alphabet()
bvocab = {c: i for i, c in enumerate(alpha)}
bvocab.update({"he": 256, "ll": 257, "hell": 258, "hello": 259})
bmerges = ["h e", "l l", ["he", "ll"], "hell o"]
svocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
svocab.update({"<0x%02X>" % b: 3 + b for b in range(256)})
svocab.update({"\u2581": 259, "a": 260, "b": 261, "\u2581a": 262, "ab": 263})
smerges = ["\u2581 a", "a b"]
added = [{"id": 1, "content": "<s>", "special": True}, {"id": 2, "content": "</s>", "special": True}]


def bmodel(**kw):
    m = {"type": "BPE", "vocab": bvocab, "merges": bmerges}
    m.update(kw)
    return m


def smodel(**kw):
    m = {"type": "BPE", "vocab": svocab, "merges": smerges, "byte_fallback": True,
         "fuse_unk": True, "unk_token": "<unk>"}
    m.update(kw)
    return m


split = {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|\\p{L}+|\\p{N}{1,3}|\\s+(?!\\S)|\\s+|[^\\s\\p{L}\\p{N}]+"},
         "behavior": "Isolated", "invert": False}
tmpl = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                  {"Sequence": {"id": "A", "type_id": 0}},
                                                  {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1]}, "</s>": {"id": "</s>", "ids": [2]}}}
seeds = {
    "split-regex.json": {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, BL]},
                         "model": bmodel(ignore_merges=True)},
    "split-nfc.json": {"normalizer": {"type": "NFC"},
                       "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, BL]}, "model": bmodel()},
    "split-string-removed.json": {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": "l"}, "behavior": "Removed", "invert": False}, BL]},
        "model": bmodel()},
    "split-invert.json": {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        dict(split, invert=True), dict(BL, use_regex=True)]}, "model": bmodel()},
    "split-bad-regex.json": {"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"},
                                               "behavior": "Isolated"}, "model": bmodel()},
    "spm-prepend-replace.json": {"added_tokens": added, "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "},
                                                   "content": "\u2581"}]},
        "post_processor": tmpl, "model": smodel()},
    "spm-metaspace.json": {"added_tokens": added,
                           "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                                             "prepend_scheme": "first", "split": True},
                           "model": smodel()},
    "spm-no-fallback.json": {"normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
                             "model": smodel(byte_fallback=False)},
}
for name, j in seeds.items():
    with open(os.path.join(HERE, "corpus", "tokenizer", name), "wb") as f:
        f.write(b"\x00" + json.dumps(j, ensure_ascii=False).encode())
