/*
 * replay.h - feed every file of a committed fuzz corpus folder to its
 * target, as a Check suite of one test per target: the unit tests that keep
 * the corpus passing without clang (tests/check_fuzz_corpus.c for libst,
 * tests/check_gpt2_fuzz_corpus.c for the GPT-2 tools) are a table and a
 * call of replay_main. The includer has check.h and defines CORPUS, the
 * corpus folder with a trailing slash.
 */
#ifndef ST_FUZZ_REPLAY_H
#define ST_FUZZ_REPLAY_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Feed every file of CORPUS<dir> to fn; returns how many there were. */
static int replay(const char *dir, void (*fn)(const unsigned char *, size_t))
{
	char path[4096];
	snprintf(path, sizeof path, CORPUS "%s", dir);
	DIR *d = opendir(path);
	ck_assert_msg(d != NULL, "cannot open %s", path);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof *names);
			ck_assert(names != NULL);
		}
		names[n] = strdup(de->d_name);
		ck_assert(names[n] != NULL);
		n++;
	}
	closedir(d);
	/* A fixed order, so that a failure names the same file every time. */
	qsort(names, n, sizeof *names, name_cmp);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path, CORPUS "%s/%s", dir, names[i]);
		FILE *f = fopen(path, "rb");
		ck_assert_msg(f != NULL, "cannot open %s", path);
		ck_assert(fseek(f, 0, SEEK_END) == 0);
		long len = ftell(f);
		ck_assert(len >= 0 && fseek(f, 0, SEEK_SET) == 0);
		unsigned char *buf = malloc((size_t)len + 1);
		ck_assert(buf != NULL);
		ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		/* On a failure the last line of the log names the input. */
		fprintf(stderr, "%s\n", path);
		fn(buf, (size_t)len);
		free(buf);
		free(names[i]);
	}
	free(names);
	return (int)n;
}

/* One target: its corpus folder, how many inputs it must have at least,
 * and what to call after it (may be NULL). */
struct replay_target {
	const char *dir;
	void (*fn)(const unsigned char *, size_t);
	int min;
	void (*after)(void);
};

static const struct replay_target *replay_targets;

START_TEST(test_replay)
{
	const struct replay_target *t = &replay_targets[_i];
	ck_assert_int_ge(replay(t->dir, t->fn), t->min);
	if (t->after)
		t->after();
}
END_TEST

/* Run the suite (timeout in seconds per target); the exit status. */
static int replay_main(const char *suite, const struct replay_target *targets,
                       int n, double timeout)
{
	replay_targets = targets;
	Suite *s = suite_create(suite);
	TCase *tc = tcase_create("replay");
	tcase_set_timeout(tc, timeout);
	tcase_add_loop_test(tc, test_replay, 0, n);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
