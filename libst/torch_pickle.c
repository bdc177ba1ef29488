/*
 * torch_pickle.c - the restricted pickle interpreter of the PyTorch
 * reader, and the reading of a state dict from what it builds: which
 * dictionary, and its tensors flattened into "a.b.c" names. It does not
 * read files or containers (torch.c hands it the pickle's bytes) nor any
 * tensor's data (torch_views.c).
 *
 * Pickles. A restricted interpreter knows the opcodes a state dict uses,
 * builds only containers, numbers, strings, storages and tensors, and
 * refuses every global but the handful torch.save emits for tensors
 * (collections.OrderedDict, torch._utils._rebuild_tensor_v2, the typed
 * storage classes...). It never imports or calls anything, and what it
 * builds is bounded (MAX_CELLS).
 */
#include "torch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

struct obj *st__pickle_new(struct vm *vm, enum kind k)
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

int st__pickle_add(struct vm *vm, struct obj *c, struct obj *o)
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
			struct obj *o = st__pickle_new(vm, K_GLOBAL);
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
int st__pickle_ints(const struct obj *t, size_t first)
{
	if (!t || t->kind != K_TUPLE)
		return 0;
	for (size_t i = first; i < t->n; i++)
		if (t->items[i]->kind != K_INT || t->items[i]->i < 0)
			return 0;
	return 1;
}

static int is_ints(const struct obj *t) { return st__pickle_ints(t, 0); }

