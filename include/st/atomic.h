/*
 * st/atomic.h - replacing one file atomically: a temporary sibling, fsync,
 * rename over the target, fsync of the directory.
 *
 * Recipe:
 *   1. st_atomic_open(&a, "out.bin", &err)   creates the temporary sibling
 *   2. st_atomic_write(a, buf, n, &err)      any number of times
 *      (or write to st_atomic_fd(a) directly)
 *   3. st_atomic_commit(a, &err)             fsync, rename, fsync the dir
 *   4. st_atomic_close(a)                    before a commit: removes the
 *                                            temporary; the target is as
 *                                            it was
 *
 * The temporary is "<dir>/.<base>.tmp-<pid>-XXXXXX": recognisable, and
 * owned by process <pid>. A process killed before it could clean up (kill
 * -9, a crash, a power cut) leaves it behind; the next st_atomic_open, or
 * st_snapshot_open, for the same target removes such leftovers whose
 * process no longer exists (kill(pid, 0) fails with ESRCH). A process on
 * another host sharing the directory looks alive or dead by its pid here;
 * do not share one target between hosts.
 *
 * The temporary is created with mode 0666 minus the umask, as any new
 * file; when the target exists, its permission bits are kept.
 */
#ifndef ST_ATOMIC_H
#define ST_ATOMIC_H

#include "error.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_atomic st_atomic;

/*
 * Start replacing path: remove stale temporaries of path (see above) and
 * create a new one. On success *out is the new handle (free with
 * st_atomic_close). Returns ST_OK, ST_EINVAL (empty path, or one ending
 * in '/'), ST_EIO (path is a directory, or the temporary cannot be made),
 * ST_ENOMEM.
 */
ST_API int st_atomic_open(st_atomic **out, const char *path, st_error *err);

/* The temporary's descriptor and path; -1 and NULL after commit. */
ST_API int st_atomic_fd(const st_atomic *a);
ST_API const char *st_atomic_temp_path(const st_atomic *a);
/* The target path, as given to st_atomic_open. */
ST_API const char *st_atomic_path(const st_atomic *a);

/*
 * Append n bytes (short writes and EINTR retried). Returns ST_OK, ST_EIO
 * (the message names the target and the temporary; sys_errno is set).
 */
ST_API int st_atomic_write(st_atomic *a, const void *data, size_t n,
                           st_error *err);

/* Give the file these permission bits (fchmod). ST_OK or ST_EIO. */
ST_API int st_atomic_set_mode(st_atomic *a, unsigned mode, st_error *err);

/*
 * Start writeback of what has been written so far (sync_file_range,
 * without waiting), so that the commit's fsync has little left to do.
 * May be called from another thread while this one writes. Never fails:
 * it is advice.
 */
ST_API void st_atomic_writeback(st_atomic *a);

/*
 * Complete: fsync the temporary, rename it over the target, fsync the
 * directory. Returns ST_OK, ST_ESTATE (already committed), ST_EIO: when
 * the rename failed the temporary is removed and the target is as it
 * was; when only the directory fsync failed the new file is in place.
 */
ST_API int st_atomic_commit(st_atomic *a, st_error *err);

/* Free; before a successful commit, remove the temporary. NULL: nothing. */
ST_API void st_atomic_close(st_atomic *a);

#ifdef __cplusplus
}
#endif

#endif
