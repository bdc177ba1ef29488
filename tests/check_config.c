/*
 * check_config.c - unit tests of the config.json reader (libst/config.c,
 * st/config.h): which file a path's config is, what is read, and the
 * errors that say a config is missing, too large or unreadable, each
 * naming the file; the FP8 block size read from it
 * (st_config_read_block_size). The editors are tested in check_snapshot.c
 * and check_quant.c.
 */
#include <st.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMPDIR_NAME "check_config"
#include "tmpdir.h"

START_TEST(test_path_of_directory_and_of_file_beside)
{
	char *p = NULL;
	ck_assert_int_eq(st_config_path(tmp, &p, NULL), ST_OK);
	ck_assert_str_eq(p, path_in("config.json"));
	free(p);
	/* A file (existing or not) names the config.json in its folder. */
	write_text(path_in("model.safetensors"), "x");
	ck_assert_int_eq(st_config_path(path_in("model.safetensors"), &p, NULL), ST_OK);
	ck_assert_str_eq(p, path_in("config.json"));
	free(p);
	ck_assert_int_eq(st_config_path(path_in("absent.safetensors"), &p, NULL), ST_OK);
	ck_assert_str_eq(p, path_in("config.json"));
	free(p);
	ck_assert_int_eq(st_config_path("model.safetensors", &p, NULL), ST_OK);
	ck_assert_str_eq(p, "config.json");
	free(p);
	ck_assert_int_eq(st_config_path("/model.safetensors", &p, NULL), ST_OK);
	ck_assert_str_eq(p, "/config.json");
	free(p);
	ck_assert_int_eq(st_config_path("nowhere/", &p, NULL), ST_OK);
	ck_assert_str_eq(p, "nowhere/config.json");
	free(p);
}
END_TEST

START_TEST(test_read_gives_whole_text_and_its_file)
{
	const char *text = "{\"torch_dtype\": \"float32\"}\n";
	char *t = NULL, *file = NULL;
	size_t len = 0;
	write_text(path_in("config.json"), text);
	write_text(path_in("model.safetensors"), "x");
	ck_assert_int_eq(st_config_read(path_in("model.safetensors"), &t, &len, &file, NULL), ST_OK);
	ck_assert_uint_eq(len, strlen(text));
	ck_assert_str_eq(t, text); /* NUL-terminated */
	ck_assert_str_eq(file, path_in("config.json"));
	free(t);
	free(file);
	ck_assert_int_eq(st_config_read(tmp, &t, &len, NULL, NULL), ST_OK);
	ck_assert_mem_eq(t, text, len);
	free(t);
	/* An empty file is read (what it means is the caller's to say). */
	write_text(path_in("config.json"), "");
	ck_assert_int_eq(st_config_read(tmp, &t, &len, NULL, NULL), ST_OK);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(t, "");
	free(t);
}
END_TEST

START_TEST(test_missing_config_is_not_found_naming_it)
{
	char *t = (char *)1, *file = NULL;
	size_t len = 1;
	st_error e;
	ck_assert_int_eq(st_config_read(tmp, &t, &len, &file, &e), ST_ENOTFOUND);
	ck_assert_ptr_null(t);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(e.code, ST_ENOTFOUND);
	ck_assert_str_eq(file, path_in("config.json"));
	ck_assert_ptr_nonnull(strstr(e.message, path_in("config.json")));
	ck_assert_ptr_nonnull(strstr(e.message, "No such file"));
	ck_assert_int_eq(e.sys_errno, ENOENT);
	free(file);
}
END_TEST

/* tmp/config.json of n zero bytes, a hole. */
static void sparse_config(size_t n)
{
	int fd = open(path_in("config.json"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)n), 0);
	ck_assert_int_eq(close(fd), 0);
}

START_TEST(test_config_past_the_cap_is_too_large)
{
	char *t = NULL;
	size_t len = 0;
	st_error e;
	/* A sparse file one byte past the cap: refused before it is read. */
	sparse_config(ST_CONFIG_MAX_BYTES + 1);
	ck_assert_int_eq(st_config_read(tmp, &t, &len, NULL, &e), ST_EFORMAT);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(e.message, path_in("config.json")));
	ck_assert_ptr_nonnull(strstr(e.message, "larger than 64 MiB"));
	/* At the cap exactly, it is read whole. */
	sparse_config(ST_CONFIG_MAX_BYTES);
	ck_assert_int_eq(st_config_read(tmp, &t, &len, NULL, &e), ST_OK);
	ck_assert_uint_eq(len, ST_CONFIG_MAX_BYTES);
	free(t);
}
END_TEST

