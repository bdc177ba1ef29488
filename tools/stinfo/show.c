/*
 * show.c - stinfo's human summary (stinfo.h): the files with their
 * metadata, the totals, the quantized layouts and the config-aware
 * inventory (libst's results, in common/quant_info's and
 * common/inventory's words), the dtype table, and the tensor table with
 * repeated layers compacted (common/layers.c) or the --stats table.
 */
#include "stinfo/stinfo.h"

#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"
#include "fe/markdown.h"
#include "common/inventory.h"
#include "common/layers.h"
#include "common/quant_info.h"
#include "fe/table.h"

/* ---- human summary ----------------------------------------------------- */

/* Metadata values longer than this are cut in the summary (not in --json). */
#define META_SHOW 200

/* Top-level keys of a PyTorch checkpoint shown before "... (N keys)". */
#define TORCH_KEYS_SHOW 10

/* A PyTorch checkpoint's top-level keys: all of a few, the first of many. */
static void print_torch_keys(const st_torch_info *ti)
{
	size_t n = ti->n_key_list, show = n > TORCH_KEYS_SHOW ? TORCH_KEYS_SHOW : n;
	printf("%-13s", "  keys:");
	if (!n)
		printf("(none)");
	for (size_t i = 0; i < show; i++) {
		char *k = cli_printable(ti->key_list[i].s, ti->key_list[i].len);
		printf("%s%s", i ? ", " : "", k);
		free(k);
	}
	if (show < n)
		printf(", ... (%zu keys)", n);
	putchar('\n');
}

/* A PyTorch file's format in words. */
static const char *torch_format_words(const st_file *f)
{
	const char *fn = st_file_format_name(f);
	return !strcmp(fn, "pytorch-legacy")
	               ? "PyTorch legacy (pre-1.6) checkpoint (its pickle was "
	                 "read, not executed)"
	       : !strcmp(fn, "pytorch-tar")
	               ? "PyTorch tar (pre-0.4) checkpoint (its pickles were "
	                 "read, not executed)"
	               : "PyTorch zip checkpoint (its pickle was read, not "
	                 "executed)";
}

/* One file's metadata lines (a key and value each, long values cut). */
static void print_meta(const st_file *f)
{
	size_t nm = st_file_n_meta(f);
	if (nm == 0)
		table_print_kv("  metadata:", "(none)");
	for (size_t m = 0; m < nm; m++) {
		const st_meta *e = st_file_meta(f, m);
		size_t show = e->value_len > META_SHOW ? META_SHOW : e->value_len;
		/* Do not cut a UTF-8 sequence in half. */
		while (show < e->value_len &&
		       ((unsigned char)e->value[show] & 0xc0) == 0x80)
			show--;
		char *k = cli_printable(e->key, e->key_len);
		char *v = cli_printable(e->value, show);
		printf("%-13s%s: %s", m ? "" : "  metadata:", k, v);
		if (show < e->value_len)
			printf("... (%zu bytes)", e->value_len);
		putchar('\n');
		free(k);
		free(v);
	}
}

/* Whether files a and b hold the same metadata, key for key. */
static int same_meta(const st_file *a, const st_file *b)
{
	size_t n = st_file_n_meta(a);
	if (st_file_n_meta(b) != n)
		return 0;
	for (size_t m = 0; m < n; m++) {
		const st_meta *x = st_file_meta(a, m), *y = st_file_meta(b, m);
		if (x->key_len != y->key_len || x->value_len != y->value_len ||
		    memcmp(x->key, y->key, x->key_len) ||
		    memcmp(x->value, y->value, x->value_len))
			return 0;
	}
	return 1;
}

/*
 * Several shards in one line: how many, their bytes, the headers' bytes
 * (safetensors shards), the format (PyTorch shards), and the metadata
 * once when every shard has the same (a shard's own list is -v's).
 */
