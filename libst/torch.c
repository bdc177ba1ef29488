/*
 * torch.c - read a PyTorch checkpoint into the same tensor table a
 * safetensors header gives, without executing anything: torch.save's zip
 * format (1.6 and later), the legacy pickle stream (0.4 to 1.5) and the
 * tar format (before 0.4).
 *
 * Containers. A zip or tar is listed and read by archive.c (libarchive):
 * pickles and small records are read through it, CRC checked; a storage
 * lying uncompressed in the file (torch writes them so) is read in place
 * at the offset archive.c found and checked, and its CRC-32 checked as
 * reads cover it, in one pass whatever their order (crc_note); a
 * compressed storage (rare) is inflated once at open to check it, and
 * again, whole, when read. The legacy stream is mapped: its five pickles
 * are run in place and each storage's bytes follow them, found by
 * walking the element counts.
 *
 * Pickles. A restricted interpreter knows the opcodes a state dict uses,
 * builds only containers, numbers, strings, storages and tensors, and
 * refuses every global but the handful torch.save emits for tensors
 * (collections.OrderedDict, torch._utils._rebuild_tensor_v2, the typed
 * storage classes...). It never imports or calls anything, and what it
 * builds is bounded (MAX_CELLS).
 *
 * Tensors. Each tensor's size, stride and offset must stay inside its
 * storage. A contiguous tensor in place and in the machine's byte order
 * is "plain": file.c reads its bytes as [begin, end) of the file. Any
 * other (a view: transposed, sliced, expanded with stride 0; a storage
 * that is compressed, or big-endian as a byteorder record says) is
 * gathered into contiguous form by st__torch_read: in cache-sized tiles
 * when its last dimension is strided and the one before it closer (a
 * transpose, gather_tiles), else element by element or in runs along its
 * last dimension, so memory stays bounded by what the caller reads (a
 * compressed storage: by that storage). Tensors that repeat another
 * exactly (same storage, offset, shape, strides) are kept, and
 * st__torch_alias_of names the first of them, for converters.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int st__src_read(const struct st__src *s, void *buf, size_t n, uint64_t off)
{
	if (off > s->size || n > s->size - off) {
		errno = 0;
		return -1;
	}
	if (s->mem) {
		memcpy(buf, s->mem + off, n);
		return 0;
	}
	unsigned char *p = buf;
	while (n > 0) {
		ssize_t k = pread(s->fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = 0;
			return -1;
		}
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- the container ------------------------------------------------------ */

/* A member by the part of its name after the top folder, for zip_find. */
struct zsuffix {
	const char *s;
	size_t idx;
};

struct zip {
	struct st__arc arc;
	struct zsuffix *by_suffix; /* sorted by s, then idx */
	size_t n_suffix;
};

static int zsuffix_cmp(const void *x, const void *y)
{
	const struct zsuffix *a = x, *b = y;
	int c = strcmp(a->s, b->s);
	if (c)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

#define BAD(...) (st__report(r, ST_PROBLEM_ERROR, __VA_ARGS__), ST_EFORMAT)

/*
 * List the archive (archive.c) and sort its members by suffix once: a
 * checkpoint looks one storage up per tensor, and a linear scan each time
 * made 100k storages quadratic.
 */
static int zip_open(struct zip *z, const struct st__src *s, struct st__report *r)
{
	memset(z, 0, sizeof *z);
	int rc = st__arc_open(&z->arc, s, ST__ARC_ZIP, r);
	if (rc)
		return rc;
	z->by_suffix = malloc((z->arc.n ? z->arc.n : 1) * sizeof *z->by_suffix);
	if (!z->by_suffix)
		return ST_ENOMEM;
	for (size_t i = 0; i < z->arc.n; i++) {
		const char *slash = strchr(z->arc.e[i].name, '/');
		if (slash)
			z->by_suffix[z->n_suffix++] = (struct zsuffix){slash + 1, i};
	}
	qsort(z->by_suffix, z->n_suffix, sizeof *z->by_suffix, zsuffix_cmp);
	return ST_OK;
}

/* The member whose name is "<any top folder>/suffix", or -1. */
static long zip_find(const struct zip *z, const char *suffix)
{
	/* The first in zip order among equal suffixes, as a scan would. */
	size_t lo = 0, hi = z->n_suffix;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(z->by_suffix[mid].s, suffix) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < z->n_suffix && !strcmp(z->by_suffix[lo].s, suffix))
		return (long)z->by_suffix[lo].idx;
	return -1;
}

/* ---- the restricted pickle interpreter ---------------------------------- */

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

/* Account for n cells; -1 (and toobig set) past MAX_CELLS. */
static int spend(struct vm *vm, size_t n)
{
	if (n > MAX_CELLS - vm->cells) {
		vm->toobig = 1;
		return -1;
	}
	vm->cells += n;
	return 0;
}

/*
 * Double a pointer array's capacity (to first when empty), charging the
 * new cells to the budget when charge is set. 0, or -1 with vm's flag set.
 */
static int grow_ptrs(struct vm *vm, struct obj ***arr, size_t *cap,
                     size_t first, int charge)
{
	size_t c = *cap ? *cap * 2 : first;
	if (charge && spend(vm, c - *cap))
		return -1;
	struct obj **a = realloc(*arr, c * sizeof *a);
	if (!a) {
		vm->nomem = 1;
		return -1;
	}
	*arr = a;
	*cap = c;
	return 0;
}

static struct obj *mk(struct vm *vm, enum kind k)
{
	if (spend(vm, 16))
		return NULL;
	/* The list of every object is bookkeeping, not charged to the budget. */
	if (vm->n_all == vm->all_cap && grow_ptrs(vm, &vm->all, &vm->all_cap, 256, 0))
		return NULL;
	struct obj *o = calloc(1, sizeof *o);
	if (!o) {
		vm->nomem = 1;
		return NULL;
	}
	o->kind = k;
	vm->all[vm->n_all++] = o;
	return o;
}

static int push(struct vm *vm, struct obj *o)
{
	if (!o)
		return -1;
	if (vm->sp == vm->stack_cap &&
	    grow_ptrs(vm, &vm->stack, &vm->stack_cap, 64, 1))
		return -1;
	vm->stack[vm->sp++] = o;
	return 0;
}

static int add_item(struct vm *vm, struct obj *c, struct obj *o)
{
	if (c->n == c->cap && grow_ptrs(vm, &c->items, &c->cap, 4, 1))
		return -1;
	c->items[c->n++] = o;
	return 0;
}

/* Index of the topmost MARK, or -1. */
static long find_mark(struct vm *vm)
{
	for (size_t i = vm->sp; i > 0; i--)
		if (vm->stack[i - 1]->kind == K_MARK)
			return (long)(i - 1);
	return -1;
}

static const struct {
	const char *module, *name;
	enum global_id id;
	st_dtype dtype;
} allowed[] = {
	{"collections", "OrderedDict", G_ORDERED_DICT, 0},
	{"torch._utils", "_rebuild_tensor_v2", G_REBUILD_TENSOR_V2, 0},
	{"torch._utils", "_rebuild_tensor", G_REBUILD_TENSOR, 0},
	{"torch._utils", "_rebuild_parameter", G_REBUILD_PARAM, 0},
	{"torch._utils", "_rebuild_parameter_with_state", G_REBUILD_PARAM_STATE, 0},
	{"torch", "DoubleStorage", G_STORAGE, ST_DTYPE_F64},
	{"torch", "FloatStorage", G_STORAGE, ST_DTYPE_F32},
	{"torch", "HalfStorage", G_STORAGE, ST_DTYPE_F16},
	{"torch", "BFloat16Storage", G_STORAGE, ST_DTYPE_BF16},
	{"torch", "LongStorage", G_STORAGE, ST_DTYPE_I64},
	{"torch", "IntStorage", G_STORAGE, ST_DTYPE_I32},
	{"torch", "ShortStorage", G_STORAGE, ST_DTYPE_I16},
	{"torch", "CharStorage", G_STORAGE, ST_DTYPE_I8},
	{"torch", "ByteStorage", G_STORAGE, ST_DTYPE_U8},
	{"torch", "BoolStorage", G_STORAGE, ST_DTYPE_BOOL},
	/* The tensor classes a tar checkpoint names, never called. */
	{"torch", "DoubleTensor", G_TENSOR_TYPE, ST_DTYPE_F64},
	{"torch", "FloatTensor", G_TENSOR_TYPE, ST_DTYPE_F32},
	{"torch", "HalfTensor", G_TENSOR_TYPE, ST_DTYPE_F16},
	{"torch", "BFloat16Tensor", G_TENSOR_TYPE, ST_DTYPE_BF16},
	{"torch", "LongTensor", G_TENSOR_TYPE, ST_DTYPE_I64},
	{"torch", "IntTensor", G_TENSOR_TYPE, ST_DTYPE_I32},
	{"torch", "ShortTensor", G_TENSOR_TYPE, ST_DTYPE_I16},
	{"torch", "CharTensor", G_TENSOR_TYPE, ST_DTYPE_I8},
	{"torch", "ByteTensor", G_TENSOR_TYPE, ST_DTYPE_U8},
	{"torch", "BoolTensor", G_TENSOR_TYPE, ST_DTYPE_BOOL},
};

static int vm_error(struct vm *vm, const char *what)
{
	st__report(vm->r, ST_PROBLEM_ERROR, "%s: %s (at pickle byte %ld)",
	           vm->what, what, (long)(vm->p - vm->start));
	return ST_EFORMAT;
}

static int global(struct vm *vm, const char *mod, size_t ml, const char *nm,
                  size_t nl)
{
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		if (strlen(allowed[i].module) == ml &&
		    !memcmp(allowed[i].module, mod, ml) &&
		    strlen(allowed[i].name) == nl && !memcmp(allowed[i].name, nm, nl)) {
			struct obj *o = mk(vm, K_GLOBAL);
			if (!o)
				return ST_ENOMEM;
			o->i = allowed[i].id;
			o->dtype = allowed[i].dtype;
			return push(vm, o) ? ST_ENOMEM : ST_OK;
		}
	char msg[300];
	snprintf(msg, sizeof msg,
	         "refusing to load '%.*s.%.*s': only tensors and containers are "
	         "allowed (this file may try to run code)",
	         (int)(ml > 100 ? 100 : ml), mod, (int)(nl > 100 ? 100 : nl), nm);
	return vm_error(vm, msg);
}

/* A tuple whose items from the first on are non-negative ints. */
static int is_ints_from(const struct obj *t, size_t first)
{
	if (!t || t->kind != K_TUPLE)
		return 0;
	for (size_t i = first; i < t->n; i++)
		if (t->items[i]->kind != K_INT || t->items[i]->i < 0)
			return 0;
	return 1;
}

static int is_ints(const struct obj *t) { return is_ints_from(t, 0); }

