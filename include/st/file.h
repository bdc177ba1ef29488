/*
 * st/file.h - reading and validating one safetensors file.
 *
 * Recipe:
 *   1. st_file_open(&f, "model.safetensors", 0, &err)   reads only 8 + N bytes
 *      (or st_file_open_fd(&f, 0, NULL, flags, spool, &err) for standard input)
 *   2. for (i = 0; i < st_file_n_tensors(f); i++) t = st_file_tensor(f, i);
 *   3. st_file_data(f, i, &p, &err)                     maps the file on demand
 *      or st_file_read(f, i, off, buf, n, &err)         pread, bounded memory
 *   4. st_file_close(f)
 *
 * Opening enforces every rule of the format (doc/format.md, rules 1-17); the first
 * problem found is returned as ST_EFORMAT with a message naming the file,
 * the tensor and the numbers. st_check_file() reports every problem.
 *
 * Misuse (libst.3, "Misuse"): an index at or past the matching count
 * (st_file_n_tensors, st_file_n_meta, st_file_n_warnings) is the caller's
 * mistake and aborts, in every build; file contents never abort, they give
 * an st_error.
 *
 * Threads: every call on an open st_file except st_file_close may be made
 * from many threads at once. st_file_data maps the file once, whichever
 * thread asks first; st_file_read uses pread, which keeps no position.
 * Close only when no other thread uses the handle.
 */
#ifndef ST_FILE_H
#define ST_FILE_H

#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_file st_file;

/* Shapes have at most this many dimensions. */
#define ST_MAX_DIMS 64

/*
 * One tensor of the table. Strings are owned by the st_file and valid
 * until st_file_close(). name is NUL-terminated for convenience but may
 * itself contain NUL bytes: name_len is its length.
 */
typedef struct st_tensor {
	const char *name;
	size_t name_len;
	st_dtype dtype;
	unsigned ndim;
	const uint64_t *shape;  /* ndim entries */
	uint64_t n_elements;    /* product of shape; 1 for a scalar */
	uint64_t begin, end;    /* data_offsets, relative to the data buffer */
	uint64_t n_bytes;       /* end - begin */
} st_tensor;

/* One __metadata__ entry (both strings NUL-terminated, lengths given). */
typedef struct st_meta {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
} st_meta;

/*
 * Flags for st_file_open and st_checkpoint_open.
 * ST_OPEN_TORCH: also accept a PyTorch checkpoint: torch.save's zip format
 * (e.g. pytorch_model.bin, 1.6 and later), the legacy pickle stream
 * (0.4-1.5) or the tar format (before 0.4). Its pickles are read by a
 * restricted interpreter that builds tensors and containers only and
 * never imports or calls anything else. Such a file has st_file_format()
 * == ST_FORMAT_TORCH, header size 0, and tensor offsets that count from
 * the start of the file. A tensor stored as a view (transposed, sliced,
 * expanded...), in a compressed member or in big-endian byte order is
 * handed out contiguous and in the machine's order, as tensor.contiguous()
 * gives it: st_file_read and st_file_data gather its bytes (st_file_data
 * keeps a copy until st_file_close), and its [begin, end) is then the part
 * of the file it reads, not n_bytes long ([0, 0) for a compressed
 * storage). A full check (st_check_path) also reads every zip member
 * through its CRC-32. An open reads no storage; reads check the CRC-32
 * of a zip storage read in place as they go (st_file_read, ST_EFORMAT
 * naming tensor and member): each read's bytes, in whatever order and
 * from whatever threads the reads come, are joined into the storage's
 * CRC, and the read that completes the tensor fails if it is wrong; a
 * view or other part of a storage checks the same share of its storage
 * as it reads of itself, so reading all of it checks all of the storage.
 * Reads that leave too many gaps (over 64) check the whole storage at
 * the read of the tensor's last byte instead. A storage found bad fails
 * every later read of a tensor's last byte; reads that leave part of a
 * tensor unread check nothing. st_file_data checks the whole storage
 * before handing out its bytes.
 */
#define ST_OPEN_TORCH 1u
/*
 * ST_OPEN_HEADER_ONLY (st_file_open_fd on a stream): only the header's
 * answers are wanted; the data is read to its end and counted, not kept,
 * so that its length is checked as a file's is. st_file_data and
 * st_file_read of a tensor that has bytes then fail (ST_EINVAL). Ignored
 * when the descriptor is a regular file, whose data stays readable.
 */
#define ST_OPEN_HEADER_ONLY 2u

