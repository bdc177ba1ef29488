/*
 * st/gguf.h - reading and writing GGUF files (llama.cpp's format), and
 * the ggml types.
 *
 * A GGUF file (versions 2 and 3, little-endian) is laid out as
 *
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv
 *   n_kv x      { string key, u32 value type, value }
 *   n_tensors x { string name, u32 n_dims, u64 dims[n_dims], u32 ggml type,
 *                 u64 offset }
 *   zero padding to a multiple of ALIGNMENT
 *   tensor data: each tensor at data start + offset, offsets multiples of
 *   ALIGNMENT ("general.alignment", u32, default 32)
 *
 * A string is a u64 byte length and the bytes (no NUL). A value is one of
 * the scalars below, a string, or an array: u32 element type, u64 count,
 * the elements (arrays may nest). dims[0] varies fastest (ggml's ne[0]):
 * a PyTorch tensor of shape [rows, cols] is stored with dims {cols, rows}.
 *
 * Recipe:
 *   1. st_gguf_open(&g, "model.gguf", &err)  reads only the header
 *   2. st_gguf_n_kv / st_gguf_kv_at / st_gguf_find_kv        the metadata
 *   3. st_gguf_n_tensors / st_gguf_tensor_at / st_gguf_find  the tensor infos
 *   4. st_gguf_tensor_data(g, i)   a borrowed view of the tensor's bytes;
 *      st_ggml_to_f32 decodes it to F32 (every float and quantized
 *      type ggml defines a dequantization for; doc/ggml.md)
 *   5. st_gguf_close(g)
 *
 * Opening checks every count, length and offset against the file before it
 * is used, and every rule below; the first problem is returned as
 * ST_EFORMAT with a message naming the file, the key or tensor, and the
 * numbers. st_gguf_check_file() reports every problem.
 */
#ifndef ST_GGUF_H
#define ST_GGUF_H

#include "convert.h"
#include "file.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct st_gguf st_gguf;

/* Metadata value types, with the numbers the file uses. */
typedef enum st_gguf_type {
	ST_GGUF_UINT8 = 0,
	ST_GGUF_INT8 = 1,
	ST_GGUF_UINT16 = 2,
	ST_GGUF_INT16 = 3,
	ST_GGUF_UINT32 = 4,
	ST_GGUF_INT32 = 5,
	ST_GGUF_FLOAT32 = 6,
	ST_GGUF_BOOL = 7,
	ST_GGUF_STRING = 8,
	ST_GGUF_ARRAY = 9,
	ST_GGUF_UINT64 = 10,
	ST_GGUF_INT64 = 11,
	ST_GGUF_FLOAT64 = 12,
	ST_GGUF_TYPE_COUNT
} st_gguf_type;

/* The spec's name of a value type ("uint32", "string", ...); NULL if unknown. */
ST_API const char *st_gguf_type_name(int type);

/* Arrays nest at most this deep (an array of arrays of u8 is depth 2). */
#define ST_GGUF_MAX_DEPTH 16
/* Tensors have at most this many dimensions (ggml's GGML_MAX_DIMS). */
#define ST_GGUF_MAX_DIMS 4
/* The alignment when general.alignment is absent. */
#define ST_GGUF_DEFAULT_ALIGNMENT 32

/*
 * One metadata value. Owned by the st_gguf; valid until st_gguf_close.
 *   numbers and bools: v.u (UINT*, BOOL), v.i (INT*), v.f (FLOAT*); a
 *   BOOL is the byte as stored: not 0 is true (ggml's reading; the spec's
 *   0 or 1 is checked as a warning)
 *   STRING: v.s, n bytes (not NUL-terminated; may hold any bytes)
 *   ARRAY: elem_type and n elements; read them with st_gguf_array_get
 */
typedef struct st_gguf_value {
	int type;      /* st_gguf_type */
	int elem_type; /* ARRAY: the elements' type */
	uint64_t n;    /* STRING: bytes; ARRAY: elements */
	union {
		uint64_t u;
		int64_t i;
		double f;
		const char *s;
		const void *raw;                  /* ARRAY of numbers: file bytes */
		const struct st_gguf_value *vals; /* ARRAY of strings or arrays */
	} v;
} st_gguf_value;

/* Element i (< arr->n) of an array, as a value of arr->elem_type. */
ST_API void st_gguf_array_get(const st_gguf_value *arr, uint64_t i,
                              st_gguf_value *out);

/*
 * One key/value pair; key is key_len bytes, NUL-terminated. The spec asks
 * for ASCII; keys that are not (UTF-8 or other bytes, a NUL inside, more
 * than 65535 bytes) are read, as ggml and gguf-py read them, and checking
 * warns about them.
 */
typedef struct st_gguf_kv {
	const char *key;
	size_t key_len;
	st_gguf_value value;
} st_gguf_kv;

/*
 * ggml tensor types, with the numbers the file uses. The gaps (4, 5,
 * 31-33, 36-38) are types ggml has removed. A tensor of a type number
 * libst does not know (a removed or a future one) does not stop a file
 * from opening: it is listed with its type number as stored, n_bytes 0
 * (its size is unknown) and st_ggml_type_name() NULL, and checking
 * reports it as a warning. Only its start can be checked: its offset must
 * be aligned, inside the data section and not inside the tensor before
 * it; whether a later tensor starts inside it cannot be known.
 */
