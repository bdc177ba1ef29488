/*
 * st/sniff.h - what kind of file this is, from its first bytes.
 *
 * Tools that expect one format use this to say what they were given
 * instead ("x.gguf is a GGUF file") rather than failing on a number read
 * from the wrong place. st_sniff looks at the first bytes only (up to
 * ST_SNIFF_BYTES are used; fewer are fine) and never fails: a file it does
 * not recognise is ST_KIND_UNKNOWN. The tests are the formats' own
 * signatures (doc/format.md, "What a file is"): GGUF's magic, the zip local
 * header, a pickle's PROTO opcode, a POSIX tar "ustar" field, gzip's magic,
 * and a safetensors length that fits the file and is followed by '{'.
 */
#ifndef ST_SNIFF_H
#define ST_SNIFF_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How many leading bytes st_sniff can use (the tar magic sits at 257). */
#define ST_SNIFF_BYTES 512

enum st_kind {
	ST_KIND_UNKNOWN = 0, /* binary, none of the below */
	ST_KIND_EMPTY,       /* zero bytes */
	ST_KIND_SAFETENSORS, /* length prefix that fits, then '{' */
	ST_KIND_GGUF,        /* "GGUF" */
	ST_KIND_JSON,        /* text starting with '{' or '[' (a shard index,
	                        config.json...) */
	ST_KIND_ZIP,         /* "PK\3\4" (PyTorch 1.6+ .bin, or any zip) */
	ST_KIND_PICKLE,      /* PROTO 2-5 (legacy PyTorch .bin) */
	ST_KIND_TAR,         /* "ustar" at 257 (PyTorch before 0.4) */
	ST_KIND_GZIP,        /* 1f 8b */
	ST_KIND_HTML,        /* <!doctype, <html, <?xml (a saved error page) */
	ST_KIND_LFS_POINTER, /* "version https://git-lfs" */
	ST_KIND_TEXT,        /* other text: printable UTF-8 and whitespace */
	ST_KIND_DIRECTORY,   /* st_sniff_path on a directory */
	ST_KIND_COUNT
};

/*
 * The kind of the file whose first len bytes are head; file_size is the
 * whole file's size (it bounds a safetensors length), or UINT64_MAX when
 * unknown (a stream). A leading UTF-8 byte order mark and whitespace are
 * skipped before the text tests.
 */
ST_API int st_sniff(const void *head, size_t len, uint64_t file_size);

/*
 * st_sniff on the first ST_SNIFF_BYTES of the file at path (ST_KIND_DIRECTORY
 * for a directory). Returns ST_OK with *kind set, or ST_EIO (cannot stat,
 * open or read) with err filled.
 */
ST_API int st_sniff_path(const char *path, int *kind, st_error *err);

/*
 * The kind in words, with its article, for messages: "a GGUF file",
 * "a zip archive", "a Git LFS pointer file"... Never NULL.
 */
ST_API const char *st_kind_name(int kind);

#ifdef __cplusplus
}
#endif

#endif
