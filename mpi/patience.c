/* mpi/patience.c: waits for MPI requests that test and nap instead of spinning (patience.h). The
 * caller marks the wait for the watchdog (NST_MPI_MARKED), as for a blocking call. */
#include "patience.h"

#include <mpi.h>
#include <time.h>

#include "../util/timer.h"
#include "comm_mpi.h"

/* The nap the schedule gives after waiting since t0. */
static void nap_since(double t0)
{
    const double s = nst_patience_nap(nst_now() - t0);
    if (s <= 0) return;
    struct timespec t = {0, (long)(s * 1e9)};
    nanosleep(&t, NULL); /* a signal ends it early: the next test comes sooner, no harm */
}

int nst_mpi_waitsome(int n, MPI_Request *req, int *count, int *idx)
{
    const double t0 = nst_now();
    for (;;) {
        int rc = MPI_Testsome(n, req, count, idx, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || *count != 0) return rc; /* some done, or none active (MPI_UNDEFINED) */
        nap_since(t0);
    }
}

int nst_mpi_waitall(int n, MPI_Request *req)
{
    const double t0 = nst_now();
    for (;;) {
        int done = 0, rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS || done) return rc;
        nap_since(t0);
    }
}

/* (MPI_Testall of one request is MPI_Test) */
int nst_mpi_wait(int rc, MPI_Request *req) { return rc != MPI_SUCCESS ? rc : nst_mpi_waitall(1, req); }
