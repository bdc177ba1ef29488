// llama_bench.mjs - llama.cpp's side of bench_gpt2run.sh: the same three
// figures as bench_gpt2 (ms/token decoding at context 8 and ~900, and an
// 864-token prompt) for a GPT-2 GGUF file, through node-llama-cpp's
// prebuilt CPU build of llama.cpp. Not a test; never run by ctest.
//
// Usage: node bench/llama_bench.mjs NODE_MODULES_DIR MODEL.gguf LABEL [RUNS] [THREADS]
//   (env BENCH_VOCAB, BENCH_PROMPT: another vocabulary size, prompt length)
// Prints "llama LABEL what median min max" lines, as bench_gpt2 --raw does.
// node-llama-cpp is installed outside the repository, e.g.
//   mkdir -p /tmp/llama && cd /tmp/llama && npm i -E node-llama-cpp@3.21.1
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, modelPath, label, runsArg, threadsArg] = process.argv.slice(2);
const runs = Number(runsArg || 5), threads = Number(threadsArg || 2);
const { getLlama, LlamaLogLevel } = await import(
	pathToFileURL(path.join(modules, "node-llama-cpp", "dist", "index.js")).href);

const llama = await getLlama({ gpu: false, build: "never", maxThreads: threads,
	logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const context = await model.createContext({ contextSize: 1024, batchSize: 1024,
	threads: { ideal: threads, min: threads }, flashAttention: false });
const seq = context.getSequence();
// GPT-2's vocabulary and prompt unless BENCH_VOCAB / BENCH_PROMPT say
// (bench_strun.sh: a Qwen2-shaped model, a 512-token prompt).
const V = Number(process.env.BENCH_VOCAB || 50257);
const P = Number(process.env.BENCH_PROMPT || 864);
const ids = (n) => Array.from({ length: n }, (_, t) => (1000 + 7919 * t) % V);
const now = () => Number(process.hrtime.bigint()) / 1e6;

async function decode(ctx, steps) {
	await seq.clearHistory();
	await seq.evaluateWithoutGeneratingNewTokens(ids(ctx));
	let n = 0, t0 = 0;
	// Greedy; the first token comes from the prompt's logits, then each
	// further one costs one forward pass.
	for await (const tok of seq.evaluate([ids(ctx + 1)[ctx]], { temperature: 0 })) {
		if (n === 0) t0 = now();
		if (++n > steps) break;
		void tok;
	}
	return (now() - t0) / steps;
}

async function prompt(T) {
	await seq.clearHistory();
	const t0 = now();
	await seq.evaluateWithoutGeneratingNewTokens(ids(T));
	return (now() - t0) / T;
}

function stat(v) {
	v.sort((a, b) => a - b);
	const m = v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
	return `${m.toFixed(4)} ${v[0].toFixed(4)} ${v[v.length - 1].toFixed(4)}`;
}

await decode(8, 4);
await prompt(P);
const a = [], b = [], p = [];
for (let r = 0; r < runs; r++) {
	a.push(await decode(8, 32));
	b.push(await decode(896, 32));
	p.push(await prompt(P));
}
console.log(`llama ${label} decode8 ${stat(a)}`);
console.log(`llama ${label} decode900 ${stat(b)}`);
console.log(`llama ${label} prompt${P} ${stat(p)}`);
await context.dispose();
await model.dispose();
