/*
 * archive.c - the one file of libst that uses libarchive: it lists the
 * members of a zip (zip64 included) or tar container and reads them.
 *
 * Design. Opening walks the archive once with libarchive (the seekable
 * zip reader, which trusts the central directory; the tar reader for tar)
 * and records, per member, its name and declared size. When a member's
 * bytes lie uncompressed in the file (a stored zip entry, any tar member)
 * its file offset is recorded too, so that large tensor storages are read
 * in place by offset (pread or the mapping) and never copied through
 * libarchive. The offset is the position libarchive has consumed when it
 * hands out the member's header, and is trusted only after it is checked:
 * it must lie inside the file with the whole member, and the first bytes
 * read there must equal the first bytes libarchive itself returns for
 * the member. A member that fails the check, or is compressed, is read
 * through libarchive (st__arc_read: whole, for pickles and small records;
 * st__arc_stream: in chunks, for compressed storages), which checks its
 * CRC and never holds more than its own small buffers. Every read is
 * bounded by a limit the caller gives, checked against the declared size
 * before anything is allocated and against the bytes really produced
 * while inflating (a zip bomb that lies about its size stops there).
 *
 * A reader for a member is opened afresh and walked to it; st__arc_stream
 * keeps nothing between calls, so a caller reads members in archive order
 * when it reads many (st__arc_verify does, and checks every CRC).
 *
 * CRCs of members read in place. libarchive checks the CRC of what it
 * reads; bytes read in place bypass it, so for each stored zip entry in
 * place the expected CRC-32 is taken from its local header (or data
 * descriptor) at open (find_crc), and whoever reads the bytes checks
 * them (torch.c: each read's bytes through st__crc32, crc32.c, the
 * pieces joined in storage order with st__arc_crc32_combine, and the
 * whole compared once the storage has been read). This file is also the
 * one user of zlib, for crc32_combine. An entry whose header cannot be
 * found is read through libarchive. Tar members carry no CRC.
 */
#include "internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define BAD(...) (st__report(r, ST_PROBLEM_ERROR, __VA_ARGS__), ST_EFORMAT)

/* ---- libarchive over a st__src ------------------------------------------ */

struct feed {
	const struct st__src *src;
	uint64_t pos;
	unsigned char buf[1 << 16];
};

static la_ssize_t feed_read(struct archive *a, void *d, const void **out)
{
	struct feed *f = d;
	(void)a;
	uint64_t left = f->src->size - f->pos;
	if (f->pos >= f->src->size)
		return 0;
	if (f->src->mem) {
		size_t n = left > (1u << 20) ? (1u << 20) : (size_t)left;
		*out = f->src->mem + f->pos;
		f->pos += n;
		return (la_ssize_t)n;
	}
	size_t n = left > sizeof f->buf ? sizeof f->buf : (size_t)left;
	if (st__src_read(f->src, f->buf, n, f->pos) < 0)
		return -1;
	*out = f->buf;
	f->pos += n;
	return (la_ssize_t)n;
}

static la_int64_t feed_seek(struct archive *a, void *d, la_int64_t off,
                            int whence)
{
	struct feed *f = d;
	(void)a;
	int64_t base = whence == SEEK_SET ? 0
	               : whence == SEEK_CUR ? (int64_t)f->pos
	                                    : (int64_t)f->src->size;
	int64_t to;
	if (__builtin_add_overflow(base, off, &to) || to < 0)
		return ARCHIVE_FATAL;
	if ((uint64_t)to > f->src->size)
		to = (int64_t)f->src->size;
	f->pos = (uint64_t)to;
	return to;
}

static la_int64_t feed_skip(struct archive *a, void *d, la_int64_t n)
{
	struct feed *f = d;
	(void)a;
	if (n < 0)
		return 0;
	uint64_t left = f->src->size - f->pos;
	uint64_t k = (uint64_t)n < left ? (uint64_t)n : left;
	f->pos += k;
	return (la_int64_t)k;
}

