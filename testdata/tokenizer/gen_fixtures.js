#!/usr/bin/env node
// gen_fixtures.js - makes the reference ids that tests/check_tokenizer.c
// compares the C tokenizer with. The ids come from Hugging Face's Rust
// tokenizer through its Node binding (npm `tokenizers` 0.23.2). The test
// suite only reads the files this writes; it needs neither Node nor Python.
//
// Run: cd testdata/tokenizer && npm install && node gen_fixtures.js
//
// It writes:
//   corpus/*.txt, invalid.bin  inputs; english.txt and code.txt are committed
//                     inputs (the project's docs and code, the Apache-2.0
//                     license text, a paragraph of contractions); the others
//                     are written here from the strings below
//   corpus/*.ids      "replaced N", "ids a,b,c" (Hugging Face, added tokens
//                     split out) and, when different, "nospecial a,b,c"
//                     (<|endoftext|> as plain text, as GPT2_ENCODE_NO_SPECIAL)
//   fuzz.txt          random strings: "hex<TAB>replaced<TAB>ids<TAB>nospecial-ids",
//                     the last "=" when equal to ids
//   long.txt          100 KB words made by a generator the C test repeats:
//                     "kind<TAB>bytes<TAB>seed<TAB>n_ids<TAB>fnv1a64 of the ids"
//   variants/*/       small tokenizers in other file layouts, with cases.txt
//                     in the fuzz.txt format
//
// Invalid UTF-8 is replaced by U+FFFD before Hugging Face sees the text
// (Node's decoder, which follows the WHATWG/Unicode "maximal subpart"
// rule); the script checks that /usr/bin/python3's
// bytes.decode('utf-8', 'replace') gives the same text and counts the
// replacements with it.
"use strict";
const fs = require("fs");
const path = require("path");
const os = require("os");
const { execFileSync } = require("child_process");
const tk = require("tokenizers");

const HERE = __dirname;
const GPT2 = path.join(HERE, "../gpt2-tokenizer");

// ---- helpers -----------------------------------------------------------

// mulberry32: a small seeded PRNG, so the fuzz strings are reproducible.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Python's view of each input: the replaced text (hex of its UTF-8) and the
// number of replacements, for many inputs in one run.
function pythonReplace(buffers) {
  const tmp = path.join(os.tmpdir(), `tok-fixtures-${process.pid}.txt`);
  fs.writeFileSync(tmp, buffers.map((b) => b.toString("hex")).join("\n") + "\n");
  const py = `
import codecs, sys
n = 0
def count(e):
    global n
    n += 1
    return ('\\ufffd', e.end)
codecs.register_error('count', count)
for line in open(sys.argv[1]):
    n = 0
    s = bytes.fromhex(line.strip()).decode('utf-8', 'count')
    assert s == bytes.fromhex(line.strip()).decode('utf-8', 'replace')
    print(s.encode('utf-8').hex(), n)
`;
  const out = execFileSync("/usr/bin/python3", ["-c", py, tmp], { maxBuffer: 1 << 30 }).toString();
  fs.unlinkSync(tmp);
  return out.trimEnd().split("\n").map((l) => {
    const [hex, n] = l.split(" ");
    return { text: Buffer.from(hex, "hex").toString("utf8"), hex, replaced: Number(n) };
  });
}

// Replace invalid UTF-8 (Node's decoder), checked against Python.
function replaceAll(buffers) {
  const py = pythonReplace(buffers);
  return buffers.map((b, i) => {
    const s = b.toString("utf8");
    if (Buffer.from(s, "utf8").toString("hex") !== py[i].hex)
      throw new Error(`input ${i}: Node and Python replace invalid UTF-8 differently`);
    return { text: s, replaced: py[i].replaced };
  });
}

async function ids(tok, text) {
  return (await tok.encode(text)).getIds();
}

