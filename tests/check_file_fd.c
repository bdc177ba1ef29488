/*
 * check_file_fd.c - st_file_open_fd, st_check_fd and st_checkpoint_from_file
 * (libst/file.c, index.c): a safetensors file read from a pipe (a writer
 * thread feeds it) and from a regular descriptor. The files are built here
 * byte by byte, so the expected tensors and data bytes do not come from
 * libst; an error on a stream is compared with st_file_open's on the same
 * bytes as a file, which is the contract (the same checks, the same words,
 * only the name differs).
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <st.h>

#define TMPDIR_NAME "check_file_fd"
#include "tmpdir.h"

/* A file: 8-byte LE length, header, data. */
struct blob {
	unsigned char *p;
	size_t n;
};

static unsigned char data_byte(size_t j)
{
	return (unsigned char)((j * 7 + j / 253) & 0xff);
}

/*
 * Tensors "a" (F32 [2], 8 bytes) and "big" (U8 [n_big]), data bytes
 * data_byte(j); extra bytes appended after the data, cut bytes removed at
 * the end.
 */
static struct blob make_file(size_t n_big, size_t extra, size_t cut)
{
	char hdr[256];
	int h = snprintf(hdr, sizeof hdr,
	                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
	                 "\"big\":{\"dtype\":\"U8\",\"shape\":[%zu],\"data_offsets\":[8,%zu]}}",
	                 n_big, 8 + n_big);
	size_t data = 8 + n_big;
	struct blob b;
	b.n = 8 + (size_t)h + data + extra;
	b.p = malloc(b.n);
	ck_assert_ptr_nonnull(b.p);
	for (int i = 0; i < 8; i++)
		b.p[i] = (unsigned char)((uint64_t)h >> (8 * i));
	memcpy(b.p + 8, hdr, (size_t)h);
	for (size_t j = 0; j < data + extra; j++)
		b.p[8 + (size_t)h + j] = data_byte(j);
	b.n -= cut;
	return b;
}

struct feed {
	int fd;
	const unsigned char *p;
	size_t n;
};

/* Write the bytes in uneven pieces, then close: what a pipe sees of cat. */
static void *writer(void *arg)
{
	struct feed *f = arg;
	size_t off = 0, piece = 1;
	while (off < f->n) {
		size_t k = f->n - off < piece ? f->n - off : piece;
		ssize_t w = write(f->fd, f->p + off, k);
		if (w <= 0)
			break; /* the reader stopped (EPIPE): fine */
		off += (size_t)w;
		piece = piece * 3 + 1;
		if (piece > 200000)
			piece = 7;
	}
	close(f->fd);
	return NULL;
}

struct piped {
	pthread_t th;
	struct feed f;
	int rd;
};

static void pipe_start(struct piped *pp, const struct blob *b)
{
	int fds[2];
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(pipe(fds), 0);
	pp->rd = fds[0];
	pp->f = (struct feed){fds[1], b->p, b->n};
	ck_assert_int_eq(pthread_create(&pp->th, NULL, writer, &pp->f), 0);
}

static void pipe_end(struct piped *pp)
{
	close(pp->rd); /* first: a writer blocked on a reader that stopped ends */
	pthread_join(pp->th, NULL);
}

/* Open b from a pipe; the open's result. */
static int open_piped(st_file **f, const struct blob *b, unsigned flags, int spool, st_error *err)
{
	struct piped pp;
	pipe_start(&pp, b);
	int rc = st_file_open_fd(f, pp.rd, NULL, flags, spool, err);
	pipe_end(&pp);
	return rc;
}

