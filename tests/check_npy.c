/*
 * check_npy.c - libst's .npy writer (st/npy.h): the files it writes,
 * byte for byte, against layouts built here by hand from the format's
 * definition (numpy/lib/format.py, version 1.0: magic, version, u16
 * header length, the dict literal padded with spaces to a '\n' at a
 * multiple of 64, then the data); and what it refuses, leaving no file.
 * testdata/npy/check_npy.py checks numpy's own np.load of stinfo's files.
 */
#define TMPDIR_NAME "check_npy"
#include "tmpdir.h"

#include <st.h>

/* The expected file: preamble, dict, spaces, '\n', data. */
static char *expected(const char *dict, const void *data, size_t n, size_t *len)
{
	size_t d = strlen(dict), head = (10 + d + 1 + 63) / 64 * 64;
	char *b = malloc(head + n);
	ck_assert_ptr_nonnull(b);
	memcpy(b, "\x93NUMPY\x01\x00", 8);
	b[8] = (char)((head - 10) & 0xff);
	b[9] = (char)((head - 10) >> 8);
	memcpy(b + 10, dict, d);
	memset(b + 10 + d, ' ', head - 10 - d - 1);
	b[head - 1] = '\n';
	memcpy(b + head, data, n);
	*len = head + n;
	return b;
}

/* Write the array with st_npy_writer in chunks of step bytes. */
static void write_npy(const char *path, st_dtype d, const uint64_t *shape, unsigned ndim,
                      const void *data, size_t n, size_t step)
{
	st_npy_writer *w;
	st_error e;
	ck_assert_int_eq(st_npy_writer_open(&w, path, d, shape, ndim, &e), ST_OK);
	for (size_t off = 0; off < n; off += step) {
		size_t k = n - off < step ? n - off : step;
		ck_assert_int_eq(st_npy_writer_write(w, (const char *)data + off, k, &e), ST_OK);
	}
	ck_assert_int_eq(st_npy_writer_finish(w, &e), ST_OK);
	st_npy_writer_free(w);
}

static void check_file(const char *path, const char *dict, const void *data, size_t n)
{
	size_t want_len, got_len;
	char *want = expected(dict, data, n, &want_len);
	char *got = read_file(path, &got_len);
	ck_assert_uint_eq(got_len, want_len);
	ck_assert_uint_eq(got_len % 64, n % 64);
	ck_assert_int_eq(memcmp(got, want, want_len), 0);
	free(got);
	free(want);
}

START_TEST(f32_2x3)
{
	tmpdir_setup();
	/* 0.0, 1.0, -2.0, 0.5, +Inf, NaN as little-endian IEEE bytes. */
	static const unsigned char data[24] = {0, 0, 0, 0,    0, 0, 0x80, 0x3f, 0, 0, 0,    0xc0,
	                                       0, 0, 0, 0x3f, 0, 0, 0x80, 0x7f, 0, 0, 0xc0, 0x7f};
	char *p = path_in("a.npy");
	write_npy(p, ST_DTYPE_F32, (const uint64_t[]){2, 3}, 2, data, sizeof data, 5);
	check_file(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data,
	           sizeof data);
	/* 10 + 60 characters of dict + '\n' < 128: the data starts at 128. */
	size_t len;
	unsigned char *got = read_file(p, &len);
	ck_assert_uint_eq(got[8] | got[9] << 8, 118);
	ck_assert_int_eq(got[127], '\n');
	free(got);
	tmpdir_teardown();
}
END_TEST

