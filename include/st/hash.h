/*
 * st/hash.h - SHA-256 and SHA-1 of bytes and of files.
 *
 * The digests content-addressed stores name files by: Hugging Face keeps
 * a large (LFS) file under the SHA-256 of its bytes and a small
 * git-stored one under its git blob id, the SHA-1 of "blob <size>\0"
 * followed by the bytes (ST_HASH_GIT_SHA1 adds that prefix itself).
 *
 * Recipe, streaming:
 *   1. st_hash_new(&h, ST_HASH_SHA256, &err)
 *   2. st_hash_update(h, p, n, &err) as often as needed
 *      (ST_HASH_GIT_SHA1: first st_hash_git_begin(h, total_size, &err))
 *   3. st_hash_final(h, digest, &err); st_hash_reset(h, &err) to reuse
 *   4. st_hash_free(h)
 * or in one call over an open file: st_hash_fd().
 *
 * A context is used by one thread at a time; distinct contexts may be
 * used from distinct threads.
 */
#ifndef ST_HASH_H
#define ST_HASH_H

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum st_hash_algo {
	ST_HASH_SHA256 = 0,
	ST_HASH_SHA1 = 1,     /* plain SHA-1 of the bytes */
	ST_HASH_GIT_SHA1 = 2  /* git blob id: SHA-1 of "blob <size>\0" + bytes */
} st_hash_algo;

/* The largest digest in bytes (SHA-256), and its hex form with the NUL. */
#define ST_HASH_MAX_SIZE 32
#define ST_HASH_MAX_HEX (2 * ST_HASH_MAX_SIZE + 1)

typedef struct st_hash st_hash;

/* Digest size in bytes: 32 for SHA-256, 20 for both SHA-1s. */
ST_API size_t st_hash_size(st_hash_algo algo);
/* "sha256", "sha1" or "git-sha1". */
ST_API const char *st_hash_name(st_hash_algo algo);

/*
 * A new context ready for st_hash_update (free with st_hash_free).
 * Returns ST_OK, ST_EINVAL (unknown algo), ST_ENOMEM, ST_EUNSUPPORTED
 * (libcrypto refused the digest, e.g. a FIPS-only configuration).
 */
ST_API int st_hash_new(st_hash **out, st_hash_algo algo, st_error *err);
/* Free a context. NULL does nothing. */
ST_API void st_hash_free(st_hash *h);
/* Start again, as if new. Returns ST_OK or ST_EUNSUPPORTED. */
ST_API int st_hash_reset(st_hash *h, st_error *err);
/*
 * ST_HASH_GIT_SHA1 only, before any st_hash_update: hash the header
 * "blob <size>\0" of a blob of size bytes. Returns ST_OK, ST_ESTATE (wrong
 * algorithm or bytes already hashed), ST_EUNSUPPORTED.
 */
ST_API int st_hash_git_begin(st_hash *h, uint64_t size, st_error *err);
/* Hash n more bytes. Returns ST_OK, ST_ESTATE (after final), ST_EUNSUPPORTED. */
ST_API int st_hash_update(st_hash *h, const void *data, size_t n,
                          st_error *err);
/*
 * Finish: write st_hash_size() bytes to digest. The context then needs
 * st_hash_reset before it is used again. ST_HASH_GIT_SHA1 checks that
 * the bytes hashed add up to the size given to st_hash_git_begin.
 * Returns ST_OK, ST_ESTATE (git size mismatch, or final twice),
 * ST_EUNSUPPORTED.
 */
ST_API int st_hash_final(st_hash *h, unsigned char *digest, st_error *err);

/* Lowercase hex of n digest bytes into hex (2n + 1 bytes with the NUL). */
ST_API void st_hash_hex(const unsigned char *digest, size_t n, char *hex);
/*
 * Parse exactly 2 * n hex digits (either case) into digest; 0 on success,
 * -1 when s is anything else.
 */
ST_API int st_hash_unhex(const char *s, size_t n, unsigned char *digest);

/*
 * Hash everything an open file holds from its current offset to its end,
 * reading with read(2) into a buffer of at most 1 MiB (memory stays
 * bounded whatever the file's size). For ST_HASH_GIT_SHA1 the size comes
 * from fstat and must match the bytes read. *n_bytes (if not NULL)
 * receives the count hashed. The fd is not closed. name is used in
 * messages.
 * Returns ST_OK, ST_EIO (read failed, or the file changed size while
 * read), ST_ENOMEM, ST_EINVAL, ST_EUNSUPPORTED.
 */
ST_API int st_hash_fd(int fd, const char *name, st_hash_algo algo,
                      unsigned char *digest, uint64_t *n_bytes,
                      st_error *err);

#ifdef __cplusplus
}
#endif

#endif
