/*
 * pool.c - the thread pool the forward pass runs its layers on: n - 1
 * workers plus the calling thread, handed one batch of numbered tasks at
 * a time (see pool.h). No arithmetic here.
 *
 * Decoding one token runs about 80 batches of a few microseconds each,
 * so handing a batch over must cost far less than a sleep and a wake-up:
 * idle workers spin on the batch counter for a while (about a
 * millisecond) before they sleep on a condition variable, and the caller
 * spins until the workers are done. A caller that finds sleepers wakes
 * them; seq_cst on the counter and the sleeper count makes sure that one
 * of the two sides always sees the other.
 */
#include "gpt2/pool.h"
#include "gpt2/internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Spins before a worker sleeps, and before the caller yields its core. */
enum { SPIN_WORKER = 20000, SPIN_CALLER = 2000 };

struct gpt2_pool {
	int n;
	pthread_t *threads;
	/* The batch: written by the caller before it bumps generation. */
	gpt2_task_fn fn;
	void *ctx;
	int n_tasks;
	atomic_int next;
	atomic_uint generation;
	atomic_int busy; /* workers not done with the batch */
	atomic_int stop;
	/* Sleeping workers. */
	pthread_mutex_t mu;
	pthread_cond_t work;
	atomic_int sleepers;
};

struct worker_arg {
	gpt2_pool *pool;
	int index;
};

static void run_tasks(gpt2_pool *p, int thread)
{
	for (;;) {
		int k = atomic_fetch_add(&p->next, 1);
		if (k >= p->n_tasks)
			break;
		p->fn(p->ctx, k, thread);
	}
}

/* Wait until generation differs from seen (or stop); returns it. */
static unsigned wait_batch(gpt2_pool *p, unsigned seen)
{
	for (int spins = 0;; spins++) {
		unsigned g = atomic_load(&p->generation);
		if (g != seen || atomic_load(&p->stop))
			return g;
		if (spins < SPIN_WORKER) {
			cpu_relax();
			continue;
		}
		pthread_mutex_lock(&p->mu);
		atomic_fetch_add(&p->sleepers, 1);
		while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
			pthread_cond_wait(&p->work, &p->mu);
		atomic_fetch_sub(&p->sleepers, 1);
		pthread_mutex_unlock(&p->mu);
		spins = 0;
	}
}

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	gpt2_pool *p = wa->pool;
	int index = wa->index;
	free(wa);
	unsigned seen = 0;
	for (;;) {
		seen = wait_batch(p, seen);
		if (atomic_load(&p->stop))
			return NULL;
		run_tasks(p, index);
		atomic_fetch_sub(&p->busy, 1);
	}
}

int gpt2_pool_new(gpt2_pool **out, int n, char *err, size_t errlen)
{
	*out = NULL;
	if (n < 1)
		n = 1;
	gpt2_pool *p = calloc(1, sizeof *p);
	if (!p)
		return gpt2_err(err, errlen, "cannot start %d threads", n);
	p->n = n;
	atomic_init(&p->next, 0);
	atomic_init(&p->generation, 0);
	atomic_init(&p->busy, 0);
	atomic_init(&p->stop, 0);
	atomic_init(&p->sleepers, 0);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	p->threads = calloc((size_t)n, sizeof *p->threads);
	if (!p->threads) {
		free(p);
		return gpt2_err(err, errlen, "cannot start %d threads", n);
	}
	for (int i = 1; i < n; i++) {
		struct worker_arg *wa = malloc(sizeof *wa);
		if (wa) {
			wa->pool = p;
			wa->index = i;
		}
		if (!wa || pthread_create(&p->threads[i], NULL, worker_main, wa)) {
			free(wa);
			p->n = i; /* the workers started so far */
			gpt2_pool_free(p);
			return gpt2_err(err, errlen, "cannot start %d threads", n);
		}
	}
	*out = p;
	return 0;
}

/* Wake the workers that sleep (the batch or stop was published). */
static void wake(gpt2_pool *p)
{
	if (atomic_load(&p->sleepers) > 0) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->work);
		pthread_mutex_unlock(&p->mu);
	}
}

void gpt2_pool_free(gpt2_pool *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, 1);
	atomic_fetch_add(&p->generation, 1);
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (int i = 1; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->work);
	free(p->threads);
	free(p);
}

int gpt2_pool_size(const gpt2_pool *p)
{
	return p ? p->n : 1;
}

void gpt2_pool_run(gpt2_pool *p, gpt2_task_fn fn, void *ctx, int n_tasks)
{
	if (!p || p->n == 1 || n_tasks <= 1) {
		for (int k = 0; k < n_tasks; k++)
			fn(ctx, k, 0);
		return;
	}
	p->fn = fn;
	p->ctx = ctx;
	p->n_tasks = n_tasks;
	atomic_store(&p->next, 0);
	atomic_store(&p->busy, p->n - 1);
	atomic_fetch_add(&p->generation, 1);
	wake(p);
	run_tasks(p, 0);
	for (int spins = 0; atomic_load(&p->busy) > 0; spins++) {
		if (spins < SPIN_CALLER) {
			cpu_relax();
		} else {
			sched_yield();
			spins = 0;
		}
	}
}
