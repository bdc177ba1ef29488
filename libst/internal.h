/*
 * internal.h - helpers shared inside libst (st__ names). Not installed.
 * Tests may include it to reach the scalar reference paths.
 */
#ifndef ST_INTERNAL_H
#define ST_INTERNAL_H

#include <st.h>

#define ST_PRINTF(a, b) __attribute__((format(printf, a, b)))

/*
 * The misuse policy (libst.3, "Misuse"): what only a caller's mistake can
 * cause, such as an index outside a table, stops the program, in every
 * build (NDEBUG does not remove it) and as assert() does; what a file can
 * cause never does, it is an st_error.
 */
#define ST__REQUIRE(cond) \
	((cond) ? (void)0 : st__misuse(__FILE__, __LINE__, __func__, #cond))
_Noreturn void st__misuse(const char *file, int line, const char *func,
                          const char *cond);

/* Fill err (if not NULL) with code and a formatted message; return code. */
int st__error(st_error *err, int code, const char *fmt, ...) ST_PRINTF(3, 4);
/* The same, appending ": strerror(errnum)" and keeping errnum. */
int st__error_sys(st_error *err, int code, int errnum, const char *fmt, ...)
	ST_PRINTF(4, 5);

/* Overflow-checked u64 arithmetic: return 0 on success, -1 on overflow. */
static inline int st__mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}
static inline int st__add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? -1 : 0;
}

/* Order of two byte strings (names may hold NUL): memcmp, then length. */
int st__bytes_cmp(const char *a, size_t al, const char *b, size_t bl);
/* s ends with suffix; "dir/name" (no doubled '/'), malloc'd, NULL if out of memory. */
int st__ends_with(const char *s, const char *suffix);
char *st__path_join(const char *dir, const char *name);

/* UTF-8 validity (RFC 3629: no overlongs, no surrogates, <= U+10FFFF). */
int st__utf8_valid(const char *s, size_t len, size_t *bad_at);

/*
 * Append s as a JSON string literal (serde_json's escaping: ", \, and
 * control characters; \b \f \n \r \t short forms; others \u00xx lowercase).
 */
struct st__buf {
	char *data;
	size_t len, cap;
	int failed; /* an allocation failed */
};
void st__buf_put(struct st__buf *b, const void *p, size_t n);
void st__buf_puts(struct st__buf *b, const char *s);
void st__buf_printf(struct st__buf *b, const char *fmt, ...) ST_PRINTF(2, 3);
void st__buf_json_string(struct st__buf *b, const char *s, size_t len);
void st__buf_free(struct st__buf *b);

/*
 * The decoding table of an F8 type (256 F32 bit patterns) or of F4 (16),
 * built once from dtype.c's reference functions; NULL for another type.
 */
const uint32_t *st__f8_table(st_dtype t);

/*
 * A message made one line (doc/errors.md), whatever the names and paths
 * from a file in it hold: each byte below 0x20 and DEL as \xNN, the text
 * cut to fit size bytes (at most 1024) when that lengthens it. A message
 * with no such byte is left as it is. st__error, st__error_sys,
 * st__report and st_problem_report apply it to what they format.
 */
void st__one_line(char *s, size_t size);

/*
 * For messages (format.c): a name quoted with bytes < 0x20 escaped and cut
 * at 120 bytes; a shape as "[2, 3]". Both write into buf and never overflow.
 */
const char *st__qname(char *buf, size_t size, const char *s, size_t len);
void st__fmt_shape(char *buf, size_t size, const uint64_t *d, unsigned n);

/* Scalar reference conversion (dtype.c); st_convert may vectorise. */
int st__convert_scalar(st_dtype dst_type, void *dst, st_dtype src_type,
                       const void *src, size_t n, st_convert_stats *stats);
/*
 * st_convert with one kernel family forced (tests and benchmarks):
 * ST__ISA_SCALAR, ST__ISA_AVX2 or ST__ISA_AVX512. ST_EUNSUPPORTED when this
 * CPU lacks it.
 */
enum { ST__ISA_SCALAR = 0, ST__ISA_AVX2 = 1, ST__ISA_AVX512 = 2 };
int st__convert_isa(int isa, st_dtype dst_type, void *dst, st_dtype src_type,
                    const void *src, size_t n, st_convert_stats *stats);
