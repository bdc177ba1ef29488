/*
 * llama_load.c - a Llama-family snapshot into a llama_model: config.json,
 * libst's inventory of the checkpoint against it (st_arch_inventory:
 * every tensor used, every parameter filled, FP8 scales paired), then
 * each parameter's place. The
 * matrices are used where they lie in the checkpoint's mmap, in their own
 * dtype; the norms and biases (a few KiB a layer) are widened to F32.
 */
#include "fe/json.h"
#include "gpt2/internal.h"
#include "gpt2/kernels.h"
#include "gpt2/llama.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where each per-layer parameter goes, by its name after "layers.N.". */
enum { M_MAT, M_VEC };
static const struct slot {
	const char *suffix;
	int kind;
	size_t off; /* offsetof in llama_layer */
} SLOTS[] = {
	{"input_layernorm.weight", M_VEC, offsetof(llama_layer, in_norm)},
	{"post_attention_layernorm.weight", M_VEC, offsetof(llama_layer, post_norm)},
	{"self_attn.q_norm.weight", M_VEC, offsetof(llama_layer, q_norm)},
	{"self_attn.k_norm.weight", M_VEC, offsetof(llama_layer, k_norm)},
	{"self_attn.q_proj.weight", M_MAT, offsetof(llama_layer, q)},
	{"self_attn.k_proj.weight", M_MAT, offsetof(llama_layer, k)},
	{"self_attn.v_proj.weight", M_MAT, offsetof(llama_layer, v)},
	{"self_attn.o_proj.weight", M_MAT, offsetof(llama_layer, o)},
	{"mlp.gate_proj.weight", M_MAT, offsetof(llama_layer, gate)},
	{"mlp.up_proj.weight", M_MAT, offsetof(llama_layer, up)},
	{"mlp.down_proj.weight", M_MAT, offsetof(llama_layer, down)},
	{"self_attn.q_proj.bias", M_VEC, offsetof(llama_layer, bq)},
	{"self_attn.k_proj.bias", M_VEC, offsetof(llama_layer, bk)},
	{"self_attn.v_proj.bias", M_VEC, offsetof(llama_layer, bv)},
	{"self_attn.o_proj.bias", M_VEC, offsetof(llama_layer, bo)},
	{"mlp.gate_proj.bias", M_VEC, offsetof(llama_layer, bgate)},
	{"mlp.up_proj.bias", M_VEC, offsetof(llama_layer, bup)},
	{"mlp.down_proj.bias", M_VEC, offsetof(llama_layer, bdown)},
};

static int read_config(llama_config *cfg, const char *dir, char *err, size_t errlen)
{
	char path[4096];
	char *buf;
	size_t len;
	if (gpt2_join(path, sizeof path, dir, "config.json", err, errlen) ||
	    gpt2_read_config_file(path, &buf, &len, 0, err, errlen))
		return -1;
	int rc = llama_config_parse(cfg, buf, len, path, err, errlen);
	free(buf);
	if (rc)
		return -1;
	/* generation_config.json's eos_token_id, when given, wins. */
	if (gpt2_join(path, sizeof path, dir, "generation_config.json", err, errlen))
		return -1;
	rc = gpt2_read_config_file(path, &buf, &len, 1, err, errlen);
	if (rc)
		return rc < 0 ? -1 : 0;
	json_node *root = gpt2_json_object(buf, len, path, err, errlen);
	free(buf);
	if (!root)
		return -1;
	const json_node *eos = json_get(root, "eos_token_id");
	gpt2_config g = {0};
	rc = 0;
	if (eos) {
		rc = gpt2_json_eos(eos, &g, path, err, errlen);
		cfg->n_eos = g.n_eos;
		memcpy(cfg->eos, g.eos, sizeof cfg->eos);
	}
	json_free(root);
	return rc;
}