enum {
	ST_GGML_F32 = 0, ST_GGML_F16 = 1, ST_GGML_Q4_0 = 2, ST_GGML_Q4_1 = 3,
	ST_GGML_Q5_0 = 6, ST_GGML_Q5_1 = 7, ST_GGML_Q8_0 = 8, ST_GGML_Q8_1 = 9,
	ST_GGML_Q2_K = 10, ST_GGML_Q3_K = 11, ST_GGML_Q4_K = 12,
	ST_GGML_Q5_K = 13, ST_GGML_Q6_K = 14, ST_GGML_Q8_K = 15,
	ST_GGML_IQ2_XXS = 16, ST_GGML_IQ2_XS = 17, ST_GGML_IQ3_XXS = 18,
	ST_GGML_IQ1_S = 19, ST_GGML_IQ4_NL = 20, ST_GGML_IQ3_S = 21,
	ST_GGML_IQ2_S = 22, ST_GGML_IQ4_XS = 23, ST_GGML_I8 = 24,
	ST_GGML_I16 = 25, ST_GGML_I32 = 26, ST_GGML_I64 = 27, ST_GGML_F64 = 28,
	ST_GGML_IQ1_M = 29, ST_GGML_BF16 = 30, ST_GGML_TQ1_0 = 34,
	ST_GGML_TQ2_0 = 35, ST_GGML_MXFP4 = 39, ST_GGML_NVFP4 = 40,
	ST_GGML_Q1_0 = 41, ST_GGML_Q2_0 = 42, ST_GGML_TYPE_COUNT = 43
};

/* ggml's name of a tensor type ("F32", "Q8_0", "IQ4_XS"...); NULL if unknown. */
ST_API const char *st_ggml_type_name(unsigned type);
/* Look a name up (exact, case-sensitive). ST_OK and *type, or ST_ENOTFOUND. */
ST_API int st_ggml_type_from_name(const char *name, unsigned *type);
/*
 * A type's block: *block elements are stored in *bytes bytes (F32: 1, 4;
 * Q8_0: 32, 34; Q4_K: 256, 144). Returns ST_OK, or ST_ENOTFOUND.
 */
ST_API int st_ggml_type_block(unsigned type, unsigned *block, unsigned *bytes);
/*
 * A type's bits per weight, its block's bytes * 8 / its elements (F32: 32,
 * Q8_0: 8.5, Q4_K: 4.5, IQ2_XXS: 2.0625), exact. A tensor's is its
 * type's; a file's is its tensors' bytes * 8 / their elements.
 * Returns ST_OK, or ST_ENOTFOUND (*bits untouched).
 */
ST_API int st_ggml_type_bits(unsigned type, double *bits);
/*
 * The safetensors dtype with the same element layout (F32, F16, BF16, F64,
 * I8, I16, I32, I64). Returns ST_OK, or ST_ENOTFOUND for block types.
 */
ST_API int st_ggml_type_dtype(unsigned type, st_dtype *out);

/*
 * Decode n elements (a multiple of the type's block) of a ggml type from
 * src (the bytes as the file stores them, any alignment) into dst: F32,
 * F16, BF16, and every quantized type ggml defines a dequantization for,
 * Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1, Q2_K..Q6_K Q8_K, IQ1_S IQ1_M IQ2_XXS
 * IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ4_NL IQ4_XS, TQ1_0 TQ2_0, MXFP4 NVFP4,
 * Q1_0 Q2_0. Every float has the bits of ggml's own to_float (Q8_1 and
 * Q8_K, which ggml does not decode: d * q); the layouts are described in
 * doc/ggml.md. Whole blocks at a time, with no state and no allocation,
 * so a tensor can be decoded in chunks of any whole number of blocks.
 * Returns ST_OK, ST_EINVAL (n not whole blocks), ST_EUNSUPPORTED (the
 * integer and F64 types, or a type number libst does not know). With
 * n = 0 nothing is read or written: the result says whether a type
 * decodes (ST_OK) or not (ST_EUNSUPPORTED).
 */
ST_API int st_ggml_to_f32(unsigned type, const void *src, float *dst,
                          uint64_t n);
/*
 * Encode n floats (a multiple of the block) as F32, F16, BF16 (round to
 * nearest even, as st_convert) or Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, byte for
 * byte as ggml's quantize_row_<type>_ref (the quantizer of llama.cpp's
 * converters and of ggml_quantize_chunk without an importance matrix).
 * Per block of 32, in float32, with id = 1 / d (0 when d is 0) and d, m
 * stored as F16:
 *   Q4_0  d = max / -8 (max: the value of largest magnitude, with its
 *         sign, the first of a tie), q = min(15, trunc(x * id + 8.5))
 *   Q5_0  d = max / -16, q = min(31, trunc(x * id + 16.5))
 *   Q4_1  d = (max - min) / 15, m = min, q = min(15, trunc((x - min) * id + 0.5))
 *   Q5_1  d = (max - min) / 31, m = min, q = trunc((x - min) * id + 0.5)
 *   Q8_0  d = amax / 127, q = roundf(x * id)
 * NaN inputs are skipped when the scale is chosen (Q8_0: as ggml's MAX
 * does) and, like any q that is NaN or infinite (Inf * 0), stored as 0,
 * what ggml's x86-64 build stores (C leaves that cast undefined); a
 * block of +Inf only keeps ggml's min = FLT_MAX. gguf-py's
 * quants.quantize differs there (doc/ggml.md).
 * Returns ST_OK, ST_EINVAL, ST_EUNSUPPORTED.
 */
