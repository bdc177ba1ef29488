/*
 * gguf_diff.c - stdiff --map gpt2 (see gguf_diff.h). Both sides are read
 * one tensor at a time: the checkpoint's tensor widened to F32 and laid
 * out as the GGUF holds it (Conv1D weights transposed to [out, in]), the
 * GGUF tensor decoded by st_ggml_to_f32; the "exactly rounded / quantized"
 * question is answered by encoding the checkpoint's values with
 * st_ggml_from_f32 and comparing bytes.
 */
#include "common/gguf_diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ckpt.h"
#include "fe/cli.h"
#include "common/gguf_info.h"

/* --json: each list's items, written as they come, printed at the end. */
enum { J_ONLY_A, J_ONLY_B, J_CHANGED, J_TENSORS, J_LISTS };
struct jout {
	FILE *f[J_LISTS];
	char *buf[J_LISTS];
	size_t len[J_LISTS], n[J_LISTS];
};

struct tally {
	size_t compared, identical, within, differ, only_a, only_b, shape;
	struct jout *j; /* NULL: lines on stdout */
};

/* Start the next item of list k; the stream to write it to. */
static FILE *jitem(struct jout *j, int k)
{
	fputs(j->n[k]++ ? ",\n  " : "\n  ", j->f[k]);
	return j->f[k];
}

static void jout_open(struct jout *j)
{
	memset(j, 0, sizeof *j);
	for (int k = 0; k < J_LISTS; k++)
		if (!(j->f[k] = open_memstream(&j->buf[k], &j->len[k])))
			cli_die(CLI_ERROR, "out of memory");
}

/* Print the document and free j. */
static void jout_print(struct jout *j, const struct tally *tl, int differ)
{
	static const char *const names[J_LISTS] = {"only_in_a", "only_in_b", "changed",
	                                           "tensors"};
	printf("{\"equal\": %s, \"map\": \"gpt2\"", differ ? "false" : "true");
	for (int k = 0; k < J_LISTS; k++) {
		if (fclose(j->f[k]) != 0)
			cli_die(CLI_ERROR, "out of memory");
		printf(",\n \"%s\": [%s%s]", names[k], j->buf[k] ? j->buf[k] : "",
		       j->n[k] ? "\n " : "");
		free(j->buf[k]);
	}
	printf(",\n \"summary\": {\"compared\": %zu, \"identical\": %zu, "
	       "\"within_tolerance\": %zu, \"differ\": %zu, \"only_in_a\": %zu, "
	       "\"only_in_b\": %zu, \"shape_changed\": %zu}}\n", tl->compared,
	       tl->identical, tl->within, tl->differ, tl->only_a, tl->only_b, tl->shape);
}

/* A tensor of the pair, by side: the names and types an entry starts with. */
static void jpair(FILE *f, const char *hf, const char *gname, const char *ck_type,
                  const char *gg_type, int gguf_is_b)
{
	fputs("{\"name\": ", f);
	cli_json_string(f, hf, strlen(hf));
	fputs(", \"gguf_name\": ", f);
	cli_json_string(f, gname, strlen(gname));
	fprintf(f, ", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\"",
	        gguf_is_b ? ck_type : gg_type, gguf_is_b ? gg_type : ck_type);
}

/* The st_dtype whose torch tolerances a ggml type takes (Q8_0: none). */
static int tol_dtype(unsigned type)
{
	st_dtype d;
	return st_ggml_type_dtype(type, &d) ? -1 : (int)d;
}

/* What one pair's values gave. */
struct verdict {
	uint64_t n, mismatched;
	double max_abs, max_rel;
	int identical;  /* the GGUF bytes are the checkpoint's values as stored */
	int encoded;    /* the GGUF bytes are the checkpoint's values encoded */
};

/* x against the reference y, element by element, by libst's one rule. */
static void compare_values(const float *x, const float *y, uint64_t n,
                           double rtol, double atol, struct verdict *v)
{
	for (uint64_t i = 0; i < n; i++) {
		double d, r;
		st_compare_verdict k = st_compare_values(x[i], y[i], rtol, atol,
		                                         &d, &r);
		if (k == ST_COMPARE_FAR || k == ST_COMPARE_NAN_MISMATCH)
			v->mismatched++;
		if (d > v->max_abs)
			v->max_abs = d;
		if (r > v->max_rel)
			v->max_rel = r;
	}
}

