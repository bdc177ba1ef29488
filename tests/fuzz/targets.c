/*
 * targets.c - the fuzz targets of libst's untrusted-input parsers, shared by
 * the libFuzzer harness (fuzz.c, built by build.sh with clang) and by the
 * corpus replay unit test (tests/check_fuzz_corpus.c, built by CMake), which
 * both #include this file.
 *
 * Each target takes one input and calls abort() when a property fails, so
 * that libFuzzer records a crash and a replay test dies on a signal:
 *
 *   fuzz_header  the safetensors reader: st_file_open_memory and
 *                st_check_memory must agree, st_sniff must call what
 *                opens a safetensors file, an accepted table must lie
 *                inside the file and be readable through st_file_data and
 *                st_file_read, and the writer must reproduce it.
 *   fuzz_torch   the PyTorch zip and pickle reader (ST_OPEN_TORCH); tensors
 *                of an accepted file must lie inside it.
 *   fuzz_legacy  the legacy (pre-1.6) pickle stream, after a fixed head.
 *   fuzz_tar     the tar format, members built by the harness.
 *   fuzz_index   the shard-index JSON, parsed directly in both modes and
 *                opened as a checkpoint beside two fixed shards.
 *   fuzz_writer  random declarations: whatever the writer accepts, its
 *                header must be canonical and read back as the same table.
 *   fuzz_config_dtype  config.json text through st_config_set_dtype: OK
 *                or ST_EFORMAT only; an edited text is an object again,
 *                and editing it a second time changes nothing.
 *
 * It is not a test of messages or of exact results: the unit tests do that.
 */
#include "internal.h"
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

struct fz_counts {
	int errors, warnings;
};

static void fz_count(void *ctx, int severity, const char *msg)
{
	struct fz_counts *c = ctx;
	CHECK(msg != NULL && strlen(msg) > 0);
	if (severity == ST_PROBLEM_ERROR)
		c->errors++;
	else {
		CHECK(severity == ST_PROBLEM_WARNING);
		c->warnings++;
	}
}

/* An accepted file's table: in bounds, in data order, readable. */
static void fz_check_table(st_file *f, const unsigned char *buf, size_t len)
{
	uint64_t base = st_file_data_offset(f);
	uint64_t end = st_file_size(f);
	CHECK(end == len);
	CHECK(base <= end);
	size_t n = st_file_n_tensors(f);
	unsigned char tmp[64];
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_file_tensor(f, i);
		CHECK(t != NULL);
		CHECK((unsigned)t->dtype < ST_DTYPE_COUNT);
		CHECK(t->ndim <= ST_MAX_DIMS);
		CHECK(t->end >= t->begin && t->end <= end - base);
		/* A PyTorch view's [begin, end) is the part of the file it
		 * reads: its contiguous n_bytes are gathered (or inflated). */
		int torch = st_file_format(f) == ST_FORMAT_TORCH;
		CHECK(torch || t->n_bytes == t->end - t->begin);
		CHECK(t->name != NULL && t->name[t->name_len] == 0);
		long k = st_file_find(f, t->name, t->name_len);
		CHECK(k >= 0);
		const st_tensor *u = st_file_tensor(f, (size_t)k);
		CHECK(u->name_len == t->name_len &&
		      !memcmp(u->name, t->name, t->name_len));
		uint64_t count = 1;
		for (unsigned d = 0; d < t->ndim; d++)
			CHECK(!st__mul_u64(count, t->shape[d], &count));
		CHECK(count == t->n_elements);
		const void *p = NULL;
		st_error err;
		int rc = st_file_data(f, i, &p, &err);
		if (torch && rc != ST_OK) {
			/* A PyTorch storage is checked as it is read whole (its
			 * zip CRC-32, its inflation): a damaged one fails here,
			 * with a message; a read of part of it may not see it. */
			CHECK(rc == ST_EFORMAT && err.message[0] != 0);
			if (t->n_bytes) {
				rc = st_file_read(f, i, 0, tmp, 1, &err);
				CHECK(rc == ST_OK || rc == ST_EFORMAT);
			}
			continue;
		}
		CHECK(rc == ST_OK && p != NULL);
		if (t->n_bytes) {
			const unsigned char *q = p;
			CHECK((torch && (q + t->n_bytes <= buf || q >= buf + len)) ||
			      (q >= buf && q + t->n_bytes <= buf + len));
			/* Touch the first and last bytes (ASan watches buf). */
			volatile unsigned char sink = q[0];
			sink = q[t->n_bytes - 1];
			(void)sink;
		}
		/* st_file_read: the head, the tail, and one byte past the end. */
		size_t m = t->n_bytes < sizeof tmp ? (size_t)t->n_bytes : sizeof tmp;
		CHECK(st_file_read(f, i, 0, tmp, m, &err) == ST_OK);
		if (m && p)
			CHECK(!memcmp(tmp, p, m));
		CHECK(st_file_read(f, i, t->n_bytes - m, tmp, m, &err) == ST_OK);
		CHECK(st_file_read(f, i, t->n_bytes, tmp, 1, &err) == ST_EINVAL);
		CHECK(st_file_read(f, i, UINT64_MAX, tmp, 1, &err) == ST_EINVAL);
	}
	/* An index past the table is the caller's misuse (it aborts): not
	 * something file contents can reach, so not probed here. */
	for (size_t i = 0; i < st_file_n_meta(f); i++) {
		const st_meta *m = st_file_meta(f, i);
		CHECK(m && m->key[m->key_len] == 0 && m->value[m->value_len] == 0);
	}
	for (size_t i = 0; i < st_file_n_warnings(f); i++)
		CHECK(st_file_warning(f, i) != NULL);
}

