/*
 * check_gpt2_trace.c - tools/gpt2/trace.c and the forward pass's trace
 * hook: every intermediate of gpt2_forward, written as a trace, against
 * the traces scripts/gpt2_trace_torch.py (plain PyTorch) made for the same
 * snapshots and prompts (testdata/trace/, see its gen_fixtures.py).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpt2/gpt2.h"
#include "gpt2/trace.h"

#define DIR ST_TESTDATA "/trace/"

static const int32_t P7[7] = {38, 238, 149, 176, 179, 212, 8};

/* Run ids through DIR/<model> with a trace written to a temporary file. */
static char *run_trace(const char *model, const int32_t *ids, int T,
                       float *logits)
{
	char err[1024];
	gpt2_model *m;
	gpt2_cache *c;
	gpt2_trace *tr;
	ck_assert_msg(gpt2_model_load(&m, model, -1, err, sizeof err) == 0, "%s",
	              err);
	ck_assert(gpt2_model_set_threads(m, 2, err, sizeof err) == 0);
	ck_assert(gpt2_cache_new(&c, m, T, err, sizeof err) == 0);
	ck_assert(gpt2_trace_new(&tr, &m->config, T, err, sizeof err) == 0);
	gpt2_cache_set_trace(c, gpt2_trace_record, tr);
	ck_assert_msg(gpt2_forward(m, c, ids, T, logits, 1, err, sizeof err) == 0,
	              "%s", err);
	static char path[] = "/tmp/check_gpt2_trace_XXXXXX";
	strcpy(path, "/tmp/check_gpt2_trace_XXXXXX");
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	close(fd);
	ck_assert_msg(gpt2_trace_write(tr, path, ids, err, sizeof err) == 0, "%s",
	              err);
	ck_assert_uint_eq(gpt2_trace_n_tensors(tr), 6 + 13 * m->config.num_layers);
	gpt2_trace_free(tr);
	gpt2_cache_free(c);
	gpt2_model_free(m);
	return path;
}

/*
 * Compare every tensor of ref (in its recorded order) with ours: names,
 * shapes, the order itself, and |ours - ref| <= atol + rtol * max |ref|
 * (the largest magnitude of that tensor: sums that cancel lose digits
 * relative to their terms, not to their result). Returns the worst
 * absolute difference.
 */
static double compare(const char *ref_path, const char *ours_path,
                      double atol, double rtol)
{
	st_checkpoint *ref, *ours;
	st_error e;
	ck_assert(st_checkpoint_open(&ref, ref_path, 0, &e) == ST_OK);
	ck_assert(st_checkpoint_open(&ours, ours_path, 0, &e) == ST_OK);
	const char *ro = st_file_meta_get(st_checkpoint_file(ref, 0), "order");
	const char *oo = st_file_meta_get(st_checkpoint_file(ours, 0), "order");
	ck_assert_ptr_nonnull(ro);
	ck_assert_ptr_nonnull(oo);
	ck_assert_str_eq(oo, ro);
	ck_assert_uint_eq(st_checkpoint_n_tensors(ours),
	                  st_checkpoint_n_tensors(ref));
	double worst = 0;
	const char *p = ro;
	size_t names = 0;
	while (*p) {
		const char *q = strchr(p, ',');
		size_t len = q ? (size_t)(q - p) : strlen(p);
		long ri = st_checkpoint_find(ref, p, len);
		long oi = st_checkpoint_find(ours, p, len);
		ck_assert_msg(ri >= 0 && oi >= 0, "%.*s", (int)len, p);
		const st_tensor *rt = st_checkpoint_tensor(ref, (size_t)ri, NULL);
		const st_tensor *ot = st_checkpoint_tensor(ours, (size_t)oi, NULL);
		ck_assert_uint_eq(ot->ndim, rt->ndim);
		for (unsigned d = 0; d < rt->ndim; d++)
			ck_assert_uint_eq(ot->shape[d], rt->shape[d]);
		ck_assert_int_eq(ot->dtype, rt->dtype);
		const void *rd, *od;
		ck_assert(st_checkpoint_data(ref, (size_t)ri, &rd, &e) == ST_OK);
		ck_assert(st_checkpoint_data(ours, (size_t)oi, &od, &e) == ST_OK);
		if (rt->dtype == ST_DTYPE_I64) {
			ck_assert(memcmp(rd, od, rt->n_bytes) == 0);
		} else {
			ck_assert_int_eq(rt->dtype, ST_DTYPE_F32);
			double scale = 0;
			for (uint64_t i = 0; i < rt->n_elements; i++) {
				float b;
				memcpy(&b, (const char *)rd + 4 * i, 4);
				scale = fmax(scale, fabs((double)b));
			}
			for (uint64_t i = 0; i < rt->n_elements; i++) {
				float a, b;
				memcpy(&a, (const char *)od + 4 * i, 4);
				memcpy(&b, (const char *)rd + 4 * i, 4);
				double d = fabs((double)a - (double)b);
				ck_assert_msg(d <= atol + rtol * scale,
				              "%.*s[%llu]: %.9g, reference %.9g", (int)len,
				              p, (unsigned long long)i, (double)a, (double)b);
				if (d > worst)
					worst = d;
			}
		}
		names++;
		p = q ? q + 1 : p + len;
	}
	ck_assert_uint_eq(names, st_checkpoint_n_tensors(ref));
	st_checkpoint_close(ref);
	st_checkpoint_close(ours);
	return worst;
}

