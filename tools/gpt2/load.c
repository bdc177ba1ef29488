/*
 * load.c - filling a model from a checkpoint through libst: every tensor
 * checked against the name table (name, dtype, shape, no shared bytes,
 * the tied head), then converted into its slot.
 *
 * It decides what a checkpoint must hold and refuses everything else, in
 * one line naming the file, the tensor and the numbers.
 */
#include "gpt2/gpt2.h"
#include "gpt2/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fmt_shape(char *out, size_t size, unsigned ndim,
                      const uint64_t *shape)
{
	size_t o = 0;
	o += (size_t)snprintf(out, size, "[");
	for (unsigned d = 0; d < ndim && o < size; d++)
		o += (size_t)snprintf(out + o, size - o, "%s%llu", d ? ", " : "",
		                      (unsigned long long)shape[d]);
	if (o < size)
		snprintf(out + o, size - o, "]");
}

static const char *tensor_file(st_checkpoint *ck, size_t fi)
{
	return st_file_path(st_checkpoint_file(ck, fi));
}

/* Where a parameter's bytes are: a file of the checkpoint, a range in it. */
struct span {
	size_t file, index;
	uint64_t begin, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/*
 * No two parameters may share bytes. A PyTorch checkpoint can hold many
 * views of one storage (safetensors cannot: libst refuses overlaps), so a
 * file of a few megabytes could give every layer the same bytes and have
 * the loader allocate, or gpt2export write, a model thousands of times its
 * size. No GPT-2 checkpoint shares a parameter's storage but for the tied
 * lm_head.weight, which is not among these.
 */
static int check_no_shared_data(st_checkpoint *ck, const size_t *where,
                                size_t n, char *err, size_t errlen)
{
	struct span *sp = malloc((n ? n : 1) * sizeof *sp);
	if (!sp)
		return gpt2_err(err, errlen, "out of memory");
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		/* A global slot fills only its layer 0 entry. */
		if (where[k] == SIZE_MAX)
			continue;
		const st_tensor *t = st_checkpoint_tensor(ck, where[k], &sp[m].file);
		sp[m].index = where[k];
		sp[m].begin = t->begin;
		sp[m].end = t->end;
		m++;
	}
	n = m;
	qsort(sp, n, sizeof *sp, span_cmp);
	/* After sorting, a range overlaps an earlier one exactly when it
	 * begins before the furthest end seen so far in its file. */
	size_t reach = 0;
	int rc = 0;
	for (size_t k = 1; k < n && !rc; k++) {
		if (sp[k].file != sp[reach].file) {
			reach = k;
			continue;
		}
		if (sp[k].begin < sp[reach].end) {
			const st_tensor *t = st_checkpoint_tensor(ck, sp[k].index, NULL);
			const st_tensor *o = st_checkpoint_tensor(ck, sp[reach].index,
			                                          NULL);
			char name[256], other[256];
			gpt2_printable(name, sizeof name, t->name, t->name_len);
			gpt2_printable(other, sizeof other, o->name, o->name_len);
			rc = gpt2_err(err, errlen,
			              "%s: tensor '%s': its data overlaps that of '%s' "
			              "(shared storage, expected data of its own)",
			              tensor_file(ck, sp[k].file), name, other);
		}
		if (sp[k].end > sp[reach].end)
			reach = k;
	}
	free(sp);
	return rc;
}

