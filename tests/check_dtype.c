/*
 * check_dtype.c - unit tests for the dtype table and float conversion
 * (libst/dtype.c).
 *
 * The references are PyTorch's .to() results, made by
 * testdata/dtype/gen_dtype.py: the inputs (millions of bit patterns) are not
 * stored but regenerated here with the same splitmix64 generator, and
 * compared through per-chunk digests, overflow/underflow counts computed
 * with numpy, and a few thousand explicit samples that name values. NaN
 * outputs are compared with PyTorch by NaN-ness only (FORMAT.md); their
 * exact bits are checked against libst's documented NaN rule instead. The
 * vector kernels are compared with the scalar path bit for bit.
 *
 * It does not test the tools that call st_convert.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "internal.h"

enum { ISA_SCALAR = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 };
static const char *const isa_names[] = {"scalar", "AVX2", "AVX-512"};

#define FLOATS 4
static const st_dtype floats[FLOATS] = {ST_DTYPE_F64, ST_DTYPE_F32, ST_DTYPE_F16, ST_DTYPE_BF16};

/* ---- the input generator (mirrors gen_dtype.py) --------------------------- */

#define F32_N (1u << 22)
#define F64_N (1u << 21)
#define H_N (1u << 16)
#define SEED_F32 0x5EED0032u
#define SEED_F64 0x5EED0064u
#define SEED_F64_CLASS 0x5EED0065u

static uint64_t sm64(uint64_t seed, uint64_t i)
{
	uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static const uint32_t f32_specials[] = {
	0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
	0x7F800001, 0xFF800001, 0x7FBFFFFF, 0xFFFFFFFF, 0x7FFFFFFF, 0x7FA00000,
	0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
	0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x477FE000, 0x477FEFFF,
	0x477FF000, 0x477FF001, 0x38800000, 0x387FE000, 0x387FF000, 0x33800000,
	0x33000000, 0x33000001, 0x32FFFFFF, 0x7F7F7FFF, 0x7F7F8000, 0x7F7F8001,
	0x3F808000, 0x3F818000, 0x3F800FFF, 0x3F801000, 0x3F803000, 0x00008000,
	0x00018000, 0x00007FFF, 0x80008000, 0x47800000, 0xC77FF000, 0x33C00000,
};

static const uint64_t f64_specials[] = {
	0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000,
	0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8000000000000,
	0x7FF0000000000001, 0xFFF0000000000001, 0x7FF7FFFFFFFFFFFF,
	0xFFFFFFFFFFFFFFFF, 0x7FF4000020000000, 0x7FF0000020000000,
	0x0000000000000001, 0x800FFFFFFFFFFFFF, 0x0010000000000000,
	0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 0x47EFFFFFE0000000,
	0x47EFFFFFEFFFFFFF, 0x47EFFFFFF0000000, 0x47EFFFFFF0000001,
	0x3810000000000000, 0x380FFFFFF0000000, 0x36A0000000000000,
	0x3690000000000000, 0x3690000000000001, 0x368FFFFFFFFFFFFF,
	0x3FF0000000000000, 0x3FF0020000000001, 0x3FF0020000000000,
	0x3FF0100000000001, 0x40EFFE0000000000, 0x40EFFDFFFFFFFFFF,
	0x40EFFDFFF0000000, 0x40EFFDFFEFFFFFFF, 0x3E70000000000000,
	0x3E60000000000000, 0x3E60000000000001, 0x47EFF00000000000,
	0x47EFEFFFF0000000, 0x3FF0000010000000, 0x3FF0000030000000,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * An assertion for inner loops: Check's ck_assert_* write a progress
 * record on every call, millions of system calls in the loops below.
 */
#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

/* Input i of the F32 stream: raw bits or one of 10 classes of values. */
static uint32_t gen_f32(uint64_t i)
{
	static const uint32_t ties[3] = {0xFFF, 0x1000, 0x1001};
	static const uint32_t bf_ties[5] = {0x7FFF, 0x8000, 0x8001, 0x0000, 0xFFFF};
	uint64_t r = sm64(SEED_F32, i);
	uint32_t hi = (uint32_t)(r >> 32), lo = (uint32_t)r;
	uint32_t sel = lo >> 4, sign = hi & 0x80000000u, mant = hi & 0x7FFFFF;
	uint32_t e, shift, low;

	switch (lo & 15) {
	case 6: /* from below the F16 subnormals to past F16 overflow */
		return sign | (101 + sel % 44) << 23 | mant;
	case 7: /* F16 normal ties and neighbours */
		return sign | (113 + sel % 31) << 23 | (hi & 0x7FE000) | ties[(sel >> 12) % 3];
	case 8: /* F16 subnormal ties */
		e = 102 + sel % 11;
		shift = 126 - e;
		low = (1u << (shift - 1)) + (sel >> 12) % 3 - 1;
		return sign | e << 23 | (((hi & ~((1u << shift) - 1)) | low) & 0x7FFFFF);
	case 9: /* BF16 ties and neighbours */
		return (hi & 0xFFFF0000u) | bf_ties[sel % 5];
	case 10: /* around the F16 overflow threshold */
		return sign | (0x477FF000u + sel % 8193 - 4096);
	case 11: /* around the BF16 overflow threshold */
		return sign | (0x7F7F8000u + sel % 65537 - 32768);
	case 12: /* NaN payloads */
		return sign | 0x7F800000u | (mant ? mant : 1);
	case 13:
		return f32_specials[sel % COUNT(f32_specials)];
	case 14: /* F32 subnormals */
		return sign | (sel % 3) << 23 | mant;
	case 15: /* around 2^-14 */
		return sign | (0x38800000u + sel % 16385 - 8192);
	default:
		return hi;
	}
}

static uint64_t gen_f64(uint64_t i)
{
	static const uint64_t ties[5] = {0x0FFFFFFF, 0x10000000, 0x10000001, 0, 0x1FFFFFFF};
	static const uint64_t mid16[8] = {0x20000000000, 0x20000000001, 0x20010000000, 0x2000FFFFFFF,
	                                  0x1FFFFFFFFFF, 0x1FFF0000000, 0x1FFF0000001, 0x1FFEFFFFFFF};
	static const uint64_t midbf[8] = {0x100000000000, 0x100000000001, 0x100010000000, 0x10000FFFFFFF,
	                                  0x0FFFFFFFFFFF, 0x0FFFF0000000, 0x0FFFF0000001, 0x0FFFEFFFFFFF};
	const uint64_t m52 = 0xFFFFFFFFFFFFFull;
	uint64_t r = sm64(SEED_F64, i), r2 = sm64(SEED_F64_CLASS, i);
	uint64_t t = r2 >> 4, sign = r & 0x8000000000000000ull, mant = r & m52;
	uint64_t e, shift, low;

	switch (r2 & 15) {
	case 4:
		return sign | (872 + t % 280) << 52 | mant;
	case 5:
		return sign | (897 + t % 254) << 52 | (mant & ~0x1FFFFFFFull) | ties[(t >> 16) % 5];
	case 6:
		e = 873 + t % 24;
		shift = 926 - e;
		low = (1ull << (shift - 1)) + (t >> 16) % 3 - 1;
		return sign | e << 52 | (((r & ~((1ull << shift) - 1)) | low) & m52);
	case 7:
		return sign | (998 + t % 41) << 52 | (mant & 0xFFC0000000000ull) | mid16[(t >> 16) % 8];
	case 8:
		return sign | (890 + t % 262) << 52 | (mant & 0xFE00000000000ull) | midbf[(t >> 16) % 8];
	case 9:
		return sign | (0x47EFFFFFF0000000ull + t % (1ull << 31) - (1ull << 30));
	case 10:
		return sign | (0x40EFFE0000000000ull + t % (1ull << 43) - (1ull << 42));
	case 11:
		return sign | (0x47EFF00000000000ull + t % (1ull << 45) - (1ull << 44));
	case 12:
		return sign | 0x7FF0000000000000ull | (mant ? mant : 1);
	case 13:
		return f64_specials[t % COUNT(f64_specials)];
	case 14:
		return sign | (t % 3) << 52 | mant;
	case 15:
		return sign | (897 + t % 254) << 52 | (mant & ~0x1FFFFFFFull);
	default:
		return r;
	}
}

/* The source buffers: the two streams and every 16-bit pattern. */
static uint32_t *src_f32;
static uint64_t *src_f64;
static uint16_t *src_h;

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	ck_assert_msg(p != NULL, "out of memory (%zu bytes)", n);
	return p;
}

static void streams_setup(void)
{
	if (src_f32)
		return;
	src_f32 = xmalloc(F32_N * sizeof *src_f32);
	src_f64 = xmalloc(F64_N * sizeof *src_f64);
	src_h = xmalloc(H_N * sizeof *src_h);
	for (uint32_t i = 0; i < F32_N; i++)
		src_f32[i] = gen_f32(i);
	for (uint32_t i = 0; i < F64_N; i++)
		src_f64[i] = gen_f64(i);
	for (uint32_t i = 0; i < H_N; i++)
		src_h[i] = (uint16_t)i;
}

static void streams_teardown(void)
{
	free(src_f32);
	free(src_f64);
	free(src_h);
	src_f32 = NULL;
	src_f64 = NULL;
	src_h = NULL;
}

/* The source buffer for a type and its length in elements. */
static const void *stream_of(st_dtype t, size_t *n)
{
	switch (t) {
	case ST_DTYPE_F64: *n = F64_N; return src_f64;
	case ST_DTYPE_F32: *n = F32_N; return src_f32;
	default: *n = H_N; return src_h;
	}
}

/* ---- bit helpers ------------------------------------------------------------ */

static size_t esize(st_dtype t)
{
	return st_dtype_bits(t) / 8;
}

/* Element i of a buffer of type t, as an integer (little-endian host). */
static uint64_t get_bits(st_dtype t, const void *p, size_t i)
{
	const unsigned char *b = (const unsigned char *)p + i * esize(t);
	uint64_t v = 0;

	memcpy(&v, b, esize(t));
	return v;
}

static void put_bits(st_dtype t, void *p, size_t i, uint64_t v)
{
	memcpy((unsigned char *)p + i * esize(t), &v, esize(t));
}

static int bits_nan(st_dtype t, uint64_t v)
{
	switch (t) {
	case ST_DTYPE_F64: return (v & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
	case ST_DTYPE_F32: return (v & 0x7FFFFFFF) > 0x7F800000;
	case ST_DTYPE_F16: return (v & 0x7FFF) > 0x7C00;
	default: return (v & 0x7FFF) > 0x7F80;
	}
}

static uint64_t canon_nan(st_dtype t)
{
	switch (t) {
	case ST_DTYPE_F64: return 0x7FF8000000000000ull;
	case ST_DTYPE_F32: return 0x7FC00000;
	case ST_DTYPE_F16: return 0x7E00;
	default: return 0x7FC0;
	}
}

/*
 * libst's NaN rule, written out per type rather than taken from dtype.c:
 * same sign, widening keeps every payload bit (a signalling NaN stays
 * signalling), narrowing keeps the leading payload bits and sets the quiet
 * bit only where those bits are all zero (which would read as an
 * infinity); composed through F32.
 */
static uint64_t nan_rule(st_dtype dst, st_dtype src, uint64_t in)
{
	uint32_t x, m;

	switch (src) {
	case ST_DTYPE_F64:
		m = (uint32_t)(in >> 29 & 0x7FFFFF);
		x = (uint32_t)(in >> 32 & 0x80000000u) | 0x7F800000u | (m ? m : 0x400000u);
		break;
	case ST_DTYPE_F32: x = (uint32_t)in; break;
	case ST_DTYPE_F16:
		x = (uint32_t)(in & 0x8000) << 16 | 0x7F800000u | (uint32_t)(in & 0x3FF) << 13;
		break;
	default: x = (uint32_t)in << 16; break;
	}
	switch (dst) {
	case ST_DTYPE_F64:
		return (uint64_t)(x & 0x80000000u) << 32 | 0x7FF0000000000000ull |
		       (uint64_t)(x & 0x7FFFFF) << 29;
	case ST_DTYPE_F32: return x;
	case ST_DTYPE_F16:
		m = x >> 13 & 0x3FF;
		return (x >> 16 & 0x8000) | 0x7C00 | (m ? m : 0x200);
	default:
		return (x >> 16 & 0x7F) ? x >> 16 : (x >> 16) | 0x40;
	}
}

/* Sum of splitmix64(out_i, first + i) with NaNs made canonical. */
static uint64_t digest(st_dtype t, const void *out, size_t n, uint64_t first)
{
	uint64_t d = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t v = get_bits(t, out, i);
		d += sm64(bits_nan(t, v) ? canon_nan(t) : v, first + i);
	}
	return d;
}

static st_dtype dtype_of(const char *name)
{
	st_dtype t = ST_DTYPE_COUNT;

	ck_assert_msg(st_dtype_from_name(name, strlen(name), &t) == ST_OK, "bad dtype '%s'", name);
	return t;
}

/* ---- fixtures ---------------------------------------------------------------- */

struct digest_line {
	char src[16], dst[8];
	unsigned chunk;
	uint64_t first, count, digest, overflow, underflow;
};

static FILE *open_fixture(const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/dtype/%s", ST_TESTDATA, name);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	return f;
}

static struct digest_line *load_digests(size_t *count)
{
	FILE *f = open_fixture("digests.txt");
	struct digest_line *v = NULL;
	size_t n = 0, cap = 0;
	char line[512];

	while (fgets(line, sizeof line, f)) {
		struct digest_line d;
		if (line[0] == '#')
			continue;
		ck_assert_msg(sscanf(line, "%15s %7s %u %" SCNu64 " %" SCNu64 " %" SCNx64 " %" SCNu64 " %" SCNu64,
		                     d.src, d.dst, &d.chunk, &d.first, &d.count, &d.digest,
		                     &d.overflow, &d.underflow) == 8,
		              "digests.txt: bad line '%s'", line);
		if (n == cap) {
			cap = cap ? 2 * cap : 512;
			v = realloc(v, cap * sizeof *v);
			ck_assert(v != NULL);
		}
		v[n++] = d;
	}
	fclose(f);
	ck_assert_msg(n >= 400, "digests.txt: only %zu lines", n);
	*count = n;
	return v;
}

struct sample {
	st_dtype src, dst;
	uint64_t in, out;
};

static struct sample *load_samples(size_t *count)
{
	FILE *f = open_fixture("samples.txt");
	struct sample *v = NULL;
	size_t n = 0, cap = 0;
	char line[256], s[8], d[8];

	while (fgets(line, sizeof line, f)) {
		struct sample x;
		if (line[0] == '#')
			continue;
		ck_assert_msg(sscanf(line, "%7s %7s %" SCNx64 " %" SCNx64, s, d, &x.in, &x.out) == 4,
		              "samples.txt: bad line '%s'", line);
		x.src = dtype_of(s);
		x.dst = dtype_of(d);
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			v = realloc(v, cap * sizeof *v);
			ck_assert(v != NULL);
		}
		v[n++] = x;
	}
	fclose(f);
	ck_assert_msg(n >= 4000, "samples.txt: only %zu lines", n);
	*count = n;
	return v;
}

