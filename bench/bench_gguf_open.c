/*
 * bench_gguf_open.c - how long opening a GGUF file takes when it is 300 GB
 * versus when it is a few hundred bytes.
 *
 * st_gguf_open maps the file and parses the header in place; tensor data
 * is never touched. So opening must cost the same whatever the data size.
 * This program makes, in a temporary directory:
 *   - big.gguf: a GGUF v3 header of four 75 GB F32 tensors and a few keys,
 *     extended with ftruncate to 300 GB (a hole: no disk space needed);
 *   - tiny.gguf: the same header with four 4-byte tensors;
 * and, to show what a header costs, vocab.gguf: tiny.gguf's tensors plus a
 * 50257-string token array and 50000 merges, as a GPT-2 GGUF carries.
 * It times st_gguf_open + st_gguf_close on each over many iterations and
 * prints the mean time per open and the ratio big / tiny. Nothing is
 * asserted; ctest never runs it (see bench/README.md).
 *
 * Usage: bench_gguf_open [-n ITERATIONS] [-d DIR]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <st.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct buf {
	unsigned char *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			perror("bench_gguf_open");
			exit(2);
		}
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_u32(struct buf *b, uint32_t v)
{
	unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8),
	                      (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
	put(b, x, 4);
}

static void put_u64(struct buf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(struct buf *b, const char *s)
{
	put_u64(b, strlen(s));
	put(b, s, strlen(s));
}

/* A GGUF with four F32 tensors of n elements each; vocab adds arrays. */
static int make(const char *path, uint64_t n, int vocab)
{
	struct buf b = {0};
	put(&b, "GGUF", 4);
	put_u32(&b, 3);
	put_u64(&b, 4);
	put_u64(&b, vocab ? 4 : 2);
	put_str(&b, "general.architecture");
	put_u32(&b, 8);
	put_str(&b, "gpt2");
	put_str(&b, "general.name");
	put_u32(&b, 8);
	put_str(&b, "bench");
	if (vocab) {
		char tok[32];
		put_str(&b, "tokenizer.ggml.tokens");
		put_u32(&b, 9);
		put_u32(&b, 8);
		put_u64(&b, 50257);
		for (int i = 0; i < 50257; i++) {
			snprintf(tok, sizeof tok, "tok%d", i);
			put_str(&b, tok);
		}
		put_str(&b, "tokenizer.ggml.merges");
		put_u32(&b, 9);
		put_u32(&b, 8);
		put_u64(&b, 50000);
		for (int i = 0; i < 50000; i++) {
			snprintf(tok, sizeof tok, "t%d k%d", i, i);
			put_str(&b, tok);
		}
	}
	for (int i = 0; i < 4; i++) {
		char name[32];
		snprintf(name, sizeof name, "blk.%d.ffn_up.weight", i);
		put_str(&b, name);
		put_u32(&b, 1);
		put_u64(&b, n);
		put_u32(&b, 0);
		put_u64(&b, (uint64_t)i * ((n * 4 + 31) / 32 * 32));
	}
	while (b.n % 32)
		put(&b, "", 1);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int rc = -1;
	if (fd >= 0 && write(fd, b.p, b.n) == (ssize_t)b.n &&
	    ftruncate(fd, (off_t)(b.n + 4 * ((n * 4 + 31) / 32 * 32))) == 0)
		rc = 0;
	if (rc)
		fprintf(stderr, "bench_gguf_open: %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(b.p);
	return rc;
}

static double time_open(const char *path, int iters)
{
	st_error err;
	for (int i = 0; i < iters / 10 + 1; i++) {
		st_gguf *g;
		if (st_gguf_open(&g, path, &err)) {
			fprintf(stderr, "bench_gguf_open: %s\n", err.message);
			exit(2);
		}
		st_gguf_close(g);
	}
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		st_gguf *g;
		if (st_gguf_open(&g, path, &err))
			exit(2);
		st_gguf_close(g);
	}
	return (now() - t0) / iters;
}

int main(int argc, char **argv)
{
	int iters = 20000;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int opt;
	while ((opt = getopt(argc, argv, "n:d:")) != -1) {
		if (opt == 'n')
			iters = atoi(optarg);
		else if (opt == 'd')
			dir = optarg;
		else {
			fprintf(stderr, "usage: bench_gguf_open [-n ITERATIONS] [-d DIR]\n");
			return 2;
		}
	}
	if (iters < 1)
		iters = 1;
	char tmp[4096], big[4200], tiny[4200], voc[4200];
	snprintf(tmp, sizeof tmp, "%s/bench_gguf_open.XXXXXX", dir);
	if (!mkdtemp(tmp)) {
		perror("bench_gguf_open: mkdtemp");
		return 2;
	}
	snprintf(big, sizeof big, "%s/big.gguf", tmp);
	snprintf(tiny, sizeof tiny, "%s/tiny.gguf", tmp);
	snprintf(voc, sizeof voc, "%s/vocab.gguf", tmp);
	int rc = 2;
	if (make(big, 75000000000ull / 4, 0) == 0 && make(tiny, 1, 0) == 0 &&
	    make(voc, 1, 1) == 0) {
		double tb = time_open(big, iters), tt = time_open(tiny, iters);
		double tv = time_open(voc, iters / 100 + 1);
		printf("st_gguf_open+close  big (300 GB) %.2f us  tiny %.2f us  "
		       "ratio %.2f\n", tb * 1e6, tt * 1e6, tb / tt);
		printf("st_gguf_open+close  tiny with a 50257-token vocabulary and "
		       "50000 merges %.1f us\n", tv * 1e6);
		rc = 0;
	}
	unlink(big);
	unlink(tiny);
	unlink(voc);
	rmdir(tmp);
	return rc;
}
