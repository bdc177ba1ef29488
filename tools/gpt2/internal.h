/*
 * internal.h - helpers the files of tools/gpt2 share with each other (not
 * with the tools that use them): error messages and paths (gpt2.c),
 * random seeds (gpt2_sample.c).
 */
#ifndef ST_GPT2_INTERNAL_H
#define ST_GPT2_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Format one line into err (errlen bytes; nothing when err is NULL) and
 * return -1, so that a failure reads "return gpt2_err(err, ...)".
 */
int gpt2_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * dir "/" file into out, with no doubled slash. Returns 0, or -1 with a
 * message in err when it does not fit in size bytes.
 */
int gpt2_join(char *out, size_t size, const char *dir, const char *file,
              char *err, size_t errlen);

/*
 * splitmix64 (Steele, Lea and Flood; Vigna's constants): advance *x and
 * return its next output. Seeds the sampler and gpt2export's streams.
 * Defined in gpt2_sample.c.
 */
uint64_t gpt2_splitmix64(uint64_t *x);

#endif
