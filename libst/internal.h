/*
 * internal.h - helpers shared inside libst (st__ names). Not installed.
 * Tests may include it to reach the scalar reference paths.
 */
#ifndef ST_INTERNAL_H
#define ST_INTERNAL_H

#include <st.h>

#define ST_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Fill err (if not NULL) with code and a formatted message; return code. */
int st__error(st_error *err, int code, const char *fmt, ...) ST_PRINTF(3, 4);
/* The same, appending ": strerror(errnum)" and keeping errnum. */
int st__error_sys(st_error *err, int code, int errnum, const char *fmt, ...)
	ST_PRINTF(4, 5);

/* Overflow-checked u64 arithmetic: return 0 on success, -1 on overflow. */
static inline int st__mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}
static inline int st__add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? -1 : 0;
}

/* UTF-8 validity (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). */
int st__utf8_valid(const char *s, size_t len, size_t *bad_at);

/*
 * Append s as a JSON string literal (serde_json's escaping: ", \, and
 * control characters; \b \f \n \r \t short forms; others \u00xx lowercase).
 */
struct st__buf {
	char *data;
	size_t len, cap;
	int failed; /* an allocation failed */
};
void st__buf_put(struct st__buf *b, const void *p, size_t n);
void st__buf_puts(struct st__buf *b, const char *s);
void st__buf_printf(struct st__buf *b, const char *fmt, ...) ST_PRINTF(2, 3);
void st__buf_json_string(struct st__buf *b, const char *s, size_t len);
void st__buf_free(struct st__buf *b);

/* Scalar reference conversion (dtype.c); st_convert may vectorise. */
int st__convert_scalar(st_dtype dst_type, void *dst, st_dtype src_type,
                       const void *src, size_t n, st_convert_stats *stats);

#endif
