/*
 * json.c - the tools' JSON tree (json.h) over cJSON, the one tools source
 * that includes it. A json_node is a cJSON node: the casts below are
 * the whole of the mapping.
 */
#include "fe/json.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#define NODE(v) ((const cJSON *)(const void *)(v))
#define NODE_OF(n) ((const json_node *)(const void *)(n))

json_node *json_parse(const char *text, size_t len, size_t *end)
{
	const char *stop = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, len, &stop, 0);
	if (end)
		*end = stop && stop >= text && stop <= text + len ? (size_t)(stop - text) : 0;
	return (json_node *)(void *)root;
}

void json_free(json_node *root)
{
	cJSON_Delete((cJSON *)(void *)root);
}

int json_is_null(const json_node *v) { return cJSON_IsNull(NODE(v)); }
int json_is_bool(const json_node *v) { return cJSON_IsBool(NODE(v)); }
int json_is_true(const json_node *v) { return cJSON_IsTrue(NODE(v)); }
int json_is_number(const json_node *v) { return cJSON_IsNumber(NODE(v)); }
int json_is_string(const json_node *v) { return cJSON_IsString(NODE(v)) && NODE(v)->valuestring; }
int json_is_array(const json_node *v) { return cJSON_IsArray(NODE(v)); }
int json_is_object(const json_node *v) { return cJSON_IsObject(NODE(v)); }

double json_number(const json_node *v)
{
	return cJSON_IsNumber(NODE(v)) ? NODE(v)->valuedouble : 0;
}

const char *json_string(const json_node *v)
{
	return cJSON_IsString(NODE(v)) ? NODE(v)->valuestring : NULL;
}

const json_node *json_get(const json_node *object, const char *key)
{
	if (!cJSON_IsObject(NODE(object)))
		return NULL;
	return NODE_OF(cJSON_GetObjectItemCaseSensitive(NODE(object), key));
}

const json_node *json_first(const json_node *v)
{
	return cJSON_IsArray(NODE(v)) || cJSON_IsObject(NODE(v)) ? NODE_OF(NODE(v)->child) : NULL;
}

const json_node *json_next(const json_node *v)
{
	return v ? NODE_OF(NODE(v)->next) : NULL;
}

const char *json_key(const json_node *member)
{
	return member ? NODE(member)->string : NULL;
}

size_t json_size(const json_node *v)
{
	size_t n = 0;
	for (const json_node *e = json_first(v); e; e = json_next(e))
		n++;
	return n;
}

const json_node *json_at(const json_node *array, size_t i)
{
	const json_node *e = json_first(array);
	while (e && i--)
		e = json_next(e);
	return e;
}

int json_equal(const json_node *a, const json_node *b)
{
	return a && b && cJSON_Compare(NODE(a), NODE(b), 1);
}

char *json_print(const json_node *v)
{
	if (!v)
		return NULL;
	/* cJSON allocates with malloc: the tools never install other hooks. */
	return cJSON_PrintUnformatted(NODE(v));
}
