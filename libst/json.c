/*
 * json.c - the one libst file that uses cJSON: parsing shard indexes
 * (model.safetensors.index.json), Hugging Face cache tree listings
 * (trees/<commit>.json, for verify.c), and a read-only tree of config.json
 * for arch.c. Safetensors headers have their own strict
 * parser in format.c, because they need exact integers and byte offsets.
 *
 * Limits of this parser, inherited from cJSON: total_size is read through a
 * double (exact up to 2^53 bytes, 9 PB), and a tensor name holding an
 * escaped NUL is cut at the NUL. A NUL anywhere else in an index (a raw 0
 * byte, a \u0000 in a shard name) is refused before cJSON reads it.
 */
#include "internal.h"

#include <cJSON.h> /* pkg-config libcjson: -I.../cjson */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int entry_cmp(const void *x, const void *y)
{
	const struct st__index_entry *a = x, *b = y;
	size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, m);
	if (c)
		return c;
	return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* I2: a plain file name beside the index, ending in suffix. */
static const char *bad_shard_name(const char *f, const char *suffix)
{
	size_t n = strlen(f), m = strlen(suffix);
	if (n == 0)
		return "is empty";
	if (strchr(f, '/') || strchr(f, '\\'))
		return "is not a plain file name (contains a path separator)";
	if (!strcmp(f, ".") || !strcmp(f, ".."))
		return "is not a file name";
	if (n <= m || strcmp(f + n - m, suffix) != 0)
		return !strcmp(suffix, ".bin") ? "does not end in .bin"
		                                : "does not end in .safetensors";
	return NULL;
}

/*
 * Where the index holds a NUL that cJSON would cut a string at: a raw 0
 * byte anywhere (not JSON text), or an escaped \u0000 in a string value
 * (a shard name: no file name holds one). An escaped NUL in a key, a
 * tensor name, stays allowed (doc/format.md rule 17: the writer writes
 * them). Returns the byte offset, or len when there is none.
 */
static size_t index_nul_at(const char *text, size_t len)
{
	const char *raw = memchr(text, '\0', len);
	size_t i = 0;
	while (i < len) {
		if (text[i++] != '"')
			continue;
		size_t nul = len;
		for (; i < len && text[i] != '"'; i++) {
			if (text[i] != '\\' || i + 1 >= len)
				continue;
			if (nul == len && i + 6 <= len && !memcmp(text + i + 1, "u0000", 5))
				nul = i;
			i++; /* the escaped character */
		}
		size_t k = i + 1; /* past the closing quote: a key is followed by ':' */
		while (k < len && (text[k] == ' ' || text[k] == '\n' ||
		                   text[k] == '\r' || text[k] == '\t'))
			k++;
		if (nul < len && (k >= len || text[k] != ':'))
			return raw && (size_t)(raw - text) < nul ? (size_t)(raw - text) : nul;
		i++;
	}
	return raw ? (size_t)(raw - text) : len;
}

/* I1's metadata.total_size, for a full check: reported, and kept in ix. */
static void index_metadata(struct st__index *ix, const cJSON *root, struct st__report *r)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	const cJSON *ts = cJSON_IsObject(md)
	                  ? cJSON_GetObjectItemCaseSensitive(md, "total_size")
	                  : NULL;
	if (!md)
		st__report(r, ST_PROBLEM_ERROR,
		           "index has no \"metadata\" object with total_size (I1)");
	else if (!cJSON_IsObject(md))
		st__report(r, ST_PROBLEM_ERROR,
		           "index \"metadata\" is not an object (I1)");
	else if (!ts)
		st__report(r, ST_PROBLEM_ERROR,
		           "index metadata has no total_size (I1)");
	else if (!cJSON_IsNumber(ts) || ts->valuedouble < 0 ||
	         ts->valuedouble != floor(ts->valuedouble) ||
	         ts->valuedouble > 9007199254740992.0)
		st__report(r, ST_PROBLEM_ERROR,
		           "index metadata total_size is not a non-negative "
		           "integer (I1)");
	else {
		ix->has_total = 1;
		ix->total_size = (uint64_t)ts->valuedouble;
	}
}

