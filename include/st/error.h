/* st/error.h - status codes and the caller-owned error record. */
#ifndef ST_ERROR_H
#define ST_ERROR_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define ST_API
#elif defined(ST_BUILDING_LIBRARY)
#define ST_API __attribute__((visibility("default")))
#else
#define ST_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Every fallible call returns ST_OK (0) or one of these negative codes.
 * When it fails it fills the optional st_error it is given (code: the
 * code returned; message: one line; sys_errno). After a success the
 * record's content is unspecified: read it only after a failure, and do
 * not clear it before a call (doc/errors.md).
 */
enum {
	ST_OK = 0,
	ST_EIO = -1,          /* open/read/write/mmap/rename failed (errno kept) */
	ST_EFORMAT = -2,      /* the file breaks a rule of the format */
	ST_ENOMEM = -3,       /* an allocation failed */
	ST_EINVAL = -4,       /* a caller's argument is not acceptable */
	ST_ENOTFOUND = -5,    /* no such tensor, file or key */
	ST_EUNSUPPORTED = -6, /* a valid request libst does not implement */
	ST_EINDEX = -7,       /* a shard index breaks a rule (I1-I5) */
	ST_ESTATE = -8        /* call out of order (e.g. writer not open) */
};

/*
 * The error record. message is one line, without a trailing newline, and
 * names the file, the tensor and the numbers found vs expected where there
 * are such; e.g.
 *   "model.safetensors: tensor 'w': data_offsets [0, 100) hold 100 bytes; F32 [5, 6] needs 120"
 * sys_errno is the errno of a failed system call, or 0.
 */
typedef struct st_error {
	int code;
	int sys_errno;
	char message[512];
} st_error;

/* A static English description of a status code ("format error"...). */
ST_API const char *st_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif
