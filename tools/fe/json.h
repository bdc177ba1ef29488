/*
 * json.h - a read-only tree of a parsed JSON document, for the tools'
 * readers of config.json, generation_config.json and the tokenizer files.
 *
 * json.c is the only tools source that includes cJSON (libst has its own,
 * libst/json.c); everything else reads documents through these calls, so
 * the parser can change in one place. Values are borrowed from their
 * document and live until tj_free of it. Every accessor takes NULL (an
 * absent member) and answers as for a value of no type: tj_get and the
 * walkers give NULL, the tests 0.
 *
 * Strings are NUL-terminated UTF-8; a \u0000 escape ends them there (the
 * parser's limit: none of the files read here can use it in a key or a
 * value that matters).
 */
#ifndef ST_TOOLS_JSON_H
#define ST_TOOLS_JSON_H

#include <stddef.h>

typedef struct tj tj; /* one value of a document */

/*
 * Parse the JSON value at the start of len bytes of text (a NUL byte ends
 * the text). Returns its root, *end (if not NULL) the offset just after
 * it: what follows is the caller's to check. Or NULL if the text does not
 * start with a value or memory ran out, *end then the offset where
 * parsing stopped.
 */
tj *tj_parse(const char *text, size_t len, size_t *end);
/* Free a document (its root); NULL is ignored. */
void tj_free(tj *root);

int tj_is_null(const tj *v);
int tj_is_bool(const tj *v);
int tj_is_true(const tj *v);
int tj_is_number(const tj *v);
int tj_is_string(const tj *v);
int tj_is_array(const tj *v);
int tj_is_object(const tj *v);

/* A number's value (0 for any other value). */
double tj_number(const tj *v);
/* A string's text, or NULL for any other value. */
const char *tj_string(const tj *v);

/* The member of an object named key (case-sensitive), or NULL. */
const tj *tj_get(const tj *object, const char *key);
/* The elements of an array or the members of an object, in order. */
const tj *tj_first(const tj *v);
const tj *tj_next(const tj *v);
/* The key of an object's member (from tj_first/tj_next), else NULL. */
const char *tj_key(const tj *member);
/* How many elements or members; element i (linear in i), or NULL. */
size_t tj_size(const tj *v);
const tj *tj_at(const tj *array, size_t i);

/* Whether a and b are the same JSON value (object members by key). */
int tj_equal(const tj *a, const tj *b);
/* v as compact JSON text, malloc'd (free()), or NULL if memory ran out. */
char *tj_print(const tj *v);

#endif