ST_API int st_ggml_from_f32(unsigned type, const float *src, void *dst,
                            uint64_t n);

/*
 * One tensor info. dims[0] varies fastest. offset counts from the start of
 * the data section (st_gguf_data_offset). name is NUL-terminated.
 */
typedef struct st_gguf_tensor {
	const char *name;
	size_t name_len;
	unsigned type;    /* ST_GGML_* */
	unsigned ndim;
	uint64_t dims[ST_GGUF_MAX_DIMS]; /* unused ones are 1 */
	uint64_t n_elements;
	uint64_t offset;
	uint64_t n_bytes;
} st_gguf_tensor;

/*
 * Open a GGUF file. Maps the file read-only and parses the header; tensor
 * data is not read (a 300 GB file opens as fast as a small one).
 * On success *out is the new handle (free with st_gguf_close).
 * Returns ST_OK, ST_EIO (cannot open, stat or map), ST_EFORMAT (a rule
 * broken: bad magic, unknown version, a count, length or offset past the end
 * of the file, an unknown value or tensor type, misaligned or overlapping
 * tensor data, arrays nested deeper than ST_GGUF_MAX_DEPTH...), ST_ENOMEM.
 */
ST_API int st_gguf_open(st_gguf **out, const char *path, st_error *err);
/* The same for a file in memory; buf must outlive the handle. */
ST_API int st_gguf_open_memory(st_gguf **out, const void *buf, size_t len,
                               const char *name, st_error *err);
/* Close and free everything; views become invalid. NULL does nothing. */
ST_API void st_gguf_close(st_gguf *g);

/* 1 when the first four bytes of a file of len bytes are "GGUF". */
ST_API int st_gguf_is_gguf(const void *head, size_t len);

ST_API const char *st_gguf_path(const st_gguf *g);
ST_API unsigned st_gguf_version(const st_gguf *g);  /* 2 or 3 */
ST_API uint64_t st_gguf_size(const st_gguf *g);     /* whole file */
ST_API uint64_t st_gguf_alignment(const st_gguf *g);
/* File offset of the data section (the header, padded); its size. */
ST_API uint64_t st_gguf_data_offset(const st_gguf *g);
ST_API uint64_t st_gguf_data_size(const st_gguf *g);

/* Metadata in file order; st_gguf_find_kv gives the index of key or -1. */
ST_API size_t st_gguf_n_kv(const st_gguf *g);
ST_API const st_gguf_kv *st_gguf_kv_at(const st_gguf *g, size_t i);
ST_API long st_gguf_find_kv(const st_gguf *g, const char *key);

/* Tensor infos in file order; st_gguf_find gives the index of name or -1. */
ST_API size_t st_gguf_n_tensors(const st_gguf *g);
ST_API const st_gguf_tensor *st_gguf_tensor_at(const st_gguf *g, size_t i);
ST_API long st_gguf_find(const st_gguf *g, const char *name);
/*
 * Borrow tensor i's n_bytes bytes: a pointer into the mapping (or the
 * memory buffer), valid until st_gguf_close. Reading it reads the file.
 */
ST_API const void *st_gguf_tensor_data(const st_gguf *g, size_t i);

/*
 * Check one GGUF file against every rule and report each problem to fn
 * (st_problem_fn of st/file.h). Returns the number of errors (>= 0), or
 * ST_EIO when the path cannot be read at all (fn is not called).
 * Warnings (the file still opens): what the spec allows but ggml's loader
 * refuses, each beginning "llama.cpp will refuse this: " (an array of
 * arrays; tensor data not packed in file order from offset 0, each padded
 * to the alignment; a tensor name of 64 bytes; an unknown tensor type; a
 * string or an array longer than 2^30);
 * what the spec forbids but ggml and gguf-py read (a bool byte above 1, a
 * key not ASCII or holding a NUL or longer than 65535 bytes, an alignment
 * of 1, 2 or 4); every key, string, string element or tensor name that is
 * not valid UTF-8; missing required keys.
 */
ST_API int st_gguf_check_file(const char *path, st_problem_fn fn, void *ctx,
                              st_error *err);
/* The same for a file in memory. */
ST_API int st_gguf_check_memory(const void *buf, size_t len, const char *name,
                                st_problem_fn fn, void *ctx);

/*
 * Split sets: one model in N files PREFIX-00001-of-0000N.gguf ...
 * PREFIX-0000N-of-0000N.gguf, as llama.cpp's gguf-split and gguf-py's
 * writer make them. Each part is a GGUF file with the keys split.no (its
 * number from 0), split.count (N) and split.tensors.count (the set's
 * tensors); the first part holds the metadata, every tensor is in one
 * part.
 *
 * st_gguf_open_set opens the file at path, and when it is a part of a set
 * (split.count > 1) every part, as one handle: any part's path names the
 * set. Its metadata is the first part's; its tensors are every part's,
 * in part order, each offset counting from its own part's data section;
 * st_gguf_tensor_data reads from the right part; st_gguf_size and
 * st_gguf_data_size sum the parts; version, alignment and data offset
 * are the first part's. A file that is not split opens as st_gguf_open
 * opens it (one part). Returns as st_gguf_open, and ST_EFORMAT for a set
 * that breaks a rule: a missing part, a name that does not fit its
 * split.no and split.count, a part of another set (another split.count
 * or split.tensors.count, or a split.no its name contradicts), a tensor
 * in two parts, a split.tensors.count the parts do not add up to; the
 * message names the part.
 */
