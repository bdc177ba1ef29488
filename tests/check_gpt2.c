/*
 * check_gpt2.c - the GPT-2 model code (tools/gpt2/gpt2*.c): config
 * parsing and refusals, the name table, the loader's rules on broken
 * snapshots, the matmul against its naive reference, logits against the
 * independent PyTorch reference (testdata/gpt2/reference.py, fixtures made
 * by gen_fixtures.py), the KV cache against a full recompute, thread-count
 * independence, greedy ids, and the sampler. The numeric tests run once
 * per kernel table (portable, avx2, avx512: kernels.h) the CPU can run.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <st.h>

#include "gpt2/gpt2.h"
#include "gpt2/kernels.h"

#define DIR ST_TESTDATA "/gpt2/"

/* ---- helpers ------------------------------------------------------------- */

struct ref {
	int T, V;
	float *logits;    /* (T, V) */
	int32_t ids[128]; /* the prompt */
	int32_t greedy[32];
	int n_greedy;
};

static void read_ints(st_file *f, const char *name, int32_t *out, int max,
                      int *n)
{
	long i = st_file_find(f, name, strlen(name));
	*n = 0;
	if (i < 0)
		return;
	const st_tensor *t = st_file_tensor(f, (size_t)i);
	ck_assert_int_eq(t->dtype, ST_DTYPE_I64);
	ck_assert_int_le((int)t->n_elements, max);
	const void *data;
	ck_assert_int_eq(st_file_data(f, (size_t)i, &data, NULL), ST_OK);
	for (uint64_t k = 0; k < t->n_elements; k++) {
		int64_t v;
		memcpy(&v, (const char *)data + 8 * k, 8);
		out[k] = (int32_t)v;
	}
	*n = (int)t->n_elements;
}

static struct ref load_ref(const char *file)
{
	char path[4096];
	snprintf(path, sizeof path, DIR "%s", file);
	st_file *f;
	st_error e = {0};
	ck_assert_msg(st_file_open(&f, path, 0, &e) == ST_OK, "%s", e.message);
	struct ref r = {0};
	long i = st_file_find(f, "logits", 6);
	ck_assert(i >= 0);
	const st_tensor *t = st_file_tensor(f, (size_t)i);
	ck_assert_int_eq(t->dtype, ST_DTYPE_F32);
	r.T = (int)t->shape[0];
	r.V = (int)t->shape[1];
	const void *data;
	ck_assert_int_eq(st_file_data(f, (size_t)i, &data, NULL), ST_OK);
	r.logits = malloc(t->n_bytes);
	memcpy(r.logits, data, t->n_bytes);
	int n;
	read_ints(f, "ids", r.ids, 128, &n);
	ck_assert_int_eq(n, r.T);
	read_ints(f, "greedy", r.greedy, 32, &r.n_greedy);
	st_file_close(f);
	return r;
}

/*
 * The kernel table of a loop test (_i indexes gpt2_kernel_names), given
 * to every model load_model makes; NULL: the process default.
 */
static const gpt2_kernels *kern;

/* Use table i; 0 when this CPU cannot run it (the test then passes). */
static int use_kernel(int i)
{
	kern = gpt2_kernels_find(gpt2_kernel_names[i]);
	if (!kern)
		fprintf(stderr, "kernel %s: not on this CPU, skipped\n",
		        gpt2_kernel_names[i]);
	return kern != NULL;
}

static gpt2_model *load_model(const char *name, int dtype)
{
	char path[4096], err[1024];
	snprintf(path, sizeof path, DIR "%s", name);
	gpt2_model *m;
	ck_assert_msg(gpt2_model_load(&m, path, dtype, err, sizeof err) == 0,
	              "%s: %s", name, err);
	if (kern)
		m->kernels = kern;
	return m;
}

static float max_diff(const float *a, const float *b, size_t n)
{
	float worst = 0.0f;
	for (size_t i = 0; i < n; i++) {
		float d = fabsf(a[i] - b[i]);
		if (!(d <= worst))
			worst = d; /* NaN counts as the worst */
	}
	return worst;
}

/* All logits of the prompt in one pass. */
static float *run_all(gpt2_model *m, const int32_t *ids, int T)
{
	gpt2_cache *c;
	char err[256];
	ck_assert_int_eq(gpt2_cache_new(&c, m, 0, NULL, 0), 0);
	float *out = malloc((size_t)T * (size_t)m->config.vocab_size * sizeof(float));
	ck_assert_msg(gpt2_forward(m, c, ids, T, out, 1, err, sizeof err) == 0,
	              "%s", err);
	gpt2_cache_free(c);
	return out;
}

/* The logits of each token, run one at a time through the cache. */
static float *run_steps(gpt2_model *m, const int32_t *ids, int T)
{
	gpt2_cache *c;
	char err[256];
	int V = m->config.vocab_size;
	ck_assert_int_eq(gpt2_cache_new(&c, m, 0, NULL, 0), 0);
	float *out = malloc((size_t)T * (size_t)V * sizeof(float));
	for (int t = 0; t < T; t++)
		ck_assert_msg(gpt2_forward(m, c, &ids[t], 1, out + (size_t)t * V, 0, err,
		                           sizeof err) == 0, "%s", err);
	gpt2_cache_free(c);
	return out;
}

static const char *const REFS[] = {"p1", "p7", "p70"};

/* Loading broken/<dir> fails with a message (in err) holding needle. */
static void expect_load_error(const char *dir, const char *needle, char *err,
                              size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof path, DIR "broken/%s", dir);
	gpt2_model *m = NULL;
	err[0] = '\0';
	ck_assert_int_eq(gpt2_model_load(&m, path, -1, err, errlen), -1);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(err, needle) != NULL, "%s: '%s' lacks '%s'", dir,
	              err, needle);
}

/* ---- config -------------------------------------------------------------- */

START_TEST(test_config_tiny)
{
	gpt2_config c;
	char err[512];
	ck_assert_int_eq(gpt2_config_load(&c, DIR "tiny-f32", err, sizeof err), 0);
	ck_assert_int_eq(c.vocab_size, 300);
	ck_assert_int_eq(c.max_seq_len, 128);
	ck_assert_int_eq(c.channels, 32);
	ck_assert_int_eq(c.num_layers, 2);
	ck_assert_int_eq(c.num_heads, 4);
	ck_assert_float_eq(c.layer_norm_eps, 1e-5f);
	ck_assert_int_eq(c.n_eos, 1);
	ck_assert_int_eq(c.eos[0], 299);
}
END_TEST

START_TEST(test_config_defaults_and_eos)
{
	gpt2_config c;
	char err[512];
	const char *j = "{\"model_type\":\"gpt2\",\"vocab_size\":10,\"n_positions\":4,"
	                "\"n_embd\":8,\"n_layer\":1,\"n_head\":2,\"n_inner\":32,"
	                "\"activation_function\":\"gelu_pytorch_tanh\","
	                "\"eos_token_id\":[3,7]}";
	ck_assert_msg(gpt2_config_parse(&c, j, strlen(j), "c", err, sizeof err) == 0,
	              "%s", err);
	ck_assert_float_eq(c.layer_norm_eps, 1e-5f);
	ck_assert_int_eq(c.n_eos, 2);
	ck_assert_int_eq(c.eos[1], 7);
	/* No eos_token_id at all: none. */
	const char *k = "{\"model_type\":\"gpt2\",\"vocab_size\":10,\"n_positions\":4,"
	                "\"n_embd\":8,\"n_layer\":1,\"n_head\":2}";
	ck_assert_int_eq(gpt2_config_parse(&c, k, strlen(k), "c", err, sizeof err), 0);
	ck_assert_int_eq(c.n_eos, 0);
}
END_TEST

