/* util/nvidia.h: whether this machine has an NVIDIA GPU, whatever this build or CUDA can make of
 * it: the driver's device nodes, its /proc entry, or NVML (loaded at run time) counting devices.
 * Used to tell "no GPU here" (a CPU machine) from "a GPU this nstbatch cannot use" (a driver too
 * old for its CUDA, or a build without CUDA on a GPU node), which the self-test and the GPU
 * tests must report as failures, never as passes. */
#ifndef NST_NVIDIA_H
#define NST_NVIDIA_H

#include <stddef.h>

/* 1 with how ("/dev/nvidia0", "NVML: 8 GPUs") when an NVIDIA GPU is present, else 0. A
 * CUDA_VISIBLE_DEVICES that is set and empty (or -1) means the GPUs are withheld on purpose: 0. */
int nst_nvidia_present(char *how, size_t cap);
/* The kernel driver's version ("580.95.05", from /proc/driver/nvidia/version or NVML), or "unknown". */
void nst_nvidia_driver_version(char *out, size_t cap);
/* The version in a /proc/driver/nvidia/version line, proprietary or open kernel module: 0 and the
 * version in out, or -1 when the line names none. */
int nst_nvidia_parse_version(const char *line, char *out, size_t cap);
/* cuDNN's own rule (its "API compatibility" section): a library x.y runs applications built against
 * x.z only when z <= y. 1 and a phrase in out ("cuDNN 9.14.0 is older than the 9.19.0 this build was
 * compiled with") when loaded breaks it; else 0. Versions as cudnnGetVersion() and CUDNN_VERSION
 * give them (major * 10000 + minor * 100 + patch, cuDNN 9). */
int nst_cudnn_older(size_t built, size_t loaded, char *out, size_t cap);

#endif
