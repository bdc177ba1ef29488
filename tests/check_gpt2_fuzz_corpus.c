/*
 * check_gpt2_fuzz_corpus.c - replay the committed fuzz corpus of the GPT-2
 * tools (tests/fuzz/corpus/<target>/ for fuzz_tokenizer, fuzz_encode,
 * fuzz_tok_gguf, fuzz_encode_vocab, fuzz_config, fuzz_llmc, fuzz_model and fuzz_llama_model) through the targets of
 * tests/fuzz/targets_gpt2.c with the normal build, so that every input that
 * once broke tools/gpt2, and the seeds, keep passing without clang or
 * libFuzzer. A target calls abort() when a property fails, which fails the
 * test; run under the ASan+UBSan build this also catches memory errors.
 *
 * It is not the fuzzer: tests/fuzz/build.sh builds that (see its README).
 */
#include <check.h>
#include <stdlib.h>

#include "fuzz/targets_gpt2.c"

#define CORPUS ST_TESTDATA "/../tests/fuzz/corpus/"

#include "fuzz/replay.h"

/* The tokenizer the encode target loaded once, freed after it. */
static void fz_gpt2_done(void)
{
	fz_gpt2_cleanup();
	fz_gpt2_free();
}

/* Each target's files go to one temporary folder, emptied after it. */
static const struct replay_target targets[] = {
	{"tokenizer", fuzz_tokenizer, 6, fz_gpt2_cleanup},
	{"encode", fuzz_encode, 6, fz_gpt2_done},
	{"tok_gguf", fuzz_tok_gguf, 6, fz_gpt2_cleanup},
	{"encode_vocab", fuzz_encode_vocab, 6, fz_vocab_free},
	{"config", fuzz_config, 6, fz_gpt2_cleanup},
	{"llmc", fuzz_llmc, 6, fz_gpt2_cleanup},
	{"model", fuzz_model, 6, fz_gpt2_cleanup},
	{"llama_model", fuzz_llama_model, 8, fz_gpt2_cleanup},
};

int main(void)
{
	return replay_main("gpt2_fuzz_corpus", targets,
	                   (int)(sizeof targets / sizeof targets[0]), 300);
}
