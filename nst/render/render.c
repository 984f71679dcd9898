/* nst/render/render.c: the tiled optimisation loop of one image (see render.h). */
#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "../../mpi/comm.h"
#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/plant.h"
#include "../../util/rng.h"
#include "../../util/signals.h"
#include "../state/checkpoint.h"
#include "../report/first_gradient.h"
#include "../optimise/lbfgs.h"
#include "../report/progress.h"
#include "../state/snapshot.h"

void nst_image_extract(const nst_image *img, nst_rect r, float *out)
{
    for (int y = 0; y < r.h; y++)
        memcpy(out + (size_t)y * r.w * 3, img->px + ((size_t)(r.y + y) * img->w + r.x) * 3, (size_t)r.w * 3 * sizeof(float));
}

void nst_image_place(nst_image *img, nst_rect r, const float *in)
{
    for (int y = 0; y < r.h; y++)
        memcpy(img->px + ((size_t)(r.y + y) * img->w + r.x) * 3, in + (size_t)y * r.w * 3, (size_t)r.w * 3 * sizeof(float));
}

void nst_noise_rect(float *out, nst_rect r, int W, unsigned long long seed)
{
#pragma omp parallel for schedule(static)
    for (int y = 0; y < r.h; y++)
        for (int x = 0; x < r.w; x++)
            for (int c = 0; c < 3; c++) {
                uint64_t i = ((uint64_t)(r.y + y) * (uint64_t)W + (uint64_t)(r.x + x)) * 3 + (uint64_t)c;
                out[((size_t)y * r.w + x) * 3 + c] = nst_rng_uniform(seed, 0x6e6f697365ull /* "noise" */, i);
            }
}

/* ---- per-tile optimiser state ------------------------------------------------------------------ */

/* Parallel to the tiles: what the optimiser owns for each local tile. */
typedef struct {
    nst_tensor x, g; /* the optimised pixels and their gradient: the core (exact) or the window (cheap) */
    nst_tensor m, v; /* Adam */
} tile_state;

/* The worst status of all ranks (one process: its own). */
static nst_status agree(const nst_render_ctx *ctx, nst_status s)
{
    return ctx->coll.check ? ctx->coll.check(ctx->coll.ctx, s) : s;
}

/* ---- the halo exchange ------------------------------------------------------------------------- */
/* On a GPU each remote transfer is a pack kernel, a pageable D2H copy and a stream sync, then MPI
 * on the host, then an H2D copy, an unpack kernel and a sync: serial with compute. The model
 * (docs/PERFORMANCE.md, "The halo exchange on a GPU"): 17 MB each way per 2048 px core and
 * iteration, about 4 ms pageable (2.4 ms pinned) against 17 ms of bf16 compute at half an H100's
 * peak, so 10-20 % there, 1-2 % in fp32, and on the CPU under 1 % (measured: 1.3 ms of 1.05 s).
 * Exact mode has no independent work to hide it behind (a window's first layer reads its halo);
 * pinned staging and device-to-device sends (NCCL) are the remedies, to be measured on a GPU. */

typedef struct {
    nst_transfer *tr;
    int ntr;
    int npeers, *peers;       /* ranks exchanged with */
    float **sendbuf, **recvbuf;
    size_t *sendn, *recvn;    /* floats */
    float **stage;            /* cheap mode: copies of local tiles' contributions, per transfer (owned) */
    const float **from;       /* cheap mode: where each transfer's values are (stage or a receive buffer) */
} exchange;

static void exchange_free(exchange *ex)
{
    for (int p = 0; p < ex->npeers; p++) {
        nst_free(ex->sendbuf[p]);
        nst_free(ex->recvbuf[p]);
    }
    for (int i = 0; ex->stage && i < ex->ntr; i++) nst_free(ex->stage[i]);
    nst_free(ex->stage);
    nst_free(ex->from);
    nst_free(ex->sendbuf);
    nst_free(ex->recvbuf);
    nst_free(ex->sendn);
    nst_free(ex->recvn);
    nst_free(ex->peers);
    free(ex->tr);
    memset(ex, 0, sizeof *ex);
}

static int peer_slot(const exchange *ex, int rank)
{
    for (int p = 0; p < ex->npeers; p++)
        if (ex->peers[p] == rank) return p;
    return -1;
}

/* Keep the transfers this rank takes part in; size the per-peer buffers. */
static nst_status exchange_plan(const nst_layout *L, exchange *ex)
{
    int n;
    memset(ex, 0, sizeof *ex);
    nst_transfer *all = L->cheap ? nst_plan_window_overlaps(&L->grid, &n) : nst_plan_core_to_window(&L->grid, &n);
    if (!all) return nst_fail(NST_ENOMEM, "out of memory planning the halo exchange");
    ex->tr = all;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (L->owner[all[i].src] == L->rank || L->owner[all[i].dst] == L->rank) all[k++] = all[i];
    ex->ntr = k;
    ex->peers = nst_alloc_array((size_t)L->nranks, sizeof(int), "exchange peers");
    ex->sendbuf = nst_calloc(sizeof(float *) * (size_t)L->nranks, "exchange buffers");
    ex->recvbuf = nst_calloc(sizeof(float *) * (size_t)L->nranks, "exchange buffers");
    ex->sendn = nst_calloc(sizeof(size_t) * (size_t)L->nranks, "exchange sizes");
    ex->recvn = nst_calloc(sizeof(size_t) * (size_t)L->nranks, "exchange sizes");
    if (!ex->peers || !ex->sendbuf || !ex->recvbuf || !ex->sendn || !ex->recvn) return NST_ENOMEM;
    for (int i = 0; i < ex->ntr; i++) {
        int so = L->owner[ex->tr[i].src], dof = L->owner[ex->tr[i].dst];
        if (so == dof) continue;
        int other = so == L->rank ? dof : so;
        int p = peer_slot(ex, other);
        if (p < 0) ex->peers[p = ex->npeers++] = other;
        size_t floats = (size_t)nst_rect_area(ex->tr[i].rect) * 3;
        if (so == L->rank)
            ex->sendn[p] += floats;
        else
            ex->recvn[p] += floats;
    }
    for (int p = 0; p < ex->npeers; p++) {
        ex->sendbuf[p] = nst_alloc_array(ex->sendn[p] + 1, sizeof(float), "halo send buffer");
        ex->recvbuf[p] = nst_alloc_array(ex->recvn[p] + 1, sizeof(float), "halo receive buffer");
        if (!ex->sendbuf[p] || !ex->recvbuf[p]) return NST_ENOMEM;
    }
    if (L->cheap) {
        ex->stage = nst_calloc(sizeof(float *) * (size_t)(ex->ntr + 1), "blend staging");
        ex->from = nst_calloc(sizeof(float *) * (size_t)(ex->ntr + 1), "blend staging");
        if (!ex->stage || !ex->from) return NST_ENOMEM;
    }
    return NST_OK;
}

