/*
 * check_gguf_fuzz_corpus.c - replay the committed fuzz corpus of the GGUF
 * reader (tests/fuzz/corpus/gguf/) and of the tokenizer.json reader
 * (tests/fuzz/corpus/hf_vocab/) through the targets of
 * tests/fuzz/targets_gguf.c with the normal build, so that every input that
 * once broke libst/gguf.c, and the seeds, keep passing without clang or
 * libFuzzer. Run under the ASan+UBSan build this also catches memory errors.
 *
 * It is not the fuzzer: tests/fuzz/build.sh builds that (see its README).
 */
#include <check.h>
#include <stdlib.h>

#include "fuzz/targets_gguf.c"

#define CORPUS ST_TESTDATA "/../tests/fuzz/corpus/"

#include "fuzz/replay.h"

static const struct replay_target targets[] = {
	{"gguf", fuzz_gguf, 40, NULL},
	{"hf_vocab", fuzz_hf_vocab, 6, NULL},
};

int main(void)
{
	return replay_main("gguf_fuzz_corpus", targets,
	                   (int)(sizeof targets / sizeof targets[0]), 120);
}