typedef int convert_fn(st_dtype, void *, st_dtype, const void *, size_t, st_convert_stats *);

/*
 * Check every digest line of the fixtures against the conversion fn: the
 * digest of the outputs, the overflow and underflow counts, and the exact
 * NaN rule for every NaN input. Returns the number of lines checked.
 */
static size_t check_digests(convert_fn *fn, const char *what)
{
	size_t nd, checked = 0;
	struct digest_line *dl = load_digests(&nd);
	unsigned char *out = xmalloc((size_t)1 << 20);
	unsigned char *wide = xmalloc((size_t)1 << 20);

	for (size_t k = 0; k < nd; k++) {
		const struct digest_line *d = &dl[k];
		int roundtrip = strchr(d->src, '>') != NULL;
		char srcname[16];
		st_dtype src, dst = dtype_of(d->dst);
		st_convert_stats stats = {0, 0};
		size_t n;
		const unsigned char *in;

		snprintf(srcname, sizeof srcname, "%s", d->src);
		srcname[strcspn(srcname, ">")] = '\0';
		src = dtype_of(srcname);
		in = stream_of(src, &n);
		ck_assert_msg(d->first + d->count <= n && d->count <= (1u << 16),
		              "digests.txt: %s %s chunk %u out of range", d->src, d->dst, d->chunk);
		in += d->first * esize(src);
		if (roundtrip) {
			ck_assert_int_eq(fn(ST_DTYPE_F32, wide, src, in, d->count, NULL), ST_OK);
			ck_assert_int_eq(fn(dst, out, ST_DTYPE_F32, wide, d->count, &stats), ST_OK);
		} else {
			ck_assert_int_eq(fn(dst, out, src, in, d->count, &stats), ST_OK);
		}
		ck_assert_msg(digest(dst, out, d->count, d->first) == d->digest,
		              "%s: %s -> %s chunk %u (elements %" PRIu64 "..%" PRIu64
		              "): output differs from PyTorch (see the sample checks)",
		              what, d->src, d->dst, d->chunk, d->first, d->first + d->count - 1);
		if (!roundtrip) {
			ck_assert_msg(stats.overflow == d->overflow && stats.underflow == d->underflow,
			              "%s: %s -> %s chunk %u: overflow %" PRIu64 " underflow %" PRIu64
			              ", numpy counts %" PRIu64 " and %" PRIu64,
			              what, d->src, d->dst, d->chunk, stats.overflow, stats.underflow,
			              d->overflow, d->underflow);
			for (size_t i = 0; i < d->count; i++) {
				uint64_t x = get_bits(src, in, i), y;
				if (!bits_nan(src, x))
					continue;
				y = get_bits(dst, out, i);
				CHECK(y == nan_rule(dst, src, x),
				              "%s: %s -> %s: NaN %#" PRIx64 " gave %#" PRIx64 ", expected %#" PRIx64,
				              what, d->src, d->dst, x, y, nan_rule(dst, src, x));
			}
		}
		checked++;
	}
	free(out);
	free(wide);
	free(dl);
	return checked;
}

