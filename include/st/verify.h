/*
 * st/verify.h - offline integrity of downloaded checkpoints: every file's
 * bytes against the hash it is stored under, then every weight file
 * validated as st_check_file does (PyTorch weights, *model*.bin, as
 * st_file_open with ST_OPEN_TORCH; GGUF files as st_gguf_check_file).
 *
 * PATH may be
 *   - a Hugging Face cache root (~/.cache/huggingface/hub), holding
 *     models--ORG--NAME (datasets--, spaces--) folders;
 *   - one repository's cache folder: blobs/ holds each file under its
 *     content hash (SHA-256 for LFS files, git blob SHA-1 for files stored
 *     in git), snapshots/<commit>/ holds relative links into blobs/,
 *     refs/<branch> names a commit, trees/<commit>.json (when present)
 *     lists every file of a revision with its size and hashes, and an
 *     unfinished download is left as blobs/<etag>[.<hex>].incomplete;
 *   - one snapshot folder inside such a repository;
 *   - a plain folder or file, with a SHA256SUMS sidecar (sha256sum
 *     format) in the folder when there are hashes to compare against.
 * A cache made without links (Windows) holds regular files in snapshots/;
 * it is recognised as such and verified against its listings.
 *
 * "OK" means something was checked: a result without problems read at
 * least one file, and every file it walked was compared with a hash or
 * checked as weights. A folder that cannot be listed, a listing that
 * cannot be read, a SHA256SUMS that lists nothing or leaves a file out
 * (ST_VERIFY_UNCHECKED), a verification that read no file at all: each is
 * a problem naming what went unchecked. A file whose size is not the one
 * its listing gives is reported without being hashed.
 *
 * A leftover of a writer that is gone (".NAME.tmp-PID-XXXXXX", the
 * temporaries of st/atomic.h and st/snapshot.h, whose process PID no
 * longer exists) in a folder or snapshot walked is one ST_VERIFY_LEFTOVER
 * problem and is neither read nor walked into: it is not part of the
 * snapshot (st_snapshot_copy_dir skips it). It is the warning
 * st_check_path gives, not a failure: a result whose problems are all
 * leftovers still verified what it was given. A live writer's temporary is
 * an ordinary file.
 *
 * Safety: no link is followed out of the repository's cache folder (for a
 * plain folder: out of PATH); FIFOs, devices and sockets are never opened;
 * nothing is written. Each file is read once: the hash and the format
 * check share one pass (a safetensors header is checked from the bytes the
 * hash reads; a PyTorch file's zip directory is read again, a few kB).
 *
 * Recipe:
 *   1. st_verify_path(&v, "~/.cache/huggingface/hub", &opt, &err)
 *   2. for (i = 0; i < st_verify_n_problems(v); i++)
 *          puts(st_verify_problem_at(v, i)->message);
 *   3. st_verify_free(v)
 */
#ifndef ST_VERIFY_H
#define ST_VERIFY_H

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a problem is; st_verify_kind_name gives a short English tag. */
typedef enum st_verify_kind {
	ST_VERIFY_CORRUPT = 1,      /* bytes do not match their hash */
	ST_VERIFY_TRUNCATED,        /* fewer bytes than the listing says */
	ST_VERIFY_DANGLING_LINK,    /* link to nothing */
	ST_VERIFY_ABSOLUTE_LINK,    /* link by absolute path: not followed */
	ST_VERIFY_ESCAPING_LINK,    /* link out of the cache: not followed */
	ST_VERIFY_REPLACED_LINK,    /* regular file where the cache uses links */
	ST_VERIFY_INCOMPLETE,       /* leftover .incomplete download */
	ST_VERIFY_MISSING_SNAPSHOT, /* a ref names a commit with no snapshot */
	ST_VERIFY_MISSING_FILE,     /* a listing names a file that is absent */
	ST_VERIFY_NOT_REGULAR,      /* FIFO, device, socket...: not read */
	ST_VERIFY_UNREADABLE,       /* open or read failed */
	ST_VERIFY_BAD_NAME,         /* a blob or ref whose name says nothing */
	ST_VERIFY_BAD_LISTING,      /* trees/<commit>.json or SHA256SUMS broken */
	ST_VERIFY_INVALID,          /* breaks a format rule (what --check says) */
	ST_VERIFY_UNCHECKED,        /* nothing was read, or a file no manifest lists */
	ST_VERIFY_READ_ERROR,       /* read(2) failed partway (an I/O error): the
	                               file's state is unknown, no answer */
	ST_VERIFY_LEFTOVER          /* a temporary of a writer that is gone: not
	                               read; a warning, not a failure (below) */
} st_verify_kind;

