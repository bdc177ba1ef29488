/*
 * gpt2_forward.c - GPT-2's forward pass on the CPU: the layers and the
 * KV cache. The matmuls and attention run on the model's thread pool
 * (pool.c); the weights come from the model (gpt2.c).
 *
 * It is inference only (no backward pass, no training), written for
 * exactness first: F32 arithmetic and accumulation whatever dtype the
 * weights are held in, and every output element reduced by one thread in
 * a fixed order, so results do not depend on the thread count. It is not
 * yet tuned for speed (no SIMD intrinsics, no quantisation).
 *
 * Layouts: activations are row-major (T, C). Conv1D weights stay in HF's
 * [in, out] layout and are read directly (no transposed copy); the output
 * head reads wte as [V, C], i.e. a dot product per vocabulary row.
 */
#include "gpt2/gpt2.h"
#include "gpt2/internal.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading weights of any held dtype ----------------------------------- */

/*
 * F16 -> F32 by table: exact (st_f16_to_f32 fills it once), and cheap for
 * the short runs the kernels widen; st_convert is made for long ones.
 */
static float f16_table[65536];
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;

static void f16_table_init(void)
{
	for (uint32_t i = 0; i < 65536; i++)
		f16_table[i] = st_f16_to_f32((st_f16){(uint16_t)i});
}

/* n weights starting at element i of w (type wt), widened into buf. */
static const float *widen(const void *w, st_dtype wt, size_t i, size_t n,
                          float *buf)
{
	if (wt == ST_DTYPE_F32)
		return (const float *)w + i;
	const uint16_t *h = (const uint16_t *)w + i;
	if (wt == ST_DTYPE_BF16) {
		/* BF16 is the top half of an F32. */
		for (size_t k = 0; k < n; k++) {
			uint32_t bits = (uint32_t)h[k] << 16;
			memcpy(&buf[k], &bits, 4);
		}
		return buf;
	}
	pthread_once(&f16_once, f16_table_init);
	for (size_t k = 0; k < n; k++)
		buf[k] = f16_table[h[k]];
	return buf;
}

/* ---- matmul (Conv1D: w is [IN, OUT]) ------------------------------------- */

void gpt2_matmul_naive(float *out, const float *inp, const void *w,
                       st_dtype wt, const float *bias, int T, int IN,
                       int OUT)
{
	/* The definition, one output at a time; the fast one must agree. */
	for (int t = 0; t < T; t++) {
		for (int o = 0; o < OUT; o++) {
			float wv, acc = 0.0f;
			for (int i = 0; i < IN; i++) {
				const float *pw = widen(w, wt,
				                        (size_t)i * (size_t)OUT + (size_t)o,
				                        1, &wv);
				acc += inp[(size_t)t * (size_t)IN + (size_t)i] * *pw;
			}
			out[(size_t)t * (size_t)OUT + (size_t)o] =
				bias ? acc + bias[o] : acc;
		}
	}
}

/*
 * Tiles: TILE_O output columns by TILE_T rows per task, and inside a task
 * blocks of BLOCK_T rows that share each widened weight row. Each output
 * accumulates over i = 0..IN-1 in order, then adds the bias, exactly as
 * the naive loop does, so the two agree bit for bit.
 */
enum { TILE_O = 64, TILE_T = 32, BLOCK_T = 8 };

struct matmul_ctx {
	float *out;
	const float *inp;
	const void *w;
	st_dtype wt;
	const float *bias;
	int T, IN, OUT, tiles_o;
};

