/*
 * targets_arch.c - the fuzz target of libst's architecture module
 * (libst/arch.c, st/arch.h), shared by the libFuzzer harness (fuzz.c with
 * -DFUZZ_ARCH, built by build.sh) and the corpus replay unit test
 * (tests/check_arch_fuzz_corpus.c), which both #include this file.
 *
 *   fuzz_arch   config.json text: st_arch_config_parse returns ST_OK,
 *               ST_EUNSUPPORTED or ST_EFORMAT with a message; what parses
 *               has sizes in range, a parameter list whose shapes sum to
 *               st_arch_count, and compares against a fixed GPT-2
 *               snapshot with every count adding up; st_arch_config_diff
 *               of the text against itself finds nothing, against a fixed
 *               config (both ways) calls back once per key it counts.
 *               The text is also looked up as a tensor name of each map (up to
 *               a NUL): a name a GGUF map knows maps back to itself;
 *               llama's row permutation stays in its head.
 *
 * It is not a test of messages or exact results: the unit tests do that.
 */
#include <st.h>
/* fuzz.h's file and mode-byte helpers are not needed here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "fuzz.h"
#pragma GCC diagnostic pop

#include <stdlib.h>
#include <string.h>

static st_checkpoint *fz_arch_ck;

static void fz_arch_cleanup(void)
{
	st_checkpoint_close(fz_arch_ck);
	fz_arch_ck = NULL;
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
	int n = st_arch_config_diff(text, size, text, size, fz_on_diff, NULL,
	                            NULL);
	CHECK(n == ST_EFORMAT || (n == 0 && fz_diffs == 0));
	for (int way = 0; way < 2; way++) {
		fz_diffs = 0;
		n = way ? st_arch_config_diff(text, size, fixed, sizeof fixed - 1,
		                              fz_on_diff, NULL, NULL)
		        : st_arch_config_diff(fixed, sizeof fixed - 1, text, size,
		                              fz_on_diff, NULL, NULL);
		CHECK(n == ST_EFORMAT || (n >= 0 && n == fz_diffs));
	}
}

/*
 * A name a GGUF map knows maps back to itself (gpt2's transformer.
 * aside), with the same flags, in every map; a permuted row stays in range.
 */
static void fz_gguf_names(const char *text, size_t size)
{
	static const char *const maps[] = {"gpt2", "llama", "qwen2", "qwen3"};
	char name[128], there[128], back[128];
	size_t len = strnlen(text, size < sizeof name ? size : sizeof name - 1);
	memcpy(name, text, len);
	name[len] = '\0';
	for (size_t m = 0; m < sizeof maps / sizeof maps[0]; m++) {
		const char *arch = maps[m];
		st_arch_gguf_info a, b;
		if (st_arch_to_gguf(arch, name, there, sizeof there, &a) == ST_OK) {
			CHECK(st_arch_from_gguf(arch, there, back, sizeof back, &b) == ST_OK);
			const char *hf = m || strncmp(name, "transformer.", 12) ? name : name + 12;
			CHECK(strcmp(back, hf) == 0);
			CHECK(a.transpose == b.transpose && a.keep_f32 == b.keep_f32 &&
			      a.layer == b.layer && a.permute == b.permute);
			CHECK(!a.permute || !strcmp(arch, "llama"));
		}
		if (st_arch_from_gguf(arch, name, there, sizeof there, &a) == ST_OK) {
			CHECK(st_arch_to_gguf(arch, there, back, sizeof back, &b) == ST_OK);
			CHECK(strcmp(back, name) == 0);
		}
	}
	CHECK(st_arch_to_gguf(name, "lm_head.weight", there, sizeof there, NULL) ==
	      (st_arch_gguf_known(name) ? (strcmp(name, "gpt2") ? ST_OK : ST_ENOTFOUND)
	                                : ST_EUNSUPPORTED));
	/* The text's first bytes as row, rows and heads. */
	uint64_t v[3] = {0, 0, 0}, f;
	memcpy(v, text, size < sizeof v ? size : sizeof v);
	uint64_t rows = v[1] % 4096, heads = v[2] % 64, row = rows ? v[0] % rows : 0;
	if (st_arch_permuted_row(row, rows, heads, &f) == ST_OK)
		CHECK(f < rows && f / (rows / heads) == row / (rows / heads));
}

static void fuzz_arch(const unsigned char *data, size_t size)
{
	fz_config_diff((const char *)data, size);
	fz_gguf_names((const char *)data, size);
	st_arch_config cfg;
	st_error err;
	err.message[0] = 0;
	int rc = st_arch_config_parse(&cfg, (const char *)data, size,
	                              "config.json", &err);
	CHECK(rc == ST_OK || rc == ST_EUNSUPPORTED || rc == ST_EFORMAT);
	CHECK(memchr(cfg.arch, 0, sizeof cfg.arch) != NULL);
	if (rc == ST_EFORMAT) {
		CHECK(err.code == rc);
		CHECK(strncmp(err.message, "config.json: ", 13) == 0 &&
		      strlen(err.message) > 13);
		return;
	}
	if (rc == ST_EUNSUPPORTED)
		return;
	CHECK(cfg.family == ST_ARCH_GPT2 || cfg.family == ST_ARCH_LLAMA);
	CHECK(cfg.layers >= 1 && cfg.layers <= 4096);
	CHECK(cfg.heads >= 1 && cfg.kv_heads >= 1 && cfg.heads % cfg.kv_heads == 0);
	st_arch_param *p;
	size_t n;
	CHECK(st_arch_expected(&cfg, &p, &n, NULL) == ST_OK);
	CHECK(n > 0);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		CHECK(p[i].ndim == 1 || p[i].ndim == 2);
		CHECK(p[i].shape[0] >= 1 && p[i].shape[0] <= ((uint64_t)1 << 33));
		sum += p[i].ndim == 1 ? p[i].shape[0] : p[i].shape[0] * p[i].shape[1];
	}
	free(p);
	CHECK(sum == st_arch_count(&cfg));
	if (!fz_arch_ck) {
		st_error e;
		CHECK(st_checkpoint_open(&fz_arch_ck,
		                         ST_TESTDATA "/archcheck/gpt2-legacy", 0,
		                         &e) == ST_OK);
	}
	st_arch_report r;
	CHECK(st_arch_compare(&cfg, fz_arch_ck, &r, NULL) == ST_OK);
	CHECK(r.implied == sum && r.n_expected == n);
	CHECK(r.n_matched + r.n_missing + r.n_misshapen == n);
	CHECK(r.n_matched + r.n_misshapen + r.n_buffers + r.n_alias +
	      r.n_unknown == st_checkpoint_n_tensors(fz_arch_ck));
	CHECK(r.found <= r.implied);
	st_arch_report_free(&r);
}
