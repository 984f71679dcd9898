/* util/sysmem.h: the memory a node and this process's control group have left. */
#ifndef NST_SYSMEM_H
#define NST_SYSMEM_H

#include <stddef.h>

typedef struct {
    size_t total;       /* MemTotal (0: unknown) */
    size_t available;   /* MemAvailable: what the node can still give without swapping (0: unknown) */
    size_t group_limit; /* the memory control group's limit, 0 when none is set */
    size_t group_used;  /* its working set: usage less inactive page cache */
    char group[256];    /* its directory, for messages */
    size_t headroom;    /* what is left before either limit: min(available, limit - used) */
} nst_sysmem;

/* Read /proc/meminfo and this process's memory cgroup (v2, or v1's memory controller). */
void nst_sysmem_read(nst_sysmem *m);

#endif
