/*
 * memory.c - what a checkpoint takes in memory (st/memory.h): the
 * weights with the floats in a dtype, from the tensor inventory and
 * quant_summary.c's pairing, and the KV cache from arch.c's sizes.
 */
#include "internal.h"

#include <string.h>

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

int st_memory_load_bytes(const st_checkpoint *ck, const st_dtype *as, size_t n,
                         uint64_t *bytes, st_error *err)
{
	for (size_t k = 0; k < n; k++) {
		if ((unsigned)as[k] >= ST_DTYPE_COUNT || !st_dtype_is_float(as[k]))
			return st__error(err, ST_EINVAL, "cannot hold weights as dtype %d: "
			                 "not a float", (int)as[k]);
		bytes[k] = 0;
	}
	st_quant_summary q;
	int rc = st_quant_summary_load(&q, ck, NULL, NULL, err);
	if (rc != ST_OK && rc != ST_ENOTFOUND)
		return rc;
	const st_quant_tensor *roles = rc == ST_OK ? q.plan.t : NULL;
	size_t nt = st_checkpoint_n_tensors(ck);
	rc = ST_OK;
	for (size_t i = 0; i < nt && rc == ST_OK; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		int stored = !st_dtype_is_float(t->dtype) ||
		             (roles && roles[i].role != ST_QUANT_ROLE_PLAIN);
		for (size_t k = 0; k < n; k++) {
			uint64_t b = t->n_bytes;
			if ((!stored && elem_bytes(t->n_elements, as[k], &b)) ||
			    __builtin_add_overflow(bytes[k], b, &bytes[k])) {
				rc = st__error(err, ST_EINVAL, "%s: the tensors as %s take "
				               "more than 2^64 bytes", st_checkpoint_path(ck),
				               st_dtype_name(as[k]));
				break;
			}
		}
	}
	if (roles)
		st_quant_summary_free(&q);
	return rc;
}

int st_memory_kv_cache(const st_arch_config *cfg, uint64_t context, st_dtype as,
                       uint64_t *bytes, st_error *err)
{
	*bytes = 0;
	if (cfg->family != ST_ARCH_GPT2 && cfg->family != ST_ARCH_LLAMA)
		return st__error(err, ST_EINVAL, "no KV cache: not a known architecture");
	if ((unsigned)as >= ST_DTYPE_COUNT || !st_dtype_is_float(as) || st_dtype_bits(as) % 8)
		return st__error(err, ST_EINVAL, "no KV cache in dtype %d: not a float of "
		                 "whole bytes", (int)as);
	uint64_t per_token = 2, v;
	if (mul_over(per_token, cfg->layers, &per_token) ||
	    mul_over(per_token, cfg->kv_heads, &per_token) ||
	    mul_over(per_token, cfg->head_dim, &per_token) ||
	    mul_over(per_token, st_dtype_bits(as) / 8, &per_token) ||
	    mul_over(per_token, context, &v))
		return st__error(err, ST_EINVAL, "KV cache for %llu tokens: more than "
		                 "2^64 bytes", (unsigned long long)context);
	*bytes = v;
	return ST_OK;
}
