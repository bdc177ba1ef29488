/*
 * fuzz.c - the libFuzzer entry point. build.sh compiles it once per target
 * with -DFUZZ_TARGET=fuzz_header (or fuzz_torch, fuzz_index, fuzz_writer);
 * the targets themselves are in targets.c, those of the GPT-2 tools
 * (-DFUZZ_GPT2) in targets_gpt2.c, those of tools/common (-DFUZZ_COMMON:
 * fuzz_order, fuzz_dequant) in targets_common.c, the GGUF reader's
 * (-DFUZZ_GGUF, fuzz_gguf) in targets_gguf.c, fuzz_quant (-DFUZZ_QUANT) in
 * targets_quant.c, the verifier's (-DFUZZ_VERIFY, fuzz_verify) in
 * targets_verify.c, and the architecture module's (-DFUZZ_ARCH, fuzz_arch)
 * in targets_arch.c. Not part of the CMake build.
 */
#ifdef FUZZ_GPT2
#include "targets_gpt2.c"
#elif defined(FUZZ_COMMON)
#include "targets_common.c"
#elif defined(FUZZ_GGUF)
#include "targets_gguf.c"
#elif defined(FUZZ_QUANT)
#include "targets_quant.c"
#elif defined(FUZZ_VERIFY)
#include "targets_verify.c"
#elif defined(FUZZ_ARCH)
#include "targets_arch.c"
#else
#include "targets.c"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FUZZ_TARGET(data, size);
	return 0;
}
