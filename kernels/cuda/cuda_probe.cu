/* kernels/cuda/cuda_probe.cu: CUDA device discovery and build information (see cuda.h). Every
 * CUDA call is checked and a failure reported as text. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <unistd.h>

#include "cuda.h"

extern "C" int nst_cuda_probe(char *why, size_t cap)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        /* Without a driver the runtime says "driver version is insufficient": say what it means. */
        if (e == cudaErrorNoDevice)
            snprintf(why, cap, "no GPU");
        else if (e == cudaErrorInsufficientDriver && access("/proc/driver/nvidia/version", F_OK) != 0)
            snprintf(why, cap, "no GPU (no NVIDIA driver loaded)");
        else
            snprintf(why, cap, "no usable GPU (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
        cudaGetLastError(); /* clear the error so later calls start clean */
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

extern "C" int nst_cuda_bus_id(int device, char *out, size_t cap)
{
    if (cudaDeviceGetPCIBusId(out, (int)cap, device) != cudaSuccess) {
        cudaGetLastError();
        if (cap) out[0] = 0;
        return -1;
    }
    return 0;
}

extern "C" int nst_cuda_has_ops(void) { return 1; }

extern "C" const char *nst_cuda_build_info(void)
{
    static char info[160];
    int rt = 0;
    cudaRuntimeGetVersion(&rt);
    size_t dnn = cudnnGetVersion();
    /* cuBLAS is loaded only when the CUDA backend opens (cublas_dl.h): its headers' version here */
    snprintf(info, sizeof info, "CUDA runtime %d.%d, cuDNN %zu.%zu.%zu, cuBLAS %d.%d.%d at run time (built with nvcc)", rt / 1000,
             (rt % 1000) / 10, dnn / 10000, (dnn % 10000) / 100, dnn % 100, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
    return info;
}
