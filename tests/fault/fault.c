/*
 * fault.c - an LD_PRELOAD shim for tests/cli/fault.sh: it makes the Nth
 * call that writes under a path prefix fail, as SQLite's test VFS fails
 * the Nth I/O of a commit, and the Nth read there fail or come back
 * short.
 *
 * What it is not: part of libst or of the tools. It is built only for the
 * tests (tests/CMakeLists.txt), and never with the sanitizers, whose own
 * interceptors do not mix with a preloaded library.
 *
 * Environment (read once, at load):
 *   FAULT_PREFIX=DIR       only calls on paths under DIR, or on descriptors
 *                          opened there, count; unset: nothing counts
 *   FAULT_AT=N             the Nth counted write-class call fails (1 is the
 *                          first; unset or 0: none fails)
 *   FAULT_ERRNO=EIO|ENOSPC the errno of the failure (default EIO)
 *   FAULT_PERSIST=1        every counted write-class call from the Nth on
 *                          fails, as a full disk does (default: only the Nth)
 *   FAULT_READ_AT=N        the Nth counted read-class call fails with
 *                          FAULT_ERRNO, or with FAULT_READ=short returns
 *                          half the bytes asked for (a legal short count)
 *   FAULT_COUNT_FILE=PATH  at exit, write "writes W\nreads R\n": how many
 *                          calls of each class the run made
 *   FAULT_LOG=PATH         append one line per counted call, "w N call" or
 *                          "r N call", to find which call the Nth is
 *
 * Write-class calls: open/openat/creat with O_CREAT, mkdir, mkdirat,
 * rename, renameat, renameat2, link, linkat, symlink, symlinkat, on a path
 * under the prefix; write, pwrite, writev, pwritev, fsync, fdatasync,
 * ftruncate, fchmod, and copy_file_range's output, on a descriptor that
 * was opened under it (by any open, directories included, so that a
 * directory's fsync counts). Read-class calls: read, pread, readv, preadv
 * on such a descriptor. Calls that glibc makes inside itself (fopen's
 * open, fwrite's write) do not pass through here; libst's writers use the
 * system calls directly. Data read through mmap is not seen either.
 */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FD 65536

static char prefix[PATH_MAX];
static size_t prefix_len;
static long fault_at, read_at;
static int fault_errno = EIO, persist, read_short;
static char count_file[PATH_MAX];
static long n_writes, n_reads;
static int log_fd = -1;
/* Descriptors opened under the prefix: 1, else 0. */
static unsigned char tracked[MAX_FD];

/* ---- the real functions ---------------------------------------------- */

#define REAL(name) static __typeof__(name) *real_##name
REAL(open);
REAL(open64);
REAL(openat);
REAL(openat64);
REAL(creat);
REAL(creat64);
REAL(close);
REAL(write);
REAL(pwrite);
REAL(pwrite64);
REAL(writev);
REAL(pwritev);
REAL(fsync);
REAL(fdatasync);
REAL(ftruncate);
REAL(ftruncate64);
REAL(fchmod);
REAL(copy_file_range);
REAL(rename);
REAL(renameat);
REAL(renameat2);
REAL(mkdir);
REAL(mkdirat);
REAL(link);
REAL(linkat);
REAL(symlink);
REAL(symlinkat);
REAL(read);
REAL(pread);
REAL(pread64);
REAL(readv);
REAL(preadv);

static void *must(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p) {
		fprintf(stderr, "fault.so: no %s in the next library\n", name);
		abort();
	}
	return p;
}
#define BIND(name) real_##name = (__typeof__(real_##name))must(#name)

static void save_counts(void);

