/*
 * ggml_types.c - the ggml type table (names, block sizes, the dtype each
 * plain type matches, the block decoder of each quantized type) and the
 * row codecs declared in include/st/gguf.h: st_ggml_to_f32 decodes every
 * type the table gives a decoder (ggml_quants.c, ggml_iq.c), whole blocks
 * at a time; st_ggml_from_f32 encodes F32, F16, BF16 and, with the
 * encoders of ggml_encode.c, Q4_0 Q4_1 Q5_0 Q5_1 Q8_0. They hold no state
 * and read no file: the GGUF parsing is in gguf.c, the writing in
 * gguf_write.c, scaled FP8 and MXFP4 weights in quant.c.
 */
#include "ggml_internal.h"
#include "internal.h"

#include <string.h>

/* ---- ggml types ------------------------------------------------------------ */

struct ggml_traits {
	const char *name;
	unsigned block, bytes;
	st__ggml_dec_fn *dec; /* the block decoder; NULL for plain types */
};

/* Block sizes of ggml.c's type_traits (QK_K = 256), and the decoders. */
static const struct ggml_traits traits[ST_GGML_TYPE_COUNT] = {
	[ST_GGML_F32] = {"F32", 1, 4},
	[ST_GGML_F16] = {"F16", 1, 2},
	[ST_GGML_Q4_0] = {"Q4_0", 32, 18, st__ggml_dec_q4_0},
	[ST_GGML_Q4_1] = {"Q4_1", 32, 20, st__ggml_dec_q4_1},
	[ST_GGML_Q5_0] = {"Q5_0", 32, 22, st__ggml_dec_q5_0},
	[ST_GGML_Q5_1] = {"Q5_1", 32, 24, st__ggml_dec_q5_1},
	[ST_GGML_Q8_0] = {"Q8_0", 32, 34, st__ggml_dec_q8_0},
	[ST_GGML_Q8_1] = {"Q8_1", 32, 36, st__ggml_dec_q8_1},
	[ST_GGML_Q2_K] = {"Q2_K", 256, 84, st__ggml_dec_q2_k},
	[ST_GGML_Q3_K] = {"Q3_K", 256, 110, st__ggml_dec_q3_k},
	[ST_GGML_Q4_K] = {"Q4_K", 256, 144, st__ggml_dec_q4_k},
	[ST_GGML_Q5_K] = {"Q5_K", 256, 176, st__ggml_dec_q5_k},
	[ST_GGML_Q6_K] = {"Q6_K", 256, 210, st__ggml_dec_q6_k},
	[ST_GGML_Q8_K] = {"Q8_K", 256, 292, st__ggml_dec_q8_k},
	[ST_GGML_IQ2_XXS] = {"IQ2_XXS", 256, 66, st__ggml_dec_iq2_xxs},
	[ST_GGML_IQ2_XS] = {"IQ2_XS", 256, 74, st__ggml_dec_iq2_xs},
	[ST_GGML_IQ3_XXS] = {"IQ3_XXS", 256, 98, st__ggml_dec_iq3_xxs},
	[ST_GGML_IQ1_S] = {"IQ1_S", 256, 50, st__ggml_dec_iq1_s},
	[ST_GGML_IQ4_NL] = {"IQ4_NL", 32, 18, st__ggml_dec_iq4_nl},
	[ST_GGML_IQ3_S] = {"IQ3_S", 256, 110, st__ggml_dec_iq3_s},
	[ST_GGML_IQ2_S] = {"IQ2_S", 256, 82, st__ggml_dec_iq2_s},
	[ST_GGML_IQ4_XS] = {"IQ4_XS", 256, 136, st__ggml_dec_iq4_xs},
	[ST_GGML_I8] = {"I8", 1, 1},
	[ST_GGML_I16] = {"I16", 1, 2},
	[ST_GGML_I32] = {"I32", 1, 4},
	[ST_GGML_I64] = {"I64", 1, 8},
	[ST_GGML_F64] = {"F64", 1, 8},
	[ST_GGML_IQ1_M] = {"IQ1_M", 256, 56, st__ggml_dec_iq1_m},
	[ST_GGML_BF16] = {"BF16", 1, 2},
	[ST_GGML_TQ1_0] = {"TQ1_0", 256, 54, st__ggml_dec_tq1_0},
	[ST_GGML_TQ2_0] = {"TQ2_0", 256, 66, st__ggml_dec_tq2_0},
	[ST_GGML_MXFP4] = {"MXFP4", 32, 17, st__ggml_dec_mxfp4},
	[ST_GGML_NVFP4] = {"NVFP4", 64, 36, st__ggml_dec_nvfp4},
	[ST_GGML_Q1_0] = {"Q1_0", 128, 18, st__ggml_dec_q1_0},
	[ST_GGML_Q2_0] = {"Q2_0", 64, 18, st__ggml_dec_q2_0},
};

