/*
 * table.c - stinfo's number formatting and aligned tables (see table.h).
 */
#include "fe/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"

/* ---- small formatting helpers ------------------------------------------ */

/* Decimal with thousands separators: 124439808 -> "124,439,808". */
void table_fmt_group(char *buf, size_t size, uint64_t n)
{
	char tmp[32];
	int len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)n);
	size_t o = 0;
	for (int i = 0; i < len && o + 1 < size; i++) {
		if (i > 0 && (len - i) % 3 == 0 && o + 2 < size)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
}

/*
 * A count or a size with its exact value beside the short one:
 * "124.4M (124,439,808)", "497.8 MB (497,759,232 B)"; just "300" or
 * "232 B" when the short form is exact.
 */
void table_fmt_full(char *buf, size_t size, uint64_t n, int bytes)
{
	char a[32], b[32];
	if (bytes)
		cli_fmt_bytes(a, sizeof a, n);
	else
		cli_fmt_count(a, sizeof a, n);
	if (n < 1000) {
		snprintf(buf, size, "%s", a);
		return;
	}
	table_fmt_group(b, sizeof b, n);
	snprintf(buf, size, "%s (%s%s)", a, b, bytes ? " B" : "");
}

/*
 * A tensor name for a table: printable, and the empty name (legal) shown
 * as "" so that its row does not start with a blank cell.
 */
char *table_display_name(const char *s, size_t len)
{
	return len ? cli_printable(s, len) : cli_xstrdup("\"\"");
}

/*
 * Columns a code point takes on a terminal: 2 for the East Asian wide and
 * fullwidth blocks (CJK, Hangul, fullwidth forms, emoji), else 1. A table
 * of ranges, not wcwidth(), so the output does not depend on the locale.
 */
static unsigned cp_width(uint32_t cp)
{
	static const uint32_t wide[][2] = {
		{0x1100, 0x115f}, {0x2e80, 0x303e}, {0x3041, 0x33ff},
		{0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
		{0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe30, 0xfe4f},
		{0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x1f300, 0x1f64f},
		{0x1f900, 0x1f9ff}, {0x20000, 0x3fffd},
	};
	for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
		if (cp >= wide[i][0] && cp <= wide[i][1])
			return 2;
	return 1;
}

/* Columns a (valid UTF-8, printable) string takes on a terminal. */
size_t table_display_width(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t w = 0;
	while (*s) {
		uint32_t cp = *s;
		int more = cp >= 0xf0 ? 3 : cp >= 0xe0 ? 2 : cp >= 0xc0 ? 1 : 0;
		if (more)
			cp &= 0x3fu >> more;
		s++;
		for (; more > 0 && (*s & 0xc0) == 0x80; more--, s++)
			cp = (cp << 6) | (*s & 0x3fu);
		w += cp_width(cp);
	}
	return w;
}

const char *table_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* ---- aligned tables ---------------------------------------------------- */

void table_init(struct table *t, size_t ncols, const char *align)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->align = align;
}

/* Append a row; the cells are copied. */
void table_add(struct table *t, const char *const *cells)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = cli_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
	}
	for (size_t c = 0; c < t->ncols; c++)
		t->cells[t->nrows * t->ncols + c] = cli_xstrdup(cells[c]);
	t->nrows++;
}

void table_print(struct table *t, FILE *f)
{
	size_t *w = cli_xcalloc(t->ncols, sizeof *w);
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t cw = table_display_width(t->cells[r * t->ncols + c]);
			if (cw > w[c])
				w[c] = cw;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			size_t pad = w[c] - table_display_width(s);
			int last = c + 1 == t->ncols;
			if (c)
				fputs("  ", f);
			if (t->align[c] == 'r')
				fprintf(f, "%*s", (int)pad, "");
			fputs(s, f);
			if (t->align[c] != 'r' && !last)
				fprintf(f, "%*s", (int)pad, "");
		}
		fputc('\n', f);
	}
	free(w);
}

void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof *t);
}


/* ---- summary lines and statistics ------------------------------------- */

void table_print_kv(const char *key, const char *value)
{
	printf("%-13s%s\n", key, value);
}

void table_print_totals(uint64_t tensors, uint64_t params, uint64_t bytes)
{
	char buf[96];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)tensors);
	table_print_kv("tensors:", buf);
	table_fmt_full(buf, sizeof buf, params, 0);
	table_print_kv("parameters:", buf);
	table_fmt_full(buf, sizeof buf, bytes, 1);
	table_print_kv("bytes:", buf);
}

void table_print_selected(uint64_t n_sel, uint64_t tensors, uint64_t params, uint64_t bytes)
{
	char line[256], p[96], b[96];
	table_fmt_full(p, sizeof p, params, 0);
	table_fmt_full(b, sizeof b, bytes, 1);
	snprintf(line, sizeof line, "%llu of %llu tensors, %s parameters, %s",
	         (unsigned long long)n_sel, (unsigned long long)tensors, p, b);
	table_print_kv("selected:", line);
}

void table_fmt_stat(char *buf, size_t size, double v)
{
	snprintf(buf, size, "%.6g", v);
}

void table_stats_cells(const st_stats *a, char c[7][48])
{
	if (a->n) {
		table_fmt_stat(c[0], sizeof c[0], a->min);
		table_fmt_stat(c[1], sizeof c[1], a->max);
		table_fmt_stat(c[2], sizeof c[2], st_stats_mean(a));
		table_fmt_stat(c[3], sizeof c[3], st_stats_std(a));
	} else {
		for (int k = 0; k < 4; k++)
			snprintf(c[k], sizeof c[k], "-");
	}
	snprintf(c[4], sizeof c[4], "%llu", (unsigned long long)a->nan);
	snprintf(c[5], sizeof c[5], "%llu", (unsigned long long)a->inf);
	snprintf(c[6], sizeof c[6], "%llu", (unsigned long long)a->zeros);
}

/*
 * A statistic in JSON. Of an integer dtype, a whole value (min and max
 * always, mean and std when they happen to be) prints as a JSON integer,
 * -100 and not -1e+02; every other value in the shortest round-trip form.
 */
static void json_stat(double v, int integer)
{
	if (integer && v == floor(v))
		printf("%.0f", v == 0 ? 0.0 : v);
	else
		cli_json_double(stdout, v);
}

void table_json_stats(const st_stats *a, int integer)
{
	printf(", \"stats\": {\"min\": ");
	if (a->n) {
		json_stat(a->min, integer);
		printf(", \"max\": ");
		json_stat(a->max, integer);
		printf(", \"mean\": ");
		json_stat(st_stats_mean(a), integer);
		printf(", \"std\": ");
		json_stat(st_stats_std(a), integer);
	} else {
		printf("null, \"max\": null, \"mean\": null, \"std\": null");
	}
	printf(", \"nan\": %llu, \"inf\": %llu, \"zeros\": %llu}",
	       (unsigned long long)a->nan, (unsigned long long)a->inf,
	       (unsigned long long)a->zeros);
}
