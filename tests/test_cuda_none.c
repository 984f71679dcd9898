/* tests/test_cuda_none.c: the CUDA side of a build without CUDA (kernels/cuda/cuda_none.c) on a
 * machine that has an NVIDIA GPU: the probe must say "present but unusable" (so the self-test and
 * the GPU tests fail instead of passing on the CPU), except where CUDA_VISIBLE_DEVICES withholds
 * the GPUs on purpose. Built from cuda_none.c itself (the suite's own nstbatch has CUDA wherever
 * nvcc is), and run with the stand-in NVML of tests/fake_nvml.c on LD_LIBRARY_PATH, which counts
 * one GPU (tests/run.sh); without it the machine's own answer is checked against its device nodes. */
#include <string.h>

#include "../kernels/cuda/cuda.h"
#include "../util/nvidia.h"
#include "../util/status.h"
#include "test.h"

static void t_gpu_present(void)
{
    char how[64], why[300];
    if (!nst_nvidia_present(how, sizeof how)) SKIP("no NVIDIA GPU and no stand-in NVML on LD_LIBRARY_PATH");
    int n = -1;
    nst_cuda_state st = nst_cuda_probe_state(&n, why, sizeof why);
    CHECK(st == NST_CUDA_UNUSABLE && n == 0, "state %d, %d GPUs: %s", st, n, why);
    CHECK(strstr(why, "present but unusable") && strstr(why, "built without CUDA") && strstr(why, "run.device = cpu"), "why: %s", why);
    CHECK(nst_cuda_probe(why, sizeof why) == 0, "usable GPUs counted");
}

static void t_withheld(void)
{
    static const char *const v[] = {"", "-1"};
    char why[300];
    for (int i = 0; i < 2; i++) {
        setenv("CUDA_VISIBLE_DEVICES", v[i], 1);
        int n = -1;
        nst_cuda_state st = nst_cuda_probe_state(&n, why, sizeof why);
        CHECK(st == NST_CUDA_NO_DEVICE && n == 0, "CUDA_VISIBLE_DEVICES='%s': state %d: %s", v[i], st, why);
    }
    unsetenv("CUDA_VISIBLE_DEVICES");
}

static void t_no_backend(void)
{
    nst_backend_options o;
    memset(&o, 0, sizeof o);
    nst_backend *be = (nst_backend *)1;
    CHECK(nst_cuda_backend_open(&o, &be) == NST_EINPUT && be == NULL, "run.device = cuda opened");
    CHECK(strstr(nst_fail_message(), "built without CUDA") != NULL, "message: %s", nst_fail_message());
    CHECK(!nst_cuda_has_ops(), "ops claimed");
}

/* the driver's version line of both kernel modules (the open one named "for" the version once) */
static void t_driver_version(void)
{
    static const struct { const char *line, *want; } c[] = {
        {"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Release Build  (dvs-builder@U16)  Thu Sep\n", "580.95.05"},
        {"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)\n", "580.159.04"},
        {"NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  565.57.01  Release Build\n", "565.57.01"},
        {"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64\n", NULL},
        {"GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n", NULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char v[64] = "";
        int r = nst_nvidia_parse_version(c[i].line, v, sizeof v);
        if (c[i].want) CHECK(r == 0 && strcmp(v, c[i].want) == 0, "'%s': %d '%s', want '%s'", c[i].line, r, v, c[i].want);
        else CHECK(r == -1, "'%s': %d '%s', want none", c[i].line, r, v);
    }
}

/* cuDNN's compatibility rule: the same major, a minor at least the build's */
static void t_cudnn_older(void)
{
    char why[128] = "";
    CHECK(nst_cudnn_older(91900, 91900, why, sizeof why) == 0, "9.19.0 against itself: %s", why);
    CHECK(nst_cudnn_older(91900, 91902, why, sizeof why) == 0, "a later patch: %s", why);
    CHECK(nst_cudnn_older(91902, 91900, why, sizeof why) == 0, "an earlier patch: %s", why);
    CHECK(nst_cudnn_older(91400, 92000, why, sizeof why) == 0, "a later minor: %s", why);
    CHECK(nst_cudnn_older(91900, 91400, why, sizeof why) == 1 && strcmp(why, "cuDNN 9.14.0 is older than the 9.19.0 this build was compiled with") == 0,
          "9.14.0 under a 9.19.0 build (the H200 node's pair): '%s'", why);
    CHECK(nst_cudnn_older(91900, 100000, why, sizeof why) == 1 && strstr(why, "another major version"), "10.0.0: '%s'", why);
}

int main(void)
{
    RUN(t_cudnn_older);
    RUN(t_driver_version);
    RUN(t_gpu_present);
    RUN(t_withheld);
    RUN(t_no_backend);
    return test_report("test_cuda_none");
}
