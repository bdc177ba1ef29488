/*
 * tmpdir.h - the one fixture header of the unit tests for files on disk:
 * a fresh temporary directory for each test of a Check case
 * (tmpdir_setup and tmpdir_teardown as its fixture, or called by a
 * test's own setup), path_in for a file in it, write_text and
 * write_bytes to fill one, read_file to read one whole, and remove_tree
 * for a directory a test made itself. A test that asserts what is left
 * in a directory (no temporary file, the exact files written) still
 * removes those files itself. TMPDIR_NAME, defined before the include,
 * names the directory ("/tmp/TMPDIR_NAME.XXXXXX"); without it only the
 * file helpers are defined. gone_pid gives the pid of a process that is
 * gone, for a dead writer's leftovers.
 *
 * Used by check_snapshot.c, check_config.c, check_writer.c,
 * check_gpt2export.c, check_gguf.c, check_threads.c and check_index.c.
 * Every helper is static inline, so a test file need not use them all.
 */
#ifndef ST_TESTS_TMPDIR_H
#define ST_TESTS_TMPDIR_H

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef TMPDIR_NAME
static char tmp[64];

static inline void tmpdir_setup(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/%s.XXXXXX", TMPDIR_NAME);
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}
#endif

/* rm -rf path. */
static inline void remove_tree(const char *path)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

#ifdef TMPDIR_NAME
static inline void tmpdir_teardown(void)
{
	remove_tree(tmp);
}

/* tmp/name, in one of four buffers used in turn. */
static inline char *path_in(const char *name)
{
	static char buf[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
	return buf[k];
}
#endif

/* A pid that no process has: a child's, once it is reaped (for the
 * ".NAME.tmp-PID-XXXXXX" leftovers of a writer that is gone). */
static inline pid_t gone_pid(void)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return pid;
}

/* Write n bytes of data (NULs included) as the file path. */
static inline void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

static inline void write_text(const char *path, const char *s)
{
	write_bytes(path, s, strlen(s));
}

/* The whole of the file path (malloc'd, free it, NUL-terminated); *len
 * (may be NULL) receives its size. */
static inline void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	for (;;) {
		if (n + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	ck_assert(!ferror(f));
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

#endif
