/*
 * diagnose_trace.c - the traps of a trace's stages (doc/trace.md, the
 * Llama family): a rotary embedding with other pairs or another frequency
 * base, GQA heads expanded in the wrong order, an RMSNorm epsilon.
 *
 * A stage's output alone cannot say why it differs: the rotary stage of a
 * runner with interleaved pairs is not a permutation of the rotate-half
 * one. So each hypothesis is tested against the stage's input, looked up
 * in the same file by the trace's names: attn.q_rope rotates attn.q_norm
 * (Qwen3) or attn.q, attn.out averages attn.v, input_norm normalizes the
 * stream leaving the layer before. Every neighbour's shape is checked
 * against the stage's before it bounds a loop.
 *
 * Cost: one pass over each tensor involved (the rotary fit reads position
 * 1 once more); no allocation.
 */
#include "internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define get st__diagnose_get
#define match st__diagnose_match

/* Rotations recomputed from the fitted frequencies must land within this
 * fraction of the pair's length (float32 traces, positions up to 10^4). */
#define ROT_TOL 1e-3

static int all_match(const st_diagnose_tensor *a, const st_diagnose_tensor *b,
                     double rtol, double atol)
{
	int exact = 1;
	for (uint64_t i = 0; i < a->n; i++)
		if (!match(get(a, i), get(b, i), rtol, atol, &exact))
			return 0;
	return 1;
}

/* ---- the rotary embedding ------------------------------------------------- */

/* The two dimensions of pair i (of d/2) of a head, in a layout. */
static void pair_dims(enum st_diagnose_rotary_layout l, uint64_t d, uint64_t i,
                      uint64_t *x, uint64_t *y)
{
	if (l == ST_DIAGNOSE_ROTARY_HALF) {
		*x = i;
		*y = i + d / 2;
	} else {
		*x = 2 * i;
		*y = 2 * i + 1;
	}
}

/*
 * Whether rot is pre with pairs of layout l rotated by t * f_i at
 * position t. f (d/2 entries) is fitted from position 1: the angle from
 * each pre pair to its rot pair, taken in the head where the pair is
 * longest. Then every position is recomputed.
 */
static int rotation_fits(const st_diagnose_tensor *pre, const st_diagnose_tensor *rot,
                         enum st_diagnose_rotary_layout l, double *f)
{
	uint64_t T = pre->shape[0], H = pre->shape[1], d = pre->shape[2];
	for (uint64_t i = 0; i < d / 2; i++) {
		double best = -1;
		f[i] = 0;
		for (uint64_t h = 0; h < H; h++) {
			uint64_t x, y, o = (H + h) * d; /* position 1 */
			pair_dims(l, d, i, &x, &y);
			double p1 = get(pre, o + x), p2 = get(pre, o + y);
			double r1 = get(rot, o + x), r2 = get(rot, o + y);
			double len = p1 * p1 + p2 * p2;
			if (isfinite(len) && len > best) {
				best = len;
				f[i] = atan2(p1 * r2 - p2 * r1, p1 * r1 + p2 * r2);
			}
		}
	}
	for (uint64_t t = 0; t < T; t++)
		for (uint64_t h = 0; h < H; h++)
			for (uint64_t i = 0; i < d / 2; i++) {
				uint64_t x, y, o = (t * H + h) * d;
				pair_dims(l, d, i, &x, &y);
				double p1 = get(pre, o + x), p2 = get(pre, o + y);
				double c = cos((double)t * f[i]), s = sin((double)t * f[i]);
				double e1 = p1 * c - p2 * s - get(rot, o + x);
				double e2 = p2 * c + p1 * s - get(rot, o + y);
				double err = sqrt(e1 * e1 + e2 * e2);
				if (!(err <= ROT_TOL * sqrt(p1 * p1 + p2 * p2) + 1e-6))
					return 0;
			}
	return 1;
}

/*
 * The base b of f_i = b^(-2i/d), from pair 1 and checked on every pair
 * whose angle is large enough to measure (and f_0 = 1); 0 when no single
 * base gives f (linear or llama3 rope_scaling).
 */
