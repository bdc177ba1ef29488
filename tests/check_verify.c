/*
 * check_verify.c - unit tests of libst/verify.c through its API: layouts,
 * problem kinds and paths, counts, hash mode, threads, progress. The trees
 * are testdata/verify/cases/, made with hashlib by gen_verify.py (read
 * here, never written); tests/cli/verify.sh checks every message's wording
 * against that script's goldens. The "hostile" case builds its small trees
 * in a temporary folder (doc/safety.md, "OK means something was checked",
 * and a dead writer's leftovers).
 */
#include <st.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TMPDIR_NAME "st-check-verify"
#include "tmpdir.h"

static char *case_path(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s/verify/cases/%s", ST_TESTDATA, name);
	return buf;
}

static st_verify *verify(const char *name, unsigned flags, int threads)
{
	st_verify_options opt = {flags, threads, NULL, NULL};
	st_verify *v = NULL;
	st_error err;
	int rc = st_verify_path(&v, case_path(name), &opt, &err);
	ck_assert_msg(rc == ST_OK, "%s: %s", name, err.message);
	return v;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

START_TEST(clean_cache_has_no_problem)
{
	st_verify *v = verify("clean", 0, 2);
	ck_assert_int_eq(st_verify_layout(v), ST_VERIFY_LAYOUT_CACHE);
	ck_assert_uint_eq(st_verify_n_problems(v), 0);
	ck_assert_uint_eq(st_verify_n_repos(v), 4);
	/* Two revisions share a blob: 12 distinct blobs are read. */
	ck_assert_uint_eq(st_verify_n_files(v), 12);
	ck_assert_uint_eq(st_verify_n_unverified(v), 0);
	ck_assert_int_eq(st_verify_no_symlinks(v), 0);
	st_verify_free(v);
}
END_TEST

START_TEST(dangling_link_is_one_problem_naming_the_link)
{
	st_verify *v = verify("dangling", 0, 1);
	ck_assert_uint_eq(st_verify_n_problems(v), 1);
	const st_verify_problem *p = st_verify_problem_at(v, 0);
	ck_assert_int_eq(p->kind, ST_VERIFY_DANGLING_LINK);
	ck_assert(has_suffix(p->path, "/snapshots/1111111111111111111111111111111111111111/model.safetensors"));
	ck_assert(!strncmp(p->message, p->path, strlen(p->path)));
	ck_assert_str_eq(st_verify_kind_name(p->kind), "dangling-link");
	ck_assert_ptr_null(st_verify_problem_at(v, 1));
	st_verify_free(v);
}
END_TEST

START_TEST(links_out_of_the_cache_are_not_followed)
{
	st_verify *v = verify("escaping", 0, 1);
	ck_assert_uint_eq(st_verify_n_problems(v), 1);
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_ESCAPING_LINK);
	/* Only config.json's blob is read, not the file outside. */
	ck_assert_uint_eq(st_verify_n_files(v), 1);
	st_verify_free(v);
	v = verify("absolute", 0, 1);
	ck_assert_uint_eq(st_verify_n_problems(v), 1);
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_ABSOLUTE_LINK);
	ck_assert_uint_eq(st_verify_n_files(v), 1);
	st_verify_free(v);
}
END_TEST

START_TEST(sidecar_mismatch_and_missing_entry)
{
	st_verify *v = verify("sidecar-bad", 0, 2);
	ck_assert_int_eq(st_verify_layout(v), ST_VERIFY_LAYOUT_FOLDER);
	ck_assert_int_eq(st_verify_has_sidecar(v), 1);
	ck_assert_uint_eq(st_verify_n_problems(v), 2);
	/* Sorted by path: config.json before gone.bin. */
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_CORRUPT);
	ck_assert(has_suffix(st_verify_problem_at(v, 0)->path, "/config.json"));
	ck_assert_int_eq(st_verify_problem_at(v, 1)->kind, ST_VERIFY_MISSING_FILE);
	st_verify_free(v);
}
END_TEST

START_TEST(cache_without_links_is_recognised)
{
	st_verify *v = verify("nosymlink", 0, 1);
	ck_assert_int_eq(st_verify_no_symlinks(v), 1);
	ck_assert_uint_eq(st_verify_n_problems(v), 0);
	ck_assert_uint_eq(st_verify_n_files(v), 2);
	st_verify_free(v);
	v = verify("replaced", 0, 1);
	ck_assert_int_eq(st_verify_no_symlinks(v), 0);
	ck_assert_uint_eq(st_verify_n_problems(v), 1);
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_REPLACED_LINK);
	st_verify_free(v);
}
END_TEST

