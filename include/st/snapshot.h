/*
 * st/snapshot.h - writing a snapshot directory atomically: planning shards
 * by size, a temporary sibling directory that receives the shard files,
 * the index and the other snapshot files, and the swap that puts it in
 * place. The directory is the old one or the new one at every instant.
 *
 * Recipe (write checkpoint c to OUT in shards of at most MAX bytes):
 *   1. st_shard_plan(tensors, n, MAX, shard, &n_shards, &err)
 *   2. st_snapshot_open(&s, "OUT", ST_SNAPSHOT_REPLACE, &err)
 *   3. for each shard k < n_shards:
 *        st_snapshot_file_name(name, sizeof name, k, n_shards)
 *        st_writer_new(&w, &err), st_writer_add(...) its tensors,
 *        st_snapshot_open_writer(s, w, name, &err),
 *        st_writer_write(...), st_writer_finish(w, &err), st_writer_free(w)
 *   4. st_snapshot_write_index(s, total, entries, n, &err)  if n_shards > 1
 *   5. st_snapshot_copy_dir(s, IN, c, NULL, fn, ctx, &err)  a directory IN's
 *                                                          config, tokenizer...
 *   6. st_snapshot_keep_old(s, c, fn, ctx, &err)  what else an existing OUT held
 *   7. st_snapshot_commit(s, &err)
 *   8. st_snapshot_close(s)      before a commit: removes everything written
 *
 * The temporary directory is "<parent>/.<base>.tmp-<pid>-XXXXXX", named and
 * cleaned up as st/atomic.h says: st_snapshot_open removes those of OUT
 * whose process is gone (after a kill -9). An existing OUT is not touched
 * until st_snapshot_commit.
 */
#ifndef ST_SNAPSHOT_H
#define ST_SNAPSHOT_H

#include "config.h"
#include "index.h"
#include "writer.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Split n tensors into shards of at most max_bytes bytes of data each, as
 * huggingface_hub's split_state_dict_into_shards_factory does: walk the
 * tensors in canonical order (st_canonical_order); a tensor larger than
 * the limit gets a shard of its own at once; any other starts a new shard
 * when it would push the current one past the limit. Shards are numbered
 * in the order they are completed. Only name, name_len, dtype and n_bytes
 * of each tensor are read (give the sizes they will have when written).
 * shard[i] receives tensor i's shard (from 0), *n_shards their number
 * (at least 1). max_bytes 0 means one shard.
 * Returns ST_OK, ST_ENOMEM.
 */
ST_API int st_shard_plan(const st_tensor *t, size_t n, uint64_t max_bytes,
                         unsigned *shard, unsigned *n_shards, st_error *err);

/*
 * The file name of shard k (from 0) of n: "model.safetensors" when n is 1,
 * else st_shard_name(k + 1, n). Truncated and NUL-terminated as snprintf.
 */
ST_API void st_snapshot_file_name(char *buf, size_t size, unsigned k,
                                  unsigned n);

typedef struct st_snapshot st_snapshot;

/* st_snapshot_open flags. REPLACE: an existing directory may be replaced. */
#define ST_SNAPSHOT_REPLACE 1u

/*
 * Start writing directory dir (an existing one is resolved through
 * symlinks and "..", and kept until commit). Creates the temporary
 * sibling, after removing stale ones. On success *out is the new handle
 * (close with st_snapshot_close). Returns ST_OK, ST_EINVAL (dir exists and
 * REPLACE is not set; dir is "." or ".." or names something that is not a
 * directory), ST_EIO (the temporary cannot be made), ST_ENOMEM.
 */
ST_API int st_snapshot_open(st_snapshot **out, const char *dir,
                            unsigned flags, st_error *err);

/* The final directory (resolved), and the temporary while not committed. */
ST_API const char *st_snapshot_path(const st_snapshot *s);
ST_API const char *st_snapshot_temp_path(const st_snapshot *s);

/*
 * Open writer w (declared, not yet open) on file name (a plain name) of the
 * new directory; the caller writes and finishes it. Returns what
 * st_writer_open returns, ST_EINVAL for a name that is not plain.
 */
ST_API int st_snapshot_open_writer(st_snapshot *s, st_writer *w,
                                   const char *name, st_error *err);

/*
 * Write model.safetensors.index.json into the new directory (as
 * st_index_write, no extra metadata).
 */