/* Compare one sample with what a conversion function gives. */
static void check_sample(const struct sample *s, uint64_t got, const char *what)
{
	if (bits_nan(s->dst, s->out))
		CHECK(bits_nan(s->dst, got) && got == nan_rule(s->dst, s->src, s->in),
		              "%s: %s %#" PRIx64 " -> %s: got %#" PRIx64 ", PyTorch NaN %#" PRIx64
		              ", libst's NaN rule %#" PRIx64,
		              what, st_dtype_name(s->src), s->in, st_dtype_name(s->dst), got, s->out,
		              nan_rule(s->dst, s->src, s->in));
	else
		CHECK(got == s->out, "%s: %s %#" PRIx64 " -> %s: got %#" PRIx64 ", PyTorch %#" PRIx64,
		              what, st_dtype_name(s->src), s->in, st_dtype_name(s->dst), got, s->out);
}

static uint32_t fbits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static float bitsf(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static double bitsd(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

/* ---- names ------------------------------------------------------------------- */

static const struct {
	st_dtype t;
	const char *name;
	unsigned bits;
	int is_float; /* 2: a wide float too */
} table[] = {
	/* FORMAT.md, "Dtypes", in the canonical writer order. */
	{ST_DTYPE_U64, "U64", 64, 0}, {ST_DTYPE_I64, "I64", 64, 0},
	{ST_DTYPE_F64, "F64", 64, 2}, {ST_DTYPE_C64, "C64", 64, 0},
	{ST_DTYPE_F32, "F32", 32, 2}, {ST_DTYPE_U32, "U32", 32, 0},
	{ST_DTYPE_I32, "I32", 32, 0}, {ST_DTYPE_BF16, "BF16", 16, 2},
	{ST_DTYPE_F16, "F16", 16, 2}, {ST_DTYPE_U16, "U16", 16, 0},
	{ST_DTYPE_I16, "I16", 16, 0}, {ST_DTYPE_F8_E5M2FNUZ, "F8_E5M2FNUZ", 8, 1},
	{ST_DTYPE_F8_E4M3FNUZ, "F8_E4M3FNUZ", 8, 1}, {ST_DTYPE_F8_E8M0, "F8_E8M0", 8, 1},
	{ST_DTYPE_F8_E4M3, "F8_E4M3", 8, 1}, {ST_DTYPE_F8_E5M2, "F8_E5M2", 8, 1},
	{ST_DTYPE_I8, "I8", 8, 0}, {ST_DTYPE_U8, "U8", 8, 0},
	{ST_DTYPE_F6_E3M2, "F6_E3M2", 6, 1}, {ST_DTYPE_F6_E2M3, "F6_E2M3", 6, 1},
	{ST_DTYPE_F4, "F4", 4, 1}, {ST_DTYPE_BOOL, "BOOL", 8, 0},
};

START_TEST(test_names_table)
{
	ck_assert_int_eq(COUNT(table), ST_DTYPE_COUNT);
	for (size_t i = 0; i < COUNT(table); i++) {
		st_dtype t = ST_DTYPE_COUNT;
		ck_assert_str_eq(st_dtype_name(table[i].t), table[i].name);
		ck_assert_uint_eq(st_dtype_bits(table[i].t), table[i].bits);
		ck_assert_int_eq(st_dtype_is_float(table[i].t), table[i].is_float != 0);
		ck_assert_int_eq(st_dtype_is_wide_float(table[i].t), table[i].is_float == 2);
		ck_assert_int_eq(st_dtype_from_name(table[i].name, strlen(table[i].name), &t), ST_OK);
		ck_assert_int_eq(t, table[i].t);
		/* The writer order is descending enum value. */
		if (i > 0)
			ck_assert_int_lt(table[i].t, table[i - 1].t);
	}
}
END_TEST

START_TEST(test_names_not_terminated)
{
	/* The name is the first len bytes; what follows is not looked at. */
	static const char buf[] = {'B', 'F', '1', '6', 'X', 'Y'};
	st_dtype t = ST_DTYPE_COUNT;

	ck_assert_int_eq(st_dtype_from_name(buf, 4, &t), ST_OK);
	ck_assert_int_eq(t, ST_DTYPE_BF16);
	ck_assert_int_eq(st_dtype_from_name("F32 and more", 3, &t), ST_OK);
	ck_assert_int_eq(t, ST_DTYPE_F32);
	ck_assert_int_eq(st_dtype_from_name("F8_E4M3FNUZ", 7, &t), ST_OK);
	ck_assert_int_eq(t, ST_DTYPE_F8_E4M3);
}
END_TEST

START_TEST(test_names_exact)
{
	static const char *const bad[] = {
		"f32", "Bf16", "bf16", "F3", "F322", "BF1", "F8_E4M3FN", "F8_E4M3fnuz",
		" F32", "F32 ", "FP32", "float32", "BOOL8", "bool", "C128", "F8",
	};
	st_dtype t = ST_DTYPE_F16;

	for (size_t i = 0; i < COUNT(bad); i++) {
		ck_assert_int_eq(st_dtype_from_name(bad[i], strlen(bad[i]), &t), ST_ENOTFOUND);
		ck_assert_int_eq(t, ST_DTYPE_F16); /* untouched on failure */
	}
	ck_assert_int_eq(st_dtype_from_name("", 0, &t), ST_ENOTFOUND);
	/* An embedded NUL is part of the name, so these are not "F32". */
	ck_assert_int_eq(st_dtype_from_name("F32\0", 4, &t), ST_ENOTFOUND);
	ck_assert_int_eq(st_dtype_from_name("F\0" "32", 4, &t), ST_ENOTFOUND);
}
END_TEST

START_TEST(test_names_out_of_range)
{
	ck_assert_ptr_null(st_dtype_name(ST_DTYPE_COUNT));
	ck_assert_ptr_null(st_dtype_name((st_dtype)-1));
	ck_assert_uint_eq(st_dtype_bits(ST_DTYPE_COUNT), 0);
	ck_assert_int_eq(st_dtype_is_float(ST_DTYPE_COUNT), 0);
	ck_assert_int_eq(st_dtype_is_wide_float(ST_DTYPE_COUNT), 0);
	ck_assert_int_eq(st_convert_supported(ST_DTYPE_COUNT, ST_DTYPE_F32), 0);
	ck_assert_int_eq(st_convert_supported(ST_DTYPE_F32, (st_dtype)-1), 0);
}
END_TEST

/* ---- scalar ------------------------------------------------------------------ */

/* The scalar API functions, where the pair has one, on one sample. */
static int scalar_api(const struct sample *s, uint64_t *out)
{
	if (s->src == ST_DTYPE_F32 && s->dst == ST_DTYPE_F16)
		*out = st_f32_to_f16(bitsf((uint32_t)s->in)).bits;
	else if (s->src == ST_DTYPE_F32 && s->dst == ST_DTYPE_BF16)
		*out = st_f32_to_bf16(bitsf((uint32_t)s->in)).bits;
	else if (s->src == ST_DTYPE_F16 && s->dst == ST_DTYPE_F32)
		*out = fbits(st_f16_to_f32((st_f16){(uint16_t)s->in}));
	else if (s->src == ST_DTYPE_BF16 && s->dst == ST_DTYPE_F32)
		*out = fbits(st_bf16_to_f32((st_bf16){(uint16_t)s->in}));
	else if (s->src == ST_DTYPE_F64 && s->dst == ST_DTYPE_F32)
		*out = fbits(st_f64_to_f32(bitsd(s->in)));
	else
		return 0;
	return 1;
}

START_TEST(test_scalar_samples)
{
	size_t n, api = 0;
	struct sample *v = load_samples(&n);

	for (size_t i = 0; i < n; i++) {
		unsigned char in[8], out[8];
		uint64_t got;

		if (scalar_api(&v[i], &got)) {
			check_sample(&v[i], got, "scalar function");
			api++;
		}
		put_bits(v[i].src, in, 0, v[i].in);
		CHECK(st__convert_scalar(v[i].dst, out, v[i].src, in, 1, NULL) == ST_OK, "failed");
		check_sample(&v[i], get_bits(v[i].dst, out, 0), "st__convert_scalar");
		CHECK(st_convert(v[i].dst, out, v[i].src, in, 1, NULL) == ST_OK, "failed");
		check_sample(&v[i], get_bits(v[i].dst, out, 0), "st_convert");
	}
	ck_assert_uint_ge(api, 1800);
	free(v);
}
END_TEST

START_TEST(test_scalar_digests)
{
	streams_setup();
	ck_assert_uint_eq(check_digests(st__convert_scalar, "scalar"), 416);
}
END_TEST

START_TEST(test_scalar_exhaustive16)
{
	/*
	 * Independent of PyTorch: every F16 and BF16 value widens to the value
	 * its fields describe (computed here with ldexp), and every pattern,
	 * NaNs included, survives the round trip through F32 unchanged.
	 */
	for (uint32_t b = 0; b < 65536; b++) {
		st_f16 h = {(uint16_t)b};
		st_bf16 bf = {(uint16_t)b};
		unsigned e = b >> 10 & 31, m = b & 1023;
		double sign = (b & 0x8000) ? -1.0 : 1.0;
		float fh = st_f16_to_f32(h), fb = st_bf16_to_f32(bf);

		/*
		 * Every pattern, NaNs included (signalling ones too), comes back
		 * bit for bit from F32, through the scalar functions and through
		 * st_convert (checked over all patterns at once below).
		 */
		CHECK(st_f32_to_f16(fh).bits == b, "F16 %#06x does not round-trip", b);
		CHECK(st_f32_to_bf16(fb).bits == b, "BF16 %#06x does not round-trip", b);
		if (e == 31) {
			CHECK(m ? isnan(fh) : isinf(fh) && !signbit(fh) == !signbit(sign),
			      "F16 %#06x -> %a", b, (double)fh);
			if (m)
				CHECK(fbits(fh) == ((b & 0x8000u) << 16 | 0x7F800000u | m << 13),
				      "F16 NaN %#06x -> %#010x", b, fbits(fh));
		} else {
			double want = sign * (e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24));
			CHECK((double)fh == want && !signbit(fh) == !signbit(want),
			      "F16 %#06x -> %a, expected %a", b, (double)fh, want);
			CHECK(st_f32_to_f16(fh).bits == b, "F16 %#06x does not round-trip", b);
		}
		CHECK(fbits(fb) == b << 16, "BF16 %#06x -> %#010x", b, fbits(fb));
		CHECK(!isnan(fb) || (b & 0x7FFF) > 0x7F80, "BF16 %#06x -> NaN", b);
	}
}
END_TEST

START_TEST(test_roundtrip16_all_paths)
{
	/*
	 * F16 -> F32 -> F16 and BF16 -> F32 -> BF16 over all 65,536 patterns
	 * with every kernel family, at an offset that leaves a partial vector.
	 */
	enum { N = 65536 };
	uint16_t *in = malloc(N * 2 + 2), *back = malloc(N * 2);
	uint32_t *wide = malloc(N * 4);
	int isas[3] = {0, 1, 2};

	ck_assert(in && back && wide);
	for (uint32_t b = 0; b < N; b++)
		in[b] = (uint16_t)b;
	for (int k = 0; k < 3; k++) {
		for (int pass = 0; pass < 2; pass++) {
			st_dtype t = pass ? ST_DTYPE_BF16 : ST_DTYPE_F16;
			if (st__convert_isa(isas[k], ST_DTYPE_F32, wide, t, in, N, NULL) != ST_OK)
				continue; /* not on this CPU */
			ck_assert_int_eq(st__convert_isa(isas[k], t, back, ST_DTYPE_F32, wide, N, NULL), ST_OK);
			for (uint32_t b = 0; b < N; b++)
				CHECK(back[b] == b, "%s %s %#06x -> %#010x -> %#06x", isa_names[k],
				      st_dtype_name(t), b, wide[b], back[b]);
			/* Through F64 and back too (both steps exact for these). */
			uint64_t *w64 = malloc(N * 8);
			ck_assert(w64 != NULL);
			ck_assert_int_eq(st__convert_isa(isas[k], ST_DTYPE_F64, w64, t, in, N, NULL), ST_OK);
			ck_assert_int_eq(st__convert_isa(isas[k], t, back, ST_DTYPE_F64, w64, N, NULL), ST_OK);
			for (uint32_t b = 0; b < N; b++)
				CHECK(back[b] == b, "%s %s %#06x -> F64 -> %#06x", isa_names[k],
				      st_dtype_name(t), b, back[b]);
			free(w64);
		}
	}
	free(in);
	free(back);
	free(wide);
}
END_TEST

START_TEST(test_scalar_double_rounding)
{
	/*
	 * 1 + 2^-11 + 2^-40 rounds to 1 + 2^-10 in one step, but PyTorch goes
	 * through F32 (1 + 2^-11, a tie) and lands on 1.0; libst does the same.
	 */
	double d = 1 + 0x1p-11 + 0x1p-40, b = 1 + 0x1p-8 + 0x1p-40;
	uint16_t h, bh;

	ck_assert_int_eq(st_convert(ST_DTYPE_F16, &h, ST_DTYPE_F64, &d, 1, NULL), ST_OK);
	ck_assert_uint_eq(h, 0x3C00);
	ck_assert_int_eq(st_convert(ST_DTYPE_BF16, &bh, ST_DTYPE_F64, &b, 1, NULL), ST_OK);
	ck_assert_uint_eq(bh, 0x3F80);
}
END_TEST

START_TEST(test_scalar_huge_f64)
{
	/* Beyond FLT_MAX a C cast would be undefined; libst gives +-Inf. */
	ck_assert_uint_eq(fbits(st_f64_to_f32(1e300)), 0x7F800000);
	ck_assert_uint_eq(fbits(st_f64_to_f32(-1e300)), 0xFF800000);
	ck_assert_uint_eq(fbits(st_f64_to_f32(0x1.fffffefffffffp127)), 0x7F7FFFFF);
	ck_assert_uint_eq(fbits(st_f64_to_f32(0x1.ffffffp127)), 0x7F800000);
	ck_assert_uint_eq(fbits(st_f64_to_f32(0x1p-149)), 0x00000001);
	ck_assert_uint_eq(fbits(st_f64_to_f32(0x1p-150)), 0x00000000);
	ck_assert_uint_eq(fbits(st_f64_to_f32(-0x1.0000000000001p-150)), 0x80000001);
}
END_TEST

/* ---- convert ------------------------------------------------------------------ */

START_TEST(test_convert_digests)
{
	streams_setup();
	ck_assert_uint_eq(check_digests(st_convert, "st_convert"), 416);
}
END_TEST

START_TEST(test_convert_stats_accumulate)
{
	/* stats is incremented, never reset; NULL is accepted. */
	static const uint32_t in[4] = {0x7F7FFFFF, 0x00000001, 0x3F800000, 0x7F800000};
	st_convert_stats s = {10, 20};
	uint16_t out[4], out2[4];
	uint32_t wide[4];

	ck_assert_int_eq(st_convert(ST_DTYPE_F16, out, ST_DTYPE_F32, in, 4, &s), ST_OK);
	ck_assert_uint_eq(s.overflow, 11);
	ck_assert_uint_eq(s.underflow, 21);
	ck_assert_int_eq(st_convert(ST_DTYPE_F16, out2, ST_DTYPE_F32, in, 4, NULL), ST_OK);
	ck_assert_mem_eq(out, out2, sizeof out);
	ck_assert_uint_eq(out[0], 0x7C00);
	ck_assert_uint_eq(out[1], 0x0000);
	ck_assert_uint_eq(out[2], 0x3C00);
	ck_assert_uint_eq(out[3], 0x7C00);
	/* Widening loses nothing and counts nothing. */
	ck_assert_int_eq(st_convert(ST_DTYPE_F32, wide, ST_DTYPE_F16, out, 4, &s), ST_OK);
	ck_assert_uint_eq(s.overflow, 11);
	ck_assert_uint_eq(s.underflow, 21);
}
END_TEST

START_TEST(test_convert_same_type)
{
	/* The same type is a byte copy: even signalling NaNs are kept. */
	static const uint32_t in[3] = {0x7F800001, 0xFFA00000, 0x00000001};
	uint32_t out[3];
	st_convert_stats s = {0, 0};

	ck_assert_int_eq(st_convert(ST_DTYPE_F32, out, ST_DTYPE_F32, in, 3, &s), ST_OK);
	ck_assert_mem_eq(out, in, sizeof in);
	ck_assert_int_eq(st_convert(ST_DTYPE_F32, out, ST_DTYPE_F32, out, 3, &s), ST_OK);
	ck_assert_mem_eq(out, in, sizeof in);
	ck_assert_uint_eq(s.overflow + s.underflow, 0);
}
END_TEST

START_TEST(test_convert_in_place)
{
	/* F16 <-> BF16 may convert in place (dst == src, same size). */
	enum { N = 1000 };
	uint16_t buf[N], want[N];

	for (int pass = 0; pass < 2; pass++) {
		st_dtype from = pass ? ST_DTYPE_BF16 : ST_DTYPE_F16;
		st_dtype to = pass ? ST_DTYPE_F16 : ST_DTYPE_BF16;
		for (unsigned i = 0; i < N; i++)
			buf[i] = (uint16_t)(i * 65.537);
		ck_assert_int_eq(st__convert_scalar(to, want, from, buf, N, NULL), ST_OK);
		ck_assert_int_eq(st_convert(to, buf, from, buf, N, NULL), ST_OK);
		ck_assert_mem_eq(buf, want, sizeof buf);
	}
}
END_TEST

/* ---- vector -------------------------------------------------------------------- */

static int isa_ok(int isa)
{
	unsigned char b[8] = {0};

	return st__convert_isa(isa, ST_DTYPE_F16, b, ST_DTYPE_F32, b, 1, NULL) == ST_OK;
}

/* The first index where two outputs differ, for the message. */
static size_t first_diff(st_dtype t, const void *a, const void *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (get_bits(t, a, i) != get_bits(t, b, i))
			return i;
	return n;
}

START_TEST(test_vector_streams)
{
	int isa = _i + 1;
	size_t cap = (size_t)F32_N * 8;
	unsigned char *a, *b;

	if (!isa_ok(isa)) {
		printf("check_dtype: %s kernels not available on this CPU, skipped\n", isa_names[isa]);
		return;
	}
	streams_setup();
	a = xmalloc(cap);
	b = xmalloc(cap);
	for (int si = 0; si < FLOATS; si++) {
		for (int di = 0; di < FLOATS; di++) {
			st_dtype src = floats[si], dst = floats[di];
			st_convert_stats sa = {0, 0}, sb = {0, 0};
			size_t n, at;
			const void *in = stream_of(src, &n);

			if (src == dst)
				continue;
			ck_assert_int_eq(st__convert_scalar(dst, a, src, in, n, &sa), ST_OK);
			ck_assert_int_eq(st__convert_isa(isa, dst, b, src, in, n, &sb), ST_OK);
			at = first_diff(dst, a, b, n);
			ck_assert_msg(at == n, "%s %s -> %s: element %zu, input %#" PRIx64 ": scalar %#" PRIx64
			              ", vector %#" PRIx64, isa_names[isa], st_dtype_name(src),
			              st_dtype_name(dst), at, get_bits(src, in, at),
			              get_bits(dst, a, at), get_bits(dst, b, at));
			ck_assert_msg(sa.overflow == sb.overflow && sa.underflow == sb.underflow,
			              "%s %s -> %s: stats %" PRIu64 "/%" PRIu64 " vs scalar %" PRIu64 "/%" PRIu64,
			              isa_names[isa], st_dtype_name(src), st_dtype_name(dst),
			              sb.overflow, sb.underflow, sa.overflow, sa.underflow);
		}
	}
	free(a);
	free(b);
}
END_TEST

START_TEST(test_vector_large_unaligned)
{
	/*
	 * Outputs of 8 MiB and more take the non-temporal store path, which
	 * first steps to an aligned address: try every dst offset, including
	 * odd ones (no streaming possible), with a misaligned source.
	 */
	static const unsigned offsets[] = {0, 1, 2, 6, 30};
	int isa = _i + 1;
	size_t n = F32_N - 3;
	unsigned char *in, *ref, *out;

	if (!isa_ok(isa))
		return;
	streams_setup();
	in = xmalloc(F32_N * 4 + 1);
	ref = xmalloc(F32_N * 4);
	out = xmalloc(F32_N * 4 + 64);
	memcpy(in + 1, src_f32, n * 4);
	for (int k = 0; k < 2; k++) {
		st_dtype dst = k ? ST_DTYPE_F16 : ST_DTYPE_BF16;
		st_convert_stats sa = {0, 0};
		ck_assert_int_eq(st__convert_scalar(dst, ref, ST_DTYPE_F32, in + 1, n, &sa), ST_OK);
		for (size_t o = 0; o < COUNT(offsets); o++) {
			st_convert_stats sb = {0, 0};
			memset(out, 0xA5, F32_N * 4 + 64);
			ck_assert_int_eq(st__convert_isa(isa, dst, out + offsets[o], ST_DTYPE_F32, in + 1, n, &sb),
			                 ST_OK);
			ck_assert_msg(memcmp(out + offsets[o], ref, n * 2) == 0, "%s F32 -> %s offset %u: differs at %zu",
			              isa_names[isa], st_dtype_name(dst), offsets[o],
			              first_diff(dst, out + offsets[o], ref, n));
			for (size_t g = 0; g < offsets[o]; g++)
				CHECK(out[g] == 0xA5, "wrote before the output");
			for (size_t g = offsets[o] + n * 2; g < F32_N * 4 + 64; g++)
				CHECK(out[g] == 0xA5, "wrote after the output");
			ck_assert_uint_eq(sa.overflow, sb.overflow);
			ck_assert_uint_eq(sa.underflow, sb.underflow);
		}
	}
	free(in);
	free(ref);
	free(out);
}
END_TEST

START_TEST(test_vector_tails)
{
	/*
	 * Every length 0..67 (whole vectors plus every tail), at byte offsets
	 * 0..3 of both buffers, with guard bytes around the output.
	 */
	enum { MAXN = 67, GUARD = 64 };
	int isa = _i + 1;
	unsigned char in[MAXN * 8 + 8], ref[MAXN * 8 + 8], out[MAXN * 8 + 2 * GUARD + 8];

	if (!isa_ok(isa))
		return;
	streams_setup();
	for (int si = 0; si < FLOATS; si++) {
		for (int di = 0; di < FLOATS; di++) {
			st_dtype src = floats[si], dst = floats[di];
			size_t sn;
			const unsigned char *stream = stream_of(src, &sn);

			if (src == dst)
				continue;
			for (size_t n = 0; n <= MAXN; n++) {
				for (unsigned so = 0; so < 4; so++) {
					for (unsigned doff = 0; doff < 4; doff++) {
						st_convert_stats sa = {0, 0}, sb = {0, 0};
						size_t first = (n * 131 + so * 17 + doff) % (sn - MAXN);
						unsigned char *o = out + GUARD + doff;

						memcpy(in + so, stream + first * esize(src), n * esize(src));
						memset(out, 0xA5, sizeof out);
						CHECK(st__convert_scalar(dst, ref, src, in + so, n, &sa) == ST_OK, "scalar failed");
						CHECK(st__convert_isa(isa, dst, o, src, in + so, n, &sb) == ST_OK, "vector failed");
						CHECK(memcmp(o, ref, n * esize(dst)) == 0,
						              "%s %s -> %s n=%zu offsets %u/%u: output differs at %zu",
						              isa_names[isa], st_dtype_name(src), st_dtype_name(dst), n, so,
						              doff, first_diff(dst, o, ref, n));
						for (size_t g = 0; g < sizeof out; g++)
							if (out + g < o || out + g >= o + n * esize(dst))
								CHECK(out[g] == 0xA5, "%s %s -> %s n=%zu: wrote byte %td",
								              isa_names[isa], st_dtype_name(src),
								              st_dtype_name(dst), n, out + g - o);
						CHECK(sa.overflow == sb.overflow && sa.underflow == sb.underflow,
						      "%s %s -> %s n=%zu: stats differ", isa_names[isa],
						      st_dtype_name(src), st_dtype_name(dst), n);
					}
				}
			}
		}
	}
}
END_TEST

START_TEST(test_vector_in_place)
{
	enum { N = 4099 };
	int isa = _i + 1;
	uint16_t *buf, *want;

	if (!isa_ok(isa))
		return;
	buf = xmalloc(N * 2 + 2);
	want = xmalloc(N * 2);
	for (int pass = 0; pass < 2; pass++) {
		st_dtype from = pass ? ST_DTYPE_BF16 : ST_DTYPE_F16;
		st_dtype to = pass ? ST_DTYPE_F16 : ST_DTYPE_BF16;
		/* Misaligned by one element's half, to avoid lucky alignment. */
		uint16_t *p = (uint16_t *)((unsigned char *)buf + 1);
		unsigned char tmp[N * 2];
		for (unsigned i = 0; i < N; i++) {
			uint16_t v = (uint16_t)(i * 16411u);
			memcpy((unsigned char *)p + 2 * i, &v, 2);
		}
		memcpy(tmp, p, sizeof tmp);
		ck_assert_int_eq(st__convert_scalar(to, want, from, tmp, N, NULL), ST_OK);
		ck_assert_int_eq(st__convert_isa(isa, to, p, from, p, N, NULL), ST_OK);
		ck_assert_msg(memcmp(p, want, N * 2) == 0, "%s in place %s -> %s differs",
		              isa_names[isa], st_dtype_name(from), st_dtype_name(to));
	}
	free(buf);
	free(want);
}
END_TEST

START_TEST(test_vector_mxcsr)
{
#if defined(__x86_64__) || defined(__i386__)
	/*
	 * A host program may set flush-to-zero, denormals-are-zero, another
	 * rounding mode, or unmask exceptions. None of it may change a bit or
	 * trap: st_convert then uses its integer-only code.
	 */
	enum { N = 4096 };
	static const unsigned modes[] = {
		0x1F80 | 0x8040,            /* FTZ + DAZ */
		0x1F80 | 0x6000,            /* round toward zero */
		0x1F80 | 0x2000,            /* round down */
		0x0000,                     /* every exception unmasked */
		0x8040 | 0x4000 | 0x0000,   /* all of it */
	};
	unsigned saved = _mm_getcsr();
	unsigned char a[N * 8], b[N * 8];

	streams_setup();
	for (size_t m = 0; m < COUNT(modes); m++) {
		for (int si = 0; si < FLOATS; si++) {
			for (int di = 0; di < FLOATS; di++) {
				st_dtype src = floats[si], dst = floats[di];
				size_t sn;
				const unsigned char *in = stream_of(src, &sn);
				st_convert_stats sa = {0, 0}, sb = {0, 0};
				int rc;

				if (src == dst)
					continue;
				/* Near the start of the streams: specials and NaNs too. */
				ck_assert_int_eq(st__convert_scalar(dst, a, src, in, N, &sa), ST_OK);
				_mm_setcsr((saved & ~0xFFC0u) | modes[m]);
				rc = st_convert(dst, b, src, in, N, &sb);
				_mm_setcsr(saved);
				ck_assert_int_eq(rc, ST_OK);
				ck_assert_msg(memcmp(a, b, N * esize(dst)) == 0,
				              "MXCSR %#x: %s -> %s differs at %zu", modes[m],
				              st_dtype_name(src), st_dtype_name(dst), first_diff(dst, a, b, N));
				ck_assert_uint_eq(sa.overflow, sb.overflow);
				ck_assert_uint_eq(sa.underflow, sb.underflow);
			}
		}
	}
#endif
}
END_TEST


/* ---- 8- and 4-bit floats ------------------------------------------------------ */

#define N_F8 5
static const st_dtype f8_types[N_F8] = {ST_DTYPE_F8_E4M3, ST_DTYPE_F8_E5M2, ST_DTYPE_F8_E4M3FNUZ,
                                        ST_DTYPE_F8_E5M2FNUZ, ST_DTYPE_F8_E8M0};

/*
 * libst's NaN rules for the narrow types, written out here: decoding keeps
 * the sign and payload (FNUZ and E8M0 NaNs have neither: 0x7FC00000);
 * encoding gives E4M3 S.1111.111, E5M2 the sign and the two leading
 * payload bits (quiet bit 01 -> 10 if both are zero), FNUZ 0x80, E8M0 0xFF.
 */
static uint32_t f8_nan_decoded(st_dtype t, unsigned c)
{
	if (t == ST_DTYPE_F8_E4M3)
		return (uint32_t)(c & 0x80) << 24 | 0x7FF00000u;
	if (t == ST_DTYPE_F8_E5M2)
		return (uint32_t)(c & 0x80) << 24 | 0x7F800000u | (uint32_t)(c & 3) << 21;
	return 0x7FC00000u;
}

static unsigned f8_nan_encoded(st_dtype t, uint32_t x)
{
	unsigned sign = x >> 24 & 0x80, m = x >> 21 & 3;

	switch (t) {
	case ST_DTYPE_F8_E4M3: return sign | 0x7F;
	case ST_DTYPE_F8_E5M2: return sign | 0x7C | (m ? m : 2);
	case ST_DTYPE_F8_E8M0: return 0xFF;
	default: return 0x80;
	}
}

static int f8_is_nan(st_dtype t, unsigned c)
{
	switch (t) {
	case ST_DTYPE_F8_E4M3: return (c & 0x7F) == 0x7F;
	case ST_DTYPE_F8_E5M2: return (c & 0x7F) > 0x7C;
	case ST_DTYPE_F8_E8M0: return c == 0xFF;
	default: return c == 0x80;
	}
}

struct f8_line {
	st_dtype t;
	uint32_t a, b;
	int nan; /* the reference value is NaN */
};

/* Lines "TYPE HEX HEX|nan" of a gen_f8.py fixture. */
static struct f8_line *load_f8(const char *name, size_t *count)
{
	FILE *f = open_fixture(name);
	struct f8_line *v = NULL;
	size_t n = 0, cap = 0;
	char line[128], tn[16], out[16];

	while (fgets(line, sizeof line, f)) {
		struct f8_line x;
		if (line[0] == '#')
			continue;
		ck_assert_msg(sscanf(line, "%15s %" SCNx32 " %15s", tn, &x.a, out) == 3, "%s: bad line '%s'",
		              name, line);
		x.t = dtype_of(tn);
		x.nan = strcmp(out, "nan") == 0;
		x.b = x.nan ? 0 : (uint32_t)strtoul(out, NULL, 16);
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			v = realloc(v, cap * sizeof *v);
			ck_assert(v != NULL);
		}
		v[n++] = x;
	}
	fclose(f);
	*count = n;
	return v;
}

