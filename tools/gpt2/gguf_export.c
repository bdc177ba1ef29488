/*
 * gguf_export.c - a GPT-2 GGUF file -> a Hugging Face snapshot (see
 * gguf_export.h). The way there, snapshot -> GGUF, is libst's
 * st_hf_write_gguf (libst/hf_gguf.c).
 */
#include "gpt2/gguf_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"
#include "gpt2/internal.h"

/* llama.cpp's llama_token_type / gguf-py's TokenType. */
enum { TOKEN_NORMAL = 1, TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4 };

/* ---- GGUF -> snapshot -------------------------------------------------- */

struct reader {
	const st_gguf *g;
	const char *in;
	char *err;
	size_t errlen;
};

/* A key's value, which must be of one of the integer types; -1 if absent. */
static int get_uint(const struct reader *r, const char *key, int need,
                    uint64_t *out)
{
	long i = st_gguf_find_kv(r->g, key);
	if (i < 0) {
		if (need)
			return gpt2_err(r->err, r->errlen, "%s: key '%s' is missing",
			                r->in, key);
		return 1;
	}
	const st_gguf_value *v = &st_gguf_kv_at(r->g, (size_t)i)->value;
	switch (v->type) {
	case ST_GGUF_UINT8: case ST_GGUF_UINT16: case ST_GGUF_UINT32:
	case ST_GGUF_UINT64:
		*out = v->v.u;
		return 0;
	case ST_GGUF_INT8: case ST_GGUF_INT16: case ST_GGUF_INT32:
	case ST_GGUF_INT64:
		if (v->v.i >= 0) {
			*out = (uint64_t)v->v.i;
			return 0;
		}
		break;
	default:
		break;
	}
	return gpt2_err(r->err, r->errlen, "%s: key '%s': a %s, expected a "
	                "non-negative integer", r->in, key,
	                st_gguf_type_name(v->type));
}

/* A key's array value of elem_type, or NULL with a message. */
static const st_gguf_value *get_array(const struct reader *r, const char *key,
                                      int elem_type)
{
	long i = st_gguf_find_kv(r->g, key);
	const st_gguf_value *v = i < 0 ? NULL
	                               : &st_gguf_kv_at(r->g, (size_t)i)->value;
	if (!v) {
		gpt2_err(r->err, r->errlen, "%s: key '%s' is missing", r->in, key);
		return NULL;
	}
	if (v->type != ST_GGUF_ARRAY || v->elem_type != elem_type) {
		gpt2_err(r->err, r->errlen, "%s: key '%s': expected an array of %s",
		         r->in, key, st_gguf_type_name(elem_type));
		return NULL;
	}
	return v;
}

static int key_is(const st_gguf *g, const char *key, const char *want)
{
	long i = st_gguf_find_kv(g, key);
	if (i < 0)
		return 0;
	const st_gguf_value *v = &st_gguf_kv_at(g, (size_t)i)->value;
	return v->type == ST_GGUF_STRING && v->n == strlen(want) &&
	       !memcmp(v->v.s, want, v->n);
}