/* b written to a file, opened read-only: a regular descriptor. */
static int file_fd(const struct blob *b, char *path, size_t size)
{
	snprintf(path, size, "%s", path_in("x.safetensors"));
	FILE *fp = fopen(path, "wb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(b->p, 1, b->n, fp), b->n);
	fclose(fp);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* An empty, unlinked read-write temporary file. */
static int spool_fd(void)
{
	FILE *t = tmpfile();
	ck_assert_ptr_nonnull(t);
	int fd = dup(fileno(t));
	fclose(t);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static void check_table(st_file *f, size_t n_big, size_t file_size)
{
	ck_assert_uint_eq(st_file_n_tensors(f), 2);
	const st_tensor *a = st_file_tensor(f, 0), *big = st_file_tensor(f, 1);
	ck_assert_str_eq(a->name, "a");
	ck_assert_int_eq(a->dtype, ST_DTYPE_F32);
	ck_assert_uint_eq(a->n_bytes, 8);
	ck_assert_str_eq(big->name, "big");
	ck_assert_uint_eq(big->n_elements, n_big);
	ck_assert_uint_eq(st_file_size(f), file_size);
	ck_assert_uint_eq(st_file_data_size(f), 8 + n_big);
}

/* Every data byte, through st_file_read (uneven pieces) and st_file_data. */
static void check_data(st_file *f, size_t n_big)
{
	st_error err;
	unsigned char buf[4096];
	for (size_t off = 0; off < n_big;) {
		size_t k = n_big - off < 3001 ? n_big - off : 3001;
		ck_assert_int_eq(st_file_read(f, 1, off, buf, k, &err), ST_OK);
		for (size_t j = 0; j < k; j++)
			ck_assert_uint_eq(buf[j], data_byte(8 + off + j));
		off += k;
	}
	const void *p;
	ck_assert_int_eq(st_file_data(f, 0, &p, &err), ST_OK);
	for (size_t j = 0; j < 8; j++)
		ck_assert_uint_eq(((const unsigned char *)p)[j], data_byte(j));
}

/* 3 MB of data: more than a pipe holds, more than one 1 MiB chunk. */
#define BIG ((size_t)3 << 20)

START_TEST(pipe_header_only)
{
	struct blob b = make_file(BIG, 0, 0);
	st_file *f;
	st_error err;
	ck_assert_int_eq(open_piped(&f, &b, ST_OPEN_HEADER_ONLY, -1, &err), ST_OK);
	check_table(f, BIG, b.n);
	ck_assert_str_eq(st_file_path(f), "<stdin>");
	const void *p;
	ck_assert_int_eq(st_file_data(f, 0, &p, &err), ST_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "<stdin>: tensor 'a'"));
	unsigned char c;
	ck_assert_int_eq(st_file_read(f, 1, 0, &c, 1, &err), ST_EINVAL);
	ck_assert_int_eq(st_file_read(f, 1, 0, &c, 0, &err), ST_OK);
	st_file_close(f);
	free(b.p);
}
END_TEST

START_TEST(pipe_spooled)
{
	struct blob b = make_file(BIG, 0, 0);
	st_file *f;
	st_error err;
	int spool = spool_fd();
	ck_assert_int_eq(open_piped(&f, &b, 0, spool, &err), ST_OK);
	close(spool); /* the handle keeps its own */
	check_table(f, BIG, b.n);
	check_data(f, BIG);
	st_file_close(f);
	free(b.p);
}
END_TEST

START_TEST(pipe_small_header_in_first_bytes)
{
	/* Header and data within the first 512 bytes read. */
	struct blob b = make_file(40, 0, 0);
	st_file *f;
	st_error err;
	int spool = spool_fd();
	ck_assert_int_eq(open_piped(&f, &b, 0, spool, &err), ST_OK);
	close(spool);
	check_table(f, 40, b.n);
	check_data(f, 40);
	st_file_close(f);
	free(b.p);
}
END_TEST

START_TEST(pipe_needs_a_spool)
{
	struct blob b = make_file(40, 0, 0);
	st_file *f;
	st_error err;
	ck_assert_int_eq(open_piped(&f, &b, 0, -1, &err), ST_EINVAL);
	ck_assert_ptr_null(f);
	int spool = spool_fd();
	ck_assert_int_eq(write(spool, "x", 1), 1); /* not empty */
	ck_assert_int_eq(open_piped(&f, &b, 0, spool, &err), ST_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.message, "empty regular spool file"));
	close(spool);
	free(b.p);
}
END_TEST

START_TEST(regular_fd)
{
	struct blob b = make_file(5000, 0, 0);
	char path[512];
	int fd = file_fd(&b, path, sizeof path);
	st_file *f;
	st_error err;
	/* HEADER_ONLY is ignored for a file: its data stays readable. */
	ck_assert_int_eq(st_file_open_fd(&f, fd, "x", ST_OPEN_HEADER_ONLY, -1, &err), ST_OK);
	close(fd);
	ck_assert_str_eq(st_file_path(f), "x");
	check_table(f, 5000, b.n);
	check_data(f, 5000);
	st_file_close(f);
	unlink(path);
	free(b.p);
}
END_TEST

/*
 * The stream's error is the file's, with the name in place of the path;
 * for flags (header only, or spooled) and from a regular fd.
 */
static void same_error(const struct blob *b, const char *want)
{
	char path[512];
	int fd = file_fd(b, path, sizeof path);
	st_file *f;
	st_error by_path, e;
	ck_assert_int_eq(st_file_open(&f, path, 0, &by_path), ST_EFORMAT);
	const char *msg = by_path.message + strlen(path);
	ck_assert_ptr_nonnull(strstr(msg, want));
	char expect[600];
	snprintf(expect, sizeof expect, "<stdin>%s", msg);
	ck_assert_int_eq(open_piped(&f, b, ST_OPEN_HEADER_ONLY, -1, &e), ST_EFORMAT);
	ck_assert_ptr_null(f);
	ck_assert_str_eq(e.message, expect);
	int spool = spool_fd();
	ck_assert_int_eq(open_piped(&f, b, 0, spool, &e), ST_EFORMAT);
	ck_assert_str_eq(e.message, expect);
	close(spool);
	ck_assert_int_eq(st_file_open_fd(&f, fd, NULL, 0, -1, &e), ST_EFORMAT);
	ck_assert_str_eq(e.message, expect);
	close(fd);
	unlink(path);
}

START_TEST(errors_as_for_a_file)
{
	struct blob b = make_file(BIG, 0, 1000); /* data cut short */
	same_error(&b, "file truncated: tensors need");
	free(b.p);
	b = make_file(BIG, 5, 0); /* longer than the header says */
	same_error(&b, "trailing");
	free(b.p);
	b = make_file(40, 0, 0);
	b.n = 30; /* within the header */
	same_error(&b, "file truncated: the header needs 8 + ");
	b.n = 5; /* within the length */
	same_error(&b, "too short for the 8-byte header length");
	b.n = 0;
	same_error(&b, "(empty file)");
	/* A length past the limit: refused before anything is allocated. */
	memcpy(b.p, "\xff\xff\xff\xff\x00\x00\x00\x00{", 9);
	b.n = 9;
	same_error(&b, "exceeds the limit of 100000000");
	/* A header length at the limit on a stream that ends at once. */
	memcpy(b.p, "\x00\xe1\xf5\x05\x00\x00\x00\x00{", 9);
	same_error(&b, "file truncated: the header needs 8 + 100000000 bytes");
	/* Text: what a file of it is called. */
	memcpy(b.p, "just some text\n", 15);
	b.n = 15;
	same_error(&b, "text file");
	free(b.p);
}
END_TEST

START_TEST(other_formats_refused)
{
	static const char *const heads[] = {"GGUF\x03\x00\x00\x00", "PK\x03\x04zzzz",
	                                    "\x80\x02zzzzzz", "\x1f\x8bzzzzzz"};
	static const char *const words[] = {"a GGUF file", "a zip", "pickle", "gzip"};
	for (size_t i = 0; i < 4; i++) {
		unsigned char buf[64] = {0};
		memcpy(buf, heads[i], 8);
		struct blob b = {buf, sizeof buf};
		st_file *f;
		st_error e;
		ck_assert_int_eq(open_piped(&f, &b, ST_OPEN_HEADER_ONLY | ST_OPEN_TORCH, -1, &e),
		                 ST_EFORMAT);
		ck_assert_msg(strstr(e.message, words[i]) != NULL, "%s", e.message);
		ck_assert_ptr_nonnull(strstr(e.message, "only a safetensors file can be read "
		                                        "from a stream"));
		ck_assert_int_eq(strncmp(e.message, "<stdin>: ", 9), 0);
	}
}
END_TEST

static void count(void *ctx, int severity, const char *message)
{
	(void)message;
	if (severity == ST_PROBLEM_ERROR)
		++*(int *)ctx;
}

START_TEST(check_fd)
{
	struct blob b = make_file(BIG, 0, 0);
	struct piped pp;
	st_file *f;
	st_error e;
	int n = 0;
	pipe_start(&pp, &b);
	ck_assert_int_eq(st_check_fd(pp.rd, "in", count, &n, &f, &e), 0);
	pipe_end(&pp);
	ck_assert_int_eq(n, 0);
	ck_assert_ptr_nonnull(f);
	check_table(f, BIG, b.n);
	/* The file goes on into a checkpoint of its own. */
	st_checkpoint *c;
	ck_assert_int_eq(st_checkpoint_from_file(&c, f, &e), ST_OK);
	ck_assert_str_eq(st_checkpoint_path(c), "in");
	ck_assert_ptr_null(st_checkpoint_dir(c));
	ck_assert_ptr_null(st_checkpoint_index_path(c));
	ck_assert_uint_eq(st_checkpoint_n_files(c), 1);
	ck_assert_uint_eq(st_checkpoint_n_tensors(c), 2);
	ck_assert_int_eq(st_checkpoint_find(c, "big", 3), 1);
	ck_assert_uint_eq(st_checkpoint_data_bytes(c), 8 + BIG);
	st_checkpoint_close(c);
	free(b.p);

	/* Two broken rules (an unknown dtype, a trailing byte): both reported. */
	static const char hdr[] = "{\"a\":{\"dtype\":\"X9\",\"shape\":[1],\"data_offsets\":[0,1]}}";
	unsigned char buf[128] = {sizeof hdr - 1};
	memcpy(buf + 8, hdr, sizeof hdr - 1);
	struct blob bad = {buf, 8 + sizeof hdr - 1 + 2};
	n = 0;
	pipe_start(&pp, &bad);
	int rc = st_check_fd(pp.rd, NULL, count, &n, &f, &e);
	pipe_end(&pp);
	ck_assert_int_ge(rc, 2);
	ck_assert_int_eq(rc, n);
	ck_assert_ptr_null(f);
}
END_TEST

START_TEST(directory_fd)
{
	int fd = open(tmp, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	st_file *f;
	st_error e;
	ck_assert_int_eq(st_file_open_fd(&f, fd, "d", 0, -1, &e), ST_EIO);
	ck_assert_str_eq(e.message, "d: is a directory");
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("file_fd");
	TCase *tc = tcase_create("fd");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, pipe_header_only);
	tcase_add_test(tc, pipe_spooled);
	tcase_add_test(tc, pipe_small_header_in_first_bytes);
	tcase_add_test(tc, pipe_needs_a_spool);
	tcase_add_test(tc, regular_fd);
	tcase_add_test(tc, errors_as_for_a_file);
	tcase_add_test(tc, other_formats_refused);
	tcase_add_test(tc, check_fd);
	tcase_add_test(tc, directory_fd);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
