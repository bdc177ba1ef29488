/*
 * check_gpt2_gguf_export.c - gpt2export's GGUF work (libst's
 * st_hf_write_gguf one way, tools/gpt2/gguf_export.c the other): a tiny
 * random GPT-2 snapshot (gpt2_export_random, with
 * the GPT-2 tokenizer of testdata/gpt2-tokenizer) exported to GGUF and
 * read with libst's reader. The metadata keys, tensor names, types and
 * dims are checked against llama.cpp's GPT-2 conventions, written out
 * here by hand (convert_hf_to_gguf.py's keys, the name table of
 * libst/arch_gguf.c, Conv1D weights as [out, in], norms, biases and
 * position_embd kept F32, no output.weight); the values against the
 * snapshot's own tensors read by libst (transposed where the convention
 * says so); Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 within one quantization
 * step (the bytes themselves: tests/cli/gguf_export.sh); and importing
 * the GGUF back gives the snapshot's tensors again, bit for bit from F32.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <st.h>

#include "gpt2/export.h"
#include "gpt2/gguf_export.h"

#define TMPDIR_NAME "check_gpt2_gguf_export"
#include "tmpdir.h"

#define TOKENIZER ST_TESTDATA "/gpt2-tokenizer"

/* 2 layers, 2 heads, n_embd 32 (whole Q8_0 blocks), 16 positions. */
enum { V = 50257, T = 16, L = 2, H = 2, C = 32 };

static const gpt2_export_opts opts = {.dtype = -1,
                                      .tokenizer_dir = TOKENIZER};

static char snap[600];

/* tmp/snap: the random snapshot, F32. */
static void make_snapshot(void)
{
	gpt2_config cfg = {T, V, L, H, C, 1e-5f, 0, {0}, 0, 0};
	char err[512];
	snprintf(snap, sizeof snap, "%s", path_in("snap"));
	ck_assert_msg(gpt2_export_random(snap, &cfg, 7, &opts, err, sizeof err) == 0,
	              "%s", err);
}

static st_gguf *export_gguf(const char *name, int type)
{
	const char *out = path_in(name);
	st_hf_gguf_options o = {1, (unsigned)type, 0, NULL};
	st_hf_gguf_result res;
	st_error e;
	ck_assert_msg(st_hf_write_gguf(snap, out, &o, NULL, &res, &e) == ST_OK, "%s", e.message);
	/* Every parameter read once (F32), the tied head and buffers not. */
	ck_assert_uint_eq(res.in_bytes, 4 * ((uint64_t)V * C + (uint64_t)T * C +
	                                     (uint64_t)L * (12u * C * C + 13u * C) + 2u * C));
	ck_assert_uint_eq(res.n_tensors, 4 + 12 * L);
	ck_assert_str_eq(res.arch, "gpt2");
	ck_assert_uint_eq(res.type, (unsigned)type);
	st_gguf *g;
	ck_assert_msg(st_gguf_open(&g, out, &e) == ST_OK, "%s", e.message);
	return g;
}

static const st_gguf_value *kv(const st_gguf *g, const char *key, int type)
{
	long i = st_gguf_find_kv(g, key);
	ck_assert_msg(i >= 0, "no key %s", key);
	const st_gguf_value *v = &st_gguf_kv_at(g, (size_t)i)->value;
	ck_assert_msg(v->type == type, "%s: type %d, expected %d", key, v->type,
	              type);
	return v;
}

static void assert_str(const st_gguf_value *v, const char *want)
{
	ck_assert_uint_eq(v->n, strlen(want));
	ck_assert(!memcmp(v->v.s, want, v->n));
}

