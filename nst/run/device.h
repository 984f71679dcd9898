/* nst/run/device.h: a rank's compute device. Binds the rank to a GPU (gpu.binding, gpu.share; GPUs
 * identified by UUID), opens the backend (run.device, run.precision; ranks sharing a GPU split one
 * agreed free-memory figure) and provides the collectives the algorithm uses: the Gram sums go
 * through NCCL on device buffers when every rank has a GPU of its own (the world's communicator
 * made here, released at close before the backend), through host memory and MPI when ranks share
 * GPUs (NCCL needs distinct devices) or run on the CPU; so does the halo exchange, in exact mode,
 * where every rank has room for its buffers (nst/render/exchange.c). */
#ifndef NST_DEVICE_H
#define NST_DEVICE_H

#include "../../io/config/config.h"
#include "../../kernels/backend.h"
#include "../optimise/objective.h"

typedef struct {
    nst_backend *be;
    int gpu;               /* device index, -1 on the CPU */
    int sharers;           /* ranks of this node on the same GPU (the same UUID) */
    int max_sharers;       /* the most over all ranks */
    int nccl;              /* Gram sums over NCCL */
    double nccl_timeout;
    int nccl_summed, nccl_exchanged; /* the first NCCL sum and exchange were measured (device.c: nccl_took) */
    char gram_path[160];   /* how the Gram sums travel, for the log and the run record */
    double *stage;         /* host staging of the Gram sums (shared GPUs) */
    size_t stage_cap;
    struct nst_conv_store *conv_store; /* gpu.conv_choices' file, for a GPU with gpu.conv_algorithms = timed (conv_store.h) */
} nst_device;

/* Collective over the world: every rank opens its device, and all agree on the Gram path.
 * threads: CPU threads when the backend is the CPU. */
nst_status nst_device_open(const nst_config *cfg, int threads, nst_device *d);
nst_collectives nst_device_collectives(nst_device *d);
void nst_device_close(nst_device *d);

#endif