__attribute__((constructor)) static void init(void)
{
	BIND(open); BIND(open64); BIND(openat); BIND(openat64);
	BIND(creat); BIND(creat64); BIND(close);
	BIND(write); BIND(pwrite); BIND(pwrite64); BIND(writev); BIND(pwritev);
	BIND(fsync); BIND(fdatasync); BIND(ftruncate); BIND(ftruncate64);
	BIND(fchmod); BIND(copy_file_range);
	BIND(rename); BIND(renameat); BIND(renameat2);
	BIND(mkdir); BIND(mkdirat); BIND(link); BIND(linkat);
	BIND(symlink); BIND(symlinkat);
	BIND(read); BIND(pread); BIND(pread64); BIND(readv); BIND(preadv);

	const char *s = getenv("FAULT_PREFIX");
	if (s && *s && strlen(s) < sizeof prefix) {
		strcpy(prefix, s);
		prefix_len = strlen(prefix);
		while (prefix_len > 1 && prefix[prefix_len - 1] == '/')
			prefix[--prefix_len] = 0;
	}
	if ((s = getenv("FAULT_AT")))
		fault_at = strtol(s, NULL, 10);
	if ((s = getenv("FAULT_READ_AT")))
		read_at = strtol(s, NULL, 10);
	if ((s = getenv("FAULT_ERRNO")) && strcmp(s, "ENOSPC") == 0)
		fault_errno = ENOSPC;
	if ((s = getenv("FAULT_PERSIST")))
		persist = strcmp(s, "1") == 0;
	if ((s = getenv("FAULT_READ")))
		read_short = strcmp(s, "short") == 0;
	if ((s = getenv("FAULT_LOG")))
		log_fd = real_open(s, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if ((s = getenv("FAULT_COUNT_FILE")) && strlen(s) < sizeof count_file) {
		strcpy(count_file, s);
		atexit(save_counts);
	}
}

static void save_counts(void)
{
	char buf[64];
	int n = snprintf(buf, sizeof buf, "writes %ld\nreads %ld\n",
	                 __atomic_load_n(&n_writes, __ATOMIC_SEQ_CST),
	                 __atomic_load_n(&n_reads, __ATOMIC_SEQ_CST));
	int fd = real_open(count_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (real_write(fd, buf, (size_t)n) != n)
		fprintf(stderr, "fault.so: cannot write %s\n", count_file);
	real_close(fd);
}

/* ---- what counts ------------------------------------------------------ */

/* Is p (absolute, or relative to the directory dirfd or the cwd) under
 * the prefix? Names are compared as given: no "..", no links resolved. */
static int under(int dirfd, const char *p)
{
	if (!prefix_len || !p)
		return 0;
	char full[PATH_MAX * 2];
	if (p[0] != '/') {
		char base[PATH_MAX];
		if (dirfd == AT_FDCWD) {
			if (!getcwd(base, sizeof base))
				return 0;
		} else {
			char link[64];
			snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
			ssize_t k = readlink(link, base, sizeof base - 1);
			if (k <= 0)
				return 0;
			base[k] = 0;
		}
		snprintf(full, sizeof full, "%s/%s", base, p);
		p = full;
	}
	return strncmp(p, prefix, prefix_len) == 0 &&
	       (p[prefix_len] == '/' || p[prefix_len] == 0 ||
	        prefix[prefix_len - 1] == '/');
}

static int fd_tracked(int fd)
{
	return fd >= 0 && fd < MAX_FD &&
	       __atomic_load_n(&tracked[fd], __ATOMIC_RELAXED);
}

static void track(int fd, int on)
{
	if (fd >= 0 && fd < MAX_FD)
		__atomic_store_n(&tracked[fd], (unsigned char)on, __ATOMIC_RELAXED);
}

/* Count one write-class call; 1 when it is to fail (errno is set). */
static void log_call(char kind, long n, const char *call, const char *path)
{
	if (log_fd < 0)
		return;
	char line[PATH_MAX + 64];
	int k = snprintf(line, sizeof line, "%c %ld %s%s%s\n", kind, n, call,
	                 path ? " " : "", path ? path : "");
	if (k >= (int)sizeof line)
		k = (int)sizeof line - 1;
	if (real_write(log_fd, line, (size_t)k) != k)
		log_fd = -1;
}

static int write_fails(const char *call, const char *path)
{
	long n = __atomic_add_fetch(&n_writes, 1, __ATOMIC_SEQ_CST);
	log_call('w', n, call, path);
	if (fault_at > 0 && (n == fault_at || (persist && n > fault_at))) {
		errno = fault_errno;
		return 1;
	}
	return 0;
}

/* Count one read-class call: 0 to pass, 1 to fail (errno set), 2 to come
 * back short. */
static int read_fault(const char *call)
{
	long n = __atomic_add_fetch(&n_reads, 1, __ATOMIC_SEQ_CST);
	log_call('r', n, call, NULL);
	if (read_at <= 0 || n != read_at)
		return 0;
	if (read_short)
		return 2;
	errno = fault_errno;
	return 1;
}

/* ---- opening ---------------------------------------------------------- */

static int opened(int dirfd, const char *path, int fd_or_fail)
{
	if (fd_or_fail >= 0 && under(dirfd, path))
		track(fd_or_fail, 1);
	return fd_or_fail;
}

/* An open that would create counts; one that fails is a failure of
 * creation (EIO or ENOSPC, as a full directory gives). */
#define OPEN_BODY(dirfd, call)                                              \
	mode_t mode = 0;                                                    \
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {      \
		va_list ap;                                                 \
		va_start(ap, flags);                                        \
		mode = (mode_t)va_arg(ap, int);                             \
		va_end(ap);                                                 \
		if (under(dirfd, path) && write_fails(__func__, path))            \
			return -1;                                          \
	}                                                                   \
	return opened(dirfd, path, call)

int open(const char *path, int flags, ...)
{
	OPEN_BODY(AT_FDCWD, real_open(path, flags, mode));
}
int open64(const char *path, int flags, ...)
{
	OPEN_BODY(AT_FDCWD, real_open64(path, flags, mode));
}
int openat(int dirfd, const char *path, int flags, ...)
{
	OPEN_BODY(dirfd, real_openat(dirfd, path, flags, mode));
}
int openat64(int dirfd, const char *path, int flags, ...)
{
	OPEN_BODY(dirfd, real_openat64(dirfd, path, flags, mode));
}
int creat(const char *path, mode_t mode)
{
	if (under(AT_FDCWD, path) && write_fails(__func__, path))
		return -1;
	return opened(AT_FDCWD, path, real_creat(path, mode));
}
int creat64(const char *path, mode_t mode)
{
	if (under(AT_FDCWD, path) && write_fails(__func__, path))
		return -1;
	return opened(AT_FDCWD, path, real_creat64(path, mode));
}

int close(int fd)
{
	track(fd, 0);
	return real_close(fd);
}

/* ---- calls on a descriptor ------------------------------------------- */

#define FD_WRITE(fd) \
	do { if (fd_tracked(fd) && write_fails(__func__, NULL)) return -1; } while (0)

ssize_t write(int fd, const void *buf, size_t n)
{
	FD_WRITE(fd);
	return real_write(fd, buf, n);
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	FD_WRITE(fd);
	return real_pwrite(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	FD_WRITE(fd);
	return real_pwrite64(fd, buf, n, off);
}
ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	FD_WRITE(fd);
	return real_writev(fd, iov, cnt);
}
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	FD_WRITE(fd);
	return real_pwritev(fd, iov, cnt, off);
}
int fsync(int fd)
{
	FD_WRITE(fd);
	return real_fsync(fd);
}
int fdatasync(int fd)
{
	FD_WRITE(fd);
	return real_fdatasync(fd);
}
int ftruncate(int fd, off_t len)
{
	FD_WRITE(fd);
	return real_ftruncate(fd, len);
}
int ftruncate64(int fd, off64_t len)
{
	FD_WRITE(fd);
	return real_ftruncate64(fd, len);
}
int fchmod(int fd, mode_t mode)
{
	FD_WRITE(fd);
	return real_fchmod(fd, mode);
}
ssize_t copy_file_range(int in, off64_t *in_off, int out, off64_t *out_off,
                        size_t n, unsigned flags)
{
	FD_WRITE(out);
	return real_copy_file_range(in, in_off, out, out_off, n, flags);
}

/* The short count is half of what was asked for, at least one byte: a
 * reader must ask again for the rest. */
#define FD_READ(fd, n, call_short)                                    \
	do {                                                          \
		if (fd_tracked(fd)) {                                 \
			int f = read_fault(__func__);                 \
			if (f == 1)                                   \
				return -1;                            \
			if (f == 2 && (n) > 1)                        \
				return call_short;                    \
		}                                                     \
	} while (0)

ssize_t read(int fd, void *buf, size_t n)
{
	FD_READ(fd, n, real_read(fd, buf, n / 2));
	return real_read(fd, buf, n);
}
ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	FD_READ(fd, n, real_pread(fd, buf, n / 2, off));
	return real_pread(fd, buf, n, off);
}
ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	FD_READ(fd, n, real_pread64(fd, buf, n / 2, off));
	return real_pread64(fd, buf, n, off);
}
ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	/* A short readv: only the first buffer. */
	FD_READ(fd, (size_t)cnt, real_readv(fd, iov, 1));
	return real_readv(fd, iov, cnt);
}
ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	FD_READ(fd, (size_t)cnt, real_preadv(fd, iov, 1, off));
	return real_preadv(fd, iov, cnt, off);
}

