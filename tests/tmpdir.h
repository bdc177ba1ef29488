/*
 * tmpdir.h - a fresh temporary directory for each test of a Check case
 * (check_snapshot.c, check_config.c): tmpdir_setup and tmpdir_teardown as
 * its fixture, tmp_path for a file in it, write_text to fill one.
 * TMPDIR_NAME, defined before the include, names the directory
 * ("/tmp/TMPDIR_NAME.XXXXXX").
 */
#ifndef ST_TESTS_TMPDIR_H
#define ST_TESTS_TMPDIR_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static char tmp[64];

static void tmpdir_setup(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/%s.XXXXXX", TMPDIR_NAME);
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void tmpdir_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* tmp/name, in one of four buffers used in turn. */
static char *path_in(const char *name)
{
	static char buf[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
	return buf[k];
}

static void write_text(const char *path, const char *s)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fputs(s, f);
	ck_assert_int_eq(fclose(f), 0);
}

#endif
