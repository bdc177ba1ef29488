/*
 * util.c - the helpers every file of tools/gpt2 shares (internal.h): the
 * one error convention, paths, and text from files made printable for a
 * message. No model, no arithmetic.
 */
#include "gpt2/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int gpt2_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		char m[1024];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(m, sizeof m, fmt, ap);
		va_end(ap);
		/* One line, whatever a file's names hold (doc/errors.md): each
		 * byte below 0x20 and DEL as \xNN, as libst's messages. */
		size_t k = 0;
		for (const unsigned char *p = (const unsigned char *)m; *p; p++) {
			int ctl = *p < 0x20 || *p == 0x7f;
			if (k + (ctl ? 4 : 1) >= errlen)
				break;
			if (ctl)
				k += (size_t)snprintf(err + k, errlen - k, "\\x%02x", *p);
			else
				err[k++] = (char)*p;
		}
		err[k] = 0;
	}
	return -1;
}

int gpt2_join(char *out, size_t size, const char *dir, const char *file,
              char *err, size_t errlen)
{
	size_t n = strlen(dir);
	int k = snprintf(out, size, "%s%s%s", dir,
	                 n && dir[n - 1] == '/' ? "" : "/", file);
	if (k < 0 || (size_t)k >= size)
		return gpt2_err(err, errlen, "%s/%s: path too long", dir, file);
	return 0;
}

/* A tensor name made printable and short enough for a message. */
void gpt2_printable(char *out, size_t size, const char *s, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '\'')
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
		if (i + 1 < len && o + 8 >= size) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
	}
	out[o] = '\0';
}

void *gpt2_big_alloc(size_t n)
{
	if (n == 0)
		n = 1;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	               -1, 0);
	/*
	 * No MADV_HUGEPAGE: with the kernel compacting memory on each huge
	 * page fault, loading took twice as long on a busy machine.
	 */
	return p == MAP_FAILED ? NULL : p;
}

void gpt2_big_free(void *p, size_t n)
{
	if (p)
		munmap(p, n ? n : 1);
}
