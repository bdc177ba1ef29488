/*
 * check_gpt2export.c - gpt2export's code (tools/gpt2/llmc.c, export*.c):
 * llm.c header checks and sizes, every transpose and the vocabulary padding
 * element by element against the independent fixtures of testdata/llmc
 * (gen_llmc.py), both directions run in-process, the random initialisation
 * (determinism, per-tensor streams, the statistics GPT-2's init asks for),
 * config.json read back by gpt2.c's parser, and --check's comparison
 * catching the square c_proj transpose trap.
 *
 * Byte-for-byte comparisons of whole files are in tests/cli/gpt2export.sh.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <st.h>

#include "gpt2/export.h"
#include "gpt2/llmc.h"

#define DIR ST_TESTDATA "/llmc/"

#define TMPDIR_NAME "check_gpt2export"
#include "tmpdir.h"

/* ---- llm.c headers ---------------------------------------------------------- */

static llmc_header gpt2_small(int version)
{
	llmc_header h = {version, 1024, 50257, 12, 12, 768, 50304};
	return h;
}

START_TEST(test_pad_vocab)
{
	ck_assert_int_eq(llmc_pad_vocab(50257), 50304);
	ck_assert_int_eq(llmc_pad_vocab(200), 256);
	ck_assert_int_eq(llmc_pad_vocab(128), 128);
	ck_assert_int_eq(llmc_pad_vocab(1), 128);
}
END_TEST

START_TEST(test_sizes_gpt2_small)
{
	/* llm.c prints "num_parameters: 124475904" for gpt2_124M.bin (Vp). */
	llmc_header h = gpt2_small(3);
	ck_assert_uint_eq(llmc_slot_offset(&h, GPT2_NUM_SLOTS), 124475904u);
	ck_assert_uint_eq(llmc_file_size(&h), 1024u + 124475904u * 4u);
	h.version = 5;
	ck_assert_uint_eq(llmc_file_size(&h), 1024u + 124475904u * 2u);
	ck_assert_uint_eq(llmc_slot_numel(&h, GPT2_WTE), 50304u * 768u);
	ck_assert_uint_eq(llmc_slot_numel(&h, GPT2_QKVW), 12u * 3 * 768 * 768);
	ck_assert_uint_eq(llmc_slot_offset(&h, GPT2_LN1W),
	                  50304u * 768u + 1024u * 768u);
}
END_TEST

START_TEST(test_header_round_trip)
{
	llmc_header h = gpt2_small(5), back;
	unsigned char buf[LLMC_HEADER_BYTES];
	llmc_header_encode(&h, buf);
	/* The bytes llm.c writes: little-endian int32s, zeros after [7]. */
	ck_assert_int_eq(buf[0] | buf[1] << 8 | buf[2] << 16 | buf[3] << 24,
	                 20240326);
	ck_assert_int_eq(buf[4], 5);
	for (int i = 32; i < LLMC_HEADER_BYTES; i++)
		ck_assert_int_eq(buf[i], 0);
	char err[512];
	ck_assert_int_eq(llmc_header_parse(&back, buf, llmc_file_size(&h), "x",
	                                   err, sizeof err), 0);
	ck_assert_mem_eq(&back, &h, sizeof h);
}
END_TEST

/* Parse h's header with a file of size and expect a message holding want. */
static void expect_refused(const llmc_header *h, int32_t magic, uint64_t size,
                           const char *want)
{
	unsigned char buf[LLMC_HEADER_BYTES];
	llmc_header_encode(h, buf);
	memcpy(buf, &magic, 4);
	llmc_header out;
	char err[512] = "";
	ck_assert_int_eq(llmc_header_parse(&out, buf, size, "m.bin", err,
	                                   sizeof err), -1);
	ck_assert_msg(strncmp(err, "m.bin: ", 7) == 0, "no file name: %s", err);
	ck_assert_msg(strstr(err, want) != NULL, "'%s' not in '%s'", want, err);
}