/*
 * A table the reader accepted goes through the writer: the writer must
 * accept every tensor, and its header must read back as the same tensors
 * (the writer's order may differ from the file's).
 */
static void fz_rewrite(st_file *f);

static int fz_find_meta(const st_file *f, const char *key, size_t len)
{
	for (size_t i = 0; i < st_file_n_meta(f); i++) {
		const st_meta *m = st_file_meta(f, i);
		if (m->key_len == len && !memcmp(m->key, key, len))
			return (int)i;
	}
	return -1;
}

/* Open and check a whole file; returns the number of tensors accepted. */
static void fz_file(const unsigned char *buf, size_t len, int deep)
{
	st_file *f = NULL;
	st_error err;
	memset(&err, 0, sizeof err);
	int rc = st_file_open_memory(&f, buf, len, "fuzz", 0, &err);
	struct fz_counts c = {0, 0};
	int n_err = st_check_memory(buf, len, "fuzz", fz_count, &c);
	CHECK(n_err >= 0 || n_err == ST_ENOMEM);
	if (n_err >= 0)
		CHECK(n_err == c.errors);
	/* st_sniff never fails, and knows every file that opens. */
	int kind = st_sniff(buf, len, len);
	CHECK(kind >= 0 && kind < ST_KIND_COUNT && st_kind_name(kind)[0]);
	if (rc == ST_OK) {
		CHECK(kind == ST_KIND_SAFETENSORS);
		CHECK(f != NULL);
		/* What opens has no error in a full check. */
		CHECK(n_err == 0);
		fz_check_table(f, buf, len);
		if (deep)
			fz_rewrite(f);
		st_file_close(f);
	} else {
		CHECK(f == NULL);
		CHECK(rc == ST_EFORMAT || rc == ST_ENOMEM);
		CHECK(err.code == rc && err.message[0] != 0);
		CHECK(memchr(err.message, '\n', strlen(err.message)) == NULL);
		/* What fails to open has an error in a full check. */
		if (rc == ST_EFORMAT)
			CHECK(n_err > 0);
	}
}

/*
 * Write the table of a reader-accepted file with st_writer and read the
 * header back: same tensors (by name), and the writer's bytes are a fixed
 * point (writing what it read gives the same header).
 */
