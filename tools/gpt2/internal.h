/*
 * internal.h - helpers the files of tools/gpt2 share with each other (not
 * with the tools that use them): the error convention and paths
 * (util.c), random seeds (gpt2_sample.c).
 *
 * The error convention of all of tools/gpt2: a function that can fail
 * returns 0 on success and -1 on failure, and then leaves one line in its
 * caller's err (errlen bytes; err may be NULL) that names the file, the
 * tensor and the numbers where there are any. Constructors take the
 * object's address as their first argument (gpt2_model_new(&m, ...)) and
 * set it to NULL on failure. Functions that cannot fail return their
 * value.
 */
#ifndef ST_GPT2_INTERNAL_H
#define ST_GPT2_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <st.h>

/*
 * Format one line into err (errlen bytes; nothing when err is NULL): each
 * byte below 0x20 and DEL of what the format gives (a name from a file)
 * as \xNN, as libst's messages (st__one_line). Returns -1, so that a
 * failure reads "return gpt2_err(err, ...)". An argument may be err itself.
 */
int gpt2_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * dir "/" file into out, with no doubled slash. Returns 0, or -1 with a
 * message in err when it does not fit in size bytes.
 */
int gpt2_join(char *out, size_t size, const char *dir, const char *file,
              char *err, size_t errlen);

/*
 * Text from a file (a tensor name, a JSON string) made printable and
 * short enough for a message: control bytes and quotes as \xNN, "..."
 * when cut to fit size bytes.
 */
void gpt2_printable(char *out, size_t size, const char *s, size_t len);

/*
 * n bytes of zeroed, page-aligned memory for the large arrays (weights, KV
 * cache), straight from mmap: zero without a pass of memset, and each
 * page first touched by the code that fills it. NULL when out of memory;
 * free with gpt2_big_free(p, n), the same n.
 */
void *gpt2_big_alloc(size_t n);
void gpt2_big_free(void *p, size_t n);

/* Bytes per element of a dtype held in memory. */
static inline size_t gpt2_dtype_size(st_dtype t)
{
	return st_dtype_bits(t) / 8;
}

/*
 * splitmix64 (Steele, Lea and Flood; Vigna's constants): advance *x and
 * return its next output. Seeds the sampler and gpt2export's streams.
 * Defined in gpt2_sample.c.
 */
uint64_t gpt2_splitmix64(uint64_t *x);

/*
 * config.c's readers, shared with llama_config.c. gpt2_json_object: the
 * JSON object of a config file, refused (NULL, one line in err) when it
 * is malformed, holds a NUL, a duplicate key or trailing data.
 * gpt2_json_eos: eos_token_id (an integer, a list or null) into cfg's
 * eos and n_eos. gpt2_read_config_file: a config file's text (malloc'd);
 * 0, 1 when absent and optional, or -1.
 */
struct json_node;
struct gpt2_config;
struct json_node *gpt2_json_object(const char *json, size_t len,
                                   const char *name, char *err,
                                   size_t errlen);
int gpt2_json_eos(const struct json_node *v, struct gpt2_config *cfg,
                  const char *name, char *err, size_t errlen);
int gpt2_read_config_file(const char *path, char **buf, size_t *len,
                          int optional, char *err, size_t errlen);

#endif