/* Whether this CPU has kernel family isa (read once, dtype.c). */
int st__isa_available(int isa);

/*
 * Where a parse or check sends its problems. In open mode (fn == NULL) the
 * first error is written to err and parsing stops; in check mode every
 * problem goes to fn and parsing goes on where it can.
 */
struct st__report {
	const char *path;   /* prefix of every message */
	st_problem_fn fn;   /* NULL: stop at the first error */
	void *ctx;
	st_error *err;
	int n_errors;
	/* A PyTorch checkpoint's sub-dictionary to read (st_checkpoint_open_key). */
	const char *const *keys;
	size_t n_keys;
};
/* Report an error (severity ERROR) or a warning; message gets "path: ". */
void st__report(struct st__report *r, int severity, const char *fmt, ...)
	ST_PRINTF(3, 4);
/* 1 when parsing must stop (open mode and an error was reported). */
static inline int st__report_stop(const struct st__report *r)
{
	return r->fn == NULL && r->n_errors > 0;
}

/* A parsed, validated header (format.c). */
struct st__header {
	st_tensor *tensors;  /* valid tensors, in data order */
	size_t n_tensors;
	size_t *by_name;     /* indices into tensors, sorted by name */
	st_meta *meta;
	size_t n_meta;
	size_t *meta_by_key; /* indices into meta, sorted by key bytes; NULL: n_meta < 2 */
	char **warnings;
	size_t n_warnings;
	char *arena;         /* decoded strings */
	uint64_t *dims;      /* all shapes, back to back */
};
/*
 * Parse and validate the n-byte header json of a file whose data buffer is
 * data_size bytes (doc/format.md, rules 4-17). Returns ST_OK, or ST_EFORMAT /
 * ST_ENOMEM (the message is in r->err in open mode). In check mode it
 * returns ST_OK when only rule violations (reported) were found.
 */
int st__header_parse(struct st__header *h, const char *json, size_t n,
                     uint64_t data_size, struct st__report *r);
void st__header_free(struct st__header *h);
/* Index into h->tensors of name, or -1. */
long st__header_find(const struct st__header *h, const char *name, size_t len);
/*
 * Check the 8-byte prefix of a file of file_size bytes (rules 1-3) and
 * diagnose common broken downloads (git-lfs pointer, HTML page, JSON
 * file, truncation). head holds the first head_len bytes (up to 64).
 * Returns ST_OK and sets *n, or reports and returns ST_EFORMAT.
 */
int st__prefix_check(const unsigned char *head, size_t head_len,
                     uint64_t file_size, uint64_t *n, struct st__report *r);

/*
 * Open path reporting to r: in check mode (r->fn set) rule violations are
 * reported and the file still opens with its valid tensors (ST_OK);
 * ST_EFORMAT only when nothing could be parsed. ST_EIO when unreadable.
 */
int st__file_open_report(st_file **out, const char *path, unsigned flags,
                         struct st__report *r);
/*
 * The __metadata__ entry of rank i in key byte order (file.c): what
 * st_file_meta lists in header order, sorted as the reader's duplicate
 * check left it, so a copy in this order reaches a writer in key order.
 */
const st_meta *st__file_meta_by_key(const st_file *f, size_t i);

/*
 * A split GGUF set as one handle (gguf.c): takes the n_parts open parts,
 * in order, whatever happens (closed on failure); the tensors of every
 * part in part order, the metadata of parts[0]. ST_EFORMAT when a tensor
 * name is in two parts (the message names both), ST_ENOMEM.
 */
int st__gguf_join(st_gguf **out, const char *path, st_gguf **parts,
                  size_t n_parts, st_error *err);
/* tokenizer.json and tokenizer_config.json (gguf_tokenizer.c), both or
 * neither (st_gguf_hf_tokenizer's errors), malloc'd. */
int st__gguf_tokenizer_files(const st_gguf *g, char **tok, size_t *tok_len, char **cfg,
                             size_t *cfg_len, st_error *err);
/* st_snapshot_commit for st_gguf_write_snapshot's flags (gguf_hf_gpt2.c):
 * with ST_GGUF_SNAPSHOT_KEEP_OLD what an existing dir held but weights
 * and the files written is carried over first (r->note hears of it). */
