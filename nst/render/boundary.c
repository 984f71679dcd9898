/* nst/render/boundary.c: what a render does between iterations (see render_parts.h): this rank's
 * part of a checkpoint (its tiles' optimised pixels and optimiser state, the lagged Gram) written
 * when due and read back on resume; the stop on a signal or before the memory runs out; the
 * preview every output.save_every iterations. */
#include "render_parts.h"

#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../mpi/comm.h"
#include "../../mpi/watchdog.h"
#include "../../util/mem.h"
#include "../../util/signals.h"
#include "../report/progress.h"
#include "../state/checkpoint.h"
#include "../state/snapshot.h"

typedef struct {
    int64_t t_start;
    int32_t nlocal, cheap, lbfgs, pad;
} state_header;

/* This rank's part of a checkpoint, to its file or back (io's direction): its tiles' optimised
 * pixels and optimiser state, the lagged Gram. */
static nst_status tiles_state(nst_render_state *rs, const nst_ckpt_io *io)
{
    const nst_layout *L = rs->ctx->layout;
    state_header h = {rs->t_start, L->nlocal, L->cheap, L->lbfgs, 0};
    char name[64];
    NST_TRY(nst_ckpt_io_host(io, "render", &h, sizeof h));
    if (io->r && (h.nlocal != L->nlocal || h.cheap != L->cheap || h.lbfgs != L->lbfgs))
        return nst_fail(NST_EINPUT, "checkpoint: rank %d held %d tiles (%s mode, %s); this run plans %d (%s, %s): a different tiling", nst_comm_rank(),
                        h.nlocal, h.cheap ? "cheap" : "exact", h.lbfgs ? "L-BFGS" : "Adam", L->nlocal, L->cheap ? "cheap" : "exact",
                        L->lbfgs ? "L-BFGS" : "Adam");
    rs->t_start = h.t_start;
    int *tiles = nst_alloc_array((size_t)L->nlocal + 1, sizeof(int), "checkpoint tiles");
    if (!tiles) return NST_ENOMEM;
    memcpy(tiles, L->local, sizeof(int) * (size_t)L->nlocal);
    nst_status s = nst_ckpt_io_host(io, "tiles", tiles, sizeof(int) * (size_t)L->nlocal);
    if (s == NST_OK && memcmp(tiles, L->local, sizeof(int) * (size_t)L->nlocal) != 0)
        s = nst_fail(NST_EINPUT, "checkpoint: rank %d held other tiles than this run assigns it: a different tiling", nst_comm_rank());
    nst_free(tiles);
    NST_TRY(s);
    NST_TRY(nst_ckpt_io_host(io, "first", rs->first, sizeof *rs->first));
    for (int i = 0; i < L->nlocal; i++) {
        size_t bytes = nst_tensor_elems(&rs->ts[i].x) * sizeof(float);
        snprintf(name, sizeof name, "x/%d", i);
        NST_TRY(nst_ckpt_io_buffer(io, name, rs->ts[i].x.data, bytes));
        if (L->lbfgs) continue;
        snprintf(name, sizeof name, "m/%d", i);
        NST_TRY(nst_ckpt_io_buffer(io, name, rs->ts[i].m.data, bytes));
        snprintf(name, sizeof name, "v/%d", i);
        NST_TRY(nst_ckpt_io_buffer(io, name, rs->ts[i].v.data, bytes));
    }
    if (L->lbfgs) NST_TRY(nst_lbfgs_state(rs->lb, io));
    for (int i = 0; rs->ctx->cfg->optim_average > 0 && i < L->nlocal; i++) {
        snprintf(name, sizeof name, "avg/%d", i);
        NST_TRY(nst_ckpt_io_buffer(io, name, rs->ts[i].a.data, nst_tensor_elems(&rs->ts[i].a) * sizeof(float)));
    }
    NST_TRY(nst_stop_state(rs->stop, io));
    return nst_objective_state(rs->obj, io);
}

static nst_status save_state(void *p, nst_ckpt_writer *w)
{
    nst_render_state *rs = p;
    nst_ckpt_io io = {w, NULL, rs->ctx->be};
    return tiles_state(rs, &io);
}

