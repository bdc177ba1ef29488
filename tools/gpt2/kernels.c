/*
 * kernels.c - the portable kernel table (plain C, any CPU) and the choice
 * of table for the process (kernels.h). The portable loops are written to
 * be obviously right rather than fast; kernels_avx2.c and
 * kernels_avx512.c are the fast ones.
 */
#include "gpt2/kernels.h"
#include "gpt2/internal.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- widening ------------------------------------------------------------ */

/*
 * F16 -> F32 by table: exact (st_f16_to_f32 fills it once, the only state
 * this file keeps besides the choice below).
 */
static float f16_table[65536];
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;

static void f16_table_init(void)
{
	for (uint32_t i = 0; i < 65536; i++)
		f16_table[i] = st_f16_to_f32((st_f16){(uint16_t)i});
}

/* Element i of w (type wt) as F32. */
static inline float weight(const void *w, st_dtype wt, size_t i)
{
	if (wt == ST_DTYPE_F32)
		return ((const float *)w)[i];
	uint16_t h = ((const uint16_t *)w)[i];
	if (wt == ST_DTYPE_BF16) {
		/* BF16 is the top half of an F32. */
		uint32_t bits = (uint32_t)h << 16;
		float f;
		memcpy(&f, &bits, 4);
		return f;
	}
	return f16_table[h];
}

/* ---- the portable table ---------------------------------------------------- */

static void mv_portable(float *part, const float *x, const void *w,
                        st_dtype wt, int rows, int OUT)
{
	pthread_once(&f16_once, f16_table_init);
	for (int o = 0; o < OUT; o++)
		part[o] = 0.0f;
	for (int r = 0; r < rows; r++) {
		float xr = x[r];
		size_t row = (size_t)r * (size_t)OUT;
		for (int o = 0; o < OUT; o++)
			part[o] += xr * weight(w, wt, row + (size_t)o);
	}
}

enum { LANES = 8 };

static void dots_portable(float *out, const float *x, const void *w,
                          st_dtype wt, int C, int n)
{
	pthread_once(&f16_once, f16_table_init);
	for (int v = 0; v < n; v++) {
		size_t row = (size_t)v * (size_t)C;
		/* Lanes summed in a fixed order. */
		float lane[LANES] = {0};
		int i = 0;
		for (; i + LANES <= C; i += LANES)
			for (int k = 0; k < LANES; k++)
				lane[k] += x[i + k] * weight(w, wt, row + (size_t)(i + k));
		for (; i < C; i++)
			lane[0] += x[i] * weight(w, wt, row + (size_t)i);
		float sum = 0.0f;
		for (int k = 0; k < LANES; k++)
			sum += lane[k];
		out[v] = sum;
	}
}

enum { PANEL_PORTABLE = 64 };

static void pack_portable(float *panel, const void *w, st_dtype wt, int IN,
                          int OUT, int o0)
{
	pthread_once(&f16_once, f16_table_init);
	for (int k = 0; k < IN; k++)
		for (int j = 0; j < PANEL_PORTABLE; j++)
			panel[(size_t)k * PANEL_PORTABLE + (size_t)j] =
				o0 + j < OUT ? weight(w, wt, (size_t)k * (size_t)OUT +
				                                  (size_t)(o0 + j))
				             : 0.0f;
}

static void gemm_portable(float *out, size_t ldo, const float *a, size_t lda,
                          const float *panel, const float *bias, int T,
                          int IN, int nc)
{
	enum { ROWS = 4 };
	float acc[ROWS][PANEL_PORTABLE];
	for (int t0 = 0; t0 < T; t0 += ROWS) {
		int nt = T - t0 < ROWS ? T - t0 : ROWS;
		for (int r = 0; r < nt; r++)
			for (int j = 0; j < nc; j++)
				acc[r][j] = 0.0f;
		for (int k = 0; k < IN; k++) {
			const float *b = panel + (size_t)k * PANEL_PORTABLE;
			for (int r = 0; r < nt; r++) {
				float x = a[(size_t)(t0 + r) * lda + (size_t)k];
				for (int j = 0; j < nc; j++)
					acc[r][j] += x * b[j];
			}
		}
		for (int r = 0; r < nt; r++)
			for (int j = 0; j < nc; j++)
				out[(size_t)(t0 + r) * ldo + (size_t)j] =
					bias ? acc[r][j] + bias[j] : acc[r][j];
	}
}

