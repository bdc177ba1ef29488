/*
 * gguf_split.c - split GGUF sets (llama.cpp's gguf-split, gguf-py's writer
 * with split_max_tensors) as one checkpoint: the part names, the split.*
 * keys every part carries, and the rules a set keeps.
 *
 * A set of N parts is the files PREFIX-00001-of-0000N.gguf ...
 * PREFIX-0000N-of-0000N.gguf (llama_split_path's "%s-%05d-of-%05d.gguf").
 * Each is a GGUF file of its own with split.no (its 0-based number),
 * split.count (N) and split.tensors.count (the set's tensors); the first
 * holds the metadata, and every tensor is in exactly one part. Any part
 * names the set: its split.no and split.count give the suffix its name
 * must end in, and the prefix before it names the others.
 *
 * Opening (st_gguf_open_set) opens each part with st_gguf_open (a mapping
 * and its header, as safetensors shards are opened) and joins them in one
 * handle (st__gguf_join in gguf.c); the first broken rule stops it.
 * Checking (st_gguf_check_set) checks one part at a time with
 * st_gguf_check_file, keeps only its tensor names, and reports every
 * problem naming the part: a missing part, one that is not a GGUF file of
 * the set (another split.count or split.tensors.count, a split.no its name
 * contradicts), a tensor in two parts, a count that does not add up, and
 * files beside the set whose names make them parts of another split.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The largest count the names' %05d keeps to five digits. */
#define MAX_PARTS 99999

/* ---- names ----------------------------------------------------------------- */

size_t st_gguf_split_path(char *out, size_t size, const char *prefix,
                          unsigned no, unsigned count)
{
	int n = snprintf(out, size, "%s-%05u-of-%05u.gguf", prefix, no + 1, count);
	return n < 0 || (size_t)n >= size ? 0 : (size_t)n;
}

size_t st_gguf_split_prefix(char *out, size_t size, const char *path,
                            unsigned no, unsigned count)
{
	char suffix[48];
	snprintf(suffix, sizeof suffix, "-%05u-of-%05u.gguf", no + 1, count);
	size_t n = strlen(path), s = strlen(suffix);
	if (n <= s || strcmp(path + n - s, suffix) || n - s >= size)
		return 0;
	memcpy(out, path, n - s);
	out[n - s] = 0;
	return n - s;
}

/* ---- the split keys -------------------------------------------------------- */

struct split_keys {
	long no, count, tensors; /* -1: absent */
};

/* An integer key's value (any integer type), -1 absent, -2 not an integer. */
static long int_key(const st_gguf *g, const char *key, const char **type)
{
	long i = st_gguf_find_kv(g, key);
	*type = NULL;
	if (i < 0)
		return -1;
	const st_gguf_value *v = &st_gguf_kv_at(g, (size_t)i)->value;
	switch (v->type) {
	case ST_GGUF_UINT8: case ST_GGUF_UINT16: case ST_GGUF_UINT32:
	case ST_GGUF_UINT64:
		return v->v.u > INT32_MAX ? -3 : (long)v->v.u;
	case ST_GGUF_INT8: case ST_GGUF_INT16: case ST_GGUF_INT32:
	case ST_GGUF_INT64:
		return v->v.i < 0 ? -3 : v->v.i > INT32_MAX ? -3 : (long)v->v.i;
	default:
		*type = st_gguf_type_name(v->type);
		return -2;
	}
}

long st__gguf_split_no(const st_gguf *g)
{
	const char *type;
	long no = int_key(g, "split.no", &type);
	return no < 0 ? -1 : no;
}

/* ---- reporting ------------------------------------------------------------- */

/* A problem of the set, reported as a problem of the file at path. */
static void report(struct st__report *r, const char *path, int severity,
                   const char *fmt, ...) ST_PRINTF(4, 5);

