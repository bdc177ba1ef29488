/*
 * gpt2run_check.c - gpt2run --check REF and --logits-out: the reference's
 * logits, prompt and greedy ids, compared with this run's (gpt2run.h).
 */
#include "gpt2/gpt2run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"

/*
 * Open REF and find its F32-convertible tensor 'logits' (and 'ids', for a
 * prompt). Exits 2 when REF cannot be read or has no such tensor.
 */
st_checkpoint *gpt2run_open_ref(const char *path, long *logits_i)
{
	st_checkpoint *ref;
	st_error e;
	if (st_checkpoint_open(&ref, path, 0, &e) != ST_OK) {
		cli_error_path(path, &e);
		exit(CLI_ERROR);
	}
	*logits_i = st_checkpoint_find(ref, "logits", 6);
	if (*logits_i < 0)
		cli_die(CLI_ERROR, "%s: no tensor 'logits'", path);
	const st_tensor *t = st_checkpoint_tensor(ref, (size_t)*logits_i, NULL);
	if (!st_dtype_is_wide_float(t->dtype))
		cli_die(CLI_ERROR, "%s: tensor 'logits': dtype %s is not a float type", path,
		        st_dtype_name(t->dtype));
	if (t->ndim != 2)
		cli_die(CLI_ERROR,
		        "%s: tensor 'logits': %u dimensions, expected 2 "
		        "[tokens, vocab_size]",
		        path, t->ndim);
	return ref;
}

/* REF's integer tensor i (name) as token ids. */
static int32_t *ref_int_ids(st_checkpoint *ref, size_t i, const char *name, const char *path,
                            size_t *n)
{
	const st_tensor *t = st_checkpoint_tensor(ref, i, NULL);
	const void *data;
	st_error e;
	if (st_checkpoint_data(ref, i, &data, &e) != ST_OK)
		cli_die(CLI_ERROR, "%s", e.message);
	size_t count = (size_t)t->n_elements;
	int32_t *ids = cli_xmalloc((count ? count : 1) * sizeof *ids);
	for (size_t k = 0; k < count; k++) {
		int64_t v;
		if (t->dtype == ST_DTYPE_I64) {
			memcpy(&v, (const char *)data + 8 * k, 8);
		} else {
			int32_t w;
			memcpy(&w, (const char *)data + 4 * k, 4);
			v = w;
		}
		if (v < 0 || v > INT32_MAX)
			cli_die(CLI_ERROR, "%s: tensor '%s': %lld is not a token id", path, name,
			        (long long)v);
		ids[k] = (int32_t)v;
	}
	*n = count;
	return ids;
}

/* REF's 'ids' (I64 or I32, 1-D) as the prompt; NULL when it has none. */
int32_t *gpt2run_ref_ids(st_checkpoint *ref, const char *path, size_t *n)
{
	long i = st_checkpoint_find(ref, "ids", 3);
	if (i < 0)
		return NULL;
	const st_tensor *t = st_checkpoint_tensor(ref, (size_t)i, NULL);
	if (t->ndim != 1 || (t->dtype != ST_DTYPE_I64 && t->dtype != ST_DTYPE_I32))
		return NULL;
	return ref_int_ids(ref, (size_t)i, "ids", path, n);
}

