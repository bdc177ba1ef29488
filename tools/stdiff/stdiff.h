/*
 * stdiff.h - what stdiff.c's main() calls in tools/stdiff/: the human
 * output of a comparison (show.c). Not shared with other tools.
 */
#ifndef ST_TOOLS_STDIFF_H
#define ST_TOOLS_STDIFF_H

#include <st.h>

#include <stdbool.h>

/* The text report of r: only-in lines, changes, the pairs that differ
 * folded by layer pattern (verbose 1: every pair, folded; 2: one line
 * each), the summary. */
void stdiff_print_human(const st_diff *r, int verbose);

/* --markdown: the same pairs as a GitHub table (with what is only on one
 * side and shape changes), then the tallies and the summary. */
void stdiff_print_markdown(const st_diff *r, int verbose, const char *path_a,
                           const char *path_b);

/* --first: the first pair, in the order given, whose values differ;
 * returns the exit code, CLI_OK or CLI_NO (an error exits 2). */
int stdiff_print_first(st_diff *r, bool quiet);

#endif