/* Apply a callable to an argument tuple (REDUCE / NEWOBJ). */
static int call(struct vm *vm, struct obj *fn, struct obj *args)
{
	if (fn->kind != K_GLOBAL || args->kind != K_TUPLE)
		return vm_error(vm, "call of something that is not an allowed global");
	struct obj *o;
	switch ((enum global_id)fn->i) {
	case G_ORDERED_DICT:
		return push(vm, mk(vm, K_DICT)) ? ST_ENOMEM : ST_OK;
	case G_REBUILD_TENSOR_V2:
	case G_REBUILD_TENSOR:
		if (args->n < 4 || args->items[0]->kind != K_STORAGE ||
		    args->items[1]->kind != K_INT || args->items[1]->i < 0 ||
		    !is_ints(args->items[2]) || !is_ints(args->items[3]) ||
		    args->items[2]->n != args->items[3]->n)
			return vm_error(vm, "malformed _rebuild_tensor arguments");
		if (!(o = mk(vm, K_TENSOR)))
			return ST_ENOMEM;
		o->storage = args->items[0];
		o->dtype = o->storage->dtype;
		o->offset = (uint64_t)args->items[1]->i;
		o->size = args->items[2];
		o->stride = args->items[3];
		return push(vm, o) ? ST_ENOMEM : ST_OK;
	case G_REBUILD_PARAM:
	case G_REBUILD_PARAM_STATE:
		if (args->n < 1 || args->items[0]->kind != K_TENSOR)
			return vm_error(vm, "malformed _rebuild_parameter arguments");
		return push(vm, args->items[0]) ? ST_ENOMEM : ST_OK;
	case G_STORAGE:
	case G_TENSOR_TYPE:
		break;
	}
	return vm_error(vm, "a storage or tensor class called directly");
}

static int need(struct vm *vm, size_t n)
{
	return (size_t)(vm->end - vm->p) >= n ? 0 : -1;
}

static int memo_put(struct vm *vm, uint64_t idx)
{
	if (vm->sp == 0)
		return vm_error(vm, "memo store on an empty stack");
	/* The memo can hold no more entries than the pickle has bytes. */
	if (idx > (uint64_t)(vm->end - vm->start))
		return vm_error(vm, "memo index out of range");
	if (idx >= vm->memo_cap) {
		size_t c = vm->memo_cap ? vm->memo_cap : 64;
		while (c <= idx)
			c *= 2;
		if (spend(vm, c - vm->memo_cap))
			return ST_ENOMEM;
		struct obj **m = realloc(vm->memo, c * sizeof *m);
		if (!m)
			return ST_ENOMEM;
		memset(m + vm->memo_cap, 0, (c - vm->memo_cap) * sizeof *m);
		vm->memo = m;
		vm->memo_cap = c;
	}
	if (!vm->memo[idx])
		vm->memo_len++;
	vm->memo[idx] = vm->stack[vm->sp - 1];
	return ST_OK;
}

static int memo_get(struct vm *vm, uint64_t idx)
{
	if (idx >= vm->memo_cap || !vm->memo[idx])
		return vm_error(vm, "memo lookup of an unset index");
	return push(vm, vm->memo[idx]) ? ST_ENOMEM : ST_OK;
}

static int str_obj(struct vm *vm, uint64_t n)
{
	if (need(vm, n) < 0 || n > (uint64_t)(vm->end - vm->p))
		return vm_error(vm, "string runs past the end");
	struct obj *o = mk(vm, K_STR);
	if (!o)
		return ST_ENOMEM;
	o->s = (const char *)vm->p;
	o->len = (size_t)n;
	vm->p += n;
	return push(vm, o) ? ST_ENOMEM : ST_OK;
}

/* Pop the items above the topmost MARK into container c (tuple/list). */
static int pop_mark_into(struct vm *vm, struct obj *c)
{
	long m = find_mark(vm);
	if (m < 0)
		return vm_error(vm, "no MARK on the stack");
	for (size_t i = (size_t)m + 1; i < vm->sp; i++)
		if (add_item(vm, c, vm->stack[i]))
			return ST_ENOMEM;
	vm->sp = (size_t)m;
	return ST_OK;
}

/* A key (string, or integer as its decimal text) as bytes. */
static int key_of(struct obj *k, const char **s, size_t *len)
{
	if (k->kind == K_STR) {
		*s = k->s;
		*len = k->len;
		return 0;
	}
	if (k->kind == K_INT && k->i >= 0) {
		if (!k->num[0])
			snprintf(k->num, sizeof k->num, "%lld", (long long)k->i);
		*s = k->num;
		*len = strlen(k->num);
		return 0;
	}
	return -1;
}

/*
 * A persistent id. Zip and legacy files: ('storage', cls, key, location,
 * numel[, view]) where a legacy view is (view_key, offset, numel) inside
 * the root storage. Tar files: the key of a tensor of their tensors
 * member (vm->pid_obj, tensors whose s, len hold their key, sorted).
 */
static int persistent(struct vm *vm, struct obj *a)
{
	const char *ks;
	size_t kl;
	if (vm->pid_obj) {
		if (key_of(a, &ks, &kl))
			return vm_error(vm, "persistent id is not a tensor key");
		for (size_t lo = 0, hi = vm->n_pid; lo < hi;) {
			size_t mid = lo + (hi - lo) / 2;
			const char *ms = vm->pid_obj[mid]->s;
			size_t ml = vm->pid_obj[mid]->len;
			int c = memcmp(ms, ks, ml < kl ? ml : kl);
			if (!c)
				c = ml < kl ? -1 : ml > kl;
			if (!c)
				return push(vm, vm->pid_obj[mid]) ? ST_ENOMEM : ST_OK;
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		return vm_error(vm, "persistent id names no tensor of the tensors member");
	}
	if (a->kind != K_TUPLE || a->n < 5 || a->items[0]->kind != K_STR ||
	    a->items[0]->len != 7 || memcmp(a->items[0]->s, "storage", 7) ||
	    a->items[1]->kind != K_GLOBAL || a->items[1]->i != G_STORAGE ||
	    key_of(a->items[2], &ks, &kl) || a->items[4]->kind != K_INT ||
	    a->items[4]->i < 0)
		return vm_error(vm, "persistent id is not a torch storage");
	struct obj *o = mk(vm, K_STORAGE);
	if (!o)
		return ST_ENOMEM;
	o->dtype = a->items[1]->dtype;
	o->s = ks;
	o->len = kl;
	o->i = a->items[4]->i; /* numel */
	o->view_n = (uint64_t)o->i;
	if (a->n >= 6 && a->items[5]->kind != K_NONE) {
		const struct obj *v = a->items[5];
		if (v->kind != K_TUPLE || v->n != 3 || !is_ints_from(v, 1))
			return vm_error(vm, "malformed storage view in a persistent id");
		o->offset = (uint64_t)v->items[1]->i;
		o->view_n = (uint64_t)v->items[2]->i;
	}
	return push(vm, o) ? ST_ENOMEM : ST_OK;
}

#define POP(x)                                                           \
	do {                                                                 \
		if (vm->sp == 0)                                                 \
			return vm_error(vm, "stack underflow");                      \
		(x) = vm->stack[--vm->sp];                                       \
		if ((x)->kind == K_MARK)                                         \
			return vm_error(vm, "MARK where a value was expected");      \
	} while (0)

static int run(struct vm *vm, struct obj **result)
{
	int rc;
	while (vm->p < vm->end) {
		unsigned op = *vm->p++;
		struct obj *a, *b, *c, *o;
		uint64_t n;
		switch (op) {
		case 0x80: /* PROTO */
			if (need(vm, 1) < 0)
				return vm_error(vm, "truncated");
			vm->p++;
			break;
		case 0x95: /* FRAME */
			if (need(vm, 8) < 0)
				return vm_error(vm, "truncated");
			vm->p += 8;
			break;
		case '}': case ']': case ')':
			if (!(o = mk(vm, op == '}' ? K_DICT : op == ']' ? K_LIST : K_TUPLE)) || push(vm, o))
				return ST_ENOMEM;
			break;
		case '(':
			if (push(vm, mk(vm, K_MARK)))
				return ST_ENOMEM;
			break;
		case 'N':
			if (push(vm, mk(vm, K_NONE)))
				return ST_ENOMEM;
			break;
		case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
			if (!(o = mk(vm, K_BOOL)))
				return ST_ENOMEM;
			o->i = op == 0x88;
			if (push(vm, o))
				return ST_ENOMEM;
			break;
		case 'J': case 'K': case 'M': { /* BININT, BININT1, BININT2 */
			size_t w = op == 'J' ? 4 : op == 'K' ? 1 : 2;
			if (need(vm, w) < 0)
				return vm_error(vm, "truncated");
			if (!(o = mk(vm, K_INT)))
				return ST_ENOMEM;
			o->i = w == 4 ? (int32_t)le32(vm->p) : w == 2 ? le16(vm->p) : vm->p[0];
			vm->p += w;
			if (push(vm, o))
				return ST_ENOMEM;
			break;
		}
		case 0x8a: { /* LONG1: little-endian two's complement */
			if (need(vm, 1) < 0)
				return vm_error(vm, "truncated");
			size_t w = *vm->p++;
			if (need(vm, w) < 0)
				return vm_error(vm, "truncated");
			if (w > 8) {
				/* Kept as bytes: the legacy format's magic number. */
				if (!(o = mk(vm, K_BIGINT)))
					return ST_ENOMEM;
				o->s = (const char *)vm->p;
				o->len = w;
				vm->p += w;
				if (push(vm, o))
					return ST_ENOMEM;
				break;
			}
			uint64_t v = 0;
			for (size_t i = 0; i < w; i++)
				v |= (uint64_t)vm->p[i] << (8 * i);
			if (w && w < 8 && (vm->p[w - 1] & 0x80))
				v |= ~(uint64_t)0 << (8 * w);
			vm->p += w;
			if (!(o = mk(vm, K_INT)))
				return ST_ENOMEM;
			o->i = (int64_t)v;
			if (push(vm, o))
				return ST_ENOMEM;
			break;
		}
		case 'G': /* BINFLOAT */
			if (need(vm, 8) < 0)
				return vm_error(vm, "truncated");
			vm->p += 8;
			if (push(vm, mk(vm, K_FLOAT)))
				return ST_ENOMEM;
			break;
		case 'X': case 0x8c: case 0x8d: case 'T': case 'U': case 'B': case 'C': {
			/* BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, BINSTRING,
			 * SHORT_BINSTRING, BINBYTES, SHORT_BINBYTES */
			size_t w = (op == 0x8c || op == 'U' || op == 'C') ? 1
			           : op == 0x8d ? 8 : 4;
			if (need(vm, w) < 0)
				return vm_error(vm, "truncated");
			n = w == 1 ? vm->p[0] : w == 4 ? le32(vm->p) : le64(vm->p);
			vm->p += w;
			if ((rc = str_obj(vm, n)))
				return rc;
			break;
		}
		case 'c': { /* GLOBAL "module\nname\n" */
			const unsigned char *m = vm->p, *nl1, *nl2;
			nl1 = memchr(m, '\n', (size_t)(vm->end - m));
			if (!nl1)
				return vm_error(vm, "truncated GLOBAL");
			nl2 = memchr(nl1 + 1, '\n', (size_t)(vm->end - nl1 - 1));
			if (!nl2)
				return vm_error(vm, "truncated GLOBAL");
			vm->p = nl2 + 1;
			if ((rc = global(vm, (const char *)m, (size_t)(nl1 - m),
			                 (const char *)nl1 + 1, (size_t)(nl2 - nl1 - 1))))
				return rc;
			break;
		}
		case 0x93: /* STACK_GLOBAL */
			POP(b);
			POP(a);
			if (a->kind != K_STR || b->kind != K_STR)
				return vm_error(vm, "STACK_GLOBAL of non-strings");
			if ((rc = global(vm, a->s, a->len, b->s, b->len)))
				return rc;
			break;
		case 'q': case 'r': case 0x94: /* BINPUT, LONG_BINPUT, MEMOIZE */
			if (op == 'q') {
				if (need(vm, 1) < 0)
					return vm_error(vm, "truncated");
				n = *vm->p++;
			} else if (op == 'r') {
				if (need(vm, 4) < 0)
					return vm_error(vm, "truncated");
				n = le32(vm->p);
				vm->p += 4;
			} else {
				/*
				 * MEMOIZE stores at len(memo), kept as a count: finding
				 * it by a scan of the memo made 1M MEMOIZE quadratic.
				 */
				n = vm->memo_len;
			}
			if ((rc = memo_put(vm, n)))
				return rc;
			break;
		case 'h': case 'j': /* BINGET, LONG_BINGET */
			if (need(vm, op == 'h' ? 1 : 4) < 0)
				return vm_error(vm, "truncated");
			n = op == 'h' ? *vm->p : le32(vm->p);
			vm->p += op == 'h' ? 1 : 4;
			if ((rc = memo_get(vm, n)))
				return rc;
			break;
		case 't': case 'l': case 'd': /* TUPLE, LIST, DICT from a MARK */
			if (!(o = mk(vm, op == 't' ? K_TUPLE : op == 'l' ? K_LIST : K_DICT)))
				return ST_ENOMEM;
			if ((rc = pop_mark_into(vm, o)) || push(vm, o))
				return rc ? rc : ST_ENOMEM;
			if (op == 'd' && o->n % 2)
				return vm_error(vm, "DICT with an odd number of items");
			break;
		case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
			size_t k = op - 0x84;
			if (vm->sp < k)
				return vm_error(vm, "stack underflow");
			if (!(o = mk(vm, K_TUPLE)))
				return ST_ENOMEM;
			for (size_t i = vm->sp - k; i < vm->sp; i++) {
				if (vm->stack[i]->kind == K_MARK)
					return vm_error(vm, "MARK inside a tuple");
				if (add_item(vm, o, vm->stack[i]))
					return ST_ENOMEM;
			}
			vm->sp -= k;
			if (push(vm, o))
				return ST_ENOMEM;
			break;
		}
		case 'a': /* APPEND */
			POP(b);
			POP(a);
			if (a->kind != K_LIST || add_item(vm, a, b) || push(vm, a))
				return vm->nomem ? ST_ENOMEM : vm_error(vm, "APPEND to a non-list");
			break;
		case 'e': { /* APPENDS */
			long m = find_mark(vm);
			if (m < 1 || vm->stack[m - 1]->kind != K_LIST)
				return vm_error(vm, "APPENDS without a list");
			a = vm->stack[m - 1];
			for (size_t i = (size_t)m + 1; i < vm->sp; i++)
				if (add_item(vm, a, vm->stack[i]))
					return ST_ENOMEM;
			vm->sp = (size_t)m;
			break;
		}
		case 's': /* SETITEM */
			POP(c);
			POP(b);
			POP(a);
			if (a->kind != K_DICT || add_item(vm, a, b) || add_item(vm, a, c) ||
			    push(vm, a))
				return vm->nomem ? ST_ENOMEM : vm_error(vm, "SETITEM on a non-dict");
			break;
		case 'u': { /* SETITEMS */
			long m = find_mark(vm);
			if (m < 1 || vm->stack[m - 1]->kind != K_DICT || (vm->sp - (size_t)m - 1) % 2)
				return vm_error(vm, "SETITEMS without a dict");
			a = vm->stack[m - 1];
			for (size_t i = (size_t)m + 1; i < vm->sp; i++)
				if (add_item(vm, a, vm->stack[i]))
					return ST_ENOMEM;
			vm->sp = (size_t)m;
			break;
		}
		case 'R': /* REDUCE */
		case 0x81: /* NEWOBJ */
			POP(b);
			POP(a);
			if ((rc = call(vm, a, b)))
				return rc;
			break;
		case 'b': /* BUILD: state of an object; ignored (e.g. _metadata) */
			POP(b);
			if (vm->sp == 0)
				return vm_error(vm, "BUILD on an empty stack");
			break;
		case 'Q': /* BINPERSID */
			POP(a);
			if ((rc = persistent(vm, a)))
				return rc;
			break;
		case '.': /* STOP */
			POP(a);
			*result = a;
			return ST_OK;
		default: {
			char msg[80];
			vm->p--;
			snprintf(msg, sizeof msg, "unsupported pickle opcode 0x%02x", op);
			return vm_error(vm, msg);
		}
		}
		if (vm->nomem)
			return ST_ENOMEM;
	}
	return vm_error(vm, "no STOP opcode (truncated pickle)");
}

