/*
 * ckpt.c - checkpoint helpers the tools share (see ckpt.h): the open that
 * reports its error. It reads no file itself; libst does.
 */
#include "common/ckpt.h"

#include <string.h>

#include "fe/cli.h"

int ckpt_open(st_checkpoint **ck, const char *path)
{
	return ckpt_open_key(ck, path, NULL, 0);
}

int ckpt_open_key(st_checkpoint **ck, const char *path,
                  const char *const *keys, size_t n_keys)
{
	st_error err;
	int rc = st_checkpoint_open_key(ck, path, ST_OPEN_TORCH, keys, n_keys,
	                                &err);
	if (rc == ST_OK)
		return CLI_OK;
	cli_error_path(path, &err);
	return CLI_ERROR;
}
