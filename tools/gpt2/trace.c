/*
 * trace.c - the intermediates of one forward pass, named and shaped as
 * doc/trace.md says, written as one safetensors file.
 *
 * It is a recorder only: gpt2_forward hands each stage's values to
 * gpt2_trace_record (a gpt2_trace_fn), which copies them into the tensor
 * the stage becomes. QKV becomes three per-head tensors q, k and v
 * [T, NH, hs]; every other stage is copied whole. Nothing is computed
 * here, so a trace shows what the forward pass computed.
 */
#include "gpt2/trace.h"
#include "gpt2/internal.h"

#include "fe/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per block, in forward order; q, k, v come from the one QKV stage. */
static const char *const BLOCK_NAMES[] = {
	"ln_1", "attn.q", "attn.k", "attn.v", "attn.weights", "attn.out",
	"attn.proj", "resid_mid", "ln_2", "mlp.fc", "mlp.gelu", "mlp.proj",
	"resid"};
enum { PER_BLOCK = 13, BEFORE = 4 /* ids wte wpe embed */, AFTER = 2 };

struct tensor {
	char name[40];
	unsigned ndim;
	uint64_t shape[3];
	size_t n;      /* floats */
	float *data;   /* NULL until recorded */
};

struct gpt2_trace {
	int T, C, NH, V, L;
	size_t n;          /* tensors, ids (index 0) included */
	struct tensor *t;  /* in forward order */
	int failed;        /* a stage came with an unexpected shape, or OOM */
	char why[160];
};

static void set(struct tensor *t, const char *name, unsigned ndim,
                uint64_t d0, uint64_t d1, uint64_t d2)
{
	snprintf(t->name, sizeof t->name, "%s", name);
	t->ndim = ndim;
	t->shape[0] = d0;
	t->shape[1] = d1;
	t->shape[2] = d2;
	t->n = (size_t)(d0 * (ndim > 1 ? d1 : 1) * (ndim > 2 ? d2 : 1));
}

int gpt2_trace_new(gpt2_trace **out, const gpt2_config *cfg, int T,
                   char *err, size_t errlen)
{
	*out = NULL;
	gpt2_trace *tr = calloc(1, sizeof *tr);
	if (!tr)
		return gpt2_err(err, errlen, "out of memory for a trace");
	tr->T = T;
	tr->C = cfg->channels;
	tr->NH = cfg->num_heads;
	tr->V = cfg->vocab_size;
	tr->L = cfg->num_layers;
	tr->n = BEFORE + PER_BLOCK * (size_t)tr->L + AFTER;
	tr->t = calloc(tr->n, sizeof *tr->t);
	if (!tr->t) {
		free(tr);
		return gpt2_err(err, errlen, "out of memory for a trace");
	}
	uint64_t C = (uint64_t)tr->C, hs = C / (uint64_t)tr->NH, NH = tr->NH;
	uint64_t Tu = (uint64_t)T;
	struct tensor *t = tr->t;
	set(t++, "ids", 1, Tu, 0, 0);
	set(t++, "wte", 2, Tu, C, 0);
	set(t++, "wpe", 2, Tu, C, 0);
	set(t++, "embed", 2, Tu, C, 0);
	for (int l = 0; l < tr->L; l++) {
		for (int k = 0; k < PER_BLOCK; k++, t++) {
			char name[40];
			snprintf(name, sizeof name, "h.%d.%s", l, BLOCK_NAMES[k]);
			if (k >= 1 && k <= 3)
				set(t, name, 3, Tu, NH, hs);
			else if (k == 4)
				set(t, name, 3, Tu, NH, Tu);
			else if (k == 9 || k == 10)
				set(t, name, 2, Tu, 4 * C, 0);
			else
				set(t, name, 2, Tu, C, 0);
		}
	}
	set(t++, "ln_f", 2, Tu, C, 0);
	set(t++, "logits", 2, Tu, (uint64_t)tr->V, 0);
	*out = tr;
	return 0;
}

void gpt2_trace_free(gpt2_trace *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->n; i++)
		free(tr->t[i].data);
	free(tr->t);
	free(tr);
}

size_t gpt2_trace_n_tensors(const gpt2_trace *tr) { return tr->n; }

uint64_t gpt2_trace_bytes(const gpt2_trace *tr)
{
	uint64_t b = 8 * (uint64_t)tr->T; /* ids, I64 */
	for (size_t i = 1; i < tr->n; i++)
		b += 4 * (uint64_t)tr->t[i].n;
	return b;
}

static void fail(gpt2_trace *tr, const char *why, const char *name)
{
	if (!tr->failed)
		snprintf(tr->why, sizeof tr->why, "%s: %s", name, why);
	tr->failed = 1;
}

/* Copy rows x width values (column offset col0 of a wider row) in. */
static void take(gpt2_trace *tr, struct tensor *t, const float *v, int rows,
                 size_t width, size_t col0, size_t cols)
{
	if (t->data) {
		fail(tr, "recorded twice", t->name);
		return;
	}
	if (rows != tr->T || (size_t)tr->T * cols != t->n) {
		fail(tr, "not the shape of this trace", t->name);
		return;
	}
	t->data = malloc(t->n * sizeof(float));
	if (!t->data) {
		fail(tr, "out of memory", t->name);
		return;
	}
	for (int r = 0; r < rows; r++)
		memcpy(t->data + (size_t)r * cols, v + (size_t)r * width + col0,
		       cols * sizeof(float));
}

