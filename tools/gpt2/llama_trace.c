/*
 * llama_trace.c - the Llama family's trace recorder (llama_trace.h): each
 * stage's values copied as the forward pass hands them over, in the order
 * they come, then written as one safetensors file. Nothing is computed
 * here, so a trace shows what the forward pass computed.
 */
#include "gpt2/llama_trace.h"
#include "gpt2/internal.h"

#include "fe/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stage {
	char name[64];
	unsigned ndim;
	uint64_t shape[3];
	size_t n;
	float *data;
};

struct llama_trace {
	int T;
	size_t n, cap;
	struct stage *s;
	int failed;
	char why[160];
};

int llama_trace_new(llama_trace **out, int T, char *err, size_t errlen)
{
	*out = calloc(1, sizeof **out);
	if (!*out)
		return gpt2_err(err, errlen, "out of memory for a trace");
	(*out)->T = T;
	return 0;
}

void llama_trace_free(llama_trace *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->n; i++)
		free(tr->s[i].data);
	free(tr->s);
	free(tr);
}

static void fail(llama_trace *tr, const char *what, const char *name)
{
	if (!tr->failed)
		snprintf(tr->why, sizeof tr->why, "%s: %s", name, what);
	tr->failed = 1;
}

void llama_trace_record(void *ctx, const char *name, int layer, const float *values, int rows,
                        size_t width, int heads)
{
	llama_trace *tr = ctx;
	char full[64];
	if (layer >= 0)
		snprintf(full, sizeof full, "layers.%d.%s", layer, name);
	else
		snprintf(full, sizeof full, "%s", name);
	if (tr->failed)
		return;
	for (size_t i = 0; i < tr->n; i++)
		if (strcmp(tr->s[i].name, full) == 0) {
			fail(tr, "recorded twice", full);
			return;
		}
	if (rows != tr->T) {
		fail(tr, "not the trace's tokens", full);
		return;
	}
	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? 2 * tr->cap : 64;
		struct stage *s = realloc(tr->s, cap * sizeof *s);
		if (!s) {
			fail(tr, "out of memory", full);
			return;
		}
		tr->s = s;
		tr->cap = cap;
	}
	struct stage *s = &tr->s[tr->n];
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", full);
	s->n = (size_t)rows * width;
	s->data = malloc((s->n ? s->n : 1) * sizeof(float));
	if (!s->data) {
		fail(tr, "out of memory", full);
		return;
	}
	memcpy(s->data, values, s->n * sizeof(float));
	s->shape[0] = (uint64_t)rows;
	if (heads > 0) {
		s->ndim = 3;
		s->shape[1] = (uint64_t)heads;
		s->shape[2] = width / (size_t)heads;
	} else {
		s->ndim = 2;
		s->shape[1] = width;
	}
	tr->n++;
}

static const struct stage *by_name(const llama_trace *tr, const char *name, size_t len)
{
	for (size_t i = 0; i < tr->n; i++)
		if (strlen(tr->s[i].name) == len && memcmp(tr->s[i].name, name, len) == 0)
			return &tr->s[i];
	return NULL;
}

int llama_trace_write(const llama_trace *tr, const char *path, const int32_t *ids, char *err,
                      size_t errlen)
{
	if (tr->failed)
		return gpt2_err(err, errlen, "trace: %s", tr->why);
	size_t olen = 4;
	for (size_t i = 0; i < tr->n; i++)
		olen += strlen(tr->s[i].name) + 1;
	char *order = malloc(olen);
	int64_t *ids64 = malloc(((size_t)tr->T ? (size_t)tr->T : 1) * 8);
	if (!order || !ids64) {
		free(order);
		free(ids64);
		return gpt2_err(err, errlen, "out of memory for a trace");
	}
	char *p = order + sprintf(order, "ids");
	for (size_t i = 0; i < tr->n; i++)
		p += sprintf(p, ",%s", tr->s[i].name);
	for (int i = 0; i < tr->T; i++)
		ids64[i] = ids[i];
	st_writer *w = NULL;
	st_error e;
	uint64_t tshape[1] = {(uint64_t)tr->T};
	int rc = st_writer_new(&w, &e);
	if (rc == ST_OK)
		rc = st_writer_set_meta(w, "order", order, &e);
	if (rc == ST_OK)
		rc = st_writer_add(w, "ids", 3, ST_DTYPE_I64, 1, tshape, &e);
	for (size_t i = 0; i < tr->n && rc == ST_OK; i++)
		rc = st_writer_add(w, tr->s[i].name, strlen(tr->s[i].name), ST_DTYPE_F32,
		                   tr->s[i].ndim, tr->s[i].shape, &e);
	if (rc == ST_OK)
		rc = cli_writer_open(w, path, &e);
	for (size_t i = 0; rc == ST_OK && i < st_writer_n_tensors(w); i++) {
		const st_tensor *wt = st_writer_tensor(w, i);
		const struct stage *s = by_name(tr, wt->name, wt->name_len);
		if (!s)
			rc = st_writer_write(w, ids64, (size_t)tr->T * 8, &e);
		else
			rc = st_writer_write(w, s->data, s->n * sizeof(float), &e);
	}
	if (rc == ST_OK)
		rc = st_writer_finish(w, &e);
	st_writer_free(w);
	free(order);
	free(ids64);
	if (rc != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message[0] ? e.message : st_strerror(e.code));
	return 0;
}