int st__index_parse(struct st__index *ix, const char *text, size_t len,
                    struct st__report *r)
{
	return st__index_parse_shards(ix, text, len, ".safetensors", r);
}

int st__index_parse_shards(struct st__index *ix, const char *text, size_t len,
                           const char *suffix, struct st__report *r)
{
	memset(ix, 0, sizeof *ix);
	size_t nul = index_nul_at(text, len);
	if (nul < len) {
		st__report(r, ST_PROBLEM_ERROR, "index holds a NUL at byte %zu (%s), "
		           "which would cut a string short; refused", nul,
		           text[nul] ? "a \\u0000 in a string value" : "a raw 0 byte");
		return ST_EINDEX;
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!root) {
		size_t at = end && end >= text ? (size_t)(end - text) : 0;
		st__report(r, ST_PROBLEM_ERROR,
		           "index is not valid JSON (error near byte %zu of %zu)",
		           at, len);
		return ST_EINDEX;
	}
	int rc = ST_OK;
	/* Trailing garbage after the value. */
	if (end) {
		size_t at = (size_t)(end - text);
		while (at < len && (text[at] == ' ' || text[at] == '\n' ||
		                    text[at] == '\r' || text[at] == '\t'))
			at++;
		if (at < len) {
			st__report(r, ST_PROBLEM_ERROR,
			           "index has bytes after the JSON value (byte %zu)", at);
			rc = ST_EINDEX;
			goto out;
		}
	}
	if (!cJSON_IsObject(root)) {
		st__report(r, ST_PROBLEM_ERROR, "index is not a JSON object");
		rc = ST_EINDEX;
		goto out;
	}
	const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
	if (!cJSON_IsObject(wm)) {
		st__report(r, ST_PROBLEM_ERROR,
		           "index has no \"weight_map\" object (I1)");
		rc = ST_EINDEX;
		goto out;
	}
	/* Metadata: only a full check cares (loaders read weight_map only). */
	if (r->fn)
		index_metadata(ix, root, r);
	size_t n = (size_t)cJSON_GetArraySize(wm);
	ix->e = calloc(n ? n : 1, sizeof *ix->e);
	if (!ix->e) {
		rc = st__error(r->err, ST_ENOMEM, "%s: out of memory", r->path);
		goto out;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, wm) {
		const char *why;
		if (!cJSON_IsString(it)) {
			st__report(r, ST_PROBLEM_ERROR,
			           "weight_map: tensor '%s': value is not a file name "
			           "string (I1)", it->string);
			rc = ST_EINDEX;
			if (st__report_stop(r))
				goto out;
			continue;
		}
		if ((why = bad_shard_name(it->valuestring, suffix))) {
			st__report(r, ST_PROBLEM_ERROR,
			           "weight_map: tensor '%s': shard '%s' %s (I2)",
			           it->string, it->valuestring, why);
			rc = ST_EINDEX;
			if (st__report_stop(r))
				goto out;
			continue;
		}
		struct st__index_entry *e = &ix->e[ix->n];
		e->name_len = strlen(it->string);
		e->name = strdup(it->string);
		e->file = strdup(it->valuestring);
		ix->n++;
		if (!e->name || !e->file) {
			rc = st__error(r->err, ST_ENOMEM, "%s: out of memory", r->path);
			goto out;
		}
	}
	qsort(ix->e, ix->n, sizeof *ix->e, entry_cmp);
	for (size_t i = 1; i < ix->n; i++)
		if (entry_cmp(&ix->e[i - 1], &ix->e[i]) == 0) {
			st__report(r, ST_PROBLEM_ERROR,
			           "weight_map: tensor '%s' is listed twice (I3)",
			           ix->e[i].name);
			rc = ST_EINDEX;
			if (st__report_stop(r))
				goto out;
		}
out:
	cJSON_Delete(root);
	if (rc == ST_ENOMEM || (rc && !r->fn)) {
		st__index_free(ix);
		return rc;
	}
	/* Check mode: problems were reported; go on with what parsed. */
	return rc == ST_ENOMEM ? rc : ST_OK;
}

void st__index_free(struct st__index *ix)
{
	for (size_t i = 0; i < ix->n; i++) {
		free(ix->e[i].name);
		free(ix->e[i].file);
	}
	free(ix->e);
	memset(ix, 0, sizeof *ix);
}