/* Each refused config names the setting it refuses. */
START_TEST(test_config_refusals)
{
	static const struct { const char *dir, *needle; } cases[] = {
		{"config-model-type", "model_type \"gptj\" is not supported"},
		{"config-activation", "activation_function \"relu\" is not implemented"},
		{"config-n-inner", "n_inner 16 is not implemented"},
		{"config-inverse-layer", "scale_attn_by_inverse_layer_idx true is not implemented"},
		{"config-upcast", "reorder_and_upcast_attn true is not implemented"},
		{"config-cross", "add_cross_attention true is not implemented"},
		{"config-untied", "tie_word_embeddings false is not implemented"},
		{"config-missing", "\"n_embd\" is missing"},
		{"config-heads", "n_head 3 does not divide n_embd 8"},
		{"config-json", "config.json: not valid JSON"},
		{"config-none", "config.json: No such file"},
	};
	char err[1024];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		expect_load_error(cases[i].dir, cases[i].needle, err, sizeof err);
}
END_TEST

/* Malformed values: each is refused with a message naming the key. */
START_TEST(test_config_errors)
{
	static const char *const base[] = {
		"\"model_type\":\"gpt2\"", "\"vocab_size\":10", "\"n_positions\":4",
		"\"n_embd\":8", "\"n_layer\":1", "\"n_head\":2",
	};
	static const struct { const char *key, *value, *needle; } cases[] = {
		{"vocab_size", "\"300\"", "\"vocab_size\" must be an integer"},
		{"n_layer", "0", "\"n_layer\" is 0, expected 1 to 4096"},
		{"n_layer", "1e10", "\"n_layer\" is 10000000000, expected 1 to 4096"},
		{"n_embd", "2.5", "\"n_embd\" must be an integer"},
		{"n_head", "5000", "\"n_head\" is 5000, expected 1 to 1024"},
		{"n_positions", "-4", "\"n_positions\" is -4"},
		{"layer_norm_epsilon", "-1", "\"layer_norm_epsilon\" must be a positive number"},
		{"layer_norm_epsilon", "1e210", "\"layer_norm_epsilon\" is 1e+210, outside the range of a float"},
		{"layer_norm_epsilon", "1e-300", "\"layer_norm_epsilon\" is 1e-300, outside the range of a float"},
		{"scale_attn_weights", "\"yes\"", "\"scale_attn_weights\" must be true or false"},
		{"scale_attn_weights", "false", "scale_attn_weights false is not implemented"},
		{"eos_token_id", "\"x\"", "\"eos_token_id\" must be an integer or a list"},
		{"eos_token_id", "[1,2,3,4,5,6,7,8,9]", "lists more than 8 ids"},
		{"eos_token_id", "-1", "\"eos_token_id\" must be a token id"},
		{"activation_function", "7", "\"activation_function\" must be a string"},
		{"model_type", "5", "\"model_type\" is not a string, expected \"gpt2\""},
		{"n_layer\":1,\"n_layer", "2", "key \"n_layer\" appears twice"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char json[512], err[512] = "";
		int n = snprintf(json, sizeof json, "{\"%s\":%s", cases[i].key, cases[i].value);
		for (size_t k = 0; k < sizeof base / sizeof base[0]; k++) {
			char quoted[64];
			snprintf(quoted, sizeof quoted, "\"%s\":", cases[i].key);
			if (strncmp(base[k], quoted, strlen(quoted)) != 0)
				n += snprintf(json + n, sizeof json - (size_t)n, ",%s", base[k]);
		}
		snprintf(json + n, sizeof json - (size_t)n, "}");
		gpt2_config c;
		ck_assert_int_eq(gpt2_config_parse(&c, json, strlen(json), "cfg.json",
		                                   err, sizeof err), -1);
		ck_assert_msg(strstr(err, cases[i].needle) && strncmp(err, "cfg.json: ", 10) == 0,
		              "%s: '%s' lacks '%s'", json, err, cases[i].needle);
	}
	gpt2_config c;
	char err[512];
	ck_assert_int_eq(gpt2_config_parse(&c, "[1]", 3, "cfg.json", err, sizeof err), -1);
	ck_assert_str_eq(err, "cfg.json: not a JSON object");
	ck_assert_int_eq(gpt2_config_parse(&c, "{\"a\":1} x", 9, "cfg.json", err, sizeof err), -1);
	ck_assert_str_eq(err, "cfg.json: not valid JSON (extra data at byte 8)");
	ck_assert_int_eq(gpt2_config_parse(&c, "{\"a\":1}\0", 8, "cfg.json", err, sizeof err), -1);
	ck_assert_str_eq(err, "cfg.json: not valid JSON (extra data at byte 7)");
}
END_TEST

/*
 * A config of a million distinct keys parses, and a duplicate among them
 * is found: comparing every pair of keys took about 17 minutes (found by
 * hand).
 */
START_TEST(test_config_many_keys)
{
	size_t n = 1000000, cap = n * 16 + 256, o = 0;
	char *json = malloc(cap);
	ck_assert_ptr_nonnull(json);
	o += (size_t)snprintf(json, cap, "{\"model_type\":\"gpt2\",\"vocab_size\":10,"
	                      "\"n_positions\":4,\"n_embd\":8,\"n_layer\":1,\"n_head\":2");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(json + o, cap - o, ",\"k%07zu\":0", i);
	snprintf(json + o, cap - o, "}");
	gpt2_config c;
	char err[512] = "";
	ck_assert_msg(gpt2_config_parse(&c, json, o + 1, "cfg.json", err, sizeof err) == 0,
	              "%s", err);
	ck_assert_int_eq(c.channels, 8);
	snprintf(json + o, cap - o, ",\"k0765432\":1}");
	ck_assert_int_eq(gpt2_config_parse(&c, json, strlen(json), "cfg.json", err,
	                                   sizeof err), -1);
	ck_assert_str_eq(err, "cfg.json: key \"k0765432\" appears twice");
	free(json);
}
END_TEST

/* Text from the file in a message is one line (found by fuzzing). */
START_TEST(test_config_one_line_messages)
{
	static const struct { const char *json, *msg; } cases[] = {
		{"{\"model_type\":\"gp\\nt2\"}",
		 "cfg.json: model_type \"gp\\x0at2\" is not supported (expected \"gpt2\")"},
		{"{\"a\\tb\":1,\"a\\tb\":2}", "cfg.json: key \"a\\x09b\" appears twice"},
		{"{\"model_type\":\"gpt2\",\"vocab_size\":10,\"n_positions\":4,\"n_embd\":8,"
		 "\"n_layer\":1,\"n_head\":2,\"activation_function\":\"r\\relu\"}",
		 "cfg.json: activation_function \"r\\x0delu\" is not implemented (only gelu_new)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		gpt2_config c;
		char err[512] = "";
		ck_assert_int_eq(gpt2_config_parse(&c, cases[i].json, strlen(cases[i].json),
		                                   "cfg.json", err, sizeof err), -1);
		ck_assert_str_eq(err, cases[i].msg);
	}
}
END_TEST

/*
 * cJSON ends a key at a NUL: "n_layer<NUL>x" was read as n_layer and the
 * file accepted, where Python's json refuses the raw byte (or keeps the
 * whole key, for \u0000). Both are refused, and "\\u0000" (an escaped
 * backslash, then text) is not a NUL.
 */
START_TEST(config_refuses_nul_in_keys)
{
#define CFG_HEAD "{\"model_type\":\"gpt2\",\"vocab_size\":10,\"n_positions\":4," \
                 "\"n_embd\":8,\"n_head\":2,"
	static const char raw[] = CFG_HEAD "\"n_layer\0x\":1}";
	static const char esc[] = CFG_HEAD "\"n_layer\\u0000x\":1}";
	/* An escaped backslash before u0000 is text, not a NUL. */
	static const char text[] = CFG_HEAD "\"n_layer\":1,\"x\\\\u0000\":1}";
	static const struct { const char *json; size_t n; const char *msg; } cases[] = {
		{raw, sizeof raw - 1, "cfg.json: a NUL at byte 83 (a raw 0 byte): a key or "
		                      "value would be cut there"},
		{esc, sizeof esc - 1, "cfg.json: a NUL at byte 83 (\\u0000): a key or "
		                      "value would be cut there"},
	};
#undef CFG_HEAD
	gpt2_config c;
	char err[512] = "";
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ck_assert_int_eq(gpt2_config_parse(&c, cases[i].json, cases[i].n,
		                                   "cfg.json", err, sizeof err), -1);
		ck_assert_str_eq(err, cases[i].msg);
	}
	ck_assert_msg(gpt2_config_parse(&c, text, sizeof text - 1, "cfg.json", err,
	                                sizeof err) == 0, "%s", err);
}
END_TEST

/* ---- the name table --------------------------------------------------------- */

START_TEST(test_names_round_trip)
{
	gpt2_config c = {.vocab_size = 10, .max_seq_len = 4, .channels = 8,
	                 .num_layers = 12, .num_heads = 2, .layer_norm_eps = 1e-5f};
	char name[128], prefixed[160];
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		int nl = gpt2_param(s)->per_layer ? 12 : 1;
		for (int l = 0; l < nl; l++) {
			size_t n = gpt2_param_name(s, l, name, sizeof name);
			int slot = -1, layer = -1;
			ck_assert_int_eq(gpt2_name_lookup(&c, name, n, &slot, &layer),
			                 GPT2_NAME_PARAM);
			ck_assert_int_eq(slot, s);
			ck_assert_int_eq(layer, gpt2_param(s)->per_layer ? l : 0);
			snprintf(prefixed, sizeof prefixed, "transformer.%s", name);
			ck_assert_int_eq(gpt2_name_lookup(&c, prefixed, strlen(prefixed),
			                                  &slot, &layer), GPT2_NAME_PARAM);
			ck_assert_int_eq(slot, s);
		}
	}
	/* The Conv1D weights are exactly the four the seed names. */
	ck_assert(gpt2_param(GPT2_QKVW)->conv1d && gpt2_param(GPT2_ATTPROJW)->conv1d &&
	          gpt2_param(GPT2_FCW)->conv1d && gpt2_param(GPT2_FCPROJW)->conv1d);
	ck_assert(!gpt2_param(GPT2_WTE)->conv1d && !gpt2_param(GPT2_WPE)->conv1d);
	uint64_t shape[2];
	ck_assert_int_eq(gpt2_param_shape(&c, GPT2_QKVW, shape), 2);
	ck_assert(shape[0] == 8 && shape[1] == 24);
	ck_assert_int_eq(gpt2_param_shape(&c, GPT2_FCPROJW, shape), 2);
	ck_assert(shape[0] == 32 && shape[1] == 8);
}
END_TEST

