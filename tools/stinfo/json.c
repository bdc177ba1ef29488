/*
 * json.c - stinfo --json's document (stinfo.h, man/stinfo.1): the files
 * (a PyTorch checkpoint's dictionary too), the tensors, the totals, and
 * the quantization and inventory members.
 */
#include "stinfo/stinfo.h"

#include <stdio.h>
#include <string.h>

#include "fe/cli.h"
#include "fe/table.h"

/* ---- JSON -------------------------------------------------------------- */

static void json_str(const char *s, size_t len) { cli_json_string(stdout, s, len); }

/* A list of names as a JSON array. */
static void json_names(const st_torch_name *v, size_t n)
{
	putchar('[');
	for (size_t i = 0; i < n; i++) {
		if (i)
			printf(", ");
		json_str(v[i].s, v[i].len);
	}
	putchar(']');
}

/*
 * What reading a PyTorch checkpoint's dictionary found: its top-level
 * keys, the sub-dictionary read (null: the whole) and whether it was
 * chosen for holding every tensor, the values that are not tensors left
 * out (how many; the first 8 named).
 */
static void json_torch(const st_torch_info *ti)
{
	printf(", \"pytorch\": {\"keys\": ");
	json_names(ti->key_list, ti->n_key_list);
	printf(", \"key\": ");
	if (ti->key)
		json_str(ti->key, strlen(ti->key));
	else
		printf("null");
	printf(", \"key_auto\": %s, \"skipped\": %zu, \"skipped_keys\": ",
	       ti->key_auto ? "true" : "false", ti->n_skipped);
	json_names(ti->skipped_list, ti->n_skipped_list);
	putchar('}');
}

/*
 * SPEC.md's document, keys in its order, one file or tensor per line so the
 * output stays greppable; with --stats each tensor gains a "stats" object
 * (null for a dtype without statistics).
 */
void stinfo_json(const st_checkpoint *ck, const unsigned char *sel, const st_stats *accs)
{
	struct stinfo_totals t;
	stinfo_totals(ck, sel, &t);
	size_t nf = st_checkpoint_n_files(ck);
	printf("{\n  \"schema\": %d,\n  \"files\": [\n", CLI_JSON_SCHEMA);
	for (size_t i = 0; i < nf; i++) {
		const st_file *f = st_checkpoint_file(ck, i);
		printf("    {\"path\": ");
		json_str(st_file_path(f), strlen(st_file_path(f)));
		if (st_file_format(f) == ST_FORMAT_TORCH) {
			printf(", \"format\": \"%s\"", st_file_format_name(f));
			json_torch(st_file_torch_info(f));
		}
		printf(", \"header_bytes\": %llu, \"data_bytes\": %llu, \"metadata\": {",
		       (unsigned long long)st_file_header_size(f),
		       (unsigned long long)st_file_data_size(f));
		for (size_t m = 0; m < st_file_n_meta(f); m++) {
			const st_meta *e = st_file_meta(f, m);
			if (m)
				printf(", ");
			json_str(e->key, e->key_len);
			printf(": ");
			json_str(e->value, e->value_len);
		}
		printf("}}%s\n", i + 1 < nf ? "," : "");
	}
	printf("  ],\n  \"tensors\": [\n");
	size_t n = st_checkpoint_n_tensors(ck), left = (size_t)t.tensors;
	for (size_t i = 0; i < n; i++) {
		if (!stinfo_shown(sel, i))
			continue;
		size_t file;
		const st_tensor *x = st_checkpoint_tensor(ck, i, &file);
		const char *fp = st_file_path(st_checkpoint_file(ck, file));
		printf("    {\"name\": ");
		json_str(x->name, x->name_len);
		printf(", \"dtype\": \"%s\", \"shape\": ", st_dtype_name(x->dtype));
		cli_print_dims(stdout, x->shape, x->ndim);
		printf(", \"parameters\": %llu, \"bytes\": %llu, \"file\": ",
		       (unsigned long long)x->n_elements, (unsigned long long)x->n_bytes);
		json_str(fp, strlen(fp));
		printf(", \"data_offsets\": [%llu, %llu]", (unsigned long long)x->begin,
		       (unsigned long long)x->end);
		if (accs) {
			if (st_dtype_has_values(x->dtype))
				table_json_stats(&accs[i], !st_dtype_is_float(x->dtype));
			else
				printf(", \"stats\": null");
		}
		printf("}%s\n", --left ? "," : "");
	}
	printf("  ],\n  \"total\": {\"tensors\": %llu, \"parameters\": %llu, "
	       "\"bytes\": %llu, \"by_dtype\": {",
	       (unsigned long long)t.tensors, (unsigned long long)t.params,
	       (unsigned long long)t.bytes);
	int first = 1;
	for (int d = ST_DTYPE_COUNT - 1; d >= 0; d--) {
		if (!t.by[d].tensors)
			continue;
		printf("%s\"%s\": {\"tensors\": %llu, \"parameters\": %llu, \"bytes\": %llu}",
		       first ? "" : ", ", st_dtype_name((st_dtype)d),
		       (unsigned long long)t.by[d].tensors,
		       (unsigned long long)t.by[d].params,
		       (unsigned long long)t.by[d].bytes);
		first = 0;
	}
	printf("}}");
	stinfo_quant(ck, 1);
	stinfo_inventory(ck, 1);
	printf("\n}\n");
}

void stinfo_json_error(const char *path, const st_error *err, int *printed)
{
	if (*printed)
		fputs(",\n", stdout);
	*printed = 1;
	cli_json_error(stdout, path, err);
	putchar('\n');
}
