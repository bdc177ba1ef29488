/*
 * check_arch_fuzz_corpus.c - replay the committed fuzz corpus of the
 * architecture module (tests/fuzz/corpus/arch/) through fuzz_arch
 * (tests/fuzz/targets_arch.c) with the normal build, so that the seeds and
 * every input that once broke it keep passing without clang or libFuzzer;
 * under the ASan+UBSan build this also catches memory errors.
 *
 * It is not the fuzzer: tests/fuzz/build.sh builds that (see its README).
 */
#include <check.h>
#include <stdlib.h>

#include "fuzz/targets_arch.c"

#define CORPUS ST_TESTDATA "/../tests/fuzz/corpus/"

#include "fuzz/replay.h"

static const struct replay_target targets[] = {
	{"arch", fuzz_arch, 8, fz_arch_cleanup},
};

int main(void)
{
	return replay_main("arch_fuzz_corpus", targets,
	                   (int)(sizeof targets / sizeof targets[0]), 120);
}