static double rotation_base(const double *f, uint64_t d)
{
	if (d < 4 || fabs(f[0] - 1) > ROT_TOL || !(f[1] > 0 && f[1] < 1))
		return 0;
	double ln_base = -log(f[1]) * (double)d / 2;
	for (uint64_t i = 2; i < d / 2; i++) {
		double want = exp(-2.0 * (double)i / (double)d * ln_base);
		if (want > 1e-3 && fabs(f[i] - want) > ROT_TOL * want)
			return 0;
	}
	return exp(ln_base);
}

/* One side's pairing and base; ST_DIAGNOSE_ROTARY_UNKNOWN when neither
 * pairing rotates pre into rot. */
static enum st_diagnose_rotary_layout rotation_of(const st_diagnose_tensor *pre,
                                                  const st_diagnose_tensor *rot,
                                                  double *f, double *base)
{
	static const enum st_diagnose_rotary_layout layouts[] = {
		ST_DIAGNOSE_ROTARY_HALF, ST_DIAGNOSE_ROTARY_INTERLEAVED};
	for (int k = 0; k < 2; k++)
		if (rotation_fits(pre, rot, layouts[k], f)) {
			*base = rotation_base(f, pre->shape[2]);
			return layouts[k];
		}
	return ST_DIAGNOSE_ROTARY_UNKNOWN;
}

static int same_shape(const st_diagnose_tensor *x, const st_diagnose_tensor *y)
{
	if (x->ndim != y->ndim || x->n != y->n)
		return 0;
	for (unsigned k = 0; k < x->ndim; k++)
		if (x->shape[k] != y->shape[k])
			return 0;
	return 1;
}

enum st_diagnose_kind st_diagnose_rotary(const st_diagnose_tensor *pre_a,
                                         const st_diagnose_tensor *a,
                                         const st_diagnose_tensor *pre_b,
                                         const st_diagnose_tensor *b, double rtol,
                                         double atol, st_diagnose_result *r)
{
	ST__REQUIRE(a->ndim == 3 && a->shape[2] % 2 == 0 && same_shape(pre_a, a) &&
	            same_shape(pre_b, a) && same_shape(b, a));
	memset(r, 0, sizeof *r);
	r->kind = ST_DIAGNOSE_NONE;
	uint64_t d = a->shape[2];
	/* Position 1 is where the frequencies are read; f has d/2 entries. */
	if (a->shape[0] < 2 || a->shape[1] == 0 || d < 2 || d > 2 * 4096 ||
	    !all_match(pre_a, pre_b, rtol, atol))
		return r->kind;
	double f[4096], base_a = 0, base_b = 0;
	enum st_diagnose_rotary_layout la = rotation_of(pre_a, a, f, &base_a);
	enum st_diagnose_rotary_layout lb = rotation_of(pre_b, b, f, &base_b);
	if (la == ST_DIAGNOSE_ROTARY_UNKNOWN || lb == ST_DIAGNOSE_ROTARY_UNKNOWN)
		return r->kind;
	int same_base = base_a > 0 && base_b > 0
	                        ? fabs(log(base_a) - log(base_b)) < ROT_TOL
	                        : base_a == base_b;
	if (la == lb && same_base)
		return r->kind; /* both alike: the difference is not the rotation */
	r->kind = ST_DIAGNOSE_ROTARY;
	r->head_dim = d;
	r->layout_a = la;
	r->layout_b = lb;
	r->base_a = base_a;
	r->base_b = base_b;
	return r->kind;
}

/* ---- GQA: which KV head each query head reads ----------------------------- */

/* Whether at position 0 every query head h of out is KV head g(h)'s value. */
static int heads_read(const st_diagnose_tensor *out, const st_diagnose_tensor *v,
                      uint64_t nh, uint64_t nkv, uint64_t d, int tiled,
                      double rtol, double atol)
{
	int exact = 1;
	for (uint64_t h = 0; h < nh; h++) {
		uint64_t g = tiled ? h % nkv : h / (nh / nkv);
		for (uint64_t k = 0; k < d; k++)
			if (!match(get(v, g * d + k), get(out, h * d + k), rtol, atol, &exact))
				return 0;
	}
	return 1;
}

