/*
 * check_common_verify.c - stinfo --verify and --hash's front end
 * (tools/common/verify.c): verify_hash_paths' sha256sum lines and JSON
 * for a folder of small files, the digests being FIPS 180-2's known
 * vectors and, for a third file, libst's st_hash (a second path); and
 * verify_paths' exit code, summary and problem lines for a folder whose
 * SHA256SUMS is right, wrong or absent, and for a PATH that is not there.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <st.h>

#include "common/verify.h"
#include "fe/cli.h"

#define TMPDIR_NAME "check_common_verify"
#include "tmpdir.h"
#include "capture.h"

/* SHA-256 of "abc" (FIPS 180-2, appendix B.1) and of no bytes. */
#define SHA_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static char dir[600];

/* tmp/repo holding a.txt ("abc") and empty (no bytes). */
static char *const *make_folder(void)
{
	static char *paths[1];
	snprintf(dir, sizeof dir, "%s", path_in("repo"));
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	char p[700];
	snprintf(p, sizeof p, "%s/a.txt", dir);
	write_text(p, "abc");
	snprintf(p, sizeof p, "%s/empty", dir);
	write_text(p, "");
	paths[0] = dir;
	return paths;
}

static void write_sums(const char *text)
{
	char p[700];
	snprintf(p, sizeof p, "%s/SHA256SUMS", dir);
	write_text(p, text);
}

static int run_hash(char *const *paths, int n, int json, char **out,
                    char **errs)
{
	capture_begin();
	int rc = verify_hash_paths(paths, n, json, 1);
	capture_end(out, errs);
	return rc;
}

static int run_verify(char *const *paths, int n, int json, char **out,
                      char **errs)
{
	capture_begin();
	int rc = verify_paths(paths, n, json, 2);
	capture_end(out, errs);
	return rc;
}

static void setup(void)
{
	tmpdir_setup();
	cli_init("stinfo");
}

START_TEST(hash_prints_sha256sum_lines_relative_to_the_folder)
{
	char *const *paths = make_folder();
	char *out, *errs;
	ck_assert_int_eq(run_hash(paths, 1, 0, &out, &errs), 0);
	ck_assert_str_eq(out, SHA_ABC "  a.txt\n" SHA_EMPTY "  empty\n");
	ck_assert_str_eq(errs, "");
	free(out);
	free(errs);
}
END_TEST

/* The hex SHA-256 of s by libst's st_hash, not by the verifier. */
static void sha256_hex(const char *s, char hex[ST_HASH_MAX_HEX])
{
	st_hash *h;
	st_error err;
	unsigned char d[ST_HASH_MAX_SIZE];
	ck_assert_int_eq(st_hash_new(&h, ST_HASH_SHA256, &err), ST_OK);
	ck_assert_int_eq(st_hash_update(h, s, strlen(s), &err), ST_OK);
	ck_assert_int_eq(st_hash_final(h, d, &err), ST_OK);
	st_hash_free(h);
	st_hash_hex(d, st_hash_size(ST_HASH_SHA256), hex);
}

START_TEST(hash_escapes_a_backslash_as_sha256sum_does)
{
	char *const *paths = make_folder();
	char p[700], hex[ST_HASH_MAX_HEX], want[1024];
	snprintf(p, sizeof p, "%s/back\\slash", dir);
	write_text(p, "hello\n");
	sha256_hex("hello\n", hex);
	/* sha256sum: the line starts with a backslash, the name's is doubled. */
	snprintf(want, sizeof want, SHA_ABC "  a.txt\n\\%s  back\\\\slash\n"
	         SHA_EMPTY "  empty\n", hex);
	char *out, *errs;
	ck_assert_int_eq(run_hash(paths, 1, 0, &out, &errs), 0);
	ck_assert_str_eq(out, want);
	free(out);
	free(errs);
}
END_TEST

START_TEST(hash_json_lists_files_with_sizes_and_digests)
{
	char *const *paths = make_folder();
	char *out, *errs, want[2048];
	ck_assert_int_eq(run_hash(paths, 1, 1, &out, &errs), 0);
	snprintf(want, sizeof want,
	         "{\"schema\": 1, \"path\": \"%s\", \"files\": [\n"
	         "  {\"path\": \"a.txt\", \"size\": 3, \"sha256\": \"" SHA_ABC "\"},\n"
	         "  {\"path\": \"empty\", \"size\": 0, \"sha256\": \"" SHA_EMPTY "\"}\n"
	         "]}\n", dir);
	ck_assert_str_eq(out, want);
	ck_assert_str_eq(errs, "");
	free(out);
	free(errs);
}
END_TEST

