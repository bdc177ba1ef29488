/*
 * check_fe_cli.c - what the tools print about the terminal they print to
 * (tools/fe/cli.h): the locale test that decides their own non-ASCII
 * symbols, the ASCII fallback of libst's arrows, the progress bar's time
 * left. tests/cli/terminal.sh drives the same through a pseudo-terminal.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"

static void locale_env(const char *all, const char *ctype, const char *lang)
{
	const char *names[] = {"LC_ALL", "LC_CTYPE", "LANG"};
	const char *vals[] = {all, ctype, lang};
	for (int i = 0; i < 3; i++)
		if (vals[i])
			setenv(names[i], vals[i], 1);
		else
			unsetenv(names[i]);
}

START_TEST(test_utf8_locale)
{
	static const struct {
		const char *all, *ctype, *lang;
		int utf8;
	} cases[] = {
		{NULL, NULL, NULL, 0},         /* POSIX: C */
		{"C", NULL, "en_US.UTF-8", 0}, /* LC_ALL wins */
		{NULL, NULL, "en_US.UTF-8", 1},
		{NULL, NULL, "C.utf8", 1},
		{"", "POSIX", "de_DE.UTF-8", 0}, /* empty LC_ALL is unset */
		{"", "", "de_DE.UTF-8", 1},
		{NULL, "ja_JP.eucJP", "C.UTF-8", 0}, /* LC_CTYPE before LANG */
		{"C.UTF-8", NULL, NULL, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		locale_env(cases[i].all, cases[i].ctype, cases[i].lang);
		ck_assert_msg(cli_utf8_locale() == cases[i].utf8, "case %zu", i);
		ck_assert_str_eq(cli_arrow(), cases[i].utf8 ? "\xe2\x86\x92" : "->");
	}
}
END_TEST

START_TEST(test_ascii_fallback)
{
	char line[64];
	locale_env("C", NULL, NULL);
	strcpy(line, "3 tensors F32 \xe2\x86\x92 BF16, \xe2\x86\x92\xe2\x86\x92 x\xe2\x86");
	ck_assert_str_eq(cli_ascii_fallback(line), "3 tensors F32 -> BF16, ->-> x\xe2\x86");
	strcpy(line, "F8_E4M3 (128\xc3\x97"
	             "128 blocks)");
	ck_assert_str_eq(cli_ascii_fallback(line), "F8_E4M3 (128x128 blocks)");
	locale_env("C.UTF-8", NULL, NULL);
	strcpy(line, "F32 \xe2\x86\x92 BF16");
	ck_assert_str_eq(cli_ascii_fallback(line), "F32 \xe2\x86\x92 BF16");
}
END_TEST

START_TEST(test_eta)
{
	char b[32];
	cli_fmt_eta(b, sizeof b, 0);
	ck_assert_str_eq(b, "  ETA 0:00");
	cli_fmt_eta(b, sizeof b, 64.6);
	ck_assert_str_eq(b, "  ETA 1:05");
	cli_fmt_eta(b, sizeof b, 3599.4);
	ck_assert_str_eq(b, "  ETA 59:59");
	cli_fmt_eta(b, sizeof b, 3725);
	ck_assert_str_eq(b, "  ETA 1:02:05");
	cli_fmt_eta(b, sizeof b, 359999);
	ck_assert_str_eq(b, "  ETA 99:59:59");
	cli_fmt_eta(b, sizeof b, 360000);
	ck_assert_str_eq(b, "");
	cli_fmt_eta(b, sizeof b, -1);
	ck_assert_str_eq(b, "");
	cli_fmt_eta(b, sizeof b, NAN);
	ck_assert_str_eq(b, "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fe_cli");
	TCase *tc = tcase_create("terminal");
	tcase_add_test(tc, test_utf8_locale);
	tcase_add_test(tc, test_ascii_fallback);
	tcase_add_test(tc, test_eta);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
