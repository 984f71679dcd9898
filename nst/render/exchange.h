/* nst/render/exchange.h: the halo exchange of a render. Exact mode: before every iteration each
 * local window is refilled from the cores that cover it (its own tile's by a local copy, other
 * tiles' by a copy or a message). Cheap mode: the overlapping pixels of the windows are blended
 * with feathered weights, every tile computing the same blend.
 *
 * On a GPU each remote transfer is a pack kernel and a D2H copy into page-locked buffers, all
 * queued, then one stream sync, MPI on the host, then H2D copies and unpack kernels, queued
 * without a sync: serial with compute. The model (docs/PERFORMANCE.md, "The halo exchange on a
 * GPU"): 17 MB each way per 2048 px core and iteration, about 4 ms pageable (each copy then waited
 * for) and 2.4 ms pinned, against 17 ms of bf16 compute at half an H100's peak, so 10-20 % there,
 * 1-2 % in fp32, and on the CPU under 1 % (measured: 1.3 ms of 1.05 s). It is not overlapped:
 * a window's first layer reads its halo, so only tiles whose windows read no remote core could
 * run beside it; a rank has those only where its region is 3 tiles or more across (2 along the
 * image's edge), and there the exchange (the region's perimeter) is already small against its
 * tiles' compute (the area): the doc's "The exchange beside compute". Where every rank has an
 * exchange in backend memory (coll.exchange: NCCL between distinct GPUs) and room for its
 * buffers there, exact mode packs into them and sends device to device instead, with no copy
 * through the host: pack kernels, one NCCL group of sends and receives, unpack kernels, all on the
 * stream, and one wait of the host for the group. None of it measured on a GPU yet. */
#ifndef NST_EXCHANGE_H
#define NST_EXCHANGE_H

#include "render_parts.h"

/* The transfers this rank takes part in and their per-peer buffers. */
typedef struct {
    nst_transfer *tr;
    int ntr;
    int npeers, *peers;       /* ranks exchanged with */
    float **sendbuf, **recvbuf;
    size_t *sendn, *recvn;    /* floats */
    float **stage;            /* cheap mode: copies of local tiles' contributions, per transfer (owned) */
    const float **from;       /* cheap mode: where each transfer's values are (stage or a receive buffer) */
    int resident;             /* the buffers below, in backend memory, instead of sendbuf and recvbuf */
    float **dsend, **drecv;
    size_t resident_bytes;    /* their bytes on this rank, as allocated */
} nst_exchange;

/* Keep the layout's transfers this rank takes part in; size the per-peer buffers: in backend memory
 * where every rank can (coll->exchange, exact mode, room in the backend's memory), else the host's.
 * Collective. */
nst_status nst_exchange_plan(nst_backend *be, const nst_layout *L, const nst_collectives *coll, nst_exchange *ex);
void nst_exchange_free(nst_backend *be, nst_exchange *ex);
/* Make the windows current: exact mode refills them from the cores; cheap mode blends them. */
nst_status nst_exchange_refresh(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *st, nst_exchange *ex);

#endif
