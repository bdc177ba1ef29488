/*
 * json.c - the tools' JSON tree (json.h) over cJSON, the one tools source
 * that includes it. A tj is a cJSON node: the casts below are the whole
 * of the mapping.
 */
#include "fe/json.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#define NODE(v) ((const cJSON *)(const void *)(v))
#define TJ(n) ((const tj *)(const void *)(n))

tj *tj_parse(const char *text, size_t len, size_t *end)
{
	const char *stop = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, len, &stop, 0);
	if (end)
		*end = stop && stop >= text && stop <= text + len ? (size_t)(stop - text) : 0;
	return (tj *)(void *)root;
}

void tj_free(tj *root)
{
	cJSON_Delete((cJSON *)(void *)root);
}

int tj_is_null(const tj *v) { return cJSON_IsNull(NODE(v)); }
int tj_is_bool(const tj *v) { return cJSON_IsBool(NODE(v)); }
int tj_is_true(const tj *v) { return cJSON_IsTrue(NODE(v)); }
int tj_is_number(const tj *v) { return cJSON_IsNumber(NODE(v)); }
int tj_is_string(const tj *v) { return cJSON_IsString(NODE(v)) && NODE(v)->valuestring; }
int tj_is_array(const tj *v) { return cJSON_IsArray(NODE(v)); }
int tj_is_object(const tj *v) { return cJSON_IsObject(NODE(v)); }

double tj_number(const tj *v)
{
	return cJSON_IsNumber(NODE(v)) ? NODE(v)->valuedouble : 0;
}

const char *tj_string(const tj *v)
{
	return cJSON_IsString(NODE(v)) ? NODE(v)->valuestring : NULL;
}

const tj *tj_get(const tj *object, const char *key)
{
	if (!cJSON_IsObject(NODE(object)))
		return NULL;
	return TJ(cJSON_GetObjectItemCaseSensitive(NODE(object), key));
}

const tj *tj_first(const tj *v)
{
	return cJSON_IsArray(NODE(v)) || cJSON_IsObject(NODE(v)) ? TJ(NODE(v)->child) : NULL;
}

const tj *tj_next(const tj *v)
{
	return v ? TJ(NODE(v)->next) : NULL;
}

const char *tj_key(const tj *member)
{
	return member ? NODE(member)->string : NULL;
}

size_t tj_size(const tj *v)
{
	size_t n = 0;
	for (const tj *e = tj_first(v); e; e = tj_next(e))
		n++;
	return n;
}

const tj *tj_at(const tj *array, size_t i)
{
	const tj *e = tj_first(array);
	while (e && i--)
		e = tj_next(e);
	return e;
}

int tj_equal(const tj *a, const tj *b)
{
	return a && b && cJSON_Compare(NODE(a), NODE(b), 1);
}

char *tj_print(const tj *v)
{
	if (!v)
		return NULL;
	/* cJSON allocates with malloc: the tools never install other hooks. */
	return cJSON_PrintUnformatted(NODE(v));
}