/* ---- tensors --------------------------------------------------------------- */

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

/* A name put in a ", "-separated st__buf: its offset and length there. */
struct name_at {
	size_t off, len;
};

/* Append name (cut at 100 bytes, at a UTF-8 character's start) to list,
 * noting where it went in at. */
static void list_name(struct st__buf *list, struct st__buf *at, const char *name,
                      size_t len)
{
	if (list->len)
		st__buf_puts(list, ", ");
	struct name_at a = {list->len, len > 100 ? 100 : len};
	while (a.len < len && a.len && ((unsigned char)name[a.len] & 0xc0) == 0x80)
		a.len--; /* not inside a UTF-8 sequence */
	st__buf_put(list, name, a.len);
	st__buf_put(at, &a, sizeof a);
}

/* The names noted in at, pointing into list (now final); NULL if none. */
static st_torch_name *name_list(const struct st__buf *list, const struct st__buf *at,
                                size_t *n, int *nomem)
{
	*n = at->len / sizeof(struct name_at);
	if (!*n)
		return NULL;
	st_torch_name *v = malloc(*n * sizeof *v);
	if (!v) {
		*nomem = 1;
		*n = 0;
		return NULL;
	}
	for (size_t i = 0; i < *n; i++) {
		struct name_at a;
		memcpy(&a, at->data + i * sizeof a, sizeof a);
		v[i] = (st_torch_name){list->data + a.off, a.len};
	}
	return v;
}

/* Note a value that is not a tensor, left out: counted, first few named. */
static void skip_value(struct collect *c, const char *name, size_t len)
{
	if (c->n_skipped++ < 8)
		list_name(&c->skipped, &c->skipped_at, name, len);
}

/*
 * The flattened names may not add up to more than a safetensors header
 * may hold (FORMAT.md rule 2): a memoized long key reused at every level
 * would otherwise make a few bytes of pickle cost gigabytes.
 */
#define MAX_NAME_BYTES 100000000u

/*
 * Flatten nested dicts of tensors into "a.b.c" names. Each dict is
 * flattened once: the memo lets a pickle put one dict under many keys (or
 * inside itself), and following every path took exponential time.
 */
static int walk(struct collect *c, struct obj *d, const char *prefix,
                size_t plen, int depth, struct st__report *r)
{
	if (depth > 16)
		return BAD("the pickle: dictionaries nested more than 16 deep");
	if (d->seen)
		return BAD("the pickle: a dictionary appears twice (or inside "
		           "itself); a state dict is a tree");
	d->seen = 1;
	for (size_t i = 0; i + 1 < d->n; i += 2) {
		const struct obj *k = d->items[i];
		struct obj *v = d->items[i + 1];
		if (k->kind != K_STR) {
			/* e.g. the integer keys of optimizer state */
			skip_value(c, prefix, plen);
			continue;
		}
		size_t len = plen + (plen ? 1 : 0) + k->len;
		if (len > MAX_NAME_BYTES - c->name_bytes)
			return BAD("the pickle: the flattened tensor names add up to "
			           "more than %u bytes", MAX_NAME_BYTES);
		c->name_bytes += len;
		char *name = malloc(len + 1);
		if (!name)
			return ST_ENOMEM;
		if (plen) {
			memcpy(name, prefix, plen);
			name[plen] = '.';
		}
		memcpy(name + len - k->len, k->s, k->len);
		name[len] = 0;
		if (v->kind == K_DICT) {
			int rc = walk(c, v, name, len, depth + 1, r);
			free(name);
			if (rc)
				return rc;
			continue;
		}
		if (v->kind != K_TENSOR) {
			skip_value(c, name, len); /* numbers, strings: not weights */
			free(name);
			continue;
		}
		if (c->n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 64;
			struct found *f = realloc(c->f, cap * sizeof *f);
			if (!f) {
				free(name);
				return ST_ENOMEM;
			}
			c->f = f;
			c->cap = cap;
		}
		c->f[c->n++] = (struct found){name, len, v};
	}
	return ST_OK;
}

/* ---- which dictionary ------------------------------------------------- */

/* The value of key k (klen bytes) in dict d, or NULL. */
static struct obj *dict_get(const struct obj *d, const char *k, size_t klen)
{
	for (size_t i = 0; i + 1 < d->n; i += 2)
		if (d->items[i]->kind == K_STR && d->items[i]->len == klen &&
		    !memcmp(d->items[i]->s, k, klen))
			return d->items[i + 1];
	return NULL;
}

/* Tensors reachable through string keys below o, each dict once a pass. */
static uint64_t count_tensors(struct obj *o, unsigned pass, int depth)
{
	if (o->kind == K_TENSOR)
		return 1;
	if (o->kind != K_DICT || depth > 16 || o->mark == pass)
		return 0;
	o->mark = pass;
	uint64_t n = 0;
	for (size_t i = 0; i + 1 < o->n; i += 2)
		if (o->items[i]->kind == K_STR)
			n += count_tensors(o->items[i + 1], pass, depth + 1);
	return n;
}

/*
 * Choose the dictionary to read. With keys (each one level, or several
 * as "K1.K2": the longest key that exists is taken first), follow them;
 * without, a checkpoint whose tensors are all under one of the keys
 * training scripts use for the weights is read from that key. info gets
 * the key used and the top-level keys.
 */
static int select_dict(struct st__report *r, struct obj **d,
                       struct st__buf *key, int *key_auto,
                       struct st__buf *top, struct st__buf *top_at)
{
	struct obj *root = *d;
	for (size_t i = 0; i + 1 < root->n; i += 2)
		if (root->items[i]->kind == K_STR)
			list_name(top, top_at, root->items[i]->s, root->items[i]->len);
	for (size_t k = 0; k < r->n_keys; k++) {
		const char *s = r->keys[k];
		size_t len = strlen(s);
		while (len) {
			size_t take = len;
			struct obj *v;
			while (!(v = dict_get(*d, s, take))) {
				while (take > 0 && s[take - 1] != '.')
					take--;
				if (take <= 1)
					break;
				take--; /* before the dot */
			}
			if ((!v || take == 0) && !key->len)
				return BAD("--key '%s': no key '%.*s' in the checkpoint (its "
				           "keys: %.200s)", r->keys[k],
				           (int)(len > 100 ? 100 : len), s,
				           top->data ? top->data : "none");
			if (!v || take == 0)
				return BAD("--key '%s': no key '%.*s' in '%s'", r->keys[k],
				           (int)(len > 100 ? 100 : len), s, key->data);
			if (key->len)
				st__buf_puts(key, ".");
			st__buf_put(key, s, take);
			if (v->kind != K_DICT)
				return BAD("--key '%s': '%s' is not a dictionary", r->keys[k],
				           key->data);
			*d = v;
			s += take;
			len -= take;
			if (len && *s == '.') {
				s++;
				len--;
			}
		}
	}
	if (r->n_keys)
		return key->failed ? ST_ENOMEM : ST_OK;
	static const char *const usual[] = {"state_dict", "model", "module",
	                                    "model_state_dict"};
	unsigned pass = 1;
	struct obj *only = NULL;
	size_t only_at = 0, with = 0;
	for (size_t i = 0; i + 1 < root->n; i += 2) {
		root->mark = 0;
		struct obj *k = root->items[i], *v = root->items[i + 1];
		if (k->kind != K_STR || !count_tensors(v, ++pass, 1))
			continue;
		with++;
		only = v;
		only_at = i;
	}
	if (with != 1 || only->kind != K_DICT)
		return ST_OK;
	const struct obj *k = root->items[only_at];
	for (size_t u = 0; u < sizeof usual / sizeof usual[0]; u++)
		if (k->len == strlen(usual[u]) && !memcmp(k->s, usual[u], k->len)) {
			st__buf_put(key, k->s, k->len);
			*key_auto = 1;
			*d = only;
			break;
		}
	return key->failed ? ST_ENOMEM : ST_OK;
}

