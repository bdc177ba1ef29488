/*
 * dump.c - stinfo --dump NAME [--output FILE] (stinfo.h): one tensor's
 * values printed, or written as a .npy file. The decoding is libst's: a
 * safetensors or PyTorch tensor's bytes as stored when numpy has its
 * dtype, else widened by st_dtype_widen (BF16, the F8 types, F4) and
 * written as F32; a GGUF tensor's float and integer types as stored, its
 * block types decoded by st_ggml_to_f32. The .npy format is st_npy's.
 * Memory stays bounded: the data is read and decoded a chunk at a time.
 */
#include "stinfo/stinfo.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gguf_info.h"
#include "fe/cli.h"
#include "fe/table.h"

/* Elements decoded at a time: a multiple of every ggml block (256). */
#define DUMP_CHUNK ((size_t)1 << 16)

/* One tensor to dump, whichever file holds it. */
struct dump {
	const char *path;
	char *label;  /* the stored type's name, e.g. "BF16", "Q8_0" */
	st_dtype out; /* the dtype given out (printed, or the .npy's) */
	int widen;    /* decode a safetensors dtype numpy lacks */
	uint64_t n;   /* elements */
	uint64_t shape[ST_MAX_DIMS];
	unsigned ndim;
	/* A safetensors or PyTorch tensor, read with st_checkpoint_read. */
	st_checkpoint *ck;
	size_t index;
	st_dtype dtype;
	/* A GGUF tensor: its mapped bytes and ggml type. */
	const unsigned char *gdata;
	unsigned gtype, gblock, gbytes;
	int gdecode; /* a block type, decoded to F32 */
};

/* Bytes of k stored elements starting at element off (a whole group). */
static uint64_t stored_bytes(const struct dump *d, uint64_t k)
{
	if (d->gdata)
		return k / d->gblock * d->gbytes;
	return k * st_dtype_bits(d->dtype) / 8;
}

/*
 * Elements [off, off + k) into out, in d->out's little-endian layout
 * (raw holds the stored bytes on the way). Returns 0, or -1 after an
 * error line.
 */
static int decode(struct dump *d, uint64_t off, size_t k, unsigned char *raw, double *wide,
                  void *out)
{
	st_error e;
	if (d->gdata) {
		const unsigned char *src = d->gdata + stored_bytes(d, off);
		if (!d->gdecode) {
			memcpy(out, src, (size_t)stored_bytes(d, k));
			return 0;
		}
		if (st_ggml_to_f32(d->gtype, src, out, k) != ST_OK) {
			char *p = cli_printable(d->path, strlen(d->path));
			cli_warn("%s: %s values cannot be decoded", p, d->label);
			free(p);
			return -1;
		}
		return 0;
	}
	int rc = st_checkpoint_read(d->ck, d->index, stored_bytes(d, off), d->widen ? raw : out,
	                            (size_t)stored_bytes(d, k), &e);
	if (rc != ST_OK) {
		cli_error_path(d->path, &e);
		return -1;
	}
	if (d->widen) {
		st_dtype_widen(d->dtype, raw, wide, k);
		float *f = out;
		for (size_t i = 0; i < k; i++)
			f[i] = (float)wide[i]; /* exact: these dtypes are narrower */
	}
	return 0;
}

/* A little-endian 64-bit integer. */
static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Element i of k decoded ones (buf, in d->out), as text. */
static void print_value(const struct dump *d, const unsigned char *buf, const double *wide,
                        size_t i)
{
	switch (d->out) {
	case ST_DTYPE_I64: printf("%" PRId64, (int64_t)le64(buf + 8 * i)); break;
	case ST_DTYPE_U64: printf("%" PRIu64, le64(buf + 8 * i)); break;
	case ST_DTYPE_C64: printf("(%.9g, %.9g)", wide[2 * i], wide[2 * i + 1]); break;
	case ST_DTYPE_F64:
		if (isnan(wide[i]))
			printf("nan");
		else
			printf("%.17g", wide[i]);
		break;
	default:
		if (isnan(wide[i]))
			printf("nan"); /* numpy's word, whatever the sign bit */
		else if (st_dtype_is_float(d->out))
			printf("%.9g", wide[i]); /* round-trips an F32 */
		else
			printf("%.0f", wide[i]); /* integers of 32 bits or fewer, BOOL */
	}
}

