/* mpi/patience.c: waits for MPI requests that test and nap instead of spinning (patience.h), and the
 * same pacing for other waits (NCCL's: nccl.c). The caller marks the wait for the watchdog
 * (NST_MPI_MARKED), as for a blocking call. */
#include "patience.h"

#include <mpi.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "../util/timer.h"
#include "comm_mpi.h"

/* this thread's spin (patience.h): each thread that waits judges its own core */
static _Thread_local double spin = NST_PATIENCE_SPIN;

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef nst_wait_clock wait_clock;

static wait_clock wait_begin(void) { return (wait_clock){nst_now(), thread_cpu(), 0}; }

/* Threads ready to run on the machine now (/proc/loadavg's fourth field, "running/total"), read at
 * most every 5 ms; 0 where it cannot be read (then only the core's share counts). */
static int runnable(double now)
{
    static _Thread_local double at = -1;
    static _Thread_local int n;
    if (at >= 0 && now - at < 0.005) return n;
    at = now, n = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return 0;
    if (fscanf(f, "%*f %*f %*f %d/", &n) != 1) n = 0;
    fclose(f);
    return n;
}

/* the spin judged once a wait, where it ended: at the wait's end or at the first nap */
static void judge(wait_clock *w, double waited)
{
    if (w->judged) return;
    w->judged = 1;
    if (!(waited >= NST_PATIENCE_SPIN_MIN)) return; /* too short to tell: no clock read */
    static _Thread_local int cores; /* (read once a thread, as runnable()'s cache) */
    if (!cores) cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const double cpu = thread_cpu() - w->c0; /* (before reading /proc: not the spin's CPU) */
    const int shared = nst_patience_shared(waited, cpu, runnable(w->t0 + waited), cores);
    spin = nst_patience_spin(spin, waited, shared);
}

/* after a test that found the wait unfinished: within the spin, test again; past it, judge the
 * spin once and nap until the wait ends (the judgement is for the next wait's spin) */
static void wait_more(wait_clock *w)
{
    const double waited = nst_now() - w->t0;
    if (!w->judged) {
        if (waited < spin) return;
        judge(w, waited);
    }
    const double s = nst_patience_nap(waited, 0);
    struct timespec t = {0, (long)(s * 1e9)};
    nanosleep(&t, NULL); /* a signal ends it early: the next test comes sooner, no harm */
}

static int wait_end(wait_clock *w, int rc)
{
    judge(w, nst_now() - w->t0);
    return rc;
}

nst_wait_clock nst_patience_begin(void) { return wait_begin(); }
void nst_patience_more(nst_wait_clock *w) { wait_more(w); }
void nst_patience_end(nst_wait_clock *w) { (void)wait_end(w, 0); }

int nst_mpi_waitsome(int n, MPI_Request *req, int *count, int *idx)
{
    wait_clock w = wait_begin();
    for (;;) {
        int rc = MPI_Testsome(n, req, count, idx, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || *count != 0) return wait_end(&w, rc); /* some done, or none active (MPI_UNDEFINED) */
        wait_more(&w);
    }
}

int nst_mpi_waitall(int n, MPI_Request *req)
{
    wait_clock w = wait_begin();
    for (;;) {
        int done = 0, rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || done) return wait_end(&w, rc);
        wait_more(&w);
    }
}

/* (MPI_Testall of one request is MPI_Test) */
int nst_mpi_wait(int rc, MPI_Request *req) { return rc != MPI_SUCCESS ? rc : nst_mpi_waitall(1, req); }
