/*
 * llama_forward.c - the Llama family's forward pass on the CPU (the block
 * of llama.h), split into tasks for the model's thread pool; the inner
 * loops are gpt2's kernel table (kernels.h), the weights are read where
 * the checkpoint holds them, in F32, F16 or BF16, widened in registers.
 *
 * nn.Linear weights are [out, in]: decoding one token (or a few) is a dot
 * product per output row (the kernels' dots, rows in blocks, one block a
 * task, every token through a block while it is in cache); a prompt of
 * GEMM_MIN_T tokens or more is a matmul: a panel of output rows is
 * transposed and widened into F32 (IN, panel) and the register-tiled
 * gemm runs every token through it, so each weight is read once per
 * prompt, not once per token. Every output element is reduced by one
 * task in a fixed order: results do not depend on the thread count.
 */
#include "gpt2/internal.h"
#include "gpt2/kernels.h"
#include "gpt2/llama.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { DOT_ROWS = 64, ROWS_PER_TASK = 16, GEMM_MIN_T = 16 };

struct llama_cache {
	int capacity, len;
	int L, NKV, hd;
	float *k, *v; /* (L, NKV, capacity, hd) */
	size_t kv_bytes;
	int act_T;
	float *x, *xn, *q, *kk, *vv, *att, *proj, *gate, *up;
	float *rope; /* (T, hd): rope_table's angles */
	int scratch_threads;
	float *att_scratch; /* (threads, capacity) */
	float *panels;      /* (threads, max IN, panel) */
	float *rows;        /* (threads, max IN padded): a row, or FP8's xs */
	float *px;          /* (3, GEMM_MIN_T - 1, max IN padded): FP8's prepared x */
	size_t panel_floats, max_in, px_floats;
	llama_trace_fn trace;
	void *trace_ctx;
};

/* ---- Linear: out (T, OUT) = inp (T, IN) W^T + b, W [OUT, IN] ------------- */

struct lin_ctx {
	const gpt2_kernels *k;
	const llama_cache *c;
	float *out;
	const float *inp;
	llama_mat w;
	const float *bias;
	int T, IN, OUT;
	const float *px; /* FP8 decode: inp as llama_fp8_prepare left it, rows of max_in */
};

static void dot_task(void *arg, int task, int thread)
{
	const struct lin_ctx *c = arg;
	int o0 = task * DOT_ROWS;
	int n = c->OUT - o0 < DOT_ROWS ? c->OUT - o0 : DOT_ROWS;
	const char *w =
		(const char *)c->w.w + (size_t)o0 * (size_t)c->IN * gpt2_dtype_size(c->w.dt);
	/* Every token through this block of rows while it is in cache. */
	for (int t = 0; t < c->T; t++) {
		float *out = c->out + (size_t)t * (size_t)c->OUT + o0;
		const float *x = c->inp + (size_t)t * (size_t)c->IN;
		if (c->w.lut)
			llama_fp8_dots(c->k, out, c->px + (size_t)t * c->c->max_in, &c->w, c->IN,
			               o0, n, c->c->rows + (size_t)thread * c->c->max_in);
		else
			c->k->dots(out, x, w, c->w.dt, c->IN, n);
		if (c->bias)
			for (int o = 0; o < n; o++)
				out[o] += c->bias[o0 + o];
	}
}

/* Rows o0.. of W, transposed and widened, into panel (IN, P). */
static void pack_rows(float *panel, float *row, llama_mat w, int IN, int OUT, int o0, int P)
{
	size_t es = gpt2_dtype_size(w.dt);
	for (int j = 0; j < P; j++) {
		if (o0 + j >= OUT) {
			for (int i = 0; i < IN; i++)
				panel[(size_t)i * (size_t)P + (size_t)j] = 0.0f;
			continue;
		}
		const char *src = (const char *)w.w + (size_t)(o0 + j) * (size_t)IN * es;
		if (w.lut)
			llama_fp8_row(row, &w, IN, o0 + j);
		else
			st_convert(ST_DTYPE_F32, row, w.dt, src, (size_t)IN, NULL);
		for (int i = 0; i < IN; i++)
			panel[(size_t)i * (size_t)P + (size_t)j] = row[i];
	}
}