/* 1 tiled, 0 repeated, -1 neither or both (KV heads alike at position 0). */
static int heads_order(const st_diagnose_tensor *out, const st_diagnose_tensor *v,
                       uint64_t nh, uint64_t nkv, uint64_t d, double rtol,
                       double atol)
{
	int rep = heads_read(out, v, nh, nkv, d, 0, rtol, atol);
	int tile = heads_read(out, v, nh, nkv, d, 1, rtol, atol);
	return rep == tile ? -1 : tile;
}

enum st_diagnose_kind st_diagnose_gqa(const st_diagnose_tensor *a,
                                      const st_diagnose_tensor *b,
                                      const st_diagnose_tensor *v, unsigned n_head,
                                      unsigned n_kv_head, double rtol, double atol,
                                      st_diagnose_result *r)
{
	ST__REQUIRE(a->ndim >= 2 && same_shape(a, b) && v->ndim == 3 &&
	            v->shape[0] == a->shape[0] && v->shape[1] == n_kv_head &&
	            a->n == a->shape[0] * n_head * v->shape[2]);
	memset(r, 0, sizeof *r);
	r->kind = ST_DIAGNOSE_NONE;
	uint64_t nh = n_head, nkv = n_kv_head, d = v->shape[2];
	/* One KV head, or one per query head: both orders are the same. */
	if (a->shape[0] == 0 || d == 0 || nkv < 2 || nkv >= nh || nh % nkv)
		return r->kind;
	int oa = heads_order(a, v, nh, nkv, d, rtol, atol);
	int ob = heads_order(b, v, nh, nkv, d, rtol, atol);
	if (oa < 0 || ob < 0 || oa == ob)
		return r->kind;
	r->kind = ST_DIAGNOSE_GQA;
	r->n_head = n_head;
	r->n_kv_head = n_kv_head;
	r->a_tiled = oa;
	return r->kind;
}

/* ---- describing them (and diagnose.c's Llama-family kinds) ----------------- */

static const char *layout_words(enum st_diagnose_rotary_layout l)
{
	return l == ST_DIAGNOSE_ROTARY_HALF ? "pairs (i, i+D/2) (rotate-half)"
	                                    : "pairs (2i, 2i+1) (interleaved, GGUF's)";
}

static size_t put_base(char *buf, size_t size, size_t n, double base)
{
	/* Fitted from float32 angles: three significant digits. */
	double unit = base > 0 ? pow(10, floor(log10(base)) - 2) : 1;
	double shown = round(base / unit) * unit;
	int w = base > 0 && shown < 1e15
	                ? snprintf(buf + n, n < size ? size - n : 0, "base about %.0f", shown)
	        : base > 0 ? snprintf(buf + n, n < size ? size - n : 0, "base about %.3g", base)
	                 : snprintf(buf + n, n < size ? size - n : 0,
	                            "frequencies of no single base (rope_scaling)");
	return n + (w > 0 ? (size_t)w : 0);
}

