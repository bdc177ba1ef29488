/*
 * check_snapshot.c - unit tests of the shard planner, the config.json
 * editor, the atomic file and the snapshot writer (libst/snapshot.c,
 * libst/config.c, libst/atomic.c).
 *
 * Expected plans are worked out by hand from huggingface_hub's
 * split_state_dict_into_shards_factory (each case says how); expected
 * config texts are written out by hand. The snapshot tests look at the
 * directories with plain system calls.
 */
#include <st.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TMPDIR_NAME "check_snapshot"
#include "tmpdir.h"

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
	char *buf = calloc(1, 1 << 16);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* Entries of dir whose name starts with prefix. */
static int count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

/* ---- the planner ------------------------------------------------------------ */

static st_tensor T(const char *name, st_dtype dtype, uint64_t bytes)
{
	st_tensor t;
	memset(&t, 0, sizeof t);
	t.name = name;
	t.name_len = strlen(name);
	t.dtype = dtype;
	t.n_bytes = bytes;
	return t;
}

START_TEST(test_plan_fills_greedily)
{
	/* a, b, c of 4 bytes, limit 8: a and b fill shard 0, c would pass 8
	 * and starts shard 1. Given out of order: the plan walks by name. */
	st_tensor t[] = {T("c", ST_DTYPE_F32, 4), T("a", ST_DTYPE_F32, 4),
	                 T("b", ST_DTYPE_F32, 4)};
	unsigned shard[3], n;
	ck_assert_int_eq(st_shard_plan(t, 3, 8, shard, &n, NULL), ST_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(shard[0], 1);
	ck_assert_uint_eq(shard[1], 0);
	ck_assert_uint_eq(shard[2], 0);
}
END_TEST

START_TEST(test_plan_oversize_tensor_own_shard_first)
{
	/* a 4, b 20, c 4, limit 8: a opens the current shard; b is larger
	 * than the limit and is appended at once as shard 0; c fits beside a;
	 * the current shard {a, c} is appended last, as shard 1. */
	st_tensor t[] = {T("a", ST_DTYPE_F32, 4), T("b", ST_DTYPE_F32, 20),
	                 T("c", ST_DTYPE_F32, 4)};
	unsigned shard[3], n;
	ck_assert_int_eq(st_shard_plan(t, 3, 8, shard, &n, NULL), ST_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(shard[0], 1);
	ck_assert_uint_eq(shard[1], 0);
	ck_assert_uint_eq(shard[2], 1);
}
END_TEST

START_TEST(test_plan_exact_fit_and_dtype_order)
{
	/* Canonical order puts F64 before BF16 (descending rank): z, then a.
	 * Each is exactly the limit (not larger), so each fills a shard. */
	st_tensor t[] = {T("a", ST_DTYPE_BF16, 8), T("z", ST_DTYPE_F64, 8)};
	unsigned shard[2], n;
	ck_assert_int_eq(st_shard_plan(t, 2, 8, shard, &n, NULL), ST_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(shard[1], 0);
	ck_assert_uint_eq(shard[0], 1);
}
END_TEST

START_TEST(test_plan_no_limit_and_empty)
{
	st_tensor t[] = {T("a", ST_DTYPE_F32, 40), T("b", ST_DTYPE_F32, 40)};
	unsigned shard[2] = {7, 7}, n = 0;
	ck_assert_int_eq(st_shard_plan(t, 2, 0, shard, &n, NULL), ST_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(shard[0], 0);
	ck_assert_uint_eq(shard[1], 0);
	ck_assert_int_eq(st_shard_plan(t, 0, 8, shard, &n, NULL), ST_OK);
	ck_assert_uint_eq(n, 1);
}
END_TEST

START_TEST(test_file_names)
{
	char buf[64];
	st_snapshot_file_name(buf, sizeof buf, 0, 1);
	ck_assert_str_eq(buf, "model.safetensors");
	st_snapshot_file_name(buf, sizeof buf, 1, 3);
	ck_assert_str_eq(buf, "model-00002-of-00003.safetensors");
}
END_TEST

START_TEST(test_canonical_order)
{
	/* Descending dtype rank (U8 < F16 < F32), then name bytes. */
	st_tensor t[] = {T("b", ST_DTYPE_U8, 1), T("a", ST_DTYPE_F32, 4),
	                 T("c", ST_DTYPE_F16, 2), T("b", ST_DTYPE_F32, 4)};
	size_t order[4];
	ck_assert_int_eq(st_canonical_order(t, 4, order, NULL), ST_OK);
	ck_assert_uint_eq(order[0], 1);
	ck_assert_uint_eq(order[1], 3);
	ck_assert_uint_eq(order[2], 2);
	ck_assert_uint_eq(order[3], 0);
}
END_TEST

/* ---- config.json ------------------------------------------------------------ */

static void expect_config(const char *in, const char *want)
{
	char *out;
	size_t len;
	ck_assert_int_eq(st_config_set_dtype(in, strlen(in), "bfloat16", &out, &len, NULL),
	                 ST_OK);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert_msg(memcmp(out, want, len) == 0, "got %.*s", (int)len, out);
	free(out);
}

START_TEST(test_config_replaces_keeping_bytes)
{
	expect_config("{\"a\": 1.50, \"torch_dtype\": \"float32\"}",
	              "{\"a\": 1.50, \"torch_dtype\": \"bfloat16\"}");
	/* Nested torch_dtype (string or null) and a top-level "dtype". */
	expect_config("{\"text_config\": {\"torch_dtype\": null}, \"dtype\": \"float32\"}",
	              "{\"text_config\": {\"torch_dtype\": \"bfloat16\"}, \"dtype\": \"bfloat16\"}");
	/* A nested "dtype" is something else and stays. */
	expect_config("{\"q\": {\"dtype\": \"int8\"}, \"torch_dtype\": \"float16\"}",
	              "{\"q\": {\"dtype\": \"int8\"}, \"torch_dtype\": \"bfloat16\"}");
}
END_TEST

START_TEST(test_config_adds_formatted_like_the_rest)
{
	expect_config("{\n  \"a\": 1,\n  \"b\": [2, 3]\n}\n",
	              "{\n  \"a\": 1,\n  \"b\": [2, 3],\n  \"torch_dtype\": \"bfloat16\"\n}\n");
	expect_config("{\n  \"a\": 1\n}", "{\n  \"a\": 1,\n  \"torch_dtype\": \"bfloat16\"\n}");
	expect_config("{}", "{\"torch_dtype\": \"bfloat16\"}");
}
END_TEST

START_TEST(test_config_not_an_object)
{
	static const char *const bad[] = {"[1]", "{\"a\": 1} x", "{\"a\": }", "", "{\"a\": \"\x01\"}"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *out = (char *)1;
		size_t len = 9;
		st_error err;
		ck_assert_int_eq(st_config_set_dtype(bad[i], strlen(bad[i]), "float16", &out,
		                                     &len, &err), ST_EFORMAT);
		ck_assert_ptr_null(out);
		ck_assert_ptr_nonnull(strstr(err.message, "not a JSON object"));
	}
	ck_assert_str_eq(st_torch_dtype_name(ST_DTYPE_BF16), "bfloat16");
	ck_assert_ptr_null(st_torch_dtype_name(ST_DTYPE_I8));
}
END_TEST

/* ---- the atomic file ---------------------------------------------------------- */

START_TEST(test_atomic_commit_replaces_keeping_mode)
{
	char p[512];
	snprintf(p, sizeof p, "%s", path_in("f.bin"));
	write_text(p, "old");
	ck_assert_int_eq(chmod(p, 0604), 0);
	st_atomic *a;
	ck_assert_int_eq(st_atomic_open(&a, p, NULL), ST_OK);
	const char *t = st_atomic_temp_path(a);
	char want[64];
	snprintf(want, sizeof want, ".f.bin.tmp-%ld-", (long)getpid());
	ck_assert_ptr_nonnull(strstr(t, want));
	ck_assert_int_eq(st_atomic_write(a, "new!", 4, NULL), ST_OK);
	st_atomic_writeback(a);
	char *now = read_text(p);
	ck_assert_str_eq(now, "old");
	free(now);
	ck_assert_int_eq(st_atomic_commit(a, NULL), ST_OK);
	ck_assert_int_eq(st_atomic_commit(a, NULL), ST_ESTATE);
	ck_assert_ptr_null(st_atomic_temp_path(a));
	st_atomic_close(a);
	now = read_text(p);
	ck_assert_str_eq(now, "new!");
	free(now);
	struct stat st;
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0604);
	ck_assert_int_eq(count_prefix(tmp, ".f.bin.tmp-"), 0);
}
END_TEST

START_TEST(test_atomic_close_before_commit_keeps_target)
{
	char p[512];
	snprintf(p, sizeof p, "%s", path_in("g.bin"));
	write_text(p, "old");
	st_atomic *a;
	ck_assert_int_eq(st_atomic_open(&a, p, NULL), ST_OK);
	ck_assert_int_eq(st_atomic_write(a, "x", 1, NULL), ST_OK);
	ck_assert_int_eq(count_prefix(tmp, ".g.bin.tmp-"), 1);
	st_atomic_close(a);
	ck_assert_int_eq(count_prefix(tmp, ".g.bin.tmp-"), 0);
	char *now = read_text(p);
	ck_assert_str_eq(now, "old");
	free(now);
	st_error err;
	ck_assert_int_eq(st_atomic_open(&a, tmp, &err), ST_EIO);
	ck_assert_int_eq(st_atomic_open(&a, "", &err), ST_EINVAL);
}
END_TEST

/* ---- the snapshot writer --------------------------------------------------------- */

/* Write file name of snapshot s: one U8 tensor "t" holding bytes. */
static void put_shard(st_snapshot *s, const char *name, const char *bytes)
{
	st_writer *w;
	uint64_t shape = strlen(bytes);
	ck_assert_int_eq(st_writer_new(&w, NULL), ST_OK);
	ck_assert_int_eq(st_writer_add(w, "t", 1, ST_DTYPE_U8, 1, &shape, NULL), ST_OK);
	ck_assert_int_eq(st_snapshot_open_writer(s, w, name, NULL), ST_OK);
	ck_assert_int_eq(st_writer_write(w, bytes, shape, NULL), ST_OK);
	ck_assert_int_eq(st_writer_finish(w, NULL), ST_OK);
	st_writer_free(w);
}

START_TEST(test_snapshot_commit_creates)
{
	char out[512];
	snprintf(out, sizeof out, "%s", path_in("out"));
	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, out, 0, NULL), ST_OK);
	ck_assert_int_eq(count_prefix(tmp, ".out.tmp-"), 1);
	ck_assert(!exists(out));
	put_shard(s, "model.safetensors", "abc");
	ck_assert_int_eq(st_snapshot_add_file(s, "notes.txt", "hi", 2, 0644, NULL), ST_OK);
	ck_assert_int_eq(st_snapshot_add_file(s, "../x", "hi", 2, 0644, NULL), ST_EINVAL);
	ck_assert(!exists(out));
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_OK);
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_ESTATE);
	st_snapshot_close(s);
	ck_assert_int_eq(count_prefix(tmp, ".out.tmp-"), 0);
	char *t = read_text(path_in("out/notes.txt"));
	ck_assert_str_eq(t, "hi");
	free(t);
	st_file *f;
	ck_assert_int_eq(st_file_open(&f, path_in("out/model.safetensors"), 0, NULL), ST_OK);
	char got[3];
	ck_assert_int_eq(st_file_read(f, 0, 0, got, 3, NULL), ST_OK);
	ck_assert_int_eq(memcmp(got, "abc", 3), 0);
	st_file_close(f);
}
END_TEST