/* Index of grid tile t among the local tiles (they are sorted), or -1. */
static int local_index(const nst_layout *L, int t)
{
    int lo = 0, hi = L->nlocal - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (L->local[mid] == t) return mid;
        if (L->local[mid] < t)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Where a transfer's pixels are in the source's optimised pixels: its core (exact) or window (cheap). */
static nst_rect src_rect(const nst_layout *L, const nst_tile *src, const nst_transfer *tr)
{
    nst_rect origin = L->cheap ? src->window : src->core;
    return nst_rect_translate(tr->rect, -origin.x, -origin.y);
}

/* Pack what this rank sends, exchange with the peers, and place (exact) or stage (cheap) what it
 * receives; transfers between two local tiles are copied directly (exact) or staged (cheap). */
static nst_status exchange_run(const nst_render_ctx *ctx, nst_tile *tiles, tile_state *st, exchange *ex)
{
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    size_t *off = nst_calloc(sizeof(size_t) * (size_t)(ex->npeers + 1), "exchange offsets");
    nst_status s = off ? NST_OK : NST_ENOMEM;
    for (int i = 0; s == NST_OK && i < ex->ntr; i++) { /* pack, in the global order */
        const nst_transfer *tr = &ex->tr[i];
        if (L->owner[tr->src] != L->rank) continue;
        int si = local_index(L, tr->src);
        nst_rect r = src_rect(L, &tiles[si], tr);
        if (L->owner[tr->dst] == L->rank) {
            if (L->cheap) {
                if (!ex->stage[i]) ex->stage[i] = nst_alloc_array((size_t)nst_rect_area(r) * 3, sizeof(float), "blend staging");
                s = ex->stage[i] ? be->ops->download_rect(be, &st[si].x, r, ex->stage[i]) : NST_ENOMEM;
                ex->from[i] = ex->stage[i];
            } else {
                nst_tile *dst = &tiles[local_index(L, tr->dst)];
                s = be->ops->copy_rect(be, &st[si].x, r, &dst->img, tr->rect.x - dst->window.x, tr->rect.y - dst->window.y);
            }
        } else {
            int p = peer_slot(ex, L->owner[tr->dst]);
            s = be->ops->download_rect(be, &st[si].x, r, ex->sendbuf[p] + off[p]);
            off[p] += (size_t)nst_rect_area(r) * 3;
        }
    }
    s = agree(ctx, s); /* nobody enters the exchange if a rank could not pack */
    if (s == NST_OK && ex->npeers) {
        nst_comm_msg *sends = nst_alloc_array((size_t)ex->npeers, 2 * sizeof(nst_comm_msg), "exchange messages");
        if (!sends) nst_comm_abort(1, "out of memory for the halo exchange messages");
        nst_comm_msg *recvs = sends + ex->npeers;
        for (int p = 0; p < ex->npeers; p++) {
            sends[p] = (nst_comm_msg){ex->peers[p], ex->sendbuf[p], ex->sendn[p] * sizeof(float)};
            recvs[p] = (nst_comm_msg){ex->peers[p], ex->recvbuf[p], ex->recvn[p] * sizeof(float)};
        }
        s = nst_comm_exchange(sends, ex->npeers, recvs, ex->npeers);
        nst_free(sends);
    }
    if (off) memset(off, 0, sizeof(size_t) * (size_t)(ex->npeers + 1));
    for (int i = 0; s == NST_OK && i < ex->ntr; i++) { /* unpack, in the same order */
        const nst_transfer *tr = &ex->tr[i];
        if (L->owner[tr->dst] != L->rank || L->owner[tr->src] == L->rank) continue;
        int p = peer_slot(ex, L->owner[tr->src]);
        const float *data = ex->recvbuf[p] + off[p];
        off[p] += (size_t)nst_rect_area(tr->rect) * 3;
        if (L->cheap) {
            ex->from[i] = data; /* valid until the next exchange */
        } else {
            nst_tile *dst = &tiles[local_index(L, tr->dst)];
            s = be->ops->upload_rect(be, data, &dst->img, nst_rect_translate(tr->rect, -dst->window.x, -dst->window.y));
        }
    }
    nst_free(off);
    return s;
}

/* Cheap mode: every local window becomes the feather-weighted mean of all windows covering each
 * pixel, summed in tile order so every tile computes the same values. */
static nst_status blend_run(const nst_render_ctx *ctx, nst_tile *tiles, tile_state *st, exchange *ex)
{
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    nst_status s = exchange_run(ctx, tiles, st, ex);
    for (int li = 0; s == NST_OK && li < L->nlocal; li++) {
        const nst_tile *t = &tiles[li];
        nst_rect w = t->window;
        size_t n = (size_t)w.w * w.h;
        float *own = nst_alloc_array(n * 3, sizeof(float), "blend window");
        float *acc = nst_calloc(n * 3 * sizeof(float), "blend sums"), *wsum = nst_calloc(n * sizeof(float), "blend weights");
        if (!own || !acc || !wsum) s = NST_ENOMEM;
        if (s == NST_OK) s = be->ops->download(be, own, st[li].x.data, n * 3, NST_F32);
        int own_done = 0;
        /* contributions in increasing source tile order; the transfers are ordered by (dst, src) */
        for (int i = 0; s == NST_OK && i <= ex->ntr; i++) {
            const nst_transfer *tr = i < ex->ntr ? &ex->tr[i] : NULL;
            if (tr && tr->dst != t->index) continue;
            if (!own_done && (!tr || tr->src > t->index)) {
                for (int y = 0; y < w.h; y++)
                    for (int x = 0; x < w.w; x++) {
                        float wt = nst_blend_weight(&L->grid, t->index, w.x + x, w.y + y, L->blend_width, L->blend_cosine);
                        size_t k = (size_t)y * w.w + x;
                        wsum[k] += wt;
                        for (int c = 0; c < 3; c++) acc[3 * k + c] += wt * own[3 * k + c];
                    }
                own_done = 1;
            }
            if (!tr) break;
            const float *vals = ex->from[i];
            for (int y = 0; y < tr->rect.h; y++)
                for (int x = 0; x < tr->rect.w; x++) {
                    int gx = tr->rect.x + x, gy = tr->rect.y + y;
                    float wt = nst_blend_weight(&L->grid, tr->src, gx, gy, L->blend_width, L->blend_cosine);
                    size_t k = (size_t)(gy - w.y) * w.w + (gx - w.x);
                    wsum[k] += wt;
                    for (int c = 0; c < 3; c++) acc[3 * k + c] += wt * vals[((size_t)y * tr->rect.w + x) * 3 + c];
                }
        }
        if (s == NST_OK) {
            for (size_t k = 0; k < n; k++)
                for (int c = 0; c < 3; c++) own[3 * k + c] = acc[3 * k + c] / wsum[k];
            s = be->ops->upload(be, st[li].x.data, own, n * 3, NST_F32);
        }
        nst_free(own), nst_free(acc), nst_free(wsum);
    }
    return s;
}

/* ---- the loop ----------------------------------------------------------------------------------- */

static void print_header(void)
{
    nst_info("%10s %12s %12s %12s %12s %9s\n", "iteration", "loss", "content", "style", "tv", "s/iter");
}

static void print_terms(long long it, const nst_loss_terms *t, double spi)
{
    if (spi > 0)
        nst_info("%10lld %12.5e %12.5e %12.5e %12.5e %9.3f\n", it, t->total, t->content, t->style, t->tv, spi);
    else
        nst_info("%10lld %12.5e %12.5e %12.5e %12.5e %9s\n", it, t->total, t->content, t->style, t->tv, "-");
}

/* Set up a local tile and its optimiser state: content targets, the optimised pixels from the
 * initial image. */
static nst_status tile_setup(const nst_render_ctx *ctx, nst_objective *obj, nst_tile *tile, tile_state *ts, int li,
                             const float *content, const float *init)
{
    const int t = ctx->layout->local[li];
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    const nst_config *cfg = ctx->cfg;
    nst_rect core = nst_grid_core(&L->grid, t), win = nst_grid_window(&L->grid, t);
    NST_TRY(nst_tile_init(obj, tile, t, core, win, L->cheap));
    NST_TRY(nst_tile_set_content(obj, tile, content));
    if (ctx->masks) NST_TRY(nst_tile_set_masks(obj, tile, ctx->masks[li]));
    if (ctx->temporal_target) NST_TRY(nst_tile_set_temporal(obj, tile, ctx->temporal_target[li], ctx->temporal_c[li]));
    /* the optimised region: the core (exact) or the window (cheap, the tile's own img/dimg) */
    nst_rect opt = L->cheap ? win : core;
    size_t n = (size_t)nst_rect_area(opt) * 3;
    float *x0 = nst_alloc_array(n, sizeof(float), "initial pixels");
    if (!x0) return NST_ENOMEM;
    nst_rect rel = nst_rect_translate(opt, -win.x, -win.y);
    const float *src = init ? init : content;
    if (!init && strcmp(cfg->optim_init, "noise") == 0) {
        nst_noise_rect(x0, opt, ctx->img_w, (unsigned long long)cfg->run_seed);
    } else {
        for (int y = 0; y < rel.h; y++)
            memcpy(x0 + (size_t)y * rel.w * 3, src + ((size_t)(rel.y + y) * win.w + rel.x) * 3, (size_t)rel.w * 3 * sizeof(float));
    }
    nst_status s = NST_OK;
    if (L->cheap) {
        ts->x = tile->img;
        ts->g = tile->dimg;
    } else {
        s = nst_tensor_alloc(be, core.h, core.w, 3, NST_F32, &ts->x);
        if (s == NST_OK) s = nst_tensor_alloc(be, core.h, core.w, 3, NST_F32, &ts->g);
    }
    if (s == NST_OK) s = be->ops->upload(be, ts->x.data, x0, n, NST_F32);
    if (s == NST_OK && !L->lbfgs) s = nst_tensor_alloc(be, opt.h, opt.w, 3, NST_F32, &ts->m);
    if (s == NST_OK && !L->lbfgs) s = nst_tensor_alloc(be, opt.h, opt.w, 3, NST_F32, &ts->v);
    if (s == NST_OK && !L->lbfgs && ctx->state_in) { /* the previous level's moments, upsampled */
        s = be->ops->upload(be, ts->m.data, ctx->state_in->m[li], n, NST_F32);
        if (s == NST_OK) s = be->ops->upload(be, ts->v.data, ctx->state_in->v[li], n, NST_F32);
    }
    nst_free(x0);
    return s;
}

static void tile_teardown(const nst_render_ctx *ctx, nst_objective *obj, nst_tile *tile, tile_state *ts)
{
    if (!ctx->layout->cheap) { /* in cheap mode x and g are the tile's own img and dimg */
        nst_tensor_free(ctx->be, &ts->x);
        nst_tensor_free(ctx->be, &ts->g);
    }
    nst_tensor_free(ctx->be, &ts->m);
    nst_tensor_free(ctx->be, &ts->v);
    if (tile->img.data) nst_tile_free(obj, tile);
}

/* NSTBATCH_PLANT=halo (util/plant.h): every window pixel at the exact halo's distance from the
 * core or beyond zeroed, as a halo one pixel short of what the deepest layer needs (not of its
 * stride-aligned size: the pixels past the need do not matter) would leave it, for the tests
 * that must catch it. */
static nst_status plant_short_halo(const nst_render_ctx *ctx, nst_tile *tiles)
{
    const int need = nst_vgg_gradient_halo(ctx->spec->deepest);
    nst_status s = NST_OK;
    for (int i = 0; s == NST_OK && i < ctx->layout->nlocal; i++) {
        nst_rect w = tiles[i].window, c = nst_rect_translate(tiles[i].core, -w.x, -w.y);
        float *zero = nst_calloc((size_t)w.w * w.h * 3 * sizeof(float), "a planted defect");
        if (!zero) return NST_ENOMEM;
        const int l = c.x - need + 1, r = c.x + c.w - 1 + need, t = c.y - need + 1, b = c.y + c.h - 1 + need;
        const nst_rect side[4] = {{0, 0, l, w.h}, {r, 0, w.w - r, w.h}, {0, 0, w.w, t}, {0, b, w.w, w.h - b}};
        for (int k = 0; s == NST_OK && k < 4; k++)
            if (side[k].w > 0 && side[k].h > 0) s = ctx->be->ops->upload_rect(ctx->be, zero, &tiles[i].img, side[k]);
        nst_free(zero);
    }
    return s;
}

/* Make the windows current: exact mode refills them from the cores; cheap mode blends them. */
static nst_status refresh(const nst_render_ctx *ctx, nst_tile *tiles, tile_state *st, exchange *ex)
{
    if (ctx->layout->cheap) return blend_run(ctx, tiles, st, ex);
    nst_status s = exchange_run(ctx, tiles, st, ex);
    if (s == NST_OK && nst_planted("halo")) s = plant_short_halo(ctx, tiles);
    return s;
}

/* The test hook NSTBATCH_FAULT=RANK:ITERATION: that rank fails at that iteration's step, as a rank
 * that ran out of memory or lost a device would, so the tests can check that every rank stops
 * with one message instead of hanging. */
static nst_status injected_fault(long long it)
{
    const char *f = getenv("NSTBATCH_FAULT");
    int rank;
    long long at;
    if (f && sscanf(f, "%d:%lld", &rank, &at) == 2 && rank == nst_comm_rank() && at == it)
        return nst_fail(NST_ERUNTIME, "rank %d: injected fault at iteration %lld (NSTBATCH_FAULT=%s)", rank, it, f);
    return NST_OK;
}

/* Adam on the owned pixels of every local tile, or an L-BFGS step over all of them. */
static nst_status step(const nst_render_ctx *ctx, nst_tile *tiles, tile_state *st, nst_lbfgs *lb, long long t)
{
    const nst_config *cfg = ctx->cfg;
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    nst_adam_params ap = {(float)cfg->optim_lr, (float)cfg->optim_beta1, (float)cfg->optim_beta2, (float)cfg->optim_eps, t,
                          cfg->optim_clamp};
    for (int i = 0; i < L->nlocal; i++) {
        if (!L->cheap) /* the gradient of the owned pixels: the core of the window's gradient */
            NST_TRY(be->ops->copy_rect(be, &tiles[i].dimg, tiles[i].own_px, &st[i].g, 0, 0));
        if (!L->lbfgs)
            NST_TRY(be->ops->adam(be, st[i].x.data, st[i].g.data, st[i].m.data, st[i].v.data, nst_tensor_elems(&st[i].x), &ap));
    }
    if (!L->lbfgs) return NST_OK;
    float **x = nst_alloc_array((size_t)L->nlocal + 1, 2 * sizeof(float *), "L-BFGS vectors");
    if (!x) return NST_ENOMEM;
    float **g = x + L->nlocal + 1;
    for (int i = 0; i < L->nlocal; i++) {
        x[i] = st[i].x.data;
        g[i] = st[i].g.data;
    }
    nst_status s = nst_lbfgs_step(lb, x, g);
    nst_free(x);
    return s;
}

/* L-BFGS over the local tiles' cores. */
static nst_status lbfgs_setup(const nst_render_ctx *ctx, tile_state *st, nst_lbfgs *lb)
{
    const nst_layout *L = ctx->layout;
    size_t *n = nst_alloc_array((size_t)L->nlocal + 1, sizeof(size_t), "L-BFGS sizes");
    if (!n) return NST_ENOMEM;
    for (int i = 0; i < L->nlocal; i++) n[i] = nst_tensor_elems(&st[i].x);
    nst_status s = nst_lbfgs_init(lb, ctx->be, ctx->coll, (int)ctx->cfg->optim_lbfgs_history, ctx->cfg->optim_lbfgs_step, L->nlocal,
                                  L->local, L->grid.ntiles, n);
    nst_free(n);
    return s;
}

/* optim.iterations = 0: no optimisation, so no network: the result is the initial image (the
 * content, the noise or optim.init_path), each core cut from its window as the windows arrive. */
static nst_status render_initial(const nst_render_ctx *ctx, float **content, float **init, float **out, nst_render_stats *st)
{
    const nst_layout *L = ctx->layout;
    const nst_config *cfg = ctx->cfg;
    double t0 = nst_now();
    nst_status s = NST_OK;
    for (int i = 0; i < L->nlocal; i++) {
        nst_rect core = nst_grid_core(&L->grid, L->local[i]), win = nst_grid_window(&L->grid, L->local[i]);
        if (s == NST_OK) {
            out[i] = nst_alloc_array((size_t)nst_rect_area(core) * 3, sizeof(float), "a tile's result");
            if (!out[i]) s = NST_ENOMEM;
        }
        if (s == NST_OK && !init && strcmp(cfg->optim_init, "noise") == 0) {
            nst_noise_rect(out[i], core, ctx->img_w, (unsigned long long)cfg->run_seed);
        } else if (s == NST_OK) {
            const float *src = init ? init[i] : content[i];
            nst_rect rel = nst_rect_translate(core, -win.x, -win.y);
            for (int y = 0; y < rel.h; y++)
                memcpy(out[i] + (size_t)y * rel.w * 3, src + ((size_t)(rel.y + y) * win.w + rel.x) * 3, (size_t)rel.w * 3 * sizeof(float));
        }
        nst_free(content[i]);
        content[i] = NULL;
        if (init) {
            nst_free(init[i]);
            init[i] = NULL;
        }
    }
    st->setup_seconds = nst_now() - t0;
    nst_info("0 iterations: no optimisation; the output is the initial image (%s)\n", init ? "given" : cfg->optim_init);
    return agree(ctx, s);
}

/* ---- checkpoint state ------------------------------------------------------------------------------- */

typedef struct {
    const nst_render_ctx *ctx;
    tile_state *ts;
    nst_lbfgs *lb;
    nst_objective *obj;
    long long t_start;
    nst_loss_terms *first;
} render_state;

typedef struct {
    int64_t t_start;
    int32_t nlocal, cheap, lbfgs, pad;
} state_header;

/* This rank's part of a checkpoint, to its file or back (io's direction): its tiles' optimised
 * pixels and optimiser state, the lagged Gram. */
static nst_status tiles_state(render_state *rs, const nst_ckpt_io *io)
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
    return nst_objective_state(rs->obj, io);
}

