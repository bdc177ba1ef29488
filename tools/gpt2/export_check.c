/*
 * export_check.c - the logits check that proves an export: an llm.c
 * checkpoint loaded as a model for gpt2_forward, and two models run on the
 * same fixed id sequences, their logits compared at every position.
 */
#include "gpt2/export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2/internal.h"
#include "gpt2/llmc.h"

int gpt2_export_load_llmc(gpt2_model **out, const char *path, int wdtype,
                          char *err, size_t errlen)
{
	*out = NULL;
	llmc_reader *r;
	if (llmc_open(&r, path, err, errlen))
		return -1;
	gpt2_config cfg;
	llmc_header_config(llmc_reader_header(r), &cfg);
	st_dtype src = llmc_reader_dtype(r);
	/* The model holds it all anyway: a buffer for its largest tensor. */
	size_t maxn = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++)
		if ((size_t)gpt2_param_numel(&cfg, s) > maxn)
			maxn = (size_t)gpt2_param_numel(&cfg, s);
	gpt2_model *m = NULL;
	void *buf = malloc(maxn * gpt2_dtype_size(src));
	int rc = -1;
	if (!buf) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (gpt2_model_new(&m, &cfg, wdtype >= 0 ? (st_dtype)wdtype : src, err,
	                   errlen))
		goto out;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		const gpt2_param_info *p = gpt2_param(s);
		uint64_t n = gpt2_param_numel(&cfg, s);
		for (int l = 0; l < gpt2_param_layers(&cfg, s); l++) {
			/*
			 * wte's first V rows only; gpt2_model_fill transposes
			 * llm.c's [out, in] matrices back (its own code, not the
			 * transpose the export used).
			 */
			if (llmc_read(r, s, (uint64_t)l * n, buf, (size_t)n, err,
			              errlen) ||
			    gpt2_model_fill(m, s, l, src, buf, p->conv1d, err, errlen))
				goto out;
		}
	}
	*out = m;
	m = NULL;
	rc = 0;
out:
	gpt2_model_free(m);
	free(buf);
	llmc_close(r);
	return rc;
}

int gpt2_export_compare(gpt2_model *a, gpt2_model *b, gpt2_export_diff *d,
                        char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	const gpt2_config *ca = &a->config, *cb = &b->config;
	if (ca->vocab_size != cb->vocab_size || ca->max_seq_len != cb->max_seq_len ||
	    ca->num_layers != cb->num_layers || ca->num_heads != cb->num_heads ||
	    ca->channels != cb->channels)
		return gpt2_err(err, errlen, "the two models differ in size");
	int V = ca->vocab_size, P = ca->max_seq_len;
	int lens[3] = {1, 8, 32};
	int rc = -1;
	int32_t *ids = malloc(32 * sizeof *ids);
	float *la = malloc((size_t)32 * (size_t)V * sizeof(float));
	float *lb = malloc((size_t)32 * (size_t)V * sizeof(float));
	gpt2_cache *qa = NULL, *qb = NULL;
	if (!ids || !la || !lb) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	for (int k = 0; k < 3; k++) {
		int T = lens[k] < P ? lens[k] : P;
		if (k > 0 && T <= (lens[k - 1] < P ? lens[k - 1] : P))
			break; /* a short context repeats the previous prompt */
		/* Ids spread over the whole vocabulary, the last id included. */
		for (int t = 0; t < T; t++)
			ids[t] = (int32_t)(((uint64_t)t * 7919u + (uint64_t)k * 104729u +
			                    (t == T - 1 ? (uint64_t)V - 1 : 0)) %
			                   (uint64_t)V);
		if (gpt2_cache_new(&qa, a, T, err, errlen) ||
		    gpt2_cache_new(&qb, b, T, err, errlen))
			goto out;
		if (gpt2_forward(a, qa, ids, T, la, 1, err, errlen) ||
		    gpt2_forward(b, qb, ids, T, lb, 1, err, errlen))
			goto out;
		gpt2_cache_free(qa);
		gpt2_cache_free(qb);
		qa = qb = NULL;
		for (size_t i = 0; i < (size_t)T * (size_t)V; i++) {
			/* Equal infinities and NaN against NaN agree. */
			if (la[i] == lb[i] || (isnan(la[i]) && isnan(lb[i])))
				continue;
			if (!isfinite(la[i]) || !isfinite(lb[i])) {
				d->nonfinite++;
				continue;
			}
			double diff = fabs((double)la[i] - (double)lb[i]);
			if (diff > d->max_abs_diff)
				d->max_abs_diff = diff;
		}
		d->prompts++;
		d->positions += T;
	}
	rc = 0;
out:
	gpt2_cache_free(qa);
	gpt2_cache_free(qb);
	free(ids);
	free(la);
	free(lb);
	return rc;
}
