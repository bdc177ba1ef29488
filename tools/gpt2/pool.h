/*
 * pool.h - a pool of threads for the forward pass of tools/gpt2: n - 1
 * workers plus the caller run the numbered tasks of one batch, each task
 * once, in any order. Results depend only on how the work is split into
 * tasks, never on which thread runs which, so a caller that gives every
 * output element to one task in a fixed order gets the same bits whatever
 * the thread count.
 */
#ifndef ST_GPT2_POOL_H
#define ST_GPT2_POOL_H

typedef struct gpt2_pool gpt2_pool;

/* One task: k in [0, n_tasks), thread in [0, gpt2_pool_size). */
typedef void (*gpt2_task_fn)(void *ctx, int task, int thread);

#include <stddef.h>

/*
 * A pool of n - 1 worker threads plus the caller, into *out. 0, or -1 with
 * a message ("cannot start N threads"; *out NULL).
 */
int gpt2_pool_new(gpt2_pool **out, int n, char *err, size_t errlen);
/* Stop and join the workers; NULL does nothing. */
void gpt2_pool_free(gpt2_pool *p);
/* Threads, the caller included: 1 for NULL. */
int gpt2_pool_size(const gpt2_pool *p);
/*
 * Run fn(ctx, k, thread) for every k in [0, n_tasks), the caller as
 * thread 0, and return when all are done. p may be NULL (one thread).
 * One batch at a time: not reentrant.
 */
void gpt2_pool_run(gpt2_pool *p, gpt2_task_fn fn, void *ctx, int n_tasks);

#endif