static nst_status save_state(void *p, nst_ckpt_writer *w)
{
    render_state *rs = p;
    nst_ckpt_io io = {w, NULL, rs->ctx->be};
    return tiles_state(rs, &io);
}

/* The state back from this rank's file of the checkpoint being resumed. */
static nst_status load_state(render_state *rs)
{
    nst_ckpt_reader *r = NULL;
    NST_TRY(nst_ckpt_open_rank(rs->ctx->ckpt, &r));
    nst_ckpt_io io = {NULL, r, rs->ctx->be};
    nst_status s = tiles_state(rs, &io);
    nst_ckpt_reader_close(r);
    return s;
}

/* At the boundary after `done` iterations: a checkpoint when due; on a signal, one and the stop. */
static nst_status boundary(const nst_render_ctx *ctx, render_state *rs, long long done, nst_render_stats *st)
{
    nst_ckpt *c = ctx->ckpt;
    int p = nst_ckpt_poll(c, done, ctx->coll.sum_doubles, ctx->coll.ctx);
    if (p == NST_CKPT_NONE) return NST_OK;
    double t0 = nst_now();
    if (c->enabled) {
        NST_TRY(nst_ckpt_write(c, ctx->level, done, ctx->layout->grid.tile_w, ctx->layout->grid.tile_h, save_state, rs));
        st->checkpoints++;
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
    const char *name = sig ? nst_signal_name(sig) : "SIGUSR1/SIGTERM";
    if (!c->enabled)
        return nst_fail(NST_ERUNTIME, "stopped by %s at level %d, iteration %lld of %lld; checkpoint.path is not set, so nothing was saved", name,
                        ctx->level + 1, done, ctx->iterations);
    return nst_fail(NST_EINTERRUPTED, "stopped by %s at level %d, iteration %lld of %lld: checkpoint written to %s; run again (or requeue: "
                    "exit status 75) to resume%s", name, ctx->level + 1, done, ctx->iterations, c->dir,
                    sig == SIGTERM ? " (after Ctrl-C mpirun reports its own status, 1; tools/nstbatch-mpirun keeps 75)" : "");
}

/* out[i] (allocated here): local tile i's core pixels as they stand. */
static nst_status download_cores(const nst_render_ctx *ctx, nst_tile *tiles, tile_state *ts, float **out)
{
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    nst_status s = NST_OK;
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        nst_rect core = tiles[i].core;
        out[i] = nst_alloc_array((size_t)nst_rect_area(core) * 3, sizeof(float), "a tile's result");
        if (!out[i])
            s = NST_ENOMEM;
        else if (L->cheap)
            s = be->ops->download_rect(be, &tiles[i].img, tiles[i].own_px, out[i]);
        else
            s = be->ops->download(be, out[i], ts[i].x.data, (size_t)nst_rect_area(core) * 3, NST_F32);
    }
    return s;
}

