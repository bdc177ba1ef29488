/*
 * layers.h - compaction of repeated layers for stinfo's tensor table:
 * names that differ in one dot-separated integer component, with the
 * same dtype and shape, collapse into one row, h.0.x ... h.11.x into
 * h.{0..11}.x. Passes run from the last integer component to the first,
 * and a component already collapsed is part of the key of the next pass,
 * so model.layers.{0..31}.experts.{0..7}.w1 appears only when every layer
 * has the same experts: a row always stands for the full cartesian
 * product of its sets. A set lists runs of three or more as a..b
 * ({0..3,7}); an integer is digits without a leading zero, at most nine
 * of them. Not part of libst.
 */
#ifndef ST_LAYERS_H
#define ST_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include <st.h>

typedef struct layers_comp {
	const char *s; /* raw bytes: a slice of the name, or an owned set */
	size_t len;
	int owned;
} layers_comp;

/* One row of the table. Callers read members and nmembers only. */
typedef struct layers_row {
	size_t *members;   /* indices into the tensors given, ascending */
	size_t nmembers;
	layers_comp *comps; /* dot components, sets included */
	size_t ncomps;
	int cand;          /* next component to try collapsing, or -1 */
	uint64_t value;    /* the integer at cand (while sorting a pass) */
	int dead;          /* merged into another row */
} layers_row;

/*
 * Rows for tensors[0..n) (with all, one per tensor), in the order of
 * their first members. The rows borrow the tensors' names: keep the
 * tensors until layers_free. Never fails (allocation failure exits, as
 * every cli_x allocation).
 */
layers_row *layers_compact(const st_tensor *const *tensors, size_t n, int all,
                           size_t *nrows);
/*
 * The same, and tensors of different classes (klass[i] for tensors[i])
 * never share a row: stdiff folds only the pairs whose verdicts read
 * alike. klass NULL: all of one class.
 */
layers_row *layers_compact_classes(const st_tensor *const *tensors,
                                   const uint64_t *klass, size_t n, int all,
                                   size_t *nrows);
void layers_free(layers_row *rows, size_t nrows);

/*
 * The row's name, components joined by dots ("h.{0..11}.attn.bias"), as
 * raw bytes (a tensor name may hold any byte, NUL included), *len of
 * them, NUL-terminated; the caller frees it.
 */
char *layers_row_name(const layers_row *r, size_t *len);

#endif
