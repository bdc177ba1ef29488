/*
 * check_threads.c - reads from many threads on one handle (libst/file.c,
 * libst/index.c, a PyTorch file of views: libst/torch.c), and opens in
 * many threads at once (format.c, index.c), and a GGUF decoded to
 * safetensors on many threads (gguf_convert.c through st/stream.h).
 *
 * The files are built here byte by byte (header text and data), not by
 * the writer, so the expected bytes come from the rule that made them:
 * data byte o of a file (counted from the start of its data buffer) is
 * (o * 13 + 5 + file) & 0xff (the GGUF's blocks too, whose header
 * st_gguf_writer writes). Run it under ThreadSanitizer
 * (-DST_SANITIZE_THREAD=ON, ctest -L threads): the tests check the bytes,
 * TSan checks that no access races.
 */
#include <st.h>

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_THREADS 8
#define N_TENSORS 48

#define TMPDIR_NAME "check_threads"
#include "tmpdir.h"

static char path1[600], path2[600], index_path[600];

static unsigned char rule(uint64_t o, unsigned file)
{
	return (unsigned char)((o * 13 + 5 + file) & 0xff);
}

static uint64_t tensor_size(unsigned k)
{
	return 1 + (uint64_t)k * 4093 % 30011;
}

/* A file of U8 tensors t<first>..t<first+n-1>, data from rule(., file). */
static void make_file(const char *path, unsigned first, unsigned n,
                      unsigned file)
{
	char *json = malloc(64 * 1024);
	ck_assert_ptr_nonnull(json);
	size_t len = 0;
	uint64_t off = 0;
	len += (size_t)sprintf(json + len, "{");
	for (unsigned k = first; k < first + n; k++) {
		uint64_t sz = tensor_size(k);
		len += (size_t)sprintf(json + len,
		                       "%s\"t%03u\":{\"dtype\":\"U8\",\"shape\":[%llu],"
		                       "\"data_offsets\":[%llu,%llu]}",
		                       k == first ? "" : ",", k, (unsigned long long)sz,
		                       (unsigned long long)off,
		                       (unsigned long long)(off + sz));
		off += sz;
	}
	len += (size_t)sprintf(json + len, "}");
	while (len % 8)
		json[len++] = ' ';
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	unsigned char prefix[8];
	for (int i = 0; i < 8; i++)
		prefix[i] = (unsigned char)((uint64_t)len >> (8 * i));
	ck_assert_uint_eq(fwrite(prefix, 1, 8, f), 8);
	ck_assert_uint_eq(fwrite(json, 1, len, f), len);
	for (uint64_t o = 0; o < off; o++)
		ck_assert_int_ne(fputc(rule(o, file), f), EOF);
	ck_assert_int_eq(fclose(f), 0);
	free(json);
}

static void setup(void)
{
	tmpdir_setup();
	snprintf(path1, sizeof path1, "%s/model-00001-of-00002.safetensors", tmp);
	snprintf(path2, sizeof path2, "%s/model-00002-of-00002.safetensors", tmp);
	snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json",
	         tmp);
	make_file(path1, 0, N_TENSORS / 2, 0);
	make_file(path2, N_TENSORS / 2, N_TENSORS / 2, 1);
	FILE *f = fopen(index_path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"metadata\":{},\"weight_map\":{");
	for (unsigned k = 0; k < N_TENSORS; k++)
		fprintf(f, "%s\"t%03u\":\"model-0000%u-of-00002.safetensors\"",
		        k ? "," : "", k, k < N_TENSORS / 2 ? 1 : 2);
	fprintf(f, "}}");
	ck_assert_int_eq(fclose(f), 0);
}

static void teardown(void)
{
	tmpdir_teardown();
}

/* ---- many readers, one handle ------------------------------------------- */

struct reader {
	pthread_barrier_t *start;
	st_file *f;           /* one file, or */
	st_checkpoint *c;     /* a checkpoint */
	unsigned id;
	int bad;              /* bytes that broke the rule */
	int failed;           /* calls that did not return ST_OK */
};

/* Tensor k's data offset within its file and that file's number. */
static void where(unsigned k, uint64_t *off, unsigned *file)
{
	unsigned first = k < N_TENSORS / 2 ? 0 : N_TENSORS / 2;
	*file = first ? 1 : 0;
	*off = 0;
	for (unsigned i = first; i < k; i++)
		*off += tensor_size(i);
}

static int check_bytes(const unsigned char *p, uint64_t n, unsigned k,
                       uint64_t skip)
{
	uint64_t off;
	unsigned file;
	where(k, &off, &file);
	int bad = 0;
	for (uint64_t j = 0; j < n; j++)
		bad += p[j] != rule(off + skip + j, file);
	return bad;
}

