/*
 * verify.h - stinfo --verify and --hash: run libst's verifier (st/verify.h)
 * over PATHs and print what it found, as text or as one JSON document.
 * The checking is libst's; this is only the printing, kept out of stinfo.c
 * so the tool stays a list of options.
 */
#ifndef ST_TOOLS_VERIFY_H
#define ST_TOOLS_VERIFY_H

/*
 * --verify: each problem on stderr (one line, "stinfo: <message>"), then
 * a summary line per PATH on stdout; json: one document on stdout instead
 * (an array for several PATHs). A leftover of a writer that is gone
 * (ST_VERIFY_LEFTOVER) is a warning ("stinfo: warning: <message>", as
 * --check says it), counted in the summary and the JSON's "leftovers",
 * and fails nothing. Returns the exit code: 0 clean, 1 any other problem,
 * 2 a PATH unreadable.
 */
int verify_paths(char *const *paths, int n, int json, int threads);

/*
 * --hash: "<sha256>  <name>" lines as sha256sum prints them (names
 * relative to a folder PATH, so the output is its SHA256SUMS); json: the
 * files with their sizes and, for safetensors files, each tensor's SHA-256.
 * Returns 0, 1 when a file could not be hashed, 2 a PATH unreadable.
 */
int verify_hash_paths(char *const *paths, int n, int json, int threads);

#endif