START_TEST(threads_do_not_change_the_answer)
{
	st_verify *a = verify("truncated", 0, 1), *b = verify("truncated", 0, 4);
	ck_assert_uint_eq(st_verify_n_problems(a), st_verify_n_problems(b));
	ck_assert_uint_eq(st_verify_n_problems(a), 2);
	for (size_t i = 0; i < st_verify_n_problems(a); i++)
		ck_assert_str_eq(st_verify_problem_at(a, i)->message,
		                 st_verify_problem_at(b, i)->message);
	ck_assert_int_eq(st_verify_problem_at(a, 0)->kind, ST_VERIFY_TRUNCATED);
	ck_assert_int_eq(st_verify_problem_at(a, 1)->kind, ST_VERIFY_INVALID);
	ck_assert_uint_eq(st_verify_bytes_hashed(a), st_verify_bytes_hashed(b));
	st_verify_free(a);
	st_verify_free(b);
}
END_TEST

/* The digests the generator wrote into the sidecar are what hash mode finds. */
START_TEST(hash_mode_matches_the_sidecar)
{
	st_verify *v = verify("sidecar", ST_VERIFY_HASH, 2);
	ck_assert_uint_eq(st_verify_n_file_hashes(v), 3);
	char line[256], path[8192];
	snprintf(path, sizeof path, "%s/SHA256SUMS", case_path("sidecar"));
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	size_t i = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		const st_verify_file *h = st_verify_file_at(v, i++);
		ck_assert_ptr_nonnull(h);
		ck_assert(!strncmp(line, h->sha256, 64));
		ck_assert_str_eq(line + 66, h->path);
		ck_assert_uint_eq(h->n_tensors, 0);
	}
	fclose(f);
	ck_assert_uint_eq(i, 3);
	st_verify_free(v);
}
END_TEST

START_TEST(tensor_digests_in_hash_mode)
{
	st_verify *v = verify("sidecar/model.safetensors",
	                      ST_VERIFY_HASH | ST_VERIFY_TENSORS, 1);
	ck_assert_int_eq(st_verify_layout(v), ST_VERIFY_LAYOUT_FILE);
	ck_assert_uint_eq(st_verify_n_file_hashes(v), 1);
	const st_verify_file *f = st_verify_file_at(v, 0);
	ck_assert_uint_eq(f->n_tensors, 3);
	/* Data order: h.0.w, h.1.w, wte (tiny_model in gen_verify.py). */
	ck_assert_str_eq(f->tensors[0].name, "h.0.w");
	ck_assert_str_eq(f->tensors[2].name, "wte");
	ck_assert_uint_eq(strlen(f->tensors[1].sha256), 64);
	ck_assert_str_ne(f->tensors[0].sha256, f->tensors[1].sha256);
	st_verify_free(v);
}
END_TEST

struct seen {
	uint64_t last_done, last_total;
	int calls;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct seen *s = ctx;
	ck_assert_uint_ge(done, s->last_done);
	s->last_done = done;
	s->last_total = total;
	s->calls++;
}

START_TEST(progress_reaches_the_total)
{
	struct seen s = {0, 0, 0};
	st_verify_options opt = {0, 2, on_progress, &s};
	st_verify *v = NULL;
	ck_assert_int_eq(st_verify_path(&v, case_path("clean"), &opt, NULL), ST_OK);
	ck_assert_int_gt(s.calls, 0);
	ck_assert_uint_eq(s.last_done, st_verify_bytes_hashed(v));
	ck_assert_uint_eq(s.last_total, st_verify_bytes_hashed(v));
	st_verify_free(v);
}
END_TEST

START_TEST(unreadable_path_is_eio)
{
	st_verify *v = (st_verify *)&v;
	st_error err;
	ck_assert_int_eq(st_verify_path(&v, case_path("no-such-case"), NULL, &err),
	                 ST_EIO);
	ck_assert_ptr_null(v);
	ck_assert(has_suffix(err.message, "no-such-case: No such file or directory"));
	st_verify_free(NULL);
}
END_TEST

/* The problems of v joined, one per line, for substring checks. */
static const char *all_problems(const st_verify *v)
{
	static char buf[4096];
	buf[0] = '\0';
	for (size_t i = 0; i < st_verify_n_problems(v); i++) {
		size_t n = strlen(buf);
		const st_verify_problem *p = st_verify_problem_at(v, i);
		snprintf(buf + n, sizeof buf - n, "%s %s\n", st_verify_kind_name(p->kind),
		         p->message);
	}
	return buf;
}

static st_verify *verify_tmp(void)
{
	st_verify *v = NULL;
	st_error err;
	ck_assert_int_eq(st_verify_path(&v, tmp, NULL, &err), ST_OK);
	return v;
}