START_TEST(test_header_refusals)
{
	llmc_header h = gpt2_small(3);
	uint64_t size = llmc_file_size(&h);
	expect_refused(&h, 20240325, size, "bad magic (20240325, expected 20240326)");
	expect_refused(&h, 20240328, size, "tokenizer file");
	expect_refused(&h, LLMC_MAGIC, 10, "too short");
	expect_refused(&h, LLMC_MAGIC, size - 1, "truncated");
	expect_refused(&h, LLMC_MAGIC, size + 8, "8 bytes of trailing data");
	llmc_header b = h;
	b.version = 1;
	expect_refused(&b, LLMC_MAGIC, size, "unsupported version (1, expected 3");
	b = h;
	b.num_heads = 7;
	expect_refused(&b, LLMC_MAGIC, size, "n_head 7 does not divide n_embd 768");
	b = h;
	b.padded_vocab_size = 50000;
	expect_refused(&b, LLMC_MAGIC, size, "Vp 50000, expected at least V = 50257");
	b = h;
	b.channels = -768;
	expect_refused(&b, LLMC_MAGIC, size, "n_embd -768");
	b = h;
	b.num_layers = 0x7fffffff;
	expect_refused(&b, LLMC_MAGIC, size, "n_layer 2147483647");
	b = h;
	b.padded_vocab_size = 0x7fffffff;
	expect_refused(&b, LLMC_MAGIC, size, "padded vocabulary too large");
}
END_TEST

/* ---- the fixtures: every transpose and the padding ---------------------------- */

/* Tensor name of an st_file as F32 values (the caller frees). */
static float *read_f32(st_file *f, const char *name, uint64_t *n)
{
	long i = st_file_find(f, name, strlen(name));
	ck_assert_msg(i >= 0, "no tensor %s", name);
	const st_tensor *t = st_file_tensor(f, (size_t)i);
	const void *data;
	ck_assert_int_eq(st_file_data(f, (size_t)i, &data, NULL), ST_OK);
	float *out = malloc(t->n_elements * sizeof(float));
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(st_convert(ST_DTYPE_F32, out, t->dtype, data,
	                            t->n_elements, NULL), ST_OK);
	*n = t->n_elements;
	return out;
}

/* Slot elements [off, off + n) of an llm.c file as F32 values. */
static float *read_llmc(llmc_reader *r, int slot, uint64_t off, size_t n)
{
	st_dtype dt = llmc_reader_dtype(r);
	void *raw = malloc(n * 4);
	float *out = malloc(n * sizeof(float));
	ck_assert(raw && out);
	char err[512];
	ck_assert_msg(llmc_read(r, slot, off, raw, n, err, sizeof err) == 0,
	              "%s", err);
	st_convert(ST_DTYPE_F32, out, dt, raw, n, NULL);
	free(raw);
	return out;
}

/*
 * Every parameter of the snapshot hf equals the llm.c file's, element by
 * element: the Conv1D weights transposed ([in, out] vs [out, in]), wte
 * without the padding rows, which must be zero. Returns the values
 * compared.
 */
static uint64_t compare_llmc_hf(const char *bin, const char *hf)
{
	llmc_reader *r;
	char err[512];
	ck_assert_msg(llmc_open(&r, bin, err, sizeof err) == 0, "%s", err);
	st_file *f;
	st_error e = {0};
	ck_assert_msg(st_file_open(&f, hf, 0, &e) == ST_OK, "%s", e.message);
	const llmc_header *h = llmc_reader_header(r);
	gpt2_config cfg;
	llmc_header_config(h, &cfg);
	uint64_t compared = 0;
	size_t n_params = 0;
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		const gpt2_param_info *p = gpt2_param(s);
		uint64_t shape[2];
		gpt2_param_shape(&cfg, s, shape);
		uint64_t numel = gpt2_param_numel(&cfg, s);
		for (int l = 0; l < (p->per_layer ? cfg.num_layers : 1); l++) {
			char name[128];
			gpt2_param_name(s, l, name, sizeof name);
			uint64_t n;
			float *hv = read_f32(f, name, &n);
			ck_assert_uint_eq(n, numel);
			float *lv = read_llmc(r, s, (uint64_t)l * numel, (size_t)n);
			for (uint64_t k = 0; k < n; k++) {
				uint64_t lk = k;
				if (p->conv1d) {
					/* HF [i][o] is llm.c [o][i]. */
					uint64_t i = k / shape[1], o = k % shape[1];
					lk = o * shape[0] + i;
				}
				ck_assert_msg(memcmp(&hv[k], &lv[lk], 4) == 0,
				              "%s[%llu]: %g vs llm.c %g", name,
				              (unsigned long long)k, (double)hv[k],
				              (double)lv[lk]);
			}
			compared += n;
			n_params++;
			free(hv);
			free(lv);
		}
	}
	/* Nothing else in the snapshot; the padding rows are zero. */
	ck_assert_uint_eq(st_file_n_tensors(f), n_params);
	uint64_t C = (uint64_t)h->channels;
	uint64_t pad = (uint64_t)(h->padded_vocab_size - h->vocab_size) * C;
	if (pad) {
		float *pv = read_llmc(r, GPT2_WTE, (uint64_t)h->vocab_size * C,
		                      (size_t)pad);
		for (uint64_t k = 0; k < pad; k++)
			ck_assert_msg(pv[k] == 0 && !signbit(pv[k]),
			              "padding element %llu is %g",
			              (unsigned long long)k, (double)pv[k]);
		free(pv);
	}
	st_file_close(f);
	llmc_close(r);
	return compared;
}

