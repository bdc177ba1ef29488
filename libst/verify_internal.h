/*
 * verify_internal.h - what the files of st_verify share (not installed,
 * included only by verify.c, verify_fs.c, verify_jobs.c and verify_hf.c):
 * the result being built, the plan of files to read, and the helpers each
 * file offers the others. No code.
 */
#ifndef ST_VERIFY_INTERNAL_H
#define ST_VERIFY_INTERNAL_H

#include "internal.h"

#include <pthread.h>
#include <stdarg.h>

#define READ_BUF (1u << 20)      /* per thread */
#define MAX_LINKS 40             /* as the kernel's ELOOP limit */
#define MAX_DEPTH 64             /* folder nesting walked */
#define MAX_HEADER 100000000u    /* doc/format.md rule 2: N <= 10^8 */
#define MAX_SMALL_FILE (1u << 26) /* refs, listings, sidecars: 64 MiB */

enum { V_NONE = 0, V_SAFETENSORS, V_TORCH, V_GGUF };

/* ---- results (verify.c) ------------------------------------------------------ */

struct problem {
	int kind;
	char *path, *message;
};

struct fhash {
	char *path;
	uint64_t size;
	char sha256[65];
	st_verify_tensor *tensors;
	size_t n_tensors;
	char *names; /* tensor names, back to back */
};

struct st_verify {
	int layout, no_symlinks, sidecar, oom;
	struct problem *p;
	size_t n_p, cap_p;
	struct fhash *f;
	size_t n_f;
	st_verify_problem *view;      /* built at the end */
	st_verify_file *fview;
	uint64_t n_files, bytes, unverified;
	size_t n_repos;
	pthread_mutex_t lock;         /* problems, counters, progress */
	uint64_t done, total;
	const st_verify_options *opt;
};

/* A malloc'd printf; NULL if out of memory. */
char *st__verify_fmt(const char *f, ...) ST_PRINTF(1, 2);
/* Add a problem about path (message is "path: ..."). Caller holds no lock. */
void st__verify_problem(st_verify *v, int kind, const char *path,
                        const char *f, ...) ST_PRINTF(4, 5);

/*
 * When name (an entry of a folder walked, at full) is a leftover of a
 * writer that is gone (st__temp_is_stale): one ST_VERIFY_LEFTOVER problem
 * about full, and 1: it is then neither read nor walked. Else 0.
 */
int st__verify_leftover(st_verify *v, const char *full, const char *name);

/* ---- paths (verify_fs.c) ------------------------------------------------------ */

/* a + "/" + b, or the one that is not empty; malloc'd, NULL if out of memory. */
char *st__verify_join(const char *a, const char *b);
/* How a weight file is checked, from its name: V_*. */
int st__verify_validator(const char *name);
enum { RES_OK = 0, RES_ABSOLUTE, RES_ESCAPES, RES_DANGLING, RES_LOOP, RES_IO };
/*
 * Resolve rel (relative to root, which is not itself resolved) to a path
 * relative to root with no links in it, following links only while they
 * stay below root: RES_*. *out is malloc'd on RES_OK; *link (malloc'd, if
 * not NULL) receives the target text of the link that failed.
 */
int st__verify_resolve(const char *root, const char *rel, char **out, char **link);
/*
 * Sorted names in a folder (without . and ..); NULL-terminated, NULL if
 * none. A folder that exists but cannot be listed is a problem in v (when
 * not NULL): what it holds goes unverified.
 */
char **st__verify_list_dir(st_verify *v, const char *path, size_t *n_out);
void st__verify_free_names(char **names);
/* Read a small file whole (NUL-terminated); NULL with errno on failure. */
char *st__verify_read_small(const char *path, size_t *len, int *read_failed);

/* ---- jobs and the reading threads (verify_jobs.c) ----------------------------- */

struct job {
	char *disk;      /* root + link-free relative path: what is opened */
	char *label;     /* what hash problems name */
	char *name;      /* what format problems name (a snapshot path) */
	/* A cache blob: what its hash and size problems add, the file a user
	 * knows and how to fetch it again ("; it is snapshots/R/F: ..."), or
	 * NULL. */
	char *known_as;
	int algo;        /* ST_HASH_*, or -1: no hash to compare against */
	unsigned char expected[32];
	char source[80];      /* who says so: "its name", "SHA256SUMS"... */
	char size_source[80]; /* who gives expected_size: "trees/<c>.json" */
	uint64_t expected_size; /* UINT64_MAX: unknown */
	int validate;    /* V_* */
	int hash_mode;   /* ST_VERIFY_HASH: keep a struct fhash */
	char *hash_path; /* its path in the hash list */
	uint64_t size;   /* at planning time, for order and progress */
};

struct plan {
	struct job *j;
	size_t n, cap;
	int oom;
};

/* A new job in pl, zeroed but for "no hash" and "no size"; NULL (pl->oom) if none. */
struct job *st__verify_plan_add(struct plan *pl);
void st__verify_job_free(struct job *j);
/* Read every job of pl (largest first) on opt's threads into v. */
void st__verify_run_plan(st_verify *v, struct plan *pl);

/* ---- Hugging Face caches (verify_hf.c) ---------------------------------------- */

/*
 * Resolve the link at rel (below root) to a regular file; report what
 * goes wrong. Returns the link-free relative path (malloc'd) or NULL.
 */
char *st__verify_follow_link(st_verify *v, const char *root, const char *rel,
                             const char *boundary);
/* Plan one repository folder (dir as shown), or one of its snapshots. */
void st__verify_plan_repo(st_verify *v, struct plan *pl, const char *dir,
                          const char *only_commit);

#endif
