/*
 * check_convert.c - unit tests for libst/convert.c and convert_write.c
 * (st/convert.h): what the plan decides for each tensor (copy, convert,
 * keep, drop, dequantize, quantize and the new scales, aliases), the
 * checks quantizing makes, the shard layout, and the writes: the bytes do
 * not depend on the thread count, a copy of a canonical file is the file,
 * a cancelled write leaves nothing, a snapshot gets the config.json the
 * conversion implies.
 */
#define TMPDIR_NAME "check_convert"
#include "tmpdir.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <st.h>

#define D ST_TESTDATA "/"

static st_checkpoint *open_ck(const char *path)
{
	st_checkpoint *c;
	st_error e;
	ck_assert_msg(st_checkpoint_open(&c, path, ST_OPEN_TORCH, &e) == ST_OK, "%s", e.message);
	return c;
}

static st_convert_plan *plan(st_checkpoint *c, const st_convert_options *o)
{
	st_convert_plan *p;
	st_error e;
	ck_assert_msg(st_convert_plan_new(&p, c, o, &e) == ST_OK, "%s", e.message);
	return p;
}

/* The item of the tensor named name (its input name). */
static const st_convert_item *item(const st_convert_plan *p, const char *name)
{
	for (size_t i = 0; i < st_convert_plan_n_items(p); i++) {
		const st_convert_item *it = st_convert_plan_item(p, i);
		if (it->tensor->name_len == strlen(name) && !memcmp(it->tensor->name, name, strlen(name)))
			return it;
	}
	ck_abort_msg("no item %s", name);
	return NULL;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = la == lb && !memcmp(x, y, la);
	free(x);
	free(y);
	return same;
}

