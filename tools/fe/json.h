/*
 * json.h - a read-only tree of a parsed JSON document, for the tools'
 * readers of config.json, generation_config.json and the tokenizer files.
 *
 * json.c is the only tools source that includes cJSON (libst has its own,
 * libst/json.c); everything else reads documents through these calls, so
 * the parser can change in one place. Values are borrowed from their
 * document and live until json_free of it. Every accessor takes NULL (an
 * absent member) and answers as for a value of no type: json_get and the
 * walkers give NULL, the tests 0.
 *
 * Strings are NUL-terminated UTF-8; a \u0000 escape ends them there (the
 * parser's limit: none of the files read here can use it in a key or a
 * value that matters).
 */
#ifndef ST_TOOLS_JSON_H
#define ST_TOOLS_JSON_H

#include <stddef.h>

typedef struct json_node json_node; /* one value of a document */

/*
 * Parse the JSON value at the start of len bytes of text (a NUL byte ends
 * the text). Returns its root, *end (if not NULL) the offset just after
 * it: what follows is the caller's to check. Or NULL if the text does not
 * start with a value or memory ran out, *end then the offset where
 * parsing stopped.
 */
json_node *json_parse(const char *text, size_t len, size_t *end);
/* Free a document (its root); NULL is ignored. */
void json_free(json_node *root);

int json_is_null(const json_node *v);
int json_is_bool(const json_node *v);
int json_is_true(const json_node *v);
int json_is_number(const json_node *v);
int json_is_string(const json_node *v);
int json_is_array(const json_node *v);
int json_is_object(const json_node *v);

/* A number's value (0 for any other value). */
double json_number(const json_node *v);
/* A string's text, or NULL for any other value. */
const char *json_string(const json_node *v);

/* The member of an object named key (case-sensitive), or NULL. */
const json_node *json_get(const json_node *object, const char *key);
/* The elements of an array or the members of an object, in order. */
const json_node *json_first(const json_node *v);
const json_node *json_next(const json_node *v);
/* The key of an object's member (from json_first/json_next), else NULL. */
const char *json_key(const json_node *member);
/* How many elements or members; element i (linear in i), or NULL. */
size_t json_size(const json_node *v);
const json_node *json_at(const json_node *array, size_t i);

/* Whether a and b are the same JSON value (object members by key). */
int json_equal(const json_node *a, const json_node *b);
/* v as compact JSON text, malloc'd (free()), or NULL if memory ran out. */
char *json_print(const json_node *v);

#endif
