/* mpi/nccl.c: the Gram allreduce and the halo exchange on device buffers with NCCL, one
 * communicator per rank group.
 * The world's is made when the device opens (nst/run/device.c); a group's is split from its parent's
 * when the group is made (nst_comm_split), sharing the parent's resources (splitShare), not at the
 * group's first Gram sum, where it allocated device memory in the middle of an iteration.
 *
 * Communicators are non-blocking (config.blocking = 0), so no NCCL call can hang a rank: every
 * wait polls ncclCommGetAsyncError and the stream, and a peer that died or a network error ends
 * in MPI_Abort with one message after gpu.nccl_timeout seconds at most (not in ncclCommAbort,
 * which can itself wait: fatal()). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../util/timer.h"
#include "comm.h"
#include "comm_mpi.h"
#include "patience.h"

#ifdef NST_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

int nst_comm_nccl_built(void) { return 1; }

void nst_comm_nccl_version(char *out, size_t cap)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) v = NCCL_VERSION_CODE;
    snprintf(out, cap, "NCCL %d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
}

/* Ends the job from this rank. Not through ncclCommAbort first: NCCL's abort waits for its own
 * stream, which waits on ours, so a kernel of ours that hangs before the collective would hang the
 * abort and MPI_Abort would never come; the processes' end frees the GPUs. */
static void fatal(const char *what, const char *detail)
{
    char msg[512];
    snprintf(msg, sizeof msg, "NCCL %s failed on rank %d (%s): %s; aborting every rank", what, nst_comm_world_rank(), nst_comm_host(),
             detail);
    nst_comm_abort(1, msg);
}

/* Wait until the communicator has no operation in progress (and, with a stream, the stream's
 * work is done): errors and the timeout end the job. Paced as the MPI waits (patience.h): tested
 * over and over for a spin, so a wait of an iteration's ends as soon as the stream does (a fixed
 * 20 us nap, with Linux's timer slack about 70 us, came twice an iteration), then between naps
 * that grow with the time waited. */
static void wait_for(ncclComm_t comm, cudaStream_t stream, const char *what, double timeout)
{
    double t0 = nst_now();
    nst_wait_clock clock = nst_patience_begin();
    nst_watchdog_mpi(1); /* waiting for the other ranks, as inside MPI (the watchdog's "not computing") */
    for (;;) {
        ncclResult_t r = ncclSuccess;
        ncclResult_t q = ncclCommGetAsyncError(comm, &r);
        if (q != ncclSuccess) fatal(what, ncclGetErrorString(q));
        if (r != ncclSuccess && r != ncclInProgress) fatal(what, ncclGetLastError(comm)[0] ? ncclGetLastError(comm) : ncclGetErrorString(r));
        if (r == ncclSuccess) {
            if (!stream) break;
            cudaError_t e = cudaStreamQuery(stream);
            if (e == cudaSuccess) break;
            if (e != cudaErrorNotReady) fatal(what, cudaGetErrorString(e));
            /* "not ready" is no error, but the runtime may keep it as the thread's last one, which
             * the next kernel launch's check (cudaGetLastError) would take for a fault */
            (void)cudaGetLastError();
        }
        if (nst_now() - t0 > timeout) {
            char d[128];
            snprintf(d, sizeof d, "no progress in %.0f s (gpu.nccl_timeout): a peer died or hangs", timeout);
            fatal(what, d);
        }
        nst_patience_more(&clock);
    }
    nst_patience_end(&clock);
    nst_watchdog_mpi(0);
}

static double set_up_timeout = 300; /* gpu.nccl_timeout, from nst_comm_nccl_open */

