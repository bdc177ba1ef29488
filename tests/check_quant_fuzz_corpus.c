/*
 * check_quant_fuzz_corpus.c - replay the committed fuzz corpus of the
 * quantization module (tests/fuzz/corpus/quant/) through fuzz_quant
 * (tests/fuzz/targets_quant.c) with the normal build, so that the seeds and
 * every input that once broke libst/quant.c keep passing without clang or
 * libFuzzer; under the ASan+UBSan build this also catches memory errors.
 *
 * It is not the fuzzer: tests/fuzz/build.sh builds that (see its README).
 */
#include <check.h>
#include <stdlib.h>

#include "fuzz/targets_quant.c"

#define CORPUS ST_TESTDATA "/../tests/fuzz/corpus/"

#include "fuzz/replay.h"

static const struct replay_target targets[] = {
	{"quant", fuzz_quant, 12, NULL},
};

int main(void)
{
	return replay_main("quant_fuzz_corpus", targets,
	                   (int)(sizeof targets / sizeof targets[0]), 120);
}