ST_API int st_gguf_open_set(st_gguf **out, const char *path, st_error *err);
/* Parts of a handle (1 for a single file), and part k's own handle. */
ST_API size_t st_gguf_n_parts(const st_gguf *g);
ST_API const st_gguf *st_gguf_part(const st_gguf *g, size_t k);
/* The part tensor i (of st_gguf_tensor_at) lies in. */
ST_API size_t st_gguf_tensor_part(const st_gguf *g, size_t i);
/*
 * Check the file at path as st_gguf_check_file does and, when it is a
 * part of a set, every part (one at a time) and the set's rules, each
 * problem reported naming its part; also files beside the set named as
 * parts of another split of it (PREFIX-00004-of-00004.gguf beside a set
 * of 3). Returns the number of errors (>= 0), or ST_EIO when path cannot
 * be read at all, ST_ENOMEM.
 */
ST_API int st_gguf_check_set(const char *path, st_problem_fn fn, void *ctx,
                             st_error *err);
/*
 * llama.cpp's llama_split_path and llama_split_prefix: out gets
 * "PREFIX-%05d-of-%05d.gguf" for part no (from 0) of count; or, from a
 * path ending in that suffix, the prefix before it. Return the length
 * written, 0 when out (size bytes) is too small or path does not end in
 * the suffix.
 */
ST_API size_t st_gguf_split_path(char *out, size_t size, const char *prefix,
                                 unsigned no, unsigned count);
ST_API size_t st_gguf_split_prefix(char *out, size_t size, const char *path,
                                   unsigned no, unsigned count);

/*
 * Writing a GGUF file (version 3), atomically, in bounded memory.
 *
 * Recipe:
 *   1. st_gguf_writer_new(&w, &err)
 *   2. st_gguf_writer_set(w, "general.architecture", &v, &err) per key, in
 *      the order the file should hold them (general.alignment, if set,
 *      before the first tensor); values are copied: strings from v.s/n,
 *      arrays of numbers from v.raw (little-endian, as a file holds them),
 *      arrays of strings or arrays from v.vals
 *   3. st_gguf_writer_add_tensor(w, name, ST_GGML_F16, ndim, dims, &err)
 *      per tensor; dims[0] varies fastest. Tensors are packed in this
 *      order, each at the next multiple of the alignment
 *   4. st_gguf_writer_open(w, "out.gguf", &err)   a temporary file beside it
 *      and the header
 *   5. st_gguf_writer_write(w, data, n, &err) with every tensor's bytes in
 *      order, in chunks of any size; the writer adds the padding
 *   6. st_gguf_writer_finish(w, &err)   sync, rename into place
 *   7. st_gguf_writer_free(w)   removes the temporary file if not finished
 *
 * Each returns ST_OK, ST_EINVAL (a key that is empty, not ASCII or set
 * twice; a bad alignment; a tensor name of more than 64 bytes or twice;
 * an unknown type; rows that are not whole blocks; more data than
 * declared), ST_ESTATE (out of order; data missing at finish), ST_EIO
 * (errno kept), ST_ENOMEM.
 */
typedef struct st_gguf_writer st_gguf_writer;

ST_API int st_gguf_writer_new(st_gguf_writer **out, st_error *err);
ST_API int st_gguf_writer_set(st_gguf_writer *w, const char *key,
                              const st_gguf_value *v, st_error *err);
ST_API int st_gguf_writer_add_tensor(st_gguf_writer *w, const char *name,
                                     unsigned type, unsigned ndim,
                                     const uint64_t *dims, st_error *err);
ST_API int st_gguf_writer_open(st_gguf_writer *w, const char *path,
                               st_error *err);
ST_API int st_gguf_writer_write(st_gguf_writer *w, const void *data,
                                size_t n, st_error *err);
ST_API int st_gguf_writer_finish(st_gguf_writer *w, st_error *err);
/* Free the writer; an unfinished file's temporary is removed. NULL: no-op. */
ST_API void st_gguf_writer_free(st_gguf_writer *w);

/* ---- a Hugging Face snapshot as a GGUF file (libst/hf_gguf.c) ----------- */

/* What st_hf_write_gguf writes. Zeroed: the source's type, tokenizer.json
 * required, general.name the snapshot folder's name. */
typedef struct st_hf_gguf_options {
	int has_type;       /* write the matrices as `type` */
	unsigned type;      /* ST_GGML_F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 */
	int stand_in_vocab; /* no tokenizer.json: one token "<t<id>>" per id,
	                     * no merges, pre "default" (ids fed as ids) */
	const char *name;   /* general.name; NULL: the folder's name */
} st_hf_gguf_options;