START_TEST(test_snapshot_free_before_commit_leaves_nothing)
{
	char out[512];
	snprintf(out, sizeof out, "%s", path_in("gone"));
	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, out, 0, NULL), ST_OK);
	put_shard(s, "model.safetensors", "abc");
	st_snapshot_close(s);
	ck_assert(!exists(out));
	ck_assert_int_eq(count_prefix(tmp, ".gone"), 0);
}
END_TEST

START_TEST(test_snapshot_existing_untouched_until_commit)
{
	char out[512];
	snprintf(out, sizeof out, "%s", path_in("old"));
	ck_assert_int_eq(mkdir(out, 0750), 0);
	write_text(path_in("old/notes.txt"), "keep me");
	write_text(path_in("old/model-00001-of-00002.safetensors"), "stale layout");
	st_snapshot *s;
	st_error err;
	ck_assert_int_eq(st_snapshot_open(&s, out, 0, &err), ST_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "already exists"));
	ck_assert_int_eq(st_snapshot_open(&s, out, ST_SNAPSHOT_REPLACE, NULL), ST_OK);
	put_shard(s, "model.safetensors", "new");
	ck_assert_int_eq(st_snapshot_keep_old(s, NULL, NULL, NULL, NULL), ST_OK);
	/* Still the old directory. */
	ck_assert(!exists(path_in("old/model.safetensors")));
	ck_assert(exists(path_in("old/model-00001-of-00002.safetensors")));
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_OK);
	st_snapshot_close(s);
	ck_assert(exists(path_in("old/model.safetensors")));
	ck_assert(!exists(path_in("old/model-00001-of-00002.safetensors")));
	char *t = read_text(path_in("old/notes.txt"));
	ck_assert_str_eq(t, "keep me");
	free(t);
	struct stat st;
	ck_assert_int_eq(stat(out, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
	ck_assert_int_eq(count_prefix(tmp, ".old.tmp-"), 0);
}
END_TEST

static int n_notes;
static void count_note(void *ctx, int severity, const char *msg)
{
	(void)ctx;
	(void)msg;
	n_notes += severity == ST_PROBLEM_NOTE;
}

START_TEST(test_snapshot_copy_dir)
{
	char in[512];
	snprintf(in, sizeof in, "%s", path_in("in"));
	ck_assert_int_eq(mkdir(in, 0755), 0);
	ck_assert_int_eq(mkdir(path_in("in/sub"), 0755), 0);
	ck_assert_int_eq(mkdir(path_in("in/.git"), 0755), 0);
	write_text(path_in("in/config.json"), "{\"torch_dtype\": \"float32\"}");
	write_text(path_in("in/sub/tokenizer.json"), "{}");
	write_text(path_in("in/.git/HEAD"), "x");
	write_text(path_in("in/pytorch_model.bin"), "weights");
	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, path_in("copy"), 0, NULL), ST_OK);
	n_notes = 0;
	ck_assert_int_eq(st_snapshot_copy_dir(s, in, NULL, "bfloat16", count_note, NULL, NULL),
	                 ST_OK);
	ck_assert_int_eq(n_notes, 4); /* config, sub/tokenizer, .git, the .bin */
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_OK);
	st_snapshot_close(s);
	char *t = read_text(path_in("copy/config.json"));
	ck_assert_str_eq(t, "{\"torch_dtype\": \"bfloat16\"}");
	free(t);
	ck_assert(exists(path_in("copy/sub/tokenizer.json")));
	ck_assert(!exists(path_in("copy/.git")));
	ck_assert(!exists(path_in("copy/pytorch_model.bin")));
}
END_TEST