static void report(struct st__report *r, const char *path, int severity,
                   const char *fmt, ...)
{
	char msg[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *saved = r->path;
	r->path = path;
	st__report(r, severity, "%s", msg);
	r->path = saved;
}

/* Read the split keys of g (at path); report those of the wrong type. */
static void read_keys(const st_gguf *g, const char *path, struct split_keys *k,
                      struct st__report *r)
{
	static const char *const names[3] = {"split.no", "split.count",
	                                     "split.tensors.count"};
	long *vals[3] = {&k->no, &k->count, &k->tensors};
	for (int i = 0; i < 3; i++) {
		const char *type;
		*vals[i] = int_key(g, names[i], &type);
		if (*vals[i] == -2)
			report(r, path, ST_PROBLEM_ERROR,
			       "key '%s': type %s, expected an integer", names[i], type);
		else if (*vals[i] == -3)
			report(r, path, ST_PROBLEM_ERROR,
			       "key '%s': negative or past 2^31", names[i]);
		if (*vals[i] < -1)
			*vals[i] = -1;
	}
	if (k->count == 0 || k->count > MAX_PARTS) {
		report(r, path, ST_PROBLEM_ERROR,
		       "key 'split.count': %ld (a set has 1 to %d parts)", k->count,
		       MAX_PARTS);
		k->count = -1;
	}
	if (k->count > 0 && k->no >= k->count) {
		report(r, path, ST_PROBLEM_ERROR,
		       "split.no %ld is not below split.count %ld", k->no, k->count);
		k->no = -1;
	}
}

/* ---- walking a set --------------------------------------------------------- */

/* One tensor name of a checked part (check mode keeps only these). */
struct seen {
	char *name; /* name_len bytes (a name may hold any byte) */
	size_t name_len, part;
};

struct set {
	const char *path;       /* as given */
	struct st__report *r;   /* fn set: check mode */
	struct split_keys keys; /* of the given part */
	char prefix[4096];
	size_t n_parts;
	char **paths;           /* each part's file name */
	st_gguf **parts;        /* open mode: each part, open */
	struct seen *seen;      /* check mode: every tensor name */
	size_t n_seen, cap_seen;
	uint64_t n_tensors;
	int errors;             /* reported by st_gguf_check_file */
	size_t missing;         /* check mode: the parts just before are missing */
};

static int nomem(struct set *s)
{
	return st__error(s->r->err, ST_ENOMEM, "%s: out of memory", s->path);
}

static int stop(const struct set *s) { return st__report_stop(s->r); }

/* Keep part k's tensor names (check mode). */
static int remember(struct set *s, const st_gguf *g, size_t k)
{
	size_t n = st_gguf_n_tensors(g);
	if (n > s->cap_seen - s->n_seen) {
		size_t cap = s->cap_seen ? s->cap_seen : 64;
		while (cap - s->n_seen < n)
			cap *= 2;
		struct seen *p = realloc(s->seen, cap * sizeof *p);
		if (!p)
			return nomem(s);
		s->seen = p;
		s->cap_seen = cap;
	}
	for (size_t i = 0; i < n; i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		char *c = malloc(t->name_len + 1);
		if (!c)
			return nomem(s);
		memcpy(c, t->name, t->name_len + 1);
		s->seen[s->n_seen++] = (struct seen){c, t->name_len, k};
	}
	return ST_OK;
}

/* Part k's keys against its number and the given part's keys. */
static void check_keys(struct set *s, const st_gguf *g, size_t k)
{
	const char *p = s->paths[k];
	struct split_keys kk;
	read_keys(g, p, &kk, s->r);
	if (stop(s))
		return;
	if (kk.count < 0) {
		report(s->r, p, ST_PROBLEM_ERROR,
		       "no split.count: not a part of a split set (%s says %zu "
		       "parts)", s->path, s->n_parts);
		return;
	}
	if ((size_t)kk.count != s->n_parts) {
		report(s->r, p, ST_PROBLEM_ERROR,
		       "split.count is %ld, but %s says %zu: a part of another set",
		       kk.count, s->path, s->n_parts);
		return;
	}
	if (kk.no != (long)k)
		report(s->r, p, ST_PROBLEM_ERROR,
		       "split.no is %ld, but its name makes it part %zu of %zu "
		       "(split.no %zu)", kk.no, k + 1, s->n_parts, k);
	if (kk.tensors != s->keys.tensors && !stop(s)) {
		if (kk.tensors < 0 || s->keys.tensors < 0)
			report(s->r, p, ST_PROBLEM_ERROR,
			       "split.tensors.count is %s here but %s in %s",
			       kk.tensors < 0 ? "absent" : "present",
			       s->keys.tensors < 0 ? "absent" : "present", s->path);
		else
			report(s->r, p, ST_PROBLEM_ERROR,
			       "split.tensors.count is %ld, but %s says %ld: a part of "
			       "another set", kk.tensors, s->path, s->keys.tensors);
	}
}

static int is_file(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 || errno != ENOENT;
}

/*
 * Part k: open it (open mode) or check it and keep its names (check mode).
 * g0 is the given part, already open and checked, for k == its split.no;
 * the walk owns it.
 */
static int visit(struct set *s, size_t k, st_gguf *g0)
{
	const char *p = s->paths[k];
	struct st__report *r = s->r;
	st_gguf *g = g0;
	if (!g) {
		if (!is_file(p)) {
			/* Check mode reports a run of missing parts once (missing). */
			if (r->fn)
				s->missing++;
			else
				report(r, p, ST_PROBLEM_ERROR,
				       "missing: part %zu of the %zu that %s's split.count "
				       "names", k + 1, s->n_parts, s->path);
			return stop(s) ? ST_EFORMAT : ST_OK;
		}
		if (r->fn) {
			st_error e;
			memset(&e, 0, sizeof e);
			int n = st_gguf_check_file(p, r->fn, r->ctx, &e);
			if (n == ST_ENOMEM)
				return st__error(r->err, ST_ENOMEM, "%s", e.message);
			if (n < 0) {
				/* Unreadable: the set is broken, the check goes on. */
				st__report(r, ST_PROBLEM_ERROR, "part %zu: %s", k + 1,
				           e.message);
				return ST_OK;
			}
			s->errors += n;
			if (n)
				return ST_OK; /* its problems are reported */
		}
		int rc = st_gguf_open(&g, p, r->fn ? NULL : r->err);
		if (rc)
			return r->fn && rc != ST_ENOMEM ? ST_OK : rc;
	}
	check_keys(s, g, k);
	s->n_tensors += st_gguf_n_tensors(g);
	int rc = ST_OK;
	if (r->fn)
		rc = remember(s, g, k);
	if (g == g0) {
		if (!r->fn)
			s->parts[k] = g; /* the walk owns g0 */
	} else if (r->fn || stop(s)) {
		st_gguf_close(g);
	} else {
		s->parts[k] = g;
	}
	if (rc)
		return rc;
	return stop(s) ? ST_EFORMAT : ST_OK;
}

static int same_name(const struct seen *x, const struct seen *y)
{
	return x->name_len == y->name_len &&
	       !memcmp(x->name, y->name, x->name_len);
}

/*
 * Check mode: parts [from, to) are missing, one line for the run (a set of
 * 99999 parts with one present gives one line, not 99998).
 */
static void missing(struct set *s, size_t from, size_t to)
{
	if (to - from == 1)
		report(s->r, s->paths[from], ST_PROBLEM_ERROR,
		       "missing: part %zu of the %zu that %s's split.count names",
		       from + 1, s->n_parts, s->path);
	else
		report(s->r, s->paths[from], ST_PROBLEM_ERROR,
		       "missing, as are the parts after it up to %s: parts %zu to "
		       "%zu of the %zu that %s's split.count names",
		       s->paths[to - 1], from + 1, to, s->n_parts, s->path);
}

static int cmp_seen(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	if (c)
		return c;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return x->part < y->part ? -1 : x->part > y->part;
}

/* Check mode: a tensor name in two parts. */
static void check_duplicates(struct set *s)
{
	if (s->n_seen)
		qsort(s->seen, s->n_seen, sizeof *s->seen, cmp_seen);
	for (size_t i = 1; i < s->n_seen; i++)
		if (same_name(&s->seen[i - 1], &s->seen[i])) {
			const struct seen *t = &s->seen[i];
			report(s->r, s->paths[t->part], ST_PROBLEM_ERROR,
			       "tensor '%.*s' is in this part and in %s",
			       (int)(t->name_len < 200 ? t->name_len : 200), t->name,
			       s->paths[s->seen[i - 1].part]);
		}
}

/* "DDDDD-of-DDDDD.gguf": the part and count a name's suffix gives. */
static int parse_suffix(const char *s, unsigned long *no, unsigned long *count)
{
	char *end;
	if (*s < '0' || *s > '9')
		return 0;
	*no = strtoul(s, &end, 10);
	if (end - s < 5 || strncmp(end, "-of-", 4))
		return 0;
	s = end + 4;
	if (*s < '0' || *s > '9')
		return 0;
	*count = strtoul(s, &end, 10);
	return end - s >= 5 && !strcmp(end, ".gguf");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Check mode: files beside the set named as parts of another split of it. */
static void check_extra(struct set *s)
{
	const char *slash = strrchr(s->prefix, '/');
	char dir[4096];
	const char *base = slash ? slash + 1 : s->prefix;
	if (slash)
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - s->prefix + 1),
		         s->prefix);
	else
		dir[0] = 0;
	DIR *d = opendir(dir[0] ? dir : ".");
	if (!d)
		return;
	size_t blen = strlen(base), n = 0, cap = 0;
	char **extra = NULL;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		unsigned long no, count;
		if (strncmp(e->d_name, base, blen) || e->d_name[blen] != '-' ||
		    !parse_suffix(e->d_name + blen + 1, &no, &count))
			continue;
		if (count == s->n_parts && no >= 1 && no <= count)
			continue; /* one of the set's names */
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			char **p = realloc(extra, cap * sizeof *p);
			if (!p)
				break;
			extra = p;
		}
		if (!(extra[n] = strdup(e->d_name)))
			break;
		n++;
	}
	closedir(d);
	/* In name order, whatever order the directory lists them in. */
	if (n)
		qsort(extra, n, sizeof *extra, cmp_str);
	for (size_t i = 0; i < n; i++) {
		unsigned long no, count;
		parse_suffix(extra[i] + blen + 1, &no, &count);
		char p[8192];
		snprintf(p, sizeof p, "%s%s", dir, extra[i]);
		if (!stop(s))
			report(s->r, p, ST_PROBLEM_ERROR,
			       "an extra part: its name says part %lu of %lu, but the "
			       "set of %s has %zu parts", no, count, s->path,
			       s->n_parts);
		free(extra[i]);
	}
	free(extra);
}

