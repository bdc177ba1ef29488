/*
 * arch_inventory.c - a checkpoint against the config.json beside it
 * (st/arch.h, st_arch_inventory), and the config.json keys two
 * checkpoints' folders differ in (st_arch_checkpoint_config_diff).
 *
 * config.json is found and read by config.c (st_config_read), parsed and
 * compared by arch.c; the scale tensors of quantized weights are told
 * apart by quant_plan.c's pairing (st_quant_plan_inspect).
 */
#include "internal.h"

#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

/*
 * Take the scale tensors of quantized weights out of r's extras: the
 * config implies the weights, a description counts their scales apart
 * (st_quant_summary_load). Returns ST_OK or ST_ENOMEM.
 */
static int drop_scales(const st_checkpoint *ck, st_arch_report *r)
{
	st_quant_plan p;
	/* Which tensors are scales does not depend on the block size. */
	if (st_quant_plan_inspect(&p, ck, ST_QUANT_DEFAULT_BLOCK, ST_QUANT_DEFAULT_BLOCK, NULL,
	                          NULL, NULL) != ST_OK) {
		st_quant_plan_free(&p);
		return ST_ENOMEM;
	}
	size_t kept = 0;
	for (size_t i = 0; i < r->n_items; i++) {
		st_arch_item *it = &r->items[i];
		long k = it->what == ST_ARCH_UNKNOWN && p.n_scales
		             ? st_checkpoint_find(ck, it->found->name, it->found->name_len)
		             : -1;
		if (k >= 0 && p.t[k].role == ST_QUANT_ROLE_SCALE) {
			free(it->name);
			r->n_unknown--;
			continue;
		}
		r->items[kept++] = *it;
	}
	r->n_items = kept;
	st_quant_plan_free(&p);
	return ST_OK;
}

int st_arch_inventory(const st_checkpoint *ck, st_arch_config *cfg, st_arch_report *r,
                      st_error *err)
{
	char *text = NULL, *file = NULL;
	size_t len = 0;
	st_error e;

	memset(r, 0, sizeof *r);
	r->prefix = "";
	int rc = st_config_read(st_checkpoint_dir(ck), &text, &len, &file, &e);
	if (rc == ST_OK) {
		rc = st_arch_config_parse(cfg, text, len, file ? file : st_checkpoint_dir(ck), &e);
		free(text);
	}
	if (rc == ST_OK && (st_arch_compare(cfg, ck, r, NULL) != ST_OK ||
	                    drop_scales(ck, r) != ST_OK)) {
		st_arch_report_free(r);
		rc = st__error(&e, ST_ENOMEM, "%.480s: out of memory",
		               file ? file : st_checkpoint_dir(ck));
	}
	free(file);
	if (rc != ST_OK && err)
		*err = e;
	return rc;
}

/* ---- two checkpoints' configs --------------------------------------------- */

/* Whether two paths name one file (the same snapshot's config.json). */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int st_arch_checkpoint_config_diff(const st_checkpoint *a, const st_checkpoint *b,
                                   st_arch_diff_fn fn, void *ctx, st_error *err)
{
	char *ta = NULL, *tb = NULL, *pa = NULL, *pb = NULL;
	size_t la = 0, lb = 0;
	int n = st_config_read(st_checkpoint_dir(a), &ta, &la, &pa, err);

	if (n == ST_OK)
		n = st_config_read(st_checkpoint_dir(b), &tb, &lb, &pb, err);
	if (n == ST_OK && !same_file(pa ? pa : "", pb ? pb : "")) {
		n = st_arch_config_diff(ta, la, tb, lb, fn, ctx, NULL);
		if (n < 0)
			n = st__error(err, ST_EFORMAT, "%.240s or %.240s: not a JSON object",
			              pa ? pa : st_checkpoint_dir(a), pb ? pb : st_checkpoint_dir(b));
	}
	if (n == ST_ENOTFOUND)
		n = 0;
	free(ta);
	free(tb);
	free(pa);
	free(pb);
	return n;
}
