/*
 * check_common_gguf_info.c - stinfo's GGUF description
 * (tools/common/gguf_info.c): gguf_info_is_gguf on names and magic, and
 * what gguf_info_describe prints as text, --all, --json and --stats for
 * a small GGUF written here by libst's st_gguf_writer. The expected
 * lines are worked out by hand from the file written (its keys, the
 * GGUF dims reversed into C order, the tensors packed at 32-byte
 * alignment, the table's column widths); the header and data sizes come
 * from libst's reader, a second path.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#include "common/gguf_info.h"
#include "fe/cli.h"
#include "fe/json.h"

#define TMPDIR_NAME "check_common_gguf_info"
#include "tmpdir.h"
#include "capture.h"

/*
 * model.gguf: six keys, then a.weight F32 GGUF dims [3, 2] (values 1..6),
 * b F16 [4] (0, 0, 1, -1), c Q4_0 [32] (one block of zero bytes).
 */
static const char *write_model(void)
{
	const char *path = path_in("model.gguf");
	st_gguf_writer *w;
	st_error err;
	ck_assert_int_eq(st_gguf_writer_new(&w, &err), ST_OK);
	st_gguf_value v = {.type = ST_GGUF_STRING, .n = 4};
	v.v.s = "gpt2";
	ck_assert_int_eq(st_gguf_writer_set(w, "general.architecture", &v, &err), ST_OK);
	v = (st_gguf_value){.type = ST_GGUF_UINT32};
	v.v.u = 7;
	ck_assert_int_eq(st_gguf_writer_set(w, "test.count", &v, &err), ST_OK);
	v = (st_gguf_value){.type = ST_GGUF_FLOAT32};
	v.v.f = (double)1e-5f;
	ck_assert_int_eq(st_gguf_writer_set(w, "test.eps", &v, &err), ST_OK);
	v = (st_gguf_value){.type = ST_GGUF_BOOL};
	v.v.u = 1;
	ck_assert_int_eq(st_gguf_writer_set(w, "test.flag", &v, &err), ST_OK);
	static const unsigned char i32[12] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};
	v = (st_gguf_value){.type = ST_GGUF_ARRAY, .elem_type = ST_GGUF_INT32,
	                    .n = 3};
	v.v.raw = i32;
	ck_assert_int_eq(st_gguf_writer_set(w, "test.short", &v, &err), ST_OK);
	static const unsigned char u8[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	v = (st_gguf_value){.type = ST_GGUF_ARRAY, .elem_type = ST_GGUF_UINT8,
	                    .n = 10};
	v.v.raw = u8;
	ck_assert_int_eq(st_gguf_writer_set(w, "test.long", &v, &err), ST_OK);
	char text[251];
	memset(text, 'x', 250);
	text[250] = 0;
	v = (st_gguf_value){.type = ST_GGUF_STRING, .n = 250};
	v.v.s = text;
	ck_assert_int_eq(st_gguf_writer_set(w, "test.text", &v, &err), ST_OK);

	const uint64_t da[2] = {3, 2}, db[1] = {4}, dc[1] = {32};
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "a.weight", ST_GGML_F32, 2, da, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "b", ST_GGML_F16, 1, db, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_add_tensor(w, "c", ST_GGML_Q4_0, 1, dc, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_open(w, path, &err), ST_OK);
	/* 1.0f .. 6.0f as little-endian IEEE 754 bytes. */
	static const unsigned char fa[24] = {
		0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40,
		0, 0, 0x80, 0x40, 0, 0, 0xa0, 0x40, 0, 0, 0xc0, 0x40};
	/* F16 0, 0, 1 (0x3c00), -1 (0xbc00). */
	static const unsigned char fb[8] = {0, 0, 0, 0, 0, 0x3c, 0, 0xbc};
	static const unsigned char fc[18] = {0};
	ck_assert_int_eq(st_gguf_writer_write(w, fa, sizeof fa, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_write(w, fb, sizeof fb, &err), ST_OK);
	ck_assert_int_eq(st_gguf_writer_write(w, fc, sizeof fc, &err), ST_OK);
	ck_assert_msg(st_gguf_writer_finish(w, &err) == ST_OK, "%s", err.message);
	st_gguf_writer_free(w);
	return path;
}

/* Run gguf_info_describe with stdout and stderr captured. */
static int describe(const char *path, int all, int json, int stats,
                    int *printed, char **out, char **errs)
{
	capture_begin();
	struct gguf_info_view v = {.all = all, .json = json, .stats = stats};
	int rc = gguf_info_describe(path, &v, printed);
	capture_end(out, errs);
	return rc;
}

static void assert_has(const char *out, const char *want)
{
	ck_assert_msg(strstr(out, want), "missing:\n%s\nin:\n%s", want, out);
}

/* libst's header and data sizes of path, as the summary lays them out. */
static void sizes(const char *path, char *hdr, char *data, size_t size)
{
	st_gguf *g;
	st_error err;
	ck_assert_int_eq(st_gguf_open(&g, path, &err), ST_OK);
	uint64_t h = st_gguf_data_offset(g), d = st_gguf_data_size(g);
	st_gguf_close(g);
	/* Both under 1000 here: printed as "<n> B". */
	ck_assert_uint_lt(h, 1000);
	ck_assert_uint_lt(d, 1000);
	snprintf(hdr, size, "  header:    %llu B\n", (unsigned long long)h);
	snprintf(data, size, "  data:      %llu B\n", (unsigned long long)d);
}

START_TEST(is_gguf_by_suffix_or_magic)
{
	/* The suffix alone is enough, even for a file that does not exist. */
	ck_assert_int_eq(gguf_info_is_gguf(path_in("missing.gguf")), 1);
	ck_assert_int_eq(gguf_info_is_gguf(path_in("missing.bin")), 0);
	write_text(path_in("renamed.bin"), "GGUF\3\0\0\0");
	ck_assert_int_eq(gguf_info_is_gguf(path_in("renamed.bin")), 1);
	write_text(path_in("model.safetensors"), "\x10\0\0\0\0\0\0\0{}");
	ck_assert_int_eq(gguf_info_is_gguf(path_in("model.safetensors")), 0);
	write_text(path_in("short"), "GG");
	ck_assert_int_eq(gguf_info_is_gguf(path_in("short")), 0);
}
END_TEST

START_TEST(describe_prints_format_metadata_and_totals)
{
	const char *path = write_model();
	char *out, *errs, hdr[64], data[64], line[512];
	int printed = 0;
	ck_assert_int_eq(describe(path, 0, 0, 0, &printed, &out, &errs), CLI_OK);
	ck_assert_int_eq(printed, 1);
	ck_assert_str_eq(errs, "");
	snprintf(line, sizeof line, "path:        %s\nfile:        %s\n", path, path);
	ck_assert_msg(!strncmp(out, line, strlen(line)), "%s", out);
	assert_has(out, "  format:    GGUF version 3 (llama.cpp), alignment 32\n");
	sizes(path, hdr, data, sizeof hdr);
	assert_has(out, hdr);
	assert_has(out, data);
	char text[256];
	memset(text, 'x', 200);
	text[200] = 0;
	snprintf(line, sizeof line,
	         "  metadata:  general.architecture: gpt2\n"
	         "             test.count: 7\n"
	         "             test.eps: 1e-05\n"
	         "             test.flag: true\n"
	         "             test.short: [1, 2, 3]\n"
	         "             test.long: [uint8 x 10]\n"
	         "             test.text: %s... (250 bytes)\n", text);
	assert_has(out, line);
	/* Bits per weight of the file: 50 bytes * 8 / 42 elements = 9.5238. */
	assert_has(out, "tensors:     3\nparameters:  42\nbytes:       50 B\n"
	                "bits/weight: 9.524\n");
	free(out);
	free(errs);
}
END_TEST

START_TEST(describe_tables_types_and_tensors_in_c_order)
{
	const char *path = write_model();
	char *out, *errs;
	int printed = 0;
	ck_assert_int_eq(describe(path, 0, 0, 0, &printed, &out, &errs), CLI_OK);
	/* Bits per weight: 4 bytes * 8, 2 * 8, 18 bytes * 8 / 32 = 4.5. */
	assert_has(out, "\n\ntype  tensors  parameters  bytes  bits/weight\n"
	                "F32         1           6   24 B           32\n"
	                "F16         1           4    8 B           16\n"
	                "Q4_0        1          32   18 B          4.5\n\n");
	/* GGUF dims [3, 2] shown as [2, 3]; offsets at 32-byte alignment. */
	assert_has(out, "name      type  bits/weight  shape   parameters  offset\n"
	                "a.weight  F32            32  [2, 3]           6  0\n"
	                "b         F16            16  [4]              4  32\n"
	                "c         Q4_0          4.5  [32]            32  64\n"
	                "shapes are row-major (the file's dims reversed; --json "
	                "also gives gguf_dims)\n");
	free(out);
	free(errs);
}
END_TEST

START_TEST(describe_all_shows_arrays_and_strings_whole)
{
	const char *path = write_model();
	char *out, *errs, line[512], text[256];
	int printed = 0;
	ck_assert_int_eq(describe(path, 1, 0, 0, &printed, &out, &errs), CLI_OK);
	memset(text, 'x', 250);
	text[250] = 0;
	assert_has(out, "             test.long: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n");
	snprintf(line, sizeof line, "             test.text: %s\n", text);
	assert_has(out, line);
	free(out);
	free(errs);
}
END_TEST

START_TEST(describe_json_gives_tensors_metadata_and_totals)
{
	const char *path = write_model();
	char *out, *errs, want[1024];
	int printed = 0;
	ck_assert_int_eq(describe(path, 0, 1, 0, &printed, &out, &errs), CLI_OK);
	ck_assert_msg(!strncmp(out, "{\n  \"schema\": 1,\n  \"format\": \"gguf\",\n", 37), "%s", out);
	assert_has(out, "\"version\": 3, \"alignment\": 32, \"metadata\": {}}");
	assert_has(out, "\"general.architecture\": {\"type\": \"string\", \"value\": \"gpt2\"}");
	assert_has(out, "\"test.count\": {\"type\": \"uint32\", \"value\": 7}");
	assert_has(out, "\"test.flag\": {\"type\": \"bool\", \"value\": true}");
	assert_has(out, "\"test.short\": {\"type\": \"array\", \"element_type\": "
	                "\"int32\", \"length\": 3, \"value\": [1, 2, 3]}");
	/* More than 8 elements: the type and length only. */
	assert_has(out, "\"test.long\": {\"type\": \"array\", \"element_type\": "
	                "\"uint8\", \"length\": 10}");
	snprintf(want, sizeof want,
	         "{\"name\": \"a.weight\", \"dtype\": \"F32\", \"shape\": [2, 3], "
	         "\"gguf_dims\": [3, 2], \"parameters\": 6, \"bytes\": 24, "
	         "\"bits_per_weight\": 32, \"file\": \"%s\", "
	         "\"data_offsets\": [0, 24]}", path);
	assert_has(out, want);
	snprintf(want, sizeof want,
	         "{\"name\": \"c\", \"dtype\": \"Q4_0\", \"shape\": [32], "
	         "\"gguf_dims\": [32], \"parameters\": 32, \"bytes\": 18, "
	         "\"bits_per_weight\": 4.5, \"file\": \"%s\", "
	         "\"data_offsets\": [64, 82]}", path);
	assert_has(out, want);
	/* The file's bits per weight, 400 / 42, as the shortest double
	 * (Python's repr(400 / 42)). */
	assert_has(out, "\"total\": {\"tensors\": 3, \"parameters\": 42, "
	                "\"bytes\": 50, \"bits_per_weight\": 9.523809523809524, "
	                "\"by_dtype\": {"
	                "\"F32\": {\"tensors\": 1, \"parameters\": 6, \"bytes\": 24, "
	                "\"bits_per_weight\": 32}, "
	                "\"F16\": {\"tensors\": 1, \"parameters\": 4, \"bytes\": 8, "
	                "\"bits_per_weight\": 16}, "
	                "\"Q4_0\": {\"tensors\": 1, \"parameters\": 32, \"bytes\": 18, "
	                "\"bits_per_weight\": 4.5}}}\n}\n");
	free(out);
	free(errs);
}
END_TEST

/* The row of name in a --stats table, parsed. */
struct row {
	char type[16];
	double min, max, mean, std;
	int nan, inf, zeros;
};

static int stats_row(const char *out, const char *name, struct row *r)
{
	char key[32];
	snprintf(key, sizeof key, "\n%s ", name);
	const char *p = strstr(out, key);
	ck_assert_msg(p, "no row %s in:\n%s", name, out);
	char n[32];
	return sscanf(p + 1, "%31s %15s %lf %lf %lf %lf %d %d %d", n, r->type,
	              &r->min, &r->max, &r->mean, &r->std, &r->nan, &r->inf,
	              &r->zeros);
}

START_TEST(describe_stats_decodes_what_libst_can)
{
	const char *path = write_model();
	char *out, *errs;
	int printed = 0;
	ck_assert_int_eq(describe(path, 0, 0, 1, &printed, &out, &errs), CLI_OK);
	assert_has(out, "\nname      type  min  max  mean       std  nan  inf  zeros\n");
	struct row r;
	/* 1..6: mean 3.5, population std sqrt(17.5 / 6) = 1.70783. */
	ck_assert_int_eq(stats_row(out, "a.weight", &r), 9);
	ck_assert_str_eq(r.type, "F32");
	ck_assert_double_eq(r.min, 1);
	ck_assert_double_eq(r.max, 6);
	ck_assert_double_eq(r.mean, 3.5);
	ck_assert_double_eq_tol(r.std, 1.70783, 1e-5);
	ck_assert_int_eq(r.zeros, 0);
	/* 0, 0, 1, -1: mean 0, std sqrt(1 / 2), two zeros. */
	ck_assert_int_eq(stats_row(out, "b", &r), 9);
	ck_assert_str_eq(r.type, "F16");
	ck_assert_double_eq(r.min, -1);
	ck_assert_double_eq(r.max, 1);
	ck_assert_double_eq(r.mean, 0);
	ck_assert_double_eq_tol(r.std, 0.707107, 1e-6);
	ck_assert_int_eq(r.nan, 0);
	ck_assert_int_eq(r.inf, 0);
	ck_assert_int_eq(r.zeros, 2);
	/* Q4_0 decodes too: d = 0, so 32 zeros (-0, (q - 8) * 0), no note. */
	ck_assert_int_eq(stats_row(out, "c", &r), 9);
	ck_assert_str_eq(r.type, "Q4_0");
	ck_assert_double_eq(r.min, 0);
	ck_assert_double_eq(r.max, 0);
	ck_assert_int_eq(r.zeros, 32);
	ck_assert_ptr_null(strstr(out, "note:"));
	free(out);
	free(errs);

	ck_assert_int_eq(describe(path, 0, 1, 1, &printed, &out, &errs), CLI_OK);
	assert_has(out, "\"data_offsets\": [32, 40], \"stats\": {\"min\": -1, "
	                "\"max\": 1, \"mean\": 0, ");
	assert_has(out, "\"data_offsets\": [64, 82], \"stats\": {\"min\": ");
	free(out);
	free(errs);
}
END_TEST

START_TEST(describe_separates_a_second_path)
{
	const char *path = write_model();
	char *out, *errs;
	int printed = 1;
	ck_assert_int_eq(describe(path, 0, 0, 0, &printed, &out, &errs), CLI_OK);
	ck_assert_msg(!strncmp(out, "\npath:", 6), "%s", out);
	free(out);
	free(errs);
	ck_assert_int_eq(describe(path, 0, 1, 0, &printed, &out, &errs), CLI_OK);
	ck_assert_msg(!strncmp(out, ",\n{\n", 4), "%s", out);
	free(out);
	free(errs);
}
END_TEST

/*
 * Strict UTF-8 (RFC 3629), written here rather than taken from libst: no
 * overlong forms, no surrogates, nothing above U+10FFFF.
 */
static int utf8_strict(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], need, cp, min;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) { need = 1; cp = c & 0x1f; min = 0x80; }
		else if ((c & 0xf0) == 0xe0) { need = 2; cp = c & 0x0f; min = 0x800; }
		else if ((c & 0xf8) == 0xf0) { need = 3; cp = c & 0x07; min = 0x10000; }
		else return 0;
		if (n - i <= need)
			return 0;
		for (unsigned k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += need + 1;
	}
	return 1;
}