/* What it wrote. */
typedef struct st_hf_gguf_result {
	const char *arch;   /* general.architecture: "llama", "qwen2", "qwen3" */
	unsigned type;      /* the matrices' type (ST_GGML_*) */
	unsigned file_type; /* general.file_type (llama.cpp's llama_ftype) */
	size_t n_in;        /* the checkpoint's tensors */
	size_t n_tensors;   /* written (rope_freqs.weight included) */
	size_t n_fallback;  /* matrices written F16: rows not whole blocks */
	size_t n_skipped;   /* legacy buffers, a tied lm_head: left out */
	uint64_t in_bytes, out_bytes; /* tensor data read and written */
	uint64_t n_tokens;  /* tokenizer.ggml.tokens */
	const char *model;  /* tokenizer.ggml.model: "gpt2" or "llama" (static) */
	const char *pre;    /* tokenizer.ggml.pre (static) */
	int stand_in;       /* 1: the stand-in vocabulary was written */
} st_hf_gguf_result;

/*
 * Write the Hugging Face checkpoint at snapshot (a snapshot directory,
 * anything st_checkpoint_open takes with ST_OPEN_TORCH, with config.json
 * beside it) of model_type gpt2, llama, mistral, qwen2 or qwen3 as one
 * GGUF file at path, as convert_hf_to_gguf.py writes it
 * (doc/gguf_export.md; GPT-2 as gpt2export wrote it, its section there):
 *   general.architecture  llama (Mistral's too), qwen2, qwen3
 *   <a>.context_length, embedding_length, feed_forward_length,
 *   block_count, attention.head_count, head_count_kv, rope.freq_base,
 *   attention.layer_norm_rms_epsilon, attention.key_length,
 *   value_length (head_dim); llama: vocab_size, rope.dimension_count,
 *   rope.scaling.type/.factor for rope_scaling linear
 *   general.file_type     llama_ftype of the type; quantization_version 2
 *   tokenizer.ggml.*      tokenizer.json's byte-level BPE: model "gpt2",
 *                         pre (st_gguf_pre_from_pattern), tokens by id
 *                         (gaps "[PAD<id>]", UNUSED), token_type (added
 *                         special tokens CONTROL, other added ones
 *                         USER_DEFINED), merges "a b"; bos/eos/unk/pad
 *                         ids from tokenizer_config.json's tokens (else
 *                         config.json's bos/eos_token_id), add_bos_token
 *                         and add_eos_token when it says; a
 *                         SentencePiece-style BPE (byte_fallback, a
 *                         Sequence decoder: Llama 2, Mistral) as model
 *                         "llama", pre "default", scores -1000, <0xHH>
 *                         tokens BYTE, no merges (convert_hf_to_gguf's
 *                         _set_vocab_llama_hf)
 * Tensors in checkpoint order, renamed by st_arch_to_gguf; llama's q/k
 * rows permuted (st_arch_permuted_row); rope_scaling llama3 adds
 * rope_freqs.weight (first); a tied lm_head and legacy buffers are left
 * out. Vectors are F32, matrices `type` (default: the source's one float
 * type, F32 when mixed), F16 when their rows are not whole blocks of it;
 * st_ggml_from_f32 encodes (ggml's reference quantizers; NaN as it
 * documents). GPT-2: its own keys (gpt2.block_count, context_length,
 * embedding_length, feed_forward_length, attention.head_count,
 * attention.layer_norm_epsilon), the model's tensor order, Conv1D weights
 * transposed, an untied lm_head refused (ST_EUNSUPPORTED), the
 * vocabulary of tokenizer.json or vocab.json + merges.txt, pre "gpt-2",
 * fillers USER_DEFINED, bos <|endoftext|>, eos generation_config.json's
 * (else config.json's, else <|endoftext|>), add_bos_token false, no
 * stand-in (ST_EINVAL). Memory: 512 KiB of buffers (GPT-2: and a band of
 * a Conv1D weight's rows) whatever the sizes. Atomic
 * (st_gguf_writer). r (may be NULL): progress in input bytes, cancel,
 * note: the warnings (ST_PROBLEM_WARNING: a sliding_window not written)
 * and notes (ST_PROBLEM_NOTE: a tensor left out or written F16). res
 * (may be NULL) says what was written.
 * Returns ST_OK; st_checkpoint_open's and st_config_read's errors;
 * ST_EUNSUPPORTED (another architecture, a tensor not F32/F16/BF16,
 * rope_scaling other than linear/llama3 of llama, a tokenizer that is not
 * BPE, or SentencePiece-like without byte_fallback and a Sequence decoder,
 * or whose regex llama.cpp has no name for); ST_EFORMAT (a
 * config size missing or out of range, a tensor missing, misshapen or
 * not a parameter, a malformed tokenizer.json); ST_ENOTFOUND (no
 * tokenizer.json and no stand-in asked for; GPT-2: nor vocab.json and
 * merges.txt); ST_EINVAL (another type);
 * the writer's errors; ST_EIO "cancelled". Nothing is left at path on
 * failure.
 */
ST_API int st_hf_write_gguf(const char *snapshot, const char *path,
                            const st_hf_gguf_options *o, const st_convert_run *r,
                            st_hf_gguf_result *res, st_error *err);


/* ---- a GGUF file as safetensors (libst/gguf_convert.c) ------------------ */

/* What st_gguf_write_safetensors writes. Zeroed: nothing is lost. */
typedef struct st_gguf_convert_options {
	int has_to;  /* convert every float tensor to `to` */
	st_dtype to; /* F32, F16 or BF16 */
	int hf;      /* 1: Hugging Face names and layout (st_gguf_hf_name):
	              * llama's q/k rows put back in HF's order, GGUF-only
	              * tensors (rope_freqs) left out; llama, qwen2, qwen3 */
} st_gguf_convert_options;