/* A config.json the caller added first is the new directory's: IN's is
 * neither read nor copied over it. */
START_TEST(test_copy_dir_keeps_a_file_added_before)
{
	char in[512];
	snprintf(in, sizeof in, "%s", path_in("in"));
	ck_assert_int_eq(mkdir(in, 0755), 0);
	write_text(path_in("in/config.json"), "{\"torch_dtype\": \"float32\"}");
	ck_assert_int_eq(chmod(path_in("in/config.json"), 0), 0); /* not to be opened */
	write_text(path_in("in/tokenizer.json"), "{}");
	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, path_in("copy"), 0, NULL), ST_OK);
	ck_assert_int_eq(st_snapshot_add_file(s, "config.json", "{\"given\": 1}", 13, 0644, NULL),
	                 ST_OK);
	n_notes = 0;
	ck_assert_int_eq(st_snapshot_copy_dir(s, in, NULL, "bfloat16", count_note, NULL, NULL),
	                 ST_OK);
	ck_assert_int_eq(n_notes, 2); /* config.json not copied, tokenizer copied */
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_OK);
	st_snapshot_close(s);
	char *t = read_text(path_in("copy/config.json"));
	ck_assert_str_eq(t, "{\"given\": 1}");
	free(t);
	ck_assert(exists(path_in("copy/tokenizer.json")));
}
END_TEST