START_TEST(export_writes_llama_cpp_gpt2_metadata)
{
	make_snapshot();
	st_gguf *g = export_gguf("f32.gguf", ST_GGML_F32);
	ck_assert_uint_eq(st_gguf_version(g), 3);
	assert_str(kv(g, "general.architecture", ST_GGUF_STRING), "gpt2");
	ck_assert_uint_eq(kv(g, "gpt2.block_count", ST_GGUF_UINT32)->v.u, L);
	ck_assert_uint_eq(kv(g, "gpt2.context_length", ST_GGUF_UINT32)->v.u, T);
	ck_assert_uint_eq(kv(g, "gpt2.embedding_length", ST_GGUF_UINT32)->v.u, C);
	ck_assert_uint_eq(kv(g, "gpt2.feed_forward_length", ST_GGUF_UINT32)->v.u,
	                  4 * C);
	ck_assert_uint_eq(kv(g, "gpt2.attention.head_count", ST_GGUF_UINT32)->v.u,
	                  H);
	ck_assert(kv(g, "gpt2.attention.layer_norm_epsilon", ST_GGUF_FLOAT32)->v.f ==
	          (double)1e-5f);
	/* llama_ftype: LLAMA_FTYPE_ALL_F32 = 0. */
	ck_assert_uint_eq(kv(g, "general.file_type", ST_GGUF_UINT32)->v.u, 0);
	ck_assert_uint_eq(kv(g, "general.quantization_version", ST_GGUF_UINT32)->v.u, 2);

	assert_str(kv(g, "tokenizer.ggml.model", ST_GGUF_STRING), "gpt2");
	assert_str(kv(g, "tokenizer.ggml.pre", ST_GGUF_STRING), "gpt-2");
	/* vocab.json: "!" is id 0, "<|endoftext|>" id 50256 (a control token,
	 * llama_token_type 3; the others normal, 1). */
	const st_gguf_value *tok = kv(g, "tokenizer.ggml.tokens", ST_GGUF_ARRAY);
	ck_assert_int_eq(tok->elem_type, ST_GGUF_STRING);
	ck_assert_uint_eq(tok->n, V);
	st_gguf_value e;
	st_gguf_array_get(tok, 0, &e);
	assert_str(&e, "!");
	st_gguf_array_get(tok, V - 1, &e);
	assert_str(&e, "<|endoftext|>");
	const st_gguf_value *types = kv(g, "tokenizer.ggml.token_type", ST_GGUF_ARRAY);
	ck_assert_int_eq(types->elem_type, ST_GGUF_INT32);
	ck_assert_uint_eq(types->n, V);
	st_gguf_array_get(types, 0, &e);
	ck_assert_int_eq(e.v.i, 1);
	st_gguf_array_get(types, V - 1, &e);
	ck_assert_int_eq(e.v.i, 3);
	/* merges.txt: 50000 rules, the first "Ġ t". */
	const st_gguf_value *merges = kv(g, "tokenizer.ggml.merges", ST_GGUF_ARRAY);
	ck_assert_int_eq(merges->elem_type, ST_GGUF_STRING);
	ck_assert_uint_eq(merges->n, 50000);
	st_gguf_array_get(merges, 0, &e);
	assert_str(&e, "\xc4\xa0 t");
	ck_assert_uint_eq(kv(g, "tokenizer.ggml.eos_token_id", ST_GGUF_UINT32)->v.u,
	                  V - 1);
	ck_assert_uint_eq(kv(g, "tokenizer.ggml.bos_token_id", ST_GGUF_UINT32)->v.u,
	                  V - 1);
	st_gguf_close(g);
}
END_TEST

/*
 * One GPT-2 tensor under llama.cpp's name: its HF name, its GGUF dims
 * (dims[0] fastest: a Conv1D weight [in, out] becomes [out, in] in C
 * order, so dims {in, out}), and whether it is a matrix (the type asked
 * for) or kept F32.
 */
struct want {
	const char *gguf, *hf;
	uint64_t d0, d1; /* d1 0: one dimension */
	int transpose, matrix;
};

static const struct want global[] = {
	{"token_embd.weight", "wte.weight", C, V, 0, 1},
	{"position_embd.weight", "wpe.weight", C, T, 0, 0},
	{"output_norm.weight", "ln_f.weight", C, 0, 0, 0},
	{"output_norm.bias", "ln_f.bias", C, 0, 0, 0},
};

