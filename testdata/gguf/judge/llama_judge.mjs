// llama_judge.mjs - run GGUF files in llama.cpp (the npm package
// node-llama-cpp, its prebuilt CPU build) and print the greedy ids it
// generates for a few prompts. A test-fixture script: the test suite never
// runs it (see README.md beside it for the command that made ids.txt).
//
// Usage: LLAMA_DIR=/path/with/node_modules node llama_judge.mjs N FILE.gguf \
//            PROMPT_IDS...
// Each PROMPT_IDS is a comma-separated list of token ids. For each file
// and prompt it prints "<file> <prompt> <N greedy ids>" and, on stderr,
// the smallest top-2 logit margin (log p1 / p2) seen while generating them.
// Ids, not text, go in, so that llama.cpp's tokenizer is not in the way;
// the KV cache is F32 so that it rounds nothing.
import path from "node:path";
import {pathToFileURL} from "node:url";

const dir = process.env.LLAMA_DIR || path.join(process.env.HOME || ".", "llama");
const {getLlama} = await import(pathToFileURL(
	path.join(dir, "node_modules/node-llama-cpp/dist/index.js")).href);

const [n, file, ...prompts] = process.argv.slice(2);
const llama = await getLlama({gpu: false, logLevel: "error"});
const model = await llama.loadModel({modelPath: file, gpuLayers: 0});
for (const p of prompts) {
	const ids = p.split(",").map(Number);
	const context = await model.createContext({
		contextSize: 64, batchSize: 64, threads: 1, sequences: 1,
		experimentalKvCacheKeyType: "F32",
		experimentalKvCacheValueType: "F32",
	});
	const seq = context.getSequence();
	const out = [];
	let margin = Infinity;
	for await (const o of seq.evaluateWithMetadata(ids,
		{probabilities: true}, {temperature: 0})) {
		const probs = [...o.probabilities.values()].sort((a, b) => b - a);
		margin = Math.min(margin, Math.log(probs[0] / probs[1]));
		out.push(o.token);
		if (out.length >= Number(n))
			break;
	}
	console.log(`${path.basename(file)} ${p} ${out.join(",")}`);
	console.error(`${path.basename(file)} ${p}: smallest top-2 logit margin ${margin.toFixed(4)}`);
	await context.dispose();
}
await model.dispose();
