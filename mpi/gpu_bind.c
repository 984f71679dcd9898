/* mpi/gpu_bind.c: which GPU a rank drives (gpu.binding), which ranks of a node drive the same one,
 * and the free memory those agree on. GPUs are identified by UUID, never by index or PCI bus id:
 * under srun --gpus-per-task=1 every rank sees "GPU 0", and those are different devices; MIG
 * slices of one GPU share its bus id, and each has a UUID of its own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../util/mem.h"
#include "comm.h"
#include "comm_mpi.h"

static int view_size(const nst_gpu_view *v) { return v->n < NST_GPU_VIEW_MAX ? v->n : NST_GPU_VIEW_MAX; }

static int same_view(const nst_gpu_view *a, const nst_gpu_view *b)
{
    return a->n == b->n && memcmp(a->uuid, b->uuid, (size_t)view_size(a) * NST_GPU_UUID_BYTES) == 0;
}

int nst_gpu_choose(const char *policy, int me, const nst_gpu_view *views, int nlocal)
{
    if (me < 0 || me >= nlocal) return -1;
    const int n = view_size(&views[me]);
    if (n <= 0) return -1;
    if (strcmp(policy, "visible0") == 0) return 0;
    if (strcmp(policy, "local_rank") == 0) return me % n;
    /* auto: ranks that see the same GPUs (all of the node's, or their socket's under
     * --gpu-bind=closest) spread over them in local-rank order; a rank alone with its view (one
     * GPU each, --gpus-per-task=1) takes its first */
    int pos = 0;
    for (int i = 0; i < me; i++) pos += same_view(&views[i], &views[me]);
    return pos % n;
}

nst_status nst_comm_gpu_bind(const char *policy, const nst_gpu_view *mine, int *gpu)
{
    const int ls = nst_comm_local_size();
    *gpu = -1;
    nst_gpu_view *all = nst_alloc_array((size_t)ls, sizeof *all, "the node's GPU views");
    nst_status s = all ? NST_OK : NST_ENOMEM;
    /* every rank takes part, or the others would wait in the allgather */
    int rc = all ? NST_MPI_MARKED(MPI_Allgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, nst_comm_node_mpi())) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) s = nst_comm_mpi_fail(rc, "MPI_Allgather (GPU views)");
    if (s == NST_OK) *gpu = nst_gpu_choose(policy, nst_comm_local_rank(), all, ls);
    nst_free(all);
    return s;
}

/* Every local rank's id, gathered (NULL after a failure, recorded). */
static char *gather_ids(const char *gpu_id, nst_status *s)
{
    char mine[NST_GPU_ID_CHARS] = "";
    strncpy(mine, gpu_id, NST_GPU_ID_CHARS - 1);
    char *all = nst_alloc_array((size_t)nst_comm_local_size(), NST_GPU_ID_CHARS, "GPU ids");
    *s = all ? NST_OK : NST_ENOMEM;
    int rc = all ? NST_MPI_MARKED(MPI_Allgather(mine, NST_GPU_ID_CHARS, MPI_CHAR, all, NST_GPU_ID_CHARS, MPI_CHAR, nst_comm_node_mpi())) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) {
        *s = nst_comm_mpi_fail(rc, "MPI_Allgather (GPU ids)");
        nst_free(all);
        all = NULL;
    }
    return all;
}

nst_status nst_comm_gpu_sharers(const char *gpu_id, int *sharers, int *max_sharers)
{
    const int ls = nst_comm_local_size();
    *sharers = *max_sharers = 1;
    nst_status s;
    char *all = gather_ids(gpu_id, &s);
    if (all && gpu_id[0]) {
        int n = 0;
        for (int i = 0; i < ls; i++) n += strncmp(all + (size_t)i * NST_GPU_ID_CHARS, gpu_id, NST_GPU_ID_CHARS - 1) == 0;
        *sharers = n;
    }
    nst_free(all);
    NST_TRY(s);
    int m = *sharers;
    NST_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    *max_sharers = m;
    return NST_OK;
}

nst_status nst_comm_node_barrier(void)
{
    NST_MPI_TRY(MPI_Barrier(nst_comm_node_mpi()));
    return NST_OK;
}

nst_status nst_comm_gpu_min_free(const char *gpu_id, size_t mine, size_t *agreed)
{
    const int ls = nst_comm_local_size();
    *agreed = 0;
    nst_status s;
    char *ids = gather_ids(gpu_id, &s);
    uint64_t *free_b = nst_alloc_array((size_t)ls, sizeof *free_b, "free GPU memory");
    if (s == NST_OK && !free_b) s = NST_ENOMEM;
    uint64_t m = mine;
    int rc = free_b ? NST_MPI_MARKED(MPI_Allgather(&m, 1, MPI_UINT64_T, free_b, 1, MPI_UINT64_T, nst_comm_node_mpi())) : MPI_SUCCESS;
    if (s == NST_OK && rc != MPI_SUCCESS) s = nst_comm_mpi_fail(rc, "MPI_Allgather (free GPU memory)");
    if (s == NST_OK && gpu_id[0]) {
        m = UINT64_MAX;
        for (int i = 0; i < ls; i++)
            if (strncmp(ids + (size_t)i * NST_GPU_ID_CHARS, gpu_id, NST_GPU_ID_CHARS - 1) == 0 && free_b[i] < m) m = free_b[i];
        *agreed = (size_t)m;
    }
    nst_free(ids);
    nst_free(free_b);
    return s;
}
