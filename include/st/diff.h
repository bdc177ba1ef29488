/*
 * st/diff.h - how two checkpoints compare, as data: which tensors of A
 * and B pair up (by name, a prefix stripped, a glob selecting), which are
 * only on one side, how each pair is compared (exactly, within a
 * tolerance, across dtypes, a quantized side dequantized with its
 * scales), what the values give per pair and overall (identical, B is A
 * rounded, B is A dequantized, within tolerance, different), the traps
 * behind a difference (st/diagnose.h) and the __metadata__ entries that
 * differ. And the same for a GGUF file against a checkpoint (GPT-2, the
 * Llama family), through the name map of st/arch.h (st_diff_gguf_*).
 *
 * It is a module of its own rather than more of st/compare.h: compare.h
 * is the element kernels of one pair of tensors, with no I/O and no
 * threads; this is the operation over two whole checkpoints built on
 * them, which reads (st_stream_run, lockstep, chunks of
 * ST_DIFF_CHUNK_BYTES) and runs threads. stdiff(1) is a front end over
 * it: its options, wording, printing and exit codes are the tool's.
 *
 * What it is not: no printing, no exit, nothing global. It does not
 * compare config.json (st/config.h; the tool does) and does not validate
 * a checkpoint (st/verify.h).
 *
 * Contract: st_diff_match opens nothing: it borrows two open checkpoints,
 * which must outlive the st_diff. It pairs and plans; st_diff_values
 * then reads and compares every pair planned for it. Results are merged
 * in chunk order, so nothing depends on the number of threads. Every
 * pointer in an st_diff points into it or into the checkpoints; one
 * st_diff_free releases it all. An st_diff is not shared across threads
 * while st_diff_values runs.
 */
#ifndef ST_DIFF_H
#define ST_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "diagnose.h"
#include "error.h"
#include "gguf.h"
#include "index.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the wider side read per chunk of the value pass. */
#define ST_DIFF_CHUNK_BYTES ((size_t)256 << 10)

/* What the caller asks. Zeroed: defaults tolerances, values compared. */
typedef struct st_diff_opts {
	const double *rtol, *atol; /* NULL: the dtypes' defaults (compare.h) */
	bool exact;      /* bit equality: same dtype and the same bytes */
	bool names_only; /* pair and plan, read no value */
	bool diagnose;   /* st_diff_values names the trap of each pair that differs */
	const char *const *globs; /* keep only keys matching one (fnmatch) */
	size_t n_globs;
	const char *const *prefixes; /* strip the first that starts a name */
	size_t n_prefixes;
	unsigned threads; /* for the value pass; 0: 1 */
	/* Bytes of the value pass read so far, in any order (may be NULL);
	 * called from the reading threads one at a time. */
	void (*progress)(void *ctx, uint64_t bytes);
	void *ctx;
} st_diff_opts;

/* A tensor of one side, under the name it is matched by. */
typedef struct st_diff_tensor {
	const char *key;  /* its name, a stripped prefix removed */
	size_t key_len;
	size_t index;     /* in its checkpoint */
	/* The tensor; for an MXFP4 NAME_blocks, a view named NAME of
	 * ST_DTYPE_F4 elements in the dequantized shape. */
	const st_tensor *t;
	const st_quant_tensor *dq; /* a quantized weight (else NULL) */
} st_diff_tensor;

/* What the values of a pair gave (after st_diff_values). */
typedef enum st_diff_verdict {
	ST_DIFF_NOT_COMPARED, /* shape, dtype kind or names_only kept them apart */
	ST_DIFF_IDENTICAL,    /* same dtype, same bytes */
	ST_DIFF_ROUNDED,      /* the narrower float side is the wider rounded */
	ST_DIFF_DEQUANTIZED,  /* the plain side is the quantized one dequantized */
	ST_DIFF_WITHIN,       /* within tolerance, none of the above */
	ST_DIFF_DIFFERENT,    /* a difference (outside tolerance, or exact) */
	ST_DIFF_QUANTIZED     /* the quantized side is the plain one quantized
	                         (st_quant_fp8_quantize), bytes and scales */
} st_diff_verdict;

