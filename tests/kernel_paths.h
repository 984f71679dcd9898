/* tests/kernel_paths.h: the CPU backend's own kernels' paths (kernels/cpu/isa_cpu.c), for the
 * suites that run an op on each: the best this CPU and ONEDNN_MAX_CPU_ISA allow, AVX-512 and AVX2
 * (where allowed), portable, chosen through the test hook NSTBATCH_CPU_KERNELS; -1 (or 0)
 * restores the default. */
#ifndef NST_TEST_KERNEL_PATHS_H
#define NST_TEST_KERNEL_PATHS_H

#include <stdlib.h>

#include "../kernels/cpu/cpu.h"

#define NPATHS 4
static const char *const path_names[NPATHS] = {"default", "avx512", "avx2", "portable"};
static void set_path(int path)
{
    if (path <= 0) unsetenv("NSTBATCH_CPU_KERNELS");
    else setenv("NSTBATCH_CPU_KERNELS", path_names[path], 1);
}

/* The level path runs for an op on dt data (cpu_kernels_isa_for; the Gram sums choose as for fp32:
 * AVX512_BF16 runs their AVX-512 code, so pass NST_F32 for them). */
static inline cpu_isa_level path_level(int path, nst_dtype dt)
{
    set_path(path);
    cpu_isa_level l = cpu_kernels_isa_for(dt);
    set_path(-1);
    return l;
}

/* Whether path, in a sweep of paths 0, 1, ..., runs a level that no earlier one ran. Under a cap
 * (ONEDNN_MAX_CPU_ISA, tests/test_isa.sh) or on a smaller CPU several names fall to one level: the
 * same deterministic code on the same data and threads, which a second run cannot fail where the
 * first passed. */
static inline int path_is_new(int path, nst_dtype dt)
{
    for (int q = 0; q < path; q++)
        if (path_level(q, dt) == path_level(path, dt)) return 0;
    return 1;
}

#endif