static void print_shards(const st_checkpoint *ck)
{
	size_t nf = st_checkpoint_n_files(ck), torch = 0;
	uint64_t size = 0, headers = 0;
	int same_meta_all = 1, same_format = 1;
	const st_file *f0 = st_checkpoint_file(ck, 0);
	for (size_t i = 0; i < nf; i++) {
		const st_file *f = st_checkpoint_file(ck, i);
		uint64_t s = st_file_size(f), h = st_file_header_size(f);
		size = size + s < size ? UINT64_MAX : size + s;
		if (st_file_format(f) == ST_FORMAT_TORCH)
			torch++;
		else
			headers = headers + h < headers ? UINT64_MAX : headers + h;
		same_meta_all = same_meta_all && same_meta(f0, f);
		same_format = same_format && st_file_format(f) == st_file_format(f0) &&
		              !strcmp(st_file_format_name(f), st_file_format_name(f0));
	}
	char line[256], sz[96], hd[96];
	table_fmt_full(sz, sizeof sz, size, 1);
	table_fmt_full(hd, sizeof hd, headers, 1);
	if (torch == nf)
		snprintf(line, sizeof line, "%zu files, %s", nf, sz);
	else
		snprintf(line, sizeof line, "%zu files, %s, headers %s", nf, sz, hd);
	table_print_kv("shards:", line);
	if (!same_format)
		table_print_kv("  format:", "differs between shards (-v lists each)");
	else if (torch == nf)
		table_print_kv("  format:", torch_format_words(f0));
	if (same_meta_all)
		print_meta(f0);
	else
		table_print_kv("  metadata:", "differs between shards (-v lists each)");
}

static void print_files(const st_checkpoint *ck, int verbose)
{
	char buf[96];
	const char *index = st_checkpoint_index_path(ck);
	if (index) {
		char *p = cli_printable(index, strlen(index));
		table_print_kv("index:", p);
		free(p);
	}
	size_t nf = st_checkpoint_n_files(ck);
	if (nf > 1 && !verbose) {
		print_shards(ck);
		return;
	}
	for (size_t i = 0; i < nf; i++) {
		const st_file *f = st_checkpoint_file(ck, i);
		char *p = cli_printable(st_file_path(f), strlen(st_file_path(f)));
		table_print_kv("file:", p);
		free(p);
		if (st_file_format(f) == ST_FORMAT_TORCH) {
			/* Offsets below count from the start of the file. */
			table_print_kv("  format:", torch_format_words(f));
			table_fmt_full(buf, sizeof buf, st_file_size(f), 1);
			table_print_kv("  size:", buf);
			const st_torch_info *ti = st_file_torch_info(f);
			print_torch_keys(ti);
			char *k;
			if (ti->key) {
				k = cli_printable(ti->key, strlen(ti->key));
				char *line = cli_xmalloc(strlen(k) + 48);
				sprintf(line, "%s%s", k, ti->key_auto
				        ? " (every tensor is under it)" : "");
				table_print_kv("  read:", line);
				free(line);
				free(k);
			}
			if (ti->n_skipped) {
				k = cli_printable(ti->skipped, strlen(ti->skipped));
				char *line = cli_xmalloc(strlen(k) + 64);
				sprintf(line, "%zu %s (%s%s)", ti->n_skipped,
				        ti->n_skipped == 1 ? "entry that is not a tensor"
				                           : "entries that are not tensors",
				        k, ti->n_skipped > 8 ? ", ..." : "");
				table_print_kv("  skipped:", line);
				free(line);
				free(k);
			}
		} else {
			table_fmt_full(buf, sizeof buf, st_file_header_size(f), 1);
			table_print_kv("  header:", buf);
			table_fmt_full(buf, sizeof buf, st_file_data_size(f), 1);
			table_print_kv("  data:", buf);
		}
		print_meta(f);
	}
}