/* ---- where each tensor's bytes are ------------------------------------- */

/*
 * The CRC-32 of a storage, joined from the pieces of it that reads have
 * covered (see "CRCs of storages read in place" below): [0, done) in one
 * run, and the runs beyond it that came early, sorted and apart.
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

void st__torch_free(struct st__torch *t)
{
	if (!t)
		return;
	st__arc_free(&t->arc);
	for (size_t i = 0; t->v && i < t->n_views; i++) {
		free(t->v[i].copy);
		free(t->v[i].crc.p);
	}
	free(t->v);
	free(t->strides);
	free(t->cache);
	free(t->crc_state);
	st__buf_free(&t->key);
	st__buf_free(&t->top);
	st__buf_free(&t->skipped);
	free(t->key_list);
	free(t->skipped_list);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

int st__torch_kind(const struct st__torch *t) { return t->kind; }

int st__torch_plain(const struct st__torch *t, size_t i)
{
	return t->v[i].plain;
}

long st__torch_alias_of(const struct st__torch *t, size_t i)
{
	return t->v[i].alias_of;
}

const st_torch_info *st__torch_info(const struct st__torch *t)
{
	return &t->info;
}

/*
 * Copy bytes [off, off + n) of the tensor's contiguous form from its
 * storage's bytes sb: the element index walks the shape in row-major
 * order while pos follows the strides.
 */
static void gather_walk(const struct tview *v, const unsigned char *sb,
                        uint64_t off, unsigned char *out, size_t n)
{
	static const uint64_t one = 1;
	unsigned nd = v->ndim ? v->ndim : 1;
	const uint64_t *size = v->ndim ? v->size : &one;
	const uint64_t *stride = v->ndim ? v->stride : &one;
	uint64_t idx[ST_MAX_DIMS];
	unsigned es = v->esize;
	uint64_t e = off / es;
	size_t skip = (size_t)(off % es);
	uint64_t pos = v->first;
	for (unsigned d = nd; d-- > 0;) {
		idx[d] = e % size[d];
		e /= size[d];
		pos += idx[d] * stride[d];
	}
	unsigned last = nd - 1;
	while (n > 0) {
		uint64_t run = 1;
		size_t k;
		if (!v->swap && stride[last] == 1 && skip == 0) {
			/* A run along the last dimension is contiguous. */
			run = size[last] - idx[last];
			uint64_t bytes = run * es;
			k = bytes < n ? (size_t)bytes : n;
			memcpy(out, sb + pos * es, k);
		} else if (!v->swap && skip == 0 && n >= es) {
			/* Whole elements along the last dimension, strided. */
			uint64_t left = size[last] - idx[last];
			run = left < n / es ? left : n / es;
			const unsigned char *src = sb + pos * es;
			size_t step = (size_t)(stride[last] * es);
			switch (es) {
#define STRIDED(W)                                                       \
			case W:                                                      \
				for (uint64_t j = 0; j < run; j++, src += step)          \
					memcpy(out + j * W, src, W);                         \
				break;
			STRIDED(1)
			STRIDED(2)
			STRIDED(4)
			STRIDED(8)
#undef STRIDED
			default:
				for (uint64_t j = 0; j < run; j++, src += step)
					memcpy(out + j * es, src, es);
			}
			k = (size_t)(run * es);
		} else {
			unsigned char el[16];
			const unsigned char *src = sb + pos * es;
			if (v->swap) {
				for (unsigned b = 0; b < es; b++)
					el[b] = src[es - 1 - b];
				src = el;
			}
			k = es - skip < n ? es - skip : n;
			memcpy(out, src + skip, k);
			skip = 0;
		}
		out += k;
		n -= k;
		if (n == 0)
			break;
		/* Step the index by run elements, carrying into outer dims. */
		idx[last] += run;
		pos += run * stride[last];
		for (unsigned d = last; d > 0 && idx[d] == size[d]; d--) {
			pos -= size[d] * stride[d];
			idx[d] = 0;
			idx[d - 1]++;
			pos += stride[d - 1];
		}
	}
}

/*
 * A view whose last dimension is strided and whose next-to-last one is
 * closer (a transpose: strides (1, R) where the rows were (R, 1); the
 * last two dimensions of a permute) reads one element per cache line,
 * and mostly per page, along each output row. It is gathered in tiles
 * instead: TILE_BYTES / element size output rows at a time (four cache
 * lines of storage along the next-to-last dimension) by TILE_COLS
 * columns, so that every line of storage a tile touches is used for all
 * its rows while it is in the cache, and each page for as many rows as a
 * read asks for, up to that: a page visited again is a TLB miss, dear
 * under virtualisation (64 rows of F32 ran 1.4 times as fast as 16).
 * Bytes are copied as they are, so the output is the same as
 * gather_walk's, and as tensor.contiguous().
 */
#define TILE_BYTES 256
#define TILE_COLS 64

static int tiled(const struct tview *v)
{
	if (v->swap || v->ndim < 2)
		return 0;
	unsigned es = v->esize, last = v->ndim - 1;
	return (es == 1 || es == 2 || es == 4 || es == 8) &&
	       v->stride[last] > 1 && v->stride[last - 1] < v->stride[last] &&
	       v->size[last] > 1 && v->size[last - 1] > 1;
}

/* Element pos in storage of the first element of output row row (rows
 * count over all dimensions but the last). */
static uint64_t row_pos(const struct tview *v, uint64_t row)
{
	uint64_t pos = v->first;
	for (unsigned d = v->ndim - 1; d-- > 0;) {
		pos += row % v->size[d] * v->stride[d];
		row /= v->size[d];
	}
	return pos;
}

/* Elements [e0, e1) of the contiguous form, in tiles. */
static void gather_tiles(const struct tview *v, const unsigned char *sb,
                         uint64_t e0, uint64_t e1, unsigned char *out)
{
	unsigned es = v->esize, last = v->ndim - 1;
	uint64_t cols = v->size[last], rows_a = v->size[last - 1];
	uint64_t s_col = v->stride[last], s_row = v->stride[last - 1];
	uint64_t r0 = e0 / cols, c0 = e0 % cols;
	uint64_t r_end = (e1 - 1) / cols, c_end = e1 - r_end * cols;
	unsigned tile_rows = TILE_BYTES / es;
	for (uint64_t r = r0; r <= r_end;) {
		/* Rows of one tile share their outer index: pos steps by s_row. */
		uint64_t a = r % rows_a, nr = rows_a - a;
		if (nr > tile_rows)
			nr = tile_rows;
		if (nr > r_end - r + 1)
			nr = r_end - r + 1;
		uint64_t pos = row_pos(v, r);
		for (uint64_t b0 = 0; b0 < cols; b0 += TILE_COLS) {
			uint64_t b1 = cols - b0 < TILE_COLS ? cols : b0 + TILE_COLS;
			for (uint64_t i = 0; i < nr; i++) {
				uint64_t row = r + i;
				uint64_t lo = row == r0 && c0 > b0 ? c0 : b0;
				uint64_t hi = row == r_end && c_end < b1 ? c_end : b1;
				if (lo >= hi)
					continue;
				const unsigned char *src = sb + (pos + i * s_row + lo * s_col) * es;
				unsigned char *dst = out + (row * cols + lo - e0) * es;
				size_t step = (size_t)(s_col * es), k = (size_t)(hi - lo);
				switch (es) {
#define TILE_ROW(W, T)                                                   \
				case W:                                                  \
					for (size_t j = 0; j < k; j++, src += step) {        \
						T x;                                             \
						memcpy(&x, src, W);                              \
						memcpy(dst + j * W, &x, W);                      \
					}                                                    \
					break;
				TILE_ROW(1, uint8_t)
				TILE_ROW(2, uint16_t)
				TILE_ROW(4, uint32_t)
				TILE_ROW(8, uint64_t)
#undef TILE_ROW
				}
			}
		}
		r += nr;
	}
}

static void gather(const struct tview *v, const unsigned char *sb,
                   uint64_t off, unsigned char *out, size_t n)
{
	unsigned es = v->esize;
	uint64_t e0 = (off + es - 1) / es, e1 = (off + n) / es;
	if (!tiled(v) || e1 <= e0) {
		gather_walk(v, sb, off, out, n);
		return;
	}
	/* Parts of elements at either end, then whole ones in tiles. */
	size_t head = (size_t)(e0 * es - off), body = (size_t)((e1 - e0) * es);
	if (head)
		gather_walk(v, sb, off, out, head);
	gather_tiles(v, sb, e0, e1, out + head);
	if (n > head + body)
		gather_walk(v, sb, e1 * es, out + head + body, n - head - body);
}

/*
 * A view reads its storage through the file's mapping, whose pages then
 * count as the process's memory: once the reads of a view add up to all
 * its bytes (whatever their order and threads, so that no reader of an
 * earlier chunk faults pages back in afterwards), its storage's pages are
 * let go (they stay in the page cache, and a later reader of the mapping
 * faults them back in), so memory stays bounded by the storages being
 * read rather than the file.
 */