START_TEST(test_names_special)
{
	gpt2_config c = {.vocab_size = 10, .max_seq_len = 4, .channels = 8,
	                 .num_layers = 12, .num_heads = 2, .layer_norm_eps = 1e-5f};
	int s, l;
#define KIND(str) gpt2_name_lookup(&c, str, sizeof(str) - 1, &s, &l)
	ck_assert_int_eq(KIND("lm_head.weight"), GPT2_NAME_LM_HEAD);
	ck_assert_int_eq(KIND("h.3.attn.bias"), GPT2_NAME_BUFFER);
	ck_assert_int_eq(KIND("transformer.h.11.attn.masked_bias"), GPT2_NAME_BUFFER);
	ck_assert_int_eq(KIND("h.12.attn.bias"), GPT2_NAME_UNKNOWN);   /* layer 12 of 12 */
	ck_assert_int_eq(KIND("h.01.ln_1.weight"), GPT2_NAME_UNKNOWN); /* not canonical */
	ck_assert_int_eq(KIND("h..ln_1.weight"), GPT2_NAME_UNKNOWN);
	ck_assert_int_eq(KIND("h.1.ln_1.weight.x"), GPT2_NAME_UNKNOWN);
	ck_assert_int_eq(KIND("h.99999999999999999999.ln_1.weight"), GPT2_NAME_UNKNOWN);
	ck_assert_int_eq(KIND("transformer.lm_head.weight"), GPT2_NAME_UNKNOWN);
	ck_assert_int_eq(KIND("model.wte.weight"), GPT2_NAME_UNKNOWN);
	ck_assert_int_eq(gpt2_name_lookup(&c, "wte.weight\0x", 12, &s, &l),
	                 GPT2_NAME_UNKNOWN);
	ck_assert_int_eq(KIND("h.0.ln_1.weight"), GPT2_NAME_PARAM);
#undef KIND
}
END_TEST

/* ---- loading errors ----------------------------------------------------------- */

