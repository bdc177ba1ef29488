/*
 * targets_verify.c - the fuzz target of libst's verifier (verify.c) and of
 * the two listings it parses from untrusted files: a cache's
 * trees/<commit>.json (json.c's st__tree_parse) and a folder's SHA256SUMS.
 * Shared by the libFuzzer harness (fuzz.c with -DFUZZ_VERIFY, built by
 * build.sh) and the corpus replay test (tests/check_verify_fuzz_corpus.c).
 *
 *   fuzz_verify  mode bit 0 clear: the rest is a trees/<commit>.json.
 *                st__tree_parse returns ST_OK, or ST_EFORMAT or
 *                ST_EUNSUPPORTED with a reason; what it accepts
 *                has non-empty paths, 40-hex blob ids and 64-hex LFS
 *                digests. The listing is then put in a small cache (one
 *                snapshot whose config.json links to its blob) and
 *                st_verify_path runs on it.
 *                mode bit 0 set: the rest is the SHA256SUMS of a folder
 *                holding a.txt and sub/b.txt; st_verify_path runs on it.
 *                Either way: every problem is one line that starts with its
 *                path (escaped when it holds control bytes), its kind has
 *                a name, at most the planted files are
 *                read, and the verdict does not depend on the thread count.
 */
#include "internal.h"
#include "fuzz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FZ_COMMIT "0123456789abcdef0123456789abcdef01234567"
#define FZ_CONFIG "{\"a\": 1}\n"
/* git hash-object of FZ_CONFIG */
#define FZ_BLOB "cb5b2f69babc53f9145b45ad20b9a075d48717ef"

static void fz_verify_check(const char *root, uint64_t max_files)
{
	st_verify *a = NULL, *b = NULL;
	st_verify_options one = {0, 1, NULL, NULL}, two = {0, 2, NULL, NULL};
	st_error err;
	CHECK(st_verify_path(&a, root, &one, &err) == ST_OK);
	CHECK(st_verify_path(&b, root, &two, &err) == ST_OK);
	CHECK(st_verify_n_problems(a) == st_verify_n_problems(b));
	CHECK(st_verify_n_files(a) <= max_files);
	for (size_t i = 0; i < st_verify_n_problems(a); i++) {
		const st_verify_problem *p = st_verify_problem_at(a, i);
		CHECK(strcmp(st_verify_kind_name(p->kind), "?") != 0);
		/* path is the name on disk; the message spells it \xNN-escaped. */
		int plain = 1;
		for (const char *c = p->path; *c; c++)
			plain &= (unsigned char)*c >= 0x20 && *c != 0x7f;
		CHECK(!plain || !strncmp(p->message, p->path, strlen(p->path)));
		CHECK(strchr(p->message, '\n') == NULL);
		CHECK(!strcmp(p->message, st_verify_problem_at(b, i)->message));
	}
	st_verify_free(a);
	st_verify_free(b);
}

static void fz_verify_tree(const unsigned char *data, size_t size)
{
	struct st__tree t;
	char why[256];
	int rc = st__tree_parse(&t, (const char *)data, size, why, sizeof why);
	CHECK(rc == ST_OK || rc == ST_EFORMAT || rc == ST_EUNSUPPORTED ||
	      rc == ST_ENOMEM);
	if (rc == ST_OK) {
		for (size_t i = 0; i < t.n; i++) {
			CHECK(t.e[i].path && t.e[i].path[0]);
			CHECK(st__is_hex(t.e[i].blob_id, 40));
			CHECK(!t.e[i].has_lfs || st__is_hex(t.e[i].lfs_sha256, 64));
		}
		st__tree_free(&t);
	} else {
		/* The reason may quote a name with any bytes: verify.c escapes it. */
		CHECK(why[0] != '\0');
	}
}

static void fuzz_verify(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	const char *tmp = getenv("TMPDIR");
	char root[2048], p[4096];
	snprintf(root, sizeof root, "%s/fz_verify.XXXXXX", tmp ? tmp : "/tmp");
	CHECK(mkdtemp(root) != NULL);
	if (!(mode & 1)) {
		fz_verify_tree(data, size);
		const char *dirs[] = {"blobs", "refs", "trees", "snapshots",
		                      ("snapshots/" FZ_COMMIT)};
		for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
			snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
			CHECK(mkdir(p, 0755) == 0);
		}
		snprintf(p, sizeof p, "%s/blobs/" FZ_BLOB, root);
		fz_write(p, FZ_CONFIG, strlen(FZ_CONFIG));
		snprintf(p, sizeof p, "%s/snapshots/" FZ_COMMIT "/config.json", root);
		CHECK(symlink("../../blobs/" FZ_BLOB, p) == 0);
		snprintf(p, sizeof p, "%s/refs/main", root);
		fz_write(p, FZ_COMMIT, 40);
		snprintf(p, sizeof p, "%s/trees/" FZ_COMMIT ".json", root);
		fz_write(p, data, size);
		fz_verify_check(root, 1);
		const char *files[] = {("trees/" FZ_COMMIT ".json"), "refs/main",
		                       ("snapshots/" FZ_COMMIT "/config.json"),
		                       ("blobs/" FZ_BLOB)};
		for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
			snprintf(p, sizeof p, "%s/%s", root, files[i]);
			CHECK(unlink(p) == 0);
		}
		for (size_t i = sizeof dirs / sizeof *dirs; i-- > 0;) {
			snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
			CHECK(rmdir(p) == 0);
		}
	} else {
		snprintf(p, sizeof p, "%s/sub", root);
		CHECK(mkdir(p, 0755) == 0);
		snprintf(p, sizeof p, "%s/a.txt", root);
		fz_write(p, "a\n", 2);
		snprintf(p, sizeof p, "%s/sub/b.txt", root);
		fz_write(p, "b\n", 2);
		snprintf(p, sizeof p, "%s/SHA256SUMS", root);
		fz_write(p, data, size);
		fz_verify_check(root, 2);
		const char *files[] = {"SHA256SUMS", "a.txt", "sub/b.txt"};
		for (size_t i = 0; i < 3; i++) {
			snprintf(p, sizeof p, "%s/%s", root, files[i]);
			CHECK(unlink(p) == 0);
		}
		snprintf(p, sizeof p, "%s/sub", root);
		CHECK(rmdir(p) == 0);
	}
	CHECK(rmdir(root) == 0);
}