static const struct want block[] = {
	{"attn_norm.weight", "ln_1.weight", C, 0, 0, 0},
	{"attn_norm.bias", "ln_1.bias", C, 0, 0, 0},
	{"attn_qkv.weight", "attn.c_attn.weight", C, 3 * C, 1, 1},
	{"attn_qkv.bias", "attn.c_attn.bias", 3 * C, 0, 0, 0},
	{"attn_output.weight", "attn.c_proj.weight", C, C, 1, 1},
	{"attn_output.bias", "attn.c_proj.bias", C, 0, 0, 0},
	{"ffn_norm.weight", "ln_2.weight", C, 0, 0, 0},
	{"ffn_norm.bias", "ln_2.bias", C, 0, 0, 0},
	{"ffn_up.weight", "mlp.c_fc.weight", C, 4 * C, 1, 1},
	{"ffn_up.bias", "mlp.c_fc.bias", 4 * C, 0, 0, 0},
	{"ffn_down.weight", "mlp.c_proj.weight", 4 * C, C, 1, 1},
	{"ffn_down.bias", "mlp.c_proj.bias", C, 0, 0, 0},
};

/* The n tensors expected, names filled in for each layer. */
static size_t expected(struct want *w, char names[][2][64])
{
	size_t n = 0;
	for (size_t i = 0; i < 4; i++)
		w[n++] = global[i];
	for (int l = 0; l < L; l++)
		for (size_t i = 0; i < 12; i++) {
			w[n] = block[i];
			snprintf(names[n][0], 64, "blk.%d.%s", l, block[i].gguf);
			snprintf(names[n][1], 64, "h.%d.%s", l, block[i].hf);
			w[n].gguf = names[n][0];
			w[n].hf = names[n][1];
			n++;
		}
	return n;
}

/* A snapshot tensor's values as F32, read by libst. */
static float *hf_values(st_file *f, const char *name, uint64_t *n)
{
	long i = st_file_find(f, name, strlen(name));
	ck_assert_msg(i >= 0, "no tensor %s", name);
	const st_tensor *t = st_file_tensor(f, (size_t)i);
	ck_assert_int_eq(t->dtype, ST_DTYPE_F32);
	const void *data;
	ck_assert_int_eq(st_file_data(f, (size_t)i, &data, NULL), ST_OK);
	float *x = malloc(t->n_elements * sizeof *x);
	ck_assert_ptr_nonnull(x);
	memcpy(x, data, t->n_elements * sizeof *x);
	*n = t->n_elements;
	return x;
}

/* A GGUF tensor's values as F32 in its own (C) order. */
static float *gguf_values(const st_gguf *g, size_t i)
{
	const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
	float *x = malloc(t->n_elements * sizeof *x);
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(st_ggml_to_f32(t->type, st_gguf_tensor_data(g, i), x,
	                                t->n_elements), ST_OK);
	return x;
}

static st_file *open_st(const char *dir)
{
	char p[700];
	snprintf(p, sizeof p, "%s/model.safetensors", dir);
	st_file *f;
	st_error e;
	ck_assert_msg(st_file_open(&f, p, 0, &e) == ST_OK, "%s", e.message);
	return f;
}

/*
 * A bound on |x - y| for a matrix of type t, as a fraction of its block's
 * amax: Q8_0 one step (amax / 127); Q4_0 and Q5_0 one step (d = amax / 8
 * or / 16: the value opposite the block's max clamps to q = 15 or 31),
 * Q4_1 and Q5_1 one step of d = (max - min) / 15 or / 31 <= 2 amax / 15
 * or / 31; each with room for d and m rounded to F16. F16 and BF16: as
 * Q8_0's, far more than their rounding.
 */
static float step_of(unsigned t)
{
	switch (t) {
	case ST_GGML_Q4_0: return 1.01f / 8;
	case ST_GGML_Q5_0: return 1.01f / 16;
	case ST_GGML_Q4_1: return 2.02f / 15;
	case ST_GGML_Q5_1: return 2.02f / 31;
	default: return 1.0f / 127;
	}
}

/*
 * Every expected tensor in g with its dims and type (matrices as
 * matrix_type, the rest F32) and values: F32 bit for bit, the others
 * within one step of their type (step_of) of the snapshot's.
 */
