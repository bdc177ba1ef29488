/*
 * table.h - stinfo's text output (common/gguf_info.c's GGUF summary
 * too): numbers with their exact value beside the short one, names made
 * printable, and tables whose columns are aligned by display width (CJK
 * and emoji take two columns), so that the safetensors and the GGUF
 * summaries look the same; and the statistics cells and JSON both print.
 * Not part of libst.
 */
#ifndef ST_TABLE_H
#define ST_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <st.h>

/* Decimal with thousands separators: 124439808 -> "124,439,808". */
void table_fmt_group(char *buf, size_t size, uint64_t n);
/*
 * A count or a size with its exact value beside the short one:
 * "124.4M (124,439,808)", "497.8 MB (497,759,232 B)"; just "300" or
 * "232 B" when the short form is exact.
 */
void table_fmt_full(char *buf, size_t size, uint64_t n, int bytes);
/* A name for a table, printable; the empty name as "". Caller frees. */
char *table_display_name(const char *s, size_t len);
/* Columns a (valid UTF-8, printable) string takes on a terminal. */
size_t table_display_width(const char *str);
/* The part of path after its last slash. */
const char *table_base_name(const char *path);

/*
 * A table collects its cells (owned strings) first and prints them once the
 * column widths are known. align holds 'l' or 'r' per column.
 */
struct table {
	size_t ncols;
	const char *align;
	char **cells; /* row-major, ncols per row; row 0 is the heading */
	size_t nrows, cap;
};

void table_init(struct table *t, size_t ncols, const char *align);
/* Append a row; the cells are copied. */
void table_add(struct table *t, const char *const *cells);
void table_print(struct table *t, FILE *f);
void table_free(struct table *t);

/* One summary line: the key padded to 13 columns, then the value. */
void table_print_kv(const char *key, const char *value);
/* The summary's "tensors:", "parameters:" and "bytes:" lines. */
void table_print_totals(uint64_t tensors, uint64_t params, uint64_t bytes);
/* With --tensors, under them: "selected:  N_SEL of TENSORS tensors, PARAMS
 * parameters, BYTES", the selection's figures against the whole's count. */
void table_print_selected(uint64_t n_sel, uint64_t tensors, uint64_t params, uint64_t bytes);
/* A statistic as a table shows it ("%.6g"). */
void table_fmt_stat(char *buf, size_t size, double v);
/* A statistics row's cells: min, max, mean, std ("-" when no finite
 * values), then the NaN, Inf and zero counts. */
void table_stats_cells(const st_stats *a, char cells[7][48]);
/*
 * A tensor's ", \"stats\": {...}" in --json, on stdout; integer: of an
 * integer dtype (or BOOL), whose whole-valued figures print as integers.
 */
void table_json_stats(const st_stats *a, int integer);

#endif
