/*
 * diff_json.h - stdiff --json: one JSON document on stdout of a
 * comparison libst made (st/diff.h), as stdiff(1) documents it:
 * {"equal", "only_in_a", "only_in_b", "tied_aliases", "changed",
 * "metadata", "config", "tensors"}
 * and, with a quantized side, "dequantized". Not part of libst: the
 * results are libst's, their wording the tool's.
 */
#ifndef ST_TOOLS_DIFF_JSON_H
#define ST_TOOLS_DIFF_JSON_H

#include <st.h>

/* Print r (after st_diff_values) as the document, on stdout. */
void diff_json_print(const st_diff *r);

/*
 * stdiff --first --json: the first difference in A's order (recorded, else
 * the file's) as one document, {"schema", "equal", "order", "walked",
 * "tensors", "first": null or {"position", "kind" (only_in_a,
 * shape_changed, not_compared, differs), "name"... or "tensor": the
 * --json entry}, "only_in_b"}. Returns CLI_OK or CLI_NO, as --first.
 */
int diff_json_first(st_diff *r);

#endif
