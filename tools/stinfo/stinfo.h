/*
 * stinfo.h - the parts of stinfo (tools/stinfo.c: options, --check and
 * the loop over PATHs) kept in tools/stinfo/: the figures it computes
 * (stats.c: totals by dtype, --stats through st_stream_run), the human
 * summary (show.c), the JSON document (json.c) and --check (check.c).
 *
 * Tool code: it prints to stdout and reports errors through fe/cli.
 * What a file format or a convention defines is libst's (st/stats.h,
 * st_arch_inventory, st_quant_summary_load); these files put it in words.
 */
#ifndef ST_STINFO_H
#define ST_STINFO_H

#include <st.h>

/* Tensors, parameters and bytes: in all, and by dtype. */
struct stinfo_totals {
	uint64_t tensors, params, bytes;
	struct { uint64_t tensors, params, bytes; } by[ST_DTYPE_COUNT];
};

/* The totals of ck's tensors (sums saturate at UINT64_MAX). */
void stinfo_totals(const st_checkpoint *ck, struct stinfo_totals *t);

/*
 * Statistics of every tensor of ck with values into accs (one per
 * tensor, zeroed), read by threads workers with a progress line.
 * STINFO_CHUNK_ELEMENTS (at most the default) makes chunks smaller, for
 * the tests of chunk merges. Returns 0, or -1 with err saying why (the
 * caller prints it: on stderr, and in a --json run in the path's entry).
 */
int stinfo_stats(st_checkpoint *ck, int threads, st_stats *accs, st_error *err);

/*
 * The human summary of ck opened from path: files, totals, quantized
 * layouts, the config-aware inventory, the dtype table, then the tensor
 * table (every tensor when all, else repeated layers compacted) or, with
 * accs, the statistics table.
 */
void stinfo_summary(const char *path, const st_checkpoint *ck, int all, const st_stats *accs);

/* SPEC.md's JSON document of ck; with accs each tensor's "stats". */
void stinfo_json(const st_checkpoint *ck, const st_stats *accs);

/*
 * A PATH that could not be read, in a --json run of several: its entry
 * of the array, {"path": ..., "error": ...} (the error the line on stderr
 * says), after a comma when *printed (an entry came before; set to 1).
 */
void stinfo_json_error(const char *path, const st_error *err, int *printed);

/*
 * --check of one path; returns the exit code for it (0 valid, 1 invalid,
 * 2 unreadable, after its error line). Text: the problems on stderr, a
 * verdict line on stdout. json: its entry of the document instead (array:
 * several PATHs, where an unreadable path has an entry too); *printed as
 * for stinfo_json_error.
 */
int stinfo_check(const char *path, int json, int array, int *printed);

/*
 * The config-aware inventory (st_arch_inventory) when a known config.json
 * is beside ck, and the quantized layouts (st_quant_summary_load) when ck
 * has scaled weights: summary lines, or (json) a JSON member each,
 * ",\n  \"inventory\": ..." and ",\n  \"quantization\": ...".
 */
void stinfo_inventory(const st_checkpoint *ck, int json);
void stinfo_quant(const st_checkpoint *ck, int json);

#endif