/* The set's part names from the given part's keys (its name must fit). */
static int name_parts(struct set *s)
{
	size_t n = (size_t)s->keys.count;
	if (s->keys.no < 0) {
		report(s->r, s->path, ST_PROBLEM_ERROR,
		       "split.count is %zu but split.no is missing", n);
		return ST_EFORMAT;
	}
	if (!st_gguf_split_prefix(s->prefix, sizeof s->prefix, s->path,
	                          (unsigned)s->keys.no, (unsigned)n)) {
		report(s->r, s->path, ST_PROBLEM_ERROR,
		       "part %ld of a split set of %zu, but its name does not end in "
		       "-%05ld-of-%05zu.gguf, so the other parts cannot be found",
		       s->keys.no + 1, n, s->keys.no + 1, n);
		return ST_EFORMAT;
	}
	s->paths = calloc(n, sizeof *s->paths);
	s->parts = calloc(n, sizeof *s->parts);
	if (!s->paths || !s->parts)
		return nomem(s);
	s->n_parts = n;
	size_t len = strlen(s->prefix) + 32;
	for (size_t k = 0; k < n; k++) {
		if (!(s->paths[k] = malloc(len)))
			return nomem(s);
		st_gguf_split_path(s->paths[k], len, s->prefix, (unsigned)k,
		                   (unsigned)n);
	}
	return ST_OK;
}

