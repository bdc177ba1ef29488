/*
 * torch_internal.h - what the PyTorch reader's files share (not installed,
 * included only by torch.c, torch_pickle.c and torch_views.c): the
 * objects the restricted pickle interpreter builds, and how each tensor's
 * contiguous bytes are made from its storage. It holds no code but a few
 * byte-order helpers; the st__torch_* entry points file.c uses are in
 * internal.h.
 */
#ifndef ST_TORCH_INTERNAL_H
#define ST_TORCH_INTERNAL_H

#include "internal.h"

#include <pthread.h>

static inline uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}
static inline uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Report an error to r (which must be in scope) and give ST_EFORMAT. */
#define BAD(...) (st__report(r, ST_PROBLEM_ERROR, __VA_ARGS__), ST_EFORMAT)

/* ---- the restricted pickle interpreter (torch_pickle.c) ------------------ */

enum kind {
	K_NONE, K_BOOL, K_INT, K_FLOAT, K_STR, K_TUPLE, K_LIST, K_DICT,
	K_GLOBAL, K_STORAGE, K_TENSOR, K_MARK, K_BIGINT
};

enum global_id {
	G_ORDERED_DICT, G_REBUILD_TENSOR_V2, G_REBUILD_TENSOR, G_REBUILD_PARAM,
	G_REBUILD_PARAM_STATE, G_STORAGE, G_TENSOR_TYPE
};

struct obj {
	enum kind kind;
	int64_t i;              /* INT, BOOL; GLOBAL: enum global_id;
	                           STORAGE: numel of the root storage */
	const char *s;          /* STR, BIGINT (into the pickle); STORAGE: key */
	size_t len;
	st_dtype dtype;         /* GLOBAL storage class, STORAGE, TENSOR */
	struct obj **items;     /* TUPLE, LIST; DICT: key, value pairs */
	size_t n, cap;
	struct obj *storage;    /* TENSOR */
	uint64_t offset;        /* TENSOR: storage offset in elements;
	                           STORAGE: offset of a view in its root */
	uint64_t view_n;        /* STORAGE: elements it may address */
	struct obj *size, *stride; /* TENSOR: tuples of ints */
	int seen;               /* DICT: already flattened by walk */
	unsigned mark;          /* DICT: counted in this pass of count_tensors */
	char num[24];           /* INT used as a key: its decimal text */
};

/*
 * What the interpreter may build, in 8-byte cells: an object costs 16, a
 * reference in a container, the stack or the memo 1 (2 with growth
 * slack). A deflated data.pkl can be 1032 times its compressed size and
 * every byte of it can build an object, so memory needs a bound of its
 * own. 2^26 cells (512 MiB) are ample: torch.save's pickle of a state
 * dict of 200k tensors needs less.
 */
#define MAX_CELLS ((size_t)1 << 26)

struct vm {
	const unsigned char *start, *p, *end;
	struct obj **stack;
	size_t sp, stack_cap;
	struct obj **memo;
	size_t memo_cap;
	size_t memo_len;    /* set memo entries: len(memo) for MEMOIZE */
	struct obj **all;   /* every object, to free */
	size_t n_all, all_cap;
	size_t cells;       /* spent of MAX_CELLS */
	struct st__report *r;
	const char *what;   /* the pickle's name in messages */
	/* A tar checkpoint: persistent ids are keys of these tensors. */
	struct obj **pid_obj;
	size_t n_pid;
	int nomem, toobig;
};

/*
 * Run the pickle at vm->p up to its STOP, leaving the object it returns
 * in *result. ST_EFORMAT (reported to vm->r) for a pickle it refuses,
 * ST_ENOMEM (vm->nomem or vm->toobig set) when memory or MAX_CELLS runs
 * out. Objects stay in vm->all until the caller frees them.
 */
