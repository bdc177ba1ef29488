/*
 * st/index.h - writing shard indexes (model.safetensors.index.json).
 * Reading them, and opening the checkpoint they list, is st/checkpoint.h,
 * which this header includes.
 *
 * Index format: {"metadata": {"total_size": N, ...},
 *                "weight_map": {"tensor": "model-00001-of-00002.safetensors"}}
 * with rules I1-I5 of doc/index.md.
 */
#ifndef ST_INDEX_H
#define ST_INDEX_H

#include "checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One weight_map entry for st_index_write. */
typedef struct st_index_entry {
	const char *name;
	size_t name_len;
	const char *file; /* plain file name, NUL-terminated */
} st_index_entry;

/*
 * Write a shard index atomically: indent 2, keys sorted, metadata with
 * total_size (plus the given extra string entries, may be 0).
 * Returns ST_OK, ST_EINVAL (bad file name), ST_EIO, ST_ENOMEM.
 */
ST_API int st_index_write(const char *path, uint64_t total_size,
                          const st_index_entry *entries, size_t n,
                          const st_meta *meta, size_t n_meta, st_error *err);

/* The canonical shard file name: "model-%05u-of-%05u.safetensors". */
ST_API void st_shard_name(char *buf, size_t size, unsigned i, unsigned n);

#ifdef __cplusplus
}
#endif

#endif