/* A fresh reader of src's archive; NULL when out of memory. */
static struct archive *reader(const struct st__arc *arc, struct feed *f)
{
	struct archive *a = archive_read_new();
	if (!a)
		return NULL;
	if (arc->kind == ST__ARC_ZIP)
		archive_read_support_format_zip_seekable(a);
	else
		archive_read_support_format_tar(a);
	f->src = arc->src;
	f->pos = 0;
	archive_read_set_read_callback(a, feed_read);
	archive_read_set_seek_callback(a, feed_seek);
	archive_read_set_skip_callback(a, feed_skip);
	archive_read_set_callback_data(a, f);
	/* A failed open leaves its message in the handle for the caller. */
	archive_read_open1(a);
	return a;
}

static const char *what(struct archive *a)
{
	const char *s = archive_error_string(a);
	return s ? s : "unreadable archive";
}

void st__arc_free(struct st__arc *arc)
{
	for (size_t i = 0; i < arc->n; i++)
		free(arc->e[i].name);
	free(arc->e);
	arc->e = NULL;
	arc->n = 0;
}

/*
 * Check that member e's bytes begin at e->data_off in the file: the first
 * bytes of the member as libarchive returns them must be those there.
 * Clears data_off (the member is then read through libarchive) if not.
 */
static void check_in_place(struct archive *a, const struct st__arc *arc,
                           struct st__arc_entry *e)
{
	unsigned char x[64], y[64];
	size_t n = e->size < sizeof x ? (size_t)e->size : sizeof x;
	if (n == 0)
		return;
	la_ssize_t k = archive_read_data(a, x, n);
	if (k != (la_ssize_t)n || st__src_read(arc->src, y, n, e->data_off) < 0 ||
	    memcmp(x, y, n) != 0)
		e->data_off = ST__ARC_NOT_IN_PLACE;
}

/* zlib's z_off_t carries the length of the second piece. */
_Static_assert(sizeof(z_off_t) >= sizeof(uint64_t), "z_off_t is 64 bits");

uint32_t st__arc_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
	return (uint32_t)crc32_combine(crc1, crc2, (z_off_t)len2);
}

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/*
 * The CRC-32 of stored zip entry e, whose bytes were found in place at
 * e->data_off: from its local header, the one that ends exactly there
 * with e's name (torch pads the extra field to align the data, so the
 * header is looked for in the 4 KiB before the name), or, when the
 * header defers it (flag bit 3), from the data descriptor after the
 * bytes. Clears data_off (the entry is then read through libarchive,
 * which checks the CRC itself) when no such header is found.
 */
static int crc_in(const struct st__arc *arc, struct st__arc_entry *e,
                  size_t nl, size_t max_xl)
{
	unsigned char w[30 + 256 + 4096];
	uint64_t span = 30 + nl + max_xl;
	if (span > e->data_off)
		span = e->data_off;
	if (st__src_read(arc->src, w, (size_t)span, e->data_off - span) < 0)
		return -1;
	/* Header at h: 30 fixed bytes, the name, xl extra bytes, the data. */
	for (size_t xl = 0; 30 + nl + xl <= span; xl++) {
		const unsigned char *h = w + span - 30 - nl - xl;
		if (rd32(h) != 0x04034b50 || (size_t)(h[26] | h[27] << 8) != nl ||
		    (size_t)(h[28] | h[29] << 8) != xl || memcmp(h + 30, e->name, nl))
			continue;
		if (!(h[6] & 8)) {
			e->crc = rd32(h + 14);
			return 1;
		}
		unsigned char d[8];
		if (arc->src->size - e->data_off - e->size < 8 ||
		    st__src_read(arc->src, d, 8, e->data_off + e->size) < 0)
			return -1;
		e->crc = rd32(d) == 0x08074b50 ? rd32(d + 4) : rd32(d);
		return 1;
	}
	return 0;
}

static void find_crc(const struct st__arc *arc, struct st__arc_entry *e)
{
	size_t nl = strlen(e->name);
	int k = nl <= 256 && e->data_off >= 30 + nl ? crc_in(arc, e, nl, 128) : -1;
	if (k == 0)
		k = crc_in(arc, e, nl, 4096);
	e->has_crc = k == 1;
	if (!e->has_crc)
		e->data_off = ST__ARC_NOT_IN_PLACE;
}