/*
 * The safetensors dtype a tensor of ggml type `type` is written in. o may
 * be NULL (zeroed options): F32, F16, BF16, F64 and the integer types keep
 * theirs and every quantized type is decoded to F32; with o->has_to every
 * float (quantized ones included) becomes o->to, the integers keep
 * theirs. Returns ST_OK, or ST_EUNSUPPORTED for a type that cannot be
 * decoded (unknown to libst).
 */
ST_API int st_gguf_out_dtype(unsigned type, const st_gguf_convert_options *o,
                             st_dtype *out);

/*
 * Write every tensor of g as one safetensors file at path (st_writer: a
 * temporary file beside it, renamed at the end; on failure nothing is
 * left). Each tensor keeps its GGUF name and gets its shape in row-major
 * order (the dims reversed: ggml's {cols, rows} is [rows, cols]) and the
 * dtype st_gguf_out_dtype gives; quantized types are decoded with
 * st_ggml_to_f32 (ggml's own to_float, bit for bit) and narrowed, if asked,
 * with st_convert's round to nearest even. The tensors are decoded on
 * r's threads (chunks of whole blocks, written in order: the output's
 * bytes do not depend on the count). Memory: per thread two 4 MiB chunks
 * and 256 KiB of scratch, whatever the tensors' sizes. The metadata is
 * {"format": "pt"}. r (may be NULL) gives the threads, progress, in input
 * bytes, and cancelling; stats (may be NULL) is incremented with what
 * narrowing lost. Returns ST_OK, ST_EINVAL (to is not F32, F16 or BF16),
 * ST_EUNSUPPORTED (a tensor of a type that cannot be decoded, named; no
 * file is written), ST_EIO ("cancelled", or a failed write), the writer's
 * errors (a GGUF name that is not UTF-8). With o->hf the tensors get their
 * Hugging Face names instead (st_gguf_hf_name; its errors, and none is
 * written for a tensor it leaves out), the shapes are the same (a gpt2
 * Conv1D weight too: GGUF's [out, in], which only st_gguf_write_snapshot
 * turns back into HF's layout), and a
 * llama q/k weight or bias is written a row at a time in HF's row order
 * (st_arch_permuted_row read backwards; the heads are
 * llama.attention.head_count for q, head_count_kv for k): ST_EFORMAT when
 * its rows are not those heads of an even size.
 */
ST_API int st_gguf_write_safetensors(const st_gguf *g, const char *path,
                                     const st_gguf_convert_options *o,
                                     const st_convert_run *r,
                                     st_convert_stats *stats, st_error *err);
/* The same to the open descriptor fd (st_writer_open_fd); name for messages. */
ST_API int st_gguf_write_safetensors_fd(const st_gguf *g, int fd, const char *name,
                                        const st_gguf_convert_options *o,
                                        const st_convert_run *r, st_convert_stats *stats,
                                        st_error *err);

/* ---- a GGUF back to a Hugging Face snapshot (Llama family) -------------- */

/*
 * The map of g's general.architecture: *arch is "gpt2", "llama"
 * (Mistral's too), "qwen2" or "qwen3" (static). Returns ST_OK, or
 * ST_EUNSUPPORTED naming the architecture or saying there is none.
 */
ST_API int st_gguf_hf_arch(const st_gguf *g, const char **arch, st_error *err);

/*
 * Tensor i's Hugging Face name under g's map (st_arch_from_gguf) into out
 * (size bytes, NUL-terminated; 128 is enough), and *permute (may be NULL):
 * 0, or ST_ARCH_PERMUTE_Q / _K of st/arch.h for llama's q/k. Returns
 * ST_OK; ST_ENOTFOUND for a tensor the conversion computed, not converted
 * (st_arch_gguf_derived: llama3's rope_freqs.weight), which has no HF
 * tensor (err says what it is); ST_EFORMAT for a tensor the map does not
 * know; st_gguf_hf_arch's errors.
 */
ST_API int st_gguf_hf_name(const st_gguf *g, size_t i, char *out, size_t size, int *permute,
                           st_error *err);

/* What st_gguf_hf_config could not give back (bits of *lost). */
#define ST_GGUF_HF_LOST_ROPE_SCALING 1u /* a llama3 rope_freqs.weight that
                                         * no rope_scaling tried gives
                                         * (doc/llama.md): none written */
#define ST_GGUF_HF_LOST_TOKENIZER 2u    /* st_gguf_write_snapshot: no
                                         * tokenizer.ggml.model, no
                                         * tokenizer files */
#define ST_GGUF_HF_LOST_TOKENIZER_UNSUPPORTED 4u /* ... a tokenizer.ggml.model
                                                  * or .pre that is not
                                                  * rebuilt: none written */

