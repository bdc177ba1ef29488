// llama_cpp_greedy.mjs - greedy ids from llama.cpp (node-llama-cpp 3.21.1's
// prebuilt CPU build) on a GGUF file (gguf_llama.py's), for 5 prompts of
// token ids, 32 tokens each: the "llama.cpp" reference of
// testdata/llama/*/llama_cpp_greedy*.txt (one line per prompt:
// "PROMPT_IDS GREEDY_IDS", comma-separated). Run by hand, never by the
// tests:
//   node testdata/llama/llama_cpp_greedy.mjs /work/ref/node_modules OUT.gguf
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, modelPath] = process.argv.slice(2);
const { getLlama, LlamaLogLevel } = await import(
	pathToFileURL(path.join(modules, "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1,
	logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const context = await model.createContext({ contextSize: 64, batchSize: 64,
	threads: { ideal: 1, min: 1 }, flashAttention: false });
const seq = context.getSequence();
const prompts = [[1, 5, 17, 42, 99, 200, 255], [3, 141, 59], [7], [200, 100, 50, 25, 12, 6],
	[11, 22, 33, 44, 55, 66, 77, 88, 99, 110]];
for (const p of prompts) {
	await seq.clearHistory();
	const out = [];
	for await (const tok of seq.evaluate(p, { temperature: 0 })) {
		out.push(tok);
		if (out.length === 32) break;
	}
	console.log(`${p.join(",")} ${out.join(",")}`);
}
await context.dispose();
await model.dispose();
