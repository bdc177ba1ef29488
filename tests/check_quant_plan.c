/*
 * check_quant_plan.c - unit tests for libst/quant_plan.c: pairing scaled
 * weights with their scales by name, dequantizing any element range (as
 * st_stream cuts them, across row boundaries) to the same bytes as
 * libst's whole-tensor dequantization, which check_quant tests against
 * the numpy reference; and what quantizing selects, names and writes in
 * ranges, against st_quant_fp8_quantize of the whole tensor.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <st.h>

static char g_path[64];

/* A file of named tensors with fixed bytes; returns the open checkpoint. */
static st_checkpoint *make(const char *const *names, const st_dtype *types, const unsigned *ndims,
                           const uint64_t (*shapes)[4], size_t n)
{
	st_writer *w;
	st_error e;
	snprintf(g_path, sizeof g_path, "/tmp/check_quant_plan.%d.safetensors", (int)getpid());
	ck_assert_int_eq(st_writer_new(&w, &e), ST_OK);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(st_writer_add(w, names[i], strlen(names[i]), types[i], ndims[i], shapes[i], &e),
		                 ST_OK);
	ck_assert_int_eq(st_writer_open(w, g_path, &e), ST_OK);
	for (size_t i = 0; i < st_writer_n_tensors(w); i++) {
		const st_tensor *t = st_writer_tensor(w, i);
		unsigned char *b = malloc(t->n_bytes + 1);
		ck_assert(b != NULL);
		for (uint64_t k = 0; k < t->n_bytes; k++)
			b[k] = (unsigned char)(k * 37 + 11);
		if (t->dtype == ST_DTYPE_F32) /* sane scales: 0.5 .. 4 */
			for (uint64_t k = 0; k < t->n_elements; k++) {
				float v = 0.5f + (float)(k % 8) * 0.5f;
				memcpy(b + 4 * k, &v, 4);
			}
		ck_assert_int_eq(st_writer_write(w, b, t->n_bytes, &e), ST_OK);
		free(b);
	}
	ck_assert_int_eq(st_writer_finish(w, &e), ST_OK);
	st_writer_free(w);
	st_checkpoint *c;
	ck_assert_msg(st_checkpoint_open(&c, g_path, 0, &e) == ST_OK, "%s", e.message);
	return c;
}

