/*
 * bench_fp8.c - strun's decode matrix-vector products on their own: the
 * scaled FP8 one (llama_fp8_dots) against the BF16 one (the kernel
 * table's dots) on the same shape, and the read bandwidth over the FP8
 * bytes, interleaved in each round so that a loaded machine slows all
 * three alike.
 *
 * The weights: M matrices of Qwen2-0.5B's gate_proj shape (4864 x 896),
 * about 256 MB of FP8 (E4M3, one F32 scale per 128 x 128 block) and twice
 * that of BF16, far past any cache, as a decode reads them. Rows go to
 * the threads in tasks of 64 as strun's dot_task splits them. The
 * weights lie in huge pages where the kernel gives them, as libst's
 * mappings ask (st__map); -s keeps them in 4 KiB pages.
 *
 * The FP8 codes start A bytes past a 64-byte boundary (-a A, default 0), as
 * a checkpoint's tensors mostly do (bench/README.md: the cost of loads
 * across two cache lines).
 *
 * Usage: bench_fp8 [-r ROUNDS] [-t THREADS] [-k KERNEL] [-m MATRICES] [-s] [-R] [-a A]
 * Prints, per product, G weights/s and GB/s (best and median of ROUNDS),
 * and the FP8/BF16 time ratio of the best and of the medians. -R times
 * the read alone: the machine's read bandwidth on THREADS threads, the
 * floor bench_strun.sh sets decode's figures against. It asserts
 * nothing; it is not a test.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpt2/kernels.h"
#include "gpt2/llama.h"
#include "gpt2/pool.h"

enum { OUT = 4864, IN = 896, BLOCK = 128, ROWS = 64, MAX_ROUNDS = 101 };

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 32);
}

struct job {
	const gpt2_kernels *k;
	int fp8, m;
	llama_mat *w8;       /* (m) */
	const uint16_t *w16; /* (m, OUT, IN) */
	const unsigned char *bytes;
	size_t nbytes;
	const float *x, *px; /* px: x as llama_fp8_prepare left it */
	float *out;          /* (threads, OUT) */
	float *scratch;      /* (threads, IN rounded up) */
	size_t scratch_n;
	double sum[64];
};

static void dots_task(void *arg, int task, int thread)
{
	struct job *j = arg;
	float *out = j->out + (size_t)thread * OUT;
	for (int mi = 0; mi < j->m; mi++) {
		int o0 = task * ROWS, n = OUT - o0 < ROWS ? OUT - o0 : ROWS;
		if (j->fp8)
			llama_fp8_dots(j->k, out + o0, j->px, &j->w8[mi], IN, o0, n,
			               j->scratch + (size_t)thread * j->scratch_n);
		else
			j->k->dots(out + o0, j->x, j->w16 + ((size_t)mi * OUT + (size_t)o0) * IN,
			           ST_DTYPE_BF16, IN, n);
	}
}

/* The FP8 bytes summed, each task its share: the bandwidth they allow. */
static void read_task(void *arg, int task, int thread)
{
	struct job *j = arg;
	size_t per = j->nbytes / (size_t)(OUT / ROWS) / 64 * 64;
	const uint64_t *p = (const uint64_t *)(j->bytes + (size_t)task * per);
	uint64_t s[8] = {0};
	for (size_t i = 0; i + 8 <= per / 8; i += 8)
		for (int l = 0; l < 8; l++)
			s[l] += p[i + (size_t)l];
	j->sum[thread] += (double)(s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7]);
}