static void fz_rewrite(st_file *f)
{
	st_writer *w = NULL;
	st_error err;
	CHECK(st_writer_new(&w, &err) == ST_OK);
	for (size_t i = 0; i < st_file_n_meta(f); i++) {
		const st_meta *m = st_file_meta(f, i);
		/* set_meta takes C strings: skip entries holding a NUL. */
		if (strlen(m->key) != m->key_len || strlen(m->value) != m->value_len)
			continue;
		CHECK(st_writer_set_meta(w, m->key, m->value, &err) == ST_OK);
	}
	size_t n = st_file_n_tensors(f);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_file_tensor(f, i);
		int rc = st_writer_add(w, t->name, t->name_len, t->dtype, t->ndim,
		                       t->shape, &err);
		if (rc != ST_OK)
			fprintf(stderr, "writer refused a tensor the reader "
			        "accepted: %s\n", err.message);
		CHECK(rc == ST_OK);
	}
	const void *hb;
	size_t hl;
	int rc = st_writer_header(w, &hb, &hl, &err);
	/* A re-escaped header can outgrow the limit; anything else is a bug. */
	if (rc != ST_OK) {
		CHECK(rc == ST_EINVAL);
		st_writer_free(w);
		return;
	}
	struct st__header h;
	struct st__report r = {.path = "rewrite", .err = &err};
	uint64_t data = 0;
	for (size_t i = 0; i < n; i++)
		data += st_file_tensor(f, i)->n_bytes;
	CHECK(hl >= 8 && (hl - 8) % 8 == 0);
	rc = st__header_parse(&h, (const char *)hb + 8, hl - 8, data, &r);
	if (rc != ST_OK)
		fprintf(stderr, "reader refused the writer's header: %s\n",
		        err.message);
	CHECK(rc == ST_OK);
	CHECK(h.n_tensors == n);
	for (size_t i = 0; i < n; i++) {
		const st_tensor *t = st_file_tensor(f, i);
		long k = st__header_find(&h, t->name, t->name_len);
		CHECK(k >= 0);
		const st_tensor *u = &h.tensors[k];
		CHECK(u->dtype == t->dtype && u->ndim == t->ndim &&
		      u->n_bytes == t->n_bytes);
		for (unsigned d = 0; d < t->ndim; d++)
			CHECK(u->shape[d] == t->shape[d]);
	}
	for (size_t i = 0; i < h.n_meta; i++) {
		int k = fz_find_meta(f, h.meta[i].key, h.meta[i].key_len);
		if (k < 0) {
			/* Only the default format entry may be new. */
			CHECK(h.meta[i].key_len == 6 &&
			      !memcmp(h.meta[i].key, "format", 6));
			continue;
		}
		const st_meta *m = st_file_meta(f, (size_t)k);
		if (strlen(m->value) != m->value_len)
			continue; /* skipped above; "format" got the default */
		CHECK(m->value_len == h.meta[i].value_len &&
		      !memcmp(m->value, h.meta[i].value, m->value_len));
	}
	st__header_free(&h);
	st_writer_free(w);
}

/* Input: mode byte, then a whole file (mode bit 0 clear) or header JSON. */
static void fuzz_header(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	if (!(mode & 1)) {
		/* The bytes are a whole file. */
		fz_file(data, size, mode & 2);
		return;
	}
	/*
	 * The bytes are the header JSON: learn from a full check where the
	 * data must end, then build the file with exactly that much data (so
	 * that the fuzzer reaches accepted files) and read it in every mode.
	 */
	if (size > 100000000)
		return;
	struct fz_counts c = {0, 0};
	struct st__report r = {.path = "json", .fn = fz_count, .ctx = &c};
	struct st__header h;
	uint64_t need = 0;
	if (st__header_parse(&h, (const char *)data, size, 0, &r) == ST_OK) {
		for (size_t i = 0; i < h.n_tensors; i++)
			if (h.tensors[i].end > need)
				need = h.tensors[i].end;
		st__header_free(&h);
	}
	if (mode & 4)
		need += (uint64_t)(mode >> 3); /* sometimes trailing bytes */
	if (need > (1u << 20))
		return;
	size_t len = 8 + size + (size_t)need;
	unsigned char *buf = malloc(len);
	CHECK(buf != NULL);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)size >> (8 * i));
	memcpy(buf + 8, data, size);
	for (size_t i = 8 + size; i < len; i++)
		buf[i] = (unsigned char)(i * 131);
	fz_file(buf, len, 1);
	free(buf);
}

/* ---- torch ----------------------------------------------------------------- */

static void fz_put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void fz_put32(unsigned char *p, uint32_t v)
{
	fz_put16(p, v & 0xffff);
	fz_put16(p + 2, v >> 16);
}

