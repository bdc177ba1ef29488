/*
 * order.h - the order to walk a checkpoint's tensors in: the one a trace
 * recorded, else the file's. stdiff --first walks A this way.
 */
#ifndef ST_ORDER_H
#define ST_ORDER_H

#include <stddef.h>

#include <st.h>

/*
 * The indices of ck's tensors in the order of the first file's
 * __metadata__ entry "order" (tensor names separated by commas, as
 * gpt2run --trace writes it: doc/trace.md), names it lists but ck lacks
 * skipped, each tensor once, the tensors it does not list after them in
 * checkpoint order (file by file, by data offset). Without the entry:
 * checkpoint order. *idx (st_checkpoint_n_tensors entries) is the
 * caller's, freed with free(). Returns 1 when a recorded order was used,
 * 0 for checkpoint order, -1 when out of memory.
 */
int order_tensors(const st_checkpoint *ck, size_t **idx);

#endif