/* ---- trees/<commit>.json (Hugging Face cache listings) --------------------- */

/* A JSON number that is an exact non-negative integer up to 2^53. */
static int json_u64(const cJSON *v, uint64_t *out)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble > 9007199254740992.0)
		return -1;
	*out = (uint64_t)v->valuedouble;
	return 0;
}

int st__tree_parse(struct st__tree *t, const char *text, size_t len,
                   char *why, size_t why_size)
{
	memset(t, 0, sizeof *t);
	cJSON *root = cJSON_ParseWithLength(text, len);
	int rc = ST_EFORMAT;
	if (!root) {
		snprintf(why, why_size, "not valid JSON");
		return rc;
	}
	const cJSON *fv = cJSON_GetObjectItemCaseSensitive(root, "format_version");
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
	uint64_t version = 0;
	if (!cJSON_IsObject(root) || json_u64(fv, &version) < 0) {
		snprintf(why, why_size, "no \"format_version\" number");
		goto out;
	}
	if (version != 1) {
		/* A newer layout: huggingface_hub itself ignores it. */
		rc = ST_EUNSUPPORTED;
		snprintf(why, why_size, "format_version %llu is not 1",
		         (unsigned long long)version);
		goto out;
	}
	if (!cJSON_IsObject(files)) {
		snprintf(why, why_size, "no \"files\" object");
		goto out;
	}
	size_t n = (size_t)cJSON_GetArraySize(files);
	if (!(t->e = calloc(n ? n : 1, sizeof *t->e))) {
		rc = ST_ENOMEM;
		snprintf(why, why_size, "out of memory");
		goto out;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, files) {
		struct st__tree_entry *e = &t->e[t->n];
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
		const cJSON *blob = cJSON_GetObjectItemCaseSensitive(it, "blob_id");
		const cJSON *lfs = cJSON_GetObjectItemCaseSensitive(it, "lfs_sha256");
		const cJSON *lsz = cJSON_GetObjectItemCaseSensitive(it, "lfs_size");
		if (!it->string || !it->string[0] || json_u64(size, &e->size) < 0 ||
		    !cJSON_IsString(blob) || !st__is_hex(blob->valuestring, 40)) {
			snprintf(why, why_size, "file '%.200s': no size and blob_id",
			         it->string ? it->string : "");
			goto out;
		}
		memcpy(e->blob_id, blob->valuestring, 41);
		if (lfs && !cJSON_IsNull(lfs)) {
			if (!cJSON_IsString(lfs) || !st__is_hex(lfs->valuestring, 64)) {
				snprintf(why, why_size, "file '%.200s': lfs_sha256 is not "
				         "64 hex digits", it->string);
				goto out;
			}
			memcpy(e->lfs_sha256, lfs->valuestring, 65);
			e->has_lfs = 1;
			e->lfs_size = e->size;
			if (lsz && !cJSON_IsNull(lsz) && json_u64(lsz, &e->lfs_size) < 0) {
				snprintf(why, why_size, "file '%.200s': lfs_size is not a "
				         "size", it->string);
				goto out;
			}
		}
		if (!(e->path = strdup(it->string))) {
			rc = ST_ENOMEM;
			snprintf(why, why_size, "out of memory");
			goto out;
		}
		t->n++;
	}
	rc = ST_OK;
out:
	cJSON_Delete(root);
	if (rc)
		st__tree_free(t);
	return rc;
}

void st__tree_free(struct st__tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].path);
	free(t->e);
	memset(t, 0, sizeof *t);
}

/* ---- a read-only tree, for config.json (arch.c) ---------------------------- */

/*
 * A struct st__json is a cJSON node: the casts below are the whole of the
 * mapping, as in the tools' fe/json.c.
 */
#define NODE(v) ((const cJSON *)(const void *)(v))
#define JV(n) ((const struct st__json *)(const void *)(n))

struct st__json *st__json_parse(const char *text, size_t len)
{
	return (struct st__json *)(void *)cJSON_ParseWithLengthOpts(text, len,
	                                                            NULL, 0);
}

void st__json_free(struct st__json *root)
{
	cJSON_Delete((cJSON *)(void *)root);
}

