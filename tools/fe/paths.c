/*
 * paths.c - the folders the tools look in for the data installed with
 * them (see paths.h). It only locates folders; it reads no file.
 */
#include "fe/paths.h"

#include <stdlib.h>
#include <unistd.h>

#ifndef ST_DATADIR
#error "ST_DATADIR must be defined when compiling tools/fe (see CMakeLists.txt)"
#endif
#ifndef ST_SOURCE_DIR
#error "ST_SOURCE_DIR must be defined when compiling tools/fe (see CMakeLists.txt)"
#endif

#define TOKENIZER_INSTALLED ST_DATADIR "/gpt2-tokenizer"
#define TOKENIZER_SOURCE ST_SOURCE_DIR "/testdata/gpt2-tokenizer"

const char *paths_gpt2_tokenizer_dir(const char *given)
{
	if (given)
		return given;
	const char *env = getenv("ST_TOKENIZER_DIR");
	if (env && *env)
		return env;
	/*
	 * tokenizer.json is the file every loader reads, so a folder without
	 * it is not a usable install (e.g. a half-removed package).
	 */
	if (access(TOKENIZER_INSTALLED "/tokenizer.json", R_OK) == 0)
		return TOKENIZER_INSTALLED;
	if (access(TOKENIZER_SOURCE "/tokenizer.json", R_OK) == 0)
		return TOKENIZER_SOURCE;
	return NULL;
}
