/*
 * inventory.c - the config-aware inventory in words (inventory.h): what
 * libst's st_arch_inventory found, as stinfo's summary lines and --check
 * problems.
 */
#include "common/inventory.h"
#include "fe/cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN 8

/* 124439808 -> "124,439,808". */
static void fmt_count(char *buf, size_t size, uint64_t n)
{
	char tmp[32];
	int len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)n);
	size_t o = 0;
	for (int i = 0; i < len && o + 2 < size; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
}

static void print_shape(FILE *f, unsigned ndim, const uint64_t *shape)
{
	cli_print_dims(f, shape, ndim);
}

static const char *item_name(const st_arch_item *it, size_t *len)
{
	if (it->found && it->what != ST_ARCH_MISSHAPEN) {
		*len = it->found->name_len;
		return it->found->name;
	}
	*len = strlen(it->name);
	return it->name;
}

/* "<label> N: a [s], b [s], ... and M more" for the items of kind what. */
static void print_list(FILE *f, const st_arch_report *r,
                       enum st_arch_what what, const char *label,
                       const char *one, const char *many)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_items; i++)
		n += r->items[i].what == what;
	if (!n)
		return;
	fprintf(f, "%-13s%zu %s:", label, n, n == 1 ? one : many);
	size_t shown = 0;
	for (size_t i = 0; i < r->n_items && shown < SHOWN; i++) {
		const st_arch_item *it = &r->items[i];
		if (it->what != what)
			continue;
		size_t len;
		const char *s = item_name(it, &len);
		fputs(shown++ ? ", " : " ", f);
		cli_print_name(f, s, len);
		putc(' ', f);
		if (what == ST_ARCH_MISSHAPEN) {
			print_shape(f, it->found->ndim, it->found->shape);
			fputs(" (expected ", f);
			print_shape(f, it->ndim, it->shape);
			putc(')', f);
		} else if (it->found) {
			print_shape(f, it->found->ndim, it->found->shape);
		} else {
			print_shape(f, it->ndim, it->shape);
		}
	}
	if (n > shown)
		fprintf(f, " ... and %zu more", n - shown);
	putc('\n', f);
}

void inventory_print(FILE *f, const st_arch_config *cfg,
                     const st_arch_report *r)
{
	char implied[40], found[40];
	fmt_count(implied, sizeof implied, r->implied);
	fmt_count(found, sizeof found, r->found);
	fprintf(f, "%-13s%s (config.json), %llu layers: %s parameters implied, "
	        "%s found in %zu of %zu tensors\n", "config:", cfg->arch,
	        (unsigned long long)cfg->layers, implied, found, r->n_matched,
	        r->n_expected);
	print_list(f, r, ST_ARCH_MISSING, "missing:", "parameter",
	           "parameters");
	print_list(f, r, ST_ARCH_MISSHAPEN, "misshapen:", "parameter",
	           "parameters");
	print_list(f, r, ST_ARCH_BUFFER, "extra:", "legacy buffer",
	           "legacy buffers");
	print_list(f, r, ST_ARCH_ALIAS, "extra:", "alias of the embedding",
	           "aliases of the embedding");
	print_list(f, r, ST_ARCH_UNKNOWN, "extra:", "tensor not in the config",
	           "tensors not in the config");
}

/* The items of kind what as a JSON array of {name, shape[, expected]}. */
static void json_list(FILE *f, const st_arch_report *r, enum st_arch_what what,
                      const char *key)
{
	fprintf(f, ", \"%s\": [", key);
	size_t n = 0;
	for (size_t i = 0; i < r->n_items; i++) {
		const st_arch_item *it = &r->items[i];
		if (it->what != what)
			continue;
		size_t len;
		const char *s = item_name(it, &len);
		fputs(n++ ? ", {\"name\": " : "{\"name\": ", f);
		cli_json_string(f, s, len);
		fputs(", \"shape\": ", f);
		if (it->found)
			cli_print_dims(f, it->found->shape, it->found->ndim);
		else
			cli_print_dims(f, it->shape, it->ndim);
		if (what == ST_ARCH_MISSHAPEN) {
			fputs(", \"expected\": ", f);
			cli_print_dims(f, it->shape, it->ndim);
		}
		putc('}', f);
	}
	putc(']', f);
}