void st__diagnose_describe_llama(const st_diagnose_result *r, char *buf, size_t size)
{
	const char *how = r->exact ? "exactly" : "within tolerance";
	size_t n = 0;
#define PUT(...)                                                                   \
	do {                                                                       \
		int w_ = snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__);  \
		if (w_ > 0)                                                        \
			n += (size_t)w_;                                           \
	} while (0)
	if (r->kind == ST_DIAGNOSE_ROTARY_ROWS) {
		if (r->to_interleaved)
			PUT("B is A's rows permuted to GGUF's interleaved rotary layout "
			    "(heads of %llu rows) (%s): a q/k weight converted for "
			    "llama.cpp and not converted back",
			    (unsigned long long)r->head_dim, how);
		else
			PUT("B is A's rows permuted from GGUF's interleaved rotary layout "
			    "to Hugging Face's (heads of %llu rows) (%s): A is a q/k "
			    "weight as llama.cpp stores it, B as Hugging Face does",
			    (unsigned long long)r->head_dim, how);
		return;
	}
	if (r->kind == ST_DIAGNOSE_ROW_SCALED && r->norm) {
		double x = fmax(fabs(r->scale_min - 1), fabs(r->scale_max - 1));
		PUT("B is A with each row scaled by its own factor within %.2g of 1 (%s): "
		    "the RMSNorm epsilon differs", x, how);
		if (isfinite(r->eps_delta))
			PUT(" (eps(B) - eps(A) about %.2g)", r->eps_delta);
		return;
	}
	if (r->kind == ST_DIAGNOSE_ROW_SCALED) {
		PUT("B is A with each row scaled by its own factor, %.6g to %.6g (%s)",
		    r->scale_min, r->scale_max, how);
		return;
	}
	if (r->kind == ST_DIAGNOSE_GQA) {
		unsigned rep = r->n_head / r->n_kv_head;
		char rb[96], tb[64];
		snprintf(rb, sizeof rb, "repeats each KV head for %u consecutive query "
		         "heads (repeat_kv: h / %u)", rep, rep);
		snprintf(tb, sizeof tb, "tiles them (h %% %u)", r->n_kv_head);
		PUT("query heads read other KV heads (GQA, %u KV heads for %u query "
		    "heads): A %s, B %s; seen at position 0",
		    r->n_kv_head, r->n_head, r->a_tiled ? tb : rb, r->a_tiled ? rb : tb);
		return;
	}
	PUT("the rotary embedding's input is equal, its output differs after "
	    "position 0 (heads of %llu): ", (unsigned long long)r->head_dim);
	if (r->layout_a != r->layout_b) {
		PUT("A rotates %s, B %s: the rotary layout differs "
		    "(interleaved rotary on Hugging Face's q/k weights?)",
		    layout_words(r->layout_a), layout_words(r->layout_b));
		return;
	}
	PUT("both rotate %s, A with ", layout_words(r->layout_a));
	n = put_base(buf, size, n, r->base_a);
	PUT(", B with ");
	n = put_base(buf, size, n, r->base_b);
	PUT(": %s", r->base_a > 0 && r->base_b > 0 ? "rope_theta ignored?"
	                                            : "rope_scaling ignored?");
#undef PUT
}

/* ---- the trace's names ---------------------------------------------------- */

/* A tensor of c as an st_diagnose_tensor; ST_OK with t->data NULL when
 * its dtype is not numeric. */
static int view(st_checkpoint *c, size_t i, st_diagnose_tensor *t, st_error *err)
{
	const st_tensor *x = st_checkpoint_tensor(c, i, NULL);
	*t = (st_diagnose_tensor){x->dtype, x->ndim, x->shape, x->n_elements, NULL};
	if (!st_dtype_is_numeric(x->dtype))
		return ST_OK;
	return st_checkpoint_data(c, i, &t->data, err);
}

/* The tensor of c named name[0 .. keep) + suffix, viewed; ST_OK with
 * t->data NULL when there is none. */
static int sibling(st_checkpoint *c, const char *name, size_t keep, const char *suffix,
                   st_diagnose_tensor *t, st_error *err)
{
	char buf[512];
	size_t sl = strlen(suffix);
	t->data = NULL;
	if (keep + sl > sizeof buf)
		return ST_OK;
	memcpy(buf, name, keep);
	memcpy(buf + keep, suffix, sl);
	long k = st_checkpoint_find(c, buf, keep + sl);
	return k < 0 ? ST_OK : view(c, (size_t)k, t, err);
}