int st__gguf_snapshot_commit(st_snapshot *s, unsigned flags, const st_convert_run *r,
                             st_error *err);
/* st_gguf_write_snapshot for general.architecture gpt2 (gguf_hf_gpt2.c);
 * o is not NULL. */
int st__gguf_gpt2_write_snapshot(const st_gguf *g, const char *dir, unsigned flags,
                                 const st_gguf_convert_options *o, const st_convert_run *r,
                                 st_convert_stats *stats, unsigned *lost, st_error *err);
/* A GGUF file's split.no, or -1 when it has none (gguf_split.c). */
long st__gguf_split_no(const st_gguf *g);
/*
 * ARCH.suffix of g, an unsigned integer from 1 to max, into *out; def
 * when the key is absent and def is not 0 (memory.c). Returns ST_OK or
 * ST_EFORMAT, the message naming the file and the key.
 */
int st__gguf_size(const st_gguf *g, const char *arch, const char *suffix, uint64_t def,
                  uint64_t max, uint64_t *out, st_error *err);

/* A parsed shard index (json.c). */
struct st__index_entry {
	char *name;
	size_t name_len;
	char *file;
};
struct st__index {
	struct st__index_entry *e; /* sorted by name */
	size_t n;
	int has_total;
	uint64_t total_size;
};
/*
 * Parse index JSON text (I1, I2; duplicate keys). Problems go to r; in
 * open mode metadata problems are ignored (loaders read weight_map only).
 */
int st__index_parse(struct st__index *ix, const char *text, size_t len,
                    struct st__report *r);
/* The same for an index whose shards end in suffix (".bin": PyTorch's). */
int st__index_parse_shards(struct st__index *ix, const char *text, size_t len,
                           const char *suffix, struct st__report *r);
void st__index_free(struct st__index *ix);

/*
 * Atomic file replacement (atomic.c). Each returns 0 or an errno.
 * st__temp_create makes "<dir>/.<base>.tmp-<pid>-XXXXXX" beside path
 * (EISDIR when path is a directory; an existing target's mode is kept),
 * after st__sweep_stale; *tmp is malloc'd. st__temp_name only makes such a
 * name (attempt varies it). st__fsync_dir makes a rename in path's
 * directory durable. st__sweep_stale removes (files or whole trees) the
 * temporaries of path whose owner process is gone; st__temp_is_stale says
 * whether a file name is such a temporary (of any path). st__rm_tree removes a
 * tree without following symlinks. st__writeback starts writeback of len
 * bytes of fd at off (0, 0: the whole file), without waiting.
 */
#define ST__TEMP_TAG ".tmp-"
/* What st_check_path and st_verify_path say of such a leftover. */
#define ST__LEFTOVER_MSG "left by a writer that is gone; not part of the snapshot"
int st__write_all(int fd, const void *data, size_t n);
int st__fsync_retry(int fd);
int st__temp_name(const char *path, char **out, int attempt);
int st__temp_create(const char *path, char **tmp, int *fd);
int st__fsync_dir(const char *path);
void st__sweep_stale(const char *path);
int st__temp_is_stale(const char *name);
int st__rm_tree(const char *path);
void st__writeback(int fd, uint64_t off, uint64_t len);

/*
 * Files in the page cache and in mappings (file.c). ST__FOLIO is the
 * size of a huge page: output written in pieces that start and end on
 * its multiples lets the kernel keep the file in folios of that size
 * (Linux 6.x on ext4, xfs, tmpfs), which a mapping then maps with huge
 * pages. st__map maps n bytes of fd read-only and shared (MAP_FAILED and
 * errno on failure), asking for huge pages, so that pages read through
 * it come in as such folios: decode reads every weight once per token,
 * and with 4 KiB pages its TLB misses cost about a fifth of the time
 * (bench/README.md, "page cache").
 */
#define ST__FOLIO ((size_t)2 << 20)
void *st__map(int fd, size_t n);

/* The writer's canonical order: descending dtype rank, then name bytes. */
int st__tensor_cmp(const st_tensor *a, const st_tensor *b);

