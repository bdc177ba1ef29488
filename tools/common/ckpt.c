/*
 * ckpt.c - checkpoint helpers the tools share (see ckpt.h): the open that
 * reports its error, and '-' (standard input). It reads no file itself;
 * libst does (st_file_open_fd); it only makes the temporary file a
 * stream's data is copied into.
 */
#include "common/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fe/cli.h"

int ckpt_is_stdin(const char *path)
{
	return strcmp(path, "-") == 0;
}

void ckpt_check_stdin(void)
{
	if (isatty(STDIN_FILENO))
		cli_die(CLI_ERROR, "refusing to read a checkpoint from a terminal: '-' reads "
		        "a safetensors file from standard input; pipe or redirect one");
}

void ckpt_refuse_stdin(const char *path, const char *what)
{
	if (ckpt_is_stdin(path))
		cli_die(CLI_ERROR, "%s reads a checkpoint by its path and cannot read '-' "
		        "(standard input): save the stream to a file and name that", what);
}

/*
 * An unlinked temporary file under $TMPDIR (else /tmp) for a stream's
 * data: O_TMPFILE where the file system has it, else mkstemp and unlink.
 * -1 with err filled when neither works.
 */
static int spool_open(st_error *err)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	char *tmpl = cli_xmalloc(strlen(dir) + sizeof "/stdin-XXXXXX");
	strcpy(tmpl, dir);
	strcat(tmpl, "/stdin-XXXXXX");
	fd = mkostemp(tmpl, O_CLOEXEC);
	int e = errno;
	if (fd >= 0)
		unlink(tmpl);
	else {
		err->code = ST_EIO;
		err->sys_errno = e;
		snprintf(err->message, sizeof err->message,
		         "%s: cannot make a temporary file in %.300s for the stream's data: %s",
		         CKPT_STDIN_NAME, dir, strerror(e));
	}
	free(tmpl);
	return fd;
}

int ckpt_open_stdin(st_checkpoint **ck, int header_only, size_t n_keys, st_error *err)
{
	ckpt_check_stdin();
	/* A stream is one file opened whole: no sub-dictionary is picked
	 * there, and ignoring --key would answer another question. */
	if (n_keys)
		cli_die(CLI_ERROR, "--key cannot be used with '-' (standard input): save the "
		        "checkpoint to a file and name that");
	int spool = -1;
	if (!header_only && (spool = spool_open(err)) < 0)
		return ST_EIO;
	st_file *f;
	/* A redirected PyTorch file is read as its path is; a pipe of one is refused. */
	unsigned flags = ST_OPEN_TORCH | (header_only ? ST_OPEN_HEADER_ONLY : 0);
	int rc = st_file_open_fd(&f, STDIN_FILENO, CKPT_STDIN_NAME, flags, spool, err);
	if (spool >= 0)
		close(spool); /* the file keeps its own descriptor */
	if (rc != ST_OK)
		return rc;
	return st_checkpoint_from_file(ck, f, err);
}

int ckpt_open(st_checkpoint **ck, const char *path)
{
	return ckpt_open_key(ck, path, NULL, 0);
}

int ckpt_open_for(st_checkpoint **ck, const char *path, int header_only)
{
	if (!ckpt_is_stdin(path))
		return ckpt_open(ck, path);
	st_error err;
	if (ckpt_open_stdin(ck, header_only, 0, &err) == ST_OK)
		return CLI_OK;
	cli_error_path(CKPT_STDIN_NAME, &err);
	return CLI_ERROR;
}

int ckpt_open_key(st_checkpoint **ck, const char *path,
                  const char *const *keys, size_t n_keys)
{
	st_error err;
	int rc = ckpt_is_stdin(path) ? ckpt_open_stdin(ck, 0, n_keys, &err)
	                             : st_checkpoint_open_key(ck, path, ST_OPEN_TORCH, keys,
	                                                      n_keys, &err);
	if (rc == ST_OK)
		return CLI_OK;
	cli_error_path(ckpt_is_stdin(path) ? CKPT_STDIN_NAME : path, &err);
	return CLI_ERROR;
}
