#!/usr/bin/env python3
"""Build tokenizer.json files for llama-bpe and qwen2 from llama.cpp's
ggml-vocab-*.gguf metadata (tokenizer.ggml.tokens, token_type, merges),
as Hugging Face's own files for those models lay them out, and trimmed to
what the test cases can use.

Layout (after Meta-Llama-3-8B's and Qwen2's tokenizer.json):
  llama-bpe: no normalizer; pre_tokenizer Sequence[Split(Llama 3's
             pattern, Isolated), ByteLevel(use_regex false)]; BPE with
             ignore_merges true and merges as "a b" strings;
             post_processor Sequence[ByteLevel, TemplateProcessing
             <|begin_of_text|> $A]
  qwen2:     normalizer NFC; pre_tokenizer Sequence[Split(Qwen2's
             pattern, Isolated), ByteLevel(use_regex false)]; BPE with
             merges as pairs ["a", "b"]; post_processor ByteLevel
The patterns are the "original regex from tokenizer.json" of llama.cpp's
src/llama-vocab.cpp (the same as tools/gpt2/tokenizer_gguf.c uses).

Trimming: a BPE merge can only produce a token whose bytes occur in the
text it encodes, so every token whose bytes occur in none of the test
texts (ggml-vocab-*.gguf.inp and extra.inp, NFC'd for qwen2, invalid
UTF-8 replaced) is dropped with every merge producing it; a merge never
applied changes no result. Kept: those tokens, the 256 one-byte tokens,
every control and user-defined token (also listed in model.vocab, so
that the ids stay theirs). Ids are the GGUF's; the id space has holes.

Run from anywhere: python3 make_tokenizer_json.py  (needs gguf-py from
llama.cpp: GGUF_PY=/work/ref/llama.cpp/gguf-py by default).
python3 make_tokenizer_json.py --full DIR writes the untrimmed files into
DIR instead (for bench/hf_tokenizer_bench.mjs; not committed).
"""
import json
import os
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("GGUF_PY", "/work/ref/llama.cpp/gguf-py"))
import gguf  # noqa: E402

SEP = "\n__ggml_vocab_test__\n"

# The extra cases, written to extra.inp (one SEP after each, as llama.cpp's
# .inp files); make_extra.js records Hugging Face's ids for them.
EXTRA = [
    b"<|begin_of_text|>Hello<|end_of_text|>",
    b"x<|endoftext|>y <|im_start|>user\nHi<|im_end|>\n",
    b"<|im_start|><|im_start|>  <|im_end|>",
    b"<|reserved_special_token_5|> a<|eot_id|>",
    b"bad \xff\xfe bytes \xc3( half \xe2\x82 end \xf0\x9f\xa6",
    b"\xed\xa0\x80 surrogate, \xc0\xaf overlong",
    b" " * 300,
    b"\n" * 50,
    b"a" + b" " * 100 + b"b",
    "\t\t\t  \n\n  x \r\n\r\n  \u3000 y".encode(),
    b"1234567890123 3.14159 and 100,000,000 or 0x1F",
    "\u0663\u0664\u0665 12345 \u2460\u2461 \uff11\uff12".encode(),
    b"I'LL DO IT, he'S here; don't I'm we'Re",
    "e\u0301 A\u030a o\u0308 \u1100\u1161".encode(),
    "\u4f60\u597d\u4e16\u754c \U0001f999\U0001f999 caf\u00e9".encode(),
    b"    def f(x):\n        return x  # ok\n",
]


def nfc_heavy(n=3000, seed=7):
    """A case for NFC: n characters drawn (Python's random, seeded) from
    letters, spaces and digits, combining marks, precomposed letters,
    Hangul jamo and syllables, and composition exclusions."""
    import random
    rng = random.Random(seed)
    alpha = ["a", "e", "o", "A", "n", " ", "\n", "1", "\u0301", "\u0308", "\u030a", "\u0327",
             "\u0323", "\u00e9", "\u00c5", "\u1100", "\u1161", "\u11a8", "\uac00", "\u0958",
             "\u212b", "\u1e0b\u0323", "\u00f1", "\U0001d15e", "\u0344", "\u2126", "x\u0301\u0301"]
    return "".join(rng.choice(alpha) for _ in range(n)).encode()


EXTRA.append(nfc_heavy())

LLAMA3 = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
          " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