static int n_warnings;
static void count_warning(void *ctx, int severity, const char *msg)
{
	(void)ctx;
	if (severity == ST_PROBLEM_WARNING) {
		n_warnings++;
		ck_assert_ptr_nonnull(strstr(msg, "outside"));
	}
}

START_TEST(test_copy_dir_leaves_out_links_outside_in)
{
	ck_assert_int_eq(mkdir(path_in("secret"), 0755), 0);
	ck_assert_int_eq(mkdir(path_in("in"), 0755), 0);
	ck_assert_int_eq(mkdir(path_in("in/sub"), 0755), 0);
	write_text(path_in("secret/key"), "private");
	write_text(path_in("in/sub/a.txt"), "inside");
	ck_assert_int_eq(symlink("../secret/key", path_in("in/key")), 0);
	ck_assert_int_eq(symlink("../secret", path_in("in/dir")), 0);
	ck_assert_int_eq(symlink("/", path_in("in/root")), 0);
	ck_assert_int_eq(symlink("sub/a.txt", path_in("in/b.txt")), 0);
	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, path_in("out"), 0, NULL), ST_OK);
	n_warnings = 0;
	ck_assert_int_eq(st_snapshot_copy_dir(s, path_in("in"), NULL, NULL, count_warning,
	                                      NULL, NULL),
	                 ST_OK);
	ck_assert_int_eq(n_warnings, 3);
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_OK);
	st_snapshot_close(s);
	ck_assert(!exists(path_in("out/key")));
	ck_assert(!exists(path_in("out/dir")));
	ck_assert(!exists(path_in("out/root")));
	char *t = read_text(path_in("out/b.txt"));
	ck_assert_str_eq(t, "inside");
	free(t);
}
END_TEST

