/*
 * check_common_json.c - the tools' JSON tree (tools/fe/json.h): the
 * values, walks and offsets its readers rely on, on hand-written texts.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fe/json.h"

static const char DOC[] =
	"{\"a\": 1.5, \"s\": \"caf\\u00e9\", \"t\": true, \"f\": false, \"n\": null,\n"
	" \"l\": [1, \"x\", [2]], \"o\": {\"k\": -3}}  \n";

START_TEST(test_values)
{
	size_t end = 0;
	tj *root = tj_parse(DOC, sizeof DOC - 1, &end);
	ck_assert_ptr_nonnull(root);
	/* Just after the closing brace; the whitespace is the caller's. */
	ck_assert_uint_eq(end, (size_t)(strrchr(DOC, '}') - DOC) + 1);
	ck_assert(tj_is_object(root) && !tj_is_array(root));
	ck_assert(tj_number(tj_get(root, "a")) == 1.5);
	ck_assert_str_eq(tj_string(tj_get(root, "s")), "caf\xc3\xa9");
	ck_assert(tj_is_bool(tj_get(root, "t")) && tj_is_true(tj_get(root, "t")));
	ck_assert(tj_is_bool(tj_get(root, "f")) && !tj_is_true(tj_get(root, "f")));
	ck_assert(tj_is_null(tj_get(root, "n")));
	/* Keys are case-sensitive; other types answer as absent. */
	ck_assert_ptr_null(tj_get(root, "A"));
	ck_assert_ptr_null(tj_string(tj_get(root, "a")));
	ck_assert(tj_number(tj_get(root, "s")) == 0);
	ck_assert_ptr_null(tj_get(tj_get(root, "l"), "k"));
	ck_assert(tj_number(tj_get(tj_get(root, "o"), "k")) == -3);

	const tj *l = tj_get(root, "l");
	ck_assert(tj_is_array(l));
	ck_assert_uint_eq(tj_size(l), 3);
	ck_assert(tj_number(tj_at(l, 0)) == 1);
	ck_assert_str_eq(tj_string(tj_at(l, 1)), "x");
	ck_assert(tj_number(tj_first(tj_at(l, 2))) == 2);
	ck_assert_ptr_null(tj_at(l, 3));
	ck_assert_ptr_null(tj_key(tj_first(l)));
	tj_free(root);
}
END_TEST

START_TEST(test_members_in_order)
{
	static const char text[] = "{\"z\": 1, \"a\": 2, \"m\": 3, \"a\": 4}";
	tj *root = tj_parse(text, sizeof text - 1, NULL);
	ck_assert_ptr_nonnull(root);
	const char *want[] = {"z", "a", "m", "a"};
	size_t i = 0;
	for (const tj *m = tj_first(root); m; m = tj_next(m), i++) {
		ck_assert_uint_lt(i, 4);
		ck_assert_str_eq(tj_key(m), want[i]);
		ck_assert(tj_number(m) == (double)(i + 1));
	}
	ck_assert_uint_eq(i, 4);
	ck_assert_uint_eq(tj_size(root), 4);
	/* A key given twice: tj_get finds the first. */
	ck_assert(tj_number(tj_get(root, "a")) == 2);
	tj_free(root);
}
END_TEST

START_TEST(test_equal_and_print)
{
	static const char a[] = "{\"x\": [1, 2], \"y\": {\"b\": 1, \"a\": \"s\"}}";
	static const char b[] = "{ \"y\" : {\"a\":\"s\",\"b\":1.0}, \"x\" : [1,2] }";
	static const char c[] = "{\"x\": [2, 1], \"y\": {\"b\": 1, \"a\": \"s\"}}";
	tj *ra = tj_parse(a, sizeof a - 1, NULL);
	tj *rb = tj_parse(b, sizeof b - 1, NULL);
	tj *rc = tj_parse(c, sizeof c - 1, NULL);
	ck_assert(ra && rb && rc);
	ck_assert(tj_equal(tj_get(ra, "y"), tj_get(rb, "y")));
	ck_assert(tj_equal(tj_get(ra, "x"), tj_get(rb, "x")));
	ck_assert(!tj_equal(tj_get(ra, "x"), tj_get(rc, "x")));
	ck_assert(!tj_equal(tj_get(ra, "x"), NULL));
	char *p = tj_print(tj_get(ra, "x"));
	ck_assert_str_eq(p, "[1,2]");
	free(p);
	p = tj_print(tj_get(rb, "y"));
	ck_assert_str_eq(p, "{\"a\":\"s\",\"b\":1}");
	free(p);
	ck_assert_ptr_null(tj_print(NULL));
	tj_free(ra);
	tj_free(rb);
	tj_free(rc);
}
END_TEST

START_TEST(test_bad_text)
{
	size_t end = 99;
	static const char bad[] = "{\"a\": [1, 2,, 3]}";
	ck_assert_ptr_null(tj_parse(bad, sizeof bad - 1, &end));
	/* Stopped at the second comma, inside the text. */
	ck_assert_uint_ge(end, 11);
	ck_assert_uint_le(end, 13);
	/* The length bounds the text: a value cut short is refused. */
	ck_assert_ptr_null(tj_parse("{\"a\": 1}", 7, &end));
	ck_assert_uint_le(end, 7);
	ck_assert_ptr_null(tj_parse("", 0, &end));
	/* Trailing bytes are reported through end, not refused. */
	tj *r = tj_parse("[1] x", 5, &end);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(end, 3);
	tj_free(r);
	tj_free(NULL);
	/* NULL everywhere answers as absent. */
	ck_assert(!tj_is_null(NULL) && !tj_is_object(NULL) && !tj_is_true(NULL));
	ck_assert_ptr_null(tj_first(NULL));
	ck_assert_ptr_null(tj_next(NULL));
	ck_assert_uint_eq(tj_size(NULL), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_json");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_members_in_order);
	tcase_add_test(tc, test_equal_and_print);
	tcase_add_test(tc, test_bad_text);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
