/*
 * gguf_diff.c - stdiff --map gpt2 (see gguf_diff.h): the printing of what
 * libst's st_diff_gguf_gpt2 (st/diff.h) finds, pairing and comparison
 * included.
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
	printf("{\"schema\": %d, \"equal\": %s, \"map\": \"gpt2\"", CLI_JSON_SCHEMA,
	       differ ? "false" : "true");
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

/* "only in SIDE: NAME", the name made printable. */
static void print_only(const char *side, const char *name, size_t len)
{
	char *shown = cli_printable(name, len);
	printf("only in %s: %s\n", side, shown);
	free(shown);
}

static void print_line(const char *what, const char *hf, const char *gg,
                       st_dtype dt, unsigned type, int transposed,
                       int gguf_is_b, const st_diff_gguf_item *v)
{
	char *shf = cli_printable(hf, strlen(hf)), *sgg = cli_printable(gg, strlen(gg));
	printf("%s: %s ~ %s (%s vs %s%s, %llu elements)", what, shf, sgg,
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
	free(shf);
	free(sgg);
}

/* A pair whose values could not be compared, and why. */
static void jnot_compared(struct jout *j, const char *hf, const st_gguf_tensor *gt,
                          st_dtype dt, int gguf_is_b, const char *why)
{
	FILE *f = jitem(j, J_TENSORS);
	char tb[32];
	jpair(f, hf, gt->name, st_dtype_name(dt), gguf_type_label(gt->type, tb, sizeof tb),
	      gguf_is_b);
	fprintf(f, ", \"elements\": %llu, \"values_compared\": false, \"verdict\": "
	        "\"differs\", \"reason\": \"%s\"}", (unsigned long long)gt->n_elements, why);
}

/* A pair compared: its verdict and figures. */
static void jcompared(struct jout *j, const char *what, const char *hf,
                      const st_gguf_tensor *gt, st_dtype dt, int transposed,
                      int gguf_is_b, const st_diff_gguf_item *v)
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
	cli_json_double(f, v->rtol);
	fputs(", \"atol\": ", f);
	cli_json_double(f, v->atol);
	fputs("}", f);
}