enum { ST_FORMAT_SAFETENSORS = 0, ST_FORMAT_TORCH = 1 };

/*
 * Open a file by path. Reads the 8-byte length and the header only; the
 * data is mapped when first asked for. flags: 0 or ST_OPEN_TORCH.
 * On success *out is the new handle (free with st_file_close).
 * Returns ST_OK, ST_EIO (cannot open/read), ST_EFORMAT (a rule broken,
 * including a git-lfs pointer, an HTML page, a truncated file or trailing
 * bytes, each diagnosed in plain words), ST_ENOMEM.
 */
ST_API int st_file_open(st_file **out, const char *path, unsigned flags,
                        st_error *err);

/*
 * Open a file held in memory; buf must stay valid until st_file_close.
 * name is used in messages (e.g. "<memory>"); it is copied.
 */
ST_API int st_file_open_memory(st_file **out, const void *buf, size_t len,
                               const char *name, unsigned flags,
                               st_error *err);

/*
 * Open a safetensors file from a file descriptor, such as standard input
 * (`stinfo -`). fd is read, never closed: the handle keeps its own
 * descriptor when it needs one. name is used in messages and as
 * st_file_path (NULL: "<stdin>"); it is copied.
 *   - fd a regular file (`stinfo - < x.safetensors`): as st_file_open of
 *     its path (flags 0 or ST_OPEN_TORCH; ST_OPEN_HEADER_ONLY is ignored),
 *     read from offset 0 with pread, the data mapped on demand.
 *   - fd a pipe, socket or other stream: read once, front to back, with no
 *     seeking. Only safetensors is read this way: a GGUF, zip, pickle, tar
 *     or gzip stream is ST_EFORMAT saying what it is (ST_OPEN_TORCH does not
 *     apply), text and the rest fail as such a file does. The 8-byte length and the header are read with bounded
 *     reads and checked as st_file_open checks them (rules 1-17, the
 *     100000000-byte header limit before any allocation); a stream that
 *     ends early is a file of the bytes it had ("file truncated: ...").
 *     With ST_OPEN_HEADER_ONLY the rest is read and counted, not stored,
 *     and spool_fd is not used. Otherwise spool_fd must be an empty regular
 *     file open for reading and writing (e.g. an unlinked temporary file:
 *     the caller chooses where): the whole stream is copied into it in
 *     1 MiB chunks (memory stays bounded; disk space for one copy of the
 *     stream is used) and the data is then read from there, as from a file.
 *     The handle keeps a duplicate of spool_fd: the caller may close its own.
 * st_file_size counts the stream's bytes in both cases.
 * Returns ST_OK, ST_EIO (fd is a directory, a read or the spool's write
 * failed), ST_EFORMAT, ST_EINVAL (no usable spool_fd for a stream's data),
 * ST_ENOMEM.
 */
ST_API int st_file_open_fd(st_file **out, int fd, const char *name,
                           unsigned flags, int spool_fd, st_error *err);

/* Close and free everything; views become invalid. NULL does nothing. */
ST_API void st_file_close(st_file *f);

ST_API const char *st_file_path(const st_file *f);
/* ST_FORMAT_SAFETENSORS, or ST_FORMAT_TORCH (opened with ST_OPEN_TORCH). */
ST_API int st_file_format(const st_file *f);
ST_API uint64_t st_file_size(const st_file *f);        /* whole file */
ST_API uint64_t st_file_header_size(const st_file *f); /* N */
ST_API uint64_t st_file_data_offset(const st_file *f); /* 8 + N (torch: 0) */
ST_API uint64_t st_file_data_size(const st_file *f);   /* size - 8 - N */

/*
 * The file's format in words: "safetensors", "pytorch-zip",
 * "pytorch-legacy" or "pytorch-tar".
 */
ST_API const char *st_file_format_name(const st_file *f);

/*
 * What reading a PyTorch checkpoint's dictionary found. key: the
 * sub-dictionary read ("state_dict", "a.b"), NULL for the whole; key_auto:
 * it was chosen because every tensor is under it (one of state_dict,
 * model, module, model_state_dict) rather than asked for. keys: the
 * top-level keys, ", "-separated. n_skipped values that are not tensors
 * (numbers, strings, lists, optimizer state, the entries beside key) were
 * left out; skipped names the first of them, ", "-separated.
 * key_list and skipped_list are the same names one by one (a name may
 * hold ", " or a NUL byte): every top-level string key, and the first
 * (at most 8) skipped values; each name is cut at 100 bytes. Valid until
 * st_file_close().
 */
