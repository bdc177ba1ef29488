/*
 * gpt2_forward.c - GPT-2's forward pass on the CPU: the layers and the
 * KV cache, split into tasks for the model's thread pool (pool.c); the
 * inner loops are the model's kernel table (kernels.h), the weights come
 * from the model (gpt2.c).
 *
 * It is inference only (no backward pass, no training): F32 arithmetic
 * and accumulation whatever dtype the weights are held in, and every
 * output element reduced by one task in a fixed order, so results do not
 * depend on the thread count.
 *
 * Two shapes of work. Decoding one token reads every weight once for a
 * handful of flops: the matmuls stream each weight matrix front to back
 * in blocks of rows (memory bound). A prompt reuses each weight for all
 * its tokens: the matmuls pack a panel of weight columns into F32 and run
 * a register-tiled kernel over every token (compute bound). Both keep the
 * weights where the model holds them (one copy, no repacking at load).
 *
 * Layouts: activations are row-major (T, C). Conv1D weights stay in HF's
 * [in, out] layout; the output head reads wte as [V, C], a dot product
 * per vocabulary row, and only for the rows whose logits are wanted.
 */
#include "gpt2/gpt2.h"
#include "gpt2/internal.h"
#include "gpt2/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- widening rows (the embeddings) ------------------------------------- */

/* n weights from element i of w (type wt) into dst as F32 (exact). */
static void widen_row(float *dst, const void *w, st_dtype wt, size_t i,
                      size_t n)
{
	const char *src = (const char *)w + i * gpt2_dtype_size(wt);
	st_convert(ST_DTYPE_F32, dst, wt, src, n, NULL);
}

/* ---- matmul (Conv1D: w is [IN, OUT]) ------------------------------------- */

void gpt2_matmul_naive(float *out, const float *inp, const void *w,
                       st_dtype wt, const float *bias, int T, int IN,
                       int OUT)
{
	/* The definition, one output at a time, in double: the reference. */
	for (int t = 0; t < T; t++) {
		for (int o = 0; o < OUT; o++) {
			double acc = 0.0;
			for (int i = 0; i < IN; i++) {
				float wv;
				widen_row(&wv, w, wt, (size_t)i * (size_t)OUT + (size_t)o, 1);
				acc += (double)inp[(size_t)t * (size_t)IN + (size_t)i] * wv;
			}
			out[(size_t)t * (size_t)OUT + (size_t)o] =
				(float)(bias ? acc + bias[o] : acc);
		}
	}
}

/*
 * Decode (T = 1) streams the weights once in blocks of MV_ROWS rows, one
 * block per task: each task sums its rows into a partial output row, and
 * the partial rows are added in block order afterwards. The blocks do not
 * depend on the thread count, so neither do the sums.
 */
enum { MV_ROWS = 64 };

/* Scratch of one matmul: per-thread panels, the decode partial rows. */
struct mm_scratch {
	float *panels;       /* (threads, IN max, panel) */
	size_t panel_floats; /* per thread */
	float *part;         /* (blocks, OUT) */
};

struct mm_ctx {
	const gpt2_kernels *k;
	float *out;
	const float *inp;
	const void *w;
	st_dtype wt;
	const float *bias;
	int T, IN, OUT;
	const struct mm_scratch *s;
};

static void mv_task(void *arg, int task, int thread)
{
	(void)thread;
	const struct mm_ctx *c = arg;
	int r0 = task * MV_ROWS;
	int rows = c->IN - r0 < MV_ROWS ? c->IN - r0 : MV_ROWS;
	const char *w = (const char *)c->w +
	                (size_t)r0 * (size_t)c->OUT * gpt2_dtype_size(c->wt);
	c->k->mv(c->s->part + (size_t)task * (size_t)c->OUT, c->inp + r0, w,
	         c->wt, rows, c->OUT);
}

static void gemm_task(void *arg, int task, int thread)
{
	const struct mm_ctx *c = arg;
	int P = c->k->panel, o0 = task * P;
	int nc = c->OUT - o0 < P ? c->OUT - o0 : P;
	float *panel = c->s->panels + (size_t)thread * c->s->panel_floats;
	c->k->pack(panel, c->w, c->wt, c->IN, c->OUT, o0);
	c->k->gemm(c->out + o0, (size_t)c->OUT, c->inp, (size_t)c->IN, panel,
	           c->bias ? c->bias + o0 : NULL, c->T, c->IN, nc);
}

