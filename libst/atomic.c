/*
 * atomic.c - replacing a file atomically (st_atomic_*, st/atomic.h), and
 * the pieces of it that the writer, the index writer and the snapshot
 * writer share: a temporary sibling with the owner's pid in its name,
 * writes that survive EINTR and short counts, fsync, the directory fsync
 * that makes the final rename durable, and the removal of temporaries
 * whose owner died before it could remove them.
 *
 * What it is not: the format (writer.c) or directories of files
 * (snapshot.c).
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
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

/* Six random letters and digits (or, without entropy, what differs). */
static void random_suffix(char sfx[7], uintptr_t salt, int attempt)
{
	static const char alnum[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char rnd[6];
	if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
		/* No entropy yet (early boot): mix what differs between calls. */
		uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15u ^
		             (uint64_t)salt ^ (uint64_t)attempt << 40;
		for (size_t i = 0; i < sizeof rnd; i++, x >>= 8)
			rnd[i] = (unsigned char)x;
	}
	for (int i = 0; i < 6; i++)
		sfx[i] = alnum[rnd[i] % (sizeof alnum - 1)];
	sfx[6] = 0;
}

int st__temp_name(const char *path, char **out, int attempt)
{
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	size_t len = strlen(path) + 1 + 5 + 21 + 1 + 6 + 1;
	char *tmp = malloc(len);
	if (!tmp)
		return ENOMEM;
	char sfx[7];
	random_suffix(sfx, (uintptr_t)tmp, attempt);
	snprintf(tmp, len, "%.*s.%s" ST__TEMP_TAG "%ld-%s", (int)dlen, path,
	         path + dlen, (long)getpid(), sfx);
	*out = tmp;
	return 0;
}

/*
 * "<dir>/.<base>.tmp-<pid>-XXXXXX" is created with O_EXCL and mode 0666, so
 * that the kernel applies the umask (and a default ACL) exactly as for any
 * new file: mkstemp would give 0600, and undoing that needs the umask,
 * which a library cannot read without changing it for every thread. An
 * existing target keeps its permissions: a private checkpoint must not
 * become world-readable because it was rewritten.
 */
int st__temp_create(const char *path, char **tmp_out, int *fd_out)
{
	struct stat st;
	int keep_mode = -1;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return EISDIR;
		if (S_ISREG(st.st_mode))
			keep_mode = (int)(st.st_mode & 07777);
	}
	st__sweep_stale(path);
	for (int attempt = 0; attempt < 100; attempt++) {
		char *tmp;
		int e = st__temp_name(path, &tmp, attempt);
		if (e)
			return e;
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd >= 0) {
			if (keep_mode >= 0 && fchmod(fd, (mode_t)keep_mode) != 0) {
				e = errno;
				close(fd);
				unlink(tmp);
				free(tmp);
				return e;
			}
			*tmp_out = tmp;
			*fd_out = fd;
			return 0;
		}
		e = errno;
		free(tmp);
		if (e != EEXIST)
			return e;
	}
	return EEXIST;
}

/* ---- leftovers of dead processes --------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) != 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* Links are removed, never followed; another file system is never
 * entered (FTW_MOUNT), so a mount point left inside stays whole and the
 * directory holding it stays too. */
int st__rm_tree(const char *path)
{
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0 ? errno : 0;
}

/*
 * The pid of a temporary's owner when name is "<prefix><pid>-XXXXXX"
 * exactly, else 0.
 */
static long temp_owner(const char *name, const char *prefix, size_t plen)
{
	if (strncmp(name, prefix, plen) != 0)
		return 0;
	const char *p = name + plen;
	long pid = 0;
	size_t digits = 0;
	for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++)
		pid = pid * 10 + (*p - '0');
	if (!digits || *p != '-' || strlen(p + 1) != 6 || pid <= 0 ||
	    pid > INT_MAX)
		return 0;
	return pid;
}