static void print_dtype_table(const struct stinfo_totals *t, int markdown)
{
	struct table tab;
	char c1[32], c2[96], c3[96];
	table_init(&tab, 4, "lrrr");
	table_add(&tab, (const char *const[]){"dtype", "tensors", "parameters", "bytes"});
	for (int d = ST_DTYPE_COUNT - 1; d >= 0; d--) {
		if (!t->by[d].tensors)
			continue;
		snprintf(c1, sizeof c1, "%llu", (unsigned long long)t->by[d].tensors);
		table_fmt_full(c2, sizeof c2, t->by[d].params, 0);
		table_fmt_full(c3, sizeof c3, t->by[d].bytes, 1);
		table_add(&tab, (const char *const[]){st_dtype_name((st_dtype)d), c1, c2, c3});
	}
	md_table_show(&tab, markdown);
	table_free(&tab);
}

static void print_tensor_table(const st_checkpoint *ck, const struct stinfo_view *v)
{
	size_t nrows, n = st_checkpoint_n_tensors(ck), m = 0;
	const st_tensor **ts = cli_xmalloc((n ? n : 1) * sizeof *ts);
	size_t *idx = cli_xmalloc((n ? n : 1) * sizeof *idx); /* ts[k] is tensor idx[k] */
	for (size_t i = 0; i < n; i++) {
		if (!stinfo_shown(v->sel, i))
			continue;
		idx[m] = i;
		ts[m++] = st_checkpoint_tensor(ck, i, NULL);
	}
	layers_row *rows = layers_compact(ts, m, v->all, &nrows);
	int sharded = st_checkpoint_n_files(ck) > 1;
	struct table tab;
	char shape[1024], params[64], where[64];
	table_init(&tab, 5, "lllrl");
	table_add(&tab, (const char *const[]){"name", "dtype", "shape", "parameters",
	                                      sharded ? "file" : "offset"});
	for (size_t r = 0; r < nrows; r++) {
		const layers_row *row = &rows[r];
		size_t file;
		const st_tensor *t = st_checkpoint_tensor(ck, idx[row->members[0]], &file);
		size_t len;
		char *raw = layers_row_name(row, &len);
		char *name = table_display_name(raw, len);
		free(raw);
		cli_fmt_shape(shape, sizeof shape, t);
		if (row->nmembers > 1)
			snprintf(params, sizeof params, "%zu x %llu", row->nmembers,
			         (unsigned long long)t->n_elements);
		else
			snprintf(params, sizeof params, "%llu",
			         (unsigned long long)t->n_elements);
		char *wherep = NULL;
		if (sharded) {
			/* A group spread over shards names how many it spans. */
			size_t nfiles = 1, prev = file;
			for (size_t k = 1; k < row->nmembers; k++) {
				size_t f;
				st_checkpoint_tensor(ck, idx[row->members[k]], &f);
				if (f != prev)
					nfiles++;
				prev = f;
			}
			if (nfiles > 1) {
				snprintf(where, sizeof where, "%zu files", nfiles);
			} else {
				const char *p = st_file_path(st_checkpoint_file(ck, file));
				wherep = cli_printable(table_base_name(p), strlen(table_base_name(p)));
			}
		} else if (row->nmembers > 1) {
			snprintf(where, sizeof where, "-");
		} else {
			snprintf(where, sizeof where, "%llu", (unsigned long long)t->begin);
		}
		table_add(&tab, (const char *const[]){name, st_dtype_name(t->dtype),
		                                      shape, params,
		                                      wherep ? wherep : where});
		free(wherep);
		free(name);
	}
	md_table_show(&tab, v->markdown);
	table_free(&tab);
	layers_free(rows, nrows);
	free(idx);
	free(ts);
}