static void check_tensors(const st_gguf *g, unsigned matrix_type)
{
	struct want w[4 + 12 * L];
	char names[4 + 12 * L][2][64];
	size_t n = expected(w, names);
	ck_assert_uint_eq(st_gguf_n_tensors(g), n);
	/* llama.cpp ties the output to token_embd: no output.weight. */
	ck_assert_int_lt(st_gguf_find(g, "output.weight"), 0);
	st_file *f = open_st(snap);
	for (size_t k = 0; k < n; k++) {
		long i = st_gguf_find(g, w[k].gguf);
		ck_assert_msg(i >= 0, "no tensor %s", w[k].gguf);
		const st_gguf_tensor *t = st_gguf_tensor_at(g, (size_t)i);
		ck_assert_msg(t->type == (w[k].matrix ? matrix_type : ST_GGML_F32),
		              "%s: type %s", w[k].gguf, st_ggml_type_name(t->type));
		ck_assert_uint_eq(t->ndim, w[k].d1 ? 2 : 1);
		ck_assert_uint_eq(t->dims[0], w[k].d0);
		if (w[k].d1)
			ck_assert_uint_eq(t->dims[1], w[k].d1);
		uint64_t m;
		float *want = hf_values(f, w[k].hf, &m);
		ck_assert_uint_eq(m, t->n_elements);
		float *got = gguf_values(g, (size_t)i);
		uint64_t rows = w[k].d1 ? w[k].d1 : 1, cols = w[k].d0;
		for (uint64_t r = 0; r < rows; r++) {
			float amax = 0;
			for (uint64_t c = 0; c < cols; c++) {
				/* HF Conv1D [in][out]: GGUF row r is output r. */
				uint64_t src = w[k].transpose ? c * rows + r : r * cols + c;
				if (c % 32 == 0) {
					amax = 0;
					for (uint64_t b = c; b < c + 32 && b < cols; b++) {
						uint64_t s2 = w[k].transpose ? b * rows + r
						                             : r * cols + b;
						amax = fmaxf(amax, fabsf(want[s2]));
					}
				}
				float x = want[src], y = got[r * cols + c];
				if (t->type == ST_GGML_F32)
					ck_assert_msg(!memcmp(&x, &y, 4), "%s[%llu][%llu]: %g vs %g",
					              w[k].gguf, (unsigned long long)r,
					              (unsigned long long)c, (double)y, (double)x);
				else
					ck_assert_msg(fabsf(x - y) <= amax * step_of(t->type), "%s[%llu][%llu]: "
					              "%g vs %g", w[k].gguf, (unsigned long long)r,
					              (unsigned long long)c, (double)y, (double)x);
			}
		}
		free(want);
		free(got);
	}
	st_file_close(f);
}

START_TEST(export_f32_names_dims_and_values_as_llama_cpp)
{
	make_snapshot();
	st_gguf *g = export_gguf("f32.gguf", ST_GGML_F32);
	check_tensors(g, ST_GGML_F32);
	st_gguf_close(g);
}
END_TEST

START_TEST(export_q8_0_quantizes_matrices_only)
{
	make_snapshot();
	st_gguf *g = export_gguf("q8.gguf", ST_GGML_Q8_0);
	/* llama_ftype: LLAMA_FTYPE_MOSTLY_Q8_0 = 7. */
	ck_assert_uint_eq(kv(g, "general.file_type", ST_GGUF_UINT32)->v.u, 7);
	check_tensors(g, ST_GGML_Q8_0);
	st_gguf_close(g);
	/* MOSTLY_F16 1, MOSTLY_BF16 32. */
	g = export_gguf("f16.gguf", ST_GGML_F16);
	ck_assert_uint_eq(kv(g, "general.file_type", ST_GGUF_UINT32)->v.u, 1);
	st_gguf_close(g);
	g = export_gguf("bf16.gguf", ST_GGML_BF16);
	ck_assert_uint_eq(kv(g, "general.file_type", ST_GGUF_UINT32)->v.u, 32);
	st_gguf_close(g);
}
END_TEST

/*
 * Q4_0, Q4_1, Q5_0, Q5_1: the matrices in the type, within a step, and
 * general.file_type gguf-py's LlamaFileType (MOSTLY_Q4_0 2, MOSTLY_Q4_1
 * 3, MOSTLY_Q5_0 8, MOSTLY_Q5_1 9).
 */
