/*
 * kernels.h - the inner loops of the GPT-2 forward pass, in one table per
 * instruction set: portable C (kernels.c), AVX2 with FMA and F16C
 * (kernels_avx2.c) and AVX-512 (kernels_avx512.c). The forward pass
 * (gpt2_forward.c) splits the work into tasks and calls these on each;
 * nothing here knows about threads, layers or the cache.
 *
 * Which table runs is chosen once per process: the best one the CPU has,
 * or the one GPT2RUN_KERNEL names (portable, avx2, avx512). Every table
 * computes the same functions; they differ only in float rounding (the
 * SIMD ones fuse multiply and add and sum in lanes), and each is tested
 * against the PyTorch reference on its own.
 *
 * Weights are read where they are held, in F32, F16 or BF16, and widened
 * to F32 in registers (BF16 by a shift, F16 by vcvtph2ps); arithmetic and
 * accumulation are F32. Activations are never rounded to 16 bits.
 *
 * Dimension letters: as gpt2.h. "w (IN, OUT)" is a Conv1D weight, row r
 * at w + r * OUT; the output head's wte is (V, C).
 */
#ifndef ST_GPT2_KERNELS_H
#define ST_GPT2_KERNELS_H

#include <stddef.h>

#include <st.h>

/*
 * Decode's weights are read once, row after row, and faster than one
 * core's misses come back unless they are asked for early: the row loops
 * ask for the line KERNEL_FETCH_ROWS rows ahead of each one they read, one
 * line per 64 bytes as they go. Spread so, the requests keep misses in
 * flight without stalling the core (a row's lines asked for in one burst
 * wait for free fill buffers), and into L2 (T1), which leaves L1 to x;
 * measured on the Qwen2-0.5B-shaped model (bench/bench_strun.sh), BF16
 * and FP8 decode took 10-20% less time than with a burst into L1. The
 * address may lie past the weights' end: a prefetch never faults, hence
 * the address made from an integer.
 */
enum { KERNEL_FETCH_ROWS = 4 };

static inline void kernel_fetch(const void *base, size_t off)
{
	__builtin_prefetch((const void *)(__UINTPTR_TYPE__)((__UINTPTR_TYPE__)base + off), 0, 2);
}

typedef struct gpt2_kernels {
	const char *name; /* "portable", "avx2", "avx512" */
	/* Columns per packed panel of the prompt matmul (pack, gemm). */
	int panel;
	/*
	 * Decode (one token): part[o] = sum over r = 0..rows-1, in that order,
	 * of x[r] * w[r * OUT + o], for o in [0, OUT). w points at the first
	 * row of a block of rows and is read once, front to back.
	 */
	void (*mv)(float *part, const float *x, const void *w, st_dtype wt,
	           int rows, int OUT);
	/* out[v] = x . w[v * C .. v * C + C) for v in [0, n): the head, and
	 * the Llama family's decode products ([out, in] weights). */
	void (*dots)(float *out, const float *x, const void *w, st_dtype wt,
	             int C, int n);
	/*
	 * Prompt: copy columns [o0, o0 + panel) of w (IN, OUT), widened to
	 * F32, into panel (IN, panel); columns at or past OUT become 0.
	 */
	void (*pack)(float *panel, const void *w, st_dtype wt, int IN, int OUT,
	             int o0);
	/*
	 * out[t * ldo + j] = bias[j] + sum over k = 0..IN-1, in that order, of
	 * a[t * lda + k] * panel[k * panel + j], for t in [0, T), j in [0, nc)
	 * (nc <= panel; bias may be NULL).
	 */
	void (*gemm)(float *out, size_t ldo, const float *a, size_t lda,
	             const float *panel, const float *bias, int T, int IN,
	             int nc);
	/*
	 * One query's causal attention over n positions: scores q . k_s *
	 * scale, softmax, then out (hs) = sum of p_s v_s. k and v point at
	 * position 0 of this head; position s is at k + s * ld. att: n floats
	 * of scratch, which holds the probabilities p_s on return (a trace
	 * reads them).
	 */
	void (*attend)(float *out, const float *q, const float *k,
	               const float *v, size_t ld, int n, int hs, float scale,
	               float *att);
	/* x = gelu_new(x) (the tanh approximation) for n values. */
	void (*gelu)(float *x, size_t n);
} gpt2_kernels;

/*
 * The table for this process: GPT2RUN_KERNEL's when it is set, else the
 * best the CPU runs. 0, or -1 with a message (an unknown name, or a table
 * this CPU cannot run); the choice is made once and kept.
 */
int gpt2_kernels_default(const gpt2_kernels **out, char *err, size_t errlen);
/*
 * The table called name, when this CPU can run it (and the binary has
 * it); NULL otherwise. For tests and benchmarks that try each in turn.
 */
const gpt2_kernels *gpt2_kernels_find(const char *name);
/* The names, best last: "portable", "avx2", "avx512". */
extern const char *const gpt2_kernel_names[3];

/* The tables (kernels_avx2.c, kernels_avx512.c); NULL-safe lookups above. */
extern const gpt2_kernels gpt2_kernels_portable;
extern const gpt2_kernels gpt2_kernels_avx2;
extern const gpt2_kernels gpt2_kernels_avx512;

/*
 * Compile the functions between BEGIN and END for an instruction set,
 * whether the compiler is GCC (#pragma GCC target) or clang (#pragma
 * clang attribute); include <immintrin.h> before BEGIN. AVX512VBMI adds
 * vpermb and vpermi2b (Ice Lake on): run it only where the CPU says so.
 */
#if defined(__clang__)
#define GPT2_TARGET_AVX2_BEGIN                                            \
	_Pragma("clang attribute push(__attribute__((target(\"avx2,fma,f16c\"))), apply_to = function)")
#define GPT2_TARGET_AVX512_BEGIN                                          \
	_Pragma("clang attribute push(__attribute__((target(\"avx512f,avx512bw,avx512vl,avx512dq,fma,f16c\"))), apply_to = function)")
#define GPT2_TARGET_AVX512VBMI_BEGIN                                      \
	_Pragma("clang attribute push(__attribute__((target(\"avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,fma,f16c\"))), apply_to = function)")
#define GPT2_TARGET_END _Pragma("clang attribute pop")
#else
#define GPT2_TARGET_AVX2_BEGIN                                            \
	_Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c\")")
#define GPT2_TARGET_AVX512_BEGIN                                          \
	_Pragma("GCC push_options")                                       \
	_Pragma("GCC target(\"avx512f,avx512bw,avx512vl,avx512dq,fma,f16c\")")
#define GPT2_TARGET_AVX512VBMI_BEGIN                                      \
	_Pragma("GCC push_options")                                       \
	_Pragma("GCC target(\"avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,fma,f16c\")")
#define GPT2_TARGET_END _Pragma("GCC pop_options")
#endif

/*
 * For the SIMD tables: call body(args..., WT) with WT the constant dtype
 * wt holds, so that each held dtype gets a loop of its own (the body is
 * always_inline and widens with WT known at compile time).
 */
#define GPT2_BY_DTYPE(wt, body, ...)                                      \
	do {                                                              \
		switch (wt) {                                             \
		case ST_DTYPE_BF16: body(__VA_ARGS__, ST_DTYPE_BF16); break; \
		case ST_DTYPE_F16: body(__VA_ARGS__, ST_DTYPE_F16); break; \
		default: body(__VA_ARGS__, ST_DTYPE_F32); break;          \
		}                                                         \
	} while (0)

#endif