// The GPT-2 tokenizer as Hugging Face loads it, and the same without added
// tokens: plain GPT-2, where "<|endoftext|>" is just text.
function loadGpt2() {
  const json = JSON.parse(fs.readFileSync(path.join(GPT2, "tokenizer.json"), "utf8"));
  const special = tk.Tokenizer.fromFile(path.join(GPT2, "tokenizer.json"));
  json.added_tokens = [];
  const plain = tk.Tokenizer.fromString(JSON.stringify(json));
  return { special, plain };
}

// ---- the corpus ---------------------------------------------------------

const cp = (...xs) => String.fromCodePoint(...xs);
const CORPUS = {
  whitespace: [
    "  leading spaces, trailing spaces   ",
    "one space two  spaces three   spaces four    spaces",
    "tabs\there\t\tand\t\t\tthere \t mixed\t \t",
    "newlines\nLF\n\nLF LF\n\n\nthree\r\nCRLF\r\n\r\nCRLF CRLF\rCR\r\rCR CR",
    "space before newline \nand two  \n\nand tab\t\n",
    "vertical\vtab and form\ffeed and \v\f\r\n mixed",
    "indented:\n    four\n        eight\n\ttab\n\t\ttwo tabs\n  \t  \n",
    `NBSP${cp(0xa0)}here and${cp(0xa0, 0xa0)}two and ${cp(0xa0)} mixed`,
    `ideographic${cp(0x3000)}space${cp(0x3000, 0x3000)}two ${cp(0x3000)}x`,
    `NEL${cp(0x85)}next line${cp(0x85, 0x85)}two ${cp(0x85)}`,
    `en${cp(0x2002)}em${cp(0x2003)}thin${cp(0x2009)}hair${cp(0x200a)}narrow${cp(0x202f)}math${cp(0x205f)}ogham${cp(0x1680)}x`,
    `line${cp(0x2028)}separator paragraph${cp(0x2029)}separator`,
    `not spaces: mongolian${cp(0x180e)}vowel zero${cp(0x200b)}width BOM${cp(0xfeff)}here ZWJ${cp(0x200d)}ZWNJ${cp(0x200c)}`,
    `${cp(0xfeff)}BOM at the start and ${cp(0x200b)} ZWSP between spaces ${cp(0x180e)} `,
    " \n \t \r \v \f   \n\n  \t\t  x  \n",
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n end",
    "                                                                                                end",
    "words\n \n \n \n x \n\t\n\t x\t\n  ",
    "trailing whitespace at the very end \t \n \u3000 \u0085   ",
  ].join("\n"),
  numbers: [
    "0 1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890",
    "3.14159 2.71828 1,000,000 1_000_000 1e10 -42 +7 0x1F 0b1010 007 10% $5.99",
    "2024-01-31 12:34:56 v1.2.3 192.168.0.1 +1 (555) 123-4567",
    "31415926535897932384626433832795028841971693993751058209749445923078164062862089986280348253421170679",
    "a1b2c3 abc123def 123abc abc123 1st 2nd 3rd 4th 21st",
    `Arabic-Indic ${cp(0x660, 0x661, 0x662, 0x663, 0x664)} Devanagari ${cp(0x966, 0x967, 0x968)} fullwidth ${cp(0xff11, 0xff12, 0xff13)}`,
    `superscripts x${cp(0xb2)} y${cp(0xb3)} z${cp(0xb9)} fractions ${cp(0xbd)} ${cp(0xbc)} ${cp(0x2155)} roman ${cp(0x2160, 0x2161, 0x2162)} ${cp(0x216b)}`,
    `circled ${cp(0x2460, 0x2461)} math ${cp(0x1d7ce, 0x1d7cf)} ${cp(0x1d7d8)}`,
    "   12   34\t56\n78 9",
  ].join("\n"),
  punct: [
    "Hello, world! How are you? I'm fine... really!!! Are you sure??? Yes?!",
    "Brackets (round) [square] {curly} <angle> and \"double\" 'single' `back`",
    "Operators: a+b a-b a*b a/b a%b a^b a&b a|b a~b a<<b a>>b a==b a!=b a<=b a>=b",
    "Runs: !!!!!! ?????? ...... ------ ====== ****** ###### @@@@@@ $$$$$$ ______",
    "Mixed runs: !?.,;:-_=+*&^%$#@~`|\\/<>[]{}() and ---> <=> :-) ;-) :'(",
    "Markdown: # Title\n## Sub\n- item\n* item\n1. item\n> quote\n```c\ncode\n```\n| a | b |\n|---|---|",
    "URLs: https://example.com/path?q=1&r=2#frag mailto:a@b.c file:///tmp/x",
    `Typographic: ${cp(0x201c)}quotes${cp(0x201d)} ${cp(0x2018)}single${cp(0x2019)} ${cp(0x2014)}dash${cp(0x2013)}en${cp(0x2026)} ${cp(0xab)}guillemets${cp(0xbb)} ${cp(0xbf)}Qu${cp(0xe9)}? ${cp(0xa1)}S${cp(0xed)}!`,
    `Symbols: ${cp(0xa9)} ${cp(0xae)} ${cp(0x2122)} ${cp(0xb0)}C ${cp(0x20ac)}5 ${cp(0xa3)}3 ${cp(0xa5)}1 ${cp(0x2192)} ${cp(0x2190)} ${cp(0x221e)} ${cp(0x2211)} ${cp(0x221a)} ${cp(0x2260)}`,
    "Space then punct: a , b . c ! d ? e ... f --- g",
  ].join("\n"),
  unicode: [
    `Emoji: ${cp(0x1f600)} ${cp(0x1f602, 0x1f602)} ${cp(0x1f44d, 0x1f3fd)} ${cp(0x2764, 0xfe0f)} ${cp(0x1f525)}x${cp(0x1f525)}`,
    `ZWJ family: ${cp(0x1f468, 0x200d, 0x1f469, 0x200d, 0x1f467, 0x200d, 0x1f466)} and ${cp(0x1f469, 0x1f3fd, 0x200d, 0x1f4bb)}`,
    `Flags: ${cp(0x1f1eb, 0x1f1f7)} ${cp(0x1f1ef, 0x1f1f5)} ${cp(0x1f1fa, 0x1f1f8)}${cp(0x1f1e9, 0x1f1ea)} ${cp(0x1f3f4, 0xe0067, 0xe0062, 0xe0065, 0xe006e, 0xe0067, 0xe007f)}`,
    "Chinese: 我们今天去北京。你好，世界！这是一个测试。",
    "Japanese: 東京は日本の首都です。ひらがな カタカナ ｶﾀｶﾅ",
    "Korean: 안녕하세요, 세계! 한국어 텍스트입니다.",
    "Arabic: مرحبا بالعالم. هذا اختبار للنص العربي ١٢٣.",
    "Hebrew: שלום עולם, זה מבחן.",
    "Devanagari: नमस्ते दुनिया। यह एक परीक्षण है। क्षत्रिय ज्ञान",
    "Thai: สวัสดีชาวโลก นี่คือการทดสอบ",
    "Greek and Cyrillic: Καλημέρα κόσμε. Привет, мир! Ёжик.",
    `NFC: caf${cp(0xe9)} na${cp(0xef)}ve r${cp(0xe9)}sum${cp(0xe9)} ${cp(0xc5)}ngstr${cp(0xf6)}m Pok${cp(0xe9)}mon`,
    `NFD: cafe${cp(0x301)} nai${cp(0x308)}ve re${cp(0x301)}sume${cp(0x301)} A${cp(0x30a)}ngstro${cp(0x308)}m Poke${cp(0x301)}mon`,
    `Combining pile: a${cp(0x300, 0x301, 0x302, 0x303, 0x304)} ${cp(0x301)}lone mark ${cp(0x20dd)}`,
    `Vietnamese: Ti${cp(0x1ebf)}ng Vi${cp(0x1ec7)}t c${cp(0xf3)} d${cp(0x1ea5)}u`,
    `Unicode 16 letters: ${cp(0x1c89, 0x1c8a)} ${cp(0xa7cb)} and unassigned ${cp(0x0378)} ${cp(0xe0000)} private ${cp(0xe000)} ${cp(0x10fffd)}`,
    `Math letters: ${cp(0x1d400, 0x1d401)} ${cp(0x1d538)} ligature ${cp(0xfb01)}nd ${cp(0x2126)}`,
    `Replacement char in valid text: ${cp(0xfffd)} and noncharacters ${cp(0xfffe)} ${cp(0xffff)}`,
  ].join("\n"),
  control: [
    "NUL\x00inside and \x00\x00 two and at the end\x00",
    "C0: \x01\x02\x03\x04\x05\x06\x07\x08 \x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f end",
    "DEL\x7f and ESC \x1b[31mred\x1b[0m and BEL\x07",
    `C1: ${cp(0x80, 0x81, 0x84, 0x86, 0x9f)} and NEL ${cp(0x85)} soft hyphen co${cp(0xad)}op`,
    "backspace a\bb carriage\rreturn",
  ].join("\n"),
  special: [
    "<|endoftext|>",
    "Text before<|endoftext|>text after",
    "A sentence. <|endoftext|> Another one.",
    "<|endoftext|><|endoftext|>twice",
    "inside<|endoftext|>word and at the end <|endoftext|>",
    "not quite: <|endoftext| and <|endoftext|>> and <<|endoftext|> and <|end of text|>",
    "nested <|<|endoftext|>|> and partial <|endo",
    "newline\n<|endoftext|>\nand spaces   <|endoftext|>   ",
    "<|endoftext|>",
  ].join(""),
};

