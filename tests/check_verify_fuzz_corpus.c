/*
 * check_verify_fuzz_corpus.c - replay the committed fuzz corpus of the
 * verifier (tests/fuzz/corpus/verify/) through the target of
 * tests/fuzz/targets_verify.c with the normal build, so that the seeds and
 * every input that once broke libst/verify.c or the trees listing parser
 * keep passing without clang or libFuzzer.
 *
 * It is not the fuzzer: tests/fuzz/build.sh builds that (see its README).
 */
#include <check.h>
#include <stdlib.h>

#include "fuzz/targets_verify.c"

#define CORPUS ST_TESTDATA "/../tests/fuzz/corpus/"

#include "fuzz/replay.h"

static const struct replay_target targets[] = {
	{"verify", fuzz_verify, 8, NULL},
};

int main(void)
{
	return replay_main("verify_fuzz_corpus", targets,
	                   (int)(sizeof targets / sizeof targets[0]), 120);
}
