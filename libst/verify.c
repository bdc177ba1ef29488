/*
 * verify.c - offline integrity of Hugging Face caches, snapshots and plain
 * folders (st/verify.h): plan what to read, read every file once on a few
 * threads (hash, safetensors header check and per-tensor hashes in the same
 * pass), and return the problems as a list. It never prints and never
 * writes.
 *
 * It lives in libst, not in the tools, because it is about files and any
 * program that loads models from a cache can use it; stinfo --verify and
 * --hash are thin printers over it.
 *
 * The cache layout is huggingface_hub's (file_download.py, _tree_cache.py):
 *   <repo>/blobs/<sha256 | git sha1>      the content, named by its hash
 *   <repo>/blobs/<etag>[.<hex>].incomplete  a download in progress
 *   <repo>/snapshots/<commit>/<path>      relative link ../../blobs/<hash>
 *                                          (one more ../ per subfolder)
 *   <repo>/refs/<branch>                  a commit hash, no newline
 *   <repo>/trees/<commit>.json            {"format_version": 1, "files":
 *                                          {path: {size, blob_id, lfs_*}}}
 * where <repo> is models--ORG--NAME (or datasets--, spaces--). Without
 * links (Windows), the blob is moved to the snapshot path instead.
 *
 * Links are resolved here, component by component, with lstat and
 * readlink: an absolute link, or one whose ".." climbs above the folder
 * being verified, is reported and never followed; the resolved path is
 * then opened with O_NOFOLLOW | O_NONBLOCK and checked to be a regular
 * file, so neither a link swapped in nor a FIFO can be opened by mistake.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_BUF (1u << 20)      /* per thread */
#define MAX_LINKS 40             /* as the kernel's ELOOP limit */
#define MAX_DEPTH 64             /* folder nesting walked */
#define MAX_HEADER 100000000u    /* doc/format.md rule 2: N <= 10^8 */
#define MAX_SMALL_FILE (1u << 26) /* refs, listings, sidecars: 64 MiB */

enum { V_NONE = 0, V_SAFETENSORS, V_TORCH, V_GGUF };

/* ---- results ---------------------------------------------------------------- */

struct problem {
	int kind;
	char *path, *message;
};

struct fhash {
	char *path;
	uint64_t size;
	char sha256[65];
	st_verify_tensor *tensors;
	size_t n_tensors;
	char *names; /* tensor names, back to back */
};

struct st_verify {
	int layout, no_symlinks, sidecar, oom;
	struct problem *p;
	size_t n_p, cap_p;
	struct fhash *f;
	size_t n_f;
	st_verify_problem *view;      /* built at the end */
	st_verify_file *fview;
	uint64_t n_files, bytes, unverified;
	size_t n_repos;
	pthread_mutex_t lock;         /* problems, counters, progress */
	uint64_t done, total;
	const st_verify_options *opt;
};

