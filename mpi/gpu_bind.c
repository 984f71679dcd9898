/* mpi/gpu_bind.c: which GPU a rank drives (gpu.binding) and which ranks of a node drive the same
 * one. Shared GPUs are found by PCI bus id, not index: under srun --gpus-per-task=1 every rank
 * sees "GPU 0", and those are different devices. */
#include <stdlib.h>
#include <string.h>

#include "../util/mem.h"
#include "comm.h"
#include "comm_mpi.h"

int nst_gpu_choose(const char *policy, int local_rank, int ngpu)
{
    if (ngpu <= 0) return -1;
    if (strcmp(policy, "visible0") == 0) return 0;
    return local_rank % ngpu; /* auto, local_rank */
}

#define BUS 32

nst_status nst_comm_gpu_sharers(const char *bus_id, int *sharers, int *max_sharers)
{
    const int ls = nst_comm_local_size();
    *sharers = *max_sharers = 1;
    nst_status s = NST_OK;
    char mine[BUS] = "";
    strncpy(mine, bus_id, BUS - 1);
    char *all = nst_alloc_array((size_t)ls, BUS, "GPU bus ids");
    if (!all) s = NST_ENOMEM;
    int rc = all ? MPI_Allgather(mine, BUS, MPI_CHAR, all, BUS, MPI_CHAR, nst_comm_node_mpi()) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) s = nst_comm_mpi_fail(rc, "MPI_Allgather (GPU bus ids)");
    if (s == NST_OK && mine[0]) {
        int n = 0;
        for (int i = 0; i < ls; i++) n += strncmp(all + (size_t)i * BUS, mine, BUS) == 0;
        *sharers = n;
    }
    nst_free(all);
    NST_TRY(s);
    int m = *sharers;
    NST_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    *max_sharers = m;
    return NST_OK;
}