static void let_go(const unsigned char *base, uint64_t off, uint64_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)(base + off) + page - 1) & ~(page - 1);
	uintptr_t b = (uintptr_t)(base + off + len) & ~(page - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

/*
 * CRCs of storages read in place (zip members; tar and legacy files have
 * none). Every read checks its bytes as they go by, so that a storage
 * needs no second pass whatever the order its chunks come in and
 * however many threads read them: a read of bytes [off, off + n) of a
 * tensor's contiguous form answers for a piece of its storage, takes the
 * piece's CRC-32 outside any lock (st__crc32, libdeflate), and joins it
 * to the pieces already seen (st__arc_crc32_combine, zlib), in storage
 * order whatever the order of the reads; the read that completes the
 * storage compares the CRC with the zip record and fails when it
 * differs. A tensor that is its whole storage answers for the bytes it
 * read; any other (a view, a part of a storage, an expanded tensor) for
 * the same share of its storage as of its own bytes, [off * S / N,
 * (off + n) * S / N), read from the mapping (a view's gather has just
 * read those pages) or with pread, so that reading all of a tensor
 * covers all of its storage once. Parts read twice are joined once.
 * Reads that leave more than CRC_PIECES_MAX gaps, or race over the same
 * bytes, spoil the run: the read of the tensor's last byte then reads the
 * whole storage once more through its CRC. Once a storage is found good,
 * no read of it checks again; once found bad, every read that reaches a
 * tensor's last byte fails. A read that leaves part of the storage
 * unread checks nothing. st_file_data, which hands out all of a tensor's
 * bytes, covers the whole storage first.
 */
#define CRC_PIECES_MAX 64
enum { CRC_UNKNOWN, CRC_GOOD, CRC_BAD };

static int crc_bad(struct st__torch *t, const struct tview *v,
                   const char *name, struct st__report *r)
{
	__atomic_store_n(&t->crc_state[v->entry], CRC_BAD, __ATOMIC_RELEASE);
	return BAD("tensor '%s': zip member '%s' fails its CRC-32 (a damaged "
	           "file?)", name, t->arc.e[v->entry].name);
}

static int has_crc(const struct st__torch *t, const struct tview *v)
{
	return t->kind == ST__TORCH_ZIP && v->data_off != ST__ARC_NOT_IN_PLACE &&
	       v->entry < t->arc.n && t->arc.e[v->entry].has_crc;
}

/* The CRC-32 of storage bytes [lo, hi) after *c: from own (the bytes
 * themselves, already read), else the mapping base, else the file. */
static int crc_bytes(struct st__torch *t, const struct tview *v,
                     const unsigned char *base, const unsigned char *own,
                     uint64_t lo, uint64_t hi, uint32_t *c,
                     const char *name, struct st__report *r)
{
	if (own || base) {
		*c = st__crc32(*c, own ? own : base + v->data_off + lo,
		               (size_t)(hi - lo));
		return ST_OK;
	}
	unsigned char b[1 << 16];
	for (uint64_t at = lo; at < hi;) {
		size_t k = hi - at < sizeof b ? (size_t)(hi - at) : sizeof b;
		if (st__src_read(&t->src, b, k, v->data_off + at) < 0)
			return st__error_sys(r->err, ST_EIO, errno,
			                     "%s: tensor '%s': read", r->path, name);
		*c = st__crc32(*c, b, k);
		at += k;
	}
	return ST_OK;
}

/* Compare a storage's CRC with its record; remember the verdict. */
static int crc_verdict(struct st__torch *t, const struct tview *v,
                       uint32_t c, const char *name, struct st__report *r)
{
	if (c != t->arc.e[v->entry].crc)
		return crc_bad(t, v, name, r);
	__atomic_store_n(&t->crc_state[v->entry], CRC_GOOD, __ATOMIC_RELEASE);
	return ST_OK;
}

/* The whole storage of v through its CRC (a spoilt run's last resort). */
static int crc_whole(struct st__torch *t, const struct tview *v,
                     const unsigned char *base, const char *name,
                     struct st__report *r)
{
	uint32_t c = 0;
	int rc = crc_bytes(t, v, base, NULL, 0, v->st_bytes, &c, name, r);
	return rc ? rc : crc_verdict(t, v, c, name, r);
}

/* The parts of [lo, hi) that run cr does not cover yet, into gap. */
static unsigned crc_gaps(const struct crc_run *cr, uint64_t lo, uint64_t hi,
                         struct crc_piece *gap)
{
	uint64_t a = lo > cr->done ? lo : cr->done;
	unsigned ng = 0;
	for (unsigned k = 0; k < cr->n && a < hi; k++) {
		if (cr->p[k].hi <= a)
			continue;
		if (cr->p[k].lo >= hi)
			break;
		if (cr->p[k].lo > a)
			gap[ng++] = (struct crc_piece){a, cr->p[k].lo, 0};
		a = cr->p[k].hi;
	}
	if (a < hi)
		gap[ng++] = (struct crc_piece){a, hi, 0};
	return ng;
}

/* Join piece g to run cr; -1 when it overlaps what is there (a race) or
 * would leave too many gaps. */
static int crc_join(struct crc_run *cr, struct crc_piece g)
{
	if (g.lo < cr->done)
		return -1;
	unsigned k = 0;
	while (k < cr->n && cr->p[k].lo < g.lo)
		k++;
	if ((k > 0 && cr->p[k - 1].hi > g.lo) || (k < cr->n && cr->p[k].lo < g.hi))
		return -1;
	if (cr->n == cr->cap) {
		unsigned c = cr->cap ? cr->cap * 2 : 4;
		struct crc_piece *np;
		if (cr->n >= CRC_PIECES_MAX ||
		    !(np = realloc(cr->p, c * sizeof *np)))
			return -1;
		cr->p = np;
		cr->cap = c;
	}
	memmove(cr->p + k + 1, cr->p + k, (cr->n - k) * sizeof *cr->p);
	cr->p[k] = g;
	cr->n++;
	/* Fold runs that now touch: into [0, done), or into each other. */
	unsigned w = 0;
	for (unsigned i = 0; i < cr->n; i++) {
		struct crc_piece q = cr->p[i];
		if (w == 0 && q.lo == cr->done) {
			cr->crc = st__arc_crc32_combine(cr->crc, q.crc, q.hi - q.lo);
			cr->done = q.hi;
		} else if (w > 0 && cr->p[w - 1].hi == q.lo) {
			cr->p[w - 1].crc = st__arc_crc32_combine(cr->p[w - 1].crc, q.crc,
			                                         q.hi - q.lo);
			cr->p[w - 1].hi = q.hi;
		} else {
			cr->p[w++] = q;
		}
	}
	cr->n = w;
	return 0;
}

static void crc_reset(struct crc_run *cr, int spoilt)
{
	free(cr->p);
	*cr = (struct crc_run){.spoilt = spoilt};
}

/* floor(x * s / n), without overflow (x <= n). */
static uint64_t share(uint64_t x, uint64_t s, uint64_t n)
{
	return (uint64_t)((unsigned __int128)x * s / n);
}

/*
 * Bytes [off, off + n) of tensor i's contiguous form were read: buf
 * holds them when it is not NULL and the tensor is plain; base is the
 * file's mapping, or NULL.
 */
static int crc_note(struct st__torch *t, size_t i, const unsigned char *base,
                    const void *buf, uint64_t off, size_t n, const char *name,
                    struct st__report *r)
{
	struct tview *v = &t->v[i];
	if (!has_crc(t, v) || n == 0)
		return ST_OK;
	int last = off + n == v->n_bytes;
	int state = __atomic_load_n(&t->crc_state[v->entry], __ATOMIC_ACQUIRE);
	if (state == CRC_GOOD)
		return ST_OK;
	if (state == CRC_BAD)
		return last ? crc_bad(t, v, name, r) : ST_OK;
	uint64_t lo = off, hi = off + n, s = v->st_bytes;
	const unsigned char *own = NULL;
	if (v->plain && v->first == 0 && v->n_bytes == s) {
		own = buf;
	} else {
		lo = share(off, s, v->n_bytes);
		hi = last ? s : share(off + n, s, v->n_bytes);
	}
	struct crc_piece gap[CRC_PIECES_MAX + 1];
	pthread_mutex_lock(&t->lock);
	int spoilt = v->crc.spoilt;
	unsigned ng = spoilt ? 0 : crc_gaps(&v->crc, lo, hi, gap);
	pthread_mutex_unlock(&t->lock);
	if (spoilt)
		return last ? crc_whole(t, v, base, name, r) : ST_OK;
	for (unsigned k = 0; k < ng; k++) {
		int rc = crc_bytes(t, v, base, own ? own + (gap[k].lo - lo) : NULL,
		                   gap[k].lo, gap[k].hi, &gap[k].crc, name, r);
		if (rc)
			return rc;
	}
	int complete = 0;
	uint32_t c = 0;
	pthread_mutex_lock(&t->lock);
	for (unsigned k = 0; k < ng && !v->crc.spoilt; k++)
		if (crc_join(&v->crc, gap[k]) < 0)
			crc_reset(&v->crc, 1);
	spoilt = v->crc.spoilt;
	if (!spoilt && ng && v->crc.done == s) {
		complete = 1;
		c = v->crc.crc;
		crc_reset(&v->crc, 0);
	}
	pthread_mutex_unlock(&t->lock);
	if (complete)
		return crc_verdict(t, v, c, name, r);
	return spoilt && last ? crc_whole(t, v, base, name, r) : ST_OK;
}

int st__torch_seen(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t off, const void *buf, size_t n,
                   const char *name, struct st__report *r)
{
	return crc_note(t, i, base, buf, off, n, name, r);
}

int st__torch_read(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t off, void *buf, size_t n, const char *name,
                   struct st__report *r)
{
	struct tview *v = &t->v[i];
	if (n == 0)
		return ST_OK;
	if (v->data_off != ST__ARC_NOT_IN_PLACE) {
		gather(v, base + v->data_off, off, buf, n);
		int rc = crc_note(t, i, base, NULL, off, n, name, r);
		/* Let go once the reads add up to the whole tensor (again),
		 * when no other thread is still reading it for this pass. */
		uint64_t was = __atomic_fetch_add(&v->gathered, n, __ATOMIC_ACQ_REL);
		if (!t->src.mem && (was + n) / v->n_bytes > was / v->n_bytes)
			let_go(base, v->data_off, v->st_bytes);
		return rc;
	}
	/* A compressed storage: inflated once, kept until another is read. */
	pthread_mutex_lock(&t->lock);
	int rc = ST_OK;
	if (!t->cache || t->cache_entry != v->entry) {
		free(t->cache);
		t->cache = NULL;
		/* The member holds exactly its declared st_bytes, or fails. */
		rc = st__arc_read(&t->arc, v->entry, v->st_bytes, &t->cache,
		                  &t->cache_len, r);
		t->cache_entry = v->entry;
	}
	if (rc == ST_OK)
		gather(v, t->cache, off, buf, n);
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int st__torch_data(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t n_bytes, const void **data, const char *name,
                   struct st__report *r)
{
	struct tview *v = &t->v[i];
	void *c = __atomic_load_n(&v->copy, __ATOMIC_ACQUIRE);
	if (!c) {
		if (n_bytes > SIZE_MAX)
			return ST_ENOMEM;
		c = malloc((size_t)n_bytes);
		if (!c)
			return st__error(r->err, ST_ENOMEM, "%s: out of memory",
			                 r->path);
		int rc = st__torch_read(t, i, base, 0, c, (size_t)n_bytes, name, r);
		if (rc) {
			free(c);
			return rc;
		}
		void *expected = NULL;
		if (!__atomic_compare_exchange_n(&v->copy, &expected, c, 0,
		                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			free(c); /* another thread's copy won */
			c = expected;
		}
	}
	*data = c;
	return ST_OK;
}

/* ---- reading the container ---------------------------------------------- */

/* A storage's bytes: where, how many, of which dtype. */
struct sloc {
	const char *key;
	size_t len;
	uint64_t data_off;   /* or ST__ARC_NOT_IN_PLACE */
	size_t entry;
	uint64_t bytes;
	st_dtype dtype;
	int found;           /* its bytes were found */
};

struct parse {
	struct st__report *r;
	const struct st__src *src;
	int kind;
	struct zip z;
	const unsigned char *map;   /* legacy, tar: the file's bytes */
	void *mapped;               /* to unmap */
	struct sloc *sl;            /* legacy, tar: sorted by key */
	size_t n_sl;
	int swap;
	struct vm vm;
	unsigned char *pkl, *pkl2;
	struct obj *root;
};

static int sloc_cmp(const void *x, const void *y)
{
	const struct sloc *a = x, *b = y;
	int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);
	if (c)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

static struct sloc *sloc_find(struct parse *p, const char *key, size_t len)
{
	struct sloc k = {.key = key, .len = len};
	return p->n_sl ? bsearch(&k, p->sl, p->n_sl, sizeof *p->sl, sloc_cmp)
	               : NULL;
}

/* Map the whole file (legacy and tar read pickles in place). */
static int map_src(struct parse *p)
{
	if (p->src->mem) {
		p->map = p->src->mem;
		return ST_OK;
	}
	struct st__report *r = p->r;
	if (p->src->size == 0 || p->src->size > SIZE_MAX)
		return BAD("cannot map a file of %llu bytes",
		           (unsigned long long)p->src->size);
	void *m = mmap(NULL, (size_t)p->src->size, PROT_READ, MAP_SHARED,
	               p->src->fd, 0);
	if (m == MAP_FAILED)
		return st__error_sys(r->err, ST_EIO, errno, "%s: mmap", r->path);
	p->mapped = m;
	p->map = m;
	return ST_OK;
}

/* Run one pickle from the VM's position: a fresh memo and stack each. */
static int run_next(struct parse *p, struct obj **out)
{
	p->vm.sp = 0;
	if (p->vm.memo)
		memset(p->vm.memo, 0, p->vm.memo_cap * sizeof *p->vm.memo);
	p->vm.memo_len = 0;
	return run(&p->vm, out);
}

static void vm_at(struct parse *p, const unsigned char *start,
                  const unsigned char *end, const char *what)
{
	p->vm.start = p->vm.p = start;
	p->vm.end = end;
	p->vm.what = what;
}

static int parse_zip(struct parse *p)
{
	struct st__report *r = p->r;
	int rc = zip_open(&p->z, p->src, r);
	if (rc)
		return rc;
	long bo = zip_find(&p->z, "byteorder");
	if (bo >= 0) {
		unsigned char *b = NULL;
		size_t blen = 0;
		if ((rc = st__arc_read(&p->z.arc, (size_t)bo, 16, &b, &blen, r)))
			return rc;
		int little = blen == 6 && !memcmp(b, "little", 6);
		int big = blen == 3 && !memcmp(b, "big", 3);
		free(b);
		if (!little && !big)
			return BAD("the byteorder record says neither 'little' nor "
			           "'big'");
		p->swap = big;
	}
	long pe = zip_find(&p->z, "data.pkl");
	if (pe < 0)
		return BAD("zip archive without data.pkl: not a PyTorch checkpoint");
	/* A state dict's pickle is small next to its data; 1 GiB is ample. */
	size_t len = 0;
	if ((rc = st__arc_read(&p->z.arc, (size_t)pe, 1ULL << 30, &p->pkl, &len,
	                       r)))
		return rc;
	vm_at(p, p->pkl, p->pkl + len, "data.pkl");
	return run(&p->vm, &p->root);
}

/* The legacy format's magic number, 0x1950a86a20f9469cfc6c, as LONG1. */
static const unsigned char legacy_magic[10] = {
	0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

/* One sloc per distinct storage key the pickle built, sorted. */
static int storages_of_pickle(struct parse *p)
{
	struct st__report *r = p->r;
	size_t n = 0;
	for (size_t i = 0; i < p->vm.n_all; i++)
		n += p->vm.all[i]->kind == K_STORAGE;
	p->sl = calloc(n ? n : 1, sizeof *p->sl);
	if (!p->sl)
		return ST_ENOMEM;
	for (size_t i = 0; i < p->vm.n_all; i++) {
		const struct obj *o = p->vm.all[i];
		if (o->kind == K_STORAGE)
			p->sl[p->n_sl++] = (struct sloc){.key = o->s, .len = o->len,
			                                 .dtype = o->dtype,
			                                 .data_off = ST__ARC_NOT_IN_PLACE};
	}
	qsort(p->sl, p->n_sl, sizeof *p->sl, sloc_cmp);
	size_t m = 0;
	for (size_t i = 0; i < p->n_sl; i++) {
		if (m && !sloc_cmp(&p->sl[m - 1], &p->sl[i])) {
			if (p->sl[m - 1].dtype != p->sl[i].dtype)
				return BAD("storage '%.*s' is named with two dtypes",
				           (int)(p->sl[i].len > 100 ? 100 : p->sl[i].len),
				           p->sl[i].key);
			continue;
		}
		p->sl[m++] = p->sl[i];
	}
	p->n_sl = m;
	return ST_OK;
}

/*
 * The legacy (pre-1.6) format: five pickles back to back (magic number,
 * protocol version 1001, system info, the object, the sorted storage
 * keys), then each storage in key order as an 8-byte little-endian
 * element count and its little-endian bytes.
 */
static int parse_legacy(struct parse *p)
{
	struct st__report *r = p->r;
	int rc = map_src(p);
	if (rc)
		return rc;
	const unsigned char *m = p->map, *end = p->map + p->src->size;
	struct obj *o;
	vm_at(p, m, end, "legacy pickle");
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_BIGINT || o->len != sizeof legacy_magic ||
	    memcmp(o->s, legacy_magic, sizeof legacy_magic))
		return BAD("a pickle, but not a PyTorch checkpoint (no legacy "
		           "magic number)");
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_INT || o->i != 1001)
		return BAD("legacy checkpoint of protocol version %lld, not 1001",
		           o->kind == K_INT ? (long long)o->i : -1LL);
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_DICT)
		return BAD("legacy checkpoint without its system information");
	if ((rc = run_next(p, &p->root)))
		return rc;
	struct obj *keys;
	if ((rc = run_next(p, &keys)))
		return rc;
	if (keys->kind != K_LIST)
		return BAD("legacy checkpoint without its list of storage keys");
	if ((rc = storages_of_pickle(p)))
		return rc;
	uint64_t at = (uint64_t)(p->vm.p - m);
	for (size_t i = 0; i < keys->n; i++) {
		const char *ks;
		size_t kl;
		if (key_of(keys->items[i], &ks, &kl))
			return BAD("legacy checkpoint: storage key %zu is not a string",
			           i);
		struct sloc *sl = sloc_find(p, ks, kl);
		if (!sl)
			return BAD("legacy checkpoint: storage '%.*s' is listed but no "
			           "tensor uses it", (int)(kl > 100 ? 100 : kl), ks);
		if (sl->found)
			return BAD("legacy checkpoint: storage '%.*s' is listed twice",
			           (int)(kl > 100 ? 100 : kl), ks);
		uint64_t count, bytes, es = st_dtype_bits(sl->dtype) / 8;
		if (p->src->size - at < 8)
			return BAD("legacy checkpoint: truncated before the bytes of "
			           "storage '%.*s'", (int)(kl > 100 ? 100 : kl), ks);
		count = le64(m + at);
		if (st__mul_u64(count, es, &bytes) || bytes > p->src->size - at - 8)
			return BAD("legacy checkpoint: storage '%.*s' of %llu elements "
			           "runs past the end of the %llu-byte file (truncated?)",
			           (int)(kl > 100 ? 100 : kl), ks,
			           (unsigned long long)count,
			           (unsigned long long)p->src->size);
		sl->found = 1;
		sl->data_off = at + 8;
		sl->bytes = bytes;
		at += 8 + bytes;
	}
	return ST_OK;
}

/* One raw little-endian field of a tar member's records. */
static int take(struct parse *p, size_t n, const unsigned char **at)
{
	if ((size_t)(p->vm.end - p->vm.p) < n)
		return -1;
	*at = p->vm.p;
	p->vm.p += n;
	return 0;
}

/*
 * The tar format (before 0.4): members "storages" (a count, then per
 * storage a pickled (key, location, storage class), an 8-byte element
 * count and the bytes; then the pickled list of storage views), "tensors"
 * (a count, then per tensor a pickled (key, storage key, tensor class) and
 * its ndim, sizes, strides and storage offset as raw integers) and
 * "pickle" (the object, naming tensors by key as persistent ids).
 */
static int parse_tar(struct parse *p)
{
	struct st__report *r = p->r;
	int rc = st__arc_open(&p->z.arc, p->src, ST__ARC_TAR, r);
	if (rc)
		return rc;
	long ms = -1, mt = -1, mp = -1;
	for (size_t i = 0; i < p->z.arc.n; i++) {
		const char *nm = p->z.arc.e[i].name;
		if (!strcmp(nm, "storages"))
			ms = (long)i;
		else if (!strcmp(nm, "tensors"))
			mt = (long)i;
		else if (!strcmp(nm, "pickle"))
			mp = (long)i;
	}
	if (ms < 0 || mt < 0 || mp < 0)
		return BAD("a tar archive without the storages, tensors and pickle "
		           "members of a PyTorch checkpoint");
	const struct st__arc_entry *es = &p->z.arc.e[ms];
	if (es->data_off == ST__ARC_NOT_IN_PLACE)
		return BAD("tar: member 'storages' cannot be read in place");
	if ((rc = map_src(p)))
		return rc;
	/* storages */
	const unsigned char *sb = p->map + es->data_off;
	vm_at(p, sb, sb + es->size, "tar member 'storages'");
	struct obj *o;
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_INT || o->i < 0 || (uint64_t)o->i > es->size / 9)
		return BAD("tar: member 'storages' does not begin with a count");
	size_t n = (size_t)o->i;
	struct sloc *sl = calloc(n ? n : 1, sizeof *sl);
	if (!sl)
		return ST_ENOMEM;
	p->sl = sl;
	for (size_t i = 0; i < n; i++) {
		const char *ks;
		size_t kl;
		const unsigned char *c;
		if ((rc = run_next(p, &o)))
			return rc;
		if (o->kind != K_TUPLE || o->n != 3 || key_of(o->items[0], &ks, &kl) ||
		    o->items[2]->kind != K_GLOBAL || o->items[2]->i != G_STORAGE)
			return BAD("tar: storage %zu is not (key, location, class)", i);
		st_dtype dt = o->items[2]->dtype;
		uint64_t count, bytes;
		if (take(p, 8, &c) < 0)
			return BAD("tar: member 'storages' is truncated");
		count = le64(c);
		if (st__mul_u64(count, st_dtype_bits(dt) / 8, &bytes) ||
		    bytes > (uint64_t)(p->vm.end - p->vm.p))
			return BAD("tar: storage '%.*s' of %llu elements runs past the "
			           "end of its member (truncated?)",
			           (int)(kl > 100 ? 100 : kl), ks,
			           (unsigned long long)count);
		sl[p->n_sl++] = (struct sloc){
			.key = ks, .len = kl, .dtype = dt, .bytes = bytes, .found = 1,
			.data_off = es->data_off + (uint64_t)(p->vm.p - sb)};
		p->vm.p += bytes;
	}
	struct obj *views;
	if ((rc = run_next(p, &views)))
		return rc;
	if (views->kind != K_LIST)
		return BAD("tar: member 'storages' does not end with its views");
	size_t n_roots = p->n_sl;
	qsort(sl, n_roots, sizeof *sl, sloc_cmp);
	for (size_t i = 1; i < n_roots; i++)
		if (!sloc_cmp(&sl[i - 1], &sl[i]))
			return BAD("tar: storage '%.*s' appears twice",
			           (int)(sl[i].len > 100 ? 100 : sl[i].len), sl[i].key);
	if (views->n) {
		struct sloc *g = realloc(sl, (n_roots + views->n) * sizeof *g);
		if (!g)
			return ST_ENOMEM;
		p->sl = sl = g;
	}
	for (size_t i = 0; i < views->n; i++) {
		/* (view key, root key, offset, numel) in elements of the root. */
		const struct obj *v = views->items[i];
		const char *vk, *rk;
		size_t vl, rl;
		if (v->kind != K_TUPLE || v->n != 4 || key_of(v->items[0], &vk, &vl) ||
		    key_of(v->items[1], &rk, &rl) || !is_ints_from(v, 2))
			return BAD("tar: storage view %zu is malformed", i);
		struct sloc k = {.key = rk, .len = rl}, *root;
		root = bsearch(&k, sl, n_roots, sizeof *sl, sloc_cmp);
		uint64_t es_ = root ? st_dtype_bits(root->dtype) / 8 : 1;
		uint64_t off = (uint64_t)v->items[2]->i, num = (uint64_t)v->items[3]->i;
		uint64_t ob, nb;
		if (!root || st__mul_u64(off, es_, &ob) || st__mul_u64(num, es_, &nb) ||
		    ob > root->bytes || nb > root->bytes - ob)
			return BAD("tar: storage view %zu lies outside its storage", i);
		sl[p->n_sl++] = (struct sloc){
			.key = vk, .len = vl, .dtype = root->dtype, .bytes = nb,
			.found = 1, .data_off = root->data_off + ob};
	}
	qsort(sl, p->n_sl, sizeof *sl, sloc_cmp);
	for (size_t i = 1; i < p->n_sl; i++)
		if (!sloc_cmp(&sl[i - 1], &sl[i]))
			return BAD("tar: storage '%.*s' appears twice",
			           (int)(sl[i].len > 100 ? 100 : sl[i].len), sl[i].key);

	/* tensors */
	size_t len;
	if ((rc = st__arc_read(&p->z.arc, (size_t)mt, 1ULL << 30, &p->pkl2, &len,
	                       r)))
		return rc;
	vm_at(p, p->pkl2, p->pkl2 + len, "tar member 'tensors'");
	if ((rc = run_next(p, &o)))
		return rc;
	if (o->kind != K_INT || o->i < 0 || (uint64_t)o->i > len / 16)
		return BAD("tar: member 'tensors' does not begin with a count");
	n = (size_t)o->i;
	p->vm.pid_obj = calloc(n ? n : 1, sizeof *p->vm.pid_obj);
	if (!p->vm.pid_obj)
		return ST_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *tk, *sk;
		size_t tl, skl;
		const unsigned char *c;
		if ((rc = run_next(p, &o)))
			return rc;
		if (o->kind != K_TUPLE || o->n != 3 || key_of(o->items[0], &tk, &tl) ||
		    key_of(o->items[1], &sk, &skl))
			return BAD("tar: tensor %zu is not (key, storage, class)", i);
		if (take(p, 8, &c) < 0)
			return BAD("tar: member 'tensors' is truncated");
		uint32_t nd = le32(c);
		if (nd > ST_MAX_DIMS)
			return BAD("tar: tensor '%.*s' has %u dimensions, more than %d",
			           (int)(tl > 100 ? 100 : tl), tk, nd, ST_MAX_DIMS);
		if (take(p, 16 * (size_t)nd + 8, &c) < 0)
			return BAD("tar: member 'tensors' is truncated");
		struct sloc *s = sloc_find(p, sk, skl);
		if (!s)
			return BAD("tar: tensor '%.*s': storage '%.*s' is missing",
			           (int)(tl > 100 ? 100 : tl), tk,
			           (int)(skl > 100 ? 100 : skl), sk);
		struct obj *t = mk(&p->vm, K_TENSOR), *st = mk(&p->vm, K_STORAGE),
		           *sz = mk(&p->vm, K_TUPLE), *sd = mk(&p->vm, K_TUPLE);
		if (!t || !st || !sz || !sd)
			return ST_ENOMEM;
		for (uint32_t d = 0; d < nd; d++) {
			struct obj *a = mk(&p->vm, K_INT), *b = mk(&p->vm, K_INT);
			if (!a || !b || add_item(&p->vm, sz, a) || add_item(&p->vm, sd, b))
				return ST_ENOMEM;
			a->i = (int64_t)le64(c + 8 * d);
			b->i = (int64_t)le64(c + 8 * (nd + d));
			if (a->i < 0 || b->i < 0)
				return BAD("tar: tensor '%.*s' has a negative size or stride",
				           (int)(tl > 100 ? 100 : tl), tk);
		}
		int64_t off = (int64_t)le64(c + 16 * nd);
		if (off < 0)
			return BAD("tar: tensor '%.*s' has a negative storage offset",
			           (int)(tl > 100 ? 100 : tl), tk);
		unsigned esz = st_dtype_bits(s->dtype) / 8;
		st->s = sk;
		st->len = skl;
		st->dtype = s->dtype;
		st->i = (int64_t)(s->bytes / esz);
		st->view_n = s->bytes / esz;
		t->storage = st;
		t->dtype = s->dtype;
		t->offset = (uint64_t)off;
		t->size = sz;
		t->stride = sd;
		t->s = tk;
		t->len = tl;
		p->vm.pid_obj[p->vm.n_pid++] = t;
	}
	for (size_t i = 1; i < p->vm.n_pid; i++) {
		/* Insertion into sorted order by key (few tensors per file). */
		struct obj *x = p->vm.pid_obj[i];
		size_t j = i;
		while (j > 0) {
			const struct obj *y = p->vm.pid_obj[j - 1];
			int c = memcmp(y->s, x->s, y->len < x->len ? y->len : x->len);
			if (!c)
				c = y->len < x->len ? -1 : y->len > x->len;
			if (c == 0)
				return BAD("tar: tensor '%.*s' appears twice",
				           (int)(x->len > 100 ? 100 : x->len), x->s);
			if (c < 0)
				break;
			p->vm.pid_obj[j] = p->vm.pid_obj[j - 1];
			j--;
		}
		p->vm.pid_obj[j] = x;
	}
	/* pickle */
	if ((rc = st__arc_read(&p->z.arc, (size_t)mp, 1ULL << 30, &p->pkl, &len,
	                       r)))
		return rc;
	vm_at(p, p->pkl, p->pkl + len, "tar member 'pickle'");
	return run_next(p, &p->root);
}

