/* mpi/launch_fence.h: for the files of mpi/ only: a barrier through the launcher (PMIx), right
 * after MPI_Init and before any rank's first message (launch_fence.c says why). */
#ifndef NST_LAUNCH_FENCE_H
#define NST_LAUNCH_FENCE_H

#include <stddef.h>

/* Every process of the job through a PMIx fence that collects data (each rank puts a value of its
 * own first), where Open MPI runs on a PMIx client: 1 when the fence was made, 0 when there is no
 * PMIx client to make it with, -1 when it failed (why: PMIx's words). Collective on the world. */
int nst_launch_fence(char *why, size_t cap);

#endif
