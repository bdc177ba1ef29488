/*
 * snapshot.c - writing a snapshot directory atomically (st/snapshot.h):
 * the shard planner, the temporary sibling directory and what goes into
 * it (shard files through the writer, the index, the other snapshot files
 * of the input, what an existing target held besides its checkpoint), and
 * the commit that swaps it in.
 *
 * What it is not: the format of a file (writer.c) or of an index
 * (index_write.c), or the editing of config.json (config.c). It never
 * prints: what a verbose tool reports comes to the caller's st_problem_fn.
 *
 * Atomicity: everything is written inside "<parent>/.<base>.tmp-<pid>-X"
 * and synced; commit then exchanges that directory with the target in one
 * renameat2(RENAME_EXCHANGE), so a reader of the target sees the old
 * snapshot or the new one, never a mix. A failure, or st_snapshot_close
 * before commit, removes the temporary tree; one left by a killed process
 * is removed by the next st_snapshot_open of the same target.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* Directories deeper than this are taken for a symlink loop. */
#define MAX_DEPTH 32

/* ---- the shard planner ----------------------------------------------------- */

int st_shard_plan(const st_tensor *t, size_t n, uint64_t limit,
                  unsigned *shard, unsigned *n_shards_out, st_error *err)
{
	const unsigned pending = UINT_MAX;
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	if (!order)
		return st__error(err, ST_ENOMEM, "cannot plan %zu tensors", n);
	int rc = st_canonical_order(t, n, order, err);
	if (rc != ST_OK) {
		free(order);
		return rc;
	}
	unsigned n_shards = 0;
	uint64_t cur_size = 0;
	size_t start = 0;
	int filling = 0;
	for (size_t i = 0; i <= n; i++) {
		const st_tensor *it = i < n ? &t[order[i]] : NULL;
		if (it && !limit) {
			shard[order[i]] = 0;
			continue;
		}
		if (it && it->n_bytes > limit) {
			shard[order[i]] = n_shards++;
			continue;
		}
		/* Shards are numbered in the order they are completed, as
		 * huggingface_hub appends them to its list. */
		if (filling && (!it || cur_size + it->n_bytes > limit)) {
			for (size_t k = start; k < i; k++)
				if (shard[order[k]] == pending)
					shard[order[k]] = n_shards;
			n_shards++;
			filling = 0;
		}
		if (!it)
			break;
		if (!filling) {
			filling = 1;
			start = i;
			cur_size = 0;
		}
		shard[order[i]] = pending;
		cur_size += it->n_bytes;
	}
	free(order);
	*n_shards_out = n_shards ? n_shards : 1;
	return ST_OK;
}

void st_snapshot_file_name(char *buf, size_t size, unsigned k, unsigned n)
{
	if (n <= 1)
		snprintf(buf, size, "model.safetensors");
	else
		st_shard_name(buf, size, k + 1, n);
}

/* ---- paths and small helpers ------------------------------------------------ */

struct st_snapshot {
	char *path;     /* the target, resolved */
	char *tmp;      /* the temporary directory, NULL once gone */
	int exists;     /* the target existed at open */
	mode_t mode;    /* its permission bits */
	int committed;
};

#define join st__path_join
#define ends_with st__ends_with

static int plain_name(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

/* Sync a directory's entries: 0 or an errno. A file system that cannot
 * sync a directory is not a failure, as in st__fsync_dir. */
static int fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	int e = st__fsync_retry(fd);
	close(fd);
	return e == EINVAL || e == ENOTSUP || e == EBADF ? 0 : e;
}

static int sync_entry(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? fsync_path(path) : 0;
}

/*
 * Sync every directory of the tree at path, the deepest first and path
 * itself last: each file was synced when it was written, but a file's
 * name in a new subdirectory is durable only once that subdirectory is.
 * Returns 0 or the first errno.
 */
