/* nst/render/tiles.c: a render's local tiles and their optimiser state: set-up (content targets,
 * masks, the temporal term, the initial pixels from the content, noise or a given image, Adam's
 * moments), the optimiser's step over them, their cores back, tear-down; and optim.iterations =
 * 0's result, the initial image (see render_parts.h). */
#include "render_parts.h"

#include <math.h>
#include <string.h>

#include "../../util/log.h"
#include "../../util/mem.h"
#include "../../util/plant.h"
#include "../../util/rng.h"

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

/* Set up a local tile and its optimiser state: content targets, the optimised pixels from the
 * initial image. */
nst_status nst_render_tile_setup(const nst_render_ctx *ctx, nst_objective *obj, nst_tile *tile, nst_tile_state *ts, int li,
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
    if (s == NST_OK && cfg->optim_average > 0) { /* the average starts at the initial pixels (bias-corrected: x0) */
        s = nst_tensor_alloc(be, opt.h, opt.w, 3, NST_F32, &ts->a);
        if (s == NST_OK) s = be->ops->axpby(be, ts->a.data, ts->x.data, n, (float)(1.0 - cfg->optim_average), 0.f);
    }
    if (s == NST_OK && !L->lbfgs && ctx->state_in) { /* the previous level's moments, upsampled */
        s = be->ops->upload(be, ts->m.data, ctx->state_in->m[li], n, NST_F32);
        if (s == NST_OK) s = be->ops->upload(be, ts->v.data, ctx->state_in->v[li], n, NST_F32);
    }
    nst_free(x0);
    return s;
}

void nst_render_tile_teardown(const nst_render_ctx *ctx, nst_objective *obj, nst_tile *tile, nst_tile_state *ts)
{
    if (!ctx->layout->cheap) { /* in cheap mode x and g are the tile's own img and dimg */
        nst_tensor_free(ctx->be, &ts->x);
        nst_tensor_free(ctx->be, &ts->g);
    }
    nst_tensor_free(ctx->be, &ts->m);
    nst_tensor_free(ctx->be, &ts->v);
    nst_tensor_free(ctx->be, &ts->a);
    if (tile->img.data) nst_tile_free(obj, tile);
}

/* One L-BFGS step over the local tiles' pixels; its collectives run whatever `pending` says. */
static nst_status lbfgs_step(const nst_layout *L, nst_tile_state *st, nst_lbfgs *lb, nst_status pending)
{
    for (int i = 0; i < L->nlocal; i++) lb->xp[i] = st[i].x.data, lb->gp[i] = st[i].g.data;
    return nst_lbfgs_step(lb, lb->xp, lb->gp, pending);
}

/* Adam on the owned pixels of every local tile, or an L-BFGS step over all of them; then the
 * moving average when optim.average is set. */
nst_status nst_render_step(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *st, nst_lbfgs *lb, long long t, nst_adam_step *adam,
                           nst_status pending)
{
    const nst_config *cfg = ctx->cfg;
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    nst_adam_params ap = {(float)cfg->optim_lr, (float)cfg->optim_beta1, (float)cfg->optim_beta2, (float)cfg->optim_eps, t,
                          cfg->optim_clamp};
    nst_status s = pending; /* L-BFGS makes its collective calls whatever this rank's status */
    if (s == NST_OK && !L->lbfgs) s = be->ops->adam_tick(be, &ap, adam); /* step t on the device: a replayed iteration takes the next */
    if (nst_planted("adamhost")) adam = NULL; /* planted: the step from the host, which a replay repeats (the tests must catch it) */
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        if (!L->cheap) /* the gradient of the owned pixels: the core of the window's gradient */
            s = be->ops->copy_rect(be, &tiles[i].dimg, tiles[i].own_px, &st[i].g, 0, 0);
        if (s == NST_OK && !L->lbfgs)
            s = be->ops->adam(be, st[i].x.data, st[i].g.data, st[i].m.data, st[i].v.data, nst_tensor_elems(&st[i].x), &ap, adam);
    }
    if (L->lbfgs) s = lbfgs_step(L, st, lb, s);
    NST_TRY(s);
    const double beta = cfg->optim_average;
    for (int i = 0; beta > 0 && i < L->nlocal; i++) /* the moving average: a = beta a + (1 - beta) x */
        NST_TRY(be->ops->axpby(be, st[i].a.data, st[i].x.data, nst_tensor_elems(&st[i].x), (float)(1.0 - beta), (float)beta));
    return NST_OK;
}

