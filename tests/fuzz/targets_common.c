/*
 * targets_common.c - fuzz targets of the tools' shared modules
 * (tools/common), shared by the libFuzzer harness (fuzz.c with
 * -DFUZZ_COMMON, built by build.sh) and the corpus replay unit test
 * (tests/check_common_fuzz_corpus.c), which both #include this file.
 *
 *   fuzz_archcheck  config.json text: archcheck_config_parse returns 0, 1
 *                   or -1 with a message; what parses has sizes in range,
 *                   a parameter list whose shapes sum to archcheck_count,
 *                   and compares against a fixed GPT-2 snapshot with every
 *                   count adding up; archcheck_config_diff of the text
 *                   against itself finds nothing, against a fixed config
 *                   (both ways) calls back once per key it counts.
 *
 *   fuzz_order      an __metadata__ "order" entry (the text up to a NUL,
 *                   if valid UTF-8) on a fixed file of five tensors:
 *                   order_tensors gives every tensor exactly once, the
 *                   listed ones first.
 *
 * It is not a test of messages or exact results: the unit tests do that.
 */
#include "common/archcheck.h"
#include "common/order.h"
/* fuzz.h's file and mode-byte helpers are not needed here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "fuzz.h"
#pragma GCC diagnostic pop

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static st_checkpoint *fz_common_ck;

static void fz_common_cleanup(void)
{
	st_checkpoint_close(fz_common_ck);
	fz_common_ck = NULL;
}

static int fz_diffs;

static void fz_on_diff(void *ctx, const char *key, const char *a,
                       const char *b)
{
	(void)ctx;
	CHECK(key != NULL && (a != NULL || b != NULL));
	fz_diffs++;
}

static void fz_config_diff(const char *text, size_t size)
{
	static const char fixed[] = "{\"model_type\": \"gpt2\", \"n_layer\": 2, "
	                            "\"layer_norm_epsilon\": 1e-05}";
	fz_diffs = 0;
	int n = archcheck_config_diff(text, size, text, size, fz_on_diff, NULL);
	CHECK(n == -1 || (n == 0 && fz_diffs == 0));
	for (int way = 0; way < 2; way++) {
		fz_diffs = 0;
		n = way ? archcheck_config_diff(text, size, fixed, sizeof fixed - 1,
		                                fz_on_diff, NULL)
		        : archcheck_config_diff(fixed, sizeof fixed - 1, text, size,
		                                fz_on_diff, NULL);
		CHECK(n >= -1 && (n < 0 || n == fz_diffs));
	}
}

static void fuzz_archcheck(const unsigned char *data, size_t size)
{
	fz_config_diff((const char *)data, size);
	archcheck_config cfg;
	char err[512];
	err[0] = 0;
	int rc = archcheck_config_parse(&cfg, (const char *)data, size,
	                                "config.json", err, sizeof err);
	CHECK(rc == 0 || rc == 1 || rc == -1);
	CHECK(memchr(cfg.arch, 0, sizeof cfg.arch) != NULL);
	if (rc == -1) {
		CHECK(strncmp(err, "config.json: ", 13) == 0 && strlen(err) > 13);
		return;
	}
	if (rc == 1)
		return;
	CHECK(cfg.family == ARCHCHECK_GPT2 || cfg.family == ARCHCHECK_LLAMA);
	CHECK(cfg.layers >= 1 && cfg.layers <= 4096);
	CHECK(cfg.heads >= 1 && cfg.kv_heads >= 1 && cfg.heads % cfg.kv_heads == 0);
	archcheck_param *p;
	size_t n = archcheck_expected(&cfg, &p);
	CHECK(n > 0);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		CHECK(p[i].ndim == 1 || p[i].ndim == 2);
		CHECK(p[i].shape[0] >= 1 && p[i].shape[0] <= ((uint64_t)1 << 33));
		sum += p[i].ndim == 1 ? p[i].shape[0] : p[i].shape[0] * p[i].shape[1];
	}
	free(p);
	CHECK(sum == archcheck_count(&cfg));
	if (!fz_common_ck) {
		st_error e;
		CHECK(st_checkpoint_open(&fz_common_ck,
		                         ST_TESTDATA "/archcheck/gpt2-legacy", 0,
		                         &e) == ST_OK);
	}
	archcheck_report r;
	CHECK(archcheck_compare(&cfg, fz_common_ck, &r) == 0);
	CHECK(r.implied == sum && r.n_expected == n);
	CHECK(r.n_matched + r.n_missing + r.n_misshapen == n);
	CHECK(r.n_matched + r.n_misshapen + r.n_buffers + r.n_alias +
	      r.n_unknown == st_checkpoint_n_tensors(fz_common_ck));
	CHECK(r.found <= r.implied);
	archcheck_report_free(&r);
}

static void fuzz_order(const unsigned char *data, size_t size)
{
	static const char *names[] = {"a", "b", "a.b", "h.0.ln_1", ","};
	enum { N = 5 };
	char *order = malloc(size + 1);
	CHECK(order != NULL);
	memcpy(order, data, size);
	order[size] = 0;
	char path[] = "/tmp/fuzz_order_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	st_writer *w;
	st_error e;
	CHECK(st_writer_new(&w, &e) == ST_OK);
	if (st_writer_set_meta(w, "order", order, &e) != ST_OK) {
		st_writer_free(w); /* not UTF-8: nothing to walk */
		unlink(path);
		free(order);
		return;
	}
	for (int i = 0; i < N; i++)
		CHECK(st_writer_add(w, names[i], strlen(names[i]), ST_DTYPE_U8, 0,
		                    NULL, &e) == ST_OK);
	unsigned char zeros[N] = {0};
	CHECK(st_writer_open(w, path, &e) == ST_OK);
	CHECK(st_writer_write(w, zeros, N, &e) == ST_OK);
	CHECK(st_writer_finish(w, &e) == ST_OK);
	st_writer_free(w);
	st_checkpoint *ck;
	CHECK(st_checkpoint_open(&ck, path, 0, &e) == ST_OK);
	size_t *idx;
	CHECK(order_tensors(ck, &idx) == 1);
	unsigned char seen[N] = {0};
	for (size_t k = 0; k < N; k++) {
		CHECK(idx[k] < N && !seen[idx[k]]);
		seen[idx[k]] = 1;
	}
	free(idx);
	st_checkpoint_close(ck);
	unlink(path);
	free(order);
}
