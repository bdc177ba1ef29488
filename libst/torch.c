/*
 * torch.c - read a PyTorch checkpoint (torch.save's zip format, e.g.
 * pytorch_model.bin) into the same tensor table a safetensors header gives,
 * without executing anything.
 *
 * The container is listed and read by archive.c (libarchive): data.pkl
 * and the small records are read through it, CRC checked; each storage,
 * which torch writes uncompressed, is read in place at the offset
 * archive.c found and checked. data.pkl is run through a restricted
 * pickle interpreter: it knows the opcodes a state dict uses, builds only
 * containers, numbers, strings, storages and tensors, and refuses every
 * global but the handful torch.save emits for tensors
 * (collections.OrderedDict, torch._utils._rebuild_tensor_v2, the typed
 * storage classes...). It never imports or calls anything. What it does
 * not do: legacy (pre-1.6, non-zip) checkpoints, compressed storages,
 * big-endian files, non-contiguous views.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void zip_free(struct zip *z)
{
	st__arc_free(&z->arc);
	free(z->by_suffix);
	z->by_suffix = NULL;
}

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
	K_GLOBAL, K_STORAGE, K_TENSOR, K_MARK
};

enum global_id {
	G_ORDERED_DICT, G_REBUILD_TENSOR_V2, G_REBUILD_TENSOR, G_REBUILD_PARAM,
	G_REBUILD_PARAM_STATE, G_STORAGE
};

struct obj {
	enum kind kind;
	int64_t i;              /* INT, BOOL; GLOBAL: enum global_id */
	const char *s;          /* STR (into the pickle); STORAGE: key */
	size_t len;
	st_dtype dtype;         /* GLOBAL storage class, STORAGE, TENSOR */
	struct obj **items;     /* TUPLE, LIST; DICT: key, value pairs */
	size_t n, cap;
	struct obj *storage;    /* TENSOR */
	uint64_t offset;        /* TENSOR: storage offset in elements */
	struct obj *size, *stride; /* TENSOR: tuples of ints */
	int seen;               /* DICT: already flattened by walk */
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
};

