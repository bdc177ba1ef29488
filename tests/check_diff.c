/*
 * check_diff.c - st/diff.h: two checkpoints compared as data (pairing,
 * planning, verdicts, the first difference) and a GPT-2 GGUF against a
 * checkpoint (st_diff_gguf_*), on small files written here. Independent
 * of stdiff's output (tests/golden/stdiff).
 */
#define TMPDIR_NAME "check_diff"
#include "tmpdir.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

/* One tensor to write. */
struct t {
	const char *name, *dtype;
	unsigned ndim;
	uint64_t shape[3];
	const void *data;
	size_t bytes;
};

/* A safetensors file of the n tensors (and __metadata__ JSON meta, or NULL). */
static void write_st(const char *path, const struct t *ts, size_t n, const char *meta)
{
	char hdr[4096];
	size_t len = 0, off = 0;
	len += (size_t)snprintf(hdr + len, sizeof hdr - len, "{");
	if (meta)
		len += (size_t)snprintf(hdr + len, sizeof hdr - len, "\"__metadata__\":%s%s",
		                        meta, n ? "," : "");
	for (size_t i = 0; i < n; i++) {
		len += (size_t)snprintf(hdr + len, sizeof hdr - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
		                        i ? "," : "", ts[i].name, ts[i].dtype);
		for (unsigned k = 0; k < ts[i].ndim; k++)
			len += (size_t)snprintf(hdr + len, sizeof hdr - len, "%s%llu", k ? "," : "",
			                        (unsigned long long)ts[i].shape[k]);
		len += (size_t)snprintf(hdr + len, sizeof hdr - len, "],\"data_offsets\":[%zu,%zu]}",
		                        off, off + ts[i].bytes);
		off += ts[i].bytes;
	}
	len += (size_t)snprintf(hdr + len, sizeof hdr - len, "}");
	while (len % 8)
		hdr[len++] = ' ';
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	uint64_t hl = len;
	unsigned char le[8];
	for (int k = 0; k < 8; k++)
		le[k] = (unsigned char)(hl >> (8 * k));
	ck_assert_uint_eq(fwrite(le, 1, 8, f), 8);
	ck_assert_uint_eq(fwrite(hdr, 1, len, f), len);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(fwrite(ts[i].data, 1, ts[i].bytes, f), ts[i].bytes);
	ck_assert_int_eq(fclose(f), 0);
}

static st_checkpoint *open_ck(const char *path)
{
	st_checkpoint *c;
	st_error err;
	ck_assert_int_eq(st_checkpoint_open(&c, path, 0, &err), ST_OK);
	return c;
}

/* Pair and compare a and b with o (NULL: defaults). */
static void run(st_diff *d, st_checkpoint *a, st_checkpoint *b, const st_diff_opts *o)
{
	st_diff_opts z;
	memset(&z, 0, sizeof z);
	st_error err;
	ck_assert_int_eq(st_diff_match(d, a, b, o ? o : &z, &err), ST_OK);
	ck_assert_int_eq(st_diff_values(d, o ? o : &z, &err), ST_OK);
}

/* a.safetensors and b.safetensors of ta and tb, paired and compared. */
static void diff_files(st_diff *d, const struct t *ta, size_t na, const struct t *tb,
                       size_t nb, const st_diff_opts *o)
{
	write_st(path_in("a.safetensors"), ta, na, NULL);
	write_st(path_in("b.safetensors"), tb, nb, NULL);
	run(d, open_ck(path_in("a.safetensors")), open_ck(path_in("b.safetensors")), o);
}

/* The same checkpoints again, with o. */
static void rerun(st_diff *d, const st_diff_opts *o)
{
	st_checkpoint *a = d->ca, *b = d->cb;
	st_diff_free(d);
	run(d, a, b, o);
}

/* Free d and close its checkpoints. */
static void done(st_diff *d)
{
	st_checkpoint *a = d->ca, *b = d->cb;
	st_diff_free(d);
	st_checkpoint_close(a);
	st_checkpoint_close(b);
}

static const st_diff_pair *pair_named(const st_diff *d, const char *key)
{
	for (size_t i = 0; i < d->n_pairs; i++)
		if (d->pairs[i].a->key_len == strlen(key) &&
		    !memcmp(d->pairs[i].a->key, key, strlen(key)))
			return &d->pairs[i];
	ck_abort_msg("no pair %s", key);
	return NULL;
}

static const float v4[4] = {1.0f, -2.5f, 3.25f, 0.125f};
static const float w4[4] = {1.0f, -2.5f, 3.25f, 0.25f};

START_TEST(names_pair_across_shards)
{
	struct t x = {"x", "F32", 1, {4}, v4, sizeof v4};
	struct t y = {"y", "F32", 2, {2, 2}, w4, sizeof w4};
	write_st(path_in("a-00001-of-00002.safetensors"), &x, 1, NULL);
	write_st(path_in("a-00002-of-00002.safetensors"), &y, 1, NULL);
	write_text(path_in("a.safetensors.index.json"),
	           "{\"metadata\": {}, \"weight_map\": {\"x\": \"a-00001-of-00002.safetensors\","
	           " \"y\": \"a-00002-of-00002.safetensors\"}}");
	struct t both[2] = {y, x};
	write_st(path_in("b.safetensors"), both, 2, NULL);
	st_checkpoint *a = open_ck(path_in("a.safetensors.index.json"));
	st_checkpoint *b = open_ck(path_in("b.safetensors"));
	st_diff d;
	run(&d, a, b, NULL);
	ck_assert_uint_eq(d.n_pairs, 2);
	ck_assert_uint_eq(d.n_only_a + d.n_only_b, 0);
	ck_assert(d.equal);
	ck_assert_uint_eq(d.n_identical, 2);
	ck_assert_int_eq(pair_named(&d, "y")->verdict, ST_DIFF_IDENTICAL);
	ck_assert_uint_eq(d.value_bytes, 2 * (sizeof v4 + sizeof w4));
	done(&d);
}
END_TEST

