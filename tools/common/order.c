/*
 * order.c - a checkpoint's tensors in recorded order (order.h). Names in
 * the "order" entry come from the file: each is looked up, never trusted
 * to exist or to appear once.
 */
#include "common/order.h"

#include <stdlib.h>
#include <string.h>

int order_tensors(const st_checkpoint *ck, size_t **idx)
{
	size_t n = st_checkpoint_n_tensors(ck), m = 0;
	size_t *out = malloc((n ? n : 1) * sizeof *out);
	unsigned char *seen = calloc(n ? n : 1, 1);
	if (!out || !seen) {
		free(out);
		free(seen);
		return -1;
	}
	const char *order = NULL;
	if (st_checkpoint_n_files(ck) > 0)
		order = st_file_meta_get(st_checkpoint_file(ck, 0), "order");
	if (order) {
		for (const char *p = order; *p;) {
			const char *q = strchr(p, ',');
			size_t len = q ? (size_t)(q - p) : strlen(p);
			long i = len ? st_checkpoint_find(ck, p, len) : -1;
			if (i >= 0 && !seen[i]) {
				seen[i] = 1;
				out[m++] = (size_t)i;
			}
			p += len + (q != NULL);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!seen[i])
			out[m++] = i;
	free(seen);
	*idx = out;
	return order != NULL;
}