static void print_line(const char *what, const char *hf, const char *gg,
                       st_dtype dt, unsigned type, int transposed,
                       int gguf_is_b, const struct verdict *v)
{
	printf("%s: %s ~ %s (%s vs %s%s, %llu elements)", what, hf, gg,
	       st_dtype_name(dt), st_ggml_type_name(type),
	       transposed ? ", transposed" : "", (unsigned long long)v->n);
	if (!v->identical)
		printf(": %llu mismatched (%.3g%%), max abs %.4g, max rel %.4g",
		       (unsigned long long)v->mismatched,
		       v->n ? 100.0 * (double)v->mismatched / (double)v->n : 0.0,
		       v->max_abs, v->max_rel);
	if (v->encoded && !v->identical)
		printf(", %s is exactly %s %s %s", gguf_is_b ? "B" : "A",
		       gguf_is_b ? "A" : "B",
		       type == ST_GGML_Q8_0 ? "quantized to" : "rounded to",
		       st_ggml_type_name(type));
	putchar('\n');
}

/* A pair whose values could not be compared, and why. */
static void jnot_compared(struct jout *j, const char *hf, const st_gguf_tensor *gt,
                          st_dtype dt, int gguf_is_b, const char *why)
{
	FILE *f = jitem(j, J_TENSORS);
	jpair(f, hf, gt->name, st_dtype_name(dt), st_ggml_type_name(gt->type), gguf_is_b);
	fprintf(f, ", \"elements\": %llu, \"values_compared\": false, \"verdict\": "
	        "\"differs\", \"reason\": \"%s\"}", (unsigned long long)gt->n_elements, why);
}

/* A pair compared: its verdict and figures. */
static void jcompared(struct jout *j, const char *what, const char *hf,
                      const st_gguf_tensor *gt, st_dtype dt, int transposed,
                      int gguf_is_b, const struct verdict *v, double rtol, double atol)
{
	FILE *f = jitem(j, J_TENSORS);
	jpair(f, hf, gt->name, st_dtype_name(dt), st_ggml_type_name(gt->type), gguf_is_b);
	fprintf(f, ", \"elements\": %llu, \"transposed\": %s, \"values_compared\": true, "
	        "\"verdict\": \"%s\", \"identical\": %s, \"exactly_encoded\": %s, "
	        "\"mismatched\": %llu, \"max_abs_diff\": ",
	        (unsigned long long)v->n, transposed ? "true" : "false", what,
	        v->identical ? "true" : "false", v->encoded ? "true" : "false",
	        (unsigned long long)v->mismatched);
	cli_json_double(f, v->max_abs);
	fputs(", \"max_rel_diff\": ", f);
	cli_json_double(f, v->max_rel);
	fputs(", \"rtol\": ", f);
	cli_json_double(f, rtol);
	fputs(", \"atol\": ", f);
	cli_json_double(f, atol);
	fputs("}", f);
}

/*
 * One pair: the checkpoint's tensor t (index i of ck) against the GGUF's
 * tensor gt (index gi of g).
 */