/* output.save_every: the image as it stands, as the preview (after `done` iterations). Collective. */
static nst_status preview(const nst_render_ctx *ctx, nst_tile *tiles, tile_state *ts, long long done, nst_render_stats *st)
{
    const nst_layout *L = ctx->layout;
    double t0 = nst_now();
    float **px = nst_calloc(sizeof(float *) * ((size_t)L->nlocal + 1), "preview pixels");
    nst_rect *cores = nst_calloc(sizeof(nst_rect) * ((size_t)L->nlocal + 1), "preview cores");
    nst_status s = px && cores ? download_cores(ctx, tiles, ts, px) : NST_ENOMEM;
    for (int i = 0; cores && i < L->nlocal; i++) cores[i] = tiles[i].core;
    s = agree(ctx, s);
    if (s == NST_OK) s = nst_snapshot_write(ctx->preview_path, ctx->preview_side, ctx->img_w, ctx->img_h, cores, px, L->nlocal);
    for (int i = 0; px && i < L->nlocal; i++) nst_free(px[i]);
    nst_free(px);
    nst_free(cores);
    if (s != NST_OK) return s;
    st->previews++;
    st->preview_seconds += nst_now() - t0;
    char fields[160];
    snprintf(fields, sizeof fields, "\"level\": %d, \"iteration\": %lld, \"seconds\": %.3f", ctx->level + 1, done, nst_now() - t0);
    nst_progress_event(ctx->progress, "preview", fields);
    return NST_OK;
}

