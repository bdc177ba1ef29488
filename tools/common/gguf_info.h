/*
 * gguf_info.h - stinfo on a GGUF file, or the split set it is a part of
 * (one handle, st_gguf_open_set): the summary (files, the metadata
 * with long arrays shown as their type and length, tensors, parameters,
 * bytes by ggml type, the compacted tensor table), --json in the
 * safetensors document's shape with "format": "gguf" and a gguf_metadata
 * object, and --stats on the types libst decodes; --tensors and
 * --markdown as for safetensors. --check is libst's
 * st_gguf_check_set. Shapes are shown in C order (GGUF's dims reversed,
 * as PyTorch shows the tensor); --json also gives "gguf_dims" as stored.
 * Not part of libst.
 */
#ifndef ST_GGUF_INFO_H
#define ST_GGUF_INFO_H

#include <stddef.h>

/* 1 when path names a GGUF file: it ends in .gguf, or starts with "GGUF". */
int gguf_info_is_gguf(const char *path);

/*
 * A ggml type's name, or "type N (unknown)" written to buf (n bytes) for a
 * type number libst does not know; the result is buf or a static name.
 */
const char *gguf_type_label(unsigned type, char *buf, size_t n);

/* What gguf_info_describe prints, and how. */
struct gguf_info_view {
	int all;      /* arrays and strings whole, every tensor listed */
	int json;     /* the JSON document instead of the summary */
	int stats;    /* read the data: the statistics table */
	int markdown; /* the summary's tables as GitHub tables (fe/markdown.h) */
	const char *const *globs; /* --tensors: the tensors shown (none: all) */
	size_t n_globs;
	int threads; /* --stats: worker threads (0 or 1: the caller only) */
};

/* gguf_info_describe's answer when no tensor matches v->globs. */
#define GGUF_INFO_NO_MATCH (-1)

/*
 * Print the summary (or with v->json the JSON document) of one GGUF file
 * or split set. With v->globs, the type, tensor and statistics tables and
 * the JSON "tensors" and "total" hold the tensors one of them matches
 * (st_diff_name_selected); the summary's totals stay the whole file's,
 * with a "selected:" line. *printed: an earlier path printed something (a
 * blank line or a comma goes first); set on return. Returns CLI_OK,
 * CLI_ERROR after printing why, or GGUF_INFO_NO_MATCH having printed
 * nothing (the caller says so).
 */
int gguf_info_describe(const char *path, const struct gguf_info_view *v, int *printed);

#endif
