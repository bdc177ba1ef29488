/*
 * bench_convert.c - throughput of st_convert's hot pairs (F32 <-> BF16,
 * F32 <-> F16) with each kernel family, next to memcpy of the same source
 * buffer.
 *
 * Usage: bench_convert [MiB [repeats]]   (defaults: 256 MiB of F32, 5)
 *
 * For each pair it converts N = MiB * 2^20 / 4 elements (so the F32 side
 * is MiB large) and prints the best time of the repeats as GB/s of source
 * bytes, beside memcpy's GB/s for a copy of the same source buffer, and
 * their ratio (above 1: faster than memcpy). Widening writes twice the
 * bytes it reads, so a last column compares with a memcpy of the larger
 * (F32) buffer. Single-threaded. It is not a test: it checks nothing but
 * that the paths give the scalar path's bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"


static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *alloc_touched(size_t n)
{
	void *p = malloc(n);

	if (!p) {
		fprintf(stderr, "bench_convert: cannot allocate %zu bytes\n", n);
		exit(2);
	}
	memset(p, 0, n); /* fault every page in before timing */
	return p;
}

/* Normal-ish F32 values in [-8, 8], with a few zeros, like weights. */
static void fill_f32(uint32_t *p, size_t n)
{
	uint64_t s = 0x9E3779B97F4A7C15ull;

	for (size_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		float f = (float)((int64_t)(s >> 11) - (1ll << 52)) * 0x1p-49f;
		if ((s & 1023) == 0)
			f = 0.0f;
		memcpy(&p[i], &f, sizeof f);
	}
}

static int repeats = 5;

static double best_memcpy(void *dst, const void *src, size_t bytes)
{
	double best = 1e30;

	for (int r = 0; r < repeats; r++) {
		double t = now();
		memcpy(dst, src, bytes);
		t = now() - t;
		if (t < best)
			best = t;
	}
	return best;
}

enum { PATH_SCALAR, PATH_AVX2, PATH_AVX512, PATH_BEST };
static const char *const path_names[] = {"scalar", "AVX2", "AVX-512", "st_convert"};

static int run(int path, st_dtype dt, void *dst, st_dtype srct, const void *src, size_t n,
               st_convert_stats *stats)
{
	switch (path) {
	case PATH_SCALAR: return st__convert_scalar(dt, dst, srct, src, n, stats);
	case PATH_AVX2: return st__convert_isa(1, dt, dst, srct, src, n, stats);
	case PATH_AVX512: return st__convert_isa(2, dt, dst, srct, src, n, stats);
	default: return st_convert(dt, dst, srct, src, n, stats);
	}
}

int main(int argc, char **argv)
{
	static const struct {
		st_dtype dst, src;
	} pairs[] = {
		{ST_DTYPE_BF16, ST_DTYPE_F32},
		{ST_DTYPE_F16, ST_DTYPE_F32},
		{ST_DTYPE_F32, ST_DTYPE_BF16},
		{ST_DTYPE_F32, ST_DTYPE_F16},
	};
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	size_t n, bytes;
	uint32_t *f32;
	uint16_t *bf16, *f16;
	unsigned char *dst, *ref;

	if (argc > 2)
		repeats = atoi(argv[2]);
	if (mib == 0 || mib > 65536 || repeats < 1 || argc > 3) {
		fprintf(stderr, "usage: bench_convert [MiB [repeats]]\n");
		return 2;
	}
	bytes = mib << 20;
	n = bytes / 4;
	f32 = alloc_touched(bytes);
	bf16 = alloc_touched(bytes / 2);
	f16 = alloc_touched(bytes / 2);
	dst = alloc_touched(bytes);
	ref = alloc_touched(bytes);
	fill_f32(f32, n);
	st_convert(ST_DTYPE_BF16, bf16, ST_DTYPE_F32, f32, n, NULL);
	st_convert(ST_DTYPE_F16, f16, ST_DTYPE_F32, f32, n, NULL);

	printf("%zu Mi elements (F32 side %zu MiB), best of %d, GB = 1e9 bytes of source\n",
	       n >> 20, mib, repeats);
	printf("%-11s %-10s %-5s %9s %9s %7s %11s\n", "pair", "path", "stats", "GB/s", "memcpy",
	       "ratio", "ratio(F32)");
	for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
		st_dtype dt = pairs[k].dst, srct = pairs[k].src;
		const void *src = srct == ST_DTYPE_F32 ? (const void *)f32
		                  : srct == ST_DTYPE_BF16 ? (const void *)bf16 : (const void *)f16;
		size_t sbytes = n * (st_dtype_bits(srct) / 8), dbytes = n * (st_dtype_bits(dt) / 8);
		double tm = best_memcpy(dst, src, sbytes);
		double tm32 = best_memcpy(dst, f32, n * 4);
		char label[32];

		snprintf(label, sizeof label, "%s->%s", st_dtype_name(srct), st_dtype_name(dt));
		st__convert_scalar(dt, ref, srct, src, n, NULL);
		for (int path = PATH_SCALAR; path <= PATH_BEST; path++) {
			for (int with_stats = 0; with_stats < 2; with_stats++) {
				st_convert_stats stats = {0, 0};
				double best = 1e30;

				if (run(path, dt, dst, srct, src, n, NULL) != ST_OK)
					continue; /* this CPU lacks the kernel family */
				if (memcmp(dst, ref, dbytes) != 0)
					printf("%-11s %-10s: OUTPUT DIFFERS FROM SCALAR\n", label, path_names[path]);
				for (int r = 0; r < repeats; r++) {
					double t = now();
					run(path, dt, dst, srct, src, n, with_stats ? &stats : NULL);
					t = now() - t;
					if (t < best)
						best = t;
				}
				printf("%-11s %-10s %-5s %9.2f %9.2f %7.2f %11.2f\n", label, path_names[path],
				       with_stats ? "yes" : "no", (double)sbytes / best * 1e-9,
				       (double)sbytes / tm * 1e-9, tm / best, tm32 / best);
			}
		}
	}
	free(f32);
	free(bf16);
	free(f16);
	free(dst);
	free(ref);
	return 0;
}
