/*
 * markdown.h - the one Markdown escaping of the tools' --markdown output
 * (stinfo's tables, stdiff's): text already printable (cli_printable)
 * loses what a GitHub table cell would read as markup. Not part of libst.
 */
#ifndef ST_TOOLS_MARKDOWN_H
#define ST_TOOLS_MARKDOWN_H

#include <stdio.h>

/*
 * s (NUL-terminated) as Markdown text on f: a backslash before each
 * character a table cell or inline markup would take for syntax ('|'
 * ends a cell, '_' and '*' emphasise, '`' opens code, '<' HTML, '~'
 * strikes out; '[' a link, only in a cell that holds "](" so shapes stay
 * [4, 12]), so a tensor named h_0|x shows as typed.
 */
void markdown_cell(FILE *f, const char *s);

#endif