static void matmul_run(const gpt2_kernels *k, gpt2_pool *pool,
                       const struct mm_scratch *s, float *out,
                       const float *inp, const void *w, st_dtype wt,
                       const float *bias, int T, int IN, int OUT)
{
	struct mm_ctx c = {k, out, inp, w, wt, bias, T, IN, OUT, s};
	if (T > 1) {
		gpt2_pool_run(pool, gemm_task, &c, (OUT + k->panel - 1) / k->panel);
		return;
	}
	int blocks = (IN + MV_ROWS - 1) / MV_ROWS;
	gpt2_pool_run(pool, mv_task, &c, blocks);
	memcpy(out, s->part, (size_t)OUT * sizeof(float));
	for (int b = 1; b < blocks; b++) {
		const float *p = s->part + (size_t)b * (size_t)OUT;
		for (int o = 0; o < OUT; o++)
			out[o] += p[o];
	}
	if (bias)
		for (int o = 0; o < OUT; o++)
			out[o] += bias[o];
}

/* Floats of scratch a matmul of IN inputs and OUT outputs needs. */
static size_t mm_part_floats(int IN, int OUT)
{
	return (size_t)((IN + MV_ROWS - 1) / MV_ROWS) * (size_t)OUT;
}

int gpt2_matmul(const gpt2_kernels *k, gpt2_pool *pool, float *out,
                const float *inp, const void *w, st_dtype wt,
                const float *bias, int T, int IN, int OUT, char *err,
                size_t errlen)
{
	int threads = gpt2_pool_size(pool);
	struct mm_scratch s;
	s.panel_floats = (size_t)IN * (size_t)k->panel;
	s.panels = malloc((size_t)threads * s.panel_floats * sizeof(float));
	s.part = malloc(mm_part_floats(IN, OUT) * sizeof(float));
	if (!s.panels || !s.part) {
		free(s.panels);
		free(s.part);
		return gpt2_err(err, errlen, "out of memory");
	}
	matmul_run(k, pool, &s, out, inp, w, wt, bias, T, IN, OUT);
	free(s.panels);
	free(s.part);
	return 0;
}

/* ---- the output head (wte is [V, C]: a dot product per row) -------------- */

enum { HEAD_ROWS = 256 };

struct head_ctx {
	const gpt2_kernels *k;
	float *logits;
	const float *inp;
	const void *wte;
	st_dtype wt;
	int T, C, V;
};

static void head_task(void *arg, int task, int thread)
{
	(void)thread;
	const struct head_ctx *c = arg;
	int v0 = task * HEAD_ROWS;
	int nv = c->V - v0 < HEAD_ROWS ? c->V - v0 : HEAD_ROWS;
	const char *w = (const char *)c->wte +
	                (size_t)v0 * (size_t)c->C * gpt2_dtype_size(c->wt);
	for (int t = 0; t < c->T; t++)
		c->k->dots(c->logits + (size_t)t * (size_t)c->V + (size_t)v0,
		           c->inp + (size_t)t * (size_t)c->C, w, c->wt, c->C, nv);
}

/* ---- the other layers ---------------------------------------------------- */

static void encoder_forward(float *out, const int32_t *ids, const void *wte,
                            const void *wpe, st_dtype wt, int T, int pos0,
                            int C, float *buf)
{
	/* out (T, C) = wte[id] + wpe[position]. */
	for (int t = 0; t < T; t++) {
		float *o = out + (size_t)t * (size_t)C;
		widen_row(o, wte, wt, (size_t)ids[t] * (size_t)C, (size_t)C);
		widen_row(buf, wpe, wt, (size_t)(pos0 + t) * (size_t)C, (size_t)C);
		for (int i = 0; i < C; i++)
			o[i] += buf[i];
	}
}