START_TEST(test_broken_snapshots)
{
	static const struct { const char *dir, *needle; } cases[] = {
		{"missing-tensor", "missing tensor 'h.0.mlp.c_fc.bias'"},
		{"extra-tensor", "tensor 'h.0.attn.rotary_emb.inv_freq': unexpected tensor"},
		{"extra-layer", "tensor 'h.1.ln_1.weight': unexpected tensor"},
		{"wrong-shape", "tensor 'h.0.mlp.c_fc.weight': wrong shape ([8, 31], expected [8, 32])"},
		{"transposed", "tensor 'h.0.attn.c_attn.weight': wrong shape ([24, 8], expected [8, 24]): transposed?"},
		{"untied-head", "tensor 'lm_head.weight': differs from 'wte.weight' at [3, 5]"},
		{"int-dtype", "tensor 'ln_f.bias': dtype I64 is not a float type"},
		{"duplicate", "a second copy of"},
		{"no-weights", "broken/no-weights"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char err[1024];
		expect_load_error(cases[i].dir, cases[i].needle, err, sizeof err);
		/* Tensor errors name the file holding the tensor. */
		if (strncmp(cases[i].needle, "tensor '", 8) == 0)
			ck_assert_msg(strstr(err, "model.safetensors: tensor '") != NULL,
			              "%s: '%s' does not name the file", cases[i].dir, err);
	}
	/* The intact one (with a correct lm_head alias) loads. */
	gpt2_model *m = load_model("broken/ok", -1);
	ck_assert_int_eq(m->config.num_layers, 1);
	gpt2_model_free(m);
}
END_TEST

/*
 * Parameters that are views of one storage (a PyTorch file can hold such)
 * are refused: 2 MB of layers sharing one storage made a 400 MB model
 * (found by hand), and thousands of layers would make gigabytes.
 */
START_TEST(test_shared_storage)
{
	char err[1024];
	gpt2_model *m = NULL;
	ck_assert_int_eq(gpt2_model_load(&m, DIR "shared-storage", -1, err, sizeof err), -1);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(err, "shared-storage/pytorch_model.bin: tensor 'h.1.") &&
	              strstr(err, "': its data overlaps that of 'h.0.") &&
	              strstr(err, "(shared storage, expected data of its own)"),
	              "%s", err);
	/* lm_head.weight sharing wte.weight's storage is not a parameter. */
	m = load_model("tiny-torch", -1);
	gpt2_model_free(m);
}
END_TEST

/*
 * Write every tensor of cfg (F32, wte's value at i being i % 251 - 125, so
 * that BF16 holds it exactly), plus lm_head.weight as BF16 with element
 * differ_at (if < V * C) changed, to path.
 */
static void write_head_checkpoint(const char *path, const gpt2_config *cfg,
                                  size_t differ_at)
{
	st_writer *w;
	st_error e;
	ck_assert_int_eq(st_writer_new(&w, &e), ST_OK);
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		for (int l = 0; l < gpt2_param_layers(cfg, s); l++) {
			char name[128];
			uint64_t shape[2];
			size_t len = gpt2_param_name(s, l, name, sizeof name);
			int nd = gpt2_param_shape(cfg, s, shape);
			ck_assert_int_eq(st_writer_add(w, name, len, ST_DTYPE_F32,
			                               (unsigned)nd, shape, &e), ST_OK);
		}
	}
	uint64_t head_shape[2];
	gpt2_param_shape(cfg, GPT2_WTE, head_shape);
	ck_assert_int_eq(st_writer_add(w, "lm_head.weight", 14, ST_DTYPE_BF16, 2,
	                               head_shape, &e), ST_OK);
	ck_assert_msg(st_writer_open(w, path, &e) == ST_OK, "%s", e.message);
	for (size_t i = 0; i < st_writer_n_tensors(w); i++) {
		const st_tensor *t = st_writer_tensor(w, i);
		int head = t->dtype == ST_DTYPE_BF16;
		for (uint64_t k = 0; k < t->n_elements; k++) {
			float v = (float)((int)(k % 251) - 125);
			if (head && k == differ_at)
				v += 1.0f;
			if (head) {
				st_bf16 b = st_f32_to_bf16(v);
				ck_assert_int_eq(st_writer_write(w, &b, 2, &e), ST_OK);
			} else {
				ck_assert_int_eq(st_writer_write(w, &v, 4, &e), ST_OK);
			}
		}
	}
	ck_assert_msg(st_writer_finish(w, &e) == ST_OK, "%s", e.message);
	st_writer_free(w);
}

START_TEST(test_checkpoint_index_and_head)
{
	/* wte is 700 x 16 = 11200 elements: more than two chunks of the check. */
	gpt2_config cfg = {8, 700, 1, 2, 16, 1e-5f, 0, {0}, 0, 0};
	char path[] = "/tmp/check_gpt2_head.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	size_t where[GPT2_NUM_SLOTS], head;
	char err[1024];
	for (int differ = 0; differ < 2; differ++) {
		write_head_checkpoint(path, &cfg, differ ? 9000 : SIZE_MAX);
		st_checkpoint *ck;
		st_error e;
		ck_assert_int_eq(st_checkpoint_open(&ck, path, 0, &e), ST_OK);
		ck_assert_msg(gpt2_checkpoint_index(ck, &cfg, where, &head, err,
		                                    sizeof err) == 0, "%s", err);
		ck_assert_uint_eq(head, (size_t)st_checkpoint_find(ck,
		                                                   "lm_head.weight", 14));
		for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
			char name[128];
			size_t len = gpt2_param_name(s, 0, name, sizeof name);
			ck_assert_uint_eq(where[s],
			                  (size_t)st_checkpoint_find(ck, name, len));
		}
		int rc = gpt2_checkpoint_check_head(ck, &cfg, where, head, err,
		                                    sizeof err);
		if (differ) {
			/* Element 9000 is [562, 8]: 9000 % 251 - 125 = 90, plus 1. */
			ck_assert_int_eq(rc, -1);
			ck_assert_msg(strstr(err, ": tensor 'lm_head.weight': differs "
			                     "from 'wte.weight' at [562, 8] (91, "
			                     "expected 90)") != NULL, "%s", err);
		} else {
			ck_assert_msg(rc == 0, "%s", err);
		}
		/* No head: nothing to check. */
		ck_assert_int_eq(gpt2_checkpoint_check_head(ck, &cfg, where,
		                                            SIZE_MAX, err,
		                                            sizeof err), 0);
		st_checkpoint_close(ck);
	}
	unlink(path);
}
END_TEST

/* ---- matmul --------------------------------------------------------------------- */

/*
 * Every kernel's matmul against the naive one (the definition, in double):
 * within the float rounding of a sum of IN products (|error| <= IN * eps *
 * sum |x w| plus the bias's rounding), for decode (T = 1) and prompts;
 * and the same bits on 1 and 3 threads.
 */