static void matmul_task(void *arg, int task, int thread)
{
	(void)thread;
	const struct matmul_ctx *c = arg;
	int o0 = (task % c->tiles_o) * TILE_O;
	int t0 = (task / c->tiles_o) * TILE_T;
	int no = c->OUT - o0 < TILE_O ? c->OUT - o0 : TILE_O;
	int t1 = c->T - t0 < TILE_T ? c->T : t0 + TILE_T;
	float acc[BLOCK_T][TILE_O];
	float wbuf[TILE_O];
	for (int tb = t0; tb < t1; tb += BLOCK_T) {
		int nt = t1 - tb < BLOCK_T ? t1 - tb : BLOCK_T;
		for (int r = 0; r < nt; r++)
			for (int o = 0; o < no; o++)
				acc[r][o] = 0.0f;
		for (int i = 0; i < c->IN; i++) {
			const float *wr = widen(c->w, c->wt,
			                        (size_t)i * (size_t)c->OUT + (size_t)o0,
			                        (size_t)no, wbuf);
			for (int r = 0; r < nt; r++) {
				float x = c->inp[(size_t)(tb + r) * (size_t)c->IN +
				                 (size_t)i];
				float *a = acc[r];
				for (int o = 0; o < no; o++)
					a[o] += x * wr[o];
			}
		}
		for (int r = 0; r < nt; r++) {
			float *dst = c->out + (size_t)(tb + r) * (size_t)c->OUT +
			             (size_t)o0;
			for (int o = 0; o < no; o++)
				dst[o] = c->bias ? acc[r][o] + c->bias[o0 + o]
				                 : acc[r][o];
		}
	}
}

void gpt2_matmul(gpt2_pool *pool, float *out, const float *inp,
                 const void *w, st_dtype wt, const float *bias, int T, int IN,
                 int OUT)
{
	struct matmul_ctx c = {out, inp, w, wt, bias, T, IN, OUT,
	                       (OUT + TILE_O - 1) / TILE_O};
	int tiles_t = (T + TILE_T - 1) / TILE_T;
	gpt2_pool_run(pool, matmul_task, &c, c.tiles_o * tiles_t);
}

/* ---- the output head (wte is [V, C]: a dot product per row) -------------- */

enum { HEAD_TILE_V = 64, HEAD_LANES = 8 };

struct head_ctx {
	float *logits;
	const float *inp;
	const void *wte;
	st_dtype wt;
	int T, C, V, tiles_v;
	float *scratch; /* (threads, C) widened rows */
};

static void head_task(void *arg, int task, int thread)
{
	const struct head_ctx *c = arg;
	int v0 = (task % c->tiles_v) * HEAD_TILE_V;
	int t0 = (task / c->tiles_v) * TILE_T;
	int v1 = c->V - v0 < HEAD_TILE_V ? c->V : v0 + HEAD_TILE_V;
	int t1 = c->T - t0 < TILE_T ? c->T : t0 + TILE_T;
	float *buf = c->scratch + (size_t)thread * (size_t)c->C;
	for (int v = v0; v < v1; v++) {
		const float *w = widen(c->wte, c->wt, (size_t)v * (size_t)c->C,
		                       (size_t)c->C, buf);
		for (int t = t0; t < t1; t++) {
			const float *x = c->inp + (size_t)t * (size_t)c->C;
			/* Lanes the compiler can vectorise, summed in a fixed order. */
			float lane[HEAD_LANES] = {0};
			int i = 0;
			for (; i + HEAD_LANES <= c->C; i += HEAD_LANES)
				for (int k = 0; k < HEAD_LANES; k++)
					lane[k] += x[i + k] * w[i + k];
			for (; i < c->C; i++)
				lane[0] += x[i] * w[i];
			float sum = 0.0f;
			for (int k = 0; k < HEAD_LANES; k++)
				sum += lane[k];
			c->logits[(size_t)t * (size_t)c->V + (size_t)v] = sum;
		}
	}
}

/* ---- the other layers ---------------------------------------------------- */

static void encoder_forward(float *out, const int32_t *ids, const void *wte,
                            const void *wpe, st_dtype wt, int T, int pos0,
                            int C, float *buf)
{
	/* out (T, C) = wte[id] + wpe[position]. */
	for (int t = 0; t < T; t++) {
		float *o = out + (size_t)t * (size_t)C;
		const float *te = widen(wte, wt, (size_t)ids[t] * (size_t)C,
		                        (size_t)C, buf);
		memcpy(o, te, (size_t)C * sizeof(float));
		const float *pe = widen(wpe, wt, (size_t)(pos0 + t) * (size_t)C,
		                        (size_t)C, buf);
		for (int i = 0; i < C; i++)
			o[i] += pe[i];
	}
}