static int fsync_tree(const char *path)
{
	int r = nftw(path, sync_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return r == -1 ? errno : r;
}

/* ---- open, free --------------------------------------------------------------- */

static int other_fs(const char *path, dev_t dev, int depth, st_error *err);

int st_snapshot_open(st_snapshot **out, const char *dir, unsigned flags,
                     st_error *err)
{
	*out = NULL;
	if (!dir || !*dir)
		return st__error(err, ST_EINVAL, "output directory is empty");
	st_snapshot *s = calloc(1, sizeof *s);
	if (!s)
		return st__error(err, ST_ENOMEM, "%s: out of memory", dir);
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			free(s);
			return st__error(err, ST_EINVAL, "%s: exists and is not a directory", dir);
		}
		if (!(flags & ST_SNAPSHOT_REPLACE)) {
			free(s);
			return st__error(err, ST_EINVAL, "%s: already exists", dir);
		}
		s->exists = 1;
		s->mode = st.st_mode & 07777;
		int rc = other_fs(dir, st.st_dev, 0, err);
		if (rc != ST_OK) {
			free(s);
			return rc;
		}
		/* ".", "dir/..", a symlink: the real parent and name, where the
		 * temporary sibling is made. */
		if (!(s->path = realpath(dir, NULL))) {
			int e = errno;
			free(s);
			return st__error_sys(err, ST_EIO, e, "%s", dir);
		}
	} else if (errno != ENOENT) {
		int e = errno;
		free(s);
		return st__error_sys(err, ST_EIO, e, "%s", dir);
	} else {
		if (!(s->path = strdup(dir))) {
			free(s);
			return st__error(err, ST_ENOMEM, "%s: out of memory", dir);
		}
		size_t len = strlen(s->path);
		while (len > 1 && s->path[len - 1] == '/')
			s->path[--len] = 0;
	}
	const char *slash = strrchr(s->path, '/');
	const char *base = slash ? slash + 1 : s->path;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		st_snapshot_close(s);
		return st__error(err, ST_EINVAL, "%s: cannot replace this directory", dir);
	}
	st__sweep_stale(s->path);
	int e = EEXIST;
	for (int attempt = 0; attempt < 100 && e == EEXIST; attempt++) {
		e = st__temp_name(s->path, &s->tmp, attempt);
		if (e)
			break;
		/* 0777: the umask and a default ACL apply as to any new directory. */
		if (mkdir(s->tmp, 0777) == 0)
			break;
		e = errno;
		free(s->tmp);
		s->tmp = NULL;
	}
	if (!s->tmp) {
		st_snapshot_close(s);
		if (e == ENOMEM)
			return st__error(err, ST_ENOMEM, "%s: out of memory", dir);
		return st__error_sys(err, ST_EIO, e,
		                     "%s: cannot create a temporary directory beside it",
		                     dir);
	}
	*out = s;
	return ST_OK;
}

const char *st_snapshot_path(const st_snapshot *s) { return s->path; }
const char *st_snapshot_temp_path(const st_snapshot *s)
{
	return s->committed ? NULL : s->tmp;
}

void st_snapshot_close(st_snapshot *s)
{
	if (!s)
		return;
	/* Best effort: what cannot be removed carries this process's pid, and
	 * the next writer to the same target removes it. */
	if (s->tmp)
		st__rm_tree(s->tmp);
	free(s->tmp);
	free(s->path);
	free(s);
}

/* ---- members ------------------------------------------------------------------ */

/* tmp/name for a plain name; NULL with err set. */
static char *member(st_snapshot *s, const char *name, st_error *err)
{
	if (s->committed || !s->tmp) {
		st__error(err, ST_ESTATE, "%s: snapshot already committed", s->path);
		return NULL;
	}
	if (!plain_name(name)) {
		st__error(err, ST_EINVAL, "%s: '%s' is not a plain file name", s->path,
		          name ? name : "");
		return NULL;
	}
	char *p = join(s->tmp, name);
	if (!p)
		st__error(err, ST_ENOMEM, "%s: out of memory", s->path);
	return p;
}

int st_snapshot_open_writer(st_snapshot *s, st_writer *w, const char *name,
                            st_error *err)
{
	char *p = member(s, name, err);
	if (!p)
		return err ? err->code : ST_EINVAL;
	int rc = st_writer_open(w, p, err);
	free(p);
	return rc;
}

int st_snapshot_write_index(st_snapshot *s, uint64_t total_size,
                            const st_index_entry *entries, size_t n,
                            st_error *err)
{
	char *p = member(s, "model.safetensors.index.json", err);
	if (!p)
		return err ? err->code : ST_ESTATE;
	int rc = st_index_write(p, total_size, entries, n, NULL, 0, err);
	free(p);
	return rc;
}

