/*
 * hash.c - SHA-256 and SHA-1 through OpenSSL's libcrypto (EVP interface,
 * which picks the CPU's SHA extensions when it has them). This is the only
 * file of libst that includes an OpenSSL header; the rest of the library
 * and the tools hash through st/hash.h.
 *
 * It is not a verifier: what a digest should be, and what a mismatch
 * means, is verify.c's business.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

/* Large enough that the syscall cost vanishes, small enough for many threads. */
#define HASH_FD_BUF (1u << 20)

struct st_hash {
	EVP_MD_CTX *ctx;
	st_hash_algo algo;
	int finished;        /* st_hash_final was called */
	int started;         /* bytes were hashed (git prefix included) */
	int git_sized;       /* st_hash_git_begin was called */
	uint64_t git_size, hashed;
};

size_t st_hash_size(st_hash_algo algo)
{
	return algo == ST_HASH_SHA256 ? 32 : 20;
}

const char *st_hash_name(st_hash_algo algo)
{
	switch (algo) {
	case ST_HASH_SHA256: return "sha256";
	case ST_HASH_SHA1: return "sha1";
	case ST_HASH_GIT_SHA1: return "git-sha1";
	}
	return "?";
}

static const EVP_MD *md_of(st_hash_algo algo)
{
	return algo == ST_HASH_SHA256 ? EVP_sha256() : EVP_sha1();
}

static int init(st_hash *h, st_error *err)
{
	h->finished = h->started = h->git_sized = 0;
	h->git_size = h->hashed = 0;
	if (EVP_DigestInit_ex(h->ctx, md_of(h->algo), NULL) != 1)
		return st__error(err, ST_EUNSUPPORTED,
		                 "libcrypto cannot compute %s here",
		                 st_hash_name(h->algo));
	return ST_OK;
}

int st_hash_new(st_hash **out, st_hash_algo algo, st_error *err)
{
	*out = NULL;
	if (algo != ST_HASH_SHA256 && algo != ST_HASH_SHA1 &&
	    algo != ST_HASH_GIT_SHA1)
		return st__error(err, ST_EINVAL, "unknown hash algorithm %d",
		                 (int)algo);
	st_hash *h = calloc(1, sizeof *h);
	if (!h || !(h->ctx = EVP_MD_CTX_new())) {
		free(h);
		return st__error(err, ST_ENOMEM, "out of memory for a hash context");
	}
	h->algo = algo;
	int rc = init(h, err);
	if (rc) {
		st_hash_free(h);
		return rc;
	}
	*out = h;
	return ST_OK;
}

void st_hash_free(st_hash *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

int st_hash_reset(st_hash *h, st_error *err)
{
	return init(h, err);
}

int st_hash_git_begin(st_hash *h, uint64_t size, st_error *err)
{
	if (h->algo != ST_HASH_GIT_SHA1 || h->started || h->finished)
		return st__error(err, ST_ESTATE, "git blob header: only first, "
		                 "and only for git-sha1");
	char head[40];
	int n = snprintf(head, sizeof head, "blob %llu", (unsigned long long)size);
	/* The NUL snprintf wrote ends the header: hash n + 1 bytes. */
	if (EVP_DigestUpdate(h->ctx, head, (size_t)n + 1) != 1)
		return st__error(err, ST_EUNSUPPORTED, "libcrypto: sha1 update failed");
	h->started = h->git_sized = 1;
	h->git_size = size;
	return ST_OK;
}

int st_hash_update(st_hash *h, const void *data, size_t n, st_error *err)
{
	if (h->finished)
		return st__error(err, ST_ESTATE, "hash update after final");
	if (n && EVP_DigestUpdate(h->ctx, data, n) != 1)
		return st__error(err, ST_EUNSUPPORTED, "libcrypto: %s update failed",
		                 st_hash_name(h->algo));
	h->started = 1;
	h->hashed += n;
	return ST_OK;
}

int st_hash_final(st_hash *h, unsigned char *digest, st_error *err)
{
	if (h->finished)
		return st__error(err, ST_ESTATE, "hash finalised twice");
	if (h->algo == ST_HASH_GIT_SHA1 && !h->git_sized) {
		/* No size announced: the bytes hashed are the blob (empty here). */
		if (h->hashed)
			return st__error(err, ST_ESTATE, "git blob: size not given "
			                 "before its bytes");
		int rc = st_hash_git_begin(h, 0, err);
		if (rc)
			return rc;
	}
	if (h->algo == ST_HASH_GIT_SHA1 && h->hashed != h->git_size)
		return st__error(err, ST_ESTATE, "git blob: %llu bytes hashed, its "
		                 "header says %llu", (unsigned long long)h->hashed,
		                 (unsigned long long)h->git_size);
	unsigned len = 0;
	h->finished = 1;
	if (EVP_DigestFinal_ex(h->ctx, digest, &len) != 1 ||
	    len != st_hash_size(h->algo))
		return st__error(err, ST_EUNSUPPORTED, "libcrypto: %s final failed",
		                 st_hash_name(h->algo));
	return ST_OK;
}

void st_hash_hex(const unsigned char *digest, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[digest[i] >> 4];
		hex[2 * i + 1] = digits[digest[i] & 15];
	}
	hex[2 * n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int st_hash_unhex(const char *s, size_t n, unsigned char *digest)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hi < 0 ? -1 : hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		digest[i] = (unsigned char)(hi << 4 | lo);
	}
	return s[2 * n] == '\0' ? 0 : -1;
}

int st__is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int st_hash_fd(int fd, const char *name, st_hash_algo algo,
               unsigned char *digest, uint64_t *n_bytes, st_error *err)
{
	if (!name)
		name = "<fd>";
	st_hash *h;
	int rc = st_hash_new(&h, algo, err);
	if (rc)
		return rc;
	if (algo == ST_HASH_GIT_SHA1) {
		struct stat sb;
		off_t at = lseek(fd, 0, SEEK_CUR);
		if (fstat(fd, &sb) < 0 || at < 0) {
			rc = st__error_sys(err, ST_EIO, errno, "%s: stat", name);
			goto out;
		}
		if (!S_ISREG(sb.st_mode) || sb.st_size < at) {
			rc = st__error(err, ST_EINVAL, "%s: a git blob id needs a "
			               "regular file", name);
			goto out;
		}
		if ((rc = st_hash_git_begin(h, (uint64_t)(sb.st_size - at), err)))
			goto out;
	}
	unsigned char *buf = malloc(HASH_FD_BUF);
	if (!buf) {
		rc = st__error(err, ST_ENOMEM, "%s: out of memory for a read buffer",
		               name);
		goto out;
	}
	uint64_t total = 0;
	for (;;) {
		ssize_t k = read(fd, buf, HASH_FD_BUF);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = st__error_sys(err, ST_EIO, errno, "%s: read", name);
			break;
		}
		if (k == 0)
			break;
		if ((rc = st_hash_update(h, buf, (size_t)k, err)))
			break;
		total += (uint64_t)k;
	}
	free(buf);
	if (rc == ST_OK) {
		rc = st_hash_final(h, digest, err);
		/* The only final failure left for git is a size change. */
		if (rc == ST_ESTATE)
			rc = st__error(err, ST_EIO, "%s: the file changed size while "
			               "it was read", name);
	}
	if (rc == ST_OK && n_bytes)
		*n_bytes = total;
out:
	st_hash_free(h);
	return rc;
}