static void layernorm_forward(float *out, const float *inp, const float *w,
                              const float *b, int T, int C, float eps)
{
	for (int t = 0; t < T; t++) {
		const float *x = inp + (size_t)t * (size_t)C;
		float *o = out + (size_t)t * (size_t)C;
		float mean = 0.0f;
		for (int i = 0; i < C; i++)
			mean += x[i];
		mean /= (float)C;
		float var = 0.0f;
		for (int i = 0; i < C; i++) {
			float d = x[i] - mean;
			var += d * d;
		}
		var /= (float)C; /* biased, as torch.nn.LayerNorm */
		float rstd = 1.0f / sqrtf(var + eps);
		for (int i = 0; i < C; i++)
			o[i] = (x[i] - mean) * rstd * w[i] + b[i];
	}
}

/* gelu_new: the tanh approximation GPT-2 was trained with. */
#define GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */
static void gelu_forward(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float v = x[i];
		float cube = 0.044715f * v * v * v;
		x[i] = 0.5f * v * (1.0f + tanhf(GELU_SCALING_FACTOR * (v + cube)));
	}
}

static void residual_forward(float *x, const float *add, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] += add[i];
}

/*
 * Causal self-attention over the cache. qkv (T, 3C) holds each token's
 * query, key and value (in that order: HF's c_attn packs Q, K, V); the
 * keys and values were appended to kc/vc (capacity, C) at positions
 * pos0..pos0+T-1 before this runs. One task per (token, head).
 */
struct attn_ctx {
	float *out;
	const float *qkv;
	const float *kc, *vc;
	int T, pos0, C, NH;
	float *scratch; /* (threads, capacity) */
	int capacity;
};

static void attention_task(void *arg, int task, int thread)
{
	const struct attn_ctx *c = arg;
	int t = task / c->NH, h = task % c->NH;
	int C = c->C, hs = C / c->NH, p = c->pos0 + t;
	float scale = 1.0f / sqrtf((float)hs);
	const float *q = c->qkv + (size_t)t * 3 * (size_t)C + (size_t)h * (size_t)hs;
	float *att = c->scratch + (size_t)thread * (size_t)c->capacity;
	float maxv = -INFINITY;
	for (int s = 0; s <= p; s++) {
		const float *k = c->kc + (size_t)s * (size_t)C + (size_t)h * (size_t)hs;
		float dot = 0.0f;
		for (int i = 0; i < hs; i++)
			dot += q[i] * k[i];
		dot *= scale;
		att[s] = dot;
		if (dot > maxv)
			maxv = dot;
	}
	float sum = 0.0f;
	for (int s = 0; s <= p; s++) {
		att[s] = expf(att[s] - maxv);
		sum += att[s];
	}
	float inv = 1.0f / sum;
	float *o = c->out + (size_t)t * (size_t)C + (size_t)h * (size_t)hs;
	for (int i = 0; i < hs; i++)
		o[i] = 0.0f;
	for (int s = 0; s <= p; s++) {
		const float *v = c->vc + (size_t)s * (size_t)C + (size_t)h * (size_t)hs;
		float a = att[s] * inv;
		for (int i = 0; i < hs; i++)
			o[i] += a * v[i];
	}
}

/* ---- the cache ------------------------------------------------------------ */

struct gpt2_cache {
	int capacity, len, C;
	float *k, *v; /* (L, capacity, C) */
	/* Activations of one call, grown as T grows. */
	int act_T;
	float *x, *ln, *qkv, *atty, *fch, *proj; /* (T, C) (T, 3C) (T, 4C) */
	/* Per-thread scratch: attention rows and widened weight rows. */
	int scratch_threads;
	float *att_scratch, *row_scratch;
};

