/* mpi/launch_fence.c: every rank past MPI_Init before any rank sends (see launch_fence.h).
 *
 * Open MPI 4.1 (Debian 12's 4.1.4) under srun --mpi=pmix (Slurm 22.05) can return from MPI_Init
 * on one node while the ranks of another are still waiting in MPI_Init's first PMIx fence (the
 * modex), before their PML has registered the handlers of incoming messages. The first message
 * sent to them (MPI_Comm_split_type's allreduce, in nstbatch's case) is dispatched through a NULL
 * handler, and they die of a segmentation fault inside MPI_Init. Seen in about 1 start in 60 of 2
 * nodes x 2 ranks on a loaded machine (tests/test_hosts.sh's Slurm checks), with a four-line
 * program as with nstbatch; core files showed the message (tag -12, from a rank of the other node)
 * and the empty handler table. MPI_Init's second fence collects no data, and under Slurm 22.05 a
 * fence without data holds only the ranks of one node (its plugin runs it as another collective):
 * with the last rank entering a PMIx_Fence of our own without data 3 s late, rank 0 on the other
 * node left it at once (NSTBATCH_PLANT=late, tests/test_hosts.sh), and the cores of a run that
 * still crashed had two ranks past it while the other two were still in the modex.
 *
 * A fence that collects every process's data cannot end before every process has entered it, so
 * before its first message every rank puts a value of its own and enters one, after its MPI_Init
 * has returned, and checks its status: no rank leaves it before every rank's MPI_Init has returned,
 * and no message reaches a rank still inside MPI_Init. The PMIx client is the one Open MPI already
 * uses (found among the loaded libraries: no second connection to the launcher, nothing to link);
 * where there is none (a singleton, an Open MPI with its own internal PMIx, another MPI) there is
 * nothing to do. A fence that never ends is cut by the first exchange's bound (first_contact.c),
 * which surrounds it. */
#include "launch_fence.h"

#include <stdio.h>

#if defined(__has_include)
#if __has_include(<pmix.h>)
#define NST_HAVE_PMIX_H 1
#endif
#endif

#ifdef NST_HAVE_PMIX_H
#include <dlfcn.h>
#include <pmix.h>
#include <stdbool.h>
#include <string.h>

typedef pmix_status_t (*init_fn)(pmix_proc_t *, pmix_info_t *, size_t);
typedef pmix_status_t (*finalize_fn)(const pmix_info_t *, size_t);
typedef int (*initialized_fn)(void);
typedef pmix_status_t (*fence_fn)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t);
typedef const char *(*error_string_fn)(pmix_status_t);
typedef pmix_status_t (*put_fn)(pmix_scope_t, const char *, pmix_value_t *);
typedef pmix_status_t (*commit_fn)(void);

/* Every rank's contribution: a value of its own, put and committed, so that the fence carries data
 * from every node. Slurm picks its fence's algorithm by whether there is data to collect (a ring
 * with data, a tree without); the same choice on every node keeps one collective. */
static pmix_status_t put_own(void *lib, const pmix_proc_t *me)
{
    put_fn put = (put_fn)dlsym(lib, "PMIx_Put");
    commit_fn commit = (commit_fn)dlsym(lib, "PMIx_Commit");
    if (!put || !commit) return PMIX_ERR_NOT_SUPPORTED;
    pmix_value_t v;
    memset(&v, 0, sizeof v);
    v.type = PMIX_UINT32;
    v.data.uint32 = me->rank;
    pmix_status_t rc = put(PMIX_GLOBAL, "nstbatch.past_mpi_init", &v);
    return rc == PMIX_SUCCESS ? commit() : rc;
}

/* The fence through Open MPI's client: 1 made, 0 no client, -1 failed (why). */
static int fence_through(void *lib, char *why, size_t cap)
{
    initialized_fn initialized = (initialized_fn)dlsym(lib, "PMIx_Initialized");
    init_fn init = (init_fn)dlsym(lib, "PMIx_Init");
    fence_fn fence = (fence_fn)dlsym(lib, "PMIx_Fence");
    finalize_fn finalize = (finalize_fn)dlsym(lib, "PMIx_Finalize");
    error_string_fn error_string = (error_string_fn)dlsym(lib, "PMIx_Error_string");
    if (!initialized || !init || !fence || !finalize || !initialized()) return 0;
    pmix_proc_t me;
    pmix_status_t rc = init(&me, NULL, 0); /* counted: Open MPI's client, already up, is shared */
    if (rc != PMIX_SUCCESS) goto failed;
    rc = put_own(lib, &me);
    if (rc == PMIX_SUCCESS) {
        /* PMIX_COLLECT_DATA: the fence must gather every process's data (see the top) */
        pmix_info_t collect;
        memset(&collect, 0, sizeof collect);
        snprintf(collect.key, sizeof collect.key, "%s", PMIX_COLLECT_DATA);
        collect.value.type = PMIX_BOOL;
        collect.value.data.flag = true;
        rc = fence(NULL, 0, &collect, 1); /* NULL: every process of this job */
    }
    finalize(NULL, 0);
    if (rc == PMIX_SUCCESS) return 1;
failed:
    snprintf(why, cap, "%s (PMIx status %d)", error_string ? error_string(rc) : "PMIx error", (int)rc);
    return -1;
}
#endif

int nst_launch_fence(char *why, size_t cap)
{
    if (cap) why[0] = 0;
#ifdef NST_HAVE_PMIX_H
    void *lib = dlopen("libpmix.so.2", RTLD_NOW | RTLD_NOLOAD); /* only the copy Open MPI loaded */
    if (!lib) return 0;
    const int r = fence_through(lib, why, cap);
    dlclose(lib); /* NOLOAD's reference only: the library stays for Open MPI */
    return r;
#else
    (void)why;
    return 0; /* built without PMIx's header: no fence (the Makefile finds it through pkg-config) */
#endif
}