/* Create dst (which must not exist) holding len bytes of buf. */
static int write_new_file(const char *dst, const void *buf, size_t len,
                          mode_t mode, st_error *err)
{
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
	if (fd < 0)
		return st__error_sys(err, ST_EIO, errno, "%s: cannot create", dst);
	int e = st__write_all(fd, buf, len);
	if (!e)
		e = st__fsync_retry(fd);
	if (close(fd) != 0 && !e)
		e = errno;
	if (e)
		return st__error_sys(err, ST_EIO, e, "%s: cannot write", dst);
	return ST_OK;
}

int st_snapshot_add_file(st_snapshot *s, const char *name, const void *data,
                         size_t len, unsigned mode, st_error *err)
{
	char *p = member(s, name, err);
	if (!p)
		return err ? err->code : ST_EINVAL;
	int rc = write_new_file(p, data, len, (mode_t)mode, err);
	free(p);
	return rc;
}

int st_snapshot_replace_file(st_snapshot *s, const char *name, const void *data,
                             size_t len, unsigned mode, st_error *err)
{
	char *p = member(s, name, err);
	if (!p)
		return err ? err->code : ST_EINVAL;
	/* The directory is not visible yet: no reader can see the gap. */
	if (unlink(p) != 0 && errno != ENOENT) {
		int e = errno;
		st__error_sys(err, ST_EIO, e, "%s: cannot replace", p);
		free(p);
		return ST_EIO;
	}
	int rc = write_new_file(p, data, len, (mode_t)mode, err);
	free(p);
	return rc;
}

/* Copy src (following symlinks) to dst, which must not exist. */
static int copy_file(const char *src, const char *dst, mode_t mode, st_error *err)
{
	enum { BUF = 1 << 16 };
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return st__error_sys(err, ST_EIO, errno, "%s: cannot open", src);
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
	if (out < 0) {
		int e = errno;
		close(in);
		return st__error_sys(err, ST_EIO, e, "%s: cannot create", dst);
	}
	char *buf = malloc(BUF);
	int rc = buf ? ST_OK : st__error(err, ST_ENOMEM, "%s: out of memory", src);
	while (rc == ST_OK) {
		ssize_t r = read(in, buf, BUF);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = st__error_sys(err, ST_EIO, errno, "%s: cannot read", src);
			break;
		}
		if (r == 0)
			break;
		int e = st__write_all(out, buf, (size_t)r);
		if (e)
			rc = st__error_sys(err, ST_EIO, e, "%s: cannot write", dst);
	}
	free(buf);
	close(in);
	if (rc == ST_OK) {
		int e = st__fsync_retry(out);
		if (close(out) != 0 && !e)
			e = errno;
		if (e)
			rc = st__error_sys(err, ST_EIO, e, "%s: cannot write", dst);
	} else {
		close(out);
	}
	return rc;
}

/* Copy a config.json, setting its torch_dtype (st_config_set_dtype). */
static int copy_config(const char *src, const char *dst, mode_t mode,
                       const char *dtype, st_problem_fn fn, void *ctx,
                       st_error *err)
{
	char *text;
	size_t got;
	int rc = st_config_read_file(src, &text, &got, err);
	if (rc == ST_EFORMAT) {
		st_problem_report(fn, ctx, ST_PROBLEM_WARNING,
		     "%s: too large to be a config; copied without updating torch_dtype", src);
		return copy_file(src, dst, mode, err);
	}
	if (rc == ST_ENOTFOUND) /* gone since the directory was listed */
		return st__error(err, ST_EIO, "%s: cannot copy: removed while copying", src);
	if (rc != ST_OK)
		return rc;
	char *edited;
	size_t edited_len;
	rc = st_config_set_dtype(text, got, dtype, &edited, &edited_len, err);
	if (rc == ST_EFORMAT) {
		st_problem_report(fn, ctx, ST_PROBLEM_WARNING,
		     "%s: not a JSON object; copied without updating torch_dtype", src);
		rc = write_new_file(dst, text, got, mode, err);
	} else if (rc == ST_OK) {
		rc = write_new_file(dst, edited, edited_len, mode, err);
		free(edited);
	}
	free(text);
	return rc;
}

/* Names of files holding weights in some format: they would not match the
 * new checkpoint, so they are not copied. */
