/*
 * error.c - status codes, error records, version, the readers' problem
 * reports (st__report), and the small buffer and UTF-8 helpers the rest of
 * libst shares.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *st_version_string(void) { return ST_VERSION_STRING; }

/*
 * A caller broke the API's contract (ST__REQUIRE): say where, as assert()
 * does, and abort. Returning would read or write out of bounds.
 */
void st__misuse(const char *file, int line, const char *func, const char *cond)
{
	fprintf(stderr, "libst: %s:%d: %s: misuse: '%s' does not hold\n", file, line,
	        func, cond);
	abort();
}

int st__bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

int st__ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

char *st__path_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, a);
	size_t k = a;
	if (a && dir[a - 1] != '/')
		p[k++] = '/';
	memcpy(p + k, name, b + 1);
	return p;
}

const char *st_strerror(int code)
{
	switch (code) {
	case ST_OK: return "success";
	case ST_EIO: return "input/output error";
	case ST_EFORMAT: return "not a valid safetensors file";
	case ST_ENOMEM: return "out of memory";
	case ST_EINVAL: return "invalid argument";
	case ST_ENOTFOUND: return "not found";
	case ST_EUNSUPPORTED: return "not supported";
	case ST_EINDEX: return "invalid shard index";
	case ST_ESTATE: return "call out of order";
	default: return "unknown error";
	}
}

void st__one_line(char *s, size_t size)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p && *p >= 0x20 && *p != 0x7f)
		p++;
	if (!*p)
		return; /* nothing to escape: the message as it was */
	char out[1024];
	size_t lim = size < sizeof out ? size : sizeof out, k = 0;
	for (p = (const unsigned char *)s; *p; p++) {
		int ctl = *p < 0x20 || *p == 0x7f;
		if (k + (ctl ? 4 : 1) >= lim)
			break;
		if (ctl)
			k += (size_t)snprintf(out + k, lim - k, "\\x%02x", *p);
		else
			out[k++] = (char)*p;
	}
	out[k] = 0;
	memcpy(s, out, k + 1);
}

int st__error(st_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->code = code;
		err->sys_errno = 0;
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
		st__one_line(err->message, sizeof err->message);
	}
	return code;
}

int st__error_sys(st_error *err, int code, int errnum, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->code = code;
		err->sys_errno = errnum;
		int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < sizeof err->message)
			snprintf(err->message + n, sizeof err->message - (size_t)n,
			         ": %s", strerror(errnum));
		st__one_line(err->message, sizeof err->message);
	}
	return code;
}

void st_problem_report(st_problem_fn fn, void *ctx, int severity, const char *fmt, ...)
{
	if (!fn)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	st__one_line(msg, sizeof msg);
	fn(ctx, severity, msg);
}

/*
 * A problem found by a reader: in open mode the first error goes to r->err
 * and later ones are only counted; in check mode every one goes to r->fn.
 */
void st__report(struct st__report *r, int severity, const char *fmt, ...)
{
	char msg[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* st__error and the line below make it one line, path included. */
	if (severity == ST_PROBLEM_ERROR) {
		r->n_errors++;
		if (!r->fn && r->n_errors == 1)
			st__error(r->err, ST_EFORMAT, "%s: %s", r->path, msg);
	}
	if (r->fn) {
		char line[512 + 480];
		snprintf(line, sizeof line, "%s: %s", r->path, msg);
		st__one_line(line, sizeof line);
		r->fn(r->ctx, severity, line);
	}
}

int st__utf8_valid(const char *str, size_t len, size_t *bad_at)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t need;
		unsigned min, cp;
		if (c >= 0xc2 && c <= 0xdf) { need = 1; cp = c & 0x1f; min = 0x80; }
		else if (c >= 0xe0 && c <= 0xef) { need = 2; cp = c & 0x0f; min = 0x800; }
		else if (c >= 0xf0 && c <= 0xf4) { need = 3; cp = c & 0x07; min = 0x10000; }
		else goto bad;
		if (len - i <= need)
			goto bad;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				goto bad;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			goto bad;
		i += need + 1;
	}
	return 1;
bad:
	if (bad_at)
		*bad_at = i;
	return 0;
}

void st__buf_put(struct st__buf *b, const void *p, size_t n)
{
	if (b->failed)
		return;
	if (b->cap - b->len < n + 1) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap - b->len < n + 1) {
			if (cap > SIZE_MAX / 2) {
				b->failed = 1;
				return;
			}
			cap *= 2;
		}
		char *d = realloc(b->data, cap);
		if (!d) {
			b->failed = 1;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	if (n) /* p may be NULL when there is nothing to copy */
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
}

void st__buf_puts(struct st__buf *b, const char *s) { st__buf_put(b, s, strlen(s)); }

void st__buf_printf(struct st__buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp) {
		b->failed = 1;
		return;
	}
	st__buf_put(b, tmp, (size_t)n);
}

void st__buf_json_string(struct st__buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	st__buf_put(b, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[6];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default:
			if (c < 0x20) {
				memcpy(u, "\\u00", 4);
				u[4] = hex[c >> 4];
				u[5] = hex[c & 15];
			}
		}
		if (!esc && c >= 0x20)
			continue;
		st__buf_put(b, s + run, i - run);
		if (esc)
			st__buf_puts(b, esc);
		else
			st__buf_put(b, u, 6);
		run = i + 1;
	}
	st__buf_put(b, s + run, len - run);
	st__buf_put(b, "\"", 1);
}

void st__buf_free(struct st__buf *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}
