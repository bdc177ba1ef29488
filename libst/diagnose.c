/*
 * diagnose.c - which simple transformation of A tensor B is (see
 * st/diagnose.h for the list and the order they are tried in).
 *
 * Every hypothesis is a map from B's element index to a value computed
 * from A (A's element at another index, times a constant, or A rounded to
 * another dtype and compared with B's bytes read as that dtype). Each is
 * tried first on SAMPLES elements spread evenly over the tensor; only a
 * hypothesis that survives is checked on every element, stopping at the
 * first that disagrees. Full passes are bounded: one for "B is A within
 * tolerance" (nothing to diagnose), one for negation, two for scaling
 * (estimate, verify), one for the transpose, at most MAX_VERIFY block
 * permutations and one per same-width dtype (at most three).
 *
 * It is not a comparison tool: it only answers "is B this function of A",
 * never how far apart they are (stdiff's statistics do that).
 */
#include "internal.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SAMPLES 64
/* Block counts that pass the samples and get a full check, at most. */
#define MAX_VERIFY 4

#define get st__diagnose_get
#define match st__diagnose_match

/* Element i of t, widened to double. */
double st__diagnose_get(const st_diagnose_tensor *t, uint64_t i)
{
	const unsigned char *p = t->data;
	switch (t->dtype) {
	case ST_DTYPE_F32: {
		float f;
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	case ST_DTYPE_F64: {
		double d;
		memcpy(&d, p + 8 * i, 8);
		return d;
	}
	case ST_DTYPE_F16: {
		st_f16 h;
		memcpy(&h.bits, p + 2 * i, 2);
		return st_f16_to_f32(h);
	}
	case ST_DTYPE_BF16: {
		st_bf16 h;
		memcpy(&h.bits, p + 2 * i, 2);
		return st_bf16_to_f32(h);
	}
	default: {
		double d;
		size_t es = st_dtype_bits(t->dtype) / 8;
		st_dtype_widen(t->dtype, p + es * i, &d, 1);
		return d;
	}
	}
}

/* x rounded to dtype d (floats as st_convert rounds; integers as they are). */
static double round_to(double x, st_dtype d)
{
	switch (d) {
	case ST_DTYPE_F32: return (double)st_f64_to_f32(x);
	case ST_DTYPE_F16: return st_f16_to_f32(st_f32_to_f16(st_f64_to_f32(x)));
	case ST_DTYPE_BF16:
		return st_bf16_to_f32(st_f32_to_bf16(st_f64_to_f32(x)));
	default: return x;
	}
}

/*
 * Does the value computed from A (x) match B's (y)? Clears *exact when it
 * matches only within tolerance.
 */
int st__diagnose_match(double x, double y, double rtol, double atol, int *exact)
{
	switch (st_compare_values(x, y, rtol, atol, NULL, NULL)) {
	case ST_COMPARE_EQUAL:
	case ST_COMPARE_NAN_EQUAL:
		return 1;
	case ST_COMPARE_CLOSE:
		*exact = 0;
		return 1;
	default:
		*exact = 0;
		return 0;
	}
}

/* ---- sequential hypotheses: B[i] vs f(A[i]) ------------------------------ */

enum seq { SEQ_SAME, SEQ_NEG, SEQ_SCALE };

static double seq_value(enum seq h, double a, double scale, st_dtype bt)
{
	switch (h) {
	case SEQ_NEG: return -a;
	case SEQ_SCALE: return round_to(scale * a, bt);
	default: return a;
	}
}

/* 1 when every element (samples first) fits; *exact as match() leaves it. */
static int seq_holds(enum seq h, const st_diagnose_tensor *a,
                     const st_diagnose_tensor *b, double scale, double rtol,
                     double atol, int *exact)
{
	uint64_t n = b->n;
	*exact = 1;
	for (uint64_t k = 0; k < SAMPLES && k < n; k++) {
		uint64_t i = n <= SAMPLES ? k : k * (n - 1) / (SAMPLES - 1);
		if (!match(seq_value(h, get(a, i), scale, b->dtype), get(b, i),
		           rtol, atol, exact))
			return 0;
	}
	for (uint64_t i = 0; i < n; i++)
		if (!match(seq_value(h, get(a, i), scale, b->dtype), get(b, i),
		           rtol, atol, exact))
			return 0;
	return 1;
}

/* The least-squares factor c of B ~ c * A; 0 when there is none. */
static double estimate_scale(const st_diagnose_tensor *a,
                             const st_diagnose_tensor *b)
{
	double sab = 0, saa = 0;
	for (uint64_t i = 0; i < b->n; i++) {
		double x = get(a, i), y = get(b, i);
		if (isfinite(x) && isfinite(y)) {
			sab += x * y;
			saa += x * x;
		}
	}
	if (!(saa > 0))
		return 0;
	double c = sab / saa;
	return isfinite(c) ? c : 0;
}

/*
 * Whether the sampled elements fit one factor (within 1e-3, or rtol when
 * looser): the full least-squares pass runs only then.
 */
static int scale_plausible(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                           double rtol)
{
	uint64_t n = b->n;
	double sab = 0, saa = 0, x[SAMPLES], y[SAMPLES];
	int m = 0;
	for (uint64_t k = 0; k < SAMPLES && k < n; k++) {
		uint64_t i = n <= SAMPLES ? k : k * (n - 1) / (SAMPLES - 1);
		x[m] = get(a, i);
		y[m] = get(b, i);
		if (!isfinite(x[m]) || !isfinite(y[m]))
			return 0;
		sab += x[m] * y[m];
		saa += x[m] * x[m];
		m++;
	}
	if (!(saa > 0))
		return 0;
	double c = sab / saa, tol = rtol > 1e-3 ? rtol : 1e-3, big = 0;
	for (int k = 0; k < m; k++)
		big = fmax(big, fabs(y[k]));
	for (int k = 0; k < m; k++)
		if (fabs(c * x[k] - y[k]) > tol * big)
			return 0;
	return 1;
}

/* ---- the transpose -------------------------------------------------------- */

static int transposed(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                      double rtol, double atol, int *exact)
{
	if (b->ndim != 2 || b->shape[0] != b->shape[1] || b->shape[0] < 2)
		return 0;
	uint64_t m = b->shape[0];
	*exact = 1;
	/* Samples off the diagonal, where the transpose moves something. */
	for (uint64_t k = 0; k < SAMPLES; k++) {
		uint64_t i = k * (m - 1) / (SAMPLES - 1);
		uint64_t j = (i + 1 + k * 7) % m;
		if (j == i)
			j = (i + 1) % m;
		if (!match(get(a, j * m + i), get(b, i * m + j), rtol, atol, exact))
			return 0;
	}
	for (uint64_t i = 0; i < m; i++)
		for (uint64_t j = 0; j < m; j++)
			if (!match(get(a, j * m + i), get(b, i * m + j), rtol, atol,
			           exact))
				return 0;
	return 1;
}

/* ---- rows permuted to or from GGUF's interleaved rotary order ------------- */

/*
 * llama.cpp's convert_hf_to_gguf.py permutes each head of D rows of a q/k
 * projection: reshape(H, 2, D/2, ...).swapaxes(1, 2), so GGUF row 2i + j
 * of a head is Hugging Face row j * D/2 + i. The row of A that B's row rb
 * holds, B in GGUF's order (to_gguf) or back in Hugging Face's.
 */
static uint64_t rotary_src(uint64_t rb, uint64_t d, int to_gguf)
{
	uint64_t head = rb - rb % d, w = rb % d, half = d / 2;
	if (to_gguf)
		return head + (w % 2) * half + w / 2;
	return head + 2 * (w % half) + w / half;
}

static int rotary_rows_hold(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                            uint64_t len, uint64_t d, int to_gguf, int full,
                            double rtol, double atol, int *exact)
{
	uint64_t n = b->n;
	*exact = 1;
	for (uint64_t k = 0; k < (full ? n : SAMPLES); k++) {
		uint64_t i = full ? k : n <= SAMPLES ? k % n : k * (n - 1) / (SAMPLES - 1);
		uint64_t row = i / len, col = i % len;
		if (!match(get(a, rotary_src(row, d, to_gguf) * len + col), get(b, i),
		           rtol, atol, exact))
			return 0;
	}
	return 1;
}

/* Rows: the first axis of a matrix (a weight [H*D, C]), each element of a
 * vector (a bias [H*D]). Heads of D rows, D even and at least 4 (D = 2
 * permutes nothing), tried smallest first. */
static int rotary_rows(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                       double rtol, double atol, st_diagnose_result *r)
{
	if (b->ndim < 1 || b->ndim > 2 || b->n == 0)
		return 0;
	uint64_t rows = b->shape[0], len = b->n / rows;
	int verified = 0;
	/* Heads are at most a few hundred rows; 4096 bounds the search. */
	for (uint64_t d = 4; d <= rows && d <= 4096; d += 2) {
		if (rows % d)
			continue;
		for (int to_gguf = 1; to_gguf >= 0; to_gguf--) {
			int exact;
			if (!rotary_rows_hold(a, b, len, d, to_gguf, 0, rtol, atol, &exact))
				continue;
			if (verified++ == MAX_VERIFY)
				return 0;
			if (rotary_rows_hold(a, b, len, d, to_gguf, 1, rtol, atol, &exact)) {
				r->exact = exact;
				r->head_dim = d;
				r->to_interleaved = to_gguf;
				return 1;
			}
		}
	}
	return 0;
}

/* ---- each row scaled by its own factor ------------------------------------ */

/*
 * Whether B's row (len elements from off) is A's times one factor (the
 * least-squares one); *c receives it (0 for a row of A that is all zero,
 * which B must match as zeros).
 */
static int row_scaled_holds(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                            uint64_t off, uint64_t len, double rtol, double atol,
                            double *c, int *exact)
{
	double sab = 0, saa = 0;
	for (uint64_t i = off; i < off + len; i++) {
		double x = get(a, i), y = get(b, i);
		if (!isfinite(x) || !isfinite(y))
			return 0;
		sab += x * y;
		saa += x * x;
	}
	*c = saa > 0 ? sab / saa : 0;
	if (!isfinite(*c))
		return 0;
	for (uint64_t i = off; i < off + len; i++)
		if (!match(round_to(*c * get(a, i), b->dtype), get(b, i), rtol, atol, exact))
			return 0;
	return 1;
}

/* A few rows spread over the tensor first, then all of them. */
static int row_scaled(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                      double rtol, double atol, st_diagnose_result *r)
{
	enum { SAMPLE_ROWS = 4 };
	if (b->ndim < 2 || b->n == 0)
		return 0;
	uint64_t len = b->shape[b->ndim - 1], rows = len ? b->n / len : 0;
	if (len < 2 || rows < 2)
		return 0;
	int exact = 1;
	double c, lo = INFINITY, hi = -INFINITY;
	for (uint64_t k = 0; k < SAMPLE_ROWS; k++)
		if (!row_scaled_holds(a, b, k * (rows - 1) / (SAMPLE_ROWS - 1) * len, len,
		                      rtol, atol, &c, &exact))
			return 0;
	exact = 1;
	for (uint64_t row = 0; row < rows; row++) {
		if (!row_scaled_holds(a, b, row * len, len, rtol, atol, &c, &exact))
			return 0;
		if (c != 0) {
			lo = fmin(lo, c);
			hi = fmax(hi, c);
		}
	}
	if (!(lo <= hi) || lo == hi)
		return 0; /* all-zero, or one factor: not this hypothesis */
	r->exact = exact;
	r->scale_min = lo;
	r->scale_max = hi;
	r->eps_delta = NAN;
	return 1;
}

/* ---- last-axis blocks permuted -------------------------------------------- */

/* Does B's block j look like A's block i on a few sampled elements? */
static int blocks_sample_match(const st_diagnose_tensor *a,
                               const st_diagnose_tensor *b, uint64_t rows,
                               uint64_t cols, uint64_t bw, int i, int j,
                               double rtol, double atol)
{
	enum { SR = 4, SC = 4 };
	int exact = 1;
	for (uint64_t sr = 0; sr < SR && sr < rows; sr++) {
		uint64_t r = rows <= SR ? sr : sr * (rows - 1) / (SR - 1);
		for (uint64_t sc = 0; sc < SC && sc < bw; sc++) {
			uint64_t c = bw <= SC ? sc : sc * (bw - 1) / (SC - 1);
			if (!match(get(a, r * cols + (uint64_t)i * bw + c),
			           get(b, r * cols + (uint64_t)j * bw + c), rtol, atol,
			           &exact))
				return 0;
		}
	}
	return 1;
}

static int permuted_holds(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                          uint64_t rows, uint64_t cols, uint64_t bw,
                          const int *perm, double rtol, double atol,
                          int *exact)
{
	*exact = 1;
	for (uint64_t r = 0; r < rows; r++)
		for (uint64_t c = 0; c < cols; c++) {
			uint64_t j = c / bw, off = c % bw;
			uint64_t src = r * cols + (uint64_t)perm[j] * bw + off;
			if (!match(get(a, src), get(b, r * cols + c), rtol, atol, exact))
				return 0;
		}
	return 1;
}

static int permuted(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                    double rtol, double atol, st_diagnose_result *r)
{
	if (b->ndim < 1 || b->n == 0)
		return 0;
	uint64_t cols = b->shape[b->ndim - 1], rows = b->n / cols;
	int verified = 0;
	for (uint64_t k = 2; k <= ST_DIAGNOSE_MAX_BLOCKS && k <= cols; k++) {
		if (cols % k)
			continue;
		uint64_t bw = cols / k;
		int perm[ST_DIAGNOSE_MAX_BLOCKS], used[ST_DIAGNOSE_MAX_BLOCKS] = {0};
		int ok = 1, identity = 1;
		for (int j = 0; j < (int)k && ok; j++) {
			int found = -1;
			if (!used[j] && blocks_sample_match(a, b, rows, cols, bw, j, j,
			                                    rtol, atol))
				found = j;
			for (int i = 0; i < (int)k && found < 0; i++)
				if (!used[i] && blocks_sample_match(a, b, rows, cols, bw, i,
				                                    j, rtol, atol))
					found = i;
			if (found < 0)
				ok = 0;
			else {
				perm[j] = found;
				used[found] = 1;
				identity &= found == j;
			}
		}
		if (!ok || identity)
			continue;
		if (verified++ == MAX_VERIFY)
			return 0;
		int exact;
		if (permuted_holds(a, b, rows, cols, bw, perm, rtol, atol, &exact)) {
			r->exact = exact;
			r->n_blocks = (int)k;
			r->block_width = bw;
			memcpy(r->perm, perm, k * sizeof perm[0]);
			return 1;
		}
	}
	return 0;
}

/* ---- B's bytes in another dtype of the same width ------------------------ */

/* Half the spacing of X's values relative to a value: its rounding error. */
static double dtype_eps(st_dtype d)
{
	switch (d) {
	case ST_DTYPE_BF16: return 1.0 / 256;
	case ST_DTYPE_F16: return 1.0 / 2048;
	case ST_DTYPE_F32: return 1.0 / 16777216;
	default: return 0;
	}
}

static int reinterpreted(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                         double rtol, double atol, st_diagnose_result *r)
{
	unsigned bits = st_dtype_bits(b->dtype);
	for (int x = 0; x < ST_DTYPE_COUNT; x++) {
		st_dtype X = (st_dtype)x;
		if (X == b->dtype || X == ST_DTYPE_BOOL || !st_dtype_is_numeric(X) ||
		    st_dtype_bits(X) != bits)
			continue;
		if (!st_dtype_is_wide_float(X) && !st_dtype_is_wide_float(b->dtype))
			continue;
		st_diagnose_tensor bx = *b;
		bx.dtype = X;
		double rt = rtol > dtype_eps(X) ? rtol : dtype_eps(X);
		int exact = 1, ok = 1;
		uint64_t n = b->n;
		for (uint64_t k = 0; k < SAMPLES && k < n && ok; k++) {
			uint64_t i = n <= SAMPLES ? k : k * (n - 1) / (SAMPLES - 1);
			ok = match(round_to(get(a, i), X), get(&bx, i), rt, atol, &exact);
		}
		for (uint64_t i = 0; i < n && ok; i++)
			ok = match(round_to(get(a, i), X), get(&bx, i), rt, atol, &exact);
		if (ok) {
			r->exact = exact;
			r->read_as = X;
			r->b_dtype = b->dtype;
			return 1;
		}
	}
	return 0;
}

/* ---- the entry points ----------------------------------------------------- */

enum st_diagnose_kind st_diagnose_pair(const st_diagnose_tensor *a,
                                       const st_diagnose_tensor *b, double rtol,
                                       double atol, st_diagnose_result *r)
{
	assert(a->n == b->n && a->ndim == b->ndim);
	memset(r, 0, sizeof *r);
	r->kind = ST_DIAGNOSE_NONE;
	if (!st_dtype_is_numeric(a->dtype) || !st_dtype_is_numeric(b->dtype) ||
	    b->n < 2)
		return r->kind;
	int exact;
	if (seq_holds(SEQ_SAME, a, b, 0, rtol, atol, &exact))
		return r->kind; /* nothing to diagnose */
	if (seq_holds(SEQ_NEG, a, b, 0, rtol, atol, &exact)) {
		r->kind = ST_DIAGNOSE_NEGATED;
		r->exact = exact;
		return r->kind;
	}
	double c = scale_plausible(a, b, rtol) ? estimate_scale(a, b) : 0;
	if (c != 0 && c != 1 && c != -1 &&
	    seq_holds(SEQ_SCALE, a, b, c, rtol, atol, &exact)) {
		r->kind = ST_DIAGNOSE_SCALED;
		r->scale = c;
		r->exact = exact;
		return r->kind;
	}
	if (row_scaled(a, b, rtol, atol, r)) {
		r->kind = ST_DIAGNOSE_ROW_SCALED;
		return r->kind;
	}
	if (transposed(a, b, rtol, atol, &exact)) {
		r->kind = ST_DIAGNOSE_TRANSPOSED;
		r->exact = exact;
		return r->kind;
	}
	if (rotary_rows(a, b, rtol, atol, r)) {
		r->kind = ST_DIAGNOSE_ROTARY_ROWS;
		return r->kind;
	}
	if (permuted(a, b, rtol, atol, r)) {
		r->kind = ST_DIAGNOSE_PERMUTED;
		return r->kind;
	}
	if (reinterpreted(a, b, rtol, atol, r)) {
		r->kind = ST_DIAGNOSE_REINTERPRETED;
		return r->kind;
	}
	return r->kind;
}

char *st_diagnose_describe(const st_diagnose_result *r, char *buf, size_t size)
{
	const char *how = r->exact ? "exactly" : "within tolerance";
	size_t n = 0;
#define PUT(...)                                                          \
	do {                                                              \
		int w_ = snprintf(buf + n, n < size ? size - n : 0,       \
		                  __VA_ARGS__);                           \
		if (w_ > 0)                                               \
			n += (size_t)w_;                                  \
	} while (0)
	if (size == 0)
		return buf;
	buf[0] = '\0';
	switch (r->kind) {
	case ST_DIAGNOSE_NONE:
		break;
	case ST_DIAGNOSE_NEGATED:
		PUT("B is A with the sign flipped (%s)", how);
		break;
	case ST_DIAGNOSE_SCALED:
		PUT("B is A scaled by %.6g (%s)", r->scale, how);
		break;
	case ST_DIAGNOSE_TRANSPOSED:
		PUT("B is A transposed (%s): a square matrix copied without its "
		    "transpose passes every shape check", how);
		break;
	case ST_DIAGNOSE_PERMUTED:
		PUT("B is A with its %d column blocks of %llu in the order ",
		    r->n_blocks, (unsigned long long)r->block_width);
		if (r->n_blocks <= 16) {
			for (int j = 0; j < r->n_blocks; j++)
				PUT("%s%d", j ? "," : "", r->perm[j] + 1);
		} else {
			int shown = 0;
			PUT("of A's, but");
			for (int j = 0; j < r->n_blocks && shown < 8; j++)
				if (r->perm[j] != j)
					PUT("%s %d from %d", shown++ ? "," : "", j + 1,
					    r->perm[j] + 1);
			int moved = 0;
			for (int j = 0; j < r->n_blocks; j++)
				moved += r->perm[j] != j;
			if (moved > shown)
				PUT(", ... (%d moved)", moved);
		}
		PUT(" (%s)", how);
		if (r->n_blocks == 3) {
			static const char *qkv = "QKV";
			PUT(": Q, K, V thirds packed as %c, %c, %c?", qkv[r->perm[0]],
			    qkv[r->perm[1]], qkv[r->perm[2]]);
		} else if (r->n_blocks % 3 == 0) {
			PUT(": heads of a packed Q, K, V reordered?");
		}
		break;
	case ST_DIAGNOSE_ROTARY_ROWS:
	case ST_DIAGNOSE_ROW_SCALED:
	case ST_DIAGNOSE_ROTARY:
	case ST_DIAGNOSE_GQA:
		st__diagnose_describe_llama(r, buf, size);
		break;
	case ST_DIAGNOSE_REINTERPRETED:
		PUT("B's bytes are A %s %s (%s), read as %s: %s mislabelled %s",
		    st_dtype_is_wide_float(r->read_as) ? "rounded to" : "as",
		    st_dtype_name(r->read_as), how, st_dtype_name(r->b_dtype),
		    st_dtype_name(r->read_as), st_dtype_name(r->b_dtype));
		break;
	}
#undef PUT
	return buf;
}

int st_diagnose_checkpoints(st_checkpoint *ca, size_t ia, st_checkpoint *cb,
                            size_t ib, double rtol, double atol,
                            st_diagnose_result *r, st_error *err)
{
	const st_tensor *ta = st_checkpoint_tensor(ca, ia, NULL);
	const st_tensor *tb = st_checkpoint_tensor(cb, ib, NULL);
	const void *da, *db;
	int rc = st_checkpoint_data(ca, ia, &da, err);
	if (rc == ST_OK)
		rc = st_checkpoint_data(cb, ib, &db, err);
	if (rc != ST_OK)
		return rc;
	st_diagnose_tensor a = {ta->dtype, ta->ndim, ta->shape, ta->n_elements, da};
	st_diagnose_tensor b = {tb->dtype, tb->ndim, tb->shape, tb->n_elements, db};
	memset(r, 0, sizeof *r);
	if (ta->n_elements != tb->n_elements || ta->ndim != tb->ndim)
		return ST_OK; /* ST_DIAGNOSE_NONE */
	st_diagnose_pair(&a, &b, rtol, atol, r);
	return st__diagnose_trace(ca, ia, cb, ib, rtol, atol, r, err);
}

void st_diagnose_dtype_add(st_diagnose_dtype_tally *t, st_dtype a, st_dtype b,
                           int rounded, int within)
{
	size_t i = 0;
	while (i < t->n && (t->pair[i].a != a || t->pair[i].b != b))
		i++;
	if (i == t->n) {
		if (t->n == ST_DIAGNOSE_MAX_DTYPE_PAIRS)
			return;
		memset(&t->pair[i], 0, sizeof t->pair[i]);
		t->pair[i].a = a;
		t->pair[i].b = b;
		t->n++;
	}
	struct st_diagnose_dtype_pair *p = &t->pair[i];
	p->tensors++;
	if (rounded)
		p->rounded++;
	else if (within)
		p->within++;
	else
		p->differ++;
}

char *st_diagnose_dtype_line(const st_diagnose_dtype_tally *t, size_t i, char *buf,
                             size_t size)
{
	const struct st_diagnose_dtype_pair *p = &t->pair[i];
	int n = snprintf(buf, size, "%llu tensor%s %s \xe2\x86\x92 %s",
	                 (unsigned long long)p->tensors, p->tensors == 1 ? "" : "s",
	                 st_dtype_name(p->a), st_dtype_name(p->b));
	size_t o = n > 0 ? (size_t)n : 0;
	/* B narrower (or as wide: F16 vs BF16) is checked as A rounded; a
	 * wider B the other way round. */
	int b_wide = st_dtype_bits(p->b) > st_dtype_bits(p->a);
	const char *what[3] = {b_wide ? "A exactly B rounded" : "exactly A rounded",
	                       "within tolerance", "outside tolerance"};
	uint64_t count[3] = {p->rounded, p->within, p->differ};
	for (int k = 0; k < 3; k++)
		if (count[k] == p->tensors) {
			snprintf(buf + (o < size ? o : size), o < size ? size - o : 0,
			         ", %s%s", p->tensors == 1 ? "" : "all ", what[k]);
			return buf;
		}
	const char *sep = ": ";
	for (int k = 0; k < 3; k++) {
		if (!count[k])
			continue;
		n = snprintf(buf + (o < size ? o : size), o < size ? size - o : 0,
		             "%s%llu %s", sep, (unsigned long long)count[k], what[k]);
		o += n > 0 ? (size_t)n : 0;
		sep = ", ";
	}
	return buf;
}