/* n bytes on a huge-page boundary, in huge pages unless small is set. */
static void *weights_alloc(size_t n, int small)
{
	void *p = NULL;
	if (posix_memalign(&p, (size_t)2 << 20, n) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	if (!small)
		(void)madvise(p, n, MADV_HUGEPAGE);
#endif
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	/* m = 58: 58 x 4.36 MB, 253 MB of FP8 */
	int rounds = 15, threads = 2, m = 58, small = 0, read_only = 0, align = 0, opt;
	const char *kname = NULL;
	while ((opt = getopt(argc, argv, "r:t:k:m:sRa:")) != -1) {
		if (opt == 'r')
			rounds = atoi(optarg);
		else if (opt == 't')
			threads = atoi(optarg);
		else if (opt == 'k')
			kname = optarg;
		else if (opt == 'm')
			m = atoi(optarg);
		else if (opt == 's')
			small = 1;
		else if (opt == 'R')
			read_only = 1;
		else if (opt == 'a')
			align = atoi(optarg);
		else {
			fprintf(stderr, "usage: bench_fp8 [-r ROUNDS] [-t THREADS] [-k KERNEL] [-m "
			                "MATRICES] [-s] [-R] [-a A]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || threads < 1 || threads > 64 || m < 1 || m > 1000 ||
	    align < 0 || align > 63) {
		fprintf(stderr,
		        "bench_fp8: rounds 1..%d, threads 1..64, matrices 1..1000, -a 0..63\n",
		        MAX_ROUNDS);
		return 2;
	}
	char err[256];
	const gpt2_kernels *k;
	if (kname) {
		k = gpt2_kernels_find(kname);
		if (!k) {
			fprintf(stderr, "bench_fp8: no kernel %s on this CPU\n", kname);
			return 2;
		}
	} else if (gpt2_kernels_default(&k, err, sizeof err) != 0) {
		fprintf(stderr, "bench_fp8: %s\n", err);
		return 2;
	}
	gpt2_pool *pool = NULL;
	if (threads > 1 && gpt2_pool_new(&pool, threads, err, sizeof err) != 0) {
		fprintf(stderr, "bench_fp8: %s\n", err);
		return 2;
	}

	size_t per = (size_t)OUT * IN, scols = (IN + BLOCK - 1) / BLOCK;
	size_t srows = (OUT + BLOCK - 1) / BLOCK;
	unsigned char *w8base = weights_alloc(per * (size_t)m + 64, small), *w8 = w8base + align;
	uint16_t *w16 = weights_alloc(per * (size_t)m * 2, small);
	float *scale = malloc(srows * scols * sizeof(float));
	llama_mat *mats = calloc((size_t)m, sizeof *mats);
	float lut[256], x[IN];
	size_t scratch_n = (IN + LLAMA_FP8_PAD - 1) / LLAMA_FP8_PAD * LLAMA_FP8_PAD;
	float *out = malloc((size_t)threads * OUT * sizeof(float));
	float *scratch = malloc((size_t)threads * scratch_n * sizeof(float));
	if (!w8base || !w16 || !scale || !mats || !out || !scratch) {
		fprintf(stderr, "bench_fp8: out of memory\n");
		return 2;
	}
	unsigned char codes[256];
	for (int c = 0; c < 256; c++)
		codes[c] = (unsigned char)c;
	st_convert(ST_DTYPE_F32, lut, ST_DTYPE_F8_E4M3, codes, 256, NULL);
	for (size_t i = 0; i < per * (size_t)m; i++) {
		uint32_t r = next();
		/* Codes of exponent 1..14 (no NaN), BF16 of like magnitude. */
		w8[i] = (unsigned char)((r & 0x80) | ((1 + (r >> 8) % 14) << 3) | ((r >> 4) & 7));
		w16[i] = (uint16_t)(0x3c00 | (r & 0x80ff));
	}
	for (size_t i = 0; i < srows * scols; i++)
		scale[i] = 1e-3f * (float)(1 + next() % 100);
	for (int i = 0; i < IN; i++)
		x[i] = (float)((int)(next() % 2001) - 1000) * 1e-3f;
	unsigned char tab[256];
	int tab_ok = llama_fp8_bf16_table(tab, lut);
	for (int i = 0; i < m; i++)
		mats[i] = (llama_mat){w8 + per * (size_t)i,
		                      ST_DTYPE_F8_E4M3,
		                      lut,
		                      scale,
		                      BLOCK,
		                      BLOCK,
		                      (int)scols,
		                      tab_ok ? tab : NULL,
		                      0};

	float *px = malloc(scratch_n * sizeof(float));
	if (!px) {
		fprintf(stderr, "bench_fp8: out of memory\n");
		return 2;
	}
	struct job job = {k, 0,  m,   mats,    w16,       w8, per * (size_t)m,
	                  x, px, out, scratch, scratch_n, {0}};
	double t[3][MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		for (int what = read_only ? 2 : 0; what < 3; what++) {
			job.fp8 = what == 1;
			double t0 = now();
			if (job.fp8) /* once per product, as strun does */
				llama_fp8_prepare(px, x, IN, llama_fp8_layout(k, &mats[0]));
			gpt2_pool_run(pool, what == 2 ? read_task : dots_task, &job, OUT / ROWS);
			t[what][r] = now() - t0;
		}
	}
	const char *names[3] = {"bf16 dots", "fp8 dots", "read fp8 bytes"};
	double bytes[3] = {2.0 * (double)per * m, (double)per * m, (double)per * m};
	double best[3], med[3];
	printf("kernel %s, %d threads, %d rounds, %.0f MB FP8 at +%d, %s pages\n", k->name, threads,
	       rounds, bytes[1] / 1e6, align, small ? "4 KiB" : "huge");
	for (int what = read_only ? 2 : 0; what < 3; what++) {
		qsort(t[what], (size_t)rounds, sizeof(double), cmp_double);
		best[what] = t[what][0];
		med[what] = t[what][rounds / 2];
		printf("%-15s best %6.2f ms  %5.1f Gw/s  %5.1f GB/s   median %6.2f ms  %5.1f "
		       "GB/s\n",
		       names[what], best[what] * 1e3, (double)per * m / best[what] / 1e9,
		       bytes[what] / best[what] / 1e9, med[what] * 1e3,
		       bytes[what] / med[what] / 1e9);
	}
	if (!read_only)
		printf("fp8/bf16 time: best %.3f, median %.3f; fp8/read: best %.3f\n",
		       best[1] / best[0], med[1] / med[0], best[1] / best[2]);
	gpt2_pool_free(pool);
	free(w8base);
	free(w16);
	free(scale);
	free(mats);
	free(out);
	free(scratch);
	free(px);
	return 0;
}
