// check_gguf_tokenizer.js - an independent check of the tokenizer files
// libst rebuilds from a GGUF's tokenizer.ggml.* keys (st_gguf_write_tokenizer,
// `stconvert ggml-vocab-NAME.gguf OUT/`): Hugging Face's Rust tokenizers
// (npm tokenizers@0.23.2) loads each written tokenizer.json and must give
// llama.cpp's recorded ids (ggml-vocab-NAME.gguf.inp/.out, made with
// add_special_tokens=False) for every case, and for extra.inp the ids
// make_extra.js recorded on the hand-made files (extra.NAME.out and
// extra.NAME.special.out: with the BOS the post_processor adds).
// Writes gguf_tokenizer.check (what agreed), the record the test suite
// relies on; tests/cli/stconvert_gguf_tokenizer.sh then compares only
// strun's output with the .out files.
//
// Run (after building libst): NODE_PATH=/work/ref/node_modules \
//   node check_gguf_tokenizer.js BUILD/bin/stconvert
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");
const { Tokenizer } = require("tokenizers");
const { cases, lines } = require("./make_extra.js");

const here = __dirname;

function compare(label, got, want, log) {
  const g = got.split("\n"), w = want.split("\n");
  let bad = 0;
  for (let i = 0; i < Math.max(g.length, w.length); i++) if (g[i] !== w[i]) bad++;
  if (bad) throw new Error(label + ": " + bad + " cases differ");
  log.push(label + ": " + (w.length - 1) + " cases agree");
}

(async () => {
  const stconvert = process.argv[2];
  if (!stconvert) throw new Error("usage: node check_gguf_tokenizer.js PATH/TO/stconvert");
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gguf-tok-"));
  const log = [];
  try {
    for (const name of ["gpt-2", "llama-bpe", "qwen2", "llama-spm"]) {
      const gguf = path.join(here, "ggml-vocab-" + name + ".gguf");
      const out = path.join(tmp, name);
      execFileSync(stconvert, ["-q", gguf, out]);
      const tok = Tokenizer.fromFile(path.join(out, "tokenizer.json"));
      compare(name + " " + path.basename(gguf) + ".inp", await lines(tok, cases(gguf + ".inp"), false),
              fs.readFileSync(gguf + ".out", "utf8"), log);
      const extra = cases(path.join(here, "extra.inp"));
      for (const [suffix, special] of [[".out", false], [".special.out", true]]) {
        const ref = path.join(here, "extra." + name + suffix);
        if (!fs.existsSync(ref)) continue; // GPT-2 has no hand-made file
        compare(name + " " + path.basename(ref), await lines(tok, extra, special),
                fs.readFileSync(ref, "utf8"), log);
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const record = "# Hugging Face tokenizers@0.23.2 on the tokenizer.json files stconvert\n" +
                 "# writes from ggml-vocab-*.gguf (check_gguf_tokenizer.js)\n" + log.join("\n") + "\n";
  fs.writeFileSync(path.join(here, "gguf_tokenizer.check"), record);
  process.stdout.write(record);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