static void gemm_task(void *arg, int task, int thread)
{
	const struct lin_ctx *c = arg;
	int P = c->k->panel, o0 = task * P;
	int nc = c->OUT - o0 < P ? c->OUT - o0 : P;
	float *panel = c->c->panels + (size_t)thread * c->c->panel_floats;
	float *row = c->c->rows + (size_t)thread * c->c->max_in;
	pack_rows(panel, row, c->w, c->IN, c->OUT, o0, P);
	c->k->gemm(c->out + o0, (size_t)c->OUT, c->inp, (size_t)c->IN, panel,
	           c->bias ? c->bias + o0 : NULL, c->T, c->IN, nc);
}

/* Products sharing one input, run as one batch of the pool (q, k and v;
 * gate and up): fewer batches, so fewer waits for every thread. */
struct lin_batch {
	struct lin_ctx job[3];
	int first[4]; /* task numbers where each job starts, then the end */
	int n, gemm;
};

static void batch_task(void *arg, int task, int thread)
{
	struct lin_batch *b = arg;
	int j = 0;
	while (task >= b->first[j + 1])
		j++;
	(b->gemm ? gemm_task : dot_task)(&b->job[j], task - b->first[j], thread);
}

static void batch_add(struct lin_batch *b, const llama_model *m, const llama_cache *c, float *out,
                      const float *inp, llama_mat w, const float *bias, int T, int IN, int OUT)
{
	const gpt2_kernels *K = m->kernels;
	/* A few tokens: dot products (packing panels would cost more than
	 * it saves); a prompt: the packed-panel matmul. */
	b->gemm = T >= GEMM_MIN_T;
	int per = b->gemm ? K->panel : DOT_ROWS;
	b->job[b->n] = (struct lin_ctx){K, c, out, inp, w, bias, T, IN, OUT, NULL};
	b->first[b->n + 1] = b->first[b->n] + (OUT + per - 1) / per;
	b->n++;
}

/*
 * FP8 decode: each job's input prepared once (llama_fp8_prepare) into a
 * slot of c->px, shared by every task and by the jobs of the same input
 * and layout (q, k and v; gate and up), before the tasks run.
 */
static void batch_prepare(struct lin_batch *b, const llama_cache *c)
{
	int layout[3];
	for (int j = 0; j < b->n; j++) {
		struct lin_ctx *l = &b->job[j];
		if (b->gemm || !l->w.lut)
			continue;
		layout[j] = llama_fp8_layout(l->k, &l->w);
		for (int i = 0; i < j && !l->px; i++)
			if (b->job[i].px && b->job[i].inp == l->inp && layout[i] == layout[j])
				l->px = b->job[i].px;
		if (l->px)
			continue;
		float *px = c->px + (size_t)j * (GEMM_MIN_T - 1) * c->max_in;
		for (int t = 0; t < l->T; t++)
			llama_fp8_prepare(px + (size_t)t * c->max_in,
			                  l->inp + (size_t)t * (size_t)l->IN, l->IN, layout[j]);
		l->px = px;
	}
}

static void batch_run(const llama_model *m, struct lin_batch *b)
{
	batch_prepare(b, b->job[0].c);
	gpt2_pool_run(m->pool, batch_task, b, b->first[b->n]);
}

static void linear(const llama_model *m, const llama_cache *c, float *out, const float *inp,
                   llama_mat w, const float *bias, int T, int IN, int OUT)
{
	struct lin_batch b = {.n = 0};
	batch_add(&b, m, c, out, inp, w, bias, T, IN, OUT);
	batch_run(m, &b);
}

/* ---- row-wise layers ------------------------------------------------------ */

/* x (n) * rsqrt(mean(x^2) + eps) * w, as LlamaRMSNorm in F32. */
static void rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
	float ss = 0.0f;
	for (int i = 0; i < n; i++)
		ss += x[i] * x[i];
	float r = 1.0f / sqrtf(ss / (float)n + eps);
	for (int i = 0; i < n; i++)
		out[i] = w[i] * (x[i] * r);
}

enum row_op { ROW_NORM, ROW_SWIGLU, ROW_RESIDUAL };

struct rows_ctx {
	enum row_op op;
	float *out;
	const float *inp, *w;
	int T, C; /* C: floats per row; the norm's width */
	float eps;
};