int st__arc_open(struct st__arc *arc, const struct st__src *src, int kind,
                 struct st__report *r)
{
	memset(arc, 0, sizeof *arc);
	arc->src = src;
	arc->kind = kind;
	const char *fmt = kind == ST__ARC_ZIP ? "zip" : "tar";
	struct feed *f = malloc(sizeof *f);
	if (!f)
		return ST_ENOMEM;
	struct archive *a = reader(arc, f);
	if (!a) {
		free(f);
		return ST_ENOMEM;
	}
	int rc = ST_OK;
	size_t cap = 0;
	struct archive_entry *ent;
	for (;;) {
		int s = archive_read_next_header(a, &ent);
		if (s == ARCHIVE_EOF)
			break;
		if (s != ARCHIVE_OK) {
			if (arc->n == 0)
				rc = BAD("%s: cannot read the archive's directory (a "
				         "truncated or damaged file?): %s", fmt, what(a));
			else
				rc = BAD("%s: member %zu: %s (a truncated or damaged file?)",
				         fmt, arc->n, what(a));
			break;
		}
		/* The members' headers alone cannot outnumber the file's bytes. */
		if (arc->n >= src->size / 22 + 1) {
			rc = BAD("%s: more members than the file can hold", fmt);
			break;
		}
		if (arc->n == cap) {
			size_t c = cap ? cap * 2 : 16;
			struct st__arc_entry *ne = realloc(arc->e, c * sizeof *ne);
			if (!ne) {
				rc = ST_ENOMEM;
				break;
			}
			arc->e = ne;
			cap = c;
		}
		const char *name = archive_entry_pathname(ent);
		struct st__arc_entry *e = &arc->e[arc->n];
		memset(e, 0, sizeof *e);
		if (!(e->name = strdup(name ? name : ""))) {
			rc = ST_ENOMEM;
			break;
		}
		arc->n++;
		e->size = archive_entry_size_is_set(ent) && archive_entry_size(ent) >= 0
		          ? (uint64_t)archive_entry_size(ent) : 0;
		e->sized = archive_entry_size_is_set(ent) != 0;
		e->data_off = ST__ARC_NOT_IN_PLACE;
		if (archive_entry_filetype(ent) != AE_IFREG)
			continue;
		/*
		 * In place when the bytes at the position libarchive has
		 * reached are the member's own (a tar member, a stored zip
		 * entry); a deflated entry fails the comparison.
		 */
		la_int64_t at = archive_filter_bytes(a, 0);
		if (e->sized && at >= 0 && (uint64_t)at <= src->size &&
		    e->size <= src->size - (uint64_t)at) {
			e->data_off = (uint64_t)at;
			check_in_place(a, arc, e);
			if (kind == ST__ARC_ZIP && e->data_off != ST__ARC_NOT_IN_PLACE)
				find_crc(arc, e);
		}
	}
	archive_read_free(a);
	free(f);
	if (rc)
		st__arc_free(arc);
	return rc;
}

/* Walk a fresh reader to member i; ST_OK with *out set. */
static int seek_member(const struct st__arc *arc, size_t i, struct feed *f,
                       struct archive **out, struct st__report *r)
{
	const char *fmt = arc->kind == ST__ARC_ZIP ? "zip" : "tar";
	struct archive *a = reader(arc, f);
	if (!a)
		return ST_ENOMEM;
	struct archive_entry *ent;
	for (size_t k = 0; k <= i; k++) {
		if (archive_read_next_header(a, &ent) != ARCHIVE_OK) {
			int rc = BAD("%s: member '%s': %s", fmt, arc->e[i].name, what(a));
			archive_read_free(a);
			return rc;
		}
	}
	*out = a;
	return ST_OK;
}

