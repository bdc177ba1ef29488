#!/usr/bin/env node
// tiktoken_bench.mjs - tokens per second of tiktoken (npm `tiktoken`, OpenAI's
// Rust code as WebAssembly, encoding "gpt2") and of Hugging Face tokenizers
// (npm `tokenizers`, Rust as a Node addon) on a text file, to set beside
// bench_tokenizer's figures for the same file. Single sequence, one call per
// run; tiktoken has no word cache, Hugging Face's is emptied by a fresh
// tokenizer before each run ("cold") and full on the second call ("warm").
//
// The packages come from testdata/tokenizer/node_modules
// (cd testdata/tokenizer && npm install).
//
// Usage: node bench/tiktoken_bench.mjs TEXT_FILE [RUNS]
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { digest, report as report_n } from "./tok_common.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, "testdata/tokenizer/package.json"));
const { get_encoding } = require("tiktoken");
const { Tokenizer } = require("tokenizers");

const file = process.argv[2];
const runs = Number(process.argv[3] || 10);
if (!file || !(runs >= 1)) {
  console.error("usage: node bench/tiktoken_bench.mjs TEXT_FILE [RUNS]");
  process.exit(2);
}
const bytes = fs.readFileSync(file);
const text = bytes.toString("utf8");
const report = (name, what, times, n) => report_n(name, what, times, n, bytes.length);

const now = () => Number(process.hrtime.bigint()) / 1e9;

// tiktoken: encode_ordinary is plain GPT-2 (no special tokens), which is
// what the text needs: it holds no "<|endoftext|>".
const enc = get_encoding("gpt2");
let tt;
const tTimes = [];
for (let r = 0; r < runs; r++) {
  const t0 = now();
  tt = enc.encode_ordinary(text);
  tTimes.push(now() - t0);
}
console.log(`tiktoken ${file}: ${bytes.length} bytes, ${tt.length} tokens, digest ${digest(tt)}, ${runs} runs`);
report("tiktoken", "", tTimes, tt.length);
enc.free();

const json = path.join(root, "testdata/gpt2-tokenizer/tokenizer.json");
let hf;
const cold = [], warm = [];
for (let r = 0; r < runs; r++) {
  const tok = Tokenizer.fromFile(json);
  let t0 = now();
  hf = (await tok.encode(text)).getIds();
  cold.push(now() - t0);
  t0 = now();
  await tok.encode(text);
  warm.push(now() - t0);
}
console.log(`HF       ${file}: ${bytes.length} bytes, ${hf.length} tokens, digest ${digest(hf)}, ${runs} runs`);
report("HF", "cold", cold, hf.length);
report("HF", "warm", warm, hf.length);
