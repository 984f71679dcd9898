/* mpi/notice.c: stop notices between rank groups (see notice.h). */
#include "notice.h"

#include <stdlib.h>

#include "comm.h"
#include "comm_mpi.h"

#define TAG 0x57 /* distinct from the point-to-point tags of comm.c */

static MPI_Request *reqs;
static int nreqs, cap;
static int *sent_to;   /* per world rank: notices this rank posted to it */
static int received;
static int payload = 1;

nst_status nst_notice_post(int to)
{
    int n = nst_comm_world_size();
    if (!sent_to) sent_to = calloc((size_t)n, sizeof *sent_to);
    if (nreqs == cap) {
        int c = cap ? 2 * cap : 16;
        MPI_Request *r = realloc(reqs, sizeof *r * (size_t)c);
        if (r) reqs = r, cap = c;
    }
    if (!sent_to || nreqs == cap) return nst_fail(NST_ENOMEM, "out of memory posting a stop notice");
    NST_MPI_TRY(MPI_Isend(&payload, 1, MPI_INT, to, TAG, MPI_COMM_WORLD, &reqs[nreqs]));
    nreqs++;
    sent_to[to]++;
    return NST_OK;
}

static nst_status take_one(void)
{
    int v;
    NST_MPI_TRY(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    received++;
    return NST_OK;
}

int nst_notice_received(void)
{
    for (;;) {
        int flag = 0;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) break;
        if (take_one() != NST_OK) break;
    }
    return received > 0;
}

nst_status nst_notice_finish(void)
{
    int n = nst_comm_world_size(), me = nst_comm_world_rank();
    int *counts = calloc((size_t)n, sizeof *counts);
    if (!counts) return nst_fail(NST_ENOMEM, "out of memory finishing the stop notices");
    for (int r = 0; sent_to && r < n; r++) counts[r] = sent_to[r];
    MPI_Request r;
    int rc = NST_MPI_MARKED(nst_mpi_wait(MPI_Iallreduce(MPI_IN_PLACE, counts, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r), &r));
    int expected = counts[me];
    free(counts);
    if (rc != MPI_SUCCESS) return nst_comm_mpi_fail(rc, "MPI_Iallreduce(stop notices)");
    while (received < expected) NST_TRY(take_one());
    if (nreqs) NST_MPI_TRY(nst_mpi_waitall(nreqs, reqs));
    free(reqs);
    free(sent_to);
    reqs = NULL, sent_to = NULL;
    nreqs = cap = received = 0;
    return NST_OK;
}