START_TEST(test_copy_dir_follows_cache_links_into_blobs)
{
	const char *repo = "hub/models--o--n";
	char p[128];
	ck_assert_int_eq(mkdir(path_in("hub"), 0755), 0);
	ck_assert_int_eq(mkdir(path_in(repo), 0755), 0);
	snprintf(p, sizeof p, "%s/blobs", repo);
	ck_assert_int_eq(mkdir(path_in(p), 0755), 0);
	snprintf(p, sizeof p, "%s/snapshots", repo);
	ck_assert_int_eq(mkdir(path_in(p), 0755), 0);
	snprintf(p, sizeof p, "%s/snapshots/rev", repo);
	ck_assert_int_eq(mkdir(path_in(p), 0755), 0);
	snprintf(p, sizeof p, "%s/blobs/h1", repo);
	write_text(path_in(p), "{}");
	snprintf(p, sizeof p, "%s/snapshots/rev/tokenizer.json", repo);
	ck_assert_int_eq(symlink("../../blobs/h1", path_in(p)), 0);
	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, path_in("out"), 0, NULL), ST_OK);
	n_warnings = 0;
	snprintf(p, sizeof p, "%s/snapshots/rev", repo);
	ck_assert_int_eq(st_snapshot_copy_dir(s, path_in(p), NULL, NULL, count_warning,
	                                      NULL, NULL),
	                 ST_OK);
	ck_assert_int_eq(n_warnings, 0);
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_OK);
	st_snapshot_close(s);
	char *t = read_text(path_in("out/tokenizer.json"));
	ck_assert_str_eq(t, "{}");
	free(t);
}
END_TEST

/* A child that starts a snapshot and an atomic file of out, then dies by
 * SIGKILL before it can clean up. Returns its pid. */
/* Leftovers of a killed writer in IN are not copied, with a note; a live
 * writer's temporary is not a leftover. */
START_TEST(test_copy_dir_skips_leftovers_of_a_gone_writer)
{
	char in[512], dead[256], live[256];
	snprintf(in, sizeof in, "%s", path_in("in"));
	ck_assert_int_eq(mkdir(in, 0755), 0);
	write_text(path_in("in/tokenizer.json"), "{}");
	snprintf(dead, sizeof dead, "in/.tokenizer.json.tmp-%d-AbC123", (int)gone_pid());
	snprintf(live, sizeof live, "in/.vocab.txt.tmp-%d-AbC123", (int)getpid());
	write_text(path_in(dead), "half");
	write_text(path_in(live), "busy");
	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, path_in("copy"), 0, NULL), ST_OK);
	n_notes = 0;
	ck_assert_int_eq(st_snapshot_copy_dir(s, in, NULL, NULL, count_note, NULL, NULL), ST_OK);
	ck_assert_int_eq(n_notes, 3); /* tokenizer, the live one copied; the leftover not */
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_OK);
	st_snapshot_close(s);
	ck_assert(exists(path_in("copy/tokenizer.json")));
	ck_assert_int_eq(count_prefix(path_in("copy"), ".tokenizer.json.tmp-"), 0);
	ck_assert_int_eq(count_prefix(path_in("copy"), ".vocab.txt.tmp-"), 1);
}
END_TEST

/* Leftovers of a killed writer in the old OUT are not carried over. */
START_TEST(test_keep_old_drops_leftovers_of_a_gone_writer)
{
	char out[512], dead[256];
	snprintf(out, sizeof out, "%s", path_in("old"));
	ck_assert_int_eq(mkdir(out, 0755), 0);
	write_text(path_in("old/notes.txt"), "keep me");
	snprintf(dead, sizeof dead, "old/.notes.txt.tmp-%d-xYz789", (int)gone_pid());
	write_text(path_in(dead), "half");
	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, out, ST_SNAPSHOT_REPLACE, NULL), ST_OK);
	put_shard(s, "model.safetensors", "new");
	n_notes = 0;
	ck_assert_int_eq(st_snapshot_keep_old(s, NULL, count_note, NULL, NULL), ST_OK);
	ck_assert_int_eq(n_notes, 2); /* kept notes.txt, not the leftover */
	ck_assert_int_eq(st_snapshot_commit(s, NULL), ST_OK);
	st_snapshot_close(s);
	ck_assert(exists(path_in("old/notes.txt")));
	ck_assert_int_eq(count_prefix(out, ".notes.txt.tmp-"), 0);
}
END_TEST

