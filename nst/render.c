/* nst/render.c: the optimisation loop of one image (see render.h). One tile covers the whole
 * image here; the tiled, multi-rank renderer feeds the same objective with many tiles. */
#include "render.h"

#include <string.h>

#include "../util/log.h"
#include "../util/mem.h"
#include "../util/rng.h"
#include "../util/timer.h"

void nst_noise_init(float *x, int w, int h, unsigned long long seed)
{
    size_t n = (size_t)w * h * 3;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] = nst_rng_uniform(seed, 0x6e6f697365ull /* "noise" */, i);
}

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

nst_status nst_render(const nst_render_ctx *ctx, const nst_image *content, const nst_image *style, const nst_image *init,
                      nst_image *out, nst_render_stats *st)
{
    const nst_config *cfg = ctx->cfg;
    nst_backend *be = ctx->be;
    const int W = content->w, H = content->h;
    const size_t n = (size_t)W * H * 3;
    nst_net net;
    nst_objective obj;
    nst_tile tile;
    float *m = NULL, *v = NULL;
    int have_net = 0, have_obj = 0, have_tile = 0;
    nst_status s;
    memset(st, 0, sizeof *st);
    memset(out, 0, sizeof *out);
    double t0 = nst_now();

    s = nst_net_create(be, ctx->weights, ctx->spec->deepest, ctx->spec->pool, &net);
    have_net = s == NST_OK;
    if (s == NST_OK) s = nst_objective_init(&obj, ctx->spec, &net, ctx->red, W, H);
    have_obj = s == NST_OK;
    if (s == NST_OK) s = nst_objective_set_style(&obj, style->px, style->w, style->h);
    nst_rect whole = nst_rect_make(0, 0, W, H);
    if (s == NST_OK) s = nst_tile_init(&obj, &tile, whole, whole);
    have_tile = s == NST_OK;
    if (s == NST_OK) s = nst_tile_set_content(&obj, &tile, content->px);
    if (s == NST_OK) s = nst_objective_finish_targets(&obj, &tile, 1);
    if (s == NST_OK) s = nst_image_alloc(out, W, H);
    if (s == NST_OK) {
        if (strcmp(cfg->optim_init, "noise") == 0)
            nst_noise_init(out->px, W, H, (unsigned long long)cfg->run_seed);
        else
            memcpy(out->px, strcmp(cfg->optim_init, "image") == 0 ? init->px : content->px, n * sizeof(float));
        s = be->ops->upload(be, tile.img.data, out->px, n, NST_F32);
    }
    /* Adam state (backend memory) */
    if (s == NST_OK) s = be->ops->alloc(be, n * sizeof(float), (void **)&m);
    if (s == NST_OK) s = be->ops->alloc(be, n * sizeof(float), (void **)&v);
    if (s == NST_OK) s = be->ops->zero(be, m, n * sizeof(float));
    if (s == NST_OK) s = be->ops->zero(be, v, n * sizeof(float));
    st->setup_seconds = nst_now() - t0;

    const long long iters = cfg->optim_iterations;
    const long long every = cfg->run_print_every;
    nst_adam_params ap = {(float)cfg->optim_lr, (float)cfg->optim_beta1, (float)cfg->optim_beta2, (float)cfg->optim_eps, 0,
                          cfg->optim_clamp};
    if (s == NST_OK) print_header();
    double t_loop = nst_now(), t_mark = t_loop;
    long long mark = 0;
    for (long long it = 0; s == NST_OK && it < iters; it++) {
        nst_loss_terms terms;
        s = nst_objective_eval(&obj, &tile, 1, 1, &terms);
        if (s != NST_OK) break;
        if (it == 0) st->first = terms;
        if (it == 0 || (every > 0 && it % every == 0)) {
            double now = nst_now();
            print_terms(it, &terms, it > mark ? (now - t_mark) / (double)(it - mark) : 0);
            t_mark = now;
            mark = it;
        }
        ap.t = it + 1;
        /* the whole image is this rank's single tile's core */
        s = be->ops->adam(be, tile.img.data, tile.dimg.data, m, v, n, &ap);
    }
    double t_end = nst_now();
    st->seconds = t_end - t_loop;
    st->iterations = iters;
    if (s == NST_OK) { /* the loss of the result: one more forward */
        nst_loss_terms terms;
        s = nst_objective_eval(&obj, &tile, 1, 0, &terms);
        if (s == NST_OK) {
            st->last = terms;
            if (iters == 0) st->first = terms;
            print_terms(iters, &terms, iters > mark ? (t_end - t_mark) / (double)(iters - mark) : 0);
        }
    }
    if (s == NST_OK) s = be->ops->download(be, out->px, tile.img.data, n, NST_F32);
    if (m) be->ops->free(be, m);
    if (v) be->ops->free(be, v);
    if (have_tile) nst_tile_free(&obj, &tile);
    if (have_obj) nst_objective_free(&obj);
    if (have_net) nst_net_destroy(&net);
    if (s != NST_OK) nst_image_free(out);
    return s;
}
