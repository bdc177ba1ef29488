/*
 * check_index.c - checkpoints: PATH resolution (file, index, directory),
 * sharded checkpoints as one table, I1-I5 (testdata/index/MANIFEST.tsv,
 * made by gen_fixtures.py), and the full check of a PATH.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "tmpdir.h"

#define DIR ST_TESTDATA "/index/"

struct counts {
	int errors, warnings;
	char all[8192];
};

static void collect(void *ctx, int severity, const char *msg)
{
	struct counts *c = ctx;
	if (severity == ST_PROBLEM_ERROR)
		c->errors++;
	else
		c->warnings++;
	size_t n = strlen(c->all);
	snprintf(c->all + n, sizeof c->all - n, "%s\n", msg);
}

START_TEST(test_manifest)
{
	FILE *m = fopen(DIR "MANIFEST.tsv", "r");
	ck_assert(m != NULL);
	char line[2048];
	int rows = 0;
	while (fgets(line, sizeof line, m)) {
		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = 0;
		char *f[4] = {0};
		char *s = line;
		for (int k = 0; k < 4; k++) {
			f[k] = s;
			s = strchr(s, '\t');
			if (!s)
				break;
			*s++ = 0;
		}
		const char *name = f[0], *expect = f[1], *needle = f[2];
		char path[4096];
		snprintf(path, sizeof path, DIR "%s", name);
		st_checkpoint *c = NULL;
		st_error err = {0};
		int rc = st_checkpoint_open(&c, path, 0, &err);
		int ok = !strcmp(expect, "ok") || !strcmp(expect, "checkonly");
		if (ok)
			ck_assert_msg(rc == ST_OK, "%s: %s", name, err.message);
		else {
			int want = !strcmp(expect, "notfound") ? ST_ENOTFOUND
			           : !strcmp(expect, "format") ? ST_EFORMAT : ST_EINDEX;
			ck_assert_msg(rc == want, "%s: rc %d, want %d (%s)", name, rc, want,
			              err.message);
			ck_assert_int_eq(err.code, want);
			ck_assert_msg(strstr(err.message, needle) != NULL,
			              "%s: '%s' lacks '%s'", name, err.message, needle);
			ck_assert_ptr_eq(c, NULL);
		}
		struct counts k = {0};
		int n = st_check_path(path, collect, &k, &err);
		if (!strcmp(expect, "ok"))
			ck_assert_msg(n == 0, "%s: check found %s", name, k.all);
		else {
			ck_assert_msg(n >= 1 && n == k.errors, "%s: n=%d errors=%d", name, n, k.errors);
			ck_assert_msg(strstr(k.all, needle) != NULL, "%s: check said '%s', lacks '%s'",
			              name, k.all, needle);
		}
		st_checkpoint_close(c);
		rows++;
	}
	fclose(m);
	ck_assert_int_ge(rows, 20);
}
END_TEST

static void expect_abc(st_checkpoint *c)
{
	ck_assert_uint_eq(st_checkpoint_n_tensors(c), 3);
	ck_assert_uint_eq(st_checkpoint_data_bytes(c), 24);
	long i = st_checkpoint_find(c, "c.weight", 8);
	ck_assert_int_ge(i, 0);
	const st_tensor *t = st_checkpoint_tensor(c, (size_t)i, NULL);
	ck_assert_str_eq(t->name, "c.weight");
	float v[3];
	st_error err;
	ck_assert_int_eq(st_checkpoint_read(c, (size_t)i, 0, v, 12, &err), ST_OK);
	ck_assert(v[0] == 4 && v[1] == 5 && v[2] == 6);
	const void *p;
	ck_assert_int_eq(st_checkpoint_data(c, (size_t)i, &p, &err), ST_OK);
	ck_assert(memcmp(p, v, 12) == 0);
	ck_assert_int_eq(st_checkpoint_find(c, "zz", 2), -1);
}

START_TEST(test_sharded_as_one)
{
	st_checkpoint *c;
	st_error err;
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "sharded", 0, &err), ST_OK);
	ck_assert_uint_eq(st_checkpoint_n_files(c), 2);
	ck_assert_str_eq(st_checkpoint_index_path(c), DIR "sharded/model.safetensors.index.json");
	ck_assert_str_eq(st_checkpoint_dir(c), DIR "sharded");
	ck_assert_str_eq(st_checkpoint_path(c), DIR "sharded");
	/* File by file, in data order. */
	size_t file;
	ck_assert_str_eq(st_checkpoint_tensor(c, 0, &file)->name, "a.weight");
	ck_assert_uint_eq(file, 0);
	ck_assert_str_eq(st_checkpoint_tensor(c, 2, &file)->name, "c.weight");
	ck_assert_uint_eq(file, 1);
	ck_assert(strstr(st_file_path(st_checkpoint_file(c, 1)), "model-00002-of-00002") != NULL);
	expect_abc(c);
	st_checkpoint_close(c);

	ck_assert_int_eq(st_checkpoint_open(&c, DIR "single", 0, &err), ST_OK);
	ck_assert_ptr_eq(st_checkpoint_index_path(c), NULL);
	ck_assert_uint_eq(st_checkpoint_n_files(c), 1);
	expect_abc(c);
	st_checkpoint_close(c);

	ck_assert_int_eq(st_checkpoint_open(&c, DIR "single/model.safetensors", 0, &err), ST_OK);
	expect_abc(c);
	st_checkpoint_close(c);
	st_checkpoint_close(NULL);
}
END_TEST

