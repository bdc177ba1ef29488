/*
 * fuzz.c - the libFuzzer entry point. build.sh compiles it once per target
 * with -DFUZZ_TARGET=fuzz_header (or fuzz_torch, fuzz_index, fuzz_writer);
 * the targets themselves are in targets.c. Not part of the CMake build.
 */
#include "targets.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FUZZ_TARGET(data, size);
	return 0;
}
