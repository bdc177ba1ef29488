/*
 * gpt2_sample.c - choosing the next token from logits: greedy, or random
 * with temperature, top-k and top-p (nucleus), in that order, as Hugging
 * Face's generate() applies them.
 *
 * The random stream is llm.c's xorshift* generator seeded from --seed, so
 * the same seed gives the same tokens on any machine and thread count. It
 * is not a cryptographic generator and does not try to match PyTorch's.
 */
#include "gpt2/gpt2.h"
#include "gpt2/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t gpt2_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static uint32_t random_u32(uint64_t *state)
{
	/* xorshift* (llm.c's random_u32). */
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return (uint32_t)((*state * 0x2545F4914F6CDD1Dull) >> 32);
}

float gpt2_random_f32(uint64_t *state)
{
	return (float)(random_u32(state) >> 8) / 16777216.0f;
}

int gpt2_sampler_init(gpt2_sampler *s, int vocab_size, float temperature,
                      int top_k, float top_p, uint64_t seed, char *err,
                      size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->vocab_size = vocab_size;
	s->temperature = temperature;
	s->top_k = top_k < 0 ? 0 : top_k;
	s->top_p = top_p;
	/* splitmix64 of the seed: any seed, 0 included, gives a live state. */
	uint64_t z = gpt2_splitmix64(&seed);
	s->rng = z ? z : 1;
	s->scratch = malloc((size_t)vocab_size * sizeof *s->scratch);
	return s->scratch ? 0 : gpt2_err(err, errlen, "out of memory");
}

void gpt2_sampler_free(gpt2_sampler *s)
{
	free(s->scratch);
	s->scratch = NULL;
}

int32_t gpt2_argmax(const float *x, int n)
{
	int32_t best = 0;
	float bv = -INFINITY;
	int found = 0;
	for (int i = 0; i < n; i++) {
		if (x[i] == x[i] && (!found || x[i] > bv)) {
			best = i;
			bv = x[i];
			found = 1;
		}
	}
	return best;
}

typedef struct gpt2_prob prob_t;

/* a ranks before b: higher probability, then the lower id. */
static int better(const prob_t *a, const prob_t *b)
{
	return a->p > b->p || (a->p == b->p && a->id < b->id);
}

static int cmp_desc(const void *pa, const void *pb)
{
	const prob_t *a = pa, *b = pb;
	if (better(a, b))
		return -1;
	return better(b, a) ? 1 : 0;
}

/* Keep the k best of h[0..n) in a min-heap (the worst kept at the root). */
static void sift_down(prob_t *h, int n, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, w = i;
		if (l < n && better(&h[w], &h[l]))
			w = l;
		if (r < n && better(&h[w], &h[r]))
			w = r;
		if (w == i)
			return;
		prob_t tmp = h[i];
		h[i] = h[w];
		h[w] = tmp;
		i = w;
	}
}

static void sift_up(prob_t *h, int i)
{
	while (i > 0) {
		int parent = (i - 1) / 2;
		if (!better(&h[parent], &h[i]))
			return;
		prob_t tmp = h[i];
		h[i] = h[parent];
		h[parent] = tmp;
		i = parent;
	}
}

/* logits[i] = e^((logits[i] - max) / temperature), NaN as 0; by chunks. */
enum { EXP_CHUNK = 4096 };

struct exp_ctx {
	float *x;
	int n;
	float maxv, temperature;
};

static void exp_task(void *arg, int task, int thread)
{
	(void)thread;
	const struct exp_ctx *c = arg;
	int i0 = task * EXP_CHUNK;
	int i1 = c->n - i0 < EXP_CHUNK ? c->n : i0 + EXP_CHUNK;
	for (int i = i0; i < i1; i++)
		c->x[i] = c->x[i] == c->x[i] ? expf((c->x[i] - c->maxv) / c->temperature)
		                             : 0.0f;
}

int32_t gpt2_sample(gpt2_sampler *s, float *logits)
{
	int V = s->vocab_size;
	if (!(s->temperature > 0) || s->top_k == 1)
		return gpt2_argmax(logits, V);

	/* Softmax of logits / temperature; NaN counts as -inf. */
	float maxv = -INFINITY;
	for (int i = 0; i < V; i++)
		if (logits[i] == logits[i] && logits[i] > maxv)
			maxv = logits[i];
	if (maxv == -INFINITY)
		return gpt2_argmax(logits, V);
	/* The exponentials on the pool (each value the same wherever it is
	 * computed), then their sum in index order. */
	struct exp_ctx ec = {logits, V, maxv, s->temperature};
	gpt2_pool_run(s->pool, exp_task, &ec, (V + EXP_CHUNK - 1) / EXP_CHUNK);
	double sum = 0.0;
	for (int i = 0; i < V; i++)
		sum += logits[i];
	for (int i = 0; i < V; i++)
		logits[i] = (float)(logits[i] / sum);

	prob_t *cand = s->scratch;
	int n = 0;
	int use_p = s->top_p < 1.0f;
	if (s->top_k > 0 && s->top_k < V) {
		/* The k most likely, best first. */
		for (int i = 0; i < V; i++) {
			prob_t c = {logits[i], i};
			if (n < s->top_k) {
				cand[n] = c;
				sift_up(cand, n++);
			} else if (better(&c, &cand[0])) {
				cand[0] = c;
				sift_down(cand, n, 0);
			}
		}
		qsort(cand, (size_t)n, sizeof *cand, cmp_desc);
	} else if (use_p) {
		/*
		 * A token below (1 - top_p) / (V - 1) can only be in the nucleus
		 * when it is the most likely one (then the nucleus is that token
		 * alone); everything else that small is dropped before sorting.
		 */
		float cutoff = V > 1 ? (1.0f - s->top_p) / (float)(V - 1) : 0.0f;
		for (int i = 0; i < V; i++)
			if (logits[i] >= cutoff)
				cand[n++] = (prob_t){logits[i], i};
		if (n == 0)
			return gpt2_argmax(logits, V);
		qsort(cand, (size_t)n, sizeof *cand, cmp_desc);
	} else {
		for (int i = 0; i < V; i++)
			cand[n++] = (prob_t){logits[i], i};
	}

	/* Mass of the candidates, then the nucleus within it. */
	double mass = 0.0;
	for (int i = 0; i < n; i++)
		mass += cand[i].p;
	if (use_p) {
		double want = (double)s->top_p * mass, cum = 0.0;
		int keep = 0;
		while (keep < n) {
			cum += cand[keep++].p;
			if (cum >= want)
				break;
		}
		n = keep;
		mass = cum;
	}
	double coin = (double)gpt2_random_f32(&s->rng) * mass, cum = 0.0;
	for (int i = 0; i < n; i++) {
		cum += cand[i].p;
		if (coin < cum)
			return cand[i].id;
	}
	return cand[n - 1].id; /* rounding left the coin past the end */
}
