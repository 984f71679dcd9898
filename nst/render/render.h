/* nst/render/render.h: the optimisation of one image over this rank's tiles: targets, initialisation,
 * the iteration loop (halo exchange, the objective with its global Gram, Adam on the owned
 * pixels), progress on rank 0. Inputs arrive at the working resolution, as each local tile's
 * window of pixels; the result leaves as each local tile's core.
 *
 * Exact mode: a tile optimises its core; before every iteration its window is refilled from the
 * cores that cover it (its own by a local copy, others by a copy or a message). Cheap mode: a tile
 * optimises its whole window with the lagged Gram; every tiling.exchange_every iterations, and at
 * the end, the pixels where windows overlap are blended with feathered weights, every tile
 * computing the same blend.
 *
 * The files: render.c (the loop, phase by phase), tiles.c (the local tiles: targets, initial
 * pixels, the optimiser's step), exchange.c (the halo exchange and the blend), boundary.c
 * (checkpoints, signals and previews between iterations), render_image.c (whole images on one
 * process); render_parts.h is what they share.
 */
#ifndef NST_RENDER_H
#define NST_RENDER_H

#include "../../io/config/config.h"
#include "../../io/image/image.h"
#include "../../io/weights/weights.h"
#include "../plan/layout.h"
#include "../optimise/objective.h"
#include "../optimise/timers.h"

typedef struct {
    long long iterations;       /* run by this call (from a resumed checkpoint's iteration on) */
    long long steps;            /* the level's optimiser steps in all: its iterations, or fewer */
    int stopped;                /* when the stopping rule ended it (optim.stop_tolerance) */
    nst_loss_terms first, last; /* at the initial image and at the result */
    double seconds;             /* the iteration loop */
    double setup_seconds;       /* network, targets, tiles */
    nst_timers timers;          /* this rank's per-phase seconds in the loop */
    size_t bytes_peak;          /* the backend's peak allocation on this rank */
    size_t exchange_bytes;      /* of it, the halo exchange's buffers in backend memory (device to device), beyond the layout's model */
    double checkpoint_seconds;  /* writing checkpoints (not in the loop's phases) */
    int checkpoints;
    double preview_seconds;     /* writing previews (output.save_every; not in the loop's phases) */
    int previews;
    long long resumed_at;       /* the iteration a resumed level started from (0: fresh) */
    int stepped;                /* an optimiser step was taken (all ranks agreed): a failure after it loses work */
    /* The host's waits for the backend (kernels/backend.h) in the iterations that read no loss
     * terms (neither a row nor a stopping decision), less those of the steps between ranks (the
     * halo exchange and the Gram sums, through the host or NCCL, whose end the host waits for so
     * that gpu.nccl_timeout bounds a hung peer): 0 by design, a GPU's stream never drained
     * between two reports but there. quiet_staged: those excepted. */
    long long quiet_iterations, quiet_waits, quiet_staged;
    long long graph_records, graph_replays; /* CUDA graphs (gpu.graphs): iterations recorded, and replayed */
    int graph_segments;                      /* ... as that many segments each (the steps between ranks between them) */
    char graphs_off[160];                    /* why a recording failed and the level went on without graphs ("": none did) */
} nst_render_stats;

/* Adam's moments handed from one pyramid level to the next (pyramid.state = carry): per local
 * tile, over its optimised region (the core in exact mode, the window in cheap mode). */
typedef struct {
    float **m, **v;
    long long t; /* the steps taken: the bias correction goes on from there */
} nst_adam_state;

typedef struct {
    const nst_config *cfg;
    const nst_loss_spec *spec;
    nst_backend *be;
    const nst_weights *weights;
    const nst_layout *layout;
    nst_collectives coll;
    int img_w, img_h;                   /* the whole image (of this level) */
    long long iterations;               /* this level's */
    float *const *targets;              /* style targets (host C x C per style layer), NULL without style layers */
    const double *normA;
    const nst_adam_state *state_in;     /* NULL: Adam starts afresh */
    nst_adam_state *state_out;          /* NULL: not kept; else filled (arrays allocated here) */
    struct nst_ckpt *ckpt;              /* checkpoints and signals (NULL: neither, e.g. tests) */
    int level;                          /* the pyramid level, for checkpoints and progress */
    struct nst_progress *progress;      /* rank 0's progress display and metrics (NULL: the plain table) */
    const char *preview_path;           /* output.save_every: the preview, replaced every save_every iterations */
    int preview_side;
    long long save_every;               /* 0: no previews while rendering */
    const nst_guides *guides;           /* the masks in use (NULL: none); targets then hold one set per style image */
    float ***masks;                     /* masks[i][j]: local tile i's window of mask j (nst/inputs/masks.h), NULL without */
    float **temporal_target;            /* spec->temporal_weight > 0: local tile i's window of the warped earlier result (3 per pixel) */
    float **temporal_c;                 /* and of its consistency weights (1 per pixel) */
    float **first_grad;                 /* NULL, or filled: local tile i's owned image gradient at the first objective (nst_free each) */
} nst_render_ctx;

/* With ctx->ckpt: at every iteration boundary a checkpoint is written when due, and a signal
 * (SIGUSR1/SIGTERM on any rank) writes one and returns NST_EINTERRUPTED. When ctx->ckpt resumes
 * this level, the optimised pixels, the optimiser state and the lagged Gram come from this rank's
 * checkpoint file (content and init then only serve the content targets) and the loop goes on
 * from the checkpoint's iteration: the result is bit-identical to an uninterrupted render.
 *
 * content[i]: the content window pixels of local tile i, host fp32. init[i]: the initial
 * window pixels (optim.init = image, or the previous pyramid level upsampled), or init = NULL for
 * the content or noise (optim.init). Both consumed (freed and set to NULL as soon as the tile is
 * set up). out[i] receives the core pixels of local tile i (nst_free them). With 0 iterations
 * there is no network and no loss: the result is the initial image. Collective. */
nst_status nst_render(const nst_render_ctx *ctx, float **content, float **init, float **out, nst_render_stats *stats);

/* One process, whole images: plans the layout for one rank, cuts the windows, renders, and
 * assembles out (allocated here). style may be NULL without style layers; init may be NULL;
 * first_grad, when not NULL, receives the first objective's image gradient (W x H x 3, allocated
 * here; the loss terms are stats->first). */
nst_status nst_render_image(const nst_config *cfg, const nst_loss_spec *spec, nst_backend *be, const nst_weights *w,
                            const nst_image *content, const nst_image *style, const nst_image *init, nst_image *out,
                            nst_render_stats *stats, nst_image *first_grad);

/* Copy rectangle r of a whole image to packed pixels, and back. */
void nst_image_extract(const nst_image *img, nst_rect r, float *out);
void nst_image_place(nst_image *img, nst_rect r, const float *in);

/* The noise initialisation over r: uniform in [0,1], a function of (seed, pixel of the W-wide
 * image), so every tiling draws the same noise. */
void nst_noise_rect(float *out, nst_rect r, int W, unsigned long long seed);

#endif
