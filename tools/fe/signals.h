/*
 * signals.h - the signal handling of the tools that write files: a signal
 * that would kill the process only sets a flag, the tool polls it, removes
 * its temporaries, and then dies of the same signal. Not part of libst.
 *
 * Recipe:
 *   1. signals_catch() once at start;
 *   2. signals_caught() between units of work; when it is not 0, stop;
 *   3. signals_block() around pthread_create, so the handler runs on the
 *      main thread (it only sets the flag, any thread would do);
 *   4. after removing the temporaries, signals_reraise().
 */
#ifndef ST_SIGNALS_H
#define ST_SIGNALS_H

#include <signal.h>

/*
 * Catch SIGINT, SIGTERM, SIGHUP and SIGQUIT into the flag. Ignore SIGPIPE
 * (a report to a closed pipe must not kill a run halfway) and SIGXFSZ (a
 * file size limit must come back from write as EFBIG, so the temporaries
 * get removed; by default it kills the process).
 */
void signals_catch(void);
/* The signal caught, or 0. Async-signal-safe, thread-safe. */
int signals_caught(void);
/* Block the caught signals in the calling thread; *old gets the old mask. */
void signals_block(sigset_t *old);
/*
 * When a signal was caught, die of it (default action, re-raised), or
 * _exit(128 + signal) should it not kill; else return.
 */
void signals_reraise(void);
/* libst's cancel callback: a signal caught (ctx unused). */
int signals_cancel_cb(void *ctx);

#endif
