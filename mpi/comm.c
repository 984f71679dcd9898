/* mpi/comm.c: ranks, broadcasts, status agreement and sums over MPI (see comm.h). */
#include "comm.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/log.h"
#include "../util/mem.h"

static int world_rank, world_size = 1, local_rank, local_size = 1, initialised;
static char host[256] = "?";

static nst_status mpi_fail(int rc, const char *call)
{
    char err[MPI_MAX_ERROR_STRING] = "";
    int n = 0;
    MPI_Error_string(rc, err, &n);
    return nst_fail(NST_ERUNTIME, "%s failed on rank %d (%s): %s", call, world_rank, host, err);
}

#define MPI_TRY(call)                                                                             \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        if (rc_ != MPI_SUCCESS) return mpi_fail(rc_, #call);                                      \
    } while (0)

nst_status nst_comm_init(int *argc, char ***argv)
{
    gethostname(host, sizeof host - 1);
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) return nst_fail(NST_ERUNTIME, "MPI_Init failed on %s", host);
    initialised = 1;
    MPI_TRY(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    MPI_Comm node;
    MPI_TRY(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node));
    MPI_TRY(MPI_Comm_rank(node, &local_rank));
    MPI_TRY(MPI_Comm_size(node, &local_size));
    MPI_TRY(MPI_Comm_free(&node));
    return NST_OK;
}

void nst_comm_finalize(void)
{
    if (initialised) MPI_Finalize();
    initialised = 0;
}

int nst_comm_rank(void) { return world_rank; }
int nst_comm_size(void) { return world_size; }
int nst_comm_local_rank(void) { return local_rank; }
int nst_comm_local_size(void) { return local_size; }
const char *nst_comm_host(void) { return host; }

nst_status nst_comm_bcast(void *buf, size_t bytes, int root)
{
    unsigned char *p = buf;
    while (bytes > 0) { /* MPI counts are int: send in chunks of 1 GiB */
        int n = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
        MPI_TRY(MPI_Bcast(p, n, MPI_BYTE, root, MPI_COMM_WORLD));
        p += n;
        bytes -= (size_t)n;
    }
    return NST_OK;
}

nst_status nst_comm_bcast_alloc(unsigned char **buf, size_t *len, int root)
{
    unsigned long long n = world_rank == root ? *len : 0;
    MPI_TRY(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD));
    if (world_rank != root) {
        *len = (size_t)n;
        *buf = nst_alloc(n ? (size_t)n : 1, "a broadcast buffer");
        if (!*buf) nst_comm_abort(1, "out of memory receiving a broadcast"); /* the root would wait forever */
    }
    return nst_comm_bcast(*buf, (size_t)n, root);
}

#define CHUNK (1u << 30)

nst_status nst_comm_send(const void *buf, size_t bytes, int dest)
{
    const unsigned char *p = buf;
    do {
        int n = bytes > CHUNK ? (int)CHUNK : (int)bytes;
        MPI_TRY(MPI_Send(p, n, MPI_BYTE, dest, 7, MPI_COMM_WORLD));
        p += n;
        bytes -= (size_t)n;
    } while (bytes > 0);
    return NST_OK;
}