int st__arc_stream(const struct st__arc *arc, size_t i, uint64_t limit,
                   int (*fn)(void *ctx, const void *data, size_t n),
                   void *ctx, struct st__report *r)
{
	const struct st__arc_entry *e = &arc->e[i];
	const char *fmt = arc->kind == ST__ARC_ZIP ? "zip" : "tar";
	if (e->size > limit)
		return BAD("%s: member '%s' declares %llu bytes, more than the %llu "
		           "allowed", fmt, e->name, (unsigned long long)e->size,
		           (unsigned long long)limit);
	struct feed *f = malloc(sizeof *f);
	unsigned char *chunk = malloc(1 << 16);
	struct archive *a = NULL;
	int rc = f && chunk ? seek_member(arc, i, f, &a, r) : ST_ENOMEM;
	uint64_t got = 0;
	while (rc == ST_OK) {
		la_ssize_t k = archive_read_data(a, chunk, 1 << 16);
		if (k == 0)
			break;
		if (k < 0) {
			/* A bad CRC is a warning to libarchive; a refusal here. */
			rc = BAD("%s: member '%s': %s", fmt, e->name, what(a));
			break;
		}
		if ((uint64_t)k > limit - got || (uint64_t)k > e->size - got) {
			rc = BAD("%s: member '%s' inflates past its declared %llu "
			         "bytes (a zip bomb?)", fmt, e->name,
			         (unsigned long long)e->size);
			break;
		}
		got += (uint64_t)k;
		if ((rc = fn(ctx, chunk, (size_t)k)))
			break;
	}
	if (rc == ST_OK && got != e->size)
		rc = BAD("%s: member '%s' holds %llu bytes, not the %llu it "
		         "declares (truncated?)", fmt, e->name,
		         (unsigned long long)got, (unsigned long long)e->size);
	if (a)
		archive_read_free(a);
	free(chunk);
	free(f);
	return rc;
}

struct slurp {
	unsigned char *buf;
	size_t len, cap;
};

/* Grow with what really arrives: a declared size is not trusted. */
static int slurp_put(void *ctx, const void *data, size_t n)
{
	struct slurp *s = ctx;
	if (n > s->cap - s->len) {
		size_t c = s->cap ? s->cap : 4096;
		while (c - s->len < n)
			c *= 2;
		unsigned char *b = realloc(s->buf, c);
		if (!b)
			return ST_ENOMEM;
		s->buf = b;
		s->cap = c;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	return ST_OK;
}

int st__arc_read(const struct st__arc *arc, size_t i, uint64_t limit,
                 unsigned char **out, size_t *len, struct st__report *r)
{
	struct slurp s = {0};
	*out = NULL;
	*len = 0;
	int rc = st__arc_stream(arc, i, limit, slurp_put, &s, r);
	if (rc) {
		free(s.buf);
		return rc;
	}
	*out = s.buf ? s.buf : malloc(1);
	*len = s.len;
	return *out ? ST_OK : ST_ENOMEM;
}

int st__arc_verify(const struct st__arc *arc, const unsigned char *want,
                   struct st__report *r)
{
	const char *fmt = arc->kind == ST__ARC_ZIP ? "zip" : "tar";
	struct feed *f = malloc(sizeof *f);
	unsigned char *chunk = malloc(1 << 16);
	struct archive *a = f && chunk ? reader(arc, f) : NULL;
	int rc = a ? ST_OK : ST_ENOMEM;
	struct archive_entry *ent;
	for (size_t i = 0; rc == ST_OK && i < arc->n; i++) {
		if (archive_read_next_header(a, &ent) != ARCHIVE_OK) {
			rc = BAD("%s: member '%s': %s", fmt, arc->e[i].name, what(a));
			break;
		}
		if (want && !want[i])
			continue; /* the next header skips its data */
		uint64_t got = 0;
		for (;;) {
			la_ssize_t k = archive_read_data(a, chunk, 1 << 16);
			if (k == 0)
				break;
			if (k < 0) {
				rc = BAD("%s: member '%s': %s", fmt, arc->e[i].name, what(a));
				break;
			}
			got += (uint64_t)k;
			if (got > arc->e[i].size) {
				rc = BAD("%s: member '%s' inflates past its declared %llu "
				         "bytes (a zip bomb?)", fmt, arc->e[i].name,
				         (unsigned long long)arc->e[i].size);
				break;
			}
		}
		if (rc == ST_OK && got != arc->e[i].size)
			rc = BAD("%s: member '%s' holds %llu bytes, not the %llu it "
			         "declares (truncated?)", fmt, arc->e[i].name,
			         (unsigned long long)got,
			         (unsigned long long)arc->e[i].size);
	}
	if (a)
		archive_read_free(a);
	free(chunk);
	free(f);
	return rc;
}