/* A byte source: a file descriptor, or memory when mem is set. */
struct st__src {
	int fd;
	const unsigned char *mem;
	uint64_t size;
};
/* Read exactly n bytes at off; -1 (errno 0 when past the end) on failure. */
int st__src_read(const struct st__src *s, void *buf, size_t n, uint64_t off);
/*
 * The members of a zip or tar container (archive.c, the one user of
 * libarchive). data_off is where a member's bytes lie uncompressed in the
 * file, checked against what libarchive reads, or ST__ARC_NOT_IN_PLACE.
 */
enum { ST__ARC_ZIP = 1, ST__ARC_TAR = 2 };
#define ST__ARC_NOT_IN_PLACE UINT64_MAX
struct st__arc_entry {
	char *name;
	uint64_t size;     /* declared, uncompressed */
	int sized;         /* the archive declared a size */
	uint64_t data_off;
	uint32_t crc;      /* a zip entry in place: its CRC-32 */
	int has_crc;
};
/* The CRC-32 (zip's) of n bytes after crc (0 to start); crc32.c. */
uint32_t st__crc32(uint32_t crc, const void *data, size_t n);
/* The CRC-32 of A then B from crc1 of A, crc2 of B and B's length. */
uint32_t st__arc_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);
struct st__arc {
	const struct st__src *src;
	int kind;
	struct st__arc_entry *e; /* in archive order */
	size_t n;
};
/* List src's members (ST_EFORMAT when it is no readable archive). */
int st__arc_open(struct st__arc *arc, const struct st__src *src, int kind,
                 struct st__report *r);
void st__arc_free(struct st__arc *arc);
/*
 * Member i through libarchive, CRC checked, in chunks to fn (which
 * returns ST_OK to go on); refused when it declares or produces more than
 * limit bytes or other than its declared size.
 */
int st__arc_stream(const struct st__arc *arc, size_t i, uint64_t limit,
                   int (*fn)(void *ctx, const void *data, size_t n),
                   void *ctx, struct st__report *r);
/* Member i whole into a malloc'd *out (same checks). */
int st__arc_read(const struct st__arc *arc, size_t i, uint64_t limit,
                 unsigned char **out, size_t *len, struct st__report *r);
/* Read every member (where want[i], or all when want is NULL) through
 * libarchive in one pass: CRCs, sizes. */
int st__arc_verify(const struct st__arc *arc, const unsigned char *want,
                   struct st__report *r);

/*
 * PyTorch checkpoints (torch.c): ST__TORCH_ZIP (torch.save since 1.6),
 * ST__TORCH_LEGACY (the pickle stream of 0.4-1.5), ST__TORCH_TAR (older).
 * st__torch_parse fills h with the tensors in data order, begin/end as
 * file offsets, and *t with how to read each: a plain tensor's bytes are
 * [begin, end) of the file; any other (a view, a compressed or byte-
 * swapped storage) is gathered by st__torch_read from base, the file's
 * bytes, and then [begin, end) is only the part of the file it reads.
 */
enum { ST__TORCH_ZIP = 1, ST__TORCH_LEGACY = 2, ST__TORCH_TAR = 3 };
struct st__torch;
int st__torch_parse(struct st__header *h, struct st__torch **t,
                    const struct st__src *src, int kind,
                    struct st__report *r);
void st__torch_free(struct st__torch *t);
int st__torch_kind(const struct st__torch *t);
int st__torch_plain(const struct st__torch *t, size_t i);
/* The tensor that i repeats exactly (same storage and view), or -1. */
long st__torch_alias_of(const struct st__torch *t, size_t i);
const st_torch_info *st__torch_info(const struct st__torch *t);
/* Bytes [off, off + n) of tensor i's contiguous form into buf. */
int st__torch_read(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t off, void *buf, size_t n, const char *name,
                   struct st__report *r);
/*
 * After file.c read bytes [off, off + n) of plain tensor i into buf (or,
 * buf NULL, handed out all of them in place at base): checks its
 * storage's CRC-32 once its last byte is read (see torch.c).
 */
int st__torch_seen(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t off, const void *buf, size_t n,
                   const char *name, struct st__report *r);
/* Tensor i's n_bytes contiguous bytes, copied once, kept until freed. */
int st__torch_data(struct st__torch *t, size_t i, const unsigned char *base,
                   uint64_t n_bytes, const void **data, const char *name,
                   struct st__report *r);

