/*
 * gguf_export.c - a GPT-2 GGUF file -> a Hugging Face snapshot (see
 * gguf_export.h). The way there, snapshot -> GGUF, is libst's
 * st_hf_write_gguf (libst/hf_gguf.c).
 */
#include "gpt2/gguf_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fe/cli.h"
#include "gpt2/internal.h"

/* llama.cpp's llama_token_type / gguf-py's TokenType. */
enum { TOKEN_NORMAL = 1, TOKEN_CONTROL = 3, TOKEN_USER_DEFINED = 4 };

/* ---- GGUF -> snapshot -------------------------------------------------- */

static int key_is(const st_gguf *g, const char *key, const char *want)
{
	long i = st_gguf_find_kv(g, key);
	if (i < 0)
		return 0;
	const st_gguf_value *v = &st_gguf_kv_at(g, (size_t)i)->value;
	return v->type == ST_GGUF_STRING && v->n == strlen(want) &&
	       !memcmp(v->v.s, want, v->n);
}

struct import_ui {
	cli_progress prog; /* first: cli_progress_cb */
	const gpt2_export_opts *o;
};

static int import_cancel(void *ctx)
{
	const struct import_ui *ui = ctx;
	return ui->o->cancel && ui->o->cancel();
}

/*
 * The snapshot's dtype: asked for, else the matrices' (the tensors the
 * export's --type applied to) when they are all F16 or all BF16, else
 * F32. *exact: no value of the file is narrowed on the way.
 */
static st_dtype import_dtype(const st_gguf *g, int dtype, int *exact, uint64_t *params)
{
	int one = -2;
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		char hf[128];
		st_arch_gguf_info info;
		if (!st_arch_gpt2_from_gguf(t->name, hf, sizeof hf, &info) && !info.keep_f32)
			one = one == -2 || one == (int)t->type ? (int)t->type : -1;
	}
	st_dtype dst = dtype >= 0 ? (st_dtype)dtype
	               : one == ST_GGML_F16 ? ST_DTYPE_F16
	               : one == ST_GGML_BF16 ? ST_DTYPE_BF16 : ST_DTYPE_F32;
	*exact = 1;
	*params = 0;
	for (size_t i = 0; i < st_gguf_n_tensors(g); i++) {
		const st_gguf_tensor *t = st_gguf_tensor_at(g, i);
		st_dtype src = ST_DTYPE_F32;
		int widened = !st_ggml_type_dtype(t->type, &src) &&
		              st_dtype_bits(src) <= st_dtype_bits(dst);
		*exact &= widened || src == dst;
		*params += t->n_elements;
	}
	return dst;
}

int gpt2_export_gguf_to_hf(const char *in, const char *out_dir, int dtype,
                           const gpt2_export_opts *o, gpt2_export_result *res,
                           char *err, size_t errlen)
{
	st_gguf *g = NULL;
	st_error e;
	if (st_gguf_open_set(&g, in, &e) != ST_OK)
		return gpt2_err(err, errlen, "%s", e.message);
	if (!key_is(g, "general.architecture", "gpt2")) {
		st_gguf_close(g);
		return gpt2_err(err, errlen, "%s: general.architecture is not \"gpt2\"", in);
	}
	if (!key_is(g, "tokenizer.ggml.model", "gpt2")) {
		st_gguf_close(g);
		return gpt2_err(err, errlen, "%s: tokenizer.ggml.model is not \"gpt2\" (GPT-2's "
		                "byte-level BPE)", in);
	}
	memset(res, 0, sizeof *res);
	res->src_dtype = -1;
	res->dst_dtype = import_dtype(g, dtype, &res->exact, &res->parameters);
	/* Every tensor in the one dtype, as gpt2export's snapshots hold them. */
	st_gguf_convert_options go = {1, (st_dtype)res->dst_dtype, 1};
	struct import_ui ui = {.o = o};
	memset(&ui.prog, 0, sizeof ui.prog); /* disabled until started */
	st_convert_run run = {.progress = cli_progress_cb, .cancel = import_cancel, .ctx = &ui};
	struct stat st;
	/* An existing folder (--force) is written into, as the other imports
	 * do: what it holds but weights is kept. */
	unsigned flags =
	        stat(out_dir, &st) == 0 ? ST_SNAPSHOT_REPLACE | ST_GGUF_SNAPSHOT_KEEP_OLD : 0;
	if (o->progress)
		cli_progress_start(&ui.prog, "importing", st_gguf_data_size(g));
	unsigned lost = 0;
	int rc = st_gguf_write_snapshot(g, out_dir, flags, &go, &run, NULL, &lost, &e);
	cli_progress_done(&ui.prog);
	st_gguf_close(g);
	if (rc != ST_OK)
		return gpt2_err(err, errlen, "%s", rc == ST_EIO && o->cancel && o->cancel()
		                                       ? "interrupted" : e.message);
	if (lost & ST_GGUF_HF_LOST_TOKENIZER_UNSUPPORTED) {
		char *p = cli_printable(out_dir, strlen(out_dir));
		cli_warn("%s: no tokenizer files: the GGUF's tokenizer.ggml.pre is not one "
		         "libst rebuilds", p);
		free(p);
	}
	return 0;
}