void inventory_json(FILE *f, const st_arch_config *cfg,
                    const st_arch_report *r)
{
	fputs("{\"architecture\": ", f);
	cli_json_string(f, cfg->arch, strlen(cfg->arch));
	fprintf(f, ", \"layers\": %llu, \"parameters_implied\": %llu, "
	        "\"parameters_found\": %llu, \"tensors_matched\": %zu, "
	        "\"tensors_expected\": %zu, \"prefix\": ",
	        (unsigned long long)cfg->layers, (unsigned long long)r->implied,
	        (unsigned long long)r->found, r->n_matched, r->n_expected);
	cli_json_string(f, r->prefix, strlen(r->prefix));
	json_list(f, r, ST_ARCH_MISSING, "missing");
	json_list(f, r, ST_ARCH_MISSHAPEN, "misshapen");
	json_list(f, r, ST_ARCH_BUFFER, "legacy_buffers");
	json_list(f, r, ST_ARCH_ALIAS, "aliases");
	json_list(f, r, ST_ARCH_UNKNOWN, "unknown");
	putc('}', f);
}

static void report(st_problem_fn fn, void *ctx, int severity,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void report(st_problem_fn fn, void *ctx, int severity,
                   const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fn(ctx, severity, msg);
}

static void shape_str(char *buf, size_t size, unsigned ndim,
                      const uint64_t *shape)
{
	size_t o = 0;
	o += (size_t)snprintf(buf + o, size - o, "[");
	for (unsigned d = 0; d < ndim && o < size; d++)
		o += (size_t)snprintf(buf + o, size - o, "%s%llu", d ? ", " : "",
		                      (unsigned long long)shape[d]);
	if (o < size)
		snprintf(buf + o, size - o, "]");
}

int inventory_check(const char *path, st_problem_fn fn, void *ctx)
{
	st_checkpoint *ck;
	st_error e;
	/* A checkpoint that does not open has had its errors reported. */
	if (st_checkpoint_open(&ck, path, ST_OPEN_TORCH, &e) != ST_OK)
		return 0;
	st_arch_config cfg;
	st_arch_report r;
	/* No config, or one that says too little, implies nothing to check. */
	int rc = st_arch_inventory(ck, &cfg, &r, NULL);
	int errors = 0;
	for (size_t i = 0; rc == ST_OK && i < r.n_items; i++) {
		const st_arch_item *it = &r.items[i];
		char want[96], got[96];
		size_t len;
		const char *s = item_name(it, &len);
		char *name = cli_printable(s, len);
		shape_str(want, sizeof want, it->ndim, it->shape);
		if (it->found)
			shape_str(got, sizeof got, it->found->ndim, it->found->shape);
		switch (it->what) {
		case ST_ARCH_MISSING:
			report(fn, ctx, ST_PROBLEM_ERROR, "%s: tensor '%s': missing "
			       "(%s implies %s)", path, name, cfg.arch, want);
			errors++;
			break;
		case ST_ARCH_MISSHAPEN:
			report(fn, ctx, ST_PROBLEM_ERROR, "%s: tensor '%s': shape %s, "
			       "expected %s (%s)", path, name, got, want, cfg.arch);
			errors++;
			break;
		case ST_ARCH_UNKNOWN:
			report(fn, ctx, ST_PROBLEM_WARNING, "%s: tensor '%s' %s: not a "
			       "parameter of %s", path, name, got, cfg.arch);
			break;
		default:
			break;
		}
		free(name);
	}
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
	return errors;
}