START_TEST(test_fixtures_agree)
{
	/* The two halves of the fixtures, made by gen_llmc.py. */
	ck_assert_uint_eq(compare_llmc_hf(DIR "tiny_fp32.bin",
	                                  DIR "tiny_fp32_hf/model.safetensors"),
	                  10816u);
	compare_llmc_hf(DIR "tiny_bf16.bin", DIR "tiny_bf16_hf/model.safetensors");
	llmc_reader *r;
	char err[512];
	ck_assert_int_eq(llmc_open(&r, DIR "tiny_fp32.bin", err, sizeof err), 0);
	ck_assert_int_eq(llmc_reader_header(r)->padded_vocab_size, 256);
	ck_assert_int_eq(llmc_reader_header(r)->vocab_size, 200);
	llmc_close(r);
}
END_TEST

static const gpt2_export_opts quiet_opts = {.dtype = -1};

START_TEST(test_export_to_hf_transposes)
{
	tmpdir_setup();
	const char *v[2] = {"tiny_fp32", "tiny_bf16"};
	for (int i = 0; i < 2; i++) {
		char in[512], out[512], file[600];
		snprintf(in, sizeof in, DIR "%s.bin", v[i]);
		snprintf(out, sizeof out, "%s/%s", tmp, v[i]);
		gpt2_export_result res;
		char err[512];
		ck_assert_msg(gpt2_export_llmc_to_hf(in, out, &quiet_opts, &res,
		                                     err, sizeof err) == 0, "%s",
		              err);
		ck_assert(res.exact);
		ck_assert_uint_eq(res.parameters, 10816u);
		ck_assert_int_eq(res.dst_dtype, i ? ST_DTYPE_BF16 : ST_DTYPE_F32);
		snprintf(file, sizeof file, "%s/model.safetensors", out);
		compare_llmc_hf(in, file);
		/* No tokenizer folder given: no tokenizer files. */
		snprintf(file, sizeof file, "%s/tokenizer.json", out);
		ck_assert_int_ne(access(file, F_OK), 0);
	}
	tmpdir_teardown();
}
END_TEST

START_TEST(test_export_to_llmc_transposes)
{
	tmpdir_setup();
	const char *src[3] = {"tiny_fp32_hf", "tiny_bf16_hf", "tiny_variants_hf"};
	for (int i = 0; i < 3; i++) {
		char out[512];
		snprintf(out, sizeof out, "%s/%d.bin", tmp, i);
		char in[512];
		snprintf(in, sizeof in, DIR "%s", src[i]);
		gpt2_export_result res;
		char err[512];
		ck_assert_msg(gpt2_export_hf_to_llmc(in, out, &quiet_opts, &res,
		                                     err, sizeof err) == 0, "%s",
		              err);
		ck_assert(res.exact);
		ck_assert_int_eq(res.dst_dtype, i == 1 ? ST_DTYPE_BF16
		                                       : ST_DTYPE_F32);
		compare_llmc_hf(out, i == 1 ? DIR "tiny_bf16_hf/model.safetensors"
		                            : DIR "tiny_fp32_hf/model.safetensors");
	}
	tmpdir_teardown();
}
END_TEST

