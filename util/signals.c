/* util/signals.c: the stop-and-checkpoint signals (see signals.h). */
#include "signals.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t pending, interrupts, speaks;

static void on_signal(int sig) { pending = sig; }

/* Ctrl-C: the first asks for the stop as SIGTERM does, and says so; the second ends the process at
 * once (the signal raised again with its default action, delivered as this handler returns) */
static void on_interrupt(int sig)
{
    if (interrupts++) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    pending = sig;
    if (!speaks) return;
    static const char msg[] = "\nnstbatch: Ctrl-C: stopping at the end of this iteration, with a checkpoint where checkpoint.path "
                              "is set; Ctrl-C again stops at once\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w; /* (nothing to do where stderr is gone) */
}

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

void nst_signals_install_interrupt(int says)
{
    speaks = says != 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
}

int nst_signal_pending(void) { return (int)pending; }

const char *nst_signal_name(int sig)
{
    static char buf[32];
    if (sig == SIGUSR1) return "SIGUSR1";
    if (sig == SIGTERM) return "SIGTERM";
    if (sig == SIGINT) return "SIGINT (Ctrl-C)";
    snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}