START_TEST(test_f8_decode_table)
{
	/* Every code of every type against gen_f8.py's table from the OCP spec. */
	size_t n, seen[ST_DTYPE_COUNT] = {0};
	struct f8_line *v = load_f8("f8_decode.txt", &n);

	ck_assert_uint_eq(n, 5 * 256 + 16);
	for (size_t i = 0; i < n; i++) {
		uint32_t want = v[i].nan ? f8_nan_decoded(v[i].t, v[i].a) : v[i].b;
		uint32_t got = fbits(st_f8_to_f32(v[i].t, (uint8_t)v[i].a));
		if (v[i].t == ST_DTYPE_F4)
			want = v[i].b;
		CHECK(got == want, "%s code %#04x: %#010x, expected %#010x", st_dtype_name(v[i].t), v[i].a, got,
		      want);
		CHECK(!v[i].nan == !isnan(bitsf(got)), "%s code %#04x: NaN-ness", st_dtype_name(v[i].t), v[i].a);
		if (v[i].t != ST_DTYPE_F4)
			CHECK(!v[i].nan == !f8_is_nan(v[i].t, v[i].a), "%s %#04x: NaN codes", st_dtype_name(v[i].t), v[i].a);
		seen[v[i].t]++;
	}
	for (int k = 0; k < N_F8; k++)
		ck_assert_uint_eq(seen[f8_types[k]], 256);
	ck_assert_uint_eq(seen[ST_DTYPE_F4], 16);
	free(v);
}
END_TEST