// Invalid UTF-8 of every kind, between valid text.
const INVALID = Buffer.concat([
  Buffer.from("lone continuation \x80 and \xbf\xbf here", "latin1"),
  Buffer.from(" overlong \xc0\x80 \xc1\xbf \xe0\x80\x80 \xf0\x80\x80\x80", "latin1"),
  Buffer.from(" surrogates \xed\xa0\x80 \xed\xbf\xbf and ok \xed\x9f\xbf", "latin1"),
  Buffer.from(" too big \xf4\x90\x80\x80 \xf5\x80 \xf8\x88\x80\x80\x80 \xff\xfe", "latin1"),
  Buffer.from(" truncated \xe2\x82 x \xf0\x9f\x98 y \xc3 z \xe2 end", "latin1"),
  Buffer.from(" mixed word caf\xe9 na\xefve and r\xc3\xa9sum\xe9", "latin1"),
  Buffer.from(" space then bad \xff and bad then space\xfe ", "latin1"),
  Buffer.from(" emoji cut \xf0\x9f\x98\x80\xf0\x9f\x98<|endoftext|>\x80 done", "latin1"),
  Buffer.from("\xe2\x82", "latin1"), // truncated at the very end
]);

// ---- long words (the C test makes the same bytes) --------------------------

// xorshift32; the C test has the same generator.
function longWord(kind, n, seed) {
  let x = seed >>> 0;
  const next = () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
  };
  const b = Buffer.alloc(n);
  const punct = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~";
  const ws = " \t\n";
  if (kind === "cjk") {
    // 3-byte characters U+4E00 + (x % 20000); n must be a multiple of 3.
    for (let i = 0; i < n; i += 3) b.write(String.fromCodePoint(0x4e00 + (next() % 20000)), i, "utf8");
    return b;
  }
  for (let i = 0; i < n; i++) {
    switch (kind) {
      case "a": b[i] = 0x61; break;
      case "ab": b[i] = i % 2 ? 0x62 : 0x61; break;
      case "letters": b[i] = 0x61 + (next() % 26); break;
      case "digits": b[i] = 0x30 + (next() % 10); break;
      case "punct": b[i] = punct.charCodeAt(next() % punct.length); break;
      case "spaces": b[i] = i === n - 1 ? 0x78 : ws.charCodeAt(next() % ws.length); break;
      case "nul": b[i] = 0; break;
      default: throw new Error(kind);
    }
  }
  return b;
}

