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

#endif