/* ---- the render, phase by phase ---------------------------------------------------------------- */

/* What one render holds between its phases. */
typedef struct {
    const nst_render_ctx *ctx;
    nst_render_stats *st;
    nst_net net;
    nst_objective obj;
    nst_acts shared;   /* one set of activations for every tile (not resident Gram) */
    exchange ex;
    nst_lbfgs lb;
    tile_state *ts;
    nst_tile *tiles;
    int have_net, have_obj, have_shared;
    long long t_start; /* Adam's step count before this level's first iteration */
    long long it0;     /* the first iteration: 0, or a resumed checkpoint's */
    render_state rs;   /* what a checkpoint saves and restores */
    double t_mark;     /* printed rows: when, and at which iteration, the previous one was */
    long long mark;
} render_run;

/* The network, the objective with its style targets, the shared activations, every local tile
 * (consuming content[i] and init[i]), the halo exchange plan, L-BFGS. Collective. */
static nst_status render_setup(render_run *r, float **content, float **init)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_layout *L = ctx->layout;
    nst_status s = nst_net_create(ctx->be, ctx->weights, ctx->spec->deepest, ctx->spec->pool, &r->net);
    r->have_net = s == NST_OK;
    int want_shared = L->gram != NST_GRAM_RESIDENT && L->nlocal > 0;
    if (s == NST_OK)
        s = nst_objective_init_guided(&r->obj, ctx->spec, &r->net, ctx->coll, L->gram, L->gram != NST_GRAM_RESIDENT ? &r->shared : NULL,
                                      ctx->img_w, ctx->img_h, ctx->guides);
    r->have_obj = s == NST_OK;
    /* the style targets, computed before the render (nst/inputs/style.h) */
    if (s == NST_OK && ctx->targets) s = nst_objective_set_targets(&r->obj, ctx->targets, ctx->normA);
    s = agree(ctx, s);
    if (s == NST_OK && want_shared) {
        int mh = 0, mw = 0; /* one set of activations for the largest local window */
        for (int i = 0; i < L->nlocal; i++) {
            nst_rect w = nst_grid_window(&L->grid, L->local[i]);
            if (w.h > mh) mh = w.h;
            if (w.w > mw) mw = w.w;
        }
        s = nst_acts_alloc(&r->net, mh, mw, &r->shared);
        r->have_shared = s == NST_OK;
    }
    if (s == NST_OK) {
        r->ts = nst_calloc(sizeof(tile_state) * (size_t)(L->nlocal + 1), "tile states");
        r->tiles = nst_calloc(sizeof(nst_tile) * (size_t)(L->nlocal + 1), "tiles");
        if (!r->ts || !r->tiles) s = NST_ENOMEM;
    }
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        s = tile_setup(ctx, &r->obj, &r->tiles[i], &r->ts[i], i, content[i], init ? init[i] : NULL);
        nst_free(content[i]); /* consumed: the targets and the optimised pixels have what they need */
        content[i] = NULL;
        if (init) {
            nst_free(init[i]);
            init[i] = NULL;
        }
    }
    s = agree(ctx, s);
    if (s == NST_OK) s = nst_objective_finish_targets(&r->obj);
    if (s == NST_OK) s = exchange_plan(L, &r->ex);
    if (s == NST_OK && L->lbfgs) s = lbfgs_setup(ctx, r->ts, &r->lb);
    return agree(ctx, s);
}

