/*
 * check_common_order.c - tools/common/order: the recorded order of a
 * trace, and what a hostile or absent "order" entry gives. Files are
 * written here with libst's writer (its canonical order is by name, so a
 * recorded order is visible as a different one).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/order.h"

/* A file of scalars a, b, c, d (canonical order) with metadata order. */
static st_checkpoint *make(const char *order, char *path)
{
	st_writer *w;
	st_error e;
	strcpy(path, "/tmp/check_common_order_XXXXXX");
	int fd = mkstemp(path);
	ck_assert(fd >= 0);
	close(fd);
	ck_assert(st_writer_new(&w, &e) == ST_OK);
	if (order)
		ck_assert(st_writer_set_meta(w, "order", order, &e) == ST_OK);
	static const char *names[] = {"d", "b", "c", "a"};
	for (int i = 0; i < 4; i++)
		ck_assert(st_writer_add(w, names[i], 1, ST_DTYPE_F32, 0, NULL, &e) ==
		          ST_OK);
	ck_assert(st_writer_open(w, path, &e) == ST_OK);
	float zeros[4] = {0};
	ck_assert(st_writer_write(w, zeros, sizeof zeros, &e) == ST_OK);
	ck_assert(st_writer_finish(w, &e) == ST_OK);
	st_writer_free(w);
	st_checkpoint *ck;
	ck_assert(st_checkpoint_open(&ck, path, 0, &e) == ST_OK);
	return ck;
}

static void expect(const char *order, int want_rc, const char *want)
{
	char path[64];
	st_checkpoint *ck = make(order, path);
	size_t *idx;
	ck_assert_int_eq(order_tensors(ck, &idx), want_rc);
	char got[16] = "";
	for (size_t i = 0; i < 4; i++)
		got[i] = st_checkpoint_tensor(ck, idx[i], NULL)->name[0];
	ck_assert_str_eq(got, want);
	free(idx);
	st_checkpoint_close(ck);
	unlink(path);
}

START_TEST(recorded_order_walked)
{
	expect("d,b,c,a", 1, "dbca");
}
END_TEST

START_TEST(no_order_is_file_order)
{
	expect(NULL, 0, "abcd");
}
END_TEST

START_TEST(unlisted_follow_in_file_order)
{
	expect("c", 1, "cabd");
}
END_TEST

START_TEST(hostile_order_entries)
{
	/* Unknown names, repeats, empty names, a trailing comma. */
	expect(",x,c,,c,b,", 1, "cbad");
	expect("", 1, "abcd");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("order");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, recorded_order_walked);
	tcase_add_test(tc, no_order_is_file_order);
	tcase_add_test(tc, unlisted_follow_in_file_order);
	tcase_add_test(tc, hostile_order_entries);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