/* Where storage s's bytes are. */
static int locate(struct parse *p, const struct obj *s, const char *nb,
                  struct sloc *out)
{
	struct st__report *r = p->r;
	int kl = (int)(s->len > 200 ? 200 : s->len);
	if (p->kind == ST__TORCH_ZIP) {
		char key[300];
		snprintf(key, sizeof key, "data/%.*s", kl, s->s);
		long si = zip_find(&p->z, key);
		if (si < 0)
			return BAD("tensor '%s': storage '%s' is missing from the "
			           "archive", nb, key);
		const struct st__arc_entry *e = &p->z.arc.e[si];
		*out = (struct sloc){.key = s->s, .len = s->len,
		                     .data_off = e->data_off, .entry = (size_t)si,
		                     .bytes = e->size, .dtype = s->dtype, .found = 1};
		return ST_OK;
	}
	struct sloc *sl = sloc_find(p, s->s, s->len);
	if (!sl || !sl->found)
		return BAD("tensor '%s': storage '%.*s' is missing from the file",
		           nb, kl, s->s);
	if (sl->dtype != s->dtype)
		return BAD("tensor '%s': storage '%.*s' holds %s, not %s", nb, kl,
		           s->s, st_dtype_name(sl->dtype), st_dtype_name(s->dtype));
	*out = *sl;
	return ST_OK;
}