START_TEST(test_matmul_fast_near_naive)
{
	if (!use_kernel(_i))
		return;
	static const int Ts[] = {1, 5, 33, 70};
	static const st_dtype types[] = {ST_DTYPE_F32, ST_DTYPE_F16, ST_DTYPE_BF16};
	/* OUT is not a multiple of any panel or vector width; IN spans two
	 * decode blocks and a ragged third. */
	int IN = 140, OUT = 100;
	uint64_t rng = 42;
	float *w32 = malloc((size_t)IN * OUT * sizeof(float));
	float *wr = malloc((size_t)IN * OUT * sizeof(float));
	uint16_t *w16 = malloc((size_t)IN * OUT * 2);
	float *inp = malloc(70 * (size_t)IN * sizeof(float));
	float *bias = malloc((size_t)OUT * sizeof(float));
	float *a = malloc(70 * (size_t)OUT * sizeof(float));
	float *b = malloc(70 * (size_t)OUT * sizeof(float));
	float *c = malloc(70 * (size_t)OUT * sizeof(float));
	for (int i = 0; i < IN * OUT; i++)
		w32[i] = gpt2_random_f32(&rng) - 0.5f;
	for (int i = 0; i < 70 * IN; i++)
		inp[i] = gpt2_random_f32(&rng) * 4 - 2;
	for (int i = 0; i < OUT; i++)
		bias[i] = gpt2_random_f32(&rng);
	gpt2_pool *pool;
	ck_assert_int_eq(gpt2_pool_new(&pool, 3, NULL, 0), 0);
	ck_assert_ptr_nonnull(pool);
	for (size_t k = 0; k < 3; k++) {
		const void *w = w32;
		memcpy(wr, w32, (size_t)IN * OUT * sizeof(float));
		if (types[k] != ST_DTYPE_F32) {
			st_convert(types[k], w16, ST_DTYPE_F32, w32, (size_t)IN * OUT, NULL);
			st_convert(ST_DTYPE_F32, wr, types[k], w16, (size_t)IN * OUT, NULL);
			w = w16;
		}
		for (size_t t = 0; t < 4; t++) {
			for (int with_bias = 0; with_bias < 2; with_bias++) {
				const float *bs = with_bias ? bias : NULL;
				gpt2_matmul_naive(a, inp, w, types[k], bs, Ts[t], IN, OUT);
				ck_assert_int_eq(gpt2_matmul(kern, pool, b, inp, w, types[k], bs,
				                             Ts[t], IN, OUT, NULL, 0), 0);
				ck_assert_int_eq(gpt2_matmul(kern, NULL, c, inp, w, types[k], bs,
				                             Ts[t], IN, OUT, NULL, 0), 0);
				ck_assert_msg(memcmp(b, c, (size_t)Ts[t] * OUT * sizeof(float)) == 0,
				              "%s %s T=%d: threads change the bits", kern->name,
				              st_dtype_name(types[k]), Ts[t]);
				for (int r = 0; r < Ts[t]; r++) {
					for (int o = 0; o < OUT; o++) {
						double mag = bs ? fabs(bs[o]) : 0.0;
						for (int i = 0; i < IN; i++)
							mag += fabs((double)inp[r * IN + i] * wr[i * OUT + o]);
						double tol = (IN + 2) * 1.2e-7 * mag;
						double d = fabs((double)a[r * OUT + o] - b[r * OUT + o]);
						ck_assert_msg(d <= tol, "%s %s T=%d [%d, %d]: %.9g vs %.9g",
						              kern->name, st_dtype_name(types[k]), Ts[t], r, o,
						              (double)b[r * OUT + o], (double)a[r * OUT + o]);
					}
				}
			}
		}
	}
	/* And the naive one is the definition: out = inp @ w + bias. */
	double want = bias[7];
	for (int i = 0; i < IN; i++)
		want += (double)inp[3 * IN + i] * w32[i * OUT + 7];
	gpt2_matmul_naive(a, inp, w32, ST_DTYPE_F32, bias, 5, IN, OUT);
	ck_assert_double_eq_tol(a[3 * OUT + 7], want, 1e-5);
	gpt2_pool_free(pool);
	free(w32);
	free(wr);
	free(w16);
	free(inp);
	free(bias);
	free(a);
	free(b);
	free(c);
	kern = NULL;
}
END_TEST

/*
 * Every kernel's dots (the head, and the Llama family's decode products)
 * against the definition in double, for widths around the vector widths
 * and every count of rows up to 13 (the four-row groups, their tails, the
 * rows fetched ahead); and each row's bits the same whether it is the
 * only row of a call or one of n.
 */
START_TEST(test_dots_near_naive)
{
	if (!use_kernel(_i))
		return;
	static const int Cs[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 140};
	static const st_dtype types[] = {ST_DTYPE_F32, ST_DTYPE_F16, ST_DTYPE_BF16};
	enum { N = 13, CMAX = 140 };
	uint64_t rng = 7;
	float w32[N * CMAX], wr[N * CMAX], x[CMAX], out[N], one;
	uint16_t w16[N * CMAX];
	for (int i = 0; i < N * CMAX; i++)
		w32[i] = gpt2_random_f32(&rng) - 0.5f;
	for (int i = 0; i < CMAX; i++)
		x[i] = gpt2_random_f32(&rng) * 4 - 2;
	for (size_t k = 0; k < 3; k++)
		for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ci++) {
			int C = Cs[ci];
			const void *w = w32;
			memcpy(wr, w32, sizeof wr);
			if (types[k] != ST_DTYPE_F32) {
				st_convert(types[k], w16, ST_DTYPE_F32, w32, (size_t)N * CMAX, NULL);
				st_convert(ST_DTYPE_F32, wr, types[k], w16, (size_t)N * CMAX, NULL);
				w = w16;
			}
			size_t es = types[k] == ST_DTYPE_F32 ? 4 : 2;
			for (int n = 1; n <= N; n++) {
				kern->dots(out, x, w, types[k], C, n);
				for (int v = 0; v < n; v++) {
					double want = 0.0, mag = 0.0;
					for (int i = 0; i < C; i++) {
						want += (double)x[i] * wr[v * C + i];
						mag += fabs((double)x[i] * wr[v * C + i]);
					}
					ck_assert_msg(fabs(want - out[v]) <= (C + 1) * 1.2e-7 * mag,
					              "%s %s C=%d n=%d row %d: %.9g vs %.9g", kern->name,
					              st_dtype_name(types[k]), C, n, v, (double)out[v],
					              want);
					kern->dots(&one, x, (const char *)w + (size_t)v * (size_t)C * es,
					           types[k], C, 1);
					ck_assert_msg(memcmp(&one, &out[v], sizeof one) == 0,
					              "%s %s C=%d n=%d row %d: %.9g alone, %.9g of %d",
					              kern->name, st_dtype_name(types[k]), C, n, v,
					              (double)one, (double)out[v], n);
				}
			}
		}
	kern = NULL;
}
END_TEST

/* ---- logits against the PyTorch reference ---------------------------------------- */

/* Every fixture, every prompt, every position: within 1e-4 of the reference. */
START_TEST(test_logits_match_reference)
{
	if (!use_kernel(_i))
		return;
	static const struct { const char *model, *ref; int dtype; } cases[] = {
		{"tiny-f32", "f32", -1}, {"tiny-f16", "f16", -1},
		{"tiny-bf16", "bf16", -1}, {"tiny-hf", "f32", -1},
		/* --dtype: tiny-f32 held as BF16 / F16 is tiny-bf16 / tiny-f16. */
		{"tiny-f32", "bf16", ST_DTYPE_BF16}, {"tiny-f32", "f16", ST_DTYPE_F16},
		{"tiny-bf16", "bf16", ST_DTYPE_F32},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		gpt2_model *m = load_model(cases[i].model, cases[i].dtype);
		ck_assert_int_eq(gpt2_model_set_threads(m, 2, NULL, 0), 0);
		for (int p = 0; p < 3; p++) {
			char file[64];
			snprintf(file, sizeof file, "ref-%s-%s.safetensors", cases[i].ref,
			         REFS[p]);
			struct ref r = load_ref(file);
			ck_assert_int_eq(r.V, m->config.vocab_size);
			float *got = run_all(m, r.ids, r.T);
			float d = max_diff(got, r.logits, (size_t)r.T * (size_t)r.V);
			ck_assert_msg(d <= 1e-4f, "%s vs %s: max abs diff %g", cases[i].model,
			              file, (double)d);
			free(got);
			free(r.logits);
		}
		gpt2_model_free(m);
	}
	kern = NULL;
}
END_TEST

