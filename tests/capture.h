/*
 * capture.h - what a tools-side function prints: capture_begin sends
 * stdout and stderr to two files of the test's temporary folder
 * (tests/tmpdir.h, included first), capture_end restores them and reads
 * back each stream whole (the caller frees out and errs).
 */
#ifndef ST_TESTS_CAPTURE_H
#define ST_TESTS_CAPTURE_H

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int capture_saved[2] = {-1, -1};

/* tmp/capture.out or tmp/capture.err (not path_in's buffers, which the
 * caller may hold). */
static const char *capture_path(int k)
{
	static char buf[2][512];
	snprintf(buf[k], sizeof buf[k], "%s/capture.%s", tmp, k ? "err" : "out");
	return buf[k];
}

static void capture_begin(void)
{
	fflush(stdout);
	fflush(stderr);
	for (int k = 0; k < 2; k++) {
		int fd = open(capture_path(k), O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ck_assert_int_ge(fd, 0);
		capture_saved[k] = dup(k + 1);
		ck_assert_int_ge(capture_saved[k], 0);
		ck_assert_int_eq(dup2(fd, k + 1), k + 1);
		close(fd);
	}
}

/* The file's bytes, NUL-terminated. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	char *buf = NULL;
	size_t len = 0, cap = 0, k;
	char chunk[4096];
	while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (len + k + 1 > cap) {
			cap = 2 * (len + k + 1);
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		memcpy(buf + len, chunk, k);
		len += k;
	}
	fclose(f);
	if (!buf)
		buf = calloc(1, 1);
	ck_assert_ptr_nonnull(buf);
	buf[len] = 0;
	return buf;
}

static void capture_end(char **out, char **errs)
{
	fflush(stdout);
	fflush(stderr);
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(dup2(capture_saved[k], k + 1), k + 1);
		close(capture_saved[k]);
		capture_saved[k] = -1;
	}
	*out = slurp(capture_path(0));
	*errs = slurp(capture_path(1));
}

#endif