/* Whether name[0 .. len) ends with suffix, preceded by nothing or a dot. */
static int stage_is(const char *name, size_t len, const char *suffix, size_t *keep)
{
	size_t sl = strlen(suffix);
	if (len < sl || memcmp(name + len - sl, suffix, sl) ||
	    (len > sl && name[len - sl - 1] != '.'))
		return 0;
	*keep = len - sl;
	return 1;
}

/* Both sides' tensor named prefix + one of the suffixes (the first found in
 * both); ST_OK with a->data NULL when none is. */
static int siblings(st_checkpoint *ca, const st_tensor *ta, size_t ka,
                    st_checkpoint *cb, const st_tensor *tb, size_t kb,
                    const char *const *suffix, st_diagnose_tensor *a,
                    st_diagnose_tensor *b, st_error *err)
{
	for (; *suffix; suffix++) {
		int rc = sibling(ca, ta->name, ka, *suffix, a, err);
		if (rc == ST_OK)
			rc = sibling(cb, tb->name, kb, *suffix, b, err);
		if (rc != ST_OK)
			return rc;
		if (a->data && b->data)
			return ST_OK;
	}
	a->data = NULL;
	return ST_OK;
}

static int rotary_stage(st_checkpoint *ca, const st_tensor *ta, st_checkpoint *cb,
                        const st_tensor *tb, const st_diagnose_tensor *a,
                        const st_diagnose_tensor *b, double rtol, double atol,
                        st_diagnose_result *r, st_error *err)
{
	static const char *const q[] = {"q_norm", "q", NULL}, *const k[] = {"k_norm", "k", NULL};
	size_t ka, kb;
	const char *const *pre;
	if (stage_is(ta->name, ta->name_len, "attn.q_rope", &ka) &&
	    stage_is(tb->name, tb->name_len, "attn.q_rope", &kb))
		pre = q;
	else if (stage_is(ta->name, ta->name_len, "attn.k_rope", &ka) &&
	         stage_is(tb->name, tb->name_len, "attn.k_rope", &kb))
		pre = k;
	else
		return ST_OK;
	st_diagnose_tensor pa, pb;
	int rc = siblings(ca, ta, ka + 5, cb, tb, kb + 5, pre, &pa, &pb, err);
	if (rc != ST_OK || !pa.data || a->ndim != 3 || a->shape[2] % 2 ||
	    !same_shape(a, b) || !same_shape(&pa, a) || !same_shape(&pb, a))
		return rc;
	st_diagnose_rotary(&pa, a, &pb, b, rtol, atol, r);
	return ST_OK;
}

static int gqa_stage(st_checkpoint *ca, const st_tensor *ta, st_checkpoint *cb,
                     const st_tensor *tb, const st_diagnose_tensor *a,
                     const st_diagnose_tensor *b, double rtol, double atol,
                     st_diagnose_result *r, st_error *err)
{
	static const char *const qn[] = {"attn.q", NULL}, *const kn[] = {"attn.k", NULL},
	                         *const vn[] = {"attn.v", NULL};
	size_t ka, kb;
	if (!stage_is(ta->name, ta->name_len, "attn.out", &ka) ||
	    !stage_is(tb->name, tb->name_len, "attn.out", &kb))
		return ST_OK;
	st_diagnose_tensor qa, qb, kxa, kxb, va, vb;
	int rc = siblings(ca, ta, ka, cb, tb, kb, qn, &qa, &qb, err);
	if (rc == ST_OK && qa.data)
		rc = siblings(ca, ta, ka, cb, tb, kb, kn, &kxa, &kxb, err);
	if (rc == ST_OK && qa.data && kxa.data)
		rc = siblings(ca, ta, ka, cb, tb, kb, vn, &va, &vb, err);
	if (rc != ST_OK || !qa.data || !kxa.data || !va.data)
		return rc;
	/* q [T, H, D], k and v [T, KV, D] on both sides, out [T, H*D]. */
	if (qa.ndim != 3 || !same_shape(&qa, &qb) || kxa.ndim != 3 ||
	    !same_shape(&kxa, &kxb) || !same_shape(&va, &kxa) || !same_shape(&vb, &kxa) ||
	    !same_shape(a, b) || a->ndim < 2 || a->shape[0] != qa.shape[0] ||
	    kxa.shape[0] != qa.shape[0] || kxa.shape[2] != qa.shape[2] || a->n != qa.n ||
	    qa.shape[1] > UINT_MAX || kxa.shape[1] > UINT_MAX ||
	    !all_match(&va, &vb, rtol, atol))
		return ST_OK;
	st_diagnose_gqa(a, b, &va, (unsigned)qa.shape[1], (unsigned)kxa.shape[1], rtol,
	                atol, r);
	return ST_OK;
}

