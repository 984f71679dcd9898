/* mpi/first_contact.c: the ranks' first exchanges over MPI, made at the start and bounded in time
 * (see first_contact.h).
 *
 * MPI connects two ranks when they first exchange a message, so a network that cannot carry some
 * pairs (a firewall between nodes, an interface they cannot reach each other on, a connection
 * refused on a loaded node) shows only then: Open MPI prints a warning, and the collective or the
 * halo exchange then waits forever, often before the watchdog is armed. So nst_comm_init makes the
 * pairs meet at once: after its own exchanges (a barrier, the node split, the lifeline), every
 * rank exchanges one message with every other (up to PAIRS_ALL ranks; beyond, with the ranks at
 * distances +-1, +-2, +-4, ...: a socket per peer would not scale). A timer thread ends the job if
 * that has not completed within the watchdog's floor (5 minutes; more where this rank's MPI_Init
 * was slow enough, INIT_TIMES): a few bytes per pair, with nothing computed in
 * between, take milliseconds where the network works, so the bound only ever cuts a wait that
 * cannot end. Its line names the ranks this rank has not heard from, by host. Rank 0 speaks first;
 * another rank only if the job is still alive a while later (rank 0 got through, it did not). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "first_contact.h"

#include "comm.h"
#include "comm_mpi.h"
#include "lifeline.h"
#include "../util/plant.h"

#define OTHERS_LATER 10.0 /* a rank other than 0 waits this much longer: rank 0's line comes first */
#define LEAST_SECONDS 20.0 /* the test hook lowers the watchdog's floor to seconds; a loaded machine
                              can hold a rank's start for a few, so the bound stays above that */
#define INIT_TIMES 20.0    /* and above this many times this rank's MPI_Init: the machine's pace now
                              (a machine loaded many times over stretches every rank's start) */
#define PAIRS_ALL 256     /* up to this many ranks every pair meets */
#define PAIRS_TAG 7001

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running, done;
    double limit;
    int n, *peer;          /* the ranks this rank meets (nst_first_contact_pairs) */
    atomic_char *met;      /* per peer: its message came and this rank's went */
    atomic_int pairs_begun;
    clockid_t clock;       /* the condition variable's: CLOCK_MONOTONIC where it can be set */
} fc = {.mu = PTHREAD_MUTEX_INITIALIZER}; /* cv: initialised by nst_first_contact_begin */

/* "ranks 2, 3 on nsth-b; rank 5 on nsth-c": the peers not met, by host. */
static void unmet_by_host(char *out, size_t cap)
{
    int *rank = malloc(sizeof *rank * ((size_t)fc.n + 1)), n = 0;
    out[0] = 0;
    if (!rank) return;
    for (int i = 0; i < fc.n; i++)
        if (!atomic_load(&fc.met[i])) rank[n++] = fc.peer[i];
    nst_lifeline_ranks_by_host(rank, n, out, cap);
    free(rank);
}

static void too_late(double waited)
{
    char who[1024] = "", what[1400], line[2048];
    if (atomic_load(&fc.pairs_begun)) unmet_by_host(who, sizeof who);
    if (who[0])
        snprintf(what, sizeof what, "no exchange over MPI with %s in %.0f s, when every rank first meets the others", who, waited);
    else
        snprintf(what, sizeof what, "the ranks' first exchange over MPI has not completed in %.0f s (%d ranks; MPI_Init had returned)",
                 waited, nst_comm_world_size());
    snprintf(line, sizeof line,
             "rank %d (%s): %s: MPI cannot connect some of the ranks' hosts, and Open MPI's warnings above say why (a firewall "
             "between the nodes, or an interface they cannot reach each other on: set OMPI_MCA_btl_tcp_if_include to the cluster's "
             "network); nothing was rendered; ending the job with exit status 75: run again (or requeue) once the hosts can reach "
             "each other", nst_comm_world_rank(), nst_comm_host(), what);
    nst_watchdog_end(line);
}

static void *guard(void *p)
{
    (void)p;
    const double wait = fc.limit + (nst_comm_world_rank() == 0 ? 0 : OTHERS_LATER);
    struct timespec until;
    clock_gettime(fc.clock, &until);
    until.tv_sec += (time_t)wait;
    pthread_mutex_lock(&fc.mu);
    int r = 0;
    while (!fc.done && r == 0) r = pthread_cond_timedwait(&fc.cv, &fc.mu, &until);
    const int late = !fc.done;
    pthread_mutex_unlock(&fc.mu);
    if (late) too_late(wait);
    return NULL;
}