START_TEST(export_q4_q5_quantize_matrices_only)
{
	static const unsigned types[] = {ST_GGML_Q4_0, ST_GGML_Q4_1, ST_GGML_Q5_0,
	                                 ST_GGML_Q5_1};
	static const uint64_t file_types[] = {2, 3, 8, 9};
	make_snapshot();
	st_gguf *g = export_gguf("q.gguf", (int)types[_i]);
	ck_assert_uint_eq(kv(g, "general.file_type", ST_GGUF_UINT32)->v.u, file_types[_i]);
	check_tensors(g, types[_i]);
	st_gguf_close(g);
}
END_TEST

/* Every tensor of snapshot a and b: the same names, shapes and bytes. */
static void assert_same_snapshot(const char *a, const char *b)
{
	st_file *fa = open_st(a), *fb = open_st(b);
	ck_assert_uint_eq(st_file_n_tensors(fa), st_file_n_tensors(fb));
	for (size_t i = 0; i < st_file_n_tensors(fa); i++) {
		const st_tensor *x = st_file_tensor(fa, i);
		long j = st_file_find(fb, x->name, x->name_len);
		ck_assert_msg(j >= 0, "%.*s missing", (int)x->name_len, x->name);
		const st_tensor *y = st_file_tensor(fb, (size_t)j);
		ck_assert_int_eq(y->dtype, x->dtype);
		ck_assert_uint_eq(y->ndim, x->ndim);
		for (unsigned d = 0; d < x->ndim; d++)
			ck_assert_uint_eq(y->shape[d], x->shape[d]);
		const void *px, *py;
		ck_assert_int_eq(st_file_data(fa, i, &px, NULL), ST_OK);
		ck_assert_int_eq(st_file_data(fb, (size_t)j, &py, NULL), ST_OK);
		ck_assert_msg(!memcmp(px, py, x->n_bytes), "%.*s differs",
		              (int)x->name_len, x->name);
	}
	st_file_close(fa);
	st_file_close(fb);
}

static void assert_same_file(const char *a, const char *b)
{
	char cmd[1600];
	snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
	ck_assert_msg(system(cmd) == 0, "%s and %s differ", a, b);
}