/* The config a GPT-2 GGUF describes, checked as config.json would be. */
static int read_config(const struct reader *r, gpt2_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	if (!key_is(r->g, "general.architecture", "gpt2"))
		return gpt2_err(r->err, r->errlen, "%s: general.architecture is not "
		                "\"gpt2\"", r->in);
	uint64_t ctx, C, Lc, H, ff;
	if (get_uint(r, "gpt2.context_length", 1, &ctx) ||
	    get_uint(r, "gpt2.embedding_length", 1, &C) ||
	    get_uint(r, "gpt2.block_count", 1, &Lc) ||
	    get_uint(r, "gpt2.attention.head_count", 1, &H))
		return -1;
	int rc = get_uint(r, "gpt2.feed_forward_length", 0, &ff);
	if (rc < 0)
		return -1;
	if (rc == 0 && ff != 4 * C)
		return gpt2_err(r->err, r->errlen, "%s: gpt2.feed_forward_length "
		                "%llu: GPT-2's is 4 * %llu", r->in,
		                (unsigned long long)ff, (unsigned long long)C);
	const st_gguf_value *toks = get_array(r, "tokenizer.ggml.tokens",
	                                      ST_GGUF_STRING);
	if (!toks)
		return -1;
	long e = st_gguf_find_kv(r->g, "gpt2.attention.layer_norm_epsilon");
	const st_gguf_value *ev = e < 0 ? NULL
	                                : &st_gguf_kv_at(r->g, (size_t)e)->value;
	if (!ev || ev->type != ST_GGUF_FLOAT32)
		return gpt2_err(r->err, r->errlen, "%s: key "
		                "'gpt2.attention.layer_norm_epsilon': missing or not "
		                "a float32", r->in);
	if (ctx > INT32_MAX || C > INT32_MAX || Lc > INT32_MAX || H > INT32_MAX ||
	    toks->n > INT32_MAX)
		return gpt2_err(r->err, r->errlen, "%s: hyperparameters too large",
		                r->in);
	cfg->max_seq_len = (int)ctx;
	cfg->channels = (int)C;
	cfg->num_layers = (int)Lc;
	cfg->num_heads = (int)H;
	cfg->vocab_size = (int)toks->n;
	cfg->layer_norm_eps = (float)ev->v.f;
	uint64_t eos;
	rc = get_uint(r, "tokenizer.ggml.eos_token_id", 0, &eos);
	if (rc < 0)
		return -1;
	if (rc == 0 && eos < toks->n) {
		cfg->n_eos = 1;
		cfg->eos[0] = (int)eos;
	}
	uint64_t bos;
	rc = get_uint(r, "tokenizer.ggml.bos_token_id", 0, &bos);
	if (rc < 0)
		return -1;
	if (rc == 0 && bos < toks->n) {
		cfg->has_bos = 1;
		cfg->bos = (int)bos;
	}
	char msg[512];
	if (gpt2_config_check(cfg, msg, sizeof msg))
		return gpt2_err(r->err, r->errlen, "%s: %s", r->in, msg);
	return 0;
}

/* A "[PAD<id>]" filler the exporter (or the converter) made for a hole. */
static int is_pad(const st_gguf_value *t, uint64_t id)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "[PAD%llu]", (unsigned long long)id);
	return t->n == (uint64_t)n && !memcmp(t->v.s, buf, (size_t)n);
}

/* The tokenizer files write_tokenizer makes, in memory (malloc'd). */
static const char *const tokenizer_names[3] = {
	"vocab.json", "merges.txt", "tokenizer.json",
};
struct tokenizer_files {
	char *data[3];
	size_t len[3];
};

/*
 * vocab.json, merges.txt and tokenizer.json into tf, rebuilt from the
 * tokenizer.ggml arrays as Hugging Face's GPT-2 files hold them.
 */
