/*
 * markdown.c - stinfo --markdown (stinfo.h): the summary's tables as
 * GitHub-flavoured Markdown, to paste into a model card or a pull request.
 * The cells are the ones the text tables print (printable already, from
 * cli_printable); common/markdown.c takes away what Markdown would read
 * as markup.
 */
#include "stinfo/stinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/markdown.h"
#include "fe/cli.h"
#include "fe/table.h"

void stinfo_table_print(struct table *t, int markdown)
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

void stinfo_markdown_title(const char *path)
{
	char *p = cli_printable(path, strlen(path));
	fputs("### ", stdout);
	markdown_cell(stdout, p);
	fputs("\n\n", stdout);
	free(p);
}

void stinfo_markdown_head(const char *path, const struct stinfo_totals *all,
                          const struct stinfo_totals *sel)
{
	stinfo_markdown_title(path);
	struct table tab;
	char c1[96], c2[96], c3[96];
	table_init(&tab, 4, "lrrr");
	table_add(&tab, (const char *const[]){"", "tensors", "parameters", "bytes"});
	snprintf(c1, sizeof c1, "%llu", (unsigned long long)all->tensors);
	table_fmt_full(c2, sizeof c2, all->params, 0);
	table_fmt_full(c3, sizeof c3, all->bytes, 1);
	table_add(&tab, (const char *const[]){"total", c1, c2, c3});
	if (sel) {
		snprintf(c1, sizeof c1, "%llu", (unsigned long long)sel->tensors);
		table_fmt_full(c2, sizeof c2, sel->params, 0);
		table_fmt_full(c3, sizeof c3, sel->bytes, 1);
		table_add(&tab, (const char *const[]){"selected (--tensors)", c1, c2, c3});
	}
	stinfo_table_print(&tab, 1);
	table_free(&tab);
}