/* The state back from this rank's file of the checkpoint being resumed. */
nst_status nst_render_load_state(nst_render_state *rs)
{
    nst_ckpt_reader *r = NULL;
    NST_TRY(nst_ckpt_open_rank(rs->ctx->ckpt, &r));
    nst_ckpt_io io = {NULL, r, rs->ctx->be};
    nst_status s = tiles_state(rs, &io);
    nst_ckpt_reader_close(r);
    return s;
}

/* At the boundary after `done` iterations: a checkpoint when due; on a signal, one and the stop. */
nst_status nst_render_boundary(const nst_render_ctx *ctx, nst_render_state *rs, long long done, nst_render_stats *st)
{
    nst_ckpt *c = ctx->ckpt;
    int p = nst_ckpt_poll(c, done, ctx->coll.sum_doubles, ctx->coll.ctx);
    if (p == NST_CKPT_NONE) return NST_OK;
    double t0 = nst_now();
    if (c->enabled) {
        NST_TRY(nst_ckpt_write(c, ctx->level, done, ctx->layout->grid.tile_w, ctx->layout->grid.tile_h, save_state, rs));
        st->checkpoints++;
        char saved[4200];
        snprintf(saved, sizeof saved, "the checkpoint of level %d, iteration %lld in %s is in force", ctx->level + 1, done, c->dir);
        nst_watchdog_saved(saved); /* what a stalled or lost job resumes from */
        char fields[4400];
        snprintf(fields, sizeof fields, "\"level\": %d, \"iteration\": %lld, \"generation\": %lld, \"seconds\": %.3f, \"signal\": %s",
                 ctx->level + 1, done, c->gen, nst_now() - t0, p == NST_CKPT_SIGNAL ? "true" : "false");
        nst_progress_event(ctx->progress, "checkpoint", fields);
    }
    st->checkpoint_seconds += nst_now() - t0;
    if (p == NST_CKPT_MEMORY) {
        char who[64], saved[4200];
        if (c->low_ranks == 1) snprintf(who, sizeof who, "rank %d's node has %.0f MiB", c->low_rank, (double)c->low_left / (1 << 20));
        else snprintf(who, sizeof who, "%d ranks' nodes have %.0f MiB between them", c->low_ranks, (double)c->low_left / (1 << 20));
        if (c->enabled) snprintf(saved, sizeof saved, "checkpoint written to %s: free memory or give the job more, then run again to resume", c->dir);
        else snprintf(saved, sizeof saved, "checkpoint.path is not set, so nothing was saved");
        return nst_fail(NST_ERUNTIME, "stopped at level %d, iteration %lld of %lld before the system would kill the job: %s of memory left "
                        "(its memory control group or the machine); %s",
                        ctx->level + 1, done, ctx->iterations, who, saved);
    }
    if (p != NST_CKPT_SIGNAL) return NST_OK;
    int sig = nst_signal_pending();
    const char *name = sig ? nst_signal_name(sig) : "SIGUSR1/SIGTERM/SIGHUP/SIGINT";
    if (!c->enabled)
        return nst_fail(NST_ERUNTIME, "stopped by %s at level %d, iteration %lld of %lld; checkpoint.path is not set, so nothing was saved", name,
                        ctx->level + 1, done, ctx->iterations);
    return nst_fail(NST_EINTERRUPTED, "stopped by %s at level %d, iteration %lld of %lld: checkpoint written to %s; run again (or requeue: "
                    "exit status 75) to resume%s", name, ctx->level + 1, done, ctx->iterations, c->dir,
                    sig == SIGTERM ? " (after Ctrl-C mpirun reports its own status, 1; tools/nstbatch-mpirun keeps 75)" : "");
}

/* Every local tile's core pixels (after `done` iterations; -1: the level's result) and its rect,
 * agreed over the ranks; freed with free_cores whatever the status. Collective. */
static nst_status download_cores(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *ts, long long done, float ***px,
                                 nst_rect **cores)
{
    const int n = ctx->layout->nlocal;
    *px = nst_calloc(sizeof(float *) * ((size_t)n + 1), "snapshot pixels");
    *cores = nst_calloc(sizeof(nst_rect) * ((size_t)n + 1), "snapshot cores");
    nst_status s = *px && *cores ? nst_render_download_cores(ctx, tiles, ts, done, *px) : NST_ENOMEM;
    for (int i = 0; *cores && i < n; i++) (*cores)[i] = tiles[i].core;
    return nst_render_agree(ctx, s);
}