START_TEST(test_logits_hand_derived)
{
	if (!use_kernel(_i))
		return;
	gpt2_model *m = load_model("hand", -1);
	struct ref r = load_ref("ref-hand.safetensors");
	float *got = run_all(m, r.ids, r.T);
	/* Derived in reference.py's hand_model(); F32 rounding only. */
	ck_assert_float_le(max_diff(got, r.logits, 4), 1e-6f);
	free(got);
	free(r.logits);
	gpt2_model_free(m);
	kern = NULL;
}
END_TEST

/*
 * Mixed storage (BF16 matrices, F32 vectors), loaded as stored, keeps the
 * F32 vectors exact; --dtype bf16 rounds them too.
 */
START_TEST(test_mixed_storage)
{
	if (!use_kernel(_i))
		return;
	gpt2_model *m = load_model("tiny-mixed", -1);
	gpt2_model *f = load_model("tiny-f32", -1);
	ck_assert_int_eq(m->wdtype, ST_DTYPE_BF16);
	int C = m->config.channels;
	ck_assert(memcmp(m->params.ln1w, f->params.ln1w, (size_t)C * sizeof(float)) == 0);
	ck_assert(memcmp(m->params.fcb, f->params.fcb, 4 * (size_t)C * sizeof(float)) == 0);
	struct ref r = load_ref("ref-mixed-p7.safetensors");
	float *got = run_all(m, r.ids, r.T);
	ck_assert_float_le(max_diff(got, r.logits, (size_t)r.T * (size_t)r.V), 1e-4f);
	free(got);
	free(r.logits);
	gpt2_model_free(m);
	m = load_model("tiny-mixed", ST_DTYPE_BF16);
	r = load_ref("ref-bf16-p7.safetensors");
	got = run_all(m, r.ids, r.T);
	ck_assert_float_le(max_diff(got, r.logits, (size_t)r.T * (size_t)r.V), 1e-4f);
	free(got);
	free(r.logits);
	gpt2_model_free(m);
	gpt2_model_free(f);
	kern = NULL;
}
END_TEST

/* The model path may also be the weights file or the shard index. */
START_TEST(test_load_from_file_paths)
{
	gpt2_model *a = load_model("tiny-f32/model.safetensors", -1);
	gpt2_model *b = load_model("tiny-hf/model.safetensors.index.json", -1);
	ck_assert_uint_eq(a->params_bytes, b->params_bytes);
	ck_assert(memcmp(a->params_memory, b->params_memory, a->params_bytes) == 0);
	gpt2_model_free(a);
	gpt2_model_free(b);
}
END_TEST

/* Loading "as stored" keeps the stored dtype in memory. */
START_TEST(test_dtype_as_stored)
{
	gpt2_model *m = load_model("tiny-bf16", -1);
	ck_assert_int_eq(m->wdtype, ST_DTYPE_BF16);
	gpt2_model_free(m);
	m = load_model("tiny-f16", -1);
	ck_assert_int_eq(m->wdtype, ST_DTYPE_F16);
	gpt2_model_free(m);
	m = load_model("tiny-hf", -1);
	ck_assert_int_eq(m->wdtype, ST_DTYPE_F32);
	ck_assert_uint_eq(m->num_parameters, 300 * 32 + 128 * 32 + 2 * (12 * 32 * 32 + 13 * 32) + 64);
	gpt2_model_free(m);
}
END_TEST

/* The transpose trap: c_proj used untransposed must fail the comparison. */
START_TEST(test_transpose_trap_is_caught)
{
	gpt2_model *m = load_model("tiny-f32", -1);
	float *w = gpt2_model_param(m, GPT2_ATTPROJW, 0, NULL);
	int C = m->config.channels;
	for (int i = 0; i < C; i++)
		for (int j = i + 1; j < C; j++) {
			float t = w[i * C + j];
			w[i * C + j] = w[j * C + i];
			w[j * C + i] = t;
		}
	struct ref r = load_ref("ref-f32-p7.safetensors");
	float *got = run_all(m, r.ids, r.T);
	ck_assert_float_gt(max_diff(got, r.logits, (size_t)r.T * (size_t)r.V), 1e-2f);
	free(got);
	free(r.logits);
	gpt2_model_free(m);
}
END_TEST

/* Filling from llm.c-style [out, in] weights gives the same model. */
START_TEST(test_fill_transposed)
{
	gpt2_model *ref_m = load_model("tiny-f32", -1);
	gpt2_model *m;
	char err[256];
	ck_assert_int_eq(gpt2_model_new(&m, &ref_m->config, ST_DTYPE_F32, err, sizeof err), 0);
	int slot, layer;
	ck_assert_int_eq(gpt2_model_missing(m, &slot, &layer), -1);
	ck_assert_int_eq(slot, GPT2_WTE);
	for (int s = 0; s < GPT2_NUM_SLOTS; s++) {
		int nl = gpt2_param(s)->per_layer ? m->config.num_layers : 1;
		for (int l = 0; l < nl; l++) {
			const float *src = gpt2_model_param(ref_m, s, l, NULL);
			uint64_t sh[2];
			int nd = gpt2_param_shape(&m->config, s, sh);
			size_t n = (size_t)gpt2_param_numel(&m->config, s);
			if (gpt2_param(s)->conv1d) {
				ck_assert_int_eq(nd, 2);
				float *t = malloc(n * sizeof(float));
				for (uint64_t i = 0; i < sh[0]; i++)
					for (uint64_t o = 0; o < sh[1]; o++)
						t[o * sh[0] + i] = src[i * sh[1] + o];
				ck_assert_int_eq(gpt2_model_fill(m, s, l, ST_DTYPE_F32, t, 1, err,
				                                 sizeof err), 0);
				free(t);
			} else {
				ck_assert_int_eq(gpt2_model_fill(m, s, l, ST_DTYPE_F32, src, 0, err,
				                                 sizeof err), 0);
			}
		}
	}
	ck_assert_int_eq(gpt2_model_missing(m, &slot, &layer), 0);
	ck_assert(memcmp(m->params_memory, ref_m->params_memory, m->params_bytes) == 0);
	gpt2_model_free(m);
	gpt2_model_free(ref_m);
}
END_TEST

/* ---- the KV cache, threads, greedy ------------------------------------------------- */