/*
 * Parameters sharing one storage are refused before anything is written:
 * otherwise a small PyTorch file could make a .bin of gigabytes.
 */
START_TEST(test_export_refuses_shared_storage)
{
	tmpdir_setup();
	char out[512], err[1024];
	snprintf(out, sizeof out, "%s/shared.bin", tmp);
	gpt2_export_result res;
	ck_assert_int_eq(gpt2_export_hf_to_llmc(ST_TESTDATA "/gpt2/shared-storage", out,
	                                        &quiet_opts, &res, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "pytorch_model.bin: tensor 'h.1.") &&
	              strstr(err, "its data overlaps that of 'h.0."), "%s", err);
	ck_assert_int_eq(access(out, F_OK), -1);
	tmpdir_teardown();
}
END_TEST

/* ---- config.json ---------------------------------------------------------- */

START_TEST(test_config_json_parses)
{
	gpt2_config cfg = {64, 200, 2, 2, 16, 1e-5f, 1, {50256}, 0, 0}, back;
	char buf[4096], err[512];
	int n = gpt2_export_config_json(buf, sizeof buf, &cfg, ST_DTYPE_BF16);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"torch_dtype\": \"bfloat16\",\n"));
	ck_assert_int_eq(gpt2_config_parse(&back, buf, (size_t)n, "config.json",
	                                   err, sizeof err), 0);
	ck_assert_int_eq(back.max_seq_len, 64);
	ck_assert_int_eq(back.vocab_size, 200);
	ck_assert_int_eq(back.num_layers, 2);
	ck_assert_int_eq(back.num_heads, 2);
	ck_assert_int_eq(back.channels, 16);
	ck_assert(back.layer_norm_eps == 1e-5f);
	ck_assert_int_eq(back.n_eos, 1);
	ck_assert_int_eq(back.eos[0], 50256);
	ck_assert_int_eq(gpt2_export_config_json(buf, 100, &cfg, ST_DTYPE_F32), -1);
	n = gpt2_export_generation_config_json(buf, sizeof buf, &cfg);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"eos_token_id\": 50256,\n"));
}
END_TEST

/*
 * bos and eos follow the source (a GGUF's tokenizer.ggml.*_token_id, a
 * config's list); a vocabulary too small for <|endoftext|> gets null, not
 * an id past its end.
 */
START_TEST(test_config_json_special_ids)
{
	gpt2_config cfg = {64, 200, 2, 2, 16, 1e-5f, 0, {0}, 0, 0}, back;
	char buf[4096], err[512];
	int n = gpt2_export_config_json(buf, sizeof buf, &cfg, ST_DTYPE_F32);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"bos_token_id\": null,\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\"eos_token_id\": null,\n"));
	ck_assert_int_eq(gpt2_config_parse(&back, buf, (size_t)n, "config.json",
	                                   err, sizeof err), 0);
	ck_assert_int_eq(back.n_eos, 0);

	cfg.n_eos = 2;
	cfg.eos[0] = 3;
	cfg.eos[1] = 5;
	cfg.has_bos = 1;
	cfg.bos = 7;
	n = gpt2_export_config_json(buf, sizeof buf, &cfg, ST_DTYPE_F32);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"bos_token_id\": 7,\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\"eos_token_id\": [3, 5],\n"));
	ck_assert_int_eq(gpt2_config_parse(&back, buf, (size_t)n, "config.json",
	                                   err, sizeof err), 0);
	ck_assert_int_eq(back.n_eos, 2);
	ck_assert_int_eq(back.eos[0], 3);
	ck_assert_int_eq(back.eos[1], 5);
	n = gpt2_export_generation_config_json(buf, sizeof buf, &cfg);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"bos_token_id\": 7,\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\"eos_token_id\": [3, 5],\n"));

	/* The full GPT-2 vocabulary: <|endoftext|> for both. */
	cfg.vocab_size = 50257;
	cfg.n_eos = 0;
	cfg.has_bos = 0;
	n = gpt2_export_config_json(buf, sizeof buf, &cfg, ST_DTYPE_F32);
	ck_assert_ptr_nonnull(strstr(buf, "\"bos_token_id\": 50256,\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\"eos_token_id\": 50256,\n"));
}
END_TEST

