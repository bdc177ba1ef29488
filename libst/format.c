/*
 * format.c - parse and validate a safetensors header (doc/format.md, rules 1-17).
 *
 * This is a purpose-built, strict JSON parser rather than a general one:
 * the header must be exactly one object of tensor entries, integers must be
 * exact u64 tokens (cJSON would round them through a double), duplicate
 * keys are errors, and every error names the tensor and the numbers. It
 * does no I/O (file.c reads the bytes) and never trusts a number before it
 * has been checked against the size of the file.
 */
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting allowed inside ignored values (unknown tensor fields). */
#define MAX_DEPTH 64
/*
 * Unknown-field warnings kept in the table; the rest are counted. Each
 * costs some 200 bytes for a 6-byte field ("u":0,), so keeping them all
 * made a 100 MB header cost gigabytes.
 */
#define MAX_WARNINGS 1000

/* ---- the 8-byte prefix and broken downloads ------------------------------ */

/* Name what a non-safetensors file looks like (st_sniff), or NULL. */
static const char *diagnose(const unsigned char *head, size_t len)
{
	switch (st_sniff(head, len, UINT64_MAX)) {
	case ST_KIND_LFS_POINTER:
		return "this is a git-lfs pointer file, not the weights "
		       "(fetch the real file, e.g. with 'git lfs pull')";
	case ST_KIND_HTML:
		return "this is an HTML/XML page (an error page saved by a failed "
		       "download?), not a safetensors file";
	case ST_KIND_JSON:
		return "this is a JSON text file, not a safetensors file";
	case ST_KIND_TEXT:
		return "this is a text file, not a safetensors file";
	case ST_KIND_GGUF:
		return "this is a GGUF file (llama.cpp), not a safetensors file";
	case ST_KIND_ZIP:
		return "this is a zip archive (a PyTorch .bin checkpoint?), not a "
		       "safetensors file";
	case ST_KIND_PICKLE:
		return "this is a Python pickle (a legacy PyTorch checkpoint?), not "
		       "a safetensors file";
	case ST_KIND_TAR:
		return "this is a tar archive (a PyTorch checkpoint from before "
		       "0.4?), not a safetensors file";
	case ST_KIND_GZIP:
		return "this is a gzip-compressed file; decompress it first";
	default:
		return NULL;
	}
}

int st__prefix_check(const unsigned char *head, size_t head_len,
                     uint64_t file_size, uint64_t *n, struct st__report *r)
{
	const char *what = diagnose(head, head_len);
	/* Rule 1. */
	if (file_size < 8) {
		if (what)
			st__report(r, ST_PROBLEM_ERROR, "%s", what);
		else
			st__report(r, ST_PROBLEM_ERROR,
			           "file is %llu bytes, too short for the 8-byte header "
			           "length%s", (unsigned long long)file_size,
			           file_size == 0 ? " (empty file)" : "");
		return ST_EFORMAT;
	}
	uint64_t len = 0;
	for (int i = 7; i >= 0; i--)
		len = (len << 8) | head[i];
	/* Rule 2, before comparing N with the file size. */
	if (len > 100000000) {
		if (what)
			st__report(r, ST_PROBLEM_ERROR, "%s", what);
		else
			st__report(r, ST_PROBLEM_ERROR,
			           "header length %llu exceeds the limit of 100000000 "
			           "bytes (not a safetensors file?)",
			           (unsigned long long)len);
		return ST_EFORMAT;
	}
	/* Rule 3 (len <= 1e8, so 8 + len cannot overflow). */
	if (8 + len > file_size) {
		if (what)
			st__report(r, ST_PROBLEM_ERROR, "%s", what);
		else
			st__report(r, ST_PROBLEM_ERROR,
			           "file truncated: the header needs 8 + %llu bytes but "
			           "the file has %llu (%llu bytes missing)",
			           (unsigned long long)len, (unsigned long long)file_size,
			           (unsigned long long)(8 + len - file_size));
		return ST_EFORMAT;
	}
	*n = len;
	return ST_OK;
}

/* ---- the JSON scanner ----------------------------------------------------- */

struct parser {
	const char *s;
	size_t n, pos;
	struct st__report *r;
	struct st__header *h;
	size_t arena_used, arena_cap;
	size_t more_warnings; /* unknown fields past MAX_WARNINGS */
	int nomem;
};

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static void skip_ws(struct parser *p)
{
	while (p->pos < p->n && is_ws(p->s[p->pos]))
		p->pos++;
}

static const char *tokname(struct parser *p)
{
	if (p->pos >= p->n)
		return "end of header";
	return NULL;
}

/* A fatal syntax error at the current position. */
static int syntax(struct parser *p, const char *what)
{
	const char *t = tokname(p);
	if (t)
		st__report(p->r, ST_PROBLEM_ERROR,
		           "header JSON: %s at byte %zu of %zu (%s)", what, p->pos,
		           p->n, t);
	else {
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c >= 0x20 && c < 0x7f)
			st__report(p->r, ST_PROBLEM_ERROR,
			           "header JSON: %s at byte %zu of %zu (found '%c')",
			           what, p->pos, p->n, c);
		else
			st__report(p->r, ST_PROBLEM_ERROR,
			           "header JSON: %s at byte %zu of %zu (found byte 0x%02x)",
			           what, p->pos, p->n, c);
	}
	return ST_EFORMAT;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static int read_hex4(struct parser *p, unsigned *out)
{
	if (p->n - p->pos < 4)
		return -1;
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p->s[p->pos + (size_t)i]);
		if (h < 0)
			return -1;
		v = v << 4 | (unsigned)h;
	}
	p->pos += 4;
	*out = v;
	return 0;
}

