/*
 * sniff.c - what kind of file this is, from its first bytes (st/sniff.h,
 * doc/format.md "What a file is"). No allocation; st_sniff_path reads at
 * most ST_SNIFF_BYTES.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int starts_with_ci(const unsigned char *s, size_t len, const char *p)
{
	size_t n = strlen(p);
	if (len < n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (c != (unsigned char)p[i])
			return 0;
	}
	return 1;
}

/*
 * Text: no NUL or other C0 control but tab, CR, LF and form feed, no DEL,
 * and bytes >= 0x80 in well-formed UTF-8 sequences (a sequence cut by the
 * end of the sample counts as well formed).
 */
static int looks_like_text(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		if (c < 0x80) {
			if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') ||
			    c == 0x7f)
				return 0;
			i++;
			continue;
		}
		size_t n = c >= 0xf0 && c <= 0xf4 ? 4
		           : c >= 0xe0            ? (c <= 0xef ? 3 : 0)
		           : c >= 0xc2            ? 2
		                                  : 0;
		if (n == 0)
			return 0;
		for (size_t k = 1; k < n && i + k < len; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
		i += n;
	}
	return 1;
}

/*
 * A length N that the format allows (doc/format.md rules 2 and 3) and a
 * header that starts, after JSON whitespace (rule 5), with '{'. A sample
 * that ends inside the whitespace counts as a match.
 */
static int safetensors_prefix(const unsigned char *h, size_t len, uint64_t file_size)
{
	if (len < 9)
		return 0;
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = (n << 8) | h[i];
	if (file_size < 8 || n < 2 || n > 100000000 || n > file_size - 8)
		return 0;
	size_t end = len - 8 < n ? len : (size_t)(8 + n);
	for (size_t i = 8; i < end; i++) {
		if (h[i] == '{')
			return 1;
		if (h[i] != ' ' && h[i] != '\t' && h[i] != '\r' && h[i] != '\n')
			return 0;
	}
	return end == len;
}

int st_sniff(const void *head, size_t len, uint64_t file_size)
{
	const unsigned char *h = head;
	if (len == 0)
		return ST_KIND_EMPTY;
	if (len > ST_SNIFF_BYTES)
		len = ST_SNIFF_BYTES;
	/* First, as st_file_open decides: a length that fits wins over a
	 * magic number in its low bytes (PK.., 0x80 0x02 ...). */
	if (safetensors_prefix(h, len, file_size))
		return ST_KIND_SAFETENSORS;
	if (len >= 4 && !memcmp(h, "GGUF", 4))
		return ST_KIND_GGUF;
	if (len >= 4 && !memcmp(h, "PK\3\4", 4))
		return ST_KIND_ZIP;
	if (len >= 2 && h[0] == 0x1f && h[1] == 0x8b)
		return ST_KIND_GZIP;
	if (len >= 262 && !memcmp(h + 257, "ustar", 5))
		return ST_KIND_TAR;
	if (len >= 2 && h[0] == 0x80 && h[1] >= 2 && h[1] <= 5)
		return ST_KIND_PICKLE;
	size_t i = 0;
	if (len >= 3 && h[0] == 0xef && h[1] == 0xbb && h[2] == 0xbf)
		i = 3;
	while (i < len && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n'))
		i++;
	const unsigned char *t = h + i;
	size_t tl = len - i;
	if (starts_with_ci(t, tl, "version https://git-lfs"))
		return ST_KIND_LFS_POINTER;
	if (starts_with_ci(t, tl, "<!doctype") || starts_with_ci(t, tl, "<html") ||
	    starts_with_ci(t, tl, "<?xml"))
		return ST_KIND_HTML;
	if (!looks_like_text(h, len))
		return ST_KIND_UNKNOWN;
	if (tl > 0 && (t[0] == '{' || t[0] == '['))
		return ST_KIND_JSON;
	return ST_KIND_TEXT;
}

int st_sniff_path(const char *path, int *kind, st_error *err)
{
	ST__REQUIRE(path && kind);
	struct stat st;
	if (stat(path, &st) < 0)
		return st__error_sys(err, ST_EIO, errno, "%s", path);
	if (S_ISDIR(st.st_mode)) {
		*kind = ST_KIND_DIRECTORY;
		return ST_OK;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return st__error_sys(err, ST_EIO, errno, "%s", path);
	unsigned char buf[ST_SNIFF_BYTES];
	size_t got = 0;
	while (got < sizeof buf) {
		ssize_t r = read(fd, buf + got, sizeof buf - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			return st__error_sys(err, ST_EIO, e, "%s: read", path);
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	uint64_t size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : UINT64_MAX;
	*kind = st_sniff(buf, got, size);
	return ST_OK;
}

const char *st_kind_name(int kind)
{
	static const char *const names[ST_KIND_COUNT] = {
		[ST_KIND_UNKNOWN] = "a binary file of no format libst knows",
		[ST_KIND_EMPTY] = "an empty file",
		[ST_KIND_SAFETENSORS] = "a safetensors file",
		[ST_KIND_GGUF] = "a GGUF file",
		[ST_KIND_JSON] = "a JSON text file",
		[ST_KIND_ZIP] = "a zip archive",
		[ST_KIND_PICKLE] = "a Python pickle",
		[ST_KIND_TAR] = "a tar archive",
		[ST_KIND_GZIP] = "a gzip-compressed file",
		[ST_KIND_HTML] = "an HTML/XML page",
		[ST_KIND_LFS_POINTER] = "a Git LFS pointer file",
		[ST_KIND_TEXT] = "a text file",
		[ST_KIND_DIRECTORY] = "a directory",
	};
	if (kind < 0 || kind >= ST_KIND_COUNT)
		return "a file of an unknown kind";
	return names[kind];
}
