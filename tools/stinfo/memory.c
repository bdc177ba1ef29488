/*
 * memory.c - stinfo --memory (stinfo.h): the bytes the weights take with
 * the floats in F32, BF16, F16 or FP8 and, from config.json, the KV cache
 * a token and for --context tokens; for a GGUF file from its metadata.
 * The arithmetic is libst's (st_memory_load_bytes, st_memory_kv_cache,
 * st_memory_gguf_*); this file words it.
 */
#include "stinfo/stinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"
#include "fe/markdown.h"
#include "fe/table.h"

/* The dtypes a model is loaded in, as the table lists them. */
static const st_dtype LOAD_AS[] = {ST_DTYPE_F32, ST_DTYPE_BF16, ST_DTYPE_F16, ST_DTYPE_F8_E4M3};
#define N_AS (sizeof LOAD_AS / sizeof LOAD_AS[0])

struct memory {
	uint64_t weights[N_AS];
	int have_cfg;                             /* a config of a known architecture */
	char why[sizeof((st_error *)0)->message]; /* else, when one is there: what is wrong */
	st_arch_config cfg;
	uint64_t per_token[N_AS]; /* the KV cache of one token */
	uint64_t kv[N_AS];        /* of context tokens (with --context) */
	uint64_t total[N_AS];     /* weights + kv */
};

/*
 * How reading the config went (rc, e): ST_OK a config to compute with;
 * none, or one of another architecture, nothing to say; one that cannot
 * be used, its message kept for the config line. Returns 0, or -1 after
 * an error line (out of memory).
 */
static int take_config(const char *path, int rc, const st_error *e, struct memory *m)
{
	m->have_cfg = rc == ST_OK;
	if (rc == ST_ENOMEM) {
		cli_error_path(path, e);
		return -1;
	}
	if (rc != ST_OK && rc != ST_ENOTFOUND && rc != ST_EUNSUPPORTED)
		snprintf(m->why, sizeof m->why, "%s", e->message);
	return 0;
}

/* The KV cache from m->cfg, once the weights and the config are in m;
 * -1 after an error line. */
static int finish(const char *path, uint64_t context, struct memory *m)
{
	st_error e;
	if (!m->have_cfg) {
		if (context) {
			char *p = cli_printable(path, strlen(path));
			char *w = cli_printable(m->why, strlen(m->why));
			cli_warn("%s: --context needs a config of GPT-2 or the Llama family "
			         "(config.json beside the checkpoint, a GGUF file's metadata)%s%s",
			         p, *w ? ": " : "", w);
			free(w);
			free(p);
			return -1;
		}
		return 0;
	}
	for (size_t k = 0; k < N_AS; k++) {
		if (st_memory_kv_cache(&m->cfg, 1, LOAD_AS[k], &m->per_token[k], &e) != ST_OK ||
		    st_memory_kv_cache(&m->cfg, context, LOAD_AS[k], &m->kv[k], &e) != ST_OK) {
			cli_error_path(path, &e);
			return -1;
		}
		if (__builtin_add_overflow(m->weights[k], m->kv[k], &m->total[k])) {
			char *p = cli_printable(path, strlen(path));
			cli_warn("%s: the weights and the KV cache take more than 2^64 bytes", p);
			free(p);
			return -1;
		}
	}
	return 0;
}

/*
 * The figures of ck with the config.json beside it, or (ck NULL) of the
 * GGUF file g with its metadata; -1 after an error line.
 */
static int compute(const char *path, const st_checkpoint *ck, const st_gguf *g, uint64_t context,
                   struct memory *m)
{
	st_error e;
	memset(m, 0, sizeof *m);
	int rc = ck ? st_memory_load_bytes(ck, LOAD_AS, N_AS, m->weights, &e)
	            : st_memory_gguf_load_bytes(g, LOAD_AS, N_AS, m->weights, &e);
	if (rc != ST_OK) {
		cli_error_path(path, &e);
		return -1;
	}
	st_arch_report r;
	rc = ck ? st_arch_inventory(ck, &m->cfg, &r, &e) : st_memory_gguf_config(g, &m->cfg, &e);
	if (ck && rc == ST_OK)
		st_arch_report_free(&r);
	if (take_config(path, rc, &e, m) != 0)
		return -1;
	return finish(path, context, m);
}