int st__pickle_run(struct vm *vm, struct obj **result);
/* A new object of kind k, charged to vm's budget; NULL (a flag set) if none. */
struct obj *st__pickle_new(struct vm *vm, enum kind k);
/* Append o to container c's items: 0, or -1 with a flag of vm set. */
int st__pickle_add(struct vm *vm, struct obj *c, struct obj *o);
/* A key (a string, or an integer as its decimal text) as bytes; -1 if neither. */
int st__pickle_key(struct obj *k, const char **s, size_t *len);
/* 1 when t is a tuple whose items from first on are non-negative ints. */
int st__pickle_ints(const struct obj *t, size_t first);

/* ---- the state dict in what the pickle built (torch_pickle.c) ------------ */

struct found {
	char *name;
	size_t name_len;
	const struct obj *t;
};

struct collect {
	struct found *f;
	size_t n, cap;
	size_t name_bytes; /* all names built so far */
	int nomem;
	struct st__buf skipped; /* the first names of values left out */
	struct st__buf skipped_at; /* where each is in skipped: name_at pairs */
	size_t n_skipped;
};

/*
 * Choose the dictionary to read from the root *d (r->keys, or the usual
 * key a training script puts the weights under); key gets the key used,
 * top and top_at the top-level keys (see st__torch_names).
 */
int st__torch_select(struct st__report *r, struct obj **d,
                     struct st__buf *key, int *key_auto,
                     struct st__buf *top, struct st__buf *top_at);
/* Flatten the dicts of tensors below d into c as "a.b.c" names. */
int st__torch_walk(struct collect *c, struct obj *d, const char *prefix,
                   size_t plen, int depth, struct st__report *r);
/* Note a value that is not a tensor, left out: counted, first few named. */
void st__torch_skip(struct collect *c, const char *name, size_t len);
/* The names noted in at, pointing into list (now final); NULL if none. */
st_torch_name *st__torch_names(const struct st__buf *list, const struct st__buf *at,
                               size_t *n, int *nomem);

/* ---- where each tensor's bytes are (torch_views.c) ----------------------- */

/*
 * The CRC-32 of a storage, joined from the pieces of it that reads have
 * covered (see "CRCs of storages read in place", torch_views.c): [0, done)
 * in one run, and the runs beyond it that came early, sorted and apart.
 */
struct crc_piece {
	uint64_t lo, hi;
	uint32_t crc;
};
struct crc_run {
	uint64_t done;
	uint32_t crc;           /* of [0, done) */
	int spoilt;             /* pieces were lost: check whole at the end */
	struct crc_piece *p;
	unsigned n, cap;
};

/*
 * How one tensor's contiguous bytes are made from its storage. A plain
 * tensor (contiguous, in place, in the machine's byte order) is read by
 * file.c as [begin, end) of the file; any other is gathered here.
 */
struct tview {
	uint64_t data_off;   /* the storage's bytes in the file, or NOT_IN_PLACE */
	size_t entry;        /* else its archive member, read through libarchive */
	uint64_t st_bytes;   /* the storage's size in bytes */
	uint64_t first;      /* the tensor's first element within the storage */
	const uint64_t *size;
	const uint64_t *stride;
	unsigned ndim, esize;
	uint64_t n_bytes;    /* of its contiguous form */
	int swap;            /* a big-endian storage: reverse each element */
	int plain;
	long alias_of;       /* the tensor it repeats exactly, or -1 */
	void *copy;          /* st__torch_data's contiguous copy, once made */
	struct crc_run crc;  /* the storage's CRC-32 over this tensor's reads */
	uint64_t gathered;   /* bytes st__torch_read has gathered, all told */
};

struct st__torch {
	int kind;            /* ST__TORCH_* */
	struct st__src src;
	struct st__arc arc;  /* zip and tar: the members */
	struct tview *v;     /* as h->tensors */
	size_t n_views;
	uint64_t *strides;
	st_torch_info info;
	struct st__buf key, top, skipped;
	st_torch_name *key_list, *skipped_list; /* into top, skipped */
	/* The one storage read through libarchive last (a compressed one). */
	pthread_mutex_t lock;
	size_t cache_entry;
	unsigned char *cache;
	size_t cache_len;
	unsigned char *crc_state; /* per member: CRC_UNKNOWN, _GOOD or _BAD */
};

#endif
