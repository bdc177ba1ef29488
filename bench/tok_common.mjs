// tok_common.mjs - what the tokenizer benchmarks in Node share
// (tiktoken_bench.mjs, hf_tokenizer_bench.mjs): the ids' digest and the
// figures line, both as bench_tokenizer prints them.

// FNV-1a 64 of the ids (as little-endian uint32), the digest bench_tokenizer
// prints, so equal digests mean equal ids.
export function digest(ids) {
  let h = 0xcbf29ce484222325n;
  for (const id of ids)
    for (let k = 0; k < 4; k++) {
      h ^= BigInt((id >>> (8 * k)) & 255);
      h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
    }
  return h.toString(16).padStart(16, "0");
}

// Best and median of the times (seconds, sorted in place) of n tokens from
// nbytes bytes.
export function report(name, what, times, n, nbytes) {
  times.sort((a, b) => a - b);
  const best = times[0], med = times[Math.floor(times.length / 2)];
  const f = (x, w, d) => x.toFixed(d).padStart(w);
  console.log(`${name.padEnd(9)}${what.padEnd(6)}best ${f(best * 1e3, 7, 2)} ms  ${f(n / best / 1e6, 6, 2)} M tokens/s  ` +
              `${f(nbytes / best / 1e6, 6, 1)} MB/s   median ${f(med * 1e3, 7, 2)} ms  ${f(n / med / 1e6, 6, 2)} M tokens/s`);
}