START_TEST(test_unreadable_config_is_an_error_naming_it)
{
	char *t = NULL;
	size_t len = 0;
	st_error e;
	/* A directory where the file should be. */
	ck_assert_int_eq(mkdir(path_in("config.json"), 0755), 0);
	ck_assert_int_eq(st_config_read_file(path_in("config.json"), &t, &len, &e), ST_EIO);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(e.message, path_in("config.json")));
	ck_assert_ptr_nonnull(strstr(e.message, "not a regular file"));
	rmdir(path_in("config.json"));
	/* A file that cannot be opened (root reads everything: skipped). */
	write_text(path_in("config.json"), "{}");
	ck_assert_int_eq(chmod(path_in("config.json"), 0), 0);
	if (geteuid() != 0) {
		ck_assert_int_eq(st_config_read_file(path_in("config.json"), &t, &len, &e), ST_EIO);
		ck_assert_ptr_nonnull(strstr(e.message, path_in("config.json")));
		ck_assert_ptr_nonnull(strstr(e.message, "cannot read"));
		ck_assert_int_ne(e.sys_errno, 0);
	}
}
END_TEST

START_TEST(block_size_is_the_default_without_one_in_config)
{
	uint64_t r = 0, c = 0;
	int found = -1;
	st_error e;
	/* No config.json at all. */
	ck_assert_int_eq(st_config_read_block_size(tmp, &r, &c, &found, &e), ST_OK);
	ck_assert_uint_eq(r, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_uint_eq(c, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_int_eq(found, 0);
	/* One that is not a JSON object, and one naming no block size. */
	write_text(path_in("config.json"), "[1, 2]");
	r = c = 0;
	found = -1;
	ck_assert_int_eq(st_config_read_block_size(tmp, &r, &c, &found, &e), ST_OK);
	ck_assert_uint_eq(r, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_uint_eq(c, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_int_eq(found, 0);
	write_text(path_in("config.json"), "{\"quantization_config\": {\"fmt\": \"e4m3\"}}");
	ck_assert_int_eq(st_config_read_block_size(tmp, &r, &c, NULL, &e), ST_OK);
	ck_assert_uint_eq(r, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_uint_eq(c, ST_QUANT_DEFAULT_BLOCK);
}
END_TEST

START_TEST(block_size_of_config_beside_a_file)
{
	uint64_t r = 0, c = 0;
	int found = 0;
	write_text(path_in("config.json"),
	           "{\"quantization_config\": {\"weight_block_size\": [64, 32]}}");
	ck_assert_int_eq(st_config_read_block_size(path_in("model.safetensors"), &r, &c, &found,
	                                           NULL),
	                 ST_OK);
	ck_assert_uint_eq(r, 64);
	ck_assert_uint_eq(c, 32);
	ck_assert_int_eq(found, 1);
}
END_TEST

START_TEST(hostile_block_size_is_refused_naming_config)
{
	uint64_t r = 0, c = 0;
	int found = -1;
	st_error e;
	write_text(path_in("config.json"),
	           "{\"quantization_config\": {\"weight_block_size\": [0, 32]}}");
	ck_assert_int_eq(st_config_read_block_size(tmp, &r, &c, &found, &e), ST_EINVAL);
	ck_assert_int_eq(e.code, ST_EINVAL);
	char want[600];
	snprintf(want, sizeof want, "%s: quantization_config.weight_block_size ",
	         path_in("config.json"));
	ck_assert_msg(strncmp(e.message, want, strlen(want)) == 0, "%s", e.message);
	ck_assert_uint_eq(r, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_uint_eq(c, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_int_eq(found, 0);
	/* An unreadable config.json is st_config_read's error. */
	ck_assert_int_eq(unlink(path_in("config.json")), 0);
	ck_assert_int_eq(mkdir(path_in("config.json"), 0755), 0);
	ck_assert_int_eq(st_config_read_block_size(tmp, &r, &c, &found, &e), ST_EIO);
	ck_assert_ptr_nonnull(strstr(e.message, "not a regular file"));
	ck_assert_uint_eq(r, ST_QUANT_DEFAULT_BLOCK);
	ck_assert_int_eq(found, 0);
	rmdir(path_in("config.json"));
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("read");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_path_of_directory_and_of_file_beside);
	tcase_add_test(tc, test_read_gives_whole_text_and_its_file);
	tcase_add_test(tc, test_missing_config_is_not_found_naming_it);
	tcase_add_test(tc, test_config_past_the_cap_is_too_large);
	tcase_add_test(tc, test_unreadable_config_is_an_error_naming_it);
	tcase_add_test(tc, block_size_is_the_default_without_one_in_config);
	tcase_add_test(tc, block_size_of_config_beside_a_file);
	tcase_add_test(tc, hostile_block_size_is_refused_naming_config);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