/* A stored zip of the given entries; *len gets its size. */
static unsigned char *fz_zip(const char *const *names,
                             const unsigned char *const *bodies,
                             const size_t *sizes, size_t n, size_t *len)
{
	size_t total = 22;
	for (size_t i = 0; i < n; i++)
		total += 30 + 46 + 2 * strlen(names[i]) + sizes[i];
	unsigned char *z = calloc(1, total);
	CHECK(z != NULL);
	size_t at = 0;
	uint32_t *lho = calloc(n ? n : 1, sizeof *lho);
	CHECK(lho != NULL);
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(names[i]);
		lho[i] = (uint32_t)at;
		fz_put32(z + at, 0x04034b50);
		fz_put32(z + at + 14, (uint32_t)crc32(0, bodies[i], (uInt)sizes[i]));
		fz_put32(z + at + 18, (uint32_t)sizes[i]);
		fz_put32(z + at + 22, (uint32_t)sizes[i]);
		fz_put16(z + at + 26, (unsigned)nl);
		memcpy(z + at + 30, names[i], nl);
		if (sizes[i])
			memcpy(z + at + 30 + nl, bodies[i], sizes[i]);
		at += 30 + nl + sizes[i];
	}
	size_t cd = at;
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(names[i]);
		fz_put32(z + at, 0x02014b50);
		fz_put32(z + at + 16, (uint32_t)crc32(0, bodies[i], (uInt)sizes[i]));
		fz_put32(z + at + 20, (uint32_t)sizes[i]);
		fz_put32(z + at + 24, (uint32_t)sizes[i]);
		fz_put16(z + at + 28, (unsigned)nl);
		fz_put32(z + at + 42, lho[i]);
		memcpy(z + at + 46, names[i], nl);
		at += 46 + nl;
	}
	fz_put32(z + at, 0x06054b50);
	fz_put16(z + at + 8, (unsigned)n);
	fz_put16(z + at + 10, (unsigned)n);
	fz_put32(z + at + 12, (uint32_t)(at - cd));
	fz_put32(z + at + 16, (uint32_t)cd);
	at += 22;
	free(lho);
	*len = at;
	return z;
}

static void fz_torch_file(const unsigned char *buf, size_t len)
{
	st_file *f = NULL;
	st_error err;
	memset(&err, 0, sizeof err);
	int rc = st_file_open_memory(&f, buf, len, "fuzz.bin", ST_OPEN_TORCH,
	                             &err);
	if (rc != ST_OK) {
		CHECK(f == NULL);
		CHECK(rc == ST_EFORMAT || rc == ST_ENOMEM);
		CHECK(err.code == rc && err.message[0] != 0);
		return;
	}
	if (st_file_format(f) == ST_FORMAT_TORCH) {
		CHECK(st_file_data_offset(f) == 0 && st_file_header_size(f) == 0);
		/* The dictionary's names: at most 100 bytes each (read whole,
		 * under ASan), at most the first 8 skipped values. */
		const st_torch_info *ti = st_file_torch_info(f);
		CHECK(ti != NULL && ti->keys != NULL && ti->skipped != NULL);
		CHECK(ti->n_skipped_list <= 8 && ti->n_skipped_list <= ti->n_skipped);
		CHECK(ti->n_skipped_list == (ti->n_skipped < 8 ? ti->n_skipped : 8));
		volatile unsigned char sink = 0;
		for (size_t i = 0; i < ti->n_key_list + ti->n_skipped_list; i++) {
			const st_torch_name *nm = i < ti->n_key_list
			                          ? &ti->key_list[i]
			                          : &ti->skipped_list[i - ti->n_key_list];
			CHECK(nm->len <= 100);
			for (size_t k = 0; k < nm->len; k++)
				sink ^= (unsigned char)nm->s[k];
		}
		(void)sink;
		/* Tensors may share storage: check bounds and order only. */
		uint64_t prev = 0;
		for (size_t i = 0; i < st_file_n_tensors(f); i++) {
			const st_tensor *t = st_file_tensor(f, i);
			CHECK(t->begin >= prev);
			prev = t->begin;
		}
	}
	fz_check_table(f, buf, len);
	st_file_close(f);
}