double nst_first_contact_limit(double floor, double init_seconds)
{
    double limit = floor > LEAST_SECONDS ? (double)(long)(floor + 0.5) : LEAST_SECONDS;
    const double paced = INIT_TIMES * (init_seconds > 0 ? init_seconds : 0);
    return paced > limit ? (double)(long)(paced + 0.5) : limit;
}

void nst_first_contact_begin(double init_seconds)
{
    if (nst_comm_world_size() < 2) return;
    pthread_condattr_t a; /* CLOCK_MONOTONIC: a clock set back cannot stretch the bound */
    pthread_condattr_init(&a);
    fc.clock = pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 ? CLOCK_MONOTONIC : CLOCK_REALTIME;
    pthread_cond_init(&fc.cv, &a);
    pthread_condattr_destroy(&a);
    fc.limit = nst_first_contact_limit(nst_watchdog_floor(), init_seconds), fc.done = 0;
    fc.running = pthread_create(&fc.thread, NULL, guard, NULL) == 0; /* without it the exchanges are merely unguarded */
}

void nst_first_contact_end(void)
{
    if (fc.running) {
        pthread_mutex_lock(&fc.mu);
        fc.done = 1;
        pthread_cond_signal(&fc.cv);
        pthread_mutex_unlock(&fc.mu);
        pthread_join(fc.thread, NULL);
        fc.running = 0;
    }
    free(fc.peer), free(fc.met);
    fc.peer = NULL, fc.met = NULL, fc.n = 0;
}

/* The ranks `me` meets, ascending: every other up to PAIRS_ALL ranks, else those at +-2^k. The
 * relation is symmetric (q meets me when me meets q), so every message sent has a receiver. */
int nst_first_contact_peers(int me, int size, int *peer)
{
    int n = 0;
    for (int q = 0; q < size; q++) {
        if (q == me) continue;
        int d = q > me ? q - me : me - q, take = size <= PAIRS_ALL;
        for (int k = 1; !take && k < size; k *= 2) take = d == k || size - d == k;
        if (take) peer[n++] = q;
    }
    return n;
}

nst_status nst_first_contact_pairs(void)
{
    static int me; /* static: a send still pending when an error returns below reads it */
    const int size = nst_comm_world_size();
    me = nst_comm_world_rank();
    if (size < 2) return NST_OK;
    fc.peer = malloc(sizeof *fc.peer * (size_t)size);
    fc.met = calloc((size_t)size, sizeof *fc.met);
    int *in = malloc(sizeof *in * (size_t)size);
    MPI_Request *req = malloc(sizeof *req * 2 * (size_t)size);
    int *idx = malloc(sizeof *idx * 2 * (size_t)size);
    char *half = calloc((size_t)size, 1);
    if (!fc.peer || !fc.met || !in || !req || !idx || !half) {
        free(in), free(req), free(idx), free(half);
        return nst_fail(NST_ENOMEM, "out of memory for the ranks' first exchange");
    }
    fc.n = nst_first_contact_peers(me, size, fc.peer);
    if (me == size - 1 && nst_planted("unmet")) fc.n = 0; /* planted: the others must name this rank */
    atomic_store(&fc.pairs_begun, 1);
    nst_status s = NST_OK;
    for (int i = 0; i < fc.n && s == NST_OK; i++) {
        int rc = MPI_Irecv(&in[i], 1, MPI_INT, fc.peer[i], PAIRS_TAG, MPI_COMM_WORLD, &req[2 * i]);
        if (rc == MPI_SUCCESS) rc = MPI_Isend(&me, 1, MPI_INT, fc.peer[i], PAIRS_TAG, MPI_COMM_WORLD, &req[2 * i + 1]);
        if (rc != MPI_SUCCESS) s = nst_comm_mpi_fail(rc, "MPI_Irecv/MPI_Isend (the ranks' first exchange)");
    }
    /* Poll, a millisecond apart: the guard ends the job when some pair never completes. */
    const struct timespec nap = {0, 1000000};
    for (int left = 2 * fc.n; s == NST_OK && left > 0;) {
        int got = 0, rc = MPI_Testsome(2 * fc.n, req, &got, idx, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) s = nst_comm_mpi_fail(rc, "MPI_Testsome (the ranks' first exchange)");
        if (s != NST_OK || got == MPI_UNDEFINED) got = 0; /* MPI_UNDEFINED: none active (left is 0 by then) */
        for (int j = 0; j < got; j++)
            if (half[idx[j] / 2]++) atomic_store(&fc.met[idx[j] / 2], 1); /* both its receive and send are done */
        left -= got;
        if (!got) nanosleep(&nap, NULL);
    }
    if (s != NST_OK) return s; /* requests may still be live in `in` and `req`: left, as the process ends on this error */
    free(in), free(req), free(idx), free(half);
    return s;
}