START_TEST(import_of_an_f32_export_gives_the_snapshot_back)
{
	make_snapshot();
	st_gguf *g = export_gguf("f32.gguf", ST_GGML_F32);
	st_gguf_close(g);
	char back[600], err[512];
	snprintf(back, sizeof back, "%s", path_in("back"));
	gpt2_export_opts o = {.dtype = -1};
	gpt2_export_result res;
	ck_assert_msg(gpt2_export_gguf_to_hf(path_in("f32.gguf"), back, -1, &o,
	                                     &res, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(res.dst_dtype, ST_DTYPE_F32);
	assert_same_snapshot(snap, back);
	/* config.json from the gpt2.* keys: the snapshot's config. */
	gpt2_config a, b;
	ck_assert_msg(gpt2_config_load(&a, snap, err, sizeof err) == 0, "%s", err);
	ck_assert_msg(gpt2_config_load(&b, back, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(b.max_seq_len, T);
	ck_assert_int_eq(b.vocab_size, V);
	ck_assert_int_eq(b.num_layers, L);
	ck_assert_int_eq(b.num_heads, H);
	ck_assert_int_eq(b.channels, C);
	ck_assert(b.layer_norm_eps == a.layer_norm_eps);
	ck_assert_int_eq(b.n_eos, 1);
	ck_assert_int_eq(b.eos[0], V - 1);
	/* merges.txt rebuilt from tokenizer.ggml.merges: the original, byte for
	 * byte. */
	char p[700];
	snprintf(p, sizeof p, "%s/merges.txt", back);
	assert_same_file(p, TOKENIZER "/merges.txt");
}
END_TEST

START_TEST(import_of_a_q8_0_export_gives_its_dequantized_values)
{
	make_snapshot();
	st_gguf *g = export_gguf("q8.gguf", ST_GGML_Q8_0);
	char back[600], err[512];
	snprintf(back, sizeof back, "%s", path_in("back"));
	gpt2_export_opts o = {.dtype = -1};
	gpt2_export_result res;
	ck_assert_msg(gpt2_export_gguf_to_hf(path_in("q8.gguf"), back, -1, &o,
	                                     &res, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(res.dst_dtype, ST_DTYPE_F32);
	/* wte: exactly the GGUF's blocks as libst dequantizes them. */
	st_file *f = open_st(back);
	uint64_t n;
	float *x = hf_values(f, "wte.weight", &n);
	long i = st_gguf_find(g, "token_embd.weight");
	ck_assert_int_ge(i, 0);
	float *y = gguf_values(g, (size_t)i);
	ck_assert_uint_eq(n, (uint64_t)V * C);
	ck_assert(!memcmp(x, y, n * sizeof *x));
	free(x);
	free(y);
	/* c_attn: the GGUF's [out, in] rows back as Conv1D [in, out]. */
	x = hf_values(f, "h.1.attn.c_attn.weight", &n);
	i = st_gguf_find(g, "blk.1.attn_qkv.weight");
	ck_assert_int_ge(i, 0);
	y = gguf_values(g, (size_t)i);
	for (uint64_t in = 0; in < C; in++)
		for (uint64_t out = 0; out < 3 * C; out++)
			ck_assert(!memcmp(&x[in * 3 * C + out], &y[out * C + in], 4));
	free(x);
	free(y);
	st_file_close(f);
	st_gguf_close(g);
}
END_TEST

START_TEST(export_and_import_refuse_bad_input_leaving_nothing)
{
	make_snapshot();
	char err[512], out[600];
	gpt2_export_result res;
	/* gpt2export writes F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 only. */
	snprintf(out, sizeof out, "%s", path_in("q4.gguf"));
	st_hf_gguf_options q4k = {1, ST_GGML_Q4_K, 0, NULL};
	st_error e;
	ck_assert_int_eq(st_hf_write_gguf(snap, out, &q4k, NULL, NULL, &e), ST_EINVAL);
	ck_assert_ptr_nonnull(strstr(e.message, "Q4_K"));
	ck_assert_int_ne(access(out, F_OK), 0);
	/* Not a GGUF file: one line naming it, no folder made. */
	const char *bad = path_in("bad.gguf");
	write_text(bad, "not a GGUF file");
	snprintf(out, sizeof out, "%s", path_in("back"));
	gpt2_export_opts o = {.dtype = -1};
	ck_assert_int_eq(gpt2_export_gguf_to_hf(bad, out, -1, &o, &res, err,
	                                        sizeof err), -1);
	ck_assert_msg(strstr(err, "bad.gguf") && !strchr(err, '\n'), "%s", err);
	ck_assert_int_ne(access(out, F_OK), 0);
}
END_TEST

/*
 * Retype GGUF tensor `name` of the file in buf as ggml `type`, its data
 * the blocks of testdata/ggml/<fixture>.bin repeated; the F32 bytes it
 * frees stay as a gap. The floats ggml decodes those blocks to (the
 * fixture's .f32, repeated alike) go to want.
 */
static void retype(unsigned char *buf, size_t len, const char *name,
                   unsigned type, const char *fixture, float *want)
{
	st_gguf *g;
	st_error e;
	ck_assert_int_eq(st_gguf_open_memory(&g, buf, len, "m.gguf", &e), ST_OK);
	long i = st_gguf_find(g, name);
	ck_assert_int_ge(i, 0);
	const st_gguf_tensor *t = st_gguf_tensor_at(g, (size_t)i);
	unsigned blk, bytes;
	ck_assert_int_eq(st_ggml_type_block(type, &blk, &bytes), ST_OK);
	ck_assert_uint_eq(t->dims[0] % blk, 0);
	/* The info: name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset;
	 * the name is found in the header, preceded by its u64 length. */
	unsigned char key[80] = {(unsigned char)t->name_len};
	memcpy(key + 8, t->name, t->name_len);
	unsigned char *at = memmem(buf, st_gguf_data_offset(g), key, 8 + t->name_len);
	ck_assert_ptr_nonnull(at);
	at += 8 + t->name_len + 4 + 8 * t->ndim;
	at[0] = (unsigned char)type;
	at[1] = at[2] = at[3] = 0;
	unsigned char *data = buf + st_gguf_data_offset(g) + t->offset;
	uint64_t nb = t->n_elements / blk;
	st_gguf_close(g);
	char path[600];
	size_t raw_len, f_len;
	snprintf(path, sizeof path, "%s/ggml/%s.bin", ST_TESTDATA, fixture);
	unsigned char *raw = read_file(path, &raw_len);
	snprintf(path, sizeof path, "%s/ggml/%s.f32", ST_TESTDATA, fixture);
	unsigned char *fl = read_file(path, &f_len);
	size_t have = raw_len / bytes;
	for (uint64_t b = 0; b < nb; b++) {
		memcpy(data + b * bytes, raw + b % have * bytes, bytes);
		memcpy(want + b * blk, fl + b % have * blk * 4, blk * 4);
	}
	free(raw);
	free(fl);
}

/*
 * Any type imports: an F32 export with a Conv1D matrix retyped Q1_0 and
 * another IQ4_NL (whole blocks of rows of 128 and 32) comes back as F32
 * holding exactly the floats ggml's own to_float gives those blocks,
 * transposed back to Conv1D's [in, out].
 */
START_TEST(import_dequantizes_any_ggml_type)
{
	make_snapshot();
	st_gguf_close(export_gguf("f32.gguf", ST_GGML_F32));
	size_t len;
	unsigned char *buf = read_file(path_in("f32.gguf"), &len);
	static float down[4 * C * C], qkv[3 * C * C];
	retype(buf, len, "blk.0.ffn_down.weight", ST_GGML_Q1_0, "q1_0", down);
	retype(buf, len, "blk.1.attn_qkv.weight", ST_GGML_IQ4_NL, "iq4_nl", qkv);
	write_bytes(path_in("mixed.gguf"), buf, len);
	free(buf);
	char back[600], err[512];
	snprintf(back, sizeof back, "%s", path_in("back"));
	gpt2_export_opts o = {.dtype = -1};
	gpt2_export_result res;
	ck_assert_msg(gpt2_export_gguf_to_hf(path_in("mixed.gguf"), back, -1, &o, &res, err,
	                                     sizeof err) == 0, "%s", err);
	ck_assert_int_eq(res.dst_dtype, ST_DTYPE_F32);
	st_file *sf = open_st(back);
	uint64_t n;
	/* c_proj: HF [in 4C, out C], the GGUF's rows [out][in]. */
	float *x = hf_values(sf, "h.0.mlp.c_proj.weight", &n);
	ck_assert_uint_eq(n, 4 * C * C);
	for (uint64_t in = 0; in < 4 * C; in++)
		for (uint64_t out = 0; out < C; out++)
			ck_assert(!memcmp(&x[in * C + out], &down[out * 4 * C + in], 4));
	free(x);
	x = hf_values(sf, "h.1.attn.c_attn.weight", &n);
	ck_assert_uint_eq(n, 3 * C * C);
	for (uint64_t in = 0; in < C; in++)
		for (uint64_t out = 0; out < 3 * C; out++)
			ck_assert(!memcmp(&x[in * 3 * C + out], &qkv[out * C + in], 4));
	free(x);
	st_file_close(sf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpt2_gguf_export");
	TCase *tc = tcase_create("gguf_export");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, export_writes_llama_cpp_gpt2_metadata);
	tcase_add_test(tc, export_f32_names_dims_and_values_as_llama_cpp);
	tcase_add_test(tc, export_q8_0_quantizes_matrices_only);
	tcase_add_loop_test(tc, export_q4_q5_quantize_matrices_only, 0, 4);
	tcase_add_test(tc, import_of_an_f32_export_gives_the_snapshot_back);
	tcase_add_test(tc, import_of_a_q8_0_export_gives_its_dequantized_values);
	tcase_add_test(tc, export_and_import_refuse_bad_input_leaving_nothing);
	tcase_add_test(tc, import_dequantizes_any_ggml_type);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