static int is_weight_file(const char *name)
{
	static const char *const suffixes[] = {
		".safetensors", ".safetensors.index.json", ".bin", ".bin.index.json",
		".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".msgpack.index.json", ".ot",
		".gguf", ".onnx", ".onnx_data",
	};
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
		if (ends_with(name, suffixes[i]))
			return 1;
	return 0;
}

/* Directory entries sorted by name, so that reports and errors come out in
 * the same order on every file system; "." and ".." left out. */
static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_dots(const struct dirent *e)
{
	return strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
}

static int list_dir(const char *path, struct dirent ***list, int *n, st_error *err)
{
	*n = scandir(path, list, not_dots, by_name);
	if (*n < 0)
		return st__error_sys(err, ST_EIO, errno, "%s: cannot read directory", path);
	return ST_OK;
}

static void free_list(struct dirent **list, int n)
{
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

struct file_id {
	dev_t dev;
	ino_t ino;
};

struct ids {
	struct file_id *id;
	size_t n, cap;
};

static int ids_add(struct ids *ids, const char *path)
{
	struct stat st;
	if (!path || stat(path, &st) != 0)
		return 0;
	if (ids->n == ids->cap) {
		size_t cap = ids->cap ? ids->cap * 2 : 16;
		struct file_id *p = realloc(ids->id, cap * sizeof *p);
		if (!p)
			return -1;
		ids->id = p;
		ids->cap = cap;
	}
	ids->id[ids->n++] = (struct file_id){st.st_dev, st.st_ino};
	return 0;
}

static int ids_has(const struct ids *ids, const struct stat *st)
{
	for (size_t i = 0; i < ids->n; i++)
		if (ids->id[i].dev == st->st_dev && ids->id[i].ino == st->st_ino)
			return 1;
	return 0;
}

/* The files checkpoint c was read from, and its index. */
static int ids_of_checkpoint(struct ids *ids, const st_checkpoint *c)
{
	if (!c)
		return 0;
	for (size_t f = 0; f < st_checkpoint_n_files(c); f++)
		if (ids_add(ids, st_file_path(st_checkpoint_file(c, f))) != 0)
			return -1;
	return ids_add(ids, st_checkpoint_index_path(c));
}

struct copy_ctx {
	const struct ids *skip;
	const char *root;   /* IN, resolved: what links may point into */
	const char *blobs;  /* a Hugging Face cache's blobs/ beside IN, or NULL */
	const char *dtype;
	st_problem_fn fn;
	void *ctx;
	st_error *err;
};

/* Is path under dir (resolved, no trailing slash), or dir itself? */
static int under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return 1;
	return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/*
 * *inside = 0 when entry s is a link whose target lies outside IN (and
 * outside IN's Hugging Face blobs/), after telling fn which link was left
 * out. Links that do not resolve are left to the copy, which names them.
 */
static int link_inside(const struct copy_ctx *cx, const char *s, int *inside)
{
	struct stat ls;
	*inside = 1;
	if (lstat(s, &ls) != 0 || !S_ISLNK(ls.st_mode))
		return ST_OK;
	char *real = realpath(s, NULL);
	if (!real)
		return errno == ENOMEM ? st__error(cx->err, ST_ENOMEM, "%s: out of memory", s)
		                       : ST_OK;
	if (!under(real, cx->root) && !(cx->blobs && under(real, cx->blobs))) {
		*inside = 0;
		char target[PATH_MAX];
		ssize_t len = readlink(s, target, sizeof target - 1);
		target[len < 0 ? 0 : len] = 0;
		st_problem_report(cx->fn, cx->ctx, ST_PROBLEM_WARNING,
		     "not copied: %s: a link to %s, outside %s", s, target, cx->root);
	}
	free(real);
	return ST_OK;
}

/*
 * The blobs/ folder of the Hugging Face cache repository that the resolved
 * directory root is a snapshot of (".../models--O--N/snapshots/REV" or a
 * folder inside one, the repository folder named as the cache names it),
 * or NULL: the one place outside IN its links may point, since every file
 * of a cache snapshot is a link into it.
 */
static char *cache_blobs(const char *root)
{
	char *p = strdup(root);
	char *found = NULL;
	for (char *slash; p && !found && (slash = strrchr(p, '/')) != NULL && slash > p;) {
		*slash = 0; /* p: a parent of the revision folder */
		const char *base = strrchr(p, '/');
		if (base && strcmp(base + 1, "snapshots") == 0) {
			size_t n = (size_t)(base - p);
			const char *repo = memrchr(p, '/', n);
			repo = repo ? repo + 1 : p;
			if (strncmp(repo, "models--", 8) != 0 && strncmp(repo, "datasets--", 10) != 0 &&
			    strncmp(repo, "spaces--", 8) != 0)
				break;
			char *blobs = malloc(n + sizeof "/blobs");
			struct stat st;
			if (blobs) {
				memcpy(blobs, p, n);
				memcpy(blobs + n, "/blobs", sizeof "/blobs");
				if (stat(blobs, &st) == 0 && S_ISDIR(st.st_mode))
					found = realpath(blobs, NULL);
				free(blobs);
			}
			break;
		}
	}
	free(p);
	return found;
}

static int copy_tree(const struct copy_ctx *cx, const char *src, const char *dst,
                     int depth)
{
	/* Directories are followed through symlinks; a loop ends here. */
	if (depth > MAX_DEPTH)
		return st__error(cx->err, ST_EIO,
		                 "%s: directories nested too deep (a symlink loop?)", src);
	struct dirent **list;
	int n;
	int rc = list_dir(src, &list, &n, cx->err);
	for (int i = 0; i < n && rc == ST_OK; i++) {
		const char *name = list[i]->d_name;
		char *s = join(src, name), *t = join(dst, name);
		struct stat st;
		int inside = 1;
		if (!s || !t) {
			rc = st__error(cx->err, ST_ENOMEM, "%s: out of memory", src);
		} else if (st__temp_is_stale(name)) {
			st_problem_report(cx->fn, cx->ctx, ST_PROBLEM_NOTE,
			     "not copied: %s (a temporary of a writer that is gone)", s);
		} else if ((rc = link_inside(cx, s, &inside)) != ST_OK) {
			/* named in the error */
		} else if (!inside) {
			/* A link out of IN: its target is not the snapshot's to copy. */
		} else if (stat(s, &st) != 0) {
			rc = st__error_sys(cx->err, ST_EIO, errno, "%s: cannot copy", s);
		} else if (ids_has(cx->skip, &st)) {
			/* The checkpoint itself, or the output inside the input. */
		} else if (S_ISDIR(st.st_mode)) {
			if (strcmp(name, ".git") == 0 || strcmp(name, ".cache") == 0) {
				st_problem_report(cx->fn, cx->ctx, ST_PROBLEM_NOTE,
				     "not copied: %s (not part of a snapshot)", s);
			} else if (mkdir(t, st.st_mode & 07777) != 0) {
				rc = st__error_sys(cx->err, ST_EIO, errno,
				                   "%s: cannot create directory", t);
			} else {
				rc = copy_tree(cx, s, t, depth + 1);
			}
		} else if (S_ISREG(st.st_mode)) {
			struct stat given;
			if (is_weight_file(name)) {
				st_problem_report(cx->fn, cx->ctx, ST_PROBLEM_NOTE,
				     "not copied: %s (weights in another file)", s);
			} else if (depth == 0 && lstat(t, &given) == 0) {
				/* st_snapshot_add_file gave the new directory its own. */
				st_problem_report(cx->fn, cx->ctx, ST_PROBLEM_NOTE,
				     "not copied: %s (the new directory has its own)", s);
			} else {
				int config = depth == 0 && cx->dtype &&
				             strcmp(name, "config.json") == 0;
				if (config)
					rc = copy_config(s, t, st.st_mode, cx->dtype, cx->fn,
					                 cx->ctx, cx->err);
				else
					rc = copy_file(s, t, st.st_mode, cx->err);
				if (rc == ST_OK)
					st_problem_report(cx->fn, cx->ctx, ST_PROBLEM_NOTE, "copied %s%s%s", s,
					     config ? " with torch_dtype " : "",
					     config ? cx->dtype : "");
			}
		} else {
			rc = st__error(cx->err, ST_EIO,
			               "%s: cannot copy: not a regular file or directory", s);
		}
		free(s);
		free(t);
	}
	if (n >= 0)
		free_list(list, n);
	return rc;
}

int st_snapshot_copy_dir(st_snapshot *s, const char *src, const st_checkpoint *c,
                         const char *torch_dtype, st_problem_fn fn, void *ctx,
                         st_error *err)
{
	if (s->committed || !s->tmp)
		return st__error(err, ST_ESTATE, "%s: snapshot already committed", s->path);
	struct ids skip = {0};
	int rc = ST_OK;
	if (ids_of_checkpoint(&skip, c) != 0 || ids_add(&skip, s->tmp) != 0 ||
	    (s->exists && ids_add(&skip, s->path) != 0))
		rc = st__error(err, ST_ENOMEM, "%s: out of memory", src);
	char *root = NULL, *blobs = NULL;
	if (rc == ST_OK && !(root = realpath(src, NULL)))
		rc = st__error_sys(err, errno == ENOMEM ? ST_ENOMEM : ST_EIO, errno,
		                   "%s: cannot resolve", src);
	if (rc == ST_OK) {
		blobs = cache_blobs(root);
		struct copy_ctx cx = {&skip, root, blobs, torch_dtype, fn, ctx, err};
		rc = copy_tree(&cx, src, s->tmp, 0);
	}
	free(root);
	free(blobs);
	free(skip.id);
	return rc;
}

/* ---- what an existing target held ---------------------------------------------- */

/*
 * ST_EINVAL when the tree at path (not following links) holds an entry of
 * another file system than dev: a mount point. Replacing a directory moves
 * it aside and removes it, which must never reach into another file system
 * (doc/safety.md), so such a target is refused before anything is written.
 */
static int other_fs(const char *path, dev_t dev, int depth, st_error *err)
{
	if (depth > MAX_DEPTH)
		return st__error(err, ST_EIO, "%s: directories nested too deep", path);
	struct dirent **list;
	int n;
	int rc = list_dir(path, &list, &n, err);
	for (int i = 0; i < n && rc == ST_OK; i++) {
		char *p = join(path, list[i]->d_name);
		struct stat st;
		if (!p)
			rc = st__error(err, ST_ENOMEM, "%s: out of memory", path);
		else if (lstat(p, &st) != 0)
			rc = st__error_sys(err, ST_EIO, errno, "%s", p);
		else if (st.st_dev != dev)
			rc = st__error(err, ST_EINVAL,
			               "%s: a mount point (another file system); a directory "
			               "holding one is not replaced: unmount it or choose "
			               "another output", p);
		else if (S_ISDIR(st.st_mode))
			rc = other_fs(p, dev, depth + 1, err);
		free(p);
	}
	if (n >= 0)
		free_list(list, n);
	return rc;
}

/*
 * Give new entry t the owner and permission bits of old entry st: a
 * directory is made with the umask applied and a copy is owned by the
 * writer. An owner that cannot be given (not root) is left as it is.
 */
static int keep_attrs(const char *t, const struct stat *st, st_error *err)
{
	if (lchown(t, st->st_uid, st->st_gid) != 0 && errno != EPERM)
		return st__error_sys(err, ST_EIO, errno, "%s: cannot set the owner", t);
	if (!S_ISLNK(st->st_mode) && chmod(t, st->st_mode & 07777) != 0)
		return st__error_sys(err, ST_EIO, errno, "%s: cannot set the mode", t);
	return ST_OK;
}

/* Is name a file of a checkpoint layout (which the new output replaces)? */
static int is_layout_name(const char *name, char **old_files, size_t n_old)
{
	if (strcmp(name, "model.safetensors") == 0 ||
	    strcmp(name, "model.safetensors.index.json") == 0)
		return 1;
	/* model-00001-of-00002.safetensors */
	static const char pattern[] = "model-#####-of-#####.safetensors";
	if (strlen(name) == sizeof pattern - 1) {
		size_t i = 0;
		while (pattern[i] && (pattern[i] == '#' ? name[i] >= '0' && name[i] <= '9' :
		                      pattern[i] == name[i]))
			i++;
		if (!pattern[i])
			return 1;
	}
	for (size_t i = 0; i < n_old; i++)
		if (strcmp(name, old_files[i]) == 0)
			return 1;
	return 0;
}

/*
 * Put old entry s at t in the new directory: files are hard-linked (copied
 * across file systems), symlinks re-created, directories rebuilt entry by
 * entry. Links cost no data copy and leave the old directory intact until
 * the swap.
 */
static int keep_entry(const char *s, const char *t, int depth, st_error *err)
{
	struct stat st;
	if (depth > MAX_DEPTH)
		return st__error(err, ST_EIO, "%s: directories nested too deep", s);
	if (lstat(s, &st) != 0)
		return st__error_sys(err, ST_EIO, errno, "%s: cannot keep", s);
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(t, 0700) != 0)
			return st__error_sys(err, ST_EIO, errno, "%s: cannot create directory", t);
		struct dirent **list;
		int n;
		int rc = list_dir(s, &list, &n, err);
		for (int i = 0; i < n && rc == ST_OK; i++) {
			char *s2 = join(s, list[i]->d_name), *t2 = join(t, list[i]->d_name);
			rc = s2 && t2 ? keep_entry(s2, t2, depth + 1, err)
			              : st__error(err, ST_ENOMEM, "%s: out of memory", s);
			free(s2);
			free(t2);
		}
		if (n >= 0)
			free_list(list, n);
		return rc == ST_OK ? keep_attrs(t, &st, err) : rc;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t len = readlink(s, target, sizeof target - 1);
		if (len < 0)
			return st__error_sys(err, ST_EIO, errno, "%s: cannot read link", s);
		target[len] = 0;
		if (symlink(target, t) != 0)
			return st__error_sys(err, ST_EIO, errno, "%s: cannot create link", t);
		return keep_attrs(t, &st, err);
	}
	if (S_ISREG(st.st_mode)) {
		if (link(s, t) == 0)
			return ST_OK;
		int rc = copy_file(s, t, st.st_mode, err);
		return rc == ST_OK ? keep_attrs(t, &st, err) : rc;
	}
	return st__error(err, ST_EIO,
	                 "%s: a special file; cannot keep it in the new directory", s);
}

