/* kernels/cuda/cuda.h: what the rest of the program may ask of the CUDA side. Built from
 * cuda_probe.cu when nvcc exists, from cuda_none.c otherwise. A failing cudaGetDeviceCount (no
 * driver, no device) means "no GPU", never an error. The CUDA ops of the backend interface
 * arrive with the CUDA issue; until then nst_cuda_has_ops() is 0 and run.device = auto uses
 * the CPU. */
#ifndef NST_CUDA_H
#define NST_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; when 0, `why` says why (no driver, no device, no CUDA build). */
int nst_cuda_probe(char *why, size_t cap);
/* "NVIDIA H100 80GB HBM3, 79.1 GiB, sm_90" */
void nst_cuda_describe(int device, char *out, size_t cap);
/* 1 when this build implements the backend ops on the GPU. */
int nst_cuda_has_ops(void);
/* "CUDA runtime 13.0, built with nvcc" or "built without CUDA" */
const char *nst_cuda_build_info(void);

#ifdef __cplusplus
}
#endif

#endif