/* 1 when s is exactly n lowercase hex digits, as content hashes are named. */
int st__is_hex(const char *s, size_t n);

/*
 * A Hugging Face cache listing, trees/<commit>.json (json.c):
 * {"format_version": 1, "files": {path: {size, blob_id, lfs_sha256?,
 * lfs_size?}}}. blob_id is the git blob SHA-1 (40 hex), lfs_sha256 the
 * SHA-256 of an LFS file's content (64 hex). Returns ST_OK, ST_EFORMAT
 * (why says what is wrong), ST_EUNSUPPORTED (another format_version),
 * ST_ENOMEM.
 */
struct st__tree_entry {
	char *path;
	uint64_t size, lfs_size;
	int has_lfs;
	char blob_id[41], lfs_sha256[65];
};
struct st__tree {
	struct st__tree_entry *e;
	size_t n;
};
int st__tree_parse(struct st__tree *t, const char *text, size_t len,
                   char *why, size_t why_size);
void st__tree_free(struct st__tree *t);

/* ---- quant: the FP8 block size of a config.json's text (quant.c) -------- */

/*
 * st_config_read_block_size on a config.json's text already read (NULL:
 * none), file (may be NULL) its path for the message: the block size
 * st_quant_config_block_size gives, the default when text is NULL or not
 * a JSON object. Returns ST_OK or ST_EINVAL naming file.
 */
int st__config_block_size(const char *text, size_t len, const char *file, uint64_t *block_rows,
                          uint64_t *block_cols, int *found, st_error *err);

/* ---- arch: a read-only JSON tree over cJSON (json.c), for arch.c -------- */

/*
 * One value of a parsed document, borrowed from it until st__json_free of
 * its root. Every accessor takes NULL (an absent member) and answers as
 * for a value of no type: ST__JSON_ABSENT, NULL, 0. Strings are
 * NUL-terminated (an escaped NUL ends them: cJSON's limit).
 */
struct st__json;
enum st__json_type {
	ST__JSON_ABSENT = 0,
	ST__JSON_NULL,
	ST__JSON_FALSE,
	ST__JSON_TRUE,
	ST__JSON_NUMBER,
	ST__JSON_STRING,
	ST__JSON_ARRAY,
	ST__JSON_OBJECT
};
/* The JSON value at the start of len bytes of text, or NULL (not JSON, or
 * out of memory). What follows the value is not looked at. */
struct st__json *st__json_parse(const char *text, size_t len);
void st__json_free(struct st__json *root);
enum st__json_type st__json_type(const struct st__json *v);
/* A number's value (0 for another value); a string's text (else NULL). */
double st__json_number(const struct st__json *v);
const char *st__json_string(const struct st__json *v);
/* The member named key (case-sensitive); element i of an array; or NULL. */
const struct st__json *st__json_get(const struct st__json *object,
                                    const char *key);
const struct st__json *st__json_at(const struct st__json *array, size_t i);
/* The first element of an array or member of an object (NULL when empty
 * or another value), the one after v (NULL at the end), and a member's
 * name (NULL for an array element): a walk in document order, O(1) a
 * step where st__json_at is O(i). */
const struct st__json *st__json_first(const struct st__json *container);
const struct st__json *st__json_next(const struct st__json *v);
const char *st__json_key(const struct st__json *member);
/*
 * Compare the top-level members of two JSON object texts: fn(ctx, key,
 * a, b) once per key whose values differ or that one side lacks, with the
 * values as compact JSON text (NULL on the side that lacks the key), A's
 * keys in A's order, then B's own; a key given twice counts once, by its
 * first value. Returns how many, or ST_EFORMAT when either text is not a
 * JSON object (or memory ran out while parsing).
 */
typedef void (*st__json_diff_fn)(void *ctx, const char *key, const char *a,
                                 const char *b);
int st__json_object_diff(const char *a, size_t alen, const char *b,
                         size_t blen, st__json_diff_fn fn, void *ctx);

