/*
 * stinfo.c - look inside a safetensors checkpoint: a human summary, a JSON
 * document, a full validity check (--check), per-tensor statistics
 * (--stats), or offline integrity of downloads (--verify, --hash: libst's
 * st_verify_path, printed by common/verify.c).
 *
 * This file is the tool only: parsing, validation, shard indexes and dtype
 * conversion are libst's (st_checkpoint_open, st_check_path, st_convert);
 * the compaction of repeated layers is common/layers.c; the statistics
 * are st/stats.h, streamed through bounded buffers by st_stream_run
 * (st/stream.h).
 * What lives here is options and presentation (tables, JSON). The summary
 * and --json read only the headers, so a 300 GB checkpoint answers in
 * milliseconds.
 */
#include "fe/cli.h"
#include "common/ckpt.h"
#include "common/gguf_info.h"
#include "common/inventory.h"
#include "common/layers.h"
#include "common/quant_info.h"
#include "fe/table.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <st.h>

#include "common/verify.h"

enum mode { MODE_SUMMARY, MODE_JSON, MODE_CHECK };

struct options {
	enum mode mode;
	int all;     /* list every tensor instead of compacting layers */
	int stats;   /* read the data and compute statistics */
	int threads; /* statistics worker threads */
	const char **keys; /* --key: a PyTorch checkpoint's sub-dictionary */
	size_t n_keys;
};

static void usage(void)
{
	printf(
"Usage: stinfo [OPTION]... PATH...\n"
"Describe safetensors checkpoints: files, metadata, tensors, parameters.\n"
"\n"
"PATH is a .safetensors file, a shard index (*.safetensors.index.json), a\n"
"snapshot directory, a PyTorch checkpoint (pytorch_model.bin: zip, legacy\n"
"or tar; its pickle is read, never executed) or a GGUF file (*.gguf).\n"
"Without options, print a summary read from the headers only, with\n"
"repeated layers shown once (h.{0..11}.attn.c_attn.weight), and, with a\n"
"GPT-2 or Llama-family config.json beside it, the parameters it implies:\n"
"counted, missing, misshapen and extra; for a GGUF file its metadata too,\n"
"long arrays shown as their type and length (--all: whole). Quantized\n"
"weights (FP8 with block, per-channel or per-tensor scales; MXFP4) are\n"
"named by layout, with the parameters counted without the scales.\n"
"\n"
"Options:\n"
"  -a, --all          list every tensor instead of compacting repeated layers\n"
"  -j, --json         print one JSON document (an array of them for\n"
"                     several PATHs)\n"
"  -c, --check        validate every rule of the format and of the shard\n"
"                     index, every parameter config.json implies (missing\n"
"                     or misshapen) and every quantized weight's scale\n"
"                     (missing, unused, of the wrong dtype or shape);\n"
"                     print each problem; exit 1 if any\n"
"  -s, --stats        read the data too: min, max, mean, std and NaN, Inf and\n"
"                     zero counts per tensor (8- and 4-bit floats decoded)\n"
"      --verify       hash every file against the name it is stored under\n"
"                     (Hugging Face cache) or its SHA256SUMS entry, then\n"
"                     --check each weight file; PATH may also be a cache\n"
"                     root, a models--ORG--NAME folder or a plain folder;\n"
"                     exit 1 if any problem\n"
"      --hash         print each file's SHA-256 as sha256sum does (with\n"
"                     --json, also each tensor's)\n"
"      --key K        read a PyTorch checkpoint's sub-dictionary K\n"
"                     (repeatable for deeper levels, or K1.K2); without it a\n"
"                     checkpoint whose tensors are all under state_dict,\n"
"                     model, module or model_state_dict is read from there\n"
"  -t, --threads N    worker threads for --stats, --verify and --hash\n"
"                     (default: CPUs online)\n"
"  -h, --help         print this help and exit\n"
"  -V, --version      print the version and exit\n"
"\n"
"Exit status: 0 success (a valid file for --check), 1 an invalid file for\n"
"--check or a problem for --verify and --hash, 2 usage error, unreadable or\n"
"invalid input, I/O error.\n");
}

/* ---- totals ------------------------------------------------------------ */

struct totals {
	uint64_t tensors, params, bytes;
	struct { uint64_t tensors, params, bytes; } by[ST_DTYPE_COUNT];
};