int gpt2_checkpoint_index(st_checkpoint *ck, const gpt2_config *cfg,
                          size_t *where, size_t *head, char *err,
                          size_t errlen)
{
	if (gpt2_config_check(cfg, err, errlen))
		return -1;
	int L = cfg->num_layers;
	char name[256], other[256], got[128], want[128];
	*head = SIZE_MAX;
	for (size_t k = 0; k < (size_t)GPT2_NUM_SLOTS * (size_t)L; k++)
		where[k] = SIZE_MAX;

	/*
	 * Every tensor must be a parameter (or a legacy buffer, or the tied
	 * head) with a float dtype and the shape the config implies, and no
	 * parameter may come twice.
	 */
	size_t nt = st_checkpoint_n_tensors(ck);
	for (size_t i = 0; i < nt; i++) {
		size_t fi;
		const st_tensor *t = st_checkpoint_tensor(ck, i, &fi);
		gpt2_printable(name, sizeof name, t->name, t->name_len);
		int slot = 0, layer = 0;
		enum gpt2_name_kind kind = gpt2_name_lookup(cfg, t->name,
		                                            t->name_len, &slot,
		                                            &layer);
		if (kind == GPT2_NAME_BUFFER)
			continue;
		if (kind == GPT2_NAME_UNKNOWN)
			return gpt2_err(err, errlen,
			                "%s: tensor '%s': unexpected tensor (not a "
			                "parameter of GPT-2 with n_layer %d)",
			                tensor_file(ck, fi), name, L);
		if (!st_dtype_is_wide_float(t->dtype))
			return gpt2_err(err, errlen,
			                "%s: tensor '%s': dtype %s is not a float type "
			                "(expected F32, F16, BF16 or F64)",
			                tensor_file(ck, fi), name,
			                st_dtype_name(t->dtype));
		if (kind == GPT2_NAME_LM_HEAD)
			slot = GPT2_WTE;
		uint64_t shape[2];
		int nd = gpt2_param_shape(cfg, slot, shape);
		int same = t->ndim == (unsigned)nd;
		for (int d = 0; same && d < nd; d++)
			same = t->shape[d] == shape[d];
		if (!same) {
			fmt_shape(got, sizeof got, t->ndim, t->shape);
			fmt_shape(want, sizeof want, (unsigned)nd, shape);
			int transposed = gpt2_param(slot)->conv1d && t->ndim == 2 &&
			                 t->shape[0] == shape[1] &&
			                 t->shape[1] == shape[0];
			return gpt2_err(err, errlen,
			                "%s: tensor '%s': wrong shape (%s, expected %s)%s",
			                tensor_file(ck, fi), name, got, want,
			                transposed ? ": transposed? GPT-2 stores Conv1D "
			                             "weights as [in, out]" : "");
		}
		if (kind == GPT2_NAME_LM_HEAD) {
			*head = i;
			continue;
		}
		size_t k = (size_t)slot * (size_t)L + (size_t)layer;
		if (where[k] != SIZE_MAX) {
			const st_tensor *o = st_checkpoint_tensor(ck, where[k], NULL);
			gpt2_printable(other, sizeof other, o->name, o->name_len);
			return gpt2_err(err, errlen,
			                "%s: tensor '%s': a second copy of '%s'",
			                tensor_file(ck, fi), name, other);
		}
		where[k] = i;
	}

	/* Every parameter present. */
	size_t missing = 0;
	int first_slot = 0, first_layer = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++)
		for (int l = 0; l < gpt2_param_layers(cfg, s); l++)
			if (where[(size_t)s * (size_t)L + (size_t)l] == SIZE_MAX &&
			    !missing++) {
				first_slot = s;
				first_layer = l;
			}
	if (missing) {
		gpt2_param_name(first_slot, first_layer, name, sizeof name);
		if (missing > 1)
			snprintf(other, sizeof other, " (and %zu more)", missing - 1);
		else
			other[0] = '\0';
		return gpt2_err(err, errlen, "%s: missing tensor '%s'%s",
		                st_checkpoint_path(ck), name, other);
	}
	return check_no_shared_data(ck, where, (size_t)GPT2_NUM_SLOTS * (size_t)L,
	                            err, errlen);
}

int gpt2_checkpoint_check_head(st_checkpoint *ck, const gpt2_config *cfg,
                               const size_t *where, size_t head, char *err,
                               size_t errlen)
{
	if (head == SIZE_MAX)
		return 0;
	size_t wte = where[(size_t)GPT2_WTE * (size_t)cfg->num_layers], fh;
	const st_tensor *th = st_checkpoint_tensor(ck, head, &fh);
	const st_tensor *tw = st_checkpoint_tensor(ck, wte, NULL);
	size_t eh = gpt2_dtype_size(th->dtype), ew = gpt2_dtype_size(tw->dtype);
	/* A chunk of each side's F32 values, then of its stored bytes. */
	enum { CHUNK = 4096 };
	float *a = malloc(CHUNK * (2 * sizeof(float) + eh + ew));
	if (!a)
		return gpt2_err(err, errlen, "out of memory");
	float *b = a + CHUNK;
	char *rh = (char *)(b + CHUNK), *rw = rh + CHUNK * eh;
	size_t n = (size_t)th->n_elements, C = (size_t)cfg->channels;
	st_error e;
	int rc = 0;
	for (size_t off = 0; off < n && !rc; off += CHUNK) {
		size_t k = n - off < CHUNK ? n - off : CHUNK;
		if (st_checkpoint_read(ck, head, off * eh, rh, k * eh, &e) != ST_OK ||
		    st_checkpoint_read(ck, wte, off * ew, rw, k * ew, &e) != ST_OK) {
			rc = gpt2_err(err, errlen, "%s", e.message);
			break;
		}
		st_convert(ST_DTYPE_F32, a, th->dtype, rh, k, NULL);
		st_convert(ST_DTYPE_F32, b, tw->dtype, rw, k, NULL);
		for (size_t j = 0; j < k; j++) {
			if (memcmp(&a[j], &b[j], sizeof(float)) == 0)
				continue;
			char wname[256];
			gpt2_printable(wname, sizeof wname, tw->name, tw->name_len);
			rc = gpt2_err(err, errlen,
			              "%s: tensor 'lm_head.weight': differs from '%s' at "
			              "[%zu, %zu] (%.9g, expected %.9g): an untied output "
			              "head is not supported", tensor_file(ck, fh), wname,
			              (off + j) / C, (off + j) % C, (double)a[j],
			              (double)b[j]);
			break;
		}
	}
	free(a);
	return rc;
}