/*
 * Input: mode byte, then a whole file (mode bit 0 clear), or a pickle that
 * is stored as archive/data.pkl in a zip beside two storages.
 */
static void fuzz_torch(const unsigned char *data, size_t size)
{
	int mode = fz_mode(&data, &size);
	if (mode < 0)
		return;
	if (!(mode & 1)) {
		fz_torch_file(data, size);
		return;
	}
	static unsigned char s0[64], s1[256];
	for (size_t i = 0; i < sizeof s1; i++)
		s1[i] = (unsigned char)i;
	const char *names[] = {"archive/data.pkl", "archive/byteorder",
	                       "archive/data/0", "archive/data/1",
	                       "archive/version"};
	const unsigned char *bodies[] = {data, (const unsigned char *)"little",
	                                 s0, s1, (const unsigned char *)"3\n"};
	size_t sizes[] = {size, 6, sizeof s0, sizeof s1, 2};
	size_t len;
	unsigned char *z = fz_zip(names, bodies, sizes, 5, &len);
	fz_torch_file(z, len);
	free(z);
}

/* ---- legacy and tar checkpoints ------------------------------------------ */

/*
 * Input: the part of a legacy (pre-1.6) checkpoint after its first three
 * pickles (the object, the storage keys, the storages' counts and bytes);
 * the harness puts the magic number, protocol 1001 and an empty system
 * information dict in front.
 */
static void fuzz_legacy(const unsigned char *data, size_t size)
{
	static const unsigned char head[] = {
		0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20,
		0x6a, 0xa8, 0x50, 0x19, '.',                      /* magic */
		0x80, 0x02, 'M', 0xe9, 0x03, '.',                 /* 1001 */
		0x80, 0x02, '}', '.'};                            /* {} */
	unsigned char *f = malloc(sizeof head + size);
	CHECK(f != NULL);
	memcpy(f, head, sizeof head);
	if (size)
		memcpy(f + sizeof head, data, size);
	fz_torch_file(f, sizeof head + size);
	free(f);
}

