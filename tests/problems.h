/*
 * problems.h - an st_problem_fn for the unit tests of stinfo's --check
 * modules (check_common_inventory.c, check_common_quant_info.c): counts
 * errors and warnings and keeps the messages, one a line.
 */
#ifndef ST_TESTS_PROBLEMS_H
#define ST_TESTS_PROBLEMS_H

#include <stdio.h>
#include <string.h>

#include <st.h>

struct problems {
	int errors, warnings;
	char text[4096];
};

static void collect(void *ctx, int severity, const char *msg)
{
	struct problems *p = ctx;
	if (severity == ST_PROBLEM_ERROR)
		p->errors++;
	else
		p->warnings++;
	size_t n = strlen(p->text);
	snprintf(p->text + n, sizeof p->text - n, "%s\n", msg);
}

#endif