/* All 256 codes of t (a few times over, at an odd offset) to each wide type. */
START_TEST(test_f8_decode_convert)
{
	enum { N = 256 * 3 + 5 };
	unsigned char codes[N + 1];
	uint64_t ref[N], out[N + 8];

	for (size_t i = 0; i < N; i++)
		codes[1 + i] = (unsigned char)(i * 7 + i / 256);
	for (int k = 0; k < N_F8; k++) {
		st_dtype t = f8_types[k];
		for (int di = 0; di < FLOATS; di++) {
			st_dtype dst = floats[di];
			uint32_t f[N];
			/* The reference: the scalar decode, then the (tested) F32 -> dst. */
			for (size_t i = 0; i < N; i++)
				f[i] = fbits(st_f8_to_f32(t, codes[1 + i]));
			ck_assert_int_eq(st__convert_scalar(dst, ref, ST_DTYPE_F32, f, N, NULL), ST_OK);
			for (int isa = 0; isa < 3; isa++) {
				st_convert_stats sa = {0, 0}, sb = {0, 0};
				int rc = st__convert_isa(isa, dst, (unsigned char *)out + 1, t, codes + 1, N, &sb);
				if (rc == ST_EUNSUPPORTED && isa)
					continue;
				ck_assert_int_eq(rc, ST_OK);
				ck_assert_msg(memcmp((unsigned char *)out + 1, ref, N * esize(dst)) == 0,
				              "%s %s -> %s differs at %zu", isa_names[isa], st_dtype_name(t),
				              st_dtype_name(dst), first_diff(dst, (unsigned char *)out + 1, ref, N));
				ck_assert_int_eq(st__convert_scalar(dst, ref, ST_DTYPE_F32, f, N, &sa), ST_OK);
				ck_assert_uint_eq(sa.overflow, sb.overflow);
				ck_assert_uint_eq(sa.underflow, sb.underflow);
			}
		}
	}
}
END_TEST

