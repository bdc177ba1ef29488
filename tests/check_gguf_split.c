/*
 * check_gguf_split.c - split GGUF sets (libst/gguf_split.c): llama.cpp's
 * part names, a set opened from any part against the unsplit file, and
 * the broken sets of testdata/gguf_split/ (gen_split.py: gguf-py's writer
 * made the set and checked that its parts hold exactly whole.gguf's 28
 * tensors, 10, 10 and 8).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <st.h>

#include "problems.h"

#define DIR ST_TESTDATA "/gguf_split/"

static uint64_t file_size(const char *path)
{
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	return (uint64_t)sb.st_size;
}

/* As llama.cpp's llama_split_path and llama_split_prefix (llama.cpp:544). */
START_TEST(test_names)
{
	char buf[64];
	ck_assert_uint_eq(st_gguf_split_path(buf, sizeof buf, "m/x", 0, 3), 23);
	ck_assert_str_eq(buf, "m/x-00001-of-00003.gguf");
	ck_assert_uint_eq(st_gguf_split_path(buf, sizeof buf, "x", 99998, 99999),
	                  21);
	ck_assert_str_eq(buf, "x-99999-of-99999.gguf");
	ck_assert_uint_eq(st_gguf_split_path(buf, 23, "m/x", 0, 3), 0);
	ck_assert_uint_eq(st_gguf_split_path(buf, 24, "m/x", 0, 3), 23);
	ck_assert_uint_eq(
	    st_gguf_split_prefix(buf, sizeof buf, "m/x-00002-of-00003.gguf", 1, 3),
	    3);
	ck_assert_str_eq(buf, "m/x");
	ck_assert_uint_eq(
	    st_gguf_split_prefix(buf, sizeof buf, "m/x-00002-of-00003.gguf", 0, 3),
	    0);
	ck_assert_uint_eq(
	    st_gguf_split_prefix(buf, sizeof buf, "m/x-00002-of-00003.gguf", 1, 4),
	    0);
	/* Nothing before the suffix: no prefix (llama.cpp's <=). */
	ck_assert_uint_eq(
	    st_gguf_split_prefix(buf, sizeof buf, "-00001-of-00003.gguf", 0, 3), 0);
	ck_assert_uint_eq(
	    st_gguf_split_prefix(buf, 3, "m/x-00001-of-00003.gguf", 0, 3), 0);
}
END_TEST

