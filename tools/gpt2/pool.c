/*
 * pool.c - the thread pool the forward pass runs its layers on: n - 1
 * workers plus the calling thread, handed one batch of numbered tasks at
 * a time (see pool.h). No arithmetic here.
 */
#include "gpt2/pool.h"
#include "gpt2/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct gpt2_pool {
	int n;
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	unsigned long generation;
	int busy, stop;
	gpt2_task_fn fn;
	void *ctx;
	int n_tasks;
	atomic_int next;
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

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	gpt2_pool *p = wa->pool;
	int index = wa->index;
	free(wa);
	unsigned long seen = 0;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->generation == seen && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		seen = p->generation;
		pthread_mutex_unlock(&p->mu);
		run_tasks(p, index);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
		pthread_mutex_unlock(&p->mu);
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
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
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

void gpt2_pool_free(gpt2_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (int i = 1; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
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
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ctx = ctx;
	p->n_tasks = n_tasks;
	atomic_store(&p->next, 0);
	p->busy = p->n - 1;
	p->generation++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	run_tasks(p, 0);
	pthread_mutex_lock(&p->mu);
	while (p->busy > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}