START_TEST(test_ranges)
{
	static const char *const names[] = {"a.weight", "a.weight_scale_inv", "e_blocks", "e_scales", "n.weight"};
	static const st_dtype types[] = {ST_DTYPE_F8_E4M3, ST_DTYPE_F32, ST_DTYPE_U8, ST_DTYPE_U8, ST_DTYPE_BF16};
	static const unsigned nd[] = {2, 2, 4, 3, 1};
	static const uint64_t shapes[][4] = {{13, 29}, {5, 4}, {2, 3, 2, 16}, {2, 3, 2}, {7}};
	st_checkpoint *c = make(names, types, nd, shapes, 5);
	st_quant_plan p;
	st_error e;

	ck_assert_msg(st_quant_plan_build(&p, c, 3, 8, &e) == 0, "%s", e.message);
	ck_assert_uint_eq(p.n_fp8, 1);
	ck_assert_uint_eq(p.n_mxfp4, 1);
	ck_assert_uint_eq(p.n_scales, 2);
	for (size_t i = 0; i < p.n; i++) {
		const st_quant_tensor *t = &p.t[i];
		const st_tensor *st = st_checkpoint_tensor(c, i, NULL);
		if (t->role != ST_QUANT_ROLE_FP8 && t->role != ST_QUANT_ROLE_MXFP4) {
			ck_assert(t->role == ST_QUANT_ROLE_SCALE || !strcmp(st->name, "n.weight"));
			continue;
		}
		unsigned char *in = malloc(st->n_bytes + 1), *ref = malloc(t->n_out * 2 + 1),
		              *got = malloc(t->n_out * 2 + 1), *scratch = malloc(ST_QUANT_SCRATCH(p.max_row));
		ck_assert(in && ref && got && scratch);
		ck_assert_int_eq(st_checkpoint_read(c, i, 0, in, st->n_bytes, &e), ST_OK);
		uint64_t rows = t->n_out / t->row_len;
		if (t->role == ST_QUANT_ROLE_FP8)
			ck_assert_int_eq(st_quant_fp8_dequant(&t->fp8, ST_DTYPE_BF16, ref, in, t->scale_data, 0, rows),
			                 ST_OK);
		else
			ck_assert_int_eq(st_quant_mxfp4_dequant(&t->mx, ST_DTYPE_BF16, ref, t->data, t->scale_data, 0,
			                                        rows),
			                 ST_OK);
		/* Every cut into two or three pieces of steps 1..row+2. */
		for (uint64_t step = 1; step <= t->row_len + 2; step++) {
			memset(got, 0xA5, t->n_out * 2 + 1);
			for (uint64_t f = 0; f < t->n_out; f += step) {
				uint64_t k = t->n_out - f < step ? t->n_out - f : step;
				st_quant_range(t, ST_DTYPE_BF16, got + f * 2, t->role == ST_QUANT_ROLE_FP8 ? in + f : NULL, f, k, scratch);
			}
			ck_assert_msg(memcmp(got, ref, t->n_out * 2) == 0, "%s: pieces of %llu differ", st->name,
			              (unsigned long long)step);
			ck_assert_uint_eq(got[t->n_out * 2], 0xA5);
		}
		free(in);
		free(ref);
		free(got);
		free(scratch);
	}
	long eb = st_checkpoint_find(c, "e_blocks", 8);
	ck_assert_int_ge(eb, 0);
	ck_assert_str_eq(p.t[eb].out_name, "e");
	ck_assert_uint_eq(p.t[eb].out_shape[0], 2);
	ck_assert_uint_eq(p.t[eb].out_shape[1], 64);
	ck_assert_uint_eq(p.t[eb].out_shape[2], 3);
	char line[256];
	st_quant_plan_describe(&p, line, sizeof line);
	ck_assert_str_eq(line, "dequantized 1 FP8 weight (blocks 3x8), 1 MXFP4 weight; 2 scale tensors "
	                       "(92 bytes) folded in");
	st_quant_plan_free(&p);
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

START_TEST(test_mismatches)
{
	static const char *const n1[] = {"a.weight", "b.weight", "b.weight_scale"};
	static const st_dtype t1[] = {ST_DTYPE_F8_E4M3, ST_DTYPE_F8_E4M3, ST_DTYPE_F32};
	static const unsigned d1[] = {2, 2, 0};
	static const uint64_t s1[][4] = {{2, 2}, {2, 2}, {0}};
	static const char *const n2[] = {"x.weight_scale_inv"};
	static const st_dtype t2[] = {ST_DTYPE_F32};
	static const unsigned d2[] = {0};
	static const uint64_t s2[][4] = {{0}};
	static const char *const n3[] = {"a.weight", "b.weight"};
	st_quant_plan p;
	st_error e;

	st_checkpoint *c = make(n1, t1, d1, s1, 3);
	ck_assert_int_eq(st_quant_plan_build(&p, c, 128, 128, &e), ST_EFORMAT);
	ck_assert_msg(strstr(e.message, "weight 'a.weight' has no scale 'a.weight_scale_inv'"), "%s", e.message);
	st_quant_plan_free(&p);
	st_checkpoint_close(c);
	c = make(n2, t2, d2, s2, 1);
	ck_assert_int_eq(st_quant_plan_build(&p, c, 128, 128, &e), ST_EFORMAT);
	ck_assert_msg(strstr(e.message, "scale 'x.weight_scale_inv' has no weight 'x.weight'"), "%s", e.message);
	st_quant_plan_free(&p);
	st_checkpoint_close(c);
	/* F8 weights and no scales anywhere: plain tensors, nothing paired. */
	c = make(n3, t1, d1, s1, 2);
	ck_assert_int_eq(st_quant_plan_build(&p, c, 128, 128, &e), 0);
	ck_assert_uint_eq(p.n_fp8 + p.n_mxfp4 + p.n_scales, 0);
	st_quant_plan_free(&p);
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

/* The messages st_quant_plan_inspect reported, one per line. */
struct reports {
	char text[8192];
	size_t len;
	int n;
};

static void collect(void *ctx, const char *message)
{
	struct reports *r = ctx;
	int k = snprintf(r->text + r->len, sizeof r->text - r->len, "%s\n", message);
	ck_assert(k > 0 && (size_t)k < sizeof r->text - r->len);
	r->len += (size_t)k;
	r->n++;
}

/* How many reported lines contain every one of the strings. */
static int reported(const struct reports *r, const char *a, const char *b)
{
	int n = 0;
	for (const char *line = r->text; *line;) {
		const char *end = strchr(line, '\n');
		char buf[1024];
		size_t len = (size_t)(end - line);
		ck_assert(len < sizeof buf);
		memcpy(buf, line, len);
		buf[len] = 0;
		if (strstr(buf, a) && (!b || strstr(buf, b)))
			n++;
		line = end + 1;
	}
	return n;
}

START_TEST(inspect_pairs_without_mapping)
{
	static const char *const names[] = {"a.weight", "a.weight_scale_inv", "e_blocks", "e_scales", "n.weight"};
	static const st_dtype types[] = {ST_DTYPE_F8_E4M3, ST_DTYPE_F32, ST_DTYPE_U8, ST_DTYPE_U8, ST_DTYPE_BF16};
	static const unsigned nd[] = {2, 2, 4, 3, 1};
	static const uint64_t shapes[][4] = {{13, 29}, {5, 4}, {2, 3, 2, 16}, {2, 3, 2}, {7}};
	st_checkpoint *c = make(names, types, nd, shapes, 5);
	struct reports r = {{0}, 0, 0};
	st_quant_plan p;
	st_error e;

	ck_assert_int_eq(st_quant_plan_inspect(&p, c, 3, 8, collect, &r, &e), 0);
	ck_assert_int_eq(r.n, 0);
	ck_assert_uint_eq(p.n_problems, 0);
	ck_assert_uint_eq(p.n_fp8, 1);
	ck_assert_uint_eq(p.n_mxfp4, 1);
	ck_assert_uint_eq(p.n_scales, 2);
	ck_assert_uint_eq(p.scale_bytes, 5 * 4 * 4 + 2 * 3 * 2);
	/* 13 x 29 codes, 2 x 3 x 2 blocks of 32 values, 7 BF16; no scales. */
	ck_assert_uint_eq(p.parameters, 13 * 29 + 2 * 3 * 2 * 32 + 7);
	for (size_t i = 0; i < p.n; i++) {
		ck_assert(p.t[i].data == NULL);
		ck_assert(p.t[i].scale_data == NULL);
	}
	/* st_quant_plan_build counts the same. */
	st_quant_plan b;
	ck_assert_msg(st_quant_plan_build(&b, c, 3, 8, &e) == 0, "%s", e.message);
	ck_assert_uint_eq(b.parameters, p.parameters);
	ck_assert_uint_eq(b.scale_bytes, p.scale_bytes);
	st_quant_plan_free(&b);
	st_quant_plan_free(&p);
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

START_TEST(inspect_reports_every_mismatch)
{
	static const char *const names[] = {
	    "a.weight",                                  /* no scale */
	    "b.weight_scale_inv",                        /* no weight */
	    "c.weight", "c.weight_scale_inv",            /* 2 x 2 blocks need [2, 2] */
	    "d.weight", "d.weight_scale",                /* an I32 scale */
	    "h.weight", "h.weight_scale",                /* a BF16 weight */
	    "k.weight", "k.weight_scale_inv", "k.weight_scale", /* a second scale */
	    "m_blocks",                                  /* no scales */
	    "q_scales",                                  /* no blocks */
	    "r_blocks", "r_scales",                      /* scales of 1 row, blocks of 2 */
	};
	static const st_dtype types[] = {
	    ST_DTYPE_F8_E4M3, ST_DTYPE_F32, ST_DTYPE_F8_E4M3, ST_DTYPE_F32, ST_DTYPE_F8_E4M3,
	    ST_DTYPE_I32, ST_DTYPE_BF16, ST_DTYPE_F32, ST_DTYPE_F8_E4M3, ST_DTYPE_F32,
	    ST_DTYPE_F32, ST_DTYPE_U8, ST_DTYPE_U8, ST_DTYPE_U8, ST_DTYPE_U8,
	};
	static const unsigned nd[] = {2, 0, 2, 2, 2, 0, 2, 0, 2, 0, 0, 4, 3, 4, 3};
	static const uint64_t shapes[][4] = {
	    {2, 2}, {0}, {4, 4}, {3, 3}, {2, 2}, {0}, {2, 2}, {0}, {2, 2}, {0}, {0},
	    {1, 1, 1, 16}, {1, 1, 1}, {1, 2, 1, 16}, {1, 1, 1},
	};
	st_checkpoint *c = make(names, types, nd, shapes, sizeof names / sizeof names[0]);
	struct reports r = {{0}, 0, 0};
	st_quant_plan p;
	st_error e;

	ck_assert_int_eq(st_quant_plan_inspect(&p, c, 2, 2, collect, &r, &e), 0);
	ck_assert_msg(r.n == 9, "%d reports:\n%s", r.n, r.text);
	ck_assert_uint_eq(p.n_problems, 9);
	ck_assert_msg(reported(&r, "weight 'a.weight' has no scale 'a.weight_scale_inv'", NULL) == 1, "%s", r.text);
	ck_assert_msg(reported(&r, "scale 'b.weight_scale_inv' has no weight 'b.weight'", NULL) == 1, "%s", r.text);
	ck_assert_msg(reported(&r, "scale 'c.weight_scale_inv' F32 [3, 3] does not fit weight 'c.weight' "
	                           "F8_E4M3 [4, 4]: block 2 x 2 needs [2, 2]", NULL) == 1, "%s", r.text);
	ck_assert_msg(reported(&r, "scale 'd.weight_scale' I32 []", "'d.weight'") == 1, "%s", r.text);
	ck_assert_msg(reported(&r, "scale 'h.weight_scale' has no F8 weight: 'h.weight' is BF16 [2, 2]", NULL) == 1,
	              "%s", r.text);
	ck_assert_msg(reported(&r, "scale 'k.weight_scale' is a second scale of weight 'k.weight', which has "
	                           "'k.weight_scale_inv'", NULL) == 1, "%s", r.text);
	ck_assert_msg(reported(&r, "MXFP4 blocks 'm_blocks' has no scale 'm_scales'", NULL) == 1, "%s", r.text);
	ck_assert_msg(reported(&r, "MXFP4 scale 'q_scales' has no weight 'q_blocks'", NULL) == 1, "%s", r.text);
	ck_assert_msg(reported(&r, "MXFP4 scales 'r_scales' U8 [1, 1, 1] do not fit blocks 'r_blocks'", NULL) == 1,
	              "%s", r.text);
	/* Only k pairs; the broken weights stay plain, their scales scales. */
	ck_assert_uint_eq(p.n_fp8, 1);
	ck_assert_uint_eq(p.n_mxfp4, 0);
	ck_assert_uint_eq(p.n_scales, 8);
	ck_assert_uint_eq(p.scale_bytes, 4 + 36 + 4 + 4 + 4 + 4 + 1 + 1);
	/* a, c, d, h, k weights (4 + 16 + 4 + 4 + 4), m and r blocks (16 + 32). */
	ck_assert_uint_eq(p.parameters, 80);
	long k = st_checkpoint_find(c, "k.weight", 8);
	ck_assert_int_ge(k, 0);
	ck_assert(p.t[k].role == ST_QUANT_ROLE_FP8);
	ck_assert(p.t[k].fp8.kind == ST_QUANT_TENSOR);
	for (size_t i = 0; i < p.n; i++)
		if ((long)i != k)
			ck_assert(p.t[i].role == ST_QUANT_ROLE_PLAIN || p.t[i].role == ST_QUANT_ROLE_SCALE);
	st_quant_plan_free(&p);
	/* Without a callback the mismatches are only counted. */
	ck_assert_int_eq(st_quant_plan_inspect(&p, c, 2, 2, NULL, NULL, &e), 0);
	ck_assert_uint_eq(p.n_problems, 9);
	ck_assert_uint_eq(p.n_fp8, 1);
	st_quant_plan_free(&p);
	/* st_quant_plan_build stops at the first of them: one of the same lines. */
	ck_assert_int_eq(st_quant_plan_build(&p, c, 2, 2, &e), ST_EFORMAT);
	ck_assert_int_eq(e.code, ST_EFORMAT);
	ck_assert_msg(reported(&r, e.message, NULL) == 1, "%s", e.message);
	st_quant_plan_free(&p);
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

START_TEST(layouts_grouped_and_described)
{
	static const char *const names[] = {
	    "x.weight", "x.weight_scale_inv", "y.weight", "y.weight_scale_inv", "z.weight",
	    "z.weight_scale", "t.weight", "t.weight_scale", "u.weight", "u.weight_scale_inv",
	    "e_blocks", "e_scales", "norm.weight",
	};
	static const st_dtype types[] = {
	    ST_DTYPE_F8_E4M3, ST_DTYPE_F32, ST_DTYPE_F8_E4M3, ST_DTYPE_F32, ST_DTYPE_F8_E4M3,
	    ST_DTYPE_F32, ST_DTYPE_F8_E5M2, ST_DTYPE_BF16, ST_DTYPE_F8_E4M3, ST_DTYPE_F8_E8M0,
	    ST_DTYPE_U8, ST_DTYPE_U8, ST_DTYPE_F32,
	};
	static const unsigned nd[] = {2, 2, 2, 2, 2, 2, 2, 0, 3, 3, 4, 3, 1};
	static const uint64_t shapes[][4] = {
	    {4, 6}, {2, 2}, {2, 3}, {1, 1}, {4, 6}, {4, 1}, {4, 6}, {0}, {2, 4, 6}, {2, 2, 2},
	    {2, 3, 2, 16}, {2, 3, 2}, {6},
	};
	st_checkpoint *c = make(names, types, nd, shapes, sizeof names / sizeof names[0]);
	struct reports r = {{0}, 0, 0};
	st_quant_plan p;
	st_quant_layout *l;
	size_t n;
	st_error e;
	char line[256];

	ck_assert_int_eq(st_quant_plan_inspect(&p, c, 2, 3, collect, &r, &e), 0);
	ck_assert_msg(r.n == 0, "%s", r.text);
	ck_assert_int_eq(st_quant_plan_layouts(&p, c, &l, &n), 0);
	/* In the order of each layout's first weight: the file's order, by
	 * descending dtype rank (F8_E4M3, F8_E5M2, U8), then by name. */
	static const char *const want[] = {
	    "FP8 E4M3, block-scaled 2x3, 1 expert weight (3-D) with E8M0 scales",
	    "FP8 E4M3, block-scaled 2x3, 2 weights with F32 scales",
	    "FP8 E4M3, scaled per channel, 1 weight with F32 scales",
	    "FP8 E5M2, scaled per tensor, 1 weight with BF16 scales",
	    "MXFP4 (E2M1 blocks of 32 with E8M0 scales), 1 expert weight",
	};
	static const uint64_t params[] = {48, 24 + 6, 24, 24, 2 * 2 * 32 * 3};
	static const uint64_t sbytes[] = {8, 16 + 4, 16, 2, 12};
	ck_assert_uint_eq(n, 5);
	for (size_t i = 0; i < n; i++) {
		st_quant_layout_describe(&l[i], line, sizeof line);
		ck_assert_str_eq(line, want[i]);
		ck_assert_uint_eq(l[i].parameters, params[i]);
		ck_assert_uint_eq(l[i].scale_bytes, sbytes[i]);
	}
	ck_assert_uint_eq(l[1].block_rows, 2);
	ck_assert_uint_eq(l[1].block_cols, 3);
	ck_assert(l[4].role == ST_QUANT_ROLE_MXFP4 && l[4].weight_type == ST_DTYPE_F4 &&
	          l[4].scale_type == ST_DTYPE_F8_E8M0 && l[4].block_cols == 32);
	ck_assert_uint_eq(p.parameters, 48 + 30 + 24 + 24 + 384 + 6);
	free(l);
	st_quant_plan_free(&p);
	/* Nothing paired: no layouts. */
	static const char *const plain[] = {"norm.weight"};
	static const st_dtype pt[] = {ST_DTYPE_F32};
	static const unsigned pn[] = {1};
	static const uint64_t ps[][4] = {{6}};
	st_checkpoint_close(c);
	c = make(plain, pt, pn, ps, 1);
	ck_assert_int_eq(st_quant_plan_inspect(&p, c, 128, 128, collect, &r, &e), 0);
	ck_assert_int_eq(st_quant_plan_layouts(&p, c, &l, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert(l == NULL);
	ck_assert_uint_eq(p.parameters, 6);
	st_quant_plan_free(&p);
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

/* ---- quantizing --------------------------------------------------------------- */

START_TEST(target_wanted_selects_2d_float_weights)
{
	static const char *const names[] = {"a.weight", "lm_head.weight", "b.bias",   "norm.weight",
	                                    "f8.weight", "ids.weight",    "e.weight", "h.weight"};
	static const st_dtype types[] = {ST_DTYPE_F32,     ST_DTYPE_BF16, ST_DTYPE_F32, ST_DTYPE_F32,
	                                 ST_DTYPE_F8_E4M3, ST_DTYPE_I32,  ST_DTYPE_F16, ST_DTYPE_F64};
	static const unsigned ndims[] = {2, 2, 2, 1, 2, 2, 3, 2};
	static const uint64_t shapes[][4] = {{2, 3}, {2, 3}, {2, 3}, {3}, {2, 3}, {2, 3}, {2, 2, 3}, {1, 1}};
	static const int wanted[] = {1, 1, 0, 0, 0, 0, 0, 1};
	st_checkpoint *c = make(names, types, ndims, shapes, 8);
	for (size_t i = 0; i < 8; i++) {
		long k = st_checkpoint_find(c, names[i], strlen(names[i]));
		ck_assert_int_ge(k, 0);
		ck_assert_msg(st_quant_target_wanted(st_checkpoint_tensor(c, (size_t)k, NULL)) == wanted[i],
		              "%s", names[i]);
	}
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

START_TEST(target_prepare_names_scale_after_weight)
{
	static const char *const names[] = {"x.weight"};
	static const st_dtype types[] = {ST_DTYPE_F32};
	static const unsigned ndims[] = {2};
	static const uint64_t shapes[][4] = {{5, 7}};
	st_checkpoint *c = make(names, types, ndims, shapes, 1);
	st_quant_target q;
	st_error e;
	ck_assert_int_eq(st_quant_target_prepare(&q, c, 0, 2, 3, &e), ST_OK);
	ck_assert_str_eq(q.scale_name, "x.weight_scale_inv");
	ck_assert_uint_eq(q.scale_name_len, strlen("x.weight_scale_inv"));
	ck_assert_uint_eq(q.scale_shape[0], 3); /* ceil(5 / 2) */
	ck_assert_uint_eq(q.scale_shape[1], 3); /* ceil(7 / 3) */
	ck_assert_uint_eq(q.l.rows, 5);
	ck_assert_uint_eq(q.l.cols, 7);
	ck_assert(q.src_type == ST_DTYPE_F32 && q.l.weight_type == ST_DTYPE_F8_E4M3);
	/* A block row's input (2 x 7 F32), codes and scales, each 8-aligned. */
	ck_assert_uint_eq(st_quant_target_scratch(&q), 16 + 16 + 2 * 7 * 4);
	st_quant_target_free(&q);
	ck_assert_ptr_null(q.scale_name);
	/* A block side of 0: refused, naming file and tensor. */
	ck_assert_int_eq(st_quant_target_prepare(&q, c, 0, 0, 3, &e), ST_EINVAL);
	ck_assert_int_eq(e.code, ST_EINVAL);
	ck_assert_msg(strstr(e.message, g_path) && strstr(e.message, "tensor 'x.weight': cannot quantize"),
	              "%s", e.message);
	ck_assert_int_eq(st_quant_target_prepare(&q, c, 0, 2, 3, NULL), ST_OK);
	st_quant_target_free(&q);
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

/* Every range of the weight and of its scales: the whole tensor's bytes. */
START_TEST(target_ranges_match_whole_tensor_quantized)
{
	static const char *const names[] = {"x.weight", "y.weight"};
	static const st_dtype types[] = {ST_DTYPE_F32, ST_DTYPE_BF16};
	static const unsigned ndims[] = {2, 2};
	static const uint64_t shapes[][4] = {{5, 7}, {4, 6}};
	st_checkpoint *c = make(names, types, ndims, shapes, 2);
	st_error e;
	for (size_t j = 0; j < 2; j++) {
		long at = st_checkpoint_find(c, names[j], strlen(names[j]));
		ck_assert_int_ge(at, 0);
		size_t i = (size_t)at;
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		st_quant_target q;
		ck_assert_int_eq(st_quant_target_prepare(&q, c, i, 2, 3, &e), ST_OK);
		uint64_t n = q.l.rows * q.l.cols, ns = q.scale_shape[0] * q.scale_shape[1];
		unsigned char *src = malloc(t->n_bytes), *codes = malloc(n), *out = malloc(n * 4 + 4);
		float *scales = malloc(ns * 4);
		void *scratch = malloc(st_quant_target_scratch(&q));
		ck_assert(src && codes && out && scales && scratch);
		ck_assert_int_eq(st_checkpoint_read(c, i, 0, src, t->n_bytes, &e), ST_OK);
		ck_assert_int_eq(st_quant_fp8_quantize(&q.l, codes, scales, t->dtype, src, 0, q.l.rows),
		                 ST_OK);
		for (uint64_t first = 0; first < n; first++)
			for (uint64_t k = 1; first + k <= n; k += 5) {
				ck_assert_int_eq(st_quant_target_range(&q, 0, out, first, k, scratch, &e), ST_OK);
				ck_assert_msg(memcmp(out, codes + first, k) == 0, "%s: codes [%llu, +%llu)",
				              names[j], (unsigned long long)first, (unsigned long long)k);
			}
		for (uint64_t first = 0; first < ns; first++)
			for (uint64_t k = 1; first + k <= ns; k++) {
				ck_assert_int_eq(st_quant_target_range(&q, 1, out, first, k, scratch, &e), ST_OK);
				ck_assert_msg(memcmp(out, scales + first, k * 4) == 0, "%s: scales [%llu, +%llu)",
				              names[j], (unsigned long long)first, (unsigned long long)k);
			}
		/* Nothing asked: nothing written. */
		out[0] = 0xa5;
		ck_assert_int_eq(st_quant_target_range(&q, 0, out, 3, 0, scratch, &e), ST_OK);
		ck_assert_uint_eq(out[0], 0xa5);
		free(src);
		free(codes);
		free(out);
		free(scales);
		free(scratch);
		st_quant_target_free(&q);
	}
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

/* The one list of scale names, as stdiff and the pairing read it. */
START_TEST(scale_names_are_fp8_and_u8_mxfp4_scales)
{
	static const char *const names[] = {"a.weight_scale_inv", "b.weight_scale", "c_scales",
	                                    "d_scales",           "e.input_scale",  "f.weight"};
	static const st_dtype types[] = {ST_DTYPE_F32, ST_DTYPE_BF16, ST_DTYPE_U8,
	                                 ST_DTYPE_F32, ST_DTYPE_F32,  ST_DTYPE_F32};
	static const unsigned ndims[] = {2, 1, 1, 1, 0, 1};
	static const uint64_t shapes[][4] = {{1, 1}, {2}, {2}, {2}, {0}, {2}};
	static const int scale[] = {1, 1, 1, 0, 0, 0};
	st_checkpoint *c = make(names, types, ndims, shapes, 6);
	for (size_t i = 0; i < 6; i++) {
		long k = st_checkpoint_find(c, names[i], strlen(names[i]));
		ck_assert_int_ge(k, 0);
		const st_tensor *t = st_checkpoint_tensor(c, (size_t)k, NULL);
		ck_assert_msg(st_quant_is_scale(t) == scale[i], "%s", names[i]);
	}
	st_checkpoint_close(c);
	unlink(g_path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dequant");
	TCase *tc = tcase_create("dequant");
	tcase_add_test(tc, test_ranges);
	tcase_add_test(tc, test_mismatches);
	tcase_add_test(tc, inspect_pairs_without_mapping);
	tcase_add_test(tc, inspect_reports_every_mismatch);
	tcase_add_test(tc, layouts_grouped_and_described);
	tcase_add_test(tc, scale_names_are_fp8_and_u8_mxfp4_scales);
	suite_add_tcase(s, tc);
	tc = tcase_create("quantize");
	tcase_add_test(tc, target_wanted_selects_2d_float_weights);
	tcase_add_test(tc, target_prepare_names_scale_after_weight);
	tcase_add_test(tc, target_ranges_match_whole_tensor_quantized);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