/* The values, one row of the last dimension a line. */
static int print_values(struct dump *d)
{
	uint64_t row = d->ndim ? d->shape[d->ndim - 1] : 1;
	unsigned ob = st_dtype_bits(d->out) / 8;
	unsigned char *raw = cli_xmalloc(DUMP_CHUNK * 8);
	unsigned char *buf = cli_xmalloc(DUMP_CHUNK * ob);
	double *wide = cli_xmalloc(2 * DUMP_CHUNK * sizeof *wide);
	int rc = 0;
	uint64_t col = 0;
	for (uint64_t off = 0; off < d->n && rc == 0; off += DUMP_CHUNK) {
		size_t k = (size_t)(d->n - off < DUMP_CHUNK ? d->n - off : DUMP_CHUNK);
		if ((rc = decode(d, off, k, raw, wide, buf)) != 0)
			break;
		if (d->out == ST_DTYPE_C64)
			st_dtype_widen(ST_DTYPE_F32, buf, wide, 2 * k);
		else if (d->out != ST_DTYPE_I64 && d->out != ST_DTYPE_U64)
			st_dtype_widen(d->out, buf, wide, k);
		for (size_t i = 0; i < k; i++) {
			if (col)
				putchar(' ');
			print_value(d, buf, wide, i);
			if (++col == row) {
				putchar('\n');
				col = 0;
			}
		}
	}
	free(wide);
	free(buf);
	free(raw);
	return rc;
}

/* The values as a .npy file (st_npy), atomically. */
static int write_npy(struct dump *d, const char *output)
{
	st_npy_writer *w;
	st_error e;
	if (st_npy_writer_open(&w, output, d->out, d->shape, d->ndim, &e) != ST_OK) {
		cli_error_path(output, &e);
		return -1;
	}
	unsigned ob = st_dtype_bits(d->out) / 8;
	unsigned char *raw = cli_xmalloc(DUMP_CHUNK * 8);
	unsigned char *buf = cli_xmalloc(DUMP_CHUNK * ob);
	double *wide = cli_xmalloc(DUMP_CHUNK * sizeof *wide);
	int rc = 0;
	for (uint64_t off = 0; off < d->n && rc == 0; off += DUMP_CHUNK) {
		size_t k = (size_t)(d->n - off < DUMP_CHUNK ? d->n - off : DUMP_CHUNK);
		rc = decode(d, off, k, raw, wide, buf);
		if (rc == 0 && st_npy_writer_write(w, buf, k * ob, &e) != ST_OK) {
			cli_error_path(output, &e);
			rc = -1;
		}
	}
	if (rc == 0 && st_npy_writer_finish(w, &e) != ST_OK) {
		cli_error_path(output, &e);
		rc = -1;
	}
	st_npy_writer_free(w);
	free(wide);
	free(buf);
	free(raw);
	return rc;
}

/* The heading lines, then the values; or the .npy file. */
static int emit(struct dump *d, const char *name, size_t name_len, const char *output)
{
	if (output)
		return write_npy(d, output);
	char shape[1024], line[1200];
	char *n = cli_printable(name, name_len);
	table_print_kv("name:", n);
	free(n);
	char *label = cli_printable(d->label, strlen(d->label));
	if (strcmp(label, st_dtype_name(d->out)) != 0)
		snprintf(line, sizeof line, "%s (values decoded to %s)", label,
		         st_dtype_name(d->out));
	else
		snprintf(line, sizeof line, "%s", label);
	free(label);
	table_print_kv("dtype:", line);
	size_t used = (size_t)snprintf(shape, sizeof shape, "[");
	for (unsigned i = 0; i < d->ndim && used < sizeof shape; i++)
		used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%llu", i ? ", " : "",
		                         (unsigned long long)d->shape[i]);
	if (used < sizeof shape)
		snprintf(shape + used, sizeof shape - used, "]");
	table_print_kv("shape:", shape);
	putchar('\n');
	return print_values(d);
}

