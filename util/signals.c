/* util/signals.c: the stop-and-checkpoint signals (see signals.h). */
#include "signals.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t pending;

static void on_signal(int sig) { pending = sig; }

void nst_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* reads and writes in progress go on; the flag is polled */
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int nst_signal_pending(void) { return (int)pending; }

const char *nst_signal_name(int sig)
{
    static char buf[32];
    if (sig == SIGUSR1) return "SIGUSR1";
    if (sig == SIGTERM) return "SIGTERM";
    snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}