/* ---- calls on a path --------------------------------------------------- */

#define PATH_WRITE(dirfd, path) \
	do { if (under(dirfd, path) && write_fails(__func__, path)) return -1; } while (0)

int rename(const char *from, const char *to)
{
	PATH_WRITE(AT_FDCWD, to);
	return real_rename(from, to);
}
int renameat(int fd1, const char *from, int fd2, const char *to)
{
	PATH_WRITE(fd2, to);
	return real_renameat(fd1, from, fd2, to);
}
int renameat2(int fd1, const char *from, int fd2, const char *to,
              unsigned flags)
{
	PATH_WRITE(fd2, to);
	return real_renameat2(fd1, from, fd2, to, flags);
}
int mkdir(const char *path, mode_t mode)
{
	PATH_WRITE(AT_FDCWD, path);
	return real_mkdir(path, mode);
}
int mkdirat(int dirfd, const char *path, mode_t mode)
{
	PATH_WRITE(dirfd, path);
	return real_mkdirat(dirfd, path, mode);
}
int link(const char *from, const char *to)
{
	PATH_WRITE(AT_FDCWD, to);
	return real_link(from, to);
}
int linkat(int fd1, const char *from, int fd2, const char *to, int flags)
{
	PATH_WRITE(fd2, to);
	return real_linkat(fd1, from, fd2, to, flags);
}
int symlink(const char *target, const char *path)
{
	PATH_WRITE(AT_FDCWD, path);
	return real_symlink(target, path);
}
int symlinkat(const char *target, int dirfd, const char *path)
{
	PATH_WRITE(dirfd, path);
	return real_symlinkat(target, dirfd, path);
}