#define FFFD "\xef\xbf\xbd"

/*
 * testdata/gguf/utf8_all.gguf (gen_fixtures.py) holds bytes that are not
 * UTF-8 in a key ("bad.\xff\xfekey"), a value ("caf\xe9 \xc3"), two
 * array elements ("\x80b", "\xf5\x80") and a tensor name
 * ("t\xc0\xafx"). --json is UTF-8 and parses, each such byte one U+FFFD.
 */
START_TEST(describe_json_replaces_bytes_that_are_not_utf8)
{
	char *out, *errs;
	int printed = 0;
	ck_assert_int_eq(describe(ST_TESTDATA "/gguf/utf8_all.gguf", 0, 1, 0,
	                          &printed, &out, &errs), CLI_OK);
	size_t len = strlen(out), end = 0;
	ck_assert_msg(utf8_strict((const unsigned char *)out, len), "%s", out);
	json_node *root = json_parse(out, len, &end);
	ck_assert_msg(root != NULL, "not JSON:\n%s", out);
	ck_assert_str_eq(out + end, "\n");
	const json_node *md = json_get(root, "gguf_metadata");
	const json_node *key = json_get(md, "bad." FFFD FFFD "key");
	ck_assert_msg(key != NULL, "%s", out);
	ck_assert_str_eq(json_string(json_get(key, "value")), "fine");
	ck_assert_str_eq(json_string(json_get(json_get(md, "bad.value"), "value")),
	                 "caf" FFFD " " FFFD);
	const json_node *arr = json_get(json_get(md, "bad.array"), "value");
	ck_assert_uint_eq(json_size(arr), 3);
	ck_assert_str_eq(json_string(json_at(arr, 0)), "a");
	ck_assert_str_eq(json_string(json_at(arr, 1)), FFFD "b");
	ck_assert_str_eq(json_string(json_at(arr, 2)), FFFD FFFD);
	const json_node *t = json_at(json_get(root, "tensors"), 0);
	ck_assert_str_eq(json_string(json_get(t, "name")), "t" FFFD FFFD "x");
	json_free(root);
	free(out);
	free(errs);
}
END_TEST