static int compare_pair(st_checkpoint *ck, size_t i, const st_tensor *t,
                        const st_gguf *g, size_t gi, int transpose,
                        int gguf_is_b, const gguf_diff_opts *o,
                        struct tally *tl)
{
	const st_gguf_tensor *gt = st_gguf_tensor_at(g, gi);
	char hf[256];
	snprintf(hf, sizeof hf, "%.*s", (int)t->name_len, t->name);
	/* Shapes: the GGUF dims are the HF shape reversed, or as is when the
	 * tensor is transposed. */
	int same = gt->ndim == t->ndim && t->ndim <= 2;
	for (unsigned k = 0; same && k < t->ndim; k++) {
		uint64_t want = transpose ? t->shape[k] : t->shape[t->ndim - 1 - k];
		same = gt->dims[k] == want;
	}
	if (!same) {
		tl->shape++;
		if (tl->j) {
			FILE *f = jitem(tl->j, J_CHANGED);
			jpair(f, hf, gt->name, st_dtype_name(t->dtype),
			      st_ggml_type_name(gt->type), gguf_is_b);
			fputs(", \"shape\": ", f);
			cli_print_dims(f, t->shape, t->ndim);
			fputs(", \"gguf_dims\": ", f);
			cli_print_dims(f, gt->dims, gt->ndim);
			fputs("}", f);
		} else if (!o->quiet) {
			printf("shape changed: %s ~ %s\n", hf, gt->name);
		}
		return 0;
	}
	if (!st_dtype_is_numeric(t->dtype) || !st_dtype_is_float(t->dtype)) {
		tl->differ++;
		if (tl->j)
			jnot_compared(tl->j, hf, gt, t->dtype, gguf_is_b, "not a float dtype");
		else if (!o->quiet)
			printf("differs: %s ~ %s: %s cannot be compared with %s\n", hf,
			       gt->name, st_dtype_name(t->dtype),
			       st_ggml_type_name(gt->type));
		return 0;
	}
	size_t n = (size_t)t->n_elements;
	const void *src;
	st_error e;
	if (st_checkpoint_data(ck, i, &src, &e) != ST_OK) {
		cli_error(&e);
		return -1;
	}
	float *a = cli_xmalloc((n ? n : 1) * sizeof *a);
	float *x = cli_xmalloc((n ? n : 1) * sizeof *x);
	float *y = cli_xmalloc((n ? n : 1) * sizeof *y);
	unsigned blk, bytes;
	st_ggml_type_block(gt->type, &blk, &bytes);
	unsigned char *enc = cli_xmalloc(n / blk * bytes + 1);
	st_convert(ST_DTYPE_F32, a, t->dtype, src, n, NULL);
	/* x: A as the GGUF lays it out. */
	if (transpose) {
		uint64_t rows = t->shape[0], cols = t->shape[1];
		for (uint64_t r = 0; r < rows; r++)
			for (uint64_t c = 0; c < cols; c++)
				x[c * rows + r] = a[r * cols + c];
	} else {
		memcpy(x, a, n * sizeof *x);
	}
	struct verdict v;
	memset(&v, 0, sizeof v);
	v.n = n;
	tl->compared++;
	const void *gd = st_gguf_tensor_data(g, gi);
	int rc = 0;
	if (st_ggml_to_f32(gt->type, gd, y, n) != ST_OK) {
		tl->differ++;
		if (tl->j)
			jnot_compared(tl->j, hf, gt, t->dtype, gguf_is_b,
			              "GGUF type cannot be decoded");
		else if (!o->quiet)
			printf("differs: %s ~ %s: %s values cannot be decoded (F32, "
			       "F16, BF16 and Q8_0 can)\n", hf, gt->name,
			       st_ggml_type_name(gt->type));
		goto out;
	}
	st_dtype gdt;
	v.encoded = st_ggml_from_f32(gt->type, x, enc, n) == ST_OK &&
	            !memcmp(enc, gd, n / blk * bytes);
	v.identical = v.encoded && !st_ggml_type_dtype(gt->type, &gdt) &&
	              gdt == t->dtype;
	/* Tolerances: given, else torch's for the less precise side. */
	double rtol = o->rtol, atol = o->atol, r1 = 0, a1 = 0, r2 = 0, a2 = 0;
	int td = tol_dtype(gt->type);
	st_compare_default_tol(t->dtype, &r1, &a1);
	if (td >= 0)
		st_compare_default_tol((st_dtype)td, &r2, &a2);
	if (!o->have_rtol)
		rtol = o->exact ? 0 : r1 > r2 ? r1 : r2;
	if (!o->have_atol)
		atol = o->exact ? 0 : a1 > a2 ? a1 : a2;
	compare_values(x, y, n, rtol, atol, &v);
	/*
	 * Q8_0 has no element-wise default: by default it is equal when it is
	 * exactly A quantized, and every element counts as in tolerance then.
	 */
	int q8_default = gt->type == ST_GGML_Q8_0 && !o->have_rtol &&
	                 !o->have_atol && !o->exact;
	if (q8_default && v.encoded)
		v.mismatched = 0;
	if (q8_default && !v.encoded && !v.mismatched)
		v.mismatched = 1;
	const char *what;
	if (v.identical) {
		tl->identical++;
		what = "identical";
	} else if (o->exact || v.mismatched) {
		tl->differ++;
		what = "differs";
		if (o->exact && !v.mismatched)
			v.mismatched = n;
	} else {
		tl->within++;
		what = "within tolerance";
	}
	if (tl->j)
		jcompared(tl->j, what, hf, gt, t->dtype, transpose, gguf_is_b, &v, rtol, atol);
	else if (!o->quiet && (o->verbose || !strcmp(what, "differs")))
		print_line(what, hf, gt->name, t->dtype, gt->type, transpose,
		           gguf_is_b, &v);
out:
	free(a);
	free(x);
	free(y);
	free(enc);
	return rc;
}