nst_status nst_comm_nccl_open(double timeout)
{
    void **slot = nst_comm_nccl_world_slot();
    set_up_timeout = timeout;
    if (*slot || nst_comm_world_size() == 1) return NST_OK;
    if (nst_comm_size() != nst_comm_world_size())
        return nst_fail(NST_ERUNTIME, "nst_comm_nccl_open called inside a rank group on rank %d: it is world-collective", nst_comm_world_rank());
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    nst_status s = NST_OK;
    if (nst_comm_world_rank() == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess) s = nst_fail(NST_ERUNTIME, "ncclGetUniqueId failed on rank %d (%s): %s", nst_comm_world_rank(), nst_comm_host(),
                                           ncclGetErrorString(r));
    }
    NST_TRY(nst_comm_agree(s));
    NST_TRY(nst_comm_bcast(&id, sizeof id, 0));
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    cfg.splitShare = 1; /* the groups split from it share its resources instead of allocating their own */
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclCommInitRankConfig(&comm, nst_comm_world_size(), id, nst_comm_world_rank(), &cfg);
    if (r != ncclSuccess && r != ncclInProgress)
        s = nst_fail(NST_ERUNTIME, "ncclCommInitRankConfig failed on rank %d (%s): %s", nst_comm_world_rank(), nst_comm_host(),
                     ncclGetErrorString(r));
    /* agreed before the wait: non-blocking, every rank's call returns at once, and a rank whose call
     * failed would otherwise leave the others in NCCL's start-up handshake until the timeout. On a
     * failure the job ends; a set-up still in progress is left to the process's end (an abort
     * would wait for the handshake). */
    NST_TRY(nst_comm_agree(s));
    wait_for(comm, NULL, "communicator set-up", timeout);
    *slot = comm;
    return NST_OK;
}

void nst_comm_nccl_close(void) { nst_comm_nccl_release(nst_comm_nccl_world_slot()); }

/* Non-blocking, a split is an operation on the parent (NVIDIA/nccl issue #1472): it is done, and
 * *child filled in, when the parent leaves ncclInProgress; then the child's own state is checked. */
nst_status nst_comm_nccl_split(void *parent, int color, int key, int group_size, void **child)
{
    *child = NULL;
    if (!parent) return NST_OK;
    ncclComm_t p = (ncclComm_t)parent, c = NULL;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    cfg.splitShare = 1;
    /* a group of one sums nothing: no communicator (every rank of it decides alike: it is alone) */
    ncclResult_t r = ncclCommSplit(p, color < 0 || group_size < 2 ? NCCL_SPLIT_NOCOLOR : color, key, &c, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) fatal("ncclCommSplit (a rank group)", ncclGetErrorString(r));
    wait_for(p, NULL, "ncclCommSplit (a rank group)", set_up_timeout);
    if (c) wait_for(c, NULL, "ncclCommSplit (the new group)", set_up_timeout);
    *child = c;
    return NST_OK;
}

nst_status nst_comm_nccl_sum_doubles(double *dev, size_t n, void *stream, double timeout)
{
    if (nst_comm_size() == 1 || n == 0) return NST_OK;
    ncclComm_t comm = (ncclComm_t)*nst_comm_nccl_slot();
    if (!comm)
        return nst_fail(NST_ERUNTIME, "NCCL Gram sum on rank %d (%s): this rank group has no NCCL communicator (none was opened, or "
                                      "the group was not made by nst_comm_split)", nst_comm_world_rank(), nst_comm_host());
    /* NCCL adds in its ring or tree order, which depends on the communicator: a batch group and the
     * world agree to fp64 rounding here, not bit for bit as on the MPI path (rank order). An
     * allgather added in rank order would restore it at R x 4.9 MB per iteration: not worth it
     * across nodes; docs/BATCHES.md says so. */
    ncclResult_t r = ncclAllReduce(dev, dev, n, ncclFloat64, ncclSum, comm, (cudaStream_t)stream);
    if (r != ncclSuccess && r != ncclInProgress) fatal("ncclAllReduce (Gram sums)", ncclGetErrorString(r));
    wait_for(comm, (cudaStream_t)stream, "ncclAllReduce (Gram sums)", timeout);
    return NST_OK;
}

