/*
 * verify_hf.c - a Hugging Face cache repository for st_verify: its
 * snapshots, their links to blobs, refs and trees listings, checked
 * against each other, and the plan of blobs to read. It does not read
 * the files (verify_jobs.c) and resolves links through verify_fs.c.
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
 */
#include "verify_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
		st__verify_problem(v, ST_VERIFY_ABSOLUTE_LINK, full,
		                   "absolute symlink to '%s' (%s links by relative paths); "
		                   "not followed", abs_target ? abs_target : target,
		                   boundary);
	else if (rc == RES_ESCAPES)
		st__verify_problem(v, ST_VERIFY_ESCAPING_LINK, full,
		                   "symlink to '%s' leads out of %s; not followed", target,
		                   boundary);
	else if (rc == RES_DANGLING)
		st__verify_problem(v, ST_VERIFY_DANGLING_LINK, full,
		                   "dangling symlink: '%s' does not exist", target);
	else if (rc == RES_LOOP)
		st__verify_problem(v, ST_VERIFY_DANGLING_LINK, full,
		                   "symlink '%s' never reaches a file (a loop)", target);
	else
		st__verify_problem(v, ST_VERIFY_UNREADABLE, full,
		                   "cannot resolve symlink '%s': %s", target, strerror(errno));
}

/*
 * Resolve the link at rel (below root) to a regular file; report what
 * goes wrong. Returns the link-free relative path (malloc'd) or NULL.
 */