void gpt2_trace_record(void *ctx, enum gpt2_stage stage, int layer,
                       const float *values, int rows, size_t width)
{
	gpt2_trace *tr = ctx;
	size_t C = (size_t)tr->C;
	if (layer < -1 || layer >= tr->L) {
		fail(tr, "a stage of a block this model does not have", "trace");
		return;
	}
	size_t base = BEFORE + (size_t)(layer < 0 ? 0 : layer) * PER_BLOCK;
	struct tensor *t = NULL;
	switch (stage) {
	case GPT2_STAGE_WTE: t = &tr->t[1]; break;
	case GPT2_STAGE_WPE: t = &tr->t[2]; break;
	case GPT2_STAGE_EMBED: t = &tr->t[3]; break;
	case GPT2_STAGE_LNF: t = &tr->t[tr->n - 2]; break;
	case GPT2_STAGE_LOGITS: t = &tr->t[tr->n - 1]; break;
	case GPT2_STAGE_QKV:
		if (width != 3 * C) {
			fail(tr, "not the shape of this trace", tr->t[base + 1].name);
			return;
		}
		for (size_t k = 0; k < 3; k++)
			take(tr, &tr->t[base + 1 + k], values, rows, width, k * C, C);
		return;
	case GPT2_STAGE_LN1: t = &tr->t[base]; break;
	case GPT2_STAGE_ATTN_WEIGHTS: t = &tr->t[base + 4]; break;
	case GPT2_STAGE_ATTN_OUT: t = &tr->t[base + 5]; break;
	case GPT2_STAGE_ATTN_PROJ: t = &tr->t[base + 6]; break;
	case GPT2_STAGE_RESID_MID: t = &tr->t[base + 7]; break;
	case GPT2_STAGE_LN2: t = &tr->t[base + 8]; break;
	case GPT2_STAGE_FC: t = &tr->t[base + 9]; break;
	case GPT2_STAGE_GELU: t = &tr->t[base + 10]; break;
	case GPT2_STAGE_MLP_PROJ: t = &tr->t[base + 11]; break;
	case GPT2_STAGE_RESID: t = &tr->t[base + 12]; break;
	}
	if (t)
		take(tr, t, values, rows, width, 0, width);
}

static const struct tensor *by_name(const gpt2_trace *tr, const char *name,
                                    size_t len)
{
	for (size_t i = 0; i < tr->n; i++)
		if (strlen(tr->t[i].name) == len &&
		    memcmp(tr->t[i].name, name, len) == 0)
			return &tr->t[i];
	return NULL;
}

int gpt2_trace_write(const gpt2_trace *tr, const char *path,
                     const int32_t *ids, char *err, size_t errlen)
{
	if (tr->failed)
		return gpt2_err(err, errlen, "trace: %s", tr->why);
	for (size_t i = 1; i < tr->n; i++)
		if (!tr->t[i].data)
			return gpt2_err(err, errlen, "trace: %s was not recorded",
			                tr->t[i].name);
	/* The forward order, for __metadata__. */
	size_t olen = 1;
	for (size_t i = 0; i < tr->n; i++)
		olen += strlen(tr->t[i].name) + 1;
	char *order = malloc(olen);
	int64_t *ids64 = malloc(((size_t)tr->T ? (size_t)tr->T : 1) * 8);
	if (!order || !ids64) {
		free(order);
		free(ids64);
		return gpt2_err(err, errlen, "out of memory for a trace");
	}
	char *p = order;
	for (size_t i = 0; i < tr->n; i++)
		p += sprintf(p, "%s%s", i ? "," : "", tr->t[i].name);
	for (int i = 0; i < tr->T; i++)
		ids64[i] = ids[i]; /* little-endian hosts only, as libst */
	st_writer *w = NULL;
	st_error e;
	int rc = st_writer_new(&w, &e);
	if (rc == ST_OK)
		rc = st_writer_set_meta(w, "order", order, &e);
	for (size_t i = 0; i < tr->n && rc == ST_OK; i++)
		rc = st_writer_add(w, tr->t[i].name, strlen(tr->t[i].name),
		                   i ? ST_DTYPE_F32 : ST_DTYPE_I64, tr->t[i].ndim,
		                   tr->t[i].shape, &e);
	if (rc == ST_OK)
		rc = cli_writer_open(w, path, &e);
	/* Data in the writer's (canonical) order. */
	for (size_t i = 0; rc == ST_OK && i < st_writer_n_tensors(w); i++) {
		const st_tensor *wt = st_writer_tensor(w, i);
		const struct tensor *t = by_name(tr, wt->name, wt->name_len);
		if (t == &tr->t[0])
			rc = st_writer_write(w, ids64, (size_t)tr->T * 8, &e);
		else
			rc = st_writer_write(w, t->data, t->n * sizeof(float), &e);
	}
	if (rc == ST_OK)
		rc = st_writer_finish(w, &e);
	st_writer_free(w);
	free(order);
	free(ids64);
	if (rc != ST_OK) {
		if (e.message[0])
			return gpt2_err(err, errlen, "%s", e.message);
		return gpt2_err(err, errlen, "%s: %s", path, st_strerror(e.code));
	}
	return 0;
}