/* A tensor present on both sides, and how it compared. */
typedef struct st_diff_pair {
	const st_diff_tensor *a, *b;
	bool same_shape, same_dtype;
	bool comparable; /* same dtype, or both of kinds compared by value */
	bool compared;   /* values compared (comparable, same shape, values asked) */
	bool has_stats;  /* max abs / rel / mean mean something (not RAW) */
	st_compare_spec spec; /* as compared (a dequantized side: dq_to) */
	/* One side a quantized weight (dq_b: B), dequantized to dq_to: F32,
	 * F64 against F64, the other side's dtype with exact. */
	const st_quant_tensor *dq;
	bool dq_b;
	st_dtype dq_to;
	/* dq, not exact: a tolerance not given is the quantized format's
	 * (doc/format.md, "Comparing a quantized side"); q_tol: neither was
	 * given. */
	bool q_tol;
	/* After st_diff_values: */
	st_compare_stats st;
	double mean_abs;   /* over the elements without NaN */
	bool differs;      /* counts as a difference (exact: dtypes must match) */
	bool dq_exact;     /* dq: the other side is it dequantized, bit for bit */
	/* B's FP8 weight with F32 scales against a wide float A, not exact
	 * and not dq_exact: A was quantized again with B's blocks
	 * (q_checked) and gave B's codes and scales (q_exact). With q_tol a
	 * checked weight that is not A's quantization differs (and one
	 * outside the format's tolerance is none, unread). */
	bool q_checked, q_exact;
	st_diff_verdict verdict;
	st_diagnose_result diag; /* opts.diagnose and differs: the trap, if any */
} st_diff_pair;

/* A __metadata__ key that differs; a or b is NULL on the side without it. */
typedef struct st_diff_meta {
	const st_meta *a, *b;
} st_diff_meta;

typedef struct st_diff {
	st_checkpoint *ca, *cb;
	bool exact, names_only;
	/* Each side's selected tensors, sorted by key (bytewise). */
	st_diff_tensor *ta, *tb;
	size_t n_ta, n_tb;
	const st_diff_tensor **only_a, **only_b; /* in key order */
	size_t n_only_a, n_only_b;
	st_diff_pair *pairs; /* in key order */
	size_t n_pairs;
	st_diff_meta *meta;  /* every file's entries, the first wins; key order */
	size_t n_meta;
	/* The one side that is quantized (0 A, 1 B; -1 neither, or both:
	 * then both are compared as stored) and its pairing plan. */
	int quant_side;
	st_quant_plan quant;
	uint64_t value_bytes; /* bytes st_diff_values reads, both sides */
	/* A clash: two tensors of side clash_side with one key (ST_EINVAL). */
	int clash_side;
	st_diff_tensor clash[2];
	/* Counts; equal and the value counts after st_diff_values (or
	 * names_only): nothing on one side only, no pair that differs. */
	bool equal;
	size_t n_identical, n_within, n_differ, n_shape, n_dtype;
	/* quant_side >= 0: nothing only on one side and every pair holds the
	 * quantized side's values bit for bit, in the dtypes of dq_to
	 * ("BF16", "BF16 and F32"). */
	bool dq_exact;
	char dq_to[64];
	/* Dtype changes within tolerance, one entry per pair of dtypes: the
	 * plain ones (whether B is A rounded) and, apart, the dequantized
	 * ones by st_diff_label (ST_DIFF_MAX_DQ_TALLY at most). */
	st_diagnose_dtype_tally dtypes;
	struct st_diff_dq_tally {
		const char *a, *b; /* st_diff_label of each side */
		bool dq_b;         /* B is the quantized side */
		uint64_t tensors, exact; /* pairs; of them dq_exact */
		uint64_t quantized;      /* of them q_exact */
		/* The largest of the pairs' max abs, max rel, mean abs, and
		 * of their tolerances. */
		double max_abs, max_rel, mean_abs, rtol, atol;
	} dq_tally[16];
	size_t n_dq_tally;
	/* quant_side >= 0: nothing only on one side and every pair holds the
	 * plain side's tensors, its weights quantized as the quantized side's
	 * are (q_exact), the others the same bytes ("F8_E4M3 (128x128
	 * blocks)", several layouts joined by " and "). */
	bool q_exact;
	char q_to[128];
	/* Tensors only on one side that are a PyTorch alias (st_file_alias_of)
	 * of a tensor of that side present on the other: a tied weight a
	 * converter writes once. They are in neither only_a nor only_b and
	 * are no difference. */
	struct st_diff_tied {
		const st_diff_tensor *t; /* the alias */
		const st_diff_tensor *of; /* the tensor it repeats */
		int side;                 /* 0: in A only, 1: in B only */
	} *tied;
	size_t n_tied;
	/* Private: A's tensor index -> its pair, and A's only-in-A marks. */
	const st_diff_pair **a_pair_;
	unsigned char *a_only_;
	st_tensor *virt_;
} st_diff;

/*
 * Pair the tensors of ca and cb and plan each pair's comparison; diff the
 * __metadata__. When exactly one side has scale tensors (st_quant_is_scale)
 * its weights are paired with their scales (st_quant_plan_build; the FP8
 * block size from the config.json in its folder, st_config_read) and
 * compared dequantized, its scales consumed. Returns ST_OK; ST_EINVAL when
 * two tensors of a side have one key (d->clash_side, d->clash say which);
 * or the error of the config or the plan. *d is to be st_diff_free'd in
 * every case.
 */
