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
 * The paths and links are in verify_fs.c, the plan's jobs and the reading
 * threads in verify_jobs.c, the Hugging Face cache layout in verify_hf.c;
 * this file holds the results, plain folders with their checksum sidecars,
 * what a PATH is, and the public calls.
 */
#include "verify_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ST_PRINTF(1, 0) static char *vfmt(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

char *st__verify_fmt(const char *f, ...)
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
void st__verify_problem(st_verify *v, int kind, const char *path,
                        const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	char *what = vfmt(f, ap);
	va_end(ap);
	/* path is the real name (for JSON); message is one line. */
	char *p = strdup(path), *op = one_line(path);
	char *w = what ? one_line(what) : NULL;
	char *msg = op && w ? st__verify_fmt("%s: %s", op, w) : NULL;
	free(what);
	free(w);
	free(op);
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

int st__verify_leftover(st_verify *v, const char *full, const char *name)
{
	if (!st__temp_is_stale(name))
		return 0;
	st__verify_problem(v, ST_VERIFY_LEFTOVER, full, ST__LEFTOVER_MSG);
	return 1;
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

/*
 * A name of sha256sum's escaped form (its line starts with a backslash)
 * decoded in place: \\ is a backslash, \n a newline, \r a carriage
 * return. Returns -1 for any other escape (a malformed line).
 */
static int unescape_name(char *s)
{
	char *o = s;
	for (const char *c = s; *c; c++) {
		if (*c != '\\') {
			*o++ = *c;
			continue;
		}
		c++;
		if (*c == '\\')
			*o++ = '\\';
		else if (*c == 'n')
			*o++ = '\n';
		else if (*c == 'r')
			*o++ = '\r';
		else
			return -1;
	}
	*o = '\0';
	return 0;
}

/*
 * Parse SHA256SUMS: "<64 hex> <space or *><name>" per line, or sha256sum's
 * escaped form "\<64 hex> <space or *><name with \\ and \n>".
 */
static void load_sidecar(st_verify *v, const char *path, struct sidecar *sc)
{
	size_t len = 0;
	int io;
	char *text = st__verify_read_small(path, &len, &io);
	memset(sc, 0, sizeof *sc);
	if (!text) {
		st__verify_problem(v, io ? ST_VERIFY_READ_ERROR : ST_VERIFY_BAD_LISTING, path,
		                   "cannot read: %s", strerror(errno));
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
		int esc = n && line[0] == '\\';
		char *l = line + esc;
		n -= (size_t)esc;
		if (!esc && (n == 0 || line[0] == '#')) {
			/* blank or comment */
		} else if (n < 67 || l[64] != ' ' || (l[65] != ' ' && l[65] != '*')) {
			st__verify_problem(v, ST_VERIFY_BAD_LISTING, path,
			                   "line %zu is not '<sha256>  <file>'; ignored", no);
		} else {
			char hex[65];
			memcpy(hex, l, 64);
			hex[64] = '\0';
			struct sum *s = &sc->e[sc->n];
			char *name = l + 66;
			int bad = esc && unescape_name(name) < 0;
			while (!strncmp(name, "./", 2))
				name += 2;
			if (bad || st_hash_unhex(hex, 32, s->digest) < 0 || !*name) {
				st__verify_problem(v, ST_VERIFY_BAD_LISTING, path,
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
	else if (sc->n == 0)
		st__verify_problem(v, ST_VERIFY_BAD_LISTING, path, "lists no file; "
		                   "nothing is verified against it");
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
	int has_sums;       /* a SHA256SUMS was read: every file must be in it */
	int hash_mode;
};

/*
 * A job for one regular file found at rel (disk: the link-free path);
 * s is its sidecar entry or NULL.
 */
static void folder_file(struct folder *fo, const char *rel, const char *disk,
                        struct sum *s)
{
	char *full = st__verify_join(fo->root, rel);
	int validate = st__verify_validator(rel);
	if (!full) {
		fo->v->oom = 1;
		return;
	}
	/* A partial manifest: what it leaves out is not verified, and says so. */
	if (!s && fo->has_sums && !fo->hash_mode)
		st__verify_problem(fo->v, ST_VERIFY_UNCHECKED, full, "not listed in "
		                   "SHA256SUMS; its bytes are not verified");
	/* Nothing to compare and nothing to check: not read. */
	if (!s && validate == V_NONE && !fo->hash_mode) {
		free(full);
		return;
	}
	struct job *j = st__verify_plan_add(fo->pl);
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
	char *dir = st__verify_join(fo->root, sub);
	size_t n;
	char **names = dir ? st__verify_list_dir(fo->v, dir, &n) : NULL;
	for (size_t i = 0; names && i < n; i++) {
		char *rel = st__verify_join(sub, names[i]);
		char *full = rel ? st__verify_join(fo->root, rel) : NULL;
		struct stat sb;
		if (!full) {
			fo->v->oom = 1;
		} else if (!*sub && !strcmp(names[i], "SHA256SUMS")) {
			/* the sidecar itself */
		} else if (st__verify_leftover(fo->v, full, names[i])) {
			struct sum *sum = sidecar_find(&fo->sc, rel);
			if (sum)
				sum->seen = 1; /* its problem is the leftover's */
		} else if (lstat(full, &sb) < 0) {
			st__verify_problem(fo->v, ST_VERIFY_UNREADABLE, full, "cannot read: %s",
			                   strerror(errno));
		} else if (S_ISDIR(sb.st_mode)) {
			if (depth < MAX_DEPTH)
				walk_folder(fo, rel, depth + 1);
		} else if (S_ISREG(sb.st_mode)) {
			folder_file(fo, rel, full, sidecar_find(&fo->sc, rel));
		} else if (S_ISLNK(sb.st_mode)) {
			char *brel = st__verify_join(fo->below, rel);
			char *to = brel ? st__verify_follow_link(fo->v, fo->bound, brel, fo->what)
			                : NULL;
			char *disk = to ? st__verify_join(fo->bound, to) : NULL;
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
			st__verify_problem(fo->v, ST_VERIFY_NOT_REGULAR, full,
			                   "not a regular file (a FIFO, device or socket); "
			                   "skipped, not read");
		}
		free(rel);
		free(full);
	}
	st__verify_free_names(names);
	free(dir);
}

static void plan_folder(st_verify *v, struct plan *pl, const char *root,
                        int hash_mode, const char *bound, const char *below)
{
	struct folder fo = {.v = v, .pl = pl, .root = root, .hash_mode = hash_mode,
	                    .bound = bound ? bound : root, .below = below ? below : "",
	                    .what = bound ? "the cache" : "the folder"};
	char *sums = st__verify_join(root, "SHA256SUMS");
	struct stat sb;
	if (!hash_mode && sums && lstat(sums, &sb) == 0) {
		load_sidecar(v, sums, &fo.sc);
		fo.has_sums = v->sidecar;
	}
	walk_folder(&fo, "", 0);
	for (size_t i = 0; i < fo.sc.n; i++) {
		if (fo.sc.e[i].seen)
			continue;
		char *full = st__verify_join(root, fo.sc.e[i].name);
		if (full)
			st__verify_problem(v, ST_VERIFY_MISSING_FILE, full,
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
	char *sums = dir ? st__verify_fmt("%sSHA256SUMS", dir) : NULL;
	struct folder fo = {.v = v, .pl = pl, .root = "", .bound = "", .below = "",
	                    .what = "the folder", .hash_mode = hash_mode};
	struct stat sb;
	if (!hash_mode && sums && lstat(sums, &sb) == 0) {
		load_sidecar(v, sums, &fo.sc);
		fo.has_sums = v->sidecar;
	}
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
	char *p = st__verify_join(dir, name);
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
	char *parent = st__verify_fmt("%s/..", p), *grand = st__verify_fmt("%s/../..", p);
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
	char *below = repo ? st__verify_fmt("snapshots/%s", base) : NULL;
	if (hash_mode) {
		v->layout = ST_VERIFY_LAYOUT_FOLDER;
		/* A snapshot's links into blobs/ stay in its cache: follow them. */
		plan_folder(v, pl, p, 1, below ? repo : NULL, below);
	} else if (is_dir(p, "snapshots") || is_dir(p, "blobs")) {
		v->layout = ST_VERIFY_LAYOUT_REPO;
		st__verify_plan_repo(v, pl, p, NULL);
	} else if (is_snap) {
		v->layout = ST_VERIFY_LAYOUT_SNAPSHOT;
		if (repo)
			st__verify_plan_repo(v, pl, repo, base);
	} else {
		size_t n;
		char **names = st__verify_list_dir(v, p, &n);
		size_t repos = 0;
		for (size_t i = 0; names && i < n; i++)
			if (is_repo_name(names[i]) && is_dir(p, names[i])) {
				char *rd = st__verify_join(p, names[i]);
				if (rd)
					st__verify_plan_repo(v, pl, rd, NULL);
				free(rd);
				repos++;
			}
		st__verify_free_names(names);
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
		st__verify_run_plan(v, &pl);
	/* "OK" means something was checked. */
	if (rc == ST_OK && !(v->opt->flags & ST_VERIFY_HASH) && v->n_files == 0)
		st__verify_problem(v, ST_VERIFY_UNCHECKED, path, "nothing verified: no "
		                   "file was read");
	for (size_t i = 0; i < pl.n; i++)
		st__verify_job_free(&pl.j[i]);
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
		"bad-listing", "invalid", "unchecked", "read-error", "leftover",
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