/* A hash that matches says the bytes are the listed ones, not that they are weights. */
START_TEST(empty_safetensors_with_matching_sum_is_invalid)
{
	write_text(path_in("model.safetensors"), "");
	write_text(path_in("SHA256SUMS"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
	           "649b934ca495991b7852b855  model.safetensors\n");
	st_verify *v = verify_tmp();
	ck_assert_uint_eq(st_verify_n_problems(v), 1);
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_INVALID);
	ck_assert_msg(strstr(all_problems(v), "(empty file)"), "%s", all_problems(v));
	ck_assert_uint_eq(st_verify_n_files(v), 1);
	st_verify_free(v);
}
END_TEST

/* "OK" means something was checked: nothing read, an empty or partial manifest. */
START_TEST(nothing_checked_is_a_problem)
{
	st_verify *v = verify_tmp();
	ck_assert_uint_eq(st_verify_n_problems(v), 1);
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_UNCHECKED);
	ck_assert_str_eq(st_verify_kind_name(ST_VERIFY_UNCHECKED), "unchecked");
	st_verify_free(v);
	write_text(path_in("notes.txt"), "n\n");
	write_text(path_in("SHA256SUMS"), "");
	v = verify_tmp();
	const char *all = all_problems(v);
	ck_assert_msg(strstr(all, "bad-listing ") && strstr(all, "SHA256SUMS: lists no file"),
	              "%s", all);
	ck_assert_msg(strstr(all, "unchecked ") && strstr(all, "notes.txt: not listed in "
	              "SHA256SUMS"), "%s", all);
	st_verify_free(v);
}
END_TEST

/* sha256sum writes "\\<hex>  a\\\\b" for the name a\b: read back as that name. */
START_TEST(sidecar_reads_sha256sums_escaped_names)
{
	write_text(path_in("a\\b\nc"), "");
	write_text(path_in("SHA256SUMS"), "\\e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
	           "649b934ca495991b7852b855  a\\\\b\\nc\n"
	           "\\e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
	           "649b934ca495991b7852b855  gone\\n\n");
	st_verify *v = verify_tmp();
	ck_assert_uint_eq(st_verify_n_problems(v), 1);
	const st_verify_problem *p = st_verify_problem_at(v, 0);
	ck_assert_int_eq(p->kind, ST_VERIFY_MISSING_FILE);
	/* path is the name on disk; the message keeps to one line. */
	ck_assert(has_suffix(p->path, "/gone\n"));
	ck_assert_ptr_null(strchr(p->message, '\n'));
	ck_assert_uint_eq(st_verify_n_files(v), 1);
	ck_assert_uint_eq(st_verify_n_unverified(v), 0);
	st_verify_free(v);
}
END_TEST

/* SHA-256 of "abc" (FIPS 180-2, appendix B.1). */
#define SHA_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

/*
 * A dead writer's temporaries (st/atomic.h's names) are one leftover each,
 * with --check's wording, and are neither read nor walked into, so no
 * "not listed in SHA256SUMS" for them; a live writer's is an ordinary file.
 */
START_TEST(leftovers_of_a_gone_writer_are_reported_not_read)
{
	char name[200], want[1024];
	long dead = (long)gone_pid();
	write_text(path_in("notes.txt"), "abc");
	write_text(path_in("SHA256SUMS"), SHA_ABC "  notes.txt\n");
	snprintf(name, sizeof name, ".model.safetensors.tmp-%ld-AbC123", dead);
	write_text(path_in(name), "half");
	snprintf(name, sizeof name, ".sub.tmp-%ld-XyZ789", dead);
	ck_assert_int_eq(mkdir(path_in(name), 0700), 0);
	snprintf(name, sizeof name, ".sub.tmp-%ld-XyZ789/config.json", dead);
	write_text(path_in(name), "{}");
	st_verify *v = verify_tmp();
	ck_assert_msg(st_verify_n_problems(v) == 2, "%s", all_problems(v));
	snprintf(want, sizeof want, "%s/.model.safetensors.tmp-%ld-AbC123: left by a "
	         "writer that is gone; not part of the snapshot", tmp, dead);
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_LEFTOVER);
	ck_assert_str_eq(st_verify_problem_at(v, 0)->message, want);
	snprintf(want, sizeof want, "%s/.sub.tmp-%ld-XyZ789", tmp, dead);
	ck_assert_int_eq(st_verify_problem_at(v, 1)->kind, ST_VERIFY_LEFTOVER);
	ck_assert_str_eq(st_verify_problem_at(v, 1)->path, want);
	ck_assert_str_eq(st_verify_kind_name(ST_VERIFY_LEFTOVER), "leftover");
	ck_assert_uint_eq(st_verify_n_files(v), 1);
	st_verify_free(v);
	/* In --hash mode too: a manifest made now leaves them out. */
	st_verify_options opt = {ST_VERIFY_HASH, 1, NULL, NULL};
	st_error err;
	ck_assert_int_eq(st_verify_path(&v, tmp, &opt, &err), ST_OK);
	ck_assert_uint_eq(st_verify_n_file_hashes(v), 1); /* notes.txt (SHA256SUMS is skipped) */
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_LEFTOVER);
	st_verify_free(v);
	/* The same name with a live owner: read, and not in SHA256SUMS. */
	snprintf(name, sizeof name, ".notes.txt.tmp-%ld-LiVe01", (long)getpid());
	write_text(path_in(name), "busy");
	v = verify_tmp();
	ck_assert_msg(strstr(all_problems(v), "unchecked ") &&
	              strstr(all_problems(v), "LiVe01: not listed in SHA256SUMS"),
	              "%s", all_problems(v));
	st_verify_free(v);
}
END_TEST

