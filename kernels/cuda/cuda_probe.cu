/* kernels/cuda/cuda_probe.cu: CUDA device discovery and build information (see cuda.h). Every
 * CUDA call is checked and a failure reported as text. */
#include <cublas_v2.h>
#include <cudaTypedefs.h> /* the driver API's function pointer types (PFN_...) */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda.h"
extern "C" {
#include "../../util/nvidia.h"
}


extern "C" nst_cuda_state nst_cuda_probe_state(int *ngpu, char *why, size_t cap)
{
    int n = 0;
    *ngpu = 0;
    if (cap) why[0] = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) {
        *ngpu = n;
        return NST_CUDA_USABLE;
    }
    cudaGetLastError(); /* clear the error so later calls start clean */
    char how[64];
    if (!nst_nvidia_present(how, sizeof how)) {
        snprintf(why, cap, "no GPU (no NVIDIA driver loaded)"); /* nor device nodes */
        return NST_CUDA_NO_DEVICE;
    }
    /* A device is here but CUDA fails on it (a driver older than this CUDA says "insufficient
     * driver"): an error to report, not an absence. The GPU tests fail on it; the shell suites
     * find it by "NVIDIA GPU present but unusable" in nstbatch --version. */
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(why, cap, "NVIDIA GPU present but unusable (%s): cudaGetDeviceCount: %s%s%.40s%s", how,
             e == cudaSuccess ? "0 devices" : cudaGetErrorString(e), vis ? " (CUDA_VISIBLE_DEVICES=" : "", vis ? vis : "",
             vis ? ")" : "");
    return NST_CUDA_UNUSABLE;
}

extern "C" int nst_cuda_probe(char *why, size_t cap)
{
    int n = 0;
    nst_cuda_probe_state(&n, why, cap);
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

/* cuDeviceGetUuid (the _v2 ABI since CUDA 11.4) is documented to return a MIG slice's own UUID,
 * "which uniquely identifies the subscribed MIG compute instance" (cuda.h); reached through the
 * runtime, so nothing links libcuda. cudaDeviceProp.uuid, its runtime counterpart, is the fallback. */
static int driver_uuid(int device, unsigned char out[16])
{
    void *get = NULL, *uuid = NULL;
    cudaDriverEntryPointQueryResult q1 = cudaDriverEntryPointSymbolNotFound, q2 = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuDeviceGet", &get, 11040, cudaEnableDefault, &q1) != cudaSuccess ||
        cudaGetDriverEntryPointByVersion("cuDeviceGetUuid", &uuid, 11040, cudaEnableDefault, &q2) != cudaSuccess || !get || !uuid ||
        q1 != cudaDriverEntryPointSuccess || q2 != cudaDriverEntryPointSuccess)
        return -1;
    CUdevice dev = 0;
    CUuuid u;
    if (((PFN_cuDeviceGet_v2000)get)(&dev, device) != CUDA_SUCCESS || ((PFN_cuDeviceGetUuid_v11040)uuid)(&u, dev) != CUDA_SUCCESS)
        return -1;
    memcpy(out, u.bytes, 16);
    return 0;
}

extern "C" int nst_cuda_uuid(int device, unsigned char out[16])
{
    memset(out, 0, 16);
    if (driver_uuid(device, out) == 0) return 0;
    cudaGetLastError();
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    memcpy(out, p.uuid.bytes, 16);
    return 0;
}

extern "C" int nst_cuda_context(int device, char *why, size_t cap)
{
    cudaError_t e = cudaSetDevice(device);
    const char *call = "cudaSetDevice";
    if (e == cudaSuccess) e = cudaFree(0), call = "cudaFree(0) (creating the context)";
    if (e == cudaSuccess) return 0;
    snprintf(why, cap, "%s on GPU %d: %s", call, device, cudaGetErrorString(e));
    cudaGetLastError();
    return -1;
}

extern "C" int nst_cuda_free_bytes(int device, size_t *free_b, char *why, size_t cap)
{
    size_t total = 0;
    *free_b = 0;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaMemGetInfo(free_b, &total);
    if (e == cudaSuccess) return 0;
    snprintf(why, cap, "cudaMemGetInfo on GPU %d: %s", device, cudaGetErrorString(e));
    cudaGetLastError();
    return -1;
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