static void print_stats_table(const st_checkpoint *ck, const struct stinfo_view *v,
                              const st_stats *accs)
{
	size_t n = st_checkpoint_n_tensors(ck);
	struct table tab;
	char c[7][48];
	table_init(&tab, 9, "llrrrrrrr");
	table_add(&tab, (const char *const[]){"name", "dtype", "min", "max", "mean",
	                                      "std", "nan", "inf", "zeros"});
	for (size_t i = 0; i < n; i++) {
		if (!stinfo_shown(v->sel, i))
			continue;
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		const st_stats *a = &accs[i];
		char *name = table_display_name(t->name, t->name_len);
		if (!st_dtype_has_values(t->dtype)) {
			table_add(&tab, (const char *const[]){name, st_dtype_name(t->dtype),
			                                      "-", "-", "-", "-", "-", "-", "-"});
			free(name);
			continue;
		}
		table_stats_cells(a, c);
		table_add(&tab, (const char *const[]){name, st_dtype_name(t->dtype), c[0],
		                                      c[1], c[2], c[3], c[4], c[5], c[6]});
		free(name);
	}
	md_table_show(&tab, v->markdown);
	table_free(&tab);
	/* Say once which dtypes had no statistics, rather than leave a bare "-". */
	int skipped[ST_DTYPE_COUNT] = {0};
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		if (!st_dtype_has_values(t->dtype) && stinfo_shown(v->sel, i))
			skipped[t->dtype] = 1;
	}
	int any = 0;
	for (int d = ST_DTYPE_COUNT - 1; d >= 0; d--)
		if (skipped[d])
			printf("%s%s", any++ ? ", " : "note: no statistics for ",
			       st_dtype_name((st_dtype)d));
	if (any)
		printf(" tensors (skipped)\n");
}

void stinfo_inventory(const st_checkpoint *ck, int json)
{
	st_arch_config cfg;
	st_arch_report r;
	st_error e;
	int rc = st_arch_inventory(ck, &cfg, &r, &e);
	if (rc == ST_ENOTFOUND || rc == ST_EUNSUPPORTED) {
		return; /* nothing to say */
	} else if (rc != ST_OK && json) {
		printf(",\n  \"inventory\": {\"error\": ");
		cli_json_string(stdout, e.message, strlen(e.message));
		putchar('}');
	} else if (rc != ST_OK) {
		char *m = cli_printable(e.message, strlen(e.message));
		printf("%-13sno inventory: %s\n", "config:", m);
		free(m);
	} else {
		if (json) {
			printf(",\n  \"inventory\": ");
			inventory_json(stdout, &cfg, &r);
		} else {
			inventory_print(stdout, &cfg, &r);
		}
		st_arch_report_free(&r);
	}
}

void stinfo_quant(const st_checkpoint *ck, int json)
{
	st_quant_summary q;
	st_error e;
	int rc = st_quant_summary_load(&q, ck, NULL, NULL, &e);
	if (rc == ST_ENOMEM)
		cli_die(CLI_ERROR, "out of memory");
	if (rc != ST_OK)
		return;
	if (json) {
		printf(",\n  \"quantization\": ");
		quant_info_json(stdout, &q);
	} else {
		quant_info_print(stdout, &q);
	}
	st_quant_summary_free(&q);
}

void stinfo_summary(const char *path, const st_checkpoint *ck, const struct stinfo_view *v,
                    const st_stats *accs)
{
	struct stinfo_totals all, t;
	stinfo_totals(ck, NULL, &all);
	stinfo_totals(ck, v->sel, &t);
	if (v->markdown) {
		struct md_counts a = {all.tensors, all.params, all.bytes, NULL};
		struct md_counts s = {t.tensors, t.params, t.bytes, NULL};
		md_head(path, &a, v->sel ? &s : NULL);
	} else {
		char *p = cli_printable(path, strlen(path));
		table_print_kv("path:", p);
		free(p);
		print_files(ck, v->verbose);
		table_print_totals(all.tensors, all.params, all.bytes);
		if (v->sel)
			table_print_selected(v->n_sel, all.tensors, t.params, t.bytes);
		stinfo_quant(ck, 0);
		stinfo_inventory(ck, 0);
	}
	if (t.tensors == 0)
		return;
	putchar('\n');
	print_dtype_table(&t, v->markdown);
	putchar('\n');
	if (accs)
		print_stats_table(ck, v, accs);
	else
		print_tensor_table(ck, v);
}
