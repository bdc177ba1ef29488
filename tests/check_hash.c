/*
 * check_hash.c - unit tests of libst/hash.c (SHA-256, SHA-1, git blob ids).
 *
 * Reference digests are published ones, not computed here: the SHA-256
 * and SHA-1 examples of FIPS 180-2 (appendices B.1-B.3 and A.1-A.3:
 * "abc", the 448-bit message, one million 'a'), the well-known digests of
 * the empty string, and git blob ids as `git hash-object --stdin` prints
 * them (e69de29b... is git's empty blob).
 */
#include <st.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ABC448 "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"

/* Hex digest of n bytes of data, hashed in pieces of step bytes. */
static void digest_hex(st_hash_algo algo, const void *data, size_t n,
                       size_t step, char *hex)
{
	st_hash *h;
	st_error err;
	unsigned char d[ST_HASH_MAX_SIZE];
	ck_assert_int_eq(st_hash_new(&h, algo, &err), ST_OK);
	if (algo == ST_HASH_GIT_SHA1)
		ck_assert_int_eq(st_hash_git_begin(h, n, &err), ST_OK);
	const unsigned char *p = data;
	for (size_t at = 0; at < n; at += step) {
		size_t k = n - at < step ? n - at : step;
		ck_assert_int_eq(st_hash_update(h, p + at, k, &err), ST_OK);
	}
	ck_assert_int_eq(st_hash_final(h, d, &err), ST_OK);
	st_hash_hex(d, st_hash_size(algo), hex);
	st_hash_free(h);
}

static char *million_a(void)
{
	char *m = malloc(1000000);
	ck_assert_ptr_nonnull(m);
	memset(m, 'a', 1000000);
	return m;
}