/* Where the iterations start: the previous level's Adam step count, or the checkpoint being
 * resumed when it stopped in this level (its pixels and optimiser state loaded here). */
static nst_status render_resume(render_run *r, nst_status s)
{
    const nst_render_ctx *ctx = r->ctx;
    r->t_start = ctx->state_in ? ctx->state_in->t : 0;
    r->it0 = 0;
    render_state rs = {ctx, r->ts, &r->lb, &r->obj, 0, &r->st->first};
    r->rs = rs;
    if (s == NST_OK && ctx->ckpt && ctx->ckpt->resume && ctx->ckpt->level == ctx->level) {
        s = agree(ctx, load_state(&r->rs));
        r->t_start = r->rs.t_start;
        r->it0 = ctx->ckpt->iteration;
        if (s == NST_OK) nst_info("resumed: level %d at iteration %lld of %lld from %s\n", ctx->level + 1, r->it0, ctx->iterations, ctx->ckpt->dir);
        r->st->resumed_at = r->it0;
    }
    r->rs.t_start = r->t_start;
    return s;
}

/* The halo exchange: every iteration in exact mode, every exchange_every in cheap mode. */
static nst_status iter_exchange(render_run *r, long long it)
{
    const nst_layout *L = r->ctx->layout;
    nst_backend *be = r->ctx->be;
    nst_status s = NST_OK;
    double m0 = nst_now();
    be->ops->range_push(be, "halo exchange"); /* NVTX ranges: Nsight Systems shows the phases */
    if (!L->cheap || (it > 0 && it % L->exchange_every == 0)) s = refresh(r->ctx, r->tiles, r->ts, &r->ex);
    be->ops->range_pop(be);
    nst_timer_lap(&r->st->timers, NST_T_EXCHANGE, &m0);
    return s;
}

/* Forward, the Gram statistics summed over the ranks, backward: the loss and its gradient on
 * every local tile. Runs only when s is NST_OK (the NVTX range opens either way). */
static nst_status iter_objective(render_run *r, nst_status s, nst_loss_terms *terms)
{
    nst_backend *be = r->ctx->be;
    be->ops->range_push(be, "objective");
    if (s == NST_OK) s = nst_objective_eval(&r->obj, r->tiles, r->ctx->layout->nlocal, 1, &r->st->timers, terms);
    be->ops->range_pop(be);
    return s;
}

/* The iteration's row: to the progress reporter, or printed every run.print_every iterations. */
static nst_status iter_report(render_run *r, long long it, const nst_loss_terms *terms)
{
    const nst_render_ctx *ctx = r->ctx;
    const long long every = ctx->cfg->run_print_every;
    if (it == 0) r->st->first = *terms;
    if (ctx->progress) return nst_progress_iter(ctx->progress, it, terms, &r->st->timers, ctx->be->bytes_in_use, 0);
    if (it == 0 || (every > 0 && it % every == 0)) {
        double now = nst_now();
        print_terms(it, terms, it > r->mark ? (now - r->t_mark) / (double)(it - r->mark) : 0);
        r->t_mark = now;
        r->mark = it;
    }
    return NST_OK;
}