/* Apply a callable to an argument tuple (REDUCE / NEWOBJ). */
static int call(struct vm *vm, struct obj *fn, struct obj *args)
{
	if (fn->kind != K_GLOBAL || args->kind != K_TUPLE)
		return vm_error(vm, "call of something that is not an allowed global");
	struct obj *o;
	switch ((enum global_id)fn->i) {
	case G_ORDERED_DICT:
		return push(vm, st__pickle_new(vm, K_DICT)) ? ST_ENOMEM : ST_OK;
	case G_REBUILD_TENSOR_V2:
	case G_REBUILD_TENSOR:
		if (args->n < 4 || args->items[0]->kind != K_STORAGE ||
		    args->items[1]->kind != K_INT || args->items[1]->i < 0 ||
		    !is_ints(args->items[2]) || !is_ints(args->items[3]) ||
		    args->items[2]->n != args->items[3]->n)
			return vm_error(vm, "malformed _rebuild_tensor arguments");
		if (!(o = st__pickle_new(vm, K_TENSOR)))
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
	struct obj *o = st__pickle_new(vm, K_STR);
	if (!o)
		return ST_ENOMEM;
	o->s = (const char *)vm->p;
	o->len = (size_t)n;
	vm->p += n;
	return push(vm, o) ? ST_ENOMEM : ST_OK;
}

/* Move the items above the MARK at m into c and pop them with the MARK. */
static int move_above(struct vm *vm, struct obj *c, long m)
{
	for (size_t i = (size_t)m + 1; i < vm->sp; i++)
		if (st__pickle_add(vm, c, vm->stack[i]))
			return ST_ENOMEM;
	vm->sp = (size_t)m;
	return ST_OK;
}

/* Pop the items above the topmost MARK into container c (tuple/list). */
static int pop_mark_into(struct vm *vm, struct obj *c)
{
	long m = find_mark(vm);
	if (m < 0)
		return vm_error(vm, "no MARK on the stack");
	return move_above(vm, c, m);
}

/* A key (string, or integer as its decimal text) as bytes. */
int st__pickle_key(struct obj *k, const char **s, size_t *len)
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
		if (st__pickle_key(a, &ks, &kl))
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
	    st__pickle_key(a->items[2], &ks, &kl) || a->items[4]->kind != K_INT ||
	    a->items[4]->i < 0)
		return vm_error(vm, "persistent id is not a torch storage");
	struct obj *o = st__pickle_new(vm, K_STORAGE);
	if (!o)
		return ST_ENOMEM;
	o->dtype = a->items[1]->dtype;
	o->s = ks;
	o->len = kl;
	o->i = a->items[4]->i; /* numel */
	o->view_n = (uint64_t)o->i;
	if (a->n >= 6 && a->items[5]->kind != K_NONE) {
		const struct obj *v = a->items[5];
		if (v->kind != K_TUPLE || v->n != 3 || !st__pickle_ints(v, 1))
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

int st__pickle_run(struct vm *vm, struct obj **result)
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
			if (!(o = st__pickle_new(vm, op == '}' ? K_DICT : op == ']' ? K_LIST : K_TUPLE)) || push(vm, o))
				return ST_ENOMEM;
			break;
		case '(':
			if (push(vm, st__pickle_new(vm, K_MARK)))
				return ST_ENOMEM;
			break;
		case 'N':
			if (push(vm, st__pickle_new(vm, K_NONE)))
				return ST_ENOMEM;
			break;
		case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
			if (!(o = st__pickle_new(vm, K_BOOL)))
				return ST_ENOMEM;
			o->i = op == 0x88;
			if (push(vm, o))
				return ST_ENOMEM;
			break;
		case 'J': case 'K': case 'M': { /* BININT, BININT1, BININT2 */
			size_t w = op == 'J' ? 4 : op == 'K' ? 1 : 2;
			if (need(vm, w) < 0)
				return vm_error(vm, "truncated");
			if (!(o = st__pickle_new(vm, K_INT)))
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
				if (!(o = st__pickle_new(vm, K_BIGINT)))
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
			if (!(o = st__pickle_new(vm, K_INT)))
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
			if (push(vm, st__pickle_new(vm, K_FLOAT)))
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
			if (!(o = st__pickle_new(vm, op == 't' ? K_TUPLE : op == 'l' ? K_LIST : K_DICT)))
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
			if (!(o = st__pickle_new(vm, K_TUPLE)))
				return ST_ENOMEM;
			for (size_t i = vm->sp - k; i < vm->sp; i++) {
				if (vm->stack[i]->kind == K_MARK)
					return vm_error(vm, "MARK inside a tuple");
				if (st__pickle_add(vm, o, vm->stack[i]))
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
			if (a->kind != K_LIST || st__pickle_add(vm, a, b) || push(vm, a))
				return vm->nomem ? ST_ENOMEM : vm_error(vm, "APPEND to a non-list");
			break;
		case 'e': { /* APPENDS */
			long m = find_mark(vm);
			if (m < 1 || vm->stack[m - 1]->kind != K_LIST)
				return vm_error(vm, "APPENDS without a list");
			if ((rc = move_above(vm, vm->stack[m - 1], m)))
				return rc;
			break;
		}
		case 's': /* SETITEM */
			POP(c);
			POP(b);
			POP(a);
			if (a->kind != K_DICT || st__pickle_add(vm, a, b) || st__pickle_add(vm, a, c) ||
			    push(vm, a))
				return vm->nomem ? ST_ENOMEM : vm_error(vm, "SETITEM on a non-dict");
			break;
		case 'u': { /* SETITEMS */
			long m = find_mark(vm);
			if (m < 1 || vm->stack[m - 1]->kind != K_DICT || (vm->sp - (size_t)m - 1) % 2)
				return vm_error(vm, "SETITEMS without a dict");
			if ((rc = move_above(vm, vm->stack[m - 1], m)))
				return rc;
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
st_torch_name *st__torch_names(const struct st__buf *list, const struct st__buf *at,
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
void st__torch_skip(struct collect *c, const char *name, size_t len)
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
int st__torch_walk(struct collect *c, struct obj *d, const char *prefix,
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
			st__torch_skip(c, prefix, plen);
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
			int rc = st__torch_walk(c, v, name, len, depth + 1, r);
			free(name);
			if (rc)
				return rc;
			continue;
		}
		if (v->kind != K_TENSOR) {
			st__torch_skip(c, name, len); /* numbers, strings: not weights */
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
int st__torch_select(struct st__report *r, struct obj **d,
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