/* Only ESRCH means the process is gone; EPERM: alive, someone else's. */
static int owner_gone(long pid)
{
	return pid && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int st__temp_is_stale(const char *name)
{
	/* ".<base>.tmp-<pid>-XXXXXX": the last tag, after a non-empty base. */
	const char *tag = NULL;
	for (const char *p = name; (p = strstr(p, ST__TEMP_TAG)) != NULL; p++)
		tag = p;
	if (name[0] != '.' || !tag || tag == name + 1)
		return 0;
	size_t plen = (size_t)(tag - name) + sizeof ST__TEMP_TAG - 1;
	return owner_gone(temp_owner(name, name, plen));
}

void st__sweep_stale(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	char *dir = slash ? strndup(path, dlen ? dlen : 1) : strdup(".");
	size_t plen = 1 + strlen(base) + sizeof ST__TEMP_TAG - 1;
	char *prefix = malloc(plen + 1);
	if (!dir || !prefix || !*base) {
		free(dir);
		free(prefix);
		return;
	}
	snprintf(prefix, plen + 1, ".%s" ST__TEMP_TAG, base);
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (!owner_gone(temp_owner(e->d_name, prefix, plen)))
				continue;
			size_t n = strlen(dir) + 1 + strlen(e->d_name) + 1;
			char *victim = malloc(n);
			if (!victim)
				break;
			snprintf(victim, n, "%s/%s", dir, e->d_name);
			/* Best effort: what cannot be removed stays for later. */
			st__rm_tree(victim);
			free(victim);
		}
		closedir(d);
	}
	free(dir);
	free(prefix);
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

/* ---- st_atomic ------------------------------------------------------------ */

struct st_atomic {
	char *path, *tmp;
	int fd;
	int done;
};

int st_atomic_open(st_atomic **out, const char *path, st_error *err)
{
	*out = NULL;
	if (!path || !*path)
		return st__error(err, ST_EINVAL, "output path is empty");
	size_t len = strlen(path);
	if (path[len - 1] == '/')
		return st__error(err, ST_EINVAL, "%s: output path names a directory",
		                 path);
	st_atomic *a = calloc(1, sizeof *a);
	if (!a || !(a->path = strdup(path))) {
		free(a);
		return st__error(err, ST_ENOMEM, "%s: out of memory", path);
	}
	int e = st__temp_create(path, &a->tmp, &a->fd);
	if (e) {
		free(a->path);
		free(a);
		if (e == EISDIR)
			return st__error_sys(err, ST_EIO, e, "%s", path);
		if (e == ENOMEM)
			return st__error(err, ST_ENOMEM, "%s: out of memory", path);
		return st__error_sys(err, ST_EIO, e,
		                     "%s: cannot create a temporary file beside it",
		                     path);
	}
	*out = a;
	return ST_OK;
}

int st_atomic_fd(const st_atomic *a) { return a->done ? -1 : a->fd; }
const char *st_atomic_temp_path(const st_atomic *a)
{
	return a->done ? NULL : a->tmp;
}
const char *st_atomic_path(const st_atomic *a) { return a->path; }

int st_atomic_write(st_atomic *a, const void *data, size_t n, st_error *err)
{
	if (a->done)
		return st__error(err, ST_ESTATE, "%s: write after commit", a->path);
	int e = st__write_all(a->fd, data, n);
	if (e)
		return st__error_sys(err, ST_EIO, e,
		                     "%s: cannot write temporary file '%s'", a->path,
		                     a->tmp);
	return ST_OK;
}

int st_atomic_set_mode(st_atomic *a, unsigned mode, st_error *err)
{
	if (a->done)
		return st__error(err, ST_ESTATE, "%s: set_mode after commit",
		                 a->path);
	if (fchmod(a->fd, (mode_t)(mode & 07777)) != 0)
		return st__error_sys(err, ST_EIO, errno, "%s: cannot set its mode",
		                     a->path);
	return ST_OK;
}

void st_atomic_writeback(st_atomic *a)
{
	if (!a->done)
		st__writeback(a->fd, 0, 0);
}

void st__writeback(int fd, uint64_t off, uint64_t len)
{
	sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
}

int st_atomic_commit(st_atomic *a, st_error *err)
{
	if (a->done)
		return st__error(err, ST_ESTATE, "%s: committed twice", a->path);
	const char *what = "sync";
	int e = st__fsync_retry(a->fd);
	if (close(a->fd) != 0 && !e) {
		e = errno;
		what = "close";
	}
	a->fd = -1;
	if (!e && rename(a->tmp, a->path) != 0) {
		e = errno;
		what = "rename";
	}
	if (e) {
		st__error_sys(err, ST_EIO, e, "%s: cannot %s temporary file '%s'",
		              a->path, what, a->tmp);
		unlink(a->tmp);
		a->done = 1;
		return ST_EIO;
	}
	a->done = 1;
	/* The file is in place; a failure now only means it may not survive a
	 * crash, which the caller still needs to hear about. */
	if ((e = st__fsync_dir(a->path)) != 0)
		return st__error_sys(err, ST_EIO, e, "%s: cannot sync its directory",
		                     a->path);
	return ST_OK;
}

void st_atomic_close(st_atomic *a)
{
	if (!a)
		return;
	if (!a->done) {
		close(a->fd);
		unlink(a->tmp);
	}
	free(a->tmp);
	free(a->path);
	free(a);
}