const char *st_ggml_type_name(unsigned type)
{
	return type < ST_GGML_TYPE_COUNT ? traits[type].name : NULL;
}

int st_ggml_type_from_name(const char *name, unsigned *type)
{
	for (unsigned t = 0; t < ST_GGML_TYPE_COUNT; t++)
		if (traits[t].name && !strcmp(traits[t].name, name)) {
			*type = t;
			return ST_OK;
		}
	return ST_ENOTFOUND;
}

int st_ggml_type_block(unsigned type, unsigned *block, unsigned *bytes)
{
	if (type >= ST_GGML_TYPE_COUNT || !traits[type].name)
		return ST_ENOTFOUND;
	if (block)
		*block = traits[type].block;
	if (bytes)
		*bytes = traits[type].bytes;
	return ST_OK;
}

int st_ggml_type_bits(unsigned type, double *bits)
{
	unsigned block, bytes;
	if (st_ggml_type_block(type, &block, &bytes))
		return ST_ENOTFOUND;
	/* bytes * 8 / block: a multiple of 1/32 for every ggml type, exact. */
	if (bits)
		*bits = (double)bytes * 8 / block;
	return ST_OK;
}

int st_ggml_type_dtype(unsigned type, st_dtype *out)
{
	switch (type) {
	case ST_GGML_F32: *out = ST_DTYPE_F32; return ST_OK;
	case ST_GGML_F16: *out = ST_DTYPE_F16; return ST_OK;
	case ST_GGML_BF16: *out = ST_DTYPE_BF16; return ST_OK;
	case ST_GGML_F64: *out = ST_DTYPE_F64; return ST_OK;
	case ST_GGML_I8: *out = ST_DTYPE_I8; return ST_OK;
	case ST_GGML_I16: *out = ST_DTYPE_I16; return ST_OK;
	case ST_GGML_I32: *out = ST_DTYPE_I32; return ST_OK;
	case ST_GGML_I64: *out = ST_DTYPE_I64; return ST_OK;
	default: return ST_ENOTFOUND;
	}
}

/* ---- row codecs ------------------------------------------------------------ */

/* n values of a plain float type (F32, F16, BF16) to F32, or back. */
static int convert_plain(unsigned type, int to_f32, void *dst, const void *src,
                         uint64_t n)
{
	st_dtype d = ST_DTYPE_F32;
	st_ggml_type_dtype(type, &d);
	if (n > SIZE_MAX)
		return ST_EINVAL;
	return to_f32 ? st_convert(ST_DTYPE_F32, dst, d, src, (size_t)n, NULL)
	              : st_convert(d, dst, ST_DTYPE_F32, src, (size_t)n, NULL);
}

int st__ggml_to_f32_isa(int isa, unsigned type, const void *src, float *dst, uint64_t n)
{
	if (isa != ST__ISA_SCALAR && (isa != ST__ISA_AVX2 || !st__isa_available(isa)))
		return ST_EUNSUPPORTED;
	switch (type) {
	case ST_GGML_F32:
	case ST_GGML_F16:
	case ST_GGML_BF16:
		return convert_plain(type, 1, dst, src, n);
	default:
		break;
	}
	if (type >= ST_GGML_TYPE_COUNT || !traits[type].dec)
		return ST_EUNSUPPORTED;
	const struct ggml_traits *t = &traits[type];
	if (n % t->block)
		return ST_EINVAL;
	st__ggml_dec_fn *dec = isa == ST__ISA_AVX2 ? st__ggml_dec_avx2(type) : NULL;
	(dec ? dec : t->dec)(src, dst, n / t->block);
	return ST_OK;
}

/* The AVX2 decoders where the CPU has them: chosen per call, no state. */
int st_ggml_to_f32(unsigned type, const void *src, float *dst, uint64_t n)
{
	int isa = st__isa_available(ST__ISA_AVX2) ? ST__ISA_AVX2 : ST__ISA_SCALAR;
	return st__ggml_to_f32_isa(isa, type, src, dst, n);
}

int st_ggml_from_f32(unsigned type, const float *src, void *dst, uint64_t n)
{
	st__ggml_enc_fn *enc;
	switch (type) {
	case ST_GGML_F32:
	case ST_GGML_F16:
	case ST_GGML_BF16:
		return convert_plain(type, 0, dst, src, n);
	case ST_GGML_Q4_0: enc = st__ggml_enc_q4_0; break;
	case ST_GGML_Q4_1: enc = st__ggml_enc_q4_1; break;
	case ST_GGML_Q5_0: enc = st__ggml_enc_q5_0; break;
	case ST_GGML_Q5_1: enc = st__ggml_enc_q5_1; break;
	case ST_GGML_Q8_0: enc = st__ggml_enc_q8_0; break;
	default: return ST_EUNSUPPORTED;
	}
	/* Every encoder's block is 32 floats. */
	if (n % 32)
		return ST_EINVAL;
	enc(src, dst, n / 32);
	return ST_OK;
}