/* Threads that convert the tensors into the model at load, at most. */
enum { LOAD_THREADS = 4 };

struct fill_job {
	int slot, layer, failed;
	st_dtype dtype;
	const void *data;
};

struct fill_ctx {
	gpt2_model *m;
	struct fill_job *jobs;
	int n;
};

static void fill_task(void *arg, int task, int thread)
{
	(void)thread;
	struct fill_ctx *c = arg;
	struct fill_job *j = &c->jobs[task];
	j->failed = gpt2_model_fill(c->m, j->slot, j->layer, j->dtype, j->data, 0,
	                            NULL, 0) != 0;
}

int gpt2_model_load_checkpoint(gpt2_model **out, const gpt2_config *cfg,
                               st_checkpoint *ck, int wdtype, char *err,
                               size_t errlen)
{
	*out = NULL;
	if (gpt2_config_check(cfg, err, errlen))
		return -1;
	int L = cfg->num_layers;
	size_t *where = malloc((size_t)GPT2_NUM_SLOTS * (size_t)L * sizeof *where);
	if (!where)
		return gpt2_err(err, errlen, "out of memory");
	size_t head;
	gpt2_model *m = NULL;
	struct fill_ctx fc = {NULL, NULL, 0};
	int rc = -1;
	if (gpt2_checkpoint_index(ck, cfg, where, &head, err, errlen))
		goto out;

	/* As stored: the matrices' one dtype, else F32 (F64 is held as F32). */
	unsigned seen = 0; /* a bit per dtype among the matrices */
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		if (!gpt2_param(s)->matrix)
			continue;
		for (int l = 0; l < gpt2_param_layers(cfg, s); l++) {
			size_t i = where[(size_t)s * (size_t)L + (size_t)l];
			seen |= 1u << st_checkpoint_tensor(ck, i, NULL)->dtype;
		}
	}
	st_dtype wt = ST_DTYPE_F32;
	if (wdtype >= 0)
		wt = (st_dtype)wdtype;
	else if (seen == 1u << ST_DTYPE_F16)
		wt = ST_DTYPE_F16;
	else if (seen == 1u << ST_DTYPE_BF16)
		wt = ST_DTYPE_BF16;
	if (gpt2_model_new(&m, cfg, wt, err, errlen))
		goto out;
	/* "As stored": a vector stored as F32 beside BF16 matrices stays F32. */
	m->round_vectors = wdtype >= 0;

	/* The data: found one by one, converted on a few threads. */
	fc.m = m;
	fc.n = 0;
	fc.jobs = malloc((size_t)GPT2_NUM_SLOTS * (size_t)L * sizeof *fc.jobs);
	if (!fc.jobs) {
		gpt2_err(err, errlen, "out of memory");
		goto out;
	}
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		for (int l = 0; l < gpt2_param_layers(cfg, s); l++) {
			size_t i = where[(size_t)s * (size_t)L + (size_t)l];
			struct fill_job *j = &fc.jobs[fc.n++];
			st_error e;
			if (st_checkpoint_data(ck, i, &j->data, &e) != ST_OK) {
				gpt2_err(err, errlen, "%s", e.message);
				goto out;
			}
			j->slot = s;
			j->layer = l;
			j->dtype = st_checkpoint_tensor(ck, i, NULL)->dtype;
			j->failed = 0;
		}
	}
	gpt2_pool *pool = NULL;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus > 1)
		gpt2_pool_new(&pool, cpus < LOAD_THREADS ? (int)cpus : LOAD_THREADS,
		              NULL, 0); /* without it: one thread */
	gpt2_pool_run(pool, fill_task, &fc, fc.n);
	gpt2_pool_free(pool);
	for (int k = 0; k < fc.n; k++) {
		/* Again, alone, for the message (the same conversion fails). */
		struct fill_job *j = &fc.jobs[k];
		if (j->failed && gpt2_model_fill(m, j->slot, j->layer, j->dtype,
		                                 j->data, 0, err, errlen))
			goto out;
	}
	if (gpt2_checkpoint_check_head(ck, cfg, where, head, err, errlen))
		goto out;
	*out = m;
	m = NULL;
	rc = 0;
out:
	gpt2_model_free(m);
	free(fc.jobs);
	free(where);
	return rc;
}

int gpt2_model_load(gpt2_model **out, const char *path, int wdtype, char *err,
                    size_t errlen)
{
	*out = NULL;
	char dir[4096];
	gpt2_config cfg;
	if (gpt2_config_dir(path, dir, sizeof dir, err, errlen) ||
	    gpt2_config_load(&cfg, dir, err, errlen))
		return -1;
	st_checkpoint *ck;
	st_error e;
	if (st_checkpoint_open(&ck, path, ST_OPEN_TORCH, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message[0] ? e.message
		                                                : st_strerror(e.code));
	int rc = gpt2_model_load_checkpoint(out, &cfg, ck, wdtype, err, errlen);
	st_checkpoint_close(ck);
	return rc;
}