static int vm_error(struct vm *vm, const char *what)
{
	st__report(vm->r, ST_PROBLEM_ERROR, "data.pkl: %s (at pickle byte %ld)",
	           what, (long)(vm->p - vm->start));
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

static int is_ints(const struct obj *t)
{
	if (!t || t->kind != K_TUPLE)
		return 0;
	for (size_t i = 0; i < t->n; i++)
		if (t->items[i]->kind != K_INT || t->items[i]->i < 0)
			return 0;
	return 1;
}

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
		break;
	}
	return vm_error(vm, "a storage class called directly");
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
			if (w > 8 || need(vm, w) < 0)
				return vm_error(vm, "LONG1 wider than 64 bits");
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
		case 'Q': { /* BINPERSID: ('storage', cls, key, location, numel) */
			POP(a);
			if (a->kind != K_TUPLE || a->n < 5 || a->items[0]->kind != K_STR ||
			    a->items[0]->len != 7 || memcmp(a->items[0]->s, "storage", 7) ||
			    a->items[1]->kind != K_GLOBAL || a->items[1]->i != G_STORAGE ||
			    a->items[2]->kind != K_STR || a->items[4]->kind != K_INT ||
			    a->items[4]->i < 0)
				return vm_error(vm, "persistent id is not a torch storage");
			if (!(o = mk(vm, K_STORAGE)))
				return ST_ENOMEM;
			o->dtype = a->items[1]->dtype;
			o->s = a->items[2]->s;
			o->len = a->items[2]->len;
			o->i = a->items[4]->i; /* numel */
			if (push(vm, o))
				return ST_ENOMEM;
			break;
		}
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
};

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
		return BAD("data.pkl: dictionaries nested more than 16 deep");
	if (d->seen)
		return BAD("data.pkl: a dictionary appears twice (or inside "
		           "itself); a state dict is a tree");
	d->seen = 1;
	for (size_t i = 0; i + 1 < d->n; i += 2) {
		const struct obj *k = d->items[i];
		struct obj *v = d->items[i + 1];
		if (k->kind != K_STR)
			continue; /* e.g. integer keys of optimizer state */
		size_t len = plen + (plen ? 1 : 0) + k->len;
		if (len > MAX_NAME_BYTES - c->name_bytes)
			return BAD("data.pkl: the flattened tensor names add up to "
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
			free(name); /* numbers, strings: not weights */
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

static int by_begin(const void *x, const void *y)
{
	const st_tensor *a = x, *b = y;
	if (a->begin != b->begin)
		return a->begin < b->begin ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
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

int st__torch_parse(struct st__header *h, const struct st__src *src,
                    struct st__report *r)
{
	struct zip z;
	struct vm vm = {0};
	struct collect col = {0};
	unsigned char *pkl = NULL;
	size_t pkl_len = 0;
	char nb[256];
	memset(h, 0, sizeof *h);

	int rc = zip_open(&z, src, r);
	if (rc)
		goto out;
	long bo = zip_find(&z, "byteorder");
	if (bo >= 0) {
		unsigned char *b = NULL;
		size_t blen = 0;
		if ((rc = st__arc_read(&z.arc, (size_t)bo, 16, &b, &blen, r)))
			goto out;
		int little = blen == 6 && !memcmp(b, "little", 6);
		free(b);
		if (!little) {
			rc = BAD("this PyTorch checkpoint is not little-endian; "
			         "big-endian files are not supported");
			goto out;
		}
	}
	long pe = zip_find(&z, "data.pkl");
	if (pe < 0) {
		rc = BAD("zip archive without data.pkl: not a PyTorch checkpoint");
		goto out;
	}
	/* A state dict's pickle is small next to its data; 1 GiB is ample. */
	if ((rc = st__arc_read(&z.arc, (size_t)pe, 1ULL << 30, &pkl, &pkl_len, r)))
		goto out;
	vm.start = vm.p = pkl;
	vm.end = pkl + pkl_len;
	vm.r = r;
	struct obj *root = NULL;
	if ((rc = run(&vm, &root))) {
		if (vm.toobig)
			rc = BAD("data.pkl: the pickle builds more than %zu MiB of "
			         "objects; refusing it", MAX_CELLS * 8 >> 20);
		goto out;
	}
	if (root->kind != K_DICT) {
		rc = BAD("data.pkl: the checkpoint is not a dictionary of tensors");
		goto out;
	}
	if ((rc = walk(&col, root, "", 0, 0, r)))
		goto out;

	/* Resolve every tensor to a byte range of the file. */
	h->tensors = calloc(col.n ? col.n : 1, sizeof *h->tensors);
	h->by_name = malloc((col.n ? col.n : 1) * sizeof *h->by_name);
	size_t n_dims = 0, names = 0;
	for (size_t i = 0; i < col.n; i++) {
		/* Checked before the sum: one size tuple may serve many tensors. */
		if (col.f[i].t->size->n > ST_MAX_DIMS) {
			snprintf(nb, sizeof nb, "%s", col.f[i].name);
			rc = BAD("tensor '%s': %zu dimensions, more than %d", nb,
			         col.f[i].t->size->n, ST_MAX_DIMS);
			goto out;
		}
		n_dims += col.f[i].t->size->n;
		names += col.f[i].name_len + 1;
	}
	h->dims = malloc((n_dims ? n_dims : 1) * sizeof *h->dims);
	h->arena = malloc(names ? names : 1);
	if (!h->tensors || !h->by_name || !h->dims || !h->arena) {
		rc = ST_ENOMEM;
		goto out;
	}
	size_t di = 0, ai = 0;
	for (size_t i = 0; i < col.n; i++) {
		const struct obj *t = col.f[i].t;
		const struct obj *s = t->storage;
		st_tensor *o = &h->tensors[h->n_tensors];
		const char *name = col.f[i].name;
		snprintf(nb, sizeof nb, "%s", name);
		memcpy(h->arena + ai, name, col.f[i].name_len + 1);
		o->name = h->arena + ai;
		o->name_len = col.f[i].name_len;
		ai += col.f[i].name_len + 1;
		o->dtype = t->dtype;
		o->ndim = (unsigned)t->size->n;
		if (o->ndim > ST_MAX_DIMS) {
			rc = BAD("tensor '%s': %u dimensions, more than %d", nb, o->ndim,
			         ST_MAX_DIMS);
			goto out;
		}
		o->shape = h->dims + di;
		uint64_t count = 1, expect = 1;
		int contiguous = 1;
		for (size_t d = o->ndim; d-- > 0;) {
			uint64_t dim = (uint64_t)t->size->items[d]->i;
			uint64_t st = (uint64_t)t->stride->items[d]->i;
			h->dims[di + d] = dim;
			if (dim != 1 && st != expect)
				contiguous = 0;
			if (st__mul_u64(expect, dim, &expect) ||
			    st__mul_u64(count, dim, &count)) {
				rc = BAD("tensor '%s': shape overflows 64 bits", nb);
				goto out;
			}
		}
		di += o->ndim;
		if (!contiguous && count > 1) {
			rc = BAD("tensor '%s': a non-contiguous view (its strides do "
			         "not follow its shape); save it with .contiguous()",
			         nb);
			goto out;
		}
		/* The storage's bytes: archive/data/<key>, stored. */
		char key[300];
		snprintf(key, sizeof key, "data/%.*s",
		         (int)(s->len > 200 ? 200 : s->len), s->s);
		long si = zip_find(&z, key);
		if (si < 0) {
			rc = BAD("tensor '%s': storage '%s' is missing from the archive",
			         nb, key);
			goto out;
		}
		const struct st__arc_entry *se = &z.arc.e[si];
		if (se->data_off == ST__ARC_NOT_IN_PLACE) {
			rc = BAD("tensor '%s': storage '%s' (%llu bytes) is not stored "
			         "uncompressed inside the file; only such storages (as "
			         "torch.save writes them) are supported", nb, key,
			         (unsigned long long)se->size);
			goto out;
		}
		unsigned esize = st_dtype_bits(o->dtype) / 8;
		uint64_t begin_b, bytes;
		if (st__mul_u64(t->offset, esize, &begin_b) ||
		    st__mul_u64(count, esize, &bytes) || begin_b > se->size ||
		    bytes > se->size - begin_b) {
			rc = BAD("tensor '%s': %llu elements at offset %llu do not fit "
			         "in its %llu-byte storage", nb,
			         (unsigned long long)count,
			         (unsigned long long)t->offset,
			         (unsigned long long)se->size);
			goto out;
		}
		o->n_elements = count;
		o->n_bytes = bytes;
		o->begin = se->data_off + begin_b;
		o->end = o->begin + bytes;
		h->n_tensors++;
	}
	qsort(h->tensors, h->n_tensors, sizeof *h->tensors, by_begin);
	struct by_name_rec *nr = malloc((h->n_tensors ? h->n_tensors : 1) * sizeof *nr);
	if (!nr) {
		rc = ST_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < h->n_tensors; i++)
		nr[i] = (struct by_name_rec){&h->tensors[i], i};
	qsort(nr, h->n_tensors, sizeof *nr, by_name);
	for (size_t i = 0; i < h->n_tensors; i++)
		h->by_name[i] = nr[i].idx;
	free(nr);
	for (size_t i = 1; i < h->n_tensors; i++)
		if (name_order(&h->tensors[h->by_name[i - 1]],
		               &h->tensors[h->by_name[i]]) == 0) {
			rc = BAD("tensor '%s' appears twice after flattening nested "
			         "dictionaries", h->tensors[h->by_name[i]].name);
			goto out;
		}
out:
	if (rc == ST_ENOMEM || vm.nomem) {
		rc = ST_ENOMEM;
		st__error(r->err, ST_ENOMEM, "%s: out of memory", r->path);
	}
	for (size_t i = 0; i < vm.n_all; i++) {
		free(vm.all[i]->items);
		free(vm.all[i]);
	}
	free(vm.all);
	free(vm.stack);
	free(vm.memo);
	for (size_t i = 0; i < col.n; i++)
		free(col.f[i].name);
	free(col.f);
	free(pkl);
	zip_free(&z);
	if (rc)
		st__header_free(h);
	return rc;
}