START_TEST(test_unreadable)
{
	st_checkpoint *c;
	st_error err;
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "nope", 0, &err), ST_EIO);
	ck_assert(strstr(err.message, "nope") != NULL);
	struct counts k = {0};
	ck_assert_int_eq(st_check_path(DIR "nope", collect, &k, &err), ST_EIO);
	ck_assert_int_eq(k.errors, 0);
}
END_TEST

/*
 * A full check of an index naming 100k missing shards: each shard was
 * looked up by a scan of the shard names, and the tensor naming it by a
 * scan of the index (31 s); both are binary searches now.
 */
START_TEST(test_many_missing_shards)
{
	char dir[] = "/tmp/st-check-index-XXXXXX";
	ck_assert(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
	FILE *f = fopen(path, "w");
	ck_assert(f != NULL);
	size_t n = 100000;
	fprintf(f, "{\"metadata\":{\"total_size\":0},\"weight_map\":{");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\"t%zu\":\"s%zu.safetensors\"", i ? "," : "", i, n - i);
	fprintf(f, "}}");
	ck_assert_int_eq(fclose(f), 0);
	struct counts k = {0};
	st_error err;
	ck_assert_int_eq(st_check_path(dir, collect, &k, &err), (int)n);
	/* The first missing shard (sorted by name) and the tensor needing it. */
	ck_assert_msg(strstr(k.all, "weight_map: tensor 't99999' refers to missing "
	                     "shard 's1.safetensors' (I5)"), "%.300s", k.all);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* Write text (n bytes) as DIR/model.safetensors.index.json beside a link to single/'s shard. */
static void nul_index(char *dir, const char *text, size_t n)
{
	ck_assert(mkdtemp(dir) != NULL);
	char path[96];
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	ck_assert_int_eq(symlink(DIR "single/model.safetensors", path), 0);
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
	write_bytes(path, text, n);
}

static void nul_index_rm(const char *dir)
{
	char path[96];
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	ck_assert_int_eq(unlink(path), 0);
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}

/*
 * cJSON ends a string at a NUL: a shard name "model.safetensors\u0000x"
 * was read as model.safetensors and accepted, where Python's json reads a
 * name no file has. A NUL in a shard name, or a raw 0 byte anywhere, is
 * refused.
 */
START_TEST(index_refuses_nul_in_shard_names)
{
	static const char esc[] =
		"{\"metadata\":{\"total_size\":0},\"weight_map\":{"
		"\"a\":\"model.safetensors\",\"b\":\"model.safetensors\\u0000x\","
		"\"c\":\"model.safetensors\"}}";
	static const char raw[] =
		"{\"metadata\":{\"total_size\":0},\"weight_map\":{"
		"\"a\":\"model.safetensors\",\"b\\u0000\":\"model.safetensors\","
		"\"b\":\"model.safetensors\",\"c\0\":\"model.safetensors\"}}";
	const struct {
		const char *text;
		size_t n;
		const char *why;
	} cases[] = {
		{esc, sizeof esc - 1, "a \\u0000 in a string value"},
		{raw, sizeof raw - 1, "a raw 0 byte"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char dir[] = "/tmp/st-check-index-XXXXXX";
		nul_index(dir, cases[i].text, cases[i].n);
		st_checkpoint *c = NULL;
		st_error err = {0};
		ck_assert_int_eq(st_checkpoint_open(&c, dir, 0, &err), ST_EINDEX);
		ck_assert_msg(strstr(err.message, "index holds a NUL at byte") &&
		              strstr(err.message, cases[i].why), "%s", err.message);
		struct counts k = {0};
		ck_assert_int_ge(st_check_path(dir, collect, &k, &err), 1);
		ck_assert_msg(strstr(k.all, cases[i].why), "%s", k.all);
		nul_index_rm(dir);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("index");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, test_manifest);
	suite_add_tcase(s, tc);
	tc = tcase_create("core");
	tcase_add_test(tc, test_sharded_as_one);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_unreadable);
	tcase_add_test(tc, test_many_missing_shards);
	tcase_add_test(tc, index_refuses_nul_in_shard_names);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
