/* nst/render/render_parts.h: what the files of one render (render.c, tiles.c, exchange.c,
 * boundary.c) share behind render.h: each local tile's optimiser state, the ranks' agreement on
 * a status, and the state a checkpoint saves. Not for use outside nst/render/. */
#ifndef NST_RENDER_PARTS_H
#define NST_RENDER_PARTS_H

#include "../optimise/lbfgs.h"
#include "../optimise/stop.h"
#include "render.h"

/* Parallel to the tiles: what the optimiser owns for each local tile. */
typedef struct {
    nst_tensor x, g; /* the optimised pixels and their gradient: the core (exact) or the window (cheap) */
    nst_tensor m, v; /* Adam */
    nst_tensor a;    /* optim.average: the moving average of x, not yet bias-corrected */
} nst_tile_state;

/* The worst status of all ranks (one process: its own). */
static inline nst_status nst_render_agree(const nst_render_ctx *ctx, nst_status s)
{
    return ctx->coll.check ? ctx->coll.check(ctx->coll.ctx, s) : s;
}

/* ---- the local tiles (tiles.c) ----------------------------------------------------------------- */

/* Local tile li from its content and initial window pixels (init NULL: the content or noise). */
nst_status nst_render_tile_setup(const nst_render_ctx *ctx, nst_objective *obj, nst_tile *tile, nst_tile_state *ts, int li,
                                 const float *content, const float *init);
void nst_render_tile_teardown(const nst_render_ctx *ctx, nst_objective *obj, nst_tile *tile, nst_tile_state *ts);
/* Adam's step t on every local tile, or one L-BFGS step over all of them. pending: this rank's
 * failure before the step (then no local work; L-BFGS still makes its collective calls). */
/* adam: Adam's step count in backend memory, ticked here once a step (t is L-BFGS's count) */
nst_status nst_render_step(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *st, nst_lbfgs *lb, long long t, nst_adam_step *adam,
                           nst_status pending);
nst_status nst_render_lbfgs_setup(const nst_render_ctx *ctx, nst_tile_state *st, nst_lbfgs *lb);
/* optim.clamp = false: the result clamped into [0, 1] (its gradient buffers overwritten), as it is written. */
nst_status nst_render_project(const nst_render_ctx *ctx, nst_tile_state *st);
/* optim.iterations = 0: the initial image's cores (content and init consumed). Collective. */
nst_status nst_render_initial(const nst_render_ctx *ctx, float **content, float **init, float **out, nst_render_stats *st);
/* out[i] (allocated here): local tile i's core pixels as they stand; with avg_steps >= 0 and
 * optim.average, the bias-corrected average after that many steps of the level instead. */
nst_status nst_render_download_cores(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *ts, long long avg_steps, float **out);
/* optim.average: the bias-corrected average after `steps` steps becomes the pixels (the result). */
nst_status nst_render_take_average(const nst_render_ctx *ctx, nst_tile_state *st, long long steps);

/* ---- iteration boundaries: checkpoints, signals, previews (boundary.c) --------------------------- */

/* What this rank's part of a checkpoint holds, and where its values are. */
typedef struct {
    const nst_render_ctx *ctx;
    nst_tile_state *ts;
    nst_lbfgs *lb;
    nst_stop *stop;
    nst_objective *obj;
    long long t_start;
    nst_loss_terms *first;
} nst_render_state;


/* This rank's state back from the checkpoint being resumed (ctx->ckpt). */
nst_status nst_render_load_state(nst_render_state *rs);
/* After `done` iterations: a checkpoint when due; on a signal or low memory, the stop. */
nst_status nst_render_boundary(const nst_render_ctx *ctx, nst_render_state *rs, long long done, nst_render_stats *st);
/* NSTBATCH_SNAPSHOTS=DIR (a test and benchmark hook): the level's result as DIR/L<level>_end.png,
 * 16-bit at the level's size. Collective; nothing without the variable. */
nst_status nst_render_snapshot_end(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *ts);
/* output.save_every's preview of the image as it stands. Collective. */
nst_status nst_render_preview(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *ts, long long done, nst_render_stats *st);

#endif