QWEN2 = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
         " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def field(r, key):
    f = r.fields[key]
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        if f.types[1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [int(f.parts[i][0]) for i in f.data]
    return f.parts[f.data[0]][0]


def texts(name, nfc):
    out = []
    for path in (os.path.join(HERE, "ggml-vocab-%s.gguf.inp" % name), os.path.join(HERE, "extra.inp")):
        raw = open(path, "rb").read().decode("utf-8", "replace")
        out += raw.split(SEP)
    if nfc:
        out = [unicodedata.normalize("NFC", t) for t in out]
    return "\x00".join(out).encode("utf-8")


FULL = None  # --full DIR: no trimming, files into DIR


def build(name):
    r = gguf.GGUFReader(os.path.join(HERE, "ggml-vocab-%s.gguf" % name))
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    merges = field(r, "tokenizer.ggml.merges")
    dec = bytes_to_unicode()
    corpus = texts(name, name == "qwen2")

    def tok_bytes(t):
        return bytes(dec[c] for c in t) if all(c in dec for c in t) else None

    keep = set()
    added = []
    for i, t in enumerate(tokens):
        if types[i] in (3, 4):  # control, user defined: added tokens
            keep.add(i)
            added.append({"id": i, "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": bool(types[i] == 3)})
            continue
        b = tok_bytes(t)
        if b is not None and (FULL or len(b) == 1 or b in corpus):
            keep.add(i)
    ids = {t: i for i, t in enumerate(tokens)}
    kept_merges = []
    for m in merges:
        a, b = m.split(" ", 1)
        if ids.get(a + b) in keep:
            kept_merges.append(m if name == "llama-bpe" else [a, b])
    vocab = {tokens[i]: i for i in sorted(keep)}
    pattern = LLAMA3 if name == "llama-bpe" else QWEN2
    j = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None if name == "llama-bpe" else {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": name == "llama-bpe",
             "use_regex": False}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": name == "llama-bpe", "vocab": vocab, "merges": kept_merges},
    }
    if name == "llama-bpe":
        bos = "<|begin_of_text|>"
        j["post_processor"] = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {bos: {"id": bos, "ids": [ids[bos]], "tokens": [bos]}}}]}
    else:
        j["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                               "use_regex": False}
    out = os.path.join(FULL or HERE, "%s.tokenizer.json" % name)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, indent=1)
    print("%s: %d of %d tokens, %d of %d merges" % (out, len(vocab), len(tokens), len(kept_merges), len(merges)))


def build_spm(metaspace=False):
    """llama-spm as Llama-2-7b-hf's tokenizer.json: normalizer Prepend("▁")
    and Replace(" ", "▁"), no pre-tokenizer, BPE with byte_fallback,
    fuse_unk and unk_token <unk>, the BOS template. The merges are what
    transformers' SentencePiece converter makes of a SentencePiece BPE
    model: every pair of tokens whose concatenation is a normal token,
    ordered by that token's score (higher first), then by the pair's ids.
    Trimmed as above, on the normalized texts. metaspace: the layout of
    newer files (Mistral's): no normalizer, pre_tokenizer Metaspace with
    prepend_scheme "first" and split false, written as
    llama-spm-metaspace.tokenizer.json."""
    name = "llama-spm"
    r = gguf.GGUFReader(os.path.join(HERE, "ggml-vocab-%s.gguf" % name))
    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    scores = [float(x) for x in field(r, "tokenizer.ggml.scores")]
    corpus = b"\x00".join(("\u2581" + t.replace(" ", "\u2581")).encode()
                           for t in texts(name, False).decode().split("\x00"))
    keep = set()
    added = []
    for i, t in enumerate(tokens):
        if types[i] in (2, 3, 4):
            keep.add(i)
            added.append({"id": i, "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": bool(types[i] != 4)})
        elif types[i] == 6 or (types[i] == 1 and (FULL or t.encode() in corpus)):
            keep.add(i)
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []
    for i in keep:
        t = tokens[i]
        if types[i] != 1:
            continue
        for k in range(1, len(t)):
            a, b = t[:k], t[k:]
            if a in ids and b in ids and ids[a] in keep and ids[b] in keep:
                merges.append((-scores[i], ids[a], ids[b], a + " " + b))
    merges.sort()
    bos = "<s>"
    j = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": bos, "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {bos: {"id": bos, "ids": [ids[bos]], "tokens": [bos]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                  "ignore_merges": False, "vocab": {tokens[i]: i for i in sorted(keep)},
                  "merges": [m[3] for m in merges]},
    }
    if metaspace:
        j["normalizer"] = None
        j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                              "split": False}
        name += "-metaspace"
    out = os.path.join(FULL or HERE, "%s.tokenizer.json" % name)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False, indent=1)
    print("%s: %d of %d tokens, %d merges" % (out, len(keep), len(tokens), len(merges)))


def main():
    global FULL
    if len(sys.argv) == 3 and sys.argv[1] == "--full":
        FULL = sys.argv[2]
        for n in ("llama-bpe", "qwen2"):
            build(n)
        build_spm()
        return
    with open(os.path.join(HERE, "extra.inp"), "wb") as f:
        for e in EXTRA:
            f.write(e + SEP.encode())
    for n in ("llama-bpe", "qwen2"):
        build(n)
    build_spm()
    build_spm(metaspace=True)


if __name__ == "__main__":
    main()
