/* kernels/cuda/cuda.h: what the rest of the program may ask of the CUDA side. Built from the
 * kernels/cuda/ *.cu files when nvcc exists, from cuda_none.c otherwise. A failing
 * cudaGetDeviceCount (no driver, no device) means "no GPU", never an error. */
#ifndef NST_CUDA_H
#define NST_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../backend.h"

/* Number of usable CUDA devices; when 0, `why` says why (no driver, no device, no CUDA build). */
int nst_cuda_probe(char *why, size_t cap);
/* "NVIDIA H100 80GB HBM3, 79.1 GiB, sm_90" */
void nst_cuda_describe(int device, char *out, size_t cap);
/* PCI bus id of a device ("0000:1B:00.0"); 0, or -1 with out = "" */
int nst_cuda_bus_id(int device, char *out, size_t cap);
/* 1 when this build implements the backend ops on the GPU. */
int nst_cuda_has_ops(void);
/* "CUDA runtime 13.0, cuDNN 9.19.0, cuBLAS 13.0.0" or "built without CUDA" */
const char *nst_cuda_build_info(void);
/* The CUDA backend on device o->gpu (see kernels/backend.h). */
nst_status nst_cuda_backend_open(const nst_backend_options *o, nst_backend **out);

#ifdef __cplusplus
}
#endif

#endif