static void set_free(struct set *s)
{
	for (size_t k = 0; k < s->n_parts; k++) {
		free(s->paths[k]);
		st_gguf_close(s->parts[k]);
	}
	free(s->paths);
	free(s->parts);
	for (size_t i = 0; i < s->n_seen; i++)
		free(s->seen[i].name);
	free(s->seen);
}

/*
 * The set g0 (the file at s->path, open) belongs to. Open mode: *out the
 * joined handle (g0 is taken). Check mode: every problem reported.
 */
static int walk(struct set *s, st_gguf *g0, st_gguf **out)
{
	struct st__report *r = s->r;
	read_keys(g0, s->path, &s->keys, r);
	if (stop(s)) {
		st_gguf_close(g0);
		return ST_EFORMAT;
	}
	if (s->keys.count <= 1) {
		/* One file (split.count 1, or no split keys). */
		if (s->keys.no > 0)
			report(r, s->path, ST_PROBLEM_ERROR,
			       "split.no is %ld, but it is the only part (split.count "
			       "%ld)", s->keys.no, s->keys.count < 0 ? 1 : s->keys.count);
		if (s->keys.tensors >= 0 &&
		    (uint64_t)s->keys.tensors != st_gguf_n_tensors(g0))
			report(r, s->path, ST_PROBLEM_ERROR,
			       "split.tensors.count is %ld, but the file holds %zu "
			       "tensors", s->keys.tensors, st_gguf_n_tensors(g0));
		if (r->fn || stop(s)) {
			st_gguf_close(g0);
			return stop(s) ? ST_EFORMAT : ST_OK;
		}
		*out = g0;
		return ST_OK;
	}
	int rc = name_parts(s);
	if (rc) {
		st_gguf_close(g0);
		return rc;
	}
	size_t given = (size_t)s->keys.no;
	for (size_t k = 0; k <= s->n_parts && !rc; k++) {
		/* A run of missing parts ends here: report it in part order. */
		if (s->missing && (k == s->n_parts || k == given ||
		                   is_file(s->paths[k]))) {
			missing(s, k - s->missing, k);
			s->missing = 0;
		}
		if (k < s->n_parts)
			rc = visit(s, k, k == given ? g0 : NULL);
	}
	/* In open mode a walk that reached g0 holds it in parts. */
	if (!s->parts[given])
		st_gguf_close(g0);
	if (rc)
		return rc;
	if (r->fn) {
		check_duplicates(s);
		check_extra(s);
	}
	int complete = r->fn ? s->errors == 0 && r->n_errors == 0 : 1;
	if (complete && s->keys.tensors >= 0 &&
	    s->n_tensors != (uint64_t)s->keys.tensors)
		report(r, s->paths[0], ST_PROBLEM_ERROR,
		       "split.tensors.count is %ld, but the %zu parts hold %llu "
		       "tensors", s->keys.tensors, s->n_parts,
		       (unsigned long long)s->n_tensors);
	if (r->fn)
		return ST_OK;
	if (stop(s))
		return ST_EFORMAT;
	rc = st__gguf_join(out, s->path, s->parts, s->n_parts, r->err);
	memset(s->parts, 0, s->n_parts * sizeof *s->parts); /* taken */
	return rc;
}

int st_gguf_open_set(st_gguf **out, const char *path, st_error *err)
{
	*out = NULL;
	st_gguf *g0;
	int rc = st_gguf_open(&g0, path, err);
	if (rc)
		return rc;
	struct st__report r = {.path = path, .err = err};
	struct set s = {.path = path, .r = &r};
	rc = walk(&s, g0, out);
	set_free(&s);
	return rc;
}

int st_gguf_check_set(const char *path, st_problem_fn fn, void *ctx,
                      st_error *err)
{
	int n = st_gguf_check_file(path, fn, ctx, err);
	if (n)
		return n; /* unreadable, or its problems are reported */
	st_gguf *g0;
	st_error e;
	int rc = st_gguf_open(&g0, path, &e);
	if (rc) {
		if (err)
			*err = e;
		return rc == ST_EFORMAT ? 1 : rc;
	}
	struct st__report r = {.path = path, .fn = fn, .ctx = ctx, .err = err};
	struct set s = {.path = path, .r = &r};
	rc = walk(&s, g0, NULL);
	int errors = s.errors + r.n_errors;
	set_free(&s);
	return rc == ST_ENOMEM ? rc : errors;
}