function fnv1a64(idList) {
  let h = 0xcbf29ce484222325n;
  const p = 0x100000001b3n, m = (1n << 64n) - 1n;
  for (const id of idList)
    for (let k = 0; k < 4; k++) {
      h ^= BigInt((id >>> (8 * k)) & 255);
      h = (h * p) & m;
    }
  return h.toString(16).padStart(16, "0");
}

const LONG = [
  ["a", 100000, 1], ["ab", 100000, 1], ["letters", 100000, 7], ["digits", 100000, 11],
  ["punct", 100000, 13], ["spaces", 100000, 17], ["nul", 100000, 1], ["cjk", 99999, 19],
];

// ---- fuzz strings ------------------------------------------------------------

function fuzzStrings(count, seed) {
  const r = prng(seed);
  const pick = (a) => a[Math.floor(r() * a.length)];
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const spaces = [0x20, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x85, 0xa0, 0x1680, 0x2000, 0x2005,
                  0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000];
  const notSpaces = [0x180e, 0x200b, 0x200c, 0x200d, 0xfeff, 0x2060, 0x00ad, 0x034f];
  const scripts = [[0x41, 0x5a], [0x61, 0x7a], [0xc0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff],
                   [0x590, 0x5ff], [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f],
                   [0x1100, 0x11ff], [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3],
                   [0x1f300, 0x1f6ff], [0x1f900, 0x1f9ff], [0x300, 0x36f], [0x2000, 0x2bff]];
  const atoms = [
    () => pick(["the", "The", "THE", "hello", "World", "tokenizer", "a", "I", "x"]),
    () => " ".repeat(int(1, 4)),
    () => pick(["\t", "\n", "\r\n", "\n\n", " \n", "\t\t", "\r"]),
    () => pick(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M",
                "'LL", "'D", "'", "''", "'x", "n't", "N'T"]),
    () => String(int(0, 99999)),
    () => pick(["!", "?", ".", ",", "...", "--", "()", "[]", "{}", "<>", "\"", "#", "@", "$",
                "%", "^", "&", "*", "_", "=", "+", "|", "\\", "/", "~", "`", ";", ":"]),
    () => cp(pick(spaces)),
    () => cp(pick(notSpaces)),
    () => { const [lo, hi] = pick(scripts); return cp(int(lo, hi)); },
    () => { // any code point but a surrogate
      for (;;) { const c = int(0, 0x10ffff); if (c < 0xd800 || c > 0xdfff) return cp(c); } },
    () => pick(["<|endoftext|>", "<|endoftext|>", "<|", "|>", "endoftext", "<|endoftext"]),
    () => "\x00",
    () => cp(int(1, 0x1f)),
    () => Buffer.from(pick([[0x80], [0xbf], [0xc0, 0x80], [0xc3], [0xe2, 0x82], [0xe0, 0x80],
                            [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98], [0xf4, 0x90, 0x80, 0x80],
                            [0xf5], [0xff], [0xfe, 0xff], [0xf0, 0x80, 0x80, 0x80]])),
  ];
  const out = [];
  for (let i = 0; i < count; i++) {
    const parts = [];
    const n = int(1, 20);
    for (let k = 0; k < n; k++) {
      const a = pick(atoms)();
      parts.push(Buffer.isBuffer(a) ? a : Buffer.from(a, "utf8"));
    }
    out.push(Buffer.concat(parts));
  }
  return out;
}