int gpt2_cache_new(gpt2_cache **out, const gpt2_model *m, int capacity,
                   char *err, size_t errlen)
{
	const gpt2_config *cfg = &m->config;
	*out = NULL;
	if (capacity <= 0 || capacity > cfg->max_seq_len)
		capacity = cfg->max_seq_len;
	gpt2_cache *c = calloc(1, sizeof *c);
	if (!c)
		return gpt2_err(err, errlen, "out of memory for the KV cache");
	c->capacity = capacity;
	c->C = cfg->channels;
	size_t n = (size_t)cfg->num_layers * (size_t)capacity * (size_t)c->C;
	c->k = malloc(n * sizeof(float));
	c->v = malloc(n * sizeof(float));
	if (!c->k || !c->v) {
		gpt2_cache_free(c);
		return gpt2_err(err, errlen, "out of memory for the KV cache");
	}
	*out = c;
	return 0;
}

static void free_acts(gpt2_cache *c)
{
	free(c->x);
	free(c->ln);
	free(c->qkv);
	free(c->atty);
	free(c->fch);
	free(c->proj);
	c->x = c->ln = c->qkv = c->atty = c->fch = c->proj = NULL;
	c->act_T = 0;
}

void gpt2_cache_free(gpt2_cache *c)
{
	if (!c)
		return;
	free(c->k);
	free(c->v);
	free_acts(c);
	free(c->att_scratch);
	free(c->row_scratch);
	free(c);
}

int gpt2_cache_len(const gpt2_cache *c) { return c->len; }
int gpt2_cache_capacity(const gpt2_cache *c) { return c->capacity; }
void gpt2_cache_reset(gpt2_cache *c) { c->len = 0; }

static int ensure_acts(gpt2_cache *c, int T, int threads)
{
	if (T > c->act_T) {
		free_acts(c);
		size_t tc = (size_t)T * (size_t)c->C;
		c->x = malloc(tc * sizeof(float));
		c->ln = malloc(tc * sizeof(float));
		c->qkv = malloc(3 * tc * sizeof(float));
		c->atty = malloc(tc * sizeof(float));
		c->fch = malloc(4 * tc * sizeof(float));
		c->proj = malloc(tc * sizeof(float));
		if (!c->x || !c->ln || !c->qkv || !c->atty || !c->fch || !c->proj) {
			free_acts(c);
			return -1;
		}
		c->act_T = T;
	}
	if (threads > c->scratch_threads) {
		free(c->att_scratch);
		free(c->row_scratch);
		c->att_scratch = malloc((size_t)threads * (size_t)c->capacity *
		                        sizeof(float));
		c->row_scratch = malloc((size_t)threads * (size_t)c->C *
		                        sizeof(float));
		c->scratch_threads = threads;
		if (!c->att_scratch || !c->row_scratch) {
			c->scratch_threads = 0;
			return -1;
		}
	}
	return 0;
}

/* ---- the forward pass ---------------------------------------------------- */

