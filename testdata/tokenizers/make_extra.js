// make_extra.js - the reference ids for extra.inp: Hugging Face's Rust
// tokenizers (npm tokenizers@0.23.2) on llama-bpe.tokenizer.json,
// qwen2.tokenizer.json, llama-spm.tokenizer.json and
// llama-spm-metaspace.tokenizer.json (made by
// make_tokenizer_json.py, run first).
// Writes extra.<name>.out (addSpecialTokens false) and
// extra.<name>.special.out (true, Hugging Face's default), one line of
// " id id ..." per case as llama.cpp's .out files. Invalid UTF-8 in a case
// is replaced by U+FFFD first (Node's decoder, maximal subparts, as
// Python's and the tokenizer's). It also checks that the trimmed files
// still give llama.cpp's recorded ids for ggml-vocab-<name>.gguf.inp (all
// but the Metaspace variant, which is not that tokenizer's layout).
//
// Run: NODE_PATH=/work/ref/node_modules node make_extra.js
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");

const SEP = "\n__ggml_vocab_test__\n";
const here = __dirname;

function cases(file) {
  const raw = fs.readFileSync(file).toString("utf8");
  const parts = raw.split(SEP);
  if (parts[parts.length - 1] === "") parts.pop();
  return parts;
}

async function lines(tok, texts, addSpecialTokens) {
  const out = [];
  for (const t of texts) {
    const enc = await tok.encode(t, null, { addSpecialTokens });
    out.push(enc.getIds().map((id) => " " + id).join("") + "\n");
  }
  return out.join("");
}

module.exports = { cases, lines };
if (require.main === module) (async () => {
  for (const name of ["llama-bpe", "qwen2", "llama-spm", "llama-spm-metaspace"]) {
    const tok = Tokenizer.fromFile(path.join(here, name + ".tokenizer.json"));
    const ref = path.join(here, "ggml-vocab-" + name.replace("-metaspace", "") + ".gguf");
    const got = await lines(tok, cases(ref + ".inp"), false);
    const want = fs.readFileSync(ref + ".out", "utf8");
    // Metaspace never doubles a leading U+2581 where Llama 2's legacy
    // normalizer does (" Hello"), so llama.cpp's ids are not its ids.
    if (got !== want && !name.endsWith("-metaspace")) throw new Error(name + ": the trimmed tokenizer.json differs from " + ref + ".out");
    const extra = cases(path.join(here, "extra.inp"));
    fs.writeFileSync(path.join(here, "extra." + name + ".out"), await lines(tok, extra, false));
    fs.writeFileSync(path.join(here, "extra." + name + ".special.out"), await lines(tok, extra, true));
    console.log(name + (got === want ? ": llama.cpp's cases agree; " : ": (not llama.cpp's layout); ") + extra.length + " extra cases written");
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
