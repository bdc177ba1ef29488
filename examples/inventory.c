/*
 * inventory.c - the smallest useful libst program: list the tensors of
 * any checkpoint PATH (file, shard index or snapshot directory).
 *
 *   cc inventory.c $(pkg-config --cflags --libs libst) -o inventory
 *   ./inventory path/to/snapshot
 */
#include <st.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	st_checkpoint *c;
	st_error err;
	if (argc != 2 || st_checkpoint_open(&c, argv[1], 0, &err) != ST_OK) {
		fprintf(stderr, "inventory: %s\n", argc == 2 ? err.message : "usage: inventory PATH");
		return 2;
	}
	for (size_t i = 0; i < st_checkpoint_n_tensors(c); i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		printf("%s %s %llu\n", t->name, st_dtype_name(t->dtype),
		       (unsigned long long)t->n_elements);
	}
	printf("%zu tensors, %llu bytes, libst %s\n", st_checkpoint_n_tensors(c),
	       (unsigned long long)st_checkpoint_data_bytes(c), st_version_string());
	st_checkpoint_close(c);
	return 0;
}
