/*
 * markdown.h - stinfo --markdown: the summary's tables as GitHub-flavoured
 * Markdown, to paste into a model card or a pull request, for safetensors
 * and PyTorch checkpoints (tools/stinfo/) and GGUF files
 * (common/gguf_info.c) alike. The cells are the ones the text tables print
 * (printable already, from cli_printable); here they only lose what
 * Markdown would read as markup. Not part of libst.
 */
#ifndef ST_MARKDOWN_H
#define ST_MARKDOWN_H

#include <stdint.h>
#include <stdio.h>

struct table;

/*
 * s (NUL-terminated, printable already: cli_printable) as Markdown text on
 * f: a backslash before each character a table cell or inline markup would
 * take for syntax ('|' ends a cell, '_' and '*' emphasise, '`' opens code,
 * '<' HTML, '~' strikes out; '[' a link, only in a cell that holds "](" so
 * shapes stay [4, 12]), so a tensor named h_0|x shows as typed. The one
 * escaping of every --markdown (stinfo's tables, stdiff's).
 */
void markdown_cell(FILE *f, const char *s);

/* Table t on stdout: aligned text, or (markdown) a GitHub table. */
void md_table_show(struct table *t, int markdown);
/* --markdown's title line: "### PATH", escaped. */
void md_title(const char *path);

/* One row of md_head's totals table; bits: a bits/weight cell, or NULL. */
struct md_counts {
	uint64_t tensors, params, bytes;
	const char *bits;
};

/*
 * --markdown's heading: the title, and a table of the totals (all) and,
 * with --tensors, of the selection (sel; NULL without); a bits/weight
 * column when all->bits is set.
 */
void md_head(const char *path, const struct md_counts *all, const struct md_counts *sel);

#endif
