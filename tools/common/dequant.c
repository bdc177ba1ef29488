/*
 * dequant.c - the FP8 block size a checkpoint's config.json gives, in the
 * tools' terms (dequant.h).
 */
#include "common/dequant.h"

#include <stdio.h>
#include <stdlib.h>

int dequant_config_text_block_size(const char *text, size_t len, const char *file, uint64_t *b0,
                                   uint64_t *b1, st_error *err)
{
	st_error e;
	int found = 0;
	int r = st_quant_config_block_size(text, len, b0, b1, &found, &e);

	if (r == ST_EINVAL) {
		err->code = ST_EINVAL;
		err->sys_errno = 0;
		snprintf(err->message, sizeof err->message, "%.300s: %.200s", file, e.message);
		return -1;
	}
	if (r != ST_OK) { /* not a JSON object: no block size in it */
		*b0 = *b1 = ST_QUANT_DEFAULT_BLOCK;
		found = 0;
	}
	return found;
}

int dequant_config_block_size(const char *dir, uint64_t *b0, uint64_t *b1, st_error *err)
{
	char *text = NULL, *file = NULL;
	size_t n = 0;
	int rc = st_config_read(dir, &text, &n, &file, err);

	*b0 = *b1 = ST_QUANT_DEFAULT_BLOCK;
	if (rc == ST_OK)
		rc = dequant_config_text_block_size(text, n, file, b0, b1, err);
	else
		rc = rc == ST_ENOTFOUND ? 0 : -1; /* no config.json: the default */
	free(text);
	free(file);
	return rc;
}