static char *vfmt(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

static char *fmt(const char *f, ...) ST_PRINTF(1, 2);
static char *fmt(const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *s = vfmt(f, ap);
	va_end(ap);
	return s;
}

/*
 * A copy of s with control bytes written \xNN: names come from the disk
 * and listings, and a problem must stay one line.
 */
static char *one_line(const char *s)
{
	size_t n = 0;
	for (const char *c = s; *c; c++)
		n += (unsigned char)*c < 0x20 || *c == 0x7f ? 4 : 1;
	char *out = malloc(n + 1), *o = out;
	for (const char *c = s; out && *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			o += sprintf(o, "\\x%02x", (unsigned char)*c);
		else
			*o++ = *c;
	}
	if (out)
		*o = '\0';
	return out;
}

/* Add a problem about path (message is "path: ..."). Caller holds no lock. */
static void add_problem(st_verify *v, int kind, const char *path,
                        const char *f, ...) ST_PRINTF(4, 5);
static void add_problem(st_verify *v, int kind, const char *path,
                        const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *what = vfmt(f, ap);
	va_end(ap);
	char *p = one_line(path), *w = what ? one_line(what) : NULL;
	char *msg = p && w ? fmt("%s: %s", p, w) : NULL;
	free(what);
	free(w);
	pthread_mutex_lock(&v->lock);
	if (v->n_p == v->cap_p) {
		size_t cap = v->cap_p ? 2 * v->cap_p : 16;
		struct problem *np = realloc(v->p, cap * sizeof *np);
		if (np) {
			v->p = np;
			v->cap_p = cap;
		}
	}
	if (msg && p && v->n_p < v->cap_p) {
		v->p[v->n_p++] = (struct problem){kind, p, msg};
		msg = p = NULL;
	} else {
		v->oom = 1;
	}
	pthread_mutex_unlock(&v->lock);
	free(msg);
	free(p);
}

/* ---- paths ------------------------------------------------------------------ */

/* a + "/" + b, or the one that is not empty. */
static char *join(const char *a, const char *b)
{
	if (!*a)
		return strdup(b);
	if (!*b)
		return strdup(a);
	size_t n = strlen(a);
	return fmt("%s%s%s", a, a[n - 1] == '/' ? "" : "/", b);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* How a weight file is checked, from its name. */
static int validator_of(const char *name)
{
	if (ends_with(name, ".safetensors"))
		return V_SAFETENSORS;
	/*
	 * PyTorch weights: pytorch_model*.bin, adapter_model.bin and the like.
	 * Other pickles in a repository (training_args.bin, optimizer.pt,
	 * rng_state.pth) hold no state dict and are only hashed.
	 */
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	if (ends_with(base, ".bin") && strstr(base, "model"))
		return V_TORCH;
	if (ends_with(name, ".gguf"))
		return V_GGUF;
	return V_NONE;
}

enum { RES_OK = 0, RES_ABSOLUTE, RES_ESCAPES, RES_DANGLING, RES_LOOP, RES_IO };

/*
 * Resolve rel (relative to root, which is not itself resolved) to a path
 * relative to root with no links in it, following links only while they
 * stay below root. *out is malloc'd on RES_OK; *link (malloc'd, if not NULL)
 * receives the target text of the link that failed.
 */
static int resolve(const char *root, const char *rel, char **out, char **link)
{
	char *rest = strdup(rel), *cur = calloc(1, strlen(rel) + 2);
	size_t cur_len = 0, cur_cap = strlen(rel) + 2;
	int links = 0, rc = RES_OK;
	*out = NULL;
	if (link)
		*link = NULL;
	if (!rest || !cur) {
		rc = RES_IO;
		goto done;
	}
	while (*rest) {
		/* Take the next component of rest. */
		char *slash = strchr(rest, '/');
		size_t clen = slash ? (size_t)(slash - rest) : strlen(rest);
		char *comp = strndup(rest, clen);
		memmove(rest, rest + clen + (slash ? 1 : 0),
		        strlen(rest + clen + (slash ? 1 : 0)) + 1);
		if (!comp) {
			rc = RES_IO;
			goto done;
		}
		if (!*comp || !strcmp(comp, ".")) {
			free(comp);
			continue;
		}
		if (!strcmp(comp, "..")) {
			free(comp);
			if (cur_len == 0) {
				rc = RES_ESCAPES;
				goto done;
			}
			char *s = strrchr(cur, '/');
			cur_len = s ? (size_t)(s - cur) : 0;
			cur[cur_len] = '\0';
			continue;
		}
		size_t need = cur_len + 1 + clen + 1;
		if (need > cur_cap) {
			char *nc = realloc(cur, need * 2);
			if (!nc) {
				free(comp);
				rc = RES_IO;
				goto done;
			}
			cur = nc;
			cur_cap = need * 2;
		}
		size_t before = cur_len;
		if (cur_len)
			cur[cur_len++] = '/';
		memcpy(cur + cur_len, comp, clen + 1);
		cur_len += clen;
		free(comp);
		char *full = join(root, cur);
		struct stat sb;
		if (!full) {
			rc = RES_IO;
			goto done;
		}
		if (lstat(full, &sb) < 0) {
			rc = errno == ENOENT || errno == ENOTDIR ? RES_DANGLING : RES_IO;
			free(full);
			goto done;
		}
		if (S_ISLNK(sb.st_mode)) {
			char target[4096];
			ssize_t k = readlink(full, target, sizeof target - 1);
			free(full);
			if (k < 0) {
				rc = RES_IO;
				goto done;
			}
			target[k] = '\0';
			if (++links > MAX_LINKS) {
				rc = RES_LOOP;
				goto done;
			}
			if (target[0] == '/') {
				rc = RES_ABSOLUTE;
				if (link)
					*link = strdup(target);
				goto done;
			}
			/* The link's target replaces it, relative to its folder. */
			cur_len = before;
			cur[cur_len] = '\0';
			char *nr = *rest ? fmt("%s/%s", target, rest) : strdup(target);
			if (!nr) {
				rc = RES_IO;
				goto done;
			}
			free(rest);
			rest = nr;
			continue;
		}
		free(full);
		if (*rest && !S_ISDIR(sb.st_mode)) {
			rc = RES_DANGLING;
			goto done;
		}
	}
	*out = cur;
	cur = NULL;
done:
	free(rest);
	free(cur);
	return rc;
}

/* Sorted names in a folder (without . and ..); NULL-terminated. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **list_dir(const char *path, size_t *n_out)
{
	*n_out = 0;
	DIR *d = opendir(path);
	if (!d)
		return NULL;
	size_t n = 0, cap = 16;
	char **names = malloc(cap * sizeof *names);
	struct dirent *de;
	while (names && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n + 1 >= cap) {
			char **nn = realloc(names, 2 * cap * sizeof *nn);
			if (!nn)
				break;
			names = nn;
			cap *= 2;
		}
		if (!(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	closedir(d);
	if (!names)
		return NULL;
	names[n] = NULL;
	if (n)
		qsort(names, n, sizeof *names, cmp_str);
	*n_out = n;
	return names;
}

static void free_names(char **names)
{
	for (size_t i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

/* Read a small file whole (NUL-terminated); NULL with errno on failure. */
static char *read_small(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > MAX_SMALL_FILE) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	size_t n = (size_t)sb.st_size, got = 0;
	char *buf = malloc(n + 1);
	while (buf && got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[got] = '\0';
	*len = got;
	return buf;
}

/* ---- jobs: one file to read ------------------------------------------------- */

struct job {
	char *disk;      /* root + link-free relative path: what is opened */
	char *label;     /* what hash problems name */
	char *name;      /* what format problems name (a snapshot path) */
	int algo;        /* ST_HASH_*, or -1: no hash to compare against */
	unsigned char expected[32];
	char source[80];      /* who says so: "its name", "SHA256SUMS"... */
	char size_source[80]; /* who gives expected_size: "trees/<c>.json" */
	uint64_t expected_size; /* UINT64_MAX: unknown */
	int validate;    /* V_* */
	int hash_mode;   /* ST_VERIFY_HASH: keep a struct fhash */
	char *hash_path; /* its path in the hash list */
	uint64_t size;   /* at planning time, for order and progress */
};

struct plan {
	struct job *j;
	size_t n, cap;
	int oom;
};

static struct job *plan_add(struct plan *pl)
{
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? 2 * pl->cap : 64;
		struct job *nj = realloc(pl->j, cap * sizeof *nj);
		if (!nj) {
			pl->oom = 1;
			return NULL;
		}
		pl->j = nj;
		pl->cap = cap;
	}
	struct job *j = &pl->j[pl->n++];
	memset(j, 0, sizeof *j);
	j->algo = -1;
	j->expected_size = UINT64_MAX;
	return j;
}

static void job_free(struct job *j)
{
	free(j->disk);
	free(j->label);
	free(j->name);
	free(j->hash_path);
}

/* ---- the reading threads ----------------------------------------------------- */

/*
 * Where format problems go: under name, the message's own leading
 * "prefix: " (the path the check was given) replaced by it.
 */
struct collect {
	st_verify *v;
	const char *name, *prefix;
};

static void on_format_problem(void *ctx, int severity, const char *message)
{
	struct collect *c = ctx;
	if (severity != ST_PROBLEM_ERROR)
		return;
	size_t n = strlen(c->prefix);
	const char *what = !strncmp(message, c->prefix, n) && message[n] == ':' &&
	                   message[n + 1] == ' ' ? message + n + 2 : message;
	add_problem(c->v, ST_VERIFY_INVALID, c->name, "%s", what);
}

static void ignore_problem(void *ctx, int severity, const char *message)
{
	(void)ctx;
	(void)severity;
	(void)message;
}

/* Per-tensor hashing state for one file. */
struct tensors {
	struct st__header h;
	int parsed;
	uint64_t base;     /* file offset of the data buffer */
	size_t cur;        /* next tensor to finish */
	st_hash *hash;
	st_verify_tensor *out;
};

struct reader {
	st_verify *v;
	struct plan *pl;
	size_t *next;
	unsigned char *buf;
};

/* Feed bytes [off, off + n) of the file to the per-tensor hashes. */
static void tensors_feed(struct tensors *t, const unsigned char *p, size_t n,
                         uint64_t off)
{
	while (t->cur < t->h.n_tensors) {
		const st_tensor *x = &t->h.tensors[t->cur];
		uint64_t b = t->base + x->begin, e = t->base + x->end;
		uint64_t lo = off > b ? off : b, hi = off + n < e ? off + n : e;
		if (lo < hi)
			st_hash_update(t->hash, p + (lo - off), (size_t)(hi - lo), NULL);
		if (off + n < e)
			return; /* this tensor goes on in the next piece */
		unsigned char d[32];
		st_hash_final(t->hash, d, NULL);
		st_hash_hex(d, 32, t->out[t->cur].sha256);
		st_hash_reset(t->hash, NULL);
		t->cur++;
	}
}

/*
 * Read one file: hash it, keep its header, hash its tensors. Returns
 * ST_OK, or a problem already reported.
 */
static void run_job(struct reader *rd, struct job *j)
{
	st_verify *v = rd->v;
	int fd = open(j->disk, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0) {
		add_problem(v, ST_VERIFY_UNREADABLE, j->label, "cannot read: %s",
		            strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!S_ISREG(sb.st_mode)) {
		add_problem(v, ST_VERIFY_NOT_REGULAR, j->label,
		            "not a regular file; skipped, not read");
		close(fd);
		return;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	uint64_t size = (uint64_t)sb.st_size;
	int algo = j->algo >= 0 ? j->algo : j->hash_mode ? ST_HASH_SHA256 : -1;
	st_hash *h = NULL;
	if (algo >= 0 && st_hash_new(&h, (st_hash_algo)algo, NULL) != ST_OK) {
		v->oom = 1;
		close(fd);
		return;
	}
	if (algo == ST_HASH_GIT_SHA1)
		st_hash_git_begin(h, size, NULL);

	/*
	 * The safetensors header, kept from the bytes the hash reads. In hash
	 * mode any file may be one (blobs have no extension): a header that
	 * does not parse just means no per-tensor hashes, not a problem.
	 */
	int want_tensors = j->hash_mode && (v->opt->flags & ST_VERIFY_TENSORS);
	int want_header = j->validate == V_SAFETENSORS || want_tensors;
	unsigned char head[64];
	size_t head_len = 0;
	char *hdr = NULL;
	uint64_t hdr_n = 0, hdr_got = 0;
	int hdr_state = want_header ? 0 : -1; /* 0 prefix, 1 header, 2 done */
	struct tensors tz;
	memset(&tz, 0, sizeof tz);
	struct collect col = {v, j->name, j->name};
	struct st__report rep = {.path = j->name, .fn = on_format_problem,
	                         .ctx = &col};
	if (j->hash_mode)
		rep = (struct st__report){.path = j->name, .fn = ignore_problem};

	uint64_t off = 0;
	int read_errno = 0;
	for (;;) {
		ssize_t k = read(fd, rd->buf, READ_BUF);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			read_errno = errno;
			break;
		}
		if (k == 0)
			break;
		const unsigned char *p = rd->buf;
		size_t n = (size_t)k;
		if (h)
			st_hash_update(h, p, n, NULL);
		/* Header capture: the first 64 bytes, then 8 + N. */
		if (hdr_state == 0) {
			size_t take = n < sizeof head - head_len ? n : sizeof head - head_len;
			memcpy(head + head_len, p + 0, take);
			head_len += take;
			if (head_len == sizeof head || head_len == size) {
				if (st__prefix_check(head, head_len, size, &hdr_n, &rep)) {
					hdr_state = -1;
				} else if (!(hdr = malloc(hdr_n ? hdr_n : 1))) {
					v->oom = 1;
					hdr_state = -1;
				} else {
					hdr_state = 1;
				}
			}
		}
		if (hdr_state == 1) {
			/* Bytes [8, 8 + N) of the file from this piece. */
			uint64_t lo = off > 8 ? off : 8, hi = off + n;
			if (hi > 8 + hdr_n)
				hi = 8 + hdr_n;
			if (lo < hi) {
				memcpy(hdr + (lo - 8), p + (lo - off), (size_t)(hi - lo));
				hdr_got += hi - lo;
			}
			if (hdr_got == hdr_n) {
				hdr_state = 2;
				/* Check now, so the tensors can be hashed from here on. */
				int rc = st__header_parse(&tz.h, hdr, (size_t)hdr_n,
				                          size - 8 - hdr_n, &rep);
				tz.parsed = rc == ST_OK && rep.n_errors == 0;
				if (want_tensors && tz.parsed && tz.h.n_tensors &&
				    (tz.out = calloc(tz.h.n_tensors, sizeof *tz.out)) &&
				    st_hash_new(&tz.hash, ST_HASH_SHA256, NULL) == ST_OK)
					tz.base = 8 + hdr_n;
				else if (want_tensors)
					tz.parsed = 0;
			}
		}
		if (tz.hash)
			tensors_feed(&tz, p, n, off);
		off += n;
		pthread_mutex_lock(&v->lock);
		v->done += n;
		if (v->opt->progress)
			v->opt->progress(v->opt->progress_ctx, v->done, v->total);
		pthread_mutex_unlock(&v->lock);
	}
	close(fd);
	pthread_mutex_lock(&v->lock);
	v->n_files++;
	v->bytes += h ? off : 0;
	if (!h)
		v->unverified++;
	/* The planned size counted in the total: keep progress honest. */
	if (off < j->size)
		v->done += j->size - off;
	pthread_mutex_unlock(&v->lock);

	unsigned char d[32];
	char hex[65], want[65];
	if (read_errno) {
		add_problem(v, ST_VERIFY_UNREADABLE, j->label, "read failed after "
		            "%llu bytes: %s", (unsigned long long)off,
		            strerror(read_errno));
	} else if (off != size) {
		add_problem(v, ST_VERIFY_UNREADABLE, j->label, "changed size while "
		            "it was read (%llu bytes, then %llu)",
		            (unsigned long long)size, (unsigned long long)off);
	} else if (h && st_hash_final(h, d, NULL) == ST_OK) {
		size_t dn = st_hash_size((st_hash_algo)algo);
		st_hash_hex(d, dn, hex);
		if (j->algo >= 0 && memcmp(d, j->expected, dn) != 0) {
			st_hash_hex(j->expected, dn, want);
			const char *an = algo == ST_HASH_SHA256 ? "sha256" : "git blob id";
			if (j->expected_size != UINT64_MAX && size < j->expected_size)
				add_problem(v, ST_VERIFY_TRUNCATED, j->label,
				            "truncated: holds %llu of its %llu bytes (%s); "
				            "%s is %s, %s says %s", (unsigned long long)size,
				            (unsigned long long)j->expected_size,
				            j->size_source, an, hex, j->source, want);
			else
				add_problem(v, ST_VERIFY_CORRUPT, j->label,
				            "corrupt: %s of its %llu bytes is %s, %s says %s",
				            an, (unsigned long long)size, hex, j->source, want);
		} else if (j->algo >= 0 && j->expected_size != UINT64_MAX &&
		           size != j->expected_size) {
			add_problem(v, ST_VERIFY_CORRUPT, j->label, "holds %llu bytes, "
			            "%s says %llu", (unsigned long long)size,
			            j->size_source, (unsigned long long)j->expected_size);
		}
		if (j->hash_mode) {
			struct fhash fh = {0};
			fh.path = strdup(j->hash_path);
			fh.size = size;
			memcpy(fh.sha256, hex, 65);
			if (tz.out && tz.cur == tz.h.n_tensors) {
				/* Names are the header's: copy them out of it. */
				size_t total = 0;
				for (size_t i = 0; i < tz.h.n_tensors; i++)
					total += tz.h.tensors[i].name_len + 1;
				if ((fh.names = malloc(total ? total : 1))) {
					char *q = fh.names;
					for (size_t i = 0; i < tz.h.n_tensors; i++) {
						const st_tensor *x = &tz.h.tensors[i];
						memcpy(q, x->name, x->name_len + 1);
						tz.out[i].name = q;
						tz.out[i].name_len = x->name_len;
						q += x->name_len + 1;
					}
					fh.tensors = tz.out;
					fh.n_tensors = tz.h.n_tensors;
					tz.out = NULL;
				}
			}
			pthread_mutex_lock(&v->lock);
			struct fhash *nf = realloc(v->f, (v->n_f + 1) * sizeof *nf);
			if (nf && fh.path) {
				v->f = nf;
				v->f[v->n_f++] = fh;
			} else {
				if (nf)
					v->f = nf;
				v->oom = 1;
				free(fh.path);
				free(fh.names);
				free(fh.tensors);
			}
			pthread_mutex_unlock(&v->lock);
		}
	}
	st_hash_free(h);
	st_hash_free(tz.hash);
	free(tz.out);
	if (tz.h.tensors || tz.h.arena)
		st__header_free(&tz.h);
	free(hdr);

	/*
	 * A PyTorch file: its zip directory and pickle; a GGUF file: its
	 * header. A few kB more, from the page cache the hash just filled.
	 */
	if ((j->validate == V_TORCH || j->validate == V_GGUF) && !read_errno &&
	    off == size) {
		struct collect c = {v, j->name, j->disk};
		st_error err;
		memset(&err, 0, sizeof err);
		if (j->validate == V_GGUF) {
			if (st_gguf_check_file(j->disk, on_format_problem, &c, &err) < 0)
				add_problem(v, ST_VERIFY_UNREADABLE, j->name, "cannot "
				            "check: %s", err.message);
		} else {
			st_file *f = NULL;
			if (st_file_open(&f, j->disk, ST_OPEN_TORCH, &err) != ST_OK)
				on_format_problem(&c, ST_PROBLEM_ERROR, err.message);
			st_file_close(f);
		}
	}
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	for (;;) {
		pthread_mutex_lock(&rd->v->lock);
		size_t i = (*rd->next)++;
		pthread_mutex_unlock(&rd->v->lock);
		if (i >= rd->pl->n)
			break;
		run_job(rd, &rd->pl->j[i]);
	}
	return NULL;
}

static int cmp_job_size(const void *a, const void *b)
{
	const struct job *x = a, *y = b;
	/* Largest first, so the threads finish together; then by path. */
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	return strcmp(x->disk, y->disk);
}

static void run_plan(st_verify *v, struct plan *pl)
{
	if (pl->n)
		qsort(pl->j, pl->n, sizeof *pl->j, cmp_job_size);
	for (size_t i = 0; i < pl->n; i++)
		v->total += pl->j[i].size;
	int threads = v->opt->threads > 0 ? v->opt->threads : 1;
	if ((size_t)threads > pl->n)
		threads = pl->n ? (int)pl->n : 1;
	struct reader *rd = calloc((size_t)threads, sizeof *rd);
	pthread_t *tid = calloc((size_t)threads, sizeof *tid);
	size_t next = 0;
	int started = 0;
	for (int t = 0; rd && tid && t < threads; t++) {
		rd[t] = (struct reader){v, pl, &next, malloc(READ_BUF)};
		if (!rd[t].buf)
			break;
		/* The first reader runs on this thread. */
		if (t > 0 && pthread_create(&tid[t], NULL, reader_main, &rd[t]) != 0) {
			free(rd[t].buf);
			rd[t].buf = NULL;
			break;
		}
		started = t + 1;
	}
	if (started == 0) {
		v->oom = 1;
	} else {
		reader_main(&rd[0]);
		for (int t = 1; t < started; t++)
			pthread_join(tid[t], NULL);
	}
	for (int t = 0; rd && t < started; t++)
		free(rd[t].buf);
	free(rd);
	free(tid);
}

/* ---- repositories ------------------------------------------------------------ */

/* What one snapshot entry turned out to be. */
struct entry {
	char *rel;       /* path in the snapshot ("model.safetensors") */
	char *blob;      /* the blob name it links to, or NULL */
	char *target;    /* a link inside the cache, but not to a blob */
	int regular;     /* a regular file (no link) */
	int bad;         /* a link problem was reported */
};

struct snapshot {
	char *commit;
	struct entry *e;
	size_t n, cap;
	int bad_links;
	struct st__tree tree;
	int has_tree;
};

struct repo {
	const char *dir;     /* the repository folder: PATH-based, as shown */
	st_verify *v;
	struct plan *pl;
	struct snapshot *s;
	size_t n_s;
	size_t n_links, n_regular;
};

static struct entry *snap_add(struct snapshot *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct entry *ne = realloc(s->e, cap * sizeof *ne);
		if (!ne)
			return NULL;
		s->e = ne;
		s->cap = cap;
	}
	struct entry *e = &s->e[s->n++];
	memset(e, 0, sizeof *e);
	return e;
}

/*
 * Report a link problem for full (a path below root). The target quoted
 * is the link's own text, what a user sees with ls -l.
 */
static void link_problem(st_verify *v, const char *full, int rc,
                         const char *abs_target, const char *boundary)
{
	char target[4096];
	ssize_t k = readlink(full, target, sizeof target - 1);
	target[k > 0 ? k : 0] = '\0';
	if (rc == RES_ABSOLUTE)
		add_problem(v, ST_VERIFY_ABSOLUTE_LINK, full,
		            "absolute symlink to '%s' (%s links by relative paths); "
		            "not followed", abs_target ? abs_target : target,
		            boundary);
	else if (rc == RES_ESCAPES)
		add_problem(v, ST_VERIFY_ESCAPING_LINK, full,
		            "symlink to '%s' leads out of %s; not followed", target,
		            boundary);
	else if (rc == RES_DANGLING)
		add_problem(v, ST_VERIFY_DANGLING_LINK, full,
		            "dangling symlink: '%s' does not exist", target);
	else if (rc == RES_LOOP)
		add_problem(v, ST_VERIFY_DANGLING_LINK, full,
		            "symlink '%s' never reaches a file (a loop)", target);
	else
		add_problem(v, ST_VERIFY_UNREADABLE, full,
		            "cannot resolve symlink '%s': %s", target, strerror(errno));
}

/*
 * Resolve the link at rel (below root) to a regular file; report what
 * goes wrong. Returns the link-free relative path (malloc'd) or NULL.
 */
static char *follow_link(st_verify *v, const char *root, const char *rel,
                         const char *boundary)
{
	char *to = NULL, *abs = NULL, *full = join(root, rel);
	int rc = resolve(root, rel, &to, &abs);
	if (!full) {
		v->oom = 1;
	} else if (rc != RES_OK) {
		link_problem(v, full, rc, abs, boundary);
	} else {
		char *tfull = join(root, to);
		struct stat sb;
		if (tfull && lstat(tfull, &sb) == 0 && !S_ISREG(sb.st_mode)) {
			add_problem(v, ST_VERIFY_NOT_REGULAR, full,
			            "links to something that is not a regular file; "
			            "not read");
			free(to);
			to = NULL;
		}
		free(tfull);
	}
	if (rc != RES_OK) {
		free(to);
		to = NULL;
	}
	free(abs);
	free(full);
	return to;
}

/* Walk snapshots/<commit>/<sub>, recording every entry. */
static void walk_snapshot(struct repo *r, struct snapshot *s, const char *sub,
                          int depth)
{
	char *base = fmt("snapshots/%s%s%s", s->commit, *sub ? "/" : "", sub);
	char *dir = base ? join(r->dir, base) : NULL;
	size_t n;
	char **names = dir ? list_dir(dir, &n) : NULL;
	for (size_t i = 0; names && i < n; i++) {
		char *rel = join(sub, names[i]);
		char *repo_rel = join(base, names[i]);
		char *full = repo_rel ? join(r->dir, repo_rel) : NULL;
		struct stat sb;
		struct entry *e = NULL;
		if (!rel || !full) {
			r->v->oom = 1;
		} else if (lstat(full, &sb) < 0) {
			add_problem(r->v, ST_VERIFY_UNREADABLE, full, "cannot read: %s",
			            strerror(errno));
		} else if (S_ISDIR(sb.st_mode)) {
			if (depth < MAX_DEPTH)
				walk_snapshot(r, s, rel, depth + 1);
		} else if (!S_ISLNK(sb.st_mode) && !S_ISREG(sb.st_mode)) {
			add_problem(r->v, ST_VERIFY_NOT_REGULAR, full,
			            "not a regular file (a FIFO, device or socket); "
			            "skipped, not read");
		} else if (!(e = snap_add(s))) {
			r->v->oom = 1;
		} else if (S_ISREG(sb.st_mode)) {
			e->rel = rel;
			rel = NULL;
			e->regular = 1;
			r->n_regular++;
		} else {
			e->rel = rel;
			rel = NULL;
			r->n_links++;
			char *to = follow_link(r->v, r->dir, repo_rel, "the cache");
			if (!to)
				e->bad = 1;
			else if (!strncmp(to, "blobs/", 6) && !strchr(to + 6, '/'))
				e->blob = strdup(to + 6);
			else
				e->target = strdup(to);
			s->bad_links += e->bad;
			free(to);
		}
		free(rel);
		free(repo_rel);
		free(full);
	}
	free_names(names);
	free(dir);
	free(base);
}

/* Load trees/<commit>.json when there is one. */
static void load_tree(struct repo *r, struct snapshot *s)
{
	char *rel = fmt("trees/%s.json", s->commit);
	char *full = rel ? join(r->dir, rel) : NULL;
	struct stat sb;
	if (full && lstat(full, &sb) == 0) {
		size_t len = 0;
		char *text = S_ISREG(sb.st_mode) ? read_small(full, &len) : NULL;
		char why[256];
		if (!text) {
			add_problem(r->v, ST_VERIFY_BAD_LISTING, full,
			            "cannot read the listing: %s",
			            S_ISREG(sb.st_mode) ? strerror(errno)
			                                : "not a regular file");
		} else {
			int rc = st__tree_parse(&s->tree, text, len, why, sizeof why);
			if (rc == ST_OK)
				s->has_tree = 1;
			else if (rc != ST_EUNSUPPORTED) /* a newer layout: ignored */
				add_problem(r->v, ST_VERIFY_BAD_LISTING, full,
				            "listing not used: %s", why);
		}
		free(text);
	}
	free(rel);
	free(full);
}

/* The listing's entry for rel, or NULL. */
static const struct st__tree_entry *tree_find(const struct snapshot *s,
                                              const char *rel)
{
	for (size_t i = 0; s->has_tree && i < s->tree.n; i++)
		if (!strcmp(s->tree.e[i].path, rel))
			return &s->tree.e[i];
	return NULL;
}

/* What a listing expects of a file: algorithm, digest, size. */
static void expect_from_tree(struct job *j, const struct st__tree_entry *te)
{
	if (te->has_lfs) {
		j->algo = ST_HASH_SHA256;
		st_hash_unhex(te->lfs_sha256, 32, j->expected);
		j->expected_size = te->lfs_size;
	} else {
		j->algo = ST_HASH_GIT_SHA1;
		st_hash_unhex(te->blob_id, 20, j->expected);
		j->expected_size = te->size;
	}
}

/* The blob name a listing entry expects. */
static const char *tree_blob(const struct st__tree_entry *te)
{
	return te->has_lfs ? te->lfs_sha256 : te->blob_id;
}

static void verify_refs(struct repo *r, const char *sub, int depth,
                        const char *only_commit)
{
	char *rel = join("refs", sub);
	char *dir = rel ? join(r->dir, rel) : NULL;
	size_t n;
	char **names = dir ? list_dir(dir, &n) : NULL;
	for (size_t i = 0; names && i < n; i++) {
		char *full = join(dir, names[i]);
		struct stat sb;
		if (!full) {
			r->v->oom = 1;
		} else if (lstat(full, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			char *s2 = join(sub, names[i]);
			if (s2 && depth < MAX_DEPTH)
				verify_refs(r, s2, depth + 1, only_commit);
			free(s2);
		} else {
			size_t len = 0;
			char *text = read_small(full, &len);
			while (text && len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
				text[--len] = '\0';
			if (!text) {
				add_problem(r->v, ST_VERIFY_UNREADABLE, full,
				            "cannot read the ref: %s", strerror(errno));
			} else if (!st__is_hex(text, 40)) {
				if (!only_commit)
					add_problem(r->v, ST_VERIFY_BAD_NAME, full,
					            "does not hold a commit hash (40 hex digits)");
			} else if (!only_commit || !strcmp(text, only_commit)) {
				char *snap = fmt("%s/snapshots/%s", r->dir, text);
				struct stat tb;
				if (snap && (lstat(snap, &tb) < 0 || !S_ISDIR(tb.st_mode)))
					add_problem(r->v, ST_VERIFY_MISSING_SNAPSHOT, full,
					            "names commit %s, which has no snapshot "
					            "folder", text);
				free(snap);
			}
			free(text);
		}
		free(full);
	}
	free_names(names);
	free(rel);
	free(dir);
}

static void on_index_problem(void *ctx, int severity, const char *message)
{
	st_verify *v = ctx;
	if (severity != ST_PROBLEM_ERROR)
		return;
	/* "path: what": the path is the shard's or the index's. */
	const char *colon = strstr(message, ": ");
	char *path = colon ? strndup(message, (size_t)(colon - message)) : NULL;
	add_problem(v, ST_VERIFY_INVALID, path ? path : "", "%s",
	            colon ? colon + 2 : message);
	free(path);
}

/*
 * The shard index rules (I1-I5) of every index in a folder whose links
 * are all sound (a check would otherwise follow the links reported).
 * Shard problems found again here are the same lines, merged later.
 */
static void check_index(st_verify *v, const char *full)
{
	st_error err;
	if (st_check_path(full, on_index_problem, v, &err) < 0)
		add_problem(v, ST_VERIFY_UNREADABLE, full, "cannot check: %s",
		            err.message);
}

/* A job reading full, with format problems named after name. */
static struct job *add_job(struct repo *r, const char *full, const char *label,
                           const char *name, const char *rel)
{
	struct job *j = plan_add(r->pl);
	struct stat sb;
	if (!j)
		return NULL;
	j->disk = strdup(full);
	j->label = strdup(label);
	j->name = strdup(name);
	j->validate = validator_of(rel);
	j->size = lstat(full, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	if (!j->disk || !j->label || !j->name)
		r->pl->oom = 1;
	return j;
}

/* Is name referenced as a blob by snapshot entry e? */
static int refers(const struct entry *e, const char *name)
{
	return e->blob && !strcmp(e->blob, name);
}

static void plan_blobs(struct repo *r, const char *only_commit)
{
	char *bdir = join(r->dir, "blobs");
	size_t n;
	char **names = bdir ? list_dir(bdir, &n) : NULL;
	for (size_t i = 0; names && i < n; i++) {
		const char *nm = names[i];
		char *full = join(bdir, nm);
		struct stat sb;
		/* The first snapshot entry that uses this blob names it. */
		const struct snapshot *us = NULL;
		const struct entry *ue = NULL;
		for (size_t a = 0; !ue && a < r->n_s; a++)
			for (size_t b = 0; !ue && b < r->s[a].n; b++)
				if (refers(&r->s[a].e[b], nm)) {
					us = &r->s[a];
					ue = &r->s[a].e[b];
				}
		if (!full) {
			r->v->oom = 1;
		} else if (only_commit && !ue) {
			/* Verifying one snapshot: other revisions' blobs are not ours. */
		} else if (lstat(full, &sb) < 0) {
			add_problem(r->v, ST_VERIFY_UNREADABLE, full, "cannot read: %s",
			            strerror(errno));
		} else if (ends_with(nm, ".incomplete")) {
			add_problem(r->v, ST_VERIFY_INCOMPLETE, full,
			            "unfinished download (%llu bytes so far); "
			            "huggingface_hub resumes it on the next download, "
			            "or it can be deleted", (unsigned long long)sb.st_size);
		} else if (S_ISLNK(sb.st_mode)) {
			add_problem(r->v, ST_VERIFY_NOT_REGULAR, full,
			            "a symlink where a blob should be; not followed");
		} else if (!S_ISREG(sb.st_mode)) {
			add_problem(r->v, ST_VERIFY_NOT_REGULAR, full,
			            "not a regular file (a FIFO, device or socket); "
			            "skipped, not read");
		} else if (!st__is_hex(nm, 64) && !st__is_hex(nm, 40)) {
			add_problem(r->v, ST_VERIFY_BAD_NAME, full,
			            "name is neither a SHA-256 nor a git blob id; "
			            "not verified");
		} else {
			char *name = ue ? fmt("%s/snapshots/%s/%s", r->dir, us->commit,
			                      ue->rel) : strdup(full);
			struct job *j = name ? add_job(r, full, full, name,
			                               ue ? ue->rel : "") : NULL;
			if (j) {
				j->algo = st__is_hex(nm, 64) ? ST_HASH_SHA256 : ST_HASH_GIT_SHA1;
				st_hash_unhex(nm, st__is_hex(nm, 64) ? 32 : 20, j->expected);
				snprintf(j->source, sizeof j->source, "its name");
				const struct st__tree_entry *te = ue ? tree_find(us, ue->rel)
				                                     : NULL;
				if (te && !strcmp(tree_blob(te), nm)) {
					j->expected_size = te->has_lfs ? te->lfs_size : te->size;
					snprintf(j->size_source, sizeof j->size_source,
					         "trees/%s.json", us->commit);
				}
			}
			free(name);
		}
		free(full);
	}
	free_names(names);
	free(bdir);
}

/*
 * Per snapshot: the listing's files that are missing, links that disagree
 * with it, and jobs for what is not a blob (regular files, links to other
 * places in the cache). no_links: the repository keeps no links at all.
 */
static void plan_snapshot(struct repo *r, struct snapshot *s, int no_links)
{
	char *sdir = fmt("%s/snapshots/%s", r->dir, s->commit);
	char *tree_rel = fmt("trees/%s.json", s->commit);
	if (!sdir || !tree_rel) {
		r->v->oom = 1;
		goto out;
	}
	for (size_t i = 0; s->has_tree && i < s->tree.n; i++) {
		const struct st__tree_entry *te = &s->tree.e[i];
		size_t k = 0;
		while (k < s->n && strcmp(s->e[k].rel, te->path))
			k++;
		char *full = join(sdir, te->path);
		if (full && k == s->n)
			add_problem(r->v, ST_VERIFY_MISSING_FILE, full,
			            "listed in %s (%llu bytes) but missing", tree_rel,
			            (unsigned long long)te->size);
		free(full);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct entry *e = &s->e[i];
		const struct st__tree_entry *te = tree_find(s, e->rel);
		char *full = join(sdir, e->rel);
		if (!full) {
			r->v->oom = 1;
			continue;
		}
		if (e->blob && te && strcmp(tree_blob(te), e->blob))
			add_problem(r->v, ST_VERIFY_CORRUPT, full,
			            "links to blobs/%s, but %s says its %s is %s",
			            e->blob, tree_rel, te->has_lfs ? "sha256" : "git blob id",
			            tree_blob(te));
		if (e->regular && !no_links)
			add_problem(r->v, ST_VERIFY_REPLACED_LINK, full,
			            "a regular file where the cache links to blobs/ "
			            "(something wrote through the snapshot path); %s",
			            te ? "checked against its listing"
			               : "no hash to check it against");
		if (e->regular || e->target) {
			char *disk = e->target ? join(r->dir, e->target) : strdup(full);
			struct job *j = disk ? add_job(r, disk, full, full, e->rel) : NULL;
			if (j && te) {
				expect_from_tree(j, te);
				snprintf(j->source, sizeof j->source, "%s", tree_rel);
				snprintf(j->size_source, sizeof j->size_source, "%s", tree_rel);
			}
			free(disk);
		}
		free(full);
	}
out:
	free(sdir);
	free(tree_rel);
}

static void snapshot_free(struct snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].rel);
		free(s->e[i].blob);
		free(s->e[i].target);
	}
	free(s->e);
	free(s->commit);
	st__tree_free(&s->tree);
}

/* Plan one repository folder (dir as shown), or one of its snapshots. */
static void plan_repo(st_verify *v, struct plan *pl, const char *dir,
                      const char *only_commit)
{
	struct repo r = {.dir = dir, .v = v, .pl = pl};
	v->n_repos++;
	char *sdir = join(dir, "snapshots");
	size_t n = 0;
	char **names = NULL;
	if (only_commit) {
		names = calloc(2, sizeof *names);
		if (names && (names[0] = strdup(only_commit)))
			n = 1;
	} else if (sdir) {
		names = list_dir(sdir, &n);
	}
	r.s = calloc(n ? n : 1, sizeof *r.s);
	if (!sdir || !r.s) {
		v->oom = 1;
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		char *full = join(sdir, names[i]);
		struct stat sb;
		if (full && lstat(full, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			struct snapshot *s = &r.s[r.n_s++];
			s->commit = strdup(names[i]);
			if (!s->commit) {
				v->oom = 1;
				r.n_s--;
			} else {
				walk_snapshot(&r, s, "", 0);
				load_tree(&r, s);
			}
		} else if (full) {
			add_problem(v, ST_VERIFY_NOT_REGULAR, full,
			            "not a snapshot folder; skipped");
		}
		free(full);
	}
	/* No link anywhere but files in snapshots: a cache made without links. */
	int no_links = r.n_links == 0 && r.n_regular > 0;
	if (no_links)
		v->no_symlinks = 1;
	plan_blobs(&r, only_commit);
	for (size_t i = 0; i < r.n_s; i++)
		plan_snapshot(&r, &r.s[i], no_links);
	verify_refs(&r, "", 0, only_commit);
	for (size_t i = 0; i < r.n_s; i++) {
		struct snapshot *s = &r.s[i];
		if (s->bad_links)
			continue; /* a check would follow the links reported */
		for (size_t k = 0; k < s->n; k++) {
			if (!ends_with(s->e[k].rel, ".safetensors.index.json"))
				continue;
			char *full = fmt("%s/snapshots/%s/%s", dir, s->commit, s->e[k].rel);
			if (full)
				check_index(v, full);
			free(full);
		}
	}
	for (size_t i = 0; i < r.n_s; i++)
		snapshot_free(&r.s[i]);
	free(r.s);
	free_names(names);
	free(sdir);
}

/* ---- plain folders and files ---------------------------------------------- */

struct sum {
	char *name;
	unsigned char digest[32];
	int seen;
};

struct sidecar {
	struct sum *e;
	size_t n;
};

/* Parse SHA256SUMS: "<64 hex> <space or *><name>" per line. */
static void load_sidecar(st_verify *v, const char *path, struct sidecar *sc)
{
	size_t len = 0;
	char *text = read_small(path, &len);
	memset(sc, 0, sizeof *sc);
	if (!text) {
		add_problem(v, ST_VERIFY_BAD_LISTING, path, "cannot read: %s",
		            strerror(errno));
		return;
	}
	v->sidecar = 1;
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	sc->e = calloc(lines, sizeof *sc->e);
	char *line = text;
	for (size_t no = 1; sc->e && line && *line; no++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		size_t n = strlen(line);
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (n == 0 || line[0] == '#') {
			/* blank or comment */
		} else if (n < 67 || line[64] != ' ' ||
		           (line[65] != ' ' && line[65] != '*')) {
			add_problem(v, ST_VERIFY_BAD_LISTING, path,
			            "line %zu is not '<sha256>  <file>'; ignored", no);
		} else {
			char hex[65];
			memcpy(hex, line, 64);
			hex[64] = '\0';
			struct sum *s = &sc->e[sc->n];
			const char *name = line + 66;
			while (!strncmp(name, "./", 2))
				name += 2;
			if (st_hash_unhex(hex, 32, s->digest) < 0 || !*name) {
				add_problem(v, ST_VERIFY_BAD_LISTING, path,
				            "line %zu is not '<sha256>  <file>'; ignored", no);
			} else if ((s->name = strdup(name))) {
				sc->n++;
			} else {
				v->oom = 1;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	if (!sc->e)
		v->oom = 1;
	free(text);
}

static struct sum *sidecar_find(struct sidecar *sc, const char *rel)
{
	for (size_t i = 0; i < sc->n; i++)
		if (!strcmp(sc->e[i].name, rel))
			return &sc->e[i];
	return NULL;
}

static void sidecar_free(struct sidecar *sc)
{
	for (size_t i = 0; i < sc->n; i++)
		free(sc->e[i].name);
	free(sc->e);
}

struct folder {
	st_verify *v;
	struct plan *pl;
	const char *root;   /* PATH: walked, names relative to it */
	const char *bound;  /* no link is followed out of this folder */
	const char *below;  /* root relative to bound ("" when the same) */
	const char *what;   /* bound in messages: "the folder", "the cache" */
	struct sidecar sc;
	int hash_mode;
};

/*
 * A job for one regular file found at rel (disk: the link-free path);
 * s is its sidecar entry or NULL.
 */
static void folder_file(struct folder *fo, const char *rel, const char *disk,
                        struct sum *s)
{
	char *full = join(fo->root, rel);
	int validate = validator_of(rel);
	if (!full) {
		fo->v->oom = 1;
		return;
	}
	/* Nothing to compare and nothing to check: not read. */
	if (!s && validate == V_NONE && !fo->hash_mode) {
		free(full);
		return;
	}
	struct job *j = plan_add(fo->pl);
	struct stat sb;
	if (j) {
		j->disk = strdup(disk);
		j->label = strdup(full);
		j->name = strdup(full);
		j->hash_path = strdup(rel);
		j->validate = fo->hash_mode ? V_NONE : validate;
		j->hash_mode = fo->hash_mode;
		j->size = lstat(disk, &sb) == 0 ? (uint64_t)sb.st_size : 0;
		if (s) {
			s->seen = 1;
			j->algo = ST_HASH_SHA256;
			memcpy(j->expected, s->digest, 32);
			snprintf(j->source, sizeof j->source, "SHA256SUMS");
		}
		if (!j->disk || !j->label || !j->name || !j->hash_path)
			fo->pl->oom = 1;
	}
	free(full);
}

static void walk_folder(struct folder *fo, const char *sub, int depth)
{
	char *dir = join(fo->root, sub);
	size_t n;
	char **names = dir ? list_dir(dir, &n) : NULL;
	for (size_t i = 0; names && i < n; i++) {
		char *rel = join(sub, names[i]);
		char *full = rel ? join(fo->root, rel) : NULL;
		struct stat sb;
		if (!full) {
			fo->v->oom = 1;
		} else if (!*sub && !strcmp(names[i], "SHA256SUMS")) {
			/* the sidecar itself */
		} else if (lstat(full, &sb) < 0) {
			add_problem(fo->v, ST_VERIFY_UNREADABLE, full, "cannot read: %s",
			            strerror(errno));
		} else if (S_ISDIR(sb.st_mode)) {
			if (depth < MAX_DEPTH)
				walk_folder(fo, rel, depth + 1);
		} else if (S_ISREG(sb.st_mode)) {
			folder_file(fo, rel, full, sidecar_find(&fo->sc, rel));
		} else if (S_ISLNK(sb.st_mode)) {
			char *brel = join(fo->below, rel);
			char *to = brel ? follow_link(fo->v, fo->bound, brel, fo->what)
			                : NULL;
			char *disk = to ? join(fo->bound, to) : NULL;
			free(brel);
			if (disk)
				folder_file(fo, rel, disk, sidecar_find(&fo->sc, rel));
			else if (to)
				fo->v->oom = 1;
			if (!to) {
				struct sum *s = sidecar_find(&fo->sc, rel);
				if (s)
					s->seen = 1; /* its problem is the link's */
			}
			free(disk);
			free(to);
		} else {
			add_problem(fo->v, ST_VERIFY_NOT_REGULAR, full,
			            "not a regular file (a FIFO, device or socket); "
			            "skipped, not read");
		}
		free(rel);
		free(full);
	}
	free_names(names);
	free(dir);
}

static void plan_folder(st_verify *v, struct plan *pl, const char *root,
                        int hash_mode, const char *bound, const char *below)
{
	struct folder fo = {.v = v, .pl = pl, .root = root, .hash_mode = hash_mode,
	                    .bound = bound ? bound : root, .below = below ? below : "",
	                    .what = bound ? "the cache" : "the folder"};
	char *sums = join(root, "SHA256SUMS");
	struct stat sb;
	if (!hash_mode && sums && lstat(sums, &sb) == 0)
		load_sidecar(v, sums, &fo.sc);
	walk_folder(&fo, "", 0);
	for (size_t i = 0; i < fo.sc.n; i++) {
		if (fo.sc.e[i].seen)
			continue;
		char *full = join(root, fo.sc.e[i].name);
		if (full)
			add_problem(v, ST_VERIFY_MISSING_FILE, full,
			            "listed in SHA256SUMS but missing");
		free(full);
	}
	sidecar_free(&fo.sc);
	free(sums);
}

/* A plain file PATH (opened as named): its folder's SHA256SUMS entry. */
static void plan_file(st_verify *v, struct plan *pl, const char *path,
                      int hash_mode)
{
	char *copy = strdup(path);
	char *slash = copy ? strrchr(copy, '/') : NULL;
	const char *base = slash ? slash + 1 : path;
	char *dir = copy ? (slash ? strndup(copy, (size_t)(slash - copy + 1))
	                          : strdup("")) : NULL;
	char *sums = dir ? fmt("%sSHA256SUMS", dir) : NULL;
	struct folder fo = {.v = v, .pl = pl, .root = "", .bound = "", .below = "",
	                    .what = "the folder", .hash_mode = hash_mode};
	struct stat sb;
	if (!hash_mode && sums && lstat(sums, &sb) == 0)
		load_sidecar(v, sums, &fo.sc);
	char *real = realpath(path, NULL);
	if (!copy || !dir || !sums || !real) {
		v->oom = 1;
	} else {
		/* Its entry is the one under its name in the folder. */
		folder_file(&fo, path, real, sidecar_find(&fo.sc, base));
	}
	sidecar_free(&fo.sc);
	free(real);
	free(sums);
	free(dir);
	free(copy);
}

/* ---- PATH --------------------------------------------------------------------- */

static int is_repo_name(const char *s)
{
	return !strncmp(s, "models--", 8) || !strncmp(s, "datasets--", 10) ||
	       !strncmp(s, "spaces--", 8);
}

static int is_dir(const char *dir, const char *name)
{
	char *p = join(dir, name);
	struct stat sb;
	int r = p && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
	free(p);
	return r;
}

/* PATH with trailing slashes cut (but "/" kept). */
static char *trim_path(const char *path)
{
	char *p = strdup(path);
	size_t n = p ? strlen(p) : 0;
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	return p;
}

static int plan_path(st_verify *v, struct plan *pl, const char *path,
                     st_error *err)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		return st__error_sys(err, ST_EIO, errno, "%s", path);
	int hash_mode = (v->opt->flags & ST_VERIFY_HASH) != 0;
	if (!S_ISDIR(sb.st_mode)) {
		if (!S_ISREG(sb.st_mode))
			return st__error(err, ST_EIO, "%s: not a regular file or folder",
			                 path);
		if (access(path, R_OK) < 0)
			return st__error_sys(err, ST_EIO, errno, "%s", path);
		v->layout = ST_VERIFY_LAYOUT_FILE;
		plan_file(v, pl, path, hash_mode);
		return ST_OK;
	}
	DIR *d = opendir(path);
	if (!d)
		return st__error_sys(err, ST_EIO, errno, "%s", path);
	closedir(d);
	char *p = trim_path(path);
	if (!p)
		return st__error(err, ST_ENOMEM, "out of memory");
	const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
	/* snapshots/<commit>: its repository is two levels up. */
	char *parent = fmt("%s/..", p), *grand = fmt("%s/../..", p);
	char *pname = NULL;
	{
		char *rp = parent ? realpath(parent, NULL) : NULL;
		const char *s = rp ? strrchr(rp, '/') : NULL;
		pname = s ? strdup(s + 1) : NULL;
		free(rp);
	}
	int is_snap = pname && !strcmp(pname, "snapshots") && grand &&
	              is_dir(grand, "blobs") && strcmp(base, ".") &&
	              strcmp(base, "..");
	/* The repository of a snapshot, in PATH's words (its grandparent). */
	char *repo = NULL;
	if (is_snap) {
		const char *s1 = strrchr(p, '/');
		if (s1) {
			char *up = strndup(p, (size_t)(s1 - p));
			const char *s2 = up ? strrchr(up, '/') : NULL;
			repo = s2 ? strndup(up, (size_t)(s2 - up))
			          : (up ? strdup(".") : NULL);
			free(up);
		}
		if (!repo)
			repo = strdup(grand);
	}
	char *below = repo ? fmt("snapshots/%s", base) : NULL;
	if (hash_mode) {
		v->layout = ST_VERIFY_LAYOUT_FOLDER;
		/* A snapshot's links into blobs/ stay in its cache: follow them. */
		plan_folder(v, pl, p, 1, below ? repo : NULL, below);
	} else if (is_dir(p, "snapshots") || is_dir(p, "blobs")) {
		v->layout = ST_VERIFY_LAYOUT_REPO;
		plan_repo(v, pl, p, NULL);
	} else if (is_snap) {
		v->layout = ST_VERIFY_LAYOUT_SNAPSHOT;
		if (repo)
			plan_repo(v, pl, repo, base);
	} else {
		size_t n;
		char **names = list_dir(p, &n);
		size_t repos = 0;
		for (size_t i = 0; names && i < n; i++)
			if (is_repo_name(names[i]) && is_dir(p, names[i])) {
				char *rd = join(p, names[i]);
				if (rd)
					plan_repo(v, pl, rd, NULL);
				free(rd);
				repos++;
			}
		free_names(names);
		if (repos) {
			v->layout = ST_VERIFY_LAYOUT_CACHE;
		} else {
			v->layout = ST_VERIFY_LAYOUT_FOLDER;
			plan_folder(v, pl, p, 0, NULL, NULL);
		}
	}
	free(repo);
	free(below);
	free(parent);
	free(grand);
	free(pname);
	free(p);
	return ST_OK;
}

/* ---- results ------------------------------------------------------------------ */

static int cmp_problem(const void *a, const void *b)
{
	const struct problem *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	if (c)
		return c;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	return strcmp(x->message, y->message);
}

static int cmp_fhash(const void *a, const void *b)
{
	return strcmp(((const struct fhash *)a)->path,
	              ((const struct fhash *)b)->path);
}

int st_verify_path(st_verify **out, const char *path,
                   const st_verify_options *opt, st_error *err)
{
	static const st_verify_options defaults = {0, 1, NULL, NULL};
	*out = NULL;
	st_verify *v = calloc(1, sizeof *v);
	if (!v)
		return st__error(err, ST_ENOMEM, "out of memory");
	pthread_mutex_init(&v->lock, NULL);
	v->opt = opt ? opt : &defaults;
	struct plan pl = {0};
	int rc = plan_path(v, &pl, path, err);
	if (rc == ST_OK && !pl.oom)
		run_plan(v, &pl);
	for (size_t i = 0; i < pl.n; i++)
		job_free(&pl.j[i]);
	free(pl.j);
	if (rc == ST_OK && (pl.oom || v->oom))
		rc = st__error(err, ST_ENOMEM, "%s: out of memory", path);
	if (rc) {
		st_verify_free(v);
		return rc;
	}
	/* Sorted; a line found twice (a shard checked alone and by its index) once. */
	if (v->n_p)
		qsort(v->p, v->n_p, sizeof *v->p, cmp_problem);
	size_t k = 0;
	for (size_t i = 0; i < v->n_p; i++) {
		if (k && !strcmp(v->p[k - 1].message, v->p[i].message)) {
			free(v->p[i].path);
			free(v->p[i].message);
			continue;
		}
		v->p[k++] = v->p[i];
	}
	v->n_p = k;
	if (v->n_f)
		qsort(v->f, v->n_f, sizeof *v->f, cmp_fhash);
	v->view = calloc(v->n_p ? v->n_p : 1, sizeof *v->view);
	v->fview = calloc(v->n_f ? v->n_f : 1, sizeof *v->fview);
	if (!v->view || !v->fview) {
		st_verify_free(v);
		return st__error(err, ST_ENOMEM, "%s: out of memory", path);
	}
	for (size_t i = 0; i < v->n_p; i++)
		v->view[i] = (st_verify_problem){v->p[i].kind, v->p[i].path,
		                                 v->p[i].message};
	for (size_t i = 0; i < v->n_f; i++) {
		st_verify_file *f = &v->fview[i];
		f->path = v->f[i].path;
		f->size = v->f[i].size;
		memcpy(f->sha256, v->f[i].sha256, 65);
		f->n_tensors = v->f[i].n_tensors;
		f->tensors = v->f[i].tensors;
	}
	v->opt = NULL;
	*out = v;
	return ST_OK;
}

void st_verify_free(st_verify *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n_p; i++) {
		free(v->p[i].path);
		free(v->p[i].message);
	}
	for (size_t i = 0; i < v->n_f; i++) {
		free(v->f[i].path);
		free(v->f[i].names);
		free(v->f[i].tensors);
	}
	free(v->p);
	free(v->f);
	free(v->view);
	free(v->fview);
	pthread_mutex_destroy(&v->lock);
	free(v);
}

const char *st_verify_kind_name(int kind)
{
	static const char *const names[] = {
		"?", "corrupt", "truncated", "dangling-link", "absolute-link",
		"escaping-link", "replaced-link", "incomplete", "missing-snapshot",
		"missing-file", "not-regular", "unreadable", "bad-name",
		"bad-listing", "invalid",
	};
	if (kind < 1 || kind >= (int)(sizeof names / sizeof *names))
		return "?";
	return names[kind];
}

int st_verify_layout(const st_verify *v) { return v->layout; }
int st_verify_no_symlinks(const st_verify *v) { return v->no_symlinks; }
int st_verify_has_sidecar(const st_verify *v) { return v->sidecar; }
size_t st_verify_n_problems(const st_verify *v) { return v->n_p; }
const st_verify_problem *st_verify_problem_at(const st_verify *v, size_t i)
{
	return i < v->n_p ? &v->view[i] : NULL;
}
uint64_t st_verify_n_files(const st_verify *v) { return v->n_files; }
uint64_t st_verify_bytes_hashed(const st_verify *v) { return v->bytes; }
uint64_t st_verify_n_unverified(const st_verify *v) { return v->unverified; }
size_t st_verify_n_repos(const st_verify *v) { return v->n_repos; }
size_t st_verify_n_file_hashes(const st_verify *v) { return v->n_f; }
const st_verify_file *st_verify_file_at(const st_verify *v, size_t i)
{
	return i < v->n_f ? &v->fview[i] : NULL;
}
