/* kernels/cuda/cuda_probe.cu: CUDA device discovery (see cuda.h). Compiled by nvcc; every CUDA
 * call is checked and a failure reported as text. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "cuda.h"

extern "C" int nst_cuda_probe(char *why, size_t cap)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, cap, "no usable GPU (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
        cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
        return 0;
    }
    if (n == 0) snprintf(why, cap, "no CUDA device");
    return n;
}

extern "C" void nst_cuda_describe(int device, char *out, size_t cap)
{
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) {
        snprintf(out, cap, "device %d (cudaGetDeviceProperties: %s)", device, cudaGetErrorString(e));
        return;
    }
    snprintf(out, cap, "%s, %.1f GiB, sm_%d%d", p.name, (double)p.totalGlobalMem / (1 << 30), p.major, p.minor);
}

extern "C" int nst_cuda_has_ops(void) { return 0; }

extern "C" const char *nst_cuda_build_info(void)
{
    static char info[96];
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    snprintf(info, sizeof info, "CUDA runtime %d.%d (built with nvcc, backend ops not yet in this version)", rt / 1000,
             (rt % 1000) / 10);
    return info;
}
