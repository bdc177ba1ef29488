/*
 * json.c - the one libst file that uses cJSON: parsing shard indexes
 * (model.safetensors.index.json). Safetensors headers have their own strict
 * parser in format.c, because they need exact integers and byte offsets.
 *
 * Limits of this parser, inherited from cJSON: total_size is read through a
 * double (exact up to 2^53 bytes, 9 PB), and a tensor name holding an
 * escaped NUL is cut at the NUL.
 */
#include "internal.h"

#include <cjson/cJSON.h>
#include <math.h>
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

int st__index_parse(struct st__index *ix, const char *text, size_t len,
                    struct st__report *r)
{
	return st__index_parse_shards(ix, text, len, ".safetensors", r);
}

int st__index_parse_shards(struct st__index *ix, const char *text, size_t len,
                           const char *suffix, struct st__report *r)
{
	memset(ix, 0, sizeof *ix);
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
	if (r->fn) {
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