ST_API int st_snapshot_write_index(st_snapshot *s, uint64_t total_size,
                                   const st_index_entry *entries, size_t n,
                                   st_error *err);

/*
 * Write a file of the new directory holding len bytes of data, with these
 * permission bits (minus the umask). Returns ST_OK, ST_EINVAL (not a plain
 * name), ST_EIO (e.g. it exists already).
 */
ST_API int st_snapshot_add_file(st_snapshot *s, const char *name,
                                const void *data, size_t len, unsigned mode,
                                st_error *err);
/*
 * The same, replacing the file if the new directory has it already (e.g. a
 * config.json st_snapshot_copy_dir copied that the caller edits further).
 */
ST_API int st_snapshot_replace_file(st_snapshot *s, const char *name,
                                    const void *data, size_t len, unsigned mode,
                                    st_error *err);

/*
 * Severity of what st_snapshot_copy_dir and st_snapshot_keep_old did,
 * given to an st_problem_fn beside ST_PROBLEM_WARNING: a line for a
 * verbose report ("copied ...", "not copied: ...", "kept ...").
 */
#define ST_PROBLEM_NOTE 3

/*
 * Copy the snapshot files of directory src into the new directory:
 * everything but weight files (*.safetensors, *.bin, *.pt, *.gguf...,
 * and their indexes), the files of checkpoint c (may be NULL), .git and
 * .cache directories, the leftovers of a writer that is gone (a
 * ".NAME.tmp-PID-XXXXXX" whose process PID no longer exists; a note says
 * so), and the new directory and the target themselves.
 * Directories are followed through symlinks and rebuilt; files are copied
 * with their permission bits. Nothing outside src is read: a link whose
 * target lies outside src is not copied, and fn hears of it as a warning
 * naming the link (doc/safety.md). The one exception is a Hugging Face
 * cache snapshot ("models--O--N/snapshots/REV"), whose links may point
 * into that repository's blobs/, as every file of one does. When
 * torch_dtype is not NULL, a top-level config.json gets it
 * (st_config_set_dtype); one that is not a JSON object or larger than
 * ST_CONFIG_MAX_BYTES is copied as it is, with a warning. A top-level
 * file the new directory has already (st_snapshot_add_file, e.g. a
 * config.json the caller edited from its own reading) is not copied, so
 * src's is not read. fn (may be NULL) hears of every file. Returns
 * ST_OK, ST_EIO (naming the file), ST_ENOMEM.
 */
ST_API int st_snapshot_copy_dir(st_snapshot *s, const char *src,
                                const st_checkpoint *c,
                                const char *torch_dtype, st_problem_fn fn,
                                void *ctx, st_error *err);

/*
 * When the target exists: carry over every entry of it that the new
 * directory does not replace and that is not a file of its checkpoint
 * layout (model.safetensors, the index, model-#####-of-#####.safetensors
 * and the shards the old index names). Files are hard-linked (copied
 * across file systems), symlinks re-created, directories rebuilt. When
 * the target is the directory c was read from (in place) and c is
 * safetensors, c's files are the old layout too, whatever their names.
 * The leftovers of a writer that is gone are not kept either (a note
 * says so). Nothing to do when the target does not exist. Returns ST_OK,
 * ST_EIO.
 */
ST_API int st_snapshot_keep_old(st_snapshot *s, const st_checkpoint *c,
                                st_problem_fn fn, void *ctx, st_error *err);

/*
 * Put the new directory in place: sync it and every directory in it,
 * give it the old directory's permission bits, then exchange it with the
 * target atomically (renameat2 RENAME_EXCHANGE) and remove the old one;
 * or rename it into place when there is no target. Where the file system
 * cannot exchange, the old directory is renamed aside first, so the
 * target is the old directory, absent for an instant, or the new one.
 * Returns ST_OK, ST_ESTATE (committed twice), ST_EIO: when the new
 * directory could not be synced or put in place the target is as it was;
 * when only the sync of the parent directory after the exchange failed
 * ("cannot sync its directory") the new directory is in place and the
 * old one removed.
 */
ST_API int st_snapshot_commit(st_snapshot *s, st_error *err);

/* Close (pairs with st_snapshot_open); before a successful commit, remove
 * the temporary directory. NULL does nothing. */
ST_API void st_snapshot_close(st_snapshot *s);

#ifdef __cplusplus
}
#endif

#endif
