/* kernels/backend.c: choosing and opening a backend (run.device), and tensor allocation. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "backend.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpu/backend_cpu.h"
#include "cuda/cuda.h"

int nst_default_threads(int ranks_on_node)
{
    cpu_set_t mask;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int allowed = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : (int)online;
    int share = (int)(online / (ranks_on_node > 0 ? ranks_on_node : 1));
    int t = share < allowed ? share : allowed;
    return t < 1 ? 1 : t;
}

nst_status nst_backend_open(const char *device, int threads, nst_backend **out)
{
    char why[256] = "", gpu[160] = "";
    int ngpu = nst_cuda_probe(why, sizeof why);
    if (ngpu > 0) nst_cuda_describe(0, gpu, sizeof gpu);
    if (strcmp(device, "cuda") == 0) {
        if (ngpu == 0) return nst_fail(NST_EINPUT, "run.device = cuda: %s; valid here: auto, cpu", why);
        if (!nst_cuda_has_ops())
            return nst_fail(NST_EINPUT,
                            "run.device = cuda: found %s, but this version has no CUDA backend ops yet; valid: auto, cpu",
                            gpu);
    }
    if (strcmp(device, "cpu") != 0 && strcmp(device, "cuda") != 0 && strcmp(device, "auto") != 0)
        return nst_fail(NST_EINPUT, "run.device = '%s': expected one of auto, cpu, cuda", device);
    NST_TRY(nst_cpu_backend_open(threads, out));
    if (strcmp(device, "auto") == 0) {
        if (ngpu == 0)
            snprintf((*out)->choice, sizeof (*out)->choice, "auto: %s", why);
        else
            snprintf((*out)->choice, sizeof (*out)->choice, "auto: %s found, but this version has no CUDA ops yet", gpu);
    }
    return NST_OK;
}

void nst_backend_close(nst_backend *be)
{
    if (be && be->destroy) be->destroy(be);
}

nst_status nst_tensor_alloc(nst_backend *be, int h, int w, int c, nst_dtype dt, nst_tensor *t)
{
    t->h = h;
    t->w = w;
    t->c = c;
    t->dt = dt;
    t->data = NULL;
    size_t bytes = (size_t)h * w * c * nst_dtype_size(dt);
    NST_TRY(be->ops->alloc(be, bytes, &t->data));
    return be->ops->zero(be, t->data, bytes);
}

void nst_tensor_free(nst_backend *be, nst_tensor *t)
{
    if (t->data) be->ops->free(be, t->data);
    t->data = NULL;
}
