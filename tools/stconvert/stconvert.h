/*
 * stconvert.h - what stconvert.c shares with its own files in
 * tools/stconvert/: the options as parsed, and the report (report.c).
 * Not shared with other tools.
 */
#ifndef ST_TOOLS_STCONVERT_H
#define ST_TOOLS_STCONVERT_H

#include <st.h>

struct stconvert_options {
	const char *in, *out;
	st_convert_options c; /* quantize: --to f8_e4m3 (has_to stays 0) */
	const char **keep, **drop, **keys;
	size_t n_keys;
	st_convert_meta *meta;
	st_convert_rename *renames; /* --rename and --strip-prefix, in order */
	const char **rename_arg;    /* each as given, for the warnings */
	int *rename_strip;          /* 1: --strip-prefix */
	uint64_t shard_size; /* 0: no sharding */
	int force, verbose, quiet;
	int threads; /* --threads; 0: the default */
	const char *to_arg;  /* --to as given */
	int gguf_type;       /* --to q8_0|q4_0|q4_1|q5_0|q5_1 (ST_GGML_*), else -1 */
	int stand_in_vocab;  /* --stand-in-vocab (OUT.gguf only) */
};

/* The report on stderr: tensors and bytes in and out, what happened to
 * them (every tensor with -v), values that overflowed or underflowed;
 * nothing with -q. */
void stconvert_report(const struct stconvert_options *o, st_checkpoint *c,
                      const st_convert_plan *p);

/*
 * The first option given that only a safetensors OUT from a safetensors
 * or PyTorch IN has a meaning for (--to f8_e4m3, --keep, --drop, --key,
 * --metadata, --shard-size, --block, --rename/--strip-prefix), as
 * written on the command line; NULL: none. A GGUF on either side refuses
 * it.
 */
const char *stconvert_safetensors_option(const struct stconvert_options *o);

/* The worker threads: --threads, else the CPUs online, at most four. */
unsigned stconvert_threads(const struct stconvert_options *o);

/* stconvert GGUF-IN OUT.safetensors (gguf.c): CLI_OK or CLI_ERROR, said. */
int stconvert_gguf(const struct stconvert_options *o);

/* stconvert SNAPSHOT OUT.gguf (to_gguf.c): CLI_OK or CLI_ERROR, said. */
int stconvert_to_gguf(const struct stconvert_options *o);

#endif