int gguf_diff_gpt2(const char *pa, const char *pb, const gguf_diff_opts *o)
{
	int ga = gguf_info_is_gguf(pa), gb = gguf_info_is_gguf(pb);
	if (ga == gb)
		cli_usage_error("--map gpt2 compares a GGUF file with a safetensors "
		                "checkpoint: give one of each");
	const char *gpath = ga ? pa : pb, *cpath = ga ? pb : pa;
	st_gguf *g;
	st_error e;
	if (st_gguf_open(&g, gpath, &e) != ST_OK) {
		cli_error_path(gpath, &e);
		return CLI_ERROR;
	}
	st_checkpoint *ck;
	if (ckpt_open(&ck, cpath) != CLI_OK) {
		st_gguf_close(g);
		return CLI_ERROR;
	}
	size_t ng = st_gguf_n_tensors(g), nc = st_checkpoint_n_tensors(ck);
	char *seen = cli_xcalloc(ng ? ng : 1, 1);
	struct tally tl;
	memset(&tl, 0, sizeof tl);
	struct jout j;
	if (o->json && !o->quiet) {
		jout_open(&j);
		tl.j = &j;
	}
	int rc = CLI_OK;
	const char *side_c = ga ? "B" : "A", *side_g = ga ? "A" : "B";
	for (size_t i = 0; i < nc; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		char hf[256], gname[128];
		snprintf(hf, sizeof hf, "%.*s", (int)t->name_len, t->name);
		const char *base = strncmp(hf, "transformer.", 12) ? hf : hf + 12;
		size_t bl = strlen(base);
		/* Never in a GGUF: the tied head and the causal-mask buffers. */
		if (!strcmp(base, "lm_head.weight") ||
		    (bl > 10 && !strcmp(base + bl - 10, ".attn.bias")) ||
		    (bl > 17 && !strcmp(base + bl - 17, ".attn.masked_bias")))
			continue;
		st_arch_gguf_info info;
		long gi = -1;
		if (!st_arch_gpt2_to_gguf(hf, gname, sizeof gname, &info))
			gi = st_gguf_find(g, gname);
		if (gi < 0) {
			tl.only_a += ga ? 0 : 1;
			tl.only_b += ga ? 1 : 0;
			if (tl.j)
				cli_json_string(jitem(&j, ga ? J_ONLY_B : J_ONLY_A), hf, strlen(hf));
			else if (!o->quiet)
				printf("only in %s: %s\n", side_c, hf);
			continue;
		}
		seen[gi] = 1;
		if (compare_pair(ck, i, t, g, (size_t)gi,
		                 info.transpose && t->ndim == 2, !ga, o, &tl)) {
			rc = CLI_ERROR;
			goto out;
		}
	}
	for (size_t gi = 0; gi < ng; gi++) {
		if (seen[gi])
			continue;
		tl.only_a += ga ? 1 : 0;
		tl.only_b += ga ? 0 : 1;
		const st_gguf_tensor *gt = st_gguf_tensor_at(g, gi);
		if (tl.j)
			cli_json_string(jitem(&j, ga ? J_ONLY_A : J_ONLY_B), gt->name, gt->name_len);
		else if (!o->quiet)
			printf("only in %s: %s\n", side_g, gt->name);
	}
	int differ = tl.differ || tl.only_a || tl.only_b || tl.shape;
	if (tl.j) {
		jout_print(&j, &tl, differ);
		tl.j = NULL;
	} else if (!o->quiet)
		printf("%zu tensors compared through the GPT-2 name map: %zu "
		       "identical, %zu within tolerance, %zu differ; %zu only in A, "
		       "%zu only in B, %zu shape changed: %s\n", tl.compared,
		       tl.identical, tl.within, tl.differ, tl.only_a, tl.only_b,
		       tl.shape, differ ? "different" : "equal");
	rc = differ ? CLI_NO : CLI_OK;
out:
	if (tl.j) /* an error: the partial document is dropped */
		for (int k = 0; k < J_LISTS; k++) {
			fclose(j.f[k]);
			free(j.buf[k]);
		}
	free(seen);
	st_checkpoint_close(ck);
	st_gguf_close(g);
	return rc;
}
