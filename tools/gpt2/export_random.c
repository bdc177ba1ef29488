/*
 * export_random.c - gpt2export's random snapshots: GPT-2's initialisation
 * (export.h says which values), drawn from per-tensor xoshiro256** streams
 * so that the same seed gives the same bytes, written through the snapshot
 * folder of export_snapshot.c.
 */
#include "gpt2/export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2/export_impl.h"
#include "gpt2/internal.h"

/* Short for export_impl.h's chunk. */
#define CHUNK GPT2_EXPORT_CHUNK

void gpt2_export_rng_init(gpt2_export_rng *r, uint64_t seed,
                          const char *name, size_t len)
{
	/* FNV-1a 64 of the name: each tensor its own stream. */
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 0x100000001b3u;
	}
	uint64_t x = seed ^ (h * 0x9e3779b97f4a7c15u);
	for (int i = 0; i < 4; i++)
		r->s[i] = gpt2_splitmix64(&x);
	r->has_spare = 0;
	r->spare = 0;
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna). */
uint64_t gpt2_export_rng_next(gpt2_export_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double gpt2_export_rng_normal(gpt2_export_rng *r)
{
	if (r->has_spare) {
		r->has_spare = 0;
		return r->spare;
	}
	/* u1 in (0, 1] so the logarithm is finite; u2 in [0, 1). */
	double u1 = (double)((gpt2_export_rng_next(r) >> 11) + 1) * 0x1.0p-53;
	double u2 = (double)(gpt2_export_rng_next(r) >> 11) * 0x1.0p-53;
	double rad = sqrt(-2.0 * log(u1));
	double th = 6.283185307179586476925 * u2;
	r->spare = rad * sin(th);
	r->has_spare = 1;
	return rad * cos(th);
}

int gpt2_export_init(const gpt2_config *cfg, int slot, double *value)
{
	switch (slot) {
	case GPT2_LN1W:
	case GPT2_LN2W:
	case GPT2_LNFW:
		*value = 1.0;
		return 0;
	case GPT2_WTE:
	case GPT2_WPE:
	case GPT2_QKVW:
	case GPT2_FCW:
		*value = 0.02;
		return 1;
	case GPT2_ATTPROJW:
	case GPT2_FCPROJW:
		/* The residual projections, scaled for depth (GPT-2 paper 2.3). */
		*value = 0.02 / sqrt(2.0 * cfg->num_layers);
		return 1;
	default:
		*value = 0.0;
		return 0;
	}
}

int gpt2_export_random(const char *out_dir, const gpt2_config *cfg,
                       uint64_t seed, const gpt2_export_opts *o,
                       char *err, size_t errlen)
{
	if (gpt2_config_check(cfg, err, errlen))
		return -1;
	st_dtype dst = o->dtype >= 0 ? (st_dtype)o->dtype : ST_DTYPE_F32;
	if (gpt2_snapshot_dtype(dst, err, errlen))
		return -1;
	float *a = malloc(CHUNK * sizeof(float));
	gpt2_snapshot_out snap;
	int rc = -1;
	memset(&snap, 0, sizeof snap);
	if (!a) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	if (gpt2_snapshot_out_open(&snap, out_dir, cfg, dst, o, "initialising",
	                           err, errlen))
		goto out;
	for (size_t i = 0; i < st_writer_n_tensors(snap.w); i++) {
		const st_tensor *t = st_writer_tensor(snap.w, i);
		int slot, layer;
		gpt2_writer_slot(cfg, t, &slot, &layer);
		double v;
		int normal = gpt2_export_init(cfg, slot, &v);
		gpt2_export_rng rng;
		gpt2_export_rng_init(&rng, seed, t->name, t->name_len);
		size_t n = (size_t)t->n_elements;
		for (size_t off = 0; off < n; off += CHUNK) {
			size_t k = n - off < CHUNK ? n - off : CHUNK;
			for (size_t j = 0; j < k; j++)
				a[j] = normal ? (float)(v * gpt2_export_rng_normal(&rng))
				              : (float)v;
			if (gpt2_sink_put(&snap.sink, ST_DTYPE_F32, a, k, err, errlen))
				goto out;
		}
	}
	if (gpt2_snapshot_out_finish(&snap, cfg, err, errlen))
		goto out;
	rc = 0;
out:
	gpt2_snapshot_out_free(&snap);
	free(a);
	return rc;
}
