/*
 * gguf_diff.c - stdiff --map ARCH (see gguf_diff.h): the printing of what
 * libst's st_diff_gguf_map (st/diff.h) finds, pairing and comparison
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
/* A float type is "rounded to", a block type (Q8_0, Q4_0...) "quantized to". */
static const char *encode_verb(unsigned type)
{
	return type == ST_GGML_F32 || type == ST_GGML_F16 || type == ST_GGML_BF16
	               ? "rounded to"
	               : "quantized to";
}

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
static void jout_print(struct jout *j, const struct tally *tl, int differ, const char *map)
{
	static const char *const names[J_LISTS] = {"only_in_a", "only_in_b", "changed",
	                                           "tensors"};
	printf("{\"schema\": %d, \"equal\": %s, \"map\": \"%s\"", CLI_JSON_SCHEMA,
	       differ ? "false" : "true", map);
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

/* What a quantized side was judged by, when its type's rule judged it. */
static void print_bound(unsigned type, const st_diff_gguf_item *v)
{
	if (v->type_rms)
		printf(", %s's error figure (block RMS at most %.4g)", st_ggml_type_name(type),
		       v->atol);
	else if (v->type_bound)
		printf(", %s's error bound (at most %.4g)", st_ggml_type_name(type), v->atol);
}

static void print_line(const char *what, const char *hf, const char *gg,
                       st_dtype dt, unsigned type, int transposed,
                       int gguf_is_b, const st_diff_gguf_item *v)
{
	char *shf = cli_printable(hf, strlen(hf)), *sgg = cli_printable(gg, strlen(gg));
	char perm[48] = "";
	if (v->permuted_heads)
		snprintf(perm, sizeof perm, ", rows permuted (%llu heads)",
		         (unsigned long long)v->permuted_heads);
	printf("%s: %s ~ %s (%s vs %s%s%s, %llu elements)", what, shf, sgg,
	       st_dtype_name(dt), st_ggml_type_name(type),
	       transposed ? ", transposed" : "", perm, (unsigned long long)v->n);
	if (!v->identical)
		printf(": %llu mismatched (%.3g%%), max abs %.4g, max rel %.4g",
		       (unsigned long long)v->mismatched,
		       v->n ? 100.0 * (double)v->mismatched / (double)v->n : 0.0,
		       v->max_abs, v->max_rel);
	if (v->encoded && !v->identical)
		printf(", %s is exactly %s %s %s", gguf_is_b ? "B" : "A",
		       gguf_is_b ? "A" : "B",
		       encode_verb(type),
		       st_ggml_type_name(type));
	print_bound(type, v);
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

/* A compared pair's figures, from "identical" to the entry's closing brace. */
static void jfigures(FILE *f, const st_diff_gguf_item *v)
{
	fprintf(f, ", \"identical\": %s, \"exactly_encoded\": %s, \"mismatched\": %llu, "
	        "\"max_abs_diff\": ",
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

/* A pair compared: its verdict and figures. */
static void jcompared(struct jout *j, const char *what, const char *hf,
                      const st_gguf_tensor *gt, st_dtype dt, int transposed,
                      int gguf_is_b, const st_diff_gguf_item *v)
{
	FILE *f = jitem(j, J_TENSORS);
	jpair(f, hf, gt->name, st_dtype_name(dt), st_ggml_type_name(gt->type), gguf_is_b);
	fprintf(f, ", \"elements\": %llu, \"transposed\": %s, \"permuted_heads\": %llu, "
	        "\"values_compared\": true, \"verdict\": \"%s\"",
	        (unsigned long long)v->n, transposed ? "true" : "false",
	        (unsigned long long)v->permuted_heads, what);
	jfigures(f, v);
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

static void on_progress(void *ctx, uint64_t bytes)
{
	cli_progress_add(ctx, bytes);
}

/* The library's options from stdiff's, progress on prog (started by the caller). */
static st_diff_opts diff_opts(const gguf_diff_opts *o, cli_progress *prog)
{
	st_diff_opts so = {.rtol = o->have_rtol ? &o->rtol : NULL,
	                   .atol = o->have_atol ? &o->atol : NULL,
	                   .exact = o->exact,
	                   .progress = on_progress,
	                   .ctx = prog};
	return so;
}

/* With --json, the lists go to j until finish() prints the document. */
static void begin(struct tally *tl, struct jout *j, const gguf_diff_opts *o)
{
	memset(tl, 0, sizeof *tl);
	if (o->json && !o->quiet) {
		jout_open(j);
		tl->j = j;
	}
}

/* A tensor only in A (in_a) or only in B, counted and listed. */
static void only_in(struct tally *tl, const gguf_diff_opts *o, int in_a, const char *name,
                    size_t len)
{
	*(in_a ? &tl->only_a : &tl->only_b) += 1;
	if (tl->j)
		cli_json_string(jitem(tl->j, in_a ? J_ONLY_A : J_ONLY_B), name, len);
	else if (!o->quiet)
		print_only(in_a ? "A" : "B", name, len);
}

/* The document, or the summary line "N tensors compared HOW: ..."; the exit code. */
static int finish(struct tally *tl, const gguf_diff_opts *o, const char *map, const char *how)
{
	int differ = tl->differ || tl->only_a || tl->only_b || tl->shape;
	if (tl->j)
		jout_print(tl->j, tl, differ, map);
	else if (!o->quiet)
		printf("%zu tensors compared %s: %zu identical, %zu within tolerance, %zu differ; "
		       "%zu only in A, %zu only in B, %zu shape changed: %s\n",
		       tl->compared, how, tl->identical, tl->within, tl->differ, tl->only_a,
		       tl->only_b, tl->shape, differ ? "different" : "equal");
	tl->j = NULL;
	return differ ? CLI_NO : CLI_OK;
}

/*
 * A GGUF tensor the converter computes, with no checkpoint tensor: said
 * so (in -v, and in --json as a "gguf_only" entry), no difference.
 */
static void derived(struct tally *tl, const gguf_diff_opts *o, const char *arch,
                    const st_gguf_tensor *gt, int gguf_is_b)
{
	const char *why = st_arch_gguf_derived(arch, gt->name);
	if (tl->j) {
		FILE *f = jitem(tl->j, J_TENSORS);
		char tb[32];
		fputs("{\"name\": null, \"gguf_name\": ", f);
		cli_json_string(f, gt->name, gt->name_len);
		fprintf(f, ", \"dtype_%s\": \"%s\", \"elements\": %llu, \"values_compared\": "
		        "false, \"verdict\": \"gguf_only\", \"reason\": ", gguf_is_b ? "b" : "a",
		        gguf_type_label(gt->type, tb, sizeof tb), (unsigned long long)gt->n_elements);
		cli_json_string(f, why, strlen(why));
		fputs("}", f);
	} else if (!o->quiet && o->verbose) {
		char *n = cli_printable(gt->name, gt->name_len);
		printf("GGUF only: %s (%s): %s, no Hugging Face tensor\n", n, gguf_is_b ? "B" : "A",
		       why);
		free(n);
	}
}

/* The map's name in the summary line: "GPT-2", else the architecture. */
static const char *map_label(const char *arch)
{
	return !strcmp(arch, "gpt2") ? "GPT-2" : !strcmp(arch, "qwen2") ? "Qwen2"
	                                     : !strcmp(arch, "qwen3") ? "Qwen3"
	                                                               : arch;
}

int gguf_diff_map(const char *pa, const char *pb, const char *arch, const gguf_diff_opts *o)
{
	int ga = gguf_info_is_gguf(pa), gb = gguf_info_is_gguf(pb);
	if (ga == gb)
		cli_usage_error("--map %s compares a GGUF file with a safetensors "
		                "checkpoint: give one of each", arch);
	const char *gpath = ga ? pa : pb, *cpath = ga ? pb : pa;
	st_gguf *g;
	st_error e;
	if (st_gguf_open_set(&g, gpath, &e) != ST_OK) {
		cli_error_path(gpath, &e);
		return CLI_ERROR;
	}
	st_checkpoint *ck;
	if (ckpt_open(&ck, cpath) != CLI_OK) {
		st_gguf_close(g);
		return CLI_ERROR;
	}
	struct tally tl;
	struct jout j;
	cli_progress prog;
	cli_progress_start(&prog, "comparing", st_checkpoint_data_bytes(ck) + st_gguf_data_size(g));
	st_diff_opts so = diff_opts(o, &prog);
	st_diff_gguf_item *items;
	size_t n;
	int rc = st_diff_gguf_map(ck, g, arch, &so, &items, &n, &e);
	cli_progress_done(&prog);
	if (rc != ST_OK) {
		cli_error(&e);
		rc = CLI_ERROR;
		goto out;
	}
	begin(&tl, &j, o);
	for (size_t i = 0; i < n; i++) {
		const st_diff_gguf_item *v = &items[i];
		if (v->kind == ST_DIFF_GGUF_ONLY_CKPT) {
			const st_tensor *t = st_checkpoint_tensor(ck, v->ck, NULL);
			only_in(&tl, o, !ga, t->name, t->name_len);
		} else if (v->kind == ST_DIFF_GGUF_ONLY_GGUF) {
			const st_gguf_tensor *gt = st_gguf_tensor_at(g, v->gg);
			only_in(&tl, o, ga, gt->name, gt->name_len);
		} else if (v->kind == ST_DIFF_GGUF_DERIVED) {
			derived(&tl, o, arch, st_gguf_tensor_at(g, v->gg), !ga);
		} else {
			print_pair(ck, g, v, !ga, o, &tl);
		}
	}
	free(items);
	char how[64];
	snprintf(how, sizeof how, "through the %s name map", map_label(arch));
	rc = finish(&tl, o, arch, how);
out:
	st_checkpoint_close(ck);
	st_gguf_close(g);
	return rc;
}

/* ---- two GGUF files, by name ----------------------------------------------- */

/* "differs: NAME (Q8_0 vs F16, N elements): ..." for a pair of GGUF files. */
static void print_files_line(const char *what, const st_gguf_tensor *ta,
                             const st_gguf_tensor *tb, const st_diff_gguf_item *v)
{
	char *name = cli_printable(ta->name, ta->name_len);
	char la[32], lb[32];
	printf("%s: %s (%s vs %s, %llu elements)", what, name,
	       gguf_type_label(ta->type, la, sizeof la), gguf_type_label(tb->type, lb, sizeof lb),
	       (unsigned long long)v->n);
	free(name);
	if (v->kind == ST_DIFF_GGUF_NOT_FLOAT) {
		puts(": not compared: the values are not floats");
		return;
	}
	if (v->kind == ST_DIFF_GGUF_UNDECODABLE) {
		puts(": not compared: libst does not know the type, its values were not read");
		return;
	}
	if (!v->identical)
		printf(": %llu mismatched (%.3g%%), max abs %.4g, max rel %.4g",
		       (unsigned long long)v->mismatched,
		       v->n ? 100.0 * (double)v->mismatched / (double)v->n : 0.0, v->max_abs,
		       v->max_rel);
	if (v->encoded && !v->identical)
		printf(", B is exactly A %s %s",
		       encode_verb(tb->type),
		       st_ggml_type_name(tb->type));
	print_bound(tb->type, v);
	putchar('\n');
}

/* The JSON entry of a pair of GGUF files. */
static void jfiles_pair(struct jout *j, const char *what, const st_gguf_tensor *ta,
                        const st_gguf_tensor *tb, const st_diff_gguf_item *v)
{
	char la[32], lb[32];
	bool compared = v->kind == ST_DIFF_GGUF_COMPARED;
	FILE *f = jitem(j, J_TENSORS);
	fputs("{\"name\": ", f);
	cli_json_string(f, ta->name, ta->name_len);
	fprintf(f, ", \"dtype_a\": \"%s\", \"dtype_b\": \"%s\", \"elements\": %llu, "
	        "\"values_compared\": %s, \"verdict\": \"%s\"",
	        gguf_type_label(ta->type, la, sizeof la), gguf_type_label(tb->type, lb, sizeof lb),
	        (unsigned long long)v->n, compared ? "true" : "false", what);
	if (!compared) {
		fprintf(f, ", \"reason\": \"%s\"}",
		        v->kind == ST_DIFF_GGUF_NOT_FLOAT ? "not a float type"
		                                          : "GGUF type unknown to libst");
		return;
	}
	jfigures(f, v);
}

/* One pair of GGUF files' result, counted and printed. */
static void files_pair(const st_gguf *a, const st_gguf *b, const st_diff_gguf_item *v,
                       const gguf_diff_opts *o, struct tally *tl)
{
	const st_gguf_tensor *ta = st_gguf_tensor_at(a, v->ck), *tb = st_gguf_tensor_at(b, v->gg);
	if (v->kind == ST_DIFF_GGUF_SHAPE) {
		tl->shape++;
		if (tl->j) {
			FILE *f = jitem(tl->j, J_CHANGED);
			fputs("{\"name\": ", f);
			cli_json_string(f, ta->name, ta->name_len);
			fputs(", \"gguf_dims_a\": ", f);
			cli_print_dims(f, ta->dims, ta->ndim);
			fputs(", \"gguf_dims_b\": ", f);
			cli_print_dims(f, tb->dims, tb->ndim);
			fputs("}", f);
		} else if (!o->quiet) {
			char *n = cli_printable(ta->name, ta->name_len);
			printf("shape changed: %s\n", n);
			free(n);
		}
		return;
	}
	tl->compared++;
	const char *what = v->verdict == ST_DIFF_IDENTICAL   ? "identical"
	                   : v->verdict == ST_DIFF_WITHIN    ? "within tolerance"
	                                                     : "differs";
	if (v->verdict == ST_DIFF_IDENTICAL)
		tl->identical++;
	else if (v->verdict == ST_DIFF_WITHIN)
		tl->within++;
	else
		tl->differ++;
	if (tl->j)
		jfiles_pair(tl->j, what, ta, tb, v);
	else if (!o->quiet && (o->verbose || v->verdict != ST_DIFF_IDENTICAL) &&
	         (o->verbose || v->verdict != ST_DIFF_WITHIN))
		print_files_line(what, ta, tb, v);
}

int gguf_diff_files(const char *pa, const char *pb, const gguf_diff_opts *o)
{
	st_gguf *a = NULL, *b = NULL;
	st_error e;
	if (st_gguf_open_set(&a, pa, &e) != ST_OK) {
		cli_error(&e);
		return CLI_ERROR;
	}
	if (st_gguf_open_set(&b, pb, &e) != ST_OK) {
		cli_error(&e);
		st_gguf_close(a);
		return CLI_ERROR;
	}
	cli_progress prog;
	cli_progress_start(&prog, "comparing", st_gguf_data_size(a) + st_gguf_data_size(b));
	st_diff_opts so = diff_opts(o, &prog);
	st_diff_gguf_item *items;
	size_t n;
	int rc = st_diff_gguf_files(a, b, &so, &items, &n, &e);
	cli_progress_done(&prog);
	if (rc != ST_OK) {
		cli_error(&e);
		st_gguf_close(a);
		st_gguf_close(b);
		return CLI_ERROR;
	}
	struct tally tl;
	struct jout j;
	begin(&tl, &j, o);
	for (size_t i = 0; i < n; i++) {
		const st_diff_gguf_item *v = &items[i];
		if (v->kind == ST_DIFF_GGUF_ONLY_CKPT) {
			const st_gguf_tensor *t = st_gguf_tensor_at(a, v->ck);
			only_in(&tl, o, 1, t->name, t->name_len);
		} else if (v->kind == ST_DIFF_GGUF_ONLY_GGUF) {
			const st_gguf_tensor *t = st_gguf_tensor_at(b, v->gg);
			only_in(&tl, o, 0, t->name, t->name_len);
		} else {
			files_pair(a, b, v, o, &tl);
		}
	}
	free(items);
	st_gguf_close(a);
	st_gguf_close(b);
	return finish(&tl, o, "names", "by name");
}
