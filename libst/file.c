/*
 * file.c - open one safetensors file (by path or from memory), hand out its
 * tensor table, and give access to tensor data as borrowed views (mmap,
 * made on first use) or by pread into the caller's buffer.
 *
 * Opening reads only the 8-byte length and the N header bytes; format.c
 * validates them. Nothing here allocates from a size read from the file
 * before that size has been checked against the file's real size (or,
 * for a stream, against the header limit: the bytes then come by bounded
 * reads, never by a size the stream gave).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct st_file {
	char *path;
	int fd;                 /* -1 for memory files */
	const unsigned char *mem;  /* memory file (set at open, never changed) */
	/*
	 * The mapping of a path file, NULL until first asked for. Threads that
	 * share the handle may race to make it: each maps, the first to
	 * publish wins (compare-and-swap) and the others unmap their own, so
	 * every reader sees one mapping and no lock is held while mapping.
	 */
	void *map;
	uint64_t size, header_size;
	uint64_t data_base;     /* file offset that tensor offsets count from */
	int format;             /* ST_FORMAT_* */
	int no_data;            /* a stream opened ST_OPEN_HEADER_ONLY */
	struct st__header h;
	struct st__torch *torch; /* a PyTorch file: how to read its tensors */
};

static int read_full(int fd, void *buf, size_t n, uint64_t off)
{
	unsigned char *p = buf;
	while (n > 0) {
		ssize_t k = pread(fd, p, n, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (k == 0) {
			errno = 0; /* the file shrank */
			return -1;
		}
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/*
 * Parse a file of `size` bytes whose first bytes are at head (head_len of
 * them); fetch(ctx, buf, n, off) reads the header.
 */
static int parse(st_file *f, const unsigned char *head, size_t head_len,
                 const char *json_in_memory, unsigned flags,
                 struct st__report *r)
{
	uint64_t n = 0;
	/*
	 * A safetensors file can begin with any bytes that read as a length up
	 * to 10^8 (0x80 0x02 ... is a length of 640): only a prefix that cannot
	 * be one is taken for a zip or a pickle.
	 */
	uint64_t len = 0;
	for (size_t i = head_len < 8 ? head_len : 8; i-- > 0;)
		len = len << 8 | head[i];
	int torch = (flags & ST_OPEN_TORCH) && head_len >= 8 && len > 100000000;
	int kind = 0;
	if (torch && head[0] == 'P' && head[1] == 'K' && head[2] == 3 &&
	    head[3] == 4)
		kind = ST__TORCH_ZIP;
	else if (torch && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
		kind = ST__TORCH_LEGACY;
	else if (torch && head_len >= 262 && !memcmp(head + 257, "ustar", 5))
		kind = ST__TORCH_TAR;
	if (kind) {
		struct st__src src = {f->fd, f->mem, f->size};
		f->format = ST_FORMAT_TORCH;
		f->data_base = 0;
		return st__torch_parse(&f->h, &f->torch, &src, kind, r);
	}
	if (head_len > 64)
		head_len = 64;
	int rc = st__prefix_check(head, head_len, f->size, &n, r);
	if (rc)
		return rc;
	f->header_size = n;
	f->data_base = 8 + n;
	const char *json = json_in_memory;
	char *buf = NULL;
	if (!json) {
		/* n <= 1e8 and 8 + n <= size: safe to allocate and read. */
		buf = malloc(n ? n : 1);
		if (!buf)
			return st__error(r->err, ST_ENOMEM,
			                 "%s: out of memory reading a %llu-byte header",
			                 f->path, (unsigned long long)n);
		if (read_full(f->fd, buf, n, 8) < 0) {
			int e = errno;
			free(buf);
			if (e)
				return st__error_sys(r->err, ST_EIO, e, "%s: read", f->path);
			return st__error(r->err, ST_EIO, "%s: file shrank while reading",
			                 f->path);
		}
		json = buf;
	}
	rc = st__header_parse(&f->h, json, n, f->size - 8 - n, r);
	free(buf);
	return rc;
}

static st_file *new_file(const char *path)
{
	st_file *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->fd = -1;
	if (!(f->path = strdup(path))) {
		free(f);
		return NULL;
	}
	return f;
}

/* Open path's fd and size; ST_EIO with the reason. */
static int open_fd(const char *path, int *fd, uint64_t *size, st_error *err)
{
	int d = open(path, O_RDONLY | O_CLOEXEC);
	if (d < 0)
		return st__error_sys(err, ST_EIO, errno, "%s", path);
	struct stat sb;
	if (fstat(d, &sb) < 0) {
		int e = errno;
		close(d);
		return st__error_sys(err, ST_EIO, e, "%s: stat", path);
	}
	if (S_ISDIR(sb.st_mode)) {
		close(d);
		return st__error(err, ST_EIO, "%s: is a directory", path);
	}
	if (!S_ISREG(sb.st_mode)) {
		close(d);
		return st__error(err, ST_EIO, "%s: not a regular file", path);
	}
	*fd = d;
	*size = (uint64_t)sb.st_size;
	return ST_OK;
}

/* Read path's first bytes and parse; f->fd and f->size are set. */
static int open_regular(st_file *f, unsigned flags, struct st__report *r)
{
	unsigned char head[512] = {0}; /* a tar's magic is at 257 */
	size_t head_len = f->size < sizeof head ? (size_t)f->size : sizeof head;
	if (read_full(f->fd, head, head_len, 0) < 0)
		return st__error_sys(r->err, ST_EIO, errno ? errno : EIO, "%s: read",
		                     f->path);
	return parse(f, head, head_len, NULL, flags, r);
}

static int open_path(st_file **out, const char *path, unsigned flags,
                     struct st__report *r)
{
	st_file *f = new_file(path);
	if (!f)
		return st__error(r->err, ST_ENOMEM, "%s: out of memory", path);
	int rc = open_fd(path, &f->fd, &f->size, r->err);
	if (rc == ST_OK)
		rc = open_regular(f, flags, r);
	if (rc) {
		st_file_close(f);
		return rc;
	}
	*out = f;
	return ST_OK;
}

int st__file_open_report(st_file **out, const char *path, unsigned flags,
                         struct st__report *r)
{
	*out = NULL;
	return open_path(out, path, flags, r);
}

int st_file_open(st_file **out, const char *path, unsigned flags,
                 st_error *err)
{
	struct st__report r = {.path = path, .err = err};
	*out = NULL;
	return open_path(out, path, flags, &r);
}

static int open_mem(st_file **out, const void *buf, size_t len,
                    const char *name, unsigned flags, struct st__report *r)
{
	st_file *f = new_file(name ? name : "<memory>");
	if (!f)
		return st__error(r->err, ST_ENOMEM, "%s: out of memory", r->path);
	f->mem = buf;
	f->size = len;
	const unsigned char *head = buf;
	int rc = parse(f, head, len < 512 ? len : 512,
	               len >= 8 ? (const char *)head + 8 : NULL, flags, r);
	if (rc) {
		st_file_close(f);
		return rc;
	}
	*out = f;
	return ST_OK;
}

int st_file_open_memory(st_file **out, const void *buf, size_t len,
                        const char *name, unsigned flags, st_error *err)
{
	struct st__report r = {.path = name ? name : "<memory>", .err = err};
	*out = NULL;
	return open_mem(out, buf, len, name, flags, &r);
}

/* ---- streams (st_file_open_fd) ---------------------------------------------- */

/* The stream's bytes go by in chunks of this size, whatever its length. */
#define STREAM_CHUNK ((size_t)1 << 20)

/* read(2) until n bytes or the end; *got says how many came. */
static int read_stream(int fd, void *buf, size_t n, size_t *got)
{
	unsigned char *p = buf;
	*got = 0;
	while (*got < n) {
		ssize_t k = read(fd, p + *got, n - *got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

static int write_spool(int spool, const void *buf, size_t n, uint64_t off)
{
	const unsigned char *p = buf;
	while (n > 0) {
		ssize_t k = pwrite(spool, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/*
 * A stream of another format that a path would be read as (GGUF, a
 * PyTorch zip, pickle or tar) or that is compressed, by its first bytes.
 * Anything else (text, an HTML page, an LFS pointer, binary, too few
 * bytes) goes on to the prefix check, which says what is wrong with it in
 * the words it uses for a file.
 */
static int refuse_kind(const unsigned char *head, size_t len,
                       struct st__report *r)
{
	int kind = st_sniff(head, len, UINT64_MAX);
	if (kind != ST_KIND_GGUF && kind != ST_KIND_ZIP &&
	    kind != ST_KIND_PICKLE && kind != ST_KIND_TAR && kind != ST_KIND_GZIP)
		return ST_OK;
	st__report(r, ST_PROBLEM_ERROR,
	           "%s, not safetensors: only a safetensors file can be read "
	           "from a stream (give this one as a file)", st_kind_name(kind));
	return ST_EFORMAT;
}

/*
 * The rest of the stream after the 8 + N header bytes: counted (spool < 0)
 * or copied to spool at offset at. *rest receives its length.
 */
static int drain(int fd, int spool, uint64_t at, uint64_t *rest,
                 const char *name, st_error *err)
{
	unsigned char *buf = malloc(STREAM_CHUNK);
	if (!buf)
		return st__error(err, ST_ENOMEM, "%s: out of memory", name);
	int rc = ST_OK;
	*rest = 0;
	for (;;) {
		size_t k;
		if (read_stream(fd, buf, STREAM_CHUNK, &k) < 0) {
			rc = st__error_sys(err, ST_EIO, errno, "%s: read", name);
			break;
		}
		if (k == 0)
			break;
		if (spool >= 0 && write_spool(spool, buf, k, at + *rest) < 0) {
			rc = st__error_sys(err, ST_EIO, errno ? errno : EIO,
			                   "%s: writing the spool copy", name);
			break;
		}
		*rest += k;
	}
	free(buf);
	return rc;
}

/*
 * The header of a stream: head (up to 512 bytes already read) and the
 * rest of the 8 + N bytes, read into *json (malloc'd) when head does not
 * hold them. *consumed counts the bytes read so far; *eof says the stream
 * ended before 8 + N. The length is checked against the limit (rule 2)
 * first, and the buffer grows with the bytes that come (doubling from
 * 64 KiB), not with the length a stream claims.
 */
static int read_header(int fd, const unsigned char *head, size_t head_len,
                       char **json, uint64_t *consumed, int *eof,
                       const char *name, st_error *err)
{
	uint64_t len = 0;
	*json = NULL;
	*consumed = head_len;
	*eof = head_len < 8;
	if (head_len < 8)
		return ST_OK;
	for (int i = 7; i >= 0; i--)
		len = len << 8 | head[i];
	if (len > 100000000 || 8 + len <= head_len)
		return ST_OK; /* past the limit (the prefix check says so), or in head */
	size_t have = head_len - 8, n = (size_t)len, cap = 0;
	char *buf = NULL;
	while (have < n) {
		if (!buf || have == cap) {
			size_t want = cap ? 2 * cap : (size_t)64 << 10;
			cap = want < n ? want : n;
			char *p = realloc(buf, cap);
			if (!p) {
				free(buf);
				return st__error(err, ST_ENOMEM,
				                 "%s: out of memory reading a %zu-byte header",
				                 name, n);
			}
			if (!buf)
				memcpy(p, head + 8, head_len - 8);
			buf = p;
		}
		size_t got;
		if (read_stream(fd, buf + have, cap - have, &got) < 0) {
			int e = errno;
			free(buf);
			return st__error_sys(err, ST_EIO, e, "%s: read", name);
		}
		have += got;
		*consumed += got;
		if (have < cap)
			break; /* the stream ended */
	}
	*eof = have < n;
	*json = buf;
	return ST_OK;
}

/* Open the stream on fd (not a regular file); see st_file_open_fd. */
static int open_stream(st_file *f, int fd, unsigned flags, int spool,
                       struct st__report *r)
{
	int keep = !(flags & ST_OPEN_HEADER_ONLY);
	if (keep) {
		struct stat sb;
		if (spool < 0 || fstat(spool, &sb) < 0 || !S_ISREG(sb.st_mode) ||
		    sb.st_size != 0)
			return st__error(r->err, ST_EINVAL,
			                 "%s: reading a stream's data needs an empty "
			                 "regular spool file", f->path);
	}
	unsigned char head[ST_SNIFF_BYTES];
	size_t head_len;
	if (read_stream(fd, head, sizeof head, &head_len) < 0)
		return st__error_sys(r->err, ST_EIO, errno, "%s: read", f->path);
	int rc = refuse_kind(head, head_len, r);
	if (rc)
		return rc;
	char *buf = NULL;
	uint64_t consumed;
	int eof;
	rc = read_header(fd, head, head_len, &buf, &consumed, &eof, f->path, r->err);
	if (rc)
		return rc;
	/* Rules 1-3 as for a file; a stream that ended is a file of that size. */
	uint64_t n = 0;
	rc = st__prefix_check(head, head_len < 64 ? head_len : 64,
	                      eof ? consumed : UINT64_MAX, &n, r);
	uint64_t rest = 0;
	if (rc == ST_OK && keep &&
	    (write_spool(spool, head, head_len, 0) < 0 ||
	     (buf && write_spool(spool, buf + (head_len - 8),
	                         consumed - head_len, head_len) < 0)))
		rc = st__error_sys(r->err, ST_EIO, errno ? errno : EIO,
		                   "%s: writing the spool copy", f->path);
	if (rc == ST_OK)
		rc = drain(fd, keep ? spool : -1, consumed, &rest, f->path, r->err);
	if (rc == ST_OK && keep &&
	    (f->fd = fcntl(spool, F_DUPFD_CLOEXEC, 0)) < 0)
		rc = st__error_sys(r->err, ST_EIO, errno, "%s: dup", f->path);
	if (rc == ST_OK) {
		f->size = consumed + rest;
		f->header_size = n;
		f->data_base = 8 + n;
		f->no_data = !keep;
		const char *json = buf ? buf : (const char *)head + 8;
		rc = st__header_parse(&f->h, json, (size_t)n, f->size - 8 - n, r);
	}
	free(buf);
	return rc;
}

static int open_fd_report(st_file **out, int fd, const char *name,
                          unsigned flags, int spool, struct st__report *r)
{
	struct stat sb;
	*out = NULL;
	if (fstat(fd, &sb) < 0)
		return st__error_sys(r->err, ST_EIO, errno, "%s: stat", name);
	if (S_ISDIR(sb.st_mode))
		return st__error(r->err, ST_EIO, "%s: is a directory", name);
	st_file *f = new_file(name);
	if (!f)
		return st__error(r->err, ST_ENOMEM, "%s: out of memory", name);
	int rc;
	if (S_ISREG(sb.st_mode)) {
		/* A file: as st_file_open would read it, on a handle of its own. */
		f->size = (uint64_t)sb.st_size;
		f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		rc = f->fd < 0 ? st__error_sys(r->err, ST_EIO, errno, "%s: dup", name)
		               : open_regular(f, flags & ~ST_OPEN_HEADER_ONLY, r);
	} else {
		rc = open_stream(f, fd, flags, spool, r);
	}
	if (rc) {
		st_file_close(f);
		return rc;
	}
	*out = f;
	return ST_OK;
}

int st_file_open_fd(st_file **out, int fd, const char *name, unsigned flags,
                    int spool_fd, st_error *err)
{
	const char *nm = name ? name : "<stdin>";
	struct st__report r = {.path = nm, .err = err};
	return open_fd_report(out, fd, nm, flags, spool_fd, &r);
}

void st_file_close(st_file *f)
{
	if (!f)
		return;
	if (f->map)
		munmap(f->map, (size_t)f->size);
	if (f->fd >= 0)
		close(f->fd);
	st__header_free(&f->h);
	st__torch_free(f->torch);
	free(f->path);
	free(f);
}

const char *st_file_path(const st_file *f) { return f->path; }
int st_file_format(const st_file *f) { return f->format; }
uint64_t st_file_size(const st_file *f) { return f->size; }
uint64_t st_file_header_size(const st_file *f) { return f->header_size; }
uint64_t st_file_data_offset(const st_file *f) { return f->data_base; }
uint64_t st_file_data_size(const st_file *f)
{
	return f->size - f->data_base;
}
const char *st_file_format_name(const st_file *f)
{
	if (!f->torch)
		return "safetensors";
	switch (st__torch_kind(f->torch)) {
	case ST__TORCH_LEGACY:
		return "pytorch-legacy";
	case ST__TORCH_TAR:
		return "pytorch-tar";
	default:
		return "pytorch-zip";
	}
}

const st_torch_info *st_file_torch_info(const st_file *f)
{
	return f->torch ? st__torch_info(f->torch) : NULL;
}

long st_file_alias_of(const st_file *f, size_t i)
{
	if (!f->torch || i >= f->h.n_tensors)
		return -1;
	return st__torch_alias_of(f->torch, i);
}

size_t st_file_n_tensors(const st_file *f) { return f->h.n_tensors; }

const st_tensor *st_file_tensor(const st_file *f, size_t i)
{
	ST__REQUIRE(i < f->h.n_tensors);
	return &f->h.tensors[i];
}

long st_file_find(const st_file *f, const char *name, size_t len)
{
	return st__header_find(&f->h, name, len);
}

size_t st_file_n_meta(const st_file *f) { return f->h.n_meta; }

const st_meta *st_file_meta(const st_file *f, size_t i)
{
	ST__REQUIRE(i < f->h.n_meta);
	return &f->h.meta[i];
}

const st_meta *st__file_meta_by_key(const st_file *f, size_t i)
{
	ST__REQUIRE(i < f->h.n_meta);
	return &f->h.meta[f->h.meta_by_key ? f->h.meta_by_key[i] : i];
}

const char *st_file_meta_get(const st_file *f, const char *key)
{
	size_t len = strlen(key);
	for (size_t i = 0; i < f->h.n_meta; i++)
		if (f->h.meta[i].key_len == len && !memcmp(f->h.meta[i].key, key, len))
			return f->h.meta[i].value;
	return NULL;
}

size_t st_file_n_warnings(const st_file *f) { return f->h.n_warnings; }

const char *st_file_warning(const st_file *f, size_t i)
{
	ST__REQUIRE(i < f->h.n_warnings);
	return f->h.warnings[i];
}

void *st__map(int fd, size_t n)
{
	void *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
#ifdef MADV_HUGEPAGE
	/* Advice only: a kernel without transparent huge pages says no. */
	if (m != MAP_FAILED)
		(void)madvise(m, n, MADV_HUGEPAGE);
#endif
	return m;
}

/*
 * The file's bytes: the memory buffer, or the mapping of a path file, made
 * once (see struct st_file). Safe from several threads at once.
 */
static int map_file(st_file *f, const unsigned char **base, st_error *err)
{
	if (f->mem) {
		*base = f->mem;
		return ST_OK;
	}
	void *m = __atomic_load_n(&f->map, __ATOMIC_ACQUIRE);
	if (m) {
		*base = m;
		return ST_OK;
	}
	if (f->size > SIZE_MAX)
		return st__error(err, ST_EIO, "%s: too large to map",
		                 f->path);
	m = st__map(f->fd, (size_t)f->size);
	if (m == MAP_FAILED)
		return st__error_sys(err, ST_EIO, errno, "%s: mmap", f->path);
	void *expected = NULL;
	if (!__atomic_compare_exchange_n(&f->map, &expected, m, 0,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Another thread published its mapping first: use that one. */
		munmap(m, (size_t)f->size);
		m = expected;
	}
	*base = m;
	return ST_OK;
}

/* A stream opened for its header: its data went by uncopied. */
static int no_data(const st_file *f, const st_tensor *t, st_error *err)
{
	char q[160];
	return st__error(err, ST_EINVAL,
	                 "%s: tensor '%s': the stream was opened for its header "
	                 "only (ST_OPEN_HEADER_ONLY): its data was not kept",
	                 f->path, st__qname(q, sizeof q, t->name, t->name_len));
}

int st_file_data(st_file *f, size_t i, const void **data, st_error *err)
{
	static const unsigned char empty[1];
	ST__REQUIRE(i < f->h.n_tensors);
	const st_tensor *t = &f->h.tensors[i];
	if (t->n_bytes == 0) {
		*data = empty;
		return ST_OK;
	}
	if (f->no_data)
		return no_data(f, t, err);
	const unsigned char *base = NULL;
	int rc = map_file(f, &base, err);
	if (rc)
		return rc;
	if (f->torch && !st__torch_plain(f->torch, i)) {
		struct st__report r = {.path = f->path, .err = err};
		return st__torch_data(f->torch, i, base, t->n_bytes, data, t->name,
		                      &r);
	}
	if (f->torch) {
		struct st__report r = {.path = f->path, .err = err};
		if ((rc = st__torch_seen(f->torch, i, base, 0, NULL, t->n_bytes,
		                         t->name, &r)))
			return rc;
	}
	*data = base + f->data_base + t->begin;
	return ST_OK;
}

int st_file_read(st_file *f, size_t i, uint64_t off, void *buf, size_t n,
                 st_error *err)
{
	ST__REQUIRE(i < f->h.n_tensors);
	const st_tensor *t = &f->h.tensors[i];
	if (off > t->n_bytes || n > t->n_bytes - off)
		return st__error(err, ST_EINVAL,
		                 "%s: tensor '%s': read of %zu bytes at %llu is "
		                 "outside its %llu bytes", f->path, t->name, n,
		                 (unsigned long long)off,
		                 (unsigned long long)t->n_bytes);
	if (f->no_data && n > 0)
		return no_data(f, t, err);
	if (f->torch && !st__torch_plain(f->torch, i)) {
		const unsigned char *base = NULL;
		int rc = map_file(f, &base, err);
		if (rc)
			return rc;
		struct st__report r = {.path = f->path, .err = err};
		return st__torch_read(f->torch, i, base, off, buf, n, t->name, &r);
	}
	uint64_t at = f->data_base + t->begin + off;
	if (f->mem) {
		memcpy(buf, f->mem + at, n);
	} else if (read_full(f->fd, buf, n, at) < 0) {
		if (errno)
			return st__error_sys(err, ST_EIO, errno, "%s: tensor '%s': read",
			                     f->path, t->name);
		return st__error(err, ST_EIO,
		                 "%s: tensor '%s': the file shrank while reading",
		                 f->path, t->name);
	}
	if (f->torch) {
		/* A zip storage's CRC-32, as its bytes go by (torch.c). */
		struct st__report r = {.path = f->path, .err = err};
		return st__torch_seen(f->torch, i, NULL, off, buf, n, t->name, &r);
	}
	return ST_OK;
}

/* ---- full checks ------------------------------------------------------------ */

int st_check_file(const char *path, st_problem_fn fn, void *ctx, st_error *err)
{
	struct st__report r = {.path = path, .fn = fn, .ctx = ctx, .err = err};
	st_file *f = NULL;
	int fd = -1;
	uint64_t size;
	/* Unreadable is not a rule violation: ST_EIO, no problems reported. */
	int rc = open_fd(path, &fd, &size, err);
	if (rc)
		return rc;
	close(fd);
	rc = open_path(&f, path, 0, &r);
	st_file_close(f);
	if (rc == ST_EIO || rc == ST_ENOMEM)
		return rc;
	return r.n_errors;
}

int st_check_fd(int fd, const char *name, st_problem_fn fn, void *ctx,
                st_file **out, st_error *err)
{
	const char *nm = name ? name : "<stdin>";
	struct st__report r = {.path = nm, .fn = fn, .ctx = ctx, .err = err};
	st_file *f = NULL;
	if (out)
		*out = NULL;
	/* A PyTorch file is checked too, as st_check_path checks one. */
	int rc = open_fd_report(&f, fd, nm, ST_OPEN_HEADER_ONLY | ST_OPEN_TORCH, -1, &r);
	if (rc == ST_EIO || rc == ST_ENOMEM) {
		st_file_close(f);
		return rc;
	}
	/* Only a file that broke no rule is what an open would give. */
	if (out && r.n_errors == 0)
		*out = f;
	else
		st_file_close(f);
	return r.n_errors;
}

int st_check_memory(const void *buf, size_t len, const char *name,
                    st_problem_fn fn, void *ctx)
{
	const char *nm = name ? name : "<memory>";
	struct st__report r = {.path = nm, .fn = fn, .ctx = ctx};
	st_file *f = NULL;
	int rc = open_mem(&f, buf, len, nm, 0, &r);
	st_file_close(f);
	if (rc == ST_ENOMEM)
		return rc;
	return r.n_errors;
}
