/*
 * model.c - the model layer (model.h): which family a config.json names,
 * and each family's operations over its own loader, cache and forward
 * pass (GPT-2: gpt2*.c and trace.c; the Llama family: llama*.c).
 */
#include "gpt2/model.h"
#include "gpt2/internal.h"
#include "gpt2/llama.h"
#include "gpt2/llama_trace.h"
#include "gpt2/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- GPT-2 --------------------------------------------------------------- */

static int gpt2_ops_set_threads(model *rm, int n, char *err, size_t errlen)
{
	gpt2_model *m = rm->impl;
	int rc = gpt2_model_set_threads(m, n, err, errlen);
	rm->pool = m->pool;
	return rc;
}

static int gpt2_ops_cache_new(model *rm, int capacity, char *err, size_t errlen)
{
	gpt2_cache *c;
	if (gpt2_cache_new(&c, rm->impl, capacity, err, errlen))
		return -1;
	rm->cache = c;
	return 0;
}

static int gpt2_ops_forward(model *rm, const int32_t *ids, int T, float *logits, int all, char *err,
                            size_t errlen)
{
	return gpt2_forward(rm->impl, rm->cache, ids, T, logits, all, err, errlen);
}

static int gpt2_ops_cache_len(const model *rm)
{
	return gpt2_cache_len(rm->cache);
}

static int gpt2_ops_trace_begin(model *rm, int T, char *err, size_t errlen)
{
	gpt2_model *m = rm->impl;
	gpt2_trace *tr;
	if (gpt2_trace_new(&tr, &m->config, T, err, errlen))
		return -1;
	rm->trace = tr;
	gpt2_cache_set_trace(rm->cache, gpt2_trace_record, tr);
	return 0;
}

static int gpt2_ops_trace_write(model *rm, const char *path, const int32_t *ids, char *err,
                                size_t errlen)
{
	gpt2_cache_set_trace(rm->cache, NULL, NULL);
	int rc = gpt2_trace_write(rm->trace, path, ids, err, errlen);
	gpt2_trace_free(rm->trace);
	rm->trace = NULL;
	return rc;
}

static void gpt2_ops_describe(const model *rm, char *buf, size_t size)
{
	const gpt2_config *cfg = &((const gpt2_model *)rm->impl)->config;
	snprintf(buf, size, "n_layer %d, n_head %d, n_embd %d, vocab %d", cfg->num_layers,
	         cfg->num_heads, cfg->channels, cfg->vocab_size);
}

static void gpt2_ops_free(model *rm)
{
	gpt2_trace_free(rm->trace);
	gpt2_cache_free(rm->cache);
	gpt2_model_free(rm->impl);
}

static const model_ops GPT2_OPS = {
	"gpt2",
	gpt2_ops_set_threads,
	gpt2_ops_cache_new,
	gpt2_ops_forward,
	gpt2_ops_cache_len,
	gpt2_ops_trace_begin,
	gpt2_ops_trace_write,
	gpt2_ops_describe,
	gpt2_ops_free,
};

int model_load_gpt2(model *rm, const char *dir, int wdtype, char *err, size_t errlen)
{
	gpt2_model *m;
	memset(rm, 0, sizeof *rm);
	if (gpt2_model_load(&m, dir, wdtype, err, errlen))
		return -1;
	const gpt2_config *cfg = &m->config;
	rm->ops = &GPT2_OPS;
	rm->impl = m;
	rm->vocab_size = cfg->vocab_size;
	rm->max_seq_len = cfg->max_seq_len;
	rm->ctx_key = "n_positions";
	rm->bos = -1;
	rm->n_eos = cfg->n_eos;
	memcpy(rm->eos, cfg->eos, sizeof rm->eos);
	rm->num_parameters = m->num_parameters;
	rm->wdtype = m->wdtype;
	rm->pool = m->pool;
	return 0;
}

/* ---- the Llama family ---------------------------------------------------- */

static int llama_ops_set_threads(model *rm, int n, char *err, size_t errlen)
{
	llama_model *m = rm->impl;
	int rc = llama_model_set_threads(m, n, err, errlen);
	rm->pool = m->pool;
	return rc;
}

static int llama_ops_cache_new(model *rm, int capacity, char *err, size_t errlen)
{
	llama_cache *c;
	if (llama_cache_new(&c, rm->impl, capacity, err, errlen))
		return -1;
	rm->cache = c;
	return 0;
}

static int llama_ops_forward(model *rm, const int32_t *ids, int T, float *logits, int all,
                             char *err, size_t errlen)
{
	return llama_forward(rm->impl, rm->cache, ids, T, logits, all, err, errlen);
}