static int not_found(const char *path, const char *name)
{
	char *p = cli_printable(path, strlen(path));
	char *n = cli_printable(name, strlen(name));
	cli_warn("%s: no tensor named '%s'", p, n);
	free(n);
	free(p);
	return CLI_ERROR;
}

int stinfo_dump(st_checkpoint *ck, const char *path, const char *name, const char *output)
{
	long i = st_checkpoint_find(ck, name, strlen(name));
	if (i < 0)
		return not_found(path, name);
	const st_tensor *t = st_checkpoint_tensor(ck, (size_t)i, NULL);
	struct dump d;
	memset(&d, 0, sizeof d);
	d.path = path;
	d.ck = ck;
	d.index = (size_t)i;
	d.dtype = t->dtype;
	d.n = t->n_elements;
	d.ndim = t->ndim;
	memcpy(d.shape, t->shape, t->ndim * sizeof *t->shape);
	d.label = cli_xstrdup(st_dtype_name(t->dtype));
	d.out = t->dtype;
	if (!st_npy_descr(t->dtype)) {
		if (!st_dtype_has_values(t->dtype)) {
			char *p = cli_printable(path, strlen(path));
			char *n = cli_printable(name, strlen(name));
			cli_warn("%s: tensor '%s': %s values are not decoded", p, n,
			         st_dtype_name(t->dtype));
			free(n);
			free(p);
			free(d.label);
			return CLI_ERROR;
		}
		d.widen = 1;
		d.out = ST_DTYPE_F32;
	}
	int rc = emit(&d, t->name, t->name_len, output);
	free(d.label);
	return rc ? CLI_ERROR : CLI_OK;
}

int stinfo_dump_gguf(const char *path, const char *name, const char *output)
{
	st_gguf *g;
	st_error e;
	if (st_gguf_open(&g, path, &e) != ST_OK) {
		cli_error_path(path, &e);
		return CLI_ERROR;
	}
	long i = st_gguf_find(g, name);
	if (i < 0) {
		st_gguf_close(g);
		return not_found(path, name);
	}
	const st_gguf_tensor *t = st_gguf_tensor_at(g, (size_t)i);
	struct dump d;
	memset(&d, 0, sizeof d);
	d.path = path;
	d.gdata = st_gguf_tensor_data(g, (size_t)i);
	d.gtype = t->type;
	d.n = t->n_elements;
	/* ggml's dims run fastest first; numpy's shape slowest first. */
	d.ndim = t->ndim;
	for (unsigned k = 0; k < t->ndim; k++)
		d.shape[k] = t->dims[t->ndim - 1 - k];
	const char *tn = st_ggml_type_name(t->type);
	d.label = cli_xstrdup(tn ? tn : "unknown");
	int rc = st_ggml_type_block(t->type, &d.gblock, &d.gbytes) == ST_OK ? 0 : -1;
	if (rc == 0 && st_ggml_type_dtype(t->type, &d.out) == ST_OK && st_npy_descr(d.out)) {
		d.gdecode = 0;
	} else if (rc == 0 && st_ggml_to_f32(t->type, NULL, NULL, 0) == ST_OK) {
		d.gdecode = 1;
		d.out = ST_DTYPE_F32;
	} else {
		rc = -1;
	}
	if (rc != 0) {
		char *p = cli_printable(path, strlen(path));
		char *n = cli_printable(name, strlen(name));
		cli_warn("%s: tensor '%s': %s values are not decoded", p, n, d.label);
		free(n);
		free(p);
	} else {
		rc = emit(&d, t->name, t->name_len, output);
	}
	free(d.label);
	st_gguf_close(g);
	return rc ? CLI_ERROR : CLI_OK;
}
