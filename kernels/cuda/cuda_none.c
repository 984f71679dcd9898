/* kernels/cuda/cuda_none.c: the CUDA side of a build without nvcc (see cuda.h). */
#include <stdio.h>

#include "cuda.h"

int nst_cuda_probe(char *why, size_t cap)
{
    snprintf(why, cap, "built without CUDA (nvcc was not found at build time)");
    return 0;
}

void nst_cuda_describe(int device, char *out, size_t cap) { snprintf(out, cap, "device %d (no CUDA in this build)", device); }

int nst_cuda_bus_id(int device, char *out, size_t cap)
{
    (void)device;
    if (cap) out[0] = 0;
    return -1;
}

int nst_cuda_has_ops(void) { return 0; }

const char *nst_cuda_build_info(void) { return "built without CUDA"; }

nst_status nst_cuda_backend_open(const nst_backend_options *o, nst_backend **out)
{
    (void)o;
    *out = NULL;
    return nst_fail(NST_EINPUT, "run.device = cuda: this nstbatch was built without CUDA (rebuild where nvcc exists); valid: auto, cpu");
}
