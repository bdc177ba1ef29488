/*
 * inventory.h - stinfo's config-aware inventory: the config.json beside
 * a checkpoint compared with its tensors (libst's st_arch_inventory), as
 * summary lines, a JSON member and --check problems. (stdiff's
 * config.json keys are libst's st_arch_checkpoint_config_diff.)
 *
 * Not part of libst; tool code, so it prints (to the FILE or callback it
 * is given).
 */
#ifndef ST_INVENTORY_H
#define ST_INVENTORY_H

#include <stdio.h>

#include <st.h>

/*
 * The summary lines: "config:" (architecture, parameters implied and
 * found), then "missing:", "misshapen:" and "extra:" when there are any,
 * each listing at most 8 names before "... and N more".
 */
void inventory_print(FILE *f, const st_arch_config *cfg,
                     const st_arch_report *r);

/*
 * The same as one JSON object, stinfo --json's "inventory":
 * {"architecture", "layers", "parameters_implied", "parameters_found",
 *  "tensors_matched", "tensors_expected", "prefix", and the lists
 *  "missing" [{name, shape}], "misshapen" [{name, shape, expected}],
 *  "legacy_buffers", "aliases", "unknown" [{name, shape}]}, every item.
 */
void inventory_json(FILE *f, const st_arch_config *cfg,
                    const st_arch_report *r);

/*
 * For --check: every missing or misshapen parameter as one error, every
 * tensor the config does not explain as one warning (legacy buffers and
 * a tied head's alias are fine), each reported to fn as
 * "<path>: tensor '<name>': ...", of ck, the checkpoint at PATH opened
 * once by the caller. No config.json, or one that is malformed or lacks
 * the sizes it needs, implies nothing and is not reported here (the
 * summary says why). Returns the number of errors, or -1 with err's one
 * line when config.json exists but cannot be read (an I/O error: the
 * caller gives no answer) or memory runs out.
 */
int inventory_check(const st_checkpoint *ck, const char *path,
                    st_problem_fn fn, void *ctx, st_error *err);

#endif
