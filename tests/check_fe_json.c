/*
 * check_fe_json.c - the tools' JSON tree (tools/fe/json.h): the
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
	json_node *root = json_parse(DOC, sizeof DOC - 1, &end);
	ck_assert_ptr_nonnull(root);
	/* Just after the closing brace; the whitespace is the caller's. */
	ck_assert_uint_eq(end, (size_t)(strrchr(DOC, '}') - DOC) + 1);
	ck_assert(json_is_object(root) && !json_is_array(root));
	ck_assert(json_number(json_get(root, "a")) == 1.5);
	ck_assert_str_eq(json_string(json_get(root, "s")), "caf\xc3\xa9");
	ck_assert(json_is_bool(json_get(root, "t")) && json_is_true(json_get(root, "t")));
	ck_assert(json_is_bool(json_get(root, "f")) && !json_is_true(json_get(root, "f")));
	ck_assert(json_is_null(json_get(root, "n")));
	/* Keys are case-sensitive; other types answer as absent. */
	ck_assert_ptr_null(json_get(root, "A"));
	ck_assert_ptr_null(json_string(json_get(root, "a")));
	ck_assert(json_number(json_get(root, "s")) == 0);
	ck_assert_ptr_null(json_get(json_get(root, "l"), "k"));
	ck_assert(json_number(json_get(json_get(root, "o"), "k")) == -3);

	const json_node *l = json_get(root, "l");
	ck_assert(json_is_array(l));
	ck_assert_uint_eq(json_size(l), 3);
	ck_assert(json_number(json_at(l, 0)) == 1);
	ck_assert_str_eq(json_string(json_at(l, 1)), "x");
	ck_assert(json_number(json_first(json_at(l, 2))) == 2);
	ck_assert_ptr_null(json_at(l, 3));
	ck_assert_ptr_null(json_key(json_first(l)));
	json_free(root);
}
END_TEST

START_TEST(test_members_in_order)
{
	static const char text[] = "{\"z\": 1, \"a\": 2, \"m\": 3, \"a\": 4}";
	json_node *root = json_parse(text, sizeof text - 1, NULL);
	ck_assert_ptr_nonnull(root);
	const char *want[] = {"z", "a", "m", "a"};
	size_t i = 0;
	for (const json_node *m = json_first(root); m; m = json_next(m), i++) {
		ck_assert_uint_lt(i, 4);
		ck_assert_str_eq(json_key(m), want[i]);
		ck_assert(json_number(m) == (double)(i + 1));
	}
	ck_assert_uint_eq(i, 4);
	ck_assert_uint_eq(json_size(root), 4);
	/* A key given twice: json_get finds the first. */
	ck_assert(json_number(json_get(root, "a")) == 2);
	json_free(root);
}
END_TEST

START_TEST(test_equal_and_print)
{
	static const char a[] = "{\"x\": [1, 2], \"y\": {\"b\": 1, \"a\": \"s\"}}";
	static const char b[] = "{ \"y\" : {\"a\":\"s\",\"b\":1.0}, \"x\" : [1,2] }";
	static const char c[] = "{\"x\": [2, 1], \"y\": {\"b\": 1, \"a\": \"s\"}}";
	json_node *ra = json_parse(a, sizeof a - 1, NULL);
	json_node *rb = json_parse(b, sizeof b - 1, NULL);
	json_node *rc = json_parse(c, sizeof c - 1, NULL);
	ck_assert(ra && rb && rc);
	ck_assert(json_equal(json_get(ra, "y"), json_get(rb, "y")));
	ck_assert(json_equal(json_get(ra, "x"), json_get(rb, "x")));
	ck_assert(!json_equal(json_get(ra, "x"), json_get(rc, "x")));
	ck_assert(!json_equal(json_get(ra, "x"), NULL));
	char *p = json_print(json_get(ra, "x"));
	ck_assert_str_eq(p, "[1,2]");
	free(p);
	p = json_print(json_get(rb, "y"));
	ck_assert_str_eq(p, "{\"a\":\"s\",\"b\":1}");
	free(p);
	ck_assert_ptr_null(json_print(NULL));
	json_free(ra);
	json_free(rb);
	json_free(rc);
}
END_TEST

START_TEST(test_bad_text)
{
	size_t end = 99;
	static const char bad[] = "{\"a\": [1, 2,, 3]}";
	ck_assert_ptr_null(json_parse(bad, sizeof bad - 1, &end));
	/* Stopped at the second comma, inside the text. */
	ck_assert_uint_ge(end, 11);
	ck_assert_uint_le(end, 13);
	/* The length bounds the text: a value cut short is refused. */
	ck_assert_ptr_null(json_parse("{\"a\": 1}", 7, &end));
	ck_assert_uint_le(end, 7);
	ck_assert_ptr_null(json_parse("", 0, &end));
	/* Trailing bytes are reported through end, not refused. */
	json_node *r = json_parse("[1] x", 5, &end);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(end, 3);
	json_free(r);
	json_free(NULL);
	/* NULL everywhere answers as absent. */
	ck_assert(!json_is_null(NULL) && !json_is_object(NULL) && !json_is_true(NULL));
	ck_assert_ptr_null(json_first(NULL));
	ck_assert_ptr_null(json_next(NULL));
	ck_assert_uint_eq(json_size(NULL), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fe_json");
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
