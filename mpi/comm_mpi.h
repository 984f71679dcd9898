/* mpi/comm_mpi.h: for the other files of mpi/ only: the MPI communicator of the current group and
 * the checked-call macro. */
#ifndef NST_COMM_MPI_H
#define NST_COMM_MPI_H

#include <mpi.h>

#include "../util/status.h"

MPI_Comm nst_comm_mpi(void);
/* The ranks of this node (MPI_Comm_split_type, shared memory), made at nst_comm_init. */
MPI_Comm nst_comm_node_mpi(void);
/* The current group's NCCL communicator slot (NULL without NCCL), the world's (made by
 * nst_comm_nccl_open), and a slot's release. */
void **nst_comm_nccl_slot(void);
void **nst_comm_nccl_world_slot(void);
void nst_comm_nccl_release(void **slot);
/* The NCCL side of nst_comm_split, on every rank of the parent group: without a parent
 * communicator nothing; else ncclCommSplit by color (< 0: in no group) and key, and *child the
 * new communicator (NULL for color < 0 and for a group of one, group_size: its MPI size). */
nst_status nst_comm_nccl_split(void *parent, int color, int key, int group_size, void **child);
/* "MPI_<call> failed on rank R (host): <MPI error string>", recorded; NST_ERUNTIME. */
nst_status nst_comm_mpi_fail(int rc, const char *call);

/* The watchdog (watchdog.c): started by nst_comm_init on a world of 2 or more and stopped by
 * nst_comm_finalize; told when this rank enters (1) and leaves (0) a blocking MPI call, so that
 * it can tell a rank waiting for the others from one still computing; and told by nst_comm_abort
 * that this rank ends the job with its own message (it is not lost). */
nst_status nst_watchdog_start(void);
void nst_watchdog_stop(void);
void nst_watchdog_mpi(int enter);
/* A request of a marked wait completed: the wait is moving (comm.c's exchange of many messages). */
void nst_watchdog_mpi_progress(void);
void nst_watchdog_aborting(void);
/* The watchdog's way to end the job: LINE on stderr and in NSTBATCH_END_NOTE, MPI_Abort with 75
 * (and _exit(75) if that does not return in time); and auto's floor, in seconds (5 minutes, or
 * the test hook NSTBATCH_STALL_FLOOR). */
_Noreturn void nst_watchdog_end(const char *line);
double nst_watchdog_floor(void);

/* Waits that test and nap instead of spinning (patience.h), each as MPI_Wait, MPI_Waitsome and
 * MPI_Waitall would (statuses ignored). nst_mpi_wait takes the return code of the call that
 * started the request (an error from the start returns it, with no wait), so that a start and
 * its wait read as one call: NST_MPI_TRY_WAIT below. */
int nst_mpi_wait(int rc, MPI_Request *req);
int nst_mpi_waitsome(int n, MPI_Request *req, int *count, int *idx);
int nst_mpi_waitall(int n, MPI_Request *req);

/* A blocking MPI call marked for the watchdog, as an expression: the call's return code. */
#define NST_MPI_MARKED(call)                                                                      \
    __extension__({                                                                               \
        nst_watchdog_mpi(1);                                                                      \
        int mrc_ = (call);                                                                        \
        nst_watchdog_mpi(0);                                                                      \
        mrc_;                                                                                     \
    })

#define NST_MPI_TRY(call)                                                                         \
    do {                                                                                          \
        int rc_ = NST_MPI_MARKED(call);                                                           \
        if (rc_ != MPI_SUCCESS) return nst_comm_mpi_fail(rc_, #call);                             \
    } while (0)

/* A non-blocking call (START, which makes *REQ) and its patient wait, marked for the watchdog as
 * one blocking call; a failure is named after START. */
#define NST_MPI_TRY_WAIT(start, req)                                                              \
    do {                                                                                          \
        int rc_ = NST_MPI_MARKED(nst_mpi_wait((start), (req)));                                   \
        if (rc_ != MPI_SUCCESS) return nst_comm_mpi_fail(rc_, #start);                            \
    } while (0)

#endif
