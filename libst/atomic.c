/*
 * atomic.c - the pieces of "replace a file atomically" that the writer and
 * the index writer share: a temporary file beside the target, writes that
 * survive EINTR and short counts, fsync, and the directory fsync that makes
 * the final rename durable. The callers own the rename and the cleanup.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int st__write_all(int fd, const void *data, size_t n)
{
	const char *p = data;
	while (n) {
		ssize_t r = write(fd, p, n < (size_t)SSIZE_MAX ? n : (size_t)SSIZE_MAX);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (r == 0)
			return EIO;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int st__fsync_retry(int fd)
{
	while (fsync(fd) != 0) {
		if (errno != EINTR)
			return errno;
	}
	return 0;
}

/*
 * "<dir>/.<base>.tmp-XXXXXX" is created with O_EXCL and mode 0666, so that
 * the kernel applies the umask (and a default ACL) exactly as for any new
 * file: mkstemp would give 0600, and undoing that needs the umask, which a
 * library cannot read without changing it for every thread. An existing
 * target keeps its permissions: a private checkpoint must not become
 * world-readable because it was rewritten.
 */
int st__temp_create(const char *path, char **tmp_out, int *fd_out)
{
	static const char alnum[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	struct stat st;
	int keep_mode = -1;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return EISDIR;
		if (S_ISREG(st.st_mode))
			keep_mode = (int)(st.st_mode & 07777);
	}
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = path + dlen;
	size_t len = dlen + 1 + strlen(base) + 5 + 6;
	char *tmp = malloc(len + 1);
	if (!tmp)
		return ENOMEM;
	for (int attempt = 0; attempt < 100; attempt++) {
		unsigned char rnd[6];
		if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
			/* No entropy yet (early boot): mix what differs between calls. */
			uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15u ^
			             (uint64_t)(uintptr_t)tmp ^ (uint64_t)attempt << 40;
			for (size_t i = 0; i < sizeof rnd; i++, x >>= 8)
				rnd[i] = (unsigned char)x;
		}
		char sfx[7];
		for (int i = 0; i < 6; i++)
			sfx[i] = alnum[rnd[i] % (sizeof alnum - 1)];
		sfx[6] = 0;
		snprintf(tmp, len + 1, "%.*s.%s.tmp-%s", (int)dlen, path, base, sfx);
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0) {
			if (keep_mode >= 0 && fchmod(fd, (mode_t)keep_mode) != 0) {
				int e = errno;
				close(fd);
				unlink(tmp);
				free(tmp);
				return e;
			}
			*tmp_out = tmp;
			*fd_out = fd;
			return 0;
		}
		if (errno != EEXIST) {
			int e = errno;
			free(tmp);
			return e;
		}
	}
	free(tmp);
	return EEXIST;
}

int st__fsync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
	                  : strdup(".");
	if (!dir)
		return ENOMEM;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return errno;
	int e = st__fsync_retry(fd);
	close(fd);
	/* Some file systems cannot sync a directory; that is not a failure. */
	if (e == EINVAL || e == ENOTSUP || e == EBADF)
		e = 0;
	return e;
}