/* One pair's result, counted and printed. */
static void print_pair(st_checkpoint *ck, const st_gguf *g, const st_diff_gguf_item *v,
                       int gguf_is_b, const gguf_diff_opts *o, struct tally *tl)
{
	const st_tensor *t = st_checkpoint_tensor(ck, v->ck, NULL);
	const st_gguf_tensor *gt = st_gguf_tensor_at(g, v->gg);
	char hf[256], tb[32];
	snprintf(hf, sizeof hf, "%.*s", (int)t->name_len, t->name);
	const char *gtype = gguf_type_label(gt->type, tb, sizeof tb);
	if (v->kind == ST_DIFF_GGUF_SHAPE) {
		tl->shape++;
		if (tl->j) {
			FILE *f = jitem(tl->j, J_CHANGED);
			jpair(f, hf, gt->name, st_dtype_name(t->dtype), gtype, gguf_is_b);
			fputs(", \"shape\": ", f);
			cli_print_dims(f, t->shape, t->ndim);
			fputs(", \"gguf_dims\": ", f);
			cli_print_dims(f, gt->dims, gt->ndim);
			fputs("}", f);
		} else if (!o->quiet) {
			char *a = cli_printable(hf, strlen(hf)), *b = cli_printable(gt->name, gt->name_len);
			printf("shape changed: %s ~ %s\n", a, b);
			free(a);
			free(b);
		}
		return;
	}
	if (v->kind != ST_DIFF_GGUF_NOT_FLOAT)
		tl->compared++;
	if (v->kind == ST_DIFF_GGUF_NOT_FLOAT || v->kind == ST_DIFF_GGUF_UNDECODABLE) {
		bool nf = v->kind == ST_DIFF_GGUF_NOT_FLOAT;
		tl->differ++;
		if (tl->j)
			jnot_compared(tl->j, hf, gt, t->dtype, gguf_is_b,
			              nf                              ? "not a float dtype"
			              : st_ggml_type_name(gt->type) ? "GGUF type is not a float type"
			                                              : "GGUF type unknown to libst");
		else if (!o->quiet) {
			char *a = cli_printable(hf, strlen(hf));
			char *b = cli_printable(gt->name, gt->name_len);
			if (nf)
				printf("differs: %s ~ %s: %s cannot be compared with %s\n", a, b,
				       st_dtype_name(t->dtype), gtype);
			else if (st_ggml_type_name(gt->type))
				printf("differs: %s ~ %s: not compared: %s values are not "
				       "floats\n", a, b, st_ggml_type_name(gt->type));
			else
				printf("differs: %s ~ %s: not compared: type %u (unknown): "
				       "libst does not know the type, its values were not "
				       "read\n", a, b, gt->type);
			free(a);
			free(b);
		}
		return;
	}
	const char *what = v->verdict == ST_DIFF_IDENTICAL ? "identical"
	                   : v->verdict == ST_DIFF_DIFFERENT ? "differs" : "within tolerance";
	if (v->verdict == ST_DIFF_IDENTICAL)
		tl->identical++;
	else if (v->verdict == ST_DIFF_DIFFERENT)
		tl->differ++;
	else
		tl->within++;
	if (tl->j)
		jcompared(tl->j, what, hf, gt, t->dtype, v->transposed, gguf_is_b, v);
	else if (!o->quiet && (o->verbose || v->verdict == ST_DIFF_DIFFERENT))
		print_line(what, hf, gt->name, t->dtype, gt->type, v->transposed,
		           gguf_is_b, v);
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
	struct tally tl;
	memset(&tl, 0, sizeof tl);
	struct jout j;
	st_diff_opts so = {.rtol = o->have_rtol ? &o->rtol : NULL,
	                   .atol = o->have_atol ? &o->atol : NULL, .exact = o->exact};
	st_diff_gguf_item *items;
	size_t n;
	int rc = st_diff_gguf_gpt2(ck, g, &so, &items, &n, &e);
	if (rc != ST_OK) {
		cli_error(&e);
		rc = CLI_ERROR;
		goto out;
	}
	if (o->json && !o->quiet) {
		jout_open(&j);
		tl.j = &j;
	}
	const char *side_c = ga ? "B" : "A", *side_g = ga ? "A" : "B";
	for (size_t i = 0; i < n; i++) {
		const st_diff_gguf_item *v = &items[i];
		if (v->kind == ST_DIFF_GGUF_ONLY_CKPT) {
			const st_tensor *t = st_checkpoint_tensor(ck, v->ck, NULL);
			char hf[256];
			snprintf(hf, sizeof hf, "%.*s", (int)t->name_len, t->name);
			tl.only_a += ga ? 0 : 1;
			tl.only_b += ga ? 1 : 0;
			if (tl.j)
				cli_json_string(jitem(&j, ga ? J_ONLY_B : J_ONLY_A), hf, strlen(hf));
			else if (!o->quiet)
				print_only(side_c, hf, strlen(hf));
		} else if (v->kind == ST_DIFF_GGUF_ONLY_GGUF) {
			const st_gguf_tensor *gt = st_gguf_tensor_at(g, v->gg);
			tl.only_a += ga ? 1 : 0;
			tl.only_b += ga ? 0 : 1;
			if (tl.j)
				cli_json_string(jitem(&j, ga ? J_ONLY_A : J_ONLY_B), gt->name,
				                gt->name_len);
			else if (!o->quiet)
				print_only(side_g, gt->name, gt->name_len);
		} else {
			print_pair(ck, g, v, !ga, o, &tl);
		}
	}
	free(items);
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
	st_checkpoint_close(ck);
	st_gguf_close(g);
	return rc;
}