START_TEST(only_in_a_listed_in_name_order)
{
	struct t ta[4] = {{"zeta", "F32", 1, {4}, v4, 16}, {"beta", "F32", 1, {4}, v4, 16},
	                  {"mid", "F32", 1, {4}, v4, 16}, {"alpha", "F32", 1, {4}, v4, 16}};
	struct t tb[2] = {{"mid", "F32", 1, {4}, v4, 16}, {"omega", "F32", 1, {4}, v4, 16}};
	st_diff d;
	diff_files(&d, ta, 4, tb, 2, NULL);
	ck_assert_uint_eq(d.n_only_a, 3);
	ck_assert_str_eq(d.only_a[0]->t->name, "alpha");
	ck_assert_str_eq(d.only_a[1]->t->name, "beta");
	ck_assert_str_eq(d.only_a[2]->t->name, "zeta");
	ck_assert_uint_eq(d.n_only_b, 1);
	ck_assert_str_eq(d.only_b[0]->t->name, "omega");
	ck_assert_uint_eq(d.n_pairs, 1);
	ck_assert(!d.equal);
	/* A's own order: zeta (0) is only in A, mid (2) is paired. */
	bool only;
	ck_assert_ptr_null(st_diff_of_a(&d, 0, &only));
	ck_assert(only);
	ck_assert_ptr_nonnull(st_diff_of_a(&d, 2, &only));
	ck_assert(!only);
	done(&d);
}
END_TEST

START_TEST(exact_requires_same_bits)
{
	const float za[2] = {0.0f, 1.0f}, zb[2] = {-0.0f, 1.0f};
	const double wide[2] = {0.0, 1.0};
	struct t ta[2] = {{"z", "F32", 1, {2}, za, 8}, {"w", "F32", 1, {2}, za, 8}};
	struct t tb[2] = {{"z", "F32", 1, {2}, zb, 8}, {"w", "F64", 1, {2}, wide, 16}};
	st_diff d;
	diff_files(&d, ta, 2, tb, 2, NULL);
	/* By value: -0 equals +0, and F64 holds F32's values. */
	ck_assert(d.equal);
	ck_assert_int_eq(pair_named(&d, "z")->verdict, ST_DIFF_WITHIN);
	ck_assert(!pair_named(&d, "w")->differs);
	ck_assert_uint_eq(d.n_dtype, 1);
	st_diff_opts o = {.exact = true};
	rerun(&d, &o);
	ck_assert(!d.equal);
	const st_diff_pair *z = pair_named(&d, "z");
	ck_assert_int_eq(z->verdict, ST_DIFF_DIFFERENT);
	ck_assert_uint_eq(z->st.mismatched, 1);
	ck_assert_uint_eq(z->st.worst_index, 0);
	ck_assert(pair_named(&d, "w")->differs); /* another dtype is another bit */
	ck_assert_uint_eq(d.n_differ, 2);
	done(&d);
}
END_TEST

START_TEST(narrower_side_rounded_is_rounded)
{
	const float f[4] = {1.1f, -3.3f, 1e-3f, 65504.0f};
	uint16_t bf[4], off[4];
	st_convert(ST_DTYPE_BF16, bf, ST_DTYPE_F32, f, 4, NULL);
	memcpy(off, bf, sizeof off);
	off[1] ^= 1; /* one ulp off: still within BF16's tolerance */
	struct t ta[2] = {{"r", "F32", 1, {4}, f, 16}, {"s", "F32", 1, {4}, f, 16}};
	struct t tb[2] = {{"r", "BF16", 1, {4}, bf, 8}, {"s", "BF16", 1, {4}, off, 8}};
	st_diff d;
	diff_files(&d, ta, 2, tb, 2, NULL);
	ck_assert_int_eq(pair_named(&d, "r")->verdict, ST_DIFF_ROUNDED);
	ck_assert(pair_named(&d, "r")->spec.a_is_wide);
	ck_assert_int_eq(pair_named(&d, "s")->verdict, ST_DIFF_WITHIN);
	ck_assert(d.equal);
	/* One summary entry F32 -> BF16: 2 tensors, 1 exactly rounded. */
	ck_assert_uint_eq(d.dtypes.n, 1);
	ck_assert_uint_eq(d.dtypes.pair[0].tensors, 2);
	ck_assert_uint_eq(d.dtypes.pair[0].rounded, 1);
	done(&d);
}
END_TEST

START_TEST(quantized_side_compared_dequantized)
{
	/* E4M3 codes of 1, 2, 0.5, 4, scaled by 2 (one block: the default
	 * 128 x 128 covers [2, 2]). */
	const unsigned char codes[4] = {0x38, 0x40, 0x30, 0x48};
	const float scale = 2.0f, want[4] = {2, 4, 1, 8};
	uint16_t bf[4];
	st_convert(ST_DTYPE_BF16, bf, ST_DTYPE_F32, want, 4, NULL);
	struct t ta[3] = {{"w.weight", "F8_E4M3", 2, {2, 2}, codes, 4},
	                  {"w.weight_scale_inv", "F32", 2, {1, 1}, &scale, 4},
	                  {"b", "F32", 1, {4}, v4, 16}};
	struct t tb[2] = {{"w.weight", "BF16", 2, {2, 2}, bf, 8}, {"b", "F32", 1, {4}, v4, 16}};
	st_diff d;
	diff_files(&d, ta, 3, tb, 2, NULL);
	ck_assert_int_eq(d.quant_side, 0);
	ck_assert_uint_eq(d.n_only_a, 0); /* the scale is folded into its weight */
	ck_assert_uint_eq(d.n_pairs, 2);
	const st_diff_pair *p = pair_named(&d, "w.weight");
	ck_assert_ptr_nonnull(p->dq);
	ck_assert(!p->dq_b);
	ck_assert_int_eq(p->dq_to, ST_DTYPE_F32);
	ck_assert_int_eq(p->verdict, ST_DIFF_DEQUANTIZED);
	ck_assert(d.equal);
	ck_assert(d.dq_exact);
	ck_assert_str_eq(d.dq_to, "BF16");
	ck_assert_uint_eq(d.n_dq_tally, 1);
	ck_assert_str_eq(d.dq_tally[0].a, "F8_E4M3");
	ck_assert_uint_eq(d.dq_tally[0].exact, 1);
	done(&d);
}
END_TEST

/*
 * B is A quantized, by hand: amax 8, scale 8 / 448 in F32 (IEEE division
 * here), x / scale = 112, 224, 61.6, 448 rounded to E4M3 (bias 7, 3
 * mantissa bits; 61.6 between 60 and 64): 0x6E, 0x76, 0x67, 0x7E. 1.1 is
 * no E4M3 value times the scale, so B is not A's dequantization.
 */
