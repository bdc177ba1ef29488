/*
 * reshard.c - rewrite a checkpoint as a sharded snapshot, atomically:
 *
 *   reshard IN OUT MAX_SHARD_BYTES
 *
 * IN is anything st_checkpoint_open takes (a file, a shard index, a
 * snapshot directory, whose config and tokenizer files come along); OUT,
 * a directory that must not exist yet, appears complete or not at all.
 * The result is what `stconvert IN OUT --shard-size MAX_SHARD_BYTES`
 * writes, byte for byte. Build against an installed libst with
 *   cc -o reshard reshard.c $(pkg-config --cflags --libs libst)
 */
#include <st.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Write shard k: the metadata of every input file (the first winning,
 * as stconvert does), then its tensors, in the writer's order. */
static int write_shard(st_snapshot *s, st_checkpoint *c, const unsigned *shard,
                       unsigned k, const char *name, st_error *err)
{
	st_writer *w;
	int rc = st_writer_new(&w, err);
	for (size_t f = st_checkpoint_n_files(c); rc == ST_OK && f-- > 0;) {
		st_file *file = st_checkpoint_file(c, f);
		for (size_t m = 0; rc == ST_OK && m < st_file_n_meta(file); m++)
			rc = st_writer_set_meta(w, st_file_meta(file, m)->key,
			                        st_file_meta(file, m)->value, err);
	}
	for (size_t i = 0; rc == ST_OK && i < st_checkpoint_n_tensors(c); i++) {
		const st_tensor *t = st_checkpoint_tensor(c, i, NULL);
		if (shard[i] == k)
			rc = st_writer_add(w, t->name, t->name_len, t->dtype, t->ndim,
			                   t->shape, err);
	}
	if (rc == ST_OK)
		rc = st_snapshot_open_writer(s, w, name, err);
	for (size_t j = 0; rc == ST_OK && j < st_writer_n_tensors(w); j++) {
		const st_tensor *t = st_writer_tensor(w, j);
		const void *data;
		rc = st_checkpoint_data(c, (size_t)st_checkpoint_find(c, t->name, t->name_len),
		                        &data, err);
		if (rc == ST_OK)
			rc = st_writer_write(w, data, t->n_bytes, err);
	}
	if (rc == ST_OK)
		rc = st_writer_finish(w, err);
	st_writer_free(w);
	return rc;
}

int main(int argc, char **argv)
{
	st_checkpoint *c = NULL;
	st_snapshot *s = NULL;
	st_error err = {.message = "out of memory"};
	char *end;
	unsigned long long max = argc == 4 ? strtoull(argv[3], &end, 10) : 0;
	if (argc != 4 || !*argv[3] || *end || max == 0) {
		fprintf(stderr, "usage: reshard IN OUT MAX_SHARD_BYTES\n");
		return 2;
	}
	int rc = st_checkpoint_open(&c, argv[1], ST_OPEN_TORCH, &err);
	size_t n = rc == ST_OK ? st_checkpoint_n_tensors(c) : 0;
	st_tensor *t = malloc((n + 1) * sizeof *t);
	unsigned *shard = malloc((n + 1) * sizeof *shard), n_shards = 0;
	st_index_entry *e = malloc((n + 1) * sizeof *e);
	char (*names)[64] = NULL;
	uint64_t total = 0;
	for (size_t i = 0; rc == ST_OK && t && i < n; i++) {
		t[i] = *st_checkpoint_tensor(c, i, NULL);
		total += t[i].n_bytes;
	}
	if (rc == ST_OK && (!t || !shard || !e))
		rc = ST_ENOMEM;
	if (rc == ST_OK && (rc = st_shard_plan(t, n, max, shard, &n_shards, &err)) == ST_OK &&
	    (rc = st_snapshot_open(&s, argv[2], 0, &err)) == ST_OK &&
	    !(names = malloc(n_shards * sizeof *names)))
		rc = ST_ENOMEM;
	for (unsigned k = 0; rc == ST_OK && k < n_shards; k++) {
		st_snapshot_file_name(names[k], sizeof names[k], k, n_shards);
		rc = write_shard(s, c, shard, k, names[k], &err);
	}
	for (size_t i = 0; rc == ST_OK && i < n; i++)
		e[i] = (st_index_entry){t[i].name, t[i].name_len, names[shard[i]]};
	struct stat st;
	if (rc == ST_OK && n_shards > 1)
		rc = st_snapshot_write_index(s, total, e, n, &err);
	if (rc == ST_OK && stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode))
		rc = st_snapshot_copy_dir(s, argv[1], c, NULL, NULL, NULL, &err);
	if (rc == ST_OK)
		rc = st_snapshot_commit(s, &err);
	if (rc != ST_OK)
		fprintf(stderr, "reshard: %s\n", err.message);
	st_snapshot_close(s); /* before a commit: removes what was written */
	st_checkpoint_close(c);
	free(names), free(t), free(shard), free(e);
	return rc == ST_OK ? 0 : 2;
}