/* A ustar header for a regular file member. */
static void fz_tar_header(unsigned char *h, const char *name, size_t size)
{
	memset(h, 0, 512);
	memcpy(h, name, strlen(name));
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	snprintf((char *)h + 124, 12, "%011zo", size);
	memcpy(h + 136, "00000000000", 11);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/*
 * Input: two 16-bit little-endian lengths, then the bodies of the members
 * "pickle" and "tensors" of those lengths (cut to what there is) and the
 * rest as "storages"; the harness writes them as a tar.
 */
static void fuzz_tar(const unsigned char *data, size_t size)
{
	if (size < 4)
		return;
	size_t lp = (size_t)(data[0] | data[1] << 8);
	size_t lt = (size_t)(data[2] | data[3] << 8);
	data += 4;
	size -= 4;
	if (lp > size)
		lp = size;
	if (lt > size - lp)
		lt = size - lp;
	const char *names[3] = {"pickle", "tensors", "storages"};
	const unsigned char *bodies[3] = {data, data + lp, data + lp + lt};
	size_t sizes[3] = {lp, lt, size - lp - lt};
	size_t total = 1024;
	for (int i = 0; i < 3; i++)
		total += 512 + (sizes[i] + 511) / 512 * 512;
	unsigned char *t = calloc(1, total);
	CHECK(t != NULL);
	size_t at = 0;
	for (int i = 0; i < 3; i++) {
		fz_tar_header(t + at, names[i], sizes[i]);
		at += 512;
		if (sizes[i])
			memcpy(t + at, bodies[i], sizes[i]);
		at += (sizes[i] + 511) / 512 * 512;
	}
	fz_torch_file(t, total);
	free(t);
}

/* ---- shard index --------------------------------------------------------- */

static char fz_dir[64];

static void fz_index_cleanup(void)
{
	char p[128];
	if (!fz_dir[0])
		return;
	snprintf(p, sizeof p, "%s/model.safetensors.index.json", fz_dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/a.safetensors", fz_dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/b.safetensors", fz_dir);
	unlink(p);
	rmdir(fz_dir);
	fz_dir[0] = 0;
}

/* A temporary snapshot with shards a.safetensors (x, y) and b (z). */
static void fz_index_setup(void)
{
	if (fz_dir[0])
		return;
	snprintf(fz_dir, sizeof fz_dir, "/tmp/st-fuzz-index-XXXXXX");
	CHECK(mkdtemp(fz_dir) != NULL);
	atexit(fz_index_cleanup);
	static const char a[] =
		"{\"x\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
		"\"y\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]}}";
	static const char b[] =
		"{\"z\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}";
	const char *hdr[2] = {a, b};
	size_t data[2] = {3, 4};
	const char *file[2] = {"a.safetensors", "b.safetensors"};
	for (int k = 0; k < 2; k++) {
		size_t n = strlen(hdr[k]);
		unsigned char buf[256] = {0};
		buf[0] = (unsigned char)n;
		memcpy(buf + 8, hdr[k], n);
		char p[128];
		snprintf(p, sizeof p, "%s/%s", fz_dir, file[k]);
		fz_write(p, buf, 8 + n + data[k]);
	}
}

static void fuzz_index(const unsigned char *data, size_t size)
{
	const char *text = (const char *)data;
	struct st__index ix;
	st_error err;
	/* Open mode. */
	struct st__report r = {.path = "index", .err = &err};
	int rc = st__index_parse(&ix, text, size, &r);
	CHECK(rc == ST_OK || rc == ST_EINDEX || rc == ST_ENOMEM);
	if (rc == ST_OK) {
		CHECK(r.n_errors == 0);
		for (size_t i = 0; i < ix.n; i++) {
			CHECK(ix.e[i].name && ix.e[i].file);
			CHECK(strlen(ix.e[i].name) == ix.e[i].name_len);
			if (i)
				CHECK(strcmp(ix.e[i - 1].name, ix.e[i].name) < 0);
		}
		st__index_free(&ix);
	}
	/* Check mode. */
	struct fz_counts c = {0, 0};
	struct st__report rc2 = {.path = "index", .fn = fz_count, .ctx = &c,
	                         .err = &err};
	int rc_check = st__index_parse(&ix, text, size, &rc2);
	CHECK(rc_check == ST_OK || rc_check == ST_EINDEX || rc_check == ST_ENOMEM);
	if (rc_check == ST_OK)
		st__index_free(&ix);
	/* Open-mode success implies no weight_map problem in check mode. */
	/* Through the checkpoint API, beside two real shards. */
	if (size > 65536)
		return;
	fz_index_setup();
	char p[128];
	snprintf(p, sizeof p, "%s/model.safetensors.index.json", fz_dir);
	fz_write(p, data, size);
	st_checkpoint *cp = NULL;
	rc = st_checkpoint_open(&cp, fz_dir, 0, &err);
	if (rc == ST_OK) {
		size_t n = st_checkpoint_n_tensors(cp);
		CHECK(n <= 3);
		for (size_t i = 0; i < n; i++) {
			size_t file;
			const st_tensor *t = st_checkpoint_tensor(cp, i, &file);
			CHECK(t && file < st_checkpoint_n_files(cp));
			CHECK(st_checkpoint_find(cp, t->name, t->name_len) == (long)i);
		}
		st_checkpoint_close(cp);
	} else {
		CHECK(cp == NULL && err.message[0] != 0);
	}
	c.errors = c.warnings = 0;
	int n_err = st_check_path(fz_dir, fz_count, &c, &err);
	CHECK(n_err >= 0 || n_err == ST_ENOMEM);
	if (n_err >= 0)
		CHECK(n_err == c.errors);
	/* A checkpoint that opens may still miss total_size (I1, I4). */
	if (rc != ST_OK && rc != ST_ENOMEM && n_err >= 0)
		CHECK(n_err > 0);
}

/* ---- writer ---------------------------------------------------------------- */

struct fz_reader {
	const unsigned char *p;
	size_t n;
};

static unsigned fz_byte(struct fz_reader *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint64_t fz_dim(struct fz_reader *in)
{
	static const uint64_t special[] = {
		0, 1, 2, 3, 7, 8, 255, 256, 65535, 1u << 20, 0xffffffffu,
		(uint64_t)1 << 32, (uint64_t)1 << 60, (uint64_t)1 << 61,
		UINT64_MAX / 2, UINT64_MAX / 4 + 1, UINT64_MAX / 8, UINT64_MAX - 1,
		UINT64_MAX,
	};
	unsigned b = fz_byte(in);
	if (b < 0xc0)
		return b & 0x0f;
	if (b < 0xf0)
		return special[(b - 0xc0) % (sizeof special / sizeof special[0])];
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | fz_byte(in);
	return v;
}

/* Dtype by its canonical rank, descending: for the order check. */
static int fz_canon_before(const st_tensor *a, const st_tensor *b)
{
	if (a->dtype != b->dtype)
		return a->dtype > b->dtype;
	size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, m);
	if (c)
		return c < 0;
	return a->name_len < b->name_len;
}

/*
 * Input: a program of declarations. Each op byte: 0-3 a tensor (name
 * length, name bytes, dtype byte, ndim byte, dims), 4 a metadata entry (key
 * and value, each length-prefixed; a NUL ends them early), 5 a re-declared
 * earlier name.
 */
static void fuzz_writer(const unsigned char *data, size_t size)
{
	struct fz_reader in = {data, size};
	st_writer *w = NULL;
	st_error err;
	CHECK(st_writer_new(&w, &err) == ST_OK);
	size_t accepted = 0;
	uint64_t total = 0;
	char last[256];
	size_t last_len = 0;
	while (in.n) {
		unsigned op = fz_byte(&in) % 6;
		if (op == 4) {
			char kv[2][256];
			for (int j = 0; j < 2; j++) {
				size_t l = fz_byte(&in);
				size_t k = 0;
				while (k < l && in.n)
					kv[j][k++] = (char)fz_byte(&in);
				kv[j][k] = 0;
			}
			int rc = st_writer_set_meta(w, kv[0], kv[1], &err);
			CHECK(rc == ST_OK || rc == ST_EINVAL);
			if (rc == ST_OK) {
				CHECK(st__utf8_valid(kv[0], strlen(kv[0]), NULL));
				CHECK(st__utf8_valid(kv[1], strlen(kv[1]), NULL));
			}
			continue;
		}
		char name[256];
		size_t nl;
		if (op == 5) {
			memcpy(name, last, last_len);
			nl = last_len;
		} else {
			nl = fz_byte(&in) % 64;
			for (size_t k = 0; k < nl; k++)
				name[k] = (char)fz_byte(&in);
		}
		unsigned dt = fz_byte(&in);
		st_dtype dtype = (st_dtype)(dt % (ST_DTYPE_COUNT + 2));
		unsigned ndim = fz_byte(&in) % (ST_MAX_DIMS + 4);
		uint64_t shape[ST_MAX_DIMS + 4];
		for (unsigned d = 0; d < ndim; d++)
			shape[d] = fz_dim(&in);
		int rc = st_writer_add(w, name, nl, dtype, ndim, shape, &err);
		CHECK(rc == ST_OK || rc == ST_EINVAL);
		if (rc == ST_OK) {
			/* Accepted: valid UTF-8, a real dtype, bounded dims. */
			CHECK(st__utf8_valid(name, nl, NULL));
			CHECK((unsigned)dtype < ST_DTYPE_COUNT && ndim <= ST_MAX_DIMS);
			uint64_t count = 1, bits;
			for (unsigned d = 0; d < ndim; d++)
				CHECK(!st__mul_u64(count, shape[d], &count));
			CHECK(!st__mul_u64(count, st_dtype_bits(dtype), &bits));
			CHECK(bits % 8 == 0);
			CHECK(!st__add_u64(total, bits / 8, &total));
			accepted++;
			memcpy(last, name, nl);
			last_len = nl;
		} else
			CHECK(err.message[0] != 0);
	}
	CHECK(st_writer_n_tensors(w) == accepted);
	const void *hb;
	size_t hl;
	int rc = st_writer_header(w, &hb, &hl, &err);
	CHECK(rc == ST_OK || rc == ST_EINVAL);
	if (rc != ST_OK) {
		st_writer_free(w);
		return;
	}
	/* Canonical: N in the prefix, padded with spaces to a multiple of 8. */
	const unsigned char *h = hb;
	CHECK(hl >= 8 + 2 && (hl - 8) % 8 == 0);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | h[i];
	CHECK(n == hl - 8);
	size_t close = hl;
	while (close > 8 && h[close - 1] == ' ')
		close--;
	CHECK(close > 8 && h[close - 1] == '}' && hl - close < 8);
	CHECK(h[8] == '{');
	/* The header reads back as the same table, in the same order. */
	struct st__header rh;
	struct st__report r = {.path = "writer", .err = &err};
	rc = st__header_parse(&rh, (const char *)h + 8, hl - 8, total, &r);
	if (rc != ST_OK)
		fprintf(stderr, "reader refused the writer's header: %s\n",
		        err.message);
	CHECK(rc == ST_OK);
	CHECK(rh.n_tensors == accepted);
	for (size_t i = 0; i < accepted; i++) {
		const st_tensor *a = st_writer_tensor(w, i), *b = &rh.tensors[i];
		CHECK(a->name_len == b->name_len &&
		      !memcmp(a->name, b->name, a->name_len));
		CHECK(a->dtype == b->dtype && a->ndim == b->ndim);
		for (unsigned d = 0; d < a->ndim; d++)
			CHECK(a->shape[d] == b->shape[d]);
		CHECK(a->begin == b->begin && a->end == b->end);
		CHECK(a->n_bytes == b->n_bytes && a->n_elements == b->n_elements);
		if (i)
			CHECK(fz_canon_before(st_writer_tensor(w, i - 1), a));
	}
	CHECK(rh.n_warnings == 0);
	/* Metadata keys sorted by bytes, "format" present. */
	int has_format = 0;
	for (size_t i = 0; i < rh.n_meta; i++) {
		if (rh.meta[i].key_len == 6 && !memcmp(rh.meta[i].key, "format", 6))
			has_format = 1;
		if (i) {
			const st_meta *a = &rh.meta[i - 1], *b = &rh.meta[i];
			size_t m = a->key_len < b->key_len ? a->key_len : b->key_len;
			int c = memcmp(a->key, b->key, m);
			CHECK(c < 0 || (c == 0 && a->key_len < b->key_len));
		}
	}
	CHECK(has_format);
	/* A fixed point: the table read back, written again, same bytes. */
	st_writer *w2 = NULL;
	CHECK(st_writer_new(&w2, &err) == ST_OK);
	for (size_t i = 0; i < rh.n_meta; i++)
		CHECK(st_writer_set_meta(w2, rh.meta[i].key, rh.meta[i].value,
		                         &err) == ST_OK);
	for (size_t i = rh.n_tensors; i-- > 0;) {
		const st_tensor *t = &rh.tensors[i];
		CHECK(st_writer_add(w2, t->name, t->name_len, t->dtype, t->ndim,
		                    t->shape, &err) == ST_OK);
	}
	const void *hb2;
	size_t hl2;
	CHECK(st_writer_header(w2, &hb2, &hl2, &err) == ST_OK);
	CHECK(hl2 == hl && !memcmp(hb2, hb, hl));
	st_writer_free(w2);
	/* With the data, small files open from memory. */
	if (total <= (1u << 16)) {
		size_t len = hl + (size_t)total;
		unsigned char *buf = calloc(1, len);
		CHECK(buf != NULL);
		memcpy(buf, hb, hl);
		st_file *f = NULL;
		CHECK(st_file_open_memory(&f, buf, len, "w", 0, &err) == ST_OK);
		CHECK(st_file_n_tensors(f) <= accepted);
		fz_check_table(f, buf, len);
		st_file_close(f);
		free(buf);
	}
	st__header_free(&rh);
	st_writer_free(w);
}

/* ---- config.json editing ------------------------------------------------- */

static void fuzz_config_dtype(const unsigned char *data, size_t size)
{
	char *out = NULL, *again = NULL;
	size_t len = 0, len2 = 0;
	st_error err;
	int rc = st_config_set_dtype((const char *)data, size, "bfloat16", &out, &len, &err);
	CHECK(rc == ST_OK || rc == ST_EFORMAT);
	if (rc != ST_OK) {
		CHECK(out == NULL && strstr(err.message, "not a JSON object") != NULL);
		return;
	}
	CHECK(out != NULL);
	CHECK(st_config_set_dtype(out, len, "bfloat16", &again, &len2, &err) == ST_OK);
	CHECK(len2 == len && memcmp(again, out, len) == 0);
	free(again);
	free(out);
}
