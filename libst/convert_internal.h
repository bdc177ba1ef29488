/*
 * convert_internal.h - the plan of st/convert.h, shared by its planner
 * (convert.c) and its data path (convert_write.c). Not installed.
 */
#ifndef ST_CONVERT_INTERNAL_H
#define ST_CONVERT_INTERNAL_H

#include "internal.h"

struct st_convert_plan {
	st_checkpoint *c;
	st_convert_options o;    /* keep, drop, rename: not kept; meta: the copy */
	st_convert_meta *meta;
	char **meta_text;        /* the copies' strings, 2 per entry */
	size_t *hits[3];         /* keep and drop glob hits, rename hits */
	char **renamed;          /* per item: its new name, or NULL */
	st_convert_item **by_name; /* the items written, by out_name */
	size_t n_by_name;
	uint64_t block[2];       /* quantizing's blocks */
	/* The config.json beside c's files, read once (st__convert_config). */
	char *config, *config_file;
	size_t config_len;
	int config_read;
	st_quant_plan dq;        /* pairs: dequantized, or kept by quantizing */
	st_quant_target *qz;     /* quantizing: one per input tensor */
	st_tensor *qz_scales;    /* the new scale tensors' headers */
	size_t qz_scratch;
	st_convert_item *items;  /* n_tensors input items, then the scales */
	size_t n_tensors, n_items;
	unsigned n_shards;
	int keeps_shards;
	size_t *order;           /* input files in path order */
	long *file_shard;        /* per input file, when shards are kept */
};

/*
 * The config.json text beside the plan's checkpoint files, read on the
 * first call: ST_OK with *text NULL when there is none, or
 * st_config_read's error.
 */
int st__convert_config(st_convert_plan *p, const char **text, size_t *len, st_error *err);

/* The item written under name (len bytes), or NULL. */
st_convert_item *st__convert_item_named(const st_convert_plan *p, const char *name, size_t len);

#endif
