/* tools/cudnn_version.c: the GPU bundle's runtime/cudnn-version, for env.sh's choice among the
 * cuDNN 9 libraries a node has: cuDNN runs builds of its own minor version or older ones, not
 * newer (its "API compatibility" rule), a node's system cuDNN can be older than the build's while
 * PyTorch's wheel beside it is not (an H200 node: 9.14 and 9.19, for a 9.19 build), and the
 * builds of one cuDNN for CUDA 12 and 13 share the name libcudnn.so.9.
 *
 *   cudnn-version FILE      "VERSION CUDART": FILE's cudnnGetVersion() (91400: major, minor,
 *                           patch) and cudnnGetCudartVersion() (13000: the CUDA it was built for)
 *   cudnn-version --built   the same of the headers this bundle's nstbatch was built with
 *
 * Exit 1 (a line on stderr) where FILE cannot be loaded or lacks those functions, or where this
 * program was built without cuDNN's and CUDA's headers (a bundle of a CPU-only build); 2 on usage. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<cudnn_version.h>) && __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#define HAVE_HEADERS 1
#endif
#endif

static int built(void)
{
#ifdef HAVE_HEADERS
    printf("%d %d\n", (int)CUDNN_VERSION, (int)CUDART_VERSION);
    return 0;
#else
    fprintf(stderr, "cudnn-version: built without cuDNN's and CUDA's headers\n");
    return 1;
#endif
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cudnn-version FILE | --built\n");
        return 2;
    }
    if (strcmp(argv[1], "--built") == 0) return built();
    void *lib = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cudnn-version: %s\n", dlerror());
        return 1;
    }
    size_t (*version)(void) = (size_t (*)(void))dlsym(lib, "cudnnGetVersion");
    size_t (*cudart)(void) = (size_t (*)(void))dlsym(lib, "cudnnGetCudartVersion");
    if (!version || !cudart) {
        fprintf(stderr, "cudnn-version: %s lacks cudnnGetVersion or cudnnGetCudartVersion\n", argv[1]);
        return 1;
    }
    printf("%zu %zu\n", version(), cudart());
    return 0;
}