/* optim.average: after `steps` steps of the level, the bias-corrected average a / (1 - beta^(steps + 1))
 * (the first term is the initial pixels' own) becomes the pixels: the level's result. */
nst_status nst_render_take_average(const nst_render_ctx *ctx, nst_tile_state *st, long long steps)
{
    const double beta = ctx->cfg->optim_average;
    if (beta <= 0) return NST_OK;
    const float scale = (float)(1.0 / (1.0 - pow(beta, (double)steps + 1.0)));
    for (int i = 0; i < ctx->layout->nlocal; i++)
        NST_TRY(ctx->be->ops->axpby(ctx->be, st[i].x.data, st[i].a.data, nst_tensor_elems(&st[i].x), scale, 0.f));
    return NST_OK;
}

/* optim.clamp = false: the pixels were free to leave [0, 1]; the result is clamped before its loss
 * is taken, since every output and the next level see it clamped: the loss reported is the
 * picture's. (A zeroed step projects x alone.) */
nst_status nst_render_project(const nst_render_ctx *ctx, nst_tile_state *st)
{
    nst_backend *be = ctx->be;
    for (int i = 0; i < ctx->layout->nlocal; i++) {
        size_t n = nst_tensor_elems(&st[i].x);
        NST_TRY(be->ops->zero(be, st[i].g.data, n * sizeof(float)));
        NST_TRY(be->ops->box_step(be, st[i].x.data, st[i].g.data, n, 0.f));
    }
    return NST_OK;
}

/* L-BFGS over the local tiles' cores. */
nst_status nst_render_lbfgs_setup(const nst_render_ctx *ctx, nst_tile_state *st, nst_lbfgs *lb)
{
    const nst_layout *L = ctx->layout;
    size_t *n = nst_alloc_array((size_t)L->nlocal + 1, sizeof(size_t), "L-BFGS sizes");
    int *w = nst_alloc_array((size_t)L->nlocal + 1, sizeof(int), "L-BFGS widths");
    nst_status s = n && w ? NST_OK : NST_ENOMEM;
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) n[i] = nst_tensor_elems(&st[i].x), w[i] = st[i].x.w;
    /* runs of the alignment: every core starts at a multiple of it, whatever the tiling */
    if (s == NST_OK)
        s = nst_lbfgs_init(lb, ctx->be, ctx->coll, (int)ctx->cfg->optim_lbfgs_history, ctx->cfg->optim_lbfgs_step, ctx->cfg->optim_clamp,
                           L->nlocal, L->local, L->grid.ntiles, n, w, L->align);
    nst_free(n), nst_free(w);
    return s;
}

/* optim.iterations = 0: no optimisation, so no network: the result is the initial image (the
 * content, the noise or optim.init_path), each core cut from its window as the windows arrive. */
nst_status nst_render_initial(const nst_render_ctx *ctx, float **content, float **init, float **out, nst_render_stats *st)
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
    return nst_render_agree(ctx, s);
}

/* out[i] (allocated here): local tile i's core pixels as they stand; with avg_steps >= 0 and
 * optim.average, the bias-corrected average after that many steps instead (a preview's picture). */
nst_status nst_render_download_cores(const nst_render_ctx *ctx, nst_tile *tiles, nst_tile_state *ts, long long avg_steps, float **out)
{
    const nst_layout *L = ctx->layout;
    nst_backend *be = ctx->be;
    const double beta = ctx->cfg->optim_average;
    const int avg = avg_steps >= 0 && beta > 0;
    nst_status s = NST_OK;
    for (int i = 0; s == NST_OK && i < L->nlocal; i++) {
        nst_rect core = tiles[i].core;
        size_t n = (size_t)nst_rect_area(core) * 3;
        out[i] = nst_alloc_array(n, sizeof(float), "a tile's result");
        if (!out[i])
            s = NST_ENOMEM;
        else if (L->cheap)
            s = be->ops->download_rect(be, avg ? &ts[i].a : &tiles[i].img, tiles[i].own_px, out[i]);
        else
            s = be->ops->download(be, out[i], avg ? ts[i].a.data : ts[i].x.data, n, NST_F32);
        if (s == NST_OK && avg) {
            const float scale = (float)(1.0 / (1.0 - pow(beta, (double)avg_steps + 1.0)));
            for (size_t j = 0; j < n; j++) out[i][j] *= scale;
        }
    }
    return s;
}