nst_status nst_comm_nccl_exchange(const nst_comm_msg *sends, int nsend, const nst_comm_msg *recvs, int nrecv, void *stream, double timeout)
{
    if (nsend + nrecv == 0) return NST_OK;
    ncclComm_t comm = (ncclComm_t)*nst_comm_nccl_slot();
    if (!comm)
        return nst_fail(NST_ERUNTIME, "NCCL halo exchange on rank %d (%s): this rank group has no NCCL communicator", nst_comm_world_rank(),
                        nst_comm_host());
    /* one group, so that the sends and receives progress together (NCCL's rule for point-to-point
     * calls that depend on each other); a non-blocking communicator's calls may say "in progress" */
    ncclResult_t r = ncclGroupStart();
    for (int i = 0; (r == ncclSuccess || r == ncclInProgress) && i < nrecv; i++)
        if (recvs[i].bytes) r = ncclRecv(recvs[i].buf, recvs[i].bytes, ncclUint8, recvs[i].peer, comm, (cudaStream_t)stream);
    for (int i = 0; (r == ncclSuccess || r == ncclInProgress) && i < nsend; i++)
        if (sends[i].bytes) r = ncclSend(sends[i].buf, sends[i].bytes, ncclUint8, sends[i].peer, comm, (cudaStream_t)stream);
    ncclResult_t e = ncclGroupEnd(); /* (ended whatever happened inside: a group left open would take in the next call) */
    if (r == ncclSuccess || r == ncclInProgress) r = e;
    if (r != ncclSuccess && r != ncclInProgress) fatal("ncclSend/ncclRecv (halo exchange)", ncclGetErrorString(r));
    wait_for(comm, (cudaStream_t)stream, "ncclSend/ncclRecv (halo exchange)", timeout);
    return NST_OK;
}

void nst_comm_nccl_release(void **slot)
{
    if (!*slot) return;
    ncclComm_t comm = (ncclComm_t)*slot;
    /* finalize flushes the communicator's work (non-blocking: wait a bounded time), then free it;
     * the world's that does not finish is aborted instead, a group's ends the job (below) */
    ncclResult_t r = ncclCommFinalize(comm);
    double t0 = nst_now();
    while ((r == ncclSuccess || r == ncclInProgress) && ncclCommGetAsyncError(comm, &r) == ncclSuccess && r == ncclInProgress &&
           nst_now() - t0 < 10) {
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
    if (r == ncclSuccess) ncclCommDestroy(comm);
    else if (slot != nst_comm_nccl_world_slot()) /* a group's abort would abort the world's shared resources (splitShare) too */
        fatal("ncclCommFinalize (a rank group)", r == ncclInProgress ? "not finished within 10 s" : ncclGetErrorString(r));
    else
        ncclCommAbort(comm); /* the world's, at the end: the outputs are written, the job is done */
    *slot = NULL;
}

#else /* built without NCCL */

int nst_comm_nccl_built(void) { return 0; }

void nst_comm_nccl_version(char *out, size_t cap) { snprintf(out, cap, "no NCCL in this build"); }

nst_status nst_comm_nccl_open(double timeout)
{
    (void)timeout;
    return NST_OK;
}

void nst_comm_nccl_close(void) {}

nst_status nst_comm_nccl_split(void *parent, int color, int key, int group_size, void **child)
{
    (void)parent, (void)color, (void)key, (void)group_size;
    *child = NULL;
    return NST_OK;
}

nst_status nst_comm_nccl_sum_doubles(double *dev, size_t n, void *stream, double timeout)
{
    (void)dev, (void)n, (void)stream, (void)timeout;
    return nst_fail(NST_ERUNTIME, "the Gram allreduce asked for NCCL, but this build has none");
}

nst_status nst_comm_nccl_exchange(const nst_comm_msg *sends, int nsend, const nst_comm_msg *recvs, int nrecv, void *stream, double timeout)
{
    (void)sends, (void)nsend, (void)recvs, (void)nrecv, (void)stream, (void)timeout;
    return nst_fail(NST_ERUNTIME, "the halo exchange asked for NCCL, but this build has none");
}

void nst_comm_nccl_release(void **slot) { *slot = NULL; }

#endif