static void print_human(const char *path, const struct memory *m, uint64_t context, int markdown)
{
	char buf[256], c[4][96];
	if (markdown) {
		md_title(path);
	} else {
		char *p = cli_printable(path, strlen(path));
		table_print_kv("path:", p);
		free(p);
	}
	if (m->have_cfg) {
		char *arch = cli_printable(m->cfg.arch, strlen(m->cfg.arch));
		snprintf(buf, sizeof buf, "%s: %llu layers, %llu KV heads x %llu", arch,
		         (unsigned long long)m->cfg.layers, (unsigned long long)m->cfg.kv_heads,
		         (unsigned long long)m->cfg.head_dim);
		free(arch);
	} else if (m->why[0]) {
		char *w = cli_printable(m->why, strlen(m->why));
		snprintf(buf, sizeof buf, "no KV cache: %s", w);
		free(w);
	} else {
		snprintf(buf, sizeof buf, "none of a known architecture: no KV cache");
	}
	if (markdown)
		printf("config: %s", buf);
	else
		table_print_kv("config:", buf);
	if (context) {
		table_fmt_group(c[0], sizeof c[0], context);
		snprintf(buf, sizeof buf, "%s tokens", c[0]);
		if (markdown)
			printf("; context: %s", buf);
		else
			table_print_kv("context:", buf);
	}
	if (markdown)
		putchar('\n');
	putchar('\n');
	struct table tab;
	size_t ncols = !m->have_cfg ? 2 : context ? 5 : 3;
	table_init(&tab, ncols, "lrrrr");
	table_add(&tab, (const char *const[]){"dtype", "weights", "KV cache a token", "KV cache",
	                                      "total"});
	for (size_t k = 0; k < N_AS; k++) {
		table_fmt_full(c[0], sizeof c[0], m->weights[k], 1);
		table_fmt_full(c[1], sizeof c[1], m->per_token[k], 1);
		table_fmt_full(c[2], sizeof c[2], m->kv[k], 1);
		table_fmt_full(c[3], sizeof c[3], m->total[k], 1);
		table_add(&tab,
		          (const char *const[]){st_dtype_name(LOAD_AS[k]), c[0], c[1], c[2], c[3]});
	}
	md_table_show(&tab, markdown);
	table_free(&tab);
	if (!markdown)
		printf("note: floats counted in each dtype; integers and quantized layouts as "
		       "stored\n");
}

/* {"F32": N, ...} */
static void json_by_dtype(const uint64_t *v)
{
	putchar('{');
	for (size_t k = 0; k < N_AS; k++)
		printf("%s\"%s\": %llu", k ? ", " : "", st_dtype_name(LOAD_AS[k]),
		       (unsigned long long)v[k]);
	putchar('}');
}

static void print_json(const char *path, const struct memory *m, uint64_t context)
{
	printf("{\n  \"path\": ");
	cli_json_string(stdout, path, strlen(path));
	printf(",\n  \"weights\": ");
	json_by_dtype(m->weights);
	printf(",\n  \"kv_cache\": ");
	if (!m->have_cfg && m->why[0]) {
		printf("{\"error\": ");
		cli_json_string(stdout, m->why, strlen(m->why));
		putchar('}');
	} else if (!m->have_cfg) {
		printf("null");
	} else {
		printf("{\"architecture\": ");
		cli_json_string(stdout, m->cfg.arch, strlen(m->cfg.arch));
		printf(", \"layers\": %llu, \"kv_heads\": %llu, \"head_dim\": %llu, "
		       "\"per_token\": ",
		       (unsigned long long)m->cfg.layers, (unsigned long long)m->cfg.kv_heads,
		       (unsigned long long)m->cfg.head_dim);
		json_by_dtype(m->per_token);
		if (context) {
			printf(", \"context\": %llu, \"bytes\": ", (unsigned long long)context);
			json_by_dtype(m->kv);
			printf(", \"total\": ");
			json_by_dtype(m->total);
		}
		putchar('}');
	}
	printf("\n}\n");
}

static void print_memory(const char *path, const struct memory *m, uint64_t context, int json,
                         int markdown)
{
	if (json)
		print_json(path, m, context);
	else
		print_human(path, m, context, markdown);
}

int stinfo_memory(const char *path, const st_checkpoint *ck, uint64_t context, int json,
                  int markdown)
{
	struct memory m;
	if (compute(path, ck, NULL, context, &m) != 0)
		return -1;
	print_memory(path, &m, context, json, markdown);
	return 0;
}

int stinfo_memory_gguf(const char *path, uint64_t context, int json, int markdown)
{
	st_gguf *g;
	st_error e;
	if (st_gguf_open(&g, path, &e) != ST_OK) {
		cli_error_path(path, &e);
		return -1;
	}
	struct memory m;
	int rc = compute(path, NULL, g, context, &m);
	st_gguf_close(g);
	if (rc != 0)
		return -1;
	print_memory(path, &m, context, json, markdown);
	return 0;
}
