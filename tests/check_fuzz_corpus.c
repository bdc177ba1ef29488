/*
 * check_fuzz_corpus.c - replay the committed fuzz corpus (tests/fuzz/corpus/
 * <target>/) through the fuzz targets of tests/fuzz/targets.c with the
 * normal build, so that every input that once crashed libst, and the seeds,
 * keep passing without clang or libFuzzer. A target calls abort() when a
 * property fails, which fails the test; run under the ASan+UBSan build this
 * also catches the memory errors the fuzzer found.
 *
 * It is not the fuzzer: tests/fuzz/build.sh builds that (see its README).
 */
#include <check.h>
#include <stdlib.h>

#include "fuzz/targets.c"

#define CORPUS ST_TESTDATA "/../tests/fuzz/corpus/"

#include "fuzz/replay.h"

static const struct replay_target targets[] = {
	{"header", fuzz_header, 11, NULL},
	{"torch", fuzz_torch, 6, NULL},
	{"legacy", fuzz_legacy, 3, NULL},
	{"tar", fuzz_tar, 2, NULL},
	{"index", fuzz_index, 6, fz_index_cleanup},
	{"writer", fuzz_writer, 6, NULL},
	{"config_dtype", fuzz_config_dtype, 8, NULL},
};

int main(void)
{
	return replay_main("fuzz_corpus", targets,
	                   (int)(sizeof targets / sizeof targets[0]), 120);
}