static int write_tokenizer(const struct reader *r, struct tokenizer_files *tf)
{
	const st_gguf_value *toks = get_array(r, "tokenizer.ggml.tokens",
	                                      ST_GGUF_STRING);
	const st_gguf_value *merges = get_array(r, "tokenizer.ggml.merges",
	                                        ST_GGUF_STRING);
	if (!toks || !merges)
		return -1;
	const st_gguf_value *types = NULL;
	if (st_gguf_find_kv(r->g, "tokenizer.ggml.token_type") >= 0 &&
	    !(types = get_array(r, "tokenizer.ggml.token_type", ST_GGUF_INT32)))
		return -1;
	if (types && types->n != toks->n)
		return gpt2_err(r->err, r->errlen, "%s: tokenizer.ggml.token_type "
		                "has %llu entries for %llu tokens", r->in,
		                (unsigned long long)types->n,
		                (unsigned long long)toks->n);
	if (!key_is(r->g, "tokenizer.ggml.model", "gpt2"))
		return gpt2_err(r->err, r->errlen, "%s: tokenizer.ggml.model is not "
		                "\"gpt2\" (GPT-2's byte-level BPE)", r->in);
	FILE *v = open_memstream(&tf->data[0], &tf->len[0]);
	FILE *m = open_memstream(&tf->data[1], &tf->len[1]);
	FILE *j = open_memstream(&tf->data[2], &tf->len[2]);
	int rc = -1;
	if (!v || !m || !j) {
		gpt2_err(r->err, r->errlen, "%s: out of memory for the tokenizer "
		         "files", r->in);
		goto out;
	}
	/* added_tokens: the control and user-defined tokens, but fillers. */
	fputs("{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, "
	      "\"added_tokens\": [", j);
	int first = 1;
	for (uint64_t i = 0; types && i < toks->n; i++) {
		st_gguf_value t, ty;
		st_gguf_array_get(toks, i, &t);
		st_gguf_array_get(types, i, &ty);
		if ((ty.v.i != TOKEN_CONTROL && ty.v.i != TOKEN_USER_DEFINED) ||
		    is_pad(&t, i))
			continue;
		fprintf(j, "%s{\"id\": %llu, \"content\": ", first ? "" : ", ",
		        (unsigned long long)i);
		cli_json_string(j, t.v.s, (size_t)t.n);
		fprintf(j, ", \"single_word\": false, \"lstrip\": false, "
		        "\"rstrip\": false, \"normalized\": true, \"special\": %s}",
		        ty.v.i == TOKEN_CONTROL ? "true" : "false");
		first = 0;
	}
	fputs("], \"normalizer\": null, "
	      "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
	      "false, \"trim_offsets\": true, \"use_regex\": true}, "
	      "\"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
	      "true, \"trim_offsets\": false, \"use_regex\": true}, "
	      "\"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
	      "\"trim_offsets\": true, \"use_regex\": true}, "
	      "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": "
	      "null, \"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": "
	      "\"\", \"fuse_unk\": false, \"byte_fallback\": false, "
	      "\"ignore_merges\": false, \"vocab\": {", j);
	fputc('{', v);
	first = 1;
	for (uint64_t i = 0; i < toks->n; i++) {
		st_gguf_value t;
		st_gguf_array_get(toks, i, &t);
		if (is_pad(&t, i))
			continue;
		for (int k = 0; k < 2; k++) {
			FILE *f = k ? j : v;
			if (!first)
				fputs(", ", f);
			cli_json_string(f, t.v.s, (size_t)t.n);
			fprintf(f, ": %llu", (unsigned long long)i);
		}
		first = 0;
	}
	fputs("}\n", v);
	fputs("}, \"merges\": [", j);
	fputs("#version: 0.2\n", m);
	for (uint64_t i = 0; i < merges->n; i++) {
		st_gguf_value t;
		st_gguf_array_get(merges, i, &t);
		if (memchr(t.v.s, '\n', (size_t)t.n)) {
			gpt2_err(r->err, r->errlen, "%s: tokenizer.ggml.merges[%llu] "
			         "holds a newline", r->in, (unsigned long long)i);
			goto out;
		}
		fwrite(t.v.s, 1, (size_t)t.n, m);
		fputc('\n', m);
		if (i)
			fputs(", ", j);
		cli_json_string(j, t.v.s, (size_t)t.n);
	}
	fputs("]}}\n", j);
	rc = 0;
out:
	for (int k = 0; k < 3; k++) {
		FILE *f = k == 0 ? v : k == 1 ? m : j;
		if (f && (ferror(f) | fclose(f)) && !rc)
			rc = gpt2_err(r->err, r->errlen, "%s: out of memory for "
			              "the tokenizer files", r->in);
	}
	return rc;
}