static pid_t killed_writer(const char *out, const char *file)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		st_snapshot *s;
		st_atomic *a;
		if (st_snapshot_open(&s, out, ST_SNAPSHOT_REPLACE, NULL) != ST_OK ||
		    st_atomic_open(&a, file, NULL) != ST_OK)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	return pid;
}

START_TEST(test_stale_temporaries_removed_after_kill)
{
	char out[512], file[512];
	snprintf(out, sizeof out, "%s", path_in("snap"));
	snprintf(file, sizeof file, "%s", path_in("one.safetensors"));
	pid_t dead = killed_writer(out, file);
	char prefix[64];
	snprintf(prefix, sizeof prefix, ".snap.tmp-%ld-", (long)dead);
	ck_assert_int_eq(count_prefix(tmp, prefix), 1);
	snprintf(prefix, sizeof prefix, ".one.safetensors.tmp-%ld-", (long)dead);
	ck_assert_int_eq(count_prefix(tmp, prefix), 1);
	/* A temporary of a live process (this one) stays. */
	char live[128];
	snprintf(live, sizeof live, "%s/.snap.tmp-%ld-abcdef", tmp, (long)getpid());
	ck_assert_int_eq(mkdir(live, 0700), 0);

	st_snapshot *s;
	ck_assert_int_eq(st_snapshot_open(&s, out, 0, NULL), ST_OK);
	snprintf(prefix, sizeof prefix, ".snap.tmp-%ld-", (long)dead);
	ck_assert_int_eq(count_prefix(tmp, prefix), 0);
	ck_assert(exists(live));
	st_snapshot_close(s);
	st_atomic *a;
	ck_assert_int_eq(st_atomic_open(&a, file, NULL), ST_OK);
	snprintf(prefix, sizeof prefix, ".one.safetensors.tmp-%ld-", (long)dead);
	ck_assert_int_eq(count_prefix(tmp, prefix), 0);
	st_atomic_close(a);
	rmdir(live);
}
END_TEST

static Suite *snapshot_suite(void)
{
	Suite *s = suite_create("snapshot");
	TCase *tc = tcase_create("plan");
	tcase_add_test(tc, test_plan_fills_greedily);
	tcase_add_test(tc, test_plan_oversize_tensor_own_shard_first);
	tcase_add_test(tc, test_plan_exact_fit_and_dtype_order);
	tcase_add_test(tc, test_plan_no_limit_and_empty);
	tcase_add_test(tc, test_file_names);
	tcase_add_test(tc, test_canonical_order);
	suite_add_tcase(s, tc);

	tc = tcase_create("config");
	tcase_add_test(tc, test_config_replaces_keeping_bytes);
	tcase_add_test(tc, test_config_adds_formatted_like_the_rest);
	tcase_add_test(tc, test_config_not_an_object);
	suite_add_tcase(s, tc);

	tc = tcase_create("atomic");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_atomic_commit_replaces_keeping_mode);
	tcase_add_test(tc, test_atomic_close_before_commit_keeps_target);
	suite_add_tcase(s, tc);

	tc = tcase_create("snapshot");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_snapshot_commit_creates);
	tcase_add_test(tc, test_snapshot_free_before_commit_leaves_nothing);
	tcase_add_test(tc, test_snapshot_existing_untouched_until_commit);
	tcase_add_test(tc, test_snapshot_copy_dir);
	tcase_add_test(tc, test_copy_dir_skips_leftovers_of_a_gone_writer);
	tcase_add_test(tc, test_keep_old_drops_leftovers_of_a_gone_writer);
	tcase_add_test(tc, test_copy_dir_keeps_a_file_added_before);
	tcase_add_test(tc, test_copy_dir_leaves_out_links_outside_in);
	tcase_add_test(tc, test_copy_dir_follows_cache_links_into_blobs);
	tcase_add_test(tc, test_stale_temporaries_removed_after_kill);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(snapshot_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
