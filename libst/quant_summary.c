/*
 * quant_summary.c - what a checkpoint's scaled weights are, counted for a
 * description (st/quant.h, st_quant_summary_load): the block size
 * config.json gives, the pairs by layout, the scales' tensors, elements
 * and bytes. The pairing itself is quant_plan.c's.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* The block size config.json gives, or the default with why not. */
static void block_size(st_quant_summary *q, const st_checkpoint *ck)
{
	st_error e;
	int found = 0;
	q->block_rows = q->block_cols = ST_QUANT_DEFAULT_BLOCK;
	int rc = st_config_read_block_size(st_checkpoint_dir(ck), &q->block_rows, &q->block_cols,
	                                   &found, &e);
	/* A hostile block size, or one that is there but cannot be read: the
	 * pairs would be judged against a guess. */
	if (rc == ST_EINVAL || rc == ST_EIO)
		q->config_error = e;
	q->block_from_config = rc == ST_OK && found;
}

int st_quant_summary_load(st_quant_summary *q, const st_checkpoint *ck, st_quant_problem_fn fn,
                          void *ctx, st_error *err)
{
	memset(q, 0, sizeof *q);
	block_size(q, ck);
	/* Pairs are judged against the block size, not against a guess. */
	if (q->config_error.code != ST_OK)
		fn = NULL;
	int rc = st_quant_plan_inspect(&q->plan, ck, q->block_rows, q->block_cols, fn, ctx, err);
	if (rc == ST_OK && st_quant_plan_layouts(&q->plan, ck, &q->layouts, &q->n_layouts) != ST_OK)
		rc = st__error(err, ST_ENOMEM, "out of memory grouping %zu tensors by layout",
		               q->plan.n);
	const st_quant_plan *p = &q->plan;
	if (rc == ST_OK && p->n_fp8 + p->n_mxfp4 + p->n_scales + p->n_problems == 0)
		rc = ST_ENOTFOUND;
	if (rc != ST_OK) {
		st_quant_summary_free(q);
		return rc;
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].role == ST_QUANT_ROLE_SCALE &&
		    __builtin_add_overflow(q->scale_parameters,
		                           st_checkpoint_tensor(ck, i, NULL)->n_elements,
		                           &q->scale_parameters))
			q->scale_parameters = UINT64_MAX; /* saturating, as plan.parameters */
	return ST_OK;
}

void st_quant_summary_free(st_quant_summary *q)
{
	st_quant_plan_free(&q->plan);
	free(q->layouts);
	q->layouts = NULL;
	q->n_layouts = 0;
}
