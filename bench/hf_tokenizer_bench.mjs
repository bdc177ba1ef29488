#!/usr/bin/env node
// hf_tokenizer_bench.mjs - tokens per second of Hugging Face tokenizers (npm
// `tokenizers` 0.23.2, the Rust code as a Node addon) with any
// tokenizer.json on a text file, add_special_tokens false, to set beside
// bench_tokenizer's figures for the same vocabulary (its .gguf or the same
// tokenizer.json) and file. "cold": a fresh tokenizer each run; "warm": the
// second call. It prints the FNV-1a digest bench_tokenizer prints: equal
// digests, equal ids.
//
// Usage: NODE_PATH=/work/ref/node_modules node bench/hf_tokenizer_bench.mjs TOKENIZER_JSON TEXT_FILE [RUNS]
import fs from "node:fs";
import { createRequire } from "node:module";
import { digest, report as report_n } from "./tok_common.mjs";

const require = createRequire(import.meta.url);
const { Tokenizer } = require(process.env.NODE_PATH ? `${process.env.NODE_PATH}/tokenizers` : "tokenizers");

const [json, file] = process.argv.slice(2, 4);
const runs = Number(process.argv[4] || 10);
if (!json || !file || !(runs >= 1)) {
  console.error("usage: node bench/hf_tokenizer_bench.mjs TOKENIZER_JSON TEXT_FILE [RUNS]");
  process.exit(2);
}
const bytes = fs.readFileSync(file);
const text = bytes.toString("utf8");

const report = (what, times, n) => report_n("HF", what, times, n, bytes.length);

const now = () => Number(process.hrtime.bigint()) / 1e9;
let ids;
const cold = [], warm = [];
for (let r = 0; r < runs; r++) {
  const tok = Tokenizer.fromFile(json);
  let t0 = now();
  ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
  cold.push(now() - t0);
  t0 = now();
  await tok.encode(text, null, { addSpecialTokens: false });
  warm.push(now() - t0);
}
console.log(`HF       ${file}: ${bytes.length} bytes, ${ids.length} tokens, digest ${digest(ids)}, ${runs} runs`);
report("cold", cold, ids.length);
report("warm", warm, ids.length);