START_TEST(test_f4_packing)
{
	/*
	 * Every byte: element 2i is bits 3..0, element 2i + 1 bits 7..4
	 * (PyTorch's float4_e2m1fn_x2); values from the E2M1 table.
	 */
	static const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
	unsigned char b[256];
	float out[512];
	uint16_t h[512];

	for (unsigned i = 0; i < 256; i++)
		b[i] = (unsigned char)i;
	for (int isa = 0; isa < 3; isa++) {
		memset(out, 0, sizeof out);
		if (st__convert_isa(isa, ST_DTYPE_F32, out, ST_DTYPE_F4, b, 512, NULL) == ST_EUNSUPPORTED && isa)
			continue;
		for (unsigned i = 0; i < 256; i++) {
			CHECK(fbits(out[2 * i]) == fbits(e2m1[i & 15]), "%s byte %#04x: element 0 %a", isa_names[isa],
			      i, (double)out[2 * i]);
			CHECK(fbits(out[2 * i + 1]) == fbits(e2m1[i >> 4]), "%s byte %#04x: element 1 %a",
			      isa_names[isa], i, (double)out[2 * i + 1]);
		}
	}
	ck_assert_int_eq(st_convert(ST_DTYPE_BF16, h, ST_DTYPE_F4, b + 1, 6, NULL), ST_OK);
	ck_assert_uint_eq(h[0], 0x3F00); /* byte 0x01: 0.5, then 0 */
	ck_assert_uint_eq(h[1], 0x0000);
	ck_assert_uint_eq(h[2], 0x3F80); /* byte 0x02: 1, 0 */
	ck_assert_uint_eq(h[4], 0x3FC0); /* byte 0x03: 1.5, 0 */
	/* Two to a byte: an odd count is refused, F4 is read only. */
	ck_assert_int_eq(st_convert(ST_DTYPE_F32, out, ST_DTYPE_F4, b, 3, NULL), ST_EINVAL);
	ck_assert_int_eq(st__convert_scalar(ST_DTYPE_F32, out, ST_DTYPE_F4, b, 1, NULL), ST_EINVAL);
	ck_assert_int_eq(st_convert(ST_DTYPE_F4, b, ST_DTYPE_F32, out, 2, NULL), ST_EUNSUPPORTED);
	ck_assert_int_eq(st_convert_supported(ST_DTYPE_F32, ST_DTYPE_F4), 1);
	ck_assert_int_eq(st_convert_supported(ST_DTYPE_F4, ST_DTYPE_F32), 0);
	ck_assert_int_eq(st_convert_supported(ST_DTYPE_F32, ST_DTYPE_F6_E2M3), 0);
}
END_TEST

