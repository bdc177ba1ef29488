/*
 * ckpt.c - checkpoint helpers the tools share (see ckpt.h): the open that
 * reports its error. It reads no file itself; libst does.
 */
#include "common/ckpt.h"

#include <string.h>

#include "fe/cli.h"

/*
 * The next step for a file of this kind, which the checkpoint open
 * refused, in the words of the running tool; NULL when the library's
 * message says all there is.
 */
static const char *next_step(int kind)
{
	if (kind != ST_KIND_GGUF)
		return NULL;
	return "'stinfo FILE.gguf' reads it, stdiff compares it, stconvert converts it";
}

void ckpt_error(const char *path, const st_error *err)
{
	int kind;
	st_error e;
	const char *step = NULL;
	if (err->code == ST_EFORMAT && st_sniff_path(path, &kind, &e) == ST_OK)
		step = next_step(kind);
	if (step && err->message[0])
		cli_warn("%s; %s", err->message, step);
	else
		cli_error_path(path, err);
}

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
	ckpt_error(path, &err);
	return CLI_ERROR;
}
