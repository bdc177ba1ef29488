/*
 * index.c - checkpoints: a file, a shard index, or a snapshot directory
 * opened as one set of tensors (st/index.h; doc/index.md), and the full check of
 * such a PATH (every format rule of every file, and I1-I5).
 *
 * It reads headers only. Writing an index is in index_write.c.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tref {
	size_t file, idx;
};

struct st_checkpoint {
	char *path, *index_path, *dir;
	st_file **files;
	size_t n_files;
	struct tref *t;
	size_t n_t;
	size_t *by_name; /* indices into t, sorted by name */
	uint64_t data_bytes;
};

#define ends_with st__ends_with
#define join st__path_join

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static int is_file(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* resolve()'s *is_index for a PyTorch index (pytorch_model.bin.index.json). */
#define TORCH_INDEX 2

/*
 * Resolve PATH to the index or the safetensors file it stands for.
 * *resolved is malloc'd; *is_index says which it is.
 */
static int resolve(const char *path, unsigned flags, char **resolved,
                   int *is_index, st_error *err)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		return st__error_sys(err, ST_EIO, errno, "%s", path);
	if (!S_ISDIR(sb.st_mode)) {
		*is_index = ends_with(path, ".json") ? 1 : 0;
		if (*is_index && (flags & ST_OPEN_TORCH) &&
		    ends_with(path, ".bin.index.json"))
			*is_index = TORCH_INDEX;
		*resolved = strdup(path);
		return *resolved ? ST_OK : st__error(err, ST_ENOMEM, "out of memory");
	}
	char *p = join(path, "model.safetensors.index.json");
	if (p && is_file(p)) {
		*is_index = 1;
		*resolved = p;
		return ST_OK;
	}
	free(p);
	p = join(path, "model.safetensors");
	if (p && is_file(p)) {
		*is_index = 0;
		*resolved = p;
		return ST_OK;
	}
	free(p);
	p = NULL;
	DIR *d = opendir(path);
	if (!d)
		return st__error_sys(err, ST_EIO, errno, "%s", path);
	char *file = NULL, *index = NULL;
	size_t n_files = 0, n_index = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (ends_with(de->d_name, ".safetensors")) {
			if (n_files++ == 0)
				file = join(path, de->d_name);
		} else if (ends_with(de->d_name, ".safetensors.index.json")) {
			if (n_index++ == 0)
				index = join(path, de->d_name);
		}
	}
	closedir(d);
	int rc = ST_OK;
	if (n_index == 1) {
		*is_index = 1;
		*resolved = index;
		index = NULL;
	} else if (n_files == 1) {
		*is_index = 0;
		*resolved = file;
		file = NULL;
	} else if (n_files == 0 && n_index == 0 && (flags & ST_OPEN_TORCH) &&
	           (p = join(path, "pytorch_model.bin.index.json")) && is_file(p)) {
		*is_index = TORCH_INDEX;
		*resolved = p;
		p = NULL;
	} else if (n_files == 0 && n_index == 0 && (flags & ST_OPEN_TORCH) &&
	           (free(p), p = join(path, "pytorch_model.bin")) && is_file(p)) {
		*is_index = 0;
		*resolved = p;
		p = NULL;
	} else if (n_files == 0 && n_index == 0)
		rc = st__error(err, ST_ENOTFOUND,
		               "%s: no model.safetensors, index or .safetensors file "
		               "in this directory", path);
	else
		rc = st__error(err, ST_ENOTFOUND,
		               "%s: %zu .safetensors files and %zu indexes, none named "
		               "model.safetensors[.index.json]: name the file or index",
		               path, n_files, n_index);
	free(file);
	free(index);
	free(p);
	return rc;
}