START_TEST(describe_refuses_a_file_that_is_not_gguf)
{
	const char *path = path_in("bad.gguf");
	write_text(path, "GGUF\3"); /* 5 bytes: no room for the counts */
	cli_init("stinfo");
	char *out, *errs;
	int printed = 0;
	ck_assert_int_eq(describe(path, 0, 0, 0, &printed, &out, &errs),
	                 CLI_ERROR);
	ck_assert_int_eq(printed, 0);
	ck_assert_str_eq(out, "");
	ck_assert_msg(!strncmp(errs, "stinfo: ", 8) && strstr(errs, path) &&
	              strchr(errs, '\n') == errs + strlen(errs) - 1, "%s", errs);
	free(out);
	free(errs);
	ck_assert_int_eq(describe(path_in("missing.gguf"), 0, 0, 0, &printed,
	                          &out, &errs), CLI_ERROR);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(errs, "missing.gguf"));
	free(out);
	free(errs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_gguf_info");
	TCase *tc = tcase_create("gguf_info");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, is_gguf_by_suffix_or_magic);
	tcase_add_test(tc, describe_prints_format_metadata_and_totals);
	tcase_add_test(tc, describe_tables_types_and_tensors_in_c_order);
	tcase_add_test(tc, describe_all_shows_arrays_and_strings_whole);
	tcase_add_test(tc, describe_json_gives_tensors_metadata_and_totals);
	tcase_add_test(tc, describe_stats_decodes_what_libst_can);
	tcase_add_test(tc, describe_separates_a_second_path);
	tcase_add_test(tc, describe_refuses_a_file_that_is_not_gguf);
	tcase_add_test(tc, describe_json_replaces_bytes_that_are_not_utf8);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
