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

/*
 * A tensor selection: sel[i] says whether tensor i of the checkpoint is
 * shown (--tensors GLOB); sel NULL shows every tensor.
 */
static inline int stinfo_shown(const unsigned char *sel, size_t i)
{
	return !sel || sel[i];
}

/*
 * The tensors of ck whose name one of globs matches (st_diff_name_selected,
 * stdiff's --tensors rule) into *sel (malloc'd, one byte per tensor; NULL
 * when n_globs is 0). Returns how many matched.
 */
size_t stinfo_select(const st_checkpoint *ck, const char *const *globs, size_t n_globs,
                     unsigned char **sel);

/* The totals of ck's tensors that sel shows (sums saturate at UINT64_MAX). */
void stinfo_totals(const st_checkpoint *ck, const unsigned char *sel, struct stinfo_totals *t);

/*
 * Statistics of every tensor of ck with values into accs (one per
 * tensor, zeroed), read by threads workers with a progress line.
 * STINFO_CHUNK_ELEMENTS (at most the default) makes chunks smaller, for
 * the tests of chunk merges. Returns 0, or -1 with err saying why (the
 * caller prints it: on stderr, and in a --json run in the path's entry).
 */
int stinfo_stats(st_checkpoint *ck, const unsigned char *sel, int threads, st_stats *accs,
                 st_error *err);

/* How the summary shows a checkpoint. */
struct stinfo_view {
	int all;                  /* every tensor, no repeated layers compacted */
	int verbose;              /* every shard's header, data and metadata */
	int markdown;             /* GitHub tables (fe/markdown.h) */
	const unsigned char *sel; /* the tensors shown (stinfo_shown) */
	size_t n_sel;             /* how many sel shows */
};

/*
 * The human summary of ck opened from path: files (shards folded into one
 * line unless v->verbose), totals, quantized layouts, the config-aware
 * inventory, the dtype table, then the tensor table (every tensor when
 * v->all, else repeated layers compacted) or, with accs, the statistics
 * table; tables and the dtype table hold the tensors v->sel shows.
 */
void stinfo_summary(const char *path, const st_checkpoint *ck, const struct stinfo_view *v,
                    const st_stats *accs);

/* SPEC.md's JSON document of ck, its "tensors" and "total" those sel
 * shows; with accs each tensor's "stats". */
void stinfo_json(const st_checkpoint *ck, const unsigned char *sel, const st_stats *accs);

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

/*
 * --memory: the bytes ck's weights take with the floats in F32, BF16, F16
 * and F8_E4M3 (st_memory_load_bytes) and, with a GPT-2 or Llama-family
 * config.json beside ck, the KV cache a token and (context > 0) for
 * context tokens (st_memory_kv_cache): a summary, a Markdown table or
 * (json) a JSON document. Returns 0, or -1 after printing an error (a
 * context without such a config.json is one).
 */
int stinfo_memory(const char *path, const st_checkpoint *ck, uint64_t context, int json,
                  int markdown);
/* The same for the GGUF file at path, the KV cache from its metadata. */
int stinfo_memory_gguf(const char *path, uint64_t context, int json, int markdown);

/*
 * --dump NAME: tensor NAME of ck (opened from path) printed (a heading,
 * then a row of the last dimension a line), or with output written to
 * that .npy file: as stored when numpy has its dtype, else decoded to
 * F32. stinfo_dump_gguf does the same for a GGUF file's tensor, its block
 * types decoded to F32, its shape in numpy's order. Returns the exit
 * code, after an error line when not CLI_OK.
 */
int stinfo_dump(st_checkpoint *ck, const char *path, const char *name, const char *output);
int stinfo_dump_gguf(const char *path, const char *name, const char *output);

#endif
