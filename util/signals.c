/* util/signals.c: the stop-and-checkpoint signals (see signals.h). */
#include "signals.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t pending, speaks;
static int interrupts;        /* SIGINTs taken (atomic: any thread may run the handler) */
static long long first_ns;    /* when the first came */

/* the first of several signals names the stop (a SIGINT, then a launcher's SIGTERM: "SIGINT") */
static void on_signal(int sig)
{
    if (!pending) pending = sig;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* (async-signal-safe) */
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Ctrl-C: the first asks for the stop as SIGTERM does, and says so; one more, a second or more
 * later, ends the process at once (the signal raised again with its default action, delivered as
 * this handler returns). Repeats within the second are one Ctrl-C delivered twice (the terminal's
 * to the process group, and `timeout` or a wrapper passing its own on), as tools/nstbatch-mpirun
 * takes them. */
static void on_interrupt(int sig)
{
    if (__atomic_fetch_add(&interrupts, 1, __ATOMIC_SEQ_CST) == 0) {
        __atomic_store_n(&first_ns, now_ns(), __ATOMIC_SEQ_CST);
        on_signal(sig);
        if (!speaks) return;
        static const char msg[] = "\nnstbatch: Ctrl-C: stopping at the next iteration's end, with a checkpoint where checkpoint.path "
                                  "is set; Ctrl-C again (a second later) stops at once\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w; /* (nothing to do where stderr is gone) */
        return;
    }
    const long long first = __atomic_load_n(&first_ns, __ATOMIC_SEQ_CST);
    if (first == 0 || now_ns() - first < 1000000000LL) return;
    signal(sig, SIG_DFL);
    raise(sig);
}

static int ignored(int sig)
{
    struct sigaction old;
    return sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN;
}

static void take(int sig, void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* reads and writes in progress go on; the flag is polled */
    sigaction(sig, &sa, NULL);
}

void nst_signals_install(void)
{
    take(SIGUSR1, on_signal);
    take(SIGTERM, on_signal);
    if (!ignored(SIGHUP)) take(SIGHUP, on_signal); /* (nohup's ignored SIGHUP kept so) */
    /* A reader of stdout or stderr that has gone (`| tee` ended by the same Ctrl-C, a dropped ssh
     * session's pipe) must not end the run between its stop and its checkpoint, or a finished render
     * before its output: writes to it fail (EPIPE) and are lost instead. */
    signal(SIGPIPE, SIG_IGN);
}

void nst_signals_install_interrupt(int says)
{
    if (ignored(SIGINT)) return; /* (a script's background run: kept so) */
    speaks = says != 0;
    take(SIGINT, on_interrupt);
}

int nst_signal_pending(void) { return (int)pending; }

const char *nst_signal_name(int sig)
{
    static char buf[32];
    if (sig == SIGUSR1) return "SIGUSR1";
    if (sig == SIGTERM) return "SIGTERM";
    if (sig == SIGINT) return "SIGINT (Ctrl-C)";
    if (sig == SIGHUP) return "SIGHUP (its terminal closed)";
    snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}