static int llama_ops_cache_len(const model *rm)
{
	return llama_cache_len(rm->cache);
}

static int llama_ops_trace_begin(model *rm, int T, char *err, size_t errlen)
{
	llama_trace *tr;
	if (llama_trace_new(&tr, T, err, errlen))
		return -1;
	rm->trace = tr;
	llama_cache_set_trace(rm->cache, llama_trace_record, tr);
	return 0;
}

static int llama_ops_trace_write(model *rm, const char *path, const int32_t *ids, char *err,
                                 size_t errlen)
{
	llama_cache_set_trace(rm->cache, NULL, NULL);
	int rc = llama_trace_write(rm->trace, path, ids, err, errlen);
	llama_trace_free(rm->trace);
	rm->trace = NULL;
	return rc;
}

static void llama_ops_describe(const model *rm, char *buf, size_t size)
{
	const llama_config *c = &((const llama_model *)rm->impl)->config;
	snprintf(buf, size,
	         "%s: layers %d, heads %d (kv %d, head_dim %d), "
	         "hidden %d, intermediate %d, vocab %d",
	         c->model_type, c->layers, c->heads, c->kv_heads, c->head_dim, c->hidden,
	         c->intermediate, c->vocab_size);
}

static void llama_ops_free(model *rm)
{
	llama_trace_free(rm->trace);
	llama_cache_free(rm->cache);
	llama_model_free(rm->impl);
}

static const model_ops LLAMA_OPS = {
	"llama",
	llama_ops_set_threads,
	llama_ops_cache_new,
	llama_ops_forward,
	llama_ops_cache_len,
	llama_ops_trace_begin,
	llama_ops_trace_write,
	llama_ops_describe,
	llama_ops_free,
};

static int load_llama(model *rm, const char *dir, int wdtype, char *err, size_t errlen)
{
	llama_model *m;
	if (wdtype >= 0)
		return gpt2_err(err, errlen,
		                "--dtype: the Llama family runs its "
		                "weights as stored (F32, F16, BF16), without a copy");
	if (llama_model_load(&m, dir, err, errlen))
		return -1;
	const llama_config *cfg = &m->config;
	memset(rm, 0, sizeof *rm);
	rm->ops = &LLAMA_OPS;
	rm->impl = m;
	rm->vocab_size = cfg->vocab_size;
	rm->max_seq_len = cfg->max_seq_len;
	rm->ctx_key = "max_position_embeddings";
	rm->bos = cfg->has_bos ? cfg->bos : -1;
	rm->n_eos = cfg->n_eos;
	memcpy(rm->eos, cfg->eos, sizeof rm->eos);
	rm->num_parameters = m->num_parameters;
	rm->wdtype = m->wdtype;
	return 0;
}

/* ---- choosing ------------------------------------------------------------ */

int model_load(model *rm, const char *dir, int wdtype, char *err, size_t errlen)
{
	char cdir[4096], path[4200];
	char *buf;
	size_t len;
	memset(rm, 0, sizeof *rm);
	if (gpt2_config_dir(dir, cdir, sizeof cdir, err, errlen) ||
	    gpt2_join(path, sizeof path, cdir, "config.json", err, errlen) ||
	    gpt2_read_config_file(path, &buf, &len, 0, err, errlen))
		return -1;
	int llama = llama_config_is_llama(buf, len);
	free(buf);
	if (llama)
		return load_llama(rm, dir, wdtype, err, errlen);
	/* Everything else is GPT-2's to accept or refuse, with its reason. */
	return model_load_gpt2(rm, dir, wdtype, err, errlen);
}

int model_set_threads(model *rm, int n, char *err, size_t errlen)
{
	return rm->ops->set_threads(rm, n, err, errlen);
}

int model_cache_new(model *rm, int capacity, char *err, size_t errlen)
{
	return rm->ops->cache_new(rm, capacity, err, errlen);
}

int model_forward(model *rm, const int32_t *ids, int T, float *logits, int all_logits, char *err,
                  size_t errlen)
{
	return rm->ops->forward(rm, ids, T, logits, all_logits, err, errlen);
}

int model_cache_len(const model *rm)
{
	return rm->ops->cache_len(rm);
}

int model_is_eos(const model *rm, int32_t id)
{
	for (int i = 0; i < rm->n_eos; i++)
		if (rm->eos[i] == id)
			return 1;
	return 0;
}

void model_free(model *rm)
{
	if (rm->ops)
		rm->ops->free(rm);
	memset(rm, 0, sizeof *rm);
}
