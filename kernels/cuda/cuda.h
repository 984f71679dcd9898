/* kernels/cuda/cuda.h: what the rest of the program may ask of the CUDA side. Built from the
 * kernels/cuda/ *.cu files when nvcc exists, from cuda_none.c otherwise.
 *
 * Discovery tells two cases apart: no NVIDIA device on this machine at all (no device nodes, no
 * driver loaded: "no GPU", never an error), and an NVIDIA device that CUDA cannot use (a driver too
 * old for this CUDA, a failed initialisation). run.device = auto falls back to the CPU in both,
 * saying why; the GPU tests skip only in the first and fail in the second. */
#ifndef NST_CUDA_H
#define NST_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../backend.h"

typedef enum {
    NST_CUDA_NO_DEVICE = 0, /* no NVIDIA device here, none visible (CUDA_VISIBLE_DEVICES), or no CUDA in this build */
    NST_CUDA_USABLE = 1,    /* CUDA sees *ngpu > 0 devices */
    NST_CUDA_UNUSABLE = 2,  /* an NVIDIA device exists, but CUDA fails on it: why holds the CUDA error */
} nst_cuda_state;

/* The probe: the state, the number of usable devices (0 unless USABLE), and why there are none. */
nst_cuda_state nst_cuda_probe_state(int *ngpu, char *why, size_t cap);
/* Number of usable CUDA devices; when 0, `why` says why (no device, a CUDA error, no CUDA build). */
int nst_cuda_probe(char *why, size_t cap);
/* "NVIDIA H100 80GB HBM3, 79.1 GiB, sm_90" */
void nst_cuda_describe(int device, char *out, size_t cap);
/* PCI bus id of a device ("0000:1B:00.0"), for messages: MIG slices share their GPU's; 0, or -1
 * with out = "" */
int nst_cuda_bus_id(int device, char *out, size_t cap);
/* The device's identity: its 16-byte UUID, a MIG slice's own (ranks compare these to find shared
 * GPUs); 0, or -1 with out zeroed. Creates no context. */
int nst_cuda_uuid(int device, unsigned char out[16]);
/* Create this process's context on device (cudaSetDevice, cudaFree(0)), so that a free-memory
 * figure taken afterwards counts it: 0, or -1 with why. */
int nst_cuda_context(int device, char *why, size_t cap);
/* Free device memory now (cudaMemGetInfo on device): 0, or -1 with why. */
int nst_cuda_free_bytes(int device, size_t *free_b, char *why, size_t cap);
/* 1 when this build implements the backend ops on the GPU. */
int nst_cuda_has_ops(void);
/* "CUDA runtime 13.0, cuDNN 9.19.0, cuBLAS 13.0.0" or "built without CUDA" */
const char *nst_cuda_build_info(void);
/* Device memory the CUDA backend leaves outside its arena for NCCL, on an unshared GPU of a job of
 * several ranks: its communicator, channels and each peer's buffers. An estimate, which the log
 * measures on a node of several GPUs (nst/run/device.c: nccl_took). */
#define NST_CUDA_NCCL_RESERVE_BYTES ((size_t)1 << 30)
/* The CUDA backend on device o->gpu (see kernels/backend.h). */
nst_status nst_cuda_backend_open(const nst_backend_options *o, nst_backend **out);

#ifdef __cplusplus
}
#endif

#endif
