/*
 * st/checkpoint.h - a checkpoint: one file, or shards and their index, or
 * a snapshot directory, opened as one.
 *
 * A checkpoint PATH is any of
 *   - a .safetensors file;
 *   - a shard index (*.safetensors.index.json) with its shards beside it;
 *   - a snapshot directory: model.safetensors.index.json if present, else
 *     model.safetensors, else the single *.safetensors in it; with
 *     ST_OPEN_TORCH, else pytorch_model.bin.index.json, else
 *     pytorch_model.bin;
 *   - with ST_OPEN_TORCH, a PyTorch checkpoint file (see st/file.h), or a
 *     sharded one's *.bin.index.json (same rules, shards ending in .bin).
 * Sharded checkpoints behave as one: tensors are numbered across shards.
 * Like an st_file, one st_checkpoint may be read from many threads at once
 * (every call but st_checkpoint_close).
 * An index at or past st_checkpoint_n_files / st_checkpoint_n_tensors
 * aborts (libst.3, "Misuse"), as for an st_file.
 *
 * Index format: {"metadata": {"total_size": N, ...},
 *                "weight_map": {"tensor": "model-00001-of-00002.safetensors"}}
 * with rules I1-I5 of doc/index.md, checked by st_check_path
 * (st_checkpoint_open needs I1's weight_map, I2, I3 and I5).
 */
#ifndef ST_CHECKPOINT_H
#define ST_CHECKPOINT_H

#include "file.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_checkpoint st_checkpoint;

/*
 * Open PATH (see above). Opens every shard's header; no data is read.
 * flags: 0 or ST_OPEN_TORCH.
 * An index must have a weight_map of plain shard names (I1, I2) that
 * agrees with the shards (I3), and every shard must be a valid file (I5);
 * like every loader it does not need metadata.total_size (I1, I4): use
 * st_check_path for those.
 * Returns ST_OK, ST_EIO, ST_EFORMAT (a shard breaks a rule), ST_EINDEX (the
 * index breaks I1-I3, or names a missing shard), ST_ENOTFOUND (a directory
 * with no safetensors file, or several and no index), ST_ENOMEM.
 */
ST_API int st_checkpoint_open(st_checkpoint **out, const char *path,
                              unsigned flags, st_error *err);
/*
 * The same, reading a PyTorch checkpoint's sub-dictionary: keys[0..n_keys)
 * from the top down (each one level, or several as "K1.K2"), in every
 * shard. n_keys 0: the whole checkpoint, or the one key of state_dict,
 * model, module, model_state_dict that holds every tensor
 * (st_file_torch_info says which). A key that is missing, or is not a
 * dictionary, is ST_EFORMAT. Safetensors files ignore keys.
 */
ST_API int st_checkpoint_open_key(st_checkpoint **out, const char *path,
                                  unsigned flags, const char *const *keys,
                                  size_t n_keys, st_error *err);
/*
 * A checkpoint of the one open file f (e.g. from st_file_open_fd), which it
 * takes in every case (closed on failure too). Its path is st_file_path(f),
 * it has no index and no directory (st_checkpoint_dir is NULL: no
 * config.json is looked for). Returns ST_OK, ST_ENOMEM.
 */
ST_API int st_checkpoint_from_file(st_checkpoint **out, st_file *f,
                                   st_error *err);
ST_API void st_checkpoint_close(st_checkpoint *c);

/*
 * The PATH as given; the index path or NULL; the directory holding the
 * files (NULL for st_checkpoint_from_file's).
 */
ST_API const char *st_checkpoint_path(const st_checkpoint *c);
ST_API const char *st_checkpoint_index_path(const st_checkpoint *c);
ST_API const char *st_checkpoint_dir(const st_checkpoint *c);

/* The files (one, or the shards in index order of first appearance). */
ST_API size_t st_checkpoint_n_files(const st_checkpoint *c);
ST_API st_file *st_checkpoint_file(const st_checkpoint *c, size_t i);

/*
 * Tensors of all files: file by file, each in data order. *file (if not
 * NULL) receives the index of the file holding tensor i.
 */
ST_API size_t st_checkpoint_n_tensors(const st_checkpoint *c);
ST_API const st_tensor *st_checkpoint_tensor(const st_checkpoint *c,
                                             size_t i, size_t *file);
/* Index of the tensor with this name, or -1. */
ST_API long st_checkpoint_find(const st_checkpoint *c, const char *name,
                               size_t len);
/* Sum of tensor data bytes (what an index's total_size must say). */
ST_API uint64_t st_checkpoint_data_bytes(const st_checkpoint *c);

/* st_file_data / st_file_read on the file holding tensor i. */
ST_API int st_checkpoint_data(st_checkpoint *c, size_t i, const void **data,
                              st_error *err);
ST_API int st_checkpoint_read(st_checkpoint *c, size_t i, uint64_t off,
                              void *buf, size_t n, st_error *err);

/*
 * Check PATH fully: every rule of every file and I1-I5, reporting every
 * problem to fn. A PyTorch checkpoint (and pytorch_model.bin.index.json) is
 * checked too: its pickle, every tensor's view, and the CRC-32 of every
 * zip member, the storages read in place included (an open does not read
 * those). A folder PATH's leftovers of a writer that is gone
 * (".NAME.tmp-PID-XXXXXX" whose process PID no longer exists) are each
 * a warning, not an error. Returns the number of errors (>= 0), or ST_EIO
 * when PATH cannot be read at all (does not exist, permission denied).
 */
ST_API int st_check_path(const char *path, st_problem_fn fn, void *ctx,
                         st_error *err);

#ifdef __cplusplus
}
#endif

#endif