/* In a cache: a temporary in a snapshot is no replaced link, and a
 * snapshot writer's folder in snapshots/ is no revision. */
START_TEST(leftovers_in_a_cache_snapshot_are_not_entries)
{
	char name[200];
	long dead = (long)gone_pid();
	const char *c = "1111111111111111111111111111111111111111";
	ck_assert_int_eq(mkdir(path_in("models--t--l"), 0700), 0);
	ck_assert_int_eq(mkdir(path_in("models--t--l/blobs"), 0700), 0);
	ck_assert_int_eq(mkdir(path_in("models--t--l/snapshots"), 0700), 0);
	snprintf(name, sizeof name, "models--t--l/snapshots/%s", c);
	ck_assert_int_eq(mkdir(path_in(name), 0700), 0);
	write_text(path_in("models--t--l/blobs/" SHA_ABC), "abc");
	snprintf(name, sizeof name, "models--t--l/snapshots/%s/notes.txt", c);
	ck_assert_int_eq(symlink("../../blobs/" SHA_ABC, path_in(name)), 0);
	snprintf(name, sizeof name, "models--t--l/snapshots/%s/.notes.txt.tmp-%ld-AbC123",
	         c, dead);
	write_text(path_in(name), "half");
	snprintf(name, sizeof name, "models--t--l/snapshots/.%s.tmp-%ld-XyZ789", c, dead);
	ck_assert_int_eq(mkdir(path_in(name), 0700), 0);
	st_verify *v = verify_tmp();
	ck_assert_int_eq(st_verify_layout(v), ST_VERIFY_LAYOUT_CACHE);
	ck_assert_msg(st_verify_n_problems(v) == 2, "%s", all_problems(v));
	ck_assert_int_eq(st_verify_problem_at(v, 0)->kind, ST_VERIFY_LEFTOVER);
	ck_assert_int_eq(st_verify_problem_at(v, 1)->kind, ST_VERIFY_LEFTOVER);
	ck_assert_uint_eq(st_verify_n_files(v), 1);
	st_verify_free(v);
}
END_TEST

static Suite *verify_suite(void)
{
	Suite *s = suite_create("verify");
	TCase *core = tcase_create("core");
	tcase_add_test(core, clean_cache_has_no_problem);
	tcase_add_test(core, dangling_link_is_one_problem_naming_the_link);
	tcase_add_test(core, links_out_of_the_cache_are_not_followed);
	tcase_add_test(core, sidecar_mismatch_and_missing_entry);
	tcase_add_test(core, cache_without_links_is_recognised);
	tcase_add_test(core, threads_do_not_change_the_answer);
	tcase_add_test(core, hash_mode_matches_the_sidecar);
	tcase_add_test(core, tensor_digests_in_hash_mode);
	tcase_add_test(core, progress_reaches_the_total);
	suite_add_tcase(s, core);
	TCase *errors = tcase_create("errors");
	tcase_add_test(errors, unreadable_path_is_eio);
	suite_add_tcase(s, errors);
	TCase *hostile = tcase_create("hostile");
	tcase_add_checked_fixture(hostile, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(hostile, empty_safetensors_with_matching_sum_is_invalid);
	tcase_add_test(hostile, nothing_checked_is_a_problem);
	tcase_add_test(hostile, sidecar_reads_sha256sums_escaped_names);
	tcase_add_test(hostile, leftovers_of_a_gone_writer_are_reported_not_read);
	tcase_add_test(hostile, leftovers_in_a_cache_snapshot_are_not_entries);
	suite_add_tcase(s, hostile);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(verify_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
