/*
 * llmc.h - llm.c's GPT-2 checkpoint format (gpt2_124M.bin style), read and
 * written one tensor at a time.
 *
 * Layout (karpathy/llm.c: train_gpt2.py write_model / write_tensors,
 * train_gpt2.c gpt2_build_from_checkpoint / fill_in_parameter_sizes):
 *
 *   int32[256] header, little-endian:
 *     [0] magic 20240326   [1] version: 3 = all F32, 5 = all BF16
 *     [2] maxT (n_positions)   [3] V   [4] L   [5] NH   [6] C
 *     [7] Vp, V padded (llm.c rounds up to a multiple of 128)
 *     [8..255] zero
 *   then the 16 parameter groups in gpt2.h's slot order, each holding its
 *   L layers back to back, every element F32 (v3) or BF16 (v5):
 *     wte (Vp, C)  wpe (maxT, C)  ln1w (L, C)  ln1b (L, C)
 *     qkvw (L, 3C, C)  qkvb (L, 3C)  attprojw (L, C, C)  attprojb (L, C)
 *     ln2w (L, C)  ln2b (L, C)  fcw (L, 4C, C)  fcb (L, 4C)
 *     fcprojw (L, C, 4C)  fcprojb (L, C)  lnfw (C)  lnfb (C)
 *   The four matrices are nn.Linear's [out, in]: the transpose of HF's
 *   Conv1D [in, out]. Rows V..Vp-1 of wte are padding (zeros as llm.c
 *   writes them; no token uses them).
 *
 * Nothing here knows about safetensors; export.c joins the two formats.
 */
#ifndef ST_GPT2_LLMC_H
#define ST_GPT2_LLMC_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2/gpt2.h"

#define LLMC_MAGIC 20240326
#define LLMC_HEADER_INTS 256
#define LLMC_HEADER_BYTES (LLMC_HEADER_INTS * 4)
/* llm.c pads the vocabulary to a multiple of this (train_gpt2.py pad_vocab). */
#define LLMC_VOCAB_MULTIPLE 128

/* The header's fields (example values: GPT-2 small in bf16). */
typedef struct llmc_header {
	int32_t version;           /* 3 (F32) or 5 (BF16) */
	int32_t max_seq_len;       /* maxT, e.g. 1024 */
	int32_t vocab_size;        /* V, e.g. 50257 */
	int32_t num_layers;        /* L, e.g. 12 */
	int32_t num_heads;         /* NH, e.g. 12 */
	int32_t channels;          /* C, e.g. 768 */
	int32_t padded_vocab_size; /* Vp, e.g. 50304 */
} llmc_header;

/* The element type of a version (F32 for 3, BF16 for 5); -1 for others. */
int llmc_version_dtype(int version);
/* The version storing dtype (3 for F32, 5 for BF16); -1 for others. */
int llmc_dtype_version(st_dtype dtype);
/* V rounded up to a multiple of LLMC_VOCAB_MULTIPLE. */
int llmc_pad_vocab(int vocab_size);

/*
 * Check a header and the file size it must come with. buf holds the
 * first min(file_size, 1024) bytes; name is used in messages. On success
 * fills *h. Returns 0, or -1 with one line in err naming the file: too
 * short, wrong magic (with a hint when it is another known format), a
 * version other than 3 or 5, sizes out of range or inconsistent (NH must
 * divide C, Vp >= V), a file shorter (truncated) or longer (trailing
 * bytes) than the header's sizes imply.
 */
int llmc_header_parse(llmc_header *h, const void *buf, uint64_t file_size,
                      const char *name, char *err, size_t errlen);
/* The 1024 header bytes llm.c writes for h (zeros after field 7). */
void llmc_header_encode(const llmc_header *h,
                        unsigned char out[LLMC_HEADER_BYTES]);
/* A header for cfg: Vp = llmc_pad_vocab(V); version 3 or 5. */
void llmc_header_from_config(llmc_header *h, const gpt2_config *cfg,
                             int version);
/* The GPT-2 config of a header (epsilon 1e-5 and eos 50256, as llm.c). */
void llmc_header_config(const llmc_header *h, gpt2_config *cfg);
/* Elements of one slot in the file: all layers, Vp rows for wte. */
uint64_t llmc_slot_numel(const llmc_header *h, int slot);
/* Element offset of a slot from the end of the header. */
uint64_t llmc_slot_offset(const llmc_header *h, int slot);
/* The whole file's size for h, in bytes. */
uint64_t llmc_file_size(const llmc_header *h);

/* ---- reading ------------------------------------------------------------ */

typedef struct llmc_reader llmc_reader;

/*
 * Open and check a checkpoint (header and size; no data is read).
 * Returns 0, or -1 with a message (cannot open, or llmc_header_parse's).
 */
int llmc_open(llmc_reader **out, const char *path, char *err, size_t errlen);
void llmc_close(llmc_reader *r);
const llmc_header *llmc_reader_header(const llmc_reader *r);
const char *llmc_reader_path(const llmc_reader *r);
/* The element type of the file: ST_DTYPE_F32 or ST_DTYPE_BF16. */
st_dtype llmc_reader_dtype(const llmc_reader *r);
/*
 * Copy n elements of slot, from element off within the slot, into buf
 * (the file's element type; pread, so memory stays bounded). 0 or -1
 * (range outside the slot, read error, the file shrank).
 */
int llmc_read(llmc_reader *r, int slot, uint64_t off, void *buf, size_t n,
              char *err, size_t errlen);

/* ---- writing ------------------------------------------------------------ */

/*
 * Recipe: llmc_writer_open(&w, "model.bin", &h) writes the header to a
 * temporary file beside the target (st/atomic.h: an existing target is
 * untouched until the commit, and keeps its permission bits);
 * llmc_writer_write the parameters in file order (any chunking);
 * llmc_writer_finish checks that exactly llmc_file_size(h) bytes came,
 * then commits; llmc_writer_free before that removes the temporary file.
 */
typedef struct llmc_writer llmc_writer;

int llmc_writer_open(llmc_writer **out, const char *path,
                     const llmc_header *h, char *err, size_t errlen);
int llmc_writer_write(llmc_writer *w, const void *buf, size_t n, char *err,
                      size_t errlen);
int llmc_writer_finish(llmc_writer *w, char *err, size_t errlen);
void llmc_writer_free(llmc_writer *w);

#endif
