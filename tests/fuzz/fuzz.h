/*
 * fuzz.h - what the fuzz targets share (targets.c for libst, targets_gpt2.c
 * for the GPT-2 tools): CHECK, which turns a failed property into abort()
 * so that libFuzzer records a crash and a replay test dies on a signal;
 * writing a whole file; and the mode byte most inputs start with.
 */
#ifndef ST_FUZZ_H
#define ST_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                          \
	do {                                                                     \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__,        \
			        __LINE__, #cond);                                        \
			abort();                                                         \
		}                                                                    \
	} while (0)

static void fz_write(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	CHECK(fwrite(buf, 1, len, f) == len);
	CHECK(fclose(f) == 0);
}

/* Take the first byte off an input: the mode, or -1 when there is none. */
static int fz_mode(const unsigned char **data, size_t *size)
{
	if (*size < 1)
		return -1;
	(*size)--;
	return *(*data)++;
}

#endif