typedef struct st_torch_name {
	const char *s; /* len bytes, not NUL-terminated */
	size_t len;
} st_torch_name;

typedef struct st_torch_info {
	const char *key;
	int key_auto;
	const char *keys;
	size_t n_skipped;
	const char *skipped;
	const st_torch_name *key_list;
	size_t n_key_list;
	const st_torch_name *skipped_list;
	size_t n_skipped_list;
} st_torch_info;

/* That information for a PyTorch file; NULL for a safetensors file. */
ST_API const st_torch_info *st_file_torch_info(const st_file *f);

/*
 * In a PyTorch file, the index of the tensor that tensor i repeats exactly
 * (the same storage, offset, shape and strides: an alias, as tied weights
 * are saved; the first of them in the checkpoint's own order is the one
 * repeated), else -1. Always -1 in a safetensors file, which cannot hold
 * aliases: a converter writes the repeated tensor once.
 */
ST_API long st_file_alias_of(const st_file *f, size_t i);

/*
 * Tensors in data order (by data_offsets). i < st_file_n_tensors(f).
 * The pointer is valid until st_file_close().
 */
ST_API size_t st_file_n_tensors(const st_file *f);
ST_API const st_tensor *st_file_tensor(const st_file *f, size_t i);
/* Index of the tensor with this name, or -1. */
ST_API long st_file_find(const st_file *f, const char *name, size_t len);

/* __metadata__ entries in header order; st_file_meta_get returns NULL if absent. */
ST_API size_t st_file_n_meta(const st_file *f);
ST_API const st_meta *st_file_meta(const st_file *f, size_t i);
ST_API const char *st_file_meta_get(const st_file *f, const char *key);

/*
 * Fields a tensor entry had besides dtype, shape and data_offsets (ignored
 * by readers, as the reference does), as "tensor 'x': unknown field 'y'"
 * lines; for stinfo --check warnings.
 */
ST_API size_t st_file_n_warnings(const st_file *f);
ST_API const char *st_file_warning(const st_file *f, size_t i);

/*
 * Borrow tensor i's bytes: *data points into the mapping (or the memory
 * buffer) and stays valid until st_file_close(). Maps the file on first
 * use. An empty tensor gives a non-NULL pointer.
 * Returns ST_OK, ST_EIO (mmap failed).
 */
ST_API int st_file_data(st_file *f, size_t i, const void **data,
                        st_error *err);

/*
 * Copy n bytes of tensor i, starting at byte offset off within the tensor,
 * into buf (pread for files: memory stays bounded however large the file).
 * Returns ST_OK, ST_EINVAL (range outside the tensor), ST_EIO (read failed
 * or the file shrank).
 */
ST_API int st_file_read(st_file *f, size_t i, uint64_t off, void *buf,
                        size_t n, st_error *err);

/*
 * Problems found by a full check, one message per call. severity is
 * ST_PROBLEM_ERROR (a broken rule) or ST_PROBLEM_WARNING (legal but odd).
 */
enum { ST_PROBLEM_ERROR = 1, ST_PROBLEM_WARNING = 2 };
typedef void (*st_problem_fn)(void *ctx, int severity, const char *message);

/*
 * Format a message (printf-style, cut at 1023 bytes) and give it to fn
 * with severity; nothing when fn is NULL. For callers that report to an
 * st_problem_fn of their own, as the library does.
 */
ST_API void st_problem_report(st_problem_fn fn, void *ctx, int severity,
                              const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;

/*
 * Check one file against every rule and report each problem (not only the
 * first) to fn. Returns the number of errors found (>= 0), or ST_EIO when
 * the path cannot be read at all (then err says why and fn is not called).
 */
ST_API int st_check_file(const char *path, st_problem_fn fn, void *ctx,
                         st_error *err);
/*
 * The same for a file read from fd (st_file_open_fd with
 * ST_OPEN_HEADER_ONLY and ST_OPEN_TORCH: a regular file holding a PyTorch
 * checkpoint is checked as st_check_path checks one; name NULL: "<stdin>"). When out is not NULL and no
 * error was found, *out receives the open file (header only for a stream),
 * else NULL. Returns the number of errors, or ST_EIO (read failed) /
 * ST_ENOMEM.
 */
ST_API int st_check_fd(int fd, const char *name, st_problem_fn fn, void *ctx,
                       st_file **out, st_error *err);
/* The same for a file in memory. */
ST_API int st_check_memory(const void *buf, size_t len, const char *name,
                           st_problem_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