/* The first problem of libst's inventory, as one line. */
static int inventory(llama_model *m, const char *file, char *err, size_t errlen, long *alias)
{
	st_arch_report r;
	st_error e;
	*alias = -1;
	st_arch_config same; /* the config read again, beside the files */
	if (st_arch_inventory(m->ck, &same, &r, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	int rc = 0;
	for (size_t i = 0; i < r.n_items && rc == 0; i++) {
		const st_arch_item *it = &r.items[i];
		char name[200];
		gpt2_printable(name, sizeof name, it->name, strlen(it->name));
		switch (it->what) {
		case ST_ARCH_MISSING:
			rc = gpt2_err(err, errlen,
			              "%s: missing tensor '%s' (the "
			              "config implies it)",
			              file, name);
			break;
		case ST_ARCH_MISSHAPEN:
			rc = gpt2_err(err, errlen,
			              "%s: tensor '%s': shape [%llu%s%llu],"
			              " expected [%llu%s%llu]",
			              file, name, (unsigned long long)it->found->shape[0],
			              it->found->ndim > 1 ? ", " : "",
			              (unsigned long long)(it->found->ndim > 1 ? it->found->shape[1]
			                                                       : 0),
			              (unsigned long long)it->shape[0], it->ndim > 1 ? ", " : "",
			              (unsigned long long)it->shape[1]);
			break;
		case ST_ARCH_UNKNOWN:
			rc = gpt2_err(err, errlen,
			              "%s: tensor '%s' is not a parameter "
			              "of this config (a leftover)",
			              file, name);
			break;
		case ST_ARCH_ALIAS:
			*alias = st_checkpoint_find(m->ck, it->name, strlen(it->name));
			break;
		case ST_ARCH_BUFFER: break;
		}
	}
	st_arch_report_free(&r);
	return rc;
}

/* Keep p (malloc'd) with the model; NULL when out of memory (p freed). */
static void *keep(llama_model *m, void *p)
{
	void **c = p ? realloc(m->copies, (m->n_copies + 1) * sizeof *c) : NULL;
	if (!c) {
		free(p);
		return NULL;
	}
	m->copies = c;
	m->copies[m->n_copies++] = p;
	return p;
}

/*
 * A scaled FP8 weight's scales (NAME_scale_inv, else NAME_scale): the
 * pair checked by libst (st_quant_fp8_layout, the block size of
 * config.json), the scales widened to F32, the code table of its type.
 */
static int take_fp8(llama_model *m, const st_tensor *t, llama_mat *out, const char *file, char *err,
                    size_t errlen)
{
	char name[512];
	long si = -1;
	for (int k = 0; k < 2 && si < 0; k++) {
		int n = snprintf(name, sizeof name, "%.*s%s", (int)t->name_len, t->name,
		                 k ? "_scale" : "_scale_inv");
		si = n > 0 && (size_t)n < sizeof name ? st_checkpoint_find(m->ck, name, (size_t)n)
		                                      : -1;
	}
	if (si < 0)
		return gpt2_err(err, errlen, "%s: tensor '%.*s': %s has no %.*s_scale_inv", file,
		                (int)t->name_len, t->name, st_dtype_name(t->dtype),
		                (int)t->name_len, t->name);
	const st_tensor *st = st_checkpoint_tensor(m->ck, (size_t)si, NULL);
	st_quant_fp8 l;
	st_error e;
	const void *sdata;
	if (st_quant_fp8_layout(&l, t, st, m->block_rows, m->block_cols, file, &e) != ST_OK ||
	    st_checkpoint_data(m->ck, (size_t)si, &sdata, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	if (l.experts != 1 || l.rows > INT32_MAX || l.cols > INT32_MAX)
		return gpt2_err(err, errlen, "%s: tensor '%.*s': not a 2-D weight", file,
		                (int)t->name_len, t->name);
	if (m->f8type != ST_DTYPE_F32 && m->f8type != t->dtype)
		return gpt2_err(err, errlen, "%s: tensor '%.*s': %s, where other weights are %s",
		                file, (int)t->name_len, t->name, st_dtype_name(t->dtype),
		                st_dtype_name(m->f8type));
	if (m->f8type != t->dtype) {
		unsigned char codes[256];
		for (int c = 0; c < 256; c++)
			codes[c] = (unsigned char)c;
		st_convert(ST_DTYPE_F32, m->f8_lut, t->dtype, codes, 256, NULL);
		m->f8_bf16_ok = llama_fp8_bf16_table(m->f8_bf16, m->f8_lut);
		m->f8type = t->dtype;
	}
	size_t n = (size_t)(l.scale_rows * l.scale_cols);
	float *scale = keep(m, malloc((n ? n : 1) * sizeof(float)));
	if (!scale)
		return gpt2_err(err, errlen, "out of memory");
	if (st_convert(ST_DTYPE_F32, scale, st->dtype, sdata, n, NULL) != ST_OK)
		return gpt2_err(err, errlen, "%s: tensor '%s': %s scales are not read", file, name,
		                st_dtype_name(st->dtype));
	out->lut = m->f8_lut;
	out->bf16 = m->f8_bf16_ok ? m->f8_bf16 : NULL;
	out->scale = scale;
	out->br = (int)(l.block_rows < l.rows ? l.block_rows : l.rows);
	out->bc = (int)(l.block_cols < l.cols ? l.block_cols : l.cols);
	out->scols = (int)l.scale_cols;
	m->scales_used++;
	return 0;
}

/* A matrix's place: F32, F16, BF16 or scaled FP8, aligned for its dtype. */
static int take_matrix(llama_model *m, size_t i, llama_mat *out, const char *file, char *err,
                       size_t errlen)
{
	const st_tensor *t = st_checkpoint_tensor(m->ck, i, NULL);
	const void *data;
	st_error e;
	int f8 = st_quant_is_f8_weight(t->dtype);
	if (t->dtype != ST_DTYPE_F32 && t->dtype != ST_DTYPE_F16 && t->dtype != ST_DTYPE_BF16 &&
	    !f8)
		return gpt2_err(err, errlen,
		                "%s: tensor '%.*s': dtype %s is not "
		                "one this runner reads (F32, F16, BF16, scaled F8)",
		                file, (int)t->name_len, t->name, st_dtype_name(t->dtype));
	memset(out, 0, sizeof *out);
	if (f8 && take_fp8(m, t, out, file, err, errlen))
		return -1;
	if (st_checkpoint_data(m->ck, i, &data, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	size_t es = gpt2_dtype_size(t->dtype);
	if ((uintptr_t)data % es) {
		/* A writer that does not align: one copy, kept with the model. */
		size_t bytes = (size_t)t->n_elements * es;
		void *p = keep(m, malloc(bytes ? bytes : 1));
		if (!p)
			return gpt2_err(err, errlen, "out of memory");
		memcpy(p, data, bytes);
		data = p;
	}
	out->w = data;
	out->dt = t->dtype;
	if (f8)
		llama_fp8_mark_nan(m->kernels, out, (size_t)t->n_elements);
	return 0;
}

/* A vector widened to F32 at *at (n floats, advanced). */
static int take_vector(llama_model *m, size_t i, float **at, const float **out, const char *file,
                       char *err, size_t errlen)
{
	const st_tensor *t = st_checkpoint_tensor(m->ck, i, NULL);
	const void *data;
	st_error e;
	if (!st_dtype_is_wide_float(t->dtype) && t->dtype != ST_DTYPE_F64)
		return gpt2_err(err, errlen,
		                "%s: tensor '%.*s': dtype %s is not a "
		                "float type",
		                file, (int)t->name_len, t->name, st_dtype_name(t->dtype));
	if (st_checkpoint_data(m->ck, i, &data, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	st_convert(ST_DTYPE_F32, *at, t->dtype, data, (size_t)t->n_elements, NULL);
	*out = *at;
	*at += t->n_elements;
	return 0;
}

/* "model.layers.N.<suffix>" -> layer N and its slot; -1 when not one. */
static int layer_slot(const char *name, int L, int *layer)
{
	const char *p = "model.layers.";
	if (strncmp(name, p, strlen(p)) != 0)
		return -1;
	char *end;
	long n = strtol(name + strlen(p), &end, 10);
	if (*end != '.' || n < 0 || n >= L)
		return -1;
	*layer = (int)n;
	for (size_t s = 0; s < sizeof SLOTS / sizeof SLOTS[0]; s++)
		if (strcmp(end + 1, SLOTS[s].suffix) == 0)
			return (int)s;
	return -1;
}

/* Every parameter st_arch_expected lists, in its place. */
static int place_params(llama_model *m, const char *file, char *err, size_t errlen)
{
	st_arch_param *p;
	size_t n;
	st_error e;
	if (st_arch_expected(&m->config.arch, &p, &n, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	size_t floats = 0;
	for (size_t i = 0; i < n; i++)
		if (p[i].ndim == 1)
			floats += p[i].shape[0];
	m->vectors = malloc((floats ? floats : 1) * sizeof(float));
	m->layers = calloc((size_t)m->config.layers, sizeof *m->layers);
	int rc = !m->vectors || !m->layers ? gpt2_err(err, errlen, "out of memory") : 0;
	m->vectors_n = floats;
	float *at = m->vectors;
	for (size_t i = 0; i < n && rc == 0; i++) {
		long ti = st_checkpoint_find(m->ck, p[i].name, strlen(p[i].name));
		if (ti < 0) { /* st_arch_compare found it: cannot happen */
			rc = gpt2_err(err, errlen, "%s: missing tensor '%s'", file, p[i].name);
			break;
		}
		int layer, s = layer_slot(p[i].name, m->config.layers, &layer);
		if (s >= 0) {
			char *base = (char *)&m->layers[layer] + SLOTS[s].off;
			rc = SLOTS[s].kind == M_MAT
			             ? take_matrix(m, (size_t)ti, (llama_mat *)base, file, err,
			                           errlen)
			             : take_vector(m, (size_t)ti, &at, (const float **)base, file,
			                           err, errlen);
		} else if (strcmp(p[i].name, "model.embed_tokens.weight") == 0) {
			rc = take_matrix(m, (size_t)ti, &m->embed, file, err, errlen);
		} else if (strcmp(p[i].name, "lm_head.weight") == 0) {
			rc = take_matrix(m, (size_t)ti, &m->head, file, err, errlen);
		} else if (strcmp(p[i].name, "model.norm.weight") == 0) {
			rc = take_vector(m, (size_t)ti, &at, &m->norm, file, err, errlen);
		} else {
			rc = gpt2_err(err, errlen,
			              "%s: parameter '%s' has no place in "
			              "this runner",
			              file, p[i].name);
		}
	}
	free(p);
	return rc;
}

/* Every scale tensor scales a weight the model uses. */
static int check_scales(llama_model *m, const char *file, char *err, size_t errlen)
{
	size_t n = 0, first = SIZE_MAX;
	for (size_t i = 0; i < st_checkpoint_n_tensors(m->ck); i++)
		if (st_quant_is_scale(st_checkpoint_tensor(m->ck, i, NULL))) {
			if (first == SIZE_MAX)
				first = i;
			n++;
		}
	if (n == m->scales_used)
		return 0;
	const st_tensor *t = st_checkpoint_tensor(m->ck, first, NULL);
	return gpt2_err(err, errlen,
	                "%s: %zu scale tensors (the first '%.*s') for %zu scaled "
	                "weights: a leftover",
	                file, n, (int)t->name_len, t->name, m->scales_used);
}

/* lm_head.weight of a tied model: it must be embed_tokens' bytes. */
/* Whether tensors a and b (names) both exist with the same dtype and bytes. */
static int same_tensor(llama_model *m, const char *a, const char *b)
{
	long ia = st_checkpoint_find(m->ck, a, strlen(a));
	long ib = st_checkpoint_find(m->ck, b, strlen(b));
	if (ia < 0 || ib < 0)
		return 0;
	const st_tensor *ta = st_checkpoint_tensor(m->ck, (size_t)ia, NULL);
	const st_tensor *tb = st_checkpoint_tensor(m->ck, (size_t)ib, NULL);
	const void *da, *db;
	if (ta->dtype != tb->dtype || ta->n_elements != tb->n_elements ||
	    st_checkpoint_data(m->ck, (size_t)ia, &da, NULL) != ST_OK ||
	    st_checkpoint_data(m->ck, (size_t)ib, &db, NULL) != ST_OK)
		return 0;
	return memcmp(da, db, (size_t)ta->n_elements * gpt2_dtype_size(ta->dtype)) == 0;
}

/*
 * lm_head.weight of a tied model: it must be embed_tokens' bytes (and an
 * FP8 one's scales embed_tokens' scales, which it then accounts for).
 */
static int check_alias(llama_model *m, long ai, const char *file, char *err, size_t errlen)
{
	if (ai < 0)
		return 0;
	int same = same_tensor(m, "lm_head.weight", "model.embed_tokens.weight");
	if (same && m->embed.lut) {
		same = same_tensor(m, "lm_head.weight_scale_inv",
		                   "model.embed_tokens.weight_scale_inv") ||
		       same_tensor(m, "lm_head.weight_scale", "model.embed_tokens.weight_scale");
		m->scales_used += same;
	}
	if (!same)
		return gpt2_err(err, errlen,
		                "%s: tensor 'lm_head.weight' differs "
		                "from model.embed_tokens.weight, but "
		                "tie_word_embeddings is true",
		                file);
	return 0;
}

/* The dtype the matrices share, or F32 when they differ (for the report). */
static st_dtype common_dtype(const llama_model *m)
{
	st_dtype d = m->embed.dt;
	for (int l = 0; l < m->config.layers; l++) {
		const llama_layer *y = &m->layers[l];
		const llama_mat *mats[] = {&y->q, &y->k, &y->v, &y->o, &y->gate, &y->up, &y->down};
		for (size_t i = 0; i < 7; i++)
			if (mats[i]->dt != d)
				return ST_DTYPE_F32;
	}
	return m->head.dt == d ? d : ST_DTYPE_F32;
}

int llama_model_load(llama_model **out, const char *dir, char *err, size_t errlen)
{
	*out = NULL;
	char cdir[4096];
	if (gpt2_config_dir(dir, cdir, sizeof cdir, err, errlen))
		return -1;
	llama_model *m = calloc(1, sizeof *m);
	if (!m)
		return gpt2_err(err, errlen, "out of memory");
	if (read_config(&m->config, cdir, err, errlen))
		goto fail;
	st_error e;
	if (st_checkpoint_open(&m->ck, dir, ST_OPEN_TORCH, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message[0] ? e.message : st_strerror(e.code));
		goto fail;
	}
	const char *file = st_checkpoint_index_path(m->ck) ? st_checkpoint_index_path(m->ck)
	                                                   : st_checkpoint_path(m->ck);
	long alias;
	m->f8type = ST_DTYPE_F32;
	/* The kernels first: which FP8 loop runs a matrix decides whether its
	 * codes are scanned for NaN (take_matrix). */
	if (gpt2_kernels_default(&m->kernels, err, errlen))
		goto fail;
	if (st_config_read_block_size(cdir, &m->block_rows, &m->block_cols, NULL, &e) != ST_OK) {
		gpt2_err(err, errlen, "%s", e.message);
		goto fail;
	}
	if (inventory(m, file, err, errlen, &alias) || place_params(m, file, err, errlen))
		goto fail;
	if (m->config.arch.tied)
		m->head = m->embed;
	if (check_alias(m, alias, file, err, errlen) || check_scales(m, file, err, errlen))
		goto fail;
	m->num_parameters = st_arch_count(&m->config.arch);
	m->wdtype = common_dtype(m);
	m->inv_freq = malloc((size_t)m->config.head_dim / 2 * sizeof(float));
	if (!m->inv_freq) {
		gpt2_err(err, errlen, "out of memory");
		goto fail;
	}
	llama_rope_inv_freq(&m->config, m->inv_freq);
	*out = m;
	return 0;
fail:
	llama_model_free(m);
	return -1;
}

int llama_model_set_threads(llama_model *m, int n, char *err, size_t errlen)
{
	gpt2_pool_free(m->pool);
	m->pool = NULL;
	if (n <= 1)
		return 0;
	return gpt2_pool_new(&m->pool, n, err, errlen);
}

void llama_model_free(llama_model *m)
{
	if (!m)
		return;
	gpt2_pool_free(m->pool);
	for (size_t i = 0; i < m->n_copies; i++)
		free(m->copies[i]);
	free(m->copies);
	free(m->vectors);
	free(m->layers);
	free(m->inv_freq);
	st_checkpoint_close(m->ck);
	free(m);
}
