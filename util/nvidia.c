/* util/nvidia.c: an NVIDIA GPU on this machine (see nvidia.h). */
#include "nvidia.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* NVML's device count, or -1 where the library or its driver is missing. */
static int nvml_count(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return -1;
    int (*init)(void) = (int (*)(void))dlsym(lib, "nvmlInit_v2");
    int (*count)(unsigned *) = (int (*)(unsigned *))dlsym(lib, "nvmlDeviceGetCount_v2");
    int (*shutdown)(void) = (int (*)(void))dlsym(lib, "nvmlShutdown");
    unsigned n = 0;
    int ok = init && count && shutdown && init() == 0; /* NVML_SUCCESS */
    if (ok) {
        ok = count(&n) == 0;
        shutdown();
    }
    dlclose(lib);
    return ok ? (int)n : -1;
}

int nst_nvidia_present(char *how, size_t cap)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (cap) how[0] = 0;
    if (vis && (!*vis || strcmp(vis, "-1") == 0)) return 0;
    static const char *const nodes[] = {"/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version"};
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++)
        if (access(nodes[i], F_OK) == 0) {
            snprintf(how, cap, "%s", nodes[i]);
            return 1;
        }
    int n = nvml_count();
    if (n > 0) snprintf(how, cap, "NVML counts %d GPU%s", n, n == 1 ? "" : "s");
    return n > 0;
}

int nst_nvidia_parse_version(const char *line, char *out, size_t cap)
{
    /* the proprietary module: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Release ...";
     * the open one: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release ..."
     * (an H200 node's driver showed as "for" when the token after "Kernel Module" was taken): the
     * version is the first token after it that starts with a digit and has a dot */
    const char *p = line ? strstr(line, "Kernel Module") : NULL;
    if (!p) return -1;
    for (p += strlen("Kernel Module"); *p && *p != '\n';) {
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strcspn(p, " \t\n");
        if (n && isdigit((unsigned char)p[0]) && memchr(p, '.', n)) {
            snprintf(out, cap, "%.*s", (int)n, p);
            return 0;
        }
        p += n;
    }
    return -1;
}

void nst_nvidia_driver_version(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    char line[256];
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        int found = fgets(line, sizeof line, f) && nst_nvidia_parse_version(line, out, cap) == 0;
        fclose(f);
        if (found) return;
    }
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    int (*init)(void) = (int (*)(void))dlsym(lib, "nvmlInit_v2");
    int (*ver)(char *, unsigned) = (int (*)(char *, unsigned))dlsym(lib, "nvmlSystemGetDriverVersion");
    int (*shutdown)(void) = (int (*)(void))dlsym(lib, "nvmlShutdown");
    if (init && ver && shutdown && init() == 0) {
        char v[80];
        if (ver(v, sizeof v) == 0) snprintf(out, cap, "%s", v);
        shutdown();
    }
    dlclose(lib);
}

int nst_cudnn_older(size_t built, size_t loaded, char *out, size_t cap)
{
    size_t bmaj = built / 10000, bmin = built % 10000 / 100, lmaj = loaded / 10000, lmin = loaded % 10000 / 100;
    if (lmaj == bmaj && lmin >= bmin) return 0;
    snprintf(out, cap, "cuDNN %zu.%zu.%zu is %s the %zu.%zu.%zu this build was compiled with", lmaj, lmin, loaded % 100,
             lmaj == bmaj ? "older than" : "another major version than", bmaj, bmin, built % 100);
    return 1;
}