static void rows_task(void *arg, int task, int thread)
{
	(void)thread;
	const struct rows_ctx *c = arg;
	int t0 = task * ROWS_PER_TASK;
	int nt = c->T - t0 < ROWS_PER_TASK ? c->T - t0 : ROWS_PER_TASK;
	for (int t = t0; t < t0 + nt; t++) {
		size_t off = (size_t)t * (size_t)c->C;
		float *o = c->out + off;
		const float *x = c->inp + off;
		switch (c->op) {
		case ROW_NORM: rmsnorm(o, x, c->w, c->C, c->eps); break;
		case ROW_SWIGLU: /* out = gate: silu(gate) * up */
			for (int i = 0; i < c->C; i++)
				o[i] = o[i] / (1.0f + expf(-o[i])) * x[i];
			break;
		case ROW_RESIDUAL:
			for (int i = 0; i < c->C; i++)
				o[i] += x[i];
			break;
		}
	}
}

static void rows_run(gpt2_pool *pool, struct rows_ctx c)
{
	if (c.T <= ROWS_PER_TASK) { /* one task: no batch to wait for */
		rows_task(&c, 0, 0);
		return;
	}
	gpt2_pool_run(pool, rows_task, &c, (c.T + ROWS_PER_TASK - 1) / ROWS_PER_TASK);
}

/*
 * The rotary angles of T positions pos0..: cs (T, hd), cos of position t's
 * angles in the first hd/2, sin in the rest; one table for every head of
 * every layer.
 */
static void rope_table(float *cs, int T, int hd, int pos0, const float *inv_freq)
{
	int half = hd / 2;
	for (int t = 0; t < T; t++) {
		float pos = (float)(pos0 + t), *row = cs + (size_t)t * (size_t)hd;
		for (int i = 0; i < half; i++) {
			float f = pos * inv_freq[i];
			row[i] = cosf(f);
			row[half + i] = sinf(f);
		}
	}
}

/*
 * The rotary embedding of q (T, NH, hd) or k (T, NKV, hd) in place, with
 * rope_table's angles, rotate-half: element i and i + hd/2 of a head form
 * a pair (transformers' rotate_half), not i and i + 1 (GGUF's interleaved
 * layout, doc/llama.md).
 */
static void rope_heads(float *x, int T, int heads, int hd, const float *cs)
{
	int half = hd / 2;
	for (int t = 0; t < T; t++) {
		const float *cosv = cs + (size_t)t * (size_t)hd, *sinv = cosv + half;
		for (int h = 0; h < heads; h++) {
			float *v = x + ((size_t)t * (size_t)heads + (size_t)h) * (size_t)hd;
			for (int i = 0; i < half; i++) {
				float a = v[i], b = v[i + half];
				v[i] = a * cosv[i] - b * sinv[i];
				v[i + half] = b * cosv[i] + a * sinv[i];
			}
		}
	}
}

/* ---- attention ------------------------------------------------------------ */

struct attn_ctx {
	const gpt2_kernels *k;
	llama_cache *c;
	const float *kc, *vc; /* this layer's (NKV, capacity, hd) */
	int T, pos0, NH, NKV, hd, window;
};

static void attention_task(void *arg, int task, int thread)
{
	const struct attn_ctx *a = arg;
	int t = task / a->NH, h = task % a->NH;
	int p = a->pos0 + t, hd = a->hd;
	/* repeat_kv: query heads g*rep .. g*rep+rep-1 read kv head g. */
	int g = h / (a->NH / a->NKV);
	int s0 = a->window && p + 1 > a->window ? p + 1 - a->window : 0;
	size_t base = ((size_t)g * (size_t)a->c->capacity + (size_t)s0) * (size_t)hd;
	size_t qo = ((size_t)t * (size_t)a->NH + (size_t)h) * (size_t)hd;
	a->k->attend(a->c->att + qo, a->c->q + qo, a->kc + base, a->vc + base, (size_t)hd,
	             p - s0 + 1, hd, 1.0f / sqrtf((float)hd),
	             a->c->att_scratch + (size_t)thread * (size_t)a->c->capacity);
}

/* ---- the cache ------------------------------------------------------------ */