START_TEST(shapes_and_dtypes)
{
	tmpdir_setup();
	char *p = path_in("b.npy");
	/* 1-d: "(5,)", numpy's one-tuple; I16 little-endian. */
	static const unsigned char i16[10] = {1, 0, 0xff, 0xff, 0, 0x80, 0xff, 0x7f, 2, 1};
	write_npy(p, ST_DTYPE_I16, (const uint64_t[]){5}, 1, i16, sizeof i16, 10);
	check_file(p, "{'descr': '<i2', 'fortran_order': False, 'shape': (5,), }", i16, 10);
	/* 0-d: "()", one element. */
	static const unsigned char f64[8] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
	write_npy(p, ST_DTYPE_F64, NULL, 0, f64, 8, 8);
	check_file(p, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", f64, 8);
	/* An empty array and the one-byte types' '|'. */
	write_npy(p, ST_DTYPE_BOOL, (const uint64_t[]){0, 4}, 2, "", 0, 1);
	check_file(p, "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 4), }", "", 0);
	write_npy(p, ST_DTYPE_U8, (const uint64_t[]){1, 1, 2}, 3, "\x07\xfe", 2, 1);
	check_file(p, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 2), }", "\x07\xfe",
	           2);
	/* A long shape: the header grows by 64-byte steps. */
	uint64_t ones[40];
	for (int i = 0; i < 40; i++)
		ones[i] = 1;
	write_npy(p, ST_DTYPE_F16, ones, 40, "\x00\x3c", 2, 2);
	char dict[512];
	int n = snprintf(dict, sizeof dict, "{'descr': '<f2', 'fortran_order': False, 'shape': (");
	for (int i = 0; i < 40; i++)
		n += snprintf(dict + n, sizeof dict - (size_t)n, "%s1", i ? ", " : "");
	snprintf(dict + n, sizeof dict - (size_t)n, "), }");
	check_file(p, dict, "\x00\x3c", 2);
	tmpdir_teardown();
}
END_TEST

START_TEST(descr_names)
{
	ck_assert_str_eq(st_npy_descr(ST_DTYPE_C64), "<c8");
	ck_assert_str_eq(st_npy_descr(ST_DTYPE_U64), "<u8");
	ck_assert_str_eq(st_npy_descr(ST_DTYPE_I8), "|i1");
	ck_assert_ptr_null(st_npy_descr(ST_DTYPE_BF16));
	ck_assert_ptr_null(st_npy_descr(ST_DTYPE_F8_E4M3));
	ck_assert_ptr_null(st_npy_descr(ST_DTYPE_F4));
}
END_TEST

START_TEST(refusals_leave_no_file)
{
	tmpdir_setup();
	char *p = path_in("c.npy");
	st_npy_writer *w;
	st_error e;
	/* No numpy dtype. */
	ck_assert_int_eq(st_npy_writer_open(&w, p, ST_DTYPE_BF16, (const uint64_t[]){2}, 1, &e),
	                 ST_EINVAL);
	ck_assert_ptr_null(w);
	/* An array past 2^64 bytes. */
	ck_assert_int_eq(st_npy_writer_open(&w, p, ST_DTYPE_F32,
	                                    (const uint64_t[]){UINT64_MAX / 2, 3}, 2, &e),
	                 ST_EINVAL);
	/* Too much data, then too little: no file appears. */
	ck_assert_int_eq(st_npy_writer_open(&w, p, ST_DTYPE_F32, (const uint64_t[]){2}, 1, &e),
	                 ST_OK);
	ck_assert_int_eq(st_npy_writer_write(w, "12345678X", 9, &e), ST_EINVAL);
	ck_assert_int_eq(st_npy_writer_write(w, "1234", 4, &e), ST_OK);
	ck_assert_int_eq(st_npy_writer_finish(w, &e), ST_EINVAL);
	ck_assert_ptr_nonnull(strstr(e.message, "4 of the array's 8 bytes"));
	st_npy_writer_free(w);
	ck_assert_int_eq(access(p, F_OK), -1);
	/* An existing file is untouched by a failed write. */
	write_text(p, "keep");
	ck_assert_int_eq(st_npy_writer_open(&w, p, ST_DTYPE_F32, (const uint64_t[]){1}, 1, &e),
	                 ST_OK);
	st_npy_writer_free(w);
	size_t len;
	char *got = read_file(p, &len);
	ck_assert_uint_eq(len, 4);
	ck_assert_int_eq(memcmp(got, "keep", 4), 0);
	free(got);
	unlink(p);
	tmpdir_teardown();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("npy");
	TCase *tc = tcase_create("write");
	tcase_add_test(tc, f32_2x3);
	tcase_add_test(tc, shapes_and_dtypes);
	tcase_add_test(tc, descr_names);
	tcase_add_test(tc, refusals_leave_no_file);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