/* A tensor with its view, sorted together into data order. */
struct rec {
	st_tensor t;
	struct tview v;
	size_t order;        /* position in the pickle */
	size_t storage;      /* identity of its storage */
};

static int by_begin(const void *x, const void *y)
{
	const struct rec *a = x, *b = y;
	if (a->t.begin != b->t.begin)
		return a->t.begin < b->t.begin ? -1 : 1;
	if (a->t.end != b->t.end)
		return a->t.end < b->t.end ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Same storage, first element, dtype, shape and strides: an alias. */
static int by_view(const void *x, const void *y)
{
	const struct rec *a = *(const struct rec *const *)x;
	const struct rec *b = *(const struct rec *const *)y;
#define CMP(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
	CMP(storage);
	CMP(v.first);
	CMP(t.dtype);
	CMP(t.ndim);
	for (unsigned d = 0; d < a->t.ndim; d++) {
		CMP(t.shape[d]);
		CMP(v.stride[d]);
	}
	CMP(order);
#undef CMP
	return 0;
}

static int same_view(const struct rec *a, const struct rec *b)
{
	if (a->storage != b->storage || a->v.first != b->v.first ||
	    a->t.dtype != b->t.dtype || a->t.ndim != b->t.ndim)
		return 0;
	for (unsigned d = 0; d < a->t.ndim; d++)
		if (a->t.shape[d] != b->t.shape[d] || a->v.stride[d] != b->v.stride[d])
			return 0;
	return 1;
}

static int name_order(const st_tensor *a, const st_tensor *b)
{
	size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, m);
	if (c)
		return c;
	return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* A sort record for the name index: it carries the name it sorts by. */
struct by_name_rec {
	const st_tensor *t;
	size_t idx;
};

static int by_name(const void *x, const void *y)
{
	return name_order(((const struct by_name_rec *)x)->t,
	                  ((const struct by_name_rec *)y)->t);
}

/*
 * Resolve tensor f against its storage into rec: shape, view, and where
 * its bytes lie. dims and strides receive its shape and strides.
 */
static int resolve(struct parse *p, const struct found *f, struct rec *o,
                   uint64_t *dims, uint64_t *strides, size_t order)
{
	struct st__report *r = p->r;
	const struct obj *t = f->t, *s = t->storage;
	char nb[256];
	snprintf(nb, sizeof nb, "%s", f->name);
	struct sloc loc;
	int rc = locate(p, s, nb, &loc);
	if (rc)
		return rc;
	o->order = order;
	o->storage = p->kind == ST__TORCH_ZIP ? loc.entry
	             : (size_t)(sloc_find(p, s->s, s->len) - p->sl);
	o->t.dtype = t->dtype;
	o->t.ndim = (unsigned)t->size->n;
	o->t.shape = dims;
	unsigned es = st_dtype_bits(t->dtype) / 8;
	uint64_t count = 1, expect = 1, reach = 0;
	int contiguous = 1;
	for (size_t d = o->t.ndim; d-- > 0;) {
		uint64_t dim = (uint64_t)t->size->items[d]->i;
		uint64_t st = (uint64_t)t->stride->items[d]->i, span;
		dims[d] = dim;
		strides[d] = st;
		if (dim != 1 && st != expect)
			contiguous = 0;
		if (st__mul_u64(expect, dim, &expect) ||
		    st__mul_u64(count, dim, &count))
			return BAD("tensor '%s': shape overflows 64 bits", nb);
		if (dim && (st__mul_u64(dim - 1, st, &span) ||
		            st__add_u64(reach, span, &reach)))
			return BAD("tensor '%s': strides overflow 64 bits", nb);
	}
	/* The storage (a legacy view: a part of it) the tensor may address. */
	uint64_t view_end, view_bytes, first, last, bytes;
	if (st__add_u64(s->offset, s->view_n, &view_end) ||
	    st__mul_u64(view_end, es, &view_bytes) || view_bytes > loc.bytes)
		return BAD("tensor '%s': its storage of %llu elements needs more "
		           "than the %llu bytes the file holds for it", nb,
		           (unsigned long long)view_end,
		           (unsigned long long)loc.bytes);
	/* An empty tensor reads nothing: torch takes any offset for it
	 * (checkInBoundsForStorage), so it is placed at the storage's start. */
	uint64_t toff = count ? (uint64_t)t->offset : 0;
	last = 0;
	if (count && (st__add_u64(toff, reach, &last) || last >= s->view_n))
		return BAD("tensor '%s': offset %llu and strides reach element %llu "
		           "of a storage of %llu elements", nb, (unsigned long long)toff,
		           (unsigned long long)last, (unsigned long long)s->view_n);
	first = s->offset + toff;
	if (st__mul_u64(count, es, &bytes))
		return BAD("tensor '%s': %llu elements overflow 64 bits", nb,
		           (unsigned long long)count);
	/*
	 * Streamed storages are held whole while read: a compressed one
	 * cannot inflate to more than 1032 times the file.
	 */
	if (loc.data_off == ST__ARC_NOT_IN_PLACE &&
	    loc.bytes / 1032 > p->src->size)
		return BAD("tensor '%s': storage '%.*s' claims %llu bytes, more than "
		           "a %llu-byte archive can inflate to", nb,
		           (int)(s->len > 100 ? 100 : s->len), s->s,
		           (unsigned long long)loc.bytes,
		           (unsigned long long)p->src->size);
	/*
	 * Stride 0 lets a few bytes of storage stand for any number: the
	 * contiguous form of a view may outgrow its storage, but not by more
	 * than 64 MiB past the storage or the file (an expanded bias or
	 * position ids), or a tiny file would make a converter write, and
	 * st_file_data allocate, without bound.
	 */
	uint64_t room = loc.bytes > p->src->size ? loc.bytes : p->src->size;
	if (bytes > room && bytes - room > (64u << 20))
		return BAD("tensor '%s': its contiguous form would be %llu bytes, "
		           "from a storage of %llu in a %llu-byte file (an "
		           "expanded view?)", nb, (unsigned long long)bytes,
		           (unsigned long long)loc.bytes,
		           (unsigned long long)p->src->size);
	int in_place = loc.data_off != ST__ARC_NOT_IN_PLACE;
	uint64_t base = in_place ? loc.data_off : 0;
	o->t.n_elements = count;
	o->t.n_bytes = bytes;
	o->t.begin = in_place ? base + first * es : 0;
	o->v = (struct tview){
		.data_off = loc.data_off, .entry = loc.entry, .st_bytes = loc.bytes,
		.first = first, .size = dims, .stride = strides, .ndim = o->t.ndim,
		.esize = es, .n_bytes = bytes, .swap = p->swap && es > 1,
		.alias_of = -1};
	o->v.plain = count == 0 || (contiguous && !o->v.swap &&
	                            loc.data_off != ST__ARC_NOT_IN_PLACE);
	/*
	 * A view's [begin, end): the bytes of the file it reads (none when
	 * its storage is compressed).
	 */
	o->t.end = o->v.plain ? o->t.begin + bytes
	           : in_place && count ? base + (s->offset + last + 1) * es
	                               : o->t.begin;
	return ST_OK;
}

/*
 * Storages read through libarchive (compressed ones, rare) are inflated
 * once at open, into nothing, in one pass, so that a bad CRC, a wrong
 * size or a truncation is found before any tensor is handed out.
 */
static int check_streamed(struct parse *p, const struct rec *recs, size_t n)
{
	unsigned char *want = calloc(p->z.arc.n ? p->z.arc.n : 1, 1);
	if (!want)
		return ST_ENOMEM;
	int any = 0;
	for (size_t i = 0; i < n; i++)
		if (recs[i].v.data_off == ST__ARC_NOT_IN_PLACE &&
		    recs[i].t.n_elements)
			any = want[recs[i].v.entry] = 1;
	int rc = any ? st__arc_verify(&p->z.arc, want, p->r) : ST_OK;
	free(want);
	return rc;
}

static void parse_free(struct parse *p)
{
	for (size_t i = 0; i < p->vm.n_all; i++) {
		free(p->vm.all[i]->items);
		free(p->vm.all[i]);
	}
	free(p->vm.all);
	free(p->vm.stack);
	free(p->vm.memo);
	free(p->vm.pid_obj);
	free(p->sl);
	free(p->pkl);
	free(p->pkl2);
	if (p->mapped)
		munmap(p->mapped, (size_t)p->src->size);
	free(p->z.by_suffix);
}

int st__torch_parse(struct st__header *h, struct st__torch **out,
                    const struct st__src *src, int kind, struct st__report *r)
{
	struct parse p = {.r = r, .src = src, .kind = kind};
	struct collect col = {0};
	struct rec *recs = NULL;
	uint64_t *strides = NULL;
	struct st__torch *tt = NULL;
	memset(h, 0, sizeof *h);
	*out = NULL;
	p.vm.r = r;

	int rc = kind == ST__TORCH_ZIP      ? parse_zip(&p)
	         : kind == ST__TORCH_LEGACY ? parse_legacy(&p)
	                                    : parse_tar(&p);
	if (rc) {
		if (p.vm.toobig)
			rc = BAD("%s: the pickle builds more than %zu MiB of objects; "
			         "refusing it", p.vm.what, MAX_CELLS * 8 >> 20);
		goto out;
	}
	if (p.root->kind != K_DICT) {
		rc = BAD("%s: the checkpoint is not a dictionary of tensors",
		         p.vm.what);
		goto out;
	}
	struct st__buf key = {0}, top = {0}, top_at = {0};
	int key_auto = 0;
	struct obj *d = p.root;
	rc = select_dict(r, &d, &key, &key_auto, &top, &top_at);
	if (rc == ST_OK && d != p.root)
		/* The checkpoint's other entries are left out too. */
		for (size_t i = 0; i + 1 < p.root->n; i += 2)
			if (p.root->items[i]->kind == K_STR &&
			    (key.len < p.root->items[i]->len ||
			     memcmp(key.data, p.root->items[i]->s,
			            p.root->items[i]->len) ||
			     (key.len > p.root->items[i]->len &&
			      key.data[p.root->items[i]->len] != '.')))
				skip_value(&col, p.root->items[i]->s, p.root->items[i]->len);
	if (rc == ST_OK)
		rc = walk(&col, d, "", 0, 0, r);
	if (rc == ST_OK && (key.failed || top.failed || col.skipped.failed ||
	                    top_at.failed || col.skipped_at.failed))
		rc = ST_ENOMEM;
	if (rc == ST_OK && !(tt = calloc(1, sizeof *tt)))
		rc = ST_ENOMEM;
	if (tt)
		pthread_mutex_init(&tt->lock, NULL);
	if (rc) {
		st__buf_free(&key);
		st__buf_free(&top);
		st__buf_free(&top_at);
		goto out;
	}
	tt->key = key;
	tt->top = top;
	tt->skipped = col.skipped;
	memset(&col.skipped, 0, sizeof col.skipped);
	int nomem = 0;
	size_t n_key_list, n_skipped_list;
	tt->key_list = name_list(&tt->top, &top_at, &n_key_list, &nomem);
	tt->skipped_list = name_list(&tt->skipped, &col.skipped_at, &n_skipped_list, &nomem);
	st__buf_free(&top_at);
	if (nomem) {
		rc = ST_ENOMEM;
		goto out;
	}
	tt->info = (st_torch_info){
		.key = key.len ? key.data : NULL, .key_auto = key_auto,
		.keys = top.data ? top.data : "",
		.n_skipped = col.n_skipped,
		.skipped = tt->skipped.data ? tt->skipped.data : "",
		.key_list = tt->key_list, .n_key_list = n_key_list,
		.skipped_list = tt->skipped_list, .n_skipped_list = n_skipped_list};

	size_t n = col.n, n_dims = 0, names = 0;
	for (size_t i = 0; i < n; i++) {
		/* Checked before the sum: one size tuple may serve many tensors. */
		if (col.f[i].t->size->n > ST_MAX_DIMS) {
			char nb[256];
			snprintf(nb, sizeof nb, "%s", col.f[i].name);
			rc = BAD("tensor '%s': %zu dimensions, more than %d", nb,
			         col.f[i].t->size->n, ST_MAX_DIMS);
			goto out;
		}
		n_dims += col.f[i].t->size->n;
		names += col.f[i].name_len + 1;
	}
	recs = calloc(n ? n : 1, sizeof *recs);
	h->tensors = calloc(n ? n : 1, sizeof *h->tensors);
	h->by_name = malloc((n ? n : 1) * sizeof *h->by_name);
	h->dims = malloc((n_dims ? n_dims : 1) * sizeof *h->dims);
	h->arena = malloc(names ? names : 1);
	strides = malloc((n_dims ? n_dims : 1) * sizeof *strides);
	tt->strides = strides;
	strides = NULL;
	if (!recs || !h->tensors || !h->by_name || !h->dims || !h->arena ||
	    !tt || !tt->strides) {
		rc = ST_ENOMEM;
		goto out;
	}
	size_t di = 0, ai = 0;
	for (size_t i = 0; i < n; i++) {
		struct rec *o = &recs[i];
		if ((rc = resolve(&p, &col.f[i], o, h->dims + di, tt->strides + di,
		                  i)))
			goto out;
		memcpy(h->arena + ai, col.f[i].name, col.f[i].name_len + 1);
		o->t.name = h->arena + ai;
		o->t.name_len = col.f[i].name_len;
		ai += col.f[i].name_len + 1;
		di += o->t.ndim;
	}
	/*
	 * And all views together: views of one storage each make their own
	 * copy, so a small file could still stand for a huge output.
	 */
	uint64_t gathered = 0, cap = p.src->size;
	if (st__mul_u64(cap, 16, &cap) || st__add_u64(cap, 256u << 20, &cap))
		cap = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (!recs[i].v.plain &&
		    st__add_u64(gathered, recs[i].t.n_bytes, &gathered))
			gathered = UINT64_MAX;
	if (gathered > cap) {
		rc = BAD("the views' contiguous forms add up to %llu bytes, more "
		         "than 16 times the %llu-byte file and 256 MiB",
		         (unsigned long long)gathered,
		         (unsigned long long)p.src->size);
		goto out;
	}
	qsort(recs, n, sizeof *recs, by_begin);
	/*
	 * A full check (r->fn set) reads every member through libarchive:
	 * the CRC of each storage read in place, too. An open checks only
	 * those it must inflate.
	 */
	if (r->fn && kind != ST__TORCH_LEGACY)
		rc = st__arc_verify(&p.z.arc, NULL, r);
	else
		rc = check_streamed(&p, recs, n);
	if (rc)
		goto out;

	/*
	 * Identical aliases: each points at the first of its group in the
	 * pickle's order (by_view sorts a group by it).
	 */
	struct rec **av = malloc((n ? n : 1) * sizeof *av);
	if (!av) {
		rc = ST_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		av[i] = &recs[i];
	qsort(av, n, sizeof *av, by_view);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		for (; j < n && same_view(av[i], av[j]); j++)
			if (av[j]->t.n_elements)
				av[j]->v.alias_of = (long)(av[i] - recs);
		i = j;
	}
	free(av);

	tt->v = malloc((n ? n : 1) * sizeof *tt->v);
	if (!tt->v) {
		rc = ST_ENOMEM;
		goto out;
	}
	tt->n_views = n;
	for (size_t i = 0; i < n; i++) {
		h->tensors[i] = recs[i].t;
		tt->v[i] = recs[i].v;
	}
	h->n_tensors = n;
	struct by_name_rec *nr = malloc((n ? n : 1) * sizeof *nr);
	if (!nr) {
		rc = ST_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		nr[i] = (struct by_name_rec){&h->tensors[i], i};
	qsort(nr, n, sizeof *nr, by_name);
	for (size_t i = 0; i < n; i++)
		h->by_name[i] = nr[i].idx;
	free(nr);
	for (size_t i = 1; i < n; i++)
		if (name_order(&h->tensors[h->by_name[i - 1]],
		               &h->tensors[h->by_name[i]]) == 0) {
			rc = BAD("tensor '%s' appears twice after flattening nested "
			         "dictionaries", h->tensors[h->by_name[i]].name);
			goto out;
		}
	tt->kind = kind;
	tt->src = *src;
	if (!(tt->crc_state = calloc(p.z.arc.n ? p.z.arc.n : 1, 1))) {
		rc = ST_ENOMEM;
		goto out;
	}
	tt->arc = p.z.arc;
	tt->arc.src = &tt->src;
	memset(&p.z.arc, 0, sizeof p.z.arc);
	*out = tt;
	tt = NULL;
out:
	if (rc == ST_ENOMEM || p.vm.nomem) {
		rc = ST_ENOMEM;
		st__error(r->err, ST_ENOMEM, "%s: out of memory", r->path);
	}
	for (size_t i = 0; i < col.n; i++)
		free(col.f[i].name);
	free(col.f);
	st__buf_free(&col.skipped);
	st__buf_free(&col.skipped_at);
	free(recs);
	free(strides);
	st__torch_free(tt);
	st__arc_free(&p.z.arc);
	parse_free(&p);
	if (rc)
		st__header_free(h);
	return rc;
}