/* "corrupt", "truncated", "dangling-link", ... ("?" for anything else). */
ST_API const char *st_verify_kind_name(int kind);

/*
 * One problem. path names the file concerned as PATH plus its place
 * below it, as it is on disk (it may hold any byte but NUL); message is
 * one line that starts with that path, control bytes written \xNN.
 */
typedef struct st_verify_problem {
	int kind;
	const char *path;
	const char *message;
} st_verify_problem;

/* One tensor's SHA-256 (ST_VERIFY_TENSORS). name may hold NUL bytes. */
typedef struct st_verify_tensor {
	const char *name;
	size_t name_len;
	char sha256[65];
} st_verify_tensor;

/* One file hashed in ST_VERIFY_HASH mode. */
typedef struct st_verify_file {
	const char *path;       /* relative to PATH for a folder, else PATH */
	uint64_t size;
	char sha256[65];
	size_t n_tensors;       /* 0 unless ST_VERIFY_TENSORS and safetensors */
	const st_verify_tensor *tensors;
} st_verify_file;

/*
 * ST_VERIFY_HASH: compare nothing; hash every regular file below PATH
 * (or PATH itself) with SHA-256 for st_verify_file_at. Links that stay in
 * PATH are followed; others are problems. ST_VERIFY_TENSORS (with
 * ST_VERIFY_HASH): also a SHA-256 of each safetensors tensor's bytes,
 * computed in the same pass.
 */
#define ST_VERIFY_HASH 1u
#define ST_VERIFY_TENSORS 2u

typedef struct st_verify_options {
	unsigned flags;
	int threads;  /* files hashed at once; <= 0 means 1 */
	/*
	 * Called now and then with the bytes read so far and the total, from
	 * the hashing threads, one call at a time. May be NULL.
	 */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
} st_verify_options;

/* What PATH was taken for. */
enum {
	ST_VERIFY_LAYOUT_CACHE = 1,  /* a cache root */
	ST_VERIFY_LAYOUT_REPO,       /* one repository's cache folder */
	ST_VERIFY_LAYOUT_SNAPSHOT,   /* snapshots/<commit> of one */
	ST_VERIFY_LAYOUT_FOLDER,     /* a plain folder */
	ST_VERIFY_LAYOUT_FILE        /* a plain file */
};

typedef struct st_verify st_verify;

/*
 * Verify PATH (see above; opt may be NULL). On ST_OK *out holds the
 * result, problems included (free with st_verify_free).
 * Returns ST_OK, ST_EIO (PATH cannot be read at all), ST_ENOMEM.
 */
ST_API int st_verify_path(st_verify **out, const char *path,
                          const st_verify_options *opt, st_error *err);
ST_API void st_verify_free(st_verify *v);

ST_API int st_verify_layout(const st_verify *v);
/* 1 when the repositories verified keep regular files, not links. */
ST_API int st_verify_no_symlinks(const st_verify *v);
/* 1 when PATH (a folder or file) had a SHA256SUMS sidecar. */
ST_API int st_verify_has_sidecar(const st_verify *v);

/* Problems, sorted by path; pointers valid until st_verify_free. */
ST_API size_t st_verify_n_problems(const st_verify *v);
ST_API const st_verify_problem *st_verify_problem_at(const st_verify *v,
                                                      size_t i);

/* Files read, and the bytes hashed. */
ST_API uint64_t st_verify_n_files(const st_verify *v);
ST_API uint64_t st_verify_bytes_hashed(const st_verify *v);
/* Files read that had no hash to compare against (checked only). */
ST_API uint64_t st_verify_n_unverified(const st_verify *v);
/* Repositories verified (cache, repository or snapshot PATHs). */
ST_API size_t st_verify_n_repos(const st_verify *v);

/* ST_VERIFY_HASH: the files, sorted by path; valid until st_verify_free. */
ST_API size_t st_verify_n_file_hashes(const st_verify *v);
ST_API const st_verify_file *st_verify_file_at(const st_verify *v, size_t i);

#ifdef __cplusplus
}
#endif

#endif
