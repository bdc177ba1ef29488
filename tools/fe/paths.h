/*
 * paths.h - where the tools find the files installed with them. Not part
 * of libst.
 */
#ifndef ST_PATHS_H
#define ST_PATHS_H

/*
 * The folder holding the GPT-2 tokenizer files (tokenizer.json,
 * vocab.json, merges.txt, tokenizer_config.json, special_tokens_map.json),
 * searched in this order:
 *   1. given, when not NULL (returned as is: the caller names the folder
 *      and reports what is missing in it);
 *   2. $ST_TOKENIZER_DIR, when set and not empty (as is, likewise);
 *   3. the installed copy, ST_DATADIR "/gpt2-tokenizer", if it holds
 *      tokenizer.json;
 *   4. the source tree's copy, ST_SOURCE_DIR "/testdata/gpt2-tokenizer",
 *      if it holds tokenizer.json (a build that was never installed).
 * Returns the folder (a static string, the environment's, or given), or
 * NULL when neither 3 nor 4 holds the files.
 */
const char *paths_gpt2_tokenizer_dir(const char *given);

#endif
