/*
 * bench_tokenizer.c - tokens per second of the tokenizer
 * (tools/gpt2/tokenizer*.c) on a text file, single thread, to set beside
 * tiktoken and Hugging Face (bench/tiktoken_bench.mjs for GPT-2,
 * bench/hf_tokenizer_bench.mjs for any tokenizer.json; same file). The
 * tokenizer is a PATH as gpt2run --tokenizer takes it: a snapshot folder,
 * a tokenizer.json or a .gguf file. No special tokens are added.
 *
 * "cold" loads a fresh tokenizer before each run (loading is not timed), so
 * its word cache starts empty, as tiktoken, which has no cache, always
 * does; "warm" encodes the same text again with the cache full. It prints
 * the best and the median of the runs. It is not a test: it asserts
 * nothing, except that cold and warm give the same ids.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt2/tokenizer.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* FNV-1a 64 of the ids as little-endian uint32, as tiktoken_bench.mjs
 * prints it: equal digests mean equal ids. */
static uint64_t digest(const int32_t *ids, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 4; k++) {
			h ^= ((uint32_t)ids[i] >> (8 * k)) & 255;
			h *= 0x100000001b3ull;
		}
	return h;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int runs, size_t n_ids, size_t bytes)
{
	qsort(t, (size_t)runs, sizeof *t, cmp_double);
	double best = t[0], med = t[runs / 2];
	printf("libst    %-5s best %7.2f ms  %6.2f M tokens/s  %6.1f MB/s   median %7.2f ms  %6.2f M tokens/s\n",
	       what, best * 1e3, (double)n_ids / best / 1e6, (double)bytes / best / 1e6, med * 1e3,
	       (double)n_ids / med / 1e6);
}

int main(int argc, char **argv)
{
	int runs = 10;
	if (argc >= 3 && strcmp(argv[1], "-n") == 0) {
		runs = atoi(argv[2]);
		argv += 2;
		argc -= 2;
	}
	if (argc != 3 || runs < 1 || runs > 1000) {
		fprintf(stderr, "usage: bench_tokenizer [-n RUNS] TOKENIZER_PATH TEXT_FILE\n");
		return 2;
	}
	const char *dir = argv[1], *path = argv[2];

	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 2;
	}
	size_t cap = 1 << 20, len = 0, got;
	char *text = malloc(cap);
	while (text && (got = fread(text + len, 1, cap - len, f)) > 0) {
		len += got;
		if (len == cap)
			text = realloc(text, cap *= 2);
	}
	fclose(f);
	if (!text) {
		fprintf(stderr, "bench_tokenizer: out of memory\n");
		return 2;
	}

	double *cold = malloc((size_t)runs * sizeof *cold), *warm = malloc((size_t)runs * sizeof *warm);
	size_t n_ids = 0, n_warm = 0;
	uint64_t dig = 0;
	for (int r = 0; r < runs; r++) {
		char err[512];
		gpt2_tokenizer *t;
		if (gpt2_tokenizer_open(&t, dir, err, sizeof err) != 0) {
			fprintf(stderr, "bench_tokenizer: %s\n", err);
			return 2;
		}
		int32_t *ids, *ids2;
		double t0 = now();
		if (gpt2_tokenizer_encode(t, text, len, 0, &ids, &n_ids, NULL, NULL, 0) != 0)
			return 2;
		double t1 = now();
		if (gpt2_tokenizer_encode(t, text, len, 0, &ids2, &n_warm, NULL, NULL, 0) != 0)
			return 2;
		double t2 = now();
		if (n_warm != n_ids || memcmp(ids, ids2, n_ids * sizeof *ids) != 0) {
			fprintf(stderr, "bench_tokenizer: cold and warm ids differ\n");
			return 1;
		}
		dig = digest(ids, n_ids);
		cold[r] = t1 - t0;
		warm[r] = t2 - t1;
		free(ids);
		free(ids2);
		gpt2_tokenizer_free(t);
	}
	printf("libst    %s: %zu bytes, %zu tokens, digest %016" PRIx64 ", %d runs\n", path, len,
	       n_ids, dig, runs);
	report("cold", cold, runs, n_ids, len);
	report("warm", warm, runs, n_ids, len);
	free(cold);
	free(warm);
	free(text);
	return 0;
}
