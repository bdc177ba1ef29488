/*
 * quantize.c - stconvert --block's argument (see quantize.h).
 */
#include "quantize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "--block 'ARG': WHY", ARG cut at 64 bytes. */
static int einval(st_error *err, const char *arg, const char *why)
{
	err->code = ST_EINVAL;
	err->sys_errno = 0;
	snprintf(err->message, sizeof err->message, "--block '%.64s%s': %.400s", arg,
	         strlen(arg) > 64 ? "..." : "", why);
	return ST_EINVAL;
}

int quantize_parse_block(const char *arg, uint64_t *b0, uint64_t *b1, st_error *err)
{
	char json[96];
	size_t len = strlen(arg);
	const char *comma = strchr(arg, ',');

	if (len > 64)
		return einval(err, arg, "not R,C");
	if (!comma || strchr(comma + 1, ','))
		return einval(err, arg, "not R,C (two block sides)");
	/* st_quant_parse_block_size reads the pair as config.json gives it. */
	snprintf(json, sizeof json, "[%s]", arg);
	st_error e;
	if (st_quant_parse_block_size(json, strlen(json), b0, b1, &e) != ST_OK) {
		const char *why = strstr(e.message, ": ");
		return einval(err, arg, why ? why + 2 : e.message);
	}
	return ST_OK;
}
