/* tests/kernel_paths.h: the CPU backend's own kernels' paths (kernels/cpu/isa_cpu.c), for the
 * suites that run an op on each: the best this CPU and ONEDNN_MAX_CPU_ISA allow, AVX-512 and AVX2
 * (where allowed), portable, chosen through the test hook NSTBATCH_CPU_KERNELS; -1 (or 0)
 * restores the default. */
#ifndef NST_TEST_KERNEL_PATHS_H
#define NST_TEST_KERNEL_PATHS_H

#include <stdlib.h>

#define NPATHS 4
static const char *const path_names[NPATHS] = {"default", "avx512", "avx2", "portable"};
static void set_path(int path)
{
    if (path <= 0) unsetenv("NSTBATCH_CPU_KERNELS");
    else setenv("NSTBATCH_CPU_KERNELS", path_names[path], 1);
}

#endif