static int read_text(const char *path, char **text, size_t *len, st_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return st__error_sys(err, ST_EIO, errno, "%s", path);
	struct stat sb;
	if (fstat(fileno(f), &sb) < 0 || !S_ISREG(sb.st_mode)) {
		fclose(f);
		return st__error(err, ST_EIO, "%s: not a regular file", path);
	}
	/* Indexes of the largest models are a few MB; refuse absurd sizes. */
	if (sb.st_size > 256 * 1024 * 1024) {
		fclose(f);
		return st__error(err, ST_EINDEX, "%s: index is %lld bytes, larger "
		                 "than the 256 MiB limit", path,
		                 (long long)sb.st_size);
	}
	size_t n = (size_t)sb.st_size;
	char *buf = malloc(n + 1);
	if (!buf) {
		fclose(f);
		return st__error(err, ST_ENOMEM, "%s: out of memory", path);
	}
	size_t got = fread(buf, 1, n, f);
	int bad = ferror(f);
	fclose(f);
	if (bad || got != n) {
		free(buf);
		return st__error(err, ST_EIO, "%s: read error", path);
	}
	buf[n] = 0;
	*text = buf;
	*len = n;
	return ST_OK;
}

static const st_tensor *tensor_of(const st_checkpoint *c, size_t i)
{
	return st_file_tensor(c->files[c->t[i].file], c->t[i].idx);
}

#define name_cmp st__bytes_cmp

/* A sort record carries what the comparator needs: no shared state. */
struct sort_rec {
	const st_tensor *t;
	size_t i;
};

static int by_name_cmp(const void *x, const void *y)
{
	const struct sort_rec *ra = x, *rb = y;
	int c = name_cmp(ra->t->name, ra->t->name_len, rb->t->name,
	                 rb->t->name_len);
	if (c)
		return c;
	return ra->i < rb->i ? -1 : ra->i > rb->i;
}

/* Fill c->t and c->by_name from c->files. */
static int build_table(st_checkpoint *c, st_error *err)
{
	size_t n = 0;
	for (size_t f = 0; f < c->n_files; f++)
		n += st_file_n_tensors(c->files[f]);
	c->t = malloc((n ? n : 1) * sizeof *c->t);
	c->by_name = malloc((n ? n : 1) * sizeof *c->by_name);
	if (!c->t || !c->by_name)
		return st__error(err, ST_ENOMEM, "out of memory");
	c->data_bytes = 0;
	for (size_t f = 0; f < c->n_files; f++)
		for (size_t i = 0; i < st_file_n_tensors(c->files[f]); i++) {
			c->t[c->n_t] = (struct tref){f, i};
			c->by_name[c->n_t] = c->n_t;
			c->data_bytes += st_file_tensor(c->files[f], i)->n_bytes;
			c->n_t++;
		}
	struct sort_rec *rec = malloc((n ? n : 1) * sizeof *rec);
	if (!rec)
		return st__error(err, ST_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		rec[i] = (struct sort_rec){tensor_of(c, i), i};
	qsort(rec, n, sizeof *rec, by_name_cmp);
	for (size_t i = 0; i < n; i++)
		c->by_name[i] = rec[i].i;
	free(rec);
	return ST_OK;
}

static int file_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The distinct shard names of an index, sorted. */
static char **shard_names(const struct st__index *ix, size_t *n)
{
	char **names = malloc((ix->n ? ix->n : 1) * sizeof *names);
	if (!names)
		return NULL;
	for (size_t i = 0; i < ix->n; i++)
		names[i] = ix->e[i].file;
	qsort(names, ix->n, sizeof *names, file_cmp);
	size_t m = 0;
	for (size_t i = 0; i < ix->n; i++)
		if (m == 0 || strcmp(names[m - 1], names[i]) != 0)
			names[m++] = names[i];
	*n = m;
	return names;
}

/*
 * Position of file among the n sorted shard names, or n. A binary search:
 * scanning the names for each of 100k index entries was quadratic.
 */
static size_t shard_find(char **names, size_t n, const char *file)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(names[mid], file);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return n;
}