/* The optimiser's step on every local tile; every rank reaches the agreement, failed or not. */
static nst_status iter_step(render_run *r, long long it)
{
    nst_backend *be = r->ctx->be;
    double m0 = nst_now();
    nst_status s = injected_fault(it);
    be->ops->range_push(be, "optimiser");
    if (s == NST_OK) s = step(r->ctx, r->tiles, r->ts, &r->lb, r->t_start + it + 1);
    be->ops->range_pop(be);
    s = agree(r->ctx, s);
    if (s == NST_OK) r->st->stepped = 1;
    nst_timer_lap(&r->st->timers, NST_T_OPTIM, &m0);
    return s;
}

/* After iteration it: a checkpoint when due (or a stop on a signal), a preview when due. */
static nst_status iter_boundary(render_run *r, long long it)
{
    const nst_render_ctx *ctx = r->ctx;
    nst_status s = NST_OK;
    if (ctx->ckpt) s = agree(ctx, boundary(ctx, &r->rs, it + 1, r->st));
    if (s == NST_OK && ctx->save_every > 0 && (it + 1) % ctx->save_every == 0 && it + 1 < ctx->iterations)
        s = preview(ctx, r->tiles, r->ts, it + 1, r->st);
    return s;
}

/* The first objective's image gradient over each local tile's owned pixels, before any step: to
 * the caller (ctx->first_grad) and to run.first_gradient's file (nst/report/first_gradient.h). */
static nst_status keep_first_gradient(render_run *r, const nst_loss_terms *terms)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_layout *L = ctx->layout;
    const char *path = ctx->cfg->run_first_gradient;
    if (!path[0] && !ctx->first_grad) return NST_OK;
    float **g = ctx->first_grad ? ctx->first_grad : nst_calloc(sizeof(float *) * ((size_t)L->nlocal + 1), "first gradients");
    nst_status s = g ? NST_OK : NST_ENOMEM;
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        g[i] = nst_alloc_array((size_t)nst_rect_area(r->tiles[i].core) * 3, sizeof(float), "a tile's first gradient");
        s = g[i] ? ctx->be->ops->download_rect(ctx->be, &r->tiles[i].dimg, r->tiles[i].own_px, g[i]) : NST_ENOMEM;
    }
    s = agree(ctx, s);
    if (s == NST_OK && path[0]) {
        nst_gradient_file h;
        nst_first_gradient_header(&h, ctx->img_w, ctx->img_h, ctx->spec, ctx->be, terms);
        s = nst_first_gradient_write(path, L, g, &h);
    }
    if (!ctx->first_grad) {
        for (int i = 0; g && i < L->nlocal; i++) nst_free(g[i]);
        nst_free(g);
    }
    return s;
}

/* One iteration: exchange, objective, report, step, boundary; each runs only if the last went well. */
static nst_status render_iteration(render_run *r, long long it)
{
    nst_loss_terms terms;
    nst_status s = iter_objective(r, iter_exchange(r, it), &terms);
    if (s == NST_OK && it == 0) s = keep_first_gradient(r, &terms);
    if (s == NST_OK) s = iter_report(r, it, &terms);
    if (s == NST_OK) s = iter_step(r, it);
    if (s == NST_OK) s = iter_boundary(r, it);
    return s;
}

/* The iterations from it0, when s is NST_OK, timed without the checkpoints and previews they
 * wrote (the times and counts are set either way). */
static nst_status render_loop(render_run *r, nst_status s)
{
    const nst_render_ctx *ctx = r->ctx;
    nst_render_stats *st = r->st;
    if (s == NST_OK && ctx->progress)
        nst_progress_level(ctx->progress, ctx->level, r->it0);
    else if (s == NST_OK)
        print_header();
    double t_loop = nst_now();
    r->t_mark = t_loop; /* s/iter of a row: since the previous row */
    r->mark = r->it0;
    for (long long it = r->it0; s == NST_OK && it < ctx->iterations; it++) s = render_iteration(r, it);
    double t_end = nst_now();
    st->seconds = t_end - t_loop - st->checkpoint_seconds - st->preview_seconds;
    st->iterations = ctx->iterations - r->it0;
    return s;
}

/* The loss of the result: windows made current, one more forward. */
static nst_status render_final_loss(render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    nst_render_stats *st = r->st;
    const long long iters = ctx->iterations;
    nst_status s = refresh(ctx, r->tiles, r->ts, &r->ex);
    nst_loss_terms terms;
    if (s == NST_OK) s = nst_objective_eval(&r->obj, r->tiles, ctx->layout->nlocal, 0, NULL, &terms);
    if (s != NST_OK) return s;
    st->last = terms;
    if (iters == 0) st->first = terms;
    if (ctx->progress) return nst_progress_iter(ctx->progress, iters, &terms, &st->timers, ctx->be->bytes_in_use, 1);
    print_terms(iters, &terms, st->iterations > 0 ? st->seconds / (double)st->iterations : 0); /* the loop's mean */
    return NST_OK;
}

/* Adam's moments, downloaded for the next level (ctx->state_out). */
static nst_status keep_adam_state(render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    nst_adam_state *so = ctx->state_out;
    nst_status s = NST_OK;
    so->t = r->t_start + ctx->iterations;
    so->m = nst_calloc(sizeof(float *) * 2 * ((size_t)L->nlocal + 1), "Adam state");
    so->v = so->m ? so->m + L->nlocal + 1 : NULL;
    if (!so->m) s = NST_ENOMEM;
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        size_t n = nst_tensor_elems(&r->ts[i].m);
        so->m[i] = nst_alloc_array(n, sizeof(float), "Adam state");
        so->v[i] = nst_alloc_array(n, sizeof(float), "Adam state");
        if (!so->m[i] || !so->v[i]) s = NST_ENOMEM;
        if (s == NST_OK) s = be->ops->download(be, so->m[i], r->ts[i].m.data, n, NST_F32);
        if (s == NST_OK) s = be->ops->download(be, so->v[i], r->ts[i].v.data, n, NST_F32);
    }
    return s;
}