static void *read_all(void *arg)
{
	struct reader *r = arg;
	unsigned char buf[64];
	pthread_barrier_wait(r->start);
	/* The file holds the first half of the tensors. */
	unsigned n_tensors = r->f ? N_TENSORS / 2 : N_TENSORS;
	for (unsigned step = 0; step < n_tensors; step++) {
		/* Each thread walks the tensors from a different place. */
		unsigned k = (step + r->id * 7) % n_tensors;
		char name[16];
		snprintf(name, sizeof name, "t%03u", k);
		long i = r->f ? st_file_find(r->f, name, strlen(name))
		              : st_checkpoint_find(r->c, name, strlen(name));
		if (i < 0) {
			r->failed++;
			continue;
		}
		const st_tensor *t = r->f ? st_file_tensor(r->f, (size_t)i)
		                          : st_checkpoint_tensor(r->c, (size_t)i, NULL);
		const void *data;
		int rc = r->f ? st_file_data(r->f, (size_t)i, &data, NULL)
		              : st_checkpoint_data(r->c, (size_t)i, &data, NULL);
		if (rc != ST_OK) {
			r->failed++;
			continue;
		}
		r->bad += check_bytes(data, t->n_bytes, k, 0);
		uint64_t at = t->n_bytes / 2;
		size_t n = t->n_bytes - at < sizeof buf ? (size_t)(t->n_bytes - at)
		                                        : sizeof buf;
		rc = r->f ? st_file_read(r->f, (size_t)i, at, buf, n, NULL)
		          : st_checkpoint_read(r->c, (size_t)i, at, buf, n, NULL);
		if (rc != ST_OK)
			r->failed++;
		else
			r->bad += check_bytes(buf, n, k, at);
	}
	return NULL;
}

static void run_readers(st_file *f, st_checkpoint *c)
{
	pthread_barrier_t start;
	pthread_t th[N_THREADS];
	struct reader r[N_THREADS];
	pthread_barrier_init(&start, NULL, N_THREADS);
	for (unsigned i = 0; i < N_THREADS; i++) {
		r[i] = (struct reader){&start, f, c, i, 0, 0};
		ck_assert_int_eq(pthread_create(&th[i], NULL, read_all, &r[i]), 0);
	}
	for (unsigned i = 0; i < N_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].failed, 0);
		ck_assert_int_eq(r[i].bad, 0);
	}
	pthread_barrier_destroy(&start);
}

START_TEST(test_file_shared_by_threads)
{
	/* A fresh handle each round, so that the threads race to map it. */
	for (int round = 0; round < 4; round++) {
		st_file *f;
		st_error err;
		ck_assert_int_eq(st_file_open(&f, path1, 0, &err), ST_OK);
		run_readers(f, NULL);
		st_file_close(f);
	}
}
END_TEST

START_TEST(test_checkpoint_shared_by_threads)
{
	for (int round = 0; round < 4; round++) {
		st_checkpoint *c;
		st_error err;
		ck_assert_int_eq(st_checkpoint_open(&c, tmp, 0, &err), ST_OK);
		ck_assert_uint_eq(st_checkpoint_n_tensors(c), N_TENSORS);
		run_readers(NULL, c);
		st_checkpoint_close(c);
	}
}
END_TEST

/* ---- a PyTorch checkpoint of views -------------------------------------- */

/*
 * Thread id reads chunks id, id + N_THREADS, ... of every tensor of a
 * torch.save file of views (gathered in tiles, their storages' CRC-32s
 * joined from the chunks of all threads) and compares them with the
 * expected tensors gen_tiled.py wrote.
 */
struct torch_reader {
	pthread_barrier_t *start;
	st_file *f, *want;
	unsigned id;
	int failed, bad;
};

static void *read_torch(void *arg)
{
	struct torch_reader *r = arg;
	enum { CS = 4093 };
	unsigned char buf[CS];
	pthread_barrier_wait(r->start);
	for (size_t i = 0; i < st_file_n_tensors(r->want); i++) {
		const st_tensor *t = st_file_tensor(r->want, i);
		long j = st_file_find(r->f, t->name, t->name_len);
		const void *q;
		if (j < 0 || st_file_data(r->want, i, &q, NULL) != ST_OK) {
			r->failed++;
			continue;
		}
		for (uint64_t off = (uint64_t)r->id * CS; off < t->n_bytes;
		     off += (uint64_t)N_THREADS * CS) {
			size_t n = t->n_bytes - off < CS ? (size_t)(t->n_bytes - off) : CS;
			if (st_file_read(r->f, (size_t)j, off, buf, n, NULL) != ST_OK)
				r->failed++;
			else if (memcmp(buf, (const unsigned char *)q + off, n) != 0)
				r->bad++;
		}
	}
	return NULL;
}