static void attend_portable(float *out, const float *q, const float *k,
                            const float *v, size_t ld, int n, int hs,
                            float scale, float *att)
{
	float maxv = -INFINITY;
	for (int s = 0; s < n; s++) {
		const float *ks = k + (size_t)s * ld;
		float dot = 0.0f;
		for (int i = 0; i < hs; i++)
			dot += q[i] * ks[i];
		dot *= scale;
		att[s] = dot;
		if (dot > maxv)
			maxv = dot;
	}
	float sum = 0.0f;
	for (int s = 0; s < n; s++) {
		att[s] = expf(att[s] - maxv);
		sum += att[s];
	}
	float inv = 1.0f / sum;
	for (int i = 0; i < hs; i++)
		out[i] = 0.0f;
	for (int s = 0; s < n; s++) {
		const float *vs = v + (size_t)s * ld;
		float p = att[s] * inv;
		att[s] = p; /* the probabilities stay for a trace */
		for (int i = 0; i < hs; i++)
			out[i] += p * vs[i];
	}
}

#define GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */

static void gelu_portable(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float v = x[i];
		float cube = 0.044715f * v * v * v;
		x[i] = 0.5f * v * (1.0f + tanhf(GELU_SCALING_FACTOR * (v + cube)));
	}
}

const gpt2_kernels gpt2_kernels_portable = {
	"portable", PANEL_PORTABLE, mv_portable, dots_portable, pack_portable,
	gemm_portable, attend_portable, gelu_portable,
};

/* ---- the choice ------------------------------------------------------------ */

const char *const gpt2_kernel_names[3] = {"portable", "avx2", "avx512"};

static int cpu_runs(const char *name)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (strcmp(name, "avx2") == 0)
		return __builtin_cpu_supports("avx2") &&
		       __builtin_cpu_supports("fma") &&
#if defined(__clang__)
		       /* clang cannot ask; every CPU with AVX2 has F16C. */
		       1;
#else
		       __builtin_cpu_supports("f16c");
#endif
	if (strcmp(name, "avx512") == 0)
		return __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") &&
		       __builtin_cpu_supports("avx512dq");
#endif
	return strcmp(name, "portable") == 0;
}

const gpt2_kernels *gpt2_kernels_find(const char *name)
{
	if (!cpu_runs(name))
		return NULL;
	if (strcmp(name, "portable") == 0)
		return &gpt2_kernels_portable;
#if defined(__x86_64__) && defined(__GNUC__)
	if (strcmp(name, "avx2") == 0)
		return &gpt2_kernels_avx2;
	if (strcmp(name, "avx512") == 0)
		return &gpt2_kernels_avx512;
#endif
	return NULL;
}

static struct {
	pthread_once_t once;
	const gpt2_kernels *k;
	char err[160];
} choice = {PTHREAD_ONCE_INIT, NULL, ""};

static void choose(void)
{
	const char *want = getenv("GPT2RUN_KERNEL");
	if (want && *want) {
		int known = 0;
		for (int i = 0; i < 3; i++)
			known |= strcmp(want, gpt2_kernel_names[i]) == 0;
		if (!known) {
			gpt2_err(choice.err, sizeof choice.err,
			         "GPT2RUN_KERNEL=%.40s: unknown (expected portable, "
			         "avx2 or avx512)", want);
			return;
		}
		choice.k = gpt2_kernels_find(want);
		if (!choice.k)
			gpt2_err(choice.err, sizeof choice.err,
			         "GPT2RUN_KERNEL=%s: this CPU cannot run it", want);
		return;
	}
	for (int i = 2; i >= 0 && !choice.k; i--)
		choice.k = gpt2_kernels_find(gpt2_kernel_names[i]);
}

int gpt2_kernels_default(const gpt2_kernels **out, char *err, size_t errlen)
{
	pthread_once(&choice.once, choose);
	*out = choice.k;
	return choice.k ? 0 : gpt2_err(err, errlen, "%s", choice.err);
}