/* Any part opens the set: the tensors, bytes and metadata of whole.gguf. */
START_TEST(test_set_is_the_whole_file)
{
	static const char *const parts[3] = {DIR "gpt2-00001-of-00003.gguf",
	                                     DIR "gpt2-00002-of-00003.gguf",
	                                     DIR "gpt2-00003-of-00003.gguf"};
	st_error err;
	st_gguf *w;
	ck_assert_int_eq(st_gguf_open(&w, DIR "whole.gguf", &err), ST_OK);
	ck_assert_uint_eq(st_gguf_n_tensors(w), 28);
	for (int given = 0; given < 3; given++) {
		st_gguf *g;
		ck_assert_int_eq(st_gguf_open_set(&g, parts[given], &err), ST_OK);
		ck_assert_str_eq(st_gguf_path(g), parts[given]);
		ck_assert_uint_eq(st_gguf_n_parts(g), 3);
		ck_assert_uint_eq(st_gguf_n_tensors(g), 28);
		uint64_t size = 0, data = 0;
		for (size_t k = 0; k < 3; k++) {
			const st_gguf *p = st_gguf_part(g, k);
			ck_assert_str_eq(st_gguf_path(p), parts[k]);
			size += file_size(parts[k]);
			data += st_gguf_data_size(p);
		}
		ck_assert_ptr_null(st_gguf_part(g, 3));
		ck_assert_uint_eq(st_gguf_size(g), size);
		ck_assert_uint_eq(st_gguf_data_size(g), data);
		ck_assert_uint_eq(st_gguf_data_size(g), st_gguf_data_size(w));
		ck_assert_uint_eq(st_gguf_data_offset(g),
		                  st_gguf_data_offset(st_gguf_part(g, 0)));
		/* The metadata is the first part's: whole.gguf's and the keys. */
		ck_assert_uint_eq(st_gguf_n_kv(g), st_gguf_n_kv(w) + 3);
		ck_assert_int_ge(st_gguf_find_kv(g, "tokenizer.ggml.tokens"), 0);
		long no = st_gguf_find_kv(g, "split.no");
		ck_assert_int_ge(no, 0);
		ck_assert_uint_eq(st_gguf_kv_at(g, (size_t)no)->value.v.u, 0);
		/* 10, 10, 8 tensors, in part order, in whole.gguf's order. */
		size_t in[3] = {0, 0, 0};
		for (size_t i = 0; i < 28; i++) {
			const st_gguf_tensor *a = st_gguf_tensor_at(g, i);
			const st_gguf_tensor *b = st_gguf_tensor_at(w, i);
			size_t k = st_gguf_tensor_part(g, i);
			ck_assert_uint_lt(k, 3);
			in[k]++;
			ck_assert_str_eq(a->name, b->name);
			ck_assert_uint_eq(a->type, b->type);
			ck_assert_uint_eq(a->ndim, b->ndim);
			ck_assert_mem_eq(a->dims, b->dims, sizeof a->dims);
			ck_assert_uint_eq(a->n_bytes, b->n_bytes);
			ck_assert_int_eq(st_gguf_find(g, a->name), (long)i);
			ck_assert_mem_eq(st_gguf_tensor_data(g, i),
			                 st_gguf_tensor_data(w, i), (size_t)a->n_bytes);
			/* The offset counts from the part's own data section. */
			const st_gguf *p = st_gguf_part(g, k);
			long j = st_gguf_find(p, a->name);
			ck_assert_int_ge(j, 0);
			ck_assert_uint_eq(st_gguf_tensor_at(p, (size_t)j)->offset,
			                  a->offset);
		}
		ck_assert_uint_eq(in[0], 10);
		ck_assert_uint_eq(in[1], 10);
		ck_assert_uint_eq(in[2], 8);
		st_gguf_close(g);
		struct problems c = {0};
		ck_assert_int_eq(st_gguf_check_set(parts[given], collect, &c, &err), 0);
		ck_assert_int_eq(c.errors + c.warnings, 0);
	}
	/* A file that is not split is one part, itself. */
	st_gguf *g;
	ck_assert_int_eq(st_gguf_open_set(&g, DIR "whole.gguf", &err), ST_OK);
	ck_assert_uint_eq(st_gguf_n_parts(g), 1);
	ck_assert_ptr_eq(st_gguf_part(g, 0), g);
	ck_assert_ptr_null(st_gguf_part(g, 1));
	ck_assert_uint_eq(st_gguf_tensor_part(g, 27), 0);
	st_gguf_close(g);
	/* st_gguf_open still reads one part. */
	ck_assert_int_eq(st_gguf_open(&g, parts[1], &err), ST_OK);
	ck_assert_uint_eq(st_gguf_n_tensors(g), 10);
	ck_assert_uint_eq(st_gguf_n_parts(g), 1);
	st_gguf_close(g);
	st_gguf_close(w);
}
END_TEST