static long entry_find(const struct st__index *ix, const char *name,
                       size_t len)
{
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = name_cmp(ix->e[mid].name, ix->e[mid].name_len, name, len);
		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/*
 * I3 (and I4 when total_size is known and every shard opened): report
 * each problem. files[k] may be NULL for a shard that failed to open.
 */
static void check_listing(const struct st__index *ix, char **names,
                          st_file **files, size_t n_files, int all_open,
                          struct st__report *r)
{
	uint64_t total = 0;
	for (size_t i = 0; i < ix->n && !st__report_stop(r); i++) {
		const struct st__index_entry *e = &ix->e[i];
		size_t k = shard_find(names, n_files, e->file);
		if (k == n_files || !files[k])
			continue; /* the shard's own problem was reported */
		if (st_file_find(files[k], e->name, e->name_len) < 0)
			st__report(r, ST_PROBLEM_ERROR,
			           "weight_map: tensor '%s' is not in shard '%s' (I3)",
			           e->name, e->file);
	}
	for (size_t k = 0; k < n_files && !st__report_stop(r); k++) {
		if (!files[k])
			continue;
		for (size_t i = 0; i < st_file_n_tensors(files[k]); i++) {
			const st_tensor *t = st_file_tensor(files[k], i);
			total += t->n_bytes;
			long j = entry_find(ix, t->name, t->name_len);
			if (j < 0)
				st__report(r, ST_PROBLEM_ERROR,
				           "shard '%s' holds tensor '%s', which the index "
				           "does not list (I3)", names[k], t->name);
			else if (strcmp(ix->e[j].file, names[k]) != 0)
				st__report(r, ST_PROBLEM_ERROR,
				           "shard '%s' holds tensor '%s', which the index "
				           "places in shard '%s' (I3)", names[k], t->name,
				           ix->e[j].file);
			if (st__report_stop(r))
				return;
		}
	}
	if (all_open && ix->has_total && ix->total_size != total)
		st__report(r, ST_PROBLEM_ERROR,
		           "metadata total_size is %llu, but the shards hold %llu "
		           "bytes of tensor data (I4)",
		           (unsigned long long)ix->total_size,
		           (unsigned long long)total);
}

/*
 * Open (r->fn == NULL) or check (r->fn set) an index: the files are opened
 * into c. In open mode the first problem stops it.
 */
static int open_index(st_checkpoint *c, const char *index_path, int torch,
                      struct st__report *r)
{
	char *text = NULL;
	size_t len = 0;
	struct st__index ix;
	int rc = read_text(index_path, &text, &len, r->err);
	if (rc)
		return rc;
	rc = st__index_parse_shards(&ix, text, len,
	                            torch ? ".bin" : ".safetensors", r);
	free(text);
	if (rc) {
		if (r->err && r->err->code == ST_EFORMAT)
			r->err->code = ST_EINDEX;
		return rc == ST_EFORMAT ? ST_EINDEX : rc;
	}
	size_t n_names = 0;
	char **names = shard_names(&ix, &n_names);
	c->files = calloc(n_names ? n_names : 1, sizeof *c->files);
	if (!names || !c->files) {
		free(names);
		st__index_free(&ix);
		return st__error(r->err, ST_ENOMEM, "out of memory");
	}
	c->n_files = n_names;
	/* For each shard, the first tensor (by name) that needs it. */
	const char **who = calloc(n_names ? n_names : 1, sizeof *who);
	if (!who) {
		free(names);
		st__index_free(&ix);
		return st__error(r->err, ST_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < ix.n; i++) {
		size_t k = shard_find(names, n_names, ix.e[i].file);
		if (k < n_names && !who[k])
			who[k] = ix.e[i].name;
	}
	int all_open = 1;
	for (size_t k = 0; k < n_names; k++) {
		char *p = join(c->dir, names[k]);
		if (!p) {
			rc = st__error(r->err, ST_ENOMEM, "out of memory");
			break;
		}
		if (!is_file(p)) {
			/* Name a tensor that needs the shard: the user's next step. */
			st__report(r, ST_PROBLEM_ERROR,
			           "weight_map: tensor '%s' refers to missing shard '%s' "
			           "(I5)", who[k] ? who[k] : "", names[k]);
			free(p);
			all_open = 0;
			if (st__report_stop(r)) {
				rc = ST_EINDEX;
				break;
			}
			continue;
		}
		struct st__report sr = {.path = p, .fn = r->fn, .ctx = r->ctx,
		                        .err = r->err, .keys = r->keys,
		                        .n_keys = r->n_keys};
		int frc = st__file_open_report(&c->files[k], p,
		                               torch ? ST_OPEN_TORCH : 0, &sr);
		r->n_errors += sr.n_errors;
		if (frc || sr.n_errors)
			all_open = 0;
		/* A read that failed (EIO) says nothing of the shard: no answer. */
		if (frc == ST_EIO && r->err && r->err->sys_errno == EIO) {
			free(p);
			rc = frc;
			break;
		}
		if (frc && r->fn && frc != ST_ENOMEM) {
			if (frc == ST_EIO) {
				/* An unreadable shard is a problem of the checkpoint. */
				st__report(r, ST_PROBLEM_ERROR, "shard %s",
				           r->err ? r->err->message : "unreadable");
			}
			free(p);
			continue;
		}
		free(p);
		if (frc) {
			rc = frc;
			break;
		}
	}
	if (rc == ST_OK && (r->fn || !st__report_stop(r)))
		check_listing(&ix, names, c->files, n_names, all_open, r);
	if (rc == ST_OK && !r->fn && r->n_errors)
		rc = ST_EINDEX;
	if (rc == ST_EINDEX && r->err)
		r->err->code = ST_EINDEX;
	/* The files left NULL (check mode) are dropped from the table. */
	size_t m = 0;
	for (size_t k = 0; k < c->n_files; k++)
		if (c->files[k])
			c->files[m++] = c->files[k];
	c->n_files = m;
	free(who);
	free(names);
	st__index_free(&ix);
	return rc;
}

static int checkpoint_open(st_checkpoint **out, const char *path,
                           unsigned flags, struct st__report *r)
{
	st_error *err = r->err;
	char *resolved = NULL;
	int is_index = 0;
	*out = NULL;
	int rc = resolve(path, flags, &resolved, &is_index, err);
	if (rc)
		return rc;
	st_checkpoint *c = calloc(1, sizeof *c);
	if (!c) {
		free(resolved);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	c->path = strdup(path);
	c->dir = dir_of(resolved);
	if (!c->path || !c->dir) {
		free(resolved);
		st_checkpoint_close(c);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	if (is_index) {
		c->index_path = resolved;
		r->path = resolved;
		rc = open_index(c, resolved, is_index == TORCH_INDEX, r);
	} else {
		c->files = calloc(1, sizeof *c->files);
		if (!c->files)
			rc = st__error(err, ST_ENOMEM, "out of memory");
		else {
			r->path = resolved;
			rc = st__file_open_report(&c->files[0], resolved, flags, r);
			c->n_files = c->files[0] ? 1 : 0;
		}
		free(resolved);
	}
	if (rc == ST_OK)
		rc = build_table(c, err);
	if (rc) {
		st_checkpoint_close(c);
		return rc;
	}
	*out = c;
	return ST_OK;
}

int st_checkpoint_open(st_checkpoint **out, const char *path, unsigned flags,
                       st_error *err)
{
	struct st__report r = {.path = path, .err = err};
	return checkpoint_open(out, path, flags, &r);
}

int st_checkpoint_open_key(st_checkpoint **out, const char *path,
                           unsigned flags, const char *const *keys,
                           size_t n_keys, st_error *err)
{
	struct st__report r = {.path = path, .err = err, .keys = keys,
	                       .n_keys = n_keys};
	return checkpoint_open(out, path, flags, &r);
}

int st_checkpoint_from_file(st_checkpoint **out, st_file *f, st_error *err)
{
	*out = NULL;
	st_checkpoint *c = calloc(1, sizeof *c);
	if (!c || !(c->path = strdup(st_file_path(f))) ||
	    !(c->files = calloc(1, sizeof *c->files))) {
		st_file_close(f);
		st_checkpoint_close(c);
		return st__error(err, ST_ENOMEM, "out of memory");
	}
	c->files[0] = f;
	c->n_files = 1;
	int rc = build_table(c, err);
	if (rc) {
		st_checkpoint_close(c);
		return rc;
	}
	*out = c;
	return ST_OK;
}

void st_checkpoint_close(st_checkpoint *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_files; i++)
		st_file_close(c->files[i]);
	free(c->files);
	free(c->t);
	free(c->by_name);
	free(c->path);
	free(c->index_path);
	free(c->dir);
	free(c);
}

const char *st_checkpoint_path(const st_checkpoint *c) { return c->path; }
const char *st_checkpoint_index_path(const st_checkpoint *c)
{
	return c->index_path;
}
const char *st_checkpoint_dir(const st_checkpoint *c) { return c->dir; }
size_t st_checkpoint_n_files(const st_checkpoint *c) { return c->n_files; }

st_file *st_checkpoint_file(const st_checkpoint *c, size_t i)
{
	ST__REQUIRE(i < c->n_files);
	return c->files[i];
}

size_t st_checkpoint_n_tensors(const st_checkpoint *c) { return c->n_t; }

const st_tensor *st_checkpoint_tensor(const st_checkpoint *c, size_t i,
                                      size_t *file)
{
	ST__REQUIRE(i < c->n_t);
	if (file)
		*file = c->t[i].file;
	return tensor_of(c, i);
}

long st_checkpoint_find(const st_checkpoint *c, const char *name, size_t len)
{
	size_t lo = 0, hi = c->n_t;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const st_tensor *t = tensor_of(c, c->by_name[mid]);
		int cmp = name_cmp(t->name, t->name_len, name, len);
		if (cmp == 0)
			return (long)c->by_name[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

uint64_t st_checkpoint_data_bytes(const st_checkpoint *c)
{
	return c->data_bytes;
}

int st_checkpoint_data(st_checkpoint *c, size_t i, const void **data,
                       st_error *err)
{
	ST__REQUIRE(i < c->n_t);
	return st_file_data(c->files[c->t[i].file], c->t[i].idx, data, err);
}

int st_checkpoint_read(st_checkpoint *c, size_t i, uint64_t off, void *buf,
                       size_t n, st_error *err)
{
	ST__REQUIRE(i < c->n_t);
	return st_file_read(c->files[c->t[i].file], c->t[i].idx, off, buf, n,
	                    err);
}

/*
 * A warning for each leftover of a writer that is gone in folder path
 * (st__temp_is_stale): not an error, since the snapshot beside it may be
 * fine, but not part of it either.
 */
static void warn_leftovers(const char *path, st_problem_fn fn, void *ctx)
{
	struct stat st;
	if (!fn || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return;
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!st__temp_is_stale(e->d_name))
			continue;
		char msg[1024];
		snprintf(msg, sizeof msg, "%.480s/%.400s: " ST__LEFTOVER_MSG, path,
		         e->d_name);
		fn(ctx, ST_PROBLEM_WARNING, msg);
	}
	closedir(d);
}

int st_check_path(const char *path, st_problem_fn fn, void *ctx, st_error *err)
{
	st_error local;
	if (!err)
		err = &local;
	struct st__report r = {.path = path, .fn = fn, .ctx = ctx, .err = err};
	st_checkpoint *c = NULL;
	/* A PyTorch checkpoint is checked too: its pickle, views, CRCs. */
	int rc = checkpoint_open(&c, path, ST_OPEN_TORCH, &r);
	st_checkpoint_close(c);
	/* PATH itself unreadable (or nothing to check in a directory). */
	if (rc == ST_EIO || rc == ST_ENOMEM)
		return rc;
	if (rc == ST_ENOTFOUND) {
		if (fn)
			fn(ctx, ST_PROBLEM_ERROR, err->message);
		return r.n_errors + 1;
	}
	warn_leftovers(path, fn, ctx);
	return r.n_errors;
}
