/*
 * gguf_diff.h - stdiff --map ARCH: a GGUF file (gpt2, llama, qwen2,
 * qwen3) against a Hugging Face safetensors (or PyTorch) checkpoint,
 * tensor by tensor through the name map of st/arch.h, GPT-2's Conv1D
 * transposes and llama's q/k row permutation included. Not part of libst:
 * the pairing and the comparison are st_diff_gguf_map's (st/diff.h);
 * this is their counting and printing.
 *
 * For each pair it reports a shape that does not match, or the values:
 * bit-identical, or max abs and max rel diff and how many elements fall
 * outside |a - b| <= atol + rtol * |b|; and whether the GGUF tensor is
 * exactly the checkpoint's rounded to its type (F16, BF16) or quantized
 * by ggml's reference quantizer (Q8_0), or within the quantized type's
 * error bound (every other quantized type; doc/ggml.md). Tensors only on one side are
 * listed; GPT-2's lm_head.weight (tied, never in a GGUF) and the legacy
 * buffers are skipped; llama's rope_freqs.weight (computed by the
 * converter) is said to be GGUF-only, no difference.
 *
 * With json, one document on stdout instead of the lines (stdiff(1),
 * "--map"): {"equal", "map": ARCH, "only_in_a", "only_in_b",
 * "changed" (shape changes), "tensors" (every pair compared, with
 * "exactly_encoded"), "summary"}.
 */
#ifndef ST_GGUF_DIFF_H
#define ST_GGUF_DIFF_H

#include <stdbool.h>

typedef struct gguf_diff_opts {
	double rtol, atol;
	bool have_rtol, have_atol;
	bool exact, quiet, verbose, json;
} gguf_diff_opts;

/*
 * Compare A and B (one a GGUF file, the other a checkpoint PATH) through
 * map arch (st_arch_gguf_known). Returns CLI_OK (equal within tolerance),
 * CLI_NO (different) or CLI_ERROR after printing why.
 */
int gguf_diff_map(const char *a, const char *b, const char *arch, const gguf_diff_opts *o);

/*
 * Compare two GGUF files (or split sets) tensor by tensor, paired by name
 * (st_diff_gguf_files). The lines, the summary and the JSON document are
 * those of gguf_diff_map with "map": "names" and one name per entry.
 * Returns as gguf_diff_map.
 */
int gguf_diff_files(const char *a, const char *b, const gguf_diff_opts *o);

#endif