START_TEST(quantized_b_is_a_quantized)
{
	const float x[4] = {2, 4, 1.1f, 8};
	const unsigned char codes[4] = {0x6E, 0x76, 0x67, 0x7E};
	float scale = 8.0f / 448.0f;
	struct t ta[2] = {{"w.weight", "F32", 2, {2, 2}, x, 16}, {"b", "F32", 1, {4}, v4, 16}};
	struct t tb[3] = {{"w.weight", "F8_E4M3", 2, {2, 2}, codes, 4},
	                  {"w.weight_scale_inv", "F32", 2, {1, 1}, &scale, 4},
	                  {"b", "F32", 1, {4}, v4, 16}};
	st_diff d;
	diff_files(&d, ta, 2, tb, 3, NULL);
	ck_assert_int_eq(d.quant_side, 1);
	const st_diff_pair *p = pair_named(&d, "w.weight");
	ck_assert(p->dq_b && p->q_tol && p->q_checked && p->q_exact);
	ck_assert_int_eq(p->verdict, ST_DIFF_QUANTIZED);
	/* E4M3 against F32: r = 2^-4, h = 2^-10; B the reference. */
	ck_assert_double_eq_tol(p->spec.rtol, 1.3e-6 + 1.0 / 15, 1e-15);
	ck_assert_double_eq_tol(p->spec.atol, 1e-5 + 0x1p-10 * scale * 16 / 15, 1e-15);
	ck_assert(d.equal && d.q_exact && !d.dq_exact);
	ck_assert_str_eq(d.q_to, "F8_E4M3 (128\xc3\x97" "128 blocks)");
	ck_assert_uint_eq(d.dq_tally[0].quantized, 1);
	done(&d);

	/* The scale one ulp off: within any tolerance, but not A quantized. */
	scale = nextafterf(scale, 1.0f);
	diff_files(&d, ta, 2, tb, 3, NULL);
	p = pair_named(&d, "w.weight");
	ck_assert(p->q_checked && !p->q_exact && p->differs);
	ck_assert_uint_eq(p->st.mismatched, 0);
	ck_assert_int_eq(p->verdict, ST_DIFF_DIFFERENT);
	ck_assert(!d.equal && !d.q_exact);
	/* A tolerance given judges by the values. */
	double rtol = 0.07;
	st_diff_opts o;
	memset(&o, 0, sizeof o);
	o.rtol = &rtol;
	rerun(&d, &o);
	p = pair_named(&d, "w.weight");
	ck_assert(p->q_checked && !p->q_exact && !p->differs && !p->q_tol);
	ck_assert(d.equal && !d.q_exact);
	done(&d);
}
END_TEST

/* PyTorch's tied lm_head.weight (gen_torch.py), absent from the
 * safetensors file numpy wrote without it: no difference. */
START_TEST(tied_alias_not_a_difference)
{
	st_diff d;
	st_checkpoint *a;
	st_error err;
	ck_assert_int_eq(st_checkpoint_open(&a, ST_TESTDATA "/torch/state.bin", ST_OPEN_TORCH, &err),
	                 ST_OK);
	run(&d, a, open_ck(ST_TESTDATA "/torch/state.dedup.expected.safetensors"), NULL);
	ck_assert_uint_eq(d.n_only_a, 0);
	ck_assert_uint_eq(d.n_tied, 1);
	ck_assert_int_eq(d.tied[0].side, 0);
	ck_assert_str_eq(d.tied[0].t->t->name, "lm_head.weight");
	ck_assert_str_eq(d.tied[0].of->t->name, "wte.weight");
	ck_assert(d.equal);
	bool only;
	ck_assert_ptr_null(st_diff_of_a(&d, d.tied[0].t->index, &only));
	ck_assert(!only);
	done(&d);
}
END_TEST

START_TEST(strip_prefix_clash_names_both)
{
	struct t ta[2] = {{"transformer.x", "F32", 1, {4}, v4, 16}, {"x", "F32", 1, {4}, v4, 16}};
	write_st(path_in("a.safetensors"), ta, 2, NULL);
	write_st(path_in("b.safetensors"), ta, 1, NULL);
	st_checkpoint *a = open_ck(path_in("a.safetensors"));
	st_checkpoint *b = open_ck(path_in("b.safetensors"));
	const char *pre[1] = {"transformer."};
	st_diff_opts o = {.prefixes = pre, .n_prefixes = 1};
	st_diff d;
	st_error err;
	ck_assert_int_eq(st_diff_match(&d, a, b, &o, &err), ST_EINVAL);
	ck_assert_int_eq(d.clash_side, 0);
	ck_assert_uint_eq(d.clash[0].key_len, 1);
	ck_assert(strstr(err.message, "transformer.x") != NULL);
	st_diff_free(&d);
	/* B alone strips to a key A has. */
	ck_assert_int_eq(st_diff_match(&d, b, b, &o, &err), ST_OK);
	ck_assert_uint_eq(d.n_pairs, 1);
	ck_assert_uint_eq(d.pairs[0].a->key_len, 1);
	st_diff_free(&d);
	st_checkpoint_close(a);
	st_checkpoint_close(b);
}
END_TEST

START_TEST(globs_select_keys_and_metadata_differs)
{
	struct t ta[2] = {{"h.0.w", "F32", 1, {4}, v4, 16}, {"h.1.w", "F32", 1, {4}, v4, 16}};
	struct t tb[2] = {{"h.0.w", "F32", 1, {4}, v4, 16}, {"h.1.w", "F32", 1, {4}, w4, 16}};
	write_st(path_in("a.safetensors"), ta, 2, "{\"k\":\"1\",\"only_a\":\"x\"}");
	write_st(path_in("b.safetensors"), tb, 2, "{\"k\":\"2\"}");
	st_checkpoint *a = open_ck(path_in("a.safetensors"));
	st_checkpoint *b = open_ck(path_in("b.safetensors"));
	const char *g[1] = {"h.0.*"};
	st_diff_opts o = {.globs = g, .n_globs = 1};
	st_diff d;
	run(&d, a, b, &o);
	ck_assert_uint_eq(d.n_ta, 1);
	ck_assert_uint_eq(d.n_pairs, 1);
	ck_assert(d.equal); /* h.1.w differs, but is not selected */
	ck_assert_uint_eq(d.n_meta, 2);
	ck_assert_ptr_null(d.meta[1].b); /* "only_a" sorts after "k" */
	ck_assert_int_eq(memcmp(d.meta[0].a->value, "1", 1), 0);
	bool only;
	ck_assert_ptr_null(st_diff_of_a(&d, 1, &only));
	ck_assert(!only);
	done(&d);
}
END_TEST