static void layernorm_rows(float *out, const float *inp, const float *w,
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

/*
 * The row-wise layers of a prompt, ROWS_PER_TASK rows a task: LayerNorm,
 * gelu, the residual add. Each row is computed the same way whatever
 * the split.
 */
enum { ROWS_PER_TASK = 16 };

enum row_op { ROW_LAYERNORM, ROW_GELU, ROW_RESIDUAL };

struct rows_ctx {
	const gpt2_kernels *k;
	enum row_op op;
	float *out;
	const float *inp, *w, *b;
	int T, C; /* C: floats per row */
	float eps;
};

static void rows_task(void *arg, int task, int thread)
{
	(void)thread;
	const struct rows_ctx *c = arg;
	int t0 = task * ROWS_PER_TASK;
	int nt = c->T - t0 < ROWS_PER_TASK ? c->T - t0 : ROWS_PER_TASK;
	size_t off = (size_t)t0 * (size_t)c->C, n = (size_t)nt * (size_t)c->C;
	switch (c->op) {
	case ROW_LAYERNORM:
		layernorm_rows(c->out + off, c->inp + off, c->w, c->b, nt, c->C,
		               c->eps);
		break;
	case ROW_GELU:
		c->k->gelu(c->out + off, n);
		break;
	case ROW_RESIDUAL:
		for (size_t i = 0; i < n; i++)
			c->out[off + i] += c->inp[off + i];
		break;
	}
}

static void rows_run(gpt2_pool *pool, const struct rows_ctx *c)
{
	gpt2_pool_run(pool, rows_task, (void *)c,
	              (c->T + ROWS_PER_TASK - 1) / ROWS_PER_TASK);
}

/*
 * Causal self-attention over the cache. qkv (T, 3C) holds each token's
 * query, key and value (in that order: HF's c_attn packs Q, K, V); the
 * keys and values were appended to kc/vc (NH, capacity, hs) at positions
 * pos0..pos0+T-1 before this runs: each head's keys lie one after the
 * other, so that attending reads them front to back. One task per
 * (token, head).
 */
struct attn_ctx {
	const gpt2_kernels *k;
	float *out;
	const float *qkv;
	const float *kc, *vc;
	int T, pos0, C, NH;
	float *scratch; /* (threads, capacity) */
	int capacity;
	float *probs; /* a trace's (T, NH, n_keys) probabilities, or NULL */
	int n_keys;
};

static void attention_task(void *arg, int task, int thread)
{
	const struct attn_ctx *c = arg;
	int t = task / c->NH, h = task % c->NH;
	int C = c->C, hs = C / c->NH, p = c->pos0 + t;
	float scale = 1.0f / sqrtf((float)hs);
	size_t ho = (size_t)h * (size_t)hs;
	size_t kvo = (size_t)h * (size_t)c->capacity * (size_t)hs;
	c->k->attend(c->out + (size_t)t * (size_t)C + ho,
	             c->qkv + (size_t)t * 3 * (size_t)C + ho, c->kc + kvo,
	             c->vc + kvo, (size_t)hs, p + 1, hs, scale,
	             c->scratch + (size_t)thread * (size_t)c->capacity);
	if (c->probs) {
		/* attend leaves the probabilities it used in its scratch. */
		const float *att = c->scratch + (size_t)thread * (size_t)c->capacity;
		float *pr = c->probs + ((size_t)t * (size_t)c->NH + (size_t)h) *
		                           (size_t)c->n_keys;
		for (int s = 0; s < c->n_keys; s++)
			pr[s] = s <= p ? att[s] : 0.0f;
	}
}

/* ---- the cache ------------------------------------------------------------ */

struct gpt2_cache {
	int capacity, len, C;
	float *k, *v; /* (L, NH, capacity, hs), kv_bytes each */
	size_t kv_bytes;
	/* Activations of one call, grown as T grows. */
	int act_T;
	float *x, *ln, *qkv, *atty, *fch, *proj; /* (T, C) (T, 3C) (T, 4C) */
	/* Per-thread scratch (attention rows, packed panels), partial rows. */
	int scratch_threads, scratch_panel;
	float *att_scratch, *row;
	struct mm_scratch mm;
	/* A trace (gpt2_cache_set_trace) and its attention probabilities. */
	gpt2_trace_fn trace;
	void *trace_ctx;
	float *trace_probs;
	size_t trace_probs_n;
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
	c->kv_bytes = n * sizeof(float);
	c->k = gpt2_big_alloc(c->kv_bytes);
	c->v = gpt2_big_alloc(c->kv_bytes);
	/* Decode's partial rows: the largest of the four matmuls. */
	size_t part = mm_part_floats(c->C, 4 * c->C);
	if (mm_part_floats(4 * c->C, c->C) > part)
		part = mm_part_floats(4 * c->C, c->C);
	c->mm.part = malloc(part * sizeof(float));
	c->row = malloc((size_t)c->C * sizeof(float));
	if (!c->k || !c->v || !c->mm.part || !c->row) {
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
	gpt2_big_free(c->k, c->kv_bytes);
	gpt2_big_free(c->v, c->kv_bytes);
	free_acts(c);
	free(c->att_scratch);
	free(c->mm.panels);
	free(c->mm.part);
	free(c->row);
	free(c->trace_probs);
	free(c);
}

void gpt2_cache_set_trace(gpt2_cache *c, gpt2_trace_fn fn, void *ctx)
{
	c->trace = fn;
	c->trace_ctx = ctx;
}

int gpt2_cache_len(const gpt2_cache *c) { return c->len; }
int gpt2_cache_capacity(const gpt2_cache *c) { return c->capacity; }
void gpt2_cache_reset(gpt2_cache *c) { c->len = 0; }

/* Grow the activations to T rows and the scratch to threads; no-op after
 * the first call of a sequence's size, so decoding allocates nothing. */
static int ensure_acts(gpt2_cache *c, int T, int threads, int panel)
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
	if (threads > c->scratch_threads || panel != c->scratch_panel) {
		free(c->att_scratch);
		free(c->mm.panels);
		c->mm.panel_floats = 4 * (size_t)c->C * (size_t)panel;
		c->att_scratch = malloc((size_t)threads * (size_t)c->capacity *
		                        sizeof(float));
		c->mm.panels = malloc((size_t)threads * c->mm.panel_floats *
		                      sizeof(float));
		c->scratch_threads = threads;
		c->scratch_panel = panel;
		if (!c->att_scratch || !c->mm.panels) {
			c->scratch_threads = 0;
			return -1;
		}
	}
	return 0;
}

/* ---- the forward pass ---------------------------------------------------- */

#define TRACE(stage, layer, values, rows, width)                             \
	do {                                                                 \
		if (c->trace)                                                \
			c->trace(c->trace_ctx, stage, layer, values, rows,   \
			         (size_t)(width));                           \
	} while (0)

/*
 * A trace's token and position embeddings (what encoder_forward adds),
 * widened into buf (T, C), then its attention probability buffer.
 */
static int trace_start(gpt2_cache *c, const gpt2_params *P, st_dtype wt,
                       const int32_t *ids, int T, int pos0, int C, int NH,
                       float *buf)
{
	size_t n = (size_t)T * (size_t)NH * (size_t)(pos0 + T);
	if (n > c->trace_probs_n) {
		free(c->trace_probs);
		c->trace_probs_n = 0;
		c->trace_probs = malloc(n * sizeof(float));
		if (!c->trace_probs)
			return -1;
		c->trace_probs_n = n;
	}
	for (int t = 0; t < T; t++)
		widen_row(buf + (size_t)t * (size_t)C, P->wte, wt,
		          (size_t)ids[t] * (size_t)C, (size_t)C);
	TRACE(GPT2_STAGE_WTE, -1, buf, T, C);
	for (int t = 0; t < T; t++)
		widen_row(buf + (size_t)t * (size_t)C, P->wpe, wt,
		          (size_t)(pos0 + t) * (size_t)C, (size_t)C);
	TRACE(GPT2_STAGE_WPE, -1, buf, T, C);
	return 0;
}

int gpt2_forward(gpt2_model *m, gpt2_cache *c, const int32_t *ids, int T,
                 float *logits, int all_logits, char *err, size_t errlen)
{
	const gpt2_config *cfg = &m->config;
	const gpt2_params *P = &m->params;
	const gpt2_kernels *K = m->kernels;
	int C = cfg->channels, NH = cfg->num_heads, V = cfg->vocab_size;
	int L = cfg->num_layers;
	float eps = cfg->layer_norm_eps;
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
	if (ensure_acts(c, T, threads, K->panel))
		return gpt2_err(err, errlen, "out of memory for %d tokens", T);
	gpt2_pool *pool = m->pool;
	st_dtype wt = m->wdtype;
	int pos0 = c->len;
	const struct mm_scratch *mm = &c->mm;
	struct rows_ctx ln = {K, ROW_LAYERNORM, c->ln, c->x, NULL, NULL, T, C, eps};
	struct rows_ctx res = {K, ROW_RESIDUAL, c->x, c->proj, NULL, NULL, T, C, 0};
	struct rows_ctx gelu = {K, ROW_GELU, c->fch, NULL, NULL, NULL, T, 4 * C, 0};

	if (c->trace && trace_start(c, P, wt, ids, T, pos0, C, NH, c->ln))
		return gpt2_err(err, errlen, "out of memory for the attention "
		                "probabilities of a trace");
	float *probs = c->trace ? c->trace_probs : NULL;
	encoder_forward(c->x, ids, P->wte, P->wpe, wt, T, pos0, C, c->row);
	TRACE(GPT2_STAGE_EMBED, -1, c->x, T, C);
	for (int l = 0; l < L; l++) {
		size_t lc = (size_t)l * (size_t)C;
		float *kc = c->k + (size_t)l * (size_t)c->capacity * (size_t)C;
		float *vc = c->v + (size_t)l * (size_t)c->capacity * (size_t)C;
		const void *qkvw = gpt2_model_param(m, GPT2_QKVW, l, NULL);
		const void *attprojw = gpt2_model_param(m, GPT2_ATTPROJW, l, NULL);
		const void *fcw = gpt2_model_param(m, GPT2_FCW, l, NULL);
		const void *fcprojw = gpt2_model_param(m, GPT2_FCPROJW, l, NULL);

		ln.w = P->ln1w + lc;
		ln.b = P->ln1b + lc;
		rows_run(pool, &ln);
		TRACE(GPT2_STAGE_LN1, l, c->ln, T, C);
		matmul_run(K, pool, mm, c->qkv, c->ln, qkvw, wt, P->qkvb + 3 * lc,
		           T, C, 3 * C);
		TRACE(GPT2_STAGE_QKV, l, c->qkv, T, 3 * C);
		size_t hs = (size_t)(C / NH);
		for (int t = 0; t < T; t++) {
			const float *row = c->qkv + (size_t)t * 3 * (size_t)C;
			for (int h = 0; h < NH; h++) {
				size_t at = ((size_t)h * (size_t)c->capacity +
				             (size_t)(pos0 + t)) * hs;
				memcpy(kc + at, row + C + (size_t)h * hs, hs * sizeof(float));
				memcpy(vc + at, row + 2 * C + (size_t)h * hs, hs * sizeof(float));
			}
		}
		struct attn_ctx ac = {K, c->atty, c->qkv, kc, vc, T, pos0, C, NH,
		                      c->att_scratch, c->capacity, probs, pos0 + T};
		gpt2_pool_run(pool, attention_task, &ac, T * NH);
		TRACE(GPT2_STAGE_ATTN_WEIGHTS, l, probs, T,
		      (size_t)NH * (size_t)(pos0 + T));
		TRACE(GPT2_STAGE_ATTN_OUT, l, c->atty, T, C);
		matmul_run(K, pool, mm, c->proj, c->atty, attprojw, wt,
		           P->attprojb + lc, T, C, C);
		TRACE(GPT2_STAGE_ATTN_PROJ, l, c->proj, T, C);
		rows_run(pool, &res);
		TRACE(GPT2_STAGE_RESID_MID, l, c->x, T, C);

		ln.w = P->ln2w + lc;
		ln.b = P->ln2b + lc;
		rows_run(pool, &ln);
		TRACE(GPT2_STAGE_LN2, l, c->ln, T, C);
		matmul_run(K, pool, mm, c->fch, c->ln, fcw, wt, P->fcb + 4 * lc, T,
		           C, 4 * C);
		TRACE(GPT2_STAGE_FC, l, c->fch, T, 4 * C);
		rows_run(pool, &gelu);
		TRACE(GPT2_STAGE_GELU, l, c->fch, T, 4 * C);
		matmul_run(K, pool, mm, c->proj, c->fch, fcprojw, wt,
		           P->fcprojb + lc, T, 4 * C, C);
		TRACE(GPT2_STAGE_MLP_PROJ, l, c->proj, T, C);
		rows_run(pool, &res);
		TRACE(GPT2_STAGE_RESID, l, c->x, T, C);
	}
	/* Only the rows whose logits are wanted go through ln_f and the head. */
	int first = all_logits ? 0 : T - 1, rows = T - first;
	struct rows_ctx lnf = {K, ROW_LAYERNORM, c->ln, c->x + (size_t)first * (size_t)C,
	                       P->lnfw, P->lnfb, rows, C, eps};
	rows_run(pool, &lnf);
	TRACE(GPT2_STAGE_LNF, -1, c->ln, rows, C);
	/* In blocks of rows, so that a block of wte is reused from cache. */
	for (int r0 = 0; r0 < rows; r0 += 64) {
		int nr = rows - r0 < 64 ? rows - r0 : 64;
		struct head_ctx hc = {K, logits + (size_t)r0 * (size_t)V,
		                      c->ln + (size_t)r0 * (size_t)C, P->wte, wt, nr,
		                      C, V};
		gpt2_pool_run(pool, head_task, &hc, (V + HEAD_ROWS - 1) / HEAD_ROWS);
	}
	TRACE(GPT2_STAGE_LOGITS, -1, logits, rows, V);
	c->len += T;
	return 0;
}