START_TEST(test_cache_equals_full_recompute)
{
	if (!use_kernel(_i))
		return;
	gpt2_model *m = load_model("tiny-f32", -1);
	struct ref r = load_ref("ref-f32-p70.safetensors");
	int V = r.V, T = r.T;
	float *full = run_all(m, r.ids, T);
	float *step = malloc((size_t)T * V * sizeof(float));
	gpt2_cache *c;
	char err[256];
	ck_assert_int_eq(gpt2_cache_new(&c, m, 0, NULL, 0), 0);
	/* One token at a time. */
	for (int t = 0; t < T; t++) {
		ck_assert_int_eq(gpt2_cache_len(c), t);
		ck_assert_int_eq(gpt2_forward(m, c, &r.ids[t], 1, step + (size_t)t * V, 0,
		                              err, sizeof err), 0);
	}
	ck_assert_float_le(max_diff(full, step, (size_t)T * V), 1e-5f);
	ck_assert_float_le(max_diff(r.logits, step, (size_t)T * V), 1e-4f);
	/* In chunks of 3, 30 and 37, all logits of each. */
	gpt2_cache_reset(c);
	ck_assert_int_eq(gpt2_forward(m, c, r.ids, 3, step, 1, err, sizeof err), 0);
	ck_assert_int_eq(gpt2_forward(m, c, r.ids + 3, 30, step + 3 * V, 1, err, sizeof err), 0);
	ck_assert_int_eq(gpt2_forward(m, c, r.ids + 33, 37, step + 33 * V, 1, err, sizeof err), 0);
	ck_assert_float_le(max_diff(full, step, (size_t)T * V), 1e-5f);
	/* The last-token-only mode gives the last row. */
	gpt2_cache_reset(c);
	ck_assert_int_eq(gpt2_forward(m, c, r.ids, T, step, 0, err, sizeof err), 0);
	ck_assert_float_le(max_diff(full + (size_t)(T - 1) * V, step, (size_t)V), 1e-5f);
	gpt2_cache_free(c);
	free(full);
	free(step);
	free(r.logits);
	gpt2_model_free(m);
	kern = NULL;
}
END_TEST

START_TEST(test_threads_do_not_change_results)
{
	if (!use_kernel(_i))
		return;
	gpt2_model *m = load_model("tiny-bf16", -1);
	struct ref r = load_ref("ref-bf16-p70.safetensors");
	size_t n = (size_t)r.T * (size_t)r.V;
	float *one = run_all(m, r.ids, r.T);
	/* Decoding token by token takes other kernels: the same holds. */
	float *one_steps = run_steps(m, r.ids, r.T);
	for (int th = 2; th <= 5; th += 3) {
		ck_assert_int_eq(gpt2_model_set_threads(m, th, NULL, 0), 0);
		float *many = run_all(m, r.ids, r.T);
		ck_assert_msg(memcmp(one, many, n * sizeof(float)) == 0, "%d threads", th);
		free(many);
		many = run_steps(m, r.ids, r.T);
		ck_assert_msg(memcmp(one_steps, many, n * sizeof(float)) == 0,
		              "%d threads, one token at a time", th);
		free(many);
	}
	free(one);
	free(one_steps);
	free(r.logits);
	gpt2_model_free(m);
	kern = NULL;
}
END_TEST

/* Greedy decoding through the cache gives the reference's 32 ids. */
START_TEST(test_greedy_matches_reference)
{
	if (!use_kernel(_i))
		return;
	static const char *const models[] = {"f32", "f16", "bf16"};
	for (int k = 0; k < 3; k++) {
		char name[64];
		snprintf(name, sizeof name, "tiny-%s", models[k]);
		gpt2_model *m = load_model(name, -1);
		gpt2_model_set_threads(m, 2, NULL, 0);
		for (int p = 0; p < 3; p++) {
			char file[64], err[256];
			snprintf(file, sizeof file, "ref-%s-%s.safetensors", models[k], REFS[p]);
			struct ref r = load_ref(file);
			ck_assert_int_eq(r.n_greedy, 32);
			gpt2_cache *c;
			ck_assert_int_eq(gpt2_cache_new(&c, m, 0, NULL, 0), 0);
			float *logits = malloc((size_t)r.V * sizeof(float));
			ck_assert_int_eq(gpt2_forward(m, c, r.ids, r.T, logits, 0, err, sizeof err), 0);
			for (int i = 0; i < 32; i++) {
				int32_t next = gpt2_argmax(logits, r.V);
				ck_assert_msg(next == r.greedy[i], "%s step %d: %d, expected %d",
				              file, i, next, r.greedy[i]);
				ck_assert_int_eq(gpt2_forward(m, c, &next, 1, logits, 0, err, sizeof err), 0);
			}
			free(logits);
			gpt2_cache_free(c);
			free(r.logits);
		}
		gpt2_model_free(m);
	}
	kern = NULL;
}
END_TEST

START_TEST(test_forward_limits)
{
	gpt2_model *m = load_model("tiny-f32", -1);
	gpt2_cache *c;
	char err[256];
	float *logits = malloc(300 * sizeof(float));
	int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	ck_assert_int_eq(gpt2_cache_new(&c, m, 6, NULL, 0), 0);
	ck_assert_int_eq(gpt2_cache_capacity(c), 6);
	ck_assert_int_eq(gpt2_forward(m, c, ids, 5, logits, 0, err, sizeof err), 0);
	/* No silent wrap: the sixth fits, a seventh does not. */
	ck_assert_int_eq(gpt2_forward(m, c, ids, 2, logits, 0, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "context is full") != NULL, "%s", err);
	ck_assert_int_eq(gpt2_cache_len(c), 5);
	ck_assert_int_eq(gpt2_forward(m, c, ids, 1, logits, 0, err, sizeof err), 0);
	ck_assert_int_eq(gpt2_forward(m, c, ids, 1, logits, 0, err, sizeof err), -1);
	gpt2_cache_reset(c);
	int32_t bad = 300;
	ck_assert_int_eq(gpt2_forward(m, c, &bad, 1, logits, 0, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "token id 300 is outside the vocabulary") != NULL, "%s", err);
	bad = -1;
	ck_assert_int_eq(gpt2_forward(m, c, &bad, 1, logits, 0, err, sizeof err), -1);
	gpt2_cache_free(c);
	/* capacity 0 or too large means n_positions. */
	ck_assert_int_eq(gpt2_cache_new(&c, m, 100000, NULL, 0), 0);
	ck_assert_int_eq(gpt2_cache_capacity(c), 128);
	gpt2_cache_free(c);
	free(logits);
	gpt2_model_free(m);
}
END_TEST

/* ---- the sampler -------------------------------------------------------------------- */

START_TEST(test_argmax)
{
	float x[5] = {1, 3, NAN, 3, 2};
	ck_assert_int_eq(gpt2_argmax(x, 5), 1); /* first of a tie, NaN ignored */
	float y[2] = {NAN, -INFINITY};
	ck_assert_int_eq(gpt2_argmax(y, 2), 1);
}
END_TEST

static void counts_of(int top_k, float top_p, float temp, const float *p, int V,
                      int draws, uint64_t seed, int *counts)
{
	gpt2_sampler s;
	ck_assert_int_eq(gpt2_sampler_init(&s, V, temp, top_k, top_p, seed, NULL, 0), 0);
	float *l = malloc((size_t)V * sizeof(float));
	memset(counts, 0, (size_t)V * sizeof(int));
	for (int d = 0; d < draws; d++) {
		for (int i = 0; i < V; i++)
			l[i] = logf(p[i]) + 3.0f; /* softmax is shift-invariant */
		int32_t id = gpt2_sample(&s, l);
		ck_assert(id >= 0 && id < V);
		counts[id]++;
	}
	free(l);
	gpt2_sampler_free(&s);
}