enum st__json_type st__json_type(const struct st__json *v)
{
	const cJSON *n = NODE(v);
	if (cJSON_IsNull(n))
		return ST__JSON_NULL;
	if (cJSON_IsFalse(n))
		return ST__JSON_FALSE;
	if (cJSON_IsTrue(n))
		return ST__JSON_TRUE;
	if (cJSON_IsNumber(n))
		return ST__JSON_NUMBER;
	if (cJSON_IsString(n) && n->valuestring)
		return ST__JSON_STRING;
	if (cJSON_IsArray(n))
		return ST__JSON_ARRAY;
	if (cJSON_IsObject(n))
		return ST__JSON_OBJECT;
	return ST__JSON_ABSENT;
}

double st__json_number(const struct st__json *v)
{
	return cJSON_IsNumber(NODE(v)) ? NODE(v)->valuedouble : 0;
}

const char *st__json_string(const struct st__json *v)
{
	return cJSON_IsString(NODE(v)) ? NODE(v)->valuestring : NULL;
}

const struct st__json *st__json_get(const struct st__json *object,
                                    const char *key)
{
	if (!cJSON_IsObject(NODE(object)))
		return NULL;
	return JV(cJSON_GetObjectItemCaseSensitive(NODE(object), key));
}

const struct st__json *st__json_at(const struct st__json *array, size_t i)
{
	if (!cJSON_IsArray(NODE(array)))
		return NULL;
	const cJSON *e = NODE(array)->child;
	while (e && i--)
		e = e->next;
	return JV(e);
}

const struct st__json *st__json_first(const struct st__json *container)
{
	const cJSON *n = NODE(container);
	return cJSON_IsArray(n) || cJSON_IsObject(n) ? JV(n->child) : NULL;
}

const struct st__json *st__json_next(const struct st__json *v)
{
	return v ? JV(NODE(v)->next) : NULL;
}

const char *st__json_key(const struct st__json *member)
{
	return member ? NODE(member)->string : NULL;
}

/*
 * Report key when its values differ: cJSON_Compare says so and their
 * printed forms differ too (an overflowing number is never equal to
 * itself in cJSON_Compare, and both print as null). Returns 1 if reported.
 */
static int diff_one(const cJSON *va, const cJSON *vb, const char *key,
                    st__json_diff_fn fn, void *ctx)
{
	if (va && vb && cJSON_Compare(va, vb, 1))
		return 0;
	/* cJSON allocates with malloc: libst never installs other hooks. */
	char *ta = va ? cJSON_PrintUnformatted(va) : NULL;
	char *tb = vb ? cJSON_PrintUnformatted(vb) : NULL;
	int differ = !(ta && tb && strcmp(ta, tb) == 0);
	if (differ)
		fn(ctx, key, va ? (ta ? ta : "?") : NULL,
		   vb ? (tb ? tb : "?") : NULL);
	free(ta);
	free(tb);
	return differ;
}

int st__json_object_diff(const char *a, size_t alen, const char *b,
                         size_t blen, st__json_diff_fn fn, void *ctx)
{
	cJSON *ra = cJSON_ParseWithLengthOpts(a, alen, NULL, 0);
	cJSON *rb = cJSON_ParseWithLengthOpts(b, blen, NULL, 0);
	int n = ST_EFORMAT;
	if (cJSON_IsObject(ra) && cJSON_IsObject(rb)) {
		n = 0;
		const cJSON *v;
		/* A key given twice counts once, by its first value (cJSON's). */
		cJSON_ArrayForEach(v, ra) {
			if (!v->string ||
			    cJSON_GetObjectItemCaseSensitive(ra, v->string) != v)
				continue;
			const cJSON *w = cJSON_GetObjectItemCaseSensitive(rb, v->string);
			n += diff_one(v, w, v->string, fn, ctx);
		}
		cJSON_ArrayForEach(v, rb) {
			if (v->string &&
			    cJSON_GetObjectItemCaseSensitive(rb, v->string) == v &&
			    !cJSON_GetObjectItemCaseSensitive(ra, v->string))
				n += diff_one(NULL, v, v->string, fn, ctx);
		}
	}
	cJSON_Delete(ra);
	cJSON_Delete(rb);
	return n;
}