char *st__verify_follow_link(st_verify *v, const char *root, const char *rel,
                             const char *boundary)
{
	char *to = NULL, *abs = NULL, *full = st__verify_join(root, rel);
	int rc = st__verify_resolve(root, rel, &to, &abs);
	if (!full) {
		v->oom = 1;
	} else if (rc != RES_OK) {
		link_problem(v, full, rc, abs, boundary);
	} else {
		char *tfull = st__verify_join(root, to);
		struct stat sb;
		if (tfull && lstat(tfull, &sb) == 0 && !S_ISREG(sb.st_mode)) {
			st__verify_problem(v, ST_VERIFY_NOT_REGULAR, full,
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
	char *base = st__verify_fmt("snapshots/%s%s%s", s->commit, *sub ? "/" : "", sub);
	char *dir = base ? st__verify_join(r->dir, base) : NULL;
	size_t n;
	char **names = dir ? st__verify_list_dir(r->v, dir, &n) : NULL;
	for (size_t i = 0; names && i < n; i++) {
		char *rel = st__verify_join(sub, names[i]);
		char *repo_rel = st__verify_join(base, names[i]);
		char *full = repo_rel ? st__verify_join(r->dir, repo_rel) : NULL;
		struct stat sb;
		struct entry *e = NULL;
		if (!rel || !full) {
			r->v->oom = 1;
		} else if (st__verify_leftover(r->v, full, names[i])) {
			/* not part of the snapshot: no entry */
		} else if (lstat(full, &sb) < 0) {
			st__verify_problem(r->v, ST_VERIFY_UNREADABLE, full, "cannot read: %s",
			                   strerror(errno));
		} else if (S_ISDIR(sb.st_mode)) {
			if (depth < MAX_DEPTH)
				walk_snapshot(r, s, rel, depth + 1);
		} else if (!S_ISLNK(sb.st_mode) && !S_ISREG(sb.st_mode)) {
			st__verify_problem(r->v, ST_VERIFY_NOT_REGULAR, full,
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
			char *to = st__verify_follow_link(r->v, r->dir, repo_rel, "the cache");
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
	st__verify_free_names(names);
	free(dir);
	free(base);
}

/* Load trees/<commit>.json when there is one. */
static void load_tree(struct repo *r, struct snapshot *s)
{
	char *rel = st__verify_fmt("trees/%s.json", s->commit);
	char *full = rel ? st__verify_join(r->dir, rel) : NULL;
	struct stat sb;
	if (full && lstat(full, &sb) == 0) {
		size_t len = 0;
		int io = 0;
		char *text = S_ISREG(sb.st_mode) ? st__verify_read_small(full, &len, &io) : NULL;
		char why[256];
		if (!text) {
			st__verify_problem(r->v, io ? ST_VERIFY_READ_ERROR : ST_VERIFY_BAD_LISTING, full,
			                   "cannot read the listing: %s",
			                   S_ISREG(sb.st_mode) ? strerror(errno)
			                                : "not a regular file");
		} else {
			int rc = st__tree_parse(&s->tree, text, len, why, sizeof why);
			if (rc == ST_OK)
				s->has_tree = 1;
			else if (rc != ST_EUNSUPPORTED) /* a newer layout: ignored */
				st__verify_problem(r->v, ST_VERIFY_BAD_LISTING, full,
				                   "listing not used: %s", why);
		}
		free(text);
	} else if (full && errno != ENOENT) {
		/* trees/ unreadable: the sizes and names it gives go unchecked. */
		st__verify_problem(r->v, ST_VERIFY_UNREADABLE, full,
		                   "cannot read the listing: %s; the sizes and files "
		                   "it gives are not checked", strerror(errno));
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
	char *rel = st__verify_join("refs", sub);
	char *dir = rel ? st__verify_join(r->dir, rel) : NULL;
	size_t n;
	char **names = dir ? st__verify_list_dir(r->v, dir, &n) : NULL;
	for (size_t i = 0; names && i < n; i++) {
		char *full = st__verify_join(dir, names[i]);
		struct stat sb;
		if (!full) {
			r->v->oom = 1;
		} else if (lstat(full, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			char *s2 = st__verify_join(sub, names[i]);
			if (s2 && depth < MAX_DEPTH)
				verify_refs(r, s2, depth + 1, only_commit);
			free(s2);
		} else {
			size_t len = 0;
			int io;
			char *text = st__verify_read_small(full, &len, &io);
			while (text && len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
				text[--len] = '\0';
			if (!text) {
				st__verify_problem(r->v, io ? ST_VERIFY_READ_ERROR : ST_VERIFY_UNREADABLE, full,
				                   "cannot read the ref: %s", strerror(errno));
			} else if (!st__is_hex(text, 40)) {
				if (!only_commit)
					st__verify_problem(r->v, ST_VERIFY_BAD_NAME, full,
					                   "does not hold a commit hash (40 hex digits)");
			} else if (!only_commit || !strcmp(text, only_commit)) {
				char *snap = st__verify_fmt("%s/snapshots/%s", r->dir, text);
				struct stat tb;
				if (snap && (lstat(snap, &tb) < 0 || !S_ISDIR(tb.st_mode)))
					st__verify_problem(r->v, ST_VERIFY_MISSING_SNAPSHOT, full,
					                   "names commit %s, which has no snapshot "
					                   "folder", text);
				free(snap);
			}
			free(text);
		}
		free(full);
	}
	st__verify_free_names(names);
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
	st__verify_problem(v, ST_VERIFY_INVALID, path ? path : "", "%s",
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
		st__verify_problem(v, err.sys_errno == EIO ? ST_VERIFY_READ_ERROR
		                                           : ST_VERIFY_UNREADABLE,
		                   full, "cannot check: %s", err.message);
}

/* A job reading full, with format problems named after name. */
static struct job *add_job(struct repo *r, const char *full, const char *label,
                           const char *name, const char *rel)
{
	struct job *j = st__verify_plan_add(r->pl);
	struct stat sb;
	if (!j)
		return NULL;
	j->disk = strdup(full);
	j->label = strdup(label);
	j->name = strdup(name);
	j->validate = st__verify_validator(rel);
	j->size = lstat(full, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	if (!j->disk || !j->label || !j->name)
		r->pl->oom = 1;
	return j;
}

/*
 * What a bad blob's problem adds: the snapshot file a user knows it as and
 * the huggingface_hub command that fetches it again, from the cache's own
 * naming (models--ORG--NAME: repository ORG/NAME; datasets--, spaces--).
 */
static char *fetch_again(const struct repo *r, const char *commit, const char *rel,
                         const char *blob)
{
	const char *base = strrchr(r->dir, '/') ? strrchr(r->dir, '/') + 1 : r->dir;
	static const struct {
		const char *prefix, *type;
	} kinds[] = {{"models--", ""}, {"datasets--", " --repo-type dataset"},
	             {"spaces--", " --repo-type space"}};
	const char *type = NULL, *id = NULL;
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && !id; k++)
		if (!strncmp(base, kinds[k].prefix, strlen(kinds[k].prefix))) {
			id = base + strlen(kinds[k].prefix);
			type = kinds[k].type;
		}
	if (!id || !*id)
		return st__verify_fmt("; it is snapshots/%s/%s: delete blobs/%.12s... and "
		                      "download it again", commit, rel, blob);
	/* ORG--NAME -> ORG/NAME (a name alone has no ORG). */
	char repo[512];
	const char *sep = strstr(id, "--");
	if (sep)
		snprintf(repo, sizeof repo, "%.*s/%s", (int)(sep - id), id, sep + 2);
	else
		snprintf(repo, sizeof repo, "%s", id);
	return st__verify_fmt("; it is snapshots/%s/%s: fetch it again with "
	                      "'huggingface-cli download %s %s --revision %s%s "
	                      "--force-download'", commit, rel, repo, rel, commit, type);
}

/* Is name referenced as a blob by snapshot entry e? */
static int refers(const struct entry *e, const char *name)
{
	return e->blob && !strcmp(e->blob, name);
}

static void plan_blobs(struct repo *r, const char *only_commit)
{
	char *bdir = st__verify_join(r->dir, "blobs");
	size_t n;
	char **names = bdir ? st__verify_list_dir(r->v, bdir, &n) : NULL;
	for (size_t i = 0; names && i < n; i++) {
		const char *nm = names[i];
		char *full = st__verify_join(bdir, nm);
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
			st__verify_problem(r->v, ST_VERIFY_UNREADABLE, full, "cannot read: %s",
			                   strerror(errno));
		} else if (st__ends_with(nm, ".incomplete")) {
			st__verify_problem(r->v, ST_VERIFY_INCOMPLETE, full,
			                   "unfinished download (%llu bytes so far); "
			                   "huggingface_hub resumes it on the next download, "
			                   "or it can be deleted", (unsigned long long)sb.st_size);
		} else if (S_ISLNK(sb.st_mode)) {
			st__verify_problem(r->v, ST_VERIFY_NOT_REGULAR, full,
			                   "a symlink where a blob should be; not followed");
		} else if (!S_ISREG(sb.st_mode)) {
			st__verify_problem(r->v, ST_VERIFY_NOT_REGULAR, full,
			                   "not a regular file (a FIFO, device or socket); "
			                   "skipped, not read");
		} else if (!st__is_hex(nm, 64) && !st__is_hex(nm, 40)) {
			st__verify_problem(r->v, ST_VERIFY_BAD_NAME, full,
			                   "name is neither a SHA-256 nor a git blob id; "
			                   "not verified");
		} else {
			char *name = ue ? st__verify_fmt("%s/snapshots/%s/%s", r->dir, us->commit,
			                                 ue->rel) : strdup(full);
			struct job *j = name ? add_job(r, full, full, name,
			                               ue ? ue->rel : "") : NULL;
			if (j) {
				j->algo = st__is_hex(nm, 64) ? ST_HASH_SHA256 : ST_HASH_GIT_SHA1;
				st_hash_unhex(nm, st__is_hex(nm, 64) ? 32 : 20, j->expected);
				snprintf(j->source, sizeof j->source, "its name");
				const struct st__tree_entry *te = ue ? tree_find(us, ue->rel)
				                                     : NULL;
				if (ue)
					j->known_as = fetch_again(r, us->commit, ue->rel, nm);
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
	st__verify_free_names(names);
	free(bdir);
}

/*
 * Per snapshot: the listing's files that are missing, links that disagree
 * with it, and jobs for what is not a blob (regular files, links to other
 * places in the cache). no_links: the repository keeps no links at all.
 */
static void plan_snapshot(struct repo *r, struct snapshot *s, int no_links)
{
	char *sdir = st__verify_fmt("%s/snapshots/%s", r->dir, s->commit);
	char *tree_rel = st__verify_fmt("trees/%s.json", s->commit);
	if (!sdir || !tree_rel) {
		r->v->oom = 1;
		goto out;
	}
	for (size_t i = 0; s->has_tree && i < s->tree.n; i++) {
		const struct st__tree_entry *te = &s->tree.e[i];
		size_t k = 0;
		while (k < s->n && strcmp(s->e[k].rel, te->path))
			k++;
		char *full = st__verify_join(sdir, te->path);
		if (full && k == s->n)
			st__verify_problem(r->v, ST_VERIFY_MISSING_FILE, full,
			                   "listed in %s (%llu bytes) but missing", tree_rel,
			                   (unsigned long long)te->size);
		free(full);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct entry *e = &s->e[i];
		const struct st__tree_entry *te = tree_find(s, e->rel);
		char *full = st__verify_join(sdir, e->rel);
		if (!full) {
			r->v->oom = 1;
			continue;
		}
		if (e->blob && te && strcmp(tree_blob(te), e->blob))
			st__verify_problem(r->v, ST_VERIFY_CORRUPT, full,
			                   "links to blobs/%s, but %s says its %s is %s",
			                   e->blob, tree_rel, te->has_lfs ? "sha256" : "git blob id",
			                   tree_blob(te));
		if (e->regular && !no_links)
			st__verify_problem(r->v, ST_VERIFY_REPLACED_LINK, full,
			                   "a regular file where the cache links to blobs/ "
			                   "(something wrote through the snapshot path); %s",
			                   te ? "checked against its listing"
			               : "no hash to check it against");
		if (e->regular || e->target) {
			char *disk = e->target ? st__verify_join(r->dir, e->target) : strdup(full);
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
void st__verify_plan_repo(st_verify *v, struct plan *pl, const char *dir,
                          const char *only_commit)
{
	struct repo r = {.dir = dir, .v = v, .pl = pl};
	v->n_repos++;
	/* A repository folder that cannot be listed: one problem, not one per part. */
	size_t n_top = 0;
	char **top = st__verify_list_dir(v, dir, &n_top);
	if (!top && errno == ENOMEM)
		v->oom = 1;
	if (!top && errno != ENOENT)
		return;
	st__verify_free_names(top);
	char *sdir = st__verify_join(dir, "snapshots");
	size_t n = 0;
	char **names = NULL;
	if (only_commit) {
		names = calloc(2, sizeof *names);
		if (names && (names[0] = strdup(only_commit)))
			n = 1;
	} else if (sdir) {
		names = st__verify_list_dir(v, sdir, &n);
	}
	r.s = calloc(n ? n : 1, sizeof *r.s);
	if (!sdir || !r.s) {
		v->oom = 1;
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		char *full = st__verify_join(sdir, names[i]);
		struct stat sb;
		if (full && !only_commit && st__verify_leftover(v, full, names[i])) {
			/* a snapshot writer's temporary folder: not a revision */
		} else if (full && lstat(full, &sb) == 0 && S_ISDIR(sb.st_mode)) {
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
			st__verify_problem(v, ST_VERIFY_NOT_REGULAR, full,
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
			if (!st__ends_with(s->e[k].rel, ".safetensors.index.json"))
				continue;
			char *full = st__verify_fmt("%s/snapshots/%s/%s", dir, s->commit, s->e[k].rel);
			if (full)
				check_index(v, full);
			free(full);
		}
	}
	for (size_t i = 0; i < r.n_s; i++)
		snapshot_free(&r.s[i]);
	free(r.s);
	st__verify_free_names(names);
	free(sdir);
}