START_TEST(test_torch_shared_by_threads)
{
	for (int round = 0; round < 2; round++) {
		st_file *f, *want;
		st_error err;
		ck_assert_int_eq(st_file_open(&f, ST_TESTDATA "/torch/tiled/tiled.bin",
		                              ST_OPEN_TORCH, &err), ST_OK);
		ck_assert_int_eq(st_file_open(&want, ST_TESTDATA
		                              "/torch/tiled/tiled.expected.safetensors",
		                              0, &err), ST_OK);
		pthread_barrier_t start;
		pthread_t th[N_THREADS];
		struct torch_reader r[N_THREADS];
		pthread_barrier_init(&start, NULL, N_THREADS);
		for (unsigned i = 0; i < N_THREADS; i++) {
			r[i] = (struct torch_reader){&start, f, want, i, 0, 0};
			ck_assert_int_eq(pthread_create(&th[i], NULL, read_torch, &r[i]), 0);
		}
		for (unsigned i = 0; i < N_THREADS; i++) {
			pthread_join(th[i], NULL);
			ck_assert_int_eq(r[i].failed, 0);
			ck_assert_int_eq(r[i].bad, 0);
		}
		pthread_barrier_destroy(&start);
		st_file_close(want);
		st_file_close(f);
	}
}
END_TEST

/* ---- many opens at once ------------------------------------------------- */

struct opener {
	pthread_barrier_t *start;
	int failed;
};

static void *open_many(void *arg)
{
	struct opener *o = arg;
	pthread_barrier_wait(o->start);
	for (int round = 0; round < 8; round++) {
		st_checkpoint *c;
		if (st_checkpoint_open(&c, index_path, 0, NULL) != ST_OK) {
			o->failed++;
			continue;
		}
		/* The name index was sorted during this open. */
		for (unsigned k = 0; k < N_TENSORS; k++) {
			char name[16];
			snprintf(name, sizeof name, "t%03u", k);
			long i = st_checkpoint_find(c, name, strlen(name));
			if (i < 0 || memcmp(st_checkpoint_tensor(c, (size_t)i, NULL)->name,
			                    name, 5) != 0)
				o->failed++;
		}
		st_checkpoint_close(c);
	}
	return NULL;
}

START_TEST(test_open_in_many_threads)
{
	pthread_barrier_t start;
	pthread_t th[N_THREADS];
	struct opener o[N_THREADS];
	pthread_barrier_init(&start, NULL, N_THREADS);
	for (unsigned i = 0; i < N_THREADS; i++) {
		o[i] = (struct opener){&start, 0};
		ck_assert_int_eq(pthread_create(&th[i], NULL, open_many, &o[i]), 0);
	}
	for (unsigned i = 0; i < N_THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(o[i].failed, 0);
	}
	pthread_barrier_destroy(&start);
}
END_TEST

/* ---- a GGUF decoded on many threads (libst/gguf_convert.c) ------------- */

/*
 * A GGUF of Q8_0 blocks built here: block b's scale is F16 0x2400 (2^-6)
 * and its code j is (int8)rule(b * 32 + j, 2), so element e decodes to
 * exactly (int8)rule(e, 2) / 64 (ggml's Q8_0: d * q); and an F16 tensor
 * of rule bytes, which is copied. "big" is 6 MiB of F32 output, more
 * than one 4 MiB chunk.
 */
#define Q8_ROWS 1536u
#define Q8_COLS 1024u

static float q8_value(uint64_t e)
{
	return (float)(signed char)rule(e, 2) / 64.0f;
}

static void make_gguf(const char *path)
{
	st_gguf_writer *w;
	const uint64_t big[2] = {Q8_COLS, Q8_ROWS}, small[2] = {64, 3}, f16[1] = {100};
	ck_assert_int_eq(st_gguf_writer_new(&w, NULL), ST_OK);
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "big", ST_GGML_Q8_0, 2, big, NULL), ST_OK);
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "half", ST_GGML_F16, 1, f16, NULL), ST_OK);
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "small", ST_GGML_Q8_0, 2, small, NULL),
	                 ST_OK);
	ck_assert_int_eq(st_gguf_writer_open(w, path, NULL), ST_OK);
	const uint64_t n_q8[2] = {(uint64_t)Q8_ROWS * Q8_COLS, 64 * 3};
	for (int t = 0; t < 2; t++) {
		for (uint64_t b = 0; b < n_q8[t] / 32; b++) {
			unsigned char blk[34] = {0x00, 0x24};
			for (unsigned j = 0; j < 32; j++)
				blk[2 + j] = rule(b * 32 + j, 2);
			ck_assert_int_eq(st_gguf_writer_write(w, blk, sizeof blk, NULL), ST_OK);
		}
		if (t == 0) {
			unsigned char h[200];
			for (unsigned o = 0; o < sizeof h; o++)
				h[o] = rule(o, 3);
			ck_assert_int_eq(st_gguf_writer_write(w, h, sizeof h, NULL), ST_OK);
		}
	}
	ck_assert_int_eq(st_gguf_writer_finish(w, NULL), ST_OK);
	st_gguf_writer_free(w);
}