/* A temporary file holding n bytes of data; returns an fd at offset 0. */
static int temp_file(const void *data, size_t n)
{
	char path[] = "/tmp/check_hash-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* ---- core ------------------------------------------------------------------- */

START_TEST(sha256_fips_vectors)
{
	char hex[ST_HASH_MAX_HEX];
	digest_hex(ST_HASH_SHA256, "abc", 3, 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	digest_hex(ST_HASH_SHA256, ABC448, 56, 56, hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	digest_hex(ST_HASH_SHA256, "", 0, 1, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	char *m = million_a();
	digest_hex(ST_HASH_SHA256, m, 1000000, 1000000, hex);
	ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(m);
}
END_TEST

START_TEST(sha1_fips_vectors)
{
	char hex[ST_HASH_MAX_HEX];
	digest_hex(ST_HASH_SHA1, "abc", 3, 3, hex);
	ck_assert_str_eq(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
	digest_hex(ST_HASH_SHA1, ABC448, 56, 56, hex);
	ck_assert_str_eq(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	char *m = million_a();
	digest_hex(ST_HASH_SHA1, m, 1000000, 1000000, hex);
	ck_assert_str_eq(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	free(m);
}
END_TEST

START_TEST(git_blob_ids_match_git_hash_object)
{
	char hex[ST_HASH_MAX_HEX];
	digest_hex(ST_HASH_GIT_SHA1, "", 0, 1, hex);
	ck_assert_str_eq(hex, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
	digest_hex(ST_HASH_GIT_SHA1, "hello world\n", 12, 5, hex);
	ck_assert_str_eq(hex, "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
	digest_hex(ST_HASH_GIT_SHA1, "abc", 3, 3, hex);
	ck_assert_str_eq(hex, "f2ba8f84ab5c1bce84a7b441cb1959cfc7093b7f");
	char *m = million_a();
	digest_hex(ST_HASH_GIT_SHA1, m, 1000000, 4096, hex);
	ck_assert_str_eq(hex, "de1fbf0c2f34f67f01f355f31ed0cf7319643c5e");
	free(m);
}
END_TEST

START_TEST(pieces_give_the_same_digest)
{
	char *m = million_a();
	char whole[ST_HASH_MAX_HEX], bytes[ST_HASH_MAX_HEX], odd[ST_HASH_MAX_HEX];
	digest_hex(ST_HASH_SHA256, m, 1000000, 1000000, whole);
	digest_hex(ST_HASH_SHA256, m, 1000000, 1, bytes);
	digest_hex(ST_HASH_SHA256, m, 1000000, 4093, odd);
	ck_assert_str_eq(whole, bytes);
	ck_assert_str_eq(whole, odd);
	free(m);
}
END_TEST

START_TEST(reset_starts_again)
{
	st_hash *h;
	unsigned char d[32];
	char hex[ST_HASH_MAX_HEX];
	ck_assert_int_eq(st_hash_new(&h, ST_HASH_SHA256, NULL), ST_OK);
	ck_assert_int_eq(st_hash_update(h, "xyz", 3, NULL), ST_OK);
	ck_assert_int_eq(st_hash_final(h, d, NULL), ST_OK);
	ck_assert_int_eq(st_hash_reset(h, NULL), ST_OK);
	ck_assert_int_eq(st_hash_update(h, "abc", 3, NULL), ST_OK);
	ck_assert_int_eq(st_hash_final(h, d, NULL), ST_OK);
	st_hash_hex(d, 32, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	st_hash_free(h);
}
END_TEST

START_TEST(hash_fd_reads_to_the_end)
{
	char *m = million_a();
	/* 3 MB: more than one read buffer. */
	char *big = malloc(3000000);
	ck_assert_ptr_nonnull(big);
	for (int i = 0; i < 3; i++)
		memcpy(big + i * 1000000, m, 1000000);
	char want[ST_HASH_MAX_HEX], got[ST_HASH_MAX_HEX];
	digest_hex(ST_HASH_SHA256, big, 3000000, 3000000, want);
	int fd = temp_file(big, 3000000);
	unsigned char d[32];
	uint64_t n = 0;
	st_error err;
	ck_assert_int_eq(st_hash_fd(fd, "big", ST_HASH_SHA256, d, &n, &err), ST_OK);
	st_hash_hex(d, 32, got);
	ck_assert_str_eq(got, want);
	ck_assert_uint_eq(n, 3000000);
	close(fd);
	fd = temp_file(m, 1000000);
	ck_assert_int_eq(st_hash_fd(fd, "a", ST_HASH_GIT_SHA1, d, &n, &err), ST_OK);
	st_hash_hex(d, 20, got);
	ck_assert_str_eq(got, "de1fbf0c2f34f67f01f355f31ed0cf7319643c5e");
	close(fd);
	free(big);
	free(m);
}
END_TEST

START_TEST(hex_round_trip)
{
	unsigned char d[20], back[20];
	for (int i = 0; i < 20; i++)
		d[i] = (unsigned char)(i * 13 + 7);
	char hex[41];
	st_hash_hex(d, 20, hex);
	ck_assert_uint_eq(strlen(hex), 40);
	ck_assert_int_eq(st_hash_unhex(hex, 20, back), 0);
	ck_assert_mem_eq(d, back, 20);
	ck_assert_int_eq(st_hash_unhex("A9993E364706816ABA3E25717850C26C9CD0D89D", 20, back), 0);
	st_hash_hex(back, 20, hex);
	ck_assert_str_eq(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
	ck_assert_uint_eq(st_hash_size(ST_HASH_SHA256), 32);
	ck_assert_uint_eq(st_hash_size(ST_HASH_GIT_SHA1), 20);
	ck_assert_str_eq(st_hash_name(ST_HASH_GIT_SHA1), "git-sha1");
}
END_TEST

/* ---- errors ----------------------------------------------------------------- */

START_TEST(unhex_refuses_bad_digits_and_lengths)
{
	unsigned char d[20];
	ck_assert_int_eq(st_hash_unhex("a9993e364706816aba3e25717850c26c9cd0d89", 20, d), -1);
	ck_assert_int_eq(st_hash_unhex("a9993e364706816aba3e25717850c26c9cd0d89d0", 20, d), -1);
	ck_assert_int_eq(st_hash_unhex("g9993e364706816aba3e25717850c26c9cd0d89d", 20, d), -1);
	ck_assert_int_eq(st_hash_unhex("", 20, d), -1);
}
END_TEST

START_TEST(git_size_must_match_bytes)
{
	st_hash *h;
	st_error err;
	unsigned char d[20];
	ck_assert_int_eq(st_hash_new(&h, ST_HASH_GIT_SHA1, &err), ST_OK);
	ck_assert_int_eq(st_hash_git_begin(h, 4, &err), ST_OK);
	ck_assert_int_eq(st_hash_update(h, "abc", 3, &err), ST_OK);
	ck_assert_int_eq(st_hash_final(h, d, &err), ST_ESTATE);
	ck_assert_ptr_nonnull(strstr(err.message, "3 bytes hashed"));
	st_hash_free(h);
	/* The header only comes first, and only for git-sha1. */
	ck_assert_int_eq(st_hash_new(&h, ST_HASH_GIT_SHA1, &err), ST_OK);
	ck_assert_int_eq(st_hash_update(h, "abc", 3, &err), ST_OK);
	ck_assert_int_eq(st_hash_git_begin(h, 3, &err), ST_ESTATE);
	st_hash_free(h);
	ck_assert_int_eq(st_hash_new(&h, ST_HASH_SHA256, &err), ST_OK);
	ck_assert_int_eq(st_hash_git_begin(h, 3, &err), ST_ESTATE);
	st_hash_free(h);
}
END_TEST

START_TEST(update_after_final_is_refused)
{
	st_hash *h;
	st_error err;
	unsigned char d[32];
	ck_assert_int_eq(st_hash_new(&h, ST_HASH_SHA256, &err), ST_OK);
	ck_assert_int_eq(st_hash_final(h, d, &err), ST_OK);
	ck_assert_int_eq(st_hash_update(h, "a", 1, &err), ST_ESTATE);
	ck_assert_int_eq(st_hash_final(h, d, &err), ST_ESTATE);
	st_hash_free(h);
	st_hash_free(NULL);
}
END_TEST

START_TEST(unknown_algorithm_is_refused)
{
	st_hash *h = (st_hash *)&h;
	st_error err;
	ck_assert_int_eq(st_hash_new(&h, (st_hash_algo)7, &err), ST_EINVAL);
	ck_assert_ptr_null(h);
}
END_TEST

START_TEST(hash_fd_unreadable_is_eio)
{
	int fd = open("/", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	unsigned char d[32];
	st_error err;
	ck_assert_int_eq(st_hash_fd(fd, "/", ST_HASH_SHA256, d, NULL, &err), ST_EIO);
	ck_assert_ptr_nonnull(strstr(err.message, "/: read"));
	close(fd);
}
END_TEST

static Suite *hash_suite(void)
{
	Suite *s = suite_create("hash");
	TCase *core = tcase_create("core");
	tcase_add_test(core, sha256_fips_vectors);
	tcase_add_test(core, sha1_fips_vectors);
	tcase_add_test(core, git_blob_ids_match_git_hash_object);
	tcase_add_test(core, pieces_give_the_same_digest);
	tcase_add_test(core, reset_starts_again);
	tcase_add_test(core, hash_fd_reads_to_the_end);
	tcase_add_test(core, hex_round_trip);
	suite_add_tcase(s, core);
	TCase *errors = tcase_create("errors");
	tcase_add_test(errors, unhex_refuses_bad_digits_and_lengths);
	tcase_add_test(errors, git_size_must_match_bytes);
	tcase_add_test(errors, update_after_final_is_refused);
	tcase_add_test(errors, unknown_algorithm_is_refused);
	tcase_add_test(errors, hash_fd_unreadable_is_eio);
	suite_add_tcase(s, errors);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hash_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
