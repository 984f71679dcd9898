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

#define NST_MPI_TRY(call)                                                                         \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        if (rc_ != MPI_SUCCESS) return nst_comm_mpi_fail(rc_, #call);                             \
    } while (0)

#endif
