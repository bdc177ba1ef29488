/*
 * markdown.c - stinfo --markdown's GitHub tables (see markdown.h).
 */
#include "fe/markdown.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"
#include "fe/table.h"

/*
 * A cell as Markdown text: a backslash before each character a table
 * cell or inline markup would take for syntax ('|' ends a cell, '_' and
 * '*' emphasise, '`' opens code, '<' HTML, '~' strikes out; '[' a link,
 * only in a cell that holds "](" so shapes stay [4, 12]), so a tensor
 * named h_0|x shows as typed.
 */
void markdown_cell(FILE *f, const char *s)
{
	int link = strstr(s, "](") != NULL;
	for (; *s; s++) {
		if (strchr("\\|*_`<~", *s) || (link && *s == '['))
			fputc('\\', f);
		fputc(*s, f);
	}
}

void md_table_show(struct table *t, int markdown)
{
	if (!markdown) {
		table_print(t, stdout);
		return;
	}
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			fputs(c ? " | " : "| ", stdout);
			markdown_cell(stdout, t->cells[r * t->ncols + c]);
		}
		fputs(" |\n", stdout);
		if (r == 0) {
			for (size_t c = 0; c < t->ncols; c++)
				fputs(t->align[c] == 'r' ? "|--:" : "|:--", stdout);
			fputs("|\n", stdout);
		}
	}
}

void md_title(const char *path)
{
	char *p = cli_printable(path, strlen(path));
	fputs("### ", stdout);
	markdown_cell(stdout, p);
	fputs("\n\n", stdout);
	free(p);
}

/* A totals row; table_add copies only the columns tab has (4 without bits). */
static void add_counts(struct table *tab, const char *label, const struct md_counts *n)
{
	char c1[96], c2[96], c3[96];
	snprintf(c1, sizeof c1, "%llu", (unsigned long long)n->tensors);
	table_fmt_full(c2, sizeof c2, n->params, 0);
	table_fmt_full(c3, sizeof c3, n->bytes, 1);
	table_add(tab, (const char *const[]){label, c1, c2, c3, n->bits ? n->bits : "-"});
}

void md_head(const char *path, const struct md_counts *all, const struct md_counts *sel)
{
	md_title(path);
	struct table tab;
	table_init(&tab, all->bits ? 5 : 4, "lrrrr");
	table_add(&tab, (const char *const[]){"", "tensors", "parameters", "bytes", "bits/weight"});
	add_counts(&tab, "total", all);
	if (sel)
		add_counts(&tab, "selected (--tensors)", sel);
	md_table_show(&tab, 1);
	table_free(&tab);
}
