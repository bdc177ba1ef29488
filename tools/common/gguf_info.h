/*
 * gguf_info.h - stinfo on a GGUF file, or the split set it is a part of
 * (one handle, st_gguf_open_set): the summary (files, the metadata
 * with long arrays shown as their type and length, tensors, parameters,
 * bytes by ggml type, the compacted tensor table), --json in the
 * safetensors document's shape with "format": "gguf" and a gguf_metadata
 * object, and --stats on the types libst decodes. --check is libst's
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
 * Print the summary (or with json the JSON document) of one GGUF file;
 * all prints arrays and strings whole and lists every tensor; stats reads
 * the data. *printed: an earlier path printed something (a blank line or
 * a comma goes first); set on return. Returns CLI_OK, or CLI_ERROR after
 * printing why.
 */
/*
 * A ggml type's name, or "type N (unknown)" written to buf (n bytes) for a
 * type number libst does not know; the result is buf or a static name.
 */
const char *gguf_type_label(unsigned type, char *buf, size_t n);

int gguf_info_describe(const char *path, int all, int json, int stats,
                       int *printed);

#endif
