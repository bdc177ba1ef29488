/*
 * markdown.c - Markdown escaping for --markdown (markdown.h).
 */
#include "common/markdown.h"

#include <string.h>

void markdown_cell(FILE *f, const char *s)
{
	int link = strstr(s, "](") != NULL;
	for (; *s; s++) {
		if (strchr("\\|*_`<~", *s) || (link && *s == '['))
			fputc('\\', f);
		fputc(*s, f);
	}
}