/*
 * Parse a string at p->pos (which holds '"'). When store is set, the
 * decoded bytes go to the arena (NUL-terminated) and *out and *len describe
 * them; the decoded form is never longer than the encoded one, so the
 * arena, sized from the header length, cannot overflow.
 */
static int parse_string(struct parser *p, int store, const char **out,
                        size_t *len)
{
	if (p->pos >= p->n || p->s[p->pos] != '"')
		return syntax(p, "expected a string");
	p->pos++;
	char *dst = store ? p->h->arena + p->arena_used : NULL;
	size_t k = 0;
	for (;;) {
		if (p->pos >= p->n)
			return syntax(p, "unterminated string");
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c == '"') {
			p->pos++;
			break;
		}
		if (c < 0x20)
			return syntax(p, "control character in a string");
		if (c != '\\') {
			if (dst)
				dst[k] = (char)c;
			k++;
			p->pos++;
			continue;
		}
		p->pos++;
		if (p->pos >= p->n)
			return syntax(p, "unterminated string");
		char e = p->s[p->pos++];
		unsigned cp;
		switch (e) {
		case '"': cp = '"'; break;
		case '\\': cp = '\\'; break;
		case '/': cp = '/'; break;
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			if (read_hex4(p, &cp) < 0)
				return syntax(p, "bad \\u escape");
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return syntax(p, "lone low surrogate in \\u escape");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				unsigned lo;
				if (p->n - p->pos < 6 || p->s[p->pos] != '\\' ||
				    p->s[p->pos + 1] != 'u')
					return syntax(p, "lone high surrogate in \\u escape");
				p->pos += 2;
				if (read_hex4(p, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
					return syntax(p, "bad surrogate pair in \\u escape");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			break;
		default:
			p->pos--;
			return syntax(p, "bad escape in a string");
		}
		unsigned char u[4];
		size_t m;
		if (cp < 0x80) { u[0] = (unsigned char)cp; m = 1; }
		else if (cp < 0x800) {
			u[0] = (unsigned char)(0xc0 | cp >> 6);
			u[1] = (unsigned char)(0x80 | (cp & 0x3f)); m = 2;
		} else if (cp < 0x10000) {
			u[0] = (unsigned char)(0xe0 | cp >> 12);
			u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
			u[2] = (unsigned char)(0x80 | (cp & 0x3f)); m = 3;
		} else {
			u[0] = (unsigned char)(0xf0 | cp >> 18);
			u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
			u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
			u[3] = (unsigned char)(0x80 | (cp & 0x3f)); m = 4;
		}
		if (dst)
			memcpy(dst + k, u, m);
		k += m;
	}
	if (store) {
		dst[k] = 0;
		*out = dst;
		*len = k;
		p->arena_used += k + 1;
	}
	return ST_OK;
}

/* Skip a JSON number, validating its grammar. */
static int skip_number(struct parser *p)
{
	size_t i = p->pos;
	if (i < p->n && p->s[i] == '-')
		i++;
	if (i >= p->n)
		return syntax(p, "bad number");
	if (p->s[i] == '0')
		i++;
	else if (p->s[i] >= '1' && p->s[i] <= '9')
		while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	else
		return syntax(p, "bad number");
	if (i < p->n && p->s[i] == '.') {
		i++;
		if (i >= p->n || p->s[i] < '0' || p->s[i] > '9')
			return syntax(p, "bad number");
		while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	}
	if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
		i++;
		if (i < p->n && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		if (i >= p->n || p->s[i] < '0' || p->s[i] > '9')
			return syntax(p, "bad number");
		while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
			i++;
	}
	p->pos = i;
	return ST_OK;
}

static int skip_literal(struct parser *p, const char *lit)
{
	size_t m = strlen(lit);
	if (p->n - p->pos < m || memcmp(p->s + p->pos, lit, m) != 0)
		return syntax(p, "unexpected character");
	p->pos += m;
	return ST_OK;
}

/* Skip any JSON value (for ignored fields), validating it. */
static int skip_value(struct parser *p, int depth)
{
	int rc;
	if (depth > MAX_DEPTH)
		return syntax(p, "nesting too deep");
	skip_ws(p);
	if (p->pos >= p->n)
		return syntax(p, "expected a value");
	char c = p->s[p->pos];
	if (c == '"')
		return parse_string(p, 0, NULL, NULL);
	if (c == '-' || (c >= '0' && c <= '9'))
		return skip_number(p);
	if (c == 't') return skip_literal(p, "true");
	if (c == 'f') return skip_literal(p, "false");
	if (c == 'n') return skip_literal(p, "null");
	if (c != '{' && c != '[')
		return syntax(p, "expected a value");
	char close = c == '{' ? '}' : ']';
	p->pos++;
	skip_ws(p);
	if (p->pos < p->n && p->s[p->pos] == close) {
		p->pos++;
		return ST_OK;
	}
	for (;;) {
		if (c == '{') {
			skip_ws(p);
			if ((rc = parse_string(p, 0, NULL, NULL)))
				return rc;
			skip_ws(p);
			if (p->pos >= p->n || p->s[p->pos] != ':')
				return syntax(p, "expected ':'");
			p->pos++;
		}
		if ((rc = skip_value(p, depth + 1)))
			return rc;
		skip_ws(p);
		if (p->pos < p->n && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->n && p->s[p->pos] == close) {
			p->pos++;
			return ST_OK;
		}
		return syntax(p, c == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

/*
 * Read an exact non-negative integer (rule 15): digits only, no sign,
 * fraction or exponent, no leading zeros, fitting in u64. Returns 1 and
 * sets *v; 0 when the value is a valid JSON value of another kind (skipped;
 * the caller reports it); ST_EFORMAT on a syntax error.
 */
static int read_u64(struct parser *p, uint64_t *v, const char **why)
{
	skip_ws(p);
	size_t start = p->pos;
	if (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
		uint64_t x = 0;
		int overflow = 0;
		while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
			unsigned d = (unsigned)(p->s[p->pos] - '0');
			if (x > (UINT64_MAX - d) / 10)
				overflow = 1;
			x = x * 10 + d;
			p->pos++;
		}
		int leading0 = p->s[start] == '0' && p->pos - start > 1;
		if (p->pos < p->n && (p->s[p->pos] == '.' || p->s[p->pos] == 'e' ||
		                      p->s[p->pos] == 'E')) {
			p->pos = start;
			int rc = skip_number(p);
			if (rc)
				return rc;
			*why = "is not an exact integer (fraction or exponent)";
			return 0;
		}
		if (leading0)
			return syntax(p, "number with a leading zero");
		if (overflow) {
			*why = "does not fit in 64 bits";
			return 0;
		}
		*v = x;
		return 1;
	}
	int rc = skip_value(p, 1);
	if (rc)
		return rc;
	*why = p->s[start] == '-' ? "is negative" : "is not an integer";
	return 0;
}

/* ---- tensor entries --------------------------------------------------------- */

struct entry {
	const char *name;
	size_t name_len;
	int ok;            /* passed the per-tensor rules */
	int off_ok;        /* data_offsets parsed, END >= BEGIN */
	st_dtype dtype;
	size_t dim0;       /* first dim in the dims array */
	unsigned ndim;
	uint64_t begin, end, count, bytes;
	size_t order;      /* position in the header, for messages */
};

struct table {
	struct entry *e;
	size_t n, cap;
	uint64_t *dims;
	size_t n_dims, cap_dims;
};

static int grow(void **ptr, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	void *q = realloc(*ptr, c * size);
	if (!q)
		return -1;
	*ptr = q;
	*cap = c;
	return 0;
}

/* Quote a name for a message: bytes < 0x20 escaped, cut at 120 bytes. */
static const char *qname(char *buf, size_t size, const char *s, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < len && k + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i >= 120) {
			memcpy(buf + k, "...", 3);
			k += 3;
			break;
		}
		if (c < 0x20 || c == 0x7f)
			k += (size_t)snprintf(buf + k, size - k, "\\x%02x", c);
		else
			buf[k++] = (char)c;
	}
	buf[k] = 0;
	return buf;
}

#define NAMEBUF 512
#define TNAME(e) qname(nb, sizeof nb, (e)->name, (e)->name_len)

static void fmt_shape(char *buf, size_t size, const uint64_t *d, unsigned n)
{
	size_t k = (size_t)snprintf(buf, size, "[");
	for (unsigned i = 0; i < n && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%llu", i ? ", " : "",
		                      (unsigned long long)d[i]);
	if (k < size)
		snprintf(buf + k, size - k, "]");
}

static int add_warning(struct st__header *h, const char *msg)
{
	char **w = realloc(h->warnings, (h->n_warnings + 1) * sizeof *w);
	if (!w)
		return -1;
	h->warnings = w;
	if (!(w[h->n_warnings] = strdup(msg)))
		return -1;
	h->n_warnings++;
	return 0;
}

/*
 * Read a JSON array of exact integers (a shape or data_offsets; p->pos is
 * at its '['). The first max values go to out and *count says how many
 * there were, so a long array costs no memory. The first element that is
 * not an exact u64 is reported (unless quiet: a duplicate field) as
 * "<label> <index> <why>" and sets *bad. Returns ST_OK or a syntax error.
 */
static int read_u64_array(struct parser *p, const struct entry *e,
                          const char *field, const char *label, int quiet,
                          uint64_t *out, unsigned max, unsigned *count,
                          int *bad)
{
	char nb[NAMEBUF];
	unsigned k = 0;
	int rc;
	p->pos++;
	skip_ws(p);
	if (p->pos < p->n && p->s[p->pos] == ']') {
		p->pos++;
		*count = 0;
		return ST_OK;
	}
	for (;;) {
		uint64_t v = 0;
		const char *why = NULL;
		if ((rc = read_u64(p, &v, &why)) < 0)
			return rc;
		if (rc == 0 && !*bad) {
			if (!quiet)
				st__report(p->r, ST_PROBLEM_ERROR, "tensor '%s': %s %u %s",
				           TNAME(e), label, k, why);
			*bad = 1;
		}
		if (k < max)
			out[k] = v;
		if (k < UINT_MAX)
			k++;
		skip_ws(p);
		if (p->pos < p->n && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->n && p->s[p->pos] == ']') {
			p->pos++;
			*count = k;
			return ST_OK;
		}
		char msg[64];
		snprintf(msg, sizeof msg, "expected ',' or ']' in %s", field);
		return syntax(p, msg);
	}
}

/*
 * Parse one tensor entry's object. Syntax errors are fatal; broken rules
 * are reported and mark the entry not ok, and parsing goes on.
 */
static int parse_entry(struct parser *p, struct table *t, struct entry *e)
{
	char nb[NAMEBUF], msg[2 * NAMEBUF + 64];
	struct st__report *r = p->r;
	int have_dtype = 0, have_shape = 0, have_off = 0, rc;
	int bad = 0;

	skip_ws(p);
	if (p->pos >= p->n || p->s[p->pos] != '{') {
		if ((rc = skip_value(p, 1)))
			return rc;
		st__report(r, ST_PROBLEM_ERROR,
		           "tensor '%s': entry is not an object with dtype, shape "
		           "and data_offsets", TNAME(e));
		return ST_OK;
	}
	p->pos++;
	skip_ws(p);
	if (p->pos < p->n && p->s[p->pos] == '}') {
		p->pos++;
		goto fields_done;
	}
	for (;;) {
		const char *key;
		size_t klen;
		skip_ws(p);
		/* Field names go to the arena too (bounded by the header). */
		if ((rc = parse_string(p, 1, &key, &klen)))
			return rc;
		skip_ws(p);
		if (p->pos >= p->n || p->s[p->pos] != ':')
			return syntax(p, "expected ':'");
		p->pos++;
		skip_ws(p);
		int dup = 0;
		if (klen == 5 && !memcmp(key, "dtype", 5)) {
			dup = have_dtype++;
			const char *v;
			size_t vlen;
			if (p->pos < p->n && p->s[p->pos] == '"') {
				if ((rc = parse_string(p, 1, &v, &vlen)))
					return rc;
				if (!dup && st_dtype_from_name(v, vlen, &e->dtype) != ST_OK) {
					char vb[NAMEBUF];
					st__report(r, ST_PROBLEM_ERROR,
					           "tensor '%s': unknown dtype '%s'", TNAME(e),
					           qname(vb, sizeof vb, v, vlen));
					bad = 1;
				}
			} else {
				if ((rc = skip_value(p, 1)))
					return rc;
				st__report(r, ST_PROBLEM_ERROR,
				           "tensor '%s': dtype is not a string", TNAME(e));
				bad = 1;
			}
		} else if (klen == 5 && !memcmp(key, "shape", 5)) {
			dup = have_shape++;
			if (p->pos >= p->n || p->s[p->pos] != '[') {
				if ((rc = skip_value(p, 1)))
					return rc;
				st__report(r, ST_PROBLEM_ERROR,
				           "tensor '%s': shape is not an array", TNAME(e));
				bad = 1;
			} else {
				uint64_t dims[ST_MAX_DIMS];
				unsigned nd;
				int sbad = 0;
				if ((rc = read_u64_array(p, e, "shape", "shape dimension", dup,
				                         dims, ST_MAX_DIMS, &nd, &sbad)))
					return rc;
				if (!dup && !sbad && nd > ST_MAX_DIMS) {
					st__report(r, ST_PROBLEM_ERROR,
					           "tensor '%s': shape has more than %d dimensions",
					           TNAME(e), ST_MAX_DIMS);
					sbad = 1;
				}
				if (!dup && !sbad) {
					if (grow((void **)&t->dims, &t->cap_dims, t->n_dims + nd,
					         sizeof *t->dims)) {
						p->nomem = 1;
						return ST_ENOMEM;
					}
					if (nd)
						memcpy(t->dims + t->n_dims, dims, nd * sizeof *dims);
					e->dim0 = t->n_dims;
					e->ndim = nd;
					t->n_dims += nd;
				}
				if (sbad)
					bad = 1;
			}
		} else if (klen == 12 && !memcmp(key, "data_offsets", 12)) {
			dup = have_off++;
			if (p->pos >= p->n || p->s[p->pos] != '[') {
				if ((rc = skip_value(p, 1)))
					return rc;
				st__report(r, ST_PROBLEM_ERROR,
				           "tensor '%s': data_offsets is not an array",
				           TNAME(e));
				bad = 1;
			} else {
				uint64_t v[2];
				unsigned k;
				int offbad = 0;
				if ((rc = read_u64_array(p, e, "data_offsets",
				                         "data_offsets entry", dup, v, 2, &k,
				                         &offbad)))
					return rc;
				if (!offbad && k != 2) {
					if (!dup)
						st__report(r, ST_PROBLEM_ERROR,
						           "tensor '%s': data_offsets has %u entries, "
						           "expected 2 [BEGIN, END]", TNAME(e), k);
					offbad = 1;
				}
				if (offbad)
					bad = 1;
				else if (!dup) {
					e->begin = v[0];
					e->end = v[1];
					e->off_ok = v[1] >= v[0];
				}
			}
		} else {
			char kb[NAMEBUF];
			if ((rc = skip_value(p, 1)))
				return rc;
			snprintf(msg, sizeof msg, "tensor '%s': unknown field '%s' "
			         "(ignored)", TNAME(e), qname(kb, sizeof kb, key, klen));
			if (p->h->n_warnings >= MAX_WARNINGS)
				p->more_warnings++;
			else if (add_warning(p->h, msg)) {
				p->nomem = 1;
				return ST_ENOMEM;
			}
			st__report(r, ST_PROBLEM_WARNING, "%s", msg);
		}
		if (dup) {
			st__report(r, ST_PROBLEM_ERROR,
			           "tensor '%s': duplicate field '%.*s'", TNAME(e),
			           (int)klen, key);
			bad = 1;
		}
		skip_ws(p);
		if (p->pos < p->n && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->n && p->s[p->pos] == '}') {
			p->pos++;
			break;
		}
		return syntax(p, "expected ',' or '}' in a tensor entry");
	}
fields_done:
	if (!have_dtype || !have_shape || !have_off) {
		st__report(r, ST_PROBLEM_ERROR, "tensor '%s': missing field '%s'",
		           TNAME(e), !have_dtype ? "dtype" : !have_shape ? "shape"
		           : "data_offsets");
		bad = 1;
	}
	if (bad)
		return ST_OK;

	/* Rules 10-12: element count, bits, byte size; overflow-checked. */
	char sb[256];
	/* A file of scalars has no dims array at all: no NULL + 0. */
	const uint64_t *shape = e->ndim ? t->dims + e->dim0 : NULL;
	uint64_t count = 1, bits;
	for (unsigned d = 0; d < e->ndim; d++)
		if (st__mul_u64(count, t->dims[e->dim0 + d], &count)) {
			fmt_shape(sb, sizeof sb, shape, e->ndim);
			st__report(r, ST_PROBLEM_ERROR,
			           "tensor '%s': shape %s has more elements than 2^64",
			           TNAME(e), sb);
			return ST_OK;
		}
	if (st__mul_u64(count, st_dtype_bits(e->dtype), &bits)) {
		fmt_shape(sb, sizeof sb, shape, e->ndim);
		st__report(r, ST_PROBLEM_ERROR,
		           "tensor '%s': %s %s is more than 2^64 bits", TNAME(e),
		           st_dtype_name(e->dtype), sb);
		return ST_OK;
	}
	if (bits % 8) {
		fmt_shape(sb, sizeof sb, shape, e->ndim);
		st__report(r, ST_PROBLEM_ERROR,
		           "tensor '%s': %s %s is %llu bits, not a whole number of "
		           "bytes", TNAME(e), st_dtype_name(e->dtype), sb,
		           (unsigned long long)bits);
		return ST_OK;
	}
	if (e->end < e->begin) {
		st__report(r, ST_PROBLEM_ERROR,
		           "tensor '%s': data_offsets [%llu, %llu) end before they "
		           "begin", TNAME(e), (unsigned long long)e->begin,
		           (unsigned long long)e->end);
		return ST_OK;
	}
	if (e->end - e->begin != bits / 8) {
		fmt_shape(sb, sizeof sb, shape, e->ndim);
		st__report(r, ST_PROBLEM_ERROR,
		           "tensor '%s': data_offsets [%llu, %llu) hold %llu bytes; "
		           "%s %s needs %llu", TNAME(e), (unsigned long long)e->begin,
		           (unsigned long long)e->end,
		           (unsigned long long)(e->end - e->begin),
		           st_dtype_name(e->dtype), sb, (unsigned long long)(bits / 8));
		return ST_OK;
	}
	e->count = count;
	e->bytes = bits / 8;
	e->ok = 1;
	return ST_OK;
}

struct meta_key {
	const char *key;
	size_t len, order;
};

static int meta_key_cmp(const void *x, const void *y)
{
	const struct meta_key *a = x, *b = y;
	int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);
	if (c)
		return c;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/*
 * Report every repeated __metadata__ key and keep its first value, in
 * header order. Sorting keeps this O(n log n): comparing each key with all
 * those before it took minutes on a header of 200k keys. The sort is kept
 * as h->meta_by_key (st__file_meta_by_key), so that a copy of the
 * metadata can follow key order without sorting again.
 */
static int drop_duplicate_meta(struct parser *p, struct st__header *h)
{
	char kb[NAMEBUF];
	size_t n = h->n_meta;
	if (n < 2)
		return ST_OK;
	struct meta_key *k = malloc(n * sizeof *k);
	unsigned char *drop = calloc(n, 1);
	size_t *by_key = malloc(n * sizeof *by_key);
	if (!k || !drop || !by_key) {
		free(k);
		free(drop);
		free(by_key);
		p->nomem = 1;
		return ST_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (struct meta_key){h->meta[i].key, h->meta[i].key_len, i};
	qsort(k, n, sizeof *k, meta_key_cmp);
	for (size_t i = 1; i < n; i++)
		if (k[i].len == k[i - 1].len && !memcmp(k[i].key, k[i - 1].key, k[i].len))
			drop[k[i].order] = 1;
	/* by_key maps a kept entry's header index to its index after the
	 * drops, then holds the kept entries' new indexes in key order. */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (drop[i])
			st__report(p->r, ST_PROBLEM_ERROR,
			           "__metadata__: duplicate key '%s'",
			           qname(kb, sizeof kb, h->meta[i].key,
			                 h->meta[i].key_len));
		else {
			by_key[i] = m;
			h->meta[m++] = h->meta[i];
		}
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++)
		if (!drop[k[i].order])
			k[o++].order = by_key[k[i].order]; /* o <= i: in place */
	for (size_t i = 0; i < m; i++)
		by_key[i] = k[i].order;
	h->n_meta = m;
	h->meta_by_key = by_key;
	free(k);
	free(drop);
	return ST_OK;
}

/* Parse __metadata__: null, or an object of string values. */
static int parse_metadata(struct parser *p, struct st__header *h)
{
	int rc;
	skip_ws(p);
	if (p->pos < p->n && p->s[p->pos] == 'n')
		return skip_literal(p, "null");
	if (p->pos >= p->n || p->s[p->pos] != '{') {
		if ((rc = skip_value(p, 1)))
			return rc;
		st__report(p->r, ST_PROBLEM_ERROR,
		           "__metadata__ is not an object of strings");
		return ST_OK;
	}
	p->pos++;
	skip_ws(p);
	if (p->pos < p->n && p->s[p->pos] == '}') {
		p->pos++;
		return ST_OK;
	}
	size_t cap = 0;
	for (;;) {
		st_meta m;
		skip_ws(p);
		if ((rc = parse_string(p, 1, &m.key, &m.key_len)))
			return rc;
		skip_ws(p);
		if (p->pos >= p->n || p->s[p->pos] != ':')
			return syntax(p, "expected ':'");
		p->pos++;
		skip_ws(p);
		char kb[NAMEBUF];
		if (p->pos < p->n && p->s[p->pos] == '"') {
			if ((rc = parse_string(p, 1, &m.value, &m.value_len)))
				return rc;
			/* Duplicates are found by sorting once the object ends. */
			if (grow((void **)&h->meta, &cap, h->n_meta + 1, sizeof m)) {
				p->nomem = 1;
				return ST_ENOMEM;
			}
			h->meta[h->n_meta++] = m;
		} else {
			if ((rc = skip_value(p, 1)))
				return rc;
			st__report(p->r, ST_PROBLEM_ERROR,
			           "__metadata__: value of '%s' is not a string",
			           qname(kb, sizeof kb, m.key, m.key_len));
		}
		skip_ws(p);
		if (p->pos < p->n && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->n && p->s[p->pos] == '}') {
			p->pos++;
			return drop_duplicate_meta(p, h);
		}
		return syntax(p, "expected ',' or '}' in __metadata__");
	}
}

/* ---- whole-header checks ------------------------------------------------- */

#define name_cmp st__bytes_cmp

/*
 * qsort has no context argument in C11, so what is sorted are records that
 * carry what the comparators need: the entry and its index. Nothing is
 * shared between opens in different threads.
 */
struct sort_rec {
	const struct entry *e;
	size_t idx;
};

static int by_name_cmp(const void *x, const void *y)
{
	const struct entry *a = ((const struct sort_rec *)x)->e;
	const struct entry *b = ((const struct sort_rec *)y)->e;
	int c = name_cmp(a->name, a->name_len, b->name, b->name_len);
	if (c)
		return c;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int by_offset_cmp(const void *x, const void *y)
{
	const struct entry *a = ((const struct sort_rec *)x)->e;
	const struct entry *b = ((const struct sort_rec *)y)->e;
	if (a->begin != b->begin)
		return a->begin < b->begin ? -1 : 1;
	if (a->end != b->end)
		return a->end < b->end ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Sort the n indices idx into base by cmp. ST_OK or ST_ENOMEM. */
static int sort_entries(size_t *idx, size_t n, const struct entry *base,
                        int (*cmp)(const void *, const void *))
{
	if (n < 2)
		return ST_OK;
	struct sort_rec *rec = malloc(n * sizeof *rec);
	if (!rec)
		return ST_ENOMEM;
	for (size_t i = 0; i < n; i++)
		rec[i] = (struct sort_rec){base + idx[i], idx[i]};
	qsort(rec, n, sizeof *rec, cmp);
	for (size_t i = 0; i < n; i++)
		idx[i] = rec[i].idx;
	free(rec);
	return ST_OK;
}

/* Rules 9, 13, 14 over the parsed entries. */
static int check_layout(struct parser *p, struct table *t, uint64_t data_size,
                        size_t **by_offset, size_t *n_valid)
{
	char nb[NAMEBUF], nb2[NAMEBUF];
	struct st__report *r = p->r;
	size_t n = t->n;
	size_t *idx = malloc((n ? n : 1) * sizeof *idx);
	if (!idx)
		return ST_ENOMEM;

	/* Rule 14: duplicate names (all entries, valid or not). */
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	if (sort_entries(idx, n, t->e, by_name_cmp) != ST_OK) {
		free(idx);
		return ST_ENOMEM;
	}
	for (size_t i = 1; i < n; i++) {
		const struct entry *a = &t->e[idx[i - 1]], *b = &t->e[idx[i]];
		if (name_cmp(a->name, a->name_len, b->name, b->name_len) == 0) {
			st__report(r, ST_PROBLEM_ERROR,
			           "tensor '%s': duplicate name in the header",
			           TNAME(b));
			/* Both keep their offsets for the layout check, so that a
			 * duplicate does not also read as a gap. */
		}
		if (st__report_stop(r))
			break;
	}

	/* Rule 9: sorted by offsets, contiguous from 0, no overlap. */
	/*
	 * Entries that broke a per-tensor rule but have usable offsets take
	 * part, so that one bad dtype does not also read as a gap.
	 */
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (t->e[i].ok || t->e[i].off_ok)
			idx[m++] = i;
	if (sort_entries(idx, m, t->e, by_offset_cmp) != ST_OK) {
		free(idx);
		return ST_ENOMEM;
	}
	uint64_t at = 0;
	const struct entry *prev = NULL;
	for (size_t i = 0; i < m && !st__report_stop(r); i++) {
		const struct entry *e = &t->e[idx[i]];
		if (e->begin > at) {
			if (prev)
				st__report(r, ST_PROBLEM_ERROR,
				           "tensor '%s': data_offsets [%llu, %llu) leave a gap "
				           "of %llu bytes after tensor '%s' (ends at %llu)",
				           TNAME(e), (unsigned long long)e->begin,
				           (unsigned long long)e->end,
				           (unsigned long long)(e->begin - at),
				           qname(nb2, sizeof nb2, prev->name, prev->name_len),
				           (unsigned long long)at);
			else
				st__report(r, ST_PROBLEM_ERROR,
				           "tensor '%s': data_offsets [%llu, %llu): the first "
				           "tensor must begin at 0 (gap of %llu bytes)",
				           TNAME(e), (unsigned long long)e->begin,
				           (unsigned long long)e->end,
				           (unsigned long long)e->begin);
		} else if (e->begin < at) {
			st__report(r, ST_PROBLEM_ERROR,
			           "tensor '%s': data_offsets [%llu, %llu) overlap tensor "
			           "'%s' [%llu, %llu)", TNAME(e),
			           (unsigned long long)e->begin, (unsigned long long)e->end,
			           qname(nb2, sizeof nb2, prev->name, prev->name_len),
			           (unsigned long long)prev->begin,
			           (unsigned long long)prev->end);
		}
		if (!prev || e->end > at) {
			at = e->end;
			prev = e;
		}
	}

	/*
	 * Rule 13: the data buffer ends where the last tensor ends. When some
	 * entry's offsets could not be read, where the data ends is unknown.
	 */
	int unknown = 0;
	for (size_t i = 0; i < n; i++)
		if (!t->e[i].ok && !t->e[i].off_ok)
			unknown = 1;
	if (!st__report_stop(r) && !unknown) {
		if (at > data_size)
			st__report(r, ST_PROBLEM_ERROR,
			           "file truncated: tensors need %llu data bytes but the "
			           "file has %llu after the header (%llu bytes missing)",
			           (unsigned long long)at, (unsigned long long)data_size,
			           (unsigned long long)(at - data_size));
		else if (at < data_size)
			st__report(r, ST_PROBLEM_ERROR,
			           "%llu trailing bytes after the last tensor (tensors end "
			           "at data byte %llu, the file has %llu)",
			           (unsigned long long)(data_size - at),
			           (unsigned long long)at, (unsigned long long)data_size);
	}
	*by_offset = idx;
	*n_valid = m;
	return ST_OK;
}

/* ---- entry point ---------------------------------------------------------- */

int st__header_parse(struct st__header *h, const char *json, size_t n,
                     uint64_t data_size, struct st__report *r)
{
	struct parser p = {.s = json, .n = n, .r = r, .h = h};
	struct table t = {0};
	size_t *order = NULL, n_valid = 0;
	int rc = ST_OK, meta_seen = 0;

	memset(h, 0, sizeof *h);
	/* Rule 4: UTF-8. */
	size_t bad_at;
	if (!st__utf8_valid(json, n, &bad_at)) {
		st__report(r, ST_PROBLEM_ERROR,
		           "header is not valid UTF-8 (byte %zu of %zu)", bad_at, n);
		return ST_EFORMAT;
	}
	/* Decoded strings are never longer than their JSON form. */
	p.arena_cap = n + 1;
	if (!(h->arena = malloc(p.arena_cap)))
		return st__error(r->err, ST_ENOMEM, "%s: out of memory", r->path);

	/* Rules 5 and 6: one object, whitespace around it. */
	skip_ws(&p);
	if (p.pos >= p.n || p.s[p.pos] != '{') {
		rc = syntax(&p, p.pos < p.n && p.s[p.pos] == 0
		                ? "header must be a JSON object (NUL padding?)"
		                : "header must be a JSON object");
		goto out;
	}
	p.pos++;
	skip_ws(&p);
	if (p.pos < p.n && p.s[p.pos] == '}')
		p.pos++;
	else
		for (size_t order_i = 0;; order_i++) {
			const char *key;
			size_t klen;
			skip_ws(&p);
			if ((rc = parse_string(&p, 1, &key, &klen)))
				goto out;
			skip_ws(&p);
			if (p.pos >= p.n || p.s[p.pos] != ':') {
				rc = syntax(&p, "expected ':'");
				goto out;
			}
			p.pos++;
			if (klen == 12 && !memcmp(key, "__metadata__", 12)) {
				if (meta_seen++) {
					st__report(r, ST_PROBLEM_ERROR,
					           "__metadata__ appears more than once");
					if ((rc = skip_value(&p, 1)))
						goto out;
				} else if ((rc = parse_metadata(&p, h)))
					goto out;
			} else {
				if (grow((void **)&t.e, &t.cap, t.n + 1, sizeof *t.e)) {
					rc = ST_ENOMEM;
					goto out;
				}
				struct entry *e = &t.e[t.n++];
				memset(e, 0, sizeof *e);
				e->name = key;
				e->name_len = klen;
				e->order = order_i;
				if ((rc = parse_entry(&p, &t, e)))
					goto out;
			}
			if (st__report_stop(r)) {
				rc = ST_EFORMAT;
				goto out;
			}
			skip_ws(&p);
			if (p.pos < p.n && p.s[p.pos] == ',') {
				p.pos++;
				continue;
			}
			if (p.pos < p.n && p.s[p.pos] == '}') {
				p.pos++;
				break;
			}
			rc = syntax(&p, "expected ',' or '}'");
			goto out;
		}
	skip_ws(&p);
	if (p.pos != p.n) {
		rc = syntax(&p, p.s[p.pos] == 0
		                ? "bytes after the header object (NUL padding?)"
		                : "bytes after the header object");
		goto out;
	}

	if (p.more_warnings) {
		char msg[96];
		snprintf(msg, sizeof msg, "%zu more unknown fields (ignored, not "
		         "listed)", p.more_warnings);
		if (add_warning(h, msg)) {
			rc = ST_ENOMEM;
			goto out;
		}
	}
	if ((rc = check_layout(&p, &t, data_size, &order, &n_valid)))
		goto out;
	if (st__report_stop(r)) {
		rc = ST_EFORMAT;
		goto out;
	}

	/* Build the public table: valid tensors in data order. */
	{
		size_t k = 0;
		for (size_t i = 0; i < n_valid; i++)
			if (t.e[order[i]].ok)
				order[k++] = order[i];
		n_valid = k;
	}
	h->n_tensors = n_valid;
	h->tensors = calloc(n_valid ? n_valid : 1, sizeof *h->tensors);
	h->by_name = malloc((n_valid ? n_valid : 1) * sizeof *h->by_name);
	h->dims = malloc((t.n_dims ? t.n_dims : 1) * sizeof *h->dims);
	if (!h->tensors || !h->by_name || !h->dims) {
		rc = ST_ENOMEM;
		goto out;
	}
	if (t.n_dims)
		memcpy(h->dims, t.dims, t.n_dims * sizeof *h->dims);
	for (size_t i = 0; i < n_valid; i++) {
		const struct entry *e = &t.e[order[i]];
		st_tensor *o = &h->tensors[i];
		o->name = e->name;
		o->name_len = e->name_len;
		o->dtype = e->dtype;
		o->ndim = e->ndim;
		o->shape = h->dims + e->dim0;
		o->n_elements = e->count;
		o->begin = e->begin;
		o->end = e->end;
		o->n_bytes = e->bytes;
		h->by_name[i] = i;
	}
	/* The name index, for st_file_find. */
	{
		struct entry *tmp = malloc((n_valid ? n_valid : 1) * sizeof *tmp);
		if (!tmp) {
			rc = ST_ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n_valid; i++) {
			tmp[i] = t.e[order[i]];
			tmp[i].order = i;
		}
		rc = sort_entries(h->by_name, n_valid, tmp, by_name_cmp);
		free(tmp);
		if (rc != ST_OK)
			goto out;
	}
out:
	if (rc == ST_ENOMEM || p.nomem) {
		rc = ST_ENOMEM;
		st__error(r->err, ST_ENOMEM, "%s: out of memory", r->path);
	}
	free(t.e);
	free(t.dims);
	free(order);
	if (rc == ST_OK && r->fn == NULL && r->n_errors)
		rc = ST_EFORMAT;
	if (rc != ST_OK)
		st__header_free(h);
	return rc;
}

void st__header_free(struct st__header *h)
{
	free(h->tensors);
	free(h->by_name);
	free(h->meta);
	free(h->meta_by_key);
	for (size_t i = 0; i < h->n_warnings; i++)
		free(h->warnings[i]);
	free(h->warnings);
	free(h->arena);
	free(h->dims);
	memset(h, 0, sizeof *h);
}

long st__header_find(const struct st__header *h, const char *name, size_t len)
{
	size_t lo = 0, hi = h->n_tensors;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const st_tensor *t = &h->tensors[h->by_name[mid]];
		int c = name_cmp(t->name, t->name_len, name, len);
		if (c == 0)
			return (long)h->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The message helpers above, for the other modules (internal.h). */
const char *st__qname(char *buf, size_t size, const char *s, size_t len)
{
	return qname(buf, size, s, len);
}

void st__fmt_shape(char *buf, size_t size, const uint64_t *d, unsigned n)
{
	fmt_shape(buf, size, d, n);
}