/* Whatever setup made, in any state it stopped in. */
static void render_teardown(render_run *r)
{
    const nst_render_ctx *ctx = r->ctx;
    const nst_layout *L = ctx->layout;
    r->st->bytes_peak = ctx->be->bytes_peak;
    if (L->lbfgs && r->lb.resets) nst_info("L-BFGS: %d direction%s reset to the gradient (not a descent direction)\n", r->lb.resets, r->lb.resets == 1 ? "" : "s");
    nst_lbfgs_free(&r->lb);
    exchange_free(&r->ex);
    for (int i = 0; r->ts && i < L->nlocal; i++) tile_teardown(ctx, &r->obj, &r->tiles[i], &r->ts[i]);
    nst_free(r->ts);
    nst_free(r->tiles);
    if (r->have_obj) nst_objective_free(&r->obj);
    if (r->have_shared) nst_acts_free(&r->net, &r->shared);
    if (r->have_net) nst_net_destroy(&r->net);
}

nst_status nst_render(const nst_render_ctx *ctx, float **content, float **init, float **out, nst_render_stats *st)
{
    if (ctx->iterations == 0) {
        memset(st, 0, sizeof *st);
        return render_initial(ctx, content, init, out, st);
    }
    nst_backend *be = ctx->be;
    render_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.st = st;
    memset(st, 0, sizeof *st);
    st->timers.sync = be->gpu_stream ? be : NULL; /* the phase timers wait for a GPU's stream (nst/optimise/timers.h) */
    be->bytes_peak = be->bytes_in_use; /* the peak of this render (the style targets came and went before) */
    double t0 = nst_now();

    nst_status s = render_setup(&r, content, init);
    s = render_resume(&r, s);
    st->setup_seconds = nst_now() - t0;
    s = render_loop(&r, s);
    if (s == NST_OK) s = render_final_loss(&r);
    if (s == NST_OK) s = download_cores(ctx, r.tiles, r.ts, out); /* the cores of the result */
    if (s == NST_OK && ctx->state_out && !ctx->layout->lbfgs) s = keep_adam_state(&r);
    render_teardown(&r);
    return s;
}

nst_status nst_render_image(const nst_config *cfg, const nst_loss_spec *spec, nst_backend *be, const nst_weights *w,
                            const nst_image *content, const nst_image *style, const nst_image *init, nst_image *out,
                            nst_render_stats *stats, nst_image *first_grad)
{
    nst_net probe;
    nst_layout L;
    int W = content->w, H = content->h;
    memset(out, 0, sizeof *out);
    if (first_grad) memset(first_grad, 0, sizeof *first_grad);
    NST_TRY(nst_net_shapes(be, w, spec->deepest, spec->pool, &probe));
    nst_status s = nst_layout_plan(cfg, spec, &probe, W, H, 1, 0, nst_memory_budget(be, cfg->run_memory_gb, 1), &L);
    nst_net_destroy(&probe);
    NST_TRY(s);
    /* the style targets of the whole style image, on this process */
    float *A[NST_VGG_NLAYERS] = {0};
    double normA[NST_VGG_NLAYERS] = {0};
    if (style && spec->nstyle) s = nst_objective_style_targets(spec, be, w, style->px, style->w, style->h, A, normA);
    if (s != NST_OK) {
        nst_layout_free(&L);
        return s;
    }
    float **bufs = nst_calloc(sizeof(float *) * 4 * (size_t)(L.nlocal + 1), "tile windows");
    if (!bufs) {
        nst_layout_free(&L);
        return NST_ENOMEM;
    }
    float **cw = bufs, **iw = bufs + L.nlocal + 1, **res = bufs + 2 * (L.nlocal + 1), **g0 = bufs + 3 * (L.nlocal + 1);
    for (int i = 0; s == NST_OK && i < L.nlocal; i++) {
        nst_rect win = nst_grid_window(&L.grid, L.local[i]);
        cw[i] = nst_alloc_array((size_t)nst_rect_area(win) * 3, sizeof(float), "a content window");
        if (init) iw[i] = nst_alloc_array((size_t)nst_rect_area(win) * 3, sizeof(float), "an init window");
        if (!cw[i] || (init && !iw[i])) s = NST_ENOMEM;
        else {
            nst_image_extract(content, win, cw[i]);
            if (init) nst_image_extract(init, win, iw[i]);
        }
    }
    nst_render_ctx ctx = {cfg, spec, be, w, &L, {0}, W, H, cfg->optim_iterations, style && spec->nstyle ? A : NULL, normA, NULL, NULL, NULL, 0, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, first_grad ? g0 : NULL};
    if (s == NST_OK) s = nst_render(&ctx, cw, init ? iw : NULL, res, stats);
    for (int k = 0; k < NST_VGG_NLAYERS; k++) nst_free(A[k]);
    if (s == NST_OK) s = nst_image_alloc(out, W, H);
    for (int i = 0; s == NST_OK && i < L.nlocal; i++) nst_image_place(out, nst_grid_core(&L.grid, L.local[i]), res[i]);
    if (s == NST_OK && first_grad && cfg->optim_iterations > 0) s = nst_image_alloc(first_grad, W, H);
    for (int i = 0; s == NST_OK && first_grad && cfg->optim_iterations > 0 && i < L.nlocal; i++)
        nst_image_place(first_grad, nst_grid_core(&L.grid, L.local[i]), g0[i]);
    for (int i = 0; i < 4 * (L.nlocal + 1); i++) nst_free(bufs[i]);
    nst_free(bufs);
    nst_layout_free(&L);
    if (s != NST_OK) {
        nst_image_free(out);
        if (first_grad) nst_image_free(first_grad);
    }
    return s;
}