/*
 * eps(B) - eps(A) from a norm's input x and the per-row factors s of its
 * outputs: s^2 = (ms + eps_A) / (ms + eps_B) with ms = mean(x^2) of the
 * row, so eps_B - eps_A = (ms + eps_A) (1/s^2 - 1), about ms (1/s^2 - 1)
 * when eps_A is small against ms. The mean over rows; NaN when x does not
 * fit.
 */
static double eps_delta(const st_diagnose_tensor *x, const st_diagnose_tensor *a,
                        const st_diagnose_tensor *b)
{
	if (!same_shape(x, a))
		return NAN;
	uint64_t len = a->shape[a->ndim - 1], rows = a->n / len;
	double sum = 0;
	for (uint64_t row = 0; row < rows; row++) {
		double ms = 0, sab = 0, saa = 0;
		for (uint64_t i = row * len; i < (row + 1) * len; i++) {
			double xi = get(x, i), ai = get(a, i), bi = get(b, i);
			ms += xi * xi;
			sab += ai * bi;
			saa += ai * ai;
		}
		if (!(saa > 0) || !(sab > 0))
			return NAN;
		double s = sab / saa;
		sum += ms / (double)len * (1 / (s * s) - 1);
	}
	return isfinite(sum) ? sum / (double)rows : NAN;
}

/* Whether name[0 .. keep) ends with "layers.N.": *start where "layers."
 * begins, *layer N. */
static int layer_of(const char *name, size_t keep, size_t *start, unsigned long *layer)
{
	static const char word[] = "layers.";
	size_t p = keep, w = sizeof word - 1;
	if (p < 2 || name[p - 1] != '.')
		return 0;
	p--;
	size_t end = p;
	while (p > 0 && name[p - 1] >= '0' && name[p - 1] <= '9' && end - p < 9)
		p--;
	if (p == end || p < w || memcmp(name + p - w, word, w) ||
	    (p > w && name[p - w - 1] != '.'))
		return 0;
	*layer = 0;
	for (size_t i = p; i < end; i++)
		*layer = *layer * 10 + (unsigned long)(name[i] - '0');
	*start = p - w;
	return 1;
}

/* The highest N with "layers.N.resid" in c after name[0 .. keep), or -1. */
static long last_layer(st_checkpoint *c, const char *name, size_t keep)
{
	char buf[512];
	long last = -1;
	size_t n = st_checkpoint_n_tensors(c);
	for (unsigned long layer = 0; layer < n && keep < 256; layer++) {
		int w = snprintf(buf, sizeof buf, "%.*slayers.%lu.resid", (int)keep, name, layer);
		if (w < 0 || (size_t)w >= sizeof buf || st_checkpoint_find(c, buf, (size_t)w) < 0)
			break;
		last = (long)layer;
	}
	return last;
}

/*
 * A norm stage's input: attn.q_norm normalizes attn.q (per head), k_norm
 * attn.k, post_norm resid_mid, layers.N.input_norm layers.{N-1}.resid (or
 * embed for layer 0) and the final norm the last layer's resid. Sets *ka
 * and *kb to the names' prefixes and *in to the suffix; 0 when the stage
 * is no norm.
 */
