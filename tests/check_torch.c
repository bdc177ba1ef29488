/*
 * check_torch.c - PyTorch checkpoints (torch.save's zip format) read
 * without executing the pickle: every tensor of the testdata/torch .bin files equals
 * the expected safetensors file that gen_torch.py built from numpy, and
 * hostile or unsupported files are refused with a clear message.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DIR ST_TESTDATA "/torch/"

/* Every tensor of bin equals the one of the same name in expected. */
static void same_tensors(const char *bin, const char *expected, size_t n)
{
	st_file *a, *b;
	st_error err;
	ck_assert_msg(st_file_open(&a, bin, ST_OPEN_TORCH, &err) == ST_OK, "%s", err.message);
	ck_assert_int_eq(st_file_format(a), ST_FORMAT_TORCH);
	ck_assert_int_eq(st_file_open(&b, expected, 0, &err), ST_OK);
	ck_assert_uint_eq(st_file_n_tensors(a), n);
	ck_assert_uint_eq(st_file_n_tensors(b), n);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *x = st_file_tensor(b, i);
		long j = st_file_find(a, x->name, x->name_len);
		ck_assert_msg(j >= 0, "%s: tensor '%s' missing", bin, x->name);
		const st_tensor *y = st_file_tensor(a, (size_t)j);
		ck_assert_msg(y->dtype == x->dtype, "'%s': dtype %s vs %s", x->name,
		              st_dtype_name(y->dtype), st_dtype_name(x->dtype));
		ck_assert_uint_eq(y->ndim, x->ndim);
		for (unsigned d = 0; d < x->ndim; d++)
			ck_assert_uint_eq(y->shape[d], x->shape[d]);
		ck_assert_uint_eq(y->n_bytes, x->n_bytes);
		const void *p, *q;
		ck_assert_int_eq(st_file_data(a, (size_t)j, &p, &err), ST_OK);
		ck_assert_int_eq(st_file_data(b, i, &q, &err), ST_OK);
		ck_assert_msg(memcmp(p, q, x->n_bytes) == 0, "'%s': data differs", x->name);
		/* pread gives the same bytes as the mapping. */
		unsigned char *buf = malloc(x->n_bytes + 1);
		ck_assert_int_eq(st_file_read(a, (size_t)j, 0, buf, x->n_bytes, &err), ST_OK);
		ck_assert(memcmp(buf, q, x->n_bytes) == 0);
		free(buf);
	}
	st_file_close(a);
	st_file_close(b);
}

START_TEST(test_state_dict)
{
	same_tensors(DIR "state.bin", DIR "state.expected.safetensors", 16);
}
END_TEST

START_TEST(test_nested)
{
	same_tensors(DIR "nested.bin", DIR "nested.expected.safetensors", 2);
}
END_TEST

START_TEST(test_checkpoint)
{
	st_checkpoint *c;
	st_error err;
	/* A directory holding only pytorch_model.bin opens with the flag. */
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "snapshot", ST_OPEN_TORCH, &err), ST_OK);
	ck_assert_uint_eq(st_checkpoint_n_tensors(c), 1);
	float v[3];
	ck_assert_int_eq(st_checkpoint_read(c, 0, 0, v, 12, &err), ST_OK);
	ck_assert(v[0] == 1 && v[2] == 1);
	st_checkpoint_close(c);
	/* And not without it. */
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "snapshot", 0, &err), ST_ENOTFOUND);
	ck_assert_int_eq(st_checkpoint_open(&c, DIR "state.bin", 0, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "zip archive") != NULL, "%s", err.message);
}
END_TEST

static void refused(const char *name, const char *needle)
{
	st_file *f = NULL;
	st_error err = {0};
	char path[512];
	snprintf(path, sizeof path, DIR "%s", name);
	ck_assert_int_eq(st_file_open(&f, path, ST_OPEN_TORCH, &err), ST_EFORMAT);
	ck_assert_ptr_eq(f, NULL);
	ck_assert_msg(strstr(err.message, needle) != NULL, "%s: '%s' lacks '%s'",
	              name, err.message, needle);
	ck_assert(strstr(err.message, name) != NULL);
}

START_TEST(test_refused)
{
	refused("evil.bin", "refusing to load 'posix.system'");
	refused("legacy.bin", "legacy (pre-1.6, non-zip) PyTorch checkpoint");
	refused("noncontig.bin", "non-contiguous");
	refused("truncated.bin", "end-of-central-directory");
}
END_TEST

/* Every truncation and many corruptions of a real file: refused or read,
 * never a crash (run under ASan in CI). */
START_TEST(test_corruption)
{
	FILE *fp = fopen(DIR "state.bin", "rb");
	ck_assert(fp != NULL);
	unsigned char buf[8192];
	size_t n = fread(buf, 1, sizeof buf, fp);
	fclose(fp);
	for (size_t cut = 0; cut < n; cut += 7) {
		st_file *f = NULL;
		st_error err;
		if (st_file_open_memory(&f, buf, cut, "t", ST_OPEN_TORCH, &err) == ST_OK)
			st_file_close(f);
	}
	unsigned char *copy = malloc(n);
	for (size_t i = 0; i < n; i++) {
		memcpy(copy, buf, n);
		copy[i] ^= 0x5a;
		st_file *f = NULL;
		st_error err;
		if (st_file_open_memory(&f, copy, n, "c", ST_OPEN_TORCH, &err) == ST_OK) {
			for (size_t k = 0; k < st_file_n_tensors(f); k++) {
				const void *p;
				ck_assert_int_eq(st_file_data(f, k, &p, &err), ST_OK);
			}
			st_file_close(f);
		}
	}
	free(copy);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("torch");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_state_dict);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_checkpoint);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_corruption);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