START_TEST(test_f8_encode_table)
{
	/* gen_f8.py's nearest-value search, one input at a time and in bulk. */
	size_t n;
	struct f8_line *v = load_f8("f8_encode.txt", &n);
	uint32_t *in = xmalloc(n * 4);
	unsigned char *want = xmalloc(n), *got = xmalloc(n + 1);

	ck_assert_uint_ge(n, 10000);
	for (int k = 0; k < N_F8; k++) {
		st_dtype t = f8_types[k];
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			if (v[i].t != t)
				continue;
			in[m] = v[i].a;
			want[m] = (unsigned char)(v[i].nan ? f8_nan_encoded(t, v[i].a) : v[i].b);
			unsigned c = st_f32_to_f8(t, bitsf(v[i].a));
			CHECK(c == want[m], "%s: F32 %#010x -> %#04x, expected %#04x", st_dtype_name(t), v[i].a, c,
			      want[m]);
			m++;
		}
		ck_assert_uint_ge(m, 1000);
		for (int isa = 0; isa < 3; isa++) {
			int rc = st__convert_isa(isa, t, got + 1, ST_DTYPE_F32, in, m, NULL);
			if (rc == ST_EUNSUPPORTED && isa)
				continue;
			ck_assert_int_eq(rc, ST_OK);
			size_t at = 0;
			while (at < m && got[1 + at] == want[at])
				at++;
			ck_assert_msg(at == m, "%s st_convert F32 -> %s: input %#010x gave %#04x, expected %#04x",
			              isa_names[isa], st_dtype_name(t), in[at], got[1 + at], want[at]);
		}
	}
	free(in);
	free(want);
	free(got);
	free(v);
}
END_TEST

/*
 * The E4M3 encoding kernels against the scalar reference, bit for bit and
 * count for count: every value of the top 16 bits (sign, exponent, seven
 * mantissa bits: every rounding point of the normal and subnormal ranges
 * lies there) with low halves at and around a half-way point, then 2^22
 * random bit patterns; an odd length and an odd offset, so the tails and
 * unaligned loads run too.
 */
START_TEST(test_f8_e4m3_kernels)
{
	static const uint16_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x1234, 0xC3A5};
	const size_t n_lows = sizeof lows / sizeof lows[0];
	const size_t n = 65536 * n_lows + ((size_t)1 << 22) + 13;
	uint32_t *in = xmalloc(n * 4 + 4);
	unsigned char *ref = xmalloc(n), *got = xmalloc(n + 1);
	uint32_t r = 0x9E3779B9u;
	size_t m = 0;

	for (uint32_t hi = 0; hi < 65536; hi++)
		for (size_t l = 0; l < n_lows; l++)
			in[1 + m++] = hi << 16 | lows[l];
	while (m < n) {
		r ^= r << 13;
		r ^= r >> 17;
		r ^= r << 5;
		in[1 + m++] = r;
	}
	st_convert_stats sr = {0, 0};
	ck_assert_int_eq(st__convert_isa(0, ST_DTYPE_F8_E4M3, ref, ST_DTYPE_F32, in + 1, n, &sr), ST_OK);
	ck_assert_uint_gt(sr.overflow, 0);
	ck_assert_uint_gt(sr.underflow, 0);
	for (int isa = 1; isa < 3; isa++) {
		st_convert_stats sb = {0, 0};
		int rc = st__convert_isa(isa, ST_DTYPE_F8_E4M3, got + 1, ST_DTYPE_F32, in + 1, n, &sb);
		if (rc == ST_EUNSUPPORTED)
			continue;
		ck_assert_int_eq(rc, ST_OK);
		size_t at = 0;
		while (at < n && got[1 + at] == ref[at])
			at++;
		ck_assert_msg(at == n, "%s F32 %#010x -> E4M3 %#04x, scalar %#04x", isa_names[isa],
		              in[1 + at], got[1 + at], ref[at]);
		ck_assert_uint_eq(sb.overflow, sr.overflow);
		ck_assert_uint_eq(sb.underflow, sr.underflow);
	}
	free(in);
	free(ref);
	free(got);
}
END_TEST

START_TEST(test_f8_encode_edges)
{
	/* Named cases, checked by hand against the OCP spec's value tables. */
	static const struct {
		st_dtype t;
		float in;
		unsigned out;
	} c[] = {
		{ST_DTYPE_F8_E4M3, 448.0f, 0x7E}, {ST_DTYPE_F8_E4M3, 464.0f, 0x7E},   /* tie with 480: saturates */
		{ST_DTYPE_F8_E4M3, 1e30f, 0x7E}, {ST_DTYPE_F8_E4M3, -1e30f, 0xFE},
		{ST_DTYPE_F8_E4M3, INFINITY, 0x7F}, {ST_DTYPE_F8_E4M3, -INFINITY, 0xFF},
		{ST_DTYPE_F8_E4M3, 0x1p-9f, 0x01}, {ST_DTYPE_F8_E4M3, 0x1p-10f, 0x00}, /* tie: even 0 */
		{ST_DTYPE_F8_E4M3, 0x1.8p-9f, 0x02}, /* tie 1.5 units: even 2 */
		{ST_DTYPE_F8_E4M3, 0x1.1p0f, 0x38},  /* 1.0625: tie 1 (even) / 1.125 */
		{ST_DTYPE_F8_E4M3, 0x1.3p0f, 0x3A},  /* 1.1875: tie 1.125 / 1.25 (even) */
		{ST_DTYPE_F8_E4M3, 0x1.30002p0f, 0x3A}, {ST_DTYPE_F8_E4M3, 0x1.2fffep0f, 0x39},
		{ST_DTYPE_F8_E4M3, -0.0f, 0x80}, {ST_DTYPE_F8_E4M3FNUZ, -0.0f, 0x00},
		{ST_DTYPE_F8_E4M3FNUZ, -0x1p-12f, 0x00}, {ST_DTYPE_F8_E4M3FNUZ, 240.0f, 0x7F},
		{ST_DTYPE_F8_E4M3FNUZ, 1000.0f, 0x7F}, {ST_DTYPE_F8_E4M3FNUZ, -INFINITY, 0x80},
		{ST_DTYPE_F8_E5M2, 57344.0f, 0x7B}, {ST_DTYPE_F8_E5M2, 1e10f, 0x7B},
		{ST_DTYPE_F8_E5M2, -INFINITY, 0xFC}, {ST_DTYPE_F8_E5M2, 0x1p-16f, 0x01},
		{ST_DTYPE_F8_E5M2FNUZ, 0x1p-17f, 0x01}, {ST_DTYPE_F8_E5M2FNUZ, 57344.0f, 0x7F},
		{ST_DTYPE_F8_E8M0, 1.0f, 127}, {ST_DTYPE_F8_E8M0, 1.5f, 128}, {ST_DTYPE_F8_E8M0, 1.4999999f, 127},
		{ST_DTYPE_F8_E8M0, -4.0f, 129}, {ST_DTYPE_F8_E8M0, 0.0f, 0}, {ST_DTYPE_F8_E8M0, 0x1p127f, 254},
		{ST_DTYPE_F8_E8M0, 3e38f, 254}, {ST_DTYPE_F8_E8M0, INFINITY, 0xFF}, {ST_DTYPE_F8_E8M0, 0x1p-127f, 0},
		{ST_DTYPE_F8_E8M0, 0x1.8p-127f, 1},
	};
	for (size_t i = 0; i < COUNT(c); i++) {
		unsigned got = st_f32_to_f8(c[i].t, c[i].in);
		ck_assert_msg(got == c[i].out, "%s %a -> %#04x, expected %#04x", st_dtype_name(c[i].t),
		              (double)c[i].in, got, c[i].out);
	}
	/* NaN payloads: E5M2 keeps the sign and the two leading bits. */
	ck_assert_uint_eq(st_f32_to_f8(ST_DTYPE_F8_E5M2, bitsf(0xFFA00000)), 0xFD);
	ck_assert_uint_eq(st_f32_to_f8(ST_DTYPE_F8_E5M2, bitsf(0x7F800001)), 0x7E);
	ck_assert_uint_eq(st_f32_to_f8(ST_DTYPE_F8_E4M3, bitsf(0xFF800001)), 0xFF);
	/* Counts: saturated and vanished values. */
	{
		static const float in[7] = {465.0f, 448.0f, -1000.0f, 1e-30f, 0.0f, NAN, 0x1p-11f};
		unsigned char out[7];
		st_convert_stats s = {0, 0};
		ck_assert_int_eq(st_convert(ST_DTYPE_F8_E4M3, out, ST_DTYPE_F32, in, 7, &s), ST_OK);
		ck_assert_uint_eq(s.overflow, 2);
		ck_assert_uint_eq(s.underflow, 2);
		ck_assert_uint_eq(out[0], 0x7E);
		ck_assert_uint_eq(out[2], 0xFE);
	}
	/* F64 past the F32 range saturates; it does not become an Inf (NaN). */
	{
		static const double in[3] = {1e300, -1e300, 1e-300};
		unsigned char out[3];
		ck_assert_int_eq(st_convert(ST_DTYPE_F8_E4M3, out, ST_DTYPE_F64, in, 3, NULL), ST_OK);
		ck_assert_uint_eq(out[0], 0x7E);
		ck_assert_uint_eq(out[1], 0xFE);
		ck_assert_uint_eq(out[2], 0x00);
	}
}
END_TEST