int llama_cache_new(llama_cache **out, const llama_model *m, int capacity, char *err, size_t errlen)
{
	const llama_config *cfg = &m->config;
	*out = NULL;
	if (capacity <= 0 || capacity > cfg->max_seq_len)
		capacity = cfg->max_seq_len;
	llama_cache *c = calloc(1, sizeof *c);
	if (!c)
		return gpt2_err(err, errlen, "out of memory for the KV cache");
	c->capacity = capacity;
	c->L = cfg->layers;
	c->NKV = cfg->kv_heads;
	c->hd = cfg->head_dim;
	c->kv_bytes =
		(size_t)c->L * (size_t)c->NKV * (size_t)capacity * (size_t)c->hd * sizeof(float);
	c->k = gpt2_big_alloc(c->kv_bytes);
	c->v = gpt2_big_alloc(c->kv_bytes);
	if (!c->k || !c->v) {
		llama_cache_free(c);
		return gpt2_err(err, errlen,
		                "out of memory for the KV cache "
		                "(%d positions)",
		                capacity);
	}
	*out = c;
	return 0;
}

static void free_acts(llama_cache *c)
{
	float **a[] = {&c->x,   &c->xn,   &c->q,    &c->kk, &c->vv,
	               &c->att, &c->proj, &c->gate, &c->up, &c->rope};
	for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
		free(*a[i]);
		*a[i] = NULL;
	}
	c->act_T = 0;
}

void llama_cache_free(llama_cache *c)
{
	if (!c)
		return;
	gpt2_big_free(c->k, c->kv_bytes);
	gpt2_big_free(c->v, c->kv_bytes);
	free_acts(c);
	free(c->att_scratch);
	free(c->panels);
	free(c->rows);
	free(c->px);
	free(c);
}

int llama_cache_len(const llama_cache *c)
{
	return c->len;
}

void llama_cache_set_trace(llama_cache *c, llama_trace_fn fn, void *ctx)
{
	c->trace = fn;
	c->trace_ctx = ctx;
}

/* Activations for T rows and scratch for threads; no-op once sized. */
static int ensure_acts(llama_cache *c, const llama_config *cfg, int T, int threads, int panel,
                       int fp8)
{
	size_t C = (size_t)cfg->hidden, Q = (size_t)cfg->heads * (size_t)c->hd;
	size_t KV = (size_t)c->NKV * (size_t)c->hd, I = (size_t)cfg->intermediate;
	if (T > c->act_T) {
		free_acts(c);
		size_t t = (size_t)T;
		c->x = malloc(t * C * sizeof(float));
		c->xn = malloc(t * (C > Q ? C : Q) * sizeof(float));
		c->q = malloc(t * Q * sizeof(float));
		c->kk = malloc(t * KV * sizeof(float));
		c->vv = malloc(t * KV * sizeof(float));
		c->att = malloc(t * Q * sizeof(float));
		c->proj = malloc(t * C * sizeof(float));
		c->gate = malloc(t * I * sizeof(float));
		c->up = malloc(t * I * sizeof(float));
		c->rope = malloc(t * (size_t)c->hd * sizeof(float));
		if (!c->rope || !c->x || !c->xn || !c->q || !c->kk || !c->vv || !c->att ||
		    !c->proj || !c->gate || !c->up) {
			free_acts(c);
			return -1;
		}
		c->act_T = T;
	}
	if (threads > c->scratch_threads) {
		free(c->att_scratch);
		free(c->panels);
		free(c->rows);
		c->max_in = C > Q ? C : Q;
		if (I > c->max_in)
			c->max_in = I;
		/* Room for llama_fp8_dots' padded xs. */
		c->max_in = (c->max_in + LLAMA_FP8_PAD - 1) / LLAMA_FP8_PAD * LLAMA_FP8_PAD;
		c->panel_floats = c->max_in * (size_t)panel;
		c->att_scratch = malloc((size_t)threads * (size_t)c->capacity * sizeof(float));
		c->panels = malloc((size_t)threads * c->panel_floats * sizeof(float));
		c->rows = malloc((size_t)threads * c->max_in * sizeof(float));
		c->scratch_threads = threads;
		if (!c->att_scratch || !c->panels || !c->rows) {
			c->scratch_threads = 0;
			return -1;
		}
	}
	/* FP8 decode's prepared inputs (FP8 models only): up to GEMM_MIN_T - 1
	 * tokens, three jobs. */
	if (fp8 && 3 * (size_t)(GEMM_MIN_T - 1) * c->max_in > c->px_floats) {
		free(c->px);
		c->px_floats = 3 * (size_t)(GEMM_MIN_T - 1) * c->max_in;
		c->px = malloc(c->px_floats * sizeof(float));
		if (!c->px) {
			c->px_floats = 0;
			return -1;
		}
	}
	return 0;
}

