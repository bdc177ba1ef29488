/*
 * signals.c - catch, poll and re-raise (see signals.h). Removing the
 * temporaries is the tool's: a handler cannot do it safely, so it only
 * records the signal.
 */
#include "fe/signals.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static atomic_int caught;

static const int fatal[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void on_signal(int sig)
{
	atomic_store(&caught, sig);
}

void signals_catch(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
		sigaction(fatal[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
}

int signals_caught(void)
{
	return atomic_load(&caught);
}

int signals_cancel_cb(void *ctx)
{
	(void)ctx;
	return signals_caught();
}

void signals_block(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
		sigaddset(&set, fatal[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void signals_reraise(void)
{
	int sig = signals_caught();
	if (!sig)
		return;
	signal(sig, SIG_DFL);
	/* The signal may be blocked here (after signals_block): unblock it,
	 * or raise would only leave it pending. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}
