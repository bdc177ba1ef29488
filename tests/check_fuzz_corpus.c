/*
 * check_fuzz_corpus.c - replay the committed fuzz corpus (tests/fuzz/corpus/
 * <target>/) through the fuzz targets of tests/fuzz/targets.c with the
 * normal build, so that every input that once crashed libst, and the seeds,
 * keep passing without clang or libFuzzer. A target calls abort() when a
 * property fails, which fails the test; run under the ASan+UBSan build this
 * also catches the memory errors the fuzzer found.
 *
 * It is not the fuzzer: tests/fuzz/build.sh builds that (see its README).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/targets.c"

#define CORPUS ST_TESTDATA "/../tests/fuzz/corpus/"

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

START_TEST(test_header)
{
	ck_assert_int_gt(replay("header", fuzz_header), 10);
}
END_TEST

START_TEST(test_torch)
{
	ck_assert_int_gt(replay("torch", fuzz_torch), 5);
}
END_TEST

START_TEST(test_index)
{
	ck_assert_int_gt(replay("index", fuzz_index), 5);
	fz_index_cleanup();
}
END_TEST

START_TEST(test_writer)
{
	ck_assert_int_gt(replay("writer", fuzz_writer), 5);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuzz_corpus");
	TCase *tc = tcase_create("replay");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_header);
	tcase_add_test(tc, test_torch);
	tcase_add_test(tc, test_index);
	tcase_add_test(tc, test_writer);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