/* Each broken set: open fails naming the part, the check reports it. */
START_TEST(test_broken_sets)
{
	static const struct {
		const char *given, *part, *what;
		int opens;
	} cases[] = {
		{"missing/gpt2-00003-of-00003.gguf", "missing/gpt2-00002-of-00003.gguf",
		 "missing: part 2 of the 3", 0},
		{"extra/gpt2-00001-of-00003.gguf", "extra/gpt2-00001-of-00002.gguf",
		 "an extra part: its name says part 1 of 2", 1},
		{"other_set/gpt2-00003-of-00003.gguf",
		 "other_set/gpt2-00002-of-00003.gguf", "split.count is 4, but", 0},
		{"other_count/gpt2-00001-of-00003.gguf",
		 "other_count/gpt2-00003-of-00003.gguf",
		 "split.tensors.count is 7, but", 0},
		{"bad_no/gpt2-00003-of-00003.gguf", "bad_no/gpt2-00002-of-00003.gguf",
		 "split.no is 2, but its name makes it part 2 of 3", 0},
		{"dup/gpt2-00001-of-00003.gguf", "dup/gpt2-00002-of-00003.gguf",
		 "tensor 'b' is in this part and in", 0},
		{"count/gpt2-00003-of-00003.gguf", "count/gpt2-00001-of-00003.gguf",
		 "split.tensors.count is 8, but the 3 parts hold 6 tensors", 0},
		{"renamed/gpt2.gguf", "renamed/gpt2.gguf",
		 "its name does not end in -00001-of-00003.gguf", 0},
		{"nokeys/gpt2-00003-of-00003.gguf", "nokeys/gpt2-00002-of-00003.gguf",
		 "no split.count: not a part of a split set", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char given[512], want[1024];
		snprintf(given, sizeof given, DIR "%s", cases[i].given);
		snprintf(want, sizeof want, DIR "%s: ", cases[i].part);
		st_error err;
		st_gguf *g = (st_gguf *)1;
		int rc = st_gguf_open_set(&g, given, &err);
		if (cases[i].opens) {
			ck_assert_int_eq(rc, ST_OK);
			st_gguf_close(g);
		} else {
			ck_assert_msg(rc == ST_EFORMAT, "%s: %d", given, rc);
			ck_assert_ptr_null(g);
			ck_assert_msg(strstr(err.message, want) == err.message &&
			                  strstr(err.message, cases[i].what),
			              "%s: %s", given, err.message);
		}
		struct problems c = {0};
		int n = st_gguf_check_set(given, collect, &c, &err);
		ck_assert_msg(n >= 1 && n == c.errors, "%s: %d (%d)", given, n,
		              c.errors);
		ck_assert_msg(strstr(c.text, want) && strstr(c.text, cases[i].what),
		              "%s: %s", given, c.text);
	}
	/* Unreadable: ST_EIO, nothing reported. */
	st_error err;
	struct problems c = {0};
	ck_assert_int_eq(st_gguf_check_set(DIR "no-such.gguf", collect, &c, &err),
	                 ST_EIO);
	ck_assert_int_eq(c.errors + c.warnings, 0);
}
END_TEST

/* A part with only the split keys, no tensors, written by libst's writer. */
static void write_part(const char *path, unsigned no, unsigned count)
{
	st_gguf_writer *w;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_new(&w, &err), ST_OK);
	st_gguf_value v = {.type = ST_GGUF_STRING, .n = 4};
	v.v.s = "test";
	if (no == 0) /* the first part holds the metadata */
		ck_assert_int_eq(st_gguf_writer_set(w, "general.architecture", &v,
		                                    &err), ST_OK);
	v = (st_gguf_value){.type = ST_GGUF_UINT16};
	v.v.u = no;
	ck_assert_int_eq(st_gguf_writer_set(w, "split.no", &v, &err), ST_OK);
	v.v.u = count;
	ck_assert_int_eq(st_gguf_writer_set(w, "split.count", &v, &err), ST_OK);
	v = (st_gguf_value){.type = ST_GGUF_INT32};
	ck_assert_int_eq(st_gguf_writer_set(w, "split.tensors.count", &v, &err),
	                 ST_OK);
	ck_assert_int_eq(st_gguf_writer_open(w, path, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_finish(w, &err), ST_OK);
	st_gguf_writer_free(w);
}

/* Parts 1 and 4 of 5: one line for the run 2-3, one for part 5. */
START_TEST(test_missing_runs)
{
	char dir[] = "/tmp/check_gguf_split_XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char p1[256], p4[256], given[256];
	snprintf(p1, sizeof p1, "%s/m-00001-of-00005.gguf", dir);
	snprintf(p4, sizeof p4, "%s/m-00004-of-00005.gguf", dir);
	write_part(p1, 0, 5);
	write_part(p4, 3, 5);
	for (int i = 0; i < 2; i++) {
		snprintf(given, sizeof given, "%s", i ? p4 : p1);
		struct problems c = {0};
		st_error err;
		ck_assert_int_eq(st_gguf_check_set(given, collect, &c, &err), 2);
		char want[2048];
		snprintf(want, sizeof want,
		         "%s/m-00002-of-00005.gguf: missing, as are the parts after "
		         "it up to %s/m-00003-of-00005.gguf: parts 2 to 3 of the 5 "
		         "that %s's split.count names\n"
		         "%s/m-00005-of-00005.gguf: missing: part 5 of the 5 that "
		         "%s's split.count names\n", dir, dir, given, dir, given);
		ck_assert_str_eq(c.text, want);
		st_gguf *g = (st_gguf *)1;
		ck_assert_int_eq(st_gguf_open_set(&g, given, &err), ST_EFORMAT);
		ck_assert_ptr_null(g);
		snprintf(want, sizeof want,
		         "%s/m-00002-of-00005.gguf: missing: part 2 of the 5", dir);
		ck_assert_msg(strstr(err.message, want) == err.message, "%s",
		              err.message);
	}
	ck_assert_int_eq(unlink(p1), 0);
	ck_assert_int_eq(unlink(p4), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gguf_split");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_set_is_the_whole_file);
	tcase_add_test(tc, test_broken_sets);
	tcase_add_test(tc, test_missing_runs);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