// ---- small tokenizers in other layouts ---------------------------------------

// A 256-byte alphabet plus GPT-2's first N merges, renumbered.
function miniModel(nMerges) {
  const vocab = JSON.parse(fs.readFileSync(path.join(GPT2, "vocab.json"), "utf8"));
  const lines = fs.readFileSync(path.join(GPT2, "merges.txt"), "utf8").split("\n");
  const merges = lines.filter((l) => l && !l.startsWith("#version")).slice(0, nMerges);
  const mini = {};
  for (const [k, v] of Object.entries(vocab)) if (v < 256) mini[k] = v;
  let next = 256;
  for (const m of merges) {
    const [a, b] = m.split(" ");
    if (!(a + b in mini)) mini[a + b] = next++;
  }
  return { vocab: mini, merges, next };
}

const VARIANT_TEXTS = [
  "Hello world, the tokenizer's test. It's the THE the.",
  "  leading and trailing  ",
  "the<|endoftext|>the <|im_start|>user<|im|>x<|im_start|>",
  "ignore merges: tokenizer Tokenizer tokenizers the",
  "no space first",
  " space first",
  "tabs\tand\nnewlines\n\n",
  "caf\u00e9 \u4e2d\u6587 \u{1f600}",
  "",
];

async function makeVariants() {
  const { vocab, merges, next } = miniModel(400);
  const eot = next, imStart = next + 1, im = next + 3; // next + 2 is a hole
  const extra = { "\u0120tokenizer": next + 4 }; // reachable only with ignore_merges
  const base = {
    version: "1.0", truncation: null, padding: null,
    added_tokens: [{ id: eot, content: "<|endoftext|>", single_word: false, lstrip: false,
                     rstrip: false, normalized: true, special: true }],
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "",
             end_of_word_suffix: "", fuse_unk: false, byte_fallback: false, ignore_merges: false,
             vocab: { ...vocab, "<|endoftext|>": eot }, merges },
  };
  const clone = () => JSON.parse(JSON.stringify(base));
  const variants = {};

  // Merges as pairs, keys in another order, optional keys missing, unknown
  // keys, more added tokens (one not special, two sharing a prefix).
  {
    const j = clone();
    delete j.model.type; delete j.model.byte_fallback; delete j.model.ignore_merges;
    delete j.pre_tokenizer.use_regex;
    j.model.merges = merges.map((m) => m.split(" "));
    // Hugging Face refuses unknown keys at the top level and nested
    // objects in unknown model keys; the C loader ignores both.
    j.model.future_option = [1, 2, "x"];
    j.model.dropout_seed = null;
    j.added_tokens = [
      { content: "<|endoftext|>", special: true, id: eot, rstrip: false, lstrip: false,
        normalized: true, single_word: false },
      { id: imStart, content: "<|im_start|>", special: true, normalized: false, extra: 1,
        single_word: false, lstrip: false, rstrip: false },
      { special: false, id: im, content: "<|im|>", single_word: false, lstrip: false,
        rstrip: false, normalized: true },
    ];
    j.model = { merges: j.model.merges, vocab: j.model.vocab, ...j.model };
    variants.pairs = { "tokenizer.json": JSON.stringify(j) };
  }
  {
    const j = clone();
    j.pre_tokenizer.add_prefix_space = true;
    variants.prefix = { "tokenizer.json": JSON.stringify(j, null, 2) };
  }
  {
    const j = clone();
    j.pre_tokenizer.use_regex = false;
    variants.noregex = { "tokenizer.json": JSON.stringify(j) };
  }
  {
    const j = clone();
    j.model.ignore_merges = true;
    Object.assign(j.model.vocab, extra);
    variants.ignore = { "tokenizer.json": JSON.stringify(j) };
  }
  {
    // vocab.json with \uXXXX escapes for everything outside ASCII (as
    // OpenAI's encoder.json), merges.txt with CRLF line ends. (Hugging
    // Face refuses empty lines in merges.txt; the C loader skips them.)
    const v = JSON.stringify({ ...vocab, "<|endoftext|>": eot })
      .replace(/[\u0080-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
    variants.files = {
      "vocab.json": v,
      "merges.txt": "#version: 0.2\r\n" + merges.join("\r\n") + "\r\n",
    };
  }

  for (const [name, files] of Object.entries(variants)) {
    const dir = path.join(HERE, "variants", name);
    fs.mkdirSync(dir, { recursive: true });
    for (const [f, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, f), content);
    let tok, plain;
    if (files["tokenizer.json"]) {
      tok = tk.Tokenizer.fromFile(path.join(dir, "tokenizer.json"));
      const j = JSON.parse(files["tokenizer.json"]);
      j.added_tokens = j.added_tokens.filter((a) => !a.special);
      plain = tk.Tokenizer.fromString(JSON.stringify(j));
    } else {
      // As transformers loads vocab.json + merges.txt: ByteLevel and
      // <|endoftext|> as a special token.
      const model = await tk.BPE.fromFile(path.join(dir, "vocab.json"), path.join(dir, "merges.txt"));
      tok = new tk.Tokenizer(model);
      tok.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
      tok.addSpecialTokens(["<|endoftext|>"]);
      plain = new tk.Tokenizer(await tk.BPE.fromFile(path.join(dir, "vocab.json"), path.join(dir, "merges.txt")));
      plain.setPreTokenizer(tk.byteLevelPreTokenizer(false, true));
    }
    await writeCases(path.join(dir, "cases.txt"), tok, plain,
                     VARIANT_TEXTS.map((s) => Buffer.from(s, "utf8")));
  }
}

// Ids of text with special tokens not split out. The tokenizer without them
// numbers its other added tokens differently, so ids are mapped back to the
// full tokenizer's by their text (model ids map to themselves).
async function plainIds(tok, plain, text) {
  return (await ids(plain, text)).map((id) => {
    const back = tok.tokenToId(plain.idToToken(id));
    if (back === null || back === undefined) throw new Error(`id ${id} does not map back`);
    return back;
  });
}

async function writeCases(file, tok, plain, buffers) {
  const rep = replaceAll(buffers);
  let out = "";
  for (let i = 0; i < buffers.length; i++) {
    const a = await ids(tok, rep[i].text), b = await plainIds(tok, plain, rep[i].text);
    const bs = a.join(",") === b.join(",") ? "=" : b.join(",");
    out += `${buffers[i].toString("hex")}\t${rep[i].replaced}\t${a.join(",")}\t${bs}\n`;
  }
  fs.writeFileSync(file, out);
}

// ---- main ----------------------------------------------------------------------

async function main() {
  const { special, plain } = loadGpt2();
  const cdir = path.join(HERE, "corpus");

  // Sanity: the README's example.
  const eot = await ids(plain, "<|endoftext|>");
  if (eot.join(" ") !== "27 91 437 1659 5239 91 29") throw new Error("plain GPT-2 check failed");

  for (const [name, text] of Object.entries(CORPUS)) fs.writeFileSync(path.join(cdir, name + ".txt"), text);
  fs.writeFileSync(path.join(cdir, "invalid.bin"), INVALID);
  const names = fs.readdirSync(cdir).filter((f) => /\.(txt|bin)$/.test(f)).sort();
  const bufs = names.map((f) => fs.readFileSync(path.join(cdir, f)));
  const rep = replaceAll(bufs);
  for (let i = 0; i < names.length; i++) {
    const a = await ids(special, rep[i].text), b = await plainIds(special, plain, rep[i].text);
    const base = names[i].replace(/\.(txt|bin)$/, "");
    fs.writeFileSync(path.join(cdir, base + ".ids"),
                     `replaced ${rep[i].replaced}\nids ${a.join(",")}\n` +
                     (a.join(",") === b.join(",") ? "" : `nospecial ${b.join(",")}\n`));
    const back = await special.decode(a, false);
    if (back !== rep[i].text) throw new Error(`${names[i]}: Hugging Face does not round-trip`);
    console.log(`${names[i]}: ${bufs[i].length} bytes, ${a.length} ids, ${rep[i].replaced} replaced`);
  }

  let longOut = "";
  for (const [kind, n, seed] of LONG) {
    const t0 = Date.now();
    const text = longWord(kind, n, seed).toString("utf8");
    const a = await ids(special, text);
    longOut += `${kind}\t${n}\t${seed}\t${a.length}\t${fnv1a64(a)}\n`;
    console.log(`long ${kind}: ${a.length} ids, ${Date.now() - t0} ms`);
  }
  fs.writeFileSync(path.join(HERE, "long.txt"), longOut);

  const fuzz = fuzzStrings(2000, 20240531);
  await writeCases(path.join(HERE, "fuzz.txt"), special, plain, fuzz);
  console.log(`fuzz: ${fuzz.length} strings`);

  await makeVariants();
  console.log("variants written");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