START_TEST(init_trace_within_1e5_of_torch)
{
	/* GPT-2's initialisation: activations O(1); 1e-5 absolute everywhere. */
	int32_t ids[16];
	for (int i = 0; i < 16; i++)
		ids[i] = 3 + i;
	float *logits = malloc(16 * 128 * sizeof(float));
	char *path = run_trace(DIR "gpt2-init", ids, 16, logits);
	double worst = compare(DIR "ref-init-t16.safetensors", path, 1e-5, 0);
	fprintf(stderr, "gpt2-init, 16 tokens: worst abs diff %.3g\n", worst);
	unlink(path);
	free(logits);
}
END_TEST

START_TEST(tiny_trace_within_f32_tolerance_of_torch)
{
	/*
	 * tiny-f32's large weights make a residual stream up to ~25, where an
	 * F32 ulp is 2e-6, and sums of such terms cancel to values near 0:
	 * 1e-5 plus 1.3e-6 (torch.testing's F32 rtol) of the tensor's largest
	 * magnitude.
	 */
	float *logits = malloc(7 * 300 * sizeof(float));
	char *path = run_trace(ST_TESTDATA "/gpt2/tiny-f32", P7, 7, logits);
	double worst = compare(DIR "ref-tiny-p7.safetensors", path, 1e-5, 1.3e-6);
	fprintf(stderr, "tiny-f32, 7 tokens: worst abs diff %.3g\n", worst);
	unlink(path);
	free(logits);
}
END_TEST

START_TEST(trace_leaves_logits_unchanged)
{
	char err[1024];
	float with[7 * 300], without[7 * 300];
	char *path = run_trace(ST_TESTDATA "/gpt2/tiny-f32", P7, 7, with);
	unlink(path);
	gpt2_model *m;
	gpt2_cache *c;
	ck_assert(gpt2_model_load(&m, ST_TESTDATA "/gpt2/tiny-f32", -1, err,
	                          sizeof err) == 0);
	ck_assert(gpt2_model_set_threads(m, 2, err, sizeof err) == 0);
	ck_assert(gpt2_cache_new(&c, m, 7, err, sizeof err) == 0);
	ck_assert(gpt2_forward(m, c, P7, 7, without, 1, err, sizeof err) == 0);
	ck_assert(memcmp(with, without, sizeof with) == 0);
	gpt2_cache_free(c);
	gpt2_model_free(m);
}
END_TEST

START_TEST(missing_stage_refused)
{
	char err[256] = "";
	gpt2_config cfg = {.max_seq_len = 8, .vocab_size = 4, .num_layers = 1,
	                   .num_heads = 1, .channels = 2, .layer_norm_eps = 1e-5f};
	gpt2_trace *tr;
	ck_assert(gpt2_trace_new(&tr, &cfg, 1, err, sizeof err) == 0);
	float v[8] = {0};
	gpt2_trace_record(tr, GPT2_STAGE_WTE, -1, v, 1, 2);
	int32_t id = 0;
	ck_assert_int_eq(gpt2_trace_write(tr, "/nonexistent/x.safetensors", &id,
	                                  err, sizeof err), -1);
	ck_assert_str_eq(err, "trace: wpe was not recorded");
	/* A stage of the wrong width is refused by name. */
	gpt2_trace_record(tr, GPT2_STAGE_LN1, 0, v, 1, 3);
	ck_assert_int_eq(gpt2_trace_write(tr, "/nonexistent/x.safetensors", &id,
	                                  err, sizeof err), -1);
	ck_assert_str_eq(err, "trace: h.0.ln_1: not the shape of this trace");
	gpt2_trace_free(tr);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpt2_trace");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, init_trace_within_1e5_of_torch);
	tcase_add_test(tc, tiny_trace_within_f32_tolerance_of_torch);
	tcase_add_test(tc, trace_leaves_logits_unchanged);
	tcase_add_test(tc, missing_stage_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