/* ---- random init ------------------------------------------------------------ */

START_TEST(test_rng_streams)
{
	gpt2_export_rng a, b, c;
	gpt2_export_rng_init(&a, 42, "wte.weight", 10);
	gpt2_export_rng_init(&b, 42, "wte.weight", 10);
	gpt2_export_rng_init(&c, 42, "wpe.weight", 10);
	int same_c = 0;
	for (int i = 0; i < 1000; i++) {
		double x = gpt2_export_rng_normal(&a);
		ck_assert(x == gpt2_export_rng_normal(&b));
		same_c += x == gpt2_export_rng_normal(&c);
	}
	ck_assert_int_eq(same_c, 0);
	gpt2_export_rng_init(&a, 42, "wte.weight", 10);
	gpt2_export_rng_init(&b, 43, "wte.weight", 10);
	ck_assert(gpt2_export_rng_next(&a) != gpt2_export_rng_next(&b));
}
END_TEST

START_TEST(test_normal_distribution)
{
	/* Moments and the 1-sigma mass of 10^6 draws. */
	gpt2_export_rng r;
	gpt2_export_rng_init(&r, 1, "x", 1);
	enum { N = 1000000 };
	double sum = 0, sq = 0, in1 = 0, k4 = 0;
	for (int i = 0; i < N; i++) {
		double x = gpt2_export_rng_normal(&r);
		sum += x;
		sq += x * x;
		k4 += x * x * x * x;
		in1 += fabs(x) < 1;
	}
	double mean = sum / N, var = sq / N - mean * mean;
	ck_assert_msg(fabs(mean) < 0.005, "mean %g", mean);
	ck_assert_msg(fabs(var - 1) < 0.005, "variance %g", var);
	ck_assert_msg(fabs(k4 / N - 3) < 0.03, "fourth moment %g", k4 / N);
	ck_assert_msg(fabs(in1 / N - 0.682689) < 0.002, "P(|x|<1) %g", in1 / N);
}
END_TEST

static void stats(const float *x, uint64_t n, double *mean, double *std)
{
	double s = 0, q = 0;
	for (uint64_t i = 0; i < n; i++)
		s += x[i];
	*mean = s / (double)n;
	for (uint64_t i = 0; i < n; i++)
		q += (x[i] - *mean) * (x[i] - *mean);
	*std = sqrt(q / (double)n);
}

START_TEST(test_random_init_statistics)
{
	tmpdir_setup();
	gpt2_config cfg = {128, 5000, 4, 4, 64, 1e-5f, 0, {0}, 0, 0};
	char out[512], file[600], err[512];
	snprintf(out, sizeof out, "%s/r", tmp);
	ck_assert_msg(gpt2_export_random(out, &cfg, 5, &quiet_opts, err,
	                                 sizeof err) == 0, "%s", err);
	snprintf(file, sizeof file, "%s/model.safetensors", out);
	st_file *f;
	st_error e = {0};
	ck_assert_msg(st_file_open(&f, file, 0, &e) == ST_OK, "%s", e.message);
	ck_assert_uint_eq(st_file_n_tensors(f), 4 + 12 * 4);
	for (size_t i = 0; i < st_file_n_tensors(f); i++) {
		const st_tensor *t = st_file_tensor(f, i);
		ck_assert_int_eq(t->dtype, ST_DTYPE_F32);
		int slot, layer;
		ck_assert_int_eq(gpt2_name_lookup(&cfg, t->name, t->name_len, &slot,
		                                  &layer), GPT2_NAME_PARAM);
		uint64_t n;
		float *x = read_f32(f, t->name, &n);
		double want, mean, std;
		int normal = gpt2_export_init(&cfg, slot, &want);
		if (!normal) {
			for (uint64_t k = 0; k < n; k++)
				ck_assert_msg(x[k] == (float)want, "%s[%llu] = %g",
				              t->name, (unsigned long long)k,
				              (double)x[k]);
			free(x);
			continue;
		}
		stats(x, n, &mean, &std);
		/* The standard error of a std estimate is about std / sqrt(2n). */
		double tol = 5 * want / sqrt(2.0 * (double)n);
		ck_assert_msg(fabs(std - want) < tol, "%s: std %g, expected %g",
		              t->name, std, want);
		ck_assert_msg(fabs(mean) < 5 * want / sqrt((double)n),
		              "%s: mean %g", t->name, mean);
		free(x);
	}
	/* The residual projections are scaled by 1 / sqrt(2 L) = 1 / sqrt(8). */
	double v;
	ck_assert(gpt2_export_init(&cfg, GPT2_ATTPROJW, &v));
	ck_assert(fabs(v - 0.02 / sqrt(8.0)) < 1e-12);
	ck_assert(gpt2_export_init(&cfg, GPT2_FCPROJW, &v));
	ck_assert(fabs(v - 0.02 / sqrt(8.0)) < 1e-12);
	ck_assert(gpt2_export_init(&cfg, GPT2_WPE, &v) && v == 0.02);
	/* wte (5000 x 64) is large enough for a tight check. */
	uint64_t n;
	double mean, std;
	float *x = read_f32(f, "wte.weight", &n);
	stats(x, n, &mean, &std);
	ck_assert_msg(fabs(std - 0.02) < 1e-4, "wte std %g", std);
	free(x);
	st_file_close(f);
	tmpdir_teardown();
}
END_TEST