int gpt2_export_gguf_to_hf(const char *in, const char *out_dir, int dtype,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	st_gguf *g = NULL;
	st_error e;
	if (st_gguf_open_set(&g, in, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	struct reader r = {.g = g, .in = in, .err = err, .errlen = errlen};
	gpt2_config cfg;
	gpt2_export_snapshot *s = NULL;
	float *a = NULL, *b = NULL;
	struct tokenizer_files tf = {{NULL}, {0}};
	int rc = -1;
	if (read_config(&r, &cfg))
		goto out;
	/* Every tensor of the file must be a GPT-2 parameter of this shape. */
	size_t n = st_gguf_n_tensors(g), expect = 4 + 12 * (size_t)cfg.num_layers;
	int one = -2;
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		char hf[128];
		st_arch_gguf_info info;
		if (st_arch_gpt2_from_gguf(t->name, hf, sizeof hf, &info)) {
			gpt2_err(err, errlen, "%s: tensor '%s': not a GPT-2 tensor", in,
			         t->name);
			goto out;
		}
		/* The matrices the type applied to (the others are F32). */
		int kind = (int)t->type;
		if (!info.keep_f32)
			one = one == -2 || one == kind ? kind : -1;
	}
	if (n != expect) {
		gpt2_err(err, errlen, "%s: %zu tensors; a GPT-2 of %d layers has %zu",
		         in, n, cfg.num_layers, expect);
		goto out;
	}
	/* The snapshot's dtype: asked for, else the matrices' (F32 for Q8_0). */
	st_dtype dst = dtype >= 0 ? (st_dtype)dtype
	               : one == ST_GGML_F16 ? ST_DTYPE_F16
	               : one == ST_GGML_BF16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
	memset(res, 0, sizeof *res);
	res->src_dtype = -1;
	res->dst_dtype = dst;
	res->exact = 1;
	/* The tokenizer files, rebuilt from the file, not copied from a folder. */
	if (write_tokenizer(&r, &tf))
		goto out;
	gpt2_export_opts oo = *o;
	oo.tokenizer_dir = NULL;
	if (gpt2_export_snapshot_open(&s, out_dir, &cfg, dst, &oo, err, errlen))
		goto out;
	for (int k = 0; k < 3; k++)
		if (gpt2_export_snapshot_add(s, tokenizer_names[k], tf.data[k],
		                             tf.len[k], err, errlen))
			goto out;
	uint64_t maxn = 0;
	for (size_t i = 0; i < gpt2_export_snapshot_n_tensors(s); i++) {
		uint64_t k = gpt2_export_snapshot_tensor(s, i)->n_elements;
		maxn = k > maxn ? k : maxn;
	}
	a = malloc((size_t)maxn * sizeof *a);
	b = malloc((size_t)maxn * sizeof *b);
	if (!a || !b) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < gpt2_export_snapshot_n_tensors(s); i++) {
		const st_tensor *t = gpt2_export_snapshot_tensor(s, i);
		char gname[128];
		st_arch_gguf_info info;
		long gi = -1;
		if (!st_arch_gpt2_to_gguf(t->name, gname, sizeof gname, &info))
			gi = st_gguf_find(g, gname);
		if (gi < 0) {
			gpt2_err(err, errlen, "%s: tensor '%s' (for %s) is missing", in,
			         gname, t->name);
			goto out;
		}
		const st_gguf_tensor *gt = st_gguf_tensor_at(g, (size_t)gi);
		/* GGUF dims are the HF shape reversed, or as is when transposed. */
		int tr = info.transpose && t->ndim == 2;
		uint64_t want0 = t->ndim == 1 ? t->shape[0]
		                 : tr ? t->shape[0] : t->shape[1];
		uint64_t want1 = t->ndim == 1 ? 1 : tr ? t->shape[1] : t->shape[0];
		if (gt->ndim != t->ndim || gt->dims[0] != want0 ||
		    gt->dims[1] != want1) {
			gpt2_err(err, errlen, "%s: tensor '%s': dims [%llu, %llu], "
			         "expected [%llu, %llu] for %s", in, gname,
			         (unsigned long long)gt->dims[0],
			         (unsigned long long)gt->dims[1],
			         (unsigned long long)want0, (unsigned long long)want1,
			         t->name);
			goto out;
		}
		int drc = st_ggml_to_f32(gt->type, st_gguf_tensor_data(g, (size_t)gi),
		                         a, gt->n_elements);
		if (drc != ST_OK) {
			/* Every float and quantized type decodes: what is left is an
			 * integer type, or a type libst does not know. */
			if (st_ggml_type_name(gt->type))
				gpt2_err(err, errlen, "%s: tensor '%s': %s values are not "
				         "floats: not converted", in, gname,
				         st_ggml_type_name(gt->type));
			else
				gpt2_err(err, errlen, "%s: tensor '%s': type %u (unknown): "
				         "libst does not know the type, its values were not "
				         "read: not converted", in, gname, gt->type);
			goto out;
		}
		const float *x = a;
		if (tr) {
			/* [out, in] -> HF's [in, out]. */
			uint64_t rows = t->shape[0], cols = t->shape[1];
			for (uint64_t q = 0; q < cols; q++)
				for (uint64_t p = 0; p < rows; p++)
					b[p * cols + q] = a[q * rows + p];
			x = b;
		}
		st_dtype src = ST_DTYPE_F32;
		int widened = !st_ggml_type_dtype(gt->type, &src) &&
		              st_dtype_bits(src) <= st_dtype_bits(dst);
		res->exact &= widened || src == dst;
		if (gpt2_export_snapshot_put(s, x, (size_t)t->n_elements, err,
		                             errlen))
			goto out;
		res->parameters += t->n_elements;
	}
	if (gpt2_export_snapshot_finish(s, &cfg, err, errlen))
		goto out;
	rc = 0;
out:
	gpt2_export_snapshot_free(s);
	for (int k = 0; k < 3; k++)
		free(tf.data[k]);
	free(a);
	free(b);
	st_gguf_close(g);
	return rc;
}