START_TEST(test_f8_roundtrip)
{
	/* Every code decodes and encodes back to itself (NaNs by the rule). */
	for (int k = 0; k < N_F8; k++) {
		st_dtype t = f8_types[k];
		for (unsigned c = 0; c < 256; c++) {
			float f = st_f8_to_f32(t, (uint8_t)c);
			unsigned back = st_f32_to_f8(t, f);
			unsigned want = f8_is_nan(t, c) ? f8_nan_encoded(t, fbits(f)) : c;
			CHECK(back == want, "%s %#04x -> %a -> %#04x", st_dtype_name(t), c, (double)f, back);
			if (t == ST_DTYPE_F8_E4M3 || (t == ST_DTYPE_F8_E5M2 && !(f8_is_nan(t, c) && (c & 3) == 1)))
				CHECK(back == c, "%s %#04x not kept", st_dtype_name(t), c);
		}
	}
	/* F8 -> F8 is decode then encode: e.g. every E5M2 code to E4M3. */
	for (int a = 0; a < N_F8; a++) {
		for (int b = 0; b < N_F8; b++) {
			unsigned char in[256], out[256];
			for (unsigned c = 0; c < 256; c++)
				in[c] = (unsigned char)c;
			ck_assert_int_eq(st_convert(f8_types[b], out, f8_types[a], in, 256, NULL), ST_OK);
			for (unsigned c = 0; c < 256; c++)
				CHECK(out[c] == st_f32_to_f8(f8_types[b], st_f8_to_f32(f8_types[a], (uint8_t)c)),
				      "%s -> %s code %#04x", st_dtype_name(f8_types[a]), st_dtype_name(f8_types[b]), c);
			/* In place (same size). */
			ck_assert_int_eq(st_convert(f8_types[b], in, f8_types[a], in, 256, NULL), ST_OK);
			ck_assert_mem_eq(in, out, 256);
		}
	}
}
END_TEST

START_TEST(test_f8_vector_streams)
{
	/* Each kernel family against the scalar path on the big streams. */
	int isa = _i + 1;
	size_t cap = (size_t)F32_N;
	unsigned char *a, *b;

	if (!isa_ok(isa))
		return;
	streams_setup();
	a = xmalloc(cap);
	b = xmalloc(cap);
	for (int si = 0; si < FLOATS; si++) {
		for (int k = 0; k < N_F8; k++) {
			st_dtype src = floats[si], dst = f8_types[k];
			st_convert_stats sa = {0, 0}, sb = {0, 0};
			size_t n, at = 0;
			const void *in = stream_of(src, &n);
			ck_assert_int_eq(st__convert_scalar(dst, a, src, in, n, &sa), ST_OK);
			ck_assert_int_eq(st__convert_isa(isa, dst, b, src, in, n, &sb), ST_OK);
			while (at < n && a[at] == b[at])
				at++;
			ck_assert_msg(at == n, "%s %s -> %s: element %zu", isa_names[isa], st_dtype_name(src),
			              st_dtype_name(dst), at);
			ck_assert_uint_eq(sa.overflow, sb.overflow);
			ck_assert_uint_eq(sa.underflow, sb.underflow);
		}
	}
	free(a);
	free(b);
}
END_TEST

/* ---- errors ------------------------------------------------------------------ */

START_TEST(test_errors_unsupported)
{
	unsigned char in[64] = {0}, out[64];

	for (int t = 0; t < ST_DTYPE_COUNT; t++) {
		if (st_dtype_is_wide_float((st_dtype)t) || st_convert_supported((st_dtype)t, ST_DTYPE_F32) ||
		    t == ST_DTYPE_F4)
			continue;
		for (int f = 0; f < FLOATS; f++) {
			memset(out, 0x5A, sizeof out);
			ck_assert_int_eq(st_convert((st_dtype)t, out, floats[f], in, 4, NULL), ST_EUNSUPPORTED);
			ck_assert_int_eq(st_convert(floats[f], out, (st_dtype)t, in, 4, NULL), ST_EUNSUPPORTED);
			ck_assert_int_eq(st__convert_scalar((st_dtype)t, out, floats[f], in, 4, NULL),
			                 ST_EUNSUPPORTED);
			ck_assert_int_eq(st__convert_scalar(floats[f], out, (st_dtype)t, in, 4, NULL),
			                 ST_EUNSUPPORTED);
			/* Refused before n is looked at, and nothing written. */
			ck_assert_int_eq(st_convert((st_dtype)t, out, floats[f], in, 0, NULL), ST_EUNSUPPORTED);
			for (size_t i = 0; i < sizeof out; i++)
				ck_assert_uint_eq(out[i], 0x5A);
		}
		/* The same non-float type on both sides is still refused. */
		ck_assert_int_eq(st_convert((st_dtype)t, out, (st_dtype)t, in, 4, NULL), ST_EUNSUPPORTED);
	}
	ck_assert_int_eq(st_convert(ST_DTYPE_COUNT, out, ST_DTYPE_F32, in, 1, NULL), ST_EUNSUPPORTED);
	ck_assert_int_eq(st_convert(ST_DTYPE_F32, out, (st_dtype)-1, in, 1, NULL), ST_EUNSUPPORTED);
}
END_TEST

START_TEST(test_errors_empty)
{
	/* n == 0 touches neither buffer, so NULL is fine. */
	st_convert_stats s = {0, 0};

	for (int si = 0; si < FLOATS; si++)
		for (int di = 0; di < FLOATS; di++) {
			ck_assert_int_eq(st_convert(floats[di], NULL, floats[si], NULL, 0, &s), ST_OK);
			ck_assert_int_eq(st__convert_scalar(floats[di], NULL, floats[si], NULL, 0, &s), ST_OK);
		}
	ck_assert_uint_eq(s.overflow + s.underflow, 0);
}
END_TEST

START_TEST(test_errors_bad_isa)
{
	unsigned char b[8] = {0};

	ck_assert_int_eq(st__convert_isa(99, ST_DTYPE_F16, b, ST_DTYPE_F32, b, 1, NULL), ST_EUNSUPPORTED);
	ck_assert_int_eq(st__convert_isa(-1, ST_DTYPE_F16, b, ST_DTYPE_F32, b, 1, NULL), ST_EUNSUPPORTED);
	ck_assert_int_eq(st__convert_isa(ISA_SCALAR, ST_DTYPE_F16, b, ST_DTYPE_F32, b, 1, NULL), ST_OK);
}
END_TEST

static Suite *dtype_suite(void)
{
	Suite *s = suite_create("dtype");
	TCase *tc;

	tc = tcase_create("names");
	tcase_add_test(tc, test_names_table);
	tcase_add_test(tc, test_names_not_terminated);
	tcase_add_test(tc, test_names_exact);
	tcase_add_test(tc, test_names_out_of_range);
	suite_add_tcase(s, tc);

	tc = tcase_create("scalar");
	tcase_add_unchecked_fixture(tc, NULL, streams_teardown);
	tcase_add_test(tc, test_scalar_samples);
	tcase_add_test(tc, test_scalar_digests);
	tcase_add_test(tc, test_scalar_exhaustive16);
	tcase_add_test(tc, test_roundtrip16_all_paths);
	tcase_add_test(tc, test_scalar_double_rounding);
	tcase_add_test(tc, test_scalar_huge_f64);
	suite_add_tcase(s, tc);

	tc = tcase_create("convert");
	tcase_add_unchecked_fixture(tc, NULL, streams_teardown);
	tcase_add_test(tc, test_convert_digests);
	tcase_add_test(tc, test_convert_stats_accumulate);
	tcase_add_test(tc, test_convert_same_type);
	tcase_add_test(tc, test_convert_in_place);
	suite_add_tcase(s, tc);

	tc = tcase_create("vector");
	tcase_add_unchecked_fixture(tc, NULL, streams_teardown);
	tcase_add_loop_test(tc, test_vector_streams, 0, 2);
	tcase_add_loop_test(tc, test_vector_tails, 0, 2);
	tcase_add_loop_test(tc, test_vector_large_unaligned, 0, 2);
	tcase_add_loop_test(tc, test_vector_in_place, 0, 2);
	tcase_add_test(tc, test_vector_mxcsr);
	suite_add_tcase(s, tc);

	tc = tcase_create("f8");
	tcase_add_unchecked_fixture(tc, NULL, streams_teardown);
	tcase_add_test(tc, test_f8_decode_table);
	tcase_add_test(tc, test_f8_decode_convert);
	tcase_add_test(tc, test_f4_packing);
	tcase_add_test(tc, test_f8_encode_table);
	tcase_add_test(tc, test_f8_encode_edges);
	tcase_add_test(tc, test_f8_e4m3_kernels);
	tcase_add_test(tc, test_f8_roundtrip);
	tcase_add_loop_test(tc, test_f8_vector_streams, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_errors_unsupported);
	tcase_add_test(tc, test_errors_empty);
	tcase_add_test(tc, test_errors_bad_isa);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dtype_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