/* ---- the check ------------------------------------------------------------------ */

START_TEST(test_compare_catches_transpose_trap)
{
	gpt2_model *a, *b;
	char err[512];
	ck_assert_msg(gpt2_export_load_llmc(&a, DIR "tiny_fp32.bin", -1, err,
	                                    sizeof err) == 0, "%s", err);
	ck_assert_msg(gpt2_model_load(&b, DIR "tiny_fp32_hf", -1, err,
	                              sizeof err) == 0, "%s", err);
	gpt2_export_diff d;
	ck_assert_int_eq(gpt2_export_compare(a, b, &d, err, sizeof err), 0);
	ck_assert_int_eq(d.prompts, 3);
	ck_assert_int_eq(d.positions, 1 + 8 + 32);
	ck_assert(d.max_abs_diff == 0);
	ck_assert_int_eq(d.nonfinite, 0);

	/* The square c_proj of layer 1 loaded without its transpose: the
	 * shapes cannot tell, the logits do. */
	llmc_reader *r;
	ck_assert_int_eq(llmc_open(&r, DIR "tiny_fp32.bin", err, sizeof err), 0);
	size_t n = 16 * 16;
	float w[16 * 16];
	ck_assert_int_eq(llmc_read(r, GPT2_ATTPROJW, n, w, n, err, sizeof err), 0);
	llmc_close(r);
	ck_assert_int_eq(gpt2_model_fill(b, GPT2_ATTPROJW, 1, ST_DTYPE_F32, w, 0,
	                                 err, sizeof err), 0);
	ck_assert_int_eq(gpt2_export_compare(a, b, &d, err, sizeof err), 0);
	ck_assert_msg(d.max_abs_diff > 1e-3, "diff %g", d.max_abs_diff);
	gpt2_model_free(a);
	gpt2_model_free(b);
}
END_TEST

static Suite *gpt2export_suite(void)
{
	Suite *s = suite_create("gpt2export");
	TCase *tc = tcase_create("llmc");
	tcase_add_test(tc, test_pad_vocab);
	tcase_add_test(tc, test_sizes_gpt2_small);
	tcase_add_test(tc, test_header_round_trip);
	tcase_add_test(tc, test_header_refusals);
	suite_add_tcase(s, tc);
	tc = tcase_create("layouts");
	tcase_add_test(tc, test_fixtures_agree);
	tcase_add_test(tc, test_export_to_hf_transposes);
	tcase_add_test(tc, test_export_to_llmc_transposes);
	tcase_add_test(tc, test_export_refuses_shared_storage);
	tcase_add_test(tc, test_config_json_parses);
	tcase_add_test(tc, test_config_json_special_ids);
	suite_add_tcase(s, tc);
	tc = tcase_create("random");
	tcase_add_test(tc, test_rng_streams);
	tcase_add_test(tc, test_normal_distribution);
	tcase_add_test(tc, test_random_init_statistics);
	suite_add_tcase(s, tc);
	tc = tcase_create("check");
	tcase_add_test(tc, test_compare_catches_transpose_trap);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gpt2export_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
