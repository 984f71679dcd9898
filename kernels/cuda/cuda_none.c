/* kernels/cuda/cuda_none.c: the CUDA side of a build without nvcc (see cuda.h). This build cannot
 * use a GPU, by choice (NO_CUDA=1) or for want of nvcc; on a machine that has one, that is the
 * "present but unusable" case, so the self-test and the GPU tests fail instead of passing on the
 * CPU as if no GPU were there. */
#include <stdio.h>
#include <string.h>

#include "../../util/nvidia.h"
#include "cuda.h"

nst_cuda_state nst_cuda_probe_state(int *ngpu, char *why, size_t cap)
{
    char how[64];
    *ngpu = 0;
    if (nst_nvidia_present(how, sizeof how)) {
        snprintf(why, cap, "NVIDIA GPU present but unusable (%s): this nstbatch was built without CUDA; rebuild where nvcc, cuDNN and "
                 "cuBLAS are (make says what it found), or set run.device = cpu", how);
        return NST_CUDA_UNUSABLE;
    }
    snprintf(why, cap, "built without CUDA (nvcc was not found at build time)");
    return NST_CUDA_NO_DEVICE;
}

int nst_cuda_probe(char *why, size_t cap)
{
    int n = 0;
    nst_cuda_probe_state(&n, why, cap);
    return n;
}

void nst_cuda_describe(int device, char *out, size_t cap) { snprintf(out, cap, "device %d (no CUDA in this build)", device); }

int nst_cuda_bus_id(int device, char *out, size_t cap)
{
    (void)device;
    if (cap) out[0] = 0;
    return -1;
}

int nst_cuda_uuid(int device, unsigned char out[16])
{
    (void)device;
    memset(out, 0, 16);
    return -1;
}

int nst_cuda_context(int device, char *why, size_t cap)
{
    snprintf(why, cap, "GPU %d: no CUDA in this build", device);
    return -1;
}

int nst_cuda_free_bytes(int device, size_t *free_b, char *why, size_t cap)
{
    *free_b = 0;
    snprintf(why, cap, "GPU %d: no CUDA in this build", device);
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