/*
 * config.json for g (convert_hf_to_gguf.py's set_gguf_parameters read
 * backwards; <a> is general.architecture):
 *   architectures, model_type  llama: LlamaForCausalLM, "llama";
 *                              qwen2: Qwen2ForCausalLM; qwen3: Qwen3ForCausalLM
 *   hidden_size                <a>.embedding_length
 *   intermediate_size          <a>.feed_forward_length
 *   num_hidden_layers          <a>.block_count
 *   num_attention_heads        <a>.attention.head_count
 *   num_key_value_heads        <a>.attention.head_count_kv (else head_count)
 *   head_dim                   qwen3: <a>.attention.key_length
 *   max_position_embeddings    <a>.context_length
 *   rms_norm_eps               <a>.attention.layer_norm_rms_epsilon
 *   rope_theta                 <a>.rope.freq_base
 *   rope_scaling               linear: <a>.rope.scaling.type, .factor;
 *                              llama3: four numbers that give
 *                              rope_freqs.weight's divisors (doc/llama.md)
 *   bos_token_id, eos_token_id tokenizer.ggml.bos_token_id, eos_token_id
 *   vocab_size                 token_embd.weight's rows
 *   tie_word_embeddings        whether output.weight is absent
 *   attention_bias             llama: whether blk.0.attn_q.bias exists
 *   hidden_act                 "silu"; torch_dtype: dtype's name
 * For gpt2 it is a GPT2LMHeadModel's config, the keys gpt2export writes
 * (transformers 4.46.3's save_pretrained, plus n_ctx): n_ctx and
 * n_positions gpt2.context_length, n_embd .embedding_length, n_head
 * .attention.head_count, n_layer .block_count, n_inner
 * .feed_forward_length when not 4 * n_embd (else null),
 * layer_norm_epsilon .attention.layer_norm_epsilon (required), bos/eos
 * ids (bos defaults to eos, eos to 50256 when the vocabulary has it, else
 * null), vocab_size and torch_dtype as above, GPT-2's constants for the
 * rest.
 * Floats are written as the shortest decimal that reads back to the
 * stored value (a FLOAT32 1e-05 as 1e-05). *json (malloc'd, free()) holds
 * *len bytes and a NUL; *lost (may be NULL) gets
 * ST_GGUF_HF_LOST_ROPE_SCALING when a rope_freqs.weight stood for a
 * rope_scaling that is not written. Returns ST_OK; ST_EFORMAT naming a
 * missing or out-of-range key (a count must be 1 to 2^31) or a missing
 * token_embd.weight; st_gguf_hf_arch's errors; ST_ENOMEM.
 */
ST_API int st_gguf_hf_config(const st_gguf *g, st_dtype dtype, char **json, size_t *len,
                             unsigned *lost, st_error *err);

/*
 * generation_config.json for g: bos_token_id, eos_token_id, pad_token_id
 * from tokenizer.ggml.bos_token_id, eos_token_id, padding_token_id, each
 * one only when present and below vocab_size ({} when none is). For gpt2:
 * _from_model_config, bos_token_id and eos_token_id as its config.json
 * has them, transformers_version. *json as
 * st_gguf_hf_config's. Returns ST_OK, ST_EFORMAT (no token_embd.weight),
 * ST_ENOMEM.
 */
ST_API int st_gguf_hf_generation_config(const st_gguf *g, char **json, size_t *len,
                                        st_error *err);

/*
 * Write g as a Hugging Face snapshot directory dir (st/snapshot.h: a
 * temporary sibling put in place at the end; on failure dir is as it
 * was, absent when it was): model.safetensors as st_gguf_write_safetensors
 * writes it with o->hf set (o may be NULL: nothing lost), config.json
 * (st_gguf_hf_config, torch_dtype what token_embd.weight is written in),
 * generation_config.json, and tokenizer.json and tokenizer_config.json
 * (st_gguf_hf_tokenizer, st_gguf_hf_tokenizer_config). flags:
 * ST_SNAPSHOT_REPLACE to replace an existing dir (whose files are all
 * dropped), with ST_GGUF_SNAPSHOT_KEEP_OLD to carry over what it held but
 * its weights and the files written (st_snapshot_keep_old: a README, an
 * earlier sharded save's shards not), as gpt2export's --force does. *lost as st_gguf_hf_config gives it, and
 * ST_GGUF_HF_LOST_TOKENIZER when g has no tokenizer.ggml.model or
 * ST_GGUF_HF_LOST_TOKENIZER_UNSUPPORTED when its model or pre-tokenizer is
 * not one st_gguf_hf_tokenizer rebuilds (the snapshot is written without
 * tokenizer files). A gpt2 g (libst/gguf_hf_gpt2.c) must hold exactly
 * GPT-2's 4 + 12 * gpt2.block_count tensors of the shapes its keys give
 * (ST_EFORMAT naming a tensor that is not one, or of another shape); its
 * Conv1D weights (attn_qkv, attn_output, ffn_up, ffn_down) are written in
 * HF's [in, out] layout a band of rows at a time (buffers of at most 256
 * times the output width in floats, twice), no lm_head (tied), and
 * vocab.json and merges.txt join the tokenizer files. Returns ST_OK, or
 * the errors of the functions above (a malformed tokenizer is ST_EFORMAT:
 * nothing is written), st_snapshot_open's and the writer's.
 */
#define ST_GGUF_SNAPSHOT_KEEP_OLD 2u /* st_gguf_write_snapshot's flags */
ST_API int st_gguf_write_snapshot(const st_gguf *g, const char *dir, unsigned flags,
                                  const st_gguf_convert_options *o, const st_convert_run *r,
                                  st_convert_stats *stats, unsigned *lost, st_error *err);

/* ---- a GGUF's tokenizer as Hugging Face's files (gguf_tokenizer.c) ------ */