/* ---- the forward pass ----------------------------------------------------- */

#define TRACE(name, layer, values, rows, width, heads)                                             \
	do {                                                                                       \
		if (c->trace)                                                                      \
			c->trace(c->trace_ctx, name, layer, values, rows, (size_t)(width), heads); \
	} while (0)

/* Keys and values of T tokens into the cache at pos0.. (by head). */
static void store_kv(llama_cache *c, int l, int T, int pos0)
{
	size_t hd = (size_t)c->hd, cap = (size_t)c->capacity;
	size_t lo = (size_t)l * (size_t)c->NKV * cap * hd;
	for (int t = 0; t < T; t++)
		for (int g = 0; g < c->NKV; g++) {
			size_t at = lo + ((size_t)g * cap + (size_t)(pos0 + t)) * hd;
			size_t from = ((size_t)t * (size_t)c->NKV + (size_t)g) * hd;
			memcpy(c->k + at, c->kk + from, hd * sizeof(float));
			memcpy(c->v + at, c->vv + from, hd * sizeof(float));
		}
}

static void attention_block(llama_model *m, llama_cache *c, int l, int T, int pos0)
{
	const llama_config *cfg = &m->config;
	const llama_layer *y = &m->layers[l];
	int C = cfg->hidden, NH = cfg->heads, NKV = cfg->kv_heads;
	int hd = cfg->head_dim, Q = NH * hd, KV = NKV * hd;
	gpt2_pool *pool = m->pool;
	rows_run(pool, (struct rows_ctx){ROW_NORM, c->xn, c->x, y->in_norm, T, C, cfg->rms_eps});
	TRACE("input_norm", l, c->xn, T, C, 0);
	struct lin_batch qkv = {.n = 0};
	batch_add(&qkv, m, c, c->q, c->xn, y->q, y->bq, T, C, Q);
	batch_add(&qkv, m, c, c->kk, c->xn, y->k, y->bk, T, C, KV);
	batch_add(&qkv, m, c, c->vv, c->xn, y->v, y->bv, T, C, KV);
	batch_run(m, &qkv);
	TRACE("attn.q", l, c->q, T, Q, NH);
	TRACE("attn.k", l, c->kk, T, KV, NKV);
	TRACE("attn.v", l, c->vv, T, KV, NKV);
	if (y->q_norm) {
		/* Qwen3: each head RMS-normalized over hd before the rotation. */
		for (int i = 0; i < T * NH; i++)
			rmsnorm(c->q + (size_t)i * (size_t)hd, c->q + (size_t)i * (size_t)hd,
			        y->q_norm, hd, cfg->rms_eps);
		for (int i = 0; i < T * NKV; i++)
			rmsnorm(c->kk + (size_t)i * (size_t)hd, c->kk + (size_t)i * (size_t)hd,
			        y->k_norm, hd, cfg->rms_eps);
		TRACE("attn.q_norm", l, c->q, T, Q, NH);
		TRACE("attn.k_norm", l, c->kk, T, KV, NKV);
	}
	rope_heads(c->q, T, NH, hd, c->rope);
	rope_heads(c->kk, T, NKV, hd, c->rope);
	TRACE("attn.q_rope", l, c->q, T, Q, NH);
	TRACE("attn.k_rope", l, c->kk, T, KV, NKV);
	store_kv(c, l, T, pos0);
	size_t lo = (size_t)l * (size_t)NKV * (size_t)c->capacity * (size_t)hd;
	struct attn_ctx ac = {m->kernels, c,  c->k + lo, c->v + lo, T,
	                      pos0,       NH, NKV,       hd,        cfg->sliding_window};
	gpt2_pool_run(pool, attention_task, &ac, T * NH);
	TRACE("attn.out", l, c->att, T, Q, 0);
	linear(m, c, c->proj, c->att, y->o, y->bo, T, Q, C);
	TRACE("attn.proj", l, c->proj, T, C, 0);
	rows_run(pool, (struct rows_ctx){ROW_RESIDUAL, c->x, c->proj, NULL, T, C, 0});
	TRACE("resid_mid", l, c->x, T, C, 0);
}