START_TEST(first_difference_in_given_order)
{
	struct t ta[3] = {{"a", "F32", 1, {4}, v4, 16}, {"b", "F32", 1, {4}, v4, 16},
	                  {"c", "F32", 1, {4}, v4, 16}};
	struct t tb[3] = {{"a", "F32", 1, {4}, w4, 16}, {"b", "F32", 1, {4}, v4, 16},
	                  {"c", "F32", 1, {4}, w4, 16}};
	st_diff d;
	diff_files(&d, ta, 3, tb, 3, NULL);
	const size_t order[3] = {1, 2, 0};
	size_t walked;
	ck_assert_uint_eq(st_diff_first(&d, order, 3, &walked), 1);
	ck_assert_uint_eq(walked, 2);
	ck_assert_uint_eq(d.n_differ, 2);
	ck_assert_uint_eq(st_diff_first(&d, order, 1, &walked), 1); /* none */
	done(&d);
}
END_TEST

START_TEST(results_do_not_depend_on_threads)
{
	size_t n = (size_t)3 << 18; /* several chunks */
	float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(y);
	for (size_t i = 0; i < n; i++) {
		x[i] = (float)i * 0.001f;
		y[i] = x[i] + (float)(i % 7) * 1e-4f;
	}
	struct t ta = {"t", "F32", 1, {n}, x, n * 4}, tb = {"t", "F32", 1, {n}, y, n * 4};
	st_diff d1, d4;
	st_diff_opts o1 = {.threads = 1}, o4 = {.threads = 4};
	diff_files(&d1, &ta, 1, &tb, 1, &o1);
	run(&d4, d1.ca, d1.cb, &o4);
	ck_assert(d1.pairs[0].mean_abs > 0);
	ck_assert_int_eq(memcmp(&d1.pairs[0].mean_abs, &d4.pairs[0].mean_abs, sizeof(double)), 0);
	ck_assert_uint_eq(d1.pairs[0].st.mismatched, d4.pairs[0].st.mismatched);
	ck_assert_uint_eq(d1.pairs[0].st.worst_index, d4.pairs[0].st.worst_index);
	st_diff_free(&d4);
	done(&d1);
	free(x);
	free(y);
}
END_TEST

/* ---- GGUF ----------------------------------------------------------------- */

/* A GGUF file of tensors (ggml type, dims in GGUF order, F32 values). */
struct gt {
	const char *hf; /* the GPT-2 name it maps from */
	unsigned type, ndim;
	uint64_t dims[2];
	const float *f;
};

static void write_gguf(const char *path, const struct gt *ts, size_t n)
{
	st_gguf_writer *w;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_new(&w, &err), ST_OK);
	st_gguf_value arch = {.type = ST_GGUF_STRING, .n = 4};
	arch.v.s = "gpt2";
	ck_assert_int_eq(st_gguf_writer_set(w, "general.architecture", &arch, &err), ST_OK);
	char name[8][128];
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(st_arch_gpt2_to_gguf(ts[i].hf, name[i], sizeof name[i], NULL), ST_OK);
		ck_assert_int_eq(st_gguf_writer_add_tensor(w, name[i], ts[i].type, ts[i].ndim,
		                                           ts[i].dims, &err), ST_OK);
	}
	ck_assert_int_eq(st_gguf_writer_open(w, path, &err), ST_OK);
	for (size_t i = 0; i < n; i++) {
		uint64_t e = ts[i].dims[0] * (ts[i].ndim > 1 ? ts[i].dims[1] : 1);
		unsigned blk, bytes;
		ck_assert_int_eq(st_ggml_type_block(ts[i].type, &blk, &bytes), ST_OK);
		unsigned char buf[4096];
		ck_assert_int_eq(st_ggml_from_f32(ts[i].type, ts[i].f, buf, e), ST_OK);
		ck_assert_int_eq(st_gguf_writer_write(w, buf, e / blk * bytes, &err), ST_OK);
	}
	ck_assert_int_eq(st_gguf_writer_finish(w, &err), ST_OK);
	st_gguf_writer_free(w);
}

static st_gguf *open_gguf(const char *path)
{
	st_gguf *g;
	st_error err;
	ck_assert_int_eq(st_gguf_open(&g, path, &err), ST_OK);
	return g;
}

/* c_attn [2, 6] (HF [in, out]), its values and them transposed. */
static float attn[12], attn_t[12], emb[64];

static void fill(void)
{
	for (int i = 0; i < 12; i++)
		attn[i] = (float)i * 0.5f - 2;
	for (int r = 0; r < 2; r++)
		for (int c = 0; c < 6; c++)
			attn_t[c * 2 + r] = attn[r * 6 + c];
	for (int i = 0; i < 64; i++)
		emb[i] = (float)(i % 9) * 0.25f - 1;
}

