/*
 * memory.c - what a checkpoint takes in memory (st/memory.h): the
 * weights with the floats in a dtype, from the tensor inventory and
 * quant_summary.c's pairing, and the KV cache from arch.c's sizes.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* The sizes a config may give (as arch.c's). */
#define MAX_SIZE ((uint64_t)1 << 31)
#define MAX_LAYERS 4096

/* a * b into *out; 1 when it would pass 2^64. */
static int mul_over(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out);
}

/* The bytes of n elements of d, a partial byte counted whole. */
static int elem_bytes(uint64_t n, st_dtype d, uint64_t *out)
{
	uint64_t bits;
	if (mul_over(n, st_dtype_bits(d), &bits))
		return 1;
	*out = bits / 8 + (bits % 8 != 0);
	return 0;
}

static int check_as(const st_dtype *as, size_t n, uint64_t *bytes, st_error *err);

/*
 * One tensor of ne elements stored in nb bytes into each bytes[k]: as
 * stored, or at as[k]'s size. ST_OK, or ST_EINVAL past 2^64 (path names
 * the checkpoint).
 */
static int add_tensor(uint64_t *bytes, const st_dtype *as, size_t n, int stored, uint64_t ne,
                      uint64_t nb, const char *path, st_error *err)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t b = nb;
		if ((!stored && elem_bytes(ne, as[k], &b)) ||
		    __builtin_add_overflow(bytes[k], b, &bytes[k]))
			return st__error(err, ST_EINVAL,
			                 "%s: the tensors as %s take more than 2^64 bytes", path,
			                 st_dtype_name(as[k]));
	}
	return ST_OK;
}

int st_memory_load_bytes(const st_checkpoint *ck, const st_dtype *as, size_t n, uint64_t *bytes,
                         st_error *err)
{
	int rc = check_as(as, n, bytes, err);
	if (rc != ST_OK)
		return rc;
	st_quant_summary q;
	rc = st_quant_summary_load(&q, ck, NULL, NULL, err);
	if (rc != ST_OK && rc != ST_ENOTFOUND)
		return rc;
	const st_quant_tensor *roles = rc == ST_OK ? q.plan.t : NULL;
	size_t nt = st_checkpoint_n_tensors(ck);
	rc = ST_OK;
	for (size_t i = 0; i < nt && rc == ST_OK; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		int stored = !st_dtype_is_float(t->dtype) ||
		             (roles && roles[i].role != ST_QUANT_ROLE_PLAIN);
		rc = add_tensor(bytes, as, n, stored, t->n_elements, t->n_bytes,
		                st_checkpoint_path(ck), err);
	}
	if (roles)
		st_quant_summary_free(&q);
	return rc;
}

int st_memory_kv_cache(const st_arch_config *cfg, uint64_t context, st_dtype as, uint64_t *bytes,
                       st_error *err)
{
	*bytes = 0;
	if (cfg->family != ST_ARCH_GPT2 && cfg->family != ST_ARCH_LLAMA)
		return st__error(err, ST_EINVAL, "no KV cache: not a known architecture");
	if ((unsigned)as >= ST_DTYPE_COUNT || !st_dtype_is_float(as) || st_dtype_bits(as) % 8)
		return st__error(err, ST_EINVAL,
		                 "no KV cache in dtype %d: not a float of whole bytes", (int)as);
	uint64_t per_token = 2, v;
	if (mul_over(per_token, cfg->layers, &per_token) ||
	    mul_over(per_token, cfg->kv_heads, &per_token) ||
	    mul_over(per_token, cfg->head_dim, &per_token) ||
	    mul_over(per_token, st_dtype_bits(as) / 8, &per_token) ||
	    mul_over(per_token, context, &v))
		return st__error(err, ST_EINVAL, "KV cache for %llu tokens: more than 2^64 bytes",
		                 (unsigned long long)context);
	*bytes = v;
	return ST_OK;
}

/* ---- a GGUF file ----------------------------------------------------------- */

static int check_as(const st_dtype *as, size_t n, uint64_t *bytes, st_error *err)
{
	for (size_t k = 0; k < n; k++) {
		if ((unsigned)as[k] >= ST_DTYPE_COUNT || !st_dtype_is_float(as[k]))
			return st__error(err, ST_EINVAL,
			                 "cannot hold weights as dtype %d: not a float",
			                 (int)as[k]);
		bytes[k] = 0;
	}
	return ST_OK;
}

int st_memory_gguf_load_bytes(const st_gguf *g, const st_dtype *as, size_t n, uint64_t *bytes,
                              st_error *err)
{
	int rc = check_as(as, n, bytes, err);
	size_t nt = st_gguf_n_tensors(g);
	for (size_t i = 0; i < nt && rc == ST_OK; i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		st_dtype d;
		int stored = st_ggml_type_dtype(t->type, &d) != ST_OK || !st_dtype_is_float(d);
		rc = add_tensor(bytes, as, n, stored, t->n_elements, t->n_bytes, st_gguf_path(g),
		                err);
	}
	return rc;
}