START_TEST(plan_converts_wide_floats_and_copies_the_rest)
{
	st_checkpoint *c = open_ck(D "stconvert/mixed.safetensors");
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_BF16};
	st_convert_plan *p = plan(c, &o);
	ck_assert_uint_eq(st_convert_plan_n_items(p), st_checkpoint_n_tensors(c));
	const st_convert_item *f32 = item(p, "f32.random");
	ck_assert_int_eq(f32->action, ST_CONVERT_CONVERT);
	ck_assert_int_eq(f32->out, ST_DTYPE_BF16);
	ck_assert_uint_eq(f32->out_bytes, 8 * 128 * 2);
	ck_assert(f32->narrows);
	ck_assert_int_eq(item(p, "bf16.random")->action, ST_CONVERT_COPY);
	ck_assert_int_eq(item(p, "int.i32")->action, ST_CONVERT_ASIS);
	const st_convert_item *f8 = item(p, "f8.e4m3"); /* no scale: decoded */
	ck_assert_int_eq(f8->action, ST_CONVERT_CONVERT);
	ck_assert_int_eq(f8->out, ST_DTYPE_BF16);
	ck_assert_uint_eq(f8->out_bytes, 4 * 2);
	ck_assert(!f8->narrows);
	ck_assert_uint_eq(st_convert_plan_count(p, ST_CONVERT_DROP), 0);
	ck_assert(!st_convert_plan_scaled(p));
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_decodes_plain_f8_and_f4)
{
	st_checkpoint *c = open_ck(D "stconvert/narrow.safetensors");
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_F16};
	st_convert_plan *p = plan(c, &o);
	static const char *const exact[] = {"f8.e4m3", "f8.e5m2", "f8.e4m3fnuz", "f8.e5m2fnuz",
	                                    "f4", "h.0.attn.weight"};
	for (size_t k = 0; k < sizeof exact / sizeof *exact; k++) {
		ck_assert_int_eq(item(p, exact[k])->action, ST_CONVERT_CONVERT);
		ck_assert_int_eq(item(p, exact[k])->out, ST_DTYPE_F16);
		ck_assert_msg(!item(p, exact[k])->narrows, "%s", exact[k]);
	}
	ck_assert_uint_eq(item(p, "f4")->out_bytes, 16 * 2); /* 8 bytes in */
	ck_assert(item(p, "f8.e8m0")->narrows);              /* 2^-127 .. 2^127 */
	ck_assert_int_eq(item(p, "f6.e2m3")->action, ST_CONVERT_ASIS);
	ck_assert_int_eq(item(p, "f6.e2m3")->out, ST_DTYPE_F6_E2M3);
	st_convert_plan_free(p);
	/* Without a dtype (a layout change) it is copied. */
	st_convert_options copy = {0};
	p = plan(c, &copy);
	ck_assert_int_eq(item(p, "f8.e4m3")->action, ST_CONVERT_COPY);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_keep_glob_keeps_dtype)
{
	st_checkpoint *c = open_ck(D "stconvert/mixed.safetensors");
	static const char *const keep[] = {"*ln_*", "zzz*"};
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_BF16, .keep = keep, .n_keep = 2};
	st_convert_plan *p = plan(c, &o);
	const st_convert_item *ln = item(p, "h.0.ln_1.weight");
	ck_assert_int_eq(ln->action, ST_CONVERT_KEEP);
	ck_assert_int_eq(ln->out, ST_DTYPE_F32);
	ck_assert_uint_eq(ln->out_bytes, 48 * 4);
	ck_assert_int_eq(item(p, "h.0.ln_2.bias")->out, ST_DTYPE_F16);
	ck_assert_uint_eq(st_convert_plan_glob_hits(p, 0, 0), 2);
	ck_assert_uint_eq(st_convert_plan_glob_hits(p, 0, 1), 0); /* matches no tensor */
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_drop_glob_wins_over_keep)
{
	st_checkpoint *c = open_ck(D "stconvert/mixed.safetensors");
	static const char *const globs[] = {"int.*"};
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_F16, .keep = globs, .n_keep = 1,
	                        .drop = globs, .n_drop = 1};
	st_convert_plan *p = plan(c, &o);
	ck_assert_int_eq(item(p, "int.i8")->action, ST_CONVERT_DROP);
	ck_assert_ptr_null(item(p, "int.i8")->alias);
	ck_assert_uint_eq(st_convert_plan_count(p, ST_CONVERT_DROP), 5);
	ck_assert_uint_eq(st_convert_plan_glob_hits(p, 1, 0), 5);
	ck_assert_uint_eq(st_convert_plan_glob_hits(p, 0, 0), 0);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_without_dtype_copies_everything)
{
	st_checkpoint *c = open_ck(D "stconvert/mixed.safetensors");
	st_convert_options o = {0};
	st_convert_plan *p = plan(c, &o);
	ck_assert_uint_eq(st_convert_plan_count(p, ST_CONVERT_COPY), st_checkpoint_n_tensors(c));
	ck_assert_uint_eq(st_convert_plan_in_bytes(p), st_checkpoint_data_bytes(c));
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_drops_scales_of_dequantized_weights)
{
	st_checkpoint *c = open_ck(D "quant/snap-fp8");
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_BF16};
	st_convert_plan *p = plan(c, &o);
	const st_convert_item *w = item(p, "model.layers.0.mlp.down_proj.weight");
	ck_assert_int_eq(w->action, ST_CONVERT_DEQUANT);
	ck_assert_int_eq(w->out, ST_DTYPE_BF16);
	ck_assert_uint_eq(w->out_bytes, 5 * 7 * 2);
	ck_assert_int_eq(item(p, "model.layers.0.mlp.down_proj.weight_scale_inv")->action,
	                 ST_CONVERT_DROP);
	ck_assert_int_eq(item(p, "model.layers.0.mlp.up_proj.weight_scale_inv")->action,
	                 ST_CONVERT_DROP);
	ck_assert_int_eq(item(p, "model.norm.weight")->action, ST_CONVERT_COPY);
	ck_assert_uint_eq(st_convert_plan_count(p, ST_CONVERT_DEQUANT), 2);
	const st_quant_plan *q = st_convert_plan_pairs(p);
	ck_assert_uint_eq(q->n_fp8, 2);
	ck_assert_uint_eq(q->n_scales, 2);
	ck_assert_uint_eq(q->block_rows, 2); /* from config.json */
	ck_assert_uint_eq(q->block_cols, 3);
	ck_assert(st_convert_plan_scaled(p));
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_renames_dequantized_mxfp4_blocks)
{
	st_checkpoint *c = open_ck(D "quant/snap-mxfp4");
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_BF16};
	st_convert_plan *p = plan(c, &o);
	const st_convert_item *b = item(p, "model.layers.0.mlp.experts.gate_up_proj_blocks");
	ck_assert_int_eq(b->action, ST_CONVERT_DEQUANT);
	ck_assert_uint_eq(b->out_name_len, strlen("model.layers.0.mlp.experts.gate_up_proj"));
	ck_assert(!memcmp(b->out_name, "model.layers.0.mlp.experts.gate_up_proj", b->out_name_len));
	ck_assert_uint_eq(b->out_ndim, 3);
	ck_assert_uint_eq(b->out_bytes, b->out_dims[0] * b->out_dims[1] * b->out_dims[2] * 2);
	ck_assert_int_eq(item(p, "model.layers.0.mlp.experts.gate_up_proj_scales")->action,
	                 ST_CONVERT_DROP);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_writes_tied_alias_once)
{
	st_checkpoint *c = open_ck(D "torch/state.bin");
	st_convert_options o = {0};
	st_convert_plan *p = plan(c, &o);
	size_t aliases = 0;
	for (size_t i = 0; i < st_convert_plan_n_items(p); i++) {
		const st_convert_item *it = st_convert_plan_item(p, i);
		if (!it->alias)
			continue;
		aliases++;
		ck_assert_int_eq(it->action, ST_CONVERT_DROP);
		/* The tensor it shares data with is written. */
		const st_convert_item *k = item(p, it->alias->name);
		ck_assert_int_ne(k->action, ST_CONVERT_DROP);
		ck_assert_ptr_null(k->alias);
	}
	ck_assert_uint_eq(aliases, 1);
	ck_assert_int_eq(item(p, "lm_head.weight")->action, ST_CONVERT_DROP);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_quantizes_2d_weights_with_new_scales)
{
	st_checkpoint *c = open_ck(D "quant/snap-q");
	st_convert_options o = {.quantize = 1, .block_rows = 2, .block_cols = 4};
	st_convert_plan *p = plan(c, &o);
	size_t n = st_checkpoint_n_tensors(c), quant = st_convert_plan_count(p, ST_CONVERT_QUANT);
	ck_assert_uint_eq(quant, 3); /* the 2-D *weight tensors */
	ck_assert_int_eq(item(p, "model.norm.weight")->action, ST_CONVERT_COPY);
	ck_assert_uint_eq(st_convert_plan_count(p, ST_CONVERT_QSCALE), quant);
	ck_assert_uint_eq(st_convert_plan_n_items(p), n + quant);
	for (size_t i = n; i < st_convert_plan_n_items(p); i++) {
		const st_convert_item *s = st_convert_plan_item(p, i);
		const st_convert_item *w = st_convert_plan_item(p, s->src);
		ck_assert_int_eq(s->action, ST_CONVERT_QSCALE);
		ck_assert_int_eq(w->action, ST_CONVERT_QUANT);
		ck_assert_int_eq(w->out, ST_DTYPE_F8_E4M3);
		ck_assert_int_eq(s->out, ST_DTYPE_F32);
		ck_assert_uint_eq(s->out_name_len, w->tensor->name_len + 10);
		ck_assert(!memcmp(s->out_name + w->tensor->name_len, "_scale_inv", 10));
		ck_assert_uint_eq(s->out_dims[0], (w->tensor->shape[0] + 1) / 2);
		ck_assert_uint_eq(s->out_dims[1], (w->tensor->shape[1] + 3) / 4);
	}
	uint64_t r, k;
	st_convert_plan_block(p, &r, &k);
	ck_assert_uint_eq(r, 2);
	ck_assert_uint_eq(k, 4);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(requant_refuses_mxfp4)
{
	st_checkpoint *c = open_ck(D "quant/snap-mxfp4");
	st_convert_options o = {.quantize = 1};
	st_convert_plan *p = NULL;
	st_error e;
	ck_assert_int_eq(st_convert_plan_new(&p, c, &o, &e), ST_EFORMAT);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(e.message, "tensor 'model.layers.0.mlp.experts.gate_up_proj_blocks': "
	                     "MXFP4 blocks cannot be kept") != NULL, "%s", e.message);
	/* In libst's words: the remedy names no tool's option. */
	const char *end = "; dequantize it first";
	ck_assert_str_eq(e.message + strlen(e.message) - strlen(end), end);
	ck_assert_ptr_null(strstr(e.message, "--"));
	st_checkpoint_close(c);
}
END_TEST

