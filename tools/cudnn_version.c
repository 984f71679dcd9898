/* tools/cudnn_version.c: the GPU bundle's runtime/cudnn-version, for env.sh's choice
 * among the cuDNN 9 libraries a node has: cuDNN runs builds of its own minor version or older ones,
 * not newer (its "API compatibility" rule), and a node's system cuDNN can be older than the build's
 * while PyTorch's wheel beside it is not (an H200 node: 9.14 and 9.19, for a 9.19 build).
 *
 *   cudnn-version FILE      FILE's cudnnGetVersion() (e.g. 91400: major, minor, patch), dlopened
 *   cudnn-version --built   CUDNN_VERSION of the headers this bundle's nstbatch was built with
 *
 * Exit 1 (a line on stderr) where FILE cannot be loaded or has no cudnnGetVersion, 2 on usage. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cudnn_version.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cudnn-version FILE | --built\n");
        return 2;
    }
    if (strcmp(argv[1], "--built") == 0) {
        printf("%d\n", (int)CUDNN_VERSION);
        return 0;
    }
    void *lib = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cudnn-version: %s\n", dlerror());
        return 1;
    }
    size_t (*version)(void) = (size_t (*)(void))dlsym(lib, "cudnnGetVersion");
    if (!version) {
        fprintf(stderr, "cudnn-version: %s has no cudnnGetVersion\n", argv[1]);
        return 1;
    }
    printf("%zu\n", version());
    return 0;
}
