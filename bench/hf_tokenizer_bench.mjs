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

function digest(ids) {
  let h = 0xcbf29ce484222325n;
  for (const id of ids)
    for (let k = 0; k < 4; k++) {
      h ^= BigInt((id >>> (8 * k)) & 255);
      h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
    }
  return h.toString(16).padStart(16, "0");
}

function report(what, times, n) {
  times.sort((a, b) => a - b);
  const best = times[0], med = times[Math.floor(times.length / 2)];
  const f = (x, w, d) => x.toFixed(d).padStart(w);
  console.log(`HF       ${what.padEnd(6)}best ${f(best * 1e3, 7, 2)} ms  ${f(n / best / 1e6, 6, 2)} M tokens/s  ` +
              `${f(bytes.length / best / 1e6, 6, 1)} MB/s   median ${f(med * 1e3, 7, 2)} ms  ${f(n / med / 1e6, 6, 2)} M tokens/s`);
}

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
