/* mpi/comm_mpi.h: for the other files of mpi/ only: the MPI communicator of the current group and
 * the checked-call macro. */
#ifndef NST_COMM_MPI_H
#define NST_COMM_MPI_H

#include <mpi.h>

#include "../util/status.h"

MPI_Comm nst_comm_mpi(void);
/* The ranks of this node (MPI_Comm_split_type, shared memory), made at nst_comm_init. */
MPI_Comm nst_comm_node_mpi(void);
/* The current group's NCCL communicator slot (NULL until mpi/nccl.c makes one), and its release. */
void **nst_comm_nccl_slot(void);
void nst_comm_nccl_release(void **slot);
/* "MPI_<call> failed on rank R (host): <MPI error string>", recorded; NST_ERUNTIME. */
nst_status nst_comm_mpi_fail(int rc, const char *call);

#define NST_MPI_TRY(call)                                                                         \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        if (rc_ != MPI_SUCCESS) return nst_comm_mpi_fail(rc_, #call);                             \
    } while (0)

#endif