START_TEST(gguf_pairs_through_the_name_map)
{
	fill();
	struct t ck[4] = {{"wte.weight", "F32", 2, {2, 32}, emb, sizeof emb},
	                  {"lm_head.weight", "F32", 2, {2, 32}, emb, sizeof emb},
	                  {"h.0.attn.c_attn.weight", "F32", 2, {2, 6}, attn, sizeof attn},
	                  {"h.0.ln_1.weight", "F32", 1, {4}, v4, 16}};
	write_st(path_in("m.safetensors"), ck, 4, NULL);
	/* wte as Q8_0 (exactly quantized), c_attn transposed to [out, in],
	 * ln_f the checkpoint lacks; ln_1 is missing from the GGUF. */
	struct gt gg[3] = {{"wte.weight", ST_GGML_Q8_0, 2, {32, 2}, emb},
	                   {"h.0.attn.c_attn.weight", ST_GGML_F32, 2, {2, 6}, attn_t},
	                   {"ln_f.weight", ST_GGML_F32, 1, {4}, v4}};
	write_gguf(path_in("m.gguf"), gg, 3);
	st_checkpoint *c = open_ck(path_in("m.safetensors"));
	st_gguf *g = open_gguf(path_in("m.gguf"));
	st_diff_opts o;
	memset(&o, 0, sizeof o);
	st_diff_gguf_item *it;
	size_t n;
	st_error err;
	ck_assert_int_eq(st_diff_gguf_gpt2(c, g, &o, &it, &n, &err), ST_OK);
	/* lm_head.weight (tied to wte, never in a GGUF) is not "only in". */
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(it[0].kind, ST_DIFF_GGUF_COMPARED);
	ck_assert_uint_eq(it[0].ck, 0);
	ck_assert(it[0].encoded);
	ck_assert_int_eq(it[0].verdict, ST_DIFF_WITHIN); /* Q8_0: exactly quantized */
	ck_assert_int_eq(it[1].kind, ST_DIFF_GGUF_COMPARED);
	ck_assert(it[1].transposed);
	ck_assert_int_eq(it[1].verdict, ST_DIFF_IDENTICAL);
	ck_assert_int_eq(it[2].kind, ST_DIFF_GGUF_ONLY_CKPT);
	ck_assert_uint_eq(it[2].ck, 3);
	ck_assert_int_eq(it[3].kind, ST_DIFF_GGUF_ONLY_GGUF);
	ck_assert_uint_eq(it[3].gg, 2);
	free(it);
	st_gguf_close(g);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(gguf_pair_tolerance_shape_and_exact)
{
	fill();
	float f16v[4] = {1.1f, -2.2f, 3.3f, 0.0f}, moved[4] = {1.1f, -2.2f, 3.3f, 0.5f};
	struct t ck[3] = {{"h.0.ln_1.weight", "F32", 1, {4}, f16v, 16},
	                  {"h.0.ln_1.bias", "F32", 1, {4}, f16v, 16},
	                  {"h.0.attn.c_attn.weight", "F32", 2, {2, 6}, attn, sizeof attn}};
	write_st(path_in("m.safetensors"), ck, 3, NULL);
	struct gt gg[3] = {{"h.0.ln_1.weight", ST_GGML_F16, 1, {4}, f16v},
	                   {"h.0.ln_1.bias", ST_GGML_F32, 1, {4}, moved},
	                   {"h.0.attn.c_attn.weight", ST_GGML_F32, 2, {6, 2}, attn}};
	write_gguf(path_in("m.gguf"), gg, 3);
	st_checkpoint *c = open_ck(path_in("m.safetensors"));
	st_gguf *g = open_gguf(path_in("m.gguf"));
	st_diff_opts o;
	memset(&o, 0, sizeof o);
	st_diff_gguf_item it;
	st_error err;
	/* Rounded to F16: encoded, within F16's tolerance, not identical. */
	ck_assert_int_eq(st_diff_gguf_pair(c, 0, g, 0, false, &o, &it, &err), ST_OK);
	ck_assert(it.encoded && !it.identical);
	ck_assert_int_eq(it.verdict, ST_DIFF_WITHIN);
	ck_assert(it.rtol == 1e-3);
	ck_assert(it.max_abs > 0);
	/* One element moved: one mismatched. */
	ck_assert_int_eq(st_diff_gguf_pair(c, 1, g, 1, false, &o, &it, &err), ST_OK);
	ck_assert_int_eq(it.verdict, ST_DIFF_DIFFERENT);
	ck_assert_uint_eq(it.mismatched, 1);
	ck_assert(it.max_abs == 0.5);
	/* HF [2, 6] against dims [6, 2]: the shape reversed, so it pairs as
	 * stored and not as a transposed Conv1D weight. */
	ck_assert_int_eq(st_diff_gguf_pair(c, 2, g, 2, true, &o, &it, &err), ST_OK);
	ck_assert_int_eq(it.kind, ST_DIFF_GGUF_SHAPE);
	ck_assert_int_eq(st_diff_gguf_pair(c, 2, g, 2, false, &o, &it, &err), ST_OK);
	ck_assert_int_eq(it.verdict, ST_DIFF_IDENTICAL);
	/* exact: rounded to F16 is a difference, every element counted. */
	o.exact = true;
	ck_assert_int_eq(st_diff_gguf_pair(c, 0, g, 0, false, &o, &it, &err), ST_OK);
	ck_assert_int_eq(it.verdict, ST_DIFF_DIFFERENT);
	ck_assert(it.rtol == 0 && it.atol == 0);
	st_gguf_close(g);
	st_checkpoint_close(c);
}
END_TEST

/* The first n bytes of a testdata/ggml fixture. */
static void fixture(const char *file, void *buf, size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/ggml/%s", ST_TESTDATA, file);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "%s", path);
	ck_assert_uint_eq(fread(buf, 1, n, f), n);
	fclose(f);
}

/*
 * A Q4_K tensor (ggml's quantizer's first block, testdata/ggml/q4_k.bin)
 * against a checkpoint holding the floats ggml decodes it to: decoded and
 * compared, no element off (but not "exactly quantized": libst has no Q4_K
 * quantizer); one element moved is a difference.
 */
START_TEST(gguf_quantized_side_decodes_every_type)
{
	static float y[256], moved[256];
	unsigned char blk[144];
	fixture("q4_k.f32", y, sizeof y);
	fixture("q4_k.bin", blk, sizeof blk);
	memcpy(moved, y, sizeof y);
	moved[100] += 1.0f;
	struct t ck[2] = {{"h.0.ln_1.weight", "F32", 1, {256}, y, sizeof y},
	                  {"h.0.ln_1.bias", "F32", 1, {256}, moved, sizeof moved}};
	write_st(path_in("q.safetensors"), ck, 2, NULL);
	st_gguf_writer *w;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_new(&w, &err), ST_OK);
	const uint64_t dims[1] = {256};
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "blk.0.attn_norm.weight", ST_GGML_Q4_K, 1,
	                                           dims, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "blk.0.attn_norm.bias", ST_GGML_Q4_K, 1,
	                                           dims, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_open(w, path_in("q.gguf"), &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_write(w, blk, sizeof blk, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_write(w, blk, sizeof blk, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_finish(w, &err), ST_OK);
	st_gguf_writer_free(w);
	st_checkpoint *c = open_ck(path_in("q.safetensors"));
	st_gguf *g = open_gguf(path_in("q.gguf"));
	st_diff_opts o;
	memset(&o, 0, sizeof o);
	st_diff_gguf_item it;
	ck_assert_str_eq(st_checkpoint_tensor(c, 0, NULL)->name, "h.0.ln_1.weight");
	ck_assert_int_eq(st_diff_gguf_pair(c, 0, g, 0, false, &o, &it, &err), ST_OK);
	ck_assert_int_eq(it.kind, ST_DIFF_GGUF_COMPARED);
	ck_assert_uint_eq(it.mismatched, 0);
	ck_assert(it.max_abs == 0 && !it.encoded && !it.identical);
	ck_assert_int_eq(it.verdict, ST_DIFF_WITHIN);
	ck_assert_int_eq(st_diff_gguf_pair(c, 1, g, 1, false, &o, &it, &err), ST_OK);
	ck_assert_int_eq(it.kind, ST_DIFF_GGUF_COMPARED);
	ck_assert_uint_eq(it.mismatched, 1);
	ck_assert_int_eq(it.verdict, ST_DIFF_DIFFERENT);
	st_gguf_close(g);
	st_checkpoint_close(c);
}
END_TEST

/*
 * A llama GGUF written here: general.architecture "llama",
 * llama.attention.head_count heads (0: no key), and raw tensors.
 */
struct raw {
	const char *name;
	unsigned type, ndim;
	uint64_t dims[2];
	const void *bytes;
	size_t n;
};

static void write_llama(const char *path, uint64_t heads, const struct raw *ts, size_t n)
{
	st_gguf_writer *w;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_new(&w, &err), ST_OK);
	st_gguf_value arch = {.type = ST_GGUF_STRING, .n = 5};
	arch.v.s = "llama";
	ck_assert_int_eq(st_gguf_writer_set(w, "general.architecture", &arch, &err), ST_OK);
	st_gguf_value h = {.type = ST_GGUF_UINT32};
	h.v.u = heads;
	if (heads)
		ck_assert_int_eq(st_gguf_writer_set(w, "llama.attention.head_count", &h, &err),
		                 ST_OK);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(st_gguf_writer_add_tensor(w, ts[i].name, ts[i].type, ts[i].ndim,
		                                           ts[i].dims, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_open(w, path, &err), ST_OK);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(st_gguf_writer_write(w, ts[i].bytes, ts[i].n, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_finish(w, &err), ST_OK);
	st_gguf_writer_free(w);
}

/*
 * q_proj of 8 rows of 2 (heads 2, D 4): the GGUF rows are HF rows
 * 0 2 1 3 4 6 5 7 (LlamaModel.permute, by hand), so the map must find
 * them identical; the same rows unpermuted differ. rope_freqs is DERIVED.
 */
START_TEST(gguf_llama_rows_permuted_back)
{
	float hf[16], perm[16];
	static const int from[8] = {0, 2, 1, 3, 4, 6, 5, 7};
	for (int i = 0; i < 16; i++)
		hf[i] = (float)i;
	for (int r = 0; r < 8; r++)
		for (int c = 0; c < 2; c++)
			perm[r * 2 + c] = hf[from[r] * 2 + c];
	float freqs[2] = {1, 8};
	struct t ck[2] = {{"model.layers.0.self_attn.q_proj.weight", "F32", 2, {8, 2}, hf,
	                   sizeof hf},
	                  {"model.layers.0.self_attn.v_proj.weight", "F32", 2, {8, 2}, hf,
	                   sizeof hf}};
	write_st(path_in("l.safetensors"), ck, 2, NULL);
	struct raw gg[3] = {{"blk.0.attn_q.weight", ST_GGML_F32, 2, {2, 8}, perm, sizeof perm},
	                    {"blk.0.attn_v.weight", ST_GGML_F32, 2, {2, 8}, perm, sizeof perm},
	                    {"rope_freqs.weight", ST_GGML_F32, 1, {2}, freqs, sizeof freqs}};
	write_llama(path_in("l.gguf"), 2, gg, 3);
	st_checkpoint *c = open_ck(path_in("l.safetensors"));
	st_gguf *g = open_gguf(path_in("l.gguf"));
	st_diff_opts o;
	memset(&o, 0, sizeof o);
	st_diff_gguf_item *it;
	size_t n;
	st_error err;
	ck_assert_int_eq(st_diff_gguf_map(c, g, "llama", &o, &it, &n, &err), ST_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(it[0].verdict, ST_DIFF_IDENTICAL);
	ck_assert_uint_eq(it[0].permuted_heads, 2);
	/* v is not permuted: its rows 1, 2, 5 and 6 (2 elements each) differ. */
	ck_assert_int_eq(it[1].verdict, ST_DIFF_DIFFERENT);
	ck_assert_uint_eq(it[1].permuted_heads, 0);
	ck_assert_uint_eq(it[1].mismatched, 8);
	ck_assert_int_eq(it[2].kind, ST_DIFF_GGUF_DERIVED);
	ck_assert_uint_eq(it[2].gg, 2);
	free(it);
	/* Through qwen2's map nothing is permuted: q differs too. */
	ck_assert_int_eq(st_diff_gguf_map(c, g, "qwen2", &o, &it, &n, &err), ST_OK);
	ck_assert_int_eq(it[0].verdict, ST_DIFF_DIFFERENT);
	ck_assert_int_eq(it[2].kind, ST_DIFF_GGUF_ONLY_GGUF);
	free(it);
	ck_assert_int_eq(st_diff_gguf_map(c, g, "falcon", &o, &it, &n, &err), ST_EUNSUPPORTED);
	ck_assert_ptr_null(it);
	st_gguf_close(g);
	/* No head count: the permutation cannot be undone, said so. */
	write_llama(path_in("l.gguf"), 0, gg, 3);
	g = open_gguf(path_in("l.gguf"));
	ck_assert_int_eq(st_diff_gguf_map(c, g, "llama", &o, &it, &n, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "l.gguf: 'llama.attention.head_count' is missing"),
	              "%s", err.message);
	st_gguf_close(g);
	/* 3 heads do not divide 8 rows. */
	write_llama(path_in("l.gguf"), 3, gg, 3);
	g = open_gguf(path_in("l.gguf"));
	ck_assert_int_eq(st_diff_gguf_map(c, g, "llama", &o, &it, &n, &err), ST_EFORMAT);
	ck_assert_msg(strstr(err.message, "tensor 'blk.0.attn_q.weight'"), "%s", err.message);
	st_gguf_close(g);
	st_checkpoint_close(c);
}
END_TEST

/*
 * One block blk (size bytes, k elements) of ggml type as the GGUF side of
 * two 1xk weights, one holding the values x, the other bad, compared
 * through the llama map with options o (the items, malloc'd, into *it).
 */
static void judge_block_of(unsigned type, unsigned k, const unsigned char *blk, size_t size,
                           const float *x, const float *bad, const st_diff_opts *o,
                           st_diff_gguf_item **it)
{
	struct t ck[2] = {
	        {"model.layers.0.mlp.up_proj.weight", "F32", 2, {1, k}, x, 4 * k},
	        {"model.layers.0.mlp.down_proj.weight", "F32", 2, {1, k}, bad, 4 * k}};
	write_st(path_in("q.safetensors"), ck, 2, NULL);
	struct raw gg[2] = {{"blk.0.ffn_up.weight", type, 2, {k, 1}, blk, size},
	                    {"blk.0.ffn_down.weight", type, 2, {k, 1}, blk, size}};
	write_llama(path_in("q.gguf"), 2, gg, 2);
	st_checkpoint *c = open_ck(path_in("q.safetensors"));
	st_gguf *g = open_gguf(path_in("q.gguf"));
	size_t n;
	st_error err;
	ck_assert_int_eq(st_diff_gguf_map(c, g, "llama", o, it, &n, &err), ST_OK);
	ck_assert_uint_eq(n, 2);
	st_gguf_close(g);
	st_checkpoint_close(c);
}

/* judge_block_of a 32-element block. */
static void judge_block(unsigned type, const unsigned char *blk, size_t size,
                        const float *x, const float *bad, const st_diff_opts *o,
                        st_diff_gguf_item **it)
{
	judge_block_of(type, 32, blk, size, x, bad, o, it);
}

/*
 * A Q4_0 block by hand: d = 0.5 (F16 0x3800), element j's code j % 16
 * (value (q - 8) * 0.5). The checkpoint's values: each decoded value plus
 * 0.25 (half a step: within |d| (1/2 + 2^-7)), the code-15 ones plus 0.5
 * (the clamp's whole step: within |d| (1 + 2^-7)); then one element 0.26
 * off (outside) and one code-15 element 0.51 off (outside), and element
 * 5 moved past element 6's value: out of order, so not what ggml's
 * quantizer makes with an importance matrix either (legacy_bound).
 */
START_TEST(gguf_q4_0_judged_by_block_bound)
{
	unsigned char blk[18] = {0x00, 0x38};
	float x[32], bad[32];
	for (int j = 0; j < 16; j++)
		blk[2 + j] = (unsigned char)(j | (j << 4));
	for (int j = 0; j < 32; j++) {
		int q = j % 16;
		x[j] = (float)(q - 8) * 0.5f + (q == 15 ? 0.5f : 0.25f);
	}
	memcpy(bad, x, sizeof x);
	bad[3] += 0.01f;  /* code 3: 0.26 off */
	bad[31] += 0.01f; /* code 15: 0.51 off */
	bad[5] += 0.6f;   /* code 5: 0.85 off, above code 6's -0.75 */
	st_diff_opts o;
	memset(&o, 0, sizeof o);
	st_diff_gguf_item *it;
	judge_block(ST_GGML_Q4_0, blk, sizeof blk, x, bad, &o, &it);
	ck_assert(it[0].type_bound && !it[0].encoded);
	ck_assert_int_eq(it[0].verdict, ST_DIFF_WITHIN);
	ck_assert_uint_eq(it[0].mismatched, 0);
	ck_assert(it[0].rtol == 0 && it[0].atol == 0.5 * (1 + 0x1p-7) + 0x1p-21);
	ck_assert_int_eq(it[1].verdict, ST_DIFF_DIFFERENT);
	ck_assert_uint_eq(it[1].mismatched, 3);
	free(it);
	/* A tolerance given replaces the type's rule. */
	double atol = 1;
	o.atol = &atol;
	judge_block(ST_GGML_Q4_0, blk, sizeof blk, x, bad, &o, &it);
	ck_assert(!it[1].type_bound);
	ck_assert_int_eq(it[1].verdict, ST_DIFF_WITHIN);
	free(it);
}
END_TEST

/*
 * A Q5_0 block by hand: d = 0.5, element j's code j (nibble j & 15, bit
 * j of qh its fifth bit), value (j - 16) * 0.5. The reference: each value
 * plus 0.25, code 31 (the clamp) plus 0.5: within |d| (1/2 + 2^-6) and
 * |d| (1 + 2^-6); then code 30 0.27 off and code 31 0.52 off: outside,
 * and code 2 moved past code 3's value (out of order).
 */
START_TEST(gguf_q5_0_bound_reads_the_fifth_bit)
{
	unsigned char blk[22] = {0x00, 0x38};
	uint32_t qh = 0xFFFF0000u; /* elements 16..31 have codes 16..31 */
	for (int k = 0; k < 4; k++)
		blk[2 + k] = (unsigned char)(qh >> (8 * k));
	for (int j = 0; j < 16; j++)
		blk[6 + j] = (unsigned char)(j | (j << 4));
	float x[32], bad[32];
	for (int j = 0; j < 32; j++)
		x[j] = (float)(j - 16) * 0.5f + (j == 31 ? 0.5f : 0.25f);
	memcpy(bad, x, sizeof x);
	bad[30] += 0.02f;
	bad[31] += 0.02f;
	bad[2] += 0.6f;
	st_diff_opts o;
	memset(&o, 0, sizeof o);
	st_diff_gguf_item *it;
	judge_block(ST_GGML_Q5_0, blk, sizeof blk, x, bad, &o, &it);
	ck_assert(it[0].type_bound);
	ck_assert_int_eq(it[0].verdict, ST_DIFF_WITHIN);
	ck_assert(it[0].atol == 0.5 * (1 + 0x1p-6) + 0x1p-20);
	ck_assert_int_eq(it[1].verdict, ST_DIFF_DIFFERENT);
	ck_assert_uint_eq(it[1].mismatched, 3);
	free(it);
}
END_TEST

/*
 * A Q4_K block by hand: d = 1, dmin = 0.5 (F16 0x3C00, 0x3800), every
 * sub-block's 6-bit scale 2 and min 4 (bytes 4..15 of the block: 2 and 4
 * for sub-blocks 0..3, nibbles 0x42 for 4..7), so the grid is 2 q - 2,
 * q = 0..15; element e's code e % 16. The reference: each value + 0.9
 * (nearer to it than to the next point, 1 away), element 15 (code 15,
 * the top) at 40 and element 16 (code 0) at -5: beyond the grid, its end
 * is the nearest point. Then element 1 at + 1.1: nearer to code 2.
 */
START_TEST(gguf_q4_k_nearest_grid_point)
{
	unsigned char blk[144] = {0x00, 0x3C, 0x00, 0x38, 2, 2, 2, 2, 4, 4, 4, 4,
	                          0x42, 0x42, 0x42, 0x42};
	float x[256], bad[256];
	for (int p = 0; p < 4; p++) /* sub-blocks 2p (low nibbles), 2p + 1 (high) */
		for (int l = 0; l < 32; l++)
			blk[16 + 32 * p + l] = (unsigned char)((l % 16) | (l % 16) << 4);
	for (int e = 0; e < 256; e++)
		x[e] = (float)(2 * (e % 32 % 16) - 2) + 0.9f;
	x[15] = 40;
	x[16] = -5;
	memcpy(bad, x, sizeof x);
	bad[1] += 0.2f;
	st_diff_opts o;
	memset(&o, 0, sizeof o);
	st_diff_gguf_item *it;
	judge_block_of(ST_GGML_Q4_K, 256, blk, sizeof blk, x, bad, &o, &it);
	ck_assert(it[0].type_bound && !it[0].type_rms);
	ck_assert_int_eq(it[0].verdict, ST_DIFF_WITHIN);
	ck_assert_uint_eq(it[0].mismatched, 0);
	ck_assert_int_eq(it[1].verdict, ST_DIFF_DIFFERENT);
	ck_assert_uint_eq(it[1].mismatched, 1);
	free(it);
}
END_TEST

/*
 * Tensors larger than one chunk of the comparison (64 Ki elements): a
 * Conv1D weight [300, 400] transposed (chunks of whole GGUF rows of 300)
 * and a q_proj of 512 rows of 256 with 8 heads permuted (rows by hand:
 * GGUF row h*64 + 2i + j is HF row h*64 + 32j + i), both identical; then
 * one element of each changed in a late chunk: exactly it mismatched.
 */
START_TEST(gguf_pairs_larger_than_a_chunk)
{
	enum { R = 300, C = 400, QR = 512, QC = 256 };
	float *conv = malloc(sizeof(float) * R * C), *conv_t = malloc(sizeof(float) * R * C);
	float *q = malloc(sizeof(float) * QR * QC), *qp = malloc(sizeof(float) * QR * QC);
	ck_assert(conv && conv_t && q && qp);
	for (int i = 0; i < R * C; i++)
		conv[i] = (float)(i % 977) * 0.125f;
	for (int r = 0; r < R; r++)
		for (int c = 0; c < C; c++)
			conv_t[c * R + r] = conv[r * C + c];
	for (int i = 0; i < QR * QC; i++)
		q[i] = (float)(i % 1013) - 500;
	for (int h = 0; h < 8; h++)
		for (int i = 0; i < 32; i++)
			for (int j = 0; j < 2; j++)
				memcpy(qp + (size_t)(h * 64 + 2 * i + j) * QC,
				       q + (size_t)(h * 64 + 32 * j + i) * QC, sizeof(float) * QC);
	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			conv_t[250 * R + 7] += 1; /* GGUF row 250: the second chunk */
			qp[(size_t)500 * QC + 3] += 1;
		}
		struct t ck[2] = {{"h.0.attn.c_attn.weight", "F32", 2, {R, C}, conv,
		                   sizeof(float) * R * C},
		                  {"model.layers.0.self_attn.q_proj.weight", "F32", 2, {QR, QC}, q,
		                   sizeof(float) * QR * QC}};
		write_st(path_in("big.safetensors"), ck, 2, NULL);
		struct raw gg[2] = {{"blk.0.attn_qkv.weight", ST_GGML_F32, 2, {R, C}, conv_t,
		                     sizeof(float) * R * C},
		                    {"blk.0.attn_q.weight", ST_GGML_F32, 2, {QC, QR}, qp,
		                     sizeof(float) * QR * QC}};
		write_llama(path_in("big.gguf"), 8, gg, 2);
		st_checkpoint *c = open_ck(path_in("big.safetensors"));
		st_gguf *g = open_gguf(path_in("big.gguf"));
		st_diff_opts o;
		memset(&o, 0, sizeof o);
		st_diff_gguf_item it;
		st_error err;
		ck_assert_int_eq(st_diff_gguf_pair(c, 0, g, 0, true, &o, &it, &err), ST_OK);
		ck_assert_int_eq(it.verdict, pass ? ST_DIFF_DIFFERENT : ST_DIFF_IDENTICAL);
		ck_assert_uint_eq(it.mismatched, pass);
		st_diff_gguf_item *items;
		size_t n;
		ck_assert_int_eq(st_diff_gguf_map(c, g, "llama", &o, &items, &n, &err), ST_OK);
		ck_assert_uint_eq(n, 3); /* c_attn / attn_qkv are no llama names: only in each side */
		ck_assert_int_eq(items[0].kind, ST_DIFF_GGUF_ONLY_CKPT);
		ck_assert_int_eq(items[1].verdict, pass ? ST_DIFF_DIFFERENT : ST_DIFF_IDENTICAL);
		ck_assert_uint_eq(items[1].mismatched, pass);
		ck_assert_uint_eq(items[1].permuted_heads, 8);
		free(items);
		st_gguf_close(g);
		st_checkpoint_close(c);
	}
	free(conv);
	free(conv_t);
	free(q);
	free(qp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("checkpoints");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, names_pair_across_shards);
	tcase_add_test(tc, only_in_a_listed_in_name_order);
	tcase_add_test(tc, exact_requires_same_bits);
	tcase_add_test(tc, narrower_side_rounded_is_rounded);
	tcase_add_test(tc, quantized_side_compared_dequantized);
	tcase_add_test(tc, quantized_b_is_a_quantized);
	tcase_add_test(tc, tied_alias_not_a_difference);
	tcase_add_test(tc, strip_prefix_clash_names_both);
	tcase_add_test(tc, globs_select_keys_and_metadata_differs);
	tcase_add_test(tc, first_difference_in_given_order);
	tcase_add_test(tc, results_do_not_depend_on_threads);
	suite_add_tcase(s, tc);
	tc = tcase_create("gguf");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, gguf_pairs_through_the_name_map);
	tcase_add_test(tc, gguf_pair_tolerance_shape_and_exact);
	tcase_add_test(tc, gguf_quantized_side_decodes_every_type);
	tcase_add_test(tc, gguf_llama_rows_permuted_back);
	tcase_add_test(tc, gguf_q4_0_judged_by_block_bound);
	tcase_add_test(tc, gguf_pairs_larger_than_a_chunk);
	tcase_add_test(tc, gguf_q5_0_bound_reads_the_fifth_bit);
	tcase_add_test(tc, gguf_q4_k_nearest_grid_point);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