/*
 * tokenizer.json (Hugging Face tokenizers' format) for g's
 * tokenizer.ggml.* keys, as the files llama.cpp's converter read them
 * from lay them out. Both models are "BPE"; model.vocab holds every token
 * under its id (a token whose text an earlier id has is left out: it can
 * never be produced); added_tokens are the unknown, control (special) and
 * user-defined (not special) tokens of tokenizer.ggml.token_type.
 *   tokenizer.ggml.model "gpt2": byte-level; merges tokenizer.ggml.merges
 *     ("a b", split at the first space after the first byte; a, b and ab
 *     must be tokens); tokenizer.ggml.pre (st_gguf_pre_find; absent:
 *     GPT-2's): gpt-2 pre_tokenizer ByteLevel(use_regex true); llama-bpe
 *     and qwen2 Sequence[Split(the pattern, Isolated), ByteLevel(use_regex
 *     false)], qwen2 with an NFC normalizer, llama-bpe with
 *     model.ignore_merges; decoder and post_processor ByteLevel.
 *   "llama" (SentencePiece): Llama 2's layout: normalizer Prepend("\u2581",
 *     unless tokenizer.ggml.add_space_prefix is false) and Replace(" ",
 *     "\u2581"), no pre_tokenizer, byte_fallback, fuse_unk, unk_token the
 *     tokenizer.ggml.unknown_token_id's text, decoder Replace, ByteFallback,
 *     Fuse, Strip; merges as transformers' SentencePiece converter makes
 *     them: each normal token split into two tokens, ordered by the
 *     token's tokenizer.ggml.scores (higher first), then its id, then the
 *     left part's id.
 *   tokenizer.ggml.add_bos_token / add_eos_token (default: BOS for
 *     "llama" and llama-bpe, as llama.cpp; never one the file has no id
 *     for): a TemplateProcessing post_processor with BOS / EOS around each
 *     sequence.
 * *json (malloc'd, free()) holds *len bytes and a NUL. Returns ST_OK;
 * ST_ENOTFOUND when g has no tokenizer.ggml.model; ST_EUNSUPPORTED naming
 * another model or pre-tokenizer; ST_EFORMAT naming the key (and index)
 * of a malformed value: a token that is not valid UTF-8 is refused, not
 * escaped (an escaped text would be another token), as is an id at or
 * past the token count, a count past 2^31-1, a token_type or scores array
 * of another length or type; ST_ENOMEM.
 */
ST_API int st_gguf_hf_tokenizer(const st_gguf *g, char **json, size_t *len, st_error *err);

/*
 * tokenizer_config.json for g: add_bos_token, add_eos_token (as
 * st_gguf_hf_tokenizer's template), bos_token, eos_token (the tokens'
 * texts, or null), pad_token, unk_token (when the file has their ids),
 * chat_template (tokenizer.chat_template), model_max_length
 * (<general.architecture>.context_length, when present),
 * tokenizer_class "PreTrainedTokenizerFast". Returns as
 * st_gguf_hf_tokenizer, and ST_EFORMAT for a chat template that is not a
 * UTF-8 string.
 */
ST_API int st_gguf_hf_tokenizer_config(const st_gguf *g, char **json, size_t *len,
                                       st_error *err);

/*
 * Write only g's tokenizer files, tokenizer.json and tokenizer_config.json,
 * as the directory dir (st/snapshot.h, as st_gguf_write_snapshot; flags
 * likewise): for a vocabulary-only GGUF (no tensors), or the tokenizer of
 * any. Returns ST_OK, st_gguf_hf_tokenizer's errors (ST_ENOTFOUND: no
 * tokenizer, nothing written), st_snapshot_open's.
 */
ST_API int st_gguf_write_tokenizer(const st_gguf *g, const char *dir, unsigned flags,
                                   st_error *err);

/* ---- pre-tokenizer names (libst/gguf_pre.c) ----------------------------- */

/*
 * What tokenizer.ggml.pre stands for in a "gpt2" (byte-level BPE)
 * vocabulary: the Split regex of the tokenizer.json llama.cpp's converter
 * named it after (the "original regex from tokenizer.json" of llama.cpp's
 * src/llama-vocab.cpp), run before Hugging Face's ByteLevel step with
 * use_regex false; pattern NULL for GPT-2's own ByteLevel regex
 * (use_regex true). nfc: the tokenizer.json has an NFC normalizer first;
 * ignore_merges: its BPE model sets ignore_merges (a word that is a token
 * is not merged).
 */
typedef struct st_gguf_pre {
	const char *name;    /* the name llama.cpp's converter writes */
	const char *pattern; /* the Split regex; NULL: GPT-2's ByteLevel */
	int nfc;
	int ignore_merges;
} st_gguf_pre;

/*
 * The entry for tokenizer.ggml.pre name (len bytes, no NUL needed):
 * "gpt-2" and "default" (GPT-2's), "llama-bpe" with its aliases "llama3"
 * and "llama-v3" (Meta's Llama 3), "qwen2" (Qwen1.5 and later). NULL for
 * any other name. Static.
 */
ST_API const st_gguf_pre *st_gguf_pre_find(const char *name, size_t len);

/* The entry whose Split regex is pattern (byte for byte, len bytes);
 * NULL when none is. Static. */
ST_API const st_gguf_pre *st_gguf_pre_from_pattern(const char *pattern, size_t len);

#ifdef __cplusplus
}
#endif

#endif
