/*
 * check_common_fuzz_corpus.c - replay the committed fuzz corpus of the
 * tools' shared modules (tests/fuzz/corpus/order/ and
 * dequant/) through the targets of tests/fuzz/targets_common.c with the
 * normal build, so every input
 * that once broke tools/common, and the seeds, keep passing without clang.
 *
 * It is not the fuzzer: tests/fuzz/build.sh builds that (see its README).
 */
#include <check.h>
#include <stdlib.h>

#include "fuzz/targets_common.c"

#define CORPUS ST_TESTDATA "/../tests/fuzz/corpus/"

#include "fuzz/replay.h"

static const struct replay_target targets[] = {
	{"order", fuzz_order, 4, NULL},
	{"dequant", fuzz_dequant, 8, NULL},
};

int main(void)
{
	return replay_main("common_fuzz_corpus", targets,
	                   (int)(sizeof targets / sizeof targets[0]), 120);
}