/* See internal.h. */
int st__gguf_size(const st_gguf *g, const char *arch, const char *suffix, uint64_t def,
                  uint64_t max, uint64_t *out, st_error *err)
{
	char key[160];
	snprintf(key, sizeof key, "%s.%s", arch, suffix);
	long i = st_gguf_find_kv(g, key);
	if (i < 0) {
		if (def) {
			*out = def;
			return ST_OK;
		}
		return st__error(err, ST_EFORMAT, "%s: '%s' is missing", st_gguf_path(g), key);
	}
	const st_gguf_value *v = &st_gguf_kv_at(g, (size_t)i)->value;
	int is_uint = v->type == ST_GGUF_UINT8 || v->type == ST_GGUF_UINT16 ||
	              v->type == ST_GGUF_UINT32 || v->type == ST_GGUF_UINT64;
	int is_int = v->type == ST_GGUF_INT8 || v->type == ST_GGUF_INT16 ||
	             v->type == ST_GGUF_INT32 || v->type == ST_GGUF_INT64;
	uint64_t x = is_uint ? v->v.u : is_int && v->v.i > 0 ? (uint64_t)v->v.i : 0;
	if (!(is_uint || is_int))
		return st__error(err, ST_EFORMAT, "%s: '%s' is of type %s, expected an integer",
		                 st_gguf_path(g), key, st_gguf_type_name(v->type));
	if (x < 1 || x > max)
		return st__error(err, ST_EFORMAT, "%s: '%s' is %lld, expected 1 to %llu",
		                 st_gguf_path(g), key, is_int ? (long long)v->v.i : (long long)x,
		                 (unsigned long long)max);
	*out = x;
	return ST_OK;
}

int st_memory_gguf_config(const st_gguf *g, st_arch_config *cfg, st_error *err)
{
	memset(cfg, 0, sizeof *cfg);
	long ai = st_gguf_find_kv(g, "general.architecture");
	const st_gguf_value *a = ai < 0 ? NULL : &st_gguf_kv_at(g, (size_t)ai)->value;
	if (!a || a->type != ST_GGUF_STRING)
		return st__error(err, ST_EUNSUPPORTED, "%s: no general.architecture",
		                 st_gguf_path(g));
	size_t al = a->n < sizeof cfg->arch - 1 ? (size_t)a->n : sizeof cfg->arch - 1;
	memcpy(cfg->arch, a->v.s, al);
	cfg->arch[al] = 0;
	/* A name with a NUL or of another family: nothing known to compute. */
	if (strlen(cfg->arch) != a->n)
		return st__error(err, ST_EUNSUPPORTED, "%s: architecture not known",
		                 st_gguf_path(g));
	if (!strcmp(cfg->arch, "gpt2"))
		cfg->family = ST_ARCH_GPT2;
	else if (!strcmp(cfg->arch, "llama") || !strcmp(cfg->arch, "qwen2") ||
	         !strcmp(cfg->arch, "qwen3"))
		cfg->family = ST_ARCH_LLAMA;
	else
		return st__error(err, ST_EUNSUPPORTED, "%s: architecture '%s' not known",
		                 st_gguf_path(g), cfg->arch);
	const char *arch = cfg->arch;
	if (st__gguf_size(g, arch, "block_count", 0, MAX_LAYERS, &cfg->layers, err) ||
	    st__gguf_size(g, arch, "attention.head_count", 0, MAX_SIZE, &cfg->heads, err) ||
	    st__gguf_size(g, arch, "attention.head_count_kv", cfg->heads, MAX_SIZE, &cfg->kv_heads,
	                  err) ||
	    st__gguf_size(g, arch, "embedding_length", 0, MAX_SIZE, &cfg->hidden, err))
		goto bad;
	if (cfg->heads % cfg->kv_heads) {
		st__error(err, ST_EFORMAT,
		          "%s: head_count %llu is not a multiple of head_count_kv %llu",
		          st_gguf_path(g), (unsigned long long)cfg->heads,
		          (unsigned long long)cfg->kv_heads);
		goto bad;
	}
	uint64_t vlen;
	if (st__gguf_size(g, arch, "attention.key_length",
	                  cfg->hidden / cfg->heads ? cfg->hidden / cfg->heads : 1, MAX_SIZE,
	                  &cfg->head_dim, err) ||
	    st__gguf_size(g, arch, "attention.value_length", cfg->head_dim, MAX_SIZE, &vlen, err))
		goto bad;
	if (vlen != cfg->head_dim) {
		st__error(err, ST_EUNSUPPORTED, "%s: key_length %llu and value_length %llu differ",
		          st_gguf_path(g), (unsigned long long)cfg->head_dim,
		          (unsigned long long)vlen);
		cfg->family = 0;
		return ST_EUNSUPPORTED;
	}
	return ST_OK;
bad:
	cfg->family = 0;
	return ST_EFORMAT;
}