/*
 * Sums use checked arithmetic: each file's tensors fit in its size, but a
 * sharded checkpoint's parameter count could in principle exceed 2^64.
 * Saturating keeps the output well defined in that absurd case.
 */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;
	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

static void compute_totals(const st_checkpoint *ck, struct totals *t)
{
	memset(t, 0, sizeof *t);
	size_t n = st_checkpoint_n_tensors(ck);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *x = st_checkpoint_tensor(ck, i, NULL);
		t->tensors++;
		t->params = sat_add(t->params, x->n_elements);
		t->bytes = sat_add(t->bytes, x->n_bytes);
		t->by[x->dtype].tensors++;
		t->by[x->dtype].params = sat_add(t->by[x->dtype].params, x->n_elements);
		t->by[x->dtype].bytes = sat_add(t->by[x->dtype].bytes, x->n_bytes);
	}
}

/* ---- statistics -------------------------------------------------------- */

/* Default elements per chunk: 8 MiB of F64 read at a time. */
#define STATS_CHUNK_ELEMS ((size_t)1 << 20)
/* Elements widened to double at a time, so the buffer stays in L2. */
#define STATS_SUB 16384

struct stats_run {
	const st_checkpoint *ck;
	const st_stream_item *items;
	st_stats *accs; /* per tensor */
	cli_progress progress;
};

/* A chunk (one piece: the stream does not pack) into its own result. */
static int stats_work(void *ctx, const st_stream_chunk *c, st_error *err)
{
	struct stats_run *r = ctx;
	const st_stream_piece *p = &c->pieces[0];
	const st_tensor *t = st_checkpoint_tensor(r->ck, r->items[p->item].tensor[0],
	                                          NULL);
	unsigned gb, ge; /* a group's bytes and elements (F4: 1 and 2) */
	st_dtype_group(t->dtype, &gb, &ge);
	double *wide = c->scratch;
	st_stats *a = c->out;
	memset(a, 0, sizeof *a);
	const uint64_t ne = p->n_groups * ge; /* STATS_SUB is a multiple of ge */
	for (uint64_t e = 0; e < ne; e += STATS_SUB) {
		size_t n = (size_t)(ne - e < STATS_SUB ? ne - e : STATS_SUB);
		st_dtype_widen(t->dtype, p->data[0] + e / ge * gb, wide, n);
		st_stats_add(a, wide, n);
	}
	return 0;
}

/* Chunks arrive in order: merges in element order, whatever the threads. */
static int stats_sink(void *ctx, const st_stream_chunk *c, st_error *err)
{
	struct stats_run *r = ctx;
	st_stats_merge(&r->accs[r->items[c->pieces[0].item].tensor[0]], c->out);
	return 0;
}

static void stats_progress(void *ctx, const st_stream_chunk *c, uint64_t bytes)
{
	(void)c;
	cli_progress_add(&((struct stats_run *)ctx)->progress, bytes);
}

/*
 * Compute statistics for every supported tensor of ck into accs (one per
 * tensor, zeroed). STINFO_CHUNK_ELEMENTS (at most the default) makes
 * chunks smaller, for the tests of chunk merges. Returns 0, or -1 after
 * printing an error.
 */
static int compute_stats(st_checkpoint *ck, int threads, st_stats *accs)
{
	size_t n = st_checkpoint_n_tensors(ck), m = 0;
	size_t chunk = STATS_CHUNK_ELEMS;
	const char *env = getenv("STINFO_CHUNK_ELEMENTS");
	uint64_t v;
	if (env && cli_parse_u64(env, &v) == 0 && v > 0 && v <= chunk)
		chunk = (size_t)v;

	struct stats_run r = {ck, NULL, accs, {0}};
	st_stream_item *items = cli_xcalloc(n, sizeof *items);
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		unsigned gb, ge;
		if (!st_dtype_has_values(t->dtype))
			continue;
		st_dtype_group(t->dtype, &gb, &ge);
		items[m].tensor[0] = i;
		items[m].n_groups = t->n_elements / ge; /* the format: whole bytes */
		items[m].group_bytes[0] = gb;
		items[m].cost = ge; /* chunk_size counts elements */
		total += t->n_bytes;
		m++;
	}
	r.items = items;
	unsigned nt = (unsigned)(threads > 0 ? threads : 1);
	/* The sink only merges, so a finished chunk seldom waits for its
	 * turn: one buffer per thread is enough. */
	st_stream_config cfg = {
		.src = {ck, NULL}, .items = items, .n_items = m,
		.chunk_size = chunk, .threads = nt, .buffers = nt,
		.out_size = sizeof(st_stats), .scratch_size = STATS_SUB * sizeof(double),
		.work = stats_work, .sink = stats_sink, .progress = stats_progress,
		.ctx = &r,
	};
	st_error err;
	memset(&err, 0, sizeof err);
	cli_progress_start(&r.progress, "stats", total);
	int rc = st_stream_run(&cfg, &err);
	cli_progress_done(&r.progress);
	free(items);
	if (rc != ST_OK) {
		cli_error(&err);
		return -1;
	}
	return 0;
}

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