START_TEST(requant_keeps_fp8_of_the_config_blocks)
{
	st_checkpoint *c = open_ck(D "quant/snap-fp8");
	st_convert_options o = {.quantize = 1, .block_rows = 128, .block_cols = 128};
	st_error e;
	st_convert_plan *p = NULL;
	/* Other blocks than config.json's: refused, the hint naming them. */
	ck_assert_int_eq(st_convert_plan_new(&p, c, &o, &e), ST_EFORMAT);
	ck_assert_msg(strstr(e.message, "already quantized as F8_E4M3") != NULL, "%s", e.message);
	ck_assert_msg(strstr(e.message, ": dequantize it first or quantize with 2x3 blocks") != NULL,
	              "%s", e.message);
	ck_assert_ptr_null(strstr(e.message, "--"));
	/* Without blocks given, the FP8 pairs are copied with config.json's. */
	st_convert_options o2 = {.quantize = 1};
	p = plan(c, &o2);
	ck_assert_int_eq(item(p, "model.layers.0.mlp.down_proj.weight")->action, ST_CONVERT_COPY);
	ck_assert_int_eq(item(p, "model.layers.0.mlp.down_proj.weight_scale_inv")->action,
	                 ST_CONVERT_COPY);
	ck_assert_uint_eq(st_convert_plan_count(p, ST_CONVERT_QUANT), 0);
	ck_assert_uint_eq(st_convert_plan_pairs(p)->n_fp8, 2);
	uint64_t r, k;
	st_convert_plan_block(p, &r, &k);
	ck_assert_uint_eq(r, 2);
	ck_assert_uint_eq(k, 3);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_refuses_contradicting_options)
{
	st_checkpoint *c = open_ck(D "stconvert/mixed.safetensors");
	st_convert_plan *p = NULL;
	st_error e;
	st_convert_options both = {.has_to = 1, .to = ST_DTYPE_BF16, .quantize = 1};
	ck_assert_int_eq(st_convert_plan_new(&p, c, &both, &e), ST_EINVAL);
	st_convert_options f8 = {.has_to = 1, .to = ST_DTYPE_F8_E4M3};
	ck_assert_int_eq(st_convert_plan_new(&p, c, &f8, &e), ST_EINVAL);
	ck_assert_str_eq(e.message, "convert options: F8_E4M3 is not F64, F32, F16 or BF16");
	st_convert_options half = {.quantize = 1, .block_rows = 4};
	ck_assert_int_eq(st_convert_plan_new(&p, c, &half, &e), ST_EINVAL);
	ck_assert_ptr_null(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_keeps_input_shards)
{
	st_checkpoint *c = open_ck(D "torch/sharded3");
	st_convert_options o = {0};
	st_convert_plan *p = plan(c, &o);
	st_error e;
	ck_assert_int_eq(st_convert_plan_shards(p, 1, 0, &e), ST_OK);
	ck_assert(st_convert_plan_keeps_shards(p));
	ck_assert_uint_eq(st_convert_plan_n_shards(p), 3);
	for (size_t k = 0; k < 3; k++) /* numbered as the file names sort */
		ck_assert_int_eq(st_convert_plan_file_shard(p, st_convert_plan_file_order(p, k)), (long)k);
	for (size_t i = 0; i < st_convert_plan_n_items(p); i++) {
		const st_convert_item *it = st_convert_plan_item(p, i);
		if (it->action != ST_CONVERT_DROP)
			ck_assert_int_eq(it->shard, st_convert_plan_file_shard(p, it->file));
	}
	/* A file output is one file; a shard size splits instead. */
	ck_assert_int_eq(st_convert_plan_shards(p, 0, 0, &e), ST_OK);
	ck_assert(!st_convert_plan_keeps_shards(p));
	ck_assert_uint_eq(st_convert_plan_n_shards(p), 1);
	ck_assert_int_eq(st_convert_plan_file_shard(p, 0), -1);
	ck_assert_int_eq(st_convert_plan_shards(p, 0, 1000, &e), ST_EINVAL);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_keeps_safetensors_shards)
{
	st_checkpoint *c = open_ck(D "stconvert/snap-sharded");
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_F16};
	st_convert_plan *p = plan(c, &o);
	st_error e;
	ck_assert_int_eq(st_convert_plan_shards(p, 1, 0, &e), ST_OK);
	ck_assert(st_convert_plan_keeps_shards(p));
	ck_assert_uint_eq(st_convert_plan_n_shards(p), 2);
	ck_assert_int_eq(st_convert_plan_shards(p, 0, 0, &e), ST_OK); /* a file: one */
	ck_assert(!st_convert_plan_keeps_shards(p));
	ck_assert_uint_eq(st_convert_plan_n_shards(p), 1);
	ck_assert_int_eq(st_convert_plan_shards(p, 1, 1, &e), ST_OK); /* one tensor a shard */
	ck_assert_uint_eq(st_convert_plan_n_shards(p), 3);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static int write_to(const char *src, const st_convert_options *o, const char *out, unsigned threads)
{
	st_checkpoint *c = open_ck(src);
	st_convert_plan *p = plan(c, o);
	st_convert_run r = {.threads = threads};
	st_error e;
	ck_assert_int_eq(st_convert_plan_shards(p, 0, 0, &e), ST_OK);
	int rc = st_convert_write_file(p, out, &r, &e);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
	return rc;
}

START_TEST(write_same_bytes_for_any_thread_count)
{
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_BF16};
	ck_assert_int_eq(write_to(D "stconvert/mixed.safetensors", &o, path_in("1.safetensors"), 1),
	                 ST_OK);
	ck_assert_int_eq(write_to(D "stconvert/mixed.safetensors", &o, path_in("3.safetensors"), 3),
	                 ST_OK);
	ck_assert(same_file(path_in("1.safetensors"), path_in("3.safetensors")));
	st_checkpoint *c = open_ck(path_in("3.safetensors"));
	long i = st_checkpoint_find(c, "f32.random", 10);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(st_checkpoint_tensor(c, (size_t)i, NULL)->dtype, ST_DTYPE_BF16);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(write_copies_canonical_file_byte_for_byte)
{
	st_convert_options o = {0};
	ck_assert_int_eq(write_to(D "stconvert/mixed.canonical.safetensors", &o,
	                          path_in("copy.safetensors"), 2), ST_OK);
	ck_assert(same_file(D "stconvert/mixed.canonical.safetensors", path_in("copy.safetensors")));
}
END_TEST

START_TEST(plan_refuses_hostile_block_size)
{
	st_convert_options copy = {0}, o = {.has_to = 1, .to = ST_DTYPE_BF16};
	ck_assert_int_eq(write_to(D "quant/snap-fp8/model.safetensors", &copy,
	                          path_in("model.safetensors"), 1), ST_OK);
	write_text(path_in("config.json"),
	           "{\"quantization_config\": {\"weight_block_size\": [0, 3]}}");
	st_checkpoint *c = open_ck(path_in("model.safetensors"));
	st_convert_plan *p = NULL;
	st_error e;
	ck_assert_int_eq(st_convert_plan_new(&p, c, &o, &e), ST_EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(e.message, "config.json: ") != NULL, "%s", e.message);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(write_quantized_weights_beside_their_scales)
{
	st_convert_options o = {.quantize = 1};
	ck_assert_int_eq(write_to(D "quant/snap-q", &o, path_in("q.safetensors"), 2), ST_OK);
	st_checkpoint *c = open_ck(path_in("q.safetensors"));
	ck_assert_uint_eq(st_checkpoint_n_tensors(c), 4 + 3);
	static const char w[] = "model.layers.0.mlp.down_proj.weight";
	static const char s[] = "model.layers.0.mlp.down_proj.weight_scale_inv";
	long wi = st_checkpoint_find(c, w, sizeof w - 1), si = st_checkpoint_find(c, s, sizeof s - 1);
	ck_assert_int_ge(wi, 0);
	ck_assert_int_ge(si, 0);
	ck_assert_int_eq(st_checkpoint_tensor(c, (size_t)wi, NULL)->dtype, ST_DTYPE_F8_E4M3);
	const st_tensor *st = st_checkpoint_tensor(c, (size_t)si, NULL);
	ck_assert_int_eq(st->dtype, ST_DTYPE_F32);
	ck_assert_uint_eq(st->ndim, 2);
	ck_assert_uint_eq(st->shape[0], 1); /* [5, 7] in one 128 x 128 block */
	ck_assert_uint_eq(st->shape[1], 1);
	st_checkpoint_close(c);
}
END_TEST

/* The bytes of tensor name of c (bytes of them). */
static void read_tensor(st_checkpoint *c, const char *name, void *buf, size_t bytes)
{
	size_t f = 0;
	long i = st_checkpoint_find(c, name, strlen(name));
	ck_assert_msg(i >= 0, "no tensor %s", name);
	const st_tensor *t = st_checkpoint_tensor(c, (size_t)i, &f);
	ck_assert_uint_eq(t->n_bytes, bytes);
	st_file *file = st_checkpoint_file(c, f);
	long fi = st_file_find(file, name, strlen(name));
	st_error e;
	ck_assert_msg(st_file_read(file, (size_t)fi, 0, buf, bytes, &e) == ST_OK, "%s", e.message);
}

/*
 * The values of the OCP specifications (OFP8 rev. 1.0; MX v1.0 for F4
 * E2M1 and E8M0), by hand: F4 codes 0..15 are +-{0, 0.5, 1, 1.5, 2, 3, 4,
 * 6}; E4M3 0x01 is 2^-9, 0x08 2^-6, 0x7E 448, 0xB8 -1; E8M0 0x7F is 1,
 * 0x00 2^-127 (0 in F16), 0xFE 2^127 (Inf in F16).
 */
START_TEST(write_decodes_f8_and_f4_exactly)
{
	st_convert_options o32 = {.has_to = 1, .to = ST_DTYPE_F32};
	ck_assert_int_eq(write_to(D "stconvert/narrow.safetensors", &o32, path_in("32.safetensors"),
	                          2), ST_OK);
	st_checkpoint *c = open_ck(path_in("32.safetensors"));
	static const float f4[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3,
	                             -4, -6};
	float got[254];
	read_tensor(c, "f4", got, sizeof f4);
	for (int k = 0; k < 16; k++)
		ck_assert_msg(memcmp(&got[k], &f4[k], 4) == 0, "f4 code %d: %g", k, (double)got[k]);
	read_tensor(c, "f8.e4m3", got, 254 * 4); /* every code but the two NaNs */
	ck_assert(got[0x01] == 0x1p-9f && got[0x08] == 0x1p-6f && got[0x7E] == 448.0f);
	ck_assert(got[0xB8 - 1] == -1.0f); /* 0x7F (NaN) is not in the tensor */
	ck_assert_int_eq(st_checkpoint_tensor(c, (size_t)st_checkpoint_find(c, "f6.e2m3", 7),
	                                      NULL)->dtype, ST_DTYPE_F6_E2M3);
	st_checkpoint_close(c);

	st_checkpoint *in = open_ck(D "stconvert/narrow.safetensors");
	st_convert_options o16 = {.has_to = 1, .to = ST_DTYPE_F16};
	st_convert_plan *p = plan(in, &o16);
	st_convert_run r = {.threads = 3};
	st_error e;
	ck_assert_int_eq(st_convert_plan_shards(p, 0, 0, &e), ST_OK);
	ck_assert_int_eq(st_convert_write_file(p, path_in("16.safetensors"), &r, &e), ST_OK);
	/* E8M0 is 2^(c - 127), c < 255: 2^16 and up overflow F16 (codes 143
	 * to 254), 2^-25 and below round to 0 (codes 0 to 102). */
	ck_assert_uint_eq(item(p, "f8.e8m0")->overflow, 254 - 143 + 1);
	ck_assert_uint_eq(item(p, "f8.e8m0")->underflow, 103);
	st_convert_plan_free(p);
	st_checkpoint_close(in);
	c = open_ck(path_in("16.safetensors"));
	uint16_t h[255];
	read_tensor(c, "f8.e8m0", h, 255 * 2);
	ck_assert_uint_eq(h[0x00], 0x0000);
	ck_assert_uint_eq(h[0x66], 0x0000); /* 2^-25: a tie, to even */
	ck_assert_uint_eq(h[0x67], 0x0001); /* 2^-24 */
	ck_assert_uint_eq(h[0x7F], 0x3C00);
	ck_assert_uint_eq(h[0x8E], 0x7800); /* 2^15 */
	ck_assert_uint_eq(h[0x8F], 0x7C00);
	ck_assert_uint_eq(h[0xFE], 0x7C00);
	st_checkpoint_close(c);
}
END_TEST

START_TEST(plan_renames_first_rule_wins)
{
	st_checkpoint *c = open_ck(D "stconvert/mixed.safetensors");
	static const st_convert_rename rules[] = {
		{"h.0.", ""}, {"h.0.ln_1", "never"}, {"f32.", "model.f32."}, {"zzz", "x"}};
	static const char *const drop[] = {"int.*"};
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_F16, .rename = rules, .n_rename = 4,
	                        .drop = drop, .n_drop = 1};
	st_convert_plan *p = plan(c, &o);
	const st_convert_item *ln = item(p, "h.0.ln_1.weight");
	ck_assert_uint_eq(ln->out_name_len, 11);
	ck_assert(!memcmp(ln->out_name, "ln_1.weight", 11));
	ck_assert_uint_eq(item(p, "f32.random")->out_name_len, 16);
	ck_assert(!memcmp(item(p, "f32.random")->out_name, "model.f32.random", 16));
	ck_assert(!memcmp(item(p, "int.i8")->out_name, "int.i8", 6)); /* dropped */
	ck_assert_uint_eq(st_convert_plan_rename_hits(p, 0), 2);
	ck_assert_uint_eq(st_convert_plan_rename_hits(p, 1), 0); /* rule 0 took them */
	ck_assert_uint_eq(st_convert_plan_rename_hits(p, 2), 2);
	ck_assert_uint_eq(st_convert_plan_rename_hits(p, 3), 0);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

static int plan_error(st_checkpoint *c, const st_convert_options *o, st_error *e)
{
	st_convert_plan *p = (st_convert_plan *)1;
	int rc = st_convert_plan_new(&p, c, o, e);
	ck_assert_ptr_null(p);
	return rc;
}

START_TEST(plan_refuses_rename_clashes)
{
	st_checkpoint *c = open_ck(D "stconvert/mixed.safetensors");
	st_error e;
	static const st_convert_rename onto[] = {{"f32.", "f64."}};
	st_convert_options o = {.rename = onto, .n_rename = 1};
	ck_assert_int_eq(plan_error(c, &o, &e), ST_EINVAL);
	ck_assert_str_eq(e.message, D "stconvert/mixed.safetensors: tensor 'f64.random' and tensor "
	                 "'f32.random' would both be written as 'f64.random'");
	static const st_convert_rename both[] = {{"nan.f16", "x"}, {"nan.bf16", "x"}};
	o = (st_convert_options){.has_to = 1, .to = ST_DTYPE_F32, .rename = both, .n_rename = 2};
	ck_assert_int_eq(plan_error(c, &o, &e), ST_EINVAL);
	ck_assert_msg(strstr(e.message, "tensor 'nan.f16' and tensor 'nan.bf16' would both be "
	                     "written as 'x'"), "%s", e.message);
	/* Dropping one of the two: no clash. */
	static const char *const drop[] = {"nan.bf16"};
	o.drop = drop;
	o.n_drop = 1;
	st_convert_plan *p = plan(c, &o);
	st_convert_plan_free(p);
	static const st_convert_rename empty[] = {{"scalar", ""}};
	o = (st_convert_options){.rename = empty, .n_rename = 1};
	ck_assert_int_eq(plan_error(c, &o, &e), ST_EINVAL);
	ck_assert_msg(strstr(e.message, "tensor 'scalar': renamed to an empty name"), "%s",
	              e.message);
	static const st_convert_rename null_to[] = {{"a", NULL}};
	o = (st_convert_options){.rename = null_to, .n_rename = 1};
	ck_assert_int_eq(plan_error(c, &o, &e), ST_EINVAL);
	o = (st_convert_options){.n_rename = 1};
	ck_assert_int_eq(plan_error(c, &o, &e), ST_EINVAL);
	st_checkpoint_close(c);
}
END_TEST

/* Two names swapped: each output tensor holds the data of the input tensor
 * renamed to it, not of the input tensor of its name. */
START_TEST(write_swapped_names_follow_their_data)
{
	static const st_convert_rename swap[] = {{"f32.random", "f64.random"},
	                                         {"f64.random", "f32.random"}};
	st_convert_options o = {.rename = swap, .n_rename = 2};
	ck_assert_int_eq(write_to(D "stconvert/mixed.safetensors", &o, path_in("s.safetensors"), 2),
	                 ST_OK);
	st_checkpoint *in = open_ck(D "stconvert/mixed.safetensors");
	st_checkpoint *out = open_ck(path_in("s.safetensors"));
	static unsigned char a[8 * 128 * 4], b[sizeof a];
	read_tensor(in, "f32.random", a, sizeof a);
	read_tensor(out, "f64.random", b, sizeof b);
	ck_assert(!memcmp(a, b, sizeof a));
	read_tensor(in, "f64.random", a, 16 * 16 * 8);
	read_tensor(out, "f32.random", b, 16 * 16 * 8);
	ck_assert(!memcmp(a, b, 16 * 16 * 8));
	long i = st_checkpoint_find(out, "f64.random", 10);
	ck_assert_int_eq(st_checkpoint_tensor(out, (size_t)i, NULL)->dtype, ST_DTYPE_F32);
	st_checkpoint_close(out);
	st_checkpoint_close(in);
}
END_TEST

static int always(void *ctx)
{
	(void)ctx;
	return 1;
}

START_TEST(write_cancelled_leaves_nothing)
{
	st_checkpoint *c = open_ck(D "stconvert/mixed.safetensors");
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_F16};
	st_convert_plan *p = plan(c, &o);
	st_convert_run r = {.threads = 2, .cancel = always};
	st_error e;
	ck_assert_int_eq(st_convert_plan_shards(p, 0, 0, &e), ST_OK);
	ck_assert_int_eq(st_convert_write_file(p, path_in("x.safetensors"), &r, &e), ST_EIO);
	ck_assert_str_eq(e.message, "cancelled");
	ck_assert_int_eq(st_convert_plan_shards(p, 1, 0, &e), ST_OK);
	ck_assert_int_eq(st_convert_write_snapshot(p, path_in("snap"), NULL, 0, &r, &e), ST_EIO);
	ck_assert_int_eq(count_entries(tmp), 0);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

static void collect(void *ctx, int severity, const char *message)
{
	(void)message;
	if (severity == ST_PROBLEM_NOTE)
		++*(int *)ctx;
}

START_TEST(write_snapshot_gets_dequantized_config)
{
	st_checkpoint *c = open_ck(D "quant/snap-fp8");
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_BF16};
	st_convert_plan *p = plan(c, &o);
	int notes = 0;
	st_convert_run r = {.threads = 2, .note = collect, .ctx = &notes};
	st_error e;
	ck_assert_int_eq(st_convert_plan_shards(p, 1, 0, &e), ST_OK);
	ck_assert_msg(st_convert_write_snapshot(p, path_in("out"), D "quant/snap-fp8", 0, &r, &e) ==
	              ST_OK, "%s", e.message);
	ck_assert_int_gt(notes, 0);
	size_t len;
	char *config = slurp(path_in("out/config.json"), &len);
	ck_assert_ptr_null(strstr(config, "quantization_config"));
	ck_assert_ptr_nonnull(strstr(config, "\"torch_dtype\": \"bfloat16\""));
	free(config);
	ck_assert_int_eq(access(path_in("out/tokenizer_config.json"), F_OK), 0);
	st_checkpoint *out = open_ck(path_in("out"));
	ck_assert_uint_eq(st_checkpoint_n_tensors(out), 3);
	ck_assert_int_lt(st_checkpoint_find(out, "model.layers.0.mlp.up_proj.weight_scale_inv", 43),
	                 0);
	st_checkpoint_close(out);
	/* An existing directory needs ST_SNAPSHOT_REPLACE. */
	ck_assert_int_ne(st_convert_write_snapshot(p, path_in("out"), NULL, 0, &r, &e), ST_OK);
	ck_assert_int_eq(st_convert_write_snapshot(p, path_in("out"), NULL, ST_SNAPSHOT_REPLACE, &r,
	                                           &e), ST_OK);
	st_convert_plan_free(p);
	st_checkpoint_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("convert");
	TCase *tc = tcase_create("plan");
	tcase_add_test(tc, plan_converts_wide_floats_and_copies_the_rest);
	tcase_add_test(tc, plan_decodes_plain_f8_and_f4);
	tcase_add_test(tc, plan_keep_glob_keeps_dtype);
	tcase_add_test(tc, plan_renames_first_rule_wins);
	tcase_add_test(tc, plan_refuses_rename_clashes);
	tcase_add_test(tc, plan_drop_glob_wins_over_keep);
	tcase_add_test(tc, plan_without_dtype_copies_everything);
	tcase_add_test(tc, plan_drops_scales_of_dequantized_weights);
	tcase_add_test(tc, plan_renames_dequantized_mxfp4_blocks);
	tcase_add_test(tc, plan_writes_tied_alias_once);
	tcase_add_test(tc, plan_quantizes_2d_weights_with_new_scales);
	tcase_add_test(tc, requant_refuses_mxfp4);
	tcase_add_test(tc, requant_keeps_fp8_of_the_config_blocks);
	tcase_add_test(tc, plan_refuses_contradicting_options);
	tcase_add_test(tc, plan_keeps_input_shards);
	tcase_add_test(tc, plan_keeps_safetensors_shards);
	suite_add_tcase(s, tc);
	TCase *tw = tcase_create("write");
	tcase_add_checked_fixture(tw, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tw, write_same_bytes_for_any_thread_count);
	tcase_add_test(tw, write_copies_canonical_file_byte_for_byte);
	tcase_add_test(tw, write_decodes_f8_and_f4_exactly);
	tcase_add_test(tw, write_swapped_names_follow_their_data);
	tcase_add_test(tw, write_quantized_weights_beside_their_scales);
	tcase_add_test(tw, write_cancelled_leaves_nothing);
	tcase_add_test(tw, plan_refuses_hostile_block_size);
	tcase_add_test(tw, write_snapshot_gets_dequantized_config);
	suite_add_tcase(s, tw);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