/* Compare; print the max abs diff and where; return the exit code. */
int gpt2run_check_logits(st_checkpoint *ref, long li, const char *path, const float *logits, int T,
                         int V, double atol)
{
	const st_tensor *t = st_checkpoint_tensor(ref, (size_t)li, NULL);
	if (t->shape[0] != (uint64_t)T || t->shape[1] != (uint64_t)V) {
		cli_warn("%s: tensor 'logits': shape [%llu, %llu] does not match "
		         "this run ([%d, %d]: prompt tokens, vocab_size)",
		         path, (unsigned long long)t->shape[0], (unsigned long long)t->shape[1], T,
		         V);
		return CLI_NO;
	}
	const void *data;
	st_error e;
	if (st_checkpoint_data(ref, (size_t)li, &data, &e) != ST_OK)
		cli_die(CLI_ERROR, "%s", e.message);
	size_t n = (size_t)T * (size_t)V, es = st_dtype_bits(t->dtype) / 8;
	enum { CHUNK = 4096 };
	float buf[CHUNK];
	double worst = -1.0;
	size_t at = 0;
	float got_at = 0, want_at = 0;
	for (size_t i = 0; i < n; i += CHUNK) {
		size_t k = n - i < CHUNK ? n - i : CHUNK;
		st_convert(ST_DTYPE_F32, buf, t->dtype, (const char *)data + i * es, k, NULL);
		for (size_t j = 0; j < k; j++) {
			float a = logits[i + j], b = buf[j];
			double d;
			if (a == b)
				d = 0.0; /* also equal infinities */
			else if (isnan(a) && isnan(b))
				d = 0.0;
			else if (isnan(a) || isnan(b))
				d = INFINITY;
			else
				d = fabs((double)a - (double)b);
			if (d > worst) {
				worst = d;
				at = i + j;
				got_at = a;
				want_at = b;
			}
		}
	}
	int ok = worst <= atol;
	printf("max abs diff %.3g at position %zu, token %zu (%.9g, reference "
	       "%.9g): %s (atol %g, %d positions x %d logits)\n",
	       worst, at / (size_t)V, at % (size_t)V, (double)got_at, (double)want_at,
	       ok ? "OK" : "MISMATCH", atol, T, V);
	return ok ? CLI_OK : CLI_NO;
}

/* REF's 'greedy' (I64 or I32, 1-D) ids; NULL when it has none. */
int32_t *gpt2run_ref_greedy(st_checkpoint *ref, const char *path, size_t *n)
{
	*n = 0;
	long i = st_checkpoint_find(ref, "greedy", 6);
	if (i < 0)
		return NULL;
	const st_tensor *t = st_checkpoint_tensor(ref, (size_t)i, NULL);
	if (t->ndim != 1 || (t->dtype != ST_DTYPE_I64 && t->dtype != ST_DTYPE_I32))
		cli_die(CLI_ERROR,
		        "%s: tensor 'greedy': expected 1-D I64 or I32 "
		        "token ids, got %s with %u dimensions",
		        path, st_dtype_name(t->dtype), t->ndim);
	return ref_int_ids(ref, (size_t)i, "greedy", path, n);
}

/*
 * Level 3: generate n ids greedily after the prompt (last: its last
 * logits) and compare with REF's; print the first step that differs.
 */
int gpt2run_check_greedy(model *m, const float *last, const int32_t *want, size_t n,
                         const char *path)
{
	int V = m->vocab_size;
	float *logits = cli_xmalloc((size_t)V * sizeof(float));
	memcpy(logits, last, (size_t)V * sizeof(float));
	char err[1024];
	for (size_t k = 0; k < n; k++) {
		int32_t next = gpt2_argmax(logits, V);
		if (next != want[k]) {
			printf("greedy: step %zu of %zu: id %ld, reference %ld: "
			       "MISMATCH\n",
			       k + 1, n, (long)next, (long)want[k]);
			free(logits);
			return CLI_NO;
		}
		if (k + 1 < n && model_forward(m, &next, 1, logits, 0, err, sizeof err))
			cli_die(CLI_ERROR, "%s", err);
	}
	char *shown = cli_printable(path, strlen(path));
	printf("greedy: %zu ids match %s: OK\n", n, shown);
	free(shown);
	free(logits);
	return CLI_OK;
}

void gpt2run_write_logits(const char *path, const float *logits, int T, int V)
{
	st_writer *w;
	st_error e;
	uint64_t shape[2] = {(uint64_t)T, (uint64_t)V};
	if (st_writer_new(&w, &e) != ST_OK ||
	    st_writer_add(w, "logits", 6, ST_DTYPE_F32, 2, shape, &e) != ST_OK ||
	    cli_writer_open(w, path, &e) != ST_OK ||
	    st_writer_write(w, logits, (size_t)T * (size_t)V * sizeof(float), &e) != ST_OK ||
	    st_writer_finish(w, &e) != ST_OK) {
		st_writer_free(w);
		cli_error_path(path, &e);
		exit(CLI_ERROR);
	}
	st_writer_free(w);
}
