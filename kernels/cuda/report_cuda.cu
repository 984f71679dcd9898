/* kernels/cuda/report_cuda.cu: the CUDA backend's diagnostics for a first contact (be->report,
 * be->device_free): the driver and the libraries as loaded (versions and the files they came
 * from: the node, not this build, decides which cuDNN, cuBLAS and cudart run), and every layer
 * shape's cuDNN algorithms, math types and workspaces as they were chosen (cuda_note). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

#include "cuda_impl.h"

extern "C" {
#include "../../util/mem.h"
#include "../../util/nvidia.h"
}

void cuda_note(cuda_impl *im, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    if (im->notes_len + (size_t)n + 2 > im->notes_cap) { /* grown by half; capped, the first lines kept */
        size_t cap = im->notes_cap ? im->notes_cap * 3 / 2 : 4096;
        if (cap > ((size_t)1 << 20)) return;
        char *p = (char *)nst_calloc(cap, "cuDNN choices");
        if (!p) return;
        if (im->notes) memcpy(p, im->notes, im->notes_len);
        nst_free(im->notes);
        im->notes = p, im->notes_cap = cap;
    }
    memcpy(im->notes + im->notes_len, line, (size_t)n);
    im->notes_len += (size_t)n;
    im->notes[im->notes_len++] = '\n';
    im->notes[im->notes_len] = 0;
}

/* The file a loaded function came from ("?" when the loader cannot say). */
static const char *origin(const void *fn)
{
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

static void versions(cuda_impl *im, char *out, size_t cap)
{
    int drv = 0, rt = 0, bmaj = 0, bmin = 0, bpat = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    size_t dnn = cudnnGetVersion();
    if (im->cb) {
        im->cb->get_property(MAJOR_VERSION, &bmaj);
        im->cb->get_property(MINOR_VERSION, &bmin);
        im->cb->get_property(PATCH_LEVEL, &bpat);
    }
    char kmod[96];
    nst_nvidia_driver_version(kmod, sizeof kmod);
    snprintf(out, cap,
             "driver: %s, CUDA %d.%d\n"
             "CUDA runtime %d.%d (built with %d.%d): %s\n"
             "cuDNN %zu.%zu.%zu (built with %d.%d.%d): %s\n"
             "cuBLAS %d.%d.%d (built with %d.%d.%d): %s\n",
             kmod, drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10, CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10,
             origin((const void *)&cudaRuntimeGetVersion), dnn / 10000, (dnn % 10000) / 100, dnn % 100, CUDNN_MAJOR, CUDNN_MINOR,
             CUDNN_PATCHLEVEL, origin((const void *)&cudnnGetVersion), bmaj, bmin, bpat, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR,
             CUBLAS_VER_PATCH, im->cb ? origin((const void *)im->cb->create) : "not loaded");
}

static void cuda_report(nst_backend *be, char *out, size_t cap)
{
    cuda_impl *im = cuda_of(be);
    versions(im, out, cap);
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "cuDNN algorithms (layer, window: forward; backward-data; bias+ReLU):\n%s",
             im->notes ? im->notes : "  none chosen yet\n");
}

static int cuda_device_free(nst_backend *be, size_t *free_b, size_t *total_b)
{
    cuda_impl *im = cuda_of(be);
    if (cudaSetDevice(im->device) != cudaSuccess || cudaMemGetInfo(free_b, total_b) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return 0;
}

void cuda_report_install(nst_backend *be)
{
    be->report = cuda_report;
    be->device_free = cuda_device_free;
}