/* diagnose.c's element access and match rule, for diagnose_trace.c. */
double st__diagnose_get(const st_diagnose_tensor *t, uint64_t i);
int st__diagnose_match(double x, double y, double rtol, double atol, int *exact);
/* The trace-stage hypotheses of st_diagnose_checkpoints (doc/trace.md
 * names): refines or replaces *r; returns ST_OK or a read error. */
int st__diagnose_trace(st_checkpoint *ca, size_t ia, st_checkpoint *cb, size_t ib,
                       double rtol, double atol, st_diagnose_result *r,
                       st_error *err);
/* st_diagnose_describe of the Llama family's kinds (ST_DIAGNOSE_ROTARY_ROWS,
 * _ROW_SCALED, _ROTARY, _GQA) into buf[0 .. size), size > 0. */
void st__diagnose_describe_llama(const st_diagnose_result *r, char *buf, size_t size);

/* ---- hf_gguf: a tokenizer.json as tokenizer.ggml.* (hf_gguf_vocab.c) ------ */

/*
 * The GGUF vocabulary of a Hugging Face BPE tokenizer.json (and its
 * tokenizer_config.json), as convert_hf_to_gguf.py writes it: byte-level
 * BPE as get_vocab_base and SpecialVocab (model "gpt2"), SentencePiece-
 * style BPE (byte_fallback, a Sequence decoder) as _set_vocab_llama_hf and
 * gguf-py's LlamaHfVocab (model "llama", scores -1000, <0xHH> tokens BYTE,
 * no merges): n tokens by id (ids without one "[PAD<id>]", UNUSED), their
 * types (little-endian int32: 1 normal, 3 control, 4 user-defined, 5
 * unused, 6 byte), merges "a b", the pre-tokenizer's name and the special
 * ids (-1: none). The strings point into the parsed documents the struct
 * owns.
 */
struct st__hf_vocab {
	const char *model; /* tokenizer.ggml.model: "gpt2", or "llama" (static) */
	uint64_t n;
	st_gguf_value *tokens;
	unsigned char *types;
	unsigned char *scores; /* "llama": n little-endian float32, else NULL */
	int add_space_prefix;  /* "llama": -1 not said, 0, 1 */
	char *pads;
	st_gguf_value *merges;
	size_t n_merges;
	char *mtext;
	const char *pre;
	long long bos, eos, pad, unk;
	int add_bos, add_eos; /* -1: not said */
	struct st__json *tok, *cfg;
};
/*
 * Parse tokenizer.json (len bytes) and tokenizer_config.json (NULL: none)
 * for a model of n_vocab ids; name prefixes messages. Returns ST_OK;
 * ST_EUNSUPPORTED (not BPE, SentencePiece-style without byte_fallback and
 * a Sequence decoder, a Split regex llama.cpp has no name for); ST_EFORMAT (not JSON, an id out of range or
 * given twice, a merge that is not "a b" or [a, b]); ST_ENOMEM. On failure
 * *v is empty; free it with st__hf_vocab_free either way.
 */
int st__hf_vocab_parse(struct st__hf_vocab *v, const char *tok, size_t len, const char *cfg,
                       size_t cfg_len, uint64_t n_vocab, const char *name, st_error *err);
/* A GPT-2 vocab.json (an object {text: id}) and merges.txt ("#version"
 * then "a b" lines), as transformers' GPT2Tokenizer reads them:
 * <|endoftext|> a CONTROL token (the next free id when vocab.json lacks
 * it), pre "gpt-2", no special ids (the caller's). Errors as above. */
int st__hf_vocab_parse_pair(struct st__hf_vocab *v, const char *vocab, size_t vlen,
                            const char *merges, size_t mlen, uint64_t n_vocab,
                            const char *vname, const char *mname, st_error *err);
void st__hf_vocab_free(struct st__hf_vocab *v);

/*
 * llama3 rope scaling as llama.cpp's rope_freqs.weight holds it: out[i],
 * i < n, the divisor of rotary frequency i of a head of 2n dimensions
 * (LlamaModel.generate_extra_tensors, transformers'
 * _compute_llama3_parameters), the frequency in float32 and the rest in
 * double, as convert_hf_to_gguf.py computes it (libst/arch_gguf.c).
 */
void st__llama3_rope_freqs(double theta, double factor, double low, double high, double old,
                           float *out, uint64_t n);

#endif
