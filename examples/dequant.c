/*
 * dequant.c - dequantize a block-scaled FP8 (or MXFP4) checkpoint to BF16,
 * atomically:
 *
 *   dequant IN OUT
 *
 * IN is anything st_checkpoint_open takes (a file, a shard index, a
 * snapshot directory, whose config and tokenizer files come along, with
 * config.json's quantization_config dropped); OUT, a directory that must
 * not exist yet, appears complete or not at all. The scales are folded
 * into their weights, every other float becomes BF16, and a sharded
 * snapshot keeps its shards. The result is what `stconvert --to bf16 IN
 * OUT` writes, byte for byte. Build against an installed libst with
 *   cc -o dequant dequant.c $(pkg-config --cflags --libs libst)
 */
#include <st.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	st_checkpoint *c = NULL;
	st_convert_plan *p = NULL;
	st_error err = {.message = "out of memory"};
	st_convert_options o = {.has_to = 1, .to = ST_DTYPE_BF16};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	st_convert_run run = {.threads = cpus < 1 ? 1 : cpus > 4 ? 4 : (unsigned)cpus};
	struct stat st;

	if (argc != 3) {
		fprintf(stderr, "usage: dequant IN OUT\n");
		return 2;
	}
	int rc = st_checkpoint_open(&c, argv[1], ST_OPEN_TORCH, &err);
	if (rc == ST_OK)
		rc = st_convert_plan_new(&p, c, &o, &err);
	if (rc == ST_OK)
		rc = st_convert_plan_shards(p, 1, 0, &err);
	int in_dir = stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode);
	if (rc == ST_OK)
		rc = st_convert_write_snapshot(p, argv[2], in_dir ? argv[1] : NULL, 0, &run, &err);
	if (rc == ST_OK) {
		const st_quant_plan *q = st_convert_plan_pairs(p);
		printf("%zu FP8 and %zu MXFP4 weights dequantized, %zu scale tensors folded in\n",
		       q->n_fp8, q->n_mxfp4, q->n_scales);
	} else {
		fprintf(stderr, "dequant: %s\n", err.message);
	}
	st_convert_plan_free(p);
	st_checkpoint_close(c);
	return rc == ST_OK ? 0 : 2;
}