static uint64_t progress_bytes;

static void count_progress(void *ctx, uint64_t bytes)
{
	(void)ctx;
	progress_bytes += bytes; /* serialized by the stream */
}

/* Write g as safetensors to out on threads threads; its bytes. */
static unsigned char *convert_on(const st_gguf *g, const char *out, unsigned threads,
                                 size_t *len)
{
	st_convert_run r = {.threads = threads, .progress = count_progress};
	st_error err;
	progress_bytes = 0;
	ck_assert_msg(st_gguf_write_safetensors(g, out, NULL, &r, NULL, &err) == ST_OK, "%s",
	              err.message);
	uint64_t in = 0;
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++)
		in += st_gguf_tensor_at(g, i)->n_bytes;
	ck_assert_uint_eq(progress_bytes, in);
	return read_file(out, len);
}

static void check_values(const char *out)
{
	st_checkpoint *c;
	const void *data;
	ck_assert_int_eq(st_checkpoint_open(&c, out, 0, NULL), ST_OK);
	long i = st_checkpoint_find(c, "big", 3);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(st_checkpoint_data(c, (size_t)i, &data, NULL), ST_OK);
	const unsigned char *p = data;
	int bad = 0;
	for (uint64_t e = 0; e < (uint64_t)Q8_ROWS * Q8_COLS; e++) {
		float v, want = q8_value(e);
		memcpy(&v, p + e * 4, 4);
		bad += v != want;
	}
	ck_assert_int_eq(bad, 0);
	i = st_checkpoint_find(c, "half", 4);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(st_checkpoint_data(c, (size_t)i, &data, NULL), ST_OK);
	p = data;
	for (unsigned o = 0; o < 200; o++)
		bad += p[o] != rule(o, 3);
	ck_assert_int_eq(bad, 0);
	st_checkpoint_close(c);
}

START_TEST(test_gguf_decoded_on_threads)
{
	st_gguf *g;
	const char *gguf = path_in("q8.gguf");
	make_gguf(gguf);
	ck_assert_int_eq(st_gguf_open(&g, gguf, NULL), ST_OK);
	size_t n1, n4;
	unsigned char *one = convert_on(g, path_in("one.safetensors"), 1, &n1);
	unsigned char *four = convert_on(g, path_in("four.safetensors"), 4, &n4);
	ck_assert_uint_eq(n1, n4);
	ck_assert_int_eq(memcmp(one, four, n1), 0);
	check_values(path_in("four.safetensors"));
	free(one);
	free(four);
	st_gguf_close(g);
	unlink(path_in("q8.gguf"));
	unlink(path_in("one.safetensors"));
	unlink(path_in("four.safetensors"));
}
END_TEST

static int always(void *ctx)
{
	(void)ctx;
	return 1;
}

START_TEST(test_gguf_decode_cancelled)
{
	st_gguf *g;
	st_error err;
	make_gguf(path_in("q8.gguf"));
	ck_assert_int_eq(st_gguf_open(&g, path_in("q8.gguf"), NULL), ST_OK);
	st_convert_run r = {.threads = 4, .cancel = always};
	ck_assert_int_eq(st_gguf_write_safetensors(g, path_in("out.safetensors"), NULL, &r,
	                                           NULL, &err),
	                 ST_EIO);
	ck_assert_ptr_nonnull(strstr(err.message, "cancelled"));
	ck_assert_int_ne(access(path_in("out.safetensors"), F_OK), 0);
	st_gguf_close(g);
	unlink(path_in("q8.gguf"));
}
END_TEST

static Suite *threads_suite(void)
{
	Suite *s = suite_create("threads");
	TCase *tc = tcase_create("shared");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_file_shared_by_threads);
	tcase_add_test(tc, test_checkpoint_shared_by_threads);
	tcase_add_test(tc, test_open_in_many_threads);
	tcase_add_test(tc, test_torch_shared_by_threads);
	tcase_add_test(tc, test_gguf_decoded_on_threads);
	tcase_add_test(tc, test_gguf_decode_cancelled);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(threads_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