ST_API int st_diff_match(st_diff *d, st_checkpoint *ca, st_checkpoint *cb,
                         const st_diff_opts *o, st_error *err);

/*
 * Read and compare every pair planned (compared), both checkpoints in
 * lockstep on st_stream_run with o->threads, and fill the pairs' results,
 * verdicts and d's counts and verdict. With o->diagnose, name the trap of
 * each pair that differs (st_diagnose_checkpoints; not a dequantized one).
 * With names_only, only the counts. Returns ST_OK or the first read error
 * (err names file and tensor).
 */
ST_API int st_diff_values(st_diff *d, const st_diff_opts *o, st_error *err);

/*
 * Diagnose pair p of d (st_diagnose_checkpoints with its tolerance) when it
 * is compared, outside tolerance and not dequantized; else leave p->diag.
 * Returns ST_OK or the read error.
 */
ST_API int st_diff_diagnose(st_diff *d, st_diff_pair *p, st_error *err);

/*
 * What became of tensor i of A: its pair, or NULL with *only_a true (only
 * in A) or false (not selected, or a scale folded into its weight).
 */
ST_API const st_diff_pair *st_diff_of_a(const st_diff *d, size_t i,
                                        bool *only_a);

/*
 * Walk A's tensors in order (n indices of A, e.g. a recorded order) and
 * find the first that is only in A, changed in shape or differs (tensors
 * not selected are skipped). Returns its position in order, or n when
 * there is none; *walked counts the selected tensors walked, that one
 * included.
 */
ST_API size_t st_diff_first(const st_diff *d, const size_t *order, size_t n,
                            size_t *walked);

/* What a side's tensor is, in words: "MXFP4" for MXFP4 blocks compared
 * dequantized, else its dtype's name. */
ST_API const char *st_diff_label(const st_diff_tensor *t);

/*
 * A quantized weight's format in words, as "B is exactly A quantized to"
 * ends: "F8_E4M3 (128×128 blocks)", "F8_E4M3 (per channel)",
 * "F8_E4M3 (per tensor)", "MXFP4 (blocks of 32)". Truncated and
 * NUL-terminated as snprintf; returns buf.
 */
ST_API char *st_diff_quant_format(const st_quant_tensor *q, char *buf, size_t size);

ST_API void st_diff_free(st_diff *d);

/*
 * Whether name (len bytes, NUL bytes allowed) is selected by globs: 1
 * when one of the n_globs fnmatch patterns (flags 0: '*' crosses '.')
 * matches it or there are none, 0 when none does, -1 out of memory. The
 * one tensor-name matcher: st_diff_match's globs and stinfo's --tensors.
 */
ST_API int st_diff_name_selected(const char *const *globs, size_t n_globs,
                                 const char *name, size_t len);

/* ---- a GGUF against a checkpoint, through a name map ---------------------- */

typedef enum st_diff_gguf_kind {
	ST_DIFF_GGUF_ONLY_CKPT,    /* a checkpoint tensor the GGUF lacks */
	ST_DIFF_GGUF_ONLY_GGUF,    /* a GGUF tensor no checkpoint tensor maps to */
	ST_DIFF_GGUF_SHAPE,        /* dims that are not the shape (mapped) */
	ST_DIFF_GGUF_NOT_FLOAT,    /* the checkpoint's dtype is not a float */
	ST_DIFF_GGUF_UNDECODABLE,  /* a ggml type st_ggml_to_f32 cannot decode */
	ST_DIFF_GGUF_COMPARED,
	ST_DIFF_GGUF_DERIVED       /* a GGUF tensor the converter computes, with
	                            * no checkpoint tensor (st_arch_gguf_derived:
	                            * llama's rope_freqs.weight); no difference */
} st_diff_gguf_kind;

/* One checkpoint tensor, or one GGUF tensor, and what it gave. */
typedef struct st_diff_gguf_item {
	st_diff_gguf_kind kind;
	size_t ck;   /* checkpoint tensor index (not ONLY_GGUF) */
	size_t gg;   /* GGUF tensor index (not ONLY_CKPT) */
	bool transposed; /* a Conv1D weight, laid out [out, in] in the GGUF */
	uint64_t permuted_heads; /* llama's q/k: the GGUF's rows are the
	                          * checkpoint's permuted (st_arch_permuted_row)
	                          * with this many heads; 0: not permuted */
	/* COMPARED: the checkpoint's values as the GGUF lays them out against
	 * the GGUF's decoded, the checkpoint the reference. */
	st_diff_verdict verdict; /* IDENTICAL, WITHIN or DIFFERENT */
	uint64_t n, mismatched;
	double max_abs, max_rel, rtol, atol;
	bool identical; /* the GGUF bytes are the checkpoint's, same dtype */
	bool encoded;   /* ... are its values encoded (rounded, Q8_0 quantized) */
	bool type_bound; /* judged by the quantized type's expected error
	                  * (every quantized type but Q8_0;
	                  * doc/ggml.md): atol is the largest element's bound,
	                  * rtol 0 */
	bool type_rms;   /* ... by each block's RMS error (the IQ lattice
	                  * types): atol is the largest block's RMS bound */
} st_diff_gguf_item;