static int norm_input(st_checkpoint *ca, const st_tensor *ta, const st_tensor *tb,
                      size_t *ka, size_t *kb, char *in, size_t size)
{
	static const char *const same_layer[][2] = {
		{"attn.q_norm", "attn.q"}, {"attn.k_norm", "attn.k"},
		{"post_norm", "resid_mid"}};
	in[0] = '\0';
	for (size_t k = 0; k < sizeof same_layer / sizeof same_layer[0]; k++)
		if (stage_is(ta->name, ta->name_len, same_layer[k][0], ka) &&
		    stage_is(tb->name, tb->name_len, same_layer[k][0], kb)) {
			snprintf(in, size, "%s", same_layer[k][1]);
			return 1;
		}
	size_t sa, sb;
	unsigned long la, lb;
	if (stage_is(ta->name, ta->name_len, "input_norm", ka) &&
	    stage_is(tb->name, tb->name_len, "input_norm", kb)) {
		if (layer_of(ta->name, *ka, &sa, &la) && layer_of(tb->name, *kb, &sb, &lb) &&
		    la == lb) {
			*ka = sa;
			*kb = sb;
			if (la == 0)
				snprintf(in, size, "embed");
			else
				snprintf(in, size, "layers.%lu.resid", la - 1);
		}
		return 1;
	}
	if (stage_is(ta->name, ta->name_len, "norm", ka) &&
	    stage_is(tb->name, tb->name_len, "norm", kb)) {
		long last = last_layer(ca, ta->name, *ka);
		if (last >= 0)
			snprintf(in, size, "layers.%ld.resid", last);
		return 1;
	}
	return 0;
}

static int norm_stage(st_checkpoint *ca, const st_tensor *ta, st_checkpoint *cb,
                      const st_tensor *tb, const st_diagnose_tensor *a,
                      const st_diagnose_tensor *b, st_diagnose_result *r, st_error *err)
{
	size_t ka, kb;
	char in[64];
	if (!norm_input(ca, ta, tb, &ka, &kb, in, sizeof in))
		return ST_OK;
	r->norm = 1;
	if (!in[0])
		return ST_OK;
	const char *const list[] = {in, NULL};
	st_diagnose_tensor xa, xb;
	int rc = siblings(ca, ta, ka, cb, tb, kb, list, &xa, &xb, err);
	if (rc == ST_OK && xa.data)
		r->eps_delta = eps_delta(&xa, a, b);
	return rc;
}

int st__diagnose_trace(st_checkpoint *ca, size_t ia, st_checkpoint *cb, size_t ib,
                       double rtol, double atol, st_diagnose_result *r, st_error *err)
{
	const st_tensor *ta = st_checkpoint_tensor(ca, ia, NULL);
	const st_tensor *tb = st_checkpoint_tensor(cb, ib, NULL);
	st_diagnose_tensor a, b;
	int rc = view(ca, ia, &a, err);
	if (rc == ST_OK)
		rc = view(cb, ib, &b, err);
	if (rc != ST_OK || !a.data || !b.data)
		return rc;
	if (r->kind == ST_DIAGNOSE_ROW_SCALED)
		return norm_stage(ca, ta, cb, tb, &a, &b, r, err);
	/* Heads of attn.out reordered (a prompt of one token, where each
	 * query head's output is its KV head's value) may be the GQA order:
	 * the more telling name when it is. */
	if (r->kind == ST_DIAGNOSE_PERMUTED) {
		st_diagnose_result g;
		memset(&g, 0, sizeof g); /* ST_DIAGNOSE_NONE unless GQA fits */
		rc = gqa_stage(ca, ta, cb, tb, &a, &b, rtol, atol, &g, err);
		if (rc == ST_OK && g.kind == ST_DIAGNOSE_GQA)
			*r = g;
		return rc;
	}
	if (r->kind != ST_DIAGNOSE_NONE)
		return ST_OK;
	rc = rotary_stage(ca, ta, cb, tb, &a, &b, rtol, atol, r, err);
	if (rc == ST_OK && r->kind == ST_DIAGNOSE_NONE)
		rc = gqa_stage(ca, ta, cb, tb, &a, &b, rtol, atol, r, err);
	return rc;
}
