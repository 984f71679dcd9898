/* nst/plan/layout.h: how the image is split: the tile size and halo, which rank owns which tile, how
 * the global Gram meets the backward, and the memory each rank needs for it. Every rank computes
 * the same layout from the same inputs (no communication).
 *
 * Memory model (bytes of backend buffers per rank; float32 activations):
 *   sum over the rank's tiles of   24 * window_px                (window pixels, their gradient)
 *                                + targets(window)               (content features; masks: 4 B per
 *                                                                 position at each layer using one;
 *                                                                 video's temporal term: 16 per pixel)
 *                                + acts(window)   if resident    (every layer's output, 2 gradients)
 *   + acts(largest window)        if two_pass or lagged
 *   + 48 * core_px  (exact mode: owned pixels, gradient, Adam m and v;
 *                    with L-BFGS 24 + 12 (2 m + 2) for history m: the pairs, direction, previous gradient)
 *     or 24 * window_px (cheap mode: Adam m and v over the optimised window)
 *   + 16 * C_l^2 per style layer (target and difference fp32, Gram sums fp64; 24 when lagged), per
 *     style image with style.masks
 * with acts(h x w) = b * (3 hw + sum_l C_l h_l w_l + 2 max_l C_l h_l w_l), b the activation's bytes
 * (4 in fp32, 2 in bf16; nst/model/net.c), the shapes of nst_net_shape. The style targets are computed before the render, tiled within the same budget
 * (nst/inputs/style.h). Host staging for the halo exchange and the CPU backend's scratch (the Gram
 * backward's 1 MiB and 96 KiB per thread, the Gram sums' 512 KiB) come on top.
 */
#ifndef NST_LAYOUT_H
#define NST_LAYOUT_H

#include "../../io/config/config.h"
#include "../../tiler/grid.h"
#include "../model/net.h"
#include "../optimise/objective.h"
#include "../model/spec.h"

typedef struct {
    nst_grid grid;
    int align;          /* the network's total stride to the deepest layer in use */
    int halo_exact;     /* the exact-gradient halo, aligned */
    int cheap;          /* tiling.mode = cheap */
    int exchange_every;
    int blend_cosine;
    int blend_width;    /* feather ramp width in pixels (cheap mode) */
    int lbfgs;          /* this level runs L-BFGS */
    size_t lbfgs_unfit; /* optim.method = auto and L-BFGS's state per owned pixel (this many bytes) fit no tiling: Adam */
    size_t opt_px_bytes; /* optimiser state per owned pixel, exact mode (x, g, and Adam's m, v or L-BFGS's history; the average) */
    nst_gram_strategy gram;
    int nranks, rank;
    int *owner;         /* per tile */
    int nlocal, *local; /* this rank's tiles, increasing */
    int64_t max_load;   /* window pixels of the most loaded rank */
    size_t mem_model;   /* the model for this rank's tiles (steady state) */
    size_t mem_peak;    /* this rank's peak (the model) */
    size_t mem_max;     /* the largest model of backend buffers over ranks */
    size_t mem_total;   /* the same with the host's buffers where they share its memory: what the budget bounds */
    size_t mem_budget;
    char why[320];      /* how the tile size and the Gram strategy were chosen */
} nst_layout;

/* Plan the layout of a W x H image on nranks ranks for this rank. Errors name the config key
 * (tile size or halo off the stride, memory). */
nst_status nst_layout_plan(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, int W, int H, int nranks, int rank,
                           size_t budget, nst_layout *L);
/* What a level's plan must meet. */
typedef struct {
    size_t budget;         /* bytes per rank: the backend's buffers, and the host's where they share memory */
    size_t backend_below;  /* if not 0: the backend's buffers must model less than this (a retry after an
                            * allocation failure must promise less than the plan that failed) */
    long long iterations;  /* the level's; 0: no network buffers, so no memory check */
    int force_w, force_h;  /* if not 0: the tile size (a resumed checkpoint's, or tiles halved after a failure) */
    const char *forced;    /* which, for L->why */
} nst_plan_req;

/* The same for one level of a render. */
nst_status nst_layout_plan_tiles(const nst_config *cfg, const nst_loss_spec *spec, const nst_net *net, int W, int H, int nranks, int rank,
                                 const nst_plan_req *req, nst_layout *L);
void nst_layout_free(nst_layout *L);

/* Bytes of rank r's backend buffers for a grid, owners and strategy (the model above). */
/* optim.method as it applies: auto is L-BFGS in exact mode and Adam in cheap mode (whose lagged Gram
 * L-BFGS cannot take); "adam" or "lbfgs". A level's plan may still turn auto's L-BFGS into Adam
 * where its state fits no tiling (nst_layout.lbfgs_unfit). */
const char *nst_optim_method(const nst_config *cfg);

size_t nst_layout_memory(const nst_grid *g, const int *owner, int r, int cheap, size_t opt_px_bytes, nst_gram_strategy gram,
                         const nst_loss_spec *spec, const nst_net *net);
/* Bytes rank r holds in host memory while a level renders, besides the backend's buffers: its
 * windows' content, initial and result pixels, the previous level's cores, the CPU scratch (for
 * be's activation dtype and threads). The planner counts them against the budget when the
 * backend's memory is host memory. */
size_t nst_layout_host_memory(const nst_grid *g, const int *owner, int r, const nst_backend *be);
/* What is left of the budget for a level's style targets (computed while its windows are held):
 * the budget less the largest host memory over ranks where that shares the backend's memory (the
 * CPU), else the whole budget. The same on every rank. */
size_t nst_layout_style_budget(const nst_layout *L, const nst_backend *be, size_t budget);
/* The tiling in words, for the log and the dry run: "2x1 = 2 tiles of 1024x1376 px", or "1 tile,
 * the whole 40x27 image" (one tile is the image, whatever its aligned size). */
void nst_layout_describe_tiles(const nst_grid *g, char *out, size_t cap);
/* The budget: on a device with a fixed arena (CUDA), what is free in it less the backend's
 * scratch reserve; else memory_gb if set, else 80% of what the node and this process's memory
 * control group have left (util/sysmem.h), shared by the ranks of a node. */
size_t nst_memory_budget(const nst_backend *be, double memory_gb, int local_ranks);
/* run.memory_gb, when set, must fit what this node (and its memory control group) has left for
 * its local_ranks ranks: else one line saying what there is. */
nst_status nst_memory_check(const nst_config *cfg, int local_ranks);

#endif