START_TEST(verify_says_ok_for_a_matching_sidecar)
{
	char *const *paths = make_folder();
	write_sums(SHA_ABC "  a.txt\n" SHA_EMPTY "  empty\n");
	char *out, *errs, want[1024];
	ck_assert_int_eq(run_verify(paths, 1, 0, &out, &errs), 0);
	/* Both files read, the 3 bytes of a.txt hashed. */
	snprintf(want, sizeof want, "%s: OK (folder; 2 files read, 3 bytes hashed)\n", dir);
	ck_assert_str_eq(out, want);
	ck_assert_str_eq(errs, "");
	free(out);
	free(errs);

	ck_assert_int_eq(run_verify(paths, 1, 1, &out, &errs), 0);
	snprintf(want, sizeof want, "{\"schema\": 1, \"path\": \"%s\", \"layout\": \"folder\", "
	         "\"ok\": true, ", dir);
	ck_assert_msg(!strncmp(out, want, strlen(want)), "%s", out);
	ck_assert_msg(strstr(out, "\"bytes_hashed\": 3, \"unverified\": 0, "), "%s", out);
	ck_assert_msg(strstr(out, "\"sidecar\": true, \"problems\": []}\n"), "%s", out);
	free(out);
	free(errs);
}
END_TEST

START_TEST(verify_reports_a_digest_that_does_not_match)
{
	char *const *paths = make_folder();
	/* a.txt listed with the empty file's digest. */
	write_sums(SHA_EMPTY "  a.txt\n" SHA_EMPTY "  empty\n");
	char *out, *errs, want[1024];
	ck_assert_int_eq(run_verify(paths, 1, 0, &out, &errs), 1);
	snprintf(want, sizeof want, "%s: 1 problem (folder; ", dir);
	ck_assert_msg(!strncmp(out, want, strlen(want)), "%s", out);
	/* One line on stderr, naming the file. */
	ck_assert_msg(!strncmp(errs, "stinfo: ", 8) && strstr(errs, "a.txt") &&
	              strchr(errs, '\n') == errs + strlen(errs) - 1, "%s", errs);
	free(out);
	free(errs);

	ck_assert_int_eq(run_verify(paths, 1, 1, &out, &errs), 1);
	ck_assert_msg(strstr(out, "\"ok\": false, "), "%s", out);
	snprintf(want, sizeof want, "\"problems\": [\n  {\"kind\": ");
	ck_assert_msg(strstr(out, want), "%s", out);
	snprintf(want, sizeof want, "\"path\": \"%s/a.txt\", \"message\": ", dir);
	ck_assert_msg(strstr(out, want), "%s", out);
	free(out);
	free(errs);
}
END_TEST

START_TEST(verify_without_sidecar_checked_nothing_and_says_so)
{
	/* No SHA256SUMS and no file libst validates: nothing was read, which
	 * st/verify.h counts as a problem (ST_VERIFY_UNCHECKED), never OK. */
	char *const *paths = make_folder();
	char *out, *errs, want[1024];
	ck_assert_int_eq(run_verify(paths, 1, 0, &out, &errs), 1);
	snprintf(want, sizeof want, "%s: 1 problem (folder; 0 files read, "
	         "0 bytes hashed, no SHA256SUMS)\n", dir);
	ck_assert_str_eq(out, want);
	ck_assert_msg(!strncmp(errs, "stinfo: ", 8) && strstr(errs, dir) &&
	              strchr(errs, '\n') == errs + strlen(errs) - 1, "%s", errs);
	free(out);
	free(errs);
}
END_TEST

START_TEST(verify_unreadable_path_exits_2_and_keeps_going)
{
	char *const *folder = make_folder();
	write_sums(SHA_ABC "  a.txt\n" SHA_EMPTY "  empty\n");
	char missing[700];
	snprintf(missing, sizeof missing, "%s/missing", tmp);
	char *paths[2] = {missing, folder[0]};
	char *out, *errs;
	ck_assert_int_eq(run_verify(paths, 2, 0, &out, &errs), 2);
	ck_assert_msg(!strncmp(errs, "stinfo: ", 8) && strstr(errs, missing), "%s", errs);
	/* The second PATH is still verified. */
	char want[700];
	snprintf(want, sizeof want, "%s: OK (folder; ", dir);
	ck_assert_msg(!strncmp(out, want, strlen(want)), "%s", out);
	free(out);
	free(errs);

	/* Several PATHs in JSON make one array. */
	ck_assert_int_eq(run_verify(paths, 2, 1, &out, &errs), 2);
	ck_assert_msg(!strncmp(out, "[\n{\"schema\": 1, \"path\": ", 24), "%s", out);
	size_t len = strlen(out);
	ck_assert_msg(len > 5 && !strcmp(out + len - 5, "]}\n]\n"), "%s", out);
	free(out);
	free(errs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_verify");
	TCase *tc = tcase_create("verify");
	tcase_add_checked_fixture(tc, setup, tmpdir_teardown);
	tcase_add_test(tc, hash_prints_sha256sum_lines_relative_to_the_folder);
	tcase_add_test(tc, hash_escapes_a_backslash_as_sha256sum_does);
	tcase_add_test(tc, hash_json_lists_files_with_sizes_and_digests);
	tcase_add_test(tc, verify_says_ok_for_a_matching_sidecar);
	tcase_add_test(tc, verify_reports_a_digest_that_does_not_match);
	tcase_add_test(tc, verify_without_sidecar_checked_nothing_and_says_so);
	tcase_add_test(tc, verify_unreadable_path_exits_2_and_keeps_going);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