nst_status nst_comm_recv(void *buf, size_t bytes, int src)
{
    unsigned char *p = buf;
    do {
        int n = bytes > CHUNK ? (int)CHUNK : (int)bytes;
        MPI_TRY(MPI_Recv(p, n, MPI_BYTE, src, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        p += n;
        bytes -= (size_t)n;
    } while (bytes > 0);
    return NST_OK;
}

nst_status nst_comm_exchange(const nst_comm_msg *sends, int nsend, const nst_comm_msg *recvs, int nrecv)
{
    MPI_Request *req = nst_alloc_array((size_t)(nsend + nrecv) + 1, sizeof(MPI_Request), "exchange requests");
    if (!req) return NST_ENOMEM;
    int n = 0, rc = MPI_SUCCESS;
    for (int i = 0; i < nrecv && rc == MPI_SUCCESS; i++) {
        if (!recvs[i].bytes) continue;
        if (recvs[i].bytes > INT_MAX) rc = MPI_ERR_COUNT;
        else rc = MPI_Irecv(recvs[i].buf, (int)recvs[i].bytes, MPI_BYTE, recvs[i].peer, 11, MPI_COMM_WORLD, &req[n++]);
    }
    for (int i = 0; i < nsend && rc == MPI_SUCCESS; i++) {
        if (!sends[i].bytes) continue;
        if (sends[i].bytes > INT_MAX) rc = MPI_ERR_COUNT;
        else rc = MPI_Isend(sends[i].buf, (int)sends[i].bytes, MPI_BYTE, sends[i].peer, 11, MPI_COMM_WORLD, &req[n++]);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    nst_free(req);
    /* a half-done exchange leaves peers waiting: there is no clean way back */
    if (rc != MPI_SUCCESS) {
        mpi_fail(rc, "MPI halo exchange");
        nst_comm_abort(1, nst_fail_message());
    }
    return NST_OK;
}

nst_status nst_comm_check(nst_status mine)
{
    if (world_size == 1) return mine;
    int me = (int)mine, worst = 0;
    if (MPI_Allreduce(&me, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        nst_comm_abort(1, "MPI_Allreduce failed while ranks checked their status");
    return (nst_status)worst;
}

nst_status nst_comm_stats(const double *in, double *mn, double *mx, double *sum, size_t n)
{
    if (n > INT_MAX) return nst_fail(NST_ERUNTIME, "nst_comm_stats: too many values");
    MPI_TRY(MPI_Allreduce(in, mn, (int)n, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
    MPI_TRY(MPI_Allreduce(in, mx, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    MPI_TRY(MPI_Allreduce(in, sum, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    return NST_OK;
}

nst_status nst_comm_agree(nst_status mine)
{
    if (world_size == 1) return mine;
    /* the lowest rank that failed with a message of its own (ranks that only heard of a failure
     * through nst_comm_check have none), and the worst status */
    int me[2] = {mine != NST_OK && nst_fail_pending() ? world_rank : world_size, (int)mine}, all[2];
    int rc = MPI_Allreduce(&me[0], &all[0], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&me[1], &all[1], 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) nst_comm_abort(1, "MPI_Allreduce failed while ranks agreed on a status");
    if (all[1] == NST_OK) return NST_OK;
    if (all[0] == world_size) { /* failed, but nobody said why: the lowest failing rank speaks */
        me[0] = mine != NST_OK ? world_rank : world_size;
        if (MPI_Allreduce(&me[0], &all[0], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
            nst_comm_abort(1, "MPI_Allreduce failed while ranks agreed on a status");
    }
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", nst_fail_message());
    if (MPI_Bcast(msg, sizeof msg, MPI_CHAR, all[0], MPI_COMM_WORLD) != MPI_SUCCESS)
        nst_comm_abort(1, "MPI_Bcast failed while ranks agreed on a status");
    msg[sizeof msg - 1] = 0;
    nst_fail_clear();
    return nst_fail((nst_status)all[1], "%s", msg);
}

/* Sums in a fixed order: MPI_Allreduce's reduction order may depend on the algorithm chosen
 * for the message size; gathering to rank 0, adding in rank order and broadcasting is exact
 * and reproducible. The payloads (Gram sums, a few scalars) are small. */
nst_status nst_comm_sum_doubles(double *buf, size_t n)
{
    if (world_size == 1 || n == 0) return NST_OK;
    if (n > (size_t)1 << 28) return nst_fail(NST_ERUNTIME, "sum of %zu values is too large for one call", n);
    double *all = NULL;
    if (world_rank == 0) {
        all = nst_alloc_array((size_t)world_size * n, sizeof(double), "a reduction buffer");
        if (!all) nst_comm_abort(1, "out of memory for a reduction buffer on rank 0");
    }
    MPI_TRY(MPI_Gather(buf, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (world_rank == 0) { /* buf already holds rank 0's part: add ranks 1.. in order */
        for (int r = 1; r < world_size; r++)
            for (size_t i = 0; i < n; i++) buf[i] += all[(size_t)r * n + i];
        nst_free(all);
    }
    MPI_TRY(MPI_Bcast(buf, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    return NST_OK;
}

void nst_comm_library_version(char *out, size_t cap)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    MPI_Get_library_version(v, &n);
    char *cut = strpbrk(v, ",\n");
    if (cut) *cut = 0;
    snprintf(out, cap, "%s", v);
}

void nst_comm_abort(int exit_code, const char *msg)
{
    fprintf(stderr, "nstbatch: error: rank %d (%s): %s\n", world_rank, host, msg);
    fflush(stderr);
    if (initialised) MPI_Abort(MPI_COMM_WORLD, exit_code);
    exit(exit_code);
}
