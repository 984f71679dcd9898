/* kernels/cuda/cublas_dl.cu: loading cuBLAS at run time (see cublas_dl.h). */
#include <dlfcn.h>
#include <stdio.h>

#include "cublas_dl.h"

#define SONAME_(m) "libcublas.so." #m
#define SONAME(m) SONAME_(m)

const nst_cublas_api *nst_cublas(char *why, size_t cap)
{
    static nst_cublas_api api;
    static int state; /* 0 untried, 1 loaded, -1 failed */
    static char reason[256];
    if (state == 0) {
        void *lib = dlopen(SONAME(CUBLAS_VER_MAJOR), RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            snprintf(reason, sizeof reason, "cannot load %s: %s", SONAME(CUBLAS_VER_MAJOR), dlerror());
            state = -1;
        } else {
#define SYM(field, name)                                                                          \
    if (!(*(void **)&api.field = dlsym(lib, name)) && state == 0) {                               \
        snprintf(reason, sizeof reason, "%s lacks %s", SONAME(CUBLAS_VER_MAJOR), name);          \
        state = -1;                                                                               \
    }
            SYM(create, "cublasCreate_v2");
            SYM(destroy, "cublasDestroy_v2");
            SYM(set_stream, "cublasSetStream_v2");
            SYM(set_pointer_mode, "cublasSetPointerMode_v2");
            SYM(set_math_mode, "cublasSetMathMode");
            SYM(set_workspace, "cublasSetWorkspace_v2");
            SYM(gemm_ex, "cublasGemmEx");
            SYM(gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
            SYM(status_string, "cublasGetStatusString");
            SYM(get_property, "cublasGetProperty");
#undef SYM
            if (state == 0) state = 1;
        }
    }
    if (state < 0) {
        snprintf(why, cap, "%s", reason);
        return NULL;
    }
    return &api;
}
