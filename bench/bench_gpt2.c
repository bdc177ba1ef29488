/*
 * bench_gpt2.c - gpt2run's forward pass against the machine's own limits,
 * measured on the spot in the same process: the read bandwidth (every
 * thread summing its own share of a 1 GiB buffer) and the F32 FMA peak
 * (independent FMA chains in registers, AVX-512 or AVX2 as the CPU has).
 *
 * For each snapshot given it prints ms/token for
 *   decode8    one new token at context 8 (after an 8-token prompt),
 *   decode900  one new token at context ~900 (after an 896-token prompt),
 *   prompt864  an 864-token prompt in one pass (the last token's logits),
 * each as the median of RUNS runs (with the smallest and largest), and its
 * share of the limit: bytes a token must read (every weight matrix, wte
 * for the head, and the KV cache so far) over the bandwidth for decode;
 * flops a token needs (the matmuls and attention) over the FMA peak for a
 * prompt. The limits are measured again before each run's figures, and
 * each share is taken against its own run's limit. With --scaling it also
 * runs 1 thread and prints the speed-up. It asserts nothing; it is not a
 * test.
 *
 * Usage: bench_gpt2 [-r RUNS] [-t THREADS] [-k KERNEL] [--scaling]
 *                   [--raw] SNAPSHOT...
 * --raw prints one "who dtype what median min max" line per figure (who:
 * gpt2, gpt2-1t, share, machine), for bench_gpt2run.sh.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt2/gpt2.h"
#include "gpt2/kernels.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct stat3 {
	double median, min, max;
};

static struct stat3 summarise(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	struct stat3 s = {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[0],
	                  v[n - 1]};
	return s;
}

/* ---- the machine's limits ------------------------------------------------- */

struct bw_arg {
	const float *p;
	size_t n;
	double sum;
};

static void *bw_thread(void *arg)
{
	struct bw_arg *a = arg;
	/* Eight lanes the compiler vectorises; the sum keeps the loads live. */
	float lane[16] = {0};
	for (size_t i = 0; i + 16 <= a->n; i += 16)
		for (int k = 0; k < 16; k++)
			lane[k] += a->p[i + k];
	double s = 0;
	for (int k = 0; k < 16; k++)
		s += lane[k];
	a->sum = s;
	return NULL;
}