static void free_cores(int n, float **px, nst_rect *cores)
{
    for (int i = 0; px && i < n; i++) nst_free(px[i]);
    nst_free(px);
    nst_free(cores);
}

/* The benchmark's hook NSTBATCH_SNAPSHOTS=DIR (bench/quality.sh): every preview is also kept whole,
 * at its level's size in 16 bits, as DIR/L<level>_<iteration>.png, and rank 0 adds a line to
 * DIR/index.tsv: level, iteration, the wall clock (seconds since the epoch) when this preview
 * began, and the seconds every earlier preview and snapshot of this process took, which the
 * benchmark takes off the render's time. Each level's result is kept too, as DIR/L<level>_end.png
 * (not in the index: the benchmark scores the outputs; tests compare levels). */
static double preview_seconds_so_far;

static nst_status keep_snapshot(const nst_render_ctx *ctx, const nst_rect *cores, float *const *px, long long done, double began)
{
    const char *dir = getenv("NSTBATCH_SNAPSHOTS");
    if (!dir || !dir[0]) return NST_OK;
    const nst_layout *L = ctx->layout;
    char path[4200];
    snprintf(path, sizeof path, "%s/L%d_%06lld.png", dir, ctx->level + 1, done);
    NST_TRY(nst_snapshot_write(path, INT_MAX, 16, ctx->img_w, ctx->img_h, cores, px, L->nlocal));
    if (nst_comm_rank() != 0) return NST_OK;
    snprintf(path, sizeof path, "%s/index.tsv", dir);
    FILE *f = fopen(path, "a");
    if (!f) return nst_fail(NST_ERUNTIME, "NSTBATCH_SNAPSHOTS: cannot append to %s", path);
    fprintf(f, "%d\t%lld\t%.6f\t%.6f\n", ctx->level + 1, done, began, preview_seconds_so_far);
    return fclose(f) == 0 ? NST_OK : nst_fail(NST_ERUNTIME, "NSTBATCH_SNAPSHOTS: cannot write %s", path);
}

nst_status nst_render_snapshot_end(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *ts)
{
    const char *dir = getenv("NSTBATCH_SNAPSHOTS");
    if (!dir || !dir[0]) return NST_OK;
    double t0 = nst_now();
    float **px;
    nst_rect *cores;
    nst_status s = download_cores(ctx, tiles, ts, -1, &px, &cores);
    char path[4200];
    snprintf(path, sizeof path, "%s/L%d_end.png", dir, ctx->level + 1);
    if (s == NST_OK) s = nst_snapshot_write(path, INT_MAX, 16, ctx->img_w, ctx->img_h, cores, px, ctx->layout->nlocal);
    free_cores(ctx->layout->nlocal, px, cores);
    preview_seconds_so_far += nst_now() - t0;
    return s;
}

/* output.save_every: the image as it stands, as the preview (after `done` iterations). Collective. */
nst_status nst_render_preview(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *ts, long long done, nst_render_stats *st)
{
    const nst_layout *L = ctx->layout;
    double t0 = nst_now();
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    float **px;
    nst_rect *cores;
    nst_status s = download_cores(ctx, tiles, ts, done, &px, &cores);
    if (s == NST_OK) s = nst_snapshot_write(ctx->preview_path, ctx->preview_side, 8, ctx->img_w, ctx->img_h, cores, px, L->nlocal);
    if (s == NST_OK) s = nst_render_agree(ctx, keep_snapshot(ctx, cores, px, done, (double)wall.tv_sec + 1e-9 * (double)wall.tv_nsec));
    free_cores(L->nlocal, px, cores);
    preview_seconds_so_far += nst_now() - t0;
    if (s != NST_OK) return s;
    st->previews++;
    st->preview_seconds += nst_now() - t0;
    char fields[160];
    snprintf(fields, sizeof fields, "\"level\": %d, \"iteration\": %lld, \"seconds\": %.3f", ctx->level + 1, done, nst_now() - t0);
    nst_progress_event(ctx->progress, "preview", fields);
    return NST_OK;
}