/*
 * Compare tensor i of ck with tensor gi of g (transpose: ck's 2-D tensor
 * is [in, out], g's [out, in]) into *it (kind SHAPE, NOT_FLOAT,
 * UNDECODABLE or COMPARED). Tolerances o->rtol and o->atol, else the
 * quantized type's expected error (doc/ggml.md): Q8_0 is within
 * tolerance exactly when it is the checkpoint's values quantized, every
 * other quantized type when every element is within its bound
 * (the IQ lattice types: every block's RMS error); else the looser of the
 * two types' defaults (0 with exact). Returns ST_OK, ST_ENOMEM or the read
 * error.
 */
ST_API int st_diff_gguf_pair(st_checkpoint *ck, size_t i, const st_gguf *g,
                             size_t gi, bool transpose, const st_diff_opts *o,
                             st_diff_gguf_item *it, st_error *err);

/*
 * Every tensor of ck through the GGUF name map arch (st_arch_to_gguf:
 * "gpt2", "llama", "qwen2", "qwen3") in ck's order, then the GGUF tensors
 * nothing maps to in g's order, into *items (malloc'd, *n of them): each
 * pair as st_diff_gguf_pair compares it, transposed as the map says and,
 * for llama's q/k, with the GGUF's rows put in the checkpoint's order
 * (st_arch_permuted_row, the head counts from g's
 * <arch>.attention.head_count and head_count_kv). Left out: GPT-2's
 * lm_head.weight (tied to the token embedding, never in a GGUF) and the
 * attn.bias / attn.masked_bias / rotary_emb.inv_freq buffers; a GGUF
 * tensor the converter computes (st_arch_gguf_derived) is DERIVED.
 * A pair is read in chunks of about 64 Ki elements (whole blocks and
 * rows), so memory does not grow with the tensor. o->progress, if set,
 * is called after each pair with the bytes of both tensors. Returns
 * ST_OK; ST_EUNSUPPORTED when arch has no map;
 * ST_EFORMAT (the message naming the file and the tensor) when a
 * permuted tensor's head count is missing or does not divide its rows;
 * or the error of a pair.
 */
ST_API int st_diff_gguf_map(st_checkpoint *ck, const st_gguf *g, const char *arch,
                            const st_diff_opts *o, st_diff_gguf_item **items, size_t *n,
                            st_error *err);
/* st_diff_gguf_map with map "gpt2". */
ST_API int st_diff_gguf_gpt2(st_checkpoint *ck, const st_gguf *g,
                             const st_diff_opts *o, st_diff_gguf_item **items,
                             size_t *n, st_error *err);

/* ---- two GGUF files ------------------------------------------------------- */

/*
 * Compare GGUF a with GGUF b tensor by tensor, paired by name, into *items
 * (malloc'd, *n of them): a's tensors in a's order, then b's that no name
 * of a has. The item kinds read as for a checkpoint, with a in the place
 * of the checkpoint: ONLY_CKPT is a tensor only in a (.ck its index),
 * ONLY_GGUF one only in b (.gg), otherwise .ck indexes a and .gg b. SHAPE:
 * other dims; NOT_FLOAT: an integer type on a side whose bytes differ;
 * UNDECODABLE: a type libst does not know. The same known type and the
 * same bytes are IDENTICAL; otherwise both sides are decoded
 * (st_ggml_to_f32) a chunk of 64 Ki elements (whole blocks) at a time, so
 * memory stays about 1.5 MiB whatever the tensor's size, and b's values
 * compared with a's, as the reference,
 * within o->rtol and o->atol, else the looser of the defaults of the types
 * that have a dtype (none for a quantized type: 0), 0 with exact.
 * .encoded says b's bytes are a's values encoded as b's type
 * (st_ggml_from_f32: F32, F16, BF16, Q8_0); with no tolerance given, a
 * Q8_0 b is within exactly when it is, a b of another quantized type when
 * it is within its type's bounds (as st_diff_gguf_pair). o->progress, if set, gets the bytes
 * of both tensors after each pair. Returns ST_OK, ST_ENOMEM.
 */
ST_API int st_diff_gguf_files(const st_gguf *a, const st_gguf *b, const st_diff_opts *o,
                              st_diff_gguf_item **items, size_t *n, st_error *err);

#ifdef __cplusplus
}
#endif

#endif