/* GB/s reading a 1 GiB buffer with n threads, best of runs. */
static double bandwidth(int threads, int runs)
{
	size_t bytes = (size_t)1 << 30, n = bytes / sizeof(float);
	float *buf = malloc(bytes);
	if (!buf)
		return 0;
	for (size_t i = 0; i < n; i++)
		buf[i] = (float)(i & 1023);
	double best = 0;
	for (int r = 0; r < runs; r++) {
		pthread_t th[64];
		struct bw_arg a[64];
		double t0 = now();
		for (int i = 0; i < threads; i++) {
			a[i].p = buf + n / (size_t)threads * (size_t)i;
			a[i].n = n / (size_t)threads;
			pthread_create(&th[i], NULL, bw_thread, &a[i]);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		double gbs = (double)bytes / (now() - t0) / 1e9;
		if (gbs > best)
			best = gbs;
	}
	free(buf);
	return best;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

GPT2_TARGET_AVX512_BEGIN
static double fma_loop_avx512(long iters)
{
	__m512 a[24], x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(1e-7f);
	for (int i = 0; i < 24; i++)
		a[i] = _mm512_set1_ps((float)i);
	for (long k = 0; k < iters; k++)
		for (int i = 0; i < 24; i++)
			a[i] = _mm512_fmadd_ps(a[i], x, y);
	__m512 s = a[0];
	for (int i = 1; i < 24; i++)
		s = _mm512_add_ps(s, a[i]);
	return (double)_mm512_reduce_add_ps(s);
}
GPT2_TARGET_END

GPT2_TARGET_AVX2_BEGIN
static double fma_loop_avx2(long iters)
{
	__m256 a[12], x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(1e-7f);
	for (int i = 0; i < 12; i++)
		a[i] = _mm256_set1_ps((float)i);
	for (long k = 0; k < iters; k++)
		for (int i = 0; i < 12; i++)
			a[i] = _mm256_fmadd_ps(a[i], x, y);
	__m256 s = a[0];
	for (int i = 1; i < 12; i++)
		s = _mm256_add_ps(s, a[i]);
	float f[8];
	_mm256_storeu_ps(f, s);
	return (double)(f[0] + f[7]);
}
GPT2_TARGET_END
#endif

struct fma_arg {
	int wide; /* 16: AVX-512, 8: AVX2 */
	long iters;
	double sink;
};

static void *fma_thread(void *arg)
{
	struct fma_arg *a = arg;
#if defined(__x86_64__) && defined(__GNUC__)
	a->sink = a->wide == 16 ? fma_loop_avx512(a->iters) : fma_loop_avx2(a->iters);
#else
	a->sink = 0;
#endif
	return NULL;
}

/* F32 GFLOP/s of FMAs on n threads (2 flops per lane per FMA), best of runs. */
static double fma_peak(int threads, int runs)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	int wide = __builtin_cpu_supports("avx512f") ? 16 : 8;
	int chains = wide == 16 ? 24 : 12;
	long iters = 5000000;
	double best = 0;
	for (int r = 0; r < runs; r++) {
		pthread_t th[64];
		struct fma_arg a[64];
		double t0 = now();
		for (int i = 0; i < threads; i++) {
			a[i].wide = wide;
			a[i].iters = iters;
			pthread_create(&th[i], NULL, fma_thread, &a[i]);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		double gf = 2.0 * wide * chains * (double)iters * threads / (now() - t0) / 1e9;
		if (gf > best)
			best = gf;
	}
	return best;
#else
	(void)threads;
	(void)runs;
	return 0;
#endif
}

/* ---- the model ---------------------------------------------------------------- */

static void die(const char *what, const char *err)
{
	fprintf(stderr, "bench_gpt2: %s: %s\n", what, err);
	exit(2);
}

/* ms per token of `steps` single-token steps after a prompt of `ctx`. */
static double decode_ms(gpt2_model *m, gpt2_cache *c, float *logits, int ctx,
                        int steps)
{
	char err[512];
	int32_t *ids = malloc((size_t)ctx * sizeof *ids);
	for (int t = 0; t < ctx; t++)
		ids[t] = (int32_t)((1000 + 7919 * t) % m->config.vocab_size);
	gpt2_cache_reset(c);
	if (gpt2_forward(m, c, ids, ctx, logits, 0, err, sizeof err))
		die("prompt", err);
	double t0 = now();
	for (int s = 0; s < steps; s++) {
		int32_t next = gpt2_argmax(logits, m->config.vocab_size);
		if (gpt2_forward(m, c, &next, 1, logits, 0, err, sizeof err))
			die("decode", err);
	}
	double ms = (now() - t0) * 1e3 / steps;
	free(ids);
	return ms;
}

static double prompt_ms(gpt2_model *m, gpt2_cache *c, float *logits, int T)
{
	char err[512];
	int32_t *ids = malloc((size_t)T * sizeof *ids);
	for (int t = 0; t < T; t++)
		ids[t] = (int32_t)((1000 + 7919 * t) % m->config.vocab_size);
	gpt2_cache_reset(c);
	double t0 = now();
	if (gpt2_forward(m, c, ids, T, logits, 0, err, sizeof err))
		die("prompt", err);
	double ms = (now() - t0) * 1e3 / T;
	free(ids);
	return ms;
}

/* Bytes one decoded token reads at context ctx: the matrices (wpe: one
 * row) and the KV cache. */
static double decode_bytes(const gpt2_model *m, int ctx)
{
	const gpt2_config *c = &m->config;
	double es = m->wdtype == ST_DTYPE_F32 ? 4 : 2, C = c->channels, L = c->num_layers;
	double mats = L * 12 * C * C + (double)c->vocab_size * C + C;
	return mats * es + 2 * L * ctx * C * 4;
}

/* Flops of one prompt token, on average over a prompt of T (the head for
 * the last token only). */
static double prompt_flops(const gpt2_model *m, int T)
{
	const gpt2_config *c = &m->config;
	double C = c->channels, L = c->num_layers;
	double mm = 2 * L * 12 * C * C;
	double attn = 2 * 2 * L * C * (T + 1) / 2.0; /* QK and AV, causal */
	return mm + attn + 2 * (double)c->vocab_size * C / T;
}

enum { DECODE_STEPS = 32, CTX_SHORT = 8, CTX_LONG = 896, PROMPT_T = 864 };

/*
 * Each figure with its limit measured just before it, run by run: on a
 * shared machine the bandwidth and the peak move with the load, and a
 * share is only meaningful against the limit of its own moment.
 */
struct figures {
	struct stat3 d8, d900, p864;          /* ms/token */
	struct stat3 s8, s900, sp;            /* shares of the limit */
	struct stat3 bw, peak;                /* GB/s, GFLOP/s */
};

static struct figures measure(gpt2_model *m, int runs, int threads)
{
	char err[512];
	gpt2_cache *c;
	if (gpt2_cache_new(&c, m, 0, err, sizeof err))
		die("cache", err);
	float *logits = malloc((size_t)m->config.vocab_size * sizeof(float));
	double *v = malloc(8 * (size_t)runs * sizeof(double));
	double *a = v, *b = v + runs, *p = v + 2 * runs, *sa = v + 3 * runs;
	double *sb = v + 4 * runs, *sp = v + 5 * runs, *bw = v + 6 * runs;
	double *pk = v + 7 * runs;
	double bytes8 = decode_bytes(m, CTX_SHORT + DECODE_STEPS / 2);
	double bytes900 = decode_bytes(m, CTX_LONG + DECODE_STEPS / 2);
	double flops = prompt_flops(m, PROMPT_T);
	/* One warm-up pass of each, then the runs. */
	decode_ms(m, c, logits, CTX_SHORT, 4);
	prompt_ms(m, c, logits, PROMPT_T);
	for (int r = 0; r < runs; r++) {
		bw[r] = bandwidth(threads, 1);
		a[r] = decode_ms(m, c, logits, CTX_SHORT, DECODE_STEPS);
		b[r] = decode_ms(m, c, logits, CTX_LONG, DECODE_STEPS);
		sa[r] = bytes8 / (bw[r] * 1e9) * 1e3 / a[r];
		sb[r] = bytes900 / (bw[r] * 1e9) * 1e3 / b[r];
		pk[r] = fma_peak(threads, 1);
		p[r] = prompt_ms(m, c, logits, PROMPT_T);
		sp[r] = flops / (pk[r] * 1e9) * 1e3 / p[r];
	}
	struct figures f = {summarise(a, runs), summarise(b, runs), summarise(p, runs),
	                    summarise(sa, runs), summarise(sb, runs), summarise(sp, runs),
	                    summarise(bw, runs), summarise(pk, runs)};
	free(v);
	free(logits);
	gpt2_cache_free(c);
	return f;
}

static void print_raw(const char *who, const char *dt, const char *what,
                      struct stat3 s)
{
	printf("%s %s %s %.4f %.4f %.4f\n", who, dt, what, s.median, s.min, s.max);
}

int main(int argc, char **argv)
{
	int runs = 5, threads = 2, scaling = 0, raw = 0;
	const char *kernel = NULL;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-r") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-k") && i + 1 < argc)
			kernel = argv[++i];
		else if (!strcmp(argv[i], "--scaling"))
			scaling = 1;
		else if (!strcmp(argv[i], "--raw"))
			raw = 1;
		else
			break;
	}
	if (i >= argc || runs < 1 || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: bench_gpt2 [-r RUNS] [-t THREADS] [-k KERNEL] "
		                "[--scaling] [--raw] SNAPSHOT...\n");
		return 2;
	}
	const gpt2_kernels *k = NULL;
	char err[512];
	if (kernel) {
		k = gpt2_kernels_find(kernel);
		if (!k)
			die(kernel, "no such kernel on this CPU");
	} else if (gpt2_kernels_default(&k, err, sizeof err)) {
		die("kernel", err);
	}
	if (!raw)
		printf("kernel %s, %d threads, %d runs: median [min, max]; each limit "
		       "measured beside its figure\n", k->name, threads, runs);
	for (; i < argc; i++) {
		gpt2_model *m;
		double t0 = now();
		if (gpt2_model_load(&m, argv[i], -1, err, sizeof err))
			die(argv[i], err);
		struct stat3 load = {(now() - t0) * 1e3, (now() - t0) * 1e3, 0};
		load.max = load.min;
		m->kernels = k;
		const char *dt = st_dtype_name(m->wdtype);
		if (gpt2_model_set_threads(m, threads, err, sizeof err))
			die("threads", err);
		struct figures f = measure(m, runs, threads);
		if (raw) {
			print_raw("gpt2", dt, "load", load);
			print_raw("machine", dt, "bandwidth", f.bw);
			print_raw("machine", dt, "fma", f.peak);
			print_raw("gpt2", dt, "decode8", f.d8);
			print_raw("gpt2", dt, "decode900", f.d900);
			print_raw("gpt2", dt, "prompt864", f.p864);
			print_raw("share", dt, "decode8", f.s8);
			print_raw("share", dt, "decode900", f.s900);
			print_raw("share", dt, "prompt864", f.sp);
		} else {
			printf("%s (%s weights, loaded in %.0f ms)\n", argv[i], dt, load.median);
			printf("  read bandwidth %.1f GB/s [%.1f, %.1f], FMA peak %.0f GFLOP/s "
			       "[%.0f, %.0f]\n", f.bw.median, f.bw.min, f.bw.max, f.peak.median,
			       f.peak.min, f.peak.max);
			printf("  decode, context 8    %7.2f ms/token [%.2f, %.2f]: %.2f [%.2f, %.2f] "
			       "of the bandwidth limit\n", f.d8.median, f.d8.min, f.d8.max,
			       f.s8.median, f.s8.min, f.s8.max);
			printf("  decode, context 900  %7.2f ms/token [%.2f, %.2f]: %.2f [%.2f, %.2f] "
			       "of the bandwidth limit\n", f.d900.median, f.d900.min, f.d900.max,
			       f.s900.median, f.s900.min, f.s900.max);
			printf("  prompt of 864        %7.3f ms/token [%.3f, %.3f]: %.2f [%.2f, %.2f] "
			       "of the FMA peak\n", f.p864.median, f.p864.min, f.p864.max,
			       f.sp.median, f.sp.min, f.sp.max);
		}
		if (scaling && threads > 1) {
			if (gpt2_model_set_threads(m, 1, err, sizeof err))
				die("threads", err);
			struct figures g = measure(m, runs, 1);
			if (raw) {
				print_raw("gpt2-1t", dt, "decode8", g.d8);
				print_raw("gpt2-1t", dt, "prompt864", g.p864);
			} else {
				printf("  1 -> %d threads: decode %.2fx (%.2f -> %.2f ms), prompt %.2fx "
				       "(%.3f -> %.3f ms)\n", threads, g.d8.median / f.d8.median,
				       g.d8.median, f.d8.median, g.p864.median / f.p864.median,
				       g.p864.median, f.p864.median);
			}
		}
		fflush(stdout);
		gpt2_model_free(m);
	}
	return 0;
}
