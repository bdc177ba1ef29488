/*
 * check_arch_inventory.c - st_arch_inventory and
 * st_arch_checkpoint_config_diff (st/arch.h): the config.json beside a
 * checkpoint found, read, parsed and compared, for the snapshots of
 * testdata/archcheck (made by its gen_fixtures.py; the counts are worked
 * out by hand from the shapes there) and for small snapshots written in
 * a temporary directory.
 */
#include <sys/stat.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#define TMPDIR_NAME "check_arch_inventory"
#include "tmpdir.h"

#define DIR ST_TESTDATA "/archcheck/"

/* The tiny GPT-2 of testdata/archcheck/gpt2-good (2 layers, C = 8). */
#define GPT2_CONFIG                                                            \
	"{\"architectures\": [\"GPT2LMHeadModel\"], \"vocab_size\": 16, "      \
	"\"n_positions\": 8, \"n_embd\": 8, \"n_layer\": 2, \"n_head\": 2}"

/* A safetensors file of the given header JSON and data bytes of zeros. */
static void write_safetensors(const char *path, const char *header, size_t data)
{
	size_t n = strlen(header), pad = (8 - n % 8) % 8;
	unsigned char len[8];
	uint64_t h = n + pad;
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(h >> (8 * i));
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(len, 1, 8, f);
	fputs(header, f);
	for (size_t i = 0; i < pad; i++)
		putc(' ', f);
	for (size_t i = 0; i < data; i++)
		putc(0, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* One tensor, enough for a checkpoint to open. */
static void write_one_tensor(const char *path)
{
	write_safetensors(path, "{\"x\": {\"dtype\": \"F32\", \"shape\": [1], "
	                        "\"data_offsets\": [0, 4]}}", 4);
}

static st_checkpoint *open_path(const char *path)
{
	st_checkpoint *ck;
	st_error e;
	ck_assert_msg(st_checkpoint_open(&ck, path, 0, &e) == ST_OK, "%s", e.message);
	return ck;
}

/* The inventory of a testdata/archcheck snapshot (ST_OK asserted). */
static st_checkpoint *inventory(const char *name, st_arch_config *cfg, st_arch_report *r)
{
	char path[512];
	st_error e;
	snprintf(path, sizeof path, DIR "%s", name);
	st_checkpoint *ck = open_path(path);
	ck_assert_msg(st_arch_inventory(ck, cfg, r, &e) == ST_OK, "%s", e.message);
	return ck;
}

/* Whether r has an item of kind what named name. */
static int has_item(const st_arch_report *r, enum st_arch_what what, const char *name)
{
	for (size_t i = 0; i < r->n_items; i++)
		if (r->items[i].what == what && !strcmp(r->items[i].name, name))
			return 1;
	return 0;
}

START_TEST(inventory_of_complete_snapshot_accounts_for_every_tensor)
{
	st_arch_config cfg;
	st_arch_report r;
	st_checkpoint *ck = inventory("gpt2-good", &cfg, &r);
	ck_assert_str_eq(cfg.arch, "GPT2LMHeadModel");
	ck_assert_uint_eq(cfg.layers, 2);
	ck_assert_uint_eq(r.implied, 1952);
	ck_assert_uint_eq(r.found, 1952);
	ck_assert_uint_eq(r.n_expected, 28);
	ck_assert_uint_eq(r.n_matched, 28);
	ck_assert_uint_eq(r.n_items, 0);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(inventory_names_missing_and_misshapen)
{
	st_arch_config cfg;
	st_arch_report r;
	st_checkpoint *ck = inventory("llama-broken", &cfg, &r);
	ck_assert_str_eq(cfg.arch, "LlamaForCausalLM");
	ck_assert_uint_eq(r.implied, 4944);
	ck_assert_uint_eq(r.found, 4688);
	ck_assert_uint_eq(r.n_expected, 21);
	ck_assert_uint_eq(r.n_matched, 19);
	ck_assert_uint_eq(r.n_missing, 1);
	ck_assert_uint_eq(r.n_misshapen, 1);
	ck_assert(has_item(&r, ST_ARCH_MISSING, "model.layers.1.self_attn.k_proj.weight"));
	ck_assert(has_item(&r, ST_ARCH_MISSHAPEN, "model.layers.0.self_attn.v_proj.weight"));
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(inventory_classifies_extras)
{
	st_arch_config cfg;
	st_arch_report r;
	st_checkpoint *ck = inventory("gpt2-legacy", &cfg, &r);
	ck_assert_uint_eq(r.n_buffers, 4);
	ck_assert_uint_eq(r.n_alias, 1);
	ck_assert_uint_eq(r.n_unknown, 2);
	ck_assert_str_eq(r.prefix, "transformer.");
	ck_assert(has_item(&r, ST_ARCH_ALIAS, "lm_head.weight"));
	ck_assert(has_item(&r, ST_ARCH_UNKNOWN, "optimizer.step"));
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(inventory_without_config_is_not_found)
{
	/* testdata/stdiff/a.safetensors has no config.json beside it. */
	st_checkpoint *ck = open_path(ST_TESTDATA "/stdiff/a.safetensors");
	st_arch_config cfg;
	st_arch_report r;
	st_error e;
	ck_assert_int_eq(st_arch_inventory(ck, &cfg, &r, &e), ST_ENOTFOUND);
	ck_assert_uint_eq(r.n_items, 0);
	ck_assert_ptr_null(r.items);
	st_arch_report_free(&r); /* an empty report frees */
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(inventory_of_unknown_architecture_is_unsupported)
{
	/* DeepSeek-V3 is no family st/arch.h knows: nothing to compare. */
	st_checkpoint *ck = open_path(ST_TESTDATA "/quant/stinfo/block");
	st_arch_config cfg;
	st_arch_report r;
	st_error e;
	ck_assert_int_eq(st_arch_inventory(ck, &cfg, &r, &e), ST_EUNSUPPORTED);
	ck_assert_str_eq(cfg.arch, "DeepseekV3ForCausalLM");
	ck_assert_uint_eq(r.n_items, 0);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(inventory_of_malformed_config_names_the_file)
{
	write_text(path_in("config.json"), "{\"architectures\": [\"GPT2LMHeadModel\"], ");
	write_one_tensor(path_in("model.safetensors"));
	st_checkpoint *ck = open_path(path_in("model.safetensors"));
	st_arch_config cfg;
	st_arch_report r;
	st_error e;
	ck_assert_int_eq(st_arch_inventory(ck, &cfg, &r, &e), ST_EFORMAT);
	ck_assert_int_eq(e.code, ST_EFORMAT);
	ck_assert_msg(strstr(e.message, path_in("config.json")) == e.message, "%s", e.message);
	ck_assert_uint_eq(r.n_items, 0);
	st_checkpoint_close(ck);

	/* A size out of range: the same, naming the key. */
	write_text(path_in("config.json"), "{\"architectures\": [\"GPT2LMHeadModel\"], "
	                                   "\"vocab_size\": 16, \"n_positions\": 8, "
	                                   "\"n_embd\": 8, \"n_layer\": 5000, \"n_head\": 2}");
	ck = open_path(path_in("model.safetensors"));
	ck_assert_int_eq(st_arch_inventory(ck, &cfg, &r, &e), ST_EFORMAT);
	ck_assert_msg(strstr(e.message, "\"n_layer\" is 5000"), "%s", e.message);
	st_checkpoint_close(ck);
}
END_TEST

START_TEST(inventory_does_not_count_scales_as_extras)
{
	/* wte.weight in FP8 with a per-tensor scale: the scale is the
	 * quantization's, not a tensor the config fails to explain. */
	write_text(path_in("config.json"), GPT2_CONFIG);
	write_safetensors(path_in("model.safetensors"),
	                  "{\"wte.weight\": {\"dtype\": \"F8_E4M3\", \"shape\": [16, 8], "
	                  "\"data_offsets\": [0, 128]}, "
	                  "\"wte.weight_scale_inv\": {\"dtype\": \"F32\", \"shape\": [1], "
	                  "\"data_offsets\": [128, 132]}, "
	                  "\"optimizer.step\": {\"dtype\": \"F32\", \"shape\": [1], "
	                  "\"data_offsets\": [132, 136]}}", 136);
	st_checkpoint *ck = open_path(path_in("model.safetensors"));
	st_arch_config cfg;
	st_arch_report r;
	st_error e;
	ck_assert_msg(st_arch_inventory(ck, &cfg, &r, &e) == ST_OK, "%s", e.message);
	ck_assert_uint_eq(r.n_matched, 1);
	ck_assert_uint_eq(r.n_missing, 27);
	ck_assert_uint_eq(r.n_unknown, 1);
	ck_assert(has_item(&r, ST_ARCH_UNKNOWN, "optimizer.step"));
	ck_assert(!has_item(&r, ST_ARCH_UNKNOWN, "wte.weight_scale_inv"));
	size_t unknown = 0;
	for (size_t i = 0; i < r.n_items; i++)
		unknown += r.items[i].what == ST_ARCH_UNKNOWN;
	ck_assert_uint_eq(unknown, r.n_unknown);
	st_arch_report_free(&r);
	st_checkpoint_close(ck);
}
END_TEST

struct keys {
	int n;
	char text[1024];
};

static void on_key(void *ctx, const char *key, const char *a, const char *b)
{
	struct keys *k = ctx;
	size_t len = strlen(k->text);
	snprintf(k->text + len, sizeof k->text - len, "%s: %s -> %s\n", key, a ? a : "-",
	         b ? b : "-");
	k->n++;
}

/* A folder NAME of tmp with config text (NULL: none) and a tensor. */
static st_checkpoint *snapshot(const char *name, const char *config)
{
	char dir[512], file[600];
	snprintf(dir, sizeof dir, "%s", path_in(name));
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	if (config) {
		snprintf(file, sizeof file, "%s/config.json", dir);
		write_text(file, config);
	}
	snprintf(file, sizeof file, "%s/model.safetensors", dir);
	write_one_tensor(file);
	return open_path(file);
}

START_TEST(config_diff_of_two_snapshots_lists_the_keys)
{
	st_checkpoint *a = snapshot("a", "{\"n_layer\": 2, \"layer_norm_epsilon\": 1e-05}");
	st_checkpoint *b = snapshot("b", "{\"n_layer\": 2, \"layer_norm_epsilon\": 1e-06, "
	                                 "\"use_cache\": true}");
	st_checkpoint *none = snapshot("none", NULL);
	st_checkpoint *bad = snapshot("bad", "[1, 2]");
	struct keys k = {0, ""};
	st_error e;
	ck_assert_int_eq(st_arch_checkpoint_config_diff(a, b, on_key, &k, &e), 2);
	ck_assert_str_eq(k.text, "layer_norm_epsilon: 1e-05 -> 1e-06\n"
	                         "use_cache: - -> true\n");
	/* One snapshot against itself, or against one without a config. */
	memset(&k, 0, sizeof k);
	ck_assert_int_eq(st_arch_checkpoint_config_diff(a, a, on_key, &k, &e), 0);
	ck_assert_int_eq(st_arch_checkpoint_config_diff(a, none, on_key, &k, &e), 0);
	ck_assert_int_eq(st_arch_checkpoint_config_diff(none, b, on_key, &k, &e), 0);
	ck_assert_int_eq(k.n, 0);
	/* A config that is no JSON object. */
	ck_assert_int_eq(st_arch_checkpoint_config_diff(a, bad, on_key, &k, &e), ST_EFORMAT);
	ck_assert_msg(strstr(e.message, "bad/config.json: not a JSON object"), "%s", e.message);
	st_checkpoint_close(a);
	st_checkpoint_close(b);
	st_checkpoint_close(none);
	st_checkpoint_close(bad);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("arch_inventory");
	TCase *tc = tcase_create("testdata");
	tcase_add_test(tc, inventory_of_complete_snapshot_accounts_for_every_tensor);
	tcase_add_test(tc, inventory_names_missing_and_misshapen);
	tcase_add_test(tc, inventory_classifies_extras);
	tcase_add_test(tc, inventory_without_config_is_not_found);
	tcase_add_test(tc, inventory_of_unknown_architecture_is_unsupported);
	suite_add_tcase(s, tc);
	TCase *tt = tcase_create("tmpdir");
	tcase_add_checked_fixture(tt, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tt, inventory_of_malformed_config_names_the_file);
	tcase_add_test(tt, inventory_does_not_count_scales_as_extras);
	tcase_add_test(tt, config_diff_of_two_snapshots_lists_the_keys);
	suite_add_tcase(s, tt);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