/* The shard names the old target's index lists (plain names), or none. */
static char **old_layout(const char *dir, size_t *n_old)
{
	*n_old = 0;
	char *index = join(dir, "model.safetensors.index.json");
	st_checkpoint *c;
	char **names = NULL;
	if (index && access(index, F_OK) == 0 &&
	    st_checkpoint_open(&c, index, 0, NULL) == ST_OK) {
		size_t n = st_checkpoint_n_files(c);
		names = calloc(n ? n : 1, sizeof *names);
		for (size_t i = 0; names && i < n; i++) {
			const char *p = st_file_path(st_checkpoint_file(c, i));
			const char *slash = strrchr(p, '/');
			if ((names[i] = strdup(slash ? slash + 1 : p)) != NULL)
				++*n_old;
		}
		st_checkpoint_close(c);
	}
	free(index);
	return names;
}

int st_snapshot_keep_old(st_snapshot *s, const st_checkpoint *c,
                         st_problem_fn fn, void *ctx, st_error *err)
{
	if (s->committed || !s->tmp)
		return st__error(err, ST_ESTATE, "%s: snapshot already committed", s->path);
	if (!s->exists)
		return ST_OK;
	/* In place, the safetensors files read are the earlier layout and go;
	 * a PyTorch file is another format, and stays where the user put it. */
	struct ids in_place = {0};
	struct stat a, b;
	int rc = ST_OK;
	if (c && st_checkpoint_n_files(c) > 0 &&
	    st_file_format(st_checkpoint_file(c, 0)) != ST_FORMAT_TORCH &&
	    stat(st_checkpoint_path(c), &a) == 0 && stat(s->path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
	    ids_of_checkpoint(&in_place, c) != 0)
		rc = st__error(err, ST_ENOMEM, "%s: out of memory", s->path);
	size_t n_old = 0;
	char **old_files = rc == ST_OK ? old_layout(s->path, &n_old) : NULL;
	struct dirent **list = NULL;
	int n_list = -1;
	if (rc == ST_OK)
		rc = list_dir(s->path, &list, &n_list, err);
	for (int i = 0; i < n_list && rc == ST_OK; i++) {
		const char *name = list[i]->d_name;
		char *src = join(s->path, name), *dst = join(s->tmp, name);
		struct stat st;
		if (!src || !dst) {
			rc = st__error(err, ST_ENOMEM, "%s: out of memory", s->path);
		} else if (lstat(dst, &st) == 0) {
			/* Replaced by the new output. */
		} else if (st__temp_is_stale(name)) {
			st_problem_report(fn, ctx, ST_PROBLEM_NOTE,
			     "not kept: %s (a temporary of a writer that is gone)", src);
		} else if (is_layout_name(name, old_files, n_old) ||
		           (stat(src, &st) == 0 && S_ISREG(st.st_mode) &&
		            ids_has(&in_place, &st))) {
			st_problem_report(fn, ctx, ST_PROBLEM_NOTE, "removed %s (earlier layout)", src);
		} else {
			rc = keep_entry(src, dst, 0, err);
			if (rc == ST_OK)
				st_problem_report(fn, ctx, ST_PROBLEM_NOTE, "kept %s", src);
		}
		free(src);
		free(dst);
	}
	if (n_list >= 0)
		free_list(list, n_list);
	for (size_t i = 0; old_files && i < n_old; i++)
		free(old_files[i]);
	free(old_files);
	free(in_place.id);
	return rc;
}

/* ---- commit -------------------------------------------------------------------- */

static char *parent_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

int st_snapshot_commit(st_snapshot *s, st_error *err)
{
	if (s->committed || !s->tmp)
		return st__error(err, ST_ESTATE, "%s: snapshot already committed", s->path);
	char *parent = parent_of(s->path);
	if (!parent)
		return st__error(err, ST_ENOMEM, "%s: out of memory", s->path);
	if (s->exists && chmod(s->tmp, s->mode) != 0) {
		free(parent);
		return st__error_sys(err, ST_EIO, errno,
		                     "%s: cannot set the mode of the new directory", s->tmp);
	}
	/* The new tree's entries must be on disk before it replaces the old
	 * one; when they cannot be, the target stays as it was. */
	int e = fsync_tree(s->tmp);
	if (e) {
		free(parent);
		return st__error_sys(err, ST_EIO, e, "%s: cannot sync the new directory",
		                     s->path);
	}
	int rc = ST_OK;
	if (!s->exists) {
		if (renameat2(AT_FDCWD, s->tmp, AT_FDCWD, s->path, RENAME_NOREPLACE) != 0 &&
		    ((errno != EINVAL && errno != ENOSYS) || rename(s->tmp, s->path) != 0))
			rc = st__error_sys(err, ST_EIO, errno,
			                   "%s: cannot rename the new directory into place",
			                   s->path);
		if (rc == ST_OK) {
			free(s->tmp);
			s->tmp = NULL;
		}
	} else if (renameat2(AT_FDCWD, s->tmp, AT_FDCWD, s->path, RENAME_EXCHANGE) == 0) {
		/* tmp now holds the old directory; it goes below. */
	} else if (errno != EINVAL && errno != ENOSYS) {
		rc = st__error_sys(err, ST_EIO, errno,
		                   "%s: cannot swap the new directory into place", s->path);
	} else {
		/* No exchange here: move the old one aside (under a temporary
		 * name, so a crash now leaves it to the next writer's sweep). */
		char *aside = NULL;
		e = st__temp_name(s->path, &aside, 0);
		if (e)
			rc = st__error_sys(err, ST_EIO, e, "%s: cannot name the old directory",
			                   s->path);
		else if (rename(s->path, aside) != 0)
			rc = st__error_sys(err, ST_EIO, errno,
			                   "%s: cannot move the old directory aside", s->path);
		else if (rename(s->tmp, s->path) != 0) {
			e = errno;
			rename(aside, s->path);
			rc = st__error_sys(err, ST_EIO, e,
			                   "%s: cannot rename the new directory into place",
			                   s->path);
		} else {
			free(s->tmp);
			s->tmp = aside;
			aside = NULL;
		}
		free(aside);
	}
	if (rc == ST_OK) {
		s->committed = 1;
		e = fsync_path(parent);
		/* The old directory, now under the temporary name. */
		if (s->tmp) {
			st__rm_tree(s->tmp);
			free(s->tmp);
			s->tmp = NULL;
		}
		/* The new directory is in place; a failed sync only means that it
		 * may not survive a crash, which the caller still needs to hear
		 * about (as from st_atomic_commit). */
		if (e)
			rc = st__error_sys(err, ST_EIO, e, "%s: cannot sync its directory",
			                   s->path);
	}
	free(parent);
	return rc;
}