START_TEST(test_sampler_distribution)
{
	const float p[4] = {0.1f, 0.2f, 0.3f, 0.4f};
	int c[4], n = 40000;
	counts_of(0, 1.0f, 1.0f, p, 4, n, 1, c);
	for (int i = 0; i < 4; i++)
		ck_assert_double_eq_tol((double)c[i] / n, p[i], 0.01);
	/* Temperature 0.5 squares the probabilities (then renormalises). */
	counts_of(0, 1.0f, 0.5f, p, 4, n, 2, c);
	for (int i = 0; i < 4; i++)
		ck_assert_double_eq_tol((double)c[i] / n, p[i] * p[i] / 0.3, 0.01);
	/* top-k 2: only the two best, in proportion 0.3 : 0.4. */
	counts_of(2, 1.0f, 1.0f, p, 4, n, 3, c);
	ck_assert_int_eq(c[0] + c[1], 0);
	ck_assert_double_eq_tol((double)c[3] / n, 0.4 / 0.7, 0.01);
	/* top-p 0.65: {0.4, 0.3} reach 0.7 >= 0.65, so only those two. */
	counts_of(0, 0.65f, 1.0f, p, 4, n, 4, c);
	ck_assert_int_eq(c[0] + c[1], 0);
	ck_assert_double_eq_tol((double)c[2] / n, 0.3 / 0.7, 0.01);
	/* top-p 0.75 needs a third token. */
	counts_of(0, 0.75f, 1.0f, p, 4, n, 5, c);
	ck_assert_int_eq(c[0], 0);
	ck_assert_int_gt(c[1], 0);
	/* top-k then top-p: k 3 keeps {.4,.3,.2}; p 0.5 of that keeps {.4,.3}. */
	counts_of(3, 0.5f, 1.0f, p, 4, n, 6, c);
	ck_assert_int_eq(c[0] + c[1], 0);
	/* A tiny top-p is greedy. */
	counts_of(0, 1e-6f, 1.0f, p, 4, 100, 7, c);
	ck_assert_int_eq(c[3], 100);
}
END_TEST

START_TEST(test_sampler_greedy_modes_and_seed)
{
	float base[6] = {0.5f, 2.0f, 1.0f, 2.5f, -1.0f, 0.0f}, l[6];
	gpt2_sampler s;
	ck_assert_int_eq(gpt2_sampler_init(&s, 6, 0.0f, 0, 1.0f, 9, NULL, 0), 0);
	memcpy(l, base, sizeof l);
	ck_assert_int_eq(gpt2_sample(&s, l), 3);
	gpt2_sampler_free(&s);
	ck_assert_int_eq(gpt2_sampler_init(&s, 6, 1.5f, 1, 1.0f, 9, NULL, 0), 0);
	memcpy(l, base, sizeof l);
	ck_assert_int_eq(gpt2_sample(&s, l), 3);
	gpt2_sampler_free(&s);
	/* The same seed gives the same stream; another seed another one. */
	int32_t a[64], b[64], c[64];
	uint64_t seeds[3] = {123, 123, 124};
	int32_t *outs[3] = {a, b, c};
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(gpt2_sampler_init(&s, 6, 1.0f, 0, 0.95f, seeds[k], NULL, 0), 0);
		for (int i = 0; i < 64; i++) {
			memcpy(l, base, sizeof l);
			outs[k][i] = gpt2_sample(&s, l);
		}
		gpt2_sampler_free(&s);
	}
	ck_assert(memcmp(a, b, sizeof a) == 0);
	ck_assert(memcmp(a, c, sizeof a) != 0);
	/* Seed 0 is a live generator too. */
	uint64_t st = 0;
	ck_assert_int_eq(gpt2_sampler_init(&s, 6, 1.0f, 0, 1.0f, 0, NULL, 0), 0);
	st = s.rng;
	ck_assert(st != 0);
	gpt2_sampler_free(&s);
}
END_TEST

/* The softmax split over a pool (a vocabulary of several of its chunks)
 * gives the same tokens as one thread. */
START_TEST(test_sampler_pool_gives_same_tokens)
{
	enum { V = 20000, N = 40 };
	float *base = malloc(V * sizeof(float)), *l = malloc(V * sizeof(float));
	uint64_t rng = 5;
	for (int i = 0; i < V; i++)
		base[i] = gpt2_random_f32(&rng) * 8.0f;
	gpt2_pool *pool;
	ck_assert_int_eq(gpt2_pool_new(&pool, 3, NULL, 0), 0);
	int32_t a[N], b[N];
	for (int k = 0; k < 2; k++) {
		gpt2_sampler s;
		ck_assert_int_eq(gpt2_sampler_init(&s, V, 0.8f, 0, 0.9f, 77, NULL, 0), 0);
		s.pool = k ? pool : NULL;
		for (int i = 0; i < N; i++) {
			memcpy(l, base, V * sizeof(float));
			(k ? b : a)[i] = gpt2_sample(&s, l);
		}
		gpt2_sampler_free(&s);
	}
	ck_assert(memcmp(a, b, sizeof a) == 0);
	gpt2_pool_free(pool);
	free(base);
	free(l);
}
END_TEST

static Suite *gpt2_suite(void)
{
	Suite *s = suite_create("gpt2");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, test_config_tiny);
	tcase_add_test(tc, test_config_defaults_and_eos);
	tcase_add_test(tc, test_config_refusals);
	tcase_add_test(tc, test_config_errors);
	tcase_add_test(tc, test_config_many_keys);
	tcase_add_test(tc, test_config_one_line_messages);
	tcase_add_test(tc, config_refuses_nul_in_keys);
	tcase_add_test(tc, test_names_round_trip);
	tcase_add_test(tc, test_names_special);
	suite_add_tcase(s, tc);
	tc = tcase_create("errors");
	tcase_add_test(tc, test_broken_snapshots);
	tcase_add_test(tc, test_shared_storage);
	tcase_add_test(tc, test_checkpoint_index_and_head);
	suite_add_tcase(s, tc);
	tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_matmul_fast_near_naive, 0, 3);
	tcase_add_loop_test(tc, test_dots_near_naive, 0, 3);
	tcase_add_loop_test(tc, test_logits_match_reference, 0, 3);
	tcase_add_loop_test(tc, test_logits_hand_derived, 0, 3);
	tcase_add_test(tc, test_dtype_as_stored);
	tcase_add_test(tc, test_load_from_file_paths);
	tcase_add_loop_test(tc, test_mixed_storage, 0, 3);
	tcase_add_test(tc, test_transpose_trap_is_caught);
	tcase_add_test(tc, test_fill_transposed);
	tcase_add_loop_test(tc, test_cache_equals_full_recompute, 0, 3);
	tcase_add_loop_test(tc, test_threads_do_not_change_results, 0, 3);
	tcase_add_loop_test(tc, test_greedy_matches_reference, 0, 3);
	tcase_add_test(tc, test_forward_limits);
	suite_add_tcase(s, tc);
	tc = tcase_create("sampler");
	tcase_add_test(tc, test_argmax);
	tcase_add_test(tc, test_sampler_distribution);
	tcase_add_test(tc, test_sampler_greedy_modes_and_seed);
	tcase_add_test(tc, test_sampler_pool_gives_same_tokens);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gpt2_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