static void mlp_block(llama_model *m, llama_cache *c, int l, int T)
{
	const llama_config *cfg = &m->config;
	const llama_layer *y = &m->layers[l];
	int C = cfg->hidden, I = cfg->intermediate;
	gpt2_pool *pool = m->pool;
	rows_run(pool, (struct rows_ctx){ROW_NORM, c->xn, c->x, y->post_norm, T, C, cfg->rms_eps});
	TRACE("post_norm", l, c->xn, T, C, 0);
	struct lin_batch gu = {.n = 0};
	batch_add(&gu, m, c, c->gate, c->xn, y->gate, y->bgate, T, C, I);
	batch_add(&gu, m, c, c->up, c->xn, y->up, y->bup, T, C, I);
	batch_run(m, &gu);
	TRACE("mlp.gate", l, c->gate, T, I, 0);
	TRACE("mlp.up", l, c->up, T, I, 0);
	rows_run(pool, (struct rows_ctx){ROW_SWIGLU, c->gate, c->up, NULL, T, I, 0});
	TRACE("mlp.act", l, c->gate, T, I, 0);
	linear(m, c, c->proj, c->gate, y->down, y->bdown, T, I, C);
	TRACE("mlp.down", l, c->proj, T, C, 0);
	rows_run(pool, (struct rows_ctx){ROW_RESIDUAL, c->x, c->proj, NULL, T, C, 0});
	TRACE("resid", l, c->x, T, C, 0);
}

int llama_forward(llama_model *m, llama_cache *c, const int32_t *ids, int T, float *logits,
                  int all_logits, char *err, size_t errlen)
{
	const llama_config *cfg = &m->config;
	int C = cfg->hidden, V = cfg->vocab_size;
	if (T < 1)
		return gpt2_err(err, errlen, "no tokens to run");
	if (T > c->capacity - c->len)
		return gpt2_err(err, errlen,
		                "the context is full: %d + %d tokens "
		                "exceed %d (max_position_embeddings %d)",
		                c->len, T, c->capacity, cfg->max_seq_len);
	for (int t = 0; t < T; t++)
		if (ids[t] < 0 || ids[t] >= V)
			return gpt2_err(err, errlen,
			                "token id %ld is outside the "
			                "vocabulary (0..%d)",
			                (long)ids[t], V - 1);
	if (ensure_acts(c, cfg, T, gpt2_pool_size(m->pool), m->kernels->panel,
	                m->f8type != ST_DTYPE_F32))
		return gpt2_err(err, errlen, "out of memory for %d tokens", T);
	int pos0 = c->len;
	rope_table(c->rope, T, cfg->head_dim, pos0, m->inv_freq);
	size_t es = gpt2_dtype_size(m->embed.dt);
	for (int t = 0; t < T; t++) {
		float *x = c->x + (size_t)t * (size_t)C;
		if (m->embed.lut)
			llama_fp8_row(x, &m->embed, C, ids[t]);
		else
			st_convert(ST_DTYPE_F32, x, m->embed.dt,
			           (const char *)m->embed.w + (size_t)ids[t] * (size_t)C * es,
			           (size_t)C, NULL);
	}
	TRACE("embed", -1, c->x, T, C, 0);
	for (int l = 0; l < cfg->layers; l++) {
		attention_block(m, c, l, T, pos0);
		mlp_block(m, c, l, T);
	}
	int first = all_logits ? 0 : T - 1, rows = T - first;
	rows_run(m->pool, (struct rows_ctx){ROW_NORM, c->xn, c->x + (size_t)first * (size_t)C,
	                                    m->norm, rows, C, cfg->rms_eps});
	TRACE("norm", -1, c->xn, rows, C, 0);
	linear(m, c, logits, c->xn, m->head, NULL, rows, C, V);
	TRACE("logits", -1, logits, rows, V, 0);
	c->len += T;
	return 0;
}