int gpt2_forward(gpt2_model *m, gpt2_cache *c, const int32_t *ids, int T,
                 float *logits, int all_logits, char *err, size_t errlen)
{
	const gpt2_config *cfg = &m->config;
	const gpt2_params *P = &m->params;
	int C = cfg->channels, NH = cfg->num_heads, V = cfg->vocab_size;
	int L = cfg->num_layers;
	if (T < 1)
		return gpt2_err(err, errlen, "no tokens to run");
	if (T > c->capacity - c->len)
		return gpt2_err(err, errlen,
		                "the context is full: %d + %d tokens exceed %d "
		                "(n_positions %d)", c->len, T, c->capacity,
		                cfg->max_seq_len);
	for (int t = 0; t < T; t++)
		if (ids[t] < 0 || ids[t] >= V)
			return gpt2_err(err, errlen,
			                "token id %ld is outside the vocabulary (0..%d)",
			                (long)ids[t], V - 1);
	int threads = gpt2_pool_size(m->pool);
	if (ensure_acts(c, T, threads))
		return gpt2_err(err, errlen, "out of memory for %d tokens", T);
	gpt2_pool *pool = m->pool;
	st_dtype wt = m->wdtype;
	int pos0 = c->len;
	size_t TC = (size_t)T * (size_t)C;

	encoder_forward(c->x, ids, P->wte, P->wpe, wt, T, pos0, C,
	                c->row_scratch);
	for (int l = 0; l < L; l++) {
		size_t lc = (size_t)l * (size_t)C;
		float *kc = c->k + (size_t)l * (size_t)c->capacity * (size_t)C;
		float *vc = c->v + (size_t)l * (size_t)c->capacity * (size_t)C;
		const void *qkvw = gpt2_model_param(m, GPT2_QKVW, l, NULL);
		const void *attprojw = gpt2_model_param(m, GPT2_ATTPROJW, l, NULL);
		const void *fcw = gpt2_model_param(m, GPT2_FCW, l, NULL);
		const void *fcprojw = gpt2_model_param(m, GPT2_FCPROJW, l, NULL);

		layernorm_forward(c->ln, c->x, P->ln1w + lc, P->ln1b + lc, T, C,
		                  cfg->layer_norm_eps);
		gpt2_matmul(pool, c->qkv, c->ln, qkvw, wt, P->qkvb + 3 * lc, T, C,
		            3 * C);
		for (int t = 0; t < T; t++) {
			const float *row = c->qkv + (size_t)t * 3 * (size_t)C;
			memcpy(kc + (size_t)(pos0 + t) * (size_t)C, row + C,
			       (size_t)C * sizeof(float));
			memcpy(vc + (size_t)(pos0 + t) * (size_t)C, row + 2 * C,
			       (size_t)C * sizeof(float));
		}
		struct attn_ctx ac = {c->atty, c->qkv, kc, vc, T, pos0, C, NH,
		                      c->att_scratch, c->capacity};
		gpt2_pool_run(pool, attention_task, &ac, T * NH);
		gpt2_matmul(pool, c->proj, c->atty, attprojw, wt, P->attprojb + lc,
		            T, C, C);
		residual_forward(c->x, c->proj, TC);

		layernorm_forward(c->ln, c->x, P->ln2w + lc, P->ln2b + lc, T, C,
		                  cfg->layer_norm_eps);
		gpt2_matmul(pool, c->fch, c->ln, fcw, wt, P->fcb + 4 * lc, T, C,
		            4 * C);
		gelu_forward(c->fch, 4 * TC);
		gpt2_matmul(pool, c->proj, c->fch, fcprojw, wt, P->fcprojb + lc, T,
		            4 * C, C);
		residual_forward(c->x, c->proj, TC);
	}
	/* Only the rows whose logits are wanted go through ln_f and the head. */
	int first = all_logits ? 0 : T - 1, rows = T - first;
	layernorm_forward(c->ln, c->x + (size_t)first * (size_t)C, P->lnfw,
	                  P->lnfb, rows, C, cfg->layer_norm_eps);
	/* In blocks of rows, so that the task count stays far inside an int. */
	for (int r0 = 0; r0 < rows; r0 += 128 * TILE_T) {
		int nr = rows - r0 < 128 * TILE_T ? rows - r0 : 128 * TILE_T;
		struct head_ctx hc = {logits + (size_t)r0 * (size_t)V,
		                      c->ln + (size_t)r0 * (size_t)C, P->wte, wt, nr,
		                      C, V, (V + HEAD_TILE_V - 1) / HEAD_TILE_V,
		                      c->row_scratch};
		gpt2_pool_run(pool, head_task, &hc,
		         hc.tiles_v * ((nr + TILE_T - 1) / TILE_T));
	}
	c->len += T;
	return 0;
}