static void print_files(const st_checkpoint *ck)
{
	char buf[96];
	const char *index = st_checkpoint_index_path(ck);
	if (index) {
		char *p = cli_printable(index, strlen(index));
		table_print_kv("index:", p);
		free(p);
	}
	size_t nf = st_checkpoint_n_files(ck);
	for (size_t i = 0; i < nf; i++) {
		const st_file *f = st_checkpoint_file(ck, i);
		char *p = cli_printable(st_file_path(f), strlen(st_file_path(f)));
		table_print_kv("file:", p);
		free(p);
		if (st_file_format(f) == ST_FORMAT_TORCH) {
			/* Offsets below count from the start of the file. */
			const char *fn = st_file_format_name(f);
			table_print_kv("  format:", !strcmp(fn, "pytorch-legacy")
			         ? "PyTorch legacy (pre-1.6) checkpoint (its pickle was "
			           "read, not executed)"
			         : !strcmp(fn, "pytorch-tar")
			         ? "PyTorch tar (pre-0.4) checkpoint (its pickles were "
			           "read, not executed)"
			         : "PyTorch zip checkpoint (its pickle was read, not "
			           "executed)");
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
}

static void print_dtype_table(const struct totals *t)
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
	table_print(&tab, stdout);
	table_free(&tab);
}

static void print_tensor_table(const st_checkpoint *ck, int all)
{
	size_t nrows, n = st_checkpoint_n_tensors(ck);
	const st_tensor **ts = cli_xmalloc(n * sizeof *ts);
	for (size_t i = 0; i < n; i++)
		ts[i] = st_checkpoint_tensor(ck, i, NULL);
	layers_row *rows = layers_compact(ts, n, all, &nrows);
	int sharded = st_checkpoint_n_files(ck) > 1;
	struct table tab;
	char shape[1024], params[64], where[64];
	table_init(&tab, 5, "lllrl");
	table_add(&tab, (const char *const[]){"name", "dtype", "shape", "parameters",
	                                      sharded ? "file" : "offset"});
	for (size_t r = 0; r < nrows; r++) {
		const layers_row *row = &rows[r];
		size_t file;
		const st_tensor *t = st_checkpoint_tensor(ck, row->members[0], &file);
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
			for (size_t m = 1; m < row->nmembers; m++) {
				size_t f;
				st_checkpoint_tensor(ck, row->members[m], &f);
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
	table_print(&tab, stdout);
	table_free(&tab);
	layers_free(rows, nrows);
	free(ts);
}

static void print_stats_table(const st_checkpoint *ck, const st_stats *accs)
{
	size_t n = st_checkpoint_n_tensors(ck);
	struct table tab;
	char c[7][48];
	table_init(&tab, 9, "llrrrrrrr");
	table_add(&tab, (const char *const[]){"name", "dtype", "min", "max", "mean",
	                                      "std", "nan", "inf", "zeros"});
	for (size_t i = 0; i < n; i++) {
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
	table_print(&tab, stdout);
	table_free(&tab);
	/* Say once which dtypes had no statistics, rather than leave a bare "-". */
	int skipped[ST_DTYPE_COUNT] = {0};
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_checkpoint_tensor(ck, i, NULL);
		if (!st_dtype_has_values(t->dtype))
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

/*
 * The config-aware inventory, when a known config.json is beside ck:
 * summary lines, or the JSON member ({"error": ...} when config.json
 * cannot be read).
 */
static void print_inventory(const st_checkpoint *ck, int json)
{
	st_arch_config cfg;
	st_arch_report r;
	char err[1200];
	int rc = inventory_load(ck, &cfg, &r, err, sizeof err);
	if (rc < 0 && json) {
		printf(",\n  \"inventory\": {\"error\": ");
		cli_json_string(stdout, err, strlen(err));
		putchar('}');
	} else if (rc < 0) {
		char *m = cli_printable(err, strlen(err));
		printf("%-13sno inventory: %s\n", "config:", m);
		free(m);
	} else if (rc == 1) {
		if (json) {
			printf(",\n  \"inventory\": ");
			inventory_json(stdout, &cfg, &r);
		} else {
			inventory_print(stdout, &cfg, &r);
		}
		st_arch_report_free(&r);
	}
}

/*
 * Quantized layouts (common/quant_info.h): summary lines, or the JSON
 * member; nothing for a checkpoint without scaled weights.
 */
static void print_quant(const st_checkpoint *ck, int json)
{
	quant_info q;
	int rc = quant_info_load(&q, ck, NULL, NULL);
	if (rc < 0)
		cli_die(CLI_ERROR, "out of memory");
	if (rc == 0)
		return;
	if (json) {
		printf(",\n  \"quantization\": ");
		quant_info_json(stdout, &q);
	} else {
		quant_info_print(stdout, &q);
	}
	quant_info_free(&q);
}

static void print_summary(const char *path, const st_checkpoint *ck,
                          const struct options *o, const st_stats *accs)
{
	struct totals t;
	compute_totals(ck, &t);
	char *p = cli_printable(path, strlen(path));
	table_print_kv("path:", p);
	free(p);
	print_files(ck);
	table_print_totals(t.tensors, t.params, t.bytes);
	print_quant(ck, 0);
	print_inventory(ck, 0);
	if (t.tensors == 0)
		return;
	putchar('\n');
	print_dtype_table(&t);
	putchar('\n');
	if (accs)
		print_stats_table(ck, accs);
	else
		print_tensor_table(ck, o->all);
}

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
static void print_json(const st_checkpoint *ck, const st_stats *accs)
{
	struct totals t;
	compute_totals(ck, &t);
	size_t nf = st_checkpoint_n_files(ck);
	printf("{\n  \"files\": [\n");
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
	size_t n = st_checkpoint_n_tensors(ck);
	for (size_t i = 0; i < n; i++) {
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
				table_json_stats(&accs[i]);
			else
				printf(", \"stats\": null");
		}
		printf("}%s\n", i + 1 < n ? "," : "");
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
	print_quant(ck, 1);
	print_inventory(ck, 1);
	printf("\n}\n");
}

/* ---- --check ----------------------------------------------------------- */

struct check_ctx {
	int errors, warnings;
};

static void on_problem(void *ctx, int severity, const char *message)
{
	struct check_ctx *cc = ctx;
	/* Messages come from file contents: keep them on one line. */
	char *m = cli_printable(message, strlen(message));
	if (severity == ST_PROBLEM_WARNING) {
		cc->warnings++;
		cli_warn("warning: %s", m);
	} else {
		cc->errors++;
		cli_warn("%s", m);
	}
	free(m);
}

static void plural(char *buf, size_t size, int n, const char *what)
{
	snprintf(buf, size, "%d %s%s", n, what, n == 1 ? "" : "s");
}

/* Returns the exit code for this path. */
static int check_path(const char *path)
{
	struct check_ctx cc = {0, 0};
	st_error err;
	memset(&err, 0, sizeof err);
	int n = gguf_info_is_gguf(path)
	            ? st_gguf_check_file(path, on_problem, &cc, &err)
	            : st_check_path(path, on_problem, &cc, &err);
	if (n < 0) {
		err.code = n;
		cli_error_path(path, &err);
		return CLI_ERROR;
	}
	/* Trust the count libst returns even if a callback was lost. */
	if (n > cc.errors)
		cc.errors = n;
	/* What config.json implies: every missing or misshapen parameter. */
	inventory_check(path, on_problem, &cc);
	/* Every scaled weight with its scale, as stconvert --to pairs them. */
	quant_info_check(path, on_problem, &cc);
	char *p = cli_printable(path, strlen(path));
	char e[32], w[32];
	plural(e, sizeof e, cc.errors, "error");
	plural(w, sizeof w, cc.warnings, "warning");
	if (cc.errors == 0 && cc.warnings == 0)
		printf("%s: OK\n", p);
	else if (cc.errors == 0)
		printf("%s: OK (%s)\n", p, w);
	else if (cc.warnings == 0)
		printf("%s: INVALID (%s)\n", p, e);
	else
		printf("%s: INVALID (%s, %s)\n", p, e, w);
	free(p);
	return cc.errors ? CLI_NO : CLI_OK;
}

/* ---- main -------------------------------------------------------------- */

/*
 * Summary or JSON for one path; returns the exit code for it. *printed
 * says whether an earlier path printed a summary, which a blank line then
 * separates from this one.
 */
static int describe_path(const char *path, const struct options *o,
                         int *printed)
{
	if (gguf_info_is_gguf(path))
		return gguf_info_describe(path, o->all, o->mode == MODE_JSON,
		                          o->stats, printed);
	st_checkpoint *ck;
	if (ckpt_open_key(&ck, path, o->keys, o->n_keys) != CLI_OK)
		return CLI_ERROR;
	st_stats *accs = NULL;
	if (o->stats) {
		accs = cli_xcalloc(st_checkpoint_n_tensors(ck), sizeof *accs);
		if (compute_stats(ck, o->threads, accs) != 0) {
			free(accs);
			st_checkpoint_close(ck);
			return CLI_ERROR;
		}
	}
	if (o->mode == MODE_SUMMARY && *printed)
		putchar('\n');
	if (o->mode == MODE_JSON && *printed)
		fputs(",\n", stdout); /* several PATHs: one array */
	*printed = 1;
	if (o->mode == MODE_JSON)
		print_json(ck, accs);
	else
		print_summary(path, ck, o, accs);
	free(accs);
	st_checkpoint_close(ck);
	return CLI_OK;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"all", no_argument, NULL, 'a'},
		{"json", no_argument, NULL, 'j'},
		{"check", no_argument, NULL, 'c'},
		{"stats", no_argument, NULL, 's'},
		{"threads", required_argument, NULL, 't'},
		{"key", required_argument, NULL, 'K'},
		{"verify", no_argument, NULL, 'Y'},
		{"hash", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	static const char *keys[64];
	struct options o = {MODE_SUMMARY, 0, 0, 0, keys, 0};
	int json = 0, check = 0, verify = 0, hash = 0, ch;

	cli_init("stinfo");
	while ((ch = cli_getopt(argc, argv, "ajcst:hV", longopts)) != -1) {
		switch (ch) {
		case 'a': o.all = 1; break;
		case 'j': json = 1; break;
		case 'c': check = 1; break;
		case 's': o.stats = 1; break;
		case 'K':
			if (o.n_keys == sizeof keys / sizeof keys[0])
				cli_usage_error("--key: at most 64 levels");
			keys[o.n_keys++] = optarg;
			break;
		case 'Y': verify = 1; break;
		case 'H': hash = 1; break;
		case 't': o.threads = cli_opt_threads(optarg, 256); break;
		case 'h':
			usage();
			return cli_exit(CLI_OK);
		case 'V':
			cli_version();
		}
	}
	if (optind >= argc)
		cli_usage_error("missing PATH");
	if (check && (json || o.stats || o.all))
		cli_usage_error("--check cannot be combined with --json, --stats or --all");
	if ((verify || hash) && (check || o.stats || o.all || (verify && hash)))
		cli_usage_error("--verify and --hash go alone (or with --json, --threads)");
	if (verify || hash) {
		int threads = o.threads ? o.threads : cli_default_threads(64);
		int n = argc - optind;
		return cli_exit(verify ? verify_paths(argv + optind, n, json, threads)
		                       : verify_hash_paths(argv + optind, n, json, threads));
	}
	o.mode = check ? MODE_CHECK : json ? MODE_JSON : MODE_SUMMARY;
	if (o.threads == 0)
		o.threads = cli_default_threads(64);

	int status = CLI_OK, printed = 0;
	/* One JSON document whatever the count: several PATHs make an array. */
	int array = o.mode == MODE_JSON && argc - optind > 1;
	if (array)
		fputs("[\n", stdout);
	for (int i = optind; i < argc; i++) {
		int rc = o.mode == MODE_CHECK ? check_path(argv[i])
		                              : describe_path(argv[i], &o, &printed);
		/* Several paths: an unreadable one (2) outweighs an invalid one (1). */
		if (rc > status)
			status = rc;
		fflush(stdout);
	}
	if (array)
		fputs("]\n", stdout);
	return cli_exit(status);
}
