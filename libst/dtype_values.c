/*
 * dtype_values.c - what a dtype's bytes hold as values (st/dtype.h, the
 * block at its end): how elements pack into whole bytes.
 */
#include "internal.h"

void st_dtype_group(st_dtype d, unsigned *bytes, unsigned *elems)
{
	unsigned bits = st_dtype_bits(d);
	if (bits % 8 == 0) {
		*bytes = bits / 8;
		*elems = 1;
	} else if (bits == 4) {
		*bytes = 1;
		*elems = 2;
	} else { /* 6 bits: four elements in three bytes */
		*bytes = 3;
		*elems = 4;
	}
}
